//! One pod against every node, with every verdict and score kept: what the golden replay and
//! `ksched explain` read. It runs the same PreFilter / Filter / PreScore / Score code as a
//! scheduling cycle, but visits all nodes in snapshot order (no sampling, no early stop) and
//! keeps each rejected node's status.

use super::runtime::{
    active_extensions, active_filters, run_filters_with_nominated, run_pre_filter, run_scoring, NominatedPods,
    ScoreTable,
};
use super::{Code, CycleState, Profile, Status};
use crate::api::{Pod, Sym};
use crate::cache::node_info::NodeInfo;
use crate::snapshot::Snapshot;

/// Every node's verdict for one pod.
#[derive(Default)]
pub struct Evaluation {
    /// Set when a PreFilter plugin rejected the pod outright (no node was filtered).
    pub pre_filter: Option<Status>,
    /// Feasible nodes, in snapshot order.
    pub feasible: Vec<Sym>,
    /// Rejected nodes with the first failing filter's status, in snapshot order.
    pub rejected: Vec<(Sym, Status)>,
    /// Scores over `feasible` (same order). Empty when fewer than two nodes are feasible:
    /// like upstream, a single feasible node is chosen without scoring.
    pub scores: ScoreTable,
    /// A plugin failed with `Code::Error` (filter or score); the cycle would have failed.
    pub error: Option<Status>,
}

impl Evaluation {
    /// The feasible nodes tied at the highest total (all of them when not
    /// scored).
    pub fn top_nodes(&self) -> Vec<Sym> {
        if self.scores.totals.is_empty() {
            return self.feasible.clone();
        }
        let max = self.scores.totals.iter().copied().max().unwrap_or(0);
        self.feasible.iter().zip(&self.scores.totals).filter(|(_, &t)| t == max).map(|(&n, _)| n).collect()
    }

    /// The weighted score of `plugin` on feasible node `node`, if that plugin scored.
    pub fn score(&self, plugin: &str, node: Sym) -> Option<i64> {
        let p = self.scores.plugins.iter().position(|&name| name == plugin)?;
        let i = self.feasible.iter().position(|&n| n == node)?;
        Some(self.scores.score(p, i))
    }

    pub fn total(&self, node: Sym) -> Option<i64> {
        let i = self.feasible.iter().position(|&n| n == node)?;
        self.scores.totals.get(i).copied()
    }
}

/// Evaluates `pod` on every node of `snapshot` with `profile`'s plugins.
pub fn evaluate(profile: &Profile, pod: &Pod, snapshot: &Snapshot) -> Evaluation {
    evaluate_with_nominated(profile, pod, snapshot, &NominatedPods::default())
}

/// The same, leaving room for nominated pods (the two-pass filter).
pub fn evaluate_with_nominated(
    profile: &Profile,
    pod: &Pod,
    snapshot: &Snapshot,
    nominated: &NominatedPods,
) -> Evaluation {
    let mut out = Evaluation::default();
    let mut state = CycleState::new();
    if let Err(st) = run_pre_filter(profile, &mut state, pod, snapshot) {
        if st.code == Code::Error {
            out.error = Some(st);
        } else {
            out.pre_filter = Some(st);
        }
        return out;
    }
    let filters = active_filters(profile, &state);
    let extensions = active_extensions(profile, &state);
    let mut feasible_infos: Vec<&NodeInfo> = Vec::new();
    for info in snapshot.iter() {
        let st = run_filters_with_nominated(&extensions, &filters, &state, pod, info, nominated, snapshot);
        if st.is_success() {
            out.feasible.push(info.name());
            feasible_infos.push(info);
        } else if st.code == Code::Error {
            out.error = Some(st);
            return out;
        } else {
            out.rejected.push((info.name(), st));
        }
    }
    if feasible_infos.len() > 1 {
        if let Err(st) = run_scoring(profile, &mut state, pod, snapshot, &feasible_infos, &mut out.scores) {
            out.error = Some(st);
        }
    }
    out
}
