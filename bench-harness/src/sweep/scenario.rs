//! Runs one scenario in this process and measures it: the body of `ksched sweep PLAN
//! --index I`, which a local sweep runs as a child process and a Kubernetes Job's pod runs
//! per completion index.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::load::LoadSim;
use hdrhistogram::Histogram;
use ksched_engine::cache::Cache;
use ksched_engine::features::FeatureGates;
use ksched_engine::framework::Profiles;
use ksched_engine::queue::{QueueConfig, SchedulingQueue};
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::util::time::Clock;
use ksched_k8s::manifest::{read_files_with, ReadOptions};
use ksched_k8s::perf_workload::LoadOptions;
use ksched_sim::observe::{AttemptLatency, Counts};
use ksched_sim::simulation::RunOptions;
use ksched_sim::Simulation;
use serde::{Deserialize, Serialize};

use super::plan::{Scenario, ScenarioLabel, WorkloadKind};
use crate::front_ends::PreemptionApiArgs;
use crate::perf_file::exec::{self, node_utilization, NodeUse, Status};
use crate::synth::{drive, Workload as Builtin};

/// Marks a sweep result line among other output (`kubectl logs`).
pub const RESULT_KIND: &str = "ksched-sweep-result";

/// The command-line settings every scenario of a sweep runs under (`--feature-gates`,
/// `--preemption-api-delay`, `--strict`): passed on to each scenario's process, and recorded
/// in its result so that a resumed sweep re-runs what ran under other settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub gates: FeatureGates,
    pub api: PreemptionApiArgs,
    /// A field of a scenario's manifests or workload file that changes upstream's decision
    /// and that ksched does not model is an error (the scenario fails).
    pub strict: bool,
}

impl Settings {
    /// The arguments that give a child ksched process these settings (none for the defaults).
    pub fn child_args(&self) -> Vec<String> {
        let mut args = crate::feature_gates::child_args(&self.gates);
        args.extend(self.api.child_args());
        if self.strict {
            args.push("--strict".into());
        }
        args
    }
}

/// One scenario's outcome: one JSON line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioResult {
    pub kind: String,
    pub index: usize,
    pub id: String,
    pub scenario: ScenarioLabel,
    /// `ok`, `failed: WHY` or `skipped: WHY`.
    pub status: String,
    /// The settings it ran under that differ from the defaults, as ksched's arguments
    /// ([`Settings::child_args`]; absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<String>,
    /// What the run warned about: fields of its input that change upstream's decision and that
    /// ksched does not model (one line per field, with its count), kinds skipped, a workload
    /// file's gates it could not apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub metrics: Metrics,
    /// Wall time of the whole scenario in its process: reading inputs, building the cluster,
    /// scheduling, measuring.
    pub run_seconds: f64,
}

/// What a scenario's run is measured by. Decisions (the counts and utilization) are exact and
/// repeatable for a seed; throughput and latency are wall time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    pub nodes: usize,
    pub attempts: usize,
    pub scheduled: usize,
    /// Pods still pending at the end (`None`: not known for workload files, whose runner
    /// deletes and recreates pods).
    pub pending: Option<usize>,
    /// Unschedulable attempts whose preemption nominated a node.
    pub preempted: usize,
    /// Pods deleted by those preemptions.
    pub victims: usize,
    /// Nodes with any CPU or memory requested (`ksched compare`'s `nodes_non_empty`).
    pub nodes_in_use: usize,
    pub cpu_mean: f64,
    pub cpu_stddev: f64,
    pub memory_mean: f64,
    pub memory_stddev: f64,
    /// Time that passed on the simulated clock (backoffs, grace periods, the preemption API
    /// delay): exact for a seed, like the counts.
    #[serde(default)]
    pub simulated_seconds: f64,
    /// Scheduling wall time (the measured phase).
    pub seconds: f64,
    pub pods_per_second: f64,
    pub latency_p50_us: f64,
    pub latency_p90_us: f64,
    pub latency_p99_us: f64,
    pub latency_max_us: f64,
}

/// What a run hands to [`measure`].
struct Raw {
    counts: Counts,
    latency: Histogram<u64>,
    utilization: Vec<NodeUse>,
    pending: Option<usize>,
    simulated_seconds: f64,
    warnings: Vec<String>,
    /// The measured phase: its wall time and the pods it scheduled (a built-in workload's
    /// warm-up is counted in `counts`, not here).
    seconds: f64,
    measured_scheduled: usize,
}

/// The metrics of a run: the one place they are computed (to be replaced by `ksched compare`'s
/// when it lands, so both report the same numbers).
fn measure(r: &Raw) -> Metrics {
    let n = r.utilization.len();
    let mean_sd = |f: fn(&NodeUse) -> f64| {
        if n == 0 {
            return (0.0, 0.0);
        }
        let mean = r.utilization.iter().map(f).sum::<f64>() / n as f64;
        let var = r.utilization.iter().map(|u| (f(u) - mean).powi(2)).sum::<f64>() / n as f64;
        (mean, var.sqrt())
    };
    let (cpu_mean, cpu_stddev) = mean_sd(|u| u.cpu);
    let (memory_mean, memory_stddev) = mean_sd(|u| u.memory);
    let us = |q: f64| if r.latency.is_empty() { 0.0 } else { r.latency.value_at_quantile(q) as f64 / 1000.0 };
    Metrics {
        nodes: n,
        attempts: r.counts.attempts,
        scheduled: r.counts.scheduled,
        pending: r.pending,
        preempted: r.counts.preemptions,
        victims: r.counts.victims,
        nodes_in_use: r.utilization.iter().filter(|u| u.cpu > 0.0 || u.memory > 0.0).count(),
        cpu_mean,
        cpu_stddev,
        memory_mean,
        memory_stddev,
        simulated_seconds: r.simulated_seconds,
        seconds: r.seconds,
        pods_per_second: ksched_sim::observe::pods_per_second(r.measured_scheduled, r.seconds),
        latency_p50_us: us(0.5),
        latency_p90_us: us(0.9),
        latency_p99_us: us(0.99),
        latency_max_us: if r.latency.is_empty() { 0.0 } else { r.latency.max() as f64 / 1000.0 },
    }
}

/// The profile and queue of `config` (upstream's defaults without) under `settings`,
/// filtering on one thread: a sweep fills the cores with scenarios, and parallelism never
/// changes a decision.
fn load_profile(config: Option<&Path>, settings: Settings) -> Result<(Profiles, QueueConfig), String> {
    let (profiles, mut queue) = crate::simulate::load_profiles(config, settings.gates)?;
    settings.api.apply(&mut queue);
    Ok((profiles, queue))
}

/// Runs `s` and measures it. Errors are bad inputs; a workload file's failed run is a result
/// with a `failed:` status. Every scenario runs under `settings` (`--feature-gates`,
/// `--preemption-api-delay`).
pub fn run(s: &Scenario, settings: Settings) -> Result<ScenarioResult, String> {
    let start = Instant::now();
    let config = s.config.path.as_deref();
    let (status, raw) = match &s.workload.kind {
        WorkloadKind::Builtin(b) => ("ok".to_owned(), run_builtin(*b, s, config, settings)?),
        WorkloadKind::Manifests(files) => ("ok".to_owned(), run_manifests(files, config, s.seed, settings)?),
        WorkloadKind::PerfFile { path, test, workload } => {
            run_perf_file(path, test, workload, config, s.seed, settings)?
        }
    };
    Ok(ScenarioResult {
        kind: RESULT_KIND.into(),
        index: s.index,
        id: s.id.clone(),
        scenario: s.label(),
        status,
        settings: settings.child_args(),
        warnings: raw.warnings.clone(),
        metrics: measure(&raw),
        run_seconds: start.elapsed().as_secs_f64(),
    })
}

fn run_builtin(w: Builtin, s: &Scenario, config: Option<&Path>, settings: Settings) -> Result<Raw, String> {
    let nodes = s.nodes.unwrap_or(5000);
    let fitted = w.fitted_counts(nodes, s.warmup_pods, s.pods);
    for n in &fitted.notes {
        eprintln!("ksched: {}: {n}", s.id);
    }
    let cache = Arc::new(Cache::upstream());
    for i in 0..nodes {
        cache.add_node(w.node(i)).map_err(|e| e.to_string())?;
    }
    let (profile, queue) = load_profile(config, settings)?;
    let mut sim = Simulation::new(cache.clone(), profile, queue, s.seed);
    let (cluster, start) = (sim.cluster.clone(), sim.clock.now());
    for i in 0..fitted.warmup {
        cluster.create_pod(w.pod(&format!("warmup-{i}"), false)).map_err(|e| e.to_string())?;
    }
    let mut counts = Counts::default();
    sim.drain(|o, _| counts.record(&o));
    for i in 0..fitted.measured {
        cluster.create_pod(w.pod(&format!("pod-{i}"), true)).map_err(|e| e.to_string())?;
    }
    let mut latency = AttemptLatency::default();
    let mut measured_scheduled = 0;
    let mut tally = |o: &CycleOutcome, _: u64| {
        if let CycleOutcome::Scheduled { .. } = o {
            measured_scheduled += 1;
        }
    };
    let mut churn = w.churn();
    let t = Instant::now();
    drive(&mut sim, &mut churn, 0, &mut [&mut latency, &mut counts, &mut tally])?;
    let seconds = t.elapsed().as_secs_f64();
    let pending = sim.queue.pending_pods().len();
    Ok(Raw {
        counts,
        latency: latency.0,
        utilization: node_utilization(&cache),
        pending: Some(pending),
        simulated_seconds: sim.clock.now().saturating_since(start).as_secs_f64(),
        warnings: Vec::new(),
        seconds,
        measured_scheduled,
    })
}

fn run_manifests(
    files: &[std::path::PathBuf],
    config: Option<&Path>,
    seed: u64,
    settings: Settings,
) -> Result<Raw, String> {
    let options = ReadOptions { gates: settings.gates, strict: settings.strict, ..ReadOptions::default() };
    let manifests = read_files_with(files, options).map_err(|e| e.to_string())?;
    let warnings = manifests.skipped_summary().into_iter().chain(manifests.unmodelled.lines()).collect();
    let (profile, queue) = load_profile(config, settings)?;
    let loaded = manifests.load_full(profile, queue, seed).map_err(|e| e.to_string())?;
    let (mut sim, mut controllers) = (loaded.sim, loaded.controllers);
    let start = sim.clock.now();
    let mut latency = AttemptLatency::default();
    let mut counts = Counts::default();
    let t = Instant::now();
    let until = controllers.until(&sim, None);
    sim.run(until, &RunOptions::default(), &mut [&mut controllers], &mut [&mut latency, &mut counts])
        .map_err(|e| e.to_string())?;
    let seconds = t.elapsed().as_secs_f64();
    let pending = sim.queue.pending_pods().len();
    Ok(Raw {
        measured_scheduled: counts.scheduled,
        counts,
        latency: latency.0,
        utilization: node_utilization(&sim.cache),
        pending: Some(pending),
        simulated_seconds: sim.clock.now().saturating_since(start).as_secs_f64(),
        warnings,
        seconds,
    })
}

fn run_perf_file(
    path: &Path,
    test: &str,
    workload: &str,
    config: Option<&Path>,
    seed: u64,
    settings: Settings,
) -> Result<(String, Raw), String> {
    let file = ksched_k8s::perf_workload::load_file(path).map_err(|e| e.to_string())?;
    let mut tc = file
        .test_cases
        .into_iter()
        .find(|t| t.name == test)
        .ok_or_else(|| format!("{}: no test case {test:?}", path.display()))?;
    if let Some(c) = config {
        tc.scheduler_config_path = Some(c.to_path_buf());
    }
    let w = tc
        .workloads
        .iter()
        .find(|w| w.name == workload)
        .ok_or_else(|| format!("{}: test case {test:?} has no workload {workload:?}", path.display()))?;
    let ops = tc.resolve(w, &LoadOptions { max_count: 1_000_000 }).map_err(|e| e.to_string())?;
    let empty = || Histogram::new_with_bounds(1, 600_000_000_000, 3).map_err(|e| e.to_string());
    if let Some(reason) = exec::unsupported_reason(&ops) {
        let raw = Raw {
            counts: Counts::default(),
            latency: empty()?,
            utilization: Vec::new(),
            pending: None,
            simulated_seconds: 0.0,
            warnings: Vec::new(),
            seconds: 0.0,
            measured_scheduled: 0,
        };
        return Ok((format!("skipped: {reason}"), raw));
    }
    let opts = exec::Options {
        seed,
        parallelism: Some(1),
        gates: settings.gates,
        api: settings.api,
        strict: settings.strict,
        ..exec::Options::default()
    };
    let r = exec::run_workload(&tc, w, &ops, &opts);
    let mut latency = empty()?;
    for m in &r.measurements {
        latency.add(&m.latency).map_err(|e| e.to_string())?;
    }
    let status = match &r.status {
        Status::Passed | Status::ThresholdMissed(_) => "ok".to_owned(),
        Status::Failed(why) => format!("failed: {why}"),
        Status::Skipped(why) => format!("skipped: {why}"),
    };
    let raw = Raw {
        counts: r.counts.outcomes,
        latency,
        utilization: r.utilization,
        pending: None,
        simulated_seconds: r.simulated_seconds,
        warnings: r.warnings.clone(),
        seconds: r.seconds,
        measured_scheduled: r.counts.scheduled,
    };
    Ok((status, raw))
}
