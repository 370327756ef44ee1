//! The limit probe: the least work any scheduler must do per pod on a given cluster.
//!
//! For each pod, read the free resources (allocatable − requested CPU, memory and pod slots) of
//! as many nodes as the scheduler samples (`num_feasible_nodes_to_find`), once each, from the
//! same snapshot the scheduler reads, starting where the previous pod stopped (the scheduler's
//! rotating start), and pick the fitting node with the most free CPU. Nothing is written: the
//! probe is a lower bound, not a scheduler. A workload's time per pod divided by the probe's
//! says how far the scheduler is from that bound on the same cluster, in the same process.
//!
//! The **scoring probe** (`ScoringProbe`) does the least work a scheduler that scores must do:
//! it reads the nodes' allocatable and requested CPU, memory and pod count once into
//! contiguous arrays, then per pod visits nodes from a rotating start until
//! `num_feasible_nodes_to_find` fit (pod count, CPU, memory), scores each fitting node with
//! LeastAllocated + BalancedAllocation by upstream's integer formulas (cpu and memory, weight
//! 1; the non-zero requests for LeastAllocated, the real ones for BalancedAllocation), takes
//! the highest (the first on ties), and accounts the pod on it. A scheduler's time per pod
//! divided by this probe's is how far it is from a memory-friendly scheduler of the same
//! decisions' shape.
//!
//! Both are timed in CPU time of the thread (`CLOCK_THREAD_CPUTIME_ID`), not wall time, so time
//! the thread spends descheduled on a shared machine counts on neither side.

use ksched_engine::api::Resource;
use ksched_engine::framework::plugins::node_resources_balanced::balanced_score;
use ksched_engine::framework::plugins::node_resources_fit::{least_requested_score, weighted_mean};
use ksched_engine::snapshot::Snapshot;

/// Repetitions of each probe: the node-visiting probe's median is reported, the scoring
/// probe's fastest (see `scoring_ns_per_pod`).
const REPS: usize = 5;
/// Picks per repetition at least, so a repetition lasts milliseconds, not microseconds.
const MIN_PICKS: usize = 10_000;

/// A clock of CPU time in nanoseconds: [`thread_cpu_ns`], or a counter in tests (so that no
/// test depends on how fast the machine runs).
pub type CpuClock = fn() -> u64;

/// The probe's median time per pod over `pods` picks (at least [`MIN_PICKS`]), in
/// nanoseconds.
pub fn ns_per_pod(snapshot: &Snapshot, request: &Resource, sampled: usize, pods: usize) -> f64 {
    ns_per_pod_by(thread_cpu_ns, snapshot, request, sampled, pods)
}

/// [`ns_per_pod`] timed by `clock`.
fn ns_per_pod_by(clock: CpuClock, snapshot: &Snapshot, request: &Resource, sampled: usize, pods: usize) -> f64 {
    let pods = pods.max(MIN_PICKS);
    let mut runs: Vec<f64> = (0..REPS)
        .map(|_| {
            let t0 = clock();
            let mut start = 0;
            for _ in 0..pods {
                let (pick, next) = pick_one(snapshot, request, sampled, start);
                std::hint::black_box(pick);
                start = next;
            }
            clock().saturating_sub(t0) as f64 / pods as f64
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

/// CPU time consumed by the whole process (every thread), in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    (t.tv_sec.max(0) as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec.max(0) as u64)
}

/// Tests only: with `KSCHED_TEST_COUNTED_CLOCK=1` in its environment, a run's measured CPU
/// time ([`measured_cpu_ns`]: `ksched bench --child`, `ksched gate`'s scenario children,
/// workload files' measurements) is counted, not read: [`COUNTED_NS_PER_ATTEMPT`] per
/// scheduling attempt plus one per `KSCHED_DEMO_SLOWDOWN` busy-loop iteration. Its figures
/// then repeat exactly whatever the machine's load, so a test of the gate's verdicts (the same
/// build passes, a slowed one fails) depends on no clock.
pub const COUNTED_CLOCK_ENV: &str = "KSCHED_TEST_COUNTED_CLOCK";

/// What one scheduling attempt costs on the counted clock.
pub const COUNTED_NS_PER_ATTEMPT: u64 = 10_000;

static COUNTED_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Whether [`COUNTED_CLOCK_ENV`] is `1` (read once per process).
pub fn counted_clock() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(COUNTED_CLOCK_ENV).is_some_and(|v| v == "1"))
}

/// One scheduling attempt of a measured phase, followed by `slowdown` busy-loop iterations:
/// their cost on the counted clock (nothing when it is off).
pub fn count_attempt(slowdown: u64) {
    if counted_clock() {
        COUNTED_NS.fetch_add(COUNTED_NS_PER_ATTEMPT.saturating_add(slowdown), std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whose CPU time a measured phase reads.
#[derive(Clone, Copy, Debug)]
pub enum CpuOf {
    /// The calling thread's ([`thread_cpu_ns`]).
    Thread,
    /// The whole process's ([`process_cpu_ns`]).
    Process,
}

/// The CPU-time clock of measured phases, in nanoseconds: `of`'s CPU time, or the counted
/// clock under [`COUNTED_CLOCK_ENV`].
pub fn measured_cpu_ns(of: CpuOf) -> u64 {
    if counted_clock() {
        return COUNTED_NS.load(std::sync::atomic::Ordering::Relaxed);
    }
    match of {
        CpuOf::Thread => thread_cpu_ns(),
        CpuOf::Process => process_cpu_ns(),
    }
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

/// Read-once columns of a cluster and the scoring probe over them (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct ScoringProbe {
    alloc_cpu: Vec<i64>,
    alloc_mem: Vec<i64>,
    alloc_pods: Vec<i64>,
    req_cpu: Vec<i64>,
    req_mem: Vec<i64>,
    req_pods: Vec<i64>,
    nz_cpu: Vec<i64>,
    nz_mem: Vec<i64>,
    start: usize,
}

/// What the scoring probe places: a pod's requests and its non-zero (scoring) requests.
#[derive(Clone, Copy, Debug)]
pub struct ProbePod {
    pub cpu: i64,
    pub mem: i64,
    pub nz_cpu: i64,
    pub nz_mem: i64,
}

impl ProbePod {
    pub fn of(pod: &ksched_engine::api::Pod) -> ProbePod {
        let (r, nz) = (pod.requests(), pod.non_zero_requests());
        ProbePod { cpu: r.milli_cpu, mem: r.memory, nz_cpu: nz.milli_cpu, nz_mem: nz.memory }
    }
}

impl ScoringProbe {
    /// The columns of `snapshot`'s nodes, in its order.
    pub fn new(snapshot: &Snapshot) -> ScoringProbe {
        let mut p = ScoringProbe::default();
        snapshot.for_each_in(0, snapshot.num_nodes(), |_, info| {
            let (a, r, nz) = (info.allocatable(), info.requested(), info.non_zero_requested());
            p.alloc_cpu.push(a.milli_cpu);
            p.alloc_mem.push(a.memory);
            p.alloc_pods.push(a.allowed_pod_number);
            p.req_cpu.push(r.milli_cpu);
            p.req_mem.push(r.memory);
            p.req_pods.push(r.allowed_pod_number);
            p.nz_cpu.push(nz.milli_cpu);
            p.nz_mem.push(nz.memory);
        });
        p
    }

    /// Places one pod: visits nodes from the rotating start until `want` fit, scores them,
    /// accounts the pod on the best. Returns its position (`None`: nothing fit).
    pub fn schedule(&mut self, pod: ProbePod, want: usize) -> Option<usize> {
        let n = self.alloc_cpu.len();
        if n == 0 {
            return None;
        }
        let mut best: Option<(i64, usize)> = None;
        let (mut found, mut visited) = (0, 0);
        let mut i = self.start;
        while visited < n && found < want {
            let fits = self.req_pods[i] < self.alloc_pods[i]
                && (pod.cpu == 0 || pod.cpu <= self.alloc_cpu[i] - self.req_cpu[i])
                && (pod.mem == 0 || pod.mem <= self.alloc_mem[i] - self.req_mem[i]);
            if fits {
                found += 1;
                let s = least_allocated(
                    self.nz_cpu[i] + pod.nz_cpu,
                    self.alloc_cpu[i],
                    self.nz_mem[i] + pod.nz_mem,
                    self.alloc_mem[i],
                ) + balanced(
                    self.req_cpu[i] + pod.cpu,
                    self.alloc_cpu[i],
                    self.req_mem[i] + pod.mem,
                    self.alloc_mem[i],
                );
                if best.is_none_or(|(b, _)| s > b) {
                    best = Some((s, i));
                }
            }
            visited += 1;
            i += 1;
            if i == n {
                i = 0;
            }
        }
        self.start = (self.start + visited) % n;
        let (_, pick) = best?;
        self.req_cpu[pick] += pod.cpu;
        self.req_mem[pick] += pod.mem;
        self.req_pods[pick] += 1;
        self.nz_cpu[pick] += pod.nz_cpu;
        self.nz_mem[pick] += pod.nz_mem;
        Some(pick)
    }

    /// Places `pods` pods (`schedule`) and returns the CPU time it took by `clock`, in ns.
    fn timed_picks(&mut self, clock: CpuClock, pod: ProbePod, want: usize, pods: usize) -> u64 {
        let t0 = clock();
        for _ in 0..pods {
            std::hint::black_box(self.schedule(pod, want));
        }
        clock().saturating_sub(t0)
    }
}

/// LeastAllocated over cpu and memory, weight 1 each: the mean of `(cap - req) * 100 / cap`
/// (the engine's formula, `node_resources_fit::weighted_mean`).
#[inline]
fn least_allocated(cpu: i64, cpu_cap: i64, mem: i64, mem_cap: i64) -> i64 {
    weighted_mean([(cpu_cap, cpu, 1), (mem_cap, mem, 1)], least_requested_score)
}

/// BalancedAllocation over cpu and memory: `(1 - |f_cpu - f_mem| / 2) * 100`, truncated,
/// fractions capped at 1; one resource alone scores 100 (the engine's formula,
/// `node_resources_balanced::balanced_score`).
#[inline]
fn balanced(cpu: i64, cpu_cap: i64, mem: i64, mem_cap: i64) -> i64 {
    balanced_score([(cpu_cap, cpu), (mem_cap, mem)])
}

/// The scoring probe's fastest time per pod over [`REPS`] runs placing `pods` pods (at least
/// [`MIN_PICKS`]) on fresh copies of `snapshot`'s columns, in nanoseconds of thread CPU time.
/// The fastest, not the median: the probe is the limit ksched is measured against, and on a
/// shared host its runs read in two modes minutes apart (`ksched bench` measures it before
/// and after the measured run and keeps the faster).
pub fn scoring_ns_per_pod(snapshot: &Snapshot, pod: ProbePod, want: usize, pods: usize) -> f64 {
    let pods = pods.max(MIN_PICKS);
    let base = ScoringProbe::new(snapshot);
    let mut runs: Vec<f64> =
        (0..REPS).map(|_| base.clone().timed_picks(thread_cpu_ns, pod, want, pods) as f64 / pods as f64).collect();
    runs.sort_by(f64::total_cmp);
    runs[0]
}

/// The scoring probe in bursts between segments of a measured run, so that each stretch of
/// the run is compared with the probe timed next to it, in the same speed of the host. (A
/// shared host runs in speed modes that change over seconds; a probe timed before or after
/// a run may read another mode than the run did.)
///
/// Call [`ProbeBursts::after_attempt`] after each attempt and [`ProbeBursts::end`] when the
/// run is over. Every `every` attempts the probe places `every` pods on its own columns,
/// which start as the cluster's before the run and fill as the run's do (one pick per
/// attempt). What the bursts cost is counted in `paused_cpu_ns` and `paused_wall`: the run's
/// own CPU time is what its thread spent less `paused_cpu_ns`.
#[derive(Debug)]
pub struct ProbeBursts {
    probe: ScoringProbe,
    pod: ProbePod,
    want: usize,
    every: usize,
    since: usize,
    /// Thread CPU time of the probe's picks, in ns.
    pub probe_cpu_ns: u64,
    /// Probe picks made.
    pub picks: u64,
    /// Bursts run.
    pub bursts: u64,
    /// Thread CPU time of the bursts with their bookkeeping, in ns.
    pub paused_cpu_ns: u64,
    /// Wall time of the bursts with their bookkeeping.
    pub paused_wall: std::time::Duration,
    /// The clock of `probe_cpu_ns` and `paused_cpu_ns`: [`thread_cpu_ns`] but in tests.
    clock: CpuClock,
}

impl ProbeBursts {
    /// Bursts of `every` picks (at least 1) of `pod` on `snapshot`'s columns, each visiting
    /// nodes until `want` fit.
    pub fn new(snapshot: &Snapshot, pod: ProbePod, want: usize, every: usize) -> ProbeBursts {
        ProbeBursts {
            probe: ScoringProbe::new(snapshot),
            pod,
            want,
            every: every.max(1),
            since: 0,
            probe_cpu_ns: 0,
            picks: 0,
            bursts: 0,
            paused_cpu_ns: 0,
            paused_wall: std::time::Duration::ZERO,
            clock: thread_cpu_ns,
        }
    }

    /// One attempt of the run is over. Returns the wall time of the burst this ran, if any.
    pub fn after_attempt(&mut self) -> Option<std::time::Duration> {
        self.since += 1;
        (self.since >= self.every).then(|| self.burst())
    }

    /// The run is over: its last segment gets its burst too (if it had attempts).
    pub fn end(&mut self) -> Option<std::time::Duration> {
        (self.since > 0).then(|| self.burst())
    }

    /// Places `since` pods with the probe between two segments of the run.
    fn burst(&mut self) -> std::time::Duration {
        let wall = std::time::Instant::now();
        let t0 = (self.clock)();
        self.probe_cpu_ns += self.probe.timed_picks(self.clock, self.pod, self.want, self.since);
        self.picks += self.since as u64;
        self.bursts += 1;
        self.since = 0;
        let elapsed = wall.elapsed();
        self.paused_wall += elapsed;
        self.paused_cpu_ns += (self.clock)().saturating_sub(t0);
        elapsed
    }

    /// The probe's CPU time per pick over all bursts, in ns (None before any burst).
    pub fn probe_ns_per_pick(&self) -> Option<f64> {
        (self.picks > 0).then(|| self.probe_cpu_ns as f64 / self.picks as f64)
    }
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
    fn scoring_probe_picks_the_best_score_and_accounts_the_pod() {
        // With the whole cluster sampled, the pick has the highest sum of the engine's own
        // LeastAllocated (NodeResourcesFit) and BalancedAllocation scores.
        use ksched_engine::framework::plugins::node_resources_balanced::BalancedAllocation;
        use ksched_engine::framework::plugins::node_resources_fit::NodeResourcesFit;
        let free: Vec<i64> = (0..12).map(|i| 1000 + 250 * i).collect();
        let snap = snapshot(&free);
        let mut probe = ScoringProbe::new(&snap);
        let pod = default_pod("p");
        let pick = probe.schedule(ProbePod::of(&pod), 12).expect("a node fits");
        let engine = |i: usize| {
            let info = snap.node_at(i).unwrap();
            NodeResourcesFit::default().score_node(pod.non_zero_requests(), info)
                + BalancedAllocation::default().score_node(&pod, info)
        };
        let best = (0..12).map(engine).max().unwrap();
        assert_eq!(engine(pick), best, "the probe picks a best-scoring node");
        assert!((0..pick).all(|i| engine(i) < best), "the first of the best");
        assert_eq!(probe.req_cpu[pick], 100);
        assert_eq!(probe.req_pods[pick], 1);
        assert_eq!(probe.start, 0, "the whole cluster was visited");
        // Nothing fits a pod larger than every node: no pick, nothing accounted.
        let big = ProbePod { cpu: 10_000, mem: 0, nz_cpu: 10_000, nz_mem: 0 };
        let before = probe.clone();
        assert_eq!(probe.schedule(big, 12), None);
        assert_eq!(probe.req_cpu, before.req_cpu);
    }

    #[test]
    fn scoring_probe_stops_at_want_and_rotates() {
        let snap = snapshot(&[1000; 10]);
        let mut probe = ScoringProbe::new(&snap);
        let pod = ProbePod::of(&default_pod("p"));
        assert!(probe.schedule(pod, 3).is_some_and(|p| p < 3));
        assert_eq!(probe.start, 3);
        assert!(probe.schedule(pod, 3).is_some_and(|p| (3..6).contains(&p)));
        assert_eq!(probe.start, 6);
    }

    #[test]
    fn probe_bursts_place_one_pod_per_attempt_after_every_segment() {
        let snap = snapshot(&[100_000; 8]);
        let pod = ProbePod::of(&default_pod("p"));
        // (attempts, segment length, want: which attempts end a burst, bursts, picks)
        let cases: [(usize, usize, &[usize], u64); 4] =
            [(10, 4, &[4, 8], 3), (8, 4, &[4, 8], 2), (3, 5, &[], 1), (0, 5, &[], 0)];
        for (attempts, every, bursting, bursts) in cases {
            let mut b = ProbeBursts::new(&snap, pod, 8, every);
            b.clock = ticks;
            let ran: Vec<usize> = (1..=attempts).filter(|_| b.after_attempt().is_some()).collect();
            let last = b.end();
            let name = format!("{attempts} attempts in segments of {every}");
            assert_eq!(ran, bursting, "{name}");
            assert_eq!(last.is_some(), attempts % every != 0, "{name}: the last segment's burst");
            assert_eq!((b.bursts, b.picks), (bursts, attempts as u64), "{name}");
            let placed: i64 = b.probe.req_pods.iter().sum();
            assert_eq!(placed, attempts as i64, "{name}: the probe's cluster fills as the run's");
            assert_eq!(b.probe_ns_per_pick().is_some(), attempts > 0, "{name}");
            // Per burst the clock is read four times, the picks' two inside the burst's two:
            // the picks span 1 tick, the burst 3.
            assert_eq!((b.probe_cpu_ns, b.paused_cpu_ns), (bursts, 3 * bursts), "{name}: the clock's reads");
        }
    }

    #[test]
    fn scoring_formulas_match_upstream_examples() {
        // LeastAllocated: cpu (4000-1000)*100/4000 = 75, memory (100-50)*100/100 = 50 → 62.
        assert_eq!(least_allocated(1000, 4000, 50, 100), 62);
        assert_eq!(least_allocated(5000, 4000, 0, 0), 0);
        // BalancedAllocation: fractions 0.5 and 0.1 → 1 - 0.2 = 80.
        assert_eq!(balanced(2000, 4000, 10, 100), 80);
        assert_eq!(balanced(1000, 4000, 250, 1000), 100);
    }

    /// A clock that moves one nanosecond per read (this thread's own count).
    fn ticks() -> u64 {
        thread_local!(static NOW: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
        NOW.with(|n| {
            n.set(n.get() + 1);
            n.get()
        })
    }

    #[test]
    fn ns_per_pod_divides_each_repetition_by_its_picks() {
        let snap = snapshot(&[1000; 200]);
        let req = default_pod("p").requests().clone();
        // Each repetition reads the clock twice (1 tick) and makes MIN_PICKS picks at least.
        assert_eq!(ns_per_pod_by(ticks, &snap, &req, 100, 50), 1.0 / MIN_PICKS as f64);
        assert_eq!(ns_per_pod_by(ticks, &snap, &req, 100, 2 * MIN_PICKS), 0.5 / MIN_PICKS as f64);
    }
}
