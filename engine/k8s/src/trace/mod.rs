//! Traces: what a cluster lived through, as timed operations, and their replay on the
//! simulation's clock (`replay`). The format (one JSON object a line, documented in the
//! README's "Traces" section):
//!
//! ```text
//! {"time": 0, "op": "add_node", "object": {"apiVersion": "v1", "kind": "Node", ...}}
//! {"op": "template", "name": "small", "object": {"apiVersion": "v1", "kind": "Pod", ...}}
//! {"time": 1.5, "op": "create", "template": "small", "overrides": {"metadata": {"name": "p1"}}, "duration": "30s"}
//! {"time": "2m", "op": "delete", "pod": "default/p1"}
//! {"time": 300, "op": "scale", "kind": "Deployment", "namespace": "default", "name": "web", "replicas": 5}
//! {"time": 400, "op": "drain", "selector": "zone=b", "remove": true}
//! ```
//!
//! `time` is simulated seconds from the trace's start (a number, or a duration such as `90s`,
//! `1h30m`), never decreasing from one line to the next; `template` lines define templates
//! and take no time. An object comes inline (`object`) or as a template with `overrides`
//! merged over it (JSON merge patch, RFC 7386). Importers (`audit`, `alibaba`) turn other
//! recordings into the same operations. Every error names the file, the line and the field.

pub mod alibaba;
pub mod audit;

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use ksched_engine::api::{Node, Pod, Sym};
use serde::Deserialize;
use serde_json::Value;

use crate::manifest::{Manifests, ReadOptions, Workload};
use crate::unmodelled::Unmodelled;

/// A trace could not be read: `FILE:LINE: FIELD: MESSAGE` (the field left out when the line
/// as a whole is wrong).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    /// 1-based; 0 for errors about the whole file.
    pub line: u32,
    /// The object (`pod default/web`), when the error is inside one.
    pub object: String,
    /// The field: the line's (`time`, `overrides`) or, inside an object, `object.spec...`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        for part in [&self.object, &self.field] {
            if !part.is_empty() {
                write!(f, ": {part}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for TraceError {}

impl TraceError {
    pub fn new(file: &str, line: u32, field: impl Into<String>, message: impl Into<String>) -> TraceError {
        TraceError { file: file.to_owned(), line, object: String::new(), field: field.into(), message: message.into() }
    }
}

/// How to find the nodes a drain applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeSelection {
    /// One node by name.
    Name(String),
    /// Every node whose label `key` is `value` (`zone=b` reads `topology.kubernetes.io/zone`).
    Label(String, String),
}

impl NodeSelection {
    /// `NODE`, `zone=VALUE`, `region=VALUE` or `LABEL=VALUE`.
    pub fn parse(s: &str) -> Result<NodeSelection, String> {
        match s.split_once('=') {
            None if !s.is_empty() => Ok(NodeSelection::Name(s.to_owned())),
            Some((k, v)) if !k.is_empty() => {
                let key = match k {
                    "zone" => "topology.kubernetes.io/zone",
                    "region" => "topology.kubernetes.io/region",
                    other => other,
                };
                Ok(NodeSelection::Label(key.to_owned(), v.to_owned()))
            }
            _ => Err(format!("{s:?}: want a node name or LABEL=VALUE (zone=b)")),
        }
    }

    pub fn matches(&self, node: &Node) -> bool {
        match self {
            NodeSelection::Name(n) => node.name.as_str() == n,
            NodeSelection::Label(k, v) => node.labels.get(Sym::new(k)).is_some_and(|l| l.as_str() == v),
        }
    }
}

impl fmt::Display for NodeSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeSelection::Name(n) => f.write_str(n),
            NodeSelection::Label(k, v) => write!(f, "{k}={v}"),
        }
    }
}

/// One operation of a trace.
#[derive(Clone, Debug)]
pub enum Op {
    /// A pod is created (bound already when it names its node).
    CreatePod(Box<Pod>),
    AddNode(Box<Node>),
    /// A workload controller is created; it makes its pods from then on.
    CreateWorkload(Box<Workload>),
    /// Other cluster objects (PriorityClasses, PodDisruptionBudgets, namespaces, services,
    /// storage: PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes,
    /// CSIDrivers, CSIStorageCapacities), as read.
    CreateObjects(Box<Manifests>),
    DeletePod {
        namespace: String,
        name: String,
        grace: Option<i64>,
    },
    RemoveNode(String),
    Cordon(String),
    Uncordon(String),
    /// Cordon the selected nodes and evict their pods (DaemonSet pods stay, as `kubectl drain
    /// --ignore-daemonsets`); evictions a PodDisruptionBudget refuses are retried every 5 s
    /// until `timeout`; with `remove`, the nodes are deleted then (pods left go with them).
    Drain {
        nodes: NodeSelection,
        remove: bool,
        timeout: Duration,
    },
    /// `kubectl scale`: Deployment, ReplicaSet, ReplicationController, StatefulSet, or a Job's
    /// parallelism.
    Scale {
        kind: String,
        namespace: String,
        name: String,
        replicas: i32,
    },
    /// A binding the recorded cluster's scheduler made: not applied, compared with ksched's.
    Bind {
        namespace: String,
        name: String,
        node: String,
    },
}

/// One operation at its time.
#[derive(Clone, Debug)]
pub struct TraceEvent {
    /// From the trace's start.
    pub at: Duration,
    /// Where it was read (1-based line; for importers, the line of the source record).
    pub line: u32,
    pub op: Op,
}

/// A trace read from a file: its operations in time order.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub file: String,
    pub events: Vec<TraceEvent>,
    /// What the importer could not carry over (fields dropped, records skipped).
    pub warnings: Vec<String>,
    /// Fields of the trace's objects that change upstream's decision and that ksched does not
    /// model, per field (with `ReadOptions::strict` the first is an error instead), for the
    /// run's warnings and summary, as a manifest's.
    pub unmodelled: Unmodelled,
}

/// The default time a drain waits for evictions a budget refuses.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// A line as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    time: Option<TimeValue>,
    op: String,
    object: Option<Value>,
    template: Option<String>,
    overrides: Option<Value>,
    /// A template's name, or a scaled controller's.
    name: Option<String>,
    pod: Option<String>,
    node: Option<String>,
    selector: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    replicas: Option<i32>,
    duration: Option<TimeValue>,
    #[serde(rename = "gracePeriodSeconds")]
    grace_period_seconds: Option<i64>,
    remove: Option<bool>,
    timeout: Option<TimeValue>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TimeValue {
    Seconds(f64),
    Text(String),
}

impl TimeValue {
    fn duration(&self) -> Result<Duration, String> {
        match self {
            TimeValue::Seconds(s) => {
                Duration::try_from_secs_f64(*s).map_err(|_| format!("{s} is not a time (seconds, 0 or more)"))
            }
            TimeValue::Text(t) => ksched_engine::util::duration::parse_cli_duration(t),
        }
    }
}

/// The operations a line may name.
pub const OPS: &[&str] =
    &["template", "create", "add_node", "delete", "remove_node", "cordon", "uncordon", "drain", "scale", "bind"];

impl Trace {
    /// Reads a trace file in the format above, its objects read with `options` (the run's
    /// feature gates and strictness, as its manifests).
    pub fn read_file(path: &std::path::Path, options: &ReadOptions) -> Result<Trace, TraceError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::new(&file, 0, "", e.to_string()))?;
        Trace::parse_with(&file, &text, options)
    }

    /// Parses a trace's text (`file` names it in errors) under v1.35's default feature gates,
    /// not strict (tests).
    pub fn parse(file: &str, text: &str) -> Result<Trace, TraceError> {
        Trace::parse_with(file, text, &ReadOptions::default())
    }

    /// Parses a trace's text, its objects read with `options`.
    pub fn parse_with(file: &str, text: &str, options: &ReadOptions) -> Result<Trace, TraceError> {
        let mut templates: HashMap<String, Value> = HashMap::new();
        let mut trace = Trace { file: file.to_owned(), ..Trace::default() };
        let mut last = Duration::ZERO;
        for (i, raw) in text.lines().enumerate() {
            let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
            if raw.trim().is_empty() {
                continue;
            }
            let err = |field: &str, message: String| TraceError::new(file, n, field, message);
            let de = &mut serde_json::Deserializer::from_str(raw);
            let line: Line = serde_path_to_error::deserialize(de).map_err(|e| {
                let path = e.path().to_string();
                let field = if path == "." { String::new() } else { path };
                let inner = e.into_inner();
                match inner.classify() {
                    serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                        err("", format!("malformed JSON: {inner}"))
                    }
                    _ => err(&field, inner.to_string()),
                }
            })?;
            if line.op == "template" {
                let name = line.name.ok_or_else(|| err("name", "Required value: the template's name".into()))?;
                let object = line.object.ok_or_else(|| err("object", "Required value: the template".into()))?;
                if !object.is_object() {
                    return Err(err("object", "expected a Kubernetes object (a mapping)".into()));
                }
                templates.insert(name, object);
                continue;
            }
            let at = match &line.time {
                Some(t) => t.duration().map_err(|e| err("time", e))?,
                None => return Err(err("time", "Required value".into())),
            };
            if at < last {
                return Err(err(
                    "time",
                    format!(
                        "{} s is before the previous line's {} s: lines must be in time order",
                        at.as_secs_f64(),
                        last.as_secs_f64()
                    ),
                ));
            }
            last = at;
            let op = line_op(file, n, line, &templates, options, &mut trace.unmodelled)?;
            trace.events.push(TraceEvent { at, line: n, op });
        }
        Ok(trace)
    }

    /// Sorts the events by time, keeping the order of events at the same time (importers).
    pub fn sort(&mut self) {
        self.events.sort_by_key(|e| e.at);
    }
}

/// `namespace/name` or `name` (namespace `default`).
fn split_key(key: &str) -> (String, String) {
    match key.split_once('/') {
        Some((ns, name)) => (ns.to_owned(), name.to_owned()),
        None => ("default".to_owned(), key.to_owned()),
    }
}

fn line_op(
    file: &str,
    n: u32,
    line: Line,
    templates: &HashMap<String, Value>,
    options: &ReadOptions,
    unmodelled: &mut Unmodelled,
) -> Result<Op, TraceError> {
    let err = |field: &str, message: String| TraceError::new(file, n, field, message);
    let required = |v: Option<String>, field: &str| v.ok_or_else(|| err(field, "Required value".into()));
    match line.op.as_str() {
        "create" | "add_node" => {
            let mut object = match (line.object, line.template) {
                (Some(o), None) => o,
                (None, Some(t)) => {
                    let mut o = templates
                        .get(&t)
                        .cloned()
                        .ok_or_else(|| err("template", format!("no template {t:?} defined on an earlier line")))?;
                    if let Some(patch) = &line.overrides {
                        merge_patch(&mut o, patch);
                    }
                    o
                }
                (Some(_), Some(_)) => return Err(err("template", "give object or template, not both".into())),
                (None, None) => return Err(err("object", "Required value: an object, or a template".into())),
            };
            if let Some(d) = &line.duration {
                let d = d.duration().map_err(|e| err("duration", e))?;
                set_run_duration(&mut object, d);
            }
            let op = read_object(file, n, object, options, unmodelled)?;
            if line.op == "add_node" && !matches!(op, Op::AddNode(_)) {
                return Err(err("object.kind", "add_node takes a Node".into()));
            }
            Ok(op)
        }
        "delete" => {
            let (namespace, name) = split_key(&required(line.pod, "pod")?);
            Ok(Op::DeletePod { namespace, name, grace: line.grace_period_seconds })
        }
        "remove_node" => Ok(Op::RemoveNode(required(line.node, "node")?)),
        "cordon" => Ok(Op::Cordon(required(line.node, "node")?)),
        "uncordon" => Ok(Op::Uncordon(required(line.node, "node")?)),
        "drain" => {
            let nodes = match (line.node, line.selector) {
                (Some(n), None) => NodeSelection::Name(n),
                (None, Some(s)) => NodeSelection::parse(&s).map_err(|e| err("selector", e))?,
                _ => return Err(err("node", "give node or selector (zone=b), one of them".into())),
            };
            let timeout = match &line.timeout {
                Some(t) => t.duration().map_err(|e| err("timeout", e))?,
                None => DRAIN_TIMEOUT,
            };
            Ok(Op::Drain { nodes, remove: line.remove.unwrap_or(false), timeout })
        }
        "scale" => {
            let replicas = line.replicas.ok_or_else(|| err("replicas", "Required value".into()))?;
            if replicas < 0 {
                return Err(err("replicas", format!("{replicas} must be greater than or equal to 0")));
            }
            Ok(Op::Scale {
                kind: required(line.kind, "kind")?,
                namespace: line.namespace.unwrap_or_else(|| "default".into()),
                name: required(line.name, "name")?,
                replicas,
            })
        }
        "bind" => {
            let (namespace, name) = split_key(&required(line.pod, "pod")?);
            Ok(Op::Bind { namespace, name, node: required(line.node, "node")? })
        }
        other => Err(err("op", format!("unknown op {other:?} (one of {})", OPS.join(", ")))),
    }
}

/// Sets the `ksched.io/run-duration` annotation of a pod (or a workload's pod template).
fn set_run_duration(object: &mut Value, d: Duration) {
    let pod_meta = if object.get("kind").and_then(Value::as_str) == Some("Pod") {
        object.pointer_mut("/metadata")
    } else {
        object.pointer_mut("/spec/template/metadata")
    };
    let text = format!("{}s", d.as_secs_f64());
    let set = |meta: &mut serde_json::Map<String, Value>| {
        let annotations = meta.entry("annotations").or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(a) = annotations {
            a.insert(crate::RUN_DURATION_ANNOTATION.to_owned(), Value::String(text.clone()));
        }
    };
    match pod_meta {
        Some(Value::Object(m)) => set(m),
        _ => {
            let kind = object.get("kind").and_then(Value::as_str) == Some("Pod");
            let path = if kind { "/metadata" } else { "/spec/template/metadata" };
            let mut m = serde_json::Map::new();
            set(&mut m);
            let mut cur = &mut *object;
            for part in path.trim_start_matches('/').split('/') {
                let Value::Object(o) = cur else { return };
                cur = o.entry(part).or_insert_with(|| Value::Object(Default::default()));
            }
            *cur = Value::Object(m);
        }
    }
}

/// RFC 7386: `patch`'s members replace the target's, objects merge, `null` deletes.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// One object as a create op, read as a manifest's object would be: with `options` (the run's
/// feature gates; under `strict` an unmodelled field is an error), its unmodelled fields
/// counted in `unmodelled`.
pub fn read_object(
    file: &str,
    n: u32,
    object: Value,
    options: &ReadOptions,
    unmodelled: &mut Unmodelled,
) -> Result<Op, TraceError> {
    if object.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) {
        return Err(TraceError::new(file, n, "object.kind", "one object a line, not a list"));
    }
    let mut m = Manifests::with_options(*options);
    m.read_value(file, n, object).map_err(|e| TraceError {
        file: file.to_owned(),
        line: n,
        object: e.object,
        field: if e.field.is_empty() { "object".into() } else { format!("object.{}", e.field) },
        message: e.message,
    })?;
    unmodelled.merge(std::mem::take(&mut m.unmodelled));
    if let Some(p) = m.pods.pop() {
        return Ok(Op::CreatePod(Box::new(p.pod)));
    }
    if let Some((node, _)) = m.nodes.pop() {
        return Ok(Op::AddNode(Box::new(node)));
    }
    if let Some((w, _)) = m.workloads.pop() {
        return Ok(Op::CreateWorkload(Box::new(w)));
    }
    if m.terminal_pods.values().sum::<usize>() > 0 {
        return Err(TraceError::new(
            file,
            n,
            "object.status.phase",
            "a terminal pod (Succeeded, Failed) cannot be created",
        ));
    }
    if !m.dra.is_empty() {
        return Err(TraceError::new(
            file,
            n,
            "object.kind",
            "create: DRA objects (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate) come with the \
             initial manifests (-f), not in a trace",
        ));
    }
    if !m.skipped.is_empty() {
        let kinds: Vec<&str> = m.skipped.keys().map(String::as_str).collect();
        return Err(TraceError::new(file, n, "object.kind", format!("ksched does not model {}", kinds.join(", "))));
    }
    Ok(Op::CreateObjects(Box::new(m)))
}

#[cfg(test)]
mod tests;
