//! Snapshot publish racing a reader: the reader sees either the old or the new snapshot,
//! never a mix (both of the nodes a publish changed move together).
#![cfg(ksched_loom)]

use std::time::Duration;

use ksched_engine::api::{Node, Pod, ResourceName::*, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::sync::{thread, Arc};

/// Stack for the model's threads that build or check snapshots. loom runs each thread on a
/// 32 KiB coroutine stack; building a snapshot moves column chunks (about 10 KB each) through
/// a few frames, which overflowed it once inlining changed. Only the stack size differs from
/// the engine's own threads.
const SNAPSHOT_STACK: usize = 1 << 20;

/// Runs `f` on a model thread with `SNAPSHOT_STACK` and waits for it.
fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    thread::Builder::new().stack_size(SNAPSHOT_STACK).spawn(f).expect("spawn").join().expect("join")
}

#[test]
fn publish_vs_reader_sees_whole_snapshots() {
    loom::model(|| {
        let cache = on_big_stack(|| {
            let cache = Arc::new(Cache::new(Duration::ZERO));
            for n in ["a", "b"] {
                cache.add_node(Node::builder(n).resources(1000, 1000, 10).build()).unwrap();
            }
            cache.update_snapshot();
            cache
        });
        let writer = {
            let cache = Arc::clone(&cache);
            thread::Builder::new()
                .stack_size(SNAPSHOT_STACK)
                .spawn(move || {
                    let p = |name: &str| Pod::builder(name).container("i", &[(Cpu, 100)]).build();
                    cache.assume_pod(&p("x").with_node(Sym::new("a"))).unwrap();
                    cache.assume_pod(&p("y").with_node(Sym::new("b"))).unwrap();
                    cache.update_snapshot();
                })
                .expect("spawn")
        };
        let s = cache.snapshot();
        let a = s.get(Sym::new("a")).map(|n| n.requested().milli_cpu);
        let b = s.get(Sym::new("b")).map(|n| n.requested().milli_cpu);
        assert!(a == b, "a mixed snapshot: a={a:?} b={b:?}");
        writer.join().unwrap();
        on_big_stack(move || assert!(cache.check_invariants().is_empty()));
    });
}
