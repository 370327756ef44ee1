//! What a replay found: matched / total per check, and the first differences in detail.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// matched / total for one kind of check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    pub matched: u64,
    pub total: u64,
}

impl Check {
    pub(crate) fn record(&mut self, ok: bool) -> bool {
        self.total += 1;
        self.matched += u64::from(ok);
        ok
    }

    /// Percent matched (100 when there was nothing to check).
    pub fn rate(&self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            100.0 * self.matched as f64 / self.total as f64
        }
    }

    pub fn is_perfect(&self) -> bool {
        self.matched == self.total
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} ({:.2}%)", self.matched, self.total, self.rate())
    }
}

/// One difference, for the detailed listing.
#[derive(Clone, Debug, Serialize)]
pub struct Mismatch {
    pub seq: usize,
    pub pod: String,
    pub check: &'static str,
    pub node: Option<String>,
    pub ours: String,
    pub upstream: String,
}

/// The checks of upstream's PostFilter outcome (extended cases), each counted over the pods
/// whose first attempt was unschedulable unless said otherwise.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PreemptionChecks {
    /// The same PostFilter message (every plugin's, joined; empty after a nomination).
    pub message: Check,
    /// The same set of candidate nodes (nodes where the dry run found victims).
    pub candidates: Check,
    /// Per (pod, candidate of both): the same victims in the same order.
    pub victims: Check,
    /// Per (pod, candidate of both): the same number of PDB-violating victims.
    pub pdb_violations: Check,
    /// Per (pod, potential node either dry run rejected): rejected by both, same text.
    pub dry_run_rejected: Check,
    /// The same candidates tied after pickOneNodeForPreemption's criteria.
    pub best_candidates: Check,
    /// Our nominated node is among upstream's tied best candidates with upstream's victims
    /// there (or neither side nominated).
    pub nomination: Check,
    /// Not checks, counts that say what the checks covered: our dry runs that stopped before
    /// every potential node (their candidates depend on the random offset) ...
    pub dry_runs_cut_short: u64,
    /// ... pods whose upstream best candidates were tied (upstream picks in map order) ...
    pub tied_best: u64,
    /// ... and adjacent victims tied on priority and start time (a sort's tie order).
    pub tied_victim_pairs: u64,
}

impl PreemptionChecks {
    fn all(&self) -> [(&'static str, &Check); 7] {
        [
            ("postfilter message", &self.message),
            ("candidate set", &self.candidates),
            ("victims", &self.victims),
            ("pdb violations", &self.pdb_violations),
            ("dry-run rejected", &self.dry_run_rejected),
            ("best candidates", &self.best_candidates),
            ("nomination", &self.nomination),
        ]
    }

    pub fn is_perfect(&self) -> bool {
        self.all().iter().all(|(_, c)| c.is_perfect())
    }
}

/// The checks of upstream's own cycle in a sampled case (lines with the `sampled_*` fields),
/// each counted over the lines that have its field.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SamplingChecks {
    /// The same rotating start index when the cycle began (`next_start_node_index`).
    pub start_index: Check,
    /// The same feasible nodes kept, in the same order (`sampled_feasible`).
    pub feasible: Check,
    /// The same nodes visited and rejected, with the same text (`sampled_rejected`).
    pub rejected: Check,
    /// The same totals over those nodes, in order (`sampled_totals`).
    pub totals: Check,
    /// The same nodes tied at the top of them (`sampled_best`).
    pub best: Check,
}

impl SamplingChecks {
    fn all(&self) -> [(&'static str, &Check); 5] {
        [
            ("start index", &self.start_index),
            ("sampled feasible", &self.feasible),
            ("sampled rejected", &self.rejected),
            ("sampled totals", &self.totals),
            ("sampled best", &self.best),
        ]
    }

    pub fn is_perfect(&self) -> bool {
        self.all().iter().all(|(_, c)| c.is_perfect())
    }
}

/// The outcome of replaying one case.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayReport {
    pub case: String,
    pub mix: String,
    /// Differences are reported but do not fail the replay (`REPORT_ONLY_MIXES`).
    pub report_only: bool,
    pub pods: usize,
    /// Pods bound from the start (`running.json`).
    pub running: usize,
    /// Where the profile came from: the case's `scheduler-config.json`, or the caller's.
    pub profile_source: String,
    /// The recording's percentageOfNodesToScore (0 = adaptive) and parallelism, which the
    /// replay runs with (`meta.json`, else 100 and 1).
    pub percentage: u32,
    pub parallelism: usize,
    /// The filter pass stops before every node (then the line's every-node fields are
    /// compared with a second run over every node).
    pub sampled: bool,
    pub config_warnings: Vec<String>,
    /// Optional object files the case has (extended format).
    pub extra_files: Vec<&'static str>,
    /// Per pod: identical feasible set (and PreFilter rejection when upstream had one).
    pub feasible_set: Check,
    /// Per (pod, node upstream rejected): we rejected it with the same plugin.
    pub rejecting_plugin: Check,
    /// Per (pod, node upstream rejected): the same `Plugin: reasons` text.
    pub rejection_reason: Check,
    /// Per plugin, per (pod, node feasible for both): the same weighted score.
    pub plugin_scores: BTreeMap<String, Check>,
    /// Per (pod, node feasible for both): the same total.
    pub totals: Check,
    /// Per pod upstream scheduled: every node tied at our top total is in upstream's tied
    /// nodes of its own cycle (`sampled_best`, else `best`).
    pub pick_in_best: Check,
    /// Per pod upstream scheduled where its pick is deterministic (parallelism 1, no
    /// extender): the same node.
    pub pick: Check,
    /// Per line with upstream's counts: the same `evaluated` (and `feasible`).
    pub evaluated: Check,
    /// Upstream's own sampled cycle (sampled cases).
    pub sampling: SamplingChecks,
    /// Per pod upstream found unschedulable: the same FitError text.
    pub fit_error: Check,
    pub preemption: PreemptionChecks,
    /// Per claim of a bound pod (DRA cases): the same devices, order and node selector.
    pub claim_allocations: Check,
    /// Objects the cache refused and outcomes that could not be applied (listed as mismatches
    /// with check `load`, `bind` or `delete`).
    pub replay_errors: u64,
    /// Score plugins upstream ran that ksched does not have; compared as 0.
    pub not_modelled: Vec<String>,
    /// The first mismatches, in replay order.
    pub mismatches: Vec<Mismatch>,
    /// Mismatches beyond those listed.
    pub more_mismatches: u64,
}

impl ReplayReport {
    /// Every check matched.
    pub fn is_perfect(&self) -> bool {
        self.feasible_set.is_perfect()
            && self.rejecting_plugin.is_perfect()
            && self.rejection_reason.is_perfect()
            && self.plugin_scores.values().all(Check::is_perfect)
            && self.totals.is_perfect()
            && self.pick_in_best.is_perfect()
            && self.pick.is_perfect()
            && self.evaluated.is_perfect()
            && self.sampling.is_perfect()
            && self.fit_error.is_perfect()
            && self.preemption.is_perfect()
            && self.claim_allocations.is_perfect()
            && self.replay_errors == 0
    }

    /// Every check matched, or the case's mix is only reported.
    pub fn passes(&self) -> bool {
        self.report_only || self.is_perfect()
    }

    pub(crate) fn mismatch(&mut self, limit: usize, m: Mismatch) {
        if self.mismatches.len() < limit {
            self.mismatches.push(m);
        } else {
            self.more_mismatches += 1;
        }
    }
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "case {}: {} pods", self.case, self.pods)?;
        if self.running > 0 {
            write!(f, " + {} running", self.running)?;
        }
        write!(f, ", profile from {}", self.profile_source)?;
        let sampled = if self.sampled { ", sampled" } else { "" };
        write!(f, ", percentageOfNodesToScore {}{sampled}, parallelism {}", self.percentage, self.parallelism)?;
        if self.report_only {
            write!(f, " [mix {}: reported, not gated]", self.mix)?;
        }
        writeln!(f)?;
        if !self.extra_files.is_empty() {
            writeln!(f, "  objects: {}", self.extra_files.join(", "))?;
        }
        for w in &self.config_warnings {
            writeln!(f, "  config: {w}")?;
        }
        writeln!(f, "  feasible set        {}", self.feasible_set)?;
        writeln!(f, "  rejecting plugin    {}", self.rejecting_plugin)?;
        writeln!(f, "  rejection reason    {}", self.rejection_reason)?;
        for (p, c) in &self.plugin_scores {
            writeln!(f, "  score {p:<32} {c}")?;
        }
        writeln!(f, "  totals              {}", self.totals)?;
        writeln!(f, "  pick in best        {}", self.pick_in_best)?;
        if self.pick.total > 0 {
            writeln!(f, "  pick                {}", self.pick)?;
        }
        if self.evaluated.total > 0 {
            writeln!(f, "  evaluated           {}", self.evaluated)?;
        }
        for (name, c) in self.sampling.all() {
            if c.total > 0 {
                writeln!(f, "  {name:<19} {c}")?;
            }
        }
        if self.fit_error.total > 0 {
            writeln!(f, "  fit error           {}", self.fit_error)?;
        }
        if self.preemption.message.total > 0 {
            for (name, c) in self.preemption.all() {
                writeln!(f, "  preemption {name:<18} {c}")?;
            }
            let p = &self.preemption;
            writeln!(
                f,
                "  preemption covered: {} pods with tied best candidates, {} tied victim pairs, {} dry runs cut short",
                p.tied_best, p.tied_victim_pairs, p.dry_runs_cut_short
            )?;
        }
        if self.claim_allocations.total > 0 {
            writeln!(f, "  claim allocations   {}", self.claim_allocations)?;
        }
        if self.replay_errors > 0 {
            writeln!(f, "  replay errors       {}", self.replay_errors)?;
        }
        if !self.not_modelled.is_empty() {
            writeln!(f, "  not modelled (compared as 0): {}", self.not_modelled.join(", "))?;
        }
        for m in &self.mismatches {
            write!(f, "  MISMATCH #{} {} {}", m.seq, m.pod, m.check)?;
            if let Some(n) = &m.node {
                write!(f, " on {n}")?;
            }
            writeln!(f, ": ours {} / upstream {}", m.ours, m.upstream)?;
        }
        if self.more_mismatches > 0 {
            writeln!(f, "  ... and {} more mismatches", self.more_mismatches)?;
        }
        Ok(())
    }
}
