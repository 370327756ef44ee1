//! DefaultPreemption: the PostFilter plugin that, when no node fits a pod, looks for a node
//! where evicting pods of lower priority would make room, and nominates the pod to it.
//!
//! 1. **Eligibility**: a pod with `preemptionPolicy: Never` never preempts; a pod already
//!    nominated waits while a lower-priority pod on its nominated node is still terminating
//!    because of an earlier preemption (unless that node is now unresolvable for it).
//! 2. **Potential nodes**: those whose filter verdict was `Unschedulable` (removing pods might
//!    help), never `UnschedulableAndUnresolvable`. None → the pod's nomination is cleared.
//! 3. **Dry run** (`victims::select_victims`) on potential nodes taken from a random offset,
//!    on the generic ordered search (in parallel on the filter's worker pool), until enough candidates are found (at least
//!    `minCandidateNodesPercentage` of the potential nodes or `minCandidateNodesAbsolute`).
//! 4. **Pick one node** (`pick::pick_one_node`) by upstream's five tie-breaks.
//!
//! Preparing the node (deleting victims, clearing lower-priority nominations) is the
//! scheduler's job; this plugin only decides (`PostFilterResult`). With
//! SchedulerAsyncPreemption (on by default) the scheduler deletes the victims in a step of
//! its own after the cycle, and this plugin's PreEnqueue holds the preemptor back until that
//! step (the set it hands out in `PostFilterResult::preempting`).

pub mod pick;
pub mod victims;

use crate::api::{Pod, Sym};
use crate::framework::events::{ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::extender::{ExtenderError, ExtenderVictims, Extenders};
pub use crate::framework::preemption::PreemptionTrace;
use crate::framework::runtime::{active_filters, FitError, NodeStatuses, Overlay};
use crate::framework::{
    ArgsError, Code, CycleState, Nominating, Plugin, PostFilterContext, PostFilterPlugin, PostFilterResult,
    PreEnqueuePlugin, PreemptingHandle, Status, Verdict,
};
use crate::parallel::search::{search, Emit, Goal, Hit, SearchBuffers, Visitor};
use crate::parallel::WorkerPool;
use crate::snapshot::Snapshot;
use crate::sync::{try_lock, Mutex};
pub use pick::{best_candidates, best_of, best_of_decided, pick_one_node, Decided, PickKey, CRITERIA};
pub use victims::{following_pods, select_victims, Candidate, DryRun, Found, Victims};

pub const NAME: &str = "DefaultPreemption";

pub const REASON_NO_VICTIMS: &str = "No preemption victims found for incoming pod";
pub const REASON_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
pub const MSG_POLICY_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
pub const MSG_TERMINATING: &str = "not eligible due to a terminating pod on the nominated node.";

/// `DefaultPreemptionArgs` of `kubescheduler.config.k8s.io/v1`: how many candidate nodes
/// the dry run looks for before picking one.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultPreemptionArgs {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default = "default_percentage")]
    pub min_candidate_nodes_percentage: i32,
    #[serde(default = "default_absolute")]
    pub min_candidate_nodes_absolute: i32,
}

fn default_percentage() -> i32 {
    10
}

fn default_absolute() -> i32 {
    100
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            kind: None,
            api_version: None,
            min_candidate_nodes_percentage: default_percentage(),
            min_candidate_nodes_absolute: default_absolute(),
        }
    }
}

impl DefaultPreemptionArgs {
    /// Upstream's rules: the percentage within 0..=100, the absolute count not negative, and
    /// not both zero.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let p = self.min_candidate_nodes_percentage;
        if !(0..=100).contains(&p) {
            return Err(ArgsError::new(
                "minCandidateNodesPercentage",
                format!("Invalid value: {p}: not in valid range [0, 100]"),
            ));
        }
        let a = self.min_candidate_nodes_absolute;
        if a < 0 {
            return Err(ArgsError::new(
                "minCandidateNodesAbsolute",
                format!("Invalid value: {a}: not in valid range [0, inf)"),
            ));
        }
        if p == 0 && a == 0 {
            return Err(ArgsError::new(
                "minCandidateNodesPercentage",
                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
            ));
        }
        Ok(())
    }
}

pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
    /// The dry run's worker buffers, kept from cycle to cycle for the node briefs their
    /// scratch holds (`victims::Scratch`); a cycle that finds them taken uses its own.
    kept: Mutex<DryRunBuffers>,
    /// SchedulerAsyncPreemption: the preemptors whose victims' deletion is still to come
    /// (marked and unmarked by the scheduler, which gets the set with each result); this
    /// plugin's PreEnqueue holds them back. Without the gate nothing is held and no event is
    /// registered, as upstream.
    preempting: PreemptingHandle,
    async_preemption: bool,
}

/// The ordered search's buffers for the dry run.
pub type DryRunBuffers = SearchBuffers<Result<Found, Verdict>, victims::Scratch>;

impl Default for DefaultPreemption {
    fn default() -> Self {
        DefaultPreemption::new(DefaultPreemptionArgs::default())
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }

    /// With asynchronous preemption, a held preemptor moves on a pod's deletion (a victim
    /// gone), when one of the plugins that rejected it says so: this plugin's own hint always
    /// says QueueSkip, as upstream's (when to retry is the rejecting plugins' call).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        if self.async_preemption {
            vec![ClusterEvent::new(EventResource::Pod, ActionType::DELETE)]
        } else {
            Vec::new()
        }
    }

    fn queueing_hint(&self, _pod: &Pod, _event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        QueueingHint::QueueSkip
    }
}

/// Upstream's PreEnqueue message for a preemptor whose victims' deletion is still to come.
pub const MSG_WAITING_FOR_PREEMPTION: &str = "waiting for the preemption for this pod to be finished";

impl PreEnqueuePlugin for DefaultPreemption {
    fn pre_enqueue(&self, pod: &Pod, _cluster: crate::framework::ClusterView<'_>) -> Status {
        if self.async_preemption && self.preempting.0.contains(&pod.uid) {
            Status::with_text(Code::UnschedulableAndUnresolvable, MSG_WAITING_FOR_PREEMPTION)
        } else {
            Status::success()
        }
    }
}

/// Whether the pod may preempt; `Err` carries upstream's message.
pub fn eligible_to_preempt(pod: &Pod, snapshot: &Snapshot, statuses: &NodeStatuses) -> Result<(), &'static str> {
    if pod.preemption_policy == crate::api::PreemptionPolicy::Never {
        return Err(MSG_POLICY_NEVER);
    }
    let Some(nominated) = pod.nominated_node_name.filter(|n| !n.is_empty()) else {
        return Ok(());
    };
    if statuses.get(snapshot, nominated).is_some_and(|s| s.code == Code::UnschedulableAndUnresolvable) {
        // The nominated node no longer works at all: look for another.
        return Ok(());
    }
    if let Some(info) = snapshot.get(nominated) {
        if info.pods().iter().any(|p| p.priority < pod.priority && p.is_terminating_by_preemption()) {
            return Err(MSG_TERMINATING);
        }
    }
    Ok(())
}

impl DefaultPreemption {
    /// The plugin under v1.35's default gates (SchedulerAsyncPreemption on).
    pub fn new(args: DefaultPreemptionArgs) -> DefaultPreemption {
        DefaultPreemption::with_gates(args, &crate::features::FeatureGates::default())
    }

    /// The plugin under `gates` (SchedulerAsyncPreemption decides whether it holds
    /// preemptors in PreEnqueue).
    pub fn with_gates(args: DefaultPreemptionArgs, gates: &crate::features::FeatureGates) -> DefaultPreemption {
        DefaultPreemption {
            args,
            kept: Mutex::default(),
            preempting: PreemptingHandle::default(),
            async_preemption: gates.enabled(crate::features::Feature::SchedulerAsyncPreemption),
        }
    }

    /// The preemptors this plugin holds back (see `PreemptingPods`).
    pub fn preempting(&self) -> &PreemptingHandle {
        &self.preempting
    }

    /// How many candidates the dry run looks for among `potential` nodes.
    pub fn num_candidates(&self, potential: usize) -> usize {
        let pct = self.args.min_candidate_nodes_percentage.max(0) as usize;
        let n = (potential * pct / 100).max(self.args.min_candidate_nodes_absolute.max(0) as usize);
        n.min(potential)
    }

    /// Eligibility, candidates and the pick; `Ok(None)` when preemption cannot help (the
    /// status then says why).
    fn preempt(
        &self,
        ctx: &mut PostFilterContext<'_>,
        state: &CycleState,
        pod: &Pod,
    ) -> (Option<PostFilterResult>, Status) {
        if let Err(msg) = eligible_to_preempt(pod, ctx.snapshot, ctx.statuses) {
            return (None, Status::with_text(Code::Unschedulable, msg));
        }
        let snapshot = ctx.snapshot;
        let n = snapshot.num_nodes();
        let codes = ctx.statuses.codes(n);
        let mut potential: Vec<u32> = Vec::with_capacity(n);
        potential.extend((0..n as u32).filter(|&p| codes[p as usize] == Code::Unschedulable));
        let mut failures = NodeStatuses::default();
        let found = if potential.is_empty() {
            Vec::new()
        } else {
            let offset = ctx.rng.below(potential.len() as u64) as usize;
            let want = self.num_candidates(potential.len());
            let filters = active_filters(ctx.profile, state);
            let overlay = Overlay::new(ctx.profile, state, &filters);
            let following = following_pods(&filters);
            let dry = DryRun {
                filters: &filters,
                following: &following,
                overlay: &overlay,
                state,
                pod,
                snapshot,
                nominated: ctx.nominated,
                pdbs: &snapshot.objects().pdbs,
            };
            let mut own = None;
            let mut kept = try_lock(&self.kept);
            let bufs = match kept.as_deref_mut() {
                Some(b) => b,
                None => own.insert(DryRunBuffers::default()),
            };
            match find_found(&dry, ctx.pool, &potential, offset, want, &mut failures, bufs) {
                Ok(c) => c,
                Err(st) => return (None, st),
            }
        };
        // The extenders and the trace see every candidate with its victims; otherwise only
        // the picked one's victims are copied out of the snapshot.
        let best = if ctx.profile.extenders.is_empty() && ctx.preemption_trace.is_none() {
            let keys: Vec<PickKey> = found.iter().map(|f| f.key).collect();
            best_of(&keys).first().map(|&i| found[i].candidate(snapshot))
        } else {
            let candidates: Vec<Candidate> = found.iter().map(|f| f.candidate(snapshot)).collect();
            let candidates = if ctx.profile.extenders.is_empty() || candidates.is_empty() {
                candidates
            } else {
                match call_extenders(ctx, pod, candidates) {
                    Ok(c) if c.is_empty() => return (None, Status::unschedulable(MSG_NO_CANDIDATE)),
                    Ok(c) => c,
                    Err(e) => return (None, Status::with_text(Code::Error, &e.to_string())),
                }
            };
            if let Some(trace) = ctx.preemption_trace.as_deref_mut() {
                trace.rejected = failures.iter().map(|(pos, st)| (node_name(snapshot, pos), st.clone())).collect();
                trace.best = best_candidates(&candidates);
                trace.potential = potential.len();
                trace.candidates = candidates.clone();
            }
            let pick = pick_one_node(&candidates);
            candidates.into_iter().nth(pick)
        };
        let Some(best) = best else {
            failures.absent = Some(Status::unresolvable(REASON_NOT_HELPFUL));
            let fit = FitError::from_statuses(n, &failures);
            let msg = fit.to_string();
            return (
                Some(PostFilterResult::nominating(Nominating::Clear)),
                Status::with_text(Code::Unschedulable, &msg),
            );
        };
        let lower_priority_nominated = ctx.nominator.map_or_else(Vec::new, |nom| {
            nom.pods_on(best.node).into_iter().filter(|p| p.priority < pod.priority).collect()
        });
        let result = PostFilterResult {
            nominating: Nominating::Set(best.node),
            victims: best.victims.pods,
            lower_priority_nominated,
            preempting: self.async_preemption.then(|| self.preempting.clone()),
        };
        (Some(result), Status::success())
    }
}

impl PostFilterPlugin for DefaultPreemption {
    fn post_filter(
        &self,
        ctx: &mut PostFilterContext<'_>,
        state: &CycleState,
        pod: &Pod,
    ) -> (Option<PostFilterResult>, Status) {
        let (result, st) = self.preempt(ctx, state, pod);
        if st.is_success() {
            return (result, st);
        }
        // Upstream prefixes the plugin's message with "preemption: ".
        let msg = format!("preemption: {}", st.message());
        (result, Status::with_text(st.code, &msg))
    }
}

/// Upstream's message when the extenders left no candidate.
const MSG_NO_CANDIDATE: &str = "no candidate node for preemption";

/// Hands the candidates and their victims to every interested extender with a preempt verb
/// (upstream's callExtenders); returns the candidates they kept, in the dry run's order.
fn call_extenders(
    ctx: &mut PostFilterContext<'_>,
    pod: &Pod,
    candidates: Vec<Candidate>,
) -> Result<Vec<Candidate>, ExtenderError> {
    let sent: Vec<(Sym, ExtenderVictims)> = candidates
        .into_iter()
        .map(|c| {
            let victims =
                ExtenderVictims { pods: c.victims.pods, num_pdb_violations: c.victims.num_pdb_violations as i64 };
            (c.node, victims)
        })
        .collect();
    let mut extenders = Extenders {
        list: &ctx.profile.extenders,
        trace: ctx.preemption_trace.as_deref_mut().map(|t| &mut t.extenders),
    };
    let kept = extenders.process_preemption(pod, sent, ctx.snapshot)?;
    Ok(kept
        .into_iter()
        .map(|(node, v)| Candidate {
            node,
            victims: Victims { pods: v.pods, num_pdb_violations: v.num_pdb_violations.max(0) as usize },
        })
        .collect())
}

fn node_name(snapshot: &Snapshot, pos: u32) -> Sym {
    snapshot.node_at(pos as usize).map_or_else(|| Sym::new(""), |n| n.name())
}

/// Dry-runs potential nodes from `offset` (wrapping) in order until `want` candidates are
/// found, at least one of them violating no PDB; nodes that fail record their status in
/// `failures`. `bufs` may be kept from call to call: their scratch keeps node briefs.
/// Candidates come back non-violating first, then violating, each in visiting order. Runs on
/// the generic ordered search, so the result is the sequential one whatever the pool size
/// (upstream stops at whichever nodes its goroutines finished first).
pub fn find_found(
    dry: &DryRun<'_>,
    pool: Option<&WorkerPool>,
    potential: &[u32],
    offset: usize,
    want: usize,
    failures: &mut NodeStatuses,
    bufs: &mut DryRunBuffers,
) -> Result<Vec<Found>, Status> {
    let mut clean = Vec::new();
    let mut violating = Vec::new();
    // The first node whose dry run failed with an error.
    let mut error: Option<Status> = None;
    let visitor = DryRunVisitor { dry, potential };
    let goal = Goal::with_preferred(want, 1);
    search(pool, &visitor, potential.len(), offset, goal, bufs, |i, r| match r {
        Ok(c) if c.num_pdb_violations == 0 => clean.push(c),
        Ok(c) => violating.push(c),
        Err(v) => {
            if v.code() == Code::Error && error.is_none() {
                error = Some(v.clone().into_status());
            }
            failures.push_verdict(potential[i], v);
        }
    });
    if clean.is_empty() && violating.is_empty() {
        if let Some(e) = error {
            return Err(e);
        }
    }
    clean.extend(violating);
    Ok(clean)
}

/// The dry run over the potential nodes, as the ordered search visits them: an item is an
/// index into the potential nodes, a candidate is a hit, one violating no PDB a preferred hit.
struct DryRunVisitor<'a, 'b> {
    dry: &'a DryRun<'b>,
    potential: &'a [u32],
}

impl Visitor for DryRunVisitor<'_, '_> {
    type Out = Result<Found, Verdict>;
    type Scratch = victims::Scratch;

    fn visit<E: Emit<Self::Out>>(&self, scratch: &mut victims::Scratch, lo: usize, hi: usize, emit: &mut E) -> bool {
        for i in lo..hi {
            let Some(r) = victims::select_victims_at(self.dry, self.potential[i] as usize, scratch) else { continue };
            if !emit.one(i, r) {
                return false;
            }
        }
        true
    }

    fn hit(&self, r: &Self::Out) -> Hit {
        match r {
            Ok(c) if c.num_pdb_violations == 0 => Hit::Preferred,
            Ok(_) => Hit::Hit,
            Err(_) => Hit::Miss,
        }
    }

    /// A dry run filters a node several times: small chunks keep the workers even.
    fn chunk(&self, _: usize, _: usize) -> usize {
        8
    }
}

#[cfg(test)]
mod tests;
