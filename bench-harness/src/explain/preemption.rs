//! What DefaultPreemption did in the explained cycle, candidate by candidate: every node its
//! dry run found victims on (with the figures the pick compares), the potential nodes where
//! it found none, the candidates still tied after the pick's criteria and the criterion that
//! chose the node. The fields follow the golden format's `candidates`, `dry_run_rejected` and
//! `best_candidates`.

use ksched_engine::framework::plugins::default_preemption::{best_of_decided, PickKey, PreemptionTrace, NAME};
use ksched_engine::observer::PostFilterRecord;
use serde::Serialize;

use crate::simulate::columns;

/// One victim on a candidate node.
#[derive(Clone, Debug, Serialize)]
pub struct VictimReport {
    /// `namespace/name`.
    pub pod: String,
    pub priority: i32,
}

/// One node where the dry run found a victim set.
#[derive(Clone, Debug, Serialize)]
pub struct CandidateReport {
    pub node: String,
    /// Most important first (upstream's order: priority, then earlier start).
    pub victims: Vec<VictimReport>,
    /// The five figures the pick compares, in its order.
    pub pdb_violations: i64,
    /// The most important victim's priority (none without victims).
    pub highest_victim_priority: Option<i64>,
    /// The sum of the victims' priorities (the pick shifts each by 2^31 so fewer victims
    /// weigh less even with negative priorities).
    pub victim_priority_sum: i64,
    pub victim_count: i64,
    /// The earliest start among the most important victims, nanoseconds on the run's clock
    /// (none: not started, or no victims); the latest wins.
    pub top_victims_start_ns: Option<u64>,
}

/// A potential node where the dry run found no victim set, with why.
#[derive(Clone, Debug, Serialize)]
pub struct DryRunRejected {
    pub node: String,
    /// The Filter plugin that still failed, or `DefaultPreemption` when the node held no pod
    /// of lower priority to evict.
    pub plugin: String,
    pub code: String,
    pub message: String,
}

/// DefaultPreemption's part of the cycle (`ExplainReport::preemption`).
#[derive(Clone, Debug, Serialize)]
pub struct PreemptionDetail {
    /// The node the pod was nominated to (none: preemption found no node, or was not tried).
    pub node: Option<String>,
    /// `namespace/name` of the pods deleted there.
    pub victims: Vec<String>,
    /// The PostFilter plugins' message (why preemption could not help, when it could not).
    pub message: Option<String>,
    /// Nodes whose filter failure removing pods might fix (Unschedulable, not
    /// UnschedulableAndUnresolvable). When `candidates` and `dry_run_rejected` hold fewer,
    /// the dry run stopped once it had enough candidates.
    pub potential_nodes: usize,
    /// Every node where the dry run found victims, in the dry run's order (violating no PDB
    /// first).
    pub candidates: Vec<CandidateReport>,
    pub dry_run_rejected: Vec<DryRunRejected>,
    /// The candidates still tied after the criterion that decided (upstream picks among them
    /// in map order); the chosen node is the first.
    pub best_candidates: Vec<String>,
    /// The criterion that left the chosen node ahead (`fewest victims`, `only candidate`,
    /// `no victims needed`, ...).
    pub chosen_by: Option<String>,
}

impl PreemptionDetail {
    /// From the cycle's PostFilter record, `None` when it holds nothing to show.
    pub fn from_record(pf: &PostFilterRecord) -> Option<PreemptionDetail> {
        let mut d = PreemptionDetail {
            node: pf.nominated.map(|n| n.to_string()),
            victims: pf.victims.iter().map(|v| v.key()).collect(),
            message: pf.message.clone().filter(|m| !m.is_empty()),
            potential_nodes: 0,
            candidates: Vec::new(),
            dry_run_rejected: Vec::new(),
            best_candidates: Vec::new(),
            chosen_by: None,
        };
        if let Some(trace) = &pf.trace {
            d.fill(trace);
        }
        (d.node.is_some() || d.message.is_some() || d.potential_nodes > 0).then_some(d)
    }

    fn fill(&mut self, trace: &PreemptionTrace) {
        self.potential_nodes = trace.potential;
        let keys: Vec<PickKey> = trace.candidates.iter().map(PickKey::of).collect();
        for (c, key) in trace.candidates.iter().zip(&keys) {
            let (pdb, top, shifted_sum, count, start) = key.criteria();
            self.candidates.push(CandidateReport {
                node: c.node.to_string(),
                victims: c.victims.pods.iter().map(|p| VictimReport { pod: p.key(), priority: p.priority }).collect(),
                pdb_violations: pdb,
                highest_victim_priority: (count > 0).then_some(top),
                victim_priority_sum: shifted_sum - count * (1i64 << 31),
                victim_count: count,
                top_victims_start_ns: start,
            });
        }
        self.dry_run_rejected = trace
            .rejected
            .iter()
            .map(|(node, st)| DryRunRejected {
                node: node.to_string(),
                // No Filter plugin failed: the dry run itself found nothing to evict.
                plugin: if st.plugin.is_empty() { NAME } else { st.plugin }.to_owned(),
                code: format!("{:?}", st.code),
                message: st.message(),
            })
            .collect();
        // The trace's tie is the engine's own; the criterion is re-derived from the same keys.
        let (best, decided) = best_of_decided(&keys);
        debug_assert_eq!(best, trace.best, "the explained pick is the engine's");
        self.best_candidates =
            trace.best.iter().filter_map(|&i| trace.candidates.get(i)).map(|c| c.node.to_string()).collect();
        if !trace.candidates.is_empty() {
            self.chosen_by = Some(decided.describe().to_owned());
        }
    }

    /// The text form: the outcome line, then the candidates (at most `limit`) and the
    /// rejected potential nodes.
    pub fn table(&self, limit: usize) -> String {
        let mut out = match &self.node {
            Some(node) => format!("preemption: nominated to {node}, deleting {}\n", self.victims.join(", ")),
            None => format!("preemption: no node ({})\n", self.message.as_deref().unwrap_or("not tried")),
        };
        if self.potential_nodes == 0 {
            return out;
        }
        let tried = self.candidates.len() + self.dry_run_rejected.len();
        out.push_str(&format!(
            "  {} potential node(s) (Unschedulable, not UnschedulableAndUnresolvable); dry run on {tried}: {} \
             candidate(s), {} without a victim set\n",
            self.potential_nodes,
            self.candidates.len(),
            self.dry_run_rejected.len()
        ));
        if let (Some(by), Some(node)) = (&self.chosen_by, &self.node) {
            let tied = if self.best_candidates.len() > 1 {
                format!(" (still tied: {})", self.best_candidates.join(", "))
            } else {
                String::new()
            };
            out.push_str(&format!("  {node} chosen by: {by}{tied}\n"));
        }
        if !self.candidates.is_empty() {
            let mut rows = vec![[
                "  CANDIDATE",
                "PDB VIOLATIONS",
                "TOP PRIORITY",
                "PRIORITY SUM",
                "VICTIMS",
                "TOP VICTIMS STARTED",
                "VICTIM PODS (priority)",
            ]
            .map(String::from)
            .to_vec()];
            for c in self.candidates.iter().take(limit) {
                let mark = if self.node.as_deref() == Some(c.node.as_str()) { " <- chosen" } else { "" };
                let victims: Vec<String> = c.victims.iter().map(|v| format!("{} ({})", v.pod, v.priority)).collect();
                rows.push(vec![
                    format!("  {}{mark}", c.node),
                    c.pdb_violations.to_string(),
                    c.highest_victim_priority.map_or_else(|| "-".into(), |p| p.to_string()),
                    c.victim_priority_sum.to_string(),
                    c.victim_count.to_string(),
                    c.top_victims_start_ns.map_or_else(|| "not started".into(), start_text),
                    victims.join(", "),
                ]);
            }
            out.push_str(&columns(&rows));
            if self.candidates.len() > limit {
                out.push_str(&format!("  ... {} more candidates (--all lists them)\n", self.candidates.len() - limit));
            }
        }
        for r in self.dry_run_rejected.iter().take(limit) {
            out.push_str(&format!("  no victim set on {}: {}: {}\n", r.node, r.plugin, r.message));
        }
        out
    }
}

/// A start time: RFC 3339 for a real one (an input pod's `status.startTime`), seconds on the
/// simulated clock for one the run set.
fn start_text(ns: u64) -> String {
    const A_YEAR_NS: u64 = 365 * 24 * 3600 * 1_000_000_000;
    if ns < A_YEAR_NS {
        return format!("{:.0} s on the run's clock", ns as f64 / 1e9);
    }
    jiff::Timestamp::from_nanosecond(ns as i128).map_or_else(|_| format!("{ns} ns"), |t| t.to_string())
}
