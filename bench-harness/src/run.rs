//! `ksched run`: one upstream scheduler_perf workload, synthesized (synth.rs) or read from a
//! workload file (perf_file/).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, ValueEnum};
use ksched_engine::api::Sym;
use ksched_engine::cache::Cache;
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::util::time::Clock;
use ksched_k8s::perf_workload::LoadOptions;
use ksched_sim::observe::{peak_rss, AttemptLatency, Counts};
use ksched_sim::Simulation;
use serde::Serialize;

use crate::format::Format;
use crate::front_ends::{PreemptionApiArgs, TieBreakArg};
use crate::metrics::{Collector, DataItems, PodFilter};
use crate::perf_file::exec::{node_utilization, Options, Status};
use crate::perf_file::{self, Selection};
use crate::progress::Progress;
use crate::report::{self, Section};
pub use crate::synth::Workload;
use crate::synth::{drive, slowdown_from_env};

/// `--workload`: a built-in synthesized workload, or an upstream scheduler_perf workload file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    Builtin(Workload),
    File(PathBuf),
}

pub(crate) fn parse_workload(s: &str) -> Result<WorkloadArg, String> {
    if let Ok(w) = Workload::from_str(s, true) {
        return Ok(WorkloadArg::Builtin(w));
    }
    let p = PathBuf::from(s);
    if p.is_file() || s.contains('/') || s.ends_with(".yaml") || s.ends_with(".yml") {
        return Ok(WorkloadArg::File(p));
    }
    Err(format!("{s:?} is neither a built-in workload ({}) nor a workload file", Workload::names()))
}

/// Which workloads of a workload file `ksched compare` runs.
#[derive(Args, Debug, Clone)]
pub struct FileSelectionArgs {
    /// With a workload file: run only this test case.
    #[arg(long, value_name = "NAME")]
    pub test: Option<String>,
    /// With a workload file: run only workloads of this name.
    #[arg(long, value_name = "NAME")]
    pub workload_name: Option<String>,
    /// With a workload file: upstream's label filter (repeatable).
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// With a workload file: the largest count one op may ask for.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_count: u64,
}

impl FileSelectionArgs {
    pub fn selection(&self) -> Selection {
        Selection { test: self.test.clone(), workload: self.workload_name.clone(), labels: self.labels.clone() }
    }

    pub fn load_options(&self) -> LoadOptions {
        LoadOptions { max_count: self.max_count }
    }
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    #[arg(long, value_parser = parse_workload, default_value = "basic", help = Workload::help(), long_help = Workload::long_help())]
    pub workload: WorkloadArg,
    /// With a workload file: run only this test case.
    #[arg(long, value_name = "NAME")]
    pub test: Option<String>,
    /// With a workload file: run only workloads of this name.
    #[arg(long, value_name = "NAME")]
    pub workload_name: Option<String>,
    /// With a workload file: upstream's label filter (repeatable or comma-separated): a label
    /// the workload must have (`performance`, `+short`) or must not have (`-performance`).
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// With a workload file: the largest count one op may ask for [default: 1000000].
    #[arg(long)]
    pub max_count: Option<u64>,
    /// With a workload file: a field of a node or pod it creates or updates that changes
    /// upstream's decision and that ksched does not model fails the workload (warned about
    /// otherwise).
    #[arg(long)]
    pub strict: bool,
    /// Write the results as scheduler_perf does: {"version":"v1","dataItems":[...]}.
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
    /// Write a self-contained HTML report with SVG plots (attempt-latency CDF, throughput over
    /// time, node utilization after the run).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// With a built-in workload: nodes in the cluster (node-default.yaml: 4 CPU, 32Gi, 110
    /// pods) [default: 5000].
    #[arg(long)]
    pub nodes: Option<usize>,
    /// With a built-in workload: measured pods. Default: the workload's (10000 for basic).
    #[arg(long)]
    pub pods: Option<usize>,
    /// With a built-in workload: pods scheduled before measuring. Default: the workload's
    /// (1000 for basic).
    #[arg(long)]
    pub warmup_pods: Option<usize>,
    /// Seed of the scheduler's RNG (the draw among tied nodes with --tie-break random, and
    /// preemption's random start among candidate nodes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How a cycle picks among nodes tied at the highest total: upstream (the root of
    /// upstream's score heap over the nodes in the order found) or random (a uniform draw,
    /// seeded by --seed).
    #[arg(long, value_enum, default_value_t = TieBreakArg::Upstream)]
    pub tie_break: TieBreakArg,
    #[command(flatten)]
    pub api: PreemptionApiArgs,
    /// Filter workers, the scheduling thread included (1 = sequential). Default: the
    /// configuration's parallelism with --config, else 1.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallelism: Option<u16>,
    /// With a built-in workload: percentageOfNodesToScore (0 = adaptive, as upstream's
    /// default). Default: the profile's with --config, else adaptive.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub percentage_of_nodes_to_score: Option<u32>,
    /// With a built-in workload: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1,
    /// YAML): all its profiles schedule (each the pods whose schedulerName names it), with its
    /// backoff settings. (A workload file's test cases name theirs: schedulerConfigPath.)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Yaml]), default_value = "text")]
    pub format: Format,
}

#[derive(Serialize)]
pub(crate) struct Summary {
    workload: &'static str,
    nodes: usize,
    pub(crate) warmup_pods: usize,
    pub(crate) measured_pods: usize,
    pub(crate) scheduled: usize,
    pub(crate) unschedulable: usize,
    pub(crate) failed: usize,
    pub(crate) preemptions: usize,
    pub(crate) victims: usize,
    /// OpportunisticBatching: pods that took the next node of the previous pod's ranking.
    batch_hints: u64,
    seconds: f64,
    /// Time that passed on the simulated clock (backoffs, grace periods).
    simulated_seconds: f64,
    pods_per_second: f64,
    attempt_latency_us: Latency,
    peak_rss_bytes: Option<u64>,
    invariant_violations: usize,
    /// The configured parallelism (flag or `--config`).
    parallelism: usize,
    configured_parallelism: usize,
    /// The workers that ran: the configured count capped by the machine.
    effective_parallelism: usize,
    /// Of the cycles big enough for the pool (warm-up included), how many ran on it and how
    /// many on one worker, as measured faster at the time (absent without a pool or such
    /// cycles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pool_use: Option<PoolUse>,
    seed: u64,
    /// How ties at the highest total were broken (`upstream`, `random`).
    tie_break: &'static str,
    /// `--preemption-api-delay`, in seconds.
    pub(crate) preemption_api_delay_seconds: f64,
    /// The feature gates that differ from v1.35's defaults (`--feature-gates`' form).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) feature_gates: String,
    /// The configuration's profiles (with `--config`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    profiles: Vec<String>,
    /// Attempts by the scheduling profile (the pod's schedulerName), with `--config`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    by_profile: std::collections::BTreeMap<String, ProfileAttempts>,
    /// A warm-up scaled down to leave the measured pods room, or a warning that the pods
    /// cannot all be scheduled (`Workload::fitted_counts`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

/// Cycles big enough for the pool, by pass: on the pool and on one worker.
#[derive(Clone, Copy, Debug, Serialize)]
struct PoolUse {
    filter: PassUse,
    scoring: PassUse,
}

/// Of the cycles big enough for the pool, how many ran one pass on it and how many on one
/// worker.
#[derive(Clone, Copy, Debug, Serialize)]
struct PassUse {
    pooled: u64,
    one_worker: u64,
}

/// One profile's attempts.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct ProfileAttempts {
    scheduled: usize,
    unschedulable: usize,
    failed: usize,
}

#[derive(Serialize)]
struct Latency {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

impl RunArgs {
    /// An error naming the first flag given that does not apply to the chosen `--workload`
    /// (a built-in one or a workload file), and why.
    pub fn check_flags(&self) -> Result<(), String> {
        let (kind, given): (&str, Vec<(&str, bool, &str)>) = match &self.workload {
            WorkloadArg::File(_) => (
                "a workload file",
                vec![
                    ("--nodes", self.nodes.is_some(), "the file's createNodes ops make the nodes"),
                    ("--pods", self.pods.is_some(), "the file's createPods ops make the pods"),
                    ("--warmup-pods", self.warmup_pods.is_some(), "the file's createPods ops make the pods"),
                    ("--config", self.config.is_some(), "a test case names its own schedulerConfigPath"),
                ],
            ),
            WorkloadArg::Builtin(_) => (
                "a built-in workload",
                vec![
                    ("--test", self.test.is_some(), "it selects a test case of a workload file"),
                    ("--workload-name", self.workload_name.is_some(), "it selects workloads of a workload file"),
                    ("--label", !self.labels.is_empty(), "it filters the workloads of a workload file"),
                    ("--max-count", self.max_count.is_some(), "it caps the counts of a workload file's ops"),
                    ("--strict", self.strict, "its nodes and pods are ksched's own, with no field it does not model"),
                ],
            ),
        };
        if let Some((flag, _, why)) = given.iter().find(|(_, on, _)| *on) {
            return Err(format!("{flag} does not apply to {kind}: {why}"));
        }
        if matches!(self.workload, WorkloadArg::File(_)) && self.percentage_of_nodes_to_score.is_some() {
            return Err("--percentage-of-nodes-to-score does not apply to a workload file: a test case's \
                        schedulerConfigPath sets it"
                .into());
        }
        Ok(())
    }
}

/// Runs what `args` asks for; `Ok(false)` when a workload missed its threshold or failed.
pub fn run(args: &RunArgs) -> Result<bool, String> {
    args.check_flags()?;
    let workload = match &args.workload {
        WorkloadArg::Builtin(w) => *w,
        WorkloadArg::File(path) => return run_file(args, path),
    };
    let (summary, violations) = run_builtin(args, workload)?;
    for v in violations.iter().take(10) {
        eprintln!("invariant violation: {v}");
    }
    match args.format {
        Format::Json | Format::Yaml => print!("{}", crate::format::document(&summary, args.format)?),
        _ => print_text(&summary),
    }
    if violations.is_empty() {
        Ok(true)
    } else {
        Err(format!("{} invariant violations (cache, kept scores)", violations.len()))
    }
}

/// A built-in workload's run (writing `--results` and `--report` when asked): its summary
/// and the cache invariant violations found after it.
pub(crate) fn run_builtin(args: &RunArgs, workload: Workload) -> Result<(Summary, Vec<String>), String> {
    let nodes = args.nodes.unwrap_or(5000);
    if nodes == 0 {
        return Err("no nodes: --nodes must be at least 1".into());
    }
    let counts = workload.fitted_counts(nodes, args.warmup_pods, args.pods);
    for n in &counts.notes {
        eprintln!("ksched: {n}");
    }
    let (warmup_pods, measured_pods, notes) = (counts.warmup, counts.measured, counts.notes);
    let cache = Arc::new(Cache::upstream());
    for i in 0..nodes {
        cache.add_node(workload.node(i)).map_err(|e| e.to_string())?;
    }
    // With --config, every profile of it schedules (each its schedulerName's pods).
    let (mut profiles, mut queue_config, from_config) =
        crate::feature_gates::scheduler(args.config.as_deref(), args.gates)?;
    args.api.apply(&mut queue_config);
    for profile in profiles.iter_mut() {
        if let Some(p) = args.parallelism {
            profile.parallelism = p as usize;
        } else if !from_config {
            profile.parallelism = 1;
        }
        if args.percentage_of_nodes_to_score.is_some() || !from_config {
            profile.percentage_of_nodes_to_score = args.percentage_of_nodes_to_score;
        }
    }
    args.tie_break.apply(&mut profiles);
    let profile_names: Vec<String> =
        if from_config { profiles.names().into_iter().map(String::from).collect() } else { Vec::new() };
    let parallelism = profiles.primary().parallelism;
    let effective_parallelism = note_parallelism(parallelism);
    // Simulated time: backoffs and grace periods pass as soon as the scheduler is idle.
    let mut sim = Simulation::new(cache.clone(), profiles, queue_config, args.seed);
    let (cluster, clock) = (sim.cluster.clone(), sim.clock.clone());

    for i in 0..warmup_pods {
        cluster.create_pod(workload.pod(&format!("warmup-{i}"), false)).map_err(|e| e.to_string())?;
    }
    sim.drain(|_, _| {});

    for i in 0..measured_pods {
        cluster.create_pod(workload.pod(&format!("pod-{i}"), true)).map_err(|e| e.to_string())?;
    }
    let mut bar = Progress::stderr(
        args.format.is_machine(),
        measured_pods as u64,
        "{spinner} scheduling [{bar:40}] {pos}/{len} pods ({per_sec})",
    );
    let mut latency = AttemptLatency::default();
    let mut counts = Counts::default();
    let name = format!("{}/{}Nodes", workload.upstream_name(), nodes);
    let mut collector = Collector::start(name.clone(), PodFilter::default());
    let sim_start = clock.now();
    let start = Instant::now();
    let mut churn = workload.churn();
    let mut by_profile: Vec<(Sym, ProfileAttempts)> = Vec::new();
    let mut progress = |outcome: &CycleOutcome, _: u64| {
        if let CycleOutcome::Scheduled { .. } = outcome {
            bar.inc(1);
        }
        if from_config {
            count_by_profile(&mut by_profile, outcome);
        }
    };
    drive(&mut sim, &mut churn, slowdown_from_env(), &mut [&mut latency, &mut collector, &mut counts, &mut progress])?;
    let hist = latency.0;
    let elapsed = start.elapsed().as_secs_f64();
    let simulated = clock.now().saturating_since(sim_start).as_secs_f64();
    bar.finish();
    let (items, measurement) = collector.finish();
    if let Some(p) = &args.results {
        DataItems::new(items).write(p)?;
    }
    if let Some(p) = &args.report {
        let utilization = node_utilization(&cache);
        let summary = vec![
            ("nodes".to_owned(), nodes.to_string()),
            ("warm-up / measured pods".to_owned(), format!("{warmup_pods} / {measured_pods}")),
            ("scheduled".to_owned(), counts.scheduled.to_string()),
            ("seconds".to_owned(), format!("{elapsed:.3}")),
        ];
        let section = Section { title: name, summary, measurements: vec![measurement], utilization };
        report::write(p, "ksched run", &[section])?;
    }
    let mut violations = cache.check_invariants();
    violations.extend(sim.scheduler.check_score_memos().into_iter().map(|m| format!("kept scores: {m}")));
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    let summary = Summary {
        workload: workload.upstream_name(),
        nodes,
        warmup_pods,
        measured_pods,
        scheduled: counts.scheduled,
        unschedulable: counts.unschedulable,
        failed: counts.bind_failures,
        preemptions: counts.preemptions,
        victims: counts.victims,
        batch_hints: sim.scheduler.batch_hints(),
        seconds: elapsed,
        simulated_seconds: simulated,
        pods_per_second: ksched_sim::observe::pods_per_second(counts.scheduled, elapsed),
        attempt_latency_us: Latency { p50: us(0.5), p90: us(0.9), p99: us(0.99), max: hist.max() as f64 / 1000.0 },
        peak_rss_bytes: peak_rss(),
        invariant_violations: violations.len(),
        parallelism,
        configured_parallelism: parallelism,
        effective_parallelism,
        pool_use: match sim.scheduler.pool_use() {
            [(0, 0), (0, 0)] => None,
            [(fp, fo), (sp, so)] => Some(PoolUse {
                filter: PassUse { pooled: fp, one_worker: fo },
                scoring: PassUse { pooled: sp, one_worker: so },
            }),
        },
        seed: args.seed,
        tie_break: args.tie_break.rule().name(),
        preemption_api_delay_seconds: args.api.preemption_api_delay.as_secs_f64(),
        feature_gates: args.gates.to_flag(),
        profiles: profile_names,
        by_profile: by_profile.into_iter().map(|(n, c)| (n.to_string(), c)).collect(),
        notes,
    };
    Ok((summary, violations))
}

/// Adds one attempt to its pod's profile's counts (a few profiles: a scan).
fn count_by_profile(by_profile: &mut Vec<(Sym, ProfileAttempts)>, outcome: &CycleOutcome) {
    let pod = match outcome {
        CycleOutcome::Scheduled { pod, .. }
        | CycleOutcome::Unschedulable { pod, .. }
        | CycleOutcome::BindFailed { pod, .. } => pod,
    };
    let at = match by_profile.iter().position(|(n, _)| *n == pod.scheduler_name) {
        Some(i) => i,
        None => {
            by_profile.push((pod.scheduler_name, ProfileAttempts::default()));
            by_profile.len() - 1
        }
    };
    let c = &mut by_profile[at].1;
    match outcome {
        CycleOutcome::Scheduled { .. } => c.scheduled += 1,
        CycleOutcome::Unschedulable { .. } => c.unschedulable += 1,
        CycleOutcome::BindFailed { .. } => c.failed += 1,
    }
}

/// The workers a configured parallelism gets here (the scheduler caps it by the machine's
/// available parallelism); says so on stderr, once per process, when it is capped.
pub(crate) fn note_parallelism(configured: usize) -> usize {
    static NOTED: std::sync::Once = std::sync::Once::new();
    let effective = ksched_engine::parallel::effective_parallelism(configured);
    if effective != configured {
        NOTED.call_once(|| {
            eprintln!(
                "ksched: parallelism {configured} capped to {effective}: this machine runs {} threads at once",
                ksched_engine::parallel::available_parallelism()
            )
        });
    }
    effective
}

/// `--workload FILE`: the selected workloads of an upstream scheduler_perf file.
fn run_file(args: &RunArgs, path: &std::path::Path) -> Result<bool, String> {
    let sel = Selection { test: args.test.clone(), workload: args.workload_name.clone(), labels: args.labels.clone() };
    let opts = file_options(args);
    let results = perf_file::run_file(
        path,
        &sel,
        &LoadOptions { max_count: args.max_count.unwrap_or(LoadOptions::default().max_count) },
        &opts,
    )?;
    let items = perf_file::data_items(&results);
    match args.format {
        Format::Json | Format::Yaml => {
            print!("{}", crate::format::document(&DataItems::new(items.clone()), args.format)?);
            // The dataItems have no place for them: the warnings go to stderr, never dropped.
            for w in warning_lines(path, &results) {
                eprintln!("{w}");
            }
        }
        _ => perf_file::print_text(path, &results),
    }
    if let Some(p) = &args.results {
        perf_file::write_results(p, items)?;
    }
    let ok = results.iter().all(|r| matches!(r.status, Status::Passed | Status::Skipped(_)));
    if let Some(p) = &args.report {
        report::write(p, &format!("ksched run {}", path.display()), &perf_file::sections(results))?;
    }
    Ok(ok)
}

/// Every workload's warnings, each naming the file and the workload (the text output prints
/// them under each workload).
fn warning_lines(path: &std::path::Path, results: &[perf_file::exec::WorkloadResult]) -> Vec<String> {
    results
        .iter()
        .flat_map(|r| {
            r.warnings.iter().map(move |w| format!("ksched run: {}: {}: warning: {w}", path.display(), r.name))
        })
        .collect()
}

/// How `--workload FILE` runs its workloads: the seed, tie-break, parallelism, gates and
/// preemption API delay of the command line.
fn file_options(args: &RunArgs) -> Options {
    Options {
        seed: args.seed,
        tie_break: args.tie_break.rule(),
        parallelism: args.parallelism.map(usize::from),
        progress: args.format == Format::Text,
        gates: args.gates,
        api: args.api,
        strict: args.strict,
        ..Options::default()
    }
}

fn print_text(s: &Summary) {
    println!(
        "ksched run: {} — {} nodes, {} warm-up + {} measured pods (seed {}, parallelism {})",
        s.workload, s.nodes, s.warmup_pods, s.measured_pods, s.seed, s.effective_parallelism
    );
    if s.effective_parallelism != s.configured_parallelism {
        println!(
            "  parallelism    {:>10}   (configured {}, capped by the machine)",
            s.effective_parallelism, s.configured_parallelism
        );
    }
    if let Some(u) = s.pool_use {
        for (what, u) in [("filter", u.filter), ("scoring", u.scoring)] {
            println!(
                "  pool, {what:<8}{:>10}   of {} cycles big enough for it ran their {what} on it (the rest on one worker, measured faster then)",
                u.pooled,
                u.pooled + u.one_worker
            );
        }
    }
    if !s.feature_gates.is_empty() {
        println!("  feature gates  {}", s.feature_gates);
    }
    if !s.profiles.is_empty() {
        println!("  profiles       {}", s.profiles.join(", "));
    }
    for (name, c) in &s.by_profile {
        println!(
            "    {name}: {} scheduled, {} unschedulable, {} bind failures (attempts)",
            c.scheduled, c.unschedulable, c.failed
        );
    }
    println!("  scheduled      {:>10}", s.scheduled);
    println!("  unschedulable  {:>10}   (attempts)", s.unschedulable);
    if s.failed > 0 {
        println!("  bind failures  {:>10}", s.failed);
    }
    if s.preemptions > 0 {
        println!("  preemptions    {:>10}   ({} victims)", s.preemptions, s.victims);
    }
    if s.batch_hints > 0 {
        println!(
            "  batch hints    {:>10}   (OpportunisticBatching: took the next node of the previous pod's ranking)",
            s.batch_hints
        );
    }
    if s.preemption_api_delay_seconds > 0.0 {
        println!(
            "  preemption API delay {:>4} s   (victims deleted that long after the cycle that chose them)",
            s.preemption_api_delay_seconds
        );
    }
    println!("  elapsed        {:>10.3} s   ({:.0} s simulated)", s.seconds, s.simulated_seconds);
    println!("  throughput     {:>10.0} pods/s", s.pods_per_second);
    let l = &s.attempt_latency_us;
    println!(
        "  attempt latency  p50 {:.1} µs   p90 {:.1} µs   p99 {:.1} µs   max {:.1} µs",
        l.p50, l.p90, l.p99, l.max
    );
    match s.peak_rss_bytes {
        Some(b) => println!("  peak memory    {:>10.1} MiB", b as f64 / (1024.0 * 1024.0)),
        None => println!("  peak memory    unknown"),
    }
    println!("  cache invariant violations: {}", s.invariant_violations);
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct RunCli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn args(argv: &[&str]) -> RunArgs {
        RunCli::parse_from(std::iter::once("ksched").chain(argv.iter().copied())).run
    }

    /// `ksched run --preemption-api-delay` reaches the built-in workload's scheduler: each
    /// preemptor waits, nominated, until its victims are deleted that long after its cycle,
    /// so the run takes that much longer on the simulated clock; the decisions are the same
    /// and the summary reports the delay.
    #[test]
    fn run_builtin_preemption_api_delay_defers_the_victims_on_the_simulated_clock() {
        let run = |extra: &[&str]| {
            let argv: Vec<&str> = ["--workload", "preemption", "--nodes", "3"].iter().chain(extra).copied().collect();
            let (s, violations) = run_builtin(&args(&argv), Workload::Preemption).unwrap();
            assert!(violations.is_empty(), "{violations:?}");
            s
        };
        let (now, later) = (run(&[]), run(&["--preemption-api-delay", "90s"]));
        assert_eq!((now.preemption_api_delay_seconds, later.preemption_api_delay_seconds), (0.0, 90.0));
        assert_eq!(now.feature_gates, "", "v1.35's defaults");
        for s in [&now, &later] {
            assert_eq!((s.scheduled, s.preemptions, s.victims), (3, 3, 9));
        }
        assert!(
            now.simulated_seconds < 1.0 && later.simulated_seconds >= 90.0,
            "90s delay: {} s simulated, {} s without",
            later.simulated_seconds,
            now.simulated_seconds
        );
    }

    /// `ksched run --workload FILE --strict`: a field of the file's pods that ksched does not
    /// model fails the workload; a built-in workload has no such field, so the flag is refused.
    #[test]
    fn run_file_strict_refuses_unmodelled_fields() {
        let path = crate::perf_file::tests::unmodelled_field_file("run");
        let path_s = path.to_str().unwrap();
        let status = |extra: &[&str]| {
            let argv: Vec<&str> = ["--workload", path_s].iter().chain(extra).copied().collect();
            let a = args(&argv);
            a.check_flags().unwrap();
            perf_file::run_file(&path, &Selection::default(), &LoadOptions::default(), &file_options(&a))
                .unwrap()
                .remove(0)
                .status
        };
        assert_eq!(status(&[]), Status::Passed);
        // Without --strict the field is a warning, which JSON output sends to stderr.
        let results =
            perf_file::run_file(&path, &Selection::default(), &LoadOptions::default(), &Options::default()).unwrap();
        let lines = warning_lines(&path, &results);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(&format!("ksched run: {path_s}: Gang/one: warning: spec.workloadRef: not modelled"))
        );
        assert!(matches!(status(&["--strict"]), Status::Failed(why) if why.contains("spec.workloadRef")), "--strict");
        let e = args(&["--workload", "basic", "--strict"]).check_flags().unwrap_err();
        assert!(e.starts_with("--strict does not apply to a built-in workload"), "{e}");
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    /// The same with `--workload FILE`: the flag reaches the workload's queue through the
    /// file runner's options.
    #[test]
    fn run_file_preemption_api_delay_defers_the_victims_on_the_simulated_clock() {
        let path = crate::perf_file::tests::preemption_file(3);
        let path = path.to_str().unwrap();
        let simulated = |extra: &[&str]| {
            let argv: Vec<&str> = ["--workload", path].iter().chain(extra).copied().collect();
            let a = args(&argv);
            let WorkloadArg::File(file) = &a.workload else { panic!("{argv:?}: not a workload file") };
            let r = perf_file::run_file(file, &Selection::default(), &LoadOptions::default(), &file_options(&a))
                .unwrap()
                .remove(0);
            assert_eq!((r.counts.preemptions, r.counts.victims), (3, 9), "{extra:?}");
            r.simulated_seconds
        };
        let (now, later) = (simulated(&[]), simulated(&["--preemption-api-delay", "90s"]));
        // The preemptors' victims are deleted 90 s after their cycles, all within the same
        // few simulated milliseconds.
        assert!(now < 1.0 && later >= 90.0, "90s delay: {later} s simulated, {now} s without");
    }
}
