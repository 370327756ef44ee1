//! One pod against every node, with every verdict and score kept: what the golden replay and
//! `ksched explain` read. It runs the same PreFilter / Filter / PreScore / Score code as a
//! scheduling cycle, but visits all nodes in snapshot order (no sampling, no early stop) and
//! keeps each rejected node's status.

use super::runtime::{
    active_filters, narrow, narrowed_out_status, run_filters_with_nominated, run_pre_filter, run_scoring,
    NominatedPods, Overlay, ScoreTable,
};
use super::{Code, CycleState, Profile, Status};
use crate::api::{Pod, Sym};
use crate::snapshot::node_info::NodeInfo;
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
    /// The cycle state after PreFilter (and PreScore, when scored): what PostFilter reads.
    pub state: CycleState,
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
    evaluate_into(profile, pod, snapshot, nominated, &mut state, &mut out);
    out.state = state;
    out
}

fn evaluate_into(
    profile: &Profile,
    pod: &Pod,
    snapshot: &Snapshot,
    nominated: &NominatedPods,
    state: &mut CycleState,
    out: &mut Evaluation,
) {
    if let Err(st) = run_pre_filter(profile, state, pod, snapshot) {
        if st.code == Code::Error {
            out.error = Some(st);
        } else {
            out.pre_filter = Some(st);
        }
        return;
    }
    let filters = active_filters(profile, state);
    let overlay = Overlay::new(profile, state, &filters);
    let mut feasible_infos: Vec<&NodeInfo> = Vec::new();
    for info in snapshot.iter() {
        let st = run_filters_with_nominated(&overlay, &filters, state, pod, info, nominated, snapshot);
        if st.is_success() {
            out.feasible.push(info.name());
            feasible_infos.push(info);
        } else if st.code == Code::Error {
            out.error = Some(st);
            return;
        } else {
            out.rejected.push((info.name(), st));
        }
    }
    if feasible_infos.len() > 1 {
        if let Err(st) = run_scoring(profile, state, pod, snapshot, &feasible_infos, &mut out.scores) {
            out.error = Some(st);
        }
    }
}

/// One score plugin over the nodes a cycle scored.
#[derive(Clone, Debug)]
pub struct ScoreDetail {
    pub plugin: &'static str,
    pub weight: i64,
    /// `score` per node, before NormalizeScore.
    pub raw: Vec<i64>,
    /// After NormalizeScore (0..=100).
    pub normalized: Vec<i64>,
    /// `normalized × weight`: what the total adds up.
    pub weighted: Vec<i64>,
}

/// One node's filter results for `explain_cycle`.
#[derive(Clone, Debug)]
pub struct NodeFilters {
    pub node: Sym,
    /// Every Filter plugin's own status on the node, in profile order, each run alone (the
    /// cycle stops at the first failure); `None` when PreFilter returned Skip for it.
    pub filters: Vec<(&'static str, Option<Status>)>,
    /// The filter chain's verdict as the cycle computes it (first failing plugin, pods
    /// nominated to the node included).
    pub verdict: Status,
    /// The cycle's search visited this node (it stops once it has found enough feasible
    /// nodes, starting from a rotating index).
    pub evaluated: bool,
}

/// A scheduling cycle taken apart, for `ksched explain`: what a cycle would compute for the
/// pod on this snapshot, plugin by plugin.
#[derive(Clone, Debug, Default)]
pub struct CycleExplanation {
    /// Every PreFilter plugin's status, in order (Skip included).
    pub pre_filter: Vec<(&'static str, Status)>,
    /// The first PreFilter rejection, which rejects the pod on every node.
    pub pre_filter_rejection: Option<Status>,
    /// Every node in snapshot order (empty after a PreFilter rejection).
    pub nodes: Vec<NodeFilters>,
    /// Set when the pod's nominated node passes the filters: the cycle takes it unscored.
    pub nominated_node_fits: Option<Sym>,
    /// The feasible nodes the cycle found and scores, in visiting order.
    pub scored: Vec<Sym>,
    /// Per score plugin (those PreScore did not skip), over `scored`. Empty when fewer than
    /// two nodes are feasible (a single node is chosen without scoring).
    pub scores: Vec<ScoreDetail>,
    /// Totals over `scored`.
    pub totals: Vec<i64>,
    /// A plugin failed with `Code::Error`.
    pub error: Option<Status>,
}

impl CycleExplanation {
    /// The scored nodes tied at the highest total, among which the cycle draws its pick.
    pub fn top_nodes(&self) -> Vec<Sym> {
        if self.totals.is_empty() {
            return self.scored.clone();
        }
        let max = self.totals.iter().copied().max().unwrap_or(0);
        self.scored.iter().zip(&self.totals).filter(|(_, &t)| t == max).map(|(&n, _)| n).collect()
    }
}

/// Explains the cycle `pod` would get on `snapshot` with `nominated` pods and the search
/// starting at node `start`: the same plugin code, with every Filter plugin also run alone on
/// every node, the cycle's own verdict per node, the same sampled set of nodes scored, and
/// raw / normalized / weighted scores. Not the hot path: it allocates freely.
pub fn explain_cycle(
    profile: &Profile,
    pod: &Pod,
    snapshot: &Snapshot,
    nominated: &NominatedPods,
    start: usize,
) -> CycleExplanation {
    let mut out = CycleExplanation::default();
    let mut state = CycleState::new();
    for p in &profile.pre_filter {
        let st = p.pre_filter(&mut state, pod, snapshot).with_plugin(p.name());
        if st.is_skip() {
            state.skip_filter.push(p.name());
        } else if !st.is_success() && out.pre_filter_rejection.is_none() {
            out.pre_filter_rejection = Some(st.clone());
        } else if st.is_success() && out.pre_filter_rejection.is_none() {
            if let Err(rejected) = narrow(&**p, &mut state, pod) {
                out.pre_filter_rejection = Some(rejected);
            }
        }
        out.pre_filter.push((p.name(), st));
    }
    if let Some(st) = &out.pre_filter_rejection {
        if st.code == Code::Error {
            out.error = Some(st.clone());
        }
        return out;
    }
    let filters = active_filters(profile, &state);
    let overlay = Overlay::new(profile, &state, &filters);
    let named = state.node_names().map(<[Sym]>::to_vec);
    for info in snapshot.iter() {
        // A node PreFilter's narrowing left out is not filtered by the cycle.
        let verdict = match &named {
            Some(names) if !names.contains(&info.name()) => narrowed_out_status(&state),
            _ => run_filters_with_nominated(&overlay, &filters, &state, pod, info, nominated, snapshot),
        };
        if verdict.code == Code::Error {
            out.error = Some(verdict.clone());
        }
        let each = profile
            .filter
            .iter()
            .map(|f| {
                let st = (!state.skips_filter(f.name())).then(|| {
                    let one: &dyn super::FilterPlugin = &**f;
                    run_filters_with_nominated(&overlay, &[one], &state, pod, info, nominated, snapshot)
                });
                (f.name(), st)
            })
            .collect();
        out.nodes.push(NodeFilters { node: info.name(), filters: each, verdict, evaluated: false });
    }
    if out.error.is_some() || out.nodes.is_empty() {
        return out;
    }
    // The nominated node first, as the cycle tries it.
    if let Some(i) = pod.nominated_node_name.and_then(|n| out.nodes.iter().position(|x| x.node == n)) {
        out.nodes[i].evaluated = true;
        if out.nodes[i].verdict.is_success() {
            out.nominated_node_fits = Some(out.nodes[i].node);
            return out;
        }
    }
    let n = out.nodes.len();
    // With PreFilter's narrowing, the search covers only the named nodes that exist.
    let searched = named.as_ref().map_or(n, |names| names.iter().filter(|&&x| snapshot.position(x).is_some()).count());
    let want = profile.nodes_to_find(searched);
    let mut infos: Vec<&NodeInfo> = Vec::new();
    for k in 0..n {
        let i = (start + k) % n;
        out.nodes[i].evaluated = true;
        if out.nodes[i].verdict.is_success() {
            out.scored.push(out.nodes[i].node);
            if let Some(info) = snapshot.node_at(i) {
                infos.push(&**info);
            }
            if out.scored.len() >= want {
                break;
            }
        }
    }
    if infos.len() < 2 {
        return out;
    }
    let mut table = ScoreTable::default();
    if let Err(st) = run_scoring(profile, &mut state, pod, snapshot, &infos, &mut table) {
        out.error = Some(st);
        return out;
    }
    for (p, &name) in table.plugins.iter().enumerate() {
        let Some(ws) = profile.score.iter().find(|w| w.plugin.name() == name) else { continue };
        let mut raw = Vec::with_capacity(infos.len());
        if let Err(st) = ws.plugin.score_nodes(&state, pod, &infos, snapshot, &mut raw) {
            out.error = Some(st.with_plugin(name));
            return out;
        }
        let mut normalized = raw.clone();
        // Already succeeded once in `run_scoring`; the status is the same.
        let _ = ws.plugin.normalize(&state, pod, &mut normalized);
        let weighted = (0..infos.len()).map(|i| table.score(p, i)).collect();
        out.scores.push(ScoreDetail { plugin: name, weight: ws.weight, raw, normalized, weighted });
    }
    out.totals = table.totals;
    out
}
