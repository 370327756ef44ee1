//! The in-tree plugins, one file each, named as upstream names them.

pub mod image_locality;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod taint_toleration;

#[cfg(test)]
pub(crate) mod test_util {
    use std::sync::Arc;

    use crate::api::{Node, Pod};
    use crate::cache::node_info::NodeInfo;

    /// A NodeInfo holding `pods` (each placed on the node).
    pub fn node_info(node: Node, pods: &[Pod]) -> NodeInfo {
        let mut info = NodeInfo::new(Arc::new(node));
        for p in pods {
            info.add_pod(p.with_node(info.name()));
        }
        info
    }
}
