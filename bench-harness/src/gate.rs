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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::bench::{select, spawn_child, spawn_child_with, DataItem};
use crate::synth::Workload;

const INSTRUCTIONS: &str = "InstructionsPerPod";
const RATIO: &str = "TimePerPodOverProbe";

/// callgrind collects only inside this function (and what it calls).
const TOGGLE: &str = "*synth::drive*";

#[derive(Args, Debug, Clone)]
pub struct GateArgs {
    /// The baseline: scheduler_perf dataItems JSON, written by --update-baseline.
    #[arg(long, default_value = "perf/baseline.json")]
    pub baseline: PathBuf,
    /// Allowed rise of a metric's median over the baseline's: `10%` or `0.1`.
    #[arg(long, default_value = "10%", value_parser = parse_tolerance)]
    pub tolerance: f64,
    /// Allowed rise of the wall-time ratio (time per pod ÷ probe), which is noisier than
    /// instruction counts. Default: the larger of --tolerance and 25%.
    #[arg(long, value_parser = parse_tolerance)]
    pub time_tolerance: Option<f64>,
    /// Measure and write the baseline instead of comparing with it.
    #[arg(long, conflicts_with_all = ["tolerance", "time_tolerance"])]
    pub update_baseline: bool,
    /// Cluster size of the gated runs. Default: the baseline's (500 for a new baseline).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub nodes: Option<u32>,
    /// Pod-count multiplier of the gated runs (see `ksched bench`). Default: the baseline's
    /// (2 for a new baseline).
    #[arg(long)]
    pub scale: Option<f64>,
    /// Workloads to gate, comma-separated. Default: the baseline's (all for a new baseline).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Interleaved repetitions of the wall-time ratio per workload.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repetitions: u32,
    /// callgrind runs per workload (counts repeat, so 1 is normally enough).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub callgrind_runs: u32,
    /// Skip the instruction counts (no valgrind needed).
    #[arg(long, conflicts_with_all = ["callgrind_runs", "valgrind", "no_time"])]
    pub no_callgrind: bool,
    /// Skip the wall-time ratio.
    #[arg(long, conflicts_with_all = ["repetitions", "time_tolerance"])]
    pub no_time: bool,
    /// The valgrind to run.
    #[arg(long, default_value = "valgrind")]
    pub valgrind: String,
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

/// Exit status: 0 pass (or baseline written), 1 regression.
pub fn gate(args: &GateArgs) -> Result<bool, String> {
    let old = if args.update_baseline && !args.baseline.exists() { None } else { Some(load(&args.baseline)?) };
    let from_old = |f: fn(&GateMeta) -> f64, default: f64| old.as_ref().map(|o| f(&o.ksched)).unwrap_or(default);
    let nodes = args.nodes.unwrap_or(from_old(|m| m.nodes as f64, 500.0) as u32);
    let scale = args.scale.unwrap_or(from_old(|m| m.scale, 2.0));
    let seed = old.as_ref().map(|o| o.ksched.seed).unwrap_or(1);
    let names: Vec<String> = match (&args.only, &old) {
        (only, _) if !only.is_empty() => only.clone(),
        (_, Some(o)) => o.ksched.workloads.clone(),
        (_, None) => Vec::new(),
    };
    let workloads = select(&names)?;
    if let (false, Some(o)) = (args.update_baseline, &old) {
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
    if env!("KSCHED_BUILD_OPT_LEVEL") == "0" {
        eprintln!("ksched gate: warning: this is an unoptimized build; gate a --release build");
    }
    eprintln!(
        "ksched gate: {} workloads at {nodes} nodes, scale {scale}: {}",
        workloads.len(),
        workloads.iter().map(|w| w.cli_name()).collect::<Vec<_>>().join(", ")
    );

    let mut items = Vec::new();
    if !args.no_callgrind {
        for &w in &workloads {
            let mut runs = Vec::new();
            for _ in 0..args.callgrind_runs {
                runs.push(instructions_per_pod(&args.valgrind, w, nodes as usize, scale, seed)?);
            }
            eprintln!("  {:<34} {:>12.0} instructions/pod", w.upstream_name(), median(&runs));
            items.push(summary_item(INSTRUCTIONS, w, nodes, "instructions/pod", &runs));
        }
    }
    if !args.no_time {
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); workloads.len()];
        for rep in 0..args.repetitions {
            for (i, &w) in workloads.iter().enumerate() {
                let r = spawn_child(w, nodes as usize, scale, seed, false)?;
                let ratio = r.probe_ratio.ok_or_else(|| format!("{}: no probe ratio", w.upstream_name()))?;
                ratios[i].push(ratio);
            }
            eprintln!("  time ratios: repetition {}/{} done", rep + 1, args.repetitions);
        }
        for (w, runs) in workloads.iter().zip(&ratios) {
            items.push(summary_item(RATIO, *w, nodes, "ratio", runs));
        }
    }
    let now = GateFile {
        version: "v1".into(),
        data_items: items,
        ksched: GateMeta {
            nodes,
            scale,
            seed,
            workloads: workloads.iter().map(|w| w.cli_name()).collect(),
            toolchain: tc,
        },
    };
    if args.update_baseline {
        let text = serde_json::to_string_pretty(&now).map_err(|e| e.to_string())? + "\n";
        std::fs::write(&args.baseline, text).map_err(|e| format!("{}: {e}", args.baseline.display()))?;
        print!("{}", render(&compare(&now, &now, args)));
        println!("ksched gate: baseline written to {}", args.baseline.display());
        return Ok(true);
    }
    let Some(old) = old else { return Err("no baseline".into()) };
    let report = compare(&old, &now, args);
    print!("{}", render(&report));
    Ok(report.regressions == 0)
}

fn load(path: &Path) -> Result<GateFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e} (write one with `ksched gate --update-baseline`)", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not a ksched gate baseline: {e}", path.display()))
}

fn summary_item(metric: &str, w: Workload, nodes: u32, unit: &str, runs: &[f64]) -> DataItem {
    let min = runs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut item = DataItem::new(
        metric,
        &format!("{}/{nodes}Nodes", w.upstream_name()),
        unit,
        &[("Median", median(runs)), ("Min", min), ("Max", max), ("Runs", runs.len() as f64)],
    );
    item.labels.insert("Workload".into(), w.cli_name());
    item
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Runs one workload under callgrind and returns the instructions counted inside
/// `synth::drive`, per measured pod.
fn instructions_per_pod(valgrind: &str, w: Workload, nodes: usize, scale: f64, seed: u64) -> Result<f64, String> {
    let out = std::env::temp_dir().join(format!("ksched-gate-{}-{}.callgrind", std::process::id(), w.cli_name()));
    let wrapper = vec![
        valgrind.to_string(),
        "--tool=callgrind".into(),
        format!("--toggle-collect={TOGGLE}"),
        format!("--callgrind-out-file={}", out.display()),
    ];
    let r = spawn_child_with(&wrapper, w, nodes, scale, seed, true)?;
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()));
    let _ = std::fs::remove_file(&out);
    let total = callgrind_total(&text?)
        .ok_or_else(|| format!("{}: no totals line in callgrind's output", w.upstream_name()))?;
    if total == 0 {
        return Err(format!(
            "{}: callgrind counted 0 instructions inside {TOGGLE}; was drive inlined?",
            w.upstream_name()
        ));
    }
    Ok(total as f64 / r.measured_pods.max(1) as f64)
}

/// The instruction total of a callgrind output file (`totals:` or `summary:`).
pub fn callgrind_total(text: &str) -> Option<u64> {
    let find = |key: &str| {
        text.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    find("totals:").or_else(|| find("summary:"))
}

struct Row {
    metric: String,
    name: String,
    baseline: Option<f64>,
    now: Option<f64>,
    tolerance: f64,
    verdict: &'static str,
}

struct Report {
    rows: Vec<Row>,
    regressions: usize,
    notes: Vec<String>,
}

fn compare(old: &GateFile, now: &GateFile, args: &GateArgs) -> Report {
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
    let time_tol = args.time_tolerance.unwrap_or(args.tolerance.max(0.25));
    let mut rows = Vec::new();
    let mut regressions = 0;
    let key = |i: &DataItem| (i.label("Metric").unwrap_or("").to_string(), i.label("Name").unwrap_or("").to_string());
    for item in &now.data_items {
        let (metric, name) = key(item);
        let base = old.data_items.iter().find(|b| key(b) == (metric.clone(), name.clone()));
        let tolerance = if metric == RATIO { time_tol } else { args.tolerance };
        let now_v = item.data.get("Median").copied();
        let base_v = base.and_then(|b| b.data.get("Median").copied());
        let verdict = match (base_v, now_v) {
            (None, _) => "new, not in baseline",
            (Some(_), None) => "missing",
            (Some(_), Some(_)) if metric == INSTRUCTIONS && !same_toolchain => "not gated (toolchain)",
            (Some(b), Some(n)) if b > 0.0 && n > b * (1.0 + tolerance) => {
                regressions += 1;
                "REGRESSION"
            }
            (Some(_), Some(_)) => "ok",
        };
        rows.push(Row { metric, name, baseline: base_v, now: now_v, tolerance, verdict });
    }
    for b in &old.data_items {
        if !now.data_items.iter().any(|i| key(i) == key(b)) {
            let (metric, name) = key(b);
            rows.push(Row {
                metric,
                name,
                baseline: b.data.get("Median").copied(),
                now: None,
                tolerance: args.tolerance,
                verdict: "not measured",
            });
        }
    }
    Report { rows, regressions, notes }
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
        "{:<20} {:<46} {:>14} {:>14} {:>9} {:>10}  {}\n",
        "metric", "workload", "baseline", "now", "change", "tolerance", "verdict"
    );
    let num = |v: Option<f64>| match v {
        Some(x) if x >= 1000.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    };
    for row in &r.rows {
        let change = match (row.baseline, row.now) {
            (Some(b), Some(n)) if b > 0.0 => format!("{:+.1}%", (n / b - 1.0) * 100.0),
            _ => "-".into(),
        };
        s += &format!(
            "{:<20} {:<46} {:>14} {:>14} {:>9} {:>9.0}%  {}\n",
            row.metric,
            row.name,
            num(row.baseline),
            num(row.now),
            change,
            row.tolerance * 100.0,
            row.verdict
        );
    }
    s += &if r.regressions == 0 {
        "ksched gate: PASS\n".to_string()
    } else {
        format!("ksched gate: FAIL: {} metric(s) regressed beyond tolerance\n", r.regressions)
    };
    s
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
            ksched: GateMeta { nodes: 500, scale: 0.5, seed: 1, workloads: vec!["basic".into()], toolchain },
        }
    }

    fn args() -> GateArgs {
        GateArgs {
            baseline: PathBuf::from("unused"),
            tolerance: 0.10,
            time_tolerance: None,
            update_baseline: false,
            nodes: None,
            scale: None,
            only: vec![],
            repetitions: 1,
            callgrind_runs: 1,
            no_callgrind: false,
            no_time: false,
            valgrind: "valgrind".into(),
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
            let r = compare(&old, &new, &args());
            assert_eq!(r.regressions, want, "{name}");
            let text = render(&r);
            assert_eq!(text.contains("FAIL"), want > 0, "{name}: {text}");
        }
    }

    #[test]
    fn ratio_uses_the_time_tolerance() {
        let rustc = env!("KSCHED_RUSTC_VERSION");
        let old = file(&[(RATIO, "SchedulingBasic/500Nodes", 10.0)], rustc);
        let new = file(&[(RATIO, "SchedulingBasic/500Nodes", 12.0)], rustc);
        assert_eq!(compare(&old, &new, &args()).regressions, 0, "+20% within the default 25%");
        let strict = GateArgs { time_tolerance: Some(0.1), ..args() };
        assert_eq!(compare(&old, &new, &strict).regressions, 1);
    }

    #[test]
    fn another_toolchain_is_reported_not_gated() {
        let old = file(&[(INSTRUCTIONS, "SchedulingBasic/500Nodes", 1000.0)], "rustc 1.0.0 (old)");
        let new = file(&[(INSTRUCTIONS, "SchedulingBasic/500Nodes", 5000.0)], env!("KSCHED_RUSTC_VERSION"));
        let r = compare(&old, &new, &args());
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
