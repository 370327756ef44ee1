//! The sweep plan: a YAML matrix of configurations × workloads × cluster sizes × pod counts ×
//! seeds, decoded strictly, and its scenarios (the cross product) in a stable order.
//!
//! ```yaml
//! configs: [default, configs/most-allocated.yaml]      # or {path: FILE, name: LABEL}
//! workloads:
//!   - basic                                             # a built-in workload
//!   - {builtin: topology-spreading}
//!   - {file: perf/performance-config.yaml, test: SchedulingBasic, workload: 500Nodes}
//!   - {manifests: [cluster/, pending.yaml], name: my-cluster}
//! seeds: [1, 2, 3]
//! nodes: [100, 1000]          # built-in workloads only
//! pods: [500]                 # built-in workloads only: measured pods (default: the workload's)
//! warmup_pods: 100            # built-in workloads only (default: the workload's)
//! ```
//!
//! Paths are relative to the plan file. Scenario order (their index): configs, then
//! workloads (a workload file entry expands to each test case / workload it selects, in file
//! order), then nodes and pods (built-in workloads only), then seeds, each in plan order. A
//! scenario's id hashes what decides its result: its labels, the bytes of the files it reads,
//! its sizes and seed — not where the files are, so a plan copied into a Kubernetes
//! ConfigMap gives the same ids.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::synth::Workload as Builtin;

/// The plan as written (after decoding), with paths as given.
#[derive(Debug, Deserialize, Serialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    configs: Vec<Value>,
    workloads: Vec<Value>,
    seeds: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nodes: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pods: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    warmup_pods: Option<usize>,
}

#[derive(Debug, Deserialize, Serialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, Clone, Default)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    builtin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    test: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workload: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    manifests: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

/// A configuration of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigInput {
    /// How results name it: `default`, the path as written, or the entry's `name`.
    pub label: String,
    /// `None`: upstream's default profile (for a workload file: its test case's own config).
    pub path: Option<PathBuf>,
}

/// What a workload entry runs.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadKind {
    Builtin(Builtin),
    /// One test case / workload of an upstream scheduler_perf workload file.
    PerfFile {
        path: PathBuf,
        test: String,
        workload: String,
    },
    /// Manifest files (directories expanded to their `.yaml`/`.yml`/`.json` files, sorted).
    Manifests(Vec<PathBuf>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadInput {
    pub label: String,
    pub kind: WorkloadKind,
}

/// One cell of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub index: usize,
    pub id: String,
    pub config: ConfigInput,
    pub workload: WorkloadInput,
    /// Built-in workloads only.
    pub nodes: Option<usize>,
    pub pods: Option<usize>,
    pub warmup_pods: Option<usize>,
    pub seed: u64,
}

/// What a result file says about its scenario (labels, not paths).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioLabel {
    pub config: String,
    pub workload: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<usize>,
    pub seed: u64,
}

impl Scenario {
    pub fn label(&self) -> ScenarioLabel {
        ScenarioLabel {
            config: self.config.label.clone(),
            workload: self.workload.label.clone(),
            nodes: self.nodes,
            pods: self.pods,
            seed: self.seed,
        }
    }
}

/// A decoded plan: its file, its configs and workloads resolved, and every scenario.
#[derive(Debug, Clone)]
pub struct Plan {
    pub path: PathBuf,
    pub configs: Vec<ConfigInput>,
    pub workloads: Vec<WorkloadInput>,
    pub scenarios: Vec<Scenario>,
}

/// Decodes `v` as `T`, naming the field that failed as `at.field`.
fn decode<T: DeserializeOwned>(file: &Path, at: &str, v: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let inner = e.path().to_string();
        let field = match (at.is_empty(), inner.as_str()) {
            (true, ".") => "(top level)".to_owned(),
            (true, _) => inner,
            (false, ".") => at.to_owned(),
            (false, _) => format!("{at}.{inner}"),
        };
        format!("{}: {field}: {}", file.display(), e.into_inner())
    })
}

/// `p` as written, joined to the plan's directory when relative.
fn resolve(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Reads and checks the plan at `path`.
pub fn load(path: &Path) -> Result<Plan, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    parse(&text, path)
}

/// Parses a plan's text; `path` names it in errors and anchors its relative paths.
pub fn parse(text: &str, path: &Path) -> Result<Plan, String> {
    let file = path;
    let value: Value = yaml_serde::from_str(text).map_err(|e| format!("{}: not YAML: {e}", file.display()))?;
    let raw: RawPlan = decode(file, "", value)?;
    let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let err = |field: String, msg: String| format!("{}: {field}: {msg}", file.display());
    if raw.configs.is_empty() {
        return Err(err("configs".into(), "is empty: name at least one (`default` for upstream's)".into()));
    }
    if raw.workloads.is_empty() {
        return Err(err("workloads".into(), "is empty".into()));
    }
    if raw.seeds.is_empty() {
        return Err(err("seeds".into(), "is empty".into()));
    }
    let mut configs = Vec::new();
    for (i, v) in raw.configs.into_iter().enumerate() {
        let at = format!("configs[{i}]");
        let c = match v {
            Value::String(s) if s == "default" => ConfigInput { label: s, path: None },
            Value::String(s) => {
                let p = resolve(&base, &s);
                ConfigInput { label: s, path: Some(p) }
            }
            v @ Value::Object(_) => {
                let r: RawConfig = decode(file, &at, v)?;
                let p = (r.path != "default").then(|| resolve(&base, &r.path));
                ConfigInput { label: r.name.unwrap_or(r.path), path: p }
            }
            other => return Err(err(at, format!("expected a path, `default` or {{path, name}}, found {other}"))),
        };
        if let Some(p) = &c.path {
            if !p.is_file() {
                return Err(err(at, format!("{}: no such file", p.display())));
            }
        }
        configs.push(c);
    }
    let mut workloads = Vec::new();
    for (i, v) in raw.workloads.into_iter().enumerate() {
        let at = format!("workloads[{i}]");
        let w = match v {
            Value::String(s) => RawWorkload { builtin: Some(s), ..RawWorkload::default() },
            v @ Value::Object(_) => decode(file, &at, v)?,
            other => return Err(err(at, format!("expected a built-in name or a map, found {other}"))),
        };
        workloads.extend(workload_inputs(file, &base, &at, w)?);
    }
    let has_builtin = workloads.iter().any(|w| matches!(w.kind, WorkloadKind::Builtin(_)));
    for (field, given) in
        [("nodes", raw.nodes.is_some()), ("pods", raw.pods.is_some()), ("warmup_pods", raw.warmup_pods.is_some())]
    {
        if given && !has_builtin {
            return Err(err(
                field.into(),
                "applies only to built-in workloads, and the plan has none (workload files and manifests bring their own cluster and pods)".into(),
            ));
        }
    }
    if raw.nodes.as_ref().is_some_and(|n| n.is_empty() || n.contains(&0)) {
        return Err(err("nodes".into(), "must list cluster sizes of at least 1".into()));
    }
    if raw.pods.as_ref().is_some_and(Vec::is_empty) {
        return Err(err("pods".into(), "is empty (leave it out for the workload's default)".into()));
    }
    let nodes = raw.nodes.unwrap_or_else(|| vec![5000]);
    let pods: Vec<Option<usize>> = match raw.pods {
        Some(p) => p.into_iter().map(Some).collect(),
        None => vec![None],
    };
    let mut scenarios = Vec::new();
    for c in &configs {
        let config_hash = match &c.path {
            Some(p) => hash_files(std::slice::from_ref(p))?,
            None => 0,
        };
        for w in &workloads {
            let workload_hash = match &w.kind {
                WorkloadKind::Builtin(_) => 0,
                WorkloadKind::PerfFile { path, .. } => hash_files(std::slice::from_ref(path))?,
                WorkloadKind::Manifests(files) => hash_files(files)?,
            };
            let sizes: Vec<(Option<usize>, Option<usize>)> = match w.kind {
                WorkloadKind::Builtin(_) => {
                    nodes.iter().flat_map(|&n| pods.iter().map(move |&p| (Some(n), p))).collect()
                }
                _ => vec![(None, None)],
            };
            for (n, p) in sizes {
                for &seed in &raw.seeds {
                    let mut s = Scenario {
                        index: scenarios.len(),
                        id: String::new(),
                        config: c.clone(),
                        workload: w.clone(),
                        nodes: n,
                        pods: p,
                        warmup_pods: n.and(raw.warmup_pods),
                        seed,
                    };
                    s.id = scenario_id(&s, config_hash, workload_hash);
                    scenarios.push(s);
                }
            }
        }
    }
    Ok(Plan { path: path.to_path_buf(), configs, workloads, scenarios })
}

/// The inputs one workload entry stands for (a workload file: one per selected workload).
fn workload_inputs(file: &Path, base: &Path, at: &str, w: RawWorkload) -> Result<Vec<WorkloadInput>, String> {
    let err = |field: &str, msg: String| {
        let f = if field.is_empty() { at.to_owned() } else { format!("{at}.{field}") };
        format!("{}: {f}: {msg}", file.display())
    };
    let kinds = [w.builtin.is_some(), w.file.is_some(), !w.manifests.is_empty()].iter().filter(|b| **b).count();
    if kinds != 1 {
        return Err(err("", "give exactly one of `builtin`, `file` or `manifests`".into()));
    }
    if w.file.is_none() {
        for (field, set) in
            [("test", w.test.is_some()), ("workload", w.workload.is_some()), ("labels", !w.labels.is_empty())]
        {
            if set {
                return Err(err(field, "applies only to a workload `file`".into()));
            }
        }
    }
    if let Some(name) = &w.builtin {
        let b = Builtin::parse(name).ok_or_else(|| {
            let names: Vec<String> = Builtin::ALL.iter().map(|b| b.cli_name()).collect();
            err("builtin", format!("{name:?} is not a built-in workload ({})", names.join(", ")))
        })?;
        return Ok(vec![WorkloadInput {
            label: w.name.unwrap_or_else(|| b.cli_name()),
            kind: WorkloadKind::Builtin(b),
        }]);
    }
    if let Some(f) = &w.file {
        let path = resolve(base, f);
        let wf = ksched_k8s::perf_workload::load_file(&path).map_err(|e| err("file", e.to_string()))?;
        let mut out = Vec::new();
        for tc in &wf.test_cases {
            if w.test.as_ref().is_some_and(|t| t != &tc.name) {
                continue;
            }
            for wl in &tc.workloads {
                if w.workload.as_ref().is_some_and(|n| n != &wl.name) {
                    continue;
                }
                let labels: Vec<String> = tc.labels.iter().chain(&wl.labels).cloned().collect();
                if !ksched_k8s::perf_workload::labels_enabled(&w.labels, &labels) {
                    continue;
                }
                let base_label = w.name.clone().unwrap_or_else(|| f.clone());
                out.push(WorkloadInput {
                    label: format!("{base_label}:{}/{}", tc.name, wl.name),
                    kind: WorkloadKind::PerfFile {
                        path: path.clone(),
                        test: tc.name.clone(),
                        workload: wl.name.clone(),
                    },
                });
            }
        }
        if out.is_empty() {
            return Err(err("", format!("{}: no workload matches test/workload/labels", path.display())));
        }
        return Ok(out);
    }
    let mut files = Vec::new();
    for (j, m) in w.manifests.iter().enumerate() {
        let p = resolve(base, m);
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&p)
                .map_err(|e| err(&format!("manifests[{j}]"), format!("{}: {e}", p.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "yaml" || x == "yml" || x == "json"))
                .collect();
            if found.is_empty() {
                return Err(err(&format!("manifests[{j}]"), format!("{}: no .yaml, .yml or .json files", p.display())));
            }
            found.sort();
            files.extend(found);
        } else if p.is_file() {
            files.push(p);
        } else {
            return Err(err(&format!("manifests[{j}]"), format!("{}: no such file or directory", p.display())));
        }
    }
    Ok(vec![WorkloadInput {
        label: w.name.unwrap_or_else(|| w.manifests.join(",")),
        kind: WorkloadKind::Manifests(files),
    }])
}

/// FNV-1a, 64 bits: a stable hash (std's hasher is seeded per process).
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The files' bytes, in order, each preceded by its length.
fn hash_files(files: &[PathBuf]) -> Result<u64, String> {
    let mut h = FNV_OFFSET;
    for f in files {
        let bytes = std::fs::read(f).map_err(|e| format!("{}: cannot read: {e}", f.display()))?;
        h = fnv(h, &(bytes.len() as u64).to_le_bytes());
        h = fnv(h, &bytes);
    }
    Ok(h)
}

fn scenario_id(s: &Scenario, config_hash: u64, workload_hash: u64) -> String {
    let kind = match &s.workload.kind {
        WorkloadKind::Builtin(b) => format!("builtin {}", b.cli_name()),
        WorkloadKind::PerfFile { test, workload, .. } => format!("file {test}/{workload}"),
        WorkloadKind::Manifests(f) => format!("manifests {}", f.len()),
    };
    let content = serde_json::json!({
        "v": 1,
        "config": [s.config.label, format!("{config_hash:016x}")],
        "workload": [s.workload.label, kind, format!("{workload_hash:016x}")],
        "nodes": s.nodes, "pods": s.pods, "warmup_pods": s.warmup_pods, "seed": s.seed,
    });
    format!("{:016x}", fnv(FNV_OFFSET, content.to_string().as_bytes()))
}

/// Every input file the plan reads, configs first, each once, in plan order; with a workload
/// file, the files it refers to (templates, its scheduler configuration).
pub fn input_files(plan: &Plan) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |p: &Path| {
        if !out.iter().any(|q| q == p) {
            out.push(p.to_path_buf());
        }
    };
    for c in &plan.configs {
        if let Some(p) = &c.path {
            push(p);
        }
    }
    for w in &plan.workloads {
        match &w.kind {
            WorkloadKind::Builtin(_) => {}
            WorkloadKind::Manifests(files) => files.iter().for_each(|f| push(f)),
            WorkloadKind::PerfFile { path, .. } => {
                push(path);
                for r in perf_file_references(path)? {
                    push(&r);
                }
            }
        }
    }
    Ok(out)
}

/// The files a workload file names (`...Path`/`...Paths` fields anywhere), resolved against it.
fn perf_file_references(path: &Path) -> Result<Vec<PathBuf>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let v: Value = yaml_serde::from_str(&text).map_err(|e| format!("{}: not YAML: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new(""));
    let mut out = Vec::new();
    fn walk(v: &Value, base: &Path, out: &mut Vec<PathBuf>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match x {
                        Value::String(s) if k.ends_with("Path") && !s.is_empty() => out.push(resolve(base, s)),
                        Value::Array(a) if k.ends_with("Paths") => {
                            out.extend(a.iter().filter_map(Value::as_str).map(|s| resolve(base, s)))
                        }
                        _ => walk(x, base, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, base, out)),
            _ => {}
        }
    }
    walk(&v, base, &mut out);
    out.retain(|p| p.is_file());
    Ok(out)
}

/// The plan with every path replaced by `map(path)` and every entry named by its label, so
/// the rewritten plan's scenarios have the original's labels and ids.
pub fn rewrite(plan_text: &str, plan: &Plan, map: &dyn Fn(&Path) -> String) -> Result<String, String> {
    let value: Value =
        yaml_serde::from_str(plan_text).map_err(|e| format!("{}: not YAML: {e}", plan.path.display()))?;
    let mut raw: RawPlan = decode(&plan.path, "", value)?;
    raw.configs = plan
        .configs
        .iter()
        .map(|c| match &c.path {
            None => Value::String("default".into()),
            Some(p) => serde_json::json!({"path": map(p), "name": c.label}),
        })
        .collect();
    let mut workloads = Vec::new();
    let mut seen: Vec<&WorkloadInput> = Vec::new();
    for w in &plan.workloads {
        if seen.contains(&w) {
            continue;
        }
        seen.push(w);
        let entry = match &w.kind {
            WorkloadKind::Builtin(b) => {
                RawWorkload { builtin: Some(b.cli_name()), name: Some(w.label.clone()), ..RawWorkload::default() }
            }
            WorkloadKind::PerfFile { path, test, workload } => {
                // The label is `base:test/workload`; keep `base` as the name.
                let suffix = format!(":{test}/{workload}");
                let name = w.label.strip_suffix(&suffix).unwrap_or(&w.label).to_owned();
                RawWorkload {
                    file: Some(map(path)),
                    test: Some(test.clone()),
                    workload: Some(workload.clone()),
                    name: Some(name),
                    ..RawWorkload::default()
                }
            }
            WorkloadKind::Manifests(files) => RawWorkload {
                manifests: files.iter().map(|f| map(f)).collect(),
                name: Some(w.label.clone()),
                ..RawWorkload::default()
            },
        };
        workloads.push(serde_json::to_value(entry).map_err(|e| e.to_string())?);
    }
    raw.workloads = workloads;
    yaml_serde::to_string(&raw).map_err(|e| e.to_string())
}
