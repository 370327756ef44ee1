//! `schedule_one`: one scheduling cycle, and the binding that follows it.
//!
//! pop → snapshot → PreFilter → Filter (sampled, parallel) → [PostFilter] → PreScore/Score →
//! select_host → assume → Reserve → Bind (→ the cluster confirms into the cache).

use std::sync::Arc;

use thiserror::Error;

use crate::api::{Node, Pod, Sym};
use crate::cache::node_info::NodeInfo;
use crate::cache::{Cache, CacheError};
use crate::framework::runtime::{
    active_filters, run_filters, run_filters_with_nominated, run_pre_filter, run_scoring, FitError, NominatedPods,
    ScoreTable,
};
use crate::framework::{Code, CycleState, Profile, Status};
use crate::parallel::{find_feasible_nodes, num_feasible_nodes_to_find, FilterOutput, WorkerPool};
use crate::queue::{QueueError, QueuedPodInfo, SchedulingQueue};
use crate::snapshot::Snapshot;
use crate::util::rng::Rng;
use crate::util::time::{Clock, SystemClock};

#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("binding pod {pod} to node {node}: {why}")]
pub struct BindError {
    pub pod: String,
    pub node: Sym,
    pub why: String,
}

/// Where bindings go: the API server in a real cluster; here an in-memory cluster or a
/// fault-injecting one.
pub trait Binder: Send + Sync {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError>;
}

/// Binds instantly and confirms the bound pod into the cache, as the pod informer would.
pub struct InMemoryBinder {
    cache: Arc<Cache>,
}

impl InMemoryBinder {
    pub fn new(cache: Arc<Cache>) -> InMemoryBinder {
        InMemoryBinder { cache }
    }
}

impl Binder for InMemoryBinder {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
        self.cache.add_pod(&pod.with_node(node)).map_err(|e| BindError { pod: pod.key(), node, why: e.to_string() })
    }
}

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
    },
    /// Assume, reserve or bind failed; the pod went back to the queue.
    BindFailed {
        pod: Pod,
        error: String,
    },
}

/// Scratch reused across cycles so a steady-state cycle allocates O(1) times, not per node.
#[derive(Default)]
struct Scratch {
    filter: FilterOutput,
    scores: ScoreTable,
}

pub struct Scheduler {
    pub cache: Arc<Cache>,
    pub queue: Arc<dyn SchedulingQueue>,
    profile: Profile,
    binder: Arc<dyn Binder>,
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
        binder: Arc<dyn Binder>,
        seed: u64,
    ) -> Scheduler {
        let pool = (profile.parallelism > 1).then(|| WorkerPool::new(profile.parallelism));
        Scheduler {
            cache,
            queue,
            profile,
            binder,
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

    fn run_cycle(&mut self, info: QueuedPodInfo) -> CycleOutcome {
        self.scheduling_cycle = self.queue.scheduling_cycle();
        let snapshot = self.cache.update_snapshot();
        let pod = info.pod.clone();
        match self.schedule_pod(&pod, &snapshot) {
            Ok(decision) => self.assume_and_bind(info, decision),
            Err(error) => {
                self.requeue(info);
                CycleOutcome::Unschedulable { pod, error }
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

    /// Returns a pod whose attempt failed to the queue, tagged with the cycle it was popped in.
    fn requeue(&self, info: QueuedPodInfo) {
        // AlreadyQueued: an informer update re-added a newer version meanwhile, which wins.
        // Closed: the scheduler is shutting down and the queue no longer takes pods.
        let _ = self.queue.add_unschedulable_if_not_present(info, self.scheduling_cycle);
    }

    /// The scheduling algorithm on `snapshot`: filter, score, select. No side effects
    /// besides advancing the rotating start index and the tie-breaking RNG.
    pub fn schedule_pod(&mut self, pod: &Pod, snapshot: &Snapshot) -> Result<ScheduleDecision, ScheduleError> {
        let n = snapshot.num_nodes();
        if n == 0 {
            return Err(ScheduleError::NoNodes);
        }
        let mut state = CycleState::new();
        if let Err(st) = run_pre_filter(&self.profile, &mut state, pod, snapshot) {
            if st.code == Code::Error {
                return Err(ScheduleError::Plugin(st));
            }
            let mut fe = FitError::from_statuses(n, &Default::default());
            fe.pre_filter_msg = Some(st.message());
            return Err(ScheduleError::Unschedulable(fe));
        }
        let filters = active_filters(&self.profile, &state);
        let nominated = NominatedPods::for_pod(self.queue.nominator(), pod);
        let profile = &self.profile;
        let check = |node: &NodeInfo| {
            if nominated.is_empty() {
                run_filters(&filters, &state, pod, node)
            } else {
                run_filters_with_nominated(profile, &filters, &state, pod, node, &nominated, snapshot)
            }
        };
        // A pod that preemption nominated to a node tries that node first.
        if let Some(info) = pod.nominated_node_name.and_then(|n| snapshot.get(n)) {
            let st = check(info);
            if st.code == Code::Error {
                return Err(ScheduleError::Plugin(st));
            }
            if st.is_success() {
                return Ok(ScheduleDecision { node: info.name(), evaluated: 1, feasible: 1 });
            }
        }
        let want = if self.profile.score.is_empty() {
            1
        } else {
            num_feasible_nodes_to_find(self.profile.percentage_of_nodes_to_score, n)
        };
        let out = &mut self.scratch.filter;
        find_feasible_nodes(self.pool.as_ref(), snapshot, self.next_start_node_index, want, &check, out);
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
        run_scoring(&self.profile, &mut state, pod, snapshot, &nodes, &mut self.scratch.scores)
            .map_err(ScheduleError::Plugin)?;
        let best = select_host(&self.scratch.scores.totals, &mut self.rng);
        Ok(ScheduleDecision { node: nodes[best].name(), evaluated, feasible })
    }

    fn assume_and_bind(&mut self, info: QueuedPodInfo, decision: ScheduleDecision) -> CycleOutcome {
        let pod = info.pod.clone();
        let assumed = pod.with_node(decision.node);
        if let Err(e) = self.cache.assume_pod(&assumed) {
            self.requeue(info);
            return CycleOutcome::BindFailed { pod, error: e.to_string() };
        }
        if let Some(n) = self.queue.nominator() {
            n.delete(&pod);
        }
        let mut state = CycleState::new();
        for (i, r) in self.profile.reserve.iter().enumerate() {
            let st = r.reserve(&mut state, &assumed, decision.node);
            if !st.is_success() {
                for done in self.profile.reserve[..=i].iter().rev() {
                    done.unreserve(&mut state, &assumed, decision.node);
                }
                return self.unwind_binding(info, &assumed, st.to_string());
            }
        }
        match self.binder.bind(&assumed, decision.node) {
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
        self.requeue(info);
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

#[cfg(test)]
mod tests;
