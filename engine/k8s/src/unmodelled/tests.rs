use std::fmt;

use serde::de::{self, DeserializeOwned, Visitor};
use serde_json::{json, Value};

use super::*;
use crate::{node_from_k8s, pod_from_k8s};

/// The field names a k8s-openapi type declares to serde (its `deserialize_struct` call): the
/// wire names of every field of the struct, whatever k8s-openapi version is built.
fn wire_fields<T: DeserializeOwned>() -> Vec<&'static str> {
    match T::deserialize(FieldNames) {
        Err(FieldsError::Fields(f)) => f.to_vec(),
        other => panic!("{} is not a struct: {:?}", std::any::type_name::<T>(), other.err()),
    }
}

/// A deserializer that only answers `deserialize_struct`, with the names it is asked for.
struct FieldNames;

#[derive(Debug)]
enum FieldsError {
    Fields(&'static [&'static str]),
    Other(#[allow(dead_code)] String),
}

impl fmt::Display for FieldsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for FieldsError {}

impl de::Error for FieldsError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        FieldsError::Other(msg.to_string())
    }
}

impl<'de> de::Deserializer<'de> for FieldNames {
    type Error = FieldsError;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, FieldsError> {
        Err(FieldsError::Other("not a struct".into()))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, FieldsError> {
        Err(FieldsError::Fields(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// Every field k8s-openapi's v1.35 type has is classified exactly once, and every classified
/// field exists: a field k8s-openapi gains (or loses) fails here until the table says what
/// ksched does with it.
#[test]
fn every_field_of_v1_35s_pod_and_node_types_is_classified() {
    let tables: [(&str, Vec<&str>, FieldTable); 6] = [
        ("PodSpec", wire_fields::<k::PodSpec>(), POD_SPEC),
        ("PodStatus", wire_fields::<k::PodStatus>(), POD_STATUS),
        ("NodeSpec", wire_fields::<k::NodeSpec>(), NODE_SPEC),
        ("NodeStatus", wire_fields::<k::NodeStatus>(), NODE_STATUS),
        ("Container", wire_fields::<k::Container>(), CONTAINER),
        ("ResourceRequirements", wire_fields::<k::ResourceRequirements>(), RESOURCE_REQUIREMENTS),
    ];
    for (ty, fields, table) in tables {
        assert!(fields.len() > 2, "{ty}: {fields:?}");
        for f in &fields {
            let n = table.iter().filter(|(name, _)| name == f).count();
            assert_eq!(n, 1, "{ty}.{f} is classified {n} times: add it to unmodelled.rs (read, warned or no effect)");
        }
        for (name, c) in table {
            assert!(fields.contains(name), "{ty}.{name} is classified but k8s-openapi has no such field");
            if let NoEffect(why) | Warned(why) = c {
                assert!(!why.is_empty(), "{ty}.{name}: give the reason");
            }
        }
    }
    // The DRA fields of a pod are among them: read.
    assert_eq!(RESOURCE_REQUIREMENTS.iter().find(|(n, _)| *n == "claims").map(|e| e.1), Some(Read));
    assert_eq!(POD_SPEC.iter().find(|(n, _)| *n == "resourceClaims").map(|e| e.1), Some(Read));
}

/// The pod every `Read` field's sample is set on: one app container with a port and a
/// request, one init container, a claim.
fn base_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "img", "ports": [{"containerPort": 80}],
                            "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]}}],
            "initContainers": [{"name": "i", "image": "init", "resources": {"requests": {"cpu": "50m"}}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "rc"}],
        },
        "status": {},
    })
}

fn base_node() -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
           "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
}

/// `v` with `value` at the JSON pointer `at` (its parent must exist).
fn with(mut v: Value, at: &str, value: Value) -> Value {
    let (parent, key) = at.rsplit_once('/').unwrap();
    let p = v.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent}"));
    match p {
        Value::Object(m) => {
            m.insert(key.to_owned(), value);
        }
        Value::Array(a) => a[key.parse::<usize>().unwrap()] = value,
        _ => panic!("{parent} is not a container"),
    }
    v
}

/// What conversion made of a pod, all of it (or its error: a field it checks is read too).
fn pod_print(v: &Value) -> String {
    let kp: k::Pod = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"));
    let p = match pod_from_k8s(&kp) {
        Ok(p) => p,
        Err(e) => return e.to_string(),
    };
    format!(
        "{:?} {:?} {:?} {:?} {} {}",
        *p, p.node_name, p.nominated_node_name, p.deletion_timestamp, p.priority, p.preempted_by_scheduler
    )
}

/// A sample value for each `Read` field: conversion must give something else with it than
/// without (so a field listed as read is read). `phase` is the manifest reader's (its test
/// drops terminal pods); `capacity` is read only without `allocatable` (checked below).
#[test]
fn every_read_field_changes_what_conversion_makes() {
    let pod_samples: &[(&str, &str, Value)] = &[
        ("PodSpec", "activeDeadlineSeconds", json!(30)),
        (
            "PodSpec",
            "affinity",
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]}}}),
        ),
        ("PodSpec", "containers", json!([{"name": "other", "image": "x"}])),
        ("PodSpec", "hostNetwork", json!(true)),
        ("PodSpec", "initContainers", json!([])),
        ("PodSpec", "nodeName", json!("n1")),
        ("PodSpec", "nodeSelector", json!({"k": "v"})),
        ("PodSpec", "overhead", json!({"cpu": "10m"})),
        ("PodSpec", "preemptionPolicy", json!("Never")),
        ("PodSpec", "priority", json!(7)),
        ("PodSpec", "priorityClassName", json!("high")),
        ("PodSpec", "resourceClaims", json!([{"name": "gpu", "resourceClaimTemplateName": "t"}])),
        ("PodSpec", "resources", json!({"requests": {"cpu": "1"}})),
        ("PodSpec", "schedulerName", json!("other-scheduler")),
        ("PodSpec", "schedulingGates", json!([{"name": "g"}])),
        ("PodSpec", "terminationGracePeriodSeconds", json!(5)),
        ("PodSpec", "tolerations", json!([{"key": "k", "operator": "Exists"}])),
        (
            "PodSpec",
            "topologySpreadConstraints",
            json!([{"maxSkew": 1, "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}}}]),
        ),
        ("PodSpec", "volumes", json!([{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}])),
        (
            "PodStatus",
            "conditions",
            json!([{"type": "DisruptionTarget", "status": "True",
            "reason": "PreemptionByScheduler"}]),
        ),
        (
            "PodStatus",
            "containerStatuses",
            json!([{"name": "c", "image": "img", "imageID": "", "ready": true,
            "restartCount": 0, "allocatedResources": {"cpu": "300m"}, "resources": {"requests": {"cpu": "300m"}}}]),
        ),
        (
            "PodStatus",
            "initContainerStatuses",
            json!([{"name": "i", "image": "init", "imageID": "",
            "ready": false, "restartCount": 0, "allocatedResources": {"cpu": "300m"}, "resources": {"requests": {"cpu": "300m"}}}]),
        ),
        ("PodStatus", "nominatedNodeName", json!("n2")),
        ("PodStatus", "resourceClaimStatuses", json!([{"name": "gpu", "resourceClaimName": "rc-generated"}])),
        ("PodStatus", "startTime", json!("2025-01-01T00:00:00Z")),
        ("Container", "image", json!("other-image")),
        ("Container", "name", json!("renamed")),
        ("Container", "ports", json!([{"containerPort": 8080, "hostPort": 8080}])),
        ("Container", "resources", json!({"requests": {"cpu": "70m"}})),
        ("Container", "restartPolicy", json!("Always")),
        ("ResourceRequirements", "limits", json!({"memory": "1Gi"})),
        ("ResourceRequirements", "requests", json!({"cpu": "60m"})),
        // Which container uses which claim is the kubelet's; ksched checks each names an entry.
        ("ResourceRequirements", "claims", json!([{"name": "no-such-entry"}])),
    ];
    // Status fields are read for a pod on a node (a resize's allocations, its conditions).
    let base_of = |ty: &str| {
        if ty == "PodStatus" {
            with(base_pod(), "/spec/nodeName", json!("n0"))
        } else {
            base_pod()
        }
    };
    let mut checked = Vec::new();
    for (ty, field, sample) in pod_samples {
        let base = pod_print(&base_of(ty));
        let at = match *ty {
            "PodSpec" => format!("/spec/{field}"),
            "PodStatus" => format!("/status/{field}"),
            // The init container: restartPolicy is an init container's field.
            "Container" => format!("/spec/initContainers/0/{field}"),
            _ => format!("/spec/containers/0/resources/{field}"),
        };
        let got = pod_print(&with(base_of(ty), &at, sample.clone()));
        assert_ne!(got, base, "{ty}.{field} = {sample} changes nothing conversion makes");
        checked.push((*ty, *field));
    }
    let node_samples: &[(&str, &str, Value)] = &[
        ("NodeSpec", "taints", json!([{"key": "k", "effect": "NoSchedule"}])),
        ("NodeSpec", "unschedulable", json!(true)),
        ("NodeStatus", "allocatable", json!({"cpu": "8"})),
        ("NodeStatus", "conditions", json!([{"type": "Ready", "status": "False"}])),
        ("NodeStatus", "images", json!([{"names": ["img"], "sizeBytes": 1000}])),
    ];
    let node_print = |v: &Value| {
        let kn: k::Node = serde_json::from_value(v.clone()).unwrap();
        format!("{:?}", node_from_k8s(&kn).unwrap())
    };
    let base = node_print(&base_node());
    for (ty, field, sample) in node_samples {
        let at = if *ty == "NodeSpec" { format!("/spec/{field}") } else { format!("/status/{field}") };
        assert_ne!(node_print(&with(base_node(), &at, sample.clone())), base, "{ty}.{field}");
        checked.push((*ty, *field));
    }
    // Capacity stands in for a missing allocatable (the API server's defaulting).
    let only_capacity = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                               "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}});
    assert_eq!(node_print(&only_capacity), base, "capacity without allocatable is the allocatable");
    checked.extend([("NodeStatus", "capacity"), ("PodStatus", "phase")]);
    // Every `Read` entry of the tables had its check.
    for (ty, table) in [
        ("PodSpec", POD_SPEC),
        ("PodStatus", POD_STATUS),
        ("NodeSpec", NODE_SPEC),
        ("NodeStatus", NODE_STATUS),
        ("Container", CONTAINER),
        ("ResourceRequirements", RESOURCE_REQUIREMENTS),
    ] {
        for (name, c) in table {
            if *c == Read {
                assert!(checked.contains(&(ty, *name)), "{ty}.{name} is listed as read but has no sample here");
            }
        }
    }
}

#[test]
fn host_network_ports_are_host_ports() {
    let v = with(base_pod(), "/spec/hostNetwork", json!(true));
    let p = pod_from_k8s(&serde_json::from_value(v).unwrap()).unwrap();
    assert_eq!(p.containers[0].ports[0].host_port, 80);
    let p = pod_from_k8s(&serde_json::from_value(base_pod()).unwrap()).unwrap();
    assert_eq!(p.containers[0].ports[0].host_port, 0);
}

/// Each warned field gives its warning, naming the object and the field, and the summary
/// counts them per field.
#[test]
fn warned_fields_name_the_object_and_field_and_are_counted() {
    let workload_ref = with(base_pod(), "/spec/workloadRef", json!({"name": "w", "podGroup": "g"}));
    let extended = with(
        base_pod(),
        "/status/extendedResourceClaimStatus",
        json!({"resourceClaimName": "x", "requestMappings": []}),
    );
    let mut sum = Unmodelled::default();
    for (v, field) in [(&workload_ref, "spec.workloadRef"), (&extended, "status.extendedResourceClaimStatus")] {
        let kp: k::Pod = serde_json::from_value(v.clone()).unwrap();
        let got = pod_unmodelled(&kp);
        assert_eq!(got.len(), 1, "{field}: {got:?}");
        assert_eq!((got[0].object.as_str(), got[0].field), ("pod default/p", field));
        assert!(got[0].to_string().starts_with(&format!("pod default/p: {field}: not modelled by ksched")));
        sum.add(got[0].clone());
    }
    assert!(pod_unmodelled(&serde_json::from_value(base_pod()).unwrap()).is_empty());
    let node = with(base_node(), "/status/declaredFeatures", json!(["GuaranteedQoSPodCPUResize"]));
    let got = node_unmodelled(&serde_json::from_value(node).unwrap());
    assert_eq!(
        got.iter().map(|w| (w.object.as_str(), w.field)).collect::<Vec<_>>(),
        [("node n", "status.declaredFeatures")]
    );
    sum.add(got[0].clone());
    sum.add(got[0].clone());
    assert_eq!(sum.fields["status.declaredFeatures"].count, 2);
    let lines = sum.lines();
    assert_eq!(lines.len(), 3);
    assert!(lines
        .iter()
        .any(|l| l.starts_with("spec.workloadRef: not modelled by ksched, set on 1 object(s) (pod default/p)")));
    // Every warned entry of the tables is found by the functions above.
    let warned: Vec<&str> = [POD_SPEC, POD_STATUS, NODE_SPEC, NODE_STATUS, CONTAINER, RESOURCE_REQUIREMENTS]
        .iter()
        .flat_map(|t| t.iter())
        .filter(|(_, c)| matches!(c, Warned(_)))
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(warned, ["workloadRef", "extendedResourceClaimStatus", "declaredFeatures"]);
}

/// Manifests count the warned fields per field (pods, nodes, workload templates), and refuse
/// them under `--strict`, naming the file, the object and the field.
#[test]
fn manifests_count_unmodelled_fields_and_strict_refuses_them() {
    use crate::manifest::{Manifests, ReadOptions};
    let pod = |name: &str| {
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\n\
             spec: {{workloadRef: {{name: w, podGroup: g}}, containers: [{{name: c, image: i}}]}}\n"
        )
    };
    let node = "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {declaredFeatures: [X]}\n";
    let deployment = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  \
                      selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    \
                      spec: {workloadRef: {name: w, podGroup: g}, containers: [{name: c, image: i}]}\n";
    let text = pod("a") + &pod("b") + node + deployment;
    let mut m = Manifests::new();
    m.read_str("in.yaml", &text).unwrap();
    let counts: Vec<(&str, usize)> = m.unmodelled.fields.iter().map(|(f, c)| (*f, c.count)).collect();
    assert_eq!(counts, [("spec.workloadRef", 3), ("status.declaredFeatures", 1)]);
    assert_eq!(
        m.unmodelled.fields["spec.workloadRef"].objects,
        ["pod default/a", "pod default/b", "deployment default/d (its pod template)"]
    );
    let mut strict = Manifests::with_options(ReadOptions { strict: true, ..ReadOptions::default() });
    let err = strict.read_str("in.yaml", &text).unwrap_err().to_string();
    assert!(err.contains("in.yaml") && err.contains("pod default/a") && err.contains("spec.workloadRef"), "{err}");
    assert!(err.contains("not modelled by ksched"), "{err}");
}

/// DRA fields of alpha features (gates off in v1.35): each is warned about once per object,
/// named with its object, counted per field over the manifests, an error under `--strict`;
/// objects without them read quietly.
#[test]
fn dra_alpha_fields_with_their_gate_off_are_warned_about() {
    use crate::manifest::{Manifests, ReadOptions};
    let slice = "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: d\n  \
                 pool: {name: p, generation: 1, resourceSliceCount: 1}\n  perDeviceNodeSelection: true\n  \
                 sharedCounters: [{name: c, counters: {mem: {value: 1Gi}}}]\n  devices:\n  \
                 - name: a\n    nodeName: n1\n    consumesCounters: [{counterSet: c, counters: {mem: {value: 1Gi}}}]\n    \
                 taints: [{key: k, effect: NoSchedule}]\n    bindingConditions: [ready]\n    \
                 bindingFailureConditions: [failed]\n    bindsToNode: true\n    allowMultipleAllocations: true\n    \
                 capacity: {mem: {value: 1Gi, requestPolicy: {default: 1Mi}}}\n  \
                 - name: b\n    nodeSelector: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Exists}]}]}\n  \
                 - name: c\n    allNodes: true\n";
    let request = "devices:\n    requests:\n    - name: r\n      exactly: {deviceClassName: gpu, \
                   tolerations: [{key: k, operator: Exists}], capacity: {requests: {mem: 1Gi}}}\n    \
                   - name: f\n      firstAvailable: [{name: s, deviceClassName: gpu, tolerations: [{operator: Exists}], \
                   capacity: {requests: {mem: 1Gi}}}]\n    constraints: [{distinctAttribute: x}]\n";
    let claim = format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c, namespace: ns}}\nspec:\n  {request}\
         status:\n  allocation:\n    devices:\n      results:\n      - {{request: r, driver: d, pool: p, device: a, \
         tolerations: [{{operator: Exists}}], consumedCapacity: {{mem: 1Gi}}, shareID: 0a1b2c3d-0000-0000-0000-000000000000, \
         bindingConditions: [ready], bindingFailureConditions: [failed]}}\n"
    );
    let template = format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {{name: t}}\nspec:\n  spec:\n    {}",
        request.trim_end().replace('\n', "\n  ") + "\n"
    );
    let class = "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec: {extendedResourceName: example.com/gpu}\n";
    let text = format!("{slice}{claim}{template}{class}");
    let mut m = Manifests::new();
    m.read_str("dra.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<(&str, usize, &str)> =
        m.unmodelled.fields.iter().map(|(f, c)| (*f, c.count, c.objects[0].as_str())).collect();
    let want: Vec<(&str, usize, &str)> = vec![
        ("spec.devices.constraints[].distinctAttribute", 1, "resourceclaim ns/c"),
        ("spec.devices.requests[].exactly.capacity", 1, "resourceclaim ns/c"),
        ("spec.devices.requests[].exactly.tolerations", 1, "resourceclaim ns/c"),
        ("spec.devices.requests[].firstAvailable[].capacity", 1, "resourceclaim ns/c"),
        ("spec.devices.requests[].firstAvailable[].tolerations", 1, "resourceclaim ns/c"),
        ("spec.devices[].allNodes", 1, "resourceslice s"),
        ("spec.devices[].allowMultipleAllocations", 1, "resourceslice s"),
        ("spec.devices[].bindingConditions", 1, "resourceslice s"),
        ("spec.devices[].bindingFailureConditions", 1, "resourceslice s"),
        ("spec.devices[].bindsToNode", 1, "resourceslice s"),
        ("spec.devices[].capacity[].requestPolicy", 1, "resourceslice s"),
        ("spec.devices[].consumesCounters", 1, "resourceslice s"),
        ("spec.devices[].nodeName", 1, "resourceslice s"),
        ("spec.devices[].nodeSelector", 1, "resourceslice s"),
        ("spec.devices[].taints", 1, "resourceslice s"),
        ("spec.extendedResourceName", 1, "deviceclass gpu"),
        ("spec.perDeviceNodeSelection", 1, "resourceslice s"),
        ("spec.sharedCounters", 1, "resourceslice s"),
        ("spec.spec.devices.constraints[].distinctAttribute", 1, "resourceclaimtemplate default/t"),
        ("spec.spec.devices.requests[].exactly.capacity", 1, "resourceclaimtemplate default/t"),
        ("spec.spec.devices.requests[].exactly.tolerations", 1, "resourceclaimtemplate default/t"),
        ("spec.spec.devices.requests[].firstAvailable[].capacity", 1, "resourceclaimtemplate default/t"),
        ("spec.spec.devices.requests[].firstAvailable[].tolerations", 1, "resourceclaimtemplate default/t"),
        ("status.allocation.devices.results[].bindingConditions", 1, "resourceclaim ns/c"),
        ("status.allocation.devices.results[].bindingFailureConditions", 1, "resourceclaim ns/c"),
        ("status.allocation.devices.results[].consumedCapacity", 1, "resourceclaim ns/c"),
        ("status.allocation.devices.results[].shareID", 1, "resourceclaim ns/c"),
        ("status.allocation.devices.results[].tolerations", 1, "resourceclaim ns/c"),
    ];
    assert_eq!(got, want);
    let taints = &m.unmodelled.fields["spec.devices[].taints"];
    assert!(
        taints.why.starts_with("device taints and tolerations (DRADeviceTaints, alpha, off in v1.35)"),
        "{}",
        taints.why
    );
    // Without them: nothing.
    let plain = "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: q}\nspec:\n  driver: d\n  \
                 pool: {name: p, generation: 1, resourceSliceCount: 1}\n  nodeName: n1\n  devices: [{name: a, capacity: {mem: {value: 1Gi}}}]\n";
    let mut m = Manifests::new();
    m.read_str("plain.yaml", plain).unwrap_or_else(|e| panic!("{e}"));
    assert!(m.unmodelled.is_empty(), "{:?}", m.unmodelled);
    // --strict: the first is an error naming the file, the object and the field.
    let mut m = Manifests::with_options(ReadOptions { strict: true, ..ReadOptions::default() });
    let err = m.read_str("dra.yaml", class).unwrap_err().to_string();
    assert!(
        err.contains("deviceclass gpu") && err.contains("spec.extendedResourceName") && err.contains("dra.yaml"),
        "{err}"
    );
    // Every leaf named above is a field of v1.35's types.
    for (ty, fields) in [
        (
            wire_fields::<kr::Device>(),
            &[
                "consumesCounters",
                "nodeName",
                "nodeSelector",
                "allNodes",
                "taints",
                "bindingConditions",
                "bindingFailureConditions",
                "bindsToNode",
                "allowMultipleAllocations",
            ][..],
        ),
        (wire_fields::<kr::ResourceSliceSpec>(), &["sharedCounters", "perDeviceNodeSelection"]),
        (wire_fields::<kr::DeviceCapacity>(), &["requestPolicy"]),
        (wire_fields::<kr::ExactDeviceRequest>(), &["tolerations", "capacity"]),
        (wire_fields::<kr::DeviceSubRequest>(), &["tolerations", "capacity"]),
        (wire_fields::<kr::DeviceConstraint>(), &["distinctAttribute"]),
        (
            wire_fields::<kr::DeviceRequestAllocationResult>(),
            &["tolerations", "consumedCapacity", "shareID", "bindingConditions", "bindingFailureConditions"],
        ),
        (wire_fields::<kr::DeviceClassSpec>(), &["extendedResourceName"]),
    ] {
        for f in fields {
            assert!(ty.contains(f), "{f} not in {ty:?}");
        }
    }
}
