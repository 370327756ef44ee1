//! What the front ends (`simulate`'s manifests, built-in workloads, workload files) offer a
//! caller that drives one of them and looks at the result (`ksched compare`): [`RunHooks`],
//! called at the start of the run, on every attempt and at its end, whatever the input.
//!
//! The tests check that one workload through every front end of the driver (the same
//! PreemptionBasic-shaped cluster as a built-in workload, a workload file and manifests)
//! reports the same counts.

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
    /// Once, after the last attempt, with the simulation as the run left it (also when a
    /// workload failed part-way).
    fn finished(&mut self, _sim: &mut Simulation) {}
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
}

#[cfg(test)]
mod tests {
    use ksched_engine::framework::Profile;
    use ksched_engine::queue::QueueConfig;
    use ksched_k8s::perf_workload::LoadOptions;

    use crate::perf_file::exec::Options;
    use crate::perf_file::{run_file, Selection};
    use crate::synth::Workload;

    #[test]
    fn front_ends_small_preemption_workload_report_the_same_counts() {
        for nodes in [3usize, 8] {
            // (scheduled preemptors, unschedulable attempts, preemptions, victims)
            let want = (nodes, nodes, nodes, 3 * nodes);

            // Built-in workload: warm-up (4 per node), then the measured preemptors.
            let b = crate::bench::run_one(Workload::Preemption, nodes, 1.0, 1, false).unwrap();
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
        }
    }
}
