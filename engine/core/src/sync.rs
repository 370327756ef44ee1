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
//! * `ShardedMap` is a map sharded across locks (the nominator's): `DashMap` normally, a few
//!   loom `RwLock<HashMap>` shards under loom, because loom cannot see inside dashmap.
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

    /// A concurrent map whose keys are spread over independently locked shards.
    pub struct ShardedMap<K, V> {
        map: dashmap::DashMap<K, V, crate::util::hash::FxBuildHasher>,
    }

    impl<K: std::hash::Hash + Eq + Clone, V: Default> ShardedMap<K, V> {
        pub fn new() -> Self {
            ShardedMap { map: dashmap::DashMap::with_hasher(Default::default()) }
        }

        /// Runs `f` on the key's slot (`None` when absent) with the key's shard write-locked;
        /// leaving `None` in the slot removes the key. Other shards may be locked inside `f`,
        /// never this map's own.
        pub fn update<R>(&self, key: K, f: impl FnOnce(&mut Option<V>) -> R) -> R {
            match self.map.entry(key) {
                dashmap::Entry::Occupied(mut o) => {
                    let mut slot = Some(std::mem::take(o.get_mut()));
                    let r = f(&mut slot);
                    match slot {
                        Some(v) => *o.get_mut() = v,
                        None => {
                            o.remove();
                        }
                    }
                    r
                }
                dashmap::Entry::Vacant(v) => {
                    let mut slot = None;
                    let r = f(&mut slot);
                    if let Some(value) = slot {
                        v.insert(value);
                    }
                    r
                }
            }
        }

        /// Runs `f` on the key's value with its shard read-locked.
        pub fn read<R>(&self, key: &K, f: impl FnOnce(Option<&V>) -> R) -> R {
            let entry = self.map.get(key);
            f(entry.as_deref())
        }

        /// Visits every entry, one shard at a time (not an atomic view of the whole map).
        pub fn for_each(&self, mut f: impl FnMut(&K, &V)) {
            for e in self.map.iter() {
                f(e.key(), e.value());
            }
        }
    }

    impl<K: std::hash::Hash + Eq + Clone, V: Default> Default for ShardedMap<K, V> {
        fn default() -> Self {
            Self::new()
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

    const SHARDS: usize = 2;

    /// Loom stand-in for the dashmap-backed map: the same contract over two loom-visible shards.
    pub struct ShardedMap<K, V> {
        shards: Vec<RwLock<std::collections::HashMap<K, V>>>,
    }

    impl<K: std::hash::Hash + Eq + Clone, V: Default> ShardedMap<K, V> {
        pub fn new() -> Self {
            ShardedMap { shards: (0..SHARDS).map(|_| RwLock::new(std::collections::HashMap::new())).collect() }
        }

        fn shard(&self, key: &K) -> &RwLock<std::collections::HashMap<K, V>> {
            use std::hash::{BuildHasher, BuildHasherDefault};
            let h = BuildHasherDefault::<crate::util::hash::FxHasher>::default().hash_one(key);
            &self.shards[h as usize % SHARDS]
        }

        pub fn update<R>(&self, key: K, f: impl FnOnce(&mut Option<V>) -> R) -> R {
            let mut shard = self.shard(&key).write().unwrap_or_else(|e| e.into_inner());
            let mut slot = shard.remove(&key);
            let r = f(&mut slot);
            if let Some(v) = slot {
                shard.insert(key, v);
            }
            r
        }

        pub fn read<R>(&self, key: &K, f: impl FnOnce(Option<&V>) -> R) -> R {
            let shard = self.shard(key).read().unwrap_or_else(|e| e.into_inner());
            f(shard.get(key))
        }

        pub fn for_each(&self, mut f: impl FnMut(&K, &V)) {
            for shard in &self.shards {
                for (k, v) in shard.read().unwrap_or_else(|e| e.into_inner()).iter() {
                    f(k, v);
                }
            }
        }
    }

    impl<K: std::hash::Hash + Eq + Clone, V: Default> Default for ShardedMap<K, V> {
        fn default() -> Self {
            Self::new()
        }
    }
}

pub use imp::*;

/// Process-wide tables that loom does not model (the interner): always std.
pub type GlobalRwLock<T> = std::sync::RwLock<T>;

/// A number no earlier call in this process returned (never 0): process-wide ids, which
/// loom does not model either.
pub fn fresh_id() -> u64 {
    fresh_ids(1)
}

/// The first of `n` consecutive numbers that no earlier call of this or `fresh_id` returned.
pub fn fresh_ids(n: u64) -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(n, std::sync::atomic::Ordering::Relaxed)
}

/// Locks `m`, ignoring poisoning (see the module docs).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks `m` if no one holds it, ignoring poisoning; `None` when it is taken.
pub fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// Read-locks `l`, ignoring poisoning.
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// Write-locks `l`, ignoring poisoning.
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}
