//! `NodeInfo`: a node plus the pods on it and their aggregated requests, as the plugins read
//! it. NodeInfos are shared by `Arc` between the cache and the snapshots; the cache mutates a
//! private copy (`Arc::make_mut`) so readers of a published snapshot are never disturbed.

use std::sync::Arc;

use super::columns::{LowLevel, PodsDelta};
use super::pvec::PVec;
use crate::api::{ContainerPort, Node, Pod, PodUid, Protocol, Resource, Sym};
use crate::util::copy_vec::CopyVec;

/// Host ports in use on a node: (host IP, protocol, port). `Sym::EMPTY` is 0.0.0.0.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HostPortInfo(CopyVec<[(Sym, Protocol, i32); 4]>);

// By hand, like `Scalars`: a derived `clone_from` would not reuse the buffer.
impl Clone for HostPortInfo {
    fn clone(&self) -> Self {
        HostPortInfo(self.0.clone())
    }

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

fn sanitize_ip(ip: Sym) -> Sym {
    if ip.is_empty() || ip == Sym::ANY_IP {
        Sym::EMPTY
    } else {
        ip
    }
}

impl HostPortInfo {
    pub fn add(&mut self, p: &ContainerPort) {
        self.0.push((sanitize_ip(p.host_ip), p.protocol, p.host_port));
    }

    pub fn remove(&mut self, p: &ContainerPort) {
        let key = (sanitize_ip(p.host_ip), p.protocol, p.host_port);
        if let Some(i) = self.0.iter().position(|e| *e == key) {
            self.0.swap_remove(i);
        }
    }

    /// Whether binding `p` would clash: a wildcard address clashes with any address on the
    /// same protocol and port; a specific address with itself and the wildcard.
    pub fn conflicts(&self, p: &ContainerPort) -> bool {
        if p.host_port <= 0 {
            return false;
        }
        let ip = sanitize_ip(p.host_ip);
        self.0.iter().any(|&(used_ip, proto, port)| {
            proto == p.protocol && port == p.host_port && (ip.is_empty() || used_ip.is_empty() || used_ip == ip)
        })
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A node and what is placed on it.
#[derive(Debug)]
pub struct NodeInfo {
    node: Arc<Node>,
    /// Hot copies of node fields the filters read for every node (saves a pointer chase).
    allocatable: Resource,
    unschedulable: bool,
    has_taints: bool,
    /// A persistent vector: cloning a NodeInfo (the cache's copy-on-write of a node a
    /// snapshot shares) copies no pods, and adding or removing one copies only the path to
    /// its leaf, so a pod on a node costs O(1), not O(pods on the node).
    pods: PVec<Pod>,
    /// Sum of the pods' effective requests; `allowed_pod_number` holds the pod count.
    requested: Resource,
    /// The same with unnamed CPU / memory requests at the scoring defaults.
    non_zero_requested: Resource,
    used_ports: HostPortInfo,
    /// The node's image names, sorted, with sizes.
    images: Vec<(Sym, i64)>,
    pods_with_affinity: u32,
    pods_with_required_anti_affinity: u32,
    /// Per priority of the pods here, lowest first: how many and what they add to the hot
    /// row, so preemption's dry run sums what the pods below a priority hold without reading
    /// them (`below`).
    by_priority: PriorityTally,
    /// Bumped on every change; the snapshot publisher copies nodes whose generation moved.
    pub(crate) generation: u64,
}

impl Clone for NodeInfo {
    fn clone(&self) -> Self {
        NodeInfo {
            node: Arc::clone(&self.node),
            allocatable: self.allocatable.clone(),
            unschedulable: self.unschedulable,
            has_taints: self.has_taints,
            pods: self.pods.clone(),
            requested: self.requested.clone(),
            non_zero_requested: self.non_zero_requested.clone(),
            used_ports: self.used_ports.clone(),
            images: self.images.clone(),
            pods_with_affinity: self.pods_with_affinity,
            pods_with_required_anti_affinity: self.pods_with_required_anti_affinity,
            by_priority: self.by_priority.clone(),
            generation: self.generation,
        }
    }

    /// Copies `source` into `self`, reusing `self`'s buffers (the two-pass filter's
    /// per-worker copy).
    fn clone_from(&mut self, source: &Self) {
        self.clone_aggregates_from(source);
        self.pods = source.pods.clone();
    }
}

/// A node's pods by priority (see `NodeInfo::below`): (priority, pods, what they add), by
/// ascending priority; a priority with no pod left has no entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PriorityTally(smallvec::SmallVec<[(i32, u32, PodsDelta); 2]>);

impl PriorityTally {
    fn add(&mut self, pod: &Pod) {
        let i = self.0.partition_point(|e| e.0 < pod.priority);
        if self.0.get(i).is_none_or(|e| e.0 != pod.priority) {
            self.0.insert(i, (pod.priority, 0, PodsDelta::default()));
        }
        let e = &mut self.0[i];
        e.1 += 1;
        e.2.add(pod);
    }

    fn sub(&mut self, pod: &Pod) {
        let Some(i) = self.0.iter().position(|e| e.0 == pod.priority) else {
            debug_assert!(false, "no pod of priority {} to take off", pod.priority);
            return;
        };
        let e = &mut self.0[i];
        e.1 -= 1;
        e.2.sub(pod);
        if e.1 == 0 {
            self.0.remove(i);
        }
    }

    fn low_level(&self, affinity_pods: u32) -> LowLevel {
        let Some(first) = self.0.first() else {
            return LowLevel { affinity_pods, ..LowLevel::EMPTY };
        };
        LowLevel { priority: first.0, next: self.0.get(1).map_or(i32::MAX, |e| e.0), affinity_pods, delta: first.2 }
    }

    #[inline]
    fn below(&self, priority: i32) -> Option<PodsDelta> {
        let mut sum: Option<PodsDelta> = None;
        for e in self.0.iter().take_while(|e| e.0 < priority) {
            sum.get_or_insert_default().plus(&e.2);
        }
        sum
    }
}

impl NodeInfo {
    pub fn new(node: Arc<Node>) -> NodeInfo {
        let mut info = NodeInfo {
            node: Arc::clone(&node),
            allocatable: Resource::default(),
            unschedulable: false,
            has_taints: false,
            pods: PVec::default(),
            requested: Resource::default(),
            non_zero_requested: Resource::default(),
            used_ports: HostPortInfo::default(),
            images: Vec::new(),
            pods_with_affinity: 0,
            pods_with_required_anti_affinity: 0,
            by_priority: PriorityTally::default(),
            generation: 0,
        };
        info.set_node(node);
        info
    }

    pub fn node(&self) -> &Node {
        &self.node
    }

    pub fn node_arc(&self) -> &Arc<Node> {
        &self.node
    }

    pub fn name(&self) -> Sym {
        self.node.name
    }

    /// The pods on the node, in order (iterate with `iter()` or `for p in node.pods()`).
    pub fn pods(&self) -> &PVec<Pod> {
        &self.pods
    }

    pub fn requested(&self) -> &Resource {
        &self.requested
    }

    pub fn non_zero_requested(&self) -> &Resource {
        &self.non_zero_requested
    }

    #[inline]
    pub fn allocatable(&self) -> &Resource {
        &self.allocatable
    }

    /// `spec.unschedulable` of the node.
    #[inline]
    pub fn unschedulable(&self) -> bool {
        self.unschedulable
    }

    /// Whether the node has any taint.
    #[inline]
    pub fn has_taints(&self) -> bool {
        self.has_taints
    }

    pub fn used_ports(&self) -> &HostPortInfo {
        &self.used_ports
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn pods_with_affinity(&self) -> u32 {
        self.pods_with_affinity
    }

    pub fn pods_with_required_anti_affinity(&self) -> u32 {
        self.pods_with_required_anti_affinity
    }

    /// Size of the image if the node has it under `name`.
    #[inline]
    pub fn image_size(&self, name: Sym) -> Option<i64> {
        self.images.binary_search_by_key(&name, |&(n, _)| n).ok().map(|i| self.images[i].1)
    }

    pub fn image_names(&self) -> impl Iterator<Item = Sym> + '_ {
        self.images.iter().map(|&(n, _)| n)
    }

    /// Replaces the node object (labels, taints, allocatable...), keeping the pods.
    pub fn set_node(&mut self, node: Arc<Node>) {
        let mut images: Vec<(Sym, i64)> =
            node.images.iter().flat_map(|img| img.names.iter().map(move |&n| (n, img.size_bytes))).collect();
        images.sort_unstable_by_key(|&(n, _)| n);
        images.dedup_by_key(|&mut (n, _)| n);
        self.images = images;
        self.allocatable = node.allocatable.clone();
        self.unschedulable = node.unschedulable;
        self.has_taints = !node.taints.is_empty();
        self.node = node;
    }

    pub fn add_pod(&mut self, pod: Pod) {
        self.add_to_aggregates(&pod);
        self.pods.push(pod);
    }

    /// Counts `pod` in the aggregates (requests, pod count, host ports, affinity counts)
    /// without listing it in `pods()`. Only for scratch copies that filters reading nothing
    /// but the aggregates look at (`FilterPlugin::reads_pods`); `sub_aggregates` undoes it.
    pub(crate) fn add_to_aggregates(&mut self, pod: &Pod) {
        self.requested.add(pod.accounted_requests());
        self.requested.allowed_pod_number += 1;
        let (cpu, memory) = pod.accounted_non_zero();
        self.non_zero_requested.milli_cpu += cpu;
        self.non_zero_requested.memory += memory;
        for p in pod.host_ports() {
            self.used_ports.add(p);
        }
        let (aff, anti) = pod.affinity_flags();
        self.pods_with_affinity += aff as u32;
        self.pods_with_required_anti_affinity += anti as u32;
        self.by_priority.add(pod);
    }

    /// Copies `source` into `self` except for its pods list, which is left empty while the
    /// aggregates still count them: a scratch copy for filters that read only the
    /// aggregates (the two-pass filter's first pass), reusing `self`'s buffers.
    pub(crate) fn clone_aggregates_from(&mut self, source: &NodeInfo) {
        self.node.clone_from(&source.node);
        self.allocatable.clone_from(&source.allocatable);
        self.unschedulable = source.unschedulable;
        self.has_taints = source.has_taints;
        self.pods.clear();
        self.requested.clone_from(&source.requested);
        self.non_zero_requested.clone_from(&source.non_zero_requested);
        self.used_ports.clone_from(&source.used_ports);
        self.images.clone_from(&source.images);
        self.pods_with_affinity = source.pods_with_affinity;
        self.pods_with_required_anti_affinity = source.pods_with_required_anti_affinity;
        self.by_priority.clone_from(&source.by_priority);
        self.generation = source.generation;
    }

    /// Removes the pod with `uid`; returns it, or `None` if it is not here. Searches from the
    /// most recently added pod (preemption's dry run takes back the pod it just added).
    pub fn remove_pod(&mut self, uid: &PodUid) -> Option<Pod> {
        let i = self.pods.rposition(|p| &p.uid == uid)?;
        Some(self.remove_pod_at(i))
    }

    /// A copy of this node without the pods `take` picks (`take` is called once per pod, in
    /// order); those are appended to `out` in their order here, and the pods kept keep theirs.
    /// The copy's aggregates are summed from the kept pods alone, so taking most pods (what
    /// preemption's dry run does) costs little.
    pub fn clone_taking(&self, mut take: impl FnMut(&Pod) -> bool, out: &mut Vec<Pod>) -> NodeInfo {
        let mut copy = NodeInfo {
            node: Arc::clone(&self.node),
            allocatable: self.allocatable.clone(),
            unschedulable: self.unschedulable,
            has_taints: self.has_taints,
            pods: PVec::default(),
            requested: Resource::default(),
            non_zero_requested: Resource::default(),
            used_ports: HostPortInfo::default(),
            images: self.images.clone(),
            pods_with_affinity: 0,
            pods_with_required_anti_affinity: 0,
            by_priority: PriorityTally::default(),
            generation: self.generation,
        };
        for p in &self.pods {
            if take(p) {
                out.push(p.clone());
            } else {
                copy.add_pod(p.clone());
            }
        }
        copy
    }

    fn remove_pod_at(&mut self, i: usize) -> Pod {
        let pod = self.pods.swap_remove(i).expect("index from rposition");
        self.sub_aggregates(&pod);
        pod
    }

    pub(crate) fn sub_aggregates(&mut self, pod: &Pod) {
        self.requested.sub(pod.accounted_requests());
        self.requested.allowed_pod_number -= 1;
        let (cpu, memory) = pod.accounted_non_zero();
        self.non_zero_requested.milli_cpu -= cpu;
        self.non_zero_requested.memory -= memory;
        for p in pod.host_ports() {
            self.used_ports.remove(p);
        }
        let (aff, anti) = pod.affinity_flags();
        self.pods_with_affinity -= aff as u32;
        self.pods_with_required_anti_affinity -= anti as u32;
        self.by_priority.sub(pod);
    }

    /// What the pods of priority below `priority` add to the node's hot row, and whether
    /// there is any; read from the per-priority tally, not the pods.
    #[inline]
    pub fn below(&self, priority: i32) -> Option<PodsDelta> {
        self.by_priority.below(priority)
    }

    /// The node's lowest pod-priority level, as the snapshot's columns keep it.
    pub fn low_level(&self) -> LowLevel {
        self.by_priority.low_level(self.pods_with_affinity)
    }

    /// Recomputes every aggregate from the pods; the debug checker compares it with the
    /// incrementally maintained values.
    pub fn recomputed(&self) -> NodeInfo {
        let mut fresh = NodeInfo::new(Arc::clone(&self.node));
        for p in &self.pods {
            fresh.add_pod(p.clone());
        }
        fresh
    }

    /// Whether the aggregates equal those recomputed from the pods.
    pub fn aggregates_match(&self, other: &NodeInfo) -> bool {
        let mut a = self.used_ports.0.clone();
        let mut b = other.used_ports.0.clone();
        let key = |e: &(Sym, Protocol, i32)| (e.0, e.1 as u8, e.2);
        a.sort_unstable_by_key(key);
        b.sort_unstable_by_key(key);
        self.requested == other.requested
            && self.non_zero_requested == other.non_zero_requested
            && a == b
            && self.pods_with_affinity == other.pods_with_affinity
            && self.pods_with_required_anti_affinity == other.pods_with_required_anti_affinity
            && self.by_priority == other.by_priority
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ResourceName::*;

    fn port(ip: &str, proto: Protocol, p: i32) -> ContainerPort {
        ContainerPort { container_port: p, host_port: p, protocol: proto, host_ip: Sym::new(ip) }
    }

    #[test]
    fn host_port_conflict_table() {
        let mut used = HostPortInfo::default();
        used.add(&port("127.0.0.1", Protocol::Tcp, 8080));
        used.add(&port("", Protocol::Udp, 53));
        let cases = [
            (port("127.0.0.1", Protocol::Tcp, 8080), true),
            (port("127.0.0.2", Protocol::Tcp, 8080), false),
            (port("0.0.0.0", Protocol::Tcp, 8080), true),
            (port("", Protocol::Udp, 8080), false),
            (port("10.0.0.1", Protocol::Udp, 53), true),
            (port("10.0.0.1", Protocol::Tcp, 53), false),
        ];
        for (i, (p, want)) in cases.iter().enumerate() {
            assert_eq!(used.conflicts(p), *want, "case {i}: {p:?}");
        }
    }

    #[test]
    fn node_info_add_remove_restores_aggregates() {
        let node = Arc::new(Node::builder("n").resources(4000, 1 << 30, 10).build());
        let mut info = NodeInfo::new(node);
        let empty = info.clone();
        let a = Pod::builder("a").container("i", &[(Cpu, 100)]).host_port(80).build();
        let b = Pod::builder("b").container("i", &[(Memory, 10)]).build();
        info.add_pod(a.clone());
        info.add_pod(b.clone());
        assert_eq!(info.requested().milli_cpu, 100);
        assert_eq!(info.requested().allowed_pod_number, 2);
        assert_eq!(info.non_zero_requested().milli_cpu, 100 + 100);
        assert!(info.aggregates_match(&info.recomputed()));
        assert!(info.remove_pod(&a.uid).is_some());
        assert!(info.remove_pod(&a.uid).is_none());
        info.remove_pod(&b.uid);
        assert!(info.aggregates_match(&empty));
    }

    #[test]
    fn node_info_add_pod_to_a_shared_copy_copies_one_path_of_the_pod_list() {
        // Assuming a pod on a node whose NodeInfo a published snapshot shares: the pods
        // already there are shared, not copied, however many there are.
        for pods in [10usize, 20_000, 40_000] {
            let mut info = NodeInfo::new(Arc::new(Node::builder("n").resources(1 << 40, 1 << 50, 1 << 30).build()));
            for i in 0..pods {
                info.add_pod(Pod::builder(&format!("p{i}")).container("c", &[(Cpu, 1)]).build());
            }
            let published = info.clone();
            info.add_pod(Pod::builder("new").container("c", &[(Cpu, 1)]).build());
            assert_eq!(info.pods().unshared_nodes(published.pods()), info.pods().depth(), "{pods}");
            assert_eq!((published.pods().len(), info.pods().len()), (pods, pods + 1));
            assert!(info.aggregates_match(&info.recomputed()), "{pods}");
        }
    }

    /// `below` sums the pods under a priority as a scan of the pods would, through adds and
    /// removes in any order (random pods, a naive sum as the model).
    #[test]
    fn below_sums_the_lower_priority_pods() {
        let mut rng = crate::util::rng::Rng::seed(7);
        let node = Arc::new(Node::builder("n").resources(64_000, 1 << 40, 500).build());
        let mut info = NodeInfo::new(node);
        let mut here: Vec<Pod> = Vec::new();
        for step in 0..400 {
            if here.is_empty() || rng.below(3) != 0 {
                let prio = rng.below(5) as i32 - 2;
                let mut b = Pod::builder(&format!("p{step}"))
                    .priority(prio)
                    .container("i", &[(Cpu, 1 + rng.below(900) as i64), (Memory, rng.below(1 << 20) as i64)]);
                if rng.below(4) == 0 {
                    b = b.affinity(crate::testing::requires_pod_anti_affinity("app", "x"));
                }
                let p = b.build();
                info.add_pod(p.clone());
                here.push(p);
            } else {
                let p = here.swap_remove(rng.below(here.len() as u64) as usize);
                info.remove_pod(&p.uid).expect("on the node");
            }
            for priority in -3..=3 {
                let mut want: Option<PodsDelta> = None;
                for p in here.iter().filter(|p| p.priority < priority) {
                    want.get_or_insert_default().add(p);
                }
                assert_eq!(info.below(priority), want, "step {step}, below {priority}");
            }
            assert!(info.aggregates_match(&info.recomputed()), "step {step}");
        }
    }

    #[test]
    fn clone_taking_moves_the_picked_pods_out_in_order_and_sums_the_rest() {
        let node = Arc::new(Node::builder("n").resources(4000, 1 << 30, 10).build());
        let mut info = NodeInfo::new(node);
        let low =
            |name: &str, cpu: i64| Pod::builder(name).container("i", &[(Cpu, cpu)]).host_port(80 + cpu as i32).build();
        let a = low("a", 100);
        let b = Pod::builder("b").container("i", &[(Cpu, 200), (Memory, 10)]).priority(5).host_port(90).build();
        let c = low("c", 300);
        let d = Pod::builder("d").container("i", &[(Memory, 20)]).priority(7).build();
        for p in [&a, &b, &c, &d] {
            info.add_pod(p.clone());
        }
        let before = info.clone();
        let cases: [(&str, i32, &[&str], &[&str]); 4] = [
            ("take none", i32::MIN, &[], &["a", "b", "c", "d"]),
            ("take the lowest", 5, &["a", "c"], &["b", "d"]),
            ("take all but the highest", 7, &["a", "b", "c"], &["d"]),
            ("take all", i32::MAX, &["a", "b", "c", "d"], &[]),
        ];
        for (name, below, want_taken, want_kept) in cases {
            let mut out = vec![Pod::builder("already-there").build()];
            let copy = info.clone_taking(|p| p.priority < below, &mut out);
            let taken: Vec<&str> = out[1..].iter().map(|p| &p.name[..]).collect();
            let kept: Vec<&str> = copy.pods().iter().map(|p| &p.name[..]).collect();
            assert_eq!((taken.as_slice(), kept.as_slice()), (want_taken, want_kept), "{name}");
            assert_eq!(&out[0].name[..], "already-there", "{name}: out is appended to");
            assert!(copy.aggregates_match(&copy.recomputed()), "{name}: aggregates");
            assert_eq!(copy.name(), info.name());
            assert!(info.aggregates_match(&before) && info.pods().len() == 4, "{name}: the source is untouched");
        }
    }
}
