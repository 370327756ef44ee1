//! The one module that names concurrency primitives.
//!
//! Everything else in the engine imports `Arc`, `Mutex`, atomics, threads and the snapshot
//! cell from here. Under `--cfg ksched_loom` the same names resolve to loom's model-checked
//! versions, so the loom models in `loom-tests/` exercise the real engine code.
//!
//! * `SnapshotCell` publishes immutable snapshots: `ArcSwap` normally (lock-free loads), a loom
//!   `RwLock<Arc<T>>` under loom, because loom cannot see inside arc-swap.
//! * `lock`, `read`, `write` ignore poisoning: a panicked holder cannot leave our structures
//!   half-updated because every mutation validates first and then applies infallibly.
//! * `GlobalRwLock` is for process-wide tables (the string interner) that loom does not model;
//!   it is always std's.

#[cfg(not(ksched_loom))]
mod imp {
    pub use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    pub use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
    pub use std::thread;

    /// Publishes immutable values; loads never block writers or each other.
    pub struct SnapshotCell<T> {
        cell: arc_swap::ArcSwap<T>,
    }

    impl<T> SnapshotCell<T> {
        pub fn new(value: Arc<T>) -> Self {
            SnapshotCell { cell: arc_swap::ArcSwap::new(value) }
        }

        /// The value most recently stored.
        pub fn load(&self) -> Arc<T> {
            self.cell.load_full()
        }

        /// Replaces the published value; readers holding the old one keep it.
        pub fn store(&self, value: Arc<T>) {
            self.cell.store(value);
        }
    }
}

#[cfg(ksched_loom)]
mod imp {
    pub use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
    pub use loom::thread;

    /// Loom stand-in for the arc-swap cell: the same contract, visible to the model checker.
    pub struct SnapshotCell<T> {
        cell: RwLock<Arc<T>>,
    }

    impl<T> SnapshotCell<T> {
        pub fn new(value: Arc<T>) -> Self {
            SnapshotCell { cell: RwLock::new(value) }
        }

        pub fn load(&self) -> Arc<T> {
            Arc::clone(&self.cell.read().unwrap_or_else(|e| e.into_inner()))
        }

        pub fn store(&self, value: Arc<T>) {
            *self.cell.write().unwrap_or_else(|e| e.into_inner()) = value;
        }
    }
}

pub use imp::*;

/// Process-wide tables that loom does not model (the interner): always std.
pub type GlobalRwLock<T> = std::sync::RwLock<T>;

/// Locks `m`, ignoring poisoning (see the module docs).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Read-locks `l`, ignoring poisoning.
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// Write-locks `l`, ignoring poisoning.
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}
