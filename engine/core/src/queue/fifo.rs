//! A first-in first-out queue with the `SchedulingQueue` interface (upstream's FIFO mode): no
//! priorities, no backoff, no parking; a failed pod goes straight to the back.

use std::collections::VecDeque;

use super::{blocking_pop, Nominator, QueueError, QueuedPodInfo, SchedulingQueue};
use crate::api::{Pod, PodUid};
use crate::framework::events::Event;
use crate::sync::{lock, Condvar, Mutex};
use crate::util::hash::FxHashMap;
use crate::util::time::Timestamp;

#[derive(Default)]
struct Inner {
    /// Arrival order; an entry whose seq no longer matches `pods` is stale and skipped.
    order: VecDeque<(PodUid, u64)>,
    pods: FxHashMap<PodUid, QueuedPodInfo>,
    seq: u64,
    cycle: u64,
    closed: bool,
}

#[derive(Default)]
pub struct Fifo {
    inner: Mutex<Inner>,
    nonempty: Condvar,
}

impl Fifo {
    pub fn new() -> Fifo {
        Fifo::default()
    }

    fn push(&self, q: &mut Inner, mut info: QueuedPodInfo) {
        q.seq += 1;
        info.seq = q.seq;
        q.order.push_back((info.pod.uid.clone(), info.seq));
        q.pods.insert(info.pod.uid.clone(), info);
        self.nonempty.notify_one();
    }
}

fn fresh(pod: Pod) -> QueuedPodInfo {
    QueuedPodInfo::fresh(pod, Timestamp::default(), 0)
}

fn pop_front(q: &mut Inner) -> Option<QueuedPodInfo> {
    while let Some((uid, seq)) = q.order.pop_front() {
        if q.pods.get(&uid).is_some_and(|i| i.seq == seq) {
            let mut info = q.pods.remove(&uid)?;
            info.attempts += 1;
            q.cycle += 1;
            return Some(info);
        }
    }
    None
}

impl SchedulingQueue for Fifo {
    /// A pod already queued is updated in place and keeps its turn.
    fn add(&self, pod: Pod) -> Result<(), QueueError> {
        let mut q = lock(&self.inner);
        if q.closed {
            return Err(QueueError::Closed);
        }
        match q.pods.get_mut(&pod.uid) {
            Some(info) => info.pod = pod,
            None => self.push(&mut q, fresh(pod)),
        }
        Ok(())
    }

    fn add_if_not_present(&self, pod: Pod) -> Result<(), QueueError> {
        let mut q = lock(&self.inner);
        if q.closed {
            return Err(QueueError::Closed);
        }
        if !q.pods.contains_key(&pod.uid) {
            self.push(&mut q, fresh(pod));
        }
        Ok(())
    }

    fn add_unschedulable_if_not_present(&self, info: QueuedPodInfo) -> Result<(), QueueError> {
        let mut q = lock(&self.inner);
        if q.closed {
            return Err(QueueError::Closed);
        }
        if !q.pods.contains_key(&info.pod.uid) {
            self.push(&mut q, info);
        }
        Ok(())
    }

    fn pop(&self) -> Result<QueuedPodInfo, QueueError> {
        blocking_pop(&self.inner, &self.nonempty, |q| q.closed, pop_front)
    }

    fn try_pop(&self) -> Option<QueuedPodInfo> {
        pop_front(&mut lock(&self.inner))
    }

    fn scheduling_cycle(&self) -> u64 {
        lock(&self.inner).cycle
    }

    fn update(&self, _old: &Pod, new: Pod) -> Result<(), QueueError> {
        self.add(new)
    }

    fn delete(&self, pod: &Pod) {
        lock(&self.inner).pods.remove(&pod.uid);
    }

    fn done(&self, _uid: &PodUid) {}

    /// Failed pods go straight back: no pod waits for an event.
    fn on_event(&self, _event: &Event) {}

    fn pending_pods(&self) -> Vec<Pod> {
        lock(&self.inner).pods.values().map(|i| i.pod.clone()).collect()
    }

    fn num_pending(&self) -> usize {
        lock(&self.inner).pods.len()
    }

    fn num_unschedulable(&self) -> usize {
        0
    }

    fn close(&self) {
        lock(&self.inner).closed = true;
        self.nonempty.notify_all();
    }

    fn nominator(&self) -> Option<&Nominator> {
        None
    }
}
