//! One configuration's run on the input, through the input's own front end, and what compare
//! keeps of it: every attempt's outcome and latency, and the state the run ended in.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use ksched_engine::api::{Pod, Sym};
use ksched_engine::observer::CycleObserver;
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::scheduler::{CycleOutcome, ScheduleError};
use ksched_engine::snapshot::Snapshot;
use ksched_k8s::manifest::Manifests;
use ksched_k8s::perf_workload::{ResolvedOp, TestCase, Workload as FileWorkload};
use ksched_sim::observe::{AttemptLatency, Counts};
use ksched_sim::Simulation;

use super::ConfigSpec;
use crate::front_ends::RunHooks;
use crate::perf_file::exec::{self, Options, Status};
use crate::synth::{drive, prepare, Workload};

/// What is scheduled under every configuration.
pub enum Input {
    /// `-f`: manifests, as `ksched simulate` reads them.
    Manifests { manifests: Box<Manifests>, name: String },
    /// `--workload NAME`: a built-in workload, as `ksched run` builds it.
    Builtin { workload: Workload, nodes: usize, warmup: usize, measured: usize },
    /// `--workload FILE`: one workload of an upstream scheduler_perf file.
    /// `strict`: `--strict` (an unmodelled field of a node or pod it creates is an error).
    File { path: PathBuf, test_case: Box<TestCase>, workload: Box<FileWorkload>, ops: Vec<ResolvedOp>, strict: bool },
}

impl Input {
    pub fn describe(&self) -> String {
        match self {
            Input::Manifests { name, .. } => format!("manifests {name}"),
            Input::Builtin { workload, nodes, warmup, measured } => format!(
                "built-in workload {} ({} nodes, {} warm-up + {} measured pods)",
                workload.cli_name(),
                nodes,
                warmup,
                measured
            ),
            Input::File { path, test_case, workload, .. } => {
                format!("workload file {} ({}/{})", path.display(), test_case.name, workload.name)
            }
        }
    }
}

/// Where a pod the run attempted ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    Node(Sym),
    /// Still waiting in the queue.
    Pending,
    /// Deleted during the run (a preemption victim, or the workload deleted it).
    Gone,
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Node(n) => write!(f, "{n}"),
            Placement::Pending => f.write_str("(pending)"),
            Placement::Gone => f.write_str("(deleted)"),
        }
    }
}

/// One configuration's run, as compare keeps it.
pub struct RunRecord {
    pub counts: Counts,
    pub latency: AttemptLatency,
    /// Wall time of all attempts (each from popping the pod to the end of its cycle).
    pub attempt_ns: u64,
    /// Wall time from the run's start to its end (setup of the workload included).
    pub wall_seconds: f64,
    /// Pods the run attempted, `namespace/name`, in the order of their first attempt.
    pub attempted: Vec<String>,
    /// Each attempted pod's last failure, when its last attempt failed: the reasons.
    pub last_failure: HashMap<String, Vec<String>>,
    /// Where each attempted pod ended.
    pub placement: HashMap<String, Placement>,
    /// The cluster at the end.
    pub snapshot: Arc<Snapshot>,
    /// Pods still pending at the end (queued, or never queued: `not_queued`).
    pub pending: Vec<Pod>,
    /// Pods of the manifests never queued (scheduling gates, another scheduler's), with why.
    pub not_queued: Vec<(String, String)>,
    /// Something about the run a reader must know (a workload file's op failed, ...).
    pub notes: Vec<String>,
    /// A workload file's nodes and pods per field that ksched does not model (manifests':
    /// `Manifests::unmodelled`).
    pub unmodelled_fields: BTreeMap<String, usize>,
}

/// The reasons of a failed attempt: upstream's FitError reasons (`Insufficient cpu`,
/// `node(s) had untolerated taint(s)`), or the PreFilter / plugin / extender message.
pub fn failure_reasons(error: &ScheduleError) -> Vec<String> {
    match error {
        ScheduleError::Unschedulable(fit) => match &fit.pre_filter_msg {
            Some(m) => vec![m.clone()],
            None => {
                let mut r: Vec<String> = fit.reasons.keys().cloned().collect();
                r.sort();
                r
            }
        },
        other => vec![other.to_string()],
    }
}

/// The hooks compare runs every configuration with.
pub struct Tracker {
    counts: Counts,
    latency: AttemptLatency,
    attempt_ns: u64,
    start: Option<Instant>,
    first_attempt: HashMap<String, usize>,
    attempted: Vec<String>,
    last_failure: HashMap<String, Vec<String>>,
    /// Installed on the scheduler at the start (the explaining re-run), taken back at the end.
    pub cycle_observer: Option<Box<dyn CycleObserver>>,
    pub record: Option<RunRecord>,
}

impl Tracker {
    pub fn new(cycle_observer: Option<Box<dyn CycleObserver>>) -> Tracker {
        Tracker {
            counts: Counts::default(),
            latency: AttemptLatency::default(),
            attempt_ns: 0,
            start: None,
            first_attempt: HashMap::new(),
            attempted: Vec::new(),
            last_failure: HashMap::new(),
            cycle_observer,
            record: None,
        }
    }
}

impl RunHooks for Tracker {
    fn started(&mut self, sim: &mut Simulation) {
        self.start = Some(Instant::now());
        if let Some(o) = self.cycle_observer.take() {
            sim.scheduler.set_observer(o);
        }
    }

    fn attempt(&mut self, outcome: &CycleOutcome, ns: u64) {
        self.counts.record(outcome);
        self.latency.0.saturating_record(ns.max(1));
        self.attempt_ns += ns;
        let (pod, failure) = match outcome {
            CycleOutcome::Scheduled { pod, .. } => (pod, None),
            CycleOutcome::Unschedulable { pod, error, .. } => (pod, Some(failure_reasons(error))),
            CycleOutcome::BindFailed { pod, error } => (pod, Some(vec![format!("binding failed: {error}")])),
        };
        let key = pod.key();
        if !self.first_attempt.contains_key(&key) {
            self.first_attempt.insert(key.clone(), self.attempted.len());
            self.attempted.push(key.clone());
        }
        match failure {
            Some(r) => {
                self.last_failure.insert(key, r);
            }
            None => {
                self.last_failure.remove(&key);
            }
        }
    }

    fn finished(&mut self, sim: &mut Simulation) {
        self.cycle_observer = sim.scheduler.take_observer();
        let snapshot = sim.cache.update_snapshot();
        let pending = sim.queue.pending_pods();
        let mut on_node: HashMap<String, Sym> = HashMap::new();
        for info in snapshot.iter() {
            for p in info.pods().iter() {
                on_node.insert(p.key(), info.name());
            }
        }
        let queued: std::collections::HashSet<String> = pending.iter().map(Pod::key).collect();
        let placement = self
            .attempted
            .iter()
            .map(|k| {
                let at = match on_node.get(k) {
                    Some(&n) => Placement::Node(n),
                    None if queued.contains(k) => Placement::Pending,
                    None => Placement::Gone,
                };
                (k.clone(), at)
            })
            .collect();
        self.record = Some(RunRecord {
            counts: self.counts,
            latency: self.latency.clone(),
            attempt_ns: self.attempt_ns,
            wall_seconds: self.start.map_or(0.0, |s| s.elapsed().as_secs_f64()),
            attempted: std::mem::take(&mut self.attempted),
            last_failure: std::mem::take(&mut self.last_failure),
            placement,
            snapshot,
            pending,
            not_queued: Vec::new(),
            notes: Vec::new(),
            unmodelled_fields: BTreeMap::new(),
        });
    }
}

/// Runs `spec` on `input` with `seed` through the input's front end; `cycle_observer` is
/// installed on the scheduler for the whole run and handed back in the tracker.
pub fn run_config(
    input: &Input,
    spec: &ConfigSpec,
    seed: u64,
    cycle_observer: Option<Box<dyn CycleObserver>>,
) -> Result<RunRecord, String> {
    run_tracked(input, spec, seed, cycle_observer).map(|(r, _)| r)
}

/// `run_config`, also handing back the cycle observer.
pub fn run_tracked(
    input: &Input,
    spec: &ConfigSpec,
    seed: u64,
    cycle_observer: Option<Box<dyn CycleObserver>>,
) -> Result<(RunRecord, Option<Box<dyn CycleObserver>>), String> {
    let mut tracker = Tracker::new(cycle_observer);
    let at = |e: String| format!("{} ({}): {e}", spec.label, spec.name);
    let mut not_queued = Vec::new();
    let mut notes = Vec::new();
    let mut unmodelled_fields = BTreeMap::new();
    match input {
        Input::Manifests { manifests, .. } => {
            let report = crate::simulate::simulate_hooked(
                manifests,
                spec.profile.clone(),
                spec.queue.clone(),
                seed,
                crate::simulate::Timing::default(),
                &mut tracker,
                &mut crate::progress::Progress::hidden(),
            )
            .map_err(at)?;
            for p in &report.pods {
                if p.result == crate::simulate::PodResult::NotQueued {
                    not_queued.push((p.pod.clone(), p.reason.clone().unwrap_or_default()));
                }
            }
            notes = report.notes;
        }
        Input::Builtin { workload, nodes, warmup, measured } => {
            let mut sim = prepare(
                *workload,
                *nodes,
                *warmup,
                *measured,
                spec.profile.clone(),
                spec.queue.clone(),
                seed,
                &mut tracker,
            )
            .map_err(at)?;
            let mut churn = workload.churn();
            drive(&mut sim, &mut churn, 0, &mut [&mut crate::front_ends::HookObserver(&mut tracker)]).map_err(at)?;
            tracker.finished(&mut sim);
        }
        Input::File { test_case, workload, ops, strict, .. } => {
            let opts = Options {
                seed,
                parallelism: Some(spec.profile.parallelism),
                gates: spec.queue.gates,
                strict: *strict,
                ..Options::default()
            };
            let scheduler = Some((spec.profile.clone(), spec.queue.clone()));
            let r = exec::run_workload_hooked(test_case, workload, ops, &opts, scheduler, &mut tracker);
            // The run's warnings (gates overridden or not modelled, unmodelled fields) are the
            // configuration's notes, as `ksched run --workload` prints them.
            notes.extend(r.warnings.iter().cloned());
            unmodelled_fields = r.unmodelled_fields.clone();
            match r.status {
                Status::Passed | Status::ThresholdMissed(_) => {}
                Status::Failed(why) if why.ends_with(exec::STRICT_REFUSAL) => return Err(at(why)),
                Status::Failed(why) => notes.push(format!("the workload did not complete: {why}")),
                Status::Skipped(why) => notes.push(format!("skipped: {why}")),
            }
        }
    }
    let cycle_observer = tracker.cycle_observer.take();
    let mut record = tracker.record.ok_or_else(|| at("the run ended without its final state".into()))?;
    record.not_queued = not_queued;
    record.notes = notes;
    record.unmodelled_fields = unmodelled_fields;
    Ok((record, cycle_observer))
}

/// Pending pods by reason: each pending pod counts once under each reason of its last
/// attempt (`not queued` for pods never queued, `not attempted` for queued pods never tried).
pub fn pending_by_reason(r: &RunRecord) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for p in &r.pending {
        match r.last_failure.get(&p.key()) {
            Some(reasons) if !reasons.is_empty() => {
                for reason in reasons {
                    *out.entry(reason.clone()).or_insert(0) += 1;
                }
            }
            _ => *out.entry("not attempted".to_owned()).or_insert(0) += 1,
        }
    }
    if !r.not_queued.is_empty() {
        *out.entry("not queued".to_owned()).or_insert(0) += r.not_queued.len();
    }
    out
}
