//! Which scored node a cycle takes when several share the highest total (`TieBreak`).
//!
//! Upstream (v1.35 prioritizeNodes / newSortedNodeScores) builds a binary max-heap with Go's
//! `heap.Init` over the scored nodes in the order the filter pass found them, ordered by total
//! score and then by a per-node tie-breaker, and takes the root. The tie-breaker is 0 unless
//! an extender interested in the pod returned the node from Prioritize, in which case it is a
//! fresh `rand.Int()`. So without such an extender the pick is a fixed function of the found
//! order (deterministic when upstream filters on one worker), and among the tied nodes it is
//! neither the first nor a random one.
//!
//! The root of a heap built that way needs no heap: `heap.Init` sifts down from the last
//! parent to the root, a child replacing its parent only when strictly greater (the right
//! child preferred only when strictly greater than the left). By induction each subtree's
//! root ends up being its own first maximal element in preorder (the node, then its left
//! subtree, then its right): the node stays when it is maximal (no child is strictly
//! greater), otherwise the left subtree's root rises unless only the right subtree holds the
//! maximum. So the root is the tied element that comes first in the implicit tree's
//! preorder, and `heap_root` walks down to it without building anything; the tests check it
//! against a literal `heap.Init`.

use crate::util::rng::Rng;

/// How a cycle picks among the scored nodes tied at the highest total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TieBreak {
    /// Upstream's pick: the root of the score heap over the found order (`heap_root`); a node
    /// an interested extender returned from Prioritize carries a random tie-breaker, so
    /// among tied nodes such nodes win and are drawn uniformly (with the scheduler's seeded
    /// RNG). Decisions are upstream's own wherever upstream's are deterministic.
    #[default]
    Upstream,
    /// A uniform draw among all tied nodes with the seeded RNG (what ksched did before it
    /// followed upstream's heap). Kept as an option: upstream's rule piles pods onto the
    /// tied node its heap happens to favour (on identical nodes, the same few positions of
    /// the found order), which a study of placement spread may not want to inherit, and a
    /// different `--seed` then shows how much a result depends on tie-breaking at all.
    Random,
}

impl TieBreak {
    /// The name used on the command line (`upstream`, `random`).
    pub fn name(self) -> &'static str {
        match self {
            TieBreak::Upstream => "upstream",
            TieBreak::Random => "random",
        }
    }
}

/// The highest total of a cycle's scores, how many nodes have it and the first of them
/// (`ScoreTable::top`, from the chunks' best totals when scoring kept them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Top {
    pub max: i64,
    pub ties: u64,
    pub first: usize,
}

impl Top {
    /// The same, counted over `totals` (`None` for none).
    pub fn of(totals: &[i64]) -> Option<Top> {
        let max = *totals.iter().max()?;
        let ties = totals.iter().filter(|&&t| t == max).count() as u64;
        let first = totals.iter().position(|&t| t == max).unwrap_or(0);
        Some(Top { max, ties, first })
    }
}

/// The index Go's `heap.Init` leaves at the root of a max-heap over `totals` when every
/// tie-breaker is equal: the first element with the highest total in the heap's preorder.
/// 0 for no totals.
pub fn heap_root(totals: &[i64]) -> usize {
    Top::of(totals).map_or(0, |top| heap_root_of(totals, top))
}

/// `heap_root`, told the highest total (`top` must be `totals`' own). A lone highest total
/// is the root; otherwise the walk down from the root takes each node that has it, else the
/// left child when the left subtree holds it, else the right: it reads the tied root at
/// once (identical nodes), and at most every total once.
pub fn heap_root_of(totals: &[i64], top: Top) -> usize {
    if top.ties <= 1 {
        return top.first;
    }
    let mut i = 0;
    // Invariant: the subtree of `i` holds the highest total.
    while let Some(&t) = totals.get(i) {
        if t == top.max {
            return i;
        }
        let left = 2 * i + 1;
        i = if subtree_holds(totals, left, top.max) { left } else { left + 1 };
    }
    top.first
}

/// Whether the subtree of the heap node at `root` holds `value`: its levels are the index
/// ranges `[(root+1)·2^k − 1, (root+2)·2^k − 2]`.
fn subtree_holds(totals: &[i64], root: usize, value: i64) -> bool {
    let (mut lo, mut hi) = (root, root);
    while lo < totals.len() {
        if totals[lo..=hi.min(totals.len() - 1)].contains(&value) {
            return true;
        }
        (lo, hi) = (2 * lo + 1, 2 * hi + 2);
    }
    false
}

/// Upstream's pick over `totals` (in found order); `top`: their highest total when known
/// (`ScoreTable::top`), else counted here. `randomized[i]`: an interested extender returned
/// node `i` from Prioritize (upstream then gives it a random tie-breaker); `None` when no
/// extender took part. Among the nodes tied at the highest total, the randomized ones win
/// and one of them is drawn uniformly from `rng` (upstream: the largest of their random
/// tie-breakers); without any, the heap root.
pub fn upstream_pick(totals: &[i64], top: Option<Top>, randomized: Option<&[bool]>, rng: &mut Rng) -> usize {
    let Some(top) = top.or_else(|| Top::of(totals)) else { return 0 };
    let root = heap_root_of(totals, top);
    let Some(randomized) = randomized else { return root };
    let tied_randomized =
        || totals.iter().zip(randomized).enumerate().filter(move |(_, (&t, &r))| t == top.max && r).map(|(i, _)| i);
    match tied_randomized().count() as u64 {
        0 => root,
        n => tied_randomized().nth(rng.below(n) as usize).unwrap_or(root),
    }
}

/// The index of a highest total; ties are broken uniformly at random (one draw among the
/// tied nodes): `TieBreak::Random`. (Upstream's own pick is `upstream_pick`.)
pub fn select_host(totals: &[i64], rng: &mut Rng) -> usize {
    let Some(&max) = totals.iter().max() else { return 0 };
    let ties = totals.iter().filter(|&&t| t == max).count() as u64;
    let mut k = if ties > 1 { rng.below(ties) } else { 0 };
    for (i, &t) in totals.iter().enumerate() {
        if t == max {
            if k == 0 {
                return i;
            }
            k -= 1;
        }
    }
    0
}

#[cfg(test)]
mod tests;
