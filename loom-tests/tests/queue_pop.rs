//! The PriorityQueue's blocking pop racing adds and close: no lost wake-up (loom reports a
//! deadlock if a popper sleeps forever), no pod lost, none popped twice.
#![cfg(ksched_loom)]

use std::sync::Arc as StdArc;

use ksched_engine::api::Pod;
use ksched_engine::queue::{PriorityQueue, QueueConfig, QueueError, SchedulingQueue};
use ksched_engine::sync::{thread, Arc};
use ksched_engine::util::time::{Clock, MockClock, Timestamp};

fn queue() -> Arc<PriorityQueue> {
    let clock: StdArc<dyn Clock> = StdArc::new(MockClock::new(Timestamp::from_secs(1)));
    Arc::new(PriorityQueue::new(QueueConfig::new().with_clock(clock)))
}

/// Two poppers block on an empty queue; two adds must wake both, each with its own pod.
#[test]
fn two_blocked_pops_get_two_adds() {
    loom::model(|| {
        let q = queue();
        let poppers: Vec<_> = (0..2)
            .map(|_| {
                let q = Arc::clone(&q);
                thread::spawn(move || q.pop().map(|i| i.pod.name.to_string()))
            })
            .collect();
        q.add(Pod::builder("a").build()).unwrap();
        q.add(Pod::builder("b").build()).unwrap();
        let mut got: Vec<String> = poppers.into_iter().map(|p| p.join().unwrap().unwrap()).collect();
        got.sort();
        assert_eq!(got, ["a", "b"]);
        assert_eq!(q.num_pending(), 0);
    });
}

/// pop, add and close from three threads: the pod is popped, or still queued, or its add
/// was refused, exactly one of the three; a blocked pop always returns.
#[test]
fn pop_add_close_accounts_for_the_pod_exactly_once() {
    loom::model(|| {
        let q = queue();
        let popper = {
            let q = Arc::clone(&q);
            thread::spawn(move || q.pop())
        };
        let adder = {
            let q = Arc::clone(&q);
            thread::spawn(move || q.add(Pod::builder("p").build()))
        };
        q.close();
        let popped = match popper.join().unwrap() {
            Ok(info) => {
                assert_eq!(&*info.pod.name, "p");
                1
            }
            Err(e) => {
                assert_eq!(e, QueueError::Closed);
                0
            }
        };
        let refused = usize::from(adder.join().unwrap().is_err());
        assert_eq!(
            popped + refused + q.num_pending(),
            1,
            "popped {popped}, refused {refused}, queued {}",
            q.num_pending()
        );
    });
}

/// SchedulerPopFromBackoffQ: a pop blocked on an empty activeQ wakes when a failed pod
/// enters backoffQ (a move request arrived during its attempt) and takes it from there.
#[test]
fn blocked_pop_wakes_for_a_pod_entering_backoff() {
    loom::model(|| {
        let q = queue();
        q.add(Pod::builder("p").build()).unwrap();
        let mut info = q.try_pop().unwrap();
        let popper = {
            let q = Arc::clone(&q);
            thread::spawn(move || q.pop().map(|i| (i.pod.name.to_string(), i.attempts)))
        };
        q.move_all_to_active();
        info.unschedulable_plugins.push("NodeResourcesFit");
        q.add_unschedulable_if_not_present(info).unwrap();
        assert_eq!(popper.join().unwrap().unwrap(), ("p".to_string(), 2));
        assert_eq!(q.num_pending(), 0);
    });
}
