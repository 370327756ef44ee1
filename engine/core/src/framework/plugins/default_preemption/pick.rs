//! pickOneNodeForPreemption: which candidate node to preempt on.
//!
//! A candidate with no victims wins at once. Otherwise each criterion in turn keeps only the
//! best-scoring candidates, until one is left:
//! 1. fewest PodDisruptionBudget violations;
//! 2. lowest priority of the most important victim;
//! 3. smallest sum of victim priorities, each shifted up by 2^31 so that negative priorities
//!    still add up to more than fewer victims would;
//! 4. fewest victims;
//! 5. latest start among the most important victims (the earliest start among the victims of
//!    the highest priority; a victim that has not started counts as starting now).
//!
//! Among candidates still tied after all five (`best_candidates`), the first in candidate
//! order wins (upstream takes whichever its map iteration yields first).

use super::victims::Candidate;
use crate::api::Pod;

/// What the pick reads of a candidate: whether it has no victims, and the five criteria, each
/// a score where higher is better. The dry run computes it from what it already read of the
/// victims, so the candidates that are not picked are never read again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PickKey {
    no_victims: bool,
    scores: [i64; 5],
}

impl PickKey {
    /// The key of `num_pdb_violations` and victims given as (priority, start) most important
    /// first, the start as `victims::start_key` reads it (`u64::MAX`: not started).
    pub fn of_victims(num_pdb_violations: usize, victims: impl Iterator<Item = (i32, u64)> + Clone) -> PickKey {
        let first = victims.clone().next().map_or(0, |(p, _)| p as i64);
        let (mut sum, mut count, mut top, mut earliest) = (0i64, 0i64, None::<i32>, i64::MIN);
        for (p, start) in victims {
            sum += p as i64 + i32::MAX as i64 + 1;
            count += 1;
            // The earliest start among the victims of the highest priority; not started
            // counts as starting now, after any recorded start.
            let start = start.min(i64::MAX as u64) as i64;
            match top {
                Some(t) if t > p => {}
                Some(t) if t == p => earliest = earliest.min(start),
                _ => {
                    top = Some(p);
                    earliest = start;
                }
            }
        }
        PickKey { no_victims: count == 0, scores: [-(num_pdb_violations as i64), -first, -sum, -count, earliest] }
    }

    pub fn of(c: &Candidate) -> PickKey {
        let victims = c.victims.pods.iter().map(|p: &Pod| (p.priority, super::victims::start_key(p)));
        PickKey::of_victims(c.victims.num_pdb_violations, victims)
    }
}

/// The index in `candidates` of the node to preempt on (0 for an empty list): the first of
/// [`best_candidates`].
pub fn pick_one_node(candidates: &[Candidate]) -> usize {
    best_candidates(candidates).first().copied().unwrap_or(0)
}

/// The indices (ascending) of the candidates still tied after the criteria: every node
/// upstream could pick (it takes whichever its map iteration yields first). A candidate with
/// no victims wins alone.
pub fn best_candidates(candidates: &[Candidate]) -> Vec<usize> {
    let keys: Vec<PickKey> = candidates.iter().map(PickKey::of).collect();
    best_of(&keys)
}

/// `best_candidates` on the candidates' keys.
pub fn best_of(keys: &[PickKey]) -> Vec<usize> {
    best_of_decided(keys).0
}

/// What left the picked candidate ahead of the others (`best_of_decided`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decided {
    /// No candidate at all.
    NoCandidates,
    /// One candidate: nothing to choose.
    OnlyCandidate,
    /// A candidate with no victims wins at once.
    NoVictims,
    /// This criterion (0..5, in `CRITERIA`' order) was the first to leave one candidate.
    Criterion(usize),
    /// Several candidates tied after all five criteria; the first in candidate order wins
    /// (upstream: whichever its map iteration yields first).
    Tied,
}

/// The five criteria of the pick, in order, as a reader would say them.
pub const CRITERIA: [&str; 5] = [
    "fewest PodDisruptionBudget violations",
    "lowest priority of the most important victim",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start among the most important victims",
];

impl Decided {
    /// In words: `fewest victims`, `only candidate`, ...
    pub fn describe(self) -> &'static str {
        match self {
            Decided::NoCandidates => "no candidate",
            Decided::OnlyCandidate => "only candidate",
            Decided::NoVictims => "no victims needed",
            Decided::Criterion(c) => CRITERIA.get(c).copied().unwrap_or("?"),
            Decided::Tied => {
                "tied after all five criteria: the first candidate in dry-run order (upstream: whichever its map \
                 iteration yields)"
            }
        }
    }
}

impl PickKey {
    /// The values the criteria compare, in `CRITERIA`' order, as plain figures (lower is
    /// better for the first four, higher for the last): PDB violations, the most important
    /// victim's priority, the sum of victim priorities each shifted by 2^31, the number of
    /// victims, and the start (`victims::start_key`, nanoseconds; `None`: not started or no
    /// victims).
    pub fn criteria(&self) -> (i64, i64, i64, i64, Option<u64>) {
        let [pdb, first, sum, count, start] = self.scores;
        let start = ((0..i64::MAX).contains(&start) && !self.no_victims).then_some(start as u64);
        (-pdb, -first, -sum, -count, start)
    }
}

/// `best_of`, and the criterion that decided: the first to leave a single candidate.
pub fn best_of_decided(keys: &[PickKey]) -> (Vec<usize>, Decided) {
    if let Some(i) = keys.iter().position(|k| k.no_victims) {
        return (vec![i], Decided::NoVictims);
    }
    let mut keep: Vec<usize> = (0..keys.len()).collect();
    match keep.len() {
        0 => return (keep, Decided::NoCandidates),
        1 => return (keep, Decided::OnlyCandidate),
        _ => {}
    }
    for c in 0..5 {
        let best = keep.iter().map(|&i| keys[i].scores[c]).max().unwrap_or(0);
        keep.retain(|&i| keys[i].scores[c] == best);
        if keep.len() == 1 {
            return (keep, Decided::Criterion(c));
        }
    }
    (keep, Decided::Tied)
}
