//! `ksched capacity`: the fewest nodes of a node template (a *shape*) for which a workload —
//! manifests, a trace, or both — schedules completely, or with at most `--max-pending` pods
//! left pending (or waiting longer than `--pending-for`, simulated time).
//!
//! Every candidate count is one simulation: the workload replayed (`replay::replay_with`, the
//! driver `ksched replay` runs) over the input's nodes plus that many copies of the shape. The
//! search is a k-ary bisection, k = `--jobs` simulations a round run on the sweep's pool
//! (`sweep::for_each_parallel`): first 0, 1, 2, 4, 8, ... until a count passes, then k
//! points evenly inside the interval between the largest failing count and the least passing
//! one, until they are adjacent. It assumes that adding nodes never hurts; where it does (the
//! runs say so: a failing count above a passing one is reported as not monotone), the answer
//! is still a least passing count with the count below it failing, both run.
//!
//! Several shapes (`--node-template` repeated) are searched one after another, each alone;
//! the cheapest answer (count × price) wins. A template file holding several Nodes is one
//! shape whose unit is those nodes together, so a mix in fixed proportions is priced as one
//! shape; mixes in free proportions are not searched (their number grows as the product of
//! the counts, each a simulation).
//!
//! For the answer, the count one below is run again with a cycle recorder on one pod it left
//! pending, and that pod's last failed attempt is explained as `ksched explain` does.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ksched_engine::api::{Node, PodUid, Sym, LABEL_HOSTNAME, LABEL_ZONE};
use ksched_engine::framework::Profiles;
use ksched_engine::observer::CycleRecorder;
use ksched_engine::queue::QueueConfig;
use ksched_engine::scheduler::CycleOutcome;
use ksched_k8s::manifest::{read_files_with, Manifests, ReadOptions, Source};
use ksched_k8s::trace::Trace;
use serde::Serialize;

use crate::explain::ExplainReport;
use crate::format::Format;
use crate::replay::{GpuShareArg, ReplayArgs, ReplayReport, RunSettings, TraceFormat};
use crate::simulate::columns;

/// The annotation of a template Node giving its price (a decimal number).
pub const COST_ANNOTATION: &str = "ksched.io/cost";

#[derive(Args, Debug, Clone)]
pub struct CapacityArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    /// A node template: a manifest holding one Node (a shape; its copies are named NAME-0,
    /// NAME-1, ...) or several (one shape whose unit is all of them, named after the file).
    /// Repeat for several shapes: each is searched alone and the cheapest answer wins.
    #[arg(short = 't', long = "node-template", value_name = "FILE", required = true)]
    pub templates: Vec<PathBuf>,
    /// The workload as manifests (pods, workloads, budgets, storage...) with the nodes already
    /// there, which stay: the templates' nodes are added to them. With --trace: the cluster as
    /// the trace starts.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Read the directories given with -f recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// A field of the manifests' or the trace's objects that changes upstream's decision and
    /// that ksched does not model (warned about otherwise), or a kind ksched does not model in
    /// the manifests (skipped otherwise), is an error.
    #[arg(long)]
    pub strict: bool,
    /// The workload as a trace, replayed as `ksched replay` does (--from says its format).
    #[arg(long, value_name = "TRACE")]
    pub trace: Vec<PathBuf>,
    /// What the trace files are.
    #[arg(long, value_enum, default_value_t = TraceFormat::Ksched, requires = "trace")]
    pub from: TraceFormat,
    /// Alibaba traces: how a fractional GPU is requested (see `ksched replay`).
    #[arg(long, value_enum, default_value_t = GpuShareArg::Whole, requires = "trace")]
    pub gpu_share: GpuShareArg,
    /// The price of one unit of a shape, SHAPE=PRICE (default: the sum of its Nodes'
    /// `ksched.io/cost` annotations, 1 for a Node without one). Repeat for several.
    #[arg(long, value_name = "SHAPE=PRICE")]
    pub cost: Vec<String>,
    /// Spread the added units over these zones, round-robin (their
    /// topology.kubernetes.io/zone label).
    #[arg(long, value_name = "ZONE,...", value_delimiter = ',')]
    pub zones: Vec<String>,
    /// How many pods may be left pending (or wait longer than --pending-for) in a run that
    /// passes.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub max_pending: usize,
    /// A pod counts as left pending when it waited longer than this for a node (simulated
    /// time from its creation to its binding, or to its deletion when never bound), or is
    /// still pending when the run ends (with --duration: only when it had waited longer by
    /// then). Default: only pods never bound count.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub pending_for: Option<Duration>,
    /// The most units of one shape tried.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_nodes: usize,
    /// Simulations run at once. Default: the machine's threads.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// The scheduler and each run: --config, --seed, --tie-break, --duration, --start (as
    /// `ksched replay` takes them).
    #[command(flatten)]
    pub run: RunSettings,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Yaml]), default_value = "text")]
    pub format: Format,
    /// Nodes listed per table of the explanation (the JSON has all).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    ksched_engine::util::duration::parse_cli_duration(s)
}

/// A node template: the nodes of one unit and the unit's price.
#[derive(Clone, Debug)]
pub struct Shape {
    pub name: String,
    pub nodes: Vec<Node>,
    pub price: f64,
}

impl Shape {
    /// `units` copies of the unit: node `NAME-U` (U from 0), its hostname label its name, and
    /// with `zones`, unit U in zone `zones[U % len]`.
    pub fn instantiate(&self, units: usize, zones: &[String]) -> Vec<Node> {
        let mut out = Vec::with_capacity(units * self.nodes.len());
        for u in 0..units {
            for t in &self.nodes {
                let mut n = t.clone();
                let name = format!("{}-{u}", t.name);
                n.name = Sym::new(&name);
                n.labels.insert(Sym::new(LABEL_HOSTNAME), Sym::new(&name));
                if !zones.is_empty() {
                    n.labels.insert(Sym::new(LABEL_ZONE), Sym::new(&zones[u % zones.len()]));
                }
                out.push(n);
            }
        }
        out
    }
}

/// Reads the templates and their prices (`--cost` over the annotations).
pub fn load_shapes(files: &[PathBuf], costs: &[String]) -> Result<Vec<Shape>, String> {
    let mut shapes: Vec<Shape> = Vec::new();
    for file in files {
        let m = read_files_with(std::slice::from_ref(file), ReadOptions::default()).map_err(|e| e.to_string())?;
        let f = file.display();
        if m.nodes.is_empty() {
            return Err(format!("{f}: a node template holds at least one Node; none found"));
        }
        if let Some(p) = m.pods.first() {
            return Err(format!("{f}: a node template holds Nodes only, not pod {}", p.pod.key()));
        }
        if !m.workloads.is_empty() {
            return Err(format!("{f}: a node template holds Nodes only, not workloads"));
        }
        let mut price = 0.0;
        for (n, source) in &m.nodes {
            price += match n.annotations.iter().find(|(k, _)| k.as_str() == COST_ANNOTATION) {
                None => 1.0,
                Some((_, v)) => {
                    v.trim().parse::<f64>().ok().filter(|p| p.is_finite() && *p >= 0.0).ok_or_else(|| {
                        format!(
                            "{source}: node {}: metadata.annotations[{COST_ANNOTATION}]: {v:?} is not a price (a \
                             number, 0 or more)",
                            n.name
                        )
                    })?
                }
            };
        }
        let name = match m.nodes.as_slice() {
            [(one, _)] => one.name.to_string(),
            _ => file.file_stem().map_or_else(|| f.to_string(), |s| s.to_string_lossy().into_owned()),
        };
        if shapes.iter().any(|s| s.name == name) {
            return Err(format!("{f}: shape {name:?} is given twice"));
        }
        shapes.push(Shape { name, nodes: m.nodes.into_iter().map(|(n, _)| n).collect(), price });
    }
    for c in costs {
        let (name, price) = c.split_once('=').ok_or_else(|| format!("--cost {c:?}: want SHAPE=PRICE"))?;
        let price: f64 = price
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite() && *p >= 0.0)
            .ok_or_else(|| format!("--cost {c:?}: {price:?} is not a price (a number, 0 or more)"))?;
        let names: Vec<&str> = shapes.iter().map(|s| s.name.as_str()).collect();
        let names = names.join(", ");
        let shape = shapes
            .iter_mut()
            .find(|s| s.name == name)
            .ok_or_else(|| format!("--cost {c:?}: no shape {name:?} (the shapes: {names})"))?;
        shape.price = price;
    }
    Ok(shapes)
}

/// When a run passes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Criterion {
    /// Pods that may be left pending.
    pub max_pending: usize,
    /// A pod waiting longer than this counts as left pending; `None`: only pods never bound.
    #[serde(rename = "pending_for_seconds", serialize_with = "secs")]
    pub pending_for: Option<Duration>,
}

fn secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

impl Criterion {
    pub fn describe(&self) -> String {
        match (self.max_pending, self.pending_for) {
            (0, None) => "every pod is bound".into(),
            (n, None) => format!("at most {n} pod(s) are never bound"),
            (n, Some(t)) => format!("at most {n} pod(s) wait longer than {} s for a node", t.as_secs_f64()),
        }
    }
}

/// A pod a run left pending (or that waited too long).
#[derive(Clone, Debug, Serialize)]
pub struct LeftPending {
    /// `namespace/name`.
    pub pod: String,
    /// Seconds it waited for a node.
    pub waited: f64,
    /// Never bound.
    pub never_bound: bool,
    /// Its last failed attempt's message.
    pub reason: Option<String>,
    #[serde(skip)]
    pub uid: PodUid,
}

/// One simulation: the input with `units` units of a shape.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub units: usize,
    pub nodes: usize,
    pub cost: f64,
    pub passed: bool,
    /// Pods counted against `--max-pending`.
    pub left_pending: usize,
    pub pods: usize,
    pub bound: usize,
    /// Pods the scheduler never tried (scheduling gates, another scheduler's): not counted.
    pub never_attempted: usize,
    pub simulated_seconds: f64,
    /// One of the pods left pending: one never bound first, else the one that waited longest.
    pub example: Option<LeftPending>,
}

/// Judges one replay by `crit`; `cut`: the run was cut at a `--duration` (a pod still pending
/// then counts only when it had waited longer than `--pending-for`; otherwise nothing more
/// could happen, or for a day, and it counts).
pub fn judge(report: &ReplayReport, crit: &Criterion, cut: bool) -> (usize, usize, Option<LeftPending>) {
    let end = report.summary.simulated_seconds;
    let (mut counted, mut never_attempted) = (0, 0);
    let mut example: Option<LeftPending> = None;
    for p in &report.pods {
        if p.attempts == 0 && p.bound_at.is_none() {
            never_attempted += 1;
            continue;
        }
        let waited = p.bound_at.or(p.ended_at).unwrap_or(end) - p.created_at;
        let never_bound = p.bound_at.is_none();
        let still_pending = never_bound && p.ended_at.is_none();
        let counts = match crit.pending_for {
            None => never_bound,
            Some(_) if still_pending && !cut => true,
            Some(t) => waited > t.as_secs_f64() + 1e-9,
        };
        if !counts {
            continue;
        }
        counted += 1;
        let better = match &example {
            None => true,
            Some(e) => (never_bound && !e.never_bound) || (never_bound == e.never_bound && waited > e.waited),
        };
        if better {
            let reason = p.reason.clone();
            example = Some(LeftPending { pod: p.pod.clone(), waited, never_bound, reason, uid: p.uid.clone() });
        }
    }
    (counted, never_attempted, example)
}

/// What every run shares.
pub struct Input {
    pub manifests: Manifests,
    pub trace: Trace,
    pub replay: ReplayArgs,
    pub profiles: Profiles,
    pub queue: QueueConfig,
    pub zones: Vec<String>,
    pub criterion: Criterion,
}

impl Input {
    /// The input's manifests with `units` units of `shape` added.
    fn manifests_with(&self, shape: &Shape, units: usize) -> Manifests {
        let mut m = self.manifests.clone();
        let source =
            Source { file: format!("--node-template {}", shape.name).into(), document: 1, line: None, item: None };
        m.nodes.extend(shape.instantiate(units, &self.zones).into_iter().map(|n| (n, source.clone())));
        m
    }

    /// One simulation with `units` units of `shape`.
    pub fn run(&self, shape: &Shape, units: usize) -> Result<Run, String> {
        let m = self.manifests_with(shape, units);
        let (report, _) = crate::replay::replay_with(
            &self.replay,
            self.profiles.clone(),
            self.queue.clone(),
            &m,
            self.trace.clone(),
            None,
        )?;
        let (left_pending, never_attempted, example) =
            judge(&report, &self.criterion, self.replay.run.duration.is_some());
        Ok(Run {
            units,
            nodes: units * shape.nodes.len(),
            cost: units as f64 * shape.price,
            passed: left_pending <= self.criterion.max_pending,
            left_pending,
            pods: report.summary.pods,
            bound: report.summary.bound,
            never_attempted,
            simulated_seconds: report.summary.simulated_seconds,
            example,
        })
    }

    /// The run with `units` units again, explaining `pod`'s last failed attempt.
    pub fn explain(&self, shape: &Shape, units: usize, pod: &LeftPending) -> Result<Option<ExplainReport>, String> {
        let m = self.manifests_with(shape, units);
        let recorder = CycleRecorder::for_pod(pod.uid.clone()).with_each_filter_plugin().keeping_last(2);
        let (_, observer) = crate::replay::replay_with(
            &self.replay,
            self.profiles.clone(),
            self.queue.clone(),
            &m,
            self.trace.clone(),
            Some(Box::new(recorder)),
        )?;
        let observer: Box<dyn std::any::Any> = observer.ok_or("the run lost its observer")?;
        let recorder = observer.downcast::<CycleRecorder>().map_err(|_| "the run's observer is not ours")?;
        let attempts = (recorder.dropped + recorder.records.len()) as u32;
        let failed = recorder
            .records
            .iter()
            .enumerate()
            .rev()
            .find(|(_, r)| !matches!(r.outcome, Some(CycleOutcome::Scheduled { .. }) | None));
        let tie_break = self.profiles.primary().tie_break.name();
        let nodes: Vec<String> = m.nodes.iter().map(|(n, _)| n.name.to_string()).collect();
        Ok(failed.map(|(i, rec)| {
            let attempt = (recorder.dropped + i + 1) as u32;
            let source = format!("the run with {units} × {}", shape.name);
            crate::explain::from_record(rec, source, (attempt, attempts), tie_break, &nodes)
        }))
    }
}

/// A k-ary search's findings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bisection {
    /// The least count that passed, with the count below it failing (or it is 0).
    pub least: Option<usize>,
    /// Every count run and whether it passed.
    pub results: BTreeMap<usize, bool>,
    /// Rounds of runs.
    pub rounds: usize,
}

impl Bisection {
    /// Counts that failed above one that passed: adding nodes hurt somewhere.
    pub fn not_monotone(&self) -> Vec<usize> {
        let Some(first_pass) = self.results.iter().find(|(_, &p)| p).map(|(&n, _)| n) else { return Vec::new() };
        self.results.iter().filter(|(&n, &p)| n > first_pass && !p).map(|(&n, _)| n).collect()
    }
}

/// The next count of the first phase: 0, 1, 2, 4, 8, ..., `max`.
fn grow(c: usize, max: usize) -> Option<usize> {
    match c {
        _ if c >= max => None,
        0 => Some(1),
        c => Some(c.saturating_mul(2).min(max)),
    }
}

/// The least count in 0..=`max` that passes, `width` counts a round: `passes` runs a round's
/// counts (at once) and says which pass. See the module docs.
pub fn bisect(
    max: usize,
    width: usize,
    mut passes: impl FnMut(&[usize]) -> Result<Vec<bool>, String>,
) -> Result<Bisection, String> {
    let width = width.max(1);
    let mut b = Bisection::default();
    let mut next = Some(0);
    loop {
        let least = b.results.iter().find(|(_, &p)| p).map(|(&n, _)| n);
        let counts: Vec<usize> = match least {
            None => {
                let mut v = Vec::new();
                while v.len() < width {
                    let Some(c) = next else { break };
                    v.push(c);
                    next = grow(c, max);
                }
                v
            }
            Some(hi) => {
                let lo = b.results.range(..hi).next_back().map_or(0, |(&n, _)| n + 1);
                let span = hi - lo;
                let k = width.min(span);
                let mut v: Vec<usize> = (1..=k).map(|j| lo + span * j / (k + 1)).collect();
                v.dedup();
                v
            }
        };
        if counts.is_empty() {
            b.least = least;
            return Ok(b);
        }
        let got = passes(&counts)?;
        b.rounds += 1;
        for (c, p) in counts.into_iter().zip(got) {
            b.results.insert(c, p);
        }
    }
}

/// One shape's search.
#[derive(Clone, Debug, Serialize)]
pub struct ShapeReport {
    pub shape: String,
    pub nodes_per_unit: usize,
    pub price: f64,
    /// The fewest units that pass.
    pub units: Option<usize>,
    pub cost: Option<f64>,
    /// Every run, by count.
    pub runs: Vec<Run>,
    /// Counts that failed above one that passed.
    pub not_monotone: Vec<usize>,
    pub rounds: usize,
}

impl ShapeReport {
    fn run(&self, units: usize) -> Option<&Run> {
        self.runs.iter().find(|r| r.units == units)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    pub shape: String,
    pub units: usize,
    pub nodes: usize,
    pub cost: f64,
}

/// The run with one unit fewer than the answer, and why a pod it left pending stayed so.
#[derive(Clone, Debug, Serialize)]
pub struct OneFewer {
    pub run: Run,
    pub explain: Option<ExplainReport>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CapacityReport {
    pub criterion: Criterion,
    /// The cheapest shape's answer (fewest nodes on a tie, then the first given).
    pub answer: Option<Answer>,
    pub shapes: Vec<ShapeReport>,
    pub one_fewer: Option<OneFewer>,
}

/// Searches every shape and explains the answer's count one below.
pub fn capacity(
    input: &Input,
    shapes: &[Shape],
    max: usize,
    jobs: usize,
    bar: Option<&ProgressBar>,
) -> Result<CapacityReport, String> {
    let mut reports = Vec::new();
    for shape in shapes {
        let mut runs: BTreeMap<usize, Run> = BTreeMap::new();
        let b = bisect(max, jobs, |counts| {
            if let Some(bar) = bar {
                bar.set_message(format!("{}: running {:?}", shape.name, counts));
            }
            let done = crate::sweep::for_each_parallel(
                counts,
                jobs,
                |&u| input.run(shape, u),
                || {
                    if let Some(bar) = bar {
                        bar.inc(1);
                    }
                },
            );
            let mut passed = Vec::with_capacity(done.len());
            for r in done {
                let r = r?;
                passed.push(r.passed);
                runs.insert(r.units, r);
            }
            Ok(passed)
        })?;
        reports.push(ShapeReport {
            shape: shape.name.clone(),
            nodes_per_unit: shape.nodes.len(),
            price: shape.price,
            units: b.least,
            cost: b.least.map(|u| u as f64 * shape.price),
            not_monotone: b.not_monotone(),
            rounds: b.rounds,
            runs: runs.into_values().collect(),
        });
    }
    let best = reports
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, r.units?, r.cost?, r.nodes_per_unit)))
        .min_by(|a, b| a.2.total_cmp(&b.2).then((a.1 * a.3).cmp(&(b.1 * b.3))).then(a.0.cmp(&b.0)));
    let answer =
        best.map(|(i, units, cost, per)| Answer { shape: reports[i].shape.clone(), units, nodes: units * per, cost });
    let one_fewer = match best {
        Some((i, units, _, _)) if units > 0 => {
            let run = reports[i].run(units - 1).cloned().ok_or("the count below the answer was not run")?;
            if let Some(bar) = bar {
                bar.set_message(format!("explaining the run with {} × {}", units - 1, shapes[i].name));
            }
            let explain = match &run.example {
                Some(p) => input.explain(&shapes[i], units - 1, p)?,
                None => None,
            };
            Some(OneFewer { run, explain })
        }
        _ => None,
    };
    Ok(CapacityReport { criterion: input.criterion, answer, shapes: reports, one_fewer })
}

/// The replay settings of every run (no drains, no timeline files).
pub fn replay_args(args: &CapacityArgs) -> ReplayArgs {
    ReplayArgs {
        trace: args.trace.clone(),
        from: args.from,
        files: Vec::new(),
        strict: args.strict,
        run: args.run.clone(),
        drain: Vec::new(),
        drain_at: Duration::ZERO,
        drain_remove: false,
        drain_timeout: ksched_k8s::trace::DRAIN_TIMEOUT,
        gpu_share: args.gpu_share,
        timeline: None,
        html: None,
        step: None,
        format: Format::Text,
        gates: args.gates,
    }
}

/// Reads the inputs of `args`.
pub fn load_input(args: &CapacityArgs) -> Result<Input, String> {
    if args.files.is_empty() && args.trace.is_empty() {
        return Err("no workload: give manifests (-f) or a trace (--trace)".into());
    }
    let manifests = if args.files.is_empty() {
        Manifests::new()
    } else {
        let options = ReadOptions { strict: args.strict, recursive: args.recursive, gates: args.gates };
        read_files_with(&args.files, options).map_err(|e| e.to_string())?
    };
    for line in manifests.unmodelled.lines() {
        eprintln!("ksched capacity: warning: {line}");
    }
    let replay = replay_args(args);
    let trace = if args.trace.is_empty() {
        Trace { file: "(no trace)".into(), ..Trace::default() }
    } else {
        let t = crate::replay::read_trace(&replay)?;
        for w in t.warnings.iter().chain(&t.unmodelled.lines()) {
            eprintln!("ksched capacity: warning: {w}");
        }
        t
    };
    let (profiles, queue) = args.run.profiles(args.gates)?;
    let criterion = Criterion { max_pending: args.max_pending, pending_for: args.pending_for };
    Ok(Input { manifests, trace, replay, profiles, queue, zones: args.zones.clone(), criterion })
}

pub fn run(args: &CapacityArgs) -> Result<bool, String> {
    let shapes = load_shapes(&args.templates, &args.cost)?;
    let input = load_input(args)?;
    let taken: Vec<String> = shapes
        .iter()
        .flat_map(|s| s.nodes.iter().map(|n| format!("{}-0", n.name)))
        .filter(|n| input.manifests.nodes.iter().any(|(m, _)| m.name.as_str() == n))
        .collect();
    if let Some(n) = taken.first() {
        return Err(format!("the input already has a node {n}: rename the template's Node"));
    }
    let jobs = args.jobs.map(usize::from).unwrap_or_else(ksched_engine::parallel::available_parallelism);
    let bar = (!args.format.is_machine() && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} capacity: {pos} runs ({elapsed}) {msg}") {
            b.set_style(style);
        }
        b.enable_steady_tick(Duration::from_millis(100));
        b
    });
    let report = capacity(&input, &shapes, args.max_nodes, jobs, bar.as_ref());
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let report = report?;
    match args.format {
        Format::Json | Format::Yaml => print!("{}", crate::format::document(&report, args.format)?),
        _ => print!("{}", table(&report, args.max_nodes, args.limit)),
    }
    Ok(report.answer.is_some())
}

fn num(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn run_line(r: &Run, shape: &str) -> String {
    let verdict = if r.passed { "passes" } else { "fails" };
    format!("{} × {shape} ({} nodes): {verdict}, {} of {} pods left pending", r.units, r.nodes, r.left_pending, r.pods)
}

/// The text report.
pub fn table(r: &CapacityReport, max: usize, limit: usize) -> String {
    let mut out = String::new();
    let crit = r.criterion.describe();
    match &r.answer {
        Some(a) => out.push_str(&format!(
            "ksched capacity: {} × {} ({} nodes, cost {}) is the fewest for which {crit}\n",
            a.units,
            a.shape,
            a.nodes,
            num(a.cost)
        )),
        None => out.push_str(&format!("ksched capacity: no count up to {max} of any shape passes ({crit})\n")),
    }
    if r.shapes.len() > 1 {
        let mut rows = vec![["SHAPE", "NODES/UNIT", "PRICE", "FEWEST", "COST", "RUNS"].map(String::from).to_vec()];
        for s in &r.shapes {
            rows.push(vec![
                s.shape.clone(),
                s.nodes_per_unit.to_string(),
                num(s.price),
                s.units.map_or_else(|| format!("> {max}"), |u| u.to_string()),
                s.cost.map_or_else(|| "-".into(), num),
                s.runs.len().to_string(),
            ]);
        }
        out.push_str(&columns(&rows));
    }
    for s in &r.shapes {
        if let Some(u) = s.units {
            let below = u.checked_sub(1).and_then(|b| s.run(b));
            let at = s.run(u);
            let bracket: Vec<String> = below.into_iter().chain(at).map(|x| run_line(x, &s.shape)).collect();
            out.push_str(&format!("{}: {}\n", s.shape, bracket.join("; ")));
        }
        let runs: Vec<String> =
            s.runs.iter().map(|x| format!("{} {}", x.units, if x.passed { "pass" } else { "fail" })).collect();
        out.push_str(&format!("  runs ({} rounds): {}\n", s.rounds, runs.join(", ")));
        if !s.not_monotone.is_empty() {
            let counts: Vec<String> = s.not_monotone.iter().map(ToString::to_string).collect();
            out.push_str(&format!(
                "  warning: not monotone: {} × {} fail(s) above a count that passes; the answer is the least passing \
                 count run\n",
                counts.join(", "),
                s.shape
            ));
        }
    }
    if let (Some(f), Some(a)) = (&r.one_fewer, &r.answer) {
        out.push_str(&format!("\nWith one unit fewer ({}):\n", run_line(&f.run, &a.shape)));
        if let Some(p) = &f.run.example {
            let how = if p.never_bound { "never bound" } else { "bound late" };
            out.push_str(&format!(
                "{} waited {} s ({how}): {}\n",
                p.pod,
                num(p.waited),
                p.reason.as_deref().unwrap_or("-")
            ));
        }
        if let Some(e) = &f.explain {
            out.push('\n');
            out.push_str(&crate::explain::table(e, limit));
        }
    }
    out
}

#[cfg(test)]
mod tests;
