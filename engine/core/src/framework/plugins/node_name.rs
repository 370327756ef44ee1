//! NodeName: a pod that names a node in `spec.nodeName` fits only that node.

use crate::api::Pod;
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::{filter_rows_each, CycleState, FilterPlugin, Plugin, RowJudged, RowVerdict, Status};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{Floors, HotRef, Snapshot};

pub const NAME: &str = "NodeName";
pub const REASON: &str = "node(s) didn't match the requested node name";

#[derive(Debug, Default)]
pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(NODE_NAME => node_name);

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(EventResource::Node, ActionType::ADD)]
    }

    /// Queue when the added node is the one the pod names.
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        let (_, new) = event.nodes();
        queue_if(new.is_some_and(|n| pod.node_name.is_none_or(|want| want == n.name)))
    }
}

pub fn fits(pod: &Pod, node: &NodeInfo) -> bool {
    names_no_node(pod) || pod.node_name == Some(node.name())
}

/// Whether `pod` names no node (`spec.nodeName` unset or empty): it then fits every node.
#[inline]
fn names_no_node(pod: &Pod) -> bool {
    pod.node_name.is_none_or(|n| n.is_empty())
}

impl FilterPlugin for NodeName {
    fn reads_pods(&self) -> bool {
        false
    }

    fn row_follows_pods(&self) -> bool {
        false
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        if fits(pod, node) {
            Status::success()
        } else {
            Status::unresolvable(REASON)
        }
    }

    fn judges_rows(&self, _state: &CycleState, pod: &Pod) -> bool {
        names_no_node(pod)
    }

    /// A pod that names no node fits every node; one that does needs the node's name.
    #[inline]
    fn filter_hot(&self, _state: &CycleState, pod: &Pod, _node: HotRef<'_>) -> RowVerdict {
        if names_no_node(pod) {
            RowVerdict::Pass
        } else {
            RowVerdict::NeedsNode
        }
    }

    /// A pod that names no node passes every row without a look.
    fn filter_rows(&self, state: &CycleState, pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        if !names_no_node(pod) {
            filter_rows_each(self, state, pod, snapshot, lo, judged);
        }
    }

    fn passes_chunk(&self, _state: &CycleState, pod: &Pod, _floors: &Floors) -> bool {
        names_no_node(pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Node;
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;

    #[test]
    fn node_name_filter_table() {
        let cases = [
            ("no node name", Pod::builder("p").build(), Code::Success),
            ("same node", Pod::builder("p").node_name("n1").build(), Code::Success),
            ("other node", Pod::builder("p").node_name("n2").build(), Code::UnschedulableAndUnresolvable),
        ];
        let info = node_info(Node::builder("n1").build(), &[]);
        for (desc, pod, want) in cases {
            assert_eq!(NodeName.filter(&CycleState::new(), &pod, &info).code, want, "{desc}");
        }
    }
}
