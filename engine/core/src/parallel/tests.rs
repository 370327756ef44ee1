use proptest::prelude::*;

use super::search::{search, search_into, Emit, Goal, Hit, SearchBuffers, Sink, Visitor};
use super::*;

#[test]
fn num_feasible_nodes_to_find_table() {
    // (percentage, nodes, want)
    let cases: &[(Option<u32>, usize, usize)] = &[
        (None, 0, 0),
        (None, 50, 50),
        (None, 99, 99),
        (None, 100, 100),   // 50 - 0 = 50% of 100 = 50 → at least 100
        (None, 101, 100),   // 50% of 101 = 50 → at least 100
        (None, 150, 100),   // sampled-a: 50 - 1 = 49% of 150 = 73 → at least 100
        (None, 381, 179),   // the held-back trace-based sampled case: 50 - 3 = 47% of 381
        (None, 1000, 420),  // 50 - 8 = 42%
        (None, 5000, 500),  // 50 - 40 = 10%
        (None, 10000, 500), // 50 - 80 → 5% floor
        (None, 100000, 5000),
        (Some(0), 5000, 500),
        (Some(30), 5000, 1500),
        (Some(1), 5000, 100), // floored at 100 nodes
        (Some(100), 5000, 5000),
        (Some(150), 5000, 5000),
        (Some(50), 99, 99),
    ];
    for &(pct, n, want) in cases {
        assert_eq!(num_feasible_nodes_to_find(pct, n), want, "percentage {pct:?}, {n} nodes");
    }
}

/// Items classified by a table: 0 a miss, 1 a hit, 2 a preferred hit. The outcome is the
/// item itself, except for items of the plain kind (when there is one): `None`, which the
/// workers keep as the item alone. The scratch counts the items a worker visited.
struct Table(Vec<u8>, usize, Option<u8>);

fn class(kind: u8) -> Hit {
    match kind {
        0 => Hit::Miss,
        1 => Hit::Hit,
        _ => Hit::Preferred,
    }
}

impl Visitor for Table {
    type Out = Option<usize>;
    type Scratch = usize;

    /// Items of the plain kind go as runs (`plain_run`), the others one by one.
    fn visit<E: Emit<Option<usize>>>(&self, seen: &mut usize, lo: usize, hi: usize, emit: &mut E) -> bool {
        let mut i = lo;
        while i < hi {
            if Some(self.0[i]) == self.2 {
                let end = (i..hi).find(|&j| Some(self.0[j]) != self.2).unwrap_or(hi);
                *seen += end - i;
                if !emit.plain_run(i, end) {
                    return false;
                }
                i = end;
                continue;
            }
            *seen += 1;
            if !emit.one(i, Some(i)) {
                return false;
            }
            i += 1;
        }
        true
    }

    fn hit(&self, out: &Option<usize>) -> Hit {
        match *out {
            Some(i) => class(self.0[i]),
            None => class(self.2.expect("plain outcomes only with a plain kind")),
        }
    }

    fn plain(&self) -> Option<Option<usize>> {
        self.2.map(|_| None)
    }

    fn is_plain(&self, out: &Option<usize>) -> bool {
        self.2.is_some() && out.is_none()
    }

    fn chunk(&self, _: usize, _: usize) -> usize {
        self.1
    }
}

/// The model: the rotated list, cut after the item that reaches the goal; or, for a goal that
/// drops the next hit, cut before the first hit met once the goal is reached.
fn model(kinds: &[u8], start: usize, goal: Goal) -> Vec<usize> {
    let n = kinds.len();
    let (mut hits, mut preferred, mut out) = (0, 0, Vec::new());
    let reached = |hits: usize, preferred: usize| hits >= goal.hits && preferred >= goal.preferred;
    if n == 0 || (!goal.drops_next_hit() && reached(0, 0)) {
        return out;
    }
    for k in 0..n {
        let i = (start + k) % n;
        if goal.drops_next_hit() && kinds[i] > 0 && reached(hits, preferred) {
            break;
        }
        out.push(i);
        hits += usize::from(kinds[i] > 0);
        preferred += usize::from(kinds[i] == 2);
        if !goal.drops_next_hit() && reached(hits, preferred) {
            break;
        }
    }
    out
}

/// Collects the items, checking each outcome; runs of plain outcomes arrive at once.
struct Collect<'k> {
    kinds: &'k [u8],
    plain: Option<u8>,
    got: Vec<usize>,
}

impl Sink<Option<usize>> for Collect<'_> {
    fn take(&mut self, i: usize, out: Option<usize>) {
        match out {
            Some(o) => assert_eq!(o, i),
            None => assert_eq!(Some(self.kinds[i]), self.plain, "item {i} is not of the plain kind"),
        }
        self.got.push(i);
    }

    fn take_plain(&mut self, items: &[u32], plain: impl Fn() -> Option<usize>) {
        assert_eq!(plain(), None);
        for &i in items {
            assert_eq!(Some(self.kinds[i as usize]), self.plain, "item {i} is not of the plain kind");
            self.got.push(i as usize);
        }
    }
}

fn run_search(pool: Option<&WorkerPool>, kinds: &[u8], start: usize, goal: Goal, chunk: usize) -> Vec<usize> {
    run_search_plain(pool, kinds, start, goal, chunk, None)
}

fn run_search_plain(
    pool: Option<&WorkerPool>,
    kinds: &[u8],
    start: usize,
    goal: Goal,
    chunk: usize,
    plain: Option<u8>,
) -> Vec<usize> {
    let mut bufs = SearchBuffers::default();
    let table = Table(kinds.to_vec(), chunk, plain);
    let mut sink = Collect { kinds, plain, got: Vec::new() };
    let processed = search_into(pool, &table, kinds.len(), start, goal, &mut bufs, &mut sink);
    assert_eq!(processed, sink.got.len());
    sink.got
}

#[test]
fn search_sequential_wraps_and_stops_at_the_goal() {
    // Items 0..6 from 4: 4(miss) 5(hit) 0(miss) 1(preferred) → two hits, one preferred.
    let kinds = [0, 2, 1, 1, 0, 1];
    assert_eq!(run_search(None, &kinds, 4, Goal::with_preferred(2, 1), 1), [4, 5, 0, 1]);
    // Two hits without a preference stop at the second hit.
    assert_eq!(run_search(None, &kinds, 4, Goal::hits(2), 1), [4, 5, 0, 1]);
    assert_eq!(run_search(None, &kinds, 2, Goal::hits(2), 1), [2, 3]);
    // A goal never reached visits everything once.
    assert_eq!(run_search(None, &kinds, 3, Goal::with_preferred(1, 2), 1), [3, 4, 5, 0, 1, 2]);
    assert!(run_search(None, &kinds, 3, Goal::hits(0), 1).is_empty());
    assert!(run_search(None, &[], 3, Goal::hits(1), 1).is_empty());
}

#[test]
fn search_dropping_the_next_hit_takes_the_misses_before_it() {
    // Items 0..8 from 6: 6(miss) 7(hit) 0(miss) 1(miss) 2(hit) 3(miss) 4(hit) 5(hit).
    let kinds = [0, 0, 1, 0, 1, 1, 0, 1];
    // One hit wanted: 7, then the misses 0 and 1; hit 2 is dropped.
    assert_eq!(run_search(None, &kinds, 6, Goal::hits_dropping_next(1), 1), [6, 7, 0, 1]);
    // Two: up to 3; hit 4 is dropped.
    assert_eq!(run_search(None, &kinds, 6, Goal::hits_dropping_next(2), 1), [6, 7, 0, 1, 2, 3]);
    // The goal is reached on the last item: nothing left to drop.
    assert_eq!(run_search(None, &kinds, 0, Goal::hits_dropping_next(4), 1), [0, 1, 2, 3, 4, 5, 6, 7]);
    // Never reached: every item.
    assert_eq!(run_search(None, &kinds, 3, Goal::hits_dropping_next(9), 1).len(), 8);
    // None wanted: the misses up to the first hit.
    assert_eq!(run_search(None, &kinds, 6, Goal::hits_dropping_next(0), 1), [6]);
    // On a pool, with hits handed over as runs of plain outcomes, the same.
    let pool = WorkerPool::new(2);
    for chunk in [1, 2, 3, 8] {
        for want in 0..6 {
            let goal = Goal::hits_dropping_next(want);
            let expected = model(&kinds, 6, goal);
            assert_eq!(run_search(Some(&pool), &kinds, 6, goal, chunk), expected, "want {want} chunk {chunk}");
            assert_eq!(run_search_plain(Some(&pool), &kinds, 6, goal, chunk, Some(1)), expected);
            assert_eq!(run_search_plain(None, &kinds, 6, goal, chunk, Some(1)), expected);
        }
    }
}

#[test]
fn search_on_pool_reuses_buffers_across_searches() {
    let pool = WorkerPool::new(2);
    let mut bufs = SearchBuffers::default();
    let table = Table((0..2000).map(|i| u8::from(i % 3 == 0)).collect(), 16, None);
    for start in [0, 1999, 1000] {
        let mut got = Vec::new();
        search(Some(&pool), &table, 2000, start, Goal::hits(300), &mut bufs, |i, _| got.push(i));
        assert_eq!(got, model(&table.0, start, Goal::hits(300)), "start {start}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// The search on a pool returns exactly the model's outcomes, in order, for any items,
    /// start, goal (stopping at it or dropping the next hit) and chunk size; so does the
    /// sequential search.
    #[test]
    fn search_parallel_equals_sequential_model(
        // Runs of one kind are common, so goals are reached inside runs of plain outcomes.
        kinds in prop::collection::vec(prop_oneof![2 => Just(0u8), 5 => Just(1u8), 1 => Just(2u8)], 0..400),
        start in 0usize..500,
        hits in 0usize..120,
        preferred in 0usize..3,
        chunk in 1usize..40,
        workers in 2usize..5,
        plain in prop::option::of(prop_oneof![1 => Just(0u8), 3 => Just(1u8), 1 => Just(2u8)]),
        drop_next in any::<bool>(),
    ) {
        let goal = if drop_next { Goal::hits_dropping_next(hits) } else { Goal::with_preferred(hits, preferred) };
        let pool = WorkerPool::new(workers);
        let want = model(&kinds, start, goal);
        prop_assert_eq!(&run_search(None, &kinds, start, goal, chunk), &want);
        prop_assert_eq!(&run_search(Some(&pool), &kinds, start, goal, chunk), &want);
        // Outcomes of one kind kept as items alone and handed over in runs.
        prop_assert_eq!(&run_search_plain(Some(&pool), &kinds, start, goal, chunk, plain), &want);
        prop_assert_eq!(&run_search_plain(None, &kinds, start, goal, chunk, plain), &want);
    }
}

/// Items 0..len, every one a hit; the visit of the first chunk (the one starting at the
/// search's start) holds on until a second chunk has been claimed by another worker, so the
/// chunks of one search are always spread over two workers: worker 0 holds chunk 0 and later
/// ones, another worker holds chunk 1. Only a merge in chunk order gives the model's result.
struct Handshake {
    start: usize,
    claimed: std::sync::atomic::AtomicUsize,
    threads: std::sync::Mutex<Vec<std::thread::ThreadId>>,
}

impl Visitor for Handshake {
    type Out = usize;
    type Scratch = ();

    fn visit<E: Emit<usize>>(&self, _: &mut (), lo: usize, hi: usize, emit: &mut E) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        let me = std::thread::current().id();
        {
            let mut t = self.threads.lock().unwrap();
            if !t.contains(&me) {
                t.push(me);
            }
        }
        self.claimed.fetch_add(1, SeqCst);
        if lo == self.start {
            // Bounded: on a machine that runs the pool's threads one at a time the search
            // still completes (and the merge order is then not exercised).
            for _ in 0..2_000_000 {
                if self.claimed.load(SeqCst) >= 2 {
                    break;
                }
                std::thread::yield_now();
            }
        }
        for i in lo..hi {
            if !emit.one(i, i) {
                return false;
            }
        }
        true
    }

    fn hit(&self, _: &usize) -> Hit {
        Hit::Hit
    }

    fn chunk(&self, _: usize, _: usize) -> usize {
        8
    }
}

#[test]
fn search_on_pool_merges_chunks_of_two_workers_in_visiting_order() {
    let pool = WorkerPool::new(2);
    let mut bufs = SearchBuffers::default();
    let mut spread = 0;
    for start in [0usize, 5, 90] {
        let v = Handshake { start, claimed: 0.into(), threads: Default::default() };
        let mut got = Vec::new();
        let processed = search(Some(&pool), &v, 100, start, Goal::hits(60), &mut bufs, |i, _| got.push(i));
        let want: Vec<usize> = (0..60).map(|k| (start + k) % 100).collect();
        assert_eq!(got, want, "start {start}");
        assert_eq!(processed, 60);
        spread += usize::from(v.threads.lock().unwrap().len() >= 2);
    }
    // Where the pool has two threads, the chunks really were spread (else the test proves
    // nothing about the merge).
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        assert!(spread > 0, "no search ran on two workers");
    }
}

#[test]
fn search_on_pool_cuts_runs_of_plain_outcomes_at_the_goal() {
    let pool = WorkerPool::new(2);
    // (kinds, plain kind, goal): the goal is reached inside a run of plain outcomes.
    let cases: &[(&[u8], u8, Goal)] = &[
        (&[1; 40], 1, Goal::hits(5)),
        (&[2; 40], 2, Goal::with_preferred(1, 3)),
        (&[2; 40], 2, Goal::with_preferred(7, 3)),
        (&[1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 1, Goal::with_preferred(9, 1)),
        (&[0; 40], 0, Goal::hits(1)),
    ];
    for &(kinds, plain, goal) in cases {
        for chunk in [1, 3, 4, 8] {
            let want = model(kinds, 0, goal);
            assert_eq!(
                run_search_plain(Some(&pool), kinds, 0, goal, chunk, Some(plain)),
                want,
                "{goal:?} chunk {chunk}"
            );
            assert_eq!(run_search_plain(None, kinds, 0, goal, chunk, Some(plain)), want, "{goal:?}, 1 worker");
        }
    }
}
