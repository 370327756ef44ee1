//! Why nodes were rejected: each node's status, and the FitError summary of why no node fit.

use std::collections::HashMap;
use std::fmt;

use smallvec::SmallVec;

use crate::api::Sym;
use crate::framework::{Status, Verdict};
use crate::snapshot::Snapshot;

/// Why each rejected node was rejected, by position in the snapshot. Nodes without an entry
/// have `absent` (when PreFilter rejected the pod, every node has its status), or passed.
///
/// Thousands of nodes share a handful of statuses, so each entry is a position and an index
/// into the statuses kept: a failure in brief is built into a `Status` only when it differs
/// from the last brief recorded (a full status is kept as it comes).
#[derive(Clone, Debug, Default)]
pub struct NodeStatuses {
    entries: Vec<(u32, u32)>,
    distinct: Vec<Status>,
    /// The last brief recorded and its index in `distinct`.
    last_brief: Option<(&'static str, crate::framework::RowFail, u32)>,
    pub absent: Option<Status>,
}

impl NodeStatuses {
    pub fn clear(&mut self) {
        self.entries.clear();
        self.distinct.clear();
        self.last_brief = None;
        self.absent = None;
    }

    /// Records that the node at `pos` was rejected with `st`.
    pub fn push(&mut self, pos: u32, st: Status) {
        // Not compared with the last: telling two full statuses equal costs about what
        // keeping both does.
        self.distinct.push(st);
        self.entries.push((pos, self.distinct.len() as u32 - 1));
    }

    /// Records `v` for the node at `pos`: nothing for a pass.
    #[inline]
    pub fn push_verdict(&mut self, pos: u32, v: Verdict) {
        match v {
            Verdict::Pass => {}
            Verdict::Full(st) => self.push(pos, st),
            Verdict::Brief(plugin, fail) => {
                let idx = match self.last_brief {
                    Some((p, f, idx)) if std::ptr::eq(p, plugin) && f.same(&fail) => idx,
                    _ => {
                        self.distinct.push(Verdict::Brief(plugin, fail).into_status());
                        let idx = (self.distinct.len() - 1) as u32;
                        self.last_brief = Some((plugin, fail, idx));
                        idx
                    }
                };
                self.entries.push((pos, idx));
            }
        }
    }

    /// `push_verdict` of the same brief for each node of `positions`, in order.
    pub fn push_brief_run(
        &mut self,
        positions: std::ops::Range<u32>,
        plugin: &'static str,
        fail: crate::framework::RowFail,
    ) {
        let Some(first) = positions.clone().next() else { return };
        self.push_verdict(first, Verdict::Brief(plugin, fail));
        let idx = self.entries.last().map_or(0, |&(_, idx)| idx);
        self.entries.extend(positions.skip(1).map(|pos| (pos, idx)));
    }

    /// Each rejected node's position and status, in the order they were recorded.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Status)> + '_ {
        self.entries.iter().map(|&(pos, idx)| (pos, &self.distinct[idx as usize]))
    }

    /// The positions of the rejected nodes, in the order they were recorded.
    pub fn positions(&self) -> impl Iterator<Item = u32> + '_ {
        self.entries.iter().map(|&(pos, _)| pos)
    }

    /// The statuses the rejected nodes have, each at least once, in the order first recorded.
    pub fn statuses(&self) -> &[Status] {
        &self.distinct
    }

    /// Every node's status code by snapshot position (`Success` for nodes with no status).
    pub fn codes(&self, num_nodes: usize) -> Vec<crate::framework::Code> {
        let fill = self.absent.as_ref().map_or(crate::framework::Code::Success, |s| s.code);
        let mut codes = vec![fill; num_nodes];
        for (pos, st) in self.iter() {
            if let Some(c) = codes.get_mut(pos as usize) {
                *c = st.code;
            }
        }
        codes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The status of the node at snapshot position `pos`, if it was rejected.
    pub fn at(&self, pos: u32) -> Option<&Status> {
        self.iter().find(|(p, _)| *p == pos).map(|(_, s)| s)
    }

    /// The status of the node named `name`, if it was rejected.
    pub fn get(&self, snapshot: &Snapshot, name: Sym) -> Option<&Status> {
        let pos = snapshot.position(name)? as u32;
        self.at(pos).or(self.absent.as_ref())
    }
}

/// No node fit: the summary upstream puts in the pod's condition and events.
#[derive(Clone, Debug)]
pub struct FitError {
    pub num_all_nodes: usize,
    /// Set when a PreFilter plugin rejected the pod outright.
    pub pre_filter_msg: Option<String>,
    /// "count reason" → count, over every rejected node's reasons.
    pub reasons: HashMap<String, usize>,
    pub post_filter_msg: Option<String>,
    /// The plugins that rejected the pod on some node (upstream's
    /// `Diagnosis.UnschedulablePlugins`), sorted, each once.
    pub plugins: Box<[&'static str]>,
}

impl FitError {
    /// The reason histogram of `statuses` over `num_all_nodes` nodes; nodes without an entry
    /// count under the `absent` status's reasons.
    pub fn from_statuses(num_all_nodes: usize, statuses: &NodeStatuses) -> FitError {
        // Counted by reason first: thousands of nodes share a handful of reasons, so only
        // those few are formatted, and a short list searched from its most recent entry
        // beats hashing the reasons' text.
        let mut by_reason: SmallVec<[(crate::framework::Reason, usize); 8]> = SmallVec::new();
        let mut count =
            |r: crate::framework::Reason, n: usize| match by_reason.iter_mut().rev().find(|(seen, _)| *seen == r) {
                Some((_, c)) => *c += n,
                None => by_reason.push((r, n)),
            };
        let mut per_status = vec![0usize; statuses.distinct.len()];
        for &(_, idx) in &statuses.entries {
            per_status[idx as usize] += 1;
        }
        for (st, &n) in statuses.distinct.iter().zip(&per_status) {
            for r in &st.reasons {
                count(*r, n);
            }
        }
        let missing = num_all_nodes.saturating_sub(statuses.len());
        if let (Some(st), true) = (&statuses.absent, missing > 0) {
            for r in &st.reasons {
                count(*r, missing);
            }
        }
        let mut reasons: HashMap<String, usize> = HashMap::new();
        for (r, n) in by_reason {
            // Different variants may print the same text: add up.
            *reasons.entry(r.to_string()).or_default() += n;
        }
        let mut plugins: Vec<&'static str> =
            statuses.distinct.iter().chain(&statuses.absent).map(|st| st.plugin).filter(|p| !p.is_empty()).collect();
        plugins.sort_unstable();
        plugins.dedup();
        FitError { num_all_nodes, pre_filter_msg: None, reasons, post_filter_msg: None, plugins: plugins.into() }
    }
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} nodes are available:", self.num_all_nodes)?;
        if let Some(m) = &self.pre_filter_msg {
            write!(f, " {m}.")?;
        } else {
            let mut parts: Vec<String> = self.reasons.iter().map(|(r, c)| format!("{c} {r}")).collect();
            parts.sort();
            if !parts.is_empty() {
                write!(f, " {}.", parts.join(", "))?;
            }
        }
        // PostFilter's message is appended as it is (upstream adds no period: preemption's own
        // summary already ends with one).
        if let Some(m) = &self.post_filter_msg {
            write!(f, " {m}")?;
        }
        Ok(())
    }
}
