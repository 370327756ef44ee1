//! An ordered search with early cancel: visit items `0..len` from a rotating `start`
//! (`start, start+1, …, len-1, 0, …, start-1`), classify each outcome as a miss, a hit or a
//! preferred hit, and stop where the goal says: right after the outcome that reaches it
//! (enough hits, enough of them preferred), or, for upstream's filter pass, at the first hit
//! after it, which is dropped (`Goal::hits_dropping_next`). The caller receives every outcome
//! up to that point, in visiting order.
//!
//! On a pool, the rotated item list is cut into chunks that workers claim from one counter,
//! in order; a worker claims no new chunk once the chunks finished so far hold where the
//! search stops, and waits while the chunks still running could hold it.
//! Claimed chunks therefore always form a prefix of the visiting order, they all finish
//! before `run` returns, and where the search stops is monotone (more outcomes never move
//! it), so merging the prefix in order and cutting where the sequential search stops gives
//! exactly the sequential result: parallelism never changes a decision. Nothing is locked
//! per item or per chunk (each worker locks its own buffer once per search), and the
//! buffers are reused across searches.

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

/// When the search stops: at least `hits` hits, of which at least `preferred` preferred;
/// then either right there or at the next hit (`Stop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Goal {
    pub hits: usize,
    pub preferred: usize,
    stop: Stop,
}

/// Where a search stops once its goal is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Right after the outcome that reached it.
    AtGoal,
    /// At the first hit after it: that hit is neither handed out nor counted, the misses met
    /// before it are (upstream's findNodesThatPassFilters: having found enough feasible nodes
    /// it goes on, and the next node that passes cancels the search and is dropped).
    DroppingNextHit,
}

impl Goal {
    /// The first `hits` hits.
    pub fn hits(hits: usize) -> Goal {
        Goal { hits, preferred: 0, stop: Stop::AtGoal }
    }

    /// At least `hits` hits, `preferred` of them preferred, stopping at the one that reaches
    /// both.
    pub fn with_preferred(hits: usize, preferred: usize) -> Goal {
        Goal { hits, preferred, stop: Stop::AtGoal }
    }

    /// `hits` hits, and every miss up to the next hit, which ends the search and is dropped
    /// (when there is none, every item is visited). Upstream's filter pass: the rejected
    /// nodes met after the wanted feasible ones are recorded and counted, and the next
    /// cycle starts at the dropped node.
    pub fn hits_dropping_next(hits: usize) -> Goal {
        Goal { hits, preferred: 0, stop: Stop::DroppingNextHit }
    }

    /// Whether the search drops the hit after the goal (`hits_dropping_next`).
    pub fn drops_next_hit(&self) -> bool {
        self.stop == Stop::DroppingNextHit
    }

    fn reached(&self, t: Tally) -> bool {
        t.hits >= self.hits && t.preferred >= self.preferred
    }

    /// The search stops after taking an outcome that left the tally at `t`.
    fn stops_after(&self, t: Tally) -> bool {
        self.stop == Stop::AtGoal && self.reached(t)
    }

    /// An outcome of `class` met with the tally at `t` ends the search without being taken.
    fn drops(&self, t: Tally, class: Hit) -> bool {
        self.stop == Stop::DroppingNextHit && class != Hit::Miss && self.reached(t)
    }

    /// How many outcomes of `class` in a row are taken from `t` before the search stops
    /// (`usize::MAX`: it does not stop in them). With `AtGoal` the one that reaches the goal
    /// is taken; with `DroppingNextHit` the hit after it is not.
    fn plain_to_take(&self, t: Tally, class: Hit) -> usize {
        let hits = self.hits.saturating_sub(t.hits);
        let preferred = self.preferred.saturating_sub(t.preferred);
        match class {
            Hit::Miss if self.stop == Stop::DroppingNextHit => usize::MAX,
            _ if hits == 0 && preferred == 0 => 0,
            Hit::Miss => usize::MAX,
            Hit::Hit if preferred > 0 => usize::MAX,
            Hit::Hit => hits,
            Hit::Preferred => hits.max(preferred),
        }
    }

    /// Whether finished outcomes tallying `t` (some of the search's prefix, each finished
    /// chunk being part of it) already hold where the search stops, so no further item is
    /// needed. `DroppingNextHit` needs the hit after the goal: one more.
    fn settled(&self, t: Tally) -> bool {
        match self.stop {
            Stop::AtGoal => self.reached(t),
            Stop::DroppingNextHit => t.hits > self.hits && t.preferred >= self.preferred,
        }
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
        self.add_n(hit, 1);
    }

    fn add_n(&mut self, hit: Hit, n: usize) {
        self.hits += n * usize::from(hit != Hit::Miss);
        self.preferred += n * usize::from(hit == Hit::Preferred);
    }
}

/// What a search visits.
pub trait Visitor: Sync {
    type Out: Send;
    /// Per-worker scratch, reused across chunks and searches.
    type Scratch: Default + Send;

    /// Visits items `lo..hi` (`lo <= hi <= len`, no wrap) in order, handing each outcome to
    /// `emit` (a run of items with the `plain()` outcome may go as one `plain_run`), and
    /// stops early when `emit` returns false; false when it stopped early.
    fn visit<E: Emit<Self::Out>>(&self, scratch: &mut Self::Scratch, lo: usize, hi: usize, emit: &mut E) -> bool;

    fn hit(&self, out: &Self::Out) -> Hit;

    /// The outcome most items have (a plain pass), if there is one: a worker keeps only the
    /// item for those, not the outcome, and the merge hands out this value again.
    fn plain(&self) -> Option<Self::Out> {
        None
    }

    /// Whether `out` equals `plain()`.
    fn is_plain(&self, _out: &Self::Out) -> bool {
        false
    }

    /// Items per chunk a worker claims, for `len` items on `workers` workers.
    fn chunk(&self, len: usize, workers: usize) -> usize;
}

/// What a visitor hands its outcomes to.
pub trait Emit<O> {
    /// Item `item`'s outcome (a hit the goal drops is not taken); false when the search wants
    /// no more.
    fn one(&mut self, item: usize, out: O) -> bool;

    /// Items `lo..hi`, each with the visitor's `plain()` outcome (only visitors that have one
    /// call this); false when the search wants no more (it took those up to where it stops).
    fn plain_run(&mut self, lo: usize, hi: usize) -> bool;

    /// Items `lo..hi`, each with the outcome `out` makes, a miss (a run of nodes failing one
    /// filter alike); false when the search wants no more.
    fn miss_run(&mut self, lo: usize, hi: usize, out: impl Fn() -> O) -> bool {
        (lo..hi).all(|i| self.one(i, out()))
    }
}

/// The 1-worker search's emitter: hands outcomes to the sink up to where the goal stops it.
struct SeqEmit<'s, V: Visitor, K> {
    visitor: &'s V,
    goal: Goal,
    tally: Tally,
    processed: usize,
    sink: &'s mut K,
}

impl<V: Visitor, K: Sink<V::Out>> Emit<V::Out> for SeqEmit<'_, V, K> {
    #[inline]
    fn one(&mut self, item: usize, out: V::Out) -> bool {
        let class = self.visitor.hit(&out);
        if self.goal.drops(self.tally, class) {
            return false;
        }
        self.tally.add(class);
        self.sink.take(item, out);
        self.processed += 1;
        !self.goal.stops_after(self.tally)
    }

    fn plain_run(&mut self, lo: usize, hi: usize) -> bool {
        let Some(plain) = self.visitor.plain() else { unreachable!("plain_run from a visitor without plain()") };
        let class = self.visitor.hit(&plain);
        let take = (hi - lo).min(self.goal.plain_to_take(self.tally, class));
        let visitor = self.visitor;
        self.sink.take_plain_range(lo, lo + take, || visitor.plain().unwrap_or_else(|| unreachable!()));
        self.tally.add_n(class, take);
        self.processed += take;
        // A run cut short ends the search (at the goal, or before the hit it drops).
        take == hi - lo && !self.goal.stops_after(self.tally)
    }

    fn miss_run(&mut self, lo: usize, hi: usize, out: impl Fn() -> V::Out) -> bool {
        debug_assert!(hi <= lo || self.visitor.hit(&out()) == Hit::Miss, "a miss run of misses");
        self.sink.take_run(lo, hi, out);
        self.processed += hi - lo;
        !self.goal.stops_after(self.tally)
    }
}

/// A pool worker's emitter: keeps every outcome of its chunk (plain ones as the item alone).
struct ChunkEmit<'s, V: Visitor> {
    visitor: &'s V,
    tally: Tally,
    items: &'s mut Vec<u32>,
    outs: &'s mut Vec<V::Out>,
    /// How many outcomes of the chunk were kept (not plain).
    kept: u32,
}

impl<V: Visitor> Emit<V::Out> for ChunkEmit<'_, V> {
    #[inline]
    fn one(&mut self, item: usize, out: V::Out) -> bool {
        self.tally.add(self.visitor.hit(&out));
        if self.visitor.is_plain(&out) {
            self.items.push(item as u32);
        } else {
            self.items.push(item as u32 | KEPT);
            self.outs.push(out);
            self.kept += 1;
        }
        true
    }

    fn plain_run(&mut self, lo: usize, hi: usize) -> bool {
        let Some(plain) = self.visitor.plain() else { unreachable!("plain_run from a visitor without plain()") };
        self.tally.add_n(self.visitor.hit(&plain), hi - lo);
        self.items.extend(lo as u32..hi as u32);
        true
    }
}

/// Where a search hands its outcomes, in visiting order.
pub trait Sink<O> {
    fn take(&mut self, item: usize, out: O);

    /// Items whose outcome is the visitor's `plain()` one (`plain` makes it), in order.
    fn take_plain(&mut self, items: &[u32], plain: impl Fn() -> O) {
        for &i in items {
            self.take(i as usize, plain());
        }
    }

    /// Items `lo..hi`, all with the plain outcome.
    fn take_plain_range(&mut self, lo: usize, hi: usize, plain: impl Fn() -> O) {
        for i in lo..hi {
            self.take(i, plain());
        }
    }

    /// Items `lo..hi`, all with the outcome `out` makes (not the plain one).
    fn take_run(&mut self, lo: usize, hi: usize, out: impl Fn() -> O) {
        for i in lo..hi {
            self.take(i, out());
        }
    }
}

/// A sink that calls a closure on each outcome.
struct Each<F>(F);

impl<O, F: FnMut(usize, O)> Sink<O> for Each<F> {
    fn take(&mut self, item: usize, out: O) {
        (self.0)(item, out)
    }
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
    /// The items of every claimed chunk, chunk after chunk, each with `KEPT` set when its
    /// outcome is in `outs` (otherwise the outcome is the visitor's `plain()` one).
    items: Vec<u32>,
    /// The outcomes that are not plain, in item order.
    outs: Vec<O>,
    /// (chunk, end of its items in `items`, how many of them were kept), in claim order
    /// (ascending chunk).
    chunks: Vec<(u32, u32, u32)>,
}

/// Marks an item whose outcome was kept.
const KEPT: u32 = 1 << 31;

impl<O, S: Default> WorkerBuf<O, S> {
    fn new() -> Self {
        WorkerBuf { scratch: S::default(), items: Vec::new(), outs: Vec::new(), chunks: Vec::new() }
    }
}

/// Searches items `0..len` from `start` (taken modulo `len`) until `goal`, calling
/// `consume(item, outcome)` on each outcome up to where the goal stops the search (the
/// outcome that reaches it included; a hit the goal drops not), in visiting order; returns
/// how many that was. With a pool of more than one worker
/// the items are visited in chunks (`Visitor::chunk`) on the pool; the result is the same.
pub fn search<V: Visitor>(
    pool: Option<&WorkerPool>,
    visitor: &V,
    len: usize,
    start: usize,
    goal: Goal,
    bufs: &mut SearchBuffers<V::Out, V::Scratch>,
    consume: impl FnMut(usize, V::Out),
) -> usize {
    search_into(pool, visitor, len, start, goal, bufs, &mut Each(consume))
}

/// `search`, handing the outcomes to `sink` (which may take runs of plain outcomes at once).
pub fn search_into<V: Visitor>(
    pool: Option<&WorkerPool>,
    visitor: &V,
    len: usize,
    start: usize,
    goal: Goal,
    bufs: &mut SearchBuffers<V::Out, V::Scratch>,
    sink: &mut impl Sink<V::Out>,
) -> usize {
    debug_assert!(goal.stop == Stop::AtGoal || goal.preferred == 0, "a dropped next hit only counts plain hits");
    if len == 0 || goal.settled(Tally::default()) {
        return 0;
    }
    let start = start % len;
    let workers = pool.map_or(1, WorkerPool::size);
    let chunk = visitor.chunk(len, workers).max(1);
    while bufs.workers.len() < workers {
        bufs.workers.push(Mutex::new(WorkerBuf::new()));
    }
    match pool {
        Some(p) if workers > 1 && len > 2 * chunk => parallel(p, visitor, len, start, goal, chunk, bufs, sink),
        _ => {
            let mut buf = lock(&bufs.workers[0]);
            let mut emit = SeqEmit { visitor, goal, tally: Tally::default(), processed: 0, sink };
            if visitor.visit(&mut buf.scratch, start, len, &mut emit) {
                visitor.visit(&mut buf.scratch, 0, start, &mut emit);
            }
            emit.processed
        }
    }
}

/// A pause in a wait for another worker's chunk (under loom, a yield to the other threads).
fn wait_a_moment() {
    #[cfg(not(ksched_loom))]
    std::hint::spin_loop();
    #[cfg(ksched_loom)]
    crate::sync::thread::yield_now();
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
    sink: &mut impl Sink<V::Out>,
) -> usize {
    debug_assert!(len <= KEPT as usize, "items must fit in 31 bits");
    let num_chunks = len.div_ceil(chunk);
    let workers = &mut bufs.workers[..pool.size()];
    for w in workers.iter_mut() {
        let buf = w.get_mut().unwrap_or_else(|e| e.into_inner());
        buf.items.clear();
        buf.outs.clear();
        buf.chunks.clear();
    }
    let next = AtomicUsize::new(0);
    let hits = AtomicUsize::new(0);
    let preferred = AtomicUsize::new(0);
    // Items of chunks claimed and not finished. While they could settle where the search
    // stops (were they all hits), a worker waits for one to finish instead of claiming a
    // chunk that would likely be thrown away; it stops once the finished chunks settle it.
    let in_flight = AtomicUsize::new(0);
    let workers = &*workers;
    pool.run(&|w| {
        let mut buf = lock(&workers[w]);
        let buf = &mut *buf;
        loop {
            let pending = in_flight.load(Ordering::Acquire);
            let done = Tally { hits: hits.load(Ordering::Acquire), preferred: preferred.load(Ordering::Acquire) };
            if goal.settled(done) {
                return;
            }
            if pending > 0 && goal.settled(Tally { hits: done.hits + pending, preferred: done.preferred + pending }) {
                wait_a_moment();
                continue;
            }
            let c = next.fetch_add(1, Ordering::AcqRel);
            if c >= num_chunks {
                return;
            }
            let size = ((c + 1) * chunk).min(len) - c * chunk;
            in_flight.fetch_add(size, Ordering::AcqRel);
            let mut emit =
                ChunkEmit { visitor, tally: Tally::default(), items: &mut buf.items, outs: &mut buf.outs, kept: 0 };
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
            let (tally, kept) = (emit.tally, emit.kept);
            buf.chunks.push((c as u32, buf.items.len() as u32, kept));
            hits.fetch_add(tally.hits, Ordering::AcqRel);
            preferred.fetch_add(tally.preferred, Ordering::AcqRel);
            in_flight.fetch_sub(size, Ordering::AcqRel);
        }
    });
    // Every claimed chunk finished; each worker holds its chunks in ascending order. Merge
    // them in chunk order, moving the outcomes out, and cut where the sequential search
    // stops (the rest drop).
    let claimed = next.load(Ordering::Acquire).min(num_chunks);
    let mut guards: SmallVec<[_; 16]> = workers.iter().map(lock).collect();
    let mut streams: SmallVec<[_; 16]> = guards
        .iter_mut()
        .map(|g| {
            let WorkerBuf { items, outs, chunks, .. } = &mut **g;
            (&chunks[..], 0usize, &items[..], outs.drain(..), 0usize)
        })
        .collect();
    let (mut tally, mut processed) = (Tally::default(), 0);
    'chunks: for c in 0..claimed {
        let Some((ends, next_end, items, outs, taken)) = streams
            .iter_mut()
            .find(|(ends, next_end, ..)| ends.get(*next_end).is_some_and(|&(cc, ..)| cc as usize == c))
        else {
            break;
        };
        let (_, end, mut kept) = ends[*next_end];
        let end = end as usize;
        *next_end += 1;
        let chunk_items = &items[*taken..end];
        *taken = end;
        let mut rest = chunk_items;
        while let Some(&first) = rest.first() {
            if first & KEPT != 0 {
                let Some(out) = outs.next() else { break 'chunks };
                kept -= 1;
                let class = visitor.hit(&out);
                if goal.drops(tally, class) {
                    break 'chunks;
                }
                tally.add(class);
                sink.take((first & !KEPT) as usize, out);
                processed += 1;
                rest = &rest[1..];
                if goal.stops_after(tally) {
                    break 'chunks;
                }
                continue;
            }
            // A run of plain outcomes, handed over at once up to where the goal is reached
            // (the rest of the chunk when none of it was kept: most chunks).
            let run =
                if kept == 0 { rest.len() } else { rest.iter().position(|&i| i & KEPT != 0).unwrap_or(rest.len()) };
            let Some(plain) = visitor.plain() else { break 'chunks };
            let class = visitor.hit(&plain);
            let take = run.min(goal.plain_to_take(tally, class));
            sink.take_plain(&rest[..take], || visitor.plain().unwrap_or_else(|| unreachable!("plain() is Some")));
            tally.add_n(class, take);
            processed += take;
            if take < run || goal.stops_after(tally) {
                break 'chunks;
            }
            rest = &rest[run..];
        }
    }
    processed
}
