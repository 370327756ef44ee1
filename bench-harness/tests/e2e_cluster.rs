//! Issue 16's end-to-end check, through the `ksched simulate` binary: a user's kubectl dump
//! (six nodes in three zones, one a tainted control-plane node; a Succeeded and an Evicted pod
//! holding most of a node) and the user's application files (a Namespace, ConfigMap, Service,
//! a zone-spread Deployment, a WaitForFirstConsumer StorageClass, a StatefulSet with claims and
//! per-host anti-affinity, a DaemonSet tolerating the control plane, and a Job on a second,
//! MostAllocated profile), with the user's two-profile KubeSchedulerConfiguration.

use ksched_k8s::testing::KubectlDump;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

mod common;
use common::Scratch;

const ZONE: &str = "topology.kubernetes.io/zone";
const CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";

/// Node → zone, as the dump says.
const NODES: [(&str, &str); 6] = [
    ("cp-1", "zone-a"),
    ("w-a1", "zone-a"),
    ("w-b1", "zone-b"),
    ("w-b2", "zone-b"),
    ("w-c1", "zone-c"),
    ("w-c2", "zone-c"),
];

/// The dump: 4 CPUs, 16Gi each; `w-c2` holds a Succeeded (2 CPUs) and an Evicted (1.5 CPUs)
/// pod, so only 0.5 CPU would be free there if terminal pods counted.
fn dump() -> String {
    let mut d = KubectlDump::default();
    for (name, zone) in NODES {
        d = if name == "cp-1" {
            d.node_with(name, "4", "16Gi", &[(ZONE, zone), (CONTROL_PLANE, "")], &[(CONTROL_PLANE, "NoSchedule")])
        } else {
            d.node_with(name, "4", "16Gi", &[(ZONE, zone)], &[])
        };
    }
    d.pod("backup-28911", Some("w-c2"), "2", "Succeeded", None)
        .pod("cache-0", Some("w-c2"), "1500m", "Failed", Some("Evicted"))
        .yaml()
}

/// The user's application files. The StatefulSet's five replicas need one worker each (per-host
/// anti-affinity; the control plane is tainted), `w-c2` included, where 1 CPU fits only if the
/// terminal pods hold nothing.
const APPS: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: shop}
data: {LOG_LEVEL: info}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 9
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {matchLabels: {app: web}}
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: 200m, memory: 256Mi}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 5
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: db}}
      containers:
      - name: db
        image: postgres
        resources: {requests: {cpu: "1", memory: 1Gi}}
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: fast
      resources: {requests: {storage: 10Gi}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      tolerations:
      - {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}
      containers:
      - name: agent
        image: fluent-bit
        resources: {requests: {cpu: 100m, memory: 64Mi}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: report, namespace: shop}
spec:
  parallelism: 4
  completions: 8
  template:
    spec:
      schedulerName: bin-packing
      restartPolicy: Never
      containers:
      - name: report
        image: busybox
        resources: {requests: {cpu: 250m, memory: 128Mi}}
"#;

/// The user's configuration: upstream's default profile and a MostAllocated bin-packing one.
const CONFIG: &str = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packing
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"#;

/// `ksched simulate -f DIR --config FILE --format json`, as a user runs it.
fn simulate(dir: &Scratch) -> Value {
    let input = dir.write("input/dump.yaml", &dump()).parent().unwrap().to_owned();
    dir.write("input/apps.yaml", APPS);
    let config = dir.write("scheduler.yaml", CONFIG);
    let (input, config) = (input.to_str().unwrap(), config.to_str().unwrap());
    common::json(&common::ksched(&["simulate", "--format", "json", "--config", config, "-f", input]))
}

/// The pods whose name starts with `prefix`: (node, schedulerName) each.
fn placed(report: &Value, prefix: &str) -> Vec<(String, String)> {
    report["pods"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pod"].as_str().unwrap().starts_with(prefix))
        .map(|p| {
            assert_eq!(p["result"], "scheduled", "{p}");
            (p["node"].as_str().unwrap().to_owned(), p["scheduler_name"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn e2e_dump_and_apps_land_where_the_rules_say() {
    let dir = Scratch::new("e2e");
    let r = simulate(&dir);
    let zone_of: BTreeMap<&str, &str> = NODES.into_iter().collect();
    let s = &r["summary"];
    assert_eq!(s["nodes"], 6);
    assert_eq!(s["terminal_pods"], 2, "the Succeeded and the Evicted pod are skipped");
    assert_eq!(s["unschedulable"], 0, "{r}");

    // Deployment: 9 replicas, DoNotSchedule zone spread → 3 per zone.
    let web = placed(&r, "shop/web-");
    assert_eq!(web.len(), 9);
    let mut zones: BTreeMap<&str, usize> = BTreeMap::new();
    for (node, _) in &web {
        *zones.entry(zone_of[node.as_str()]).or_default() += 1;
    }
    assert_eq!(zones, BTreeMap::from([("zone-a", 3), ("zone-b", 3), ("zone-c", 3)]));
    assert!(web.iter().all(|(n, _)| n != "cp-1"), "the control plane is tainted: {web:?}");

    // StatefulSet: one per worker (per-host anti-affinity), w-c2 included: the terminal pods
    // there hold nothing.
    let db = placed(&r, "shop/db-");
    let hosts: BTreeSet<&str> = db.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(db.len(), 5);
    assert_eq!(hosts, BTreeSet::from(["w-a1", "w-b1", "w-b2", "w-c1", "w-c2"]));

    // DaemonSet: one pod on every node, the control plane included.
    let agent = placed(&r, "shop/agent-");
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for (n, _) in &agent {
        *per_node.entry(n.as_str()).or_default() += 1;
    }
    assert_eq!(per_node, NODES.iter().map(|(n, _)| (*n, 1)).collect::<BTreeMap<_, _>>());

    // Job: min(parallelism, completions) = 4 pods, scheduled by bin-packing, which packs them
    // onto one node (MostAllocated: each pod makes its node the fullest again).
    let job = placed(&r, "shop/report-");
    assert_eq!(job.len(), 4);
    assert!(job.iter().all(|(_, sched)| sched == "bin-packing"), "{job:?}");
    let job_nodes: BTreeSet<&str> = job.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(job_nodes.len(), 1, "MostAllocated packs: {job:?}");
    assert_ne!(job_nodes.first(), Some(&"cp-1"));

    // The summary's per-profile counts.
    let by = &s["by_profile"];
    assert_eq!(by["default-scheduler"]["scheduled"], 9 + 5 + 6);
    assert_eq!(by["bin-packing"]["scheduled"], 4);
    assert_eq!(by["bin-packing"]["pending_pods"], 4);
    assert_eq!(s["profiles"], serde_json::json!(["default-scheduler", "bin-packing"]));
}

#[test]
fn e2e_run_with_a_two_profile_config_reports_attempts_by_profile() {
    let dir = Scratch::new("run-profiles");
    let config = dir.write("scheduler.yaml", CONFIG);
    let args = ["run", "--nodes", "20", "--pods", "30", "--warmup-pods", "10", "--format", "json", "--config"];
    let s = common::json(&common::ksched(&[&args[..], &[config.to_str().unwrap()]].concat()));
    assert_eq!(s["profiles"], serde_json::json!(["default-scheduler", "bin-packing"]));
    // The built-in workload's pods are default-scheduler's; the measured phase's 30 attempts.
    assert_eq!(s["by_profile"]["default-scheduler"]["scheduled"], 30, "{s}");
    assert!(s["by_profile"].get("bin-packing").is_none(), "{s}");
}
