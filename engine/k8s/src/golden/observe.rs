//! What ksched decides for a pod's first attempt, in the terms upstream's recorder uses: the
//! only place that knows how the per-node results are obtained. They come from the
//! scheduler's own cycle, observed (`Scheduler::observe_cycle` with a `CycleRecorder`): the
//! PreFilter results, every node's filter verdict (the nodes the search did not visit are
//! filtered afterwards with the cycle's own function), the scores, the pick's ties and, when
//! no node fits, the profile's PostFilter plugins (DefaultPreemption's real dry run, traced).
//! The observation changes nothing in the cluster; `compare` reads `Observed`.

use std::collections::HashMap;
use std::sync::Arc;

use ksched_engine::api::{Pod, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::cluster::{ApiError, BindError, ClusterApi};
use ksched_engine::framework::runtime::FitError;
use ksched_engine::framework::{Code, Profiles, Status};
use ksched_engine::observer::{CycleRecord, CycleRecorder};
use ksched_engine::queue::Fifo;
use ksched_engine::scheduler::{ScheduleError, Scheduler};
use ksched_engine::snapshot::Snapshot;

/// ksched's verdict on one pod, first attempt.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// A PreFilter plugin rejected the pod outright (`Plugin: Code: message`).
    pub pre_filter: Option<String>,
    /// Every feasible node (those the pass did not visit filtered afterwards with the
    /// cycle's own function), in snapshot order.
    pub feasible: Vec<String>,
    /// Rejected node → `Plugin: reason; reason` (the recorder's format).
    pub rejected: HashMap<String, String>,
    /// The score plugins that scored this pod (PreScore did not skip them), in profile order.
    pub score_plugins: Vec<&'static str>,
    /// Feasible node → weighted score per plugin of `score_plugins`, and the total. Empty when
    /// fewer than two nodes were feasible (upstream does not score a single node).
    pub scores: HashMap<String, (Vec<i64>, i64)>,
    /// The scored nodes tied at the top total (every feasible node the pass kept when not
    /// scored).
    pub top: Vec<String>,
    /// A plugin failed with an error; the cycle would have failed.
    pub error: Option<String>,
    /// No node fit: the FitError text without PostFilter's part (upstream's `error`).
    pub fit_error: Option<String>,
    /// No node fit: what the PostFilter plugins did.
    pub preemption: Option<ObservedPreemption>,
    /// The rotating start index when the cycle began.
    pub start: usize,
    /// The cycle's result counts, as upstream's ScheduleResult has them: nodes evaluated
    /// (recorded by the filter pass, the nominated node's included) and feasible; both 0 when
    /// no node was picked.
    pub evaluated: usize,
    pub feasible_count: usize,
    /// The node picked (`None` when none was).
    pub pick: Option<String>,
    /// The feasible nodes the cycle's own pass kept, in the order it found them.
    pub sampled_feasible: Vec<String>,
    /// The nodes the pass visited and rejected → `Plugin: reason; reason`.
    pub sampled_rejected: HashMap<String, String>,
    /// The totals over `sampled_feasible`, same order (empty when not scored).
    pub sampled_totals: Vec<i64>,
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

/// A plugin's error as upstream's scheduler words the failed attempt: which extension point
/// failed is what the cycle record shows (a node's Error verdict: Filter; PreFilter's
/// rejection: PreFilter; else Score).
fn upstream_error_text(rec: &CycleRecord, st: &Status) -> String {
    let msg = st.message();
    if rec.nodes.iter().any(|n| n.verdict.code == Code::Error) {
        format!("running {:?} filter plugin: {msg}", st.plugin)
    } else if rec.pre_filter_rejection.as_ref().is_some_and(|s| s.code == Code::Error) {
        format!("running PreFilter plugin {:?}: {msg}", st.plugin)
    } else {
        format!("running Score plugins: plugin {:?} failed with: {msg}", st.plugin)
    }
}

/// The golden replay never binds through the scheduler: it observes cycles only and applies
/// upstream's outcome itself. Any request here is a bug, reported as an error.
struct ObserveOnly;

impl ClusterApi for ObserveOnly {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
        Err(BindError { pod: pod.key(), node, why: "the golden replay only observes cycles".into() })
    }
    fn delete_victim(&self, victim: &Pod) -> Result<(), ApiError> {
        Err(ApiError { op: "delete", pod: victim.key(), why: "the golden replay only observes cycles".into() })
    }
    fn set_nominated_node(&self, pod: &Pod, _: Option<Sym>) -> Result<(), ApiError> {
        Err(ApiError { op: "nominate", pod: pod.key(), why: "the golden replay only observes cycles".into() })
    }
}

/// A scheduler over `cache` that observes cycles as upstream's recorder ran them: `profiles`
/// (each pod by its `schedulerName`) as they are, the recording's percentageOfNodesToScore
/// and parallelism included; `seed` seeds its RNG (the dry run's offset, and the draw among
/// tied nodes an extender returned).
pub fn observer_scheduler(cache: Arc<Cache>, profiles: &Profiles, seed: u64) -> Scheduler {
    Scheduler::new(cache, Arc::new(Fifo::new()), profiles.clone(), Arc::new(ObserveOnly), seed)
}

/// `observer_scheduler` with every node filtered and every feasible node scored
/// (percentageOfNodesToScore 100): the recorder's re-run over every node of a sampled case.
pub fn every_node_scheduler(cache: Arc<Cache>, profiles: &Profiles, seed: u64) -> Scheduler {
    let mut profiles = profiles.clone();
    for p in profiles.iter_mut() {
        p.percentage_of_nodes_to_score = Some(100);
    }
    observer_scheduler(cache, &profiles, seed)
}

/// Observes `pod`'s cycle on the scheduler's cache as it is now (nothing changes in it but
/// the scheduler's rotating start index and RNG, as a cycle advances them).
pub fn observe(scheduler: &mut Scheduler, pod: &Pod) -> Observed {
    let start = scheduler.next_start_node_index();
    let mut recorder = CycleRecorder::new();
    let result = scheduler.observe_cycle(pod, &mut recorder);
    let record = recorder.records.pop().unwrap_or_default();
    let mut out = match result {
        Ok(d) => {
            let mut out = from_record(&record, None, &scheduler.cache.update_snapshot());
            (out.evaluated, out.feasible_count, out.pick) = (d.evaluated, d.feasible, Some(d.node.as_str().to_owned()));
            out
        }
        Err(e) => from_record(&record, Some(e), &scheduler.cache.update_snapshot()),
    };
    out.start = start;
    out
}

fn from_record(rec: &CycleRecord, error: Option<ScheduleError>, snapshot: &Snapshot) -> Observed {
    let name = |s: Sym| s.as_str().to_owned();
    let feasible: Vec<Sym> = rec.nodes.iter().filter(|n| n.verdict.is_success()).map(|n| n.node).collect();
    let mut out = Observed {
        pre_filter: rec.pre_filter_rejection.as_ref().filter(|s| s.code != Code::Error).map(|s| s.to_string()),
        feasible: feasible.iter().map(|&s| name(s)).collect(),
        rejected: rec
            .nodes
            .iter()
            .filter(|n| !n.verdict.is_success())
            .map(|n| (name(n.node), rejection_text(&n.verdict)))
            .collect(),
        score_plugins: rec.scores.iter().map(|d| d.plugin).collect(),
        top: rec.top_nodes().into_iter().map(name).collect(),
        sampled_feasible: rec.feasible.iter().map(|&s| name(s)).collect(),
        sampled_rejected: rec
            .nodes
            .iter()
            .filter(|n| n.visited && !n.verdict.is_success())
            .map(|n| (name(n.node), rejection_text(&n.verdict)))
            .collect(),
        sampled_totals: rec.totals.clone(),
        ..Observed::default()
    };
    if let Some(st) = rec.pre_filter_rejection.as_ref().filter(|s| s.code != Code::Error) {
        // Every node shares PreFilter's verdict, as upstream records it.
        let text = rejection_text(st);
        out.rejected = snapshot.iter().map(|n| (name(n.name()), text.clone())).collect();
    }
    for (i, &node) in rec.scored.iter().enumerate() {
        let per_plugin = rec.scores.iter().map(|d| d.weighted.get(i).copied().unwrap_or_default()).collect();
        out.scores.insert(name(node), (per_plugin, rec.totals.get(i).copied().unwrap_or_default()));
    }
    let fit = match error {
        None => return out,
        Some(ScheduleError::Unschedulable(fit)) => fit,
        Some(ScheduleError::Plugin(st)) => {
            out.error = Some(upstream_error_text(rec, &st));
            return out;
        }
        Some(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    // Upstream's `error` is the FitError before PostFilter's part.
    out.fit_error = Some(FitError { post_filter_msg: None, ..fit }.to_string());
    let Some(post) = &rec.post_filter else { return out };
    let mut p =
        ObservedPreemption { message: post.message.clone().unwrap_or_default(), ..ObservedPreemption::default() };
    let keys = |pods: &[Pod]| pods.iter().map(Pod::key).collect::<Vec<_>>();
    if let Some(trace) = &post.trace {
        p.candidates = trace
            .candidates
            .iter()
            .map(|c| (name(c.node), keys(&c.victims.pods), c.victims.num_pdb_violations))
            .collect();
        p.dry_run_rejected = trace.rejected.iter().map(|(node, st)| (name(*node), rejection_text(st))).collect();
        p.cut_short = trace.candidates.len() + trace.rejected.len() < trace.potential;
        p.tied_victim_pairs = trace
            .candidates
            .iter()
            .flat_map(|c| c.victims.pods.windows(2))
            .filter(|w| w[0].priority == w[1].priority && w[0].start_time == w[1].start_time)
            .count();
        p.best = trace.best.iter().map(|&i| name(trace.candidates[i].node)).collect();
    }
    if let Some(node) = post.nominated {
        p.nominated = Some(name(node));
        p.victims = keys(&post.victims);
    }
    out.preemption = Some(p);
    out
}
