//! The filter chain on one node: on its NodeInfo, on its row of the snapshot's hot columns, or
//! on a row alone (the first failing plugin decides).

use smallvec::SmallVec;

use crate::api::Pod;
use crate::framework::{CycleState, FilterPlugin, Profile, RowVerdict, Status, Verdict};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{HotRef, HotTally, LooseRow, PodsDelta};

/// The filter plugins that run this cycle (PreFilter may have skipped some).
pub type ActiveFilters<'a> = SmallVec<[&'a dyn FilterPlugin; 16]>;

pub fn active_filters<'a>(profile: &'a Profile, state: &CycleState) -> ActiveFilters<'a> {
    profile.filter.iter().filter(|f| !state.skips_filter(f.name())).map(|f| &**f).collect()
}

/// Runs the filter chain on one node; the first failing plugin's status is returned.
#[inline]
pub fn run_filters(filters: &[&dyn FilterPlugin], state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
    for f in filters {
        let st = f.filter(state, pod, node);
        if !st.is_success() {
            return st.with_plugin(f.name());
        }
    }
    Status::success()
}

/// `run_filters` on a snapshot node whose row in the snapshot's hot columns is `hot`: each
/// plugin that can judge from the row does, the others read the NodeInfo. Same verdict.
#[inline]
pub fn run_filters_hot(
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &NodeInfo,
    hot: HotRef<'_>,
) -> Verdict {
    for f in filters {
        match f.filter_hot(state, pod, hot) {
            RowVerdict::Pass => {}
            RowVerdict::Fail(fail) => return Verdict::Brief(f.name(), fail),
            RowVerdict::NeedsNode => {
                let st = f.filter(state, pod, node);
                if !st.is_success() {
                    return Verdict::Full(st.with_plugin(f.name()));
                }
            }
        }
    }
    Verdict::Pass
}

/// `run_filters` judged from a row alone: `None` as soon as a filter cannot judge from it
/// (it needs the NodeInfo), else the verdict `run_filters` gives on a NodeInfo with that row
/// (never `Verdict::Full`).
#[inline]
pub fn run_filters_on_row(
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    hot: HotRef<'_>,
) -> Option<Verdict> {
    for f in filters {
        match f.filter_hot(state, pod, hot) {
            RowVerdict::Pass => {}
            RowVerdict::Fail(fail) => return Some(Verdict::Brief(f.name(), fail)),
            RowVerdict::NeedsNode => return None,
        }
    }
    Some(Verdict::Pass)
}

/// `run_filters_with_nominated_mut`'s verdict for a node whose aggregates `tally` holds, with
/// `nominated` what the pods nominated to it add, judged from rows alone (`row` is the
/// scratch they are read from): only for `Overlay::aggregates_only` cycles. `None` when a
/// filter cannot judge from a row.
pub fn run_filters_on_tally(
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    tally: &HotTally,
    nominated: Option<&PodsDelta>,
    row: &mut LooseRow,
) -> Option<Verdict> {
    if let Some(delta) = nominated {
        let mut with = *tally;
        with.add(delta);
        let first = run_filters_on_row(filters, state, pod, row.set(&with.row()))?;
        if !first.is_success() {
            return Some(first);
        }
    }
    run_filters_on_row(filters, state, pod, row.set(&tally.row()))
}
