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
//! the way whose average is lower, and the last `PROBE_CYCLES` of each round run the other
//! way, so both averages stay current: rounds of `PROBE_EVERY` cycles, twice as long after
//! each round that leaves the way as it was (up to `PROBE_EVERY_MOST`), the shortest again
//! after one that changes it. The first cycle after a change of way is not a sample: on
//! the pool it pays for waking the parked workers (tens of µs on a VM), which a run of
//! pooled cycles does not (the workers watch between them). A cycle gives the same decision
//! either way (the pool never changes a result), so only speed depends on this.
//!
//! The scheduler keeps one gate for the filter pass and one for scoring. Since the column
//! chunks keep floors (`snapshot::columns::Floors`), the filter pass of a cluster with room
//! to spare takes whole chunks as passed, about 1.4 µs for 2,500 nodes at 50,000 nodes,
//! where the pool adds a join and gives nothing back; scoring the same nodes takes about
//! 12 µs and gains on the pool (perf/RESULTS.md, issue 18).

/// Eligible cycles per round: the last `PROBE_CYCLES` of each run the way not preferred.
/// A round whose probes leave the preferred way preferred makes the next round twice as
/// long, up to `PROBE_EVERY_MOST`; one whose probes change it makes it `PROBE_EVERY` again.
/// A probe can cost far more than its cycle: on a host that took the second core away, a
/// pooled cycle waits for the helper's chunk until the helper runs again (at 50,000 nodes
/// with a busy loop on the other core, 2 workers probing every 256 cycles gave 0.90–0.98
/// of 1 worker's pods/s, and 0.99–1.07 with rounds that back off: perf/RESULTS.md, issue
/// 18). The way preferred follows its own samples at once (they go on), so only a return
/// to the other way waits for a probe; that round's samples then replace the stale average.
pub const PROBE_EVERY: u64 = 256;
pub const PROBE_EVERY_MOST: u64 = 64 * PROBE_EVERY;
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
#[derive(Clone, Debug)]
pub struct PoolGate {
    eligible: u64,
    pooled: Average,
    solo: Average,
    /// The way the last cycle ran.
    last: Option<bool>,
    /// Whether the current cycle runs the way the one before it did (it is a sample).
    settled: bool,
    /// The current round's length, the eligible count it ends at, and the way preferred
    /// when its probes began.
    interval: u64,
    round_end: u64,
    round_pref: Option<bool>,
    /// Whether the current cycle is a probe, and how many probes of this round were
    /// samples: their mean replaces the other way's average, which is as old as the last
    /// round (up to `PROBE_EVERY_MOST` cycles), instead of each moving it by an eighth.
    probing: bool,
    probe_samples: u32,
    /// Cycles run on the pool and on one worker.
    pub counts: (u64, u64),
}

impl Default for PoolGate {
    fn default() -> Self {
        PoolGate {
            eligible: 0,
            pooled: Average::default(),
            solo: Average::default(),
            last: None,
            settled: false,
            interval: PROBE_EVERY,
            round_end: PROBE_EVERY,
            round_pref: None,
            probing: false,
            probe_samples: 0,
            counts: (0, 0),
        }
    }
}

impl PoolGate {
    /// Whether the next eligible cycle runs on the pool.
    pub fn use_pool(&mut self) -> bool {
        if self.eligible == self.round_end {
            // A round ended with the last cycle: its probes kept the way, or changed it.
            let kept = self.round_pref == Some(self.prefers_pool());
            self.interval = if kept { (2 * self.interval).min(PROBE_EVERY_MOST) } else { PROBE_EVERY };
            self.round_end += self.interval;
        }
        self.eligible += 1;
        let probing = self.eligible + PROBE_CYCLES > self.round_end;
        if self.eligible + PROBE_CYCLES == self.round_end + 1 {
            self.round_pref = Some(self.prefers_pool());
            self.probe_samples = 0;
        }
        self.probing = probing;
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
        let avg = if pooled { &mut self.pooled } else { &mut self.solo };
        if self.probing && self.round_pref != Some(pooled) {
            self.probe_samples += 1;
            let n = f64::from(self.probe_samples);
            avg.0 = Some(match avg.0 {
                Some(a) if n > 1.0 => a + (per_item - a) / n,
                _ => per_item,
            });
        } else {
            avg.add(per_item);
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

    /// The faster way runs, and the other is probed less and less while it stays slower:
    /// rounds of 256, 512, ... 16,384 cycles, then 16,384 on.
    #[test]
    fn runs_the_faster_way_and_probes_the_other_less_and_less() {
        // Rounds ending within `cycles`: at 256, 768, 1792, ..., 32,512, then every 16,384.
        let rounds = |cycles: u64| {
            let (mut end, mut interval, mut n) = (0, PROBE_EVERY, 0);
            while end + interval <= cycles {
                end += interval;
                n += 1;
                interval = (2 * interval).min(PROBE_EVERY_MOST);
            }
            n
        };
        let cycles = 100_000;
        assert_eq!(rounds(cycles), 11);
        // (ns per item on the pool, its first cycle after one worker, on one worker; whether
        // the pool is faster)
        for (pooled, wake, solo, pool_faster) in [
            (10, 10, 20, true),
            (20, 20, 10, false),
            (15, 15, 16, true),
            (16, 16, 15, false),
            // Waking the workers costs the first pooled cycle of a run much more; the runs
            // of pooled cycles are still faster.
            (10, 200, 20, true),
        ] {
            let mut gate = PoolGate::default();
            run(&mut gate, cycles, pooled, wake, solo);
            assert_eq!(gate.counts.0 + gate.counts.1, cycles);
            // Until the first probe has measured one worker, the pool runs; the first round
            // changes the way then, and the rounds back off from the next.
            let other = if pool_faster { gate.counts.1 } else { gate.counts.0 - (PROBE_EVERY - PROBE_CYCLES) };
            assert!(
                other <= (rounds(cycles) + 1) * PROBE_CYCLES,
                "pool {pooled} ns ({wake} woken), solo {solo} ns: {:?} pooled / one worker",
                gate.counts
            );
        }
    }

    /// A probe round that changes the way preferred brings the rounds back to 256 cycles.
    #[test]
    fn a_changed_way_brings_the_rounds_back_to_the_shortest() {
        let mut gate = PoolGate::default();
        run(&mut gate, 50_000, 10, 10, 20);
        assert_eq!(gate.interval, PROBE_EVERY_MOST, "backed off");
        // One worker gets faster: the pool keeps running until a probe round finds it (one
        // round: its samples' mean replaces the old average), and the rounds shorten.
        let mut cycles = 0;
        while gate.prefers_pool() {
            run(&mut gate, 1, 10, 10, 5);
            cycles += 1;
            assert!(cycles <= PROBE_EVERY_MOST, "not found within a round");
        }
        run(&mut gate, PROBE_CYCLES, 10, 10, 5);
        assert_eq!(gate.interval, PROBE_EVERY);
        // And they back off again while one worker stays faster.
        run(&mut gate, 50_000, 10, 10, 5);
        assert!(!gate.prefers_pool());
        assert_eq!(gate.interval, PROBE_EVERY_MOST);
    }

    #[test]
    fn follows_a_change_of_which_way_is_faster() {
        let mut gate = PoolGate::default();
        let n = 3 * PROBE_EVERY_MOST;
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
