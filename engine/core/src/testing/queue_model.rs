//! A plain model of the PriorityQueue and a harness that runs one operation on both and
//! compares them. The property test (`queue::tests`) and the `queue_ops` fuzz target drive it
//! with the same operations.
//!
//! The model keeps each pod's place in a `HashMap` and finds the next pod by scanning: slow
//! and obviously right. After every operation the harness checks that the queue holds every
//! pod exactly where the model says (so nothing is lost or held twice), that a pop returns
//! the model's choice, and the queue's own invariants.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::api::{Pod, Sym};
use crate::queue::{PriorityQueue, QueueConfig, QueueError, QueueLocation, QueuedPodInfo, SchedulingQueue};
use crate::util::time::{Clock, MockClock, Timestamp};

/// How many distinct pods the operations name.
pub const PODS: usize = 8;

/// One operation; pod indices are taken modulo `PODS`.
#[derive(Clone, Debug)]
pub enum QueueOp {
    Add {
        pod: usize,
        priority: i32,
    },
    AddIfNotPresent {
        pod: usize,
    },
    Pop,
    /// The `k`-th in-flight pod failed (modulo how many are in flight).
    Fail {
        k: usize,
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
    Advance {
        millis: u32,
    },
    FlushBackoff,
    FlushLeftover,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Active,
    Backoff {
        expiry: u64,
    },
    Unschedulable,
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
    in_flight: Vec<(usize, QueuedPodInfo, u64)>,
    now: u64,
    cycle: u64,
    move_request: Option<u64>,
    seq: u64,
}

impl Default for QueueHarness {
    fn default() -> Self {
        Self::new()
    }
}

impl QueueHarness {
    pub fn new() -> QueueHarness {
        let clock = Arc::new(MockClock::new(Timestamp::from_secs(1000)));
        let config = QueueConfig::new().with_clock(clock.clone() as Arc<dyn Clock>);
        QueueHarness {
            queue: PriorityQueue::new(config.clone()),
            now: clock.now().0,
            clock,
            config,
            pods: (0..PODS).map(|i| make_pod(i, 0)).collect(),
            model: HashMap::new(),
            in_flight: Vec::new(),
            cycle: 0,
            move_request: None,
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
            QueueOp::Add { pod, priority } => {
                let i = pod % PODS;
                self.pods[i] = make_pod(i, priority);
                let pod = self.pods[i].clone();
                self.queue.add(pod.clone()).map_err(|e| e.to_string())?;
                match self.model.get_mut(&i) {
                    Some(m) if m.place == Place::Active => m.pod = pod,
                    _ => {
                        let seq = self.next_seq();
                        self.model.insert(i, fresh(pod, now, seq));
                    }
                }
            }
            QueueOp::AddIfNotPresent { pod } => {
                let i = pod % PODS;
                let pod = self.pods[i].clone();
                self.queue.add_if_not_present(pod.clone()).map_err(|e| e.to_string())?;
                if !self.model.get(&i).is_some_and(|m| m.is_queued()) {
                    let seq = self.next_seq();
                    self.model.insert(i, fresh(pod, now, seq));
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
                    self.cycle += 1;
                    let m = self.model.get_mut(&i).ok_or("popped pod missing from the model")?;
                    m.attempts += 1;
                    m.place = Place::InFlight;
                    if info.attempts != m.attempts {
                        return Err(format!("pod {i}: {} attempts, the model counts {}", info.attempts, m.attempts));
                    }
                    self.in_flight.push((i, info, self.cycle));
                }
            }
            QueueOp::Fail { k } => {
                if self.in_flight.is_empty() {
                    return Ok(());
                }
                let (i, info, cycle) = self.in_flight.remove(k % self.in_flight.len());
                let queued_again =
                    self.model.get(&i).is_some_and(|m| matches!(m.place, Place::Active | Place::Backoff { .. }));
                match self.queue.add_unschedulable_if_not_present(info.clone(), cycle) {
                    Err(QueueError::AlreadyQueued { .. }) if queued_again => {}
                    Err(e) => return Err(format!("fail pod {i}: {e}")),
                    Ok(()) if queued_again => return Err(format!("fail pod {i}: accepted a pod already queued")),
                    Ok(()) => {
                        // The returned info replaces whatever the model had (in flight, parked
                        // by an earlier copy of the same pod, or deleted meanwhile).
                        let mut m = ModelPod {
                            place: Place::Unschedulable,
                            pod: info.pod,
                            timestamp: now,
                            seq: info.seq,
                            attempts: info.attempts,
                        };
                        if self.move_request.is_some_and(|mr| mr >= cycle) {
                            m.place = self.requeue_place(&m);
                        }
                        self.model.insert(i, m);
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
                self.queue.assigned_pod_added(&info.pod);
                let db = info.pod.labels.get(Sym::new("app")) == Some(Sym::new("db"));
                let moving = self.parked(|j, _| db && wants_db(j));
                self.requeue_all(moving);
            }
            QueueOp::Update { pod, changed } => {
                let i = pod % PODS;
                let old = self.pods[i].clone();
                if changed {
                    self.pods[i] = make_pod(i, old.priority);
                }
                let new = self.pods[i].clone();
                self.queue.update(&old, new.clone()).map_err(|e| e.to_string())?;
                match self.model.get_mut(&i) {
                    Some(m) if matches!(m.place, Place::Active | Place::Backoff { .. }) => m.pod = new,
                    Some(m) if m.place == Place::Unschedulable => {
                        let spec_changed = !m.pod.same_spec(&new);
                        m.pod = new;
                        if spec_changed {
                            let place = self.requeue_place(&self.model[&i]);
                            if let Some(m) = self.model.get_mut(&i) {
                                m.place = place;
                            }
                        }
                    }
                    _ => {
                        let seq = self.next_seq();
                        self.model.insert(i, fresh(new, now, seq));
                    }
                }
            }
            QueueOp::Delete { pod } => {
                let i = pod % PODS;
                self.queue.delete(&self.pods[i]);
                if self.model.get(&i).is_some_and(|m| m.is_queued()) {
                    self.model.remove(&i);
                }
            }
            QueueOp::MoveAll => {
                self.queue.move_all_to_active();
                let all = self.parked(|_, _| true);
                self.requeue_all(all);
            }
            QueueOp::Advance { millis } => {
                let d = Duration::from_millis(u64::from(millis));
                self.clock.advance(d);
                self.now += d.as_nanos() as u64;
            }
            QueueOp::FlushBackoff => {
                self.queue.flush_backoff_completed();
                for m in self.model.values_mut() {
                    if matches!(m.place, Place::Backoff { expiry } if expiry <= now) {
                        m.place = Place::Active;
                    }
                }
            }
            QueueOp::FlushLeftover => {
                self.queue.flush_unschedulable_leftover();
                let max = self.config.max_in_unschedulable.as_nanos() as u64;
                let old = self.parked(|_, m| now.saturating_sub(m.timestamp) > max);
                self.requeue_all(old);
            }
        }
        self.compare()
    }

    /// The parked pods satisfying `f`.
    fn parked(&self, f: impl Fn(usize, &ModelPod) -> bool) -> Vec<usize> {
        self.model.iter().filter(|(&j, m)| m.place == Place::Unschedulable && f(j, m)).map(|(&j, _)| j).collect()
    }

    /// Backoff until `timestamp` + backoff(attempts), or activeQ if that has passed.
    fn requeue_place(&self, m: &ModelPod) -> Place {
        let expiry = m.timestamp + self.config.backoff_duration(m.attempts).as_nanos() as u64;
        if expiry > self.now {
            Place::Backoff { expiry }
        } else {
            Place::Active
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Moves parked pods back and records the move request.
    fn requeue_all(&mut self, pods: Vec<usize>) {
        for j in pods {
            let place = self.requeue_place(&self.model[&j]);
            if let Some(m) = self.model.get_mut(&j) {
                m.place = place;
            }
        }
        self.move_request = Some(self.cycle);
    }

    /// The pod the model pops next: highest priority, then earliest timestamp, then arrival.
    fn model_next(&self) -> Option<usize> {
        self.model
            .iter()
            .filter(|(_, m)| m.place == Place::Active)
            .min_by_key(|(_, m)| (-i64::from(m.pod.priority), m.timestamp, m.seq))
            .map(|(&i, _)| i)
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
                Some(Place::Unschedulable) => Some(QueueLocation::Unschedulable),
                Some(Place::InFlight) | None => None,
            };
            let got = self.queue.location(&pod.uid);
            if got != want {
                return Err(format!("pod {i} is in {got:?}, the model says {want:?}"));
            }
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

fn fresh(pod: Pod, now: u64, seq: u64) -> ModelPod {
    ModelPod { place: Place::Active, pod, timestamp: now, seq, attempts: 0 }
}

/// Pods 0 and 4 require pod affinity to `app=db` pods; odd pods carry `app=db`; pods 2 and 6
/// come nominated to a node.
fn wants_db(i: usize) -> bool {
    i % 4 == 0
}

fn make_pod(i: usize, priority: i32) -> Pod {
    let mut b = Pod::builder(&format!("p{i}")).priority(priority);
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
