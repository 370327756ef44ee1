//! OpportunisticBatching through the binary, on a user's configuration that batches
//! (PodTopologySpread without default constraints): three pods of one spec, one per node
//! (hostPort 80), preferring the nodes by how many of three labels they carry (a: 3, c: 2,
//! b: 1), with NodeResourcesFit weighted 2 favouring the large nodes a and b.
//!
//! The first pod takes a; its ranking has b (NodeAffinity 2·33, resources 3·99) above c
//! (2·66, smaller). With the gate on, the second pod finds a full and takes b, the ranking's
//! next node, unscored. With it off, a full cycle normalizes NodeAffinity over b and c alone
//! (b 2·50, c 2·100), which lifts c above b: the answers differ, as upstream's would.

use std::process::Output;

mod common;
use common::{json, Scratch};

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - {name: NodeResourcesFit, weight: 2}
  pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List}
";

fn node(name: &str, cpu: &str, memory: &str, labels: &[&str]) -> String {
    let labels: String = labels.iter().map(|l| format!(", {l}: \"yes\"")).collect();
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{kubernetes.io/hostname: {name}{labels}}}\n\
         status:\n  allocatable: {{cpu: \"{cpu}\", memory: {memory}, pods: \"110\"}}\n"
    )
}

fn pod(i: usize) -> String {
    let terms: String = ["t1", "t2", "t3"]
        .iter()
        .map(|t| format!("      - {{weight: 1, preference: {{matchExpressions: [{{key: {t}, operator: Exists}}]}}}}\n"))
        .collect();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: default, labels: {{app: web}}}}\nspec:\n  \
         affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n{terms}  containers:\n  \
         - name: web\n    image: nginx:1.27\n    ports: [{{containerPort: 80, hostPort: 80}}]\n    \
         resources: {{requests: {{cpu: \"1\", memory: 1Gi}}}}\n"
    )
}

fn scratch() -> Scratch {
    let mut docs = vec![
        node("a", "64", "256Gi", &["t1", "t2", "t3"]),
        node("b", "64", "256Gi", &["t1"]),
        node("c", "2", "8Gi", &["t1", "t2"]),
    ];
    docs.extend((0..3).map(pod));
    Scratch::with("batching-cli", &[("config.yaml", CONFIG), ("cluster.yaml", &docs.join("---\n"))])
}

fn ksched(s: &Scratch, args: &[&str], gate_off: bool) -> Output {
    let dir = s.path().to_str().unwrap().to_owned();
    let (cluster, config) = (format!("{dir}/cluster.yaml"), format!("{dir}/config.yaml"));
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-f", &cluster, "--config", &config]);
    if gate_off {
        all.extend(["--feature-gates", "OpportunisticBatching=false"]);
    }
    common::ksched(&all)
}

#[test]
fn a_batched_pod_takes_the_previous_ranking_and_the_gate_off_rescores() {
    let s = scratch();
    for (gate_off, want, hints) in [(false, ["a", "b", "c"], 2), (true, ["a", "c", "b"], 0)] {
        let r = json(&ksched(&s, &["simulate", "-o", "json"], gate_off));
        let nodes: Vec<&str> = (0..3)
            .map(|i| {
                let p = r["pods"].as_array().unwrap().iter().find(|p| p["pod"] == format!("default/web-{i}")).unwrap();
                p["node"].as_str().unwrap()
            })
            .collect();
        assert_eq!(nodes, want, "gate off: {gate_off}");
        assert_eq!(r["summary"]["batch_hints"].as_u64().unwrap_or(0), hints, "gate off: {gate_off}");
    }
    let text = String::from_utf8(ksched(&s, &["simulate"], false).stdout).unwrap();
    assert!(text.contains("OpportunisticBatching: 2 pods took the next node of the previous pod's ranking"), "{text}");

    let explained = String::from_utf8(ksched(&s, &["explain", "default/web-1"], false).stdout).unwrap();
    assert!(
        explained.contains("OpportunisticBatching hint (the next node of the previous pod's ranking): b, fits"),
        "{explained}"
    );
    assert!(explained.contains("result: scheduled to b (OpportunisticBatching hint fits"), "{explained}");
}
