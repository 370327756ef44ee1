//! PodTopologySpread: rejects nodes that would break a pod's DoNotSchedule topology spread
//! constraints and scores nodes by how little they break its ScheduleAnyway ones.
//!
//! Concepts. A constraint names a node label (`topologyKey`); nodes sharing a value of it form
//! a *domain*. The constraint's selector picks the pods that count; the *skew* of a domain is
//! its matching pods (plus the incoming pod when it matches itself) minus the fewest in any
//! eligible domain. Which nodes count is decided once per cycle:
//! - a node must carry every constraint's key (for the filter always; for scoring unless the
//!   constraints are the system defaults),
//! - `nodeAffinityPolicy: Honor` (the default) drops nodes failing the pod's nodeSelector or
//!   required node affinity, `nodeTaintsPolicy: Honor` drops nodes with a NoSchedule /
//!   NoExecute taint the pod does not tolerate (default Ignore),
//! - terminating pods and pods of other namespaces never count.
//!
//! Pods without constraints get the plugin's default constraints (upstream's system defaults
//! unless configured), with the selector of the services and controllers that select the pod.
//!
//! Per-cycle work happens in PreFilter / PreScore (one walk over the nodes and their pods);
//! Filter and Score look counts up by interned value and never walk pods.

mod args;
mod filtering;
mod scoring;
#[cfg(test)]
mod tests;

pub use args::{DefaultConstraint, DefaultingType, PodTopologySpreadArgs};

use crate::api::{
    InclusionPolicy, LabelSelector, Labels, Pod, SelectorOp, SelectorRequirement, Sym, TopologySpreadConstraint,
    WhenUnsatisfiable, LABEL_HOSTNAME, LABEL_ZONE,
};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::label_columns::LabelColumns;
use crate::framework::memo::KindMemo;
use crate::framework::plugins::{node_affinity, taint_toleration};
use crate::framework::Plugin;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use std::sync::Arc;

pub const NAME: &str = "PodTopologySpread";
/// A node breaks a DoNotSchedule constraint's max skew.
pub const REASON_CONSTRAINTS_NOT_MATCH: &str = "node(s) didn't match pod topology spread constraints";
/// A node lacks one of the DoNotSchedule constraints' topology keys.
pub const REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// The plugin: its default constraints (applied to pods that have none).
#[derive(Clone, Debug)]
pub struct PodTopologySpread {
    /// Default constraints with the action each applies to; a constraint whose
    /// `whenUnsatisfiable` is not a known action is kept as `None` and never applies.
    defaults: Vec<(Option<WhenUnsatisfiable>, TopologySpreadConstraint)>,
    /// `defaultingType: System`: scoring then keeps nodes missing some default key.
    system_defaulted: bool,
    /// PreFilter counts of recent pod kinds; clones share them.
    filter_memo: Arc<KindMemo<filtering::FilterKey, filtering::FilterCounts>>,
    /// PreScore's counts (ScheduleAnyway constraints, keys required) of recent pod kinds.
    score_memo: Arc<KindMemo<filtering::FilterKey, filtering::FilterCounts>>,
    /// The nodes' values of recently used topology keys (`framework::label_columns`).
    label_columns: Arc<LabelColumns>,
}

impl Default for PodTopologySpread {
    fn default() -> Self {
        PodTopologySpread::new(PodTopologySpreadArgs::default())
    }
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Not while the plugin has default constraints (the system defaults always have some):
    /// it would refuse every pod then, so the profile signs none, as upstream's, without
    /// signing work in every cycle.
    fn signs_pods(&self) -> bool {
        self.defaults.is_empty()
    }

    /// Spreading depends on where other pods are: a pod with constraints, its own or the
    /// plugin's defaults (the system defaults always have some), is not signed.
    fn sign_pod(
        &self,
        pod: &Pod,
        _sig: &mut crate::framework::signature::PodSignature,
    ) -> Result<(), crate::framework::signature::Unsigned> {
        if !pod.topology_spread_constraints.is_empty() {
            return Err("a pod with topology spread constraints is not signed");
        }
        if !self.defaults.is_empty() {
            return Err("pods are not signed while PodTopologySpread has default constraints");
        }
        Ok(())
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        let pod_actions =
            ActionType::ADD | ActionType::UPDATE_POD_LABEL | ActionType::UPDATE_POD_TOLERATION | ActionType::DELETE;
        vec![
            ClusterEvent::new(EventResource::Pod, pod_actions),
            ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD | ActionType::DELETE | ActionType::UPDATE_NODE_LABEL | ActionType::UPDATE_NODE_TAINT,
            ),
        ]
    }

    /// Pods: a bound pod of the same namespace added or deleted that the pod's DoNotSchedule
    /// constraints select, or relabelled into or out of their selection. Nodes: one carrying
    /// every topology key added or deleted, or one whose keys or taints changed. A pod
    /// without constraints of its own gets the defaults, whose selector comes from the
    /// services selecting it; the hint cannot see those and says Queue.
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        if pod.topology_spread_constraints.is_empty() {
            return QueueingHint::Queue;
        }
        let constraints: Vec<Constraint> = pod
            .topology_spread_constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
            .map(|c| Constraint::from_pod(c, &pod.labels))
            .collect();
        let selected = |p: &Pod| constraints.iter().any(|c| c.selects(&p.labels));
        match (event.pods(), event.nodes()) {
            ((None, None), (None, None)) => QueueingHint::Queue,
            ((old, new), (None, None)) => {
                let involved = |p: &Pod| p.node_name.is_some() && p.namespace == pod.namespace;
                if old.is_some_and(|p| !involved(p)) || new.is_some_and(|p| !involved(p)) {
                    return QueueingHint::QueueSkip;
                }
                match (old, new) {
                    (Some(old), Some(new)) => {
                        queue_if(constraints.iter().any(|c| c.selects(&old.labels) != c.selects(&new.labels)))
                    }
                    (None, Some(p)) | (Some(p), None) => queue_if(selected(p)),
                    (None, None) => QueueingHint::Queue,
                }
            }
            (_, (old, new)) => {
                let has_keys = |n: &crate::api::Node| node_has_all_keys(&n.labels, &constraints);
                match (old, new) {
                    (Some(old), Some(new)) => {
                        let keys_changed = constraints
                            .iter()
                            .any(|c| old.labels.get(c.topology_key) != new.labels.get(c.topology_key));
                        queue_if(
                            has_keys(old) != has_keys(new)
                                || (has_keys(new) && (keys_changed || old.taints != new.taints)),
                        )
                    }
                    (None, Some(n)) | (Some(n), None) => queue_if(has_keys(n)),
                    (None, None) => QueueingHint::Queue,
                }
            }
        }
    }
}

/// Upstream's system default constraints: hostname (maxSkew 3) then zone (maxSkew 5), both
/// ScheduleAnyway.
fn system_default_constraints() -> Vec<(Option<WhenUnsatisfiable>, TopologySpreadConstraint)> {
    [(LABEL_HOSTNAME, 3), (LABEL_ZONE, 5)]
        .into_iter()
        .map(|(key, max_skew)| {
            let mut c = TopologySpreadConstraint::new(max_skew, key, LabelSelector::default()).schedule_anyway();
            c.label_selector = None;
            (Some(WhenUnsatisfiable::ScheduleAnyway), c)
        })
        .collect()
}

impl PodTopologySpread {
    /// Builds the plugin from (validated) args. With `System` defaulting the configured list is
    /// replaced by upstream's system defaults.
    pub fn new(args: PodTopologySpreadArgs) -> PodTopologySpread {
        match args.defaulting_type {
            DefaultingType::System => PodTopologySpread {
                defaults: system_default_constraints(),
                system_defaulted: true,
                filter_memo: Default::default(),
                score_memo: Default::default(),
                label_columns: Default::default(),
            },
            DefaultingType::List => PodTopologySpread {
                defaults: args.default_constraints.iter().map(DefaultConstraint::to_constraint).collect(),
                system_defaulted: false,
                filter_memo: Default::default(),
                score_memo: Default::default(),
                label_columns: Default::default(),
            },
        }
    }

    /// The pod's constraints for `action`, ready to apply: its own when it has any (selectors
    /// merged with `matchLabelKeys`), otherwise the defaults with the selector of the services
    /// and controllers selecting the pod (none when nothing selects it).
    fn constraints(&self, pod: &Pod, snapshot: &Snapshot, action: WhenUnsatisfiable) -> Vec<Constraint> {
        if !pod.topology_spread_constraints.is_empty() {
            return pod
                .topology_spread_constraints
                .iter()
                .filter(|c| c.when_unsatisfiable == action)
                .map(|c| Constraint::from_pod(c, &pod.labels))
                .collect();
        }
        if !self.defaults.iter().any(|(when, _)| *when == Some(action)) {
            return Vec::new();
        }
        let Some(selector) = snapshot.objects().default_selector(pod).filter(|s| !s.is_empty()) else {
            return Vec::new();
        };
        self.defaults
            .iter()
            .filter(|(when, _)| *when == Some(action))
            .map(|(_, c)| Constraint { selector: Some(selector.clone()), ..Constraint::from_pod(c, &Labels::new()) })
            .collect()
    }
}

/// A constraint as applied in one cycle (upstream's internal `topologySpreadConstraint`).
#[derive(Clone, Debug, PartialEq)]
struct Constraint {
    max_skew: i32,
    topology_key: Sym,
    /// `None` selects nothing; `Some(empty)` selects everything.
    selector: Option<LabelSelector>,
    min_domains: i32,
    node_affinity_policy: InclusionPolicy,
    node_taints_policy: InclusionPolicy,
}

impl Constraint {
    /// The pod's constraint with its `matchLabelKeys` turned into `In` requirements on the
    /// pod's own values (keys the pod lacks are skipped; a nil selector stays nil).
    fn from_pod(c: &TopologySpreadConstraint, pod_labels: &Labels) -> Constraint {
        let mut selector = c.label_selector.clone();
        if let Some(sel) = selector.as_mut() {
            for &key in &c.match_label_keys {
                if let Some(value) = pod_labels.get(key) {
                    sel.match_expressions.push(SelectorRequirement {
                        key,
                        operator: SelectorOp::In,
                        values: vec![value],
                    });
                }
            }
        }
        Constraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key,
            selector,
            min_domains: c.min_domains.unwrap_or(1),
            node_affinity_policy: c.node_affinity_policy,
            node_taints_policy: c.node_taints_policy,
        }
    }

    /// Whether the selector matches `labels` (the self-match test, and AddPod / RemovePod).
    #[inline]
    fn selects(&self, labels: &Labels) -> bool {
        self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }

    /// Existing pods on a node that count: same namespace as the incoming pod, not
    /// terminating, selected. As upstream v1.35 does, an empty selector counts no existing pod
    /// (its short-cut for "no selector" tests emptiness) though the pod still matches itself.
    fn count_pods(&self, pods: &crate::snapshot::PVec<Pod>, namespace: Sym) -> i64 {
        let Some(sel) = self.selector.as_ref().filter(|s| !s.is_empty()) else {
            return 0;
        };
        pods.iter().filter(|p| !p.is_terminating() && p.namespace == namespace && sel.matches(&p.labels)).count() as i64
    }
}

/// Whether `node` carries every constraint's topology key.
#[inline]
fn node_has_all_keys(labels: &Labels, constraints: &[Constraint]) -> bool {
    constraints.iter().all(|c| labels.contains_key(c.topology_key))
}

/// The node-inclusion policies of one node, evaluated lazily and at most once per node.
struct Inclusion<'a> {
    pod: &'a Pod,
    node: &'a NodeInfo,
    affinity: Option<bool>,
    taints: Option<bool>,
}

impl<'a> Inclusion<'a> {
    fn new(pod: &'a Pod, node: &'a NodeInfo) -> Self {
        Inclusion { pod, node, affinity: None, taints: None }
    }

    /// Whether `c` counts this node: Honor policies require the pod's required node affinity
    /// and nodeSelector to match, and every NoSchedule / NoExecute taint to be tolerated.
    fn includes(&mut self, c: &Constraint) -> bool {
        let (pod, node) = (self.pod, self.node);
        if c.node_affinity_policy == InclusionPolicy::Honor
            && !*self.affinity.get_or_insert_with(|| node_affinity::fits(pod, node))
        {
            return false;
        }
        if c.node_taints_policy == InclusionPolicy::Honor
            && !*self.taints.get_or_insert_with(|| taint_toleration::fits(pod, node))
        {
            return false;
        }
        true
    }
}
