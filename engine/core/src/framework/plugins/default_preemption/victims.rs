//! The dry run on one node (upstream's SelectVictimsOnNode): which pods must go for the
//! preemptor to fit, keeping as many as possible.
//!
//! On a copy of the node every pod of lower priority is removed (with the PreFilter
//! extensions told, so pod affinity and topology spread counts follow). If the pod still does
//! not fit, the node is out. Otherwise the removed pods are put back one at a time, most
//! important first — those whose eviction would break a PodDisruptionBudget before the others
//! — and each stays if the pod still fits beside it ("reprieved"); the rest are the victims.

use std::cmp::Ordering as CmpOrdering;

use crate::api::{Pod, PodDisruptionBudget};
pub use crate::framework::preemption::{Candidate, Victims};
use crate::framework::runtime::{run_filters_on_tally, run_filters_with_nominated_mut, NominatedPods, Overlay};
use crate::framework::{Code, CycleState, FilterPlugin, PreFilterPlugin, RowFail, Status, Verdict};
use crate::snapshot::columns::Below;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::pvec::Version;
use crate::snapshot::{HotTally, LooseRow, PVec, PodsDelta, Snapshot};
use std::sync::{Arc, Weak};

use super::pick::PickKey;
use super::REASON_NO_VICTIMS;

/// What the dry run reads, shared by every node it tries.
pub struct DryRun<'a> {
    pub filters: &'a [&'a dyn FilterPlugin],
    /// Those of `filters` whose row verdict follows the node's pods (`following_pods`): a
    /// row trial every filter passed asks only these again after putting a pod back.
    pub following: &'a [&'a dyn FilterPlugin],
    /// The cycle's two-pass filter overlay; its extensions are told of every pod taken off
    /// or put back.
    pub overlay: &'a Overlay<'a>,
    /// The cycle state after PreFilter (copied before the extensions change it).
    pub state: &'a CycleState,
    pub pod: &'a Pod,
    pub snapshot: &'a Snapshot,
    pub nominated: &'a NominatedPods,
    pub pdbs: &'a [PodDisruptionBudget],
}

/// Those of `filters` whose verdict on a row can change as pods are put back on it
/// (`FilterPlugin::row_follows_pods`), in order: `DryRun::following`.
pub fn following_pods<'a>(filters: &[&'a dyn FilterPlugin]) -> Vec<&'a dyn FilterPlugin> {
    filters.iter().copied().filter(|f| f.row_follows_pods()).collect()
}

/// A candidate as the dry run finds it: the node's position, its victims named by their
/// place in the node's pod list, and what the pick reads of them (`PickKey`), so that only
/// the picked candidate's victims are copied out of the node (`candidate`).
#[derive(Clone, Debug)]
pub struct Found {
    pub pos: u32,
    pub num_pdb_violations: usize,
    pub key: PickKey,
    victims: FoundVictims,
}

/// The victims, most important first.
#[derive(Clone, Debug)]
enum FoundVictims {
    /// Indices in the node's pod list.
    At(smallvec::SmallVec<[u32; 4]>),
    /// Copies (the dry run on a full copy of the node).
    Pods(Vec<Pod>),
}

impl Found {
    /// The candidate with its victims copied out of `node` (the node at `pos`).
    pub fn candidate_on(&self, node: &NodeInfo) -> Candidate {
        let pods = match &self.victims {
            FoundVictims::At(at) => at.iter().map(|&i| PodsAt::Node(node.pods()).get(i).clone()).collect(),
            FoundVictims::Pods(p) => p.clone(),
        };
        Candidate { node: node.name(), victims: Victims { pods, num_pdb_violations: self.num_pdb_violations } }
    }

    /// The same, found at position `pos` (the dry run on a node finds it at 0).
    fn at(self, pos: usize) -> Found {
        Found { pos: pos as u32, ..self }
    }

    /// The candidate, from the snapshot the dry run ran on.
    pub fn candidate(&self, snapshot: &Snapshot) -> Candidate {
        self.candidate_on(snapshot.node_at(self.pos as usize).expect("a found node is in its snapshot"))
    }
}

/// Reused across the nodes one worker tries, so a dry run allocates only for its result.
#[derive(Default)]
pub struct Scratch {
    potential: Vec<Pod>,
    /// Positions in the sorted lower-priority pods.
    violating: Vec<u32>,
    clean: Vec<u32>,
    /// The aggregates-only copy of the node being tried (see `select_victims`), reused from
    /// node to node.
    aggregates: Option<NodeInfo>,
    /// Where the row-only trial's rows are read from.
    row: LooseRow,
    /// Each node's pods as the dry run reads them, kept from cycle to cycle (`Briefs`).
    briefs: Briefs,
}

/// Upstream's MoreImportantPod: higher priority first, then the earlier start (a pod that
/// has not started counts as starting now, after every pod that has).
pub fn more_important(a: &Pod, b: &Pod) -> CmpOrdering {
    b.priority.cmp(&a.priority).then_with(|| start_key(a).cmp(&start_key(b)))
}

pub(super) fn start_key(p: &Pod) -> u64 {
    p.start_time.map_or(u64::MAX, |t| t.0)
}

/// Whether evicting `pods` (in this order) breaks a PodDisruptionBudget, pod by pod: each
/// matching budget's allowance is spent in turn (pods the budget already counts as disrupted
/// spend nothing), and a pod that takes any budget below zero violates it. Returns the
/// violating and the other pods, each in their original order.
pub fn split_by_pdb(pods: &[Pod], pdbs: &[PodDisruptionBudget], violating: &mut Vec<Pod>, clean: &mut Vec<Pod>) {
    let (mut v, mut c) = (Vec::new(), Vec::new());
    split_indices_by_pdb(pods.iter(), pdbs, &mut v, &mut c);
    violating.clear();
    clean.clear();
    violating.extend(v.iter().map(|&i| pods[i as usize].clone()));
    clean.extend(c.iter().map(|&i| pods[i as usize].clone()));
}

/// `split_by_pdb` by index: the positions in `pods` of the violating and of the other pods.
fn split_indices_by_pdb<'p>(
    pods: impl Iterator<Item = &'p Pod>,
    pdbs: &[PodDisruptionBudget],
    violating: &mut Vec<u32>,
    clean: &mut Vec<u32>,
) {
    violating.clear();
    clean.clear();
    let mut allowed: smallvec::SmallVec<[i32; 8]> = pdbs.iter().map(|b| b.disruptions_allowed).collect();
    for (k, p) in pods.enumerate() {
        let mut violates = false;
        for (i, pdb) in pdbs.iter().enumerate() {
            if !pdb.selects(p) || pdb.is_disrupted(&p.name) {
                continue;
            }
            allowed[i] -= 1;
            violates |= allowed[i] < 0;
        }
        if violates {
            violating.push(k as u32);
        } else {
            clean.push(k as u32);
        }
    }
}

/// The dry run on the snapshot node at position `pos` (`None` when there is none). Where the
/// snapshot's columns tell the node cannot help — no pod of lower priority, or the pod does
/// not fit even with them all gone — it says so without reading the node (most nodes a dry
/// run tries, once preemptions have filled the cluster); else `select_victims`. Same verdict.
pub fn select_victims_at(dry: &DryRun<'_>, pos: usize, scratch: &mut Scratch) -> Option<Result<Found, Verdict>> {
    let node = || dry.snapshot.node_at(pos);
    // Row `pos` of the columns is the node at `pos` (the columns' invariant).
    if dry.overlay.aggregates_only && pos < dry.snapshot.columns().len() {
        match dry.snapshot.columns().below(pos, dry.pod.priority) {
            Below::Nothing => return Some(Err(no_victims())),
            Below::Tally(tally) => {
                let delta = dry.nominated.delta_at(pos, || node().map(|n| n.name())).copied();
                match run_filters_on_tally(dry.filters, dry.state, dry.pod, &tally, delta.as_ref(), &mut scratch.row) {
                    Some(v) if !v.is_success() => return Some(Err(v)),
                    // The pod fits without the lower pods: the dry run goes on from this row.
                    Some(_) => {
                        let node = node()?;
                        let r =
                            select_victims_from(dry, node, Some((pos, node)), scratch, Some(RowFit { tally, delta }));
                        return Some(r.map(|f| f.at(pos)));
                    }
                    None => {}
                }
            }
            Below::Unknown => {}
        }
    }
    let node = node()?;
    Some(select_victims_from(dry, node, Some((pos, node)), scratch, None).map(|f| f.at(pos)))
}

/// The verdict on a node without pods of lower priority than the preemptor's, in brief.
fn no_victims() -> Verdict {
    const NO_VICTIMS: RowFail = RowFail {
        code: Code::UnschedulableAndUnresolvable,
        what: 0,
        make: |_| Status::unresolvable(REASON_NO_VICTIMS),
    };
    Verdict::Brief("", NO_VICTIMS)
}

/// A node's row without its lower-priority pods, on which the pod was found to fit (from the
/// columns), and what the pods nominated to the node add.
struct RowFit {
    tally: HotTally,
    delta: Option<PodsDelta>,
}

/// The dry run on `node`: `Ok` with the victims (at least one), or the status saying why
/// preempting there cannot help.
///
/// When no active filter reads the node's pod list and no PreFilter extension must follow
/// the pods (`Overlay::aggregates_only`, the common case), the pods are taken off and put
/// back on a reused copy of the node's aggregates alone, which copies no pod list; otherwise
/// on a copy of the node with its pods. Both give the same verdicts.
pub fn select_victims(dry: &DryRun<'_>, node: &NodeInfo, scratch: &mut Scratch) -> Result<Candidate, Status> {
    select_victims_from(dry, node, None, scratch, None)
        .map(|f| f.at(0).candidate_on(node))
        .map_err(Verdict::into_status)
}

/// `select_victims`, with the row trial's start already known (`fit`: an aggregates-only
/// cycle, where the columns found the pod to fit on the row without the lower pods), found at
/// position 0 (the caller places it). `at`: the node's snapshot position and shared handle,
/// with which its briefs are kept in the scratch; `None` reads them afresh.
fn select_victims_from(
    dry: &DryRun<'_>,
    node: &NodeInfo,
    at: Option<(usize, &Arc<NodeInfo>)>,
    scratch: &mut Scratch,
    fit: Option<RowFit>,
) -> Result<Found, Verdict> {
    let pod = dry.pod;
    let Scratch { potential, violating, clean, aggregates, row, briefs } = scratch;
    potential.clear();
    if dry.overlay.aggregates_only {
        // First from the node's hot row alone, less what the lower-priority pods add (the
        // node's per-priority tally): most nodes a dry run tries fail here, and their pods
        // are never read. A filter that needs the NodeInfo sends the node to the aggregates
        // copy, from the start.
        let (mut trial, row_judges) = match fit {
            Some(RowFit { tally, delta }) => (RowTrial { tally, row, delta }, true),
            None => {
                let Some(lower) = node.below(pod.priority) else {
                    return Err(no_victims());
                };
                let mut tally = HotTally::of(node);
                tally.sub(&lower);
                let delta = dry.nominated.delta_on(node.name()).copied();
                let mut trial = RowTrial { tally, row, delta };
                match trial.fits(dry) {
                    Some(v) if !v.is_success() => return Err(v),
                    Some(_) => (trial, true),
                    None => (trial, false),
                }
            }
        };
        // The pods to put back, most important first, read from the node's briefs (kept
        // from an earlier cycle while its pods are the same): only the victims are copied.
        let own;
        let all: &[LowerPod] = match at {
            Some((pos, node)) => briefs.of(pos, dry.snapshot.num_nodes(), node),
            None => {
                own = Briefs::read(node);
                &own
            }
        };
        let lower = &all[all.partition_point(|b| b.priority >= pod.priority)..];
        let pods = PodsAt::Node(node.pods());
        if row_judges {
            // The row trial already found the pod to fit without the lower pods.
            if let Some(verdict) = reprieve(dry, &mut trial, true, node, lower, pods, violating, clean) {
                return verdict;
            }
        }
        let copy = aggregates.get_or_insert_with(|| NodeInfo::new(std::sync::Arc::clone(node.node_arc())));
        copy.clone_aggregates_from(node);
        for e in lower {
            copy.sub_aggregates(pods.get(e.index));
        }
        let mut trial = AggregatesTrial { copy };
        return reprieve(dry, &mut trial, false, node, lower, pods, violating, clean).expect("judged on a NodeInfo");
    }
    let copy = node.clone_taking(|p| p.priority < pod.priority, potential);
    if potential.is_empty() {
        return Err(no_victims());
    }
    // The extensions change the state, so they get a copy of it (the common case, no
    // extension active, copies nothing).
    let own: Option<CycleState> = (!dry.overlay.extensions.is_empty()).then(|| dry.state.clone());
    let mut trial = FullTrial { copy, own };
    if let Some(s) = trial.own.as_mut() {
        change_pods(dry, &dry.overlay.extensions, s, potential, &trial.copy, false).map_err(Verdict::Full)?;
    }
    let mut lower: Lower = potential.iter().enumerate().map(|(i, p)| LowerPod::read(p, i)).collect();
    lower.sort_by(LowerPod::more_important);
    let pods = PodsAt::List(potential);
    reprieve(dry, &mut trial, false, node, &lower, pods, violating, clean).expect("judged on a NodeInfo")
}

/// Pods to put back, in a buffer of their own (no allocation for up to 8).
type Lower = smallvec::SmallVec<[LowerPod; 8]>;

/// A pod of the node being tried, with what the dry run reads of its spec (its priority,
/// start, what it adds to the row), read once: those reads miss the cache, and done together,
/// pod after pod, they overlap instead of waiting on each other in the sort and the reprieve.
/// The pod itself is found again by `index` (in `PodsAt`) only where it is needed, for the
/// victims.
#[derive(Clone, Copy, Debug, PartialEq)]
struct LowerPod {
    priority: i32,
    index: u32,
    start: u64,
    delta: PodsDelta,
}

impl LowerPod {
    #[inline]
    fn read(pod: &Pod, index: usize) -> LowerPod {
        LowerPod { priority: pod.priority, index: index as u32, start: start_key(pod), delta: PodsDelta::of(pod) }
    }

    /// `more_important` on what was read (a stable sort keeps equal pods in list order).
    #[inline]
    fn more_important(a: &LowerPod, b: &LowerPod) -> CmpOrdering {
        b.priority.cmp(&a.priority).then_with(|| a.start.cmp(&b.start))
    }
}

/// Where a `LowerPod`'s index points: the node's pod list, or the pods taken off a full copy.
#[derive(Clone, Copy)]
enum PodsAt<'p> {
    Node(&'p PVec<Pod>),
    List(&'p [Pod]),
}

impl<'p> PodsAt<'p> {
    #[inline]
    fn get(self, index: u32) -> &'p Pod {
        match self {
            PodsAt::Node(v) => v.get(index as usize).expect("a brief's index is in its pod list"),
            PodsAt::List(v) => &v[index as usize],
        }
    }
}

/// One node's briefs (no allocation for up to 4 pods).
type NodeBriefs = smallvec::SmallVec<[LowerPod; 4]>;

/// Every node's pods most important first, as `LowerPod`s, by node position, each kept while
/// the node's pod list is the version it was read from (`pvec::Version`): between two
/// preemption cycles most nodes' pods stay as they were, and the dry run reads their briefs
/// from one place instead of every pod's spec. The pods below a priority are the briefs'
/// tail, in the order sorting them alone gives (the sort is stable and by priority first).
///
/// A snapshot's `NodeInfo` is never changed in place while a `Weak` names it (`Arc::get_mut`
/// refuses, `Arc::make_mut` moves it), so the same `NodeInfo` allocation means the same pods:
/// that is checked first, from the snapshot's pointer alone, without reading the `NodeInfo`
/// (a cache miss per node tried). A new `NodeInfo` whose pod list is the kept version (the
/// node changed, its pods did not) keeps the briefs too.
#[derive(Default)]
struct Briefs {
    by_position: Vec<Kept>,
}

/// One position's briefs, and what they were read from.
#[derive(Default)]
struct Kept {
    /// The `NodeInfo` last seen at the position (`Weak::new()`: none).
    node: Weak<NodeInfo>,
    pods: Option<Version<Pod>>,
    briefs: NodeBriefs,
}

impl Briefs {
    fn of(&mut self, pos: usize, nodes: usize, node: &Arc<NodeInfo>) -> &[LowerPod] {
        if self.by_position.len() <= pos {
            self.by_position.resize_with(nodes.max(pos + 1), Default::default);
        }
        let kept = &mut self.by_position[pos];
        if !std::ptr::eq(kept.node.as_ptr(), Arc::as_ptr(node)) {
            if !kept.pods.as_ref().is_some_and(|v| v.is(node.pods())) {
                kept.briefs = Self::read(node);
                kept.pods = Some(node.pods().version());
            }
            kept.node = Arc::downgrade(node);
        }
        // The debug checker: kept briefs are those the pods give now.
        debug_assert_eq!(&kept.briefs[..], &Self::read(node)[..], "kept briefs of node {}", node.name());
        &kept.briefs
    }

    fn read(node: &NodeInfo) -> NodeBriefs {
        let mut briefs: NodeBriefs = node.pods().iter().enumerate().map(|(i, p)| LowerPod::read(p, i)).collect();
        briefs.sort_by(LowerPod::more_important);
        briefs
    }
}

/// A copy of a node with the lower-priority pods taken off, which the dry run puts them back
/// on one at a time.
trait Trial {
    /// Whether the pod fits on the copy as it is now (nominated pods considered); `None` when
    /// this kind of copy cannot tell (a row-only trial and a filter that needs the NodeInfo).
    fn fits(&mut self, dry: &DryRun<'_>) -> Option<Verdict>;
    /// `fits`, after a pod was put back on a copy that fitted (and that `fits` could judge):
    /// a row trial asks only the filters that follow the pods, the others having passed.
    fn refits(&mut self, dry: &DryRun<'_>) -> Option<Verdict> {
        self.fits(dry)
    }
    /// Puts back the pod `e` was read from (found in `pods` by a copy that needs it).
    fn put_back(&mut self, dry: &DryRun<'_>, e: &LowerPod, pods: PodsAt<'_>) -> Result<(), Status>;
    fn take_off(&mut self, dry: &DryRun<'_>, e: &LowerPod, pods: PodsAt<'_>) -> Result<(), Status>;
}

/// The node with its pod list, and the cycle state the PreFilter extensions change.
struct FullTrial {
    copy: NodeInfo,
    own: Option<CycleState>,
}

impl Trial for FullTrial {
    fn fits(&mut self, dry: &DryRun<'_>) -> Option<Verdict> {
        let state = self.own.as_ref().unwrap_or(dry.state);
        Some(Verdict::from(run_filters_with_nominated_mut(
            dry.overlay,
            dry.filters,
            state,
            dry.pod,
            &mut self.copy,
            dry.nominated,
            dry.snapshot,
        )))
    }

    fn put_back(&mut self, dry: &DryRun<'_>, e: &LowerPod, pods: PodsAt<'_>) -> Result<(), Status> {
        let p = pods.get(e.index);
        self.copy.add_pod(p.with_node(self.copy.name()));
        match self.own.as_mut() {
            Some(s) => change_pods(dry, &dry.overlay.extensions, s, std::slice::from_ref(p), &self.copy, true),
            None => Ok(()),
        }
    }

    fn take_off(&mut self, dry: &DryRun<'_>, e: &LowerPod, pods: PodsAt<'_>) -> Result<(), Status> {
        let p = pods.get(e.index);
        self.copy.remove_pod(&p.uid);
        match self.own.as_mut() {
            Some(s) => change_pods(dry, &dry.overlay.extensions, s, std::slice::from_ref(p), &self.copy, false),
            None => Ok(()),
        }
    }
}

/// Only the node's aggregates (`Overlay::aggregates_only`): no pod list, no extension.
struct AggregatesTrial<'s> {
    copy: &'s mut NodeInfo,
}

impl Trial for AggregatesTrial<'_> {
    fn fits(&mut self, dry: &DryRun<'_>) -> Option<Verdict> {
        Some(Verdict::from(run_filters_with_nominated_mut(
            dry.overlay,
            dry.filters,
            dry.state,
            dry.pod,
            self.copy,
            dry.nominated,
            dry.snapshot,
        )))
    }

    fn put_back(&mut self, _: &DryRun<'_>, e: &LowerPod, pods: PodsAt<'_>) -> Result<(), Status> {
        self.copy.add_to_aggregates(pods.get(e.index));
        Ok(())
    }

    fn take_off(&mut self, _: &DryRun<'_>, e: &LowerPod, pods: PodsAt<'_>) -> Result<(), Status> {
        self.copy.sub_aggregates(pods.get(e.index));
        Ok(())
    }
}

/// Only the node's hot row (`Overlay::aggregates_only`), judged by the filters' `filter_hot`.
struct RowTrial<'s> {
    tally: HotTally,
    row: &'s mut LooseRow,
    /// What the pods nominated to the node add (looked up once per node).
    delta: Option<PodsDelta>,
}

impl Trial for RowTrial<'_> {
    fn fits(&mut self, dry: &DryRun<'_>) -> Option<Verdict> {
        run_filters_on_tally(dry.filters, dry.state, dry.pod, &self.tally, self.delta.as_ref(), self.row)
    }

    /// Every filter passed the row before (the reprieve starts from a fit), and those that
    /// do not follow the pods read only what putting pods back leaves as it was.
    fn refits(&mut self, dry: &DryRun<'_>) -> Option<Verdict> {
        run_filters_on_tally(dry.following, dry.state, dry.pod, &self.tally, self.delta.as_ref(), self.row)
    }

    fn put_back(&mut self, _: &DryRun<'_>, e: &LowerPod, _: PodsAt<'_>) -> Result<(), Status> {
        self.tally.add(&e.delta);
        Ok(())
    }

    fn take_off(&mut self, _: &DryRun<'_>, e: &LowerPod, _: PodsAt<'_>) -> Result<(), Status> {
        self.tally.sub(&e.delta);
        Ok(())
    }
}

/// The dry run's second half, on a copy without the `potential` victims (most important
/// first; `pods` finds each one's pod): if the pod fits (`fits`: already known to), puts them
/// back in that order (PDB-violating ones before the others), keeping each that leaves the
/// pod fitting; the rest are the victims (found at position 0: the caller places them).
#[allow(clippy::too_many_arguments)]
fn reprieve<T: Trial>(
    dry: &DryRun<'_>,
    trial: &mut T,
    fits: bool,
    node: &NodeInfo,
    potential: &[LowerPod],
    pods: PodsAt<'_>,
    violating: &mut Vec<u32>,
    clean: &mut Vec<u32>,
) -> Option<Result<Found, Verdict>> {
    if !fits {
        let v = trial.fits(dry)?;
        if !v.is_success() {
            return Some(Err(v));
        }
    }
    if dry.pdbs.is_empty() {
        violating.clear();
        clean.clear();
        clean.extend(0..potential.len() as u32);
    } else {
        split_indices_by_pdb(potential.iter().map(|e| pods.get(e.index)), dry.pdbs, violating, clean);
    }
    let mut victims: Lower = Lower::new();
    let mut num_pdb_violations = 0;
    for (group, is_violating) in [(&*violating, true), (&*clean, false)] {
        for e in group.iter().map(|&i| &potential[i as usize]) {
            if let Err(st) = trial.put_back(dry, e, pods) {
                return Some(Err(Verdict::Full(st)));
            }
            if trial.refits(dry)?.is_success() {
                continue;
            }
            if let Err(st) = trial.take_off(dry, e, pods) {
                return Some(Err(Verdict::Full(st)));
            }
            victims.push(*e);
            num_pdb_violations += is_violating as usize;
        }
    }
    if !violating.is_empty() && !clean.is_empty() {
        victims.sort_by(LowerPod::more_important);
    }
    if victims.is_empty() {
        // Every lower-priority pod could stay: the pod fits as things are, which the filter
        // said it did not (upstream treats this as an error on the node).
        // `black_box`: handed over as an address only, or the compiler passes the name and
        // loads it ahead of the loop.
        return Some(Err(no_victim_found(std::hint::black_box(node))));
    }
    let key = PickKey::of_victims(num_pdb_violations, victims.iter().map(|e| (e.priority, e.start)));
    let victims = match pods {
        PodsAt::Node(_) => FoundVictims::At(victims.iter().map(|e| e.index).collect()),
        PodsAt::List(_) => FoundVictims::Pods(victims.iter().map(|e| pods.get(e.index).clone()).collect()),
    };
    Some(Ok(Found { pos: 0, num_pdb_violations, key, victims }))
}

/// The error of a node where every lower-priority pod could stay. Not inlined: the only read
/// of the node itself in a row trial, which would otherwise be loaded ahead (a cache miss on
/// every node tried).
#[cold]
#[inline(never)]
fn no_victim_found(node: &NodeInfo) -> Verdict {
    Verdict::Full(Status::error(format!("expected at least one victim pod on node {:?}", node.name().as_str())))
}

/// Tells the PreFilter extensions that `pods` were added to or removed from `node`.
fn change_pods(
    dry: &DryRun<'_>,
    extensions: &[&dyn PreFilterPlugin],
    state: &mut CycleState,
    pods: &[Pod],
    node: &NodeInfo,
    add: bool,
) -> Result<(), Status> {
    for p in pods {
        for ext in extensions {
            let st = if add {
                ext.add_pod(state, dry.pod, p, node, dry.snapshot)
            } else {
                ext.remove_pod(state, dry.pod, p, node, dry.snapshot)
            };
            if !st.is_success() {
                return Err(Status::error(format!("{}: {}", ext.name(), st.message())));
            }
        }
    }
    Ok(())
}
