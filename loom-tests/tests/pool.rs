//! The worker pool's publish / join / park / close protocol (`parallel::pool`): every
//! interleaving of the caller and the workers, including a worker that wakes late.
//!
//! * the caller's call always runs, a worker's at most once per `run`;
//! * `run` returns only after every call that started has returned (the job borrows the
//!   caller's stack: this is what makes the pool's `unsafe` sound);
//! * no call starts after `run` returned (a late worker stays out of a closed job);
//! * nobody sleeps forever: loom reports a deadlock if a worker misses a job or the
//!   shutdown, or the caller misses the last worker's leave;
//! * the ordered search on the pool gives the sequential result, stopping at its goal or
//!   dropping the hit after it;
//! * the chunked map on the pool does every chunk once and reads them back in order.
#![cfg(ksched_loom)]

use ksched_engine::parallel::search::{search, Emit, Goal, Hit, SearchBuffers, Visitor};
use ksched_engine::parallel::WorkerPool;
use ksched_engine::sync::{Arc, AtomicUsize, Ordering};

/// Two jobs in a row on a pool with one worker thread: each item claimed exactly once, every
/// started call finished when `run` returns, and nothing runs a job after its `run` returned.
#[test]
fn pool_two_runs_finish_every_started_call_and_none_starts_late() {
    loom::model(|| {
        let pool = WorkerPool::new(2);
        let calls = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let next = AtomicUsize::new(0);
            let done = [AtomicUsize::new(0), AtomicUsize::new(0)];
            let inside = AtomicUsize::new(0);
            let worker_calls = AtomicUsize::new(0);
            pool.run(&|w| {
                inside.fetch_add(1, Ordering::SeqCst);
                calls.fetch_add(1, Ordering::SeqCst);
                if w != 0 {
                    worker_calls.fetch_add(1, Ordering::SeqCst);
                }
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(d) = done.get(i) else { break };
                    d.fetch_add(1, Ordering::SeqCst);
                }
                inside.fetch_sub(1, Ordering::SeqCst);
            });
            assert_eq!(inside.load(Ordering::SeqCst), 0, "run returned while a call was running");
            assert!(worker_calls.load(Ordering::SeqCst) <= 1, "a worker ran one job twice");
            for d in &done {
                assert_eq!(d.load(Ordering::SeqCst), 1);
            }
        }
        let after = calls.load(Ordering::SeqCst);
        drop(pool);
        assert_eq!(calls.load(Ordering::SeqCst), after, "a call started after run returned");
    });
}

/// Items 0..4 of which those listed are hits.
struct Items(&'static [usize]);

impl Visitor for Items {
    type Out = usize;
    type Scratch = ();

    fn visit<E: Emit<usize>>(&self, _: &mut (), lo: usize, hi: usize, emit: &mut E) -> bool {
        for i in lo..hi {
            if !emit.one(i, i) {
                return false;
            }
        }
        true
    }

    fn hit(&self, i: &usize) -> Hit {
        if self.0.contains(i) {
            Hit::Hit
        } else {
            Hit::Miss
        }
    }

    fn chunk(&self, _: usize, _: usize) -> usize {
        1
    }
}

/// The ordered search with early cancel on a pool: whichever worker finds a hit first and
/// whenever the other stops, the outcomes are the sequential ones (hits 1 and 2, the first
/// wanted, from 3: 3, 0, 1).
#[test]
fn pool_search_with_cancel_equals_sequential() {
    loom::model(|| {
        let pool = WorkerPool::new(2);
        let mut bufs = SearchBuffers::default();
        let mut got = Vec::new();
        let n = search(Some(&pool), &Items(&[1, 2]), 4, 3, Goal::hits(1), &mut bufs, |i, _| got.push(i));
        assert_eq!(got, [3, 0, 1]);
        assert_eq!(n, 3);
    });
}

/// Upstream's filter-pass stop on a pool: hits 1 and 3, one wanted, from 0: hit 1 is kept,
/// the miss 2 after it is taken too, and hit 3 is dropped (0, 1, 2), however the workers
/// interleave (the chunk holding 3 may finish before the one holding 2).
#[test]
fn pool_search_dropping_the_next_hit_equals_sequential() {
    loom::model(|| {
        let pool = WorkerPool::new(2);
        let mut bufs = SearchBuffers::default();
        let mut got = Vec::new();
        let n = search(Some(&pool), &Items(&[1, 3]), 4, 0, Goal::hits_dropping_next(1), &mut bufs, |i, _| got.push(i));
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(n, 3);
    });
}

/// Chunks writing their own columns of shared rows (scoring's table on the pool): three
/// chunks over one worker thread and the caller; every cell is written once, by the chunk
/// that owns it, and the caller reads them all back after the run. (loom sees the claims
/// and the pool's hand-offs; the cells are plain memory, which it does not track.)
#[test]
fn chunks_write_their_own_columns_once() {
    use ksched_engine::parallel::chunks::ChunkBuffers;
    loom::model(|| {
        let pool = WorkerPool::new(2);
        let mut bufs: ChunkBuffers<usize> = ChunkBuffers::default();
        let mut out = vec![0usize; 10];
        bufs.for_chunks_into(
            Some(&pool),
            5,
            2,
            &mut out,
            2,
            |b| *b = 0,
            |b, slots| {
                let lo = slots.lo();
                let (first, second) = slots.two_rows(0, 1);
                for (i, (a, b)) in first.iter_mut().zip(second.iter_mut()).enumerate() {
                    *a += lo + i;
                    *b += 10 * (lo + i);
                }
                *b += 1;
            },
        );
        assert_eq!(out, [0, 1, 2, 3, 4, 0, 10, 20, 30, 40]);
        assert_eq!(*bufs.buf(0) + *bufs.buf(1), 3, "three chunks, each claimed once");
    });
}
