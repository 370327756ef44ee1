//! The observer sees exactly what the cycle decided: two identical schedulers, one with a
//! `CycleRecorder` installed, schedule the same random pods; the recorder's feasible set,
//! totals and pick must be the unobserved cycle's own (read from its scratch), and the
//! observed cycle must decide exactly as the unobserved one.

use std::time::Duration;

use super::*;
use crate::api::{ResourceName::*, Taint, TaintEffect};
use crate::observer::{CycleRecorder, SelectedBy};
use crate::queue::{PriorityQueue, QueueConfig};
use crate::testing::{pod_affinity_term, prefers_pod_anti_affinity, requires_pod_anti_affinity};

/// Binds straight into the cache; victims leave it at once (shared with the other cycle tests).
pub(super) struct Binder(pub(super) Arc<Cache>);

impl ClusterApi for Binder {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
        self.0.add_pod(&pod.with_node(node)).map_err(|e| BindError { pod: pod.key(), node, why: e.to_string() })
    }
    fn delete_victim(&self, victim: &Pod) -> Result<(), ApiError> {
        self.0.remove_pod(victim).map_err(|e| ApiError { op: "delete", pod: victim.key(), why: e.to_string() })
    }
    fn set_nominated_node(&self, _: &Pod, _: Option<Sym>) -> Result<(), ApiError> {
        Ok(())
    }
}

struct World {
    queue: Arc<PriorityQueue>,
    sched: Scheduler,
}

fn world(seed: u64, nominated: &[(Pod, &str)]) -> World {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    let mut rng = Rng::seed(seed);
    for i in 0..24 {
        let mut b = Node::builder(&format!("n{i:02}"))
            .resources(1000 * (1 + rng.below(8) as i64), (1 + rng.below(16) as i64) << 30, 4 + rng.below(20) as i64)
            .label("kubernetes.io/hostname", &format!("n{i:02}"))
            .label("topology.kubernetes.io/zone", &format!("z{}", rng.below(3)));
        if rng.below(6) == 0 {
            b = b.taint(Taint::new("dedicated", "x", TaintEffect::NoSchedule));
        }
        cache.add_node(b.build()).unwrap();
    }
    let queue = Arc::new(PriorityQueue::new(QueueConfig::new()));
    for (p, node) in nominated {
        queue.nominator().unwrap().add(p, Some(Sym::new(node)));
    }
    let profile = Profile { percentage_of_nodes_to_score: Some(40), ..Profile::default_profile() };
    let api = Arc::new(Binder(cache.clone()));
    let sched = Scheduler::new(cache, queue.clone(), profile, api, seed);
    World { queue, sched }
}

fn random_pod(i: usize, rng: &mut Rng) -> Pod {
    let mut b = Pod::builder(&format!("p{i}"))
        .container("img", &[(Cpu, 100 * (1 + rng.below(30) as i64)), (Memory, (1 + rng.below(8) as i64) << 28)])
        .label("app", ["a", "b", "c"][rng.below(3) as usize])
        .priority(rng.below(3) as i32);
    match rng.below(8) {
        0 => b = b.affinity(requires_pod_anti_affinity("app", "a")),
        1 => {
            b = b.affinity(prefers_pod_anti_affinity(10, pod_affinity_term("app", "b", "topology.kubernetes.io/zone")))
        }
        2 => b = b.node_selector("topology.kubernetes.io/zone", "z1"),
        3 => b = b.nominated_node_name(&format!("n{:02}", rng.below(24))),
        _ => {}
    }
    b.build()
}

/// An outcome as text (a FitError's reasons print sorted; its Debug form is in hash order).
fn summary(o: &CycleOutcome) -> String {
    match o {
        CycleOutcome::Scheduled { pod, decision } => format!("{} scheduled {decision:?}", pod.key()),
        CycleOutcome::Unschedulable { pod, error, preemption } => {
            let p = preemption.as_ref().map(|p| (p.node, p.victims.iter().map(Pod::key).collect::<Vec<_>>()));
            format!("{} unschedulable: {error}; preemption {p:?}", pod.key())
        }
        CycleOutcome::BindFailed { pod, error } => format!("{} bind failed: {error}", pod.key()),
    }
}

/// Schedules `pods` random pods in both worlds, comparing after each cycle.
fn observer_agrees(seed: u64, pods: usize, nominated: &[(Pod, &str)]) {
    let mut plain = world(seed, nominated);
    let mut observed = world(seed, nominated);
    observed.sched.set_observer(Box::new(CycleRecorder::new()));
    let mut rng = Rng::seed(seed ^ 0x5eed);
    let (mut scored_cycles, mut nominated_fits) = (0, 0);
    for i in 0..pods {
        let pod = random_pod(i, &mut rng);
        plain.queue.add(pod.clone()).unwrap();
        observed.queue.add(pod).unwrap();
        let want = plain.sched.schedule_one().expect("a pod to pop");
        let got = observed.sched.schedule_one().expect("a pod to pop");
        let (want_text, got_text) = (summary(&want), summary(&got));
        assert_eq!(got_text, want_text, "seed {seed} pod {i}: the observed cycle decided otherwise");
        let obs = observed.sched.take_observer().unwrap();
        let mut recorder = (obs as Box<dyn std::any::Any>).downcast::<CycleRecorder>().unwrap();
        let rec = recorder.records.pop().expect("every cycle recorded");
        observed.sched.set_observer(recorder);
        let ctx = format!("seed {seed} pod {i} ({})", rec.pod.as_ref().map(Pod::key).unwrap_or_default());
        let decided = match &want {
            CycleOutcome::Scheduled { decision, .. } => Some(decision.clone()),
            _ => None,
        };
        if let Some(d) = decided.as_ref().filter(|d| d.evaluated == 1 && rec.nominated_node.is_some()) {
            // The nominated node fit: taken unscored, nothing else visited.
            let sel = rec.selection.as_ref().expect("selection");
            assert_eq!((sel.node, sel.by), (d.node, SelectedBy::NominatedNode), "{ctx}");
            assert_eq!(rec.feasible, vec![d.node], "{ctx}");
            nominated_fits += 1;
            continue;
        }
        // The unobserved cycle's own feasible set and totals, from its scratch.
        let snapshot = plain.sched.cache.snapshot();
        let name = |p: &u32| snapshot.node_at(*p as usize).unwrap().name();
        let feasible: Vec<Sym> = plain.sched.scratch.filter.feasible.iter().map(name).collect();
        if rec.pre_filter_rejection.is_none() {
            assert_eq!(rec.feasible, feasible, "{ctx}: feasible set");
            let visited = rec.nodes.iter().filter(|n| n.visited).count();
            assert_eq!(visited, plain.sched.scratch.filter.processed, "{ctx}: nodes visited");
            for n in rec.nodes.iter().filter(|n| n.visited) {
                assert_eq!(n.verdict.is_success(), feasible.contains(&n.node), "{ctx}: {}", n.node);
            }
        }
        match &decided {
            Some(d) => {
                assert_eq!(d.feasible, rec.feasible.len(), "{ctx}");
                let sel = rec.selection.as_ref().expect("selection");
                assert_eq!(sel.node, d.node, "{ctx}: pick");
                if d.feasible > 1 {
                    scored_cycles += 1;
                    assert_eq!(sel.by, SelectedBy::HighestTotal, "{ctx}");
                    assert_eq!(rec.scored, feasible, "{ctx}: scored nodes");
                    assert_eq!(rec.totals, plain.sched.scratch.scores.totals(), "{ctx}: totals");
                    for (j, total) in rec.totals.iter().enumerate() {
                        let sum: i64 = rec.scores.iter().map(|s| s.weighted[j]).sum();
                        assert_eq!(sum, *total, "{ctx}: weighted scores add up");
                    }
                    assert!(rec.top_nodes().contains(&d.node), "{ctx}: pick among the tied");
                }
            }
            None => {
                assert!(rec.selection.is_none(), "{ctx}");
                if let CycleOutcome::Unschedulable { error, .. } = &want {
                    assert_eq!(rec.error.as_ref().map(|e| e.to_string()), Some(error.to_string()), "{ctx}");
                }
            }
        }
    }
    assert!(scored_cycles > pods / 4, "seed {seed}: only {scored_cycles} scored cycles");
    assert!(nominated_fits > 0, "seed {seed}: no pod took its nominated node");
}

#[test]
fn observer_without_nominated_pods_sees_the_cycles_decisions() {
    for seed in 1..=3 {
        observer_agrees(seed, 100, &[]);
    }
}

#[test]
fn observer_with_nominated_pods_sees_the_cycles_decisions() {
    let big = |name: &str, prio: i32| {
        Pod::builder(name).container("img", &[(Cpu, 2500), (Memory, 1 << 30)]).label("app", "a").priority(prio).build()
    };
    let nominated =
        [(big("nom-1", 5), "n01"), (big("nom-2", 1), "n05"), (big("nom-3", 0), "n09"), (big("nom-4", 2), "n13")];
    for seed in 4..=6 {
        observer_agrees(seed, 100, &nominated);
    }
}

/// The filter pass leaves room for pods nominated to a node: of three equal nodes, the two
/// with a big nominated pod of higher or equal priority are not feasible for a pod that
/// would fit them as they are; one nominated with a lower priority does not count, nor does
/// the pod's own nomination (recorded by the nominator, not on the pod's handle).
#[test]
fn filter_pass_leaves_room_for_nominated_pods() {
    type Case<'a> = (&'a [(i32, &'a str)], Option<&'a str>, &'a str);
    let cases: [Case; 4] = [
        (&[(10, "n00"), (0, "n02")], None, "n01"),
        (&[(10, "n01"), (10, "n02")], None, "n00"),
        (&[(10, "n00"), (10, "n01"), (-1, "n02")], None, "n02"),
        (&[(10, "n01"), (10, "n02")], Some("n00"), "n00"),
    ];
    for (noms, own, want) in cases {
        let cache = Arc::new(Cache::new(Duration::from_secs(30)));
        for i in 0..3 {
            cache.add_node(Node::builder(&format!("n{i:02}")).resources(1000, 1 << 30, 10).build()).unwrap();
        }
        let queue = Arc::new(PriorityQueue::new(QueueConfig::new()));
        for (k, &(prio, node)) in noms.iter().enumerate() {
            let big = Pod::builder(&format!("nom-{k}")).container("img", &[(Cpu, 900)]).priority(prio).build();
            queue.nominator().unwrap().add(&big, Some(Sym::new(node)));
        }
        let api = Arc::new(Binder(cache.clone()));
        let mut sched = Scheduler::new(cache, queue.clone(), Profile::default_profile(), api, 1);
        let p = Pod::builder("p").container("img", &[(Cpu, 600)]).build();
        queue.add(p.clone()).unwrap();
        if let Some(node) = own {
            queue.nominator().unwrap().add(&p, Some(Sym::new(node)));
        }
        match sched.schedule_one().expect("a pod to pop") {
            CycleOutcome::Scheduled { decision, .. } => assert_eq!(decision.node, Sym::new(want), "{noms:?}"),
            other => panic!("{noms:?}: {}", summary(&other)),
        }
    }
}
