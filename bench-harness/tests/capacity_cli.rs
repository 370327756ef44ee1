//! `ksched capacity` through the binary, on fixtures written with the kubectl-dump builder:
//! answers checked by hand.

use std::process::Output;

use ksched_k8s::testing::KubectlDump;
use serde_json::json;

mod common;
use common::{json as json_of, Scratch};

fn ksched(args: &[&str]) -> Output {
    common::ksched(&[&["capacity"], args].concat())
}

/// `text` written to `name` in `dir`: its path.
fn write(dir: &Scratch, name: &str, text: &str) -> String {
    dir.write(name, text).display().to_string()
}

/// A template of one node of `cpu` CPUs (and twice as many Gi), priced `cost`.
fn template(dir: &Scratch, name: &str, cpu: u32, cost: &str) -> String {
    let memory = format!("{}Gi", 2 * cpu);
    let yaml = KubectlDump::default()
        .node_with(name, &cpu.to_string(), &memory, &[], &[])
        .edit_last(|v| v["metadata"]["annotations"]["ksched.io/cost"] = cost.into())
        .yaml();
    write(dir, &format!("{name}.yaml"), &yaml)
}

/// `n` pending pods of `cpu` CPUs each.
fn pods(dir: &Scratch, n: usize, cpu: &str) -> String {
    let mut d = KubectlDump::default();
    for i in 0..n {
        d = d.pod(&format!("p{i}"), None, cpu, "Pending", None);
    }
    write(dir, "pods.yaml", &d.yaml())
}

#[test]
fn capacity_five_three_cpu_pods_need_five_four_cpu_nodes() {
    // By hand: two 3-CPU pods never share a 4-CPU node (6 > 4), so 5 pods need 5 nodes,
    // though their 15 CPUs are less than the 16 of 4 nodes.
    let dir = Scratch::new("capacity-hand");
    let small = template(&dir, "small", 4, "1");
    let pods = pods(&dir, 5, "3");
    let r = json_of(&ksched(&["-t", &small, "-f", &pods, "--format", "json", "--jobs", "2"]));
    assert_eq!(r["answer"], json!({"shape": "small", "units": 5, "nodes": 5, "cost": 5.0}));
    let f = &r["one_fewer"];
    assert_eq!((f["run"]["units"].as_u64(), f["run"]["passed"].as_bool()), (Some(4), Some(false)));
    assert_eq!(f["run"]["left_pending"], 1);
    let fit = f["explain"]["fit_error"].as_str().unwrap();
    assert!(fit.starts_with("0/4 nodes are available: 4 Insufficient cpu"), "{fit}");
    let runs: Vec<(u64, bool)> = r["shapes"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["units"].as_u64().unwrap(), x["passed"].as_bool().unwrap()))
        .collect();
    assert!(runs.contains(&(4, false)) && runs.contains(&(5, true)), "{runs:?}");

    let text = ksched(&["-t", &small, "-f", &pods]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8_lossy(&text.stdout);
    for want in [
        "ksched capacity: 5 × small (5 nodes, cost 5) is the fewest for which every pod is bound",
        "small: 4 × small (4 nodes): fails, 1 of 5 pods left pending; 5 × small (5 nodes): passes, 0 of 5 pods left pending",
        "With one unit fewer (4 × small (4 nodes): fails, 1 of 5 pods left pending):",
        "Filter (REJECTED BY",
        "small-3",
    ] {
        assert!(text.contains(want), "no {want:?} in\n{text}");
    }
    // Progress goes to a terminal only: nothing on stderr here.
    let quiet = ksched(&["-t", &small, "-f", &pods]);
    assert!(quiet.stderr.is_empty(), "{}", String::from_utf8_lossy(&quiet.stderr));

    // One pod may stay pending: 4 nodes do.
    let r = json_of(&ksched(&["-t", &small, "-f", &pods, "--format", "json", "--max-pending", "1"]));
    assert_eq!(r["answer"]["units"], 4);
}

#[test]
fn capacity_cheapest_of_two_shapes_by_price() {
    // big (8 CPUs) holds two 3-CPU pods: 3 bigs for 5 pods, at 1.5 each 4.5 < 5 smalls at 1.
    let dir = Scratch::new("capacity-shapes");
    let small = template(&dir, "small", 4, "1");
    let big = template(&dir, "big", 8, "1.5");
    let pods = pods(&dir, 5, "3");
    let r = json_of(&ksched(&["-t", &small, "-t", &big, "-f", &pods, "--format", "json"]));
    assert_eq!(r["answer"], json!({"shape": "big", "units": 3, "nodes": 3, "cost": 4.5}));
    let fewest: Vec<(String, u64)> = r["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["shape"].as_str().unwrap().to_owned(), s["units"].as_u64().unwrap()))
        .collect();
    assert_eq!(fewest, [("small".to_owned(), 5), ("big".to_owned(), 3)]);
    // At 2 a big node, 3 bigs cost 6: the smalls win.
    let r = json_of(&ksched(&["-t", &small, "-t", &big, "-f", &pods, "--format", "json", "--cost", "big=2"]));
    assert_eq!(r["answer"], json!({"shape": "small", "units": 5, "nodes": 5, "cost": 5.0}));
    let text = String::from_utf8_lossy(&ksched(&["-t", &small, "-t", &big, "-f", &pods]).stdout).into_owned();
    assert!(text.contains("SHAPE") && text.contains("NODES/UNIT"), "{text}");
}

#[test]
fn capacity_of_a_trace_with_pods_allowed_to_wait() {
    // Four 3-CPU pods at 0 s, each running 60 s. By hand: on 1 node they wait 0, 60, 120,
    // 180 s; on 2 nodes 0, 0, 60, 60; on 3 nodes 0, 0, 0, 60; on 4 none waits.
    let dir = Scratch::new("capacity-trace");
    let small = template(&dir, "small", 4, "1");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "3"}}}]}});
    let mut trace = format!("{}\n", json!({"op": "template", "name": "job", "object": pod}));
    for i in 0..4 {
        let line = json!({"time": 0, "op": "create", "template": "job", "overrides": {"metadata": {"name": format!("j{i}")}}, "duration": "60s"});
        trace.push_str(&format!("{line}\n"));
    }
    let trace = write(&dir, "trace.jsonl", &trace);
    let units = |wait: &str| {
        let r = json_of(&ksched(&["-t", &small, "--trace", &trace, "--pending-for", wait, "--format", "json"]));
        r["answer"]["units"].as_u64().unwrap()
    };
    assert_eq!(units("90s"), 2);
    assert_eq!(units("30s"), 4);
    assert_eq!(units("150s"), 2, "on 1 node one pod waits 180 s");
    // Without --pending-for every pod is bound in the end, whatever the count.
    let r = json_of(&ksched(&["-t", &small, "--trace", &trace, "--format", "json"]));
    assert_eq!(r["answer"]["units"], 1);
}

#[test]
fn capacity_exits_1_without_an_answer_and_2_on_bad_input() {
    let dir = Scratch::new("capacity-bad");
    let small = template(&dir, "small", 4, "1");
    let pods_file = pods(&dir, 1, "5");
    let out = ksched(&["-t", &small, "-f", &pods_file, "--max-nodes", "3"]);
    assert_eq!(out.status.code(), Some(1), "a 5-CPU pod fits no 4-CPU node");
    assert!(String::from_utf8_lossy(&out.stdout).contains("no count up to 3 of any shape passes"));
    let out = ksched(&["-t", &pods_file, "-f", &pods_file]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pods.yaml: a node template holds at least one Node; none found"), "{err}");
    let out = ksched(&["-t", &small]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no workload: give manifests (-f) or a trace (--trace)"));
}
