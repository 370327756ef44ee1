//! Manifests loaded into a simulation (moved with `load` from ksched-k8s's manifest tests).

use super::*;
use ksched_engine::api::{Labels, PreemptionPolicy};
use ksched_engine::framework::Profile;
use ksched_k8s::manifest::ReadOptions;
use ksched_k8s::testing::{KubectlDump, MANIFEST_CLUSTER as CLUSTER, MANIFEST_PODS as PODS};

fn read(files: &[(&str, &str)]) -> Result<Manifests, ManifestError> {
    let mut m = Manifests::new();
    for (name, text) in files {
        m.read_str(name, text)?;
    }
    Ok(m)
}

fn read_strict(files: &[(&str, &str)]) -> Result<Manifests, ManifestError> {
    let mut m = Manifests::with_options(ReadOptions { strict: true, ..ReadOptions::default() });
    for (name, text) in files {
        m.read_str(name, text)?;
    }
    Ok(m)
}

fn names(pods: impl Iterator<Item = impl std::ops::Deref<Target = ManifestPod>>) -> Vec<String> {
    pods.map(|p| p.pod.key()).collect()
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

#[test]
fn manifest_errors_name_file_document_object_and_field() {
    let cases = [
        case("malformed YAML", &[("f.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a\n")], "", "", "malformed YAML").at("f.yaml", Some(1), Some(4), None),
        case("malformed YAML in the second document", &[("f.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nkind: [\n")], "", "", "malformed YAML").at("f.yaml", Some(2), Some(6), None),
        case("malformed JSON", &[("f.json", "{\"apiVersion\": \"v1\",\n \"kind\": }")], "", "", "malformed JSON").at("f.json", Some(1), Some(2), None),
        case("workload without its selector", &[("f", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {}}\n")], "deployment default/d", "spec.selector", "Required value"),
        case("workload template's bad quantity", &[("f", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: 1x}}}]}}}\n")], "job default/j", "spec.template.spec.containers[0].resources.requests.cpu", "unknown suffix"),
        case("workload of a wrong apiVersion", &[("f", "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: d}\n")], "deployment default/d", "apiVersion", "ksched reads Deployment as \"apps/v1\""),
        case("wrong apiVersion", &[("f", "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: d}\n")], "poddisruptionbudget default/d", "apiVersion", "ksched reads PodDisruptionBudget as \"policy/v1\""),
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
