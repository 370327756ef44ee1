//! Scheduling policy objects preemption reads: PriorityClass (a pod's priority and
//! preemption policy, resolved at admission) and PodDisruptionBudget (how many matching pods
//! may be disrupted; preemption prefers victims that do not break a budget).
//!
//! The budget's status is what the disruption controller would write
//! (`PodDisruptionBudget::compute_disruptions_allowed`); the cluster objects refresh it from
//! the pods they hold (`ClusterObjects::refresh_pdb_status`).

use std::sync::Arc;

use thiserror::Error;

use super::{LabelSelector, Pod, PreemptionPolicy, Sym};

/// Name of the built-in class for pods that must never leave their node.
pub const SYSTEM_NODE_CRITICAL: &str = "system-node-critical";
/// Name of the built-in class for pods critical to the cluster.
pub const SYSTEM_CLUSTER_CRITICAL: &str = "system-cluster-critical";
/// Value of `system-node-critical`.
pub const SYSTEM_NODE_CRITICAL_PRIORITY: i32 = 2_000_001_000;
/// Value of `system-cluster-critical`.
pub const SYSTEM_CLUSTER_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// An object the API server would refuse (admission or validation). The message carries the
/// API server's wording.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{object}: {field}: {message}")]
pub struct AdmissionError {
    /// `pod default/web-1`, `poddisruptionbudget prod/web`.
    pub object: String,
    /// The field path inside the object: `spec.priorityClassName`.
    pub field: String,
    pub message: String,
}

impl AdmissionError {
    pub fn new(object: impl Into<String>, field: impl Into<String>, message: impl Into<String>) -> AdmissionError {
        AdmissionError { object: object.into(), field: field.into(), message: message.into() }
    }
}

/// `scheduling.k8s.io/v1` PriorityClass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriorityClass {
    pub name: Sym,
    pub value: i32,
    /// Pods that name no class get this one's value (when several are marked, the
    /// lowest-valued one, as the priority admission plugin picks).
    pub global_default: bool,
    pub preemption_policy: PreemptionPolicy,
}

impl PriorityClass {
    /// The two classes every cluster has (the API server creates them at start-up), by name.
    pub fn system(name: Sym) -> Option<PriorityClass> {
        let value = match name.as_str() {
            SYSTEM_NODE_CRITICAL => SYSTEM_NODE_CRITICAL_PRIORITY,
            SYSTEM_CLUSTER_CRITICAL => SYSTEM_CLUSTER_CRITICAL_PRIORITY,
            _ => return None,
        };
        Some(PriorityClass {
            name,
            value,
            global_default: false,
            preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        })
    }
}

/// An absolute count or a percentage (`minAvailable: 2`, `maxUnavailable: "10%"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(i32),
    Percent(i32),
}

/// The API server's message for a string that is not `digits%`.
const PERCENT_FMT: &str =
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%', or '93%')";

impl IntOrPercent {
    /// Reads the string form of an int-or-string field: `"NN%"` (digits only, as the API
    /// server's validation requires). Errors carry the API server's wording.
    pub fn parse_percent(s: &str) -> Result<IntOrPercent, String> {
        let digits = s.strip_suffix('%').ok_or_else(|| PERCENT_FMT.to_owned())?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(PERCENT_FMT.to_owned());
        }
        digits.parse::<i32>().map(IntOrPercent::Percent).map_err(|_| "must not be greater than 100%".to_owned())
    }

    /// The value against `total`: an int as is, a percentage of `total` rounded up (upstream's
    /// scaled int-or-percent with rounding up, which the disruption controller uses for both
    /// fields).
    pub fn scaled_value(self, total: i32) -> i32 {
        match self {
            IntOrPercent::Int(v) => v,
            IntOrPercent::Percent(p) => {
                let n = i64::from(p) * i64::from(total);
                let ceil = n.div_euclid(100) + i64::from(n.rem_euclid(100) != 0);
                ceil.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
            }
        }
    }

    /// Validation of a `minAvailable` / `maxUnavailable` value: a count >= 0 or 0..=100%.
    fn check(self) -> Result<(), &'static str> {
        match self {
            IntOrPercent::Int(v) if v < 0 => Err("must be greater than or equal to 0"),
            IntOrPercent::Percent(p) if p < 0 => Err(PERCENT_FMT),
            IntOrPercent::Percent(p) if p > 100 => Err("must not be greater than 100%"),
            _ => Ok(()),
        }
    }
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

impl PodDisruptionBudget {
    /// A budget over the pods `selector` matches in `namespace`, with neither
    /// `minAvailable` nor `maxUnavailable` and an empty status (set the rest with struct
    /// update syntax).
    pub fn new(namespace: &str, name: &str, selector: LabelSelector) -> PodDisruptionBudget {
        PodDisruptionBudget {
            namespace: Sym::new(namespace),
            name: Sym::new(name),
            selector: Some(selector),
            min_available: None,
            max_unavailable: None,
            disruptions_allowed: 0,
            disrupted_pods: Vec::new(),
        }
    }

    /// `poddisruptionbudget namespace/name`, for messages.
    pub fn object(&self) -> String {
        format!("poddisruptionbudget {}/{}", self.namespace, self.name)
    }

    /// Whether the budget covers `pod`, as preemption decides it: same namespace, a selector
    /// that is present and not empty, and matching the pod's labels. A pod without labels is
    /// covered by no budget.
    ///
    /// Upstream's disruption controller reads an empty `policy/v1` selector as "every pod of
    /// the namespace"; the scheduler reads it as "no pod". Only the scheduler's reading
    /// matters here (a budget the scheduler never matches has no effect on preemption), so
    /// both the status refresh and preemption use this one.
    pub fn selects(&self, pod: &Pod) -> bool {
        pod.namespace == self.namespace
            && !pod.labels.is_empty()
            && self.selector.as_ref().is_some_and(|s| !s.is_empty() && s.matches(&pod.labels))
    }

    /// Whether `pod_name` is in `status.disruptedPods` (already evicted through this budget).
    pub fn is_disrupted(&self, pod_name: &str) -> bool {
        self.disrupted_pods.iter().any(|n| &**n == pod_name)
    }

    /// How many covered pods must stay healthy, given `expected` covered pods (the
    /// disruption controller's desired-healthy count): `maxUnavailable` is subtracted from
    /// `expected` (never below 0), an integer `minAvailable` is taken as is, a percentage of
    /// either is of `expected`, rounded up. Neither field set: 0.
    ///
    /// Upstream takes `expected` from the scale of the pods' controllers for
    /// `maxUnavailable` and percentage `minAvailable`. We have no scale subresource: callers
    /// pass the number of pods the budget selects.
    pub fn desired_healthy(&self, expected: i32) -> i32 {
        match (self.max_unavailable, self.min_available) {
            (Some(max), _) => expected.saturating_sub(max.scaled_value(expected)).max(0),
            (None, Some(IntOrPercent::Int(v))) => v,
            (None, Some(min)) => min.scaled_value(expected),
            (None, None) => 0,
        }
    }

    /// `status.disruptionsAllowed` as the disruption controller computes it: healthy minus
    /// desired healthy, and 0 when that is not positive or when no pod is expected (a budget
    /// whose pods have not appeared yet stays safe).
    pub fn compute_disruptions_allowed(&self, healthy: i32, expected: i32) -> i32 {
        let allowed = healthy.saturating_sub(self.desired_healthy(expected));
        if expected <= 0 || allowed <= 0 {
            0
        } else {
            allowed
        }
    }

    /// The API server's validation of the spec (and the status count): not both
    /// `minAvailable` and `maxUnavailable`; counts >= 0; percentages 0..=100.
    pub fn validate(&self) -> Result<(), AdmissionError> {
        let err = |field: &str, message: &str| AdmissionError::new(self.object(), field, message);
        if self.min_available.is_some() && self.max_unavailable.is_some() {
            return Err(err("spec", "minAvailable and maxUnavailable cannot be both set"));
        }
        for (field, value) in [("spec.minAvailable", self.min_available), ("spec.maxUnavailable", self.max_unavailable)]
        {
            if let Some(v) = value {
                v.check().map_err(|m| err(field, m))?;
            }
        }
        if self.disruptions_allowed < 0 {
            return Err(err("status.disruptionsAllowed", "must be greater than or equal to 0"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Labels, SelectorOp, SelectorRequirement};
    use IntOrPercent::{Int, Percent};

    fn pdb(min: Option<IntOrPercent>, max: Option<IntOrPercent>) -> PodDisruptionBudget {
        let web = LabelSelector { match_labels: Labels::from_pairs([("app", "web")]), ..Default::default() };
        PodDisruptionBudget { min_available: min, max_unavailable: max, ..PodDisruptionBudget::new("prod", "web", web) }
    }

    #[test]
    fn pdb_selects_table() {
        let exists = |key: &str, op| LabelSelector {
            match_expressions: vec![SelectorRequirement { key: Sym::new(key), operator: op, values: vec![] }],
            ..Default::default()
        };
        let web = Pod::builder("p").namespace("prod").label("app", "web").build();
        let db = Pod::builder("q").namespace("prod").label("app", "db").build();
        let other_ns = Pod::builder("r").namespace("dev").label("app", "web").build();
        let bare = Pod::builder("s").namespace("prod").build();
        let cases: Vec<(&str, Option<LabelSelector>, &Pod, bool)> = vec![
            ("matching labels", pdb(None, None).selector, &web, true),
            ("other labels", pdb(None, None).selector, &db, false),
            ("other namespace", pdb(None, None).selector, &other_ns, false),
            ("no selector", None, &web, false),
            ("empty selector", Some(LabelSelector::default()), &web, false),
            ("expression selector", Some(exists("app", SelectorOp::Exists)), &db, true),
            ("pod without labels matches nothing", Some(exists("app", SelectorOp::DoesNotExist)), &bare, false),
        ];
        for (name, selector, pod, want) in cases {
            let b = PodDisruptionBudget { selector, ..pdb(None, None) };
            assert_eq!(b.selects(pod), want, "{name}");
        }
    }

    #[test]
    fn scaled_value_rounds_percentages_up() {
        let cases = [
            ("int ignores total", Int(3), 10, 3),
            ("exact percentage", Percent(50), 10, 5),
            ("fraction rounds up", Percent(50), 5, 3),
            ("small fraction rounds up", Percent(1), 3, 1),
            ("zero percent", Percent(0), 7, 0),
            ("zero total", Percent(30), 0, 0),
            ("hundred percent", Percent(100), 7, 7),
            ("33% of 10", Percent(33), 10, 4),
        ];
        for (name, v, total, want) in cases {
            assert_eq!(v.scaled_value(total), want, "{name}");
        }
    }

    #[test]
    fn desired_healthy_and_disruptions_allowed_table() {
        // (name, minAvailable, maxUnavailable, healthy, expected, want desired, want allowed)
        let cases = [
            ("minAvailable int", Some(Int(2)), None, 3, 3, 2, 1),
            ("minAvailable int above healthy", Some(Int(4)), None, 3, 3, 4, 0),
            ("minAvailable percent rounds up", Some(Percent(50)), None, 5, 5, 3, 2),
            ("minAvailable 100%", Some(Percent(100)), None, 4, 4, 4, 0),
            ("maxUnavailable int", None, Some(Int(1)), 4, 4, 3, 1),
            ("maxUnavailable int with an unhealthy pod", None, Some(Int(1)), 3, 4, 3, 0),
            ("maxUnavailable percent rounds up", None, Some(Percent(30)), 5, 5, 3, 2),
            ("maxUnavailable above expected clamps to 0", None, Some(Int(9)), 2, 2, 0, 2),
            ("neither field", None, None, 2, 2, 0, 2),
            ("no expected pods allows nothing", None, Some(Int(1)), 0, 0, 0, 0),
            ("minAvailable 0 with no pods", Some(Int(0)), None, 0, 0, 0, 0),
        ];
        for (name, min, max, healthy, expected, desired, allowed) in cases {
            let b = pdb(min, max);
            assert_eq!(b.desired_healthy(expected), desired, "{name}: desired");
            assert_eq!(b.compute_disruptions_allowed(healthy, expected), allowed, "{name}: allowed");
        }
    }

    #[test]
    fn pdb_validate_table() {
        let status = |n| PodDisruptionBudget { disruptions_allowed: n, ..pdb(None, None) };
        let cases = [
            ("minAvailable int", pdb(Some(Int(1)), None), None),
            ("maxUnavailable percent", pdb(None, Some(Percent(100))), None),
            ("neither", pdb(None, None), None),
            ("both set", pdb(Some(Int(1)), Some(Int(1))), Some("spec")),
            ("negative minAvailable", pdb(Some(Int(-1)), None), Some("spec.minAvailable")),
            ("minAvailable over 100%", pdb(Some(Percent(101)), None), Some("spec.minAvailable")),
            ("negative maxUnavailable percent", pdb(None, Some(Percent(-5))), Some("spec.maxUnavailable")),
            ("negative maxUnavailable", pdb(None, Some(Int(-2))), Some("spec.maxUnavailable")),
            ("negative status count", status(-1), Some("status.disruptionsAllowed")),
        ];
        for (name, b, want) in cases {
            match (b.validate(), want) {
                (Ok(()), None) => {}
                (Err(e), Some(field)) => {
                    assert_eq!(e.object, "poddisruptionbudget prod/web", "{name}");
                    assert_eq!(e.field, field, "{name}");
                    assert!(e.to_string().starts_with(&format!("poddisruptionbudget prod/web: {field}: ")), "{name}");
                }
                (got, want) => panic!("{name}: got {got:?}, want error on {want:?}"),
            }
        }
    }

    #[test]
    fn parse_percent_table() {
        let cases = [
            ("percent", "25%", Ok(Percent(25))),
            ("zero", "0%", Ok(Percent(0))),
            ("over 100 parses, validation rejects", "150%", Ok(Percent(150))),
            ("no sign", "25", Err(PERCENT_FMT)),
            ("negative", "-5%", Err(PERCENT_FMT)),
            ("fraction", "2.5%", Err(PERCENT_FMT)),
            ("empty", "%", Err(PERCENT_FMT)),
            ("overflow", "99999999999%", Err("must not be greater than 100%")),
        ];
        for (name, s, want) in cases {
            assert_eq!(IntOrPercent::parse_percent(s), want.map_err(str::to_owned), "{name}");
        }
    }

    #[test]
    fn system_classes_resolve_by_name() {
        let node = PriorityClass::system(Sym::new(SYSTEM_NODE_CRITICAL)).expect("built in");
        assert_eq!(node.value, 2_000_001_000);
        let cluster = PriorityClass::system(Sym::new(SYSTEM_CLUSTER_CRITICAL)).expect("built in");
        assert_eq!((cluster.value, cluster.preemption_policy), (2_000_000_000, PreemptionPolicy::PreemptLowerPriority));
        assert!(PriorityClass::system(Sym::new("high")).is_none());
    }
}
