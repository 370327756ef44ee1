//! `ksched bench`: the suite of upstream scheduler_perf workloads on one cluster size.
//!
//! Each workload runs in a child process of this binary (`ksched bench --child --only W`), so
//! its peak RSS (VmHWM) is its own: in one process, the allocator keeps the previous
//! workload's pages and resetting VmHWM through /proc/self/clear_refs would start the next
//! workload from that inflated RSS. The child schedules the warm-up pods, times the limit
//! probe (probe.rs) on the warmed-up cluster, runs the measured pods, and prints one JSON
//! result; the parent writes every result as scheduler_perf `dataItems` JSON and a Markdown
//! table under `--out`.
//!
//! Throughput follows upstream's collector, as every front end counts it
//! (`ksched_sim::observe::ThroughputWindows`: 1 s windows of wall time, every scheduled pod).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use ksched_engine::cache::Cache;
use ksched_engine::features::FeatureGates;
use ksched_engine::parallel::num_feasible_nodes_to_find;
use ksched_engine::scheduler::CycleOutcome;
use ksched_sim::observe::{peak_rss, AttemptLatency, Counts, Throughput, WallThroughput};
use ksched_sim::simulation::Observer;
use ksched_sim::Simulation;
use serde::{Deserialize, Serialize};

use crate::probe;
use crate::progress::Progress;
use crate::synth::{drive, slowdown_from_env, Workload};

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    /// Nodes in the cluster (node-default.yaml), 1..=20000. Pod counts scale with it.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub nodes: u32,
    /// Multiplies every workload's pod counts (upstream's 5000-node counts, scaled to --nodes).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Workloads to run, comma-separated (`basic,pod-affinity` or upstream names). Default: all.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Where the JSON and Markdown results go.
    #[arg(long, default_value = "perf")]
    pub out: PathBuf,
    /// Seed of the scheduler's RNG.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run the one `--only` workload in this process and print its result as JSON.
    #[arg(long, hide = true)]
    pub child: bool,
    /// With --child: skip the limit probe (the gate's callgrind runs do not need it).
    #[arg(long, hide = true, requires = "child")]
    pub no_probe: bool,
}

/// The workloads `--only` names, in suite order; all of them when it names none.
pub fn select(only: &[String]) -> Result<Vec<Workload>, String> {
    if only.is_empty() {
        return Ok(Workload::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in only {
        let w = Workload::parse(name).ok_or_else(|| {
            let known: Vec<String> = Workload::ALL.iter().map(|w| w.cli_name()).collect();
            format!("--only: unknown workload {name:?} (known: {})", known.join(", "))
        })?;
        if !out.contains(&w) {
            out.push(w);
        }
    }
    Ok(out)
}

/// (warm-up, measured) pods of `w` at `nodes` nodes: upstream's 5000-node counts scaled by
/// nodes / 5000 and by `scale` (preemption: 4 victims-to-be per node, and `scale` preemptors
/// per node, at most one).
pub fn counts(w: Workload, nodes: usize, scale: f64) -> (usize, usize) {
    let (warm, measured) = w.default_counts(nodes);
    if w == Workload::Preemption {
        return (warm, ((measured as f64 * scale.min(1.0)).round() as usize).max(1));
    }
    let f = nodes as f64 / 5000.0 * scale;
    ((warm as f64 * f).round() as usize, ((measured as f64 * f).round() as usize).max(1))
}

/// One workload's measurements (a child's stdout).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct WorkloadResult {
    pub workload: String,
    pub nodes: usize,
    pub warmup_pods: usize,
    pub measured_pods: usize,
    pub scheduled: usize,
    pub attempts: usize,
    pub unschedulable_attempts: usize,
    pub churn_steps: u64,
    pub seconds: f64,
    pub throughput: Throughput,
    pub attempt_latency_ms: Latency,
    pub peak_rss_bytes: Option<u64>,
    /// Nodes each pick reads (num_feasible_nodes_to_find).
    pub sampled_nodes: usize,
    /// The limit probe's time per pod; None with --no-probe.
    pub probe_ns_per_pod: Option<f64>,
    /// Wall time of the measured phase per measured pod.
    pub ns_per_pod: f64,
    /// CPU time of the scheduling thread in the measured phase per measured pod.
    pub cpu_ns_per_pod: f64,
    /// cpu_ns_per_pod / probe_ns_per_pod (both CPU time of the thread).
    pub probe_ratio: Option<f64>,
    /// The scoring probe's time per pod (probe.rs `ScoringProbe`); None with --no-probe.
    #[serde(default)]
    pub scoring_probe_ns_per_pod: Option<f64>,
    /// cpu_ns_per_pod / scoring_probe_ns_per_pod: ksched's CPU time per pod over the
    /// scoring probe's (1 / this is ksched's share of the probe's pods/s).
    #[serde(default)]
    pub scoring_probe_ratio: Option<f64>,
    /// The scoring probe timed in bursts between segments of the measured run; None with
    /// --no-probe.
    #[serde(default)]
    pub interleaved_probe: Option<InterleavedProbe>,
    pub invariant_violations: usize,
    /// The feature gates the run had that differ from v1.35's defaults (`--feature-gates`'
    /// form; empty: the defaults), as the child itself reports them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub feature_gates: String,
}

/// The measured run against the scoring probe timed between its segments (`ProbeBursts`).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct InterleavedProbe {
    pub bursts: u64,
    pub picks: u64,
    /// The run's CPU time less the bursts', per measured pod (`cpu_ns_per_pod`).
    pub run_ns_per_pod: f64,
    /// The probe's CPU time in its bursts, per pick.
    pub probe_ns_per_pod: f64,
    /// run_ns_per_pod / probe_ns_per_pod (1 / this is ksched's share of the probe's pods/s).
    pub ratio: f64,
}

/// The measured run's throughput windows, with the scoring probe's bursts run after the
/// attempts that close a segment and left out of the windows' wall time.
struct Windows {
    wall: WallThroughput,
    bursts: Option<probe::ProbeBursts>,
}

impl Windows {
    /// The run is over: its last segment's burst, left out of the windows like the others.
    fn end(&mut self) {
        if let Some(paused) = self.bursts.as_mut().and_then(probe::ProbeBursts::end) {
            self.wall.exclude(paused);
        }
    }
}

impl Observer for Windows {
    fn attempt(&mut self, outcome: &CycleOutcome, ns: u64) {
        Observer::<ksched_sim::InMemoryCluster>::attempt(&mut self.wall, outcome, ns);
        if let Some(paused) = self.bursts.as_mut().and_then(probe::ProbeBursts::after_attempt) {
            self.wall.exclude(paused);
        }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Latency {
    pub average: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// scheduler_perf's results file: `{"version": "v1", "dataItems": [...]}`.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct DataItems {
    pub version: String,
    #[serde(rename = "dataItems")]
    pub data_items: Vec<DataItem>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DataItem {
    pub data: BTreeMap<String, f64>,
    pub unit: String,
    pub labels: BTreeMap<String, String>,
}

impl DataItem {
    pub fn new(metric: &str, name: &str, unit: &str, data: &[(&str, f64)]) -> DataItem {
        DataItem {
            data: data.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            unit: unit.into(),
            labels: [("Metric".to_string(), metric.to_string()), ("Name".to_string(), name.to_string())]
                .into_iter()
                .collect(),
        }
    }

    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels.get(k).map(String::as_str)
    }
}

/// The data items of one workload's result, named like upstream's (`Workload/5000Nodes`).
fn data_items(r: &WorkloadResult) -> Vec<DataItem> {
    let name = format!("{}/{}Nodes", r.workload, r.nodes);
    let t = &r.throughput;
    let l = &r.attempt_latency_ms;
    let mut items = vec![
        DataItem::new(
            "SchedulingThroughput",
            &name,
            "pods/s",
            &[("Average", t.average), ("Perc50", t.p50), ("Perc90", t.p90), ("Perc95", t.p95), ("Perc99", t.p99)],
        ),
        DataItem::new(
            "scheduler_scheduling_attempt_duration_seconds",
            &name,
            "ms",
            &[
                ("Average", l.average),
                ("Perc50", l.p50),
                ("Perc90", l.p90),
                ("Perc95", l.p95),
                ("Perc99", l.p99),
                ("Max", l.max),
            ],
        ),
    ];
    items[0].labels.insert("Windows".into(), t.windows.to_string());
    if let Some(b) = r.peak_rss_bytes {
        items.push(DataItem::new("PeakMemory", &name, "bytes", &[("Value", b as f64)]));
    }
    let probes = [
        ("LimitProbe", r.probe_ns_per_pod, r.probe_ratio),
        ("ScoringProbe", r.scoring_probe_ns_per_pod, r.scoring_probe_ratio),
    ];
    for (metric, probe, ratio) in probes {
        if let (Some(p), Some(ratio)) = (probe, ratio) {
            let mut item = DataItem::new(
                metric,
                &name,
                "ns/pod",
                &[("Workload", r.cpu_ns_per_pod), ("Probe", p), ("Ratio", ratio)],
            );
            item.labels.insert("SampledNodes".into(), r.sampled_nodes.to_string());
            items.push(item);
        }
    }
    if let Some(i) = &r.interleaved_probe {
        let mut item = DataItem::new(
            "ScoringProbeInterleaved",
            &name,
            "ns/pod",
            &[("Workload", i.run_ns_per_pod), ("Probe", i.probe_ns_per_pod), ("Ratio", i.ratio)],
        );
        item.labels.insert("SampledNodes".into(), r.sampled_nodes.to_string());
        item.labels.insert("Bursts".into(), i.bursts.to_string());
        items.push(item);
    }
    // Figures measured under other gates than v1.35's defaults say so.
    if !r.feature_gates.is_empty() {
        for item in &mut items {
            item.labels.insert("FeatureGates".into(), r.feature_gates.clone());
        }
    }
    items
}

pub fn bench(args: &BenchArgs) -> Result<(), String> {
    let workloads = select(&args.only)?;
    if !(args.scale > 0.0 && args.scale.is_finite()) {
        return Err(format!("--scale must be a positive number, not {}", args.scale));
    }
    if args.child {
        let [w] = workloads.as_slice() else {
            return Err("--child runs exactly one workload (--only NAME)".into());
        };
        let r = run_one(*w, args.nodes as usize, args.scale, args.seed, !args.no_probe, args.gates)?;
        println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let mut results = Vec::new();
    let mut bar =
        Progress::stderr(false, workloads.len() as u64, "{spinner} bench [{bar:30}] {pos}/{len} workloads: {msg}");
    for w in workloads {
        bar.set_message(w.upstream_name());
        bar.note(&format!("ksched bench: {} on {} nodes ...", w.upstream_name(), args.nodes));
        let r = spawn_child(w, args.nodes as usize, args.scale, args.seed, false, args.gates)?;
        bar.note(&format!(
            "  {:.0} pods/s, p99 attempt {:.3} ms, {:.1}× the probe, {:.2}× the scoring probe",
            r.throughput.average,
            r.attempt_latency_ms.p99,
            r.probe_ratio.unwrap_or(f64::NAN),
            r.scoring_probe_ratio.unwrap_or(f64::NAN)
        ));
        bar.inc(1);
        results.push(r);
    }
    bar.finish();
    let items = DataItems { version: "v1".into(), data_items: results.iter().flat_map(data_items).collect() };
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let stem = args.out.join(format!("bench-{}nodes", args.nodes));
    let json = stem.with_extension("json");
    let md = stem.with_extension("md");
    let text = serde_json::to_string_pretty(&items).map_err(|e| e.to_string())?;
    std::fs::write(&json, text + "\n").map_err(|e| format!("{}: {e}", json.display()))?;
    let table = markdown(&results, args);
    std::fs::write(&md, &table).map_err(|e| format!("{}: {e}", md.display()))?;
    print!("{table}");
    eprintln!("ksched bench: wrote {} and {}", json.display(), md.display());
    let bad: Vec<&str> = results.iter().filter(|r| r.invariant_violations > 0).map(|r| r.workload.as_str()).collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("cache invariant violations in {}", bad.join(", ")))
    }
}

/// Runs `ksched bench --child` of this binary for one workload, under `gates`, and parses its
/// result.
pub fn spawn_child(
    w: Workload,
    nodes: usize,
    scale: f64,
    seed: u64,
    no_probe: bool,
    gates: FeatureGates,
) -> Result<WorkloadResult, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the ksched binary: {e}"))?;
    spawn_child_of(&Child { exe: &exe, wrapper: &[], env: &[], gates }, w, nodes, scale, seed, no_probe)
}

/// Which `ksched` build runs a child, how: `wrapper` (e.g. valgrind and its options) goes in
/// front of `exe`, `env` is set for the child only (`ksched gate --candidate-env`).
pub struct Child<'a> {
    pub exe: &'a std::path::Path,
    pub wrapper: &'a [String],
    pub env: &'a [(String, String)],
    /// `--feature-gates` the child runs under.
    pub gates: FeatureGates,
}

impl Child<'_> {
    /// The command that runs `exe` with `args`, wrapped, with the child's environment.
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        let mut cmd = match self.wrapper.split_first() {
            Some((prog, rest)) => {
                let mut c = Command::new(prog);
                c.args(rest).arg(self.exe);
                c
            }
            None => Command::new(self.exe),
        };
        cmd.args(args).envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }
}

/// `ksched bench --child` of `child`'s build for one workload, parsed.
pub fn spawn_child_of(
    child: &Child,
    w: Workload,
    nodes: usize,
    scale: f64,
    seed: u64,
    no_probe: bool,
) -> Result<WorkloadResult, String> {
    let mut cmd = child.command::<&str>(&[]);
    cmd.args(["bench", "--child", "--only", &w.cli_name()]).args([
        "--nodes",
        &nodes.to_string(),
        "--scale",
        &scale.to_string(),
        "--seed",
        &seed.to_string(),
    ]);
    if no_probe {
        cmd.arg("--no-probe");
    }
    cmd.args(crate::feature_gates::child_args(&child.gates));
    let line = json_line(&mut cmd, w.upstream_name())?;
    serde_json::from_str(&line).map_err(|e| format!("{}: child printed no result ({e}): {line}", w.upstream_name()))
}

/// Runs a child and returns the last line of its stdout that starts a JSON object; a child
/// that fails is an error carrying the tail of its stderr, prefixed with `what`.
pub fn json_line(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        return Err(format!(
            "{what}: child run failed ({}):\n{}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    Ok(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or("").to_string())
}

/// One workload in this process: warm-up, probe, measured phase.
pub fn run_one(
    w: Workload,
    nodes: usize,
    scale: f64,
    seed: u64,
    with_probe: bool,
    gates: FeatureGates,
) -> Result<WorkloadResult, String> {
    let slowdown = slowdown_from_env();
    let (warmup_pods, measured_pods) = counts(w, nodes, scale);
    let cache = Arc::new(Cache::upstream());
    for i in 0..nodes {
        cache.add_node(w.node(i)).map_err(|e| e.to_string())?;
    }
    let mut profile = crate::feature_gates::default_profile(gates);
    profile.parallelism = 1;
    let sampled_nodes = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, nodes);
    let mut sim = Simulation::new(cache.clone(), profile, crate::feature_gates::queue_config(gates), seed);
    for i in 0..warmup_pods {
        sim.cluster.create_pod(w.pod(&format!("warmup-{i}"), false)).map_err(|e| e.to_string())?;
    }
    sim.drain(|_, _| {});

    // The scoring probe runs on the warmed-up cluster before the measured run and on the
    // cluster after it, and the faster is kept: see `scoring_ns_per_pod`. (No snapshot is
    // held across the run, so the run's peak memory is its own. A fuller cluster only makes
    // the probe visit more nodes, never fewer.)
    let scoring_probe = |snapshot: &ksched_engine::snapshot::Snapshot| {
        probe::scoring_ns_per_pod(snapshot, probe::ProbePod::of(&w.pod("probe", true)), sampled_nodes, measured_pods)
    };
    let probe_ns_per_pod = with_probe.then(|| {
        let snapshot = cache.update_snapshot();
        let request = w.pod("probe", true).requests().clone();
        (probe::ns_per_pod(&snapshot, &request, sampled_nodes, measured_pods), scoring_probe(&snapshot))
    });
    let scoring_before = probe_ns_per_pod.map(|(_, s)| s);
    let probe_ns_per_pod = probe_ns_per_pod.map(|(p, _)| p);
    // The scoring probe again, in bursts between segments of the measured run (20 of them,
    // of 500 attempts at least: long enough that each side's cold start after the other is
    // noise), so each segment meets the probe in the same speed of the host.
    let bursts = with_probe.then(|| {
        let pod = probe::ProbePod::of(&w.pod("probe", true));
        probe::ProbeBursts::new(&cache.update_snapshot(), pod, sampled_nodes, (measured_pods / 20).max(500))
    });

    for i in 0..measured_pods {
        sim.cluster.create_pod(w.pod(&format!("pod-{i}"), true)).map_err(|e| e.to_string())?;
    }
    let mut latency = AttemptLatency::default();
    let mut counts = Counts::default();
    let mut churn = w.churn();
    let start = Instant::now();
    let mut windows = Windows { wall: WallThroughput::start(), bursts };
    let cpu_start = probe::measured_cpu_ns(probe::CpuOf::Thread);
    drive(&mut sim, &mut churn, slowdown, &mut [&mut latency, &mut windows, &mut counts])?;
    windows.end();
    let hist = latency.0;
    let Counts { scheduled, attempts, unschedulable, .. } = counts;
    let Windows { wall: windows, bursts } = windows;
    let (paused_cpu, paused_wall) = bursts.as_ref().map_or((0, Duration::ZERO), |b| (b.paused_cpu_ns, b.paused_wall));
    let elapsed = start.elapsed().saturating_sub(paused_wall);
    let cpu_ns = probe::measured_cpu_ns(probe::CpuOf::Thread).saturating_sub(cpu_start).saturating_sub(paused_cpu);
    let cpu_ns_per_pod = cpu_ns as f64 / measured_pods as f64;
    let (throughput, _) = windows.finish();
    let peak_rss_bytes = peak_rss();
    let scoring_probe_ns_per_pod = scoring_before.map(|a| a.min(scoring_probe(&cache.update_snapshot())));
    let ms = |v: u64| v as f64 / 1e6;
    let attempt_latency_ms = Latency {
        average: hist.mean() / 1e6,
        p50: ms(hist.value_at_quantile(0.5)),
        p90: ms(hist.value_at_quantile(0.9)),
        p95: ms(hist.value_at_quantile(0.95)),
        p99: ms(hist.value_at_quantile(0.99)),
        max: ms(hist.max()),
    };
    let mut violations = cache.check_invariants();
    violations.extend(sim.scheduler.check_score_memos().into_iter().map(|m| format!("kept scores: {m}")));
    for v in violations.iter().take(10) {
        eprintln!("invariant violation: {v}");
    }
    let ns_per_pod = elapsed.as_nanos() as f64 / measured_pods as f64;
    Ok(WorkloadResult {
        workload: w.upstream_name().into(),
        nodes,
        warmup_pods,
        measured_pods,
        scheduled,
        attempts,
        unschedulable_attempts: unschedulable,
        churn_steps: churn.steps(),
        seconds: elapsed.as_secs_f64(),
        throughput,
        attempt_latency_ms,
        peak_rss_bytes,
        sampled_nodes,
        probe_ns_per_pod,
        ns_per_pod,
        cpu_ns_per_pod,
        probe_ratio: probe_ns_per_pod.filter(|p| *p > 0.0).map(|p| cpu_ns_per_pod / p),
        scoring_probe_ns_per_pod,
        scoring_probe_ratio: scoring_probe_ns_per_pod.filter(|p| *p > 0.0).map(|p| cpu_ns_per_pod / p),
        interleaved_probe: bursts.as_ref().and_then(|b| {
            let probe_ns_per_pod = b.probe_ns_per_pick().filter(|p| *p > 0.0)?;
            Some(InterleavedProbe {
                bursts: b.bursts,
                picks: b.picks,
                run_ns_per_pod: cpu_ns_per_pod,
                probe_ns_per_pod,
                ratio: cpu_ns_per_pod / probe_ns_per_pod,
            })
        }),
        invariant_violations: violations.len(),
        feature_gates: gates.to_flag(),
    })
}

fn markdown(results: &[WorkloadResult], args: &BenchArgs) -> String {
    let gates: String = crate::feature_gates::child_args(&args.gates).iter().map(|a| a.clone() + " ").collect();
    let mut s = format!(
        "ksched bench --nodes {} --scale {} {gates}(seed {}, parallelism 1, adaptive sampling)\n\n",
        args.nodes, args.scale, args.seed
    );
    s += "| workload | pods (warm-up + measured) | scheduled | pods/s avg | windows (p50 / p90 / p99) | attempt p50 | p90 | p99 | max | peak RSS | µs/pod (wall) | CPU µs/pod: run / probe (nodes read) | × probe | CPU µs/pod: scoring probe | × scoring probe | CPU µs/pod: run / scoring probe, interleaved (bursts) | × scoring probe, interleaved |\n";
    s += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for r in results {
        let t = &r.throughput;
        let l = &r.attempt_latency_ms;
        let windows = if t.partial {
            format!("1 partial ({:.2} s)", r.seconds)
        } else {
            format!("{} ({:.0} / {:.0} / {:.0})", t.windows, t.p50, t.p90, t.p99)
        };
        let rss = r.peak_rss_bytes.map(|b| format!("{:.0} MiB", b as f64 / 1048576.0)).unwrap_or_else(|| "?".into());
        let probe = r
            .probe_ns_per_pod
            .map(|p| format!("{:.1} / {:.2} ({})", r.cpu_ns_per_pod / 1000.0, p / 1000.0, r.sampled_nodes))
            .unwrap_or_default();
        let ratio = r.probe_ratio.map(|x| format!("**{x:.0}×**")).unwrap_or_default();
        let scoring = r.scoring_probe_ns_per_pod.map(|p| format!("{:.2}", p / 1000.0)).unwrap_or_default();
        let scoring_ratio = r.scoring_probe_ratio.map(|x| format!("**{x:.2}×**")).unwrap_or_default();
        let (interleaved, interleaved_ratio) = r.interleaved_probe.as_ref().map_or_else(Default::default, |i| {
            (
                format!("{:.2} / {:.2} ({})", i.run_ns_per_pod / 1000.0, i.probe_ns_per_pod / 1000.0, i.bursts),
                format!("**{:.2}×**", i.ratio),
            )
        });
        s += &format!(
            "| {} | {} + {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} |\n",
            r.workload,
            r.warmup_pods,
            r.measured_pods,
            r.scheduled,
            t.average,
            windows,
            fmt_ms(l.p50),
            fmt_ms(l.p90),
            fmt_ms(l.p99),
            fmt_ms(l.max),
            rss,
            r.ns_per_pod / 1000.0,
            probe,
            ratio,
            scoring,
            scoring_ratio,
            interleaved,
            interleaved_ratio
        );
    }
    s
}

fn fmt_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0} µs", ms * 1000.0)
    } else {
        format!("{ms:.2} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_scale_with_nodes_and_scale() {
        let cases = [
            ("basic at 5000", Workload::Basic, 5000, 1.0, (1000, 10000)),
            ("basic at 500", Workload::Basic, 500, 1.0, (100, 1000)),
            ("basic at 20000", Workload::Basic, 20000, 1.0, (4000, 40000)),
            ("basic at 500, scale 0.1", Workload::Basic, 500, 0.1, (10, 100)),
            ("mixed churn has no warm-up", Workload::MixedChurn, 500, 1.0, (0, 1000)),
            ("at least one measured pod", Workload::PodAntiAffinity, 1, 0.01, (0, 1)),
            ("preemption: one preemptor per node", Workload::Preemption, 500, 1.0, (2000, 500)),
            ("preemption: scale above 1 is clamped", Workload::Preemption, 500, 3.0, (2000, 500)),
            ("preemption: scale 0.2", Workload::Preemption, 500, 0.2, (2000, 100)),
        ];
        for (name, w, nodes, scale, want) in cases {
            assert_eq!(counts(w, nodes, scale), want, "{name}");
        }
    }

    #[test]
    fn select_names_workloads_in_suite_order_or_fails_clearly() {
        assert_eq!(select(&[]).unwrap().len(), 10);
        let two = select(&["preemption".into(), "SchedulingBasic".into(), "basic".into()]).unwrap();
        assert_eq!(two, vec![Workload::Preemption, Workload::Basic]);
        let err = select(&["nope".into()]).unwrap_err();
        assert!(err.contains("unknown workload \"nope\"") && err.contains("pod-affinity"), "{err}");
    }

    #[test]
    fn run_one_small_basic_schedules_every_pod_and_reports_the_probe() {
        let r = run_one(Workload::Basic, 50, 1.0, 1, true, Default::default()).unwrap();
        assert_eq!((r.warmup_pods, r.measured_pods, r.scheduled), (10, 100, 100));
        assert_eq!(r.sampled_nodes, 50);
        assert!(r.probe_ratio.is_some_and(|x| x > 0.0));
        assert!(r.scoring_probe_ratio.is_some_and(|x| x > 0.0));
        // 100 measured attempts: one segment (of 500 at least), closed by the run's end.
        let i = r.interleaved_probe.as_ref().expect("the probe ran between segments");
        assert_eq!((i.bursts, i.picks), (1, 100));
        assert!(i.ratio > 0.0 && i.run_ns_per_pod > 0.0, "{i:?}");
        assert_eq!(r.invariant_violations, 0);
        let items = data_items(&r);
        let metrics: Vec<&str> = items.iter().filter_map(|i| i.label("Metric")).collect();
        for metric in ["SchedulingThroughput", "LimitProbe", "ScoringProbe", "ScoringProbeInterleaved"] {
            assert!(metrics.contains(&metric), "{metric} missing from {metrics:?}");
        }
        assert!(items.iter().all(|i| i.label("Name") == Some("SchedulingBasic/50Nodes")));
    }
}
