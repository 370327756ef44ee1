use std::path::{Path, PathBuf};

use super::exec::{Options, Status, WorkloadResult};
use super::*;

/// `<repo root>/../shared/workloads`, or `None` (with a note) when absent.
fn shared_workloads() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/workloads");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("note: {} absent; upstream workload files not run", dir.display());
        None
    }
}

fn run(path: &Path, sel: Selection) -> Vec<WorkloadResult> {
    run_file(path, &sel, &LoadOptions::default(), &Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn labels(l: &[&str]) -> Selection {
    Selection { labels: l.iter().map(|s| (*s).to_owned()).collect(), ..Selection::default() }
}

fn find<'a>(rs: &'a [WorkloadResult], name: &str) -> &'a WorkloadResult {
    rs.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{name} not run"))
}

fn has_metric(r: &WorkloadResult, metric: &str) -> bool {
    r.data_items.iter().any(|i| i.labels.get("Metric").is_some_and(|m| m == metric))
}

#[test]
fn every_upstream_integration_workload_runs_and_schedules_its_pods() {
    let Some(dir) = shared_workloads() else { return };
    for sub in ["misc", "affinity", "topology_spreading"] {
        let results = run(&dir.join(sub).join("performance-config.yaml"), labels(&["integration-test"]));
        assert!(!results.is_empty(), "{sub}");
        for r in &results {
            assert_eq!(r.status, Status::Passed, "{}", r.name);
            assert!(has_metric(r, "SchedulingThroughput"), "{}: no throughput", r.name);
            assert!(has_metric(r, "scheduler_scheduling_attempt_duration_seconds"), "{}", r.name);
            assert!(r.counts.scheduled > 0 && r.counts.nodes > 0, "{}", r.name);
        }
        if sub == "misc" {
            let p = find(&results, "PreemptionBasic/5Nodes");
            assert_eq!((p.counts.scheduled, p.counts.preemptions, p.counts.victims), (25, 5, 15));
            let g = find(&results, "SchedulingWhileGated/1Node_10GatedPods");
            assert_eq!((g.counts.pods_created, g.counts.scheduled), (30, 20), "gated pods stay pending");
            let e = find(&results, "SchedulingWithExtendedResource/fast");
            assert_eq!((e.counts.nodes, e.counts.scheduled), (11, 10));
            let c = find(&results, "SchedulingWithMixedChurn/10Nodes");
            assert!(c.counts.scheduled >= 100, "{:?}", c.counts);
        }
        if sub == "affinity" {
            // Required anti-affinity per host: 1 + 4 pods on 5 nodes, one per node.
            let a = find(&results, "SchedulingPodAntiAffinity/5Nodes");
            assert_eq!(a.utilization.iter().filter(|u| u.cpu > 0.0).count(), 5);
        }
    }
}

#[test]
fn sample_file_runs_end_to_end() {
    let Some(dir) = shared_workloads() else { return };
    let path = dir.join("sample/performance-config.yaml");
    let mut results = run(&path, labels(&["-performance"]));
    results.extend(run(&path, Selection { test: Some("ZonalNodeAffinity".into()), ..Selection::default() }));
    let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "BasicFill/100Nodes",
            "SpreadAcrossZones/300Nodes",
            "LowThenHighPriority/100Nodes",
            "ZonalNodeAffinity/500Nodes"
        ]
    );
    for r in &results {
        assert_eq!(r.status, Status::Passed, "{}", r.name);
    }
    let zonal = find(&results, "ZonalNodeAffinity/500Nodes");
    assert_eq!((zonal.counts.nodes, zonal.counts.scheduled), (500, 500));
    // Only the labelled half of the nodes matches the pods' zone1 affinity.
    assert_eq!(zonal.utilization.iter().filter(|u| u.cpu > 0.0).count(), 250);
}

/// A scratch folder with `files` written into it.
fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ksched-perf-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    dir
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  generateName: n-\n  labels:\n    rack: r{{Mod .Index 2}}\nstatus:\n  capacity: {pods: \"110\", cpu: \"4\", memory: 32Gi}\n";
const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: p-\n  labels: {app: web}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: 500m}}\n";
const BIG: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: big-\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: \"64\"}}\n";

#[test]
fn synthetic_cases_cover_threshold_skip_failure_and_background_ops() {
    let cfg = "\
- name: Miss
  defaultPodTemplatePath: pod.yaml
  workloadTemplate:
  - {opcode: createNodes, countParam: $n, nodeTemplatePath: node.yaml}
  - {opcode: createPods, count: 6, collectMetrics: true}
  workloads:
  - {name: w, threshold: 1e12, params: {n: 2}}
- name: Lower
  defaultPodTemplatePath: pod.yaml
  workloadTemplate:
  - {opcode: createNodes, count: 2}
  - {opcode: createPods, count: 4, collectMetrics: true}
  workloads:
  - name: w
    threshold: 1e12
    thresholdMetricSelector: {name: scheduler_scheduling_attempt_duration_seconds, labels: {result: scheduled}, dataBucket: Perc99, expectLower: true}
- name: Dra
  workloadTemplate:
  - {opcode: createResourceClaims, namespace: x}
  - {opcode: createPods, count: 1, collectMetrics: true}
  workloads:
  - {name: w}
- name: TooBig
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  - {opcode: createPods, count: 1, podTemplatePath: big.yaml, collectMetrics: true}
  workloads:
  - {name: w}
- name: Background
  defaultPodTemplatePath: pod.yaml
  workloadTemplate:
  - {opcode: createNodes, count: 4}
  - {opcode: churn, mode: recreate, number: 2, intervalMilliseconds: 100, templatePaths: [pod.yaml]}
  - {opcode: createPods, count: 3, namespace: keep, skipWaitToCompletion: true}
  - {opcode: sleep, duration: 1s}
  - {opcode: barrier, namespaces: [keep]}
  - {opcode: deletePods, namespace: keep, deletePodsPerSecond: 10}
  - {opcode: startCollectingMetrics, name: steady, namespaces: [steady]}
  - {opcode: createPods, count: 2, namespace: steady, steadyState: true, duration: 2s}
  - {opcode: stopCollectingMetrics}
  workloads:
  - {name: w}
";
    let dir = scratch("synthetic", &[("node.yaml", NODE), ("pod.yaml", POD), ("big.yaml", BIG), ("cfg.yaml", cfg)]);
    let results = run(&dir.join("cfg.yaml"), Selection::default());
    let miss = find(&results, "Miss/w");
    match &miss.status {
        Status::ThresholdMissed(m) => {
            assert!(m[0].contains("SchedulingThroughput") && m[0].contains("higher"), "{m:?}")
        }
        other => panic!("Miss: {other:?}"),
    }
    let t = miss.data_items.iter().find(|i| i.labels["Metric"] == "SchedulingThroughput").unwrap();
    assert_eq!(t.data["AverageThreshold"], 1e12, "the threshold is recorded in the item");
    assert_eq!(find(&results, "Lower/w").status, Status::Passed, "latency below a huge maximum");
    match &find(&results, "Dra/w").status {
        Status::Skipped(why) => assert!(why.starts_with("op 0 (createResourceClaims)"), "{why}"),
        other => panic!("Dra: {other:?}"),
    }
    match &find(&results, "TooBig/w").status {
        Status::Failed(why) => {
            assert!(why.contains("op 1 (createPods)") && why.contains("never got scheduled"), "{why}")
        }
        other => panic!("TooBig: {other:?}"),
    }
    let bg = find(&results, "Background/w");
    assert_eq!(bg.status, Status::Passed, "{:?}", bg.status);
    // The steady state keeps 2 pods in flight for 2 simulated seconds at 1 ms per attempt.
    assert!(bg.counts.scheduled > 100, "{:?}", bg.counts);
    assert!(bg.simulated_seconds >= 3.0, "sleep 1s + deletes 0.3s + steady 2s: {}", bg.simulated_seconds);
    assert!(has_metric(bg, "SchedulingThroughput"));
    assert_eq!(bg.measurements[0].name, "Background/w/steady");
}

#[test]
fn selection_errors_name_what_exists() {
    let Some(dir) = shared_workloads() else { return };
    let path = dir.join("sample/performance-config.yaml");
    let sel = Selection { test: Some("Nope".into()), ..Selection::default() };
    let err = run_file(&path, &sel, &LoadOptions::default(), &Options::default()).err().unwrap();
    assert!(err.contains("no test case \"Nope\"") && err.contains("BasicFill"), "{err}");
    let err = run_file(&path, &labels(&["no-such-label"]), &LoadOptions::default(), &Options::default()).err().unwrap();
    assert!(err.contains("no workload matches"), "{err}");
}

/// A small PreemptionBasic-shaped workload file (its own templates) in a fresh directory.
pub fn preemption_file(nodes: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ksched-preemption-{}-{nodes}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pod = |name: &str, cpu: &str, extra: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: {name}-\nspec:\n{extra}  containers:\n  - image: registry.k8s.io/pause:3.10\n    name: pause\n    resources:\n      requests:\n        cpu: {cpu}\n        memory: 500Mi\n"
        )
    };
    std::fs::write(dir.join("low.yaml"), pod("low", "900m", "  terminationGracePeriodSeconds: 0\n")).unwrap();
    std::fs::write(dir.join("high.yaml"), pod("high", "3000m", "  priority: 10\n")).unwrap();
    let config = format!(
        "- name: PreemptionBasic\n  workloadTemplate:\n  - opcode: createNodes\n    count: {nodes}\n  - opcode: createPods\n    count: {}\n    podTemplatePath: low.yaml\n  - opcode: createPods\n    count: {nodes}\n    podTemplatePath: high.yaml\n    collectMetrics: true\n  workloads:\n  - name: small\n",
        4 * nodes
    );
    let path = dir.join("performance-config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// A workload file `file` with its one pod template `pod.yaml` in a scratch directory
/// named by `tag`: the file's path.
pub fn workload_file(tag: &str, pod: &str, file: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ksched-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pod.yaml"), pod).unwrap();
    let path = dir.join("performance-config.yaml");
    std::fs::write(&path, file).unwrap();
    path
}

/// A workload file of one node and one pod whose template sets `spec.workloadRef` (gang
/// scheduling, which ksched does not model: a warning, an error under `--strict`), in a
/// scratch directory `tag`.
pub fn unmodelled_field_file(tag: &str) -> PathBuf {
    let pod =
        "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: gang-\nspec:\n  workloadRef: {name: w, podGroup: g}\n  \
               containers:\n  - image: pause\n    name: pause\n";
    let file = "- name: Gang\n  workloadTemplate:\n  - opcode: createNodes\n    count: 1\n  - opcode: createPods\n    \
                count: 1\n    podTemplatePath: pod.yaml\n    collectMetrics: true\n  workloads:\n  - name: one\n";
    workload_file(&format!("unmodelled-{tag}"), pod, file)
}

/// A workload file's pod with a field ksched does not model: counted in the workload's
/// warnings (the pod named), or, with `strict`, the workload fails naming the pod and field.
#[test]
fn unmodelled_field_is_a_warning_or_under_strict_fails_the_workload() {
    let path = unmodelled_field_file("strict");
    let go = |strict: bool| {
        let opts = Options { strict, ..Options::default() };
        run_file(&path, &Selection::default(), &LoadOptions::default(), &opts).unwrap().remove(0)
    };
    let r = go(false);
    assert_eq!((&r.status, r.counts.scheduled), (&Status::Passed, 1));
    assert!(
        r.warnings
            .iter()
            .any(|w| w
                .starts_with("spec.workloadRef: not modelled by ksched, set on 1 object(s) (pod namespace-1/gang-")),
        "{:?}",
        r.warnings
    );
    let r = go(true);
    let Status::Failed(why) = &r.status else { panic!("{:?}", r.status) };
    assert!(why.starts_with("op 1 (createPods): pod namespace-1/gang-"), "{why}");
    assert!(why.contains(": spec.workloadRef: not modelled by ksched") && why.ends_with(exec::STRICT_REFUSAL), "{why}");
    assert_eq!(r.counts.scheduled, 0);
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
}

fn data(r: &WorkloadResult, metric: &str) -> std::collections::BTreeMap<String, f64> {
    r.data_items.iter().find(|i| i.labels["Metric"] == metric).unwrap_or_else(|| panic!("no {metric}")).data.clone()
}

#[test]
fn preemption_throughput_agrees_with_pods_over_duration() {
    // Every preemptor fails once (a slow dry run: 300 ms here), then all bind in a burst
    // (40 ms each) once their backoff passed: the shape that read 0.06 pods/s for 5,000 pods
    // in 29 s, when the first bound pod was spread over the whole wait and the burst, in
    // the last partial window, was dropped; and, once that was fixed, read 14× too high when
    // the burst straddled a window boundary and a 40 ms tail weighed as much as a second.
    fn attempt_time(o: &ksched_engine::scheduler::CycleOutcome) -> std::time::Duration {
        match o {
            ksched_engine::scheduler::CycleOutcome::Scheduled { .. } => std::time::Duration::from_millis(40),
            _ => std::time::Duration::from_millis(300),
        }
    }
    // nodes (= preemptors): the burst inside a window (10, 20) or across a boundary (3: 0.9 s
    // of failures, binds ending at 0.94, 0.98, 1.02 s; 6: ..., 2.00, 2.04 s)
    for nodes in [3usize, 6, 10, 20] {
        let path = preemption_file(nodes);
        let opts = Options { attempt_time: Some(attempt_time), ..Options::default() };
        let results = run_file(&path, &Selection::default(), &LoadOptions::default(), &opts).unwrap();
        let r = &results[0];
        assert_eq!(r.status, Status::Passed, "{nodes}");
        assert_eq!(
            (r.counts.scheduled, r.counts.preemptions, r.counts.victims),
            (5 * nodes, nodes, 3 * nodes),
            "{nodes}: counts"
        );
        let duration = data(r, "SchedulingDuration")["Duration"];
        let want_secs = nodes as f64 * 0.34;
        assert!((duration - want_secs).abs() < 1e-9, "{nodes}: duration {duration}");
        let t = data(r, "SchedulingThroughput");
        let pods_over_duration = nodes as f64 / duration;
        // Every bound pod is in a sample, weighted by the time it covers: exactly.
        assert!((t["Average"] - pods_over_duration).abs() < 1e-6, "{nodes}: {t:?} vs {pods_over_duration}");
    }
}

/// A workload file `config` with its templates `files` (name, text) in a fresh directory;
/// an empty metrics collection goes before `workloads:` (upstream wants one op collecting).
fn workload_dir(tag: &str, config: &str, files: &[(&str, &str)]) -> PathBuf {
    let metrics = "  - opcode: startCollectingMetrics\n    name: m\n    namespaces: [none]\n  \
                   - opcode: stopCollectingMetrics\n  workloads:\n";
    let config = config.replace("  workloads:\n", metrics);
    let dir = std::env::temp_dir().join(format!("ksched-ops-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let path = dir.join("performance-config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

fn run_one(path: &Path) -> WorkloadResult {
    let mut rs = run(path, Selection::default());
    assert_eq!(rs.len(), 1);
    rs.remove(0)
}

const CSI_PV: &str = "apiVersion: v1\nkind: PersistentVolume\nspec:\n  accessModes: [ReadWriteOnce]\n  \
                      capacity: {storage: 1Gi}\n  csi: {driver: ebs.csi.aws.com, volumeHandle: placeholder}\n";
const CLAIM: &str = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  \
                     annotations: {pv.kubernetes.io/bind-completed: \"true\"}\nspec:\n  accessModes: [ReadWriteOnce]\n  \
                     resources: {requests: {storage: 1Gi}}\n";
/// Without the bind-completed annotation the pre-bound claim is not bound for VolumeBinding.
const CLAIM_NOT_COMPLETED: &str =
    "apiVersion: v1\nkind: PersistentVolumeClaim\nspec:\n  accessModes: [ReadWriteOnce]\n  \
                                   resources: {requests: {storage: 1Gi}}\n";

#[test]
fn perf_file_pv_templates_and_csi_node_allocatable_limit_volumes_per_node() {
    // 3 nodes; each pod brings its own CSI volume. With a CSINode allowing `limit` volumes of
    // the driver per node, only 3 × limit pods fit; without one, all do.
    let cases: [(Option<i64>, i64, &str, usize); 4] =
        [(Some(2), 8, CLAIM, 6), (Some(1), 5, CLAIM, 3), (None, 8, CLAIM, 8), (None, 3, CLAIM_NOT_COMPLETED, 0)];
    for (limit, pods, claim, want_scheduled) in cases {
        let strategy = match limit {
            Some(n) => format!(
                "    nodeAllocatableStrategy:\n      nodeAllocatable: {{attachable-volumes-csi-ebs.csi.aws.com: \"39\"}}\n      \
                 csiNodeAllocatable: {{ebs.csi.aws.com: {{count: {n}}}}}\n"
            ),
            None => String::new(),
        };
        let config = format!(
            "- name: Volumes\n  workloadTemplate:\n  - opcode: createNodes\n    count: 3\n{strategy}  \
             - opcode: createPods\n    count: {pods}\n    skipWaitToCompletion: true\n    \
             persistentVolumeTemplatePath: pv.yaml\n    persistentVolumeClaimTemplatePath: pvc.yaml\n  \
             - opcode: barrier\n    stageRequirement: Attempted\n  workloads:\n  - name: small\n"
        );
        let path = workload_dir(&format!("pv-{limit:?}-{pods}"), &config, &[("pv.yaml", CSI_PV), ("pvc.yaml", claim)]);
        let r = run_one(&path);
        assert_eq!(r.status, Status::Passed, "{limit:?}");
        assert_eq!((r.counts.pods_created, r.counts.scheduled), (pods as usize, want_scheduled), "{limit:?}");
        if want_scheduled == 0 {
            assert!(r.counts.unschedulable >= pods as usize, "every pod tried and failed");
        }
        if let Some(n) = limit {
            // Filled evenly to the limit: every node holds exactly `n` pods (100m CPU each of 4).
            let per_node: Vec<f64> = r.utilization.iter().map(|u| (u.cpu * 40.0).round()).collect();
            assert_eq!(per_node, vec![n as f64; 3], "{limit:?}");
        }
    }
}

#[test]
fn perf_file_pv_template_without_claim_template_is_an_error_naming_the_field() {
    let config = "- name: Volumes\n  workloadTemplate:\n  - opcode: createNodes\n    count: 1\n  \
                  - opcode: createPods\n    count: 1\n    persistentVolumeClaimTemplatePath: pvc.yaml\n  \
                  workloads:\n  - name: small\n";
    let r = run_one(&workload_dir("pv-missing", config, &[("pvc.yaml", CLAIM)]));
    let Status::Failed(why) = &r.status else { panic!("{:?}", r.status) };
    assert!(why.contains("op 1 (createPods): persistentVolumeTemplatePath: must be set"), "{why}");
}

const TAINTED_NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-{{.Index}}\nspec:\n  \
                            taints: [{key: maintenance, effect: NoSchedule}]\nstatus:\n  \
                            capacity: {pods: \"110\", cpu: \"4\", memory: 32Gi}\n";
// An update replaces the status too (upstream's updateAny updates the object, then its status).
const UNTAINTED_NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-{{.Index}}\nspec: {}\nstatus:\n  \
                              capacity: {pods: \"110\", cpu: \"4\", memory: 32Gi}\n";
const SMALL_NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-{{.Index}}\nstatus:\n  \
                          capacity: {pods: \"110\", cpu: \"1\", memory: 32Gi}\n";
const GROWN_NODE_STATUS: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-{{.Index}}\nstatus:\n  \
                                 capacity: {pods: \"110\", cpu: \"8\", memory: 32Gi}\n";
const BIG_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: big-\nspec:\n  containers:\n  \
                       - {name: c, image: pause, resources: {requests: {cpu: \"2\"}}}\n";
const GATED_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{{.Index}}\nspec:\n  \
                         schedulingGates: [{name: example.com/wait}]\n  containers: [{name: c, image: pause}]\n";
const UNGATED_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{{.Index}}\nspec:\n  \
                           containers: [{name: c, image: pause}]\n";

#[test]
fn perf_file_update_any_requeues_parked_pods() {
    // (what the nodes and pods start as, the update, pods; scheduled before and after).
    let update = |template: &str, count: i64, extra: &str| {
        format!(
            "  - opcode: updateAny\n    templatePath: {template}\n    count: {count}\n{extra}  \
             - opcode: barrier\n  workloads:\n  - name: small\n"
        )
    };
    let start = |node: &str, pods: &str| {
        format!(
            "- name: Update\n  workloadTemplate:\n  - opcode: createNodes\n    count: 2\n    \
             nodeTemplatePath: {node}\n  - opcode: createPods\n    count: 4\n    podTemplatePath: {pods}\n    \
             namespace: ns\n    skipWaitToCompletion: true\n  - opcode: barrier\n    stageRequirement: Attempted\n"
        )
    };
    let cases = [
        // A node's taint removed by an update of the node: its parked pods bind.
        (
            "taint",
            start("node.yaml", "big.yaml") + &update("update.yaml", 2, ""),
            TAINTED_NODE,
            UNTAINTED_NODE,
            BIG_POD,
        ),
        // A status update that grows allocatable: 4 pods of 2 CPU fit on 2 nodes of 8.
        (
            "status",
            start("node.yaml", "big.yaml") + &update("update.yaml", 2, "    subresources: [status]\n"),
            SMALL_NODE,
            GROWN_NODE_STATUS,
            BIG_POD,
        ),
        // An update of the whole node (no subresource) carries its status: allocatable grows.
        (
            "object",
            start("node.yaml", "big.yaml") + &update("update.yaml", 2, ""),
            SMALL_NODE,
            GROWN_NODE_STATUS,
            BIG_POD,
        ),
        // Gated pods updated without their gate are queued and bind.
        (
            "gate",
            start("node.yaml", "pod.yaml") + &update("update.yaml", 4, "    namespace: ns\n"),
            UNTAINTED_NODE,
            UNGATED_POD,
            GATED_POD,
        ),
    ];
    for (tag, config, node, updated, pod) in cases {
        let (node_file, pod_file) = if tag == "gate" {
            (("node.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-{{.Index}}\nstatus:\n  capacity: {pods: \"110\", cpu: \"4\", memory: 32Gi}\n"), ("pod.yaml", pod))
        } else {
            (("node.yaml", node), ("big.yaml", pod))
        };
        let path = workload_dir(&format!("update-{tag}"), &config, &[node_file, pod_file, ("update.yaml", updated)]);
        let r = run_one(&path);
        assert_eq!(r.status, Status::Passed, "{tag}");
        assert_eq!((r.counts.pods_created, r.counts.scheduled), (4, 4), "{tag}");
        if tag != "gate" {
            assert!(r.counts.unschedulable >= 1, "{tag}: the pods were parked before the update");
        }
    }
}

#[test]
fn scheduler_config_with_several_profiles_schedules_each_pod_with_its_own() {
    let sched = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n\
                 - schedulerName: default-scheduler\n- schedulerName: bin-packing\n  plugins:\n    score:\n      \
                 disabled: [{name: \"*\"}]\n      enabled: [{name: NodeResourcesFit}]\n  pluginConfig:\n  \
                 - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated}}\n";
    let packed = POD.replace("spec:\n", "spec:\n  schedulerName: bin-packing\n");
    let stray = POD.replace("spec:\n", "spec:\n  schedulerName: someone-else\n");
    let cfg = "\
- name: Packed
  schedulerConfigPath: sched.yaml
  workloadTemplate:
  - {opcode: createNodes, count: 4, nodeTemplatePath: node.yaml}
  - {opcode: createPods, count: 6, podTemplatePath: packed.yaml, collectMetrics: true}
  workloads:
  - {name: w}
- name: Spread
  schedulerConfigPath: sched.yaml
  workloadTemplate:
  - {opcode: createNodes, count: 4, nodeTemplatePath: node.yaml}
  - {opcode: createPods, count: 6, podTemplatePath: pod.yaml, collectMetrics: true}
  workloads:
  - {name: w}
- name: Stray
  schedulerConfigPath: sched.yaml
  workloadTemplate:
  - {opcode: createNodes, count: 1, nodeTemplatePath: node.yaml}
  - {opcode: createPods, count: 1, podTemplatePath: stray.yaml, collectMetrics: true}
  workloads:
  - {name: w}
";
    let files = [
        ("node.yaml", NODE),
        ("pod.yaml", POD),
        ("packed.yaml", packed.as_str()),
        ("stray.yaml", stray.as_str()),
        ("sched.yaml", sched),
        ("cfg.yaml", cfg),
    ];
    let dir = scratch("profiles", &files);
    let results = run(&dir.join("cfg.yaml"), Selection::default());
    let used = |name: &str| {
        let r = find(&results, name);
        assert_eq!(r.status, Status::Passed, "{name}: {:?}", r.status);
        r.utilization.iter().filter(|u| u.cpu > 0.0).count()
    };
    // (test case, nodes its 6 pods of 500m use): MostAllocated packs, LeastAllocated spreads.
    for (case, nodes) in [("Packed/w", 1), ("Spread/w", 4)] {
        assert_eq!(used(case), nodes, "{case}");
    }
    // Another scheduler's pods are never queued: the op waits for them in vain.
    match &find(&results, "Stray/w").status {
        Status::Failed(why) => assert!(why.contains("op 1 (createPods)"), "{why}"),
        other => panic!("Stray: {other:?}"),
    }
}

#[test]
fn perf_file_update_any_of_a_missing_object_or_pod_status_says_which() {
    let config = |template: &str, extra: &str| {
        format!(
            "- name: Update\n  workloadTemplate:\n  - opcode: createNodes\n    count: 1\n  \
             - opcode: updateAny\n    templatePath: {template}\n{extra}  workloads:\n  - name: small\n"
        )
    };
    let missing = run_one(&workload_dir("update-missing", &config("u.yaml", ""), &[("u.yaml", UNTAINTED_NODE)]));
    assert_eq!(missing.status, Status::Failed("op 1 (updateAny): node \"node-0\" not found".into()));
    let status = run_one(&workload_dir(
        "update-pod-status",
        &config("u.yaml", "    subresources: [status]\n"),
        &[("u.yaml", UNGATED_POD)],
    ));
    assert_eq!(
        status.status,
        Status::Skipped("op 1 (updateAny): updating the status subresource of a Pod is not modelled".into())
    );
}

#[test]
fn create_any_daemon_set_runs_a_pod_on_each_node_then_and_later() {
    let daemon = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  selector: {matchLabels: {app: agent}}\n  \
                  template:\n    metadata: {labels: {app: agent}}\n    spec:\n      containers:\n      \
                  - {name: a, resources: {requests: {cpu: 100m}}}\n";
    let tainted =
        NODE.replace("status:", "spec:\n  taints: [{key: dedicated, value: db, effect: NoSchedule}]\nstatus:");
    let cfg = "\
- name: Daemons
  workloadTemplate:
  - {opcode: createNodes, count: 2, nodeTemplatePath: node.yaml}
  - {opcode: createAny, templatePath: daemon.yaml, namespace: infra}
  - {opcode: createNodes, count: 2, nodeTemplatePath: node.yaml}
  - {opcode: createNodes, count: 1, nodeTemplatePath: tainted.yaml}
  - {opcode: barrier}
  - {opcode: createPods, count: 1, collectMetrics: true}
  workloads:
  - {name: w}
";
    let files = [("node.yaml", NODE), ("tainted.yaml", tainted.as_str()), ("daemon.yaml", daemon), ("cfg.yaml", cfg)];
    let dir = scratch("daemons", &files);
    let results = run(&dir.join("cfg.yaml"), Selection::default());
    let r = find(&results, "Daemons/w");
    assert_eq!(r.status, Status::Passed, "{:?}", r.status);
    // Two nodes before the DaemonSet, two after, and a tainted one it does not tolerate: four
    // daemon pods, and the measured pod.
    assert_eq!((r.counts.nodes, r.counts.pods_created, r.counts.scheduled), (5, 5, 5), "{:?}", r.counts);
    assert_eq!(r.utilization.iter().filter(|u| u.cpu > 0.0).count(), 4);
}

/// A gated pod a workload file creates — by `createPods` or `createAny` — is never
/// scheduled until an `updateAny` removes its last gate; then it binds.
#[test]
fn gated_pods_from_create_pods_and_create_any_wait_for_their_update() {
    let gated_any = "apiVersion: v1\nkind: Pod\nmetadata: {name: pod-0}\nspec:\n  \
                     schedulingGates: [{name: a}, {name: b}]\n  containers: [{name: c}]\n";
    let one_gate = "apiVersion: v1\nkind: Pod\nmetadata: {name: pod-0}\nspec:\n  \
                    schedulingGates: [{name: b}]\n  containers: [{name: c}]\n";
    let create_pods =
        "  - {opcode: createPods, count: 1, podTemplatePath: gated.yaml, namespace: ns, skipWaitToCompletion: true}\n";
    let create_any = "  - {opcode: createAny, templatePath: gated.yaml, namespace: ns}\n";
    // (path, creation op, gated template, update templates in order, scheduled at the end)
    let cases: [(&str, &str, &str, &[&str], usize); 5] = [
        ("createPods, never ungated", create_pods, GATED_POD, &[], 0),
        ("createPods, ungated", create_pods, GATED_POD, &[UNGATED_POD], 1),
        ("createAny, never ungated", create_any, gated_any, &[], 0),
        ("createAny, one gate of two removed", create_any, gated_any, &[one_gate], 0),
        ("createAny, both removed", create_any, gated_any, &[one_gate, UNGATED_POD], 1),
    ];
    for (i, (path, create, gated, updates, want)) in cases.into_iter().enumerate() {
        let mut cfg = format!(
            "- name: Gated\n  workloadTemplate:\n  - {{opcode: createNodes, count: 1, nodeTemplatePath: node.yaml}}\n{create}  \
             - {{opcode: barrier, stageRequirement: Attempted}}\n"
        );
        let mut files = vec![("node.yaml".to_owned(), NODE.to_owned()), ("gated.yaml".to_owned(), gated.to_owned())];
        for (k, u) in updates.iter().enumerate() {
            cfg += &format!("  - {{opcode: updateAny, templatePath: u{k}.yaml, count: 1, namespace: ns}}\n");
            files.push((format!("u{k}.yaml"), (*u).to_owned()));
        }
        cfg += "  - {opcode: barrier, stageRequirement: Attempted}\n  \
                - {opcode: startCollectingMetrics, name: m, namespaces: [none]}\n  - {opcode: stopCollectingMetrics}\n  \
                workloads:\n  - {name: w}\n";
        files.push(("cfg.yaml".to_owned(), cfg));
        let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let dir = scratch(&format!("gated-{i}"), &refs);
        let results = run(&dir.join("cfg.yaml"), Selection::default());
        let r = find(&results, "Gated/w");
        assert_eq!(r.status, Status::Passed, "{path}: {:?}", r.status);
        assert_eq!((r.counts.pods_created, r.counts.scheduled), (1, want), "{path}: {:?}", r.counts);
    }
}

const DRA_NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: dra-{{ .Index }}\nstatus:\n  \
                        capacity: {pods: \"110\", cpu: \"4\", memory: 32Gi}\n";
/// Matches the devices `createResourceDriver` writes only through their attributes.
const DRA_CLASS: &str = r#"apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel:
      expression: >-
        device.driver == "d.example.com" && device.attributes["d.example.com"].model == "A100" &&
        device.attributes["dra.example.com"].numa >= 0 &&
        device.capacity["d.example.com"].memory.compareTo(quantity("1Gi")) == 0
"#;
const DRA_CLAIM: &str = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c-{{.Index}}}\n\
                         spec:\n  devices:\n    requests:\n    - {name: r, exactly: {deviceClassName: gpu}}\n";
const DRA_TEMPLATE: &str = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\n\
                            spec:\n  spec:\n    devices:\n      requests:\n      - {name: r, exactly: {deviceClassName: gpu}}\n";
const DRA_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\nspec:\n  containers:\n  - name: c\n    \
                       resources: {claims: [{name: gpu}]}\n  resourceClaims:\n  - {name: gpu, resourceClaimTemplateName: t}\n";

#[test]
fn dra_ops_drive_devices_allocations_and_checks() {
    // Two driver nodes of `max` devices each (the first node has none: its name does not
    // match), `claims` of them allocated without pods, then pods with a template claim each.
    let cfg = "\
- name: Dra
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  - {opcode: createNodes, count: 2, nodeTemplatePath: node.yaml}
  - {opcode: createResourceDriver, driverName: d.example.com, nodes: \"dra-*\", maxClaimsPerNodeParam: $max}
  - {opcode: createAny, templatePath: class.yaml}
  - {opcode: createAny, templatePath: claim.yaml, namespace: init, countParam: $claims}
  - {opcode: allocResourceClaims, namespace: init}
  - {opcode: createAny, templatePath: template.yaml, namespace: test}
  - {opcode: createPods, namespace: test, count: 3, podTemplatePath: pod.yaml, collectMetrics: true}
  - {opcode: checkPodScheduled, namespace: test, ScheduledParam: $scheduled, durationParam: $d}
  workloads:
  - {name: fits, params: {max: 3, claims: 3, scheduled: true, d: 1s}}
  - {name: full, params: {max: 3, claims: 4, scheduled: true, d: 1s}}
  - {name: wrong-check, params: {max: 3, claims: 0, scheduled: false, d: 10s}}
- name: Taints
  featureGates: {DRADeviceTaints: true}
  workloadTemplate:
  - {opcode: createPods, count: 1, collectMetrics: true}
  workloads:
  - {name: w}
- name: Binding
  workloadTemplate:
  - {opcode: createPods, count: 1, collectMetrics: true}
  - {opcode: updateDeviceConditions, namespace: test, ConditionTypeParam: $t, ConditionStatusParam: $s}
  workloads:
  - {name: w, params: {t: DeviceAttached, s: \"True\"}}
";
    let files = [
        ("node.yaml", DRA_NODE),
        ("class.yaml", DRA_CLASS),
        ("claim.yaml", DRA_CLAIM),
        ("template.yaml", DRA_TEMPLATE),
        ("pod.yaml", DRA_POD),
        ("cfg.yaml", cfg),
    ];
    let dir = scratch("dra", &files);
    let results = run(&dir.join("cfg.yaml"), Selection::default());
    let fits = find(&results, "Dra/fits");
    assert_eq!(fits.status, Status::Passed, "{:?}", fits.status);
    assert_eq!((fits.counts.nodes, fits.counts.scheduled), (3, 3), "6 devices, 3 held by allocated claims");
    match &find(&results, "Dra/full").status {
        Status::Failed(why) => assert!(why.contains("op 7 (createPods)") && why.contains("1 pods never"), "{why}"),
        other => panic!("full: {other:?}"),
    }
    match &find(&results, "Dra/wrong-check").status {
        Status::Failed(why) => {
            assert!(why.contains("op 8 (checkPodScheduled)") && why.contains("3 of 3 pods"), "{why}")
        }
        other => panic!("wrong-check: {other:?}"),
    }
    for (name, feature) in [("Taints/w", "DRADeviceTaints"), ("Binding/w", "DRADeviceBindingConditions")] {
        match &find(&results, name).status {
            Status::Skipped(why) => assert!(exec::is_alpha_skip(why) && why.contains(feature), "{why}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn upstream_dra_file_runs_or_skips_for_alpha_features_only() {
    let Some(dir) = shared_workloads() else { return };
    let results = run(&dir.join("dra/performance-config.yaml"), labels(&["integration-test"]));
    assert!(results.len() >= 10, "{}", results.len());
    for r in &results {
        match &r.status {
            Status::Skipped(why) => assert!(exec::is_alpha_skip(why), "{}: {why}", r.name),
            s => assert_eq!(s, &Status::Passed, "{}", r.name),
        }
    }
    let t = find(&results, "SchedulingWithResourceClaimTemplate/fast");
    assert_eq!((t.counts.nodes, t.counts.scheduled), (2, 10));
    let c = find(&results, "SchedulingWithResourceClaim/fast");
    assert_eq!(c.counts.scheduled, 10, "five pods share each claim");
    let s = find(&results, "SteadyStateClusterResourceClaimTemplate/fast");
    assert!(s.counts.scheduled > 100, "{:?}", s.counts);
}

const EXT_CLASS: &str = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: x-{{.Index}}}\nspec:\n  \
                         selectors: []\n  extendedResourceName: example.com/x-{{.Index}}\n";

#[test]
fn alpha_features_skip_and_invalid_workloads_fail_one_at_a_time() {
    // Each test case has two workloads: `second` is the row's point; `plain` passes beside it
    // (one workload's skip or failure is not the file's), except where the op itself is the
    // point and both skip.
    let case = |name: &str, extra_op: &str, second: &str| {
        format!(
            "- name: {name}\n  defaultPodTemplatePath: pod.yaml\n  workloadTemplate:\n  \
             - {{opcode: createNodes, count: 2, nodeTemplatePath: node.yaml}}\n{extra_op}  \
             - {{opcode: createPods, countParam: $n, collectMetrics: true}}\n  workloads:\n  \
             - {{name: plain, params: {{n: 2}}}}\n  - {{name: second, {second}}}\n"
        )
    };
    let ext_op = "  - {opcode: createAny, templatePath: class.yaml, count: 2}\n";
    let groups = "  - {opcode: waitForPodGroups, namespace: g, count: 1}\n";
    // (test case, extra op, the second workload, Ok(alpha feature its skip names) /
    // Err(what its failure says))
    let table: &[(&str, &str, &str, Result<&str, &str>)] = &[
        ("Ndf", "", "featureGates: {NodeDeclaredFeatures: true}, params: {n: 2, k: 5}", Ok("NodeDeclaredFeatures")),
        (
            "Gang",
            "",
            "featureGates: {GenericWorkload: true, GangScheduling: true}, params: {n: 2}",
            Ok("GenericWorkload"),
        ),
        ("GroupOp", groups, "params: {n: 2}", Ok("GangScheduling")),
        ("ExtOn", ext_op, "featureGates: {DRAExtendedResource: true}, params: {n: 2}", Ok("DRAExtendedResource")),
        ("Unused", "", "params: {n: 2, typo: 1}", Err("the parameters typo are defined but no op uses them")),
        (
            "Metric",
            "",
            "params: {n: 2}, threshold: 1, thresholdMetricSelector: {name: no_such_metric, dataBucket: Average}",
            Err("the metric no_such_metric is targeted, but it is not collected"),
        ),
    ];
    let cfg: String = table.iter().map(|(tc, op, second, _)| case(tc, op, second)).collect();
    let dir =
        scratch("alpha", &[("node.yaml", NODE), ("pod.yaml", POD), ("class.yaml", EXT_CLASS), ("cfg.yaml", &cfg)]);
    let results = run(&dir.join("cfg.yaml"), Selection::default());
    for (tc, op, _, want) in table {
        let plain = &find(&results, &format!("{tc}/plain")).status;
        let second = &find(&results, &format!("{tc}/second")).status;
        match (want, second) {
            (Ok(feature), Status::Skipped(why)) => {
                assert!(exec::is_alpha_skip(why) && why.contains(feature), "{tc}: {why}")
            }
            (Err(text), Status::Failed(why)) => assert!(why.contains(text), "{tc}: {why}"),
            (_, other) => panic!("{tc}/second: {other:?}"),
        }
        if *op == groups {
            assert_eq!(plain, second, "{tc}: the op skips every workload");
        } else {
            assert_eq!(plain, &Status::Passed, "{tc}/plain");
        }
    }
    // With the gate off, a class's extendedResourceName is dropped (as upstream's API server
    // does) and said so, not silently.
    let off = find(&results, "ExtOn/plain");
    assert!(off.warnings.iter().any(|w| w.contains("spec.extendedResourceName ignored")), "{:?}", off.warnings);
}

/// A test case's `featureGates` win over `--feature-gates`; a gate the command line moved off
/// its default and the file sets back is said to be overridden.
#[test]
fn workload_gates_override_the_command_line_and_say_so() {
    use ksched_engine::features::{Feature, FeatureGates};
    use std::collections::BTreeMap;
    let asked: BTreeMap<String, bool> = [("PodLevelResources".to_owned(), true)].into();
    let mut off = FeatureGates::default();
    off.set(Feature::PodLevelResources, false).unwrap();
    let mut warnings = Vec::new();
    let gates = super::exec::workload_gates(off, &asked, &mut warnings);
    assert!(gates.enabled(Feature::PodLevelResources));
    assert!(warnings.iter().any(|w| w.contains("overrides --feature-gates PodLevelResources=false")), "{warnings:?}");
    // The command line left it at its default: nothing is overridden.
    let mut warnings = Vec::new();
    let asked: BTreeMap<String, bool> = [("PodLevelResources".to_owned(), false)].into();
    let gates = super::exec::workload_gates(FeatureGates::default(), &asked, &mut warnings);
    assert!(!gates.enabled(Feature::PodLevelResources));
    assert!(warnings.is_empty(), "{warnings:?}");
}

/// Upstream's batching file's shape (its HostPortConflict test case, with the scheduler
/// configuration it names): one pod per node, pods signed apart every `signatureBatchSize`
/// (a label), PodTopologySpread without default constraints. With OpportunisticBatching on,
/// each pod of a batch after its first takes the next node of the previous ranking; off, none
/// does.
#[test]
fn opportunistic_batching_hints_pods_within_a_signature_batch() {
    let sched = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n\
                 - schedulerName: default-scheduler\n  pluginConfig:\n  - name: PodTopologySpread\n    \
                 args: {defaultingType: List, defaultConstraints: []}\n";
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: hostport-}\nspec:\n  containers:\n  \
               - {name: pause, image: pause, ports: [{containerPort: 80, hostPort: 80}], resources: {requests: {cpu: 100m}}}\n";
    let cfg = "\
- name: HostPortConflict
  schedulerConfigPath: sched.yaml
  defaultPodTemplatePath: pod.yaml
  workloadTemplate:
  - {opcode: createNodes, count: 12, nodeTemplatePath: node.yaml}
  - {opcode: createPods, count: 12, signatureBatchSizeParam: $batch, collectMetrics: true}
  workloads:
  - {name: batched, featureGates: {OpportunisticBatching: true}, params: {batch: 4}}
  - {name: gateOff, featureGates: {OpportunisticBatching: false}, params: {batch: 4}}
";
    let files = [("node.yaml", NODE), ("pod.yaml", pod), ("sched.yaml", sched), ("cfg.yaml", cfg)];
    let dir = scratch("batching", &files);
    let results = run(&dir.join("cfg.yaml"), Selection::default());
    // Three batches of four: the first pod of each has a full cycle, the other three a hint.
    for (name, hints) in [("batched", 9), ("gateOff", 0)] {
        let r = find(&results, &format!("HostPortConflict/{name}"));
        assert_eq!(r.status, Status::Passed, "{name}: {:?}", r.status);
        assert_eq!((r.counts.scheduled, r.counts.batch_hints), (12, hints), "{name}");
    }
}

/// The gates a workload is skipped for are gates of the registry that are off in v1.35 and
/// that ksched cannot turn on (only their default modelled, or a dependency that is).
#[test]
fn unmodelled_alpha_gates_are_the_registrys_off_gates_ksched_cannot_turn_on() {
    use ksched_engine::features::{Feature, FeatureGates, Support};
    for (name, _) in exec::UNMODELLED_ALPHA_GATES {
        let f = Feature::from_name(name).unwrap_or_else(|| panic!("{name}: not a gate of the registry"));
        assert!(!f.info().default, "{name}: on in v1.35");
        assert!(f.info().support == Support::DefaultOnly || f.blocked_by().is_some(), "{name}: ksched models it");
        let mut g = FeatureGates::default();
        assert!(g.set(f, true).is_err() || g.validate().is_err(), "{name}: accepted");
    }
}
