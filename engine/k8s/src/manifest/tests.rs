use super::*;
use crate::testing::KubectlDump;
use ksched_engine::api::{IntOrPercent, PreemptionPolicy, ResourceName};
use ksched_engine::framework::Profile;
use std::collections::BTreeMap;

const CLUSTER: &str = r#"
# a comment before the first document
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {zone: a}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
---
---
apiVersion: v1
kind: Namespace
metadata:
  name: prod
  labels: {team: web}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: prod}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
"#;

const PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: prod, labels: {app: web}}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: second}
spec:
  priorityClassName: high
  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata: {name: first}
spec:
  containers: [{name: c, image: nginx}]
"#;

fn read(files: &[(&str, &str)]) -> Result<Manifests, ManifestError> {
    let mut m = Manifests::new();
    for (name, text) in files {
        m.read_str(name, text)?;
    }
    Ok(m)
}

fn names(pods: impl Iterator<Item = impl std::ops::Deref<Target = ManifestPod>>) -> Vec<String> {
    pods.map(|p| p.pod.key()).collect()
}

#[test]
fn manifest_multi_document_yaml_reads_every_kind_and_skips_empty_documents() {
    let m = read(&[("cluster.yaml", CLUSTER), ("pods.yaml", PODS)]).unwrap();
    assert_eq!(m.nodes.len(), 1);
    let (node, source) = &m.nodes[0];
    assert_eq!((node.name.as_str(), node.allocatable.milli_cpu, node.allocatable.memory), ("n1", 4000, 16 << 30));
    assert_eq!((source.file.as_ref(), source.document, source.line), ("cluster.yaml", 1, Some(3)));
    assert_eq!(m.namespaces[0].0, Sym::new("prod"));
    assert_eq!(m.namespaces[0].1, Labels::from_pairs([("team", "web")]));
    assert_eq!(m.namespaces[0].2.document, 3, "the empty second document still counts");
    assert_eq!(m.priority_classes[0].0.value, 1000);
    assert_eq!(m.pdbs[0].pdb.min_available, Some(IntOrPercent::Int(1)));
    assert!(!m.pdbs[0].has_status);
    assert_eq!(names(m.bound_pods()), ["prod/running"]);
    assert_eq!(names(m.pending_pods()), ["default/second", "default/first"], "file order");
    assert_eq!(m.pods[1].source.line, Some(8));
}

#[test]
fn manifest_lists_json_streams_and_arrays_are_opened() {
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "kind List with kinds on the items",
            r#"{"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}},
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"}}]}"#,
            &["a", "b"],
        ),
        (
            "NodeList items without apiVersion and kind",
            "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: a}\n- metadata: {name: b}\n",
            &["a", "b"],
        ),
        ("empty List", "apiVersion: v1\nkind: List\nitems: []\n", &[]),
        (
            "JSON stream",
            "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}}\n\
             {\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"b\"}}",
            &["a", "b"],
        ),
        ("JSON array (nodes.json)", r#"[{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}}]"#, &["a"]),
        ("only comments", "# nothing here\n", &[]),
    ];
    for (name, text, want) in cases {
        let m = read(&[("f", text)]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Vec<&str> = m.nodes.iter().map(|(n, _)| n.name.as_str()).collect();
        assert_eq!(got, want, "{name}");
    }
    let m = read(&[("f.json", "\n\n{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}}")])
        .unwrap();
    assert_eq!(m.nodes[0].1.line, Some(3));
}

#[test]
fn manifest_quantities_parse_as_kubernetes_does() {
    // (cpu as written, memory as written, want millicores, want bytes)
    let cases = [
        ("100m", "500Mi", 100, 500 << 20),
        ("0.5", "1.5Gi", 500, 3 << 29),
        ("2e3", "1k", 2_000_000, 1000),
        ("2", "1e3", 2000, 1000),
        ("1.5", "1G", 1500, 1_000_000_000),
        (".5", "128974848", 500, 128_974_848),
        ("\"250m\"", "\"64Mi\"", 250, 64 << 20),
    ];
    for (cpu, memory, want_cpu, want_memory) in cases {
        let text = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests: {{cpu: {cpu}, memory: {memory}}}\n"
        );
        let m = read(&[("f", &text)]).unwrap_or_else(|e| panic!("{cpu} {memory}: {e}"));
        let r = m.pods[0].pod.requests();
        assert_eq!((r.milli_cpu, r.memory), (want_cpu, want_memory), "{cpu} {memory}");
    }
    let m =
        read(&[("f", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {capacity: {cpu: 8, pods: 110}}\n")])
            .unwrap();
    assert_eq!((m.nodes[0].0.allocatable.milli_cpu, m.nodes[0].0.allocatable.allowed_pod_number), (8000, 110));
    assert_eq!(m.nodes[0].0.allocatable.get(ResourceName::Cpu), 8000);
}

/// One error case: files, then what the error must name.
struct ErrCase {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    file: &'static str,
    document: Option<u32>,
    line: Option<u32>,
    item: Option<u32>,
    object: &'static str,
    field: &'static str,
    message: &'static str,
}

/// A case in document 1 (line 1) of file `f`.
fn case(
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    object: &'static str,
    field: &'static str,
    message: &'static str,
) -> ErrCase {
    ErrCase { name, files, file: "f", document: Some(1), line: Some(1), item: None, object, field, message }
}

impl ErrCase {
    fn at(self, file: &'static str, document: Option<u32>, line: Option<u32>, item: Option<u32>) -> ErrCase {
        ErrCase { file, document, line, item, ..self }
    }
}

const NODE_A: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n";

#[test]
fn manifest_errors_name_file_document_object_and_field() {
    let cases = [
        case("malformed YAML", &[("f.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a\n")], "", "", "malformed YAML").at("f.yaml", Some(1), Some(4), None),
        case("malformed YAML in the second document", &[("f.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nkind: [\n")], "", "", "malformed YAML").at("f.yaml", Some(2), Some(6), None),
        case("malformed JSON", &[("f.json", "{\"apiVersion\": \"v1\",\n \"kind\": }")], "", "", "malformed JSON").at("f.json", Some(1), Some(2), None),
        case("workload without its selector", &[("f", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {}}\n")], "deployment default/d", "spec.selector", "Required value"),
        case("workload template's bad quantity", &[("f", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: 1x}}}]}}}\n")], "job default/j", "spec.template.spec.containers[0].resources.requests.cpu", "unknown suffix"),
        case("workload of a wrong apiVersion", &[("f", "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: d}\n")], "", "apiVersion", "ksched reads Deployment as \"apps/v1\""),
        case("wrong apiVersion", &[("f", "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: d}\n")], "", "apiVersion", "ksched reads PodDisruptionBudget as \"policy/v1\""),
        case("missing kind", &[("f", "apiVersion: v1\nmetadata: {name: d}\n")], "", "kind", "Required value"),
        case("missing name", &[("f", "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\nspec: {containers: [{name: c}]}\n")], "pod x/", "metadata.name", "Required value"),
        case("missing required field", &[("f", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\n")], "priorityclass p", "value", "Required value"),
        case("pod without containers", &[("f", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n")], "pod default/p", "spec.containers", "Required value"),
        case("container without a name", &[("f", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}, {image: x}]}\n")], "pod default/p", "spec.containers[1].name", "Required value"),
        case("bad quantity", &[(
                "f",
                "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: 1x}}\n",
            )], "pod default/p", "spec.containers[0].resources.requests.cpu", "unknown suffix"),
        case("unknown field (typo)", &[(
                "f",
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resource: {requests: {cpu: 1}}\n",
            )], "pod default/p", "spec.containers[0].resource", "unknown field"),
        case("wrong type", &[("f", "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: [x]}\n")], "node a", "metadata.labels", "invalid type"),
        case("list item", &[(
                "f",
                "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a}}\n- {apiVersion: v1, kind: Node, metadata: {name: b}, spec: {taints: [{key: k, effect: Sometimes}]}}\n",
            )], "node b", "spec.taints[0].effect", "unsupported value \"Sometimes\"").at("f", Some(1), Some(1), Some(1)),
        case("a scalar document", &[("f", "just text\n")], "", "", "expected a Kubernetes object (a mapping), got a string"),
        case("typed list of another version", &[("f", "apiVersion: v2\nkind: PodList\nitems: []\n")], "", "apiVersion", "ksched reads PodList as \"v1\""),
    ];
    for c in cases {
        let e = read(c.files).and_then(|m| load(&m).map(|_| m)).expect_err(c.name);
        let got = (e.file.as_str(), e.document, e.line, e.item, e.object.as_str(), e.field.as_str());
        assert_eq!(got, (c.file, c.document, c.line, c.item, c.object, c.field), "{}: {e}", c.name);
        assert!(e.message.contains(c.message), "{}: {e}", c.name);
        assert!(e.to_string().starts_with(c.file), "{}: {e}", c.name);
    }
    // Same name in another namespace, or of another kind, is not a duplicate.
    let ok = read(&[(
        "f",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\nspec: {containers: [{name: c}]}\n---\n\
         apiVersion: v1\nkind: Node\nmetadata: {name: a}\n",
    )]);
    assert!(ok.is_ok(), "{ok:?}");
    let e = Manifests::new().read_bytes("bin", &[0xff, 0xfe]).unwrap_err();
    assert!(e.message.starts_with("not UTF-8"), "{e}");
}

#[test]
fn manifest_error_display_reads_as_one_line() {
    let e = read(&[("pods.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n")])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "pods.yaml: document 1 (line 1): pod default/p: spec.containers[0].resources.requests.cpu: quantity \"lots\": no number"
    );
}

#[test]
fn manifest_load_builds_the_simulation_with_objects_bound_and_pending_pods() {
    let m = read(&[("cluster.yaml", CLUSTER), ("pods.yaml", PODS)]).unwrap();
    let (sim, pending) = m.load(Profile::default_profile(), QueueConfig::new(), 1).unwrap();
    let objects = sim.cache.objects();
    assert_eq!(objects.namespace_labels(Sym::new("prod")), Some(&Labels::from_pairs([("team", "web")])));
    assert!(objects.priority_class(Sym::new("high")).is_some());
    // minAvailable 1 of the one bound pod selected: no disruption allowed, computed.
    assert_eq!(objects.pdbs[0].disruptions_allowed, 0);
    let snapshot = sim.cache.update_snapshot();
    assert_eq!(snapshot.get(Sym::new("n1")).map(|n| n.pods().len()), Some(1));
    let admitted: Vec<(String, i32)> = pending.iter().map(|p| (p.pod.key(), p.pod.priority)).collect();
    assert_eq!(admitted, [("default/second".to_owned(), 1000), ("default/first".to_owned(), 0)]);
    assert_eq!(pending[0].pod.preemption_policy, PreemptionPolicy::PreemptLowerPriority);
    assert!(pending.iter().all(|p| p.not_queued.is_none()));
}

#[test]
fn manifest_load_errors_name_the_pod_source() {
    let cases = [(
        "unknown priority class",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priorityClassName: nope, containers: [{name: c}]}\n",
        "spec.priorityClassName",
    )];
    for (name, pods, field) in cases {
        let m = read(&[("cluster.yaml", CLUSTER), ("pods.yaml", pods)]).unwrap();
        let e = m.load(Profile::default_profile(), QueueConfig::new(), 1).map(|_| ()).expect_err(name);
        assert_eq!(
            (e.file.as_str(), e.document, e.object.as_str(), e.field.as_str()),
            ("pods.yaml", Some(1), "pod default/p", field),
            "{name}: {e}"
        );
    }
}

#[test]
fn manifest_load_holds_back_gated_pods_and_other_schedulers() {
    let pods = "apiVersion: v1\nkind: Pod\nmetadata: {name: gated}\nspec: {schedulingGates: [{name: wait}], containers: [{name: c}]}\n---\n\
                apiVersion: v1\nkind: Pod\nmetadata: {name: other}\nspec: {schedulerName: mine, containers: [{name: c}]}\n";
    let m = read(&[("cluster.yaml", CLUSTER), ("pods.yaml", pods)]).unwrap();
    let (mut sim, pending) = m.load(Profile::default_profile(), QueueConfig::new(), 1).unwrap();
    let why: Vec<String> =
        pending.iter().map(|p| p.not_queued.as_ref().map(ToString::to_string).unwrap_or_default()).collect();
    assert_eq!(
        why,
        [
            "waiting for scheduling gates: [wait]",
            "spec.schedulerName \"mine\" names no profile of this scheduler: another scheduler's pod"
        ]
    );
    let mut cycles = 0;
    sim.drain(|_, _| cycles += 1);
    assert_eq!(cycles, 0);
}

#[test]
fn manifest_reads_the_golden_cases_objects_strictly() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/golden");
    let Ok(entries) = std::fs::read_dir(&root) else {
        println!("skipped: {} not found", root.display());
        return;
    };
    let mut read_any = false;
    for case in entries.flatten() {
        // The recorded arrays carry no apiVersion / kind: read them as the typed lists.
        let mut m = Manifests::new();
        for (file, list) in [("nodes.json", "NodeList"), ("pods.json", "PodList")] {
            let Ok(items) = std::fs::read_to_string(case.path().join(file)) else { continue };
            let text = format!("{{\"apiVersion\": \"v1\", \"kind\": \"{list}\", \"items\": {items}}}");
            m.read_str(&case.path().join(file).display().to_string(), &text).unwrap_or_else(|e| panic!("{e}"));
        }
        read_any |= !m.nodes.is_empty() && !m.pods.is_empty();
    }
    assert!(read_any, "no case under {}", root.display());
}

/// Runs `sim` until idle with the controllers' event source.
fn run(
    sim: &mut Simulation,
    controllers: &mut OrderedReady,
    mut f: impl FnMut(&ksched_engine::scheduler::CycleOutcome),
) {
    use ksched_sim::simulation::{RunOptions, Until};
    let mut obs = |o: &ksched_engine::scheduler::CycleOutcome, _: u64| f(o);
    sim.run(Until::Idle, &RunOptions::default(), &mut [controllers], &mut [&mut obs]).unwrap();
}

fn load(m: &Manifests) -> Result<Loaded, ManifestError> {
    m.load_full(Profile::default_profile(), QueueConfig::new(), 1)
}

#[test]
fn manifest_kubectl_dump_reads_cleanly_skipping_terminal_pods_and_unmodelled_kinds() {
    let dump = KubectlDump::default()
        .node("n1", "4")
        .node("n2", "4")
        .pod("running", Some("n1"), "1", "Running", None)
        .pod("job-done", Some("n1"), "3", "Succeeded", None)
        .pod("evicted", Some("n2"), "3", "Failed", Some("Evicted"))
        .pod("pending", None, "3", "Pending", None)
        .service("web", "running")
        .other("v1", "ConfigMap", "kube-root-ca.crt")
        .other("v1", "Secret", "token")
        .other("rbac.authorization.k8s.io/v1", "Role", "reader")
        .other("example.com/v1", "Widget", "w")
        .yaml();
    let m = read(&[("dump.yaml", &dump)]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.nodes.len(), 2);
    assert_eq!(names(m.bound_pods()), ["default/running"]);
    assert_eq!(names(m.pending_pods()), ["default/pending"]);
    assert_eq!(m.terminal_pods, BTreeMap::from([("Failed".to_owned(), 1), ("Succeeded".to_owned(), 1)]));
    let skipped: Vec<(&str, usize)> = m.skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        skipped,
        [("ConfigMap", 1), ("Role (rbac.authorization.k8s.io/v1)", 1), ("Secret", 1), ("Widget (example.com/v1)", 1)]
    );
    assert_eq!(
        m.skipped_summary().unwrap(),
        "skipped 4 object(s) of kinds ksched does not model (ConfigMap 1, Role (rbac.authorization.k8s.io/v1) 1, \
         Secret 1, Widget (example.com/v1) 1) and 2 terminal pod(s) (Failed 1, Succeeded 1)"
    );
    // The Service is modelled; the pending 3-CPU pod fits only because the terminal pods
    // hold nothing.
    let mut loaded = load(&m).unwrap();
    assert_eq!(loaded.sim.cache.objects().services.len(), 1);
    let mut nodes = Vec::new();
    loaded.sim.drain(|o, _| {
        if let ksched_engine::scheduler::CycleOutcome::Scheduled { decision, .. } = o {
            nodes.push(decision.node.to_string());
        }
    });
    assert_eq!(nodes, ["n2"]);
}

#[test]
fn manifest_unmodelled_kind_is_an_error_when_strict() {
    let text = "apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: a}\n";
    let m = read(&[("f", text)]).unwrap();
    assert_eq!(m.skipped.get("ConfigMap"), Some(&1), "a typed list of a skipped kind skips its items");
    let mut strict = Manifests::with_options(ReadOptions { strict: true, ..ReadOptions::default() });
    let e = strict.read_str("f", text).unwrap_err();
    assert_eq!((e.item, e.field.as_str()), (Some(0), "kind"), "{e}");
    assert!(e.message.contains("Unsupported value: \"ConfigMap\""), "{e}");
}

#[test]
fn manifest_terminating_pod_keeps_its_resources() {
    let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: '2', pods: '10'}}\n---\n\
                apiVersion: v1\nkind: Pod\nmetadata: {name: old, deletionTimestamp: '2026-11-24T08:00:00Z'}\n\
                spec: {nodeName: n, containers: [{name: c, resources: {requests: {cpu: '2'}}}]}\nstatus: {phase: Running}\n---\n\
                apiVersion: v1\nkind: Pod\nmetadata: {name: new}\nspec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}\n";
    let m = read(&[("f", text)]).unwrap();
    assert!(m.terminal_pods.is_empty());
    let mut loaded = load(&m).unwrap();
    let mut scheduled = 0;
    loaded
        .sim
        .drain(|o, _| scheduled += usize::from(matches!(o, ksched_engine::scheduler::CycleOutcome::Scheduled { .. })));
    assert_eq!(scheduled, 0, "the terminating pod still holds the node's CPU");
}

#[test]
fn manifest_directory_reads_manifest_files_and_recurses_only_with_r() {
    let dir = std::env::temp_dir().join(format!("ksched-manifest-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let node = |n: &str| format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {n}}}\n");
    std::fs::write(dir.join("b.yml"), node("b")).unwrap();
    std::fs::write(dir.join("a.yaml"), node("a")).unwrap();
    std::fs::write(dir.join("c.json"), r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "c"}}"#).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a manifest").unwrap();
    std::fs::write(dir.join("sub").join("d.yaml"), node("d")).unwrap();
    let flat = read_files_with(&[&dir], ReadOptions::default()).unwrap();
    let got: Vec<&str> = flat.nodes.iter().map(|(n, _)| n.name.as_str()).collect();
    assert_eq!(got, ["a", "b", "c"]);
    let deep = read_files_with(&[&dir], ReadOptions { recursive: true, ..ReadOptions::default() }).unwrap();
    let got: Vec<&str> = deep.nodes.iter().map(|(n, _)| n.name.as_str()).collect();
    assert_eq!(got, ["a", "b", "c", "d"]);
    assert!(deep.nodes[3].1.file.ends_with("d.yaml"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn manifest_load_creates_statefulset_ordinals_one_after_another() {
    // Room for two of the three ordinals: db-0 and db-1 bind one after the other; db-2 is
    // created once db-1 is bound and stays unschedulable; the claims exist.
    let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: '2', pods: '10'}}\n---\n\
                apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: db}}\n  \
                template: {metadata: {labels: {app: db}}, spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}}\n";
    let m = read(&[("f", text)]).unwrap();
    let Loaded { mut sim, pending, mut controllers, .. } = load(&m).unwrap();
    let waiting: Vec<(String, Option<String>)> =
        pending.iter().map(|p| (p.pod.key(), p.not_queued.as_ref().map(ToString::to_string))).collect();
    assert_eq!(
        waiting,
        [
            ("default/db-0".to_owned(), None),
            (
                "default/db-1".to_owned(),
                Some("not created: the StatefulSet (OrderedReady) waits for default/db-0 to be bound".to_owned())
            ),
            (
                "default/db-2".to_owned(),
                Some("not created: the StatefulSet (OrderedReady) waits for default/db-1 to be bound".to_owned())
            ),
        ]
    );
    assert_eq!(
        ksched_engine::queue::SchedulingQueue::pending_pods(&*sim.queue).len(),
        0,
        "nothing is created before the simulation runs"
    );
    let mut outcomes = Vec::new();
    run(&mut sim, &mut controllers, |o| {
        outcomes.push(match o {
            ksched_engine::scheduler::CycleOutcome::Scheduled { pod, .. } => format!("{} scheduled", pod.name),
            ksched_engine::scheduler::CycleOutcome::Unschedulable { pod, .. } => format!("{} unschedulable", pod.name),
            ksched_engine::scheduler::CycleOutcome::BindFailed { pod, .. } => format!("{} bind failed", pod.name),
        })
    });
    assert_eq!(outcomes, ["db-0 scheduled", "db-1 scheduled", "db-2 unschedulable"]);
    // With no room for db-0, db-1 and db-2 are never created.
    let m = read(&[("f", &text.replace("cpu: '2'", "cpu: 500m"))]).unwrap();
    let Loaded { mut sim, mut controllers, .. } = load(&m).unwrap();
    let mut created = Vec::new();
    run(&mut sim, &mut controllers, |o| {
        if let ksched_engine::scheduler::CycleOutcome::Unschedulable { pod, .. } = o {
            created.push(pod.name.to_string());
        }
    });
    created.dedup();
    assert_eq!(created, ["db-0"]);
}

const STORAGE: &str = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Retain
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.kubernetes.io/zone, values: [b]}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-1, labels: {disk: ssd}}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: zonal
  volumeMode: Block
  claimRef: {namespace: default, name: data}
  local: {path: /mnt/1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a]}]
status: {phase: Available}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  uid: u-1
  annotations: {volume.kubernetes.io/selected-node: n1}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: zonal
  resources: {requests: {storage: 5Gi}}
  selector: {matchLabels: {disk: ssd}}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: n1}
spec:
  drivers:
  - {name: ebs.csi.aws.com, nodeID: i-1, allocatable: {count: 25}}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: ebs.csi.aws.com}
spec: {storageCapacity: true}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: cap-b, namespace: kube-system}
storageClassName: zonal
nodeTopology: {matchLabels: {topology.kubernetes.io/zone: b}}
capacity: 100Gi
maximumVolumeSize: 50Gi
"#;

#[test]
fn manifest_reads_the_storage_kinds() {
    use ksched_engine::api::{AccessMode, VolumeBindingMode, VolumePhase};
    let m = read(&[("storage.yaml", STORAGE)]).unwrap();
    let s = &m.storage;
    let sc = s.storage_class(Sym::new("zonal")).expect("class");
    assert_eq!(sc.volume_binding_mode, VolumeBindingMode::WaitForFirstConsumer);
    assert_eq!(sc.reclaim_policy, Sym::new("Retain"));
    assert!(sc.allows_topology(&Labels::from_pairs([("topology.kubernetes.io/zone", "b")])));
    assert!(!sc.allows_topology(&Labels::from_pairs([("topology.kubernetes.io/zone", "a")])));
    let pv = s.pv(Sym::new("local-1")).expect("pv");
    assert_eq!((pv.capacity, pv.block, pv.phase), (10 << 30, true, VolumePhase::Available));
    assert_eq!(pv.access_modes.as_slice(), [AccessMode::ReadWriteOnce]);
    assert!(!pv.node_affinity_allows(&Labels::from_pairs([("topology.kubernetes.io/zone", "b")])));
    let pvc = s.pvc(Sym::new("default"), Sym::new("data")).expect("claim");
    assert_eq!((pvc.request, pvc.uid, pvc.selected_node), (Some(5 << 30), Sym::new("u-1"), Sym::new("n1")));
    assert!(pvc.selector.is_some() && !pvc.is_fully_bound());
    assert!(pv.is_bound_to(pvc), "a claimRef without uid names the claim");
    assert_eq!(s.csi_node(Sym::new("n1")).and_then(|n| n.allocatable(Sym::new("ebs.csi.aws.com"))), Some(25));
    assert!(s.csi_driver(Sym::new("ebs.csi.aws.com")).is_some_and(|d| d.storage_capacity));
    let cap = &s.capacities()[0];
    assert_eq!((cap.namespace, cap.volume_limit()), (Sym::new("kube-system"), Some(50 << 30)));
}

#[test]
fn manifest_storage_errors_name_object_and_field() {
    let cases: [(&str, &str, &str, &str); 6] = [
        (
            "bad claim size",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {resources: {requests: {storage: 5Zi}}}\n",
            "persistentvolumeclaim default/c",
            "spec.resources.requests.storage",
        ),
        (
            "bad binding mode",
            "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\nprovisioner: x\nvolumeBindingMode: Later\n",
            "storageclass s",
            "volumeBindingMode",
        ),
        ("class without provisioner", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\n", "storageclass s", "provisioner"),
        (
            "bad volume mode",
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: v}\nspec: {volumeMode: Disk}\n",
            "persistentvolume v",
            "spec.volumeMode",
        ),
        (
            "bad capacity",
            "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: c, namespace: k}\nstorageClassName: s\ncapacity: lots\n",
            "csistoragecapacity k/c",
            "capacity",
        ),
        (
            "storage class of the wrong version",
            "apiVersion: storage.k8s.io/v1beta1\nkind: StorageClass\nmetadata: {name: s}\nprovisioner: x\n",
            "",
            "apiVersion",
        ),
    ];
    for (name, text, object, field) in cases {
        let e = read(&[("f", text)]).expect_err(name);
        assert_eq!((e.object.as_str(), e.field.as_str()), (object, field), "{name}: {e}");
    }
}

/// Eight pods share a WaitForFirstConsumer claim: the first pod's PreBind provisions the
/// volume in its node's zone, bound to the claim; every later pod finds the claim bound and
/// follows the volume's zone (where spreading alone would use both zones).
#[test]
fn manifest_load_binds_claims_at_prebind_and_later_pods_follow_the_volume() {
    let text = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, uid: u-data}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: zonal
  resources: {requests: {storage: 1Gi}}
"#;
    let mut nodes = String::new();
    for (name, zone) in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")] {
        nodes.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{topology.kubernetes.io/zone: {zone}}}}}\nstatus: {{allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}}}\n"
        ));
    }
    let pod = |name: &str| {
        format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: c}}]\n  volumes: [{{name: d, persistentVolumeClaim: {{claimName: data}}}}]\n")
    };
    let pods: String = (0..8).map(|i| pod(&format!("p{i}"))).collect();
    let m = read(&[("storage.yaml", text), ("nodes.yaml", &nodes), ("pods.yaml", &pods)]).unwrap();
    let (mut sim, pending) = m.load(Profile::default_profile(), QueueConfig::new(), 3).unwrap();
    assert_eq!(pending.len(), 8);
    let mut placed = Vec::new();
    sim.drain(|o, _| {
        if let ksched_engine::scheduler::CycleOutcome::Scheduled { pod, decision } = o {
            placed.push((pod.name.to_string(), decision.node.as_str().to_owned()));
        }
    });
    assert_eq!(placed.len(), 8, "{placed:?}");
    let zone = &placed[0].1[..1];
    assert!(placed.iter().all(|(_, n)| n.starts_with(zone)), "{placed:?}");
    let other = if zone == "a" { "b" } else { "a" };
    let objects = sim.cache.objects();
    let claim = objects.storage.pvc(Sym::new("default"), Sym::new("data")).expect("claim");
    assert!(claim.is_fully_bound());
    assert_eq!(claim.volume_name, Sym::new("pvc-u-data"));
    let pv = objects.storage.pv(claim.volume_name).expect("provisioned volume");
    assert!(pv.node_affinity_allows(&Labels::from_pairs([("topology.kubernetes.io/zone", zone)])));
    assert!(!pv.node_affinity_allows(&Labels::from_pairs([("topology.kubernetes.io/zone", other)])));
}

/// What `kubectl get ... -o yaml` prints, with the shapes the item-at-a-time reader must
/// cut right: managedFields, a block-scalar annotation holding YAML-looking lines, blank
/// lines, comments inside items, typed and untyped kinds, a terminal pod, a skipped kind.
const KUBECTL_LIST: &str = r#"apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      note: |
        items:
        - not: an item
        metadata:
          managedFields: []

      other: x
    labels:
      topology.kubernetes.io/zone: a
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:labels:
            .: {}
      manager: kubelet
      operation: Update
    name: n1
  spec:
    taints:
    - {key: dedicated, value: db, effect: NoSchedule}
  status:
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}

- apiVersion: v1
  kind: Pod
  metadata:
    # a comment inside an item
    labels: {app: web}
    managedFields:
    - manager: kube-controller-manager
      operation: Update
    name: bound
    namespace: prod
  spec:
    nodeName: n1
    containers:
    - name: c
      image: nginx
      resources:
        requests: {cpu: 500m, memory: 1Gi}
    tolerations:
    - {key: dedicated, operator: Equal, value: db, effect: NoSchedule}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: done, namespace: prod}
  spec:
    nodeName: n1
    containers: [{name: c, image: nginx}]
  status: {phase: Succeeded}
- apiVersion: v1
  kind: Pod
  metadata:
    name: pending
    labels: {app: web}
  spec:
    priorityClassName: high
    containers:
    - name: c
      image: nginx
      args:
      - |
        ---
        not a document
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: high}
  value: 1000
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cfg, namespace: prod}
  data: {k: v}
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    managedFields:
    - manager: kubectl
    name: web
    namespace: prod
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec:
        containers: [{name: c, image: nginx}]
- apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: prod}
  spec: {selector: {app: web}}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: data, namespace: prod}
  spec:
    accessModes: [ReadWriteOnce]
    resources: {requests: {storage: 1Gi}}
kind: List
metadata:
  resourceVersion: ""
"#;

/// Everything read except the duplicate index, with the workloads' managedFields (which
/// the item-at-a-time reader leaves out) cleared, as text.
fn read_result(m: &Manifests) -> String {
    let workloads: Vec<String> = m
        .workloads
        .iter()
        .map(|(w, source)| {
            let mut w = w.clone();
            let meta = match &mut w {
                Workload::Deployment(d) => &mut d.metadata,
                Workload::ReplicaSet(r) => &mut r.metadata,
                Workload::StatefulSet(s) => &mut s.metadata,
                Workload::DaemonSet(d) => &mut d.metadata,
                Workload::ReplicationController(r) => &mut r.metadata,
                Workload::Job(j) => &mut j.metadata,
                Workload::CronJob(c) => &mut c.metadata,
            };
            meta.managed_fields = None;
            format!("{w:?} {source:?}")
        })
        .collect();
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{workloads:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        m.nodes, m.namespaces, m.priority_classes, m.pdbs, m.services, m.pods, m.storage, m.skipped, m.terminal_pods
    )
}

#[test]
fn manifest_list_read_item_by_item_equals_the_whole_document_read() {
    let value: serde_json::Value = yaml_serde::from_str(KUBECTL_LIST).unwrap();
    let json = serde_json::to_string_pretty(&value).unwrap();
    // The same objects as a multi-document YAML stream (read the ordinary way by both).
    let items = value["items"].as_array().unwrap();
    let multi: Vec<String> = items.iter().map(|i| yaml_serde::to_string(i).unwrap()).collect();
    let multi = multi.join("---\n");
    // A list followed by another value: read item by item, then (the stream goes on) rolled
    // back and read again the ordinary way.
    let stream = format!("{json}\n{{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {{\"name\": \"n2\"}}}}");
    // More items than one parse reads (`ITEMS_PER_PARSE`): item indexes run on across parses.
    let many = (0..2 * ITEMS_PER_PARSE + 3).fold(KubectlDump::default(), |d, i| d.node(&format!("n{i}"), "4")).yaml();
    let files = [
        ("many.yaml", many.as_str()),
        ("list.yaml", KUBECTL_LIST),
        ("list.json", json.as_str()),
        ("multi.yaml", multi.as_str()),
        ("stream.json", stream.as_str()),
    ];
    assert!(stream::cut_list(KUBECTL_LIST).is_some(), "the YAML list takes the item-at-a-time path");
    for (name, text) in files {
        let mut streamed = Manifests::new();
        streamed.read_str(name, text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut whole = Manifests::new();
        whole.read_documents(Arc::from(name), text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(read_result(&streamed), read_result(&whole), "{name}");
        if name == "many.yaml" {
            assert_eq!(streamed.nodes.last().map(|(_, s)| s.item), Some(Some(n32(2 * ITEMS_PER_PARSE + 2))));
            continue;
        }
        assert_eq!(streamed.pods.len(), 2, "{name}");
        assert_eq!(streamed.nodes[0].0.annotations.len(), 2, "{name}");
    }
}

#[test]
fn manifest_list_errors_are_the_whole_document_reads() {
    let dump = KubectlDump::default().node("n1", "4").pod("p", Some("n1"), "1", "Running", None).yaml();
    for (name, from, to) in [
        ("a malformed quantity", "cpu: '1'", "cpu: lots"),
        ("an unknown field", "dnsPolicy:", "dnsPolicyy:"),
        ("a YAML syntax error after it", "kind: List", "kind: [List"),
        ("not a list", "kind: List", "kind: Pod"),
    ] {
        let text = dump.replacen(from, to, 1);
        assert_ne!(text, dump, "{name}");
        let json = yaml_serde::from_str::<serde_json::Value>(&text).map(|v| serde_json::to_string(&v).unwrap());
        for (file, text) in std::iter::once(("d.yaml", text.clone())).chain(json.ok().map(|j| ("d.json", j))) {
            let streamed = Manifests::new().read_str(file, &text).unwrap_err();
            let whole = Manifests::new().read_documents(Arc::from(file), &text).unwrap_err();
            assert_eq!(streamed, whole, "{name} {file}");
        }
    }
}

#[test]
fn manifest_daemon_set_gets_a_pod_on_each_node_added_during_the_run_where_it_would_run() {
    use ksched_engine::api::{Node, Taint, TaintEffect};
    use ksched_engine::scheduler::CycleOutcome;
    use ksched_engine::util::time::{Clock, Timestamp};
    use ksched_sim::simulation::{EventSource, RunOptions, Until};

    /// Adds its nodes to the cluster at 10 s on the simulated clock, as a node informer would.
    struct AddNodes(Vec<Node>, Timestamp);
    impl EventSource for AddNodes {
        fn next_event(&self) -> Option<Timestamp> {
            (!self.0.is_empty()).then_some(self.1)
        }
        fn fire_due(&mut self, sim: &mut Simulation) -> Result<(), String> {
            if sim.clock.now() >= self.1 {
                for n in self.0.drain(..) {
                    sim.cluster.add_node(n).map_err(|e| e.to_string())?;
                }
            }
            Ok(())
        }
    }

    let daemon = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: default}\n\
                  spec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n\
                  \x20   spec:\n      nodeSelector: {pool: general}\n      containers: [{name: a, resources: {requests: {cpu: 100m}}}]\n";
    let dump = KubectlDump::default().node_with("n1", "4", "8Gi", &[("pool", "general")], &[]).yaml();
    let m = read(&[("dump.yaml", &dump), ("daemon.yaml", daemon)]).unwrap();
    let Loaded { mut sim, mut controllers, .. } = load(&m).unwrap();
    let node = |name: &str, pool: &str| Node::builder(name).resources(4000, 8 << 30, 110).label("pool", pool);
    // (node added later, whether the daemon controller runs a pod there)
    let later = [
        (node("n2", "general").build(), true),
        (node("n3", "gpu").build(), false),
        (node("n4", "general").taint(Taint::new("dedicated", "db", TaintEffect::NoSchedule)).build(), false),
        // The controller tolerates the unschedulable taint on its pods.
        (
            node("n5", "general")
                .taint(Taint::new("node.kubernetes.io/unschedulable", "", TaintEffect::NoSchedule))
                .build(),
            true,
        ),
    ];
    let mut adder = AddNodes(later.iter().map(|(n, _)| n.clone()).collect(), Timestamp::from_secs(10));
    let mut bound: Vec<(String, String)> = Vec::new();
    let mut obs = |o: &CycleOutcome, _: u64| {
        if let CycleOutcome::Scheduled { pod, decision } = o {
            assert_eq!(pod.owner.as_ref().map(|r| r.kind.as_str()), Some("DaemonSet"));
            bound.push((decision.node.to_string(), pod.name.to_string()));
        }
    };
    sim.run(Until::Idle, &RunOptions::default(), &mut [&mut adder, &mut controllers], &mut [&mut obs]).unwrap();
    let mut nodes: Vec<&str> = bound.iter().map(|(n, _)| n.as_str()).collect();
    nodes.sort();
    let mut want = vec!["n1"];
    want.extend(later.iter().filter(|(_, runs)| *runs).map(|(n, _)| n.name.as_str()));
    assert_eq!(nodes, want, "{bound:?}");
    assert!(bound.iter().all(|(_, pod)| pod.starts_with("agent-")), "{bound:?}");
}

fn read_strict(files: &[(&str, &str)]) -> Result<Manifests, ManifestError> {
    let mut m = Manifests::with_options(ReadOptions { strict: true, ..ReadOptions::default() });
    for (name, text) in files {
        m.read_str(name, text)?;
    }
    Ok(m)
}

#[test]
fn manifest_duplicates_merge_when_identical_last_wins_otherwise_and_strict_refuses() {
    const PC: &str = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: -100\n";
    // What `kubectl get priorityclass low -o yaml` prints of the same object.
    const PC_DUMPED: &str = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: low\n  uid: 1f0e\n  \
        resourceVersion: \"991\"\n  creationTimestamp: \"2026-11-20T10:00:00Z\"\n  managedFields:\n  - {manager: kubectl, operation: Update}\n\
        value: -100\npreemptionPolicy: PreemptLowerPriority\n";
    const PC_OTHER: &str = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: -5\n";
    let same = read(&[("a.yaml", PC), ("b.yaml", PC)]).unwrap();
    assert_eq!((same.priority_classes.len(), same.merged_duplicates, same.notes.len()), (1, 1, 0));
    // Server-set fields and a default spelled out do not make it another object.
    let dumped = read(&[("dump.yaml", PC_DUMPED), ("pc.yaml", PC)]).unwrap();
    assert_eq!((dumped.priority_classes.len(), dumped.merged_duplicates, dumped.notes.len()), (1, 1, 0));
    let other = read(&[("a.yaml", PC), ("b.yaml", PC_OTHER), ("c.yaml", NODE_A)]).unwrap();
    assert_eq!(other.priority_classes.iter().map(|(p, _)| p.value).collect::<Vec<_>>(), [-5]);
    assert_eq!(other.notes.len(), 1, "{:?}", other.notes);
    assert!(
        other.notes[0].starts_with("priorityclass low: defined at a.yaml: document 1 (line 1) and again at b.yaml"),
        "{:?}",
        other.notes
    );
    // A pod defined again differently keeps its place in file order.
    let pod = |cpu: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{containers: [{{name: c, resources: {{requests: {{cpu: {cpu}}}}}}}]}}\n")
    };
    let q = "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec: {containers: [{name: c}]}\n";
    let (p1, p2) = (pod("1"), pod("2"));
    let m = read(&[("a.yaml", &p1), ("q.yaml", q), ("b.yaml", &p2)]).unwrap();
    assert_eq!(names(m.pods.iter()), ["default/p", "default/q"]);
    assert_eq!(m.pods[0].pod.requests().milli_cpu, 2000);

    let e = read_strict(&[("a.yaml", NODE_A), ("b.yaml", NODE_A)]).unwrap_err();
    assert_eq!((e.file.as_str(), e.object.as_str(), e.field.as_str()), ("b.yaml", "node a", "metadata.name"));
    assert!(e.message.contains("Duplicate value: already defined at a.yaml: document 1 (line 1)"), "{e}");
}

#[test]
fn manifest_load_leaves_out_pods_bound_to_unknown_nodes_with_a_warning() {
    let pods = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: nowhere, containers: [{name: c}]}\n";
    let m = read(&[("cluster.yaml", CLUSTER), ("pods.yaml", pods)]).unwrap();
    let loaded = m.load_full(Profile::default_profile(), QueueConfig::new(), 1).unwrap();
    assert_eq!(loaded.sim.cache.pods().len(), 0);
    assert!(
        loaded.notes.iter().any(|n| n.starts_with("warning: 1 bound pod(s) on node \"nowhere\"")),
        "{:?}",
        loaded.notes
    );
    let m = read_strict(&[("cluster.yaml", CLUSTER), ("pods.yaml", pods)]).unwrap();
    let e = m.load(Profile::default_profile(), QueueConfig::new(), 1).map(|_| ()).unwrap_err();
    assert_eq!((e.file.as_str(), e.object.as_str(), e.field.as_str()), ("pods.yaml", "pod default/p", "spec.nodeName"));
}

#[test]
fn manifest_load_keeps_a_bound_pods_admitted_priority_and_resolves_new_ones() {
    // A dumped pod: the class it was admitted with is not in the input.
    let bound = "apiVersion: v1\nkind: Pod\nmetadata: {name: old}\nspec: {nodeName: n1, priorityClassName: batch-low, priority: -100, containers: [{name: c}]}\n";
    let m = read(&[("cluster.yaml", CLUSTER), ("pods.yaml", bound)]).unwrap();
    let (sim, _) = m.load(Profile::default_profile(), QueueConfig::new(), 1).unwrap();
    let priorities: Vec<i32> = sim.cache.pods().into_iter().map(|(p, _)| p.priority).collect();
    assert_eq!(priorities, [-100]);
    // Without spec.priority (written by hand) it is resolved, and a missing class is an error.
    let by_hand = "apiVersion: v1\nkind: Pod\nmetadata: {name: old}\nspec: {nodeName: n1, priorityClassName: batch-low, containers: [{name: c}]}\n";
    let m = read(&[("cluster.yaml", CLUSTER), ("pods.yaml", by_hand)]).unwrap();
    let e = m.load(Profile::default_profile(), QueueConfig::new(), 1).map(|_| ()).unwrap_err();
    assert_eq!(e.field, "spec.priorityClassName", "{e}");
    // A new (pending) pod is resolved against the classes even when it says a priority.
    let pending = "apiVersion: v1\nkind: Pod\nmetadata: {name: new}\nspec: {priorityClassName: batch-low, priority: -100, containers: [{name: c}]}\n";
    let m = read(&[("cluster.yaml", CLUSTER), ("pods.yaml", pending)]).unwrap();
    assert!(m.load(Profile::default_profile(), QueueConfig::new(), 1).is_err());
}

#[test]
fn manifest_reads_dra_kinds_of_every_served_version() {
    let text = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic: {attributes: {model: {string: h100}}}
---
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: shared, namespace: ml}
spec:
  devices:
    requests:
    - {name: gpu, deviceClassName: gpu.example.com, count: 2}
"#;
    let mut m = Manifests::new();
    m.read_str("dra.yaml", text).unwrap();
    assert!(m.skipped.is_empty(), "{:?}", m.skipped);
    assert_eq!((m.dra.classes.len(), m.dra.slices.len(), m.dra.templates.len(), m.dra.claims.len()), (1, 1, 1, 1));
    assert_eq!(m.dra.slices[0].devices[0].attributes.len(), 1);
    let bad = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: c}\nspec:\n  selectors: [{cel: {expression: 'device.driver =='}}]\n";
    let e = Manifests::new().read_str("bad.yaml", bad).unwrap_err().to_string();
    assert!(
        e.contains("bad.yaml") && e.contains("deviceclass c") && e.contains("spec.selectors[0].cel.expression"),
        "{e}"
    );
}
