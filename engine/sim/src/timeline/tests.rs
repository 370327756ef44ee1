use std::sync::Arc;
use std::time::Duration;

use ksched_engine::api::{Node, Pod, ResourceName::Cpu};
use ksched_engine::cache::Cache;
use ksched_engine::framework::Profile;
use ksched_engine::queue::QueueConfig;

use super::*;
use crate::simulation::{RunOptions, Until};

#[test]
fn samples_pending_running_allocation_stranded_and_delay() {
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    cache.add_node(Node::builder("n").resources(3000, 1 << 30, 110).build()).unwrap();
    let mut sim = Simulation::new(cache, Profile::default_profile(), QueueConfig::new(), 1);
    // Two 1-CPU pods that run 100 s, then a 2-CPU pod that waits for one of them.
    for name in ["a", "b"] {
        let p = Pod::builder(name).container("i", &[(Cpu, 1000)]).run_duration(Duration::from_secs(100)).build();
        sim.cluster.create_pod(p).unwrap();
    }
    let big = Pod::builder("big").container("i", &[(Cpu, 2000)]).build();
    sim.cluster.create_pod(big).unwrap();
    let mut t = Timeline::new(Duration::from_secs(50));
    t.attach(&sim);
    sim.run(Until::Idle, &RunOptions::default(), &mut [], &mut [&mut t]).unwrap();
    t.finish(&sim);
    let at = |secs: f64| {
        t.samples.iter().find(|s| s.t == secs).unwrap_or_else(|| panic!("no sample at {secs}: {:?}", t.samples))
    };
    let s0 = at(0.0);
    assert_eq!((s0.pending, s0.running, s0.bound), (1, 2, 2));
    let cpu = &s0.resources["cpu"];
    assert_eq!((cpu.requested, cpu.allocatable), (2000, 3000));
    assert_eq!(cpu.stranded, 1000, "1 CPU free where the waiting 2-CPU pod does not fit");
    assert_eq!(s0.unschedulable.get("NodeResourcesFit"), Some(&1));
    let s50 = at(50.0);
    assert_eq!((s50.pending, s50.running, s50.bound, s50.unschedulable.len()), (1, 2, 0, 0));
    // At 100 s both runs end; the big pod binds 100 s after it was created.
    let last = t.samples.last().unwrap();
    assert_eq!((last.t, last.pending, last.running), (100.0, 0, 1));
    assert_eq!(last.resources["cpu"].stranded, 0, "nothing waits");
    assert_eq!(t.delays, [0.0, 0.0, 100.0]);
    assert_eq!(Timeline::percentile(&t.delays, 50.0), Some(0.0));
    assert_eq!(Timeline::percentile(&t.delays, 99.0), Some(100.0));
}
