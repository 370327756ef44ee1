//! Running a profile's plugins: PreFilter with Skip, the per-node filter chain, scoring with
//! normalize and weights, and the FitError summary of why no node fit.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

use super::feasible::Feasible;
use super::profile::WeightedScore;
use super::score_memo::MemoView;
use super::{
    Code, ColumnScoring, CycleState, FilterPlugin, Normalizing, PodNominator, PreFilterPlugin, Profile, Reason,
    RowVerdict, ScorePlugin, Status, Verdict, MAX_NODE_SCORE, MIN_NODE_SCORE,
};
use crate::api::{Pod, Sym};
use crate::observer::{CycleObserver, NoObserver};
use crate::parallel::chunks::{ChunkBuffers, ChunkSlots};
use crate::parallel::WorkerPool;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{Columns, HotRef, HotTally, LooseRow, PodsDelta, Snapshot};
use crate::util::hash::FxHashMap;

/// The filter plugins that run this cycle (PreFilter may have skipped some).
pub type ActiveFilters<'a> = SmallVec<[&'a dyn FilterPlugin; 16]>;

/// Runs PreFilter plugins; records skips in `state`. Err = the pod is rejected outright.
pub fn run_pre_filter(profile: &Profile, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Result<(), Status> {
    run_pre_filter_observed(profile, state, pod, snapshot, &mut NoObserver)
}

/// `run_pre_filter`, telling `obs` each plugin's status.
pub fn run_pre_filter_observed<O: CycleObserver + ?Sized>(
    profile: &Profile,
    state: &mut CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    obs: &mut O,
) -> Result<(), Status> {
    let observed = obs.observes();
    for p in &profile.pre_filter {
        let st = p.pre_filter(state, pod, snapshot);
        if observed {
            obs.pre_filter(p.name(), &st);
        }
        if st.is_skip() {
            state.skip_filter.push(p.name());
        } else if !st.is_success() {
            return Err(st.with_plugin(p.name()));
        } else {
            narrow(&**p, state, pod)?;
        }
    }
    Ok(())
}

/// After `plugin`'s successful PreFilter: narrows the cycle to the nodes it names, if any;
/// `Err` with upstream's rejection when no node is left.
pub(crate) fn narrow(plugin: &dyn PreFilterPlugin, state: &mut CycleState, pod: &Pod) -> Result<(), Status> {
    let Some(names) = plugin.node_names(pod) else { return Ok(()) };
    if state.narrow(plugin.name(), &names) {
        return Ok(());
    }
    // Upstream's wording when the plugins' node sets do not intersect.
    let msg = match state.narrowed_by() {
        [one] => format!("node(s) didn't satisfy plugin {one}"),
        many => format!("node(s) didn't satisfy plugin(s) [{}] simultaneously", many.join(" ")),
    };
    Err(Status::new(Code::Unschedulable, Reason::Text(Sym::new(&msg))))
}

/// The verdict of every node PreFilter's narrowing left out.
pub fn narrowed_out_status(state: &CycleState) -> Status {
    let mut names = state.narrowed_by().to_vec();
    names.sort_unstable();
    names.dedup();
    let msg = format!("node(s) didn't satisfy plugin(s) [{}]", names.join(" "));
    Status::new(Code::UnschedulableAndUnresolvable, Reason::Text(Sym::new(&msg)))
}

pub fn active_filters<'a>(profile: &'a Profile, state: &CycleState) -> ActiveFilters<'a> {
    profile.filter.iter().filter(|f| !state.skips_filter(f.name())).map(|f| &**f).collect()
}

/// Runs the filter chain on one node; the first failing plugin's status is returned.
#[inline]
pub fn run_filters(filters: &[&dyn FilterPlugin], state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
    for f in filters {
        let st = f.filter(state, pod, node);
        if !st.is_success() {
            return st.with_plugin(f.name());
        }
    }
    Status::success()
}

/// `run_filters` on a snapshot node whose row in the snapshot's hot columns is `hot`: each
/// plugin that can judge from the row does, the others read the NodeInfo. Same verdict.
#[inline]
pub fn run_filters_hot(
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &NodeInfo,
    hot: HotRef<'_>,
) -> Verdict {
    for f in filters {
        match f.filter_hot(state, pod, hot) {
            RowVerdict::Pass => {}
            RowVerdict::Fail(fail) => return Verdict::Brief(f.name(), fail),
            RowVerdict::NeedsNode => {
                let st = f.filter(state, pod, node);
                if !st.is_success() {
                    return Verdict::Full(st.with_plugin(f.name()));
                }
            }
        }
    }
    Verdict::Pass
}

/// `run_filters` judged from a row alone: `None` as soon as a filter cannot judge from it
/// (it needs the NodeInfo), else the verdict `run_filters` gives on a NodeInfo with that row
/// (never `Verdict::Full`).
#[inline]
pub fn run_filters_on_row(
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    hot: HotRef<'_>,
) -> Option<Verdict> {
    for f in filters {
        match f.filter_hot(state, pod, hot) {
            RowVerdict::Pass => {}
            RowVerdict::Fail(fail) => return Some(Verdict::Brief(f.name(), fail)),
            RowVerdict::NeedsNode => return None,
        }
    }
    Some(Verdict::Pass)
}

/// `run_filters_with_nominated_mut`'s verdict for a node whose aggregates `tally` holds, with
/// `nominated` what the pods nominated to it add, judged from rows alone (`row` is the
/// scratch they are read from): only for `Overlay::aggregates_only` cycles. `None` when a
/// filter cannot judge from a row.
pub fn run_filters_on_tally(
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    tally: &HotTally,
    nominated: Option<&PodsDelta>,
    row: &mut LooseRow,
) -> Option<Verdict> {
    if let Some(delta) = nominated {
        let mut with = *tally;
        with.add(delta);
        let first = run_filters_on_row(filters, state, pod, row.set(&with.row()))?;
        if !first.is_success() {
            return Some(first);
        }
    }
    run_filters_on_row(filters, state, pod, row.set(&tally.row()))
}

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

std::thread_local! {
    /// Each filter worker's copy of the node being checked with its nominated pods, reused
    /// from node to node so the copy reuses its buffers.
    static WITH_NOMINATED: std::cell::RefCell<Option<NodeInfo>> = const { std::cell::RefCell::new(None) };
    /// Each filter worker's scratch row for `run_filters_on_tally`.
    static LOOSE_ROW: std::cell::RefCell<LooseRow> = std::cell::RefCell::new(LooseRow::default());
}

/// Filters one node the way a cycle does when pods are nominated: first with the nominated
/// pods (of priority ≥ the pod's) placed on a copy of the node and added to a copy of the
/// cycle state, then, if that passed and any were added, on the node as it is. The node fits
/// only when both passes do: the pod must fit beside the nominated pods (they will get the
/// room preemption made for them), and must not rely on them (they may never arrive, and its
/// pod affinity may not lean on them).
pub fn run_filters_with_nominated(
    overlay: &Overlay<'_>,
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &NodeInfo,
    nominated: &NominatedPods,
    snapshot: &Snapshot,
) -> Status {
    nominated_verdict(overlay, filters, state, pod, node, nominated, snapshot).into_status()
}

/// `run_filters_with_nominated`, a failure judged from rows left in brief.
fn nominated_verdict(
    overlay: &Overlay<'_>,
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &NodeInfo,
    nominated: &NominatedPods,
    snapshot: &Snapshot,
) -> Verdict {
    let pods = nominated.on(node.name());
    if pods.is_empty() {
        return run_filters(filters, state, pod, node).into();
    }
    if overlay.aggregates_only {
        // Judged from rows where the filters can: no copy of the node at all.
        let tally = HotTally::of(node);
        let delta = nominated.delta_on(node.name());
        if let Some(v) =
            LOOSE_ROW.with(|cell| run_filters_on_tally(filters, state, pod, &tally, delta, &mut cell.borrow_mut()))
        {
            return v;
        }
    }
    let first = WITH_NOMINATED.with(|cell| {
        let mut slot = cell.borrow_mut();
        let copy = slot.get_or_insert_with(|| NodeInfo::new(Arc::clone(node.node_arc())));
        if overlay.aggregates_only {
            copy.clone_aggregates_from(node);
            for p in pods {
                copy.add_to_aggregates(p);
            }
            return run_filters(filters, state, pod, copy);
        }
        copy.clone_from(node);
        first_pass(&overlay.extensions, filters, state, pod, copy, pods, snapshot)
    });
    if !first.is_success() {
        return Verdict::Full(first);
    }
    // The second pass reads the snapshot's node itself: nothing to take off a copy.
    run_filters(filters, state, pod, node).into()
}

/// The filter pass's verdict on the snapshot node at `pos`, whose row in the snapshot's hot
/// columns is `hot` (`mark_positions` done): `run_filters_hot` on a node without nominated
/// pods; on one with, the two passes judged from its row plus what they add when the filters
/// can, reading neither the node nor the pods, else `run_filters_with_nominated`.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn run_filters_at(
    overlay: &Overlay<'_>,
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &NodeInfo,
    pos: usize,
    hot: HotRef<'_>,
    nominated: &NominatedPods,
    snapshot: &Snapshot,
) -> Verdict {
    let Some(delta) = nominated.delta_at_marked(pos) else {
        return run_filters_hot(filters, state, pod, node, hot);
    };
    if overlay.aggregates_only {
        let tally = HotTally::of_row(hot.row());
        let judged = LOOSE_ROW
            .with(|cell| run_filters_on_tally(filters, state, pod, &tally, Some(delta), &mut cell.borrow_mut()));
        if let Some(v) = judged {
            return v;
        }
    }
    nominated_verdict(overlay, filters, state, pod, node, nominated, snapshot)
}

/// What the two-pass filter needs to know once per cycle: the PreFilter extensions to tell of
/// nominated pods, and whether the nominated pods can go into a copy of the aggregates alone
/// (no extension is active and no active filter reads `node.pods()`), which copies no pods.
pub struct Overlay<'a> {
    /// A `Vec` (allocating only when some extension is active) rather than a SmallVec, which
    /// would make `Overlay` invariant in `'a`.
    pub extensions: Vec<&'a dyn PreFilterPlugin>,
    pub aggregates_only: bool,
}

impl<'a> Overlay<'a> {
    /// For a cycle whose PreFilter left `state`, filtering with `filters` (or any subset).
    pub fn new(profile: &'a Profile, state: &CycleState, filters: &[&dyn FilterPlugin]) -> Overlay<'a> {
        // The PreFilter plugins whose `add_pod` / `remove_pod` must follow pods added to or
        // removed from a node this cycle (those with extensions PreFilter did not skip).
        let extensions: Vec<&dyn PreFilterPlugin> = profile
            .pre_filter
            .iter()
            .filter(|e| e.has_extensions() && !state.skips_filter(e.name()))
            .map(|e| &**e)
            .collect();
        let aggregates_only = extensions.is_empty() && filters.iter().all(|f| !f.reads_pods());
        Overlay { extensions, aggregates_only }
    }
}

/// `run_filters_with_nominated` on a node the caller owns (preemption's dry-run copy, or the
/// worker's copy of a snapshot node): the nominated pods are added to it for the first pass
/// and taken off again (leaving the pods in their order), so nothing is copied but the cycle
/// state, and that only when a PreFilter extension is active.
pub fn run_filters_with_nominated_mut(
    overlay: &Overlay<'_>,
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &mut NodeInfo,
    nominated: &NominatedPods,
    snapshot: &Snapshot,
) -> Status {
    let pods = nominated.on(node.name());
    if pods.is_empty() {
        return run_filters(filters, state, pod, node);
    }
    let first = if overlay.aggregates_only {
        for p in pods {
            node.add_to_aggregates(p);
        }
        let st = run_filters(filters, state, pod, node);
        for p in pods {
            node.sub_aggregates(p);
        }
        st
    } else {
        let st = first_pass(&overlay.extensions, filters, state, pod, node, pods, snapshot);
        for p in pods.iter().rev() {
            node.remove_pod(&p.uid);
        }
        st
    };
    if !first.is_success() {
        return first;
    }
    run_filters(filters, state, pod, node)
}

/// Adds `pods` to `with` (and to a copy of the state, through the PreFilter extensions) and
/// runs the filters there.
fn first_pass(
    extensions: &[&dyn PreFilterPlugin],
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    with: &mut NodeInfo,
    pods: &[Pod],
    snapshot: &Snapshot,
) -> Status {
    let name = with.name();
    // The state is copied only when a PreFilter extension will change it.
    let mut with_state = (!extensions.is_empty()).then(|| state.clone());
    let mut status = None;
    for (i, p) in pods.iter().enumerate() {
        with.add_pod(p.with_node(name));
        if let Some(ws) = with_state.as_mut() {
            for ext in extensions {
                let st = ext.add_pod(ws, pod, p, with, snapshot);
                if !st.is_success() {
                    status = Some(st.with_plugin(ext.name()));
                    break;
                }
            }
        }
        if status.is_some() {
            // Add the rest too: callers take every one of `pods` off again.
            for q in pods[i + 1..].iter() {
                with.add_pod(q.with_node(name));
            }
            break;
        }
    }
    status.unwrap_or_else(|| run_filters(filters, with_state.as_ref().unwrap_or(state), pod, with))
}

/// Scores of one cycle: the totals, then each plugin's weighted, normalized scores, one row
/// of `num_nodes` after another (`score(p, i)` for plugin `p`, feasible node `i`).
#[derive(Default)]
pub struct ScoreTable {
    pub plugins: Vec<&'static str>,
    /// `num_nodes` totals, then a row of `num_nodes` per plugin of `plugins`.
    rows: Vec<i64>,
    pub num_nodes: usize,
    /// When scored on the pool: each chunk's highest total, how many nodes have it, and the
    /// first of them (empty when the totals were not summed chunk by chunk).
    best: Vec<ChunkBest>,
    par: ChunkScoring,
}

/// A chunk's highest total, how many of its nodes have it, and the first of them.
#[derive(Clone, Copy, Debug, Default)]
struct ChunkBest {
    max: i64,
    ties: u32,
    first: u32,
}

impl ChunkBest {
    /// Without a branch per node: the maximum, then how many have it, then where the first
    /// is (most chunks' best comes early, or ties many nodes).
    fn of(totals: &[i64], lo: usize) -> ChunkBest {
        let max = totals.iter().fold(i64::MIN, |m, &t| m.max(t));
        let ties = totals.iter().fold(0u32, |n, &t| n + u32::from(t == max));
        let first = totals.iter().position(|&t| t == max).unwrap_or(0);
        ChunkBest { max, ties, first: (lo + first) as u32 }
    }
}

/// Scoring chunk by chunk: per-worker buffers, from how many nodes it runs on the pool, from
/// how many on the caller alone (the serial path below that), and in chunks of how many.
struct ChunkScoring {
    bufs: ChunkBuffers<ColumnScores>,
    min_nodes: usize,
    inline_from: usize,
    chunk: usize,
}

impl Default for ChunkScoring {
    fn default() -> Self {
        ChunkScoring {
            bufs: ChunkBuffers::default(),
            min_nodes: SCORE_POOL_MIN_NODES,
            inline_from: 0,
            chunk: SCORE_CHUNK,
        }
    }
}

/// Scoring runs on the pool from this many feasible nodes: below it, one worker scores them
/// faster than waking another (perf/RESULTS.md, issue 18).
pub const SCORE_POOL_MIN_NODES: usize = 2000;
/// Feasible nodes per chunk a worker claims when scoring on the pool.
const SCORE_CHUNK: usize = 256;

/// One worker's part of scoring on the pool: the plugins that could not score one of its
/// chunks from the columns, the plugins with a raw score other than 0 in one, whether a score that
/// needs no normalizing was out of range, the first error, and for each chunk its best
/// total and the plugins (bit k for plugin k) whose raw scores there were all 0.
#[derive(Default)]
struct ColumnScores {
    scratch: Vec<i64>,
    declined: Vec<bool>,
    nonzero: Vec<bool>,
    out_of_range: bool,
    error: Option<Status>,
    best: Vec<(u32, ChunkBest, u64)>,
    /// The chunk's rows' stamps (read once per chunk, when a plugin's scores are kept).
    stamps: Vec<u64>,
    /// Nodes whose kept score is stale: their index in the chunk, position, row's stamp and
    /// new score.
    miss_at: Vec<u32>,
    miss_positions: Vec<u32>,
    miss_stamps: Vec<u64>,
    miss_scores: Vec<i64>,
    /// Scores computed anew, to keep: (plan index, position, stamp, score).
    misses: Vec<(u32, u32, u64, i64)>,
}

/// A scoring plugin of the cycle as the pool runs it: what its normalize does, its weight.
type Planned<'a> = (&'a dyn ScorePlugin, Normalizing, i64);

impl ColumnScores {
    fn reset(&mut self, plugins: usize) {
        self.declined.clear();
        self.declined.resize(plugins, false);
        self.nonzero.clear();
        self.nonzero.resize(plugins, false);
        self.out_of_range = false;
        self.error = None;
        self.best.clear();
        self.misses.clear();
    }

    /// For plugin `k` whose normalize changes nothing: its kept scores, weighed, into its
    /// row of the chunk and added to the totals in one pass; `score_columns` for the rows
    /// whose stamp moved on (recorded in `misses`). Kept scores were in range when kept.
    /// Returns what `score_columns` returns; declined, the totals hold some of the plugin's
    /// scores and the caller sums them again.
    #[allow(clippy::too_many_arguments)]
    fn memo_weighed(
        &mut self,
        k: usize,
        (plugin, weight): (&dyn ScorePlugin, i64),
        memo: MemoView<'_>,
        state: &CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        positions: &[u32],
        slots: &mut ChunkSlots<'_, i64>,
    ) -> Result<bool, Status> {
        self.miss_at.clear();
        self.miss_positions.clear();
        self.miss_stamps.clear();
        let (totals, row) = slots.two_rows(0, 1 + k);
        if !Columns::dense(positions) {
            if self.stamps.len() != positions.len() {
                self.stamps.clear();
                snapshot.columns().stamps_into(positions, &mut self.stamps);
            }
            for (i, ((&p, &stamp), (t, r))) in
                positions.iter().zip(&self.stamps).zip(totals.iter_mut().zip(row.iter_mut())).enumerate()
            {
                match memo.get(p as usize, stamp) {
                    Some(kept) => {
                        *r = kept * weight;
                        *t += *r;
                    }
                    None => {
                        self.miss_at.push(i as u32);
                        self.miss_positions.push(p);
                        self.miss_stamps.push(stamp);
                    }
                }
            }
        } else {
            // A span's positions are consecutive, so are their kept scores and the chunk's
            // stamps: the kept scores are weighed in, and their stamps checked against the
            // rows', in one pass that vectorizes. A span where some stamp moved on (few,
            // after a workload's first cycles) takes those nodes' scores back out.
            let mut at = 0;
            for (chunk, first, len) in snapshot.columns().spans(positions) {
                let span = at..at + len;
                let kept = memo.run(positions[at] as usize, len);
                let stamps = &chunk.stamp[first..first + len];
                let (totals, row) = (&mut totals[span.clone()], &mut row[span]);
                let held = if weight == 1 {
                    weigh_kept(kept, stamps, row, totals, |s| s)
                } else {
                    weigh_kept(kept, stamps, row, totals, |s| s * weight)
                };
                if !held {
                    for (i, ((t, r), (&(kept, _), &now))) in
                        totals.iter_mut().zip(row.iter()).zip(kept.iter().zip(stamps)).enumerate()
                    {
                        if kept != now {
                            *t -= *r;
                            self.miss_at.push((at + i) as u32);
                            self.miss_positions.push(positions[at + i]);
                            self.miss_stamps.push(now);
                        }
                    }
                }
                at += len;
            }
        }
        if self.miss_positions.is_empty() {
            return Ok(true);
        }
        self.miss_scores.clear();
        let n = self.miss_positions.len();
        let columns = plugin.score_columns(
            state,
            pod,
            snapshot.columns(),
            &self.miss_positions,
            snapshot,
            &mut self.miss_scores,
        )?;
        if !columns.into_scores(&mut self.miss_scores, n) {
            return Ok(false);
        }
        if self.miss_scores.len() != self.miss_positions.len() {
            let e = format!("{} scores for {} nodes", self.miss_scores.len(), self.miss_positions.len());
            return Err(Status::error(e));
        }
        self.out_of_range |= out_of_range(&self.miss_scores);
        let misses = self.miss_at.iter().zip(&self.miss_positions).zip(&self.miss_stamps).zip(&self.miss_scores);
        for (((&i, &p), &stamp), &score) in misses {
            let i = i as usize;
            row[i] = score * weight;
            totals[i] += row[i];
            self.misses.push((k as u32, p, stamp, score));
        }
        Ok(true)
    }

    /// Scores one chunk with every plugin that reads the columns, into the chunk's columns of
    /// the table's rows (row 0 the totals, row 1 + k plugin k). A plugin whose normalize
    /// leaves scores as they are is weighted and added to the totals here, and so are by-max
    /// scores that are all 0 in the chunk; the others' raw scores wait for the whole cycle's.
    #[allow(clippy::too_many_arguments)]
    fn score_chunk(
        &mut self,
        plan: &[Planned<'_>],
        memos: &[Option<MemoView<'_>>],
        state: &CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        positions: &[u32],
        slots: &mut ChunkSlots<'_, i64>,
    ) {
        if self.error.is_some() {
            return;
        }
        let (lo, hi) = (slots.lo(), slots.hi());
        let positions = &positions[lo..hi];
        slots.row(0).fill(0);
        self.stamps.clear();
        let mut zeros = 0u64;
        for (k, &(plugin, normalizing, weight)) in plan.iter().enumerate() {
            if self.declined[k] {
                continue;
            }
            let memo = memos.get(k).copied().flatten();
            if let (Some(memo), Normalizing::Unchanged) = (memo, normalizing) {
                match self.memo_weighed(k, (plugin, weight), memo, state, pod, snapshot, positions, slots) {
                    Ok(true) => {}
                    Ok(false) => self.declined[k] = true,
                    Err(e) => {
                        self.error = Some(e.with_plugin(plugin.name()));
                        return;
                    }
                }
                continue;
            }
            self.scratch.clear();
            match plugin.score_columns(state, pod, snapshot.columns(), positions, snapshot, &mut self.scratch) {
                Ok(ColumnScoring::Scored) if self.scratch.len() == positions.len() => {}
                Ok(ColumnScoring::AllZero) if self.scratch.is_empty() => {
                    // Unchanged they add nothing, by max they normalize to one value (taken as
                    // final, as below), and whole they wait as zeros.
                    match normalizing {
                        Normalizing::ByMax { reverse } if k < 64 => zeros |= zeros_by_max(slots, k, reverse, weight),
                        _ => slots.row(1 + k).fill(0),
                    }
                    continue;
                }
                Ok(ColumnScoring::Scored | ColumnScoring::AllZero) => {
                    let e = format!("{} scores for {} nodes", self.scratch.len(), positions.len());
                    self.error = Some(Status::error(e).with_plugin(plugin.name()));
                    return;
                }
                Ok(ColumnScoring::Declined) => {
                    self.declined[k] = true;
                    continue;
                }
                Err(e) => {
                    self.error = Some(e.with_plugin(plugin.name()));
                    return;
                }
            }
            let scores = &self.scratch[..];
            match normalizing {
                Normalizing::Unchanged => {
                    self.out_of_range |= out_of_range(scores);
                    let (totals, row) = slots.two_rows(0, 1 + k);
                    weigh_and_add(scores, weight, row, totals);
                }
                Normalizing::ByMax { reverse } => {
                    let nonzero = scores.iter().fold(false, |any, &s| any | (s != 0));
                    self.nonzero[k] |= nonzero;
                    if !nonzero && k < 64 {
                        zeros |= zeros_by_max(slots, k, reverse, weight);
                    } else {
                        slots.row(1 + k).copy_from_slice(scores);
                    }
                }
                Normalizing::Whole => slots.row(1 + k).copy_from_slice(scores),
            }
        }
        self.best.push((slots.chunk() as u32, ChunkBest::of(slots.row(0), lo), zeros));
    }
}
/// Plugin `k`'s raw scores in the chunk are all 0, and it normalizes by max: normalized they
/// are one value (most cycles: no node has what the plugin counts), taken as final here,
/// weighed into its row and added to the totals; the caller undoes it if another chunk's
/// scores were not all 0. Returns the chunk's bit for plugin `k` (`k < 64`).
fn zeros_by_max(slots: &mut ChunkSlots<'_, i64>, k: usize, reverse: bool, weight: i64) -> u64 {
    let (totals, row) = slots.two_rows(0, 1 + k);
    let v = if reverse { MAX_NODE_SCORE * weight } else { 0 };
    row.fill(v);
    if v != 0 {
        totals.iter_mut().for_each(|t| *t += v);
    }
    1 << k
}

/// Whether a normalized score lies outside `MIN_NODE_SCORE..=MAX_NODE_SCORE`. Branch-free
/// (no early exit): most cycles have no bad score to find.
fn out_of_range(scores: &[i64]) -> bool {
    let span = (MAX_NODE_SCORE - MIN_NODE_SCORE) as u64;
    scores.iter().fold(false, |bad, &s| bad | (s.wrapping_sub(MIN_NODE_SCORE) as u64 > span))
}

/// `row = weigh(kept score)`, `totals += row`, for a span of kept scores; whether every kept
/// stamp equals the row's stamp now. One pass without a branch (weight 1 without a multiply,
/// which does not vectorize on baseline x86-64).
#[inline]
fn weigh_kept(
    kept: &[(u64, i64)],
    stamps: &[u64],
    row: &mut [i64],
    totals: &mut [i64],
    weigh: impl Fn(i64) -> i64,
) -> bool {
    // All four cut to one length first: the indexed loop then has no bounds check, and it
    // vectorizes whatever the caller inlines it into (a four-way `zip` did in some builds
    // and not in others: +6% instructions in scoring between two builds of the same code).
    let n = totals.len().min(row.len()).min(kept.len()).min(stamps.len());
    let (totals, row, kept, stamps) = (&mut totals[..n], &mut row[..n], &kept[..n], &stamps[..n]);
    let mut held = true;
    for i in 0..n {
        let (was, score) = kept[i];
        let w = weigh(score);
        row[i] = w;
        totals[i] += w;
        held &= was == stamps[i];
    }
    held
}

/// `row = scores × weight`, `totals += row`. Most weights are 1: no 64-bit multiply then (it
/// does not vectorize on baseline x86-64).
fn weigh_and_add(scores: &[i64], weight: i64, row: &mut [i64], totals: &mut [i64]) {
    if weight == 1 {
        for ((t, r), &s) in totals.iter_mut().zip(row.iter_mut()).zip(scores) {
            *r = s;
            *t += s;
        }
    } else {
        for ((t, r), &s) in totals.iter_mut().zip(row.iter_mut()).zip(scores) {
            *r = s * weight;
            *t += *r;
        }
    }
}

/// Normalizes `scores` (one plugin's, for every feasible node), checks the range, weighs
/// them in place and adds them to `totals` when given.
fn finish_scores(
    plugin: &dyn ScorePlugin,
    weight: i64,
    state: &CycleState,
    pod: &Pod,
    scores: &mut [i64],
    totals: Option<&mut [i64]>,
) -> Result<(), Status> {
    let st = plugin.normalize(state, pod, scores);
    if !st.is_success() {
        return Err(st.with_plugin(plugin.name()));
    }
    check_range(plugin, scores)?;
    weigh(scores, weight, totals);
    Ok(())
}

fn check_range(plugin: &dyn ScorePlugin, scores: &[i64]) -> Result<(), Status> {
    if out_of_range(scores) {
        let s = scores.iter().find(|s| !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(*s)).copied().unwrap_or_default();
        return Err(Status::error(format!(
            "plugin {:?} returns an invalid score {s}, it should in the range of [0, 100] after normalizing",
            plugin.name()
        )));
    }
    Ok(())
}

/// `scores ×= weight` and `totals += scores` (when given).
fn weigh(scores: &mut [i64], weight: i64, totals: Option<&mut [i64]>) {
    if weight != 1 {
        scores.iter_mut().for_each(|s| *s *= weight);
    }
    if let Some(totals) = totals {
        totals.iter_mut().zip(scores.iter()).for_each(|(t, s)| *t += *s);
    }
}

impl ScoreTable {
    /// A table that scores on the pool from `min_nodes` feasible nodes, and chunk by chunk
    /// without one from as many, `chunk` nodes per claim (tests and measurements; by default
    /// the pool from `SCORE_POOL_MIN_NODES`, chunks from 1 node).
    pub fn scoring_on_pool_from(min_nodes: usize, chunk: usize) -> ScoreTable {
        let mut t = ScoreTable::default();
        t.par.min_nodes = min_nodes;
        t.par.inline_from = min_nodes;
        t.par.chunk = chunk.max(1);
        t
    }

    /// A table that scores plugin after plugin over all nodes, never chunk by chunk (the
    /// reference the chunked paths are tested against).
    pub fn plugin_by_plugin() -> ScoreTable {
        ScoreTable::scoring_on_pool_from(usize::MAX, SCORE_CHUNK)
    }

    /// Plugin `plugin`'s weighted, normalized score of feasible node `node`.
    pub fn score(&self, plugin: usize, node: usize) -> i64 {
        self.rows[(1 + plugin) * self.num_nodes + node]
    }

    /// Every plugin's weighted, normalized scores, one row of `num_nodes` after another.
    pub fn plugin_scores(&self) -> &[i64] {
        &self.rows[self.num_nodes.min(self.rows.len())..]
    }

    /// The weighted sum of the plugins' scores, per feasible node.
    pub fn totals(&self) -> &[i64] {
        &self.rows[..self.num_nodes.min(self.rows.len())]
    }

    /// The totals, to change (extenders add their priorities).
    pub fn totals_mut(&mut self) -> &mut [i64] {
        self.best.clear();
        let n = self.num_nodes.min(self.rows.len());
        &mut self.rows[..n]
    }

    /// The index of a highest total; ties broken as `scheduler::select_host` breaks them (the
    /// same draw, the same node), from the chunks' best totals when scoring kept them.
    pub fn select_host(&self, rng: &mut crate::util::rng::Rng) -> usize {
        let totals = self.totals();
        let Some(max) = self.best.iter().map(|b| b.max).max() else {
            return crate::scheduler::select_host(totals, rng);
        };
        let ties: u64 = self.best.iter().filter(|b| b.max == max).map(|b| u64::from(b.ties)).sum();
        let mut k = if ties > 1 { rng.below(ties) } else { 0 };
        for b in self.best.iter().filter(|b| b.max == max) {
            if k >= u64::from(b.ties) {
                k -= u64::from(b.ties);
                continue;
            }
            for (i, &t) in totals.iter().enumerate().skip(b.first as usize) {
                if t == max {
                    if k == 0 {
                        return i;
                    }
                    k -= 1;
                }
            }
        }
        0
    }

    /// Empties the table for `n` nodes (`rows` keeps `1 + plugins` rows of old values, which
    /// the pool overwrites, when `plugins` is given).
    fn start(&mut self, n: usize, plugins: Option<usize>) {
        self.plugins.clear();
        self.best.clear();
        self.num_nodes = n;
        match plugins {
            Some(p) => {
                let len = (1 + p) * n;
                if self.rows.len() < len {
                    self.rows.resize(len, 0);
                }
                self.rows.truncate(len);
            }
            None => {
                self.rows.clear();
                self.rows.resize(n, 0);
            }
        }
    }
}

/// PreScore, Score, NormalizeScore and weighting over `nodes`, into `table` (reused across
/// cycles). A plugin whose PreScore returned Skip is left out.
pub fn run_scoring(
    profile: &Profile,
    state: &mut CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    nodes: &[&NodeInfo],
    table: &mut ScoreTable,
) -> Result<(), Status> {
    run_scoring_observed(profile, state, pod, snapshot, &Feasible::nodes(nodes), None, table, &mut NoObserver)
}

/// `run_scoring` over the snapshot's nodes at `positions`: plugins that can score from the
/// snapshot's hot columns do (`ScorePlugin::score_columns`).
pub fn run_scoring_at(
    profile: &Profile,
    state: &mut CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    positions: &[u32],
    table: &mut ScoreTable,
) -> Result<(), Status> {
    run_scoring_observed(
        profile,
        state,
        pod,
        snapshot,
        &Feasible::at(snapshot, positions),
        None,
        table,
        &mut NoObserver,
    )
}

/// `run_scoring` over `nodes`, telling `obs` each plugin's raw and normalized scores and the
/// table. NodeInfos are looked up only for plugins that cannot score from the columns. When
/// nothing observes them, nodes given by position are scored chunk by chunk
/// (`score_in_chunks`), on `pool` from `SCORE_POOL_MIN_NODES` of them.
#[allow(clippy::too_many_arguments)]
pub fn run_scoring_observed<O: CycleObserver + ?Sized>(
    profile: &Profile,
    state: &mut CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    nodes: &Feasible<'_>,
    pool: Option<&WorkerPool>,
    table: &mut ScoreTable,
    obs: &mut O,
) -> Result<(), Status> {
    let observed = obs.observes();
    for p in &profile.pre_score {
        let st = p.pre_score(state, pod, snapshot, nodes);
        if st.is_skip() {
            state.skip_score.push(p.name());
        } else if !st.is_success() {
            return Err(st.with_plugin(p.name()));
        }
    }
    if let (Some(positions), false) = (nodes.positions(), observed) {
        let pool = pool.filter(|p| p.size() > 1 && positions.len() >= table.par.min_nodes);
        if (pool.is_some() || positions.len() >= table.par.inline_from)
            && score_in_chunks(profile, state, pod, snapshot, nodes, positions, pool, table)?
        {
            return Ok(());
        }
    }
    let positions = nodes.positions();
    let n = nodes.len();
    table.start(n, None);
    for ws in &profile.score {
        let plugin = &*ws.plugin;
        if state.skips_score(plugin.name()) {
            continue;
        }
        let start = table.rows.len();
        let from_columns = match positions {
            Some(p) => plugin
                .score_columns(state, pod, snapshot.columns(), p, snapshot, &mut table.rows)
                .map_err(|e| e.with_plugin(plugin.name()))?
                .into_scores(&mut table.rows, p.len()),
            None => false,
        };
        if !from_columns {
            plugin
                .score_nodes(state, pod, &nodes[..], snapshot, &mut table.rows)
                .map_err(|e| e.with_plugin(plugin.name()))?;
        }
        let (totals, scores) = table.rows.split_at_mut(n);
        let scores = &mut scores[start - n..];
        if observed {
            obs.raw_scores(plugin.name(), scores);
            let st = plugin.normalize(state, pod, scores);
            if !st.is_success() {
                return Err(st.with_plugin(plugin.name()));
            }
            obs.normalized_scores(plugin.name(), ws.weight, scores);
            check_range(plugin, scores)?;
            weigh(scores, ws.weight, Some(totals));
        } else {
            finish_scores(plugin, ws.weight, state, pod, scores, Some(totals))?;
        }
        table.plugins.push(plugin.name());
    }
    if observed {
        obs.scored(&nodes[..], table);
    }
    Ok(())
}

/// Scores `positions` chunk by chunk, on `pool` when given: each plugin that reads the columns scores
/// the chunk, and what needs no other chunk is finished there: scores whose normalize
/// changes nothing are weighted and added to the totals, a chunk whose by-max scores are all
/// 0 takes their normalized value (0, or the maximum when reversed) as final, and each chunk
/// keeps its best total. The rest follows here, over whole rows: a plugin that declined some
/// chunk scores every node node by node, by-max scores with a non-zero one somewhere get
/// their zeros back, and normalizes run. The chunks' best totals are kept when nothing here
/// changed the totals. Returns false, with the table to be filled again, when a plugin
/// failed or a score was out of range: the plugin-by-plugin path then reports it as it
/// always does.
#[allow(clippy::too_many_arguments)]
fn score_in_chunks(
    profile: &Profile,
    state: &CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    nodes: &Feasible<'_>,
    positions: &[u32],
    pool: Option<&WorkerPool>,
    table: &mut ScoreTable,
) -> Result<bool, Status> {
    let scoring: SmallVec<[&WeightedScore; 16]> =
        profile.score.iter().filter(|ws| !state.skips_score(ws.plugin.name())).collect();
    let plan: SmallVec<[Planned<'_>; 16]> =
        scoring.iter().map(|ws| (&*ws.plugin, ws.plugin.normalizing(), ws.weight)).collect();
    // The kept scores of the plugins that say what their scores depend on and whose
    // normalize leaves them as they are.
    let mut memo = profile.score_memo.try_lock();
    let memo_slots: SmallVec<[Option<usize>; 16]> = scoring
        .iter()
        .map(|ws| {
            if ws.plugin.normalizing() != Normalizing::Unchanged {
                return None;
            }
            let key = ws.plugin.memo_key(pod)?;
            Some(memo.as_mut()?.slot(&ws.plugin, pod, key, snapshot.columns().len()))
        })
        .collect();
    let n = positions.len();
    table.start(n, Some(plan.len()));
    let ChunkScoring { bufs, chunk, .. } = &mut table.par;
    let workers = pool.map_or(1, WorkerPool::size);
    {
        let views: SmallVec<[Option<MemoView<'_>>; 16]> =
            memo_slots.iter().map(|slot| Some(memo.as_ref()?.view((*slot)?))).collect();
        let (plan_ref, views) = (&plan[..], &views[..]);
        bufs.for_chunks_into(
            pool,
            n,
            *chunk,
            &mut table.rows,
            1 + plan.len(),
            |b| b.reset(plan_ref.len()),
            |b, slots| b.score_chunk(plan_ref, views, state, pod, snapshot, positions, slots),
        );
    }
    // An error or a score out of range: the plugin-by-plugin path reports the one it meets
    // first, as it always does (chunks meet them in another order).
    if (0..workers).any(|w| bufs.buf(w).error.is_some() || bufs.buf(w).out_of_range) {
        return Ok(false);
    }
    if let Some(memo) = memo.as_mut() {
        for w in 0..workers {
            for &(k, p, stamp, score) in &bufs.buf(w).misses {
                if let Some(slot) = memo_slots[k as usize] {
                    memo.record(slot, p as usize, stamp, score);
                }
            }
        }
    }
    drop(memo);
    // The chunks' best totals hold while the scores added later are one value for all.
    let mut keep_best = true;
    // Some chunks' scores went into the totals and must come out again: the totals are
    // summed again from the rows at the end.
    let mut resum = false;
    for (k, &(plugin, normalizing, weight)) in plan.iter().enumerate() {
        table.plugins.push(plugin.name());
        let declined = (0..workers).any(|w| bufs.buf(w).declined[k]);
        let nonzero = (0..workers).any(|w| bufs.buf(w).nonzero[k]);
        let row = &mut table.rows[(1 + k) * n..(2 + k) * n];
        if declined {
            keep_best = false;
            resum |= normalizing != Normalizing::Whole;
            let mut scores = std::mem::take(&mut bufs.buf(0).scratch);
            scores.clear();
            plugin
                .score_nodes(state, pod, &nodes[..], snapshot, &mut scores)
                .map_err(|e| e.with_plugin(plugin.name()))?;
            if scores.len() != n {
                let e = format!("{} scores for {n} nodes", scores.len());
                return Err(Status::error(e).with_plugin(plugin.name()));
            }
            row.copy_from_slice(&scores);
            bufs.buf(0).scratch = scores;
        } else {
            match normalizing {
                Normalizing::Unchanged => continue,
                // Every chunk took its all-0 raw scores as final, rightly.
                Normalizing::ByMax { .. } if !nonzero && k < 64 => continue,
                Normalizing::ByMax { .. } => {
                    // Chunks that took their zeros as final get them back.
                    keep_best = false;
                    resum = true;
                    for w in 0..workers {
                        for &(c, _, zeros) in &bufs.buf(w).best {
                            if k < 64 && zeros & (1 << k) != 0 {
                                let lo = c as usize * *chunk;
                                row[lo..(lo + *chunk).min(n)].fill(0);
                            }
                        }
                    }
                }
                Normalizing::Whole => keep_best = false,
            }
        }
        let (totals, rest) = table.rows.split_at_mut(n);
        let row = &mut rest[k * n..(k + 1) * n];
        finish_scores(plugin, weight, state, pod, row, (!resum).then_some(totals))?;
    }
    let (totals, rows) = table.rows.split_at_mut(n);
    if resum {
        totals.fill(0);
        for row in rows.chunks_exact(n) {
            totals.iter_mut().zip(row).for_each(|(t, s)| *t += *s);
        }
    }
    if keep_best {
        table.best.resize(n.div_ceil(*chunk), ChunkBest::default());
        for w in 0..workers {
            for &(c, b, _) in &bufs.buf(w).best {
                table.best[c as usize] = b;
            }
        }
    }
    Ok(true)
}

/// Why each rejected node was rejected, by position in the snapshot. Nodes without an entry
/// have `absent` (when PreFilter rejected the pod, every node has its status), or passed.
///
/// Thousands of nodes share a handful of statuses, so each entry is a position and an index
/// into the statuses kept: a failure in brief is built into a `Status` only when it differs
/// from the last brief recorded (a full status is kept as it comes).
#[derive(Clone, Debug, Default)]
pub struct NodeStatuses {
    entries: Vec<(u32, u32)>,
    distinct: Vec<Status>,
    /// The last brief recorded and its index in `distinct`.
    last_brief: Option<(&'static str, super::RowFail, u32)>,
    pub absent: Option<Status>,
}

impl NodeStatuses {
    pub fn clear(&mut self) {
        self.entries.clear();
        self.distinct.clear();
        self.last_brief = None;
        self.absent = None;
    }

    /// Records that the node at `pos` was rejected with `st`.
    pub fn push(&mut self, pos: u32, st: Status) {
        // Not compared with the last: telling two full statuses equal costs about what
        // keeping both does.
        self.distinct.push(st);
        self.entries.push((pos, self.distinct.len() as u32 - 1));
    }

    /// Records `v` for the node at `pos`: nothing for a pass.
    #[inline]
    pub fn push_verdict(&mut self, pos: u32, v: Verdict) {
        match v {
            Verdict::Pass => {}
            Verdict::Full(st) => self.push(pos, st),
            Verdict::Brief(plugin, fail) => {
                let idx = match self.last_brief {
                    Some((p, f, idx)) if std::ptr::eq(p, plugin) && f.same(&fail) => idx,
                    _ => {
                        self.distinct.push(Verdict::Brief(plugin, fail).into_status());
                        let idx = (self.distinct.len() - 1) as u32;
                        self.last_brief = Some((plugin, fail, idx));
                        idx
                    }
                };
                self.entries.push((pos, idx));
            }
        }
    }

    /// `push_verdict` of the same brief for each node of `positions`, in order.
    pub fn push_brief_run(&mut self, positions: std::ops::Range<u32>, plugin: &'static str, fail: super::RowFail) {
        let Some(first) = positions.clone().next() else { return };
        self.push_verdict(first, Verdict::Brief(plugin, fail));
        let idx = self.entries.last().map_or(0, |&(_, idx)| idx);
        self.entries.extend(positions.skip(1).map(|pos| (pos, idx)));
    }

    /// Each rejected node's position and status, in the order they were recorded.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Status)> + '_ {
        self.entries.iter().map(|&(pos, idx)| (pos, &self.distinct[idx as usize]))
    }

    /// The positions of the rejected nodes, in the order they were recorded.
    pub fn positions(&self) -> impl Iterator<Item = u32> + '_ {
        self.entries.iter().map(|&(pos, _)| pos)
    }

    /// The statuses the rejected nodes have, each at least once, in the order first recorded.
    pub fn statuses(&self) -> &[Status] {
        &self.distinct
    }

    /// Every node's status code by snapshot position (`Success` for nodes with no status).
    pub fn codes(&self, num_nodes: usize) -> Vec<super::Code> {
        let fill = self.absent.as_ref().map_or(super::Code::Success, |s| s.code);
        let mut codes = vec![fill; num_nodes];
        for (pos, st) in self.iter() {
            if let Some(c) = codes.get_mut(pos as usize) {
                *c = st.code;
            }
        }
        codes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The status of the node at snapshot position `pos`, if it was rejected.
    pub fn at(&self, pos: u32) -> Option<&Status> {
        self.iter().find(|(p, _)| *p == pos).map(|(_, s)| s)
    }

    /// The status of the node named `name`, if it was rejected.
    pub fn get(&self, snapshot: &Snapshot, name: Sym) -> Option<&Status> {
        let pos = snapshot.position(name)? as u32;
        self.at(pos).or(self.absent.as_ref())
    }
}

/// Runs the profile's PostFilter plugins in order, as upstream's RunPostFilterPlugins does:
/// the first plugin that succeeds, rejects the pod as unresolvable or fails decides alone
/// (an error keeps no result); otherwise every plugin's message is joined with ", " and the
/// last result that changes the nomination is kept. Returns that result and the message
/// (`None` when empty, as after a success).
pub fn run_post_filter_plugins(
    profile: &Profile,
    ctx: &mut super::PostFilterContext<'_>,
    state: &CycleState,
    pod: &Pod,
) -> (Option<super::PostFilterResult>, Option<String>) {
    let mut result = None;
    let mut messages = Vec::new();
    for p in &profile.post_filter {
        let (r, st) = p.post_filter(ctx, state, pod);
        let decisive = st.is_success() || !st.is_rejected() || st.code == Code::UnschedulableAndUnresolvable;
        if decisive {
            let msg = (!st.is_success()).then(|| st.message()).filter(|m| !m.is_empty());
            return (if st.code == Code::Error { None } else { r }, msg);
        }
        if r.as_ref().is_some_and(|r| r.nominating != super::Nominating::Noop) {
            result = r;
        }
        messages.push(st.message());
    }
    (result, Some(messages.join(", ")).filter(|m| !m.is_empty()))
}

/// No node fit: the summary upstream puts in the pod's condition and events.
#[derive(Clone, Debug)]
pub struct FitError {
    pub num_all_nodes: usize,
    /// Set when a PreFilter plugin rejected the pod outright.
    pub pre_filter_msg: Option<String>,
    /// "count reason" → count, over every rejected node's reasons.
    pub reasons: HashMap<String, usize>,
    pub post_filter_msg: Option<String>,
}

impl FitError {
    /// The reason histogram of `statuses` over `num_all_nodes` nodes; nodes without an entry
    /// count under the `absent` status's reasons.
    pub fn from_statuses(num_all_nodes: usize, statuses: &NodeStatuses) -> FitError {
        // Counted by reason first: thousands of nodes share a handful of reasons, so only
        // those few are formatted, and a short list searched from its most recent entry
        // beats hashing the reasons' text.
        let mut by_reason: SmallVec<[(super::Reason, usize); 8]> = SmallVec::new();
        let mut count = |r: super::Reason, n: usize| match by_reason.iter_mut().rev().find(|(seen, _)| *seen == r) {
            Some((_, c)) => *c += n,
            None => by_reason.push((r, n)),
        };
        let mut per_status = vec![0usize; statuses.distinct.len()];
        for &(_, idx) in &statuses.entries {
            per_status[idx as usize] += 1;
        }
        for (st, &n) in statuses.distinct.iter().zip(&per_status) {
            for r in &st.reasons {
                count(*r, n);
            }
        }
        let missing = num_all_nodes.saturating_sub(statuses.len());
        if let (Some(st), true) = (&statuses.absent, missing > 0) {
            for r in &st.reasons {
                count(*r, missing);
            }
        }
        let mut reasons: HashMap<String, usize> = HashMap::new();
        for (r, n) in by_reason {
            // Different variants may print the same text: add up.
            *reasons.entry(r.to_string()).or_default() += n;
        }
        FitError { num_all_nodes, pre_filter_msg: None, reasons, post_filter_msg: None }
    }
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} nodes are available:", self.num_all_nodes)?;
        if let Some(m) = &self.pre_filter_msg {
            write!(f, " {m}.")?;
        } else {
            let mut parts: Vec<String> = self.reasons.iter().map(|(r, c)| format!("{c} {r}")).collect();
            parts.sort();
            if !parts.is_empty() {
                write!(f, " {}.", parts.join(", "))?;
            }
        }
        // PostFilter's message is appended as it is (upstream adds no period: preemption's own
        // summary already ends with one).
        if let Some(m) = &self.post_filter_msg {
            write!(f, " {m}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ResourceName;
    use crate::framework::{Code, Reason};

    /// A chunk's best against the obvious loop: the highest total, how many share it, and
    /// the first of them (offset by the chunk's first node), for small totals that tie often,
    /// `i64::MIN` among them, and the empty chunk.
    #[test]
    fn chunk_best_is_the_first_highest_total_and_its_ties() {
        use proptest::prelude::*;
        let total = prop_oneof![8 => -3i64..3, 1 => Just(i64::MIN), 1 => Just(i64::MAX)];
        proptest!(|(totals in prop::collection::vec(total, 0..70), lo in 0usize..1000)| {
            let (mut max, mut ties, mut first) = (i64::MIN, 0u32, lo as u32);
            for (i, &t) in totals.iter().enumerate() {
                if t > max {
                    (max, ties, first) = (t, 1, (lo + i) as u32);
                } else if t == max {
                    ties += 1;
                }
            }
            let got = ChunkBest::of(&totals, lo);
            prop_assert_eq!((got.max, got.ties, got.first), (max, ties, first));
        });
    }

    #[test]
    fn fit_error_message_sorts_count_reason_strings() {
        let mut s = NodeStatuses::default();
        for i in 0..10 {
            s.push(i, Status::new(Code::Unschedulable, Reason::Insufficient(ResourceName::Cpu)));
        }
        for i in 10..12 {
            s.push(i, Status::unresolvable("node(s) had untolerated taint(s)"));
        }
        let e = FitError::from_statuses(13, &s);
        // Plain string order: "10 ..." sorts before "2 ...".
        assert_eq!(e.to_string(), "0/13 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s).");
        let pre = FitError {
            pre_filter_msg: Some("pod affinity terms conflict".into()),
            ..FitError::from_statuses(3, &NodeStatuses::default())
        };
        assert_eq!(pre.to_string(), "0/3 nodes are available: pod affinity terms conflict.");
        // PostFilter's message is appended as is: preemption's own summary ends the sentence.
        let post = FitError {
            post_filter_msg: Some(
                "no new claims to deallocate, preemption: 0/13 nodes are available: 13 Preemption is not helpful \
                 for scheduling."
                    .into(),
            ),
            ..FitError::from_statuses(13, &s)
        };
        assert_eq!(
            post.to_string(),
            "0/13 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s). no new claims to \
             deallocate, preemption: 0/13 nodes are available: 13 Preemption is not helpful for scheduling."
        );
    }

    /// `NominatedPods` kept across cycles against one gathered afresh each cycle (the model).
    mod statuses {
        use super::*;
        use crate::framework::RowFail;
        use proptest::prelude::*;

        fn lack(what: u32) -> Status {
            let r = if what == 0 { ResourceName::Cpu } else { ResourceName::Memory };
            Status::new(Code::Unschedulable, Reason::Insufficient(r))
        }

        fn other(_: u32) -> Status {
            Status::unresolvable("node(s) were unschedulable")
        }

        /// What one entry records: nothing (a pass), a brief, or a full status.
        fn verdict(kind: u8) -> Verdict {
            let brief = |plugin, what, make: fn(u32) -> Status| {
                Verdict::Brief(plugin, RowFail { code: make(what).code, what, make })
            };
            match kind {
                0 => Verdict::Pass,
                1 => brief("A", 0, lack),
                2 => brief("A", 1, lack),
                // The same brief from another plugin: a different status.
                3 => brief("B", 0, lack),
                4 => brief("A", 0, other),
                5 => Verdict::Full(lack(0).with_plugin("A")),
                6 => Verdict::Full(Status::error("boom").with_plugin("C")),
                _ => Verdict::Full(other(0).with_plugin("C")),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
            /// Statuses recorded in brief, in full, or both, read back as a plain list of
            /// (position, built status) would give them: each node's status, the codes, the
            /// lookup by position, the reason histogram, and each different status once.
            #[test]
            fn recorded_statuses_read_back_as_a_list(
                pushes in prop::collection::vec((0u32..40, 0u8..8, any::<bool>()), 0..60),
            ) {
                let mut got = NodeStatuses::default();
                let mut model: Vec<(u32, Status)> = Vec::new();
                for (pos, kind, as_status) in pushes {
                    let v = verdict(kind);
                    if !v.is_success() {
                        model.push((pos, v.clone().into_status()));
                    }
                    if as_status && !v.is_success() {
                        got.push(pos, v.into_status());
                    } else {
                        got.push_verdict(pos, v);
                    }
                }
                let read: Vec<(u32, Status)> = got.iter().map(|(p, st)| (p, st.clone())).collect();
                prop_assert_eq!(&read, &model);
                prop_assert_eq!(got.len(), model.len());
                prop_assert_eq!(got.positions().collect::<Vec<_>>(), model.iter().map(|e| e.0).collect::<Vec<_>>());
                let mut codes = vec![Code::Success; 40];
                for (p, st) in &model {
                    codes[*p as usize] = st.code;
                }
                prop_assert_eq!(got.codes(40), codes);
                for pos in 0..40 {
                    prop_assert_eq!(got.at(pos), model.iter().find(|e| e.0 == pos).map(|e| &e.1));
                }
                let mut naive: HashMap<String, usize> = HashMap::new();
                for (_, st) in &model {
                    for r in &st.reasons {
                        *naive.entry(r.to_string()).or_default() += 1;
                    }
                }
                prop_assert_eq!(FitError::from_statuses(50, &got).reasons, naive);
                let mut distinct: Vec<&Status> = Vec::new();
                for (_, st) in &model {
                    if !distinct.contains(&st) {
                        distinct.push(st);
                    }
                }
                for st in &distinct {
                    prop_assert!(got.statuses().contains(st));
                }
                prop_assert!(got.statuses().iter().all(|st| distinct.contains(&st)));
            }
        }
    }

    mod nominated {
        use std::time::Duration;

        use proptest::prelude::*;

        use super::super::*;
        use crate::api::{Node, ResourceName::*};
        use crate::cache::Cache;
        use crate::queue::Nominator;

        #[derive(Clone, Debug)]
        enum Op {
            /// Nominate pod `.0` to node `.1`.
            Nominate(usize, usize),
            Delete(usize),
            /// A cycle for pod `.0` of the pool, or (`None`) a pod nominated nowhere, with
            /// priority `.1`.
            Cycle(Option<usize>, i32),
            /// A node joins the cluster (the snapshot's positions move).
            AddNode,
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0usize..8, 0usize..6).prop_map(|(p, n)| Op::Nominate(p, n)),
                2 => (0usize..8).prop_map(Op::Delete),
                4 => (prop::option::of(0usize..8), prop_oneof![Just(0), Just(5), Just(10)]).prop_map(|(p, q)| Op::Cycle(p, q)),
                1 => Just(Op::AddNode),
            ]
        }

        fn uids(pods: &[Pod]) -> Vec<String> {
            pods.iter().map(|p| p.uid.to_string()).collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
            /// After any sequence of nominations, deletions, node additions and cycles of pods
            /// of varying priority (some nominated themselves), the kept nominations answer
            /// every lookup (by node, by position, emptiness) as a fresh gather does.
            #[test]
            fn kept_nominations_match_a_fresh_gather(ops in prop::collection::vec(op(), 1..60)) {
                let cache = Cache::new(Duration::from_secs(30));
                let mut nodes = 0usize;
                let mut add_node = |cache: &Cache| {
                    let name = format!("n{nodes}");
                    cache.add_node(Node::builder(&name).resources(4000, 1 << 34, 110).build()).unwrap();
                    nodes += 1;
                };
                for _ in 0..6 {
                    add_node(&cache);
                }
                let pool: Vec<Pod> = (0..8)
                    .map(|i| {
                        Pod::builder(&format!("p{i}"))
                            .priority([0, 5, 10][i % 3])
                            .container("c", &[(Cpu, 100 * (i as i64 + 1)), (Memory, 1 << 20)])
                            .build()
                    })
                    .collect();
                let nominator = Nominator::new();
                let mut kept = NominatedPods::default();
                let mut snapshot = cache.update_snapshot();
                for (step, op) in ops.into_iter().enumerate() {
                    match op {
                        Op::Nominate(p, n) => nominator.add(&pool[p], Some(Sym::new(&format!("n{n}")))),
                        Op::Delete(p) => nominator.delete(&pool[p]),
                        Op::AddNode => {
                            add_node(&cache);
                            snapshot = cache.update_snapshot();
                        }
                        Op::Cycle(p, priority) => {
                            let pod = match p {
                                Some(i) => pool[i].clone(),
                                None => Pod::builder("fresh").container("c", &[(Cpu, 1)]).build(),
                            };
                            // A cycle's pod of another priority is another pod: model it so.
                            let pod = if pod.priority == priority { pod } else {
                                Pod::builder(&format!("q{priority}")).priority(priority).container("c", &[(Cpu, 1)]).build()
                            };
                            kept.gather(Some(&nominator), &pod);
                            let mut fresh = NominatedPods::for_pod(Some(&nominator), &pod);
                            // Lookups by name before the positions are marked.
                            for i in 0..snapshot.num_nodes() {
                                let name = snapshot.node_at(i).unwrap().name();
                                prop_assert_eq!(kept.delta_on(name), fresh.delta_on(name), "step {} node {}", step, name);
                                prop_assert_eq!(uids(kept.on(name)), uids(fresh.on(name)), "step {} node {}", step, name);
                                prop_assert_eq!(kept.delta_at(i, || Some(name)), fresh.delta_on(name));
                            }
                            prop_assert_eq!(kept.is_empty(), fresh.is_empty(), "step {}", step);
                            kept.mark_positions(&snapshot);
                            fresh.mark_positions(&snapshot);
                            for i in 0..snapshot.num_nodes() {
                                let (a, b) = (kept.at(i), fresh.at(i));
                                prop_assert_eq!(a.map(|g| (uids(g.0), *g.1)), b.map(|g| (uids(g.0), *g.1)), "step {} position {}", step, i);
                                prop_assert_eq!(kept.delta_at(i, || None), fresh.delta_on(snapshot.node_at(i).unwrap().name()));
                            }
                        }
                    }
                }
            }
        }

        /// A kept gather that fell further behind than the nominator's log reaches gathers
        /// afresh, and still answers as a fresh gather does.
        #[test]
        fn a_gather_behind_the_log_starts_over() {
            let cache = Cache::new(Duration::from_secs(30));
            for i in 0..4 {
                cache.add_node(Node::builder(&format!("n{i}")).resources(4000, 1 << 34, 110).build()).unwrap();
            }
            let snapshot = cache.update_snapshot();
            let nominator = Nominator::new();
            let pods: Vec<Pod> =
                (0..4).map(|i| Pod::builder(&format!("p{i}")).container("c", &[(Cpu, 10 * (i + 1))]).build()).collect();
            let scheduled = Pod::builder("s").build();
            let mut kept = NominatedPods::default();
            nominator.add(&pods[0], Some(Sym::new("n0")));
            kept.gather(Some(&nominator), &scheduled);
            // n0's only change comes first, then far more changes elsewhere than the log
            // keeps, ending with p1 on n1 and p2 on n3.
            nominator.delete(&pods[0]);
            for k in 0..10_000usize {
                nominator.add(&pods[1 + k % 3], Some(Sym::new(&format!("n{}", 1 + k % 3))));
            }
            nominator.delete(&pods[3]);
            nominator.add(&pods[1], Some(Sym::new("n1")));
            nominator.add(&pods[2], Some(Sym::new("n3")));
            kept.gather(Some(&nominator), &scheduled);
            kept.mark_positions(&snapshot);
            let fresh = NominatedPods::for_pod(Some(&nominator), &scheduled);
            for i in 0..4 {
                let name = Sym::new(&format!("n{i}"));
                assert_eq!(uids(kept.on(name)), uids(fresh.on(name)), "node n{i}");
                assert_eq!(kept.delta_on(name), fresh.delta_on(name), "node n{i}");
            }
            assert_eq!(uids(kept.on(Sym::new("n1"))), vec![pods[1].uid.to_string()]);
            assert!(kept.on(Sym::new("n0")).is_empty(), "n0's change is older than the log");
        }
    }

    mod pool_scoring {
        use std::sync::{Arc, OnceLock};

        use proptest::prelude::*;

        use super::super::*;
        use crate::api::Node;
        use crate::framework::plugins::test_util::node_info;
        use crate::framework::profile::WeightedScore;
        use crate::framework::{default_normalize_score, Plugin, Profile};
        use crate::parallel::WorkerPool;
        use crate::util::rng::Rng;

        /// Scores node `n{i}` with `scores[i]`, from the columns unless `declines` holds
        /// one of the positions asked (and, if `tells_zeros`, says `AllZero` when they all
        /// score 0); normalizes as `normalizing` says (`Whole`: scores minus the smallest).
        struct Listed {
            name: &'static str,
            scores: Vec<i64>,
            normalizing: Normalizing,
            declines: Option<u32>,
            fails: Option<u32>,
            tells_zeros: bool,
        }

        impl Listed {
            fn fails_on(&self, positions: impl IntoIterator<Item = u32>) -> Result<(), Status> {
                match self.fails.filter(|f| positions.into_iter().any(|p| p == *f)) {
                    Some(f) => Err(Status::error(format!("{} cannot score n{f}", self.name))),
                    None => Ok(()),
                }
            }
        }

        impl Plugin for Listed {
            fn name(&self) -> &'static str {
                self.name
            }
        }

        impl ScorePlugin for Listed {
            fn score(&self, _: &CycleState, _: &Pod, node: &NodeInfo, _: &Snapshot) -> Result<i64, Status> {
                let i: usize = node.name().as_str()[1..].parse().unwrap();
                self.fails_on([i as u32])?;
                Ok(self.scores[i])
            }

            fn score_columns(
                &self,
                _: &CycleState,
                _: &Pod,
                _: &crate::snapshot::Columns,
                positions: &[u32],
                _: &Snapshot,
                out: &mut Vec<i64>,
            ) -> Result<ColumnScoring, Status> {
                self.fails_on(positions.iter().copied())?;
                if self.declines.is_some_and(|d| positions.contains(&d)) {
                    return Ok(ColumnScoring::Declined);
                }
                if self.tells_zeros && positions.iter().all(|&p| self.scores[p as usize] == 0) {
                    return Ok(ColumnScoring::AllZero);
                }
                out.extend(positions.iter().map(|&p| self.scores[p as usize]));
                Ok(ColumnScoring::Scored)
            }

            fn normalize(&self, _: &CycleState, _: &Pod, scores: &mut [i64]) -> Status {
                match self.normalizing {
                    Normalizing::Unchanged => {}
                    Normalizing::ByMax { reverse } => default_normalize_score(MAX_NODE_SCORE, reverse, scores),
                    Normalizing::Whole => {
                        let min = scores.iter().copied().min().unwrap_or(0);
                        scores.iter_mut().for_each(|s| *s -= min);
                    }
                }
                Status::success()
            }

            fn normalizing(&self) -> Normalizing {
                self.normalizing
            }
        }

        const NAMES: [&str; 4] = ["P0", "P1", "P2", "P3"];

        /// Scores the nodes at `positions` into `table` as a cycle does (chunk by chunk when
        /// the table says so), on `pool` if given.
        pub(super) fn score_chunked(
            profile: &Profile,
            pod: &Pod,
            snapshot: &Snapshot,
            positions: &[u32],
            pool: Option<&WorkerPool>,
            table: &mut ScoreTable,
        ) -> Result<(), Status> {
            let nodes = Feasible::at(snapshot, positions);
            run_scoring_observed(profile, &mut CycleState::new(), pod, snapshot, &nodes, pool, table, &mut NoObserver)
        }

        /// (how it normalizes: 0 unchanged, 1 by max, 2 by max reversed, 3 whole; weight;
        /// raw scores mostly 0, some out of range; declines at a position or not; fails at
        /// a position or not; says `AllZero` for positions all scoring 0 or scores them).
        type Spec = (u8, i64, Vec<i64>, Option<u32>, Option<u32>, bool);

        fn spec(n: usize) -> impl Strategy<Value = Spec> {
            let score = prop_oneof![6 => Just(0i64), 3 => 0i64..=100, 1 => -2i64..=103];
            let scores = prop_oneof![
                1 => Just(vec![0; n]),
                2 => prop::collection::vec(score, n),
            ];
            let at = move |none| prop_oneof![none => Just(None), 1 => (0..n as u32).prop_map(Some)];
            (0u8..4, 0i64..4, scores, at(4), at(3), any::<bool>())
        }

        fn case() -> impl Strategy<Value = (usize, Vec<Spec>, usize)> {
            (1usize..40).prop_flat_map(|n| (Just(n), prop::collection::vec(spec(n), 1..=4), 1usize..9))
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
            /// Scoring chunk by chunk, on a pool or not, gives the plugin-by-plugin table: the same error, the
            /// same rows and totals, and the same node for the same draw. Cases mix every
            /// kind of normalize, weights, all-zero rows (taken as final in each chunk),
            /// rows with a non-zero score somewhere (which undo that), declined chunks,
            /// scores out of range and plugins failing on some node.
            #[test]
            fn chunks_on_a_pool_give_the_serial_table((n, specs, chunk) in case()) {
                let nodes: Vec<NodeInfo> = (0..n).map(|i| node_info(Node::builder(&format!("n{i}")).build(), &[])).collect();
                let snapshot = Snapshot::from_node_infos(nodes);
                let score = specs
                    .iter()
                    .zip(NAMES)
                    .map(|((kind, weight, scores, declines, fails, tells_zeros), name)| {
                        let normalizing = match kind {
                            0 => Normalizing::Unchanged,
                            1 => Normalizing::ByMax { reverse: false },
                            2 => Normalizing::ByMax { reverse: true },
                            _ => Normalizing::Whole,
                        };
                        let plugin = Listed {
                            name,
                            scores: scores.clone(),
                            normalizing,
                            declines: *declines,
                            fails: *fails,
                            tells_zeros: *tells_zeros,
                        };
                        WeightedScore { plugin: Arc::new(plugin), weight: *weight }
                    })
                    .collect();
                let profile = Profile { score, ..Profile::empty("test") };
                let pod = Pod::builder("p").build();
                let positions: Vec<u32> = (0..n as u32).collect();
                let mut want = ScoreTable::plugin_by_plugin();
                let want_st = run_scoring_at(&profile, &mut CycleState::new(), &pod, &snapshot, &positions, &mut want);
                static POOL: OnceLock<WorkerPool> = OnceLock::new();
                let pool = POOL.get_or_init(|| WorkerPool::new(3));
                // On the pool, and chunk by chunk on the caller alone.
                for pool in [Some(pool), None] {
                let mut got = ScoreTable::scoring_on_pool_from(0, chunk);
                let got_st = score_chunked(&profile, &pod, &snapshot, &positions, pool, &mut got);
                prop_assert_eq!(&got_st, &want_st);
                if want_st.is_ok() {
                    prop_assert_eq!(&got.plugins, &want.plugins);
                    prop_assert_eq!(got.plugin_scores(), want.plugin_scores());
                    prop_assert_eq!(got.totals(), want.totals());
                    for seed in 0..3 {
                        let (mut a, mut b) = (Rng::seed(seed), Rng::seed(seed));
                        prop_assert_eq!(got.select_host(&mut a), crate::scheduler::select_host(want.totals(), &mut b));
                        prop_assert_eq!(a.next_u64(), b.next_u64());
                    }
                }
                }
            }
        }
    }

    mod kept_scores {
        use std::sync::{Arc, OnceLock};
        use std::time::Duration;

        use proptest::prelude::*;

        use super::super::*;
        use crate::api::{Node, ResourceName::*};
        use crate::cache::Cache;
        use crate::framework::plugins::node_resources_balanced::BalancedAllocation;
        use crate::framework::plugins::node_resources_fit::NodeResourcesFit;
        use crate::framework::profile::WeightedScore;
        use crate::framework::Profile;
        use crate::parallel::WorkerPool;

        /// Pod kinds (cpu milli, memory MiB): a few, so that keys come back.
        const KINDS: [(i64, i64); 3] = [(100, 200), (250, 0), (0, 0)];

        /// Scores a node by its allocatable cpu alone, kept (one key for every pod), out of
        /// range on nodes of 4990m or more.
        struct ByCpu;

        impl ByCpu {
            fn of(cpu: i64) -> i64 {
                cpu / 50 + if cpu >= 4990 { 5 } else { 0 }
            }
        }

        impl crate::framework::Plugin for ByCpu {
            fn name(&self) -> &'static str {
                "ByCpu"
            }
        }

        impl ScorePlugin for ByCpu {
            fn score(&self, _: &CycleState, _: &Pod, node: &NodeInfo, _: &Snapshot) -> Result<i64, Status> {
                Ok(ByCpu::of(node.allocatable().milli_cpu))
            }

            fn score_columns(
                &self,
                _: &CycleState,
                _: &Pod,
                columns: &crate::snapshot::Columns,
                positions: &[u32],
                _: &Snapshot,
                out: &mut Vec<i64>,
            ) -> Result<ColumnScoring, Status> {
                out.extend(columns.rows(positions).map(|r| ByCpu::of(r.allocatable_cpu())));
                Ok(ColumnScoring::Scored)
            }

            fn memo_key(&self, _: &Pod) -> Option<crate::framework::ScoreMemoKey> {
                Some([0; 4])
            }

            fn normalizing(&self) -> Normalizing {
                Normalizing::Unchanged
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
            /// Scores kept from cycle to cycle (NodeResourcesFit's and BalancedAllocation's,
            /// under the rows' stamps and the pods' requests) give the table of scoring every
            /// node plugin by plugin, cycle after cycle, while pods land, nodes come, go and
            /// change and pod kinds alternate; chunked on a pool or on the caller. A kept
            /// plugin's score out of range is the error it is when every node is scored.
            #[test]
            fn kept_scores_give_the_table_of_scoring_every_node(
                nodes in prop::collection::vec((0i64..5000, 0i64..4096), 1..150),
                // (pod kind; then 0..=5 a pod of that kind lands on a node, 6 a node goes,
                // 7 a node comes, 8 a node's allocatable changes, 9 nothing; which node).
                steps in prop::collection::vec((0usize..3, 0u8..10, any::<usize>()), 1..25),
                chunk in 1usize..70,
                on_pool in any::<bool>(),
                by_cpu in any::<bool>(),
            ) {
                let cache = Cache::new(Duration::from_secs(30));
                let node = |i: usize, cpu: i64, mem: i64| Node::builder(&format!("n{i}")).resources(cpu, mem << 20, 110).build();
                for (i, &(cpu, mem)) in nodes.iter().enumerate() {
                    cache.add_node(node(i, cpu, mem)).unwrap();
                }
                let mut score = vec![
                    WeightedScore { plugin: Arc::new(NodeResourcesFit::default()), weight: 1 },
                    WeightedScore { plugin: Arc::new(BalancedAllocation::default()), weight: 2 },
                ];
                if by_cpu {
                    score.push(WeightedScore { plugin: Arc::new(ByCpu), weight: 3 });
                }
                let profile = Profile { score, ..Profile::empty("test") };
                static POOL: OnceLock<WorkerPool> = OnceLock::new();
                let pool = on_pool.then(|| POOL.get_or_init(|| WorkerPool::new(2)));
                let mut added = nodes.len();
                let mut got = ScoreTable::scoring_on_pool_from(0, chunk);
                for (s, &(kind, change, at)) in steps.iter().enumerate() {
                    let snapshot = cache.update_snapshot();
                    let n = snapshot.num_nodes();
                    let (cpu, mem) = KINDS[kind];
                    let pod = Pod::builder(&format!("p{s}")).container("i", &[(Cpu, cpu), (Memory, mem << 20)]).build();
                    // Every node, from a rotating start, as a search visits them.
                    let positions: Vec<u32> = (0..n).map(|i| ((i + at) % n) as u32).collect();
                    let mut want = ScoreTable::plugin_by_plugin();
                    let want_st = run_scoring_at(&profile.clone(), &mut CycleState::new(), &pod, &snapshot, &positions, &mut want);
                    let got_st = super::pool_scoring::score_chunked(&profile, &pod, &snapshot, &positions, pool, &mut got);
                    prop_assert_eq!(&got_st, &want_st);
                    prop_assert_eq!(got.plugin_scores(), want.plugin_scores(), "cycle {}", s);
                    prop_assert_eq!(got.totals(), want.totals(), "cycle {}", s);
                    prop_assert_eq!(profile.score_memo.mismatches(&snapshot), Vec::<String>::new());
                    let target = snapshot.node_at(at % n).map(|i| i.name()).unwrap();
                    match change {
                        0..=5 => cache.add_pod(&pod.with_node(target)).unwrap(),
                        6 if n > 1 => cache.remove_node(target).unwrap(),
                        7 => {
                            cache.add_node(node(added, 1000 + at as i64 % 4000, 1024)).unwrap();
                            added += 1;
                        }
                        8 => {
                            let i: usize = target.as_str()[1..].parse().unwrap();
                            cache.update_node(node(i, 500 + at as i64 % 4500, 2048)).unwrap();
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    mod columns {
        use std::time::Duration;

        use proptest::prelude::*;

        use super::super::*;
        use crate::api::{Node, ResourceName::*, Taint, TaintEffect, Toleration, TolerationOp};
        use crate::cache::Cache;
        use crate::framework::{Profile, RowJudged};
        use crate::util::rng::Rng;

        /// (cpu, memory MiB, max pods, unschedulable, taint effect: 0 none / 1 NoSchedule /
        /// 2 PreferNoSchedule, pods already there (cpu, memory MiB, ephemeral GiB)).
        type NodeSpec = (i64, i64, i64, bool, u8, Vec<(i64, i64, i64)>);
        /// (cpu, memory MiB, ephemeral GiB, scalar gpu, tolerates the taints, image).
        type PodSpec = (i64, i64, i64, i64, bool, bool);

        fn node_spec() -> impl Strategy<Value = NodeSpec> {
            (
                0i64..5000,
                0i64..4096,
                0i64..5,
                any::<bool>(),
                0u8..3,
                prop::collection::vec((0i64..1500, 0i64..1500, 0i64..3), 0..4),
            )
        }

        fn pod_spec() -> impl Strategy<Value = PodSpec> {
            (0i64..2000, 0i64..2000, 0i64..3, prop_oneof![4 => Just(0i64), 1 => 1i64..3], any::<bool>(), any::<bool>())
        }

        fn pod(name: &str, (cpu, mem, eph, gpu, tolerates, image): PodSpec) -> Pod {
            let gpu_name = crate::api::ResourceName::Scalar(Sym::new("example.com/gpu"));
            let mut req = vec![(Cpu, cpu), (Memory, mem << 20), (EphemeralStorage, eph << 30)];
            if gpu > 0 {
                req.push((gpu_name, gpu));
            }
            let mut b = Pod::builder(name).container(if image { "img:1" } else { "other:1" }, &req);
            if tolerates {
                b = b.toleration(Toleration::new("k", TolerationOp::Exists, "", None));
            }
            b.build()
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
            /// The hot-column paths give exactly the NodeInfo paths' answers: every node's
            /// filter verdict (code, reasons, plugin), and every plugin's score and the totals
            /// over the feasible nodes.
            #[test]
            fn hot_columns_give_the_node_info_verdicts_and_scores(
                nodes in prop::collection::vec(node_spec(), 1..12),
                incoming in pod_spec(),
                names_node in prop::option::weighted(0.2, 0usize..12),
                split in 0usize..12,
            ) {
                let cache = Cache::new(Duration::from_secs(30));
                let gpu = crate::api::ResourceName::Scalar(Sym::new("example.com/gpu"));
                for (i, (cpu, mem, max_pods, unsched, taint, pods)) in nodes.iter().enumerate() {
                    let name = format!("n{i}");
                    let mut b = Node::builder(&name).resources(*cpu, mem << 20, *max_pods).capacity(gpu, 2).unschedulable(*unsched);
                    if *taint > 0 {
                        let effect = if *taint == 1 { TaintEffect::NoSchedule } else { TaintEffect::PreferNoSchedule };
                        b = b.taint(Taint::new("k", "v", effect));
                    }
                    if i % 3 == 0 {
                        b = b.image(&["img:1"], 300 << 20);
                    }
                    cache.add_node(b.build()).unwrap();
                    for (j, &(c, m, e)) in pods.iter().enumerate() {
                        let p = pod(&format!("b{i}-{j}"), (c, m, e, 0, false, false));
                        cache.add_pod(&p.with_node(Sym::new(&name))).unwrap();
                    }
                }
                let snapshot = cache.update_snapshot();
                let profile = Profile::default_profile();
                let mut incoming = pod("incoming", incoming);
                incoming.node_name = names_node.map(|i| Sym::new(&format!("n{i}")));
                let mut state = CycleState::new();
                prop_assume!(run_pre_filter(&profile, &mut state, &incoming, &snapshot).is_ok());
                let filters = active_filters(&profile, &state);
                let mut feasible = Vec::new();
                let mut wants = Vec::new();
                for pos in 0..snapshot.num_nodes() {
                    let info = snapshot.node_at(pos).unwrap();
                    let want = run_filters(&filters, &state, &incoming, info);
                    let got = run_filters_hot(&filters, &state, &incoming, info, snapshot.columns().at(pos));
                    prop_assert_eq!(&got.into_status(), &want, "node {}", info.name());
                    if want.is_success() {
                        feasible.push(pos as u32);
                    }
                    wants.push(want);
                }
                // Judged a block at a time, a filter at a time (`filter_rows`, the filter
                // pass's way, which runs it when every filter `judges_rows`; its verdicts
                // hold whether or not they do), in two blocks, the second starting inside
                // the chunk (as the search's from its rotating start): the same verdicts,
                // rows left to the node check aside.
                let mut judged = vec![RowJudged::Pass; snapshot.num_nodes()];
                let split = split.min(judged.len());
                for f in filters.iter() {
                    let (first, second) = judged.split_at_mut(split);
                    f.filter_rows(&state, &incoming, &snapshot, 0, first);
                    f.filter_rows(&state, &incoming, &snapshot, split, second);
                }
                for (pos, (j, want)) in judged.iter().zip(&wants).enumerate() {
                    let got = match *j {
                        RowJudged::Pass => Status::success(),
                        RowJudged::Fail(plugin, fail) => Verdict::Brief(plugin, fail).into_status(),
                        RowJudged::Node => continue,
                    };
                    prop_assert_eq!(&got, want, "node n{} judged by rows", pos);
                }
                // A filter that passes the chunk from its floors (every node here sits in
                // chunk 0) leaves each of its rows passed.
                let floors = snapshot.columns().floors(0);
                for f in filters.iter() {
                    if f.passes_chunk(&state, &incoming, floors) {
                        let mut alone = vec![RowJudged::Pass; snapshot.num_nodes()];
                        f.filter_rows(&state, &incoming, &snapshot, 0, &mut alone);
                        prop_assert!(alone.iter().all(|j| matches!(j, RowJudged::Pass)), "{} passed whole", f.name());
                    }
                }
                let infos: Vec<&NodeInfo> = feasible.iter().map(|&p| &**snapshot.node_at(p as usize).unwrap()).collect();
                let (mut want, mut got) = (ScoreTable::default(), ScoreTable::default());
                let want_st = run_scoring(&profile, &mut state.clone(), &incoming, &snapshot, &infos, &mut want);
                // On a pool too, in chunks of 2 nodes.
                static POOL: std::sync::OnceLock<crate::parallel::WorkerPool> = std::sync::OnceLock::new();
                let pool = POOL.get_or_init(|| crate::parallel::WorkerPool::new(3));
                let mut pooled = ScoreTable::scoring_on_pool_from(0, 2);
                let on_pool = Feasible::at(&snapshot, &feasible);
                let pooled_st = run_scoring_observed(
                    &profile, &mut state.clone(), &incoming, &snapshot, &on_pool, Some(pool), &mut pooled, &mut NoObserver,
                );
                let got_st = run_scoring_at(&profile, &mut state, &incoming, &snapshot, &feasible, &mut got);
                prop_assert_eq!(&got_st, &want_st);
                prop_assert_eq!(&got.plugins, &want.plugins);
                prop_assert_eq!(got.plugin_scores(), want.plugin_scores());
                prop_assert_eq!(got.totals(), want.totals());
                prop_assert_eq!(&pooled_st, &want_st);
                prop_assert_eq!(&pooled.plugins, &want.plugins);
                prop_assert_eq!(pooled.plugin_scores(), want.plugin_scores());
                prop_assert_eq!(pooled.totals(), want.totals());
                // The same draw picks the same node, whether from the chunks' best totals
                // or from the totals.
                if want_st.is_ok() && !feasible.is_empty() {
                    for seed in 0..4 {
                        let (mut a, mut b) = (Rng::seed(seed), Rng::seed(seed));
                        prop_assert_eq!(pooled.select_host(&mut a), crate::scheduler::select_host(want.totals(), &mut b));
                        prop_assert_eq!(a.next_u64(), b.next_u64());
                    }
                }
                // The nodes are looked up only to score a pod whose image some node has
                // (ImageLocality), or nodes with taints (TaintToleration).
                let has_image = incoming.images().iter().any(|&i| snapshot.image(i).is_some());
                let tainted = feasible.iter().any(|&p| snapshot.columns().at(p as usize).has_taints());
                prop_assert_eq!(on_pool.looked_up(), (has_image || tainted) && !feasible.is_empty());
            }
        }
    }

    mod overlay {
        use std::time::Duration;

        use proptest::prelude::*;

        use super::super::*;
        use crate::api::{Node, ResourceName::*};
        use crate::cache::Cache;
        use crate::framework::Profile;

        /// (cpu, memory MiB, host port or 0) of a pod.
        type Spec = (i64, i64, i32);

        fn pod(name: &str, (cpu, mem, port): Spec, priority: i32) -> Pod {
            let b = Pod::builder(name).container("i", &[(Cpu, cpu), (Memory, mem << 20)]).priority(priority);
            if port > 0 { b.host_port(port) } else { b }.build()
        }

        fn spec() -> impl Strategy<Value = Spec> {
            (0i64..2500, 0i64..3000, prop_oneof![Just(0), Just(80), Just(81)])
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
            /// Nominated pods counted in a copy of the aggregates give every node the verdict
            /// (code, reasons, plugin) that placing them on a full copy of the node gives, and
            /// the dry run's own node comes back from `_mut` as it went in.
            #[test]
            fn aggregates_only_overlay_gives_the_full_copy_verdicts(
                nodes in prop::collection::vec(
                    (prop::collection::vec(spec(), 0..4), prop::collection::vec(spec(), 0..3), 2i64..6),
                    1..6,
                ),
                incoming in spec(),
            ) {
                let cache = Cache::new(Duration::from_secs(30));
                let nominator = crate::queue::Nominator::new();
                for (i, (bound, nominated, max_pods)) in nodes.iter().enumerate() {
                    let name = format!("n{i}");
                    cache.add_node(Node::builder(&name).resources(4000, 4 << 30, *max_pods).build()).unwrap();
                    for (j, s) in bound.iter().enumerate() {
                        cache.add_pod(&pod(&format!("b{i}-{j}"), *s, 0).with_node(Sym::new(&name))).unwrap();
                    }
                    for (j, s) in nominated.iter().enumerate() {
                        nominator.add(&pod(&format!("m{i}-{j}"), *s, 5), Some(Sym::new(&name)));
                    }
                }
                let snapshot = cache.update_snapshot();
                let profile = Profile::default_profile();
                let incoming = pod("incoming", incoming, 5);
                let mut state = CycleState::new();
                prop_assume!(run_pre_filter(&profile, &mut state, &incoming, &snapshot).is_ok());
                let filters = active_filters(&profile, &state);
                let fast = Overlay::new(&profile, &state, &filters);
                prop_assert!(fast.aggregates_only, "plain pods must take the aggregates-only path");
                let full = Overlay { extensions: fast.extensions.clone(), aggregates_only: false };
                let nominated = NominatedPods::for_pod(Some(&nominator), &incoming);
                for info in snapshot.iter() {
                    let want = run_filters_with_nominated(&full, &filters, &state, &incoming, info, &nominated, &snapshot);
                    let got = run_filters_with_nominated(&fast, &filters, &state, &incoming, info, &nominated, &snapshot);
                    prop_assert_eq!(&got, &want, "node {}", info.name());
                    let mut own = (**info).clone();
                    let got_mut =
                        run_filters_with_nominated_mut(&fast, &filters, &state, &incoming, &mut own, &nominated, &snapshot);
                    prop_assert_eq!(&got_mut, &want, "node {} (_mut)", info.name());
                    prop_assert!(own.aggregates_match(info) && own.pods().len() == info.pods().len());
                }
            }
        }
    }
}
