//! A tiny extended case written here (two nodes, running pods with start times, a PDB, a
//! PriorityClass-free priority mix, a preemption, a bind, a `preemptionPolicy: Never` pod), and
//! a table of edits to upstream's lines, each of which must fail exactly the checks it touches.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;

fn node(name: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
           "status": {"allocatable": {"cpu": "3", "memory": "8Gi", "pods": "110"}}})
}

fn pod(name: &str, cpu: &str, priority: i32, labels: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "labels": labels},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], "priority": priority}})
}

fn running(name: &str, cpu: &str, node: &str, start: &str, labels: Value) -> Value {
    let mut p = pod(name, cpu, 10, labels);
    p["spec"]["nodeName"] = json!(node);
    p["status"] = json!({"phase": "Running", "startTime": start});
    p
}

/// Upstream's lines for the case below, as its recorder would write them.
fn decisions() -> Vec<Value> {
    let insufficient = json!({"n1": "NodeResourcesFit: Insufficient cpu", "n2": "NodeResourcesFit: Insufficient cpu"});
    vec![
        // high (2 CPU, priority 1000) fits nowhere. Dry run: on n1 low-1 (started first) is
        // reprieved and low-2 goes; on n2 low-3 goes, breaking its PDB. Fewest violations: n1.
        json!({"seq": 0, "pod": "default/high", "node": null, "feasible_nodes": [], "rejected": insufficient,
               "evaluated": 0, "feasible": 0, "next_start_node_index": 0, "sampled_feasible": [],
               "sampled_rejected": insufficient,
               "error": "0/2 nodes are available: 2 Insufficient cpu.",
               "preemption": {"message": "",
                   "candidates": {"n1": {"victims": ["default/low-2"], "pdb_violations": 0},
                                  "n2": {"victims": ["default/low-3"], "pdb_violations": 1}},
                   "best_candidates": ["n1"], "nominated_node": "n1", "victims": ["default/low-2"],
                   "bound_node": "n1", "retry": {"suggested_host": "n1"}}}),
        // web (0.5 CPU) then fits only n2 (n1 holds low-1 and high).
        json!({"seq": 1, "pod": "default/web", "node": "n2", "suggested_host": "n2", "feasible_nodes": ["n2"],
               "rejected": {"n1": "NodeResourcesFit: Insufficient cpu"}, "best": ["n2"],
               "evaluated": 2, "feasible": 1, "next_start_node_index": 0, "sampled_feasible": ["n2"],
               "sampled_rejected": {"n1": "NodeResourcesFit: Insufficient cpu"}, "sampled_best": ["n2"]}),
        // never (3 CPU, preemptionPolicy Never) may not preempt.
        json!({"seq": 2, "pod": "default/never", "node": null, "feasible_nodes": [], "rejected": insufficient,
               "error": "0/2 nodes are available: 2 Insufficient cpu.",
               "preemption": {"message": "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.",
                   "candidates": {}, "best_candidates": [], "nominated_node": null, "victims": []}}),
    ]
}

struct TempCase(PathBuf);

impl Drop for TempCase {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes the case with `lines` as its decisions (and `meta` as its meta.json).
fn write_case(tag: &str, lines: &[Value], meta: Value) -> TempCase {
    // `<tag>-a`: a case folder named like the shared ones (mix, then seed).
    let dir = std::env::temp_dir().join(format!("ksched-golden-{}", std::process::id())).join(format!("{tag}-a"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let write = |file: &str, v: &Value| std::fs::write(dir.join(file), v.to_string()).expect("write");
    write("nodes.json", &json!([node("n1"), node("n2")]));
    let mut never = pod("never", "3", 20000, json!({}));
    never["spec"]["preemptionPolicy"] = json!("Never");
    write("pods.json", &json!([pod("high", "2", 1000, json!({})), pod("web", "500m", 10, json!({})), never]));
    write(
        "running.json",
        &json!([
            running("low-1", "1", "n1", "2025-12-31T00:00:00Z", json!({})),
            running("low-2", "1", "n1", "2025-12-31T00:00:05Z", json!({})),
            running("low-3", "2", "n2", "2025-12-31T00:00:09Z", json!({"app": "db"})),
        ]),
    );
    write(
        "pdbs.json",
        &json!([{"metadata": {"name": "db", "namespace": "default"},
                 "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
                 "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}}]),
    );
    write("meta.json", &meta);
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(dir.join("decisions.jsonl"), text.join("\n")).expect("write");
    TempCase(dir)
}

fn golden_profile() -> Profile {
    Profile::default_profile()
}

fn replay_case(dir: &Path) -> ReplayReport {
    replay(&GoldenCase::load(dir).expect("case loads"), &golden_profile(), 50)
}

/// The names of the checks that did not match everything.
fn failing(r: &ReplayReport) -> Vec<&'static str> {
    let mut out = Vec::new();
    let base = [
        ("feasible set", &r.feasible_set),
        ("rejecting plugin", &r.rejecting_plugin),
        ("rejection reason", &r.rejection_reason),
        ("totals", &r.totals),
        ("pick in best", &r.pick_in_best),
        ("pick", &r.pick),
        ("evaluated", &r.evaluated),
        ("start index", &r.sampling.start_index),
        ("sampled feasible", &r.sampling.feasible),
        ("sampled rejected", &r.sampling.rejected),
        ("sampled totals", &r.sampling.totals),
        ("sampled best", &r.sampling.best),
        ("fit error", &r.fit_error),
        ("postfilter message", &r.preemption.message),
        ("candidate set", &r.preemption.candidates),
        ("victims", &r.preemption.victims),
        ("pdb violations", &r.preemption.pdb_violations),
        ("dry-run rejected", &r.preemption.dry_run_rejected),
        ("best candidates", &r.preemption.best_candidates),
        ("nomination", &r.preemption.nomination),
    ];
    for (name, c) in base {
        if !c.is_perfect() {
            out.push(name);
        }
    }
    if r.replay_errors > 0 {
        out.push("replay errors");
    }
    out
}

type Edit = fn(&mut Vec<Value>);

#[test]
fn replay_fails_exactly_the_checks_an_edit_touches() {
    let cases: Vec<(&str, Edit, Vec<&str>)> = vec![
        ("as recorded", |_| {}, vec![]),
        (
            "victims of a candidate in another order",
            |l| l[0]["preemption"]["candidates"]["n2"]["victims"] = json!(["default/low-3", "default/low-1"]),
            vec!["victims"],
        ),
        (
            "PDB violations of a candidate",
            |l| l[0]["preemption"]["candidates"]["n2"]["pdb_violations"] = json!(0),
            vec!["pdb violations"],
        ),
        (
            "a candidate missing",
            |l| {
                l[0]["preemption"]["candidates"].as_object_mut().map(|m| m.remove("n2"));
            },
            vec!["candidate set"],
        ),
        (
            "a node the dry run rejected",
            |l| l[0]["preemption"]["dry_run_rejected"] = json!({"n2": "NodeResourcesFit: Insufficient cpu"}),
            vec!["dry-run rejected"],
        ),
        ("another tie", |l| l[0]["preemption"]["best_candidates"] = json!(["n1", "n2"]), vec!["best candidates"]),
        (
            "only the other node best",
            |l| l[0]["preemption"]["best_candidates"] = json!(["n2"]),
            vec!["best candidates", "nomination"],
        ),
        ("no nomination", |l| l[2]["preemption"]["nominated_node"] = json!("n1"), vec!["nomination"]),
        (
            "the PostFilter message",
            |l| l[2]["preemption"]["message"] = json!("preemption: not eligible due to preemptionPolicy=Never."),
            vec!["postfilter message"],
        ),
        (
            "the FitError",
            |l| l[0]["error"] = json!("0/2 nodes are available: 2 Insufficient memory."),
            vec!["fit error"],
        ),
        (
            "a rejection's wording",
            |l| l[1]["rejected"]["n1"] = json!("NodeResourcesFit: Insufficient memory"),
            vec!["rejection reason"],
        ),
        ("the feasible set", |l| l[1]["feasible_nodes"] = json!(["n1", "n2"]), vec!["feasible set"]),
        ("another pick", |l| l[1]["suggested_host"] = json!("n1"), vec!["pick"]),
        ("evaluated", |l| l[1]["evaluated"] = json!(1), vec!["evaluated"]),
        ("the feasible count", |l| l[1]["feasible"] = json!(2), vec!["evaluated"]),
        ("the start index", |l| l[1]["next_start_node_index"] = json!(1), vec!["start index"]),
        ("the kept nodes", |l| l[1]["sampled_feasible"] = json!(["n1", "n2"]), vec!["sampled feasible"]),
        ("a kept node where none was", |l| l[0]["sampled_feasible"] = json!(["n2"]), vec!["sampled feasible"]),
        (
            "a visited node's rejection",
            |l| l[1]["sampled_rejected"]["n1"] = json!("NodeResourcesFit: Insufficient memory"),
            vec!["sampled rejected"],
        ),
        (
            "a node the pass did not visit",
            |l| {
                l[1]["sampled_rejected"].as_object_mut().map(|m| m.remove("n1"));
            },
            vec!["sampled rejected"],
        ),
        ("totals where one node was kept", |l| l[1]["sampled_totals"] = json!([100]), vec!["sampled totals"]),
        ("the tied nodes of its cycle", |l| l[1]["sampled_best"] = json!(["n1"]), vec!["pick in best", "sampled best"]),
        (
            "a victim that is not running",
            |l| l[0]["preemption"]["victims"] = json!(["default/ghost"]),
            vec!["replay errors"],
        ),
    ];
    for (name, edit, want) in cases {
        let mut lines = decisions();
        edit(&mut lines);
        let case = write_case("edits", &lines, json!({"mix": "preemption", "clock": "2026-01-01T00:00:00Z"}));
        let r = replay_case(&case.0);
        assert_eq!(failing(&r), want, "{name}:\n{r}");
        assert_eq!(r.passes(), want.is_empty(), "{name}");
    }
}

#[test]
fn volumes_mix_difference_fails_the_replay_like_any_other() {
    // VolumeBinding exists: the volumes mix is no longer report-only.
    let mut lines = decisions();
    lines[1]["feasible_nodes"] = json!(["n1"]);
    let case = write_case("volumes", &lines, json!({"mix": "volumes"}));
    let r = replay_case(&case.0);
    assert!(!r.is_perfect() && !r.report_only && !r.passes(), "{r}");
    assert!(REPORT_ONLY_MIXES.is_empty());
}

#[test]
fn pods_bound_during_the_case_start_one_second_apart_after_the_clock() {
    let case = write_case("clock", &decisions(), json!({"clock": "2026-01-01T00:00:00Z"}));
    let loaded = GoldenCase::load(&case.0).expect("loads");
    let clock = loaded.clock.expect("clock read").0;
    assert_eq!(loaded.start_time(0).map(|t| t.0 - clock), Some(1_000_000_000));
    assert_eq!(loaded.start_time(41).map(|t| t.0 - clock), Some(42_000_000_000));
    assert_eq!(loaded.mix, "clock", "without a mix in meta.json, the folder name without its seed");
    assert_eq!(loaded.running.len(), 3);
    let default_ns = loaded.objects.namespace_labels(Sym::new("default")).expect("created for its pods");
    assert_eq!(default_ns.get(Sym::new("kubernetes.io/metadata.name")), Some(Sym::new("default")));
}

#[test]
fn the_recordings_percentage_and_parallelism_come_from_meta() {
    let case = write_case("meta", &decisions(), json!({"percentageOfNodesToScore": 0, "parallelism": 1}));
    let loaded = GoldenCase::load(&case.0).expect("loads");
    assert_eq!((loaded.percentage, loaded.parallelism), (0, 1));
    let profiles = loaded.recorded_profiles(&Profile::default_profile());
    assert_eq!(profiles.primary().percentage_of_nodes_to_score, Some(0));
    // Two nodes: every node is visited even when adaptive.
    assert!(!loaded.sampled(&profiles));
    let r = replay(&loaded, &Profile::default_profile(), 50);
    assert!(r.is_perfect(), "{r}");
    // Without the fields: what the base README says every case ran with.
    let case = write_case("meta", &decisions(), json!({}));
    let loaded = GoldenCase::load(&case.0).expect("loads");
    assert_eq!((loaded.percentage, loaded.parallelism), (RECORDED_PERCENTAGE, RECORDED_PARALLELISM));
    let profiles = loaded.recorded_profiles(&Profile::default_profile());
    assert_eq!((profiles.primary().percentage_of_nodes_to_score, profiles.primary().parallelism), (Some(100), 1));
    // A scheduler-config.json's own values give way to meta.json's.
    std::fs::write(
        case.0.join("scheduler-config.json"),
        json!({"parallelism": 16, "percentageOfNodesToScore": 30}).to_string(),
    )
    .expect("write");
    std::fs::write(case.0.join("meta.json"), json!({"percentageOfNodesToScore": 7, "parallelism": 2}).to_string())
        .expect("write");
    let loaded = GoldenCase::load(&case.0).expect("loads");
    let p = loaded.recorded_profiles(&Profile::default_profile());
    assert_eq!((p.primary().percentage_of_nodes_to_score, p.primary().parallelism), (Some(7), 2));
    // Out of range: the file and the field.
    for (meta, field) in [
        (json!({"percentageOfNodesToScore": 101}), "percentageOfNodesToScore"),
        (json!({"parallelism": 0}), "parallelism"),
    ] {
        std::fs::write(case.0.join("meta.json"), meta.to_string()).expect("write");
        let err = GoldenCase::load(&case.0).err().expect("refused").to_string();
        assert!(err.contains("meta.json") && err.contains(field), "{err}");
    }
}

#[test]
fn nodes_arrive_sorted_by_name_whatever_the_file_order() {
    let case = write_case("order", &decisions(), json!({}));
    std::fs::write(case.0.join("nodes.json"), json!([node("n2"), node("n10"), node("n1")]).to_string()).expect("write");
    let loaded = GoldenCase::load(&case.0).expect("loads");
    let names: Vec<&str> = loaded.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["n1", "n10", "n2"]);
}

#[test]
fn bad_objects_name_the_file_index_and_field() {
    let case = write_case("bad", &decisions(), json!({}));
    let no_node = json!([pod("stray", "1", 10, json!({}))]);
    std::fs::write(case.0.join("running.json"), no_node.to_string()).expect("write");
    let err = GoldenCase::load(&case.0).err().expect("refused").to_string();
    assert!(err.contains("running.json: [0]: pod default/stray: spec.nodeName: must be set"), "{err}");
    std::fs::write(case.0.join("running.json"), "{").expect("write");
    let err = GoldenCase::load(&case.0).err().expect("refused").to_string();
    assert!(err.contains("running.json: not a JSON array"), "{err}");
}
