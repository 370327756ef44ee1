//! NodeResourcesBalancedAllocation: prefers nodes whose resource utilizations (after placing
//! the pod) are close to each other: `(1 - std-dev of the fractions) * 100`.

use crate::api::{Pod, ResourceName};
use crate::features::{Feature, FeatureGates};
use crate::framework::plugins::node_resources_fit::{
    allocatable_and_requested, hot_allocatable_and_requested, score_from_columns,
};
use crate::framework::Feasible;
use crate::framework::ScoreMemoKey;
use crate::framework::{
    ArgsError, ColumnScoring, CycleState, Plugin, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{Columns, Snapshot};

pub const NAME: &str = "NodeResourcesBalancedAllocation";

#[derive(Clone, Debug)]
pub struct BalancedAllocation {
    pub resources: Vec<ResourceName>,
    /// The DRAExtendedResource gate (alpha, off): while on, no pod is signed.
    pub dra_extended_resource: bool,
}

impl Default for BalancedAllocation {
    fn default() -> Self {
        BalancedAllocation { resources: vec![ResourceName::Cpu, ResourceName::Memory], dra_extended_resource: false }
    }
}

/// BalancedAllocation's configuration (`NodeResourcesBalancedAllocationArgs` of
/// `kubescheduler.config.k8s.io/v1`): the resources whose utilizations are balanced.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesBalancedAllocationArgs {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub api_version: Option<String>,
    /// Empty (or absent) means cpu and memory; a weight of 0 means 1.
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
}

/// A resource and its weight.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSpec {
    pub name: String,
    #[serde(default)]
    pub weight: i64,
}

impl Default for NodeResourcesBalancedAllocationArgs {
    fn default() -> Self {
        let spec = |name: &str| ResourceSpec { name: name.to_owned(), weight: 1 };
        NodeResourcesBalancedAllocationArgs {
            kind: None,
            api_version: None,
            resources: vec![spec("cpu"), spec("memory")],
        }
    }
}

impl NodeResourcesBalancedAllocationArgs {
    /// Upstream's rules after defaulting: no resource twice, and every weight 1 (the plugin
    /// does not weight resources).
    pub fn validate(&self) -> Result<(), ArgsError> {
        for (i, r) in self.resources.iter().enumerate() {
            if self.resources[..i].iter().any(|o| o.name == r.name) {
                return Err(ArgsError::new(format!("resources[{i}].name"), format!("Duplicate value: {:?}", r.name)));
            }
            if r.weight != 0 && r.weight != 1 {
                return Err(ArgsError::new(
                    format!("resources[{i}].weight"),
                    format!("Invalid value: {}: must be 1", r.weight),
                ));
            }
        }
        Ok(())
    }
}

impl BalancedAllocation {
    pub fn new(args: NodeResourcesBalancedAllocationArgs) -> BalancedAllocation {
        if args.resources.is_empty() {
            return BalancedAllocation::default();
        }
        BalancedAllocation {
            resources: args.resources.iter().map(|r| ResourceName::parse(&r.name)).collect(),
            dra_extended_resource: false,
        }
    }

    /// The plugin as constructed under `gates` (what of it a gate steers).
    pub fn with_gates(self, gates: &FeatureGates) -> BalancedAllocation {
        BalancedAllocation { dra_extended_resource: gates.enabled(Feature::DRAExtendedResource), ..self }
    }
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }
    crate::framework::signature::sign_fragments!(
        unless dra_extended_resource => "pods are not signed while DRAExtendedResource is on";
        RESOURCES => resources,
    );
}

impl BalancedAllocation {
    pub fn score_node(&self, pod: &Pod, node: &NodeInfo) -> i64 {
        self.score_with(|r| allocatable_and_requested(node, r, pod.accounted_requests().get(r), true))
    }

    /// The score given each balanced resource's (allocatable, requested-with-pod).
    #[inline]
    fn score_with(&self, alloc_req: impl Fn(ResourceName) -> (i64, i64)) -> i64 {
        balanced_score(self.resources.iter().map(|&r| alloc_req(r)))
    }

    /// The default configuration (cpu and memory) with `pod`'s requests: what the column
    /// fast path reads besides the row, and so the memo key.
    #[inline]
    fn fast_path(&self, pod: &Pod) -> Option<(i64, i64)> {
        let request = pod.accounted_requests();
        matches!(self.resources.as_slice(), [ResourceName::Cpu, ResourceName::Memory])
            .then_some((request.milli_cpu, request.memory))
    }
}

/// BalancedAllocation's formula over the (allocatable, requested-with-pod) `parts` (the first
/// eight): each part with something allocatable gives a fraction `requested / allocatable`
/// capped at 1, and the score is `(1 - their standard deviation) * MAX_NODE_SCORE`, truncated.
#[inline]
pub fn balanced_score(parts: impl IntoIterator<Item = (i64, i64)>) -> i64 {
    let mut fractions = [0f64; 8];
    let mut n = 0;
    let mut total = 0.0;
    for (alloc, req) in parts.into_iter().take(fractions.len()) {
        if alloc == 0 {
            continue;
        }
        let f = (req as f64 / alloc as f64).min(1.0);
        fractions[n] = f;
        total += f;
        n += 1;
    }
    let std = match n {
        0 | 1 => 0.0,
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        _ => {
            let mean = total / n as f64;
            (fractions[..n].iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / n as f64).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

impl PreScorePlugin for BalancedAllocation {
    /// Best-effort pods (nothing requested among the scored resources) are not scored.
    fn pre_score(&self, _state: &mut CycleState, pod: &Pod, _snapshot: &Snapshot, _nodes: &Feasible<'_>) -> Status {
        if self.resources.iter().all(|&r| pod.accounted_requests().get(r) == 0) {
            Status::skip()
        } else {
            Status::success()
        }
    }
}

impl ScorePlugin for BalancedAllocation {
    fn normalizing(&self) -> crate::framework::Normalizing {
        crate::framework::Normalizing::Unchanged
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        Ok(self.score_node(pod, node))
    }

    fn memo_key(&self, pod: &Pod) -> Option<ScoreMemoKey> {
        self.fast_path(pod).map(|(cpu, memory)| [cpu, memory, 0, 0])
    }

    fn score_columns(
        &self,
        _state: &CycleState,
        pod: &Pod,
        columns: &Columns,
        positions: &[u32],
        _snapshot: &Snapshot,
        out: &mut Vec<i64>,
    ) -> Result<ColumnScoring, Status> {
        // The default configuration, with the per-pod lookups out of the node loop.
        if let Some((cpu, memory)) = self.fast_path(pod) {
            out.extend(columns.rows(positions).map(|node| {
                let part = |name, request| hot_allocatable_and_requested(node, name, request, true).unwrap_or((0, 0));
                balanced_score([part(ResourceName::Cpu, cpu), part(ResourceName::Memory, memory)])
            }));
            return Ok(ColumnScoring::Scored);
        }
        let request = pod.accounted_requests();
        Ok(score_from_columns(self.resources.iter().copied(), columns, positions, out, |node| {
            self.score_with(|r| hot_allocatable_and_requested(node, r, request.get(r), true).unwrap_or((0, 0)))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, ResourceName::*};
    use crate::framework::plugins::test_util::node_info;

    #[test]
    fn balanced_allocation_score_table() {
        let pod = |cpu, mem| Pod::builder("p").container("i", &[(Cpu, cpu), (Memory, mem)]).build();
        let cases: Vec<(&str, Pod, Vec<Pod>, i64)> = vec![
            // fractions 0.25, 0.25 → 100
            ("equal fractions", pod(1000, 2500), vec![], 100),
            // 0.5 and 0.1 → 1 - 0.2 = 80
            ("skewed", pod(2000, 1000), vec![], 80),
            // existing 1000m: cpu 3000/4000 = .75, mem 1000/10000 = .1 → 1 - .325 = 67.5 → 67
            ("existing pods count with real requests", pod(2000, 1000), vec![pod(1000, 0)], 67),
            // cpu over capacity caps at 1: 1 and 0 → 50
            ("capped at one", pod(8000, 0), vec![], 50),
        ];
        for (desc, p, existing, want) in cases {
            let info = node_info(Node::builder("n").resources(4000, 10_000, 110).build(), &existing);
            assert_eq!(BalancedAllocation::default().score_node(&p, &info), want, "{desc}");
        }
    }

    #[test]
    fn balanced_allocation_skips_best_effort() {
        let mut s = CycleState::new();
        let be = Pod::builder("p").container("i", &[]).build();
        let req = Pod::builder("p").container("i", &[(Cpu, 1)]).build();
        assert!(BalancedAllocation::default()
            .pre_score(&mut s, &be, &Snapshot::default(), &Feasible::nodes(&[]))
            .is_skip());
        assert!(BalancedAllocation::default()
            .pre_score(&mut s, &req, &Snapshot::default(), &Feasible::nodes(&[]))
            .is_success());
    }
}
