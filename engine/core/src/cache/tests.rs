use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::api::ResourceName::*;
use crate::snapshot::columns::Below;
use crate::testing::{requires_pod_affinity, requires_pod_anti_affinity};
use crate::util::time::MockClock;

fn node(name: &str) -> Node {
    Node::builder(name).resources(4000, 8 << 30, 110).build()
}

fn pod(name: &str, cpu: i64) -> Pod {
    Pod::builder(name).container("img", &[(Cpu, cpu), (Memory, cpu * 1000)]).build()
}

fn on(p: &Pod, n: &str) -> Pod {
    p.with_node(Sym::new(n))
}

fn cache_with_nodes(names: &[&str]) -> Cache {
    let c = Cache::new(Duration::from_secs(30));
    for n in names {
        c.add_node(node(n)).unwrap();
    }
    c
}

fn requested_cpu(c: &Cache, n: &str) -> i64 {
    c.update_snapshot().get(Sym::new(n)).map_or(-1, |i| i.requested().milli_cpu)
}

#[test]
fn cache_legal_transitions_table() {
    // Each case: a sequence of operations that must all succeed, and the state at the end.
    type Op = fn(&Cache, &Pod) -> Result<(), CacheError>;
    let assume: Op = |c, p| c.assume_pod(&on(p, "n1"));
    let finish: Op = |c, p| c.finish_binding(p, Timestamp::from_secs(1));
    let forget: Op = |c, p| c.forget_pod(&on(p, "n1"));
    let add1: Op = |c, p| c.add_pod(&on(p, "n1"));
    let add2: Op = |c, p| c.add_pod(&on(p, "n2"));
    let update: Op = |c, p| c.update_pod(&on(p, "n1"), &on(p, "n1"));
    let remove: Op = |c, p| c.remove_pod(&on(p, "n1"));
    let cases: Vec<(&str, Vec<Op>, PodStateName, i64, i64)> = vec![
        ("assume", vec![assume], PodStateName::Assumed, 100, 0),
        ("assume, finish", vec![assume, finish], PodStateName::Assumed, 100, 0),
        ("assume, forget", vec![assume, forget], PodStateName::Initial, 0, 0),
        ("assume, add confirms", vec![assume, finish, add1], PodStateName::Added, 100, 0),
        ("assume, add on another node moves", vec![assume, add2], PodStateName::Added, 0, 100),
        ("add without assume", vec![add1], PodStateName::Added, 100, 0),
        ("add, update", vec![add1, update], PodStateName::Added, 100, 0),
        ("add, remove", vec![add1, remove], PodStateName::Initial, 0, 0),
        // Its Add was lost or is late: the Delete must not leave a deleted pod counted.
        ("assume, finish, remove", vec![assume, finish, remove], PodStateName::Initial, 0, 0),
        ("finish on absent pod is a no-op", vec![finish], PodStateName::Initial, 0, 0),
    ];
    for (desc, ops, want, cpu1, cpu2) in cases {
        let c = cache_with_nodes(&["n1", "n2"]);
        let p = pod("p", 100);
        for op in ops {
            op(&c, &p).unwrap_or_else(|e| panic!("{desc}: {e}"));
        }
        assert_eq!(c.pod_state(&p.uid), want, "{desc}");
        assert_eq!((requested_cpu(&c, "n1"), requested_cpu(&c, "n2")), (cpu1, cpu2), "{desc}");
        assert_eq!(c.check_invariants(), Vec::<String>::new(), "{desc}");
    }
}

#[test]
fn cache_illegal_transitions_error_and_change_nothing() {
    let p = pod("p", 100);
    type Setup = fn(&Cache, &Pod);
    type Op = fn(&Cache, &Pod) -> Result<(), CacheError>;
    let cases: Vec<(&str, Setup, Op, &str)> = vec![
        (
            "assume twice",
            |c, p| c.assume_pod(&on(p, "n1")).unwrap(),
            |c, p| c.assume_pod(&on(p, "n1")),
            "pod default/p: cannot assume: pod is Assumed in the cache",
        ),
        (
            "assume an added pod",
            |c, p| c.add_pod(&on(p, "n1")).unwrap(),
            |c, p| c.assume_pod(&on(p, "n2")),
            "pod default/p: cannot assume: pod is Added in the cache",
        ),
        (
            "assume without node",
            |_, _| {},
            |c, p| c.assume_pod(p),
            "pod default/p: cannot assume: spec.nodeName is empty",
        ),
        (
            "forget a pod never seen",
            |_, _| {},
            |c, p| c.forget_pod(&on(p, "n1")),
            "pod default/p: cannot forget: pod is Initial in the cache",
        ),
        (
            "forget an added pod",
            |c, p| c.add_pod(&on(p, "n1")).unwrap(),
            |c, p| c.forget_pod(&on(p, "n1")),
            "pod default/p: cannot forget: pod is Added in the cache",
        ),
        (
            "forget on another node",
            |c, p| c.assume_pod(&on(p, "n1")).unwrap(),
            |c, p| c.forget_pod(&on(p, "n2")),
            "pod default/p: cannot forget on node n2: it was assumed on node n1",
        ),
        (
            "update an assumed pod",
            |c, p| c.assume_pod(&on(p, "n1")).unwrap(),
            |c, p| c.update_pod(&on(p, "n1"), &on(p, "n1")),
            "pod default/p: cannot update: pod is Assumed in the cache",
        ),
        (
            "update an absent pod",
            |_, _| {},
            |c, p| c.update_pod(&on(p, "n1"), &on(p, "n1")),
            "pod default/p: cannot update: pod is Initial in the cache",
        ),
        (
            "update that moves node",
            |c, p| c.add_pod(&on(p, "n1")).unwrap(),
            |c, p| c.update_pod(&on(p, "n1"), &on(p, "n2")),
            "pod default/p: update moves it from node n1 to node n2; a bound pod never moves",
        ),
        (
            "remove an absent pod",
            |_, _| {},
            |c, p| c.remove_pod(&on(p, "n1")),
            "pod default/p: cannot remove: pod is Initial in the cache",
        ),
        (
            "add an added pod",
            |c, p| c.add_pod(&on(p, "n1")).unwrap(),
            |c, p| c.add_pod(&on(p, "n1")),
            "pod default/p: cannot add: pod is Added in the cache",
        ),
    ];
    for (desc, setup, op, want) in cases {
        let c = cache_with_nodes(&["n1", "n2"]);
        setup(&c, &p);
        let before = (c.pod_state(&p.uid), requested_cpu(&c, "n1"), requested_cpu(&c, "n2"), c.stats());
        let err = op(&c, &p).expect_err(desc);
        assert_eq!(err.to_string(), want, "{desc}");
        let after = (c.pod_state(&p.uid), requested_cpu(&c, "n1"), requested_cpu(&c, "n2"), c.stats());
        assert_eq!(before, after, "{desc}: the cache changed");
        assert_eq!(c.check_invariants(), Vec::<String>::new(), "{desc}");
    }
}

#[test]
fn cleanup_expires_only_finished_bindings_past_deadline() {
    let c = cache_with_nodes(&["n1"]);
    let (a, b) = (pod("a", 100), pod("b", 200));
    c.assume_pod(&on(&a, "n1")).unwrap();
    c.assume_pod(&on(&b, "n1")).unwrap();
    c.finish_binding(&a, Timestamp::from_secs(10)).unwrap();
    assert!(c.cleanup_assumed_pods(Timestamp::from_secs(39)).is_empty());
    let expired = c.cleanup_assumed_pods(Timestamp::from_secs(41));
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].uid, a.uid);
    // b's binding never finished: it never expires.
    assert!(c.cleanup_assumed_pods(Timestamp::from_secs(1_000_000)).is_empty());
    assert_eq!(requested_cpu(&c, "n1"), 200);
    // The informer's late confirmation re-adds the expired pod.
    c.add_pod(&on(&a, "n1")).unwrap();
    assert_eq!(requested_cpu(&c, "n1"), 300);
    assert!(c.check_invariants().is_empty());
}

#[test]
fn ttl_zero_never_expires() {
    let c = Cache::upstream();
    assert_eq!(c.assumed_pod_ttl(), Duration::ZERO, "upstream's assumed pods never expire");
    c.add_node(node("n1")).unwrap();
    let a = pod("a", 100);
    c.assume_pod(&on(&a, "n1")).unwrap();
    c.finish_binding(&a, Timestamp::from_secs(1)).unwrap();
    assert!(c.cleanup_assumed_pods(Timestamp(u64::MAX)).is_empty());
}

#[test]
fn removed_node_with_pods_stays_as_ghost_until_they_leave() {
    let c = cache_with_nodes(&["n1", "n2"]);
    let a = pod("a", 100);
    c.add_pod(&on(&a, "n1")).unwrap();
    c.remove_node(Sym::new("n1")).unwrap();
    let s = c.update_snapshot();
    assert_eq!(s.num_nodes(), 1);
    assert!(s.get(Sym::new("n1")).is_none());
    assert_eq!(c.stats().ghost_nodes, 1);
    assert!(c.check_invariants().is_empty());
    c.remove_pod(&on(&a, "n1")).unwrap();
    assert_eq!(c.stats().ghost_nodes, 0);
    assert!(c.check_invariants().is_empty());
    assert!(c.remove_node(Sym::new("n1")).is_err());
}

#[test]
fn snapshot_publish_replaces_only_changed_nodes() {
    let names: Vec<String> = (0..100).map(|i| format!("n{i}")).collect();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let c = cache_with_nodes(&refs);
    let before = c.update_snapshot();
    c.assume_pod(&on(&pod("a", 100), "n7")).unwrap();
    let after = c.update_snapshot();
    assert!(after.generation() > before.generation());
    let mut changed = Vec::new();
    for (x, y) in before.iter().zip(after.iter()) {
        if !StdArc::ptr_eq(x, y) {
            changed.push(y.name());
        }
    }
    assert_eq!(changed, vec![Sym::new("n7")]);
    // The old snapshot is untouched.
    assert_eq!(before.get(Sym::new("n7")).unwrap().requested().milli_cpu, 0);
    assert_eq!(after.get(Sym::new("n7")).unwrap().requested().milli_cpu, 100);
    // Nothing changed: the same snapshot comes back.
    assert!(StdArc::ptr_eq(&after, &c.update_snapshot()));
}

/// The informer's Add of the very pod assumed confirms it without touching its node (nothing
/// to publish); an Add of a pod that differs from the one assumed (another node, another
/// field) puts the new handle on the node, published.
#[test]
fn confirming_the_assumed_pod_itself_publishes_nothing() {
    let c = cache_with_nodes(&["n1", "n2"]);
    let assumed = on(&pod("a", 100), "n1");
    c.assume_pod(&assumed).unwrap();
    let after_assume = c.update_snapshot();
    c.add_pod(&assumed.clone()).unwrap();
    assert_eq!(c.pod_state(&assumed.uid), PodStateName::Added);
    let confirmed = c.update_snapshot();
    assert!(StdArc::ptr_eq(&after_assume, &confirmed), "a confirmation that changes nothing publishes nothing");
    assert_eq!(requested_cpu(&c, "n1"), 100);
    assert!(c.check_invariants().is_empty());

    type Change = fn(&Pod) -> Pod;
    let cases: [(&str, Change, &str); 3] = [
        ("another node", |p| on(p, "n2"), "n2"),
        (
            "another field",
            |p| {
                let mut q = on(p, "n1");
                q.nominated_node_name = Some(Sym::new("n1"));
                q
            },
            "n1",
        ),
        ("an equal spec in another Arc", |p| on(&p.with_priority(p.priority, p.preemption_policy), "n1"), "n1"),
    ];
    for (name, change, node) in cases {
        let c = cache_with_nodes(&["n1", "n2"]);
        let p = pod("b", 100);
        c.assume_pod(&on(&p, "n1")).unwrap();
        let before = c.update_snapshot();
        let added = change(&p);
        c.add_pod(&added).unwrap();
        let after = c.update_snapshot();
        assert!(!StdArc::ptr_eq(&before, &after), "{name}: published");
        let info = after.get(Sym::new(node)).unwrap();
        let held = info.pods().iter().find(|q| q.uid == added.uid).expect("on the node");
        assert!(std::ptr::eq::<crate::api::PodData>(&**held, &*added), "{name}: the node holds the added spec");
        assert_eq!(held.nominated_node_name, added.nominated_node_name, "{name}");
        assert_eq!(info.requested().milli_cpu, 100, "{name}");
        assert!(c.check_invariants().is_empty(), "{name}");
    }
}

#[test]
fn image_states_count_nodes() {
    let c = Cache::new(Duration::ZERO);
    c.add_node(Node::builder("a").image(&["nginx:1", "nginx:latest"], 100).build()).unwrap();
    c.add_node(Node::builder("b").image(&["nginx:1"], 100).build()).unwrap();
    let s = c.update_snapshot();
    assert_eq!(s.image(Sym::new("nginx:1")).map(|i| i.num_nodes), Some(2));
    assert_eq!(s.image(Sym::new("nginx:latest")).map(|i| i.num_nodes), Some(1));
    c.update_node(Node::builder("b").build()).unwrap();
    c.remove_node(Sym::new("a")).unwrap();
    let s = c.update_snapshot();
    assert_eq!(s.image(Sym::new("nginx:1")), None);
    assert!(c.check_invariants().is_empty());
}

#[derive(Clone, Debug)]
enum Op {
    Assume(usize, usize),
    Finish(usize),
    Forget(usize),
    Add(usize, usize),
    Update(usize),
    Remove(usize),
    Cleanup(u64),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..8usize, 0..3usize).prop_map(|(p, n)| Op::Assume(p, n)),
        (0..8usize).prop_map(Op::Finish),
        (0..8usize).prop_map(Op::Forget),
        (0..8usize, 0..3usize).prop_map(|(p, n)| Op::Add(p, n)),
        (0..8usize).prop_map(Op::Update),
        (0..8usize).prop_map(Op::Remove),
        (0..100u64).prop_map(Op::Cleanup),
    ]
}

proptest! {
    /// Random operation sequences against a plain model: which pods are where and in which
    /// state; after every step the cache's invariants hold and per-node requests match.
    #[test]
    fn cache_matches_model_and_keeps_invariants(ops in prop::collection::vec(op_strategy(), 1..60)) {
        let nodes = ["n0", "n1", "n2"];
        let c = cache_with_nodes(&nodes);
        // Pods 0, 3, 6 carry pod affinity; 1, 4, 7 required anti-affinity; 2, 5 neither.
        let pods: Vec<Pod> = (0..8).map(|i| with_pod_affinity(&format!("p{i}"), 10 + i as i64, i % 3)).collect();
        // uid index → (node, assumed, finished deadline)
        let mut model: HashMap<usize, (usize, bool, Option<u64>)> = HashMap::new();
        for op in ops {
            match op {
                Op::Assume(p, n) => {
                    let ok = c.assume_pod(&on(&pods[p], nodes[n])).is_ok();
                    prop_assert_eq!(ok, !model.contains_key(&p));
                    if ok { model.insert(p, (n, true, None)); }
                }
                Op::Finish(p) => {
                    c.finish_binding(&pods[p], Timestamp::from_secs(5)).unwrap();
                    if let Some(e) = model.get_mut(&p) { if e.1 { e.2 = Some(5 + 30); } }
                }
                Op::Forget(p) => {
                    let node = model.get(&p).map_or(0, |e| e.0);
                    let ok = c.forget_pod(&on(&pods[p], nodes[node])).is_ok();
                    prop_assert_eq!(ok, model.get(&p).is_some_and(|e| e.1));
                    if ok { model.remove(&p); }
                }
                Op::Add(p, n) => {
                    let ok = c.add_pod(&on(&pods[p], nodes[n])).is_ok();
                    prop_assert_eq!(ok, model.get(&p).is_none_or(|e| e.1));
                    if ok { model.insert(p, (n, false, None)); }
                }
                Op::Update(p) => {
                    let node = model.get(&p).map_or(0, |e| e.0);
                    let ok = c.update_pod(&on(&pods[p], nodes[node]), &on(&pods[p], nodes[node])).is_ok();
                    prop_assert_eq!(ok, model.get(&p).is_some_and(|e| !e.1));
                }
                Op::Remove(p) => {
                    let node = model.get(&p).map_or(0, |e| e.0);
                    let ok = c.remove_pod(&on(&pods[p], nodes[node])).is_ok();
                    prop_assert_eq!(ok, model.contains_key(&p));
                    if ok { model.remove(&p); }
                }
                Op::Cleanup(t) => {
                    let expired = c.cleanup_assumed_pods(Timestamp::from_secs(t));
                    let want: Vec<usize> = model.iter().filter(|(_, e)| e.1 && e.2.is_some_and(|d| d < t)).map(|(&p, _)| p).collect();
                    prop_assert_eq!(expired.len(), want.len());
                    for p in want { model.remove(&p); }
                }
            }
            prop_assert_eq!(c.check_invariants(), Vec::<String>::new());
            let snap = c.update_snapshot();
            for (n, name) in nodes.iter().enumerate() {
                let want: i64 = model.iter().filter(|(_, e)| e.0 == n).map(|(&p, _)| pods[p].accounted_requests().milli_cpu).sum();
                prop_assert_eq!(snap.get(Sym::new(name)).unwrap().requested().milli_cpu, want);
            }
            prop_assert_eq!(snap.have_pods_with_affinity(), &lists_from_scratch(&snap).0[..]);
            prop_assert_eq!(snap.have_pods_with_required_anti_affinity(), &lists_from_scratch(&snap).1[..]);
            for (p, pod) in pods.iter().enumerate() {
                let want = match model.get(&p) { None => PodStateName::Initial, Some(e) if e.1 => PodStateName::Assumed, _ => PodStateName::Added };
                prop_assert_eq!(c.pod_state(&pod.uid), want);
            }
        }
    }
}

/// A pod with pod affinity (kind 0), required anti-affinity (kind 1) or neither (kind 2).
fn with_pod_affinity(name: &str, cpu: i64, kind: usize) -> Pod {
    let affinity = match kind {
        0 => requires_pod_affinity("app", "db"),
        1 => requires_pod_anti_affinity("app", "db"),
        _ => return pod(name, cpu),
    };
    Pod::builder(name).container("img", &[(Cpu, cpu), (Memory, cpu * 1000)]).affinity(affinity).build()
}

/// The two affinity lists recomputed from the snapshot's own nodes.
fn lists_from_scratch(s: &Snapshot) -> (Vec<u32>, Vec<u32>) {
    let (mut aff, mut anti) = (Vec::new(), Vec::new());
    for (i, n) in s.iter().enumerate() {
        let has = |f: fn(&Pod) -> bool| n.pods().iter().any(f);
        if has(|p| p.affinity.as_ref().is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some())) {
            aff.push(i as u32);
        }
        if has(|p| {
            p.affinity.as_ref().and_then(|a| a.pod_anti_affinity.as_ref()).is_some_and(|x| !x.required.is_empty())
        }) {
            anti.push(i as u32);
        }
    }
    (aff, anti)
}

#[test]
fn snapshot_lists_nodes_with_affinity_pods() {
    let c = cache_with_nodes(&["a", "b", "c", "d"]);
    let pos = |s: &Snapshot, n: &str| s.position(Sym::new(n)).unwrap() as u32;
    let sorted = |mut v: Vec<u32>| {
        v.sort_unstable();
        v
    };
    let (aff, anti, plain) = (with_pod_affinity("x", 1, 0), with_pod_affinity("y", 1, 1), with_pod_affinity("z", 1, 2));
    c.add_pod(&on(&aff, "b")).unwrap();
    c.assume_pod(&on(&anti, "c")).unwrap();
    c.add_pod(&on(&plain, "d")).unwrap();
    let s = c.update_snapshot();
    // Anti-affinity counts as affinity too (upstream: either term kind puts a node on the list).
    assert_eq!(s.have_pods_with_affinity(), &sorted(vec![pos(&s, "b"), pos(&s, "c")])[..]);
    assert_eq!(s.have_pods_with_required_anti_affinity(), &[pos(&s, "c")][..]);
    // A node removed while its pod is there becomes a ghost and leaves the lists.
    c.remove_node(Sym::new("b")).unwrap();
    let s = c.update_snapshot();
    assert_eq!(s.have_pods_with_affinity(), &[pos(&s, "c")][..]);
    // Forgetting the assumed pod empties both lists; an older snapshot keeps its lists.
    c.forget_pod(&on(&anti, "c")).unwrap();
    let s2 = c.update_snapshot();
    assert!(s2.have_pods_with_affinity().is_empty());
    assert!(s2.have_pods_with_required_anti_affinity().is_empty());
    assert_eq!(s.have_pods_with_required_anti_affinity(), &[pos(&s, "c")][..]);
    assert!(c.check_invariants().is_empty());
}

// ----- the cleaner thread -----

fn cache_with_cleaner(ttl_secs: u64, clock: &StdArc<MockClock>) -> Cache {
    let clock: StdArc<dyn Clock> = clock.clone();
    let c = Cache::with_config(CacheConfig {
        ttl: Duration::from_secs(ttl_secs),
        cleanup_period: Duration::from_millis(1),
        clock,
    });
    c.add_node(node("n1")).unwrap();
    c
}

/// Waits until the cleaner has completed `n` more passes than `from`. No deadline (a loaded
/// machine may starve the thread for a while): the wait fails when the thread has ended.
fn wait_for_passes(c: &Cache, from: u64, n: u64) {
    while c.cleanup_runs() < from + n {
        let ended = c.cleaner.as_ref().is_none_or(|cl| lock(&cl.handle).as_ref().is_none_or(|h| h.is_finished()));
        assert!(!ended || c.cleanup_runs() >= from + n, "the cleaner thread stopped making passes");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
#[should_panic(expected = "the cleaner thread stopped making passes")]
fn waiting_for_a_stopped_cleaner_fails_instead_of_hanging() {
    let clock = StdArc::new(MockClock::new(Timestamp::from_secs(0)));
    let c = cache_with_cleaner(30, &clock);
    c.stop_cleaner();
    wait_for_passes(&c, c.cleanup_runs(), 1);
}

#[test]
fn cleaner_thread_expires_finished_bindings_by_the_injected_clock() {
    let clock = StdArc::new(MockClock::new(Timestamp::from_secs(100)));
    let c = cache_with_cleaner(30, &clock);
    assert!(c.has_cleaner());
    let (a, b) = (pod("a", 100), pod("b", 200));
    c.assume_pod(&on(&a, "n1")).unwrap();
    c.assume_pod(&on(&b, "n1")).unwrap();
    c.finish_binding(&a, clock.now()).unwrap();
    // Before the deadline: passes run, nothing expires.
    clock.advance(Duration::from_secs(29));
    wait_for_passes(&c, c.cleanup_runs(), 3);
    assert_eq!(c.pod_state(&a.uid), PodStateName::Assumed);
    // Past the deadline: a expires, b (binding unfinished) never does.
    clock.advance(Duration::from_secs(2));
    let from = c.cleanup_runs();
    wait_for_passes(&c, from, 2);
    assert_eq!(c.pod_state(&a.uid), PodStateName::Initial);
    clock.advance(Duration::from_secs(1_000_000));
    wait_for_passes(&c, c.cleanup_runs(), 2);
    assert_eq!(c.pod_state(&b.uid), PodStateName::Assumed);
    assert_eq!(requested_cpu(&c, "n1"), 200);
    assert!(c.check_invariants().is_empty());
}

#[test]
fn cleaner_thread_stops_when_the_cache_is_dropped() {
    let clock = StdArc::new(MockClock::new(Timestamp::from_secs(0)));
    let c = cache_with_cleaner(30, &clock);
    wait_for_passes(&c, 0, 1);
    assert_eq!(StdArc::strong_count(&clock), 2, "the thread holds the clock while it runs");
    drop(c);
    // Drop joined the thread, which released its handle on the clock.
    assert_eq!(StdArc::strong_count(&clock), 1);
}

#[test]
fn ttl_zero_starts_no_cleaner() {
    let clock = StdArc::new(MockClock::new(Timestamp::from_secs(0)));
    let c = cache_with_cleaner(0, &clock);
    assert!(!c.has_cleaner());
    assert_eq!(StdArc::strong_count(&clock), 1);
}

#[derive(Clone, Debug)]
enum ColumnOp {
    /// Pod, node.
    Assume(usize, usize),
    Forget(usize),
    Add(usize, usize),
    Remove(usize),
    /// Node, unschedulable, tainted, cpu.
    UpdateNode(usize, bool, bool, i64),
    RemoveNode(usize),
    AddNode(usize),
    Publish,
}

fn column_op() -> impl Strategy<Value = ColumnOp> {
    const PODS: usize = 24;
    const NODES: usize = 140;
    prop_oneof![
        4 => (0..PODS, 0..NODES).prop_map(|(p, n)| ColumnOp::Assume(p, n)),
        2 => (0..PODS).prop_map(ColumnOp::Forget),
        3 => (0..PODS, 0..NODES).prop_map(|(p, n)| ColumnOp::Add(p, n)),
        2 => (0..PODS).prop_map(ColumnOp::Remove),
        1 => (0..NODES, any::<bool>(), any::<bool>(), 1000i64..8000).prop_map(|(n, u, t, c)| ColumnOp::UpdateNode(n, u, t, c)),
        1 => (0..NODES).prop_map(ColumnOp::RemoveNode),
        1 => (0..NODES).prop_map(ColumnOp::AddNode),
        3 => Just(ColumnOp::Publish),
    ]
}

fn column_node(n: usize, unschedulable: bool, tainted: bool, cpu: i64) -> Node {
    let mut b = Node::builder(&format!("c{n}")).resources(cpu, 8 << 30, 4 + n as i64 % 7).unschedulable(unschedulable);
    if tainted {
        b = b.taint(crate::api::Taint::new("k", "v", crate::api::TaintEffect::NoSchedule));
    }
    b.build()
}

fn column_pod(p: usize) -> Pod {
    let b = Pod::builder(&format!("cp{p}"));
    let b = match p % 4 {
        0 => b.container("i", &[(Cpu, 100 + p as i64), (Memory, 1 << 20)]),
        1 => b.container("i", &[(Memory, (p as i64) << 22)]),
        2 => b.container("i", &[]).affinity(requires_pod_anti_affinity("app", "x")),
        _ => b.container("i", &[(Cpu, 7), (EphemeralStorage, 1 << 30)]),
    };
    // Three priorities, so a node's lowest level (kept in the columns as what lies above
    // it) moves with adds and removals at, below and above it.
    b.priority((p / 4 % 3) as i32 * 10).build()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// After any add / remove / assume / forget of pods and nodes, every published
    /// snapshot's hot columns say what a plain model of the cluster says (requested sums, pod
    /// counts, allocatable, flags), agree with its NodeInfos, and an older snapshot's columns
    /// are not changed by later publishes.
    #[test]
    fn columns_match_model_after_random_ops(ops in prop::collection::vec(column_op(), 1..80)) {
        let c = Cache::new(Duration::from_secs(30));
        // node → (unschedulable, tainted, cpu); pod → (node, assumed)
        let mut nodes: HashMap<usize, (bool, bool, i64)> = HashMap::new();
        for n in 0..140 {
            c.add_node(column_node(n, false, false, 4000)).unwrap();
            nodes.insert(n, (false, false, 4000));
        }
        let mut pods: HashMap<usize, (usize, bool)> = HashMap::new();
        let mut older: Option<(Arc<Snapshot>, Vec<crate::snapshot::HotRow>)> = None;
        let node_name = |n: usize| format!("c{n}");
        for op in ops {
            match op {
                ColumnOp::Assume(p, n) => {
                    if !pods.contains_key(&p) && nodes.contains_key(&n) {
                        c.assume_pod(&on(&column_pod(p), &node_name(n))).unwrap();
                        pods.insert(p, (n, true));
                    }
                }
                ColumnOp::Forget(p) => {
                    if let Some(&(n, true)) = pods.get(&p) {
                        c.forget_pod(&on(&column_pod(p), &node_name(n))).unwrap();
                        pods.remove(&p);
                    }
                }
                ColumnOp::Add(p, n) => {
                    if !pods.contains_key(&p) && nodes.contains_key(&n) {
                        c.add_pod(&on(&column_pod(p), &node_name(n))).unwrap();
                        pods.insert(p, (n, false));
                    }
                }
                ColumnOp::Remove(p) => {
                    if let Some(&(n, _)) = pods.get(&p) {
                        c.remove_pod(&on(&column_pod(p), &node_name(n))).unwrap();
                        pods.remove(&p);
                    }
                }
                ColumnOp::UpdateNode(n, u, t, cpu) => {
                    if nodes.contains_key(&n) {
                        c.update_node(column_node(n, u, t, cpu)).unwrap();
                        nodes.insert(n, (u, t, cpu));
                    }
                }
                ColumnOp::RemoveNode(n) => {
                    // Only empty nodes leave (a node with pods stays as a ghost, out of the
                    // snapshot, and the model would have to follow the ghost's pods).
                    if nodes.contains_key(&n) && !pods.values().any(|&(pn, _)| pn == n) {
                        c.remove_node(Sym::new(&node_name(n))).unwrap();
                        nodes.remove(&n);
                    }
                }
                ColumnOp::AddNode(n) => {
                    if let std::collections::hash_map::Entry::Vacant(e) = nodes.entry(n) {
                        c.add_node(column_node(n, false, true, 2000)).unwrap();
                        e.insert((false, true, 2000));
                    }
                }
                ColumnOp::Publish => {
                    let snap = c.update_snapshot();
                    prop_assert_eq!(snap.column_mismatches(), Vec::<String>::new());
                    prop_assert_eq!(snap.columns().len(), nodes.len());
                    for i in 0..snap.num_nodes() {
                        let name = snap.node_at(i).unwrap().name();
                        let n: usize = name.as_str()[1..].parse().unwrap();
                        let (u, t, cpu) = nodes[&n];
                        let on_node: Vec<Pod> = pods.iter().filter(|(_, &(pn, _))| pn == n).map(|(&p, _)| column_pod(p)).collect();
                        let row = snap.columns().row(i);
                        prop_assert_eq!(row.allocatable_cpu, cpu);
                        prop_assert_eq!(row.allocatable_pods, 4 + n as i64 % 7);
                        prop_assert_eq!(row.requested_pods, on_node.len() as i64);
                        prop_assert_eq!(row.requested_cpu, on_node.iter().map(|p| p.accounted_requests().milli_cpu).sum::<i64>());
                        prop_assert_eq!(row.requested_memory, on_node.iter().map(|p| p.accounted_requests().memory).sum::<i64>());
                        prop_assert_eq!(row.requested_ephemeral, on_node.iter().map(|p| p.accounted_requests().ephemeral_storage).sum::<i64>());
                        prop_assert_eq!(row.non_zero_cpu, on_node.iter().map(|p| p.accounted_non_zero().0).sum::<i64>());
                        prop_assert_eq!(row.non_zero_memory, on_node.iter().map(|p| p.accounted_non_zero().1).sum::<i64>());
                        prop_assert_eq!((row.unschedulable(), row.has_taints()), (u, t));
                        prop_assert_eq!(row.has_affinity_pods(), on_node.iter().any(|p| p.affinity.is_some()));
                    }
                    if let Some((old, rows)) = &older {
                        let now: Vec<_> = (0..old.num_nodes()).map(|i| old.columns().row(i)).collect();
                        prop_assert_eq!(&now, rows, "an older snapshot's columns changed");
                    }
                    let rows = (0..snap.num_nodes()).map(|i| snap.columns().row(i)).collect();
                    older = Some((snap, rows));
                }
            }
            prop_assert_eq!(c.check_invariants(), Vec::<String>::new());
        }
    }
}

/// A cache of nodes `n0`..`n{count - 1}`.
fn cache_with_numbered_nodes(count: usize) -> Cache {
    let names: Vec<String> = (0..count).map(|i| format!("n{i}")).collect();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    cache_with_nodes(&refs)
}

/// Assumes a new 10m pod (`p1`, `p2`, ...) on the node it is given.
fn assume_numbered(c: &Cache) -> impl FnMut(&str) + '_ {
    let mut k = 0;
    move |node| {
        k += 1;
        c.assume_pod(&on(&pod(&format!("p{k}"), 10), node)).unwrap();
    }
}

/// Publishes whose older snapshots nobody holds write their rows into the columns, and their
/// NodeInfos into the node trie, of the snapshot before the last, in place: after each chunk
/// and each trie path has been written once in each of the two buffers, a publish copies
/// nothing. A reader holding an older snapshot gets the copies back and its snapshot stays as
/// it was.
#[test]
fn publish_writes_in_place_when_no_reader_holds_the_spare() {
    use crate::snapshot::columns::CHUNK_COPIES;
    use crate::snapshot::pvec::NODE_COPIES;
    let c = cache_with_numbered_nodes(1000);
    c.update_snapshot();
    let counts = || (CHUNK_COPIES.with(|n| n.get()), NODE_COPIES.with(|n| n.get()));
    // Chunks and trie nodes the publishes copy (not the assumes: a NodeInfo's pod list is a
    // trie of its own).
    let copied = std::cell::Cell::new((0, 0));
    let publish = |held: bool| {
        let before = counts();
        let snap = c.update_snapshot();
        let after = counts();
        let (c0, c1) = copied.get();
        copied.set((c0 + after.0 - before.0, c1 + after.1 - before.1));
        held.then_some(snap)
    };
    let mut assume_on = assume_numbered(&c);
    // Warm-up: the chunks and paths of n500 and n10 get their own copy in each buffer.
    for _ in 0..3 {
        assume_on("n500");
        assume_on("n10");
        publish(false);
    }
    copied.set((0, 0));
    for _ in 0..6 {
        assume_on("n500");
        assume_on("n10");
        publish(false);
    }
    assert_eq!(copied.get(), (0, 0), "no chunk or trie node copied once both buffers own theirs");
    // A row changed once keeps its stamp in every later snapshot, whichever buffer: what is
    // kept under the stamp (scores) stays valid.
    assume_on("n700");
    let stamp_of = |s: &Snapshot| {
        let mut out = Vec::new();
        s.columns().stamps_into(&[s.position(Sym::new("n700")).unwrap() as u32], &mut out);
        out[0]
    };
    let first = stamp_of(&publish(true).unwrap());
    for round in 0..4 {
        assume_on("n500");
        assert_eq!(stamp_of(&publish(true).unwrap()), first, "round {round}");
    }
    // Held: the next publishes copy, and what is held does not change.
    let held = publish(true).unwrap();
    let held_rows: Vec<_> = (0..held.num_nodes()).map(|i| held.columns().row(i)).collect();
    let held_cpu: Vec<i64> = held.iter().map(|i| i.requested().milli_cpu).collect();
    copied.set((0, 0));
    for _ in 0..3 {
        assume_on("n500");
        publish(false);
    }
    let (chunks, paths) = copied.get();
    assert!(chunks > 0 && paths > 0, "a held snapshot's chunks and paths are copied, not written: {chunks} {paths}");
    assert_eq!((0..held.num_nodes()).map(|i| held.columns().row(i)).collect::<Vec<_>>(), held_rows);
    assert_eq!(held.iter().map(|i| i.requested().milli_cpu).collect::<Vec<_>>(), held_cpu);
    drop(held);
    // Both buffers end up with every write: the NodeInfos agree with the columns and with
    // the pods assumed (16 on n500, 9 on n10, 1 on n700), whichever buffer is published, and
    // a pod assumed then forgotten leaves both.
    let extra = on(&pod("extra", 10), "n11");
    for (round, n11) in [0, 1, 1, 0, 0].into_iter().enumerate() {
        let snap = publish(true).unwrap();
        assert_eq!(snap.column_mismatches(), Vec::<String>::new(), "round {round}");
        for (node, pods) in [("n500", 16), ("n10", 9), ("n700", 1), ("n11", n11)] {
            let info = snap.get(Sym::new(node)).unwrap();
            assert_eq!(
                (info.requested().milli_cpu, info.pods().len()),
                (10 * pods, pods as usize),
                "{node} round {round}"
            );
        }
        drop(snap);
        match round {
            0 => c.assume_pod(&extra).unwrap(),
            2 => c.forget_pod(&extra).unwrap(),
            _ => {}
        }
    }
    assert!(c.check_invariants().is_empty());
}

/// A reader keeping the published snapshot itself (a `KindMemo` base, a `Snapshot` clone)
/// diffs the next one against it: the next publish copies the changed path from it instead of
/// writing into the other buffer, so the two share every other path and the diff visits one.
#[test]
fn publish_shares_paths_with_a_kept_published_snapshot() {
    let c = cache_with_numbered_nodes(3000);
    c.update_snapshot();
    let mut assume_on = assume_numbered(&c);
    // Warm: both buffers own their paths to n100 and n2500.
    for _ in 0..3 {
        assume_on("n100");
        assume_on("n2500");
        drop(c.update_snapshot());
    }
    for round in 0..4 {
        let base: Snapshot = (*c.snapshot()).clone();
        assume_on("n2500");
        let next = c.update_snapshot();
        assert_eq!(next.nodes.unshared_nodes(&base.nodes), next.nodes.depth(), "round {round}: one path copied");
        let mut visited = Vec::new();
        assert!(next.diff_nodes(&base, |_, new| visited.push(new.name())));
        assert_eq!(visited, vec![Sym::new("n2500")], "round {round}");
    }
    // Nobody keeps it: the other buffer again, sharing nothing written since the warm-up.
    assume_on("n100");
    drop(c.update_snapshot());
    let base: Snapshot = (*c.snapshot()).clone();
    let base_holders = base.nodes.holders();
    drop(base);
    assert_eq!(base_holders, 3, "published, the cell's snapshot and the clone");
    assert_eq!(c.snapshot().nodes.holders(), 2);
}

#[test]
fn columns_publish_after_one_assume_copies_one_chunk() {
    let c = cache_with_numbered_nodes(1000);
    let before = c.update_snapshot();
    c.assume_pod(&on(&pod("p", 100), "n500")).unwrap();
    let after = c.update_snapshot();
    let chunks = before.columns().num_chunks();
    assert_eq!(after.columns().shared_chunks(before.columns()), chunks - 1);
    let pos = after.position(Sym::new("n500")).unwrap();
    assert_eq!(after.columns().row(pos).requested_cpu, 100);
    assert_eq!(before.columns().row(pos).requested_cpu, 0);
    // The node's first pod, of the default priority, finds its level stored already: the
    // chunk's steady columns stay shared.
    assert_eq!(after.columns().shared_steady(before.columns()), chunks);
    // Another pod of the same priority: the requests change, the steady columns do not.
    c.assume_pod(&on(&pod("q", 200), "n500")).unwrap();
    let again = c.update_snapshot();
    assert_eq!(again.columns().shared_chunks(after.columns()), chunks - 1);
    assert_eq!(again.columns().shared_steady(after.columns()), chunks);
    // A pod above the lowest level changes what lies above it: copied.
    c.assume_pod(&on(&Pod::builder("h").priority(5).container("i", &[(Cpu, 50)]).build(), "n500")).unwrap();
    let above = c.update_snapshot();
    assert_eq!(above.columns().shared_steady(again.columns()), chunks - 1);
    assert_eq!(above.column_mismatches(), Vec::<String>::new());
    // A first pod of another priority on another node sets its level: copied. Taking the
    // pods off again leaves the stored level alone, and the row reads as one without pods.
    let p7 = Pod::builder("p7").priority(7).container("i", &[(Cpu, 10)]).build();
    c.assume_pod(&on(&p7, "n3")).unwrap();
    let seven = c.update_snapshot();
    assert_eq!(seven.columns().shared_steady(above.columns()), chunks - 1);
    let n3 = seven.position(Sym::new("n3")).unwrap();
    assert!(matches!(seven.columns().below(n3, 8), Below::Tally(_)));
    c.forget_pod(&on(&p7, "n3")).unwrap();
    let empty = c.update_snapshot();
    assert_eq!(empty.columns().shared_steady(seven.columns()), chunks);
    assert_eq!(empty.columns().below(n3, 8), Below::Nothing);
    assert_eq!(empty.column_mismatches(), Vec::<String>::new());
}
