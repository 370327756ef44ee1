//! `ksched explain POD -f FILE...`: one attempt of a pod's scheduling, plugin by plugin, like
//! kube-scheduler-simulator's result history. The simulation `simulate` runs is run with a
//! `CycleRecorder` observing the scheduler's own cycles of the pod: every PreFilter result,
//! every node's verdict and every Filter plugin's result on it (the first failing one is what
//! the cycle used), every Score plugin's raw, normalized and weighted score per scored node,
//! the pick with its ties and the PostFilter (preemption) outcome. `--attempt N` picks which
//! attempt to show; where the pod ended comes from the same run.

use std::any::Any;

use clap::{Args, ValueEnum};
use ksched_engine::api::Pod;
use ksched_engine::framework::Status;
use ksched_engine::observer::{CycleRecord, CycleRecorder, SelectedBy};
use ksched_engine::scheduler::CycleOutcome;
use ksched_k8s::manifest::{Manifests, PendingPod};
use serde::Serialize;

use crate::simulate::{columns, load_inputs, simulate_observed, InputArgs, PodResult, PreemptionReport};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {
    /// The pending pod to explain: `name` (in any namespace, when unique) or `namespace/name`.
    pub pod: String,
    #[command(flatten)]
    pub input: InputArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Nodes listed per table (the JSON always has all).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// List every node in the tables.
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
    /// Which scheduling attempt of the pod to take apart, counting from 1 (e.g. the one after
    /// its preemption).
    #[arg(long, default_value_t = 1)]
    pub attempt: u32,
}

/// A plugin's status.
#[derive(Clone, Debug, Serialize)]
pub struct PluginStatus {
    pub plugin: String,
    /// `Success`, `Skip`, `Unschedulable`, `UnschedulableAndUnresolvable`, `Error`, or
    /// `Skipped` for a Filter plugin PreFilter turned off.
    pub code: String,
    pub message: String,
}

impl PluginStatus {
    fn new(plugin: &str, st: Option<&Status>) -> PluginStatus {
        match st {
            Some(st) => {
                PluginStatus { plugin: plugin.to_owned(), code: format!("{:?}", st.code), message: st.message() }
            }
            None => PluginStatus { plugin: plugin.to_owned(), code: "Skipped".into(), message: String::new() },
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ScoreCell {
    pub plugin: String,
    pub raw: i64,
    pub normalized: i64,
    pub weight: i64,
    pub weighted: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct NodeReport {
    pub node: String,
    pub feasible: bool,
    /// The cycle's search visited it (it stops after enough feasible nodes).
    pub evaluated: bool,
    /// The plugin (with its status) that rejected the node in the cycle: the first failing.
    pub rejected_by: Option<PluginStatus>,
    /// Every Filter plugin run alone on the node, in profile order.
    pub filters: Vec<PluginStatus>,
    /// Per Score plugin, when the node was scored.
    pub scores: Vec<ScoreCell>,
    pub total: Option<i64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExplainReport {
    /// `namespace/name`.
    pub pod: String,
    pub source: String,
    pub priority: i32,
    /// The attempt explained (1 = the first).
    pub attempt: u32,
    /// How many attempts the pod had in the whole simulation.
    pub attempts: u32,
    /// Cycles run (for any pod) before this attempt's.
    pub cycles_before: u64,
    /// The nomination the pod had when its cycle started.
    pub nominated_node: Option<String>,
    /// Why the pod was never attempted (scheduling gates, another scheduler).
    pub not_queued: Option<String>,
    pub pre_filter: Vec<PluginStatus>,
    /// Every node, in the snapshot's order.
    pub nodes: Vec<NodeReport>,
    /// How the node was chosen: `nominated node fits`, `only feasible node`, `highest total`
    /// (with `tied` nodes when several share it; `tie_break` says how one was picked).
    pub selection: Option<String>,
    pub tied: Vec<String>,
    /// How the pod's profile picks among tied nodes: `upstream` (the root of upstream's score
    /// heap over the nodes in the order found) or `random` (a draw seeded by `--seed`).
    pub tie_break: &'static str,
    pub selected_node: Option<String>,
    /// The cycle's result: `scheduled`, `unschedulable`, `bind_failed`.
    pub result: Option<String>,
    /// Upstream's FitError text (with PostFilter's message) when no node fit.
    pub fit_error: Option<String>,
    /// What DefaultPreemption did when no node fit.
    pub preemption: Option<PreemptionReport>,
    /// Where the pod ended when the whole simulation was done.
    pub final_result: PodResult,
    pub final_node: Option<String>,
    pub final_attempts: u32,
    /// One row per extender call of the pod's cycle (`extenders` of `--config`).
    pub extenders: Vec<extenders::ExtenderReport>,
}

/// Finds the pod `wanted` (`name` or `namespace/name`) among the manifests' bound pods and
/// the simulation's pending ones (the input's and those its workload controllers create,
/// OrderedReady StatefulSets' later ordinals included).
fn find_pod<'a>(m: &'a Manifests, pending: &'a [PendingPod], wanted: &str) -> Result<&'a Pod, String> {
    let matches: Vec<&Pod> = m
        .bound_pods()
        .map(|p| &p.pod)
        .chain(pending.iter().map(|p| &p.pod))
        .filter(|p| if wanted.contains('/') { p.key() == wanted } else { &*p.name == wanted })
        .collect();
    match matches.as_slice() {
        [] => Err(format!("pod {wanted:?} is not in the manifests")),
        [p] => match p.node_name {
            Some(node) => {
                Err(format!("pod {} is already bound to node {node} (spec.nodeName): nothing to explain", p.key()))
            }
            None => Ok(p),
        },
        many => {
            let keys: Vec<String> = many.iter().map(|p| p.key()).collect();
            Err(format!("pod name {wanted:?} is ambiguous: {}; say namespace/name", keys.join(", ")))
        }
    }
}

pub fn explain(
    manifests: &Manifests,
    wanted: &str,
    profiles: impl Into<ksched_engine::framework::Profiles>,
    queue: ksched_engine::queue::QueueConfig,
    seed: u64,
    time: crate::simulate::Timing,
    attempt: u32,
) -> Result<ExplainReport, String> {
    let profiles: ksched_engine::framework::Profiles = profiles.into();
    let tie_break = profiles.primary().tie_break;
    // The pods the run will have (controllers' pods are named and given uids from the seed,
    // so loading again in `simulate_observed` makes the same ones).
    let pending = manifests.load_full(profiles.clone(), queue.clone(), seed).map_err(|e| e.to_string())?.pending;
    let target = find_pod(manifests, &pending, wanted)?;
    let key = target.key();
    let tie_break = profiles.get(target.scheduler_name.as_str()).map_or(tie_break, |p| p.tie_break).name();
    // The simulation `simulate` runs, with a recorder following every cycle of this pod.
    let recorder = CycleRecorder::for_pod(target.uid.clone()).with_each_filter_plugin();
    let (sim_report, observer) = simulate_observed(manifests, profiles, queue, seed, time, Some(Box::new(recorder)))?;
    let observer: Box<dyn Any> = observer.ok_or("the simulation lost its observer")?;
    let recorder = observer.downcast::<CycleRecorder>().map_err(|_| "the simulation's observer is not ours")?;
    let row = sim_report.pods.iter().find(|p| p.pod == key).ok_or_else(|| format!("pod {key} is not pending"))?;
    let attempts = recorder.records.len();
    let mut report = ExplainReport {
        pod: key.clone(),
        source: row.source.clone(),
        priority: row.priority,
        attempt,
        attempts: attempts as u32,
        cycles_before: 0,
        nominated_node: None,
        not_queued: row.reason.clone().filter(|_| row.result == PodResult::NotQueued),
        pre_filter: Vec::new(),
        nodes: Vec::new(),
        selection: None,
        tied: Vec::new(),
        tie_break,
        selected_node: None,
        result: None,
        fit_error: None,
        preemption: None,
        final_result: row.result,
        final_node: row.node.clone(),
        final_attempts: row.attempts,
        extenders: Vec::new(),
    };
    if attempt == 0 {
        return Err("--attempt counts from 1".into());
    }
    let Some(rec) = recorder.records.get(attempt as usize - 1) else {
        if attempt == 1 && attempts == 0 {
            // Never attempted (not queued): the report says why.
            return Ok(report);
        }
        return Err(format!(
            "pod {key} had {attempts} scheduling attempt(s); --attempt {attempt} asks for one it never had"
        ));
    };
    fill(&mut report, rec);
    report.extenders = rec.extenders.iter().map(extenders::ExtenderReport::from).collect();
    Ok(report)
}

/// The explanation of one recorded cycle of a pod outside `explain`'s own run (`ksched
/// capacity`'s pod left pending): attempt `attempt` of `attempts`, the pod still pending at
/// the end; `source` says which run.
pub fn from_record(
    rec: &CycleRecord,
    source: String,
    attempt: u32,
    attempts: u32,
    tie_break: &'static str,
) -> ExplainReport {
    let pod = rec.pod.as_ref();
    let mut report = ExplainReport {
        pod: pod.map(Pod::key).unwrap_or_default(),
        source,
        priority: pod.map_or(0, |p| p.priority),
        attempt,
        attempts,
        cycles_before: 0,
        nominated_node: None,
        not_queued: None,
        pre_filter: Vec::new(),
        nodes: Vec::new(),
        selection: None,
        tied: Vec::new(),
        tie_break,
        selected_node: None,
        result: None,
        fit_error: None,
        preemption: None,
        final_result: PodResult::Unschedulable,
        final_node: None,
        final_attempts: attempts,
        extenders: rec.extenders.iter().map(extenders::ExtenderReport::from).collect(),
    };
    fill(&mut report, rec);
    report
}

fn record_outcome(report: &mut ExplainReport, outcome: &CycleOutcome) {
    match outcome {
        CycleOutcome::Scheduled { decision, .. } => {
            report.result = Some("scheduled".into());
            report.selected_node = Some(decision.node.to_string());
        }
        CycleOutcome::Unschedulable { error, preemption, .. } => {
            report.result = Some("unschedulable".into());
            report.fit_error = Some(error.to_string());
            report.preemption = preemption.as_ref().map(|p| PreemptionReport {
                node: p.node.to_string(),
                victims: p.victims.iter().map(|v| v.key()).collect(),
            });
        }
        CycleOutcome::BindFailed { error, .. } => {
            report.result = Some("bind_failed".into());
            report.fit_error = Some(error.clone());
        }
    }
}

fn fill(report: &mut ExplainReport, rec: &CycleRecord) {
    report.cycles_before = rec.cycles_before;
    report.nominated_node = rec.pod.as_ref().and_then(|p| p.nominated_node_name).map(|n| n.to_string());
    if let Some(o) = &rec.outcome {
        record_outcome(report, o);
    }
    report.pre_filter = rec.pre_filter.iter().map(|(p, st)| PluginStatus::new(p, Some(st))).collect();
    for n in &rec.nodes {
        let scored = rec.scored.iter().position(|&s| s == n.node);
        let scores = scored
            .map(|j| {
                rec.scores
                    .iter()
                    .filter_map(|d| {
                        Some(ScoreCell {
                            plugin: d.plugin.to_owned(),
                            raw: *d.raw.get(j)?,
                            normalized: *d.normalized.get(j)?,
                            weight: d.weight,
                            weighted: *d.weighted.get(j)?,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        report.nodes.push(NodeReport {
            node: n.node.to_string(),
            feasible: n.verdict.is_success(),
            evaluated: n.visited,
            rejected_by: (!n.verdict.is_success()).then(|| PluginStatus::new(n.verdict.plugin, Some(&n.verdict))),
            filters: n.filters.iter().map(|(p, st)| PluginStatus::new(p, st.as_ref())).collect(),
            scores,
            total: scored.and_then(|j| rec.totals.get(j).copied()),
        });
    }
    if let Some(sel) = &rec.selection {
        report.selection = Some(
            match sel.by {
                SelectedBy::NominatedNode => "nominated node fits",
                SelectedBy::OnlyFeasibleNode => "only feasible node",
                SelectedBy::HighestTotal => "highest total",
            }
            .into(),
        );
        if sel.tied.len() > 1 {
            report.tied = sel.tied.iter().map(|n| n.to_string()).collect();
        }
    }
}

pub fn run(args: &ExplainArgs) -> Result<(), String> {
    let (manifests, profiles, queue) = load_inputs(&args.input)?;
    let report = explain(&manifests, &args.pod, profiles, queue, args.input.seed, args.input.timing(), args.attempt)?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?),
        Format::Table => print!("{}", table(&report, if args.all { usize::MAX } else { args.limit })),
    }
    Ok(())
}

/// The human-readable explanation; at most `limit` nodes per table.
pub fn table(r: &ExplainReport, limit: usize) -> String {
    let mut out = format!("pod {} (priority {}) from {}\n", r.pod, r.priority, r.source);
    if let Some(why) = &r.not_queued {
        out.push_str(&format!("never scheduled: {why}\n"));
        return out;
    }
    if r.result.is_none() {
        out.push_str("its cycle never ran\n");
        return out;
    }
    out.push_str(&format!("attempt {} of {}: after {} other cycles", r.attempt, r.attempts, r.cycles_before));
    if let Some(n) = &r.nominated_node {
        out.push_str(&format!(", nominated to {n}"));
    }
    out.push('\n');
    match (&r.selected_node, &r.fit_error) {
        (Some(node), _) => {
            out.push_str(&format!("result: scheduled to {node} ({})", r.selection.as_deref().unwrap_or("")));
            if !r.tied.is_empty() {
                let how = match r.tie_break {
                    "random" => "drawn by the seeded RNG",
                    _ => "upstream's pick: the root of its score heap over the nodes in the order found",
                };
                out.push_str(&format!("; tied: {} ({how})", r.tied.join(", ")));
            }
            out.push('\n');
        }
        (None, Some(err)) => out.push_str(&format!("result: {}: {err}\n", r.result.as_deref().unwrap_or(""))),
        (None, None) => {}
    }
    if let Some(p) = &r.preemption {
        out.push_str(&format!("preemption: nominated to {}, deleting {}\n", p.node, p.victims.join(", ")));
    }
    let final_node = r.final_node.as_deref().map(|n| format!(" on {n}")).unwrap_or_default();
    out.push_str(&format!("in the end: {:?}{final_node} after {} attempt(s)\n", r.final_result, r.final_attempts));

    out.push_str("\nPreFilter\n");
    let mut rows = vec![vec!["  PLUGIN".to_owned(), "RESULT".to_owned(), "MESSAGE".to_owned()]];
    for p in &r.pre_filter {
        rows.push(vec![format!("  {}", p.plugin), p.code.clone(), p.message.clone()]);
    }
    out.push_str(&columns(&rows));
    if r.nodes.is_empty() {
        return out;
    }

    out.push_str(
        "\nFilter (REJECTED BY: the first failing plugin, which the cycle used; ALSO FAILING: the later ones)\n",
    );
    if let Some(first) = r.nodes.first() {
        let skipped: Vec<&str> =
            first.filters.iter().filter(|f| f.code == "Skipped").map(|f| f.plugin.as_str()).collect();
        if !skipped.is_empty() {
            out.push_str(&format!("  skipped after PreFilter: {}\n", skipped.join(", ")));
        }
    }
    let mut rows = vec![["  NODE", "RESULT", "REJECTED BY", "ALSO FAILING"].map(String::from).to_vec()];
    for n in r.nodes.iter().take(limit) {
        let result = match (n.feasible, n.evaluated) {
            (true, true) => "feasible",
            (true, false) => "feasible (not visited)",
            (false, true) => "rejected",
            (false, false) => "rejected (not visited)",
        };
        let rejected_by = n.rejected_by.as_ref().map(|s| format!("{}: {}", s.plugin, s.message)).unwrap_or_default();
        let first = n.rejected_by.as_ref().map(|s| s.plugin.as_str());
        let also: Vec<String> = n
            .filters
            .iter()
            .filter(|f| f.code != "Success" && f.code != "Skipped" && Some(f.plugin.as_str()) != first)
            .map(|f| format!("{}: {}", f.plugin, f.message))
            .collect();
        rows.push(vec![format!("  {}", n.node), result.into(), rejected_by, also.join("; ")]);
    }
    out.push_str(&columns(&rows));
    if r.nodes.len() > limit {
        out.push_str(&format!("  ... {} more nodes (--all lists them)\n", r.nodes.len() - limit));
    }

    out.push_str(&extenders::table(&r.extenders, limit));
    let mut scored: Vec<&NodeReport> = r.nodes.iter().filter(|n| n.total.is_some()).collect();
    if scored.is_empty() {
        return out;
    }
    scored.sort_by_key(|n| std::cmp::Reverse(n.total));
    out.push_str("\nScore (raw → normalized × weight = weighted), highest total first\n");
    let mut rows = vec![["  NODE", "PLUGIN", "RAW", "NORMALIZED", "WEIGHT", "WEIGHTED"].map(String::from).to_vec()];
    for n in scored.iter().take(limit) {
        for (i, s) in n.scores.iter().enumerate() {
            rows.push(vec![
                if i == 0 { format!("  {}", n.node) } else { String::new() },
                s.plugin.clone(),
                s.raw.to_string(),
                s.normalized.to_string(),
                s.weight.to_string(),
                s.weighted.to_string(),
            ]);
        }
        let mark = if r.selected_node.as_deref() == Some(n.node.as_str()) { "  <- selected" } else { "" };
        rows.push(vec![
            String::new(),
            "total".into(),
            String::new(),
            String::new(),
            String::new(),
            format!("{}{mark}", n.total.unwrap_or(0)),
        ]);
    }
    out.push_str(&columns(&rows));
    if scored.len() > limit {
        out.push_str(&format!("  ... {} more scored nodes (--all lists them)\n", scored.len() - limit));
    }
    out
}

mod extenders;
#[cfg(test)]
mod tests;
