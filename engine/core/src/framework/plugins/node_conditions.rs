//! NodeConditions: rejects nodes that are not Ready, whose network is unavailable or that are
//! marked unschedulable, nodes under memory pressure for BestEffort pods, and nodes under disk
//! or PID pressure. Off by default.
//!
//! This is the seeds' CheckNodeCondition, CheckNodeMemoryPressure, CheckNodePIDPressure and
//! CheckNodeDiskPressure predicates in one filter, run in the predicates' order: the node
//! condition check first (every reason it finds), then memory, PID and disk pressure (the
//! first that fails). Every rejection is UnschedulableAndUnresolvable: evicting pods does not
//! change a node's conditions, so preemption cannot help (the predicates were on upstream's
//! list of unresolvable reasons).
//!
//! Today's kube-scheduler has no such filter. The node lifecycle controller turns conditions
//! into taints (`node.kubernetes.io/not-ready`, `…/unreachable`, `…/network-unavailable`,
//! `…/memory-pressure`, `…/disk-pressure`, `…/pid-pressure`, and `…/unschedulable` for
//! `spec.unschedulable`), and TaintToleration (with NodeUnschedulable) rejects the nodes
//! unless the pod tolerates the taint. This plugin reads the conditions themselves, as the
//! predicates did, and so ignores tolerations; enable it only for a legacy profile.

use crate::api::{ConditionStatus, Node, NodeConditionType, Pod};
use crate::framework::{Code, CycleState, FilterPlugin, Plugin, Reason, Status};
use crate::snapshot::node_info::NodeInfo;

pub const NAME: &str = "NodeConditions";
pub const NOT_READY: &str = "node(s) were not ready";
pub const NETWORK_UNAVAILABLE: &str = "node(s) had unavailable network";
pub const UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const MEMORY_PRESSURE: &str = "node(s) had memory pressure";
pub const DISK_PRESSURE: &str = "node(s) had disk pressure";
pub const PID_PRESSURE: &str = "node(s) had pid pressure";

#[derive(Clone, Copy, Debug, Default)]
pub struct NodeConditions;

impl Plugin for NodeConditions {
    fn name(&self) -> &'static str {
        NAME
    }
}

/// Whether the pod is of QoS class BestEffort: no container or init container requests cpu
/// or memory (the only resources QoS looks at; the model has no limits, which the API
/// server copies into unset requests).
pub fn is_best_effort_qos(pod: &Pod) -> bool {
    pod.is_best_effort()
}

/// The seeds' CheckNodeCondition: a Ready condition that is not True, a NetworkUnavailable
/// condition that is not False (in the order the node lists them), then `spec.unschedulable`.
/// A node that reports no Ready condition passes, as it did upstream.
fn condition_reasons(node: &Node, unschedulable: bool, mut push: impl FnMut(&'static str)) {
    for c in &node.conditions {
        match c.kind {
            NodeConditionType::Ready if c.status != ConditionStatus::True => push(NOT_READY),
            NodeConditionType::NetworkUnavailable if c.status != ConditionStatus::False => push(NETWORK_UNAVAILABLE),
            _ => {}
        }
    }
    if unschedulable {
        push(UNSCHEDULABLE);
    }
}

/// The pressure predicates in their order; the first that fails.
fn pressure_reason(pod: &Pod, node: &Node) -> Option<&'static str> {
    let under = |kind| node.condition(kind) == Some(ConditionStatus::True);
    if under(NodeConditionType::MemoryPressure) && is_best_effort_qos(pod) {
        return Some(MEMORY_PRESSURE);
    }
    if under(NodeConditionType::PidPressure) {
        return Some(PID_PRESSURE);
    }
    if under(NodeConditionType::DiskPressure) {
        return Some(DISK_PRESSURE);
    }
    None
}

/// Whether the node's conditions admit the pod (preemption can reuse this).
pub fn fits(pod: &Pod, node: &NodeInfo) -> bool {
    let mut ok = true;
    condition_reasons(node.node(), node.unschedulable(), |_| ok = false);
    ok && pressure_reason(pod, node.node()).is_none()
}

impl FilterPlugin for NodeConditions {
    fn reads_pods(&self) -> bool {
        false
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        let mut st = Status::success();
        condition_reasons(node.node(), node.unschedulable(), |r| st.reasons.push(Reason::Static(r)));
        if st.reasons.is_empty() {
            match pressure_reason(pod, node.node()) {
                None => return st,
                Some(r) => st.reasons.push(Reason::Static(r)),
            }
        }
        st.code = Code::UnschedulableAndUnresolvable;
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ResourceName::*;
    use crate::framework::plugins::test_util::node_info;
    use ConditionStatus::*;
    use NodeConditionType::*;

    type Conditions = Vec<(NodeConditionType, ConditionStatus)>;

    #[test]
    fn node_conditions_filter_table() {
        let best_effort = Pod::builder("be").container("i", &[]).build();
        let burstable = Pod::builder("bu").container("i", &[(Memory, 1 << 20)]).build();
        let storage_only = Pod::builder("st").container("i", &[(EphemeralStorage, 1 << 20)]).build();
        let init_cpu = Pod::builder("ic").init_container("i", &[(Cpu, 10)], false).container("i", &[]).build();
        let node = |conds: &[(NodeConditionType, ConditionStatus)], unschedulable: bool| {
            let mut b = Node::builder("n").unschedulable(unschedulable);
            for &(k, s) in conds {
                b = b.condition(k, s);
            }
            node_info(b.build(), &[])
        };
        // (description, node conditions, unschedulable, pod, reasons; empty = fits)
        let cases: Vec<(&str, Conditions, bool, &Pod, Vec<&str>)> = vec![
            ("ready node", vec![], false, &best_effort, vec![]),
            ("not ready", vec![(Ready, False)], false, &burstable, vec![NOT_READY]),
            ("ready unknown", vec![(Ready, Unknown)], false, &burstable, vec![NOT_READY]),
            ("network unavailable", vec![(NetworkUnavailable, True)], false, &burstable, vec![NETWORK_UNAVAILABLE]),
            ("network unknown", vec![(NetworkUnavailable, Unknown)], false, &burstable, vec![NETWORK_UNAVAILABLE]),
            ("network available", vec![(NetworkUnavailable, False)], false, &burstable, vec![]),
            ("unschedulable", vec![], true, &burstable, vec![UNSCHEDULABLE]),
            (
                "every condition reason at once",
                vec![(Ready, False), (NetworkUnavailable, True)],
                true,
                &burstable,
                vec![NOT_READY, NETWORK_UNAVAILABLE, UNSCHEDULABLE],
            ),
            (
                "memory pressure rejects best effort",
                vec![(MemoryPressure, True)],
                false,
                &best_effort,
                vec![MEMORY_PRESSURE],
            ),
            ("memory pressure admits burstable", vec![(MemoryPressure, True)], false, &burstable, vec![]),
            (
                "only cpu and memory make a pod not best effort",
                vec![(MemoryPressure, True)],
                false,
                &storage_only,
                vec![MEMORY_PRESSURE],
            ),
            ("an init container's request counts", vec![(MemoryPressure, True)], false, &init_cpu, vec![]),
            ("memory pressure unknown", vec![(MemoryPressure, Unknown)], false, &best_effort, vec![]),
            ("disk pressure rejects all", vec![(DiskPressure, True)], false, &burstable, vec![DISK_PRESSURE]),
            ("pid pressure rejects all", vec![(PidPressure, True)], false, &burstable, vec![PID_PRESSURE]),
            (
                "pressures report the first in predicate order",
                vec![(DiskPressure, True), (PidPressure, True), (MemoryPressure, True)],
                false,
                &best_effort,
                vec![MEMORY_PRESSURE],
            ),
            ("pid before disk", vec![(DiskPressure, True), (PidPressure, True)], false, &burstable, vec![PID_PRESSURE]),
            (
                "condition reasons win over pressure",
                vec![(Ready, False), (DiskPressure, True)],
                false,
                &burstable,
                vec![NOT_READY],
            ),
        ];
        for (desc, conds, unschedulable, pod, want) in cases {
            let info = node(&conds, unschedulable);
            let st = NodeConditions.filter(&CycleState::new(), pod, &info);
            let got: Vec<String> = st.reasons.iter().map(|r| r.to_string()).collect();
            assert_eq!(got, want, "{desc}");
            let want_code = if want.is_empty() { Code::Success } else { Code::UnschedulableAndUnresolvable };
            assert_eq!(st.code, want_code, "{desc}");
            assert_eq!(fits(pod, &info), want.is_empty(), "{desc}: fits");
        }
    }

    #[test]
    fn node_conditions_node_without_ready_condition_passes() {
        let mut node = Node::builder("n").build();
        node.conditions.clear();
        let pod = Pod::builder("p").build();
        assert!(NodeConditions.filter(&CycleState::new(), &pod, &node_info(node, &[])).is_success());
    }
}
