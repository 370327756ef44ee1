//! The in-memory cluster that plays the API server, the kubelets and the informers for tests
//! and the `ksched` harness: it implements the core's [`ClusterApi`], admits pods (priority
//! admission) and keeps PodDisruptionBudget status (the disruption controller).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::admission::admit_pod_priority;
use crate::disruption::refresh_pdb_status;

use ksched_engine::api::{Node, Pod, PodVolumeBindings, Sym};
use ksched_engine::cache::{Cache, CacheError};
use ksched_engine::cluster::{ApiError, BindError, ClusterApi};
use ksched_engine::framework::events::{ActionType, Event, EventResource};
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::sync::{lock, Mutex};
use ksched_engine::util::time::{Clock, SystemClock, Timestamp};

/// A pod could not be created.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CreateError {
    #[error(transparent)]
    Admission(#[from] ksched_engine::api::AdmissionError),
    #[error(transparent)]
    Queue(#[from] ksched_engine::queue::QueueError),
}

/// Counts of what the in-memory cluster did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterStats {
    pub bound: u64,
    /// Victims deleted (marked terminating or removed at once).
    pub victims_deleted: u64,
    /// Terminating pods whose grace period ran out and that left their node.
    pub terminated: u64,
    pub nominations_set: u64,
    pub nominations_cleared: u64,
}

#[derive(Default)]
struct State {
    /// Terminating pods by (end of grace period, arrival order): soonest first.
    terminating: BTreeMap<(Timestamp, u64), Pod>,
    seq: u64,
    /// Nodes `add_node` added, in order (the node informer's Add events, for controllers
    /// that react to new nodes: `nodes_added_since`).
    added_nodes: Vec<Sym>,
    stats: ClusterStats,
}

/// An in-memory cluster. Bindings, deletions and node changes reach the cache at once, as
/// informer events would; with a queue attached they reach the queue as cluster events too
/// (a deleted bound pod, a node added, updated or removed, a storage object changed; an
/// updated nomination updates the queued pod and the nominator).
/// Terminating pods leave their node when `tick` finds their grace period over on the clock.
pub struct InMemoryCluster {
    cache: Arc<Cache>,
    queue: Option<Arc<dyn SchedulingQueue>>,
    /// The scheduler names the queue's scheduler has profiles for; a pod naming another
    /// scheduler is not queued (upstream's scheduler ignores it). Empty: every pod is.
    scheduler_names: Vec<Sym>,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl InMemoryCluster {
    /// A cluster over `cache` with the system clock and no queue.
    pub fn new(cache: Arc<Cache>) -> InMemoryCluster {
        InMemoryCluster {
            cache,
            queue: None,
            scheduler_names: Vec::new(),
            clock: Arc::new(SystemClock::new()),
            state: Mutex::new(State::default()),
        }
    }

    /// Sends pod events to `queue` too.
    pub fn with_queue(mut self, queue: Arc<dyn SchedulingQueue>) -> InMemoryCluster {
        self.queue = Some(queue);
        self
    }

    /// Queues only pods whose `spec.schedulerName` is one of `names` (the scheduler's
    /// profiles).
    pub fn with_scheduler_names(mut self, names: Vec<Sym>) -> InMemoryCluster {
        self.scheduler_names = names;
        self
    }

    /// Whether the scheduler takes pods of this `spec.schedulerName`.
    pub fn schedules(&self, scheduler_name: Sym) -> bool {
        self.scheduler_names.is_empty() || self.scheduler_names.contains(&scheduler_name)
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> InMemoryCluster {
        self.clock = clock;
        self
    }

    pub fn stats(&self) -> ClusterStats {
        lock(&self.state).stats
    }

    /// A pod is created: priority admission (its PriorityClass, or the global default, sets
    /// its priority and preemption policy), then into the scheduling queue unless another
    /// scheduler's (`with_scheduler_names`). Returns the pod as admitted.
    pub fn create_pod(&self, pod: Pod) -> Result<Pod, CreateError> {
        let admitted = admit_pod_priority(&self.cache.objects(), &pod)?;
        if let Some(q) = self.queue.as_ref().filter(|_| self.schedules(admitted.scheduler_name)) {
            q.add(admitted.clone())?;
        }
        Ok(admitted)
    }

    /// Pods still terminating.
    pub fn num_terminating(&self) -> usize {
        lock(&self.state).terminating.len()
    }

    /// When the next terminating pod's grace period ends.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        lock(&self.state).terminating.first_key_value().map(|(&(t, _), _)| t)
    }

    /// Removes every terminating pod whose grace period has ended by now; returns how many.
    pub fn tick(&self) -> usize {
        let now = self.clock.now();
        let mut due = Vec::new();
        {
            let mut s = lock(&self.state);
            while s.terminating.first_key_value().is_some_and(|(&(t, _), _)| t <= now) {
                if let Some((_, p)) = s.terminating.pop_first() {
                    due.push(p);
                }
            }
            s.stats.terminated += due.len() as u64;
        }
        for p in &due {
            self.pod_gone(p);
        }
        due.len()
    }

    /// The informer's Delete of a bound pod: out of the cache, and parked pods get a retry.
    fn pod_gone(&self, pod: &Pod) {
        // Already gone (deleted twice) is fine: the cluster's answer is the same.
        let _ = self.cache.remove_pod(pod);
        self.pod_gone_after_removal(pod);
    }

    fn pod_gone_after_removal(&self, pod: &Pod) {
        self.pods_changed(pod);
        if let Some(q) = &self.queue {
            q.assigned_pod_deleted(pod);
        }
    }

    /// A bound pod is deleted at once (no grace period): out of the cache, and the queue
    /// hears of it. `false` if the cache did not hold it.
    pub fn delete_bound_pod(&self, pod: &Pod) -> bool {
        let Some(current) = self.cache.get_pod(pod) else { return false };
        if self.cache.remove_pod(&current).is_err() {
            return false;
        }
        self.pod_gone_after_removal(&current);
        true
    }

    /// The node informer's Add: into the cache, and the queue hears of it.
    pub fn add_node(&self, node: Node) -> Result<(), CacheError> {
        self.cache.add_node(node.clone())?;
        lock(&self.state).added_nodes.push(node.name);
        if let Some(q) = &self.queue {
            q.node_added(&node);
        }
        Ok(())
    }

    /// The nodes `add_node` added after the first `seen` of them, and how many it added in
    /// all (pass that as `seen` next time). Cheap when nothing was added.
    pub fn nodes_added_since(&self, seen: usize) -> (Vec<Sym>, usize) {
        let s = lock(&self.state);
        (s.added_nodes.get(seen..).map(<[Sym]>::to_vec).unwrap_or_default(), s.added_nodes.len())
    }

    /// The node informer's Update: the queue hears what changed.
    pub fn update_node(&self, node: Node) -> Result<(), CacheError> {
        let old = self.cache.get_node(node.name);
        self.cache.update_node(node.clone())?;
        if let (Some(q), Some(old)) = (&self.queue, old) {
            q.node_updated(&old, &node);
        }
        Ok(())
    }

    /// The node informer's Delete.
    pub fn remove_node(&self, name: Sym) -> Result<(), CacheError> {
        let old = self.cache.get_node(name);
        self.cache.remove_node(name)?;
        if let (Some(q), Some(old)) = (&self.queue, old) {
            q.node_deleted(&old);
        }
        Ok(())
    }

    /// A storage object changed (the PV controller, a workload's storage templates): the
    /// queue hears of it. `resource` is one of the storage kinds.
    pub fn storage_changed(&self, resource: EventResource, action: ActionType, name: &str) {
        if let Some(q) = &self.queue {
            q.on_event(&Event::storage(resource, action, name));
        }
    }

    /// The disruption controller: budgets selecting `pod` recount their allowance from the
    /// cluster's pods (nothing to do, and nothing read, when no budget selects it).
    fn pods_changed(&self, pod: &Pod) {
        let objects = self.cache.objects();
        if !objects.pdbs.iter().any(|b| b.selects(pod)) {
            return;
        }
        let snapshot = self.cache.update_snapshot();
        let pods: Vec<&Pod> = snapshot.iter().flat_map(|n| n.pods().iter()).collect();
        self.cache.edit_objects(|o| refresh_pdb_status(o, pods.iter().copied()));
    }
}

impl ClusterApi for InMemoryCluster {
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
        self.cache.add_pod(&pod.with_node(node)).map_err(|e| BindError { pod: pod.key(), node, why: e.to_string() })?;
        lock(&self.state).stats.bound += 1;
        self.pods_changed(pod);
        Ok(())
    }

    fn delete_victim(&self, victim: &Pod) -> Result<(), ApiError> {
        let err = |why: String| ApiError { op: "delete", pod: victim.key(), why };
        let current = self.cache.get_pod(victim).ok_or_else(|| err("not found".into()))?;
        if current.is_terminating() {
            return Ok(());
        }
        let grace = victim.termination_grace_period_seconds.max(0) as u64;
        lock(&self.state).stats.victims_deleted += 1;
        if grace == 0 {
            self.cache.remove_pod(&current).map_err(|e| err(e.to_string()))?;
            self.pod_gone_after_removal(&current);
            return Ok(());
        }
        let now = self.clock.now();
        let mut marked = current.clone();
        marked.deletion_timestamp = Some(now);
        marked.preempted_by_scheduler = true;
        self.cache.update_pod(&current, &marked).map_err(|e| err(e.to_string()))?;
        self.pods_changed(&marked);
        if let Some(q) = &self.queue {
            q.assigned_pod_updated(&current, &marked);
        }
        let mut s = lock(&self.state);
        s.seq += 1;
        let seq = s.seq;
        s.terminating.insert((now.saturating_add(Duration::from_secs(grace)), seq), marked);
        Ok(())
    }

    /// The PV controller and provisioners complete the bindings at once (`volumes`).
    fn bind_volumes(&self, pod: &Pod, bindings: &PodVolumeBindings) -> Result<(), ApiError> {
        self.cache.edit_objects(|o| crate::volumes::bind_pod_volumes(&mut o.storage, bindings)).map_err(|e| ApiError {
            op: "bind volumes of",
            pod: pod.key(),
            why: e.to_string(),
        })
    }

    fn set_nominated_node(&self, pod: &Pod, node: Option<Sym>) -> Result<(), ApiError> {
        {
            let mut s = lock(&self.state);
            match node {
                Some(_) => s.stats.nominations_set += 1,
                None => s.stats.nominations_cleared += 1,
            }
        }
        if let Some(q) = &self.queue {
            let mut updated = pod.clone();
            updated.nominated_node_name = node;
            q.update(pod, updated).map_err(|e| ApiError { op: "update", pod: pod.key(), why: e.to_string() })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksched_engine::api::{
        IntOrPercent, LabelSelector, Labels, Node, PodDisruptionBudget, PreemptionPolicy, PriorityClass,
        ResourceName::*,
    };
    use ksched_engine::queue::{PriorityQueue, QueueConfig, QueueLocation};
    use ksched_engine::util::time::MockClock;

    struct Fixture {
        cache: Arc<Cache>,
        queue: Arc<PriorityQueue>,
        clock: Arc<MockClock>,
        cluster: InMemoryCluster,
    }

    fn fixture() -> Fixture {
        let cache = Arc::new(Cache::new(Duration::ZERO));
        cache.add_node(Node::builder("n").resources(4000, 32 << 30, 110).build()).unwrap();
        let clock = Arc::new(MockClock::new(Timestamp::from_secs(10)));
        let queue = Arc::new(PriorityQueue::new(QueueConfig::new().with_clock(clock.clone())));
        let cluster = InMemoryCluster::new(cache.clone()).with_queue(queue.clone()).with_clock(clock.clone());
        Fixture { cache, queue, clock, cluster }
    }

    fn pod(name: &str, grace: i64) -> Pod {
        Pod::builder(name)
            .container("i", &[(Cpu, 1000)])
            .label("app", "web")
            .termination_grace_period_seconds(grace)
            .build()
    }

    #[test]
    fn a_victim_keeps_its_resources_until_its_grace_period_ends() {
        let f = fixture();
        let v = pod("v", 30);
        f.cluster.bind(&v, Sym::new("n")).unwrap();
        f.cluster.delete_victim(&v).unwrap();
        let held = f.cache.get_pod(&v).expect("still on the node while terminating");
        assert_eq!(held.deletion_timestamp, Some(Timestamp::from_secs(10)));
        assert!(held.is_terminating_by_preemption());
        assert_eq!(f.cache.update_snapshot().get(Sym::new("n")).unwrap().requested().milli_cpu, 1000);
        assert_eq!(f.cluster.next_deadline(), Some(Timestamp::from_secs(40)));
        // Deleting again changes nothing.
        f.cluster.delete_victim(&v).unwrap();
        assert_eq!(f.cluster.num_terminating(), 1);
        f.clock.set(Timestamp::from_secs(39));
        assert_eq!(f.cluster.tick(), 0);
        assert!(f.cache.get_pod(&v).is_some());
        f.clock.set(Timestamp::from_secs(40));
        assert_eq!(f.cluster.tick(), 1);
        assert!(f.cache.get_pod(&v).is_none());
        assert_eq!(f.cache.update_snapshot().get(Sym::new("n")).unwrap().requested().milli_cpu, 0);
        let st = f.cluster.stats();
        assert_eq!((st.bound, st.victims_deleted, st.terminated), (1, 1, 1));
        assert!(f.cache.check_invariants().is_empty());
    }

    #[test]
    fn a_victim_with_no_grace_period_goes_at_once_and_wakes_parked_pods() {
        let f = fixture();
        let v = pod("v", 0);
        f.cluster.bind(&v, Sym::new("n")).unwrap();
        let parked = pod("parked", 30);
        f.cluster.create_pod(parked.clone()).unwrap();
        let mut info = f.queue.try_pop().unwrap();
        info.unschedulable_plugins.push("NodeResourcesFit");
        f.queue.add_unschedulable_if_not_present(info).unwrap();
        assert_eq!(f.queue.location(&parked.uid), Some(QueueLocation::Unschedulable));
        f.cluster.delete_victim(&v).unwrap();
        assert!(f.cache.get_pod(&v).is_none());
        assert_eq!(f.cluster.num_terminating(), 0);
        assert_ne!(f.queue.location(&parked.uid), Some(QueueLocation::Unschedulable), "the deletion moved it");
        let missing = Pod::builder("ghost").build();
        let err = f.cluster.delete_victim(&missing).unwrap_err();
        assert_eq!(err.to_string(), "delete pod default/ghost: not found");
    }

    #[test]
    fn nominations_reach_the_queued_pod_and_the_nominator() {
        let f = fixture();
        let p = pod("p", 30);
        f.cluster.create_pod(p.clone()).unwrap();
        f.cluster.set_nominated_node(&p, Some(Sym::new("n"))).unwrap();
        let nominator = f.queue.nominator().unwrap();
        assert_eq!(nominator.nominated_node(&p.uid), Some(Sym::new("n")));
        let queued = f.queue.pending_pods().into_iter().find(|q| q.uid == p.uid).unwrap();
        assert_eq!(queued.nominated_node_name, Some(Sym::new("n")));
        f.cluster.set_nominated_node(&queued, None).unwrap();
        assert_eq!(nominator.nominated_node(&p.uid), None);
        let st = f.cluster.stats();
        assert_eq!((st.nominations_set, st.nominations_cleared), (1, 1));
    }

    #[test]
    fn created_pods_get_their_priority_from_classes_and_the_global_default() {
        let f = fixture();
        f.cache.edit_objects(|o| {
            o.upsert_priority_class(PriorityClass {
                name: Sym::new("batch"),
                value: 100,
                global_default: false,
                preemption_policy: PreemptionPolicy::Never,
            });
            o.upsert_priority_class(PriorityClass {
                name: Sym::new("default"),
                value: 7,
                global_default: true,
                preemption_policy: PreemptionPolicy::PreemptLowerPriority,
            });
        });
        let named = f.cluster.create_pod(Pod::builder("a").priority_class_name("batch").build()).unwrap();
        assert_eq!((named.priority, named.preemption_policy), (100, PreemptionPolicy::Never));
        let defaulted = f.cluster.create_pod(Pod::builder("b").build()).unwrap();
        assert_eq!(defaulted.priority, 7);
        let queued: Vec<i32> = f.queue.pending_pods().iter().map(|p| p.priority).collect();
        assert_eq!(queued.len(), 2);
        assert!(queued.contains(&100) && queued.contains(&7));
        let err = f.cluster.create_pod(Pod::builder("c").priority_class_name("nope").build()).unwrap_err();
        assert!(err.to_string().contains("spec.priorityClassName"), "{err}");
        assert_eq!(f.queue.num_pending(), 2, "a refused pod is not queued");
    }

    #[test]
    fn pdb_status_follows_binds_and_deletions() {
        let f = fixture();
        f.cache.edit_objects(|o| {
            let web = LabelSelector { match_labels: Labels::from_pairs([("app", "web")]), ..Default::default() };
            o.upsert_pdb(PodDisruptionBudget {
                min_available: Some(IntOrPercent::Int(1)),
                ..PodDisruptionBudget::new("default", "web", web)
            })
        });
        let allowed = |f: &Fixture| f.cache.objects().pdbs[0].disruptions_allowed;
        let (a, b) = (pod("a", 0), pod("b", 30));
        f.cluster.bind(&a, Sym::new("n")).unwrap();
        assert_eq!(allowed(&f), 0, "one healthy pod, one must stay");
        f.cluster.bind(&b, Sym::new("n")).unwrap();
        assert_eq!(allowed(&f), 1);
        f.cluster.delete_victim(&b).unwrap();
        assert_eq!(allowed(&f), 0, "a terminating pod is not healthy");
        f.cluster.delete_victim(&a).unwrap();
        assert_eq!(allowed(&f), 0);
    }
}
