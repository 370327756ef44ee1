//! Soak: a long run of the whole scheduler under churn and injected faults, checking after
//! every step that nothing was lost and nothing counted twice.
//!
//! A `Soak` owns a cache, a PriorityQueue, a [`FaultyCluster`] and a scheduler on one mock
//! clock. Each `step` creates and deletes pods (keeping the population near a target),
//! sometimes adds, relabels, taints or removes a node, runs scheduling cycles, moves the
//! clock (informer events, grace periods, assumed-pod expiry and relists happen), then
//! checks:
//!
//! * the cache's invariants (requested = sum of its pods' requests, every assumed pod in the
//!   pod states, ...), the queue's (heaps, no pod in two sub-queues) and the nominator's;
//! * the ledger: every pod the queue holds exists and is unbound (nothing resurrected, nothing
//!   both bound and pending); every existing unbound pod is in the queue (else it is lost);
//!   every nominated pod is pending; every pod the cache holds is on the node the cluster
//!   bound it to, and no pending pod is held by the cache.
//!
//! `finish` turns the faults off, lets every event and grace period run out, relists, and
//! checks that the cache holds exactly the cluster's bound pods and that every created pod is
//! exactly one of bound, pending (in the queue) or deleted. Everything is drawn from the seed:
//! the same seed and step count replay the same run.

pub mod faults;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::observe::Counts;
use crate::simulation::{RunOptions, Simulation, Until};
pub use faults::{FaultRates, FaultStats, FaultyCluster};
use ksched_engine::api::{
    Affinity, LabelSelector, Labels, Node, Pod, PodAffinity, PodAffinityTerm, PodUid, ResourceName, Sym, Taint,
    TaintEffect, Toleration, TolerationOp, LABEL_HOSTNAME, LABEL_ZONE,
};
use ksched_engine::cache::{Cache, PodStateName};
use ksched_engine::framework::events::QueueingHints;
use ksched_engine::framework::Profile;
use ksched_engine::queue::{PriorityQueue, QueueConfig, QueueLocation, SchedulingQueue};
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::util::hash::{FxHashMap, FxHashSet};
use ksched_engine::util::rng::Rng;
use ksched_engine::util::time::{Clock, MockClock, Timestamp};

const POOL: &str = "soak.ksched.io/pool";
const MAINTENANCE: &str = "soak.ksched.io/maintenance";
/// Violation messages kept in the report (all are counted).
const KEEP_MESSAGES: usize = 20;

/// What a soak runs.
#[derive(Clone, Debug)]
pub struct SoakConfig {
    pub seed: u64,
    /// Nodes at the start; churn keeps the count near it.
    pub nodes: usize,
    pub rates: FaultRates,
    /// Pods created per step on average (default: 1 per 100 nodes, at least 5).
    pub pods_per_step: usize,
    /// The population churn aims for, per node.
    pub pods_per_node: usize,
    /// The cache's TTL for assumed pods whose binding finished (default
    /// [`ksched_engine::cache::ASSUMED_POD_TTL`], never; a positive TTL runs the seeds'
    /// cleaner at every step).
    pub assumed_ttl: Duration,
    /// Whether the soak creates and deletes pods itself each step (false for a scripted soak,
    /// whose pods come from [`Soak::create_pod`]).
    pub pod_churn: bool,
    /// The feature gates the scheduler and its queue run under (v1.35's defaults).
    pub gates: ksched_engine::features::FeatureGates,
}

impl SoakConfig {
    pub fn new(seed: u64, nodes: usize, rates: FaultRates) -> SoakConfig {
        SoakConfig {
            seed,
            nodes,
            rates,
            pods_per_step: (nodes / 100).max(5),
            pods_per_node: 6,
            assumed_ttl: ksched_engine::cache::ASSUMED_POD_TTL,
            pod_churn: true,
            gates: ksched_engine::features::FeatureGates::default(),
        }
    }
}

/// The end of a soak.
#[derive(Clone, Debug, Serialize)]
pub struct SoakReport {
    pub seed: u64,
    pub steps: u64,
    pub nodes_at_start: usize,
    pub nodes_at_end: usize,
    pub simulated_seconds: f64,
    pub pods_created: u64,
    pub pods_bound: u64,
    pub pods_pending: u64,
    /// Pending pods by where they wait and why their last attempt failed.
    pub pending_by_reason: BTreeMap<String, u64>,
    pub pods_deleted: u64,
    pub assumed_pods_expired: u64,
    pub attempts: Counts,
    pub faults: FaultStats,
    /// Must be 0.
    pub invariant_violations: u64,
    /// Pods found in no queue, not bound and not deleted. Must be 0.
    pub lost_pods: u64,
    /// The first violations and lost pods, with the step that found them.
    pub messages: Vec<String>,
}

impl SoakReport {
    pub fn passed(&self) -> bool {
        self.invariant_violations == 0 && self.lost_pods == 0
    }
}

/// Why a pending pod's last attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastFailure {
    NoFit,
    Preempting,
    BindFailed,
}

/// A soak in progress. See the module docs.
pub struct Soak {
    config: SoakConfig,
    pub cache: Arc<Cache>,
    pub queue: Arc<PriorityQueue>,
    pub clock: Arc<MockClock>,
    pub cluster: Arc<FaultyCluster>,
    /// The driver the steps run their cycles on (sharing the cache, queue, clock and cluster).
    sim: Simulation<FaultyCluster>,
    rng: Rng,
    start: Timestamp,
    steps: u64,
    next_pod: u64,
    next_node: usize,
    /// Uids of pods created, some since deleted (dropped when drawn).
    live: Vec<PodUid>,
    last_failure: FxHashMap<PodUid, LastFailure>,
    attempts: Counts,
    last_leftover_flush: Timestamp,
    violations: u64,
    lost: FxHashSet<PodUid>,
    messages: Vec<String>,
}

impl Soak {
    pub fn new(config: SoakConfig) -> Result<Soak, String> {
        if config.nodes == 0 {
            return Err("a soak needs at least one node".into());
        }
        let mut soak = Soak::without_nodes(config)?;
        for _ in 0..soak.config.nodes {
            soak.add_node()?;
        }
        Ok(soak)
    }

    fn without_nodes(config: SoakConfig) -> Result<Soak, String> {
        config.rates.validate()?;
        let clock = Arc::new(MockClock::new(Timestamp::from_secs(1)));
        let cache = Arc::new(Cache::new(config.assumed_ttl));
        let mut profile = Profile::default_profile_with(config.gates);
        profile.parallelism = 1;
        let queue_config = QueueConfig::new()
            .with_feature_gates(config.gates)
            .with_clock(clock.clone())
            .with_hints(QueueingHints::from_profile(&profile))
            .with_objects(cache.clone());
        let queue = Arc::new(PriorityQueue::new(queue_config));
        let cluster = Arc::new(FaultyCluster::new(
            cache.clone(),
            queue.clone(),
            clock.clone(),
            config.rates,
            config.seed ^ 0x5eed_fa17,
        ));
        let sim = Simulation::with_cluster(
            cache.clone(),
            queue.clone(),
            clock.clone(),
            cluster.clone(),
            profile,
            config.seed,
        );
        let start = clock.now();
        Ok(Soak {
            rng: Rng::seed(config.seed),
            config,
            cache,
            queue,
            clock,
            cluster,
            sim,
            start,
            steps: 0,
            next_pod: 0,
            next_node: 0,
            live: Vec::new(),
            last_failure: FxHashMap::default(),
            attempts: Counts::default(),
            last_leftover_flush: start,
            violations: 0,
            lost: FxHashSet::default(),
            messages: Vec::new(),
        })
    }

    /// A soak of a given workload instead of its own churn: these nodes, pods only from
    /// [`Soak::create_pod`], faults at `rates`; the steps, checks and ledger are the soak's.
    pub fn scripted(seed: u64, nodes: Vec<Node>, rates: FaultRates) -> Result<Soak, String> {
        if nodes.is_empty() {
            return Err("a soak needs at least one node".into());
        }
        let config = SoakConfig { pod_churn: false, ..SoakConfig::new(seed, nodes.len(), rates) };
        let soak = Soak::without_nodes(config)?;
        for node in nodes {
            soak.cluster.add_node(node)?;
        }
        Ok(soak)
    }

    /// Creates a pod (a scripted soak's workload); it enters the ledger like the soak's own.
    pub fn create_pod(&mut self, pod: Pod) -> Result<(), String> {
        let p = self.cluster.create_pod(pod).map_err(|e| e.to_string())?;
        self.live.push(p.uid.clone());
        Ok(())
    }

    /// What the attempts so far ended in.
    pub fn attempts(&self) -> Counts {
        self.attempts
    }

    /// Pods neither bound nor deleted.
    pub fn pods_pending(&self) -> usize {
        self.cluster.inspect(|truth| truth.values().filter(|p| p.node_name.is_none()).count())
    }

    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Violations and lost pods so far.
    pub fn failures(&self) -> u64 {
        self.violations + self.lost.len() as u64
    }

    /// One step: churn, scheduling cycles, time, checks.
    pub fn step(&mut self) {
        self.steps += 1;
        let created = if self.config.pod_churn { self.churn_pods() } else { 0 };
        if self.rng.unit() < self.config.rates.node_churn {
            self.churn_node();
        }
        let mut outcomes = Vec::new();
        let mut collect = |o: &CycleOutcome, _: u64| outcomes.push(o.clone());
        let until = Until::Attempts(2 * created as u64 + 20);
        // No sources: nothing can fail.
        let _ = self.sim.run(until, &RunOptions::default(), &mut [], &mut [&mut collect]);
        for o in &outcomes {
            self.record(o);
        }
        self.clock.advance(Duration::from_millis(50 + self.rng.below(450)));
        self.cluster.tick();
        self.queue.flush_backoff_completed();
        let now = self.clock.now();
        if now.saturating_since(self.last_leftover_flush) >= Duration::from_secs(30) {
            self.queue.flush_unschedulable_leftover();
            self.last_leftover_flush = now;
        }
        self.check();
    }

    /// Ends the soak: no more faults, every event and grace period runs out, a relist, the
    /// TTL passes; then the exact end-state checks and the ledger.
    pub fn finish(mut self) -> SoakReport {
        self.cluster.set_rates(FaultRates::default());
        while let Some(t) = self.cluster.next_deadline() {
            if t > self.clock.now() {
                self.clock.set(t);
            }
            self.cluster.tick();
        }
        self.cluster.relist();
        self.clock.advance(self.config.assumed_ttl + Duration::from_secs(1));
        self.cluster.tick();
        self.queue.flush_backoff_completed();
        self.check();
        self.check_settled();
        self.report()
    }

    // ----- churn -----

    fn churn_pods(&mut self) -> usize {
        let k = self.config.pods_per_step as u64;
        let target = (self.config.nodes * self.config.pods_per_node) as u64;
        let population = self.cluster.num_pods() as u64;
        // Fill up quickly at first, then hover around the target.
        let create = if population < target / 2 { 10 * k } else { self.rng.below(2 * k + 1) };
        for _ in 0..create {
            let pod = self.make_pod();
            match self.cluster.create_pod(pod) {
                Ok(p) => self.live.push(p.uid.clone()),
                Err(e) => self.violation(format!("creating a pod: {e}")),
            }
        }
        let expected = create as f64 * population as f64 / target.max(1) as f64;
        let mut deletes = expected as u64 + u64::from(self.rng.unit() < expected.fract());
        let mut tries = 4 * deletes + 8;
        while deletes > 0 && tries > 0 && !self.live.is_empty() {
            tries -= 1;
            let i = self.rng.below(self.live.len() as u64) as usize;
            let uid = self.live.swap_remove(i);
            let graceful = self.rng.unit() < 0.5;
            if self.cluster.delete_pod(&uid, graceful) {
                deletes -= 1;
            }
        }
        create as usize
    }

    fn make_pod(&mut self) -> Pod {
        self.next_pod += 1;
        let name = format!("soak-{}", self.next_pod);
        let r = self.rng.unit();
        let mem = 1i64 << 28;
        let b = Pod::builder(&name);
        if r < 0.70 {
            let cpu = [100, 250, 500, 1000][self.rng.below(4) as usize];
            let grace = if self.rng.unit() < 0.5 { 0 } else { 30 };
            let mut b = b.container("soak/general", &[(ResourceName::Cpu, cpu), (ResourceName::Memory, mem)]);
            b = b.termination_grace_period_seconds(grace);
            if self.rng.unit() < 0.1 {
                b = b.toleration(Toleration::new(MAINTENANCE, TolerationOp::Exists, "", None));
            }
            b.build()
        } else if r < 0.88 {
            b.container("soak/pool-a", &[(ResourceName::Cpu, 500), (ResourceName::Memory, mem)])
                .node_selector(POOL, "a")
                .termination_grace_period_seconds(10)
                .build()
        } else if r < 0.95 {
            b.container("soak/preemptor", &[(ResourceName::Cpu, 1500), (ResourceName::Memory, mem)])
                .node_selector(POOL, "a")
                .priority(100)
                .termination_grace_period_seconds(0)
                .build()
        } else {
            // One per host among its group: exercises InterPodAffinity's bookkeeping.
            let group = format!("solo-{}", self.rng.below(20));
            let term = PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Labels::from_pairs([("app", group.as_str())]),
                    ..Default::default()
                }),
                topology_key: Sym::new(LABEL_HOSTNAME),
                ..Default::default()
            };
            b.container("soak/solo", &[(ResourceName::Cpu, 250), (ResourceName::Memory, mem)])
                .label("app", &group)
                .affinity(Affinity {
                    pod_anti_affinity: Some(PodAffinity { required: vec![term], preferred: vec![] }),
                    ..Affinity::default()
                })
                .termination_grace_period_seconds(5)
                .build()
        }
    }

    fn add_node(&mut self) -> Result<(), String> {
        let i = self.next_node;
        self.next_node += 1;
        let name = format!("soak-node-{i}");
        let pool = if i % 5 == 0 { "a" } else { "b" };
        let node = Node::builder(&name)
            .resources(4000, 16 << 30, 110)
            .label(LABEL_HOSTNAME, &name)
            .label(LABEL_ZONE, ["zone-1", "zone-2", "zone-3"][i % 3])
            .label(POOL, pool)
            .build();
        self.cluster.add_node(node)
    }

    /// Adds, relabels (moves between pools), taints or untaints, or removes a node.
    fn churn_node(&mut self) {
        let names = self.cluster.node_names();
        let op = self.rng.below(4);
        let res = if names.is_empty() || (op == 0 && names.len() < self.config.nodes) {
            self.add_node()
        } else {
            let name = names[self.rng.below(names.len() as u64) as usize];
            match (op, self.cluster.node(name)) {
                (_, None) => Ok(()),
                (3, Some(_)) if names.len() * 10 >= self.config.nodes * 9 && names.len() > 1 => {
                    self.cluster.remove_node(name)
                }
                (1, Some(mut node)) => {
                    let other = if node.labels.get(Sym::new(POOL)) == Some(Sym::new("a")) { "b" } else { "a" };
                    node.labels.insert(Sym::new(POOL), Sym::new(other));
                    self.cluster.update_node(node)
                }
                (_, Some(mut node)) => {
                    let key = Sym::new(MAINTENANCE);
                    if node.taints.iter().any(|t| t.key == key) {
                        node.taints.retain(|t| t.key != key);
                    } else {
                        node.taints.push(Taint::new(MAINTENANCE, "true", TaintEffect::NoSchedule));
                    }
                    self.cluster.update_node(node)
                }
            }
        };
        if let Err(e) = res {
            self.violation(format!("node churn: {e}"));
        }
    }

    fn record(&mut self, outcome: &CycleOutcome) {
        self.attempts.record(outcome);
        match outcome {
            CycleOutcome::Scheduled { pod, .. } => {
                self.last_failure.remove(&pod.uid);
            }
            CycleOutcome::Unschedulable { pod, preemption, .. } => {
                let why = if preemption.is_some() { LastFailure::Preempting } else { LastFailure::NoFit };
                self.last_failure.insert(pod.uid.clone(), why);
            }
            CycleOutcome::BindFailed { pod, .. } => {
                self.last_failure.insert(pod.uid.clone(), LastFailure::BindFailed);
            }
        }
    }

    // ----- checks -----

    fn violation(&mut self, msg: String) {
        self.violations += 1;
        if self.messages.len() < KEEP_MESSAGES {
            self.messages.push(format!("step {}: {msg}", self.steps));
        }
    }

    /// The per-step checks (module docs).
    fn check(&mut self) {
        let mut found: Vec<String> = Vec::new();
        found.extend(self.cache.check_invariants().into_iter().map(|v| format!("cache: {v}")));
        found.extend(self.queue.check_invariants().into_iter().map(|v| format!("queue: {v}")));
        found.extend(self.sim.scheduler.check_score_memos().into_iter().map(|v| format!("kept scores: {v}")));
        let nominator = self.queue.nominator();
        if let Some(n) = nominator {
            found.extend(n.check_consistent().into_iter().map(|v| format!("nominator: {v}")));
        }
        let queued = self.queue.pending_pods();
        let cached = self.cache.pods();
        let mut lost = Vec::new();
        self.cluster.inspect(|truth| {
            let mut in_queue: FxHashSet<&PodUid> = FxHashSet::default();
            for p in &queued {
                if !in_queue.insert(&p.uid) {
                    found.push(format!("pod {} is queued twice", p.key()));
                }
                match truth.get(&p.uid) {
                    None => found.push(format!("pod {} is queued but was deleted (resurrected)", p.key())),
                    Some(t) if t.node_name.is_some() => {
                        found.push(format!("pod {} is queued but bound to {:?} (counted twice)", p.key(), t.node_name))
                    }
                    Some(_) => {}
                }
            }
            for p in truth.values().filter(|p| p.node_name.is_none()) {
                if !in_queue.contains(&p.uid) {
                    lost.push(p.clone());
                }
            }
            if let Some(n) = nominator {
                n.for_each_node(|node, pods| {
                    for p in pods {
                        if truth.get(&p.uid).is_none_or(|t| t.node_name.is_some()) {
                            found.push(format!("pod {} is nominated to {node} but not pending", p.key()));
                        }
                    }
                });
            }
            for (p, state) in &cached {
                match truth.get(&p.uid) {
                    Some(t) if t.node_name.is_none() => {
                        found.push(format!("pending pod {} is {state} in the cache", p.key()));
                    }
                    Some(t) if t.node_name != p.node_name => found.push(format!(
                        "pod {} is on {:?} in the cache but bound to {:?}",
                        p.key(),
                        p.node_name,
                        t.node_name
                    )),
                    // Bound where the cache says, or deleted with its Delete still on its way.
                    _ => {}
                }
            }
        });
        for v in found {
            self.violation(v);
        }
        for p in lost {
            if self.lost.insert(p.uid.clone()) && self.messages.len() < KEEP_MESSAGES {
                self.messages.push(format!("step {}: pod {} is lost (pending, in no queue)", self.steps, p.key()));
            }
        }
    }

    /// After `finish` settled everything: the cache holds exactly the bound pods, confirmed.
    fn check_settled(&mut self) {
        let cached: FxHashMap<PodUid, (Option<Sym>, PodStateName)> =
            self.cache.pods().into_iter().map(|(p, s)| (p.uid.clone(), (p.node_name, s))).collect();
        let mut found = Vec::new();
        self.cluster.inspect(|truth| {
            for p in truth.values().filter(|p| p.node_name.is_some()) {
                match cached.get(&p.uid) {
                    Some(&(node, PodStateName::Added)) if node == p.node_name => {}
                    other => found.push(format!(
                        "settled: pod {} is bound to {:?} but the cache has {other:?}",
                        p.key(),
                        p.node_name
                    )),
                }
            }
            for uid in cached.keys() {
                if truth.get(uid).is_none_or(|p| p.node_name.is_none()) {
                    found.push(format!("settled: the cache holds pod {uid}, which is not bound"));
                }
            }
        });
        for v in found {
            self.violation(v);
        }
    }

    fn report(mut self) -> SoakReport {
        let stats = self.cluster.stats();
        let (bound, pending) = self.cluster.inspect(|truth| {
            let bound = truth.values().filter(|p| p.node_name.is_some()).count() as u64;
            (bound, truth.len() as u64 - bound)
        });
        let mut pending_by_reason: BTreeMap<String, u64> = BTreeMap::new();
        for p in self.queue.pending_pods() {
            let place = match self.queue.location(&p.uid) {
                Some(QueueLocation::Active) => "activeQ",
                Some(QueueLocation::Backoff) => "backoffQ",
                Some(QueueLocation::Unschedulable) | None => "unschedulable pods",
            };
            let why = match self.last_failure.get(&p.uid) {
                None => "not attempted yet",
                Some(LastFailure::NoFit) => "no node fits",
                Some(LastFailure::Preempting) => "nominated, waiting for victims",
                Some(LastFailure::BindFailed) => "bind failed",
            };
            *pending_by_reason.entry(format!("{place}: {why}")).or_default() += 1;
        }
        if stats.pods_created != bound + pending + stats.pods_deleted {
            self.violation(format!(
                "ledger: {} created != {bound} bound + {pending} pending + {} deleted",
                stats.pods_created, stats.pods_deleted
            ));
        }
        SoakReport {
            seed: self.config.seed,
            steps: self.steps,
            nodes_at_start: self.config.nodes,
            nodes_at_end: self.cluster.node_names().len(),
            simulated_seconds: self.clock.now().saturating_since(self.start).as_secs_f64(),
            pods_created: stats.pods_created,
            pods_bound: bound,
            pods_pending: pending,
            pending_by_reason,
            pods_deleted: stats.pods_deleted,
            assumed_pods_expired: stats.assumed_expired,
            attempts: self.attempts,
            faults: stats,
            invariant_violations: self.violations,
            lost_pods: self.lost.len() as u64,
            messages: self.messages,
        }
    }
}

#[cfg(test)]
mod tests;
