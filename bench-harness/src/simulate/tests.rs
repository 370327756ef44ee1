use super::*;
use ksched_engine::framework::Profile;

/// Manifests from (file name, text) pairs.
pub fn manifests(files: &[(&str, &str)]) -> Manifests {
    let mut m = Manifests::new();
    for (name, text) in files {
        m.read_str(name, text).unwrap_or_else(|e| panic!("{e}"));
    }
    m
}

/// A node with `cpu` allocatable, 32Gi, 110 pods, and optional extra YAML under `spec`.
pub fn node(name: &str, cpu: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n\
         spec: {{{spec}}}\nstatus: {{allocatable: {{cpu: \"{cpu}\", memory: 32Gi, pods: \"110\"}}}}\n"
    )
}

/// A pod requesting `cpu`, with extra YAML under `spec`.
pub fn pod(name: &str, cpu: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: {name}}}}}\n\
         spec: {{{spec}containers: [{{name: c, image: pause, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}\n"
    )
}

fn run(files: &[(&str, &str)]) -> SimulateReport {
    simulate(&manifests(files), Profile::default_profile(), QueueConfig::new(), 1).unwrap()
}

fn row<'a>(r: &'a SimulateReport, key: &str) -> &'a PodReport {
    r.pods.iter().find(|p| p.pod == key).unwrap_or_else(|| panic!("no row {key}"))
}

#[test]
fn simulate_places_fitting_pods_in_priority_order() {
    let cluster = node("small", "1", "") + &node("big", "4", "");
    // The big pod only fits on "big"; once there, the medium pod no longer fits anywhere but
    // "small" has 1 CPU: 600m fits.
    let pods = pod("first", "3500m", "") + &pod("second", "600m", "");
    let r = run(&[("cluster.yaml", &cluster), ("pods.yaml", &pods)]);
    assert_eq!(row(&r, "default/first").node.as_deref(), Some("big"));
    assert_eq!(row(&r, "default/second").node.as_deref(), Some("small"));
    assert_eq!((r.summary.scheduled, r.summary.unschedulable, r.summary.attempts), (2, 0, 2));
    assert_eq!(row(&r, "default/first").source, "pods.yaml: document 1 (line 1)");
}

#[test]
fn simulate_reports_the_fit_error_of_an_unschedulable_pod() {
    // n1 has room for the pod but for a pod of equal priority (not a victim); a request over
    // a node's allocatable would be unresolvable, as upstream's NodeResourcesFit says.
    let cluster = node("n1", "2", "")
        + &node("n2", "8", "taints: [{key: dedicated, value: gpu, effect: NoSchedule}]")
        + &node("n3", "8", "unschedulable: true")
        + &pod("busy", "1500m", "nodeName: n1, ");
    let r = run(&[("cluster.yaml", &cluster), ("pods.yaml", &pod("big", "1", ""))]);
    let p = row(&r, "default/big");
    assert_eq!(p.result, PodResult::Unschedulable);
    assert_eq!(
        p.reason.as_deref(),
        Some(
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), \
             1 node(s) were unschedulable. no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims \
             found for incoming pod, 2 Preemption is not helpful for scheduling."
        )
    );
    assert!(p.attempts >= 1);
    assert_eq!(r.summary.unschedulable, 1);
}

/// `--preemption-api-delay`: the victims go that long after the preemptor's cycle, and the
/// preemptor binds only then.
#[test]
fn simulate_preemption_api_delay_defers_the_victims_deletion_on_the_clock() {
    let cluster = node("n1", "1", "")
        + "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n";
    let bound = pod("low", "800m", "nodeName: n1, terminationGracePeriodSeconds: 0, ");
    let pods = pod("urgent", "800m", "priorityClassName: high, ");
    let files = [("cluster.yaml", cluster.as_str()), ("bound.yaml", bound.as_str()), ("pods.yaml", pods.as_str())];
    let go = |delay: &str| {
        let mut queue = QueueConfig::new();
        let api = crate::front_ends::PreemptionApiArgs {
            preemption_api_delay: ksched_engine::util::duration::parse_cli_duration(delay).unwrap(),
        };
        api.apply(&mut queue);
        let r = simulate(&manifests(&files), Profile::default_profile(), queue, 1).unwrap();
        let urgent = row(&r, "default/urgent");
        assert_eq!((urgent.result, urgent.node.as_deref()), (PodResult::Scheduled, Some("n1")), "{delay}");
        assert_eq!(r.evicted.len(), 1, "{delay}");
        r.summary.simulated_seconds
    };
    assert!(go("0s") < 5.0, "no delay: the victim goes right after the cycle");
    let t = go("45s");
    assert!((45.0..50.0).contains(&t), "the deletion waits 45 s on the clock: {t}");
}

#[test]
fn simulate_preempts_lower_priority_pods_for_a_priority_class() {
    let cluster = node("n1", "1", "")
        + "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n";
    let bound = pod("low", "800m", "nodeName: n1, terminationGracePeriodSeconds: 30, ");
    let pods = pod("filler", "100m", "") + &pod("urgent", "800m", "priorityClassName: high, ");
    let r = run(&[("cluster.yaml", &cluster), ("bound.yaml", &bound), ("pods.yaml", &pods)]);
    let urgent = row(&r, "default/urgent");
    assert_eq!((urgent.priority, urgent.result), (1000, PodResult::Scheduled));
    assert_eq!(urgent.node.as_deref(), Some("n1"));
    assert_eq!(urgent.preemptions.len(), 1);
    assert_eq!(urgent.preemptions[0].node, "n1");
    // The queue pops the urgent pod first; the filler fits beside it afterwards.
    assert_eq!(urgent.preemptions[0].victims, ["default/low"]);
    assert_eq!(row(&r, "default/filler").node.as_deref(), Some("n1"));
    assert_eq!(r.evicted.len(), 1);
    assert_eq!((r.evicted[0].pod.as_str(), r.evicted[0].node.as_str()), ("default/low", "n1"));
    assert!(r.summary.simulated_seconds >= 30.0, "the victim's grace period passed on the clock");
    assert_eq!((r.summary.preemptions, r.summary.victims), (1, 1));
}

#[test]
fn simulate_table_and_json_name_every_pod() {
    let cluster = node("n1", "1", "");
    let pods = pod("ok", "500m", "") + &pod("toobig", "2", "") + &pod("gated", "1m", "schedulingGates: [{name: g}], ");
    let r = run(&[("c", &cluster), ("p", &pods)]);
    let t = table(&r);
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("POD"), "{t}");
    assert!(lines[1].starts_with("default/ok") && lines[1].contains("Scheduled"), "{t}");
    assert!(
        lines[2].contains("Unschedulable") && lines[2].contains("0/1 nodes are available: 1 Insufficient cpu."),
        "{t}"
    );
    assert!(lines[3].contains("NotQueued") && lines[3].contains("waiting for scheduling gates: [g]"), "{t}");
    assert!(lines[4].starts_with("3 pending pods on 1 nodes (0 bound): 1 scheduled, 1 unschedulable"), "{t}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["pods"][0]["result"], "scheduled");
    assert_eq!(json["pods"][2]["result"], "not_queued");
    assert_eq!(json["summary"]["scheduled"], 1);
    let yaml = yaml_serde::to_string(&r).unwrap();
    assert!(yaml.contains("result: unschedulable"), "{yaml}");
}

#[test]
fn input_warnings_no_nodes_or_no_pending_pods_say_so() {
    let files = [PathBuf::from("a.yaml"), PathBuf::from("b.yaml")];
    let deployment = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  \
                      selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    \
                      spec: {containers: [{name: c, image: pause}]}\n";
    let no_nodes = "warning: a.yaml, b.yaml: no nodes in the input; every pod will be unschedulable";
    let no_pending = "warning: a.yaml, b.yaml: no pending pods in the input (every pod has spec.nodeName, and no \
                      workload controller makes pods); nothing to schedule";
    let cases: Vec<(String, Vec<&str>)> = vec![
        (node("n1", "1", "") + &pod("p", "1", ""), vec![]),
        (pod("p", "1", ""), vec![no_nodes]),
        (deployment.to_owned(), vec![no_nodes]),
        (node("n1", "1", "") + deployment, vec![]),
        (node("n1", "1", "") + &pod("p", "1", "nodeName: n1, "), vec![no_pending]),
        (String::new(), vec!["warning: a.yaml, b.yaml: no nodes in the input", no_pending]),
    ];
    for (text, want) in cases {
        let got = input_warnings(&files, &manifests(&[("a.yaml", &text)]));
        assert_eq!(got, want, "{text}");
    }
}

#[test]
fn simulate_summary_breaks_pending_pods_down_by_profile() {
    let cfg = ksched_engine::config::from_value(
        serde_json::json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "batch"}, {"schedulerName": "idle"}]
        }),
        &ksched_engine::config::Registry::in_tree(),
    )
    .unwrap();
    // One node with room for three 1-CPU pods: the fourth of `batch` does not fit.
    let pods = pod("web", "1", "")
        + &pod("b1", "1", "schedulerName: batch, ")
        + &pod("b2", "1", "schedulerName: batch, ")
        + &pod("b3", "1", "schedulerName: batch, ")
        + &pod("other", "1", "schedulerName: someone-else, ");
    let cluster = node("n1", "3", "");
    let r = simulate(&manifests(&[("c", &cluster), ("p", &pods)]), cfg.all_profiles(), QueueConfig::new(), 1).unwrap();
    let s = &r.summary;
    assert_eq!(s.profiles, ["default-scheduler", "batch", "idle"]);
    let counts = |ours, pending, scheduled, unschedulable, not_queued| ProfileCounts {
        ours,
        pending_pods: pending,
        scheduled,
        unschedulable,
        preempted: 0,
        not_queued,
        ended: 0,
    };
    // (schedulerName, its counts)
    let want = [
        ("batch", counts(true, 3, 2, 1, 0)),
        ("default-scheduler", counts(true, 1, 1, 0, 0)),
        ("idle", counts(true, 0, 0, 0, 0)),
        ("someone-else", counts(false, 1, 0, 0, 1)),
    ];
    let got: Vec<(&str, ProfileCounts)> = s.by_profile.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    assert_eq!(got, want);
    assert_eq!((s.scheduled, s.unschedulable, s.not_queued), (3, 1, 1));
    let other = r.pods.iter().find(|p| p.pod == "default/other").unwrap();
    assert_eq!(other.result, PodResult::NotQueued);
    assert!(other.reason.as_deref().unwrap().contains("\"someone-else\" names no profile"), "{other:?}");
    let text = table(&r);
    assert!(
        text.contains("  batch: 3 pending pods: 2 scheduled, 1 unschedulable, 0 preempted, 0 not queued (profile)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "  someone-else: 1 pending pods: 0 scheduled, 0 unschedulable, 0 preempted, 1 not queued (not a profile"
        ),
        "{text}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["summary"]["by_profile"]["batch"]["scheduled"], 2);
    assert_eq!(json["pods"][1]["scheduler_name"], "batch");
}

#[test]
fn simulate_runs_jobs_and_cronjobs_over_simulated_time() {
    let cluster = node("n1", "4", "");
    let workloads = "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\nspec: {completions: 3, parallelism: 2, template: \
         {metadata: {annotations: {ksched.io/run-duration: 10m}}, spec: {restartPolicy: Never, containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}}}\n\
         ---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: hourly}\nspec: {schedule: '@hourly', jobTemplate: {spec: {template: \
         {metadata: {annotations: {ksched.io/run-duration: 5m}}, spec: {restartPolicy: Never, containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}}}}}\n";
    let m = manifests(&[("cluster.yaml", &cluster), ("work.yaml", workloads)]);
    let time = Timing { duration: Some(std::time::Duration::from_secs(6 * 3600 + 600)), start: None };
    let (r, _) = simulate_observed(&m, Profile::default_profile(), QueueConfig::new(), 1, time, None).unwrap();
    let s = &r.summary;
    // The Job: 2 pods at once, the third when one ends (3 completions); the CronJob: one pod
    // an hour for 6 hours, each done 5 minutes later.
    assert_eq!((s.pending_pods, s.created_during_run, s.completed), (9, 7, 9), "{:#?}", r.pods);
    assert_eq!(s.simulated_seconds, 6.0 * 3600.0 + 600.0);
    let cron: Vec<(f64, Option<f64>)> =
        r.pods.iter().filter(|p| p.pod.starts_with("default/hourly-")).map(|p| (p.created_at, p.ended_at)).collect();
    assert_eq!(cron, (1..=6).map(|h| (h as f64 * 3600.0, Some(h as f64 * 3600.0 + 300.0))).collect::<Vec<_>>());
    let third = r.pods.iter().filter(|p| p.pod.starts_with("default/once-")).nth(2).unwrap();
    assert_eq!((third.created_at, third.result, third.ended_at), (600.0, PodResult::Completed, Some(1200.0)));
    assert!(third.source.contains("created during the run by job once"), "{}", third.source);
    let text = table(&r);
    assert!(text.contains("Completed") && text.contains("over time: 7 pods created"), "{text}");
}

/// A gated pod is never scheduled whichever way the manifests bring it: a plain manifest, a
/// `kubectl get -o yaml` List, JSON, a workload controller's template. Its ungated twin is.
#[test]
fn gated_pods_from_every_manifest_form_are_never_scheduled() {
    let gates = "schedulingGates: [{name: example.com/wait}], ";
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {{name: gated, namespace: default}}\n  \
         spec: {{{gates}containers: [{{name: c, resources: {{requests: {{cpu: 100m}}}}}}]}}\n  status: {{phase: Pending}}\n"
    );
    let json = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
        "spec": {"schedulingGates": [{"name": "example.com/wait"}], "containers": [{"name": "c"}]}}"#;
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: 2\n  \
         selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    \
         spec: {{{gates}containers: [{{name: c}}]}}\n"
    );
    let cases: [(&str, &str, String); 4] = [
        ("manifest", "pods.yaml", pod("gated", "100m", gates)),
        ("kubectl dump", "dump.yaml", list),
        ("json", "pod.json", json.to_owned()),
        ("controller template", "deploy.yaml", deployment),
    ];
    for (path, file, text) in cases {
        let cluster = node("n1", "4", "") + &pod("free", "100m", "");
        let r = run(&[("cluster.yaml", &cluster), (file, &text)]);
        assert_eq!(row(&r, "default/free").result, PodResult::Scheduled, "{path}");
        let gated: Vec<&PodReport> = r.pods.iter().filter(|p| p.pod != "default/free").collect();
        assert!(!gated.is_empty(), "{path}: no gated pod read");
        for p in gated {
            assert_eq!(p.result, PodResult::NotQueued, "{path}: {}", p.pod);
            assert!(p.node.is_none(), "{path}: {} bound", p.pod);
        }
        assert_eq!(r.summary.attempts, 1, "{path}: only the free pod was tried");
    }
    // `-f DIR`: the directory's files read as `kubectl -f DIR` reads them.
    let dir = std::env::temp_dir().join(format!("ksched-gated-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cluster.yaml"), node("n1", "4", "") + &pod("free", "100m", "")).unwrap();
    std::fs::write(dir.join("gated.yaml"), pod("gated", "100m", gates)).unwrap();
    let m = ksched_k8s::manifest::read_files_with(&[&dir], Default::default()).unwrap();
    let r = simulate(&m, Profile::default_profile(), QueueConfig::new(), 1).unwrap();
    assert_eq!(row(&r, "default/free").result, PodResult::Scheduled, "-f DIR");
    assert_eq!((row(&r, "default/gated").result, r.summary.attempts), (PodResult::NotQueued, 1), "-f DIR");
    std::fs::remove_dir_all(&dir).ok();
}

/// Two pods naming a gang (`spec.workloadRef`, not modelled): counted per field in the
/// summary, the JSON's `unmodelled_fields` and the text's last lines; `compare` on the same
/// manifests counts them in its report too.
pub fn gang_manifests() -> Manifests {
    let files = node("n1", "4", "")
        + &pod("g1", "1", "workloadRef: {name: w, podGroup: g}, ")
        + &pod("g2", "1", "workloadRef: {name: w, podGroup: g}, ");
    manifests(&[("gang.yaml", &files)])
}

#[test]
fn simulate_counts_unmodelled_fields_per_field_in_its_summary() {
    let r = simulate(&gang_manifests(), Profile::default_profile(), QueueConfig::new(), 1).unwrap();
    assert_eq!(r.summary.unmodelled_fields, [("spec.workloadRef".to_owned(), 2)].into());
    let t = table(&r);
    assert!(
        t.contains("\nfields ksched does not model (objects; upstream's decision may differ): spec.workloadRef 2\n"),
        "{t}"
    );
    let ok =
        simulate(&manifests(&[("n.yaml", &node("n1", "4", ""))]), Profile::default_profile(), QueueConfig::new(), 1);
    assert!(!table(&ok.unwrap()).contains("fields ksched does not model"));
}
