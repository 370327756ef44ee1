//! `schedule_one`: one scheduling cycle, and the binding that follows it.
//!
//! pop → snapshot → PreFilter → Filter (sampled, parallel) → [PostFilter] → PreScore/Score →
//! select_host → assume → Reserve → Bind (→ the cluster confirms into the cache).
//!
//! A `CycleObserver` (`crate::observer`) sees the cycle at its phase boundaries when one is
//! installed (`set_observer`) or passed (`observe_cycle`, a cycle without side effects); the
//! cycle's functions are generic over it, and the unobserved instance has no hook at all.
//!
//! # The v1.35 gates of the cycle
//!
//! - **SchedulerAsyncPreemption** (beta, on): when PostFilter nominates a node, the preemptor
//!   is nominated and returned to the queue within the cycle, but its victims are deleted in a
//!   step of their own (`run_preemption_steps`), due `with_preemption_api_delay` after the
//!   cycle (zero by default: right after it) on the scheduler's clock; a simulation jumps its
//!   clock there like to a backoff expiry. Until the step, DefaultPreemption's PreEnqueue holds
//!   the preemptor (`PreemptingPods`), so a retry cannot preempt again; other pods see it
//!   nominated and leave it room. The step clears the nominations of lower-priority pods on
//!   the node (read then, as upstream's goroutine reads them), lets the preemptor go just
//!   before deleting the last victim, and activates it if a call failed. Victims already being
//!   deleted need no call; with none left there is no step (and no nomination is cleared, as
//!   upstream). Off: the victims are deleted within the cycle.
//! - **NominatedNodeNameForExpectation** (beta, on): when a PreBind plugin has work for the pod
//!   (`PreBindPlugin::pre_bind_has_work`, upstream's PreBindPreFlight), the pod's status names
//!   its node before PreBind; a binding failure clears it. The queue ignores updates of an
//!   assumed pod and the nominator is not touched, so no decision changes.
//! - **OpportunisticBatching** (KEP-5598, beta, on): a cycle of the queue's, in a profile that
//!   signs pods (`Profile::signs_pods`), signs its pod after PreFilter and may get a hint: the
//!   next node of the previous pod's ranking (`framework::batch` has the rule). The hint is
//!   tried first, like a nominated node (which takes precedence); when it passes the filters
//!   the pod takes it unscored and the rotating start stays. A cycle that chose a node keeps
//!   its ranking for the next pod. With the default profile no pod is signed
//!   (PodTopologySpread's system default constraints), so the gate changes nothing there.
//!   Observations (`observe_cycle`, `schedule_pod`) never batch and leave the batch alone.

use std::sync::Arc;

use crate::api::{Node, Pod, Sym};
use crate::cache::{Cache, CacheError};
use crate::features::{Feature, FeatureGates};
use crate::framework::batch::{Batch, Ranking};
use crate::framework::extender::{ExtenderTrace, Extenders};
use crate::framework::feasible::{
    find_feasible_among, find_feasible_nodes, Feasible, FilterOutput, RowsCheck, RowsJudge, POOL_MIN_NODES_TO_FIND,
};
use crate::framework::pick::{upstream_pick, TieBreak};
use crate::framework::plugins::default_preemption::PreemptionTrace;
use crate::framework::runtime::{
    active_filters, narrowed_out_status, run_filters, run_filters_at, run_filters_with_nominated,
    run_post_filter_plugins, run_pre_filter_observed, run_scoring_observed, FitError, NodeStatuses, NominatedPods,
    Overlay, ScoreTable,
};
use crate::framework::signature::{sign_pod, PodSignature};
use crate::framework::{
    Code, CycleState, FilterPlugin, Nominating, PostFilterContext, PostFilterResult, Profile, Profiles, RowJudged,
    Status,
};
use crate::observer::{CycleObserver, FilterView, NoObserver, PostFilterView, SelectedBy, Selection};
use crate::parallel::gate::PoolGate;
use crate::parallel::{effective_parallelism, WorkerPool};
use crate::queue::{QueueError, QueuedPodInfo, SchedulingQueue};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::util::rng::Rng;
use crate::util::slowdown::FilterSlowdown;
use crate::util::time::{Clock, SystemClock};

pub use crate::cluster::{ApiError, BindError, ClusterApi};
pub use crate::framework::pick::select_host;

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
    /// A non-ignorable extender failed: names the extender, the verb and the cause.
    Extender(String),
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScheduleError::Unschedulable(e) => e.fmt(f),
            ScheduleError::NoNodes => f.write_str("no nodes available to schedule pods"),
            ScheduleError::Plugin(s) => s.fmt(f),
            ScheduleError::Extender(e) => f.write_str(e),
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

/// An asynchronous preemption's deletion step, waiting on the clock.
struct PendingPreemption {
    due: crate::util::time::Timestamp,
    preemptor: Pod,
    node: Sym,
    /// The victims not already being deleted when the preemption was decided.
    victims: Vec<Pod>,
    /// Where the preemptor is marked until the step (None: no plugin holds it).
    hold: Option<crate::framework::PreemptingHandle>,
}

/// Scratch reused across cycles so a steady-state cycle allocates O(1) times, not per node.
#[derive(Default)]
struct Scratch {
    filter: FilterOutput,
    scores: ScoreTable,
    /// Nominated pods the current pod must leave room for (filter and PostFilter); kept
    /// across cycles, each gather updating it.
    nominated: NominatedPods,
    /// Those on one node only, for a pod trying its nominated node first (kept apart, so
    /// that check does not throw away what `nominated` keeps).
    nominated_one: NominatedPods,
}

pub struct Scheduler {
    pub cache: Arc<Cache>,
    pub queue: Arc<dyn SchedulingQueue>,
    /// The profile of the pod in the current cycle (see `activate_profile`).
    profile: Profile,
    /// `profile.scheduler_name`, interned: the per-cycle routing check compares it.
    profile_name: Sym,
    /// The configuration's other profiles, by scheduler name. Upstream runs every profile in
    /// one scheduler over one queue; here the profile a pod names is swapped into `profile`
    /// for its cycle, so the cycle itself reads one profile as before and a run of one
    /// profile pays one name comparison per cycle.
    parked: Vec<(Sym, Profile)>,
    /// OpportunisticBatching: the active profile's batch (`framework::batch`), whether that
    /// profile signs pods at all, and the parked profiles' batches (`parked`'s order).
    batch: Batch,
    batchable: bool,
    parked_batches: Vec<Batch>,
    /// The current cycle's signature and hint, when it batches (read once it chose a node).
    cycle_batch: Option<(Option<PodSignature>, Option<Sym>)>,
    api: Arc<dyn ClusterApi>,
    clock: Arc<dyn Clock>,
    rng: Rng,
    pool: Option<WorkerPool>,
    /// Whether the filter pass and the scoring of a cycle big enough for the pool run on it
    /// (`parallel::gate`), each measured apart.
    filter_gate: PoolGate,
    score_gate: PoolGate,
    next_start_node_index: usize,
    scheduling_cycle: u64,
    scratch: Scratch,
    /// When set, each cycle records its extender calls here (`ksched explain`); `None`
    /// otherwise, and nothing is recorded.
    extender_trace: Option<ExtenderTrace>,
    /// Sees every cycle when set (`set_observer`); `None` on the hot path.
    observer: Option<Box<dyn CycleObserver>>,
    /// The feature gates the scheduler runs under.
    gates: FeatureGates,
    /// SchedulerAsyncPreemption: preemptions whose victims' deletion is still to come, in
    /// the order they are due (`run_preemption_steps`).
    pending_preemptions: std::collections::VecDeque<PendingPreemption>,
    /// How long after its cycle a preemption's deletion step is due on the clock (upstream's
    /// goroutine making the API calls while the scheduler goes on); zero by default: the step
    /// runs as soon as the cycle that decided it has returned the preemptor to the queue.
    preemption_api_delay: std::time::Duration,
    /// Test-only (`util::slowdown`): `None` unless `KSCHED_TEST_FILTER_SLOWDOWN` is set.
    filter_slowdown: Option<FilterSlowdown>,
}

impl Scheduler {
    /// The debug checker for every profile's kept column scores (`ScoreMemo::mismatches`)
    /// against the last published snapshot; empty when sound.
    pub fn check_score_memos(&self) -> Vec<String> {
        let snapshot = self.cache.snapshot();
        std::iter::once(&self.profile)
            .chain(self.parked.iter().map(|(_, p)| p))
            .flat_map(|p| {
                p.score_memo.mismatches(&snapshot).into_iter().map(move |m| format!("{}: {m}", p.scheduler_name))
            })
            .collect()
    }

    /// A scheduler running `profiles` (one `Profile`, or a configuration's `Profiles`): each
    /// pod is scheduled by the profile its `spec.schedulerName` names. The queue is shared,
    /// so its sort must be the same for all (the configuration checks that). The
    /// `default-scheduler` profile (or the first) is the active one to begin with.
    pub fn new(
        cache: Arc<Cache>,
        queue: Arc<dyn SchedulingQueue>,
        profiles: impl Into<Profiles>,
        api: Arc<dyn ClusterApi>,
        seed: u64,
    ) -> Scheduler {
        let profiles: Profiles = profiles.into();
        let primary = Sym::new(&profiles.primary().scheduler_name);
        let mut parked: Vec<(Sym, Profile)> =
            profiles.into_vec().into_iter().map(|p| (Sym::new(&p.scheduler_name), p)).collect();
        let at = parked.iter().position(|(n, _)| *n == primary).unwrap_or(0);
        let (profile_name, profile) = parked.swap_remove(at);
        // One worker pool serves every profile; upstream's parallelism is the configuration's.
        let parallelism = parked.iter().map(|(_, p)| p.parallelism).fold(profile.parallelism, usize::max);
        // More workers than the machine runs at once only wait for each other.
        let workers = effective_parallelism(parallelism);
        let pool = (workers > 1).then(|| WorkerPool::new(workers));
        Scheduler {
            cache,
            queue,
            batchable: profile.signs_pods(),
            profile,
            profile_name,
            parked_batches: parked.iter().map(|_| Batch::default()).collect(),
            parked,
            batch: Batch::default(),
            cycle_batch: None,
            api,
            clock: Arc::new(SystemClock::new()),
            rng: Rng::seed(seed),
            pool,
            filter_gate: PoolGate::default(),
            score_gate: PoolGate::default(),
            next_start_node_index: 0,
            scheduling_cycle: 0,
            scratch: Scratch::default(),
            extender_trace: None,
            observer: None,
            gates: FeatureGates::default(),
            pending_preemptions: std::collections::VecDeque::new(),
            preemption_api_delay: std::time::Duration::ZERO,
            filter_slowdown: FilterSlowdown::from_env(),
        }
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Scheduler {
        self.clock = clock;
        self
    }

    /// Runs under `gates` (v1.35's defaults otherwise).
    pub fn with_feature_gates(mut self, gates: FeatureGates) -> Scheduler {
        self.gates = gates;
        self
    }

    pub fn feature_gates(&self) -> FeatureGates {
        self.gates
    }

    /// With SchedulerAsyncPreemption: a preemption's deletion step is due `delay` after the
    /// cycle that decided it (cycles of other pods may run meanwhile), instead of right after
    /// that cycle.
    pub fn with_preemption_api_delay(mut self, delay: std::time::Duration) -> Scheduler {
        self.preemption_api_delay = delay;
        self
    }

    /// When the next asynchronous preemption step is due, if one is waiting (a simulation's
    /// clock jumps there).
    pub fn next_preemption_step(&self) -> Option<crate::util::time::Timestamp> {
        self.pending_preemptions.front().map(|p| p.due)
    }

    /// Runs the asynchronous preemption steps due by now on the clock (upstream's
    /// prepareCandidateAsync goroutine): lower-priority pods nominated to the node lose their
    /// nomination, the victims are deleted (the preemptor is let go just before the last
    /// one), and a preemptor whose deletions failed is moved to activeQ. Returns how many ran.
    pub fn run_preemption_steps(&mut self) -> usize {
        if self.pending_preemptions.is_empty() {
            return 0;
        }
        let now = self.clock.now();
        let mut ran = 0;
        while self.pending_preemptions.front().is_some_and(|p| p.due <= now) {
            if let Some(step) = self.pending_preemptions.pop_front() {
                self.preemption_step(step);
                ran += 1;
            }
        }
        ran
    }

    /// One asynchronous preemption step (see `run_preemption_steps`).
    fn preemption_step(&mut self, step: PendingPreemption) {
        let PendingPreemption { preemptor, node, victims, hold, .. } = step;
        let mut failed = false;
        // Read now, as upstream's goroutine reads them: nominations made since the cycle count.
        if let Some(n) = self.queue.nominator() {
            use crate::framework::PodNominator;
            for p in n.pods_on(node).into_iter().filter(|p| p.priority < preemptor.priority) {
                n.delete(&p);
                failed |= self.api.set_nominated_node(&p, None).is_err();
            }
        }
        let last = victims.len().saturating_sub(1);
        for (i, v) in victims.iter().enumerate() {
            if i == last {
                // The preemptor is done once its last victim is being deleted: let it go first,
                // so that victim's deletion event finds it no longer held.
                if let Some(h) = &hold {
                    h.0.finish(&preemptor.uid);
                }
            }
            // A victim already gone (its run ended, another preemption took it) is fine: the
            // API server would answer NotFound, which upstream takes as done.
            if self.cache.get_pod(v).is_some() {
                failed |= self.api.delete_victim(v).is_err();
            }
        }
        if let Some(h) = &hold {
            h.0.finish(&preemptor.uid);
        }
        if failed {
            // Upstream activates the preemptor so it does not wait for an event that may
            // never come.
            self.queue.activate(&preemptor);
        }
    }

    /// The profile of the current (or last) cycle.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The profile that schedules pods of `scheduler_name`, if any.
    pub fn profile_named(&self, scheduler_name: Sym) -> Option<&Profile> {
        if scheduler_name == self.profile_name {
            return Some(&self.profile);
        }
        self.parked.iter().find(|(n, _)| *n == scheduler_name).map(|(_, p)| p)
    }

    /// Makes the profile `pod` names the active one; `false` when no profile is named so
    /// (upstream's scheduler never sees such a pod). One comparison when it already is.
    #[inline]
    fn activate_profile(&mut self, pod: &Pod) -> bool {
        pod.scheduler_name == self.profile_name || self.switch_profile(pod.scheduler_name)
    }

    #[cold]
    #[inline(never)]
    fn switch_profile(&mut self, name: Sym) -> bool {
        let Some(at) = self.parked.iter().position(|(n, _)| *n == name) else {
            return false;
        };
        let (parked_name, parked) = &mut self.parked[at];
        std::mem::swap(&mut self.profile, parked);
        std::mem::swap(&mut self.profile_name, parked_name);
        std::mem::swap(&mut self.batch, &mut self.parked_batches[at]);
        self.batchable = self.profile.signs_pods();
        true
    }

    /// The error of a pod no profile schedules.
    fn no_profile(pod: &Pod) -> ScheduleError {
        let name = pod.scheduler_name;
        ScheduleError::Plugin(Status::error(format!("no profile of this scheduler has schedulerName {name:?}")))
    }

    /// Starts (or stops) recording the extenders' calls of the following cycles.
    pub fn record_extender_calls(&mut self, on: bool) {
        self.extender_trace = on.then(ExtenderTrace::default);
    }

    /// The extender calls recorded so far (`None` when not recording).
    pub fn extender_trace(&self) -> Option<&ExtenderTrace> {
        self.extender_trace.as_ref()
    }

    /// The extender calls recorded since the last take (empty when not recording).
    pub fn take_extender_trace(&mut self) -> ExtenderTrace {
        self.extender_trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Installs an observer that sees every cycle from now on (`ksched explain`); its
    /// `cycle_started` decides which cycles it follows.
    pub fn set_observer(&mut self, observer: Box<dyn CycleObserver>) {
        self.observer = Some(observer);
    }

    /// Removes the installed observer and hands it back.
    pub fn take_observer(&mut self) -> Option<Box<dyn CycleObserver>> {
        self.observer.take()
    }

    /// Runs `pod`'s scheduling cycle on the cache's current state as an observation only:
    /// PreFilter, Filter, Score and selection, and the PostFilter plugins when no node fits
    /// (their dry run included), told to `obs`; but nothing is assumed, bound, evicted,
    /// nominated or requeued, and the pod need not be in the queue. It advances what a cycle
    /// advances besides: the rotating start index and the RNG. The golden
    /// replay observes upstream's cases with it and then applies upstream's outcome.
    pub fn observe_cycle(&mut self, pod: &Pod, obs: &mut dyn CycleObserver) -> Result<ScheduleDecision, ScheduleError> {
        if !self.activate_profile(pod) {
            return Err(Self::no_profile(pod));
        }
        if !obs.cycle_started(pod) {
            return self.algorithm(pod, &mut NoObserver);
        }
        self.algorithm(pod, obs)
    }

    /// The scheduling algorithm with PostFilter, without side effects on the cluster.
    fn algorithm<O: CycleObserver + ?Sized>(
        &mut self,
        pod: &Pod,
        obs: &mut O,
    ) -> Result<ScheduleDecision, ScheduleError> {
        let snapshot = self.cache.update_snapshot();
        let mut state = CycleState::new();
        let result = match self.schedule_pod_in(&mut state, pod, &snapshot, obs, false) {
            Err(ScheduleError::Unschedulable(mut fit)) => {
                self.run_post_filter(&state, pod, &snapshot, &mut fit, obs);
                Err(ScheduleError::Unschedulable(fit))
            }
            other => other,
        };
        if obs.observes() {
            obs.scheduling_result(result.as_ref());
        }
        result
    }

    /// Of the cycles big enough for the pool so far, how many ran their filter pass on it and
    /// how many on one worker, then the same for their scoring (`parallel::gate`); zeros
    /// without a pool.
    pub fn pool_use(&self) -> [(u64, u64); 2] {
        [self.filter_gate.counts, self.score_gate.counts]
    }

    /// OpportunisticBatching: how many pods took the hint they were given, over every profile.
    pub fn batch_hints(&self) -> u64 {
        self.batch.hinted() + self.parked_batches.iter().map(Batch::hinted).sum::<u64>()
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
        let outcome = self.run_cycle_hooked(info);
        // Asynchronous preemption steps already due (a preemption this cycle decided, with no
        // delay) run once the cycle is over.
        if !self.pending_preemptions.is_empty() {
            self.run_preemption_steps();
        }
        outcome
    }

    fn run_cycle_hooked(&mut self, info: QueuedPodInfo) -> CycleOutcome {
        if !self.activate_profile(&info.pod) {
            // Not this scheduler's pod (the cluster queues none): it leaves the queue.
            self.queue.done(&info.pod.uid);
            return CycleOutcome::Unschedulable { error: Self::no_profile(&info.pod), pod: info.pod, preemption: None };
        }
        // Checked once per cycle: without an observer (or when it passes on this pod) the
        // cycle is the hook-free instance.
        let Some(mut obs) = self.observer.take() else {
            return self.run_cycle_observed(info, &mut NoObserver);
        };
        let outcome = if obs.cycle_started(&info.pod) {
            // The observer gets this cycle's extender calls (recorded for it alone).
            let traced = !self.profile.extenders.is_empty();
            let before = if traced { self.extender_trace.replace(ExtenderTrace::default()) } else { None };
            let outcome = self.run_cycle_observed(info, &mut *obs);
            if traced {
                let rows = std::mem::replace(&mut self.extender_trace, before).unwrap_or_default().rows;
                if let Some(t) = self.extender_trace.as_mut() {
                    t.rows.extend(rows.iter().cloned());
                }
                obs.extender_calls(&rows);
            }
            obs.cycle_finished(&outcome);
            outcome
        } else {
            self.run_cycle_observed(info, &mut NoObserver)
        };
        self.observer = Some(obs);
        outcome
    }

    fn run_cycle_observed<O: CycleObserver + ?Sized>(&mut self, info: QueuedPodInfo, obs: &mut O) -> CycleOutcome {
        self.scheduling_cycle = self.queue.scheduling_cycle();
        let snapshot = self.cache.update_snapshot();
        let pod = info.pod.clone();
        let mut state = CycleState::new();
        let result = self.schedule_pod_in(&mut state, &pod, &snapshot, obs, true);
        match result {
            Ok(decision) => {
                if obs.observes() {
                    obs.scheduling_result(Ok(&decision));
                }
                self.assume_and_bind(info, decision, state)
            }
            Err(ScheduleError::Unschedulable(mut fit)) => {
                let result = self.run_post_filter(&state, &pod, &snapshot, &mut fit, obs);
                let error = ScheduleError::Unschedulable(fit);
                if obs.observes() {
                    obs.scheduling_result(Err(&error));
                }
                let preemption = self.handle_failure(info, &state, result);
                CycleOutcome::Unschedulable { pod, error, preemption }
            }
            Err(error) => {
                if obs.observes() {
                    obs.scheduling_result(Err(&error));
                }
                self.requeue(info);
                CycleOutcome::Unschedulable { pod, error, preemption: None }
            }
        }
    }

    /// Runs the PostFilter plugins as upstream does: the first to succeed (or to say
    /// UnschedulableAndUnresolvable, or to fail) decides; otherwise the last nomination any of
    /// them asked for stands. Their message joins the FitError.
    fn run_post_filter<O: CycleObserver + ?Sized>(
        &mut self,
        state: &CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        fit: &mut FitError,
        obs: &mut O,
    ) -> Option<PostFilterResult> {
        if self.profile.post_filter.is_empty() {
            return None;
        }
        let observed = obs.observes();
        let mut trace = (observed && obs.wants_preemption_trace()).then(PreemptionTrace::default);
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
            preemption_trace: trace.as_mut(),
            api: &*self.api,
        };
        let mut preemption_trace = Default::default();
        if self.extender_trace.is_some() && !self.profile.extenders.is_empty() {
            ctx.preemption_trace = Some(&mut preemption_trace);
        }
        let (result, msg) = run_post_filter_plugins(&self.profile, &mut ctx, state, pod);
        if observed {
            obs.post_filter(&PostFilterView {
                statuses: &self.scratch.filter.statuses,
                result: result.as_ref(),
                message: msg.as_deref(),
                trace: trace.as_ref(),
            });
        }
        fit.post_filter_msg = msg;
        if let Some(t) = self.extender_trace.as_mut() {
            t.rows.append(&mut preemption_trace.extenders.rows);
        }
        result
    }

    /// After a failed attempt: carries out what PostFilter decided (upstream's
    /// PrepareCandidate and the nomination in handleSchedulingFailure) and returns the pod to
    /// the queue.
    fn handle_failure(
        &mut self,
        info: QueuedPodInfo,
        state: &CycleState,
        result: Option<PostFilterResult>,
    ) -> Option<Preemption> {
        let pod = info.pod.clone();
        let Some(result) = result else {
            self.requeue_rejected(info, state);
            return None;
        };
        match result.nominating {
            Nominating::Noop => {
                self.requeue_rejected(info, state);
                None
            }
            Nominating::Clear => {
                let requeued = self.requeue_rejected(info, state);
                if let Some(n) = self.queue.nominator() {
                    n.delete(&pod);
                }
                if requeued && pod.nominated_node_name.is_some() {
                    // Not critical: the pod is retried either way.
                    let _ = self.api.set_nominated_node(&pod, None);
                }
                None
            }
            Nominating::Set(node) if self.gates.enabled(Feature::SchedulerAsyncPreemption) => {
                // Upstream's prepareCandidateAsync: victims already being deleted need no call;
                // with none left there is no step at all (and no nomination is cleared).
                let victims: Vec<Pod> = result.victims.iter().filter(|v| !v.is_terminating()).cloned().collect();
                let hold = result.preempting.filter(|_| !victims.is_empty());
                if let Some(h) = &hold {
                    // Held from now on: a retry before the step would preempt again.
                    h.0.start(&pod.uid);
                }
                let requeued = self.requeue_rejected(info, state);
                if !victims.is_empty() {
                    let due = self.clock.now().saturating_add(self.preemption_api_delay);
                    self.pending_preemptions.push_back(PendingPreemption {
                        due,
                        preemptor: pod.clone(),
                        node,
                        victims,
                        hold,
                    });
                }
                if requeued {
                    self.nominate(&pod, node);
                }
                Some(Preemption { node, victims: result.victims })
            }
            Nominating::Set(node) => {
                for v in &result.victims {
                    if self.api.delete_victim(v).is_err() {
                        // Upstream gives up on this preemption; the pod is retried later.
                        self.requeue_rejected(info, state);
                        return None;
                    }
                }
                for p in &result.lower_priority_nominated {
                    if let Some(n) = self.queue.nominator() {
                        n.delete(p);
                    }
                    let _ = self.api.set_nominated_node(p, None);
                }
                if !self.requeue_rejected(info, state) {
                    // Deleted or bound meanwhile: a nomination would reserve room for a pod
                    // that will never use it.
                    return Some(Preemption { node, victims: result.victims });
                }
                self.nominate(&pod, node);
                Some(Preemption { node, victims: result.victims })
            }
        }
    }

    /// Records the preemptor's nomination: in the nominator first (so the next cycles leave
    /// room for it), then in its status.
    fn nominate(&self, pod: &Pod, node: Sym) {
        if let Some(n) = self.queue.nominator() {
            n.add(pod, Some(node));
        }
        let _ = self.api.set_nominated_node(pod, Some(node));
    }

    /// A node joined: into the cache, and the queue hears of it (parked pods whose rejecting
    /// plugins say it may help move).
    pub fn add_node(&self, node: Node) -> Result<(), CacheError> {
        self.cache.add_node(node.clone())?;
        self.queue.node_added(&node);
        Ok(())
    }

    /// A node changed (labels, taints, allocatable, unschedulable, conditions): into the
    /// cache, and the queue hears what changed.
    pub fn update_node(&self, node: Node) -> Result<(), CacheError> {
        let old = self.cache.get_node(node.name);
        self.cache.update_node(node.clone())?;
        if let Some(old) = old {
            self.queue.node_updated(&old, &node);
        }
        Ok(())
    }

    /// A node left: out of the cache, and the queue hears of it.
    pub fn remove_node(&self, name: Sym) -> Result<(), CacheError> {
        let old = self.cache.get_node(name);
        self.cache.remove_node(name)?;
        if let Some(old) = old {
            self.queue.node_deleted(&old);
        }
        Ok(())
    }

    /// Returns a pod whose attempt failed to the queue, tagged with the cycle it was popped in;
    /// false if it was not queued. A pod the cluster deleted or bound meanwhile stays out
    /// (upstream checks its pod lister the same way), so a failure never resurrects a pod.
    fn requeue(&self, info: QueuedPodInfo) -> bool {
        if !self.api.is_pending(&info.pod) {
            self.queue.done(&info.pod.uid);
            return false;
        }
        // AlreadyQueued: an informer update re-added a newer version meanwhile, which wins.
        // Closed: the scheduler is shutting down and the queue no longer takes pods.
        self.queue.add_unschedulable_if_not_present(info).is_ok()
    }

    /// `requeue` after an Unschedulable verdict: records the plugins that rejected the pod
    /// (PreFilter's, each rejected node's filter, PreFilter narrowing), so that only events
    /// those plugins registered for move it. One pass over the rejected nodes, once per
    /// failed attempt.
    fn requeue_rejected(&self, mut info: QueuedPodInfo, state: &CycleState) -> bool {
        let statuses = &self.scratch.filter.statuses;
        let plugins = &mut info.unschedulable_plugins;
        let mut add = |p: &'static str| {
            if !p.is_empty() && !plugins.contains(&p) {
                plugins.push(p);
            }
        };
        let mut last = "";
        for st in statuses.statuses() {
            if st.plugin != last && st.is_rejected() {
                last = st.plugin;
                add(st.plugin);
            }
        }
        if let Some(st) = &statuses.absent {
            add(st.plugin);
        }
        for &p in state.narrowed_by() {
            add(p);
        }
        self.requeue(info)
    }

    /// The scheduling algorithm on `snapshot`: filter, score, select. No side effects
    /// besides advancing the rotating start index and the RNG.
    pub fn schedule_pod(&mut self, pod: &Pod, snapshot: &Snapshot) -> Result<ScheduleDecision, ScheduleError> {
        if !self.activate_profile(pod) {
            return Err(Self::no_profile(pod));
        }
        self.schedule_pod_in(&mut CycleState::new(), pod, snapshot, &mut NoObserver, false)
    }

    /// `schedule_pod` with the caller's cycle state (PostFilter reads it afterwards). On
    /// `Unschedulable`, `self.scratch.filter.statuses` holds every node's verdict.
    ///
    /// `obs` is told each phase's result (`NoObserver`: the hook-free instance). `batching`:
    /// a cycle of the queue's, which OpportunisticBatching may batch when the gate is on
    /// (observations and dry runs never do, and leave the batch alone).
    fn schedule_pod_in<O: CycleObserver + ?Sized>(
        &mut self,
        state: &mut CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        obs: &mut O,
        batching: bool,
    ) -> Result<ScheduleDecision, ScheduleError> {
        let batching = batching && self.batchable && self.gates.enabled(Feature::OpportunisticBatching);
        let result = if self.filter_slowdown.is_none() {
            self.schedule_pod_timed(state, pod, snapshot, obs, batching)
        } else {
            let start = std::time::Instant::now();
            let result = self.schedule_pod_timed(state, pod, snapshot, obs, batching);
            if let Some(s) = self.filter_slowdown.as_mut() {
                s.record(start.elapsed());
            }
            result
        };
        if let Some((signature, hint)) = self.cycle_batch.take() {
            if let Ok(decision) = &result {
                self.keep_batch(decision, signature, hint, snapshot);
            }
        }
        result
    }

    /// OpportunisticBatching, after a cycle chose `decision.node`: what the next pod of the
    /// same signature may take (`Batch::chose`). A cycle that scored its nodes ranks the
    /// rest as upstream's score heap holds them once the chosen node is popped.
    fn keep_batch(
        &mut self,
        decision: &ScheduleDecision,
        signature: Option<PodSignature>,
        hint: Option<Sym>,
        snapshot: &Snapshot,
    ) {
        let (scores, feasible) = (&self.scratch.scores, &self.scratch.filter.feasible);
        let scored = decision.feasible > 1;
        let upstream = self.profile.tie_break == TieBreak::Upstream;
        let now = self.clock.now();
        self.batch.chose(self.scheduling_cycle, decision.node, hint, signature, now, |ranking: &mut Ranking| {
            if !scored {
                return false;
            }
            debug_assert_eq!(scores.totals().len(), feasible.len(), "a total per scored node");
            let nodes = scores
                .totals()
                .iter()
                .zip(feasible)
                .filter_map(|(&t, &pos)| Some((t, snapshot.name_at(pos as usize)?)));
            if upstream {
                ranking.build(nodes);
                let top = ranking.pop();
                debug_assert_eq!(top, Some(decision.node), "the heap's root is the node the cycle picked");
            } else {
                // A uniform draw among ties is not upstream's pick: the rest, ranked alike.
                ranking.build(nodes.filter(|&(_, n)| n != decision.node));
            }
            true
        });
    }

    /// `schedule_pod_in`'s body (which times it for the test-only filter slowdown).
    fn schedule_pod_timed<O: CycleObserver + ?Sized>(
        &mut self,
        state: &mut CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        obs: &mut O,
        batching: bool,
    ) -> Result<ScheduleDecision, ScheduleError> {
        let observed = obs.observes();
        let n = snapshot.num_nodes();
        if n == 0 {
            return Err(ScheduleError::NoNodes);
        }
        if let Err(st) = run_pre_filter_observed(&self.profile, state, pod, snapshot, obs) {
            if observed {
                obs.pre_filter_rejected(&st);
            }
            if st.code == Code::Error {
                return Err(ScheduleError::Plugin(st));
            }
            let mut fe = FitError::from_statuses(n, &Default::default());
            fe.pre_filter_msg = Some(st.message());
            if !st.plugin.is_empty() {
                fe.plugins = Box::new([st.plugin]);
            }
            // Every node shares the PreFilter verdict (PostFilter reads it, and the
            // nominations this pod must leave room for, not those of an earlier cycle).
            self.scratch.nominated.gather(self.queue.nominator(), pod);
            self.scratch.nominated.mark_positions(snapshot);
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
        // What the observer sees of the filter pass: the cycle's own filter function beside
        // the pass's result.
        let profile = &self.profile;
        type Check<'c> = &'c dyn Fn(usize, &NodeInfo) -> Status;
        let report_filtered =
            |obs: &mut O, nominated: &NominatedPods, check: Check<'_>, pass: (&[u32], &NodeStatuses, usize)| {
                let (feasible, statuses, processed) = pass;
                let view = FilterView {
                    profile,
                    state,
                    pod,
                    snapshot,
                    nominated,
                    overlay: &overlay,
                    check,
                    feasible,
                    statuses,
                    processed,
                };
                obs.filtered(&view);
            };
        // OpportunisticBatching (`framework::batch`): the pod's signature, and the next node of
        // the previous pod's ranking when this pod may take it.
        let mut hint = None;
        if batching {
            let signature = sign_pod(self.profile.signing_plugins(), pod).ok();
            let now = self.clock.now();
            let last_rejects =
                |last: Sym| snapshot.get(last).map(|n| run_filters(&filters, state, pod, n).is_rejected());
            hint = self.batch.hint(signature.as_ref(), self.scheduling_cycle, now, last_rejects).ok();
            self.cycle_batch = Some((signature, hint));
        }
        // A pod that preemption nominated to a node tries that node first, and a hinted pod its
        // hint; only that node's nominations are needed for it. When the node fails, upstream
        // keeps its status in the cycle's diagnosis: it counts as processed (the start index's
        // step, `evaluated`) and as rejected even where the pass below stops before it. A
        // nominated node missing from the snapshot is not tried, and neither is the hint.
        let mut nominated_rejected: Option<(u32, Status)> = None;
        let first = match pod.nominated_node_name {
            Some(n) => snapshot.get(n).map(|info| (info, SelectedBy::NominatedNode)),
            None => hint.and_then(|h| snapshot.get(h)).map(|info| (info, SelectedBy::BatchHint)),
        };
        if let Some((info, by)) = first {
            self.scratch.nominated_one.gather_node(self.queue.nominator(), pod, info.name());
            let st = check_with(&self.scratch.nominated_one, info);
            if observed {
                match by {
                    SelectedBy::BatchHint => obs.batch_hint(info.name(), &st),
                    _ => obs.nominated_node(info.name(), &st),
                }
            }
            if st.code == Code::Error {
                return Err(ScheduleError::Plugin(st));
            }
            let pos = snapshot.position(info.name()).unwrap_or_default() as u32;
            if !st.is_success() {
                nominated_rejected = Some((pos, st));
            } else {
                // The extenders filter the nominated node too (upstream's evaluateNominatedNode).
                let passes = self.profile.extenders.is_empty() || {
                    let mut passed = vec![&**info];
                    let mut ext = Extenders { list: &self.profile.extenders, trace: self.extender_trace.as_mut() };
                    let mut failed = None;
                    ext.filter(pod, &mut passed, |_, st| failed = Some(st))
                        .map_err(|e| ScheduleError::Extender(e.to_string()))?;
                    nominated_rejected = failed.map(|st| (pos, st));
                    !passed.is_empty()
                };
                if passes {
                    if observed {
                        // The observer may ask about the nodes the cycle did not visit: with
                        // every nomination, as the full search would have filtered them.
                        self.scratch.nominated.gather(self.queue.nominator(), pod);
                        let nominated = &self.scratch.nominated;
                        let check = |_: usize, node: &NodeInfo| check_with(nominated, node);
                        report_filtered(obs, nominated, &check, (&[pos], &NodeStatuses::default(), 1));
                        let selection = Selection { node: info.name(), by, nodes: &[], totals: &[] };
                        obs.selected(&selection);
                    }
                    return Ok(ScheduleDecision { node: info.name(), evaluated: 1, feasible: 1 });
                }
            }
        }
        self.scratch.nominated.gather(self.queue.nominator(), pod);
        self.scratch.nominated.mark_positions(snapshot);
        let nominated = &self.scratch.nominated;
        // Nodes without nominated pods are judged from the snapshot's hot columns where the
        // plugins can; the overlay copies are NodeInfos only.
        let columns = snapshot.columns();
        let check = |pos: usize, node: &NodeInfo| {
            run_filters_at(&overlay, &filters, state, pod, node, pos, columns.at(pos), nominated, snapshot)
        };
        // Every active filter judges rows: blocks of nodes are judged from the columns, a
        // filter at a time; nodes with nominated pods, and rows a filter cannot judge, go
        // through `check`.
        let by_rows = filters.iter().all(|f| f.judges_rows(state, pod));
        let rows = CycleRows { filters: &filters, state, pod, snapshot, nominated };
        let rows = by_rows.then_some(&rows as RowsCheck<'_>);
        let want_of = |k: usize| self.profile.nodes_to_find(k);
        let want = want_of(n);
        // A cycle big enough for the pool runs its filter pass, and then its scoring, each on
        // the pool when that measures faster (`PoolGate`).
        let gated = self.pool.is_some() && state.node_names().is_none() && want >= POOL_MIN_NODES_TO_FIND;
        let pooled = gated && self.filter_gate.use_pool();
        let pool = self.pool.as_ref().filter(|_| pooled || !gated);
        let timer = gated.then(std::time::Instant::now);
        let out = &mut self.scratch.filter;
        match state.node_names() {
            None => find_feasible_nodes(pool, snapshot, self.next_start_node_index, want, &check, rows, out),
            Some(names) => {
                find_feasible_among(names, snapshot, self.next_start_node_index, &want_of, &check, out);
                out.statuses.absent = Some(narrowed_out_status(state));
            }
        }
        if let Some((pos, st)) = nominated_rejected {
            if !out.recorded(pos) {
                out.statuses.push(pos, st);
                out.processed += 1;
            }
        }
        // A filter error stops upstream's pass: the nodes it checked before the failing one
        // count (the failing node itself records no status), the rest were never checked.
        let start = self.next_start_node_index;
        let errored = state
            .node_names()
            .is_none()
            .then(|| {
                out.statuses
                    .iter()
                    .filter(|(_, st)| st.code == Code::Error)
                    .map(|(p, _)| (p as usize + n - start) % n)
                    .min()
            })
            .flatten();
        self.next_start_node_index = (start + errored.unwrap_or(out.processed)) % n;
        if let Some(t) = timer {
            self.filter_gate.record(pooled, t.elapsed().as_nanos() as u64, out.processed);
        }
        if let Some(s) = &self.filter_slowdown {
            s.wait();
        }
        if observed {
            let check = |pos: usize, node: &NodeInfo| check(pos, node).into_status();
            report_filtered(obs, nominated, &check, (&out.feasible, &out.statuses, out.processed));
        }
        if let Some(st) = out.statuses.statuses().iter().find(|s| s.code == Code::Error) {
            return Err(ScheduleError::Plugin(st.clone()));
        }
        let evaluated = out.processed;
        if !self.profile.extenders.is_empty() && !out.feasible.is_empty() {
            let ext = Extenders { list: &self.profile.extenders, trace: self.extender_trace.as_mut() };
            filter_with_extenders(ext, &mut self.scratch.filter, pod, snapshot)?;
        }
        let out = &self.scratch.filter;
        let feasible = out.feasible.len();
        if feasible == 0 {
            return Err(ScheduleError::Unschedulable(FitError::from_statuses(n, &out.statuses)));
        }
        if feasible == 1 {
            let node = snapshot
                .name_at(out.feasible[0] as usize)
                .ok_or_else(|| ScheduleError::Plugin(Status::error("feasible node vanished")))?;
            if observed {
                obs.selected(&Selection { node, by: SelectedBy::OnlyFeasibleNode, nodes: &[], totals: &[] });
            }
            return Ok(ScheduleDecision { node, evaluated, feasible });
        }
        let nodes = Feasible::at(snapshot, &out.feasible);
        let pooled = gated && self.score_gate.use_pool();
        let pool = self.pool.as_ref().filter(|_| pooled || !gated);
        let timer = gated.then(std::time::Instant::now);
        run_scoring_observed(&self.profile, state, pod, snapshot, &nodes, pool, &mut self.scratch.scores, obs)
            .map_err(ScheduleError::Plugin)?;
        if let Some(t) = timer {
            self.score_gate.record(pooled, t.elapsed().as_nanos() as u64, feasible);
        }
        let randomized = if self.profile.extenders.is_empty() {
            None
        } else {
            let mut ext = Extenders { list: &self.profile.extenders, trace: self.extender_trace.as_mut() };
            ext.prioritize(pod, &nodes, self.scratch.scores.totals_mut())
        };
        let best = match self.profile.tie_break {
            TieBreak::Upstream => {
                let scores = &self.scratch.scores;
                upstream_pick(scores.totals(), scores.top(), randomized.as_deref(), &mut self.rng)
            }
            TieBreak::Random => self.scratch.scores.select_host(&mut self.rng),
        };
        let totals = self.scratch.scores.totals();
        let node = out
            .feasible
            .get(best)
            .and_then(|&pos| snapshot.name_at(pos as usize))
            .ok_or_else(|| ScheduleError::Plugin(Status::error("feasible node vanished")))?;
        if observed {
            obs.selected(&Selection { node, by: SelectedBy::HighestTotal, nodes: &nodes, totals });
        }
        Ok(ScheduleDecision { node, evaluated, feasible })
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
        // NominatedNodeNameForExpectation: when PreBind has work to do (the binding will take
        // a while), the pod's status names the node it is about to be bound to, for other
        // components. The queue ignores it (the pod is assumed) and the nominator is not
        // touched, so no decision of the scheduler's changes; a binding failure clears it.
        let expecting = self.gates.enabled(Feature::NominatedNodeNameForExpectation)
            && self.profile.pre_bind.iter().any(|p| p.pre_bind_has_work(&state, &assumed, decision.node))
            // Not critical: the binding goes on either way (upstream logs and continues).
            && self.api.set_nominated_node(&pod, Some(decision.node)).is_ok();
        for p in &self.profile.pre_bind {
            let st = p.pre_bind(&mut state, &assumed, decision.node, &*self.api);
            if !st.is_success() {
                for r in self.profile.reserve.iter().rev() {
                    r.unreserve(&mut state, &assumed, decision.node);
                }
                let error = st.with_plugin(p.name()).to_string();
                return self.unwind_binding_nominated(info, &assumed, error, expecting);
            }
        }
        let bound = if self.profile.extenders.is_empty() {
            self.api.bind(&assumed, decision.node)
        } else {
            self.bind_with_extenders(&assumed, decision.node)
        };
        match bound {
            Ok(()) => {
                // Confirmation may already have turned the pod Added; finishing is then a no-op.
                let _ = self.cache.finish_binding(&assumed, self.clock.now());
                self.queue.done(&pod.uid);
                // The informer's event for a bound pod: parked pods it may unblock move.
                self.queue.assigned_pod_added(&assumed);
                CycleOutcome::Scheduled { pod: assumed, decision }
            }
            Err(e) => {
                for r in self.profile.reserve.iter().rev() {
                    r.unreserve(&mut state, &assumed, decision.node);
                }
                self.unwind_binding_nominated(info, &assumed, e.to_string(), expecting)
            }
        }
    }

    /// Upstream's extendersBinding: an interested binder extender binds instead of the
    /// default binder. The simulated cluster stands for the API server the extender binds
    /// through, so a binding the extender made is recorded there too.
    fn bind_with_extenders(&mut self, assumed: &Pod, node: Sym) -> Result<(), BindError> {
        let mut ext = Extenders { list: &self.profile.extenders, trace: self.extender_trace.as_mut() };
        match ext.bind(assumed, node) {
            None => self.api.bind(assumed, node),
            Some(Ok(())) => self.api.bind(assumed, node),
            Some(Err(e)) => Err(BindError { pod: assumed.key(), node, why: e.to_string() }),
        }
    }

    fn unwind_binding(&mut self, info: QueuedPodInfo, assumed: &Pod, error: String) -> CycleOutcome {
        self.unwind_binding_nominated(info, assumed, error, false)
    }

    /// `unwind_binding`; `expecting`: the pod's status was given its node as the expected
    /// placement (NominatedNodeNameForExpectation), which the failure clears too.
    fn unwind_binding_nominated(
        &mut self,
        info: QueuedPodInfo,
        assumed: &Pod,
        error: String,
        expecting: bool,
    ) -> CycleOutcome {
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
        if requeued && (expecting || pod.nominated_node_name.is_some()) {
            // Not critical: the pod is retried either way.
            let _ = self.api.set_nominated_node(&pod, None);
        }
        CycleOutcome::BindFailed { pod, error }
    }
}

/// A cycle's filters judging blocks of rows from the snapshot's columns (`RowsJudge`).
struct CycleRows<'c> {
    filters: &'c [&'c dyn FilterPlugin],
    state: &'c CycleState,
    pod: &'c Pod,
    snapshot: &'c Snapshot,
    nominated: &'c NominatedPods,
}

impl RowsJudge for CycleRows<'_> {
    fn judge(&self, lo: usize, judged: &mut [RowJudged]) {
        if !self.nominated.is_empty() {
            for (i, j) in judged.iter_mut().enumerate() {
                if self.nominated.delta_at_marked(lo + i).is_some() {
                    *j = RowJudged::Node;
                }
            }
        }
        for f in self.filters {
            f.filter_rows(self.state, self.pod, self.snapshot, lo, judged);
        }
    }

    /// Every filter passes the chunk from its floors, and no row of the block has
    /// nominated pods (those go to the node-by-node check).
    fn pass_whole(&self, lo: usize, hi: usize) -> bool {
        let floors = self.snapshot.columns().floors(lo);
        self.filters.iter().all(|f| f.passes_chunk(self.state, self.pod, floors))
            && (self.nominated.is_empty() || (lo..hi).all(|p| self.nominated.delta_at_marked(p).is_none()))
    }
}

/// Runs the extenders' filter on the feasible nodes of `out`: the nodes they fail leave the
/// feasible list with their status (upstream's findNodesThatPassExtenders).
fn filter_with_extenders(
    mut ext: Extenders<'_>,
    out: &mut FilterOutput,
    pod: &Pod,
    snapshot: &Snapshot,
) -> Result<(), ScheduleError> {
    let mut nodes: Vec<&NodeInfo> =
        out.feasible.iter().filter_map(|&p| snapshot.node_at(p as usize).map(|i| &**i)).collect();
    let statuses = &mut out.statuses;
    ext.filter(pod, &mut nodes, |node, st| {
        if let Some(pos) = snapshot.position(node) {
            // A feasible node has no status yet.
            statuses.push(pos as u32, st);
        }
    })
    .map_err(|e| ScheduleError::Extender(e.to_string()))?;
    let kept: Vec<u32> = nodes.iter().filter_map(|n| snapshot.position(n.name()).map(|p| p as u32)).collect();
    out.feasible.clear();
    out.feasible.extend(kept);
    Ok(())
}

#[cfg(test)]
#[path = "scheduler_observer_tests.rs"]
mod observer_tests;

#[cfg(test)]
#[path = "scheduler_batch_tests.rs"]
mod batch_tests;

#[cfg(test)]
#[path = "scheduler_sampling_tests.rs"]
mod sampling_tests;
