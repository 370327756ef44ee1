//! The scheduling queue. This is the walking skeleton's queue: an active heap ordered by
//! priority (higher first) then arrival, and a parking list for unschedulable pods. The full
//! PriorityQueue (backoff, unschedulable leftovers, move requests) and the nominator replace
//! it behind the same trait.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;

use crate::api::Pod;
use crate::sync::{lock, Mutex};

/// A pod waiting in the queue with its bookkeeping.
#[derive(Clone, Debug)]
pub struct QueuedPodInfo {
    pub pod: Pod,
    /// Arrival order (a logical timestamp).
    pub seq: u64,
    pub attempts: u32,
}

pub trait SchedulingQueue: Send + Sync {
    fn add(&self, pod: Pod);
    /// The next pod to schedule, or `None` when the active queue is empty.
    fn pop(&self) -> Option<QueuedPodInfo>;
    /// Parks a pod that did not fit.
    fn add_unschedulable_if_not_present(&self, info: QueuedPodInfo, scheduling_cycle: u64);
    /// Moves every parked pod back to the active queue (a cluster event may have helped).
    fn move_all_to_active(&self);
    fn pending_pods(&self) -> usize;
    fn num_unschedulable(&self) -> usize;
}

struct Entry(QueuedPodInfo);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Max-heap: higher priority first, then the earlier arrival.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.0.pod.priority.cmp(&other.0.pod.priority).then_with(|| other.0.seq.cmp(&self.0.seq))
    }
}

#[derive(Default)]
struct Inner {
    active: BinaryHeap<Entry>,
    unschedulable: Vec<QueuedPodInfo>,
    seq: u64,
}

/// Priority order with a parking list; see the module docs.
#[derive(Default)]
pub struct SimpleQueue {
    inner: Mutex<Inner>,
}

impl SimpleQueue {
    pub fn new() -> SimpleQueue {
        SimpleQueue::default()
    }
}

impl SchedulingQueue for SimpleQueue {
    fn add(&self, pod: Pod) {
        let mut q = lock(&self.inner);
        q.seq += 1;
        let seq = q.seq;
        q.active.push(Entry(QueuedPodInfo { pod, seq, attempts: 0 }));
    }

    fn pop(&self) -> Option<QueuedPodInfo> {
        let mut q = lock(&self.inner);
        q.active.pop().map(|Entry(mut info)| {
            info.attempts += 1;
            info
        })
    }

    fn add_unschedulable_if_not_present(&self, info: QueuedPodInfo, _scheduling_cycle: u64) {
        let mut q = lock(&self.inner);
        if !q.unschedulable.iter().any(|i| i.pod.uid == info.pod.uid) {
            q.unschedulable.push(info);
        }
    }

    fn move_all_to_active(&self) {
        let mut q = lock(&self.inner);
        let parked = std::mem::take(&mut q.unschedulable);
        q.active.extend(parked.into_iter().map(Entry));
    }

    fn pending_pods(&self) -> usize {
        let q = lock(&self.inner);
        q.active.len() + q.unschedulable.len()
    }

    fn num_unschedulable(&self) -> usize {
        lock(&self.inner).unschedulable.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_queue_pops_priority_then_fifo_and_parks() {
        let q = SimpleQueue::new();
        for (name, prio) in [("a", 0), ("b", 10), ("c", 0), ("d", 10)] {
            q.add(Pod::builder(name).priority(prio).build());
        }
        let order: Vec<String> = std::iter::from_fn(|| q.pop()).map(|i| i.pod.name.to_string()).collect();
        assert_eq!(order, ["b", "d", "a", "c"]);
        q.add(Pod::builder("x").build());
        let x = q.pop().unwrap();
        q.add_unschedulable_if_not_present(x.clone(), 1);
        q.add_unschedulable_if_not_present(x, 1);
        assert_eq!((q.pending_pods(), q.num_unschedulable()), (1, 1));
        assert!(q.pop().is_none());
        q.move_all_to_active();
        let again = q.pop().unwrap();
        assert_eq!((&*again.pod.name, again.attempts), ("x", 2));
    }
}
