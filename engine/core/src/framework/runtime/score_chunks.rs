//! Scoring chunk by chunk (on the worker pool from `SCORE_POOL_MIN_NODES` feasible nodes):
//! plugins score from the snapshot's columns, kept scores are reused, and what needs no other
//! chunk is finished in the chunk.

use smallvec::SmallVec;

use super::score_table::{finish_scores, out_of_range, ChunkBest, ScoreTable};
use crate::api::Pod;
use crate::framework::feasible::Feasible;
use crate::framework::profile::WeightedScore;
use crate::framework::score_memo::MemoView;
use crate::framework::{ColumnScoring, CycleState, Normalizing, Profile, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::parallel::chunks::{ChunkBuffers, ChunkSlots};
use crate::parallel::WorkerPool;
use crate::snapshot::{Columns, Snapshot};

/// Scoring chunk by chunk: per-worker buffers, from how many nodes it runs on the pool, from
/// how many on the caller alone (the serial path below that), and in chunks of how many.
pub(super) struct ChunkScoring {
    pub(super) bufs: ChunkBuffers<ColumnScores>,
    pub(super) min_nodes: usize,
    pub(super) inline_from: usize,
    pub(super) chunk: usize,
}

impl Default for ChunkScoring {
    fn default() -> Self {
        ChunkScoring {
            bufs: ChunkBuffers::default(),
            min_nodes: SCORE_POOL_MIN_NODES,
            inline_from: 0,
            chunk: SCORE_CHUNK,
        }
    }
}

/// Scoring runs on the pool from this many feasible nodes: below it, one worker scores them
/// faster than waking another (perf/RESULTS.md, issue 18).
pub const SCORE_POOL_MIN_NODES: usize = 2000;
/// Feasible nodes per chunk a worker claims when scoring on the pool.
pub(super) const SCORE_CHUNK: usize = 256;

/// One worker's part of scoring on the pool: the plugins that could not score one of its
/// chunks from the columns, the plugins with a raw score other than 0 in one, whether a score that
/// needs no normalizing was out of range, the first error, and for each chunk its best
/// total and the plugins (bit k for plugin k) whose raw scores there were all 0.
#[derive(Default)]
pub(super) struct ColumnScores {
    scratch: Vec<i64>,
    declined: Vec<bool>,
    nonzero: Vec<bool>,
    out_of_range: bool,
    error: Option<Status>,
    best: Vec<(u32, ChunkBest, u64)>,
    /// The chunk's rows' stamps (read once per chunk, when a plugin's scores are kept).
    stamps: Vec<u64>,
    /// Nodes whose kept score is stale: their index in the chunk, position, row's stamp and
    /// new score.
    miss_at: Vec<u32>,
    miss_positions: Vec<u32>,
    miss_stamps: Vec<u64>,
    miss_scores: Vec<i64>,
    /// Scores computed anew, to keep: (plan index, position, stamp, score).
    misses: Vec<(u32, u32, u64, i64)>,
}

/// A scoring plugin of the cycle as the pool runs it: what its normalize does, its weight.
type Planned<'a> = (&'a dyn ScorePlugin, Normalizing, i64);

impl ColumnScores {
    fn reset(&mut self, plugins: usize) {
        self.declined.clear();
        self.declined.resize(plugins, false);
        self.nonzero.clear();
        self.nonzero.resize(plugins, false);
        self.out_of_range = false;
        self.error = None;
        self.best.clear();
        self.misses.clear();
    }

    /// For plugin `k` whose normalize changes nothing: its kept scores, weighed, into its
    /// row of the chunk and added to the totals in one pass; `score_columns` for the rows
    /// whose stamp moved on (recorded in `misses`). Kept scores were in range when kept.
    /// Returns what `score_columns` returns; declined, the totals hold some of the plugin's
    /// scores and the caller sums them again.
    #[allow(clippy::too_many_arguments)]
    fn memo_weighed(
        &mut self,
        k: usize,
        (plugin, weight): (&dyn ScorePlugin, i64),
        memo: MemoView<'_>,
        state: &CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        positions: &[u32],
        slots: &mut ChunkSlots<'_, i64>,
    ) -> Result<bool, Status> {
        self.miss_at.clear();
        self.miss_positions.clear();
        self.miss_stamps.clear();
        let (totals, row) = slots.two_rows(0, 1 + k);
        if !Columns::dense(positions) {
            if self.stamps.len() != positions.len() {
                self.stamps.clear();
                snapshot.columns().stamps_into(positions, &mut self.stamps);
            }
            for (i, ((&p, &stamp), (t, r))) in
                positions.iter().zip(&self.stamps).zip(totals.iter_mut().zip(row.iter_mut())).enumerate()
            {
                match memo.get(p as usize, stamp) {
                    Some(kept) => {
                        *r = kept * weight;
                        *t += *r;
                    }
                    None => {
                        self.miss_at.push(i as u32);
                        self.miss_positions.push(p);
                        self.miss_stamps.push(stamp);
                    }
                }
            }
        } else {
            // A span's positions are consecutive, so are their kept scores and the chunk's
            // stamps: the kept scores are weighed in, and their stamps checked against the
            // rows', in one pass that vectorizes. A span where some stamp moved on (few,
            // after a workload's first cycles) takes those nodes' scores back out.
            let mut at = 0;
            for (chunk, first, len) in snapshot.columns().spans(positions) {
                let span = at..at + len;
                let kept = memo.run(positions[at] as usize, len);
                let stamps = &chunk.stamp[first..first + len];
                let (totals, row) = (&mut totals[span.clone()], &mut row[span]);
                let held = if weight == 1 {
                    weigh_kept(kept, stamps, row, totals, |s| s)
                } else {
                    weigh_kept(kept, stamps, row, totals, |s| s * weight)
                };
                if !held {
                    for (i, ((t, r), (&(kept, _), &now))) in
                        totals.iter_mut().zip(row.iter()).zip(kept.iter().zip(stamps)).enumerate()
                    {
                        if kept != now {
                            *t -= *r;
                            self.miss_at.push((at + i) as u32);
                            self.miss_positions.push(positions[at + i]);
                            self.miss_stamps.push(now);
                        }
                    }
                }
                at += len;
            }
        }
        if self.miss_positions.is_empty() {
            return Ok(true);
        }
        self.miss_scores.clear();
        let n = self.miss_positions.len();
        let columns = plugin.score_columns(
            state,
            pod,
            snapshot.columns(),
            &self.miss_positions,
            snapshot,
            &mut self.miss_scores,
        )?;
        if !columns.into_scores(&mut self.miss_scores, n) {
            return Ok(false);
        }
        if self.miss_scores.len() != self.miss_positions.len() {
            let e = format!("{} scores for {} nodes", self.miss_scores.len(), self.miss_positions.len());
            return Err(Status::error(e));
        }
        self.out_of_range |= out_of_range(&self.miss_scores);
        let misses = self.miss_at.iter().zip(&self.miss_positions).zip(&self.miss_stamps).zip(&self.miss_scores);
        for (((&i, &p), &stamp), &score) in misses {
            let i = i as usize;
            row[i] = score * weight;
            totals[i] += row[i];
            self.misses.push((k as u32, p, stamp, score));
        }
        Ok(true)
    }

    /// Scores one chunk with every plugin that reads the columns, into the chunk's columns of
    /// the table's rows (row 0 the totals, row 1 + k plugin k). A plugin whose normalize
    /// leaves scores as they are is weighted and added to the totals here, and so are by-max
    /// scores that are all 0 in the chunk; the others' raw scores wait for the whole cycle's.
    #[allow(clippy::too_many_arguments)]
    fn score_chunk(
        &mut self,
        plan: &[Planned<'_>],
        memos: &[Option<MemoView<'_>>],
        state: &CycleState,
        pod: &Pod,
        snapshot: &Snapshot,
        positions: &[u32],
        slots: &mut ChunkSlots<'_, i64>,
    ) {
        if self.error.is_some() {
            return;
        }
        let (lo, hi) = (slots.lo(), slots.hi());
        let positions = &positions[lo..hi];
        slots.row(0).fill(0);
        self.stamps.clear();
        let mut zeros = 0u64;
        for (k, &(plugin, normalizing, weight)) in plan.iter().enumerate() {
            if self.declined[k] {
                continue;
            }
            let memo = memos.get(k).copied().flatten();
            if let (Some(memo), Normalizing::Unchanged) = (memo, normalizing) {
                match self.memo_weighed(k, (plugin, weight), memo, state, pod, snapshot, positions, slots) {
                    Ok(true) => {}
                    Ok(false) => self.declined[k] = true,
                    Err(e) => {
                        self.error = Some(e.with_plugin(plugin.name()));
                        return;
                    }
                }
                continue;
            }
            self.scratch.clear();
            match plugin.score_columns(state, pod, snapshot.columns(), positions, snapshot, &mut self.scratch) {
                Ok(ColumnScoring::Scored) if self.scratch.len() == positions.len() => {}
                Ok(ColumnScoring::AllZero) if self.scratch.is_empty() => {
                    // Unchanged they add nothing, by max they normalize to one value (taken as
                    // final, as below), and whole they wait as zeros.
                    match normalizing {
                        Normalizing::ByMax { reverse } if k < 64 => zeros |= zeros_by_max(slots, k, reverse, weight),
                        _ => slots.row(1 + k).fill(0),
                    }
                    continue;
                }
                Ok(ColumnScoring::Scored | ColumnScoring::AllZero) => {
                    let e = format!("{} scores for {} nodes", self.scratch.len(), positions.len());
                    self.error = Some(Status::error(e).with_plugin(plugin.name()));
                    return;
                }
                Ok(ColumnScoring::Declined) => {
                    self.declined[k] = true;
                    continue;
                }
                Err(e) => {
                    self.error = Some(e.with_plugin(plugin.name()));
                    return;
                }
            }
            let scores = &self.scratch[..];
            match normalizing {
                Normalizing::Unchanged => {
                    self.out_of_range |= out_of_range(scores);
                    let (totals, row) = slots.two_rows(0, 1 + k);
                    weigh_and_add(scores, weight, row, totals);
                }
                Normalizing::ByMax { reverse } => {
                    let nonzero = scores.iter().fold(false, |any, &s| any | (s != 0));
                    self.nonzero[k] |= nonzero;
                    if !nonzero && k < 64 {
                        zeros |= zeros_by_max(slots, k, reverse, weight);
                    } else {
                        slots.row(1 + k).copy_from_slice(scores);
                    }
                }
                Normalizing::Whole => slots.row(1 + k).copy_from_slice(scores),
            }
        }
        self.best.push((slots.chunk() as u32, ChunkBest::of(slots.row(0), lo), zeros));
    }
}
/// Plugin `k`'s raw scores in the chunk are all 0, and it normalizes by max: normalized they
/// are one value (most cycles: no node has what the plugin counts), taken as final here,
/// weighed into its row and added to the totals; the caller undoes it if another chunk's
/// scores were not all 0. Returns the chunk's bit for plugin `k` (`k < 64`).
fn zeros_by_max(slots: &mut ChunkSlots<'_, i64>, k: usize, reverse: bool, weight: i64) -> u64 {
    let (totals, row) = slots.two_rows(0, 1 + k);
    let v = if reverse { MAX_NODE_SCORE * weight } else { 0 };
    row.fill(v);
    if v != 0 {
        totals.iter_mut().for_each(|t| *t += v);
    }
    1 << k
}

/// `row = weigh(kept score)`, `totals += row`, for a span of kept scores; whether every kept
/// stamp equals the row's stamp now. One pass without a branch (weight 1 without a multiply,
/// which does not vectorize on baseline x86-64).
#[inline]
fn weigh_kept(
    kept: &[(u64, i64)],
    stamps: &[u64],
    row: &mut [i64],
    totals: &mut [i64],
    weigh: impl Fn(i64) -> i64,
) -> bool {
    // All four cut to one length first: the indexed loop then has no bounds check, and it
    // vectorizes whatever the caller inlines it into (a four-way `zip` did in some builds
    // and not in others: +6% instructions in scoring between two builds of the same code).
    let n = totals.len().min(row.len()).min(kept.len()).min(stamps.len());
    let (totals, row, kept, stamps) = (&mut totals[..n], &mut row[..n], &kept[..n], &stamps[..n]);
    let mut held = true;
    for i in 0..n {
        let (was, score) = kept[i];
        let w = weigh(score);
        row[i] = w;
        totals[i] += w;
        held &= was == stamps[i];
    }
    held
}

/// `row = scores × weight`, `totals += row`. Most weights are 1: no 64-bit multiply then (it
/// does not vectorize on baseline x86-64).
fn weigh_and_add(scores: &[i64], weight: i64, row: &mut [i64], totals: &mut [i64]) {
    if weight == 1 {
        for ((t, r), &s) in totals.iter_mut().zip(row.iter_mut()).zip(scores) {
            *r = s;
            *t += s;
        }
    } else {
        for ((t, r), &s) in totals.iter_mut().zip(row.iter_mut()).zip(scores) {
            *r = s * weight;
            *t += *r;
        }
    }
}

/// Scores `positions` chunk by chunk, on `pool` when given: each plugin that reads the columns scores
/// the chunk, and what needs no other chunk is finished there: scores whose normalize
/// changes nothing are weighted and added to the totals, a chunk whose by-max scores are all
/// 0 takes their normalized value (0, or the maximum when reversed) as final, and each chunk
/// keeps its best total. The rest follows here, over whole rows: a plugin that declined some
/// chunk scores every node node by node, by-max scores with a non-zero one somewhere get
/// their zeros back, and normalizes run. The chunks' best totals are kept when nothing here
/// changed the totals. Returns false, with the table to be filled again, when a plugin
/// failed or a score was out of range: the plugin-by-plugin path then reports it as it
/// always does.
#[allow(clippy::too_many_arguments)]
pub(super) fn score_in_chunks(
    profile: &Profile,
    state: &CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    nodes: &Feasible<'_>,
    positions: &[u32],
    pool: Option<&WorkerPool>,
    table: &mut ScoreTable,
) -> Result<bool, Status> {
    let scoring: SmallVec<[&WeightedScore; 16]> =
        profile.score.iter().filter(|ws| !state.skips_score(ws.plugin.name())).collect();
    let plan: SmallVec<[Planned<'_>; 16]> =
        scoring.iter().map(|ws| (&*ws.plugin, ws.plugin.normalizing(), ws.weight)).collect();
    // The kept scores of the plugins that say what their scores depend on and whose
    // normalize leaves them as they are.
    let mut memo = profile.score_memo.try_lock();
    let memo_slots: SmallVec<[Option<usize>; 16]> = scoring
        .iter()
        .map(|ws| {
            if ws.plugin.normalizing() != Normalizing::Unchanged {
                return None;
            }
            let key = ws.plugin.memo_key(pod)?;
            Some(memo.as_mut()?.slot(&ws.plugin, pod, key, snapshot.columns().len()))
        })
        .collect();
    let n = positions.len();
    table.start(n, Some(plan.len()));
    let ChunkScoring { bufs, chunk, .. } = &mut table.par;
    let workers = pool.map_or(1, WorkerPool::size);
    {
        let views: SmallVec<[Option<MemoView<'_>>; 16]> =
            memo_slots.iter().map(|slot| Some(memo.as_ref()?.view((*slot)?))).collect();
        let (plan_ref, views) = (&plan[..], &views[..]);
        bufs.for_chunks_into(
            pool,
            n,
            *chunk,
            &mut table.rows,
            1 + plan.len(),
            |b| b.reset(plan_ref.len()),
            |b, slots| b.score_chunk(plan_ref, views, state, pod, snapshot, positions, slots),
        );
    }
    // An error or a score out of range: the plugin-by-plugin path reports the one it meets
    // first, as it always does (chunks meet them in another order).
    if (0..workers).any(|w| bufs.buf(w).error.is_some() || bufs.buf(w).out_of_range) {
        return Ok(false);
    }
    if let Some(memo) = memo.as_mut() {
        for w in 0..workers {
            for &(k, p, stamp, score) in &bufs.buf(w).misses {
                if let Some(slot) = memo_slots[k as usize] {
                    memo.record(slot, p as usize, stamp, score);
                }
            }
        }
    }
    drop(memo);
    // The chunks' best totals hold while the scores added later are one value for all.
    let mut keep_best = true;
    // Some chunks' scores went into the totals and must come out again: the totals are
    // summed again from the rows at the end.
    let mut resum = false;
    for (k, &(plugin, normalizing, weight)) in plan.iter().enumerate() {
        table.plugins.push(plugin.name());
        let declined = (0..workers).any(|w| bufs.buf(w).declined[k]);
        let nonzero = (0..workers).any(|w| bufs.buf(w).nonzero[k]);
        let row = &mut table.rows[(1 + k) * n..(2 + k) * n];
        if declined {
            keep_best = false;
            resum |= normalizing != Normalizing::Whole;
            let mut scores = std::mem::take(&mut bufs.buf(0).scratch);
            scores.clear();
            plugin
                .score_nodes(state, pod, &nodes[..], snapshot, &mut scores)
                .map_err(|e| e.with_plugin(plugin.name()))?;
            if scores.len() != n {
                let e = format!("{} scores for {n} nodes", scores.len());
                return Err(Status::error(e).with_plugin(plugin.name()));
            }
            row.copy_from_slice(&scores);
            bufs.buf(0).scratch = scores;
        } else {
            match normalizing {
                Normalizing::Unchanged => continue,
                // Every chunk took its all-0 raw scores as final, rightly.
                Normalizing::ByMax { .. } if !nonzero && k < 64 => continue,
                Normalizing::ByMax { .. } => {
                    // Chunks that took their zeros as final get them back.
                    keep_best = false;
                    resum = true;
                    for w in 0..workers {
                        for &(c, _, zeros) in &bufs.buf(w).best {
                            if k < 64 && zeros & (1 << k) != 0 {
                                let lo = c as usize * *chunk;
                                row[lo..(lo + *chunk).min(n)].fill(0);
                            }
                        }
                    }
                }
                Normalizing::Whole => keep_best = false,
            }
        }
        let (totals, rest) = table.rows.split_at_mut(n);
        let row = &mut rest[k * n..(k + 1) * n];
        finish_scores(plugin, weight, state, pod, row, (!resum).then_some(totals))?;
    }
    let (totals, rows) = table.rows.split_at_mut(n);
    if resum {
        totals.fill(0);
        for row in rows.chunks_exact(n) {
            totals.iter_mut().zip(row).for_each(|(t, s)| *t += *s);
        }
    }
    if keep_best {
        table.best.resize(n.div_ceil(*chunk), ChunkBest::default());
        for w in 0..workers {
            for &(c, b, _) in &bufs.buf(w).best {
                table.best[c as usize] = b;
            }
        }
    }
    Ok(true)
}
