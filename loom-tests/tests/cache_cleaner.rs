//! The assumed-pod cleaner thread racing the scheduler and the informer.
//!
//! Each model builds a cache with its real cleaner thread. Under loom a timed wait never
//! times out, so the cleaner makes exactly one pass, at every possible point of the other
//! threads' work, and then waits for the stop (`stop_cleaner`, which dropping the cache also
//! sends).
#![cfg(ksched_loom)]

use std::sync::Arc as StdArc;
use std::time::Duration;

use ksched_engine::api::{Node, Pod, ResourceName::*, Sym};
use ksched_engine::cache::{Cache, CacheConfig, PodStateName};
use ksched_engine::sync::{thread, Arc};
use ksched_engine::util::time::{Clock, MockClock, Timestamp};

/// Stack for the model's threads, which build snapshots: loom's 32 KiB coroutine stacks are
/// too small for moving column chunks (about 10 KB each) through a few frames (see
/// snapshot_publish.rs).
const SNAPSHOT_STACK: usize = 1 << 20;

/// Spawns `f` on a model thread with `SNAPSHOT_STACK`.
fn spawn_big<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> thread::JoinHandle<T> {
    thread::Builder::new().stack_size(SNAPSHOT_STACK).spawn(f).expect("spawn")
}

fn cache(clock: &StdArc<MockClock>) -> Arc<Cache> {
    let clock: StdArc<dyn Clock> = clock.clone();
    let c =
        Cache::with_config(CacheConfig { ttl: Duration::from_secs(1), cleanup_period: Duration::from_secs(1), clock });
    c.add_node(Node::builder("a").resources(1000, 1000, 10).build()).unwrap();
    Arc::new(c)
}

fn pod() -> Pod {
    Pod::builder("p").container("i", &[(Cpu, 100)]).build().with_node(Sym::new("a"))
}

fn requested_cpu(c: &Cache) -> i64 {
    c.update_snapshot().get(Sym::new("a")).map_or(-1, |n| n.requested().milli_cpu)
}

/// (1) assume + finish_binding racing the cleaner: a pod whose binding has not finished is
/// never expired, and the node's requests are never leaked or counted twice.
#[test]
fn cleaner_never_expires_an_unfinished_binding() {
    loom::model(|| spawn_big(cleaner_never_expires_an_unfinished_binding_model).join().unwrap());
}

fn cleaner_never_expires_an_unfinished_binding_model() {
    // The clock is far past any deadline: once the binding finishes, the pod may go.
    let clock = StdArc::new(MockClock::new(Timestamp::from_secs(100)));
    let cache = cache(&clock);
    let scheduler = {
        let cache = Arc::clone(&cache);
        spawn_big(move || {
            let p = pod();
            cache.assume_pod(&p).unwrap();
            // Binding still in flight: whatever the cleaner did so far, the pod is here.
            assert_eq!(cache.pod_state(&p.uid), PodStateName::Assumed, "expired before its binding finished");
            assert_eq!(requested_cpu(&cache), 100);
            cache.finish_binding(&p, Timestamp::from_secs(0)).unwrap();
        })
    };
    scheduler.join().unwrap();
    cache.stop_cleaner(); // its one pass is done: the state below is final
    match cache.pod_state(&pod().uid) {
        PodStateName::Assumed => assert_eq!(requested_cpu(&cache), 100),
        PodStateName::Initial => assert_eq!(requested_cpu(&cache), 0),
        PodStateName::Added => panic!("nobody confirmed the pod"),
    }
    assert_eq!(cache.check_invariants(), Vec::<String>::new());
}

/// (2) the informer's confirmation racing expiry: the pod ends Added exactly once (confirmed
/// while assumed, or expired and re-added) and the node counts it once.
#[test]
fn confirmation_racing_expiry_counts_the_pod_once() {
    loom::model(|| spawn_big(confirmation_racing_expiry_counts_the_pod_once_model).join().unwrap());
}

fn confirmation_racing_expiry_counts_the_pod_once_model() {
    let clock = StdArc::new(MockClock::new(Timestamp::from_secs(0)));
    let cache = cache(&clock);
    let p = pod();
    cache.assume_pod(&p).unwrap();
    cache.finish_binding(&p, Timestamp::from_secs(0)).unwrap();
    let informer = {
        let cache = Arc::clone(&cache);
        let p = p.clone();
        spawn_big(move || cache.add_pod(&p).unwrap())
    };
    // The deadline (1 s) passes while the confirmation is in flight.
    clock.set(Timestamp::from_secs(5));
    informer.join().unwrap();
    cache.stop_cleaner();
    assert_eq!(cache.pod_state(&p.uid), PodStateName::Added);
    assert_eq!(requested_cpu(&cache), 100);
    assert_eq!(cache.check_invariants(), Vec::<String>::new());
}
