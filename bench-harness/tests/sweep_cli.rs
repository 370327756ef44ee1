//! `ksched sweep` through the binary: a 12-scenario plan run locally (each scenario in a
//! child process), resumed after losing some results, its Kubernetes objects decoded strictly,
//! and its indices run as an Indexed Job's pods run them (the emitted ConfigMap laid out as the
//! kubelet mounts it, `JOB_COMPLETION_INDEX` set) and merged from their logs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

fn plan12() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sweep/plan-12.yaml")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ksched-sweep-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ksched(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ksched"));
    c.args(args).env_remove("JOB_COMPLETION_INDEX");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("ksched runs")
}

fn ok(out: &Output) -> (String, String) {
    let (so, se) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert_eq!(out.status.code(), Some(0), "stderr: {se}\nstdout: {so}");
    (so, se)
}

/// The results without what wall time decides (throughput, latency, run time).
fn decisions(results: &Value) -> Vec<Value> {
    results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let o = r.as_object_mut().unwrap();
            o.remove("run_seconds");
            let m = o["metrics"].as_object_mut().unwrap();
            m.retain(|k, _| !(k == "seconds" || k == "pods_per_second" || k.starts_with("latency_")));
            r
        })
        .collect()
}

/// The table's rows without its last four columns (the wall-time ones).
fn table_without_timing(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| {
            let cells: Vec<String> = l.split_whitespace().map(String::from).collect();
            cells[..cells.len() - 4].to_vec()
        })
        .collect()
}

fn results_dir(out: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn sweep_twelve_scenarios_resume_runs_only_the_missing_ones() {
    let out = scratch("resume");
    let out_s = out.to_str().unwrap();
    let plan = plan12();
    let plan_s = plan.to_str().unwrap();
    let (json, stderr) = ok(&ksched(&["sweep", plan_s, "--out", out_s, "--format", "json", "--jobs", "3"], &[]));
    assert!(stderr.is_empty(), "JSON mode into a pipe is quiet: {stderr}");
    let first: Value = serde_json::from_str(&json).unwrap();
    let results = first.as_array().unwrap();
    assert_eq!(results.len(), 12);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["index"], i);
        assert_eq!(r["status"], "ok", "{r}");
    }
    // MostAllocated packs the basic pods onto fewer nodes than the default LeastAllocated.
    let in_use = |i: usize| results[i]["metrics"]["nodes_in_use"].as_u64().unwrap();
    assert_eq!(in_use(0), 50);
    assert!(in_use(6) < 50, "{}", in_use(6));
    let before = results_dir(&out);
    assert_eq!(before.len(), 12);

    // An interrupted run: four results never written, one cut off mid-line (as a crash in a
    // non-atomic write would leave it), one from another plan, and a stray temporary file.
    for i in [1, 4, 8, 11] {
        std::fs::remove_file(out.join(format!("scenario-{i:05}.json"))).unwrap();
    }
    let cut = out.join("scenario-00005.json");
    let text = std::fs::read_to_string(&cut).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let other = out.join("scenario-00007.json");
    let text = std::fs::read_to_string(&other).unwrap();
    let id = results[7]["id"].as_str().unwrap();
    std::fs::write(&other, text.replace(id, "0000000000000000")).unwrap();
    std::fs::write(out.join(".scenario-00009.json.tmp"), "{\"kind\":").unwrap();

    let (table, stderr) = ok(&ksched(&["sweep", plan_s, "--out", out_s, "--jobs", "2"], &[]));
    assert!(stderr.contains("12 scenarios: 6 run, 6 already done, 0 failed"), "{stderr}");
    let after = results_dir(&out);
    // The six kept results are the same bytes: not run again (each holds its own run time).
    for i in [0, 2, 3, 6, 9, 10] {
        let name = format!("scenario-{i:05}.json");
        assert_eq!(before[&name], after[&name], "{name} was re-run");
    }
    // A third run runs nothing.
    let (table2, stderr) = ok(&ksched(&["sweep", plan_s, "--out", out_s], &[]));
    assert!(stderr.contains("0 run, 12 already done"), "{stderr}");
    assert_eq!(table, table2);
    let (json, _) = ok(&ksched(&["sweep", plan_s, "--out", out_s, "--format", "json"], &[]));
    let resumed: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(decisions(&first), decisions(&resumed), "the resumed sweep decides as the first");
    let html = scratch("html").join("sweep.html");
    let csv =
        ok(&ksched(&["sweep", plan_s, "--out", out_s, "--format", "csv", "--html", html.to_str().unwrap()], &[])).0;
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<tr>").count(), 13, "a header and 12 rows");
    assert!(page.contains("<td class=\"l\">most-allocated.yaml</td>"), "{page}");
    assert_eq!(csv.lines().count(), 13);
    assert!(csv.starts_with("INDEX,ID,CONFIG,WORKLOAD,"), "{csv}");
}

/// `--preemption-api-delay` and `--feature-gates` reach every scenario's process: with a
/// delay each preemptor waits that long on the simulated clock for its victims, and the result
/// records the settings; a re-run under other settings runs the scenario again instead of
/// keeping the result of the first.
#[test]
fn sweep_settings_reach_the_scenarios_and_a_change_reruns_them() {
    let out = scratch("settings");
    let plan = out.join("plan.yaml");
    std::fs::write(&plan, "configs: [default]\nworkloads: [preemption]\nseeds: [1]\nnodes: [3]\n").unwrap();
    let (plan_s, out_s) = (plan.to_str().unwrap(), out.join("results"));
    let out_s = out_s.to_str().unwrap();
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", plan_s, "--out", out_s, "--jobs", "1"];
        args.extend_from_slice(extra);
        let (_, stderr) = ok(&ksched(&args, &[]));
        let (json, _) = ok(&ksched(&[&args[..], &["--format", "json"]].concat(), &[]));
        let v: Value = serde_json::from_str(&json).unwrap();
        (stderr, v[0].clone())
    };
    let (stderr, now) = sweep(&[]);
    assert!(stderr.contains("1 scenarios: 1 run, 0 already done"), "{stderr}");
    assert!(now.get("settings").is_none(), "v1.35's defaults record nothing: {now}");
    let (stderr, later) = sweep(&["--preemption-api-delay", "90s"]);
    assert!(
        stderr.contains("1 run, 0 already done") && stderr.contains("under --preemption-api-delay 90s"),
        "{stderr}"
    );
    assert_eq!(later["settings"], serde_json::json!(["--preemption-api-delay", "90s"]));
    let (m0, m1) = (&now["metrics"], &later["metrics"]);
    assert_eq!((m1["preempted"].as_u64(), m1["victims"].as_u64()), (m0["preempted"].as_u64(), m0["victims"].as_u64()));
    assert_eq!(m1["preempted"], 3, "{m1}");
    let (s0, s1) = (m0["simulated_seconds"].as_f64().unwrap(), m1["simulated_seconds"].as_f64().unwrap());
    assert!(s0 < 1.0 && s1 >= 90.0, "90s delay: {s1} s simulated, {s0} s without");
    let (stderr, _) = sweep(&["--preemption-api-delay", "90s"]);
    assert!(stderr.contains("0 run, 1 already done"), "{stderr}");
    let (stderr, gated) =
        sweep(&["--preemption-api-delay", "90s", "--feature-gates", "SchedulerAsyncPreemption=false"]);
    assert!(stderr.contains("1 run, 0 already done"), "{stderr}");
    assert_eq!(
        gated["settings"],
        serde_json::json!(["--feature-gates", "SchedulerAsyncPreemption=false", "--preemption-api-delay", "90s"])
    );
    // With the gate off the victims are deleted within the cycle, whatever the delay says.
    assert!(gated["metrics"]["simulated_seconds"].as_f64().unwrap() < 90.0, "{gated}");
}

/// Decodes `yaml` as `T` and fails on any field `T` does not hold (k8s-openapi skips unknown
/// fields, so the re-encoded object must equal the input).
fn decode_strict<T: DeserializeOwned + Serialize>(yaml: &str) -> T {
    let value: Value = yaml_serde::from_str(yaml).unwrap();
    let t: T =
        serde_path_to_error::deserialize(value.clone()).unwrap_or_else(|e| panic!("{}: {}", e.path(), e.inner()));
    assert_eq!(serde_json::to_value(&t).unwrap(), value, "a field was dropped or changed in decoding");
    t
}

#[test]
fn sweep_indices_run_as_job_pods_merge_to_the_local_table() {
    let plan = plan12();
    let plan_s = plan.to_str().unwrap();
    let out = scratch("local");
    let out_s = out.to_str().unwrap();
    let (local_table, _) = ok(&ksched(&["sweep", plan_s, "--out", out_s], &[]));
    let (local_json, _) = ok(&ksched(&["sweep", plan_s, "--out", out_s, "--format", "json"], &[]));

    let k8s = scratch("k8s");
    let k8s_s = k8s.to_str().unwrap();
    ok(&ksched(
        &["sweep", plan_s, "--emit-k8s", k8s_s, "--image", "registry.example/ksched:v1", "--k8s-parallelism", "4"],
        &[],
    ));
    let cm: ConfigMap = decode_strict(&std::fs::read_to_string(k8s.join("configmap.yaml")).unwrap());
    let job: Job = decode_strict(&std::fs::read_to_string(k8s.join("job.yaml")).unwrap());
    let spec = job.spec.as_ref().unwrap();
    assert_eq!((spec.completions, spec.parallelism), (Some(12), Some(4)));
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.automount_service_account_token, Some(false));
    let c = &pod.containers[0];
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!((sc.read_only_root_filesystem, sc.allow_privilege_escalation), (Some(true), Some(false)));

    // The ConfigMap as the kubelet mounts it, somewhere else than /plan: the plan's paths are
    // relative to it.
    let mount = scratch("mount");
    let data = cm.data.as_ref().unwrap();
    let vol = pod.volumes.as_ref().unwrap().iter().find(|v| v.name == "plan").unwrap();
    for item in vol.config_map.as_ref().unwrap().items.as_ref().unwrap() {
        let p = mount.join(&item.path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, &data[&item.key]).unwrap();
    }
    // Each pod: the container's args with the plan at the mount, JOB_COMPLETION_INDEX set by
    // the Job controller. Their logs, concatenated as `kubectl logs --prefix` prints them,
    // with other lines among them.
    let args = c.args.as_ref().unwrap();
    assert_eq!(args[1], "/plan/plan.yaml");
    let mounted_plan = mount.join("plan.yaml");
    let mut logs = String::from("Defaulted container \"ksched\" out of: ksched\n");
    for i in (0..12).rev() {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a[1] = mounted_plan.to_str().unwrap();
        let index = i.to_string();
        let (line, _) = ok(&ksched(&a, &[("JOB_COMPLETION_INDEX", &index)]));
        assert_eq!(line.lines().count(), 1, "one result line: {line}");
        logs.push_str(&format!("[pod/ksched-sweep-{i}-abcde/ksched] {line}"));
    }
    let logs_file = k8s.join("logs.txt");
    std::fs::write(&logs_file, &logs).unwrap();
    let logs_s = logs_file.to_str().unwrap();
    let (merged_table, _) = ok(&ksched(&["sweep", "merge", logs_s], &[]));
    assert_eq!(table_without_timing(&merged_table), table_without_timing(&local_table));
    let (merged_json, _) = ok(&ksched(&["sweep", "merge", logs_s, "--format", "json"], &[]));
    let local: Value = serde_json::from_str(&local_json).unwrap();
    let merged: Value = serde_json::from_str(&merged_json).unwrap();
    assert_eq!(decisions(&local), decisions(&merged));

    // The local sweep's own result files merge to the same table too (and from stdin).
    let files: Vec<String> = (0..12).map(|i| out.join(format!("scenario-{i:05}.json")).display().to_string()).collect();
    let mut a = vec!["sweep", "merge"];
    a.extend(files.iter().map(String::as_str));
    assert_eq!(ok(&ksched(&a, &[])).0, local_table);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ksched"))
        .args(["sweep", "merge", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), logs.as_bytes()).unwrap();
    drop(child.stdin.take());
    let from_stdin = child.wait_with_output().unwrap();
    assert_eq!(table_without_timing(&ok(&from_stdin).0), table_without_timing(&local_table));
}

#[test]
fn sweep_bad_index_and_bad_plan_exit_2_with_the_reason() {
    let plan = plan12();
    let plan_s = plan.to_str().unwrap();
    let out = ksched(&["sweep", plan_s, "--index", "12"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no scenario 12: the plan has 12"));
    let out = ksched(&["sweep", plan_s, "--index-from-env"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JOB_COMPLETION_INDEX is not set"));
    let out = ksched(&["sweep", plan_s, "--index-from-env"], &[("JOB_COMPLETION_INDEX", "x")]);
    assert_eq!(out.status.code(), Some(2));
    let d = scratch("bad");
    std::fs::write(d.join("p.yaml"), "configs: [default]\nworkloads: [basic]\nseeds: [1]\nnode: [5]\n").unwrap();
    let out = ksched(&["sweep", d.join("p.yaml").to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("p.yaml") && err.contains("unknown field `node`"), "{err}");
    let out = ksched(&["sweep", "merge", d.join("p.yaml").to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no sweep result lines"));
}
