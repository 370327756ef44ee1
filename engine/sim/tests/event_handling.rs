//! Upstream scheduler_perf's event-handling shapes at small scale, end to end on the
//! Simulation: pods parked as unschedulable must come back when the cluster event that
//! unblocks them happens (queueing hints), not only when the 5-minute leftover flush runs.

use std::sync::Arc;
use std::time::Duration;

use ksched_engine::api::{
    Affinity, LabelSelector, Labels, Node, Pod, PodAffinity, PodAffinityTerm, Sym, TopologySpreadConstraint,
    LABEL_HOSTNAME,
};
use ksched_engine::cache::Cache;
use ksched_engine::framework::Profile;
use ksched_engine::queue::{QueueConfig, SchedulingQueue};
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::util::time::Clock;
use ksched_sim::Simulation;

const GI: i64 = 1 << 30;

/// `podadd-node.yaml`: 4 CPU, 32Gi, 3000 pods.
fn node(name: &str) -> Node {
    Node::builder(name).resources(4000, 32 * GI, 3000).label(LABEL_HOSTNAME, name).build()
}

fn matching(key: &str, value: &str) -> LabelSelector {
    LabelSelector { match_labels: Labels::from_pairs([(key, value)]), ..Default::default() }
}

/// A required term over pods labelled `key=value` in namespace `ns`, per node.
fn term(key: &str, value: &str, ns: &str) -> Vec<PodAffinityTerm> {
    vec![PodAffinityTerm {
        label_selector: Some(matching(key, value)),
        namespaces: vec![Sym::new(ns)],
        topology_key: Sym::new(LABEL_HOSTNAME),
        ..Default::default()
    }]
}

fn affinity(terms: Vec<PodAffinityTerm>) -> Affinity {
    Affinity { pod_affinity: Some(PodAffinity { required: terms, preferred: vec![] }), ..Default::default() }
}

fn anti_affinity(terms: Vec<PodAffinityTerm>) -> Affinity {
    Affinity { pod_anti_affinity: Some(PodAffinity { required: terms, preferred: vec![] }), ..Default::default() }
}

fn pause(name: &str, ns: &str) -> ksched_engine::api::PodBuilder {
    Pod::builder(name).namespace(ns).container("registry.k8s.io/pause:3.10.1", &[])
}

/// Runs the simulation until nothing more can happen; returns the pods scheduled.
fn drain(sim: &mut Simulation) -> usize {
    let mut scheduled = 0;
    sim.drain(|o, _| scheduled += usize::from(matches!(o, CycleOutcome::Scheduled { .. })));
    scheduled
}

/// EventHandlingPodAdd (upstream's `event_handling/performance-config.yaml`) with `n` pods per
/// group: two nodes; a `color=green` pod on one; `n` topology-spread pods (maxSkew 1 over
/// hostname, `topology=blue`) kept off the green pod's node by anti-affinity, so all but one
/// are rejected by PodTopologySpread; `n` pods each requiring affinity to a `color=yellow-i`
/// pod that does not exist yet. Then `n` blue-and-green pods land beside the green pod (each
/// one evens the spread by one) and `n` yellow pods arrive. Every pod must schedule, and
/// before the unschedulable-pods leftover flush could have moved anything: the bound pods'
/// add events must requeue them.
fn event_handling_pod_add(n: usize) {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    for name in ["node-a", "node-b"] {
        cache.add_node(node(name)).unwrap();
    }
    let config = QueueConfig::new();
    let flush_after = config.max_in_unschedulable;
    let mut sim = Simulation::new(cache, Profile::default_profile(), config, 1);
    let start = sim.clock.now();
    sim.cluster.create_pod(pause("pod-with-label", "podtopologyspread").label("color", "green").build()).unwrap();
    assert_eq!(drain(&mut sim), 1);

    let spread = TopologySpreadConstraint::new(1, LABEL_HOSTNAME, matching("topology", "blue"));
    for i in 0..n {
        let p = pause(&format!("pod-podtopologyspread-{i}"), "podtopologyspread")
            .label("type", "unsched")
            .label("topology", "blue")
            .affinity(anti_affinity(term("color", "green", "podtopologyspread")))
            .spread(spread.clone())
            .build();
        sim.cluster.create_pod(p).unwrap();
    }
    for i in 0..n {
        let p = pause(&format!("pod-interpodaffinity-{i}"), "interpodaffinity")
            .label("type", "unsched")
            .affinity(affinity(term("color", &format!("yellow-{i}"), "interpodaffinity")))
            .build();
        sim.cluster.create_pod(p).unwrap();
    }
    // Only the first spread pod fits (on the node without the green pod).
    assert_eq!(drain(&mut sim), 1);
    assert_eq!(sim.queue.num_unschedulable(), 2 * n - 1);

    for i in 0..n {
        let p = pause(&format!("pod-unblocker-topology-{i}"), "podtopologyspread")
            .label("topology", "blue")
            .label("color", "green")
            .affinity(affinity(term("color", "green", "podtopologyspread")))
            .build();
        sim.cluster.create_pod(p).unwrap();
    }
    for i in 0..n {
        let p = pause(&format!("pod-unblocker-affinity-{i}"), "interpodaffinity")
            .label("color", &format!("yellow-{i}"))
            .build();
        sim.cluster.create_pod(p).unwrap();
    }
    let scheduled = drain(&mut sim);
    let pending: Vec<String> = sim.queue.pending_pods().iter().map(|p| p.key()).collect();
    assert!(pending.is_empty(), "{} pods never scheduled: {pending:?}", pending.len());
    assert_eq!(scheduled, 2 * n + 2 * n - 1);
    let took = sim.clock.now().saturating_since(start);
    assert!(took < flush_after, "took {took:?} of simulated time: the leftover flush, not the events, moved the pods");
    assert!(sim.cache.check_invariants().is_empty());
}

#[test]
fn event_handling_pod_add_requeues_spread_and_affinity_pods_when_unblockers_bind() {
    event_handling_pod_add(40);
}
