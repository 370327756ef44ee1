//! Scheduler extenders: processes outside the scheduler that a cycle consults, as upstream's
//! `Extender` interface describes them. The cycle asks an extender only about pods it is
//! interested in (`is_interested`: upstream's managed resources), and:
//!
//! - **filter**: after the Filter plugins, on the feasible nodes; the nodes it fails get its
//!   reason as `Unschedulable` or `UnschedulableAndUnresolvable` and count in the FitError;
//! - **prioritize**: its scores (0–[`MAX_EXTENDER_PRIORITY`]) are scaled to `MAX_NODE_SCORE`,
//!   multiplied by its weight and added to the plugins' totals; an error is ignored;
//! - **process_preemption**: DefaultPreemption hands it the dry run's candidates and victims
//!   before the pick; it may drop nodes or victims;
//! - **bind**: an interested binder binds instead of the cluster's default binder.
//!
//! A failing extender marked `ignorable` is skipped; any other failure fails the pod's cycle
//! with an [`ExtenderError`] naming the extender, the verb and the cause.
//!
//! The core knows no transport: the HTTP client with upstream's wire format lives in the
//! Kubernetes adapters (`ksched_k8s::extender`). With no extender configured, the cycle does
//! nothing of this (each step is behind `profile.extenders.is_empty()`).

use std::fmt;
use std::sync::Arc;

use crate::api::{Pod, Sym};
use crate::framework::{Code, Reason, Status, MAX_NODE_SCORE};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::util::hash::FxHashMap;

/// The highest score an extender's prioritize verb gives (upstream's MaxExtenderPriority).
pub const MAX_EXTENDER_PRIORITY: i64 = 10;

/// The verbs, as they appear in errors and in `ksched explain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Filter,
    Prioritize,
    Preempt,
    Bind,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Filter => "filter",
            Verb::Prioritize => "prioritize",
            Verb::Preempt => "preempt",
            Verb::Bind => "bind",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call to an extender that failed: transport, HTTP status, undecodable answer, or the
/// answer's own `error`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("extender {extender:?} {verb}: {cause}")]
pub struct ExtenderError {
    pub extender: String,
    pub verb: Verb,
    pub cause: String,
}

/// What a filter call answered, by node name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtenderFilterResult {
    /// The nodes that passed, a subset of those sent.
    pub nodes: Vec<Sym>,
    /// Failed nodes with the extender's reason (preemption may help).
    pub failed: Vec<(Sym, String)>,
    /// Failed nodes preemption cannot help.
    pub failed_unresolvable: Vec<(Sym, String)>,
}

/// One node's victims as the preempt verb sees them.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtenderVictims {
    pub pods: Vec<Pod>,
    pub num_pdb_violations: i64,
}

/// A scheduler extender (upstream's `framework.Extender`).
pub trait Extender: Send + Sync {
    /// How errors and `ksched explain` name it (upstream: its URL prefix).
    fn name(&self) -> &str;
    /// Whether the cycle consults it for `pod` (no managed resources: every pod).
    fn is_interested(&self, pod: &Pod) -> bool;
    fn is_filter(&self) -> bool;
    fn is_prioritizer(&self) -> bool;
    fn supports_preemption(&self) -> bool;
    fn is_binder(&self) -> bool;
    /// A failure is skipped rather than failing the pod's cycle.
    fn is_ignorable(&self) -> bool;
    /// The weight its prioritize scores are multiplied by.
    fn weight(&self) -> i64;

    fn filter(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Result<ExtenderFilterResult, ExtenderError>;
    /// Scores 0–[`MAX_EXTENDER_PRIORITY`] by node name (nodes it leaves out score 0).
    fn prioritize(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Result<Vec<(Sym, i64)>, ExtenderError>;
    /// The candidates it keeps, with the victims it keeps on each; victims are pods of
    /// the node in `snapshot`.
    fn process_preemption(
        &self,
        pod: &Pod,
        candidates: &[(Sym, ExtenderVictims)],
        snapshot: &Snapshot,
    ) -> Result<Vec<(Sym, ExtenderVictims)>, ExtenderError>;
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), ExtenderError>;
}

/// What the extenders did in one cycle, for `ksched explain`: one row per call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExtenderTrace {
    pub rows: Vec<ExtenderRow>,
}

/// One extender call of a cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtenderRow {
    pub extender: String,
    pub verb: Verb,
    /// How many nodes (filter, prioritize) or candidates (preempt) it was sent.
    pub sent: usize,
    /// filter: the nodes it failed, with the code and its reason.
    pub failed: Vec<(Sym, Code, String)>,
    /// prioritize: node, raw score, weighted score (raw × MAX_NODE_SCORE / 10 × weight).
    pub scores: Vec<(Sym, i64, i64)>,
    /// preempt: candidate nodes it dropped, and victims it spared on the nodes it kept.
    pub dropped_nodes: Vec<Sym>,
    pub spared_victims: Vec<(Sym, String)>,
    /// The call failed: the error, and whether it was skipped (ignorable, or a prioritize
    /// error, which upstream ignores).
    pub error: Option<String>,
    pub skipped: bool,
}

impl ExtenderRow {
    fn new(e: &dyn Extender, verb: Verb, sent: usize) -> ExtenderRow {
        ExtenderRow {
            extender: e.name().to_owned(),
            verb,
            sent,
            failed: Vec::new(),
            scores: Vec::new(),
            dropped_nodes: Vec::new(),
            spared_victims: Vec::new(),
            error: None,
            skipped: false,
        }
    }
}

/// The extenders of a cycle, and where their calls are recorded (explain) or not.
pub struct Extenders<'a> {
    pub list: &'a [Arc<dyn Extender>],
    pub trace: Option<&'a mut ExtenderTrace>,
}

impl Extenders<'_> {
    fn record(&mut self, row: ExtenderRow) {
        if let Some(t) = self.trace.as_deref_mut() {
            t.rows.push(row);
        }
    }

    /// Records a failed call; `Ok` when the extender is ignorable (the caller skips it).
    fn fail(&mut self, e: &dyn Extender, mut row: ExtenderRow, err: ExtenderError) -> Result<(), ExtenderError> {
        row.error = Some(err.to_string());
        row.skipped = e.is_ignorable();
        self.record(row);
        if e.is_ignorable() {
            Ok(())
        } else {
            Err(err)
        }
    }

    /// Upstream's findNodesThatPassExtenders: each interested filter extender in turn narrows
    /// `feasible` (nodes, in order); the nodes it fails are reported through `failed` with
    /// their status. `Err` when a non-ignorable extender fails.
    pub fn filter<'n>(
        &mut self,
        pod: &Pod,
        feasible: &mut Vec<&'n NodeInfo>,
        mut failed: impl FnMut(Sym, Status),
    ) -> Result<(), ExtenderError> {
        for e in self.list {
            if feasible.is_empty() {
                break;
            }
            if !e.is_filter() || !e.is_interested(pod) {
                continue;
            }
            let mut row = ExtenderRow::new(&**e, Verb::Filter, feasible.len());
            let result = match e.filter(pod, feasible) {
                Ok(r) => r,
                Err(err) => {
                    self.fail(&**e, row, err)?;
                    continue;
                }
            };
            for (node, msg) in &result.failed_unresolvable {
                failed(*node, Status::new(Code::UnschedulableAndUnresolvable, Reason::Text(Sym::new(msg))));
                row.failed.push((*node, Code::UnschedulableAndUnresolvable, msg.clone()));
            }
            for (node, msg) in &result.failed {
                if result.failed_unresolvable.iter().any(|(n, _)| n == node) {
                    continue;
                }
                failed(*node, Status::new(Code::Unschedulable, Reason::Text(Sym::new(msg))));
                row.failed.push((*node, Code::Unschedulable, msg.clone()));
            }
            // The passing nodes, in the order they answered; a name not sent is a fault.
            let sent: FxHashMap<Sym, &'n NodeInfo> = feasible.iter().map(|n| (n.name(), *n)).collect();
            if let Some(name) = result.nodes.iter().find(|n| !sent.contains_key(n)) {
                let err = ExtenderError {
                    extender: e.name().to_owned(),
                    verb: Verb::Filter,
                    cause: format!(
                        "claims a filtered node {:?} which is not found in the input node list",
                        name.as_str()
                    ),
                };
                self.fail(&**e, row, err)?;
                continue;
            }
            let kept: Vec<&'n NodeInfo> = result.nodes.iter().map(|n| sent[n]).collect();
            self.record(row);
            *feasible = kept;
        }
        Ok(())
    }

    /// Upstream's extender part of prioritizeNodes: each interested prioritizer's scores,
    /// scaled to MAX_NODE_SCORE and weighted, are added to `totals` (by position in `nodes`).
    /// Errors are ignored, as upstream does. Returns, when an extender is interested in the
    /// pod, which nodes one of them returned (upstream gives those a random tie-breaker for
    /// the pick, `pick::upstream_pick`; an interested extender without a prioritize verb
    /// returns every node with score 0).
    pub fn prioritize(&mut self, pod: &Pod, nodes: &[&NodeInfo], totals: &mut [i64]) -> Option<Vec<bool>> {
        let mut index: Option<FxHashMap<Sym, usize>> = None;
        let mut returned: Option<Vec<bool>> = None;
        for e in self.list {
            if !e.is_interested(pod) {
                continue;
            }
            let returned = returned.get_or_insert_with(|| vec![false; nodes.len()]);
            if !e.is_prioritizer() {
                returned.iter_mut().for_each(|r| *r = true);
                continue;
            }
            let mut row = ExtenderRow::new(&**e, Verb::Prioritize, nodes.len());
            match e.prioritize(pod, nodes) {
                Ok(scores) => {
                    let weight = e.weight();
                    let index =
                        index.get_or_insert_with(|| nodes.iter().enumerate().map(|(i, n)| (n.name(), i)).collect());
                    for (host, raw) in scores {
                        let weighted = raw * weight * (MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY);
                        if let Some(&i) = index.get(&host) {
                            totals[i] += weighted;
                            returned[i] = true;
                        }
                        row.scores.push((host, raw, weighted));
                    }
                }
                Err(err) => {
                    row.error = Some(err.to_string());
                    row.skipped = true;
                }
            }
            self.record(row);
        }
        returned
    }

    /// Upstream's callExtenders in preemption: every interested extender with a preempt verb
    /// may drop candidates or victims. Returns the candidates left, in the order given.
    pub fn process_preemption(
        &mut self,
        pod: &Pod,
        mut candidates: Vec<(Sym, ExtenderVictims)>,
        snapshot: &Snapshot,
    ) -> Result<Vec<(Sym, ExtenderVictims)>, ExtenderError> {
        for e in self.list {
            if candidates.is_empty() {
                break;
            }
            if !e.supports_preemption() || !e.is_interested(pod) {
                continue;
            }
            let mut row = ExtenderRow::new(&**e, Verb::Preempt, candidates.len());
            let mut kept = match e.process_preemption(pod, &candidates, snapshot) {
                Ok(k) => k,
                Err(err) => {
                    self.fail(&**e, row, err)?;
                    continue;
                }
            };
            // A node kept without victims is invalid: dropped when ignorable, else an error.
            if let Some((node, _)) = kept.iter().find(|(_, v)| v.pods.is_empty()) {
                if !e.is_ignorable() {
                    let err = ExtenderError {
                        extender: e.name().to_owned(),
                        verb: Verb::Preempt,
                        cause: format!("expected at least one victim pod on node {:?}", node.as_str()),
                    };
                    row.error = Some(err.to_string());
                    self.record(row);
                    return Err(err);
                }
                kept.retain(|(_, v)| !v.pods.is_empty());
            }
            // Keep the dry run's order among the nodes kept.
            let mut ordered = Vec::with_capacity(kept.len());
            for (node, before) in &candidates {
                match kept.iter().position(|(n, _)| n == node) {
                    Some(i) => {
                        let (n, after) = kept.swap_remove(i);
                        for v in &before.pods {
                            if !after.pods.iter().any(|p| p.uid == v.uid) {
                                row.spared_victims.push((n, format!("{}/{}", v.namespace, v.name)));
                            }
                        }
                        ordered.push((n, after));
                    }
                    None => row.dropped_nodes.push(*node),
                }
            }
            self.record(row);
            candidates = ordered;
        }
        Ok(candidates)
    }

    /// Upstream's extendersBinding: the first interested binder binds (`Some` with its
    /// result); an ignorable binder that fails is skipped. `None`: no extender binds.
    pub fn bind(&mut self, pod: &Pod, node: Sym) -> Option<Result<(), ExtenderError>> {
        for e in self.list {
            if !e.is_binder() || !e.is_interested(pod) {
                continue;
            }
            let row = ExtenderRow::new(&**e, Verb::Bind, 1);
            match e.bind(pod, node) {
                Ok(()) => {
                    self.record(row);
                    return Some(Ok(()));
                }
                Err(err) => {
                    if let Err(err) = self.fail(&**e, row, err) {
                        return Some(Err(err));
                    }
                }
            }
        }
        None
    }
}
