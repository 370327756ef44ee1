//! `ksched`: schedule synthetic clusters with ksched's engine and report how fast.
//!
//! Arrows (kept by `tests/layering.rs`): this crate wires the others. It imports
//! `ksched-engine`, `ksched-sim` and `ksched-k8s`; none of them imports it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod capacity;
mod compare;
mod explain;
mod front_ends;
mod gate;
mod golden;
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
    /// Print a shell completion script for ksched (`ksched completions bash >
    /// ~/.local/share/bash-completion/completions/ksched`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Run(a)) => a,
        Some(Command::Golden(g)) => return exit("ksched golden", golden::golden(&g).map_err(|e| e.to_string())),
        Some(Command::Simulate(a)) => return exit("ksched simulate", simulate::run(&a).map(|()| true)),
        Some(Command::Explain(a)) => return exit("ksched explain", explain::run(&a).map(|()| true)),
        Some(Command::Bench(b)) => return exit("ksched bench", bench::bench(&b).map(|()| true)),
        Some(Command::Gate(g)) => return exit("ksched gate", gate::gate(&g)),
        Some(Command::Soak(s)) => return exit("ksched soak", soak::soak(&s)),
        Some(Command::Compare(c)) => return exit("ksched compare", compare::run(&c)),
        Some(Command::Sweep(s)) => return exit("ksched sweep", sweep::sweep(&s)),
        Some(Command::Replay(r)) => return exit("ksched replay", replay::run(&r)),
        Some(Command::Capacity(c)) => return exit("ksched capacity", capacity::run(&c)),
        Some(Command::Completions { shell }) => {
            print!("{}", completions(shell));
            return ExitCode::SUCCESS;
        }
        None => cli.run,
    };
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
            let loaded =
                m.load_full(ksched_engine::framework::Profile::default_profile(), Default::default(), 1).unwrap();
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
