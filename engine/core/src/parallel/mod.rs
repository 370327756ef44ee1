//! Filtering with sampling across workers.
//!
//! `num_feasible_nodes_to_find` says how many feasible nodes a cycle needs. `find_feasible_nodes`
//! visits nodes from a rotating start position in NodeTree order and stops once it has that
//! many. In parallel, the rotated node list is cut into chunks queued on a crossbeam
//! work-stealing `Injector`; workers steal chunks from it (FIFO, so claims happen in order),
//! and once the chunks finished so far hold enough feasible nodes no new chunk is stolen. Claimed chunks always form a prefix, so the result (the first K feasible nodes
//! in visiting order, the statuses of the nodes before the K-th, and the number processed) is
//! exactly what the sequential scan returns: parallelism never changes a decision.
//! (Upstream keeps whichever K nodes its goroutines found first, so its result varies from run
//! to run; ours is the deterministic equivalent.)

pub mod pool;

use crate::api::Sym;
use crate::framework::runtime::NodeStatuses;
use crate::framework::Status;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crossbeam::deque::{Injector, Steal};

use crate::sync::{lock, AtomicUsize, Mutex, Ordering};
pub use pool::WorkerPool;

/// Below this many nodes every node is checked.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never goes below this.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// How many feasible nodes to look for among `num_all_nodes`, given the profile's
/// percentageOfNodesToScore (`None`/0 = adaptive: 50% − nodes/125, at least 5%).
pub fn num_feasible_nodes_to_find(percentage: Option<u32>, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let mut pct = percentage.unwrap_or(0) as i64;
    if pct >= 100 {
        return num_all_nodes;
    }
    if pct == 0 {
        pct = (50 - num_all_nodes as i64 / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let n = (num_all_nodes as i64 * pct / 100) as usize;
    n.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// What a filter pass found. Reused across cycles so steady-state cycles do not allocate.
#[derive(Default)]
pub struct FilterOutput {
    /// Snapshot positions of the feasible nodes, in visiting order.
    pub feasible: Vec<u32>,
    /// Statuses of the rejected nodes visited before the search stopped.
    pub statuses: NodeStatuses,
    /// Nodes visited (feasible + rejected); the next cycle starts this far on.
    pub processed: usize,
    chunks: Vec<Mutex<ChunkOut>>,
}

#[derive(Default)]
struct ChunkOut {
    done: bool,
    /// (rotated offset, snapshot position)
    feasible: Vec<(u32, u32)>,
    statuses: Vec<(u32, u32, Status)>,
}

impl FilterOutput {
    fn clear(&mut self) {
        self.feasible.clear();
        self.statuses.clear();
        self.processed = 0;
    }

    /// Records the verdict on the node at `pos`; whether the search goes on (fewer than
    /// `want` feasible nodes so far).
    fn record(&mut self, pos: usize, st: Status, want: usize) -> bool {
        if st.is_success() {
            self.feasible.push(pos as u32);
        } else {
            self.statuses.entries.push((pos as u32, st));
        }
        self.processed += 1;
        self.feasible.len() < want
    }
}

/// The filter pass when PreFilter named the only nodes the pod can go to: just those that
/// exist, visited in snapshot order from the rotating `start` (as the full search would meet
/// them), until `want_of(how many there are)` are feasible.
pub fn find_feasible_among(
    names: &[Sym],
    snapshot: &Snapshot,
    start: usize,
    want_of: &dyn Fn(usize) -> usize,
    check: &dyn Fn(usize, &NodeInfo) -> Status,
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
        if !out.record(pos, check(pos, info), want) {
            break;
        }
    }
}

/// Visits nodes from `start`, calling `check(position, node)` on each, until `want` feasible nodes are found
/// or every node was visited. `pool: None` (or a pool of one) scans sequentially.
pub fn find_feasible_nodes(
    pool: Option<&WorkerPool>,
    snapshot: &Snapshot,
    start: usize,
    want: usize,
    check: &(dyn Fn(usize, &NodeInfo) -> Status + Sync),
    out: &mut FilterOutput,
) {
    out.clear();
    let n = snapshot.num_nodes();
    if n == 0 || want == 0 {
        return;
    }
    let start = start % n;
    match pool {
        Some(p) if p.size() > 1 && n > 2 * MIN_CHUNK => parallel(p, snapshot, start, want, check, out),
        _ => sequential(snapshot, start, want, check, out),
    }
}

fn sequential(
    snapshot: &Snapshot,
    start: usize,
    want: usize,
    check: &(dyn Fn(usize, &NodeInfo) -> Status + Sync),
    out: &mut FilterOutput,
) {
    let n = snapshot.num_nodes();
    let mut visit = |pos: usize, node: &std::sync::Arc<NodeInfo>| out.record(pos, check(pos, node), want);
    if snapshot.for_each_in_while(start, n, &mut visit) {
        snapshot.for_each_in_while(0, start, &mut visit);
    }
}

const MIN_CHUNK: usize = 16;
const MAX_CHUNK: usize = 256;

fn parallel(
    pool: &WorkerPool,
    snapshot: &Snapshot,
    start: usize,
    want: usize,
    check: &(dyn Fn(usize, &NodeInfo) -> Status + Sync),
    out: &mut FilterOutput,
) {
    let n = snapshot.num_nodes();
    let chunk = (n / (pool.size() * 8)).clamp(MIN_CHUNK, MAX_CHUNK);
    let num_chunks = n.div_ceil(chunk);
    while out.chunks.len() < num_chunks {
        out.chunks.push(Mutex::new(ChunkOut::default()));
    }
    for c in &out.chunks[..num_chunks] {
        let mut c = lock(c);
        c.done = false;
        c.feasible.clear();
        c.statuses.clear();
    }
    let injector = Injector::new();
    for c in 0..num_chunks {
        injector.push(c);
    }
    let found = AtomicUsize::new(0);
    let chunks = &out.chunks[..num_chunks];
    pool.run(&|_worker| loop {
        if found.load(Ordering::Acquire) >= want {
            return;
        }
        let c = match injector.steal() {
            Steal::Success(c) => c,
            Steal::Retry => continue,
            Steal::Empty => return,
        };
        let mut slot = lock(&chunks[c]);
        let lo = c * chunk;
        let hi = ((c + 1) * chunk).min(n);
        let mut visit = |offset: usize, pos: usize, node: &NodeInfo| {
            let st = check(pos, node);
            if st.is_success() {
                slot.feasible.push((offset as u32, pos as u32));
            } else {
                slot.statuses.push((offset as u32, pos as u32, st));
            }
        };
        // Rotated offsets lo..hi map to positions (start + offset) % n: at most two runs.
        let first_lo = start + lo;
        if first_lo < n {
            let first_hi = (start + hi).min(n);
            snapshot.for_each_in(first_lo, first_hi, |pos, node| visit(pos - start, pos, node));
            if start + hi > n {
                snapshot.for_each_in(0, start + hi - n, |pos, node| visit(pos + n - start, pos, node));
            }
        } else {
            snapshot.for_each_in(first_lo - n, start + hi - n, |pos, node| visit(pos + n - start, pos, node));
        }
        slot.done = true;
        let k = slot.feasible.len();
        drop(slot);
        found.fetch_add(k, Ordering::AcqRel);
    });
    // Merge the finished prefix of chunks in order, exactly as the sequential scan would.
    let mut cutoff = n as u32; // rotated offset of the want-th feasible node, if reached
    for c in chunks {
        let c = lock(c);
        if !c.done {
            break;
        }
        for &(offset, pos) in &c.feasible {
            if out.feasible.len() < want {
                out.feasible.push(pos);
                if out.feasible.len() == want {
                    cutoff = offset;
                }
            }
        }
        if cutoff != n as u32 {
            break;
        }
    }
    for c in chunks {
        let mut c = lock(c);
        if !c.done {
            break;
        }
        for (offset, pos, st) in c.statuses.drain(..) {
            if offset < cutoff {
                out.statuses.entries.push((pos, st));
            }
        }
    }
    out.processed = if cutoff == n as u32 { n } else { cutoff as usize + 1 };
}

#[cfg(test)]
mod tests;
