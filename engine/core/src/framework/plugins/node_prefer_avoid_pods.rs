//! NodePreferAvoidPods: scores 0 the nodes whose `scheduler.alpha.kubernetes.io/preferAvoidPods`
//! annotation lists the ReplicationController or ReplicaSet controlling the pod, 100 the
//! others (the seeds' NodePreferAvoidPodsPriority; upstream removed the plugin in v1.24).
//! Off by default; the legacy profile gives it weight 10000 so that it outweighs every other
//! score.
//!
//! A listed entry matches on the controller's kind and UID (`podSignature.podController`),
//! as upstream. A node whose annotation is not valid JSON of that shape scores 100 ("assume
//! it's schedulable there"). The pod's controller is its `owner`; a pod without one, or owned
//! by another kind, would score 100 everywhere, so PreScore skips it (a constant changes no
//! ranking).
//!
//! The annotation is parsed once per node and value: PreScore keeps the parsed lists in a
//! cache keyed by node name, reused while the node carries the same annotation value (the same
//! `Arc`, or equal text), and forgets nodes that left the snapshot. PreScore then writes the
//! sorted names of the avoided nodes; Score is a binary search.

use std::sync::Arc;

use serde::Deserialize;

use crate::api::{Node, Pod, Sym};
use crate::framework::Feasible;
use crate::framework::{CycleState, Plugin, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::sync::{lock, Mutex};
use crate::util::hash::FxHashMap;

pub const NAME: &str = "NodePreferAvoidPods";
pub const ANNOTATION: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";

/// The controller kinds the annotation can steer away.
const CONTROLLER_KINDS: [&str; 2] = ["ReplicationController", "ReplicaSet"];

pub struct NodePreferAvoidPods {
    annotation: Sym,
    kinds: [Sym; 2],
    /// Node name → its annotation as last parsed.
    cache: Mutex<FxHashMap<Sym, Parsed>>,
}

impl Default for NodePreferAvoidPods {
    fn default() -> Self {
        NodePreferAvoidPods::new()
    }
}

impl std::fmt::Debug for NodePreferAvoidPods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodePreferAvoidPods").finish_non_exhaustive()
    }
}

impl NodePreferAvoidPods {
    pub fn new() -> NodePreferAvoidPods {
        NodePreferAvoidPods {
            annotation: Sym::new(ANNOTATION),
            kinds: CONTROLLER_KINDS.map(Sym::new),
            cache: Mutex::new(FxHashMap::default()),
        }
    }

    fn annotation_of<'a>(&self, node: &'a Node) -> Option<&'a Arc<str>> {
        node.annotations.iter().find(|(k, _)| *k == self.annotation).map(|(_, v)| v)
    }
}

impl Plugin for NodePreferAvoidPods {
    fn name(&self) -> &'static str {
        NAME
    }
}

/// One node's annotation: the text and the (kind, uid) of every controller it lists; no
/// controllers when the text does not parse.
#[derive(Debug)]
struct Parsed {
    raw: Arc<str>,
    controllers: Vec<(String, String)>,
}

impl Parsed {
    fn new(raw: &Arc<str>) -> Parsed {
        Parsed { raw: Arc::clone(raw), controllers: parse_avoided_controllers(raw).unwrap_or_default() }
    }

    fn is_for(&self, raw: &Arc<str>) -> bool {
        Arc::ptr_eq(&self.raw, raw) || *self.raw == **raw
    }
}

// The annotation's JSON (`v1.AvoidPods`). Fields the plugin does not read are still declared
// with their types, so a value of the wrong type fails the parse as it did upstream.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AvoidPods {
    #[serde(default)]
    prefer_avoid_pods: Option<Vec<PreferAvoidPodsEntry>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PreferAvoidPodsEntry {
    #[serde(default)]
    pod_signature: Option<PodSignature>,
    #[serde(default)]
    #[allow(dead_code)]
    eviction_time: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    reason: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSignature {
    #[serde(default)]
    pod_controller: Option<OwnerReference>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerReference {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    api_version: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    name: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    controller: Option<bool>,
    #[serde(default)]
    #[allow(dead_code)]
    block_owner_deletion: Option<bool>,
}

/// The (kind, uid) of every controller the annotation text lists; `None` when it does not
/// parse. Entries without a controller are skipped.
pub fn parse_avoided_controllers(raw: &str) -> Option<Vec<(String, String)>> {
    let parsed: AvoidPods = serde_json::from_str(raw).ok()?;
    Some(
        parsed
            .prefer_avoid_pods
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| e.pod_signature?.pod_controller)
            .map(|c| (c.kind.unwrap_or_default(), c.uid.unwrap_or_default()))
            .collect(),
    )
}

#[derive(Clone)]
/// The feasible nodes that ask to avoid the pod's controller, sorted.
struct PreScoreState {
    avoided: Vec<Sym>,
}

impl PreScorePlugin for NodePreferAvoidPods {
    fn pre_score(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot, nodes: &Feasible<'_>) -> Status {
        let Some(owner) = pod.owner.as_ref().filter(|o| self.kinds.contains(&o.kind)) else {
            return Status::skip();
        };
        let (kind, uid) = (owner.kind.as_str(), owner.uid.as_str());
        let mut avoided = Vec::new();
        let mut cache = lock(&self.cache);
        for n in nodes.iter() {
            let Some(raw) = self.annotation_of(n.node()) else { continue };
            let parsed = cache.entry(n.name()).or_insert_with(|| Parsed::new(raw));
            if !parsed.is_for(raw) {
                *parsed = Parsed::new(raw);
            }
            if parsed.controllers.iter().any(|(k, u)| k == kind && u == uid) {
                avoided.push(n.name());
            }
        }
        if cache.len() > snapshot.num_nodes() {
            cache.retain(|name, _| snapshot.get(*name).is_some());
        }
        drop(cache);
        avoided.sort_unstable();
        state.write(PreScoreState { avoided });
        Status::success()
    }
}

impl ScorePlugin for NodePreferAvoidPods {
    #[inline]
    fn score(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        let st =
            state.read::<PreScoreState>().ok_or_else(|| Status::error("NodePreferAvoidPods: no PreScore state"))?;
        Ok(if st.avoided.binary_search(&node.name()).is_ok() { 0 } else { MAX_NODE_SCORE })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::test_util::node_info;

    /// The annotation listing controllers (kind, uid).
    fn avoid(controllers: &[(&str, &str)]) -> String {
        let entries: Vec<String> = controllers
            .iter()
            .map(|(kind, uid)| {
                format!(
                    r#"{{"podSignature":{{"podController":{{"apiVersion":"v1","kind":"{kind}","name":"x","uid":"{uid}","controller":true}}}},"reason":"r","message":"m"}}"#
                )
            })
            .collect();
        format!(r#"{{"preferAvoidPods":[{}]}}"#, entries.join(","))
    }

    fn node(name: &str, annotation: Option<&str>) -> NodeInfo {
        let b = Node::builder(name);
        node_info(
            match annotation {
                Some(a) => b.annotation(ANNOTATION, a).build(),
                None => b.build(),
            },
            &[],
        )
    }

    /// Scores of `pod` over `nodes`, `None` when PreScore skipped.
    fn scores(pl: &NodePreferAvoidPods, pod: &Pod, nodes: &[NodeInfo]) -> Option<Vec<i64>> {
        let snap = Snapshot::from_node_infos(nodes.to_vec());
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let mut state = CycleState::new();
        let st = pl.pre_score(&mut state, pod, &snap, &Feasible::nodes(&refs));
        if st.is_skip() {
            return None;
        }
        let mut out = Vec::new();
        pl.score_nodes(&state, pod, &refs, &snap, &mut out).unwrap();
        Some(out)
    }

    #[test]
    fn node_prefer_avoid_pods_score_table() {
        let rc_foo = ("ReplicationController", "ReplicationController/foo");
        let rs_bar = ("ReplicaSet", "ReplicaSet/bar");
        let nodes = vec![
            node("avoids-rc-foo", Some(&avoid(&[rc_foo]))),
            node("plain", None),
            node("avoids-rs-bar", Some(&avoid(&[("ReplicaSet", "x"), rs_bar]))),
            node("malformed", Some(r#"{"preferAvoidPods": [ {"podSignature": "#)),
            node("same-uid-other-kind", Some(&avoid(&[("ReplicaSet", "ReplicationController/foo")]))),
            node(
                "wrong-field-type",
                Some(
                    r#"{"preferAvoidPods":[{"podSignature":{"podController":{"kind":"ReplicationController","uid":"ReplicationController/foo","controller":"yes"}}}]}"#,
                ),
            ),
            node("empty-list", Some(r#"{"preferAvoidPods":null}"#)),
        ];
        let pl = NodePreferAvoidPods::new();
        // (description, pod, scores per node; None = skipped)
        let cases: Vec<(&str, Pod, Option<Vec<i64>>)> = vec![
            (
                "ReplicationController pod",
                Pod::builder("p").owner("ReplicationController", "foo").build(),
                Some(vec![0, 100, 100, 100, 100, 100, 100]),
            ),
            (
                "ReplicaSet pod",
                Pod::builder("p").owner("ReplicaSet", "bar").build(),
                Some(vec![100, 100, 0, 100, 100, 100, 100]),
            ),
            ("StatefulSet pod is not steered", Pod::builder("p").owner("StatefulSet", "foo").build(), None),
            ("pod without a controller", Pod::builder("p").build(), None),
        ];
        for (desc, pod, want) in cases {
            assert_eq!(scores(&pl, &pod, &nodes), want, "{desc}");
        }
    }

    #[test]
    fn node_prefer_avoid_pods_reparses_a_changed_annotation_and_forgets_removed_nodes() {
        let pl = NodePreferAvoidPods::new();
        let pod = Pod::builder("p").owner("ReplicaSet", "web").build();
        let listed = avoid(&[("ReplicaSet", "ReplicaSet/web")]);
        let before = vec![node("a", Some(&listed)), node("b", Some(&avoid(&[])))];
        assert_eq!(scores(&pl, &pod, &before), Some(vec![0, 100]));
        // Same text in a new node object: still avoided (reused or reparsed alike).
        let same = vec![node("a", Some(&listed)), node("b", Some(&avoid(&[])))];
        assert_eq!(scores(&pl, &pod, &same), Some(vec![0, 100]));
        // The annotations change: a no longer avoids the pod, b does.
        let after = vec![node("a", Some(&avoid(&[]))), node("b", Some(&listed))];
        assert_eq!(scores(&pl, &pod, &after), Some(vec![100, 0]));
        assert_eq!(lock(&pl.cache).len(), 2);
        // b leaves the cluster: its entry goes once the cache outgrows the snapshot.
        assert_eq!(scores(&pl, &pod, &[node("a", Some(&listed))]), Some(vec![0]));
        assert_eq!(lock(&pl.cache).keys().copied().collect::<Vec<_>>(), [Sym::new("a")]);
    }

    #[test]
    fn parse_avoided_controllers_table() {
        /// (annotation text, listed (kind, uid); `None` = does not parse)
        struct Case(&'static str, Option<Vec<(&'static str, &'static str)>>);
        let cases = [
            Case(r#"{"preferAvoidPods":[]}"#, Some(vec![])),
            Case(r#"{}"#, Some(vec![])),
            Case(r#"{"preferAvoidPods":[{"podSignature":{}}]}"#, Some(vec![])),
            Case(
                r#"{"preferAvoidPods":[{"podSignature":{"podController":{"kind":"ReplicaSet","uid":"u"}}}]}"#,
                Some(vec![("ReplicaSet", "u")]),
            ),
            Case("not json", None),
        ];
        for Case(raw, want) in cases {
            let want = want.map(|v| v.into_iter().map(|(k, u)| (k.to_owned(), u.to_owned())).collect::<Vec<_>>());
            assert_eq!(parse_avoided_controllers(raw), want, "{raw}");
        }
    }
}
