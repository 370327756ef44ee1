//! Arbitrary bytes into the manifest reader, as YAML and as JSON: no input may panic, and
//! whatever reads must also load into a simulation (nodes, objects, bound pods, admission)
//! and schedule to the end without panicking. The mode byte also picks strict reading; the
//! workload controllers (Deployment ... CronJob) expand during `load`.
#![no_main]

use ksched_engine::framework::Profile;
use ksched_engine::queue::QueueConfig;
use ksched_k8s::manifest::{Manifests, ReadOptions};
use libfuzzer_sys::fuzz_target;

// Loading manifests into a simulation lives in the `ksched` command's crate (a binary, so no
// library to depend on): its module is compiled into this target as it is there.
#[path = "../../bench-harness/src"]
#[allow(dead_code, unused_imports)]
mod harness {
    pub mod load;
}
use harness::load::LoadSim;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    // The reader picks JSON when the text starts with `{` or `[`: a prefix forces either.
    let input: Vec<u8> = match mode % 3 {
        0 => rest.to_vec(),
        1 => [b"[".as_slice(), rest, b"]"].concat(),
        _ => [b"---\n".as_slice(), rest].concat(),
    };
    let mut m = Manifests::with_options(ReadOptions { strict: mode / 3 % 2 == 1, ..ReadOptions::default() });
    if let Err(e) = m.read_bytes("fuzz", &input) {
        // Every error names the file.
        assert!(e.to_string().starts_with("fuzz"));
        return;
    }
    if let Ok((mut sim, _)) = m.load(Profile::default_profile(), QueueConfig::new(), 1) {
        sim.drain(|_, _| {});
    }
});
