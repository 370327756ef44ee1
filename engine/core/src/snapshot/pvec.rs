//! A persistent vector: a radix-32 trie of `Arc`ed nodes. Cloning is O(1); `set` copies only
//! the path to one leaf (depth × 32 pointers: 3 levels up to 32768 elements, 4 up to a
//! million), so publishing a snapshot after one node changed costs the same at 1000 or 20000
//! nodes. Iteration walks whole leaves, so a scan touches each element once in order.

use std::sync::Arc;

const BITS: u32 = 5;
const WIDTH: usize = 1 << BITS;
const MASK: usize = WIDTH - 1;

#[derive(Clone, Debug)]
enum Trie<T> {
    Leaf(Vec<T>),
    Inner(Vec<Arc<Trie<T>>>),
}

#[derive(Clone, Debug)]
pub struct PVec<T> {
    root: Arc<Trie<T>>,
    len: usize,
    /// Bit shift of the root's child index; 0 when the root is a leaf.
    shift: u32,
}

impl<T: Clone> Default for PVec<T> {
    fn default() -> Self {
        PVec::from_vec(Vec::new())
    }
}

impl<T: Clone> PVec<T> {
    pub fn from_vec(items: Vec<T>) -> PVec<T> {
        let len = items.len();
        let mut level: Vec<Arc<Trie<T>>> = Vec::with_capacity(len.div_ceil(WIDTH));
        let mut it = items.into_iter().peekable();
        while it.peek().is_some() {
            level.push(Arc::new(Trie::Leaf(it.by_ref().take(WIDTH).collect())));
        }
        let mut shift = 0;
        if level.is_empty() {
            return PVec { root: Arc::new(Trie::Leaf(Vec::new())), len, shift };
        }
        while level.len() > 1 {
            let mut up = Vec::with_capacity(level.len().div_ceil(WIDTH));
            let mut it = level.into_iter().peekable();
            while it.peek().is_some() {
                up.push(Arc::new(Trie::Inner(it.by_ref().take(WIDTH).collect())));
            }
            level = up;
            shift += BITS;
        }
        let root = level.pop().expect("one root remains");
        PVec { root, len, shift }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn leaf(&self, i: usize) -> &[T] {
        let mut node = &*self.root;
        let mut shift = self.shift;
        loop {
            match node {
                Trie::Leaf(v) => return v,
                Trie::Inner(children) => {
                    node = &children[(i >> shift) & MASK];
                    shift = shift.saturating_sub(BITS);
                }
            }
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        Some(&self.leaf(i)[i & MASK])
    }

    /// Replaces element `i`, copying the path to it if it is shared. Panics if out of range
    /// (an internal caller error: the cache keeps indexes in step with the vector).
    pub fn set(&mut self, i: usize, value: T) {
        assert!(i < self.len, "PVec::set index {i} out of range {}", self.len);
        let mut node = &mut self.root;
        let mut shift = self.shift;
        loop {
            match Arc::make_mut(node) {
                Trie::Leaf(v) => {
                    v[i & MASK] = value;
                    return;
                }
                Trie::Inner(children) => {
                    node = &mut children[(i >> shift) & MASK];
                    shift = shift.saturating_sub(BITS);
                }
            }
        }
    }

    /// Calls `f(index, element)` for indexes `lo..hi` in order, a leaf at a time.
    #[inline]
    pub fn for_each_in(&self, lo: usize, hi: usize, mut f: impl FnMut(usize, &T)) {
        self.for_each_in_while(lo, hi, |i, x| {
            f(i, x);
            true
        });
    }

    /// Like `for_each_in`, stopping early (returning false) when `f` returns false.
    #[inline]
    pub fn for_each_in_while(&self, lo: usize, hi: usize, mut f: impl FnMut(usize, &T) -> bool) -> bool {
        let hi = hi.min(self.len);
        let mut i = lo;
        while i < hi {
            let leaf = self.leaf(i);
            let start = i & MASK;
            let end = (start + (hi - i)).min(leaf.len());
            for (k, item) in leaf[start..end].iter().enumerate() {
                if !f(i + k, item) {
                    return false;
                }
            }
            i += end - start;
        }
        true
    }

    /// Calls `f(index, old, new)` for every index where `old` and `self` hold elements that
    /// `same` says differ, skipping every subtree the two share (so after one `set` it visits
    /// one leaf). Returns false, visiting nothing, when the two differ in length or shape;
    /// callers then start over.
    pub fn diff(&self, old: &PVec<T>, same: impl Fn(&T, &T) -> bool, mut f: impl FnMut(usize, &T, &T)) -> bool {
        if self.len != old.len || self.shift != old.shift {
            return false;
        }
        fn walk<T>(
            a: &Arc<Trie<T>>,
            b: &Arc<Trie<T>>,
            base: usize,
            shift: u32,
            same: &impl Fn(&T, &T) -> bool,
            f: &mut impl FnMut(usize, &T, &T),
        ) -> bool {
            if Arc::ptr_eq(a, b) {
                return true;
            }
            match (&**a, &**b) {
                (Trie::Leaf(x), Trie::Leaf(y)) if x.len() == y.len() => {
                    for (k, (o, n)) in x.iter().zip(y).enumerate() {
                        if !same(o, n) {
                            f(base + k, o, n);
                        }
                    }
                    true
                }
                (Trie::Inner(x), Trie::Inner(y)) if x.len() == y.len() => {
                    let child = shift.saturating_sub(BITS);
                    x.iter().zip(y).enumerate().all(|(k, (o, n))| walk(o, n, base + (k << shift), child, same, f))
                }
                _ => false,
            }
        }
        // Shapes are checked before any callback, so a false result has visited nothing.
        let mut changed = Vec::new();
        if !walk(&old.root, &self.root, 0, self.shift, &same, &mut |i, _: &T, _: &T| changed.push(i)) {
            return false;
        }
        for i in changed {
            if let (Some(o), Some(n)) = (old.get(i), self.get(i)) {
                f(i, o, n);
            }
        }
        true
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len.div_ceil(WIDTH)).flat_map(move |l| self.leaf(l * WIDTH).iter())
    }

    pub fn to_vec(&self) -> Vec<T> {
        self.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pvec_set_leaves_clones_untouched() {
        let a = PVec::from_vec((0..5000).collect::<Vec<u32>>());
        let mut b = a.clone();
        b.set(4321, 7);
        assert_eq!(a.get(4321), Some(&4321));
        assert_eq!(b.get(4321), Some(&7));
        assert_eq!(b.get(4320), Some(&4320));
        assert_eq!(a.get(5000), None);
        // Untouched leaves are shared, not copied.
        match (&*a.root, &*b.root) {
            (Trie::Inner(x), Trie::Inner(y)) => {
                let shared = x.iter().zip(y).filter(|(p, q)| Arc::ptr_eq(p, q)).count();
                assert_eq!(shared, x.len() - 1);
            }
            _ => panic!("5000 elements need inner nodes"),
        }
    }

    proptest! {
        /// `diff` reports exactly the indexes whose elements changed.
        #[test]
        fn pvec_diff_reports_exactly_the_changed_indexes(len in 1usize..3000, sets in prop::collection::vec((0usize..3000, any::<u32>()), 0..20)) {
            let old = PVec::from_vec((0..len as u32).collect::<Vec<u32>>());
            let mut new = old.clone();
            for &(i, x) in &sets {
                if i < len { new.set(i, x); }
            }
            let mut seen = Vec::new();
            prop_assert!(new.diff(&old, |a, b| a == b, |i, &o, &n| seen.push((i, o, n))));
            let want: Vec<(usize, u32, u32)> = (0..len).filter(|&i| old.get(i) != new.get(i)).map(|i| (i, old.to_vec()[i], new.to_vec()[i])).collect();
            prop_assert_eq!(seen, want);
            let longer = PVec::from_vec((0..len as u32 + 1).collect::<Vec<u32>>());
            prop_assert!(!longer.diff(&old, |a, b| a == b, |_, _, _| panic!("nothing visited")));
        }

        #[test]
        fn pvec_matches_vec_model(len in 0usize..3000, sets in prop::collection::vec((0usize..3000, any::<u32>()), 0..50), lo in 0usize..3000, span in 0usize..3000) {
            let model: Vec<u32> = (0..len as u32).collect();
            let mut model = model;
            let mut v = PVec::from_vec(model.clone());
            for (i, x) in sets {
                if i < len { model[i] = x; v.set(i, x); }
            }
            prop_assert_eq!(v.to_vec(), model.clone());
            let mut seen = Vec::new();
            v.for_each_in(lo, lo + span, |i, &x| seen.push((i, x)));
            let want: Vec<(usize, u32)> = (lo..(lo + span).min(len)).map(|i| (i, model[i])).collect();
            prop_assert_eq!(seen, want);
        }
    }
}
