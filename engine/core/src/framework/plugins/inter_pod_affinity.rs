//! InterPodAffinity: required pod affinity / anti-affinity as a filter (the incoming pod's
//! terms, and existing pods' anti-affinity against the incoming pod), preferred terms (and
//! existing pods' required affinity, at `hardPodAffinityWeight`) as a score, both directions.
//!
//! Everything that depends on other pods is counted once per cycle, in PreFilter / PreScore,
//! into maps keyed by interned (topology key, topology value). Filtering or scoring a node is
//! then a few hash lookups per term: O(terms), not O(pods in the cluster).
//!
//! Namespaces: a term with no namespaces and no namespace selector means the declaring pod's
//! namespace. The incoming pod's namespace selectors are resolved against the namespaces the
//! cluster knows (an empty selector means every namespace); existing pods' selectors are
//! matched against the incoming pod's namespace labels.

use std::sync::Arc;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::api::{Labels, Pod, PodAffinityTerm, Sym, WeightedPodAffinityTerm};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::label_columns::{self, KeyColumns, LabelColumns};
use crate::framework::memo::KindMemo;
use crate::framework::Feasible;
use crate::framework::{
    ArgsError, Code, ColumnScoring, CycleState, FilterPlugin, Plugin, PreFilterPlugin, PreScorePlugin, RowFail,
    RowJudged, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::objects::ClusterObjects;
use crate::snapshot::{Columns, Snapshot};
use crate::util::hash::FxHashMap;
use smallvec::SmallVec;

pub const NAME: &str = "InterPodAffinity";
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
pub const REASON_EXISTING_ANTI_AFFINITY: &str = "node(s) didn't satisfy existing pods anti-affinity rules";

/// `InterPodAffinityArgs` of `kubescheduler.config.k8s.io/v1`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InterPodAffinityArgs {
    /// Weight of an existing pod's *required* affinity term that the incoming pod matches,
    /// in the score (0..=100; 0 turns the symmetry off).
    #[serde(default = "default_hard_weight")]
    pub hard_pod_affinity_weight: i32,
    /// Score only the incoming pod's preferred terms, not existing pods' terms.
    #[serde(default)]
    pub ignore_preferred_terms_of_existing_pods: bool,
    #[serde(default, rename = "kind")]
    _kind: IgnoredAny,
    #[serde(default, rename = "apiVersion")]
    _api_version: IgnoredAny,
}

fn default_hard_weight() -> i32 {
    1
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
            _kind: IgnoredAny,
            _api_version: IgnoredAny,
        }
    }
}

impl InterPodAffinityArgs {
    pub fn validate(&self) -> Result<(), ArgsError> {
        if !(0..=100).contains(&self.hard_pod_affinity_weight) {
            return Err(ArgsError::new("hardPodAffinityWeight", "not in valid range [0, 100]"));
        }
        Ok(())
    }
}

pub struct InterPodAffinity {
    args: InterPodAffinityArgs,
    /// PreFilter counts of recent pod kinds.
    memo: KindMemo<MemoKey, Counts>,
    /// PreScore sums of recent pod kinds.
    score_memo: KindMemo<ScoreKey, TopologyScores>,
    /// The nodes' values of recently used topology keys (`framework::label_columns`).
    columns: LabelColumns,
}

impl Default for InterPodAffinity {
    fn default() -> Self {
        InterPodAffinity::new(InterPodAffinityArgs::default())
    }
}

impl InterPodAffinity {
    pub fn new(args: InterPodAffinityArgs) -> InterPodAffinity {
        InterPodAffinity {
            args,
            memo: KindMemo::default(),
            score_memo: KindMemo::default(),
            columns: LabelColumns::default(),
        }
    }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// The pod's own terms depend on where other pods are: no signature. Otherwise its
    /// labels, which other pods' terms select by (unless the args ignore existing pods'
    /// preferred terms: then only pods with terms of their own are scored against it).
    fn sign_pod(
        &self,
        pod: &Pod,
        sig: &mut crate::framework::signature::PodSignature,
    ) -> Result<(), crate::framework::signature::Unsigned> {
        if pod.affinity.as_ref().is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some()) {
            return Err("a pod with pod affinity or anti-affinity is not signed");
        }
        if !self.args.ignore_preferred_terms_of_existing_pods {
            sig.set_with(crate::framework::signature::keys::LABELS, || {
                crate::framework::signature::signers::labels(pod)
            });
        }
        Ok(())
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::ADD | ActionType::UPDATE_POD_LABEL | ActionType::DELETE),
            ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE_NODE_LABEL),
        ]
    }

    /// Bound pods: one added (or relabelled) into a required affinity term's selection, or
    /// deleted (or relabelled) out of an anti-affinity term's, or a deleted pod whose own
    /// anti-affinity kept this pod away. Nodes: one carrying a term's topology key, or
    /// changing its value. Namespace selectors count as matching (the hint has no namespace
    /// labels; a needless retry costs one attempt, never a wrong decision).
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        let affinity = required_affinity(pod);
        let anti = required_anti_affinity(pod);
        let selects =
            |terms: &[PodAffinityTerm], target: &Pod| terms.iter().any(|t| term_may_select(t, pod.namespace, target));
        match (event.pods(), event.nodes()) {
            ((old, new), _) if old.is_some() || new.is_some() => {
                if old.is_some_and(|p| p.node_name.is_none()) || new.is_some_and(|p| p.node_name.is_none()) {
                    return QueueingHint::QueueSkip;
                }
                match (old, new) {
                    (None, Some(added)) => queue_if(selects(affinity, added)),
                    (Some(gone), None) => queue_if(
                        selects(anti, gone)
                            || required_anti_affinity(gone).iter().any(|t| term_may_select(t, gone.namespace, pod)),
                    ),
                    (Some(old), Some(new)) => queue_if(
                        old.labels != new.labels
                            && ((selects(affinity, new) && !selects(affinity, old))
                                || (selects(anti, old) && !selects(anti, new))),
                    ),
                    (None, None) => QueueingHint::Queue,
                }
            }
            (_, (old, Some(new))) => {
                if affinity.is_empty() && anti.is_empty() {
                    return QueueingHint::Queue;
                }
                let keys = affinity.iter().chain(anti).map(|t| t.topology_key);
                match old {
                    None => queue_if(keys.clone().any(|k| new.labels.contains_key(k))),
                    Some(old) => queue_if(keys.clone().any(|k| old.labels.get(k) != new.labels.get(k))),
                }
            }
            _ => QueueingHint::Queue,
        }
    }
}

/// Whether `term` of a pod in `owner_ns` may select `target`: its label selector matches and
/// the namespace is the owner's, listed, or possibly chosen by a namespace selector.
fn term_may_select(term: &PodAffinityTerm, owner_ns: Sym, target: &Pod) -> bool {
    let Some(selector) = &term.label_selector else { return false };
    let in_namespace = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
        target.namespace == owner_ns
    } else {
        term.namespace_selector.is_some() || term.namespaces.contains(&target.namespace)
    };
    in_namespace && selector.matches(&target.labels)
}

// ----- term matching -----

/// How a term's namespace selector is evaluated.
#[derive(Clone, Copy)]
enum Namespaces<'a> {
    /// The incoming pod's own terms: the selector stands for the namespaces that exist and
    /// match it (an empty selector: all namespaces, known or not).
    Resolved(&'a ClusterObjects),
    /// An existing pod's term against the incoming pod: the selector is matched against the
    /// incoming pod's namespace labels (empty when the namespace is unknown).
    Labels(&'a Labels),
}

/// Whether `term`, declared by a pod in namespace `owner_ns`, selects `target`.
fn term_selects(term: &PodAffinityTerm, owner_ns: Sym, target: &Pod, ns: Namespaces<'_>) -> bool {
    let Some(selector) = &term.label_selector else { return false };
    let in_namespace = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
        target.namespace == owner_ns
    } else {
        term.namespaces.contains(&target.namespace)
            || term.namespace_selector.as_ref().is_some_and(|s| match ns {
                Namespaces::Resolved(objects) => {
                    s.is_empty() || objects.namespace_labels(target.namespace).is_some_and(|l| s.matches(l))
                }
                Namespaces::Labels(labels) => s.matches(labels),
            })
    };
    in_namespace && selector.matches(&target.labels)
}

fn required_affinity(pod: &Pod) -> &[PodAffinityTerm] {
    pod.affinity.as_ref().and_then(|a| a.pod_affinity.as_ref()).map_or(&[], |p| &p.required)
}

fn required_anti_affinity(pod: &Pod) -> &[PodAffinityTerm] {
    pod.affinity.as_ref().and_then(|a| a.pod_anti_affinity.as_ref()).map_or(&[], |p| &p.required)
}

fn preferred_affinity(pod: &Pod) -> &[WeightedPodAffinityTerm] {
    pod.affinity.as_ref().and_then(|a| a.pod_affinity.as_ref()).map_or(&[], |p| &p.preferred)
}

fn preferred_anti_affinity(pod: &Pod) -> &[WeightedPodAffinityTerm] {
    pod.affinity.as_ref().and_then(|a| a.pod_anti_affinity.as_ref()).map_or(&[], |p| &p.preferred)
}

/// Counts per (topology key, topology value), with the distinct keys kept on the side so a
/// node can be checked by looking up only its values of those keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PairCounts {
    map: FxHashMap<(Sym, Sym), i64>,
    /// Each key with how many entries of `map` it has.
    keys: SmallVec<[(Sym, u32); 2]>,
}

impl PairCounts {
    /// Adds `by` (possibly negative) to the count of the node's value of `key`; an entry that
    /// drops to zero is removed, so "no entries" keeps meaning "no matching pods".
    fn bump(&mut self, key: Sym, labels: &Labels, by: i64) {
        let Some(value) = labels.get(key) else { return };
        let c = self.map.entry((key, value)).or_insert(0);
        let was_new = *c == 0;
        *c += by;
        let now_zero = *c == 0;
        if now_zero {
            self.map.remove(&(key, value));
        }
        match (was_new, now_zero) {
            (true, false) => match self.keys.iter_mut().find(|(k, _)| *k == key) {
                Some(e) => e.1 += 1,
                None => self.keys.push((key, 1)),
            },
            (false, true) => {
                if let Some(i) = self.keys.iter().position(|(k, _)| *k == key) {
                    self.keys[i].1 -= 1;
                    if self.keys[i].1 == 0 {
                        self.keys.swap_remove(i);
                    }
                }
            }
            _ => {}
        }
    }

    fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn positive(&self, key: Sym, value: Sym) -> bool {
        self.map.get(&(key, value)).is_some_and(|&c| c > 0)
    }
}

// ----- filter -----

/// What the filter needs, counted over the whole cluster for one incoming pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Counts {
    /// Existing pods matching all the incoming pod's required affinity terms, per topology pair.
    affinity: PairCounts,
    /// Existing pods matching each of the incoming pod's required anti-affinity terms.
    anti_affinity: PairCounts,
    /// Existing pods whose required anti-affinity terms select the incoming pod.
    existing_anti_affinity: PairCounts,
}

#[derive(Clone)]
struct PreFilterState {
    counts: Arc<Counts>,
    /// The incoming pod matches all its own required affinity terms (it may start a group).
    matches_own_affinity: bool,
    /// The label columns of the keys the filter looks up (none built: it reads each node's
    /// labels).
    columns: KeyColumns,
}

/// Everything about the incoming pod the counts depend on (besides the cluster).
#[derive(Clone, PartialEq)]
struct MemoKey {
    namespace: Sym,
    labels: Labels,
    affinity: Vec<PodAffinityTerm>,
    anti_affinity: Vec<PodAffinityTerm>,
}

impl MemoKey {
    fn of(pod: &Pod) -> MemoKey {
        MemoKey {
            namespace: pod.namespace,
            labels: pod.labels.clone(),
            affinity: required_affinity(pod).to_vec(),
            anti_affinity: required_anti_affinity(pod).to_vec(),
        }
    }

    fn matches(&self, pod: &Pod) -> bool {
        self.namespace == pod.namespace
            && self.labels == pod.labels
            && self.affinity == required_affinity(pod)
            && self.anti_affinity == required_anti_affinity(pod)
    }
}

/// Adds (`by` = 1) or removes (-1) `existing`'s contribution, on a node labelled `labels`,
/// to the counts for `pod`.
fn count_pod(
    counts: &mut Counts,
    pod: &Pod,
    objects: &ClusterObjects,
    ns_labels: &Labels,
    labels: &Labels,
    existing: &Pod,
    by: i64,
) {
    for term in required_anti_affinity(existing) {
        if term_selects(term, existing.namespace, pod, Namespaces::Labels(ns_labels)) {
            counts.existing_anti_affinity.bump(term.topology_key, labels, by);
        }
    }
    let own = Namespaces::Resolved(objects);
    let affinity_terms = required_affinity(pod);
    if !affinity_terms.is_empty() && affinity_terms.iter().all(|t| term_selects(t, pod.namespace, existing, own)) {
        for t in affinity_terms {
            counts.affinity.bump(t.topology_key, labels, by);
        }
    }
    for t in required_anti_affinity(pod) {
        if term_selects(t, pod.namespace, existing, own) {
            counts.anti_affinity.bump(t.topology_key, labels, by);
        }
    }
}

/// Adds (`by` = 1) or removes (-1) one node's contribution to the counts for `pod`.
fn count_node(counts: &mut Counts, pod: &Pod, objects: &ClusterObjects, ns_labels: &Labels, info: &NodeInfo, by: i64) {
    let labels = &info.node().labels;
    if labels.is_empty() {
        return;
    }
    for existing in info.pods() {
        count_pod(counts, pod, objects, ns_labels, labels, existing, by);
    }
}

impl InterPodAffinity {
    /// The counts for `pod` on `snapshot`, kept per pod kind across cycles (`KindMemo`).
    fn counts(&self, pod: &Pod, snapshot: &Snapshot) -> Arc<Counts> {
        let objects = snapshot.objects();
        let empty = Labels::new();
        let ns_labels = objects.namespace_labels(pod.namespace).unwrap_or(&empty);
        self.memo.get(
            snapshot,
            |k| k.matches(pod),
            || MemoKey::of(pod),
            |counts, old, new| {
                count_node(counts, pod, objects, ns_labels, old, -1);
                count_node(counts, pod, objects, ns_labels, new, 1);
            },
            || {
                let mut counts = Counts::default();
                if required_affinity(pod).is_empty() && required_anti_affinity(pod).is_empty() {
                    // Only existing pods' anti-affinity can count: visit the nodes holding it.
                    for &pos in snapshot.have_pods_with_required_anti_affinity() {
                        if let Some(info) = snapshot.node_at(pos as usize) {
                            count_node(&mut counts, pod, objects, ns_labels, info, 1);
                        }
                    }
                } else {
                    snapshot.for_each_in(0, snapshot.num_nodes(), |_, info| {
                        count_node(&mut counts, pod, objects, ns_labels, info, 1)
                    });
                }
                counts
            },
        )
    }

    /// The PreFilter counts as if `other` were added to (`by` = 1) or removed from (-1) `node`.
    fn update_with_pod(
        &self,
        state: &mut CycleState,
        pod: &Pod,
        other: &Pod,
        node: &NodeInfo,
        snapshot: &Snapshot,
        by: i64,
    ) -> Status {
        let Some(s) = state.read_slot_mut::<PreFilterState>() else {
            // PreFilter skipped this plugin: the filter does not run, nothing to adjust.
            return Status::success();
        };
        let objects = snapshot.objects();
        let empty = Labels::new();
        let ns_labels = objects.namespace_labels(pod.namespace).unwrap_or(&empty);
        count_pod(Arc::make_mut(&mut s.counts), pod, objects, ns_labels, &node.node().labels, other, by);
        Status::success()
    }
}

impl PreFilterPlugin for InterPodAffinity {
    fn has_extensions(&self) -> bool {
        true
    }

    fn add_pod(&self, state: &mut CycleState, pod: &Pod, other: &Pod, node: &NodeInfo, snapshot: &Snapshot) -> Status {
        self.update_with_pod(state, pod, other, node, snapshot, 1)
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &Pod,
        other: &Pod,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status {
        self.update_with_pod(state, pod, other, node, snapshot, -1)
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        let affinity_terms = required_affinity(pod);
        let anti_terms = required_anti_affinity(pod);
        if affinity_terms.is_empty()
            && anti_terms.is_empty()
            && snapshot.have_pods_with_required_anti_affinity().is_empty()
        {
            return Status::skip();
        }
        let counts = self.counts(pod, snapshot);
        if counts.existing_anti_affinity.is_empty() && affinity_terms.is_empty() && anti_terms.is_empty() {
            return Status::skip();
        }
        let own = Namespaces::Resolved(snapshot.objects());
        let matches_own_affinity =
            !affinity_terms.is_empty() && affinity_terms.iter().all(|t| term_selects(t, pod.namespace, pod, own));
        let columns = self.columns.of(&looked_up_keys(pod, &counts), snapshot);
        state.write_slot(PreFilterState { counts, matches_own_affinity, columns });
        Status::success()
    }
}

#[inline]
fn satisfies_affinity(s: &PreFilterState, pod: &Pod, label: impl Fn(Sym) -> Option<Sym>) -> bool {
    let mut pods_exist = true;
    for t in required_affinity(pod) {
        let Some(value) = label(t.topology_key) else { return false };
        if !s.counts.affinity.positive(t.topology_key, value) {
            pods_exist = false;
        }
    }
    // The first pod of a group with affinity to itself: nothing matches anywhere yet, so it
    // may go to any node that has the topology keys.
    pods_exist || (s.counts.affinity.is_empty() && s.matches_own_affinity)
}

#[inline]
fn satisfies_anti_affinity(s: &PreFilterState, pod: &Pod, label: impl Fn(Sym) -> Option<Sym>) -> bool {
    let anti = &s.counts.anti_affinity;
    anti.is_empty()
        || required_anti_affinity(pod)
            .iter()
            .all(|t| label(t.topology_key).is_none_or(|v| !anti.positive(t.topology_key, v)))
}

#[inline]
fn satisfies_existing_anti_affinity(s: &PreFilterState, label: impl Fn(Sym) -> Option<Sym>) -> bool {
    let existing = &s.counts.existing_anti_affinity;
    existing.keys.iter().all(|&(k, _)| label(k).is_none_or(|v| !existing.positive(k, v)))
}

/// Why a node fails the filter, in brief (`None`: it passes); `label` gives the node's
/// value of a key.
#[inline]
fn failure(s: &PreFilterState, pod: &Pod, label: impl Fn(Sym) -> Option<Sym> + Copy) -> Option<RowFail> {
    if !satisfies_affinity(s, pod, label) {
        Some(FAILS_AFFINITY)
    } else if !satisfies_anti_affinity(s, pod, label) {
        Some(FAILS_ANTI_AFFINITY)
    } else if !satisfies_existing_anti_affinity(s, label) {
        Some(FAILS_EXISTING_ANTI_AFFINITY)
    } else {
        None
    }
}

const FAILS_AFFINITY: RowFail =
    RowFail { code: Code::UnschedulableAndUnresolvable, what: 0, make: |_| Status::unresolvable(REASON_AFFINITY) };
const FAILS_ANTI_AFFINITY: RowFail =
    RowFail { code: Code::Unschedulable, what: 1, make: |_| Status::unschedulable(REASON_ANTI_AFFINITY) };
const FAILS_EXISTING_ANTI_AFFINITY: RowFail =
    RowFail { code: Code::Unschedulable, what: 2, make: |_| Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY) };

/// The keys the filter looks up for `pod` with these counts.
fn looked_up_keys(pod: &Pod, counts: &Counts) -> SmallVec<[Sym; 4]> {
    let terms = required_affinity(pod).iter().chain(required_anti_affinity(pod));
    terms.map(|t| t.topology_key).chain(counts.existing_anti_affinity.keys.iter().map(|&(k, _)| k)).collect()
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        let Some(s) = state.read_slot::<PreFilterState>() else {
            return Status::error("InterPodAffinity: no PreFilter state");
        };
        let labels = &node.node().labels;
        failure(s, pod, |k| labels.get(k)).map_or_else(Status::success, |f| (f.make)(f.what))
    }

    /// The verdict is one of three texts, from the node's values of a few keys: a block of
    /// rows reads them from the label columns PreFilter took (the node's labels otherwise).
    fn judges_rows(&self, _state: &CycleState, _pod: &Pod) -> bool {
        true
    }

    fn filter_rows(&self, state: &CycleState, pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        let s = state.read_slot::<PreFilterState>();
        let keys = s.map(|s| looked_up_keys(pod, &s.counts)).unwrap_or_default();
        let at = |pos: usize| s.and_then(|s| failure(s, pod, |k| s.columns.column(k).and_then(|c| c[pos])));
        let on = |labels: &Labels| s.and_then(|s| failure(s, pod, |k| labels.get(k)));
        label_columns::judge_rows(NAME, snapshot, lo, judged, s.map(|s| &s.columns), keys, at, on);
    }
}

// ----- score -----

/// Topology key → (topology value → score), in first-seen key order, and how many term
/// matches produced it (upstream skips scoring when there were none, even if sums cancel).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct TopologyScores {
    scores: Vec<(Sym, FxHashMap<Sym, i64>)>,
    matches: i64,
}

impl TopologyScores {
    fn add(&mut self, key: Sym, labels: &Labels, by: i64, sign: i64) {
        let Some(value) = labels.get(key) else { return };
        let i = match self.scores.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.scores.push((key, FxHashMap::default()));
                self.scores.len() - 1
            }
        };
        *self.scores[i].1.entry(value).or_insert(0) += by * sign;
        self.matches += sign;
    }
}

#[derive(Clone)]
struct PreScoreState {
    scores: Arc<TopologyScores>,
    /// The label columns of the scores' keys (`PreFilterState::columns`).
    columns: KeyColumns,
}

impl PreScoreState {
    /// The raw score of a node whose value of a key `label` gives.
    #[inline]
    fn score(&self, label: impl Fn(Sym) -> Option<Sym>) -> i64 {
        self.scores.scores.iter().filter_map(|(key, values)| label(*key).and_then(|v| values.get(&v))).sum()
    }
}

/// Everything about the incoming pod its PreScore sums depend on (besides the cluster).
#[derive(Clone, PartialEq)]
struct ScoreKey {
    namespace: Sym,
    labels: Labels,
    preferred: Vec<WeightedPodAffinityTerm>,
    preferred_anti: Vec<WeightedPodAffinityTerm>,
}

impl ScoreKey {
    fn of(pod: &Pod) -> ScoreKey {
        ScoreKey {
            namespace: pod.namespace,
            labels: pod.labels.clone(),
            preferred: preferred_affinity(pod).to_vec(),
            preferred_anti: preferred_anti_affinity(pod).to_vec(),
        }
    }

    fn matches(&self, pod: &Pod) -> bool {
        self.namespace == pod.namespace
            && self.labels == pod.labels
            && self.preferred == preferred_affinity(pod)
            && self.preferred_anti == preferred_anti_affinity(pod)
    }
}

impl InterPodAffinity {
    /// Adds (`sign` = 1) or removes (-1) the score contributions of the pods on one node.
    fn score_node(
        &self,
        t: &mut TopologyScores,
        pod: &Pod,
        objects: &ClusterObjects,
        ns_labels: &Labels,
        info: &NodeInfo,
        sign: i64,
    ) {
        let labels = &info.node().labels;
        if labels.is_empty() {
            return;
        }
        let preferred = preferred_affinity(pod);
        let preferred_anti = preferred_anti_affinity(pod);
        if preferred.is_empty() && preferred_anti.is_empty() && info.pods_with_affinity() == 0 {
            return;
        }
        let own = Namespaces::Resolved(objects);
        let theirs = Namespaces::Labels(ns_labels);
        let hard_weight = i64::from(self.args.hard_pod_affinity_weight);
        for existing in info.pods() {
            for w in preferred {
                if term_selects(&w.term, pod.namespace, existing, own) {
                    t.add(w.term.topology_key, labels, i64::from(w.weight), sign);
                }
            }
            for w in preferred_anti {
                if term_selects(&w.term, pod.namespace, existing, own) {
                    t.add(w.term.topology_key, labels, -i64::from(w.weight), sign);
                }
            }
            let Some(ea) = existing.affinity.as_ref() else { continue };
            if ea.pod_affinity.is_none() && ea.pod_anti_affinity.is_none() {
                continue;
            }
            if hard_weight > 0 {
                for term in required_affinity(existing) {
                    if term_selects(term, existing.namespace, pod, theirs) {
                        t.add(term.topology_key, labels, hard_weight, sign);
                    }
                }
            }
            for w in preferred_affinity(existing) {
                if term_selects(&w.term, existing.namespace, pod, theirs) {
                    t.add(w.term.topology_key, labels, i64::from(w.weight), sign);
                }
            }
            for w in preferred_anti_affinity(existing) {
                if term_selects(&w.term, existing.namespace, pod, theirs) {
                    t.add(w.term.topology_key, labels, -i64::from(w.weight), sign);
                }
            }
        }
    }

    /// The PreScore sums for `pod`, kept per pod kind across cycles (`KindMemo`).
    fn topology_scores(&self, pod: &Pod, snapshot: &Snapshot) -> Arc<TopologyScores> {
        let objects = snapshot.objects();
        let empty = Labels::new();
        let ns_labels = objects.namespace_labels(pod.namespace).unwrap_or(&empty);
        self.score_memo.get(
            snapshot,
            |k| k.matches(pod),
            || ScoreKey::of(pod),
            |t, old, new| {
                self.score_node(t, pod, objects, ns_labels, old, -1);
                self.score_node(t, pod, objects, ns_labels, new, 1);
            },
            || {
                let mut t = TopologyScores::default();
                if preferred_affinity(pod).is_empty() && preferred_anti_affinity(pod).is_empty() {
                    // Only existing pods' terms can count: visit the nodes holding pods with affinity.
                    for &pos in snapshot.have_pods_with_affinity() {
                        if let Some(info) = snapshot.node_at(pos as usize) {
                            self.score_node(&mut t, pod, objects, ns_labels, info, 1);
                        }
                    }
                } else {
                    snapshot.for_each_in(0, snapshot.num_nodes(), |_, info| {
                        self.score_node(&mut t, pod, objects, ns_labels, info, 1)
                    });
                }
                t
            },
        )
    }
}

impl PreScorePlugin for InterPodAffinity {
    fn pre_score(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot, _nodes: &Feasible<'_>) -> Status {
        let has_constraints = !preferred_affinity(pod).is_empty() || !preferred_anti_affinity(pod).is_empty();
        if self.args.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        if !has_constraints && snapshot.have_pods_with_affinity().is_empty() {
            return Status::skip();
        }
        let scores = self.topology_scores(pod, snapshot);
        if scores.matches == 0 {
            return Status::skip();
        }
        let keys: SmallVec<[Sym; 4]> = scores.scores.iter().map(|(k, _)| *k).collect();
        let columns = self.columns.of(&keys, snapshot);
        state.write_slot(PreScoreState { scores, columns });
        Status::success()
    }
}

impl ScorePlugin for InterPodAffinity {
    fn score(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        let s =
            state.read_slot::<PreScoreState>().ok_or_else(|| Status::error("InterPodAffinity: no PreScore state"))?;
        let labels = &node.node().labels;
        Ok(s.score(|k| labels.get(k)))
    }

    /// From the label columns PreScore took, when it took them all.
    fn score_columns(
        &self,
        state: &CycleState,
        _pod: &Pod,
        _columns: &Columns,
        positions: &[u32],
        snapshot: &Snapshot,
        out: &mut Vec<i64>,
    ) -> Result<ColumnScoring, Status> {
        let Some(s) = state.read_slot::<PreScoreState>() else {
            return Ok(ColumnScoring::Declined);
        };
        let len = positions.iter().max().map_or(0, |&p| p as usize + 1);
        if !s.columns.cover(s.scores.scores.iter().map(|(k, _)| *k), snapshot, len) {
            return Ok(ColumnScoring::Declined);
        }
        out.extend(positions.iter().map(|&pos| s.score(|k| s.columns.column(k).and_then(|c| c[pos as usize]))));
        Ok(ColumnScoring::Scored)
    }

    /// Min-max scaling of the raw sums into 0..=100 (all equal: all 0).
    fn normalize(&self, _state: &CycleState, _pod: &Pod, scores: &mut [i64]) -> Status {
        let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
            return Status::success();
        };
        let diff = max - min;
        for s in scores.iter_mut() {
            *s = if diff > 0 { (MAX_NODE_SCORE as f64 * ((*s - min) as f64 / diff as f64)) as i64 } else { 0 };
        }
        Status::success()
    }
}

crate::state_slot!(PreFilterState);
crate::state_slot!(PreScoreState);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Affinity, LabelSelector, Node, PodAffinity};
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;

    /// Existing pods with the index of their node.
    type Placed = Vec<(usize, Pod)>;
    /// Per node: None = fits, Some((code, reason)) = rejected.
    type Verdicts = Vec<Option<(Code, String)>>;

    const ZONE: &str = "zone";
    const HOST: &str = "kubernetes.io/hostname";

    fn term(topology: &str, selector: Option<&[(&str, &str)]>) -> PodAffinityTerm {
        PodAffinityTerm {
            label_selector: selector
                .map(|s| LabelSelector { match_labels: Labels::from_pairs(s.iter().copied()), ..Default::default() }),
            topology_key: Sym::new(topology),
            ..Default::default()
        }
    }

    fn required(affinity: Vec<PodAffinityTerm>, anti: Vec<PodAffinityTerm>) -> Affinity {
        Affinity {
            pod_affinity: (!affinity.is_empty()).then(|| PodAffinity { required: affinity, preferred: vec![] }),
            pod_anti_affinity: (!anti.is_empty()).then(|| PodAffinity { required: anti, preferred: vec![] }),
            node_affinity: None,
        }
    }

    fn preferred(affinity: Vec<(i32, PodAffinityTerm)>, anti: Vec<(i32, PodAffinityTerm)>) -> Affinity {
        let w = |v: Vec<(i32, PodAffinityTerm)>| {
            v.into_iter().map(|(weight, term)| WeightedPodAffinityTerm { weight, term }).collect::<Vec<_>>()
        };
        Affinity {
            pod_affinity: Some(PodAffinity { required: vec![], preferred: w(affinity) }),
            pod_anti_affinity: Some(PodAffinity { required: vec![], preferred: w(anti) }),
            node_affinity: None,
        }
    }

    /// Nodes n0..n3: n0, n1 in zone a; n2 in zone b; n3 has no zone label.
    fn cluster(pods: &[(usize, Pod)], objects: ClusterObjects) -> Snapshot {
        let zones = [Some("a"), Some("a"), Some("b"), None];
        let infos = zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let name = format!("n{i}");
                let mut b = Node::builder(&name).label(HOST, &name).resources(8000, 16 << 30, 110);
                if let Some(z) = z {
                    b = b.label(ZONE, z);
                }
                let here: Vec<Pod> = pods.iter().filter(|(n, _)| *n == i).map(|(_, p)| p.clone()).collect();
                node_info(b.build(), &here)
            })
            .collect();
        Snapshot::from_node_infos(infos).with_objects(objects)
    }

    fn web(name: &str) -> Pod {
        Pod::builder(name).label("app", "web").build()
    }

    /// Filter verdict per node: None = fits, Some(reason) otherwise.
    fn filter_all(plugin: &InterPodAffinity, pod: &Pod, snap: &Snapshot) -> Verdicts {
        let mut state = CycleState::new();
        let pre = plugin.pre_filter(&mut state, pod, snap);
        if pre.is_skip() {
            return snap.iter().map(|_| None).collect();
        }
        assert!(pre.is_success(), "{pre}");
        let verdicts: Verdicts = snap
            .iter()
            .map(|n| {
                let st = plugin.filter(&state, pod, n);
                (!st.is_success()).then(|| (st.code, st.message()))
            })
            .collect();
        // Rows judged a block at a time give the same: from the nodes' labels (the first
        // PreFilter on these nodes), then from the label columns the next one builds.
        rows_agree(plugin, &state, pod, snap, &verdicts);
        let later = later_snapshot(snap);
        let mut again = CycleState::new();
        assert!(plugin.pre_filter(&mut again, pod, &later).is_success());
        assert!(!again.read_slot::<PreFilterState>().expect("state").columns.is_empty(), "label columns built");
        rows_agree(plugin, &again, pod, &later, &verdicts);
        verdicts
    }

    /// A later publish of the same nodes (same node epoch, next generation): where a plugin
    /// builds its label columns.
    fn later_snapshot(snap: &Snapshot) -> Snapshot {
        let mut later = snap.clone();
        later.generation += 1;
        later
    }

    /// `filter_rows` from every start position agrees with `verdicts` (per node).
    fn rows_agree(plugin: &InterPodAffinity, state: &CycleState, pod: &Pod, snap: &Snapshot, verdicts: &Verdicts) {
        for lo in 0..snap.num_nodes() {
            let mut judged = vec![RowJudged::Pass; snap.num_nodes() - lo];
            plugin.filter_rows(state, pod, snap, lo, &mut judged);
            let got: Verdicts = judged
                .iter()
                .map(|j| match j {
                    RowJudged::Pass => None,
                    RowJudged::Fail(name, f) => {
                        assert_eq!(*name, NAME);
                        let st = (f.make)(f.what);
                        assert_eq!(st.code, f.code);
                        Some((st.code, st.message()))
                    }
                    RowJudged::Node => panic!("every node is in the snapshot"),
                })
                .collect();
            assert_eq!(&got[..], &verdicts[lo..], "rows from {lo}");
        }
    }

    #[test]
    fn filter_table() {
        use Code::*;
        let ok = None;
        let aff = || Some((UnschedulableAndUnresolvable, REASON_AFFINITY.to_owned()));
        let anti = || Some((Unschedulable, REASON_ANTI_AFFINITY.to_owned()));
        let existing = || Some((Unschedulable, REASON_EXISTING_ANTI_AFFINITY.to_owned()));
        let sel: &[(&str, &str)] = &[("app", "web")];
        let mut other_ns = ClusterObjects::new();
        other_ns.set_namespace(Sym::new("team-a"), Labels::from_pairs([("team", "a")]));
        let in_team_a = Pod::builder("w").namespace("team-a").label("app", "web").build();
        let ns_selector_term = PodAffinityTerm {
            namespace_selector: Some(LabelSelector {
                match_labels: Labels::from_pairs([("team", "a")]),
                ..Default::default()
            }),
            ..term(ZONE, Some(sel))
        };
        let cases: Vec<(&str, Placed, Pod, ClusterObjects, Verdicts)> = vec![
            (
                "affinity: only the zone holding a match fits; a node without the key never does",
                vec![(0, web("w"))],
                Pod::builder("p").affinity(required(vec![term(ZONE, Some(sel))], vec![])).build(),
                ClusterObjects::new(),
                vec![ok.clone(), ok.clone(), aff(), aff()],
            ),
            (
                "affinity: first of its group (matches itself, nothing else matches) fits where the key exists",
                vec![],
                Pod::builder("p").label("app", "web").affinity(required(vec![term(ZONE, Some(sel))], vec![])).build(),
                ClusterObjects::new(),
                vec![ok.clone(), ok.clone(), ok.clone(), aff()],
            ),
            (
                "affinity: not its own group and nothing matches: nowhere",
                vec![],
                Pod::builder("p").affinity(required(vec![term(ZONE, Some(sel))], vec![])).build(),
                ClusterObjects::new(),
                vec![aff(), aff(), aff(), aff()],
            ),
            (
                "affinity: a nil label selector matches no pod",
                vec![(0, web("w"))],
                Pod::builder("p").affinity(required(vec![term(ZONE, None)], vec![])).build(),
                ClusterObjects::new(),
                vec![aff(), aff(), aff(), aff()],
            ),
            (
                "affinity: a pod in another namespace does not count without a namespace selector",
                vec![(0, in_team_a.clone())],
                Pod::builder("p").affinity(required(vec![term(ZONE, Some(sel))], vec![])).build(),
                other_ns.clone(),
                vec![aff(), aff(), aff(), aff()],
            ),
            (
                "affinity: a namespace selector reaches the labelled namespace",
                vec![(0, in_team_a.clone())],
                Pod::builder("p").affinity(required(vec![ns_selector_term.clone()], vec![])).build(),
                other_ns.clone(),
                vec![ok.clone(), ok.clone(), aff(), aff()],
            ),
            (
                "anti-affinity: the zone holding a match is refused; a node without the key is fine",
                vec![(1, web("w"))],
                Pod::builder("p").affinity(required(vec![], vec![term(ZONE, Some(sel))])).build(),
                ClusterObjects::new(),
                vec![anti(), anti(), ok.clone(), ok.clone()],
            ),
            (
                "anti-affinity per host: only the host holding a match",
                vec![(1, web("w"))],
                Pod::builder("p").affinity(required(vec![], vec![term(HOST, Some(sel))])).build(),
                ClusterObjects::new(),
                vec![ok.clone(), anti(), ok.clone(), ok.clone()],
            ),
            (
                "existing pod's anti-affinity selects the incoming pod: its zone is refused",
                vec![(2, Pod::builder("guard").affinity(required(vec![], vec![term(ZONE, Some(sel))])).build())],
                web("p"),
                ClusterObjects::new(),
                vec![ok.clone(), ok.clone(), existing(), ok.clone()],
            ),
            (
                "existing pod's anti-affinity not selecting the incoming pod: no effect (plugin skips)",
                vec![(
                    2,
                    Pod::builder("guard").affinity(required(vec![], vec![term(ZONE, Some(&[("app", "db")]))])).build(),
                )],
                web("p"),
                ClusterObjects::new(),
                vec![ok.clone(), ok.clone(), ok.clone(), ok.clone()],
            ),
            (
                "affinity is checked before the incoming pod's anti-affinity",
                vec![(0, web("w")), (0, Pod::builder("d").label("app", "db").build())],
                Pod::builder("p")
                    .affinity(required(vec![term(ZONE, Some(sel))], vec![term(HOST, Some(&[("app", "db")]))]))
                    .build(),
                ClusterObjects::new(),
                vec![anti(), ok.clone(), aff(), aff()],
            ),
        ];
        let plugin = InterPodAffinity::default();
        for (desc, pods, pod, objects, want) in cases {
            let snap = cluster(&pods, objects);
            assert_eq!(filter_all(&plugin, &pod, &snap), want, "{desc}");
        }
    }

    fn scores(plugin: &InterPodAffinity, pod: &Pod, snap: &Snapshot) -> Option<Vec<i64>> {
        let nodes: Vec<&NodeInfo> = snap.iter().map(|n| &**n).collect();
        let mut state = CycleState::new();
        let st = plugin.pre_score(&mut state, pod, snap, &Feasible::nodes(&nodes));
        if st.is_skip() {
            return None;
        }
        let mut out: Vec<i64> = nodes.iter().map(|n| plugin.score(&state, pod, n, snap).unwrap()).collect();
        // From the label columns, on a later publish of the same nodes (where they are built):
        // the same raw scores, in any order of positions.
        let later = later_snapshot(snap);
        let mut again = CycleState::new();
        assert!(plugin.pre_score(&mut again, pod, &later, &Feasible::nodes(&nodes)).is_success());
        let positions: Vec<u32> = (0..later.num_nodes() as u32).rev().collect();
        let mut by_columns = Vec::new();
        let done = plugin.score_columns(&again, pod, later.columns(), &positions, &later, &mut by_columns).unwrap();
        assert!(matches!(done, ColumnScoring::Scored), "scored from the label columns");
        by_columns.reverse();
        assert_eq!(by_columns, out, "raw scores from the label columns");
        plugin.normalize(&state, pod, &mut out);
        Some(out)
    }

    #[test]
    fn score_table() {
        let sel: &[(&str, &str)] = &[("app", "web")];
        let db: &[(&str, &str)] = &[("app", "db")];
        type Case = (&'static str, Placed, Pod, InterPodAffinityArgs, Option<Vec<i64>>);
        let cases: Vec<Case> = vec![
            (
                "preferred affinity: the zone with the match scores 100",
                vec![(0, web("w"))],
                Pod::builder("p").affinity(preferred(vec![(5, term(ZONE, Some(sel)))], vec![])).build(),
                InterPodAffinityArgs::default(),
                Some(vec![100, 100, 0, 0]),
            ),
            (
                "preferred anti-affinity: the zone with the match scores 0, the rest 100",
                vec![(2, web("w"))],
                Pod::builder("p").affinity(preferred(vec![], vec![(5, term(ZONE, Some(sel)))])).build(),
                InterPodAffinityArgs::default(),
                Some(vec![100, 100, 0, 100]),
            ),
            (
                "affinity and anti-affinity weights add up per topology value",
                vec![(0, web("w")), (2, web("w2")), (2, Pod::builder("d").label("app", "db").build())],
                Pod::builder("p")
                    .affinity(preferred(vec![(4, term(ZONE, Some(sel)))], vec![(6, term(ZONE, Some(db)))]))
                    .build(),
                InterPodAffinityArgs::default(),
                // raw: zone a +4, zone b 4-6 = -2, n3 0 → min -2, max 4.
                Some(vec![100, 100, 0, 33]),
            ),
            (
                "an existing pod's required affinity to the incoming pod counts at hardPodAffinityWeight",
                vec![(2, Pod::builder("fan").affinity(required(vec![term(ZONE, Some(sel))], vec![])).build())],
                web("p"),
                InterPodAffinityArgs { hard_pod_affinity_weight: 3, ..Default::default() },
                Some(vec![0, 0, 100, 0]),
            ),
            (
                "hardPodAffinityWeight 0 turns that off: nothing to score, skipped",
                vec![(2, Pod::builder("fan").affinity(required(vec![term(ZONE, Some(sel))], vec![])).build())],
                web("p"),
                InterPodAffinityArgs { hard_pod_affinity_weight: 0, ..Default::default() },
                None,
            ),
            (
                "an existing pod's preferred anti-affinity to the incoming pod",
                vec![(0, Pod::builder("shy").affinity(preferred(vec![], vec![(7, term(HOST, Some(sel)))])).build())],
                web("p"),
                InterPodAffinityArgs::default(),
                Some(vec![0, 100, 100, 100]),
            ),
            (
                "ignorePreferredTermsOfExistingPods with no terms of its own: skipped",
                vec![(0, Pod::builder("shy").affinity(preferred(vec![], vec![(7, term(HOST, Some(sel)))])).build())],
                web("p"),
                InterPodAffinityArgs { ignore_preferred_terms_of_existing_pods: true, ..Default::default() },
                None,
            ),
            (
                "no pod matches anything: skipped",
                vec![(0, web("w"))],
                Pod::builder("p").affinity(preferred(vec![(5, term(ZONE, Some(db)))], vec![])).build(),
                InterPodAffinityArgs::default(),
                None,
            ),
            (
                "matches that cancel out still score (all 0), not skipped",
                vec![(0, web("w")), (0, Pod::builder("d").label("app", "db").build())],
                Pod::builder("p")
                    .affinity(preferred(vec![(5, term(ZONE, Some(sel)))], vec![(5, term(ZONE, Some(db)))]))
                    .build(),
                InterPodAffinityArgs::default(),
                Some(vec![0, 0, 0, 0]),
            ),
        ];
        for (desc, pods, pod, args, want) in cases {
            let snap = cluster(&pods, ClusterObjects::new());
            assert_eq!(scores(&InterPodAffinity::new(args), &pod, &snap), want, "{desc}");
        }
    }

    proptest::proptest! {
        /// Counts kept across cycles and updated from snapshot diffs equal counts computed
        /// from scratch, whatever pods come and go between cycles.
        #[test]
        fn memoized_counts_equal_fresh_counts(
            ops in proptest::collection::vec((0usize..12, 0usize..3, proptest::bool::ANY, 0usize..4), 1..60),
        ) {
            use crate::cache::Cache;
            let cache = Cache::new(std::time::Duration::ZERO);
            for i in 0..12 {
                let name = format!("n{i}");
                let mut b = Node::builder(&name).label(HOST, &name).resources(64000, 256 << 30, 500);
                if i % 4 != 3 {
                    b = b.label(ZONE, ["a", "b", "c"][i % 3]);
                }
                cache.add_node(b.build()).unwrap();
            }
            let colors = ["red", "green", "blue"];
            // Incoming pods of three kinds: affinity + anti-affinity to red, anti-affinity to
            // green per host, affinity to blue per zone.
            let kinds = [
                Pod::builder("in0").label("color", "red")
                    .affinity(required(vec![term(ZONE, Some(&[("color", "red")]))], vec![term(HOST, Some(&[("color", "green")]))]))
                    .build(),
                Pod::builder("in1").label("color", "green")
                    .affinity(required(vec![], vec![term(HOST, Some(&[("color", "green")]))]))
                    .build(),
                Pod::builder("in2").label("color", "blue")
                    .affinity(required(vec![term(ZONE, Some(&[("color", "blue")]))], vec![]))
                    .build(),
                Pod::builder("in3").label("color", "red")
                    .affinity(preferred(vec![(4, term(ZONE, Some(&[("color", "blue")])))], vec![(2, term(HOST, Some(&[("color", "red")])))]))
                    .build(),
            ];
            let memo = InterPodAffinity::default();
            let mut placed: Vec<Pod> = Vec::new();
            for (step, (node, color, remove, kind)) in ops.into_iter().enumerate() {
                if remove && !placed.is_empty() {
                    let p = placed.remove(step % placed.len());
                    cache.remove_pod(&p).unwrap();
                } else {
                    let mut b = Pod::builder(&format!("p{step}")).label("color", colors[color]);
                    match color {
                        0 => b = b.affinity(preferred(vec![], vec![(3, term(ZONE, Some(&[("color", "green")])))])),
                        1 => b = b.affinity(required(vec![], vec![term(HOST, Some(&[("color", "red")]))])),
                        _ => b = b.affinity(required(vec![term(ZONE, Some(&[("color", "red")]))], vec![])),
                    }
                    let p = b.node_name(&format!("n{node}")).build();
                    cache.add_pod(&p).unwrap();
                    placed.push(p);
                }
                let snap = cache.update_snapshot();
                let pod = &kinds[kind];
                let fresh = InterPodAffinity::default();
                proptest::prop_assert_eq!(&*memo.counts(pod, &snap), &*fresh.counts(pod, &snap), "step {}", step);
                let (got, want) = (memo.topology_scores(pod, &snap), fresh.topology_scores(pod, &snap));
                proptest::prop_assert_eq!(got.matches, want.matches, "step {}", step);
                // Sums per topology pair agree (entries that went back to 0 may linger in the memo).
                for t in [&got, &want] {
                    for (key, values) in &t.scores {
                        for value in values.keys() {
                            let sum = |x: &TopologyScores| x.scores.iter().filter(|(k, _)| k == key).map(|(_, v)| v.get(value).copied().unwrap_or(0)).sum::<i64>();
                            proptest::prop_assert_eq!(sum(&got), sum(&want), "step {} {}={}", step, key, value);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn args_defaults_and_validation() {
        let parsed: InterPodAffinityArgs = serde_json::from_value(serde_json::json!({
            "kind": "InterPodAffinityArgs", "apiVersion": "kubescheduler.config.k8s.io/v1"
        }))
        .unwrap();
        assert_eq!(parsed, InterPodAffinityArgs::default());
        assert_eq!(parsed.hard_pod_affinity_weight, 1);
        let bad = InterPodAffinityArgs { hard_pod_affinity_weight: 101, ..Default::default() };
        assert_eq!(bad.validate().unwrap_err().field, "hardPodAffinityWeight");
        assert!(
            serde_json::from_value::<InterPodAffinityArgs>(serde_json::json!({"hardPodAffinityWeigth": 1})).is_err()
        );
    }
}
