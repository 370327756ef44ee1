//! DefaultPreemption's dry run on one node (`select_victims`): remove every lower-priority pod
//! from a copy of the node, check the preemptor fits, put pods back one at a time while it
//! still fits. Guards the cost per candidate node, which a preempting cycle pays up to 10% of
//! the cluster's nodes times (PreemptionBasic spends ~40% of its time here): the node copy,
//! the filter re-runs per reprieved pod, no allocation beyond the result.
//!
//! * `preemption_dry_run/4_victims_of_4`: PreemptionBasic's node (four 900m pods, a 3000m
//!   preemptor: three go, one is reprieved).
//! * `preemption_dry_run/100_pods`: a node with 100 pods of 35m; the preemptor needs 3000m, so
//!   most of the 100 are tried for a reprieve.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ksched_engine::api::{Node, Pod, ResourceName::*, Sym, LABEL_HOSTNAME};
use ksched_engine::cache::Cache;
use ksched_engine::framework::plugins::default_preemption::victims::Scratch;
use ksched_engine::framework::plugins::default_preemption::{following_pods, select_victims, DryRun};
use ksched_engine::framework::runtime::{active_filters, run_pre_filter, NominatedPods, Overlay};
use ksched_engine::framework::{CycleState, Profile};

fn dry_run(c: &mut Criterion) {
    let mut g = c.benchmark_group("preemption_dry_run");
    // (name, pods on the node, CPU each in millicores, victims expected)
    for (name, pods, cpu, victims) in [("4_victims_of_4", 4usize, 900i64, 3usize), ("100_pods", 100, 35, 72)] {
        let cache = Cache::new(Duration::from_secs(30));
        cache.add_node(Node::builder("n").resources(4000, 32 << 30, 110).label(LABEL_HOSTNAME, "n").build()).unwrap();
        for i in 0..pods {
            let p = Pod::builder(&format!("low-{i}")).container("pause", &[(Cpu, cpu), (Memory, 100 << 20)]).build();
            cache.add_pod(&p.with_node(Sym::new("n"))).unwrap();
        }
        let snapshot = cache.update_snapshot();
        let profile = Profile::default_profile();
        let pod =
            Pod::builder("preemptor").container("pause", &[(Cpu, 3000), (Memory, 500 << 20)]).priority(10).build();
        let mut state = CycleState::new();
        run_pre_filter(&profile, &mut state, &pod, &snapshot).unwrap();
        let filters = active_filters(&profile, &state);
        let overlay = Overlay::new(&profile, &state, &filters);
        let nominated = NominatedPods::default();
        let following = following_pods(&filters);
        let dry = DryRun {
            filters: &filters,
            following: &following,
            overlay: &overlay,
            state: &state,
            pod: &pod,
            snapshot: &snapshot,
            nominated: &nominated,
            pdbs: &snapshot.objects().pdbs,
        };
        let node = snapshot.get(Sym::new("n")).unwrap();
        let mut scratch = Scratch::default();
        let got = select_victims(&dry, node, &mut scratch).unwrap().victims.pods.len();
        assert_eq!(got, victims, "{name}: victims");
        g.bench_function(name, |b| b.iter(|| select_victims(&dry, node, &mut scratch)));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = dry_run
}
criterion_main!(benches);
