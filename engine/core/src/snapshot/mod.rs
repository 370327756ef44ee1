//! Immutable, generation-tagged snapshots of the cache, the only view plugins read.
//!
//! A snapshot holds the nodes in NodeTree order (zones round-robin) as a persistent vector of
//! `Arc<NodeInfo>`: publishing after a pod was assumed replaces one element and copies one
//! trie path, and readers holding an older snapshot keep theirs untouched. The cache builds
//! each snapshot from the previous one (see `Cache::update_snapshot`).
//!
//! Beside the NodeInfos, each snapshot carries `columns`: the fields the hot filters and
//! scores read (allocatable, requested, non-zero requested, unschedulable, has-taints,
//! has-affinity-pods), by position, in contiguous copy-on-write chunks (see `columns`).

pub mod columns;
pub mod node_info;
pub mod objects;
pub mod pvec;

use std::collections::HashMap;
use std::sync::Arc;

use crate::api::Sym;
use crate::util::hash::FxHashMap;
pub use columns::{Columns, Floors, HotRef, HotRow, HotTally, LooseRow, PodsDelta};
pub use node_info::NodeInfo;
pub use objects::{ClusterObjects, ObjectsSource};
pub use pvec::PVec;

/// How many nodes have an image, and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageState {
    pub size_bytes: i64,
    pub num_nodes: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub(crate) nodes: PVec<Arc<NodeInfo>>,
    /// The hot fields of `nodes`, by the same positions.
    pub(crate) columns: Columns,
    /// Node name → position in `nodes`.
    pub(crate) index: Arc<FxHashMap<Sym, u32>>,
    /// Position → node name (`index` inverted): the chosen node's name without walking the
    /// trie to its NodeInfo and node object, two cold lines a cycle.
    pub(crate) names: Arc<[Sym]>,
    pub(crate) images: Arc<HashMap<Sym, ImageState>>,
    /// Positions of the nodes holding at least one pod with pod affinity or anti-affinity
    /// terms, ascending (upstream's `HavePodsWithAffinityNodeInfoList`).
    pub(crate) have_pods_with_affinity: Arc<[u32]>,
    /// Positions of the nodes holding at least one pod with required anti-affinity terms.
    pub(crate) have_pods_with_required_anti_affinity: Arc<[u32]>,
    /// Namespaces, services, controllers and storage as of this snapshot.
    pub(crate) objects: Arc<ClusterObjects>,
    pub(crate) generation: u64,
    /// Names the state of the node objects (names, labels, fields) and their positions:
    /// equal in two snapshots only when those are the same (0: no nodes ever).
    pub(crate) node_epoch: u64,
}

impl Snapshot {
    /// A snapshot of the given NodeInfos in the given order (tests and tools; the scheduler
    /// gets its snapshots from the cache).
    pub fn from_node_infos(infos: Vec<NodeInfo>) -> Snapshot {
        Snapshot::from_shared_node_infos(infos.into_iter().map(Arc::new).collect())
    }

    /// `from_node_infos` with NodeInfos the caller shares: a node given as the same `Arc` in
    /// two such snapshots is the same NodeInfo in both, as in two snapshots of the cache.
    pub fn from_shared_node_infos(infos: Vec<Arc<NodeInfo>>) -> Snapshot {
        let mut images: HashMap<Sym, ImageState> = HashMap::new();
        for info in &infos {
            for name in info.image_names() {
                let size = info.image_size(name).unwrap_or(0);
                images.entry(name).or_insert(ImageState { size_bytes: size, num_nodes: 0 }).num_nodes += 1;
            }
        }
        let names: Arc<[Sym]> = infos.iter().map(|n| n.name()).collect();
        let index = names.iter().enumerate().map(|(i, &n)| (n, i as u32)).collect();
        let with = |f: fn(&NodeInfo) -> u32| -> Arc<[u32]> {
            (0..infos.len() as u32).filter(|&i| f(&infos[i as usize]) > 0).collect()
        };
        let have_pods_with_affinity = with(NodeInfo::pods_with_affinity);
        let have_pods_with_required_anti_affinity = with(NodeInfo::pods_with_required_anti_affinity);
        let columns = Columns::from_infos(infos.iter().map(|i| &**i));
        Snapshot {
            nodes: PVec::from_vec(infos),
            columns,
            index: Arc::new(index),
            names,
            images: Arc::new(images),
            have_pods_with_affinity,
            have_pods_with_required_anti_affinity,
            objects: Arc::new(ClusterObjects::new()),
            generation: 0,
            node_epoch: crate::sync::fresh_id(),
        }
    }

    /// The same snapshot with `objects` (tests and tools).
    pub fn with_objects(mut self, objects: ClusterObjects) -> Snapshot {
        self.objects = Arc::new(objects);
        self
    }

    /// Namespaces, services, controllers and storage objects.
    pub fn objects(&self) -> &ClusterObjects {
        &self.objects
    }

    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The node at position `i` of the NodeTree order.
    #[inline]
    pub fn node_at(&self, i: usize) -> Option<&Arc<NodeInfo>> {
        self.nodes.get(i)
    }

    /// The hot fields of every node, by position.
    #[inline]
    pub fn columns(&self) -> &Columns {
        &self.columns
    }

    /// Every row of `columns` that disagrees with its NodeInfo, described (the debug checker).
    pub fn column_mismatches(&self) -> Vec<String> {
        let infos: Vec<&NodeInfo> = self.nodes.iter().map(|i| &**i).collect();
        self.columns.mismatches(infos.into_iter())
    }

    pub fn get(&self, name: Sym) -> Option<&Arc<NodeInfo>> {
        self.index.get(&name).and_then(|&i| self.nodes.get(i as usize))
    }

    /// The name of the node at position `i`.
    #[inline]
    pub fn name_at(&self, i: usize) -> Option<Sym> {
        self.names.get(i).copied()
    }

    pub fn position(&self, name: Sym) -> Option<usize> {
        self.index.get(&name).map(|&i| i as usize)
    }

    /// Visits positions `lo..hi` in order.
    #[inline]
    pub fn for_each_in(&self, lo: usize, hi: usize, f: impl FnMut(usize, &Arc<NodeInfo>)) {
        self.nodes.for_each_in(lo, hi, f)
    }

    /// Visits positions `lo..hi` in order while `f` returns true; false if stopped early.
    #[inline]
    pub fn for_each_in_while(&self, lo: usize, hi: usize, f: impl FnMut(usize, &Arc<NodeInfo>) -> bool) -> bool {
        self.nodes.for_each_in_while(lo, hi, f)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<NodeInfo>> + '_ {
        self.nodes.iter()
    }

    pub fn image(&self, name: Sym) -> Option<ImageState> {
        self.images.get(&name).copied()
    }

    /// Positions (ascending) of the nodes holding pods with pod affinity or anti-affinity.
    pub fn have_pods_with_affinity(&self) -> &[u32] {
        &self.have_pods_with_affinity
    }

    /// Positions (ascending) of the nodes holding pods with required pod anti-affinity.
    pub fn have_pods_with_required_anti_affinity(&self) -> &[u32] {
        &self.have_pods_with_required_anti_affinity
    }

    /// Calls `f(old, new)` for every node whose NodeInfo changed between `old` and this
    /// snapshot, visiting only the trie paths the publishes in between copied. Returns false,
    /// visiting nothing, when the node set or order changed (or the objects did); callers then
    /// recompute from scratch.
    pub fn diff_nodes(&self, old: &Snapshot, mut f: impl FnMut(&NodeInfo, &NodeInfo)) -> bool {
        if !Arc::ptr_eq(&self.index, &old.index) || !Arc::ptr_eq(&self.objects, &old.objects) {
            return false;
        }
        self.nodes.diff(&old.nodes, Arc::ptr_eq, |_, o, n| f(o, n))
    }

    /// Bumped on every publish.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Equal in two snapshots only when their nodes are the same node objects (names,
    /// labels, fields) at the same positions: what is computed from those alone for one
    /// snapshot holds for another of the same epoch.
    pub fn node_epoch(&self) -> u64 {
        self.node_epoch
    }
}
