//! A plain model of the PriorityQueue and a harness that runs one operation on both and
//! compares them. The property test (`queue::tests`) and the `queue_ops` fuzz target drive it
//! with the same operations.
//!
//! The model keeps each pod's place in a `HashMap` and finds the next pod by scanning: slow
//! and obviously right. After every operation the harness checks that the queue holds every
//! pod exactly where the model says (so nothing is lost or held twice), that a pop returns
//! the model's choice, when the next leftover flush is due, and the queue's own invariants.
//!
//! Events: the queue runs with the hints of three model plugins. `PodAddDb` registers bound
//! pod adds and says Queue only for pods labelled `app=db`; `NodeEvents` registers node adds
//! and label updates and always says Queue; `Anything` registers nothing (every event). A
//! failing pod names its rejectors by a bit mask (none: an error). The model moves a parked
//! pod when one of its rejectors would say Queue (any event for a pod without rejectors, or
//! a wildcard), and a failing pod when such an event arrived since its pop.
//!
//! Backoff: a failure with rejectors counts a rejection, one without (an error) an error in a
//! row; the backoff doubles with the errors in a row while there are any, else with the
//! rejections. An erred pod goes to backoff at once. With SchedulerPopFromBackoffQ (the
//! harness runs either setting) expiries are aligned down to the second, a pod backs off
//! until the next window starts, and a pop with no active pod takes the rejected (never the
//! erred) backing-off pod of the earliest window, then highest priority, earliest timestamp.
//!
//! Gates: the profile's PreEnqueue plugins are the real SchedulingGates and DefaultPreemption
//! (with SchedulerAsyncPreemption), in that order; the plugin that held a pod last runs first
//! when it is tried again. A pod added with a gate is held (gated) whatever happens until an
//! `Ungate` update removes its gate; then it moves as a parked pod would. A pod marked as
//! preempting (`Preempt`, an in-flight pod whose preemption's victims are still to be
//! deleted) is held by DefaultPreemption whenever PreEnqueue runs, until `PreemptDone`; such a
//! held pod moves only on a pod deletion (the one event DefaultPreemption registers) that one
//! of its other rejectors says may help (DefaultPreemption's own hint says QueueSkip), and
//! then only if PreEnqueue lets it. `Activate` (upstream's, for a preemption whose API calls
//! failed) moves a parked or backing-off pod to activeQ, PreEnqueue permitting.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::api::{Node, Pod, Sym};
use crate::features::{Feature, FeatureGates};
use crate::framework::events::{ActionType, ClusterEvent, Event, EventResource, QueueingHint, QueueingHints};
use crate::framework::plugins::default_preemption::DefaultPreemption;
use crate::framework::plugins::scheduling_gates::SchedulingGates;
use crate::framework::{CycleState, FilterPlugin, Plugin, PreemptingHandle, Profile, Status};
use crate::queue::{PriorityQueue, QueueConfig, QueueError, QueueLocation, QueuedPodInfo, SchedulingQueue};
use crate::snapshot::node_info::NodeInfo;
use crate::util::time::{Clock, MockClock, Timestamp};

/// How many distinct pods the operations name.
pub const PODS: usize = 8;

/// One operation; pod indices are taken modulo `PODS`.
#[derive(Clone, Debug)]
pub enum QueueOp {
    Add {
        pod: usize,
        priority: i32,
        /// Created with a scheduling gate.
        gated: bool,
    },
    /// An informer update removing the pod's scheduling gate (if it has one).
    Ungate {
        pod: usize,
    },
    AddIfNotPresent {
        pod: usize,
    },
    Pop,
    /// The `k`-th in-flight pod failed (modulo how many are in flight), rejected by the model
    /// plugins in bit mask `rejectors` (bit 0 `PodAddDb`, 1 `NodeEvents`, 2 `Anything`; 0: an
    /// error).
    Fail {
        k: usize,
        rejectors: u8,
    },
    /// The `k`-th in-flight pod was bound (and announced with `assigned_pod_added`).
    Bind {
        k: usize,
    },
    /// An informer update; `changed` gives the pod a new spec.
    Update {
        pod: usize,
        changed: bool,
    },
    Delete {
        pod: usize,
    },
    MoveAll,
    /// A node is added (or, with `update`, relabelled).
    NodeEvent {
        update: bool,
    },
    /// A bound pod is deleted; `db` says whether it carried `app=db`.
    AssignedPodDelete {
        db: bool,
    },
    Advance {
        millis: u32,
    },
    FlushBackoff,
    FlushLeftover,
    /// The `k`-th in-flight pod starts preempting (asynchronous preemption): DefaultPreemption
    /// holds it until `PreemptDone`.
    Preempt {
        k: usize,
    },
    /// The pod's preemption step has run: it is no longer held.
    PreemptDone {
        pod: usize,
    },
    /// Upstream's Activate of the pod.
    Activate {
        pod: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Active,
    Backoff {
        /// Aligned to the second with SchedulerPopFromBackoffQ.
        expiry: u64,
        /// Backing off after an error (never popped early).
        error: bool,
    },
    Unschedulable,
    /// Held by SchedulingGates (in the unschedulable pods).
    Gated,
    /// Held by DefaultPreemption while preempting (in the unschedulable pods).
    Held,
    /// Popped, not returned yet.
    InFlight,
}

#[derive(Clone, Debug)]
struct ModelPod {
    place: Place,
    /// The pod as the queue holds it.
    pod: Pod,
    timestamp: u64,
    seq: u64,
    attempts: u32,
    /// Failures with rejectors, and errors in a row.
    unsched: u32,
    errors: u32,
    rejectors: Vec<&'static str>,
    /// The PreEnqueue plugin that held it last (run first next time; cleared when all pass).
    gate: Option<&'static str>,
    /// The event count when the pod was parked.
    parked_at: u64,
}

impl ModelPod {
    fn is_queued(&self) -> bool {
        self.place != Place::InFlight
    }
}

/// The queue under test, the model, and what is in flight.
pub struct QueueHarness {
    queue: PriorityQueue,
    clock: Arc<MockClock>,
    config: QueueConfig,
    pods: Vec<Pod>,
    model: HashMap<usize, ModelPod>,
    /// In flight: the pod, the queue's info, and the model's (rejections, errors) at its pop.
    in_flight: Vec<(usize, QueuedPodInfo, (u32, u32))>,
    /// SchedulerPopFromBackoffQ.
    windows: bool,
    /// DefaultPreemption's set of preemptors (the queue's PreEnqueue reads it), and the pods
    /// the model has marked in it.
    preempting: PreemptingHandle,
    held: Vec<usize>,
    /// Per pop not yet returned or done, in pop order: the pod and the event count at its pop.
    flights: Vec<(usize, u64)>,
    /// Every event so far, numbered from 1.
    events: Vec<ModelEvent>,
    now: u64,
    seq: u64,
}

/// An event as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ModelEvent {
    Wildcard,
    /// A bound pod was added; `db`: it carries `app=db`.
    PodAdd {
        db: bool,
    },
    PodDelete,
    Node,
}

const POD_ADD_DB: &str = "PodAddDb";
const NODE_EVENTS: &str = "NodeEvents";
const ANYTHING: &str = "Anything";
const DEFAULT_PREEMPTION: &str = crate::framework::plugins::default_preemption::NAME;
const PLUGINS: [&str; 3] = [POD_ADD_DB, NODE_EVENTS, ANYTHING];
const SCHEDULING_GATES: &str = crate::framework::plugins::scheduling_gates::NAME;

/// A model plugin: registers `events` (none: every event) and says Queue when `hint` does.
struct ModelPlugin {
    name: &'static str,
    events: Vec<ClusterEvent>,
    hint: fn(&Event) -> bool,
}

impl Plugin for ModelPlugin {
    fn name(&self) -> &'static str {
        self.name
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        if self.events.is_empty() {
            vec![ClusterEvent::WILDCARD]
        } else {
            self.events.clone()
        }
    }

    fn queueing_hint(&self, _pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        if (self.hint)(event) {
            QueueingHint::Queue
        } else {
            QueueingHint::QueueSkip
        }
    }
}

impl FilterPlugin for ModelPlugin {
    fn filter(&self, _state: &CycleState, _pod: &Pod, _node: &NodeInfo) -> Status {
        Status::success()
    }
}

/// The hints of the three model plugins, and the set of preemptors DefaultPreemption's
/// PreEnqueue reads.
fn model_hints() -> (QueueingHints, PreemptingHandle) {
    let mut profile = Profile::empty("default-scheduler");
    let db = |e: &Event| e.pods().1.is_some_and(|p| p.labels.get(Sym::new("app")) == Some(Sym::new("db")));
    profile.filter = vec![
        Arc::new(ModelPlugin {
            name: POD_ADD_DB,
            events: vec![ClusterEvent::new(EventResource::Pod, ActionType::ADD)],
            hint: db,
        }),
        Arc::new(ModelPlugin {
            name: NODE_EVENTS,
            events: vec![ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE_NODE_LABEL)],
            hint: |_| true,
        }),
        Arc::new(ModelPlugin { name: ANYTHING, events: Vec::new(), hint: |_| true }),
    ];
    let preemption = Arc::new(DefaultPreemption::default());
    let preempting = preemption.preempting().clone();
    profile.pre_enqueue = vec![Arc::new(SchedulingGates), preemption];
    (QueueingHints::from_profile(&profile), preempting)
}

/// Whether `e` may help a pod rejected by `rejectors`, by the model plugins' rules.
fn worth(rejectors: &[&'static str], e: ModelEvent) -> bool {
    if rejectors.is_empty() || e == ModelEvent::Wildcard {
        return true;
    }
    rejectors.iter().any(|&r| match r {
        POD_ADD_DB => e == ModelEvent::PodAdd { db: true },
        NODE_EVENTS => e == ModelEvent::Node,
        // Its hint always says QueueSkip; SchedulingGates registers no event the model sends.
        DEFAULT_PREEMPTION | SCHEDULING_GATES => false,
        _ => true,
    })
}

impl Default for QueueHarness {
    fn default() -> Self {
        Self::new()
    }
}

impl QueueHarness {
    pub fn new() -> QueueHarness {
        QueueHarness::with_pop_from_backoff(true)
    }

    /// A harness whose queue runs with SchedulerPopFromBackoffQ on or off.
    pub fn with_pop_from_backoff(on: bool) -> QueueHarness {
        let clock = Arc::new(MockClock::new(Timestamp::from_secs(1000)));
        let mut gates = FeatureGates::default();
        gates.set_unchecked(Feature::SchedulerPopFromBackoffQ, on);
        // A leftover age of 30 s (upstream: 5 min) so that short op sequences reach it.
        let (hints, preempting) = model_hints();
        let config = QueueConfig {
            max_in_unschedulable: Duration::from_secs(30),
            ..QueueConfig::new().with_clock(clock.clone() as Arc<dyn Clock>).with_hints(hints).with_feature_gates(gates)
        };
        QueueHarness {
            windows: on,
            preempting,
            held: Vec::new(),
            queue: PriorityQueue::new(config.clone()),
            now: clock.now().0,
            clock,
            config,
            pods: (0..PODS).map(|i| make_pod(i, 0, false)).collect(),
            model: HashMap::new(),
            in_flight: Vec::new(),
            flights: Vec::new(),
            events: Vec::new(),
            seq: 0,
        }
    }

    pub fn queue(&self) -> &PriorityQueue {
        &self.queue
    }

    /// Runs `op` on the queue and the model; `Err` describes the first disagreement.
    pub fn apply(&mut self, op: &QueueOp) -> Result<(), String> {
        let now = self.now;
        match *op {
            QueueOp::Add { pod, priority, gated } => {
                let i = pod % PODS;
                self.pods[i] = make_pod(i, priority, gated);
                let pod = self.pods[i].clone();
                self.queue.add(pod.clone()).map_err(|e| e.to_string())?;
                let (held, events) = (self.held.contains(&i), self.events.len() as u64);
                match self.model.get_mut(&i) {
                    Some(m) if m.place == Place::Active => {
                        // The active pod's info is kept; PreEnqueue runs from scratch.
                        m.pod = pod;
                        if let Some(place) = pre_enqueue(m, held) {
                            m.place = place;
                            m.parked_at = events;
                        }
                    }
                    _ => {
                        let seq = self.next_seq();
                        let m = self.fresh(i, pod, now, seq);
                        self.model.insert(i, m);
                    }
                }
            }
            QueueOp::AddIfNotPresent { pod } => {
                let i = pod % PODS;
                let pod = self.pods[i].clone();
                self.queue.add_if_not_present(pod.clone()).map_err(|e| e.to_string())?;
                if !self.model.get(&i).is_some_and(|m| m.is_queued()) {
                    let seq = self.next_seq();
                    let m = self.fresh(i, pod, now, seq);
                    self.model.insert(i, m);
                }
            }
            QueueOp::Ungate { pod } => {
                let i = pod % PODS;
                let old = self.pods[i].clone();
                if old.scheduling_gates.is_empty() {
                    return self.compare();
                }
                self.pods[i] = make_pod(i, old.priority, false);
                let new = self.pods[i].clone();
                self.queue.update(&old, new.clone()).map_err(|e| e.to_string())?;
                match self.model.get_mut(&i) {
                    // Held by DefaultPreemption: an update is no event it registered.
                    Some(m) if m.place == Place::Held => m.pod = new,
                    // Parked or gated: the update lets it go (a parked pod moves on any change).
                    Some(m) if matches!(m.place, Place::Gated | Place::Unschedulable) => {
                        m.pod = new;
                        self.requeue(i);
                    }
                    Some(m) if m.is_queued() => m.pod = new,
                    _ => {
                        let seq = self.next_seq();
                        let m = self.fresh(i, new, now, seq);
                        self.model.insert(i, m);
                    }
                }
            }
            QueueOp::Pop => {
                let want = self.model_next();
                let got = self.queue.try_pop();
                let got_i = got.as_ref().map(|g| index_of(&g.pod));
                if got_i != want {
                    return Err(format!("pop returned pod {got_i:?}, the model expects {want:?}"));
                }
                if let (Some(info), Some(i)) = (got, want) {
                    let m = self.model.get_mut(&i).ok_or("popped pod missing from the model")?;
                    m.attempts += 1;
                    m.place = Place::InFlight;
                    m.gate = None;
                    if info.attempts != m.attempts {
                        return Err(format!("pod {i}: {} attempts, the model counts {}", info.attempts, m.attempts));
                    }
                    if (info.unschedulable_count, info.consecutive_errors) != (m.unsched, m.errors) {
                        return Err(format!(
                            "pod {i}: {} rejections and {} errors, the model counts {} and {}",
                            info.unschedulable_count, info.consecutive_errors, m.unsched, m.errors
                        ));
                    }
                    if !info.unschedulable_plugins.is_empty() {
                        return Err(format!("pod {i}: popped with rejectors {:?}", info.unschedulable_plugins));
                    }
                    let counts = (m.unsched, m.errors);
                    self.in_flight.push((i, info, counts));
                    self.flights.push((i, self.events.len() as u64));
                }
            }
            QueueOp::Fail { k, rejectors } => {
                if self.in_flight.is_empty() {
                    return Ok(());
                }
                let (i, mut info, (unsched, errors)) = self.in_flight.remove(k % self.in_flight.len());
                let plugins: Vec<&'static str> =
                    PLUGINS.iter().enumerate().filter(|(b, _)| rejectors & (1 << b) != 0).map(|(_, &p)| p).collect();
                info.unschedulable_plugins = plugins.iter().copied().collect();
                let popped_at = self.end_flight(i);
                let helped = popped_at.is_some_and(|at| self.events[at as usize..].iter().any(|&e| worth(&plugins, e)));
                // Any sub-queue holding it (a newer version added or updated during its flight,
                // gated or not) refuses the stale copy, as upstream's queue does.
                let queued_again = self.model.get(&i).is_some_and(|m| m.is_queued());
                let erred = plugins.is_empty();
                let (unsched, errors) = if erred { (unsched, errors + 1) } else { (unsched + 1, 0) };
                match self.queue.add_unschedulable_if_not_present(info.clone()) {
                    Err(QueueError::AlreadyQueued { .. }) if queued_again => {}
                    Err(e) => return Err(format!("fail pod {i}: {e}")),
                    Ok(()) if queued_again => return Err(format!("fail pod {i}: accepted a pod already queued")),
                    Ok(()) => {
                        // The returned info replaces whatever the model had (in flight, or
                        // deleted meanwhile).
                        let m = ModelPod {
                            place: Place::Unschedulable,
                            pod: info.pod,
                            timestamp: now,
                            seq: info.seq,
                            attempts: info.attempts,
                            unsched,
                            errors,
                            rejectors: plugins,
                            gate: None,
                            parked_at: self.events.len() as u64,
                        };
                        self.model.insert(i, m);
                        // An error is retried after its backoff whatever happened.
                        if helped || erred {
                            self.requeue(i);
                        }
                    }
                }
            }
            QueueOp::Bind { k } => {
                if self.in_flight.is_empty() {
                    return Ok(());
                }
                let (i, info, _) = self.in_flight.remove(k % self.in_flight.len());
                if self.model.get(&i).is_some_and(|m| m.place == Place::InFlight) {
                    self.model.remove(&i);
                }
                self.queue.done(&info.pod.uid);
                self.end_flight(i);
                let bound = info.pod.with_node(Sym::new("n0"));
                self.queue.assigned_pod_added(&bound);
                let db = info.pod.labels.get(Sym::new("app")) == Some(Sym::new("db"));
                self.event(ModelEvent::PodAdd { db });
            }
            QueueOp::Update { pod, changed } => {
                let i = pod % PODS;
                let old = self.pods[i].clone();
                if changed {
                    self.pods[i] = make_pod(i, old.priority, !old.scheduling_gates.is_empty());
                }
                let new = self.pods[i].clone();
                self.queue.update(&old, new.clone()).map_err(|e| e.to_string())?;
                match self.model.get_mut(&i) {
                    Some(m)
                        if matches!(m.place, Place::Active | Place::Backoff { .. } | Place::Gated | Place::Held) =>
                    {
                        m.pod = new
                    }
                    Some(m) if m.place == Place::Unschedulable => {
                        // What the update changed, old against new (not the held copy).
                        let spec_changed = !old.same_spec(&new);
                        m.pod = new;
                        if spec_changed {
                            self.requeue(i);
                        }
                    }
                    _ => {
                        let seq = self.next_seq();
                        let m = self.fresh(i, new, now, seq);
                        self.model.insert(i, m);
                    }
                }
            }
            QueueOp::Delete { pod } => {
                let i = pod % PODS;
                self.queue.delete(&self.pods[i]);
                self.end_flight(i);
                if self.model.get(&i).is_some_and(|m| m.is_queued()) {
                    self.model.remove(&i);
                }
            }
            QueueOp::MoveAll => {
                self.queue.move_all_to_active();
                self.event(ModelEvent::Wildcard);
            }
            QueueOp::NodeEvent { update } => {
                let old = Node::builder("n9").build();
                if update {
                    self.queue.node_updated(&old, &Node::builder("n9").label("zone", "b").build());
                } else {
                    self.queue.node_added(&old);
                }
                self.event(ModelEvent::Node);
            }
            QueueOp::AssignedPodDelete { db } => {
                let mut b = Pod::builder("gone");
                if db {
                    b = b.label("app", "db");
                }
                self.queue.assigned_pod_deleted(&b.build().with_node(Sym::new("n0")));
                self.event(ModelEvent::PodDelete);
            }
            QueueOp::Advance { millis } => {
                let d = Duration::from_millis(u64::from(millis));
                self.clock.advance(d);
                self.now += d.as_nanos() as u64;
            }
            QueueOp::FlushBackoff => {
                self.queue.flush_backoff_completed();
                let cut = self.window_start(now);
                let (windows, events) = (self.windows, self.events.len() as u64);
                for (j, m) in self.model.iter_mut() {
                    if matches!(m.place, Place::Backoff { expiry, .. } if expiry < cut) {
                        // Without windows PreEnqueue runs now: a pod updated to carry a gate,
                        // or marked preempting, while backing off is held.
                        m.place = Place::Active;
                        if !windows {
                            if let Some(place) = pre_enqueue(m, self.held.contains(j)) {
                                m.place = place;
                                m.parked_at = events;
                            }
                        }
                    }
                }
            }
            QueueOp::FlushLeftover => {
                self.queue.flush_unschedulable_leftover();
                let max = self.config.max_in_unschedulable.as_nanos() as u64;
                let old = self.parked(|_, m| now.saturating_sub(m.timestamp) > max);
                self.requeue_all(old);
            }
            QueueOp::Preempt { k } => {
                if self.in_flight.is_empty() {
                    return Ok(());
                }
                let (i, ref info, _) = self.in_flight[k % self.in_flight.len()];
                self.preempting.0.start(&info.pod.uid);
                if !self.held.contains(&i) {
                    self.held.push(i);
                }
            }
            QueueOp::PreemptDone { pod } => {
                let i = pod % PODS;
                self.preempting.0.finish(&self.pods[i].uid);
                self.held.retain(|&j| j != i);
            }
            QueueOp::Activate { pod } => {
                let i = pod % PODS;
                self.queue.activate(&self.pods[i]);
                let (windows, held, events) = (self.windows, self.held.contains(&i), self.events.len() as u64);
                if let Some(m) = self.model.get_mut(&i) {
                    let from_backoff = matches!(m.place, Place::Backoff { .. });
                    if from_backoff || matches!(m.place, Place::Unschedulable | Place::Gated | Place::Held) {
                        // With windows a pod in backoffQ passed PreEnqueue on its way in.
                        m.place = Place::Active;
                        if !(from_backoff && windows) {
                            if let Some(place) = pre_enqueue(m, held) {
                                m.place = place;
                                m.parked_at = events;
                            }
                        }
                    }
                }
            }
        }
        self.compare()
    }

    /// The parked pods satisfying `f`.
    fn parked(&self, f: impl Fn(usize, &ModelPod) -> bool) -> Vec<usize> {
        self.model.iter().filter(|(&j, m)| m.place == Place::Unschedulable && f(j, m)).map(|(&j, _)| j).collect()
    }

    /// `t`, or with windows the start of its second: what backing off is measured against.
    fn window_start(&self, t: u64) -> u64 {
        if self.windows {
            t - t % 1_000_000_000
        } else {
            t
        }
    }

    /// Moves pod `i` back: to backoff until `timestamp` + backoff(errors in a row, else
    /// rejections) (aligned with windows) while that is not before now (its window), else
    /// activeQ (a pod never failed has no backoff); held if a PreEnqueue plugin rejects it.
    /// PreEnqueue runs on the way into activeQ, and into backoffQ only with windows
    /// (upstream's moveToBackoffQ): without them a gated pod still backing off enters backoffQ
    /// and is held when its backoff completes.
    fn requeue(&mut self, i: usize) {
        let (windows, now, held, events) =
            (self.windows, self.window_start(self.now), self.held.contains(&i), self.events.len() as u64);
        let Some(m) = self.model.get(&i) else { return };
        let count = if m.errors > 0 { m.errors } else { m.unsched };
        let expiry = self.window_start(m.timestamp + self.config.backoff_duration(count).as_nanos() as u64);
        let place =
            if count > 0 && expiry >= now { Place::Backoff { expiry, error: m.errors > 0 } } else { Place::Active };
        let Some(m) = self.model.get_mut(&i) else { return };
        m.place = place;
        if matches!(place, Place::Backoff { .. }) && !windows {
            return;
        }
        if let Some(gated) = pre_enqueue(m, held) {
            m.place = gated;
            m.parked_at = events;
        }
    }

    /// Pod `i` entering the queue: activeQ, or held when a PreEnqueue plugin rejects it.
    fn fresh(&self, i: usize, pod: Pod, now: u64, seq: u64) -> ModelPod {
        let mut m = ModelPod {
            place: Place::Active,
            pod,
            timestamp: now,
            seq,
            attempts: 0,
            unsched: 0,
            errors: 0,
            rejectors: Vec::new(),
            gate: None,
            parked_at: self.events.len() as u64,
        };
        if let Some(place) = pre_enqueue(&mut m, self.held.contains(&i)) {
            m.place = place;
        }
        m
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Moves parked pods back.
    fn requeue_all(&mut self, pods: Vec<usize>) {
        for j in pods {
            self.requeue(j);
        }
    }

    /// An event: recorded, and the parked pods it is worth requeuing move.
    fn event(&mut self, e: ModelEvent) {
        self.events.push(e);
        let mut moving = self.parked(|_, m| worth(&m.rejectors, e));
        // A pod DefaultPreemption holds hears only pod deletions (the event it registers).
        if e == ModelEvent::PodDelete {
            moving.extend(
                self.model.iter().filter(|(_, m)| m.place == Place::Held && worth(&m.rejectors, e)).map(|(&j, _)| j),
            );
        }
        self.requeue_all(moving);
    }

    /// Ends the oldest flight of pod `i`; the event count at its pop.
    fn end_flight(&mut self, i: usize) -> Option<u64> {
        let at = self.flights.iter().position(|&(j, _)| j == i)?;
        Some(self.flights.remove(at).1)
    }

    /// The pod the model pops next: highest priority, then earliest timestamp, then arrival;
    /// with none active and windows, the rejected backing-off pod of the earliest window, then
    /// by the same order.
    fn model_next(&self) -> Option<usize> {
        let active = self
            .model
            .iter()
            .filter(|(_, m)| m.place == Place::Active)
            .min_by_key(|(_, m)| (-i64::from(m.pod.priority), m.timestamp, m.seq))
            .map(|(&i, _)| i);
        if active.is_some() || !self.windows {
            return active;
        }
        self.model
            .iter()
            .filter_map(|(&i, m)| match m.place {
                Place::Backoff { expiry, error: false } => Some((i, expiry, m)),
                _ => None,
            })
            .min_by_key(|&(_, expiry, m)| (expiry, -i64::from(m.pod.priority), m.timestamp, m.seq))
            .map(|(i, _, _)| i)
    }

    fn compare(&self) -> Result<(), String> {
        let bad = self.queue.check_invariants();
        if !bad.is_empty() {
            return Err(bad.join("; "));
        }
        for (i, pod) in self.pods.iter().enumerate() {
            let want = match self.model.get(&i).map(|m| m.place) {
                Some(Place::Active) => Some(QueueLocation::Active),
                Some(Place::Backoff { .. }) => Some(QueueLocation::Backoff),
                Some(Place::Unschedulable | Place::Gated | Place::Held) => Some(QueueLocation::Unschedulable),
                Some(Place::InFlight) | None => None,
            };
            let got = self.queue.location(&pod.uid);
            if got != want {
                return Err(format!("pod {i} is in {got:?}, the model says {want:?}"));
            }
        }
        let max = self.config.max_in_unschedulable.as_nanos() as u64;
        let want_flush = self
            .model
            .values()
            .filter(|m| m.place == Place::Unschedulable && m.parked_at < self.events.len() as u64)
            .map(|m| m.timestamp + max + 1)
            .min();
        let got_flush = self.queue.next_leftover_flush().map(|t| t.0);
        if got_flush != want_flush {
            return Err(format!("next leftover flush at {got_flush:?}, the model says {want_flush:?}"));
        }
        let step = if self.windows { 1_000_000_000 } else { 1 };
        // Erred pods count only once an event followed their error.
        let events = self.events.len() as u64;
        let want_backoff = self
            .model
            .values()
            .filter_map(|m| match m.place {
                Place::Backoff { expiry, error } if !error || m.parked_at < events => Some(expiry + step),
                _ => None,
            })
            .min();
        let got_backoff = self.queue.next_backoff_expiry().map(|t| t.0);
        if got_backoff != want_backoff {
            return Err(format!("next backoff completion at {got_backoff:?}, the model says {want_backoff:?}"));
        }
        let held = self.model.values().filter(|m| m.is_queued()).count();
        if self.queue.num_pending() != held {
            return Err(format!("the queue holds {} pods, the model {held}", self.queue.num_pending()));
        }
        let bad = self.queue.nominator().map(|n| n.check_consistent()).unwrap_or_default();
        if !bad.is_empty() {
            return Err(bad.join("; "));
        }
        Ok(())
    }
}

/// The profile's PreEnqueue plugins on `m` (SchedulingGates, then DefaultPreemption; the
/// plugin that held it last, `m.gate`, first): where it is held, its rejectors gaining the plugin, or
/// `None` when every plugin lets it in.
fn pre_enqueue(m: &mut ModelPod, preempting: bool) -> Option<Place> {
    let order = if m.gate == Some(DEFAULT_PREEMPTION) {
        [DEFAULT_PREEMPTION, SCHEDULING_GATES]
    } else {
        [SCHEDULING_GATES, DEFAULT_PREEMPTION]
    };
    for plugin in order {
        let (rejects, place) = if plugin == SCHEDULING_GATES {
            (!m.pod.scheduling_gates.is_empty(), Place::Gated)
        } else {
            (preempting, Place::Held)
        };
        if rejects {
            if !m.rejectors.contains(&plugin) {
                m.rejectors.push(plugin);
            }
            m.gate = Some(plugin);
            return Some(place);
        }
    }
    m.gate = None;
    None
}

/// Pods 0 and 4 require pod affinity to `app=db` pods; odd pods carry `app=db`; pods 2 and 6
/// come nominated to a node.
fn wants_db(i: usize) -> bool {
    i % 4 == 0
}

fn make_pod(i: usize, priority: i32, gated: bool) -> Pod {
    let mut b = Pod::builder(&format!("p{i}")).priority(priority);
    if gated {
        b = b.scheduling_gate("example.com/wait");
    }
    if i % 2 == 1 {
        b = b.label("app", "db");
    }
    if wants_db(i) {
        b = b.affinity(super::requires_pod_affinity("app", "db"));
    }
    if i % 4 == 2 {
        b = b.nominated_node_name(&format!("n{}", i % 3));
    }
    b.build()
}

fn index_of(pod: &Pod) -> usize {
    pod.name.to_string()[1..].parse().unwrap_or(usize::MAX)
}
