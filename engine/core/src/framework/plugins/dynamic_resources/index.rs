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
    verdicts: Box<[AtomicU8]>,
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
    /// Per node, its range of `pools`.
    nodes: FxHashMap<Sym, (u32, u32)>,
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
        }
        DraIndex {
            slices,
            node_epoch: snapshot.node_epoch(),
            slice_first,
            device_slice,
            by_id,
            nodes,
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
                    verdicts: (0..self.num_devices()).map(|_| AtomicU8::new(UNKNOWN)).collect(),
                })
            })
            .clone()
    }

    /// Adds `delta` to the in-use count of each device `a` holds (admin access holds none).
    pub fn count_allocation(&self, counts: &mut [u32], a: Option<&AllocationResult>, delta: i32) {
        for r in a.into_iter().flat_map(|a| a.results.iter()).filter(|r| !r.admin_access) {
            for &id in self.ids_of(&DeviceId { driver: r.driver, pool: r.pool, device: r.device }) {
                let c = &mut counts[id as usize];
                *c = c.saturating_add_signed(delta);
            }
        }
    }
}
