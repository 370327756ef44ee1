//! Kubernetes audit logs (`audit.k8s.io/v1` `Event`, one JSON object a line, as the API
//! server's log backend writes them) as a trace. Only `ResponseComplete` events of requests
//! that succeeded (no `responseStatus.code`, or 2xx) count; the time of each is its
//! `requestReceivedTimestamp`, from the first event's. The object is the `responseObject`
//! where the level is RequestResponse (it has the name `generateName` made), else the
//! `requestObject`.
//!
//! | request                                              | operation                 |
//! |------------------------------------------------------|---------------------------|
//! | create `pods`                                        | create the pod            |
//! | delete `pods`                                        | delete the pod            |
//! | create `pods/binding`                                | the recorded binding      |
//! | create / delete `nodes`                              | add / remove the node     |
//! | update / patch `nodes` setting `spec.unschedulable`  | cordon / uncordon         |
//! | create deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs, replicationcontrollers | create the workload |
//! | update / patch of their `scale`, or of `spec.replicas` | scale                   |
//! | create priorityclasses, poddisruptionbudgets, namespaces, services | create the object |
//!
//! A pod whose controlling owner is a workload the log creates is left out (the simulated
//! controller makes its own pods); so is a ReplicaSet a logged Deployment owns. Everything
//! else is left out with a count in the warnings.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::{read_object, Op, Trace, TraceError, TraceEvent};
use crate::manifest::ReadOptions;

const WORKLOADS: &[(&str, &str)] = &[
    ("deployments", "Deployment"),
    ("replicasets", "ReplicaSet"),
    ("statefulsets", "StatefulSet"),
    ("daemonsets", "DaemonSet"),
    ("jobs", "Job"),
    ("cronjobs", "CronJob"),
    ("replicationcontrollers", "ReplicationController"),
];

const OBJECTS: &[&str] = &["priorityclasses", "poddisruptionbudgets", "namespaces", "services"];

/// Reads audit log files, in order, their objects read with `options` (the run's feature
/// gates and strictness).
pub fn read_files(paths: &[PathBuf], options: &ReadOptions) -> Result<Trace, TraceError> {
    let mut texts = Vec::new();
    for p in paths {
        let file = p.display().to_string();
        let text = std::fs::read_to_string(p).map_err(|e| TraceError::new(&file, 0, "", e.to_string()))?;
        texts.push((file, text));
    }
    let refs: Vec<(&str, &str)> = texts.iter().map(|(f, t)| (f.as_str(), t.as_str())).collect();
    parse_with(&refs, options)
}

/// One logged request, kept for the second pass.
struct Entry<'a> {
    file: &'a str,
    line: u32,
    at: jiff::Timestamp,
    verb: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    object: Option<Value>,
}

/// Parses audit logs given as (file name, text), under v1.35's default feature gates (tests).
pub fn parse(files: &[(&str, &str)]) -> Result<Trace, TraceError> {
    parse_with(files, &ReadOptions::default())
}

/// Parses audit logs given as (file name, text), their objects read with `options`.
pub fn parse_with(files: &[(&str, &str)], options: &ReadOptions) -> Result<Trace, TraceError> {
    let mut entries = Vec::new();
    for (file, text) in files {
        for (i, raw) in text.lines().enumerate() {
            let line = u32::try_from(i + 1).unwrap_or(u32::MAX);
            if raw.trim().is_empty() {
                continue;
            }
            if let Some(e) = entry(file, line, raw)? {
                entries.push(e);
            }
        }
    }
    entries.sort_by_key(|e| e.at);
    let mut trace = Trace { file: files.first().map_or_else(String::new, |f| f.0.to_owned()), ..Trace::default() };
    let Some(first) = entries.first().map(|e| e.at) else { return Ok(trace) };
    // Workloads the log creates: their pods (and a Deployment's ReplicaSets) come from the
    // simulated controllers.
    let mut created: HashSet<(String, String, String)> = HashSet::new();
    for e in &entries {
        if e.verb == "create" && e.subresource.is_empty() {
            if let Some((_, kind)) = WORKLOADS.iter().find(|(r, _)| *r == e.resource) {
                created.insert((kind.to_string(), e.namespace.clone(), e.name.clone()));
            }
        }
    }
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut skip = |what: String| *skipped.entry(what).or_default() += 1;
    for e in entries {
        let at = Duration::try_from(e.at.duration_since(first)).unwrap_or(Duration::ZERO);
        let err = |field: &str, message: String| TraceError::new(e.file, e.line, field, message);
        let mut push = |op: Op| trace.events.push(TraceEvent { at, line: e.line, op });
        let unmodelled = &mut trace.unmodelled;
        let mut read =
            |o: Value, namespace: &str| read_object(e.file, e.line, clean(o, &e.name, namespace), options, unmodelled);
        let owned_by_logged = |o: &Value| {
            o.pointer("/metadata/ownerReferences").and_then(Value::as_array).is_some_and(|refs| {
                refs.iter().any(|r| {
                    r.get("controller").and_then(Value::as_bool) == Some(true)
                        && created.contains(&(
                            r.get("kind").and_then(Value::as_str).unwrap_or("").to_owned(),
                            e.namespace.clone(),
                            r.get("name").and_then(Value::as_str).unwrap_or("").to_owned(),
                        ))
                })
            })
        };
        match (e.verb.as_str(), e.resource.as_str(), e.subresource.as_str()) {
            ("create", "pods", "") => {
                let Some(o) = e.object else { return Err(err("requestObject", "Required value: the pod".into())) };
                if owned_by_logged(&o) {
                    skip("pods made by a logged workload (its simulated controller makes them)".into());
                    continue;
                }
                push(read(o, &e.namespace)?);
            }
            ("delete", "pods", "") => {
                push(Op::DeletePod { namespace: e.namespace, name: e.name, grace: None });
            }
            ("create", "pods", "binding") => {
                let node = e
                    .object
                    .as_ref()
                    .and_then(|o| o.pointer("/target/name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| err("requestObject.target.name", "Required value: the binding's node".into()))?;
                push(Op::Bind { namespace: e.namespace, name: e.name, node: node.to_owned() });
            }
            ("create", "nodes", "") => {
                let Some(o) = e.object else { return Err(err("requestObject", "Required value: the node".into())) };
                push(read(o, "")?);
            }
            ("delete", "nodes", "") => push(Op::RemoveNode(e.name)),
            ("update" | "patch", "nodes", "") => {
                match e.object.as_ref().and_then(|o| o.pointer("/spec/unschedulable")) {
                    Some(Value::Bool(true)) => push(Op::Cordon(e.name)),
                    Some(Value::Bool(false) | Value::Null) => push(Op::Uncordon(e.name)),
                    // A patch that leaves spec.unschedulable out of the object: no change.
                    _ if e.verb == "patch" => skip("node patches that do not touch spec.unschedulable".into()),
                    _ => push(Op::Uncordon(e.name)),
                }
            }
            ("create", r, "") if WORKLOADS.iter().any(|(w, _)| *w == r) => {
                let Some(o) = e.object else { return Err(err("requestObject", "Required value: the object".into())) };
                if r == "replicasets" && owned_by_logged(&o) {
                    skip("replicasets of a logged Deployment".into());
                    continue;
                }
                push(read(o, &e.namespace)?);
            }
            ("update" | "patch", r, sub @ ("scale" | "")) if WORKLOADS.iter().any(|(w, _)| *w == r) => {
                let replicas = e.object.as_ref().and_then(|o| o.pointer("/spec/replicas")).and_then(Value::as_i64);
                let kind = WORKLOADS.iter().find(|(w, _)| *w == r).map_or("", |(_, k)| k);
                match replicas {
                    Some(n) => push(Op::Scale {
                        kind: kind.to_owned(),
                        namespace: e.namespace,
                        name: e.name,
                        replicas: i32::try_from(n)
                            .map_err(|_| err("requestObject.spec.replicas", format!("{n} is out of range")))?,
                    }),
                    None if sub == "scale" => {
                        return Err(err("requestObject.spec.replicas", "Required value: the scale's replicas".into()))
                    }
                    None => skip(format!("{} of {r} that change no replicas", e.verb)),
                }
            }
            ("create", r, "") if OBJECTS.contains(&r) => {
                let Some(o) = e.object else { return Err(err("requestObject", "Required value: the object".into())) };
                push(read(o, &e.namespace)?);
            }
            (verb, r, sub) => {
                let what = if sub.is_empty() { r.to_owned() } else { format!("{r}/{sub}") };
                skip(format!("{verb} {what}"));
            }
        }
    }
    trace.warnings =
        skipped.into_iter().map(|(what, n)| format!("{}: left out {n} audit event(s): {what}", trace.file)).collect();
    Ok(trace)
}

/// One line: `None` when it does not count (another stage, a failed request).
fn entry<'a>(file: &'a str, line: u32, raw: &str) -> Result<Option<Entry<'a>>, TraceError> {
    let err = |field: &str, message: String| TraceError::new(file, line, field, message);
    let v: Value = serde_json::from_str(raw).map_err(|e| err("", format!("malformed JSON: {e}")))?;
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
    if s("/kind") != "Event" || !s("/apiVersion").starts_with("audit.k8s.io/") {
        return Err(err(
            "kind",
            format!("not an audit Event (kind {:?}, apiVersion {:?})", s("/kind"), s("/apiVersion")),
        ));
    }
    if s("/stage") != "ResponseComplete" {
        return Ok(None);
    }
    if v.pointer("/responseStatus/code").and_then(Value::as_i64).is_some_and(|c| !(200..300).contains(&c)) {
        return Ok(None);
    }
    let level = s("/level");
    if level != "Request" && level != "RequestResponse" {
        // Metadata-level events carry no objects: only deletes can be replayed from them.
        if s("/verb") != "delete" {
            return Ok(None);
        }
    }
    let at_text = s("/requestReceivedTimestamp");
    let at: jiff::Timestamp = at_text
        .parse()
        .map_err(|e| err("requestReceivedTimestamp", format!("{at_text:?} is not an RFC 3339 time: {e}")))?;
    let object = if level == "RequestResponse" && s("/verb") != "delete" {
        v.get("responseObject").or_else(|| v.get("requestObject"))
    } else {
        v.get("requestObject")
    }
    .filter(|o| !o.is_null())
    .cloned();
    let name = Some(s("/objectRef/name"))
        .filter(|n| !n.is_empty())
        .or_else(|| object.as_ref().and_then(|o| o.pointer("/metadata/name")).and_then(Value::as_str))
        .unwrap_or("")
        .to_owned();
    let namespace = s("/objectRef/namespace").to_owned();
    Ok(Some(Entry {
        file,
        line,
        at,
        verb: s("/verb").to_owned(),
        resource: s("/objectRef/resource").to_owned(),
        subresource: s("/objectRef/subresource").to_owned(),
        namespace,
        name,
        object,
    }))
}

/// The logged object as a manifest's: named and namespaced as the request was, without the
/// server's bookkeeping.
fn clean(mut o: Value, name: &str, namespace: &str) -> Value {
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["managedFields", "resourceVersion", "generation", "creationTimestamp", "selfLink"] {
            m.remove(k);
        }
        if !name.is_empty() && m.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            m.insert("name".into(), Value::String(name.to_owned()));
        }
        if !namespace.is_empty() && m.get("namespace").is_none() {
            m.insert("namespace".into(), Value::String(namespace.to_owned()));
        }
    }
    if let Some(obj) = o.as_object_mut() {
        // A created pod's status is the server's; the scheduler starts from none.
        if obj.get("kind").and_then(Value::as_str) == Some("Pod") {
            obj.remove("status");
        }
    }
    o
}
