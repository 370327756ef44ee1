use std::collections::HashMap;
use std::time::Duration;

use std::sync::Arc;

use ksched_engine::api::{Node, Pod, Sym};
use ksched_engine::api::{ResourceName::*, Taint, TaintEffect, Toleration, TolerationOp, LABEL_ZONE};
use ksched_engine::cache::Cache;
use ksched_engine::framework::events::QueueingHints;
use ksched_engine::framework::Profile;
use ksched_engine::observer::CycleRecorder;
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::queue::{PriorityQueue, QueueConfig, QueueLocation};
use ksched_engine::scheduler::*;
use ksched_engine::testing::{default_node, default_pod};
use ksched_engine::util::rng::Rng;
use ksched_engine::util::time::Clock;
use ksched_engine::util::time::MockClock;
use ksched_sim::InMemoryCluster;

fn setup(nodes: Vec<Node>, profile: Profile) -> (Arc<Cache>, Arc<PriorityQueue>, Scheduler) {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    for n in nodes {
        cache.add_node(n).unwrap();
    }
    let clock: Arc<dyn Clock> = Arc::new(MockClock::new(ksched_engine::util::time::Timestamp::from_secs(1)));
    let hints = QueueingHints::from_profile(&profile);
    let queue = Arc::new(PriorityQueue::new(QueueConfig::new().with_clock(clock).with_hints(hints)));
    let binder = Arc::new(InMemoryCluster::new(cache.clone()));
    let s = Scheduler::new(cache.clone(), queue.clone(), profile, binder, 7);
    (cache, queue, s)
}

#[test]
fn select_host_breaks_ties_uniformly() {
    let mut rng = Rng::seed(1);
    let totals = [5, 9, 3, 9, 9, 1];
    let mut hits: HashMap<usize, u32> = HashMap::new();
    for _ in 0..3000 {
        *hits.entry(select_host(&totals, &mut rng)).or_default() += 1;
    }
    assert_eq!(hits.keys().copied().collect::<std::collections::BTreeSet<_>>(), [1, 3, 4].into());
    assert!(hits.values().all(|&c| c > 850), "{hits:?}");
    assert_eq!(select_host(&[1, 2, 3], &mut rng), 2);
}

#[test]
fn schedule_one_binds_to_the_best_node_and_confirms() {
    // b is emptier, so LeastAllocated and BalancedAllocation prefer it.
    let (cache, queue, mut s) = setup(vec![default_node("a"), default_node("b")], Profile::default_profile());
    cache.add_pod(&default_pod("existing").with_node(Sym::new("a"))).unwrap();
    queue.add(default_pod("p")).unwrap();
    match s.schedule_one() {
        Some(CycleOutcome::Scheduled { pod, decision }) => {
            assert_eq!(decision.node, Sym::new("b"));
            assert_eq!(decision.feasible, 2);
            assert_eq!(cache.pod_state(&pod.uid), ksched_engine::cache::PodStateName::Added);
        }
        other => panic!("{other:?}"),
    }
    assert!(s.schedule_one().is_none());
    assert!(cache.check_invariants().is_empty());
}

#[test]
fn schedule_one_reports_fit_error_and_parks_the_pod() {
    let tainted =
        Node::builder("t").resources(4000, 32 << 30, 110).taint(Taint::new("k", "v", TaintEffect::NoSchedule)).build();
    let small = Node::builder("s").resources(50, 32 << 30, 110).build();
    let (_cache, queue, mut s) = setup(vec![tainted, small, default_node("u").clone()], Profile::default_profile());
    // Make "u" unschedulable.
    s.cache.update_node(Node::builder("u").resources(4000, 32 << 30, 110).unschedulable(true).build()).unwrap();
    queue.add(default_pod("p")).unwrap();
    match s.schedule_one() {
        Some(CycleOutcome::Unschedulable { error, .. }) => assert_eq!(
            error.to_string(),
            // The pod asks for more CPU than "s" has at all, so every rejection is
            // unresolvable and preemption has nowhere to look.
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), 1 node(s) were \
             unschedulable. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(queue.num_unschedulable(), 1);
}

#[test]
fn schedule_one_with_no_nodes_says_so() {
    let (_c, queue, mut s) = setup(vec![], Profile::default_profile());
    queue.add(default_pod("p")).unwrap();
    match s.schedule_one() {
        Some(CycleOutcome::Unschedulable { error: ScheduleError::NoNodes, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn start_index_rotates_by_nodes_processed() {
    // 1000 nodes, adaptive: 420 feasible wanted, all fit → the start moves 420 per cycle.
    let nodes = (0..1000).map(|i| default_node(&format!("n{i}"))).collect();
    let (_c, queue, mut s) = setup(nodes, Profile::default_profile());
    for i in 0..3 {
        queue.add(default_pod(&format!("p{i}"))).unwrap();
    }
    let mut starts = vec![s.next_start_node_index()];
    while s.schedule_one().is_some() {
        starts.push(s.next_start_node_index());
    }
    assert_eq!(starts, [0, 420, 840, 260]);
}

#[test]
fn parallel_and_sequential_schedulers_make_identical_decisions() {
    let nodes = || -> Vec<Node> {
        (0..600)
            .map(|i| {
                let mut b = Node::builder(&format!("n{i}"))
                    .resources(1000 + (i % 7) * 500, (8 + i % 5) << 30, 110)
                    .label(LABEL_ZONE, &format!("z{}", i % 3));
                if i % 11 == 0 {
                    b = b.taint(Taint::new("dedicated", "x", TaintEffect::NoSchedule));
                }
                b.build()
            })
            .collect()
    };
    let run = |parallelism: usize| -> Vec<String> {
        let mut profile = Profile::default_profile();
        profile.parallelism = parallelism;
        let (cache, queue, mut s) = setup(nodes(), profile);
        for i in 0..300 {
            queue
                .add(
                    ksched_engine::api::Pod::builder(&format!("p{i}"))
                        .container("img", &[(Cpu, 100 + (i % 4) * 300), (Memory, (i % 3 + 1) << 29)])
                        .build(),
                )
                .unwrap();
        }
        let mut out = Vec::new();
        while let Some(o) = s.schedule_one() {
            out.push(match o {
                CycleOutcome::Scheduled { pod, decision } => {
                    format!("{} {}", pod.name, decision.node)
                }
                CycleOutcome::Unschedulable { pod, error, .. } => format!("{} {error}", pod.name),
                CycleOutcome::BindFailed { pod, error } => format!("{} bind {error}", pod.name),
            });
        }
        assert!(cache.check_invariants().is_empty());
        out
    };
    assert_eq!(run(1), run(3));
}

/// Past the pool's thresholds (every one of 2100 nodes scored): filtering and scoring run on
/// the pool, chunk by chunk, and the decisions, ties broken by the same draws, are one
/// worker's, with no taints (the chunks' best totals pick the node) and with some nodes that
/// prefer no pods (TaintToleration then scores node by node; one pod in five tolerates it).
#[test]
fn scoring_on_the_pool_decides_as_one_worker() {
    let nodes = |soft: bool| -> Vec<Node> {
        (0..2100)
            .map(|i| {
                let mut b = Node::builder(&format!("n{i}")).resources(4000 + (i % 3) * 1000, 16 << 30, 110);
                if soft && i % 97 == 0 {
                    b = b.taint(Taint::new("soft", "x", TaintEffect::PreferNoSchedule));
                }
                b.build()
            })
            .collect()
    };
    let run = |parallelism: usize, soft: bool| -> Vec<String> {
        let mut profile = Profile::default_profile();
        profile.parallelism = parallelism;
        profile.percentage_of_nodes_to_score = Some(100);
        let (cache, queue, mut s) = setup(nodes(soft), profile);
        for i in 0..120 {
            let mut b = ksched_engine::api::Pod::builder(&format!("p{i}"))
                .container("img", &[(Cpu, 500 + (i % 4) * 250), (Memory, (i % 3 + 1) << 29)]);
            if i % 5 == 0 {
                b = b.toleration(Toleration::new("soft", TolerationOp::Exists, "", None));
            }
            queue.add(b.build()).unwrap();
        }
        let mut out = Vec::new();
        while let Some(o) = s.schedule_one() {
            out.push(match o {
                CycleOutcome::Scheduled { pod, decision } => format!("{} {}", pod.name, decision.node),
                other => panic!("every pod fits: {other:?}"),
            });
        }
        assert!(cache.check_invariants().is_empty());
        out
    };
    for soft in [false, true] {
        let one = run(1, soft);
        assert_eq!(one.len(), 120);
        assert_eq!(run(2, soft), one, "soft taints: {soft}");
        assert_eq!(run(3, soft), one, "soft taints: {soft}");
    }
}

fn big_pod(name: &str) -> ksched_engine::api::Pod {
    ksched_engine::api::Pod::builder(name)
        .container("img", &[(Cpu, 8000)])
        .affinity(ksched_engine::testing::requires_pod_affinity("app", "db"))
        .build()
}

#[test]
fn cluster_events_move_parked_pods_back_only_when_their_rejector_says_so() {
    let (_c, queue, mut s) = setup(vec![default_node("a")], Profile::default_profile());
    // Too big for any node (NodeResourcesFit rejects it before InterPodAffinity looks): parked.
    queue.add(big_pod("big")).unwrap();
    assert!(matches!(s.schedule_one(), Some(CycleOutcome::Unschedulable { .. })));
    let uid = big_pod("big").uid.clone();
    assert_eq!(queue.location(&uid), Some(QueueLocation::Unschedulable));
    // Bound pods, even the one its affinity wants, cannot make room: NodeResourcesFit did
    // not register pod adds.
    queue.add(default_pod("plain")).unwrap();
    assert!(matches!(s.schedule_one(), Some(CycleOutcome::Scheduled { .. })));
    assert_eq!(queue.location(&uid), Some(QueueLocation::Unschedulable));
    queue.add(ksched_engine::api::Pod::builder("db").label("app", "db").build()).unwrap();
    assert!(matches!(s.schedule_one(), Some(CycleOutcome::Scheduled { .. })));
    assert_eq!(queue.location(&uid), Some(QueueLocation::Unschedulable));
    // A node too small for it joins: still parked. A node big enough joins: it moves to
    // backoff (it failed just now).
    s.add_node(Node::builder("small").resources(4000, 64 << 30, 110).build()).unwrap();
    assert_eq!(queue.location(&uid), Some(QueueLocation::Unschedulable));
    s.add_node(Node::builder("huge").resources(16000, 64 << 30, 110).build()).unwrap();
    assert_eq!(queue.location(&uid), Some(QueueLocation::Backoff));
    // Still backing off, but activeQ is empty: SchedulerPopFromBackoffQ pops it.
    assert!(s.schedule_one().is_some(), "popped from backoff");
    assert_eq!(queue.location(&uid), Some(QueueLocation::Unschedulable), "its affinity still fails");
}

#[test]
fn assuming_a_nominated_pod_clears_its_nomination() {
    let (_c, queue, mut s) = setup(vec![default_node("a")], Profile::default_profile());
    queue.add(ksched_engine::api::Pod::builder("p").nominated_node_name("a").build()).unwrap();
    assert_eq!(queue.nominator().map(|n| n.len()), Some(1));
    assert!(matches!(s.schedule_one(), Some(CycleOutcome::Scheduled { .. })));
    assert_eq!(queue.nominator().map(|n| n.len()), Some(0));
}

/// The two-pass filter: (description, nominated pod's priority and cpu, nominated pod label,
/// incoming pod, nodes the incoming pod may go to).
#[test]
fn two_pass_filter_with_nominated_pods_table() {
    use ksched_engine::testing::requires_pod_affinity;
    let small =
        |name: &str| Node::builder(name).resources(4000, 32 << 30, 110).label("kubernetes.io/hostname", name).build();
    let cases: Vec<(&str, i32, i64, Pod, &[&str])> = vec![
        (
            "a nominated pod of higher priority keeps its room: a is too full with it",
            10,
            3000,
            Pod::builder("p").priority(5).container("i", &[(Cpu, 2000)]).build(),
            &["b"],
        ),
        (
            "a nominated pod of equal priority counts too",
            5,
            3000,
            Pod::builder("p").priority(5).container("i", &[(Cpu, 2000)]).build(),
            &["b"],
        ),
        (
            "a nominated pod of lower priority is ignored",
            1,
            3000,
            Pod::builder("p").priority(5).container("i", &[(Cpu, 2000)]).build(),
            &["a", "b"],
        ),
        (
            "pod affinity may not rely on a pod that is only nominated (second pass fails)",
            10,
            100,
            Pod::builder("p").priority(5).affinity(requires_pod_affinity("app", "web")).build(),
            &[],
        ),
    ];
    for (desc, prio, cpu, pod, want) in cases {
        let (cache, queue, mut s) = setup(vec![small("a"), small("b")], Profile::default_profile());
        let nominated =
            Pod::builder("nominee").priority(prio).label("app", "web").container("i", &[(Cpu, cpu)]).build();
        queue.nominator().unwrap().add(&nominated, Some(Sym::new("a")));
        let _ = &cache;
        // Observed on every node (the cycle's own filter function), nothing changed.
        let mut recorder = CycleRecorder::new();
        let _ = s.observe_cycle(&pod, &mut recorder);
        let record = recorder.records.pop().expect("observed");
        let feasible: Vec<&str> =
            record.nodes.iter().filter(|n| n.verdict.is_success()).map(|n| n.node.as_str()).collect();
        assert_eq!(feasible, want, "{desc}");
        // The scheduler's own cycle agrees with the evaluation.
        queue.add(pod.clone()).unwrap();
        match s.schedule_one() {
            Some(CycleOutcome::Scheduled { decision, .. }) => {
                assert!(want.contains(&decision.node.as_str()), "{desc}: chose {}", decision.node)
            }
            Some(CycleOutcome::Unschedulable { .. }) => assert!(want.is_empty(), "{desc}: unschedulable"),
            other => panic!("{desc}: {other:?}"),
        }
    }
}

#[test]
fn a_pod_tries_its_nominated_node_first() {
    // "busy" is fuller, so scoring would prefer "idle"; the nominated node wins when it fits.
    let (cache, queue, mut s) = setup(vec![default_node("busy"), default_node("idle")], Profile::default_profile());
    cache.add_pod(&default_pod("existing").with_node(Sym::new("busy"))).unwrap();
    queue.add(Pod::builder("p").container("i", &[(Cpu, 100)]).nominated_node_name("busy").build()).unwrap();
    match s.schedule_one() {
        Some(CycleOutcome::Scheduled { decision, .. }) => {
            assert_eq!((decision.node.as_str(), decision.evaluated), ("busy", 1));
        }
        other => panic!("{other:?}"),
    }
    // When the nominated node no longer fits, the pod is scheduled like any other.
    queue.add(Pod::builder("q").container("i", &[(Cpu, 1_000_000)]).nominated_node_name("busy").build()).unwrap();
    assert!(matches!(s.schedule_one(), Some(CycleOutcome::Unschedulable { .. })));
    queue.add(Pod::builder("r").container("i", &[(Cpu, 100)]).nominated_node_name("gone").build()).unwrap();
    match s.schedule_one() {
        Some(CycleOutcome::Scheduled { decision, .. }) => assert_eq!(decision.evaluated, 2),
        other => panic!("{other:?}"),
    }
}

/// A cluster whose binds fail (after applying the binding when `apply`: the response was
/// lost) and which reports the pods in `gone` as deleted or bound. Victims and nominations go
/// to an in-memory cluster wired to the queue.
struct FailingCluster {
    inner: InMemoryCluster,
    cache: Arc<Cache>,
    fail_binds: bool,
    apply: bool,
    gone: ksched_engine::sync::Mutex<Vec<ksched_engine::api::PodUid>>,
}

impl ClusterApi for FailingCluster {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
        if !self.fail_binds {
            return self.inner.bind(pod, node);
        }
        if self.apply {
            self.cache.add_pod(&pod.with_node(node)).unwrap();
            ksched_engine::sync::lock(&self.gone).push(pod.uid.clone());
        }
        Err(BindError { pod: pod.key(), node, why: "injected".into() })
    }
    fn delete_victim(&self, victim: &Pod) -> Result<(), ApiError> {
        self.inner.delete_victim(victim)
    }
    fn set_nominated_node(&self, pod: &Pod, node: Option<Sym>) -> Result<(), ApiError> {
        self.inner.set_nominated_node(pod, node)
    }
    fn is_pending(&self, pod: &Pod) -> bool {
        !ksched_engine::sync::lock(&self.gone).contains(&pod.uid)
    }
}

struct FailWorld {
    cache: Arc<Cache>,
    queue: Arc<PriorityQueue>,
    cluster: Arc<FailingCluster>,
    sched: Scheduler,
}

fn fail_world(nodes: Vec<Node>, fail_binds: bool, apply: bool) -> FailWorld {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    for n in nodes {
        cache.add_node(n).unwrap();
    }
    let clock: Arc<dyn Clock> = Arc::new(MockClock::new(ksched_engine::util::time::Timestamp::from_secs(100)));
    let queue = Arc::new(PriorityQueue::new(QueueConfig::new().with_clock(clock.clone())));
    let inner = InMemoryCluster::new(cache.clone()).with_queue(queue.clone()).with_clock(clock.clone());
    let cluster = Arc::new(FailingCluster {
        inner,
        cache: cache.clone(),
        fail_binds,
        apply,
        gone: ksched_engine::sync::Mutex::new(Vec::new()),
    });
    let sched =
        Scheduler::new(cache.clone(), queue.clone(), Profile::default_profile(), cluster.clone(), 7).with_clock(clock);
    FailWorld { cache, queue, cluster, sched }
}

#[test]
fn failure_paths_return_the_pod_to_the_queue_exactly_once_table() {
    // (case, binding applied before the failure, pod deleted meanwhile, queued afterwards,
    //  cache state afterwards)
    use ksched_engine::cache::PodStateName::*;
    let cases = [
        ("bind refused: forgotten and requeued", false, false, true, Initial),
        ("bind refused, pod deleted meanwhile: forgotten, not resurrected", false, true, false, Initial),
        ("bind applied but reported failed: bound, not queued", true, false, false, Added),
    ];
    for (case, apply, deleted, queued, state) in cases {
        let w = fail_world(vec![default_node("a")], true, apply);
        let mut sched = w.sched;
        let p = default_pod("p");
        w.queue.add(p.clone()).unwrap();
        if deleted {
            ksched_engine::sync::lock(&w.cluster.gone).push(p.uid.clone());
        }
        match sched.schedule_one() {
            Some(CycleOutcome::BindFailed { .. }) => {}
            other => panic!("{case}: {other:?}"),
        }
        assert_eq!(w.queue.num_pending(), usize::from(queued), "{case}");
        assert_eq!(w.queue.location(&p.uid).is_some(), queued, "{case}");
        assert_eq!(w.cache.pod_state(&p.uid), state, "{case}");
        assert!(w.cache.check_invariants().is_empty(), "{case}");
        assert!(w.queue.check_invariants().is_empty(), "{case}");
        assert!(sched.schedule_one().is_none(), "{case}: nothing else to schedule");
    }
}

#[test]
fn a_pod_pinned_by_node_name_fields_is_filtered_on_those_nodes_only() {
    use ksched_engine::api::{NodeAffinity, NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm};
    // A DaemonSet pod: required affinity `metadata.name In [node]`.
    let pinned = |name: &str, node: &str, cpu: i64| {
        let term = NodeSelectorTerm {
            match_expressions: vec![],
            match_fields: vec![NodeSelectorRequirement::new("metadata.name", NodeSelectorOp::In, &[node])],
        };
        Pod::builder(name)
            .container("i", &[(Cpu, cpu)])
            .node_affinity(NodeAffinity { required: Some(NodeSelector { terms: vec![term] }), preferred: vec![] })
            .build()
    };
    // (case, pinned to, cpu, Ok(node, nodes evaluated) or Err(FitError text))
    type Case = (&'static str, &'static str, i64, Result<(&'static str, usize), &'static str>);
    let cases: [Case; 3] = [
        ("fits on its node, which alone is evaluated", "b", 100, Ok(("b", 1))),
        (
            "does not fit on its node: the others share PreFilter's verdict",
            "b",
            5000,
            Err("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. \
                 no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."),
        ),
        (
            "its node does not exist",
            "gone",
            100,
            Err("0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to deallocate, preemption: 0/3 nodes \
                 are available: 3 Preemption is not helpful for scheduling."),
        ),
    ];
    for (case, node, cpu, want) in cases {
        let (_cache, queue, mut s) =
            setup(vec![default_node("a"), default_node("b"), default_node("c")], Profile::default_profile());
        queue.add(pinned("p", node, cpu)).unwrap();
        match (s.schedule_one(), want) {
            (Some(CycleOutcome::Scheduled { decision, .. }), Ok((want_node, evaluated))) => {
                assert_eq!((decision.node.as_str(), decision.evaluated), (want_node, evaluated), "{case}");
            }
            (Some(CycleOutcome::Unschedulable { error, .. }), Err(msg)) => assert_eq!(error.to_string(), msg, "{case}"),
            (other, _) => panic!("{case}: {other:?}"),
        }
    }
}

#[test]
fn observer_shows_prefilter_narrowing_like_the_cycle() {
    use ksched_engine::api::{NodeAffinity, NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm};
    // Two terms (ORed), one node each: a field requirement takes exactly one value.
    let term = |n: &str| NodeSelectorTerm {
        match_expressions: vec![],
        match_fields: vec![NodeSelectorRequirement::new("metadata.name", NodeSelectorOp::In, &[n])],
    };
    let affinity =
        NodeAffinity { required: Some(NodeSelector { terms: vec![term("b"), term("c")] }), preferred: vec![] };
    let (_cache, _queue, mut s) =
        setup(vec![default_node("a"), default_node("b"), default_node("c")], Profile::default_profile());
    for (case, cpu, scored) in [("fits on both named nodes", 100, vec!["b", "c"]), ("fits nowhere", 5000, vec![])] {
        let pod = Pod::builder("p").container("i", &[(Cpu, cpu)]).node_affinity(affinity.clone()).build();
        let mut recorder = CycleRecorder::new();
        let _ = s.observe_cycle(&pod, &mut recorder);
        let ex = recorder.records.pop().expect("observed");
        assert_eq!(ex.narrowed_to, Some(vec![Sym::new("b"), Sym::new("c")]), "{case}");
        let verdicts: Vec<String> = ex.nodes.iter().map(|n| n.verdict.message()).collect();
        assert_eq!(verdicts[0], "node(s) didn't satisfy plugin(s) [NodeAffinity]", "{case}: a is narrowed out");
        let want_bc = if cpu > 4000 { "Insufficient cpu" } else { "" };
        assert_eq!((verdicts[1].as_str(), verdicts[2].as_str()), (want_bc, want_bc), "{case}");
        let got: Vec<&str> = ex.scored.iter().map(|s| s.as_str()).collect();
        assert_eq!(got, scored, "{case}");
    }
}

#[test]
fn a_failed_bind_clears_the_pods_nomination() {
    let w = fail_world(vec![default_node("a")], true, false);
    let mut sched = w.sched;
    let p = Pod::builder("p").container("i", &[(Cpu, 100)]).nominated_node_name("a").build();
    w.queue.add(p.clone()).unwrap();
    assert_eq!(w.queue.nominator().map(|n| n.nominated_node(&p.uid)), Some(Some(Sym::new("a"))));
    assert!(matches!(sched.schedule_one(), Some(CycleOutcome::BindFailed { .. })));
    assert!(w.queue.location(&p.uid).is_some(), "requeued");
    assert_eq!(w.queue.nominator().map(|n| n.nominated_node(&p.uid)), Some(None), "nominator entry gone");
    let queued = w.queue.pending_pods().into_iter().find(|q| q.uid == p.uid).expect("queued");
    assert_eq!(queued.nominated_node_name, None, "nominatedNodeName cleared on the queued pod");
    assert!(w.queue.check_invariants().is_empty());
}

#[test]
fn a_preemptor_deleted_during_its_attempt_is_neither_requeued_nor_nominated() {
    let w = fail_world(vec![Node::builder("n").resources(1000, 1 << 30, 10).build()], false, false);
    let mut sched = w.sched;
    let low = Pod::builder("low").container("i", &[(Cpu, 800)]).termination_grace_period_seconds(30).build();
    w.cache.add_pod(&low.with_node(Sym::new("n"))).unwrap();
    let high = Pod::builder("high").container("i", &[(Cpu, 800)]).priority(10).build();
    w.queue.add(high.clone()).unwrap();
    ksched_engine::sync::lock(&w.cluster.gone).push(high.uid.clone());
    match sched.schedule_one() {
        Some(CycleOutcome::Unschedulable { preemption: Some(p), .. }) => assert_eq!(p.node, Sym::new("n")),
        other => panic!("{other:?}"),
    }
    assert_eq!(w.queue.location(&high.uid), None);
    let nominator = w.queue.nominator().unwrap();
    assert_eq!(nominator.nominated_node(&high.uid), None, "no room reserved for a deleted pod");
    assert!(nominator.is_empty());
}

/// A PreBind plugin that always has work to do (as VolumeBinding with claims to bind, or
/// DynamicResources with claims) and does nothing.
struct BusyPreBind;

impl ksched_engine::framework::Plugin for BusyPreBind {
    fn name(&self) -> &'static str {
        "BusyPreBind"
    }
}

impl ksched_engine::framework::PreBindPlugin for BusyPreBind {
    fn pre_bind(
        &self,
        _: &mut ksched_engine::framework::CycleState,
        _: &Pod,
        _: Sym,
        _: &dyn ClusterApi,
    ) -> ksched_engine::framework::Status {
        ksched_engine::framework::Status::success()
    }
    fn pre_bind_has_work(&self, _: &ksched_engine::framework::CycleState, _: &Pod, _: Sym) -> bool {
        true
    }
}

/// NominatedNodeNameForExpectation: a pod whose PreBind has work gets its node as nominated
/// node before binding (and loses it when the binding fails); the assumed pod's update never
/// re-queues it; with the gate off, or nothing for PreBind to do, no nomination is written.
#[test]
fn nominated_node_name_for_expectation_table() {
    use ksched_engine::features::{Feature, FeatureGates};
    // (case, gate, PreBind has work, bind fails, want (nominations set, cleared), want queued)
    let cases = [
        ("gate on, PreBind work, bound", true, true, false, (1, 0), false),
        ("gate on, PreBind work, bind fails: cleared", true, true, true, (1, 1), true),
        ("gate on, nothing for PreBind", true, false, false, (0, 0), false),
        ("gate off", false, true, false, (0, 0), false),
    ];
    for (case, on, work, fails, want, queued) in cases {
        let w = fail_world(vec![default_node("a")], fails, false);
        let mut profile = Profile::default_profile();
        if work {
            profile.pre_bind.push(Arc::new(BusyPreBind));
        }
        let mut gates = FeatureGates::default();
        gates.set(Feature::NominatedNodeNameForExpectation, on).unwrap();
        let mut sched =
            Scheduler::new(w.cache.clone(), w.queue.clone(), profile, w.cluster.clone(), 7).with_feature_gates(gates);
        let p = default_pod("p");
        w.queue.add(p.clone()).unwrap();
        match (sched.schedule_one(), fails) {
            (Some(CycleOutcome::Scheduled { .. }), false) | (Some(CycleOutcome::BindFailed { .. }), true) => {}
            (other, _) => panic!("{case}: {other:?}"),
        }
        let stats = w.cluster.inner.stats();
        assert_eq!((stats.nominations_set, stats.nominations_cleared), want, "{case}");
        assert_eq!(w.queue.num_pending(), usize::from(queued), "{case}: queued exactly when the bind failed");
        assert!(w.queue.check_invariants().is_empty(), "{case}");
    }
}
