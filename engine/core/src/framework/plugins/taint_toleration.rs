//! TaintToleration: rejects nodes with a NoSchedule / NoExecute taint the pod does not
//! tolerate; scores nodes by how few PreferNoSchedule taints the pod fails to tolerate.

use smallvec::SmallVec;

use crate::api::{tolerations_tolerate, Pod, TaintEffect, Toleration};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::Feasible;
use crate::framework::{
    default_normalize_score, filter_rows_each, ColumnScoring, CycleState, FilterPlugin, Plugin, PreScorePlugin,
    RowJudged, RowVerdict, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::snapshot::columns::{any_flag, HAS_TAINTS};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{Columns, Floors, HotRef, Snapshot};

pub const NAME: &str = "TaintToleration";
pub const REASON: &str = "node(s) had untolerated taint(s)";

#[derive(Debug, Default)]
pub struct TaintToleration;

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(TOLERATIONS => tolerations);

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE_NODE_TAINT)]
    }

    /// Queue when the pod tolerates the node's taints now and did not before (or it is new).
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        let (old, new) = event.nodes();
        let tolerated = |n: &crate::api::Node| {
            n.taints
                .iter()
                .all(|t| t.effect == TaintEffect::PreferNoSchedule || tolerations_tolerate(&pod.tolerations, t))
        };
        queue_if(new.is_some_and(tolerated) && !old.is_some_and(tolerated))
    }
}

pub fn fits(pod: &Pod, node: &NodeInfo) -> bool {
    !node.has_taints()
        || node
            .node()
            .taints
            .iter()
            .all(|t| t.effect == TaintEffect::PreferNoSchedule || tolerations_tolerate(&pod.tolerations, t))
}

impl FilterPlugin for TaintToleration {
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

    /// The fast path: a node without taints fits; a tainted one needs its taints.
    #[inline]
    fn filter_hot(&self, _state: &CycleState, _pod: &Pod, node: HotRef<'_>) -> RowVerdict {
        if node.has_taints() {
            RowVerdict::NeedsNode
        } else {
            RowVerdict::Pass
        }
    }

    /// A block without taints passes whole.
    fn filter_rows(&self, state: &CycleState, pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        if snapshot.columns().block(lo).any_flag(judged.len(), HAS_TAINTS) {
            filter_rows_each(self, state, pod, snapshot, lo, judged);
        }
    }

    /// So does a chunk without them.
    fn passes_chunk(&self, _state: &CycleState, _pod: &Pod, floors: &Floors) -> bool {
        floors.flags & HAS_TAINTS == 0
    }
}

#[derive(Clone)]
/// The pod's tolerations that can tolerate PreferNoSchedule taints.
struct PreScoreState(SmallVec<[Toleration; 4]>);

impl PreScorePlugin for TaintToleration {
    fn pre_score(&self, state: &mut CycleState, pod: &Pod, _snapshot: &Snapshot, _nodes: &Feasible<'_>) -> Status {
        let tols = pod
            .tolerations
            .iter()
            .filter(|t| t.effect.is_none_or(|e| e == TaintEffect::PreferNoSchedule))
            .copied()
            .collect();
        state.write_slot(PreScoreState(tols));
        Status::success()
    }
}

impl ScorePlugin for TaintToleration {
    fn normalizing(&self) -> crate::framework::Normalizing {
        crate::framework::Normalizing::ByMax { reverse: true }
    }

    #[inline]
    fn score(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        if !node.has_taints() {
            return Ok(0);
        }
        let taints = &node.node().taints;
        let tols =
            state.read_slot::<PreScoreState>().ok_or_else(|| Status::error("TaintToleration: no PreScore state"))?;
        Ok(taints
            .iter()
            .filter(|t| t.effect == TaintEffect::PreferNoSchedule && !tolerations_tolerate(&tols.0, t))
            .count() as i64)
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &Pod,
        nodes: &[&NodeInfo],
        _snapshot: &Snapshot,
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let tols =
            state.read_slot::<PreScoreState>().ok_or_else(|| Status::error("TaintToleration: no PreScore state"))?;
        out.extend(nodes.iter().map(|n| {
            if !n.has_taints() {
                return 0;
            }
            n.node()
                .taints
                .iter()
                .filter(|t| t.effect == TaintEffect::PreferNoSchedule && !tolerations_tolerate(&tols.0, t))
                .count() as i64
        }));
        Ok(())
    }

    /// Untainted nodes have no taint to count: they score 0 without their NodeInfo. Any
    /// tainted one sends the whole cycle to `score_nodes`.
    fn score_columns(
        &self,
        _state: &CycleState,
        _pod: &Pod,
        columns: &Columns,
        positions: &[u32],
        _snapshot: &Snapshot,
        _out: &mut Vec<i64>,
    ) -> Result<ColumnScoring, Status> {
        Ok(if any_tainted(columns, positions) { ColumnScoring::Declined } else { ColumnScoring::AllZero })
    }

    fn normalize(&self, _state: &CycleState, _pod: &Pod, scores: &mut [i64]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, true, scores);
        Status::success()
    }
}

/// Whether a node at `positions` has taints: stretches of a chunk's flags at a time, without
/// an early exit inside one (it vectorizes); scattered positions row by row.
fn any_tainted(columns: &Columns, positions: &[u32]) -> bool {
    if Columns::dense(positions) {
        columns.spans(positions).any(|(chunk, k, len)| any_flag(&chunk.flags[k..k + len], HAS_TAINTS))
    } else {
        columns.rows(positions).any(|node| node.has_taints())
    }
}

crate::state_slot!(PreScoreState);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, Taint, TolerationOp};
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;
    use TaintEffect::*;

    #[test]
    fn taint_toleration_filter_table() {
        let cases = [
            ("no taints", vec![], vec![], Code::Success),
            (
                "untolerated NoSchedule",
                vec![Taint::new("k", "v", NoSchedule)],
                vec![],
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "untolerated NoExecute",
                vec![Taint::new("k", "v", NoExecute)],
                vec![],
                Code::UnschedulableAndUnresolvable,
            ),
            ("PreferNoSchedule never rejects", vec![Taint::new("k", "v", PreferNoSchedule)], vec![], Code::Success),
            (
                "tolerated",
                vec![Taint::new("k", "v", NoSchedule)],
                vec![Toleration::new("k", TolerationOp::Equal, "v", Some(NoSchedule))],
                Code::Success,
            ),
            (
                "one of two tolerated",
                vec![Taint::new("k", "v", NoSchedule), Taint::new("x", "", NoExecute)],
                vec![Toleration::new("k", TolerationOp::Exists, "", None)],
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "tolerate everything",
                vec![Taint::new("x", "", NoExecute)],
                vec![Toleration::new("", TolerationOp::Exists, "", None)],
                Code::Success,
            ),
        ];
        for (desc, taints, tols, want) in cases {
            let mut nb = Node::builder("n");
            for t in taints {
                nb = nb.taint(t);
            }
            let mut pb = Pod::builder("p");
            for t in tols {
                pb = pb.toleration(t);
            }
            let st = TaintToleration.filter(&CycleState::new(), &pb.build(), &node_info(nb.build(), &[]));
            assert_eq!(st.code, want, "{desc}");
            if !st.is_success() {
                assert_eq!(st.message(), REASON, "{desc}");
            }
        }
    }

    #[test]
    fn taint_toleration_score_counts_intolerable_prefer_no_schedule_reversed() {
        let nodes = [
            node_info(Node::builder("a").build(), &[]),
            node_info(Node::builder("b").taint(Taint::new("k1", "", PreferNoSchedule)).build(), &[]),
            node_info(
                Node::builder("c")
                    .taint(Taint::new("k1", "", PreferNoSchedule))
                    .taint(Taint::new("k2", "", PreferNoSchedule))
                    .build(),
                &[],
            ),
            node_info(
                Node::builder("d")
                    .taint(Taint::new("tolerated", "", PreferNoSchedule))
                    .taint(Taint::new("k3", "", NoSchedule))
                    .build(),
                &[],
            ),
        ];
        let pod = Pod::builder("p")
            .toleration(Toleration::new("tolerated", TolerationOp::Exists, "", Some(PreferNoSchedule)))
            .toleration(Toleration::new("k2", TolerationOp::Exists, "", Some(NoSchedule)))
            .build();
        let mut state = CycleState::new();
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        TaintToleration.pre_score(&mut state, &pod, &Snapshot::default(), &Feasible::nodes(&refs));
        let mut scores: Vec<i64> =
            nodes.iter().map(|n| TaintToleration.score(&state, &pod, n, &Snapshot::default()).unwrap()).collect();
        assert_eq!(scores, [0, 1, 2, 0]);
        TaintToleration.normalize(&state, &pod, &mut scores);
        assert_eq!(scores, [100, 50, 0, 100]);
    }
}
