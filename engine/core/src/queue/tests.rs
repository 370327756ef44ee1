use std::sync::Arc as StdArc;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::api::{Pod, Sym};
use crate::testing::queue_model::{QueueHarness, QueueOp};
use crate::util::time::{Clock, MockClock};

fn pq() -> (PriorityQueue, StdArc<MockClock>) {
    let clock = StdArc::new(MockClock::new(Timestamp::from_secs(100)));
    (PriorityQueue::new(QueueConfig::new().with_clock(clock.clone() as StdArc<dyn Clock>)), clock)
}

fn pod(name: &str, priority: i32) -> Pod {
    Pod::builder(name).priority(priority).build()
}

fn names(q: &dyn SchedulingQueue) -> Vec<String> {
    std::iter::from_fn(|| q.try_pop()).map(|i| i.pod.name.to_string()).collect()
}

#[test]
fn backoff_doubles_from_initial_to_max() {
    let c = QueueConfig::new();
    let got: Vec<u64> = (0..7).map(|a| c.backoff_duration(a).as_secs()).collect();
    assert_eq!(got, [1, 1, 2, 4, 8, 10, 10]);
    let c = QueueConfig { initial_backoff: Duration::from_millis(300), max_backoff: Duration::from_secs(1), ..c };
    let got: Vec<u128> = (1..6).map(|a| c.backoff_duration(a).as_millis()).collect();
    assert_eq!(got, [300, 600, 1000, 1000, 1000]);
}

#[test]
fn active_queue_pops_priority_then_timestamp_then_arrival() {
    let (q, clock) = pq();
    q.add(pod("late-low", 0)).unwrap();
    q.add(pod("late-high", 10)).unwrap();
    clock.advance(Duration::from_secs(1));
    q.add(pod("later-high", 10)).unwrap();
    q.add(pod("later-low", 0)).unwrap();
    assert_eq!(names(&q), ["late-high", "later-high", "late-low", "later-low"]);
}

#[test]
fn failed_pod_parks_unless_a_move_request_arrived_during_its_cycle() {
    // (description, move request during the attempt, where the pod goes)
    let cases =
        [("no move request", false, QueueLocation::Unschedulable), ("move request", true, QueueLocation::Backoff)];
    for (desc, moved, want) in cases {
        let (q, _) = pq();
        q.add(pod("p", 0)).unwrap();
        let info = q.try_pop().unwrap();
        let cycle = q.scheduling_cycle();
        if moved {
            q.move_all_to_active();
        }
        q.add_unschedulable_if_not_present(info, cycle).unwrap();
        assert_eq!(q.location(&pod("p", 0).uid), Some(want), "{desc}");
    }
}

#[test]
fn add_unschedulable_refuses_a_pod_already_queued() {
    let (q, _) = pq();
    q.add(pod("p", 0)).unwrap();
    let info = q.try_pop().unwrap();
    q.add(pod("p", 0)).unwrap();
    let err = q.add_unschedulable_if_not_present(info, 1).unwrap_err();
    assert_eq!(err.to_string(), "pod default/p: already in the active or backoff queue");
    assert_eq!(q.lens(), (1, 0, 0));
}

#[test]
fn move_all_sends_backing_off_pods_to_backoff_and_the_rest_to_active() {
    let (q, clock) = pq();
    for n in ["a", "b"] {
        q.add(pod(n, 0)).unwrap();
    }
    let a = q.try_pop().unwrap();
    q.add_unschedulable_if_not_present(a, q.scheduling_cycle()).unwrap();
    clock.advance(Duration::from_secs(5));
    let b = q.try_pop().unwrap();
    q.add_unschedulable_if_not_present(b, q.scheduling_cycle()).unwrap();
    assert_eq!(q.num_unschedulable(), 2);
    // a failed 5 s ago (backoff 1 s: done); b just now (still backing off).
    q.move_all_to_active();
    assert_eq!(q.location(&pod("a", 0).uid), Some(QueueLocation::Active));
    assert_eq!(q.location(&pod("b", 0).uid), Some(QueueLocation::Backoff));
    // The backoff flush moves b once its 1 s is up, not before.
    clock.advance(Duration::from_millis(999));
    q.flush_backoff_completed();
    assert_eq!(q.location(&pod("b", 0).uid), Some(QueueLocation::Backoff));
    clock.advance(Duration::from_millis(1));
    q.flush_backoff_completed();
    assert_eq!(names(&q), ["a", "b"]);
}

#[test]
fn leftover_flush_moves_only_pods_parked_longer_than_the_limit() {
    let (q, clock) = pq();
    for n in ["old", "new"] {
        q.add(pod(n, 0)).unwrap();
    }
    let old = q.try_pop().unwrap();
    q.add_unschedulable_if_not_present(old, q.scheduling_cycle()).unwrap();
    clock.advance(Duration::from_secs(50));
    let new = q.try_pop().unwrap();
    q.add_unschedulable_if_not_present(new, q.scheduling_cycle()).unwrap();
    clock.advance(Duration::from_secs(11));
    q.flush_unschedulable_leftover();
    assert_eq!(q.location(&pod("old", 0).uid), Some(QueueLocation::Active));
    assert_eq!(q.location(&pod("new", 0).uid), Some(QueueLocation::Unschedulable));
}

#[test]
fn update_moves_a_parked_pod_only_when_its_spec_changed() {
    let (q, clock) = pq();
    let p = pod("p", 0);
    q.add(p.clone()).unwrap();
    let info = q.try_pop().unwrap();
    q.add_unschedulable_if_not_present(info, q.scheduling_cycle()).unwrap();
    clock.advance(Duration::from_secs(2));
    q.update(&p, p.clone()).unwrap();
    assert_eq!(q.location(&p.uid), Some(QueueLocation::Unschedulable), "same spec stays parked");
    let changed = Pod::builder("p").label("fixed", "yes").build();
    q.update(&p, changed).unwrap();
    assert_eq!(q.location(&p.uid), Some(QueueLocation::Active), "a changed spec is retried");
    // An update of a pod the queue does not hold adds it.
    q.update(&pod("x", 0), pod("x", 0)).unwrap();
    assert_eq!(q.location(&pod("x", 0).uid), Some(QueueLocation::Active));
}

#[test]
fn assigned_pod_added_moves_only_pods_whose_affinity_it_satisfies() {
    let wants = |name: &str, ns: &str| {
        Pod::builder(name).namespace(ns).affinity(crate::testing::requires_pod_affinity("app", "db")).build()
    };
    let (q, clock) = pq();
    let parked = [wants("same-ns", "default"), wants("other-ns", "prod"), pod("plain", 0)];
    for p in &parked {
        q.add(p.clone()).unwrap();
        let info = q.try_pop().unwrap();
        q.add_unschedulable_if_not_present(info, q.scheduling_cycle()).unwrap();
    }
    clock.advance(Duration::from_secs(5));
    q.assigned_pod_added(&Pod::builder("db").label("app", "db").build());
    let loc: Vec<_> = parked.iter().map(|p| q.location(&p.uid)).collect();
    assert_eq!(
        loc,
        [Some(QueueLocation::Active), Some(QueueLocation::Unschedulable), Some(QueueLocation::Unschedulable)]
    );
}

#[test]
fn delete_removes_from_every_sub_queue_and_the_nominator() {
    let (q, _) = pq();
    let nominated = Pod::builder("n").nominated_node_name("node-1").build();
    q.add(nominated.clone()).unwrap();
    assert_eq!(q.nominator().unwrap().nominated_pods_for_node(Sym::new("node-1")).len(), 1);
    q.add(pod("parked", 0)).unwrap();
    let info = q.try_pop().unwrap(); // "n" and "parked" have equal priority: n came first
    assert_eq!(&*info.pod.name, "n");
    q.delete(&nominated);
    let parked = q.try_pop().unwrap();
    q.add_unschedulable_if_not_present(parked.clone(), q.scheduling_cycle()).unwrap();
    q.delete(&parked.pod);
    assert_eq!(q.num_pending(), 0);
    assert!(q.nominator().unwrap().is_empty());
}

#[test]
fn closed_queue_refuses_and_unblocks() {
    let q = StdArc::new(pq().0);
    let waiter = {
        let q = StdArc::clone(&q);
        std::thread::spawn(move || q.pop())
    };
    q.close();
    assert_eq!(waiter.join().unwrap().unwrap_err(), QueueError::Closed);
    assert_eq!(q.add(pod("p", 0)), Err(QueueError::Closed));
    assert!(q.try_pop().is_none());
}

#[test]
fn pods_accepted_before_close_still_come_out() {
    let (q, _) = pq();
    q.add(pod("a", 0)).unwrap();
    q.close();
    assert_eq!(&*q.pop().unwrap().pod.name, "a");
    assert_eq!(q.pop().unwrap_err(), QueueError::Closed);
}

#[test]
fn blocking_pop_wakes_on_add() {
    let q = StdArc::new(pq().0);
    let waiter = {
        let q = StdArc::clone(&q);
        std::thread::spawn(move || q.pop().map(|i| i.pod.name.to_string()))
    };
    q.add(pod("p", 0)).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap(), "p");
}

#[test]
fn fifo_keeps_arrival_order_and_requeues_failures_at_the_back() {
    let q = Fifo::new();
    for (n, prio) in [("a", 0), ("b", 100), ("c", 0)] {
        q.add(pod(n, prio)).unwrap();
    }
    let a = q.try_pop().unwrap();
    q.add_unschedulable_if_not_present(a, 1).unwrap();
    q.delete(&pod("c", 0));
    q.add_if_not_present(pod("b", 0)).unwrap(); // already there: keeps its turn
    assert_eq!(names(&q), ["b", "a"]);
    assert_eq!((q.num_pending(), q.num_unschedulable()), (0, 0));
    q.close();
    assert_eq!(q.pop().unwrap_err(), QueueError::Closed);
}

// ----- the nominator -----

#[test]
fn nominator_add_table() {
    let node = |n: &str| Some(Sym::new(n));
    // (description, the pod's nominatedNodeName, the node passed to add, where it ends)
    type Case<'a> = (&'a str, Option<&'a str>, Option<Sym>, Option<&'a str>);
    let cases: [Case; 4] = [
        ("explicit node", None, node("a"), Some("a")),
        ("falls back to nominatedNodeName", Some("b"), None, Some("b")),
        ("explicit node wins", Some("b"), node("a"), Some("a")),
        ("neither: nothing recorded", None, None, None),
    ];
    for (desc, field, arg, want) in cases {
        let n = Nominator::new();
        let mut b = Pod::builder("p");
        if let Some(f) = field {
            b = b.nominated_node_name(f);
        }
        let p = b.build();
        n.add(&p, arg);
        n.add(&p, arg); // twice: never duplicated
        assert_eq!(n.nominated_node(&p.uid), want.map(Sym::new), "{desc}");
        let listed: usize = ["a", "b"].iter().map(|x| n.nominated_pods_for_node(Sym::new(x)).len()).sum();
        assert_eq!(listed, usize::from(want.is_some()), "{desc}");
        assert!(n.check_consistent().is_empty(), "{desc}: {:?}", n.check_consistent());
    }
}

#[test]
fn nominator_moves_deletes_and_updates() {
    let n = Nominator::new();
    let p = Pod::builder("p").build();
    n.add(&p, Some(Sym::new("a")));
    n.add(&p, Some(Sym::new("b")));
    assert!(n.nominated_pods_for_node(Sym::new("a")).is_empty(), "the old entry is deleted first");
    assert_eq!(n.nominated_pods_for_node(Sym::new("b")).len(), 1);
    // An update carrying no nominatedNodeName keeps the scheduler's nomination.
    n.update(&p, &Pod::builder("p").label("x", "y").build());
    assert_eq!(n.nominated_node(&p.uid), Some(Sym::new("b")));
    n.delete(&p);
    assert!(n.is_empty());
    assert!(n.check_consistent().is_empty());
}

// ----- against the model -----

fn op_strategy() -> impl Strategy<Value = QueueOp> {
    prop_oneof![
        3 => (0..8usize, -2..3i32).prop_map(|(pod, priority)| QueueOp::Add { pod, priority }),
        1 => (0..8usize).prop_map(|pod| QueueOp::AddIfNotPresent { pod }),
        4 => Just(QueueOp::Pop),
        3 => (0..4usize).prop_map(|k| QueueOp::Fail { k }),
        1 => (0..4usize).prop_map(|k| QueueOp::Bind { k }),
        1 => (0..8usize, any::<bool>()).prop_map(|(pod, changed)| QueueOp::Update { pod, changed }),
        1 => (0..8usize).prop_map(|pod| QueueOp::Delete { pod }),
        1 => Just(QueueOp::MoveAll),
        2 => (0..15_000u32).prop_map(|millis| QueueOp::Advance { millis }),
        1 => Just(QueueOp::FlushBackoff),
        1 => Just(QueueOp::FlushLeftover),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Ordering, no loss and no duplicates across activeQ, backoffQ and the unschedulable pods,
    /// checked against the plain model after every operation.
    #[test]
    fn priority_queue_matches_model(ops in prop::collection::vec(op_strategy(), 1..80)) {
        let mut h = QueueHarness::new();
        for (step, op) in ops.iter().enumerate() {
            if let Err(e) = h.apply(op) {
                prop_assert!(false, "step {step} {op:?}: {e}");
            }
        }
    }
}

#[test]
fn flusher_thread_moves_expired_backoffs_and_closes_the_queue_on_drop() {
    let clock = StdArc::new(MockClock::new(Timestamp::from_secs(100)));
    let config = QueueConfig { backoff_flush_period: Duration::from_millis(1), ..QueueConfig::new() }
        .with_clock(clock.clone() as StdArc<dyn Clock>);
    let q = StdArc::new(PriorityQueue::new(config));
    q.add(pod("p", 0)).unwrap();
    let info = q.try_pop().unwrap();
    q.move_all_to_active(); // a move request during the attempt: the failure goes to backoff
    q.add_unschedulable_if_not_present(info, q.scheduling_cycle()).unwrap();
    assert_eq!(q.location(&pod("p", 0).uid), Some(QueueLocation::Backoff));
    let flusher = PriorityQueue::start_flusher(&q);
    // The thread runs on real time but reads the mock clock: nothing moves until it advances.
    clock.advance(Duration::from_secs(2));
    let popped = q.pop().expect("the flusher moved the pod and pop woke up");
    assert_eq!((&*popped.pod.name, popped.attempts), ("p", 2));
    drop(flusher);
    assert_eq!(q.pop().unwrap_err(), QueueError::Closed);
}
