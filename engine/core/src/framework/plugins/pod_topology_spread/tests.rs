use super::filtering::{CriticalPaths, PreFilterState};
use super::*;
use crate::api::{
    Node, NodeAffinity as Na, NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm, Taint,
    TaintEffect, Toleration, TolerationOp,
};
use crate::framework::plugins::test_util::node_info;
use crate::framework::{Code, CycleState, FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin};
use crate::snapshot::objects::{ClusterObjects, Service};
use crate::util::time::Timestamp;

const ZONE: &str = LABEL_ZONE;
const HOST: &str = LABEL_HOSTNAME;

fn sel(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector { match_labels: Labels::from_pairs(pairs.iter().copied()), ..Default::default() }
}

/// A node in `zone` (empty: no zone label) with its hostname label.
fn node(name: &str, zone: &str) -> Node {
    let b = Node::builder(name).label(HOST, name);
    if zone.is_empty() {
        b.build()
    } else {
        b.label(ZONE, zone).build()
    }
}

/// `n` pods labelled app=web named after `prefix`.
fn webs(prefix: &str, n: usize) -> Vec<Pod> {
    (0..n).map(|i| Pod::builder(&format!("{prefix}-{i}")).label("app", "web").build()).collect()
}

fn cluster(nodes: Vec<(Node, Vec<Pod>)>) -> Snapshot {
    Snapshot::from_node_infos(nodes.into_iter().map(|(n, pods)| node_info(n, &pods)).collect())
}

fn spread(max_skew: i32, key: &str) -> TopologySpreadConstraint {
    TopologySpreadConstraint::new(max_skew, key, sel(&[("app", "web")]))
}

fn web_pod() -> crate::api::PodBuilder {
    Pod::builder("incoming").label("app", "web")
}

/// PreFilter then Filter on every node of `snap`, in order; `None` when PreFilter skipped.
fn filter_codes(pl: &PodTopologySpread, pod: &Pod, snap: &Snapshot) -> Option<Vec<Code>> {
    let mut state = CycleState::new();
    let pre = pl.pre_filter(&mut state, pod, snap);
    if pre.is_skip() {
        return None;
    }
    assert!(pre.is_success(), "{pre}");
    let statuses: Vec<Status> = snap.iter().map(|n| pl.filter(&state, pod, n)).collect();
    // Rows judged a block at a time from every start give the same: from the nodes' labels
    // (the first PreFilter on these nodes), then from the label columns (built on a later
    // publish of the same nodes).
    rows_agree(pl, &state, pod, snap, &statuses);
    let mut later = snap.clone();
    later.generation += 1;
    let mut again = CycleState::new();
    assert!(pl.pre_filter(&mut again, pod, &later).is_success());
    assert!(!again.read_slot::<filtering::PreFilterState>().expect("state").columns.is_empty(), "columns built");
    rows_agree(pl, &again, pod, &later, &statuses);
    Some(statuses.iter().map(|st| st.code).collect())
}

use crate::framework::Status;

fn rows_agree(pl: &PodTopologySpread, state: &CycleState, pod: &Pod, snap: &Snapshot, statuses: &[Status]) {
    use crate::framework::RowJudged;
    for lo in 0..snap.num_nodes() {
        let mut judged = vec![RowJudged::Pass; snap.num_nodes() - lo];
        pl.filter_rows(state, pod, snap, lo, &mut judged);
        for (i, j) in judged.iter().enumerate() {
            let got = match j {
                RowJudged::Pass => Status::success(),
                RowJudged::Fail(name, f) => {
                    assert_eq!(*name, NAME);
                    (f.make)(f.what)
                }
                RowJudged::Node => panic!("every node is in the snapshot"),
            };
            assert_eq!(
                (got.code, got.message()),
                (statuses[lo + i].code, statuses[lo + i].message()),
                "row {}",
                lo + i
            );
        }
    }
}

/// PreScore, Score (per node and batched, which must agree) and NormalizeScore over every
/// node of `snap`; `None` when PreScore skipped. Returns (raw, normalized).
fn scores(pl: &PodTopologySpread, pod: &Pod, snap: &Snapshot) -> Option<(Vec<i64>, Vec<i64>)> {
    let nodes: Vec<&NodeInfo> = snap.iter().map(|n| &**n).collect();
    scores_over(pl, pod, snap, &nodes)
}

fn scores_over(
    pl: &PodTopologySpread,
    pod: &Pod,
    snap: &Snapshot,
    nodes: &[&NodeInfo],
) -> Option<(Vec<i64>, Vec<i64>)> {
    let mut state = CycleState::new();
    let pre = pl.pre_score(&mut state, pod, snap, &crate::framework::Feasible::nodes(nodes));
    if pre.is_skip() {
        return None;
    }
    assert!(pre.is_success(), "{pre}");
    let raw: Vec<i64> = nodes.iter().map(|n| pl.score(&state, pod, n, snap).unwrap()).collect();
    let mut batch = Vec::new();
    pl.score_nodes(&state, pod, nodes, snap, &mut batch).unwrap();
    assert_eq!(batch, raw, "score_nodes must equal score per node");
    let mut norm = raw.clone();
    let st = pl.normalize(&state, pod, &mut norm);
    assert!(st.is_success(), "{st}");
    Some((raw, norm))
}

use Code::{Success as Ok_, Unschedulable as Uns, UnschedulableAndUnresolvable as Unres};

#[test]
fn pod_topology_spread_filter_table() {
    // Zones: a = {a1: 2 web, a2: 0}, b = {b1: 1 web}, c = {c1: 0}; x1 has no zone label.
    let base = || {
        vec![
            (node("a1", "a"), webs("a1", 2)),
            (node("a2", "a"), vec![]),
            (node("b1", "b"), webs("b1", 1)),
            (node("c1", "c"), vec![]),
        ]
    };
    let ssd = |mut n: Node| {
        n.labels.insert(Sym::new("disk"), Sym::new("ssd"));
        n
    };
    let requires_ssd = Na {
        required: Some(NodeSelector {
            terms: vec![NodeSelectorTerm {
                match_expressions: vec![NodeSelectorRequirement::new("disk", NodeSelectorOp::In, &["ssd"])],
                match_fields: vec![],
            }],
        }),
        preferred: vec![],
    };
    let taint_c = |mut nodes: Vec<(Node, Vec<Pod>)>, effect| {
        nodes[3].0.taints.push(Taint::new("dedicated", "x", effect));
        nodes
    };
    let honor_taints = TopologySpreadConstraint { node_taints_policy: InclusionPolicy::Honor, ..spread(1, ZONE) };
    type Case = (&'static str, Vec<(Node, Vec<Pod>)>, Pod, Vec<Code>);
    let cases: Vec<Case> = vec![
        (
            "maxSkew 1: only the empty zone fits",
            base(),
            web_pod().spread(spread(1, ZONE)).build(),
            vec![Uns, Uns, Uns, Ok_],
        ),
        ("maxSkew 2: zone b fits too", base(), web_pod().spread(spread(2, ZONE)).build(), vec![Uns, Uns, Ok_, Ok_]),
        (
            "no self-match: the pod does not add to its domain",
            base(),
            Pod::builder("p").spread(spread(1, ZONE)).build(),
            vec![Uns, Uns, Ok_, Ok_],
        ),
        (
            "node without the key is unresolvable, and its pods are not counted",
            {
                let mut n = base();
                n.push((node("x1", ""), webs("x1", 5)));
                n
            },
            web_pod().spread(spread(2, ZONE)).build(),
            vec![Uns, Uns, Ok_, Ok_, Unres],
        ),
        (
            "pods of other namespaces and terminating pods do not count",
            vec![
                (
                    node("a1", "a"),
                    vec![
                        Pod::builder("o").namespace("other").label("app", "web").build(),
                        Pod::builder("t").label("app", "web").deletion_timestamp(Timestamp(1)).build(),
                    ],
                ),
                (node("b1", "b"), vec![]),
            ],
            web_pod().spread(spread(1, ZONE)).build(),
            vec![Ok_, Ok_],
        ),
        (
            "minDomains above the domain count makes the global minimum 0",
            vec![(node("a1", "a"), webs("a1", 1)), (node("b1", "b"), webs("b1", 1))],
            web_pod().spread(TopologySpreadConstraint { min_domains: Some(3), ..spread(1, ZONE) }).build(),
            vec![Uns, Uns],
        ),
        (
            "minDomains met: the real minimum counts",
            vec![(node("a1", "a"), webs("a1", 1)), (node("b1", "b"), webs("b1", 1))],
            web_pod().spread(TopologySpreadConstraint { min_domains: Some(2), ..spread(1, ZONE) }).build(),
            vec![Ok_, Ok_],
        ),
        (
            "nodeAffinityPolicy Honor: zone c fails the pod's affinity and is no domain",
            base().into_iter().enumerate().map(|(i, (n, p))| (if i < 3 { ssd(n) } else { n }, p)).collect(),
            web_pod().node_affinity(requires_ssd.clone()).spread(spread(1, ZONE)).build(),
            // Domains a = 2, b = 1: minimum 1. c is not a domain; it counts 0 itself.
            vec![Uns, Uns, Ok_, Ok_],
        ),
        (
            "nodeAffinityPolicy Ignore: zone c stays a domain with 0",
            base().into_iter().enumerate().map(|(i, (n, p))| (if i < 3 { ssd(n) } else { n }, p)).collect(),
            web_pod()
                .node_affinity(requires_ssd.clone())
                .spread(TopologySpreadConstraint { node_affinity_policy: InclusionPolicy::Ignore, ..spread(1, ZONE) })
                .build(),
            vec![Uns, Uns, Uns, Ok_],
        ),
        (
            "nodeSelector is honored like required affinity",
            base().into_iter().enumerate().map(|(i, (n, p))| (if i < 3 { ssd(n) } else { n }, p)).collect(),
            web_pod().node_selector("disk", "ssd").spread(spread(1, ZONE)).build(),
            vec![Uns, Uns, Ok_, Ok_],
        ),
        (
            "nodeTaintsPolicy Ignore (default): the tainted zone c is a domain",
            taint_c(base(), TaintEffect::NoSchedule),
            web_pod().spread(spread(1, ZONE)).build(),
            vec![Uns, Uns, Uns, Ok_],
        ),
        (
            "nodeTaintsPolicy Honor: the untolerated NoSchedule zone c is no domain",
            taint_c(base(), TaintEffect::NoSchedule),
            web_pod().spread(honor_taints.clone()).build(),
            vec![Uns, Uns, Ok_, Ok_],
        ),
        (
            "nodeTaintsPolicy Honor: a tolerated taint keeps the domain",
            taint_c(base(), TaintEffect::NoExecute),
            web_pod()
                .toleration(Toleration::new("dedicated", TolerationOp::Exists, "", None))
                .spread(honor_taints.clone())
                .build(),
            vec![Uns, Uns, Uns, Ok_],
        ),
        (
            "nodeTaintsPolicy Honor: PreferNoSchedule never excludes",
            taint_c(base(), TaintEffect::PreferNoSchedule),
            web_pod().spread(honor_taints.clone()).build(),
            vec![Uns, Uns, Uns, Ok_],
        ),
        (
            "matchLabelKeys: only pods of the same revision count",
            vec![
                (node("a1", "a"), webs("a1", 3)),
                (node("b1", "b"), vec![Pod::builder("r2").label("app", "web").label("rev", "2").build()]),
            ],
            web_pod()
                .label("rev", "2")
                .spread(TopologySpreadConstraint { match_label_keys: vec![Sym::new("rev")], ..spread(1, ZONE) })
                .build(),
            // a has 0 rev=2 pods, b has 1: b would reach skew 2.
            vec![Ok_, Uns],
        ),
        (
            "matchLabelKeys: a key the pod lacks is skipped",
            vec![(node("a1", "a"), webs("a1", 3)), (node("b1", "b"), webs("b1", 2))],
            web_pod()
                .spread(TopologySpreadConstraint { match_label_keys: vec![Sym::new("rev")], ..spread(1, ZONE) })
                .build(),
            vec![Uns, Ok_],
        ),
        (
            "matchLabelKeys ANDs with a selector on the same key (nothing matches)",
            vec![(node("a1", "a"), vec![Pod::builder("r1").label("rev", "1").build()]), (node("b1", "b"), vec![])],
            Pod::builder("p")
                .label("rev", "2")
                .spread(TopologySpreadConstraint {
                    match_label_keys: vec![Sym::new("rev")],
                    ..TopologySpreadConstraint::new(0, ZONE, sel(&[("rev", "1")]))
                })
                .build(),
            vec![Ok_, Ok_],
        ),
        (
            "multiple constraints: hostname rejects the node, zone the domain",
            vec![
                (node("a1", "a"), webs("a1", 1)),
                (node("a2", "a"), vec![]),
                (node("b1", "b"), webs("b1", 1)),
                (node("b2", "b"), webs("b2", 1)),
            ],
            web_pod().spread(spread(1, ZONE)).spread(spread(1, HOST)).build(),
            // zone: a = 1, b = 2 → b rejected; hostname: min 0 → a1 (1 + 1) rejected.
            vec![Uns, Ok_, Uns, Uns],
        ),
        (
            "a node missing the second key is unresolvable",
            vec![(node("a1", "a"), vec![]), (Node::builder("a2").label(ZONE, "a").build(), vec![])],
            web_pod().spread(spread(1, ZONE)).spread(spread(1, HOST)).build(),
            vec![Ok_, Unres],
        ),
        (
            "nil selector counts nothing and the pod does not match itself",
            base(),
            web_pod()
                .spread(TopologySpreadConstraint {
                    label_selector: None,
                    ..TopologySpreadConstraint::new(0, ZONE, sel(&[]))
                })
                .build(),
            vec![Ok_, Ok_, Ok_, Ok_],
        ),
        (
            "empty selector counts no existing pod (as upstream v1.35) but the pod matches itself",
            base(),
            web_pod().spread(TopologySpreadConstraint::new(0, ZONE, sel(&[]))).build(),
            vec![Uns, Uns, Uns, Uns],
        ),
        (
            "empty selector: every domain counts 0, so maxSkew 1 admits all",
            base(),
            web_pod().spread(TopologySpreadConstraint::new(1, ZONE, sel(&[]))).build(),
            vec![Ok_, Ok_, Ok_, Ok_],
        ),
    ];
    let pl = PodTopologySpread::default();
    for (desc, nodes, pod, want) in cases {
        let snap = cluster(nodes);
        let got = filter_codes(&pl, &pod, &snap).unwrap_or_else(|| panic!("{desc}: PreFilter skipped"));
        assert_eq!(got, want, "{desc}");
    }
}

#[test]
fn pod_topology_spread_filter_reasons_are_upstreams() {
    let snap = cluster(vec![(node("a1", "a"), webs("a1", 3)), (node("b1", "b"), vec![]), (node("x", ""), vec![])]);
    let pod = web_pod().spread(spread(1, ZONE)).build();
    let pl = PodTopologySpread::default();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).is_success());
    let st = pl.filter(&state, &pod, snap.node_at(0).unwrap());
    assert_eq!((st.code, st.message()), (Uns, "node(s) didn't match pod topology spread constraints".to_owned()));
    let st = pl.filter(&state, &pod, snap.node_at(2).unwrap());
    assert_eq!(
        (st.code, st.message()),
        (Unres, "node(s) didn't match pod topology spread constraints (missing required label)".to_owned())
    );
    assert_eq!(pl.filter(&CycleState::new(), &pod, snap.node_at(1).unwrap()).code, Code::Error, "no PreFilter state");
}

#[test]
fn pod_topology_spread_pre_filter_skips_without_do_not_schedule_constraints() {
    let snap = cluster(vec![(node("a1", "a"), webs("a1", 1))]);
    let services = ClusterObjects {
        services: vec![Service {
            namespace: Sym::new("default"),
            name: Sym::new("web"),
            selector: Labels::from_pairs([("app", "web")]),
        }],
        ..Default::default()
    };
    let with_service = cluster(vec![(node("a1", "a"), webs("a1", 1))]).with_objects(services);
    let pl = PodTopologySpread::default();
    let cases = [
        ("no constraints, nothing selects the pod", web_pod().build(), &snap),
        ("no constraints, system defaults are ScheduleAnyway only", web_pod().build(), &with_service),
        ("only ScheduleAnyway constraints", web_pod().spread(spread(1, ZONE).schedule_anyway()).build(), &with_service),
    ];
    for (desc, pod, snap) in cases {
        assert!(filter_codes(&pl, &pod, snap).is_none(), "{desc}");
    }
}

#[test]
fn pod_topology_spread_list_defaults_filter_with_the_service_selector() {
    let args: PodTopologySpreadArgs = serde_json::from_str(
        r#"{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}"#,
    )
    .unwrap();
    args.validate().unwrap();
    let pl = PodTopologySpread::new(args);
    let objects = ClusterObjects {
        services: vec![Service {
            namespace: Sym::new("default"),
            name: Sym::new("web"),
            selector: Labels::from_pairs([("app", "web")]),
        }],
        ..Default::default()
    };
    let nodes = || vec![(node("a1", "a"), webs("a1", 2)), (node("b1", "b"), webs("b1", 1))];
    let snap = cluster(nodes()).with_objects(objects);
    assert_eq!(filter_codes(&pl, &web_pod().build(), &snap), Some(vec![Uns, Ok_]));
    // A pod with its own constraints ignores the defaults.
    let own = web_pod().spread(spread(5, ZONE)).build();
    assert_eq!(filter_codes(&pl, &own, &snap), Some(vec![Ok_, Ok_]));
    // Nothing selects the pod: no default selector, nothing to do.
    assert_eq!(filter_codes(&pl, &web_pod().build(), &cluster(nodes())), None);
}

#[test]
fn critical_paths_keep_the_minimum() {
    let (a, b, c) = (Sym::new("a"), Sym::new("b"), Sym::new("c"));
    type Case<'a> = (&'a str, &'a [(Sym, i64)], i64);
    let cases: &[Case] = &[
        ("empty", &[], i32::MAX as i64),
        ("one", &[(a, 3)], 3),
        ("ascending", &[(a, 1), (b, 2), (c, 3)], 1),
        ("descending", &[(a, 3), (b, 2), (c, 1)], 1),
        ("known value grows past the second", &[(a, 1), (b, 2), (a, 5)], 2),
        ("known value shrinks", &[(a, 4), (b, 6), (b, 0)], 0),
        ("new value between", &[(a, 1), (b, 5), (c, 3), (b, 9)], 1),
    ];
    for (desc, updates, want) in cases {
        let mut p = CriticalPaths::new();
        for &(v, n) in updates.iter() {
            p.update(v, n);
        }
        assert_eq!(p.min(), *want, "{desc}");
    }
}

#[test]
fn pod_topology_spread_add_and_remove_pod_update_counts() {
    let snap = cluster(vec![(node("a1", "a"), webs("a1", 1)), (node("b1", "b"), vec![])]);
    let pod = web_pod().spread(spread(1, ZONE)).build();
    let pl = PodTopologySpread::default();
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &pod, &snap).is_success());
    let (a1, b1) = (snap.node_at(0).unwrap(), snap.node_at(1).unwrap());
    assert_eq!((pl.filter(&state, &pod, a1).code, pl.filter(&state, &pod, b1).code), (Uns, Ok_));
    // A nominated web pod on b1 evens the zones.
    let nominated = Pod::builder("nom").label("app", "web").build();
    assert!(pl.add_pod(&mut state, &pod, &nominated, b1).is_success());
    assert_eq!((pl.filter(&state, &pod, a1).code, pl.filter(&state, &pod, b1).code), (Ok_, Ok_));
    // Pods of other namespaces or not selected change nothing.
    let other_ns = Pod::builder("o").namespace("x").label("app", "web").build();
    assert!(pl.add_pod(&mut state, &pod, &other_ns, b1).is_success());
    assert!(pl.add_pod(&mut state, &pod, &Pod::builder("u").build(), b1).is_success());
    assert_eq!(pl.filter(&state, &pod, a1).code, Ok_);
    // Evicting a1's pod: a = 0, b = 1.
    assert!(pl.remove_pod(&mut state, &pod, &webs("a1", 1)[0], a1).is_success());
    assert_eq!((pl.filter(&state, &pod, a1).code, pl.filter(&state, &pod, b1).code), (Ok_, Uns));
    let s = state.read_slot::<PreFilterState>().unwrap();
    assert_eq!(s.constraints[0].counts.get(&Sym::new("b")), Some(&1));
    assert_eq!(s.constraints[0].min_match(), 0);
    assert_eq!(pl.add_pod(&mut CycleState::new(), &pod, &nominated, b1).code, Code::Error);
}

#[test]
fn pod_topology_spread_score_zone_counts_over_all_nodes() {
    // Zones a = {a1: 2, a2: 0}, b = {b1: 1}, c = {c1: 0}: 3 domains, weight ln 5.
    let nodes = vec![
        (node("a1", "a"), webs("a1", 2)),
        (node("a2", "a"), vec![]),
        (node("b1", "b"), webs("b1", 1)),
        (node("c1", "c"), vec![]),
        // Not scored (not feasible) but its pods count for zone b; zone d is no scored domain.
        (node("b9", "b"), webs("b9", 2)),
        (node("d9", "d"), webs("d9", 4)),
    ];
    let snap = cluster(nodes);
    let feasible: Vec<&NodeInfo> = snap.iter().take(4).map(|n| &**n).collect();
    let pod = web_pod().spread(spread(1, ZONE).schedule_anyway()).build();
    let pl = PodTopologySpread::default();
    let (raw, norm) = scores_over(&pl, &pod, &snap, &feasible).unwrap();
    let w = 5f64.ln();
    let want_raw: Vec<i64> = [2.0, 2.0, 3.0, 0.0].iter().map(|c: &f64| (c * w).round() as i64).collect();
    assert_eq!(raw, want_raw);
    assert_eq!(raw, [3, 3, 5, 0]);
    // 100 * (max + min - s) / max with max 5, min 0.
    assert_eq!(norm, [40, 40, 0, 100]);
    // The filter is not involved: PreFilter skips a ScheduleAnyway-only pod.
    assert!(filter_codes(&pl, &pod, &snap).is_none());
}

#[test]
fn pod_topology_spread_score_table() {
    let pl = PodTopologySpread::default();
    let req_ssd = Na {
        required: Some(NodeSelector {
            terms: vec![NodeSelectorTerm {
                match_expressions: vec![NodeSelectorRequirement::new("disk", NodeSelectorOp::In, &["ssd"])],
                match_fields: vec![],
            }],
        }),
        preferred: vec![],
    };
    let with_disk = |name: &str, zone: &str| {
        let mut n = node(name, zone);
        n.labels.insert(Sym::new("disk"), Sym::new("ssd"));
        n
    };
    type Case = (&'static str, Vec<(Node, Vec<Pod>)>, Pod, Vec<i64>, Vec<i64>);
    let cases: Vec<Case> = vec![
        (
            // Each node its own domain: weight ln(3 + 2); maxSkew 1 adds nothing.
            "hostname key counts each node's own pods",
            vec![(node("h1", "a"), vec![]), (node("h2", "a"), webs("h2", 1)), (node("h3", "a"), webs("h3", 3))],
            web_pod().spread(spread(1, HOST).schedule_anyway()).build(),
            vec![0, 2, 5],
            vec![100, 60, 0],
        ),
        (
            "maxSkew - 1 is added per constraint",
            vec![(node("h1", "a"), vec![]), (node("h2", "a"), webs("h2", 1)), (node("h3", "a"), webs("h3", 3))],
            web_pod().spread(spread(3, HOST).schedule_anyway()).build(),
            vec![2, 4, 7],
            vec![100, 71, 28],
        ),
        (
            "a node missing a key is ignored: raw 0, normalized 0, outside min/max",
            vec![(node("a1", "a"), webs("a1", 1)), (node("b1", "b"), webs("b1", 2)), (node("x1", ""), vec![])],
            web_pod().spread(spread(1, ZONE).schedule_anyway()).build(),
            // 2 domains: weight ln 4 = 1.386.
            vec![1, 3, 0],
            vec![100, 33, 0],
        ),
        (
            "hostname weight leaves ignored nodes out of the size",
            vec![(node("h1", "a"), webs("h1", 3)), (node("h2", "a"), vec![]), (node("h3", ""), vec![])],
            web_pod().spread(spread(1, HOST).schedule_anyway()).spread(spread(1, ZONE).schedule_anyway()).build(),
            // hostname weight ln(2 + 2), zone weight ln(1 + 2): h1 = 3 ln 4 + 3 ln 3, h2 = 3 ln 3.
            vec![7, 3, 0],
            vec![100 * 3 / 7, 100, 0],
        ),
        (
            "all raw scores 0 normalize to 100",
            vec![(node("a1", "a"), vec![]), (node("b1", "b"), vec![])],
            web_pod().spread(spread(1, ZONE).schedule_anyway()).build(),
            vec![0, 0],
            vec![100, 100],
        ),
        (
            "every node ignored: all 0",
            vec![(node("x1", ""), vec![]), (node("x2", ""), vec![])],
            web_pod().spread(spread(1, ZONE).schedule_anyway()).build(),
            vec![0, 0],
            vec![0, 0],
        ),
        (
            "nodeAffinityPolicy Honor: pods on nodes failing the affinity do not count",
            vec![
                (with_disk("a1", "a"), webs("a1", 1)),
                (node("a2", "a"), webs("a2", 3)),
                (with_disk("b1", "b"), vec![]),
            ],
            web_pod().node_affinity(req_ssd.clone()).spread(spread(1, ZONE).schedule_anyway()).build(),
            // Zone a counts only a1's pod: weight ln 4.
            vec![1, 1, 0],
            vec![0, 0, 100],
        ),
        (
            "nodeAffinityPolicy Ignore: they count",
            vec![
                (with_disk("a1", "a"), webs("a1", 1)),
                (node("a2", "a"), webs("a2", 3)),
                (with_disk("b1", "b"), vec![]),
            ],
            web_pod()
                .node_affinity(req_ssd.clone())
                .spread(TopologySpreadConstraint {
                    node_affinity_policy: InclusionPolicy::Ignore,
                    ..spread(1, ZONE).schedule_anyway()
                })
                .build(),
            vec![6, 6, 0],
            vec![0, 0, 100],
        ),
        (
            "hostname counts ignore the inclusion policies",
            vec![(node("h1", "a"), webs("h1", 2)), (node("h2", "a"), vec![])],
            web_pod().node_affinity(req_ssd).spread(spread(1, HOST).schedule_anyway()).build(),
            vec![(2.0 * 4f64.ln()).round() as i64, 0],
            vec![0, 100],
        ),
    ];
    for (desc, nodes, pod, want_raw, want_norm) in cases {
        let snap = cluster(nodes);
        let (raw, norm) = scores(&pl, &pod, &snap).unwrap_or_else(|| panic!("{desc}: PreScore skipped"));
        assert_eq!(raw, want_raw, "{desc}: raw");
        assert_eq!(norm, want_norm, "{desc}: normalized");
    }
}

fn web_service() -> ClusterObjects {
    ClusterObjects {
        services: vec![Service {
            namespace: Sym::new("default"),
            name: Sym::new("web"),
            selector: Labels::from_pairs([("app", "web")]),
        }],
        ..Default::default()
    }
}

#[test]
fn pod_topology_spread_system_defaults_score_with_a_service() {
    // n4 has no zone: kept with system defaults (hostname still scores it), its pod counts in
    // the empty-zone domain.
    let nodes = || {
        vec![
            (node("n1", "a"), webs("n1", 1)),
            (node("n2", "a"), vec![]),
            (node("n3", "b"), webs("n3", 2)),
            (node("n4", ""), webs("n4", 1)),
        ]
    };
    let pod = web_pod().build();
    let pl = PodTopologySpread::default();
    let snap = cluster(nodes()).with_objects(web_service());
    let (raw, norm) = scores(&pl, &pod, &snap).unwrap();
    // hostname: maxSkew 3, weight ln 6; zone: maxSkew 5, weight ln 5 (domains a, b and "").
    let (h, z) = (6f64.ln(), 5f64.ln());
    let want = |host: f64, zone: Option<f64>| (host * h + 2.0 + zone.map_or(0.0, |c| c * z + 4.0)).round() as i64;
    assert_eq!(raw, [want(1.0, Some(1.0)), want(0.0, Some(1.0)), want(2.0, Some(2.0)), want(1.0, None)]);
    assert_eq!(raw, [9, 8, 13, 4]);
    assert_eq!(norm, [61, 69, 30, 100]);

    // The same constraints as a List: every key is required, so n4 is ignored.
    let list: PodTopologySpreadArgs = serde_json::from_str(
        r#"{"defaultingType":"List","defaultConstraints":[
            {"maxSkew":3,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway"},
            {"maxSkew":5,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]}"#,
    )
    .unwrap();
    list.validate().unwrap();
    let (raw, norm) = scores(&PodTopologySpread::new(list), &pod, &snap).unwrap();
    let (h, z) = (5f64.ln(), 4f64.ln());
    let want = |host: f64, zone: f64| (host * h + 2.0 + zone * z + 4.0).round() as i64;
    assert_eq!(raw, [want(1.0, 1.0), want(0.0, 1.0), want(2.0, 2.0), 0]);
    assert_eq!(norm[3], 0);

    // No service selects the pod, or the pod has its own constraints: defaults do not apply.
    assert!(scores(&pl, &pod, &cluster(nodes())).is_none());
    let own = web_pod().spread(spread(1, ZONE)).build();
    assert!(scores(&pl, &own, &snap).is_none(), "own DoNotSchedule constraints only: nothing to score");
    assert!(scores(&pl, &pod, &Snapshot::default().with_objects(web_service())).is_none(), "no nodes");
}

#[test]
fn pod_topology_spread_normalize_checks_the_node_count() {
    let snap = cluster(vec![(node("a1", "a"), vec![]), (node("b1", "b"), vec![])]);
    let pod = web_pod().spread(spread(1, ZONE).schedule_anyway()).build();
    let pl = PodTopologySpread::default();
    let nodes: Vec<&NodeInfo> = snap.iter().map(|n| &**n).collect();
    let mut state = CycleState::new();
    assert!(pl.pre_score(&mut state, &pod, &snap, &crate::framework::Feasible::nodes(&nodes)).is_success());
    assert_eq!(pl.normalize(&state, &pod, &mut [0]).code, Code::Error);
    assert_eq!(pl.normalize(&CycleState::new(), &pod, &mut [0, 0]).code, Code::Error);
    assert!(pl.score(&CycleState::new(), &pod, nodes[0], &snap).is_err());
}

#[test]
fn pod_topology_spread_args_parse_and_default() {
    let empty: PodTopologySpreadArgs =
        serde_json::from_str(r#"{"kind":"PodTopologySpreadArgs","apiVersion":"kubescheduler.config.k8s.io/v1"}"#)
            .unwrap();
    assert_eq!(empty.defaulting_type, DefaultingType::System);
    assert!(empty.default_constraints.is_empty());
    empty.validate().unwrap();
    assert!(serde_json::from_str::<PodTopologySpreadArgs>(r#"{"defaultingType":"Auto"}"#).is_err());
    assert!(serde_json::from_str::<PodTopologySpreadArgs>(r#"{"defaultConstraint":[]}"#).is_err());
    assert!(serde_json::from_str::<PodTopologySpreadArgs>(
        r#"{"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"k","whenUnsatisfiable":"DoNotSchedule","bogus":1}]}"#
    )
    .is_err());
    let list_empty: PodTopologySpreadArgs = serde_json::from_str(r#"{"defaultingType":"List"}"#).unwrap();
    list_empty.validate().unwrap();
    // List with no constraints: nothing applies to pods without their own.
    let snap = cluster(vec![(node("a1", "a"), webs("a1", 1))]).with_objects(web_service());
    assert!(scores(&PodTopologySpread::new(list_empty), &web_pod().build(), &snap).is_none());
}

#[test]
fn pod_topology_spread_args_validation_table() {
    let c = |skew: i32, key: &str, when: &str| DefaultConstraint {
        max_skew: skew,
        topology_key: key.to_owned(),
        when_unsatisfiable: when.to_owned(),
        ..Default::default()
    };
    let list = |cs: Vec<DefaultConstraint>| PodTopologySpreadArgs {
        default_constraints: cs,
        defaulting_type: DefaultingType::List,
        ..Default::default()
    };
    // (description, args, expected (field, message prefix) or valid)
    type Case = (&'static str, PodTopologySpreadArgs, Option<(&'static str, &'static str)>);
    let cases: Vec<Case> = vec![
        ("valid list", list(vec![c(1, ZONE, "DoNotSchedule"), c(2, ZONE, "ScheduleAnyway")]), None),
        (
            "System with constraints",
            PodTopologySpreadArgs { default_constraints: vec![c(1, ZONE, "DoNotSchedule")], ..Default::default() },
            Some(("defaultingType", "Invalid value: \"System\": when .defaultConstraints are not empty")),
        ),
        (
            "maxSkew 0",
            list(vec![c(0, ZONE, "DoNotSchedule")]),
            Some(("defaultConstraints[0].maxSkew", "Invalid value: 0: not in valid range (0, inf)")),
        ),
        (
            "empty topologyKey",
            list(vec![c(1, "", "DoNotSchedule")]),
            Some(("defaultConstraints[0].topologyKey", "Required value: can not be empty")),
        ),
        (
            "topologyKey not a label name",
            list(vec![c(1, "bad key!", "DoNotSchedule")]),
            Some(("defaultConstraints[0].topologyKey", "Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character")),
        ),
        (
            "topologyKey with an upper-case prefix",
            list(vec![c(1, "Example.com/zone", "DoNotSchedule")]),
            Some(("defaultConstraints[0].topologyKey", "")),
        ),
        (
            "empty whenUnsatisfiable",
            list(vec![c(1, ZONE, "")]),
            Some(("defaultConstraints[0].whenUnsatisfiable", "Required value: can not be empty")),
        ),
        (
            "unknown whenUnsatisfiable",
            list(vec![c(1, ZONE, "Sometimes")]),
            Some((
                "defaultConstraints[0].whenUnsatisfiable",
                "Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
            )),
        ),
        (
            "labelSelector given",
            list(vec![DefaultConstraint { label_selector: Some(serde_json::json!({})), ..c(1, ZONE, "DoNotSchedule") }]),
            Some((
                "defaultConstraints[0].labelSelector",
                "Forbidden: constraint must not define a selector, as they deduced for each pod",
            )),
        ),
        (
            "duplicate key and action",
            list(vec![c(1, ZONE, "DoNotSchedule"), c(1, HOST, "DoNotSchedule"), c(3, ZONE, "DoNotSchedule")]),
            Some(("defaultConstraints[2]", "Duplicate value: \"{topology.kubernetes.io/zone, DoNotSchedule}\"")),
        ),
        (
            "unknown inclusion policy",
            list(vec![DefaultConstraint { node_taints_policy: Some("Maybe".into()), ..c(1, ZONE, "DoNotSchedule") }]),
            Some(("defaultConstraints[0].nodeTaintsPolicy", "Unsupported value: \"Maybe\": supported values: \"Honor\", \"Ignore\"")),
        ),
    ];
    for (desc, args, want) in cases {
        match (args.validate(), want) {
            (Ok(()), None) => {}
            (Err(e), Some((field, msg))) => {
                assert_eq!(e.field, field, "{desc}: {e}");
                assert!(e.message.starts_with(msg), "{desc}: {e}");
            }
            (got, want) => panic!("{desc}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn pod_topology_spread_new_honors_defaulting_type() {
    let system = PodTopologySpread::new(PodTopologySpreadArgs::default());
    assert!(system.system_defaulted);
    let keys: Vec<(&str, i32)> = system.defaults.iter().map(|(_, c)| (c.topology_key.as_str(), c.max_skew)).collect();
    assert_eq!(keys, [(HOST, 3), (ZONE, 5)]);
    assert!(system.defaults.iter().all(|(w, _)| *w == Some(WhenUnsatisfiable::ScheduleAnyway)));
    let list = PodTopologySpread::new(PodTopologySpreadArgs {
        defaulting_type: DefaultingType::List,
        default_constraints: vec![DefaultConstraint {
            max_skew: 2,
            topology_key: "rack".into(),
            when_unsatisfiable: "DoNotSchedule".into(),
            min_domains: Some(4),
            node_taints_policy: Some("Honor".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    assert!(!list.system_defaulted);
    let (when, c) = &list.defaults[0];
    assert_eq!(*when, Some(WhenUnsatisfiable::DoNotSchedule));
    assert_eq!((c.max_skew, c.topology_key.as_str(), c.min_domains), (2, "rack", Some(4)));
    assert_eq!((c.node_affinity_policy, c.node_taints_policy), (InclusionPolicy::Honor, InclusionPolicy::Honor));
    assert_eq!(PodTopologySpread::default().name(), NAME);
}

mod recount {
    use proptest::prelude::*;

    use super::*;

    /// A plain recomputation of one node's verdict, walking every node's pods afresh.
    fn reference(pod: &Pod, snap: &Snapshot, target: &NodeInfo) -> Code {
        let cs: Vec<&TopologySpreadConstraint> = pod.topology_spread_constraints.iter().collect();
        for c in &cs {
            let Some(value) = target.node().labels.get(c.topology_key) else {
                return Unres;
            };
            let mut domains: std::collections::HashMap<Sym, i64> = Default::default();
            for n in snap.iter() {
                let labels = &n.node().labels;
                if !cs.iter().all(|o| labels.contains_key(o.topology_key)) {
                    continue;
                }
                if c.node_affinity_policy == InclusionPolicy::Honor && !node_affinity::fits(pod, n) {
                    continue;
                }
                if c.node_taints_policy == InclusionPolicy::Honor && !taint_toleration::fits(pod, n) {
                    continue;
                }
                let sel = c.label_selector.as_ref().unwrap();
                let k = n
                    .pods()
                    .iter()
                    .filter(|p| p.namespace == pod.namespace && !p.is_terminating() && sel.matches(&p.labels))
                    .count() as i64;
                *domains.entry(labels.get(c.topology_key).unwrap()).or_default() += k;
            }
            let min = if (domains.len() as i32) < c.min_domains.unwrap_or(1) {
                0
            } else {
                domains.values().copied().min().unwrap_or(i32::MAX as i64)
            };
            let own = domains.get(&value).copied().unwrap_or(0);
            let self_match = c.label_selector.as_ref().unwrap().matches(&pod.labels) as i64;
            if own + self_match - min > c.max_skew as i64 {
                return Uns;
            }
        }
        Ok_
    }

    proptest! {
        /// Filter from the PreFilter counts equals recounting everything per node.
        #[test]
        fn filter_equals_recount(
            nodes in prop::collection::vec((0usize..4, any::<bool>(), any::<bool>(), prop::collection::vec((0usize..3, any::<bool>(), any::<bool>()), 0..4)), 1..12),
            constraints in prop::collection::vec((1i32..3, any::<bool>(), prop::option::of(1i32..5), any::<bool>(), any::<bool>(), 0usize..3), 1..3),
            pod_app in 0usize..3, needs_ssd in any::<bool>(),
        ) {
            let apps = ["a", "b", "c"];
            let infos: Vec<NodeInfo> = nodes.iter().enumerate().map(|(i, (zone, ssd, tainted, pods))| {
                let name = format!("n{i}");
                let mut b = Node::builder(&name).label(HOST, &name);
                if *zone < 3 { b = b.label(ZONE, ["z1", "z2", "z3"][*zone]); }
                if *ssd { b = b.label("disk", "ssd"); }
                if *tainted { b = b.taint(Taint::new("t", "", TaintEffect::NoSchedule)); }
                let pods: Vec<Pod> = pods.iter().enumerate().map(|(j, (app, other_ns, term))| {
                    let mut p = Pod::builder(&format!("p{i}-{j}")).label("app", apps[*app]);
                    if *other_ns { p = p.namespace("other"); }
                    if *term { p = p.deletion_timestamp(Timestamp(1)); }
                    p.build()
                }).collect();
                node_info(b.build(), &pods)
            }).collect();
            let snap = Snapshot::from_node_infos(infos);
            let mut pb = Pod::builder("incoming").label("app", apps[pod_app]);
            if needs_ssd { pb = pb.node_selector("disk", "ssd"); }
            for &(skew, by_host, min_domains, ignore_aff, honor_taints, app) in &constraints {
                pb = pb.spread(TopologySpreadConstraint {
                    min_domains,
                    node_affinity_policy: if ignore_aff { InclusionPolicy::Ignore } else { InclusionPolicy::Honor },
                    node_taints_policy: if honor_taints { InclusionPolicy::Honor } else { InclusionPolicy::Ignore },
                    ..TopologySpreadConstraint::new(skew, if by_host { HOST } else { ZONE }, sel(&[("app", apps[app])]))
                });
            }
            let pod = pb.build();
            let pl = PodTopologySpread::default();
            let got = filter_codes(&pl, &pod, &snap).expect("DoNotSchedule constraints");
            let want: Vec<Code> = snap.iter().map(|n| reference(&pod, &snap, n)).collect();
            prop_assert_eq!(got, want);
        }
    }
}

/// One step of the memo property tests: `action` 0 removes a placed pod, 1 replaces node
/// `node` with `moved()`, otherwise a pod labelled `app=<web|db|other>` lands on node `node`.
fn change_cluster(
    cache: &crate::cache::Cache,
    placed: &mut Vec<Pod>,
    step: usize,
    (node, app, action): (usize, usize, usize),
    moved: impl FnOnce() -> Node,
) {
    match action {
        0 if !placed.is_empty() => {
            let p = placed.remove(step % placed.len());
            cache.remove_pod(&p).unwrap();
        }
        1 => cache.update_node(moved()).unwrap(),
        _ => {
            let p = Pod::builder(&format!("p{step}"))
                .label("app", ["web", "db", "other"][app])
                .node_name(&format!("n{node}"))
                .build();
            cache.add_pod(&p).unwrap();
            placed.push(p);
        }
    }
}

proptest::proptest! {
    /// PreFilter counts kept across cycles and updated from snapshot diffs equal counts
    /// computed from scratch, whatever pods and node labels change between cycles.
    #[test]
    fn memoized_filter_counts_equal_fresh_counts(
        ops in proptest::collection::vec((0usize..9, 0usize..3, 0usize..4, 0usize..2), 1..60),
    ) {
        use crate::cache::Cache;
        let cache = Cache::new(std::time::Duration::ZERO);
        let zoned = |i: usize, zone: &str| Node::builder(&format!("n{i}"))
            .label(LABEL_HOSTNAME, &format!("n{i}"))
            .label(LABEL_ZONE, zone)
            .resources(64000, 256 << 30, 500)
            .build();
        for i in 0..9 {
            cache.add_node(zoned(i, ["a", "b", "c"][i % 3])).unwrap();
        }
        let kinds = [
            Pod::builder("in0").label("app", "web")
                .spread(TopologySpreadConstraint::new(1, LABEL_ZONE, sel(&[("app", "web")])))
                .build(),
            Pod::builder("in1").label("app", "db")
                .spread(TopologySpreadConstraint::new(2, LABEL_HOSTNAME, sel(&[("app", "db")])))
                .spread(TopologySpreadConstraint { min_domains: Some(4), ..TopologySpreadConstraint::new(1, LABEL_ZONE, sel(&[("app", "db")])) })
                .node_selector(LABEL_ZONE, "a")
                .build(),
        ];
        let memo = PodTopologySpread::default();
        let mut placed: Vec<Pod> = Vec::new();
        for (step, (node, app, action, kind)) in ops.into_iter().enumerate() {
            // Moving a node to another zone changes its domain.
            change_cluster(&cache, &mut placed, step, (node, app, action), || zoned(node, ["a", "b", "c", "d"][(node + step) % 4]));
            let snap = cache.update_snapshot();
            let pod = &kinds[kind];
            let got: PreFilterState = memo.pre_filter_state(pod, &snap);
            let want: PreFilterState = PodTopologySpread::default().pre_filter_state(pod, &snap);
            proptest::prop_assert_eq!(got.constraints.len(), want.constraints.len());
            for (g, w) in got.constraints.iter().zip(&want.constraints) {
                proptest::prop_assert_eq!(&*g.counts, &*w.counts, "step {}", step);
                proptest::prop_assert_eq!(g.min_match(), w.min_match(), "step {}", step);
            }
        }
    }
}

proptest::proptest! {
    /// PreScore's domain sums kept across cycles (keys required) equal sums computed from
    /// scratch, whatever pods and node labels change between cycles and whichever nodes are
    /// scored (some of them missing the zone key).
    #[test]
    fn memoized_score_counts_equal_fresh_counts(
        ops in proptest::collection::vec((0usize..9, 0usize..3, 0usize..4, 0usize..2, 1u32..512), 1..60),
    ) {
        use crate::cache::Cache;
        use crate::framework::Feasible;
        let cache = Cache::new(std::time::Duration::ZERO);
        let zoned = |i: usize, zone: &str| {
            let b = Node::builder(&format!("n{i}")).label(LABEL_HOSTNAME, &format!("n{i}")).resources(64000, 256 << 30, 500);
            if zone.is_empty() { b.build() } else { b.label(LABEL_ZONE, zone).build() }
        };
        for i in 0..9 {
            cache.add_node(zoned(i, ["a", "b", "c"][i % 3])).unwrap();
        }
        let anyway = |skew, key, s| TopologySpreadConstraint {
            when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
            ..TopologySpreadConstraint::new(skew, key, s)
        };
        let kinds = [
            Pod::builder("in0").label("app", "web").spread(anyway(1, LABEL_ZONE, sel(&[("app", "web")]))).build(),
            Pod::builder("in1").label("app", "db")
                .spread(anyway(2, LABEL_HOSTNAME, sel(&[("app", "db")])))
                .spread(anyway(1, LABEL_ZONE, sel(&[("app", "db")])))
                .node_selector(LABEL_ZONE, "a")
                .build(),
        ];
        let memo = PodTopologySpread::default();
        let mut placed: Vec<Pod> = Vec::new();
        for (step, (node, app, action, kind, scored)) in ops.into_iter().enumerate() {
            // Moving a node to another zone or taking its zone away changes its domain.
            change_cluster(&cache, &mut placed, step, (node, app, action), || zoned(node, ["a", "b", "c", "d", ""][(node + step) % 5]));
            let snap = cache.update_snapshot();
            let pod = &kinds[kind];
            // The scored nodes: those whose bit is set in `scored`.
            let positions: Vec<u32> = (0..snap.num_nodes() as u32).filter(|&i| scored & (1 << i) != 0).collect();
            let nodes = Feasible::at(&snap, &positions);
            let got = memo.pre_score_state(pod, &snap, &nodes).expect("ScheduleAnyway constraints");
            let fresh = PodTopologySpread::default().pre_score_state(pod, &snap, &nodes).expect("the same");
            proptest::prop_assert_eq!(&got.ignored, &fresh.ignored, "step {}", step);
            proptest::prop_assert_eq!(got.constraints.len(), fresh.constraints.len());
            // The reference: the same domains, summed over every node of the cluster.
            let mut reference = fresh.constraints.clone();
            for sc in reference.iter_mut().filter(|sc| !sc.by_node()) {
                sc.counts.values_mut().for_each(|n| *n = 0);
            }
            let constraints: Vec<_> = reference.iter().map(|sc| sc.constraint().clone()).collect();
            super::scoring::count_domains_over_cluster(pod, &snap, &constraints, &mut reference, true);
            for ((g, f), r) in got.constraints.iter().zip(&fresh.constraints).zip(&reference) {
                proptest::prop_assert_eq!(&g.counts, &f.counts, "kept against fresh, step {}", step);
                proptest::prop_assert_eq!(&g.counts, &r.counts, "against the cluster's sums, step {}", step);
            }
        }
    }
}
