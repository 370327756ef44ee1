//! One score pass of the default profile (PreScore, Score, NormalizeScore, weights) over the
//! 500 feasible nodes a default cycle keeps on a 5000-node cluster, for a plain pod and for a
//! pod with preferred pod anti-affinity and a ScheduleAnyway spread constraint. Guards the
//! per-node cost of scoring (batch `score_nodes`, per-pod work hoisted out of the node loop),
//! which was more than half of a SchedulingBasic cycle before batching.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ksched_engine::api::{Pod, ResourceName::*, Sym, TopologySpreadConstraint, LABEL_HOSTNAME, LABEL_ZONE};
use ksched_engine::cache::Cache;
use ksched_engine::framework::runtime::{run_pre_filter, run_scoring, ScoreTable};
use ksched_engine::framework::{CycleState, Profile};
use ksched_engine::snapshot::node_info::NodeInfo;
use ksched_engine::testing::{default_pod, pod_affinity_term, prefers_pod_anti_affinity, selector};

fn labelled_cluster(nodes: usize) -> Cache {
    let cache = Cache::new(Duration::from_secs(30));
    for i in 0..nodes {
        let name = format!("n{i}");
        let node = ksched_engine::api::Node::builder(&name)
            .resources(4000, 32 << 30, 110)
            .label(LABEL_HOSTNAME, &name)
            .label(LABEL_ZONE, ["z1", "z2", "z3"][i % 3])
            .build();
        cache.add_node(node).unwrap();
    }
    // Some pods already placed, so the resource and affinity scores have something to read.
    for i in (0..nodes).step_by(7) {
        let p = Pod::builder(&format!("placed-{i}"))
            .container("registry.k8s.io/pause:3.10.1", &[(Cpu, 100), (Memory, 500 << 20)])
            .label("color", "yellow")
            .build();
        cache.add_pod(&p.with_node(Sym::new(&format!("n{i}")))).unwrap();
    }
    cache
}

fn spreading_pod() -> Pod {
    Pod::builder("p")
        .container("registry.k8s.io/pause:3.10.1", &[(Cpu, 100), (Memory, 500 << 20)])
        .label("color", "yellow")
        .affinity(prefers_pod_anti_affinity(1, pod_affinity_term("color", "yellow", LABEL_HOSTNAME)))
        .spread(TopologySpreadConstraint::new(5, LABEL_ZONE, selector("color", "yellow")).schedule_anyway())
        .build()
}

fn score_pass(c: &mut Criterion) {
    let cache = labelled_cluster(5000);
    let snapshot = cache.update_snapshot();
    let profile = Profile::default_profile();
    let feasible: Vec<&NodeInfo> = snapshot.iter().take(500).map(|n| &**n).collect();
    let mut g = c.benchmark_group("score_pass_500_of_5000_nodes");
    for (name, pod) in [("default_pod", default_pod("p")), ("preferred_anti_affinity_and_spread", spreading_pod())] {
        let mut base = CycleState::new();
        run_pre_filter(&profile, &mut base, &pod, &snapshot).unwrap();
        let mut table = ScoreTable::default();
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut state = base.clone();
                run_scoring(&profile, &mut state, &pod, &snapshot, &feasible, &mut table).unwrap();
                table.totals().len()
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = score_pass
}
criterion_main!(benches);
