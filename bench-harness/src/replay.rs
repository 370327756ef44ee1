//! `ksched replay TRACE`: a recorded or written trace replayed on the simulation's clock with
//! ksched's scheduler (the trace format and importers: `ksched_k8s::trace`). The report says
//! what became of every pod (where and when it was bound, its scheduling delay, how it ended),
//! for a recording with the recorded scheduler's bindings whether ksched chose the same node,
//! a node tied with it at the top score, or another (and why), what each drain did, and, with
//! `--timeline` / `--html`, the run over time (`ksched_sim::timeline`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::load::LoadSim;
use clap::{Args, ValueEnum};
use driver::{pod_key, DrainOutcome, PodKey, Replay};
use ksched_engine::api::{Pod, PodUid, Sym};
use ksched_engine::observer::{CycleObserver, FilterView, Selection};
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::util::time::{Clock, Timestamp};
use ksched_k8s::manifest::{read_files_with, Manifests, ReadOptions, Workload};
use ksched_k8s::trace::{NodeSelection, Op, Trace};
use ksched_k8s::unmodelled::Unmodelled;
use ksched_sim::cluster::{PodEvent, PodWatch};
use ksched_sim::simulation::{Observer, RunOptions, Until};
use ksched_sim::timeline::{Sample, Timeline};
use ksched_sim::Simulation;
use serde::Serialize;

mod driver;

use crate::front_ends::TieBreakArg;
use crate::simulate::{columns, load_profiles, parse_start};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum TraceFormat {
    /// ksched's trace format (JSON lines; README "Traces").
    Ksched,
    /// Kubernetes audit logs (audit.k8s.io/v1 Event JSON lines, Request or RequestResponse
    /// level), one or more files in time order.
    Audit,
    /// Alibaba's GPU cluster trace (cluster-trace-gpu-v2023): the node CSV, then the pod CSV.
    Alibaba,
}

/// `--gpu-share`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum GpuShareArg {
    /// A share of one GPU takes a whole `nvidia.com/gpu`.
    Whole,
    /// Thousandths of a GPU (`alibaba.com/gpu-milli`).
    Milli,
}

use crate::format::Format;

/// The scheduler and the simulated run, as `ksched replay` and `ksched capacity` (each of its
/// runs) take them.
#[derive(Args, Debug, Clone)]
pub struct RunSettings {
    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How a cycle picks among nodes tied at the highest total (upstream: the root of its
    /// score heap, as a scheduler at parallelism 1 picks).
    #[arg(long, value_enum, default_value_t = TieBreakArg::Upstream)]
    pub tie_break: TieBreakArg,
    #[command(flatten)]
    pub api: crate::front_ends::PreemptionApiArgs,
    /// Simulated time to run (default: until the trace is over and nothing more can happen;
    /// a day after the trace's end when something recurs: a CronJob, replicated pods with
    /// lifetimes).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Wall-clock time the run starts at (RFC 3339), for CronJob schedules.
    #[arg(long, value_name = "TIME", value_parser = parse_start)]
    pub start: Option<jiff::Timestamp>,
}

impl RunSettings {
    /// The profiles and queue settings of `--config`, with `--tie-break` and
    /// `--preemption-api-delay` applied.
    pub fn profiles(
        &self,
        gates: ksched_engine::features::FeatureGates,
    ) -> Result<(ksched_engine::framework::Profiles, ksched_engine::queue::QueueConfig), String> {
        let (mut profiles, mut queue) = load_profiles(self.config.as_deref(), gates)?;
        self.tie_break.apply(&mut profiles);
        self.api.apply(&mut queue);
        Ok((profiles, queue))
    }
}

#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    /// The trace file(s): one ksched trace; audit log files; or the Alibaba trace's node CSV
    /// and pod CSV (in that order).
    #[arg(required = true, value_name = "TRACE")]
    pub trace: Vec<PathBuf>,
    /// What the trace files are.
    #[arg(long, value_enum, default_value_t = TraceFormat::Ksched)]
    pub from: TraceFormat,
    /// Manifests of the cluster as the trace starts (nodes, pods, workloads, budgets...).
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A field of the manifests' or the trace's objects that changes upstream's decision and
    /// that ksched does not model (warned about otherwise), or a kind ksched does not model in
    /// the manifests (skipped otherwise), is an error.
    #[arg(long)]
    pub strict: bool,
    /// The scheduler and the run: --config, --seed, --tie-break, --duration, --start.
    #[command(flatten)]
    pub run: RunSettings,
    /// What-if: drain a node (`NODE`) or every node of a zone (`zone=VALUE`, or any
    /// `LABEL=VALUE`) at --drain-at: cordon, then evict its pods through the eviction rules.
    /// Repeat for several.
    #[arg(long, value_name = "NODE|zone=VALUE", value_parser = NodeSelection::parse)]
    pub drain: Vec<NodeSelection>,
    /// When the drains happen (simulated time from the start).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub drain_at: Duration,
    /// Delete the drained nodes once their pods are evicted or the drain timed out.
    #[arg(long)]
    pub drain_remove: bool,
    /// How long a drain retries evictions a PodDisruptionBudget refuses.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub drain_timeout: Duration,
    /// Alibaba: how a fractional `gpu_milli` (a share of one GPU) is requested: `whole` (one
    /// nvidia.com/gpu) or `milli` (gpu_milli of the `alibaba.com/gpu-milli` resource, nodes
    /// offering 1000 per GPU).
    #[arg(long, value_enum, default_value_t = GpuShareArg::Whole)]
    pub gpu_share: GpuShareArg,
    /// Write the time series (pending, running, allocation, fragmentation, delay,
    /// unschedulable reasons) as JSON here.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Write an HTML timeline with plots here.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Sampling step of the time series (default: the replay's length / 200, at least 1 s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub step: Option<Duration>,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Yaml]), default_value = "text")]
    pub format: Format,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    ksched_engine::util::duration::parse_cli_duration(s)
}

/// How ksched's pick compares with the recorded scheduler's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BindingMatch {
    /// The same node.
    Same,
    /// Another node tied with the recorded one at the highest total.
    Tied,
    /// Another node; `binding_reason` says why the recorded one was not taken.
    Other,
    /// ksched did not bind the pod.
    Unbound,
}

/// What became of one pod.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayPod {
    /// `namespace/name`.
    pub pod: String,
    /// Seconds into the replay.
    pub created_at: f64,
    pub bound_at: Option<f64>,
    pub node: Option<String>,
    pub attempts: u32,
    /// `running`, `pending`, or how it ended: `succeeded`, `deadline_exceeded`, `deleted`,
    /// `evicted`, `preempted`, `node_deleted`.
    pub result: String,
    pub ended_at: Option<f64>,
    /// Its last failed attempt's message, while pending.
    pub reason: Option<String>,
    /// The recorded scheduler's node.
    pub recorded_node: Option<String>,
    pub binding: Option<BindingMatch>,
    pub binding_reason: Option<String>,
    /// Its uid (the run's: the same for the same input and seed).
    #[serde(skip)]
    pub uid: PodUid,
}

/// What a drain did with one pod.
#[derive(Clone, Debug, Serialize)]
pub struct DrainReport {
    /// The trace line of the drain (0 for a `--drain` on the command line).
    pub line: u32,
    pub node: String,
    pub pod: String,
    /// `evicted`, `blocked` or `deleted_with_node`.
    pub outcome: &'static str,
    pub at: Option<f64>,
    /// Why the eviction was refused.
    pub reason: Option<String>,
    /// The pod that replaced it (same controller, created after the eviction) and where it
    /// went (`pending` when it was not bound).
    pub replaced_by: Option<String>,
    pub replacement_node: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplaySummary {
    pub trace: String,
    pub events: usize,
    pub pods: usize,
    pub bound: usize,
    pub pending_at_end: usize,
    pub running_at_end: usize,
    pub ended: usize,
    pub attempts: u64,
    pub delay_p50: Option<f64>,
    pub delay_p99: Option<f64>,
    /// Unschedulable attempts by rejecting plugin.
    pub unschedulable_by_plugin: std::collections::BTreeMap<String, u64>,
    /// Recorded bindings: same node, tied, another node, not bound by ksched.
    pub bindings_same: usize,
    pub bindings_tied: usize,
    pub bindings_other: usize,
    pub bindings_unbound: usize,
    pub simulated_seconds: f64,
    pub seed: u64,
    /// Objects of the manifests and the trace whose fields change upstream's decision and
    /// that ksched does not model (each also warned about on stderr): field → objects.
    pub unmodelled_fields: std::collections::BTreeMap<String, usize>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    pub pods: Vec<ReplayPod>,
    pub drains: Vec<DrainReport>,
    pub notes: Vec<String>,
    pub summary: ReplaySummary,
    /// The time series (also with --timeline).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<Sample>,
}

/// The recorded node's fate in ksched's cycle of a pod.
#[derive(Clone, Debug)]
struct Verdict {
    matched: BindingMatch,
    reason: Option<String>,
}

/// Watches the cycles of pods with a recorded binding: whether the recorded node passed the
/// filters, how it scored against the pick.
struct BindingCheck {
    recorded: HashMap<PodKey, Sym>,
    /// The current cycle's pod, its recorded node, and what the filters said of that node.
    current: Option<(PodUid, Sym, Option<String>)>,
    verdicts: Arc<Mutex<HashMap<PodUid, Verdict>>>,
}

impl CycleObserver for BindingCheck {
    fn cycle_started(&mut self, pod: &Pod) -> bool {
        self.current = self.recorded.get(&(pod.namespace, pod.name.clone())).map(|&node| (pod.uid.clone(), node, None));
        self.current.is_some()
    }

    fn filtered(&mut self, filter: &FilterView<'_>) {
        let Some((_, node, why)) = self.current.as_mut() else { return };
        // What the pass recorded (the verdict upstream's cycle had; a node the pass did not
        // visit, when sampling stopped early, has none).
        let snapshot = filter.snapshot();
        *why = match snapshot.position(*node) {
            None => Some(format!("the recorded node {node} is not in the cluster at this time")),
            Some(pos) => match filter.statuses.at(pos as u32) {
                Some(st) => Some(format!("the recorded node {node} fails {}: {}", st.plugin, st.message())),
                None if filter.feasible.contains(&(pos as u32)) => None,
                None => Some(format!("the recorded node {node} was not visited by the filter pass (sampling)")),
            },
        };
    }

    fn selected(&mut self, sel: &Selection<'_>) {
        let Some((uid, node, why)) = self.current.take() else { return };
        let tied = sel.tied();
        let (matched, reason) = if sel.node == node {
            (BindingMatch::Same, None)
        } else if tied.contains(&node) {
            (BindingMatch::Tied, Some(format!("{node} and {} tie at the highest total", sel.node)))
        } else if let Some(why) = why {
            (BindingMatch::Other, Some(why))
        } else {
            let total = |n: Sym| sel.nodes.iter().position(|i| i.name() == n).map(|i| sel.totals[i]);
            let reason = match (total(node), total(sel.node)) {
                (Some(a), Some(b)) => format!("the recorded node {node} scores {a}, {} scores {b}", sel.node),
                _ => format!("{} taken ({:?}); the recorded node {node} was not scored", sel.node, sel.by),
            };
            (BindingMatch::Other, Some(reason))
        };
        if let Ok(mut v) = self.verdicts.lock() {
            v.insert(uid, Verdict { matched, reason });
        }
    }
}

/// Follows every pod of the run: its row in the report.
struct Ledger {
    start: Timestamp,
    now: Timestamp,
    watch: Option<PodWatch>,
    rows: Vec<ReplayPod>,
    by_uid: HashMap<PodUid, usize>,
    /// Each row's pod (for owners) and when it was created.
    pods: Vec<Pod>,
    attempts: u64,
}

impl Ledger {
    fn secs(&self, t: Timestamp) -> f64 {
        t.saturating_since(self.start).as_secs_f64()
    }

    fn row(&mut self, pod: &Pod, at: Timestamp) -> usize {
        if let Some(&i) = self.by_uid.get(&pod.uid) {
            return i;
        }
        self.rows.push(ReplayPod {
            pod: pod.key(),
            created_at: self.secs(at),
            bound_at: None,
            node: pod.node_name.map(|n| n.to_string()),
            attempts: 0,
            result: if pod.node_name.is_some() { "running" } else { "pending" }.into(),
            ended_at: None,
            reason: None,
            recorded_node: None,
            binding: None,
            binding_reason: None,
            uid: pod.uid.clone(),
        });
        if pod.node_name.is_some() {
            self.rows.last_mut().expect("pushed").bound_at = Some(self.secs(at));
        }
        self.pods.push(pod.clone());
        self.by_uid.insert(pod.uid.clone(), self.rows.len() - 1);
        self.rows.len() - 1
    }

    fn follow(&mut self, sim: &Simulation) {
        let Some(mut w) = self.watch.take() else { return };
        for e in sim.cluster.pod_events(&mut w) {
            match e {
                PodEvent::Created { pod, at } => {
                    self.row(&pod, at);
                }
                PodEvent::Gone(g) => {
                    let i = self.row(&g.pod, g.at);
                    let at = self.secs(g.at);
                    let r = &mut self.rows[i];
                    r.result = g.exit.as_str().into();
                    r.ended_at = Some(at);
                }
                PodEvent::Terminating(_) => {}
            }
        }
        self.watch = Some(w);
    }
}

impl Observer for Ledger {
    fn before_cycle(&mut self, sim: &Simulation, pod: &Pod) {
        self.now = sim.clock.now();
        self.follow(sim);
        self.row(pod, self.now);
    }

    fn attempt(&mut self, outcome: &CycleOutcome, _: u64) {
        self.attempts += 1;
        let (pod, failure) = match outcome {
            CycleOutcome::Scheduled { pod, decision } => {
                let at = self.secs(self.now);
                let i = self.row(pod, self.now);
                let r = &mut self.rows[i];
                r.attempts += 1;
                r.node = Some(decision.node.to_string());
                r.bound_at = Some(at);
                r.result = "running".into();
                r.reason = None;
                return;
            }
            CycleOutcome::Unschedulable { pod, error, .. } => (pod, error.to_string()),
            CycleOutcome::BindFailed { pod, error } => (pod, error.clone()),
        };
        let i = self.row(pod, self.now);
        let r = &mut self.rows[i];
        r.attempts += 1;
        r.reason = Some(failure);
    }

    fn clock_moving(&mut self, sim: &Simulation, _to: Timestamp) {
        self.follow(sim);
    }
}

fn gpu_share(a: GpuShareArg) -> ksched_k8s::trace::alibaba::GpuShare {
    match a {
        GpuShareArg::Whole => ksched_k8s::trace::alibaba::GpuShare::Whole,
        GpuShareArg::Milli => ksched_k8s::trace::alibaba::GpuShare::Milli,
    }
}

/// How the manifests and the trace's objects are read: the run's feature gates, `--strict`.
pub fn read_options(args: &ReplayArgs) -> ReadOptions {
    ReadOptions { gates: args.gates, strict: args.strict, ..ReadOptions::default() }
}

/// Reads the trace in its format, its objects under the run's feature gates (`--strict`: a
/// field ksched does not model is an error; otherwise counted in `Trace::unmodelled`).
pub fn read_trace(args: &ReplayArgs) -> Result<Trace, String> {
    let options = read_options(args);
    let mut trace = match args.from {
        TraceFormat::Ksched => match args.trace.as_slice() {
            [one] => Trace::read_file(one, &options).map_err(|e| e.to_string())?,
            _ => return Err("--from ksched reads one trace file".into()),
        },
        TraceFormat::Audit => ksched_k8s::trace::audit::read_files(&args.trace, &options).map_err(|e| e.to_string())?,
        TraceFormat::Alibaba => match args.trace.as_slice() {
            [nodes, pods] => ksched_k8s::trace::alibaba::read_files(nodes, pods, gpu_share(args.gpu_share), &options)
                .map_err(|e| e.to_string())?,
            _ => return Err("--from alibaba reads two files: the node CSV, then the pod CSV".into()),
        },
    };
    trace.sort();
    Ok(trace)
}

/// Replays `trace` over the cluster of `manifests`.
pub fn replay(args: &ReplayArgs, manifests: &Manifests, trace: Trace) -> Result<ReplayReport, String> {
    let (profiles, queue) = args.run.profiles(args.gates)?;
    replay_with(args, profiles, queue, manifests, trace, None).map(|(report, _)| report)
}

/// `replay` with the scheduler's profiles and queue settings given (`args.run.config` and
/// `args.run.tie_break` are not read again), and `observer` on the scheduler for the whole run,
/// handed back at its end (`ksched capacity`'s explanation). An observer takes the place of
/// the comparison with recorded bindings.
pub fn replay_with(
    args: &ReplayArgs,
    profiles: ksched_engine::framework::Profiles,
    queue: ksched_engine::queue::QueueConfig,
    manifests: &Manifests,
    trace: Trace,
    observer: Option<Box<dyn CycleObserver>>,
) -> Result<(ReplayReport, Option<Box<dyn CycleObserver>>), String> {
    let loaded = manifests.load_full(profiles, queue, args.run.seed).map_err(|e| e.to_string())?;
    let mut sim = loaded.sim;
    let mut controllers = loaded.controllers;
    if let Some(start) = args.run.start {
        controllers.manager.set_start(start);
    }
    let file = trace.file.clone();
    let events = trace.events.len();
    let unmodelled_fields = unmodelled(manifests, &trace).counts();
    let horizon = trace.events.last().map_or(Duration::ZERO, |e| e.at).max(args.drain_at);
    // The recorded bindings, known before the pods' cycles (a binding comes after its pod).
    let mut recorded: HashMap<PodKey, Sym> = HashMap::new();
    for e in &trace.events {
        if let Op::Bind { namespace, name, node } = &e.op {
            recorded.entry(pod_key(namespace, name)).or_insert_with(|| Sym::new(node));
        }
    }
    // A workload the trace creates that may recur without end (a CronJob; replicated pods
    // with lifetimes).
    let recurring = trace
        .events
        .iter()
        .any(|e| matches!(&e.op, Op::CreateWorkload(w) if !matches!(**w, Workload::Job(_) | Workload::DaemonSet(_))));
    let verdicts = Arc::new(Mutex::new(HashMap::new()));
    let observed = observer.is_some();
    if let Some(o) = observer {
        sim.scheduler.set_observer(o);
    } else if !recorded.is_empty() {
        let check = BindingCheck { recorded: recorded.clone(), current: None, verdicts: verdicts.clone() };
        sim.scheduler.set_observer(Box::new(check));
    }
    let mut source = Replay::new(trace, controllers);
    for sel in &args.drain {
        source.add_drain(args.drain_at, sel.clone(), args.drain_remove, args.drain_timeout);
    }
    let start = sim.clock.now();
    let mut ledger = Ledger {
        start,
        now: start,
        watch: None,
        rows: Vec::new(),
        by_uid: HashMap::new(),
        pods: Vec::new(),
        attempts: 0,
    };
    ledger.watch = Some(sim.cluster.watch_pods());
    let mut pending = sim.queue.pending_pods();
    pending.sort_by_key(Pod::key);
    for p in &pending {
        ledger.row(p, start);
    }
    let step = args.step.unwrap_or_else(|| (args.run.duration.unwrap_or(horizon) / 200).max(Duration::from_secs(1)));
    let mut timeline = Timeline::new(step);
    timeline.attach(&sim);
    let until = match args.run.duration {
        Some(d) => Until::Time(start.saturating_add(d)),
        // Something that recurs without end would never let the run go idle: a day after
        // the trace's last line.
        None if recurring || source.controllers.manager.recurs() => {
            Until::Time(start.saturating_add(horizon + crate::load::DEFAULT_HORIZON))
        }
        None => Until::Idle,
    };
    sim.run(until, &RunOptions::default(), &mut [&mut source], &mut [&mut ledger, &mut timeline])
        .map_err(|e| e.to_string())?;
    ledger.follow(&sim);
    timeline.finish(&sim);
    let end = sim.clock.now();
    let verdicts = verdicts.lock().map(|v| v.clone()).unwrap_or_default();
    let mut summary = ReplaySummary {
        trace: file,
        events,
        seed: args.run.seed,
        attempts: ledger.attempts,
        unmodelled_fields,
        ..Default::default()
    };
    for (r, pod) in ledger.rows.iter_mut().zip(&ledger.pods) {
        if let Some(&node) = recorded.get(&(pod.namespace, pod.name.clone())) {
            r.recorded_node = Some(node.to_string());
            let (m, why) = match verdicts.get(&pod.uid) {
                Some(v) => (v.matched, v.reason.clone()),
                None if r.node.as_deref() == Some(node.as_str()) => (BindingMatch::Same, None),
                None if r.node.is_some() => (BindingMatch::Other, Some("taken without scoring".into())),
                None => (BindingMatch::Unbound, r.reason.clone()),
            };
            r.binding = Some(m);
            r.binding_reason = why;
            *match m {
                BindingMatch::Same => &mut summary.bindings_same,
                BindingMatch::Tied => &mut summary.bindings_tied,
                BindingMatch::Other => &mut summary.bindings_other,
                BindingMatch::Unbound => &mut summary.bindings_unbound,
            } += 1;
        }
        summary.bound += usize::from(r.bound_at.is_some());
        match r.result.as_str() {
            "pending" => summary.pending_at_end += 1,
            "running" => summary.running_at_end += 1,
            _ => summary.ended += 1,
        }
    }
    summary.pods = ledger.rows.len();
    summary.delay_p50 = Timeline::percentile(&timeline.delays, 50.0);
    summary.delay_p99 = Timeline::percentile(&timeline.delays, 99.0);
    summary.unschedulable_by_plugin = timeline.unschedulable_total.clone();
    summary.simulated_seconds = end.saturating_since(start).as_secs_f64();
    let drains = drain_reports(&source, &ledger);
    let observer = if observed { sim.scheduler.take_observer() } else { None };
    let report = ReplayReport { pods: ledger.rows, drains, notes: source.notes(), summary, timeline: timeline.samples };
    Ok((report, observer))
}

/// Each drained pod, and for an evicted one the pod its controller made next and where it went.
fn drain_reports(source: &Replay, ledger: &Ledger) -> Vec<DrainReport> {
    let mut out = Vec::new();
    for d in &source.drained {
        let (outcome, at, reason) = match &d.outcome {
            DrainOutcome::Evicted { at } => ("evicted", Some(*at), None),
            DrainOutcome::Blocked { reason } => ("blocked", None, Some(reason.clone())),
            DrainOutcome::DeletedWithNode { at, reason } => ("deleted_with_node", Some(*at), Some(reason.clone())),
        };
        let replacement = at.zip(d.pod.owner.as_ref()).and_then(|(t, o)| {
            ledger.pods.iter().zip(&ledger.rows).find(|(p, r)| {
                r.created_at >= t && p.uid != d.pod.uid && p.owner.as_ref().is_some_and(|po| po.uid == o.uid)
            })
        });
        out.push(DrainReport {
            line: d.line,
            node: d.node.to_string(),
            pod: d.pod.key(),
            outcome,
            at,
            reason,
            replaced_by: replacement.map(|(_, r)| r.pod.clone()),
            replacement_node: replacement.map(|(_, r)| r.node.clone().unwrap_or_else(|| "pending".into())),
        });
    }
    out
}

/// The fields ksched does not model, of the manifests' objects and the trace's together.
pub fn unmodelled(manifests: &Manifests, trace: &Trace) -> Unmodelled {
    let mut all = manifests.unmodelled.clone();
    all.merge(trace.unmodelled.clone());
    all
}

pub fn run(args: &ReplayArgs) -> Result<bool, String> {
    let manifests = if args.files.is_empty() {
        Manifests::new()
    } else {
        read_files_with(&args.files, read_options(args)).map_err(|e| e.to_string())?
    };
    let trace = read_trace(args)?;
    for w in &trace.warnings {
        eprintln!("ksched replay: warning: {w}");
    }
    for line in unmodelled(&manifests, &trace).lines() {
        eprintln!("ksched replay: warning: {line}");
    }
    let report = replay(args, &manifests, trace)?;
    if let Some(path) = &args.timeline {
        let json = serde_json::to_string_pretty(&report.timeline).map_err(|e| e.to_string())?;
        std::fs::write(path, json).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.html {
        let title = format!("ksched replay of {}", report.summary.trace);
        std::fs::write(path, html(&title, &report)).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    match args.format {
        Format::Json | Format::Yaml => {
            let mut r = report;
            if args.timeline.is_some() {
                r.timeline.clear();
            }
            print!("{}", crate::format::document(&r, args.format)?);
        }
        _ => print!("{}", table(&report)),
    }
    Ok(true)
}

fn secs(t: Option<f64>) -> String {
    t.map_or_else(|| "-".into(), |t| format!("{t:.0}"))
}

pub fn table(r: &ReplayReport) -> String {
    let compared = r.pods.iter().any(|p| p.recorded_node.is_some());
    let mut head = vec!["POD", "CREATED", "BOUND", "NODE", "RESULT", "ENDED"];
    if compared {
        head.extend(["RECORDED", "MATCH"]);
    }
    head.push("DETAILS");
    let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    for p in &r.pods {
        let mut row = vec![
            p.pod.clone(),
            format!("{:.0}", p.created_at),
            secs(p.bound_at),
            p.node.clone().unwrap_or_else(|| "-".into()),
            p.result.clone(),
            secs(p.ended_at),
        ];
        if compared {
            row.push(p.recorded_node.clone().unwrap_or_else(|| "-".into()));
            row.push(p.binding.map_or_else(|| "-".into(), |b| format!("{b:?}").to_lowercase()));
        }
        let details = if p.result == "pending" { p.reason.clone() } else { p.binding_reason.clone() };
        row.push(details.unwrap_or_default());
        rows.push(row);
    }
    let mut out = columns(&rows);
    for d in &r.drains {
        let mut line = format!("drain {}: {} {}", d.node, d.pod, d.outcome);
        if let Some(t) = d.at {
            line.push_str(&format!(" at {t:.0} s"));
        }
        if let Some(why) = &d.reason {
            line.push_str(&format!(": {why}"));
        }
        if let (Some(by), Some(node)) = (&d.replaced_by, &d.replacement_node) {
            line.push_str(&format!("; replaced by {by} on {node}"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    let s = &r.summary;
    out.push_str(&format!(
        "{} events, {} pods: {} bound, {} running and {} pending at the end, {} ended; {} attempts; \
         scheduling delay p50 {} s, p99 {} s; {:.0} s simulated\n",
        s.events,
        s.pods,
        s.bound,
        s.running_at_end,
        s.pending_at_end,
        s.ended,
        s.attempts,
        s.delay_p50.map_or_else(|| "-".into(), |d| format!("{d:.1}")),
        s.delay_p99.map_or_else(|| "-".into(), |d| format!("{d:.1}")),
        s.simulated_seconds
    ));
    if compared {
        out.push_str(&format!(
            "recorded bindings: {} same node, {} tied at the top score, {} another node, {} not bound\n",
            s.bindings_same, s.bindings_tied, s.bindings_other, s.bindings_unbound
        ));
    }
    if !s.unschedulable_by_plugin.is_empty() {
        let parts: Vec<String> = s.unschedulable_by_plugin.iter().map(|(p, n)| format!("{p} {n}")).collect();
        out.push_str(&format!("unschedulable attempts by plugin: {}\n", parts.join(", ")));
    }
    out.push_str(&crate::simulate::unmodelled_summary(&s.unmodelled_fields));
    out
}

/// The HTML timeline: pods, allocation, stranded capacity, scheduling delay and unschedulable
/// attempts over simulated time.
pub fn html(title: &str, r: &ReplayReport) -> String {
    use crate::report::{esc, head, lines};
    let t = &r.timeline;
    let pts = |f: &dyn Fn(&Sample) -> Option<f64>| -> Vec<(f64, f64)> {
        t.iter().filter_map(|s| f(s).map(|v| (s.t, v))).collect()
    };
    let mut resources: Vec<String> = t.iter().flat_map(|s| s.resources.keys().cloned()).collect();
    resources.sort();
    resources.dedup();
    let share = |name: &str, f: fn(&ksched_sim::timeline::ResourceUse) -> i64| -> Vec<(f64, f64)> {
        pts(&|s| {
            s.resources.get(name).filter(|u| u.allocatable > 0).map(|u| 100.0 * f(u) as f64 / u.allocatable as f64)
        })
    };
    let alloc: Vec<(&str, Vec<(f64, f64)>)> =
        resources.iter().map(|n| (n.as_str(), share(n, |u| u.requested))).collect();
    let stranded: Vec<(&str, Vec<(f64, f64)>)> =
        resources.iter().map(|n| (n.as_str(), share(n, |u| u.stranded))).collect();
    let mut plugins: Vec<String> = r.summary.unschedulable_by_plugin.keys().cloned().collect();
    plugins.truncate(6);
    let unsched: Vec<(&str, Vec<(f64, f64)>)> = plugins
        .iter()
        .map(|p| (p.as_str(), pts(&|s| Some(s.unschedulable.get(p).copied().unwrap_or(0) as f64))))
        .collect();
    let x = "simulated seconds";
    let mut h = head(title);
    h.push_str("<table>");
    let s = &r.summary;
    for (k, v) in [
        ("events", s.events.to_string()),
        ("pods", s.pods.to_string()),
        ("bound", s.bound.to_string()),
        ("pending at the end", s.pending_at_end.to_string()),
        ("scheduling delay p50 / p99 (s)", format!("{:?} / {:?}", s.delay_p50, s.delay_p99)),
        ("simulated seconds", format!("{:.0}", s.simulated_seconds)),
    ] {
        h.push_str(&format!("<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(&v)));
    }
    h.push_str("</table>\n<div class=\"plots\">\n");
    h.push_str(&lines(
        "pods",
        "Pods",
        x,
        "pods",
        &[("pending", pts(&|s| Some(s.pending as f64))), ("running", pts(&|s| Some(s.running as f64)))],
    ));
    h.push_str(&lines("allocation", "Allocation (requested / allocatable)", x, "%", &alloc));
    h.push_str(&lines("fragmentation", "Stranded: free where no waiting pod fits", x, "% of allocatable", &stranded));
    h.push_str(&lines(
        "delay",
        "Scheduling delay (creation to bind)",
        x,
        "seconds",
        &[("p50", pts(&|s| s.delay_p50)), ("p99", pts(&|s| s.delay_p99))],
    ));
    h.push_str(&lines("unschedulable", "Unschedulable attempts by plugin", x, "attempts per step", &unsched));
    h.push_str("</div>\n</body></html>\n");
    h
}

#[cfg(test)]
mod tests;
