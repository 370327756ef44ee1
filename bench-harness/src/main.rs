//! `ksched`: schedule synthetic clusters with ksched's engine and report how fast.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod explain;
mod golden;
mod metrics;
mod perf_file;
mod report;
mod run;
mod simulate;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "ksched",
    version,
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Run(a)) => a,
        Some(Command::Golden(g)) => {
            return match golden::golden(&g) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("ksched golden: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Some(Command::Simulate(a)) => return exit("ksched simulate", simulate::run(&a)),
        Some(Command::Explain(a)) => return exit("ksched explain", explain::run(&a)),
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

/// 0, or 2 after printing the error.
fn exit(command: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{command}: {e}");
            ExitCode::from(2)
        }
    }
}
