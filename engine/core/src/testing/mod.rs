//! Builders for tests, benches and the synthetic clusters: the objects of upstream
//! scheduler_perf's default templates (`node-default.yaml`, `pod-default.yaml`).

use crate::api::{
    Affinity, LabelSelector, Labels, Node, Pod, PodAffinity, PodAffinityTerm, ResourceName, Sym,
    WeightedPodAffinityTerm,
};

pub const GI: i64 = 1 << 30;
pub const MI: i64 = 1 << 20;

/// `node-default.yaml`: 4 CPU, 32Gi memory, 110 pods, Ready.
pub fn default_node(name: &str) -> Node {
    Node::builder(name).resources(4000, 32 * GI, 110).build()
}

/// `pod-default.yaml`: one pause container requesting 100m CPU and 500Mi memory, with a
/// container port 80 that is not a host port.
pub fn default_pod(name: &str) -> Pod {
    Pod::builder(name)
        .container("registry.k8s.io/pause:3.10.1", &[(ResourceName::Cpu, 100), (ResourceName::Memory, 500 * MI)])
        .build()
}

/// A selector matching pods labelled `key=value`.
pub fn selector(key: &str, value: &str) -> LabelSelector {
    LabelSelector { match_labels: Labels::from_pairs([(key, value)]), ..Default::default() }
}

/// A term over pods labelled `key=value` in the pod's own namespace, per `topology_key` domain.
pub fn pod_affinity_term(key: &str, value: &str, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector(key, value)),
        topology_key: Sym::new(topology_key),
        ..Default::default()
    }
}

/// Required pod affinity to pods labelled `key=value`, per node (`kubernetes.io/hostname`).
pub fn requires_pod_affinity(key: &str, value: &str) -> Affinity {
    Affinity { pod_affinity: Some(required_terms(key, value)), ..Affinity::default() }
}

/// Required pod anti-affinity to pods labelled `key=value`, per node.
pub fn requires_pod_anti_affinity(key: &str, value: &str) -> Affinity {
    Affinity { pod_anti_affinity: Some(required_terms(key, value)), ..Affinity::default() }
}

/// Preferred pod anti-affinity: the one `term`, with `weight`.
pub fn prefers_pod_anti_affinity(weight: i32, term: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAffinity {
            required: vec![],
            preferred: vec![WeightedPodAffinityTerm { weight, term }],
        }),
        ..Affinity::default()
    }
}

fn required_terms(key: &str, value: &str) -> PodAffinity {
    PodAffinity { required: vec![pod_affinity_term(key, value, "kubernetes.io/hostname")], preferred: vec![] }
}

pub mod queue_model;

/// A cluster that refuses every request (tests of code that must not write, or whose writes
/// are not what they check).
pub struct RefusingApi;

impl crate::cluster::ClusterApi for RefusingApi {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), crate::cluster::BindError> {
        Err(crate::cluster::BindError { pod: pod.key(), node, why: "this test's cluster refuses".into() })
    }
    fn delete_victim(&self, victim: &Pod) -> Result<(), crate::cluster::ApiError> {
        Err(crate::cluster::ApiError { op: "delete", pod: victim.key(), why: "this test's cluster refuses".into() })
    }
    fn set_nominated_node(&self, pod: &Pod, _: Option<Sym>) -> Result<(), crate::cluster::ApiError> {
        Err(crate::cluster::ApiError { op: "nominate", pod: pod.key(), why: "this test's cluster refuses".into() })
    }
}
