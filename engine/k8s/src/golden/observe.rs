//! What ksched decides for a pod's first attempt, in the terms upstream's recorder uses: the
//! only place that knows how the per-node results are obtained. Today they come from
//! `framework::evaluate` (every node, no sampling) and, when no node fits, from the profile's
//! own PostFilter plugins (DefaultPreemption's real dry run, traced). Replacing the source
//! (an observer of the real cycle) changes this file only; `compare` reads `Observed`.

use std::collections::HashMap;

use ksched_engine::api::{Pod, Sym};
use ksched_engine::framework::evaluate::evaluate;
use ksched_engine::framework::plugins::default_preemption::PreemptionTrace;
use ksched_engine::framework::runtime::{run_post_filter_plugins, FitError, NodeStatuses, NominatedPods};
use ksched_engine::framework::{Nominating, PostFilterContext, Profile, Status};
use ksched_engine::snapshot::Snapshot;
use ksched_engine::util::rng::Rng;

/// ksched's verdict on one pod, first attempt.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// A PreFilter plugin rejected the pod outright (`Plugin: Code: message`).
    pub pre_filter: Option<String>,
    /// Feasible nodes, in snapshot order.
    pub feasible: Vec<String>,
    /// Rejected node → `Plugin: reason; reason` (the recorder's format).
    pub rejected: HashMap<String, String>,
    /// The score plugins that scored this pod (PreScore did not skip them), in profile order.
    pub score_plugins: Vec<&'static str>,
    /// Feasible node → weighted score per plugin of `score_plugins`, and the total. Empty when
    /// fewer than two nodes were feasible (upstream does not score a single node).
    pub scores: HashMap<String, (Vec<i64>, i64)>,
    /// The feasible nodes tied at the top total (every feasible node when not scored).
    pub top: Vec<String>,
    /// A plugin failed with an error; the cycle would have failed.
    pub error: Option<String>,
    /// No node fit: the FitError text without PostFilter's part (upstream's `error`).
    pub fit_error: Option<String>,
    /// No node fit: what the PostFilter plugins did.
    pub preemption: Option<ObservedPreemption>,
}

/// The PostFilter outcome, with DefaultPreemption's dry run.
#[derive(Clone, Debug, Default)]
pub struct ObservedPreemption {
    /// Every PostFilter plugin's message joined (empty after a nomination).
    pub message: String,
    /// Candidate node → victims (`namespace/name`, most important first) and PDB violations.
    pub candidates: Vec<(String, Vec<String>, usize)>,
    /// Potential nodes the dry run rejected → `Plugin: reason; reason`.
    pub dry_run_rejected: Vec<(String, String)>,
    /// The candidates tied after the pick's criteria.
    pub best: Vec<String>,
    pub nominated: Option<String>,
    /// The nominated node's victims.
    pub victims: Vec<String>,
    /// The dry run stopped before trying every potential node (its candidates then depend on
    /// the random offset it started from).
    pub cut_short: bool,
    /// Adjacent victims of some candidate tied on priority and start time (their order is a
    /// sort's tie order).
    pub tied_victim_pairs: usize,
}

impl Observed {
    /// The weighted score of `plugin` on feasible node `node`, if that plugin scored.
    pub fn score(&self, plugin: &str, node: &str) -> Option<i64> {
        let p = self.score_plugins.iter().position(|&name| name == plugin)?;
        self.scores.get(node).map(|(s, _)| s[p])
    }

    pub fn total(&self, node: &str) -> Option<i64> {
        self.scores.get(node).map(|(_, t)| *t)
    }
}

/// `Plugin: reason; reason`, the recorder's format.
pub fn rejection_text(st: &Status) -> String {
    let reasons: Vec<String> = st.reasons.iter().map(|r| r.to_string()).collect();
    let mut text = reasons.join("; ");
    if let Some(d) = &st.detail {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(d);
    }
    format!("{}: {text}", st.plugin)
}

/// Evaluates `pod` on `snapshot` with `profile` and, when no node fits, runs the profile's
/// PostFilter plugins (`rng` draws the dry run's offset, as the scheduler's does).
pub fn observe(profile: &Profile, pod: &Pod, snapshot: &Snapshot, rng: &mut Rng) -> Observed {
    let eval = evaluate(profile, pod, snapshot);
    let name = |s: Sym| s.as_str().to_owned();
    let mut out = Observed {
        pre_filter: eval.pre_filter.as_ref().map(|s| s.to_string()),
        feasible: eval.feasible.iter().map(|&s| name(s)).collect(),
        rejected: eval.rejected.iter().map(|(n, st)| (name(*n), rejection_text(st))).collect(),
        score_plugins: eval.scores.plugins.clone(),
        top: eval.top_nodes().into_iter().map(name).collect(),
        error: eval.error.as_ref().map(|s| s.to_string()),
        ..Observed::default()
    };
    if let Some(st) = &eval.pre_filter {
        // Every node shares PreFilter's verdict, as upstream records it.
        let text = rejection_text(st);
        out.rejected = snapshot.iter().map(|n| (name(n.name()), text.clone())).collect();
    }
    if !eval.scores.totals.is_empty() {
        for (i, &node) in eval.feasible.iter().enumerate() {
            let per_plugin = (0..eval.scores.plugins.len()).map(|p| eval.scores.score(p, i)).collect();
            out.scores.insert(name(node), (per_plugin, eval.scores.totals[i]));
        }
    }
    if eval.error.is_some() || !eval.feasible.is_empty() {
        return out;
    }
    // No node fit: the statuses PostFilter reads, as the cycle leaves them.
    let n = snapshot.num_nodes();
    let mut statuses = NodeStatuses::default();
    let mut fit = match &eval.pre_filter {
        Some(st) => {
            statuses.absent = Some(st.clone());
            FitError { pre_filter_msg: Some(st.message()), ..FitError::from_statuses(n, &NodeStatuses::default()) }
        }
        None => {
            for (node, st) in &eval.rejected {
                if let Some(pos) = snapshot.position(*node) {
                    statuses.entries.push((pos as u32, st.clone()));
                }
            }
            FitError::from_statuses(n, &statuses)
        }
    };
    out.fit_error = Some(fit.to_string());
    let mut trace = PreemptionTrace::default();
    let nominated = NominatedPods::default();
    let mut ctx = PostFilterContext {
        profile,
        snapshot,
        statuses: &statuses,
        nominator: None,
        nominated: &nominated,
        pool: None,
        rng,
        preemption_trace: Some(&mut trace),
    };
    let (result, message) = run_post_filter_plugins(profile, &mut ctx, &eval.state, pod);
    fit.post_filter_msg = message.clone();
    let mut p = ObservedPreemption { message: message.unwrap_or_default(), ..ObservedPreemption::default() };
    let keys = |pods: &[Pod]| pods.iter().map(Pod::key).collect::<Vec<_>>();
    p.candidates =
        trace.candidates.iter().map(|c| (name(c.node), keys(&c.victims.pods), c.victims.num_pdb_violations)).collect();
    p.dry_run_rejected = trace.rejected.iter().map(|(node, st)| (name(*node), rejection_text(st))).collect();
    p.cut_short = trace.candidates.len() + trace.rejected.len() < trace.potential;
    p.tied_victim_pairs = trace
        .candidates
        .iter()
        .flat_map(|c| c.victims.pods.windows(2))
        .filter(|w| w[0].priority == w[1].priority && w[0].start_time == w[1].start_time)
        .count();
    p.best = trace.best.iter().map(|&i| name(trace.candidates[i].node)).collect();
    if let Some(r) = result {
        if let Nominating::Set(node) = r.nominating {
            p.nominated = Some(name(node));
            p.victims = keys(&r.victims);
        }
    }
    out.preemption = Some(p);
    out
}
