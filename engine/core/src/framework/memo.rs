//! Per-pod-kind results kept across cycles: the mechanism behind the InterPodAffinity and
//! PodTopologySpread counts.
//!
//! Such a result (matching pods per topology domain, say) is a sum of per-node contributions
//! for one incoming pod. Pods of one workload share what the result depends on (their
//! "kind": labels, terms, constraints), and between two of their cycles only a few nodes
//! change. So the result is kept with the snapshot it describes, and the next pod of the same
//! kind takes it and updates it for the nodes `Snapshot::diff_nodes` reports: subtract each
//! changed node's old contribution, add its new one. O(changed nodes), not O(pods in the
//! cluster). When the node set, its order or the cluster objects changed, the result is
//! computed from scratch.

use std::sync::Arc;

use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::sync::{lock, Mutex};

/// How many pod kinds keep results; more kinds alternating fall back to full recounts.
const SLOTS: usize = 4;

struct Entry<K, V> {
    key: K,
    base: Snapshot,
    value: Arc<V>,
}

/// Results of recent pod kinds, most recent first. One lock per cycle, never per node.
pub(crate) struct KindMemo<K, V> {
    entries: Mutex<Vec<Entry<K, V>>>,
}

impl<K, V> Default for KindMemo<K, V> {
    fn default() -> Self {
        KindMemo { entries: Mutex::new(Vec::new()) }
    }
}

impl<K, V> std::fmt::Debug for KindMemo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KindMemo({} kinds)", lock(&self.entries).len())
    }
}

impl<K, V: Clone> KindMemo<K, V> {
    /// The result for the pod whose kind `matches` accepts, on `snapshot`: the kept one updated
    /// with `update(value, old node, new node)` for every changed node (which must subtract the
    /// old node's contribution and add the new one's), or else `full()`, kept under `key()`.
    /// The returned `Arc` is shared with the memo until the next cycle of that kind, which then
    /// updates it in place.
    pub(crate) fn get(
        &self,
        snapshot: &Snapshot,
        matches: impl Fn(&K) -> bool,
        key: impl FnOnce() -> K,
        mut update: impl FnMut(&mut V, &NodeInfo, &NodeInfo),
        full: impl FnOnce() -> V,
    ) -> Arc<V> {
        let mut entries = lock(&self.entries);
        let kept = entries.iter().position(|e| matches(&e.key)).map(|i| entries.remove(i));
        let entry = match kept {
            Some(mut e) => {
                let value = Arc::make_mut(&mut e.value);
                if snapshot.diff_nodes(&e.base, |old, new| update(value, old, new)) {
                    e.base = snapshot.clone();
                    e
                } else {
                    Entry { key: e.key, base: snapshot.clone(), value: Arc::new(full()) }
                }
            }
            None => Entry { key: key(), base: snapshot.clone(), value: Arc::new(full()) },
        };
        let value = Arc::clone(&entry.value);
        entries.truncate(SLOTS - 1);
        entries.insert(0, entry);
        value
    }
}
