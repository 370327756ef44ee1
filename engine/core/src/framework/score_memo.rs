//! Column scores kept from cycle to cycle (`ScorePlugin::memo_key`).
//!
//! A plugin whose column score of a node depends only on the node's `HotRow` and on a small
//! key of the pod (NodeResourcesFit's and BalancedAllocation's default configurations: the
//! pod's cpu and memory requests) gives the same score to a node until the node's row
//! changes. Pods of one workload share the key, and between two of their cycles one node's
//! row changes (the one the last pod went to). So each profile keeps, per such plugin and
//! key, the last score of every node with the row stamp it was computed from
//! (`Chunk::stamp`: a fresh process-wide id whenever a row is written with new values), and a
//! cycle asks the plugin only for the nodes whose stamp moved on. Stamps are never reused, so
//! a kept score is one the plugin computed from the very row the snapshot holds, in any
//! snapshot, and the decisions are those of scoring every node.
//!
//! Only plugins whose normalize leaves scores as they are keep them: a chunk weighs the kept
//! scores into its row and the totals as it reads them.
//!
//! The memo is locked once per cycle (`try_lock`: a cycle that finds it taken scores without
//! it) and read by the scoring chunks through a shared borrow; what they compute anew is
//! written back after the chunks, on the caller.

use std::sync::Arc;

use super::{CycleState, ScoreMemoKey, ScorePlugin};
use crate::api::Pod;
use crate::snapshot::Snapshot;
use crate::sync::{lock, Mutex, MutexGuard};

/// How many (plugin, key) pairs a profile keeps scores for; the least recently used goes.
pub const SLOTS: usize = 8;

/// A profile's kept column scores (see the module docs). Cloning gives an empty memo.
#[derive(Default)]
pub struct ScoreMemo(Mutex<Slots>);

impl Clone for ScoreMemo {
    fn clone(&self) -> Self {
        ScoreMemo::default()
    }
}

impl std::fmt::Debug for ScoreMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScoreMemo")
    }
}

#[derive(Default)]
pub struct Slots {
    slots: Vec<Slot>,
    clock: u64,
}

struct Slot {
    /// Held so that the plugin's address, its identity here, is not reused while kept.
    plugin: Arc<dyn ScorePlugin>,
    key: ScoreMemoKey,
    /// The pod the slot was taken for: any pod with the key scores alike (the debug checker
    /// scores again with it).
    pod: Pod,
    /// By node position: the stamp of the row the score was computed from (0: none), and
    /// the score (side by side: one cache line read per node).
    kept: Vec<(u64, i64)>,
    used: u64,
}

/// One slot's scores, read by the scoring chunks.
#[derive(Clone, Copy)]
pub struct MemoView<'a> {
    kept: &'a [(u64, i64)],
}

impl MemoView<'_> {
    /// The kept score of the node at `position` if its row still has `stamp`.
    #[inline]
    pub fn get(&self, position: usize, stamp: u64) -> Option<i64> {
        let (kept_stamp, score) = self.kept[position];
        (kept_stamp == stamp).then_some(score)
    }

    /// The kept (stamp, score) pairs of the nodes at positions `from..from + len`.
    #[inline]
    pub fn run(&self, from: usize, len: usize) -> &[(u64, i64)] {
        &self.kept[from..from + len]
    }
}

/// The memo, locked for one cycle.
pub struct MemoGuard<'a>(MutexGuard<'a, Slots>);

impl ScoreMemo {
    /// The memo for this cycle, or None when another cycle holds it.
    pub fn try_lock(&self) -> Option<MemoGuard<'_>> {
        crate::sync::try_lock(&self.0).map(MemoGuard)
    }

    /// The debug checker: every kept score of a row `snapshot` still holds (same stamp) that
    /// differs from what its plugin's `score_columns` gives now, described; empty when sound.
    pub fn mismatches(&self, snapshot: &Snapshot) -> Vec<String> {
        let m = lock(&self.0);
        let columns = snapshot.columns();
        let all: Vec<u32> = (0..columns.len() as u32).collect();
        let mut stamps = Vec::with_capacity(all.len());
        columns.stamps_into(&all, &mut stamps);
        let mut out = Vec::new();
        for s in &m.slots {
            let held: Vec<u32> = all
                .iter()
                .copied()
                .filter(|&p| s.kept.get(p as usize).is_some_and(|k| k.0 == stamps[p as usize]))
                .collect();
            let mut now = Vec::with_capacity(held.len());
            let scored = s.plugin.score_columns(&CycleState::new(), &s.pod, columns, &held, snapshot, &mut now);
            match scored.map(|c| c.into_scores(&mut now, held.len())) {
                Ok(true) if now.len() == held.len() => {
                    for (&p, &score) in held.iter().zip(&now) {
                        let kept = s.kept[p as usize].1;
                        if kept != score {
                            let node = snapshot.node_at(p as usize).map(|n| n.name());
                            out.push(format!(
                                "{} kept {kept} for node {node:?} (position {p}), its column score is {score}",
                                s.plugin.name()
                            ));
                        }
                    }
                }
                other => out.push(format!("{} keeps scores but scores no columns now: {other:?}", s.plugin.name())),
            }
        }
        out
    }
}

impl MemoGuard<'_> {
    /// The slot of `plugin` and `key`, holding at least `rows` positions: the one kept, or a
    /// new one in place of the least recently used (kept scores then start empty).
    pub fn slot(&mut self, plugin: &Arc<dyn ScorePlugin>, pod: &Pod, key: ScoreMemoKey, rows: usize) -> usize {
        let m = &mut *self.0;
        m.clock += 1;
        let found = m.slots.iter().position(|s| same_plugin(&s.plugin, plugin) && s.key == key);
        let i = match found {
            Some(i) => i,
            None if m.slots.len() < SLOTS => {
                m.slots.push(Slot { plugin: plugin.clone(), key, pod: pod.clone(), kept: Vec::new(), used: 0 });
                m.slots.len() - 1
            }
            None => {
                let i = (0..m.slots.len()).min_by_key(|&i| m.slots[i].used).unwrap_or(0);
                let s = &mut m.slots[i];
                s.plugin = plugin.clone();
                s.key = key;
                s.pod = pod.clone();
                s.kept.fill((0, 0));
                i
            }
        };
        let s = &mut m.slots[i];
        s.used = m.clock;
        if s.kept.len() < rows {
            s.kept.resize(rows, (0, 0));
        }
        i
    }

    /// Slot `slot`'s scores for the chunks to read.
    pub fn view(&self, slot: usize) -> MemoView<'_> {
        let s = &self.0.slots[slot];
        MemoView { kept: &s.kept }
    }

    /// Keeps `score`, computed from the row with `stamp`, for the node at `position`.
    #[inline]
    pub fn record(&mut self, slot: usize, position: usize, stamp: u64, score: i64) {
        self.0.slots[slot].kept[position] = (stamp, score);
    }
}

/// One plugin instance (the data pointers; vtables of one type may differ between units).
fn same_plugin(a: &Arc<dyn ScorePlugin>, b: &Arc<dyn ScorePlugin>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::node_resources_fit::NodeResourcesFit;

    /// A slot is found again by plugin and key; past `SLOTS` pairs the least recently used
    /// goes and its scores with it; another plugin instance never reads another's scores.
    #[test]
    fn slots_are_kept_per_plugin_and_key_and_the_least_recently_used_goes() {
        let memo = ScoreMemo::default();
        let pod = Pod::builder("p").build();
        let (a, b): (Arc<dyn ScorePlugin>, Arc<dyn ScorePlugin>) =
            (Arc::new(NodeResourcesFit::default()), Arc::new(NodeResourcesFit::default()));
        let mut g = memo.try_lock().unwrap();
        assert!(memo.try_lock().is_none(), "one cycle at a time");
        let first = g.slot(&a, &pod, [1, 0, 0, 0], 10);
        g.record(first, 3, 77, 42);
        assert_eq!(g.view(first).get(3, 77), Some(42));
        assert_eq!(g.view(first).get(3, 78), None, "another stamp");
        assert_eq!(g.view(first).get(4, 77), None, "another node");
        let other = g.slot(&b, &pod, [1, 0, 0, 0], 10);
        assert_ne!(other, first, "another instance, another slot");
        assert_eq!(g.view(other).get(3, 77), None);
        // Keys 2..: `first` is used again after the first of them, so `other` goes first.
        assert_eq!(g.slot(&a, &pod, [2, 0, 0, 0], 10), 2);
        assert_eq!(g.slot(&a, &pod, [1, 0, 0, 0], 20), first, "found again, grown");
        for k in 3..=7 {
            g.slot(&a, &pod, [k, 0, 0, 0], 20);
        }
        assert_eq!(g.slot(&a, &pod, [1, 0, 0, 0], 20), first, "kept");
        assert_eq!(g.view(first).get(3, 77), Some(42));
        let reused = g.slot(&a, &pod, [9, 0, 0, 0], 20);
        assert_eq!(reused, other, "the least recently used slot is taken over");
        assert_eq!(g.view(reused).get(3, 77), None, "with its scores forgotten");
        drop(g);
        assert!(memo.try_lock().is_some());
    }

    /// The debug checker finds a kept score its plugin would not give the row, and only
    /// for rows the snapshot still holds.
    #[test]
    fn the_checker_finds_a_wrong_kept_score() {
        use crate::api::Node;
        use crate::framework::plugins::test_util::node_info;
        let nodes: Vec<_> = (0..3)
            .map(|i| node_info(Node::builder(&format!("n{i}")).resources(1000, 1 << 30, 10).build(), &[]))
            .collect();
        let snapshot = Snapshot::from_node_infos(nodes);
        let plugin: Arc<dyn ScorePlugin> = Arc::new(NodeResourcesFit::default());
        let pod = Pod::builder("p").build();
        let mut stamps = Vec::new();
        snapshot.columns().stamps_into(&[0, 1, 2], &mut stamps);
        let mut right = Vec::new();
        let scored =
            plugin.score_columns(&CycleState::new(), &pod, snapshot.columns(), &[0, 1, 2], &snapshot, &mut right);
        assert!(scored.unwrap().into_scores(&mut right, 3));
        let memo = ScoreMemo::default();
        let mut g = memo.try_lock().unwrap();
        let key = plugin.memo_key(&pod).unwrap();
        let slot = g.slot(&plugin, &pod, key, 3);
        for p in 0..3 {
            g.record(slot, p, stamps[p], right[p]);
        }
        drop(g);
        assert_eq!(memo.mismatches(&snapshot), Vec::<String>::new());
        let mut g = memo.try_lock().unwrap();
        g.record(slot, 1, stamps[1], right[1] + 1);
        g.record(slot, 2, stamps[2] + 1_000_000, right[2] + 1);
        drop(g);
        let found = memo.mismatches(&snapshot);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("n1"), "{found:?}");
    }
}
