//! The node object.

use std::sync::Arc;

use super::affinity::Taint;
use super::intern::Sym;
use super::labels::Labels;
use super::resources::{Resource, ResourceName};

pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_REGION: &str = "topology.kubernetes.io/region";
pub const LABEL_ZONE_BETA: &str = "failure-domain.beta.kubernetes.io/zone";
pub const LABEL_REGION_BETA: &str = "failure-domain.beta.kubernetes.io/region";
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeConditionType {
    Ready,
    MemoryPressure,
    DiskPressure,
    PidPressure,
    NetworkUnavailable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeCondition {
    pub kind: NodeConditionType,
    pub status: ConditionStatus,
}

/// An image present on a node, under all its names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeImage {
    pub names: Vec<Sym>,
    pub size_bytes: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub name: Sym,
    pub labels: Labels,
    pub annotations: Vec<(Sym, Arc<str>)>,
    pub allocatable: Resource,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    pub conditions: Vec<NodeCondition>,
    pub images: Vec<NodeImage>,
}

impl Node {
    pub fn builder(name: &str) -> NodeBuilder {
        NodeBuilder {
            node: Node {
                name: Sym::new(name),
                labels: Labels::new(),
                annotations: Vec::new(),
                allocatable: Resource::default(),
                taints: Vec::new(),
                unschedulable: false,
                conditions: vec![NodeCondition { kind: NodeConditionType::Ready, status: ConditionStatus::True }],
                images: Vec::new(),
            },
        }
    }

    /// The zone key the NodeTree groups by: region and zone, empty when neither label is set.
    /// As upstream's `GetZoneKey`, each is read from the deprecated `failure-domain.beta`
    /// label first, and from the `topology.kubernetes.io` label only when the beta one is
    /// absent (a beta label set to "" still wins).
    pub fn zone_key(&self) -> (Sym, Sym) {
        let get = |beta: &str, ga: &str| {
            self.labels.get(Sym::new(beta)).or_else(|| self.labels.get(Sym::new(ga))).unwrap_or(Sym::EMPTY)
        };
        (get(LABEL_REGION_BETA, LABEL_REGION), get(LABEL_ZONE_BETA, LABEL_ZONE))
    }

    pub fn condition(&self, kind: NodeConditionType) -> Option<ConditionStatus> {
        self.conditions.iter().find(|c| c.kind == kind).map(|c| c.status)
    }
}

pub struct NodeBuilder {
    node: Node,
}

impl NodeBuilder {
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.node.labels.insert(Sym::new(k), Sym::new(v));
        self
    }
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.node.annotations.push((Sym::new(k), Arc::from(v)));
        self
    }
    pub fn allocatable(mut self, r: Resource) -> Self {
        self.node.allocatable = r;
        self
    }
    /// Sets one allocatable resource.
    pub fn capacity(mut self, name: ResourceName, v: i64) -> Self {
        self.node.allocatable.set(name, v);
        self
    }
    /// Shorthand: CPU millicores, memory bytes, max pods.
    pub fn resources(self, milli_cpu: i64, memory: i64, pods: i64) -> Self {
        self.capacity(ResourceName::Cpu, milli_cpu)
            .capacity(ResourceName::Memory, memory)
            .capacity(ResourceName::Pods, pods)
    }
    pub fn taint(mut self, t: Taint) -> Self {
        self.node.taints.push(t);
        self
    }
    pub fn unschedulable(mut self, u: bool) -> Self {
        self.node.unschedulable = u;
        self
    }
    pub fn condition(mut self, kind: NodeConditionType, status: ConditionStatus) -> Self {
        self.node.conditions.retain(|c| c.kind != kind);
        self.node.conditions.push(NodeCondition { kind, status });
        self
    }
    pub fn image(mut self, names: &[&str], size_bytes: i64) -> Self {
        self.node.images.push(NodeImage { names: names.iter().map(|n| Sym::new(n)).collect(), size_bytes });
        self
    }
    pub fn build(self) -> Node {
        self.node
    }
}
