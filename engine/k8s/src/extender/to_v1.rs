//! ksched's pods and nodes as the Kubernetes v1 JSON objects an extender reads: the fields
//! extenders decide on (metadata, labels, requests, node selector, tolerations, priority;
//! allocatable, taints, unschedulable, conditions, images). Affinity, topology spread
//! constraints and volumes are not rendered; timestamps neither (ksched's are simulated).

use ksched_engine::api::{ConditionStatus, NodeConditionType, PreemptionPolicy, Protocol};
use ksched_engine::api::{Node, Pod, Resource, TaintEffect, TolerationOp};
use serde_json::{json, Map, Value};

fn quantities(r: &Resource, pods: bool) -> Value {
    let mut m = Map::new();
    if r.milli_cpu != 0 {
        let cpu = if r.milli_cpu % 1000 == 0 { (r.milli_cpu / 1000).to_string() } else { format!("{}m", r.milli_cpu) };
        m.insert("cpu".into(), Value::from(cpu));
    }
    if r.memory != 0 {
        m.insert("memory".into(), Value::from(r.memory.to_string()));
    }
    if r.ephemeral_storage != 0 {
        m.insert("ephemeral-storage".into(), Value::from(r.ephemeral_storage.to_string()));
    }
    if pods && r.allowed_pod_number != 0 {
        m.insert("pods".into(), Value::from(r.allowed_pod_number.to_string()));
    }
    for (name, v) in r.scalar.iter() {
        m.insert(name.as_str().to_owned(), Value::from(v.to_string()));
    }
    Value::Object(m)
}

fn labels<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Value {
    Value::Object(pairs.map(|(k, v)| (k.to_owned(), Value::from(v))).collect())
}

fn effect(e: TaintEffect) -> &'static str {
    match e {
        TaintEffect::NoSchedule => "NoSchedule",
        TaintEffect::PreferNoSchedule => "PreferNoSchedule",
        TaintEffect::NoExecute => "NoExecute",
    }
}

fn containers(list: &[ksched_engine::api::Container]) -> Value {
    Value::Array(
        list.iter()
            .map(|c| {
                let mut o = json!({
                    "name": c.name.as_str(),
                    "image": c.image.as_str(),
                    "resources": {"requests": quantities(&c.requests, false)},
                });
                if !c.ports.is_empty() {
                    o["ports"] = c
                        .ports
                        .iter()
                        .map(|p| {
                            let protocol = match p.protocol {
                                Protocol::Tcp => "TCP",
                                Protocol::Udp => "UDP",
                                Protocol::Sctp => "SCTP",
                            };
                            let mut port = json!({"containerPort": p.container_port, "protocol": protocol});
                            if p.host_port != 0 {
                                port["hostPort"] = p.host_port.into();
                            }
                            port
                        })
                        .collect();
                }
                if c.restartable {
                    o["restartPolicy"] = "Always".into();
                }
                o
            })
            .collect(),
    )
}

/// A v1 Pod.
pub fn pod(p: &Pod) -> Value {
    let mut spec = json!({
        "schedulerName": p.scheduler_name.as_str(),
        "priority": p.priority,
        "preemptionPolicy": match p.preemption_policy {
            PreemptionPolicy::Never => "Never",
            _ => "PreemptLowerPriority",
        },
        "terminationGracePeriodSeconds": p.termination_grace_period_seconds,
        "containers": containers(&p.containers),
    });
    if !p.init_containers.is_empty() {
        spec["initContainers"] = containers(&p.init_containers);
    }
    if let Some(n) = p.node_name {
        spec["nodeName"] = n.as_str().into();
    }
    if let Some(c) = p.priority_class_name {
        spec["priorityClassName"] = c.as_str().into();
    }
    if !p.node_selector.is_empty() {
        spec["nodeSelector"] = labels(p.node_selector.iter().map(|l| (l.key.as_str(), l.value.as_str())));
    }
    if !p.tolerations.is_empty() {
        spec["tolerations"] = p
            .tolerations
            .iter()
            .map(|t| {
                let mut o = Map::new();
                if !t.key.as_str().is_empty() {
                    o.insert("key".into(), t.key.as_str().into());
                }
                let op = match t.operator {
                    TolerationOp::Equal => "Equal",
                    TolerationOp::Exists => "Exists",
                };
                o.insert("operator".into(), op.into());
                if !t.value.as_str().is_empty() {
                    o.insert("value".into(), t.value.as_str().into());
                }
                if let Some(e) = t.effect {
                    o.insert("effect".into(), effect(e).into());
                }
                if let Some(s) = t.toleration_seconds {
                    o.insert("tolerationSeconds".into(), s.into());
                }
                Value::Object(o)
            })
            .collect();
    }
    if let Some(o) = &p.overhead {
        spec["overhead"] = quantities(o, false);
    }
    if let Some(l) = &p.pod_level_requests {
        spec["resources"] = json!({"requests": quantities(&l.amounts, false)});
    }
    let mut meta = json!({
        "name": &*p.name,
        "namespace": p.namespace.as_str(),
        "uid": p.uid.as_str(),
    });
    if !p.labels.is_empty() {
        meta["labels"] = labels(p.labels.iter().map(|l| (l.key.as_str(), l.value.as_str())));
    }
    let mut status = Map::new();
    if let Some(n) = p.nominated_node_name {
        status.insert("nominatedNodeName".into(), n.as_str().into());
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
}

/// A v1 Node.
pub fn node(n: &Node) -> Value {
    let mut meta = json!({"name": n.name.as_str()});
    if !n.labels.is_empty() {
        meta["labels"] = labels(n.labels.iter().map(|l| (l.key.as_str(), l.value.as_str())));
    }
    if !n.annotations.is_empty() {
        meta["annotations"] =
            Value::Object(n.annotations.iter().map(|(k, v)| (k.as_str().to_owned(), Value::from(&**v))).collect());
    }
    let mut spec = Map::new();
    if n.unschedulable {
        spec.insert("unschedulable".into(), true.into());
    }
    if !n.taints.is_empty() {
        spec.insert(
            "taints".into(),
            n.taints
                .iter()
                .map(|t| {
                    let mut o = json!({"key": t.key.as_str(), "effect": effect(t.effect)});
                    if !t.value.as_str().is_empty() {
                        o["value"] = t.value.as_str().into();
                    }
                    o
                })
                .collect(),
        );
    }
    let allocatable = quantities(&n.allocatable, true);
    let mut status = json!({"capacity": allocatable.clone(), "allocatable": allocatable});
    if !n.conditions.is_empty() {
        status["conditions"] = n
            .conditions
            .iter()
            .map(|c| {
                let kind = match c.kind {
                    NodeConditionType::Ready => "Ready",
                    NodeConditionType::MemoryPressure => "MemoryPressure",
                    NodeConditionType::DiskPressure => "DiskPressure",
                    NodeConditionType::PidPressure => "PIDPressure",
                    NodeConditionType::NetworkUnavailable => "NetworkUnavailable",
                };
                let st = match c.status {
                    ConditionStatus::True => "True",
                    ConditionStatus::False => "False",
                    ConditionStatus::Unknown => "Unknown",
                };
                json!({"type": kind, "status": st})
            })
            .collect();
    }
    if !n.images.is_empty() {
        status["images"] = n
            .images
            .iter()
            .map(
                |i| json!({"names": i.names.iter().map(|s| s.as_str()).collect::<Vec<_>>(), "sizeBytes": i.size_bytes}),
            )
            .collect();
    }
    json!({"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status})
}
