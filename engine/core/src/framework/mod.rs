//! The plugin framework: one trait per extension point, `Status`, `CycleState`, profiles.
//!
//! Before any cycle, the queue runs PreEnqueue on every pod that would enter activeQ (or
//! backoffQ): a pod a PreEnqueue plugin rejects is held in the unschedulable pods, gated,
//! until an event that plugin registered for moves it. A cycle runs PreFilter → Filter (per node) → PostFilter (when no node fits) → PreScore →
//! Score + NormalizeScore (per node, then per plugin) → Reserve → Bind. Plugins read only
//! the snapshot and the cycle state; "unschedulable" is a `Status`, not an error.

pub mod batch;
pub mod events;
pub mod extender;
pub mod feasible;
pub mod label_columns;
pub(crate) mod memo;
pub mod pick;
pub mod plugins;
pub mod pre_enqueue;
pub mod preemption;
pub mod profile;
pub mod runtime;
pub mod score_memo;
pub mod signature;

use std::any::{Any, TypeId};
use std::fmt;

use smallvec::SmallVec;

use crate::api::{Pod, ResourceName, Sym};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{Columns, Floors, HotRef, Snapshot};
pub use feasible::Feasible;
pub use profile::{Profile, Profiles};

/// The highest score a plugin may give after normalization.
pub const MAX_NODE_SCORE: i64 = 100;
pub const MIN_NODE_SCORE: i64 = 0;

/// The outcome class of a plugin call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    Success,
    /// The node does not fit now; preemption might help.
    Unschedulable,
    /// The node does not fit and preemption cannot help.
    UnschedulableAndUnresolvable,
    /// An internal fault; the pod's attempt fails.
    Error,
    /// From PreFilter / PreScore: this plugin has nothing to do for this pod this cycle.
    Skip,
}

/// Why a node was rejected; formatted only when a message is needed, so the hot path never
/// allocates for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    Static(&'static str),
    /// "Insufficient <resource>".
    Insufficient(ResourceName),
    /// Any other text, interned so that a `Status` stays `Copy`-cheap to drop.
    Text(Sym),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Static(s) => f.write_str(s),
            Reason::Insufficient(r) => write!(f, "Insufficient {r}"),
            Reason::Text(s) => f.write_str(s.as_str()),
        }
    }
}

/// A plugin's verdict with its reasons and the plugin that gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: SmallVec<[Reason; 2]>,
    /// The plugin that returned this status (set by the framework).
    pub plugin: &'static str,
    /// Text that varies from call to call (errors, preemption's summary): kept apart from
    /// `reasons` so it is not interned (interned strings live for the whole process).
    pub detail: Option<std::sync::Arc<str>>,
}

impl Status {
    #[inline]
    pub const fn success() -> Status {
        Status { code: Code::Success, reasons: SmallVec::new_const(), plugin: "", detail: None }
    }

    pub const fn skip() -> Status {
        Status { code: Code::Skip, reasons: SmallVec::new_const(), plugin: "", detail: None }
    }

    pub fn new(code: Code, reason: Reason) -> Status {
        let mut reasons = SmallVec::new();
        reasons.push(reason);
        Status { code, reasons, plugin: "", detail: None }
    }

    pub fn unschedulable(reason: &'static str) -> Status {
        Status::new(Code::Unschedulable, Reason::Static(reason))
    }

    pub fn unresolvable(reason: &'static str) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, Reason::Static(reason))
    }

    pub fn error(msg: impl AsRef<str>) -> Status {
        Status::with_text(Code::Error, msg.as_ref())
    }

    /// A status whose message is `text` (not interned; for text that varies).
    pub fn with_text(code: Code, text: &str) -> Status {
        Status { code, reasons: SmallVec::new(), plugin: "", detail: Some(std::sync::Arc::from(text)) }
    }

    #[inline]
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    pub fn is_rejected(&self) -> bool {
        matches!(self.code, Code::Unschedulable | Code::UnschedulableAndUnresolvable)
    }

    pub fn with_plugin(mut self, plugin: &'static str) -> Status {
        self.plugin = plugin;
        self
    }

    /// The reasons (then the detail) joined with ", ".
    pub fn message(&self) -> String {
        let mut parts: Vec<String> = self.reasons.iter().map(|r| r.to_string()).collect();
        if let Some(d) = &self.detail {
            parts.push(d.to_string());
        }
        parts.join(", ")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.plugin.is_empty() {
            write!(f, "{:?}: {}", self.code, self.message())
        } else {
            write!(f, "{}: {:?}: {}", self.plugin, self.code, self.message())
        }
    }
}

/// A value kept in the cycle state: any `Clone` type (the two-pass filter and preemption
/// copy the state to try pods added or removed without disturbing the original).
pub trait StateData: Any + Send + Sync {
    fn clone_box(&self) -> Box<dyn StateData>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Send + Sync + Clone> StateData for T {
    fn clone_box(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A cycle-state type with a slot of its own (`state_slot!(MyState);`): reading it is an
/// index into the state, not a search, which matters for data read once per node.
pub trait Slotted: StateData + Clone {
    /// The slot, the same for the life of the process.
    fn slot() -> usize;
}

/// The next free cycle-state slot (`state_slot!` takes one per type, once).
pub fn next_slot() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Gives a cycle-state type its own slot (see `Slotted`).
#[macro_export]
macro_rules! state_slot {
    ($t:ty) => {
        impl $crate::framework::Slotted for $t {
            #[inline]
            fn slot() -> usize {
                static SLOT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
                *SLOT.get_or_init($crate::framework::next_slot)
            }
        }
    };
}

/// Per-cycle data, one value per type (each plugin keys its data by a private type). Types
/// with a slot (`Slotted`) live at their index in `slots`; others in `data`, found by a scan.
#[derive(Default)]
pub struct CycleState {
    data: Vec<(TypeId, Box<dyn StateData>)>,
    slots: SmallVec<[Option<Box<dyn StateData>>; 8]>,
    /// Inline room for every PreFilter plugin of the default profile (nine, all of which skip
    /// for a plain pod), so a cycle does not spill it to the heap.
    skip_filter: SmallVec<[&'static str; 12]>,
    skip_score: SmallVec<[&'static str; 8]>,
    /// PreFilter's narrowing (upstream's PreFilterResult): the only nodes the pod can go to,
    /// and the plugins that said so. `None`: every node.
    node_names: Option<SmallVec<[Sym; 4]>>,
    narrowed_by: SmallVec<[&'static str; 2]>,
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            data: self.data.iter().map(|(t, v)| (*t, (**v).clone_box())).collect(),
            slots: self.slots.iter().map(|v| v.as_ref().map(|v| (**v).clone_box())).collect(),
            skip_filter: self.skip_filter.clone(),
            skip_score: self.skip_score.clone(),
            node_names: self.node_names.clone(),
            narrowed_by: self.narrowed_by.clone(),
        }
    }
}

impl CycleState {
    pub fn new() -> CycleState {
        CycleState::default()
    }

    pub fn write<T: StateData + Clone>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        match self.data.iter_mut().find(|(t, _)| *t == id) {
            Some(slot) => slot.1 = Box::new(value),
            None => self.data.push((id, Box::new(value))),
        }
    }

    pub fn read<T: Any + Send + Sync>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.data.iter().find(|(t, _)| *t == id).and_then(|(_, v)| (**v).as_any().downcast_ref::<T>())
    }

    /// The slot of type `T`, to update in place (PreFilter extensions: AddPod / RemovePod).
    pub fn read_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        let id = TypeId::of::<T>();
        self.data.iter_mut().find(|(t, _)| *t == id).and_then(|(_, v)| (**v).as_any_mut().downcast_mut::<T>())
    }

    /// Stores `value` in its type's slot.
    pub fn write_slot<T: Slotted>(&mut self, value: T) {
        let i = T::slot();
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(Box::new(value));
    }

    /// The value in `T`'s slot: an index and one type check.
    #[inline]
    pub fn read_slot<T: Slotted>(&self) -> Option<&T> {
        self.slots.get(T::slot())?.as_deref()?.as_any().downcast_ref::<T>()
    }

    /// `T`'s slot, to update in place.
    pub fn read_slot_mut<T: Slotted>(&mut self) -> Option<&mut T> {
        self.slots.get_mut(T::slot())?.as_deref_mut()?.as_any_mut().downcast_mut::<T>()
    }

    pub fn skips_filter(&self, plugin: &str) -> bool {
        self.skip_filter.contains(&plugin)
    }

    pub fn skips_score(&self, plugin: &str) -> bool {
        self.skip_score.contains(&plugin)
    }

    /// The nodes PreFilter narrowed the cycle to (`None`: every node), in the order the
    /// plugins named them, without repeats.
    pub fn node_names(&self) -> Option<&[Sym]> {
        self.node_names.as_deref()
    }

    /// The plugins that narrowed the nodes (`node_names`).
    pub fn narrowed_by(&self) -> &[&'static str] {
        &self.narrowed_by
    }

    /// Narrows the cycle to `names` (intersected with any earlier narrowing), on behalf of
    /// `plugin`; returns whether any node is left.
    pub(crate) fn narrow(&mut self, plugin: &'static str, names: &[Sym]) -> bool {
        self.narrowed_by.push(plugin);
        let next: SmallVec<[Sym; 4]> = match &self.node_names {
            None => {
                let mut v: SmallVec<[Sym; 4]> = SmallVec::new();
                for &n in names {
                    if !v.contains(&n) {
                        v.push(n);
                    }
                }
                v
            }
            Some(have) => have.iter().copied().filter(|n| names.contains(n)).collect(),
        };
        let any = !next.is_empty();
        self.node_names = Some(next);
        any
    }
}

/// A plugin's configuration args (`pluginConfig[].args`) were rejected: `field` is the path
/// inside the args (`scoringStrategy.resources[0].weight`), `message` says what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ArgsError {
    pub field: String,
    pub message: String,
}

impl ArgsError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ArgsError {
        ArgsError { field: field.into(), message: message.into() }
    }
}

/// Every plugin has a name (upstream's, for configuration and messages).
/// What PreEnqueue plugins and queueing hints may read of the cluster besides the pod and
/// the event (upstream's listers): its objects as the informers hold them when the queue asks.
/// Read only. `ClusterView::NONE` when the queue was built without a source
/// (`QueueConfig::with_objects`): a plugin then judges from the pod and the event alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterView<'a> {
    objects: Option<&'a crate::snapshot::ClusterObjects>,
}

impl<'a> ClusterView<'a> {
    pub const NONE: ClusterView<'static> = ClusterView { objects: None };

    pub fn new(objects: &'a crate::snapshot::ClusterObjects) -> ClusterView<'a> {
        ClusterView { objects: Some(objects) }
    }

    /// The cluster's objects, when the queue can read them.
    pub fn objects(&self) -> Option<&'a crate::snapshot::ClusterObjects> {
        self.objects
    }
}

pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// The cluster events that may make a pod this plugin rejected schedulable (upstream's
    /// EventsToRegister). The default, for plugins that cannot tell, is every event.
    fn events_to_register(&self) -> Vec<events::ClusterEvent> {
        vec![events::ClusterEvent::WILDCARD]
    }

    /// For a pod this plugin rejected and a registered `event`: whether the event may make it
    /// schedulable (upstream's QueueingHintFn). Asked once per event and parked pod, never
    /// in a scheduling cycle; `cluster` is the cluster as it is when asked (after the event).
    /// The default says Queue.
    fn queueing_hint(&self, _pod: &Pod, _event: &events::Event, _cluster: ClusterView<'_>) -> events::QueueingHint {
        events::QueueingHint::Queue
    }

    /// Whether this plugin signs pods (upstream's SignPlugin): a profile signs pods, and so
    /// batches them under OpportunisticBatching, only when every plugin of its PreFilter,
    /// Filter, PreScore and Score points does.
    fn signs_pods(&self) -> bool {
        false
    }

    /// Adds to `sig` what of `pod` this plugin's verdicts and scores depend on
    /// (`signature`), or says why it cannot sign this pod (the pod then has no signature).
    /// Only asked of plugins that sign pods.
    fn sign_pod(&self, _pod: &Pod, _sig: &mut signature::PodSignature) -> Result<(), signature::Unsigned> {
        Err("the plugin does not sign pods")
    }
}

/// Runs in the queue, whenever a pod would enter activeQ or backoffQ (added, updated, moved
/// by an event, its backoff over): a pod any plugin rejects is held, gated, in the
/// unschedulable pods (upstream's PreEnqueue). The status's message says why (e.g. `waiting
/// for scheduling gates: [example.com/wait]`); any code but Success holds the pod.
///
/// The queue runs the plugin that gated a pod first the next time. A gated pod moves only on
/// an event its gating plugin registered for (`Plugin::events_to_register`) and whose hint
/// says Queue (`Plugin::queueing_hint`, asked with the gated pod); wildcard events (the
/// leftover flush) never move it. Called under the queue's lock: it must be quick and must
/// not call back into the queue.
pub trait PreEnqueuePlugin: Plugin {
    /// `cluster`: the cluster as it is when the queue asks (what upstream's listers hold).
    fn pre_enqueue(&self, pod: &Pod, cluster: ClusterView<'_>) -> Status;
}

/// Runs once per cycle before filtering; may compute state or reject the pod outright.
/// Returning `Status::skip()` switches the plugin's Filter off for this cycle.
///
/// Plugins whose PreFilter state counts other pods (upstream's PreFilterExtensions) also
/// implement `add_pod` / `remove_pod`, which update that state as if `other` were added to or
/// removed from `node`: the two-pass filter adds nominated pods, preemption removes victims.
pub trait PreFilterPlugin: Plugin {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status;

    /// The only nodes the pod can go to, when this plugin can tell from the pod alone
    /// (upstream's PreFilterResult; NodeAffinity's `metadata.name` fields). `None`: every
    /// node. Asked after a successful `pre_filter`; the cycle then filters only those nodes.
    fn node_names(&self, _pod: &Pod) -> Option<SmallVec<[Sym; 4]>> {
        None
    }

    /// Whether `add_pod` / `remove_pod` do anything (lets callers skip copying the state).
    fn has_extensions(&self) -> bool {
        false
    }

    fn add_pod(
        &self,
        _state: &mut CycleState,
        _pod: &Pod,
        _other: &Pod,
        _node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        Status::success()
    }

    fn remove_pod(
        &self,
        _state: &mut CycleState,
        _pod: &Pod,
        _other: &Pod,
        _node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        Status::success()
    }
}

/// Decides whether `pod` fits `node`. Called concurrently from the filter workers.
pub trait FilterPlugin: Plugin {
    fn filter(&self, state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status;

    /// Whether `filter` reads `node.pods()`. A plugin that reads only the node object and the
    /// aggregates (requested resources, pod count, host ports, affinity counts) says `false`;
    /// the two-pass filter then places nominated pods on a copy of the aggregates alone
    /// instead of copying the node's pods. `true` is always safe.
    fn reads_pods(&self) -> bool {
        true
    }

    /// Whether `filter_hot`'s verdict on a row can change when pods are added to or taken off
    /// the node (its requested resources, pod count, has-affinity-pods flag). A plugin whose
    /// `filter_hot` reads only the node's own fields (name, taints, unschedulable) says
    /// `false`: preemption's dry run, putting pods back on a row every filter passed, then
    /// asks only the others again. `true` is always safe.
    fn row_follows_pods(&self) -> bool {
        true
    }

    /// The verdict from the node's row in the snapshot's hot columns alone, when this plugin
    /// can give it for `pod` without the NodeInfo; `NeedsNode`: the caller runs `filter`.
    /// Otherwise it equals what `filter` says on the NodeInfo the row was taken from.
    #[inline]
    fn filter_hot(&self, _state: &CycleState, _pod: &Pod, _node: HotRef<'_>) -> RowVerdict {
        RowVerdict::NeedsNode
    }

    /// Whether `filter_hot` judges rows for `pod` at all (some rows may still need the
    /// node). When every active filter does, the filter pass judges a block of rows at a
    /// time (`filter_rows`), reading no NodeInfo for the rows that pass or fail there.
    fn judges_rows(&self, _state: &CycleState, _pod: &Pod) -> bool {
        false
    }

    /// `filter_hot` on the rows `lo..lo + judged.len()` of the snapshot's columns that every filter before
    /// this one passed (`RowJudged::Pass`): a failure or a row that needs its node is
    /// written over the pass. A plugin may first tell from the whole block that every row
    /// passes (a flag no row has); otherwise `filter_rows_each`.
    fn filter_rows(&self, state: &CycleState, pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        filter_rows_each(self, state, pod, snapshot, lo, judged)
    }

    /// Whether `filter_rows` passes every row of a column chunk whose bounds are `floors`
    /// (`Columns::floors`), told from them alone: true only when it would leave every row
    /// `RowJudged::Pass`. When every active filter says so, the filter pass takes a block of
    /// the chunk as passed without judging its rows. `false` is always safe.
    fn passes_chunk(&self, _state: &CycleState, _pod: &Pod, _floors: &Floors) -> bool {
        false
    }
}

/// `plugin.filter_hot` on each row of the block that is still `RowJudged::Pass` (see
/// `FilterPlugin::filter_rows`). One call per block, so `filter_hot` is inlined in the loop.
#[inline]
pub fn filter_rows_each<P: FilterPlugin + ?Sized>(
    plugin: &P,
    state: &CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    lo: usize,
    judged: &mut [RowJudged],
) {
    let block = snapshot.columns().block(lo);
    for (i, j) in judged.iter_mut().enumerate() {
        if let RowJudged::Pass = j {
            match plugin.filter_hot(state, pod, block.at(i)) {
                RowVerdict::Pass => {}
                RowVerdict::Fail(fail) => *j = RowJudged::Fail(plugin.name(), fail),
                RowVerdict::NeedsNode => *j = RowJudged::Node,
            }
        }
    }
}

/// A row's verdict in a block the filter pass judges from the columns: passed every filter
/// so far, failed one (the plugin and its brief), or left to the node-by-node check.
#[derive(Clone, Copy, Debug)]
pub enum RowJudged {
    Pass,
    Fail(&'static str, RowFail),
    Node,
}

/// A filter's verdict from a node's hot row (`FilterPlugin::filter_hot`). Neither a pass nor
/// a failure carries a `Status`: the common verdicts cost a few bytes to return.
#[derive(Clone, Copy, Debug)]
pub enum RowVerdict {
    Pass,
    /// The pod does not fit; the brief says why.
    Fail(RowFail),
    /// The row cannot tell: the NodeInfo must be read.
    NeedsNode,
}

impl RowVerdict {
    /// `Pass` when `fits`, else `Fail` with `fail`.
    #[inline]
    pub fn of(fits: bool, fail: RowFail) -> RowVerdict {
        if fits {
            RowVerdict::Pass
        } else {
            RowVerdict::Fail(fail)
        }
    }
}

/// A failure a filter found from a hot row, in brief: the status code, and a number the
/// plugin's `make` turns into the full status when somebody reads it. Thousands of nodes a
/// cycle rejects share a handful of briefs, so the filter pass builds a `Status` (about 100
/// bytes) only for each different one.
#[derive(Clone, Copy, Debug)]
pub struct RowFail {
    pub code: Code,
    /// What the plugin needs to rebuild the status (its own encoding).
    pub what: u32,
    /// Builds the status of `what` (the plugin left out: the framework sets it).
    pub make: fn(u32) -> Status,
}

impl RowFail {
    /// The same failure: equal `what` from the same `make`.
    #[inline]
    pub fn same(&self, other: &RowFail) -> bool {
        self.what == other.what && self.make as usize == other.make as usize
    }
}

/// A filter chain's verdict on one node: a pass, a failure from a hot row in brief (with the
/// plugin that gave it), or a full status (from a plugin that read the NodeInfo).
#[derive(Clone, Debug)]
pub enum Verdict {
    Pass,
    Brief(&'static str, RowFail),
    Full(Status),
}

impl Verdict {
    #[inline]
    pub fn is_success(&self) -> bool {
        match self {
            Verdict::Pass => true,
            Verdict::Brief(..) => false,
            Verdict::Full(st) => st.is_success(),
        }
    }

    #[inline]
    pub fn code(&self) -> Code {
        match self {
            Verdict::Pass => Code::Success,
            Verdict::Brief(_, f) => f.code,
            Verdict::Full(st) => st.code,
        }
    }

    /// The full status (built now for a brief).
    pub fn into_status(self) -> Status {
        match self {
            Verdict::Pass => Status::success(),
            Verdict::Brief(plugin, f) => (f.make)(f.what).with_plugin(plugin),
            Verdict::Full(st) => st,
        }
    }
}

impl From<Status> for Verdict {
    #[inline]
    fn from(st: Status) -> Verdict {
        if st.is_success() {
            Verdict::Pass
        } else {
            Verdict::Full(st)
        }
    }
}

/// What a PostFilter plugin asks for the pod's nominated node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nominating {
    /// Leave the pod's nomination as it is.
    Noop,
    /// Nominate the pod to this node.
    Set(Sym),
    /// Clear the pod's nomination.
    Clear,
}

/// What a PostFilter plugin proposes: the nomination and, for preemption, the pods to evict
/// first. The scheduler carries it out (upstream's PrepareCandidate): victims are deleted
/// gracefully, lower-priority pods nominated to the node lose their nomination, and the pod
/// is nominated and retried in a later cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct PostFilterResult {
    pub nominating: Nominating,
    /// Pods to delete, most important first.
    pub victims: Vec<Pod>,
    /// Pods of lower priority nominated to the chosen node: their nomination is cleared.
    pub lower_priority_nominated: Vec<Pod>,
    /// Where the scheduler marks the pod while its victims' deletion is still to come
    /// (SchedulerAsyncPreemption): the plugin that proposed the preemption holds such a pod
    /// in its PreEnqueue. `None`: no plugin holds it.
    pub preempting: Option<PreemptingHandle>,
}

impl PostFilterResult {
    pub fn nominating(nominating: Nominating) -> PostFilterResult {
        PostFilterResult { nominating, victims: Vec::new(), lower_priority_nominated: Vec::new(), preempting: None }
    }
}

/// The preemptors whose victims' deletion is still to come (upstream's
/// `Evaluator.preempting`, KEP-4832 asynchronous preemption). The scheduler marks a
/// preemptor when it hands its victims' deletion to a step of its own, and unmarks it in that
/// step just before the last victim is deleted (upstream's preemptor counts as done once its
/// last victim is being deleted); meanwhile the PostFilter plugin that proposed the
/// preemption holds the pod back in its PreEnqueue, so it is not tried again before its
/// victims go. Written by the scheduler's thread, read by whichever thread enqueues a pod.
///
/// A plain std mutex, not the sync seam's: the set is built with the profile (outside any
/// loom model) and only ever held for a lookup.
#[derive(Debug, Default)]
pub struct PreemptingPods {
    uids: std::sync::Mutex<SmallVec<[crate::api::PodUid; 4]>>,
}

impl PreemptingPods {
    fn uids(&self) -> std::sync::MutexGuard<'_, SmallVec<[crate::api::PodUid; 4]>> {
        self.uids.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks `uid` as preempting (once, however often it is marked).
    pub fn start(&self, uid: &crate::api::PodUid) {
        let mut uids = self.uids();
        if !uids.contains(uid) {
            uids.push(uid.clone());
        }
    }

    /// Unmarks `uid`.
    pub fn finish(&self, uid: &crate::api::PodUid) {
        self.uids().retain(|u| u != uid);
    }

    /// Whether `uid` is marked: its victims' deletion is still to come.
    pub fn contains(&self, uid: &crate::api::PodUid) -> bool {
        let uids = self.uids();
        !uids.is_empty() && uids.contains(uid)
    }
}

/// A shared [`PreemptingPods`]: the plugin's and the scheduler's view of one set. Two
/// handles are equal when they name the same set.
#[derive(Clone, Debug, Default)]
pub struct PreemptingHandle(pub std::sync::Arc<PreemptingPods>);

impl PartialEq for PreemptingHandle {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The nominated pods as the framework and its plugins see them (upstream's
/// `framework.PodNominator`): pods a preemption nominated to a node, waiting for room there.
/// The queue's nominator implements it; nothing in the framework names the queue's type.
/// What `PodNominator::visit_nodes` calls for each node: its name, the pods nominated to it
/// and what each adds to its hot row.
pub type VisitNominated<'a> = dyn FnMut(Sym, &[Pod], &[crate::snapshot::PodsDelta]) + 'a;

pub trait PodNominator: Send + Sync {
    /// How many pods are nominated.
    fn nominated_count(&self) -> usize;
    /// Calls `f` with the pods nominated to `node` (empty when none) and what each adds to
    /// the node's hot row (`PodsDelta::of`, same order).
    fn visit_node(&self, node: Sym, f: &mut dyn FnMut(&[Pod], &[crate::snapshot::PodsDelta]));
    /// Calls `f` for every node with nominated pods (order unspecified), as `visit_node`;
    /// once per cycle, not per node.
    fn visit_nodes(&self, f: &mut VisitNominated<'_>);
    /// The node the pod with `uid` is nominated to. A pod is on at most one node's list, so
    /// a cycle looking past its own pod need compare uids on that node only.
    fn nominated_node_of(&self, uid: &crate::api::PodUid) -> Option<Sym>;
    /// Identifies this nominator's change log (`None`: it keeps none, and every cycle
    /// gathers all nominations).
    fn log_id(&self) -> Option<u64> {
        None
    }
    /// The change log's version now; read before visiting every node.
    fn log_version(&self) -> u64 {
        0
    }
    /// Appends to `out` the nodes whose lists changed after log version `since` (a node may
    /// repeat) and returns the version now; `None` when the log no longer reaches back to
    /// `since` (or keeps none).
    fn changes_since(&self, since: u64, out: &mut Vec<Sym>) -> Option<u64> {
        let _ = (since, out);
        None
    }
    /// The pods nominated to `node`, copied.
    fn pods_on(&self, node: Sym) -> Vec<Pod> {
        let mut out = Vec::new();
        self.visit_node(node, &mut |pods, _| out.extend_from_slice(pods));
        out
    }
}

/// What a PostFilter plugin may read and use: the profile (to re-run filters), the cycle's
/// snapshot and filter verdicts, the nominated pods, the worker pool and the cycle's RNG.
pub struct PostFilterContext<'a> {
    pub profile: &'a Profile,
    pub snapshot: &'a Snapshot,
    /// Why each node was rejected this cycle.
    pub statuses: &'a runtime::NodeStatuses,
    pub nominator: Option<&'a dyn PodNominator>,
    /// Pods nominated elsewhere that this pod must leave room for (the two-pass filter's).
    pub nominated: &'a runtime::NominatedPods,
    pub pool: Option<&'a crate::parallel::WorkerPool>,
    pub rng: &'a mut crate::util::rng::Rng,
    /// When set, DefaultPreemption records its dry run here (every candidate with its
    /// victims, every potential node it rejected, the candidates tied after its criteria),
    /// for tools that compare or show it. `None` in the scheduler: nothing is recorded.
    pub preemption_trace: Option<&'a mut preemption::PreemptionTrace>,
    /// The cluster, for PostFilter plugins that write to it (DynamicResources deallocates a
    /// claim); DefaultPreemption's deletions are carried out by the scheduler instead.
    pub api: &'a dyn crate::cluster::ClusterApi,
}

/// Runs when no node fits (preemption).
pub trait PostFilterPlugin: Plugin {
    fn post_filter(
        &self,
        ctx: &mut PostFilterContext<'_>,
        state: &CycleState,
        pod: &Pod,
    ) -> (Option<PostFilterResult>, Status);
}

/// Runs once per cycle before scoring, over the feasible nodes. `Status::skip()` switches the
/// plugin's Score off for this cycle.
pub trait PreScorePlugin: Plugin {
    /// `nodes` are the feasible nodes; reading them as a slice looks up their NodeInfos.
    fn pre_score(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot, nodes: &Feasible<'_>) -> Status;
}

/// Scores one feasible node; `normalize` then maps all of a cycle's scores into 0..=100.
pub trait ScorePlugin: Plugin {
    fn score(&self, state: &CycleState, pod: &Pod, node: &NodeInfo, snapshot: &Snapshot) -> Result<i64, Status>;

    /// Scores every node in `nodes`, appending to `out` in order. Plugins override this to
    /// hoist per-pod work out of the node loop; the result must equal calling `score` per node.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &Pod,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        for node in nodes {
            out.push(self.score(state, pod, node, snapshot)?);
        }
        Ok(())
    }

    /// `score_nodes` from the snapshot's hot columns, for the nodes at `positions` (the same
    /// nodes, in the same order, as `score_nodes` gets): `Scored` having appended one score per
    /// position to `out`; `AllZero` having appended nothing, when every one of them scores 0 and
    /// the plugin can tell without scoring them (the scoring pass then fills instead of scoring,
    /// checking and adding); `Declined` having appended nothing, when this plugin needs the
    /// NodeInfos for `pod` (the default).
    fn score_columns(
        &self,
        _state: &CycleState,
        _pod: &Pod,
        _columns: &Columns,
        _positions: &[u32],
        _snapshot: &Snapshot,
        _out: &mut Vec<i64>,
    ) -> Result<ColumnScoring, Status> {
        Ok(ColumnScoring::Declined)
    }

    /// Whether `score_columns`'s score of a node for `pod` is a function of the node's
    /// `HotRow` and of the returned key alone (this plugin's configuration aside): then the
    /// runtime keeps scores from cycle to cycle under the rows' stamps and the key, and asks
    /// `score_columns` only for the rows written since. `None` (the default): every cycle
    /// scores every node. Used for plugins whose normalize leaves scores as they are
    /// (`Normalizing::Unchanged`).
    fn memo_key(&self, _pod: &Pod) -> Option<ScoreMemoKey> {
        None
    }

    fn normalize(&self, _state: &CycleState, _pod: &Pod, _scores: &mut [i64]) -> Status {
        Status::success()
    }

    /// What `normalize` does, so that scoring on the pool can finish scores chunk by chunk.
    /// The default, `Normalizing::Whole`, promises nothing.
    fn normalizing(&self) -> Normalizing {
        Normalizing::Whole
    }
}

/// What a pod's column scores depend on besides the node's row (`ScorePlugin::memo_key`).
pub type ScoreMemoKey = [i64; 4];

/// What `ScorePlugin::score_columns` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnScoring {
    /// One score per position appended.
    Scored,
    /// Nothing appended: every node at the positions scores 0.
    AllZero,
    /// Nothing appended: the plugin needs the NodeInfos.
    Declined,
}

impl ColumnScoring {
    /// For a caller that wants the scores themselves: appends `n` zeros for `AllZero`; whether
    /// `out` now holds the scores (false: declined).
    pub fn into_scores(self, out: &mut Vec<i64>, n: usize) -> bool {
        match self {
            ColumnScoring::Scored => true,
            ColumnScoring::AllZero => {
                out.resize(out.len() + n, 0);
                true
            }
            ColumnScoring::Declined => false,
        }
    }
}

/// What a score plugin's `normalize` does to a cycle's scores (`ScorePlugin::normalizing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalizing {
    /// Leaves them as they are.
    Unchanged,
    /// `default_normalize_score(MAX_NODE_SCORE, reverse, scores)`.
    ByMax { reverse: bool },
    /// Anything else: it reads every score of the cycle.
    Whole,
}

/// Claims resources for the pod on its node before binding; `unreserve` undoes it.
pub trait ReservePlugin: Plugin {
    fn reserve(&self, state: &mut CycleState, pod: &Pod, node: Sym) -> Status;
    fn unreserve(&self, state: &mut CycleState, pod: &Pod, node: Sym);
}

/// Runs after Reserve, before the pod is bound: makes the API calls the binding needs
/// (VolumeBinding writes the claims' bindings). A failure unreserves and retries the pod.
pub trait PreBindPlugin: Plugin {
    fn pre_bind(&self, state: &mut CycleState, pod: &Pod, node: Sym, api: &dyn crate::cluster::ClusterApi) -> Status;

    /// Upstream's PreBindPreFlight: whether `pre_bind` has work to do for this pod on `node`
    /// (API calls, waiting). With NominatedNodeNameForExpectation the scheduler records the
    /// node as the pod's nominated node before PreBind only when some plugin says so.
    fn pre_bind_has_work(&self, _state: &CycleState, _pod: &Pod, _node: Sym) -> bool {
        false
    }
}

/// Binds the pod to its node. `Code::Skip` passes to the next bind plugin.
pub trait BindPlugin: Plugin {
    fn bind(&self, state: &mut CycleState, pod: &Pod, node: Sym) -> Status;
}

/// Upstream's DefaultNormalizeScore: scales scores to `0..=max` by the largest one; `reverse`
/// turns high raw scores into low normalized ones (all-zero raw scores then become `max`).
pub fn default_normalize_score(max: i64, reverse: bool, scores: &mut [i64]) {
    let max_count = scores.iter().copied().fold(0, i64::max);
    if max_count == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max);
        }
        return;
    }
    for s in scores.iter_mut() {
        let v = max * *s / max_count;
        *s = if reverse { max - v } else { v };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_normalize_score_table() {
        let cases: &[(&[i64], bool, &[i64])] = &[
            (&[0, 0, 0], false, &[0, 0, 0]),
            (&[0, 0, 0], true, &[100, 100, 100]),
            (&[1, 2, 3], false, &[33, 66, 100]),
            (&[1, 2, 3], true, &[67, 34, 0]),
            (&[5], false, &[100]),
        ];
        for (input, reverse, want) in cases {
            let mut s = input.to_vec();
            default_normalize_score(MAX_NODE_SCORE, *reverse, &mut s);
            assert_eq!(&s, want, "{input:?} reverse={reverse}");
        }
    }

    mod normalizing {
        use proptest::prelude::*;

        use super::super::*;
        use crate::api::Pod;

        proptest! {
            /// What each default plugin says its normalize does is what it does, on any
            /// scores (the pool finishes scores chunk by chunk on the strength of it).
            #[test]
            fn declared_normalizing_is_what_normalize_does(
                raw in prop::collection::vec(prop_oneof![3 => 0i64..4, 1 => 0i64..=300], 0..40),
            ) {
                let profile = Profile::default_profile();
                let pod = Pod::builder("p").build();
                let state = CycleState::new();
                let mut declared = 0;
                for ws in &profile.score {
                    let mut got = raw.clone();
                    let st = ws.plugin.normalize(&state, &pod, &mut got);
                    let mut want = raw.clone();
                    match ws.plugin.normalizing() {
                        Normalizing::Unchanged => {}
                        Normalizing::ByMax { reverse } => default_normalize_score(MAX_NODE_SCORE, reverse, &mut want),
                        Normalizing::Whole => continue,
                    }
                    declared += 1;
                    prop_assert!(st.is_success(), "{}: {st:?}", ws.plugin.name());
                    prop_assert_eq!(&got, &want, "{}", ws.plugin.name());
                }
                prop_assert!(declared >= 4, "{declared} default plugins declare their normalize");
            }
        }
    }

    #[test]
    fn cycle_state_typed_slots() {
        #[derive(Clone)]
        struct A(u32);
        #[derive(Clone)]
        struct B(&'static str);
        let mut s = CycleState::new();
        s.write(A(1));
        s.write(B("x"));
        s.write(A(2));
        assert_eq!(s.read::<A>().map(|a| a.0), Some(2));
        assert_eq!(s.read::<B>().map(|b| b.0), Some("x"));
        assert!(s.read::<u64>().is_none());
        let copy = s.clone();
        s.read_mut::<A>().unwrap().0 = 3;
        assert_eq!(copy.read::<A>().map(|a| a.0), Some(2), "a copy is independent");
        assert_eq!(s.read::<A>().map(|a| a.0), Some(3));
        assert!(s.read_mut::<u64>().is_none());
    }

    #[test]
    fn cycle_state_slots_hold_one_value_per_type() {
        #[derive(Clone, Debug, PartialEq)]
        struct A(u32);
        #[derive(Clone, Debug, PartialEq)]
        struct B(u32);
        state_slot!(A);
        state_slot!(B);
        assert_ne!(A::slot(), B::slot());
        assert_eq!(A::slot(), A::slot());
        let mut s = CycleState::new();
        assert!(s.read_slot::<A>().is_none());
        s.write_slot(B(7));
        s.write_slot(A(1));
        s.write_slot(A(2));
        assert_eq!(s.read_slot::<A>(), Some(&A(2)));
        let copy = s.clone();
        s.read_slot_mut::<B>().unwrap().0 = 8;
        assert_eq!((copy.read_slot::<B>(), s.read_slot::<B>()), (Some(&B(7)), Some(&B(8))), "a copy is independent");
    }
}
