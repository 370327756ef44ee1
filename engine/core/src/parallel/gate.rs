//! Whether a cycle big enough for the pool runs on it: measured, cycle by cycle, against
//! the same cycles on one worker.
//!
//! The pool pays only while the machine gives the workers cores of their own. On a shared
//! VM it does not always: two threads of one process get between about 1.2 and 1.8 times
//! one thread's work done from one minute to the next (`perf/two-core-ceiling.sh`), and a
//! worker whose core is taken away in the middle of a chunk holds the whole cycle up until
//! it runs again. Measured at 50,000 nodes on 2 cores, 2 workers then gave 0.66–0.81 of
//! 1 worker's pods/s in some rounds (perf/RESULTS.md, issue 18).
//!
//! So the scheduler times each cycle the pool could serve (ns per node visited or scored)
//! and keeps two moving averages: cycles on the pool and cycles on one worker. Cycles run
//! the way whose average is lower, and the last `PROBE_CYCLES` of every `PROBE_EVERY` run
//! the other way, so both averages stay current. The first cycle after a change of way is
//! not a sample: on the pool it pays for waking the parked workers (tens of µs on a VM),
//! which a run of pooled cycles does not (the workers watch between them). A cycle gives
//! the same decision either way (the pool never changes a result), so only speed depends
//! on this.
//!
//! The scheduler keeps one gate for the filter pass and one for scoring. Since the column
//! chunks keep floors (`snapshot::columns::Floors`), the filter pass of a cluster with room
//! to spare takes whole chunks as passed, about 1.4 µs for 2,500 nodes at 50,000 nodes,
//! where the pool adds a join and gives nothing back; scoring the same nodes takes about
//! 12 µs and gains on the pool (perf/RESULTS.md, issue 18).

/// Eligible cycles per round: the last `PROBE_CYCLES` of each run the way not preferred.
pub const PROBE_EVERY: u64 = 256;
pub const PROBE_CYCLES: u64 = 4;

/// A sample above this many times the current average counts as this many times it: one
/// cycle held up by the host moves the average, but does not swamp it.
const CLAMP: f64 = 4.0;

/// A moving average of ns per item; weight 1/8 to each new sample.
#[derive(Clone, Copy, Debug, Default)]
struct Average(Option<f64>);

impl Average {
    fn add(&mut self, sample: f64) {
        self.0 = Some(match self.0 {
            None => sample,
            Some(avg) => avg + (sample.min(avg * CLAMP) - avg) / 8.0,
        });
    }
}

/// The pool-or-not choice for the cycles that could use the pool (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct PoolGate {
    eligible: u64,
    pooled: Average,
    solo: Average,
    /// The way the last cycle ran.
    last: Option<bool>,
    /// Whether the current cycle runs the way the one before it did (it is a sample).
    settled: bool,
    /// Cycles run on the pool and on one worker.
    pub counts: (u64, u64),
}

impl PoolGate {
    /// Whether the next eligible cycle runs on the pool.
    pub fn use_pool(&mut self) -> bool {
        self.eligible += 1;
        let probing = self.eligible % PROBE_EVERY >= PROBE_EVERY - PROBE_CYCLES;
        let pooled = self.prefers_pool() != probing;
        self.settled = self.last == Some(pooled);
        self.last = Some(pooled);
        pooled
    }

    /// The pool until both ways have been measured, then whichever is faster per item.
    pub fn prefers_pool(&self) -> bool {
        match (self.pooled.0, self.solo.0) {
            (Some(p), Some(s)) => p <= s,
            _ => true,
        }
    }

    /// The cycle `use_pool` was asked about ran on the pool (`pooled`) or not, and took `ns`
    /// for `items` nodes.
    pub fn record(&mut self, pooled: bool, ns: u64, items: usize) {
        if pooled {
            self.counts.0 += 1;
        } else {
            self.counts.1 += 1;
        }
        if items == 0 || !self.settled {
            return;
        }
        let per_item = ns as f64 / items as f64;
        if pooled {
            self.pooled.add(per_item);
        } else {
            self.solo.add(per_item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `cycles` eligible cycles where a pooled cycle takes `pooled` ns per item (`wake`
    /// when the cycle before it did not run on the pool) and a solo one `solo`; the gate.
    fn run(gate: &mut PoolGate, cycles: u64, pooled: u64, wake: u64, solo: u64) {
        for _ in 0..cycles {
            let was_pooled = gate.last == Some(true);
            let on_pool = gate.use_pool();
            let ns = match (on_pool, was_pooled) {
                (true, true) => pooled,
                (true, false) => wake,
                (false, _) => solo,
            };
            gate.record(on_pool, ns * 1000, 1000);
        }
    }

    #[test]
    fn runs_mostly_the_faster_way_and_probes_the_other() {
        let probe = PROBE_CYCLES as f64 / PROBE_EVERY as f64;
        // (ns per item on the pool, its first cycle after one worker, on one worker; share
        // of cycles on the pool)
        for (pooled, wake, solo, share) in [
            (10, 10, 20, 1.0 - probe),
            (20, 20, 10, probe),
            (15, 15, 16, 1.0 - probe),
            (16, 16, 15, probe),
            // Waking the workers costs the first pooled cycle of a run much more; the runs
            // of pooled cycles are still faster.
            (10, 200, 20, 1.0 - probe),
        ] {
            let mut gate = PoolGate::default();
            let cycles = 100 * PROBE_EVERY;
            run(&mut gate, cycles, pooled, wake, solo);
            assert_eq!(gate.counts.0 + gate.counts.1, cycles);
            let got = gate.counts.0 as f64 / cycles as f64;
            assert!(
                (got - share).abs() < 0.015,
                "pool {pooled} ns ({wake} woken), solo {solo} ns: {got} of cycles pooled, want {share}"
            );
        }
    }

    #[test]
    fn follows_a_change_of_which_way_is_faster() {
        let mut gate = PoolGate::default();
        let n = 20 * PROBE_EVERY;
        run(&mut gate, n, 10, 10, 20);
        assert!(gate.prefers_pool());
        run(&mut gate, n, 40, 40, 20);
        assert!(!gate.prefers_pool(), "the pool got slower (the host took a core)");
        // Probing the pool again wakes its workers each time; the probes' later cycles tell.
        run(&mut gate, n, 10, 200, 20);
        assert!(gate.prefers_pool(), "and faster again");
    }

    #[test]
    fn a_held_up_cycle_counts_at_most_clamp_times_the_average() {
        let mut avg = Average::default();
        avg.add(10.0);
        avg.add(1e9);
        assert_eq!(avg.0, Some(10.0 + (40.0 - 10.0) / 8.0));
    }
}
