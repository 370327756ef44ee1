//! Publishing a snapshot after one pod was assumed, at 1000, 5000 and 20000 nodes. Guards the
//! copy-on-write layout: the cost must stay flat as the cluster grows (one trie path copied),
//! never O(nodes).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ksched_engine::api::Sym;
use ksched_engine::cache::Cache;
use ksched_engine::testing::{default_node, default_pod};

fn publish_after_assume(c: &mut Criterion) {
    let mut g = c.benchmark_group("snapshot_publish_after_one_assume");
    for nodes in [1000usize, 5000, 20000] {
        let cache = Cache::new(Duration::from_secs(30));
        for i in 0..nodes {
            cache.add_node(default_node(&format!("n{i}"))).unwrap();
        }
        cache.update_snapshot();
        let pod = default_pod("p");
        let target = Sym::new(&format!("n{}", nodes / 2));
        let mut on = false;
        g.bench_with_input(BenchmarkId::from_parameter(nodes), &nodes, |b, _| {
            b.iter(|| {
                // Alternate assume / forget so every publish sees exactly one changed node.
                if on {
                    cache.forget_pod(&pod.with_node(target)).unwrap();
                } else {
                    cache.assume_pod(&pod.with_node(target)).unwrap();
                }
                on = !on;
                cache.update_snapshot()
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = publish_after_assume
}
criterion_main!(benches);
