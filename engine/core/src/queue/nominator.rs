//! The nominator: which pods preemption nominated to which nodes.
//!
//! Two sharded maps, node → nominated pods and pod → node. Every write holds the pod's
//! shard of `pod_to_node` for its whole length and takes node shards inside it, one at a
//! time; readers take one node shard. So writes of the same pod are serialised (the two maps
//! never disagree about it), writes of different pods run in parallel, and the lock order
//! (pod shard, then node shard) admits no cycle.

use smallvec::SmallVec;

use crate::api::{Pod, PodUid, Sym};
use crate::snapshot::PodsDelta;
use crate::sync::{AtomicUsize, Mutex, Ordering, ShardedMap};

/// The pods nominated to one node, with what each adds to the node's hot row (summed when
/// nominated, so a cycle gathering the nominations reads no pod's spec for it).
#[derive(Clone, Debug, Default)]
struct NodePods {
    pods: SmallVec<[Pod; 2]>,
    deltas: SmallVec<[PodsDelta; 2]>,
}

impl NodePods {
    fn upsert(&mut self, pod: &Pod) {
        match self.pods.iter().position(|p| p.uid == pod.uid) {
            Some(i) => {
                self.pods[i] = pod.clone();
                self.deltas[i] = PodsDelta::of(pod);
            }
            None => {
                self.pods.push(pod.clone());
                self.deltas.push(PodsDelta::of(pod));
            }
        }
    }

    fn remove(&mut self, uid: &PodUid) {
        while let Some(i) = self.pods.iter().position(|p| p.uid == *uid) {
            self.pods.remove(i);
            self.deltas.remove(i);
        }
    }
}

pub struct Nominator {
    node_to_pods: ShardedMap<Sym, NodePods>,
    pod_to_node: ShardedMap<PodUid, Sym>,
    /// How many pods are nominated: lets a cycle skip all lookups when none are.
    count: AtomicUsize,
    /// Which nodes' lists changed, in order: a cycle that gathered the nominations before
    /// re-reads only those nodes (`PodNominator::changes_since`).
    log: Mutex<ChangeLog>,
    /// Tells this nominator's log from any other's.
    id: u64,
}

/// How many changes the log keeps; a reader further behind gathers everything again.
const LOG_KEEP: usize = 4096;

/// The nodes whose nomination lists changed, each with the version the change got. Appended
/// after the change is made (and counted), so a reader that saw version `v` and then read the nodes may
/// miss only changes with versions above `v`, which it reads next time.
#[derive(Default)]
struct ChangeLog {
    version: u64,
    /// Versions up to `floor` were dropped from `entries`.
    floor: u64,
    entries: std::collections::VecDeque<(u64, Sym)>,
}

impl ChangeLog {
    fn record(&mut self, node: Sym) {
        self.version += 1;
        if self.entries.len() >= LOG_KEEP {
            let drop = LOG_KEEP / 2;
            self.floor = self.entries[drop - 1].0;
            self.entries.drain(..drop);
        }
        self.entries.push_back((self.version, node));
    }
}

/// The framework's view of the nominations (plugins read them through it).
impl crate::framework::PodNominator for Nominator {
    fn nominated_count(&self) -> usize {
        self.len()
    }
    fn visit_node(&self, node: Sym, f: &mut dyn FnMut(&[Pod], &[PodsDelta])) {
        if self.is_empty() {
            return f(&[], &[]);
        }
        self.node_to_pods.read(&node, |pods| match pods {
            Some(p) => f(&p.pods, &p.deltas),
            None => f(&[], &[]),
        })
    }
    fn visit_nodes(&self, f: &mut crate::framework::VisitNominated<'_>) {
        if self.is_empty() {
            return;
        }
        self.node_to_pods.for_each(|node, pods| f(*node, &pods.pods, &pods.deltas));
    }
    fn nominated_node_of(&self, uid: &PodUid) -> Option<Sym> {
        self.nominated_node(uid)
    }
    fn log_id(&self) -> Option<u64> {
        Some(self.id)
    }
    fn log_version(&self) -> u64 {
        self.log.lock().expect("nominator log").version
    }
    fn changes_since(&self, since: u64, out: &mut Vec<Sym>) -> Option<u64> {
        let log = self.log.lock().expect("nominator log");
        if since < log.floor || since > log.version {
            return None;
        }
        let from = log.entries.partition_point(|e| e.0 <= since);
        out.extend(log.entries.range(from..).map(|e| e.1));
        Some(log.version)
    }
}

impl Default for Nominator {
    fn default() -> Self {
        Self::new()
    }
}

impl Nominator {
    pub fn new() -> Nominator {
        Nominator {
            node_to_pods: ShardedMap::new(),
            pod_to_node: ShardedMap::new(),
            count: AtomicUsize::new(0),
            log: Mutex::new(ChangeLog::default()),
            // The log's id: a process-wide number from the `sync` shim (no two nominators share
            // one, so a cycle's kept nominations never read one nominator's log as another's).
            id: crate::sync::fresh_id(),
        }
    }

    /// Nominates `pod` to `node`, or to its `nominated_node_name` when `node` is `None`;
    /// with neither, only removes any earlier nomination. A pod is on at most one node's
    /// list, once.
    pub fn add(&self, pod: &Pod, node: Option<Sym>) {
        let target = node.filter(|n| !n.is_empty()).or(pod.nominated_node_name.filter(|n| !n.is_empty()));
        if target.is_none() && self.is_empty() {
            // Nothing to record and nothing to remove (the common case: no preemption).
            return;
        }
        self.pod_to_node.update(pod.uid.clone(), |slot| {
            if let Some(old) = slot.take() {
                self.unlist(old, &pod.uid);
            }
            let Some(node) = target else { return };
            self.node_to_pods.update(node, |pods| {
                pods.get_or_insert_with(NodePods::default).upsert(pod);
            });
            *slot = Some(node);
            self.count.fetch_add(1, Ordering::SeqCst);
            // Logged last: a reader that finds this change in the log also sees the count
            // that lets `visit_node` look at the list.
            self.logged(node);
        });
    }

    /// Removes the pod's nomination, if any.
    pub fn delete(&self, pod: &Pod) {
        if self.is_empty() {
            // The scheduler calls this on every assume; with no nominations there is nothing
            // to look up.
            return;
        }
        self.pod_to_node.update(pod.uid.clone(), |slot| {
            if let Some(old) = slot.take() {
                self.unlist(old, &pod.uid);
            }
        });
    }

    /// Re-records an updated pod. When neither version names a nominated node, the pod keeps
    /// the nomination this scheduler gave it; otherwise the new version's field decides (and an
    /// emptied field removes the nomination), as upstream does.
    pub fn update(&self, old: &Pod, new: &Pod) {
        let unnamed = |p: &Pod| p.nominated_node_name.is_none_or(|n| n.is_empty());
        let keep = if unnamed(old) && unnamed(new) { self.nominated_node(&old.uid) } else { None };
        if old.uid != new.uid {
            self.delete(old);
        }
        self.add(new, keep);
    }

    /// The node the pod is nominated to.
    pub fn nominated_node(&self, uid: &PodUid) -> Option<Sym> {
        self.pod_to_node.read(uid, |n| n.copied())
    }

    /// The pods nominated to `node` (what the two-pass filter adds to the node).
    pub fn nominated_pods_for_node(&self, node: Sym) -> Vec<Pod> {
        if self.is_empty() {
            return Vec::new();
        }
        self.node_to_pods.read(&node, |pods| pods.map(|p| p.pods.to_vec()).unwrap_or_default())
    }

    /// Calls `f` with the pods nominated to `node` (empty when none), under that node's shard
    /// lock: one lookup, nothing copied.
    pub fn with_node<R>(&self, node: Sym, f: impl FnOnce(&[Pod]) -> R) -> R {
        if self.is_empty() {
            return f(&[]);
        }
        self.node_to_pods.read(&node, |pods| f(pods.map_or(&[][..], |p| &p.pods[..])))
    }

    /// Visits every node with nominated pods (order unspecified). Takes each shard's lock
    /// once; meant for once-per-cycle use, not per node.
    pub fn for_each_node(&self, mut f: impl FnMut(Sym, &[Pod])) {
        if self.is_empty() {
            return;
        }
        self.node_to_pods.for_each(|node, pods| f(*node, &pods.pods));
    }

    pub fn len(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes `uid` from `node`'s list; the caller holds the pod's `pod_to_node` shard.
    fn unlist(&self, node: Sym, uid: &PodUid) {
        self.node_to_pods.update(node, |pods| {
            if let Some(list) = pods {
                list.remove(uid);
                if list.pods.is_empty() {
                    *pods = None;
                }
            }
        });
        self.count.fetch_sub(1, Ordering::SeqCst);
        self.logged(node);
    }

    /// Records that `node`'s list changed (after the change, see `ChangeLog`).
    fn logged(&self, node: Sym) {
        self.log.lock().expect("nominator log").record(node);
    }

    /// Debug check: both maps describe the same nominations, with no duplicates. Meant for
    /// quiescent moments (tests, fuzzing): it reads shard by shard.
    pub fn check_consistent(&self) -> Vec<String> {
        let mut v = Vec::new();
        let mut listed: Vec<(Sym, PodUid, String)> = Vec::new();
        self.node_to_pods.for_each(|node, list| {
            let pods = &list.pods;
            if pods.is_empty() {
                v.push(format!("node {node} has an empty nomination list"));
            }
            if list.deltas.len() != pods.len() || pods.iter().zip(&list.deltas).any(|(p, d)| PodsDelta::of(p) != *d) {
                v.push(format!("node {node}: the nominated pods' summed requests are stale"));
            }
            for (i, p) in pods.iter().enumerate() {
                if pods[..i].iter().any(|q| q.uid == p.uid) {
                    v.push(format!("pod {} nominated twice to node {node}", p.key()));
                }
                listed.push((*node, p.uid.clone(), p.key()));
            }
        });
        // Looked up after the node walk: never a pod shard while a node shard is held.
        for (node, uid, key) in &listed {
            if self.nominated_node(uid) != Some(*node) {
                v.push(format!("pod {key} is listed on node {node} but maps to {:?}", self.nominated_node(uid)));
            }
        }
        let listed = listed.len();
        let mut mapped = 0usize;
        self.pod_to_node.for_each(|_, _| mapped += 1);
        if listed != mapped || mapped != self.len() {
            v.push(format!("{listed} pods listed on nodes, {mapped} mapped to nodes, count {}", self.len()));
        }
        v
    }
}
