//! The scheduler cache: nodes, the pods bound or assumed on them, and the snapshot publisher.
//!
//! ```text
//!                 assume_pod           finish_binding         cleaner / cleanup_assumed_pods
//!   Initial ────────────────▶ Assumed ───────────────▶ Assumed ─────────────────────────▶ Expired
//!      │                       │   │   (deadline set)     │  │      (binding finished and
//!      │ add_pod               │   │ forget_pod           │  │       deadline passed)
//!      │ (e.g. after expiry)   │   ▼                      │  │ add_pod (informer confirms)
//!      │                       │ Initial                  │  ▼
//!      └──────────────────────▶│────────────────────────▶ Added ──── update_pod ───▶ Added
//!                              add_pod                     │
//!                                                          └── remove_pod ──▶ Deleted
//!
//!   remove_pod also takes an Assumed pod (its Add was lost or is late) straight to Deleted.
//! ```
//!
//! Only Assumed and Added pods are held. Every operation validates first and then applies,
//! so an illegal transition returns a `CacheError` naming the pod and its state and leaves the
//! cache exactly as it was (upstream aborts the process on such corruption).
//!
//! Invariants, checked by `check_invariants`: every assumed pod is in the pod states; each
//! node's requested resources equal the sum of its pods' effective requests; each held pod is
//! on exactly the node its state names; image counts match the nodes holding the images.
//!
//! Lock order: the cache has one mutex (`inner`); the snapshot cell is written only while it
//! is held and read without it. The cleaner thread (`Cache::with_config`) takes the same mutex
//! once per pass; its stop flag has its own mutex, never held together with `inner`.

pub mod node_tree;

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc as StdArc;
use std::time::Duration;

use thiserror::Error;

use crate::api::{Node, Pod, PodUid, Sym};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::objects::ClusterObjects;
use crate::snapshot::{Columns, ImageState, PVec, Snapshot};
use crate::sync::{lock, thread, Arc, AtomicU64, Condvar, Mutex, Ordering, SnapshotCell};
use crate::util::hash::{FxHashMap, FxHashSet};
use crate::util::time::{Clock, SystemClock, Timestamp};
use node_tree::NodeTree;

/// Where a pod stands in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodStateName {
    /// Not in the cache (never seen, forgotten, expired or deleted).
    Initial,
    Assumed,
    Added,
}

impl fmt::Display for PodStateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CacheError {
    #[error("pod {pod}: cannot {op}: pod is {state} in the cache")]
    IllegalTransition { pod: String, op: &'static str, state: PodStateName },
    #[error("pod {pod}: cannot {op}: spec.nodeName is empty")]
    NoNodeName { pod: String, op: &'static str },
    #[error("pod {pod}: cannot forget on node {requested}: it was assumed on node {assumed}")]
    ForgetNodeMismatch { pod: String, assumed: Sym, requested: Sym },
    #[error("pod {pod}: update moves it from node {old} to node {new}; a bound pod never moves")]
    UpdateMovesNode { pod: String, old: Sym, new: Sym },
    #[error("node {node}: cannot {op}: {why}")]
    Node { node: Sym, op: &'static str, why: &'static str },
}

#[derive(Clone, Debug)]
struct PodState {
    pod: Pod,
    assumed: bool,
    binding_finished: bool,
    deadline: Option<Timestamp>,
}

#[derive(Clone, Debug)]
struct NodeEntry {
    info: StdArc<NodeInfo>,
    /// False for a ghost: a node deleted while pods were still on it.
    present: bool,
}

struct CacheInner {
    nodes: FxHashMap<Sym, NodeEntry>,
    pod_states: FxHashMap<PodUid, PodState>,
    assumed: FxHashSet<PodUid>,
    tree: NodeTree,
    images: HashMap<Sym, ImageState>,
    ttl: Duration,
    /// Generation of the last change; NodeInfos changed after `published.generation` are dirty.
    generation: u64,
    dirty: Vec<Sym>,
    /// The node set or order changed: the next publish rebuilds the node list.
    order_changed: bool,
    images_changed: bool,
    /// Nodes holding pods with (anti-)affinity terms / with required anti-affinity terms:
    /// the inter-pod affinity plugin visits only these.
    affinity_nodes: FxHashSet<Sym>,
    anti_affinity_nodes: FxHashSet<Sym>,
    affinity_changed: bool,
    objects: StdArc<ClusterObjects>,
    objects_changed: bool,
    /// The snapshots' `node_epoch`: a fresh id at every change of a node object.
    node_epoch: u64,
    published: Snapshot,
    /// The columns of the snapshot published before `published`, to be brought up to date
    /// in place at the next publish: once its readers are gone nothing else holds them, so
    /// the rows written there copy no chunk (double buffering; a reader still holding them
    /// only makes the writes copy, as they would without). None after a rebuild.
    spare_columns: Option<Columns>,
    /// The node trie of that snapshot, the same way: once every path has been written in
    /// both tries, a publish writes its NodeInfos in place and copies no trie node. Used
    /// only while no reader keeps the published snapshot (see `update_snapshot`): a kept
    /// one is diffed against the next by shared paths, and the other buffer shares none.
    spare_nodes: Option<PVec<StdArc<NodeInfo>>>,
    /// The nodes the last publish wrote: the spare's rows are these and the new dirty ones.
    last_dirty: Vec<Sym>,
}

/// kube-scheduler's assumed-pod expiry since v1.23 (`durationToExpireAssumedPod`): 0, an
/// assumed pod is never expired (it leaves the cache when its informer Add confirms it, or
/// when it is forgotten or deleted). Every command-line path builds its cache with this; the
/// seeds' TTL cleaner (a positive TTL, `Cache::with_config`) is kept behind `ksched soak
/// --assumed-pod-ttl`.
pub const ASSUMED_POD_TTL: Duration = Duration::ZERO;

/// The scheduler cache. All methods take `&self`; share it with `Arc`.
///
/// Dropping the cache stops its cleaner thread (if it has one) and waits for it.
pub struct Cache {
    shared: Arc<Shared>,
    cleaner: Option<Cleaner>,
}

/// What the cache and its cleaner thread share.
struct Shared {
    inner: Mutex<CacheInner>,
    snapshot: SnapshotCell<Snapshot>,
    /// Completed cleanup passes (by the thread or by direct calls).
    cleanup_runs: AtomicU64,
}

/// How the cache expires assumed pods. See `Cache::with_config`.
#[derive(Clone)]
pub struct CacheConfig {
    /// How long after its binding finished an assumed pod that was never confirmed is dropped.
    /// Zero means assumed pods never expire (upstream's setting since v1.23) and no cleaner
    /// thread is started.
    pub ttl: Duration,
    /// How often the cleaner thread looks for expired pods (upstream: 1 s).
    pub cleanup_period: Duration,
    /// Where the cleaner reads the time.
    pub clock: StdArc<dyn Clock>,
}

impl CacheConfig {
    /// Upstream's defaults: no expiry, 1 s period, the system clock.
    pub fn new() -> CacheConfig {
        CacheConfig {
            ttl: Duration::ZERO,
            cleanup_period: Duration::from_secs(1),
            clock: StdArc::new(SystemClock::new()),
        }
    }
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The cleaner thread's stop signal and handle.
struct Cleaner {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Mutex<Option<thread::JoinHandle<()>>>,
}

/// A summary for tests and reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheStats {
    pub nodes: usize,
    pub ghost_nodes: usize,
    pub pods: usize,
    pub assumed_pods: usize,
}

impl Cache {
    /// A cache whose assumed pods expire `ttl` after their binding finished (0 = never), with
    /// no cleaner thread: expiry happens when the caller runs `cleanup_assumed_pods(now)`.
    pub fn new(ttl: Duration) -> Cache {
        Cache { shared: Arc::new(Shared::new(ttl)), cleaner: None }
    }

    /// A cache as upstream's: assumed pods never expire ([`ASSUMED_POD_TTL`]).
    pub fn upstream() -> Cache {
        Cache::new(ASSUMED_POD_TTL)
    }

    /// How long after its binding finished an assumed pod expires (zero: never).
    pub fn assumed_pod_ttl(&self) -> Duration {
        lock(&self.shared.inner).ttl
    }

    /// A cache with a cleaner thread that runs `cleanup_assumed_pods(clock.now())` every
    /// `cleanup_period` until the cache is dropped. With a zero TTL no thread is started.
    pub fn with_config(config: CacheConfig) -> Cache {
        let shared = Arc::new(Shared::new(config.ttl));
        if config.ttl.is_zero() {
            return Cache { shared, cleaner: None };
        }
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let handle = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            thread::spawn(move || run_cleaner(&shared, &stop, config.clock.as_ref(), config.cleanup_period))
        };
        Cache { shared, cleaner: Some(Cleaner { stop, handle: Mutex::new(Some(handle)) }) }
    }

    /// Whether a cleaner thread is running.
    pub fn has_cleaner(&self) -> bool {
        self.cleaner.as_ref().is_some_and(|c| lock(&c.handle).is_some())
    }

    /// Stops the cleaner thread and waits for it to finish its pass; nothing expires
    /// afterwards unless `cleanup_assumed_pods` is called. Dropping the cache does this.
    pub fn stop_cleaner(&self) {
        let Some(cleaner) = &self.cleaner else { return };
        let (stopped, wake) = &*cleaner.stop;
        *lock(stopped) = true;
        wake.notify_all();
        if let Some(handle) = lock(&cleaner.handle).take() {
            // The thread only returns; a panic inside it has already been reported.
            let _ = handle.join();
        }
    }

    /// How many cleanup passes have completed (the thread's and direct calls).
    pub fn cleanup_runs(&self) -> u64 {
        self.shared.cleanup_runs.load(Ordering::SeqCst)
    }

    // ----- pods -----

    /// Places `pod` (whose `node_name` is the chosen node) on its node before binding.
    pub fn assume_pod(&self, pod: &Pod) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let node = pod.node_name.ok_or_else(|| CacheError::NoNodeName { pod: pod.key(), op: "assume" })?;
        // One lookup both checks that the pod is new and records it.
        match c.pod_states.entry(pod.uid.clone()) {
            Entry::Occupied(o) => {
                let state = o.get().name();
                return Err(CacheError::IllegalTransition { pod: pod.key(), op: "assume", state });
            }
            Entry::Vacant(v) => {
                v.insert(PodState { pod: pod.clone(), assumed: true, binding_finished: false, deadline: None });
            }
        }
        c.add_to_node(node, pod.clone());
        c.assumed.insert(pod.uid.clone());
        Ok(())
    }

    /// Marks the binding of an assumed pod finished; it may expire `ttl` after `now`.
    /// A pod that is not assumed is left alone (its confirmation may have arrived first).
    pub fn finish_binding(&self, pod: &Pod, now: Timestamp) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let ttl = c.ttl;
        if let Some(s) = c.pod_states.get_mut(&pod.uid) {
            if s.assumed {
                s.binding_finished = true;
                s.deadline = Some(now.saturating_add(ttl));
            }
        }
        Ok(())
    }

    /// Undoes `assume_pod` (binding failed).
    pub fn forget_pod(&self, pod: &Pod) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let state = c.state_name(&pod.uid);
        let Some(s) = c.pod_states.get(&pod.uid).filter(|s| s.assumed) else {
            return Err(CacheError::IllegalTransition { pod: pod.key(), op: "forget", state });
        };
        let assumed_on = s.pod.node_name.unwrap_or(Sym::EMPTY);
        if let Some(requested) = pod.node_name {
            if requested != assumed_on {
                return Err(CacheError::ForgetNodeMismatch { pod: pod.key(), assumed: assumed_on, requested });
            }
        }
        c.remove_from_node(assumed_on, &pod.uid);
        c.pod_states.remove(&pod.uid);
        c.assumed.remove(&pod.uid);
        Ok(())
    }

    /// An informer Add of a bound pod: confirms an assumed pod (moving it if it landed
    /// elsewhere), or adds a pod the cache does not hold (e.g. after it expired).
    pub fn add_pod(&self, pod: &Pod) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let node = pod.node_name.ok_or_else(|| CacheError::NoNodeName { pod: pod.key(), op: "add" })?;
        match c.pod_states.get(&pod.uid).map(|s| (s.assumed, s.pod.is_same_handle(pod), s.pod.node_name)) {
            Some((false, _, _)) => {
                return Err(CacheError::IllegalTransition { pod: pod.key(), op: "add", state: PodStateName::Added })
            }
            // The confirmation of the very pod assumed (`same`, the common case) leaves its
            // node alone: it holds the pod already, so nothing is published again.
            Some((true, same, old_node)) => {
                if !same {
                    c.remove_from_node(old_node.unwrap_or(Sym::EMPTY), &pod.uid);
                    c.add_to_node(node, pod.clone());
                }
                c.assumed.remove(&pod.uid);
            }
            None => c.add_to_node(node, pod.clone()),
        }
        c.pod_states.insert(
            pod.uid.clone(),
            PodState { pod: pod.clone(), assumed: false, binding_finished: false, deadline: None },
        );
        Ok(())
    }

    /// An informer Update of an Added pod. The node may not change.
    pub fn update_pod(&self, old: &Pod, new: &Pod) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let state = c.state_name(&old.uid);
        let Some(s) = c.pod_states.get(&old.uid).filter(|s| !s.assumed) else {
            return Err(CacheError::IllegalTransition { pod: old.key(), op: "update", state });
        };
        let cur = s.pod.node_name.unwrap_or(Sym::EMPTY);
        let next = new.node_name.unwrap_or(Sym::EMPTY);
        if cur != next {
            return Err(CacheError::UpdateMovesNode { pod: old.key(), old: cur, new: next });
        }
        c.remove_from_node(cur, &old.uid);
        c.add_to_node(cur, new.clone());
        c.pod_states.insert(
            new.uid.clone(),
            PodState { pod: new.clone(), assumed: false, binding_finished: false, deadline: None },
        );
        Ok(())
    }

    /// An informer Delete of a bound pod. An Assumed pod goes too, as upstream's does: its
    /// Add was lost or is still on its way, and waiting for the TTL would count a deleted pod
    /// on its node meanwhile (forever with a TTL of 0).
    pub fn remove_pod(&self, pod: &Pod) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let Some(s) = c.pod_states.get(&pod.uid) else {
            return Err(CacheError::IllegalTransition { pod: pod.key(), op: "remove", state: PodStateName::Initial });
        };
        let node = s.pod.node_name.unwrap_or(Sym::EMPTY);
        c.remove_from_node(node, &pod.uid);
        c.pod_states.remove(&pod.uid);
        c.assumed.remove(&pod.uid);
        Ok(())
    }

    pub fn is_assumed(&self, pod: &Pod) -> bool {
        lock(&self.shared.inner).assumed.contains(&pod.uid)
    }

    /// The cached pod with the same uid, as the cache holds it.
    pub fn get_pod(&self, pod: &Pod) -> Option<Pod> {
        lock(&self.shared.inner).pod_states.get(&pod.uid).map(|s| s.pod.clone())
    }

    pub fn pod_state(&self, uid: &PodUid) -> PodStateName {
        lock(&self.shared.inner).state_name(uid)
    }

    /// Every pod held (Assumed or Added), ghost nodes' included, in no particular order: for
    /// checkers comparing the cache with the cluster.
    pub fn pods(&self) -> Vec<(Pod, PodStateName)> {
        lock(&self.shared.inner).pod_states.values().map(|s| (s.pod.clone(), s.name())).collect()
    }

    /// Expires assumed pods whose binding finished and whose deadline is before `now`;
    /// returns them. With a TTL of 0 nothing expires. The cleaner thread calls this.
    pub fn cleanup_assumed_pods(&self, now: Timestamp) -> Vec<Pod> {
        self.shared.cleanup_assumed_pods(now)
    }

    // ----- nodes -----

    pub fn add_node(&self, node: Node) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let name = node.name;
        if c.nodes.get(&name).is_some_and(|e| e.present) {
            return Err(CacheError::Node { node: name, op: "add", why: "a node of that name exists" });
        }
        let node = StdArc::new(node);
        c.add_images(&node);
        c.tree.add(&node);
        let gen = c.next_generation();
        let entry = c
            .nodes
            .entry(name)
            .or_insert_with(|| NodeEntry { info: StdArc::new(NodeInfo::new(StdArc::clone(&node))), present: true });
        entry.present = true;
        let info = StdArc::make_mut(&mut entry.info);
        info.set_node(node);
        info.generation = gen;
        c.order_changed = true;
        c.node_epoch = crate::sync::fresh_id();
        Ok(())
    }

    /// The node of that name, if present.
    pub fn get_node(&self, name: Sym) -> Option<StdArc<Node>> {
        let c = lock(&self.shared.inner);
        c.nodes.get(&name).filter(|e| e.present).map(|e| StdArc::clone(e.info.node_arc()))
    }

    pub fn update_node(&self, node: Node) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let name = node.name;
        let Some(old) = c.nodes.get(&name).filter(|e| e.present).map(|e| StdArc::clone(e.info.node_arc())) else {
            return Err(CacheError::Node { node: name, op: "update", why: "no such node" });
        };
        let node = StdArc::new(node);
        c.remove_images(&old);
        c.add_images(&node);
        if c.tree.update(&old, &node) {
            c.order_changed = true;
        }
        c.mutate_node(name, |info| info.set_node(node));
        c.node_epoch = crate::sync::fresh_id();
        Ok(())
    }

    /// Removes a node. If pods are still on it, it stays as a ghost (absent from snapshots)
    /// until they leave.
    pub fn remove_node(&self, name: Sym) -> Result<(), CacheError> {
        let mut c = lock(&self.shared.inner);
        let Some(entry) = c.nodes.get(&name).filter(|e| e.present).cloned() else {
            return Err(CacheError::Node { node: name, op: "remove", why: "no such node" });
        };
        c.remove_images(entry.info.node_arc());
        c.tree.remove(entry.info.node());
        if entry.info.pods().is_empty() {
            c.nodes.remove(&name);
        } else if let Some(e) = c.nodes.get_mut(&name) {
            e.present = false;
        }
        c.order_changed = true;
        c.node_epoch = crate::sync::fresh_id();
        Ok(())
    }

    // ----- other cluster objects -----

    /// Changes the namespaces, services, controllers or storage objects; the next snapshot
    /// carries the result. Snapshots already published keep the objects they had.
    pub fn edit_objects<R>(&self, f: impl FnOnce(&mut ClusterObjects) -> R) -> R {
        let mut c = lock(&self.shared.inner);
        c.objects_changed = true;
        c.generation += 1;
        f(StdArc::make_mut(&mut c.objects))
    }

    /// The objects as the cache holds them now (not yet necessarily published).
    pub fn objects(&self) -> StdArc<ClusterObjects> {
        StdArc::clone(&lock(&self.shared.inner).objects)
    }
}

/// The queue reads the objects the cache holds now (PreEnqueue plugins and queueing hints).
impl crate::snapshot::ObjectsSource for Cache {
    fn objects(&self) -> StdArc<ClusterObjects> {
        Cache::objects(self)
    }
}

impl Cache {
    // ----- snapshots -----

    /// Publishes a snapshot reflecting every change so far and returns it. Only nodes changed
    /// since the last publish are replaced; a changed node set rebuilds the order.
    pub fn update_snapshot(&self) -> Arc<Snapshot> {
        let mut c = lock(&self.shared.inner);
        if !c.order_changed && !c.images_changed && !c.affinity_changed && !c.objects_changed && c.dirty.is_empty() {
            return self.shared.snapshot.load();
        }
        let c = &mut *c;
        // A reader keeping the published snapshot (a `KindMemo` base) diffs the next one
        // against it, visiting only the paths the two do not share: written into the other
        // buffer, the next would share none with it, and each such diff would visit every
        // node. The published trie is held by `published` and by the snapshot in the cell; a
        // third holder is such a reader, and then this publish copies paths instead.
        let published_kept = c.published.nodes.holders() > 2;
        let mut next = c.published.clone();
        let rebuilt = c.order_changed;
        if rebuilt {
            let order: Vec<Sym> = c.tree.list();
            let infos: Vec<StdArc<NodeInfo>> = order.iter().map(|n| StdArc::clone(&c.nodes[n].info)).collect();
            next.index = StdArc::new(order.iter().enumerate().map(|(i, &n)| (n, i as u32)).collect());
            next.names = order.into();
            next.columns = Columns::from_infos(infos.iter().map(|i| &**i));
            next.nodes = PVec::from_vec(infos);
        } else {
            // The spare lacks the rows of the last publish and of this one; the published
            // columns' copy lacks only this one's. A spare a reader still holds would be
            // copied where written and lose its sharing with the published columns: it is
            // used only when nothing else holds it.
            let (mut columns_behind, mut nodes_behind) = (false, false);
            if let Some(mut spare) = c.spare_columns.take() {
                if spare.is_unshared() {
                    next.columns = spare;
                    columns_behind = true;
                }
            }
            if let Some(mut spare) = c.spare_nodes.take().filter(|_| !published_kept) {
                if spare.is_unshared() {
                    next.nodes = spare;
                    nodes_behind = true;
                }
            }
            let like = columns_behind.then_some(&c.published.columns);
            let index = StdArc::clone(&next.index);
            let at = |name: &Sym| Some((*index.get(name)? as usize, &c.nodes.get(name)?.info));
            // A dirty node's NodeInfo differs from both tries' (its mutation replaced or
            // copied it), so this write needs no look first.
            for (pos, info) in c.dirty.iter().filter_map(at) {
                next.nodes.set(pos, StdArc::clone(info));
                next.columns.set_like(pos, info, like);
            }
            if columns_behind || nodes_behind {
                for (pos, info) in c.last_dirty.iter().filter_map(at) {
                    if nodes_behind {
                        set_node(&mut next.nodes, pos, info);
                    }
                    if columns_behind {
                        next.columns.set_like(pos, info, like);
                    }
                }
            }
        }
        if c.images_changed {
            next.images = StdArc::new(c.images.clone());
        }
        if c.objects_changed {
            next.objects = StdArc::clone(&c.objects);
        }
        if c.order_changed || (c.affinity_changed && c.dirty.len() > 64) {
            next.have_pods_with_affinity = positions(&next.index, &c.affinity_nodes);
            next.have_pods_with_required_anti_affinity = positions(&next.index, &c.anti_affinity_nodes);
        } else if c.affinity_changed {
            // Only dirty nodes can have entered or left the sets: patch the sorted lists.
            next.have_pods_with_affinity =
                patch_positions(&next.have_pods_with_affinity, &next.index, &c.dirty, &c.affinity_nodes);
            next.have_pods_with_required_anti_affinity = patch_positions(
                &next.have_pods_with_required_anti_affinity,
                &next.index,
                &c.dirty,
                &c.anti_affinity_nodes,
            );
        }
        std::mem::swap(&mut c.dirty, &mut c.last_dirty);
        c.dirty.clear();
        c.order_changed = false;
        c.images_changed = false;
        c.affinity_changed = false;
        c.objects_changed = false;
        next.generation = c.generation;
        next.node_epoch = c.node_epoch;
        let before = std::mem::replace(&mut c.published, next.clone());
        (c.spare_columns, c.spare_nodes) =
            if rebuilt { (None, None) } else { (Some(before.columns), Some(before.nodes)) };
        let published = Arc::new(next);
        self.shared.snapshot.store(Arc::clone(&published));
        published
    }

    /// The most recently published snapshot, without publishing.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.shared.snapshot.load()
    }

    pub fn stats(&self) -> CacheStats {
        let c = lock(&self.shared.inner);
        CacheStats {
            nodes: c.nodes.values().filter(|e| e.present).count(),
            ghost_nodes: c.nodes.values().filter(|e| !e.present).count(),
            pods: c.pod_states.len(),
            assumed_pods: c.assumed.len(),
        }
    }

    /// The debug checker: returns every invariant violation found (empty when sound).
    pub fn check_invariants(&self) -> Vec<String> {
        let c = lock(&self.shared.inner);
        let mut v = Vec::new();
        for uid in &c.assumed {
            match c.pod_states.get(uid) {
                None => v.push(format!("assumed pod {uid} has no pod state")),
                Some(s) if !s.assumed => v.push(format!("pod {uid} is in the assumed set but its state is Added")),
                _ => {}
            }
        }
        let mut pods_on_nodes = 0;
        for (name, e) in &c.nodes {
            if !e.info.aggregates_match(&e.info.recomputed()) {
                v.push(format!(
                    "node {name}: requested {:?} != sum of its pods' requests {:?}",
                    e.info.requested(),
                    e.info.recomputed().requested()
                ));
            }
            if !e.present && e.info.pods().is_empty() {
                v.push(format!("ghost node {name} has no pods left but was kept"));
            }
            for p in e.info.pods() {
                pods_on_nodes += 1;
                match c.pod_states.get(&p.uid) {
                    None => v.push(format!("pod {} on node {name} has no pod state", p.key())),
                    Some(s) if s.pod.node_name != Some(*name) => {
                        v.push(format!("pod {} is on node {name} but its state says {:?}", p.key(), s.pod.node_name))
                    }
                    _ => {}
                }
            }
        }
        // The last published snapshot's hot columns say what its NodeInfos say.
        v.extend(c.published.column_mismatches());
        if pods_on_nodes != c.pod_states.len() {
            v.push(format!("{} pods on nodes but {} pod states", pods_on_nodes, c.pod_states.len()));
        }
        for (name, e) in &c.nodes {
            let (aff, anti) = (e.info.pods_with_affinity() > 0, e.info.pods_with_required_anti_affinity() > 0);
            if aff != c.affinity_nodes.contains(name) || anti != c.anti_affinity_nodes.contains(name) {
                v.push(format!("node {name}: affinity lists disagree with its pods (affinity {aff}, anti {anti})"));
            }
        }
        if c.affinity_nodes.iter().chain(&c.anti_affinity_nodes).any(|n| !c.nodes.contains_key(n)) {
            v.push("an affinity list names a node the cache does not hold".to_string());
        }
        let mut images: HashMap<Sym, u32> = HashMap::new();
        for e in c.nodes.values().filter(|e| e.present) {
            for n in e.info.image_names() {
                *images.entry(n).or_default() += 1;
            }
        }
        for (name, st) in &c.images {
            if images.get(name).copied().unwrap_or(0) != st.num_nodes {
                v.push(format!(
                    "image {name}: counted on {} nodes, held by {}",
                    st.num_nodes,
                    images.get(name).copied().unwrap_or(0)
                ));
            }
        }
        if images.len() != c.images.len() {
            v.push(format!("{} images held by nodes, {} image states", images.len(), c.images.len()));
        }
        v
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.stop_cleaner();
    }
}

/// The cleaner thread: one pass right away, then one per `period` until told to stop.
/// (Under loom a timed wait never times out, so a model sees exactly one pass racing the
/// other threads, then the stop.)
fn run_cleaner(shared: &Shared, stop: &(Mutex<bool>, Condvar), clock: &dyn Clock, period: Duration) {
    let (stopped, wake) = stop;
    loop {
        shared.cleanup_assumed_pods(clock.now());
        let guard = lock(stopped);
        if *guard {
            return;
        }
        let (guard, _) = wake.wait_timeout(guard, period).unwrap_or_else(|e| e.into_inner());
        if *guard {
            return;
        }
    }
}

impl Shared {
    fn new(ttl: Duration) -> Shared {
        Shared {
            inner: Mutex::new(CacheInner {
                nodes: FxHashMap::default(),
                pod_states: FxHashMap::default(),
                assumed: FxHashSet::default(),
                tree: NodeTree::default(),
                images: HashMap::new(),
                ttl,
                generation: 0,
                dirty: Vec::new(),
                order_changed: false,
                images_changed: false,
                affinity_nodes: FxHashSet::default(),
                anti_affinity_nodes: FxHashSet::default(),
                affinity_changed: false,
                objects: StdArc::new(ClusterObjects::new()),
                objects_changed: false,
                node_epoch: 0,
                published: Snapshot::default(),
                spare_columns: None,
                spare_nodes: None,
                last_dirty: Vec::new(),
            }),
            snapshot: SnapshotCell::new(Arc::new(Snapshot::default())),
            cleanup_runs: AtomicU64::new(0),
        }
    }

    fn cleanup_assumed_pods(&self, now: Timestamp) -> Vec<Pod> {
        let mut c = lock(&self.inner);
        let mut expired = Vec::new();
        if !c.ttl.is_zero() {
            expired = c
                .assumed
                .iter()
                .filter_map(|uid| c.pod_states.get(uid))
                .filter(|s| s.binding_finished && s.deadline.is_some_and(|d| d < now))
                .map(|s| s.pod.clone())
                .collect();
            for pod in &expired {
                c.remove_from_node(pod.node_name.unwrap_or(Sym::EMPTY), &pod.uid);
                c.pod_states.remove(&pod.uid);
                c.assumed.remove(&pod.uid);
            }
        }
        drop(c);
        self.cleanup_runs.fetch_add(1, Ordering::SeqCst);
        expired
    }
}

impl PodState {
    fn name(&self) -> PodStateName {
        if self.assumed {
            PodStateName::Assumed
        } else {
            PodStateName::Added
        }
    }
}

impl CacheInner {
    fn state_name(&self, uid: &PodUid) -> PodStateName {
        self.pod_states.get(uid).map_or(PodStateName::Initial, PodState::name)
    }

    fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// Applies `f` to the node's private copy and marks it for the next publish.
    fn mutate_node(&mut self, name: Sym, f: impl FnOnce(&mut NodeInfo)) {
        let published_gen = self.published.generation;
        let gen = self.next_generation();
        let entry = self.nodes.entry(name).or_insert_with(|| NodeEntry {
            // A pod arrived for a node the cache has not seen: hold it on a ghost.
            info: StdArc::new(NodeInfo::new(StdArc::new(Node::builder(name.as_str()).build()))),
            present: false,
        });
        let info = StdArc::make_mut(&mut entry.info);
        let was_dirty = info.generation > published_gen;
        f(info);
        info.generation = gen;
        let (aff, anti) = (info.pods_with_affinity() > 0, info.pods_with_required_anti_affinity() > 0);
        if !was_dirty {
            self.dirty.push(name);
        }
        self.affinity_changed |= set_membership(&mut self.affinity_nodes, name, aff);
        self.affinity_changed |= set_membership(&mut self.anti_affinity_nodes, name, anti);
    }

    fn add_to_node(&mut self, name: Sym, pod: Pod) {
        self.mutate_node(name, |info| info.add_pod(pod));
    }

    fn remove_from_node(&mut self, name: Sym, uid: &PodUid) {
        self.mutate_node(name, |info| {
            info.remove_pod(uid);
        });
        if self.nodes.get(&name).is_some_and(|e| !e.present && e.info.pods().is_empty()) {
            self.nodes.remove(&name);
        }
    }

    fn add_images(&mut self, node: &Node) {
        for (n, size) in unique_images(node) {
            self.images.entry(n).or_insert(ImageState { size_bytes: size, num_nodes: 0 }).num_nodes += 1;
        }
        self.images_changed |= !node.images.is_empty();
    }

    fn remove_images(&mut self, node: &Node) {
        for (n, _) in unique_images(node) {
            if let Some(st) = self.images.get_mut(&n) {
                st.num_nodes -= 1;
                if st.num_nodes == 0 {
                    self.images.remove(&n);
                }
            }
        }
        self.images_changed |= !node.images.is_empty();
    }
}

/// Puts `info` at `pos` of `nodes` unless it is there already (a node dirty in both of the
/// publishes a spare lacks was written by this publish's dirty loop).
fn set_node(nodes: &mut PVec<StdArc<NodeInfo>>, pos: usize, info: &StdArc<NodeInfo>) {
    if !nodes.get(pos).is_some_and(|old| StdArc::ptr_eq(old, info)) {
        nodes.set(pos, StdArc::clone(info));
    }
}

/// Puts `name` in or out of `set`; true if that changed the set.
fn set_membership(set: &mut FxHashSet<Sym>, name: Sym, member: bool) -> bool {
    if member {
        set.insert(name)
    } else {
        set.remove(&name)
    }
}

/// The snapshot positions of `names` (ghosts have none), ascending.
fn positions(index: &FxHashMap<Sym, u32>, names: &FxHashSet<Sym>) -> StdArc<[u32]> {
    let mut out: Vec<u32> = names.iter().filter_map(|n| index.get(n).copied()).collect();
    out.sort_unstable();
    out.into()
}

/// `old` (ascending positions) with each of `dirty` added or removed to agree with `names`.
fn patch_positions(old: &[u32], index: &FxHashMap<Sym, u32>, dirty: &[Sym], names: &FxHashSet<Sym>) -> StdArc<[u32]> {
    let mut out = old.to_vec();
    for name in dirty {
        let Some(&pos) = index.get(name) else { continue };
        match (out.binary_search(&pos), names.contains(name)) {
            (Ok(i), false) => {
                out.remove(i);
            }
            (Err(i), true) => out.insert(i, pos),
            _ => {}
        }
    }
    out.into()
}

/// A node's image names, each once, with the size of the first image listing it.
fn unique_images(node: &Node) -> Vec<(Sym, i64)> {
    let mut out: Vec<(Sym, i64)> = Vec::new();
    for img in &node.images {
        for &n in &img.names {
            if !out.iter().any(|&(m, _)| m == n) {
                out.push((n, img.size_bytes));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
