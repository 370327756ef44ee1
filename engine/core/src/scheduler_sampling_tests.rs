//! A sampled cycle as upstream v1.35 runs it on one worker: where the filter pass stops, how
//! far the rotating start moves, what `evaluated` counts (a nominated node that failed
//! included), and which tied node is picked.

use std::time::Duration;

use super::*;
use crate::api::{ResourceName::*, Taint, TaintEffect};
use crate::framework::pick::heap_root;
use crate::queue::Fifo;

struct NoApi;

impl ClusterApi for NoApi {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
        Err(BindError { pod: pod.key(), node, why: "not in this test".into() })
    }
    fn delete_victim(&self, victim: &Pod) -> Result<(), ApiError> {
        Err(ApiError { op: "delete", pod: victim.key(), why: "not in this test".into() })
    }
    fn set_nominated_node(&self, pod: &Pod, _: Option<Sym>) -> Result<(), ApiError> {
        Err(ApiError { op: "nominate", pod: pod.key(), why: "not in this test".into() })
    }
}

/// `n` equal nodes, those `tainted` says with a NoSchedule taint no pod here tolerates.
fn scheduler(n: usize, tainted: impl Fn(usize) -> bool, tie_break: TieBreak) -> Scheduler {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    for i in 0..n {
        let mut b = Node::builder(&format!("n{i:03}")).resources(8000, 32 << 30, 110);
        if tainted(i) {
            b = b.taint(Taint::new("dedicated", "x", TaintEffect::NoSchedule));
        }
        cache.add_node(b.build()).unwrap();
    }
    let profile = Profile { tie_break, ..Profile::default_profile() };
    Scheduler::new(cache, Arc::new(Fifo::new()), profile, Arc::new(NoApi), 1)
}

fn pod(name: &str) -> Pod {
    Pod::builder(name).container("img", &[(Cpu, 100), (Memory, 1 << 28)]).build()
}

/// Upstream's one-worker pass over the snapshot's order: (kept feasible positions, rejected
/// positions, evaluated).
fn upstream_pass(n: usize, start: usize, want: usize, rejects: impl Fn(usize) -> bool) -> (Vec<usize>, Vec<usize>) {
    let (mut feasible, mut rejected) = (Vec::new(), Vec::new());
    for i in 0..n {
        let pos = (start + i) % n;
        if rejects(pos) {
            rejected.push(pos);
        } else if feasible.len() == want {
            break;
        } else {
            feasible.push(pos);
        }
    }
    (feasible, rejected)
}

#[test]
fn sampled_cycles_stop_at_the_next_passing_node_and_start_there() {
    // 150 nodes, adaptive: 100 feasible wanted. Every fifth node and a run near the end
    // reject the pod, so the pass meets rejected nodes after its hundredth feasible one.
    let tainted = |i: usize| i % 5 == 3 || (125..131).contains(&i);
    let mut sched = scheduler(150, tainted, TieBreak::Upstream);
    let snapshot = sched.cache.update_snapshot();
    let rejects = |pos: usize| {
        let name = snapshot.name_at(pos).unwrap();
        tainted(name.as_str()[1..].parse().unwrap())
    };
    let mut start = 0;
    for cycle in 0..12 {
        assert_eq!(sched.next_start_node_index(), start, "cycle {cycle}");
        let (feasible, rejected) = upstream_pass(150, start, 100, rejects);
        let d = sched.schedule_pod(&pod(&format!("p{cycle}")), &snapshot).expect("fits");
        assert_eq!((d.evaluated, d.feasible), (feasible.len() + rejected.len(), 100), "cycle {cycle}");
        // Equal nodes, equal totals: upstream's heap leaves the first one found at its root.
        assert_eq!(d.node, snapshot.name_at(feasible[0]).unwrap(), "cycle {cycle}");
        let scratch = &sched.scratch.filter;
        assert_eq!(scratch.feasible.iter().map(|&p| p as usize).collect::<Vec<_>>(), feasible, "cycle {cycle}");
        let mut got_rejected: Vec<usize> = scratch.statuses.positions().map(|p| p as usize).collect();
        got_rejected.sort_unstable();
        let mut want_rejected = rejected.clone();
        want_rejected.sort_unstable();
        assert_eq!(got_rejected, want_rejected, "cycle {cycle}");
        start = (start + feasible.len() + rejected.len()) % 150;
        // The next cycle starts at the node this one dropped: a passing one.
        assert!(!rejects(start), "cycle {cycle}");
    }
}

#[test]
fn a_nominated_node_that_fails_counts_as_evaluated_where_the_pass_stops_before_it() {
    // n149 rejects the pod; the pass from 0 keeps n000..n099 and drops n100.
    let mut sched = scheduler(150, |i| i == 149, TieBreak::Upstream);
    let snapshot = sched.cache.update_snapshot();
    let plain = sched.schedule_pod(&pod("plain"), &snapshot).expect("fits");
    assert_eq!((plain.evaluated, sched.next_start_node_index()), (100, 100));
    let mut sched = scheduler(150, |i| i == 149, TieBreak::Upstream);
    let nominated = Pod::builder("nominated")
        .container("img", &[(Cpu, 100), (Memory, 1 << 28)])
        .nominated_node_name("n149")
        .build();
    let d = sched.schedule_pod(&nominated, &snapshot).expect("fits elsewhere");
    // Upstream keeps the nominated node's status in the cycle's diagnosis: one more
    // evaluated, one more step for the start, and its status among the rejected.
    assert_eq!((d.evaluated, d.feasible, sched.next_start_node_index()), (101, 100, 101));
    let pos = snapshot.position(Sym::new("n149")).unwrap() as u32;
    assert!(sched.scratch.filter.statuses.at(pos).is_some());
    // When the pass visits it anyway, it counts once.
    let mut sched = scheduler(150, |i| i == 5, TieBreak::Upstream);
    let nominated = Pod::builder("nominated")
        .container("img", &[(Cpu, 100), (Memory, 1 << 28)])
        .nominated_node_name("n005")
        .build();
    let snapshot = sched.cache.update_snapshot();
    let d = sched.schedule_pod(&nominated, &snapshot).expect("fits elsewhere");
    assert_eq!((d.evaluated, sched.next_start_node_index()), (101, 101));
}

#[test]
fn ties_go_to_upstreams_heap_root_or_to_a_seeded_draw() {
    // Under 100 nodes every node is visited; equal nodes tie, so upstream's pick is the
    // first found (the heap's root stays), from the rotating start.
    let mut sched = scheduler(40, |_| false, TieBreak::Upstream);
    let snapshot = sched.cache.update_snapshot();
    for i in 0..5 {
        let d = sched.schedule_pod(&pod(&format!("p{i}")), &snapshot).unwrap();
        assert_eq!(d.node, snapshot.name_at(0).unwrap());
        assert_eq!(heap_root(sched.scratch.scores.totals()), 0);
    }
    // The seeded draw spreads them over the tied nodes.
    let mut sched = scheduler(40, |_| false, TieBreak::Random);
    let picks: std::collections::BTreeSet<Sym> =
        (0..20).map(|i| sched.schedule_pod(&pod(&format!("p{i}")), &snapshot).unwrap().node).collect();
    assert!(picks.len() > 5, "{picks:?}");
}
