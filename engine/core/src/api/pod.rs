//! The pod: spec data shared behind an `Arc`, plus the few fields the scheduler changes
//! (node name, nominated node, deletion timestamp), so a pod handle clones in O(1).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use super::affinity::{Affinity, Toleration};
use super::intern::Sym;
use super::labels::Labels;
use super::requests::{self, ContainerResizeStatus, DerivedRequests, PodResourceStatus, ResourceList};
use super::resources::{Resource, ResourceName};
use super::spread::TopologySpreadConstraint;
use super::storage::Volume;
use crate::features::FeatureGates;
use crate::util::time::Timestamp;

/// `spec.terminationGracePeriodSeconds` when the pod does not set it.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// Default CPU request (millicores) assumed for scoring when a container sets none.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Default memory request (bytes) assumed for scoring when a container sets none.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A pod's UID. Cheap to clone; compares by pointer first.
#[derive(Clone, Eq)]
pub struct PodUid(Arc<str>);

impl PodUid {
    pub fn new(s: &str) -> PodUid {
        PodUid(Arc::from(s))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl PartialEq for PodUid {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl std::hash::Hash for PodUid {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl fmt::Debug for PodUid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl fmt::Display for PodUid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "" | "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerPort {
    pub container_port: i32,
    /// 0 when the port is not exposed on the host.
    pub host_port: i32,
    pub protocol: Protocol,
    /// `Sym::EMPTY` means every address (0.0.0.0).
    pub host_ip: Sym,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Container {
    pub name: Sym,
    /// The image as written in the spec.
    pub image: Sym,
    pub requests: Resource,
    /// Whether the spec names a CPU / memory request at all (an explicit 0 counts as named);
    /// scoring substitutes defaults for unnamed ones.
    pub has_cpu_request: bool,
    pub has_memory_request: bool,
    pub ports: Vec<ContainerPort>,
    /// An init container with `restartPolicy: Always` (a sidecar).
    pub restartable: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PreemptionPolicy {
    #[default]
    PreemptLowerPriority,
    Never,
}

/// The controller owning a pod (ReplicaSet, StatefulSet...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub kind: Sym,
    pub name: Sym,
    pub uid: Sym,
}

/// Everything about a pod that the scheduler never changes.
#[derive(Clone, Debug, PartialEq)]
pub struct PodData {
    pub uid: PodUid,
    pub namespace: Sym,
    pub name: Arc<str>,
    pub labels: Labels,
    pub priority: i32,
    /// `spec.priorityClassName`: admission resolves `priority` and `preemption_policy` from it.
    pub priority_class_name: Option<Sym>,
    pub preemption_policy: PreemptionPolicy,
    /// `spec.terminationGracePeriodSeconds` (30 when unset): how long a deleted pod keeps its
    /// node's resources.
    pub termination_grace_period_seconds: i64,
    pub scheduler_name: Sym,
    pub containers: Vec<Container>,
    pub init_containers: Vec<Container>,
    /// `spec.resources.requests`, the resources pod-level requests may name (cpu, memory,
    /// hugepages-*); `None` when it names none of them.
    pub pod_level_requests: Option<ResourceList>,
    /// What the status says about the containers' resources (in-place resize); `None` when
    /// nothing in it can change the pod's requests.
    pub resource_status: Option<Box<PodResourceStatus>>,
    pub overhead: Option<Resource>,
    pub node_selector: Labels,
    pub affinity: Option<Affinity>,
    pub tolerations: Vec<Toleration>,
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    pub volumes: Vec<Volume>,
    /// `spec.schedulingGates`: while any is set the pod is not scheduled.
    pub scheduling_gates: Vec<Sym>,
    pub creation_timestamp: Timestamp,
    pub start_time: Option<Timestamp>,
    pub owner: Option<OwnerRef>,
    /// `spec.activeDeadlineSeconds`: how long the pod may run once started before the kubelet
    /// ends it (phase Failed, reason DeadlineExceeded). The scheduler never reads it; a
    /// simulated cluster does.
    pub active_deadline_seconds: Option<i64>,
    /// How long the pod runs once started, then ends by itself (phase Succeeded): the
    /// `ksched.io/run-duration` annotation, or a trace's run time. Not a Kubernetes field;
    /// the scheduler never reads it, a simulated cluster does. `None`: runs until deleted.
    pub run_duration: Option<Duration>,
    /// `spec.resourceClaims` (DRA), in spec order.
    pub resource_claims: Vec<super::dra::PodResourceClaim>,
    /// `status.resourceClaimStatuses`: the claims generated for template entries.
    pub resource_claim_statuses: Vec<super::dra::PodClaimStatus>,
    // Derived once at construction (`api::requests`).
    requests: Resource,
    non_zero_requests: Resource,
    on_node: Option<Box<requests::OnNode>>,
    host_ports: Vec<ContainerPort>,
    images: Vec<Sym>,
}

impl PodData {
    /// The pod's request from its spec, as NodeResourcesFit's filter reads it (see
    /// `api::requests`): containers, sidecars and init containers, pod-level requests,
    /// overhead.
    pub fn requests(&self) -> &Resource {
        &self.requests
    }

    /// The request NodeResourcesFit's scores read for the pod being scored: the containers'
    /// specs with unnamed CPU / memory requests at the scoring defaults (100m, 200Mi), plus
    /// overhead; never pod-level requests nor resize status (upstream's quirk: `api::requests`).
    pub fn non_zero_requests(&self) -> &Resource {
        &self.non_zero_requests
    }

    /// What a node counts for this pod (its `requested`): the status-aware sum (in-place
    /// resize); also what BalancedAllocation reads for the pod being scored. Equal to
    /// `requests()` for a pod without resize status.
    pub fn accounted_requests(&self) -> &Resource {
        self.on_node.as_deref().map_or(&self.requests, |n| &n.requests)
    }

    /// The CPU and memory a node counts for this pod in its non-zero totals (scoring's
    /// defaults for what no container names; with pod-level requests, for what nothing
    /// names).
    pub fn accounted_non_zero(&self) -> (i64, i64) {
        match self.on_node.as_deref() {
            Some(n) => (n.non_zero_cpu, n.non_zero_memory),
            None => (self.non_zero_requests.milli_cpu, self.non_zero_requests.memory),
        }
    }

    /// Ports the pod exposes on its node (host port > 0), of containers and sidecars.
    pub fn host_ports(&self) -> &[ContainerPort] {
        &self.host_ports
    }

    /// Images of init containers then containers, normalized as ImageLocality looks them up
    /// (`:latest` appended when the name has no tag).
    pub fn images(&self) -> &[Sym] {
        &self.images
    }

    /// QoS BestEffort (for requests; limits are defaulted into them): no cpu or memory
    /// requested by any container, nor at pod level.
    pub fn is_best_effort(&self) -> bool {
        let none = |r: &Resource| r.milli_cpu <= 0 && r.memory <= 0;
        match &self.pod_level_requests {
            Some(p) => none(&p.amounts),
            None => self.containers.iter().chain(&self.init_containers).all(|c| none(&c.requests)),
        }
    }
}

impl PodData {
    /// A spec holding only these containers (for summing them alone).
    pub(crate) fn aggregate_only(containers: &[Container], init_containers: &[Container]) -> PodData {
        let mut b = PodBuilder::new("");
        b.data.containers = containers.to_vec();
        b.data.init_containers = init_containers.to_vec();
        b.data
    }
}

/// A pod handle. Clones share the spec; `with_node` and friends make a new handle.
#[derive(Clone, PartialEq)]
pub struct Pod {
    data: Arc<PodData>,
    /// `spec.nodeName`: set for bound and assumed pods, or by the user to pin a node.
    pub node_name: Option<Sym>,
    pub nominated_node_name: Option<Sym>,
    pub deletion_timestamp: Option<Timestamp>,
    /// The `DisruptionTarget` condition with reason `PreemptionByScheduler`: the pod is being
    /// deleted because preemption chose it as a victim.
    pub preempted_by_scheduler: bool,
    /// The spec's priority (`PodData::priority`, which this field shadows), kept in the handle
    /// itself: preemption's dry run sorts a node's pods by priority for every node it tries,
    /// and reading it here touches no spec. Only this module builds pods, and it keeps the two
    /// equal; do not assign it.
    pub priority: i32,
    /// `affinity_flags()`, kept in the handle for the same reason.
    affinity_bits: u8,
}

impl crate::snapshot::pvec::Element for Pod {
    #[inline]
    fn counts(&self) -> Option<*const u8> {
        Some(crate::snapshot::pvec::arc_counts(&self.data))
    }
}

impl Deref for Pod {
    type Target = PodData;
    fn deref(&self) -> &PodData {
        &self.data
    }
}

impl fmt::Debug for Pod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pod({}/{}", self.namespace, self.name)?;
        if let Some(n) = self.node_name {
            write!(f, " on {n}")?;
        }
        write!(f, ")")
    }
}

impl Pod {
    /// Starts a pod in namespace `default`, with uid = `default/name`.
    pub fn builder(name: &str) -> PodBuilder {
        PodBuilder::new(name)
    }

    /// Whether `other` is indistinguishable from this handle: the same spec (the same
    /// `Arc`, not an equal copy) and the same fields beside it.
    pub fn is_same_handle(&self, other: &Pod) -> bool {
        // Destructured, so that a field added to `Pod` must be added here too.
        let Pod {
            data,
            node_name,
            nominated_node_name,
            deletion_timestamp,
            preempted_by_scheduler,
            priority,
            affinity_bits,
        } = self;
        Arc::ptr_eq(data, &other.data)
            && *node_name == other.node_name
            && *nominated_node_name == other.nominated_node_name
            && *deletion_timestamp == other.deletion_timestamp
            && *preempted_by_scheduler == other.preempted_by_scheduler
            && *priority == other.priority
            && *affinity_bits == other.affinity_bits
    }

    /// The same pod placed on `node` (what assume and bind produce).
    pub fn with_node(&self, node: Sym) -> Pod {
        Pod { node_name: Some(node), ..self.clone() }
    }

    /// The same pod with its priority and preemption policy replaced (what priority admission
    /// produces); the spec is copied into a new `Arc`, everything else is kept.
    pub fn with_priority(&self, priority: i32, policy: PreemptionPolicy) -> Pod {
        self.with_resolved_priority(self.priority_class_name, priority, policy)
    }

    /// `with_priority` that also records the class the priority came from (admission names
    /// the global default class on pods that named none).
    pub fn with_resolved_priority(&self, class_name: Option<Sym>, priority: i32, policy: PreemptionPolicy) -> Pod {
        let mut data = PodData::clone(&self.data);
        data.priority_class_name = class_name;
        data.priority = priority;
        data.preemption_policy = policy;
        Pod { data: Arc::new(data), priority, ..self.clone() }
    }

    /// The same pod with `status.startTime` set (what the kubelet records when it starts the
    /// pod); the spec is copied into a new `Arc`.
    pub fn with_start_time(&self, t: Timestamp) -> Pod {
        let mut data = PodData::clone(&self.data);
        data.start_time = Some(t);
        Pod { data: Arc::new(data), ..self.clone() }
    }

    /// The same pod with `status.resourceClaimStatuses` replaced (what the resourceclaim
    /// controller writes once it made the claims of the pod's template entries).
    pub fn with_resource_claim_statuses(&self, statuses: Vec<super::dra::PodClaimStatus>) -> Pod {
        let mut data = PodData::clone(&self.data);
        data.resource_claim_statuses = statuses;
        Pod { data: Arc::new(data), ..self.clone() }
    }

    /// The name of the claim of each `spec.resourceClaims` entry (upstream's
    /// `resourceclaim.Name`): `Err` names the entry whose template claim is not known yet.
    pub fn claim_name(&self, entry: &super::dra::PodResourceClaim) -> super::dra::ClaimName {
        use super::dra::{ClaimName, PodClaimSource};
        match entry.source {
            PodClaimSource::Claim(name) => ClaimName::Named(name, false),
            PodClaimSource::Template(_) => match self.resource_claim_statuses.iter().find(|s| s.name == entry.name) {
                Some(s) => s.claim.map_or(ClaimName::NotNeeded, |c| ClaimName::Named(c, true)),
                None => ClaimName::Pending,
            },
        }
    }

    /// The same spec under another name and uid (`None`: `namespace/name`, as the builder
    /// defaults it), pending and with no nomination: one pod of many made from a template.
    /// Names derived from the pod's name (generic ephemeral volumes' claims) follow it.
    pub fn renamed(&self, name: &str, uid: Option<&str>) -> Pod {
        let mut data = PodData::clone(&self.data);
        data.name = Arc::from(name);
        data.uid = PodUid::new(&uid.map_or_else(|| format!("{}/{name}", data.namespace), str::to_owned));
        super::storage::fill_ephemeral_claim_names(&mut data.volumes, &data.name);
        Pod {
            data: Arc::new(data),
            node_name: None,
            nominated_node_name: None,
            deletion_timestamp: None,
            preempted_by_scheduler: false,
            ..self.clone()
        }
    }

    /// The same pod with another controller owner reference (what a controller's adoption of
    /// an orphan writes); the spec is copied into a new `Arc`.
    pub fn with_owner(&self, owner: Option<OwnerRef>) -> Pod {
        let mut data = PodData::clone(&self.data);
        data.owner = owner;
        Pod { data: Arc::new(data), ..self.clone() }
    }

    /// The same pod with another run duration (`PodData::run_duration`); the spec is copied
    /// into a new `Arc`.
    pub fn with_run_duration(&self, d: Option<Duration>) -> Pod {
        let mut data = PodData::clone(&self.data);
        data.run_duration = d;
        Pod { data: Arc::new(data), ..self.clone() }
    }

    /// `namespace/name`, for messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    pub fn same_spec(&self, other: &Pod) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }

    /// Whether the pod has pod affinity or anti-affinity, and whether it has required
    /// anti-affinity terms: what a node's `pods_with_affinity` and
    /// `pods_with_required_anti_affinity` count. Read from the handle, not the spec.
    #[inline]
    pub fn affinity_flags(&self) -> (bool, bool) {
        (self.affinity_bits & 1 != 0, self.affinity_bits & 2 != 0)
    }

    pub fn is_terminating(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// Terminating because the scheduler preempted it (upstream's check before preempting
    /// again on a nominated node).
    pub fn is_terminating_by_preemption(&self) -> bool {
        self.deletion_timestamp.is_some() && self.preempted_by_scheduler
    }
}

/// Builds pods; used by tests, the synthetic clusters and the manifest reader alike.
pub struct PodBuilder {
    data: PodData,
    /// The gates the pod's requests are summed under (PodLevelResources...).
    gates: FeatureGates,
    node_name: Option<Sym>,
    nominated_node_name: Option<Sym>,
    deletion_timestamp: Option<Timestamp>,
    preempted_by_scheduler: bool,
    uid_set: bool,
}

impl PodBuilder {
    pub fn new(name: &str) -> PodBuilder {
        PodBuilder {
            data: PodData {
                uid: PodUid::new(""),
                namespace: Sym::new("default"),
                name: Arc::from(name),
                labels: Labels::new(),
                priority: 0,
                priority_class_name: None,
                preemption_policy: PreemptionPolicy::PreemptLowerPriority,
                termination_grace_period_seconds: DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
                scheduler_name: Sym::new("default-scheduler"),
                containers: Vec::new(),
                init_containers: Vec::new(),
                pod_level_requests: None,
                resource_status: None,
                overhead: None,
                resource_claims: Vec::new(),
                resource_claim_statuses: Vec::new(),
                node_selector: Labels::new(),
                affinity: None,
                tolerations: Vec::new(),
                topology_spread_constraints: Vec::new(),
                volumes: Vec::new(),
                scheduling_gates: Vec::new(),
                creation_timestamp: Timestamp(0),
                start_time: None,
                owner: None,
                active_deadline_seconds: None,
                run_duration: None,
                requests: Resource::default(),
                non_zero_requests: Resource::default(),
                on_node: None,
                host_ports: Vec::new(),
                images: Vec::new(),
            },
            gates: FeatureGates::default(),
            node_name: None,
            nominated_node_name: None,
            deletion_timestamp: None,
            preempted_by_scheduler: false,
            uid_set: false,
        }
    }

    pub fn namespace(mut self, ns: &str) -> Self {
        self.data.namespace = Sym::new(ns);
        self
    }
    pub fn uid(mut self, uid: &str) -> Self {
        self.data.uid = PodUid::new(uid);
        self.uid_set = true;
        self
    }
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.data.labels.insert(Sym::new(k), Sym::new(v));
        self
    }
    pub fn labels(mut self, labels: Labels) -> Self {
        self.data.labels = labels;
        self
    }
    pub fn priority(mut self, p: i32) -> Self {
        self.data.priority = p;
        self
    }
    pub fn priority_class_name(mut self, name: &str) -> Self {
        self.data.priority_class_name = Some(Sym::new(name));
        self
    }
    pub fn termination_grace_period_seconds(mut self, s: i64) -> Self {
        self.data.termination_grace_period_seconds = s;
        self
    }
    pub fn preempted_by_scheduler(mut self) -> Self {
        self.preempted_by_scheduler = true;
        self
    }
    pub fn preemption_policy(mut self, p: PreemptionPolicy) -> Self {
        self.data.preemption_policy = p;
        self
    }
    pub fn scheduler_name(mut self, s: &str) -> Self {
        self.data.scheduler_name = Sym::new(s);
        self
    }
    /// Adds a container named `c<i>` with the given image and requests (unnamed requests stay unset).
    pub fn container(mut self, image: &str, requests: &[(ResourceName, i64)]) -> Self {
        let c = make_container(self.data.containers.len(), image, requests, false);
        self.data.containers.push(c);
        self
    }
    /// Adds a fully specified container.
    pub fn container_spec(mut self, c: Container) -> Self {
        self.data.containers.push(c);
        self
    }
    /// Adds an init container; `sidecar` makes it restartable (`restartPolicy: Always`).
    pub fn init_container(mut self, image: &str, requests: &[(ResourceName, i64)], sidecar: bool) -> Self {
        let c = make_container(self.data.init_containers.len(), image, requests, sidecar);
        self.data.init_containers.push(c);
        self
    }
    pub fn init_container_spec(mut self, c: Container) -> Self {
        self.data.init_containers.push(c);
        self
    }
    /// Adds a host port (TCP, all addresses) to the last container, adding one if none.
    pub fn host_port(self, port: i32) -> Self {
        self.host_port_spec(ContainerPort {
            container_port: port,
            host_port: port,
            protocol: Protocol::Tcp,
            host_ip: Sym::EMPTY,
        })
    }
    pub fn host_port_spec(mut self, p: ContainerPort) -> Self {
        if self.data.containers.is_empty() {
            self = self.container("", &[]);
        }
        self.data.containers.last_mut().expect("a container was just ensured").ports.push(p);
        self
    }
    pub fn overhead(mut self, r: Resource) -> Self {
        self.data.overhead = Some(r);
        self
    }
    /// Pod-level `spec.resources.requests`; the resources pod-level requests cannot name
    /// (ephemeral storage, extended resources) are dropped, as upstream ignores them.
    pub fn pod_level_requests(mut self, l: ResourceList) -> Self {
        let mut kept = ResourceList::default();
        if l.has_cpu {
            kept.set(ResourceName::Cpu, l.amounts.milli_cpu);
        }
        if l.has_memory {
            kept.set(ResourceName::Memory, l.amounts.memory);
        }
        for (s, v) in l.amounts.scalar.iter() {
            if requests::is_pod_level_resource(ResourceName::Scalar(s)) {
                kept.set(ResourceName::Scalar(s), v);
            }
        }
        self.data.pod_level_requests =
            (kept.has_cpu || kept.has_memory || !kept.amounts.scalar.is_empty()).then_some(kept);
        self
    }
    /// A container's status entry (in-place resize): `allocatedResources` and
    /// `resources.requests` (`None`: the entry has no `resources`).
    pub fn container_status(
        mut self,
        name: &str,
        allocated: Option<ResourceList>,
        actual: Option<ResourceList>,
    ) -> Self {
        let st = self.data.resource_status.get_or_insert_with(Default::default);
        st.containers.push(ContainerResizeStatus { name: Sym::new(name), allocated, actual });
        self
    }
    /// The `PodResizePending` condition says `Infeasible`.
    pub fn resize_infeasible(mut self) -> Self {
        self.data.resource_status.get_or_insert_with(Default::default).resize_infeasible = true;
        self
    }
    /// Pod-level `status.resources.requests` and `status.allocatedResources`.
    pub fn pod_resource_status(mut self, actual: Option<ResourceList>, allocated: Option<ResourceList>) -> Self {
        let st = self.data.resource_status.get_or_insert_with(Default::default);
        st.pod_actual = actual;
        st.pod_allocated = allocated;
        self
    }
    /// Sums the pod's requests under `gates` (v1.35's defaults otherwise).
    pub fn feature_gates(mut self, gates: FeatureGates) -> Self {
        self.gates = gates;
        self
    }
    pub fn node_selector(mut self, k: &str, v: &str) -> Self {
        self.data.node_selector.insert(Sym::new(k), Sym::new(v));
        self
    }
    pub fn affinity(mut self, a: Affinity) -> Self {
        self.data.affinity = Some(a);
        self
    }
    pub fn node_affinity(mut self, na: super::affinity::NodeAffinity) -> Self {
        self.data.affinity.get_or_insert_with(Affinity::default).node_affinity = Some(na);
        self
    }
    pub fn toleration(mut self, t: Toleration) -> Self {
        self.data.tolerations.push(t);
        self
    }
    pub fn spread(mut self, c: TopologySpreadConstraint) -> Self {
        self.data.topology_spread_constraints.push(c);
        self
    }
    pub fn volume(mut self, v: Volume) -> Self {
        self.data.volumes.push(v);
        self
    }
    pub fn scheduling_gate(mut self, g: &str) -> Self {
        self.data.scheduling_gates.push(Sym::new(g));
        self
    }
    pub fn node_name(mut self, n: &str) -> Self {
        self.node_name = Some(Sym::new(n));
        self
    }
    pub fn nominated_node_name(mut self, n: &str) -> Self {
        self.nominated_node_name = Some(Sym::new(n));
        self
    }
    pub fn deletion_timestamp(mut self, t: Timestamp) -> Self {
        self.deletion_timestamp = Some(t);
        self
    }
    pub fn creation_timestamp(mut self, t: Timestamp) -> Self {
        self.data.creation_timestamp = t;
        self
    }
    pub fn start_time(mut self, t: Timestamp) -> Self {
        self.data.start_time = Some(t);
        self
    }
    pub fn owner(mut self, kind: &str, name: &str) -> Self {
        self.data.owner =
            Some(OwnerRef { kind: Sym::new(kind), name: Sym::new(name), uid: Sym::new(&format!("{kind}/{name}")) });
        self
    }

    pub fn active_deadline_seconds(mut self, s: i64) -> Self {
        self.data.active_deadline_seconds = Some(s);
        self
    }
    pub fn run_duration(mut self, d: Duration) -> Self {
        self.data.run_duration = Some(d);
        self
    }

    /// Sets the controlling owner reference as read from `metadata.ownerReferences`.
    pub fn owner_ref(mut self, kind: &str, name: &str, uid: &str) -> Self {
        self.data.owner = Some(OwnerRef { kind: Sym::new(kind), name: Sym::new(name), uid: Sym::new(uid) });
        self
    }

    /// Adds a `spec.resourceClaims` entry.
    pub fn resource_claim(mut self, name: &str, source: super::dra::PodClaimSource) -> Self {
        self.data.resource_claims.push(super::dra::PodResourceClaim { name: Sym::new(name), source });
        self
    }

    /// Adds a `status.resourceClaimStatuses` entry.
    pub fn resource_claim_status(mut self, name: &str, claim: Option<&str>) -> Self {
        self.data
            .resource_claim_statuses
            .push(super::dra::PodClaimStatus { name: Sym::new(name), claim: claim.map(Sym::new) });
        self
    }

    pub fn build(mut self) -> Pod {
        if !self.uid_set {
            self.data.uid = PodUid::new(&format!("{}/{}", self.data.namespace, self.data.name));
        }
        let d = &mut self.data;
        // The builder's pushes leave spare room (a one-container pod held four): the spec
        // lives as long as the pod, so it keeps only what it holds.
        d.containers.shrink_to_fit();
        d.init_containers.shrink_to_fit();
        d.tolerations.shrink_to_fit();
        d.volumes.shrink_to_fit();
        if let Some(a) = &mut d.affinity {
            merge_label_keys(a, &d.labels);
        }
        super::storage::fill_ephemeral_claim_names(&mut d.volumes, &d.name);
        if d.resource_status.as_deref().is_some_and(|s| s.is_empty() && !s.resize_infeasible) {
            d.resource_status = None;
        }
        let DerivedRequests { requests, non_zero, on_node } = requests::derive(d, &self.gates);
        (d.requests, d.non_zero_requests, d.on_node) = (requests, non_zero, on_node);
        d.host_ports = d
            .init_containers
            .iter()
            .filter(|c| c.restartable)
            .chain(d.containers.iter())
            .flat_map(|c| c.ports.iter().copied())
            .filter(|p| p.host_port > 0)
            .collect();
        d.images = d.init_containers.iter().chain(&d.containers).map(|c| normalized_image_name(c.image)).collect();
        let (has_affinity, has_required_anti) = affinity_flags_of(self.data.affinity.as_ref());
        Pod {
            priority: self.data.priority,
            affinity_bits: has_affinity as u8 | (has_required_anti as u8) << 1,
            data: Arc::new(self.data),
            node_name: self.node_name,
            nominated_node_name: self.nominated_node_name,
            deletion_timestamp: self.deletion_timestamp,
            preempted_by_scheduler: self.preempted_by_scheduler,
        }
    }
}

/// `Pod::affinity_flags` from the spec.
fn affinity_flags_of(affinity: Option<&Affinity>) -> (bool, bool) {
    let Some(a) = affinity else {
        return (false, false);
    };
    let has_affinity = a.pod_affinity.is_some() || a.pod_anti_affinity.is_some();
    let has_required_anti = a.pod_anti_affinity.as_ref().is_some_and(|x| !x.required.is_empty());
    (has_affinity, has_required_anti)
}

/// What the API server does at pod creation for pod (anti-)affinity terms: each
/// `matchLabelKeys` key the pod carries becomes `key In (value)` in the term's selector, each
/// `mismatchLabelKeys` key `key NotIn (value)`. Terms with no selector stay as they are
/// (they match nothing), and a requirement already present is not added twice.
fn merge_label_keys(affinity: &mut Affinity, labels: &Labels) {
    use super::labels::{SelectorOp, SelectorRequirement};
    let groups = [affinity.pod_affinity.as_mut(), affinity.pod_anti_affinity.as_mut()];
    for group in groups.into_iter().flatten() {
        let preferred = group.preferred.iter_mut().map(|w| &mut w.term);
        for term in group.required.iter_mut().chain(preferred) {
            let Some(selector) = term.label_selector.as_mut() else { continue };
            let keys = term.match_label_keys.iter().map(|k| (k, SelectorOp::In));
            for (key, operator) in keys.chain(term.mismatch_label_keys.iter().map(|k| (k, SelectorOp::NotIn))) {
                let Some(value) = labels.get(*key) else { continue };
                let req = SelectorRequirement { key: *key, operator, values: vec![value] };
                if !selector.match_expressions.contains(&req) {
                    selector.match_expressions.push(req);
                }
            }
        }
    }
}

/// Appends `:latest` when the image name carries no tag (no `:` after the last `/`).
pub fn normalized_image_name(image: Sym) -> Sym {
    let s = image.as_str();
    let colon = s.rfind(':').map_or(-1, |i| i as isize);
    let slash = s.rfind('/').map_or(-1, |i| i as isize);
    if colon <= slash {
        Sym::new(&format!("{s}:latest"))
    } else {
        image
    }
}

fn make_container(i: usize, image: &str, requests: &[(ResourceName, i64)], restartable: bool) -> Container {
    let mut c =
        Container { name: Sym::new(&format!("c{i}")), image: Sym::new(image), restartable, ..Container::default() };
    for &(name, v) in requests {
        c.requests.set(name, v);
        c.has_cpu_request |= name == ResourceName::Cpu;
        c.has_memory_request |= name == ResourceName::Memory;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The handle's copy of the priority follows the spec's through every way a pod is made.
    #[test]
    fn handle_priority_equals_the_spec_priority() {
        let p = Pod::builder("p").priority(7).build();
        let node = Sym::new("n");
        let derived = [
            p.clone(),
            p.with_node(node),
            p.with_priority(-3, PreemptionPolicy::Never),
            p.with_resolved_priority(None, 1_000, PreemptionPolicy::PreemptLowerPriority),
            p.with_priority(5, PreemptionPolicy::Never).with_start_time(Timestamp::from_secs(9)).with_node(node),
            Pod::builder("q").build(),
        ];
        let want = [7, 7, -3, 1_000, 5, 0];
        for (pod, want) in derived.iter().zip(want) {
            assert_eq!(pod.priority, want, "{pod:?}");
            assert_eq!(pod.data.priority, want, "{pod:?}");
        }
    }

    /// The handle's affinity flags are the spec's.
    #[test]
    fn handle_affinity_flags_follow_the_spec() {
        use crate::testing::{
            pod_affinity_term, prefers_pod_anti_affinity, requires_pod_affinity, requires_pod_anti_affinity,
        };
        let cases = [
            (None, (false, false)),
            (Some(Affinity::default()), (false, false)),
            (Some(requires_pod_affinity("app", "a")), (true, false)),
            (Some(requires_pod_anti_affinity("app", "a")), (true, true)),
            (Some(prefers_pod_anti_affinity(5, pod_affinity_term("app", "a", "zone"))), (true, false)),
        ];
        for (affinity, want) in cases {
            let mut b = Pod::builder("p");
            if let Some(a) = affinity.clone() {
                b = b.affinity(a);
            }
            let p = b.build();
            assert_eq!(p.affinity_flags(), want, "{affinity:?}");
            assert_eq!(p.with_priority(3, PreemptionPolicy::Never).with_node(Sym::new("n")).affinity_flags(), want);
        }
    }
    /// A built pod's spec keeps no spare room from the builder's pushes (peak memory of the
    /// default run: one container used to hold room for four).
    #[test]
    fn built_spec_keeps_no_spare_room() {
        let p = Pod::builder("p")
            .container("a", &[(ResourceName::Cpu, 100)])
            .init_container("i", &[], false)
            .toleration(Toleration::new("k", crate::api::TolerationOp::Exists, "", None))
            .build();
        assert_eq!((p.containers.capacity(), p.containers.len()), (1, 1));
        assert_eq!((p.init_containers.capacity(), p.tolerations.capacity()), (1, 1));
    }
    use ResourceName::*;

    #[test]
    fn pod_effective_request_table() {
        // (description, pod, want cpu, want memory)
        let cases = [
            (
                "containers sum",
                Pod::builder("a").container("i", &[(Cpu, 100), (Memory, 10)]).container("i", &[(Cpu, 200)]).build(),
                300,
                10,
            ),
            (
                "init container larger than sum wins per resource",
                Pod::builder("b")
                    .container("i", &[(Cpu, 100), (Memory, 50)])
                    .init_container("i", &[(Cpu, 500), (Memory, 10)], false)
                    .build(),
                500,
                50,
            ),
            (
                "sidecar adds to the sum and to later init containers",
                Pod::builder("c")
                    .init_container("s", &[(Cpu, 100)], true)
                    .init_container("i", &[(Cpu, 250)], false)
                    .container("i", &[(Cpu, 100)])
                    .build(),
                350,
                0,
            ),
            (
                "overhead added last",
                Pod::builder("d")
                    .container("i", &[(Cpu, 100)])
                    .overhead(Resource::default().with(Cpu, 10).with(Memory, 7))
                    .build(),
                110,
                7,
            ),
            ("best effort", Pod::builder("e").container("i", &[]).build(), 0, 0),
        ];
        for (desc, pod, cpu, mem) in cases {
            assert_eq!((pod.requests().milli_cpu, pod.requests().memory), (cpu, mem), "{desc}");
        }
    }

    #[test]
    fn match_and_mismatch_label_keys_merge_into_the_selector() {
        use crate::api::{LabelSelector, PodAffinity, PodAffinityTerm, SelectorOp};
        let term = PodAffinityTerm {
            label_selector: Some(LabelSelector::default()),
            topology_key: Sym::new("zone"),
            match_label_keys: vec![Sym::new("version"), Sym::new("absent")],
            mismatch_label_keys: vec![Sym::new("tenant")],
            ..Default::default()
        };
        let no_selector = PodAffinityTerm { label_selector: None, ..term.clone() };
        let pod = Pod::builder("p")
            .label("version", "v2")
            .label("tenant", "t1")
            .affinity(Affinity {
                pod_affinity: Some(PodAffinity { required: vec![term, no_selector], preferred: vec![] }),
                ..Affinity::default()
            })
            .build();
        let required = &pod.affinity.as_ref().unwrap().pod_affinity.as_ref().unwrap().required;
        let reqs = &required[0].label_selector.as_ref().unwrap().match_expressions;
        let got: Vec<(&str, SelectorOp, &str)> =
            reqs.iter().map(|r| (r.key.as_str(), r.operator, r.values[0].as_str())).collect();
        assert_eq!(got, vec![("version", SelectorOp::In, "v2"), ("tenant", SelectorOp::NotIn, "t1")]);
        assert!(required[1].label_selector.is_none());
    }

    #[test]
    fn normalized_image_name_table() {
        for (image, want) in [
            ("nginx", "nginx:latest"),
            ("nginx:1.25", "nginx:1.25"),
            ("registry:5000/app", "registry:5000/app:latest"),
            ("registry:5000/app:v1", "registry:5000/app:v1"),
            ("app@sha256:abc", "app@sha256:abc"),
        ] {
            assert_eq!(normalized_image_name(Sym::new(image)).as_str(), want, "{image}");
        }
    }

    #[test]
    fn with_priority_copies_the_spec_and_keeps_the_status() {
        let p = Pod::builder("a")
            .namespace("prod")
            .label("app", "web")
            .priority_class_name("high")
            .container("i", &[(Cpu, 250)])
            .host_port(80)
            .node_name("n1")
            .nominated_node_name("n2")
            .deletion_timestamp(Timestamp(5))
            .preempted_by_scheduler()
            .build();
        let q = p.with_priority(1000, PreemptionPolicy::Never);
        assert_eq!((q.priority, q.preemption_policy), (1000, PreemptionPolicy::Never));
        assert_eq!((p.priority, p.preemption_policy), (0, PreemptionPolicy::PreemptLowerPriority), "original kept");
        assert!(!q.same_spec(&p));
        assert_eq!(q.uid, p.uid);
        assert_eq!(q.priority_class_name, Some(Sym::new("high")));
        assert_eq!(q.requests(), p.requests(), "derived fields copied");
        assert_eq!(q.host_ports(), p.host_ports());
        assert_eq!(q.images(), p.images());
        assert_eq!(q.labels, p.labels);
        assert_eq!(
            (q.node_name, q.nominated_node_name, q.deletion_timestamp, q.preempted_by_scheduler),
            (p.node_name, p.nominated_node_name, p.deletion_timestamp, true)
        );
        let r = p.with_resolved_priority(None, 7, PreemptionPolicy::PreemptLowerPriority);
        assert_eq!((r.priority_class_name, r.priority), (None, 7));
    }

    #[test]
    fn pod_non_zero_request_defaults_unnamed_only() {
        let p = Pod::builder("a").container("i", &[(Cpu, 0)]).container("i", &[(Memory, 5)]).build();
        assert_eq!(p.non_zero_requests().milli_cpu, DEFAULT_MILLI_CPU_REQUEST);
        assert_eq!(p.non_zero_requests().memory, DEFAULT_MEMORY_REQUEST + 5);
        assert!(!p.is_best_effort());
        assert!(Pod::builder("b").container("i", &[]).build().is_best_effort());
    }
}
