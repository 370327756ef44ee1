//! The limit probe: the least work any scheduler must do per pod on a given cluster.
//!
//! For each pod, read the free resources (allocatable − requested CPU, memory and pod slots) of
//! as many nodes as the scheduler samples (`num_feasible_nodes_to_find`), once each, from the
//! same snapshot the scheduler reads, starting where the previous pod stopped (the scheduler's
//! rotating start), and pick the fitting node with the most free CPU. Nothing is written: the
//! probe is a lower bound, not a scheduler. A workload's time per pod divided by the probe's
//! says how far the scheduler is from that bound on the same cluster, in the same process.
//!
//! Both are timed in CPU time of the thread (`CLOCK_THREAD_CPUTIME_ID`), not wall time, so time
//! the thread spends descheduled on a shared machine counts on neither side.

use ksched_engine::api::Resource;
use ksched_engine::snapshot::Snapshot;

/// Repetitions of the probe; their median is reported.
const REPS: usize = 5;
/// Picks per repetition at least, so a repetition lasts milliseconds, not microseconds.
const MIN_PICKS: usize = 10_000;

/// The probe's median time per pod over `pods` picks (at least [`MIN_PICKS`]), in
/// nanoseconds.
pub fn ns_per_pod(snapshot: &Snapshot, request: &Resource, sampled: usize, pods: usize) -> f64 {
    let pods = pods.max(MIN_PICKS);
    let mut runs: Vec<f64> = (0..REPS)
        .map(|_| {
            let t0 = thread_cpu_ns();
            let mut start = 0;
            for _ in 0..pods {
                let (pick, next) = pick_one(snapshot, request, sampled, start);
                std::hint::black_box(pick);
                start = next;
            }
            thread_cpu_ns().saturating_sub(t0) as f64 / pods as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[REPS / 2]
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec.max(0) as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec.max(0) as u64)
}

/// Reads `sampled` nodes from position `start` (wrapping) and returns the position of the
/// fitting node with the most free CPU, if any, and where the next pod starts.
pub fn pick_one(snapshot: &Snapshot, request: &Resource, sampled: usize, start: usize) -> (Option<usize>, usize) {
    let n = snapshot.num_nodes();
    if n == 0 {
        return (None, 0);
    }
    let sampled = sampled.min(n);
    let start = start % n;
    let mut best: Option<(i64, usize)> = None;
    let mut visit = |i: usize, free_cpu: i64, free_mem: i64, free_pods: i64| {
        let fits = free_cpu >= request.milli_cpu && free_mem >= request.memory && free_pods >= 1;
        if fits && best.is_none_or(|(c, _)| free_cpu > c) {
            best = Some((free_cpu, i));
        }
    };
    let mut read = |lo: usize, hi: usize| {
        snapshot.for_each_in(lo, hi, |i, info| {
            let (a, r) = (info.allocatable(), info.requested());
            visit(i, a.milli_cpu - r.milli_cpu, a.memory - r.memory, a.allowed_pod_number - info.pods().len() as i64);
        })
    };
    let end = start + sampled;
    read(start, end.min(n));
    if end > n {
        read(0, end - n);
    }
    (best.map(|(_, i)| i), end % n)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ksched_engine::api::Node;
    use ksched_engine::cache::Cache;
    use ksched_engine::testing::default_pod;

    use super::*;

    fn snapshot(free_cpu: &[i64]) -> std::sync::Arc<Snapshot> {
        let cache = Cache::new(Duration::from_secs(30));
        for (i, c) in free_cpu.iter().enumerate() {
            cache.add_node(Node::builder(&format!("n{i}")).resources(*c, 1 << 30, 10).build()).unwrap();
        }
        cache.update_snapshot()
    }

    #[test]
    fn pick_one_reads_the_sample_from_the_rotating_start() {
        let snap = snapshot(&[50, 400, 300, 900, 200]);
        let req = default_pod("p").requests().clone(); // 100m CPU
                                                       // (start, sampled, want pick, want next start); positions are NodeTree order, so map
                                                       // free CPU back to a position first.
        let pos = |cpu: i64| (0..5).find(|&i| snap.node_at(i).is_some_and(|n| n.allocatable().milli_cpu == cpu));
        let cases = [
            ("whole cluster", 0, 5, pos(900), 0),
            ("nothing fits in a sample of the 50m node", pos(50).unwrap_or(0), 1, None, (pos(50).unwrap_or(0) + 1) % 5),
            ("sample larger than the cluster is clamped", 2, 99, pos(900), 2),
        ];
        for (name, start, sampled, want, next) in cases {
            assert_eq!(pick_one(&snap, &req, sampled, start), (want, next), "{name}");
        }
    }

    #[test]
    fn pick_one_wraps_around_the_end() {
        let snap = snapshot(&[1000, 1000, 1000, 1000]);
        let req = default_pod("p").requests().clone();
        let (pick, next) = pick_one(&snap, &req, 3, 3);
        assert_eq!(next, 2);
        assert!(matches!(pick, Some(0 | 1 | 3)));
    }

    #[test]
    fn ns_per_pod_is_positive() {
        let snap = snapshot(&[1000; 200]);
        let req = default_pod("p").requests().clone();
        assert!(ns_per_pod(&snap, &req, 100, 50) > 0.0);
    }
}
