//! Issue 43's end-to-end check of DRA through the `ksched` binary: a kubectl dump of a GPU
//! cluster and a user's Deployment, as `simulate` and `explain` see them.
//!
//! The cluster (driver `gpu.example.com`, every node one slice of 8 devices `gpu-0`..`gpu-7`):
//! `gpu-a1` (32 CPU) and `gpu-a2` (32 CPU) have A100s, `gpu-h1` (64 CPU) and `gpu-h2` (8 CPU)
//! H100s; DeviceClasses `a100` and `h100` select by model. Claims: `pre-a100` (2 A100s),
//! already allocated on `gpu-a1` (`gpu-0`, `gpu-1`) and reserved for the running pod
//! `notebook-0`; `shared-h100` (1 H100), unallocated, used by `infer-1` and `infer-2`. The
//! template `train-gpus` asks for 4 H100s; the Deployment `train` (4 replicas) uses it. Every
//! pending pod asks for 2 CPU and 1Gi.
//!
//! Worked out by hand, in creation order (the input's pending pods, then the Deployment's):
//! - `notebook-1` uses `pre-a100`, whose node selector allows only `gpu-a1`: there, with the
//!   devices it already has (every other node: "resourceclaim not available on the node").
//! - `infer-1` allocates `shared-h100`: the H100 nodes fit (the A100 nodes cannot allocate
//!   it); LeastAllocated and BalancedAllocation prefer `gpu-h1` (2 of 64 CPU against 2 of 8),
//!   and the allocator takes its first free device, `gpu-0`.
//! - `infer-2` shares the claim, now allocated with `gpu-h1`'s selector: `gpu-h1`, `gpu-0`.
//! - train #1: `gpu-h1` (7 free, still the emptier node): `gpu-1`..`gpu-4`.
//! - train #2: `gpu-h1` has 3 free devices, too few: `gpu-h2`, `gpu-0`..`gpu-3`.
//! - train #3: `gpu-h2`, `gpu-4`..`gpu-7`.
//! - train #4: no node has 4 free H100s (the A100 nodes none, `gpu-h1` 3, `gpu-h2` 0):
//!   unschedulable, "cannot allocate all claims" on every node.
//!
//! Devices at the end: 2 + 1 + 12 = 15 of 32 allocated; A100 2 of 16, H100 13 of 16.

use ksched_k8s::testing::KubectlDump;
use serde_json::Value;

mod common;
use common::Scratch;

const DRIVER: &str = "gpu.example.com";

fn dump() -> String {
    let mut d = KubectlDump::default();
    for (node, cpu, model) in
        [("gpu-a1", "32", "a100"), ("gpu-a2", "32", "a100"), ("gpu-h1", "64", "h100"), ("gpu-h2", "8", "h100")]
    {
        d = d.node_with(node, cpu, "256Gi", &[], &[]).resource_slice(node, DRIVER, model, 8);
    }
    d.device_class("a100", DRIVER, "a100")
        .device_class("h100", DRIVER, "h100")
        .resource_claim("pre-a100", "a100", 2)
        .allocated(DRIVER, "gpu-a1", &["gpu-0", "gpu-1"], &["notebook-0"])
        .resource_claim("shared-h100", "h100", 1)
        .resource_claim_template("train-gpus", "h100", 4)
        .pod("notebook-0", Some("gpu-a1"), "1", "Running", None)
        .with_claim("pre-a100")
        .pod("notebook-1", None, "2", "Pending", None)
        .with_claim("pre-a100")
        .pod("infer-1", None, "2", "Pending", None)
        .with_claim("shared-h100")
        .pod("infer-2", None, "2", "Pending", None)
        .with_claim("shared-h100")
        .yaml()
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: train, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec:
      resourceClaims:
      - {name: gpus, resourceClaimTemplateName: train-gpus}
      containers:
      - name: trainer
        image: pytorch
        resources:
          requests: {cpu: "2", memory: 1Gi}
          claims: [{name: gpus}]
"#;

/// The dump and the Deployment in `input/` of a fresh directory.
fn scratch_dir() -> Scratch {
    let dir = Scratch::new("e2e-gpu");
    dir.write("input/dump.yaml", &dump());
    dir.write("input/train.yaml", DEPLOYMENT);
    dir
}

/// `ksched ARGS -f DIR/input`: (stdout, stderr).
fn ksched(dir: &Scratch, args: &[&str]) -> (String, String) {
    let input = dir.path().join("input");
    let out = common::ksched(&[args, &["-f", input.to_str().unwrap()]].concat());
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert_eq!(out.status.code(), Some(0), "ksched {args:?}: {stderr}");
    (stdout, stderr)
}

fn json(dir: &Scratch, args: &[&str]) -> Value {
    serde_json::from_str(&ksched(dir, args).0).expect("JSON output")
}

/// One claim of an explained attempt: (claim entry, allocated here, [(request, device id)]).
type ClaimRow = (String, bool, Vec<(String, String)>);

/// The claims of an explained attempt.
fn claims(explain: &Value) -> Vec<ClaimRow> {
    explain["claims"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    let devices = c["devices"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| {
                            let id = format!(
                                "{}/{}/{}",
                                d["driver"].as_str().unwrap(),
                                d["pool"].as_str().unwrap(),
                                d["device"].as_str().unwrap()
                            );
                            (d["request"].as_str().unwrap().to_owned(), id)
                        })
                        .collect();
                    (c["entry"].as_str().unwrap().to_owned(), c["allocated_here"].as_bool().unwrap(), devices)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn gpus(node: &str, request: &str, range: std::ops::Range<usize>) -> Vec<(String, String)> {
    range.map(|i| (request.to_owned(), format!("{DRIVER}/{node}/gpu-{i}"))).collect()
}

/// Each node's DynamicResources verdict in an explained attempt (node → message; feasible
/// nodes absent).
fn dra_rejections(explain: &Value) -> Vec<(String, String)> {
    explain["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| {
            let by = &n["rejected_by"];
            (by["plugin"] == "DynamicResources")
                .then(|| (n["node"].as_str().unwrap().to_owned(), by["message"].as_str().unwrap().to_owned()))
        })
        .collect()
}

#[test]
fn e2e_gpu_cluster_devices_go_where_worked_out() {
    let dir = scratch_dir();
    let (_, stderr) = ksched(&dir, &["simulate"]);
    assert!(!stderr.contains("skipped"), "the DRA kinds are read, not skipped: {stderr}");

    let r = json(&dir, &["simulate", "--format", "json"]);
    let rows: Vec<(String, String, Option<String>)> = r["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pod"].as_str().unwrap().to_owned(),
                p["result"].as_str().unwrap().to_owned(),
                p["node"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let at = |result: &str, node: Option<&str>| (result.to_owned(), node.map(str::to_owned));
    let want = [
        ("default/notebook-1", at("scheduled", Some("gpu-a1"))),
        ("default/infer-1", at("scheduled", Some("gpu-h1"))),
        ("default/infer-2", at("scheduled", Some("gpu-h1"))),
        ("train #1", at("scheduled", Some("gpu-h1"))),
        ("train #2", at("scheduled", Some("gpu-h2"))),
        ("train #3", at("scheduled", Some("gpu-h2"))),
        ("train #4", at("unschedulable", None)),
    ];
    assert_eq!(rows.len(), want.len(), "{rows:?}");
    for ((pod, result, node), (name, (want_result, want_node))) in rows.iter().zip(&want) {
        if name.starts_with("train") {
            assert!(pod.starts_with("default/train-"), "{pod} for {name}");
        } else {
            assert_eq!(pod, name);
        }
        assert_eq!((result, node), (want_result, want_node), "{name} ({pod})");
    }
    let unschedulable = &r["pods"][6];
    let reason = unschedulable["reason"].as_str().unwrap();
    assert!(reason.starts_with("0/4 nodes are available: 4 cannot allocate all claims."), "{reason}");

    // Device use at the end, per driver and per class.
    let devices = &r["summary"]["devices"];
    assert_eq!(devices["drivers"], serde_json::json!([{"name": DRIVER, "allocated": 15, "total": 32}]));
    assert_eq!(
        devices["classes"],
        serde_json::json!([{"name": "a100", "allocated": 2, "total": 16}, {"name": "h100", "allocated": 13, "total": 16}])
    );
    let (text, _) = ksched(&dir, &["simulate"]);
    assert!(
        text.contains(&format!("devices (allocated / total): driver {DRIVER} 15/32; class a100 2/16, h100 13/16")),
        "{text}"
    );

    // explain: each claim's devices on the chosen node, and the DRA reason on the others.
    let train: Vec<&str> = rows[3..].iter().map(|(p, _, _)| p.as_str()).collect();
    let explain = |pod: &str| json(&dir, &["explain", pod, "--format", "json"]);

    let e = explain("notebook-1");
    assert_eq!(e["selected_node"], "gpu-a1");
    assert_eq!(claims(&e), [("gpu".to_owned(), false, gpus("gpu-a1", "gpu", 0..2))]);
    let not_here = |nodes: &[&str], msg: &str| -> Vec<(String, String)> {
        nodes.iter().map(|n| ((*n).to_owned(), msg.to_owned())).collect()
    };
    assert_eq!(
        dra_rejections(&e),
        not_here(&["gpu-a2", "gpu-h1", "gpu-h2"], "resourceclaim not available on the node")
    );

    let e = explain("infer-1");
    assert_eq!(claims(&e), [("gpu".to_owned(), true, gpus("gpu-h1", "gpu", 0..1))]);
    assert_eq!(dra_rejections(&e), not_here(&["gpu-a1", "gpu-a2"], "cannot allocate all claims"));
    let e = explain("infer-2");
    assert_eq!(claims(&e), [("gpu".to_owned(), false, gpus("gpu-h1", "gpu", 0..1))]);
    assert_eq!(e["claims"][0]["reserved_for"], serde_json::json!(["infer-1", "infer-2"]));

    let want_train = [("gpu-h1", 1..5), ("gpu-h2", 0..4), ("gpu-h2", 4..8)];
    for (pod, (node, range)) in train.iter().zip(want_train) {
        let e = explain(pod);
        assert_eq!(e["selected_node"], node, "{pod}");
        let c = claims(&e);
        assert_eq!(c, [("gpus".to_owned(), true, gpus(node, "gpus", range))], "{pod}");
        // The claim made from the template: `<pod>-<entry>-` and 5 random characters.
        let claim = e["claims"][0]["claim"].as_str().unwrap();
        let pod_name = pod.trim_start_matches("default/");
        let suffix = claim.strip_prefix(&format!("default/{pod_name}-gpus-")).unwrap_or_else(|| panic!("{claim}"));
        assert_eq!(suffix.len(), 5, "{claim}");
    }
    let e = explain(train[3]);
    assert_eq!(e["result"], "unschedulable");
    assert!(claims(&e).is_empty());
    assert_eq!(dra_rejections(&e), not_here(&["gpu-a1", "gpu-a2", "gpu-h1", "gpu-h2"], "cannot allocate all claims"));

    // The text form names the devices too.
    let (text, _) = ksched(&dir, &["explain", train[0]]);
    assert!(text.contains("Devices on gpu-h1"), "{text}");
    assert!(text.contains(&format!("{DRIVER}/gpu-h1/gpu-4")), "{text}");

    // compare: the same device counts per driver and class under LeastAllocated and
    // MostAllocated (MostAllocated packs the shared claim and train #1 onto `gpu-h2`, then
    // trains #2 and #3 go to `gpu-h1`; #4 still finds no 4 free H100s).
    for (file, strategy) in [("least.yaml", "LeastAllocated"), ("most.yaml", "MostAllocated")] {
        let config = format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n  \
             pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: {strategy}\n"
        );
        dir.write(file, &config);
    }
    let (least, most) = (dir.path().join("least.yaml"), dir.path().join("most.yaml"));
    let (least, most) = (least.to_str().unwrap(), most.to_str().unwrap());
    let c = json(&dir, &["compare", "--config", least, "--config", most, "--format", "json"]);
    for config in c["configs"].as_array().unwrap() {
        assert_eq!(config["devices"], *devices, "{}", config["config"]);
    }
    let (text, _) = ksched(&dir, &["compare", "--config", least, "--config", most]);
    for row in [format!("devices {DRIVER}"), "devices class a100".into(), "devices class h100".into()] {
        let line = text.lines().find(|l| l.starts_with(&row)).unwrap_or_else(|| panic!("{row}: {text}"));
        let cells: Vec<&str> = line[row.len()..].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        let want = if row.ends_with("a100") {
            "2 / 16"
        } else if row.ends_with("h100") {
            "13 / 16"
        } else {
            "15 / 32"
        };
        assert_eq!(cells, [want, want], "{line}");
    }

    // Another seed names the template claims differently; the same seed the same.
    let claim_of = |seed: &str| {
        let r = json(&dir, &["simulate", "--format", "json", "--seed", seed]);
        let pod = r["pods"][3]["pod"].as_str().unwrap().to_owned();
        json(&dir, &["explain", &pod, "--format", "json", "--seed", seed])["claims"][0]["claim"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(claim_of("7"), claim_of("7"));
    assert_ne!(claim_of("7"), claim_of("8"));
}
