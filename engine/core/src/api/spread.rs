//! Pod topology spread constraints (`spec.topologySpreadConstraints`).

use super::intern::Sym;
use super::labels::LabelSelector;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WhenUnsatisfiable {
    /// A filter: nodes that would break `max_skew` are rejected.
    #[default]
    DoNotSchedule,
    /// A score: nodes that break it less score higher.
    ScheduleAnyway,
}

/// Whether node affinity / taints decide which nodes count when computing skew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InclusionPolicy {
    Honor,
    Ignore,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologySpreadConstraint {
    pub max_skew: i32,
    pub topology_key: Sym,
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// `None` matches no pods.
    pub label_selector: Option<LabelSelector>,
    /// `None` means 1 (the API's default); only meaningful with DoNotSchedule.
    pub min_domains: Option<i32>,
    /// Default Honor.
    pub node_affinity_policy: InclusionPolicy,
    /// Default Ignore.
    pub node_taints_policy: InclusionPolicy,
    pub match_label_keys: Vec<Sym>,
}

impl TopologySpreadConstraint {
    /// A DoNotSchedule constraint with the API's defaults.
    pub fn new(max_skew: i32, topology_key: &str, selector: LabelSelector) -> TopologySpreadConstraint {
        TopologySpreadConstraint {
            max_skew,
            topology_key: Sym::new(topology_key),
            when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
            label_selector: Some(selector),
            min_domains: None,
            node_affinity_policy: InclusionPolicy::Honor,
            node_taints_policy: InclusionPolicy::Ignore,
            match_label_keys: Vec::new(),
        }
    }

    pub fn schedule_anyway(mut self) -> Self {
        self.when_unsatisfiable = WhenUnsatisfiable::ScheduleAnyway;
        self
    }
}
