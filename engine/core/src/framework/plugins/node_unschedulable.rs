//! NodeUnschedulable: rejects nodes marked `spec.unschedulable` unless the pod tolerates the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint.

use crate::api::{tolerations_tolerate, Pod, Sym, Taint, TaintEffect};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::{
    filter_rows_each, Code, CycleState, FilterPlugin, Plugin, RowFail, RowJudged, RowVerdict, Status,
};
use std::sync::OnceLock;

use crate::snapshot::columns::UNSCHEDULABLE;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{Floors, HotRef, Snapshot};

pub const NAME: &str = "NodeUnschedulable";
pub const TAINT_KEY: &str = "node.kubernetes.io/unschedulable";
pub const REASON: &str = "node(s) were unschedulable";

#[derive(Debug, Default)]
pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(TOLERATIONS => tolerations);

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE_NODE_TAINT)]
    }

    /// Queue when the node lets the pod in now and did not before (or is new).
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        let (old, new) = event.nodes();
        let lets_in = |n: &crate::api::Node| fits(pod, &NodeInfo::new(std::sync::Arc::new(n.clone())));
        queue_if(new.is_some_and(lets_in) && !old.is_some_and(lets_in))
    }
}

/// Whether `pod` may be placed on `node` as far as this plugin is concerned.
pub fn fits(pod: &Pod, node: &NodeInfo) -> bool {
    fits_unschedulable(pod, node.unschedulable())
}

/// Whether `pod` may go to a node whose `spec.unschedulable` is `unschedulable`.
#[inline]
fn fits_unschedulable(pod: &Pod, unschedulable: bool) -> bool {
    if !unschedulable {
        return true;
    }
    static KEY: OnceLock<Sym> = OnceLock::new();
    let key = *KEY.get_or_init(|| Sym::new(TAINT_KEY));
    let taint = Taint { key, value: Sym::EMPTY, effect: TaintEffect::NoSchedule };
    tolerations_tolerate(&pod.tolerations, &taint)
}

impl FilterPlugin for NodeUnschedulable {
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

    fn judges_rows(&self, _state: &CycleState, _pod: &Pod) -> bool {
        true
    }

    #[inline]
    fn filter_hot(&self, _state: &CycleState, pod: &Pod, node: HotRef<'_>) -> RowVerdict {
        let fail =
            RowFail { code: Code::UnschedulableAndUnresolvable, what: 0, make: |_| Status::unresolvable(REASON) };
        RowVerdict::of(fits_unschedulable(pod, node.unschedulable()), fail)
    }

    /// A block without unschedulable nodes passes whole.
    fn filter_rows(&self, state: &CycleState, pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        if snapshot.columns().block(lo).any_flag(judged.len(), UNSCHEDULABLE) {
            filter_rows_each(self, state, pod, snapshot, lo, judged);
        }
    }

    /// So does a chunk without them.
    fn passes_chunk(&self, _state: &CycleState, _pod: &Pod, floors: &Floors) -> bool {
        floors.flags & UNSCHEDULABLE == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, TaintEffect, Toleration, TolerationOp};
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;

    #[test]
    fn node_unschedulable_filter_table() {
        let tol = |op, eff| Toleration::new(TAINT_KEY, op, "", eff);
        let cases = [
            ("schedulable node", false, None, Code::Success),
            ("unschedulable node", true, None, Code::UnschedulableAndUnresolvable),
            (
                "tolerated with Exists",
                true,
                Some(tol(TolerationOp::Exists, Some(TaintEffect::NoSchedule))),
                Code::Success,
            ),
            ("tolerated with Equal and empty value", true, Some(tol(TolerationOp::Equal, None)), Code::Success),
            (
                "wrong effect",
                true,
                Some(tol(TolerationOp::Exists, Some(TaintEffect::NoExecute))),
                Code::UnschedulableAndUnresolvable,
            ),
        ];
        for (desc, unsched, tol, want) in cases {
            let mut b = Pod::builder("p");
            if let Some(t) = tol {
                b = b.toleration(t);
            }
            let info = node_info(Node::builder("n").unschedulable(unsched).build(), &[]);
            let st = NodeUnschedulable.filter(&CycleState::new(), &b.build(), &info);
            assert_eq!(st.code, want, "{desc}");
            if want != Code::Success {
                assert_eq!(st.message(), REASON);
            }
        }
    }
}
