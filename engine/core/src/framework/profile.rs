//! A profile: which plugins run at each extension point, score weights, and the sampling
//! and parallelism settings (one `KubeSchedulerProfile`).

use std::sync::Arc;

use super::plugins::{
    default_preemption::DefaultPreemption, dynamic_resources::DynamicResources, image_locality::ImageLocality,
    inter_pod_affinity::InterPodAffinity, node_affinity::NodeAffinity, node_name::NodeName, node_ports::NodePorts,
    node_resources_balanced::BalancedAllocation, node_resources_fit::NodeResourcesFit,
    node_unschedulable::NodeUnschedulable, node_volume_limits::NodeVolumeLimits,
    pod_topology_spread::PodTopologySpread, taint_toleration::TaintToleration, volume_binding::VolumeBinding,
    volume_restrictions::VolumeRestrictions, volume_zone::VolumeZone,
};
use super::{
    BindPlugin, FilterPlugin, PostFilterPlugin, PreBindPlugin, PreFilterPlugin, PreScorePlugin, ReservePlugin,
    ScorePlugin,
};

/// A score plugin with its weight.
#[derive(Clone)]
pub struct WeightedScore {
    pub plugin: Arc<dyn ScorePlugin>,
    pub weight: i64,
}

#[derive(Clone)]
pub struct Profile {
    pub scheduler_name: String,
    pub pre_filter: Vec<Arc<dyn PreFilterPlugin>>,
    pub filter: Vec<Arc<dyn FilterPlugin>>,
    pub post_filter: Vec<Arc<dyn PostFilterPlugin>>,
    pub pre_score: Vec<Arc<dyn PreScorePlugin>>,
    pub score: Vec<WeightedScore>,
    pub reserve: Vec<Arc<dyn ReservePlugin>>,
    pub pre_bind: Vec<Arc<dyn PreBindPlugin>>,
    /// Empty: the scheduler's cluster `Binder` binds (upstream's DefaultBinder).
    pub bind: Vec<Arc<dyn BindPlugin>>,
    /// `None` or `Some(0)`: adaptive (50% − nodes/125, at least 5%).
    pub percentage_of_nodes_to_score: Option<u32>,
    /// Filter workers, the caller included (1 = sequential).
    pub parallelism: usize,
}

impl Profile {
    /// How many feasible nodes a cycle's search over `nodes` nodes looks for: one when
    /// nothing scores (any fits), else upstream's numFeasibleNodesToFind.
    pub fn nodes_to_find(&self, nodes: usize) -> usize {
        if self.score.is_empty() {
            1
        } else {
            crate::parallel::num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, nodes)
        }
    }

    /// An empty profile (no plugins): every node fits and scores 0.
    pub fn empty(name: &str) -> Profile {
        Profile {
            scheduler_name: name.to_owned(),
            pre_filter: Vec::new(),
            filter: Vec::new(),
            post_filter: Vec::new(),
            pre_score: Vec::new(),
            score: Vec::new(),
            reserve: Vec::new(),
            pre_bind: Vec::new(),
            bind: Vec::new(),
            percentage_of_nodes_to_score: None,
            parallelism: 1,
        }
    }

    /// Upstream's default profile (v1.35) in upstream's order and with upstream's weights
    /// (TaintToleration 3, NodeAffinity, PodTopologySpread and InterPodAffinity 2, the rest 1).
    /// VolumeBinding's Score is off (upstream's needs the StorageCapacityScoring gate).
    /// Not modelled: DynamicResources beyond its
    /// PostFilter message (no DRA objects; upstream filters nothing and scores 0 without them),
    /// and the queue-side plugins (SchedulingGates,
    /// PrioritySort) and DefaultBinder, which ksched builds in.
    pub fn default_profile() -> Profile {
        let unschedulable = Arc::new(NodeUnschedulable);
        let node_name = Arc::new(NodeName);
        let taints = Arc::new(TaintToleration);
        let affinity = Arc::new(NodeAffinity::default());
        let ports = Arc::new(NodePorts);
        let fit = Arc::new(NodeResourcesFit::default());
        let restrictions = Arc::new(VolumeRestrictions);
        let volume_limits = Arc::new(NodeVolumeLimits::default());
        let volume_binding = Arc::new(VolumeBinding::default());
        let volume_zone = Arc::new(VolumeZone::default());
        let spread = Arc::new(PodTopologySpread::default());
        let pod_affinity = Arc::new(InterPodAffinity::default());
        let balanced = Arc::new(BalancedAllocation::default());
        let images = Arc::new(ImageLocality);
        let dynamic_resources = Arc::new(DynamicResources);
        Profile {
            pre_filter: vec![
                affinity.clone(),
                ports.clone(),
                restrictions.clone(),
                volume_limits.clone(),
                volume_binding.clone(),
                volume_zone.clone(),
                spread.clone(),
                pod_affinity.clone(),
                dynamic_resources.clone(),
            ],
            filter: vec![
                unschedulable,
                node_name,
                taints.clone(),
                affinity.clone(),
                ports,
                fit.clone(),
                restrictions,
                volume_limits,
                volume_binding.clone(),
                volume_zone,
                spread.clone(),
                pod_affinity.clone(),
            ],
            post_filter: vec![dynamic_resources, Arc::new(DefaultPreemption::default())],
            pre_score: vec![taints.clone(), affinity.clone(), spread.clone(), pod_affinity.clone(), balanced.clone()],
            score: vec![
                WeightedScore { plugin: taints, weight: 3 },
                WeightedScore { plugin: affinity, weight: 2 },
                WeightedScore { plugin: fit, weight: 1 },
                WeightedScore { plugin: spread, weight: 2 },
                WeightedScore { plugin: pod_affinity, weight: 2 },
                WeightedScore { plugin: balanced, weight: 1 },
                WeightedScore { plugin: images, weight: 1 },
            ],
            reserve: vec![volume_binding.clone()],
            pre_bind: vec![volume_binding],
            ..Profile::empty("default-scheduler")
        }
    }
}
