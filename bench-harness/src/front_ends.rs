//! One workload through every front end of the driver: the same PreemptionBasic-shaped
//! cluster (N nodes of 4 CPU, four 900m low-priority pods per node, then one 3000m
//! priority-10 preemptor per node) run as a built-in workload (`ksched bench`'s child, the
//! measured phase `ksched run` drives too), as a workload file and as `ksched simulate`
//! manifests must report the same counts: N preemptors scheduled, N unschedulable attempts
//! (each preemptor fails once and nominates), 3N victims.

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
