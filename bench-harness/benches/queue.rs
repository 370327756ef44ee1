//! The scheduling queue and the nominator.
//!
//! * `queue_push_pop/N`: with N pods pending, pop the next pod and add it back (one of each
//!   per iteration), at 10k and 100k pending pods: the heap's O(log n) and the uid index.
//! * `nominator_lookup/*`: `nominated_pods_for_node` on a 5000-node cluster with 500
//!   nominated pods, alone and while another thread keeps re-nominating pods (contention on
//!   the shards).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ksched_engine::api::{Pod, Sym};
use ksched_engine::queue::{Nominator, PriorityQueue, QueueConfig, SchedulingQueue};

fn push_pop(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue_push_pop");
    for pending in [10_000usize, 100_000] {
        let q = PriorityQueue::new(QueueConfig::new());
        for i in 0..pending {
            q.add(Pod::builder(&format!("p{i}")).priority((i % 7) as i32).build()).expect("queue open");
        }
        g.bench_with_input(BenchmarkId::from_parameter(pending), &pending, |b, _| {
            b.iter(|| {
                let info = q.try_pop().expect("pods pending");
                q.add(info.pod).expect("queue open");
            })
        });
    }
    g.finish();
}

fn nominator_lookup(c: &mut Criterion) {
    let nodes: Vec<Sym> = (0..5000).map(|i| Sym::new(&format!("n{i}"))).collect();
    let n = Arc::new(Nominator::new());
    let pods: Vec<Pod> = (0..500).map(|i| Pod::builder(&format!("nominated-{i}")).build()).collect();
    for (i, p) in pods.iter().enumerate() {
        n.add(p, Some(nodes[i * 10]));
    }
    let mut g = c.benchmark_group("nominator_lookup");
    let mut i = 0usize;
    g.bench_function("uncontended", |b| {
        b.iter(|| {
            i = (i + 7) % nodes.len();
            n.nominated_pods_for_node(nodes[i]).len()
        })
    });
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (n, stop, nodes) = (Arc::clone(&n), Arc::clone(&stop), nodes.clone());
        thread::spawn(move || {
            let mut k = 0usize;
            while !stop.load(Ordering::Relaxed) {
                k = k.wrapping_add(1);
                n.add(&pods[k % pods.len()], Some(nodes[(k * 13) % nodes.len()]));
            }
        })
    };
    g.bench_function("with_a_writer_thread", |b| {
        b.iter(|| {
            i = (i + 7) % nodes.len();
            n.nominated_pods_for_node(nodes[i]).len()
        })
    });
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer thread");
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(3));
    targets = push_pop, nominator_lookup
}
criterion_main!(benches);
