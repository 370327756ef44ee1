//! resource.k8s.io objects → `api::dra`: DeviceClass, ResourceSlice, ResourceClaim,
//! ResourceClaimTemplate, read as v1. The older served versions (v1beta2, v1beta1) are first
//! rewritten into v1's shape as the API server converts them (`to_v1`), so every input path
//! reads them alike. Every rejection names the object and the field; CEL selectors are
//! compiled here (a bad expression is refused as the API server refuses it).

use k8s_openapi::api::core::v1 as k;
use k8s_openapi::api::resource::v1 as kr;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::Value;

use crate::convert::node_selector_term;
use crate::ConvertError;
use ksched_engine::api::dra::{
    AllocationMode, AllocationResult, AttributeValue, CelSelector, ClaimSpec, ConsumerRef, Device, DeviceClass,
    DeviceConstraint, DeviceRequest, DeviceResult, ExactRequest, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
    SliceNodes,
};
use ksched_engine::api::{NodeSelector, Quantity, Sym};

/// The API versions of resource.k8s.io read (v1 natively, the others rewritten).
pub const API_VERSIONS: &[&str] = &["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"];

/// The DRA kinds.
pub const KINDS: &[&str] = &["DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"];

fn selectors(obj: &str, field: &str, s: Option<&Vec<kr::DeviceSelector>>) -> Result<Vec<CelSelector>, ConvertError> {
    let mut out = Vec::new();
    for (i, sel) in s.into_iter().flatten().enumerate() {
        let f = format!("{field}[{i}].cel.expression");
        let Some(cel) = &sel.cel else {
            return Err(ConvertError::new(obj, format!("{field}[{i}].cel"), "Required value"));
        };
        out.push(CelSelector::compile(&cel.expression).map_err(|e| ConvertError::new(obj, f, e))?);
    }
    Ok(out)
}

pub(crate) fn node_selector(obj: &str, field: &str, s: &k::NodeSelector) -> Result<NodeSelector, ConvertError> {
    let mut terms = Vec::new();
    for (i, t) in s.node_selector_terms.iter().enumerate() {
        terms.push(node_selector_term(obj, &format!("{field}.nodeSelectorTerms[{i}]"), t)?);
    }
    Ok(NodeSelector { terms })
}

fn kv(map: Option<&std::collections::BTreeMap<String, String>>) -> Vec<(Sym, Sym)> {
    map.into_iter().flatten().map(|(k, v)| (Sym::new(k), Sym::new(v))).collect()
}

/// A semantic version as upstream accepts one (`MAJOR.MINOR.PATCH[-pre][+build]`).
pub(crate) fn valid_semver(v: &str) -> bool {
    semver_parts(v).is_some()
}

fn semver_parts(v: &str) -> Option<()> {
    let core = v.split(['-', '+']).next()?;
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 {
        return None;
    }
    for p in parts {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || (p.len() > 1 && p.starts_with('0')) {
            return None;
        }
    }
    Some(())
}

pub fn device_class_from_k8s(c: &kr::DeviceClass) -> Result<DeviceClass, ConvertError> {
    let name = c.metadata.name.as_deref().unwrap_or("");
    let obj = format!("deviceclass {name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let selectors = selectors(&obj, "spec.selectors", c.spec.selectors.as_ref())?;
    Ok(DeviceClass { name: Sym::new(name), selectors })
}

fn device(obj: &str, field: &str, d: &kr::Device) -> Result<Device, ConvertError> {
    if d.name.is_empty() {
        return Err(ConvertError::new(obj, format!("{field}.name"), "Required value"));
    }
    let mut out = Device::new(&d.name);
    for (name, a) in d.attributes.iter().flatten() {
        let f = format!("{field}.attributes[{name}]");
        let set = [a.int.is_some(), a.bool.is_some(), a.string.is_some(), a.version.is_some()];
        if set.iter().filter(|&&s| s).count() != 1 {
            return Err(ConvertError::new(obj, f, "exactly one of int, bool, string, version must be set"));
        }
        let v = if let Some(i) = a.int {
            AttributeValue::Int(i)
        } else if let Some(b) = a.bool {
            AttributeValue::Bool(b)
        } else if let Some(s) = &a.string {
            AttributeValue::String(s.as_str().into())
        } else {
            let v = a.version.as_deref().unwrap_or("");
            if !valid_semver(v) {
                return Err(ConvertError::new(obj, format!("{f}.version"), format!("{v:?} is not a semantic version")));
            }
            AttributeValue::Version(v.into())
        };
        out.attributes.push((Sym::new(name), v));
    }
    for (name, c) in d.capacity.iter().flatten() {
        let q = Quantity::parse(&c.value.0)
            .map_err(|e| ConvertError::new(obj, format!("{field}.capacity[{name}].value"), e.to_string()))?;
        out.capacity.push((Sym::new(name), q));
    }
    out.needs_feature = if d.consumes_counters.as_ref().is_some_and(|c| !c.is_empty()) {
        Some("DRAPartitionableDevices")
    } else if d.binding_conditions.as_ref().is_some_and(|c| !c.is_empty()) {
        Some("DRADeviceBindingConditions")
    } else {
        None
    };
    Ok(out)
}

pub fn resource_slice_from_k8s(s: &kr::ResourceSlice) -> Result<ResourceSlice, ConvertError> {
    let name = s.metadata.name.as_deref().unwrap_or("");
    let obj = format!("resourceslice {name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let spec = &s.spec;
    if spec.driver.is_empty() {
        return Err(ConvertError::new(&obj, "spec.driver", "Required value"));
    }
    if spec.pool.name.is_empty() {
        return Err(ConvertError::new(&obj, "spec.pool.name", "Required value"));
    }
    if spec.pool.resource_slice_count <= 0 {
        return Err(ConvertError::new(&obj, "spec.pool.resourceSliceCount", "must be greater than zero"));
    }
    if spec.pool.generation < 0 {
        return Err(ConvertError::new(&obj, "spec.pool.generation", "must be greater than or equal to 0"));
    }
    let node_name = spec.node_name.as_deref().filter(|n| !n.is_empty());
    let chosen = [
        node_name.is_some(),
        spec.node_selector.is_some(),
        spec.all_nodes == Some(true),
        spec.per_device_node_selection == Some(true),
    ];
    if chosen.iter().filter(|&&c| c).count() != 1 {
        return Err(ConvertError::new(
            &obj,
            "spec",
            "exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection must be set",
        ));
    }
    let nodes = if let Some(n) = node_name {
        SliceNodes::Node(Sym::new(n))
    } else if let Some(sel) = &spec.node_selector {
        let sel = node_selector(&obj, "spec.nodeSelector", sel)?;
        if sel.terms.len() != 1 {
            return Err(ConvertError::new(&obj, "spec.nodeSelector.nodeSelectorTerms", "must have exactly one term"));
        }
        SliceNodes::Selector(sel)
    } else if spec.all_nodes == Some(true) {
        SliceNodes::AllNodes
    } else {
        SliceNodes::PerDevice
    };
    let mut devices = Vec::new();
    for (i, d) in spec.devices.iter().flatten().enumerate() {
        devices.push(device(&obj, &format!("spec.devices[{i}]"), d)?);
    }
    Ok(ResourceSlice {
        name: Sym::new(name),
        driver: Sym::new(&spec.driver),
        pool: Sym::new(&spec.pool.name),
        generation: spec.pool.generation,
        resource_slice_count: spec.pool.resource_slice_count,
        nodes,
        devices,
    })
}

/// `allocationMode` and `count` with the API server's defaults (ExactCount, 1).
fn mode_and_count(
    obj: &str,
    field: &str,
    mode: Option<&str>,
    count: Option<i64>,
) -> Result<(AllocationMode, i64), ConvertError> {
    match mode.unwrap_or("") {
        "" | "ExactCount" => {
            let n = count.unwrap_or(0);
            let n = if n == 0 { 1 } else { n };
            if n < 0 {
                return Err(ConvertError::new(obj, format!("{field}.count"), "must be greater than zero"));
            }
            Ok((AllocationMode::ExactCount, n))
        }
        "All" => {
            if count.is_some_and(|c| c != 0) {
                return Err(ConvertError::new(
                    obj,
                    format!("{field}.count"),
                    "must not be specified when allocationMode is 'All'",
                ));
            }
            Ok((AllocationMode::All, 0))
        }
        other => Err(crate::convert::bad_enum(obj, &format!("{field}.allocationMode"), other, &["All", "ExactCount"])),
    }
}

/// A claim's `spec.devices` (`field` is the path to it).
pub fn claim_spec(obj: &str, field: &str, d: &kr::DeviceClaim) -> Result<ClaimSpec, ConvertError> {
    let mut out = ClaimSpec::default();
    for (i, r) in d.requests.iter().flatten().enumerate() {
        let f = format!("{field}.requests[{i}]");
        if r.name.is_empty() {
            return Err(ConvertError::new(obj, format!("{f}.name"), "Required value"));
        }
        let req = match (&r.exactly, &r.first_available) {
            (Some(e), None) => {
                let f = format!("{f}.exactly");
                if e.device_class_name.is_empty() {
                    return Err(ConvertError::new(obj, format!("{f}.deviceClassName"), "Required value"));
                }
                let (mode, count) = mode_and_count(obj, &f, e.allocation_mode.as_deref(), e.count)?;
                DeviceRequest::Exactly(ExactRequest {
                    name: Sym::new(&r.name),
                    device_class: Sym::new(&e.device_class_name),
                    selectors: selectors(obj, &format!("{f}.selectors"), e.selectors.as_ref())?,
                    mode,
                    count,
                    admin_access: e.admin_access,
                    has_tolerations: e.tolerations.as_ref().is_some_and(|t| !t.is_empty()),
                })
            }
            (None, Some(subs)) if !subs.is_empty() => {
                let mut subrequests = Vec::new();
                for (j, s) in subs.iter().enumerate() {
                    let f = format!("{f}.firstAvailable[{j}]");
                    if s.name.is_empty() {
                        return Err(ConvertError::new(obj, format!("{f}.name"), "Required value"));
                    }
                    if s.device_class_name.is_empty() {
                        return Err(ConvertError::new(obj, format!("{f}.deviceClassName"), "Required value"));
                    }
                    let (mode, count) = mode_and_count(obj, &f, s.allocation_mode.as_deref(), s.count)?;
                    subrequests.push(ExactRequest {
                        name: Sym::new(&s.name),
                        device_class: Sym::new(&s.device_class_name),
                        selectors: selectors(obj, &format!("{f}.selectors"), s.selectors.as_ref())?,
                        mode,
                        count,
                        admin_access: None,
                        has_tolerations: s.tolerations.as_ref().is_some_and(|t| !t.is_empty()),
                    });
                }
                DeviceRequest::FirstAvailable { name: Sym::new(&r.name), subrequests }
            }
            _ => return Err(ConvertError::new(obj, f, "exactly one of exactly, firstAvailable must be set")),
        };
        if out.requests.iter().any(|x| x.name() == req.name()) {
            return Err(ConvertError::new(
                obj,
                format!("{field}.requests[{i}].name"),
                format!("Duplicate value: {:?}", r.name),
            ));
        }
        out.requests.push(req);
    }
    for (i, c) in d.constraints.iter().flatten().enumerate() {
        let f = format!("{field}.constraints[{i}]");
        let requests: Vec<Sym> = c.requests.iter().flatten().map(|r| Sym::new(r)).collect();
        for r in &requests {
            let base = r.as_str().split('/').next().unwrap_or("");
            if !out.requests.iter().any(|q| q.name().as_str() == base) {
                return Err(ConvertError::new(
                    obj,
                    format!("{f}.requests"),
                    format!("{r:?}: must be the name of a request in the claim"),
                ));
            }
        }
        let match_attribute = match (&c.match_attribute, &c.distinct_attribute) {
            (Some(a), None) => {
                if !a.contains('/') {
                    return Err(ConvertError::new(
                        obj,
                        format!("{f}.matchAttribute"),
                        "must be a fully qualified name (domain/name)",
                    ));
                }
                Some(Sym::new(a))
            }
            (None, Some(_)) => None,
            _ => return Err(ConvertError::new(obj, f, "exactly one of matchAttribute, distinctAttribute must be set")),
        };
        out.constraints.push(DeviceConstraint { requests, match_attribute });
    }
    Ok(out)
}

fn allocation(obj: &str, a: &kr::AllocationResult) -> Result<AllocationResult, ConvertError> {
    let mut results = Vec::new();
    for (i, r) in a.devices.iter().flat_map(|d| d.results.iter().flatten()).enumerate() {
        let f = format!("status.allocation.devices.results[{i}]");
        for (v, name) in [(&r.request, "request"), (&r.driver, "driver"), (&r.pool, "pool"), (&r.device, "device")] {
            if v.is_empty() {
                return Err(ConvertError::new(obj, format!("{f}.{name}"), "Required value"));
            }
        }
        results.push(DeviceResult {
            request: Sym::new(&r.request),
            driver: Sym::new(&r.driver),
            pool: Sym::new(&r.pool),
            device: Sym::new(&r.device),
            admin_access: r.admin_access == Some(true),
        });
    }
    let node_selector =
        a.node_selector.as_ref().map(|s| node_selector(obj, "status.allocation.nodeSelector", s)).transpose()?;
    Ok(AllocationResult { results, node_selector })
}

pub fn resource_claim_from_k8s(c: &kr::ResourceClaim) -> Result<ResourceClaim, ConvertError> {
    let meta = &c.metadata;
    let name = meta.name.as_deref().unwrap_or("");
    let namespace = meta.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let obj = format!("resourceclaim {namespace}/{name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let spec = c.spec.devices.as_ref().map(|d| claim_spec(&obj, "spec.devices", d)).transpose()?.unwrap_or_default();
    let mut claim = ResourceClaim::new(namespace, name, spec);
    if let Some(uid) = meta.uid.as_deref().filter(|u| !u.is_empty()) {
        claim.uid = Sym::new(uid);
    }
    claim.owner_pod = owner_pod(meta);
    claim.deleting = meta.deletion_timestamp.is_some();
    claim.labels = kv(meta.labels.as_ref());
    claim.annotations = kv(meta.annotations.as_ref());
    if let Some(status) = &c.status {
        claim.allocation = status.allocation.as_ref().map(|a| allocation(&obj, a)).transpose()?;
        for (i, r) in status.reserved_for.iter().flatten().enumerate() {
            if r.name.is_empty() || r.uid.is_empty() {
                return Err(ConvertError::new(&obj, format!("status.reservedFor[{i}]"), "name and uid are required"));
            }
            claim.reserved_for.push(ConsumerRef {
                resource: Sym::new(&r.resource),
                name: Sym::new(&r.name),
                uid: Sym::new(&r.uid),
            });
        }
        if !claim.reserved_for.is_empty() && claim.allocation.is_none() {
            return Err(ConvertError::new(
                &obj,
                "status.reservedFor",
                "may not be set while the claim is not allocated",
            ));
        }
    }
    Ok(claim)
}

fn owner_pod(meta: &meta::ObjectMeta) -> Option<Sym> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == "Pod" && o.api_version == "v1")
        .map(|o| Sym::new(&o.uid))
}

pub fn resource_claim_template_from_k8s(t: &kr::ResourceClaimTemplate) -> Result<ResourceClaimTemplate, ConvertError> {
    let meta = &t.metadata;
    let name = meta.name.as_deref().unwrap_or("");
    let namespace = meta.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let obj = format!("resourceclaimtemplate {namespace}/{name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let spec =
        t.spec.spec.devices.as_ref().map(|d| claim_spec(&obj, "spec.spec.devices", d)).transpose()?.unwrap_or_default();
    let m = t.spec.metadata.as_ref();
    Ok(ResourceClaimTemplate {
        namespace: Sym::new(namespace),
        name: Sym::new(name),
        labels: kv(m.and_then(|m| m.labels.as_ref())),
        annotations: kv(m.and_then(|m| m.annotations.as_ref())),
        spec: std::sync::Arc::new(spec),
    })
}

/// Rewrites a resource.k8s.io object of `api_version` into v1's shape, as the API server
/// converts it (v1beta2 has v1's shape; v1beta1 keeps a request's fields at the top of the
/// request and a device's under `basic`), and sets `apiVersion` to v1.
pub fn to_v1(kind: &str, api_version: &str, value: &mut Value) {
    if api_version == "resource.k8s.io/v1beta1" {
        match kind {
            "ResourceSlice" => {
                if let Some(devices) = value.pointer_mut("/spec/devices").and_then(Value::as_array_mut) {
                    for d in devices {
                        if let Some(obj) = d.as_object_mut() {
                            if let Some(Value::Object(basic)) = obj.remove("basic") {
                                for (k, v) in basic {
                                    obj.entry(k).or_insert(v);
                                }
                            }
                        }
                    }
                }
            }
            "ResourceClaim" => requests_to_v1(value.pointer_mut("/spec/devices/requests")),
            "ResourceClaimTemplate" => requests_to_v1(value.pointer_mut("/spec/spec/devices/requests")),
            _ => {}
        }
    }
    if let Some(obj) = value.as_object_mut() {
        obj.insert("apiVersion".into(), "resource.k8s.io/v1".into());
    }
}

/// v1beta1 requests: `{name, deviceClassName, selectors, allocationMode, count, adminAccess,
/// tolerations}` becomes `{name, exactly: {...}}`; `{name, firstAvailable}` stays.
fn requests_to_v1(requests: Option<&mut Value>) {
    let Some(requests) = requests.and_then(Value::as_array_mut) else { return };
    for r in requests {
        let Some(obj) = r.as_object_mut() else { continue };
        if obj.contains_key("firstAvailable") || obj.contains_key("exactly") {
            continue;
        }
        let mut exactly = serde_json::Map::new();
        for key in ["deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity"]
        {
            if let Some(v) = obj.remove(key) {
                exactly.insert(key.into(), v);
            }
        }
        obj.insert("exactly".into(), Value::Object(exactly));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(json: Value) -> Result<ResourceSlice, ConvertError> {
        resource_slice_from_k8s(&serde_json::from_value(json).unwrap())
    }

    fn claim(json: Value) -> Result<ResourceClaim, ConvertError> {
        resource_claim_from_k8s(&serde_json::from_value(json).unwrap())
    }

    #[test]
    fn slice_reads_devices_and_nodes() {
        let s = slice(serde_json::json!({
            "metadata": {"name": "n1-gpu"},
            "spec": {"driver": "gpu.example.com", "pool": {"name": "n1", "generation": 2, "resourceSliceCount": 1},
              "nodeName": "n1",
              "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "h100"}, "v": {"version": "1.2.3"}},
                 "capacity": {"memory": {"value": "80Gi"}}}]}
        }))
        .unwrap();
        assert_eq!(s.nodes, SliceNodes::Node(Sym::new("n1")));
        assert_eq!(s.generation, 2);
        assert_eq!(s.devices[0].attributes.len(), 2);
        assert_eq!(s.devices[0].capacity[0].1.value(), 80 << 30);
    }

    #[test]
    fn bad_objects_name_object_and_field() {
        let cases = [
            (
                serde_json::json!({"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}}),
                "resourceslice s: spec: exactly one of nodeName",
            ),
            (
                serde_json::json!({"metadata": {"name": "s"}, "spec": {"driver": "d", "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "a", "attributes": {"v": {"version": "1.2"}}}]}}),
                "resourceslice s: spec.devices[0].attributes[v].version:",
            ),
        ];
        for (json, want) in cases {
            let e = slice(json).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
        }
        let e = claim(serde_json::json!({"metadata": {"name": "c", "namespace": "ml"}, "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "g", "selectors": [{"cel": {"expression": "device.driver =="}}]}}]}}}))
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "resourceclaim ml/c: spec.devices.requests[0].exactly.selectors[0].cel.expression: CEL compile error"
            ),
            "{e}"
        );
    }

    #[test]
    fn claim_defaults_count_and_mode() {
        let c = claim(serde_json::json!({"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "g"}},
            {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "g", "allocationMode": "All"}]}]}}}))
        .unwrap();
        match &c.spec.requests[0] {
            DeviceRequest::Exactly(r) => assert_eq!((r.mode, r.count), (AllocationMode::ExactCount, 1)),
            other => panic!("{other:?}"),
        }
        match &c.spec.requests[1] {
            DeviceRequest::FirstAvailable { subrequests, .. } => assert_eq!(subrequests[0].mode, AllocationMode::All),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn v1beta1_is_converted_to_v1() {
        let mut v = serde_json::json!({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
            "metadata": {"name": "c"}, "spec": {"devices": {"requests": [{"name": "a", "deviceClassName": "g", "count": 2}]}}});
        to_v1("ResourceClaim", "resource.k8s.io/v1beta1", &mut v);
        let c = claim(v).unwrap();
        match &c.spec.requests[0] {
            DeviceRequest::Exactly(r) => assert_eq!((r.device_class.as_str(), r.count), ("g", 2)),
            other => panic!("{other:?}"),
        }
        let mut s = serde_json::json!({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "d", "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": "a", "basic": {"attributes": {"m": {"int": 3}}}}]}});
        to_v1("ResourceSlice", "resource.k8s.io/v1beta1", &mut s);
        assert_eq!(slice(s).unwrap().devices[0].attributes[0].1, AttributeValue::Int(3));
    }
}
