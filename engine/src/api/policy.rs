//! Scheduling policy objects preemption reads: PriorityClass (a pod's priority and
//! preemption policy, resolved at admission) and PodDisruptionBudget (how many matching pods
//! may be disrupted; preemption prefers victims that do not break a budget).

use std::sync::Arc;

use super::{LabelSelector, PreemptionPolicy, Sym};

/// `scheduling.k8s.io/v1` PriorityClass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriorityClass {
    pub name: Sym,
    pub value: i32,
    /// Pods that name no class get this one's value (when several are marked, the
    /// highest-valued one).
    pub global_default: bool,
    pub preemption_policy: PreemptionPolicy,
}

/// An absolute count or a percentage (`minAvailable: 2`, `maxUnavailable: "10%"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(i32),
    Percent(i32),
}

/// `policy/v1` PodDisruptionBudget: spec and the status the disruption controller keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodDisruptionBudget {
    pub namespace: Sym,
    pub name: Sym,
    /// `spec.selector`; none (or an empty one) selects no pod.
    pub selector: Option<LabelSelector>,
    pub min_available: Option<IntOrPercent>,
    pub max_unavailable: Option<IntOrPercent>,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
    /// `status.disruptedPods`: names of pods already evicted through this budget that the
    /// controller has not yet seen go; preemption does not count them again.
    pub disrupted_pods: Vec<Arc<str>>,
}
