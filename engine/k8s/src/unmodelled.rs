//! Never silent: which fields of v1.35's PodSpec, PodStatus, NodeSpec, NodeStatus, Container
//! and ResourceRequirements ksched reads, which change upstream's decision without ksched
//! modelling them (a warning naming the object and the field, an error under `--strict`), and
//! which do not affect scheduling (with the reason). The tables are the documentation; the
//! field-coverage test (`tests.rs`) checks them against k8s-openapi's own field lists, so a
//! field k8s-openapi gains fails the test until it is classified here.
//!
//! [`pod_unmodelled`] and [`node_unmodelled`] find the warned fields of one object;
//! [`Unmodelled`] collects them per field for a run's summary.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as k;
use k8s_openapi::api::resource::v1 as kr;
use ksched_engine::features::{Feature, FeatureGates};

/// What ksched does with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// `convert.rs` reads it (or the manifest reader, said in the text).
    Read,
    /// It can change upstream v1.35's decision and ksched does not model it: a warning (an
    /// error under `--strict`) with this reason.
    Warned(&'static str),
    /// Upstream's scheduler never reads it, or reads it only where it cannot change a
    /// decision: the reason.
    NoEffect(&'static str),
}

use Coverage::{NoEffect, Read, Warned};

/// The reason of the `spec.workloadRef` warning.
pub const WORKLOAD_REF: &str = "gang scheduling (Workload objects: GenericWorkload and GangScheduling, alpha) is not \
                                modelled: the pod is scheduled on its own";
/// The reason of the `status.extendedResourceClaimStatus` warning.
pub const EXTENDED_RESOURCE_CLAIM: &str =
    "extended resources backed by DRA devices (DRAExtendedResource, alpha) are not modelled";
/// The reason of the `status.declaredFeatures` warning.
pub const DECLARED_FEATURES: &str = "the NodeDeclaredFeatures plugin (alpha) is not modelled: pods are placed as \
                                     upstream places them with the gate off, whatever the node declares";

const POD_LEVEL_RESIZE: &str = "pod-level resize status: upstream reads it only under \
                                InPlacePodLevelResourcesVerticalScaling (alpha, off in v1.35); ksched reads it under the gate too";

const NOT_SCHEDULING: &str = "the kubelet's or the container runtime's, never read by the scheduler";

/// A type's fields by their wire names, each with what ksched does with it.
pub type FieldTable = &'static [(&'static str, Coverage)];

/// v1.35's PodSpec.
pub const POD_SPEC: FieldTable = &[
    ("activeDeadlineSeconds", Read),
    ("affinity", Read),
    ("automountServiceAccountToken", NoEffect("service account tokens: the kubelet's")),
    ("containers", Read),
    ("dnsConfig", NoEffect("DNS: the kubelet's")),
    ("dnsPolicy", NoEffect("DNS: the kubelet's")),
    ("enableServiceLinks", NoEffect("environment variables: the kubelet's")),
    ("ephemeralContainers", NoEffect("added to running pods; upstream's request sums leave them out")),
    ("hostAliases", NoEffect(NOT_SCHEDULING)),
    ("hostIPC", NoEffect(NOT_SCHEDULING)),
    (
        "hostNetwork",
        Read, // the API server's defaulting: a hostNetwork pod's ports are host ports (NodePorts)
    ),
    ("hostPID", NoEffect(NOT_SCHEDULING)),
    ("hostUsers", NoEffect("user namespaces: the kubelet's")),
    ("hostname", NoEffect(NOT_SCHEDULING)),
    ("hostnameOverride", NoEffect(NOT_SCHEDULING)),
    ("imagePullSecrets", NoEffect(NOT_SCHEDULING)),
    ("initContainers", Read),
    ("nodeName", Read),
    ("nodeSelector", Read),
    ("os", NoEffect("no v1.35 plugin reads it (nodes are chosen by the kubernetes.io/os label in nodeSelector)")),
    ("overhead", Read),
    ("preemptionPolicy", Read),
    ("priority", Read),
    ("priorityClassName", Read),
    ("readinessGates", NoEffect("pod readiness: the kubelet's and the endpoints controller's")),
    ("resourceClaims", Read),
    ("resources", Read),
    ("restartPolicy", NoEffect(NOT_SCHEDULING)),
    (
        "runtimeClassName",
        NoEffect("RuntimeClass admission copies its overhead, node selector and tolerations into the pod before the scheduler sees it"),
    ),
    ("schedulerName", Read),
    ("schedulingGates", Read),
    ("securityContext", NoEffect(NOT_SCHEDULING)),
    ("serviceAccount", NoEffect("service accounts: admission's and the kubelet's")),
    ("serviceAccountName", NoEffect("service accounts: admission's and the kubelet's")),
    ("setHostnameAsFQDN", NoEffect(NOT_SCHEDULING)),
    ("shareProcessNamespace", NoEffect(NOT_SCHEDULING)),
    ("subdomain", NoEffect("DNS: the kubelet's")),
    ("terminationGracePeriodSeconds", Read),
    ("tolerations", Read),
    ("topologySpreadConstraints", Read),
    ("volumes", Read),
    ("workloadRef", Warned(WORKLOAD_REF)),
];

/// v1.35's PodStatus.
pub const POD_STATUS: FieldTable = &[
    ("allocatedResources", NoEffect(POD_LEVEL_RESIZE)),
    ("conditions", Read),
    ("containerStatuses", Read),
    ("ephemeralContainerStatuses", NoEffect("ephemeral containers count in no request sum")),
    ("extendedResourceClaimStatus", Warned(EXTENDED_RESOURCE_CLAIM)),
    ("hostIP", NoEffect(NOT_SCHEDULING)),
    ("hostIPs", NoEffect(NOT_SCHEDULING)),
    ("initContainerStatuses", Read),
    ("message", NoEffect("a human-readable note")),
    ("nominatedNodeName", Read),
    ("observedGeneration", NoEffect("status bookkeeping")),
    (
        "phase",
        Read, // by the manifest reader: Succeeded and Failed pods are dropped, as the scheduler's informer drops them
    ),
    ("podIP", NoEffect(NOT_SCHEDULING)),
    ("podIPs", NoEffect(NOT_SCHEDULING)),
    (
        "qosClass",
        NoEffect("upstream prefers it to computing the class from the spec; validation keeps them equal (a resize cannot change the class)"),
    ),
    ("reason", NoEffect("a machine-readable note")),
    ("resize", NoEffect("deprecated: v1.35 reads the PodResizePending condition instead (read)")),
    ("resourceClaimStatuses", Read),
    ("resources", NoEffect(POD_LEVEL_RESIZE)),
    ("startTime", Read),
];

/// v1.35's NodeSpec.
pub const NODE_SPEC: FieldTable = &[
    ("configSource", NoEffect("dynamic kubelet configuration: removed, the kubelet's")),
    ("externalID", NoEffect("deprecated, unused")),
    ("podCIDR", NoEffect("pod networking: the network plugin's")),
    ("podCIDRs", NoEffect("pod networking: the network plugin's")),
    ("providerID", NoEffect("the cloud provider's")),
    ("taints", Read),
    ("unschedulable", Read),
];

/// v1.35's NodeStatus.
pub const NODE_STATUS: FieldTable = &[
    ("addresses", NoEffect(NOT_SCHEDULING)),
    ("allocatable", Read),
    ("capacity", Read), // where allocatable is absent: the API server's defaulting
    ("conditions", Read),
    ("config", NoEffect("dynamic kubelet configuration: removed, the kubelet's")),
    ("daemonEndpoints", NoEffect(NOT_SCHEDULING)),
    ("declaredFeatures", Warned(DECLARED_FEATURES)),
    ("features", NoEffect("the kubelet's supported features (supplementalGroupsPolicy): no plugin reads them")),
    ("images", Read),
    ("nodeInfo", NoEffect("versions and machine ids: no plugin reads them")),
    ("phase", NoEffect("deprecated, unused")),
    ("runtimeHandlers", NoEffect("the container runtime's handlers: no plugin reads them")),
    ("volumesAttached", NoEffect("NodeVolumeLimits counts the volumes of the node's pods, not this list")),
    ("volumesInUse", NoEffect("the attach/detach controller's")),
];

/// v1.35's Container (app, init and sidecar containers alike).
pub const CONTAINER: FieldTable = &[
    ("args", NoEffect(NOT_SCHEDULING)),
    ("command", NoEffect(NOT_SCHEDULING)),
    ("env", NoEffect(NOT_SCHEDULING)),
    ("envFrom", NoEffect(NOT_SCHEDULING)),
    ("image", Read),
    ("imagePullPolicy", NoEffect(NOT_SCHEDULING)),
    ("lifecycle", NoEffect(NOT_SCHEDULING)),
    ("livenessProbe", NoEffect(NOT_SCHEDULING)),
    ("name", Read),
    ("ports", Read),
    ("readinessProbe", NoEffect(NOT_SCHEDULING)),
    ("resizePolicy", NoEffect("whether a resize restarts the container: the kubelet's")),
    ("resources", Read),
    ("restartPolicy", Read), // an init container's Always makes it a sidecar
    ("restartPolicyRules", NoEffect("container restart rules (alpha): the kubelet's")),
    ("securityContext", NoEffect(NOT_SCHEDULING)),
    ("startupProbe", NoEffect(NOT_SCHEDULING)),
    ("stdin", NoEffect(NOT_SCHEDULING)),
    ("stdinOnce", NoEffect(NOT_SCHEDULING)),
    ("terminationMessagePath", NoEffect(NOT_SCHEDULING)),
    ("terminationMessagePolicy", NoEffect(NOT_SCHEDULING)),
    ("tty", NoEffect(NOT_SCHEDULING)),
    ("volumeDevices", NoEffect("the pod's volumes are what the volume plugins read")),
    ("volumeMounts", NoEffect("the pod's volumes are what the volume plugins read")),
    ("workingDir", NoEffect(NOT_SCHEDULING)),
];

/// v1.35's ResourceRequirements (a container's `resources`, and the pod's).
pub const RESOURCE_REQUIREMENTS: FieldTable = &[
    ("claims", Read),
    ("limits", Read), // the API server's defaulting: a limit without a request is the request
    ("requests", Read),
];

/// One warned field of one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmodelledField {
    /// `pod default/web-1`, `node n1`.
    pub object: String,
    /// `spec.workloadRef`.
    pub field: &'static str,
    pub why: &'static str,
}

impl std::fmt::Display for UnmodelledField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: not modelled by ksched: {}", self.object, self.field, self.why)
    }
}

/// The warned fields of a pod spec and status (`object` names it in the warnings).
pub fn pod_spec_unmodelled(object: &str, spec: &k::PodSpec, status: Option<&k::PodStatus>) -> Vec<UnmodelledField> {
    let mut out = Vec::new();
    let mut warn = |field, why| out.push(UnmodelledField { object: object.to_owned(), field, why });
    if spec.workload_ref.is_some() {
        warn("spec.workloadRef", WORKLOAD_REF);
    }
    if status.is_some_and(|s| s.extended_resource_claim_status.is_some()) {
        warn("status.extendedResourceClaimStatus", EXTENDED_RESOURCE_CLAIM);
    }
    out
}

/// The warned fields of a pod (`pod NAMESPACE/NAME`).
pub fn pod_unmodelled(pod: &k::Pod) -> Vec<UnmodelledField> {
    let Some(spec) = &pod.spec else { return Vec::new() };
    let namespace = pod.metadata.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let object = format!("pod {namespace}/{}", pod.metadata.name.as_deref().unwrap_or(""));
    pod_spec_unmodelled(&object, spec, pod.status.as_ref())
}

/// The warned fields of a node (`node NAME`).
pub fn node_unmodelled(node: &k::Node) -> Vec<UnmodelledField> {
    let object = format!("node {}", node.metadata.name.as_deref().unwrap_or(""));
    let mut out = Vec::new();
    if node.status.as_ref().is_some_and(|s| s.declared_features.as_ref().is_some_and(|f| !f.is_empty())) {
        out.push(UnmodelledField { object, field: "status.declaredFeatures", why: DECLARED_FEATURES });
    }
    out
}

/// DRA fields of alpha features (off in v1.35, and ksched refuses to turn them on): the
/// allocator ignores them, as upstream's does with the gate off (a device that needs the
/// feature is not allocatable). A cluster whose objects carry them runs the gate, where
/// upstream may decide otherwise: each is warned about. Per gate, the reason with it off and,
/// should it be on, that ksched does not model it.
const DRA_GATED: &[(Feature, &str, &str)] = &[
    (
        Feature::DRADeviceTaints,
        "device taints and tolerations (DRADeviceTaints, alpha, off in v1.35): ignored, as upstream ignores them \
         with the gate off",
        "device taints and tolerations (DRADeviceTaints) are not modelled",
    ),
    (
        Feature::DRAPartitionableDevices,
        "partitionable devices (DRAPartitionableDevices, alpha, off in v1.35): shared counters ignored, devices \
         consuming counters or chosen per device not allocatable, as upstream with the gate off",
        "partitionable devices (DRAPartitionableDevices) are not modelled",
    ),
    (
        Feature::DRAConsumableCapacity,
        "consumable capacity (DRAConsumableCapacity, alpha, off in v1.35): devices allocated whole and once, \
         capacity requests, request policies and distinct attributes ignored, as upstream with the gate off",
        "consumable capacity (DRAConsumableCapacity) is not modelled",
    ),
    (
        Feature::DRADeviceBindingConditions,
        "device binding conditions (DRADeviceBindingConditions, alpha, off in v1.35): devices with binding \
         conditions not allocatable, as upstream with the gate off",
        "device binding conditions (DRADeviceBindingConditions) are not modelled",
    ),
    (
        Feature::DRAExtendedResource,
        "extended resources backed by DeviceClasses (DRAExtendedResource, alpha, off in v1.35): ignored, as \
         upstream with the gate off",
        "extended resources backed by DeviceClasses (DRAExtendedResource) are not modelled",
    ),
];

/// Collects the gated DRA fields of one object (`object` names it).
struct DraFields<'a> {
    object: &'a str,
    gates: &'a FeatureGates,
    out: Vec<UnmodelledField>,
}

impl DraFields<'_> {
    fn check(&mut self, set: bool, field: &'static str, gate: Feature) {
        if !set || self.out.iter().any(|w| w.field == field) {
            return;
        }
        let Some((_, off, on)) = DRA_GATED.iter().find(|(f, _, _)| *f == gate) else { return };
        let why = if self.gates.enabled(gate) { on } else { off };
        self.out.push(UnmodelledField { object: self.object.to_owned(), field, why });
    }

    /// A claim's spec (with `template`, a template's, its fields under `spec.spec`).
    fn claim_spec(&mut self, spec: &kr::ResourceClaimSpec, template: bool) {
        use Feature::{DRAConsumableCapacity as Consumable, DRADeviceTaints as Taints};
        let Some(devices) = &spec.devices else { return };
        let pick = |claim: &'static str, tpl: &'static str| if template { tpl } else { claim };
        for r in devices.requests.iter().flatten() {
            if let Some(e) = &r.exactly {
                let tolerations = pick(
                    "spec.devices.requests[].exactly.tolerations",
                    "spec.spec.devices.requests[].exactly.tolerations",
                );
                self.check(nonempty(&e.tolerations), tolerations, Taints);
                let capacity =
                    pick("spec.devices.requests[].exactly.capacity", "spec.spec.devices.requests[].exactly.capacity");
                self.check(e.capacity.is_some(), capacity, Consumable);
            }
            for sub in r.first_available.iter().flatten() {
                let tolerations = pick(
                    "spec.devices.requests[].firstAvailable[].tolerations",
                    "spec.spec.devices.requests[].firstAvailable[].tolerations",
                );
                self.check(nonempty(&sub.tolerations), tolerations, Taints);
                let capacity = pick(
                    "spec.devices.requests[].firstAvailable[].capacity",
                    "spec.spec.devices.requests[].firstAvailable[].capacity",
                );
                self.check(sub.capacity.is_some(), capacity, Consumable);
            }
        }
        for c in devices.constraints.iter().flatten() {
            let distinct = pick(
                "spec.devices.constraints[].distinctAttribute",
                "spec.spec.devices.constraints[].distinctAttribute",
            );
            self.check(c.distinct_attribute.is_some(), distinct, Consumable);
        }
    }
}

fn nonempty<T>(v: &Option<Vec<T>>) -> bool {
    v.as_ref().is_some_and(|v| !v.is_empty())
}

/// The fields of a ResourceSlice (`resourceslice NAME`) whose alpha DRA gate is off (see
/// [`DRA_GATED`]).
pub fn resource_slice_unmodelled(s: &kr::ResourceSlice, gates: &FeatureGates) -> Vec<UnmodelledField> {
    use Feature::{
        DRAConsumableCapacity as Consumable, DRADeviceBindingConditions as Binding, DRADeviceTaints as Taints,
        DRAPartitionableDevices as Partitionable,
    };
    let object = format!("resourceslice {}", s.metadata.name.as_deref().unwrap_or(""));
    let mut f = DraFields { object: &object, gates, out: Vec::new() };
    f.check(nonempty(&s.spec.shared_counters), "spec.sharedCounters", Partitionable);
    f.check(s.spec.per_device_node_selection == Some(true), "spec.perDeviceNodeSelection", Partitionable);
    for d in s.spec.devices.iter().flatten() {
        f.check(nonempty(&d.consumes_counters), "spec.devices[].consumesCounters", Partitionable);
        f.check(d.node_name.as_deref().is_some_and(|n| !n.is_empty()), "spec.devices[].nodeName", Partitionable);
        f.check(d.node_selector.is_some(), "spec.devices[].nodeSelector", Partitionable);
        f.check(d.all_nodes == Some(true), "spec.devices[].allNodes", Partitionable);
        f.check(nonempty(&d.taints), "spec.devices[].taints", Taints);
        f.check(nonempty(&d.binding_conditions), "spec.devices[].bindingConditions", Binding);
        f.check(nonempty(&d.binding_failure_conditions), "spec.devices[].bindingFailureConditions", Binding);
        f.check(d.binds_to_node == Some(true), "spec.devices[].bindsToNode", Binding);
        f.check(d.allow_multiple_allocations == Some(true), "spec.devices[].allowMultipleAllocations", Consumable);
        let policy = d.capacity.iter().flatten().any(|(_, c)| c.request_policy.is_some());
        f.check(policy, "spec.devices[].capacity[].requestPolicy", Consumable);
    }
    f.out
}

/// The fields of a ResourceClaim (`resourceclaim NAMESPACE/NAME`) whose alpha DRA gate is off.
pub fn resource_claim_unmodelled(c: &kr::ResourceClaim, gates: &FeatureGates) -> Vec<UnmodelledField> {
    use Feature::{
        DRAConsumableCapacity as Consumable, DRADeviceBindingConditions as Binding, DRADeviceTaints as Taints,
    };
    let namespace = c.metadata.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let object = format!("resourceclaim {namespace}/{}", c.metadata.name.as_deref().unwrap_or(""));
    let mut f = DraFields { object: &object, gates, out: Vec::new() };
    f.claim_spec(&c.spec, false);
    let results = c.status.iter().filter_map(|s| s.allocation.as_ref()).filter_map(|a| a.devices.as_ref());
    for r in results.flat_map(|d| d.results.iter().flatten()) {
        f.check(nonempty(&r.tolerations), "status.allocation.devices.results[].tolerations", Taints);
        f.check(r.consumed_capacity.is_some(), "status.allocation.devices.results[].consumedCapacity", Consumable);
        f.check(r.share_id.is_some(), "status.allocation.devices.results[].shareID", Consumable);
        f.check(nonempty(&r.binding_conditions), "status.allocation.devices.results[].bindingConditions", Binding);
        let failure = nonempty(&r.binding_failure_conditions);
        f.check(failure, "status.allocation.devices.results[].bindingFailureConditions", Binding);
    }
    f.out
}

/// The fields of a ResourceClaimTemplate (`resourceclaimtemplate NAMESPACE/NAME`) whose alpha
/// DRA gate is off.
pub fn resource_claim_template_unmodelled(t: &kr::ResourceClaimTemplate, gates: &FeatureGates) -> Vec<UnmodelledField> {
    let namespace = t.metadata.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
    let object = format!("resourceclaimtemplate {namespace}/{}", t.metadata.name.as_deref().unwrap_or(""));
    let mut f = DraFields { object: &object, gates, out: Vec::new() };
    f.claim_spec(&t.spec.spec, true);
    f.out
}

/// The fields of a DeviceClass (`deviceclass NAME`) whose alpha DRA gate is off.
pub fn device_class_unmodelled(c: &kr::DeviceClass, gates: &FeatureGates) -> Vec<UnmodelledField> {
    let object = format!("deviceclass {}", c.metadata.name.as_deref().unwrap_or(""));
    let mut f = DraFields { object: &object, gates, out: Vec::new() };
    let name = c.spec.extended_resource_name.as_deref().is_some_and(|n| !n.is_empty());
    f.check(name, "spec.extendedResourceName", Feature::DRAExtendedResource);
    f.out
}

/// Warned fields collected over a run: per field, how many objects and the first few names.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Unmodelled {
    /// field → (why, objects counted, the first objects' names).
    pub fields: BTreeMap<&'static str, FieldCount>,
}

/// One field's count in [`Unmodelled`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FieldCount {
    pub why: &'static str,
    pub count: usize,
    /// The first [`Unmodelled::NAMED`] objects.
    pub objects: Vec<String>,
}

impl Unmodelled {
    /// Objects named per field in the summary.
    pub const NAMED: usize = 3;

    pub fn add(&mut self, w: UnmodelledField) {
        let c = self.fields.entry(w.field).or_default();
        c.why = w.why;
        c.count += 1;
        if c.objects.len() < Self::NAMED {
            c.objects.push(w.object);
        }
    }

    /// Adds `other`'s counts (its named objects after this one's, up to [`Unmodelled::NAMED`]).
    pub fn merge(&mut self, other: Unmodelled) {
        for (field, o) in other.fields {
            let c = self.fields.entry(field).or_default();
            c.why = o.why;
            c.count += o.count;
            let room = Self::NAMED.saturating_sub(c.objects.len());
            c.objects.extend(o.objects.into_iter().take(room));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Per field, how many objects set it (a report's summary).
    pub fn counts(&self) -> BTreeMap<String, usize> {
        self.fields.iter().map(|(f, c)| ((*f).to_owned(), c.count)).collect()
    }

    /// One warning line per field: `spec.workloadRef: 3 objects (pod default/a, ...): why`.
    pub fn lines(&self) -> Vec<String> {
        self.fields
            .iter()
            .map(|(field, c)| {
                let more = if c.count > c.objects.len() { ", ..." } else { "" };
                format!(
                    "{field}: not modelled by ksched, set on {} object(s) ({}{more}): {}; upstream's decision may differ",
                    c.count,
                    c.objects.join(", "),
                    c.why
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
