//! Time as the engine sees it: a `Clock` that tests replace with a `MockClock`.

use std::fmt;
use std::time::{Duration, Instant};

use crate::sync::{AtomicU64, Ordering};

/// Nanoseconds since the clock's epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub u64);

impl Timestamp {
    pub fn from_secs(s: u64) -> Timestamp {
        Timestamp(s * 1_000_000_000)
    }

    pub fn saturating_add(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(d.as_nanos().min(u64::MAX as u128) as u64))
    }

    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}s", self.0 as f64 / 1e9)
    }
}

/// The source of time for the cache's expiry and the queue's backoff.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// Monotonic wall time since the clock was created.
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    pub fn new() -> SystemClock {
        SystemClock { start: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.start.elapsed().as_nanos() as u64)
    }
}

/// A clock that moves only when told to.
#[derive(Default)]
pub struct MockClock {
    nanos: AtomicU64,
}

impl MockClock {
    pub fn new(start: Timestamp) -> MockClock {
        MockClock { nanos: AtomicU64::new(start.0) }
    }

    pub fn advance(&self, d: Duration) {
        self.nanos.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }

    pub fn set(&self, t: Timestamp) {
        self.nanos.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for MockClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.nanos.load(Ordering::SeqCst))
    }
}
