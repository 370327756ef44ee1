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

type ScoreFn = fn(&Candidate) -> i64;

/// The five criteria, each a score where higher is better.
const CRITERIA: [ScoreFn; 5] = [
    |c| -(c.victims.num_pdb_violations as i64),
    |c| -c.victims.pods.first().map_or(i64::MIN, |p| p.priority as i64),
    |c| -c.victims.pods.iter().map(|p| p.priority as i64 + i32::MAX as i64 + 1).sum::<i64>(),
    |c| -(c.victims.pods.len() as i64),
    latest_start_score,
];

/// The earliest start time among the victims of the highest priority, in nanoseconds (a pod
/// without a start time counts as starting now, i.e. after any recorded start).
fn latest_start_score(c: &Candidate) -> i64 {
    let Some(top) = c.victims.pods.iter().map(|p| p.priority).max() else {
        return i64::MIN;
    };
    c.victims
        .pods
        .iter()
        .filter(|p| p.priority == top)
        .map(|p| p.start_time.map_or(i64::MAX, |t| t.0.min(i64::MAX as u64) as i64))
        .min()
        .unwrap_or(i64::MIN)
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
    if let Some(i) = candidates.iter().position(|c| c.victims.pods.is_empty()) {
        return vec![i];
    }
    let mut keep: Vec<usize> = (0..candidates.len()).collect();
    for score in CRITERIA {
        if keep.len() <= 1 {
            break;
        }
        let best = keep.iter().map(|&i| score(&candidates[i])).max().unwrap_or(0);
        keep.retain(|&i| score(&candidates[i]) == best);
    }
    keep
}
