//! The structured allocator: which devices a node can give a pod's unallocated claims, as
//! upstream's stable allocator (`structured/internal/stable`) picks them.
//!
//! 1. **Pools** visible from the node: slices whose `nodeName` is the node, whose
//!    `nodeSelector` matches it, or with `allNodes`. Of a pool only its highest generation
//!    counts; a pool is complete when it has `resourceSliceCount` slices of that generation
//!    (counted over every slice, visible or not, when the visible ones are too few; a pool
//!    whose visible slices are outdated is dropped); repeated device names make a complete
//!    pool invalid (an incomplete one is never validated).
//! 2. **Requests** are checked claim by claim, request by request (each `firstAvailable`
//!    subrequest too): the class exists, admin access and subrequests are allowed by the
//!    gates; an `All` request lists every device of every visible pool its class and
//!    selectors accept (an incomplete or invalid pool is an error), and needs them all.
//! 3. **Search**, depth-first with backtracking: claims in order, requests in order, for a
//!    `firstAvailable` request its subrequests in order (the first that leads to a complete
//!    solution wins), then one device after the other. Each device is sought from the start:
//!    pool by pool, slice by slice, device by device, skipping incomplete and invalid pools,
//!    devices in use (allocated claims, in-flight allocations, picked earlier in this search;
//!    with admin access only those picked for the same claim), devices the class's and the
//!    request's selectors refuse, and devices that would break a `matchAttribute` constraint
//!    of their claim. The first complete solution wins.
//!
//! Selector verdicts are memoised per (request, device) within one call, as upstream does.
//! Errors are upstream's: `Fatal` aborts the scheduling attempt (a Filter error), `Failed`
//! is an unschedulable node with a message, `Ok(None)` is "cannot allocate all claims".

use std::sync::Arc;

use smallvec::SmallVec;

use super::cel::device_matches;
use crate::api::dra::{
    AllocationMode, AllocationResult, AttributeValue, CelSelector, ClaimSpec, Device, DeviceClass, DeviceId,
    DeviceRequest, DeviceResult, ExactRequest, ResourceSlice, SliceNodes,
};
use crate::api::{Labels, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Sym};
use crate::util::hash::{FxHashMap, FxHashSet};

/// Upstream's message when no allocation was found and a visible pool is invalid.
pub const INVALID_POOLS: &str = "invalid resource pools were encountered";

/// Upstream's `AllocationResultsMaxSize`: at most this many devices per claim.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

/// What the gates allow the allocator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    pub admin_access: bool,
    pub prioritized_list: bool,
}

/// Why no allocation was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The node cannot serve the claims, with upstream's message (an invalid pool).
    Failed(String),
    /// Upstream's allocator returned an error: the attempt fails.
    Fatal(String),
}

/// A pool visible from a node.
#[derive(Debug)]
pub struct Pool<'a> {
    pub driver: Sym,
    pub pool: Sym,
    pub slices: SmallVec<[&'a ResourceSlice; 2]>,
    pub incomplete: bool,
    pub invalid: bool,
}

impl Pool<'_> {
    fn id(&self) -> String {
        format!("{}/{}", self.driver, self.pool)
    }
}

/// Whether a slice's devices are reachable from the node (`PerDevice` slices never are,
/// DRAPartitionableDevices being off).
pub fn slice_visible(slice: &ResourceSlice, node: Sym, labels: &Labels) -> bool {
    match &slice.nodes {
        SliceNodes::Node(n) => *n == node,
        SliceNodes::Selector(sel) => sel.matches(labels, node),
        SliceNodes::AllNodes => true,
        SliceNodes::PerDevice => false,
    }
}

/// A pool visible from a node, by the indices of its slices (of the newest generation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedPool {
    pub driver: Sym,
    pub pool: Sym,
    pub slices: SmallVec<[u32; 2]>,
    pub incomplete: bool,
    pub invalid: bool,
}

/// The pools of the `visible` slices (indices into `slices`, ascending), in the order their
/// first slice appears: of a pool only its newest generation; complete when it has
/// `resourceSliceCount` slices of it (counted over every slice when the visible ones are too
/// few; a pool whose visible slices are outdated is dropped); invalid when it is complete
/// and a device name repeats among its visible slices.
pub fn gather_pool_indices(slices: &[Arc<ResourceSlice>], visible: impl Iterator<Item = usize>) -> Vec<IndexedPool> {
    let mut pools: Vec<IndexedPool> = Vec::new();
    for i in visible {
        let slice = &slices[i];
        match pools.iter_mut().find(|p| p.driver == slice.driver && p.pool == slice.pool) {
            None => pools.push(IndexedPool {
                driver: slice.driver,
                pool: slice.pool,
                slices: smallvec::smallvec![i as u32],
                incomplete: false,
                invalid: false,
            }),
            Some(p) => {
                let generation = slices[p.slices[0] as usize].generation;
                if slice.generation < generation {
                    continue;
                }
                if slice.generation > generation {
                    p.slices.clear();
                }
                p.slices.push(i as u32);
            }
        }
    }
    pools.retain_mut(|p| {
        let first = &slices[p.slices[0] as usize];
        let mut complete = p.slices.len() as i64 == first.resource_slice_count;
        if !complete {
            let mut count = 0;
            for s in slices.iter().filter(|s| s.driver == p.driver && s.pool == p.pool) {
                if s.generation > first.generation {
                    return false; // obsolete: a newer generation exists elsewhere
                }
                count += i64::from(s.generation == first.generation);
            }
            complete = count == first.resource_slice_count;
        }
        p.incomplete = !complete;
        // Upstream validates only complete pools: an incomplete one is never "invalid".
        let mut names: FxHashSet<Sym> = FxHashSet::default();
        p.invalid =
            complete && !p.slices.iter().flat_map(|&s| slices[s as usize].devices.iter()).all(|d| names.insert(d.name));
        true
    });
    pools
}

/// The pools visible from `node`, in the order their first slice appears in `slices`.
pub fn gather_pools<'a>(slices: &'a [Arc<ResourceSlice>], node: Sym, labels: &Labels) -> Vec<Pool<'a>> {
    let visible = (0..slices.len()).filter(|&i| slice_visible(&slices[i], node, labels));
    gather_pool_indices(slices, visible)
        .into_iter()
        .map(|p| Pool {
            driver: p.driver,
            pool: p.pool,
            slices: p.slices.iter().map(|&i| &*slices[i as usize]).collect(),
            incomplete: p.incomplete,
            invalid: p.invalid,
        })
        .collect()
}

/// A claim to allocate: its `namespace/name` (for messages) and spec.
#[derive(Clone, Copy, Debug)]
pub struct ClaimRef<'a> {
    pub key: &'a str,
    pub spec: &'a ClaimSpec,
}

/// A device of a visible pool.
#[derive(Clone, Copy, Debug)]
struct DevRef<'a> {
    id: DeviceId,
    device: &'a Device,
    slice: &'a ResourceSlice,
}

/// A request or subrequest, checked.
struct RequestData<'a> {
    request: &'a ExactRequest,
    /// The parent request's name, for a subrequest.
    parent: Option<Sym>,
    class: &'a DeviceClass,
    num_devices: usize,
    all_devices: Vec<DevRef<'a>>,
}

impl RequestData<'_> {
    fn result_name(&self) -> Sym {
        match self.parent {
            Some(p) => Sym::new(&format!("{p}/{}", self.request.name)),
            None => self.request.name,
        }
    }

    fn base_name(&self) -> Sym {
        self.parent.unwrap_or(self.request.name)
    }
}

/// A request of a claim: one, or subrequests in order.
struct RequestSlot<'a> {
    options: Vec<RequestData<'a>>,
    first_available: bool,
}

struct MatchAttribute<'a> {
    requests: &'a [Sym],
    attribute: &'a str,
    value: Option<&'a AttributeValue>,
    count: usize,
}

impl<'a> MatchAttribute<'a> {
    fn applies(&self, base: Sym, sub: Option<Sym>) -> bool {
        self.requests.is_empty()
            || self.requests.iter().any(|r| {
                *r == base || sub.is_some_and(|s| r.as_str().split_once('/') == Some((base.as_str(), s.as_str())))
            })
    }

    fn add(&mut self, base: Sym, sub: Option<Sym>, d: &DevRef<'a>) -> bool {
        if !self.applies(base, sub) {
            return true;
        }
        let Some(v) = d.device.lookup_attribute(d.id.driver, self.attribute) else { return false };
        if self.count == 0 {
            self.value = Some(v);
            self.count = 1;
            return true;
        }
        if self.value != Some(v) {
            return false;
        }
        self.count += 1;
        true
    }

    fn remove(&mut self, base: Sym, sub: Option<Sym>) {
        if self.applies(base, sub) {
            self.count -= 1;
        }
    }
}

/// One picked device.
#[derive(Clone, Copy)]
struct Picked<'a> {
    dev: DevRef<'a>,
    request: Sym,
    admin: bool,
}

/// The allocator's view of the cluster for one pod's cycle.
pub struct Allocator<'a> {
    pub features: Features,
    pub classes: &'a FxHashMap<Sym, Arc<DeviceClass>>,
    pub slices: &'a [Arc<ResourceSlice>],
    /// Devices of allocated claims and in-flight allocations.
    pub allocated: &'a FxHashSet<DeviceId>,
}

struct Search<'a, 'c> {
    claims: &'c [ClaimRef<'a>],
    pools: &'c [Pool<'a>],
    requests: Vec<Vec<RequestSlot<'a>>>,
    /// Selected subrequest per (claim, request).
    selected: Vec<Vec<usize>>,
    constraints: Vec<Vec<MatchAttribute<'a>>>,
    allocated: &'a FxHashSet<DeviceId>,
    /// Device → claims it is being allocated to in this search.
    allocating: FxHashMap<DeviceId, SmallVec<[u32; 2]>>,
    results: Vec<Vec<Picked<'a>>>,
    memo: FxHashMap<(u32, u32, u32, DeviceId), bool>,
}

fn selectors_match(selectors: &[CelSelector], d: &DevRef<'_>, owner: impl Fn() -> String) -> Result<bool, AllocError> {
    for (i, sel) in selectors.iter().enumerate() {
        match device_matches(sel, d.id.driver, d.device) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => return Err(AllocError::Fatal(format!("{}: selector #{i}: CEL runtime error: {e}", owner()))),
        }
    }
    Ok(true)
}

/// Whether the device is usable at all with the gates off, then class and request selectors.
fn selectable(claim_key: &str, rd: &RequestData<'_>, d: &DevRef<'_>) -> Result<bool, AllocError> {
    if d.device.needs_feature == Some("DRADeviceBindingConditions") {
        return Ok(false);
    }
    if !selectors_match(&rd.class.selectors, d, || format!("class {}", rd.class.name))? {
        return Ok(false);
    }
    selectors_match(&rd.request.selectors, d, || format!("claim {claim_key}"))
}

impl<'a> Allocator<'a> {
    /// Allocates `claims` on `node`: `Ok(Some(results))`, one per claim in order, or
    /// `Ok(None)` when the node cannot serve them.
    pub fn allocate(
        &self,
        node: Sym,
        labels: &Labels,
        claims: &[ClaimRef<'a>],
    ) -> Result<Option<Vec<AllocationResult>>, AllocError> {
        let pools = gather_pools(self.slices, node, labels);
        let mut search = Search {
            claims,
            pools: &pools,
            requests: Vec::with_capacity(claims.len()),
            selected: Vec::with_capacity(claims.len()),
            constraints: Vec::with_capacity(claims.len()),
            allocated: self.allocated,
            allocating: FxHashMap::default(),
            results: vec![Vec::new(); claims.len()],
            memo: FxHashMap::default(),
        };
        for c in claims {
            let mut slots = Vec::with_capacity(c.spec.requests.len());
            let mut min_devices = 0;
            for r in &c.spec.requests {
                let slot = match r {
                    DeviceRequest::Exactly(e) => {
                        let rd = self.validate(c.key, e, None, &pools)?;
                        min_devices += rd.num_devices;
                        RequestSlot { options: vec![rd], first_available: false }
                    }
                    DeviceRequest::FirstAvailable { name, subrequests } => {
                        if !self.features.prioritized_list {
                            return Err(AllocError::Fatal(format!(
                                "claim {}, request {name}: has subrequests, but the DRAPrioritizedList feature is disabled",
                                c.key
                            )));
                        }
                        let mut options = Vec::with_capacity(subrequests.len());
                        for s in subrequests {
                            options.push(self.validate(c.key, s, Some(*name), &pools)?);
                        }
                        min_devices += options.iter().map(|o| o.num_devices).min().unwrap_or(0);
                        RequestSlot { options, first_available: true }
                    }
                };
                slots.push(slot);
            }
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
                return Err(AllocError::Fatal(format!(
                    "claim {}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}",
                    c.key
                )));
            }
            let mut constraints = Vec::with_capacity(c.spec.constraints.len());
            for (i, k) in c.spec.constraints.iter().enumerate() {
                let Some(attr) = k.match_attribute else {
                    return Err(AllocError::Fatal(format!(
                        "claim {}, constraint #{i}: empty constraint (unsupported constraint type?)",
                        c.key
                    )));
                };
                constraints.push(MatchAttribute {
                    requests: &k.requests,
                    attribute: attr.as_str(),
                    value: None,
                    count: 0,
                });
            }
            search.selected.push(vec![0; slots.len()]);
            search.requests.push(slots);
            search.constraints.push(constraints);
        }
        if !search.allocate_one(0, 0, 0, false)? {
            if pools.iter().any(|p| p.invalid) {
                return Err(AllocError::Failed(INVALID_POOLS.into()));
            }
            return Ok(None);
        }
        let mut out = Vec::with_capacity(claims.len());
        for picked in &search.results {
            let results = picked
                .iter()
                .map(|p| DeviceResult {
                    request: p.request,
                    driver: p.dev.id.driver,
                    pool: p.dev.id.pool,
                    device: p.dev.id.device,
                    admin_access: p.admin,
                })
                .collect();
            let node_selector = node_selector_of(picked.iter().map(|p| p.dev.slice))?;
            out.push(AllocationResult { results, node_selector });
        }
        Ok(Some(out))
    }

    fn validate(
        &self,
        claim_key: &str,
        request: &'a ExactRequest,
        parent: Option<Sym>,
        pools: &[Pool<'a>],
    ) -> Result<RequestData<'a>, AllocError> {
        let name = match parent {
            Some(p) => format!("{p}/{}", request.name),
            None => request.name.as_str().to_owned(),
        };
        if request.admin_access.is_some() && !self.features.admin_access {
            return Err(AllocError::Fatal(format!(
                "claim {claim_key}, request {name}: admin access is requested, but the feature is disabled"
            )));
        }
        let Some(class) = self.classes.get(&request.device_class) else {
            return Err(AllocError::Fatal(format!(
                "claim {claim_key}, request {name}: could not retrieve device class {}: deviceclass.resource.k8s.io {:?} not found",
                request.device_class,
                request.device_class.as_str()
            )));
        };
        let mut rd = RequestData { request, parent, class, num_devices: 0, all_devices: Vec::new() };
        match request.mode {
            AllocationMode::ExactCount => {
                rd.num_devices = usize::try_from(request.count).unwrap_or(usize::MAX);
            }
            AllocationMode::All => {
                for pool in pools {
                    if pool.incomplete {
                        return Err(AllocError::Fatal(format!(
                            "claim {claim_key}, request {name}: asks for all devices, but resource pool {} is currently being updated",
                            pool.id()
                        )));
                    }
                    if pool.invalid {
                        return Err(AllocError::Fatal(format!(
                            "claim {claim_key}, request {name}: asks for all devices, but resource pool {} is currently invalid",
                            pool.id()
                        )));
                    }
                    for slice in &pool.slices {
                        for device in &slice.devices {
                            let d = DevRef {
                                id: DeviceId { driver: slice.driver, pool: slice.pool, device: device.name },
                                device,
                                slice,
                            };
                            if selectable(claim_key, &rd, &d)? {
                                rd.all_devices.push(d);
                            }
                        }
                    }
                }
                rd.num_devices = rd.all_devices.len();
            }
        }
        Ok(rd)
    }
}

impl<'a> Search<'a, '_> {
    fn in_use(&self, id: &DeviceId) -> bool {
        self.allocated.contains(id) || self.allocating.get(id).is_some_and(|c| !c.is_empty())
    }

    fn in_use_by_claim(&self, id: &DeviceId, claim: usize) -> bool {
        self.allocating.get(id).is_some_and(|c| c.contains(&(claim as u32)))
    }

    /// Picks device `dev_index` of (claim, request, subrequest) and everything after it.
    fn allocate_one(
        &mut self,
        claim: usize,
        request: usize,
        dev_index: usize,
        in_sub: bool,
    ) -> Result<bool, AllocError> {
        if claim >= self.claims.len() {
            return Ok(true);
        }
        if request >= self.requests[claim].len() {
            return self.allocate_one(claim + 1, 0, 0, false);
        }
        let slot = &self.requests[claim][request];
        if slot.first_available && !in_sub {
            for sub in 0..slot.options.len() {
                self.selected[claim][request] = sub;
                if self.allocate_one(claim, request, 0, true)? {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        let sub = self.selected[claim][request];
        let rd = &self.requests[claim][request].options[sub];
        let all = rd.request.mode == AllocationMode::All;
        if all && rd.all_devices.is_empty() {
            return Ok(false);
        }
        if dev_index >= rd.num_devices {
            return self.allocate_one(claim, request + 1, 0, false);
        }
        if self.results[claim].len() + rd.num_devices - dev_index > ALLOCATION_RESULTS_MAX_SIZE {
            return Ok(false);
        }
        if all {
            let d = rd.all_devices[dev_index];
            if !self.allocate_device(claim, request, sub, d, true)? {
                return Ok(false);
            }
            if self.allocate_one(claim, request, dev_index + 1, in_sub)? {
                return Ok(true);
            }
            self.deallocate(claim, request, sub, d);
            return Ok(false);
        }
        let admin = rd.request.admin_access == Some(true);
        for p in 0..self.pools.len() {
            let pool = &self.pools[p];
            if pool.incomplete || pool.invalid {
                continue;
            }
            for &slice in &pool.slices {
                for device in &slice.devices {
                    let d = DevRef {
                        id: DeviceId { driver: pool.driver, pool: pool.pool, device: device.name },
                        device,
                        slice,
                    };
                    let busy = if admin { self.in_use_by_claim(&d.id, claim) } else { self.in_use(&d.id) };
                    if busy || !self.is_selectable(claim, request, sub, &d)? {
                        continue;
                    }
                    if !self.allocate_device(claim, request, sub, d, false)? {
                        continue;
                    }
                    if self.allocate_one(claim, request, dev_index + 1, in_sub)? {
                        return Ok(true);
                    }
                    self.deallocate(claim, request, sub, d);
                }
            }
        }
        Ok(false)
    }

    fn is_selectable(&mut self, claim: usize, request: usize, sub: usize, d: &DevRef<'a>) -> Result<bool, AllocError> {
        let key = (claim as u32, request as u32, sub as u32, d.id);
        if let Some(&m) = self.memo.get(&key) {
            return Ok(m);
        }
        let m = selectable(self.claims[claim].key, &self.requests[claim][request].options[sub], d)?;
        self.memo.insert(key, m);
        Ok(m)
    }

    fn allocate_device(
        &mut self,
        claim: usize,
        request: usize,
        sub: usize,
        d: DevRef<'a>,
        must: bool,
    ) -> Result<bool, AllocError> {
        let rd = &self.requests[claim][request].options[sub];
        let admin = rd.request.admin_access == Some(true);
        let busy = if admin { self.in_use_by_claim(&d.id, claim) } else { self.in_use(&d.id) };
        if busy || d.device.needs_feature == Some("DRAPartitionableDevices") {
            return Ok(false);
        }
        let (base, subname) = (rd.base_name(), rd.parent.map(|_| rd.request.name));
        let result_name = rd.result_name();
        let request_name = rd.request.name;
        let constraints = &mut self.constraints[claim];
        for i in 0..constraints.len() {
            if !constraints[i].add(base, subname, &d) {
                if must {
                    return Err(AllocError::Fatal(format!(
                        "claim {}, request {request_name}: cannot add device {} because a claim constraint would not be satisfied",
                        self.claims[claim].key, d.id
                    )));
                }
                for c in &mut constraints[..i] {
                    c.remove(base, subname);
                }
                return Ok(false);
            }
        }
        self.allocating.entry(d.id).or_default().push(claim as u32);
        self.results[claim].push(Picked { dev: d, request: result_name, admin });
        Ok(true)
    }

    fn deallocate(&mut self, claim: usize, request: usize, sub: usize, d: DevRef<'a>) {
        let rd = &self.requests[claim][request].options[sub];
        let (base, subname) = (rd.base_name(), rd.parent.map(|_| rd.request.name));
        for c in &mut self.constraints[claim] {
            c.remove(base, subname);
        }
        if let Some(claims) = self.allocating.get_mut(&d.id) {
            if let Some(pos) = claims.iter().position(|&c| c == claim as u32) {
                claims.remove(pos);
            }
        }
        self.results[claim].pop();
    }
}

/// The allocation's node selector (upstream's `createNodeSelector`): the node of the first
/// device from a node-local slice; else the requirements of the slices' node selectors
/// merged into one term; `None` when every device comes from an `allNodes` slice.
pub(crate) fn node_selector_of<'s>(
    slices: impl Iterator<Item = &'s ResourceSlice>,
) -> Result<Option<NodeSelector>, AllocError> {
    let mut term = NodeSelectorTerm::default();
    for slice in slices {
        match &slice.nodes {
            SliceNodes::Node(n) => {
                let req =
                    NodeSelectorRequirement::from_syms(Sym::METADATA_NAME, crate::api::NodeSelectorOp::In, vec![*n]);
                return Ok(Some(NodeSelector {
                    terms: vec![NodeSelectorTerm { match_expressions: Vec::new(), match_fields: vec![req] }],
                }));
            }
            SliceNodes::Selector(sel) => match sel.terms.as_slice() {
                [] => {}
                [t] => {
                    merge_requirements(&mut term.match_fields, &t.match_fields);
                    merge_requirements(&mut term.match_expressions, &t.match_expressions);
                }
                terms => {
                    return Err(AllocError::Fatal(format!(
                        "create NodeSelector for claim: unsupported ResourceSlice.NodeSelector with {} terms",
                        terms.len()
                    )))
                }
            },
            SliceNodes::AllNodes | SliceNodes::PerDevice => {}
        }
    }
    if term.match_fields.is_empty() && term.match_expressions.is_empty() {
        return Ok(None);
    }
    Ok(Some(NodeSelector { terms: vec![term] }))
}

/// Appends each of `from` that `to` lacks: a requirement is there when one has its key,
/// operator and set of values (in any order, as upstream compares them).
fn merge_requirements(to: &mut Vec<NodeSelectorRequirement>, from: &[NodeSelectorRequirement]) {
    for r in from {
        let same = |e: &NodeSelectorRequirement| {
            e.key == r.key
                && e.operator == r.operator
                && e.values.iter().all(|v| r.values.contains(v))
                && r.values.iter().all(|v| e.values.contains(v))
        };
        if !to.iter().any(same) {
            to.push(r.clone());
        }
    }
}

#[cfg(test)]
#[path = "allocator_tests.rs"]
mod tests;
