//! NodePorts: rejects nodes where a host port the pod wants is already bound (protocol and
//! address aware; 0.0.0.0 clashes with every address).

use crate::api::{ContainerPort, Pod};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::{CycleState, FilterPlugin, Plugin, PreFilterPlugin, Status};
use crate::snapshot::node_info::{HostPortInfo, NodeInfo};
use crate::snapshot::Snapshot;

pub const NAME: &str = "NodePorts";
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

#[derive(Debug, Default)]
pub struct NodePorts;

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(HOST_PORTS => host_ports);

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::DELETE),
            ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE),
        ]
    }

    /// A deleted pod matters when it held a host port the pod wants; node events always do.
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        match event.pods() {
            (Some(gone), None) => queue_if(
                gone.node_name.is_some()
                    && gone.host_ports().iter().any(|g| pod.host_ports().iter().any(|p| ports_clash(g, p))),
            ),
            _ => QueueingHint::Queue,
        }
    }
}

/// Whether a pod binding `want` would clash with a pod that held `held` on the same node.
fn ports_clash(held: &ContainerPort, want: &ContainerPort) -> bool {
    let mut used = HostPortInfo::default();
    used.add(held);
    used.conflicts(want)
}

pub fn fits(pod: &Pod, node: &NodeInfo) -> bool {
    !pod.host_ports().iter().any(|p| node.used_ports().conflicts(p))
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(&self, _state: &mut CycleState, pod: &Pod, _snapshot: &Snapshot) -> Status {
        if pod.host_ports().is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }
}

impl FilterPlugin for NodePorts {
    fn reads_pods(&self) -> bool {
        false
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        if fits(pod, node) {
            Status::success()
        } else {
            Status::unschedulable(REASON)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ContainerPort, Node, Protocol, Sym};
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;

    fn port(ip: &str, proto: Protocol, p: i32) -> ContainerPort {
        ContainerPort { container_port: p, host_port: p, protocol: proto, host_ip: Sym::new(ip) }
    }

    #[test]
    fn node_ports_filter_table() {
        let existing = Pod::builder("e")
            .host_port_spec(port("10.0.0.1", Protocol::Tcp, 8080))
            .host_port_spec(port("", Protocol::Udp, 53))
            .build();
        let cases = [
            ("no host ports", Pod::builder("p").container("i", &[]).build(), Code::Success),
            (
                "same ip, port, protocol",
                Pod::builder("p").host_port_spec(port("10.0.0.1", Protocol::Tcp, 8080)).build(),
                Code::Unschedulable,
            ),
            ("wildcard against specific", Pod::builder("p").host_port(8080).build(), Code::Unschedulable),
            (
                "other ip",
                Pod::builder("p").host_port_spec(port("10.0.0.2", Protocol::Tcp, 8080)).build(),
                Code::Success,
            ),
            (
                "other protocol",
                Pod::builder("p").host_port_spec(port("10.0.0.1", Protocol::Udp, 8080)).build(),
                Code::Success,
            ),
            (
                "specific against wildcard",
                Pod::builder("p").host_port_spec(port("10.0.0.9", Protocol::Udp, 53)).build(),
                Code::Unschedulable,
            ),
        ];
        let info = node_info(Node::builder("n").build(), &[existing]);
        for (desc, pod, want) in cases {
            let mut state = CycleState::new();
            let pre = NodePorts.pre_filter(&mut state, &pod, &Snapshot::default());
            assert_eq!(pre.is_skip(), pod.host_ports().is_empty(), "{desc}");
            assert_eq!(NodePorts.filter(&state, &pod, &info).code, want, "{desc}");
        }
    }

    #[test]
    fn node_ports_sidecar_ports_count_init_ports_do_not() {
        use crate::api::Container;
        let c =
            |restartable| Container { restartable, ports: vec![port("", Protocol::Tcp, 9000)], ..Container::default() };
        let sidecar = Pod::builder("s").init_container_spec(c(true)).build();
        let init = Pod::builder("i").init_container_spec(c(false)).build();
        assert_eq!(sidecar.host_ports().len(), 1);
        assert!(init.host_ports().is_empty());
    }
}
