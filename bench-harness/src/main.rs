//! `ksched`: schedule synthetic clusters with ksched's engine and report how fast.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod golden;
mod run;
mod synth;

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
