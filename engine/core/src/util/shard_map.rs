//! A persistent hash map: a fixed number of shards, each an `Arc`ed `FxHashMap`. Cloning
//! costs one `Arc`; a write copies the shard it lands in only when another clone shares it.
//! The cluster objects are copied on write each time the cache changes them after a snapshot
//! took them: with thousands of ResourceClaims, a plain map made every claim written by a
//! PreBind copy every other claim. `diff` visits only the shards two clones do not share.

use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use super::hash::FxHashMap;

/// Shards per map (a power of two).
const SHARDS: usize = 64;

#[derive(Clone, Debug)]
pub struct ShardMap<K, V> {
    shards: Arc<[Arc<FxHashMap<K, V>>]>,
    len: usize,
}

impl<K, V> Default for ShardMap<K, V> {
    fn default() -> Self {
        ShardMap { shards: (0..SHARDS).map(|_| Arc::new(FxHashMap::default())).collect(), len: 0 }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> ShardMap<K, V> {
    pub fn new() -> Self {
        ShardMap::default()
    }

    fn shard_of(k: &K) -> usize {
        let h = crate::util::hash::FxBuildHasher::default().hash_one(k);
        // The high bits, mixed: Fx leaves the low bits of small keys poorly spread.
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARDS.trailing_zeros())) as usize
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.shards[Self::shard_of(k)].get(k)
    }

    pub fn contains_key(&self, k: &K) -> bool {
        self.get(k).is_some()
    }

    fn shard_mut(&mut self, i: usize) -> &mut FxHashMap<K, V> {
        if Arc::get_mut(&mut self.shards).is_none() {
            self.shards = self.shards.iter().cloned().collect();
        }
        let shards = Arc::get_mut(&mut self.shards).expect("unshared: just checked or copied");
        Arc::make_mut(&mut shards[i])
    }

    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        let old = self.shard_mut(Self::shard_of(&k)).insert(k, v);
        self.len += usize::from(old.is_none());
        old
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        let i = Self::shard_of(k);
        if !self.shards[i].contains_key(k) {
            return None;
        }
        let old = self.shard_mut(i).remove(k);
        self.len -= usize::from(old.is_some());
        old
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.shards.iter().flat_map(|s| s.iter())
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// Calls `f(key, old, new)` for every key whose value differs between `old` and `self`
    /// (by `same`), present in either; shards both share are skipped unread.
    pub fn diff(
        &self,
        old: &ShardMap<K, V>,
        same: impl Fn(&V, &V) -> bool,
        mut f: impl FnMut(&K, Option<&V>, Option<&V>),
    ) {
        if Arc::ptr_eq(&self.shards, &old.shards) {
            return;
        }
        for (new_shard, old_shard) in self.shards.iter().zip(old.shards.iter()) {
            if Arc::ptr_eq(new_shard, old_shard) {
                continue;
            }
            for (k, v) in new_shard.iter() {
                match old_shard.get(k) {
                    Some(o) if same(o, v) => {}
                    o => f(k, o, Some(v)),
                }
            }
            for (k, o) in old_shard.iter() {
                if !new_shard.contains_key(k) {
                    f(k, Some(o), None);
                }
            }
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> FromIterator<(K, V)> for ShardMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = ShardMap::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    proptest::proptest! {
        /// Inserts and removes agree with a BTreeMap; `diff` against an earlier clone reports
        /// exactly the keys whose values changed, and the clone is untouched by later writes.
        #[test]
        fn shard_map_matches_a_btree_map(ops in proptest::collection::vec((0u8..3, 0u16..200, 0u32..5), 0..300)) {
            let mut m: ShardMap<u16, u32> = ShardMap::new();
            let mut model: BTreeMap<u16, u32> = BTreeMap::new();
            let mut snapshot = (m.clone(), model.clone());
            for (i, (op, k, v)) in ops.into_iter().enumerate() {
                match op {
                    0 | 1 => proptest::prop_assert_eq!(m.insert(k, v), model.insert(k, v)),
                    _ => proptest::prop_assert_eq!(m.remove(&k), model.remove(&k)),
                }
                proptest::prop_assert_eq!(m.len(), model.len());
                if i % 17 == 0 {
                    snapshot = (m.clone(), model.clone());
                }
            }
            let got: BTreeMap<u16, u32> = m.iter().map(|(k, v)| (*k, *v)).collect();
            proptest::prop_assert_eq!(&got, &model);
            let (old, old_model) = snapshot;
            let old_got: BTreeMap<u16, u32> = old.iter().map(|(k, v)| (*k, *v)).collect();
            proptest::prop_assert_eq!(&old_got, &old_model, "a clone keeps its contents");
            let mut changed = BTreeMap::new();
            m.diff(&old, |a, b| a == b, |k, o, n| {
                changed.insert(*k, (o.copied(), n.copied()));
            });
            let mut want = BTreeMap::new();
            for k in old_model.keys().chain(model.keys()) {
                let (o, n) = (old_model.get(k).copied(), model.get(k).copied());
                if o != n {
                    want.insert(*k, (o, n));
                }
            }
            proptest::prop_assert_eq!(changed, want);
        }
    }
}
