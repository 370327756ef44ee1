//! A test-only slowdown of the filter pass, to show that `ksched gate` catches a slower build:
//! with `KSCHED_TEST_FILTER_SLOWDOWN=P` (a percentage) in its environment, every scheduling
//! cycle busy-waits after its filter pass for P% of the previous cycle's scheduling time
//! (PreFilter to the pick), so a run's time per pod rises by about P%, wherever the filter's
//! share of the cycle lies. Read once, when the scheduler is made; without the variable the
//! cycle pays one branch on a `None`.

use std::time::{Duration, Instant};

/// The environment variable: a percentage (`15`).
pub const FILTER_SLOWDOWN_ENV: &str = "KSCHED_TEST_FILTER_SLOWDOWN";

/// The slowdown's state: the fraction to add and the last cycle's scheduling time.
#[derive(Clone, Copy, Debug)]
pub struct FilterSlowdown {
    fraction: f64,
    last_cycle: Duration,
}

impl FilterSlowdown {
    /// From the environment (`None` when unset, zero or not a number).
    pub fn from_env() -> Option<FilterSlowdown> {
        let percent: f64 = std::env::var(FILTER_SLOWDOWN_ENV).ok()?.trim().parse().ok()?;
        FilterSlowdown::percent(percent)
    }

    /// `percent` of each cycle (`None` unless positive and finite).
    pub fn percent(percent: f64) -> Option<FilterSlowdown> {
        (percent.is_finite() && percent > 0.0)
            .then_some(FilterSlowdown { fraction: percent / 100.0, last_cycle: Duration::ZERO })
    }

    /// How long the filter pass waits: the fraction of the last cycle.
    pub fn delay(&self) -> Duration {
        self.last_cycle.mul_f64(self.fraction)
    }

    /// Busy-waits for `delay()` (CPU time, as slower code would spend).
    pub fn wait(&self) {
        let until = Instant::now() + self.delay();
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    /// Records a cycle's scheduling time (the wait included: a slower build's cycles are
    /// longer, and the next wait is a fraction of what the cycle took without it).
    pub fn record(&mut self, cycle: Duration) {
        self.last_cycle = cycle.saturating_sub(self.delay());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_slowdown_waits_its_fraction_of_the_last_cycle_without_its_own_wait() {
        assert!(FilterSlowdown::percent(0.0).is_none());
        assert!(FilterSlowdown::percent(f64::NAN).is_none());
        let mut s = FilterSlowdown::percent(15.0).unwrap();
        assert_eq!(s.delay(), Duration::ZERO);
        s.record(Duration::from_micros(1000));
        assert_eq!(s.delay(), Duration::from_micros(150));
        // The next cycle took 1150 µs with its 150 µs wait: 1000 µs of work.
        s.record(Duration::from_micros(1150));
        assert_eq!(s.delay(), Duration::from_micros(150));
    }
}
