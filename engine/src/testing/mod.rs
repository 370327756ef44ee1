//! Builders for tests, benches and the synthetic clusters: the objects of upstream
//! scheduler_perf's default templates (`node-default.yaml`, `pod-default.yaml`).

use crate::api::{Node, Pod, ResourceName};

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

pub mod queue_model;
