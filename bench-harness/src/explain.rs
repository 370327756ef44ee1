//! `ksched explain POD -f FILE...`: one attempt of a pod's scheduling, plugin by plugin, like
//! kube-scheduler-simulator's result history. The simulation `simulate` runs is run with a
//! `CycleRecorder` observing the scheduler's own cycles of the pod: every PreFilter result,
//! every node's verdict and every Filter plugin's result on it (the first failing one is what
//! the cycle used), every Score plugin's raw, normalized and weighted score per scored node,
//! the pick with its ties and the PostFilter (preemption) outcome. `--attempt N` picks which
//! attempt to show; where the pod ended comes from the same run.
//!
//! The target follows kubectl's habits (`target.rs`): `KIND/NAME` (`deploy/web`, `sts/db`)
//! and a name prefix list the pods they select with their outcomes; `-n` picks the
//! namespace; a name that matches nothing lists the closest names.

use std::any::Any;

use crate::load::LoadSim;
use clap::Args;
use ksched_engine::framework::Status;
use ksched_engine::observer::{CycleRecord, CycleRecorder, SelectedBy};
use ksched_engine::scheduler::CycleOutcome;
use ksched_k8s::manifest::Manifests;
use serde::Serialize;

use crate::format::Format;
use crate::progress::Progress;
use crate::simulate::{columns, load_inputs, simulate_hooked, simulate_observed, InputArgs, PodResult};
use preemption::PreemptionDetail;
use target::{Resolved, Selector, Target};

#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {
    /// What to explain: a pending pod (`NAME`, in any namespace when unique, or
    /// `NAMESPACE/NAME`), a name prefix (every pod whose name starts with it, listed), or
    /// `KIND/NAME` with kubectl's kind names (deploy, deployment, sts, statefulset, ds,
    /// daemonset, job, cronjob, cj, rs, replicaset, rc, pod, po; plurals too): that
    /// controller's pods, listed with their outcomes.
    #[arg(value_name = "TARGET")]
    pub pod: String,
    /// With a kind as TARGET, kubectl's two words: `explain deploy web` is `explain deploy/web`.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// The namespace of TARGET (default: any namespace, when the name is unique).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Output format (`wide`: every node and candidate, and more columns).
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Yaml, Format::Wide]), default_value = "text")]
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
    /// The plugin (with its status) that rejected the node in the cycle: the first failing
    /// Filter plugin, or the PreFilter plugin(s) that ruled it out before filtering.
    pub rejected_by: Option<PluginStatus>,
    /// Ruled out before filtering: left out by a PreFilter plugin's node set (NodeAffinity on
    /// `metadata.name`, ...), or every node when PreFilter rejected the pod.
    pub ruled_out_by_pre_filter: bool,
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
    /// The name prefix that named the pod, when the target was no pod's whole name.
    pub matched_prefix: Option<String>,
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
    /// OpportunisticBatching: the next node of the previous pod's ranking, which the pod
    /// tried first, and whether it fit (`fits`, or the filter's message).
    pub batch_hint: Option<(String, String)>,
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
    /// What DefaultPreemption did when no node fit: the nominated node and victims, every
    /// candidate, the tie and the criterion that chose the node.
    pub preemption: Option<PreemptionDetail>,
    /// Where the pod ended when the whole simulation was done.
    pub final_result: PodResult,
    pub final_node: Option<String>,
    pub final_attempts: u32,
    /// One row per extender call of the pod's cycle (`extenders` of `--config`).
    pub extenders: Vec<extenders::ExtenderReport>,
    /// When the attempt bound the pod: its ResourceClaims (spec order) with the devices
    /// DynamicResources allocated on the selected node (absent without claims).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<devices::ClaimDevices>,
}

impl ExplainReport {
    /// The report of attempt `attempt` of `attempts` of `pod`, before a cycle's record fills
    /// it in: no nodes, no selection, no extender calls, no claims; the pod ended
    /// `final_result`, unbound, after `attempts` attempts.
    fn new(
        pod: String,
        source: String,
        priority: i32,
        (attempt, attempts): (u32, u32),
        tie_break: &'static str,
        final_result: PodResult,
    ) -> ExplainReport {
        ExplainReport {
            pod,
            matched_prefix: None,
            source,
            priority,
            attempt,
            attempts,
            cycles_before: 0,
            nominated_node: None,
            batch_hint: None,
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
            final_result,
            final_node: None,
            final_attempts: attempts,
            extenders: Vec::new(),
            claims: Vec::new(),
        }
    }
}

/// What `explain` printed: one pod's cycle, or the pods a target selects.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Explained {
    Pod(Box<ExplainReport>),
    Pods(PodList),
}

/// The pods a `KIND/NAME` or a name prefix selects, with their outcomes.
#[derive(Clone, Debug, Serialize)]
pub struct PodList {
    /// `deployment default/web`, `pods named web*`.
    pub target: String,
    /// `Deployment`, ..., or `Pod` for a prefix.
    pub kind: String,
    pub pods: Vec<ListedPod>,
}

/// One pod of a `PodList`.
#[derive(Clone, Debug, Serialize)]
pub struct ListedPod {
    /// `namespace/name`.
    pub pod: String,
    /// `bound` (already bound in the input) or simulate's result (`scheduled`,
    /// `unschedulable`, `preempted`, `not_queued`, `completed`, `failed`, `deleted`).
    pub result: String,
    pub node: Option<String>,
    pub priority: i32,
    pub attempts: u32,
    pub nominated_node: Option<String>,
    /// Why it is not scheduled (its last attempt's FitError, or why it was never queued).
    pub reason: Option<String>,
    pub source: String,
}

/// Explains the one pod `wanted` names (`explain_target` with no `-n`).
#[allow(dead_code)] // The library form (tests, other front ends); `run` takes any target.
pub fn explain(
    manifests: &Manifests,
    wanted: &str,
    profiles: impl Into<ksched_engine::framework::Profiles>,
    queue: ksched_engine::queue::QueueConfig,
    seed: u64,
    time: crate::simulate::Timing,
    attempt: u32,
) -> Result<ExplainReport, String> {
    let target = Target::parse(wanted, None)?;
    match explain_target(manifests, &target, profiles, queue, seed, time, attempt)? {
        Explained::Pod(r) => Ok(*r),
        Explained::Pods(list) => Err(format!(
            "{wanted:?} selects {} pods ({}); name one",
            list.pods.len(),
            list.pods.iter().map(|p| p.pod.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Explains what `target` names: a pod's cycle, or the list of the pods it selects.
pub fn explain_target(
    manifests: &Manifests,
    target: &Target,
    profiles: impl Into<ksched_engine::framework::Profiles>,
    queue: ksched_engine::queue::QueueConfig,
    seed: u64,
    time: crate::simulate::Timing,
    attempt: u32,
) -> Result<Explained, String> {
    if attempt == 0 {
        return Err("--attempt counts from 1".into());
    }
    let profiles: ksched_engine::framework::Profiles = profiles.into();
    let tie_break = profiles.primary().tie_break;
    // The pods the run will have (controllers' pods are named and given uids from the seed,
    // so loading again in `simulate_observed` makes the same ones).
    let pending = manifests.load_full(profiles.clone(), queue.clone(), seed).map_err(|e| e.to_string())?.pending;
    let wanted = target;
    let (target, prefix) = match target::resolve(manifests, &pending, wanted)? {
        Resolved::Pod { pod, prefix } => (pod, prefix),
        Resolved::Pods(sel) if attempt != 1 => {
            return Err(format!("--attempt applies to one pod; {} selects several (name one)", sel.title()))
        }
        Resolved::Pods(sel) => return list(manifests, &sel, profiles, queue, seed, time).map(Explained::Pods),
    };
    let key = target.key();
    let tie_break = profiles.get(target.scheduler_name.as_str()).map_or(tie_break, |p| p.tie_break).name();
    // The simulation `simulate` runs, with a recorder following every cycle of this pod.
    let recorder = CycleRecorder::for_pod(target.uid.clone()).with_each_filter_plugin();
    let mut hooks = devices::ExplainHooks::new(Box::new(recorder), target.uid.clone(), attempt);
    let sim_report = simulate_hooked(manifests, profiles, queue, seed, time, &mut hooks, &mut Progress::hidden())?;
    let observer: Box<dyn Any> = hooks.observer.take().ok_or("the simulation lost its observer")?;
    let recorder = observer.downcast::<CycleRecorder>().map_err(|_| "the simulation's observer is not ours")?;
    let row = sim_report.pods.iter().find(|p| p.pod == key).ok_or_else(|| format!("pod {key} is not pending"))?;
    let attempts = recorder.records.len();
    let mut report = ExplainReport {
        matched_prefix: prefix.then(|| wanted.name.clone()),
        not_queued: row.reason.clone().filter(|_| row.result == PodResult::NotQueued),
        final_node: row.node.clone(),
        final_attempts: row.attempts,
        claims: std::mem::take(&mut hooks.claims),
        ..ExplainReport::new(
            key.clone(),
            row.source.clone(),
            row.priority,
            (attempt, attempts as u32),
            tie_break,
            row.result,
        )
    };
    let Some(rec) = recorder.records.get(attempt as usize - 1) else {
        if attempt == 1 && attempts == 0 {
            // Never attempted (not queued): the report says why.
            return Ok(Explained::Pod(Box::new(report)));
        }
        return Err(format!(
            "pod {key} had {attempts} scheduling attempt(s); --attempt {attempt} asks for one it never had"
        ));
    };
    let node_names: Vec<String> = manifests.nodes.iter().map(|(n, _)| n.name.to_string()).collect();
    fill(&mut report, rec, &node_names);
    report.extenders = rec.extenders.iter().map(extenders::ExtenderReport::from).collect();
    // A node an extender's filter failed passed the Filter plugins: the extender rejected it.
    for e in report.extenders.iter().filter(|e| e.verb == "filter") {
        for f in &e.failed {
            if let Some(n) = report.nodes.iter_mut().find(|n| n.node == f.node && n.feasible) {
                n.feasible = false;
                n.rejected_by = Some(PluginStatus {
                    plugin: format!("extender {}", e.extender),
                    code: f.code.clone(),
                    message: f.reason.clone(),
                });
            }
        }
    }
    Ok(Explained::Pod(Box::new(report)))
}

/// The pods `sel` selects: the input's bound ones, then the run's rows (pending pods and
/// those the controllers created), with their outcomes.
fn list(
    manifests: &Manifests,
    sel: &Selector,
    profiles: ksched_engine::framework::Profiles,
    queue: ksched_engine::queue::QueueConfig,
    seed: u64,
    time: crate::simulate::Timing,
) -> Result<PodList, String> {
    let (sim, _) = simulate_observed(manifests, profiles, queue, seed, time, None)?;
    let owner = |o: &Option<ksched_engine::api::OwnerRef>| o.as_ref().map(|o| (o.kind.as_str(), o.name.as_str()));
    let mut pods: Vec<ListedPod> = manifests
        .bound_pods()
        .filter(|p| sel.matches(p.pod.namespace.as_str(), &p.pod.name, owner(&p.pod.owner)))
        .map(|p| ListedPod {
            pod: p.pod.key(),
            result: "bound".into(),
            node: p.pod.node_name.map(|n| n.to_string()),
            priority: p.pod.priority,
            attempts: 0,
            nominated_node: None,
            reason: None,
            source: p.source.to_string(),
        })
        .collect();
    for r in &sim.pods {
        let (ns, name) = r.pod.split_once('/').unwrap_or(("default", r.pod.as_str()));
        let by = r.owner.as_ref().and_then(|o| o.split_once('/'));
        if !sel.matches(ns, name, by) {
            continue;
        }
        let result = serde_json::to_value(r.result).ok().and_then(|v| v.as_str().map(str::to_owned));
        pods.push(ListedPod {
            pod: r.pod.clone(),
            result: result.unwrap_or_default(),
            node: r.node.clone(),
            priority: r.priority,
            attempts: r.attempts,
            nominated_node: r.nominated_node.clone(),
            reason: r.reason.clone().filter(|_| matches!(r.result, PodResult::Unschedulable | PodResult::NotQueued)),
            source: r.source.clone(),
        });
    }
    let kind = match sel {
        Selector::Controller { kind, .. } => kind.name(),
        Selector::Prefix { .. } => "Pod",
    };
    Ok(PodList { target: sel.title(), kind: kind.into(), pods })
}

/// The explanation of one recorded cycle of a pod outside `explain`'s own run (`ksched
/// capacity`'s pod left pending): attempt `attempt` of `attempts`, the pod still pending at
/// the end; `source` says which run.
pub fn from_record(
    rec: &CycleRecord,
    source: String,
    (attempt, attempts): (u32, u32),
    tie_break: &'static str,
    node_names: &[String],
) -> ExplainReport {
    let pod = rec.pod.as_ref();
    let mut report = ExplainReport {
        extenders: rec.extenders.iter().map(extenders::ExtenderReport::from).collect(),
        ..ExplainReport::new(
            pod.map(|p| p.key()).unwrap_or_default(),
            source,
            pod.map_or(0, |p| p.priority),
            (attempt, attempts),
            tie_break,
            PodResult::Unschedulable,
        )
    };
    fill(&mut report, rec, node_names);
    report
}

fn record_outcome(report: &mut ExplainReport, outcome: &CycleOutcome) {
    match outcome {
        CycleOutcome::Scheduled { decision, .. } => {
            report.result = Some("scheduled".into());
            report.selected_node = Some(decision.node.to_string());
        }
        CycleOutcome::Unschedulable { error, .. } => {
            report.result = Some("unschedulable".into());
            report.fit_error = Some(error.to_string());
        }
        CycleOutcome::BindFailed { error, .. } => {
            report.result = Some("bind_failed".into());
            report.fit_error = Some(error.clone());
        }
    }
}

/// The plugin named on a node PreFilter ruled out: the narrowing plugins for a node a node
/// set left out, the rejecting PreFilter plugin when PreFilter rejected the pod.
fn ruled_out_status(rec: &CycleRecord, st: &Status) -> PluginStatus {
    let plugin = if !st.plugin.is_empty() {
        st.plugin.to_owned()
    } else if !rec.narrowed_by.is_empty() {
        rec.narrowed_by.join(", ")
    } else {
        // No plugin said: the first PreFilter plugin that did not pass.
        rec.pre_filter
            .iter()
            .find(|(_, s)| !s.is_success() && s.code != ksched_engine::framework::Code::Skip)
            .map_or("PreFilter", |(p, _)| p)
            .to_owned()
    };
    PluginStatus { plugin, code: format!("{:?}", st.code), message: st.message() }
}

fn fill(report: &mut ExplainReport, rec: &CycleRecord, node_names: &[String]) {
    report.cycles_before = rec.cycles_before;
    report.nominated_node = rec.pod.as_ref().and_then(|p| p.nominated_node_name).map(|n| n.to_string());
    report.batch_hint = rec
        .batch_hint
        .as_ref()
        .map(|(n, st)| (n.to_string(), if st.is_success() { "fits".to_owned() } else { st.to_string() }));
    if let Some(o) = &rec.outcome {
        record_outcome(report, o);
    }
    report.preemption = rec.post_filter.as_ref().and_then(PreemptionDetail::from_record);
    report.pre_filter = rec.pre_filter.iter().map(|(p, st)| PluginStatus::new(p, Some(st))).collect();
    // PreFilter rejected the pod: every node has its status (upstream's FitError counts it
    // on each), none was filtered.
    if let (Some(st), true) = (&rec.pre_filter_rejection, rec.nodes.is_empty()) {
        for node in node_names {
            report.nodes.push(NodeReport {
                node: node.clone(),
                feasible: false,
                evaluated: false,
                rejected_by: Some(ruled_out_status(rec, st)),
                ruled_out_by_pre_filter: true,
                filters: Vec::new(),
                scores: Vec::new(),
                total: None,
            });
        }
    }
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
        let narrowed_out = rec.narrowed_to.as_ref().is_some_and(|names| !names.contains(&n.node));
        let rejected_by = match (n.verdict.is_success(), narrowed_out || n.verdict.plugin.is_empty()) {
            (true, _) => None,
            (false, true) => Some(ruled_out_status(rec, &n.verdict)),
            (false, false) => Some(PluginStatus::new(n.verdict.plugin, Some(&n.verdict))),
        };
        report.nodes.push(NodeReport {
            node: n.node.to_string(),
            feasible: n.verdict.is_success(),
            evaluated: n.visited,
            rejected_by,
            ruled_out_by_pre_filter: narrowed_out,
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
                SelectedBy::BatchHint => {
                    "OpportunisticBatching hint fits: the next node of the previous pod's ranking, unscored"
                }
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
    let target = Target::from_args(&args.pod, args.name.as_deref(), args.namespace.as_deref())?;
    let explained =
        explain_target(&manifests, &target, profiles, queue, args.input.seed, args.input.timing(), args.attempt)?;
    let limit = if args.all || args.format == Format::Wide { usize::MAX } else { args.limit };
    let wide = args.format == Format::Wide;
    match (&explained, args.format) {
        (_, Format::Json | Format::Yaml) => print!("{}", crate::format::document(&explained, args.format)?),
        (Explained::Pod(r), _) => print!("{}", render(r, limit, wide)),
        (Explained::Pods(list), _) => print!("{}", list_table(list, wide)),
    }
    Ok(())
}

/// A `PodList` for a reader; `wide` adds the priority, nomination and source columns.
pub fn list_table(list: &PodList, wide: bool) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for p in &list.pods {
        *counts.entry(p.result.as_str()).or_default() += 1;
    }
    let counts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {}", r.replace('_', " "))).collect();
    let mut out = format!("{}: {} pod(s)", list.target, list.pods.len());
    if !counts.is_empty() {
        out.push_str(&format!(": {}", counts.join(", ")));
    }
    out.push('\n');
    if list.pods.is_empty() {
        out.push_str("(it made no pods in the run)\n");
        return out;
    }
    let mut head = vec!["POD", "RESULT", "NODE", "ATTEMPTS"];
    if wide {
        head.extend(["PRIORITY", "NOMINATED", "SOURCE"]);
    }
    head.push("DETAILS");
    let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    for p in &list.pods {
        let mut row =
            vec![p.pod.clone(), p.result.clone(), p.node.clone().unwrap_or_else(|| "-".into()), p.attempts.to_string()];
        if wide {
            row.extend([
                p.priority.to_string(),
                p.nominated_node.clone().unwrap_or_else(|| "-".into()),
                p.source.clone(),
            ]);
        }
        row.push(p.reason.clone().unwrap_or_default());
        rows.push(row);
    }
    out.push_str(&columns(&rows));
    if let Some(p) = list.pods.iter().find(|p| p.result != "bound") {
        out.push_str(&format!("explain one pod's cycles: ksched explain {} -f ...\n", p.pod));
    }
    out
}

/// The human-readable explanation; at most `limit` nodes per table.
#[allow(dead_code)] // The library form (tests); `run` renders wide too.
pub fn table(r: &ExplainReport, limit: usize) -> String {
    render(r, limit, false)
}

/// `table`; `wide` adds each rejection's code.
pub fn render(r: &ExplainReport, limit: usize, wide: bool) -> String {
    let mut out = format!("pod {} (priority {}) from {}", r.pod, r.priority, r.source);
    if let Some(prefix) = &r.matched_prefix {
        out.push_str(&format!(" (the only pending pod named {prefix}*)"));
    }
    out.push('\n');
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
    if let Some((node, verdict)) = &r.batch_hint {
        out.push_str(&format!(
            "OpportunisticBatching hint (the next node of the previous pod's ranking): {node}, {verdict}\n"
        ));
    }
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
    if let Some(p) = r.preemption.as_ref().filter(|p| p.node.is_some() || p.potential_nodes > 0) {
        out.push_str(&p.table(limit));
    }
    let final_node = r.final_node.as_deref().map(|n| format!(" on {n}")).unwrap_or_default();
    out.push_str(&format!("in the end: {:?}{final_node} after {} attempt(s)\n", r.final_result, r.final_attempts));
    out.push_str(&devices::table(&r.claims, r.selected_node.as_deref().unwrap_or("")));

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
    let mut head = vec!["  NODE", "RESULT", "REJECTED BY"];
    if wide {
        head.push("CODE");
    }
    head.push("ALSO FAILING");
    let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    for n in r.nodes.iter().take(limit) {
        let result = match (n.feasible, n.evaluated, n.ruled_out_by_pre_filter) {
            (_, _, true) => "ruled out by PreFilter",
            (true, true, _) => "feasible",
            (true, false, _) => "feasible (not visited)",
            (false, true, _) => "rejected",
            (false, false, _) => "rejected (not visited)",
        };
        let rejected_by = n.rejected_by.as_ref().map(|s| format!("{}: {}", s.plugin, s.message)).unwrap_or_default();
        let first = n.rejected_by.as_ref().map(|s| s.plugin.as_str());
        let also: Vec<String> = n
            .filters
            .iter()
            .filter(|f| f.code != "Success" && f.code != "Skipped" && Some(f.plugin.as_str()) != first)
            .map(|f| format!("{}: {}", f.plugin, f.message))
            .collect();
        let mut row = vec![format!("  {}", n.node), result.into(), rejected_by];
        if wide {
            row.push(n.rejected_by.as_ref().map(|s| s.code.clone()).unwrap_or_default());
        }
        row.push(also.join("; "));
        rows.push(row);
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

mod devices;
mod extenders;
pub mod preemption;
pub mod target;
#[cfg(test)]
mod tests;
