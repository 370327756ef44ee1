use clap::Parser;
use serde_json::{json, Value};

use super::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ReplayArgs,
}

fn args(argv: &[&str]) -> ReplayArgs {
    Cli::try_parse_from(std::iter::once("replay").chain(argv.iter().copied())).unwrap_or_else(|e| panic!("{e}")).args
}

fn run(argv: &[&str], trace: Trace) -> ReplayReport {
    replay(&args(argv), &Manifests::new(), trace).unwrap_or_else(|e| panic!("{e}"))
}

fn row<'a>(r: &'a ReplayReport, key: &str) -> &'a ReplayPod {
    r.pods.iter().find(|p| p.pod == key).unwrap_or_else(|| panic!("no row {key}: {:?}", r.pods))
}

/// An audit Event line at second `t` of 2025-01-01.
fn event(t: u32, level: &str, verb: &str, object_ref: Value, request: Value, response: Value) -> String {
    let ts = format!("2025-01-01T00:{:02}:{:02}.000000Z", t / 60, t % 60);
    let mut e = json!({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": format!("id-{t}"),
        "stage": "ResponseComplete", "verb": verb, "objectRef": object_ref,
        "requestReceivedTimestamp": ts, "stageTimestamp": ts, "responseStatus": {"metadata": {}, "code": 201},
    });
    if !request.is_null() {
        e["requestObject"] = request;
    }
    if !response.is_null() {
        e["responseObject"] = response;
    }
    e.to_string()
}

fn node_obj(name: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
           "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}})
}

fn pod_obj(name: &str, cpu: &str, extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]});
    if let (Value::Object(s), Value::Object(x)) = (&mut spec, extra) {
        s.extend(x);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")}, "spec": spec})
}

fn create_node(t: u32, name: &str, cpu: &str) -> String {
    let o = node_obj(name, cpu);
    event(t, "RequestResponse", "create", json!({"resource": "nodes", "name": name, "apiVersion": "v1"}), o.clone(), o)
}

fn create_pod(t: u32, level: &str, name: &str, cpu: &str, extra: Value) -> String {
    let o = pod_obj(name, cpu, extra);
    let r = json!({"resource": "pods", "namespace": "default", "name": name, "apiVersion": "v1"});
    let response = if level == "RequestResponse" { o.clone() } else { Value::Null };
    event(t, level, "create", r, o, response)
}

fn bind(t: u32, pod: &str, node: &str) -> String {
    event(
        t,
        "Request",
        "create",
        json!({"resource": "pods", "namespace": "default", "name": pod, "subresource": "binding", "apiVersion": "v1"}),
        json!({"kind": "Binding", "apiVersion": "v1", "metadata": {"name": pod, "namespace": "default"}, "target": {"kind": "Node", "name": node}}),
        Value::Null,
    )
}

#[test]
fn audit_log_replays_and_compares_every_recorded_binding() {
    let mut lines = vec![
        create_node(0, "n1", "4"),
        create_node(0, "n2", "4"),
        create_node(0, "small", "1"),
        create_pod(1, "RequestResponse", "a", "1", json!({})),
        bind(1, "a", "n1"),
        // b fits nowhere but on the big nodes; the recorded scheduler put it on "small" (which
        // it no longer fits in this replay's cluster).
        create_pod(2, "Request", "b", "2", json!({})),
        bind(2, "b", "small"),
        // Nowhere to go: no node has the label.
        create_pod(3, "Request", "c", "1", json!({"nodeSelector": {"disk": "ssd"}})),
        bind(3, "c", "n2"),
        event(
            4,
            "Request",
            "patch",
            json!({"resource": "nodes", "name": "n2", "apiVersion": "v1"}),
            json!({"spec": {"unschedulable": true}}),
            Value::Null,
        ),
        create_pod(5, "Request", "d", "1", json!({})),
        event(
            6,
            "Metadata",
            "delete",
            json!({"resource": "pods", "namespace": "default", "name": "d", "apiVersion": "v1"}),
            Value::Null,
            Value::Null,
        ),
        create_pod(7, "Request", "e", "1", json!({})),
        event(
            8,
            "Request",
            "create",
            json!({"resource": "configmaps", "namespace": "default", "name": "x", "apiVersion": "v1"}),
            json!({}),
            Value::Null,
        ),
    ];
    // Not counted: another stage, a failed request.
    let mut received: Value = serde_json::from_str(&create_pod(9, "Request", "f", "1", json!({}))).unwrap();
    received["stage"] = json!("RequestReceived");
    lines.push(received.to_string());
    let mut failed: Value = serde_json::from_str(&create_pod(9, "Request", "g", "1", json!({}))).unwrap();
    failed["responseStatus"]["code"] = json!(409);
    lines.push(failed.to_string());
    let trace = ksched_k8s::trace::audit::parse(&[("audit.log", &lines.join("\n"))]).unwrap();
    assert_eq!(trace.warnings, ["audit.log: left out 1 audit event(s): create configmaps"]);
    let r = run(&["x"], trace);
    let a = row(&r, "default/a");
    assert_eq!(a.recorded_node.as_deref(), Some("n1"));
    // n1 and n2 are alike: ksched took n1, or n2 tied with it.
    match a.binding {
        Some(BindingMatch::Same) => assert_eq!(a.node.as_deref(), Some("n1")),
        Some(BindingMatch::Tied) => assert_eq!(a.node.as_deref(), Some("n2")),
        other => panic!("{other:?}: {a:?}"),
    }
    let b = row(&r, "default/b");
    assert_eq!(b.binding, Some(BindingMatch::Other));
    assert_eq!(
        b.binding_reason.as_deref(),
        Some("the recorded node small fails NodeResourcesFit: Insufficient cpu"),
        "{b:?}"
    );
    let c = row(&r, "default/c");
    assert_eq!((c.binding, c.result.as_str()), (Some(BindingMatch::Unbound), "pending"));
    assert!(c.binding_reason.as_deref().unwrap_or("").contains("didn't match Pod's node affinity/selector"), "{c:?}");
    // n2 cordoned at 4 s: d and e go to n1; d is deleted (a Metadata-level delete) at 6 s.
    let d = row(&r, "default/d");
    assert_eq!((d.node.as_deref(), d.result.as_str()), (Some("n1"), "deleted"));
    assert_eq!(row(&r, "default/e").node.as_deref(), Some("n1"));
    assert!(r.pods.iter().all(|p| p.pod != "default/f" && p.pod != "default/g"), "{:?}", r.pods);
    let s = &r.summary;
    assert_eq!((s.bindings_other, s.bindings_unbound), (1, 1));
    assert_eq!(s.bindings_same + s.bindings_tied, 1);
    // c's attempts (again after n2's cordon): NodeAffinity everywhere, NodeUnschedulable on n2.
    assert!(s.unschedulable_by_plugin.get("NodeAffinity").is_some_and(|&n| n >= 1), "{:?}", s.unschedulable_by_plugin);
}

#[test]
fn audit_log_of_a_scheduler_at_parallelism_one_replays_every_binding_the_same() {
    // Record: ksched (upstream's tie-break, one worker) schedules 40 pods of varied sizes on
    // 12 alike nodes (ties at every step); its bindings become the audit log.
    let sizes = ["100m", "250m", "500m", "1", "300m"];
    let mut lines: Vec<String> = (0..12).map(|i| create_node(0, &format!("n{i}"), "4")).collect();
    for i in 0..40u32 {
        lines.push(create_pod(1 + i, "RequestResponse", &format!("p{i}"), sizes[i as usize % 5], json!({})));
    }
    let recording = ksched_k8s::trace::audit::parse(&[("audit.log", &lines.join("\n"))]).unwrap();
    let recorded = run(&["x"], recording);
    assert_eq!(recorded.summary.bound, 40);
    for (i, p) in recorded.pods.iter().enumerate() {
        lines.push(bind(1 + i as u32, &p.pod["default/".len()..], p.node.as_deref().unwrap()));
    }
    let r = run(
        &["x", "--tie-break", "upstream"],
        ksched_k8s::trace::audit::parse(&[("audit.log", &lines.join("\n"))]).unwrap(),
    );
    assert_eq!(r.summary.bindings_same, 40, "{}", table(&r));
    // A random draw among the ties does not follow the recording (and once a pod went
    // elsewhere, later pods meet another cluster).
    let r = run(
        &["x", "--tie-break", "random", "--seed", "7"],
        ksched_k8s::trace::audit::parse(&[("audit.log", &lines.join("\n"))]).unwrap(),
    );
    assert!(r.summary.bindings_tied > 0, "{}", table(&r));
    assert!(r.summary.bindings_same < 40, "{}", table(&r));
}

#[test]
fn audit_errors_name_file_line_and_field() {
    let good = create_node(0, "n1", "4");
    let cases: Vec<(String, &str)> = vec![
        ("{".into(), "audit.log:2: malformed JSON"),
        (json!({"kind": "Pod"}).to_string(), "audit.log:2: kind: not an audit Event"),
        (
            good.replace("2025-01-01T00:00:00.000000Z", "yesterday"),
            "audit.log:2: requestReceivedTimestamp: \"yesterday\"",
        ),
        (
            bind(1, "a", "n1").replace("\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}", "\"target\":{}"),
            "audit.log:2: requestObject.target.name: Required value",
        ),
        (
            create_pod(1, "Request", "p", "lots", json!({})),
            "audit.log:2: pod default/p: object.spec.containers[0].resources.requests",
        ),
    ];
    for (line, want) in cases {
        let text = format!("{good}\n{line}\n");
        let got =
            ksched_k8s::trace::audit::parse(&[("audit.log", &text)]).map(|t| t.events.len()).unwrap_err().to_string();
        assert!(got.starts_with(want), "got: {got}\nwant: {want}...");
    }
}

const ALI_NODES: &str = "sn,cpu_milli,memory_mib,gpu,model\n\
    g1,8000,32768,1,V100M16\n\
    g2,8000,32768,2,T4\n\
    c1,8000,32768,0,\n";

#[test]
fn alibaba_trace_maps_gpus_models_and_lifetimes() {
    let pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
        v100,1000,1024,1,1000,V100M16|V100M32,LS,Running,100,,101\n\
        half-a,1000,1024,1,500,T4,BE,Succeeded,110,400,111\n\
        half-b,1000,1024,1,500,T4,BE,Succeeded,120,500,121\n\
        half-c,1000,1024,1,500,T4,BE,Pending,130,,\n\
        cpu,2000,2048,0,0,,Burstable,Running,140,200,141\n";
    let trace =
        ksched_k8s::trace::alibaba::parse(("nodes.csv", ALI_NODES), ("pods.csv", pods), Default::default()).unwrap();
    let r = run(&["x"], trace);
    assert_eq!(row(&r, "default/v100").node.as_deref(), Some("g1"), "the model's node");
    // Whole GPUs: g2 has two; half-c waits for half-a's deletion at 400 s (300 s from the start).
    assert_eq!(row(&r, "default/half-a").node.as_deref(), Some("g2"));
    assert_eq!(row(&r, "default/half-b").node.as_deref(), Some("g2"));
    let c = row(&r, "default/half-c");
    assert_eq!((c.node.as_deref(), c.created_at, c.bound_at), (Some("g2"), 30.0, Some(300.0)), "{c:?}");
    let cpu = row(&r, "default/cpu");
    assert_eq!((cpu.result.as_str(), cpu.ended_at), ("deleted", Some(100.0)));
    assert_eq!(r.summary.delay_p99, Some(270.0));
    // GPU shares: every T4 pod fits at once.
    let trace = ksched_k8s::trace::alibaba::parse(
        ("nodes.csv", ALI_NODES),
        ("pods.csv", pods),
        ksched_k8s::trace::alibaba::GpuShare::Milli,
    )
    .unwrap();
    let r = run(&["x", "--gpu-share", "milli"], trace);
    assert_eq!(row(&r, "default/half-c").bound_at, Some(30.0));
    let gpu = r
        .timeline
        .iter()
        .find(|s| s.t >= 30.0)
        .and_then(|s| s.resources.get(ksched_k8s::trace::alibaba::GPU_MILLI).cloned());
    assert_eq!(gpu.map(|u| (u.requested, u.allocatable)), Some((2500, 3000)));
}

#[test]
fn alibaba_errors_name_file_line_and_column() {
    let header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
    let cases = [
        (format!("{header}p,lots,1,0,0,,LS,Running,1,,\n"), "pods.csv:2: cpu_milli: \"lots\" is not a number"),
        (format!("{header}p,1,1,0,0,,LS,Running,,,\n"), "pods.csv:2: creation_time: Required value"),
        (format!("{header}p,1,1,0,0,,LS,Running,5,3,\n"), "pods.csv:2: deletion_time: 3 is before creation_time 5"),
        ("name,cpu_milli\np,1\n".into(), "pods.csv:1: memory_mib: no such column"),
    ];
    for (pods, want) in cases {
        let got = ksched_k8s::trace::alibaba::parse(("nodes.csv", ALI_NODES), ("pods.csv", &pods), Default::default())
            .map(|t| t.events.len())
            .unwrap_err()
            .to_string();
        assert!(got.starts_with(want), "got: {got}\nwant: {want}...");
    }
}

#[test]
fn html_timeline_has_every_plot() {
    let pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
        a,1000,1024,1,1000,,LS,Running,0,600,\n\
        b,1000,1024,2,1000,,LS,Running,60,900,\n\
        c,1000,1024,2,1000,T4,LS,Running,120,,\n";
    let trace =
        ksched_k8s::trace::alibaba::parse(("nodes.csv", ALI_NODES), ("pods.csv", pods), Default::default()).unwrap();
    let r = run(&["x", "--step", "30s"], trace);
    assert_eq!(r.timeline.first().map(|s| s.t), Some(0.0));
    let ts: Vec<f64> = r.timeline.iter().map(|s| s.t).collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "samples in time order: {ts:?}");
    let h = html("t", &r);
    for kind in ["pods", "allocation", "fragmentation", "delay", "unschedulable"] {
        assert!(h.contains(&format!("data-plot=\"{kind}\"")), "no {kind} plot");
    }
    assert!(h.matches("class=\"series\"").count() >= 6, "{h}");
}

#[test]
fn cronjob_from_a_trace_fires_over_a_simulated_day_then_the_replay_stops() {
    // A CronJob created at 1 h, every 6 hours, each pod running 30 minutes: without
    // --duration the replay would never go idle; it stops a day after the trace's last line.
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}});
    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "report"},
        "spec": {"schedule": "0 */6 * * *", "jobTemplate": {"spec": {"template": {
            "metadata": {"annotations": {"ksched.io/run-duration": "30m"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}}}}});
    let text = format!(
        "{}\n{}\n",
        json!({"time": 0, "op": "add_node", "object": node}),
        json!({"time": "1h", "op": "create", "object": cron})
    );
    let r = run(&["t.jsonl"], Trace::parse("t.jsonl", &text).unwrap());
    assert_eq!(r.summary.simulated_seconds, 25.0 * 3600.0, "a day after the last line");
    let created: Vec<f64> = r.pods.iter().map(|p| p.created_at / 3600.0).collect();
    assert_eq!(created, [6.0, 12.0, 18.0, 24.0], "{:?}", r.pods);
    assert!(r.pods.iter().all(|p| p.result == "succeeded" && p.node.as_deref() == Some("n1")), "{:?}", r.pods);
}

/// `ksched replay`: the trace's objects under `--feature-gates`, their unmodelled fields in the
/// summary (and the text report), an error with `--strict`.
#[test]
fn replay_reads_the_trace_under_the_runs_gates_and_counts_unmodelled_fields() {
    use ksched_engine::features::{Feature, FeatureGates};
    let dir = std::env::temp_dir().join(format!("ksched-replay-gates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.jsonl");
    // A 1.5-CPU node; the pod asks 1 CPU in its container, 2 at pod level.
    let node = node_obj("n1", "1500m");
    let pod = pod_obj(
        "gang",
        "1",
        json!({"resources": {"requests": {"cpu": "2"}}, "workloadRef": {"name": "w", "podGroup": "g"}}),
    );
    let text = format!(
        "{}\n{}\n",
        json!({"time": 0, "op": "add_node", "object": node}),
        json!({"time": 1, "op": "create", "object": pod})
    );
    std::fs::write(&path, text).unwrap();
    let file = path.to_str().unwrap();
    let go = |gates: FeatureGates| {
        let a = ReplayArgs { gates, ..args(&[file]) };
        let trace = read_trace(&a).unwrap_or_else(|e| panic!("{e}"));
        replay(&a, &Manifests::new(), trace).unwrap_or_else(|e| panic!("{e}"))
    };
    let on = go(FeatureGates::default());
    assert_eq!(row(&on, "default/gang").node, None, "pod-level 2 CPUs do not fit");
    assert_eq!(on.summary.unmodelled_fields.get("spec.workloadRef"), Some(&1));
    assert!(table(&on)
        .contains("fields ksched does not model (objects; upstream's decision may differ): spec.workloadRef 1"));
    let mut off = FeatureGates::default();
    off.set(Feature::PodLevelResources, false).unwrap();
    assert_eq!(row(&go(off), "default/gang").node.as_deref(), Some("n1"), "PodLevelResources off: 1 CPU fits");
    let err = read_trace(&args(&[file, "--strict"])).map(|t| t.events.len()).unwrap_err();
    assert!(err.contains("pod default/gang: object.spec.workloadRef: not modelled by ksched"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A gated pod a trace creates (ksched's format, an audit log) is never scheduled: traces
/// have no op that removes a gate, so it stays pending, never attempted; its ungated twin binds.
#[test]
fn gated_pods_from_traces_are_never_scheduled() {
    let gated = json!({"schedulingGates": [{"name": "example.com/wait"}]});
    let text = format!(
        "{}\n{}\n{}\n",
        json!({"time": 0, "op": "add_node", "object": node_obj("n1", "4")}),
        json!({"time": 1, "op": "create", "object": pod_obj("gated", "100m", gated.clone())}),
        json!({"time": 2, "op": "create", "object": pod_obj("free", "100m", json!({}))}),
    );
    let log = [
        create_node(0, "n1", "4"),
        create_pod(1, "RequestResponse", "gated", "100m", gated),
        create_pod(2, "RequestResponse", "free", "100m", json!({})),
    ]
    .join("\n");
    for (path, trace) in [
        ("ksched trace", Trace::parse("t.jsonl", &text).unwrap()),
        ("audit log", ksched_k8s::trace::audit::parse(&[("audit.log", &log)]).unwrap()),
    ] {
        let r = run(&["t.jsonl"], trace);
        assert_eq!(row(&r, "default/free").node.as_deref(), Some("n1"), "{path}");
        let g = row(&r, "default/gated");
        assert_eq!((g.node.as_deref(), g.result.as_str(), g.attempts), (None, "pending", 0), "{path}");
        assert_eq!(r.summary.attempts, 1, "{path}: only the free pod was tried");
    }
}
