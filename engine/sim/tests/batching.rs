//! OpportunisticBatching with the in-tree plugins' pod signatures: a profile whose
//! PodTopologySpread has no default constraints signs pods, so a pod of the previous pod's
//! signature takes the next node of that pod's ranking; the default profile (system default
//! spread constraints) signs none, and pods that no plugin can sign, or that sign apart,
//! never batch.

use std::sync::Arc;
use std::time::Duration;

use ksched_engine::api::ResourceName::{Cpu, Memory};
use ksched_engine::api::{LabelSelector, Node, Pod, TopologySpreadConstraint};
use ksched_engine::cache::Cache;
use ksched_engine::config::{self, Registry, SchedulerConfig};
use ksched_engine::scheduler::CycleOutcome;
use ksched_sim::simulation::Simulation;
use serde_json::json;

/// One profile `default-scheduler`: upstream's defaults, or with `defaultingType: List` and no
/// default constraints.
fn config(list: bool) -> SchedulerConfig {
    let mut profile = json!({"schedulerName": "default-scheduler"});
    if list {
        profile["pluginConfig"] = json!([{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]);
    }
    let doc = json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    });
    config::from_value(doc, &Registry::in_tree()).expect("the configuration is valid")
}

/// Eight nodes, each with room for one pod of `pod`'s size; the pods; how many pods took
/// their batching hint, and the nodes the pods went to (each once).
fn run(cfg: &SchedulerConfig, pods: Vec<Pod>) -> (u64, Vec<String>) {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    for i in 0..8 {
        cache.add_node(Node::builder(&format!("n{i}")).resources(1000 + 10 * i, 4 << 30, 110).build()).unwrap();
    }
    let mut profiles = cfg.all_profiles();
    for p in profiles.iter_mut() {
        p.parallelism = 1;
    }
    let mut sim = Simulation::new(cache, profiles, cfg.queue_config(), 1);
    for p in pods {
        sim.cluster.create_pod(p).unwrap();
    }
    let mut nodes = Vec::new();
    sim.drain(|o, _| {
        if let CycleOutcome::Scheduled { decision, .. } = o {
            nodes.push(decision.node.to_string());
        }
    });
    (sim.scheduler.batch_hints(), nodes)
}

/// A pod of 900m CPU (one per node) labelled `app`, with a spread constraint of its own or not.
fn pod(i: usize, app: &str, spread: bool) -> Pod {
    let mut b = Pod::builder(&format!("p{i}")).label("app", app).container("app:1", &[(Cpu, 900), (Memory, 1 << 30)]);
    if spread {
        b = b.spread(
            TopologySpreadConstraint::new(5, "kubernetes.io/hostname", LabelSelector::default()).schedule_anyway(),
        );
    }
    b.build()
}

#[test]
fn pods_of_one_signature_batch_only_where_upstream_signs_them() {
    let alike = || (0..6).map(|i| pod(i, "web", false)).collect::<Vec<_>>();
    let alternating = (0..6).map(|i| pod(i, if i % 2 == 0 { "web" } else { "db" }, false)).collect();
    // (what, List profile, the pods, batched)
    let cases: Vec<(&str, bool, Vec<Pod>, bool)> = vec![
        ("one spec, defaultingType: List", true, alike(), true),
        ("one spec, the default profile (system default constraints)", false, alike(), false),
        ("spread constraints of their own", true, (0..6).map(|i| pod(i, "web", true)).collect(), false),
        ("labels alternating (InterPodAffinity signs labels)", true, alternating, false),
    ];
    for (what, list, pods, batched) in cases {
        let (hints, mut nodes) = run(&config(list), pods);
        assert_eq!(nodes.len(), 6, "{what}: every pod placed: {nodes:?}");
        nodes.sort();
        nodes.dedup();
        assert_eq!(nodes.len(), 6, "{what}: one pod per node");
        assert_eq!(hints > 0, batched, "{what}: {hints} hints taken");
    }
}
