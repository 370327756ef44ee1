//! `FaultyCluster`: an API server whose answers and whose informer misbehave, on purpose and
//! reproducibly (every fault is drawn from one seeded RNG, every delay is on the mock clock).
//!
//! It keeps the truth (which pods exist, which are bound where, which nodes exist) and
//! delivers what the scheduler learns about bound pods (Add after a bind, Update when a pod
//! starts terminating, Delete) as informer events that may be:
//!
//! * late: delivered after a random delay, so events of different pods arrive out of order
//!   (events of one pod keep their order, as one watch stream guarantees);
//! * duplicated: delivered twice;
//! * lost: never delivered by the watch; the next relist (every `relist_period`, as a broken
//!   watch makes client-go's reflector do) finds the difference and delivers it. Until then
//!   an unconfirmed assumed pod may expire from the cache (its TTL on the mock clock).
//!
//! Binds may fail (half of those failures after the binding was applied: the response was
//! lost), be delayed (the clock moves while the bind is in flight, and informer events,
//! terminations and assumed-pod expiry happen meanwhile), or find their pod deleted while
//! it was assumed. Node events and pending pods' events reach the cache and queue at once.
//!
//! Lock order: `state`, then the cache, then the queue (neither calls back into the cluster).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::CreateError;
use ksched_engine::api::{Node, Pod, PodUid, Sym};
use ksched_engine::cache::{Cache, PodStateName};
use ksched_engine::cluster::{ApiError, BindError, ClusterApi};
use ksched_engine::queue::{PriorityQueue, SchedulingQueue};
use ksched_engine::sync::{lock, Mutex};
use ksched_engine::util::hash::{FxHashMap, FxHashSet};
use ksched_engine::util::rng::Rng;
use ksched_engine::util::time::{Clock, MockClock, Timestamp};

/// How often each fault happens: each rate is a probability in `[0, 1]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct FaultRates {
    /// A bind fails; half of these failures happen after the API server applied it.
    pub bind_failure: f64,
    /// A bind takes up to `max_bind_delay` on the clock.
    pub bind_delay: f64,
    /// An informer event about a bound pod is delivered up to `max_event_delay` late.
    pub late_confirmation: f64,
    /// An informer event about a bound pod is never delivered by the watch.
    pub lost_confirmation: f64,
    /// An informer event about a bound pod is delivered twice.
    pub duplicate_confirmation: f64,
    /// Per step: a node is added, relabelled, tainted or removed.
    pub node_churn: f64,
    /// A bind finds its pod deleted while it was assumed.
    pub delete_while_assumed: f64,
}

impl FaultRates {
    /// Every fault at once, at rates that keep a soak busy but still scheduling.
    pub fn all() -> FaultRates {
        FaultRates {
            bind_failure: 0.05,
            bind_delay: 0.05,
            late_confirmation: 0.2,
            lost_confirmation: 0.02,
            duplicate_confirmation: 0.05,
            node_churn: 0.3,
            delete_while_assumed: 0.01,
        }
    }

    /// Every rate must be a probability.
    pub fn validate(&self) -> Result<(), String> {
        let rates = [
            ("bind-failure-rate", self.bind_failure),
            ("bind-delay-rate", self.bind_delay),
            ("late-confirmation-rate", self.late_confirmation),
            ("lost-confirmation-rate", self.lost_confirmation),
            ("duplicate-confirmation-rate", self.duplicate_confirmation),
            ("node-churn-rate", self.node_churn),
            ("delete-while-assumed-rate", self.delete_while_assumed),
        ];
        match rates.iter().find(|(_, r)| !(0.0..=1.0).contains(r)) {
            Some((name, r)) => Err(format!("--{name}: {r} is not a probability between 0 and 1")),
            None => Ok(()),
        }
    }
}

/// What the cluster and its informer did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FaultStats {
    pub pods_created: u64,
    pub pods_deleted: u64,
    pub binds: u64,
    pub binds_failed: u64,
    /// Failed binds the API server had applied (the response was lost).
    pub binds_applied_but_failed: u64,
    pub binds_delayed: u64,
    pub deleted_while_assumed: u64,
    pub victims_deleted: u64,
    /// Preemption victims deleted outright while terminating (their preemptor waiting).
    pub victims_deleted_early: u64,
    pub events_delivered: u64,
    pub events_late: u64,
    pub events_lost: u64,
    pub events_duplicated: u64,
    /// Events the cache refused (a duplicate Add, a Delete of a pod it no longer holds...).
    pub events_refused: u64,
    pub relists: u64,
    /// Events a relist delivered because the watch lost them.
    pub relist_repairs: u64,
    pub assumed_expired: u64,
    pub nodes_added: u64,
    pub nodes_updated: u64,
    pub nodes_removed: u64,
}

/// An informer event about a bound pod.
#[derive(Clone, Debug)]
enum Event {
    Add(Pod),
    Update(Pod, Pod),
    Delete(Pod),
}

impl Event {
    fn uid(&self) -> &PodUid {
        match self {
            Event::Add(p) | Event::Update(_, p) | Event::Delete(p) => &p.uid,
        }
    }
}

struct State {
    rates: FaultRates,
    rng: Rng,
    /// Every pod that exists, as the API server holds it (`node_name` set once bound).
    pods: FxHashMap<PodUid, Pod>,
    deleted: FxHashSet<PodUid>,
    nodes: BTreeMap<Sym, Node>,
    /// Terminating pods by (end of grace period, order).
    terminating: BTreeMap<(Timestamp, u64), PodUid>,
    /// Informer events on their way, by (delivery time, order).
    events: BTreeMap<(Timestamp, u64), Event>,
    /// The latest delivery time scheduled per pod: its events keep their order.
    last_delivery: FxHashMap<PodUid, Timestamp>,
    /// Bound pods as the informer last delivered them: what a relist compares with.
    informer: FxHashMap<PodUid, Pod>,
    last_relist: Timestamp,
    seq: u64,
    stats: FaultStats,
}

/// See the module docs.
pub struct FaultyCluster {
    cache: Arc<Cache>,
    queue: Arc<PriorityQueue>,
    clock: Arc<MockClock>,
    state: Mutex<State>,
    max_bind_delay: Duration,
    max_event_delay: Duration,
    relist_period: Duration,
}

fn not_found(op: &'static str, pod: &Pod) -> ApiError {
    ApiError { op, pod: pod.key(), why: "not found".into() }
}

impl FaultyCluster {
    pub fn new(
        cache: Arc<Cache>,
        queue: Arc<PriorityQueue>,
        clock: Arc<MockClock>,
        rates: FaultRates,
        seed: u64,
    ) -> FaultyCluster {
        let now = clock.now();
        FaultyCluster {
            cache,
            queue,
            clock,
            state: Mutex::new(State {
                rates,
                rng: Rng::seed(seed),
                pods: FxHashMap::default(),
                deleted: FxHashSet::default(),
                nodes: BTreeMap::new(),
                terminating: BTreeMap::new(),
                events: BTreeMap::new(),
                last_delivery: FxHashMap::default(),
                informer: FxHashMap::default(),
                last_relist: now,
                seq: 0,
                stats: FaultStats::default(),
            }),
            max_bind_delay: Duration::from_secs(2),
            // Longer than the cache's usual 30 s TTL: some confirmations arrive after expiry.
            max_event_delay: Duration::from_secs(45),
            relist_period: Duration::from_secs(120),
        }
    }

    pub fn stats(&self) -> FaultStats {
        lock(&self.state).stats
    }

    /// Replaces the fault rates (e.g. none while a soak settles at the end).
    pub fn set_rates(&self, rates: FaultRates) {
        lock(&self.state).rates = rates;
    }

    // ----- the truth, for checkers -----

    /// Whether the pod exists, unbound.
    pub fn pod_pending(&self, uid: &PodUid) -> bool {
        lock(&self.state).pods.get(uid).is_some_and(|p| p.node_name.is_none())
    }

    /// The node the pod is bound to, if it exists and is bound.
    pub fn bound_node(&self, uid: &PodUid) -> Option<Sym> {
        lock(&self.state).pods.get(uid).and_then(|p| p.node_name)
    }

    pub fn was_deleted(&self, uid: &PodUid) -> bool {
        lock(&self.state).deleted.contains(uid)
    }

    /// Every existing pod.
    pub fn pods(&self) -> Vec<Pod> {
        lock(&self.state).pods.values().cloned().collect()
    }

    /// Pods that exist and are not terminating.
    pub fn num_pods(&self) -> usize {
        lock(&self.state).pods.values().filter(|p| !p.is_terminating()).count()
    }

    pub fn node_names(&self) -> Vec<Sym> {
        lock(&self.state).nodes.keys().copied().collect()
    }

    pub fn node(&self, name: Sym) -> Option<Node> {
        lock(&self.state).nodes.get(&name).cloned()
    }

    /// When the next informer event or the end of a grace period is due (periodic relists
    /// are not counted: they never stop).
    pub fn next_deadline(&self) -> Option<Timestamp> {
        let s = lock(&self.state);
        [s.events.first_key_value().map(|(&(t, _), _)| t), s.terminating.first_key_value().map(|(&(t, _), _)| t)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Reads the truth: every existing pod by uid (`node_name` set once bound).
    pub fn inspect<R>(&self, f: impl FnOnce(&FxHashMap<PodUid, Pod>) -> R) -> R {
        f(&lock(&self.state).pods)
    }

    // ----- what users and controllers do -----

    /// A pod is created: priority admission, then into the scheduling queue.
    pub fn create_pod(&self, pod: Pod) -> Result<Pod, CreateError> {
        let admitted = crate::admission::admit_pod_priority(&self.cache.objects(), &pod)?;
        let mut s = lock(&self.state);
        self.queue.add(admitted.clone())?;
        s.pods.insert(admitted.uid.clone(), admitted.clone());
        s.stats.pods_created += 1;
        Ok(admitted)
    }

    /// A user deletes a pod: a pending one leaves the queue at once; a bound one is gone
    /// at once (`graceful` false) or terminates for its grace period first.
    pub fn delete_pod(&self, uid: &PodUid, graceful: bool) -> bool {
        let mut s = lock(&self.state);
        let Some(pod) = s.pods.get(uid).cloned() else { return false };
        if pod.node_name.is_none() {
            self.remove_pending(&mut s, &pod);
        } else if graceful && pod.termination_grace_period_seconds > 0 && !pod.is_terminating() {
            self.start_terminating(&mut s, &pod, false);
        } else {
            if pod.is_terminating_by_preemption() {
                s.stats.victims_deleted_early += 1;
            }
            self.remove_bound(&mut s, &pod);
        }
        true
    }

    pub fn add_node(&self, node: Node) -> Result<(), String> {
        self.put_node(node, true)
    }

    /// A node's labels, taints or allocatable change.
    pub fn update_node(&self, node: Node) -> Result<(), String> {
        self.put_node(node, false)
    }

    /// The node informer's Add or Update: into the cache, and the queue hears of it.
    fn put_node(&self, node: Node, new: bool) -> Result<(), String> {
        let mut s = lock(&self.state);
        let old = if new { None } else { self.cache.get_node(node.name) };
        let res = if new { self.cache.add_node(node.clone()) } else { self.cache.update_node(node.clone()) };
        res.map_err(|e| e.to_string())?;
        match &old {
            Some(old) => self.queue.node_updated(old, &node),
            None => self.queue.node_added(&node),
        }
        s.nodes.insert(node.name, node);
        if new {
            s.stats.nodes_added += 1;
        } else {
            s.stats.nodes_updated += 1;
        }
        Ok(())
    }

    /// A node leaves; the pod garbage collector deletes the pods bound to it.
    pub fn remove_node(&self, name: Sym) -> Result<(), String> {
        let mut s = lock(&self.state);
        let old = self.cache.get_node(name);
        self.cache.remove_node(name).map_err(|e| e.to_string())?;
        if let Some(old) = &old {
            self.queue.node_deleted(old);
        }
        s.nodes.remove(&name);
        s.stats.nodes_removed += 1;
        let mut orphans: Vec<Pod> = s.pods.values().filter(|p| p.node_name == Some(name)).cloned().collect();
        orphans.sort_by(|a, b| a.uid.as_str().cmp(b.uid.as_str()));
        for p in &orphans {
            self.remove_bound(&mut s, p);
        }
        Ok(())
    }

    /// Lets the clock's due work happen: grace periods end, due informer events arrive, the
    /// cache's cleaner expires assumed pods, and a relist runs when one is due.
    pub fn tick(&self) {
        let mut s = lock(&self.state);
        self.process_due(&mut s);
    }

    /// Relists now: delivers whatever the watch lost, drops what it still had in flight.
    pub fn relist(&self) {
        let mut s = lock(&self.state);
        self.relist_locked(&mut s);
    }

    // ----- internals -----

    fn process_due(&self, s: &mut State) {
        let now = self.clock.now();
        while let Some(entry) = s.terminating.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let uid = entry.remove();
            if let Some(p) = s.pods.get(&uid).cloned() {
                self.remove_bound(s, &p);
            }
        }
        while let Some(entry) = s.events.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ev = entry.remove();
            self.deliver(s, ev);
        }
        s.stats.assumed_expired += self.cache.cleanup_assumed_pods(now).len() as u64;
        if now.saturating_since(s.last_relist) >= self.relist_period {
            self.relist_locked(s);
        }
    }

    fn relist_locked(&self, s: &mut State) {
        s.stats.relists += 1;
        s.last_relist = self.clock.now();
        s.events.clear();
        s.last_delivery.clear();
        let mut repairs: Vec<Event> = Vec::new();
        for p in s.pods.values().filter(|p| p.node_name.is_some()) {
            match s.informer.get(&p.uid) {
                None => repairs.push(Event::Add(p.clone())),
                Some(seen) if seen != p => repairs.push(Event::Update(seen.clone(), p.clone())),
                Some(_) => {}
            }
        }
        for p in s.informer.values().filter(|p| s.pods.get(&p.uid).is_none_or(|q| q.node_name.is_none())) {
            repairs.push(Event::Delete(p.clone()));
        }
        repairs.sort_by(|a, b| a.uid().as_str().cmp(b.uid().as_str()));
        s.stats.relist_repairs += repairs.len() as u64;
        for ev in repairs {
            self.deliver(s, ev);
        }
        // A pod deleted while its binding's Add was lost: the informer's store still has it
        // unassigned, so the relist's delete reaches the unscheduled-pod handler, which
        // forgets the assumed pod (upstream's handleAssumedPodDeletion). With
        // assumed pods that never expire (upstream's TTL 0) nothing else would.
        let mut gone: Vec<Pod> = self
            .cache
            .pods()
            .into_iter()
            .filter(|(p, st)| *st == PodStateName::Assumed && !s.pods.contains_key(&p.uid))
            .map(|(p, _)| p)
            .collect();
        gone.sort_by(|a, b| a.uid.as_str().cmp(b.uid.as_str()));
        for p in gone {
            s.stats.relist_repairs += 1;
            s.stats.events_delivered += 1;
            self.queue.delete(&p);
            if self.cache.forget_pod(&p).is_err() {
                s.stats.events_refused += 1;
            }
        }
    }

    /// The scheduler's informer handlers for bound pods.
    fn deliver(&self, s: &mut State, ev: Event) {
        s.stats.events_delivered += 1;
        let ok = match &ev {
            Event::Add(p) => {
                s.informer.insert(p.uid.clone(), p.clone());
                let ok = self.cache.add_pod(p).is_ok();
                self.queue.assigned_pod_added(p);
                ok
            }
            Event::Update(old, new) => {
                s.informer.insert(new.uid.clone(), new.clone());
                let ok = self.cache.update_pod(old, new).is_ok();
                self.queue.assigned_pod_updated(old, new);
                ok
            }
            Event::Delete(p) => {
                s.informer.remove(&p.uid);
                let ok = self.cache.remove_pod(p).is_ok();
                self.queue.assigned_pod_deleted(p);
                ok
            }
        };
        if !ok {
            s.stats.events_refused += 1;
        }
    }

    /// Sends an event through the faulty watch.
    fn emit(&self, s: &mut State, ev: Event) {
        let now = self.clock.now();
        let r = s.rates;
        if s.rng.unit() < r.lost_confirmation {
            s.stats.events_lost += 1;
            return;
        }
        let mut at = now;
        if s.rng.unit() < r.late_confirmation {
            s.stats.events_late += 1;
            at = now.saturating_add(Duration::from_nanos(s.rng.below(self.max_event_delay.as_nanos() as u64 + 1)));
        }
        let uid = ev.uid().clone();
        if let Some(&last) = s.last_delivery.get(&uid) {
            at = at.max(last);
        }
        s.last_delivery.insert(uid, at);
        let copies = if s.rng.unit() < r.duplicate_confirmation {
            s.stats.events_duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            s.seq += 1;
            let seq = s.seq;
            s.events.insert((at, seq), ev.clone());
        }
    }

    fn remove_pending(&self, s: &mut State, pod: &Pod) {
        s.pods.remove(&pod.uid);
        s.deleted.insert(pod.uid.clone());
        s.stats.pods_deleted += 1;
        self.queue.delete(pod);
    }

    fn remove_bound(&self, s: &mut State, pod: &Pod) {
        s.pods.remove(&pod.uid);
        s.deleted.insert(pod.uid.clone());
        s.stats.pods_deleted += 1;
        self.emit(s, Event::Delete(pod.clone()));
        s.last_delivery.remove(&pod.uid);
    }

    fn start_terminating(&self, s: &mut State, pod: &Pod, by_preemption: bool) {
        let now = self.clock.now();
        let mut marked = pod.clone();
        marked.deletion_timestamp = Some(now);
        marked.preempted_by_scheduler = by_preemption;
        s.pods.insert(pod.uid.clone(), marked.clone());
        let grace = Duration::from_secs(pod.termination_grace_period_seconds.max(0) as u64);
        s.seq += 1;
        let seq = s.seq;
        s.terminating.insert((now.saturating_add(grace), seq), pod.uid.clone());
        self.emit(s, Event::Update(pod.clone(), marked));
    }
}

impl crate::simulation::SimCluster for FaultyCluster {
    fn next_deadline(&self) -> Option<Timestamp> {
        FaultyCluster::next_deadline(self)
    }
    fn tick(&self) {
        FaultyCluster::tick(self);
    }
}

impl ClusterApi for FaultyCluster {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
        let fail = |why: &str| BindError { pod: pod.key(), node, why: why.into() };
        let mut s = lock(&self.state);
        let r = s.rates;
        match s.pods.get(&pod.uid) {
            None => return Err(fail("pod not found")),
            Some(p) if p.node_name.is_some() => return Err(fail("pod is already bound")),
            Some(_) => {}
        }
        if s.rng.unit() < r.delete_while_assumed {
            s.stats.deleted_while_assumed += 1;
            self.remove_pending(&mut s, pod);
            return Err(fail("pod not found (deleted while assumed)"));
        }
        if s.rng.unit() < r.bind_delay {
            s.stats.binds_delayed += 1;
            let d = Duration::from_nanos(s.rng.below(self.max_bind_delay.as_nanos() as u64 + 1));
            self.clock.advance(d);
            self.process_due(&mut s);
            if !s.pods.contains_key(&pod.uid) {
                return Err(fail("pod not found (deleted while the bind was in flight)"));
            }
        }
        if !s.nodes.contains_key(&node) {
            s.stats.binds_failed += 1;
            return Err(fail("node not found"));
        }
        let failed = s.rng.unit() < r.bind_failure;
        let applied = !failed || s.rng.unit() < 0.5;
        if applied {
            let bound = pod.with_node(node);
            // The API server keeps its own object: the scheduler's nomination is not in it.
            let mut stored = bound.clone();
            stored.nominated_node_name = None;
            s.pods.insert(pod.uid.clone(), stored.clone());
            s.stats.binds += 1;
            self.emit(&mut s, Event::Add(stored));
        }
        if failed {
            s.stats.binds_failed += 1;
            if applied {
                s.stats.binds_applied_but_failed += 1;
                return Err(fail("injected fault: the binding was applied but its response was lost"));
            }
            return Err(fail("injected fault: the API server refused the binding"));
        }
        Ok(())
    }

    fn delete_victim(&self, victim: &Pod) -> Result<(), ApiError> {
        let mut s = lock(&self.state);
        // Already gone: the scheduler's goal is met (upstream ignores NotFound for victims).
        let Some(current) = s.pods.get(&victim.uid).cloned() else { return Ok(()) };
        if current.node_name.is_none() {
            return Err(ApiError { op: "delete", pod: victim.key(), why: "the victim is not bound".into() });
        }
        if current.is_terminating() {
            return Ok(());
        }
        s.stats.victims_deleted += 1;
        if current.termination_grace_period_seconds <= 0 {
            self.remove_bound(&mut s, &current);
        } else {
            self.start_terminating(&mut s, &current, true);
        }
        Ok(())
    }

    fn set_nominated_node(&self, pod: &Pod, node: Option<Sym>) -> Result<(), ApiError> {
        let mut s = lock(&self.state);
        let Some(current) = s.pods.get_mut(&pod.uid) else { return Err(not_found("update", pod)) };
        if current.node_name.is_some() {
            return Err(ApiError { op: "update", pod: pod.key(), why: "the pod is bound".into() });
        }
        current.nominated_node_name = node;
        let mut updated = pod.clone();
        updated.nominated_node_name = node;
        self.queue.update(pod, updated).map_err(|e| ApiError { op: "update", pod: pod.key(), why: e.to_string() })
    }

    fn is_pending(&self, pod: &Pod) -> bool {
        self.pod_pending(&pod.uid)
    }
}
