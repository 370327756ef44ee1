//! An ordered search with early cancel: visit items `0..len` from a rotating `start`
//! (`start, start+1, …, len-1, 0, …, start-1`), classify each outcome as a miss, a hit or a
//! preferred hit, and stop after the outcome that reaches the goal (enough hits, enough of
//! them preferred). The caller receives every outcome up to that point, in visiting order.
//!
//! On a pool, the rotated item list is cut into chunks that workers claim from one counter,
//! in order; a worker claims no new chunk once the chunks finished so far reach the goal.
//! Claimed chunks therefore always form a prefix of the visiting order, they all finish
//! before `run` returns, and the goal is monotone (more outcomes never un-reach it), so
//! merging the prefix in order and cutting at the goal gives exactly the sequential result:
//! parallelism never changes a decision. Nothing is locked per item or per chunk (each
//! worker locks its own buffer once per search), and the buffers are reused across searches.

use smallvec::SmallVec;

use super::pool::WorkerPool;
use crate::sync::{lock, AtomicUsize, Mutex, Ordering};

/// How an outcome counts toward the goal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    Miss,
    Hit,
    /// A hit that also counts toward `Goal::preferred`.
    Preferred,
}

/// When the search stops: at least `hits` hits, of which at least `preferred` preferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Goal {
    pub hits: usize,
    pub preferred: usize,
}

impl Goal {
    /// The first `hits` hits.
    pub fn hits(hits: usize) -> Goal {
        Goal { hits, preferred: 0 }
    }

    fn reached(&self, t: Tally) -> bool {
        t.hits >= self.hits && t.preferred >= self.preferred
    }
}

/// Hits counted so far.
#[derive(Clone, Copy, Default)]
struct Tally {
    hits: usize,
    preferred: usize,
}

impl Tally {
    fn add(&mut self, hit: Hit) {
        self.hits += usize::from(hit != Hit::Miss);
        self.preferred += usize::from(hit == Hit::Preferred);
    }
}

/// What a search visits.
pub trait Visitor: Sync {
    type Out: Send;
    /// Per-worker scratch, reused across chunks and searches.
    type Scratch: Default + Send;

    /// Visits items `lo..hi` (`lo <= hi <= len`, no wrap) in order, handing each outcome to
    /// `emit`, and stops early when `emit` returns false.
    fn visit<E: FnMut(usize, Self::Out) -> bool>(&self, scratch: &mut Self::Scratch, lo: usize, hi: usize, emit: E);

    fn hit(&self, out: &Self::Out) -> Hit;

    /// Items per chunk a worker claims, for `len` items on `workers` workers.
    fn chunk(&self, len: usize, workers: usize) -> usize;
}

/// Buffers a search reuses: one per worker (outcomes of the chunks it claimed, in claim
/// order, and its scratch).
pub struct SearchBuffers<O, S> {
    workers: Vec<Mutex<WorkerBuf<O, S>>>,
}

impl<O, S> Default for SearchBuffers<O, S> {
    fn default() -> Self {
        SearchBuffers { workers: Vec::new() }
    }
}

struct WorkerBuf<O, S> {
    scratch: S,
    /// (item, outcome) of every claimed chunk, chunk after chunk.
    items: Vec<(u32, O)>,
    /// (chunk, end of its outcomes in `items`), in claim order (ascending chunk).
    chunks: Vec<(u32, u32)>,
}

impl<O, S: Default> WorkerBuf<O, S> {
    fn new() -> Self {
        WorkerBuf { scratch: S::default(), items: Vec::new(), chunks: Vec::new() }
    }
}

/// Searches items `0..len` from `start` (taken modulo `len`) until `goal`, calling
/// `consume(item, outcome)` on each outcome up to and including the one that reaches the
/// goal, in visiting order; returns how many that was. With a pool of more than one worker
/// the items are visited in chunks (`Visitor::chunk`) on the pool; the result is the same.
pub fn search<V: Visitor>(
    pool: Option<&WorkerPool>,
    visitor: &V,
    len: usize,
    start: usize,
    goal: Goal,
    bufs: &mut SearchBuffers<V::Out, V::Scratch>,
    mut consume: impl FnMut(usize, V::Out),
) -> usize {
    if len == 0 || goal.reached(Tally::default()) {
        return 0;
    }
    let start = start % len;
    let workers = pool.map_or(1, WorkerPool::size);
    let chunk = visitor.chunk(len, workers).max(1);
    while bufs.workers.len() < workers {
        bufs.workers.push(Mutex::new(WorkerBuf::new()));
    }
    match pool {
        Some(p) if workers > 1 && len > 2 * chunk => parallel(p, visitor, len, start, goal, chunk, bufs, consume),
        _ => {
            let mut buf = lock(&bufs.workers[0]);
            let tally = std::cell::Cell::new(Tally::default());
            let mut processed = 0;
            let mut emit = |i: usize, out: V::Out| {
                let mut t = tally.get();
                t.add(visitor.hit(&out));
                tally.set(t);
                consume(i, out);
                processed += 1;
                !goal.reached(t)
            };
            visitor.visit(&mut buf.scratch, start, len, &mut emit);
            if !goal.reached(tally.get()) {
                visitor.visit(&mut buf.scratch, 0, start, &mut emit);
            }
            processed
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn parallel<V: Visitor>(
    pool: &WorkerPool,
    visitor: &V,
    len: usize,
    start: usize,
    goal: Goal,
    chunk: usize,
    bufs: &mut SearchBuffers<V::Out, V::Scratch>,
    mut consume: impl FnMut(usize, V::Out),
) -> usize {
    let num_chunks = len.div_ceil(chunk);
    let workers = &mut bufs.workers[..pool.size()];
    for w in workers.iter_mut() {
        let buf = w.get_mut().unwrap_or_else(|e| e.into_inner());
        buf.items.clear();
        buf.chunks.clear();
    }
    let next = AtomicUsize::new(0);
    let hits = AtomicUsize::new(0);
    let preferred = AtomicUsize::new(0);
    let workers = &*workers;
    pool.run(&|w| {
        let mut buf = lock(&workers[w]);
        let buf = &mut *buf;
        loop {
            if goal.reached(Tally { hits: hits.load(Ordering::Acquire), preferred: preferred.load(Ordering::Acquire) })
            {
                return;
            }
            let c = next.fetch_add(1, Ordering::AcqRel);
            if c >= num_chunks {
                return;
            }
            let mut tally = Tally::default();
            let mut emit = |i: usize, out: V::Out| {
                tally.add(visitor.hit(&out));
                buf.items.push((i as u32, out));
                true
            };
            // Rotated offsets lo..hi are items (start + offset) % len: at most two runs.
            let (lo, hi) = (start + c * chunk, start + ((c + 1) * chunk).min(len));
            if lo >= len {
                visitor.visit(&mut buf.scratch, lo - len, hi - len, &mut emit);
            } else {
                visitor.visit(&mut buf.scratch, lo, hi.min(len), &mut emit);
                if hi > len {
                    visitor.visit(&mut buf.scratch, 0, hi - len, &mut emit);
                }
            }
            buf.chunks.push((c as u32, buf.items.len() as u32));
            hits.fetch_add(tally.hits, Ordering::AcqRel);
            preferred.fetch_add(tally.preferred, Ordering::AcqRel);
        }
    });
    // Every claimed chunk finished; each worker holds its chunks in ascending order. Merge
    // them in chunk order, moving the outcomes out, and cut at the goal (the rest drop).
    let claimed = next.load(Ordering::Acquire).min(num_chunks);
    let mut guards: SmallVec<[_; 16]> = workers.iter().map(lock).collect();
    let mut streams: SmallVec<[_; 16]> = guards
        .iter_mut()
        .map(|g| {
            let WorkerBuf { items, chunks, .. } = &mut **g;
            (&chunks[..], 0usize, items.drain(..), 0usize)
        })
        .collect();
    let (mut tally, mut processed) = (Tally::default(), 0);
    'chunks: for c in 0..claimed {
        let Some((ends, next_end, items, taken)) = streams
            .iter_mut()
            .find(|(ends, next_end, _, _)| ends.get(*next_end).is_some_and(|&(cc, _)| cc as usize == c))
        else {
            break;
        };
        let end = ends[*next_end].1;
        *next_end += 1;
        while *taken < end as usize {
            *taken += 1;
            let Some((item, out)) = items.next() else { break };
            tally.add(visitor.hit(&out));
            consume(item as usize, out);
            processed += 1;
            if goal.reached(tally) {
                break 'chunks;
            }
        }
    }
    processed
}
