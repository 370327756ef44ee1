//! A pod's requests as kube-scheduler v1.35 sums them: the one function every consumer reads
//! (NodeResourcesFit's filter and scores, BalancedAllocation, a node's totals, preemption's
//! accounting, the snapshot's columns), computed once when the pod is built.
//!
//! Per resource:
//! 1. the app containers are summed; each restartable init container (a sidecar,
//!    `restartPolicy: Always`) is added to that sum; a regular init container needs its own
//!    request plus the sidecars listed before it; the pod needs the largest of the sum and
//!    every init container's need;
//! 2. pod-level requests (`spec.resources.requests`: cpu, memory, hugepages-*), where set,
//!    replace that value (PodLevelResources);
//! 3. `spec.overhead` is added.
//!
//! For a pod on a node (InPlacePodVerticalScaling), a container (app or sidecar) whose status
//! entry has `resources` counts max(spec, `resources.requests`, `allocatedResources`), or
//! max(`resources.requests`, `allocatedResources`) while the pod's `PodResizePending`
//! condition says `Infeasible`; an entry without `resources` changes nothing; regular init
//! containers count their spec. With InPlacePodLevelResourcesVerticalScaling the pod-level
//! requests follow the same rule against `status.resources` / `status.allocatedResources`.
//! The filter reads the pod's spec alone (a pending pod has no such status); everything else
//! reads the status-aware sum, which equals it for a pending pod.
//!
//! For scoring, a container that names no cpu / memory request counts 100m / 200Mi
//! ([`DEFAULT_MILLI_CPU_REQUEST`], [`DEFAULT_MEMORY_REQUEST`]): for the pod NodeResourcesFit
//! scores, always per container; in a node's totals, only for a resource that neither the pod
//! level, nor any container, nor the overhead names when pod-level requests are set. Whether a
//! resource is *named* matters, not its value: upstream sums maps, and a named 0 is present.
//!
//! NodeResourcesFit's scores (every strategy) read the pod being scored from its containers'
//! specs alone: v1.35.4 never hands its scorer the PodLevelResources and in-place resize
//! switches (`NewFit` sets them on the plugin, not on the embedded scorer), so pod-level
//! requests and status are skipped there whatever the gates; BalancedAllocation's scorer gets
//! them. The recorded decisions (`golden-pending/resources-a`) show it: a pod with pod-level
//! requests of 1550m is scored as its containers' 550m.

use super::pod::{Container, PodData, DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST};
use super::resources::{Resource, ResourceName};
use super::Sym;
use crate::features::{Feature, FeatureGates};

/// A resource list as read, with whether it names cpu and memory (a named 0 counts as named:
/// scoring's defaults apply to unnamed ones only).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceList {
    pub amounts: Resource,
    pub has_cpu: bool,
    pub has_memory: bool,
}

impl ResourceList {
    /// A list naming exactly the resources given.
    pub fn of(items: &[(ResourceName, i64)]) -> ResourceList {
        let mut l = ResourceList::default();
        for &(name, v) in items {
            l.set(name, v);
        }
        l
    }

    /// Names `name` with `value`.
    pub fn set(&mut self, name: ResourceName, value: i64) {
        self.amounts.set(name, value);
        self.has_cpu |= name == ResourceName::Cpu;
        self.has_memory |= name == ResourceName::Memory;
    }

    fn add(&mut self, other: &ResourceList) {
        self.amounts.add(&other.amounts);
        self.has_cpu |= other.has_cpu;
        self.has_memory |= other.has_memory;
    }

    fn set_max(&mut self, other: &ResourceList) {
        self.amounts.set_max(&other.amounts);
        self.has_cpu |= other.has_cpu;
        self.has_memory |= other.has_memory;
    }
}

/// Whether pod-level requests may name `name` (upstream's IsSupportedPodLevelResource).
pub fn is_pod_level_resource(name: ResourceName) -> bool {
    match name {
        ResourceName::Cpu | ResourceName::Memory => true,
        ResourceName::Scalar(s) => s.as_str().starts_with("hugepages-"),
        ResourceName::EphemeralStorage | ResourceName::Pods => false,
    }
}

/// The containers' sum from their specs alone (upstream's AggregateContainerRequests without
/// status): what API defaulting fills pod-level requests from.
pub fn aggregate_container_requests(containers: &[Container], init_containers: &[Container]) -> ResourceList {
    let data = PodData::aggregate_only(containers, init_containers);
    let o = SumOptions {
        pod_level: false,
        use_status: false,
        pod_level_status: false,
        default_cpu: false,
        default_memory: false,
    };
    sum(&data, &o)
}

/// One container's status entry, as the in-place resize rule reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerResizeStatus {
    /// The container (app or init) the entry is about.
    pub name: Sym,
    /// `allocatedResources`.
    pub allocated: Option<ResourceList>,
    /// `resources.requests`; `None` when the entry has no `resources` (then the entry changes
    /// nothing).
    pub actual: Option<ResourceList>,
}

/// What a pod's status says about its resources (in-place resize).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodResourceStatus {
    pub containers: Vec<ContainerResizeStatus>,
    /// The `PodResizePending` condition's reason is `Infeasible`.
    pub resize_infeasible: bool,
    /// `status.resources.requests` (pod level); `None` without `status.resources`.
    pub pod_actual: Option<ResourceList>,
    /// `status.allocatedResources` (pod level).
    pub pod_allocated: Option<ResourceList>,
}

impl PodResourceStatus {
    /// Whether any entry can change a sum (a container entry with `resources`, or pod-level
    /// status resources).
    pub fn is_empty(&self) -> bool {
        self.containers.iter().all(|c| c.actual.is_none()) && self.pod_actual.is_none()
    }
}

/// How a sum is taken.
#[derive(Clone, Copy, Debug)]
struct SumOptions {
    /// PodLevelResources: pod-level requests replace the containers' sum.
    pod_level: bool,
    /// InPlacePodVerticalScaling: containers' status entries count.
    use_status: bool,
    /// InPlacePodLevelResourcesVerticalScaling: the pod-level status counts too.
    pod_level_status: bool,
    /// Scoring's defaults for a container that names no cpu / memory request.
    default_cpu: bool,
    default_memory: bool,
}

/// The requests a pod is built with: what each consumer reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DerivedRequests {
    /// The spec's sum (the filter's).
    pub requests: Resource,
    /// The containers' specs with scoring's defaults per container, plus overhead
    /// (NodeResourcesFit's scores, every strategy, for the pod being scored).
    pub non_zero: Resource,
    /// What a node counts for the pod, when it differs from `requests` / `non_zero`'s cpu and
    /// memory (a pod with resize status or pod-level requests).
    pub on_node: Option<Box<OnNode>>,
}

/// What a node counts for a pod (upstream's NodeInfo `Requested` and `NonZeroRequested`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OnNode {
    pub requests: Resource,
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
}

/// Every sum of `data` under `gates`.
pub(crate) fn derive(data: &PodData, gates: &FeatureGates) -> DerivedRequests {
    let pod_level = gates.enabled(Feature::PodLevelResources);
    let use_status = gates.enabled(Feature::InPlacePodVerticalScaling);
    let base =
        SumOptions { pod_level, use_status: false, pod_level_status: false, default_cpu: false, default_memory: false };
    let requests = sum(data, &base).amounts;
    let with_status = SumOptions {
        use_status,
        pod_level_status: use_status && gates.enabled(Feature::InPlacePodLevelResourcesVerticalScaling),
        ..base
    };
    let on_node = sum(data, &with_status);
    // NodeResourcesFit's scorer: the containers' specs with the defaults, no pod level (see
    // the module docs).
    let scored = SumOptions { pod_level: false, default_cpu: true, default_memory: true, ..base };
    let non_zero = sum(data, &scored).amounts;
    // A node's totals: the defaults for every container when the pod has no pod-level
    // requests, else only for what nobody names.
    let pod_level_set = pod_level && data.pod_level_requests.is_some();
    let (default_cpu, default_memory) =
        if pod_level_set { (!on_node.has_cpu, !on_node.has_memory) } else { (true, true) };
    let (non_zero_cpu, non_zero_memory) = if !default_cpu && !default_memory {
        (on_node.amounts.milli_cpu, on_node.amounts.memory)
    } else {
        let s = sum(data, &SumOptions { default_cpu, default_memory, ..with_status }).amounts;
        (s.milli_cpu, s.memory)
    };
    let differs =
        on_node.amounts != requests || non_zero_cpu != non_zero.milli_cpu || non_zero_memory != non_zero.memory;
    DerivedRequests {
        requests,
        non_zero,
        on_node: differs.then(|| Box::new(OnNode { requests: on_node.amounts, non_zero_cpu, non_zero_memory })),
    }
}

/// The pod's requests under `o` (see the module docs for the rule).
fn sum(data: &PodData, o: &SumOptions) -> ResourceList {
    let status = data.resource_status.as_deref().filter(|_| o.use_status);
    let infeasible = status.is_some_and(|s| s.resize_infeasible);
    let entry = |c: &Container| status.and_then(|s| s.containers.iter().find(|e| e.name == c.name));
    // A container's request: its spec, or the resize rule's when its entry has `resources`;
    // then scoring's defaults for what it does not name.
    let container = |c: &Container, status_counts: bool| -> ResourceList {
        let spec =
            ResourceList { amounts: c.requests.clone(), has_cpu: c.has_cpu_request, has_memory: c.has_memory_request };
        let mut r = match entry(c).filter(|_| status_counts) {
            Some(ContainerResizeStatus { actual: Some(actual), allocated, .. }) => {
                let mut r = if infeasible { actual.clone() } else { spec };
                if infeasible {
                    if let Some(a) = allocated {
                        r.set_max(a);
                    }
                } else {
                    r.set_max(actual);
                    if let Some(a) = allocated {
                        r.set_max(a);
                    }
                }
                r
            }
            _ => spec,
        };
        if o.default_cpu && !r.has_cpu {
            r.set(ResourceName::Cpu, DEFAULT_MILLI_CPU_REQUEST);
        }
        if o.default_memory && !r.has_memory {
            r.set(ResourceName::Memory, DEFAULT_MEMORY_REQUEST);
        }
        r
    };
    let mut total = ResourceList::default();
    for c in &data.containers {
        total.add(&container(c, true));
    }
    let mut sidecars = ResourceList::default();
    let mut init_max = ResourceList::default();
    for c in &data.init_containers {
        let req = container(c, c.restartable);
        if c.restartable {
            total.add(&req);
            sidecars.add(&req);
            init_max.set_max(&sidecars);
        } else {
            let mut need = req;
            need.add(&sidecars);
            init_max.set_max(&need);
        }
    }
    total.set_max(&init_max);
    if let Some(pod_level) = data.pod_level_requests.as_ref().filter(|_| o.pod_level) {
        let effective =
            data.resource_status.as_deref().filter(|s| o.pod_level_status && s.pod_actual.is_some()).map(|s| {
                let actual = s.pod_actual.clone().unwrap_or_default();
                let mut r = if s.resize_infeasible { actual.clone() } else { pod_level.clone() };
                if !s.resize_infeasible {
                    r.set_max(&actual);
                }
                if let Some(a) = &s.pod_allocated {
                    r.set_max(a);
                }
                r
            });
        let names = pod_level_names(pod_level);
        for name in names {
            let v = effective.as_ref().unwrap_or(pod_level).amounts.get(name);
            total.set(name, v);
        }
    }
    if let Some(overhead) = &data.overhead {
        // Overhead comes from a RuntimeClass and names what it sets (a named 0 is not kept).
        let named = ResourceList {
            amounts: overhead.clone(),
            has_cpu: overhead.milli_cpu != 0,
            has_memory: overhead.memory != 0,
        };
        total.add(&named);
    }
    total
}

/// The resources pod-level requests name (cpu and memory when named, then hugepages).
fn pod_level_names(l: &ResourceList) -> impl Iterator<Item = ResourceName> + '_ {
    let cpu = l.has_cpu.then_some(ResourceName::Cpu);
    let memory = l.has_memory.then_some(ResourceName::Memory);
    cpu.into_iter().chain(memory).chain(l.amounts.scalar.iter().map(|(s, _)| ResourceName::Scalar(s)))
}

#[cfg(test)]
mod tests;
