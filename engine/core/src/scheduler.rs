//! `schedule_one`: one scheduling cycle, and the binding that follows it.
//!
//! pop → snapshot → PreFilter → Filter (sampled, parallel) → [PostFilter] → PreScore/Score →
//! select_host → assume → Reserve → Bind (→ the cluster confirms into the cache).

use std::sync::Arc;

use crate::api::{Node, Pod, Sym};
use crate::cache::{Cache, CacheError};
use crate::framework::feasible::{find_feasible_among, find_feasible_nodes, FilterOutput};
use crate::framework::runtime::{
    active_filters, narrowed_out_status, run_filters, run_filters_hot, run_filters_with_nominated,
    run_post_filter_plugins, run_pre_filter, run_scoring_at, FitError, NominatedPods, Overlay, ScoreTable,
};
use crate::framework::{Code, CycleState, Nominating, PostFilterContext, PostFilterResult, Profile, Status};
use crate::parallel::{effective_parallelism, WorkerPool};
use crate::queue::{QueueError, QueuedPodInfo, SchedulingQueue};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::util::rng::Rng;
use crate::util::time::{Clock, SystemClock};

pub use crate::cluster::{ApiError, BindError, ClusterApi};

/// What a cycle decided, before any side effect.
#[derive(Clone, Debug)]
pub struct ScheduleDecision {
    pub node: Sym,
    /// Nodes visited by the filter.
    pub evaluated: usize,
    pub feasible: usize,
}

#[derive(Clone, Debug)]
pub enum ScheduleError {
    /// No node fits (a FitError), or PreFilter rejected the pod.
    Unschedulable(FitError),
    /// "no nodes available to schedule pods"
    NoNodes,
    /// A plugin returned Error.
    Plugin(Status),
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScheduleError::Unschedulable(e) => e.fmt(f),
            ScheduleError::NoNodes => f.write_str("no nodes available to schedule pods"),
            ScheduleError::Plugin(s) => s.fmt(f),
        }
    }
}

/// The outcome of one `schedule_one`.
#[derive(Clone, Debug)]
pub enum CycleOutcome {
    Scheduled {
        pod: Pod,
        decision: ScheduleDecision,
    },
    Unschedulable {
        pod: Pod,
        error: ScheduleError,
        /// Set when PostFilter (preemption) nominated the pod to a node and evicted victims
        /// there; the pod is retried in a later cycle.
        preemption: Option<Preemption>,
    },
    /// Assume, reserve or bind failed; the pod went back to the queue.
    BindFailed {
        pod: Pod,
        error: String,
    },
}

/// What a preemption did for a pod that did not fit.
#[derive(Clone, Debug)]
pub struct Preemption {
    /// The node the pod is now nominated to.
    pub node: Sym,
    /// The pods deleted to make room, most important first.
    pub victims: Vec<Pod>,
}

/// Scratch reused across cycles so a steady-state cycle allocates O(1) times, not per node.
#[derive(Default)]
struct Scratch {
    filter: FilterOutput,
    scores: ScoreTable,
    /// Nominated pods the current pod must leave room for (filter and PostFilter).
    nominated: NominatedPods,
}

pub struct Scheduler {
    pub cache: Arc<Cache>,
    pub queue: Arc<dyn SchedulingQueue>,
    profile: Profile,
    api: Arc<dyn ClusterApi>,
    clock: Arc<dyn Clock>,
    rng: Rng,
    pool: Option<WorkerPool>,
    next_start_node_index: usize,
    scheduling_cycle: u64,
    scratch: Scratch,
}

impl Scheduler {
    pub fn new(
        cache: Arc<Cache>,
        queue: Arc<dyn SchedulingQueue>,
        profile: Profile,
        api: Arc<dyn ClusterApi>,
        seed: u64,
    ) -> Scheduler {
        // More workers than the machine runs at once only wait for each other.
        let workers = effective_parallelism(profile.parallelism);
        let pool = (workers > 1).then(|| WorkerPool::new(workers));
        Scheduler {
            cache,
            queue,
            profile,
            api,
            clock: Arc::new(SystemClock::new()),
            rng: Rng::seed(seed),
            pool,
            next_start_node_index: 0,
            scheduling_cycle: 0,
            scratch: Scratch::default(),
        }
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Scheduler {
        self.clock = clock;
        self
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Where the next cycle's filter starts.
    pub fn next_start_node_index(&self) -> usize {
        self.next_start_node_index
    }

    /// Pops one pod and runs its scheduling and binding cycle. `None` when activeQ is empty;
    /// never blocks.
    pub fn schedule_one(&mut self) -> Option<CycleOutcome> {
        let info = self.queue.try_pop()?;
        Some(self.run_cycle(info))
    }

    /// Like `schedule_one`, but waits for a pod; `Err(Closed)` once the queue is closed and
    /// drained.
    pub fn schedule_next(&mut self) -> Result<CycleOutcome, QueueError> {
        let info = self.queue.pop()?;
        Ok(self.run_cycle(info))
    }

    /// Runs the cycle of a pod the caller popped from this scheduler's queue (so it can look
    /// at the pod, and the state the cycle will see, first: `ksched explain`).
    pub fn schedule_popped(&mut self, info: QueuedPodInfo) -> CycleOutcome {
        self.run_cycle(info)
    }

    fn run_cycle(&mut self, info: QueuedPodInfo) -> CycleOutcome {
        self.scheduling_cycle = self.queue.scheduling_cycle();
        let snapshot = self.cache.update_snapshot();
        let pod = info.pod.clone();
        let mut state = CycleState::new();
        match self.schedule_pod_in(&mut state, &pod, &snapshot) {
            Ok(decision) => self.assume_and_bind(info, decision, state),
            Err(ScheduleError::Unschedulable(mut fit)) => {
                let result = self.run_post_filter(&state, &pod, &snapshot, &mut fit);
                let preemption = self.handle_failure(info, result);
                CycleOutcome::Unschedulable { pod, error: ScheduleError::Unschedulable(fit), preemption }
            }
            Err(error) => {
                self.requeue(info);
                CycleOutcome::Unschedulable { pod, error, preemption: None }
            }
        }
    }

    /// Runs the PostFilter plugins as upstream does: the first to succeed (or to say
    /// UnschedulableAndUnresolvable, or to fail) decides; otherwise the last nomination any of
    /// them asked for stands. Their message joins the FitError.
    fn run_post_filter(
        &mut self,
        state: &CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        fit: &mut FitError,
    ) -> Option<PostFilterResult> {
        if self.profile.post_filter.is_empty() {
            return None;
        }
        // The nominations gathered for this pod's filter pass.
        let nominated = &self.scratch.nominated;
        let mut ctx = PostFilterContext {
            profile: &self.profile,
            snapshot,
            statuses: &self.scratch.filter.statuses,
            nominator: self.queue.nominator().map(|n| n as &dyn crate::framework::PodNominator),
            nominated,
            pool: self.pool.as_ref(),
            rng: &mut self.rng,
            preemption_trace: None,
        };
        let (result, msg) = run_post_filter_plugins(&self.profile, &mut ctx, state, pod);
        fit.post_filter_msg = msg;
        result
    }

    /// After a failed attempt: carries out what PostFilter decided (upstream's
    /// PrepareCandidate and the nomination in handleSchedulingFailure) and returns the pod to
    /// the queue.
    fn handle_failure(&mut self, info: QueuedPodInfo, result: Option<PostFilterResult>) -> Option<Preemption> {
        let pod = info.pod.clone();
        let Some(result) = result else {
            self.requeue(info);
            return None;
        };
        match result.nominating {
            Nominating::Noop => {
                self.requeue(info);
                None
            }
            Nominating::Clear => {
                let requeued = self.requeue(info);
                if let Some(n) = self.queue.nominator() {
                    n.delete(&pod);
                }
                if requeued && pod.nominated_node_name.is_some() {
                    // Not critical: the pod is retried either way.
                    let _ = self.api.set_nominated_node(&pod, None);
                }
                None
            }
            Nominating::Set(node) => {
                for v in &result.victims {
                    if self.api.delete_victim(v).is_err() {
                        // Upstream gives up on this preemption; the pod is retried later.
                        self.requeue(info);
                        return None;
                    }
                }
                for p in &result.lower_priority_nominated {
                    if let Some(n) = self.queue.nominator() {
                        n.delete(p);
                    }
                    let _ = self.api.set_nominated_node(p, None);
                }
                if !self.requeue(info) {
                    // Deleted or bound meanwhile: a nomination would reserve room for a pod
                    // that will never use it.
                    return Some(Preemption { node, victims: result.victims });
                }
                if let Some(n) = self.queue.nominator() {
                    n.add(&pod, Some(node));
                }
                let _ = self.api.set_nominated_node(&pod, Some(node));
                Some(Preemption { node, victims: result.victims })
            }
        }
    }

    /// A node joined: into the cache, and every parked pod gets another try.
    pub fn add_node(&self, node: Node) -> Result<(), CacheError> {
        self.cache.add_node(node)?;
        self.queue.move_all_to_active();
        Ok(())
    }

    /// A node changed (labels, taints, allocatable): parked pods get another try.
    pub fn update_node(&self, node: Node) -> Result<(), CacheError> {
        self.cache.update_node(node)?;
        self.queue.move_all_to_active();
        Ok(())
    }

    /// Returns a pod whose attempt failed to the queue, tagged with the cycle it was popped in;
    /// false if it was not queued. A pod the cluster deleted or bound meanwhile stays out
    /// (upstream checks its pod lister the same way), so a failure never resurrects a pod.
    fn requeue(&self, info: QueuedPodInfo) -> bool {
        if !self.api.is_pending(&info.pod) {
            return false;
        }
        // AlreadyQueued: an informer update re-added a newer version meanwhile, which wins.
        // Closed: the scheduler is shutting down and the queue no longer takes pods.
        self.queue.add_unschedulable_if_not_present(info, self.scheduling_cycle).is_ok()
    }

    /// The scheduling algorithm on `snapshot`: filter, score, select. No side effects
    /// besides advancing the rotating start index and the tie-breaking RNG.
    pub fn schedule_pod(&mut self, pod: &Pod, snapshot: &Snapshot) -> Result<ScheduleDecision, ScheduleError> {
        self.schedule_pod_in(&mut CycleState::new(), pod, snapshot)
    }

    /// `schedule_pod` with the caller's cycle state (PostFilter reads it afterwards). On
    /// `Unschedulable`, `self.scratch.filter.statuses` holds every node's verdict.
    fn schedule_pod_in(
        &mut self,
        state: &mut CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
    ) -> Result<ScheduleDecision, ScheduleError> {
        let n = snapshot.num_nodes();
        if n == 0 {
            return Err(ScheduleError::NoNodes);
        }
        if let Err(st) = run_pre_filter(&self.profile, state, pod, snapshot) {
            if st.code == Code::Error {
                return Err(ScheduleError::Plugin(st));
            }
            let mut fe = FitError::from_statuses(n, &Default::default());
            fe.pre_filter_msg = Some(st.message());
            // Every node shares the PreFilter verdict (PostFilter reads it).
            self.scratch.filter.statuses.clear();
            self.scratch.filter.statuses.absent = Some(st);
            return Err(ScheduleError::Unschedulable(fe));
        }
        let filters = active_filters(&self.profile, state);
        let overlay = Overlay::new(&self.profile, state, &filters);
        let check_with = |nominated: &NominatedPods, node: &NodeInfo| {
            if nominated.is_empty() {
                run_filters(&filters, state, pod, node)
            } else {
                run_filters_with_nominated(&overlay, &filters, state, pod, node, nominated, snapshot)
            }
        };
        // A pod that preemption nominated to a node tries that node first; only that node's
        // nominations are needed for it.
        if let Some(info) = pod.nominated_node_name.and_then(|n| snapshot.get(n)) {
            self.scratch.nominated.gather_node(self.queue.nominator(), pod, info.name());
            let st = check_with(&self.scratch.nominated, info);
            if st.code == Code::Error {
                return Err(ScheduleError::Plugin(st));
            }
            if st.is_success() {
                return Ok(ScheduleDecision { node: info.name(), evaluated: 1, feasible: 1 });
            }
        }
        self.scratch.nominated.gather(self.queue.nominator(), pod);
        let nominated = &self.scratch.nominated;
        // Nodes without nominated pods are judged from the snapshot's hot columns where the
        // plugins can; the overlay copies are NodeInfos only.
        let columns = snapshot.columns();
        let check = |pos: usize, node: &NodeInfo| {
            if nominated.is_empty() || nominated.on(node.name()).is_empty() {
                run_filters_hot(&filters, state, pod, node, columns.at(pos))
            } else {
                run_filters_with_nominated(&overlay, &filters, state, pod, node, nominated, snapshot)
            }
        };
        let want_of = |k: usize| self.profile.nodes_to_find(k);
        let out = &mut self.scratch.filter;
        match state.node_names() {
            None => {
                find_feasible_nodes(self.pool.as_ref(), snapshot, self.next_start_node_index, want_of(n), &check, out)
            }
            Some(names) => {
                find_feasible_among(names, snapshot, self.next_start_node_index, &want_of, &check, out);
                out.statuses.absent = Some(narrowed_out_status(state));
            }
        }
        self.next_start_node_index = (self.next_start_node_index + out.processed) % n;
        if let Some((_, st)) = out.statuses.entries.iter().find(|(_, s)| s.code == Code::Error) {
            return Err(ScheduleError::Plugin(st.clone()));
        }
        let evaluated = out.processed;
        let feasible = out.feasible.len();
        if feasible == 0 {
            return Err(ScheduleError::Unschedulable(FitError::from_statuses(n, &out.statuses)));
        }
        let node_at = |pos: u32| snapshot.node_at(pos as usize).map(|i| &**i);
        if feasible == 1 {
            let node = node_at(out.feasible[0])
                .map(NodeInfo::name)
                .ok_or_else(|| ScheduleError::Plugin(Status::error("feasible node vanished")))?;
            return Ok(ScheduleDecision { node, evaluated, feasible });
        }
        let nodes: Vec<&NodeInfo> = out.feasible.iter().filter_map(|&p| node_at(p)).collect();
        run_scoring_at(&self.profile, state, pod, snapshot, &nodes, Some(&out.feasible), &mut self.scratch.scores)
            .map_err(ScheduleError::Plugin)?;
        let best = select_host(&self.scratch.scores.totals, &mut self.rng);
        Ok(ScheduleDecision { node: nodes[best].name(), evaluated, feasible })
    }

    /// Assume → Reserve → PreBind → Bind, with the cycle's state (Reserve and PreBind read
    /// what PreFilter and Filter left there).
    fn assume_and_bind(
        &mut self,
        info: QueuedPodInfo,
        decision: ScheduleDecision,
        mut state: CycleState,
    ) -> CycleOutcome {
        let pod = info.pod.clone();
        let assumed = pod.with_node(decision.node);
        if let Err(e) = self.cache.assume_pod(&assumed) {
            self.requeue(info);
            return CycleOutcome::BindFailed { pod, error: e.to_string() };
        }
        if let Some(n) = self.queue.nominator() {
            n.delete(&pod);
        }
        for (i, r) in self.profile.reserve.iter().enumerate() {
            let st = r.reserve(&mut state, &assumed, decision.node);
            if !st.is_success() {
                for done in self.profile.reserve[..=i].iter().rev() {
                    done.unreserve(&mut state, &assumed, decision.node);
                }
                return self.unwind_binding(info, &assumed, st.to_string());
            }
        }
        for p in &self.profile.pre_bind {
            let st = p.pre_bind(&mut state, &assumed, decision.node, &*self.api);
            if !st.is_success() {
                for r in self.profile.reserve.iter().rev() {
                    r.unreserve(&mut state, &assumed, decision.node);
                }
                return self.unwind_binding(info, &assumed, st.with_plugin(p.name()).to_string());
            }
        }
        match self.api.bind(&assumed, decision.node) {
            Ok(()) => {
                // Confirmation may already have turned the pod Added; finishing is then a no-op.
                let _ = self.cache.finish_binding(&assumed, self.clock.now());
                // The informer's event for a bound pod: parked pods it may unblock move.
                self.queue.assigned_pod_added(&assumed);
                CycleOutcome::Scheduled { pod: assumed, decision }
            }
            Err(e) => {
                for r in self.profile.reserve.iter().rev() {
                    r.unreserve(&mut state, &assumed, decision.node);
                }
                self.unwind_binding(info, &assumed, e.to_string())
            }
        }
    }

    fn unwind_binding(&mut self, info: QueuedPodInfo, assumed: &Pod, error: String) -> CycleOutcome {
        let pod = info.pod.clone();
        let error = match self.cache.forget_pod(assumed) {
            Ok(()) => error,
            Err(e) => format!("{error}; forgetting the assumed pod failed too: {e}"),
        };
        // Like upstream's binding-cycle failure, the pod's nomination is cleared: the room it
        // held was not enough to bind it there.
        let requeued = self.requeue(info);
        if let Some(n) = self.queue.nominator() {
            n.delete(&pod);
        }
        if requeued && pod.nominated_node_name.is_some() {
            // Not critical: the pod is retried either way.
            let _ = self.api.set_nominated_node(&pod, None);
        }
        CycleOutcome::BindFailed { pod, error }
    }
}

/// The index of a highest total; ties are broken uniformly at random (one draw among the
/// tied nodes, the same distribution as upstream's reservoir sampling).
pub fn select_host(totals: &[i64], rng: &mut Rng) -> usize {
    let Some(&max) = totals.iter().max() else { return 0 };
    let ties = totals.iter().filter(|&&t| t == max).count() as u64;
    let mut k = if ties > 1 { rng.below(ties) } else { 0 };
    for (i, &t) in totals.iter().enumerate() {
        if t == max {
            if k == 0 {
                return i;
            }
            k -= 1;
        }
    }
    0
}
