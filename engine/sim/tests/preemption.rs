//! Preemption through `schedule_one`: the scheduler carries out what DefaultPreemption
//! decided (upstream's PrepareCandidate and the nomination) against an in-memory cluster
//! wired to the queue, on a mock clock.

use std::time::Duration;

use std::sync::Arc;

use ksched_engine::api::{
    IntOrPercent, LabelSelector, Labels, PodDisruptionBudget, ResourceName::*, Taint, TaintEffect,
};
use ksched_engine::api::{Node, Pod, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::cache::PodStateName;
use ksched_engine::features::{Feature, FeatureGates};
use ksched_engine::framework::events::QueueingHints;
use ksched_engine::framework::runtime::FitError;
use ksched_engine::framework::Profile;
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::queue::{PriorityQueue, QueueConfig, QueueLocation};
use ksched_engine::scheduler::*;
use ksched_engine::util::time::Clock;
use ksched_engine::util::time::{MockClock, Timestamp};
use ksched_sim::InMemoryCluster;

struct World {
    cache: Arc<Cache>,
    queue: Arc<PriorityQueue>,
    cluster: Arc<InMemoryCluster>,
    clock: Arc<MockClock>,
    sched: Scheduler,
}

/// Nodes with their bound pods; the cluster sends pod events to the queue; one mock clock
/// (at 100s) drives the cluster, the queue and the scheduler (v1.35's default gates).
fn world(nodes: Vec<(Node, Vec<Pod>)>) -> World {
    world_with(nodes, FeatureGates::default(), Duration::ZERO)
}

/// `world` with the scheduler under `gates`, handing a preemption's deletions to a step due
/// `delay` after its cycle (SchedulerAsyncPreemption). The queue's hints come from the
/// scheduler's own profile: its DefaultPreemption both proposes preemptions and holds
/// preemptors in PreEnqueue.
fn world_with(nodes: Vec<(Node, Vec<Pod>)>, gates: FeatureGates, delay: Duration) -> World {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    for (n, pods) in nodes {
        let name = n.name;
        cache.add_node(n).unwrap();
        for p in pods {
            cache.add_pod(&p.with_node(name)).unwrap();
        }
    }
    let clock = Arc::new(MockClock::new(Timestamp::from_secs(100)));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let profile = Profile::default_profile_with(gates);
    let hints = QueueingHints::from_profile(&profile);
    let config = QueueConfig::new().with_clock(dyn_clock.clone()).with_hints(hints).with_feature_gates(gates);
    let queue = Arc::new(PriorityQueue::new(config));
    let cluster = Arc::new(InMemoryCluster::new(cache.clone()).with_queue(queue.clone()).with_clock(dyn_clock.clone()));
    let sched = Scheduler::new(cache.clone(), queue.clone(), profile, cluster.clone(), 7)
        .with_clock(dyn_clock)
        .with_feature_gates(gates)
        .with_preemption_api_delay(delay);
    World { cache, queue, cluster, clock, sched }
}

impl World {
    /// Lets every backoff run out and moves the pods to activeQ.
    fn after_backoff(&self) {
        self.clock.advance(Duration::from_secs(20));
        self.queue.flush_backoff_completed();
    }

    fn queued(&self, pod: &Pod) -> Option<Pod> {
        self.queue.pending_pods().into_iter().find(|p| p.uid == pod.uid)
    }

    fn nominated(&self, pod: &Pod) -> Option<Sym> {
        self.queue.nominator().and_then(|n| n.nominated_node(&pod.uid))
    }
}

fn node(name: &str, cpu: i64) -> Node {
    Node::builder(name).resources(cpu, 32 << 30, 110).label("kubernetes.io/hostname", name).build()
}

fn pod(name: &str, priority: i32, cpu: i64) -> Pod {
    Pod::builder(name).priority(priority).container("i", &[(Cpu, cpu)]).build()
}

fn with_grace(name: &str, priority: i32, cpu: i64, grace: i64) -> Pod {
    Pod::builder(name).priority(priority).container("i", &[(Cpu, cpu)]).termination_grace_period_seconds(grace).build()
}

/// n1 has a 3-CPU victim beside a high-priority pod; n2 is full of a high-priority pod.
fn two_nodes(victim: Pod) -> World {
    world(vec![(node("n1", 4000), vec![victim, pod("keep", 20, 500)]), (node("n2", 4000), vec![pod("h", 20, 3500)])])
}

fn expect_preemption(outcome: Option<CycleOutcome>) -> (FitError, Preemption) {
    match outcome {
        Some(CycleOutcome::Unschedulable { error: ScheduleError::Unschedulable(fit), preemption: Some(p), .. }) => {
            (fit, p)
        }
        other => panic!("expected a preemption, got {other:?}"),
    }
}

#[test]
fn victims_terminate_gracefully_then_the_preemptor_binds_to_its_node() {
    let victim = with_grace("v", 1, 3000, 30);
    let w = two_nodes(victim.clone());
    let mut w = w;
    let p = pod("p", 10, 2000);
    w.queue.add(p.clone()).unwrap();

    // Cycle 1: no node fits; preemption evicts v on n1 and nominates p there.
    let (fit, pre) = expect_preemption(w.sched.schedule_one());
    assert_eq!(fit.to_string(), "0/2 nodes are available: 2 Insufficient cpu.");
    assert_eq!(pre.node, Sym::new("n1"));
    assert_eq!(pre.victims.iter().map(|v| &*v.name).collect::<Vec<_>>(), ["v"]);
    // The victim is terminating, marked as preempted, and still holds its CPU.
    let v_now = w.cache.get_pod(&victim).expect("still in the cache");
    assert!(v_now.is_terminating_by_preemption());
    assert_eq!(v_now.deletion_timestamp, Some(Timestamp::from_secs(100)));
    let snap = w.cache.update_snapshot();
    assert_eq!(snap.get(Sym::new("n1")).unwrap().requested().milli_cpu, 3500);
    assert_eq!(w.cluster.num_terminating(), 1);
    assert_eq!(w.cluster.next_deadline(), Some(Timestamp::from_secs(130)));
    // The preemptor is nominated (nominator and queued pod) but not bound.
    assert_eq!(w.nominated(&p), Some(Sym::new("n1")));
    assert_eq!(w.queued(&p).and_then(|q| q.nominated_node_name), Some(Sym::new("n1")));
    assert_eq!(w.cache.pod_state(&p.uid), PodStateName::Initial);
    assert_eq!(w.queue.location(&p.uid), Some(QueueLocation::Unschedulable));
    let stats = w.cluster.stats();
    assert_eq!((stats.bound, stats.victims_deleted, stats.terminated, stats.nominations_set), (0, 1, 0, 1));

    // Before the grace period ends nothing leaves; a retry now waits for the victim instead
    // of preempting again.
    w.clock.advance(Duration::from_secs(10));
    assert_eq!(w.cluster.tick(), 0);
    w.queue.move_all_to_active();
    match w.sched.schedule_one() {
        Some(CycleOutcome::Unschedulable { error, preemption: None, .. }) => assert_eq!(
            error.to_string(),
            "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to a terminating pod on \
             the nominated node."
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(w.cluster.stats().victims_deleted, 1);
    assert_eq!(w.nominated(&p), Some(Sym::new("n1")), "keeps its nomination");
    assert!(w.cache.get_pod(&victim).is_some());

    // The grace period ends: the victim leaves n1 and the preemptor is retried.
    w.clock.set(Timestamp::from_secs(130));
    assert_eq!(w.cluster.tick(), 1);
    assert!(w.cache.get_pod(&victim).is_none());
    assert_eq!(w.cluster.stats().terminated, 1);
    assert_ne!(w.queue.location(&p.uid), Some(QueueLocation::Unschedulable));
    w.after_backoff();
    match w.sched.schedule_one() {
        Some(CycleOutcome::Scheduled { pod, decision }) => {
            assert_eq!((pod.name.as_ref(), decision.node.as_str()), ("p", "n1"));
            assert_eq!(decision.evaluated, 1, "the nominated node is tried first");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(w.cache.pod_state(&p.uid), PodStateName::Added);
    assert_eq!(w.nominated(&p), None);
    assert!(w.cache.check_invariants().is_empty());
}

#[test]
fn a_zero_grace_period_removes_victims_at_once() {
    let victim = with_grace("v", 1, 3000, 0);
    let mut w = two_nodes(victim.clone());
    let p = pod("p", 10, 2000);
    w.queue.add(p.clone()).unwrap();
    let (_, pre) = expect_preemption(w.sched.schedule_one());
    assert_eq!(pre.node, Sym::new("n1"));
    assert!(w.cache.get_pod(&victim).is_none(), "gone without waiting");
    assert_eq!(w.cache.update_snapshot().get(Sym::new("n1")).unwrap().requested().milli_cpu, 500);
    assert_eq!(w.cluster.num_terminating(), 0);
    let stats = w.cluster.stats();
    assert_eq!((stats.bound, stats.victims_deleted, stats.terminated), (0, 1, 0));
    // Still not bound in the cycle that preempted; the deletion was a move request, so the pod
    // backs off rather than parks.
    assert_eq!(w.cache.pod_state(&p.uid), PodStateName::Initial);
    assert_eq!(w.queue.location(&p.uid), Some(QueueLocation::Backoff));
    assert_eq!(w.nominated(&p), Some(Sym::new("n1")));
    w.after_backoff();
    match w.sched.schedule_one() {
        Some(CycleOutcome::Scheduled { decision, .. }) => assert_eq!(decision.node, Sym::new("n1")),
        other => panic!("{other:?}"),
    }
    assert_eq!(w.cluster.stats().bound, 1);
}

#[test]
fn lower_priority_pods_nominated_to_the_chosen_node_lose_their_nomination() {
    let taint = Taint::new("k", "v", TaintEffect::NoSchedule);
    let tainted = Node::builder("t").resources(4000, 32 << 30, 110).taint(taint).build();
    let mut w = world(vec![(node("n1", 4000), vec![with_grace("v", 1, 3000, 30)]), (tainted, vec![])]);
    let p = pod("p", 10, 2000);
    let lower = Pod::builder("lower").priority(5).container("i", &[(Cpu, 100)]).nominated_node_name("n1").build();
    let elsewhere =
        Pod::builder("elsewhere").priority(5).container("i", &[(Cpu, 100)]).nominated_node_name("t").build();
    // A pod of equal priority nominated to n1 (not queued here): it keeps its room and its
    // nomination.
    let equal = pod("equal", 10, 100);
    w.queue.add(p.clone()).unwrap();
    w.queue.add(lower.clone()).unwrap();
    w.queue.add(elsewhere.clone()).unwrap();
    w.queue.nominator().unwrap().add(&equal, Some(Sym::new("n1")));
    assert_eq!(w.nominated(&lower), Some(Sym::new("n1")));

    let (_, pre) = expect_preemption(w.sched.schedule_one());
    assert_eq!(pre.node, Sym::new("n1"));
    assert_eq!(w.nominated(&lower), None, "nominator");
    assert_eq!(w.queued(&lower).expect("still queued").nominated_node_name, None, "queued pod");
    assert_eq!(w.nominated(&elsewhere), Some(Sym::new("t")));
    assert_eq!(w.queued(&elsewhere).unwrap().nominated_node_name, Some(Sym::new("t")));
    assert_eq!(w.nominated(&equal), Some(Sym::new("n1")));
    assert_eq!(w.nominated(&p), Some(Sym::new("n1")));
    let stats = w.cluster.stats();
    assert_eq!((stats.nominations_set, stats.nominations_cleared), (1, 1));
    assert!(w.queue.nominator().unwrap().check_consistent().is_empty());
}

#[test]
fn a_preemptor_that_cannot_preempt_has_its_nomination_cleared() {
    // p was nominated to n1 earlier, but now only a pod of higher priority is there.
    let mut w = world(vec![(node("n1", 4000), vec![pod("h", 20, 3000)])]);
    let p = Pod::builder("p").priority(10).container("i", &[(Cpu, 2000)]).nominated_node_name("n1").build();
    w.queue.add(p.clone()).unwrap();
    assert_eq!(w.nominated(&p), Some(Sym::new("n1")));
    match w.sched.schedule_one() {
        Some(CycleOutcome::Unschedulable { error, preemption: None, .. }) => assert_eq!(
            error.to_string(),
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption \
             victims found for incoming pod."
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(w.nominated(&p), None);
    assert_eq!(w.queued(&p).expect("queued").nominated_node_name, None);
    assert_eq!(w.cluster.stats().nominations_cleared, 1);
}

#[test]
fn a_preempted_pod_spends_its_budget_until_it_is_gone() {
    // A budget over app=web allowing one of the two web pods to go.
    let web = |name: &str, t: u64| {
        Pod::builder(name)
            .priority(1)
            .label("app", "web")
            .container("i", &[(Cpu, 3000)])
            .start_time(Timestamp::from_secs(t))
            .build()
    };
    let mut w = world(vec![(node("n1", 4000), vec![web("w1", 1)]), (node("n2", 4000), vec![web("w2", 2)])]);
    w.cache.edit_objects(|o| {
        let web = LabelSelector { match_labels: Labels::from_pairs([("app", "web")]), ..Default::default() };
        o.upsert_pdb(PodDisruptionBudget {
            max_unavailable: Some(IntOrPercent::Int(1)),
            ..PodDisruptionBudget::new("default", "web", web)
        })
    });
    let snap = w.cache.update_snapshot();
    let pods: Vec<Pod> = snap.iter().flat_map(|n| n.pods().to_vec()).collect();
    w.cache.edit_objects(|o| ksched_sim::disruption::refresh_pdb_status(o, pods.iter()));
    let allowed = |w: &World| w.cache.objects().pdbs[0].disruptions_allowed;
    assert_eq!(allowed(&w), 1);
    w.queue.add(pod("p", 10, 2000)).unwrap();
    let (_, pre) = expect_preemption(w.sched.schedule_one());
    // Both nodes break no budget; w2 started later, so n2 is chosen.
    assert_eq!(pre.node, Sym::new("n2"));
    assert_eq!(allowed(&w), 0, "a terminating pod is not healthy");
    w.clock.advance(Duration::from_secs(30));
    assert_eq!(w.cluster.tick(), 1);
    assert_eq!(allowed(&w), 1, "w2 gone: one pod expected, desired healthy 0, one healthy");
}

#[test]
fn the_scheduler_records_the_nomination_even_when_the_cluster_does_not_report_it() {
    // A cluster with no queue attached never echoes the nomination back as a pod update: the
    // scheduler itself must tell the nominator, so other pods leave the room free.
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    cache.add_node(node("n1", 4000)).unwrap();
    cache.add_pod(&with_grace("v", 1, 3000, 30).with_node(Sym::new("n1"))).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(MockClock::new(Timestamp::from_secs(100)));
    let queue = Arc::new(PriorityQueue::new(QueueConfig::new().with_clock(clock.clone())));
    let cluster = Arc::new(InMemoryCluster::new(cache.clone()).with_clock(clock.clone()));
    let mut sched = Scheduler::new(cache, queue.clone(), Profile::default_profile(), cluster, 7).with_clock(clock);
    let p = pod("p", 10, 2000);
    queue.add(p.clone()).unwrap();
    let (_, pre) = expect_preemption(sched.schedule_one());
    assert_eq!(pre.node, Sym::new("n1"));
    assert_eq!(queue.nominator().unwrap().nominated_node(&p.uid), Some(Sym::new("n1")));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Random small clusters and a pod that fits nowhere, end to end: when the scheduler
    /// preempts, it evicts only less important pods on the chosen node, does not bind the pod
    /// in that cycle, and binds it to that node once the victims are gone.
    #[test]
    fn a_preemptor_binds_to_its_nominated_node_once_the_victims_leave(
        nodes in proptest::collection::vec(
            (4i64..=8, proptest::collection::vec((-3i32..=5, 1i64..=6, proptest::bool::ANY), 0..6)),
            1..=4,
        ),
        priority in -1i32..=6,
        extra in 1i64..700,
    ) {
        let mut cluster = Vec::new();
        let mut max_free = 0;
        for (i, (cpu, pods)) in nodes.iter().enumerate() {
            let cap = cpu * 500;
            let mut used = 0;
            let mut placed = Vec::new();
            for (j, &(prio, c, graceful)) in pods.iter().enumerate() {
                if used + c * 250 <= cap {
                    used += c * 250;
                    placed.push(with_grace(&format!("p{i}-{j}"), prio, c * 250, if graceful { 30 } else { 0 }));
                }
            }
            max_free = max_free.max(cap - used);
            cluster.push((node(&format!("n{i}"), cap), placed));
        }
        let mut w = world(cluster);
        let p = pod("preemptor", priority, max_free + extra);
        w.queue.add(p.clone()).unwrap();
        match w.sched.schedule_one() {
            Some(CycleOutcome::Unschedulable { preemption: Some(pre), .. }) => {
                proptest::prop_assert!(!pre.victims.is_empty());
                for v in &pre.victims {
                    proptest::prop_assert!(v.priority < priority, "victim {} of priority {}", v.name, v.priority);
                    proptest::prop_assert_eq!(v.node_name, Some(pre.node));
                }
                proptest::prop_assert_eq!(w.cache.pod_state(&p.uid), PodStateName::Initial);
                proptest::prop_assert_eq!(w.nominated(&p), Some(pre.node));
                w.clock.advance(Duration::from_secs(30));
                w.cluster.tick();
                for v in &pre.victims {
                    proptest::prop_assert!(w.cache.get_pod(v).is_none(), "victim {} left", v.name);
                }
                w.after_backoff();
                match w.sched.schedule_one() {
                    Some(CycleOutcome::Scheduled { decision, .. }) => proptest::prop_assert_eq!(decision.node, pre.node),
                    other => proptest::prop_assert!(false, "{:?}", other),
                }
                proptest::prop_assert_eq!(w.nominated(&p), None);
            }
            Some(CycleOutcome::Unschedulable { preemption: None, .. }) => {
                proptest::prop_assert_eq!(w.nominated(&p), None);
                proptest::prop_assert_eq!(w.cluster.stats().victims_deleted, 0);
            }
            other => proptest::prop_assert!(false, "{:?}", other),
        }
        proptest::prop_assert!(w.cache.check_invariants().is_empty());
    }
}

// ----- SchedulerAsyncPreemption -----

fn gates_with_async(on: bool) -> FeatureGates {
    let mut g = FeatureGates::default();
    g.set(Feature::SchedulerAsyncPreemption, on).unwrap();
    g
}

/// n1: a victim (30 s grace) beside a high-priority pod, 500m free; n2 full.
fn async_nodes() -> Vec<(Node, Vec<Pod>)> {
    vec![
        (node("n1", 4000), vec![with_grace("v", 1, 3000, 30), pod("keep", 20, 500)]),
        (node("n2", 4000), vec![pod("h", 20, 4000)]),
    ]
}

/// With the gate on and a 5 s delay: the cycle nominates the preemptor and leaves the victim
/// running; a lower-priority pod that would fit in the room left respects the nomination;
/// a retry of the preemptor in the meantime is held in PreEnqueue (DefaultPreemption); the
/// step then deletes the victim, and the preemptor binds once it is gone.
#[test]
fn async_preemption_deletes_victims_in_a_later_step_and_holds_the_preemptor_until_then() {
    let mut w = world_with(async_nodes(), gates_with_async(true), Duration::from_secs(5));
    let victim = with_grace("v", 1, 3000, 30);
    let p = pod("p", 10, 2000);
    w.queue.add(p.clone()).unwrap();
    let (_, pre) = expect_preemption(w.sched.schedule_one());
    assert_eq!((pre.node, pre.victims.len()), (Sym::new("n1"), 1));
    // Nominated at once; the victim untouched until the step.
    assert_eq!(w.nominated(&p), Some(Sym::new("n1")));
    assert_eq!(w.queued(&p).and_then(|q| q.nominated_node_name), Some(Sym::new("n1")));
    assert!(!w.cache.get_pod(&victim).unwrap().is_terminating());
    assert_eq!(w.cluster.stats().victims_deleted, 0);
    assert_eq!(w.sched.next_preemption_step(), Some(Timestamp::from_secs(105)));

    // q (priority 1, 500m) would fit n1's free 500m, but p's nomination takes the room.
    let q = pod("q", 1, 500);
    w.queue.add(q.clone()).unwrap();
    match w.sched.schedule_one() {
        Some(CycleOutcome::Unschedulable { pod, preemption: None, .. }) => assert_eq!(pod.name, q.name),
        other => panic!("q must respect p's nomination: {other:?}"),
    }

    // Any event now sends p back through PreEnqueue: DefaultPreemption holds it.
    w.queue.move_all_to_active();
    let held: Vec<(String, String, String)> = w
        .queue
        .gated_pods()
        .into_iter()
        .map(|(pod, st)| (pod.name.to_string(), st.plugin.to_string(), st.message()))
        .collect();
    assert!(
        held.contains(&(
            "p".into(),
            "DefaultPreemption".into(),
            "waiting for the preemption for this pod to be finished".into()
        )),
        "{held:?}"
    );

    // The step: the victim is deleted (terminating for its grace period); p stays held until
    // a pod's deletion lets one of its rejecting plugins say Queue.
    w.clock.set(Timestamp::from_secs(105));
    assert_eq!(w.sched.run_preemption_steps(), 1);
    assert_eq!(w.sched.next_preemption_step(), None);
    let v_now = w.cache.get_pod(&victim).unwrap();
    assert!(v_now.is_terminating_by_preemption());
    assert_eq!(v_now.deletion_timestamp, Some(Timestamp::from_secs(105)));
    assert_eq!(w.cluster.stats().victims_deleted, 1);
    assert_eq!(w.queue.location(&p.uid), Some(QueueLocation::Unschedulable));

    w.clock.set(Timestamp::from_secs(135));
    assert_eq!(w.cluster.tick(), 1);
    assert_ne!(w.queue.location(&p.uid), Some(QueueLocation::Unschedulable), "the victim's deletion moved it");
    w.after_backoff();
    let mut bound = Vec::new();
    while let Some(o) = w.sched.schedule_one() {
        if let CycleOutcome::Scheduled { pod, decision } = o {
            bound.push((pod.name.to_string(), decision.node.to_string()));
        }
    }
    assert!(bound.contains(&("p".to_string(), "n1".to_string())), "{bound:?}");
}

/// Without a delay the step runs as soon as the preemptor's cycle is over: every outcome is
/// the one the gate off gives (victims deleted within the cycle).
#[test]
fn async_preemption_without_delay_ends_as_the_synchronous_one() {
    let mut results = Vec::new();
    for on in [false, true] {
        let mut w = world_with(async_nodes(), gates_with_async(on), Duration::ZERO);
        let p = pod("p", 10, 2000);
        w.queue.add(p.clone()).unwrap();
        let (_, pre) = expect_preemption(w.sched.schedule_one());
        let v = w.cache.get_pod(&with_grace("v", 1, 3000, 30)).unwrap();
        let after_cycle = (
            pre.node,
            v.deletion_timestamp,
            w.nominated(&p),
            w.queue.location(&p.uid),
            w.cluster.stats(),
            w.sched.next_preemption_step(),
        );
        w.clock.set(Timestamp::from_secs(130));
        w.cluster.tick();
        w.after_backoff();
        let next = match w.sched.schedule_one() {
            Some(CycleOutcome::Scheduled { pod, decision }) => (pod.name.to_string(), decision.node),
            other => panic!("gate {on}: {other:?}"),
        };
        results.push((after_cycle, next));
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[1].1, ("p".to_string(), Sym::new("n1")));
}

/// Upstream's asynchronous path skips victims already being deleted; with none left it makes
/// no call at all, so the lower-priority pods nominated to the node keep their nomination
/// (the synchronous path clears them).
#[test]
fn async_preemption_with_every_victim_already_terminating_clears_no_nomination() {
    for (on, want_lower) in [(false, None), (true, Some(Sym::new("n1")))] {
        let mut w = world_with(
            vec![(node("n1", 4000), vec![with_grace("v", 1, 3000, 30)]), (node("n2", 4000), vec![pod("h", 20, 4000)])],
            gates_with_async(on),
            Duration::ZERO,
        );
        // Someone else (not a preemption) started deleting v.
        assert!(w.cluster.delete_pod(&with_grace("v", 1, 3000, 30), None, ksched_sim::cluster::PodExit::Deleted));
        let lower = Pod::builder("lower").priority(5).container("i", &[(Cpu, 100)]).nominated_node_name("n1").build();
        let p = pod("p", 10, 2000);
        w.queue.add(p.clone()).unwrap();
        w.queue.add(lower.clone()).unwrap();
        let (_, pre) = expect_preemption(w.sched.schedule_one());
        assert_eq!(pre.node, Sym::new("n1"), "gate {on}");
        assert_eq!(w.nominated(&lower), want_lower, "gate {on}");
        assert_eq!(w.nominated(&p), Some(Sym::new("n1")), "gate {on}");
        assert!(w.queue.gated_pods().is_empty(), "gate {on}: nothing to wait for");
    }
}
