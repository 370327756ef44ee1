//! Arbitrary sequences of cache operations: whatever succeeds or fails, the cache's
//! invariants hold after every step and no operation panics.
#![no_main]

use std::time::Duration;

use ksched_engine::api::{Pod, ResourceName::*, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::testing::default_node;
use ksched_engine::util::time::Timestamp;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cache = Cache::new(Duration::from_secs(30));
    let nodes = ["n0", "n1", "n2"];
    let pods: Vec<Pod> =
        (0..6).map(|i| Pod::builder(&format!("p{i}")).container("i", &[(Cpu, 10 * (i + 1))]).build()).collect();
    for chunk in data.chunks(3) {
        let [op, a, b] = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let pod = &pods[a as usize % pods.len()];
        let node = Sym::new(nodes[b as usize % nodes.len()]);
        let _ = match op % 10 {
            0 => cache.add_node(default_node(node.as_str())),
            1 => cache.remove_node(node),
            2 => cache.assume_pod(&pod.with_node(node)),
            3 => cache.finish_binding(pod, Timestamp::from_secs(b as u64)),
            4 => cache.forget_pod(&pod.with_node(node)),
            5 => cache.add_pod(&pod.with_node(node)),
            6 => cache.update_pod(&pod.with_node(node), &pod.with_node(node)),
            7 => cache.remove_pod(&pod.with_node(node)),
            8 => {
                cache.cleanup_assumed_pods(Timestamp::from_secs(b as u64));
                Ok(())
            }
            _ => {
                cache.update_snapshot();
                Ok(())
            }
        };
        let violations = cache.check_invariants();
        assert!(violations.is_empty(), "{violations:?}");
    }
});
