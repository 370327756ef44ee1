//! A persistent worker pool for per-cycle parallel work that never makes a cycle slower.
//!
//! `run(f)` calls `f(0)` on the caller and `f(w)` on each worker thread `w` that wakes up in
//! time, at most once each, and returns when every call that started has returned, so `f`
//! may borrow the caller's stack. Work inside `f` is meant to be claimed from a shared
//! counter (see `search`), so it does not matter how many workers join: a worker that wakes
//! after the caller has finished the work itself does nothing, and the caller never waits
//! for a worker that has not started. Idle workers park (no spinning), so a pool larger than
//! the machine, or a loaded machine, costs a wake-up call per cycle and nothing else.
//!
//! Protocol, all on one atomic word `state` = epoch (high bits) | OPEN | active workers (low
//! bits):
//!
//! * **Publish.** The caller writes the job into `slot`, then adds one epoch and sets OPEN in
//!   one `fetch_add` (Release), then unparks every worker.
//! * **Join.** A worker that sees a new epoch with OPEN set increments `active` with a CAS on
//!   the same word (so it joins exactly that epoch, only while it is open), then reads the
//!   job from `slot`. A worker that sees no new epoch, or a closed one, parks; the park token
//!   makes an unpark between its check and its park wake it at once.
//! * **Close.** When `f(0)` returns the caller clears OPEN (no worker can join any more) and
//!   waits until `active` is 0, parking between checks.
//! * **Leave.** A worker decrements `active`; the one that takes it to 0 after the close
//!   unparks the caller.
//!
//! Once the caller has seen `active == 0` after the close, no worker holds the job, so the
//! borrow ends there. `loom-tests/tests/pool.rs` checks this protocol.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::sync::{lock, thread, Arc, AtomicBool, AtomicU64, Mutex, Ordering};

type Job = dyn Fn(usize) + Sync;

/// A job pointer with its lifetime erased.
#[derive(Clone, Copy)]
struct JobPtr(*const Job);

// SAFETY: the pointee is `Sync` (so calling it from several threads is allowed) and `run`
// keeps it alive until every worker that joined has finished with it (see the protocol).
unsafe impl Send for JobPtr {}

const ACTIVE_MASK: u64 = 0xffff;
const OPEN: u64 = 1 << 16;
const EPOCH_ONE: u64 = 1 << 17;

/// The most workers a pool holds (the active count has 16 bits).
pub const MAX_WORKERS: usize = 1024;

#[derive(Default)]
struct Slot {
    job: Option<JobPtr>,
    /// The thread waiting in `run`, unparked by the last worker to leave.
    caller: Option<thread::Thread>,
}

struct Shared {
    state: AtomicU64,
    slot: Mutex<Slot>,
    shutdown: AtomicBool,
    panicked: AtomicBool,
}

pub struct WorkerPool {
    shared: Arc<Shared>,
    threads: Vec<thread::JoinHandle<()>>,
}

/// How many times the caller re-reads `state` before parking while workers finish (they are
/// running, each finishing at most one claimed piece of work).
const CALLER_SPINS: u32 = 64;

impl WorkerPool {
    /// A pool of `size` workers in all, the caller included (`size - 1` threads), at most
    /// `MAX_WORKERS`. Callers cap `size` by the machine (`effective_parallelism`).
    pub fn new(size: usize) -> WorkerPool {
        let shared = Arc::new(Shared {
            state: AtomicU64::new(0),
            slot: Mutex::new(Slot::default()),
            shutdown: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
        });
        let threads = (1..size.clamp(1, MAX_WORKERS))
            .map(|id| {
                let s = Arc::clone(&shared);
                thread::spawn(move || worker_loop(&s, id))
            })
            .collect();
        WorkerPool { shared, threads }
    }

    /// Workers in all, the caller included.
    pub fn size(&self) -> usize {
        self.threads.len() + 1
    }

    /// Runs `f(0)` on the caller and `f(w)` on every worker that joins in time (each at most
    /// once); returns once every call that started has returned. A panic in any call is
    /// re-raised here after the others finished.
    pub fn run<'a>(&self, f: &(dyn Fn(usize) + Sync + 'a)) {
        if self.threads.is_empty() {
            f(0);
            return;
        }
        let s = &*self.shared;
        // SAFETY: lifetime erasure only. The pointer is published for one epoch, and this
        // function does not return before that epoch is closed and `active` is back to 0,
        // i.e. before every worker that read the pointer has returned from its call.
        let ptr = JobPtr(unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync + 'a), &'static Job>(f) } as *const Job);
        {
            let mut slot = lock(&s.slot);
            slot.job = Some(ptr);
            slot.caller = Some(thread::current());
        }
        // active is 0 and OPEN clear here (the previous run closed and drained its epoch).
        s.state.fetch_add(EPOCH_ONE | OPEN, Ordering::Release);
        for t in &self.threads {
            t.thread().unpark();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| f(0)));
        s.state.fetch_and(!OPEN, Ordering::AcqRel);
        let mut spins = 0u32;
        // Workers still inside finish at most one claimed piece of work each: wait for them
        // spinning a moment (parking and being woken costs more than such a piece).
        let mut watching = watch_until();
        while s.state.load(Ordering::Acquire) & ACTIVE_MASK != 0 {
            if spins < CALLER_SPINS || still_watching(&mut watching, spins) {
                spins += 1;
                std::hint::spin_loop();
            } else {
                thread::park();
            }
        }
        lock(&s.slot).job = None;
        if let Err(p) = mine {
            std::panic::resume_unwind(p);
        }
        if s.panicked.swap(false, Ordering::AcqRel) {
            panic!("a worker of the pool panicked");
        }
    }
}

/// Joins the epoch after `seen` if it is open: the epoch joined, or `None` (with `seen`
/// moved on to a closed epoch, so it is not tried again).
fn try_join(s: &Shared, seen: &mut u64) -> Option<()> {
    let mut cur = s.state.load(Ordering::Acquire);
    loop {
        let epoch = cur / EPOCH_ONE;
        if epoch == *seen {
            return None;
        }
        if cur & OPEN == 0 {
            *seen = epoch;
            return None;
        }
        match s.state.compare_exchange(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                *seen = epoch;
                return Some(());
            }
            Err(now) => cur = now,
        }
    }
}

/// How long a worker that finished a job keeps watching for the next one before it parks
/// (and how long the caller spins waiting for running workers before it parks).
/// Cycles that use the pool come in quick succession (a filter pass, then scoring), and a
/// parked thread takes tens of microseconds to wake on a busy VM; watching briefly lets it
/// join at once. The wait spins (it does not yield the core) and is bounded, so an idle
/// pool costs nothing once it has parked.
#[cfg(not(ksched_loom))]
const WORKER_WATCH: std::time::Duration = std::time::Duration::from_micros(50);

/// Whether a job after epoch `seen` appeared within `WORKER_WATCH` (or shutdown began).
#[cfg(not(ksched_loom))]
fn watch(s: &Shared, seen: u64) -> bool {
    let until = std::time::Instant::now() + WORKER_WATCH;
    loop {
        for _ in 0..32 {
            if s.state.load(Ordering::Acquire) / EPOCH_ONE != seen || s.shutdown.load(Ordering::Acquire) {
                return true;
            }
            std::hint::spin_loop();
        }
        if std::time::Instant::now() >= until {
            return false;
        }
    }
}

/// Under loom a worker parks at once (the model explores every interleaving anyway).
#[cfg(ksched_loom)]
fn watch(_: &Shared, _: u64) -> bool {
    false
}

/// When the caller's wait for running workers stops spinning (`WORKER_WATCH` from now).
#[cfg(not(ksched_loom))]
fn watch_until() -> Option<std::time::Instant> {
    Some(std::time::Instant::now() + WORKER_WATCH)
}

/// Whether to go on spinning; reads the clock every 32 spins.
#[cfg(not(ksched_loom))]
fn still_watching(until: &mut Option<std::time::Instant>, spins: u32) -> bool {
    if let Some(t) = *until {
        if spins % 32 == 0 && std::time::Instant::now() >= t {
            *until = None;
        }
    }
    until.is_some()
}

/// Under loom the caller parks after `CALLER_SPINS`.
#[cfg(ksched_loom)]
fn watch_until() -> Option<()> {
    None
}

#[cfg(ksched_loom)]
fn still_watching(_: &mut Option<()>, _: u32) -> bool {
    false
}

fn worker_loop(s: &Shared, id: usize) {
    let mut seen = 0u64;
    let mut watched = false;
    loop {
        if s.shutdown.load(Ordering::Acquire) {
            return;
        }
        if try_join(s, &mut seen).is_none() {
            // After a job, watch for the next one a moment before parking.
            if !watched && watch(s, seen) {
                watched = true;
                continue;
            }
            watched = false;
            thread::park();
            continue;
        }
        watched = false;
        let (job, caller) = {
            let slot = lock(&s.slot);
            (slot.job, slot.caller.clone())
        };
        if let Some(JobPtr(f)) = job {
            // SAFETY: we joined an open epoch, so `run` has published this pointer and will
            // not return (ending the borrow) before we decrement `active` below.
            let f: &Job = unsafe { &*f };
            if catch_unwind(AssertUnwindSafe(|| f(id))).is_err() {
                s.panicked.store(true, Ordering::Release);
            }
        }
        let before = s.state.fetch_sub(1, Ordering::AcqRel);
        if before & ACTIVE_MASK == 1 && before & OPEN == 0 {
            if let Some(t) = caller {
                t.unpark();
            }
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        for t in &self.threads {
            t.thread().unpark();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The machine's available parallelism (1 when unknown).
pub fn available_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The workers a configured `parallelism` gets on this machine: at least 1, at most the
/// available parallelism.
pub fn effective_parallelism(configured: usize) -> usize {
    configured.clamp(1, available_parallelism().min(MAX_WORKERS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::AtomicUsize;

    #[test]
    fn pool_run_calls_caller_once_and_each_worker_at_most_once_and_borrows_stack() {
        let pool = WorkerPool::new(3);
        for round in 0..200 {
            let hits = [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];
            pool.run(&|w| {
                hits[w].fetch_add(round + 1, Ordering::SeqCst);
            });
            assert_eq!(hits[0].load(Ordering::SeqCst), round + 1);
            for h in &hits[1..] {
                assert!([0, round + 1].contains(&h.load(Ordering::SeqCst)));
            }
        }
    }

    #[test]
    fn pool_run_with_claimed_work_does_every_item_once() {
        let pool = WorkerPool::new(4);
        for _ in 0..100 {
            let next = AtomicUsize::new(0);
            let done: Vec<AtomicUsize> = (0..500).map(|_| AtomicUsize::new(0)).collect();
            pool.run(&|_| loop {
                let i = next.fetch_add(1, Ordering::AcqRel);
                let Some(d) = done.get(i) else { return };
                d.fetch_add(1, Ordering::AcqRel);
            });
            assert!(done.iter().all(|d| d.load(Ordering::Acquire) == 1));
        }
    }

    #[test]
    fn pool_run_reraises_worker_panics_and_keeps_working() {
        let pool = WorkerPool::new(2);
        // The caller waits for the worker to join (it must: the job stays open until the
        // caller's call returns), so the worker's panic is certain.
        let joined = AtomicBool::new(false);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(&|w| {
                if w == 1 {
                    joined.store(true, Ordering::SeqCst);
                    panic!("worker {w} fails");
                }
                while !joined.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
            })
        }));
        assert!(r.is_err());
        let n = AtomicUsize::new(0);
        pool.run(&|_| {
            n.fetch_add(1, Ordering::SeqCst);
        });
        assert!((1..=2).contains(&n.load(Ordering::SeqCst)));
    }

    #[test]
    fn effective_parallelism_is_capped_by_the_machine() {
        let cores = available_parallelism();
        assert_eq!(effective_parallelism(0), 1);
        assert_eq!(effective_parallelism(1), 1);
        assert_eq!(effective_parallelism(cores + 15), cores);
        assert_eq!(effective_parallelism(cores), cores);
    }
}
