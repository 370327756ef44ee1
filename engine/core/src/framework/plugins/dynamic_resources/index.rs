//! What DynamicResources' Filter reads per node, computed once per set of slices and node
//! objects instead of per pod and node:
//!
//! - every device of every slice gets a dense id (a slice's devices are consecutive), so the
//!   devices in use are a counter per id and a selector's verdicts a byte per id;
//! - per node, the pools visible from it (`allocator::gather_pool_indices`: newest
//!   generation, complete, valid), as slice indices;
//! - per CEL expression, its verdict on each device, evaluated the first time a cycle asks
//!   and kept for every later cycle (the environment is the device alone).
//!
//! An index is for one `DraObjects::slices` (by identity: the slices are copied on write,
//! and the index holds them) and one `Snapshot::node_epoch` (node labels decide which
//! selector slices a node sees). The devices in use are kept beside it by the plugin,
//! brought up to date from the claims that changed (`ShardMap::diff`).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use super::allocator::{gather_pool_indices, IndexedPool};
use super::cel::device_matches;
use crate::api::dra::{AllocationResult, CelSelector, Device, DeviceId, ResourceSlice, SliceNodes};
use crate::api::Sym;
use crate::snapshot::Snapshot;
use crate::sync::{lock, Mutex};
use crate::util::hash::FxHashMap;

/// A selector's verdict on one device, as cached.
const UNKNOWN: u8 = 0;
const MATCH: u8 = 1;
const NO_MATCH: u8 = 2;
/// Evaluation failed: the caller evaluates again for the message.
const FAILED: u8 = 3;

/// One CEL expression's verdicts, by dense device id.
pub struct SelectorCache {
    selector: CelSelector,
    /// The driver the expression asks for, when it is only `device.driver == "<driver>"`
    /// (device classes' usual selector): its verdict needs no CEL evaluation.
    driver_is: Option<String>,
    verdicts: Box<[AtomicU8]>,
}

/// `<driver>` when `expression` is `device.driver == "<driver>"` (a plain string literal,
/// spaces around the tokens allowed).
fn driver_equality(expression: &str) -> Option<String> {
    let rest = expression.trim().strip_prefix("device.driver")?.trim_start().strip_prefix("==")?.trim_start();
    let literal = rest.strip_prefix('"')?.strip_suffix('"')?;
    (!literal.contains(['"', '\\', '\n', '\r'])).then(|| literal.to_owned())
}

impl std::fmt::Debug for SelectorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SelectorCache({:?})", self.selector)
    }
}

impl SelectorCache {
    /// Whether device `id` matches; `None` when evaluating it fails (the caller evaluates
    /// again for the message). Racing evaluations store the same verdict.
    #[inline]
    pub fn matches(&self, index: &DraIndex, id: u32) -> Option<bool> {
        let slot = &self.verdicts[id as usize];
        match slot.load(Ordering::Relaxed) {
            MATCH => return Some(true),
            NO_MATCH => return Some(false),
            FAILED => return None,
            _ => {}
        }
        let (slice, device) = index.device(id);
        if let Some(driver) = &self.driver_is {
            let verdict = slice.driver.as_str() == driver;
            slot.store(if verdict { MATCH } else { NO_MATCH }, Ordering::Relaxed);
            return Some(verdict);
        }
        let verdict = device_matches(&self.selector, slice.driver, device);
        slot.store(
            match verdict {
                Ok(true) => MATCH,
                Ok(false) => NO_MATCH,
                Err(_) => FAILED,
            },
            Ordering::Relaxed,
        );
        verdict.ok()
    }
}

/// See the module docs.
pub struct DraIndex {
    slices: Arc<Vec<Arc<ResourceSlice>>>,
    node_epoch: u64,
    /// Per slice, the dense id of its first device; one more entry: the number of devices.
    slice_first: Vec<u32>,
    /// Per dense id, its slice (the device is `id - slice_first[slice]` in it).
    device_slice: Vec<u32>,
    /// Device → its dense ids (more than one when several slices name it: older
    /// generations, an invalid pool).
    by_id: FxHashMap<DeviceId, smallvec::SmallVec<[u32; 1]>>,
    /// Per node, its range of `pools`; per snapshot position, the same range.
    nodes: FxHashMap<Sym, (u32, u32)>,
    positions: Vec<(u32, u32)>,
    pools: Vec<IndexedPool>,
    cel: Mutex<FxHashMap<Arc<str>, Arc<SelectorCache>>>,
}

impl std::fmt::Debug for DraIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DraIndex({} slices, {} devices, {} nodes)", self.slices.len(), self.num_devices(), self.nodes.len())
    }
}

impl DraIndex {
    /// The index of `snapshot`'s slices and nodes.
    pub fn build(snapshot: &Snapshot) -> DraIndex {
        let slices = snapshot.objects().dra.slices.clone();
        let mut slice_first = Vec::with_capacity(slices.len() + 1);
        let mut device_slice = Vec::new();
        let mut by_id: FxHashMap<DeviceId, smallvec::SmallVec<[u32; 1]>> = FxHashMap::default();
        let mut by_node: FxHashMap<Sym, Vec<usize>> = FxHashMap::default();
        let mut shared = Vec::new();
        for (i, s) in slices.iter().enumerate() {
            slice_first.push(device_slice.len() as u32);
            for d in &s.devices {
                let id = device_slice.len() as u32;
                device_slice.push(i as u32);
                by_id.entry(DeviceId { driver: s.driver, pool: s.pool, device: d.name }).or_default().push(id);
            }
            match &s.nodes {
                SliceNodes::Node(n) => by_node.entry(*n).or_default().push(i),
                SliceNodes::Selector(_) | SliceNodes::AllNodes => shared.push(i),
                SliceNodes::PerDevice => {}
            }
        }
        slice_first.push(device_slice.len() as u32);
        let mut nodes = FxHashMap::default();
        let mut positions = Vec::with_capacity(snapshot.num_nodes());
        let mut pools = Vec::new();
        let mut visible = Vec::new();
        for info in snapshot.iter() {
            let name = info.name();
            let labels = &info.node().labels;
            visible.clear();
            visible.extend(by_node.get(&name).into_iter().flatten().copied());
            visible.extend(shared.iter().copied().filter(|&i| match &slices[i].nodes {
                SliceNodes::Selector(sel) => sel.matches(labels, name),
                _ => true,
            }));
            // Slice order decides pool order: keep the slices' own order.
            visible.sort_unstable();
            let start = pools.len() as u32;
            pools.extend(gather_pool_indices(&slices, visible.iter().copied()));
            nodes.insert(name, (start, pools.len() as u32));
            positions.push((start, pools.len() as u32));
        }
        DraIndex {
            slices,
            node_epoch: snapshot.node_epoch(),
            slice_first,
            device_slice,
            by_id,
            nodes,
            positions,
            pools,
            cel: Mutex::new(FxHashMap::default()),
        }
    }

    /// Whether this index is `snapshot`'s (same slices, same node objects).
    pub fn is_for(&self, snapshot: &Snapshot) -> bool {
        Arc::ptr_eq(&self.slices, &snapshot.objects().dra.slices) && self.node_epoch == snapshot.node_epoch()
    }

    pub fn num_devices(&self) -> usize {
        self.device_slice.len()
    }

    pub fn slices(&self) -> &[Arc<ResourceSlice>] {
        &self.slices
    }

    /// The pools visible from `node`, in the allocator's order (empty for an unknown node).
    #[inline]
    pub fn node_pools(&self, node: Sym) -> &[IndexedPool] {
        match self.nodes.get(&node) {
            Some(&(a, b)) => &self.pools[a as usize..b as usize],
            None => &[],
        }
    }

    /// The pools visible from the node at snapshot position `pos` (the index's snapshot
    /// order: `is_for` the snapshot), as `node_pools`.
    #[inline]
    pub fn pools_at(&self, pos: usize) -> &[IndexedPool] {
        match self.positions.get(pos) {
            Some(&(a, b)) => &self.pools[a as usize..b as usize],
            None => &[],
        }
    }

    /// The dense ids of slice `slice`'s devices.
    #[inline]
    pub fn slice_ids(&self, slice: u32) -> std::ops::Range<u32> {
        self.slice_first[slice as usize]..self.slice_first[slice as usize + 1]
    }

    /// The dense id of device `index` of slice `slice`.
    #[inline]
    pub fn id(&self, slice: u32, index: usize) -> u32 {
        self.slice_first[slice as usize] + index as u32
    }

    /// Device `id`'s slice and device.
    #[inline]
    pub fn device(&self, id: u32) -> (&ResourceSlice, &Device) {
        let s = self.device_slice[id as usize];
        let slice = &*self.slices[s as usize];
        (slice, &slice.devices[(id - self.slice_first[s as usize]) as usize])
    }

    /// Device `id` as the API names it.
    pub fn device_id(&self, id: u32) -> DeviceId {
        let (slice, d) = self.device(id);
        DeviceId { driver: slice.driver, pool: slice.pool, device: d.name }
    }

    /// The dense ids a device has (none when no slice lists it).
    pub fn ids_of(&self, d: &DeviceId) -> &[u32] {
        self.by_id.get(d).map(|v| v.as_slice()).unwrap_or_default()
    }

    /// The verdict cache of `selector`'s expression (made on first use).
    pub fn selector(&self, selector: &CelSelector) -> Arc<SelectorCache> {
        let mut cel = lock(&self.cel);
        cel.entry(selector.expression.clone())
            .or_insert_with(|| {
                Arc::new(SelectorCache {
                    selector: selector.clone(),
                    driver_is: driver_equality(&selector.expression),
                    verdicts: (0..self.num_devices()).map(|_| AtomicU8::new(UNKNOWN)).collect(),
                })
            })
            .clone()
    }

    /// Adds `delta` to the in-use count of each device `a` holds (admin access holds none).
    pub fn count_allocation(&self, held: &mut Held, a: Option<&AllocationResult>, delta: i32) {
        for r in a.into_iter().flat_map(|a| a.results.iter()).filter(|r| !r.admin_access) {
            for &id in self.ids_of(&DeviceId { driver: r.driver, pool: r.pool, device: r.device }) {
                held.add(id, delta);
            }
        }
    }
}

/// The devices allocated claims hold, by dense id: how many claims hold each, and a bit per
/// device set while any does (so a search skips 64 held devices at a time).
#[derive(Clone, Debug, Default)]
pub struct Held {
    counts: Vec<u32>,
    bits: Vec<u64>,
}

impl Held {
    /// `devices` devices, none held.
    pub fn new(devices: usize) -> Held {
        Held { counts: vec![0; devices], bits: vec![0; devices.div_ceil(64)] }
    }

    /// Adds `delta` to device `id`'s count (never below 0).
    pub fn add(&mut self, id: u32, delta: i32) {
        let c = &mut self.counts[id as usize];
        *c = c.saturating_add_signed(delta);
        let (w, bit) = (id as usize / 64, 1u64 << (id % 64));
        if *c > 0 {
            self.bits[w] |= bit;
        } else {
            self.bits[w] &= !bit;
        }
    }

    #[inline]
    pub fn is_held(&self, id: u32) -> bool {
        self.bits[id as usize / 64] & (1 << (id % 64)) != 0
    }

    /// The first device of `from..to` not held.
    #[inline]
    pub fn next_free(&self, from: u32, to: u32) -> Option<u32> {
        let mut w = from as usize / 64;
        let mut free = !self.bits.get(w)? & (!0u64 << (from % 64));
        loop {
            if free != 0 {
                let id = (w * 64) as u32 + free.trailing_zeros();
                return (id < to).then_some(id);
            }
            w += 1;
            if w * 64 >= to as usize {
                return None;
            }
            free = !self.bits[w];
        }
    }

    /// The held devices' dense ids, ascending.
    pub fn held_ids(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.counts.len() as u32).filter(|&id| self.counts[id as usize] > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::{driver_equality, Held};
    use crate::api::dra::{CelSelector, Device};
    use crate::api::Sym;
    use proptest::prelude::*;

    /// The driver-equality shortcut takes only expressions that are exactly that comparison,
    /// and gives CEL's verdict on them.
    #[test]
    fn driver_equality_is_cels_verdict() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"device.driver == "gpu.example.com""#, Some("gpu.example.com")),
            ("  device.driver==\"gpu.example.com\"\n", Some("gpu.example.com")),
            (r#"device.driver == """#, Some("")),
            (r#"device.driver != "gpu.example.com""#, None),
            (r#"device.driver == "a" || device.driver == "b""#, None),
            (r#"device.driver == 'gpu.example.com'"#, None),
            (r#"device.driver == "gpu\x41""#, None),
            (r#"device.driverx == "a""#, None),
            (r#""a" == device.driver"#, None),
            (r#"device.driver == "a" && true"#, None),
        ];
        for &(expr, want) in cases {
            assert_eq!(driver_equality(expr).as_deref(), want, "{expr}");
            let Some(lit) = want else { continue };
            let sel = CelSelector::compile(expr).unwrap();
            for driver in [lit, "other.example.com", "gpu.example.co"] {
                let cel = super::device_matches(&sel, Sym::new(driver), &Device::new("d0"));
                assert_eq!(cel, Ok(driver == lit), "{expr} on {driver}");
            }
        }
    }

    proptest! {
        /// `next_free` finds what a scan of the counts finds, across word boundaries, after
        /// any sequence of holds and releases.
        #[test]
        fn next_free_agrees_with_a_scan(
            n in 0usize..200,
            ops in prop::collection::vec((0u32..200, prop::bool::ANY), 0..300),
            ranges in prop::collection::vec((0u32..201, 0u32..201), 1..20),
        ) {
            let mut held = Held::new(n);
            let mut model = vec![0i64; n];
            for (id, hold) in ops {
                if (id as usize) < n {
                    let delta = if hold { 1 } else { -1 };
                    held.add(id, delta);
                    model[id as usize] = (model[id as usize] + i64::from(delta)).max(0);
                }
            }
            for id in 0..n as u32 {
                prop_assert_eq!(held.is_held(id), model[id as usize] > 0);
            }
            let held_ids: Vec<u32> = held.held_ids().collect();
            let want_ids: Vec<u32> = (0..n as u32).filter(|&i| model[i as usize] > 0).collect();
            prop_assert_eq!(held_ids, want_ids);
            for (a, b) in ranges {
                let (from, to) = (a.min(b).min(n as u32), a.max(b).min(n as u32));
                let want = (from..to).find(|&i| model[i as usize] == 0);
                prop_assert_eq!(held.next_free(from, to), want, "{}..{}", from, to);
            }
        }
    }
}
