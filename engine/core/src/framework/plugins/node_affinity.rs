//! NodeAffinity: rejects nodes that fail the pod's nodeSelector or required node affinity;
//! scores nodes by the summed weights of the preferred terms they match.

use std::sync::Arc;

use crate::api::validation::{label_value_errors, qualified_name_errors};
use crate::framework::Feasible;
use smallvec::SmallVec;

use crate::api::{
    NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm, Pod, PreferredSchedulingTerm, Sym,
};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::{
    default_normalize_score, ArgsError, Code, CycleState, FilterPlugin, Plugin, PreFilterPlugin, PreScorePlugin,
    RowFail, RowJudged, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::sync::{lock, Mutex};

pub const NAME: &str = "NodeAffinity";
pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";

/// NodeAffinity's configuration (`NodeAffinityArgs` of `kubescheduler.config.k8s.io/v1`):
/// `addedAffinity` is node affinity that every pod scheduled by the profile must also satisfy
/// (required) and is scored by (preferred), in addition to its own.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAffinityArgs {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub added_affinity: Option<AddedAffinity>,
}

/// `v1.NodeAffinity` as written in configuration.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddedAffinity {
    #[serde(default)]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelectorArgs>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTermArgs>,
}

/// `v1.NodeSelector`: terms ORed.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelectorArgs {
    #[serde(default, deserialize_with = "null_as_default")]
    pub node_selector_terms: Vec<NodeSelectorTermArgs>,
}

/// `v1.NodeSelectorTerm`: requirements ANDed.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelectorTermArgs {
    #[serde(default, deserialize_with = "null_as_default")]
    pub match_expressions: Vec<NodeSelectorRequirementArgs>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub match_fields: Vec<NodeSelectorRequirementArgs>,
}

/// `v1.NodeSelectorRequirement`; the operator is kept as written so that validation can name it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelectorRequirementArgs {
    pub key: String,
    pub operator: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub values: Vec<String>,
}

/// `v1.PreferredSchedulingTerm`.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreferredSchedulingTermArgs {
    pub weight: i32,
    pub preference: NodeSelectorTermArgs,
}

/// JSON `null` reads as the empty value, as the API's decoding does.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    Ok(<Option<T> as serde::Deserialize>::deserialize(d)?.unwrap_or_default())
}

fn selector_op(op: &str) -> Option<NodeSelectorOp> {
    Some(match op {
        "In" => NodeSelectorOp::In,
        "NotIn" => NodeSelectorOp::NotIn,
        "Exists" => NodeSelectorOp::Exists,
        "DoesNotExist" => NodeSelectorOp::DoesNotExist,
        "Gt" => NodeSelectorOp::Gt,
        "Lt" => NodeSelectorOp::Lt,
        _ => return None,
    })
}

impl NodeSelectorRequirementArgs {
    /// A `matchExpressions` entry, checked the way the selector conversion does.
    fn validate_expression(&self, path: &str) -> Result<(), ArgsError> {
        let Some(op) = selector_op(&self.operator) else {
            return Err(ArgsError::new(
                format!("{path}.operator"),
                format!(
                    "Unsupported value: {:?}: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\"",
                    self.operator
                ),
            ));
        };
        if let Some(e) = qualified_name_errors(&self.key).into_iter().next() {
            return Err(ArgsError::new(format!("{path}.key"), format!("Invalid value: {:?}: {e}", self.key)));
        }
        let values = format!("{path}.values");
        match op {
            NodeSelectorOp::In | NodeSelectorOp::NotIn if self.values.is_empty() => {
                return Err(ArgsError::new(values, "for 'in', 'notin' operators, values set can't be empty"));
            }
            NodeSelectorOp::Exists | NodeSelectorOp::DoesNotExist if !self.values.is_empty() => {
                return Err(ArgsError::new(values, "values set must be empty for exists and does not exist"));
            }
            NodeSelectorOp::Gt | NodeSelectorOp::Lt => {
                if self.values.len() != 1 {
                    return Err(ArgsError::new(values, "for 'Gt', 'Lt' operators, exactly one value is required"));
                }
                if self.values[0].parse::<i64>().is_err() {
                    return Err(ArgsError::new(
                        format!("{values}[0]"),
                        format!(
                            "Invalid value: {:?}: for 'Gt', 'Lt' operators, the value must be an integer",
                            self.values[0]
                        ),
                    ));
                }
            }
            _ => {}
        }
        for (i, v) in self.values.iter().enumerate() {
            if let Some(e) = label_value_errors(v).into_iter().next() {
                return Err(ArgsError::new(format!("{values}[{i}]"), format!("Invalid value: {v:?}: {e}")));
            }
        }
        Ok(())
    }

    /// A `matchFields` entry: `In` or `NotIn` with exactly one value.
    fn validate_field(&self, path: &str) -> Result<(), ArgsError> {
        match self.operator.as_str() {
            "In" | "NotIn" if self.values.len() != 1 => Err(ArgsError::new(
                format!("{path}.values"),
                format!("Invalid value: {:?}: must have one element", self.values),
            )),
            "In" | "NotIn" => Ok(()),
            other => Err(ArgsError::new(
                format!("{path}.operator"),
                format!("Unsupported value: {other:?}: supported values: \"In\", \"NotIn\""),
            )),
        }
    }

    fn to_requirement(&self) -> NodeSelectorRequirement {
        let values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        // Validation rejected unknown operators; `In` with no values would match nothing anyway.
        NodeSelectorRequirement::new(&self.key, selector_op(&self.operator).unwrap_or(NodeSelectorOp::In), &values)
    }
}

impl NodeSelectorTermArgs {
    fn is_empty(&self) -> bool {
        self.match_expressions.is_empty() && self.match_fields.is_empty()
    }

    fn validate(&self, path: &str) -> Result<(), ArgsError> {
        for (i, r) in self.match_expressions.iter().enumerate() {
            r.validate_expression(&format!("{path}.matchExpressions[{i}]"))?;
        }
        for (i, r) in self.match_fields.iter().enumerate() {
            r.validate_field(&format!("{path}.matchFields[{i}]"))?;
        }
        Ok(())
    }

    fn to_term(&self) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: self.match_expressions.iter().map(|r| r.to_requirement()).collect(),
            match_fields: self.match_fields.iter().map(|r| r.to_requirement()).collect(),
        }
    }
}

impl NodeAffinityArgs {
    /// Checks `addedAffinity` the way upstream parses it: empty terms and preferred terms of
    /// weight 0 are skipped; every other requirement must be well formed.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let Some(added) = &self.added_affinity else {
            return Ok(());
        };
        if let Some(required) = &added.required_during_scheduling_ignored_during_execution {
            for (i, term) in required.node_selector_terms.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
                term.validate(&format!(
                    "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
                ))?;
            }
        }
        for (i, term) in added.preferred_during_scheduling_ignored_during_execution.iter().enumerate() {
            if term.weight != 0 && !term.preference.is_empty() {
                term.preference.validate(&format!(
                    "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"
                ))?;
            }
        }
        Ok(())
    }

    /// `addedAffinity` in the engine's form; `None` when absent or empty.
    pub fn added_node_affinity(&self) -> Option<crate::api::NodeAffinity> {
        let added = self.added_affinity.as_ref()?;
        let required = added
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .map(|r| NodeSelector { terms: r.node_selector_terms.iter().map(NodeSelectorTermArgs::to_term).collect() });
        let preferred: Vec<PreferredSchedulingTerm> = added
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .map(|t| PreferredSchedulingTerm { weight: t.weight, preference: t.preference.to_term() })
            .collect();
        if required.is_none() && preferred.is_empty() {
            return None;
        }
        Some(crate::api::NodeAffinity { required, preferred })
    }
}

/// Rejection when the profile's `addedAffinity` does not match the node.
pub const REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// PreFilter: every term names nodes by `metadata.name`, and no node is named by all of a term's
/// requirements.
pub const REASON_CONFLICT: &str = "pod affinity terms conflict";

/// A node failing the profile's added affinity, in brief (`what` names the kind of verdict).
const ENFORCED: RowFail = RowFail {
    code: Code::UnschedulableAndUnresolvable,
    what: FAILS_ADDED as u32,
    make: |_| Status::unresolvable(REASON_ENFORCED),
};
/// A node failing the pod's own selection, in brief.
const NOT_MATCHED: RowFail = RowFail {
    code: Code::UnschedulableAndUnresolvable,
    what: FAILS_POD as u32,
    make: |_| Status::unresolvable(REASON),
};

/// The plugin, with the profile's `addedAffinity` (node affinity every pod it schedules must
/// also satisfy; its preferred terms add to every pod's score).
#[derive(Debug, Default)]
pub struct NodeAffinity {
    added: Option<crate::api::NodeAffinity>,
    /// Every node's verdict for the node selections pods asked for lately.
    verdicts: Mutex<VerdictCache>,
}

/// A pod's node selection: its `nodeSelector` and required node affinity.
#[derive(Debug, Clone, PartialEq)]
struct Selection {
    node_selector: crate::api::Labels,
    required: Option<NodeSelector>,
}

impl Selection {
    fn of(pod: &Pod) -> Selection {
        Selection { node_selector: pod.node_selector.clone(), required: required(pod).cloned() }
    }

    fn is(&self, pod: &Pod) -> bool {
        self.node_selector == pod.node_selector && self.required.as_ref() == required(pod)
    }
}

/// Each node's verdict (`PASS`, `FAILS_ADDED`, `FAILS_POD`) by snapshot position, for the
/// selections pods asked for in one node epoch (`Snapshot::node_epoch`): the verdict depends
/// on the node objects alone. A selection's verdicts are worked out at its second cycle in
/// an epoch (one pod alone would pay for every node to save the few its search visits).
#[derive(Debug, Default)]
struct VerdictCache {
    epoch: u64,
    kept: Vec<(Selection, Arc<[u8]>)>,
    seen_once: Vec<Selection>,
}

/// Selections kept per epoch (the least recently built goes first).
const KEPT_SELECTIONS: usize = 8;
const PASS: u8 = 0;
const FAILS_ADDED: u8 = 1;
const FAILS_POD: u8 = 2;

/// The verdicts of the pod's selection in this cycle's snapshot (its epoch, for checking).
#[derive(Clone)]
struct Verdicts {
    epoch: u64,
    by_position: Arc<[u8]>,
}

crate::state_slot!(Verdicts);

impl NodeAffinity {
    pub fn new(args: &NodeAffinityArgs) -> NodeAffinity {
        NodeAffinity { added: args.added_node_affinity(), verdicts: Mutex::default() }
    }

    /// The verdicts of `pod`'s selection over `snapshot`'s nodes, when kept or due.
    fn verdicts(&self, pod: &Pod, snapshot: &Snapshot) -> Option<Arc<[u8]>> {
        let mut cache = lock(&self.verdicts);
        let epoch = snapshot.node_epoch();
        if cache.epoch != epoch {
            *cache = VerdictCache { epoch, ..VerdictCache::default() };
        }
        if let Some((_, v)) = cache.kept.iter().find(|(sel, _)| sel.is(pod)) {
            return Some(Arc::clone(v));
        }
        let Some(at) = cache.seen_once.iter().position(|sel| sel.is(pod)) else {
            if cache.seen_once.len() >= 4 * KEPT_SELECTIONS {
                cache.seen_once.remove(0);
            }
            cache.seen_once.push(Selection::of(pod));
            return None;
        };
        let sel = cache.seen_once.remove(at);
        let v: Arc<[u8]> = snapshot.iter().map(|n| self.failure(pod, n).map_or(PASS, |f| f.what as u8)).collect();
        if cache.kept.len() >= KEPT_SELECTIONS {
            cache.kept.remove(0);
        }
        cache.kept.push((sel, Arc::clone(&v)));
        Some(v)
    }

    fn added_required(&self) -> Option<&NodeSelector> {
        self.added.as_ref()?.required.as_ref()
    }

    fn added_preferred(&self) -> &[PreferredSchedulingTerm] {
        self.added.as_ref().map_or(&[], |a| a.preferred.as_slice())
    }
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(NODE_AFFINITY => node_affinity, NODE_SELECTOR => node_selector);

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE_NODE_LABEL)]
    }

    /// Queue when the node matches the pod's nodeSelector, required node affinity and the
    /// profile's addedAffinity now and did not before (or it is new).
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        let (old, new) = event.nodes();
        let matches = |n: &crate::api::Node| {
            n.labels.is_superset_of(&pod.node_selector)
                && required(pod).is_none_or(|r| r.matches(&n.labels, n.name))
                && self.added_required().is_none_or(|r| r.matches(&n.labels, n.name))
        };
        queue_if(new.is_some_and(matches) && !old.is_some_and(matches))
    }
}

fn required(pod: &Pod) -> Option<&NodeSelector> {
    pod.affinity.as_ref()?.node_affinity.as_ref()?.required.as_ref()
}

fn preferred(pod: &Pod) -> &[PreferredSchedulingTerm] {
    pod.affinity.as_ref().and_then(|a| a.node_affinity.as_ref()).map_or(&[], |na| na.preferred.as_slice())
}

/// nodeSelector AND the pod's required node affinity (what PodTopologySpread's node inclusion
/// policy honours; the profile's addedAffinity is not part of it, as upstream).
pub fn fits(pod: &Pod, node: &NodeInfo) -> bool {
    let n = node.node();
    n.labels.is_superset_of(&pod.node_selector) && required(pod).is_none_or(|r| r.matches(&n.labels, n.name))
}

fn sum_matching(terms: &[PreferredSchedulingTerm], node: &NodeInfo) -> i64 {
    let n = node.node();
    terms.iter().filter(|t| t.weight != 0 && t.preference.matches(&n.labels, n.name)).map(|t| t.weight as i64).sum()
}

/// The nodes the pod's required terms name through `matchFields` `metadata.name In`: per
/// term the intersection of its such requirements, across terms (ORed) the union. `None` when
/// some term names no node that way (that term may match any node), or there are no terms.
fn named_nodes(pod: &Pod) -> Option<SmallVec<[Sym; 4]>> {
    let terms = &required(pod)?.terms;
    if terms.is_empty() {
        return None;
    }
    let mut union: SmallVec<[Sym; 4]> = SmallVec::new();
    for t in terms {
        let mut term: Option<SmallVec<[Sym; 4]>> = None;
        for r in t.match_fields.iter().filter(|r| r.key == Sym::METADATA_NAME && r.operator == NodeSelectorOp::In) {
            term = Some(match term {
                None => r.values.iter().copied().collect(),
                Some(have) => have.into_iter().filter(|n| r.values.contains(n)).collect(),
            });
        }
        for n in term? {
            if !union.contains(&n) {
                union.push(n);
            }
        }
    }
    Some(union)
}

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        if required(pod).is_none() && pod.node_selector.is_empty() && self.added_required().is_none() {
            return Status::skip();
        }
        if named_nodes(pod).is_some_and(|n| n.is_empty()) {
            return Status::unresolvable(REASON_CONFLICT);
        }
        if let Some(by_position) = self.verdicts(pod, snapshot) {
            state.write_slot(Verdicts { epoch: snapshot.node_epoch(), by_position });
        }
        Status::success()
    }

    fn node_names(&self, pod: &Pod) -> Option<SmallVec<[Sym; 4]>> {
        named_nodes(pod)
    }
}

impl FilterPlugin for NodeAffinity {
    fn reads_pods(&self) -> bool {
        false
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        self.failure(pod, node).map_or_else(Status::success, |f| (f.make)(f.what))
    }

    /// The labels are not in the columns, but a node's verdict is one of two texts: in a
    /// block of rows this reads each node still passing and gives its failure in brief.
    fn judges_rows(&self, _state: &CycleState, _pod: &Pod) -> bool {
        true
    }

    fn filter_rows(&self, state: &CycleState, pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        if let Some(v) = state.read_slot::<Verdicts>().filter(|v| v.epoch == snapshot.node_epoch()) {
            if let Some(by_position) = v.by_position.get(lo..lo + judged.len()) {
                for (j, &verdict) in judged.iter_mut().zip(by_position) {
                    if let (RowJudged::Pass, FAILS_ADDED | FAILS_POD) = (&*j, verdict) {
                        *j = RowJudged::Fail(self.name(), if verdict == FAILS_ADDED { ENFORCED } else { NOT_MATCHED });
                    }
                }
                return;
            }
        }
        for (i, j) in judged.iter_mut().enumerate() {
            if let RowJudged::Pass = j {
                *j = match snapshot.node_at(lo + i) {
                    None => RowJudged::Node,
                    Some(node) => self.failure(pod, node).map_or(RowJudged::Pass, |f| RowJudged::Fail(self.name(), f)),
                };
            }
        }
    }
}

impl NodeAffinity {
    /// Why `node` fails the filter for `pod`, in brief (`None`: it passes): the profile's
    /// added affinity first, then the pod's own.
    #[inline]
    fn failure(&self, pod: &Pod, node: &NodeInfo) -> Option<RowFail> {
        let n = node.node();
        if self.added_required().is_some_and(|a| !a.matches(&n.labels, n.name)) {
            Some(ENFORCED)
        } else if !fits(pod, node) {
            Some(NOT_MATCHED)
        } else {
            None
        }
    }
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(&self, _state: &mut CycleState, pod: &Pod, _snapshot: &Snapshot, _nodes: &Feasible<'_>) -> Status {
        if preferred(pod).is_empty() && self.added_preferred().is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }
}

impl ScorePlugin for NodeAffinity {
    fn normalizing(&self) -> crate::framework::Normalizing {
        crate::framework::Normalizing::ByMax { reverse: false }
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        Ok(sum_matching(self.added_preferred(), node) + sum_matching(preferred(pod), node))
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
            let pre = NodeAffinity::default().pre_filter(&mut state, &pod, &Snapshot::default());
            if pre.is_skip() {
                assert_eq!(want, Code::Success, "{desc}: skipped but expected a rejection");
                continue;
            }
            let st = NodeAffinity::default().filter(&state, &pod, &node);
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
        let mut scores: Vec<i64> = nodes
            .iter()
            .map(|n| NodeAffinity::default().score(&state, &pod, n, &Snapshot::default()).unwrap())
            .collect();
        assert_eq!(scores, [40, 10, 0]);
        NodeAffinity::default().normalize(&state, &pod, &mut scores);
        assert_eq!(scores, [100, 25, 0]);
        let mut s = CycleState::new();
        assert!(NodeAffinity::default()
            .pre_score(&mut s, &Pod::builder("q").build(), &Snapshot::default(), &Feasible::nodes(&[]))
            .is_skip());
    }

    /// A block of rows judged by `filter_rows` gets, node by node, the verdict `filter`
    /// gives (built from the brief), with and without the profile's added affinity; rows an
    /// earlier filter already failed are left as they are.
    #[test]
    fn rows_judged_in_a_block_match_filter() {
        let args: NodeAffinityArgs = serde_json::from_value(serde_json::json!({
            "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["batch", "gpu"]}]}
            ]}}
        }))
        .unwrap();
        let nodes: Vec<NodeInfo> = ["web", "batch", "gpu", "batch", "web"]
            .iter()
            .enumerate()
            .map(|(i, pool)| {
                let b = Node::builder(&format!("n{i}")).label("pool", pool);
                node_info(if i % 2 == 0 { b.label("disk", "ssd") } else { b }.build(), &[])
            })
            .collect();
        let snapshot = Snapshot::from_node_infos(nodes.clone());
        let pods = [Pod::builder("p").build(), Pod::builder("q").node_selector("disk", "ssd").build()];
        let earlier = RowFail { code: Code::Unschedulable, what: 7, make: |_| Status::unschedulable("earlier") };
        let mut seen = std::collections::BTreeSet::new();
        for plugin in [NodeAffinity::new(&NodeAffinityArgs::default()), NodeAffinity::new(&args)] {
            for pod in &pods {
                let mut state = CycleState::new();
                let st = plugin.pre_filter(&mut state, pod, &snapshot);
                assert!(st.is_success() || st.is_skip(), "{st}");
                let mut judged = vec![RowJudged::Pass; nodes.len()];
                judged[3] = RowJudged::Fail("Earlier", earlier);
                plugin.filter_rows(&state, pod, &snapshot, 0, &mut judged);
                for (i, j) in judged.iter().enumerate() {
                    let want = plugin.filter(&state, pod, &nodes[i]);
                    match *j {
                        RowJudged::Pass => assert!(want.is_success(), "node {i} pod {}", pod.name),
                        RowJudged::Fail("Earlier", f) => assert_eq!((i, f.what), (3, 7)),
                        RowJudged::Fail(plugin_name, f) => {
                            assert_eq!(plugin_name, NAME);
                            assert_eq!((f.make)(f.what), want, "node {i} pod {}", pod.name);
                            assert_eq!(f.code, want.code);
                        }
                        RowJudged::Node => panic!("node {i} is in the snapshot"),
                    }
                    if i != 3 {
                        seen.insert(want.message());
                    }
                }
            }
        }
        // The table reaches a pass and both failures.
        let want: std::collections::BTreeSet<String> =
            ["", REASON, REASON_ENFORCED].iter().map(|s| s.to_string()).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn added_affinity_is_enforced_and_scored() {
        let args: NodeAffinityArgs = serde_json::from_value(serde_json::json!({
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["batch", "gpu"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "preference": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}}
                ]
            }
        }))
        .unwrap();
        args.validate().unwrap();
        let plugin = NodeAffinity::new(&args);
        let nodes = [
            node_info(Node::builder("web").label("pool", "web").build(), &[]),
            node_info(Node::builder("batch").label("pool", "batch").label("disk", "ssd").build(), &[]),
            node_info(Node::builder("gpu").label("pool", "gpu").build(), &[]),
        ];
        // A pod with no affinity of its own is still held to the profile's.
        let plain = Pod::builder("p").build();
        let mut state = CycleState::new();
        assert!(plugin.pre_filter(&mut state, &plain, &Snapshot::default()).is_success());
        let verdicts: Vec<Status> = nodes.iter().map(|n| plugin.filter(&state, &plain, n)).collect();
        assert_eq!(verdicts[0], Status::unresolvable(REASON_ENFORCED));
        assert!(verdicts[1].is_success() && verdicts[2].is_success());
        // Both must hold: the pod's own selector still applies.
        let ssd = Pod::builder("q").node_selector("disk", "ssd").build();
        assert!(plugin.filter(&state, &ssd, &nodes[1]).is_success());
        assert_eq!(plugin.filter(&state, &ssd, &nodes[2]), Status::unresolvable(REASON));
        // Scores: the added preferred term counts for every pod.
        assert!(plugin.pre_score(&mut state, &plain, &Snapshot::default(), &Feasible::nodes(&[])).is_success());
        let scores: Vec<i64> =
            nodes.iter().map(|n| plugin.score(&state, &plain, n, &Snapshot::default()).unwrap()).collect();
        assert_eq!(scores, vec![0, 0, 5]);
    }

    #[test]
    fn named_nodes_table() {
        let name = |op, v: &[&str]| Req::new("metadata.name", op, v);
        let fields = |reqs: Vec<Req>| NodeSelectorTerm { match_expressions: vec![], match_fields: reqs };
        let label = || Req::new("zone", In, &["z1"]);
        // (case, terms, named nodes: None = every node, Some(empty) = conflict)
        type Case = (&'static str, Vec<NodeSelectorTerm>, Option<Vec<&'static str>>);
        let cases: Vec<Case> = vec![
            ("one term naming one node (a DaemonSet pod)", vec![fields(vec![name(In, &["a"])])], Some(vec!["a"])),
            (
                "requirements of a term intersect",
                vec![fields(vec![name(In, &["a", "b"]), name(In, &["b", "c"])])],
                Some(vec!["b"]),
            ),
            (
                "terms are ORed: union",
                vec![fields(vec![name(In, &["a"])]), fields(vec![name(In, &["c", "a"])])],
                Some(vec!["a", "c"]),
            ),
            (
                "a term without a name field allows every node",
                vec![fields(vec![name(In, &["a"])]), term(vec![label()])],
                None,
            ),
            ("NotIn does not name nodes", vec![fields(vec![name(NotIn, &["a"])])], None),
            (
                "disjoint requirements in every term conflict",
                vec![fields(vec![name(In, &["a"]), name(In, &["b"])])],
                Some(vec![]),
            ),
            ("no terms", vec![], None),
        ];
        let plugin = NodeAffinity::default();
        for (case, terms, want) in cases {
            let pod = required_pod(terms);
            let got = plugin.node_names(&pod).map(|v| v.iter().map(|s| s.as_str().to_owned()).collect::<Vec<_>>());
            let want_owned = want.as_ref().map(|v| v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            let conflict = want.as_ref().is_some_and(|v| v.is_empty());
            assert_eq!(got, want_owned, "{case}");
            let st = plugin.pre_filter(&mut CycleState::new(), &pod, &Snapshot::default());
            if conflict {
                assert_eq!(st, Status::unresolvable(REASON_CONFLICT), "{case}");
            } else {
                assert!(st.is_success() || st.is_skip(), "{case}: {st:?}");
            }
        }
    }

    mod verdicts {
        use std::time::Duration;

        use proptest::prelude::*;

        use super::*;
        use crate::cache::Cache;

        /// (zone 0..3 or none, disk label or not) of a node.
        type NodeSpec = (Option<u8>, bool);
        /// (nodeSelector zone, required terms: each (zones In, needs disk)).
        type PodSpec = (Option<u8>, Option<Vec<(Vec<u8>, bool)>>);

        fn zone(z: u8) -> String {
            format!("z{z}")
        }

        fn pod((selector, terms): &PodSpec) -> Pod {
            let mut b = Pod::builder("p");
            if let Some(z) = selector {
                b = b.node_selector("zone", &zone(*z));
            }
            if let Some(terms) = terms {
                let terms = terms
                    .iter()
                    .map(|(zones, disk)| {
                        let zones: Vec<String> = zones.iter().map(|&z| zone(z)).collect();
                        let zones: Vec<&str> = zones.iter().map(String::as_str).collect();
                        let mut reqs = vec![Req::new("zone", In, &zones)];
                        if *disk {
                            reqs.push(Req::new("disk", Exists, &[]));
                        }
                        term(reqs)
                    })
                    .collect();
                b = b.node_affinity(Na { required: Some(NodeSelector { terms }), preferred: vec![] });
            }
            b.build()
        }

        fn node(i: usize, (z, disk): NodeSpec) -> Node {
            let mut b = Node::builder(&format!("n{i}"));
            if let Some(z) = z {
                b = b.label("zone", &zone(z));
            }
            if disk {
                b = b.label("disk", "ssd");
            }
            b.build()
        }

        fn plugin(added: bool) -> NodeAffinity {
            if !added {
                return NodeAffinity::default();
            }
            let args: NodeAffinityArgs = serde_json::from_value(serde_json::json!({
                "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z0"]}]}
                ]}}
            }))
            .unwrap();
            NodeAffinity::new(&args)
        }

        /// Every row's judgement through `filter_rows`, in blocks of 3.
        fn judged(plugin: &NodeAffinity, state: &CycleState, pod: &Pod, snapshot: &Snapshot) -> Vec<Status> {
            let mut out = Vec::new();
            for lo in (0..snapshot.num_nodes()).step_by(3) {
                let mut block = vec![RowJudged::Pass; (snapshot.num_nodes() - lo).min(3)];
                plugin.filter_rows(state, pod, snapshot, lo, &mut block);
                out.extend(block.into_iter().map(|j| match j {
                    RowJudged::Pass => Status::success(),
                    RowJudged::Fail(name, f) => (f.make)(f.what).with_plugin(name),
                    _ => Status::error("unexpected judgement"),
                }));
            }
            out
        }

        fn node_spec() -> impl Strategy<Value = NodeSpec> {
            (prop::option::of(0u8..3), any::<bool>())
        }

        fn pod_spec() -> impl Strategy<Value = PodSpec> {
            let terms = prop::collection::vec((prop::collection::vec(0u8..3, 1..3), any::<bool>()), 1..3);
            (prop::option::of(0u8..3), prop::option::of(terms))
        }

        proptest! {
            /// Pods' verdicts kept across cycles judge every node as the plugin's filter
            /// does, cycle after cycle, while nodes' labels change between cycles (each
            /// change a new node epoch).
            #[test]
            fn kept_verdicts_judge_as_the_filter(
                nodes in prop::collection::vec(node_spec(), 1..10),
                cycles in prop::collection::vec((pod_spec(), prop::option::of((0usize..10, node_spec()))), 1..12),
                added in any::<bool>(),
            ) {
                let cache = Cache::new(Duration::from_secs(30));
                for (i, &spec) in nodes.iter().enumerate() {
                    cache.add_node(node(i, spec)).unwrap();
                }
                let plugin = plugin(added);
                for (spec, change) in &cycles {
                    if let Some((i, new)) = change {
                        let i = i % nodes.len();
                        cache.update_node(node(i, *new)).unwrap();
                    }
                    let snapshot = cache.update_snapshot();
                    let pod = pod(spec);
                    let mut state = CycleState::new();
                    if !plugin.pre_filter(&mut state, &pod, &snapshot).is_success() {
                        continue;
                    }
                    let want: Vec<Status> =
                        snapshot.iter().map(|n| plugin.filter(&state, &pod, n).with_plugin(plugin.name())).collect();
                    let want: Vec<Status> =
                        want.into_iter().map(|s| if s.is_success() { Status::success() } else { s }).collect();
                    prop_assert_eq!(judged(&plugin, &state, &pod, &snapshot), want);
                }
            }
        }

        /// A selection's verdicts are built at its second cycle in an epoch and used from
        /// then on; a node's new labels start a new epoch, whose verdicts see them.
        #[test]
        fn verdicts_come_at_the_second_cycle_and_follow_label_changes() {
            let cache = Cache::new(Duration::from_secs(30));
            cache.add_node(node(0, (Some(1), false))).unwrap();
            cache.add_node(node(1, (Some(2), false))).unwrap();
            let plugin = NodeAffinity::default();
            let pod = pod(&(Some(1), None));
            let cycle = |snapshot: &Snapshot| {
                let mut state = CycleState::new();
                assert!(plugin.pre_filter(&mut state, &pod, snapshot).is_success());
                let kept = state.read_slot::<Verdicts>().map(|v| v.by_position.to_vec());
                (kept, judged(&plugin, &state, &pod, snapshot).iter().map(Status::is_success).collect::<Vec<_>>())
            };
            let first = cache.update_snapshot();
            assert_eq!(cycle(&first), (None, vec![true, false]));
            assert_eq!(cycle(&first), (Some(vec![PASS, FAILS_POD]), vec![true, false]));
            assert_eq!(cycle(&first), (Some(vec![PASS, FAILS_POD]), vec![true, false]));
            cache.update_node(node(1, (Some(1), false))).unwrap();
            let second = cache.update_snapshot();
            assert_ne!(second.node_epoch(), first.node_epoch());
            assert_eq!(cycle(&second), (None, vec![true, true]));
            assert_eq!(cycle(&second), (Some(vec![PASS, PASS]), vec![true, true]));
        }
    }
}
