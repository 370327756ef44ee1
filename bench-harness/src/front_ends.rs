//! What the front ends (`simulate`'s manifests, built-in workloads, workload files) offer a
//! caller that drives one of them and looks at the result (`ksched compare`): [`RunHooks`],
//! called at the start of the run, on every attempt and at its end, whatever the input.
//!
//! The tests run one workload through every front end of the driver: the same
//! PreemptionBasic-shaped cluster (N nodes of 4 CPU, four 900m low-priority pods per node, then
//! one 3000m priority-10 preemptor per node) run as `ksched run`'s built-in workload, as `ksched
//! bench`'s child, as a workload file, as `ksched simulate` manifests and through the soak's
//! steps must report the same counts: N preemptors scheduled, N unschedulable attempts (each
//! preemptor fails once and nominates), 3N victims.

use ksched_engine::framework::pick::TieBreak;
use ksched_engine::framework::Profiles;
use ksched_engine::scheduler::CycleOutcome;
use ksched_sim::simulation::Observer;
use ksched_sim::Simulation;

/// Hooks a front end calls around the one simulation it runs. Every method defaults to doing
/// nothing.
pub trait RunHooks {
    /// Once, after the simulation is built and before its first attempt (e.g. to install a
    /// cycle observer on its scheduler).
    fn started(&mut self, _sim: &mut Simulation) {}
    /// Every attempt of the run, warm-up and setup phases included, with its wall time in ns.
    fn attempt(&mut self, _outcome: &CycleOutcome, _ns: u64) {}
    /// Just before a popped pod's cycle runs, with the simulation as that cycle finds it
    /// (where the front end calls it: `simulate`'s manifests).
    fn before_cycle(&mut self, _sim: &Simulation, _pod: &ksched_engine::api::Pod) {}
    /// Just before the simulated clock moves on (where the front end calls it, as
    /// `before_cycle`).
    fn clock_moving(&mut self, _sim: &Simulation) {}
    /// Once, after the last attempt, with the simulation as the run left it (also when a
    /// workload failed part-way).
    fn finished(&mut self, _sim: &mut Simulation) {}
}

/// `--preemption-api-delay` (the commands that simulate a cluster: run, simulate, explain,
/// replay, capacity, compare, sweep).
#[derive(clap::Args, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreemptionApiArgs {
    /// Simulated time between the cycle that decides a preemption and the deletion of its
    /// victims (SchedulerAsyncPreemption, on by default: upstream's API calls, made while other
    /// pods' cycles run; the preemptor waits, nominated, until its victims are gone). 0s (the
    /// default): right after that cycle. With the gate off the victims are deleted within the
    /// cycle, whatever this says.
    #[arg(long, value_name = "DURATION", value_parser = parse_api_delay, default_value = "0s")]
    pub preemption_api_delay: std::time::Duration,
}

fn parse_api_delay(s: &str) -> Result<std::time::Duration, String> {
    ksched_engine::util::duration::parse_cli_duration(s)
}

impl PreemptionApiArgs {
    /// The queue configuration the simulation's scheduler takes the delay from; a delay its
    /// gates make moot is said on stderr (once per process).
    pub fn apply(self, queue: &mut ksched_engine::queue::QueueConfig) {
        static NOTED: std::sync::Once = std::sync::Once::new();
        queue.preemption_api_delay = self.preemption_api_delay;
        if let Some(note) = self.moot(&queue.gates) {
            NOTED.call_once(|| eprintln!("ksched: {note}"));
        }
    }

    /// Why the delay changes nothing under `gates`, if it does not: with
    /// SchedulerAsyncPreemption off the victims are deleted within the cycle.
    pub fn moot(self, gates: &ksched_engine::features::FeatureGates) -> Option<&'static str> {
        use ksched_engine::features::Feature;
        (!self.preemption_api_delay.is_zero() && !gates.enabled(Feature::SchedulerAsyncPreemption)).then_some(
            "--preemption-api-delay does nothing with SchedulerAsyncPreemption=false: the victims are deleted \
             within the cycle that chose them",
        )
    }

    /// The arguments that give a child ksched process this delay (none for the default 0s, so
    /// a binary built before the flag existed still runs). Duration's `Debug` (`90s`, `1.5s`,
    /// `300ms`) is a Go duration the flag reads back.
    pub fn child_args(self) -> Vec<String> {
        if self.preemption_api_delay.is_zero() {
            return Vec::new();
        }
        vec!["--preemption-api-delay".into(), format!("{:?}", self.preemption_api_delay)]
    }
}

/// `--tie-break`: how a cycle picks among the nodes tied at the highest total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TieBreakArg {
    /// Upstream's pick: the root of its score heap over the nodes in the order the filter
    /// pass found them.
    #[default]
    Upstream,
    /// A uniform draw among the tied nodes, seeded by --seed.
    Random,
}

impl TieBreakArg {
    pub fn rule(self) -> TieBreak {
        match self {
            TieBreakArg::Upstream => TieBreak::Upstream,
            TieBreakArg::Random => TieBreak::Random,
        }
    }

    /// Sets the rule on every profile.
    pub fn apply(self, profiles: &mut Profiles) {
        profiles.iter_mut().for_each(|p| p.tie_break = self.rule());
    }
}

/// No hooks.
pub struct NoHooks;

impl RunHooks for NoHooks {}

/// The hooks' `attempt` as a driver observer.
pub struct HookObserver<'a>(pub &'a mut dyn RunHooks);

impl Observer for HookObserver<'_> {
    fn attempt(&mut self, outcome: &CycleOutcome, ns: u64) {
        self.0.attempt(outcome, ns);
    }

    fn before_cycle(&mut self, sim: &Simulation, pod: &ksched_engine::api::Pod) {
        self.0.before_cycle(sim, pod);
    }

    fn clock_moving(&mut self, sim: &Simulation, _to: ksched_engine::util::time::Timestamp) {
        self.0.clock_moving(sim);
    }
}

#[cfg(test)]
mod tests {
    use ksched_engine::features::FeatureGates;
    use ksched_engine::framework::Profile;
    use ksched_engine::queue::QueueConfig;
    use ksched_k8s::perf_workload::LoadOptions;

    use clap::Parser;
    use ksched_sim::soak::{FaultRates, Soak};

    use crate::perf_file::exec::Options;
    use crate::perf_file::{run_file, Selection};
    use crate::synth::Workload;

    #[test]
    fn front_ends_small_preemption_workload_report_the_same_counts() {
        for nodes in [3usize, 8] {
            // (scheduled preemptors, unschedulable attempts, preemptions, victims)
            let want = (nodes, nodes, nodes, 3 * nodes);

            // `ksched run --workload preemption --nodes N`: warm-up (4 per node), then the
            // measured preemptors.
            let args = RunCli::parse_from(["ksched", "--workload", "preemption", "--nodes", &nodes.to_string()]).run;
            let (r, violations) = crate::run::run_builtin(&args, Workload::Preemption).unwrap();
            assert!(violations.is_empty(), "{violations:?}");
            assert_eq!((r.warmup_pods, r.measured_pods), (4 * nodes, nodes), "{nodes}: run");
            assert_eq!((r.scheduled, r.unschedulable, r.preemptions, r.victims), want, "{nodes}: run");

            // `ksched bench`'s child: the same built-in workload.
            let b = crate::bench::run_one(Workload::Preemption, nodes, 1.0, 1, false, Default::default()).unwrap();
            assert_eq!((b.warmup_pods, b.measured_pods), (4 * nodes, nodes), "{nodes}");
            assert_eq!((b.scheduled, b.unschedulable_attempts), (want.0, want.1), "{nodes}: built-in");
            assert_eq!(b.attempts, want.0 + want.1, "{nodes}: built-in attempts");

            // Workload file: every op of the workload counted (the low-priority pods too).
            let path = crate::perf_file::tests::preemption_file(nodes);
            let r = &run_file(&path, &Selection::default(), &LoadOptions::default(), &Options::default()).unwrap()[0];
            let c = &r.counts;
            assert_eq!(
                (c.scheduled - 4 * nodes, c.unschedulable, c.preemptions, c.victims),
                want,
                "{nodes}: workload file"
            );

            // simulate: the low-priority pods already run (four per node, as the others packed
            // them), the preemptors are pending.
            let mut files = String::new();
            for n in 0..nodes {
                files += &crate::simulate::tests::node(&format!("n{n}"), "4", "");
                for i in 0..4 {
                    files += &format!(
                        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: low-{n}-{i}}}\nspec: {{nodeName: n{n}, terminationGracePeriodSeconds: 0, \
                         containers: [{{name: c, image: pause, resources: {{requests: {{cpu: 900m, memory: 500Mi}}}}}}]}}\n"
                    );
                }
            }
            for p in 0..nodes {
                files += &format!(
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: high-{p}}}\nspec: {{priority: 10, \
                     containers: [{{name: c, image: pause, resources: {{requests: {{cpu: 3000m, memory: 500Mi}}}}}}]}}\n"
                );
            }
            let m = crate::simulate::tests::manifests(&[("cluster.yaml", &files)]);
            let s = crate::simulate::simulate(&m, Profile::default_profile(), QueueConfig::new(), 1).unwrap().summary;
            let unschedulable_attempts = s.attempts as usize - s.scheduled;
            assert_eq!((s.scheduled, unschedulable_attempts, s.preemptions, s.victims), want, "{nodes}: simulate");

            // The soak's steps (no faults): the low-priority pods, then the preemptors.
            let mut soak =
                Soak::scripted(1, (0..nodes).map(|i| Workload::Preemption.node(i)).collect(), FaultRates::default())
                    .unwrap();
            for i in 0..4 * nodes {
                soak.create_pod(Workload::Preemption.pod(&format!("low-{i}"), false)).unwrap();
            }
            settle(&mut soak);
            assert_eq!(soak.attempts().scheduled, 4 * nodes, "{nodes}: soak warm-up");
            for i in 0..nodes {
                soak.create_pod(Workload::Preemption.pod(&format!("high-{i}"), true)).unwrap();
            }
            settle(&mut soak);
            let a = soak.attempts();
            assert_eq!((a.scheduled - 4 * nodes, a.unschedulable, a.preemptions, a.victims), want, "{nodes}: soak");
            let report = soak.finish();
            assert!(report.passed(), "{:?}", report.messages);
            assert_eq!((report.pods_pending, report.lost_pods), (0, 0), "{nodes}: soak");
        }
    }

    /// A delay with SchedulerAsyncPreemption off is said to do nothing; no delay, or the gate
    /// on, says nothing.
    #[test]
    fn preemption_api_delay_is_moot_without_async_preemption() {
        let off = FeatureGates::parse("SchedulerAsyncPreemption=false").unwrap();
        let delay = |secs| super::PreemptionApiArgs { preemption_api_delay: std::time::Duration::from_secs(secs) };
        assert!(delay(30).moot(&off).is_some_and(|n| n.contains("SchedulerAsyncPreemption=false")));
        assert_eq!(delay(0).moot(&off), None);
        assert_eq!(delay(30).moot(&FeatureGates::default()), None);
    }

    /// Soak steps until no pod is pending (a bounded number: a stuck pod fails the test).
    fn settle(soak: &mut Soak) {
        for _ in 0..1000 {
            if soak.pods_pending() == 0 {
                return;
            }
            soak.step();
        }
        panic!("pods still pending after 1000 soak steps: {}", soak.pods_pending());
    }

    #[derive(Parser)]
    struct RunCli {
        #[command(flatten)]
        run: crate::run::RunArgs,
    }
}
