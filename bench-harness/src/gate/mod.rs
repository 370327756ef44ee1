//! `ksched gate`: a scheduling-cost regression gate that survives machine noise.
//!
//! Two metrics per gated workload, each run at a reduced size in child processes of this
//! binary (`ksched bench --child`):
//!
//! * **instructions per measured pod**, counted by `valgrind --tool=callgrind` with collection
//!   switched on only inside `synth::drive` (the measured phase: scheduling cycles, binding and
//!   the workload's churn; setup and warm-up are not counted). Instruction counts repeat
//!   exactly for the same binary and input whatever else the machine is doing, so this is the
//!   primary metric. They do depend on the compiler and its flags, so the baseline records the
//!   toolchain, and a baseline from another toolchain is reported, not gated.
//! * **time per pod ÷ the limit probe's**, the median of `--repetitions` runs interleaved across
//!   workloads (run 1 of every workload, then run 2, ...), so a burst of load on a shared
//!   machine hits every workload alike. Both sides of the ratio are measured in the same
//!   process on the same cluster, so it travels between machines far better than seconds do.
//!
//! Each metric's median is compared with the baseline's; a rise beyond its tolerance is a
//! regression, and the command exits 1 with a table of metric, baseline, now, change and
//! tolerance. `--update-baseline` writes the medians as the new baseline instead.
//!
//! **Paired mode** (`--against BINARY` / `--against-ref GITREF`, paired.rs) compares two
//! builds run side by side instead of a baseline recorded at another time (stats.rs decides);
//! **scenarios** (`--workload FILE [--config FILE]`, scenario.rs) gate a user's own workload
//! file or manifests in either mode (against a baseline file, a scenario's time metric is its
//! CPU time per pod: a scenario has no limit probe).

mod against_ref;
mod paired;
pub mod scenario;
pub mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::bench::{select, spawn_child, spawn_child_of, DataItem};
use crate::format::Format;
use paired::{PairedOptions, Side, Unit};
use scenario::ScenarioSpec;

const INSTRUCTIONS: &str = "InstructionsPerPod";
const RATIO: &str = "TimePerPodOverProbe";
/// A row's verdict when it rose beyond its tolerance.
const REGRESSION: &str = "REGRESSION";

/// callgrind collects only inside this function (and what it calls).
const TOGGLE: &str = "*synth::drive*";

/// The suite's baseline, when `--baseline` is not given.
const DEFAULT_BASELINE: &str = "perf/baseline.json";

#[derive(Args, Debug, Clone)]
pub struct GateArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    /// The baseline: scheduler_perf dataItems JSON, written by --update-baseline. Default:
    /// perf/baseline.json (the built-in suite's); required with --workload.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Allowed rise of instructions per pod (and, in paired mode, of time per pod): `10%` or
    /// `0.1`.
    #[arg(long, default_value = "10%", value_parser = parse_tolerance)]
    pub tolerance: f64,
    /// Paired mode: allowed rise of time per pod (default: --tolerance). A baseline file's
    /// time is reported, not gated.
    #[arg(long, value_parser = parse_tolerance)]
    pub time_tolerance: Option<f64>,
    /// Measure and write the baseline instead of comparing with it.
    #[arg(long, conflicts_with_all = ["tolerance", "time_tolerance"])]
    pub update_baseline: bool,
    /// Cluster size of the gated built-in workloads. Default: the baseline's (500 for a new
    /// baseline and in paired mode).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub nodes: Option<u32>,
    /// Pod-count multiplier of the gated built-in workloads (see `ksched bench`). Default:
    /// the baseline's (2 for a new baseline and in paired mode).
    #[arg(long)]
    pub scale: Option<f64>,
    /// Built-in workloads to gate, comma-separated. Default: the baseline's (all for a new
    /// baseline and in paired mode).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// With a baseline file: interleaved repetitions of the time metric per workload, which is
    /// reported, not gated (default 3).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repetitions: Option<u32>,
    /// callgrind runs per workload (counts repeat, so 1 is normally enough).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub callgrind_runs: u32,
    /// Skip the instruction counts (no valgrind needed).
    #[arg(long, conflicts_with_all = ["callgrind_runs", "valgrind", "no_time"])]
    pub no_callgrind: bool,
    /// Skip the time metric.
    #[arg(long, conflicts_with_all = ["repetitions", "time_tolerance", "rounds", "confidence", "resamples"])]
    pub no_time: bool,
    /// The valgrind to run.
    #[arg(long, default_value = "valgrind")]
    pub valgrind: String,
    /// Paired mode: compare this build (the candidate) with another `ksched` binary (the
    /// baseline), run interleaved on the same workloads.
    #[arg(long, value_name = "BINARY", conflicts_with = "against_ref")]
    pub against: Option<PathBuf>,
    /// Paired mode: build GITREF (`cargo build --release` in a temporary git worktree under
    /// target/, incremental in target/gate-against) and compare with it.
    #[arg(long, value_name = "GITREF")]
    pub against_ref: Option<String>,
    /// Paired mode: rounds (each runs every workload once per build, in a drawn order)
    /// (default 31).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub rounds: Option<u32>,
    /// Paired mode: confidence of the median ratio's bootstrap interval (default 0.95).
    #[arg(long, value_parser = parse_confidence)]
    pub confidence: Option<f64>,
    /// Paired mode: bootstrap resamples (default 2000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub resamples: Option<u64>,
    /// Paired mode: set K=V in the candidate's children only (repeatable), e.g.
    /// KSCHED_DEMO_SLOWDOWN=200000 to see the gate fail.
    #[arg(long, value_name = "K=V", value_parser = parse_env)]
    pub candidate_env: Vec<(String, String)>,
    /// Paired mode: set K=V in the baseline's children only (repeatable).
    #[arg(long, value_name = "K=V", value_parser = parse_env)]
    pub baseline_env: Vec<(String, String)>,
    /// Gate a scenario of your own instead of the built-in workloads: an upstream
    /// scheduler_perf workload file, or Kubernetes manifests (repeat for several files).
    #[arg(long, value_name = "FILE")]
    pub workload: Vec<PathBuf>,
    /// With --workload: a KubeSchedulerConfiguration to schedule with (instead of a workload
    /// file's schedulerConfigPath; for manifests, instead of the default profile).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With a --workload workload file: run only this test case.
    #[arg(long, value_name = "NAME")]
    pub test: Option<String>,
    /// With a --workload workload file: run only workloads of this name.
    #[arg(long, value_name = "NAME")]
    pub workload_name: Option<String>,
    /// With a --workload workload file: upstream's label filter (repeatable or
    /// comma-separated): a label the workload must have (`short`) or must not (`-performance`).
    #[arg(long = "label", value_name = "LABEL", value_delimiter = ',', allow_hyphen_values = true)]
    pub labels: Vec<String>,
    /// With --workload: a field of the scenario's nodes and pods that changes upstream's
    /// decision and that ksched does not model (warned about otherwise), or an object of a kind
    /// ksched does not model in manifests (skipped otherwise), is an error.
    #[arg(long)]
    pub strict: bool,
    /// Seed of the workloads' RNG (the same on both sides), of each round's
    /// order and of the bootstrap.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json]), default_value = "text")]
    pub format: Format,
    /// Run the --workload scenario in this process and print its measurements as JSON (what
    /// the gate's children do).
    #[arg(long, hide = true)]
    pub child: bool,
}

/// The baseline file: scheduler_perf's `{"version", "dataItems"}` plus how it was measured.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct GateFile {
    pub version: String,
    #[serde(rename = "dataItems")]
    pub data_items: Vec<DataItem>,
    pub ksched: GateMeta,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct GateMeta {
    pub nodes: u32,
    pub scale: f64,
    pub seed: u64,
    /// CLI names of the gated workloads.
    pub workloads: Vec<String>,
    /// What instruction counts depend on: compiler, build settings, valgrind.
    pub toolchain: BTreeMap<String, String>,
    /// A user's scenario (`--workload`), when the baseline is of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<ScenarioSpec>,
}

/// Parses `10%`, `2.5%` or `0.1`.
pub fn parse_tolerance(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{s:?} is not a tolerance (write 10% or 0.1)"))?;
    if !(0.0..=10.0).contains(&v) || (!t.ends_with('%') && v > 1.0) {
        return Err(format!("{s:?} is out of range (write 10% or 0.1)"));
    }
    Ok(v)
}

/// This build's toolchain (from build.rs) and the valgrind that counts.
fn toolchain(valgrind: Option<&str>) -> BTreeMap<String, String> {
    let mut t: BTreeMap<String, String> = [
        ("rustc", env!("KSCHED_RUSTC_VERSION")),
        ("profile", env!("KSCHED_BUILD_PROFILE")),
        ("opt_level", env!("KSCHED_BUILD_OPT_LEVEL")),
        ("debug", env!("KSCHED_BUILD_DEBUG")),
        ("target", env!("KSCHED_BUILD_TARGET")),
        ("rustflags", env!("KSCHED_BUILD_RUSTFLAGS")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    if let Some(v) = valgrind {
        t.insert("valgrind".into(), v.into());
    }
    t
}

fn valgrind_version(valgrind: &str) -> Result<String, String> {
    let out = Command::new(valgrind).arg("--version").output().map_err(|e| {
        format!("cannot run {valgrind:?} ({e}): install valgrind (apt-get install valgrind) or pass --no-callgrind")
    })?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Parses `0.95` or `95%`.
fn parse_confidence(s: &str) -> Result<f64, String> {
    let v = parse_tolerance(s).map_err(|_| format!("{s:?} is not a confidence (write 0.95 or 95%)"))?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("{s:?}: the confidence must lie strictly between 0 and 1"))
    }
}

/// Parses `K=V` (`--candidate-env`, `--baseline-env`).
fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains(char::is_whitespace) => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not K=V")),
    }
}

impl GateArgs {
    fn paired(&self) -> bool {
        self.against.is_some() || self.against_ref.is_some()
    }

    fn scenario(&self) -> Option<ScenarioSpec> {
        (!self.workload.is_empty()).then(|| ScenarioSpec {
            files: self.workload.clone(),
            config: self.config.clone(),
            test: self.test.clone(),
            workload_name: self.workload_name.clone(),
            labels: self.labels.clone(),
            gates: self.gates,
            strict: self.strict,
        })
    }

    /// Flags that do not apply to the mode asked for are errors, not silently ignored.
    fn check_flags(&self) -> Result<(), String> {
        let mut wrong: Vec<String> = Vec::new();
        let mut flag = |set: bool, name: &str, why: &str| {
            if set {
                wrong.push(format!("{name} {why}"));
            }
        };
        let paired = self.paired();
        let scenario = !self.workload.is_empty();
        if paired {
            let why = "applies to a baseline file, not to the paired mode (--against/--against-ref)";
            flag(self.baseline.is_some(), "--baseline", why);
            flag(self.update_baseline, "--update-baseline", why);
            flag(self.repetitions.is_some(), "--repetitions", "is the baseline mode's; the paired mode runs --rounds");
        } else {
            let why = "applies to the paired mode only (--against BINARY or --against-ref GITREF)";
            flag(self.rounds.is_some(), "--rounds", why);
            flag(self.confidence.is_some(), "--confidence", why);
            flag(self.resamples.is_some(), "--resamples", why);
            flag(!self.candidate_env.is_empty(), "--candidate-env", why);
            flag(!self.baseline_env.is_empty(), "--baseline-env", why);
            flag(
                self.time_tolerance.is_some() && !self.update_baseline,
                "--time-tolerance",
                "applies to the paired mode only: against a baseline file, time is reported, not gated (judge time with --against-ref)",
            );
        }
        if scenario {
            let why = "selects built-in workloads; a --workload scenario sets its own cluster and pods";
            flag(!self.only.is_empty(), "--only", why);
            flag(self.nodes.is_some(), "--nodes", why);
            flag(self.scale.is_some(), "--scale", why);
            flag(
                !paired && self.baseline.is_none(),
                "--workload without --against/--against-ref",
                "needs the scenario's own --baseline FILE (perf/baseline.json is the built-in suite's)",
            );
        } else {
            let why = "applies to a --workload scenario";
            flag(self.config.is_some(), "--config", why);
            flag(self.test.is_some(), "--test", why);
            flag(self.workload_name.is_some(), "--workload-name", why);
            flag(!self.labels.is_empty(), "--label", why);
            flag(self.strict, "--strict", why);
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join("; "))
        }
    }
}

/// Exit status: 0 pass (or baseline written), 1 regression.
pub fn gate(args: &GateArgs) -> Result<bool, String> {
    if args.child {
        let spec = args.scenario().ok_or("--child runs a --workload scenario")?;
        let report = scenario::run_here(&spec, args.seed)?;
        println!("{}", serde_json::to_string(&report).map_err(|e| e.to_string())?);
        return Ok(true);
    }
    args.check_flags()?;
    if env!("KSCHED_BUILD_OPT_LEVEL") == "0" && args.format == Format::Text {
        eprintln!("ksched gate: warning: this is an unoptimized build; gate a --release build");
    }
    if args.paired() {
        gate_paired(args)
    } else {
        gate_baseline(args)
    }
}

fn this_build(env: &[(String, String)], gates: ksched_engine::features::FeatureGates) -> Result<Side, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the ksched binary: {e}"))?;
    Ok(Side { label: "candidate", origin: exe.display().to_string(), exe, env: env.to_vec(), gates })
}

fn gate_paired(args: &GateArgs) -> Result<bool, String> {
    let baseline = match (&args.against, &args.against_ref) {
        (Some(p), _) => {
            if !p.is_file() {
                return Err(format!("--against {}: no such file (the path of another ksched binary)", p.display()));
            }
            let exe = std::fs::canonicalize(p).map_err(|e| format!("--against {}: {e}", p.display()))?;
            Side {
                label: "baseline",
                origin: p.display().to_string(),
                exe,
                env: args.baseline_env.clone(),
                gates: args.gates,
            }
        }
        (None, Some(r)) => {
            let built = against_ref::build(r)?;
            let origin = format!("{r} ({})", &built.commit[..built.commit.len().min(12)]);
            Side { label: "baseline", origin, exe: built.exe, env: args.baseline_env.clone(), gates: args.gates }
        }
        (None, None) => return Err("paired mode needs --against or --against-ref".into()),
    };
    let candidate = this_build(&args.candidate_env, args.gates)?;
    let units: Vec<Unit> = match args.scenario() {
        Some(spec) => vec![Unit::Scenario(spec)],
        None => {
            let (nodes, scale) = (args.nodes.unwrap_or(500), args.scale.unwrap_or(2.0));
            check_scale(scale)?;
            select(&args.only)?.into_iter().map(|workload| Unit::Builtin { workload, nodes, scale }).collect()
        }
    };
    let valgrind = if args.no_callgrind {
        None
    } else {
        valgrind_version(&args.valgrind)?;
        Some(args.valgrind.clone())
    };
    let opts = PairedOptions {
        rounds: args.rounds.unwrap_or(31),
        tolerance: args.tolerance,
        time_tolerance: args.time_tolerance.unwrap_or(args.tolerance),
        bootstrap: stats::Bootstrap {
            resamples: args.resamples.unwrap_or(2000) as usize,
            confidence: args.confidence.unwrap_or(0.95),
            seed: args.seed,
        },
        seed: args.seed,
        valgrind,
        time: !args.no_time,
        progress: args.format == Format::Text,
    };
    let report = paired::run(&units, candidate, baseline, &opts)?;
    match args.format {
        Format::Json => print!("{}", crate::format::document(&report, args.format)?),
        _ => print!("{}", paired::render(&report)),
    }
    Ok(report.pass)
}

fn check_scale(scale: f64) -> Result<(), String> {
    if scale > 0.0 && scale.is_finite() {
        Ok(())
    } else {
        Err(format!("--scale must be a positive number, not {scale}"))
    }
}

fn gate_baseline(args: &GateArgs) -> Result<bool, String> {
    let path = args.baseline.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_BASELINE));
    let text = args.format == Format::Text;
    let old = if args.update_baseline && !path.exists() { None } else { Some(load(&path)?) };
    let scenario = args.scenario();
    if let (Some(o), false) = (&old, args.update_baseline) {
        if o.ksched.scenario != scenario {
            let show = |s: &Option<ScenarioSpec>| match s {
                Some(s) => format!("scenario {}", serde_json::to_string(s).unwrap_or_default()),
                None => "the built-in workloads".into(),
            };
            return Err(format!(
                "{} was recorded for {}, not {} (compare like with like, or --update-baseline)",
                path.display(),
                show(&o.ksched.scenario),
                show(&scenario)
            ));
        }
    }
    let from_old = |f: fn(&GateMeta) -> f64, default: f64| old.as_ref().map(|o| f(&o.ksched)).unwrap_or(default);
    let nodes = args.nodes.unwrap_or(from_old(|m| m.nodes as f64, 500.0) as u32);
    let scale = args.scale.unwrap_or(from_old(|m| m.scale, 2.0));
    let seed = old.as_ref().map(|o| o.ksched.seed).unwrap_or(args.seed);
    let units: Vec<Unit> = match &scenario {
        Some(spec) => vec![Unit::Scenario(spec.clone())],
        None => {
            check_scale(scale)?;
            let names: Vec<String> = match (&args.only, &old) {
                (only, _) if !only.is_empty() => only.clone(),
                (_, Some(o)) => o.ksched.workloads.clone(),
                (_, None) => Vec::new(),
            };
            select(&names)?.into_iter().map(|workload| Unit::Builtin { workload, nodes, scale }).collect()
        }
    };
    if let (false, Some(o), None) = (args.update_baseline, &old, &scenario) {
        if o.ksched.nodes != nodes || o.ksched.scale != scale {
            return Err(format!(
                "the baseline was measured at --nodes {} --scale {}; comparing a run at --nodes {nodes} --scale {scale} \
                 would be meaningless (drop the flags, or --update-baseline)",
                o.ksched.nodes, o.ksched.scale
            ));
        }
    }
    let valgrind = if args.no_callgrind { None } else { Some(valgrind_version(&args.valgrind)?) };
    let tc = toolchain(valgrind.as_deref());
    let me = this_build(&[], args.gates)?;
    if text {
        let names: Vec<String> = units.iter().map(Unit::name).collect();
        eprintln!("ksched gate: {} workloads against {}: {}", names.len(), path.display(), names.join(", "));
    }

    let mut items = Vec::new();
    if !args.no_callgrind {
        for u in &units {
            let mut runs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for _ in 0..args.callgrind_runs {
                for (name, v) in instructions_per_pod(&args.valgrind, &me, u, seed)? {
                    runs.entry(name).or_default().push(v);
                }
            }
            for (name, runs) in runs {
                if text {
                    eprintln!("  {:<46} {:>12.0} instructions/pod", name, median(&runs));
                }
                items.push(summary_item(INSTRUCTIONS, &name, &u.label(), "instructions/pod", &runs));
            }
        }
    }
    let reps = args.repetitions.unwrap_or(3);
    if !args.no_time {
        items.extend(measure_times(&me, &units, seed, reps, text)?);
    }
    let now = GateFile {
        version: "v1".into(),
        data_items: items,
        ksched: GateMeta {
            nodes: if scenario.is_some() { 0 } else { nodes },
            scale: if scenario.is_some() { 0.0 } else { scale },
            seed,
            workloads: units.iter().map(Unit::label).collect(),
            toolchain: tc,
            scenario,
        },
    };
    if args.update_baseline {
        let json = serde_json::to_string_pretty(&now).map_err(|e| e.to_string())? + "\n";
        std::fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
        let report = recorded(&now, &path, args.tolerance);
        match args.format {
            Format::Json => print!("{}", crate::format::document(&report, args.format)?),
            _ => print!("{}", render(&report)),
        }
        return Ok(true);
    }
    let Some(old) = old else { return Err("no baseline".into()) };
    let report = compare(&old, &now, args, &path);
    match args.format {
        Format::Json => print!("{}", crate::format::document(&report, args.format)?),
        _ => print!("{}", render(&report)),
    }
    Ok(report.regressions == 0)
}

/// A time series of the baseline mode: (name, unit label, metric).
type SeriesKey = (String, String, &'static str);

/// One child run's time samples: the probe ratio of a built-in workload, or the CPU time per
/// pod of each of a scenario's measured phases.
fn time_samples(me: &Side, u: &Unit, seed: u64) -> Result<Vec<(String, &'static str, f64)>, String> {
    match u {
        Unit::Builtin { workload, nodes, scale } => {
            let r = spawn_child(*workload, *nodes as usize, *scale, seed, false, me.gates)?;
            let ratio = r.probe_ratio.ok_or_else(|| format!("{}: no probe ratio", workload.upstream_name()))?;
            Ok(vec![(u.name(), RATIO, ratio)])
        }
        Unit::Scenario(spec) => Ok(scenario::spawn(&me.child(&[]), spec, seed)?
            .rows
            .into_iter()
            .map(|r| (r.name, paired::TIME, r.cpu_ns_per_pod))
            .collect()),
    }
}

/// The time metric of `units`, `reps` interleaved repetitions (each repetition runs every
/// unit once), as summary items.
fn measure_times(me: &Side, units: &[Unit], seed: u64, reps: u32, text: bool) -> Result<Vec<DataItem>, String> {
    // (name, unit label, metric) -> samples, in first-seen order.
    let mut series: Vec<(SeriesKey, Vec<f64>)> = Vec::new();
    for rep in 0..reps {
        for u in units {
            for (name, metric, v) in time_samples(me, u, seed)? {
                let key = (name, u.label(), metric);
                match series.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, s)) => s.push(v),
                    None => series.push((key, vec![v])),
                }
            }
        }
        if text {
            eprintln!("  time: repetition {}/{reps} done", rep + 1);
        }
    }
    Ok(series
        .iter()
        .map(|((name, label, metric), runs)| {
            let unit = if *metric == RATIO { "ratio" } else { "ns/pod (CPU)" };
            summary_item(metric, name, label, unit, runs)
        })
        .collect())
}

fn load(path: &Path) -> Result<GateFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e} (write one with `ksched gate --update-baseline`)", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not a ksched gate baseline: {e}", path.display()))
}

fn summary_item(metric: &str, name: &str, workload: &str, unit: &str, runs: &[f64]) -> DataItem {
    let min = runs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut item = DataItem::new(
        metric,
        name,
        unit,
        &[("Median", median(runs)), ("Min", min), ("Max", max), ("Runs", runs.len() as f64)],
    );
    item.labels.insert("Workload".into(), workload.to_string());
    item
}

pub fn median(v: &[f64]) -> f64 {
    stats::median(v)
}

/// Runs one unit under callgrind on `side`'s build and returns the instructions counted in
/// the measured phase per pod, by name (a built-in workload: `synth::drive` per measured
/// pod; a scenario: its scheduling loops per scheduled pod).
fn instructions_per_pod(valgrind: &str, side: &Side, u: &Unit, seed: u64) -> Result<BTreeMap<String, f64>, String> {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("ksched-gate-{}-{}-{n}.callgrind", std::process::id(), side.label));
    let mut wrapper =
        vec![valgrind.to_string(), "--tool=callgrind".into(), format!("--callgrind-out-file={}", out.display())];
    let toggles: &[&str] = match u {
        Unit::Builtin { .. } => &[TOGGLE],
        Unit::Scenario(_) => &scenario::TOGGLES,
    };
    wrapper.extend(toggles.iter().map(|t| format!("--toggle-collect={t}")));
    let child = side.child(&wrapper);
    let pods = match u {
        Unit::Builtin { workload, nodes, scale } => {
            spawn_child_of(&child, *workload, *nodes as usize, *scale, seed, true)?.measured_pods
        }
        Unit::Scenario(spec) => scenario::spawn(&child, spec, seed)?.scheduled,
    };
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()));
    let _ = std::fs::remove_file(&out);
    let name = u.name();
    let total = callgrind_total(&text?).ok_or_else(|| format!("{name}: no totals line in callgrind's output"))?;
    if total == 0 {
        return Err(format!("{name}: callgrind counted 0 instructions inside {}; was it inlined?", toggles.join(", ")));
    }
    Ok(BTreeMap::from([(name, total as f64 / pods.max(1) as f64)]))
}

/// The instruction total of a callgrind output file (`totals:` or `summary:`).
pub fn callgrind_total(text: &str) -> Option<u64> {
    let find = |key: &str| {
        text.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    find("totals:").or_else(|| find("summary:"))
}

#[derive(Serialize)]
struct Row {
    metric: String,
    name: String,
    /// The unit of `baseline` and `now` (`unit_of`).
    unit: &'static str,
    baseline: Option<f64>,
    now: Option<f64>,
    tolerance: f64,
    verdict: &'static str,
}

/// The unit a metric's figures are kept in (the JSON's `unit`).
pub fn unit_of(metric: &str) -> &'static str {
    match metric {
        INSTRUCTIONS => "instructions/pod",
        RATIO => "time per pod ÷ probe time",
        _ => "ns/pod (CPU)",
    }
}

/// A figure as the text tables print it, with its unit: instructions per pod, CPU time in
/// µs per pod, a ratio to the probe; the same in both modes.
pub fn figure(metric: &str, v: Option<f64>) -> String {
    let Some(v) = v.filter(|v| v.is_finite()) else { return "-".into() };
    match metric {
        INSTRUCTIONS => format!("{v:.0} instr/pod"),
        RATIO => format!("{v:.2}× probe"),
        _ => format!("{:.2} µs/pod", v / 1000.0),
    }
}

#[derive(Serialize)]
struct Report {
    mode: &'static str,
    baseline: String,
    rows: Vec<Row>,
    regressions: usize,
    pass: bool,
    notes: Vec<String>,
}

fn compare(old: &GateFile, now: &GateFile, args: &GateArgs, path: &Path) -> Report {
    let mut notes = Vec::new();
    let same_toolchain = toolchain_matches(&old.ksched.toolchain, &now.ksched.toolchain);
    if !same_toolchain && now.data_items.iter().any(|i| i.label("Metric") == Some(INSTRUCTIONS)) {
        let show = |t: &BTreeMap<String, String>| {
            t.iter()
                .filter(|(k, _)| k.as_str() != "valgrind")
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        notes.push(format!(
            "NOTE: the baseline's instruction counts come from another toolchain, so they are shown but NOT gated.\n  \
             baseline: {}\n  this build: {}\n  Re-record the baseline with this toolchain: ksched gate --update-baseline",
            show(&old.ksched.toolchain),
            show(&now.ksched.toolchain)
        ));
    }
    if now.data_items.iter().any(|i| i.label("Metric") != Some(INSTRUCTIONS)) {
        notes.push(
            "NOTE: time per pod is reported here, not gated: a ratio to a baseline recorded at another time moves \
             with the machine's load. Time is judged paired (--against-ref REF or --against BINARY): both builds \
             interleaved, round by round."
                .to_owned(),
        );
    }
    let mut rows = Vec::new();
    let mut regressions = 0;
    let key = |i: &DataItem| (i.label("Metric").unwrap_or("").to_string(), i.label("Name").unwrap_or("").to_string());
    for item in &now.data_items {
        let (metric, name) = key(item);
        let base = old.data_items.iter().find(|b| key(b) == (metric.clone(), name.clone()));
        let tolerance = args.tolerance;
        let now_v = item.data.get("Median").copied();
        let base_v = base.and_then(|b| b.data.get("Median").copied());
        let verdict = match (base_v, now_v) {
            (None, _) => "new, not in baseline",
            (Some(_), None) => "missing",
            (Some(_), Some(_)) if metric != INSTRUCTIONS => "reported, not gated",
            (Some(_), Some(_)) if !same_toolchain => "not gated (toolchain)",
            (Some(b), Some(n)) if b > 0.0 && n > b * (1.0 + tolerance) => {
                regressions += 1;
                REGRESSION
            }
            (Some(_), Some(_)) => "ok",
        };
        rows.push(Row { unit: unit_of(&metric), metric, name, baseline: base_v, now: now_v, tolerance, verdict });
    }
    for b in &old.data_items {
        if !now.data_items.iter().any(|i| key(i) == key(b)) {
            let (metric, name) = key(b);
            rows.push(Row {
                unit: unit_of(&metric),
                metric,
                name,
                baseline: b.data.get("Median").copied(),
                now: None,
                tolerance: args.tolerance,
                verdict: "not measured",
            });
        }
    }
    Report { mode: "baseline", baseline: path.display().to_string(), rows, regressions, pass: regressions == 0, notes }
}

fn toolchain_matches(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> bool {
    let get = |t: &BTreeMap<String, String>, k: &str| t.get(k).cloned().unwrap_or_default();
    ["rustc", "profile", "opt_level", "debug", "target", "rustflags"].iter().all(|k| get(a, k) == get(b, k))
}

fn render(r: &Report) -> String {
    let mut s = String::new();
    for n in &r.notes {
        s += n;
        s += "\n";
    }
    s += &format!(
        "{:<20} {:<46} {:>20} {:>20} {:>9} {:>10}  {}\n",
        "metric", "workload", "baseline", "now", "change", "tolerance", "verdict"
    );
    for row in &r.rows {
        let change = match (row.baseline, row.now) {
            (Some(b), Some(n)) if b > 0.0 => format!("{:+.1}%", (n / b - 1.0) * 100.0),
            _ => "-".into(),
        };
        s += &format!(
            "{:<20} {:<46} {:>20} {:>20} {:>9} {:>9.0}%  {}\n",
            row.metric,
            row.name,
            figure(&row.metric, row.baseline),
            figure(&row.metric, row.now),
            change,
            row.tolerance * 100.0,
            row.verdict
        );
    }
    if r.mode == UPDATE_MODE {
        s += &format!(
            "ksched gate: baseline written to {}: {} figure(s) recorded; nothing was compared or gated\n",
            r.baseline,
            r.rows.len()
        );
    } else {
        s += &verdict_line(r.regressions);
    }
    s
}

/// The report's mode when `--update-baseline` wrote the baseline.
const UPDATE_MODE: &str = "update-baseline";

/// What `--update-baseline` recorded, as a report: the figures, no comparison.
fn recorded(now: &GateFile, path: &Path, tolerance: f64) -> Report {
    let rows = now
        .data_items
        .iter()
        .map(|i| {
            let metric = i.label("Metric").unwrap_or("").to_string();
            Row {
                unit: unit_of(&metric),
                name: i.label("Name").unwrap_or("").to_string(),
                metric,
                baseline: None,
                now: i.data.get("Median").copied(),
                tolerance,
                verdict: "recorded",
            }
        })
        .collect();
    Report {
        mode: UPDATE_MODE,
        baseline: path.display().to_string(),
        rows,
        regressions: 0,
        pass: true,
        notes: Vec::new(),
    }
}

/// The table's last line.
fn verdict_line(regressions: usize) -> String {
    if regressions == 0 {
        "ksched gate: PASS\n".to_string()
    } else {
        format!("ksched gate: FAIL: {regressions} metric(s) regressed beyond tolerance\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(items: &[(&str, &str, f64)], rustc: &str) -> GateFile {
        let mut toolchain = toolchain(None);
        toolchain.insert("rustc".into(), rustc.into());
        GateFile {
            version: "v1".into(),
            data_items: items
                .iter()
                .map(|(m, n, v)| DataItem::new(m, n, "u", &[("Median", *v), ("Min", *v), ("Max", *v), ("Runs", 1.0)]))
                .collect(),
            ksched: GateMeta {
                nodes: 500,
                scale: 0.5,
                seed: 1,
                workloads: vec!["basic".into()],
                toolchain,
                scenario: None,
            },
        }
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        gate: GateArgs,
    }

    fn parse(flags: &[&str]) -> Result<GateArgs, String> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("gate").chain(flags.iter().copied()))
            .map(|c| c.gate)
            .map_err(|e| e.to_string())
    }

    fn args() -> GateArgs {
        parse(&[]).unwrap()
    }

    #[test]
    fn check_flags_rejects_flags_that_do_not_apply() {
        // (flags, Ok or the error's words)
        let cases: [(&[&str], Option<&str>); 15] = [
            (&[], None),
            (&["--against", "k", "--rounds", "5", "--candidate-env", "A=1"], None),
            (&["--against-ref", "main", "--workload", "p.yaml", "--config", "c.yaml"], None),
            (&["--workload", "p.yaml", "--baseline", "mine.json"], None),
            (&["--workload", "p.yaml", "--update-baseline", "--baseline", "mine.json"], None),
            (&["--rounds", "5"], Some("--rounds applies to the paired mode only")),
            (&["--candidate-env", "A=1"], Some("--candidate-env applies to the paired mode only")),
            (&["--against", "k", "--baseline", "b.json"], Some("--baseline applies to a baseline file")),
            (&["--against", "k", "--update-baseline"], Some("--update-baseline applies to a baseline file")),
            (&["--against", "k", "--repetitions", "3"], Some("the paired mode runs --rounds")),
            (&["--against", "k", "--workload", "p.yaml", "--only", "basic"], Some("--only selects built-in")),
            (&["--workload", "p.yaml"], Some("needs the scenario's own --baseline FILE")),
            (&["--config", "c.yaml"], Some("--config applies to a --workload scenario")),
            (&["--strict"], Some("--strict applies to a --workload scenario")),
            (&["--against", "k", "--workload", "p.yaml", "--strict"], None),
        ];
        for (flags, want) in cases {
            let got = parse(flags).and_then(|a| a.check_flags());
            match want {
                None => assert!(got.is_ok(), "{flags:?}: {got:?}"),
                Some(words) => assert!(got.as_ref().is_err_and(|e| e.contains(words)), "{flags:?}: {got:?}"),
            }
        }
        let both = parse(&["--against", "k", "--against-ref", "main"]).unwrap_err();
        assert!(both.contains("cannot be used with"), "{both}");
        assert!(parse(&["--candidate-env", "NOEQUALS"]).unwrap_err().contains("is not K=V"));
        assert!(parse(&["--against", "k", "--confidence", "1.5"]).is_err());
        for flags in [&["--no-callgrind", "--no-time"][..], &["--against", "k", "--no-time", "--rounds", "3"]] {
            assert!(parse(flags).is_err_and(|e| e.contains("cannot be used with")), "{flags:?}");
        }
    }

    #[test]
    fn compare_flags_only_rises_beyond_tolerance() {
        let rustc = env!("KSCHED_RUSTC_VERSION");
        // (name, baseline, now, regressions expected)
        let cases = [
            ("unchanged", 1000.0, 1000.0, 0),
            ("faster", 1000.0, 500.0, 0),
            ("within 10%", 1000.0, 1099.0, 0),
            ("beyond 10%", 1000.0, 1101.0, 1),
        ];
        for (name, base, now, want) in cases {
            let old = file(&[(INSTRUCTIONS, "SchedulingBasic/500Nodes", base)], rustc);
            let new = file(&[(INSTRUCTIONS, "SchedulingBasic/500Nodes", now)], rustc);
            let r = compare(&old, &new, &args(), Path::new("b.json"));
            assert_eq!(r.regressions, want, "{name}");
            let text = render(&r);
            assert_eq!(text.contains("FAIL"), want > 0, "{name}: {text}");
        }
    }

    #[test]
    fn time_against_a_baseline_file_is_reported_never_gated() {
        let rustc = env!("KSCHED_RUSTC_VERSION");
        let old = file(
            &[(RATIO, "SchedulingBasic/500Nodes", 10.0), (INSTRUCTIONS, "SchedulingBasic/500Nodes", 100.0)],
            rustc,
        );
        // (time ratio now, instructions now, regressions)
        for (ratio, instructions, want) in [(10.0, 100.0, 0), (13.2, 100.0, 0), (50.0, 100.0, 0), (10.0, 111.0, 1)] {
            let now = file(
                &[(RATIO, "SchedulingBasic/500Nodes", ratio), (INSTRUCTIONS, "SchedulingBasic/500Nodes", instructions)],
                rustc,
            );
            let r = compare(&old, &now, &args(), Path::new("b.json"));
            assert_eq!(r.regressions, want, "{ratio} {instructions}");
            let time = r.rows.iter().find(|row| row.metric == RATIO).unwrap();
            assert_eq!(time.verdict, "reported, not gated");
            let text = render(&r);
            assert!(text.contains("time per pod is reported here, not gated"), "{text}");
        }
    }

    #[test]
    fn cpu_time_is_in_microseconds_per_pod_in_both_modes_and_update_never_says_pass() {
        let rustc = env!("KSCHED_RUSTC_VERSION");
        let old = file(&[(paired::TIME, "Scenario/x", 52_000.0), (INSTRUCTIONS, "Scenario/x", 33_491.0)], rustc);
        let text = render(&compare(&old, &old, &args(), Path::new("b.json")));
        assert!(text.contains("52.00 µs/pod") && text.contains("33491 instr/pod"), "{text}");
        assert!(text.ends_with("ksched gate: PASS\n"), "{text}");
        // The paired table prints its figures with the same function.
        assert_eq!(figure(paired::TIME, Some(52_000.0)), "52.00 µs/pod");
        let json = serde_json::to_value(compare(&old, &old, &args(), Path::new("b.json"))).unwrap();
        let units: Vec<&str> = json["rows"].as_array().unwrap().iter().map(|r| r["unit"].as_str().unwrap()).collect();
        assert_eq!(units, ["ns/pod (CPU)", "instructions/pod"]);
        // --update-baseline says what it did, never PASS.
        let up = recorded(&old, Path::new("b.json"), 0.1);
        let text = render(&up);
        assert!(!text.contains("PASS") && text.contains("52.00 µs/pod"), "{text}");
        assert!(
            text.ends_with("baseline written to b.json: 2 figure(s) recorded; nothing was compared or gated\n"),
            "{text}"
        );
        assert_eq!(serde_json::to_value(&up).unwrap()["mode"], "update-baseline");
    }

    #[test]
    fn another_toolchain_is_reported_not_gated() {
        let old = file(&[(INSTRUCTIONS, "SchedulingBasic/500Nodes", 1000.0)], "rustc 1.0.0 (old)");
        let new = file(&[(INSTRUCTIONS, "SchedulingBasic/500Nodes", 5000.0)], env!("KSCHED_RUSTC_VERSION"));
        let r = compare(&old, &new, &args(), Path::new("b.json"));
        assert_eq!(r.regressions, 0);
        let text = render(&r);
        assert!(text.contains("another toolchain") && text.contains("rustc 1.0.0 (old)"), "{text}");
        assert!(text.contains("not gated (toolchain)"), "{text}");
    }

    #[test]
    fn parse_tolerance_accepts_percent_and_fraction() {
        let cases = [("10%", Some(0.10)), ("2.5%", Some(0.025)), ("0.1", Some(0.1)), ("10", None), ("x%", None)];
        for (s, want) in cases {
            assert_eq!(parse_tolerance(s).ok(), want, "{s}");
        }
    }

    #[test]
    fn callgrind_total_reads_totals_or_summary() {
        assert_eq!(callgrind_total("events: Ir\nsummary: 123\ntotals: 456\n"), Some(456));
        assert_eq!(callgrind_total("events: Ir\nsummary: 123\n"), Some(123));
        assert_eq!(callgrind_total("events: Ir\n"), None);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
