//! `ksched soak`: the scheduler on a churning cluster with injected faults for a wall-clock
//! duration, checking after every step that nothing is lost or counted twice.

use std::time::{Duration, Instant};

use clap::Args;
use ksched_engine::util::duration::parse_cli_duration;
use ksched_sim::soak::{FaultRates, Soak, SoakConfig, SoakReport};

use crate::format::Format;
use crate::progress::Progress;

#[derive(Args, Debug, Clone)]
pub struct SoakArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    /// How long to churn, in wall time (`90s`, `10m`, `1h`; a bare number is seconds).
    #[arg(long, default_value = "60s", value_parser = parse_cli_duration, conflicts_with = "steps")]
    pub duration: Duration,
    /// Run exactly this many steps instead (replays a failure reported with its seed).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Seed of every random choice: churn, faults, tie-breaking.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Nodes at the start (4 CPU, 16Gi, 110 pods each); churn keeps the count near it.
    #[arg(long, default_value_t = 5000)]
    pub nodes: usize,
    /// Fraction of binds that fail (half of them after the API server applied the binding).
    #[arg(long)]
    pub bind_failure_rate: Option<f64>,
    /// Fraction of binds that take up to 2 s on the simulated clock.
    #[arg(long)]
    pub bind_delay_rate: Option<f64>,
    /// Fraction of informer events about bound pods delivered up to 45 s late (out of order).
    #[arg(long)]
    pub late_confirmation_rate: Option<f64>,
    /// Fraction of informer events about bound pods the watch loses (a relist recovers them).
    #[arg(long)]
    pub lost_confirmation_rate: Option<f64>,
    /// Fraction of informer events about bound pods delivered twice.
    #[arg(long)]
    pub duplicate_confirmation_rate: Option<f64>,
    /// Probability per step that a node is added, relabelled, tainted or removed.
    #[arg(long)]
    pub node_churn_rate: Option<f64>,
    /// Fraction of binds that find their pod deleted while it was assumed.
    #[arg(long)]
    pub delete_while_assumed_rate: Option<f64>,
    /// Every fault at its default rate (rates given explicitly still win).
    #[arg(long)]
    pub all_faults: bool,
    /// Expire assumed pods this long after their binding finished (the seeds' TTL cleaner).
    /// Default 0: never, as kube-scheduler since v1.23; a lost confirmation then waits for
    /// the relist.
    #[arg(long, default_value = "0s", value_parser = parse_cli_duration)]
    pub assumed_pod_ttl: Duration,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json]), default_value = "text")]
    pub format: Format,
}

impl SoakArgs {
    fn config(&self) -> SoakConfig {
        let mut c = SoakConfig::new(self.seed, self.nodes, self.rates());
        c.assumed_ttl = self.assumed_pod_ttl;
        c.gates = self.gates;
        c
    }

    fn rates(&self) -> FaultRates {
        let base = if self.all_faults { FaultRates::all() } else { FaultRates::default() };
        FaultRates {
            bind_failure: self.bind_failure_rate.unwrap_or(base.bind_failure),
            bind_delay: self.bind_delay_rate.unwrap_or(base.bind_delay),
            late_confirmation: self.late_confirmation_rate.unwrap_or(base.late_confirmation),
            lost_confirmation: self.lost_confirmation_rate.unwrap_or(base.lost_confirmation),
            duplicate_confirmation: self.duplicate_confirmation_rate.unwrap_or(base.duplicate_confirmation),
            node_churn: self.node_churn_rate.unwrap_or(base.node_churn),
            delete_while_assumed: self.delete_while_assumed_rate.unwrap_or(base.delete_while_assumed),
        }
    }
}

/// The command line that replays a run step for step.
fn replay_command(args: &SoakArgs, steps: u64) -> String {
    let r = args.rates();
    format!(
        "ksched soak --seed {} --nodes {} --steps {steps} --bind-failure-rate {} --bind-delay-rate {} \
         --late-confirmation-rate {} --lost-confirmation-rate {} --duplicate-confirmation-rate {} \
         --node-churn-rate {} --delete-while-assumed-rate {} --assumed-pod-ttl {}s{}",
        args.seed,
        args.nodes,
        r.bind_failure,
        r.bind_delay,
        r.late_confirmation,
        r.lost_confirmation,
        r.duplicate_confirmation,
        r.node_churn,
        r.delete_while_assumed,
        args.assumed_pod_ttl.as_secs_f64(),
        crate::feature_gates::child_args(&args.gates).iter().map(|a| format!(" {a}")).collect::<String>()
    )
}

/// Runs the soak; `Ok(false)` when it found violations or lost pods.
pub fn soak(args: &SoakArgs) -> Result<bool, String> {
    let rates = args.rates();
    let mut soak = Soak::new(args.config())?;
    let start = Instant::now();
    let mut last_note = start;
    let machine = args.format == Format::Json;
    let mut bar = match args.steps {
        Some(n) => Progress::stderr(machine, n, "{spinner} soak [{bar:40}] {pos}/{len} steps {msg}"),
        None => Progress::stderr(machine, args.duration.as_secs(), "{spinner} soak [{bar:40}] {pos}/{len} s {msg}"),
    };
    loop {
        let done = match args.steps {
            Some(n) => soak.steps() >= n,
            None => start.elapsed() >= args.duration,
        };
        if done {
            break;
        }
        soak.step();
        if !bar.is_hidden() {
            match args.steps {
                Some(_) => bar.set_position(soak.steps()),
                None => bar.set_position(start.elapsed().as_secs()),
            }
            bar.set_message(format!("({} steps, {} failures)", soak.steps(), soak.failures()));
        }
        if last_note.elapsed() >= Duration::from_secs(60) {
            last_note = Instant::now();
            bar.note(&format!(
                "ksched soak: {:.0} s, {} steps, {} failures so far (seed {})",
                start.elapsed().as_secs_f64(),
                soak.steps(),
                soak.failures(),
                args.seed
            ));
        }
    }
    bar.finish();
    let report = soak.finish();
    let wall = start.elapsed().as_secs_f64();
    let replay = replay_command(args, report.steps);
    match args.format {
        Format::Json => {
            let out = serde_json::json!({
                "report": &report,
                "rates": rates,
                "wall_seconds": wall,
                "passed": report.passed(),
                "replay": &replay,
            });
            println!("{}", serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?);
        }
        _ => print_text(&report, &rates, wall),
    }
    if !report.passed() {
        eprintln!(
            "ksched soak FAILED (seed {}): {} invariant violations, {} lost pods; replay with:\n  {replay}",
            report.seed, report.invariant_violations, report.lost_pods
        );
    }
    Ok(report.passed())
}

fn print_text(r: &SoakReport, rates: &FaultRates, wall: f64) {
    println!(
        "ksched soak: seed {}, {} nodes ({} at the end), {} steps in {wall:.1} s ({:.0} s simulated)",
        r.seed, r.nodes_at_start, r.nodes_at_end, r.steps, r.simulated_seconds
    );
    println!(
        "  fault rates    bind failure {}, bind delay {}, late {}, lost {}, duplicate {}, node churn {}, \
         delete while assumed {}",
        rates.bind_failure,
        rates.bind_delay,
        rates.late_confirmation,
        rates.lost_confirmation,
        rates.duplicate_confirmation,
        rates.node_churn,
        rates.delete_while_assumed
    );
    println!("  pods created   {:>10}", r.pods_created);
    println!("  pods bound     {:>10}", r.pods_bound);
    println!("  pods pending   {:>10}", r.pods_pending);
    for (why, n) in &r.pending_by_reason {
        println!("    {n:>10}  {why}");
    }
    println!("  pods deleted   {:>10}", r.pods_deleted);
    println!("  assumed pods expired {:>4}", r.assumed_pods_expired);
    let a = &r.attempts;
    println!(
        "  attempts       {} scheduled, {} unschedulable ({} preemptions, {} victims), {} bind failures",
        a.scheduled, a.unschedulable, a.preemptions, a.victims, a.bind_failures
    );
    let f = &r.faults;
    println!(
        "  binds          {} ok, {} failed ({} after being applied), {} delayed, {} pods deleted while assumed",
        f.binds, f.binds_failed, f.binds_applied_but_failed, f.binds_delayed, f.deleted_while_assumed
    );
    println!(
        "  informer       {} events delivered ({} refused by the cache), {} late, {} lost, {} duplicated; \
         {} relists repaired {}",
        f.events_delivered,
        f.events_refused,
        f.events_late,
        f.events_lost,
        f.events_duplicated,
        f.relists,
        f.relist_repairs
    );
    println!("  nodes          {} added, {} updated, {} removed", f.nodes_added, f.nodes_updated, f.nodes_removed);
    println!(
        "  victims        {} deleted by preemption, {} of them deleted early",
        f.victims_deleted, f.victims_deleted_early
    );
    println!("  invariant violations {:>4}", r.invariant_violations);
    println!("  lost pods      {:>10}", r.lost_pods);
    for m in &r.messages {
        println!("  ! {m}");
    }
    println!("  {}", if r.passed() { "PASSED" } else { "FAILED" });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_faults_fills_in_rates_not_given() {
        let args = SoakArgs {
            duration: Duration::ZERO,
            steps: Some(3),
            seed: 9,
            nodes: 3,
            bind_failure_rate: Some(0.5),
            bind_delay_rate: None,
            late_confirmation_rate: None,
            lost_confirmation_rate: None,
            duplicate_confirmation_rate: None,
            node_churn_rate: None,
            delete_while_assumed_rate: None,
            all_faults: true,
            assumed_pod_ttl: Duration::ZERO,
            format: Format::Json,
            gates: Default::default(),
        };
        let r = args.rates();
        assert_eq!(r, FaultRates { bind_failure: 0.5, ..FaultRates::all() });
        assert!(
            replay_command(&args, 3).starts_with("ksched soak --seed 9 --nodes 3 --steps 3 --bind-failure-rate 0.5")
        );
        assert!(soak(&args).unwrap(), "a 3-step soak on 3 nodes passes");
    }
}
