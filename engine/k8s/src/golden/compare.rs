//! Comparing ksched's verdict on a pod (`Observed`) with upstream's recorded line
//! (`Decision`), check by check, into a `ReplayReport`.

use std::collections::{BTreeMap, BTreeSet};

use super::case::{Decision, DeviceResultRecord};
use super::observe::{Observed, ObservedPreemption};
use super::report::{Mismatch, ReplayReport};

/// One of ksched's claim outcomes in the recording's terms (`compare` sees plain data).
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimAllocationView {
    pub claim: String,
    pub allocated: bool,
    pub results: Vec<DeviceResultRecord>,
    /// The allocation's node selector as JSON (`null` when none).
    pub node_selector: Option<k8s_openapi::api::core::v1::NodeSelector>,
}

/// Up to eight names, then how many more.
fn abbreviated<'a>(names: impl Iterator<Item = &'a &'a str>) -> String {
    let all: Vec<&str> = names.copied().collect();
    let shown = all.iter().take(8).copied().collect::<Vec<_>>().join(", ");
    if all.len() > 8 {
        format!("[{shown}, ... {} more]", all.len() - 8)
    } else {
        format!("[{shown}]")
    }
}

/// Where list `a` first differs from `b`: its length, the index and a few names from there.
fn first_difference(a: &[String], b: &[String]) -> String {
    let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let shown: Vec<&str> = a.iter().skip(at).take(4).map(String::as_str).collect();
    format!("{} nodes, from #{at}: [{}]", a.len(), shown.join(", "))
}

/// Every node's rejection (`Observed::rejected`) as a sorted map.
fn all_rejected(ours: &Observed) -> BTreeMap<&str, &str> {
    ours.rejected.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect()
}

fn plugin_of(text: &str) -> &str {
    text.split(':').next().unwrap_or("")
}

/// Records differences of one pod into `report`.
pub struct Comparer<'r> {
    pub report: &'r mut ReplayReport,
    /// How many mismatches to list in detail.
    pub limit: usize,
    /// Score plugins the profile has (others upstream ran are compared as 0).
    pub scored: &'r BTreeSet<&'static str>,
    pub not_modelled: &'r mut BTreeSet<String>,
    /// Upstream's pick is a function of its found order here (parallelism 1, no extender):
    /// ours must be the same node.
    pub pick_is_deterministic: bool,
}

impl Comparer<'_> {
    fn mismatch(&mut self, d: &Decision, check: &'static str, node: Option<&str>, ours: String, upstream: String) {
        let m = Mismatch { seq: d.seq, pod: d.pod.clone(), check, node: node.map(str::to_owned), ours, upstream };
        self.report.mismatch(self.limit, m);
    }

    /// Compares every field of `d`: those upstream's recorder took from a run over every node
    /// (`feasible_nodes`, `rejected`, `scores`, `best` of a sampled case) with `all`, the rest
    /// (upstream's own cycle) with `ours`, the cycle that decides. Outside sampled cases
    /// both are the same observation.
    pub fn compare(&mut self, d: &Decision, all: &Observed, ours: &Observed) {
        // Upstream's attempt failed with the same plugin error: its line records no
        // feasible set (a Filter error) and no PostFilter outcome.
        let same_error = ours.error.is_some() && ours.error == d.error;
        if let Some(e) = ours.error.as_ref().filter(|_| !same_error) {
            self.mismatch(d, "plugin error", None, e.clone(), "no error".into());
        }
        if same_error && d.feasible_nodes.is_empty() {
            self.report.feasible_set.record(true);
        } else {
            self.feasible_set(d, all);
        }
        self.rejections(d, all);
        self.scores(d, all);
        self.pick(d, ours);
        self.counts(d, ours);
        self.sampled(d, ours);
        self.fit_error(d, ours);
        if same_error {
            return;
        }
        if let Some(up) = &d.preemption {
            match &ours.preemption {
                Some(p) => self.preemption(d, up, p),
                None => {
                    // We found a node where upstream found none: every preemption check fails.
                    let none =
                        ObservedPreemption { message: "(no PostFilter: a node fit)".into(), ..Default::default() };
                    self.preemption(d, up, &none);
                }
            }
        }
    }

    fn feasible_set(&mut self, d: &Decision, ours: &Observed) {
        let mine: BTreeSet<&str> = ours.feasible.iter().map(String::as_str).collect();
        let theirs: BTreeSet<&str> = d.feasible_nodes.iter().map(String::as_str).collect();
        let prefilter_ok = d.prefilter.is_some() == ours.pre_filter.is_some();
        if !self.report.feasible_set.record(mine == theirs && prefilter_ok) {
            let only_ours = abbreviated(mine.difference(&theirs));
            let only_theirs = abbreviated(theirs.difference(&mine));
            let ours_text = format!(
                "{} feasible, only ours: {only_ours}{}",
                mine.len(),
                ours.pre_filter.as_ref().map(|s| format!(", prefilter {s}")).unwrap_or_default()
            );
            let theirs_text = format!(
                "{} feasible, only upstream: {only_theirs}{}",
                theirs.len(),
                d.prefilter.as_ref().map(|p| format!(", prefilter {p}")).unwrap_or_default()
            );
            self.mismatch(d, "feasible set", None, ours_text, theirs_text);
        }
    }

    fn rejections(&mut self, d: &Decision, ours: &Observed) {
        for (node, text) in &d.rejected {
            let mine = ours.rejected.get(node);
            let mine_str = mine.cloned().unwrap_or_else(|| "feasible".into());
            if !self.report.rejecting_plugin.record(mine.map(|t| plugin_of(t)) == Some(plugin_of(text))) {
                self.mismatch(d, "rejecting plugin", Some(node), mine_str.clone(), text.clone());
            }
            let same_text = mine == Some(text);
            self.report.rejection_reason.record(same_text);
            // A different plugin was already listed above; list a wording difference only.
            if !same_text && mine.map(|t| plugin_of(t)) == Some(plugin_of(text)) {
                self.mismatch(d, "rejection reason", Some(node), mine_str, text.clone());
            }
        }
    }

    fn scores(&mut self, d: &Decision, ours: &Observed) {
        let feasible: BTreeSet<&str> = ours.feasible.iter().map(String::as_str).collect();
        for (node, upstream_scores) in &d.scores {
            if !feasible.contains(node.as_str()) {
                continue;
            }
            for (plugin, &want) in upstream_scores {
                if plugin == "_total" {
                    let got = ours.total(node);
                    if !self.report.totals.record(got == Some(want)) {
                        self.mismatch(d, "total", Some(node), format!("{got:?}"), want.to_string());
                    }
                    continue;
                }
                let got = if self.scored.contains(plugin.as_str()) {
                    ours.score(plugin, node)
                } else {
                    self.not_modelled.insert(plugin.clone());
                    Some(0)
                };
                let check = self.report.plugin_scores.entry(plugin.clone()).or_default();
                if !check.record(got == Some(want)) {
                    let mine = got.map_or_else(|| "skipped".to_owned(), |g| g.to_string());
                    self.mismatch(d, "plugin score", Some(node), format!("{plugin} {mine}"), want.to_string());
                }
            }
            // Plugins we scored that upstream skipped for this pod.
            for &plugin in &ours.score_plugins {
                if !upstream_scores.contains_key(plugin) {
                    self.report.plugin_scores.entry(plugin.to_owned()).or_default().record(false);
                    let got = ours.score(plugin, node).unwrap_or_default();
                    self.mismatch(d, "plugin score", Some(node), format!("{plugin} {got}"), "skipped".into());
                }
            }
        }
    }

    /// Our ties are among upstream's (`sampled_best` of its own cycle where recorded, else
    /// `best`); and, where upstream's pick is deterministic, the same node.
    fn pick(&mut self, d: &Decision, ours: &Observed) {
        let Some(node) = &d.node else { return };
        let tied = d.sampled_best.as_ref().unwrap_or(&d.best);
        let best: BTreeSet<&str> = if tied.is_empty() {
            std::iter::once(node.as_str()).collect()
        } else {
            tied.iter().map(String::as_str).collect()
        };
        let ok = !ours.top.is_empty() && ours.top.iter().all(|n| best.contains(n.as_str()));
        if !self.report.pick_in_best.record(ok) {
            self.mismatch(d, "pick in best", None, format!("top {:?}", ours.top), format!("best {best:?}"));
        }
        let Some(want) = d.pick().filter(|_| self.pick_is_deterministic) else { return };
        let got = ours.pick.as_deref();
        if !self.report.pick.record(got == Some(want)) {
            self.mismatch(d, "pick", None, got.unwrap_or("(none)").to_owned(), want.to_owned());
        }
    }

    /// Upstream's ScheduleResult counts: evaluated (and feasible, where recorded).
    fn counts(&mut self, d: &Decision, ours: &Observed) {
        let Some(evaluated) = d.evaluated else { return };
        let want = (evaluated, d.feasible.unwrap_or(ours.feasible_count));
        let got = (ours.evaluated, ours.feasible_count);
        if !self.report.evaluated.record(got == want) {
            let show = |(e, f): (usize, usize)| format!("evaluated {e}, feasible {f}");
            self.mismatch(d, "evaluated", None, show(got), show(want));
        }
    }

    /// The fields of upstream's own sampled cycle, each when the line has it.
    fn sampled(&mut self, d: &Decision, ours: &Observed) {
        if let Some(want) = d.next_start_node_index {
            if !self.report.sampling.start_index.record(ours.start == want) {
                self.mismatch(d, "start index", None, ours.start.to_string(), want.to_string());
            }
        }
        if let Some(want) = &d.sampled_feasible {
            if !self.report.sampling.feasible.record(&ours.sampled_feasible == want) {
                let (got, up) =
                    (first_difference(&ours.sampled_feasible, want), first_difference(want, &ours.sampled_feasible));
                self.mismatch(d, "sampled feasible", None, got, up);
            }
        }
        if let Some(want) = &d.sampled_rejected {
            let got: BTreeMap<&str, &str> =
                ours.sampled_rejected.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
            let want: BTreeMap<&str, &str> = want.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
            // A PreFilter rejection visits no node: its statuses are all "absent", which a
            // recording may list as none or as every node with PreFilter's verdict.
            let every_node: BTreeMap<&str, &str> = all_rejected(ours);
            let ok = got == want || (ours.pre_filter.is_some() && d.prefilter.is_some() && want == every_node);
            if !self.report.sampling.rejected.record(ok) {
                let only = |a: &BTreeMap<&str, &str>, b: &BTreeMap<&str, &str>| {
                    let diff: Vec<String> = a
                        .iter()
                        .filter(|(n, t)| b.get(*n) != Some(*t))
                        .map(|(n, t)| format!("{n}: {t}"))
                        .take(4)
                        .collect();
                    format!("{} rejected, only here: [{}]", a.len(), diff.join(", "))
                };
                self.mismatch(d, "sampled rejected", None, only(&got, &want), only(&want, &got));
            }
        }
        if let Some(want) = &d.sampled_totals {
            if !self.report.sampling.totals.record(&ours.sampled_totals == want) {
                self.mismatch(d, "sampled totals", None, format!("{:?}", ours.sampled_totals), format!("{want:?}"));
            }
        }
        if let Some(want) = &d.sampled_best {
            let got: BTreeSet<&str> = ours.top.iter().map(String::as_str).collect();
            let want: BTreeSet<&str> = want.iter().map(String::as_str).collect();
            if !self.report.sampling.best.record(got == want) {
                self.mismatch(d, "sampled best", None, format!("{got:?}"), format!("{want:?}"));
            }
        }
    }

    fn fit_error(&mut self, d: &Decision, ours: &Observed) {
        let Some(want) = &d.error else { return };
        let got = ours.fit_error.as_deref().or(ours.error.as_deref()).unwrap_or("(a node fit)");
        if !self.report.fit_error.record(got == want) {
            self.mismatch(d, "fit error", None, got.to_owned(), want.clone());
        }
    }

    /// The devices DynamicResources allocated for a bound pod, claim by claim: the same claim,
    /// whether this pod allocated it, the same devices in the same order and the same
    /// allocation node selector (`ours`: what ksched allocates on upstream's node).
    pub fn claim_allocations(&mut self, d: &Decision, ours: Result<Vec<ClaimAllocationView>, String>) {
        if d.node.is_none() || d.claim_allocations.is_empty() {
            return;
        }
        let ours = match ours {
            Ok(o) => o,
            Err(e) => {
                for up in &d.claim_allocations {
                    self.report.claim_allocations.record(false);
                    self.mismatch(d, "claim allocation", None, format!("{}: {e}", up.claim), "allocated".into());
                }
                return;
            }
        };
        for (i, up) in d.claim_allocations.iter().enumerate() {
            let mine = ours.get(i);
            let ok = mine.is_some_and(|m| {
                m.claim == up.claim
                    && m.allocated == up.allocated
                    && (!up.allocated || (m.results == up.results && m.node_selector == up.node_selector))
            });
            if !self.report.claim_allocations.record(ok) {
                let show = |claim: &str, allocated: bool, results: &[DeviceResultRecord]| {
                    let devices: Vec<String> =
                        results.iter().map(|r| format!("{}={}/{}/{}", r.request, r.driver, r.pool, r.device)).collect();
                    format!("{claim} allocated={allocated} [{}]", devices.join(", "))
                };
                let got = mine.map_or_else(
                    || "(no claim)".to_owned(),
                    |m| format!("{} selector {:?}", show(&m.claim, m.allocated, &m.results), m.node_selector),
                );
                let want = format!("{} selector {:?}", show(&up.claim, up.allocated, &up.results), up.node_selector);
                self.mismatch(d, "claim allocation", d.node.as_deref(), got, want);
            }
        }
    }

    fn preemption(&mut self, d: &Decision, up: &super::case::PreemptionRecord, ours: &ObservedPreemption) {
        let c = &mut self.report.preemption;
        c.dry_runs_cut_short += u64::from(ours.cut_short);
        c.tied_best += u64::from(up.best_candidates.len() > 1);
        c.tied_victim_pairs += ours.tied_victim_pairs as u64;
        let message_ok = c.message.record(ours.message == up.message);
        if !message_ok {
            self.mismatch(d, "postfilter message", None, ours.message.clone(), up.message.clone());
        }

        // Candidates: the set, then victims and PDB violations on nodes both found.
        let mine: BTreeMap<&str, (&Vec<String>, usize)> =
            ours.candidates.iter().map(|(n, v, p)| (n.as_str(), (v, *p))).collect();
        let mine_set: BTreeSet<&str> = mine.keys().copied().collect();
        let theirs_set: BTreeSet<&str> = up.candidates.keys().map(String::as_str).collect();
        if !self.report.preemption.candidates.record(mine_set == theirs_set) {
            let ours_text =
                format!("{} candidates, only ours: {}", mine_set.len(), abbreviated(mine_set.difference(&theirs_set)));
            let theirs_text = format!(
                "{} candidates, only upstream: {}",
                theirs_set.len(),
                abbreviated(theirs_set.difference(&mine_set))
            );
            self.mismatch(d, "candidate set", None, ours_text, theirs_text);
        }
        for (node, rec) in &up.candidates {
            let Some((victims, pdb)) = mine.get(node.as_str()) else { continue };
            if !self.report.preemption.victims.record(**victims == rec.victims) {
                self.mismatch(d, "victims", Some(node), format!("{victims:?}"), format!("{:?}", rec.victims));
            }
            if !self.report.preemption.pdb_violations.record(*pdb == rec.pdb_violations) {
                self.mismatch(d, "pdb violations", Some(node), pdb.to_string(), rec.pdb_violations.to_string());
            }
        }

        // Potential nodes the dry run rejected, on either side.
        let mine_rej: BTreeMap<&str, &str> =
            ours.dry_run_rejected.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
        let nodes: BTreeSet<&str> =
            mine_rej.keys().copied().chain(up.dry_run_rejected.keys().map(String::as_str)).collect();
        for node in nodes {
            let got = mine_rej.get(node).copied();
            let want = up.dry_run_rejected.get(node).map(String::as_str);
            if !self.report.preemption.dry_run_rejected.record(got == want) {
                let show = |t: Option<&str>| t.map_or_else(|| "(not rejected)".to_owned(), str::to_owned);
                self.mismatch(d, "dry-run rejected", Some(node), show(got), show(want));
            }
        }

        let best_mine: BTreeSet<&str> = ours.best.iter().map(String::as_str).collect();
        let best_theirs: BTreeSet<&str> = up.best_candidates.iter().map(String::as_str).collect();
        if !self.report.preemption.best_candidates.record(best_mine == best_theirs) {
            self.mismatch(d, "best candidates", None, format!("{best_mine:?}"), format!("{best_theirs:?}"));
        }

        // Our nomination: one upstream could have made, with upstream's victims there.
        let ok = match (&ours.nominated, &up.nominated_node) {
            (None, None) => true,
            (Some(n), Some(_)) => {
                best_theirs.contains(n.as_str()) && up.candidates.get(n).is_some_and(|rec| rec.victims == ours.victims)
            }
            _ => false,
        };
        if !self.report.preemption.nomination.record(ok) {
            let show = |n: &Option<String>, v: &[String]| match n {
                Some(n) => format!("{n} evicting {v:?}"),
                None => "none".to_owned(),
            };
            self.mismatch(
                d,
                "nomination",
                None,
                show(&ours.nominated, &ours.victims),
                format!("{} (best {best_theirs:?})", show(&up.nominated_node, &up.victims)),
            );
        }
    }
}
