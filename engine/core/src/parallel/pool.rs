//! A persistent worker pool for per-cycle parallel work.
//!
//! `run(f)` calls `f(worker)` once on every worker thread and once on the caller (worker 0),
//! and returns when all calls have returned, so `f` may borrow the caller's stack. Cycles are
//! a few microseconds long, so workers spin briefly on the epoch counter before sleeping on a
//! condvar; the caller spins (then yields) while the others finish.
//!
//! Wake-up protocol: the caller stores the job, then bumps `epoch` (SeqCst) and, if any worker
//! declared itself asleep, notifies under `sleep_lock`. A worker declares itself asleep and
//! re-checks `epoch` while holding `sleep_lock` before waiting, so a bump cannot slip between
//! its check and its wait.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::sync::{lock, thread, Arc, AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};

type Job = dyn Fn(usize) + Sync;

/// A job pointer with its lifetime erased.
#[derive(Clone, Copy)]
struct JobPtr(*const Job);

// SAFETY: the pointee is `Sync` (so calling it from several threads is allowed) and `run`
// keeps it alive until every worker has finished with it (see `WorkerPool::run`).
unsafe impl Send for JobPtr {}

struct Shared {
    epoch: AtomicU64,
    job: Mutex<Option<JobPtr>>,
    /// Workers that have not finished the current epoch's job.
    pending: AtomicUsize,
    sleepers: AtomicUsize,
    sleep_lock: Mutex<()>,
    wake: Condvar,
    shutdown: AtomicBool,
    panicked: AtomicBool,
}

pub struct WorkerPool {
    shared: Arc<Shared>,
    threads: Vec<thread::JoinHandle<()>>,
}

const SPIN_ROUNDS: u32 = 20_000;

impl WorkerPool {
    /// A pool of `size` workers in all, the caller included (`size - 1` threads).
    pub fn new(size: usize) -> WorkerPool {
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: Mutex::new(None),
            pending: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
            shutdown: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
        });
        let threads = (1..size.max(1))
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

    /// Runs `f(worker)` on every worker and the caller; returns once all calls returned.
    /// A panic in a worker's call is re-raised here.
    pub fn run<'a>(&self, f: &(dyn Fn(usize) + Sync + 'a)) {
        if self.threads.is_empty() {
            f(0);
            return;
        }
        let s = &*self.shared;
        // SAFETY: lifetime erasure only. The pointer is published for this epoch and this
        // function does not return before `pending` reaches 0, i.e. before every worker has
        // returned from its call; workers read the slot only after seeing a new epoch.
        let ptr = JobPtr(unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync + 'a), &'static Job>(f) } as *const Job);
        *lock(&s.job) = Some(ptr);
        s.pending.store(self.threads.len(), Ordering::SeqCst);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = lock(&s.sleep_lock);
            s.wake.notify_all();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| f(0)));
        let mut spins = 0u32;
        while s.pending.load(Ordering::Acquire) > 0 {
            spins += 1;
            if spins < SPIN_ROUNDS {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
        *lock(&s.job) = None;
        if let Err(p) = mine {
            std::panic::resume_unwind(p);
        }
        if s.panicked.swap(false, Ordering::SeqCst) {
            panic!("a filter worker panicked");
        }
    }
}

fn worker_loop(s: &Shared, id: usize) {
    let mut seen = 0u64;
    loop {
        let mut spins = 0u32;
        loop {
            if s.shutdown.load(Ordering::SeqCst) {
                return;
            }
            let e = s.epoch.load(Ordering::SeqCst);
            if e != seen {
                seen = e;
                break;
            }
            if spins < SPIN_ROUNDS {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            let g = lock(&s.sleep_lock);
            s.sleepers.fetch_add(1, Ordering::SeqCst);
            if s.epoch.load(Ordering::SeqCst) == seen && !s.shutdown.load(Ordering::SeqCst) {
                drop(s.wake.wait(g).unwrap_or_else(|e| e.into_inner()));
            } else {
                drop(g);
            }
            s.sleepers.fetch_sub(1, Ordering::SeqCst);
            spins = 0;
        }
        let job = *lock(&s.job);
        if let Some(JobPtr(f)) = job {
            // SAFETY: `run` published this pointer for the epoch just seen and waits for
            // `pending` to reach 0 before the pointee can go away.
            let f: &Job = unsafe { &*f };
            if catch_unwind(AssertUnwindSafe(|| f(id))).is_err() {
                s.panicked.store(true, Ordering::SeqCst);
            }
        }
        s.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _g = lock(&self.shared.sleep_lock);
            self.shared.wake.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_runs_job_on_every_worker_and_borrows_stack() {
        let pool = WorkerPool::new(3);
        for round in 0..200 {
            let hits = [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];
            pool.run(&|w| {
                hits[w].fetch_add(round + 1, Ordering::SeqCst);
            });
            for h in &hits {
                assert_eq!(h.load(Ordering::SeqCst), round + 1);
            }
        }
    }

    #[test]
    fn pool_reraises_worker_panics_and_keeps_working() {
        let pool = WorkerPool::new(2);
        let r = catch_unwind(AssertUnwindSafe(|| pool.run(&|w| assert_eq!(w, 0, "worker {w} fails"))));
        assert!(r.is_err());
        let n = AtomicUsize::new(0);
        pool.run(&|_| {
            n.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(n.load(Ordering::SeqCst), 2);
    }
}
