//! How scores are combined: PreScore, each plugin's scores normalized, range-checked and
//! weighted into the cycle's `ScoreTable`, and the pick of a highest total.

use super::score_chunks::{score_in_chunks, ChunkScoring, SCORE_CHUNK};
use crate::api::Pod;
use crate::framework::feasible::Feasible;
use crate::framework::{CycleState, Profile, ScorePlugin, Status, MAX_NODE_SCORE, MIN_NODE_SCORE};
use crate::observer::{CycleObserver, NoObserver};
use crate::parallel::WorkerPool;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

/// Scores of one cycle: the totals, then each plugin's weighted, normalized scores, one row
/// of `num_nodes` after another (`score(p, i)` for plugin `p`, feasible node `i`).
#[derive(Default)]
pub struct ScoreTable {
    pub plugins: Vec<&'static str>,
    /// `num_nodes` totals, then a row of `num_nodes` per plugin of `plugins`.
    pub(super) rows: Vec<i64>,
    pub num_nodes: usize,
    /// When scored on the pool: each chunk's highest total, how many nodes have it, and the
    /// first of them (empty when the totals were not summed chunk by chunk).
    pub(super) best: Vec<ChunkBest>,
    pub(super) par: ChunkScoring,
}

/// A chunk's highest total, how many of its nodes have it, and the first of them.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ChunkBest {
    pub(super) max: i64,
    pub(super) ties: u32,
    pub(super) first: u32,
}

impl ChunkBest {
    /// Without a branch per node: the maximum, then how many have it, then where the first
    /// is (most chunks' best comes early, or ties many nodes).
    pub(super) fn of(totals: &[i64], lo: usize) -> ChunkBest {
        let max = totals.iter().fold(i64::MIN, |m, &t| m.max(t));
        let ties = totals.iter().fold(0u32, |n, &t| n + u32::from(t == max));
        let first = totals.iter().position(|&t| t == max).unwrap_or(0);
        ChunkBest { max, ties, first: (lo + first) as u32 }
    }
}

/// Normalizes `scores` (one plugin's, for every feasible node), checks the range, weighs
/// them in place and adds them to `totals` when given.
pub(super) fn finish_scores(
    plugin: &dyn ScorePlugin,
    weight: i64,
    state: &CycleState,
    pod: &Pod,
    scores: &mut [i64],
    totals: Option<&mut [i64]>,
) -> Result<(), Status> {
    let st = plugin.normalize(state, pod, scores);
    if !st.is_success() {
        return Err(st.with_plugin(plugin.name()));
    }
    check_range(plugin, scores)?;
    weigh(scores, weight, totals);
    Ok(())
}

fn check_range(plugin: &dyn ScorePlugin, scores: &[i64]) -> Result<(), Status> {
    if out_of_range(scores) {
        let s = scores.iter().find(|s| !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(*s)).copied().unwrap_or_default();
        return Err(Status::error(format!(
            "plugin {:?} returns an invalid score {s}, it should in the range of [0, 100] after normalizing",
            plugin.name()
        )));
    }
    Ok(())
}

/// Whether a normalized score lies outside `MIN_NODE_SCORE..=MAX_NODE_SCORE`. Branch-free
/// (no early exit): most cycles have no bad score to find.
pub(super) fn out_of_range(scores: &[i64]) -> bool {
    let span = (MAX_NODE_SCORE - MIN_NODE_SCORE) as u64;
    scores.iter().fold(false, |bad, &s| bad | (s.wrapping_sub(MIN_NODE_SCORE) as u64 > span))
}

/// `scores ×= weight` and `totals += scores` (when given).
fn weigh(scores: &mut [i64], weight: i64, totals: Option<&mut [i64]>) {
    if weight != 1 {
        scores.iter_mut().for_each(|s| *s *= weight);
    }
    if let Some(totals) = totals {
        totals.iter_mut().zip(scores.iter()).for_each(|(t, s)| *t += *s);
    }
}

impl ScoreTable {
    /// A table that scores on the pool from `min_nodes` feasible nodes, and chunk by chunk
    /// without one from as many, `chunk` nodes per claim (tests and measurements; by default
    /// the pool from `SCORE_POOL_MIN_NODES`, chunks from 1 node).
    pub fn scoring_on_pool_from(min_nodes: usize, chunk: usize) -> ScoreTable {
        let mut t = ScoreTable::default();
        t.par.min_nodes = min_nodes;
        t.par.inline_from = min_nodes;
        t.par.chunk = chunk.max(1);
        t
    }

    /// A table that scores plugin after plugin over all nodes, never chunk by chunk (the
    /// reference the chunked paths are tested against).
    pub fn plugin_by_plugin() -> ScoreTable {
        ScoreTable::scoring_on_pool_from(usize::MAX, SCORE_CHUNK)
    }

    /// Plugin `plugin`'s weighted, normalized score of feasible node `node`.
    pub fn score(&self, plugin: usize, node: usize) -> i64 {
        self.rows[(1 + plugin) * self.num_nodes + node]
    }

    /// Every plugin's weighted, normalized scores, one row of `num_nodes` after another.
    pub fn plugin_scores(&self) -> &[i64] {
        &self.rows[self.num_nodes.min(self.rows.len())..]
    }

    /// The weighted sum of the plugins' scores, per feasible node.
    pub fn totals(&self) -> &[i64] {
        &self.rows[..self.num_nodes.min(self.rows.len())]
    }

    /// The totals, to change (extenders add their priorities).
    pub fn totals_mut(&mut self) -> &mut [i64] {
        self.best.clear();
        let n = self.num_nodes.min(self.rows.len());
        &mut self.rows[..n]
    }

    /// The highest total, how many nodes have it and the first of them, from the chunks'
    /// best totals when scoring kept them (`None` otherwise).
    pub fn top(&self) -> Option<crate::framework::pick::Top> {
        let max = self.best.iter().map(|b| b.max).max()?;
        let (mut ties, mut first) = (0u64, usize::MAX);
        for b in self.best.iter().filter(|b| b.max == max) {
            ties += u64::from(b.ties);
            first = first.min(b.first as usize);
        }
        Some(crate::framework::pick::Top { max, ties, first })
    }

    /// The index of a highest total; ties broken as `pick::select_host` breaks them (the
    /// same draw, the same node), from the chunks' best totals when scoring kept them.
    pub fn select_host(&self, rng: &mut crate::util::rng::Rng) -> usize {
        let totals = self.totals();
        let Some(max) = self.best.iter().map(|b| b.max).max() else {
            return crate::framework::pick::select_host(totals, rng);
        };
        let ties: u64 = self.best.iter().filter(|b| b.max == max).map(|b| u64::from(b.ties)).sum();
        let mut k = if ties > 1 { rng.below(ties) } else { 0 };
        for b in self.best.iter().filter(|b| b.max == max) {
            if k >= u64::from(b.ties) {
                k -= u64::from(b.ties);
                continue;
            }
            for (i, &t) in totals.iter().enumerate().skip(b.first as usize) {
                if t == max {
                    if k == 0 {
                        return i;
                    }
                    k -= 1;
                }
            }
        }
        0
    }

    /// Empties the table for `n` nodes (`rows` keeps `1 + plugins` rows of old values, which
    /// the pool overwrites, when `plugins` is given).
    pub(super) fn start(&mut self, n: usize, plugins: Option<usize>) {
        self.plugins.clear();
        self.best.clear();
        self.num_nodes = n;
        match plugins {
            Some(p) => {
                let len = (1 + p) * n;
                if self.rows.len() < len {
                    self.rows.resize(len, 0);
                }
                self.rows.truncate(len);
            }
            None => {
                self.rows.clear();
                self.rows.resize(n, 0);
            }
        }
    }
}

/// PreScore, Score, NormalizeScore and weighting over `nodes`, into `table` (reused across
/// cycles). A plugin whose PreScore returned Skip is left out.
pub fn run_scoring(
    profile: &Profile,
    state: &mut CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    nodes: &[&NodeInfo],
    table: &mut ScoreTable,
) -> Result<(), Status> {
    run_scoring_observed(profile, state, pod, snapshot, &Feasible::nodes(nodes), None, table, &mut NoObserver)
}

/// `run_scoring` over the snapshot's nodes at `positions`: plugins that can score from the
/// snapshot's hot columns do (`ScorePlugin::score_columns`).
pub fn run_scoring_at(
    profile: &Profile,
    state: &mut CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    positions: &[u32],
    table: &mut ScoreTable,
) -> Result<(), Status> {
    run_scoring_observed(
        profile,
        state,
        pod,
        snapshot,
        &Feasible::at(snapshot, positions),
        None,
        table,
        &mut NoObserver,
    )
}

/// `run_scoring` over `nodes`, telling `obs` each plugin's raw and normalized scores and the
/// table. NodeInfos are looked up only for plugins that cannot score from the columns. When
/// nothing observes them, nodes given by position are scored chunk by chunk
/// (`score_in_chunks`), on `pool` from `SCORE_POOL_MIN_NODES` of them.
#[allow(clippy::too_many_arguments)]
pub fn run_scoring_observed<O: CycleObserver + ?Sized>(
    profile: &Profile,
    state: &mut CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    nodes: &Feasible<'_>,
    pool: Option<&WorkerPool>,
    table: &mut ScoreTable,
    obs: &mut O,
) -> Result<(), Status> {
    let observed = obs.observes();
    for p in &profile.pre_score {
        let st = p.pre_score(state, pod, snapshot, nodes);
        if st.is_skip() {
            state.skip_score.push(p.name());
        } else if !st.is_success() {
            return Err(st.with_plugin(p.name()));
        }
    }
    if let (Some(positions), false) = (nodes.positions(), observed) {
        let pool = pool.filter(|p| p.size() > 1 && positions.len() >= table.par.min_nodes);
        if (pool.is_some() || positions.len() >= table.par.inline_from)
            && score_in_chunks(profile, state, pod, snapshot, nodes, positions, pool, table)?
        {
            return Ok(());
        }
    }
    let positions = nodes.positions();
    let n = nodes.len();
    table.start(n, None);
    for ws in &profile.score {
        let plugin = &*ws.plugin;
        if state.skips_score(plugin.name()) {
            continue;
        }
        let start = table.rows.len();
        let from_columns = match positions {
            Some(p) => plugin
                .score_columns(state, pod, snapshot.columns(), p, snapshot, &mut table.rows)
                .map_err(|e| e.with_plugin(plugin.name()))?
                .into_scores(&mut table.rows, p.len()),
            None => false,
        };
        if !from_columns {
            plugin
                .score_nodes(state, pod, &nodes[..], snapshot, &mut table.rows)
                .map_err(|e| e.with_plugin(plugin.name()))?;
        }
        let (totals, scores) = table.rows.split_at_mut(n);
        let scores = &mut scores[start - n..];
        if observed {
            obs.raw_scores(plugin.name(), scores);
            let st = plugin.normalize(state, pod, scores);
            if !st.is_success() {
                return Err(st.with_plugin(plugin.name()));
            }
            obs.normalized_scores(plugin.name(), ws.weight, scores);
            check_range(plugin, scores)?;
            weigh(scores, ws.weight, Some(totals));
        } else {
            finish_scores(plugin, ws.weight, state, pod, scores, Some(totals))?;
        }
        table.plugins.push(plugin.name());
    }
    if observed {
        obs.scored(&nodes[..], table);
    }
    Ok(())
}
