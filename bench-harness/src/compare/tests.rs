use super::*;
use crate::compare::expr::FailIf;
use crate::compare::metrics::{OwnerSpread, Stats};
use crate::simulate::tests::manifests;
use ksched_k8s::config;
use ksched_k8s::manifest::Manifests;

/// A configuration of `yaml` (a KubeSchedulerConfiguration), labelled `label`.
fn spec_of(label: &str, yaml: &str) -> ConfigSpec {
    let cfg = config::parse(yaml).unwrap_or_else(|e| panic!("{e}"));
    let mut profile = cfg.default_profile().clone();
    profile.parallelism = 1;
    ConfigSpec { label: label.into(), name: label.into(), profile, queue: cfg.queue_config() }
}

fn scoring(strategy: &str) -> String {
    format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n\
         - schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      \
         scoringStrategy:\n        type: {strategy}\n        resources: [{{name: cpu, weight: 1}}, {{name: memory, weight: 1}}]\n"
    )
}

fn least_and_most() -> Vec<ConfigSpec> {
    vec![spec_of("A", &scoring("LeastAllocated")), spec_of("B", &scoring("MostAllocated"))]
}

/// A node with `cpu` CPUs and as many GiB of memory, in `zone`.
fn node(name: &str, cpu: u32, zone: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, \
         topology.kubernetes.io/zone: {zone}}}}}\nstatus: {{allocatable: {{cpu: \"{cpu}\", memory: {cpu}Gi, pods: \"110\"}}}}\n"
    )
}

/// A pod requesting `cpu` and `memory`; `extra` is more YAML under `metadata` (e.g. labels)
/// and `spec` goes under `spec` (e.g. `nodeName: n1, `).
fn pod(name: &str, cpu: &str, memory: &str, metadata: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}{metadata}}}\nspec: {{{spec}containers: [{{name: c, image: pause, \
         resources: {{requests: {{cpu: \"{cpu}\", memory: {memory}}}}}}}]}}\n"
    )
}

/// The hand-checkable cluster: n1 (4 CPU / 4Gi) already runs a 1 CPU / 1Gi pod; n2, n3, n4
/// are empty with 8, 6 and 5 CPUs (and GiB). Then p1, p2, p3 (1 CPU / 1Gi each) and `big`
/// (7.5 CPU / 7.5Gi). Every pod asks CPU and memory in the nodes' ratio, so
/// BalancedAllocation scores every node alike and NodeResourcesFit alone decides.
///
/// LeastAllocated (the emptiest fraction wins; upstream's integer scores): p1 → n2 (87 vs
/// n3 83, n4 80, n1 50), p2 → n3 (83 vs n4 80, n2 75), p3 → n4 (80 vs n2 75, n3 66); `big`
/// then fits nowhere (7 CPUs free on n2 at most): pending.
/// MostAllocated (the fullest wins): p1, p2, p3 → n1 (50, 75, 100 against at most 20
/// elsewhere), which is then full; `big` fits on n2 alone.
fn four_nodes() -> Manifests {
    let cluster = node("n1", 4, "z1")
        + &node("n2", 8, "z1")
        + &node("n3", 6, "z2")
        + &node("n4", 5, "z2")
        + &pod("base", "1", "1Gi", "", "nodeName: n1, ");
    let pods = pod("p1", "1", "1Gi", "", "")
        + &pod("p2", "1", "1Gi", "", "")
        + &pod("p3", "1", "1Gi", "", "")
        + &pod("big", "7500m", "7680Mi", "", "");
    manifests(&[("cluster.yaml", &cluster), ("pods.yaml", &pods)])
}

fn args() -> CompareArgs {
    CompareArgs {
        configs: Vec::new(),
        profiles: Vec::new(),
        files: Vec::new(),
        recursive: false,
        strict: false,
        workload: None,
        nodes: 5000,
        pods: None,
        warmup_pods: None,
        file: crate::run::FileSelectionArgs {
            test: None,
            workload_name: None,
            labels: Vec::new(),
            max_count: 1_000_000,
        },
        seed: 1,
        tie_break: crate::front_ends::TieBreakArg::Upstream,
        parallelism: None,
        api: Default::default(),
        format: Format::Text,
        html: None,
        max_moved: 10,
        fail_if: Vec::new(),
        gates: Default::default(),
    }
}

fn manifests_input(m: Manifests) -> Input {
    Input::Manifests { manifests: Box::new(m), name: "test".into() }
}

fn four_node_report() -> CompareReport {
    compare(&manifests_input(four_nodes()), &least_and_most(), 1, 10, false).unwrap()
}

/// (pod, A's node, this configuration's node, deciding plugin) of each listed moved pod.
fn moved(c: &ConfigReport) -> Vec<(&str, &str, &str, Option<&str>)> {
    c.moved_pods
        .iter()
        .map(|m| (m.pod.as_str(), m.baseline_node.as_str(), m.node.as_str(), m.deciding_plugin.as_deref()))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn stats_eq(got: Stats, want: Stats) -> bool {
    [
        (got.mean, want.mean),
        (got.stddev, want.stddev),
        (got.min, want.min),
        (got.max, want.max),
        (got.p10, want.p10),
        (got.p90, want.p90),
        (got.range, want.range),
    ]
    .iter()
    .all(|(a, b)| close(*a, *b))
}

#[test]
fn compare_most_allocated_packs_four_nodes_onto_fewer_than_least_allocated() {
    let r = four_node_report();
    let (a, b) = (&r.configs[0], &r.configs[1]);
    // (scheduled, pending, nodes in use, non-empty)
    assert_eq!((a.scheduled, a.pending, a.nodes_in_use, a.nodes_non_empty), (3, 1, 3, 4));
    assert_eq!((b.scheduled, b.pending, b.nodes_in_use, b.nodes_non_empty), (4, 0, 2, 2));
    assert_eq!(a.pending_by_reason, [("Insufficient cpu".to_owned(), 1), ("Insufficient memory".to_owned(), 1)].into());
    // A: n1 1/4, n2 1/8, n3 1/6, n4 1/5 (memory alike); B: n1 4/4, n2 7.5/8, n3 and n4 empty.
    let sd = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
    };
    let a_use = [0.25, 0.125, 1.0 / 6.0, 0.2];
    let want_a = Stats {
        mean: a_use.iter().sum::<f64>() / 4.0,
        stddev: sd(&a_use),
        min: 0.125,
        max: 0.25,
        p10: 0.125,
        p90: 0.25,
        range: 0.125,
    };
    let b_use = [1.0, 0.9375, 0.0, 0.0];
    let want_b = Stats { mean: 1.9375 / 4.0, stddev: sd(&b_use), min: 0.0, max: 1.0, p10: 0.0, p90: 1.0, range: 1.0 };
    for (c, want) in [(a, want_a), (b, want_b)] {
        assert!(stats_eq(c.cpu, want), "{} cpu: {:?} want {want:?}", c.label, c.cpu);
        assert!(stats_eq(c.memory, want), "{} memory: {:?} want {want:?}", c.label, c.memory);
    }
    assert!((want_a.stddev - 0.045_785_9).abs() < 1e-6);
    // Fragmentation. A: `big` (7500m / 7.5Gi) is pending; free CPUs 3, 7, 5, 4: none fits a
    // node, while 19 CPUs free in total would hold 2. B: nothing pending, the most common
    // shape is 1 CPU / 1Gi (3 pods); free 0, 0.5, 6, 5: 11 fit, as the totals (11.5) allow.
    let fa = a.fragmentation.clone().unwrap();
    assert_eq!((fa.shape.cpu_milli, fa.shape.memory_bytes, fa.shape_of.as_str()), (7500, 7680 << 20, "pending"));
    assert_eq!((fa.fit_individually, fa.fit_by_totals), (0, 2));
    assert!(close(fa.fragmentation, 1.0));
    // The whole cluster (n1's pod bound before the run holds its CPU): 11 fit; over the run's
    // pods alone (n1's room is 4 CPUs less the run's): 12.
    let fb = b.cluster_fragmentation.clone().unwrap();
    assert_eq!((fb.shape.cpu_milli, fb.shape.memory_bytes, fb.shape_of.as_str()), (1000, 1 << 30, "requested"));
    assert_eq!((fb.fit_individually, fb.fit_by_totals, fb.pods_of_shape), (11, 11, 3));
    assert!(close(fb.fragmentation, 0.0));
    let run_b = b.fragmentation.clone().unwrap();
    assert_eq!((run_b.fit_individually, run_b.fit_by_totals), (12, 12));

    // The moved pods, in A's attempt order, and why.
    assert_eq!((a.moved, b.moved), (0, 4));
    assert_eq!(
        moved(b),
        [
            ("default/p1", "n2", "n1", Some("NodeResourcesFit")),
            ("default/p2", "n3", "n1", Some("NodeResourcesFit")),
            ("default/p3", "n4", "n1", Some("NodeResourcesFit")),
            ("default/big", "(pending)", "n2", None),
        ]
    );
    // MostAllocated's integer scores: n1 50 / 75 / 100 against n2 12, n3 16, n4 20.
    let fit_diff: Vec<(i64, i64, i64)> = b.moved_pods[..3]
        .iter()
        .map(|m| {
            let d = m.score_diff.iter().find(|d| d.plugin == "NodeResourcesFit").unwrap();
            (d.chosen, d.baseline, d.diff)
        })
        .collect();
    assert_eq!(fit_diff, [(50, 12, 38), (75, 16, 59), (100, 20, 80)]);
    for m in &b.moved_pods[..3] {
        let balanced = m.score_diff.iter().find(|d| d.plugin == "NodeResourcesBalancedAllocation").unwrap();
        assert_eq!(balanced.diff, 0, "{}", m.pod);
    }
    assert_eq!(b.moved_pods[3].why, "pending under the first configuration: Insufficient cpu, Insufficient memory");
}

#[test]
fn compare_baseline_node_rejected_by_a_filter_names_that_filter() {
    // n1 (2 CPU / 2Gi) and n2 (4 CPU / 4Gi), empty; q1 (1 CPU), q2 (1.5 CPU), q3 (2 CPU).
    // A (LeastAllocated): q1 → n2 (75 vs 50), q2 → n2 (37 vs 25), q3 → n1 (n2 has 1.5 left).
    // B (MostAllocated): q1 → n1 (50 vs 25), q2 → n2 (n1 has 1 CPU left), q3 → n2: n1, A's
    // node, is rejected by NodeResourcesFit.
    let cluster = node("n1", 2, "z1") + &node("n2", 4, "z1");
    let pods = pod("q1", "1", "1Gi", "", "") + &pod("q2", "1500m", "1536Mi", "", "") + &pod("q3", "2", "2Gi", "", "");
    let m = manifests(&[("cluster.yaml", &cluster), ("pods.yaml", &pods)]);
    let r = compare(&manifests_input(m), &least_and_most(), 1, 10, false).unwrap();
    assert_eq!(
        moved(&r.configs[1]),
        [("default/q1", "n2", "n1", Some("NodeResourcesFit")), ("default/q3", "n1", "n2", Some("NodeResourcesFit"))]
    );
    let q3 = &r.configs[1].moved_pods[1];
    assert!(q3.why.starts_with("n1 rejected here by NodeResourcesFit: Insufficient cpu"), "{}", q3.why);
    assert!(q3.score_diff.is_empty());
}

#[test]
fn compare_profiles_of_one_file_are_compared_as_the_default_scheduler() {
    let dir = std::env::temp_dir().join(format!("ksched-compare-profiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("profiles.yaml");
    let pack = scoring("MostAllocated").replace("default-scheduler", "pack");
    let text = pack.replace("profiles:\n", "profiles:\n- schedulerName: spread\n");
    std::fs::write(&file, text).unwrap();
    let mut args = args();
    args.configs = vec![file.clone()];
    args.profiles = vec!["spread".into(), "pack".into()];
    let specs = load_configs(&args).unwrap();
    assert_eq!(specs.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(), ["A", "B"]);
    assert!(specs.iter().all(|s| s.profile.scheduler_name == "default-scheduler"));
    let r = compare(&manifests_input(four_nodes()), &specs, 1, 10, false).unwrap();
    assert_eq!((r.configs[0].nodes_in_use, r.configs[1].nodes_in_use), (3, 2));
    args.profiles = vec!["spread".into(), "nope".into()];
    let err = load_configs(&args).err().unwrap();
    assert!(err.contains("no profile \"nope\"; profiles: spread, pack"), "{err}");
    args.profiles = vec!["spread".into()];
    assert!(load_configs(&args).err().unwrap().contains("two or more configurations"));
}

#[test]
fn stats_match_hand_computed_values() {
    // (values, want mean, stddev, min, max, p10, p90)
    let cases: [(&[f64], [f64; 6]); 4] = [
        (&[], [0.0; 6]),
        (&[0.5], [0.5, 0.0, 0.5, 0.5, 0.5, 0.5]),
        (&[1.0, 0.0, 0.0, 0.0], [0.25, 0.1875f64.sqrt(), 0.0, 1.0, 0.0, 1.0]),
        // ten values 0.0..0.9: p10 is the 1st smallest, p90 the 9th.
        (&[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0], [0.45, 0.0825f64.sqrt(), 0.0, 0.9, 0.0, 0.8]),
    ];
    for (values, [mean, stddev, min, max, p10, p90]) in cases {
        let want = Stats { mean, stddev, min, max, p10, p90, range: max - min };
        let got = Stats::of(values);
        assert!(stats_eq(got, want), "{values:?}: got {got:?}");
    }
}

#[test]
fn spread_groups_by_controller_owner_then_app_label_over_every_zone() {
    // Three zones; `web` pods (app label) on z1, z1, z2; a ReplicaSet's pods on z3 only; a
    // pod with neither is not counted.
    let owned = ", ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u1, controller: true}]";
    let cluster = node("n1", 4, "z1") + &node("n2", 4, "z2") + &node("n3", 4, "z3");
    let bound = pod("w1", "100m", "1Mi", ", labels: {app: web}", "nodeName: n1, ")
        + &pod("w2", "100m", "1Mi", ", labels: {app: web}", "nodeName: n1, ")
        + &pod("w3", "100m", "1Mi", ", labels: {app: web}", "nodeName: n2, ")
        + &pod("r1", "100m", "1Mi", &format!(", labels: {{app: other}}{owned}"), "nodeName: n3, ")
        + &pod("r2", "100m", "1Mi", owned, "nodeName: n3, ")
        + &pod("lone", "100m", "1Mi", "", "nodeName: n2, ");
    let m = manifests(&[("cluster.yaml", &(cluster.clone() + &bound))]);
    let r = compare(&manifests_input(m), &least_and_most(), 1, 10, false).unwrap();
    let owners = |spread: &[OwnerSpread]| -> Vec<(String, usize, Vec<usize>, usize)> {
        spread.iter().map(|s| (s.owner.clone(), s.pods, s.zones.values().copied().collect(), s.skew)).collect()
    };
    assert_eq!(
        owners(&r.configs[0].cluster_spread),
        [
            ("default/ReplicaSet/rs".to_owned(), 2, vec![0, 0, 2], 2),
            ("default/app=web".to_owned(), 3, vec![2, 1, 0], 2),
        ]
    );
    assert_eq!(r.configs[0].cluster_max_zone_skew, 2);
    // Nothing was scheduled in the run: its own spread is empty, no node is "in use", three
    // hold pods.
    assert_eq!((r.configs[0].max_zone_skew, r.configs[0].spread.len()), (0, 0));
    assert_eq!((r.configs[0].nodes_in_use, r.configs[0].nodes_non_empty, r.configs[0].scheduled), (0, 3, 0));

    // One pending `web` pod: the run's spread counts it alone (one zone of three: skew 1),
    // the whole cluster's all four.
    let pending = pod("w4", "100m", "1Mi", ", labels: {app: web}", "");
    let m = manifests(&[("cluster.yaml", &(cluster + &bound + &pending))]);
    let r = compare(&manifests_input(m), &least_and_most(), 1, 10, false).unwrap();
    let run = owners(&r.configs[0].spread);
    assert_eq!(run.len(), 1, "{run:?}");
    assert_eq!((run[0].0.as_str(), run[0].1, run[0].3), ("default/app=web", 1, 1));
    assert_eq!(r.configs[0].max_zone_skew, 1);
    let cluster_web = owners(&r.configs[0].cluster_spread).into_iter().find(|o| o.0 == "default/app=web").unwrap();
    assert_eq!(cluster_web.1, 4);
}

#[test]
fn fail_if_holds_per_configuration_or_between_named_ones() {
    let r = four_node_report();
    let labels = ["A".to_owned(), "B".to_owned()];
    // (expression, hits naming these configurations)
    let cases: [(&str, &[&str]); 8] = [
        ("pending>0", &["A.pending = 1"]),
        ("pending > 5", &[]),
        ("nodes_in_use>=3", &["A.nodes_in_use = 3"]),
        ("nodes_in_use<3", &["B.nodes_in_use = 2"]),
        ("cpu_stddev>0.15", &["B.cpu_stddev = 0.4"]),
        ("B.pending>A.pending", &[]),
        ("A.pending>B.pending", &["A.pending = 1"]),
        ("moved==4", &["B.moved = 4"]),
    ];
    for (expr, want) in cases {
        let check = FailIf::parse(expr, &labels).unwrap();
        let hits = check.holds(&r.configs).unwrap();
        assert_eq!(hits.len(), want.len(), "{expr}: {hits:?}");
        for (h, w) in hits.iter().zip(want) {
            assert!(h.contains(w), "{expr}: {h} lacks {w}");
        }
    }
    // (bad expression, error text)
    let bad = [
        ("bogus>1", "unknown metric \"bogus\"; metrics: scheduled, pending,"),
        ("C.pending>0", "no configuration \"C\"; the configurations are A, B"),
        ("pending", "expected METRIC OP VALUE"),
        ("1>2", "compares no metric"),
        ("pending>", "a side of the comparison is empty"),
    ];
    for (expr, want) in bad {
        let err = FailIf::parse(expr, &labels).err().unwrap_or_else(|| panic!("{expr} parsed"));
        assert!(err.contains(want), "{expr}: {err}");
    }
}

#[test]
fn compare_builtin_workload_schedules_the_same_pods_and_packs_under_most_allocated() {
    let input = Input::Builtin { workload: crate::synth::Workload::Basic, nodes: 20, warmup: 10, measured: 50 };
    let r = compare(&input, &least_and_most(), 1, 5, false).unwrap();
    let (a, b) = (&r.configs[0], &r.configs[1]);
    assert_eq!((a.scheduled, a.pending, b.scheduled, b.pending), (60, 0, 60, 0));
    // 60 pods of 100m: LeastAllocated spreads them 3 per node; MostAllocated fills one node
    // (40 pods of 100m on 4 CPUs), then a second.
    assert_eq!((a.nodes_in_use, b.nodes_in_use), (20, 2));
    assert!(close(a.cpu.max, 0.075) && close(a.cpu.stddev, 0.0), "{:?}", a.cpu);
    // B: one node at 100%, one at 50%, 18 empty: mean (1 + 0.5) / 20, p90 the 18th smallest.
    let want = Stats { mean: 0.075, stddev: 0.056_875f64.sqrt(), min: 0.0, max: 1.0, p10: 0.0, p90: 0.0, range: 1.0 };
    assert!(stats_eq(b.cpu, want), "{:?}", b.cpu);
    assert_eq!(b.moved_pods.len(), 5);
    assert!(b.moved > 5);
    assert!(
        b.moved_pods.iter().all(|m| m.deciding_plugin.as_deref() == Some("NodeResourcesFit")),
        "{:?}",
        b.moved_pods
    );
}

/// A workload file: 4 default nodes (4 CPU / 32Gi), then 8 pods of 1 CPU / 8Gi (the nodes'
/// ratio, so BalancedAllocation scores every node alike).
fn packing_file() -> std::path::PathBuf {
    let pod =
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: pod-\nspec:\n  containers:\n  - image: pause\n    \
               name: pause\n    resources:\n      requests:\n        cpu: \"1\"\n        memory: 8Gi\n";
    let config =
        "- name: Packing\n  workloadTemplate:\n  - opcode: createNodes\n    count: 4\n  - opcode: createPods\n    \
                  count: 8\n    podTemplatePath: pod.yaml\n    collectMetrics: true\n  workloads:\n  - name: small\n";
    crate::perf_file::tests::workload_file("compare-file", pod, config)
}

#[test]
fn compare_workload_file_runs_each_configuration_on_the_file() {
    // (file, want per configuration (scheduled, pending, preempted, victims, nodes in use))
    let cases = [
        // 8 pods of 1 CPU: two per node spread (LeastAllocated), four per node packed.
        (packing_file(), [(8, 0, 0, 0, 4), (8, 0, 0, 0, 2)]),
        // 16 low-priority pods, then 4 preemptors that each evict 3, under both.
        (crate::perf_file::tests::preemption_file(4), [(20, 0, 4, 12, 4), (20, 0, 4, 12, 4)]),
    ];
    for (path, want) in cases {
        let mut args = args();
        args.workload = Some(WorkloadArg::File(path.clone()));
        let input = load_input(&args).unwrap();
        let r = compare(&input, &least_and_most(), 1, 5, false).unwrap();
        for (c, w) in r.configs.iter().zip(want) {
            assert_eq!((c.scheduled, c.pending, c.preempted, c.victims, c.nodes_in_use), w, "{path:?} {}", c.label);
            assert!(c.notes.is_empty(), "{:?}", c.notes);
        }
    }
}

#[test]
fn compare_html_is_well_formed_with_overlaid_plots_holding_data() {
    let r = four_node_report();
    let html = html::render(&r);
    crate::report::tests::well_formed(&html).unwrap();
    for kind in ["cpu-utilization", "memory-utilization", "latency-cdf"] {
        let at = html.find(&format!("data-plot=\"{kind}\"")).unwrap_or_else(|| panic!("{kind} missing"));
        let svg = &html[at..at + html[at..].find("</svg>").unwrap()];
        // One series per configuration, each with data, and a legend naming both.
        assert_eq!(svg.matches("class=\"series\"").count(), 2, "{kind}");
        assert!(!svg.contains("data-points=\"0\""), "{kind} has an empty series");
        assert!(svg.contains("A: A") && svg.contains("B: B"), "{kind} legend");
    }
    assert!(html.contains("default/p1"));
}

#[test]
fn load_input_rejects_missing_and_double_inputs() {
    let mut args = args();
    assert!(load_input(&args).err().unwrap().contains("nothing to schedule"));
    args.files = vec!["x.yaml".into()];
    args.workload = Some(WorkloadArg::Builtin(crate::synth::Workload::Basic));
    assert!(load_input(&args).err().unwrap().contains("not both"));
}

#[test]
fn text_notes_keep_a_warning_label_of_their_own() {
    let mut r = four_node_report();
    r.configs[1].notes = vec!["warning: pod default/p: spec.workloadRef is not modelled".into(), "skipped: x".into()];
    let out = text::render(&r);
    assert!(out.contains("\n  warning: pod default/p: spec.workloadRef"), "{out}");
    assert!(!out.contains("note: warning:"), "{out}");
    assert!(out.contains("\n  note: skipped: x"), "{out}");
}

/// A one-node, one-pod workload file whose test case sets `gate: value` in `featureGates`,
/// in a scratch directory `tag` with LeastAllocated and MostAllocated configurations: the
/// directory and the arguments comparing them on it.
fn one_pod_file_with_gate(tag: &str, gate: &str, value: bool) -> (std::path::PathBuf, CompareArgs) {
    let dir = std::env::temp_dir().join(format!("ksched-compare-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: pod-\nspec:\n  containers:\n  - image: pause\n    name: pause\n";
    std::fs::write(dir.join("pod.yaml"), pod).unwrap();
    let file = format!(
        "- name: Gated\n  featureGates:\n    {gate}: {value}\n  workloadTemplate:\n  - opcode: createNodes\n    \
         count: 1\n  - opcode: createPods\n    count: 1\n    podTemplatePath: pod.yaml\n    collectMetrics: true\n  workloads:\n  - name: one\n"
    );
    let path = dir.join("performance-config.yaml");
    std::fs::write(&path, file).unwrap();
    let (a, b) = (dir.join("a.yaml"), dir.join("b.yaml"));
    std::fs::write(&a, scoring("LeastAllocated")).unwrap();
    std::fs::write(&b, scoring("MostAllocated")).unwrap();
    let mut args = args();
    args.workload = Some(WorkloadArg::File(path));
    args.configs = vec![a, b];
    (dir, args)
}

/// `compare --workload FILE`: the configurations' plugins are built under the file's
/// `featureGates` applied over `--feature-gates` (as `ksched run --workload` runs it).
#[test]
fn compare_workload_file_builds_configurations_under_its_feature_gates() {
    use ksched_engine::features::{Feature, FeatureGates};
    let (dir, mut args) = one_pod_file_with_gate("gates", "SchedulerAsyncPreemption", false);
    args.gates.set(Feature::PodLevelResources, false).unwrap();
    let input = load_input(&args).unwrap();
    let gates = input_gates(&args, &input);
    assert!(!gates.enabled(Feature::SchedulerAsyncPreemption), "the file's gate");
    assert!(!gates.enabled(Feature::PodLevelResources), "--feature-gates kept");
    let specs = load_configs(&CompareArgs { gates, ..args.clone() }).unwrap();
    for s in &specs {
        assert_eq!(s.queue.gates, gates, "{}", s.label);
    }
    // Manifests: the command line's gates alone.
    let manifests = manifests_input(four_nodes());
    assert_eq!(input_gates(&args, &manifests), args.gates);
    assert_ne!(args.gates, FeatureGates::default());
    let r = compare(&input, &specs, 1, 5, false).unwrap();
    assert!(r.configs.iter().all(|c| c.scheduled == 1 && c.notes.is_empty()), "{:?}", r.configs);
    std::fs::remove_dir_all(&dir).ok();
}

/// `compare --workload FILE`: what the run warns about (here a gate ksched does not know) is
/// each configuration's note, never dropped.
#[test]
fn compare_workload_file_keeps_the_runs_warnings_as_notes() {
    let (dir, args) = one_pod_file_with_gate("warn", "NoSuchGate", true);
    let input = load_input(&args).unwrap();
    let specs = load_configs(&args).unwrap();
    let r = compare(&input, &specs, 1, 5, false).unwrap();
    for c in &r.configs {
        assert_eq!(c.scheduled, 1, "{}", c.label);
        assert!(c.notes.iter().any(|n| n.contains("NoSuchGate") && n.contains("not known to ksched")), "{:?}", c.notes);
    }
    assert!(text::render(&r).contains("  note: feature gate NoSuchGate=true: not known to ksched"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `compare --workload FILE --strict`: a field of the file's pods that ksched does not model
/// is an error naming the pod and field; without `--strict` it is each configuration's note.
#[test]
fn compare_workload_file_strict_refuses_unmodelled_fields() {
    let path = crate::perf_file::tests::unmodelled_field_file("compare");
    let (dir, mut args) = one_pod_file_with_gate("strict", "PodLevelResources", true);
    args.workload = Some(WorkloadArg::File(path.clone()));
    let run = |args: &CompareArgs| compare(&load_input(args).unwrap(), &load_configs(args).unwrap(), 1, 5, false);
    let r = run(&args).unwrap();
    for c in &r.configs {
        assert!(
            c.notes.iter().any(|n| n.starts_with("spec.workloadRef: not modelled by ksched, set on 1 object(s)")),
            "{:?}",
            c.notes
        );
    }
    assert_eq!(r.unmodelled_fields, [("spec.workloadRef".to_owned(), 1)].into(), "the report's count");
    args.strict = true;
    let e = run(&args).unwrap_err();
    assert!(e.starts_with("A (") && e.contains(": spec.workloadRef: not modelled by ksched"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
}

/// `compare -f`: the manifests' unmodelled fields counted per field in the report (JSON and
/// text), once for the input.
#[test]
fn compare_counts_the_manifests_unmodelled_fields_per_field() {
    let r =
        compare(&manifests_input(crate::simulate::tests::gang_manifests()), &least_and_most(), 1, 5, false).unwrap();
    assert_eq!(r.unmodelled_fields, [("spec.workloadRef".to_owned(), 2)].into());
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["unmodelled_fields"]["spec.workloadRef"], 2);
    let t = text::render(&r);
    assert_eq!(
        t.matches("fields ksched does not model (objects; upstream's decision may differ): spec.workloadRef 2\n")
            .count(),
        1,
        "{t}"
    );
    assert!(serde_json::to_value(four_node_report()).unwrap().get("unmodelled_fields").is_none());
}
