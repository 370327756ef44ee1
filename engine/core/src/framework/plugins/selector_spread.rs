//! SelectorSpread: prefers nodes, and zones, holding fewer pods selected by the services,
//! ReplicationControllers, ReplicaSets and StatefulSets that select the incoming pod (the
//! seeds' SelectorSpreadPriority; upstream removed the plugin in v1.27 in favour of
//! PodTopologySpread's system default constraints). Off by default.
//!
//! PreScore builds the selector once (`ClusterObjects::default_selector`: the AND of every
//! selecting object's selector) and each feasible node's zone; it skips when nothing selects
//! the pod or the pod has its own topology spread constraints (upstream then scored every node
//! the same, which changes no ranking). Score: the node's pods in the pod's namespace, not
//! terminating, that the selector matches. Normalize, as upstream: node part
//! `100 * (max - count) / max` (100 when every count is 0); when any node has a zone (region
//! and zone labels, the beta `failure-domain` keys first, as upstream's `GetZoneKey`), a node
//! with a zone mixes in its zone's part the same way, zone weighted 2/3; truncated to an
//! integer. Normalize sees only the scores, in the order of PreScore's nodes.

use crate::api::{LabelSelector, Node, Pod, Sym, LABEL_REGION, LABEL_REGION_BETA, LABEL_ZONE, LABEL_ZONE_BETA};
use crate::framework::Feasible;
use crate::framework::{CycleState, Plugin, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::util::hash::FxHashMap;

pub const NAME: &str = "SelectorSpread";

/// The share of the score given to spreading over zones when nodes have zones.
const ZONE_WEIGHTING: f64 = 2.0 / 3.0;
/// A node without a zone.
const NO_ZONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct SelectorSpread {
    zone_keys: [Sym; 4],
}

impl Default for SelectorSpread {
    fn default() -> Self {
        SelectorSpread::new()
    }
}

impl SelectorSpread {
    pub fn new() -> SelectorSpread {
        SelectorSpread { zone_keys: [LABEL_ZONE_BETA, LABEL_ZONE, LABEL_REGION_BETA, LABEL_REGION].map(Sym::new) }
    }

    /// Upstream's `GetZoneKey` as a pair (region, zone): beta label first, then GA; `None`
    /// when both values are empty.
    fn zone_of(&self, node: &Node) -> Option<(Sym, Sym)> {
        let [zone_beta, zone, region_beta, region] = self.zone_keys;
        let get = |beta: Sym, ga: Sym| node.labels.get(beta).or_else(|| node.labels.get(ga)).unwrap_or(Sym::EMPTY);
        let key = (get(region_beta, region), get(zone_beta, zone));
        (key != (Sym::EMPTY, Sym::EMPTY)).then_some(key)
    }
}

impl Plugin for SelectorSpread {
    fn name(&self) -> &'static str {
        NAME
    }
}

#[derive(Clone, Debug)]
struct PreScoreState {
    selector: LabelSelector,
    /// Per node of PreScore's list: its zone's index, or `NO_ZONE`.
    zones: Vec<u32>,
    num_zones: usize,
}

/// The pods on `node` in `namespace`, not terminating, that `selector` matches.
pub fn count_matching_pods(namespace: Sym, selector: &LabelSelector, node: &NodeInfo) -> i64 {
    if selector.is_empty() {
        return 0;
    }
    node.pods()
        .iter()
        .filter(|p| p.namespace == namespace && !p.is_terminating() && selector.matches(&p.labels))
        .count() as i64
}

impl PreScorePlugin for SelectorSpread {
    fn pre_score(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot, nodes: &Feasible<'_>) -> Status {
        if !pod.topology_spread_constraints.is_empty() {
            return Status::skip();
        }
        let Some(selector) = snapshot.objects().default_selector(pod) else {
            return Status::skip();
        };
        let mut index: FxHashMap<(Sym, Sym), u32> = FxHashMap::default();
        let zones = nodes
            .iter()
            .map(|n| match self.zone_of(n.node()) {
                None => NO_ZONE,
                Some(key) => {
                    let next = index.len() as u32;
                    *index.entry(key).or_insert(next)
                }
            })
            .collect();
        state.write(PreScoreState { selector, zones, num_zones: index.len() });
        Status::success()
    }
}

impl ScorePlugin for SelectorSpread {
    #[inline]
    fn score(&self, state: &CycleState, pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        let st = state.read::<PreScoreState>().ok_or_else(|| Status::error("SelectorSpread: no PreScore state"))?;
        Ok(count_matching_pods(pod.namespace, &st.selector, node))
    }

    fn normalize(&self, state: &CycleState, _pod: &Pod, scores: &mut [i64]) -> Status {
        let Some(st) = state.read::<PreScoreState>() else {
            return Status::error("SelectorSpread: no PreScore state");
        };
        if st.zones.len() != scores.len() {
            return Status::error("SelectorSpread: scores do not match the nodes of PreScore");
        }
        let max = MAX_NODE_SCORE as f64;
        let max_by_node = scores.iter().copied().fold(0, i64::max);
        let mut by_zone = vec![0i64; st.num_zones];
        for (&z, &s) in st.zones.iter().zip(scores.iter()) {
            if z != NO_ZONE {
                by_zone[z as usize] += s;
            }
        }
        let max_by_zone = by_zone.iter().copied().fold(0, i64::max);
        let have_zones = st.num_zones > 0;
        for (s, &z) in scores.iter_mut().zip(&st.zones) {
            let mut f = max;
            if max_by_node > 0 {
                f = max * ((max_by_node - *s) as f64 / max_by_node as f64);
            }
            if have_zones && z != NO_ZONE {
                let mut zone_score = max;
                if max_by_zone > 0 {
                    zone_score = max * ((max_by_zone - by_zone[z as usize]) as f64 / max_by_zone as f64);
                }
                f = f * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * zone_score;
            }
            *s = f as i64;
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Labels, SelectorOp, SelectorRequirement, TopologySpreadConstraint};
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;
    use crate::snapshot::objects::{ClusterObjects, Controller, ControllerKind, Service};
    use crate::util::time::Timestamp;

    fn objects() -> ClusterObjects {
        let mut o = ClusterObjects::new();
        o.upsert_service(Service {
            namespace: Sym::new("default"),
            name: Sym::new("web"),
            selector: Labels::from_pairs([("app", "web")]),
        });
        o.upsert_controller(Controller {
            kind: ControllerKind::ReplicaSet,
            namespace: Sym::new("default"),
            name: Sym::new("web-v2"),
            selector: LabelSelector {
                match_labels: Labels::from_pairs([("app", "web")]),
                match_expressions: vec![SelectorRequirement {
                    key: Sym::new("version"),
                    operator: SelectorOp::In,
                    values: vec![Sym::new("2")],
                }],
            },
        });
        o
    }

    fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
        Pod::builder(name).labels(Labels::from_pairs(labels.iter().copied())).build()
    }

    fn node(name: &str, zone: Option<&str>) -> Node {
        let b = Node::builder(name);
        match zone {
            Some(z) => b.label(LABEL_ZONE, z).label(LABEL_REGION, "r").build(),
            None => b.build(),
        }
    }

    /// Raw and normalized scores of `incoming` over `nodes`, or `None` when PreScore skipped.
    fn run(nodes: &[NodeInfo], incoming: &Pod) -> Option<(Vec<i64>, Vec<i64>)> {
        let snap = Snapshot::from_node_infos(nodes.to_vec()).with_objects(objects());
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let pl = SelectorSpread::new();
        let mut state = CycleState::new();
        let st = pl.pre_score(&mut state, incoming, &snap, &Feasible::nodes(&refs));
        if st.is_skip() {
            return None;
        }
        assert!(st.is_success(), "{st}");
        let mut scores = Vec::new();
        pl.score_nodes(&state, incoming, &refs, &snap, &mut scores).unwrap();
        let raw = scores.clone();
        assert!(pl.normalize(&state, incoming, &mut scores).is_success());
        Some((raw, scores))
    }

    #[test]
    fn selector_spread_score_table() {
        let web = |n: &str| pod(n, &[("app", "web")]);
        let web2 = |n: &str| pod(n, &[("app", "web"), ("version", "2")]);
        let other_ns = Pod::builder("o").namespace("other").label("app", "web").build();
        let terminating = Pod::builder("t").label("app", "web").deletion_timestamp(Timestamp(1)).build();
        struct Case {
            desc: &'static str,
            nodes: Vec<NodeInfo>,
            incoming: Pod,
            raw: Vec<i64>,
            want: Vec<i64>,
        }
        let cases = vec![
            Case {
                desc: "no zones: fewer matching pods is better",
                nodes: vec![
                    node_info(node("a", None), &[web("1"), web("2")]),
                    node_info(node("b", None), &[web("3")]),
                    node_info(node("c", None), &[pod("x", &[("app", "db")])]),
                ],
                incoming: web("p"),
                raw: vec![2, 1, 0],
                want: vec![0, 50, 100],
            },
            Case {
                desc: "other namespaces and terminating pods do not count",
                nodes: vec![
                    node_info(node("a", None), &[other_ns.clone(), terminating.clone()]),
                    node_info(node("b", None), &[web("1")]),
                ],
                incoming: web("p"),
                raw: vec![0, 1],
                want: vec![100, 0],
            },
            Case {
                desc: "no matching pods anywhere: all 100",
                nodes: vec![node_info(node("a", Some("z1")), &[]), node_info(node("b", None), &[])],
                incoming: web("p"),
                raw: vec![0, 0],
                want: vec![100, 100],
            },
            Case {
                // node part: a 0, b 100, c 100, d 100 (max 2); zone z1 holds 2, z2 0:
                // a = 0/3 + 2/3 * 0 = 0; b = 100/3 + 0 = 33; c = 100/3 + 2/3 * 100 = 100;
                // d has no zone: node part only = 100
                desc: "zones weigh two thirds",
                nodes: vec![
                    node_info(node("a", Some("z1")), &[web("1"), web("2")]),
                    node_info(node("b", Some("z1")), &[]),
                    node_info(node("c", Some("z2")), &[]),
                    node_info(node("d", None), &[]),
                ],
                incoming: web("p"),
                raw: vec![2, 0, 0, 0],
                want: vec![0, 33, 100, 100],
            },
            Case {
                // node max 2; zones z1 = 3, z2 = 1 (max 3):
                // a: 0 + 2/3 * 0 = 0; b: 50/3 + 0 = 16; c: 50/3 + 2/3 * 66.67 = 61
                desc: "zone counts sum their nodes",
                nodes: vec![
                    node_info(node("a", Some("z1")), &[web("1"), web("2")]),
                    node_info(node("b", Some("z1")), &[web("3")]),
                    node_info(node("c", Some("z2")), &[web("4")]),
                ],
                incoming: web("p"),
                raw: vec![2, 1, 1],
                want: vec![0, 16, 61],
            },
            Case {
                // selector = app=web AND version in (2): plain web pods do not count
                desc: "service and ReplicaSet selectors are ANDed",
                nodes: vec![
                    node_info(node("a", None), &[web("1"), web("2")]),
                    node_info(node("b", None), &[web2("3")]),
                ],
                incoming: web2("p"),
                raw: vec![0, 1],
                want: vec![100, 0],
            },
        ];
        for c in cases {
            let (raw, got) = run(&c.nodes, &c.incoming).unwrap_or_else(|| panic!("{}: skipped", c.desc));
            assert_eq!(raw, c.raw, "{}: raw", c.desc);
            assert_eq!(got, c.want, "{}: normalized", c.desc);
        }
    }

    #[test]
    fn selector_spread_skips_unselected_pods_and_pods_with_spread_constraints() {
        let nodes = vec![node_info(node("a", None), &[pod("1", &[("app", "web")])])];
        assert!(run(&nodes, &pod("p", &[("app", "db")])).is_none(), "nothing selects the pod");
        let constrained = Pod::builder("p")
            .label("app", "web")
            .spread(TopologySpreadConstraint::new(1, LABEL_ZONE, LabelSelector::default()).schedule_anyway())
            .build();
        assert!(run(&nodes, &constrained).is_none(), "own spread constraints");
        assert!(run(&nodes, &pod("p", &[("app", "web")])).is_some());
    }

    #[test]
    fn selector_spread_zone_key_prefers_beta_labels_and_needs_a_value() {
        let pl = SelectorSpread::new();
        let both = Node::builder("n").label(LABEL_ZONE_BETA, "old").label(LABEL_ZONE, "new").build();
        assert_eq!(pl.zone_of(&both), Some((Sym::EMPTY, Sym::new("old"))));
        let region_only = Node::builder("n").label(LABEL_REGION, "r").build();
        assert_eq!(pl.zone_of(&region_only), Some((Sym::new("r"), Sym::EMPTY)));
        let empty_values = Node::builder("n").label(LABEL_REGION, "").label(LABEL_ZONE, "").build();
        assert_eq!(pl.zone_of(&empty_values), None);
    }

    #[test]
    fn selector_spread_normalize_rejects_misaligned_scores() {
        let nodes = [node_info(node("a", None), &[])];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let snap = Snapshot::from_node_infos(nodes.to_vec()).with_objects(objects());
        let incoming = pod("p", &[("app", "web")]);
        let mut state = CycleState::new();
        assert!(SelectorSpread::new().pre_score(&mut state, &incoming, &snap, &Feasible::nodes(&refs)).is_success());
        assert_eq!(SelectorSpread::new().normalize(&state, &incoming, &mut [0, 0]).code, Code::Error);
    }
}
