//! PreFilter / Filter: matching-pod counts per domain of each DoNotSchedule constraint,
//! computed once per cycle, then a skew check per node; plus the PreFilter extensions
//! (`add_pod` / `remove_pod`) that adjust the counts for nominated pods and preemption.

use super::{node_has_all_keys, Constraint, Inclusion, PodTopologySpread, NAME};
use super::{REASON_CONSTRAINTS_NOT_MATCH, REASON_NODE_LABEL_NOT_MATCH};
use std::sync::Arc;

use crate::api::{Labels, NodeAffinity, Pod, Sym, Toleration, WhenUnsatisfiable, LABEL_HOSTNAME};
use crate::framework::label_columns::{self, KeyColumns};
use crate::framework::memo::KindMemo;
use crate::framework::{Code, CycleState, FilterPlugin, PreFilterPlugin, RowFail, RowJudged, Status};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::util::hash::FxHashMap;
use smallvec::SmallVec;

/// The two domains with the fewest matching pods: `paths[0]` always holds the minimum;
/// `paths[1]` is at least as large (but after `add_pod` / `remove_pod` not necessarily the
/// second smallest, as upstream accepts: preemption only ever changes one node at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CriticalPaths([(Sym, i64); 2]);

impl CriticalPaths {
    pub(super) fn new() -> Self {
        CriticalPaths([(Sym::EMPTY, i32::MAX as i64); 2])
    }

    /// Records that domain `value` now holds `num` matching pods.
    pub(super) fn update(&mut self, value: Sym, num: i64) {
        let p = &mut self.0;
        let known = if value == p[0].0 {
            Some(0)
        } else if value == p[1].0 {
            Some(1)
        } else {
            None
        };
        match known {
            Some(i) => {
                p[i].1 = num;
                if p[0].1 > p[1].1 {
                    p.swap(0, 1);
                }
            }
            None if num < p[0].1 => {
                p[1] = p[0];
                p[0] = (value, num);
            }
            None if num < p[1].1 => p[1] = (value, num),
            None => {}
        }
    }

    pub(super) fn min(&self) -> i64 {
        self.0[0].1
    }
}

/// One DoNotSchedule constraint's counts for this cycle.
#[derive(Clone, Debug)]
pub(super) struct FilterConstraint {
    pub(super) constraint: Constraint,
    /// Whether the incoming pod matches the selector itself (adds 1 to a domain's count).
    self_match: bool,
    /// Topology value → matching pods, over the eligible domains only (shared with the memo
    /// until an extension changes it).
    pub(super) counts: Arc<FxHashMap<Sym, i64>>,
    pub(super) paths: CriticalPaths,
}

impl FilterConstraint {
    /// The global minimum the skew is measured against: 0 while fewer than `minDomains`
    /// domains are eligible.
    #[inline]
    pub(super) fn min_match(&self) -> i64 {
        if (self.counts.len() as i64) < self.constraint.min_domains as i64 {
            0
        } else {
            self.paths.min()
        }
    }
}

/// What PreFilter computed for Filter (private to the plugin).
#[derive(Clone, Debug)]
pub(super) struct PreFilterState {
    pub(super) constraints: Vec<FilterConstraint>,
    /// The label columns of the constraints' keys (none built: the filter reads each node's
    /// labels).
    pub(super) columns: KeyColumns,
}

/// What the DoNotSchedule counts of a pod depend on besides the cluster: its "kind" for
/// `KindMemo` (the pods of a workload share it).
#[derive(Debug)]
pub(super) struct FilterKey {
    namespace: Sym,
    constraints: Vec<Constraint>,
    node_selector: Labels,
    node_affinity: Option<NodeAffinity>,
    tolerations: Vec<Toleration>,
}

/// The counts per constraint, and per constraint the eligible nodes per domain (so a domain
/// leaves `counts` with its last node).
#[derive(Clone, Debug)]
pub(super) struct FilterCounts {
    counts: Vec<Arc<FxHashMap<Sym, i64>>>,
    domain_nodes: Vec<FxHashMap<Sym, u32>>,
}

fn node_affinity_of(pod: &Pod) -> Option<&NodeAffinity> {
    pod.affinity.as_ref().and_then(|a| a.node_affinity.as_ref())
}

impl FilterKey {
    fn matches(&self, pod: &Pod, constraints: &[Constraint]) -> bool {
        self.namespace == pod.namespace
            && self.constraints == constraints
            && self.node_selector == pod.node_selector
            && self.node_affinity.as_ref() == node_affinity_of(pod)
            && self.tolerations == pod.tolerations
    }
}

/// Adds (`by` = 1) or removes (-1) one node's contribution to the counts.
fn contribute(
    constraints: &[Constraint],
    pod: &Pod,
    info: &NodeInfo,
    counts: &mut [Arc<FxHashMap<Sym, i64>>],
    domain_nodes: &mut [FxHashMap<Sym, u32>],
    by: i64,
) {
    let labels = &info.node().labels;
    if !node_has_all_keys(labels, constraints) {
        return;
    }
    let mut inclusion = Inclusion::new(pod, info);
    for (i, c) in constraints.iter().enumerate() {
        if !inclusion.includes(c) {
            continue;
        }
        let value = labels.get(c.topology_key).unwrap_or(Sym::EMPTY);
        let n = c.count_pods(info.pods(), pod.namespace);
        let counts = Arc::make_mut(&mut counts[i]);
        *counts.entry(value).or_insert(0) += by * n;
        let nodes = domain_nodes[i].entry(value).or_insert(0);
        *nodes = nodes.saturating_add_signed(by as i32);
        if *nodes == 0 {
            domain_nodes[i].remove(&value);
            counts.remove(&value);
        }
    }
}

/// The matching pods per domain of each constraint, over every node of `snapshot` that has
/// all the constraints' keys and that each constraint's inclusion policies admit: from
/// `memo` when an earlier pod of the same kind left them (updated for the nodes changed
/// since), else counted from scratch. PreFilter's counts for DoNotSchedule constraints, and
/// PreScore's for ScheduleAnyway ones when keys are required.
pub(super) fn domain_counts(
    memo: &KindMemo<FilterKey, FilterCounts>,
    pod: &Pod,
    snapshot: &Snapshot,
    constraints: &[Constraint],
) -> Arc<FilterCounts> {
    memo.get(
        snapshot,
        |k| k.matches(pod, constraints),
        || FilterKey {
            namespace: pod.namespace,
            constraints: constraints.to_vec(),
            node_selector: pod.node_selector.clone(),
            node_affinity: node_affinity_of(pod).cloned(),
            tolerations: pod.tolerations.clone(),
        },
        |m, old, new| {
            contribute(constraints, pod, old, &mut m.counts, &mut m.domain_nodes, -1);
            contribute(constraints, pod, new, &mut m.counts, &mut m.domain_nodes, 1);
        },
        || {
            let hostname = Sym::new(LABEL_HOSTNAME);
            let capacity = |c: &Constraint| if c.topology_key == hostname { snapshot.num_nodes() } else { 0 };
            let mut m = FilterCounts {
                counts: constraints
                    .iter()
                    .map(|c| Arc::new(FxHashMap::with_capacity_and_hasher(capacity(c), Default::default())))
                    .collect(),
                domain_nodes: constraints
                    .iter()
                    .map(|c| FxHashMap::with_capacity_and_hasher(capacity(c), Default::default()))
                    .collect(),
            };
            snapshot.for_each_in(0, snapshot.num_nodes(), |_, info| {
                contribute(constraints, pod, info, &mut m.counts, &mut m.domain_nodes, 1)
            });
            m
        },
    )
}

impl FilterCounts {
    /// Constraint `i`'s matching pods in domain `value` (0 when no eligible node has it).
    #[inline]
    pub(super) fn of(&self, i: usize, value: Sym) -> i64 {
        self.counts[i].get(&value).copied().unwrap_or(0)
    }
}

impl PodTopologySpread {
    /// The PreFilter state for `pod` over every node of `snapshot`: from the memo when an
    /// earlier pod of the same kind left counts (updated for the nodes changed since), else
    /// counted from scratch.
    pub(super) fn pre_filter_state(&self, pod: &Pod, snapshot: &Snapshot) -> PreFilterState {
        let constraints = self.constraints(pod, snapshot, WhenUnsatisfiable::DoNotSchedule);
        if constraints.is_empty() {
            return PreFilterState { constraints: Vec::new(), columns: KeyColumns::default() };
        }
        let memo = domain_counts(&self.filter_memo, pod, snapshot, &constraints);
        let out = constraints
            .iter()
            .zip(&memo.counts)
            .map(|(c, counts)| {
                let mut paths = CriticalPaths::new();
                for (&value, &n) in counts.iter() {
                    paths.update(value, n);
                }
                FilterConstraint {
                    constraint: c.clone(),
                    self_match: c.selects(&pod.labels),
                    counts: Arc::clone(counts),
                    paths,
                }
            })
            .collect();
        let keys: Vec<Sym> = constraints.iter().map(|c| c.topology_key).collect();
        PreFilterState { constraints: out, columns: self.label_columns.of(&keys, snapshot) }
    }

    /// PreFilter extension: `added` now counts as placed on `node` (a nominated pod, or a
    /// victim put back during preemption).
    pub fn add_pod(&self, state: &mut CycleState, pod: &Pod, added: &Pod, node: &NodeInfo) -> Status {
        update_with_pod(state, pod, added, node, 1)
    }

    /// PreFilter extension: `removed` no longer counts on `node` (a preemption victim).
    pub fn remove_pod(&self, state: &mut CycleState, pod: &Pod, removed: &Pod, node: &NodeInfo) -> Status {
        update_with_pod(state, pod, removed, node, -1)
    }
}

fn update_with_pod(state: &mut CycleState, pod: &Pod, other: &Pod, node: &NodeInfo, delta: i64) -> Status {
    let Some(s) = state.read_slot_mut::<PreFilterState>() else {
        return Status::error(format!("{NAME}: no PreFilter state"));
    };
    if other.namespace != pod.namespace || s.constraints.is_empty() {
        return Status::success();
    }
    let labels = &node.node().labels;
    if !s.constraints.iter().all(|fc| labels.contains_key(fc.constraint.topology_key)) {
        return Status::success();
    }
    let mut inclusion = Inclusion::new(pod, node);
    for fc in s.constraints.iter_mut() {
        if !fc.constraint.selects(&other.labels) || !inclusion.includes(&fc.constraint) {
            continue;
        }
        let value = labels.get(fc.constraint.topology_key).unwrap_or(Sym::EMPTY);
        let n = Arc::make_mut(&mut fc.counts).entry(value).or_insert(0);
        *n += delta;
        let n = *n;
        fc.paths.update(value, n);
    }
    Status::success()
}

impl PreFilterPlugin for PodTopologySpread {
    fn has_extensions(&self) -> bool {
        true
    }

    fn add_pod(&self, state: &mut CycleState, pod: &Pod, other: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Status {
        update_with_pod(state, pod, other, node, 1)
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &Pod,
        other: &Pod,
        node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        update_with_pod(state, pod, other, node, -1)
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        let s = self.pre_filter_state(pod, snapshot);
        if s.constraints.is_empty() {
            return Status::skip();
        }
        state.write_slot(s);
        Status::success()
    }
}

/// Why a node fails the filter, in brief (`None`: it passes); `label` gives the node's value
/// of a key.
#[inline]
fn failure(s: &PreFilterState, label: impl Fn(Sym) -> Option<Sym>) -> Option<RowFail> {
    for fc in &s.constraints {
        let c = &fc.constraint;
        let Some(value) = label(c.topology_key) else {
            return Some(FAILS_LABEL);
        };
        let matched = fc.counts.get(&value).copied().unwrap_or(0);
        let skew = matched + fc.self_match as i64 - fc.min_match();
        if skew > c.max_skew as i64 {
            return Some(FAILS_SKEW);
        }
    }
    None
}

const FAILS_LABEL: RowFail = RowFail {
    code: Code::UnschedulableAndUnresolvable,
    what: 0,
    make: |_| Status::unresolvable(REASON_NODE_LABEL_NOT_MATCH),
};
const FAILS_SKEW: RowFail =
    RowFail { code: Code::Unschedulable, what: 1, make: |_| Status::unschedulable(REASON_CONSTRAINTS_NOT_MATCH) };

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo) -> Status {
        let Some(s) = state.read_slot::<PreFilterState>() else {
            return Status::error(format!("{NAME}: no PreFilter state"));
        };
        let labels = &node.node().labels;
        failure(s, |k| labels.get(k)).map_or_else(Status::success, |f| (f.make)(f.what))
    }

    /// The verdict is one of two texts, from the node's values of the constraints' keys: a
    /// block of rows reads them from the label columns PreFilter took (the node's labels
    /// otherwise).
    fn judges_rows(&self, _state: &CycleState, _pod: &Pod) -> bool {
        true
    }

    fn filter_rows(&self, state: &CycleState, _pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        let s = state.read_slot::<PreFilterState>();
        let keys: SmallVec<[Sym; 4]> =
            s.map(|s| s.constraints.iter().map(|fc| fc.constraint.topology_key).collect()).unwrap_or_default();
        let at = |pos: usize| s.and_then(|s| failure(s, |k| s.columns.column(k).and_then(|c| c[pos])));
        let on = |labels: &Labels| s.and_then(|s| failure(s, |k| labels.get(k)));
        label_columns::judge_rows(NAME, snapshot, lo, judged, s.map(|s| &s.columns), keys, at, on);
    }
}

crate::state_slot!(PreFilterState);
