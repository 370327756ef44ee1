//! The scheduling queue: which pod is scheduled next, and where pods wait after failing.
//!
//! One trait, `SchedulingQueue`, two implementations: `PriorityQueue` (upstream's: activeQ,
//! backoffQ, unschedulable pods, move requests; diagram in `priority.rs`) and `Fifo` (arrival
//! order, no priorities, failed pods go straight back). The `Nominator` (pods nominated to
//! nodes by preemption) lives beside the PriorityQueue.

mod fifo;
mod heap;
pub mod nominator;
mod priority;

use thiserror::Error;

use smallvec::SmallVec;

use crate::api::{Node, Pod, PodUid};
use crate::framework::events::Event;
use crate::sync::{lock, Condvar, Mutex};
use crate::util::time::Timestamp;
pub use fifo::Fifo;
pub use nominator::Nominator;
pub use priority::{Flusher, PriorityQueue, QueueConfig};

/// A pod waiting in the queue with its bookkeeping.
#[derive(Clone, Debug)]
pub struct QueuedPodInfo {
    pub pod: Pod,
    /// When the pod last entered the queue (added, or returned after a failed attempt):
    /// orders activeQ among equal priorities and starts the backoff.
    pub timestamp: Timestamp,
    /// When the pod first entered the queue.
    pub initial_timestamp: Timestamp,
    /// Scheduling attempts so far (incremented by pop).
    pub attempts: u32,
    /// Attempts that ended with plugins rejecting the pod (upstream's UnschedulableCount):
    /// its backoff doubles with each.
    pub unschedulable_count: u32,
    /// Attempts in a row that ended with an error, no plugin rejecting the pod (a bind
    /// failure, an API error; upstream's ConsecutiveErrorsCount): while non-zero its backoff
    /// doubles with these instead; reset by a rejection.
    pub consecutive_errors: u32,
    /// Arrival order: the last tie-breaker, so equal timestamps pop first-in first-out.
    pub seq: u64,
    /// When the backoff ends (set when the pod enters backoffQ).
    pub(crate) backoff_expiry: Timestamp,
    /// The plugins that rejected the pod in its last attempt (upstream's UnschedulablePlugins;
    /// PreFilter rejections too). Set by the scheduler on failure, cleared by pop. Empty after
    /// an error: any event then moves the pod.
    pub unschedulable_plugins: SmallVec<[&'static str; 4]>,
    /// The queue's event count when the pod was parked (the leftover flush on a simulated
    /// clock only retries pods something happened after).
    pub(crate) parked_at_event: u64,
    /// Set while a PreEnqueue plugin holds the pod back (its status, the plugin named): the
    /// pod waits in the unschedulable pods until an event that plugin registered for lets it
    /// in (upstream's GatingPlugin).
    pub gated: Option<crate::framework::Status>,
}

impl QueuedPodInfo {
    /// A pod entering the queue now, as the `seq`-th arrival.
    pub(crate) fn fresh(pod: Pod, now: Timestamp, seq: u64) -> QueuedPodInfo {
        QueuedPodInfo {
            pod,
            timestamp: now,
            initial_timestamp: now,
            attempts: 0,
            unschedulable_count: 0,
            consecutive_errors: 0,
            seq,
            backoff_expiry: now,
            unschedulable_plugins: SmallVec::new(),
            parked_at_event: 0,
            gated: None,
        }
    }

    /// Whether a PreEnqueue plugin holds the pod back.
    pub fn is_gated(&self) -> bool {
        self.gated.is_some()
    }

    /// The failures its backoff counts: the errors in a row if the last attempt erred, else
    /// the rejections (0: never failed, no backoff).
    pub fn backoff_count(&self) -> u32 {
        if self.consecutive_errors > 0 {
            self.consecutive_errors
        } else {
            self.unschedulable_count
        }
    }

    /// Whether its last attempt failed without a rejecting plugin (an error): such a pod
    /// waits out its backoff in the error backoff queue, never popped early.
    pub fn failed_by_error(&self) -> bool {
        self.consecutive_errors > 0
    }
}

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum QueueError {
    #[error("scheduling queue is closed")]
    Closed,
    #[error("pod {pod}: already queued (active, backoff or unschedulable)")]
    AlreadyQueued { pod: String },
}

/// Which sub-queue holds a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLocation {
    Active,
    Backoff,
    Unschedulable,
}

pub trait SchedulingQueue: Send + Sync {
    /// Adds a new pod to activeQ (moving it there if another sub-queue held it).
    fn add(&self, pod: Pod) -> Result<(), QueueError>;
    /// Adds the pod unless some sub-queue already holds it.
    fn add_if_not_present(&self, pod: Pod) -> Result<(), QueueError>;
    /// Returns a pod whose attempt failed (`info.unschedulable_plugins` says which plugins
    /// rejected it): parked as unschedulable, or to backoff / active if an event that may make
    /// it schedulable arrived while it was in flight. Errors if any sub-queue already holds it
    /// (a newer version an informer add or update queued while it was in flight).
    fn add_unschedulable_if_not_present(&self, info: QueuedPodInfo) -> Result<(), QueueError>;
    /// The next pod; blocks while activeQ is empty; `Err(Closed)` once it is empty and closed
    /// (closing wakes every waiter; pods accepted before the close still come out).
    fn pop(&self) -> Result<QueuedPodInfo, QueueError>;
    /// The next pod if activeQ has one (never blocks).
    fn try_pop(&self) -> Option<QueuedPodInfo>;
    /// Pops so far: the cycle the most recently popped pod belongs to.
    fn scheduling_cycle(&self) -> u64;
    /// An informer Update of a pending pod.
    fn update(&self, old: &Pod, new: Pod) -> Result<(), QueueError>;
    /// An informer Delete of a pending pod.
    fn delete(&self, pod: &Pod);
    /// A popped pod's attempt is over without a return to the queue (bound, or gone): the
    /// queue stops keeping events for it.
    fn done(&self, uid: &PodUid);
    /// Moves the pod from the unschedulable pods or backoffQ to activeQ at once (upstream's
    /// Activate; PreEnqueue still runs). A pod in flight, in activeQ or unknown is left alone.
    fn activate(&self, _pod: &Pod) {}
    /// A cluster event (upstream's MoveAllToActiveOrBackoffQueue): each parked pod moves to
    /// backoffQ or activeQ when a plugin that rejected it registered for the event and its
    /// queueing hint says Queue; pods in flight remember the event for when they fail.
    fn on_event(&self, event: &Event);
    /// A change that cannot be named: every parked pod moves.
    fn move_all_to_active(&self) {
        self.on_event(&Event::wildcard());
    }
    /// A pod was bound (the informer's add of an assigned pod).
    fn assigned_pod_added(&self, pod: &Pod) {
        self.on_event(&Event::assigned_pod_add(pod));
    }
    /// A bound pod changed.
    fn assigned_pod_updated(&self, old: &Pod, new: &Pod) {
        if let Some(e) = Event::assigned_pod_update(old, new) {
            self.on_event(&e);
        }
    }
    /// A bound pod was deleted.
    fn assigned_pod_deleted(&self, pod: &Pod) {
        self.on_event(&Event::assigned_pod_delete(pod));
    }
    fn node_added(&self, node: &Node) {
        self.on_event(&Event::node_add(node));
    }
    /// A node changed; nothing happens when nothing the scheduler reads changed.
    fn node_updated(&self, old: &Node, new: &Node) {
        if let Some(e) = Event::node_update(old, new) {
            self.on_event(&e);
        }
    }
    fn node_deleted(&self, node: &Node) {
        self.on_event(&Event::node_delete(node));
    }
    /// Every pod held, in no particular order.
    fn pending_pods(&self) -> Vec<Pod>;
    /// The pods a PreEnqueue plugin holds back, with its status (in no particular order).
    fn gated_pods(&self) -> Vec<(Pod, crate::framework::Status)> {
        Vec::new()
    }
    fn num_pending(&self) -> usize;
    fn num_unschedulable(&self) -> usize;
    /// Closes the queue: adds are refused from now on, pops fail once activeQ is empty, and
    /// blocked pops return.
    fn close(&self);
    /// The nominator, for queues that keep one.
    fn nominator(&self) -> Option<&Nominator>;
}

/// The blocking pop both queues share: waits on `nonempty` until `take` yields a pod; fails
/// when the queue is empty and closed (close notifies every waiter). Pods accepted before the
/// close are still handed out, as upstream's queue does.
fn blocking_pop<T>(
    inner: &Mutex<T>,
    nonempty: &Condvar,
    closed: impl Fn(&T) -> bool,
    mut take: impl FnMut(&mut T) -> Option<QueuedPodInfo>,
) -> Result<QueuedPodInfo, QueueError> {
    let mut q = lock(inner);
    loop {
        if let Some(info) = take(&mut q) {
            return Ok(info);
        }
        if closed(&q) {
            return Err(QueueError::Closed);
        }
        q = nonempty.wait(q).unwrap_or_else(|e| e.into_inner());
    }
}

#[cfg(test)]
mod tests;
