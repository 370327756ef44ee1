//! `CycleRecorder`: an observer that keeps whole cycles as plain data, every node's verdict
//! included. Not the hot path: it allocates freely.

use super::{CycleObserver, FilterView, PostFilterView, SelectedBy, Selection};
use crate::api::{Pod, PodUid, Sym};
use crate::framework::extender::ExtenderRow;
use crate::framework::preemption::PreemptionTrace;
use crate::framework::runtime::ScoreTable;
use crate::framework::{Nominating, Status};
use crate::scheduler::{CycleOutcome, ScheduleDecision, ScheduleError};
use crate::snapshot::node_info::NodeInfo;

/// One node's part in a cycle.
#[derive(Clone, Debug)]
pub struct NodeRecord {
    pub node: Sym,
    /// The cycle's verdict: from the search for a visited node; for a node PreFilter's
    /// narrowing left out, the narrowing's; otherwise the cycle's filter function run on it
    /// afterwards (what the search would have found there).
    pub verdict: Status,
    /// The cycle's search visited it (it stops once it has enough feasible nodes).
    pub visited: bool,
    /// Every Filter plugin's own status, each run alone, in profile order (`None`: PreFilter
    /// skipped it). Empty unless the recorder was asked for it; empty for narrowed-out nodes.
    pub filters: Vec<(&'static str, Option<Status>)>,
}

/// One score plugin over the scored nodes.
#[derive(Clone, Debug)]
pub struct ScoreDetail {
    pub plugin: &'static str,
    pub weight: i64,
    /// Before NormalizeScore.
    pub raw: Vec<i64>,
    /// After NormalizeScore (0..=100).
    pub normalized: Vec<i64>,
    /// `normalized × weight`: what the totals add up.
    pub weighted: Vec<i64>,
}

#[derive(Clone, Debug)]
pub struct SelectionRecord {
    pub node: Sym,
    pub by: SelectedBy,
    /// The scored nodes tied at the highest total (just `node` when not scored).
    pub tied: Vec<Sym>,
}

#[derive(Clone, Debug, Default)]
pub struct PostFilterRecord {
    /// Every PostFilter plugin's message joined.
    pub message: Option<String>,
    /// The node preemption nominated the pod to, and the victims there.
    pub nominated: Option<Sym>,
    pub victims: Vec<Pod>,
    /// DefaultPreemption's dry run.
    pub trace: Option<PreemptionTrace>,
}

/// One cycle, as the scheduler ran it.
#[derive(Clone, Debug, Default)]
pub struct CycleRecord {
    pub pod: Option<Pod>,
    /// Cycles the recorder saw start before this one (any pod's).
    pub cycles_before: u64,
    /// Every PreFilter plugin that ran, with its status, in order.
    pub pre_filter: Vec<(&'static str, Status)>,
    /// PreFilter rejected the pod on every node (then `nodes` is empty).
    pub pre_filter_rejection: Option<Status>,
    /// The pod's nominated node, tried first, and its verdict.
    pub nominated_node: Option<(Sym, Status)>,
    /// The OpportunisticBatching hint, tried first, and its verdict.
    pub batch_hint: Option<(Sym, Status)>,
    /// The nodes PreFilter narrowed the cycle to.
    pub narrowed_to: Option<Vec<Sym>>,
    /// The PreFilter plugins that narrowed it (the nodes left out were ruled out by them).
    pub narrowed_by: Vec<&'static str>,
    /// Every node, in snapshot order (empty when the filter pass did not run).
    pub nodes: Vec<NodeRecord>,
    /// The feasible nodes the search found, in visiting order.
    pub feasible: Vec<Sym>,
    /// The nodes scored (the feasible nodes found, when two or more), in the table's order.
    pub scored: Vec<Sym>,
    pub scores: Vec<ScoreDetail>,
    /// Totals over `scored`.
    pub totals: Vec<i64>,
    pub selection: Option<SelectionRecord>,
    pub post_filter: Option<PostFilterRecord>,
    /// The scheduling algorithm's error (a FitError with PostFilter's message, or a plugin's
    /// error); `None` when it chose a node.
    pub error: Option<ScheduleError>,
    /// The whole cycle's outcome (real cycles only).
    pub outcome: Option<CycleOutcome>,
    /// The extenders' calls, one row per call (real cycles of profiles with extenders).
    pub extenders: Vec<ExtenderRow>,
}

impl CycleRecord {
    /// The scored nodes tied at the highest total (every feasible node found when none was
    /// scored).
    pub fn top_nodes(&self) -> Vec<Sym> {
        let Some(&max) = self.totals.iter().max() else { return self.feasible.clone() };
        self.scored.iter().zip(&self.totals).filter(|(_, &t)| t == max).map(|(&n, _)| n).collect()
    }

    /// The weighted score of `plugin` on scored node `node`.
    pub fn weighted(&self, plugin: &str, node: Sym) -> Option<i64> {
        let i = self.scored.iter().position(|&n| n == node)?;
        self.scores.iter().find(|d| d.plugin == plugin)?.weighted.get(i).copied()
    }

    pub fn total(&self, node: Sym) -> Option<i64> {
        let i = self.scored.iter().position(|&n| n == node)?;
        self.totals.get(i).copied()
    }
}

/// Records cycles: every one, or only those of one pod (every attempt of it).
#[derive(Default)]
pub struct CycleRecorder {
    only: Option<PodUid>,
    each_filter_plugin: bool,
    /// Keep only the latest this many records (`keeping_last`); 0 keeps all.
    keep: usize,
    cycles_seen: u64,
    /// The records, oldest first.
    pub records: Vec<CycleRecord>,
    /// Records dropped to keep only the latest (`keeping_last`): the first kept record is
    /// attempt `dropped + 1` of the pod.
    pub dropped: usize,
}

impl CycleRecorder {
    /// Records every cycle.
    pub fn new() -> CycleRecorder {
        CycleRecorder::default()
    }

    /// Records only the cycles of the pod with this uid.
    pub fn for_pod(uid: PodUid) -> CycleRecorder {
        CycleRecorder { only: Some(uid), ..CycleRecorder::default() }
    }

    /// Also runs every Filter plugin alone on every node (`NodeRecord::filters`).
    pub fn with_each_filter_plugin(mut self) -> CycleRecorder {
        self.each_filter_plugin = true;
        self
    }

    /// Keeps only the latest `n` records (at least one), so following a pod through a long
    /// run costs the memory of `n` cycles.
    pub fn keeping_last(mut self, n: usize) -> CycleRecorder {
        self.keep = n.max(1);
        self
    }

    fn current(&mut self) -> &mut CycleRecord {
        if self.records.is_empty() {
            self.records.push(CycleRecord::default());
        }
        let last = self.records.len() - 1;
        &mut self.records[last]
    }
}

impl CycleObserver for CycleRecorder {
    fn cycle_started(&mut self, pod: &Pod) -> bool {
        let before = self.cycles_seen;
        self.cycles_seen += 1;
        if self.only.as_ref().is_some_and(|uid| *uid != pod.uid) {
            return false;
        }
        if self.keep > 0 && self.records.len() >= self.keep {
            let excess = self.records.len() + 1 - self.keep;
            self.records.drain(..excess);
            self.dropped += excess;
        }
        self.records.push(CycleRecord { pod: Some(pod.clone()), cycles_before: before, ..CycleRecord::default() });
        true
    }

    fn pre_filter(&mut self, plugin: &'static str, status: &Status) {
        self.current().pre_filter.push((plugin, status.clone()));
    }

    fn pre_filter_rejected(&mut self, status: &Status) {
        self.current().pre_filter_rejection = Some(status.clone());
    }

    fn nominated_node(&mut self, node: Sym, status: &Status) {
        self.current().nominated_node = Some((node, status.clone()));
    }

    fn batch_hint(&mut self, node: Sym, status: &Status) {
        self.current().batch_hint = Some((node, status.clone()));
    }

    fn filtered(&mut self, view: &FilterView<'_>) {
        let snapshot = view.snapshot();
        let n = snapshot.num_nodes();
        let mut verdicts: Vec<Option<Status>> = vec![None; n];
        for &pos in view.feasible {
            if let Some(v) = verdicts.get_mut(pos as usize) {
                *v = Some(Status::success());
            }
        }
        for (pos, st) in view.statuses.iter() {
            if let Some(v) = verdicts.get_mut(pos as usize) {
                *v = Some(st.clone());
            }
        }
        let narrowed = view.narrowed_to();
        let each = self.each_filter_plugin;
        let mut nodes = Vec::with_capacity(n);
        for (pos, info) in snapshot.iter().enumerate() {
            let visited = verdicts[pos].take();
            let narrowed_out = narrowed.is_some_and(|names| !names.contains(&info.name()));
            let filters = if each && !narrowed_out {
                view.filter_plugins().enumerate().map(|(i, name)| (name, view.run_filter_plugin(i, info))).collect()
            } else {
                Vec::new()
            };
            let (verdict, is_visited) = match visited {
                Some(st) => (st, true),
                None if narrowed_out => {
                    (view.statuses.absent.clone().unwrap_or_else(|| Status::error("narrowed out")), false)
                }
                None => (view.run_filters(info), false),
            };
            nodes.push(NodeRecord { node: info.name(), verdict, visited: is_visited, filters });
        }
        let feasible = view.feasible.iter().filter_map(|&p| snapshot.node_at(p as usize)).map(|i| i.name()).collect();
        let rec = self.current();
        rec.narrowed_to = narrowed.map(<[Sym]>::to_vec);
        rec.narrowed_by = if narrowed.is_some() { view.state().narrowed_by().to_vec() } else { Vec::new() };
        rec.nodes = nodes;
        rec.feasible = feasible;
    }

    fn raw_scores(&mut self, plugin: &'static str, raw: &[i64]) {
        self.current().scores.push(ScoreDetail {
            plugin,
            weight: 0,
            raw: raw.to_vec(),
            normalized: Vec::new(),
            weighted: Vec::new(),
        });
    }

    fn normalized_scores(&mut self, plugin: &'static str, weight: i64, normalized: &[i64]) {
        if let Some(d) = self.current().scores.iter_mut().rev().find(|d| d.plugin == plugin) {
            d.weight = weight;
            d.normalized = normalized.to_vec();
        }
    }

    fn scored(&mut self, nodes: &[&NodeInfo], table: &ScoreTable) {
        let rec = self.current();
        rec.scored = nodes.iter().map(|n| n.name()).collect();
        rec.totals = table.totals().to_vec();
        // Plugins that failed before weighting never reach the table.
        rec.scores.retain(|d| table.plugins.contains(&d.plugin));
        for (p, &name) in table.plugins.iter().enumerate() {
            if let Some(d) = rec.scores.iter_mut().find(|d| d.plugin == name) {
                d.weighted = (0..table.num_nodes).map(|i| table.score(p, i)).collect();
            }
        }
    }

    fn selected(&mut self, selection: &Selection<'_>) {
        let tied = selection.tied();
        self.current().selection = Some(SelectionRecord { node: selection.node, by: selection.by, tied });
    }

    fn wants_preemption_trace(&self) -> bool {
        true
    }

    fn post_filter(&mut self, outcome: &PostFilterView<'_>) {
        let (nominated, victims) = match outcome.result {
            Some(r) => match r.nominating {
                Nominating::Set(node) => (Some(node), r.victims.clone()),
                _ => (None, Vec::new()),
            },
            None => (None, Vec::new()),
        };
        self.current().post_filter = Some(PostFilterRecord {
            message: outcome.message.map(str::to_owned),
            nominated,
            victims,
            trace: outcome.trace.cloned(),
        });
    }

    fn scheduling_result(&mut self, result: Result<&ScheduleDecision, &ScheduleError>) {
        self.current().error = result.err().cloned();
    }

    fn extender_calls(&mut self, rows: &[ExtenderRow]) {
        self.current().extenders = rows.to_vec();
    }

    fn cycle_finished(&mut self, outcome: &CycleOutcome) {
        self.current().outcome = Some(outcome.clone());
    }
}
