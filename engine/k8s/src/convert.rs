//! Field-by-field conversion of k8s-openapi's `Pod`, `Node`, `Namespace`, `Service`,
//! `PriorityClass`, `PodDisruptionBudget` and the storage objects (`PersistentVolume`,
//! `PersistentVolumeClaim`, `StorageClass`, `CSINode`, `CSIDriver`, `CSIStorageCapacity`)
//! into ours.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as k;
use k8s_openapi::api::policy::v1 as kpolicy;
use k8s_openapi::api::scheduling::v1 as kscheduling;
use k8s_openapi::api::storage::v1 as kstorage;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::ConvertError;
use ksched_engine::api::{is_pod_level_resource, PodBuilder, ResourceList};
use ksched_engine::api::{
    AccessMode, ClaimRef, CsiDriver, CsiNode, CsiStorageCapacity, PersistentVolume, PersistentVolumeClaim,
    PersistentVolumeSource, StorageClass, TopologySelectorTerm, VolumeBindingMode, VolumePhase,
};
use ksched_engine::api::{
    Affinity, ConditionStatus, Container, ContainerPort, InclusionPolicy, IntOrPercent, LabelSelector, Labels, Node,
    NodeAffinity, NodeConditionType, NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodAffinity, PodAffinityTerm, PodDisruptionBudget, PreemptionPolicy, PreferredSchedulingTerm, PriorityClass,
    Protocol, Quantity, Resource, ResourceName, SelectorOp, SelectorRequirement, SignedSource, Sym, Taint, TaintEffect,
    Toleration, TolerationOp, TopologySpreadConstraint, Volume, VolumeSource, WeightedPodAffinityTerm,
    WhenUnsatisfiable,
};
use ksched_engine::features::{Feature, FeatureGates};
use ksched_engine::snapshot::objects::Service;
use ksched_engine::util::time::Timestamp;

/// Converts a pod, its requests summed under v1.35's default feature gates (see
/// `pod_from_k8s_with`). The object name used in errors is `pod NAMESPACE/NAME`.
pub fn pod_from_k8s(pod: &k::Pod) -> Result<Pod, ConvertError> {
    pod_from_k8s_with(pod, &FeatureGates::default())
}

/// Converts a pod; `gates` decide how its requests are summed (PodLevelResources,
/// InPlacePodVerticalScaling...) and whether the API server's defaulting of pod-level
/// requests applies. The object name used in errors is `pod NAMESPACE/NAME`.
pub fn pod_from_k8s_with(pod: &k::Pod, gates: &FeatureGates) -> Result<Pod, ConvertError> {
    let meta = &pod.metadata;
    let name = meta.name.as_deref().unwrap_or("");
    let namespace = meta.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let obj = format!("pod {namespace}/{name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let spec = pod.spec.as_ref().ok_or_else(|| ConvertError::new(&obj, "spec", "missing"))?;
    let mut b = Pod::builder(name).namespace(namespace).labels(labels(meta.labels.as_ref()));
    if let Some(uid) = meta.uid.as_deref().filter(|u| !u.is_empty()) {
        b = b.uid(uid);
    }
    if let Some(t) = &meta.creation_timestamp {
        b = b.creation_timestamp(timestamp(t));
    }
    if let Some(t) = &meta.deletion_timestamp {
        b = b.deletion_timestamp(timestamp(t));
    }
    if let Some(owner) = meta.owner_references.iter().flatten().find(|o| o.controller == Some(true)) {
        b = b.owner_ref(&owner.kind, &owner.name, &owner.uid);
    }
    b = b.priority(spec.priority.unwrap_or(0));
    b = b.preemption_policy(preemption_policy(&obj, "spec.preemptionPolicy", spec.preemption_policy.as_deref())?);
    if let Some(c) = spec.priority_class_name.as_deref().filter(|c| !c.is_empty()) {
        b = b.priority_class_name(c);
    }
    if let Some(s) = spec.termination_grace_period_seconds {
        if s < 0 {
            return Err(ConvertError::new(
                &obj,
                "spec.terminationGracePeriodSeconds",
                "must be greater than or equal to 0",
            ));
        }
        b = b.termination_grace_period_seconds(s);
    }
    if let Some(s) = spec.scheduler_name.as_deref().filter(|s| !s.is_empty()) {
        b = b.scheduler_name(s);
    }
    if let Some(s) = spec.active_deadline_seconds {
        if s <= 0 {
            return Err(ConvertError::new(&obj, "spec.activeDeadlineSeconds", "must be greater than 0"));
        }
        b = b.active_deadline_seconds(s);
    }
    if let Some(d) = meta.annotations.as_ref().and_then(|a| a.get(RUN_DURATION_ANNOTATION)) {
        let field = format!("metadata.annotations[{RUN_DURATION_ANNOTATION}]");
        b = b.run_duration(parse_run_duration(d).map_err(|e| ConvertError::new(&obj, field, e))?);
    }
    let mut containers = Vec::with_capacity(spec.containers.len());
    for (i, c) in spec.containers.iter().enumerate() {
        containers.push(container(&obj, &format!("spec.containers[{i}]"), c, false)?);
    }
    let mut init_containers = Vec::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let sidecar = match c.restart_policy.as_deref() {
            None => false,
            Some("Always") => true,
            Some(other) => {
                return Err(bad_enum(&obj, &format!("spec.initContainers[{i}].restartPolicy"), other, &["Always"]))
            }
        };
        init_containers.push(container(&obj, &format!("spec.initContainers[{i}]"), c, sidecar)?);
    }
    if spec.host_network == Some(true) {
        // The API server's defaulting: a host-network pod's ports are its host's.
        for c in containers.iter_mut().chain(init_containers.iter_mut()) {
            for p in c.ports.iter_mut().filter(|p| p.host_port == 0) {
                p.host_port = p.container_port;
            }
        }
    }
    if let Some(res) = &spec.resources {
        let defaulted = gates.enabled(Feature::PodLevelResources);
        b = b.pod_level_requests(pod_level_requests(&obj, res, &containers, &init_containers, defaulted)?);
    }
    for c in containers {
        b = b.container_spec(c);
    }
    for c in init_containers {
        b = b.init_container_spec(c);
    }
    if let Some(o) = &spec.overhead {
        b = b.overhead(resource_list(&obj, "spec.overhead", o)?);
    }
    for (k, v) in spec.node_selector.iter().flatten() {
        b = b.node_selector(k, v);
    }
    if let Some(a) = &spec.affinity {
        b = b.affinity(affinity(&obj, a)?);
    }
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        b = b.toleration(toleration(&obj, &format!("spec.tolerations[{i}]"), t)?);
    }
    for (i, c) in spec.topology_spread_constraints.iter().flatten().enumerate() {
        b = b.spread(spread(&obj, &format!("spec.topologySpreadConstraints[{i}]"), c)?);
    }
    for v in spec.volumes.iter().flatten() {
        b = b.volume(volume(v));
    }
    for g in spec.scheduling_gates.iter().flatten() {
        b = b.scheduling_gate(&g.name);
    }
    b = pod_resource_claims(&obj, b, pod)?;
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        b = b.node_name(n);
    }
    if let Some(status) = &pod.status {
        if let Some(n) = status.nominated_node_name.as_deref().filter(|n| !n.is_empty()) {
            b = b.nominated_node_name(n);
        }
        if let Some(t) = &status.start_time {
            b = b.start_time(timestamp(t));
        }
        // The first DisruptionTarget condition decides, as upstream's check does.
        let target = status.conditions.iter().flatten().find(|c| c.type_ == "DisruptionTarget");
        if target.is_some_and(|c| c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler")) {
            b = b.preempted_by_scheduler();
        }
        b = resize_status(&obj, b, status)?;
    }
    Ok(b.feature_gates(*gates).build())
}

/// DRA: `spec.resourceClaims` (each entry names a claim or a template), the containers'
/// `resources.claims` (each must name an entry), `status.resourceClaimStatuses`.
fn pod_resource_claims(obj: &str, mut b: PodBuilder, pod: &k::Pod) -> Result<PodBuilder, ConvertError> {
    use ksched_engine::api::dra::PodClaimSource;
    let Some(spec) = pod.spec.as_ref() else { return Ok(b) };
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in spec.resource_claims.iter().flatten().enumerate() {
        let f = format!("spec.resourceClaims[{i}]");
        if c.name.is_empty() {
            return Err(ConvertError::new(obj, format!("{f}.name"), "Required value"));
        }
        if names.contains(&c.name.as_str()) {
            return Err(ConvertError::new(obj, format!("{f}.name"), format!("Duplicate value: {:?}", c.name)));
        }
        names.push(&c.name);
        let claim = c.resource_claim_name.as_deref().filter(|n| !n.is_empty());
        let template = c.resource_claim_template_name.as_deref().filter(|n| !n.is_empty());
        let source = match (claim, template) {
            (Some(n), None) => PodClaimSource::Claim(Sym::new(n)),
            (None, Some(t)) => PodClaimSource::Template(Sym::new(t)),
            _ => {
                return Err(ConvertError::new(
                    obj,
                    f,
                    "exactly one of resourceClaimName, resourceClaimTemplateName must be set",
                ))
            }
        };
        b = b.resource_claim(&c.name, source);
    }
    let no_init = Vec::new();
    let containers = [
        ("spec.containers", &spec.containers),
        ("spec.initContainers", spec.init_containers.as_ref().unwrap_or(&no_init)),
    ];
    for (field, list) in containers {
        for (i, c) in list.iter().enumerate() {
            for (j, rc) in c.resources.iter().flat_map(|r| r.claims.iter().flatten()).enumerate() {
                if !names.contains(&rc.name.as_str()) {
                    return Err(ConvertError::new(
                        obj,
                        format!("{field}[{i}].resources.claims[{j}].name"),
                        format!("Not found: {:?}: must be the name of an entry of spec.resourceClaims", rc.name),
                    ));
                }
            }
        }
    }
    for (i, st) in pod.status.iter().flat_map(|s| s.resource_claim_statuses.iter().flatten()).enumerate() {
        if !names.contains(&st.name.as_str()) {
            return Err(ConvertError::new(
                obj,
                format!("status.resourceClaimStatuses[{i}].name"),
                format!("Not found: {:?}: must be the name of an entry of spec.resourceClaims", st.name),
            ));
        }
        b = b.resource_claim_status(&st.name, st.resource_claim_name.as_deref().filter(|n| !n.is_empty()));
    }
    Ok(b)
}

/// What the status says about resources (in-place resize): each container entry's
/// `allocatedResources` and `resources.requests`, the first `PodResizePending` condition's
/// reason, and the pod-level `status.resources` / `status.allocatedResources`.
fn resize_status(obj: &str, mut b: PodBuilder, status: &k::PodStatus) -> Result<PodBuilder, ConvertError> {
    let entries = [
        ("status.containerStatuses", &status.container_statuses),
        ("status.initContainerStatuses", &status.init_container_statuses),
    ];
    for (field, list) in entries {
        for (i, cs) in list.iter().flatten().enumerate() {
            let at = format!("{field}[{i}]");
            let allocated = cs
                .allocated_resources
                .as_ref()
                .map(|m| named_list(obj, &format!("{at}.allocatedResources"), m))
                .transpose()?;
            let actual = cs
                .resources
                .as_ref()
                .map(|r| {
                    r.requests.as_ref().map_or(Ok(ResourceList::default()), |m| {
                        named_list(obj, &format!("{at}.resources.requests"), m)
                    })
                })
                .transpose()?;
            if allocated.is_some() || actual.is_some() {
                b = b.container_status(&cs.name, allocated, actual);
            }
        }
    }
    let pending = status.conditions.iter().flatten().find(|c| c.type_ == "PodResizePending");
    if pending.is_some_and(|c| c.reason.as_deref() == Some("Infeasible")) {
        b = b.resize_infeasible();
    }
    let actual = status
        .resources
        .as_ref()
        .map(|r| {
            r.requests.as_ref().map_or(Ok(ResourceList::default()), |m| named_list(obj, "status.resources.requests", m))
        })
        .transpose()?;
    let allocated =
        status.allocated_resources.as_ref().map(|m| named_list(obj, "status.allocatedResources", m)).transpose()?;
    if actual.is_some() || allocated.is_some() {
        b = b.pod_resource_status(actual, allocated);
    }
    Ok(b)
}

/// `spec.resources.requests` as the scheduler reads it, after the API server's defaulting
/// (PodLevelResources on: `defaulted`): where pod-level limits are set, a resource without a
/// pod-level request gets the containers' aggregated request (cpu, memory), else its pod-level
/// limit; hugepages without a pod-level request or limit get the containers' aggregate as
/// their limit first.
fn pod_level_requests(
    obj: &str,
    res: &k::ResourceRequirements,
    containers: &[Container],
    init_containers: &[Container],
    defaulted: bool,
) -> Result<ResourceList, ConvertError> {
    let empty = BTreeMap::new();
    let requests = res.requests.as_ref().unwrap_or(&empty);
    let limits = res.limits.as_ref().unwrap_or(&empty);
    let mut out = named_list(obj, "spec.resources.requests", requests)?;
    if !defaulted || (requests.is_empty() && limits.is_empty()) {
        return Ok(out);
    }
    let mut limit_list = named_list(obj, "spec.resources.limits", limits)?;
    let aggregate = ksched_engine::api::requests::aggregate_container_requests(containers, init_containers);
    // Hugepage limits default from the containers' (their requests equal their limits).
    let mut hugepage_limits = Vec::new();
    for (name, v) in aggregate.amounts.scalar.iter() {
        let key = name.as_str();
        if key.starts_with("hugepages-") && !requests.contains_key(key) && !limits.contains_key(key) {
            hugepage_limits.push((ResourceName::Scalar(name), v));
        }
    }
    for (name, v) in hugepage_limits {
        limit_list.set(name, v);
    }
    let has_limits = !limits.is_empty() || limit_list.amounts.scalar.iter().next().is_some();
    if !has_limits {
        return Ok(out);
    }
    // Overcommittable resources (cpu, memory) from the containers' aggregate.
    if aggregate.has_cpu && !out.has_cpu {
        out.set(ResourceName::Cpu, aggregate.amounts.milli_cpu);
    }
    if aggregate.has_memory && !out.has_memory {
        out.set(ResourceName::Memory, aggregate.amounts.memory);
    }
    // Then the pod-level limits of what is still missing.
    if limit_list.has_cpu && !out.has_cpu {
        out.set(ResourceName::Cpu, limit_list.amounts.milli_cpu);
    }
    if limit_list.has_memory && !out.has_memory {
        out.set(ResourceName::Memory, limit_list.amounts.memory);
    }
    for (name, v) in limit_list.amounts.scalar.iter() {
        let r = ResourceName::Scalar(name);
        if is_pod_level_resource(r) && out.amounts.scalar.get(name) == 0 && !requests.contains_key(name.as_str()) {
            out.set(r, v);
        }
    }
    Ok(out)
}

/// A resource list that remembers which of cpu and memory it names.
fn named_list(obj: &str, field: &str, list: &BTreeMap<String, KQuantity>) -> Result<ResourceList, ConvertError> {
    let amounts = resource_list(obj, field, list)?;
    Ok(ResourceList { amounts, has_cpu: list.contains_key("cpu"), has_memory: list.contains_key("memory") })
}

/// The annotation giving how long a pod runs once started (`PodData::run_duration`): a Go
/// duration (`90s`, `1h30m`) or a number of seconds (`600`).
pub const RUN_DURATION_ANNOTATION: &str = "ksched.io/run-duration";

/// A run duration as the annotation or a trace gives it: a Go duration or a bare number of
/// seconds.
pub fn parse_run_duration(s: &str) -> Result<std::time::Duration, String> {
    ksched_engine::util::duration::parse_cli_duration(s)
        .map_err(|_| format!("Invalid value: {s:?}: a run duration is a Go duration (90s, 1h30m) or seconds (600)"))
}

/// Converts a PriorityClass (`priorityclass NAME` in errors); `preemptionPolicy` defaults to
/// `PreemptLowerPriority` as the API server does.
pub fn priority_class_from_k8s(pc: &kscheduling::PriorityClass) -> Result<PriorityClass, ConvertError> {
    let name = pc.metadata.name.as_deref().unwrap_or("");
    let obj = format!("priorityclass {name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    Ok(PriorityClass {
        name: Sym::new(name),
        value: pc.value,
        global_default: pc.global_default.unwrap_or(false),
        preemption_policy: preemption_policy(&obj, "preemptionPolicy", pc.preemption_policy.as_deref())?,
    })
}

/// Converts a PodDisruptionBudget (`poddisruptionbudget NAMESPACE/NAME` in errors): the spec,
/// `status.disruptionsAllowed` and the names in `status.disruptedPods`. The spec is validated
/// as the API server does (`PodDisruptionBudget::validate`).
pub fn pdb_from_k8s(pdb: &kpolicy::PodDisruptionBudget) -> Result<PodDisruptionBudget, ConvertError> {
    let meta = &pdb.metadata;
    let name = meta.name.as_deref().unwrap_or("");
    let namespace = meta.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let obj = format!("poddisruptionbudget {namespace}/{name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let spec = pdb.spec.as_ref();
    let int_or_percent = |field: &str, v: Option<&IntOrString>| -> Result<Option<IntOrPercent>, ConvertError> {
        match v {
            None => Ok(None),
            Some(IntOrString::Int(i)) => Ok(Some(IntOrPercent::Int(*i))),
            Some(IntOrString::String(s)) => {
                IntOrPercent::parse_percent(s).map(Some).map_err(|m| ConvertError::new(&obj, field, m))
            }
        }
    };
    let out = PodDisruptionBudget {
        namespace: Sym::new(namespace),
        name: Sym::new(name),
        selector: spec
            .and_then(|s| s.selector.as_ref())
            .map(|s| label_selector(&obj, "spec.selector", s))
            .transpose()?,
        min_available: int_or_percent("spec.minAvailable", spec.and_then(|s| s.min_available.as_ref()))?,
        max_unavailable: int_or_percent("spec.maxUnavailable", spec.and_then(|s| s.max_unavailable.as_ref()))?,
        disruptions_allowed: pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed),
        disrupted_pods: pdb
            .status
            .iter()
            .flat_map(|s| s.disrupted_pods.iter().flatten())
            .map(|(pod, _)| Arc::from(pod.as_str()))
            .collect(),
    };
    out.validate().map_err(|e| ConvertError { object: e.object, field: e.field, message: e.message })?;
    Ok(out)
}

/// Converts a Namespace (`namespace NAME` in errors) into its name and labels. The API server
/// labels every namespace `kubernetes.io/metadata.name: NAME`; an object without that label
/// gets it here, as it would have on creation.
pub fn namespace_from_k8s(ns: &k::Namespace) -> Result<(Sym, Labels), ConvertError> {
    let name = ns.metadata.name.as_deref().unwrap_or("");
    if name.is_empty() {
        return Err(ConvertError::new(&format!("namespace {name}"), "metadata.name", "must not be empty"));
    }
    let mut l = labels(ns.metadata.labels.as_ref());
    if l.get(Sym::new(NAMESPACE_NAME_LABEL)).is_none() {
        l.insert(Sym::new(NAMESPACE_NAME_LABEL), Sym::new(name));
    }
    Ok((Sym::new(name), l))
}

/// The label the API server puts on every namespace, holding its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Converts a Service (`service NAMESPACE/NAME` in errors): only its pod selector.
pub fn service_from_k8s(svc: &k::Service) -> Result<Service, ConvertError> {
    let name = svc.metadata.name.as_deref().unwrap_or("");
    let namespace = svc.metadata.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    if name.is_empty() {
        return Err(ConvertError::new(&format!("service {namespace}/{name}"), "metadata.name", "must not be empty"));
    }
    Ok(Service {
        namespace: Sym::new(namespace),
        name: Sym::new(name),
        selector: labels(svc.spec.as_ref().and_then(|s| s.selector.as_ref())),
    })
}

fn access_modes(obj: &str, field: &str, modes: Option<&Vec<String>>) -> Result<Vec<AccessMode>, ConvertError> {
    modes
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, m)| {
            AccessMode::parse(m).ok_or_else(|| {
                bad_enum(
                    obj,
                    &format!("{field}[{i}]"),
                    m,
                    &["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"],
                )
            })
        })
        .collect()
}

/// Converts a PersistentVolume (`persistentvolume NAME` in errors): labels, class, the source
/// the volume filters tell apart and the required node affinity.
pub fn pv_from_k8s(pv: &k::PersistentVolume) -> Result<PersistentVolume, ConvertError> {
    let name = pv.metadata.name.as_deref().unwrap_or("");
    let obj = format!("persistentvolume {name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let spec = pv.spec.as_ref().ok_or_else(|| ConvertError::new(&obj, "spec", "missing"))?;
    let source = if let Some(c) = &spec.csi {
        PersistentVolumeSource::Csi { driver: Sym::new(&c.driver), volume_handle: Sym::new(&c.volume_handle) }
    } else if let Some(d) = &spec.gce_persistent_disk {
        PersistentVolumeSource::GcePersistentDisk { pd_name: Sym::new(&d.pd_name) }
    } else if let Some(d) = &spec.aws_elastic_block_store {
        PersistentVolumeSource::AwsElasticBlockStore { volume_id: Sym::new(&d.volume_id) }
    } else if let Some(d) = &spec.azure_disk {
        PersistentVolumeSource::AzureDisk { disk_name: Sym::new(&d.disk_name), data_disk_uri: Sym::new(&d.disk_uri) }
    } else if let Some(d) = &spec.cinder {
        PersistentVolumeSource::Cinder { volume_id: Sym::new(&d.volume_id) }
    } else {
        PersistentVolumeSource::Other
    };
    let mut out = PersistentVolume::new(name, source);
    out.labels = labels(pv.metadata.labels.as_ref());
    out.storage_class = Sym::new(spec.storage_class_name.as_deref().unwrap_or(""));
    if let Some(q) = spec.capacity.as_ref().and_then(|c| c.get("storage")) {
        out.capacity = storage_quantity(&obj, "spec.capacity.storage", q)?;
    }
    out.access_modes = access_modes(&obj, "spec.accessModes", spec.access_modes.as_ref())?.into();
    out.block = volume_mode(&obj, spec.volume_mode.as_deref())?;
    out.claim_ref = spec.claim_ref.as_ref().map(|r| ClaimRef {
        namespace: Sym::new(r.namespace.as_deref().unwrap_or("")),
        name: Sym::new(r.name.as_deref().unwrap_or("")),
        uid: Sym::new(r.uid.as_deref().unwrap_or("")),
    });
    out.phase = match pv.status.as_ref().and_then(|s| s.phase.as_deref()) {
        // A volume without a status is new: the PV controller makes it Available (or Bound).
        None => VolumePhase::Available,
        Some(p) => VolumePhase::parse(p).ok_or_else(|| {
            bad_enum(&obj, "status.phase", p, &["Pending", "Available", "Bound", "Released", "Failed"])
        })?,
    };
    out.reclaim_policy = Sym::new(spec.persistent_volume_reclaim_policy.as_deref().unwrap_or(""));
    out.deleting = pv.metadata.deletion_timestamp.is_some();
    if let Some(req) = spec.node_affinity.as_ref().and_then(|a| a.required.as_ref()) {
        let mut sel = NodeSelector::default();
        for (i, t) in req.node_selector_terms.iter().enumerate() {
            sel.terms.push(node_selector_term(&obj, &format!("spec.nodeAffinity.required.nodeSelectorTerms[{i}]"), t)?);
        }
        out.node_affinity = Some(sel);
    }
    Ok(out)
}

/// Converts a PersistentVolumeClaim (`persistentvolumeclaim NAMESPACE/NAME` in errors): the
/// bound volume, the class (`spec.storageClassName`, else the beta annotation) and the access
/// modes.
pub fn pvc_from_k8s(pvc: &k::PersistentVolumeClaim) -> Result<PersistentVolumeClaim, ConvertError> {
    let name = pvc.metadata.name.as_deref().unwrap_or("");
    let namespace = pvc.metadata.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let obj = format!("persistentvolumeclaim {namespace}/{name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let spec = pvc.spec.as_ref();
    let mut out = PersistentVolumeClaim::new(namespace, name);
    out.volume_name = Sym::new(spec.and_then(|s| s.volume_name.as_deref()).unwrap_or(""));
    let beta = pvc.metadata.annotations.as_ref().and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"));
    out.storage_class = Sym::new(spec.and_then(|s| s.storage_class_name.as_ref()).or(beta).map_or("", String::as_str));
    out.access_modes = access_modes(&obj, "spec.accessModes", spec.and_then(|s| s.access_modes.as_ref()))?.into();
    out.uid = Sym::new(pvc.metadata.uid.as_deref().unwrap_or(""));
    if let Some(q) =
        spec.and_then(|s| s.resources.as_ref()).and_then(|r| r.requests.as_ref()).and_then(|r| r.get("storage"))
    {
        out.request = Some(storage_quantity(&obj, "spec.resources.requests.storage", q)?);
    }
    out.block = volume_mode(&obj, spec.and_then(|s| s.volume_mode.as_deref()))?;
    if let Some(sel) = spec.and_then(|s| s.selector.as_ref()) {
        out.selector = Some(label_selector(&obj, "spec.selector", sel)?);
    }
    let annotation = |key: &str| pvc.metadata.annotations.as_ref().and_then(|a| a.get(key));
    out.bind_completed = annotation("pv.kubernetes.io/bind-completed").is_some();
    out.selected_node = Sym::new(annotation("volume.kubernetes.io/selected-node").map_or("", String::as_str));
    let phase = pvc.status.as_ref().and_then(|s| s.phase.as_deref());
    match phase {
        None | Some("Pending") => {}
        Some("Bound") => out.phase_bound = true,
        Some("Lost") => out.lost = true,
        Some(p) => return Err(bad_enum(&obj, "status.phase", p, &["Pending", "Bound", "Lost"])),
    }
    out.deleting = pvc.metadata.deletion_timestamp.is_some();
    Ok(out)
}

/// A storage size in bytes.
fn storage_quantity(obj: &str, field: &str, q: &KQuantity) -> Result<i64, ConvertError> {
    quantity(obj, field, ResourceName::EphemeralStorage, q)
}

/// `volumeMode`: true for Block, false for Filesystem (the default).
fn volume_mode(obj: &str, mode: Option<&str>) -> Result<bool, ConvertError> {
    match mode {
        None | Some("Filesystem") => Ok(false),
        Some("Block") => Ok(true),
        Some(m) => Err(bad_enum(obj, "spec.volumeMode", m, &["Block", "Filesystem"])),
    }
}

/// Converts a StorageClass (`storageclass NAME` in errors); `volumeBindingMode` defaults to
/// Immediate as the API server does.
pub fn storage_class_from_k8s(sc: &kstorage::StorageClass) -> Result<StorageClass, ConvertError> {
    let name = sc.metadata.name.as_deref().unwrap_or("");
    let obj = format!("storageclass {name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let mode = match sc.volume_binding_mode.as_deref() {
        None => VolumeBindingMode::Immediate,
        Some(m) => VolumeBindingMode::parse(m)
            .ok_or_else(|| bad_enum(&obj, "volumeBindingMode", m, &["Immediate", "WaitForFirstConsumer"]))?,
    };
    let mut out = StorageClass::new(name, &sc.provisioner).binding_mode(mode);
    if let Some(p) = &sc.reclaim_policy {
        out.reclaim_policy = Sym::new(p);
    }
    for (i, t) in sc.allowed_topologies.iter().flatten().enumerate() {
        let mut term = TopologySelectorTerm::default();
        for (j, e) in t.match_label_expressions.iter().flatten().enumerate() {
            if e.key.is_empty() {
                let field = format!("allowedTopologies[{i}].matchLabelExpressions[{j}].key");
                return Err(ConvertError::new(&obj, &field, "must not be empty"));
            }
            term.match_label_expressions.push((Sym::new(&e.key), e.values.iter().map(|v| Sym::new(v)).collect()));
        }
        out.allowed_topologies.push(term);
    }
    Ok(out)
}

/// Converts a CSIDriver (`csidriver NAME` in errors): whether it tracks storage capacity.
pub fn csi_driver_from_k8s(d: &kstorage::CSIDriver) -> Result<CsiDriver, ConvertError> {
    let name = d.metadata.name.as_deref().unwrap_or("");
    if name.is_empty() {
        return Err(ConvertError::new("csidriver ", "metadata.name", "must not be empty"));
    }
    Ok(CsiDriver { name: Sym::new(name), storage_capacity: d.spec.storage_capacity.unwrap_or(false) })
}

/// Converts a CSIStorageCapacity (`csistoragecapacity NAMESPACE/NAME` in errors).
pub fn csi_storage_capacity_from_k8s(c: &kstorage::CSIStorageCapacity) -> Result<CsiStorageCapacity, ConvertError> {
    let name = c.metadata.name.as_deref().unwrap_or("");
    let namespace = c.metadata.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let obj = format!("csistoragecapacity {namespace}/{name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    if c.storage_class_name.is_empty() {
        return Err(ConvertError::new(&obj, "storageClassName", "must not be empty"));
    }
    let node_topology = match &c.node_topology {
        Some(t) => Some(label_selector(&obj, "nodeTopology", t)?),
        None => None,
    };
    let size = |field: &str, q: Option<&KQuantity>| q.map(|q| storage_quantity(&obj, field, q)).transpose();
    Ok(CsiStorageCapacity {
        namespace: Sym::new(namespace),
        name: Sym::new(name),
        storage_class: Sym::new(&c.storage_class_name),
        node_topology,
        capacity: size("capacity", c.capacity.as_ref())?,
        maximum_volume_size: size("maximumVolumeSize", c.maximum_volume_size.as_ref())?,
    })
}

/// Converts a CSINode (`csinode NAME` in errors): its drivers and their allocatable counts.
pub fn csi_node_from_k8s(c: &kstorage::CSINode) -> Result<CsiNode, ConvertError> {
    let name = c.metadata.name.as_deref().unwrap_or("");
    if name.is_empty() {
        return Err(ConvertError::new(&format!("csinode {name}"), "metadata.name", "must not be empty"));
    }
    let mut out = CsiNode::new(name);
    for d in &c.spec.drivers {
        out = out.driver(&d.name, d.allocatable.as_ref().and_then(|a| a.count).map(i64::from));
    }
    Ok(out)
}

/// Converts a node. Allocatable falls back to capacity when the status has none (as the
/// scheduler's NodeInfo does).
pub fn node_from_k8s(node: &k::Node) -> Result<Node, ConvertError> {
    let name = node.metadata.name.as_deref().unwrap_or("");
    let obj = format!("node {name}");
    if name.is_empty() {
        return Err(ConvertError::new(&obj, "metadata.name", "must not be empty"));
    }
    let mut b = Node::builder(name);
    for (k, v) in node.metadata.labels.iter().flatten() {
        b = b.label(k, v);
    }
    for (k, v) in node.metadata.annotations.iter().flatten() {
        b = b.annotation(k, v);
    }
    if let Some(spec) = &node.spec {
        b = b.unschedulable(spec.unschedulable.unwrap_or(false));
        for (i, t) in spec.taints.iter().flatten().enumerate() {
            let field = format!("spec.taints[{i}].effect");
            let effect =
                TaintEffect::parse(&t.effect).ok_or_else(|| bad_enum(&obj, &field, &t.effect, TAINT_EFFECTS))?;
            b = b.taint(Taint::new(&t.key, t.value.as_deref().unwrap_or(""), effect));
        }
    }
    let mut conditions_set = false;
    if let Some(status) = &node.status {
        let (field, list) = match (&status.allocatable, &status.capacity) {
            (Some(a), _) => ("status.allocatable", Some(a)),
            (None, Some(c)) => ("status.capacity", Some(c)),
            (None, None) => ("status.allocatable", None),
        };
        if let Some(list) = list {
            b = b.allocatable(resource_list(&obj, field, list)?);
        }
        for c in status.conditions.iter().flatten() {
            let kind = match c.type_.as_str() {
                "Ready" => NodeConditionType::Ready,
                "MemoryPressure" => NodeConditionType::MemoryPressure,
                "DiskPressure" => NodeConditionType::DiskPressure,
                "PIDPressure" => NodeConditionType::PidPressure,
                "NetworkUnavailable" => NodeConditionType::NetworkUnavailable,
                _ => continue,
            };
            let st = match c.status.as_str() {
                "True" => ConditionStatus::True,
                "False" => ConditionStatus::False,
                _ => ConditionStatus::Unknown,
            };
            conditions_set = true;
            b = b.condition(kind, st);
        }
        for img in status.images.iter().flatten() {
            let names: Vec<&str> = img.names.iter().flatten().map(String::as_str).collect();
            if !names.is_empty() {
                b = b.image(&names, img.size_bytes.unwrap_or(0));
            }
        }
    }
    let mut n = b.build();
    if !conditions_set {
        // An object with no conditions reported: keep the builder's Ready=True only when the
        // status said nothing at all (synthetic manifests); a real node always reports Ready.
        n.conditions.retain(|c| c.kind == NodeConditionType::Ready);
    }
    Ok(n)
}

const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// `PreemptLowerPriority` when unset.
fn preemption_policy(obj: &str, field: &str, v: Option<&str>) -> Result<PreemptionPolicy, ConvertError> {
    match v {
        None | Some("PreemptLowerPriority") => Ok(PreemptionPolicy::PreemptLowerPriority),
        Some("Never") => Ok(PreemptionPolicy::Never),
        Some(other) => Err(bad_enum(obj, field, other, &["PreemptLowerPriority", "Never"])),
    }
}

pub(crate) fn bad_enum(obj: &str, field: &str, got: &str, allowed: &[&str]) -> ConvertError {
    ConvertError::new(obj, field, format!("unsupported value {got:?}; supported values: {}", allowed.join(", ")))
}

pub(crate) fn timestamp(t: &meta::Time) -> Timestamp {
    let ns = t.0.as_nanosecond();
    Timestamp(u64::try_from(ns).unwrap_or(0))
}

fn labels(map: Option<&BTreeMap<String, String>>) -> Labels {
    let mut l = Labels::new();
    for (k, v) in map.into_iter().flatten() {
        l.insert(Sym::new(k), Sym::new(v));
    }
    l
}

fn quantity(obj: &str, field: &str, name: ResourceName, q: &KQuantity) -> Result<i64, ConvertError> {
    let parsed = Quantity::parse(&q.0).map_err(|e| ConvertError::new(obj, field, e.to_string()))?;
    Ok(match name {
        ResourceName::Cpu => parsed.milli_value(),
        _ => parsed.value(),
    })
}

fn resource_list(obj: &str, field: &str, list: &BTreeMap<String, KQuantity>) -> Result<Resource, ConvertError> {
    let mut r = Resource::default();
    for (k, q) in list {
        let name = ResourceName::parse(k);
        let v = quantity(obj, &format!("{field}.{k}"), name, q)?;
        if v < 0 {
            return Err(ConvertError::new(obj, format!("{field}.{k}"), "must be greater than or equal to 0"));
        }
        r.set(name, v);
    }
    Ok(r)
}

fn container(obj: &str, field: &str, c: &k::Container, restartable: bool) -> Result<Container, ConvertError> {
    let mut out = Container {
        name: Sym::new(&c.name),
        image: Sym::new(c.image.as_deref().unwrap_or("")),
        restartable,
        ..Container::default()
    };
    if let Some(res) = &c.resources {
        // API defaulting: a resource with a limit and no request requests its limit.
        let mut merged: BTreeMap<&String, (&str, &KQuantity)> = BTreeMap::new();
        for (k, q) in res.limits.iter().flatten() {
            merged.insert(k, ("limits", q));
        }
        for (k, q) in res.requests.iter().flatten() {
            merged.insert(k, ("requests", q));
        }
        for (k, (from, q)) in merged {
            let name = ResourceName::parse(k);
            let f = format!("{field}.resources.{from}.{k}");
            let v = quantity(obj, &f, name, q)?;
            if v < 0 {
                return Err(ConvertError::new(obj, f, "must be greater than or equal to 0"));
            }
            out.requests.set(name, v);
            out.has_cpu_request |= name == ResourceName::Cpu;
            out.has_memory_request |= name == ResourceName::Memory;
        }
    }
    for (i, p) in c.ports.iter().flatten().enumerate() {
        let proto = p.protocol.as_deref().unwrap_or("TCP");
        let protocol = Protocol::parse(proto)
            .ok_or_else(|| bad_enum(obj, &format!("{field}.ports[{i}].protocol"), proto, &["TCP", "UDP", "SCTP"]))?;
        out.ports.push(ContainerPort {
            container_port: p.container_port,
            host_port: p.host_port.unwrap_or(0),
            protocol,
            host_ip: Sym::new(p.host_ip.as_deref().unwrap_or("")),
        });
    }
    Ok(out)
}

/// A pod volume: the sources the volume filters look at, everything else as `Other`; and,
/// for pod signatures, its whole source (`signed_source`).
fn volume(v: &k::Volume) -> Volume {
    modelled_volume(v).with_signed(signed_source(v))
}

/// What pod signatures compare of a volume (upstream signs every source but configMap and
/// secret by its JSON): the source's JSON without the volume's name, after the API server's
/// defaults that would make equal sources differ (a volume without source is an emptyDir;
/// hostPath `type`, downwardAPI's and projected's `defaultMode`, a projected token's
/// `expirationSeconds`), an emptyDir `sizeLimit` by value and notation as upstream's
/// canonical quantities compare. k8s-openapi writes fields in a fixed order and maps by key,
/// so equal sources give equal text.
fn signed_source(v: &k::Volume) -> SignedSource {
    if v.config_map.is_some() || v.secret.is_some() {
        return SignedSource::Excluded;
    }
    let mut s = k::Volume { name: String::new(), ..v.clone() };
    if let Some(h) = &mut s.host_path {
        h.type_.get_or_insert_with(String::new);
    }
    if let Some(d) = &mut s.downward_api {
        d.default_mode.get_or_insert(0o644);
    }
    if let Some(p) = &mut s.projected {
        p.default_mode.get_or_insert(0o644);
        for t in p.sources.iter_mut().flatten().filter_map(|src| src.service_account_token.as_mut()) {
            t.expiration_seconds.get_or_insert(3600);
        }
    }
    if let Some(q) = s.empty_dir.as_mut().and_then(|e| e.size_limit.as_mut()) {
        q.0 = canonical_quantity(&q.0);
    }
    if s == (k::Volume { name: String::new(), ..k::Volume::default() }) {
        s.empty_dir = Some(k::EmptyDirVolumeSource::default());
    }
    match serde_json::to_string(&s) {
        Ok(text) => SignedSource::Canonical(Arc::from(text)),
        Err(_) => SignedSource::FromSource,
    }
}

/// A quantity as upstream's canonical form compares it: its value and its notation (binary
/// suffixes, decimal exponent, decimal suffixes); as written when it does not parse.
fn canonical_quantity(text: &str) -> String {
    let Ok(q) = Quantity::parse(text) else {
        return text.to_owned();
    };
    let t = text.trim();
    let notation = if t.ends_with('i') {
        "binary"
    } else if t.find(['e', 'E']).is_some_and(|i| i + 1 < t.len()) {
        "exponent"
    } else {
        "decimal"
    };
    format!("{}m {notation}", q.milli_value())
}

/// `volume` without the signed source.
fn modelled_volume(v: &k::Volume) -> Volume {
    let name = v.name.as_str();
    let ro = |r: Option<bool>| r.unwrap_or(false);
    if let Some(c) = &v.persistent_volume_claim {
        return Volume::new(
            name,
            VolumeSource::PersistentVolumeClaim { claim_name: Sym::new(&c.claim_name), read_only: ro(c.read_only) },
        );
    }
    if let Some(d) = &v.gce_persistent_disk {
        return Volume::gce_pd(name, &d.pd_name, ro(d.read_only));
    }
    if let Some(d) = &v.aws_elastic_block_store {
        return Volume::aws_ebs(name, &d.volume_id, ro(d.read_only));
    }
    if let Some(d) = &v.azure_disk {
        return Volume::azure_disk(name, &d.disk_name, &d.disk_uri);
    }
    if let Some(d) = &v.cinder {
        return Volume::cinder(name, &d.volume_id);
    }
    if let Some(d) = &v.rbd {
        let monitors: Vec<&str> = d.monitors.iter().map(String::as_str).collect();
        return Volume::rbd(name, &monitors, d.pool.as_deref().unwrap_or("rbd"), &d.image, ro(d.read_only));
    }
    if let Some(d) = &v.iscsi {
        return Volume::iscsi(name, &d.target_portal, &d.iqn, d.lun, ro(d.read_only));
    }
    if let Some(d) = &v.csi {
        return Volume::csi(name, &d.driver);
    }
    if v.ephemeral.is_some() {
        return Volume::ephemeral(name);
    }
    Volume::other(name)
}

fn node_selector_requirement(
    obj: &str,
    field: &str,
    r: &k::NodeSelectorRequirement,
) -> Result<NodeSelectorRequirement, ConvertError> {
    let op = match r.operator.as_str() {
        "In" => NodeSelectorOp::In,
        "NotIn" => NodeSelectorOp::NotIn,
        "Exists" => NodeSelectorOp::Exists,
        "DoesNotExist" => NodeSelectorOp::DoesNotExist,
        "Gt" => NodeSelectorOp::Gt,
        "Lt" => NodeSelectorOp::Lt,
        other => {
            return Err(bad_enum(
                obj,
                &format!("{field}.operator"),
                other,
                &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"],
            ))
        }
    };
    let values = r.values.iter().flatten().map(|v| Sym::new(v)).collect();
    Ok(NodeSelectorRequirement::from_syms(Sym::new(&r.key), op, values))
}

pub(crate) fn node_selector_term(
    obj: &str,
    field: &str,
    t: &k::NodeSelectorTerm,
) -> Result<NodeSelectorTerm, ConvertError> {
    let mut out = NodeSelectorTerm::default();
    for (i, r) in t.match_expressions.iter().flatten().enumerate() {
        out.match_expressions.push(node_selector_requirement(obj, &format!("{field}.matchExpressions[{i}]"), r)?);
    }
    for (i, r) in t.match_fields.iter().flatten().enumerate() {
        out.match_fields.push(node_selector_requirement(obj, &format!("{field}.matchFields[{i}]"), r)?);
    }
    Ok(out)
}

/// A `metav1.LabelSelector`.
pub(crate) fn label_selector(obj: &str, field: &str, s: &meta::LabelSelector) -> Result<LabelSelector, ConvertError> {
    let mut out = LabelSelector { match_labels: labels(s.match_labels.as_ref()), match_expressions: Vec::new() };
    for (i, r) in s.match_expressions.iter().flatten().enumerate() {
        let operator = match r.operator.as_str() {
            "In" => SelectorOp::In,
            "NotIn" => SelectorOp::NotIn,
            "Exists" => SelectorOp::Exists,
            "DoesNotExist" => SelectorOp::DoesNotExist,
            other => {
                return Err(bad_enum(
                    obj,
                    &format!("{field}.matchExpressions[{i}].operator"),
                    other,
                    &["In", "NotIn", "Exists", "DoesNotExist"],
                ))
            }
        };
        out.match_expressions.push(SelectorRequirement {
            key: Sym::new(&r.key),
            operator,
            values: r.values.iter().flatten().map(|v| Sym::new(v)).collect(),
        });
    }
    Ok(out)
}

fn pod_affinity_term(obj: &str, field: &str, t: &k::PodAffinityTerm) -> Result<PodAffinityTerm, ConvertError> {
    let selector = |f: &str, s: &Option<meta::LabelSelector>| -> Result<Option<LabelSelector>, ConvertError> {
        s.as_ref().map(|s| label_selector(obj, &format!("{field}.{f}"), s)).transpose()
    };
    let syms = |v: &Option<Vec<String>>| v.iter().flatten().map(|s| Sym::new(s)).collect::<Vec<_>>();
    if t.topology_key.is_empty() {
        return Err(ConvertError::new(obj, format!("{field}.topologyKey"), "must not be empty"));
    }
    Ok(PodAffinityTerm {
        label_selector: selector("labelSelector", &t.label_selector)?,
        namespaces: syms(&t.namespaces),
        namespace_selector: selector("namespaceSelector", &t.namespace_selector)?,
        topology_key: Sym::new(&t.topology_key),
        match_label_keys: syms(&t.match_label_keys),
        mismatch_label_keys: syms(&t.mismatch_label_keys),
    })
}

fn pod_affinity(
    obj: &str,
    field: &str,
    required: Option<&Vec<k::PodAffinityTerm>>,
    preferred: Option<&Vec<k::WeightedPodAffinityTerm>>,
) -> Result<PodAffinity, ConvertError> {
    let mut out = PodAffinity::default();
    for (i, t) in required.into_iter().flatten().enumerate() {
        out.required.push(pod_affinity_term(
            obj,
            &format!("{field}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
            t,
        )?);
    }
    for (i, w) in preferred.into_iter().flatten().enumerate() {
        let f = format!("{field}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        if !(1..=100).contains(&w.weight) {
            return Err(ConvertError::new(obj, format!("{f}.weight"), "must be in the range 1-100"));
        }
        out.preferred.push(WeightedPodAffinityTerm {
            weight: w.weight,
            term: pod_affinity_term(obj, &format!("{f}.podAffinityTerm"), &w.pod_affinity_term)?,
        });
    }
    Ok(out)
}

fn affinity(obj: &str, a: &k::Affinity) -> Result<Affinity, ConvertError> {
    let mut out = Affinity::default();
    if let Some(na) = &a.node_affinity {
        let f = "spec.affinity.nodeAffinity";
        let mut n = NodeAffinity::default();
        if let Some(req) = &na.required_during_scheduling_ignored_during_execution {
            let mut sel = NodeSelector::default();
            for (i, t) in req.node_selector_terms.iter().enumerate() {
                sel.terms.push(node_selector_term(
                    obj,
                    &format!("{f}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"),
                    t,
                )?);
            }
            n.required = Some(sel);
        }
        for (i, p) in na.preferred_during_scheduling_ignored_during_execution.iter().flatten().enumerate() {
            let pf = format!("{f}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
            if !(1..=100).contains(&p.weight) {
                return Err(ConvertError::new(obj, format!("{pf}.weight"), "must be in the range 1-100"));
            }
            n.preferred.push(PreferredSchedulingTerm {
                weight: p.weight,
                preference: node_selector_term(obj, &format!("{pf}.preference"), &p.preference)?,
            });
        }
        out.node_affinity = Some(n);
    }
    if let Some(pa) = &a.pod_affinity {
        out.pod_affinity = Some(pod_affinity(
            obj,
            "spec.affinity.podAffinity",
            pa.required_during_scheduling_ignored_during_execution.as_ref(),
            pa.preferred_during_scheduling_ignored_during_execution.as_ref(),
        )?);
    }
    if let Some(pa) = &a.pod_anti_affinity {
        out.pod_anti_affinity = Some(pod_affinity(
            obj,
            "spec.affinity.podAntiAffinity",
            pa.required_during_scheduling_ignored_during_execution.as_ref(),
            pa.preferred_during_scheduling_ignored_during_execution.as_ref(),
        )?);
    }
    Ok(out)
}

fn toleration(obj: &str, field: &str, t: &k::Toleration) -> Result<Toleration, ConvertError> {
    let operator = match t.operator.as_deref() {
        None | Some("") | Some("Equal") => TolerationOp::Equal,
        Some("Exists") => TolerationOp::Exists,
        Some(other) => return Err(bad_enum(obj, &format!("{field}.operator"), other, &["Equal", "Exists"])),
    };
    let effect = match t.effect.as_deref() {
        None | Some("") => None,
        Some(e) => {
            Some(TaintEffect::parse(e).ok_or_else(|| bad_enum(obj, &format!("{field}.effect"), e, TAINT_EFFECTS))?)
        }
    };
    let mut out = Toleration::new(t.key.as_deref().unwrap_or(""), operator, t.value.as_deref().unwrap_or(""), effect);
    out.toleration_seconds = t.toleration_seconds;
    Ok(out)
}

fn spread(obj: &str, field: &str, c: &k::TopologySpreadConstraint) -> Result<TopologySpreadConstraint, ConvertError> {
    if c.max_skew <= 0 {
        return Err(ConvertError::new(obj, format!("{field}.maxSkew"), "must be greater than zero"));
    }
    if c.topology_key.is_empty() {
        return Err(ConvertError::new(obj, format!("{field}.topologyKey"), "must not be empty"));
    }
    let when = match c.when_unsatisfiable.as_str() {
        "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
        "ScheduleAnyway" => WhenUnsatisfiable::ScheduleAnyway,
        other => {
            return Err(bad_enum(
                obj,
                &format!("{field}.whenUnsatisfiable"),
                other,
                &["DoNotSchedule", "ScheduleAnyway"],
            ))
        }
    };
    let policy = |f: &str, v: Option<&str>, default: InclusionPolicy| match v {
        None | Some("") => Ok(default),
        Some("Honor") => Ok(InclusionPolicy::Honor),
        Some("Ignore") => Ok(InclusionPolicy::Ignore),
        Some(other) => Err(bad_enum(obj, &format!("{field}.{f}"), other, &["Honor", "Ignore"])),
    };
    if let Some(m) = c.min_domains {
        if m <= 0 {
            return Err(ConvertError::new(obj, format!("{field}.minDomains"), "must be greater than zero"));
        }
    }
    Ok(TopologySpreadConstraint {
        max_skew: c.max_skew,
        topology_key: Sym::new(&c.topology_key),
        when_unsatisfiable: when,
        label_selector: c
            .label_selector
            .as_ref()
            .map(|s| label_selector(obj, &format!("{field}.labelSelector"), s))
            .transpose()?,
        min_domains: c.min_domains,
        node_affinity_policy: policy("nodeAffinityPolicy", c.node_affinity_policy.as_deref(), InclusionPolicy::Honor)?,
        node_taints_policy: policy("nodeTaintsPolicy", c.node_taints_policy.as_deref(), InclusionPolicy::Ignore)?,
        match_label_keys: c.match_label_keys.iter().flatten().map(|k| Sym::new(k)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_json(spec: serde_json::Value) -> k::Pod {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"}},
            "spec": spec,
        }))
        .expect("valid pod json")
    }

    #[test]
    fn pod_conversion_reads_requests_limits_ports_and_sidecars() {
        let p = pod_from_k8s(&pod_json(serde_json::json!({
            "containers": [
                {"name": "a", "image": "nginx", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
                 "ports": [{"containerPort": 80, "hostPort": 8080}]},
                {"name": "b", "image": "x", "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "2"}}}
            ],
            "initContainers": [
                {"name": "s", "image": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}
            ],
            "priority": 7, "nodeSelector": {"disk": "ssd"},
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-0", "readOnly": true}},
                {"name": "disk", "gcePersistentDisk": {"pdName": "pd-1"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"name": "cfg", "configMap": {"name": "c"}}
            ],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
        })))
        .unwrap();
        assert_eq!(p.key(), "prod/web");
        assert_eq!(p.requests().milli_cpu, 1350, "250m + 1 (limit defaulted into request) + 100m sidecar");
        assert_eq!(p.requests().memory, 64 << 20);
        assert_eq!(p.requests().get(ResourceName::Scalar(Sym::new("nvidia.com/gpu"))), 2);
        assert_eq!(p.host_ports().len(), 1);
        assert_eq!(p.host_ports()[0].host_port, 8080);
        assert_eq!(p.priority, 7);
        assert!(p.init_containers[0].restartable);
        assert!(!p.containers[1].has_memory_request);
        assert_eq!(p.tolerations[0].operator, TolerationOp::Exists);
        assert_eq!(p.node_selector.get(Sym::new("disk")), Some(Sym::new("ssd")));
        let sources: Vec<&VolumeSource> = p.volumes.iter().map(|v| &v.source).collect();
        assert_eq!(
            sources,
            vec![
                &VolumeSource::PersistentVolumeClaim { claim_name: Sym::new("data-0"), read_only: true },
                &VolumeSource::GcePersistentDisk { pd_name: Sym::new("pd-1"), read_only: false },
                &VolumeSource::Ephemeral { claim_name: Sym::new("web-scratch") },
                &VolumeSource::Other,
            ]
        );
    }

    #[test]
    fn pod_conversion_errors_name_object_and_field() {
        let cases = [
            (
                serde_json::json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "lots"}}}]}),
                "spec.containers[0].resources.requests.cpu",
            ),
            (
                serde_json::json!({"containers": [], "tolerations": [{"operator": "Sometimes"}]}),
                "spec.tolerations[0].operator",
            ),
            (
                serde_json::json!({"containers": [], "topologySpreadConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
                "spec.topologySpreadConstraints[0].maxSkew",
            ),
            (
                serde_json::json!({"containers": [], "affinity": {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ""}]}}}),
                "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
            ),
            (
                serde_json::json!({"containers": [{"name": "a", "ports": [{"containerPort": 1, "protocol": "ICMP"}]}]}),
                "spec.containers[0].ports[0].protocol",
            ),
        ];
        for (spec, field) in cases {
            let err = pod_from_k8s(&pod_json(spec)).expect_err(field);
            assert_eq!(err.object, "pod prod/web");
            assert_eq!(err.field, field);
        }
    }

    /// Pod-level `spec.resources` after the API server's defaulting: (description, spec,
    /// want the filter's (cpu milli, memory MiB)).
    #[test]
    fn pod_level_requests_table() {
        use serde_json::json;
        let c = |cpu: &str, mem: &str| json!({"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}});
        let cases = [
            (
                "requests as given",
                json!({"containers": [c("100m", "64Mi")], "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}),
                (2000, 1024),
            ),
            (
                "limits only, containers request: requests from the containers' sum",
                json!({"containers": [c("100m", "64Mi"), c("200m", "64Mi")], "resources": {"limits": {"cpu": "4", "memory": "2Gi"}}}),
                (300, 128),
            ),
            (
                "limits only, no container requests: requests from the limits",
                json!({"containers": [{"name": "c"}], "resources": {"limits": {"cpu": "4", "memory": "2Gi"}}}),
                (4000, 2048),
            ),
            (
                "a request given keeps it; the other resource defaulted",
                json!({"containers": [c("100m", "64Mi")], "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4", "memory": "2Gi"}}}),
                (1000, 64),
            ),
            (
                "unsupported pod-level resources are ignored",
                json!({"containers": [c("100m", "64Mi")], "resources": {"requests": {"ephemeral-storage": "1Gi"}}}),
                (100, 64),
            ),
        ];
        for (desc, spec, want) in cases {
            let p = pod_from_k8s(&pod_json(spec)).unwrap();
            assert_eq!((p.requests().milli_cpu, p.requests().memory >> 20), want, "{desc}");
        }
        // Without PodLevelResources: neither defaulted nor counted.
        let mut off = FeatureGates::default();
        off.set(Feature::PodLevelResources, false).unwrap();
        let spec = json!({"containers": [c("100m", "64Mi")], "resources": {"limits": {"cpu": "4", "memory": "2Gi"}}});
        let p = pod_from_k8s_with(&pod_json(spec), &off).unwrap();
        assert_eq!((p.requests().milli_cpu, p.requests().memory >> 20), (100, 64));
    }

    /// In-place resize: what a node counts for a running pod, from its status.
    #[test]
    fn pod_conversion_reads_resize_status() {
        use serde_json::json;
        let pod = |status: serde_json::Value| -> k::Pod {
            serde_json::from_value(json!({
                "metadata": {"name": "run", "namespace": "prod"},
                "spec": {"nodeName": "n1", "containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}}]},
                "status": status,
            }))
            .expect("valid pod json")
        };
        let entry = |alloc: &str, actual: Option<&str>| {
            let mut e = json!({"name": "main", "image": "x", "imageID": "", "ready": true, "restartCount": 0,
                               "allocatedResources": {"cpu": alloc}});
            if let Some(a) = actual {
                e["resources"] = json!({"requests": {"cpu": a}});
            }
            e
        };
        let cases = [
            ("no status", json!({}), 1000),
            ("resized up in progress", json!({"containerStatuses": [entry("2", Some("1500m"))]}), 2000),
            ("allocated only: nothing changes", json!({"containerStatuses": [entry("3", None)]}), 1000),
            (
                "Infeasible: status only",
                json!({"containerStatuses": [entry("500m", Some("600m"))],
                       "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]}),
                600,
            ),
            (
                "Deferred: spec counts",
                json!({"containerStatuses": [entry("500m", Some("600m"))],
                       "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]}),
                1000,
            ),
        ];
        for (desc, status, want) in cases {
            let p = pod_from_k8s(&pod(status)).unwrap();
            assert_eq!(p.accounted_requests().milli_cpu, want, "{desc}");
            assert_eq!(p.requests().milli_cpu, 1000, "{desc}: the filter reads the spec");
        }
        let bad = pod(json!({"containerStatuses": [entry("-1", Some("1"))]}));
        let err = pod_from_k8s(&bad).unwrap_err();
        assert_eq!(err.field, "status.containerStatuses[0].allocatedResources.cpu", "{err}");
    }

    #[test]
    fn pod_conversion_reads_the_lifetime() {
        let with = |annotation: Option<&str>, deadline: Option<i64>| {
            let mut p = pod_json(serde_json::json!({"containers": [], "activeDeadlineSeconds": deadline}));
            if let Some(a) = annotation {
                p.metadata.annotations = Some([(RUN_DURATION_ANNOTATION.to_owned(), a.to_owned())].into());
            }
            pod_from_k8s(&p).map(|p| (p.run_duration, p.active_deadline_seconds))
        };
        let secs = |s: u64| Some(std::time::Duration::from_secs(s));
        // (annotation, activeDeadlineSeconds, want run duration and deadline, or the field in error)
        type Want = Result<(Option<std::time::Duration>, Option<i64>), &'static str>;
        let cases: [(Option<&str>, Option<i64>, Want); 7] = [
            (None, None, Ok((None, None))),
            (Some("90s"), None, Ok((secs(90), None))),
            (Some("1h30m"), Some(600), Ok((secs(5400), Some(600)))),
            (Some("600"), None, Ok((secs(600), None))),
            (None, Some(30), Ok((None, Some(30)))),
            (Some("soon"), None, Err("metadata.annotations[ksched.io/run-duration]")),
            (None, Some(0), Err("spec.activeDeadlineSeconds")),
        ];
        for (annotation, deadline, want) in cases {
            let got = with(annotation, deadline).map_err(|e| e.field);
            assert_eq!(got, want.map_err(str::to_owned), "{annotation:?} {deadline:?}");
        }
    }

    #[test]
    fn pod_conversion_reads_priority_class_grace_period_and_preemption_condition() {
        let with_status = |spec: serde_json::Value, status: serde_json::Value| -> k::Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web", "namespace": "prod"}, "spec": spec, "status": status,
            }))
            .expect("valid pod json")
        };
        let p = pod_from_k8s(&with_status(
            serde_json::json!({"containers": [], "priorityClassName": "high", "priority": 1000,
                               "preemptionPolicy": "Never", "terminationGracePeriodSeconds": 5}),
            serde_json::json!({"conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
            ]}),
        ))
        .unwrap();
        assert_eq!(p.priority_class_name, Some(Sym::new("high")));
        assert_eq!((p.priority, p.preemption_policy), (1000, PreemptionPolicy::Never));
        assert_eq!(p.termination_grace_period_seconds, 5);
        assert!(p.preempted_by_scheduler);

        let plain = pod_from_k8s(&pod_json(serde_json::json!({"containers": [], "priorityClassName": ""}))).unwrap();
        assert_eq!(plain.priority_class_name, None);
        assert_eq!(plain.termination_grace_period_seconds, 30);
        assert_eq!(plain.preemption_policy, PreemptionPolicy::PreemptLowerPriority);
        assert!(!plain.preempted_by_scheduler);

        // (name, conditions, want preempted_by_scheduler)
        let cases = [
            (
                "by the scheduler",
                serde_json::json!([
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]),
                true,
            ),
            (
                "condition False",
                serde_json::json!([
                {"type": "DisruptionTarget", "status": "False", "reason": "PreemptionByScheduler"}]),
                false,
            ),
            (
                "other reason",
                serde_json::json!([
                {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}]),
                false,
            ),
            (
                "first DisruptionTarget decides",
                serde_json::json!([
                {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"},
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]),
                false,
            ),
            ("no conditions", serde_json::json!([]), false),
        ];
        for (name, conditions, want) in cases {
            let pod = with_status(serde_json::json!({"containers": []}), serde_json::json!({"conditions": conditions}));
            assert_eq!(pod_from_k8s(&pod).unwrap().preempted_by_scheduler, want, "{name}");
        }
        let err = pod_from_k8s(&pod_json(serde_json::json!({"containers": [], "terminationGracePeriodSeconds": -1})))
            .unwrap_err();
        assert_eq!((err.object.as_str(), err.field.as_str()), ("pod prod/web", "spec.terminationGracePeriodSeconds"));
        let err = pod_from_k8s(&pod_json(serde_json::json!({"containers": [], "preemptionPolicy": "Sometimes"})))
            .unwrap_err();
        assert_eq!(err.field, "spec.preemptionPolicy");
    }

    #[test]
    fn priority_class_conversion_table() {
        let pc = |v: serde_json::Value| -> kscheduling::PriorityClass {
            serde_json::from_value(v).expect("valid priority class json")
        };
        let cases = [
            (
                "defaults",
                serde_json::json!({"metadata": {"name": "high"}, "value": 1000}),
                Ok((1000, false, PreemptionPolicy::PreemptLowerPriority)),
            ),
            (
                "global default, never preempts",
                serde_json::json!({"metadata": {"name": "high"}, "value": -5, "globalDefault": true,
                                   "preemptionPolicy": "Never"}),
                Ok((-5, true, PreemptionPolicy::Never)),
            ),
            (
                "explicit PreemptLowerPriority",
                serde_json::json!({"metadata": {"name": "high"}, "value": 1, "preemptionPolicy": "PreemptLowerPriority"}),
                Ok((1, false, PreemptionPolicy::PreemptLowerPriority)),
            ),
            (
                "bad policy",
                serde_json::json!({"metadata": {"name": "high"}, "value": 1, "preemptionPolicy": "Always"}),
                Err(("priorityclass high", "preemptionPolicy")),
            ),
            ("no name", serde_json::json!({"metadata": {}, "value": 1}), Err(("priorityclass ", "metadata.name"))),
        ];
        for (name, json, want) in cases {
            match (priority_class_from_k8s(&pc(json)), want) {
                (Ok(got), Ok((value, global_default, policy))) => {
                    assert_eq!(got.name, Sym::new("high"), "{name}");
                    assert_eq!((got.value, got.global_default, got.preemption_policy), (value, global_default, policy));
                }
                (Err(e), Err((object, field))) => {
                    assert_eq!((e.object.as_str(), e.field.as_str()), (object, field), "{name}");
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn pdb_conversion_reads_spec_and_status() {
        let pdb: kpolicy::PodDisruptionBudget = serde_json::from_value(serde_json::json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "prod"},
            "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"},
                     "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}},
            "status": {"disruptionsAllowed": 2, "currentHealthy": 4, "desiredHealthy": 2, "expectedPods": 4,
                       "disruptedPods": {"web-1": "2026-01-01T00:00:00Z", "web-0": "2026-01-01T00:00:00Z"}}
        }))
        .unwrap();
        let got = pdb_from_k8s(&pdb).unwrap();
        assert_eq!((got.namespace.as_str(), got.name.as_str()), ("prod", "web"));
        assert_eq!((got.min_available, got.max_unavailable), (None, Some(IntOrPercent::Percent(25))));
        let sel = got.selector.as_ref().expect("selector");
        assert_eq!(sel.match_labels, Labels::from_pairs([("app", "web")]));
        assert_eq!(sel.match_expressions[0].operator, SelectorOp::In);
        assert_eq!(got.disruptions_allowed, 2);
        let names: Vec<&str> = got.disrupted_pods.iter().map(|n| &**n).collect();
        assert_eq!(names, vec!["web-0", "web-1"]);

        let bare: kpolicy::PodDisruptionBudget =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "b"}, "spec": {"minAvailable": 1}}))
                .unwrap();
        let got = pdb_from_k8s(&bare).unwrap();
        assert_eq!((got.namespace.as_str(), got.min_available), ("default", Some(IntOrPercent::Int(1))));
        assert_eq!((got.selector, got.disruptions_allowed, got.disrupted_pods.len()), (None, 0, 0));
    }

    #[test]
    fn pdb_conversion_errors_name_object_and_field() {
        let cases = [
            ("percent without sign", serde_json::json!({"minAvailable": "50"}), "spec.minAvailable"),
            ("fractional percent", serde_json::json!({"maxUnavailable": "2.5%"}), "spec.maxUnavailable"),
            ("over 100%", serde_json::json!({"minAvailable": "150%"}), "spec.minAvailable"),
            ("negative count", serde_json::json!({"maxUnavailable": -1}), "spec.maxUnavailable"),
            ("both set", serde_json::json!({"minAvailable": 1, "maxUnavailable": 1}), "spec"),
            (
                "bad selector operator",
                serde_json::json!({"minAvailable": 1, "selector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}),
                "spec.selector.matchExpressions[0].operator",
            ),
        ];
        for (name, spec, field) in cases {
            let pdb: kpolicy::PodDisruptionBudget = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web", "namespace": "prod"}, "spec": spec
            }))
            .unwrap();
            let err = pdb_from_k8s(&pdb).expect_err(name);
            assert_eq!((err.object.as_str(), err.field.as_str()), ("poddisruptionbudget prod/web", field), "{name}");
        }
    }

    /// A quantity written as a YAML number (`cpu: 0.35`, as upstream's templates do) reads as
    /// its text would, whether the YAML goes straight to the object or through a JSON value
    /// (the workload runner's path), and rounds up like a string quantity.
    #[test]
    fn numeric_quantities_read_like_their_text() {
        // (YAML value, CPU millicores, memory bytes)
        let cases: [(&str, i64, i64); 7] = [
            ("0.35", 350, 1),
            ("2", 2000, 2),
            ("0.0001", 1, 1),
            ("1.5", 1500, 2),
            ("1e3", 1_000_000, 1000),
            ("\"0.35\"", 350, 1),
            ("1073741824", 1_073_741_824_000, 1 << 30),
        ];
        for (text, milli_cpu, memory) in cases {
            let pod_yaml = format!(
                "metadata: {{name: p}}\nspec:\n  containers:\n  - name: c\n    resources:\n      \
                 requests: {{cpu: {text}, memory: {text}}}\n"
            );
            let direct: k::Pod = yaml_serde::from_str(&pod_yaml).unwrap_or_else(|e| panic!("{text}: {e}"));
            let value: serde_json::Value = yaml_serde::from_str(&pod_yaml).unwrap();
            let via_json: k::Pod = serde_json::from_value(value).unwrap_or_else(|e| panic!("{text}: {e}"));
            for (path, pod) in [("direct", direct), ("via JSON", via_json)] {
                let r = &pod_from_k8s(&pod).unwrap_or_else(|e| panic!("{text} {path}: {e}")).containers[0].requests;
                assert_eq!((r.milli_cpu, r.memory), (milli_cpu, memory), "{text} {path}");
            }
            let node_yaml = format!("metadata: {{name: n}}\nstatus:\n  capacity: {{cpu: {text}, pods: 110}}\n");
            let node: k::Node = yaml_serde::from_str(&node_yaml).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(node_from_k8s(&node).unwrap().allocatable.milli_cpu, milli_cpu, "{text} node");
        }
    }

    #[test]
    fn node_conversion_reads_allocatable_taints_conditions_images() {
        let n: k::Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]},
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "7500m", "memory": "30Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "False"}],
                "images": [{"names": ["nginx:1.25", "docker.io/nginx:1.25"], "sizeBytes": 1000}]
            }
        }))
        .unwrap();
        let node = node_from_k8s(&n).unwrap();
        assert_eq!(node.allocatable.milli_cpu, 7500);
        assert_eq!(node.allocatable.memory, 30 << 30);
        assert_eq!(node.allocatable.allowed_pod_number, 110);
        assert!(node.unschedulable);
        assert_eq!(node.taints, vec![Taint::new("k", "v", TaintEffect::NoExecute)]);
        assert_eq!(node.condition(NodeConditionType::Ready), Some(ConditionStatus::False));
        assert_eq!(node.images[0].names.len(), 2);
        let bad: k::Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n2"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}
        }))
        .unwrap();
        let err = node_from_k8s(&bad).unwrap_err();
        assert_eq!((err.object.as_str(), err.field.as_str()), ("node n2", "spec.taints[0].effect"));
    }

    #[test]
    fn cluster_object_conversion_table() {
        let json = |v: serde_json::Value| v;
        let ns: k::Namespace =
            serde_json::from_value(json(serde_json::json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}})))
                .unwrap();
        let (name, labels) = namespace_from_k8s(&ns).unwrap();
        assert_eq!(name, Sym::new("prod"));
        assert_eq!(labels.get(Sym::new("env")), Some(Sym::new("prod")));
        assert_eq!(labels.get(Sym::new(NAMESPACE_NAME_LABEL)), Some(Sym::new("prod")), "the API server's name label");

        let svc: k::Service = serde_json::from_value(
            serde_json::json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}}}),
        )
        .unwrap();
        let svc = service_from_k8s(&svc).unwrap();
        assert_eq!((svc.namespace, svc.name), (Sym::new("default"), Sym::new("web")));
        assert_eq!(svc.selector, Labels::from_pairs([("app", "web")]));

        let pv: k::PersistentVolume = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "pv1", "labels": {"topology.kubernetes.io/zone": "a"}},
            "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}, "storageClassName": "fast",
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}}
        }))
        .unwrap();
        let pv = pv_from_k8s(&pv).unwrap();
        assert_eq!(
            pv.source,
            PersistentVolumeSource::Csi { driver: Sym::new("ebs.csi.aws.com"), volume_handle: Sym::new("vol-1") }
        );
        assert_eq!(pv.storage_class, Sym::new("fast"));
        assert_eq!(pv.node_affinity.map(|a| a.terms.len()), Some(1));

        let pvc: k::PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c", "namespace": "data", "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"accessModes": ["ReadWriteOncePod"], "volumeName": "pv1"}
        }))
        .unwrap();
        let pvc = pvc_from_k8s(&pvc).unwrap();
        assert_eq!((pvc.volume_name, pvc.storage_class), (Sym::new("pv1"), Sym::new("old")), "the beta annotation");
        assert!(pvc.has_access_mode(AccessMode::ReadWriteOncePod));

        let sc: kstorage::StorageClass =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "fast"}, "provisioner": "p"})).unwrap();
        assert_eq!(storage_class_from_k8s(&sc).unwrap().volume_binding_mode, VolumeBindingMode::Immediate, "defaulted");

        let csi: kstorage::CSINode = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "d", "nodeID": "x", "allocatable": {"count": 3}}]}
        }))
        .unwrap();
        assert_eq!(csi_node_from_k8s(&csi).unwrap().allocatable(Sym::new("d")), Some(3));

        // Bad values name the object and the field.
        let bad_pvc: k::PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce", "WriteSometimes"]}
        }))
        .unwrap();
        let err = pvc_from_k8s(&bad_pvc).unwrap_err();
        assert_eq!(
            (err.object.as_str(), err.field.as_str()),
            ("persistentvolumeclaim default/c", "spec.accessModes[1]")
        );
        let bad_sc: kstorage::StorageClass = serde_json::from_value(
            serde_json::json!({"metadata": {"name": "s"}, "provisioner": "p", "volumeBindingMode": "Later"}),
        )
        .unwrap();
        let err = storage_class_from_k8s(&bad_sc).unwrap_err();
        assert_eq!((err.object.as_str(), err.field.as_str()), ("storageclass s", "volumeBindingMode"));
        let unnamed: k::Service = serde_json::from_value(serde_json::json!({"metadata": {}})).unwrap();
        assert_eq!(service_from_k8s(&unnamed).unwrap_err().field, "metadata.name");
    }

    /// Pod signatures read a volume's whole source from the object: configMap and secret
    /// volumes and volume names do not count; an emptyDir's size limit (by value and
    /// notation, as upstream's canonical quantities), a hostPath's path and every other field
    /// of a source do. Defaults the API server would fill in do not tell sources apart.
    #[test]
    fn pod_signatures_read_volume_sources_from_the_object() {
        use ksched_engine::framework::plugins::volume_binding::{VolumeBinding, VolumeBindingArgs};
        use ksched_engine::framework::signature::sign_pod;
        use ksched_engine::framework::Plugin;

        let base = "
- {name: data, persistentVolumeClaim: {claimName: c1}}
- {name: cfg, configMap: {name: settings}}
- {name: token, secret: {secretName: t1}}
- {name: scratch, emptyDir: {sizeLimit: 1Gi}}
- {name: logs, hostPath: {path: /var/log}}
- {name: info, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}
";
        let pod = |volumes: &str| {
            let doc = format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: web, namespace: prod}}\nspec:\n  containers: [{{name: a, image: nginx}}]\n  volumes:\n{}",
                volumes.trim_start_matches('\n').lines().map(|l| format!("  {l}\n")).collect::<String>()
            );
            let k: k::Pod = yaml_serde::from_str(&doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
            pod_from_k8s(&k).unwrap()
        };
        let plugin = VolumeBinding::new(&VolumeBindingArgs::default());
        let sign = |p: &Pod| sign_pod([&plugin as &dyn Plugin], p).unwrap();
        let want = sign(&pod(base));
        // (what, the volumes, alike)
        let cases = [
            ("another configMap", base.replace("name: settings", "name: other"), true),
            ("another secret", base.replace("secretName: t1", "secretName: t2"), true),
            ("no secret volume", base.replace("- {name: token, secret: {secretName: t1}}\n", ""), true),
            (
                "other volume names",
                base.replace("name: data,", "name: data2,").replace("name: logs,", "name: l,"),
                true,
            ),
            (
                "volumes in another order",
                format!("{}\n{}", &base[base.find("- {name: cfg").unwrap()..].trim_end(), base.lines().nth(1).unwrap()),
                true,
            ),
            ("1024Mi for 1Gi", base.replace("sizeLimit: 1Gi", "sizeLimit: 1024Mi"), true),
            (
                "hostPath type \"\" (upstream's default)",
                base.replace("path: /var/log}", "path: /var/log, type: \"\"}"),
                true,
            ),
            (
                "downwardAPI defaultMode 420 (upstream's default)",
                base.replace("downwardAPI: {items", "downwardAPI: {defaultMode: 420, items"),
                true,
            ),
            ("another size limit", base.replace("sizeLimit: 1Gi", "sizeLimit: 2Gi"), false),
            ("a size limit in decimal notation", base.replace("sizeLimit: 1Gi", "sizeLimit: \"1073741824\""), false),
            (
                "an emptyDir in memory",
                base.replace("emptyDir: {sizeLimit: 1Gi}", "emptyDir: {sizeLimit: 1Gi, medium: Memory}"),
                false,
            ),
            ("another hostPath", base.replace("path: /var/log}", "path: /var/lib}"), false),
            ("a hostPath type", base.replace("path: /var/log}", "path: /var/log, type: Directory}"), false),
            ("another claim", base.replace("claimName: c1", "claimName: c2"), false),
        ];
        for (what, volumes, alike) in cases {
            let got = sign(&pod(&volumes));
            assert_eq!(got == want, alike, "{what}:\n{volumes}\n{got:?}\nvs {want:?}");
        }
        let p = pod(base);
        let signed: Vec<bool> = p.volumes.iter().map(|v| v.signed_source().is_some()).collect();
        assert_eq!(signed, [true, false, false, true, true, true], "configMap and secret left out");
    }
}
