//! Observers of a run ([`crate::simulation::Observer`]) that every front end shares: outcome
//! counts, the attempt-latency histogram and throughput windows; and the process's peak RSS.
//!
//! Throughput windows follow upstream scheduler_perf's collector: the clock is looked at after
//! every scheduling attempt. When the attempt ended in a later 1-second window than the one
//! before it, the pods scheduled before that attempt since the last sample, divided by the time
//! since then, are recorded once per second passed (upstream's sampler does the same for
//! intervals in which nothing got scheduled: it waits, then records the rate once per interval
//! skipped). Pods scheduled in the window that is still open wait for the next sample, so a
//! burst after a long wait is spread over the whole wait rather than its first pod. Unlike
//! upstream, the first window is kept (pods are all queued before the clock starts, so it is not
//! an outlier) and so are the pods of the last, partial window: at the end, the pods since the
//! last sample are spread over the windows since then, the partial one included, so every
//! counted pod is in a sample. The Average is the samples' mean weighted by the time each
//! covers (upstream's samples each cover one second, so there it is the plain mean): the pods
//! counted ÷ the time up to the last sample, also when attempts take very different times
//! (preemption: a long run of failing dry runs, then the preemptors bind in a burst, perhaps
//! across a window boundary, where a plain mean would weigh a 40 ms tail like a second). A
//! measurement shorter than one window is one sample of its whole rate (upstream reports no
//! throughput at all then). Percentiles are nearest-rank over the samples.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use ksched_engine::scheduler::CycleOutcome;
use serde::{Deserialize, Serialize};

use crate::simulation::{Observer, SimCluster};

/// What a run's attempts ended in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub attempts: usize,
    pub scheduled: usize,
    /// Attempts that ended unschedulable (a preempting pod counts once per attempt).
    pub unschedulable: usize,
    pub bind_failures: usize,
    /// Unschedulable attempts whose PostFilter nominated a node.
    pub preemptions: usize,
    /// Pods those preemptions deleted.
    pub victims: usize,
}

impl Counts {
    pub fn record(&mut self, o: &CycleOutcome) {
        self.attempts += 1;
        match o {
            CycleOutcome::Scheduled { .. } => self.scheduled += 1,
            CycleOutcome::Unschedulable { preemption, .. } => {
                self.unschedulable += 1;
                if let Some(p) = preemption {
                    self.preemptions += 1;
                    self.victims += p.victims.len();
                }
            }
            CycleOutcome::BindFailed { .. } => self.bind_failures += 1,
        }
    }
}

impl<C: SimCluster> Observer<C> for Counts {
    fn attempt(&mut self, outcome: &CycleOutcome, _ns: u64) {
        self.record(outcome);
    }
}

/// Attempt latency in ns (1 ns .. 10 min, 3 significant digits).
#[derive(Clone, Debug)]
pub struct AttemptLatency(pub Histogram<u64>);

impl Default for AttemptLatency {
    fn default() -> Self {
        // Constant, valid bounds: construction cannot fail.
        AttemptLatency(Histogram::new_with_bounds(1, 600_000_000_000, 3).expect("constant histogram bounds are valid"))
    }
}

impl<C: SimCluster> Observer<C> for AttemptLatency {
    fn attempt(&mut self, _outcome: &CycleOutcome, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }
}

/// Throughput over 1-second windows (see the module docs).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Throughput {
    /// Pods counted ÷ the time up to the last sample (0 when nothing was counted).
    pub average: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    /// Samples the percentiles are over (0 when nothing was counted).
    pub windows: usize,
    /// True when the measurement was shorter than one window.
    pub partial: bool,
}

/// The windowing state machine: fed the time each attempt ended at (since the measurement
/// started) and whether it scheduled a counted pod. Time is the caller's (wall time, or a
/// synthetic time in tests), so the rule is testable on exact instants.
#[derive(Debug, Clone, Default)]
pub struct ThroughputWindows {
    counted: usize,
    last_count: usize,
    last_t: f64,
    last_whole: u64,
    /// The window the previous attempt ended in.
    seen_whole: u64,
    samples: Vec<f64>,
    /// (seconds since the start, pods/s) per recorded sample run.
    timeline: Vec<(f64, f64)>,
}

impl ThroughputWindows {
    pub fn new() -> ThroughputWindows {
        ThroughputWindows::default()
    }

    /// An attempt ended `elapsed` after the start; `counted` when it scheduled a pod that
    /// counts. The pods counted so far were scheduled before it ended; its own pod belongs to
    /// the window it ended in.
    pub fn attempt(&mut self, elapsed: Duration, counted: bool) {
        self.sample(elapsed);
        self.counted += usize::from(counted);
    }

    /// Pods counted so far.
    pub fn counted(&self) -> usize {
        self.counted
    }

    /// Samples so far (rates in pods/s, one per window).
    pub fn samples(&self) -> &[f64] {
        &self.samples
    }

    fn sample(&mut self, elapsed: Duration) {
        let whole = elapsed.as_secs();
        if whole <= self.seen_whole {
            return;
        }
        self.seen_whole = whole;
        let new = self.counted - self.last_count;
        if new == 0 {
            // Nothing counted in this window: wait for the next pod, then spread its rate
            // over every window passed (upstream's skipped intervals).
            return;
        }
        let t = elapsed.as_secs_f64();
        let rate = new as f64 / (t - self.last_t);
        for _ in 0..(whole - self.last_whole) {
            self.samples.push(rate);
        }
        self.timeline.push((t, rate));
        self.last_count = self.counted;
        self.last_t = t;
        self.last_whole = whole;
    }

    /// Ends the measurement `elapsed` after the start: the throughput and the timeline
    /// ((seconds since the start, pods/s) per sample run, for plots).
    pub fn finish(mut self, elapsed: Duration) -> (Throughput, Vec<(f64, f64)>) {
        self.sample(elapsed);
        let secs = elapsed.as_secs_f64();
        let new = self.counted - self.last_count;
        if new > 0 && secs > self.last_t {
            // The pods since the last sample, over the windows since then (the partial one too).
            let rate = new as f64 / (secs - self.last_t);
            let windows = elapsed.as_secs() - self.last_whole + u64::from(elapsed.subsec_nanos() > 0);
            for _ in 0..windows.max(1) {
                self.samples.push(rate);
            }
            self.timeline.push((secs, rate));
            self.last_count = self.counted;
            self.last_t = secs;
        } else if new > 0 {
            // The last attempt closed a window and bound a pod at the same instant (synthetic
            // time): the pod counts in the time already sampled.
            self.last_count = self.counted;
        }
        let partial = elapsed < Duration::from_secs(1);
        if self.samples.is_empty() {
            return (Throughput { partial, ..Throughput::default() }, self.timeline);
        }
        // The samples' mean weighted by the time each covers.
        let average = if self.last_t > 0.0 { self.last_count as f64 / self.last_t } else { self.samples[0] };
        (percentiles(self.samples, average, partial), self.timeline)
    }
}

/// **pods/s**: `pods` ÷ `seconds`, 0 when no time passed. The one rule behind every front
/// end's pods/s figure; what `seconds` covers names the figure (perf/RESULTS.md, "What pods/s
/// means where"):
///
/// * **pods/s** (`ksched run`, `ksched sweep`): the measured phase's wall seconds;
/// * **attempt pods/s** (`ksched compare`'s throughput): the summed wall time of the attempts,
///   the scheduler's own time without the harness's between them;
/// * **windowed pods/s** (`ksched bench`, workload files' `SchedulingThroughput`): upstream's
///   1-second windows, [`ThroughputWindows`], whose Average is this rule over the time up to
///   the last sample.
pub fn pods_per_second(pods: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        pods as f64 / seconds
    } else {
        0.0
    }
}

/// Nearest-rank percentiles of window rates.
pub fn percentiles(mut rates: Vec<f64>, average: f64, partial: bool) -> Throughput {
    rates.sort_by(f64::total_cmp);
    let pct = |p: usize| {
        let rank = (rates.len() * p).div_ceil(100).clamp(1, rates.len().max(1));
        rates.get(rank - 1).copied().unwrap_or(0.0)
    };
    Throughput { average, p50: pct(50), p90: pct(90), p95: pct(95), p99: pct(99), windows: rates.len(), partial }
}

/// Throughput windows on wall time since the observer was created, counting every scheduled
/// pod (`ksched run`'s built-in workloads and `ksched bench`).
pub struct WallThroughput {
    start: Instant,
    windows: ThroughputWindows,
}

impl WallThroughput {
    pub fn start() -> WallThroughput {
        WallThroughput { start: Instant::now(), windows: ThroughputWindows::new() }
    }

    /// Leaves `d` of wall time just spent out of the windows (work between attempts that is
    /// not the scheduler's, e.g. `ksched bench`'s probe bursts).
    pub fn exclude(&mut self, d: Duration) {
        self.start += d;
    }

    pub fn finish(self) -> (Throughput, Vec<(f64, f64)>) {
        let elapsed = self.start.elapsed();
        self.windows.finish(elapsed)
    }
}

impl<C: SimCluster> Observer<C> for WallThroughput {
    fn attempt(&mut self, outcome: &CycleOutcome, _ns: u64) {
        self.windows.attempt(self.start.elapsed(), matches!(outcome, CycleOutcome::Scheduled { .. }));
    }
}

/// Peak resident set size (VmHWM) of this process, on Linux.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn pods_per_second_divides_and_is_zero_without_time() {
        assert_eq!(pods_per_second(500, 0.25), 2000.0);
        assert_eq!(pods_per_second(500, 0.0), 0.0);
        assert_eq!(pods_per_second(0, 2.0), 0.0);
    }

    #[test]
    fn percentiles_are_nearest_rank_over_windows() {
        let t = percentiles(vec![30.0, 10.0, 20.0, 40.0], 25.0, false);
        assert_eq!((t.p50, t.p90, t.p99, t.windows), (20.0, 40.0, 40.0, 4));
        let one = percentiles(vec![7.0], 7.0, true);
        assert_eq!((one.p50, one.p99, one.windows, one.partial), (7.0, 7.0, 1, true));
    }

    #[test]
    fn windows_without_counted_pods_have_no_throughput() {
        let mut w = ThroughputWindows::new();
        w.attempt(ms(1500), false);
        let (t, timeline) = w.finish(ms(2000));
        assert_eq!((t.windows, t.average, t.partial), (0, 0.0, false));
        assert!(timeline.is_empty());
    }

    #[test]
    fn windows_shorter_than_one_second_are_one_sample_of_the_whole_rate() {
        let mut w = ThroughputWindows::new();
        for _ in 0..50 {
            w.attempt(ms(10), true);
        }
        let (t, timeline) = w.finish(ms(500));
        assert!(t.partial);
        assert_eq!((t.windows, timeline.len()), (1, 1));
        assert!((t.p50 - 100.0).abs() < 1e-9 && (t.average - 100.0).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn windows_spread_a_late_pod_over_the_seconds_passed() {
        let mut w = ThroughputWindows::new();
        for _ in 0..10 {
            w.attempt(ms(100), true);
        }
        w.attempt(ms(1500), false); // 1 window: 10 pods / 1.5 s
        w.attempt(ms(2500), false); // nothing new: waits
        for _ in 0..3 {
            w.attempt(ms(2600), true);
        }
        w.attempt(ms(4500), false); // 3 windows passed: 3 pods / 3 s each
        assert_eq!(w.samples().len(), 4);
        assert!((w.samples()[0] - 10.0 / 1.5).abs() < 1e-9);
        assert!(w.samples()[1..].iter().all(|s| (s - 1.0).abs() < 1e-9), "{:?}", w.samples());
        let (t, timeline) = w.finish(ms(4500));
        assert_eq!((t.windows, timeline.len()), (4, 2));
        assert!((t.average - 13.0 / 4.5).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn windows_keep_a_trailing_partial_window_at_its_own_rate() {
        // 100 pods/s for 2 s, then two pods in the next 0.1 s.
        let mut w = ThroughputWindows::new();
        for i in 0..=200u64 {
            w.attempt(ms(10 * i), true);
        }
        w.attempt(ms(2100), true);
        let (t, _) = w.finish(ms(2100));
        assert!(!t.partial);
        assert_eq!(t.windows, 3); // 100/s, 100/s, 20/s
        assert!((t.p50 - 100.0).abs() < 1e-9, "{t:?}");
        assert!((t.average - 202.0 / 2.1).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn windows_give_a_second_without_pods_the_next_pods_rate() {
        let mut w = ThroughputWindows::new();
        w.attempt(ms(1000), false); // a failed attempt ends window 1 with nothing counted
        for i in 1..=100u64 {
            w.attempt(ms(1000 + 10 * i), true);
        }
        let (t, _) = w.finish(ms(2000));
        // The 99 pods before the attempt at 2 s, over the 2 windows passed; the last pod
        // counts in the time already sampled.
        assert_eq!(t.windows, 2);
        assert_eq!((t.p50, t.p99), (49.5, 49.5));
        assert!((t.average - 50.0).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn peak_rss_on_linux_is_some_and_nonzero() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss().is_some_and(|b| b > 0));
        }
    }
}
