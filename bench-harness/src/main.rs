//! `ksched`: schedule synthetic clusters with ksched's engine and report how fast.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod golden;
mod run;
mod soak;

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
    /// Drive a churning cluster with injected faults (failed and delayed binds; late, lost and
    /// duplicated informer events; node churn) for a duration, checking the cache, the queue
    /// and a ledger of every pod after each step. Exits 1 on any violation or lost pod.
    Soak(soak::SoakArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Run(a)) => a,
        Some(Command::Soak(s)) => return exit_code("ksched soak", soak::soak(&s)),
        Some(Command::Golden(g)) => return exit_code("ksched golden", golden::golden(&g)),
        None => cli.run,
    };
    match run::run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ksched: {e}");
            ExitCode::from(2)
        }
    }
}

/// 0 when the check passed, 1 when it found problems, 2 when it could not run.
fn exit_code(what: &str, r: Result<bool, String>) -> ExitCode {
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("{what}: {e}");
            ExitCode::from(2)
        }
    }
}
