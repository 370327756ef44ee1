//! DynamicResources: rejects nodes that cannot give a pod's ResourceClaims their devices, and
//! once a node is chosen allocates them (Reserve keeps the allocation in flight so later
//! cycles see its devices in use; PreBind asks the cluster to write it and the reservation).
//!
//! - PreEnqueue: the pod stays out of the queue while one of its claims cannot be had: a
//!   template entry whose claim the resourceclaim controller has not made yet (no
//!   `status.resourceClaimStatuses` entry), a named claim that does not exist, is being
//!   deleted, or (made from a template) is not the pod's own. The claims are read from the
//!   cluster as the queue sees it (`ClusterView`); a queue without that view checks only the
//!   pod's own entries, and PreFilter then finds the rest with the same messages.
//! - Queueing hints read the cluster the same way: a pod one of whose claims cannot be had
//!   waits (upstream's hints run the PreEnqueue check first).
//! - PreFilter: a pod without claims is skipped. Each claim must exist, not be deleting,
//!   belong to the pod when made from a template, be reservable, not be in the middle of an
//!   allocation; the classes of unallocated claims' requests must exist. The devices in use
//!   (allocated claims and in-flight allocations) are gathered once.
//! - Filter: an allocated claim whose node selector excludes the node makes it unavailable;
//!   the unallocated claims are allocated on the node (`allocator`), whose failure wins over
//!   unavailability; an allocator error fails the attempt.
//! - Score: each `firstAvailable` request adds 8 minus the index of the subrequest chosen;
//!   a pod with allocated and unallocated claims fails as upstream's does (it pairs claims
//!   with the new allocations by position).
//! - PostFilter (no node fits): an allocated claim that Filter found unavailable on some node
//!   (its node selector excluded a node where everything else fitted), reserved for nobody or
//!   for this pod alone, is deallocated through the cluster (`ClusterApi::deallocate_claim`:
//!   allocation and reservations cleared; the claim's update event lets the pod, and any pod
//!   waiting for devices, try again). One claim per attempt: the first such claim in
//!   `spec.resourceClaims` order (upstream takes one in Go map order, at random). Its message
//!   says what happened: `deallocation of ResourceClaim completed`, `still not schedulable`
//!   (nothing to deallocate), or `no new claims to deallocate` (PreFilter found no claims).
//!   A claim whose last reservation goes when its pod does is deallocated by the claim
//!   controller (the simulation's stand-in), not here.
//!
//! The allocator and the CEL environment are beside this file, each tested alone.
//!
//! Speed: the allocator's view of the devices is indexed once per set of slices and node
//! objects (`index`: dense device ids, each node's pools, CEL verdicts kept across cycles per
//! expression and device); the devices in use are counted per dense id and brought up to
//! date from the claims that changed since the last PreFilter; claims of the common shape
//! are searched on the index without allocating per node (`simple`), others by the
//! allocator.

pub mod allocator;
pub mod cel;
pub mod index;
pub mod simple;

use std::sync::{Arc, OnceLock};

use allocator::{AllocError, Allocator, ClaimRef, Features};
use index::{DraIndex, Held};
use simple::{InUse, SimpleRequest};
use smallvec::SmallVec;

use crate::api::dra::{
    AllocationResult, ClaimName, ClaimSpec, DeviceId, DeviceRequest, DraObjects, ResourceClaim, RESERVED_FOR_MAX_SIZE,
};
use crate::api::{Pod, Sym};
use crate::cluster::{ClaimBinding, ClusterApi};
use crate::features::{Feature, FeatureGates};
use crate::framework::events::{ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::{
    default_normalize_score, ClusterView, Code, CycleState, FilterPlugin, Plugin, PostFilterContext, PostFilterPlugin,
    PostFilterResult, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin, Reason, ReservePlugin, RowFail, RowJudged,
    ScorePlugin, Status,
};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::sync::{lock, AtomicBool, Mutex, Ordering};
use crate::util::hash::{FxHashMap, FxHashSet};
use crate::util::shard_map::ShardMap;

#[cfg(test)]
mod cel_props;
#[cfg(test)]
mod hints_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod upstream_rules_tests;

pub const NAME: &str = "DynamicResources";
/// Upstream's PostFilter message for a pod without claims to deallocate.
pub const MSG_NO_CLAIMS: &str = "no new claims to deallocate";
/// Upstream's PostFilter message when it deallocated nothing for a pod with claims.
pub const MSG_STILL_NOT_SCHEDULABLE: &str = "still not schedulable";
/// Upstream's PostFilter message when it deallocated one of the pod's claims.
pub const MSG_DEALLOCATED: &str = "deallocation of ResourceClaim completed";
/// Upstream's cycle-state lookup error, when its PreFilter did not run.
pub const MSG_NO_STATE: &str = "not found";
pub const ERR_CANNOT_ALLOCATE: &str = "cannot allocate all claims";
pub const ERR_NOT_AVAILABLE: &str = "resourceclaim not available on the node";
pub const ERR_IN_USE: &str = "resourceclaim in use";
/// Upstream's `FirstAvailableDeviceRequestMaxSize`: the score of the first subrequest.
const FIRST_AVAILABLE_MAX: i64 = 8;

#[derive(Debug)]
pub struct DynamicResources {
    features: Features,
    /// Claims allocated at Reserve and not yet written by PreBind: claim uid → devices.
    in_flight: Mutex<FxHashMap<Sym, Vec<DeviceId>>>,
    /// The device index of the last PreFilter's snapshot and the devices its claims hold.
    derived: Mutex<Option<Derived>>,
}

/// A claim as it was and as it is (absent: created or deleted).
type ClaimChange = (Option<Arc<ResourceClaim>>, Option<Arc<ResourceClaim>>);

/// What PreFilter keeps from one snapshot to the next (see the module docs).
#[derive(Debug)]
struct Derived {
    index: Arc<DraIndex>,
    /// The claims `counts` counts.
    claims: ShardMap<(Sym, Sym), Arc<ResourceClaim>>,
    /// The devices allocated claims hold.
    held: Arc<Held>,
}

impl Default for DynamicResources {
    fn default() -> Self {
        DynamicResources::new(&FeatureGates::default())
    }
}

impl DynamicResources {
    pub fn new(gates: &FeatureGates) -> DynamicResources {
        DynamicResources {
            features: Features {
                admin_access: gates.enabled(Feature::DRAAdminAccess),
                prioritized_list: gates.enabled(Feature::DRAPrioritizedList),
            },
            in_flight: Mutex::new(FxHashMap::default()),
            derived: Mutex::new(None),
        }
    }

    /// The device index of `snapshot` and the in-use counts of its claims: kept from the last
    /// call when the slices and nodes are the same, with the claims that changed recounted.
    fn devices_in_use(&self, snapshot: &Snapshot) -> (Arc<DraIndex>, Arc<Held>) {
        let claims = &snapshot.objects().dra.claims;
        let mut derived = lock(&self.derived);
        match derived.as_mut() {
            Some(Derived { index, claims: seen, held }) if index.is_for(snapshot) => {
                let mut changed: SmallVec<[ClaimChange; 4]> = SmallVec::new();
                claims.diff(seen, Arc::ptr_eq, |_, old, new| changed.push((old.cloned(), new.cloned())));
                if !changed.is_empty() {
                    let held = Arc::make_mut(held);
                    for (old, new) in &changed {
                        index.count_allocation(held, old.as_ref().and_then(|c| c.allocation.as_ref()), -1);
                        index.count_allocation(held, new.as_ref().and_then(|c| c.allocation.as_ref()), 1);
                    }
                }
                *seen = claims.clone();
            }
            _ => {
                let index = Arc::new(DraIndex::build(snapshot));
                let mut held = Held::new(index.num_devices());
                for c in claims.values() {
                    index.count_allocation(&mut held, c.allocation.as_ref(), 1);
                }
                *derived = Some(Derived { index, claims: claims.clone(), held: Arc::new(held) });
            }
        }
        let d = derived.as_ref().expect("set above");
        (d.index.clone(), d.held.clone())
    }

    /// How many claims are allocated at Reserve and not yet written (tests and tools).
    pub fn num_in_flight(&self) -> usize {
        lock(&self.in_flight).len()
    }
}

fn unresolvable(text: &str) -> Status {
    Status::with_text(Code::UnschedulableAndUnresolvable, text)
}

/// The pod's claims in `spec.resourceClaims` order (entries that need none skipped), or the
/// status upstream's `foreachPodResourceClaim` fails with.
fn pod_claims(pod: &Pod, snapshot: &Snapshot) -> Result<Vec<Arc<ResourceClaim>>, Status> {
    let mut out = Vec::with_capacity(pod.resource_claims.len());
    for_each_claim(pod, &snapshot.objects().dra, |c| out.push(c.clone()))?;
    Ok(out)
}

/// Calls `f` with each of the pod's claims in `spec.resourceClaims` order (entries that need
/// none skipped); stops at the first that cannot be had, with upstream's status for it.
fn for_each_claim(pod: &Pod, dra: &DraObjects, mut f: impl FnMut(&Arc<ResourceClaim>)) -> Result<(), Status> {
    for entry in &pod.resource_claims {
        let (name, must_own) = match pod.claim_name(entry) {
            ClaimName::Named(n, own) => (n, own),
            ClaimName::NotNeeded => continue,
            ClaimName::Pending => return Err(unresolvable(&not_created(pod))),
        };
        let Some(claim) = dra.claim(pod.namespace, name) else {
            return Err(unresolvable(&format!("resourceclaim.resource.k8s.io {:?} not found", name.as_str())));
        };
        if claim.deleting {
            return Err(unresolvable(&format!("resourceclaim {:?} is being deleted", name.as_str())));
        }
        if must_own && claim.owner_pod.is_none_or(|o| o.as_str() != pod.uid.as_str()) {
            return Err(unresolvable(&format!(
                "ResourceClaim {}/{} was not created for pod {}/{} (pod is not owner)",
                claim.namespace, claim.name, pod.namespace, pod.name
            )));
        }
        f(claim);
    }
    Ok(())
}

/// Whether every one of the pod's claims can be had (PreEnqueue's check): read from
/// `cluster` when the queue can see it, else only the pod's own entries.
fn claims_ready(pod: &Pod, cluster: ClusterView<'_>) -> Result<(), Status> {
    match cluster.objects() {
        Some(objects) => for_each_claim(pod, &objects.dra, |_| {}),
        None if pod.resource_claims.iter().any(|e| pod.claim_name(e) == ClaimName::Pending) => {
            Err(unresolvable(&not_created(pod)))
        }
        None => Ok(()),
    }
}

fn not_created(pod: &Pod) -> String {
    format!("pod \"{}/{}\": ResourceClaim not created yet", pod.namespace, pod.name)
}

/// What PreFilter found, for Filter, Score, Reserve and PreBind.
#[derive(Clone, Debug)]
struct PreFilterState {
    /// The pod's claims, in spec order, and their `namespace/name` (for the allocator's
    /// messages: made on first use).
    claims: Vec<Arc<ResourceClaim>>,
    keys: OnceLock<Vec<String>>,
    /// Indices (into `claims`) of the unallocated claims, which Filter allocates.
    to_allocate: Vec<usize>,
    /// The devices, when there are claims to allocate.
    devices: Option<Devices>,
    snapshot: Snapshot,
    /// Per claim: allocated, and found unavailable on a node where everything else fitted
    /// (set by Filter, read by PostFilter).
    unavailable: Arc<[AtomicBool]>,
}

impl PreFilterState {
    /// Filter found the allocated claims whose node selector excludes `node` unavailable
    /// there (everything else fitted): PostFilter may deallocate one.
    fn mark_unavailable(&self, node: &NodeInfo) {
        for (claim, flag) in self.claims.iter().zip(self.unavailable.iter()) {
            let excluded = claim
                .allocation
                .as_ref()
                .and_then(|a| a.node_selector.as_ref())
                .is_some_and(|sel| !sel.matches(&node.node().labels, node.name()));
            if excluded {
                flag.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// The devices a cycle allocates from.
#[derive(Clone, Debug)]
struct Devices {
    index: Arc<DraIndex>,
    /// The devices allocated claims hold.
    held: Arc<Held>,
    /// In-flight allocations: their devices, and those devices' dense ids.
    in_flight: Vec<DeviceId>,
    in_flight_ids: SmallVec<[u32; 4]>,
    /// The claims to allocate as `simple` requests, when they all are of that shape.
    simple: Option<Arc<Vec<SimpleRequest>>>,
    /// Devices in use as the allocator takes them (made on first use).
    allocated: OnceLock<Arc<FxHashSet<DeviceId>>>,
}

impl Devices {
    fn in_use(&self) -> InUse<'_> {
        InUse { held: &self.held, in_flight: &self.in_flight_ids }
    }

    fn allocated(&self) -> &FxHashSet<DeviceId> {
        self.allocated.get_or_init(|| {
            let mut set: FxHashSet<DeviceId> = self.held.held_ids().map(|id| self.index.device_id(id)).collect();
            set.extend(self.in_flight.iter().copied());
            Arc::new(set)
        })
    }
}

/// PreFilter ran for the pod and found no claims to keep (it rejected the pod).
#[derive(Clone, Debug)]
struct Rejected;

/// What Reserve allocated: claim index → its allocation.
#[derive(Clone, Debug)]
struct Reserved(Vec<(usize, AllocationResult)>);

impl DynamicResources {
    /// The allocation of the state's unallocated claims on `node`.
    fn allocate(&self, s: &PreFilterState, node: &NodeInfo) -> Result<Option<Vec<AllocationResult>>, AllocError> {
        let Some(d) = &s.devices else { return Ok(Some(Vec::new())) };
        if let Some(requests) = &d.simple {
            let mut picked = SmallVec::new();
            match simple::search(&d.index, d.index.node_pools(node.name()), requests, d.in_use(), &mut picked) {
                simple::Search::Found => {
                    return simple::results(&d.index, requests, s.to_allocate.len(), &picked).map(Some)
                }
                simple::Search::NotFound => return Ok(None),
                simple::Search::NotFoundInvalidPools => {
                    return Err(AllocError::Failed(allocator::INVALID_POOLS.into()))
                }
                simple::Search::Fallback => {}
            }
        }
        self.allocate_generally(s, d, node)
    }

    /// `allocate` by the allocator itself.
    fn allocate_generally(
        &self,
        s: &PreFilterState,
        d: &Devices,
        node: &NodeInfo,
    ) -> Result<Option<Vec<AllocationResult>>, AllocError> {
        let dra = &s.snapshot.objects().dra;
        let alloc =
            Allocator { features: self.features, classes: &dra.classes, slices: &dra.slices, allocated: d.allocated() };
        let keys = s.keys.get_or_init(|| s.claims.iter().map(|c| c.key()).collect());
        let claims: Vec<ClaimRef<'_>> =
            s.to_allocate.iter().map(|&i| ClaimRef { key: &keys[i], spec: &s.claims[i].spec }).collect();
        alloc.allocate(node.name(), &node.node().labels, &claims)
    }

    /// Whether the state's unallocated claims can be allocated on `node` (Filter): as
    /// `allocate`, without building the allocation.
    fn fits(&self, s: &PreFilterState, node: &NodeInfo) -> Result<bool, AllocError> {
        let Some(d) = &s.devices else { return Ok(true) };
        if let Some(requests) = &d.simple {
            let mut picked = SmallVec::new();
            match simple::search(&d.index, d.index.node_pools(node.name()), requests, d.in_use(), &mut picked) {
                simple::Search::Found => return Ok(true),
                simple::Search::NotFound => return Ok(false),
                simple::Search::NotFoundInvalidPools => {
                    return Err(AllocError::Failed(allocator::INVALID_POOLS.into()))
                }
                simple::Search::Fallback => {}
            }
        }
        self.allocate_generally(s, d, node).map(|a| a.is_some())
    }
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }

    fn signs_pods(&self) -> bool {
        true
    }

    /// Whether a pod's claims tie it to one node or more is not simple to tell: a pod with
    /// claims is not signed (upstream's rule).
    fn sign_pod(
        &self,
        pod: &Pod,
        _sig: &mut crate::framework::signature::PodSignature,
    ) -> Result<(), crate::framework::signature::Unsigned> {
        if pod.resource_claims.is_empty() {
            Ok(())
        } else {
            Err("a pod with resource claims is not signed")
        }
    }

    /// Upstream v1.35's registrations (with queueing hints on): nodes added or relabelled or
    /// grown (a slice may select them), claims added or updated (hint: `claim_hint`), a pod's
    /// generated claims recorded in its status (hint: `pod_hint`), classes and slices added
    /// or updated (no hint: always worth a retry). A pod's deletion frees devices through
    /// its claims (the claim controller's update deallocates them), not through a pod event.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD | ActionType::UPDATE_NODE_LABEL | ActionType::UPDATE_NODE_ALLOCATABLE,
            ),
            ClusterEvent::new(EventResource::ResourceClaim, ActionType::ADD | ActionType::UPDATE),
            ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM),
            ClusterEvent::new(EventResource::DeviceClass, ActionType::ADD | ActionType::UPDATE),
            ClusterEvent::new(EventResource::ResourceSlice, ActionType::ADD | ActionType::UPDATE),
        ]
    }

    fn queueing_hint(&self, pod: &Pod, event: &Event, cluster: ClusterView<'_>) -> QueueingHint {
        match event.kind.resource {
            EventResource::ResourceClaim => claim_hint(pod, event, cluster),
            EventResource::Pod | EventResource::UnscheduledPod => pod_hint(pod, event, cluster),
            _ => QueueingHint::Queue,
        }
    }
}

/// How `pod` names `claim`: `None` when it does not use it; `Some(false)` when it names it
/// but the claim, made from a template, is not the pod's (upstream's ownership check fails).
fn names_claim(pod: &Pod, claim: &ResourceClaim) -> Option<bool> {
    if claim.namespace != pod.namespace {
        return None;
    }
    pod.resource_claims.iter().find_map(|e| match pod.claim_name(e) {
        ClaimName::Named(name, must_own) if name == claim.name => {
            Some(!must_own || claim.owner_pod.is_some_and(|o| o.as_str() == pod.uid.as_str()))
        }
        _ => None,
    })
}

/// A claim was added or updated: worth a retry when it is one of the pod's claims and was
/// just created or its status (allocation, reservations) changed, or when any claim was
/// deallocated (its devices are free again). A pod one of whose claims cannot be had
/// (`claims_ready`; without a view of the cluster, the changed claim stands in for the
/// cluster's copy of itself) waits.
fn claim_hint(pod: &Pod, event: &Event, cluster: ClusterView<'_>) -> QueueingHint {
    let (old, new) = event.claims();
    let Some(new) = new else { return QueueingHint::Queue };
    if claims_ready(pod, cluster).is_err() || names_claim(pod, new) == Some(false) {
        return QueueingHint::QueueSkip;
    }
    if old.is_some_and(|o| o.allocation.is_some()) && new.allocation.is_none() {
        return QueueingHint::Queue;
    }
    if names_claim(pod, new).is_none() {
        return QueueingHint::QueueSkip;
    }
    match old {
        None => QueueingHint::Queue,
        Some(o) if o.allocation == new.allocation && o.reserved_for == new.reserved_for => QueueingHint::QueueSkip,
        Some(_) => QueueingHint::Queue,
    }
}

/// A pod changed its generated claims: worth a retry for that pod itself once all its claims
/// can be had.
fn pod_hint(pod: &Pod, event: &Event, cluster: ClusterView<'_>) -> QueueingHint {
    match event.pods().1 {
        Some(new) if new.uid == pod.uid && claims_ready(new, cluster).is_ok() => QueueingHint::Queue,
        _ => QueueingHint::QueueSkip,
    }
}

impl PreEnqueuePlugin for DynamicResources {
    fn pre_enqueue(&self, pod: &Pod, cluster: ClusterView<'_>) -> Status {
        match claims_ready(pod, cluster) {
            Ok(()) => Status::success(),
            Err(st) => st,
        }
    }
}

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        if pod.resource_claims.is_empty() {
            return Status::skip();
        }
        // Upstream writes its (empty) state first: a pod this PreFilter rejects has no new
        // claims to deallocate at PostFilter.
        state.write(Rejected);
        let claims = match pod_claims(pod, snapshot) {
            Ok(c) if c.is_empty() => return Status::skip(),
            Ok(c) => c,
            Err(st) => return st,
        };
        let dra = &snapshot.objects().dra;
        let in_flight = lock(&self.in_flight);
        let mut to_allocate = Vec::new();
        for (i, claim) in claims.iter().enumerate() {
            if claim.allocation.is_some() {
                if claim.reserved_for.len() >= RESERVED_FOR_MAX_SIZE && !claim.is_reserved_for(pod.uid.as_str()) {
                    return unresolvable(ERR_IN_USE);
                }
                continue;
            }
            if in_flight.contains_key(&claim.uid) {
                return unresolvable(&format!(
                    "resource claim {}/{} is in the process of being allocated",
                    claim.namespace, claim.name
                ));
            }
            for r in &claim.spec.requests {
                let check = |class: Sym, name: &str| -> Option<Status> {
                    dra.class(class)
                        .is_none()
                        .then(|| unresolvable(&format!("request {name}: device class {class} does not exist")))
                };
                let missing = match r {
                    DeviceRequest::Exactly(e) => check(e.device_class, e.name.as_str()),
                    DeviceRequest::FirstAvailable { name, subrequests } => {
                        if !self.features.prioritized_list {
                            return unresolvable(&format!(
                                "resource claim {}/{}, request {name}: has subrequests, but the DRAPrioritizedList feature is disabled",
                                claim.namespace, claim.name
                            ));
                        }
                        subrequests.iter().find_map(|s| check(s.device_class, &format!("{name}/{}", s.name)))
                    }
                };
                if let Some(st) = missing {
                    return st;
                }
            }
            to_allocate.push(i);
        }
        let in_flight_devices: Vec<DeviceId> =
            if to_allocate.is_empty() { Vec::new() } else { in_flight.values().flatten().copied().collect() };
        drop(in_flight);
        let in_flight = in_flight_devices;
        let devices = (!to_allocate.is_empty()).then(|| {
            let (index, held) = self.devices_in_use(snapshot);
            let in_flight_ids = in_flight.iter().flat_map(|d| index.ids_of(d)).copied().collect();
            let specs: Vec<&ClaimSpec> = to_allocate.iter().map(|&i| &*claims[i].spec).collect();
            let simple = simple::prepare(&index, &dra.classes, &specs).map(Arc::new);
            Devices { index, held, in_flight, in_flight_ids, simple, allocated: OnceLock::new() }
        });
        let keys = OnceLock::new();
        let unavailable = claims.iter().map(|_| AtomicBool::new(false)).collect();
        state.write(PreFilterState { claims, keys, to_allocate, devices, snapshot: snapshot.clone(), unavailable });
        Status::success()
    }
}

impl FilterPlugin for DynamicResources {
    fn filter(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::success();
        };
        let labels = &node.node().labels;
        let unavailable = s.claims.iter().any(|c| {
            c.allocation
                .as_ref()
                .and_then(|a| a.node_selector.as_ref())
                .is_some_and(|sel| !sel.matches(labels, node.name()))
        });
        if !s.to_allocate.is_empty() {
            match self.fits(s, node) {
                Ok(true) => {}
                Ok(false) => {
                    return Status::new(Code::UnschedulableAndUnresolvable, Reason::Static(ERR_CANNOT_ALLOCATE))
                }
                // A fixed message (an invalid pool), counted in the FitError like the others.
                Err(AllocError::Failed(msg)) => {
                    return Status::new(Code::UnschedulableAndUnresolvable, Reason::Text(Sym::new(&msg)))
                }
                Err(AllocError::Fatal(msg)) => return Status::error(msg),
            }
        }
        if unavailable {
            s.mark_unavailable(node);
            return Status::new(Code::UnschedulableAndUnresolvable, Reason::Static(ERR_NOT_AVAILABLE));
        }
        Status::success()
    }

    fn reads_pods(&self) -> bool {
        false
    }

    /// Claims of the common shape (`simple`) on the nodes' rows: the device index knows each
    /// position's pools, so a block of rows is judged without its NodeInfos.
    fn judges_rows(&self, state: &CycleState, _pod: &Pod) -> bool {
        state.read::<PreFilterState>().is_none_or(judged_by_rows)
    }

    fn filter_rows(&self, state: &CycleState, _pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        let Some(s) = state.read::<PreFilterState>() else { return };
        let requests = match &s.devices {
            Some(d) if judged_by_rows(s) && d.index.is_for(snapshot) => d.simple.as_ref().map(|r| (d, r)),
            None if judged_by_rows(s) => return,
            _ => None,
        };
        let Some((d, requests)) = requests else {
            judged.iter_mut().filter(|j| matches!(j, RowJudged::Pass)).for_each(|j| *j = RowJudged::Node);
            return;
        };
        let mut picked = SmallVec::new();
        for (i, j) in judged.iter_mut().enumerate() {
            if !matches!(j, RowJudged::Pass) {
                continue;
            }
            match simple::search(&d.index, d.index.pools_at(lo + i), requests, d.in_use(), &mut picked) {
                simple::Search::Found => {}
                simple::Search::NotFound => *j = RowJudged::Fail(NAME, CANNOT_ALLOCATE),
                simple::Search::NotFoundInvalidPools | simple::Search::Fallback => *j = RowJudged::Node,
            }
        }
    }
}

/// Filter's "cannot allocate all claims", in brief.
const CANNOT_ALLOCATE: RowFail = RowFail {
    code: Code::UnschedulableAndUnresolvable,
    what: 0,
    make: |_| Status::new(Code::UnschedulableAndUnresolvable, Reason::Static(ERR_CANNOT_ALLOCATE)),
};

/// Whether Filter's verdict needs nothing of the node but its position: no allocated claim
/// with a node selector, and the claims to allocate (if any) of the `simple` shape.
fn judged_by_rows(s: &PreFilterState) -> bool {
    let selective = |c: &Arc<ResourceClaim>| c.allocation.as_ref().is_some_and(|a| a.node_selector.is_some());
    !s.claims.iter().any(selective) && s.devices.as_ref().is_none_or(|d| d.simple.is_some())
}

impl PostFilterPlugin for DynamicResources {
    fn post_filter(
        &self,
        ctx: &mut PostFilterContext<'_>,
        state: &CycleState,
        pod: &Pod,
    ) -> (Option<PostFilterResult>, Status) {
        if let Some(s) = state.read::<PreFilterState>() {
            let only_this_pod = |c: &ResourceClaim| match c.reserved_for.as_slice() {
                [] => true,
                [r] => r.uid.as_str() == pod.uid.as_str(),
                _ => false,
            };
            let deallocate = s
                .claims
                .iter()
                .zip(s.unavailable.iter())
                .find(|(c, flag)| flag.load(Ordering::Relaxed) && only_this_pod(c));
            if let Some((claim, _)) = deallocate {
                return match ctx.api.deallocate_claim(pod, claim) {
                    Ok(()) => (None, Status::new(Code::Unschedulable, Reason::Static(MSG_DEALLOCATED))),
                    Err(e) => (None, Status::error(e.to_string())),
                };
            }
            return (None, Status::new(Code::Unschedulable, Reason::Static(MSG_STILL_NOT_SCHEDULABLE)));
        }
        if !state.skips_filter(NAME) && state.read::<Rejected>().is_none() {
            return (None, Status::error(MSG_NO_STATE));
        }
        (None, Status::new(Code::Unschedulable, Reason::Static(MSG_NO_CLAIMS)))
    }
}

impl ScorePlugin for DynamicResources {
    fn score(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        let Some(s) = state.read::<PreFilterState>() else { return Ok(0) };
        if s.to_allocate.is_empty() {
            return Ok(0);
        }
        if s.to_allocate.len() < s.claims.len() {
            return Err(Status::error(format!(
                "number of allocations {} is smaller than number of claims",
                s.to_allocate.len()
            )));
        }
        let first_available =
            |c: &ResourceClaim| c.spec.requests.iter().any(|r| matches!(r, DeviceRequest::FirstAvailable { .. }));
        if !s.claims.iter().any(|c| first_available(c)) {
            return Ok(0);
        }
        let allocations = match self.allocate(s, node) {
            Ok(Some(a)) => a,
            _ => return Ok(0),
        };
        let mut score = 0;
        for (claim, allocation) in s.claims.iter().zip(&allocations) {
            for r in &claim.spec.requests {
                let DeviceRequest::FirstAvailable { name, subrequests } = r else { continue };
                for (i, sub) in subrequests.iter().enumerate() {
                    let picked = allocation
                        .results
                        .iter()
                        .any(|d| d.request.as_str().split_once('/') == Some((name.as_str(), sub.name.as_str())));
                    if picked {
                        score += FIRST_AVAILABLE_MAX - i as i64;
                    }
                }
            }
        }
        Ok(score)
    }

    /// A pod without claims to allocate scores 0 everywhere, known without the nodes.
    fn score_columns(
        &self,
        state: &CycleState,
        _pod: &Pod,
        _columns: &crate::snapshot::columns::Columns,
        _positions: &[u32],
        _snapshot: &Snapshot,
        _out: &mut Vec<i64>,
    ) -> Result<crate::framework::ColumnScoring, Status> {
        // Only `firstAvailable` requests score, and a pod with allocated and unallocated
        // claims fails in `score`.
        let first_available =
            |c: &ResourceClaim| c.spec.requests.iter().any(|r| matches!(r, DeviceRequest::FirstAvailable { .. }));
        Ok(match state.read::<PreFilterState>() {
            Some(s)
                if !s.to_allocate.is_empty()
                    && (s.to_allocate.len() < s.claims.len() || s.claims.iter().any(|c| first_available(c))) =>
            {
                crate::framework::ColumnScoring::Declined
            }
            _ => crate::framework::ColumnScoring::AllZero,
        })
    }

    fn normalize(&self, _state: &CycleState, _pod: &Pod, scores: &mut [i64]) -> Status {
        default_normalize_score(crate::framework::MAX_NODE_SCORE, false, scores);
        Status::success()
    }

    /// `normalize` is the default by-max rule, said here so that a pod without claims to
    /// allocate (`AllZero`) costs the score table nothing per node.
    fn normalizing(&self) -> crate::framework::Normalizing {
        crate::framework::Normalizing::ByMax { reverse: false }
    }
}

impl ReservePlugin for DynamicResources {
    fn reserve(&self, state: &mut CycleState, _pod: &Pod, node: Sym) -> Status {
        let Some(s) = state.read::<PreFilterState>() else { return Status::success() };
        if s.to_allocate.is_empty() {
            return Status::success();
        }
        let Some(info) = s.snapshot.get(node) else {
            return Status::error(format!("node {node} is not in the cycle's snapshot"));
        };
        let allocations = match self.allocate(s, info) {
            Ok(Some(a)) => a,
            Ok(None) | Err(AllocError::Failed(_)) => return Status::error("claim allocation not found for node"),
            Err(AllocError::Fatal(e)) => return Status::error(e),
        };
        let reserved: Vec<(usize, AllocationResult)> = s.to_allocate.iter().copied().zip(allocations).collect();
        {
            let mut in_flight = lock(&self.in_flight);
            for (i, a) in &reserved {
                let devices = a
                    .results
                    .iter()
                    .filter(|r| !r.admin_access)
                    .map(|r| DeviceId { driver: r.driver, pool: r.pool, device: r.device })
                    .collect();
                in_flight.insert(s.claims[*i].uid, devices);
            }
        }
        state.write(Reserved(reserved));
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _pod: &Pod, _node: Sym) {
        let (Some(s), Some(Reserved(reserved))) = (state.read::<PreFilterState>(), state.read::<Reserved>()) else {
            return;
        };
        let mut in_flight = lock(&self.in_flight);
        for (i, _) in reserved {
            in_flight.remove(&s.claims[*i].uid);
        }
    }
}

impl PreBindPlugin for DynamicResources {
    /// Work to do whenever the pod has claims (upstream's PreBindPreFlight).
    fn pre_bind_has_work(&self, state: &CycleState, _pod: &Pod, _node: Sym) -> bool {
        state.read::<PreFilterState>().is_some_and(|s| !s.claims.is_empty())
    }

    fn pre_bind(&self, state: &mut CycleState, pod: &Pod, _node: Sym, api: &dyn ClusterApi) -> Status {
        let Some(s) = state.read::<PreFilterState>() else { return Status::success() };
        let reserved = state.read::<Reserved>().map(|r| r.0.as_slice()).unwrap_or_default();
        let mut writes = Vec::new();
        for (i, claim) in s.claims.iter().enumerate() {
            if claim.is_reserved_for(pod.uid.as_str()) {
                continue;
            }
            let allocation = reserved.iter().find(|(j, _)| *j == i).map(|(_, a)| a.clone());
            writes.push(ClaimBinding { namespace: claim.namespace, name: claim.name, allocation });
        }
        let result = if writes.is_empty() { Ok(()) } else { api.bind_claims(pod, &writes) };
        // Written (the cluster's claims now hold the allocations) or failed (Unreserve
        // follows): either way the in-flight record has served its purpose.
        {
            let mut in_flight = lock(&self.in_flight);
            for (i, _) in reserved {
                in_flight.remove(&s.claims[*i].uid);
            }
        }
        match result {
            Ok(()) => Status::success(),
            Err(e) => Status::error(e.to_string()),
        }
    }
}

/// One of a pod's claims as DynamicResources would leave it on a node: the claim, and the
/// allocation its PreBind would write (`None` for a claim already allocated).
#[derive(Clone, Debug)]
pub struct ClaimOutcome {
    pub claim: Arc<ResourceClaim>,
    pub allocation: Option<AllocationResult>,
}

/// What DynamicResources would allocate for `pod`'s claims on `node` (PreFilter then the
/// allocator, as Reserve runs it), for tools that show or compare devices: the pod's claims
/// in spec order; `Err` with the rejection or error message. Nothing is kept in flight.
pub fn allocate_on_node(
    gates: &FeatureGates,
    pod: &Pod,
    snapshot: &Snapshot,
    node: Sym,
) -> Result<Vec<ClaimOutcome>, String> {
    let pl = DynamicResources::new(gates);
    let mut state = CycleState::new();
    let st = pl.pre_filter(&mut state, pod, snapshot);
    if st.is_skip() {
        return Ok(Vec::new());
    }
    if !st.is_success() {
        return Err(st.message());
    }
    let s = state.read::<PreFilterState>().ok_or("no PreFilter state")?;
    let info = snapshot.get(node).ok_or_else(|| format!("node {node} is not in the snapshot"))?;
    let mut allocations = if s.to_allocate.is_empty() {
        Vec::new()
    } else {
        match pl.allocate(s, info) {
            Ok(Some(a)) => a,
            Ok(None) => return Err(ERR_CANNOT_ALLOCATE.into()),
            Err(AllocError::Failed(e) | AllocError::Fatal(e)) => return Err(e),
        }
    }
    .into_iter();
    Ok(s.claims
        .iter()
        .enumerate()
        .map(|(i, c)| ClaimOutcome {
            claim: c.clone(),
            allocation: if s.to_allocate.contains(&i) { allocations.next() } else { None },
        })
        .collect())
}

/// Allocates claims without a pod, one after the other, each seeing the devices of the
/// allocations before it in use (scheduler_perf's `allocResourceClaims`).
pub struct ClaimAllocator<'s> {
    features: Features,
    snapshot: &'s Snapshot,
    in_use: FxHashSet<DeviceId>,
}

impl<'s> ClaimAllocator<'s> {
    /// The devices of the snapshot's allocated claims start in use.
    pub fn new(gates: &FeatureGates, snapshot: &'s Snapshot) -> ClaimAllocator<'s> {
        let features = DynamicResources::new(gates).features;
        let mut in_use = FxHashSet::default();
        for c in snapshot.objects().dra.claims.values() {
            in_use.extend(allocated_devices(c.allocation.as_ref()));
        }
        ClaimAllocator { features, snapshot, in_use }
    }

    /// `claim`'s allocation on `node` (kept in use from now on), `None` when the node's
    /// devices cannot serve it; `Err` with the allocator's message.
    pub fn allocate(&mut self, claim: &ResourceClaim, node: Sym) -> Result<Option<AllocationResult>, String> {
        let info = self.snapshot.get(node).ok_or_else(|| format!("node {node} is not in the snapshot"))?;
        let dra = &self.snapshot.objects().dra;
        let alloc =
            Allocator { features: self.features, classes: &dra.classes, slices: &dra.slices, allocated: &self.in_use };
        let key = claim.key();
        let found = match alloc.allocate(node, &info.node().labels, &[ClaimRef { key: &key, spec: &claim.spec }]) {
            Ok(found) => found,
            Err(AllocError::Failed(_)) => None,
            Err(AllocError::Fatal(e)) => return Err(e),
        };
        let Some(a) = found.and_then(|mut v| v.pop()) else { return Ok(None) };
        self.in_use.extend(allocated_devices(Some(&a)));
        Ok(Some(a))
    }
}

/// The devices an allocation holds (admin access holds none).
fn allocated_devices(a: Option<&AllocationResult>) -> impl Iterator<Item = DeviceId> + '_ {
    a.into_iter().flat_map(|a| a.results.iter()).filter(|r| !r.admin_access).map(|r| DeviceId {
        driver: r.driver,
        pool: r.pool,
        device: r.device,
    })
}
