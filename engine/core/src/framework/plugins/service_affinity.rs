//! ServiceAffinity: keeps the pods of a service on nodes that share the values of the
//! configured `affinityLabels` (rejecting other nodes), and scores nodes by how few of the
//! service's pods run in their `antiAffinityLabelsPreference` domains (the seeds'
//! CheckServiceAffinity predicate and ServiceAntiAffinity priority; upstream removed the
//! plugin in v1.23). Off by default.
//!
//! Filter. The node must carry, for each affinity label, the value the pod's nodeSelector
//! gives it; an affinity label the nodeSelector leaves open takes its value from the node of
//! the *first* already-scheduled pod like this one, when a service selects the pod. "Like this
//! one" is upstream's test: same namespace and a superset of the pod's labels. "First" is the
//! snapshot's order (NodeTree order, then each node's pods); upstream took its informer's
//! order. As upstream's `FilterOutPods`, a pod that the node being filtered no longer holds
//! (preemption trimmed it away) is passed over for that node. PreFilter does the walk over
//! the snapshot once and keeps only what Filter needs; it skips when no affinity labels are
//! configured. Rejections are Unschedulable, as upstream's.
//!
//! Score. Raw: the pods on the node (same namespace, not terminating) selected by the first
//! service selecting the pod (ClusterObjects order). Normalize, per anti-affinity label: a node
//! carrying the label gets `100 * (total - pods in its label value's domain) / total` (100
//! when the total is 0), a node without it 0; the labels' shares are averaged and truncated.
//! PreScore keeps the service selector and each node's label values (normalize sees only the
//! scores, in the order of PreScore's nodes); it skips when no anti-affinity labels are
//! configured (upstream's policy translation gave the plugin weight 0 then).

use serde::Deserialize;
use smallvec::SmallVec;

use crate::api::{Labels, Pod, PodUid, Sym};
use crate::framework::Feasible;
use crate::framework::{
    ArgsError, CycleState, FilterPlugin, Plugin, PreFilterPlugin, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::util::hash::FxHashMap;

pub const NAME: &str = "ServiceAffinity";
pub const REASON: &str = "node(s) didn't match service affinity";

/// `ServiceAffinityArgs` (kubescheduler.config.k8s.io/v1beta1, the last API that had it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAffinityArgs {
    /// Accepted and ignored (`ServiceAffinityArgs`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Accepted and ignored.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Node label keys whose values must be the same for all pods of a service.
    #[serde(default)]
    pub affinity_labels: Vec<String>,
    /// Node label keys over whose values a service's pods are spread by the score.
    #[serde(default)]
    pub anti_affinity_labels_preference: Vec<String>,
}

impl ServiceAffinityArgs {
    /// Upstream validated nothing in these args; neither do we (a key no node carries only
    /// makes the labels unmatched, as it did upstream).
    pub fn validate(&self) -> Result<(), ArgsError> {
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
pub struct ServiceAffinity {
    pub affinity_labels: Vec<Sym>,
    pub anti_affinity_labels: Vec<Sym>,
}

impl ServiceAffinity {
    pub fn new(args: ServiceAffinityArgs) -> ServiceAffinity {
        ServiceAffinity {
            affinity_labels: args.affinity_labels.iter().map(|s| Sym::new(s)).collect(),
            anti_affinity_labels: args.anti_affinity_labels_preference.iter().map(|s| Sym::new(s)).collect(),
        }
    }
}

impl Plugin for ServiceAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
}

/// Label requirements (key = value), all of which a node must meet.
type Required = SmallVec<[(Sym, Sym); 4]>;

/// The first pod like the incoming one: its node, the pods like it on that node (any of them
/// still present there stands first for that node), and the requirements its node implies.
#[derive(Clone, Debug)]
struct FirstNode {
    node: Sym,
    uids: SmallVec<[PodUid; 2]>,
    required: Required,
}

#[derive(Clone, Debug)]
struct PreFilterState {
    /// From the pod's nodeSelector alone.
    required: Required,
    /// Set when backfilling applies (a service selects the pod, a label is left open) and a
    /// pod like this one is scheduled.
    first: Option<FirstNode>,
    /// The requirements from the first such pod on any other node, for the first node itself
    /// when it no longer holds its pods.
    fallback: Option<Required>,
}

impl ServiceAffinity {
    /// `required` plus, for each affinity label it leaves open, the value on `labels` if any.
    fn backfill(&self, required: &Required, labels: &Labels) -> Required {
        let mut out = required.clone();
        for &k in &self.affinity_labels {
            if out.iter().any(|&(rk, _)| rk == k) {
                continue;
            }
            if let Some(v) = labels.get(k) {
                out.push((k, v));
            }
        }
        out
    }

    fn pre_filter_state(&self, pod: &Pod, snapshot: &Snapshot) -> PreFilterState {
        let mut required = Required::new();
        for &k in &self.affinity_labels {
            if let Some(v) = pod.node_selector.get(k) {
                if !required.iter().any(|&(rk, _)| rk == k) {
                    required.push((k, v));
                }
            }
        }
        let mut st = PreFilterState { required, first: None, fallback: None };
        let open = self.affinity_labels.iter().any(|&k| pod.node_selector.get(k).is_none());
        if !open || snapshot.objects().services_selecting(pod).next().is_none() {
            return st;
        }
        let like = |p: &Pod| p.namespace == pod.namespace && p.labels.is_superset_of(&pod.labels);
        for info in snapshot.iter() {
            let mut matching = info.pods().iter().filter(|p| like(p)).peekable();
            if matching.peek().is_none() {
                continue;
            }
            let labels = &info.node().labels;
            match &st.first {
                None => {
                    st.first = Some(FirstNode {
                        node: info.name(),
                        uids: matching.map(|p| p.uid.clone()).collect(),
                        required: self.backfill(&st.required, labels),
                    });
                }
                Some(_) => {
                    st.fallback = Some(self.backfill(&st.required, labels));
                    break;
                }
            }
        }
        st
    }

    /// The requirements that apply to `node`.
    fn required_for<'a>(st: &'a PreFilterState, node: &NodeInfo) -> &'a Required {
        match &st.first {
            None => &st.required,
            Some(first) if first.node != node.name() => &first.required,
            Some(first) => {
                if first.uids.iter().any(|u| node.pods().iter().any(|p| &p.uid == u)) {
                    &first.required
                } else {
                    st.fallback.as_ref().unwrap_or(&st.required)
                }
            }
        }
    }
}

impl PreFilterPlugin for ServiceAffinity {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        if self.affinity_labels.is_empty() {
            return Status::skip();
        }
        state.write(self.pre_filter_state(pod, snapshot));
        Status::success()
    }
}

impl FilterPlugin for ServiceAffinity {
    fn filter(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo) -> Status {
        if self.affinity_labels.is_empty() {
            return Status::success();
        }
        let Some(st) = state.read::<PreFilterState>() else {
            return Status::error("ServiceAffinity: no PreFilter state");
        };
        let labels = &node.node().labels;
        if Self::required_for(st, node).iter().all(|&(k, v)| labels.get(k) == Some(v)) {
            Status::success()
        } else {
            Status::unschedulable(REASON)
        }
    }
}

#[derive(Clone, Debug)]
struct PreScoreState {
    /// The first selecting service's selector; `None` when no service selects the pod.
    selector: Option<Labels>,
    /// Per node of PreScore's list, per anti-affinity label: the node's value, if it has the label.
    values: Vec<Option<Sym>>,
}

impl PreScorePlugin for ServiceAffinity {
    fn pre_score(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot, nodes: &Feasible<'_>) -> Status {
        if self.anti_affinity_labels.is_empty() {
            return Status::skip();
        }
        let selector = snapshot.objects().services_selecting(pod).next().map(|s| s.selector.clone());
        let values =
            nodes.iter().flat_map(|n| self.anti_affinity_labels.iter().map(move |&k| n.node().labels.get(k))).collect();
        state.write(PreScoreState { selector, values });
        Status::success()
    }
}

impl ScorePlugin for ServiceAffinity {
    fn score(&self, state: &CycleState, pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        let st = state.read::<PreScoreState>().ok_or_else(|| Status::error("ServiceAffinity: no PreScore state"))?;
        let Some(selector) = &st.selector else {
            return Ok(0);
        };
        let count = node
            .pods()
            .iter()
            .filter(|p| p.namespace == pod.namespace && !p.is_terminating() && p.labels.is_superset_of(selector))
            .count();
        Ok(count as i64)
    }

    fn normalize(&self, state: &CycleState, _pod: &Pod, scores: &mut [i64]) -> Status {
        let Some(st) = state.read::<PreScoreState>() else {
            return Status::error("ServiceAffinity: no PreScore state");
        };
        let labels = self.anti_affinity_labels.len();
        if st.values.len() != scores.len() * labels {
            return Status::error("ServiceAffinity: scores do not match the nodes of PreScore");
        }
        let total: i64 = scores.iter().sum();
        let max = MAX_NODE_SCORE as f64;
        let mut reduced = vec![0f64; scores.len()];
        let mut in_domain: FxHashMap<Sym, i64> = FxHashMap::default();
        for l in 0..labels {
            let value = |i: usize| st.values[i * labels + l];
            in_domain.clear();
            for (i, &s) in scores.iter().enumerate() {
                if let Some(v) = value(i) {
                    *in_domain.entry(v).or_default() += s;
                }
            }
            for (i, r) in reduced.iter_mut().enumerate() {
                let Some(v) = value(i) else { continue };
                let mut f = max;
                if total > 0 {
                    f = max * ((total - in_domain[&v]) as f64 / total as f64);
                }
                *r += f / labels as f64;
            }
        }
        for (s, r) in scores.iter_mut().zip(reduced) {
            *s = r as i64;
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Node;
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;
    use crate::snapshot::objects::{ClusterObjects, Service};
    use crate::util::time::Timestamp;

    /// A list of label keys or node names in a case table.
    type Names = &'static [&'static str];

    /// (description, affinity labels, pods per node, namespace of the web service, incoming
    /// pod, feasible nodes)
    struct FilterCase(&'static str, Names, [Vec<Pod>; 4], &'static str, Pod, Names);

    /// (description, anti-affinity labels, namespace of the web service, raw, normalized)
    struct ScoreCase(&'static str, Names, &'static str, [i64; 4], [i64; 4]);

    fn plugin(affinity: &[&str], anti: &[&str]) -> ServiceAffinity {
        let args = ServiceAffinityArgs {
            affinity_labels: affinity.iter().map(|s| s.to_string()).collect(),
            anti_affinity_labels_preference: anti.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        assert_eq!(args.validate(), Ok(()));
        ServiceAffinity::new(args)
    }

    fn web_service(ns: &str) -> ClusterObjects {
        let mut o = ClusterObjects::new();
        o.upsert_service(Service {
            namespace: Sym::new(ns),
            name: Sym::new("web"),
            selector: Labels::from_pairs([("app", "web")]),
        });
        o
    }

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        let mut b = Node::builder(name);
        for (k, v) in labels {
            b = b.label(k, v);
        }
        b.build()
    }

    fn web(name: &str) -> Pod {
        Pod::builder(name).label("app", "web").build()
    }

    /// n1 r1/z11, n2 r1/z12, n3 r2/z21, n4 r2/z21; `pods[i]` on node i.
    fn cluster(pods: [Vec<Pod>; 4]) -> Vec<NodeInfo> {
        let nodes = [
            node("n1", &[("region", "r1"), ("zone", "z11")]),
            node("n2", &[("region", "r1"), ("zone", "z12")]),
            node("n3", &[("region", "r2"), ("zone", "z21")]),
            node("n4", &[("region", "r2"), ("zone", "z21")]),
        ];
        nodes.into_iter().zip(pods).map(|(n, p)| node_info(n, &p)).collect()
    }

    /// The names of the nodes the pod may use; panics on a status other than Success or
    /// Unschedulable with the plugin's reason.
    fn feasible(pl: &ServiceAffinity, pod: &Pod, snap: &Snapshot, filtered: &[NodeInfo]) -> Vec<String> {
        let mut state = CycleState::new();
        assert!(pl.pre_filter(&mut state, pod, snap).is_success());
        filtered
            .iter()
            .filter(|n| {
                let st = pl.filter(&state, pod, n);
                assert!(st.is_success() || (st.code == Code::Unschedulable && st.message() == REASON), "{st}");
                st.is_success()
            })
            .map(|n| n.name().to_string())
            .collect()
    }

    #[test]
    fn service_affinity_filter_table() {
        let other_ns = Pod::builder("o").namespace("other").label("app", "web").build();
        let db = Pod::builder("d").label("app", "db").build();
        let web_v2 = Pod::builder("w2").label("app", "web").label("version", "2").build();
        let none = || Vec::<Pod>::new();
        let cases = vec![
            FilterCase(
                "first pod of the service goes anywhere",
                &["region"],
                [none(), none(), none(), none()],
                "default",
                web("p"),
                &["n1", "n2", "n3", "n4"],
            ),
            FilterCase(
                "follows the first pod's region",
                &["region"],
                [vec![web("e")], none(), none(), none()],
                "default",
                web("p"),
                &["n1", "n2"],
            ),
            FilterCase(
                "first in snapshot order wins",
                &["zone"],
                [none(), vec![web("e1")], vec![web("e2")], none()],
                "default",
                web("p"),
                &["n2"],
            ),
            FilterCase(
                "region and zone",
                &["region", "zone"],
                [vec![web("e")], none(), none(), none()],
                "default",
                web("p"),
                &["n1"],
            ),
            FilterCase(
                "nodeSelector fixes the label",
                &["region"],
                [vec![web("e")], none(), none(), none()],
                "default",
                Pod::builder("p").label("app", "web").node_selector("region", "r2").build(),
                &["n3", "n4"],
            ),
            FilterCase(
                "nodeSelector for one label, first pod for the other",
                &["region", "zone"],
                [none(), none(), vec![web("e")], none()],
                "default",
                Pod::builder("p").label("app", "web").node_selector("region", "r2").build(),
                &["n3", "n4"],
            ),
            FilterCase(
                "no service selects the pod",
                &["region"],
                [vec![web("e")], none(), none(), none()],
                "elsewhere",
                web("p"),
                &["n1", "n2", "n3", "n4"],
            ),
            FilterCase(
                "pods of other namespaces do not count",
                &["region"],
                [vec![other_ns.clone()], none(), none(), none()],
                "default",
                web("p"),
                &["n1", "n2", "n3", "n4"],
            ),
            FilterCase(
                "pods without the pod's labels do not count",
                &["region"],
                [vec![db.clone()], none(), vec![web("e")], none()],
                "default",
                web("p"),
                &["n3", "n4"],
            ),
            FilterCase(
                "pods with more labels count",
                &["region"],
                [none(), none(), vec![web_v2.clone()], none()],
                "default",
                web("p"),
                &["n3", "n4"],
            ),
            FilterCase(
                "an incoming pod with more labels ignores plainer pods",
                &["region"],
                [vec![web("e")], none(), none(), none()],
                "default",
                Pod::builder("p").label("app", "web").label("version", "2").build(),
                &["n1", "n2", "n3", "n4"],
            ),
            FilterCase(
                "a label the first node lacks stays open",
                &["rack"],
                [vec![web("e")], none(), none(), none()],
                "default",
                web("p"),
                &["n1", "n2", "n3", "n4"],
            ),
        ];
        for FilterCase(desc, affinity, pods, svc_ns, pod, want) in cases {
            let infos = cluster(pods);
            let snap = Snapshot::from_node_infos(infos.clone()).with_objects(web_service(svc_ns));
            assert_eq!(feasible(&plugin(affinity, &[]), &pod, &snap, &infos), want, "{desc}");
        }
    }

    #[test]
    fn service_affinity_first_node_without_its_pods_uses_the_next_pod() {
        // The snapshot has e1 on n1 (r1) and e3 on n3 (r2). Filtering a copy of n1 from which
        // e1 was removed (as preemption does) must follow e3 instead; other nodes follow e1.
        let infos = cluster([vec![web("e1")], vec![], vec![web("e3")], vec![]]);
        let snap = Snapshot::from_node_infos(infos.clone()).with_objects(web_service("default"));
        let mut trimmed = infos.clone();
        trimmed[0].remove_pod(&web("e1").uid).expect("e1 on n1");
        let pl = plugin(&["region"], &[]);
        assert_eq!(feasible(&pl, &web("p"), &snap, &infos), ["n1", "n2"]);
        assert_eq!(feasible(&pl, &web("p"), &snap, &trimmed), ["n2"]);
        // With no other pod to follow, the trimmed first node is unconstrained.
        let alone = cluster([vec![web("e1")], vec![], vec![], vec![]]);
        let snap = Snapshot::from_node_infos(alone.clone()).with_objects(web_service("default"));
        let mut trimmed = alone.clone();
        trimmed[0].remove_pod(&web("e1").uid).expect("e1 on n1");
        assert_eq!(feasible(&pl, &web("p"), &snap, &trimmed), ["n1", "n2"]);
    }

    #[test]
    fn service_affinity_without_affinity_labels_skips() {
        let pl = plugin(&[], &["zone"]);
        let mut state = CycleState::new();
        assert!(pl.pre_filter(&mut state, &web("p"), &Snapshot::default()).is_skip());
        let info = node_info(node("n", &[]), &[]);
        assert!(pl.filter(&state, &web("p"), &info).is_success());
        let pl = plugin(&["zone"], &[]);
        assert!(pl.pre_score(&mut state, &web("p"), &Snapshot::default(), &Feasible::nodes(&[&info])).is_skip());
    }

    #[test]
    fn service_affinity_score_table() {
        let terminating = Pod::builder("t").label("app", "web").deletion_timestamp(Timestamp(5)).build();
        let db = Pod::builder("d").label("app", "db").build();
        // n1 z1 r1: 2 web; n2 z1 r1: 1 web + 1 db; n3 z2 r1: 1 terminating web; n4 r2 (no zone): 1 web.
        let nodes = [
            node_info(node("n1", &[("zone", "z1"), ("region", "r1")]), &[web("a"), web("b")]),
            node_info(node("n2", &[("zone", "z1"), ("region", "r1")]), &[web("c"), db]),
            node_info(node("n3", &[("zone", "z2"), ("region", "r1")]), &[terminating]),
            node_info(node("n4", &[("region", "r2")]), &[web("e")]),
        ];
        let cases = [
            // total 4; z1 holds 3 → 25, z2 holds 0 → 100, n4 has no zone → 0
            ScoreCase("one label", &["zone"], "default", [2, 1, 0, 1], [25, 25, 100, 0]),
            // region: r1 holds 3 → 25, r2 holds 1 → 75; averaged with the zone shares
            ScoreCase("two labels averaged", &["zone", "region"], "default", [2, 1, 0, 1], [25, 25, 62, 37]),
            // no service: every raw score 0, nodes with the label score 100
            ScoreCase("no service selects the pod", &["zone"], "elsewhere", [0, 0, 0, 0], [100, 100, 100, 0]),
            ScoreCase("a missing label scores 0 everywhere", &["rack"], "default", [2, 1, 0, 1], [0, 0, 0, 0]),
        ];
        let pod = web("p");
        for ScoreCase(desc, anti, svc_ns, raw, want) in cases {
            let pl = plugin(&[], anti);
            let snap = Snapshot::from_node_infos(nodes.to_vec()).with_objects(web_service(svc_ns));
            let refs: Vec<&NodeInfo> = nodes.iter().collect();
            let mut state = CycleState::new();
            assert!(pl.pre_score(&mut state, &pod, &snap, &Feasible::nodes(&refs)).is_success(), "{desc}");
            let mut scores = Vec::new();
            pl.score_nodes(&state, &pod, &refs, &snap, &mut scores).unwrap();
            assert_eq!(scores, raw, "{desc}: raw");
            assert!(pl.normalize(&state, &pod, &mut scores).is_success(), "{desc}");
            assert_eq!(scores, want, "{desc}: normalized");
        }
        // normalize refuses scores that do not line up with PreScore's nodes.
        let pl = plugin(&[], &["zone"]);
        let mut state = CycleState::new();
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        pl.pre_score(&mut state, &pod, &Snapshot::default(), &Feasible::nodes(&refs));
        assert_eq!(pl.normalize(&state, &pod, &mut [1, 2]).code, Code::Error);
    }

    #[test]
    fn service_affinity_args_parse_and_validate() {
        let args: ServiceAffinityArgs = serde_json::from_str(
            r#"{"kind":"ServiceAffinityArgs","affinityLabels":["region"],"antiAffinityLabelsPreference":["zone"]}"#,
        )
        .unwrap();
        assert_eq!(args.validate(), Ok(()));
        assert_eq!(args.affinity_labels, ["region"]);
        assert!(serde_json::from_str::<ServiceAffinityArgs>(r#"{"labels":["region"]}"#).is_err(), "unknown field");
    }
}
