//! Every chunk of `0..len` done once on the pool, each writing its own columns of shared
//! rows: the parallel map behind scoring a cycle's feasible nodes.
//!
//! Workers claim chunks from the two ends of one counter (`Claims`): the caller from the
//! first chunk up, the other workers from the last chunk down. They write the chunk's columns
//! of the rows (`ChunkSlots`) and keep what else a chunk gives in their own buffer (each
//! worker locks its buffer once per run, nothing is locked per chunk or per item). Every
//! chunk is claimed by exactly one worker, the caller included, so the work is done whatever
//! number of workers joins.
//!
//! Claiming from both ends gives each worker the same chunks run after run (the caller the
//! leading ones, the helper the trailing ones, meeting where their speeds put them), so what
//! a chunk reads and writes stays in its worker's core's cache from one cycle to the next;
//! with one counter claimed in order the two interleaved differently every run. Scoring
//! 50,000 nodes on 2 workers: 12–14% less time per cycle (perf/RESULTS.md, issue 18).

use super::pool::WorkerPool;
use crate::sync::{lock, AtomicU64, Mutex, Ordering};

/// The chunks claimed from each end of `0..num`: one atomic word, the count from the front
/// in the low 32 bits and from the back in the high 32 bits. A claim succeeds only while the
/// two counts sum to less than `num`, with one compare-exchange on the word, so no chunk is
/// claimed twice and none is left.
pub struct Claims {
    word: AtomicU64,
    num: u64,
}

const FRONT_ONE: u64 = 1;
const BACK_ONE: u64 = 1 << 32;

impl Claims {
    /// Claims over chunks `0..num` (`num < 2^32`).
    pub fn new(num: usize) -> Claims {
        assert!(num < 1 << 32, "at most 2^32 - 1 chunks");
        Claims { word: AtomicU64::new(0), num: num as u64 }
    }

    /// The lowest chunk not claimed yet (`from_back`: the highest), or `None` when every chunk
    /// is claimed.
    pub fn claim(&self, from_back: bool) -> Option<usize> {
        let mut cur = self.word.load(Ordering::Acquire);
        loop {
            let (front, back) = (cur & (BACK_ONE - 1), cur >> 32);
            if front + back >= self.num {
                return None;
            }
            let (next, chunk) =
                if from_back { (cur + BACK_ONE, self.num - 1 - back) } else { (cur + FRONT_ONE, front) };
            match self.word.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(chunk as usize),
                Err(now) => cur = now,
            }
        }
    }
}

/// Per-worker buffers, reused across runs.
pub struct ChunkBuffers<B> {
    workers: Vec<Mutex<WorkerChunks<B>>>,
}

impl<B> Default for ChunkBuffers<B> {
    fn default() -> Self {
        ChunkBuffers { workers: Vec::new() }
    }
}

struct WorkerChunks<B> {
    buf: B,
}

impl<B: Default + Send> ChunkBuffers<B> {
    /// Worker `w`'s buffer (after a run: what its chunks appended).
    pub fn buf(&mut self, w: usize) -> &mut B {
        &mut self.workers[w].get_mut().unwrap_or_else(|e| e.into_inner()).buf
    }

    /// Calls `work(buf, slots)` once for each chunk `lo..hi` of `0..len` (`chunk` items, the
    /// last one shorter), on `pool` when given, each worker with its own buffer (`reset` first,
    /// once per run). `out` holds `rows` rows of `len` items, and chunk `lo..hi` gets columns
    /// `lo..hi` of every row (its `ChunkSlots`), which no other chunk sees.
    #[allow(clippy::too_many_arguments)]
    pub fn for_chunks_into<T: Send>(
        &mut self,
        pool: Option<&WorkerPool>,
        len: usize,
        chunk: usize,
        out: &mut [T],
        rows: usize,
        reset: impl Fn(&mut B) + Sync,
        work: impl Fn(&mut B, &mut ChunkSlots<'_, T>) + Sync,
    ) {
        assert_eq!(out.len(), rows * len, "for_chunks_into: out holds {rows} rows of {len}");
        let raw = RawRows { ptr: out.as_mut_ptr(), stride: len, rows };
        let chunk = chunk.max(1);
        let num_chunks = len.div_ceil(chunk);
        let workers = pool.map_or(1, WorkerPool::size);
        while self.workers.len() < workers {
            self.workers.push(Mutex::new(WorkerChunks { buf: B::default() }));
        }
        let bufs = &mut self.workers[..workers];
        for w in bufs.iter_mut() {
            reset(&mut w.get_mut().unwrap_or_else(|e| e.into_inner()).buf);
        }
        let bufs = &*bufs;
        let claims = Claims::new(num_chunks);
        let run = |w: usize| {
            let mut mine = lock(&bufs[w]);
            while let Some(c) = claims.claim(w != 0) {
                let (lo, hi) = (c * chunk, ((c + 1) * chunk).min(len));
                work(&mut mine.buf, &mut ChunkSlots { raw: &raw, chunk: c, lo, hi });
            }
        };
        match pool {
            Some(p) if workers > 1 && num_chunks > 1 => p.run(&run),
            _ => run(0),
        }
    }
}

/// The rows `for_chunks_into` writes, shared by the workers as a pointer.
struct RawRows<T> {
    ptr: *mut T,
    stride: usize,
    rows: usize,
}

// SAFETY: the pointer is only dereferenced through `ChunkSlots::row`, for columns `lo..hi`
// of the chunk a worker claimed; each chunk is claimed once (`Claims::claim`), so
// no two threads touch the same item, and `T: Send` lets an item be written from another
// thread. `for_chunks_into` holds `&mut out` until every worker is done.
unsafe impl<T: Send> Sync for RawRows<T> {}

/// One chunk's part of `for_chunks_into`'s `out`: columns `lo..hi` of each row.
pub struct ChunkSlots<'r, T> {
    raw: &'r RawRows<T>,
    chunk: usize,
    lo: usize,
    hi: usize,
}

impl<T> ChunkSlots<'_, T> {
    /// Which chunk this is (`lo / chunk`).
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// The chunk's first item.
    pub fn lo(&self) -> usize {
        self.lo
    }

    /// One past the chunk's last item.
    pub fn hi(&self) -> usize {
        self.hi
    }

    /// Columns `lo..hi` of row `r`.
    pub fn row(&mut self, r: usize) -> &mut [T] {
        assert!(r < self.raw.rows, "row {r} of {}", self.raw.rows);
        debug_assert!(self.lo <= self.hi && self.hi <= self.raw.stride);
        // SAFETY: `r < rows` and `lo <= hi <= stride`, so the range lies inside `out`
        // (`rows * stride` items, asserted by `for_chunks_into`), which is borrowed mutably
        // for the whole run. Columns `lo..hi` belong to this chunk alone (see `RawRows`), and
        // the slice borrows `self` mutably, so this chunk holds one row's slice at a time.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr.add(r * self.raw.stride + self.lo), self.hi - self.lo) }
    }

    /// Columns `lo..hi` of rows `a` and `b` (two different rows) at once.
    pub fn two_rows(&mut self, a: usize, b: usize) -> (&mut [T], &mut [T]) {
        assert!(a != b && a < self.raw.rows && b < self.raw.rows, "rows {a} and {b} of {}", self.raw.rows);
        let at = |r: usize| r * self.raw.stride + self.lo;
        let len = self.hi - self.lo;
        // SAFETY: as in `row`, and the two ranges are in different rows (`a != b`, each
        // `len <= stride` long), so they do not overlap.
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.raw.ptr.add(at(a)), len),
                std::slice::from_raw_parts_mut(self.raw.ptr.add(at(b)), len),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (chunks, claims as `from_back`, the chunks they get).
    type ClaimCase = (usize, &'static [bool], &'static [Option<usize>]);

    /// Claims from the front take chunks upward, from the back downward, and they stop where
    /// they meet.
    #[test]
    fn claims_come_from_both_ends_and_stop_where_they_meet() {
        let cases: &[ClaimCase] = &[
            (0, &[false, true], &[None, None]),
            (1, &[true, false], &[Some(0), None]),
            (1, &[false, true], &[Some(0), None]),
            (3, &[false, false, false, false], &[Some(0), Some(1), Some(2), None]),
            (3, &[true, true, true, true], &[Some(2), Some(1), Some(0), None]),
            (5, &[false, true, false, true, false, true], &[Some(0), Some(4), Some(1), Some(3), Some(2), None]),
            (4, &[true, false, false, false, true], &[Some(3), Some(0), Some(1), Some(2), None]),
        ];
        for &(num, sides, want) in cases {
            let claims = Claims::new(num);
            let got: Vec<Option<usize>> = sides.iter().map(|&back| claims.claim(back)).collect();
            assert_eq!(got, want, "{num} chunks, claims {sides:?}");
        }
    }

    /// Threads claiming from both ends at once get every chunk exactly once.
    #[test]
    fn claims_from_both_ends_at_once_take_every_chunk_once() {
        for num in [1usize, 2, 3, 17, 1000] {
            for _ in 0..20 {
                let claims = Claims::new(num);
                let taken: Vec<Vec<usize>> = std::thread::scope(|s| {
                    let handles: Vec<_> = (0..3)
                        .map(|t| {
                            let claims = &claims;
                            s.spawn(move || std::iter::from_fn(|| claims.claim(t != 0)).collect::<Vec<usize>>())
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                let mut all: Vec<usize> = taken.concat();
                all.sort_unstable();
                assert_eq!(all, (0..num).collect::<Vec<_>>(), "{num} chunks");
                assert!(taken[0].windows(2).all(|w| w[0] < w[1]), "the front claims go up");
            }
        }
    }

    /// Each chunk writes i and i² into its columns of two rows, and counts its items in its
    /// buffer: every item is written once, in its own column, whatever the pool.
    #[test]
    fn every_chunk_writes_its_own_columns_of_every_row() {
        let pools = [None, Some(WorkerPool::new(2)), Some(WorkerPool::new(4))];
        let mut bufs: ChunkBuffers<(u64, Vec<usize>)> = ChunkBuffers::default();
        for pool in &pools {
            for (len, chunk) in [(0, 4), (1, 4), (7, 3), (64, 16), (1000, 7), (1000, 1000), (5, 1)] {
                for _ in 0..20 {
                    let mut out = vec![0u64; 2 * len];
                    bufs.for_chunks_into(
                        pool.as_ref(),
                        len,
                        chunk,
                        &mut out,
                        2,
                        |b| *b = (0, Vec::new()),
                        |b, slots| {
                            let (lo, hi) = (slots.lo(), slots.hi());
                            assert_eq!(slots.chunk(), lo / chunk);
                            for (i, v) in (lo..hi).zip(slots.row(0)) {
                                *v += i as u64;
                            }
                            let (first, second) = slots.two_rows(0, 1);
                            for ((i, a), b) in (lo..hi).zip(first.iter()).zip(second.iter_mut()) {
                                assert_eq!(*a, i as u64);
                                *b += (i * i) as u64;
                            }
                            b.0 += (hi - lo) as u64;
                            b.1.push(slots.chunk());
                        },
                    );
                    let want: Vec<u64> = (0..len).map(|i| i as u64).chain((0..len).map(|i| (i * i) as u64)).collect();
                    assert_eq!(out, want, "len {len} chunk {chunk}");
                    let workers = pool.as_ref().map_or(1, WorkerPool::size);
                    let done: u64 = (0..workers).map(|w| bufs.buf(w).0).sum();
                    assert_eq!(done, len as u64);
                    let mut chunks: Vec<usize> = (0..workers).flat_map(|w| bufs.buf(w).1.clone()).collect();
                    chunks.sort_unstable();
                    assert_eq!(chunks, (0..len.div_ceil(chunk)).collect::<Vec<_>>());
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "rows")]
    fn out_of_the_wrong_size_is_refused() {
        let mut bufs: ChunkBuffers<()> = ChunkBuffers::default();
        let mut out = vec![0u8; 5];
        bufs.for_chunks_into(None, 3, 2, &mut out, 2, |_| {}, |_, _| {});
    }
}
