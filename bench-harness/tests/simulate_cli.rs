//! `ksched simulate` and `ksched explain` on the example manifests, through the binary.

use std::process::Output;

mod common;
use common::{examples, json, Scratch};

/// `ksched ARGS -f examples/cluster.yaml -f examples/pods.yaml`.
fn ksched(args: &[&str]) -> Output {
    let ex = examples();
    let cluster = ex.join("cluster.yaml");
    let pods = ex.join("pods.yaml");
    let files = ["-f", cluster.to_str().unwrap(), "-f", pods.to_str().unwrap()];
    common::ksched(&[args, &files[..]].concat())
}

#[test]
fn simulate_example_places_preempts_and_explains_the_rest() {
    let r = json(&ksched(&["simulate", "--format", "json"]));
    let pod = |key: &str| r["pods"].as_array().unwrap().iter().find(|p| p["pod"] == key).cloned().unwrap();
    assert_eq!(pod("batch/train")["node"], "gpu-1");
    assert_eq!(pod("default/api")["result"], "scheduled");
    assert_eq!(pod("default/api")["preemptions"][0]["victims"][0], "batch/etl-1");
    assert_eq!(pod("default/report")["result"], "unschedulable");
    assert!(pod("default/report")["reason"].as_str().unwrap().starts_with("0/3 nodes are available: "));
    assert_eq!(pod("default/canary")["result"], "not_queued");
    assert_eq!(r["evicted"][0]["pod"], "batch/etl-1");
    assert_eq!(r["summary"]["scheduled"], 4);

    let table = ksched(&["simulate"]);
    assert_eq!(table.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&table.stdout).contains("default/report"));
    let yaml = ksched(&["simulate", "--format", "yaml"]);
    assert!(String::from_utf8_lossy(&yaml.stdout).contains("result: not_queued"));
}

#[test]
fn explain_example_pod_agrees_with_simulate() {
    let sim = json(&ksched(&["simulate", "--format", "json"]));
    let r = json(&ksched(&["explain", "train", "--format", "json"]));
    assert_eq!(r["pod"], "batch/train");
    let simulated = sim["pods"].as_array().unwrap().iter().find(|p| p["pod"] == "batch/train").unwrap()["node"].clone();
    assert_eq!(r["selected_node"], simulated);
    let nodes = r["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    for n in nodes.iter().filter(|n| n["node"] != "gpu-1") {
        assert_eq!(n["rejected_by"]["plugin"], "NodeResourcesFit", "{n}");
    }
    let text = ksched(&["explain", "default/api"]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("preemption: nominated to node-b, deleting batch/etl-1"), "{text}");
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let dir = Scratch::new("cli");
    let bad = dir.write(
        "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: 1x}}}]}\n",
    );
    let out = ksched(&["simulate", "-f", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.yaml: document 1 (line 1): pod default/p: spec.containers[0].resources.requests.cpu"),
        "{err}"
    );
    let missing = ksched(&["explain", "ghost"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn simulate_piped_has_no_progress_escape_codes() {
    // The test harness pipes stdout and stderr, as `ksched simulate ... 2>&1 | cat` does.
    for format in ["table", "json"] {
        let out = ksched(&["simulate", "--format", format]);
        assert_eq!(out.status.code(), Some(0));
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(!bytes.contains(&0x1b), "{format}: an escape code on {stream}: {}", String::from_utf8_lossy(bytes));
        }
    }
}

#[test]
fn simulate_input_without_nodes_or_pending_pods_warns_and_exits_as_before() {
    let dir = Scratch::new("warn");
    let pods = dir.write(
        "pods.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: pause}]}\n",
    );
    let cluster = examples().join("cluster.yaml");
    let empty = dir.write("empty.yaml", "");
    let cases: [(&[&std::path::Path], &[&str]); 3] = [
        (&[&pods], &["no nodes in the input; every pod will be unschedulable"]),
        (&[&cluster], &["no pending pods in the input"]),
        (&[&empty], &["no nodes in the input", "no pending pods in the input"]),
    ];
    for (files, warnings) in cases {
        let mut args = vec!["simulate".to_owned()];
        for f in files {
            args.extend(["-f".to_owned(), f.display().to_string()]);
        }
        let out = common::ksched(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{files:?}: {stderr}");
        for w in warnings {
            let line = format!("warning: {}: {w}", files[0].display());
            assert!(stderr.contains(&line), "{files:?}: want {line:?} in {stderr}");
        }
    }
    let quiet = ksched(&["simulate"]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("warning"), "nodes and pending pods: no warning");
}

#[test]
fn run_flag_for_other_input_exits_2_naming_it() {
    let file = examples().join("scheduler_perf");
    let out = common::ksched(&["run", "--workload", "basic", "--test", "X"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--test does not apply to a built-in workload"), "{stderr}");
    let yaml = file.join("missing.yaml");
    let out = common::ksched(&["--workload", yaml.to_str().unwrap(), "--nodes", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--nodes does not apply to a workload file"));
}

#[test]
fn completions_bash_script_is_printed() {
    let out = common::ksched(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.contains("complete -F") && script.contains("simulate"), "{script}");
}

/// explain with kubectl's habits through the binary: `-n` with a name prefix lists, `-o yaml`
/// holds the preemption's candidates and criterion, a typo lists the closest names, and the
/// old `--format table` still reads as text.
#[test]
fn explain_kubectl_habits_through_the_binary() {
    let listed = json(&ksched(&["explain", "-n", "batch", "etl", "-o", "json"]));
    assert_eq!(listed["target"], "pods named etl* in namespace batch");
    let results: Vec<&str> = listed["pods"].as_array().unwrap().iter().map(|p| p["result"].as_str().unwrap()).collect();
    assert_eq!(results, ["bound", "bound"]);
    let yaml = ksched(&["explain", "api", "-o", "yaml"]);
    assert_eq!(yaml.status.code(), Some(0));
    let yaml = String::from_utf8_lossy(&yaml.stdout);
    assert!(yaml.contains("candidates:") && yaml.contains("chosen_by:"), "{yaml}");
    let typo = ksched(&["explain", "wbe-1"]);
    assert_eq!(typo.status.code(), Some(2));
    let err = String::from_utf8_lossy(&typo.stderr);
    assert!(err.contains("closest names: default/web-1"), "{err}");
    let old = ksched(&["explain", "web-1", "--format", "table"]);
    assert_eq!(old.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&old.stdout).starts_with("pod default/web-1"));
}
