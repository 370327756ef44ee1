//! `--feature-gates` through the binary, on every command that schedules: the same input run
//! with and without a gate that changes upstream's decision gives a different answer, so the
//! flag reaches each command's scheduler (main hands it over; a command that dropped it would
//! answer the same both ways). PodLevelResources=false: a pod asking 5 CPU at pod level (100m in
//! its container) fits a 4-CPU node. SchedulerPopFromBackoffQ=false: a preemptor waits out its
//! backoff instead of being popped from backoffQ at once, on built-in workloads.
//!
//! `sweep` is checked in tests/sweep_cli.rs, workload files' `featureGates` in the crate's
//! feature_gates tests. `bench`'s children report the gates they ran under (below); `gate`
//! passes the same arguments to its children (its unit tests); `feature-gates` lists them;
//! `completions` schedules nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const NODE: &str =
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"4\", memory: 32Gi, pods: \"110\"}}\n";
const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  resources: {requests: {cpu: \"5\"}}\n  \
                   containers: [{name: c, image: pause, resources: {requests: {cpu: 100m}}}]\n";
const PLR_OFF: &str = "PodLevelResources=false";
const BACKOFF_OFF: &str = "SchedulerPopFromBackoffQ=false";

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("ksched-gates-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let config = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
    for (name, text) in [
        ("node.yaml", NODE.to_owned()),
        ("pod.yaml", POD.to_owned()),
        ("cluster.yaml", format!("{NODE}---\n{POD}")),
        ("a.yaml", config.to_owned()),
        ("b.yaml", config.to_owned()),
        // The same node and two such pods as a workload file.
        ("template.yaml", POD.replace("{name: p, namespace: default}", "{generateName: p-}")),
        (
            "perf.yaml",
            "- name: T\n  workloadTemplate:\n  - {opcode: createNodes, count: 1}\n  \
             - {opcode: createPods, count: 2, podTemplatePath: template.yaml, collectMetrics: true}\n  \
             workloads:\n  - name: w\n"
                .to_owned(),
        ),
    ] {
        std::fs::write(d.join(name), text).unwrap();
    }
    // The same node and pod as trace lines.
    let node = serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}}});
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"resources": {"requests": {"cpu": "5"}},
                 "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}]}});
    let line =
        |time: u32, object: Value| serde_json::json!({"time": time, "op": "create", "object": object}).to_string();
    std::fs::write(d.join("trace.jsonl"), format!("{}\n{}\n", line(0, node), line(1, pod))).unwrap();
    d
}

/// `ksched ARGS [--feature-gates GATES]` in `dir`.
fn ksched(dir: &Path, args: &[&str], gates: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ksched"));
    c.current_dir(dir).args(args);
    if let Some(g) = gates {
        c.args(["--feature-gates", g]);
    }
    c.output().expect("ksched runs")
}

fn json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr)))
}

/// What a command answered: the part of its output the gate decides.
type Answer = fn(&Output) -> String;

#[test]
fn feature_gates_change_the_answer_of_every_scheduling_command() {
    let dir = scratch();
    let cases: [(&[&str], &str, Answer); 8] = [
        (&["simulate", "-f", "cluster.yaml", "-o", "json"], PLR_OFF, |o| json(o)["pods"][0]["node"].to_string()),
        (&["explain", "p", "-f", "cluster.yaml"], PLR_OFF, |o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.lines().find(|l| l.starts_with("result: ")).unwrap_or(&text).split(':').nth(1).unwrap_or("").to_owned()
        }),
        (&["compare", "--config", "a.yaml", "--config", "b.yaml", "-f", "cluster.yaml", "-o", "json"], PLR_OFF, |o| {
            json(o)["configs"][0]["scheduled"].to_string()
        }),
        (&["capacity", "-t", "node.yaml", "-f", "pod.yaml", "--max-nodes", "2"], PLR_OFF, |o| {
            format!("exit {:?}", o.status.code())
        }),
        (&["replay", "trace.jsonl", "-o", "json"], PLR_OFF, |o| json(o)["summary"]["bound"].to_string()),
        (&["run", "--workload", "perf.yaml"], PLR_OFF, |o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            // The counts, without the wall time after them.
            let line = text.lines().find(|l| l.contains(" pods created, ")).unwrap_or(&text);
            line.split(';').next().unwrap_or("").to_owned()
        }),
        (&["run", "--workload", "preemption", "--nodes", "3", "-o", "json"], BACKOFF_OFF, |o| {
            json(o)["simulated_seconds"].to_string()
        }),
        (&["soak", "--steps", "200", "--nodes", "5", "-o", "json"], BACKOFF_OFF, |o| {
            json(o)["report"]["attempts"]["attempts"].to_string()
        }),
    ];
    for (args, gate, answer) in cases {
        let (default, gated) = (ksched(&dir, args, None), ksched(&dir, args, Some(gate)));
        let (a, b) = (answer(&default), answer(&gated));
        assert_ne!(a, b, "{args:?}: the same answer with and without --feature-gates {gate}");
        // `ksched run` alone is `ksched run`: its flags and the gates after no subcommand.
        if args[0] == "run" {
            assert_eq!(answer(&ksched(&dir, &args[1..], Some(gate))), b, "ksched alone");
        }
        // A built-in run's summary says which gates it ran under.
        if args.contains(&"preemption") {
            assert_eq!(json(&gated)["feature_gates"], gate);
            assert!(json(&default).get("feature_gates").is_none());
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `ksched golden` builds its profile under the gates: upstream's recorded pod-level
/// resources decisions (`../shared/golden-pending/resources-a`, skipped when absent) match with
/// v1.35's defaults and differ with PodLevelResources off.
#[test]
fn feature_gates_change_golden_replays() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/golden-pending/resources-a");
    if !dir.is_dir() {
        eprintln!("SKIPPED: {} is absent", dir.display());
        return;
    }
    let dir_s = dir.to_str().unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(ksched(here, &["golden", dir_s], None).status.code(), Some(0), "v1.35's defaults match upstream");
    let off = ksched(here, &["golden", dir_s], Some(PLR_OFF));
    assert_eq!(off.status.code(), Some(1), "{}", String::from_utf8_lossy(&off.stdout));
}

/// `ksched bench`'s children run under the gates: each reports them, and every figure the
/// bench writes is labelled with them (none under v1.35's defaults), as is its table's title.
#[test]
fn bench_children_run_under_the_gates_and_label_their_figures() {
    let dir = std::env::temp_dir().join(format!("ksched-gates-cli-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let labels = |gates: Option<&str>| {
        let out = ksched(&dir, &["bench", "--only", "preemption", "--nodes", "3", "--out", "b"], gates);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let table = String::from_utf8_lossy(&out.stdout).into_owned();
        let items: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("b/bench-3nodes.json")).unwrap()).unwrap();
        let labels: Vec<Value> =
            items["dataItems"].as_array().unwrap().iter().map(|i| i["labels"]["FeatureGates"].clone()).collect();
        (table, labels)
    };
    let (table, default) = labels(None);
    assert!(!default.is_empty() && default.iter().all(Value::is_null), "{default:?}");
    assert!(!table.contains("--feature-gates"), "{table}");
    let (table, gated) = labels(Some(BACKOFF_OFF));
    assert!(gated.iter().all(|l| l == BACKOFF_OFF), "{gated:?}");
    assert!(
        table.starts_with(&format!("ksched bench --nodes 3 --scale 1 --feature-gates {BACKOFF_OFF} (seed 1")),
        "{table}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
