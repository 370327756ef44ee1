//! The nominator (pods nominated to nodes by preemption). Guards: a cycle's lookup of the
//! pods nominated to a node stays a few nanoseconds and does not collapse when another thread
//! writes nominations (the sharded locks), and the per-cycle gathering of nominations stays
//! proportional to the nominated pods, not the nodes.
//!
//! * `nominator_lookup/*`: `nominated_pods_for_node` on a 5000-node cluster with 500
//!   nominated pods, alone and while another thread keeps re-nominating pods.
//! * `nominator_renominate`: moving one pod's nomination to another node.
//! * `nominated_pods_gather/500`: `NominatedPods::for_pod`, what every cycle does when pods
//!   are nominated.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use criterion::{criterion_group, criterion_main, Criterion};
use ksched_engine::api::{Pod, Sym};
use ksched_engine::framework::runtime::NominatedPods;
use ksched_engine::queue::Nominator;

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

fn renominate_and_gather(c: &mut Criterion) {
    let nodes: Vec<Sym> = (0..5000).map(|i| Sym::new(&format!("n{i}"))).collect();
    let n = Nominator::new();
    let pods: Vec<Pod> = (0..500).map(|i| Pod::builder(&format!("nominated-{i}")).priority(5).build()).collect();
    for (i, p) in pods.iter().enumerate() {
        n.add(p, Some(nodes[i * 10]));
    }
    let mut k = 0usize;
    c.bench_function("nominator_renominate", |b| {
        b.iter(|| {
            k = k.wrapping_add(1);
            n.add(&pods[k % pods.len()], Some(nodes[(k * 13) % nodes.len()]));
        })
    });
    let preemptor = Pod::builder("preemptor").priority(5).build();
    c.bench_function("nominated_pods_gather/500", |b| b.iter(|| NominatedPods::for_pod(Some(&n), &preemptor)));
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(3));
    targets = nominator_lookup, renominate_and_gather
}
criterion_main!(benches);
