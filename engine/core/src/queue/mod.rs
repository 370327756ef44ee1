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

use crate::api::Pod;
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
    /// Arrival order: the last tie-breaker, so equal timestamps pop first-in first-out.
    pub seq: u64,
    /// When the backoff ends (set when the pod enters backoffQ).
    pub(crate) backoff_expiry: Timestamp,
}

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum QueueError {
    #[error("scheduling queue is closed")]
    Closed,
    #[error("pod {pod}: already in the active or backoff queue")]
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
    /// Returns a pod whose attempt (popped in `cycle`) failed: parked as unschedulable, or to
    /// backoff if a move request arrived since that cycle. Errors if it is already queued.
    fn add_unschedulable_if_not_present(&self, info: QueuedPodInfo, cycle: u64) -> Result<(), QueueError>;
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
    /// A cluster event that may make any parked pod schedulable.
    fn move_all_to_active(&self);
    /// A pod was bound: parked pods whose required pod affinity it satisfies move.
    fn assigned_pod_added(&self, pod: &Pod);
    fn assigned_pod_updated(&self, pod: &Pod);
    /// Every pod held, in no particular order.
    fn pending_pods(&self) -> Vec<Pod>;
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
