//! The pods nominated to each node that a cycle must leave room for, gathered once per cycle
//! from the nominator and kept from cycle to cycle.

use std::sync::Arc;

use crate::api::{Pod, Sym};
use crate::framework::PodNominator;
use crate::snapshot::{PodsDelta, Snapshot};
use crate::util::hash::FxHashMap;

/// The pods nominated to each node that a cycle must leave room for: those of priority at
/// least the scheduled pod's (not the pod itself). Gathered once per cycle, so filtering a
/// node looks them up without taking the nominator's locks.
///
/// Kept from cycle to cycle: when the nominator keeps a change log and the next pod has the
/// same priority, a gather re-reads only the nodes whose lists changed since (preemption
/// nominates one pod per cycle, while thousands may be nominated), and `mark_positions`
/// re-marks only those. The groups list every qualifying pod, the scheduled pod included;
/// the node it is itself nominated to is looked up in `own`, gathered without it each cycle.
#[derive(Default)]
pub struct NominatedPods {
    /// Node → its group in `groups`.
    by_node: FxHashMap<Sym, u32>,
    /// Per group: its range in `pods` and what they add to the node's row.
    groups: Vec<(u32, u32, PodsDelta)>,
    pods: Vec<Pod>,
    /// Pods in `pods` whose group was replaced (by a later gather); compacted by a full
    /// gather once they outnumber the others.
    stale: usize,
    /// The node the scheduled pod is nominated to, and its group there without the pod
    /// (`None`: no other pod to leave room for).
    own: Option<(Sym, Option<u32>)>,
    /// What the groups reflect: the nominator's log id, its log version, and the priority
    /// they were gathered for.
    source: Option<(u64, u64, i32)>,
    /// Nodes regrouped since the last `mark_positions`; `all_dirty`: every node.
    dirty: Vec<Sym>,
    all_dirty: bool,
    /// Scratch for the changed nodes.
    changed: Vec<Sym>,
    /// One bit per snapshot position: the node has a group (`mark_positions`), so the filter
    /// pass tells the nodes without one from their position alone, reading neither the node
    /// nor its name.
    positions: Vec<u64>,
    /// Snapshot position → group (`NO_GROUP` for none), for the marked positions.
    by_pos: Vec<u32>,
    /// Snapshot position → what its group adds (for the marked positions): the filter pass
    /// reads these in position order, where the groups are in gathering order.
    pos_delta: Vec<PodsDelta>,
    /// The snapshot position of `own`'s node.
    own_pos: Option<u32>,
    /// The snapshot node index the positions were marked for (held, so it cannot be freed
    /// and another index take its address).
    layout: Option<Arc<FxHashMap<Sym, u32>>>,
    /// `mark_positions` ran since the last gather.
    marked: bool,
}

/// `NominatedPods::by_pos` at a position without a group.
const NO_GROUP: u32 = u32::MAX;

impl NominatedPods {
    pub fn for_pod<N: PodNominator + ?Sized>(nominator: Option<&N>, pod: &Pod) -> NominatedPods {
        let mut out = NominatedPods::default();
        out.gather(nominator, pod);
        out
    }

    /// Brings the nominations `pod` must leave room for up to date: re-reads the nodes
    /// whose lists changed since the last gather when it can, else everything.
    pub fn gather<N: PodNominator + ?Sized>(&mut self, nominator: Option<&N>, pod: &Pod) {
        let Some(n) = nominator.filter(|n| n.nominated_count() > 0) else {
            self.clear();
            return;
        };
        self.marked = false;
        let mut changed = std::mem::take(&mut self.changed);
        changed.clear();
        let since = match (self.source, n.log_id()) {
            (Some((id, version, priority)), Some(log)) if id == log && priority == pod.priority => {
                // Compact (gather afresh) once replaced groups hold more pods than live ones.
                (self.stale <= self.pods.len() / 2 + 64).then(|| n.changes_since(version, &mut changed)).flatten()
            }
            _ => None,
        };
        self.drop_own();
        match since {
            Some(now) => {
                changed.sort_unstable();
                changed.dedup();
                for &node in &changed {
                    self.regroup(n, node, pod.priority);
                }
                self.dirty.extend_from_slice(&changed);
                if let Some(s) = self.source.as_mut() {
                    s.1 = now;
                }
            }
            None => {
                self.clear();
                // The version before the walk: changes made during it are read again next time.
                let version = n.log_version();
                self.pods.reserve(n.nominated_count());
                self.by_node.reserve(n.nominated_count());
                n.visit_nodes(&mut |node, pods, deltas| {
                    if let Some(g) = self.push(pods, deltas, pod.priority, None) {
                        self.by_node.insert(node, g);
                    }
                });
                self.source = n.log_id().map(|id| (id, version, pod.priority));
            }
        }
        self.changed = changed;
        // Only the node the pod itself is nominated to can list it: elsewhere the uids (text
        // in the pods' specs) are not compared.
        if let Some(node) = n.nominated_node_of(&pod.uid) {
            let mut g = None;
            n.visit_node(node, &mut |pods, deltas| g = self.push(pods, deltas, pod.priority, Some(pod)));
            self.own = Some((node, g));
        }
    }

    /// Like `gather`, for one node only: all a pod trying its nominated node needs. Forgets
    /// what an earlier gather kept.
    pub fn gather_node<N: PodNominator + ?Sized>(&mut self, nominator: Option<&N>, pod: &Pod, node: Sym) {
        self.clear();
        if let Some(n) = nominator {
            n.visit_node(node, &mut |pods, deltas| {
                if let Some(g) = self.push(pods, deltas, pod.priority, Some(pod)) {
                    self.by_node.insert(node, g);
                }
            });
        }
    }

    fn clear(&mut self) {
        self.by_node.clear();
        self.groups.clear();
        self.pods.clear();
        self.stale = 0;
        self.own = None;
        self.source = None;
        self.dirty.clear();
        self.all_dirty = true;
        self.positions.clear();
        self.by_pos.clear();
        self.pos_delta.clear();
        self.own_pos = None;
        self.marked = false;
    }

    /// Forgets the last pod's own group (its pods become stale).
    fn drop_own(&mut self) {
        if let Some((_, Some(g))) = self.own.take() {
            let (a, b, _) = self.groups[g as usize];
            self.stale += (b - a) as usize;
        }
        self.own_pos = None;
    }

    /// Re-reads `node`'s list into a new group.
    fn regroup<N: PodNominator + ?Sized>(&mut self, n: &N, node: Sym, priority: i32) {
        if let Some(g) = self.by_node.remove(&node) {
            let (a, b, _) = self.groups[g as usize];
            self.stale += (b - a) as usize;
        }
        let mut g = None;
        n.visit_node(node, &mut |pods, deltas| g = self.push(pods, deltas, priority, None));
        if let Some(g) = g {
            self.by_node.insert(node, g);
        }
    }

    /// Appends a group of the pods of priority at least `priority` (but `except` itself), and
    /// returns it; `None` when no pod qualifies.
    fn push(&mut self, pods: &[Pod], deltas: &[PodsDelta], priority: i32, except: Option<&Pod>) -> Option<u32> {
        let start = self.pods.len();
        let mut delta = PodsDelta::default();
        for (p, d) in pods.iter().zip(deltas) {
            if p.priority >= priority && except.is_none_or(|e| p.uid != e.uid) {
                delta.plus(d);
                self.pods.push(p.clone());
            }
        }
        if self.pods.len() == start {
            return None;
        }
        self.groups.push((start as u32, self.pods.len() as u32, delta));
        Some(self.groups.len() as u32 - 1)
    }

    fn group(&self, g: u32) -> (&[Pod], &PodsDelta) {
        let (a, b, ref delta) = self.groups[g as usize];
        (&self.pods[a as usize..b as usize], delta)
    }

    /// The group of `node`, its own node's for the scheduled pod.
    #[inline]
    fn group_of(&self, node: Sym) -> Option<u32> {
        match self.own {
            Some((own, g)) if own == node => g,
            _ => self.by_node.get(&node).copied(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self.own {
            Some((own, None)) if self.by_node.len() == 1 => self.by_node.contains_key(&own),
            _ => self.by_node.is_empty(),
        }
    }

    /// Marks the snapshot positions of the nodes with nominated pods (after `gather`), for
    /// `any_at` and `at`: only the nodes regrouped since the last marking, when the
    /// snapshot's nodes are where they were then.
    pub fn mark_positions(&mut self, snapshot: &Snapshot) {
        let same_layout = self.layout.as_ref().is_some_and(|l| Arc::ptr_eq(l, &snapshot.index));
        if !same_layout || self.all_dirty {
            self.positions.clear();
            self.by_pos.clear();
            self.pos_delta.clear();
            if !self.by_node.is_empty() {
                self.positions.resize(snapshot.num_nodes().div_ceil(64), 0);
                self.by_pos.resize(snapshot.num_nodes(), NO_GROUP);
                self.pos_delta.resize(snapshot.num_nodes(), PodsDelta::default());
                for (name, &g) in &self.by_node {
                    if let Some(pos) = snapshot.position(*name) {
                        self.positions[pos / 64] |= 1 << (pos % 64);
                        self.by_pos[pos] = g;
                        self.pos_delta[pos] = self.groups[g as usize].2;
                    }
                }
            }
            self.layout = Some(Arc::clone(&snapshot.index));
        } else {
            if self.positions.is_empty() && !self.dirty.is_empty() {
                self.positions.resize(snapshot.num_nodes().div_ceil(64), 0);
                self.by_pos.resize(snapshot.num_nodes(), NO_GROUP);
                self.pos_delta.resize(snapshot.num_nodes(), PodsDelta::default());
            }
            for &node in &self.dirty {
                let Some(pos) = snapshot.position(node) else { continue };
                match self.by_node.get(&node) {
                    Some(&g) => {
                        self.positions[pos / 64] |= 1 << (pos % 64);
                        self.by_pos[pos] = g;
                        self.pos_delta[pos] = self.groups[g as usize].2;
                    }
                    None => {
                        self.positions[pos / 64] &= !(1 << (pos % 64));
                        self.by_pos[pos] = NO_GROUP;
                    }
                }
            }
        }
        self.dirty.clear();
        self.all_dirty = false;
        self.own_pos = self.own.and_then(|(node, _)| snapshot.position(node)).map(|p| p as u32);
        self.marked = true;
    }

    /// The pods nominated to the node at marked position `pos`, and what they add to its row.
    #[inline]
    pub fn at(&self, pos: usize) -> Option<(&[Pod], &PodsDelta)> {
        if self.own_pos == Some(pos as u32) {
            return self.own.and_then(|(_, g)| g).map(|g| self.group(g));
        }
        if !self.any_at(pos) {
            return None;
        }
        self.by_pos.get(pos).filter(|&&g| g != NO_GROUP).map(|&g| self.group(g))
    }

    /// What the pods nominated to the node at marked position `pos` add to its row (`at`'s
    /// delta, read in position order).
    #[inline]
    pub fn delta_at_marked(&self, pos: usize) -> Option<&PodsDelta> {
        if self.own_pos == Some(pos as u32) {
            return self.own.and_then(|(_, g)| g).map(|g| self.group(g).1);
        }
        if !self.any_at(pos) {
            return None;
        }
        self.pos_delta.get(pos)
    }

    /// What the pods nominated to the node at snapshot position `pos` add to its row: by
    /// position when `mark_positions` ran for this gather, else by the name `name` gives.
    #[inline]
    pub fn delta_at(&self, pos: usize, name: impl FnOnce() -> Option<Sym>) -> Option<&PodsDelta> {
        if self.by_node.is_empty() {
            return None;
        }
        if self.marked {
            return self.delta_at_marked(pos);
        }
        self.delta_on(name()?)
    }

    /// What the pods nominated to `node` add to its row (`None` when there are none).
    pub fn delta_on(&self, node: Sym) -> Option<&PodsDelta> {
        self.group_of(node).map(|g| self.group(g).1)
    }

    /// Whether the node at snapshot position `pos` may have nominated pods (as of the last
    /// `mark_positions`; `at` tells).
    #[inline]
    pub fn any_at(&self, pos: usize) -> bool {
        self.positions.get(pos / 64).is_some_and(|w| w >> (pos % 64) & 1 == 1)
    }

    pub fn on(&self, node: Sym) -> &[Pod] {
        self.group_of(node).map_or(&[], |g| self.group(g).0)
    }
}
