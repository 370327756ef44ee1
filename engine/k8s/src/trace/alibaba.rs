//! Alibaba's GPU cluster trace (`cluster-trace-gpu-v2023`) as a trace.
//!
//! * Nodes (`sn,cpu_milli,memory_mib,gpu,model`): node `sn` with `cpu_milli` millicores,
//!   `memory_mib` MiB, 110 pods, `gpu` × `nvidia.com/gpu`, and the GPU model as the label
//!   [`MODEL_LABEL`]; all added at time 0.
//! * Pods (`name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//!   deletion_time,scheduled_time`): created at `creation_time` (seconds; the earliest of
//!   them is time 0) in namespace `default`, requesting `cpu_milli` and `memory_mib`, deleted
//!   at `deletion_time` when there is one. `gpu_spec` (`A|B`: GPU models the pod accepts)
//!   becomes required node affinity `MODEL_LABEL In [A, B]`; `qos` the label [`QOS_LABEL`].
//!   GPUs per [`GpuShare`]: with `Whole` (the default) `num_gpu` GPUs, a fractional share
//!   (`gpu_milli` < 1000 with `num_gpu` 1) rounded up to one whole GPU; with `Milli`, nodes
//!   offer 1000 × `gpu` of [`GPU_MILLI`] and a pod asks `num_gpu` × `gpu_milli` of it (GPU
//!   sharing as the trace's own scheduler packs it, without the per-GPU placement).
//!   `pod_phase` and `scheduled_time` are what the recorded cluster did; they are not
//!   replayed (ksched schedules the pods itself).
//!
//! A header row is required; columns may come in any order. Errors name the file, the line and
//! the column.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::{read_object, Op, Trace, TraceError, TraceEvent};
use crate::manifest::ReadOptions;

/// The node label that carries the GPU model.
pub const MODEL_LABEL: &str = "alibaba.com/gpu-model";
/// The pod label that carries the trace's QoS class.
pub const QOS_LABEL: &str = "alibaba.com/qos";
/// The extended resource of GPU shares (thousandths of a GPU) with [`GpuShare::Milli`].
pub const GPU_MILLI: &str = "alibaba.com/gpu-milli";

/// How a pod's GPU share is requested.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GpuShare {
    /// Whole GPUs: a share of one GPU takes one (`nvidia.com/gpu`).
    #[default]
    Whole,
    /// Thousandths of a GPU ([`GPU_MILLI`]).
    Milli,
}

/// A CSV file with a header: rows as maps from column to cell.
struct Csv {
    file: String,
    columns: HashMap<String, usize>,
    rows: Vec<(u32, Vec<String>)>,
}

impl Csv {
    fn read(path: &Path, want: &[&str]) -> Result<Csv, TraceError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::new(&file, 0, "", e.to_string()))?;
        Csv::parse(&file, &text, want)
    }

    fn parse(file: &str, text: &str, want: &[&str]) -> Result<Csv, TraceError> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let Some((_, header)) = lines.next() else {
            return Err(TraceError::new(file, 0, "", format!("empty file: want a header row {}", want.join(","))));
        };
        let columns: HashMap<String, usize> =
            header.split(',').enumerate().map(|(i, c)| (c.trim().trim_matches('"').to_owned(), i)).collect();
        for w in want {
            if !columns.contains_key(*w) {
                return Err(TraceError::new(file, 1, *w, format!("no such column in the header ({header})")));
            }
        }
        let rows = lines
            .map(|(i, l)| {
                (
                    u32::try_from(i + 1).unwrap_or(u32::MAX),
                    l.split(',').map(|c| c.trim().trim_matches('"').to_owned()).collect(),
                )
            })
            .collect();
        Ok(Csv { file: file.to_owned(), columns, rows })
    }

    fn cell<'a>(&self, row: &'a [String], col: &str) -> &'a str {
        self.columns.get(col).and_then(|&i| row.get(i)).map_or("", String::as_str)
    }

    /// A whole number, 0 when empty.
    fn int(&self, line: u32, row: &[String], col: &str) -> Result<i64, TraceError> {
        let c = self.cell(row, col);
        if c.is_empty() {
            return Ok(0);
        }
        c.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| v.round() as i64)
            .ok_or_else(|| TraceError::new(&self.file, line, col, format!("{c:?} is not a number (0 or more)")))
    }

    /// Seconds (may be negative: the trace's own epoch), `None` when empty.
    fn time(&self, line: u32, row: &[String], col: &str) -> Result<Option<f64>, TraceError> {
        let c = self.cell(row, col);
        if c.is_empty() {
            return Ok(None);
        }
        c.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Some)
            .ok_or_else(|| TraceError::new(&self.file, line, col, format!("{c:?} is not a time in seconds")))
    }
}

const NODE_COLUMNS: &[&str] = &["sn", "cpu_milli", "memory_mib", "gpu", "model"];
const POD_COLUMNS: &[&str] = &[
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
];

/// Reads the node and pod CSV files, the objects made of them read with `options` (the run's
/// feature gates and strictness).
pub fn read_files(nodes: &Path, pods: &Path, share: GpuShare, options: &ReadOptions) -> Result<Trace, TraceError> {
    let n = Csv::read(nodes, NODE_COLUMNS)?;
    let p = Csv::read(pods, POD_COLUMNS)?;
    import(&n, &p, share, options)
}

/// The same from text (tests), under v1.35's default feature gates: `(file name, text)` of each.
pub fn parse(nodes: (&str, &str), pods: (&str, &str), share: GpuShare) -> Result<Trace, TraceError> {
    let n = Csv::parse(nodes.0, nodes.1, NODE_COLUMNS)?;
    let p = Csv::parse(pods.0, pods.1, POD_COLUMNS)?;
    import(&n, &p, share, &ReadOptions::default())
}

fn import(n: &Csv, p: &Csv, share: GpuShare, options: &ReadOptions) -> Result<Trace, TraceError> {
    let mut trace = Trace { file: p.file.clone(), ..Trace::default() };
    for (line, row) in &n.rows {
        let name = n.cell(row, "sn");
        if name.is_empty() {
            return Err(TraceError::new(&n.file, *line, "sn", "Required value"));
        }
        let gpus = n.int(*line, row, "gpu")?;
        let mut allocatable = json!({
            "cpu": format!("{}m", n.int(*line, row, "cpu_milli")?),
            "memory": format!("{}Mi", n.int(*line, row, "memory_mib")?),
            "pods": "110",
        });
        if gpus > 0 {
            allocatable["nvidia.com/gpu"] = json!(gpus.to_string());
            if share == GpuShare::Milli {
                allocatable[GPU_MILLI] = json!((gpus * 1000).to_string());
            }
        }
        let mut labels = json!({ "kubernetes.io/hostname": name });
        let model = n.cell(row, "model");
        if !model.is_empty() {
            labels[MODEL_LABEL] = json!(model);
        }
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": { "name": name, "labels": labels },
            "status": { "allocatable": allocatable, "capacity": allocatable },
        });
        let op = read_object(&n.file, *line, node, options, &mut trace.unmodelled)?;
        trace.events.push(TraceEvent { at: Duration::ZERO, line: *line, op });
    }
    // Times from the earliest creation.
    let mut created = Vec::with_capacity(p.rows.len());
    for (line, row) in &p.rows {
        let Some(t) = p.time(*line, row, "creation_time")? else {
            return Err(TraceError::new(&p.file, *line, "creation_time", "Required value"));
        };
        created.push(t);
    }
    let origin = created.iter().copied().fold(f64::INFINITY, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    let at = |t: f64| Duration::from_secs_f64((t - origin).max(0.0));
    let mut pod_events = Vec::with_capacity(p.rows.len() * 2);
    for ((line, row), &t) in p.rows.iter().zip(&created) {
        let name = p.cell(row, "name");
        if name.is_empty() {
            return Err(TraceError::new(&p.file, *line, "name", "Required value"));
        }
        let mut requests = serde_json::Map::new();
        requests.insert("cpu".into(), json!(format!("{}m", p.int(*line, row, "cpu_milli")?)));
        requests.insert("memory".into(), json!(format!("{}Mi", p.int(*line, row, "memory_mib")?)));
        let num_gpu = p.int(*line, row, "num_gpu")?;
        let gpu_milli = p.int(*line, row, "gpu_milli")?;
        if num_gpu > 0 {
            match share {
                GpuShare::Whole => {
                    requests.insert("nvidia.com/gpu".into(), json!(num_gpu.to_string()));
                }
                GpuShare::Milli => {
                    let milli = if gpu_milli > 0 { gpu_milli } else { 1000 };
                    requests.insert(GPU_MILLI.into(), json!((num_gpu * milli).to_string()));
                }
            }
        }
        let mut labels = serde_json::Map::new();
        let qos = p.cell(row, "qos");
        if !qos.is_empty() {
            labels.insert(QOS_LABEL.into(), json!(qos));
        }
        let mut spec = json!({
            "containers": [{ "name": "main", "image": "trace", "resources": { "requests": requests.clone(), "limits": limits(&requests) } }],
        });
        let models: Vec<&str> = p.cell(row, "gpu_spec").split('|').map(str::trim).filter(|m| !m.is_empty()).collect();
        if !models.is_empty() {
            spec["affinity"] = json!({ "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{ "matchExpressions": [{ "key": MODEL_LABEL, "operator": "In", "values": models }] }]
            }}});
        }
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": name, "namespace": "default", "labels": Value::Object(labels) },
            "spec": spec,
        });
        let op = read_object(&p.file, *line, pod, options, &mut trace.unmodelled)?;
        pod_events.push(TraceEvent { at: at(t), line: *line, op });
        if let Some(d) = p.time(*line, row, "deletion_time")? {
            if d < t {
                return Err(TraceError::new(
                    &p.file,
                    *line,
                    "deletion_time",
                    format!("{d} is before creation_time {t}"),
                ));
            }
            let op = Op::DeletePod { namespace: "default".into(), name: name.to_owned(), grace: Some(0) };
            pod_events.push(TraceEvent { at: at(d), line: *line, op });
        }
    }
    trace.events.extend(pod_events);
    trace.sort();
    Ok(trace)
}

/// Extended resources must have limits equal to requests (the API server's validation).
fn limits(requests: &serde_json::Map<String, Value>) -> Value {
    let ext: serde_json::Map<String, Value> =
        requests.iter().filter(|(k, _)| k.contains('/')).map(|(k, v)| (k.clone(), v.clone())).collect();
    Value::Object(ext)
}
