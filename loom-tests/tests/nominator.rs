//! The nominator written from two threads (and read from a third): its two maps, node → pods
//! and pod → node, always agree, and a pod is nominated to at most one node, once.
#![cfg(ksched_loom)]

use ksched_engine::api::{Pod, Sym};
use ksched_engine::queue::Nominator;
use ksched_engine::sync::{thread, Arc};

#[test]
fn concurrent_nominations_of_one_pod_keep_both_maps_consistent() {
    loom::model(|| {
        let n = Arc::new(Nominator::new());
        let p = Pod::builder("p").build();
        let to = |node: &'static str| {
            let (n, p) = (Arc::clone(&n), p.clone());
            thread::spawn(move || n.add(&p, Some(Sym::new(node))))
        };
        let (a, b) = (to("a"), to("b"));
        // A reader meanwhile sees the pod on at most one node... per lookup; both maps are
        // checked once the writers are done.
        let seen = n.nominated_pods_for_node(Sym::new("a")).len();
        assert!(seen <= 1);
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(n.check_consistent(), Vec::<String>::new());
        let on: Vec<usize> = ["a", "b"].iter().map(|x| n.nominated_pods_for_node(Sym::new(x)).len()).collect();
        assert_eq!(on.iter().sum::<usize>(), 1, "on a and b: {on:?}");
        assert_eq!(n.len(), 1);
    });
}

#[test]
fn add_racing_delete_leaves_no_half_entry() {
    loom::model(|| {
        let n = Arc::new(Nominator::new());
        let p = Pod::builder("p").build();
        n.add(&p, Some(Sym::new("a")));
        let mover = {
            let (n, p) = (Arc::clone(&n), p.clone());
            thread::spawn(move || n.add(&p, Some(Sym::new("b"))))
        };
        let deleter = {
            let (n, p) = (Arc::clone(&n), p.clone());
            thread::spawn(move || n.delete(&p))
        };
        mover.join().unwrap();
        deleter.join().unwrap();
        assert_eq!(n.check_consistent(), Vec::<String>::new());
        // Deleted last: nowhere. Moved last: on b only.
        match n.nominated_node(&p.uid) {
            None => assert!(n.is_empty()),
            Some(node) => assert_eq!((node, n.nominated_pods_for_node(Sym::new("a")).len()), (Sym::new("b"), 0)),
        }
    });
}

/// A cycle's kept nominations (`NominatedPods`, updated from the nominator's change log)
/// gathered while another thread moves a pod: whatever the interleaving, the next gather
/// after the writer is done answers as a fresh gather does (a change the first gather
/// missed is in the log after the version it recorded).
#[test]
fn kept_nominations_gathered_during_a_move_catch_up() {
    use ksched_engine::framework::runtime::NominatedPods;
    loom::model(|| {
        let n = Arc::new(Nominator::new());
        let p = Pod::builder("p").build();
        let q = Pod::builder("q").build();
        n.add(&p, Some(Sym::new("a")));
        let scheduled = Pod::builder("s").build();
        let mut kept = NominatedPods::default();
        kept.gather(Some(&*n), &scheduled);
        let mover = {
            let (n, p, q) = (Arc::clone(&n), p.clone(), q.clone());
            thread::spawn(move || {
                n.add(&p, Some(Sym::new("b")));
                n.add(&q, Some(Sym::new("a")));
            })
        };
        kept.gather(Some(&*n), &scheduled);
        mover.join().unwrap();
        kept.gather(Some(&*n), &scheduled);
        let fresh = NominatedPods::for_pod(Some(&*n), &scheduled);
        for node in ["a", "b"] {
            let uids = |x: &NominatedPods| x.on(Sym::new(node)).iter().map(|p| p.uid.to_string()).collect::<Vec<_>>();
            assert_eq!(uids(&kept), uids(&fresh), "node {node}");
        }
        assert_eq!(fresh.on(Sym::new("b")).len(), 1);
    });
}

/// Nominators made on two threads at once get distinct log ids (`sync::fresh_id`), so a
/// cycle's kept nominations gathered from one and then from the other answer as a fresh
/// gather of the other: never the first one's pods read as unchanged from the second's log.
#[test]
fn nominators_made_on_two_threads_keep_apart_logs() {
    use ksched_engine::framework::runtime::NominatedPods;
    loom::model(|| {
        let make = |pod: &'static str, node: &'static str| {
            thread::spawn(move || {
                let n = Nominator::new();
                n.add(&Pod::builder(pod).build(), Some(Sym::new(node)));
                n
            })
        };
        let (a, b) = (make("p", "a"), make("q", "b"));
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        let scheduled = Pod::builder("s").build();
        let mut kept = NominatedPods::default();
        kept.gather(Some(&a), &scheduled);
        kept.gather(Some(&b), &scheduled);
        let fresh = NominatedPods::for_pod(Some(&b), &scheduled);
        for node in ["a", "b"] {
            let uids = |x: &NominatedPods| x.on(Sym::new(node)).iter().map(|p| p.uid.to_string()).collect::<Vec<_>>();
            assert_eq!(uids(&kept), uids(&fresh), "node {node}");
        }
        assert_eq!((kept.on(Sym::new("a")).len(), kept.on(Sym::new("b")).len()), (0, 1));
    });
}
