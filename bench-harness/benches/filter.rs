//! One filter pass of the default profile over a 5000-node cluster (all nodes visited,
//! sequential and with 2 workers). Guards the per-node cost of the filter chain and of the
//! parallel pool's hand-off.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ksched_engine::cache::Cache;
use ksched_engine::framework::feasible::{find_feasible_nodes_from as find_feasible_nodes, FilterOutput};
use ksched_engine::framework::runtime::{active_filters, run_filters, run_pre_filter};
use ksched_engine::framework::{CycleState, Profile};
use ksched_engine::parallel::WorkerPool;
use ksched_engine::testing::{default_node, default_pod};

fn filter_pass(c: &mut Criterion) {
    let cache = Cache::new(Duration::from_secs(30));
    for i in 0..5000 {
        cache.add_node(default_node(&format!("n{i}"))).unwrap();
    }
    let snapshot = cache.update_snapshot();
    let profile = Profile::default_profile();
    let pod = default_pod("p");
    let mut state = CycleState::new();
    run_pre_filter(&profile, &mut state, &pod, &snapshot).unwrap();
    let filters = active_filters(&profile, &state);
    let check = |_pos: usize, n: &ksched_engine::snapshot::node_info::NodeInfo| {
        ksched_engine::framework::Verdict::from(run_filters(&filters, &state, &pod, n))
    };
    let mut out = FilterOutput::default();
    let mut g = c.benchmark_group("filter_pass_5000_nodes");
    g.bench_function("sequential_all_nodes", |b| {
        b.iter(|| {
            find_feasible_nodes(None, &snapshot, 0, 5000, &check, None, &mut out);
            assert_eq!(out.feasible.len(), 5000);
        })
    });
    g.bench_function("sequential_adaptive_500", |b| {
        b.iter(|| find_feasible_nodes(None, &snapshot, 0, 500, &check, None, &mut out))
    });
    let pool = Arc::new(WorkerPool::new(2));
    g.bench_function("parallel2_all_nodes", |b| {
        b.iter(|| find_feasible_nodes(Some(&pool), &snapshot, 0, 5000, &check, None, &mut out))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = filter_pass
}
criterion_main!(benches);
