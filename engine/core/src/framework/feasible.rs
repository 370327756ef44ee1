//! The filter pass: which nodes fit, visiting nodes from a rotating start as upstream's
//! findNodesThatPassFilters does with one worker: it keeps the first
//! `num_feasible_nodes_to_find` feasible nodes, then goes on to the next node that passes,
//! which it filters but drops (neither kept nor counted), recording and counting the
//! rejected nodes met on the way. The next cycle starts at the dropped node. It runs on the
//! generic ordered search (`parallel::search`), so it gives this one-worker result on any
//! number of workers. (Upstream with several workers keeps whichever nodes its goroutines
//! found first, so its result varies from run to run; ours is its one-worker result.)

use std::cell::OnceCell;

use crate::api::Sym;
use crate::framework::runtime::NodeStatuses;
use crate::framework::{RowJudged, Verdict};
use crate::parallel::search::{search_into, Emit, Goal, Hit, SearchBuffers, Sink, Visitor};
use crate::parallel::WorkerPool;
use crate::snapshot::columns::CHUNK;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

/// The pool is woken only when a cycle looks for at least this many feasible nodes: below
/// it, waking a worker and merging its outcomes cost more than the share of the nodes it
/// would filter. Measured on 2 cores with scoring on the pool too (perf/RESULTS.md, issue
/// 18): 2 workers against 1 at 20,000 nodes (1,000 wanted) 0.99×, at 30,000 (1,500) 1.16×,
/// at 40,000 (2,000) 1.15×, at 50,000 (2,500) 1.36× (medians).
pub const POOL_MIN_NODES_TO_FIND: usize = 2000;

/// What a filter pass found. Reused across cycles so steady-state cycles do not allocate.
#[derive(Default)]
pub struct FilterOutput {
    /// Snapshot positions of the feasible nodes, in visiting order.
    pub feasible: Vec<u32>,
    /// Statuses of the rejected nodes visited before the search stopped.
    pub statuses: NodeStatuses,
    /// Nodes recorded (feasible + rejected: upstream's processed nodes, not counting the
    /// passing node it dropped); the next cycle starts this far on.
    pub processed: usize,
    search: SearchBuffers<Verdict, Vec<RowJudged>>,
}

impl FilterOutput {
    fn clear(&mut self) {
        self.feasible.clear();
        self.statuses.clear();
        self.processed = 0;
    }

    /// Whether the pass recorded the node at `pos` (feasible or rejected). Linear: for the
    /// rare check of a nominated node, not per node.
    pub fn recorded(&self, pos: u32) -> bool {
        self.feasible.contains(&pos) || self.statuses.positions().any(|p| p == pos)
    }

    #[inline]
    fn record(feasible: &mut Vec<u32>, statuses: &mut NodeStatuses, pos: usize, v: Verdict) {
        if v.is_success() {
            feasible.push(pos as u32);
        } else {
            statuses.push_verdict(pos as u32, v);
        }
    }
}

/// The nodes a cycle scores. From a filter pass they are snapshot positions, and their
/// NodeInfos are looked up only when something reads them as a slice (through `Deref`):
/// when every scoring plugin reads the columns, no NodeInfo is touched after filtering.
pub struct Feasible<'a> {
    src: FeasibleSrc<'a>,
    infos: OnceCell<Vec<&'a NodeInfo>>,
}

enum FeasibleSrc<'a> {
    Positions(&'a Snapshot, &'a [u32]),
    Nodes(&'a [&'a NodeInfo]),
}

impl<'a> Feasible<'a> {
    /// The snapshot's nodes at `positions` (every position must be in the snapshot).
    pub fn at(snapshot: &'a Snapshot, positions: &'a [u32]) -> Feasible<'a> {
        Feasible { src: FeasibleSrc::Positions(snapshot, positions), infos: OnceCell::new() }
    }

    /// Nodes given as NodeInfos (their positions unknown: plugins score them node by node).
    pub fn nodes(nodes: &'a [&'a NodeInfo]) -> Feasible<'a> {
        Feasible { src: FeasibleSrc::Nodes(nodes), infos: OnceCell::new() }
    }

    /// The nodes' snapshot positions, when known.
    pub fn positions(&self) -> Option<&'a [u32]> {
        match self.src {
            FeasibleSrc::Positions(_, p) => Some(p),
            FeasibleSrc::Nodes(_) => None,
        }
    }

    /// How many nodes there are (without looking any up).
    pub fn len(&self) -> usize {
        match self.src {
            FeasibleSrc::Positions(_, p) => p.len(),
            FeasibleSrc::Nodes(n) => n.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the NodeInfos were looked up as a slice.
    pub fn looked_up(&self) -> bool {
        matches!(self.src, FeasibleSrc::Nodes(_)) || self.infos.get().is_some()
    }

    /// The `i`th node, looked up alone.
    pub fn get(&self, i: usize) -> Option<&'a NodeInfo> {
        match self.src {
            FeasibleSrc::Positions(snap, p) => p.get(i).and_then(|&pos| snap.node_at(pos as usize)).map(|a| &**a),
            FeasibleSrc::Nodes(n) => n.get(i).copied(),
        }
    }
}

impl<'a> std::ops::Deref for Feasible<'a> {
    type Target = [&'a NodeInfo];

    fn deref(&self) -> &[&'a NodeInfo] {
        match self.src {
            FeasibleSrc::Nodes(n) => n,
            FeasibleSrc::Positions(snap, p) => self
                .infos
                .get_or_init(|| p.iter().filter_map(|&pos| snap.node_at(pos as usize).map(|a| &**a)).collect()),
        }
    }
}

/// How the filter pass judges blocks of rows (each within one column chunk) from the
/// snapshot's columns.
pub trait RowsJudge: Sync {
    /// Judges the rows `lo..lo + judged.len()` where it can (`RowJudged::Node` where the
    /// node-by-node check must), all passing on entry.
    fn judge(&self, lo: usize, judged: &mut [RowJudged]);

    /// Whether every row of `lo..hi` passes, told without judging them one by one (from the
    /// chunk's `Floors`); `judge` is then not called on them. `false` is always safe.
    fn pass_whole(&self, _lo: usize, _hi: usize) -> bool {
        false
    }
}

pub type RowsCheck<'a> = &'a dyn RowsJudge;

struct FilterVisitor<'a> {
    snapshot: &'a Snapshot,
    check: &'a (dyn Fn(usize, &NodeInfo) -> Verdict + Sync),
    rows: Option<RowsCheck<'a>>,
}

impl Visitor for FilterVisitor<'_> {
    type Out = Verdict;
    type Scratch = Vec<RowJudged>;

    #[inline]
    fn visit<E: Emit<Verdict>>(&self, judged: &mut Vec<RowJudged>, lo: usize, hi: usize, emit: &mut E) -> bool {
        let Some(rows) = self.rows else {
            return self.snapshot.for_each_in_while(lo, hi, |pos, node| emit.one(pos, (self.check)(pos, node)));
        };
        // A block at a time, up to the next column chunk: each filter judges the block in
        // one call, and only the rows left to the node-by-node check read their node.
        let mut b = lo;
        while b < hi {
            let e = hi.min((b / CHUNK + 1) * CHUNK);
            if rows.pass_whole(b, e) {
                if !emit.plain_run(b, e) {
                    return false;
                }
                b = e;
                continue;
            }
            if e < hi {
                self.snapshot.columns().prefetch(e, hi.min(e + CHUNK));
            }
            judged.clear();
            judged.resize(e - b, RowJudged::Pass);
            rows.judge(b, judged);
            // Runs of passes go as one; the other rows one by one.
            let mut i = 0;
            while i < judged.len() {
                let run = judged[i..].iter().position(|j| !matches!(j, RowJudged::Pass)).unwrap_or(judged.len() - i);
                if run > 0 {
                    if !emit.plain_run(b + i, b + i + run) {
                        return false;
                    }
                    i += run;
                    continue;
                }
                let pos = b + i;
                let v = match judged[i] {
                    RowJudged::Pass => Verdict::Pass,
                    RowJudged::Fail(plugin, fail) => {
                        // Rows failing one filter alike go as one run (a cycle where no node
                        // fits fails thousands of them).
                        let alike = |j: &RowJudged| matches!(j, RowJudged::Fail(p, f) if std::ptr::eq(*p, plugin) && f.same(&fail));
                        let run = judged[i..].iter().position(|j| !alike(j)).unwrap_or(judged.len() - i);
                        if !emit.miss_run(pos, pos + run, || Verdict::Brief(plugin, fail)) {
                            return false;
                        }
                        i += run;
                        continue;
                    }
                    RowJudged::Node => match self.snapshot.node_at(pos) {
                        Some(node) => (self.check)(pos, node),
                        None => {
                            i += 1;
                            continue;
                        }
                    },
                };
                if !emit.one(pos, v) {
                    return false;
                }
                i += 1;
            }
            b = e;
        }
        true
    }

    #[inline]
    fn hit(&self, st: &Verdict) -> Hit {
        if st.is_success() {
            Hit::Hit
        } else {
            Hit::Miss
        }
    }

    fn plain(&self) -> Option<Verdict> {
        Some(Verdict::Pass)
    }

    #[inline]
    fn is_plain(&self, v: &Verdict) -> bool {
        matches!(v, Verdict::Pass)
    }

    /// About 8 chunks per worker, 16 to 256 nodes.
    fn chunk(&self, nodes: usize, workers: usize) -> usize {
        (nodes / (workers * 8)).clamp(16, 256)
    }
}

/// The filter pass when PreFilter named the only nodes the pod can go to: just those that
/// exist, visited in snapshot order from the rotating `start` (as the full search would meet
/// them), with the full pass's stop rule: `want_of(how many there are)` feasible nodes kept,
/// then on to the next passing node, which is dropped. (Upstream visits the names in Go map
/// order, which is random; this order is the deterministic one a full pass would take.)
pub fn find_feasible_among(
    names: &[Sym],
    snapshot: &Snapshot,
    start: usize,
    want_of: &dyn Fn(usize) -> usize,
    check: &dyn Fn(usize, &NodeInfo) -> Verdict,
    out: &mut FilterOutput,
) {
    out.clear();
    let mut candidates: Vec<usize> = names.iter().filter_map(|&name| snapshot.position(name)).collect();
    candidates.sort_unstable();
    let first = candidates.partition_point(|&p| p < start);
    candidates.rotate_left(first);
    let want = want_of(candidates.len());
    if want == 0 {
        return;
    }
    for pos in candidates {
        let Some(info) = snapshot.node_at(pos) else { continue };
        let verdict = check(pos, info);
        if verdict.is_success() && out.feasible.len() >= want {
            break;
        }
        FilterOutput::record(&mut out.feasible, &mut out.statuses, pos, verdict);
        out.processed += 1;
    }
}

/// Visits nodes from `start`, calling `check(position, node)` on each, until it has `want`
/// feasible nodes and meets one more (dropped, see the module docs), or every node was
/// visited. The pool is used when there is one and `want` is at least
/// `POOL_MIN_NODES_TO_FIND`; the result is the same either way. With `rows`, nodes are
/// judged a block at a time from the columns first, and `check` runs on the rows it leaves
/// (it must give the same verdicts `check` would).
pub fn find_feasible_nodes(
    pool: Option<&WorkerPool>,
    snapshot: &Snapshot,
    start: usize,
    want: usize,
    check: &(dyn Fn(usize, &NodeInfo) -> Verdict + Sync),
    rows: Option<RowsCheck<'_>>,
    out: &mut FilterOutput,
) {
    let pool = pool.filter(|_| want >= POOL_MIN_NODES_TO_FIND);
    find_feasible_nodes_from(pool, snapshot, start, want, check, rows, out)
}

/// `find_feasible_nodes` on `pool` whatever `want` is (tests and measurements).
pub fn find_feasible_nodes_from(
    pool: Option<&WorkerPool>,
    snapshot: &Snapshot,
    start: usize,
    want: usize,
    check: &(dyn Fn(usize, &NodeInfo) -> Verdict + Sync),
    rows: Option<RowsCheck<'_>>,
    out: &mut FilterOutput,
) {
    out.clear();
    let n = snapshot.num_nodes();
    // Rows past the columns (there are none: the columns' invariant) are not batched.
    let rows = rows.filter(|_| snapshot.columns().len() >= n);
    let visitor = FilterVisitor { snapshot, check, rows };
    let FilterOutput { feasible, statuses, processed, search: bufs } = out;
    let mut sink = Record { feasible, statuses };
    *processed = search_into(pool, &visitor, n, start, Goal::hits_dropping_next(want), bufs, &mut sink);
}

/// Records the pass's verdicts: feasible positions, and the statuses of the others.
struct Record<'o> {
    feasible: &'o mut Vec<u32>,
    statuses: &'o mut NodeStatuses,
}

impl Sink<Verdict> for Record<'_> {
    #[inline]
    fn take(&mut self, pos: usize, v: Verdict) {
        FilterOutput::record(self.feasible, self.statuses, pos, v)
    }

    /// Plain verdicts are passes.
    fn take_plain(&mut self, positions: &[u32], _: impl Fn() -> Verdict) {
        self.feasible.extend_from_slice(positions);
    }

    fn take_plain_range(&mut self, lo: usize, hi: usize, _: impl Fn() -> Verdict) {
        self.feasible.extend(lo as u32..hi as u32);
    }

    fn take_run(&mut self, lo: usize, hi: usize, out: impl Fn() -> Verdict) {
        match out() {
            Verdict::Brief(plugin, fail) => self.statuses.push_brief_run(lo as u32..hi as u32, plugin, fail),
            _ => (lo..hi).for_each(|i| self.take(i, out())),
        }
    }
}

#[cfg(test)]
mod tests;
