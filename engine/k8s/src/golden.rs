//! Replaying upstream kube-scheduler's recorded decisions (golden vectors) against ours.
//!
//! A case folder holds `nodes.json` and `pods.json` (Kubernetes v1 objects, a JSON array each)
//! and `decisions.jsonl` (one line per pod, in creation order: upstream's feasible set, the
//! first failing filter per rejected node, per-plugin weighted scores, the top-score nodes and
//! its pick). Replay: for pod k, evaluate it on the current state with our plugins, compare,
//! then bind it where upstream bound it (whatever we would have chosen) and go on.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1 as k;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::{node_from_k8s, pod_from_k8s};
use ksched_engine::api::{Node, Pod, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::framework::evaluate::{evaluate, Evaluation};
use ksched_engine::framework::{Profile, Status};

/// A case folder could not be read.
#[derive(Debug, Error)]
#[error("{}: {message}", file.display())]
pub struct GoldenError {
    pub file: PathBuf,
    pub message: String,
}

/// One line of `decisions.jsonl`.
#[derive(Clone, Debug, Deserialize)]
pub struct Decision {
    pub seq: usize,
    /// `namespace/name`.
    pub pod: String,
    /// Where upstream bound the pod; `None` when it was unschedulable.
    pub node: Option<String>,
    #[serde(default)]
    pub feasible_nodes: Vec<String>,
    /// Rejected node → `"Plugin: reason[; reason]"`.
    #[serde(default)]
    pub rejected: BTreeMap<String, String>,
    /// Present when a PreFilter plugin rejected the pod outright.
    #[serde(default)]
    pub prefilter: Option<serde_json::Value>,
    /// Feasible node → plugin → weighted score, plus `_total`.
    #[serde(default)]
    pub scores: BTreeMap<String, BTreeMap<String, i64>>,
    #[serde(default)]
    pub best: Vec<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// A loaded case.
pub struct GoldenCase {
    pub name: String,
    /// The profile built from the case's `scheduler-config.json`, when it has one (upstream's
    /// configuration as recorded); replays use it instead of the caller's profile.
    pub profile: Option<Profile>,
    /// Warnings from reading that configuration (upstream plugins ksched does not model).
    pub config_warnings: Vec<String>,
    pub nodes: Vec<Node>,
    /// In creation order, paired with upstream's decision.
    pub pods: Vec<(Pod, Decision)>,
}

fn read(path: &Path) -> Result<String, GoldenError> {
    std::fs::read_to_string(path).map_err(|e| GoldenError { file: path.to_owned(), message: e.to_string() })
}

fn parse_array<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, GoldenError> {
    let text = read(path)?;
    let values: Vec<serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| GoldenError { file: path.to_owned(), message: format!("not a JSON array: {e}") })?;
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            serde_json::from_value(v).map_err(|e| GoldenError { file: path.to_owned(), message: format!("[{i}]: {e}") })
        })
        .collect()
}

impl GoldenCase {
    pub fn load(dir: &Path) -> Result<GoldenCase, GoldenError> {
        let err = |file: &Path, message: String| GoldenError { file: file.to_owned(), message };
        let nodes_path = dir.join("nodes.json");
        let nodes = parse_array::<k::Node>(&nodes_path)?
            .iter()
            .enumerate()
            .map(|(i, n)| node_from_k8s(n).map_err(|e| err(&nodes_path, format!("[{i}]: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let pods_path = dir.join("pods.json");
        let mut pods: BTreeMap<String, Pod> = BTreeMap::new();
        for (i, p) in parse_array::<k::Pod>(&pods_path)?.iter().enumerate() {
            let pod = pod_from_k8s(p).map_err(|e| err(&pods_path, format!("[{i}]: {e}")))?;
            pods.insert(pod.key(), pod);
        }
        let dec_path = dir.join("decisions.jsonl");
        let mut paired = Vec::new();
        for (i, line) in read(&dec_path)?.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let d: Decision = serde_json::from_str(line).map_err(|e| err(&dec_path, format!("line {}: {e}", i + 1)))?;
            let pod = pods
                .remove(&d.pod)
                .ok_or_else(|| err(&dec_path, format!("line {}: pod {} is not in pods.json", i + 1, d.pod)))?;
            paired.push((pod, d));
        }
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let config_path = dir.join("scheduler-config.json");
        let (profile, config_warnings) = if config_path.is_file() {
            // Recorded from the running scheduler, which prints no apiVersion / kind.
            let mut value: serde_json::Value =
                serde_json::from_str(&read(&config_path)?).map_err(|e| err(&config_path, format!("not JSON: {e}")))?;
            if let Some(obj) = value.as_object_mut() {
                obj.entry("apiVersion").or_insert_with(|| "kubescheduler.config.k8s.io/v1".into());
                obj.entry("kind").or_insert_with(|| "KubeSchedulerConfiguration".into());
            }
            let cfg = ksched_engine::config::from_value(value, &ksched_engine::config::Registry::in_tree())
                .map_err(|e| err(&config_path, e.to_string()))?;
            (Some(cfg.default_profile().clone()), cfg.warnings)
        } else {
            (None, Vec::new())
        };
        Ok(GoldenCase { name, profile, config_warnings, nodes, pods: paired })
    }
}

/// matched / total for one kind of check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    pub matched: u64,
    pub total: u64,
}

impl Check {
    fn record(&mut self, ok: bool) -> bool {
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

/// The outcome of replaying one case.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayReport {
    pub case: String,
    pub pods: usize,
    /// Where the profile came from: the case's `scheduler-config.json`, or the caller's.
    pub profile_source: String,
    pub config_warnings: Vec<String>,
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
    /// Per pod upstream scheduled: every node tied at our top total is in upstream's `best`,
    /// so whichever we pick is one upstream could have picked.
    pub pick_in_best: Check,
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
    }

    fn mismatch(&mut self, limit: usize, m: Mismatch) {
        if self.mismatches.len() < limit {
            self.mismatches.push(m);
        } else {
            self.more_mismatches += 1;
        }
    }
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "case {}: {} pods, profile from {}", self.case, self.pods, self.profile_source)?;
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

/// `Plugin: reason; reason`, the recorder's format.
fn rejection_text(st: &Status) -> String {
    let reasons: Vec<String> = st.reasons.iter().map(|r| r.to_string()).collect();
    format!("{}: {}", st.plugin, reasons.join("; "))
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

fn plugin_of(text: &str) -> &str {
    text.split(':').next().unwrap_or("")
}

/// Replays `case` with its own profile (from `scheduler-config.json`) or else `profile`,
/// listing at most `max_mismatches` differences in detail.
pub fn replay(case: &GoldenCase, profile: &Profile, max_mismatches: usize) -> ReplayReport {
    let (profile, profile_source) = match &case.profile {
        Some(p) => (p, "scheduler-config.json"),
        None => (profile, "the default profile"),
    };
    let mut report = ReplayReport {
        case: case.name.clone(),
        pods: case.pods.len(),
        profile_source: profile_source.to_owned(),
        config_warnings: case.config_warnings.clone(),
        ..ReplayReport::default()
    };
    let cache = Cache::new(Duration::ZERO);
    for n in &case.nodes {
        if let Err(e) = cache.add_node(n.clone()) {
            report.mismatch(
                max_mismatches,
                Mismatch {
                    seq: 0,
                    pod: String::new(),
                    check: "load",
                    node: Some(n.name.to_string()),
                    ours: e.to_string(),
                    upstream: "node added".into(),
                },
            );
        }
    }
    let scored: BTreeSet<&str> = profile.score.iter().map(|w| w.plugin.name()).collect();
    let mut not_modelled: BTreeSet<String> = BTreeSet::new();
    for (pod, d) in &case.pods {
        let snapshot = cache.update_snapshot();
        let eval = evaluate(profile, pod, &snapshot);
        compare(&mut report, max_mismatches, &scored, &mut not_modelled, pod, d, &eval);
        if let Some(node) = &d.node {
            if let Err(e) = cache.add_pod(&pod.with_node(Sym::new(node))) {
                report.mismatch(
                    max_mismatches,
                    Mismatch {
                        seq: d.seq,
                        pod: d.pod.clone(),
                        check: "bind",
                        node: Some(node.clone()),
                        ours: e.to_string(),
                        upstream: "bound".into(),
                    },
                );
            }
        }
    }
    report.not_modelled = not_modelled.into_iter().collect();
    report
}

fn compare(
    report: &mut ReplayReport,
    limit: usize,
    scored: &BTreeSet<&str>,
    not_modelled: &mut BTreeSet<String>,
    pod: &Pod,
    d: &Decision,
    eval: &Evaluation,
) {
    let mm = |check: &'static str, node: Option<&str>, ours: String, upstream: String| Mismatch {
        seq: d.seq,
        pod: pod.key(),
        check,
        node: node.map(str::to_owned),
        ours,
        upstream,
    };
    if let Some(st) = &eval.error {
        report.mismatch(limit, mm("plugin error", None, st.to_string(), "no error".into()));
    }
    // Feasible set.
    let ours: BTreeSet<&str> = eval.feasible.iter().map(|s| s.as_str()).collect();
    let theirs: BTreeSet<&str> = d.feasible_nodes.iter().map(String::as_str).collect();
    let prefilter_ok = d.prefilter.is_some() == eval.pre_filter.is_some();
    if !report.feasible_set.record(ours == theirs && prefilter_ok) {
        let only_ours = abbreviated(ours.difference(&theirs));
        let only_theirs = abbreviated(theirs.difference(&ours));
        report.mismatch(
            limit,
            mm(
                "feasible set",
                None,
                format!(
                    "{} feasible, only ours: {only_ours}{}",
                    ours.len(),
                    eval.pre_filter.as_ref().map(|s| format!(", prefilter {s}")).unwrap_or_default()
                ),
                format!(
                    "{} feasible, only upstream: {only_theirs}{}",
                    theirs.len(),
                    d.prefilter.as_ref().map(|p| format!(", prefilter {p}")).unwrap_or_default()
                ),
            ),
        );
    }
    // Rejections.
    let our_rejections: BTreeMap<&str, &Status> = eval.rejected.iter().map(|(n, s)| (n.as_str(), s)).collect();
    for (node, text) in &d.rejected {
        let ours = our_rejections.get(node.as_str()).map(|s| rejection_text(s));
        let ours_str = ours.clone().unwrap_or_else(|| "feasible".into());
        if !report.rejecting_plugin.record(ours.as_deref().map(plugin_of) == Some(plugin_of(text))) {
            report.mismatch(limit, mm("rejecting plugin", Some(node), ours_str.clone(), text.clone()));
        }
        let same_text = ours.as_deref() == Some(text.as_str());
        report.rejection_reason.record(same_text);
        // A different plugin was already listed above; list a wording difference only.
        if !same_text && ours.as_deref().map(plugin_of) == Some(plugin_of(text)) {
            report.mismatch(limit, mm("rejection reason", Some(node), ours_str, text.clone()));
        }
    }
    // Scores, on nodes feasible for both.
    for (node, upstream_scores) in &d.scores {
        let name = Sym::new(node);
        if !eval.feasible.contains(&name) {
            continue;
        }
        for (plugin, &want) in upstream_scores {
            if plugin == "_total" {
                let got = eval.total(name);
                if !report.totals.record(got == Some(want)) {
                    report.mismatch(limit, mm("total", Some(node), format!("{got:?}"), want.to_string()));
                }
                continue;
            }
            let got = if scored.contains(plugin.as_str()) {
                eval.score(plugin, name)
            } else {
                not_modelled.insert(plugin.clone());
                Some(0)
            };
            let check = report.plugin_scores.entry(plugin.clone()).or_default();
            if !check.record(got == Some(want)) {
                let ours = got.map_or_else(|| "skipped".to_owned(), |g| g.to_string());
                report.mismatch(limit, mm("plugin score", Some(node), format!("{plugin} {ours}"), want.to_string()));
            }
        }
        // Plugins we scored that upstream skipped for this pod.
        for &plugin in &eval.scores.plugins {
            if !upstream_scores.contains_key(plugin) {
                let check = report.plugin_scores.entry(plugin.to_owned()).or_default();
                check.record(false);
                let got = eval.score(plugin, name).unwrap_or_default();
                report.mismatch(limit, mm("plugin score", Some(node), format!("{plugin} {got}"), "skipped".into()));
            }
        }
    }
    // Our pick.
    if let Some(node) = &d.node {
        let best: BTreeSet<&str> = if d.best.is_empty() {
            std::iter::once(node.as_str()).collect()
        } else {
            d.best.iter().map(String::as_str).collect()
        };
        let top = eval.top_nodes();
        let ok = !top.is_empty() && top.iter().all(|n| best.contains(n.as_str()));
        if !report.pick_in_best.record(ok) {
            let top: Vec<&str> = top.iter().map(|s| s.as_str()).collect();
            report.mismatch(limit, mm("pick", None, format!("top {top:?}"), format!("best {best:?}")));
        }
    }
}

/// Loads and replays every case folder under `dir` (or `dir` itself when it is a case).
pub fn replay_dir(dir: &Path, profile: &Profile, max_mismatches: usize) -> Result<Vec<ReplayReport>, GoldenError> {
    let mut cases = Vec::new();
    if dir.join("decisions.jsonl").is_file() {
        cases.push(dir.to_owned());
    } else {
        let entries =
            std::fs::read_dir(dir).map_err(|e| GoldenError { file: dir.to_owned(), message: e.to_string() })?;
        for e in entries.flatten() {
            if e.path().join("decisions.jsonl").is_file() {
                cases.push(e.path());
            }
        }
        cases.sort();
        if cases.is_empty() {
            return Err(GoldenError {
                file: dir.to_owned(),
                message: "no case folders (with decisions.jsonl) found".into(),
            });
        }
    }
    cases.iter().map(|c| Ok(replay(&GoldenCase::load(c)?, profile, max_mismatches))).collect()
}
