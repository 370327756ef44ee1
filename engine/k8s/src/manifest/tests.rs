use super::*;
use crate::testing::{KubectlDump, MANIFEST_CLUSTER as CLUSTER, MANIFEST_PODS as PODS};
use ksched_engine::api::{IntOrPercent, ResourceName};

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

const NODE_A: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n";

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
            "storageclass s",
            "apiVersion",
        ),
    ];
    for (name, text, object, field) in cases {
        let e = read(&[("f", text)]).expect_err(name);
        assert_eq!((e.object.as_str(), e.field.as_str()), (object, field), "{name}: {e}");
    }
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

/// What `kubectl get deviceclasses,resourceslices,resourceclaims,resourceclaimtemplates -A -o
/// yaml` prints of a GPU cluster (a `List`, server fields, managedFields, statuses), in every
/// served version: read as the API server would convert it, alpha fields warned about.
const DRA_DUMP: &str = r#"
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata:
    name: gpu.example.com
    uid: 5c1f
    resourceVersion: "120"
    generation: 1
    creationTimestamp: "2026-11-20T10:00:00Z"
    managedFields:
    - {manager: kubectl, operation: Update, apiVersion: resource.k8s.io/v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {}}}
  spec:
    selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
    config: [{opaque: {driver: gpu.example.com, parameters: {sharing: none}}}]
    extendedResourceName: example.com/gpu
- apiVersion: resource.k8s.io/v1beta2
  kind: ResourceSlice
  metadata: {name: fabric-partitions, uid: 77aa, resourceVersion: "130"}
  spec:
    driver: gpu.example.com
    perDeviceNodeSelection: true
    pool: {name: fabric, generation: 3, resourceSliceCount: 1}
    sharedCounters: [{name: mem, counters: {memory: {value: 80Gi}}}]
    devices:
    - name: part-0
      nodeName: n2
      consumesCounters: [{counterSet: mem, counters: {memory: {value: 40Gi}}}]
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceSlice
  metadata: {name: n1-gpu, uid: 88bb}
  spec:
    driver: gpu.example.com
    nodeName: n1
    pool: {name: n1, generation: 1, resourceSliceCount: 1}
    devices:
    - name: gpu-0
      basic:
        attributes: {model: {string: h100}, driverVersion: {version: 1.2.3}}
        capacity: {memory: {value: 80Gi}}
    - name: gpu-1
      basic: {attributes: {model: {string: h100}}}
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata:
    name: shared
    namespace: ml
    uid: 0a1b
    finalizers: [resource.kubernetes.io/delete-protection]
    managedFields:
    - {manager: kube-scheduler, operation: Update, subresource: status, apiVersion: resource.k8s.io/v1}
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
  status:
    allocation:
      allocationTimestamp: "2026-11-20T10:05:00Z"
      devices:
        results: [{request: gpu, driver: gpu.example.com, pool: n1, device: gpu-0}]
        config: [{source: FromClass, opaque: {driver: gpu.example.com, parameters: {sharing: none}}}]
      nodeSelector:
        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]
    reservedFor: [{resource: pods, name: trainer-0, uid: 9f9f}]
    devices: [{driver: gpu.example.com, pool: n1, device: gpu-0, conditions: []}]
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceClaim
  metadata: {name: old-style, namespace: ml}
  spec:
    devices:
      requests: [{name: gpu, deviceClassName: gpu.example.com, allocationMode: ExactCount, count: 1}]
  status:
    allocation:
      devices:
        results: [{request: gpu, driver: gpu.example.com, pool: n1, device: gpu-1}]
    reservedFor: [{resource: pods, name: old-0, uid: 7e7e}]
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceClaimTemplate
  metadata: {name: tolerant, namespace: ml}
  spec:
    spec:
      devices:
        requests:
        - {name: gpu, deviceClassName: gpu.example.com, tolerations: [{key: maintenance, operator: Exists}]}
"#;

#[test]
fn manifest_reads_a_kubectl_dump_of_dra_objects_in_every_version() {
    let m = read(&[("dra-dump.yaml", DRA_DUMP)]).unwrap();
    assert!(m.skipped.is_empty(), "{:?}", m.skipped);
    assert_eq!((m.dra.classes.len(), m.dra.slices.len(), m.dra.claims.len(), m.dra.templates.len()), (1, 2, 2, 1));
    let slices: Vec<(&str, &ksched_engine::api::dra::SliceNodes, usize)> =
        m.dra.slices.iter().map(|s| (s.name.as_str(), &s.nodes, s.devices.len())).collect();
    use ksched_engine::api::dra::SliceNodes;
    assert_eq!(
        slices,
        [("fabric-partitions", &SliceNodes::PerDevice, 1), ("n1-gpu", &SliceNodes::Node(Sym::new("n1")), 2)]
    );
    let gpu0 = &m.dra.slices[1].devices[0];
    assert_eq!((gpu0.attributes.len(), gpu0.capacity[0].1.value()), (2, 80 << 30), "v1beta1 `basic` read");
    // Allocations and reservations read from the statuses, v1 and v1beta1 alike.
    let claim = |name: &str| m.dra.claim(Sym::new("ml"), Sym::new(name)).unwrap().clone();
    let shared = claim("shared");
    let a = shared.allocation.as_ref().unwrap();
    assert_eq!((a.results[0].pool.as_str(), a.results[0].device.as_str()), ("n1", "gpu-0"));
    assert!(a.node_selector.as_ref().unwrap().matches(&Labels::new(), Sym::new("n1")));
    assert!(shared.is_reserved_for("9f9f") && shared.uid.as_str() == "0a1b");
    let old = claim("old-style");
    assert_eq!(old.allocation.as_ref().unwrap().results[0].device.as_str(), "gpu-1");
    assert!(old.is_reserved_for("7e7e"));
    // The alpha fields are warned about, each naming its object; nothing else is.
    let mut warned: Vec<(&str, usize)> = m.unmodelled.fields.iter().map(|(f, c)| (*f, c.count)).collect();
    warned.sort();
    assert_eq!(
        warned,
        [
            ("spec.devices[].consumesCounters", 1),
            ("spec.devices[].nodeName", 1),
            ("spec.extendedResourceName", 1),
            ("spec.perDeviceNodeSelection", 1),
            ("spec.sharedCounters", 1),
            ("spec.spec.devices.requests[].exactly.tolerations", 1),
        ]
    );
    let lines = m.unmodelled.lines().join("\n");
    assert!(lines.contains("resourceslice fabric-partitions") && lines.contains("DRAPartitionableDevices"), "{lines}");
    assert!(
        lines.contains("deviceclass gpu.example.com") && lines.contains("resourceclaimtemplate ml/tolerant"),
        "{lines}"
    );
    // --strict refuses the first of them, naming file, object and field.
    let e = read_strict(&[("dra-dump.yaml", DRA_DUMP)]).unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.object.as_str(), e.field.as_str()),
        ("dra-dump.yaml", "deviceclass gpu.example.com", "spec.extendedResourceName")
    );
}

#[test]
fn malformed_dra_objects_are_errors_naming_file_object_and_field() {
    let claim = |version: &str, spec: &str, status: &str| {
        format!("apiVersion: resource.k8s.io/{version}\nkind: ResourceClaim\nmetadata: {{name: c, namespace: ml}}\nspec: {spec}\nstatus: {status}\n")
    };
    let ok_spec = "{devices: {requests: [{name: gpu, exactly: {deviceClassName: g}}]}}";
    let result = "{request: gpu, driver: d, pool: p, device: x}";
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "reserved but not allocated",
            claim("v1", ok_spec, "{reservedFor: [{resource: pods, name: p, uid: u}]}"),
            "resourceclaim ml/c",
            "status.reservedFor",
        ),
        (
            "a result without its device",
            claim("v1", ok_spec, "{allocation: {devices: {results: [{request: gpu, driver: d, pool: p}]}}}"),
            "resourceclaim ml/c",
            "status.allocation.devices.results[0].device",
        ),
        (
            "a reservation without its uid",
            claim("v1", ok_spec, &format!("{{allocation: {{devices: {{results: [{result}]}}}}, reservedFor: [{{resource: pods, name: p}}]}}")),
            "resourceclaim ml/c",
            "status.reservedFor[0]",
        ),
        (
            "a v1beta1 count that is not a number",
            claim("v1beta1", "{devices: {requests: [{name: gpu, deviceClassName: g, count: two}]}}", "{}"),
            "resourceclaim ml/c",
            "spec.devices.requests[0].exactly.count",
        ),
        (
            "a v1beta1 device field misspelt under basic",
            "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {driver: d, nodeName: n, pool: {name: p, generation: 1, resourceSliceCount: 1}, devices: [{name: a, basic: {atributes: {}}}]}\n".into(),
            "resourceslice s",
            "spec.devices[0].atributes",
        ),
        (
            "an unknown allocation mode",
            claim("v1beta2", "{devices: {requests: [{name: gpu, exactly: {deviceClassName: g, allocationMode: Some}}]}}", "{}"),
            "resourceclaim ml/c",
            "spec.devices.requests[0].exactly.allocationMode",
        ),
        (
            "a v1alpha3 claim (no longer served)",
            claim("v1alpha3", ok_spec, "{}"),
            "resourceclaim ml/c",
            "apiVersion",
        ),
    ];
    for (what, text, object, field) in cases {
        let e = match read(&[("bad.yaml", &text)]) {
            Ok(_) => panic!("{what}: read without an error"),
            Err(e) => e,
        };
        assert_eq!((e.file.as_str(), e.object.as_str(), e.field.as_str()), ("bad.yaml", object, field), "{what}: {e}");
    }
}
