//! Label columns: a label key's value on every node of a snapshot, by position, for plugins
//! whose verdict or score on a node depends only on the node's values of a few keys
//! (InterPodAffinity's and PodTopologySpread's topology keys). Reading a node's labels
//! chases the trie leaf, the NodeInfo, the Node and its label list; a column is one read.
//!
//! A plugin keeps its columns (`LabelColumns`, locked once per PreFilter / PreScore) from
//! cycle to cycle; they hold for one node epoch (the node objects and their positions), so a
//! change of any node object makes them be built again. A column is built only for a node
//! epoch an earlier snapshot had too, so a cluster whose nodes change at every publish never
//! pays a whole-cluster pass per cycle: its plugins read the nodes' labels.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::api::{Labels, Sym};
use crate::framework::{RowFail, RowJudged};
use crate::snapshot::Snapshot;
use crate::sync::{lock, Mutex};

/// A label key's value on every node (`None`: no such label), by snapshot position.
pub type LabelColumn = Arc<[Option<Sym>]>;

/// The columns a cycle looks up, with the node epoch they hold for (no columns: not built).
#[derive(Clone, Debug, Default)]
pub struct KeyColumns {
    columns: SmallVec<[(Sym, LabelColumn); 2]>,
    epoch: u64,
}

impl KeyColumns {
    /// No column (not built).
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The column of `key`.
    #[inline]
    pub fn column(&self, key: Sym) -> Option<&[Option<Sym>]> {
        self.columns.iter().find(|(k, _)| *k == key).map(|(_, c)| &**c)
    }

    /// Whether these columns hold every one of `keys` for `snapshot`'s nodes at positions
    /// below `len`.
    pub fn cover(&self, keys: impl IntoIterator<Item = Sym>, snapshot: &Snapshot, len: usize) -> bool {
        !self.columns.is_empty()
            && self.epoch == snapshot.node_epoch()
            && self.columns.iter().all(|(_, c)| c.len() >= len)
            && keys.into_iter().all(|k| self.column(k).is_some())
    }
}

/// How many columns a plugin keeps (the least recently built goes).
const KEPT: usize = 4;

/// A plugin's columns, kept from cycle to cycle.
#[derive(Debug, Default)]
pub struct LabelColumns(Mutex<Kept>);

#[derive(Debug, Default)]
struct Kept {
    built: Vec<(Sym, u64, LabelColumn)>,
    /// The node epoch and snapshot generation last seen.
    last_seen: (u64, u64),
}

impl LabelColumns {
    /// The columns of `keys` for `snapshot`, or none when any of them is not to be built yet.
    pub fn of(&self, keys: &[Sym], snapshot: &Snapshot) -> KeyColumns {
        let (epoch, generation) = (snapshot.node_epoch(), snapshot.generation());
        let mut c = lock(&self.0);
        let (last_epoch, last_generation) = c.last_seen;
        let seen_before = last_epoch == epoch && last_generation != generation;
        c.last_seen = (epoch, generation);
        let mut out = KeyColumns { columns: SmallVec::new(), epoch };
        for &key in keys {
            if out.column(key).is_some() {
                continue;
            }
            if let Some((_, _, col)) = c.built.iter().find(|(k, e, _)| *k == key && *e == epoch) {
                out.columns.push((key, Arc::clone(col)));
                continue;
            }
            if !seen_before {
                return KeyColumns::default();
            }
            let mut values = vec![None; snapshot.num_nodes()];
            snapshot.for_each_in(0, values.len(), |pos, info| values[pos] = info.node().labels.get(key));
            let col: LabelColumn = values.into();
            c.built.retain(|(k, _, _)| *k != key);
            if c.built.len() >= KEPT {
                c.built.remove(0);
            }
            c.built.push((key, epoch, Arc::clone(&col)));
            out.columns.push((key, col));
        }
        out
    }
}

/// `FilterPlugin::filter_rows` for a plugin `name` whose verdict on a node (`None` for a pass)
/// comes from the node's values of `keys`: each row still passing is judged by
/// `at_position(pos)` from `columns` when they cover the block, else by `on_labels` from its
/// node's labels. Without PreFilter state (`columns` is `None`) the rows are left to each
/// node's `filter`.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn judge_rows(
    name: &'static str,
    snapshot: &Snapshot,
    lo: usize,
    judged: &mut [RowJudged],
    columns: Option<&KeyColumns>,
    keys: impl IntoIterator<Item = Sym>,
    at_position: impl Fn(usize) -> Option<RowFail>,
    on_labels: impl Fn(&Labels) -> Option<RowFail>,
) {
    let Some(columns) = columns else {
        judged.iter_mut().filter(|j| matches!(j, RowJudged::Pass)).for_each(|j| *j = RowJudged::Node);
        return;
    };
    let by_columns = columns.cover(keys, snapshot, lo + judged.len());
    for (i, j) in judged.iter_mut().enumerate() {
        if !matches!(j, RowJudged::Pass) {
            continue;
        }
        let pos = lo + i;
        let fail = if by_columns {
            at_position(pos)
        } else {
            match snapshot.node_at(pos) {
                None => {
                    *j = RowJudged::Node;
                    continue;
                }
                Some(node) => on_labels(&node.node().labels),
            }
        };
        if let Some(f) = fail {
            *j = RowJudged::Fail(name, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Node;
    use crate::snapshot::node_info::NodeInfo;

    fn snapshot(zones: &[Option<&str>]) -> Snapshot {
        Snapshot::from_node_infos(
            zones
                .iter()
                .enumerate()
                .map(|(i, z)| {
                    let mut b = Node::builder(&format!("n{i}"));
                    if let Some(z) = z {
                        b = b.label("zone", z);
                    }
                    NodeInfo::new(Arc::new(b.build()))
                })
                .collect(),
        )
    }

    #[test]
    fn columns_are_built_on_an_epochs_second_publish_and_hold_each_nodes_value() {
        let zone = Sym::new("zone");
        let snap = snapshot(&[Some("a"), None, Some("b")]);
        let kept = LabelColumns::default();
        // First sight of the epoch: nothing built; the same snapshot again is no second sight.
        assert!(!kept.of(&[zone], &snap).cover([zone], &snap, 3));
        assert!(!kept.of(&[zone], &snap).cover([zone], &snap, 3));
        let mut later = snap.clone();
        later.generation += 1;
        let cols = kept.of(&[zone], &later);
        assert!(cols.cover([zone], &later, 3));
        assert!(!cols.cover([zone], &later, 4), "three nodes");
        assert!(!cols.cover([zone, Sym::new("region")], &later, 3), "no region column");
        assert_eq!(cols.column(zone).unwrap(), &[Some(Sym::new("a")), None, Some(Sym::new("b"))]);
        // Other nodes (a new node epoch): the columns do not cover them, and are not built
        // again until that epoch is seen twice.
        let other = snapshot(&[Some("c")]);
        assert!(!cols.cover([zone], &other, 1));
        assert!(!kept.of(&[zone], &other).cover([zone], &other, 1));
        let mut other_later = other.clone();
        other_later.generation += 1;
        assert_eq!(kept.of(&[zone], &other_later).column(zone).unwrap(), &[Some(Sym::new("c"))]);
        // One column per key: the first epoch's went when the second's was built.
        assert!(!kept.of(&[zone], &later).cover([zone], &later, 3));
        // While the epoch stays, the column is kept from publish to publish (not rebuilt).
        let (mut a, mut b) = (other_later.clone(), other_later.clone());
        a.generation += 1;
        b.generation += 2;
        let (ca, cb) = (kept.of(&[zone], &a), kept.of(&[zone], &b));
        assert!(ca.cover([zone], &a, 1) && cb.cover([zone], &b, 1));
        assert!(std::ptr::eq(ca.column(zone).unwrap(), cb.column(zone).unwrap()), "the same column");
    }
}
