//! `ksched sweep PLAN.yaml`: every scenario of a plan (configs × workloads × cluster sizes ×
//! seeds, see [`plan`]), each in its own process, merged into one table / JSON / CSV / HTML.
//!
//! One code path runs a scenario: `ksched sweep PLAN --index I` (or `--index-from-env`, which
//! reads `JOB_COMPLETION_INDEX` as an Indexed Job's pod does) runs scenario I and prints one
//! JSON result line ([`scenario::ScenarioResult`]) on stdout. A local sweep starts that command
//! as a child process per scenario, `--jobs` at a time, and writes each result to
//! `--out/scenario-NNNNN.json` (written to a temporary file, then renamed, so a file is whole
//! or absent). A re-run skips every scenario whose file holds a result with that scenario's id,
//! so an interrupted sweep resumes where it stopped and a changed plan re-runs only what
//! changed. `--emit-k8s DIR` writes the Job and ConfigMap that run the same command on a
//! cluster ([`emit`]); `ksched sweep merge` reads the result lines back from files or
//! `kubectl logs`.

pub mod emit;
pub mod plan;
pub mod scenario;

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crate::report::esc;
use plan::{Plan, Scenario};
use scenario::{ScenarioResult, RESULT_KIND};

/// The variable an Indexed Job sets to the pod's completion index.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

pub use crate::format::Format;

#[derive(Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// The plan (YAML): configs, workloads, seeds, nodes, pods. See the README's `ksched
    /// sweep` section.
    #[arg(value_name = "PLAN.yaml", required = true)]
    pub plan: Option<PathBuf>,
    /// Scenarios run at once (each in its own process). Default: the machine's threads.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// Where each scenario's result is kept; a re-run skips the scenarios found here.
    #[arg(long, default_value = "sweep-out", value_name = "DIR")]
    pub out: PathBuf,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Csv]), default_value = "text")]
    pub format: Format,
    /// Also write the merged results as an HTML table.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Run only scenario I in this process and print its result as one JSON line.
    #[arg(long, value_name = "I", conflicts_with_all = ["index_from_env", "emit_k8s", "jobs", "out", "format", "html"])]
    pub index: Option<usize>,
    /// As `--index`, with I read from the JOB_COMPLETION_INDEX variable (an Indexed Job's pod).
    #[arg(long, conflicts_with_all = ["emit_k8s", "jobs", "out", "format", "html"])]
    pub index_from_env: bool,
    /// Write an Indexed Job and a ConfigMap (the plan and its input files) that run this sweep
    /// on Kubernetes, one completion index per scenario, into DIR; runs nothing.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["jobs", "out", "format", "html"])]
    pub emit_k8s: Option<PathBuf>,
    /// With --emit-k8s: the container image holding `ksched` (see the Dockerfile).
    #[arg(long, default_value = "ksched:latest", requires = "emit_k8s")]
    pub image: String,
    /// With --emit-k8s: pods running at once.
    #[arg(long, default_value_t = 8, requires = "emit_k8s", value_parser = clap::value_parser!(i32).range(1..))]
    pub k8s_parallelism: i32,
    /// With --emit-k8s: the Job's name (the ConfigMap is NAME-plan).
    #[arg(long, default_value = "ksched-sweep", requires = "emit_k8s")]
    pub name: String,
    /// With --emit-k8s: each pod's CPU request and limit.
    #[arg(long, default_value = "1", requires = "emit_k8s")]
    pub k8s_cpu: String,
    /// With --emit-k8s: each pod's memory request and limit.
    #[arg(long, default_value = "1Gi", requires = "emit_k8s")]
    pub k8s_memory: String,
    #[command(flatten)]
    pub api: crate::front_ends::PreemptionApiArgs,
    /// A field of a scenario's manifests or workload file (its nodes and pods) that changes
    /// upstream's decision and that ksched does not model (warned about otherwise), or an
    /// object of a kind ksched does not model in its manifests (skipped otherwise), fails the
    /// scenario.
    #[arg(long)]
    pub strict: bool,
}

impl SweepArgs {
    /// What every scenario runs under.
    pub fn settings(&self) -> scenario::Settings {
        scenario::Settings { gates: self.gates, api: self.api, strict: self.strict }
    }
}

#[derive(Subcommand, Debug, Clone)]
pub enum SweepCommand {
    /// Merge result lines (`ksched sweep --index` output) from files or `-` (standard input),
    /// e.g. the concatenated `kubectl logs` of a sweep Job; other lines are ignored.
    Merge(MergeArgs),
}

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Csv]), default_value = "text")]
    pub format: Format,
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `Ok(false)` when a scenario could not be run.
pub fn sweep(args: &SweepArgs) -> Result<bool, String> {
    if let Some(SweepCommand::Merge(m)) = &args.command {
        return merge_command(m);
    }
    let path = args.plan.as_deref().ok_or("no plan given")?;
    let plan = plan::load(path)?;
    if let Some(dir) = &args.emit_k8s {
        let opts = emit::Options {
            name: args.name.clone(),
            image: args.image.clone(),
            parallelism: args.k8s_parallelism,
            cpu: args.k8s_cpu.clone(),
            memory: args.k8s_memory.clone(),
            settings: args.settings(),
        };
        let written = emit::write(&plan, dir, &opts)?;
        for f in written {
            eprintln!("ksched sweep: wrote {}", f.display());
        }
        return Ok(true);
    }
    let index = match (args.index, args.index_from_env) {
        (Some(i), _) => Some(i),
        (None, true) => {
            let v = std::env::var(INDEX_ENV).map_err(|_| format!("--index-from-env: {INDEX_ENV} is not set"))?;
            Some(v.trim().parse().map_err(|_| format!("--index-from-env: {INDEX_ENV}={v:?} is not an index"))?)
        }
        (None, false) => None,
    };
    if let Some(i) = index {
        let s = plan.scenarios.get(i).ok_or_else(|| {
            format!(
                "{}: no scenario {i}: the plan has {} (0..{})",
                path.display(),
                plan.scenarios.len(),
                plan.scenarios.len()
            )
        })?;
        let r = scenario::run(s, args.settings())?;
        println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
        return Ok(true);
    }
    let jobs = args.jobs.map(usize::from).unwrap_or_else(ksched_engine::parallel::available_parallelism);
    let progress = std::io::stderr().is_terminal() && !args.format.is_machine();
    let outcome = run_local(&plan, &args.out, jobs, progress, args.settings())?;
    if !args.format.is_machine() {
        let under = args.settings().child_args();
        eprintln!(
            "ksched sweep: {} scenarios: {} run, {} already done, {} failed ({}){}{}",
            plan.scenarios.len(),
            outcome.ran,
            outcome.skipped,
            outcome.errors.len(),
            args.out.display(),
            if under.is_empty() { "" } else { "; under " },
            under.join(" ")
        );
    }
    for (i, e) in &outcome.errors {
        eprintln!("ksched sweep: scenario {i}: {e}");
    }
    print_merged(&outcome.results, args.format, args.html.as_deref())?;
    Ok(outcome.errors.is_empty())
}

/// What a local sweep did.
#[derive(Debug)]
pub struct LocalOutcome {
    /// Scenarios started in this run.
    pub ran: usize,
    /// Scenarios whose result was already in the output directory.
    pub skipped: usize,
    /// Scenarios that gave no result: (index, why).
    pub errors: Vec<(usize, String)>,
    /// Every result, in scenario order.
    pub results: Vec<ScenarioResult>,
}

pub fn result_path(out: &Path, index: usize) -> PathBuf {
    out.join(format!("scenario-{index:05}.json"))
}

/// The result kept for `s` in `out`, if it is whole, for this scenario (its id) and run under
/// these settings (`args`: [`scenario::Settings::child_args`]).
fn finished(out: &Path, s: &Scenario, args: &[String]) -> Option<ScenarioResult> {
    let text = std::fs::read_to_string(result_path(out, s.index)).ok()?;
    let r: ScenarioResult = serde_json::from_str(&text).ok()?;
    (r.id == s.id && r.index == s.index && r.settings == args).then_some(r)
}

/// Runs every scenario of `plan` without a result in `out` (under these settings), `jobs`
/// child processes at a time, each under `settings` (passed on as `--feature-gates` and
/// `--preemption-api-delay`).
pub fn run_local(
    plan: &Plan,
    out: &Path,
    jobs: usize,
    progress: bool,
    settings: scenario::Settings,
) -> Result<LocalOutcome, String> {
    let args = settings.child_args();
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the ksched binary: {e}"))?;
    let todo: Vec<&Scenario> = plan.scenarios.iter().filter(|s| finished(out, s, &args).is_none()).collect();
    let skipped = plan.scenarios.len() - todo.len();
    let bar = progress.then(|| {
        let b = ProgressBar::new(todo.len() as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} sweep [{bar:40}] {pos}/{len} scenarios ({elapsed}, eta {eta})")
        {
            b.set_style(style.progress_chars("=> "));
        }
        b
    });
    let outcomes = for_each_parallel(
        &todo,
        jobs,
        |s| run_child(&exe, &plan.path, s, out, &args),
        || {
            if let Some(b) = &bar {
                b.inc(1);
            }
        },
    );
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut errors: Vec<(usize, String)> =
        todo.iter().zip(outcomes).filter_map(|(s, r)| r.err().map(|e| (s.index, e))).collect();
    errors.sort();
    let results = plan.scenarios.iter().filter_map(|s| finished(out, s, &args)).collect();
    Ok(LocalOutcome { ran: todo.len(), skipped, errors, results })
}

/// The sweep's pool: `work` on every item, at most `jobs` at a time on scoped threads, `done`
/// called after each; the results in item order. A local sweep's work starts a child process
/// per scenario; `ksched capacity`'s runs a simulation in this process.
pub fn for_each_parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
    done: impl Fn() + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(k) else { break };
                let r = work(item);
                if let Ok(mut all) = results.lock() {
                    all[k] = Some(r);
                }
                done();
            });
        }
    });
    // A worker that panicked took the scope down with it (`scope` re-raises), so every slot
    // is filled here.
    results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect()
}

/// Runs `s` as `ksched sweep PLAN --index-from-env` with JOB_COMPLETION_INDEX set (exactly
/// what an Indexed Job's pod runs) and keeps its result line in `out`.
fn run_child(exe: &Path, plan: &Path, s: &Scenario, out: &Path, settings: &[String]) -> Result<(), String> {
    let output = Command::new(exe)
        .arg("sweep")
        .arg(plan)
        .arg("--index-from-env")
        .args(settings)
        .env(INDEX_ENV, s.index.to_string())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().find(|l| l.contains(RESULT_KIND));
    let Some(line) = line.filter(|_| output.status.success()) else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let why = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
        return Err(format!("{} ({})", why.trim(), output.status));
    };
    let r: ScenarioResult = serde_json::from_str(line).map_err(|e| format!("its result line does not decode: {e}"))?;
    if r.id != s.id || r.index != s.index {
        return Err(format!("its result is for scenario {} ({}), not {} ({})", r.index, r.id, s.index, s.id));
    }
    let path = result_path(out, s.index);
    let tmp = out.join(format!(".scenario-{:05}.json.tmp", s.index));
    std::fs::write(&tmp, format!("{line}\n")).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The result lines among `text`'s lines (`source` names it in errors): a line holding a
/// result marker is decoded from its first `{` (so `kubectl logs --prefix` output works);
/// other lines are ignored.
pub fn parse_results(text: &str, source: &str) -> Result<Vec<ScenarioResult>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if !line.contains(RESULT_KIND) {
            continue;
        }
        let Some(start) = line.find('{') else { continue };
        let r: ScenarioResult = serde_json::from_str(line[start..].trim_end())
            .map_err(|e| format!("{source}:{}: a sweep result line that does not decode: {e}", n + 1))?;
        out.push(r);
    }
    Ok(out)
}

/// Results by index; the same index twice must be the same scenario (a retried pod), and the
/// later line wins.
pub fn merge(results: Vec<ScenarioResult>) -> Result<Vec<ScenarioResult>, String> {
    let mut by_index: BTreeMap<usize, ScenarioResult> = BTreeMap::new();
    for r in results {
        if let Some(prev) = by_index.get(&r.index) {
            if prev.id != r.id {
                return Err(format!(
                    "scenario {} appears with two ids ({} and {}): results of different plans are mixed",
                    r.index, prev.id, r.id
                ));
            }
        }
        by_index.insert(r.index, r);
    }
    Ok(by_index.into_values().collect())
}

fn merge_command(m: &MergeArgs) -> Result<bool, String> {
    let mut all = Vec::new();
    for f in &m.files {
        let (text, name) = if f.as_os_str() == "-" {
            let mut s = String::new();
            for line in std::io::stdin().lock().lines() {
                s.push_str(&line.map_err(|e| format!("standard input: {e}"))?);
                s.push('\n');
            }
            (s, "-".to_owned())
        } else {
            (std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?, f.display().to_string())
        };
        all.extend(parse_results(&text, &name)?);
    }
    let merged = merge(all)?;
    if merged.is_empty() {
        return Err("no sweep result lines in the input".into());
    }
    let gaps: Vec<String> = (0..=merged.last().map_or(0, |r| r.index))
        .filter(|i| !merged.iter().any(|r| r.index == *i))
        .map(|i| i.to_string())
        .collect();
    if !gaps.is_empty() {
        eprintln!("ksched sweep merge: no result for scenario(s) {}", gaps.join(", "));
    }
    print_merged(&merged, m.format, m.html.as_deref())?;
    Ok(true)
}

fn print_merged(results: &[ScenarioResult], format: Format, html: Option<&Path>) -> Result<(), String> {
    let text = match format {
        Format::Csv => csv(results),
        Format::Json => crate::format::document(&results, format)?,
        _ => table(results, true),
    };
    // The scenarios' warnings: in the JSON, and on stderr beside a table.
    if !format.is_machine() {
        for r in results {
            for w in &r.warnings {
                eprintln!("ksched sweep: scenario {} ({}): warning: {w}", r.index, r.id);
            }
        }
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).map_err(|e| format!("standard output: {e}"))?;
    if let Some(p) = html {
        std::fs::write(p, render_html(results)).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// Header and rows of the merged results; `timing`: with the wall-time columns (throughput,
/// latency, seconds), which differ from run to run while the rest is exact for a seed.
pub fn rows(results: &[ScenarioResult], timing: bool) -> Vec<Vec<String>> {
    let mut head: Vec<&str> = vec![
        "INDEX",
        "ID",
        "CONFIG",
        "WORKLOAD",
        "NODES",
        "PODS",
        "SEED",
        "STATUS",
        "SCHEDULED",
        "PENDING",
        "PREEMPTED",
        "VICTIMS",
        "IN_USE",
        "CPU_MEAN",
        "CPU_STDDEV",
        "MEM_MEAN",
        "MEM_STDDEV",
    ];
    if timing {
        head.extend(["PODS_PER_S", "P50_US", "P99_US", "RUN_S"]);
    }
    let opt = |v: Option<usize>| v.map_or("-".to_owned(), |v| v.to_string());
    let mut out = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    for r in results {
        let m = &r.metrics;
        let mut row = vec![
            r.index.to_string(),
            r.id.clone(),
            r.scenario.config.clone(),
            r.scenario.workload.clone(),
            opt(r.scenario.nodes),
            opt(r.scenario.pods),
            r.scenario.seed.to_string(),
            r.status.clone(),
            m.scheduled.to_string(),
            opt(m.pending),
            m.preempted.to_string(),
            m.victims.to_string(),
            format!("{}/{}", m.nodes_in_use, m.nodes),
            format!("{:.4}", m.cpu_mean),
            format!("{:.4}", m.cpu_stddev),
            format!("{:.4}", m.memory_mean),
            format!("{:.4}", m.memory_stddev),
        ];
        if timing {
            row.extend([
                format!("{:.0}", m.pods_per_second),
                format!("{:.1}", m.latency_p50_us),
                format!("{:.1}", m.latency_p99_us),
                format!("{:.3}", r.run_seconds),
            ]);
        }
        out.push(row);
    }
    out
}

pub fn table(results: &[ScenarioResult], timing: bool) -> String {
    crate::simulate::columns(&rows(results, timing))
}

fn csv(results: &[ScenarioResult]) -> String {
    let cell = |c: &str| {
        if c.contains([',', '"', '\n']) {
            format!("\"{}\"", c.replace('"', "\"\""))
        } else {
            c.to_owned()
        }
    };
    let mut out = String::new();
    for row in rows(results, true) {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn render_html(results: &[ScenarioResult]) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ksched sweep</title>\n<style>\
         body{font-family:sans-serif;margin:24px;color:#222} table{border-collapse:collapse}\
         th,td{padding:2px 10px;border-bottom:1px solid #ddd;text-align:right} th{background:#f4f4f4}\
         td.l{text-align:left}</style></head><body>\n<h1>ksched sweep</h1>\n<table>\n",
    );
    for (i, row) in rows(results, true).iter().enumerate() {
        h.push_str("<tr>");
        for (j, c) in row.iter().enumerate() {
            let left = (1..=3).contains(&j) || j == 7;
            match (i, left) {
                (0, _) => h.push_str(&format!("<th>{}</th>", esc(c))),
                (_, true) => h.push_str(&format!("<td class=\"l\">{}</td>", esc(c))),
                (_, false) => h.push_str(&format!("<td>{}</td>", esc(c))),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n</body></html>\n");
    h
}

#[cfg(test)]
mod tests;
