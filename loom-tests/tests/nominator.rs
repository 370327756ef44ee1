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
