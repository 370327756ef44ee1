//! The in-memory cluster that plays the API server, the kubelets and the informers for tests
//! and the `ksched` harness: it implements the core's [`ClusterApi`], admits pods (priority
//! admission) and keeps PodDisruptionBudget status (the disruption controller).
//!
//! **Lifetimes.** A bound pod with a run duration (`PodData::run_duration`) or
//! `activeDeadlineSeconds` ends on the clock: its run starts when it is bound (or, for a pod
//! bound before the run, when `start_runs` is called), and when the sooner of the two passes,
//! `tick` takes it off its node (phase Succeeded, or Failed with DeadlineExceeded) and the
//! queue hears that an assigned pod went, as it would from the informer.
//!
//! **Pod events.** Every pod created ([`PodEvent::Created`]) and every way a pod leaves
//! (its run ended, deleted, evicted, preempted, its node deleted: [`PodEvent::Gone`]) is
//! logged for whoever watches ([`InMemoryCluster::watch_pods`]): the workload controllers
//! replace or count their pods from it, a replay follows every pod. Nothing is logged while
//! nobody watches.
//!
//! **Evictions** ([`InMemoryCluster::evict`]) follow the Eviction API: a pod that a
//! PodDisruptionBudget covering it allows no disruption for is refused, as is a pod covered by
//! more than one budget; an allowed one is deleted with its grace period.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::admission::admit_pod_priority;
use crate::disruption::refresh_pdb_status_scaled;

use ksched_engine::api::{Node, Pod, PodUid, PodVolumeBindings, Sym, Taint, TaintEffect};
use ksched_engine::cache::{Cache, CacheError};
use ksched_engine::cluster::{ApiError, BindError, ClusterApi};
use ksched_engine::framework::events::{ActionType, Event, EventResource};
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::sync::{lock, Mutex};
use ksched_engine::util::rng::Rng;
use ksched_engine::util::time::{Clock, SystemClock, Timestamp};

/// A pod could not be created.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CreateError {
    #[error(transparent)]
    Admission(#[from] ksched_engine::api::AdmissionError),
    #[error(transparent)]
    Queue(#[from] ksched_engine::queue::QueueError),
    /// A pod created bound could not be added (already there, or its node unknown).
    #[error("{0}")]
    Cache(String),
}

/// The taint the node lifecycle controller keeps on a cordoned node.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// How long a bound pod runs and how its run ends: the sooner of its run duration
/// (Succeeded) and `activeDeadlineSeconds` (Failed, DeadlineExceeded); `None` when it has
/// neither (it runs until deleted).
pub fn run_end(pod: &Pod) -> Option<(Duration, PodExit)> {
    let deadline = pod.active_deadline_seconds.map(|s| Duration::from_secs(s.max(0) as u64));
    match (pod.run_duration, deadline) {
        (None, None) => None,
        (Some(d), None) => Some((d, PodExit::Succeeded)),
        (None, Some(d)) => Some((d, PodExit::DeadlineExceeded)),
        (Some(r), Some(d)) if r <= d => Some((r, PodExit::Succeeded)),
        (Some(_), Some(d)) => Some((d, PodExit::DeadlineExceeded)),
    }
}

/// Why a pod left the cluster (or, for a pending pod, the queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PodExit {
    /// Its run duration passed: phase Succeeded.
    Succeeded,
    /// `activeDeadlineSeconds` passed first: phase Failed, reason DeadlineExceeded.
    DeadlineExceeded,
    /// Deleted through the API (a trace, a scale-down, a Job's end).
    Deleted,
    /// Evicted (a drain).
    Evicted,
    /// Deleted as a preemption victim.
    Preempted,
    /// Its node was deleted and the pod garbage collector deleted it.
    NodeDeleted,
}

impl PodExit {
    /// The pod's phase once gone: Succeeded, or Failed (everything else: a deleted pod's
    /// controller treats it as gone, a Job as failed when it did not succeed).
    pub fn succeeded(self) -> bool {
        self == PodExit::Succeeded
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PodExit::Succeeded => "succeeded",
            PodExit::DeadlineExceeded => "deadline_exceeded",
            PodExit::Deleted => "deleted",
            PodExit::Evicted => "evicted",
            PodExit::Preempted => "preempted",
            PodExit::NodeDeleted => "node_deleted",
        }
    }
}

/// A pod that left: the pod as it was last (bound pods with their node), why, and when (the
/// end of its grace period for a graceful deletion).
#[derive(Clone, Debug)]
pub struct PodGone {
    pub pod: Pod,
    pub exit: PodExit,
    pub at: Timestamp,
}

/// What happened to a pod, as the pod event log tells it.
#[derive(Clone, Debug)]
pub enum PodEvent {
    /// Created (admitted); bound already when its creator set `spec.nodeName`.
    Created {
        pod: Pod,
        at: Timestamp,
    },
    /// A bound pod's graceful deletion started: it keeps its node until its grace period ends
    /// (then `Gone`). Controllers that replace pods marked for deletion (ReplicaSets, Jobs)
    /// replace it now.
    Terminating(PodGone),
    Gone(PodGone),
}

/// A watcher's place in the pod event log ([`InMemoryCluster::watch_pods`]).
#[derive(Debug)]
pub struct PodWatch(usize);

/// Why an eviction was refused (the Eviction API's answers).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum EvictionError {
    /// 429: a budget covering the pod allows no disruption now.
    #[error("Cannot evict pod as it would violate the pod's disruption budget {budget} (disruptionsAllowed 0)")]
    Budget { budget: String },
    /// 500: upstream refuses a pod more than one budget covers.
    #[error(
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support ({budgets})"
    )]
    ManyBudgets { budgets: String },
    /// 404.
    #[error("pod {pod} not found")]
    NotFound { pod: String },
}

/// Counts of what the in-memory cluster did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterStats {
    pub bound: u64,
    /// Victims deleted (marked terminating or removed at once).
    pub victims_deleted: u64,
    /// Terminating pods whose grace period ran out and that left their node.
    pub terminated: u64,
    pub nominations_set: u64,
    pub nominations_cleared: u64,
    /// Pods whose run ended (run duration or active deadline).
    pub runs_ended: u64,
    pub evicted: u64,
    pub evictions_refused: u64,
}

#[derive(Default)]
struct State {
    /// Terminating pods by (end of grace period, arrival order): soonest first, with why they
    /// are deleted.
    terminating: BTreeMap<(Timestamp, u64), (Pod, PodExit)>,
    /// Running pods with a lifetime by (end of run, arrival order), with how the run ends.
    runs: BTreeMap<(Timestamp, u64), (Pod, PodExit)>,
    /// Each running pod's key in `runs`.
    run_of: HashMap<PodUid, (Timestamp, u64)>,
    seq: u64,
    /// The pod event log: `exits[i]` is event number `exits_base + i`; trimmed to what every
    /// watcher has read.
    exits: VecDeque<PodEvent>,
    exits_base: usize,
    /// Each watcher's next exit number (`usize::MAX`: a dropped slot).
    watchers: Vec<usize>,
    /// The scale of workload controllers as their controllers report it: (namespace, kind,
    /// name) → replicas, for the disruption controller's expected count.
    scales: HashMap<(Sym, Sym, Sym), i32>,
    /// Nodes `add_node` added, in order (the node informer's Add events, for controllers
    /// that react to new nodes: `nodes_added_since`).
    added_nodes: Vec<Sym>,
    stats: ClusterStats,
}

/// An in-memory cluster. Bindings, deletions and node changes reach the cache at once, as
/// informer events would; with a queue attached they reach the queue as cluster events too
/// (a deleted bound pod, a node added, updated or removed, a storage object changed; an
/// updated nomination updates the queued pod and the nominator).
/// Terminating pods leave their node when `tick` finds their grace period over on the clock.
pub struct InMemoryCluster {
    cache: Arc<Cache>,
    queue: Option<Arc<dyn SchedulingQueue>>,
    /// The scheduler names the queue's scheduler has profiles for; a pod naming another
    /// scheduler is not queued (upstream's scheduler ignores it). Empty: every pod is.
    scheduler_names: Vec<Sym>,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Draws the random parts of generated names (template claims' suffixes), seeded by the
    /// run's seed (`with_name_seed`).
    names: Mutex<Rng>,
}

/// Mixed into the run's seed for the cluster's name RNG, so its draws are not the scheduler's.
const NAME_SEED_MIX: u64 = 0x636c_6169_6d73_2d31;

impl InMemoryCluster {
    /// A cluster over `cache` with the system clock and no queue.
    pub fn new(cache: Arc<Cache>) -> InMemoryCluster {
        InMemoryCluster {
            cache,
            queue: None,
            scheduler_names: Vec::new(),
            clock: Arc::new(SystemClock::new()),
            state: Mutex::new(State::default()),
            names: Mutex::new(Rng::seed(NAME_SEED_MIX)),
        }
    }

    /// Seeds the draws of generated names (the random suffixes of template claims) from
    /// `seed`: the same seed and input give the same names.
    pub fn with_name_seed(self, seed: u64) -> InMemoryCluster {
        *lock(&self.names) = Rng::seed(seed ^ NAME_SEED_MIX);
        self
    }

    /// Sends pod events to `queue` too.
    pub fn with_queue(mut self, queue: Arc<dyn SchedulingQueue>) -> InMemoryCluster {
        self.queue = Some(queue);
        self
    }

    /// Queues only pods whose `spec.schedulerName` is one of `names` (the scheduler's
    /// profiles).
    pub fn with_scheduler_names(mut self, names: Vec<Sym>) -> InMemoryCluster {
        self.scheduler_names = names;
        self
    }

    /// Whether the scheduler takes pods of this `spec.schedulerName`.
    pub fn schedules(&self, scheduler_name: Sym) -> bool {
        self.scheduler_names.is_empty() || self.scheduler_names.contains(&scheduler_name)
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> InMemoryCluster {
        self.clock = clock;
        self
    }

    pub fn stats(&self) -> ClusterStats {
        lock(&self.state).stats
    }

    /// A pod is created: priority admission (its PriorityClass, or the global default, sets
    /// its priority and preemption policy), then into the scheduling queue unless another
    /// scheduler's (`with_scheduler_names`). Returns the pod as admitted.
    pub fn create_pod(&self, pod: Pod) -> Result<Pod, CreateError> {
        let pod = if pod.resource_claims.is_empty() {
            pod
        } else {
            let (pod, made) = {
                let mut names = lock(&self.names);
                self.cache.edit_objects(|o| crate::dra::make_pod_claims(o, &pod, &mut names))
            };
            self.claims_changed(made);
            pod
        };
        let admitted = admit_pod_priority(&self.cache.objects(), &pod)?;
        if let Some(q) = self.queue.as_ref().filter(|_| self.schedules(admitted.scheduler_name)) {
            q.add(admitted.clone())?;
        }
        let at = self.clock.now();
        Self::log(&mut lock(&self.state), || PodEvent::Created { pod: admitted.clone(), at });
        Ok(admitted)
    }

    /// Pods still terminating.
    pub fn num_terminating(&self) -> usize {
        lock(&self.state).terminating.len()
    }

    /// When the next terminating pod's grace period or running pod's run ends.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        let s = lock(&self.state);
        let first = |m: &BTreeMap<(Timestamp, u64), (Pod, PodExit)>| m.first_key_value().map(|(&(t, _), _)| t);
        [first(&s.terminating), first(&s.runs)].into_iter().flatten().min()
    }

    /// Removes every terminating pod whose grace period has ended by now and every running
    /// pod whose run has; returns how many.
    pub fn tick(&self) -> usize {
        let now = self.clock.now();
        let mut due = Vec::new();
        let mut ended = Vec::new();
        {
            let mut s = lock(&self.state);
            while s.terminating.first_key_value().is_some_and(|(&(t, _), _)| t <= now) {
                if let Some(((t, _), (p, exit))) = s.terminating.pop_first() {
                    due.push((p, exit, t));
                }
            }
            while s.runs.first_key_value().is_some_and(|(&(t, _), _)| t <= now) {
                if let Some(((t, _), (p, exit))) = s.runs.pop_first() {
                    s.run_of.remove(&p.uid);
                    ended.push((p, exit, t));
                }
            }
            s.stats.terminated += due.len() as u64;
            s.stats.runs_ended += ended.len() as u64;
        }
        for (p, exit, t) in &due {
            // Already gone (deleted twice) is fine: the cluster's answer is the same.
            let current = self.cache.get_pod(p).unwrap_or_else(|| p.clone());
            let _ = self.cache.remove_pod(&current);
            self.pod_gone_after_removal(&current, *exit, *t);
        }
        for (p, exit, t) in &ended {
            let Some(current) = self.cache.get_pod(p) else { continue };
            if self.cache.remove_pod(&current).is_ok() {
                self.pod_gone_after_removal(&current, *exit, *t);
            }
        }
        due.len() + ended.len()
    }

    /// The claim controller's part when a pod goes (`dra::release_pod_claims`); parked pods
    /// hear of the claims that changed.
    fn release_claims(&self, pod: &Pod) {
        if pod.resource_claims.is_empty() {
            return;
        }
        let changes = self.cache.edit_objects(|o| crate::dra::release_pod_claims(o, pod));
        self.claims_changed(changes);
    }

    /// The resourceclaim controller once ResourceClaimTemplates were added: each pending pod
    /// waiting for a claim from a template that now exists gets it, its status records it, and
    /// the queue hears the pod's update (DynamicResources' hint then lets the pod in). Returns
    /// how many pods got claims.
    pub fn claim_templates_added(&self) -> usize {
        let Some(q) = &self.queue else { return 0 };
        let mut done = 0;
        for pod in q.pending_pods() {
            if !crate::dra::can_make_claims(&self.cache.objects(), &pod) {
                continue;
            }
            let (updated, made) = {
                let mut names = lock(&self.names);
                self.cache.edit_objects(|o| crate::dra::make_pod_claims(o, &pod, &mut names))
            };
            self.claims_changed(made);
            if q.update(&pod, updated).is_ok() {
                done += 1;
            }
        }
        done
    }

    /// ResourceClaims changed (made, written, released, or by a caller that changed the
    /// cluster's claims): the queue hears each change with the claim as it was and is, as
    /// upstream's claim informer reports it to DynamicResources' queueing hint.
    pub fn claims_changed(&self, changes: Vec<crate::dra::ClaimChange>) {
        if let Some(q) = &self.queue {
            for c in changes {
                q.on_event(&Event::resource_claim(c.old, c.new));
            }
        }
    }

    /// After a bound pod left the cache: its run (if any) is over, the budgets recount, parked
    /// pods get a retry, and the exit is logged.
    fn pod_gone_after_removal(&self, pod: &Pod, exit: PodExit, at: Timestamp) {
        self.pods_changed(pod);
        self.release_claims(pod);
        if let Some(q) = &self.queue {
            q.assigned_pod_deleted(pod);
        }
        let mut s = lock(&self.state);
        if let Some(key) = s.run_of.remove(&pod.uid) {
            s.runs.remove(&key);
        }
        Self::log_exit(&mut s, pod, exit, at);
    }

    fn log_exit(s: &mut State, pod: &Pod, exit: PodExit, at: Timestamp) {
        Self::log(s, || PodEvent::Gone(PodGone { pod: pod.clone(), exit, at }));
    }

    fn log(s: &mut State, event: impl FnOnce() -> PodEvent) {
        if s.watchers.iter().any(|&w| w != usize::MAX) {
            s.exits.push_back(event());
        }
    }

    /// A bound pod is deleted at once (no grace period): out of the cache, and the queue
    /// hears of it. `false` if the cache did not hold it.
    pub fn delete_bound_pod(&self, pod: &Pod) -> bool {
        let Some(current) = self.cache.get_pod(pod) else { return false };
        if self.cache.remove_pod(&current).is_err() {
            return false;
        }
        self.pod_gone_after_removal(&current, PodExit::Deleted, self.clock.now());
        true
    }

    /// Starts watching pods: every pod event from now on is kept until this watcher has read
    /// it (`pod_events`).
    pub fn watch_pods(&self) -> PodWatch {
        let mut s = lock(&self.state);
        let next = s.exits_base + s.exits.len();
        match s.watchers.iter().position(|&w| w == usize::MAX) {
            Some(i) => {
                s.watchers[i] = next;
                PodWatch(i)
            }
            None => {
                s.watchers.push(next);
                PodWatch(s.watchers.len() - 1)
            }
        }
    }

    /// Stops a watcher; the events only it had not read are dropped.
    pub fn unwatch_pods(&self, w: PodWatch) {
        let mut s = lock(&self.state);
        if let Some(slot) = s.watchers.get_mut(w.0) {
            *slot = usize::MAX;
        }
        Self::trim_exits(&mut s);
    }

    /// The pod events logged since this watcher last read, oldest first. Cheap when there are
    /// none.
    pub fn pod_events(&self, w: &mut PodWatch) -> Vec<PodEvent> {
        let mut s = lock(&self.state);
        let Some(&next) = s.watchers.get(w.0) else { return Vec::new() };
        let end = s.exits_base + s.exits.len();
        if next >= end {
            return Vec::new();
        }
        let from = next - s.exits_base;
        let out: Vec<PodEvent> = s.exits.range(from..).cloned().collect();
        s.watchers[w.0] = end;
        Self::trim_exits(&mut s);
        out
    }

    fn trim_exits(s: &mut State) {
        let min = s.watchers.iter().copied().filter(|&w| w != usize::MAX).min();
        let keep_from = min.unwrap_or(s.exits_base + s.exits.len());
        while s.exits_base < keep_from && s.exits.pop_front().is_some() {
            s.exits_base += 1;
        }
    }

    /// Records the scale (desired replicas) of a workload controller, for the disruption
    /// controller's expected count (`disruption::refresh_pdb_status_scaled`).
    pub fn set_scale(&self, namespace: Sym, kind: Sym, name: Sym, replicas: i32) {
        lock(&self.state).scales.insert((namespace, kind, name), replicas);
    }

    /// Starts the runs of pods bound before the simulation (a manifest's running pods): each
    /// with a lifetime ends that long after now.
    pub fn start_runs<'a>(&self, pods: impl IntoIterator<Item = &'a Pod>) {
        let now = self.clock.now();
        let mut s = lock(&self.state);
        for p in pods {
            Self::start_run(&mut s, p, now);
        }
    }

    /// Schedules the end of `pod`'s run (started at `now`) when it has a lifetime.
    fn start_run(s: &mut State, pod: &Pod, now: Timestamp) {
        let Some((d, exit)) = run_end(pod) else { return };
        s.seq += 1;
        let key = (now.saturating_add(d), s.seq);
        if let Some(old) = s.run_of.insert(pod.uid.clone(), key) {
            s.runs.remove(&old);
        }
        s.runs.insert(key, (pod.clone(), exit));
    }

    /// A pod created already bound (`spec.nodeName` set by its creator: a static pod's mirror,
    /// a recorded binding): into the cache as the informer would add it, its run started.
    pub fn add_bound_pod(&self, pod: Pod) -> Result<Pod, CreateError> {
        let admitted = admit_pod_priority(&self.cache.objects(), &pod)?;
        self.cache.add_pod(&admitted).map_err(|e| CreateError::Cache(e.to_string()))?;
        if let Some(q) = &self.queue {
            q.assigned_pod_added(&admitted);
        }
        self.pods_changed(&admitted);
        let now = self.clock.now();
        let mut s = lock(&self.state);
        Self::start_run(&mut s, &admitted, now);
        Self::log(&mut s, || PodEvent::Created { pod: admitted.clone(), at: now });
        Ok(admitted)
    }

    /// Deletes a pod through the API: a bound pod gracefully (with `grace` seconds, or its
    /// own `terminationGracePeriodSeconds`), a pending one at once (out of the queue; the
    /// caller knows it exists). Returns whether it was bound.
    pub fn delete_pod(&self, pod: &Pod, grace: Option<i64>, exit: PodExit) -> bool {
        if let Some(current) = self.cache.get_pod(pod) {
            let grace = grace.unwrap_or(current.termination_grace_period_seconds);
            let _ = self.delete_bound(&current, grace, exit, false);
            return true;
        }
        if let Some(q) = &self.queue {
            q.delete(pod);
        }
        self.release_claims(pod);
        let mut s = lock(&self.state);
        Self::log_exit(&mut s, pod, exit, self.clock.now());
        false
    }

    /// Deletes a bound pod: marked terminating until its grace period ends (`tick`), or gone
    /// at once when `grace` is 0.
    fn delete_bound(&self, current: &Pod, grace: i64, exit: PodExit, preempted: bool) -> Result<(), CacheError> {
        if current.is_terminating() {
            return Ok(());
        }
        let now = self.clock.now();
        let grace = grace.max(0) as u64;
        if grace == 0 {
            self.cache.remove_pod(current)?;
            self.pod_gone_after_removal(current, exit, now);
            return Ok(());
        }
        let mut marked = current.clone();
        marked.deletion_timestamp = Some(now);
        marked.preempted_by_scheduler = preempted;
        self.cache.update_pod(current, &marked)?;
        self.pods_changed(&marked);
        if let Some(q) = &self.queue {
            q.assigned_pod_updated(current, &marked);
        }
        let mut s = lock(&self.state);
        Self::log(&mut s, || PodEvent::Terminating(PodGone { pod: marked.clone(), exit, at: now }));
        // A terminating pod's run no longer ends by itself: its deletion does.
        if let Some(key) = s.run_of.remove(&current.uid) {
            s.runs.remove(&key);
        }
        s.seq += 1;
        let seq = s.seq;
        s.terminating.insert((now.saturating_add(Duration::from_secs(grace)), seq), (marked, exit));
        Ok(())
    }

    /// The Eviction API on a bound pod: refused when a PodDisruptionBudget covering it allows
    /// no disruption (or more than one covers it); otherwise deleted with its grace period.
    /// A pod already terminating is accepted and left as it is.
    pub fn evict(&self, pod: &Pod) -> Result<(), EvictionError> {
        let current = self.cache.get_pod(pod).ok_or_else(|| EvictionError::NotFound { pod: pod.key() })?;
        if current.is_terminating() {
            return Ok(());
        }
        let objects = self.cache.objects();
        let budgets: Vec<_> = objects.pdbs.iter().filter(|b| b.selects(&current)).collect();
        let refused = match budgets.as_slice() {
            [] => None,
            [b] if b.disruptions_allowed > 0 => None,
            [b] => Some(EvictionError::Budget { budget: format!("{}/{}", b.namespace, b.name) }),
            many => Some(EvictionError::ManyBudgets {
                budgets: many.iter().map(|b| format!("{}/{}", b.namespace, b.name)).collect::<Vec<_>>().join(", "),
            }),
        };
        if let Some(e) = refused {
            lock(&self.state).stats.evictions_refused += 1;
            return Err(e);
        }
        let grace = current.termination_grace_period_seconds;
        self.delete_bound(&current, grace, PodExit::Evicted, false)
            .map_err(|_| EvictionError::NotFound { pod: pod.key() })?;
        lock(&self.state).stats.evicted += 1;
        Ok(())
    }

    /// `kubectl cordon` / `uncordon`: sets `spec.unschedulable`, with the
    /// `node.kubernetes.io/unschedulable:NoSchedule` taint the node lifecycle controller adds
    /// to (and removes from) a cordoned node. `false` when the node is unknown.
    pub fn set_unschedulable(&self, name: Sym, unschedulable: bool) -> Result<bool, CacheError> {
        let Some(old) = self.cache.get_node(name) else { return Ok(false) };
        let mut node = Node::clone(&old);
        node.unschedulable = unschedulable;
        let key = Sym::new(UNSCHEDULABLE_TAINT);
        node.taints.retain(|t| !(t.key == key && t.effect == TaintEffect::NoSchedule));
        if unschedulable {
            node.taints.push(Taint { key, value: Sym::EMPTY, effect: TaintEffect::NoSchedule });
        }
        if node == *old {
            return Ok(true);
        }
        self.update_node(node)?;
        Ok(true)
    }

    /// A node is deleted: the pod garbage collector deletes the pods bound to it (at once),
    /// then the node goes. Returns the pods deleted.
    pub fn delete_node(&self, name: Sym) -> Result<Vec<Pod>, CacheError> {
        let snapshot = self.cache.update_snapshot();
        let pods: Vec<Pod> = snapshot.get(name).map(|n| n.pods().iter().cloned().collect()).unwrap_or_default();
        let now = self.clock.now();
        for p in &pods {
            if self.cache.remove_pod(p).is_ok() {
                self.pod_gone_after_removal(p, PodExit::NodeDeleted, now);
            }
        }
        {
            // Pods terminating there are gone too.
            let mut s = lock(&self.state);
            s.terminating.retain(|_, (p, _)| p.node_name != Some(name));
        }
        self.remove_node(name)?;
        Ok(pods)
    }

    /// The node informer's Add: into the cache, and the queue hears of it.
    pub fn add_node(&self, node: Node) -> Result<(), CacheError> {
        self.cache.add_node(node.clone())?;
        lock(&self.state).added_nodes.push(node.name);
        if let Some(q) = &self.queue {
            q.node_added(&node);
        }
        Ok(())
    }

    /// The nodes `add_node` added after the first `seen` of them, and how many it added in
    /// all (pass that as `seen` next time). Cheap when nothing was added.
    pub fn nodes_added_since(&self, seen: usize) -> (Vec<Sym>, usize) {
        let s = lock(&self.state);
        (s.added_nodes.get(seen..).map(<[Sym]>::to_vec).unwrap_or_default(), s.added_nodes.len())
    }

    /// The node informer's Update: the queue hears what changed.
    pub fn update_node(&self, node: Node) -> Result<(), CacheError> {
        let old = self.cache.get_node(node.name);
        self.cache.update_node(node.clone())?;
        if let (Some(q), Some(old)) = (&self.queue, old) {
            q.node_updated(&old, &node);
        }
        Ok(())
    }

    /// The node informer's Delete.
    pub fn remove_node(&self, name: Sym) -> Result<(), CacheError> {
        let old = self.cache.get_node(name);
        self.cache.remove_node(name)?;
        if let (Some(q), Some(old)) = (&self.queue, old) {
            q.node_deleted(&old);
        }
        Ok(())
    }

    /// A storage object changed (the PV controller, a workload's storage templates): the
    /// queue hears of it. `resource` is one of the storage kinds.
    pub fn storage_changed(&self, resource: EventResource, action: ActionType, name: &str) {
        if let Some(q) = &self.queue {
            q.on_event(&Event::storage(resource, action, name));
        }
    }

    /// The disruption controller: budgets selecting `pod` recount their allowance from the
    /// cluster's pods (nothing to do, and nothing read, when no budget selects it).
    fn pods_changed(&self, pod: &Pod) {
        let objects = self.cache.objects();
        if !objects.pdbs.iter().any(|b| b.selects(pod)) {
            return;
        }
        let snapshot = self.cache.update_snapshot();
        let pods: Vec<&Pod> = snapshot.iter().flat_map(|n| n.pods().iter()).collect();
        let scales = lock(&self.state).scales.clone();
        let scale_of = |ns: Sym, o: &ksched_engine::api::OwnerRef| scales.get(&(ns, o.kind, o.name)).copied();
        self.cache.edit_objects(|o| refresh_pdb_status_scaled(o, pods.iter().copied(), &scale_of));
    }
}

impl ClusterApi for InMemoryCluster {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
        let bound = pod.with_node(node);
        self.cache.add_pod(&bound).map_err(|e| BindError { pod: pod.key(), node, why: e.to_string() })?;
        {
            let mut s = lock(&self.state);
            s.stats.bound += 1;
            if bound.run_duration.is_some() || bound.active_deadline_seconds.is_some() {
                let now = self.clock.now();
                Self::start_run(&mut s, &bound, now);
            }
        }
        self.pods_changed(pod);
        Ok(())
    }

    fn delete_victim(&self, victim: &Pod) -> Result<(), ApiError> {
        let err = |why: String| ApiError { op: "delete", pod: victim.key(), why };
        let current = self.cache.get_pod(victim).ok_or_else(|| err("not found".into()))?;
        if current.is_terminating() {
            return Ok(());
        }
        lock(&self.state).stats.victims_deleted += 1;
        let grace = victim.termination_grace_period_seconds;
        self.delete_bound(&current, grace, PodExit::Preempted, true).map_err(|e| err(e.to_string()))
    }

    /// The PV controller and provisioners complete the bindings at once (`volumes`).
    fn bind_claims(&self, pod: &Pod, claims: &[ksched_engine::cluster::ClaimBinding]) -> Result<(), ApiError> {
        let changes = self.cache.edit_objects(|o| crate::dra::bind_claims(o, pod, claims)).map_err(|why| ApiError {
            op: "reserve claims of",
            pod: pod.key(),
            why,
        })?;
        self.claims_changed(changes);
        Ok(())
    }

    fn deallocate_claim(&self, pod: &Pod, claim: &ksched_engine::api::dra::ResourceClaim) -> Result<(), ApiError> {
        let change = self.cache.edit_objects(|o| crate::dra::deallocate_claim(o, claim)).map_err(|why| ApiError {
            op: "deallocate a claim for",
            pod: pod.key(),
            why,
        })?;
        self.claims_changed(vec![change]);
        Ok(())
    }

    fn bind_volumes(&self, pod: &Pod, bindings: &PodVolumeBindings) -> Result<(), ApiError> {
        self.cache.edit_objects(|o| crate::volumes::bind_pod_volumes(&mut o.storage, bindings)).map_err(|e| ApiError {
            op: "bind volumes of",
            pod: pod.key(),
            why: e.to_string(),
        })
    }

    fn set_nominated_node(&self, pod: &Pod, node: Option<Sym>) -> Result<(), ApiError> {
        {
            let mut s = lock(&self.state);
            match node {
                Some(_) => s.stats.nominations_set += 1,
                None => s.stats.nominations_cleared += 1,
            }
        }
        // The scheduler's informer ignores updates of a pod it has assumed (one about to be
        // bound: NominatedNodeNameForExpectation names its node before binding).
        if let Some(q) = self.queue.as_ref().filter(|_| !self.cache.is_assumed(pod)) {
            let mut updated = pod.clone();
            updated.nominated_node_name = node;
            q.update(pod, updated).map_err(|e| ApiError { op: "update", pod: pod.key(), why: e.to_string() })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksched_engine::api::{
        IntOrPercent, LabelSelector, Labels, Node, PodDisruptionBudget, PreemptionPolicy, PriorityClass,
        ResourceName::*,
    };
    use ksched_engine::queue::{PriorityQueue, QueueConfig, QueueLocation};
    use ksched_engine::util::time::MockClock;

    struct Fixture {
        cache: Arc<Cache>,
        queue: Arc<PriorityQueue>,
        clock: Arc<MockClock>,
        cluster: InMemoryCluster,
    }

    fn fixture() -> Fixture {
        let cache = Arc::new(Cache::new(Duration::ZERO));
        cache.add_node(Node::builder("n").resources(4000, 32 << 30, 110).build()).unwrap();
        let clock = Arc::new(MockClock::new(Timestamp::from_secs(10)));
        let queue = Arc::new(PriorityQueue::new(QueueConfig::new().with_clock(clock.clone())));
        let cluster = InMemoryCluster::new(cache.clone()).with_queue(queue.clone()).with_clock(clock.clone());
        Fixture { cache, queue, clock, cluster }
    }

    fn pod(name: &str, grace: i64) -> Pod {
        Pod::builder(name)
            .container("i", &[(Cpu, 1000)])
            .label("app", "web")
            .termination_grace_period_seconds(grace)
            .build()
    }

    #[test]
    fn a_victim_keeps_its_resources_until_its_grace_period_ends() {
        let f = fixture();
        let v = pod("v", 30);
        f.cluster.bind(&v, Sym::new("n")).unwrap();
        f.cluster.delete_victim(&v).unwrap();
        let held = f.cache.get_pod(&v).expect("still on the node while terminating");
        assert_eq!(held.deletion_timestamp, Some(Timestamp::from_secs(10)));
        assert!(held.is_terminating_by_preemption());
        assert_eq!(f.cache.update_snapshot().get(Sym::new("n")).unwrap().requested().milli_cpu, 1000);
        assert_eq!(f.cluster.next_deadline(), Some(Timestamp::from_secs(40)));
        // Deleting again changes nothing.
        f.cluster.delete_victim(&v).unwrap();
        assert_eq!(f.cluster.num_terminating(), 1);
        f.clock.set(Timestamp::from_secs(39));
        assert_eq!(f.cluster.tick(), 0);
        assert!(f.cache.get_pod(&v).is_some());
        f.clock.set(Timestamp::from_secs(40));
        assert_eq!(f.cluster.tick(), 1);
        assert!(f.cache.get_pod(&v).is_none());
        assert_eq!(f.cache.update_snapshot().get(Sym::new("n")).unwrap().requested().milli_cpu, 0);
        let st = f.cluster.stats();
        assert_eq!((st.bound, st.victims_deleted, st.terminated), (1, 1, 1));
        assert!(f.cache.check_invariants().is_empty());
    }

    #[test]
    fn a_victim_with_no_grace_period_goes_at_once_and_wakes_parked_pods() {
        let f = fixture();
        let v = pod("v", 0);
        f.cluster.bind(&v, Sym::new("n")).unwrap();
        let parked = pod("parked", 30);
        f.cluster.create_pod(parked.clone()).unwrap();
        let mut info = f.queue.try_pop().unwrap();
        info.unschedulable_plugins.push("NodeResourcesFit");
        f.queue.add_unschedulable_if_not_present(info).unwrap();
        assert_eq!(f.queue.location(&parked.uid), Some(QueueLocation::Unschedulable));
        f.cluster.delete_victim(&v).unwrap();
        assert!(f.cache.get_pod(&v).is_none());
        assert_eq!(f.cluster.num_terminating(), 0);
        assert_ne!(f.queue.location(&parked.uid), Some(QueueLocation::Unschedulable), "the deletion moved it");
        let missing = Pod::builder("ghost").build();
        let err = f.cluster.delete_victim(&missing).unwrap_err();
        assert_eq!(err.to_string(), "delete pod default/ghost: not found");
    }

    #[test]
    fn nominations_reach_the_queued_pod_and_the_nominator() {
        let f = fixture();
        let p = pod("p", 30);
        f.cluster.create_pod(p.clone()).unwrap();
        f.cluster.set_nominated_node(&p, Some(Sym::new("n"))).unwrap();
        let nominator = f.queue.nominator().unwrap();
        assert_eq!(nominator.nominated_node(&p.uid), Some(Sym::new("n")));
        let queued = f.queue.pending_pods().into_iter().find(|q| q.uid == p.uid).unwrap();
        assert_eq!(queued.nominated_node_name, Some(Sym::new("n")));
        f.cluster.set_nominated_node(&queued, None).unwrap();
        assert_eq!(nominator.nominated_node(&p.uid), None);
        let st = f.cluster.stats();
        assert_eq!((st.nominations_set, st.nominations_cleared), (1, 1));
    }

    #[test]
    fn created_pods_get_their_priority_from_classes_and_the_global_default() {
        let f = fixture();
        f.cache.edit_objects(|o| {
            o.upsert_priority_class(PriorityClass {
                name: Sym::new("batch"),
                value: 100,
                global_default: false,
                preemption_policy: PreemptionPolicy::Never,
            });
            o.upsert_priority_class(PriorityClass {
                name: Sym::new("default"),
                value: 7,
                global_default: true,
                preemption_policy: PreemptionPolicy::PreemptLowerPriority,
            });
        });
        let named = f.cluster.create_pod(Pod::builder("a").priority_class_name("batch").build()).unwrap();
        assert_eq!((named.priority, named.preemption_policy), (100, PreemptionPolicy::Never));
        let defaulted = f.cluster.create_pod(Pod::builder("b").build()).unwrap();
        assert_eq!(defaulted.priority, 7);
        let queued: Vec<i32> = f.queue.pending_pods().iter().map(|p| p.priority).collect();
        assert_eq!(queued.len(), 2);
        assert!(queued.contains(&100) && queued.contains(&7));
        let err = f.cluster.create_pod(Pod::builder("c").priority_class_name("nope").build()).unwrap_err();
        assert!(err.to_string().contains("spec.priorityClassName"), "{err}");
        assert_eq!(f.queue.num_pending(), 2, "a refused pod is not queued");
    }

    #[test]
    fn pdb_status_follows_binds_and_deletions() {
        let f = fixture();
        f.cache.edit_objects(|o| {
            let web = LabelSelector { match_labels: Labels::from_pairs([("app", "web")]), ..Default::default() };
            o.upsert_pdb(PodDisruptionBudget {
                min_available: Some(IntOrPercent::Int(1)),
                ..PodDisruptionBudget::new("default", "web", web)
            })
        });
        let allowed = |f: &Fixture| f.cache.objects().pdbs[0].disruptions_allowed;
        let (a, b) = (pod("a", 0), pod("b", 30));
        f.cluster.bind(&a, Sym::new("n")).unwrap();
        assert_eq!(allowed(&f), 0, "one healthy pod, one must stay");
        f.cluster.bind(&b, Sym::new("n")).unwrap();
        assert_eq!(allowed(&f), 1);
        f.cluster.delete_victim(&b).unwrap();
        assert_eq!(allowed(&f), 0, "a terminating pod is not healthy");
        f.cluster.delete_victim(&a).unwrap();
        assert_eq!(allowed(&f), 0);
    }

    /// The pods gone since the watcher last read.
    fn exits(f: &Fixture, w: &mut PodWatch) -> Vec<PodGone> {
        f.cluster
            .pod_events(w)
            .into_iter()
            .filter_map(|e| match e {
                PodEvent::Gone(g) => Some(g),
                PodEvent::Created { .. } | PodEvent::Terminating(_) => None,
            })
            .collect()
    }

    #[test]
    fn lifetimes_end_runs_on_the_clock_and_log_their_exits() {
        // (name, run duration, active deadline, want end after bind, want exit)
        type Case<'a> = (&'a str, Option<u64>, Option<i64>, Option<u64>, Option<PodExit>);
        let cases: [Case; 5] = [
            ("no lifetime runs on", None, None, None, None),
            ("run duration", Some(20), None, Some(20), Some(PodExit::Succeeded)),
            ("deadline first", Some(50), Some(30), Some(30), Some(PodExit::DeadlineExceeded)),
            ("run duration first", Some(10), Some(30), Some(10), Some(PodExit::Succeeded)),
            ("deadline alone", None, Some(5), Some(5), Some(PodExit::DeadlineExceeded)),
        ];
        for (name, run, deadline, want_end, want_exit) in cases {
            let f = fixture();
            let mut w = f.cluster.watch_pods();
            let mut b = Pod::builder("p").container("i", &[(Cpu, 1000)]);
            if let Some(r) = run {
                b = b.run_duration(Duration::from_secs(r));
            }
            if let Some(d) = deadline {
                b = b.active_deadline_seconds(d);
            }
            let p = b.build();
            f.cluster.bind(&p, Sym::new("n")).unwrap();
            let bound_at = f.clock.now();
            assert_eq!(
                f.cluster.next_deadline(),
                want_end.map(|e| bound_at.saturating_add(Duration::from_secs(e))),
                "{name}"
            );
            f.clock.set(bound_at.saturating_add(Duration::from_secs(100)));
            f.cluster.tick();
            let gone = exits(&f, &mut w);
            assert_eq!(gone.iter().map(|g| g.exit).next(), want_exit, "{name}");
            if let Some(e) = want_end {
                assert_eq!(gone[0].at, bound_at.saturating_add(Duration::from_secs(e)), "{name}: logged at its end");
                assert!(f.cache.get_pod(&p).is_none(), "{name}: off its node");
                assert_eq!(f.cluster.stats().runs_ended, 1, "{name}");
            } else {
                assert!(f.cache.get_pod(&p).is_some(), "{name}: still running");
            }
            assert!(exits(&f, &mut w).is_empty(), "{name}: read once");
            assert!(f.cache.check_invariants().is_empty(), "{name}");
        }
    }

    #[test]
    fn a_deleted_running_pod_does_not_end_again_and_wakes_parked_pods() {
        let f = fixture();
        let mut w = f.cluster.watch_pods();
        let running = Pod::builder("r").container("i", &[(Cpu, 3000)]).run_duration(Duration::from_secs(60)).build();
        f.cluster.bind(&running, Sym::new("n")).unwrap();
        let parked = pod("parked", 30);
        f.cluster.create_pod(parked.clone()).unwrap();
        let mut info = f.queue.try_pop().unwrap();
        info.unschedulable_plugins.push("NodeResourcesFit");
        f.queue.add_unschedulable_if_not_present(info).unwrap();
        // Deleted with a 10 s grace period: it ends when that ends, not when its run would.
        assert!(f.cluster.delete_pod(&running, Some(10), PodExit::Deleted));
        assert_eq!(f.cluster.next_deadline(), Some(Timestamp::from_secs(20)));
        f.clock.set(Timestamp::from_secs(20));
        assert_eq!(f.cluster.tick(), 1);
        assert_ne!(f.queue.location(&parked.uid), Some(QueueLocation::Unschedulable), "the deletion moved it");
        assert_eq!(f.cluster.next_deadline(), None, "its run's end was cancelled");
        let gone = exits(&f, &mut w);
        assert_eq!(
            gone.iter().map(|g| (g.pod.key(), g.exit)).collect::<Vec<_>>(),
            [("default/r".into(), PodExit::Deleted)]
        );
        // A pending pod deleted leaves the queue and is logged too.
        assert!(!f.cluster.delete_pod(&parked, None, PodExit::Deleted));
        assert_eq!(f.queue.location(&parked.uid), None);
        assert_eq!(exits(&f, &mut w).len(), 1);
    }

    #[test]
    fn exit_log_keeps_entries_until_every_watcher_read_them() {
        let f = fixture();
        let come_and_go = |f: &Fixture, name: &str| {
            let p = f.cluster.create_pod(pod(name, 0)).unwrap();
            f.queue.delete(&p);
            f.cluster.bind(&p, Sym::new("n")).unwrap();
            assert!(f.cluster.delete_bound_pod(&p));
        };
        come_and_go(&f, "before");
        let mut a = f.cluster.watch_pods();
        come_and_go(&f, "x");
        let mut b = f.cluster.watch_pods();
        come_and_go(&f, "y");
        let names = |v: Vec<PodEvent>| {
            v.into_iter()
                .map(|e| match e {
                    PodEvent::Created { pod, .. } => format!("+{}", pod.name),
                    PodEvent::Terminating(g) => format!("~{}", g.pod.name),
                    PodEvent::Gone(g) => format!("-{}", g.pod.name),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(names(f.cluster.pod_events(&mut a)), ["+x", "-x", "+y", "-y"], "nothing from before the watch");
        assert_eq!(names(f.cluster.pod_events(&mut b)), ["+y", "-y"]);
        come_and_go(&f, "z");
        f.cluster.unwatch_pods(a);
        assert_eq!(names(f.cluster.pod_events(&mut b)), ["+z", "-z"]);
        assert!(lock(&f.cluster.state).exits.is_empty(), "read by all: trimmed");
    }

    #[test]
    fn evictions_follow_the_budgets() {
        let f = fixture();
        let web = LabelSelector { match_labels: Labels::from_pairs([("app", "web")]), ..Default::default() };
        f.cache.edit_objects(|o| {
            o.upsert_pdb(PodDisruptionBudget {
                min_available: Some(IntOrPercent::Int(1)),
                ..PodDisruptionBudget::new("default", "web", web.clone())
            })
        });
        let mut w = f.cluster.watch_pods();
        let (a, b) = (pod("a", 30), pod("b", 0));
        f.cluster.bind(&a, Sym::new("n")).unwrap();
        let err = f.cluster.evict(&a).unwrap_err();
        assert_eq!(err, EvictionError::Budget { budget: "default/web".into() }, "one pod, one must stay");
        assert!(err.to_string().contains("disruption budget"), "{err}");
        f.cluster.bind(&b, Sym::new("n")).unwrap();
        f.cluster.evict(&b).unwrap();
        assert!(f.cache.get_pod(&b).is_none(), "no grace period: gone at once");
        assert!(matches!(f.cluster.evict(&a), Err(EvictionError::Budget { .. })), "allowance spent");
        // A second budget over the same pods: upstream refuses outright.
        f.cache.edit_objects(|o| o.upsert_pdb(PodDisruptionBudget::new("default", "web2", web)));
        assert!(matches!(f.cluster.evict(&a), Err(EvictionError::ManyBudgets { .. })));
        let st = f.cluster.stats();
        assert_eq!((st.evicted, st.evictions_refused), (1, 3));
        assert_eq!(exits(&f, &mut w).iter().map(|g| g.exit).collect::<Vec<_>>(), [PodExit::Evicted]);
        let missing = f.cluster.evict(&pod("ghost", 0)).unwrap_err();
        assert_eq!(missing, EvictionError::NotFound { pod: "default/ghost".into() });
    }

    #[test]
    fn cordon_taints_and_delete_node_takes_its_pods() {
        let f = fixture();
        let mut w = f.cluster.watch_pods();
        assert!(f.cluster.set_unschedulable(Sym::new("n"), true).unwrap());
        let n = f.cache.get_node(Sym::new("n")).unwrap();
        assert!(n.unschedulable);
        assert_eq!(n.taints.iter().filter(|t| t.key.as_str() == UNSCHEDULABLE_TAINT).count(), 1);
        assert!(f.cluster.set_unschedulable(Sym::new("n"), true).unwrap(), "twice is once");
        assert_eq!(f.cache.get_node(Sym::new("n")).unwrap().taints.len(), 1);
        f.cluster.set_unschedulable(Sym::new("n"), false).unwrap();
        let n = f.cache.get_node(Sym::new("n")).unwrap();
        assert!(!n.unschedulable && n.taints.is_empty());
        assert!(!f.cluster.set_unschedulable(Sym::new("nope"), true).unwrap());
        let (a, b) = (pod("a", 0), pod("b", 30));
        f.cluster.bind(&a, Sym::new("n")).unwrap();
        f.cluster.bind(&b, Sym::new("n")).unwrap();
        f.cluster.delete_pod(&b, None, PodExit::Deleted);
        let deleted = f.cluster.delete_node(Sym::new("n")).unwrap();
        assert_eq!(deleted.len(), 2);
        assert!(f.cache.get_node(Sym::new("n")).is_none());
        assert_eq!(f.cluster.num_terminating(), 0);
        let exits: Vec<PodExit> = exits(&f, &mut w).iter().map(|g| g.exit).collect();
        assert_eq!(exits, [PodExit::NodeDeleted, PodExit::NodeDeleted]);
        assert!(f.cache.check_invariants().is_empty());
    }

    #[test]
    fn add_bound_pod_starts_its_run_and_is_seen_by_the_queue() {
        let f = fixture();
        let p = Pod::builder("s").node_name("n").run_duration(Duration::from_secs(5)).build();
        let admitted = f.cluster.add_bound_pod(p.clone()).unwrap();
        assert_eq!(admitted.node_name, Some(Sym::new("n")));
        assert!(f.cache.get_pod(&p).is_some());
        assert_eq!(f.cluster.next_deadline(), Some(Timestamp::from_secs(15)));
        let err = f.cluster.add_bound_pod(p).unwrap_err();
        assert!(matches!(err, CreateError::Cache(_)), "{err}");
    }
}
