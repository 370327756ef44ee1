//! NodeResourcesFit: rejects nodes without room for the pod's requests (pod count, cpu,
//! memory, ephemeral storage, scalar resources) and scores by the configured strategy
//! (LeastAllocated by default: free fraction after placing the pod, weighted over resources).

use smallvec::SmallVec;

use crate::api::{Pod, Resource, ResourceName, Sym};
use crate::cache::node_info::NodeInfo;
use crate::framework::{Code, CycleState, FilterPlugin, Plugin, Reason, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::snapshot::Snapshot;

pub const NAME: &str = "NodeResourcesFit";
pub const TOO_MANY_PODS: &str = "Too many pods";

/// How requested resources turn into a score.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScoringStrategy {
    /// `(allocatable - requested) * 100 / allocatable`: prefer empty nodes.
    LeastAllocated,
    /// `requested * 100 / allocatable`: prefer full nodes.
    MostAllocated,
}

#[derive(Clone, Debug)]
pub struct NodeResourcesFit {
    pub strategy: ScoringStrategy,
    /// Resources scored, with weights (default cpu 1, memory 1).
    pub resources: Vec<(ResourceName, i64)>,
    /// Scalar resources the filter does not check.
    pub ignored_resources: Vec<Sym>,
    /// Scalar resource groups (the part before `/`) the filter does not check.
    pub ignored_resource_groups: Vec<Sym>,
}

impl Default for NodeResourcesFit {
    fn default() -> Self {
        NodeResourcesFit {
            strategy: ScoringStrategy::LeastAllocated,
            resources: vec![(ResourceName::Cpu, 1), (ResourceName::Memory, 1)],
            ignored_resources: Vec::new(),
            ignored_resource_groups: Vec::new(),
        }
    }
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }
}

/// One resource the node lacks: `unresolvable` when the request exceeds the node's whole
/// allocatable (no eviction could make room).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insufficient {
    pub resource: Option<ResourceName>,
    pub unresolvable: bool,
}

impl NodeResourcesFit {
    fn ignored(&self, name: Sym) -> bool {
        if self.ignored_resources.contains(&name) {
            return true;
        }
        if self.ignored_resource_groups.is_empty() {
            return false;
        }
        let s = name.as_str();
        let group = s.split_once('/').map_or("", |(g, _)| g);
        self.ignored_resource_groups.iter().any(|g| g.as_str() == group)
    }

    /// Everything `request` lacks on `node` (`resource: None` = too many pods), in upstream's
    /// order. Empty when it fits. Preemption reuses this with a trimmed NodeInfo.
    pub fn insufficient(&self, request: &Resource, node: &NodeInfo) -> SmallVec<[Insufficient; 2]> {
        let mut out = SmallVec::new();
        let alloc = node.allocatable();
        let used = node.requested();
        if node.pods().len() as i64 + 1 > alloc.allowed_pod_number {
            out.push(Insufficient { resource: None, unresolvable: false });
        }
        if request.milli_cpu == 0 && request.memory == 0 && request.ephemeral_storage == 0 && request.scalar.is_empty()
        {
            return out;
        }
        let mut check = |name: ResourceName, want: i64, have: i64, used: i64| {
            if want > 0 && want > have - used {
                out.push(Insufficient { resource: Some(name), unresolvable: want > have });
            }
        };
        check(ResourceName::Cpu, request.milli_cpu, alloc.milli_cpu, used.milli_cpu);
        check(ResourceName::Memory, request.memory, alloc.memory, used.memory);
        check(
            ResourceName::EphemeralStorage,
            request.ephemeral_storage,
            alloc.ephemeral_storage,
            used.ephemeral_storage,
        );
        for (name, want) in request.scalar.iter() {
            if want == 0 || (is_extended(name) && self.ignored(name)) {
                continue;
            }
            check(ResourceName::Scalar(name), want, alloc.scalar.get(name), used.scalar.get(name));
        }
        out
    }

    /// The score of placing a pod with `pod_non_zero` (requests with scoring defaults) on `node`.
    pub fn score_node(&self, pod_non_zero: &Resource, node: &NodeInfo) -> i64 {
        let mut total = 0;
        let mut weights = 0;
        for &(name, weight) in &self.resources {
            let (alloc, req) = allocatable_and_requested(node, name, pod_non_zero.get(name), false);
            if alloc == 0 {
                continue;
            }
            let s = match self.strategy {
                ScoringStrategy::LeastAllocated => least_requested_score(req, alloc),
                ScoringStrategy::MostAllocated => most_requested_score(req, alloc),
            };
            total += s * weight;
            weights += weight;
        }
        if weights == 0 {
            0
        } else {
            total / weights
        }
    }
}

/// An extended resource: outside the `kubernetes.io/` namespace and not a native one
/// (hugepages, attachable volumes).
fn is_extended(name: Sym) -> bool {
    let s = name.as_str();
    !s.starts_with("hugepages-")
        && !s.starts_with("requests.")
        && !s.starts_with("attachable-volumes-")
        && (!s.contains('/')
            || !s.split_once('/').is_some_and(|(d, _)| d == "kubernetes.io" || d.ends_with(".kubernetes.io")))
}

/// (allocatable, requested-with-pod) of one resource, as resource scoring reads them.
/// `use_requested` picks the real requests over the non-zero ones for cpu and memory.
#[inline]
pub fn allocatable_and_requested(
    node: &NodeInfo,
    name: ResourceName,
    pod_request: i64,
    use_requested: bool,
) -> (i64, i64) {
    let alloc = node.allocatable();
    let used = if use_requested { node.requested() } else { node.non_zero_requested() };
    match name {
        ResourceName::Cpu => (alloc.milli_cpu, used.milli_cpu + pod_request),
        ResourceName::Memory => (alloc.memory, used.memory + pod_request),
        ResourceName::EphemeralStorage => (alloc.ephemeral_storage, node.requested().ephemeral_storage + pod_request),
        ResourceName::Scalar(s) => {
            let a = alloc.scalar.get(s);
            if pod_request == 0 || a == 0 {
                (0, 0)
            } else {
                (a, node.requested().scalar.get(s) + pod_request)
            }
        }
        ResourceName::Pods => (0, 0),
    }
}

#[inline]
pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

#[inline]
pub fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

impl FilterPlugin for NodeResourcesFit {
    #[inline]
    fn filter(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        let lacking = self.insufficient(pod.requests(), node);
        if lacking.is_empty() {
            return Status::success();
        }
        let code = if lacking.iter().any(|i| i.unresolvable) {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        };
        Status {
            code,
            reasons: lacking
                .iter()
                .map(|i| i.resource.map_or(Reason::Static(TOO_MANY_PODS), Reason::Insufficient))
                .collect(),
            plugin: "",
        }
    }
}

impl ScorePlugin for NodeResourcesFit {
    #[inline]
    fn score(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        Ok(self.score_node(pod.non_zero_requests(), node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, ResourceName::*};
    use crate::framework::plugins::test_util::node_info;

    const GI: i64 = 1 << 30;

    fn pod(cpu: i64, mem: i64) -> Pod {
        Pod::builder("p").container("i", &[(Cpu, cpu), (Memory, mem)]).build()
    }

    #[test]
    fn node_resources_fit_filter_table() {
        let gpu = Scalar(Sym::new("example.com/gpu"));
        let node = || Node::builder("n").resources(4000, 8 * GI, 3).capacity(gpu, 2).build();
        let filler = pod(3000, 6 * GI);
        let cases: Vec<(&str, Pod, Vec<Pod>, Code, &str)> = vec![
            ("fits empty node", pod(1000, GI), vec![], Code::Success, ""),
            ("cpu short", pod(1500, GI), vec![filler.clone()], Code::Unschedulable, "Insufficient cpu"),
            (
                "cpu and memory short",
                pod(1500, 3 * GI),
                vec![filler.clone()],
                Code::Unschedulable,
                "Insufficient cpu, Insufficient memory",
            ),
            (
                "more than the node has is unresolvable",
                pod(5000, GI),
                vec![],
                Code::UnschedulableAndUnresolvable,
                "Insufficient cpu",
            ),
            (
                "too many pods even for best effort",
                Pod::builder("p").container("i", &[]).build(),
                vec![pod(0, 0), pod(0, 0), pod(0, 0)],
                Code::Unschedulable,
                "Too many pods",
            ),
            (
                "zero request fits an overcommitted node",
                Pod::builder("p").container("i", &[(Memory, GI)]).build(),
                vec![pod(5000, 0)],
                Code::Success,
                "",
            ),
            (
                "scalar short",
                Pod::builder("p").container("i", &[(gpu, 1)]).build(),
                vec![Pod::builder("g").container("i", &[(gpu, 2)]).build()],
                Code::Unschedulable,
                "Insufficient example.com/gpu",
            ),
            (
                "scalar absent on node",
                Pod::builder("p").container("i", &[(Scalar(Sym::new("other.io/x")), 1)]).build(),
                vec![],
                Code::UnschedulableAndUnresolvable,
                "Insufficient other.io/x",
            ),
        ];
        for (desc, p, existing, want, msg) in cases {
            let info = node_info(
                node(),
                &existing
                    .iter()
                    .enumerate()
                    .map(|(i, e)| Pod::builder(&format!("e{i}")).container_spec(e.containers[0].clone()).build())
                    .collect::<Vec<_>>(),
            );
            let st = NodeResourcesFit::default().filter(&CycleState::new(), &p, &info);
            assert_eq!(st.code, want, "{desc}");
            assert_eq!(st.message(), msg, "{desc}");
        }
    }

    #[test]
    fn node_resources_fit_ignored_resources() {
        let gpu = Sym::new("example.com/gpu");
        let p = Pod::builder("p").container("i", &[(Scalar(gpu), 1)]).build();
        let info = node_info(Node::builder("n").resources(1000, GI, 10).build(), &[]);
        let by_name = NodeResourcesFit { ignored_resources: vec![gpu], ..Default::default() };
        let by_group =
            NodeResourcesFit { ignored_resource_groups: vec![Sym::new("example.com")], ..Default::default() };
        assert!(by_name.filter(&CycleState::new(), &p, &info).is_success());
        assert!(by_group.filter(&CycleState::new(), &p, &info).is_success());
        assert!(!NodeResourcesFit::default().filter(&CycleState::new(), &p, &info).is_success());
    }

    #[test]
    fn least_allocated_score_table() {
        // Node 4000m / 10000 bytes; existing requests use the non-zero defaults when unnamed.
        let cases: Vec<(&str, Pod, Vec<Pod>, i64)> = vec![
            // cpu (4000-1000)*100/4000 = 75, memory (10000-5000)*100/10000 = 50 → 62
            ("explicit requests", pod(1000, 5000), vec![], 62),
            // existing 2000m/2000: cpu (4000-3000)*100/4000=25, mem (10000-7000)*100/10000=30 → 27
            ("with existing pods", pod(1000, 5000), vec![pod(2000, 2000)], 27),
            // a best-effort pod counts as 100m and 200Mi (more than the node has: 0)
            (
                "best effort uses defaults",
                Pod::builder("p").container("i", &[]).build(),
                vec![],
                (3900 * 100 / 4000) / 2,
            ),
        ];
        for (desc, p, existing, want) in cases {
            let info = node_info(Node::builder("n").resources(4000, 10_000, 110).build(), &existing);
            let got = NodeResourcesFit::default().score(&CycleState::new(), &p, &info, &Snapshot::default()).unwrap();
            assert_eq!(got, want, "{desc}");
        }
    }

    #[test]
    fn most_allocated_score() {
        let fit = NodeResourcesFit { strategy: ScoringStrategy::MostAllocated, ..Default::default() };
        let info = node_info(Node::builder("n").resources(4000, 10_000, 110).build(), &[]);
        // cpu 1000*100/4000 = 25, memory 5000*100/10000 = 50 → 37
        assert_eq!(fit.score(&CycleState::new(), &pod(1000, 5000), &info, &Snapshot::default()).unwrap(), 37);
    }
}
