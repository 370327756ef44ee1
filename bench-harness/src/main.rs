//! `ksched`: schedule synthetic clusters with ksched's engine and report how fast.
//!
//! Arrows (kept by `tests/layering.rs`): this crate wires the others. It imports
//! `ksched-engine`, `ksched-sim` and `ksched-k8s`; none of them imports it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod capacity;
mod compare;
mod device_use;
mod explain;
mod feature_gates;
mod format;
mod front_ends;
mod gate;
mod golden;
mod load;
mod metrics;
mod perf_file;
mod probe;
mod progress;
mod replay;
mod report;
mod run;
mod simulate;
mod soak;
mod sweep;
mod synth;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "ksched",
    version,
    args_conflicts_with_subcommands = true,
    about = "A fast re-implementation of kube-scheduler's core, with its stress-test harness"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Feature gates over kube-scheduler v1.35's defaults, as upstream's flag takes them:
    /// `Name=bool,...`, repeatable (the later value of a gate wins) (`ksched feature-gates`
    /// lists them). Every command honours them; an unknown or locked gate, or a value ksched
    /// does not model, is an error.
    #[arg(long, global = true, value_name = "NAME=BOOL,...", value_parser = feature_gates::check_flag, action = clap::ArgAction::Append)]
    feature_gates: Vec<String>,
    /// `ksched` with no subcommand is `ksched run` with these options.
    #[command(flatten)]
    run: run::RunArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Schedule pods onto a synthetic cluster (upstream scheduler_perf's SchedulingBasic by
    /// default: 5000 nodes, 1000 warm-up pods, 10000 measured pods) and print throughput and
    /// attempt latency.
    Run(run::RunArgs),
    /// Replay upstream kube-scheduler's recorded decisions (golden vectors) and print how
    /// often ours match: feasible sets, rejecting plugins, per-plugin scores, totals, picks.
    /// Exits 1 when anything differs.
    Golden(golden::GoldenArgs),
    /// Schedule the pending pods of Kubernetes manifests (nodes, pods, PriorityClasses,
    /// PodDisruptionBudgets, namespaces) and print where each went or why not, and any
    /// preemption. Exits 0 when pods are unschedulable (that is an answer), 2 on bad input.
    Simulate(simulate::SimulateArgs),
    /// Explain one pod's scheduling cycle: every PreFilter / Filter plugin's verdict per node,
    /// every Score plugin's raw, normalized and weighted score, the pick, and preemption.
    Explain(explain::ExplainArgs),
    /// Run the suite of upstream scheduler_perf workloads (5000 nodes by default), each in its
    /// own process, with throughput, attempt latency, peak memory and the limit-probe ratio;
    /// writes dataItems JSON and a Markdown table under --out.
    Bench(bench::BenchArgs),
    /// Compare instructions per pod (callgrind) and time per pod ÷ probe against a baseline;
    /// exits 1 on a regression beyond tolerance.
    Gate(gate::GateArgs),
    /// Drive a churning cluster with injected faults (failed and delayed binds; late, lost and
    /// duplicated informer events; node churn) for a duration, checking the cache, the queue
    /// and a ledger of every pod after each step. Exits 1 on any violation or lost pod.
    Soak(soak::SoakArgs),
    /// Schedule the same cluster and pods (manifests, a built-in workload or a workload file)
    /// under two or more configurations and compare them side by side: outcomes, utilization
    /// and imbalance, fragmentation, spread, speed, and the pods that moved and why. Exits 1
    /// when a --fail-if expression holds, 2 on bad input.
    Compare(compare::CompareArgs),
    /// Run a plan's matrix of scenarios (configs × workloads × cluster sizes × seeds), each in
    /// its own process, resumably, and merge the results into one table / JSON / CSV / HTML;
    /// or run one scenario (`--index`), merge result lines (`sweep merge`), or write the
    /// Kubernetes Job that runs the plan on a cluster (`--emit-k8s`).
    Sweep(sweep::SweepArgs),
    /// Replay a trace (ksched's trace format, Kubernetes audit logs, Alibaba's GPU cluster
    /// trace) on simulated time: where and when every pod was bound, how it ended, whether
    /// ksched chose the recorded scheduler's node, drains (--drain), and the run over time
    /// (--timeline JSON, --html plots). Exits 2 on bad input.
    Replay(replay::ReplayArgs),
    /// The fewest nodes of a node template (or the cheapest of several, with prices) for
    /// which a workload (manifests or a trace) schedules completely, or with at most N pods
    /// pending (for longer than T): a bisection over simulations run on every core. Prints
    /// the answer, the runs that bracket it, and why a pod stays pending with one node fewer.
    /// Exits 1 when no count up to --max-nodes passes, 2 on bad input.
    Capacity(capacity::CapacityArgs),
    /// List the feature gates ksched knows: each one's v1.35 default, stage, and what it does
    /// in ksched (modelled both ways, default only, or no effect on decisions), with the
    /// values `--feature-gates` sets.
    FeatureGates(feature_gates::FeatureGatesArgs),
    /// Print a shell completion script for ksched (`ksched completions bash >
    /// ~/.local/share/bash-completion/completions/ksched`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

impl Cli {
    /// Every `--feature-gates` in order, as upstream merges its repeated flag: one setting.
    fn gates(&self) -> Result<ksched_engine::features::FeatureGates, String> {
        feature_gates::parse_flag(&self.feature_gates.join(","))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let gates = cli.gates().unwrap_or_else(|e| {
        let msg = format!("invalid value for '--feature-gates <NAME=BOOL,...>': {e}");
        <Cli as clap::CommandFactory>::command().error(clap::error::ErrorKind::ValueValidation, msg).exit()
    });
    let args = match cli.command {
        Some(Command::Run(a)) => a,
        Some(Command::Golden(g)) => {
            return exit("ksched golden", golden::golden(&golden::GoldenArgs { gates, ..g }).map_err(|e| e.to_string()))
        }
        Some(Command::Simulate(mut a)) => {
            a.input.gates = gates;
            return exit("ksched simulate", simulate::run(&a).map(|()| true));
        }
        Some(Command::Explain(mut a)) => {
            a.input.gates = gates;
            return exit("ksched explain", explain::run(&a).map(|()| true));
        }
        Some(Command::Bench(b)) => {
            return exit("ksched bench", bench::bench(&bench::BenchArgs { gates, ..b }).map(|()| true))
        }
        Some(Command::Gate(g)) => return exit("ksched gate", gate::gate(&gate::GateArgs { gates, ..g })),
        Some(Command::Soak(s)) => return exit("ksched soak", soak::soak(&soak::SoakArgs { gates, ..s })),
        Some(Command::Compare(c)) => return exit("ksched compare", compare::run(&compare::CompareArgs { gates, ..c })),
        Some(Command::Sweep(s)) => return exit("ksched sweep", sweep::sweep(&sweep::SweepArgs { gates, ..s })),
        Some(Command::Replay(r)) => return exit("ksched replay", replay::run(&replay::ReplayArgs { gates, ..r })),
        Some(Command::Capacity(c)) => {
            return exit("ksched capacity", capacity::run(&capacity::CapacityArgs { gates, ..c }))
        }
        Some(Command::FeatureGates(f)) => {
            print!("{}", feature_gates::list(&f, &gates));
            return ExitCode::SUCCESS;
        }
        Some(Command::Completions { shell }) => {
            print!("{}", completions(shell));
            return ExitCode::SUCCESS;
        }
        None => cli.run,
    };
    let args = run::RunArgs { gates, ..args };
    match run::run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ksched: {e}");
            ExitCode::from(2)
        }
    }
}

/// The completion script of `ksched` for `shell`.
fn completions(shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "ksched", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// 0 on Ok(true), 1 on Ok(false) (a check failed), 2 with the message on Err.
fn exit(cmd: &str, r: Result<bool, String>) -> ExitCode {
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("{cmd}: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_every_shell_names_the_subcommands() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
            clap_complete::Shell::PowerShell,
            clap_complete::Shell::Elvish,
        ] {
            let script = completions(shell);
            for sub in ["run", "golden", "simulate", "explain", "bench", "gate", "soak", "completions"] {
                assert!(script.contains(sub), "{shell}: no {sub:?} in the script");
            }
            assert!(script.contains("workload-name"), "{shell}: flags are completed too");
        }
    }

    /// Parses `argv` as ksched does and checks the flags that apply only to some inputs: the
    /// error (clap's or the run check's) or nothing.
    fn check(argv: &[&str]) -> Result<(), String> {
        let cli = Cli::try_parse_from(std::iter::once("ksched").chain(argv.iter().copied())).map_err(|e| {
            assert_eq!(e.exit_code(), 2, "{argv:?}: clap exits 2 on a usage error");
            e.to_string()
        })?;
        match cli.command {
            Some(Command::Run(a)) => a.check_flags(),
            None => cli.run.check_flags(),
            _ => Ok(()),
        }
    }

    #[test]
    fn flags_not_for_the_input_are_errors_naming_the_flag() {
        let file = "w/performance-config.yaml";
        let cases: &[(&[&str], Option<&str>)] = &[
            (&["run", "--workload", "basic", "--nodes", "10", "--pods", "5", "--warmup-pods", "1"], None),
            (
                &["run", "--workload", file, "--test", "T", "--workload-name", "W", "--label", "x", "--max-count", "9"],
                None,
            ),
            (&["--workload", file, "--seed", "3", "--format", "json", "--parallelism", "2"], None),
            (&["run", "--workload", file, "--nodes", "10"], Some("--nodes does not apply to a workload file")),
            (&["run", "--workload", file, "--pods", "10"], Some("--pods does not apply to a workload file")),
            (&["--workload", file, "--warmup-pods", "1"], Some("--warmup-pods does not apply to a workload file")),
            (&["run", "--workload", file, "--config", "c.yaml"], Some("--config does not apply to a workload file")),
            (
                &["run", "--workload", file, "--percentage-of-nodes-to-score", "5"],
                Some("--percentage-of-nodes-to-score does not apply to a workload file"),
            ),
            (&["run", "--test", "T"], Some("--test does not apply to a built-in workload")),
            (&["run", "--workload", "basic", "--workload-name", "W"], Some("--workload-name does not apply")),
            (&["--label", "performance"], Some("--label does not apply to a built-in workload")),
            (&["run", "--max-count", "5"], Some("--max-count does not apply to a built-in workload")),
            (&["--nodes", "5", "soak"], Some("the subcommand 'soak' cannot be used with '--nodes <NODES>'")),
            (&["soak", "--steps", "3"], None),
            (&["soak", "--steps", "3", "--duration", "5s"], Some("cannot be used with '--duration <DURATION>'")),
            (&["explain", "p", "-f", "x", "--all", "--limit", "3"], Some("'--all' cannot be used with")),
            (&["bench", "--no-probe"], Some("the following required arguments were not provided")),
            (&["bench", "--child", "--no-probe", "--only", "basic"], None),
            (&["gate", "--update-baseline", "--tolerance", "5%"], Some("'--update-baseline' cannot be used with")),
            (&["gate", "--no-callgrind", "--callgrind-runs", "2"], Some("'--no-callgrind' cannot be used with")),
            (&["gate", "--no-callgrind", "--no-time"], Some("'--no-callgrind' cannot be used with")),
            (&["gate", "--no-time", "--repetitions", "3"], Some("'--no-time' cannot be used with")),
            (&["gate", "--no-time", "--callgrind-runs", "3"], None),
        ];
        for (argv, want) in cases {
            match (check(argv), want) {
                (Ok(()), None) => {}
                (Err(e), Some(w)) => assert!(e.contains(w), "{argv:?}: {e:?} does not say {w:?}"),
                (got, want) => panic!("{argv:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// `run --help` (short and long), the error for an unknown workload and the README's
    /// table name the code's list of built-in workloads, and nothing else.
    #[test]
    fn workload_lists_in_help_error_and_readme_are_the_codes() {
        let names: Vec<String> = synth::Workload::ALL.iter().map(|w| w.cli_name()).collect();
        let list = format!("({})", names.join(", "));
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut cli = <Cli as clap::CommandFactory>::command();
        for sub in ["run", "compare"] {
            let cmd = cli.find_subcommand_mut(sub).unwrap();
            let short = words(&cmd.render_help().to_string());
            assert!(short.contains(&list), "{sub} -h does not list {list}:\n{short}");
        }
        let long = words(&cli.find_subcommand_mut("run").unwrap().render_long_help().to_string());
        assert!(long.contains(&list), "{long}");
        for w in synth::Workload::ALL {
            // Each name with the first words of what it runs.
            let upstream = w.upstream_name();
            assert!(long.contains(&format!("{} {upstream}", w.cli_name())), "run --help: {} {upstream}", w.cli_name());
        }
        let err = run::parse_workload("nope").unwrap_err();
        assert!(err.contains(&list), "{err}");
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
        let row = readme.lines().find(|l| l.starts_with("| `--workload` |")).expect("README: the --workload row");
        let listed: Vec<&str> = row.split('`').skip(1).step_by(2).filter(|t| *t != "--workload").collect();
        assert_eq!(listed, names, "README's --workload row");
    }

    /// `--feature-gates` is one global flag: after any subcommand (or with none), parsed by
    /// upstream's rules, and handed to the command.
    #[test]
    fn feature_gates_flag_on_every_command() {
        let gates = |argv: &[&str]| {
            Cli::try_parse_from(std::iter::once("ksched").chain(argv.iter().copied()))
                .map_err(|e| e.to_string())
                .and_then(|c| c.gates())
                .map(|g| g.to_flag())
        };
        let flag = "PodLevelResources=false";
        for sub in [
            &["run"][..],
            &["golden", "d"],
            &["simulate", "-f", "x"],
            &["explain", "p", "-f", "x"],
            &["bench"],
            &["gate"],
            &["soak"],
            &["compare", "--config", "a", "--config", "b", "-f", "x"],
            &["sweep", "plan.yaml"],
            &["replay", "t.json"],
            &["feature-gates"],
        ] {
            let after: Vec<&str> = sub.iter().copied().chain(["--feature-gates", flag]).collect();
            assert_eq!(gates(&after).as_deref(), Ok(flag), "{after:?}");
            // Before a subcommand, like every option of `ksched` alone (the run's), it is a
            // usage error.
            let before: Vec<&str> = ["--feature-gates", flag].into_iter().chain(sub.iter().copied()).collect();
            assert!(gates(&before).is_err_and(|e| e.contains("cannot be used with")), "{before:?}");
            assert_eq!(gates(sub).as_deref(), Ok(""), "{sub:?}: v1.35's defaults without the flag");
        }
        assert_eq!(gates(&["--feature-gates", flag]).as_deref(), Ok(flag), "ksched alone is run");
        // Repeated, as upstream's: the flags merge and a gate's later value wins.
        let twice =
            ["simulate", "-f", "x", "--feature-gates", flag, "--feature-gates", "SchedulerPopFromBackoffQ=false"];
        assert_eq!(gates(&twice).as_deref(), Ok("PodLevelResources=false,SchedulerPopFromBackoffQ=false"));
        let back = ["run", "--feature-gates", flag, "--feature-gates", "PodLevelResources=true"];
        assert_eq!(gates(&back).as_deref(), Ok(""), "the later value wins");
        for (bad, says) in [
            ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
            ("SchedulerQueueingHints=false", "locked to true"),
            ("NodeDeclaredFeatures=true", "not modelled by ksched"),
        ] {
            let e = gates(&["run", "--feature-gates", bad]).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// `--preemption-api-delay` on every command that simulates a cluster, 0s without it.
    #[test]
    fn preemption_api_delay_flag_on_every_simulating_command() {
        use std::time::Duration;
        let delay = |argv: &[&str]| {
            let cli = Cli::try_parse_from(std::iter::once("ksched").chain(argv.iter().copied()))
                .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let api = match cli.command {
                Some(Command::Simulate(a)) => a.input.api,
                Some(Command::Explain(a)) => a.input.api,
                Some(Command::Replay(a)) => a.run.api,
                Some(Command::Capacity(a)) => a.run.api,
                Some(Command::Compare(a)) => a.api,
                Some(Command::Run(a)) => a.api,
                Some(Command::Sweep(a)) => a.api,
                None => cli.run.api,
                _ => panic!("{argv:?}"),
            };
            api.preemption_api_delay
        };
        for sub in [
            &["simulate", "-f", "x"][..],
            &["explain", "p", "-f", "x"],
            &["replay", "t.json"],
            &["capacity", "-t", "n.yaml", "-f", "x"],
            &["compare", "--config", "a", "--config", "b", "-f", "x"],
            &["run"],
            &["--workload", "preemption"],
            &["sweep", "plan.yaml"],
            &["sweep", "plan.yaml", "--index", "3"],
        ] {
            assert_eq!(delay(sub), Duration::ZERO, "{sub:?}");
            let with: Vec<&str> = sub.iter().copied().chain(["--preemption-api-delay", "1m30s"]).collect();
            assert_eq!(delay(&with), Duration::from_secs(90), "{with:?}");
        }
        let bad = Cli::try_parse_from(["ksched", "simulate", "-f", "x", "--preemption-api-delay", "soon"]);
        assert!(bad.is_err_and(|e| e.to_string().contains("--preemption-api-delay")));
    }

    /// Assumed pods never expire on any path (upstream's 0) unless soak's
    /// `--assumed-pod-ttl` asks for the seeds' cleaner.
    #[test]
    fn assumed_pod_ttl_is_upstreams_on_every_path() {
        use std::time::Duration;
        let soak_ttl = |argv: &[&str]| match Cli::try_parse_from(["ksched", "soak"].iter().chain(argv)) {
            Ok(Cli { command: Some(Command::Soak(a)), .. }) => a.assumed_pod_ttl,
            _ => panic!("{argv:?} does not parse"),
        };
        let synth = || {
            let q = ksched_engine::queue::QueueConfig::new();
            let sim = synth::prepare(
                synth::Workload::Basic,
                2,
                1,
                1,
                ksched_engine::framework::Profile::default_profile(),
                q,
                1,
                &mut front_ends::NoHooks,
            )
            .unwrap();
            sim.cache.assumed_pod_ttl()
        };
        let manifests = || {
            let mut m = ksched_k8s::manifest::Manifests::new();
            m.read_str("n.yaml", &ksched_k8s::testing::KubectlDump::default().node("n1", "4").yaml()).unwrap();
            let loaded = crate::load::LoadSim::load_full(
                &m,
                ksched_engine::framework::Profile::default_profile(),
                Default::default(),
                1,
            )
            .unwrap();
            loaded.sim.cache.assumed_pod_ttl()
        };
        let cases: Vec<(&str, Duration, Duration)> = vec![
            ("soak", soak_ttl(&[]), Duration::ZERO),
            ("soak --assumed-pod-ttl 30s", soak_ttl(&["--assumed-pod-ttl", "30s"]), Duration::from_secs(30)),
            ("run / compare / bench (synthesized)", synth(), Duration::ZERO),
            ("simulate / explain / compare (manifests)", manifests(), Duration::ZERO),
            ("engine default", ksched_engine::cache::Cache::upstream().assumed_pod_ttl(), Duration::ZERO),
        ];
        for (path, got, want) in cases {
            assert_eq!(got, want, "{path}");
        }
    }
}
