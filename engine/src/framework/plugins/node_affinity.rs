//! NodeAffinity: rejects nodes that fail the pod's nodeSelector or required node affinity;
//! scores nodes by the summed weights of the preferred terms they match.

use crate::api::{NodeSelector, Pod, PreferredSchedulingTerm};
use crate::cache::node_info::NodeInfo;
use crate::framework::{
    default_normalize_score, CycleState, FilterPlugin, Plugin, PreFilterPlugin, PreScorePlugin, ScorePlugin, Status,
    MAX_NODE_SCORE,
};
use crate::snapshot::Snapshot;

pub const NAME: &str = "NodeAffinity";
pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";

#[derive(Debug, Default)]
pub struct NodeAffinity;

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
}

fn required(pod: &Pod) -> Option<&NodeSelector> {
    pod.affinity.as_ref()?.node_affinity.as_ref()?.required.as_ref()
}

fn preferred(pod: &Pod) -> &[PreferredSchedulingTerm] {
    pod.affinity.as_ref().and_then(|a| a.node_affinity.as_ref()).map_or(&[], |na| na.preferred.as_slice())
}

/// nodeSelector AND required node affinity.
pub fn fits(pod: &Pod, node: &NodeInfo) -> bool {
    let n = node.node();
    n.labels.is_superset_of(&pod.node_selector) && required(pod).is_none_or(|r| r.matches(&n.labels, n.name))
}

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(&self, _state: &mut CycleState, pod: &Pod, _snapshot: &Snapshot) -> Status {
        if required(pod).is_none() && pod.node_selector.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }
}

impl FilterPlugin for NodeAffinity {
    #[inline]
    fn filter(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        if fits(pod, node) {
            Status::success()
        } else {
            Status::unresolvable(REASON)
        }
    }
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(&self, _state: &mut CycleState, pod: &Pod, _snapshot: &Snapshot, _nodes: &[&NodeInfo]) -> Status {
        if preferred(pod).is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }
}

impl ScorePlugin for NodeAffinity {
    #[inline]
    fn score(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        let n = node.node();
        Ok(preferred(pod)
            .iter()
            .filter(|t| t.weight != 0 && t.preference.matches(&n.labels, n.name))
            .map(|t| t.weight as i64)
            .sum())
    }

    fn normalize(&self, _state: &CycleState, _pod: &Pod, scores: &mut [i64]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, NodeAffinity as Na, NodeSelectorOp::*, NodeSelectorRequirement as Req, NodeSelectorTerm};
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;

    fn term(reqs: Vec<Req>) -> NodeSelectorTerm {
        NodeSelectorTerm { match_expressions: reqs, match_fields: vec![] }
    }

    fn required_pod(terms: Vec<NodeSelectorTerm>) -> Pod {
        Pod::builder("p").node_affinity(Na { required: Some(NodeSelector { terms }), preferred: vec![] }).build()
    }

    #[test]
    fn node_affinity_filter_table() {
        let node =
            node_info(Node::builder("n1").label("zone", "a").label("disk", "ssd").label("cores", "16").build(), &[]);
        let cases = [
            ("nothing required", Pod::builder("p").build(), Code::Success),
            ("selector matches", Pod::builder("p").node_selector("zone", "a").build(), Code::Success),
            (
                "selector mismatch",
                Pod::builder("p").node_selector("zone", "b").build(),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "selector key missing",
                Pod::builder("p").node_selector("gpu", "yes").build(),
                Code::UnschedulableAndUnresolvable,
            ),
            ("In", required_pod(vec![term(vec![Req::new("zone", In, &["a", "b"])])]), Code::Success),
            (
                "NotIn",
                required_pod(vec![term(vec![Req::new("zone", NotIn, &["a"])])]),
                Code::UnschedulableAndUnresolvable,
            ),
            ("Exists", required_pod(vec![term(vec![Req::new("disk", Exists, &[])])]), Code::Success),
            (
                "DoesNotExist",
                required_pod(vec![term(vec![Req::new("disk", DoesNotExist, &[])])]),
                Code::UnschedulableAndUnresolvable,
            ),
            ("Gt", required_pod(vec![term(vec![Req::new("cores", Gt, &["8"])])]), Code::Success),
            ("Lt", required_pod(vec![term(vec![Req::new("cores", Lt, &["8"])])]), Code::UnschedulableAndUnresolvable),
            (
                "terms ORed",
                required_pod(vec![
                    term(vec![Req::new("zone", In, &["b"])]),
                    term(vec![Req::new("disk", In, &["ssd"])]),
                ]),
                Code::Success,
            ),
            (
                "requirements ANDed",
                required_pod(vec![term(vec![Req::new("zone", In, &["a"]), Req::new("disk", In, &["hdd"])])]),
                Code::UnschedulableAndUnresolvable,
            ),
            ("no terms matches nothing", required_pod(vec![]), Code::UnschedulableAndUnresolvable),
            ("empty term matches nothing", required_pod(vec![term(vec![])]), Code::UnschedulableAndUnresolvable),
            (
                "selector and affinity both needed",
                Pod::builder("p")
                    .node_selector("zone", "b")
                    .node_affinity(Na {
                        required: Some(NodeSelector { terms: vec![term(vec![Req::new("disk", Exists, &[])])] }),
                        preferred: vec![],
                    })
                    .build(),
                Code::UnschedulableAndUnresolvable,
            ),
        ];
        for (desc, pod, want) in cases {
            let mut state = CycleState::new();
            let pre = NodeAffinity.pre_filter(&mut state, &pod, &Snapshot::default());
            if pre.is_skip() {
                assert_eq!(want, Code::Success, "{desc}: skipped but expected a rejection");
                continue;
            }
            let st = NodeAffinity.filter(&state, &pod, &node);
            assert_eq!(st.code, want, "{desc}");
        }
    }

    #[test]
    fn node_affinity_score_sums_matching_weights_normalized() {
        let pref = |w, key: &str, v: &str| PreferredSchedulingTerm {
            weight: w,
            preference: term(vec![Req::new(key, In, &[v])]),
        };
        let pod = Pod::builder("p")
            .node_affinity(Na { required: None, preferred: vec![pref(10, "zone", "a"), pref(30, "disk", "ssd")] })
            .build();
        let nodes = [
            node_info(Node::builder("x").label("zone", "a").label("disk", "ssd").build(), &[]),
            node_info(Node::builder("y").label("zone", "a").build(), &[]),
            node_info(Node::builder("z").build(), &[]),
        ];
        let state = CycleState::new();
        let mut scores: Vec<i64> =
            nodes.iter().map(|n| NodeAffinity.score(&state, &pod, n, &Snapshot::default()).unwrap()).collect();
        assert_eq!(scores, [40, 10, 0]);
        NodeAffinity.normalize(&state, &pod, &mut scores);
        assert_eq!(scores, [100, 25, 0]);
        let mut s = CycleState::new();
        assert!(NodeAffinity.pre_score(&mut s, &Pod::builder("q").build(), &Snapshot::default(), &[]).is_skip());
    }
}
