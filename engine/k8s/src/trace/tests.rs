use super::*;

const NODE: &str = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}}"#;
const POD: &str = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}"#;

#[test]
fn every_op_reads() {
    let text = format!(
        "{{\"time\": 0, \"op\": \"add_node\", \"object\": {NODE}}}\n\
         {{\"op\": \"template\", \"name\": \"t\", \"object\": {POD}}}\n\
         \n\
         {{\"time\": 1.5, \"op\": \"create\", \"template\": \"t\", \"overrides\": {{\"metadata\": {{\"name\": \"p1\", \"namespace\": \"ns\"}}}}, \"duration\": \"30s\"}}\n\
         {{\"time\": \"2m\", \"op\": \"delete\", \"pod\": \"ns/p1\", \"gracePeriodSeconds\": 0}}\n\
         {{\"time\": 120, \"op\": \"cordon\", \"node\": \"n1\"}}\n\
         {{\"time\": 121, \"op\": \"uncordon\", \"node\": \"n1\"}}\n\
         {{\"time\": 122, \"op\": \"drain\", \"selector\": \"zone=b\", \"remove\": true, \"timeout\": \"10s\"}}\n\
         {{\"time\": 123, \"op\": \"scale\", \"kind\": \"Deployment\", \"name\": \"web\", \"replicas\": 3}}\n\
         {{\"time\": 124, \"op\": \"bind\", \"pod\": \"p2\", \"node\": \"n1\"}}\n\
         {{\"time\": 125, \"op\": \"remove_node\", \"node\": \"n1\"}}\n"
    );
    let t = Trace::parse("t.jsonl", &text).unwrap();
    let lines: Vec<u32> = t.events.iter().map(|e| e.line).collect();
    assert_eq!(lines, [1, 4, 5, 6, 7, 8, 9, 10, 11]);
    assert!(matches!(&t.events[0].op, Op::AddNode(n) if n.name.as_str() == "n1"));
    let Op::CreatePod(p) = &t.events[1].op else { panic!("{:?}", t.events[1].op) };
    assert_eq!(p.key(), "ns/p1");
    assert_eq!(p.run_duration, Some(Duration::from_secs(30)), "duration sets the run duration");
    assert_eq!(t.events[1].at, Duration::from_millis(1500));
    assert_eq!(t.events[2].at, Duration::from_secs(120));
    assert!(
        matches!(&t.events[2].op, Op::DeletePod { namespace, name, grace: Some(0) } if namespace == "ns" && name == "p1")
    );
    assert!(matches!(&t.events[5].op, Op::Drain { nodes: NodeSelection::Label(k, v), remove: true, timeout }
        if k == "topology.kubernetes.io/zone" && v == "b" && *timeout == Duration::from_secs(10)));
    assert!(
        matches!(&t.events[6].op, Op::Scale { kind, namespace, replicas: 3, .. } if kind == "Deployment" && namespace == "default")
    );
    assert!(
        matches!(&t.events[7].op, Op::Bind { namespace, name, node } if namespace == "default" && name == "p2" && node == "n1")
    );
}

#[test]
fn errors_name_file_line_and_field() {
    let cases: &[(&str, &str)] = &[
        ("{\"time\": 1, \"op\": \"explode\"}", "t.jsonl:1: op: unknown op \"explode\""),
        ("{\"op\": \"cordon\", \"node\": \"n\"}", "t.jsonl:1: time: Required value"),
        ("{\"time\": -1, \"op\": \"cordon\", \"node\": \"n\"}", "t.jsonl:1: time: -1 is not a time"),
        ("{\"time\": \"soon\", \"op\": \"cordon\", \"node\": \"n\"}", "t.jsonl:1: time: invalid duration"),
        ("{\"time\": 1, \"op\": \"cordon\"}", "t.jsonl:1: node: Required value"),
        ("{\"time\": 1, \"op\": \"cordon\", \"node\": \"n\", \"colour\": 1}", "t.jsonl:1: colour: unknown field `colour`"),
        ("{\"time\": 1, \"op\": \"cordon\", \"node\": 5}", "t.jsonl:1: node: invalid type"),
        ("{\"time\": 5, \"op\": \"cordon\", \"node\": \"n\"}\n{\"time\": 4, \"op\": \"cordon\", \"node\": \"n\"}", "t.jsonl:2: time: 4 s is before the previous line's 5 s"),
        ("{\"time\": 1, \"op\": \"create\", \"template\": \"nope\"}", "t.jsonl:1: template: no template \"nope\""),
        ("{\"time\": 1, \"op\": \"scale\", \"kind\": \"Deployment\", \"name\": \"w\", \"replicas\": -1}", "t.jsonl:1: replicas: -1 must be"),
        ("{\"time\": 1, \"op\": \"drain\"}", "t.jsonl:1: node: give node or selector"),
        ("not json", "t.jsonl:1: malformed JSON: expected ident"),
        (
            "{\"time\": 1, \"op\": \"create\", \"object\": {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\", \"resources\": {\"requests\": {\"cpu\": \"lots\"}}}]}}}",
            "t.jsonl:1: pod default/p: object.spec.containers[0].resources.requests",
        ),
        (
            "{\"time\": 1, \"op\": \"add_node\", \"object\": {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}}",
            "t.jsonl:1: object.kind: add_node takes a Node",
        ),
        (
            "{\"time\": 1, \"op\": \"create\", \"object\": {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\"}}}",
            "t.jsonl:1: object.kind: ksched does not model ConfigMap",
        ),
    ];
    for (text, want) in cases {
        let got = Trace::parse("t.jsonl", text).map(|t| t.events.len()).unwrap_err().to_string();
        assert!(got.starts_with(want), "{text}\n got: {got}\nwant: {want}...");
    }
}

#[test]
fn merge_patch_follows_rfc_7386() {
    let mut target = serde_json::json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
    merge_patch(&mut target, &serde_json::json!({"a": "z", "c": {"f": null, "h": 1}, "l": [3]}));
    assert_eq!(target, serde_json::json!({"a": "z", "c": {"d": "e", "h": 1}, "l": [3]}));
}

#[test]
fn node_selection_reads_names_zones_and_labels() {
    assert_eq!(NodeSelection::parse("n1"), Ok(NodeSelection::Name("n1".into())));
    assert_eq!(
        NodeSelection::parse("zone=b"),
        Ok(NodeSelection::Label("topology.kubernetes.io/zone".into(), "b".into()))
    );
    assert_eq!(NodeSelection::parse("pool=gpu"), Ok(NodeSelection::Label("pool".into(), "gpu".into())));
    assert!(NodeSelection::parse("=x").is_err());
    assert!(NodeSelection::parse("").is_err());
}

/// A trace's objects are read under the run's feature gates, and the fields ksched does not
/// model are counted (named pod and field), or refused under `strict`, as a manifest's are.
#[test]
fn trace_objects_read_under_the_runs_gates_with_their_unmodelled_fields() {
    use ksched_engine::features::{Feature, FeatureGates};
    let pod = |name: &str, extra: &str| {
        format!(
            "{{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {{\"name\": \"{name}\"}}, \"spec\": {{{extra}\"resources\": {{\"requests\": {{\"cpu\": \"2\"}}}}, \"containers\": [{{\"name\": \"c\", \"image\": \"i\", \"resources\": {{\"requests\": {{\"cpu\": \"1\"}}}}}}]}}}}"
        )
    };
    let gang = "\"workloadRef\": {\"name\": \"w\", \"podGroup\": \"g\"}, ";
    let text = format!(
        "{{\"time\": 0, \"op\": \"create\", \"object\": {}}}\n\
         {{\"time\": 1, \"op\": \"create\", \"object\": {}}}\n\
         {{\"time\": 2, \"op\": \"create\", \"object\": {}}}\n",
        pod("plain", ""),
        pod("gang-1", gang),
        pod("gang-2", gang)
    );
    let cpu = |t: &Trace| -> Vec<i64> {
        t.events.iter().map(|e| if let Op::CreatePod(p) = &e.op { p.requests().milli_cpu } else { -1 }).collect()
    };
    // v1.35's defaults: pod-level requests count (PodLevelResources on).
    let t = Trace::parse("t.jsonl", &text).unwrap();
    assert_eq!(cpu(&t), [2000, 2000, 2000]);
    let field = &t.unmodelled.fields["spec.workloadRef"];
    assert_eq!(
        (field.count, field.objects.clone()),
        (2, vec!["pod default/gang-1".into(), "pod default/gang-2".into()])
    );
    // The run's gates, not the defaults.
    let mut off = FeatureGates::default();
    off.set(Feature::PodLevelResources, false).unwrap();
    let t = Trace::parse_with("t.jsonl", &text, &ReadOptions { gates: off, ..ReadOptions::default() }).unwrap();
    assert_eq!(cpu(&t), [1000, 1000, 1000], "PodLevelResources off: the containers' sum");
    // --strict: the first such field is an error naming the line, the pod and the field.
    let err = Trace::parse_with("t.jsonl", &text, &ReadOptions { strict: true, ..ReadOptions::default() })
        .map(|t| t.events.len())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("t.jsonl:2: pod default/gang-1: object.spec.workloadRef: not modelled by ksched"), "{err}");
}

#[test]
fn audit_import_reads_under_the_runs_gates() {
    use ksched_engine::features::{Feature, FeatureGates};
    let event = |verb: &str, resource: &str, name: &str, object: &str| {
        format!(
            "{{\"kind\": \"Event\", \"apiVersion\": \"audit.k8s.io/v1\", \"level\": \"RequestResponse\", \"stage\": \"ResponseComplete\", \"verb\": \"{verb}\", \"requestReceivedTimestamp\": \"2024-01-01T00:00:00Z\", \"stageTimestamp\": \"2024-01-01T00:00:00Z\", \"objectRef\": {{\"resource\": \"{resource}\", \"namespace\": \"default\", \"name\": \"{name}\"}}, \"responseStatus\": {{\"code\": 201}}, \"requestObject\": {object}}}"
        )
    };
    let pod = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "g"}, "spec": {"workloadRef": {"name": "w", "podGroup": "g"}, "resources": {"requests": {"cpu": "2"}}, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}"#;
    let log = event("create", "pods", "g", pod);
    let mut off = FeatureGates::default();
    off.set(Feature::PodLevelResources, false).unwrap();
    let t = audit::parse_with(&[("audit.log", &log)], &ReadOptions { gates: off, ..ReadOptions::default() })
        .unwrap_or_else(|e| panic!("{e}"));
    let Op::CreatePod(p) = &t.events[0].op else { panic!("{:?}", t.events[0].op) };
    assert_eq!(p.requests().milli_cpu, 1000, "the run's gates");
    assert_eq!(t.unmodelled.fields["spec.workloadRef"].objects, ["pod default/g"]);
    let err = audit::parse_with(&[("audit.log", &log)], &ReadOptions { strict: true, ..ReadOptions::default() })
        .map(|t| t.events.len())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("audit.log:1: pod default/g: object.spec.workloadRef: not modelled"), "{err}");
}
