//! Every profile of a configuration in one scheduler: each pod is scheduled by the profile its
//! `spec.schedulerName` names, through one queue; a pod naming no profile is not queued.

use std::sync::Arc;
use std::time::Duration;

use ksched_engine::api::ResourceName::{Cpu, Memory};
use ksched_engine::api::{Node, Pod, Sym, Taint, TaintEffect};
use ksched_engine::cache::Cache;
use ksched_engine::config::{self, Registry, SchedulerConfig};
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::scheduler::{CycleOutcome, ScheduleError};
use ksched_engine::testing::default_node;
use ksched_sim::observe::Counts;
use ksched_sim::simulation::Simulation;
use serde_json::json;

/// `default-scheduler` (upstream's defaults), `bin-packing` (NodeResourcesFit's
/// MostAllocated as its only score) and `no-taints` (TaintToleration disabled).
fn three_profiles() -> SchedulerConfig {
    let doc = json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "default-scheduler"},
            {
                "schedulerName": "bin-packing",
                "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}]}},
                "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]
            },
            {
                "schedulerName": "no-taints",
                "plugins": {"multiPoint": {"disabled": [{"name": "TaintToleration"}]}}
            }
        ]
    });
    config::from_value(doc, &Registry::in_tree()).expect("the configuration is valid")
}

/// Nodes: `busy` (half its CPU used), `idle` (empty) and `tainted` (NoSchedule, empty).
fn simulation(cfg: &SchedulerConfig) -> Simulation {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    cache.add_node(default_node("busy")).unwrap();
    cache.add_node(default_node("idle")).unwrap();
    let tainted = Node::builder("tainted").resources(4000, 32 << 30, 110).taint(Taint::new(
        "dedicated",
        "x",
        TaintEffect::NoSchedule,
    ));
    cache.add_node(tainted.build()).unwrap();
    let filler = Pod::builder("filler").container("i", &[(Cpu, 2000)]).build().with_node(Sym::new("busy"));
    cache.add_pod(&filler).unwrap();
    let mut profiles = cfg.all_profiles();
    for p in profiles.iter_mut() {
        p.parallelism = 1;
    }
    Simulation::new(cache, profiles, cfg.queue_config(), 1)
}

/// `pod-default.yaml`'s pod (100m CPU, 500Mi) for the scheduler `scheduler_name`.
fn pod_of(name: &str, scheduler_name: &str) -> Pod {
    Pod::builder(name).scheduler_name(scheduler_name).container("pause", &[(Cpu, 100), (Memory, 500 << 20)]).build()
}

#[test]
fn scheduler_with_several_profiles_routes_each_pod_by_scheduler_name() {
    // (schedulerName, where the pod must land: None = never queued, not scheduled)
    let cases: [(&str, &[&str]); 4] = [
        // LeastAllocated + the rest: the empty untainted node.
        ("default-scheduler", &["idle"]),
        // MostAllocated: the node already half full.
        ("bin-packing", &["busy"]),
        // No TaintToleration: the tainted node is as good as the idle one.
        ("no-taints", &["idle", "tainted"]),
        // No profile of that name: another scheduler's pod.
        ("someone-else", &[]),
    ];
    let cfg = three_profiles();
    for (name, want) in cases {
        let mut sim = simulation(&cfg);
        sim.cluster.create_pod(pod_of(&format!("pod-{name}"), name)).unwrap();
        let mut placed = Vec::new();
        sim.drain(|o, _| {
            if let CycleOutcome::Scheduled { decision, .. } = o {
                placed.push(decision.node.to_string());
            }
        });
        if want.is_empty() {
            assert!(placed.is_empty(), "{name}: scheduled on {placed:?}");
            assert_eq!(sim.queue.pending_pods().len(), 0, "{name}: queued");
        } else {
            assert_eq!(placed.len(), 1, "{name}: {placed:?}");
            assert!(want.contains(&placed[0].as_str()), "{name}: on {placed:?}, want one of {want:?}");
        }
    }
}

#[test]
fn scheduler_with_several_profiles_runs_them_interleaved_in_one_queue() {
    // Pods of both profiles alternate in one queue: each keeps its own profile's choice, so the
    // bin-packing pods stay on `busy` while the default ones spread to `idle`.
    let cfg = three_profiles();
    let mut sim = simulation(&cfg);
    for i in 0..6 {
        let name = if i % 2 == 0 { "default-scheduler" } else { "bin-packing" };
        sim.cluster.create_pod(pod_of(&format!("p{i}"), name)).unwrap();
    }
    let mut by_profile: Vec<(String, String)> = Vec::new();
    let mut counts = Counts::default();
    sim.drain(|o, _| {
        counts.record(&o);
        if let CycleOutcome::Scheduled { pod, decision } = o {
            by_profile.push((pod.scheduler_name.to_string(), decision.node.to_string()));
        }
    });
    assert_eq!(counts.scheduled, 6);
    for (profile, node) in &by_profile {
        let want = if profile == "bin-packing" { "busy" } else { "idle" };
        assert_eq!(node, want, "{by_profile:?}");
    }
}

#[test]
fn scheduler_pod_of_no_profile_popped_leaves_the_queue_with_an_error() {
    // A pod that reaches the queue without the cluster's check (added to the queue directly).
    let cfg = three_profiles();
    let mut sim = simulation(&cfg);
    let stray = pod_of("stray", "someone-else");
    sim.queue.add(stray).unwrap();
    match sim.scheduler.schedule_one() {
        Some(CycleOutcome::Unschedulable { error: ScheduleError::Plugin(st), preemption: None, .. }) => {
            assert!(st.message().contains("\"someone-else\""), "{}", st.message());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sim.queue.pending_pods().len(), 0);
    assert!(sim.scheduler.schedule_one().is_none());
}

#[test]
fn config_with_differing_queue_sort_is_an_error_naming_the_profile() {
    let doc = json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "default-scheduler"},
            {"schedulerName": "b", "plugins": {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}]}}}
        ]
    });
    let e = config::from_value(doc, &Registry::in_tree()).map(|_| ()).unwrap_err();
    assert_eq!(e.field(), Some("profiles[1].plugins.queueSort"));
    assert!(e.to_string().contains("must be the same for all profiles"), "{e}");
}

#[test]
fn scheduler_profile_named_finds_each_profile_whichever_is_active() {
    let cfg = three_profiles();
    let mut sim = simulation(&cfg);
    sim.cluster.create_pod(pod_of("p", "bin-packing")).unwrap();
    sim.drain(|_, _| {});
    // bin-packing ran last, so it is the active one now.
    assert_eq!(sim.scheduler.profile().scheduler_name, "bin-packing");
    for name in ["default-scheduler", "bin-packing", "no-taints"] {
        let p = sim.scheduler.profile_named(Sym::new(name)).map(|p| p.scheduler_name.as_str());
        assert_eq!(p, Some(name));
    }
    assert!(sim.scheduler.profile_named(Sym::new("someone-else")).is_none());
}
