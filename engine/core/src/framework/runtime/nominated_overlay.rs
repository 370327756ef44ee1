//! Filtering a node with the nominated pods overlaid: the two passes (with the nominated pods
//! placed on a copy of the node, then without them) and what a cycle needs to run them.

use std::sync::Arc;

use super::filters::{run_filters, run_filters_hot, run_filters_on_tally};
use super::nominated_pods::NominatedPods;
use crate::api::Pod;
use crate::framework::{CycleState, FilterPlugin, PreFilterPlugin, Profile, Status, Verdict};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{HotRef, HotTally, LooseRow, Snapshot};

std::thread_local! {
    /// Each filter worker's copy of the node being checked with its nominated pods, reused
    /// from node to node so the copy reuses its buffers.
    static WITH_NOMINATED: std::cell::RefCell<Option<NodeInfo>> = const { std::cell::RefCell::new(None) };
    /// Each filter worker's scratch row for `run_filters_on_tally`.
    static LOOSE_ROW: std::cell::RefCell<LooseRow> = std::cell::RefCell::new(LooseRow::default());
}

/// Filters one node the way a cycle does when pods are nominated: first with the nominated
/// pods (of priority ≥ the pod's) placed on a copy of the node and added to a copy of the
/// cycle state, then, if that passed and any were added, on the node as it is. The node fits
/// only when both passes do: the pod must fit beside the nominated pods (they will get the
/// room preemption made for them), and must not rely on them (they may never arrive, and its
/// pod affinity may not lean on them).
pub fn run_filters_with_nominated(
    overlay: &Overlay<'_>,
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &NodeInfo,
    nominated: &NominatedPods,
    snapshot: &Snapshot,
) -> Status {
    nominated_verdict(overlay, filters, state, pod, node, nominated, snapshot).into_status()
}

/// `run_filters_with_nominated`, a failure judged from rows left in brief.
fn nominated_verdict(
    overlay: &Overlay<'_>,
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &NodeInfo,
    nominated: &NominatedPods,
    snapshot: &Snapshot,
) -> Verdict {
    let pods = nominated.on(node.name());
    if pods.is_empty() {
        return run_filters(filters, state, pod, node).into();
    }
    if overlay.aggregates_only {
        // Judged from rows where the filters can: no copy of the node at all.
        let tally = HotTally::of(node);
        let delta = nominated.delta_on(node.name());
        if let Some(v) =
            LOOSE_ROW.with(|cell| run_filters_on_tally(filters, state, pod, &tally, delta, &mut cell.borrow_mut()))
        {
            return v;
        }
    }
    let first = WITH_NOMINATED.with(|cell| {
        let mut slot = cell.borrow_mut();
        let copy = slot.get_or_insert_with(|| NodeInfo::new(Arc::clone(node.node_arc())));
        if overlay.aggregates_only {
            copy.clone_aggregates_from(node);
            for p in pods {
                copy.add_to_aggregates(p);
            }
            return run_filters(filters, state, pod, copy);
        }
        copy.clone_from(node);
        first_pass(&overlay.extensions, filters, state, pod, copy, pods, snapshot)
    });
    if !first.is_success() {
        return Verdict::Full(first);
    }
    // The second pass reads the snapshot's node itself: nothing to take off a copy.
    run_filters(filters, state, pod, node).into()
}

/// The filter pass's verdict on the snapshot node at `pos`, whose row in the snapshot's hot
/// columns is `hot` (`mark_positions` done): `run_filters_hot` on a node without nominated
/// pods; on one with, the two passes judged from its row plus what they add when the filters
/// can, reading neither the node nor the pods, else `run_filters_with_nominated`.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn run_filters_at(
    overlay: &Overlay<'_>,
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &NodeInfo,
    pos: usize,
    hot: HotRef<'_>,
    nominated: &NominatedPods,
    snapshot: &Snapshot,
) -> Verdict {
    let Some(delta) = nominated.delta_at_marked(pos) else {
        return run_filters_hot(filters, state, pod, node, hot);
    };
    if overlay.aggregates_only {
        let tally = HotTally::of_row(hot.row());
        let judged = LOOSE_ROW
            .with(|cell| run_filters_on_tally(filters, state, pod, &tally, Some(delta), &mut cell.borrow_mut()));
        if let Some(v) = judged {
            return v;
        }
    }
    nominated_verdict(overlay, filters, state, pod, node, nominated, snapshot)
}

/// What the two-pass filter needs to know once per cycle: the PreFilter extensions to tell of
/// nominated pods, and whether the nominated pods can go into a copy of the aggregates alone
/// (no extension is active and no active filter reads `node.pods()`), which copies no pods.
pub struct Overlay<'a> {
    /// A `Vec` (allocating only when some extension is active) rather than a SmallVec, which
    /// would make `Overlay` invariant in `'a`.
    pub extensions: Vec<&'a dyn PreFilterPlugin>,
    pub aggregates_only: bool,
}

impl<'a> Overlay<'a> {
    /// For a cycle whose PreFilter left `state`, filtering with `filters` (or any subset).
    pub fn new(profile: &'a Profile, state: &CycleState, filters: &[&dyn FilterPlugin]) -> Overlay<'a> {
        // The PreFilter plugins whose `add_pod` / `remove_pod` must follow pods added to or
        // removed from a node this cycle (those with extensions PreFilter did not skip).
        let extensions: Vec<&dyn PreFilterPlugin> = profile
            .pre_filter
            .iter()
            .filter(|e| e.has_extensions() && !state.skips_filter(e.name()))
            .map(|e| &**e)
            .collect();
        let aggregates_only = extensions.is_empty() && filters.iter().all(|f| !f.reads_pods());
        Overlay { extensions, aggregates_only }
    }
}

/// `run_filters_with_nominated` on a node the caller owns (preemption's dry-run copy, or the
/// worker's copy of a snapshot node): the nominated pods are added to it for the first pass
/// and taken off again (leaving the pods in their order), so nothing is copied but the cycle
/// state, and that only when a PreFilter extension is active.
pub fn run_filters_with_nominated_mut(
    overlay: &Overlay<'_>,
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    node: &mut NodeInfo,
    nominated: &NominatedPods,
    snapshot: &Snapshot,
) -> Status {
    let pods = nominated.on(node.name());
    if pods.is_empty() {
        return run_filters(filters, state, pod, node);
    }
    let first = if overlay.aggregates_only {
        for p in pods {
            node.add_to_aggregates(p);
        }
        let st = run_filters(filters, state, pod, node);
        for p in pods {
            node.sub_aggregates(p);
        }
        st
    } else {
        let st = first_pass(&overlay.extensions, filters, state, pod, node, pods, snapshot);
        for p in pods.iter().rev() {
            node.remove_pod(&p.uid);
        }
        st
    };
    if !first.is_success() {
        return first;
    }
    run_filters(filters, state, pod, node)
}

/// Adds `pods` to `with` (and to a copy of the state, through the PreFilter extensions) and
/// runs the filters there.
fn first_pass(
    extensions: &[&dyn PreFilterPlugin],
    filters: &[&dyn FilterPlugin],
    state: &CycleState,
    pod: &Pod,
    with: &mut NodeInfo,
    pods: &[Pod],
    snapshot: &Snapshot,
) -> Status {
    let name = with.name();
    // The state is copied only when a PreFilter extension will change it.
    let mut with_state = (!extensions.is_empty()).then(|| state.clone());
    let mut status = None;
    for (i, p) in pods.iter().enumerate() {
        with.add_pod(p.with_node(name));
        if let Some(ws) = with_state.as_mut() {
            for ext in extensions {
                let st = ext.add_pod(ws, pod, p, with, snapshot);
                if !st.is_success() {
                    status = Some(st.with_plugin(ext.name()));
                    break;
                }
            }
        }
        if status.is_some() {
            // Add the rest too: callers take every one of `pods` off again.
            for q in pods[i + 1..].iter() {
                with.add_pod(q.with_node(name));
            }
            break;
        }
    }
    status.unwrap_or_else(|| run_filters(filters, with_state.as_ref().unwrap_or(state), pod, with))
}
