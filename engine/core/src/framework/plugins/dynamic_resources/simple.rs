//! The allocator's search for claims of the common shape, on the device index, without
//! allocating per node: every request is `exactly` with an exact count, no admin access, no
//! constraints, at most `ALLOCATION_RESULTS_MAX_SIZE` devices per claim. For those the
//! allocator's depth-first search (`allocator`) needs nothing per node but the devices picked
//! so far; this is that search, in the same order (claims, requests, devices one after the
//! other, each sought from the first pool, slice and device on), so it finds the same
//! devices, reading devices in use and selector verdicts from the index. A property test
//! checks it against the allocator on random slices and claims.
//!
//! What it cannot answer alone it leaves to the allocator (`Search::Fallback`): a selector
//! whose evaluation fails (the allocator builds the error message).

use std::sync::Arc;

use smallvec::SmallVec;

use super::allocator::IndexedPool;
use super::allocator::{node_selector_of, AllocError, ALLOCATION_RESULTS_MAX_SIZE};
use super::index::{DraIndex, Held, SelectorCache};
use crate::api::dra::{AllocationMode, AllocationResult, ClaimSpec, DeviceClass, DeviceRequest, DeviceResult};
use crate::api::Sym;
use crate::util::hash::FxHashMap;

/// One request, prepared once per pod.
#[derive(Clone, Debug)]
pub struct SimpleRequest {
    /// Its claim's position among the claims searched.
    pub claim: u32,
    pub name: Sym,
    pub count: u32,
    /// The verdict caches of its class's selectors, then its own.
    pub selectors: SmallVec<[Arc<SelectorCache>; 2]>,
}

/// The requests of `claims` in search order, or `None` when a claim is not of the simple
/// shape (or names a class that does not exist: the allocator reports that).
pub fn prepare(
    index: &DraIndex,
    classes: &FxHashMap<Sym, Arc<DeviceClass>>,
    claims: &[&ClaimSpec],
) -> Option<Vec<SimpleRequest>> {
    let mut out = Vec::new();
    for (c, spec) in claims.iter().enumerate() {
        if !spec.constraints.is_empty() {
            return None;
        }
        let mut devices = 0usize;
        for r in &spec.requests {
            let DeviceRequest::Exactly(e) = r else { return None };
            if e.mode != AllocationMode::ExactCount || e.admin_access.is_some() || e.count < 0 {
                return None;
            }
            let class = classes.get(&e.device_class)?;
            devices = devices.saturating_add(e.count as usize);
            let selectors = class.selectors.iter().chain(&e.selectors).map(|s| index.selector(s)).collect();
            out.push(SimpleRequest { claim: c as u32, name: e.name, count: e.count as u32, selectors });
        }
        if devices > ALLOCATION_RESULTS_MAX_SIZE {
            return None;
        }
    }
    Some(out)
}

/// Devices unavailable to the search: those allocated claims hold, and the dense ids of
/// in-flight allocations.
#[derive(Clone, Copy, Debug)]
pub struct InUse<'a> {
    pub held: &'a Held,
    pub in_flight: &'a [u32],
}

/// How a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// `picked` holds the devices, request after request.
    Found,
    NotFound,
    /// Not found, and a visible pool is invalid (the allocator's message says so).
    NotFoundInvalidPools,
    /// Ask the allocator (a selector failed to evaluate).
    Fallback,
}

/// The search for `requests` in `pools` (a node's, from the index); the devices go into
/// `picked` (cleared first).
pub fn search(
    index: &DraIndex,
    pools: &[IndexedPool],
    requests: &[SimpleRequest],
    in_use: InUse<'_>,
    picked: &mut SmallVec<[u32; 8]>,
) -> Search {
    picked.clear();
    let s = Searcher { index, pools, requests, in_use };
    if let [r] = requests {
        if r.count == 1 {
            return s.pick_one(r, picked);
        }
    }
    // Several devices to find: first check each request has enough candidates (a necessary
    // condition the search would find out only after trying every combination).
    if requests.len() > 1 || requests.first().is_some_and(|r| r.count > 1) {
        for r in requests {
            match s.candidates(r, r.count) {
                None => return Search::Fallback,
                Some(n) if n < r.count => return s.not_found(),
                Some(_) => {}
            }
        }
    }
    match s.pick(0, 0, picked) {
        None => Search::Fallback,
        Some(true) => Search::Found,
        Some(false) => s.not_found(),
    }
}

struct Searcher<'a> {
    index: &'a DraIndex,
    pools: &'a [IndexedPool],
    requests: &'a [SimpleRequest],
    in_use: InUse<'a>,
}

impl Searcher<'_> {
    fn not_found(&self) -> Search {
        if self.pools.iter().any(|p| p.invalid) {
            Search::NotFoundInvalidPools
        } else {
            Search::NotFound
        }
    }

    /// Calls `f` with each device of the usable pools that no allocated claim holds, in the
    /// allocator's order, until it returns `Some` (the held ones are skipped a word of bits
    /// at a time: the allocator skips them first thing too).
    #[inline]
    fn each_free_device<T>(&self, mut f: impl FnMut(u32, Option<&'static str>) -> Option<T>) -> Option<T> {
        for pool in self.pools.iter().filter(|p| !p.incomplete && !p.invalid) {
            for &s in &pool.slices {
                let devices = &self.index.slices()[s as usize].devices;
                let ids = self.index.slice_ids(s);
                let mut from = ids.start;
                while let Some(id) = self.in_use.held.next_free(from, ids.end) {
                    if let Some(t) = f(id, devices[(id - ids.start) as usize].needs_feature) {
                        return Some(t);
                    }
                    from = id + 1;
                }
            }
        }
        None
    }

    /// Whether device `id` may serve `r` (as the allocator's `is_selectable`, then its check
    /// for partitionable devices); `None` when a selector fails.
    #[inline]
    fn usable(&self, r: &SimpleRequest, id: u32, needs: Option<&'static str>) -> Option<bool> {
        if needs == Some("DRADeviceBindingConditions") {
            return Some(false);
        }
        for sel in &r.selectors {
            if !sel.matches(self.index, id)? {
                return Some(false);
            }
        }
        Some(needs.is_none())
    }

    /// How many devices not in use may serve `r`, counting up to `enough`; `None` when a
    /// selector fails.
    fn candidates(&self, r: &SimpleRequest, enough: u32) -> Option<u32> {
        let mut n = 0;
        let failed = self.each_free_device(|id, needs| {
            if self.in_use.in_flight.contains(&id) {
                return None;
            }
            match self.usable(r, id, needs) {
                None => Some(true),
                Some(true) => {
                    n += 1;
                    (n >= enough).then_some(false)
                }
                Some(false) => None,
            }
        });
        match failed {
            Some(true) => None,
            _ => Some(n),
        }
    }

    /// `pick` for a single request of one device (the usual claim): the first device that
    /// serves it.
    fn pick_one(&self, r: &SimpleRequest, picked: &mut SmallVec<[u32; 8]>) -> Search {
        let found = self.each_free_device(|id, needs| {
            if self.in_use.in_flight.contains(&id) {
                return None;
            }
            match self.usable(r, id, needs) {
                None => Some(false),
                Some(false) => None,
                Some(true) => {
                    picked.push(id);
                    Some(true)
                }
            }
        });
        match found {
            Some(true) => Search::Found,
            Some(false) => Search::Fallback,
            None => self.not_found(),
        }
    }

    /// Device `k` of request `r` and everything after it; `None` when a selector fails.
    fn pick(&self, r: usize, k: u32, picked: &mut SmallVec<[u32; 8]>) -> Option<bool> {
        let Some(req) = self.requests.get(r) else { return Some(true) };
        if k >= req.count {
            return self.pick(r + 1, 0, picked);
        }
        let found = self.each_free_device(|id, needs| {
            if self.in_use.in_flight.contains(&id) || picked.contains(&id) {
                return None;
            }
            match self.usable(req, id, needs) {
                None => return Some(None),
                Some(false) => return None,
                Some(true) => {}
            }
            picked.push(id);
            match self.pick(r, k + 1, picked) {
                Some(true) => Some(Some(true)),
                None => Some(None),
                Some(false) => {
                    picked.pop();
                    None
                }
            }
        });
        match found {
            Some(verdict) => verdict,
            None => Some(false),
        }
    }
}

/// The allocations of `claims` claims from a search's `picked` devices, as the allocator
/// writes them.
pub fn results(
    index: &DraIndex,
    requests: &[SimpleRequest],
    claims: usize,
    picked: &[u32],
) -> Result<Vec<AllocationResult>, AllocError> {
    let mut per_claim: Vec<Vec<u32>> = vec![Vec::new(); claims];
    let mut names: Vec<Vec<Sym>> = vec![Vec::new(); claims];
    let mut next = picked.iter();
    for r in requests {
        for _ in 0..r.count {
            let Some(&id) = next.next() else { break };
            per_claim[r.claim as usize].push(id);
            names[r.claim as usize].push(r.name);
        }
    }
    let mut out = Vec::with_capacity(claims);
    for (ids, names) in per_claim.iter().zip(&names) {
        let results = ids
            .iter()
            .zip(names)
            .map(|(&id, &request)| {
                let d = index.device_id(id);
                DeviceResult { request, driver: d.driver, pool: d.pool, device: d.device, admin_access: false }
            })
            .collect();
        let node_selector = node_selector_of(ids.iter().map(|&id| index.device(id).0))?;
        out.push(AllocationResult { results, node_selector });
    }
    Ok(out)
}
