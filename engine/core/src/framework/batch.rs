//! OpportunisticBatching (KEP-5598, beta, on in v1.35): a pod may take the next node of the
//! previous pod's ranking instead of a full filter and score pass.
//!
//! The rule, as upstream v1.35 applies it per profile:
//!
//! - A profile batches only when it has no extender and every plugin of its PreFilter,
//!   Filter, PreScore and Score points signs pods (`Plugin::signs_pods`); a pod is batched
//!   only when it has a signature (`signature`).
//! - A cycle that scored its feasible nodes keeps their ranking (upstream's score heap, the
//!   chosen node popped) with the pod's signature, when the pod has one and nodes remain. A
//!   cycle that took its only feasible node, or a nominated node, keeps none. A cycle whose
//!   pod took the hint it was given keeps the ranking as it is (the hint already popped).
//! - The next cycle's pod gets a hint, the ranking's next node, when: it is the very next
//!   scheduling cycle (no other pod popped in between, failed or of another profile), the
//!   previous cycle chose a node, the pod's signature is the kept one, the ranking is at most
//!   `MAX_AGE` old on the scheduler's clock, and the node the previous pod took still exists
//!   and now rejects this pod (so the previous pod filled it: a node that still fits could
//!   rank anywhere, and the ranking cannot say where). Otherwise the ranking is dropped.
//! - A hinted pod tries the hint first, like a nominated node, against the filters alone
//!   (with the nominated pods there): when it passes, the pod takes it unscored and the
//!   rotating start of the filter pass does not move; when it fails, the full pass runs (the
//!   hint counts as one processed node) and keeps a new ranking. A pod with a nominated node
//!   tries that node instead, but its hint is used up all the same.
//!
//! So with the gate on a pod may land elsewhere than with it off: its hint is not rescored
//! (scores normalized over a feasible set that has lost the previous pod's node may rank the
//! rest differently), and the sampled filter pass is skipped (other nodes are not sampled).
//!
//! The ranking's order is exactly upstream's: Go's binary heap over the scored nodes in the
//! order the filter pass found them, by total score alone (every tie-breaker is zero without
//! extenders), popped one node at a time. `Ranking` builds and pops that heap.
//!
//! Time is the scheduler's clock; upstream measures wall time, in which its own cycles take
//! some. Where the simulation charges each attempt simulated time (workload files: 1 ms, about
//! upstream's cost), a ranking serves about 500 pods, as upstream's would at that speed; where
//! attempts take none (simulate, replay), a ranking expires only when the clock moves otherwise
//! (a trace's gap, a jump to a backoff expiry).

use std::time::Duration;

use super::signature::PodSignature;
use crate::api::Sym;
use crate::util::time::Timestamp;

/// How long a kept ranking may serve hints (upstream's maxBatchAge).
pub const MAX_AGE: Duration = Duration::from_millis(500);

/// Nodes by total score, as upstream's score heap pops them: the highest total first, ties
/// in the order Go's `container/heap` leaves them when every tie-breaker is equal.
#[derive(Clone, Debug, Default)]
pub struct Ranking {
    heap: Vec<(i64, Sym)>,
}

impl Ranking {
    /// Builds the heap over `nodes` (total, node) in found order (Go's `heap.Init`).
    pub fn build(&mut self, nodes: impl IntoIterator<Item = (i64, Sym)>) {
        self.heap.clear();
        self.heap.extend(nodes);
        let n = self.heap.len();
        for i in (0..n / 2).rev() {
            self.sift_down(i, n);
        }
    }

    /// Takes the highest-ranked node (Go's `heap.Pop`).
    pub fn pop(&mut self) -> Option<Sym> {
        let last = self.heap.len().checked_sub(1)?;
        self.heap.swap(0, last);
        self.sift_down(0, last);
        self.heap.pop().map(|(_, node)| node)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// `a` comes before `b`: a strictly higher total.
    fn before(&self, a: usize, b: usize) -> bool {
        self.heap[a].0 > self.heap[b].0
    }

    /// Moves the entry at `i` down within the first `n` until neither child comes before it;
    /// of two children the right one is taken only when it comes strictly before the left.
    fn sift_down(&mut self, mut i: usize, n: usize) {
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.before(right, left) { right } else { left };
            if !self.before(child, i) {
                break;
            }
            self.heap.swap(i, child);
            i = child;
        }
    }
}

/// A profile's batching state (upstream's OpportunisticBatch, one per profile).
#[derive(Debug, Default)]
pub struct Batch {
    /// The kept ranking and the signature it serves, when a cycle kept one.
    kept: Option<Kept>,
    /// The scheduling cycle that last chose a node, and that node.
    last: Option<(u64, Sym)>,
    /// A dropped ranking's storage, reused by the next one.
    spare: Ranking,
    /// Pods that took the hint they were given.
    hinted: u64,
}

#[derive(Debug)]
struct Kept {
    signature: PodSignature,
    ranking: Ranking,
    since: Timestamp,
}

/// Why a pod of the given signature got no hint; `None` when it got one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoHint {
    /// No ranking kept (or it is used up).
    Empty,
    /// Another pod's cycle ran since the ranking was kept (or that cycle chose no node).
    CycleSkipped,
    /// The pod's signature is not the ranking's (or the pod has none).
    OtherSignature,
    /// The ranking is older than `MAX_AGE`.
    Expired,
    /// The node the previous pod took is gone.
    NodeGone,
    /// The node the previous pod took still does not reject this pod.
    NodeNotFull,
}

impl Batch {
    /// How many pods took the hint they were given.
    pub fn hinted(&self) -> u64 {
        self.hinted
    }

    /// Whether a ranking is kept (for tests and reports).
    pub fn has_ranking(&self) -> bool {
        self.kept.as_ref().is_some_and(|k| !k.ranking.is_empty())
    }

    /// The hint for a pod of `signature` in scheduling cycle `cycle` at `now`: the kept
    /// ranking's next node, popped; `rejects(node)` says whether `node` (the previous pod's,
    /// `None` when gone from the snapshot) now rejects the pod. Drops the ranking when it
    /// cannot serve the pod.
    pub fn hint(
        &mut self,
        signature: Option<&PodSignature>,
        cycle: u64,
        now: Timestamp,
        rejects: impl FnOnce(Sym) -> Option<bool>,
    ) -> Result<Sym, NoHint> {
        let why = self.compatible(signature, cycle, now, rejects);
        if why.is_err() {
            self.drop_ranking();
        }
        why?;
        self.kept.as_mut().and_then(|k| k.ranking.pop()).ok_or(NoHint::Empty)
    }

    fn compatible(
        &self,
        signature: Option<&PodSignature>,
        cycle: u64,
        now: Timestamp,
        rejects: impl FnOnce(Sym) -> Option<bool>,
    ) -> Result<(), NoHint> {
        let Some(kept) = self.kept.as_ref().filter(|k| !k.ranking.is_empty()) else {
            return Err(NoHint::Empty);
        };
        let Some((_, last_node)) = self.last.filter(|&(c, _)| c.checked_add(1) == Some(cycle)) else {
            return Err(NoHint::CycleSkipped);
        };
        if signature != Some(&kept.signature) {
            return Err(NoHint::OtherSignature);
        }
        if now > kept.since.saturating_add(MAX_AGE) {
            return Err(NoHint::Expired);
        }
        match rejects(last_node) {
            None => Err(NoHint::NodeGone),
            Some(false) => Err(NoHint::NodeNotFull),
            Some(true) => Ok(()),
        }
    }

    /// After cycle `cycle` chose `chosen` at `now` (`hint`: the hint its pod was given): keeps
    /// what the next pod may use. `ranking` fills a ranking with the rest of the scored nodes
    /// (the chosen one popped) and returns whether it did; it is called only when a new
    /// ranking is wanted (the pod has a signature and did not take its hint).
    pub fn chose(
        &mut self,
        cycle: u64,
        chosen: Sym,
        hint: Option<Sym>,
        signature: Option<PodSignature>,
        now: Timestamp,
        ranking: impl FnOnce(&mut Ranking) -> bool,
    ) {
        self.last = Some((cycle, chosen));
        if hint == Some(chosen) {
            self.hinted += 1;
            return;
        }
        self.drop_ranking();
        let Some(signature) = signature else { return };
        let mut r = std::mem::take(&mut self.spare);
        if ranking(&mut r) && !r.is_empty() {
            self.kept = Some(Kept { signature, ranking: r, since: now });
        } else {
            self.spare = r;
        }
    }

    fn drop_ranking(&mut self) {
        if let Some(k) = self.kept.take() {
            self.spare = k.ranking;
        }
    }
}

#[cfg(test)]
mod tests;
