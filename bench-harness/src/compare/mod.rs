//! `ksched compare`: the same cluster and pods scheduled under two or more configurations
//! (`--config` files, or `--profile`s of one file), each from the same starting state and
//! seed, side by side: outcomes, utilization, imbalance, fragmentation, spread, speed, and
//! the pods that landed elsewhere with the plugin that decided it.
//!
//! Each configuration runs through an existing front end (`simulate`'s manifests, a built-in
//! workload as `ksched run` builds it, a scheduler_perf workload file) on the one simulation
//! driver; compare only adds [`RunHooks`]: a [`run::Tracker`] that records every attempt and
//! the final state. Metrics are computed from that state afterwards ([`metrics`]). The moved
//! pods are explained by re-running the configuration that placed them differently with a
//! cycle observer on just those pods ([`moves`]), so the measured runs carry no observer.

mod expr;
mod html;
pub(crate) mod metrics;
pub(crate) mod moves;
pub(crate) mod run;
mod text;

#[cfg(test)]
mod tests;

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use ksched_engine::config::DEFAULT_SCHEDULER_NAME;
use ksched_engine::framework::Profile;
use ksched_engine::queue::QueueConfig;
use serde::Serialize;

use crate::front_ends::TieBreakArg;
use crate::run::{FileSelectionArgs, WorkloadArg};
pub use expr::FailIf;
pub use metrics::ConfigReport;
pub use run::Input;

pub use crate::format::Format;

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) to compare; repeat for
    /// each (the first is the baseline the others are compared with). With one --config and
    /// several --profile, the profiles of that file are compared instead.
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// A profile (schedulerName) of the --config file to compare; repeat for each.
    #[arg(long = "profile", value_name = "NAME")]
    pub profiles: Vec<String>,
    /// Manifests, as `ksched simulate -f` reads them (file, directory or `-`); repeatable.
    #[arg(short = 'f', long = "filename", value_name = "FILE", conflicts_with = "workload")]
    pub files: Vec<PathBuf>,
    /// Read the directories given with -f recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// A field that changes upstream's decision and that ksched does not model (warned about
    /// otherwise), in the manifests or in the nodes and pods a workload file creates, or an
    /// object of a kind ksched does not model in the manifests (skipped otherwise), is an error.
    #[arg(long)]
    pub strict: bool,
    // The help names the built-in workloads from their one list.
    #[arg(long, value_parser = crate::run::parse_workload, help = format!("A built-in workload ({}) or an upstream scheduler_perf workload file, as `ksched run --workload`", crate::synth::Workload::names()))]
    pub workload: Option<WorkloadArg>,
    /// Built-in workload: nodes in the cluster.
    #[arg(long, default_value_t = 5000)]
    pub nodes: usize,
    /// Built-in workload: measured pods (default: the workload's).
    #[arg(long)]
    pub pods: Option<usize>,
    /// Built-in workload: warm-up pods (default: the workload's).
    #[arg(long)]
    pub warmup_pods: Option<usize>,
    #[command(flatten)]
    pub file: FileSelectionArgs,
    /// Seed of every random choice (the draw among tied nodes with --tie-break random,
    /// preemption's random start, controllers' pod names), the same for every configuration.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How every configuration picks among nodes tied at the highest total: upstream (the
    /// root of upstream's score heap over the nodes in the order found) or random (a uniform
    /// draw, seeded by --seed).
    #[arg(long, value_enum, default_value_t = TieBreakArg::Upstream)]
    pub tie_break: TieBreakArg,
    #[command(flatten)]
    pub api: crate::front_ends::PreemptionApiArgs,
    /// Filter workers for every configuration (default: 1; never changes a decision).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallelism: Option<u16>,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Yaml]), default_value = "text")]
    pub format: Format,
    /// Also write a self-contained HTML page with the plots.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Moved pods listed (and explained) per configuration; all are counted.
    #[arg(long, default_value_t = 10)]
    pub max_moved: usize,
    /// Exit 1 when this holds for any configuration: `METRIC OP NUMBER` (`pending>0`,
    /// `cpu_stddev>0.15`), or with configurations named (`B.pending>A.pending`). Repeatable.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
}

/// One configuration to compare.
pub struct ConfigSpec {
    /// `A`, `B`, ... in command-line order.
    pub label: String,
    /// The file, and the profile when one was picked.
    pub name: String,
    pub profile: Profile,
    pub queue: QueueConfig,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct CompareReport {
    /// What was scheduled: the manifests, workload or workload file.
    pub input: String,
    pub seed: u64,
    /// The input's objects whose fields change upstream's decision and that ksched does not
    /// model (each also warned about: manifests' on stderr, a workload file's in each
    /// configuration's notes): field → objects.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unmodelled_fields: std::collections::BTreeMap<String, usize>,
    pub configs: Vec<ConfigReport>,
}

/// The configurations `args` name, labelled A, B, ...
pub fn load_configs(args: &CompareArgs) -> Result<Vec<ConfigSpec>, String> {
    let mut specs = Vec::new();
    let label = |i: usize| {
        let letter = char::from(b'A' + (i % 26) as u8);
        if i < 26 {
            letter.to_string()
        } else {
            format!("{letter}{}", i / 26)
        }
    };
    if !args.profiles.is_empty() {
        let [file] = args.configs.as_slice() else {
            return Err(format!(
                "--profile picks profiles of one configuration file: give exactly one --config (got {})",
                args.configs.len()
            ));
        };
        let cfg = crate::feature_gates::load_config(file, args.gates)?;
        warn(file, &cfg.warnings);
        for (i, name) in args.profiles.iter().enumerate() {
            let profile = cfg.profile(name).cloned().ok_or_else(|| {
                let names: Vec<&str> = cfg.profiles.iter().map(|p| p.scheduler_name.as_str()).collect();
                format!("{}: no profile {name:?}; profiles: {}", file.display(), names.join(", "))
            })?;
            specs.push(spec(label(i), format!("{}:{name}", file.display()), profile, cfg.queue_config(), args));
        }
    } else {
        for (i, file) in args.configs.iter().enumerate() {
            let cfg = crate::feature_gates::load_config(file, args.gates)?;
            warn(file, &cfg.warnings);
            let profile = cfg.default_profile().clone();
            specs.push(spec(label(i), file.display().to_string(), profile, cfg.queue_config(), args));
        }
    }
    if specs.len() < 2 {
        return Err(format!(
            "compare needs two or more configurations (--config A.yaml --config B.yaml, or one --config with \
             several --profile); got {}",
            specs.len()
        ));
    }
    Ok(specs)
}

fn warn(file: &std::path::Path, warnings: &[String]) {
    for w in warnings {
        eprintln!("ksched: {}: {w}", file.display());
    }
}

/// Every compared profile schedules the pods of `default-scheduler` (pods that name no
/// scheduler), as if it were the cluster's default scheduler.
fn spec(label: String, name: String, mut profile: Profile, mut queue: QueueConfig, args: &CompareArgs) -> ConfigSpec {
    args.api.apply(&mut queue);
    profile.scheduler_name = DEFAULT_SCHEDULER_NAME.to_owned();
    profile.parallelism = args.parallelism.map_or(1, usize::from);
    profile.tie_break = args.tie_break.rule();
    ConfigSpec { label, name, profile, queue }
}

/// The input `args` name.
pub fn load_input(args: &CompareArgs) -> Result<Input, String> {
    match (&args.workload, args.files.is_empty()) {
        (Some(_), false) => Err("give either -f manifests or --workload, not both".into()),
        (None, true) => {
            Err("nothing to schedule: give -f manifests or --workload (basic, ..., or a workload file)".into())
        }
        (None, false) => {
            let input = crate::simulate::InputArgs {
                files: args.files.clone(),
                recursive: args.recursive,
                strict: args.strict,
                config: None,
                seed: args.seed,
                duration: None,
                start: None,
                tie_break: args.tie_break,
                gates: args.gates,
                api: args.api,
            };
            let (manifests, _, _) = crate::simulate::load_inputs(&input)?;
            let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
            Ok(Input::Manifests { manifests: Box::new(manifests), name: names.join(" ") })
        }
        (Some(WorkloadArg::Builtin(w)), true) => {
            if args.nodes == 0 {
                return Err("no nodes: --nodes must be at least 1".into());
            }
            let fitted = w.fitted_counts(args.nodes, args.warmup_pods, args.pods);
            for n in &fitted.notes {
                eprintln!("ksched: {n}");
            }
            Ok(Input::Builtin { workload: *w, nodes: args.nodes, warmup: fitted.warmup, measured: fitted.measured })
        }
        (Some(WorkloadArg::File(path)), true) => {
            let mut selected = crate::perf_file::select(path, &args.file.selection(), &args.file.load_options())?;
            if selected.len() != 1 {
                let names: Vec<String> = selected.iter().map(|(tc, w, _)| format!("{}/{}", tc.name, w.name)).collect();
                return Err(format!(
                    "{}: compare runs one workload; {} match ({}): pick one with --test and --workload-name",
                    path.display(),
                    names.len(),
                    names.join(", ")
                ));
            }
            let (tc, w, ops) = selected.remove(0);
            let ops = ops.map_err(|why| format!("{}: {}/{}: cannot run: {why}", path.display(), tc.name, w.name))?;
            let (test_case, workload) = (Box::new(tc), Box::new(w));
            Ok(Input::File { path: path.clone(), test_case, workload, ops, strict: args.strict })
        }
    }
}

/// The gates the configurations' plugins are built under: `--feature-gates`, with a workload
/// file's `featureGates` (its test case's, then its workload's) applied over them as `ksched
/// run --workload` applies them, the gates the run gives the queue and the pods; what cannot
/// be applied is a warning on stderr.
pub fn input_gates(args: &CompareArgs, input: &Input) -> ksched_engine::features::FeatureGates {
    let Input::File { path, test_case, workload, .. } = input else { return args.gates };
    let mut warnings = Vec::new();
    let gates = crate::perf_file::exec::workload_gates(args.gates, &test_case.feature_gates(workload), &mut warnings);
    for w in warnings {
        eprintln!("ksched compare: {}: {}/{}: {w}", path.display(), test_case.name, workload.name);
    }
    gates
}

/// Runs every configuration on the input and builds the report (moved pods explained);
/// `progress` shows a bar on a terminal.
pub fn compare(
    input: &Input,
    specs: &[ConfigSpec],
    seed: u64,
    max_moved: usize,
    progress: bool,
) -> Result<CompareReport, String> {
    let bar = if progress { progress_bar(specs.len()) } else { None };
    let mut runs = Vec::with_capacity(specs.len());
    for s in specs {
        if let Some(b) = &bar {
            b.set_message(format!("{} ({})", s.label, s.name));
        }
        runs.push(run::run_config(input, s, seed, None)?);
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut configs: Vec<ConfigReport> =
        specs.iter().zip(&runs).map(|(s, r)| metrics::config_report(&s.label, &s.name, r)).collect();
    for i in 1..runs.len() {
        let (moved, listed) = moves::moved_pods(&runs[0], &runs[i], max_moved);
        configs[i].moved = moved;
        configs[i].moved_pods = moves::explain(input, &specs[i], seed, &runs[0], &runs[i], listed)?;
    }
    // The input's, the same for every configuration (a workload file's as its first run
    // counted them).
    let unmodelled_fields = match input {
        Input::Manifests { manifests, .. } => manifests.unmodelled.counts(),
        _ => runs.first().map(|r| r.unmodelled_fields.clone()).unwrap_or_default(),
    };
    Ok(CompareReport { input: input.describe(), seed, unmodelled_fields, configs })
}

fn progress_bar(configs: usize) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(configs as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} comparing [{bar:20}] {pos}/{len} {msg}") {
        b.set_style(style.progress_chars("=> "));
    }
    b.enable_steady_tick(std::time::Duration::from_millis(200));
    Some(b)
}

/// `ksched compare`: `Ok(false)` when a `--fail-if` holds.
pub fn run(args: &CompareArgs) -> Result<bool, String> {
    let labels: Vec<String> = (0..args.configs.len().max(args.profiles.len()))
        .map(|i| char::from(b'A' + (i % 26) as u8).to_string())
        .collect();
    let checks: Vec<FailIf> = args.fail_if.iter().map(|e| FailIf::parse(e, &labels)).collect::<Result<_, _>>()?;
    let input = load_input(args)?;
    let specs = load_configs(&CompareArgs { gates: input_gates(args, &input), ..args.clone() })?;
    let report = compare(&input, &specs, args.seed, args.max_moved, args.format == Format::Text)?;
    match args.format {
        Format::Json | Format::Yaml => print!("{}", crate::format::document(&report, args.format)?),
        _ => print!("{}", text::render(&report)),
    }
    if let Some(path) = &args.html {
        html::write(path, &report)?;
    }
    let mut ok = true;
    for check in &checks {
        for hit in check.holds(&report.configs)? {
            eprintln!("ksched compare: --fail-if {}: {hit}", check.text);
            ok = false;
        }
    }
    Ok(ok)
}
