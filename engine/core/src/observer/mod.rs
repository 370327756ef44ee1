//! The cycle observer: how `ksched explain`, the golden replay and tests see a scheduling
//! cycle without a second implementation of it.
//!
//! `Scheduler` runs each cycle with a [`CycleObserver`] when one is installed
//! (`Scheduler::set_observer`) or asked for (`Scheduler::observe_cycle`, a cycle as an
//! observation only: no assume, bind, eviction, nomination or requeue). The cycle calls the
//! observer at its phase boundaries — each PreFilter plugin's status, the filter pass (as a
//! [`FilterView`] that can also filter nodes the search did not visit, with the cycle's own
//! per-node function), each score plugin's raw and normalized scores and the weighted table,
//! the selection, the PostFilter outcome — and the observer keeps what it wants.
//!
//! **No cost when absent.** The cycle's functions are generic over the observer; without one
//! they run with [`NoObserver`], whose `observes()` is a constant `false`, so every hook call
//! (and the arguments built for it) compiles away. With one, `observes()` is asked once per
//! phase. Nothing is checked per node or per plugin on the unobserved path.
//!
//! Every method has a default that does nothing, so an observer implements only what it
//! reads, and new hooks (say, per extender verb) can be added without touching the others.
//! [`CycleRecorder`] records whole cycles as plain data: the observer explain, golden and the
//! tests use.

mod recorder;

use std::any::Any;

pub use recorder::{CycleRecord, CycleRecorder, NodeRecord, PostFilterRecord, ScoreDetail, SelectionRecord};

use crate::api::{Pod, Sym};
use crate::framework::extender::ExtenderRow;
use crate::framework::preemption::PreemptionTrace;
use crate::framework::runtime::{run_filters_with_nominated, NodeStatuses, NominatedPods, Overlay, ScoreTable};
use crate::framework::{CycleState, FilterPlugin, PostFilterResult, Profile, Status};
use crate::scheduler::{CycleOutcome, ScheduleDecision, ScheduleError};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

/// Receives a scheduling cycle phase by phase. Every method defaults to doing nothing.
///
/// Order within one cycle: `cycle_started`; `pre_filter` per plugin (the cycle stops at the
/// first rejection: `pre_filter_rejected`); `nominated_node` when the pod tries its
/// nominated node first; `filtered`; when two or more nodes are feasible, `raw_scores` and
/// `normalized_scores` per score plugin and `scored`; `selected`; when no node fits,
/// `post_filter`; `scheduling_result`; and, for a real cycle (not `observe_cycle`),
/// `cycle_finished` after the binding or the failure handling.
pub trait CycleObserver: Any + Send {
    /// A cycle starts for `pod`; `false` leaves this cycle unobserved (no other method is
    /// called for it, and the cycle runs exactly as without an observer).
    fn cycle_started(&mut self, _pod: &Pod) -> bool {
        true
    }

    /// One PreFilter plugin's status (Skip included), in profile order.
    fn pre_filter(&mut self, _plugin: &'static str, _status: &Status) {}

    /// PreFilter rejected the pod on every node: a plugin's rejection (or error), or
    /// narrowing that left no node.
    fn pre_filter_rejected(&mut self, _status: &Status) {}

    /// The pod tried its nominated node first, with this verdict.
    fn nominated_node(&mut self, _node: Sym, _status: &Status) {}

    /// The pod tried its OpportunisticBatching hint first (the next node of the previous
    /// pod's ranking, `framework::batch`), with this verdict.
    fn batch_hint(&mut self, _node: Sym, _status: &Status) {}

    /// The filter pass is done.
    fn filtered(&mut self, _filter: &FilterView<'_>) {}

    /// A score plugin's scores over the scored nodes (`scored`'s order), before
    /// NormalizeScore.
    fn raw_scores(&mut self, _plugin: &'static str, _raw: &[i64]) {}

    /// The same plugin's scores after NormalizeScore, before its `weight` is applied.
    fn normalized_scores(&mut self, _plugin: &'static str, _weight: i64, _normalized: &[i64]) {}

    /// Scoring is done: `table` holds each plugin's weighted scores and the totals over
    /// `nodes`.
    fn scored(&mut self, _nodes: &[&NodeInfo], _table: &ScoreTable) {}

    /// The cycle chose a node.
    fn selected(&mut self, _selection: &Selection<'_>) {}

    /// Whether PostFilter should trace DefaultPreemption's dry run for `post_filter`.
    fn wants_preemption_trace(&self) -> bool {
        false
    }

    /// No node fit and the PostFilter plugins ran.
    fn post_filter(&mut self, _outcome: &PostFilterView<'_>) {}

    /// The scheduling algorithm's result (PostFilter's message joined into a FitError).
    fn scheduling_result(&mut self, _result: Result<&ScheduleDecision, &ScheduleError>) {}

    /// The extenders' calls of a real cycle, one row per call (profiles with extenders only).
    fn extender_calls(&mut self, _rows: &[ExtenderRow]) {}

    /// A real cycle finished, binding or failure handling included.
    fn cycle_finished(&mut self, _outcome: &CycleOutcome) {}

    /// Whether the hooks are called at all: `false` only for [`NoObserver`], which makes the
    /// unobserved cycle free of them.
    #[doc(hidden)]
    fn observes(&self) -> bool {
        true
    }
}

/// The absent observer: the cycle's functions instantiated with it carry no hook.
pub struct NoObserver;

impl CycleObserver for NoObserver {
    fn cycle_started(&mut self, _pod: &Pod) -> bool {
        false
    }

    #[inline(always)]
    fn observes(&self) -> bool {
        false
    }
}

/// The filter pass as the cycle left it, with the cycle's own filter function to ask about
/// nodes it did not visit.
pub struct FilterView<'a> {
    pub(crate) profile: &'a Profile,
    pub(crate) state: &'a CycleState,
    pub(crate) pod: &'a Pod,
    pub(crate) snapshot: &'a Snapshot,
    pub(crate) nominated: &'a NominatedPods,
    pub(crate) overlay: &'a Overlay<'a>,
    /// The search's own per-node function (position in the snapshot, node).
    pub(crate) check: &'a dyn Fn(usize, &NodeInfo) -> Status,
    /// Snapshot positions of the feasible nodes found, in visiting order.
    pub feasible: &'a [u32],
    /// The visited nodes that were rejected; `absent` is the verdict of the nodes PreFilter's
    /// narrowing left out.
    pub statuses: &'a NodeStatuses,
    /// Nodes visited.
    pub processed: usize,
}

impl<'a> FilterView<'a> {
    pub fn snapshot(&self) -> &'a Snapshot {
        self.snapshot
    }

    /// The nodes PreFilter narrowed the cycle to, if it did.
    pub fn narrowed_to(&self) -> Option<&'a [Sym]> {
        self.state.node_names()
    }

    /// The cycle state after PreFilter.
    pub fn state(&self) -> &'a CycleState {
        self.state
    }

    /// The cycle's verdict on `node`: the same function the search ran on the nodes it
    /// visited (the filter chain, both passes when pods are nominated).
    pub fn run_filters(&self, node: &NodeInfo) -> Status {
        match self.snapshot.position(node.name()) {
            Some(pos) => (self.check)(pos, node),
            None => Status::error(format!("node {} is not in the cycle's snapshot", node.name())),
        }
    }

    /// The profile's `index`-th Filter plugin run alone on `node` (with the nominated pods, as
    /// the chain runs it); `None` when PreFilter returned Skip for it.
    pub fn run_filter_plugin(&self, index: usize, node: &NodeInfo) -> Option<Status> {
        let plugin: &dyn FilterPlugin = &**self.profile.filter.get(index)?;
        if self.state.skips_filter(plugin.name()) {
            return None;
        }
        Some(run_filters_with_nominated(
            self.overlay,
            &[plugin],
            self.state,
            self.pod,
            node,
            self.nominated,
            self.snapshot,
        ))
    }

    /// The names of the profile's Filter plugins, in order (`run_filter_plugin`'s indices).
    pub fn filter_plugins(&self) -> impl Iterator<Item = &'static str> + 'a {
        self.profile.filter.iter().map(|f| f.name())
    }
}

/// How the cycle chose its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectedBy {
    /// The pod's nominated node passed the filters: taken unscored.
    NominatedNode,
    /// One node was feasible: taken unscored.
    OnlyFeasibleNode,
    /// OpportunisticBatching: the next node of the previous pod's ranking passed the
    /// filters: taken unscored, without a filter pass over the other nodes.
    BatchHint,
    /// The highest total among the scored nodes (ties broken by the profile's `TieBreak`).
    HighestTotal,
}

pub struct Selection<'a> {
    pub node: Sym,
    pub by: SelectedBy,
    /// The scored nodes and their totals (empty unless `HighestTotal`).
    pub nodes: &'a [&'a NodeInfo],
    pub totals: &'a [i64],
}

impl Selection<'_> {
    /// The scored nodes tied at the highest total (the pick is one of them).
    pub fn tied(&self) -> Vec<Sym> {
        let Some(&max) = self.totals.iter().max() else { return vec![self.node] };
        self.nodes.iter().zip(self.totals).filter(|(_, &t)| t == max).map(|(n, _)| n.name()).collect()
    }
}

/// What the PostFilter plugins did for a pod no node fit.
pub struct PostFilterView<'a> {
    /// The statuses PostFilter read: every visited node's verdict.
    pub statuses: &'a NodeStatuses,
    pub result: Option<&'a PostFilterResult>,
    /// Every PostFilter plugin's message joined (upstream's), if any.
    pub message: Option<&'a str>,
    /// DefaultPreemption's dry run, when `wants_preemption_trace` asked for it.
    pub trace: Option<&'a PreemptionTrace>,
}
