//! Issue 45's reconciliation, through the `ksched simulate` binary: a kubectl dump (written by
//! `KubectlDump`, with managedFields and status as kubectl prints them) plus the user's
//! manifests, answered as the cluster would. One test per item: a StatefulSet's existing
//! claim, a Deployment adopting its running pods, a bound pod's admitted priority, duplicates,
//! a pod bound to a node the dump left out.

use std::process::Output;

use ksched_k8s::testing::KubectlDump;
use serde_json::Value;

mod common;
use common::{json, Scratch};

const ZONE: &str = "topology.kubernetes.io/zone";

/// A fresh directory holding `files` (name, content).
fn scratch(name: &str, files: &[(&str, &str)]) -> Scratch {
    Scratch::with(&format!("reconcile-{name}"), files)
}

/// `ksched simulate --format json -f DIR` plus `extra` arguments.
fn simulate(dir: &Scratch, extra: &[&str]) -> Output {
    let dir = dir.path().to_str().unwrap();
    common::ksched(&[&["simulate", "--format", "json"], extra, &["-f", dir]].concat())
}

fn pods(r: &Value) -> Vec<(String, String, String)> {
    r["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap_or("-").to_owned();
            (s("pod"), s("result"), s("node"))
        })
        .collect()
}

fn notes(r: &Value) -> Vec<String> {
    r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_owned()).collect()
}

const STATEFULSET: &str = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: postgres
        resources: {requests: {cpu: 500m}}
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: fast
      resources: {requests: {storage: 10Gi}}
"#;

/// Item 1: `data-db-0` exists, bound to a volume in zone b; zone a is emptier (LeastAllocated
/// prefers it), so only the claim keeps db-0 in zone b. db-1's claim is new.
#[test]
fn reconcile_statefulset_uses_the_existing_claim_of_its_ordinal() {
    let dump = KubectlDump::default()
        .node_with("a1", "16", "32Gi", &[(ZONE, "a")], &[])
        .node_with("b1", "2", "4Gi", &[(ZONE, "b")], &[])
        .bound_claim("data-db-0", "pv-db-0", "10Gi", (ZONE, "b"))
        .yaml();
    let dir = scratch("sts", &[("dump.yaml", &dump), ("apps.yaml", STATEFULSET)]);
    let r = json(&simulate(&dir, &[]));
    let got = pods(&r);
    assert!(got.contains(&("default/db-0".into(), "scheduled".into(), "b1".into())), "{got:?}");
    assert!(got.contains(&("default/db-1".into(), "scheduled".into(), "a1".into())), "{got:?}");
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart}
spec:
  replicas: 4
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers:
      - {name: c, image: cart, resources: {requests: {cpu: 100m}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: queue}
spec:
  replicas: 2
  selector: {matchLabels: {app: queue}}
  template:
    metadata: {labels: {app: queue}}
    spec:
      containers:
      - {name: c, image: queue, resources: {requests: {cpu: 100m}}}
"#;

/// Item 2: three running pods of the Deployment's ReplicaSet (not dumped) are adopted, one
/// more is created, under the same ReplicaSet; an orphan pod matching a ReplicaSet's selector
/// is adopted too.
#[test]
fn reconcile_deployment_adopts_its_running_pods_and_creates_only_the_missing() {
    let dump = KubectlDump::default()
        .node("n1", "8")
        .node("n2", "8")
        .replica_pod("cart", "7d9f8b6c5", "x2x7q", "n1", "100m")
        .replica_pod("cart", "7d9f8b6c5", "b4k9z", "n2", "100m")
        .replica_pod("cart", "7d9f8b6c5", "m5w2d", "n1", "100m")
        .pod("queue-manual", Some("n2"), "100m", "Running", None)
        .edit_last(|v| v["metadata"]["labels"] = serde_json::json!({"app": "queue"}))
        .yaml();
    let dir = scratch("deploy", &[("dump.yaml", &dump), ("apps.yaml", DEPLOYMENT)]);
    let r = json(&simulate(&dir, &[]));
    let got = pods(&r);
    let cart: Vec<_> = got.iter().filter(|p| p.0.starts_with("default/cart-")).collect();
    assert_eq!(cart.len(), 1, "{got:?}");
    assert!(cart[0].0.starts_with("default/cart-7d9f8b6c5-"), "the ReplicaSet whose pods run: {got:?}");
    let queue: Vec<_> = got.iter().filter(|p| p.0.starts_with("default/queue-")).collect();
    assert_eq!(queue.len(), 1, "{got:?}");
    assert_eq!(r["summary"]["bound_pods"], 4);
    let notes = notes(&r);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("deployment default/cart: adopted 3 existing pod(s) of ReplicaSet cart-7d9f8b6c5")
                && n.ends_with("for 4 replicas; creates 1 more")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n == "replicaset default/queue: adopted 1 existing pod(s) for 2 replicas; creates 1 more"),
        "{notes:?}"
    );
}

/// Item 2 during a rollout: the dump holds pods of two ReplicaSets of `cart` (two of the old
/// hash, one of the new, neither ReplicaSet dumped). The Deployment counts all three as its
/// replicas and creates one more, under the ReplicaSet most of them belong to; a Deployment
/// `cart-api` (whose ReplicaSets are `cart-api-<hash>`) takes none of `cart`'s pods.
#[test]
fn reconcile_deployment_mid_rollout_adopts_the_pods_of_both_replica_sets() {
    let dump = KubectlDump::default()
        .node("n1", "8")
        .node("n2", "8")
        .replica_pod("cart", "5c8d97f4b", "aaaa1", "n1", "100m")
        .replica_pod("cart", "5c8d97f4b", "aaaa2", "n2", "100m")
        .replica_pod("cart", "6f7b8d9c6", "bbbb1", "n1", "100m")
        .yaml();
    let api = DEPLOYMENT.split("---").next().unwrap().replace("cart", "cart-api").replace("replicas: 4", "replicas: 1");
    let dir = scratch("rollout", &[("dump.yaml", &dump), ("apps.yaml", DEPLOYMENT), ("api.yaml", &api)]);
    let r = json(&simulate(&dir, &[]));
    let got = pods(&r);
    let cart: Vec<_> =
        got.iter().filter(|p| p.0.starts_with("default/cart-") && !p.0.starts_with("default/cart-api")).collect();
    assert_eq!(cart.len(), 1, "3 adopted, 1 created: {got:?}");
    assert!(cart[0].0.starts_with("default/cart-5c8d97f4b-"), "the ReplicaSet most pods belong to: {got:?}");
    assert_eq!(got.iter().filter(|p| p.0.starts_with("default/cart-api-")).count(), 1, "{got:?}");
    let notes = notes(&r);
    assert!(
        notes.iter().any(|n| n.starts_with(
            "deployment default/cart: adopted 3 existing pod(s) of ReplicaSet cart-5c8d97f4b and cart-6f7b8d9c6 (a rollout"
        ) && n.ends_with("for 4 replicas; creates 1 more")),
        "{notes:?}"
    );
}

/// A pod whose claim is missing: VolumeRestrictions' PreFilter rejects it, so DynamicResources'
/// PreFilter never runs and its PostFilter (before DefaultPreemption's) fails reading its
/// cycle state ("not found"). Upstream v1.35's FitError therefore ends `not found. not found`:
/// the repeat is faithful, not a formatting slip.
#[test]
fn missing_claim_fit_error_is_upstreams_text() {
    let dump = KubectlDump::default().node("n1", "8").node("n2", "8").yaml();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: orphan, namespace: shop}\nspec:\n  containers: [{name: c, image: busybox}]\n  volumes: [{name: v, persistentVolumeClaim: {claimName: gone}}]\n";
    let dir = scratch("noclaim", &[("dump.yaml", &dump), ("pod.yaml", pod)]);
    let r = json(&simulate(&dir, &[]));
    let orphan = r["pods"].as_array().unwrap().iter().find(|p| p["pod"] == "shop/orphan").unwrap();
    assert_eq!(orphan["result"], "unschedulable");
    assert_eq!(orphan["reason"], r#"0/2 nodes are available: persistentvolumeclaim "gone" not found. not found"#);
}

/// Item 3: a dumped pod runs with `batch-low` (-100), a class the dump does not hold; it keeps
/// its priority, so a new pod (priority 0) preempts it.
#[test]
fn reconcile_bound_pod_keeps_its_admitted_priority() {
    let dump = KubectlDump::default()
        .node("n1", "2")
        .pod("etl", Some("n1"), "2", "Running", None)
        .edit_last(|v| {
            v["spec"]["priorityClassName"] = "batch-low".into();
            v["spec"]["priority"] = (-100).into();
        })
        .pod("web", None, "1", "Pending", None)
        .yaml();
    let dir = scratch("priority", &[("dump.yaml", &dump)]);
    let r = json(&simulate(&dir, &[]));
    assert_eq!(pods(&r), [("default/web".into(), "scheduled".into(), "n1".into())]);
    assert_eq!(r["evicted"][0]["pod"], "default/etl");
    // A new pod naming the missing class is still refused, as admission would.
    let new = "apiVersion: v1\nkind: Pod\nmetadata: {name: batch}\nspec:\n  priorityClassName: batch-low\n  containers: [{name: c}]\n";
    dir.write("new.yaml", new);
    let out = simulate(&dir, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no PriorityClass with name batch-low was found"));
}

/// Item 4: the same PriorityClass exported and in a manifest merges; a pod defined again
/// differently is last-wins with a note; `--strict` keeps the error.
#[test]
fn reconcile_duplicates_merge_or_last_wins_and_strict_refuses() {
    let dump = KubectlDump::default()
        .node("n1", "4")
        .priority_class("batch-low", -100)
        .pod("web", None, "1", "Pending", None)
        .yaml();
    let manifests = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: batch-low}\nvalue: -100\n\
                     description: batch work\n---\n\
                     apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  priorityClassName: batch-low\n  \
                     containers: [{name: c, resources: {requests: {cpu: '3'}}}]\n";
    let dir = scratch("dup", &[("a-dump.yaml", &dump), ("b-apps.yaml", manifests)]);
    let r = json(&simulate(&dir, &[]));
    let web: Vec<_> = r["pods"].as_array().unwrap().iter().filter(|p| p["pod"] == "default/web").collect();
    assert_eq!(web.len(), 1, "{r}");
    assert_eq!(web[0]["priority"], -100, "the later pod (with the class) is used");
    let notes = notes(&r);
    assert!(
        notes.iter().any(|n| n.starts_with("pod default/web: defined at ") && n.ends_with("the later one is used")),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.starts_with("1 object(s) defined twice identically")), "{notes:?}");
    assert!(!notes.iter().any(|n| n.contains("priorityclass")), "the class merges silently: {notes:?}");

    let strict = simulate(&dir, &["--strict"]);
    assert_eq!(strict.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("Duplicate value: already defined at"));
}

/// Item 5: a dump filtered by label holds a pod on a node it does not hold: a warning, and the
/// pod is left out.
#[test]
fn reconcile_pod_bound_to_an_unknown_node_is_a_warning_and_left_out() {
    let dump = KubectlDump::default()
        .node("n1", "2")
        .pod("elsewhere", Some("gpu-7"), "1", "Running", None)
        .pod("here", Some("n1"), "1", "Running", None)
        .pod("web", None, "1", "Pending", None)
        .yaml();
    let dir = scratch("unknown-node", &[("dump.yaml", &dump)]);
    let r = json(&simulate(&dir, &[]));
    assert_eq!(pods(&r), [("default/web".into(), "scheduled".into(), "n1".into())]);
    assert_eq!(r["summary"]["bound_pods"], 1);
    let notes = notes(&r);
    assert!(
        notes.iter().any(|n| n
            == "warning: 1 bound pod(s) on node \"gpu-7\", which is not in the input, left out: default/elsewhere"),
        "{notes:?}"
    );
    let strict = simulate(&dir, &["--strict"]);
    assert_eq!(strict.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("spec.nodeName"));
    // explain says why the pod is not in the run, not only that it is bound.
    let explain = common::ksched(&["explain", "elsewhere", "-f", dir.path().to_str().unwrap()]);
    assert_eq!(explain.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&explain.stderr).contains(
            "pod default/elsewhere is already bound to node gpu-7 (spec.nodeName); that node is not in the input, \
             so the run leaves the pod out"
        ),
        "{}",
        String::from_utf8_lossy(&explain.stderr)
    );
}

/// Item 6: the built-in anti-affinity workload's default warm-up (1000 pods, one per host)
/// does not fit 500 nodes next to 500 measured pods: it is scaled down, with a note, and
/// every measured pod is scheduled; a warm-up asked for that cannot fit is a warning.
#[test]
fn run_builtin_workload_scales_a_warmup_that_cannot_fit_or_warns() {
    let run = |extra: &[&str]| {
        let args = ["run", "--workload", "pod-anti-affinity", "--nodes", "500", "--pods", "500", "--format", "json"];
        common::ksched(&[&args[..], extra].concat())
    };
    let out = run(&[]);
    let r = json(&out);
    assert_eq!((r["warmup_pods"].as_u64(), r["scheduled"].as_u64()), (Some(0), Some(500)), "{r}");
    assert_eq!(r["unschedulable"], 0);
    let note = r["notes"][0].as_str().unwrap();
    assert!(
        note.starts_with("warm-up scaled from 1000 to 0 pods so the 500 measured pods fit: 500 nodes hold 500"),
        "{note}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("ksched: warm-up scaled from 1000 to 0"));

    let asked = run(&["--warmup-pods", "100"]);
    let r = json(&asked);
    assert_eq!(r["scheduled"], 400, "{r}");
    assert!(
        r["notes"][0].as_str().unwrap().starts_with("warning: 100 warm-up + 500 measured pods cannot all be scheduled"),
        "{r}"
    );
}
