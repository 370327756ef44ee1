//! `ksched explain`'s rows for the extenders: one per call of the explained cycle (which
//! nodes a filter failed and why, a prioritizer's raw and weighted scores, what a preempt
//! verb removed, a binder's answer), from the scheduler's own extender trace.

use ksched_engine::framework::extender::ExtenderRow;
use serde::Serialize;

use crate::simulate::columns;

#[derive(Clone, Debug, Serialize)]
pub struct ExtenderReport {
    pub extender: String,
    pub verb: String,
    /// Nodes (filter, prioritize) or candidates (preempt) sent.
    pub sent: usize,
    /// filter: `{node, code, reason}` of each node it failed.
    pub failed: Vec<FailedNode>,
    /// prioritize: `{node, raw, weighted}` (weighted = raw × 10 × weight, added to the total).
    pub scores: Vec<ExtenderScore>,
    /// preempt: candidate nodes dropped, and victims spared (`node: namespace/name`).
    pub dropped_nodes: Vec<String>,
    pub spared_victims: Vec<String>,
    pub error: Option<String>,
    /// The error was skipped (ignorable extender, or a prioritize error).
    pub skipped: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct FailedNode {
    pub node: String,
    pub code: String,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExtenderScore {
    pub node: String,
    pub raw: i64,
    pub weighted: i64,
}

impl From<&ExtenderRow> for ExtenderReport {
    fn from(r: &ExtenderRow) -> ExtenderReport {
        ExtenderReport {
            extender: r.extender.clone(),
            verb: r.verb.to_string(),
            sent: r.sent,
            failed: r
                .failed
                .iter()
                .map(|(n, c, why)| FailedNode { node: n.to_string(), code: format!("{c:?}"), reason: why.clone() })
                .collect(),
            scores: r
                .scores
                .iter()
                .map(|(n, raw, weighted)| ExtenderScore { node: n.to_string(), raw: *raw, weighted: *weighted })
                .collect(),
            dropped_nodes: r.dropped_nodes.iter().map(ToString::to_string).collect(),
            spared_victims: r.spared_victims.iter().map(|(n, v)| format!("{n}: {v}")).collect(),
            error: r.error.clone(),
            skipped: r.skipped,
        }
    }
}

/// The extenders section of the text report (empty without extender calls).
pub fn table(rows: &[ExtenderReport], limit: usize) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nExtenders (one row per call)\n");
    let mut t = vec![["  EXTENDER", "VERB", "SENT", "RESULT"].map(String::from).to_vec()];
    for r in rows {
        let mut parts = Vec::new();
        if let Some(e) = &r.error {
            parts.push(format!("{}{e}", if r.skipped { "skipped: " } else { "failed the cycle: " }));
        }
        for f in r.failed.iter().take(limit) {
            parts.push(format!("{} {}: {}", f.node, f.code, f.reason));
        }
        for s in r.scores.iter().take(limit) {
            parts.push(format!("{} {} → {}", s.node, s.raw, s.weighted));
        }
        if !r.dropped_nodes.is_empty() {
            parts.push(format!("dropped nodes {}", r.dropped_nodes.join(", ")));
        }
        if !r.spared_victims.is_empty() {
            parts.push(format!("spared {}", r.spared_victims.join(", ")));
        }
        if parts.is_empty() {
            parts.push("ok".into());
        }
        t.push(vec![format!("  {}", r.extender), r.verb.clone(), r.sent.to_string(), parts.join("; ")]);
    }
    out.push_str(&columns(&t));
    out
}
