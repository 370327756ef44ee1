//! The scheduling queue's operations. Guards: popping the next pod and adding one must stay
//! O(log n) in the pending pods with no hashing while sifting (the heap of inline sort keys
//! over a slab), so a cycle's queue work is flat from 10k to 100k pending pods.
//!
//! * `queue_push_pop/N`: with N pods pending, pop the next pod and add it back (one of each
//!   per iteration), at 10k and 100k pending pods.
//! * `queue_add_delete/10000`: a pod created and deleted while 10k pods are pending (what
//!   churn does to pending pods): the uid index and the heap's removal from the middle.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ksched_engine::api::Pod;
use ksched_engine::queue::{PriorityQueue, QueueConfig, SchedulingQueue};

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

fn add_delete(c: &mut Criterion) {
    let q = PriorityQueue::new(QueueConfig::new());
    for i in 0..10_000usize {
        q.add(Pod::builder(&format!("p{i}")).priority((i % 7) as i32).build()).expect("queue open");
    }
    let churn = Pod::builder("churn").priority(3).build();
    c.bench_function("queue_add_delete/10000", |b| {
        b.iter(|| {
            q.add(churn.clone()).expect("queue open");
            q.delete(&churn);
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(3));
    targets = push_pop, add_delete
}
criterion_main!(benches);
