//! Plans, result lines and the Kubernetes objects, in process. The child-process paths (a
//! local sweep, resume, indices run as a Job's pods, `sweep merge`) are tested through the
//! binary in `tests/sweep_cli.rs`.

use std::path::{Path, PathBuf};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::emit::{self, Options};
use super::plan::{self, WorkloadKind};
use super::scenario::{Metrics, ScenarioResult, RESULT_KIND};
use super::*;
use crate::synth::Workload as Builtin;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sweep")
}

/// A fresh directory under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ksched-sweep-unit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn plan_twelve_scenarios_are_the_cross_product_in_plan_order() {
    let p = plan::load(&fixtures().join("plan-12.yaml")).unwrap();
    assert_eq!(p.scenarios.len(), 12);
    let labels: Vec<(String, String, u64)> =
        p.scenarios.iter().map(|s| (s.config.label.clone(), s.workload.label.clone(), s.seed)).collect();
    assert_eq!(labels[0], ("default".into(), "basic".into(), 1));
    assert_eq!(labels[2], ("default".into(), "basic".into(), 3));
    assert_eq!(labels[3], ("default".into(), "examples".into(), 1));
    assert_eq!(labels[11], ("most-allocated.yaml".into(), "examples".into(), 3));
    for (i, s) in p.scenarios.iter().enumerate() {
        assert_eq!(s.index, i);
        match s.workload.kind {
            WorkloadKind::Builtin(Builtin::Basic) => {
                assert_eq!((s.nodes, s.pods, s.warmup_pods), (Some(50), Some(200), Some(50)))
            }
            WorkloadKind::Manifests(ref f) => {
                assert_eq!(f.len(), 2);
                assert_eq!((s.nodes, s.pods, s.warmup_pods), (None, None, None));
            }
            ref other => panic!("unexpected workload {other:?}"),
        }
    }
    let mut ids: Vec<&str> = p.scenarios.iter().map(|s| s.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 12, "ids are unique");
    let again = plan::load(&fixtures().join("plan-12.yaml")).unwrap();
    assert_eq!(p.scenarios, again.scenarios, "ids and order are stable");
}

#[test]
fn plan_id_follows_file_content_not_location() {
    let d = scratch("ids");
    std::fs::create_dir_all(d.join("moved")).unwrap();
    let config = std::fs::read_to_string(fixtures().join("most-allocated.yaml")).unwrap();
    std::fs::write(d.join("c.yaml"), &config).unwrap();
    std::fs::write(d.join("moved/c.yaml"), &config).unwrap();
    let body = "workloads: [basic]\nseeds: [1]\nnodes: [10]\n";
    let here = format!("configs: [{{path: c.yaml, name: packed}}]\n{body}");
    let moved = format!("configs: [{{path: moved/c.yaml, name: packed}}]\n{body}");
    let id = |text: &str| plan::parse(text, &d.join("plan.yaml")).unwrap().scenarios[0].id.clone();
    assert_eq!(id(&here), id(&moved), "same label and bytes, other path: same id");
    std::fs::write(d.join("moved/c.yaml"), config.replace("MostAllocated", "LeastAllocated")).unwrap();
    assert_ne!(id(&here), id(&moved), "other bytes: other id");
    let renamed = format!("configs: [{{path: c.yaml, name: other}}]\n{body}");
    assert_ne!(id(&here), id(&renamed), "other label: other id");
    assert_ne!(id(&here), id(&here.replace("seeds: [1]", "seeds: [2]")));
    assert_ne!(id(&here), id(&here.replace("nodes: [10]", "nodes: [11]")));
}

#[test]
fn plan_bad_input_errors_name_the_field() {
    let d = scratch("errors");
    std::fs::write(d.join("manifest.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n").unwrap();
    let cases: &[(&str, &str, &str)] = &[
        (
            "unknown top-level field",
            "configs: [default]\nworkloads: [basic]\nseeds: [1]\nseed: 2\n",
            "unknown field `seed`",
        ),
        ("missing seeds", "configs: [default]\nworkloads: [basic]\n", "missing field `seeds`"),
        ("seed not a number", "configs: [default]\nworkloads: [basic]\nseeds: [x]\n", "seeds[0]"),
        (
            "unknown workload field",
            "configs: [default]\nworkloads: [{builtin: basic, tset: a}]\nseeds: [1]\n",
            "workloads[0].tset: unknown field `tset`",
        ),
        (
            "unknown built-in",
            "configs: [default]\nworkloads: [basik]\nseeds: [1]\n",
            "workloads[0].builtin: \"basik\" is not a built-in",
        ),
        (
            "two kinds",
            "configs: [default]\nworkloads: [{builtin: basic, manifests: [manifest.yaml]}]\nseeds: [1]\n",
            "workloads[0]: give exactly one",
        ),
        (
            "test without file",
            "configs: [default]\nworkloads: [{builtin: basic, test: X}]\nseeds: [1]\n",
            "workloads[0].test: applies only",
        ),
        ("missing config file", "configs: [default, nope.yaml]\nworkloads: [basic]\nseeds: [1]\n", "configs[1]: "),
        (
            "unknown config field",
            "configs: [{path: default, nmae: x}]\nworkloads: [basic]\nseeds: [1]\n",
            "configs[0].nmae: unknown field `nmae`",
        ),
        (
            "missing manifest",
            "configs: [default]\nworkloads: [{manifests: [gone.yaml]}]\nseeds: [1]\n",
            "workloads[0].manifests[0]: ",
        ),
        (
            "nodes without built-ins",
            "configs: [default]\nworkloads: [{manifests: [manifest.yaml]}]\nseeds: [1]\nnodes: [10]\n",
            "nodes: applies only to built-in workloads",
        ),
        (
            "pods without built-ins",
            "configs: [default]\nworkloads: [{manifests: [manifest.yaml]}]\nseeds: [1]\npods: [10]\n",
            "pods: applies only",
        ),
        ("zero nodes", "configs: [default]\nworkloads: [basic]\nseeds: [1]\nnodes: [0]\n", "nodes: must list"),
        ("no configs", "configs: []\nworkloads: [basic]\nseeds: [1]\n", "configs: is empty"),
        ("not YAML", "configs: [\n", "not YAML"),
    ];
    let file = d.join("plan.yaml");
    for (name, text, want) in cases {
        let err = plan::parse(text, &file).expect_err(name);
        assert!(err.starts_with(&file.display().to_string()), "{name}: {err}");
        assert!(err.contains(want), "{name}: {err:?} should contain {want:?}");
    }
}

fn result(index: usize, id: &str) -> ScenarioResult {
    ScenarioResult {
        kind: RESULT_KIND.into(),
        index,
        id: id.into(),
        scenario: plan::ScenarioLabel {
            config: "default".into(),
            workload: "basic".into(),
            nodes: Some(5),
            pods: None,
            seed: 1,
        },
        status: "ok".into(),
        settings: Vec::new(),
        warnings: Vec::new(),
        metrics: Metrics { scheduled: index, ..Metrics::default() },
        run_seconds: 0.5,
    }
}

#[test]
fn parse_results_reads_prefixed_log_lines_and_ignores_the_rest() {
    let a = serde_json::to_string(&result(1, "aa")).unwrap();
    let b = serde_json::to_string(&result(0, "bb")).unwrap();
    let logs = format!(
        "ksched: parallelism 4 capped to 2\n{{\"unrelated\": true}}\n[pod/sweep-1-x/ksched] {a}\n\nnot json\n{b}\n[pod/sweep-1-y/ksched] {a}\n"
    );
    let got = merge(parse_results(&logs, "logs").unwrap()).unwrap();
    assert_eq!(got, vec![result(0, "bb"), result(1, "aa")]);
    let bad = format!("{}\n", a.replace("\"status\"", "\"stauts\""));
    let err = parse_results(&bad, "logs").unwrap_err();
    assert!(err.starts_with("logs:1: a sweep result line that does not decode"), "{err}");
    let err = merge(vec![result(1, "aa"), result(1, "cc")]).unwrap_err();
    assert!(err.contains("two ids"), "{err}");
}

#[test]
fn table_without_timing_drops_only_wall_time_columns() {
    let mut a = result(0, "aa");
    let mut b = a.clone();
    a.metrics.pods_per_second = 10.0;
    b.metrics.pods_per_second = 99.0;
    b.run_seconds = 7.0;
    assert_eq!(table(std::slice::from_ref(&a), false), table(std::slice::from_ref(&b), false));
    assert_ne!(table(std::slice::from_ref(&a), true), table(std::slice::from_ref(&b), true));
    b.metrics.scheduled = 3;
    assert_ne!(table(std::slice::from_ref(&a), false), table(std::slice::from_ref(&b), false));
}

/// Decodes `yaml` as `T`, failing on a field `T` does not have: k8s-openapi's decoders skip
/// unknown fields, so the decoded object, encoded again, must be the input exactly.
pub(crate) fn decode_strict<T: DeserializeOwned + Serialize>(yaml: &str) -> Result<T, String> {
    let value: serde_json::Value = yaml_serde::from_str(yaml).map_err(|e| e.to_string())?;
    let t: T = serde_path_to_error::deserialize(value.clone()).map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    let again = serde_json::to_value(&t).map_err(|e| e.to_string())?;
    if again != value {
        return Err(format!("fields were lost or changed in decoding:\n{value:#}\nvs\n{again:#}"));
    }
    Ok(t)
}

#[test]
fn decode_strict_rejects_unknown_and_misspelled_fields() {
    let ok = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n";
    decode_strict::<ConfigMap>(ok).unwrap();
    assert!(decode_strict::<ConfigMap>(&ok.replace("data:", "dta:")).is_err());
    assert!(decode_strict::<ConfigMap>(&ok.replace("kind: ConfigMap", "kind: Secret")).is_err());
}

fn opts() -> Options {
    Options {
        name: "sw".into(),
        image: "example.com/ksched:1".into(),
        parallelism: 50,
        cpu: "1".into(),
        memory: "1Gi".into(),
        settings: Default::default(),
    }
}

#[test]
fn emit_objects_decode_strictly_and_hold_the_security_settings() {
    let p = plan::load(&fixtures().join("plan-12.yaml")).unwrap();
    let (cm, job) = emit::objects(&p, &opts()).unwrap();
    let cm: ConfigMap = decode_strict(&emit::to_yaml(&cm).unwrap()).unwrap();
    let job: Job = decode_strict(&emit::to_yaml(&job).unwrap()).unwrap();

    let spec = job.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(spec.completions, Some(12));
    assert_eq!(spec.parallelism, Some(12), "capped at the scenario count");
    assert_eq!(spec.backoff_limit_per_index, Some(2));
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(pod.automount_service_account_token, Some(false));
    let psc = pod.security_context.as_ref().unwrap();
    assert_eq!(psc.run_as_non_root, Some(true));
    assert!(psc.run_as_user.is_some_and(|u| u > 0));
    assert_eq!(psc.seccomp_profile.as_ref().unwrap().type_, "RuntimeDefault");
    assert_eq!(pod.containers.len(), 1);
    let c = &pod.containers[0];
    assert_eq!(c.image.as_deref(), Some("example.com/ksched:1"));
    assert_eq!(c.args.as_deref().unwrap(), ["sweep", "/plan/plan.yaml", "--index-from-env"]);
    // The Job's pods run under the sweep's settings.
    let settings = super::scenario::Settings {
        gates: crate::feature_gates::parse_flag("SchedulerPopFromBackoffQ=false").unwrap(),
        api: crate::front_ends::PreemptionApiArgs { preemption_api_delay: std::time::Duration::from_millis(1500) },
        strict: true,
    };
    let (_, with) = emit::objects(&p, &Options { settings, ..opts() }).unwrap();
    let args = with.spec.unwrap().template.spec.unwrap().containers[0].args.clone().unwrap();
    assert_eq!(
        args[3..],
        ["--feature-gates", "SchedulerPopFromBackoffQ=false", "--preemption-api-delay", "1.5s", "--strict"],
        "{args:?}"
    );
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.run_as_non_root, Some(true));
    assert!(sc.run_as_user.is_some_and(|u| u > 0));
    assert_eq!(sc.capabilities.as_ref().unwrap().drop.as_deref().unwrap(), ["ALL"]);
    let res = c.resources.as_ref().unwrap();
    for q in [res.requests.as_ref().unwrap(), res.limits.as_ref().unwrap()] {
        assert_eq!(q["cpu"].0, "1");
        assert_eq!(q["memory"].0, "1Gi");
    }
    let mounts = c.volume_mounts.as_ref().unwrap();
    assert!(mounts.iter().any(|m| m.mount_path == "/plan" && m.read_only == Some(true)));
    assert!(mounts.iter().any(|m| m.mount_path == "/tmp"));

    // Every key the volume mounts is in the ConfigMap, and every key is mounted.
    let data = cm.data.as_ref().unwrap();
    let vol = pod.volumes.as_ref().unwrap().iter().find(|v| v.name == "plan").unwrap();
    let source = vol.config_map.as_ref().unwrap();
    assert_eq!(source.name, cm.metadata.name.clone().unwrap());
    let items = source.items.as_ref().unwrap();
    assert_eq!(items.len(), data.len());
    for item in items {
        assert!(data.contains_key(&item.key), "{} mounted but not in the ConfigMap", item.key);
        assert!(item.key.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c)), "{}", item.key);
        assert!(!item.path.split('/').any(|part| part == ".."), "{}", item.path);
    }
    assert_eq!(data.len(), 4, "the plan, one config and two manifests");
}

/// The ConfigMap as the kubelet mounts it: each item's key written at its path under `dir`.
pub(crate) fn materialize(cm: &ConfigMap, job: &Job, dir: &Path) {
    let data = cm.data.as_ref().unwrap();
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let vol = pod.volumes.as_ref().unwrap().iter().find(|v| v.name == "plan").unwrap();
    for item in vol.config_map.as_ref().unwrap().items.as_ref().unwrap() {
        let path = dir.join(&item.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &data[&item.key]).unwrap();
    }
}

#[test]
fn emit_mounted_plan_has_the_same_scenarios_and_ids() {
    let p = plan::load(&fixtures().join("plan-12.yaml")).unwrap();
    let (cm, job) = emit::objects(&p, &opts()).unwrap();
    let d = scratch("mount");
    materialize(&cm, &job, &d);
    let mounted = plan::load(&d.join("plan.yaml")).unwrap();
    let key = |p: &plan::Plan| p.scenarios.iter().map(|s| (s.index, s.id.clone(), s.label())).collect::<Vec<_>>();
    assert_eq!(key(&mounted), key(&p));
    for c in &mounted.configs {
        if let Some(path) = &c.path {
            assert!(path.starts_with(&d), "{} is read from the mount", path.display());
        }
    }
}

#[test]
fn emit_workload_file_brings_the_files_it_names() {
    let d = scratch("perf");
    std::fs::create_dir_all(d.join("perf/templates")).unwrap();
    std::fs::create_dir_all(d.join("plans")).unwrap();
    std::fs::write(
        d.join("perf/templates/pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\nspec:\n  containers:\n  - {name: c, image: x, resources: {requests: {cpu: 100m}}}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("perf/w.yaml"),
        "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, count: 3}\n  - {opcode: createPods, count: 5, podTemplatePath: templates/pod.yaml, collectMetrics: true}\n  workloads:\n  - name: small\n",
    )
    .unwrap();
    std::fs::write(d.join("plans/p.yaml"), "configs: [default]\nworkloads: [{file: ../perf/w.yaml}]\nseeds: [1]\n")
        .unwrap();
    let p = plan::load(&d.join("plans/p.yaml")).unwrap();
    assert_eq!(p.scenarios.len(), 1);
    assert_eq!(p.scenarios[0].workload.label, "../perf/w.yaml:T/small");
    let (cm, job) = emit::objects(&p, &opts()).unwrap();
    let m = scratch("perf-mount");
    materialize(&cm, &job, &m);
    assert!(m.join("files/w.yaml").is_file() && m.join("files/templates/pod.yaml").is_file());
    let mounted = plan::load(&m.join("plan.yaml")).unwrap();
    assert_eq!(mounted.scenarios[0].id, p.scenarios[0].id);
    assert_eq!(mounted.scenarios[0].label(), p.scenarios[0].label());
    let r = scenario::run(&mounted.scenarios[0], Default::default()).unwrap();
    assert_eq!(r.status, "ok");
    assert_eq!(r.metrics.scheduled, 5);
    assert_eq!(r.metrics.nodes, 3);
}

/// `ksched sweep --strict`: a field of a scenario's manifests or workload file that ksched
/// does not model fails the scenario (manifests: an error; a workload file: a `failed:`
/// status), naming the pod and field; without it the scenario runs.
#[test]
fn scenario_strict_refuses_unmodelled_fields_of_manifests_and_workload_files() {
    let d = scratch("strict");
    let file = crate::perf_file::tests::unmodelled_field_file("sweep");
    std::fs::write(
        d.join("gang.yaml"),
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"10\"}}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: g, namespace: default}\nspec:\n  workloadRef: {name: w, podGroup: g}\n  \
         containers: [{name: c, image: x}]\n",
    )
    .unwrap();
    let plan = format!(
        "configs: [default]\nworkloads: [{{manifests: [gang.yaml], name: gang}}, {{file: {}}}]\nseeds: [1]\n",
        file.display()
    );
    std::fs::write(d.join("p.yaml"), plan).unwrap();
    let p = plan::load(&d.join("p.yaml")).unwrap();
    let strict = super::scenario::Settings { strict: true, ..Default::default() };
    for s in &p.scenarios {
        let r = scenario::run(s, Default::default()).unwrap();
        assert_eq!((r.status.as_str(), r.metrics.scheduled), ("ok", 1), "{}", s.id);
        // Never silent: the field is in the result's warnings.
        let w = r.warnings.join("\n");
        assert!(w.starts_with("spec.workloadRef: not modelled by ksched, set on 1 object(s) (pod "), "{}: {w}", s.id);
    }
    let e = scenario::run(&p.scenarios[0], strict).unwrap_err();
    assert!(e.contains("spec.workloadRef") && e.contains("--strict"), "{e}");
    let r = scenario::run(&p.scenarios[1], strict).unwrap();
    assert!(r.status.starts_with("failed: ") && r.status.contains("spec.workloadRef"), "{}", r.status);
    assert_eq!(r.settings, ["--strict"]);
    std::fs::remove_dir_all(file.parent().unwrap()).ok();
}

#[test]
fn emit_bad_name_is_an_error() {
    let p = plan::load(&fixtures().join("plan-12.yaml")).unwrap();
    for bad in ["", "Sweep", "-a", "a_b", &"a".repeat(53)] {
        let err = emit::objects(&p, &Options { name: bad.into(), ..opts() }).unwrap_err();
        assert!(err.starts_with("--name"), "{bad}: {err}");
    }
}

#[test]
fn scenario_basic_on_four_nodes_counts_are_exact() {
    // 4 nodes of 4 CPU; 8 measured pods of 100m and no warm-up: LeastAllocated spreads them
    // 2 per node; every node is in use at 200m / 4000m.
    let text = "configs: [default]\nworkloads: [basic]\nseeds: [1]\nnodes: [4]\npods: [8]\nwarmup_pods: 0\n";
    let p = plan::parse(text, &fixtures().join("inline.yaml")).unwrap();
    let r = scenario::run(&p.scenarios[0], Default::default()).unwrap();
    let m = &r.metrics;
    assert_eq!((m.nodes, m.scheduled, m.pending, m.nodes_in_use), (4, 8, Some(0), 4));
    assert!((m.cpu_mean - 0.05).abs() < 1e-12, "{}", m.cpu_mean);
    assert!(m.cpu_stddev.abs() < 1e-12, "{}", m.cpu_stddev);
}

#[test]
fn scenario_most_allocated_packs_onto_fewer_nodes() {
    let text =
        "configs: [most-allocated.yaml]\nworkloads: [basic]\nseeds: [1]\nnodes: [4]\npods: [8]\nwarmup_pods: 0\n";
    let p = plan::parse(text, &fixtures().join("inline.yaml")).unwrap();
    let m = scenario::run(&p.scenarios[0], Default::default()).unwrap().metrics;
    // MostAllocated keeps adding to the fullest node: all 8 pods (800m) on one node.
    assert_eq!((m.scheduled, m.nodes_in_use), (8, 1));
    // Utilization 0.2, 0, 0, 0: mean 0.05, population stddev sqrt(0.0075).
    assert!((m.cpu_mean - 0.05).abs() < 1e-12);
    assert!((m.cpu_stddev - 0.0075f64.sqrt()).abs() < 1e-12, "{}", m.cpu_stddev);
}

#[test]
fn scenario_throughput_counts_only_the_measured_phase() {
    // 8 warm-up pods and no measured ones: all 8 are scheduled, none in the measured phase.
    let text = "configs: [default]\nworkloads: [basic]\nseeds: [1]\nnodes: [4]\npods: [0]\nwarmup_pods: 8\n";
    let p = plan::parse(text, &fixtures().join("inline.yaml")).unwrap();
    let m = scenario::run(&p.scenarios[0], Default::default()).unwrap().metrics;
    assert_eq!((m.scheduled, m.attempts), (8, 8));
    assert_eq!(m.pods_per_second, 0.0);
}
