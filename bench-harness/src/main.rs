//! `ksched`: schedule synthetic clusters with ksched's engine and report how fast.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod explain;
#[cfg(test)]
mod front_ends;
mod gate;
mod golden;
mod metrics;
mod perf_file;
mod probe;
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
    /// Run a plan's matrix of scenarios (configs × workloads × cluster sizes × seeds), each in
    /// its own process, resumably, and merge the results into one table / JSON / CSV / HTML;
    /// or run one scenario (`--index`), merge result lines (`sweep merge`), or write the
    /// Kubernetes Job that runs the plan on a cluster (`--emit-k8s`).
    Sweep(sweep::SweepArgs),
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
        Some(Command::Sweep(s)) => return exit("ksched sweep", sweep::sweep(&s)),
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
