//! `ksched simulate -f FILE...`: what the scheduler would do with the pending pods of some
//! Kubernetes manifests. The pods are scheduled with priority-queue semantics on simulated
//! time (backoffs and victims' grace periods pass instantly) until nothing more can happen;
//! the report says where each pod went or why not, and what preemption did.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::load::{LoadSim, PendingPod};
use clap::Args;
use ksched_engine::features::FeatureGates;
use ksched_engine::framework::Profiles;
use ksched_engine::observer::CycleObserver;
use ksched_engine::queue::{QueueConfig, SchedulingQueue};
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::util::time::Clock;
use ksched_k8s::manifest::{read_files_with, Manifests, ReadOptions, Workload};
use ksched_sim::cluster::{PodEvent, PodExit};
use ksched_sim::simulation::{Observer, RunOptions};
use ksched_sim::Simulation;
use serde::Serialize;

use crate::device_use::DeviceUse;
use crate::format::Format;
use crate::front_ends::{HookObserver, RunHooks, TieBreakArg};
use crate::progress::Progress;

/// The inputs `simulate` and `explain` share.
#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    /// A manifest file (multi-document YAML or JSON; `-` reads standard input) or a directory
    /// of them (`.yaml`, `.yml`, `.json`). Repeat for several: nodes, pods, namespaces,
    /// services, workload controllers, PriorityClasses, PodDisruptionBudgets.
    #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Read the directories given with -f recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// A field of the objects that changes upstream's decision and that ksched does not model
    /// (warned about otherwise), or an object of a kind ksched does not model (skipped
    /// otherwise), is an error.
    #[arg(long)]
    pub strict: bool,
    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): all its profiles
    /// schedule, each the pods whose spec.schedulerName names it, with its backoff settings.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seed of every random choice (the draw among tied nodes with --tie-break random,
    /// preemption's random start among candidate nodes, controllers' pod names).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated time to run: pods with a run duration (`ksched.io/run-duration`) or
    /// `activeDeadlineSeconds` end, Jobs complete, CronJobs fire, controllers replace pods.
    /// Default: until nothing more can happen, or one day when something recurs without end
    /// (a CronJob, replicated pods with a lifetime).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// The wall-clock time the simulation starts at (RFC 3339), for CronJob schedules.
    /// Default: 2025-01-01T00:00:00Z.
    #[arg(long, value_name = "TIME", value_parser = parse_start)]
    pub start: Option<jiff::Timestamp>,
    /// How a cycle picks among nodes tied at the highest total: upstream (the root of
    /// upstream's score heap over the nodes in the order found) or random (a uniform draw,
    /// seeded by --seed).
    #[arg(long, value_enum, default_value_t = TieBreakArg::Upstream)]
    pub tie_break: TieBreakArg,
    #[command(flatten)]
    pub api: crate::front_ends::PreemptionApiArgs,
}

impl InputArgs {
    /// The run's time settings.
    pub fn timing(&self) -> Timing {
        Timing { duration: self.duration, start: self.start }
    }
}

/// How long a simulation runs and the wall time it starts at (`InputArgs`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Timing {
    pub duration: Option<std::time::Duration>,
    pub start: Option<jiff::Timestamp>,
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    ksched_engine::util::duration::parse_cli_duration(s)
}

/// An RFC 3339 time (`2025-03-01T09:00:00Z`).
pub fn parse_start(s: &str) -> Result<jiff::Timestamp, String> {
    s.parse().map_err(|e| format!("{s:?} is not an RFC 3339 time (2025-03-01T09:00:00Z): {e}"))
}

#[derive(Args, Debug, Clone)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Yaml]), default_value = "text")]
    pub format: Format,
}

/// The profiles and queue timing: the configuration's (every profile), or upstream's default
/// profile, all under `gates`. Filtering runs on one thread (parallelism never changes a
/// decision).
pub fn load_profiles(config: Option<&Path>, gates: FeatureGates) -> Result<(Profiles, QueueConfig), String> {
    let (mut profiles, queue, _) = crate::feature_gates::scheduler(config, gates)?;
    for p in profiles.iter_mut() {
        p.parallelism = 1;
    }
    Ok((profiles, queue))
}

/// Reads the manifests and the configuration.
pub fn load_inputs(input: &InputArgs) -> Result<(Manifests, Profiles, QueueConfig), String> {
    let options = ReadOptions { strict: input.strict, recursive: input.recursive, gates: input.gates };
    let manifests = read_files_with(&input.files, options).map_err(|e| e.to_string())?;
    if let Some(line) = manifests.skipped_summary() {
        eprintln!("ksched: {line}");
    }
    for line in manifests.unmodelled.lines() {
        eprintln!("ksched: warning: {line}");
    }
    for w in input_warnings(&input.files, &manifests) {
        eprintln!("ksched: {w}");
    }
    let (mut profiles, mut queue) = load_profiles(input.config.as_deref(), input.gates)?;
    input.tie_break.apply(&mut profiles);
    input.api.apply(&mut queue);
    Ok((manifests, profiles, queue))
}

/// Warnings about an input that cannot give an interesting answer: no nodes (every pod will
/// be unschedulable), nothing to schedule (no pending pods and no workload controller that
/// makes some).
pub fn input_warnings(files: &[PathBuf], manifests: &Manifests) -> Vec<String> {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let files = names.join(", ");
    let makes_pods = manifests.workloads.iter().any(|(w, _)| !matches!(w, Workload::CronJob(_)));
    let pending = manifests.pending_pods().next().is_some() || makes_pods;
    let mut out = Vec::new();
    if manifests.nodes.is_empty() {
        let consequence = if pending { "; every pod will be unschedulable" } else { "" };
        out.push(format!("warning: {files}: no nodes in the input{consequence}"));
    }
    if !pending {
        out.push(format!(
            "warning: {files}: no pending pods in the input (every pod has spec.nodeName, and no workload \
             controller makes pods); nothing to schedule"
        ));
    }
    out
}

/// What happened to one pending pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PodResult {
    /// Bound to `node`.
    Scheduled,
    /// Still pending at the end; `reason` is its last attempt's FitError.
    Unschedulable,
    /// Bound, then deleted as a later pod's preemption victim.
    Preempted,
    /// Never queued: scheduling gates, another scheduler's pod (its schedulerName names no
    /// profile), or a StatefulSet's ordinal not created yet.
    NotQueued,
    /// Bound, then ran to the end of its run duration (phase Succeeded).
    Completed,
    /// Bound, then its `activeDeadlineSeconds` passed (phase Failed).
    Failed,
    /// Deleted by its controller (scale-down, a failed or replaced Job) or with its node.
    Deleted,
}

#[derive(Clone, Debug, Serialize)]
pub struct PreemptionReport {
    /// The node the preemptor was nominated to.
    pub node: String,
    /// `namespace/name` of the pods deleted there.
    pub victims: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PodReport {
    /// `namespace/name`.
    pub pod: String,
    /// `file: document N (line L)`.
    pub source: String,
    pub priority: i32,
    /// Its `spec.schedulerName`: the profile that schedules it (when one has that name).
    pub scheduler_name: String,
    /// Its controller owner reference, `Kind/name` (`ReplicaSet/web-7d9f`), if any.
    pub owner: Option<String>,
    pub result: PodResult,
    /// Where it was bound (also for `preempted`: where it ran).
    pub node: Option<String>,
    /// Scheduling attempts (cycles).
    pub attempts: u32,
    /// Its `status.nominatedNodeName` at the end (set by its own preemption).
    pub nominated_node: Option<String>,
    /// Why it is not scheduled: the last attempt's message (upstream's FitError text with the
    /// PostFilter's), or why it was never queued.
    pub reason: Option<String>,
    /// Preemptions this pod caused, in order.
    pub preemptions: Vec<PreemptionReport>,
    /// For `preempted`: the pod whose preemption deleted it.
    pub preempted_by: Option<String>,
    /// Seconds into the run when it was created (0 for the input's pods and those its
    /// controllers made at the start).
    pub created_at: f64,
    /// For `completed`, `failed`, `deleted`: seconds into the run when it ended.
    pub ended_at: Option<f64>,
}

/// A pod's controller owner reference as `Kind/name`.
fn owner_of(pod: &ksched_engine::api::Pod) -> Option<String> {
    pod.owner.as_ref().map(|o| format!("{}/{}", o.kind, o.name))
}

/// A pod that was already bound in the manifests and was deleted as a victim.
#[derive(Clone, Debug, Serialize)]
pub struct EvictedReport {
    pub pod: String,
    pub node: String,
    pub preempted_by: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub nodes: usize,
    pub bound_pods: usize,
    pub pending_pods: usize,
    pub scheduled: usize,
    pub unschedulable: usize,
    pub preempted: usize,
    pub not_queued: usize,
    /// Pods that ran to their end, failed at their deadline, or were deleted by their
    /// controller (pods with lifetimes, Jobs, CronJobs, scaling).
    pub completed: usize,
    pub failed: usize,
    pub deleted: usize,
    /// Pods the workload controllers created while the simulation ran (listed with the others).
    pub created_during_run: usize,
    pub attempts: u64,
    pub preemptions: usize,
    pub victims: usize,
    /// OpportunisticBatching: pods that took the next node of the previous pod's ranking
    /// (unscored) instead of a full filter and score pass.
    #[serde(skip_serializing_if = "is_zero")]
    pub batch_hints: u64,
    /// Objects of kinds ksched does not model, skipped: kind → count.
    pub skipped: std::collections::BTreeMap<String, usize>,
    /// Terminal pods (Succeeded, Failed) in the input, skipped as the scheduler never sees them.
    pub terminal_pods: usize,
    /// Objects whose fields change upstream's decision and that ksched does not model (each
    /// also warned about on stderr): field → objects.
    pub unmodelled_fields: std::collections::BTreeMap<String, usize>,
    /// Time that passed on the simulated clock (backoffs, grace periods).
    pub simulated_seconds: f64,
    /// Wall time the simulation took (loading the input, the run and the report's summary).
    pub wall_seconds: f64,
    /// The scheduler's profiles (their scheduler names), in configuration order.
    pub profiles: Vec<String>,
    /// The pending pods' results by `spec.schedulerName`: each profile's (listed even when
    /// no pod names it), and other schedulers' pods under their own names.
    pub by_profile: std::collections::BTreeMap<String, ProfileCounts>,
    pub seed: u64,
    /// DRA devices at the end, allocated / total per driver and per DeviceClass (absent
    /// without ResourceSlices and DeviceClasses).
    #[serde(skip_serializing_if = "DeviceUse::is_empty")]
    pub devices: DeviceUse,
}

/// One profile's share of the pending pods.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProfileCounts {
    /// Whether one of the scheduler's profiles has this name (otherwise: another scheduler's
    /// pods, never queued).
    pub ours: bool,
    pub pending_pods: usize,
    pub scheduled: usize,
    pub unschedulable: usize,
    pub preempted: usize,
    pub not_queued: usize,
    /// Completed, failed or deleted.
    pub ended: usize,
}

/// The label a note is printed with: none for a note that is already a warning.
pub fn note_label(n: &str) -> &'static str {
    if n.starts_with("warning: ") {
        ""
    } else {
        "note: "
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct SimulateReport {
    /// The pending pods of the manifests, in file order.
    pub pods: Vec<PodReport>,
    /// Pods bound in the manifests that preemption deleted.
    pub evicted: Vec<EvictedReport>,
    /// What the simulation does not do for the workload controllers (Jobs' pods never
    /// complete, CronJobs never fire, ...).
    pub notes: Vec<String>,
    pub summary: Summary,
}

impl SimulateReport {
    pub fn new(pending: &[PendingPod]) -> SimulateReport {
        let pods = pending
            .iter()
            .map(|p| PodReport {
                pod: p.pod.key(),
                source: p.source.to_string(),
                priority: p.pod.priority,
                scheduler_name: p.pod.scheduler_name.to_string(),
                owner: owner_of(&p.pod),
                result: if p.not_queued.is_some() { PodResult::NotQueued } else { PodResult::Unschedulable },
                node: None,
                attempts: 0,
                nominated_node: None,
                reason: p.not_queued.as_ref().map(ToString::to_string),
                preemptions: Vec::new(),
                preempted_by: None,
                created_at: 0.0,
                ended_at: None,
            })
            .collect();
        SimulateReport { pods, evicted: Vec::new(), notes: Vec::new(), summary: Summary::default() }
    }

    /// Records one cycle's outcome; `index` maps `namespace/name` to a position in `pods`.
    /// True when this was a pending pod's first attempt (the pod has its first answer).
    pub fn record(&mut self, index: &HashMap<String, usize>, outcome: &CycleOutcome) -> bool {
        self.summary.attempts += 1;
        let (pod, failure) = match outcome {
            CycleOutcome::Scheduled { pod, decision } => {
                let Some(r) = index.get(&pod.key()).and_then(|&i| self.pods.get_mut(i)) else { return false };
                r.attempts += 1;
                r.result = PodResult::Scheduled;
                r.node = Some(decision.node.to_string());
                r.reason = None;
                return r.attempts == 1;
            }
            CycleOutcome::Unschedulable { pod, error, preemption } => {
                if let Some(p) = preemption {
                    self.summary.preemptions += 1;
                    self.summary.victims += p.victims.len();
                    let by = pod.key();
                    for v in &p.victims {
                        match index.get(&v.key()).and_then(|&i| self.pods.get_mut(i)) {
                            Some(r) => {
                                r.result = PodResult::Preempted;
                                r.preempted_by = Some(by.clone());
                            }
                            None => self.evicted.push(EvictedReport {
                                pod: v.key(),
                                node: v.node_name.map(|n| n.to_string()).unwrap_or_default(),
                                preempted_by: by.clone(),
                            }),
                        }
                    }
                    if let Some(r) = index.get(&by).and_then(|&i| self.pods.get_mut(i)) {
                        r.nominated_node = Some(p.node.to_string());
                        r.preemptions.push(PreemptionReport {
                            node: p.node.to_string(),
                            victims: p.victims.iter().map(|v| v.key()).collect(),
                        });
                    }
                }
                (pod, error.to_string())
            }
            CycleOutcome::BindFailed { pod, error } => (pod, error.clone()),
        };
        let Some(r) = index.get(&pod.key()).and_then(|&i| self.pods.get_mut(i)) else { return false };
        r.attempts += 1;
        r.reason = Some(failure);
        // A pod created during the run (an OrderedReady StatefulSet's) is queued now.
        if r.result == PodResult::NotQueued {
            r.result = PodResult::Unschedulable;
        }
        r.attempts == 1
    }

    fn finish(&mut self, profiles: &Profiles) {
        let s = &mut self.summary;
        s.pending_pods = self.pods.len();
        s.profiles = profiles.names().into_iter().map(String::from).collect();
        for name in &s.profiles {
            s.by_profile.insert(name.clone(), ProfileCounts { ours: true, ..ProfileCounts::default() });
        }
        for r in &self.pods {
            let of = s.by_profile.entry(r.scheduler_name.clone()).or_default();
            of.pending_pods += 1;
            let (total, mine) = match r.result {
                PodResult::Scheduled => (&mut s.scheduled, &mut of.scheduled),
                PodResult::Unschedulable => (&mut s.unschedulable, &mut of.unschedulable),
                PodResult::Preempted => (&mut s.preempted, &mut of.preempted),
                PodResult::NotQueued => (&mut s.not_queued, &mut of.not_queued),
                PodResult::Completed => (&mut s.completed, &mut of.ended),
                PodResult::Failed => (&mut s.failed, &mut of.ended),
                PodResult::Deleted => (&mut s.deleted, &mut of.ended),
            };
            *total += 1;
            *mine += 1;
        }
    }
}

/// Schedules the manifests' pending pods until nothing more can happen.
#[allow(dead_code)] // The library form (tests, other front ends); `run` shows progress.
pub fn simulate(
    manifests: &Manifests,
    profiles: impl Into<Profiles>,
    queue: QueueConfig,
    seed: u64,
) -> Result<SimulateReport, String> {
    simulate_observed(manifests, profiles, queue, seed, Timing::default(), None).map(|(report, _)| report)
}

/// `simulate`, with `observer` installed on the scheduler for the whole run (`ksched
/// explain`) and handed back at the end.
pub fn simulate_observed(
    manifests: &Manifests,
    profiles: impl Into<Profiles>,
    queue: QueueConfig,
    seed: u64,
    time: Timing,
    observer: Option<Box<dyn CycleObserver>>,
) -> Result<(SimulateReport, Option<Box<dyn CycleObserver>>), String> {
    simulate_with(manifests, profiles, queue, seed, time, observer, &mut Progress::hidden())
}

/// `simulate_observed` that also shows `progress`: pending pods with an answer (their first
/// attempt done) out of all pending pods.
pub fn simulate_with(
    manifests: &Manifests,
    profiles: impl Into<Profiles>,
    queue: QueueConfig,
    seed: u64,
    time: Timing,
    observer: Option<Box<dyn CycleObserver>>,
    progress: &mut Progress,
) -> Result<(SimulateReport, Option<Box<dyn CycleObserver>>), String> {
    /// Installs the observer when the run starts and takes it back at its end.
    struct Install(Option<Box<dyn CycleObserver>>);
    impl RunHooks for Install {
        fn started(&mut self, sim: &mut Simulation) {
            if let Some(o) = self.0.take() {
                sim.scheduler.set_observer(o);
            }
        }
        fn finished(&mut self, sim: &mut Simulation) {
            self.0 = sim.scheduler.take_observer();
        }
    }
    let mut install = Install(observer);
    let report = simulate_hooked(manifests, profiles, queue, seed, time, &mut install, progress)?;
    Ok((report, install.0))
}

/// `simulate_with`, calling `hooks` at the start, on every attempt and at the end of the run.
pub fn simulate_hooked(
    manifests: &Manifests,
    profiles: impl Into<Profiles>,
    queue: QueueConfig,
    seed: u64,
    time: Timing,
    hooks: &mut dyn RunHooks,
    progress: &mut Progress,
) -> Result<SimulateReport, String> {
    let wall = std::time::Instant::now();
    let profiles: Profiles = profiles.into();
    let loaded = manifests.load_full(profiles.clone(), queue, seed).map_err(|e| e.to_string())?;
    let (mut sim, pending, mut controllers) = (loaded.sim, loaded.pending, loaded.controllers);
    if let Some(start) = time.start {
        controllers.manager.set_start(start);
    }
    let mut watch = sim.cluster.watch_pods();
    hooks.started(&mut sim);
    let index: HashMap<String, usize> = pending.iter().enumerate().map(|(i, p)| (p.pod.key(), i)).collect();
    let mut report = SimulateReport::new(&pending);
    report.notes = loaded.notes;
    report.summary.bound_pods = loaded.bound_pods;
    let start = sim.clock.now();
    progress.restart(pending.len() as u64, "");
    let mut record = Record { report: &mut report, index, progress, start };
    let mut hook = HookObserver(hooks);
    let until = controllers.until(&sim, time.duration);
    sim.run(until, &RunOptions::default(), &mut [&mut controllers], &mut [&mut record, &mut hook])
        .map_err(|e| e.to_string())?;
    let index = record.index;
    progress.finish();
    hooks.finished(&mut sim);
    // Nominations as they stand at the end (a later attempt may have cleared one).
    for p in sim.queue.pending_pods() {
        if let Some(r) = index.get(&p.key()).and_then(|&i| report.pods.get_mut(i)) {
            r.nominated_node = p.nominated_node_name.map(|n| n.to_string());
        }
    }
    // How the pods that went, went.
    for e in sim.cluster.pod_events(&mut watch) {
        let PodEvent::Gone(g) = e else { continue };
        let Some(r) = index.get(&g.pod.key()).and_then(|&i| report.pods.get_mut(i)) else { continue };
        let result = match g.exit {
            PodExit::Succeeded => PodResult::Completed,
            PodExit::DeadlineExceeded => PodResult::Failed,
            PodExit::Deleted | PodExit::Evicted | PodExit::NodeDeleted => PodResult::Deleted,
            PodExit::Preempted => continue,
        };
        r.result = result;
        r.ended_at = Some(g.at.saturating_since(start).as_secs_f64());
    }
    report.finish(&profiles);
    report.summary.created_during_run = report.pods.len() - pending.len();
    report.summary.nodes = manifests.nodes.len();
    report.summary.skipped = manifests.skipped.clone();
    report.summary.terminal_pods = manifests.terminal_pods.values().sum();
    report.summary.unmodelled_fields = manifests.unmodelled.counts();
    report.summary.simulated_seconds = sim.clock.now().saturating_since(start).as_secs_f64();
    report.summary.seed = seed;
    report.summary.batch_hints = sim.scheduler.batch_hints();
    report.summary.devices = DeviceUse::of(&sim.cache.objects().dra);
    report.summary.wall_seconds = wall.elapsed().as_secs_f64();
    Ok(report)
}

/// Records each attempt in the report; a pod first seen in its cycle (made by a controller
/// during the run) gets its row then.
struct Record<'a> {
    report: &'a mut SimulateReport,
    index: HashMap<String, usize>,
    progress: &'a mut Progress,
    start: ksched_engine::util::time::Timestamp,
}

impl Observer for Record<'_> {
    fn before_cycle(&mut self, sim: &Simulation, pod: &ksched_engine::api::Pod) {
        let key = pod.key();
        if self.index.contains_key(&key) {
            return;
        }
        let by = pod
            .owner
            .as_ref()
            .map_or_else(String::new, |o| format!(" by {} {}", o.kind.as_str().to_lowercase(), o.name));
        let created_at = sim.clock.now().saturating_since(self.start).as_secs_f64();
        self.report.pods.push(PodReport {
            pod: key.clone(),
            source: format!("created during the run{by}"),
            priority: pod.priority,
            scheduler_name: pod.scheduler_name.to_string(),
            owner: owner_of(pod),
            result: PodResult::Unschedulable,
            node: None,
            attempts: 0,
            nominated_node: None,
            reason: None,
            preemptions: Vec::new(),
            preempted_by: None,
            created_at,
            ended_at: None,
        });
        self.index.insert(key, self.report.pods.len() - 1);
        self.progress.inc_length(1);
    }

    fn attempt(&mut self, outcome: &CycleOutcome, _: u64) {
        if self.report.record(&self.index, outcome) {
            self.progress.inc(1);
        }
    }
}

pub fn run(args: &SimulateArgs) -> Result<(), String> {
    let (manifests, profiles, queue) = load_inputs(&args.input)?;
    let mut progress = Progress::stderr(
        args.format.is_machine(),
        0,
        "{spinner} simulating [{bar:40}] {pos}/{len} pending pods decided",
    );
    let (report, _) =
        simulate_with(&manifests, profiles, queue, args.input.seed, args.input.timing(), None, &mut progress)?;
    match args.format {
        Format::Json | Format::Yaml => print!("{}", crate::format::document(&report, args.format)?),
        _ => print!("{}", table(&report)),
    }
    Ok(())
}

/// Rows of cells, left-aligned in columns; the last column is not padded.
pub fn columns(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn table(r: &SimulateReport) -> String {
    let mut rows = vec![["POD", "PRIORITY", "RESULT", "NODE", "ATTEMPTS", "DETAILS"].map(String::from).to_vec()];
    for p in &r.pods {
        let mut details = Vec::new();
        for pre in &p.preemptions {
            details.push(format!("preempted {} on {}", pre.victims.join(", "), pre.node));
        }
        if let Some(by) = &p.preempted_by {
            details.push(format!("preempted by {by}"));
        }
        if let (PodResult::Unschedulable, Some(n)) = (p.result, &p.nominated_node) {
            details.push(format!("nominated to {n}"));
        }
        if matches!(p.result, PodResult::Unschedulable | PodResult::NotQueued) {
            details.extend(p.reason.clone());
        }
        if p.created_at > 0.0 {
            details.push(format!("created at {:.0} s", p.created_at));
        }
        if let Some(t) = p.ended_at {
            details.push(format!("ended at {t:.0} s"));
        }
        let result = match p.result {
            PodResult::Scheduled => "Scheduled",
            PodResult::Unschedulable => "Unschedulable",
            PodResult::Preempted => "Preempted",
            PodResult::NotQueued => "NotQueued",
            PodResult::Completed => "Completed",
            PodResult::Failed => "Failed",
            PodResult::Deleted => "Deleted",
        };
        rows.push(vec![
            p.pod.clone(),
            p.priority.to_string(),
            result.into(),
            p.node.clone().unwrap_or_else(|| "-".into()),
            p.attempts.to_string(),
            details.join("; "),
        ]);
    }
    let mut out = columns(&rows);
    for e in &r.evicted {
        out.push_str(&format!("evicted {} from {} (preempted by {})\n", e.pod, e.node, e.preempted_by));
    }
    for n in &r.notes {
        out.push_str(&format!("{}{n}\n", note_label(n)));
    }
    let s = &r.summary;
    if s.created_during_run + s.completed + s.failed + s.deleted > 0 {
        out.push_str(&format!(
            "over time: {} pods created by controllers during the run; {} completed, {} failed, {} deleted\n",
            s.created_during_run, s.completed, s.failed, s.deleted
        ));
    }
    out.push_str(&format!(
        "{} pending pods on {} nodes ({} bound): {} scheduled, {} unschedulable, {} preempted, {} not queued; \
         {} preemptions ({} victims), {} attempts, {:.0} s simulated in {:.3} s\n",
        s.pending_pods,
        s.nodes,
        s.bound_pods,
        s.scheduled,
        s.unschedulable,
        s.preempted,
        s.not_queued,
        s.preemptions,
        s.victims,
        s.attempts,
        s.simulated_seconds,
        s.wall_seconds
    ));
    if !s.devices.is_empty() {
        out.push_str(&format!("devices (allocated / total): {}\n", s.devices.line()));
    }
    if s.batch_hints > 0 {
        out.push_str(&format!(
            "OpportunisticBatching: {} pods took the next node of the previous pod's ranking, unscored \
             (--feature-gates OpportunisticBatching=false gives each a full cycle)\n",
            s.batch_hints
        ));
    }
    out.push_str(&unmodelled_summary(&s.unmodelled_fields));
    // With several profiles (or another scheduler's pods), each one's share.
    if s.by_profile.len() > 1 {
        for (name, c) in &s.by_profile {
            let whose = if c.ours { "profile" } else { "not a profile (another scheduler's pods)" };
            out.push_str(&format!(
                "  {name}: {} pending pods: {} scheduled, {} unschedulable, {} preempted, {} not queued ({whose})\n",
                c.pending_pods, c.scheduled, c.unschedulable, c.preempted, c.not_queued
            ));
        }
    }
    out
}

/// The summary's line counting, per field that changes upstream's decision and that ksched
/// does not model, the objects that set it (`simulate`, `replay` and `compare`'s text); empty
/// when there are none.
pub fn unmodelled_summary(fields: &std::collections::BTreeMap<String, usize>) -> String {
    if fields.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = fields.iter().map(|(f, n)| format!("{f} {n}")).collect();
    format!("fields ksched does not model (objects; upstream's decision may differ): {}\n", parts.join(", "))
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
pub(crate) mod tests;
