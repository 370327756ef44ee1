//! The in-tree plugins, one file each, named as upstream names them.

pub mod default_preemption;
pub mod dynamic_resources;
pub mod equal_priority;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod legacy_volume_limits;
pub mod node_affinity;
pub mod node_conditions;
pub mod node_label;
pub mod node_name;
pub mod node_ports;
pub mod node_prefer_avoid_pods;
pub mod node_resources_balanced;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod scheduling_gates;
pub mod selector_spread;
pub mod service_affinity;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

#[cfg(test)]
mod signature_tests;

#[cfg(test)]
pub(crate) mod test_util {
    use std::sync::Arc;

    use crate::api::{Node, Pod};
    use crate::snapshot::node_info::NodeInfo;

    /// A NodeInfo holding `pods` (each placed on the node).
    pub fn node_info(node: Node, pods: &[Pod]) -> NodeInfo {
        let mut info = NodeInfo::new(Arc::new(node));
        for p in pods {
            info.add_pod(p.with_node(info.name()));
        }
        info
    }
}

#[cfg(test)]
mod batch_tests {
    use proptest::prelude::*;

    use super::test_util::node_info;
    use crate::api::{Node, Pod, ResourceName::*, Taint, TaintEffect};
    use crate::framework::{CycleState, Profile};
    use crate::snapshot::node_info::NodeInfo;
    use crate::snapshot::Snapshot;

    proptest! {
        /// Every score plugin's batch `score_nodes` equals its per-node `score`.
        #[test]
        fn score_nodes_equals_score_per_node(
            nodes in prop::collection::vec((0i64..8000, 0i64..(64 << 30), 0usize..4, any::<bool>(), any::<bool>()), 1..40),
            pod_cpu in prop::option::of(0i64..4000), pod_mem in prop::option::of(0i64..(8 << 30)), image in any::<bool>(),
        ) {
            let infos: Vec<NodeInfo> = nodes.iter().enumerate().map(|(i, &(cpu, mem, pods, taint, img))| {
                let mut b = Node::builder(&format!("n{i}")).resources(cpu, mem, 110);
                if taint { b = b.taint(Taint::new("k", "", TaintEffect::PreferNoSchedule)); }
                if img { b = b.image(&["app:1"], 300 << 20); }
                let existing: Vec<Pod> = (0..pods).map(|j| Pod::builder(&format!("e{i}-{j}")).container("x", &[(Cpu, 250), (Memory, 1 << 29)]).build()).collect();
                node_info(b.build(), &existing)
            }).collect();
            let mut reqs = vec![];
            if let Some(c) = pod_cpu { reqs.push((Cpu, c)); }
            if let Some(m) = pod_mem { reqs.push((Memory, m)); }
            let pod = Pod::builder("p").container(if image { "app:1" } else { "other" }, &reqs).build();
            let snap = Snapshot::from_node_infos(infos.clone());
            let refs: Vec<&NodeInfo> = infos.iter().collect();
            let profile = Profile::default_profile();
            let mut state = CycleState::new();
            let mut skipped = Vec::new();
            for p in &profile.pre_score {
                if p.pre_score(&mut state, &pod, &snap, &crate::framework::Feasible::nodes(&refs)).is_skip() {
                    skipped.push(p.name());
                }
            }
            for ws in profile.score.iter().filter(|ws| !skipped.contains(&ws.plugin.name())) {
                let mut batch = Vec::new();
                ws.plugin.score_nodes(&state, &pod, &refs, &snap, &mut batch).unwrap();
                let single: Vec<i64> = refs.iter().map(|n| ws.plugin.score(&state, &pod, n, &snap).unwrap()).collect();
                prop_assert_eq!(batch, single, "{}", ws.plugin.name());
            }
        }
    }
}
