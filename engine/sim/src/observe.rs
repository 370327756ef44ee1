//! Observers of a run ([`crate::simulation::Observer`]) that every front end shares: outcome
//! counts and the attempt-latency histogram; and the process's peak RSS.

use hdrhistogram::Histogram;
use ksched_engine::scheduler::CycleOutcome;

use crate::simulation::{Observer, SimCluster};

/// What a run's attempts ended in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

    #[test]
    fn peak_rss_on_linux_is_some_and_nonzero() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss().is_some_and(|b| b > 0));
        }
    }
}
