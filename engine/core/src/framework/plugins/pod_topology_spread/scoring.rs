//! PreScore / Score / NormalizeScore for the ScheduleAnyway constraints: a node scores the
//! matching pods of its domains, each constraint weighted by log(number of domains + 2);
//! fewer is better after normalizing.

use super::{node_has_all_keys, Constraint, Inclusion, PodTopologySpread, NAME};
use crate::api::{Pod, Sym, WhenUnsatisfiable, LABEL_HOSTNAME};
use crate::framework::Feasible;
use crate::framework::{CycleState, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::util::hash::FxHashMap;

/// One ScheduleAnyway constraint's counts for this cycle.
#[derive(Clone, Debug)]
pub(super) struct ScoreConstraint {
    constraint: Constraint,
    /// The key is `kubernetes.io/hostname`: each node is its own domain and counts only its
    /// own pods, so `counts` is keyed by node name.
    by_node: bool,
    /// Topology value (or node name, see `by_node`) → matching pods. Only the domains of the
    /// scored nodes are present.
    pub(super) counts: FxHashMap<Sym, i64>,
    /// `ln(domains + 2)`: pods in a constraint with few domains weigh less.
    pub(super) weight: f64,
}

/// What PreScore computed for Score and NormalizeScore (private to the plugin).
#[derive(Debug, Clone)]
pub(super) struct PreScoreState {
    pub(super) constraints: Vec<ScoreConstraint>,
    /// Nodes missing a constraint key are left unscored (0) unless the constraints are the
    /// system defaults.
    require_all_keys: bool,
    /// Per position of PreScore's `nodes` (the order Score / NormalizeScore see them in):
    /// left unscored.
    pub(super) ignored: Vec<bool>,
}

impl PreScoreState {
    #[inline]
    fn is_ignored(&self, node: &NodeInfo) -> bool {
        self.require_all_keys
            && !self.constraints.iter().all(|sc| node.node().labels.contains_key(sc.constraint.topology_key))
    }

    /// The raw score of `node`: per constraint whose key the node carries, its domain's
    /// matching pods times the constraint's weight, plus `maxSkew - 1`; summed and rounded.
    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        if self.is_ignored(node) {
            return 0;
        }
        let labels = &node.node().labels;
        let mut score = 0.0;
        for sc in &self.constraints {
            let Some(value) = labels.get(sc.constraint.topology_key) else {
                continue;
            };
            let domain = if sc.by_node { node.name() } else { value };
            let count = sc.counts.get(&domain).copied().unwrap_or(0);
            score += count as f64 * sc.weight + (sc.constraint.max_skew - 1) as f64;
        }
        score.round() as i64
    }
}

impl PodTopologySpread {
    /// The PreScore state for `pod` scored over `nodes`, or `None` when there is nothing to
    /// score (no nodes in the snapshot, or no ScheduleAnyway constraints).
    pub(super) fn pre_score_state(
        &self,
        pod: &Pod,
        snapshot: &Snapshot,
        nodes: &Feasible<'_>,
    ) -> Option<PreScoreState> {
        if snapshot.num_nodes() == 0 {
            return None;
        }
        let constraints = self.constraints(pod, snapshot, WhenUnsatisfiable::ScheduleAnyway);
        if constraints.is_empty() {
            return None;
        }
        let require_all_keys = !pod.topology_spread_constraints.is_empty() || !self.system_defaulted;
        let hostname = Sym::new(LABEL_HOSTNAME);
        let mut scs: Vec<ScoreConstraint> = constraints
            .iter()
            .map(|c| ScoreConstraint {
                constraint: c.clone(),
                by_node: c.topology_key == hostname,
                counts: FxHashMap::default(),
                weight: 0.0,
            })
            .collect();

        // The domains of the scored nodes (a missing key counts as the empty value when keys
        // are not required, as upstream reads a missing label).
        let mut ignored = vec![false; nodes.len()];
        let mut num_ignored = 0usize;
        for (i, info) in nodes.iter().enumerate() {
            let labels = &info.node().labels;
            if require_all_keys && !node_has_all_keys(labels, &constraints) {
                ignored[i] = true;
                num_ignored += 1;
                continue;
            }
            for sc in scs.iter_mut().filter(|sc| !sc.by_node) {
                sc.counts.entry(labels.get(sc.constraint.topology_key).unwrap_or(Sym::EMPTY)).or_insert(0);
            }
        }
        for sc in scs.iter_mut() {
            let size = if sc.by_node { nodes.len() - num_ignored } else { sc.counts.len() };
            sc.weight = ((size + 2) as f64).ln();
        }

        // Matching pods of those domains, over every node of the cluster: with keys required,
        // the same sums as PreFilter's (kept per pod kind and updated for the nodes changed
        // since); otherwise counted here, nodes missing a key counting as the empty value.
        if require_all_keys {
            if scs.iter().any(|sc| !sc.by_node) {
                let totals = super::filtering::domain_counts(&self.score_memo, pod, snapshot, &constraints);
                for (i, sc) in scs.iter_mut().enumerate().filter(|(_, sc)| !sc.by_node) {
                    for (&value, n) in sc.counts.iter_mut() {
                        *n = totals.of(i, value);
                    }
                }
            }
        } else {
            count_domains_over_cluster(pod, snapshot, &constraints, &mut scs, false);
        }

        // Hostname constraints: each scored node's own pods, whatever the inclusion policies.
        if scs.iter().any(|sc| sc.by_node) {
            for (i, info) in nodes.iter().enumerate() {
                if ignored[i] {
                    continue;
                }
                for sc in scs.iter_mut().filter(|sc| sc.by_node) {
                    if info.node().labels.contains_key(sc.constraint.topology_key) {
                        sc.counts.insert(info.name(), sc.constraint.count_pods(info.pods(), pod.namespace));
                    }
                }
            }
        }
        Some(PreScoreState { constraints: scs, require_all_keys, ignored })
    }
}

/// PreScore's sums read off every node of the cluster: each domain of `scs` gets the
/// matching pods of the nodes in it (nodes missing a key count as the empty value, or not at
/// all when `require_all_keys`). Used when keys are not required (the kept sums are the
/// required-keys ones), and by the tests as the reference for the kept sums.
pub(super) fn count_domains_over_cluster(
    pod: &Pod,
    snapshot: &Snapshot,
    constraints: &[Constraint],
    scs: &mut [ScoreConstraint],
    require_all_keys: bool,
) {
    debug_assert_eq!(constraints.len(), scs.len());
    for info in snapshot.iter() {
        let labels = &info.node().labels;
        if require_all_keys && !node_has_all_keys(labels, constraints) {
            continue;
        }
        let mut inclusion = Inclusion::new(pod, info);
        for sc in scs.iter_mut().filter(|sc| !sc.by_node) {
            if !inclusion.includes(&sc.constraint) {
                continue;
            }
            let value = labels.get(sc.constraint.topology_key).unwrap_or(Sym::EMPTY);
            if let Some(n) = sc.counts.get_mut(&value) {
                *n += sc.constraint.count_pods(info.pods(), pod.namespace);
            }
        }
    }
}

#[cfg(test)]
impl ScoreConstraint {
    /// Whether each node is its own domain (`counts` keyed by node name).
    pub(super) fn by_node(&self) -> bool {
        self.by_node
    }

    pub(super) fn constraint(&self) -> &Constraint {
        &self.constraint
    }
}

fn no_state() -> Status {
    Status::error(format!("{NAME}: no PreScore state"))
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot, nodes: &Feasible<'_>) -> Status {
        match self.pre_score_state(pod, snapshot, nodes) {
            Some(s) => {
                state.write_slot(s);
                Status::success()
            }
            None => Status::skip(),
        }
    }
}

impl ScorePlugin for PodTopologySpread {
    #[inline]
    fn score(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        let s = state.read_slot::<PreScoreState>().ok_or_else(no_state)?;
        Ok(s.score(node))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &Pod,
        nodes: &[&NodeInfo],
        _snapshot: &Snapshot,
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let s = state.read_slot::<PreScoreState>().ok_or_else(no_state)?;
        out.extend(nodes.iter().map(|n| s.score(n)));
        Ok(())
    }

    /// Maps the scored nodes' raw scores into 0..=100, fewest matching pods highest:
    /// `100 * (max + min - score) / max` (all 100 when every raw score is 0); unscored nodes
    /// get 0. `scores` must be in the order of PreScore's nodes.
    fn normalize(&self, state: &CycleState, _pod: &Pod, scores: &mut [i64]) -> Status {
        let Some(s) = state.read_slot::<PreScoreState>() else {
            return no_state();
        };
        if scores.len() != s.ignored.len() {
            return Status::error(format!(
                "{NAME}: {} scores to normalize for {} nodes pre-scored",
                scores.len(),
                s.ignored.len()
            ));
        }
        let scored = || scores.iter().zip(&s.ignored).filter(|(_, &ign)| !ign).map(|(&v, _)| v);
        let min = scored().min().unwrap_or(i64::MAX);
        let max = scored().fold(0, i64::max);
        for (v, &ign) in scores.iter_mut().zip(&s.ignored) {
            *v = if ign {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *v) / max
            };
        }
        Status::success()
    }
}

crate::state_slot!(PreScoreState);
