//! The pods that ended somewhere else under a configuration than under the first, and why.
//!
//! Why is taken from the scheduler's own cycle: the configuration that placed the pod
//! differently is run again (same input, same seed: the same run) with a [`MoveObserver`] on
//! the cycles of the listed pods only (every other cycle runs unobserved). In the cycle that
//! bound the pod it looks at the first configuration's node: rejected by a Filter plugin (that
//! plugin decided), not visited by the search (percentageOfNodesToScore decided), or scored,
//! in which case each Score plugin's weighted score on the chosen node minus that on the first
//! configuration's node is kept and the plugin with the largest difference is named.

use std::collections::HashMap;

use ksched_engine::api::{Pod, Sym};
use ksched_engine::framework::pick::TieBreak;
use ksched_engine::framework::runtime::ScoreTable;
use ksched_engine::framework::Status;
use ksched_engine::observer::{CycleObserver, FilterView, SelectedBy, Selection};
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::snapshot::node_info::NodeInfo;
use serde::Serialize;

use super::run::{run_tracked, Input, Placement, RunRecord};
use super::ConfigSpec;

/// One Score plugin's part in the choice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScoreDiff {
    pub plugin: String,
    /// Weighted score on this configuration's node.
    pub chosen: i64,
    /// Weighted score on the first configuration's node.
    pub baseline: i64,
    /// chosen − baseline.
    pub diff: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MovedPod {
    pub pod: String,
    /// Where it ended under the first configuration, and under this one (a node, `(pending)`
    /// or `(deleted)`).
    pub baseline_node: String,
    pub node: String,
    /// The plugin that decided, when one did.
    pub deciding_plugin: Option<String>,
    pub why: String,
    /// Per Score plugin, when both nodes were scored in the cycle that bound the pod.
    pub score_diff: Vec<ScoreDiff>,
}

/// (moved pods counted, the first `max` of them in the first configuration's attempt order).
pub fn moved_pods(a: &RunRecord, b: &RunRecord, max: usize) -> (usize, Vec<String>) {
    let at = |r: &RunRecord, k: &str| r.placement.get(k).copied().unwrap_or(Placement::Pending);
    let mut keys: Vec<&String> = a.attempted.iter().collect();
    let in_a: std::collections::HashSet<&str> = a.attempted.iter().map(String::as_str).collect();
    keys.extend(b.attempted.iter().filter(|k| !in_a.contains(k.as_str())));
    let moved: Vec<String> = keys
        .into_iter()
        .filter(|k| {
            let (pa, pb) = (at(a, k), at(b, k));
            pa != pb && !(pa == Placement::Gone && pb == Placement::Gone)
        })
        .cloned()
        .collect();
    let n = moved.len();
    (n, moved.into_iter().take(max).collect())
}

/// Why each of `listed` moved between `a` and `b` (`spec` is b's configuration).
pub fn explain(
    input: &Input,
    spec: &ConfigSpec,
    seed: u64,
    a: &RunRecord,
    b: &RunRecord,
    listed: Vec<String>,
) -> Result<Vec<MovedPod>, String> {
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    let at = |r: &RunRecord, k: &str| r.placement.get(k).copied().unwrap_or(Placement::Pending);
    // The pods bound under both: their binding cycles under b are observed.
    let watch: HashMap<String, Sym> = listed
        .iter()
        .filter_map(|k| match (at(a, k), at(b, k)) {
            (Placement::Node(na), Placement::Node(_)) => Some((k.clone(), na)),
            _ => None,
        })
        .collect();
    let mut notes: HashMap<String, CycleNote> = HashMap::new();
    let mut diverged = false;
    if !watch.is_empty() {
        let (rerun, observer) = run_tracked(input, spec, seed, Some(Box::new(MoveObserver::new(watch))))?;
        diverged = listed.iter().any(|k| at(&rerun, k) != at(b, k));
        let observer: Box<dyn std::any::Any> = observer.ok_or("the re-run lost its observer")?;
        let observer = observer.downcast::<MoveObserver>().map_err(|_| "the re-run's observer is not compare's")?;
        notes = observer.bound;
    }
    let reasons = |r: &RunRecord, k: &str| r.last_failure.get(k).map(|v| v.join(", ")).unwrap_or_default();
    let mut out = Vec::new();
    for k in listed {
        let (pa, pb) = (at(a, &k), at(b, &k));
        let mut m = MovedPod {
            pod: k.clone(),
            baseline_node: pa.to_string(),
            node: pb.to_string(),
            deciding_plugin: None,
            why: String::new(),
            score_diff: Vec::new(),
        };
        match (pa, pb) {
            (_, Placement::Pending) => m.why = format!("pending here: {}", reasons(b, &k)),
            (Placement::Pending, _) => m.why = format!("pending under the first configuration: {}", reasons(a, &k)),
            (_, Placement::Gone) => m.why = "deleted here (a preemption victim, or by the workload)".into(),
            (Placement::Gone, _) => {
                m.why = "deleted under the first configuration (a preemption victim, or by the workload)".into()
            }
            (Placement::Node(na), Placement::Node(nb)) if diverged => {
                m.why = format!("not explained: the observed re-run did not repeat the run ({na} vs {nb})")
            }
            (Placement::Node(na), Placement::Node(_)) => match notes.get(&k) {
                Some(note) => note.explain(na, &mut m, spec.profile.tie_break),
                None => m.why = "not explained: its binding cycle was not observed".into(),
            },
        }
        out.push(m);
    }
    Ok(out)
}

/// What one observed cycle showed about the first configuration's node.
#[derive(Clone, Debug, Default)]
pub struct CycleNote {
    /// The first configuration's node.
    baseline: Option<Sym>,
    /// Its verdict in this cycle: `None` when feasible (or absent from the cluster: `gone`).
    rejected: Option<Status>,
    gone: bool,
    /// The search did not visit it (it stopped after enough feasible nodes).
    not_visited: bool,
    /// Weighted scores per plugin and the total (extenders' scores included) on the baseline
    /// node, when it was scored.
    baseline_scores: Option<(Vec<i64>, i64)>,
    /// The same on each node tied at the top total.
    top_scores: Vec<(Sym, Vec<i64>, i64)>,
    plugins: Vec<&'static str>,
    chosen: Option<(Sym, SelectedBy)>,
}

impl CycleNote {
    fn explain(&self, baseline: Sym, m: &mut MovedPod, tie_break: TieBreak) {
        let Some((chosen, by)) = self.chosen else {
            m.why = "not explained: the binding cycle chose no node".into();
            return;
        };
        if by == SelectedBy::NominatedNode {
            m.deciding_plugin = Some("DefaultPreemption".into());
            m.why = format!("bound to its nominated node {chosen} after preempting there");
            return;
        }
        if by == SelectedBy::BatchHint {
            m.why = format!(
                "OpportunisticBatching: took {chosen}, the next node of the previous pod's ranking, unscored (its \
                 filters alone checked it)"
            );
            return;
        }
        if self.gone {
            m.why = format!("{baseline} was not in the cluster when the pod was scheduled here");
            return;
        }
        if let Some(st) = &self.rejected {
            let plugin = if st.plugin.is_empty() { None } else { Some(st.plugin.to_owned()) };
            m.why = format!(
                "{baseline} rejected here{}: {}",
                plugin.as_ref().map(|p| format!(" by {p}")).unwrap_or_default(),
                st.message()
            );
            m.deciding_plugin = plugin;
            return;
        }
        if self.not_visited {
            m.why =
                format!("{baseline} was not among the nodes this cycle's search visited (percentageOfNodesToScore)");
            return;
        }
        let (Some((base, tb)), Some((_, top, tc))) =
            (&self.baseline_scores, self.top_scores.iter().find(|(n, _, _)| *n == chosen))
        else {
            m.why = format!("{baseline} was feasible but not scored ({by:?})");
            return;
        };
        m.score_diff = self
            .plugins
            .iter()
            .zip(top.iter().zip(base))
            .map(|(p, (&c, &b))| ScoreDiff { plugin: (*p).to_owned(), chosen: c, baseline: b, diff: c - b })
            .collect();
        if tc == tb {
            let how = match tie_break {
                TieBreak::Upstream => "upstream's tie-break (its score heap over the nodes in the order found) chose",
                TieBreak::Random => "the seeded tie-break chose",
            };
            m.why = format!("equal totals ({tc}) on {chosen} and {baseline}: {how}");
            return;
        }
        let best = m.score_diff.iter().filter(|d| d.diff > 0).max_by_key(|d| d.diff);
        m.deciding_plugin = best.map(|d| d.plugin.clone());
        let parts: Vec<String> =
            m.score_diff.iter().filter(|d| d.diff != 0).map(|d| format!("{} {:+}", d.plugin, d.diff)).collect();
        m.why = format!("scored {tc} on {chosen} vs {tb} on {baseline}: {}", parts.join(", "));
    }
}

/// A cycle observer that follows the cycles of some pods and keeps, per pod, what its binding
/// cycle showed about the first configuration's node.
pub struct MoveObserver {
    /// `namespace/name` → the first configuration's node.
    watch: HashMap<String, Sym>,
    current: Option<(String, CycleNote)>,
    /// The binding cycle of each watched pod that was bound.
    pub bound: HashMap<String, CycleNote>,
}

impl MoveObserver {
    pub fn new(watch: HashMap<String, Sym>) -> MoveObserver {
        MoveObserver { watch, current: None, bound: HashMap::new() }
    }

    fn note(&mut self) -> Option<&mut CycleNote> {
        self.current.as_mut().map(|(_, n)| n)
    }
}

impl CycleObserver for MoveObserver {
    fn cycle_started(&mut self, pod: &Pod) -> bool {
        let key = pod.key();
        self.current =
            self.watch.get(&key).map(|&node| (key, CycleNote { baseline: Some(node), ..CycleNote::default() }));
        self.current.is_some()
    }

    fn filtered(&mut self, view: &FilterView<'_>) {
        let Some(note) = self.note() else { return };
        let Some(base) = note.baseline else { return };
        let snapshot = view.snapshot();
        let Some(pos) = snapshot.position(base) else {
            note.gone = true;
            return;
        };
        if view.feasible.contains(&(pos as u32)) {
            return;
        }
        if let Some(st) = view.statuses.at(pos as u32) {
            note.rejected = Some(st.clone());
            return;
        }
        let narrowed_out = view.narrowed_to().is_some_and(|names| !names.contains(&base));
        if narrowed_out {
            note.rejected = view.statuses.absent.clone();
            return;
        }
        let Some(info) = snapshot.node_at(pos) else { return };
        let st = view.run_filters(info);
        if st.is_success() {
            note.not_visited = true;
        } else {
            note.rejected = Some(st);
        }
    }

    fn scored(&mut self, nodes: &[&NodeInfo], table: &ScoreTable) {
        let Some(note) = self.note() else { return };
        let column = |i: usize| {
            let per_plugin = (0..table.plugins.len()).map(|p| table.score(p, i)).collect::<Vec<i64>>();
            (per_plugin, table.totals().get(i).copied().unwrap_or(0))
        };
        note.plugins = table.plugins.clone();
        if let Some(i) = nodes.iter().position(|n| Some(n.name()) == note.baseline) {
            note.baseline_scores = Some(column(i));
        }
        let top = table.totals().iter().copied().max();
        note.top_scores = nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| table.totals().get(*i).copied() == top)
            .map(|(i, n)| {
                let (per_plugin, total) = column(i);
                (n.name(), per_plugin, total)
            })
            .collect();
    }

    fn selected(&mut self, selection: &Selection<'_>) {
        if let Some(note) = self.note() {
            note.chosen = Some((selection.node, selection.by));
        }
    }

    fn cycle_finished(&mut self, outcome: &CycleOutcome) {
        if let (Some((key, note)), CycleOutcome::Scheduled { .. }) = (self.current.take(), outcome) {
            self.bound.insert(key, note);
        }
    }
}
