//! Feature gates: the kube-scheduler v1.35 gates that change what the scheduler decides, with
//! upstream's defaults, and what each does in ksched.
//!
//! [`FEATURES`] is the registry: one [`FeatureInfo`] per gate ksched knows (upstream's name,
//! v1.35 default, stage, lock, dependencies, and [`Support`]: whether ksched models both
//! values, runs the gate's default only, or knows the gate changes nothing it decides).
//! [`FeatureGates`] is one setting of all of them (a copyable bit set, v1.35's defaults by
//! `Default`); it is handed to whatever the gates steer: the pod builder (how a pod's requests
//! are summed), the plugin registry, the queue and the scheduler.
//!
//! Setting gates follows upstream's rules: an unknown name is an error, a gate locked to its
//! default (GA) cannot be changed, and a gate whose dependencies are off cannot be on. What
//! upstream would accept but ksched cannot honour (turning on a gate whose "on" ksched does
//! not model) is refused too ([`GateError::NotModelled`]): ksched never answers as if a gate
//! were on while deciding as if it were off. Callers that must go on anyway (an upstream
//! workload file) turn that error into a warning.
//!
//! ```
//! use ksched_engine::features::{Feature, FeatureGates};
//!
//! let gates = FeatureGates::parse("PodLevelResources=false,SchedulerPopFromBackoffQ=false").unwrap();
//! assert!(!gates.enabled(Feature::PodLevelResources));
//! assert!(gates.enabled(Feature::SchedulerAsyncPreemption));
//! assert!(FeatureGates::parse("SchedulerQueueingHints=false").is_err()); // locked in v1.35
//! ```

use std::fmt;

/// A gate ksched knows (see [`FEATURES`] for each one's default and effect).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Feature {
    // Resources.
    PodLevelResources,
    InPlacePodVerticalScaling,
    InPlacePodLevelResourcesVerticalScaling,
    SidecarContainers,
    // The queue and the cycle.
    SchedulerQueueingHints,
    SchedulerPopFromBackoffQ,
    SchedulerAsyncPreemption,
    NominatedNodeNameForExpectation,
    OpportunisticBatching,
    SchedulerAsyncAPICalls,
    PodSchedulingReadiness,
    // Plugins.
    NodeDeclaredFeatures,
    GenericWorkload,
    GangScheduling,
    TaintTolerationComparisonOperators,
    NodeInclusionPolicyInPodTopologySpread,
    MatchLabelKeysInPodTopologySpread,
    MatchLabelKeysInPodTopologySpreadSelectorMerge,
    MatchLabelKeysInPodAffinity,
    // Storage.
    StorageCapacityScoring,
    VolumeAttributesClass,
    VolumeLimitScaling,
    CSIMigrationPortworx,
    // Dynamic Resource Allocation.
    DynamicResourceAllocation,
    DRAPrioritizedList,
    DRAAdminAccess,
    DRAResourceClaimDeviceStatus,
    DRASchedulerFilterTimeout,
    DRADeviceTaints,
    DRADeviceTaintRules,
    DRAPartitionableDevices,
    DRAConsumableCapacity,
    DRAExtendedResource,
    DRADeviceBindingConditions,
}

/// A gate's maturity in v1.35.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
    Ga,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Alpha => "alpha",
            Stage::Beta => "beta",
            Stage::Ga => "GA",
        })
    }
}

/// What ksched does with a gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Both values are modelled: the gate changes ksched's decisions as it changes upstream's.
    Modelled,
    /// Only the default is modelled; the other value is refused ([`GateError::NotModelled`]).
    DefaultOnly,
    /// Upstream's decisions are the same either way (it changes how the scheduler works, e.g.
    /// which goroutine makes an API call); accepted and recorded.
    NoDecisionEffect,
}

/// One gate of the registry.
#[derive(Clone, Copy, Debug)]
pub struct FeatureInfo {
    pub feature: Feature,
    /// Upstream's name (`--feature-gates` and workload files use it).
    pub name: &'static str,
    /// v1.35's default.
    pub default: bool,
    pub stage: Stage,
    /// Locked to its default (GA): upstream refuses to change it.
    pub locked: bool,
    /// Gates that must be on for this one to be on (upstream's feature dependencies).
    pub depends_on: &'static [Feature],
    pub support: Support,
    /// What the gate does in ksched (`ksched feature-gates` prints it).
    pub effect: &'static str,
}

use Feature as F;
use Stage::{Alpha, Beta, Ga};
use Support::{DefaultOnly, Modelled, NoDecisionEffect};

macro_rules! gate {
    ($f:ident, $default:expr, $stage:expr, $locked:expr, [$($dep:ident),*], $support:expr, $effect:expr) => {
        FeatureInfo {
            feature: F::$f,
            name: stringify!($f),
            default: $default,
            stage: $stage,
            locked: $locked,
            depends_on: &[$(F::$dep),*],
            support: $support,
            effect: $effect,
        }
    };
}

/// Every gate ksched knows, in [`Feature`] order (v1.35.4's defaults, stages and locks).
pub const FEATURES: &[FeatureInfo] = &[
    gate!(PodLevelResources, true, Beta, false, [], Modelled,
        "pod-level spec.resources.requests (cpu, memory, hugepages-*) replace the containers' sum in the filter, every score, preemption and a node's totals; off: ignored"),
    gate!(InPlacePodVerticalScaling, true, Ga, true, [], Modelled,
        "a pod on a node counts max(spec, status allocatedResources, status resources) per container (only the status values when PodResizePending is Infeasible); a bound pod's scale-down requeues pods NodeResourcesFit rejected"),
    gate!(InPlacePodLevelResourcesVerticalScaling, false, Alpha, false, [InPlacePodVerticalScaling, PodLevelResources, NodeDeclaredFeatures], Modelled,
        "the in-place resize rule applied to pod-level requests too (status.resources, status.allocatedResources)"),
    gate!(SidecarContainers, true, Ga, true, [], Modelled,
        "restartable init containers (restartPolicy: Always) add to the containers' sum and to the later init containers' needs"),
    gate!(SchedulerQueueingHints, true, Ga, true, [], Modelled,
        "a parked pod moves only on events its rejecting plugins' queueing hints say may help"),
    gate!(SchedulerPopFromBackoffQ, true, Beta, false, [], Modelled,
        "an empty activeQ pops from backoffQ (backoffQ ordered in 1 s windows, then like activeQ); PreEnqueue runs when a pod enters backoffQ; off: backoffQ only feeds activeQ when backoffs expire"),
    gate!(SchedulerAsyncPreemption, true, Beta, false, [], Modelled,
        "preemption's victims are deleted in a step of their own after the cycle (on the simulation's clock); the preemptor is nominated at once and held in DefaultPreemption's PreEnqueue until that step; off: deleted within the cycle"),
    gate!(NominatedNodeNameForExpectation, true, Beta, false, [], Modelled,
        "a pod whose PreBind has work (volumes to bind, resource claims) gets its node as status.nominatedNodeName before PreBind, cleared if the binding fails; no decision changes (the queue ignores an assumed pod's updates); off: not written"),
    gate!(OpportunisticBatching, true, Beta, false, [], Modelled,
        "a pod of the same signature as the pod just bound, which no longer fits that pod's node, tries the next node of that pod's ranking first and takes it unscored when its filters pass (no filter pass over the other nodes); a ranking serves for 500 ms on the simulation's clock; the default profile signs no pod (PodTopologySpread's system default constraints), so only profiles without them batch; off: every pod gets a full cycle"),
    gate!(SchedulerAsyncAPICalls, false, Beta, false, [], NoDecisionEffect,
        "API calls (binding, status patches) through a dispatcher: how upstream calls the API server, not what it decides"),
    gate!(PodSchedulingReadiness, true, Ga, true, [], Modelled,
        "spec.schedulingGates hold a pod out of the queue (SchedulingGates PreEnqueue) until the last gate is removed"),
    gate!(NodeDeclaredFeatures, false, Alpha, false, [], DefaultOnly,
        "the NodeDeclaredFeatures plugin (nodes declare features pods need) is not modelled; pods asking for node features are warned about"),
    gate!(GenericWorkload, false, Alpha, false, [], DefaultOnly,
        "Workload objects and pods' spec.workloadRef are not modelled; pods naming a workload are warned about"),
    gate!(GangScheduling, false, Alpha, false, [GenericWorkload], DefaultOnly,
        "the GangScheduling plugin (pod groups scheduled together) is not modelled"),
    gate!(TaintTolerationComparisonOperators, false, Alpha, false, [], DefaultOnly,
        "toleration operators Lt/Gt are not modelled; such tolerations are errors"),
    gate!(NodeInclusionPolicyInPodTopologySpread, true, Ga, true, [], Modelled,
        "topology spread constraints' nodeAffinityPolicy and nodeTaintsPolicy"),
    gate!(MatchLabelKeysInPodTopologySpread, true, Beta, false, [], DefaultOnly,
        "topology spread constraints' matchLabelKeys narrow the selector by the pod's own labels"),
    gate!(MatchLabelKeysInPodTopologySpreadSelectorMerge, true, Beta, false, [MatchLabelKeysInPodTopologySpread], DefaultOnly,
        "matchLabelKeys are merged into the spread selector at admission (the scheduler merges them again, same meaning)"),
    gate!(MatchLabelKeysInPodAffinity, true, Ga, true, [], Modelled,
        "pod (anti-)affinity matchLabelKeys / mismatchLabelKeys become selector requirements at admission"),
    gate!(StorageCapacityScoring, false, Alpha, false, [], DefaultOnly,
        "VolumeBinding's Score (by storage capacity) is not modelled; it scores nothing, as upstream with the gate off"),
    gate!(VolumeAttributesClass, true, Ga, false, [], DefaultOnly,
        "claims' volumeAttributesClassName take part in volume matching"),
    gate!(VolumeLimitScaling, false, Alpha, false, [], DefaultOnly,
        "NodeVolumeLimits' limit scaling is not modelled"),
    gate!(CSIMigrationPortworx, true, Ga, true, [], Modelled,
        "in-tree Portworx volumes count as their CSI driver's"),
    gate!(DynamicResourceAllocation, true, Ga, true, [], Modelled,
        "the DynamicResources plugin is in the default profile (score weight 2, its PostFilter before DefaultPreemption's)"),
    gate!(DRAPrioritizedList, true, Beta, false, [DynamicResourceAllocation], Modelled,
        "device requests' firstAvailable (subrequests tried in order); off: a claim with subrequests is unschedulable (DynamicResources says the feature is disabled)"),
    gate!(DRAAdminAccess, true, Beta, false, [DynamicResourceAllocation], Modelled,
        "device requests' adminAccess (devices allocated without being counted as in use); off: such a claim cannot be allocated"),
    gate!(DRAResourceClaimDeviceStatus, true, Beta, false, [], DefaultOnly,
        "claims' status.devices (written by drivers): DynamicResources reads them only for device binding conditions (DRADeviceBindingConditions, off), so no decision here depends on them"),
    gate!(DRASchedulerFilterTimeout, true, Beta, false, [DynamicResourceAllocation], DefaultOnly,
        "DynamicResources' Filter stops a node's device search after DynamicResourcesArgs' filterTimeout (10 s); ksched's allocator is never timed out (the argument is accepted, not applied): a search upstream cuts short completes here"),
    gate!(DRADeviceTaints, false, Alpha, false, [DynamicResourceAllocation], DefaultOnly,
        "device taints (ResourceSlices' devices[].taints) and claims' device tolerations: ignored, as upstream ignores them with the gate off; objects that set them are warned about"),
    gate!(DRADeviceTaintRules, false, Alpha, false, [DRADeviceTaints], DefaultOnly,
        "DeviceTaintRule objects: a kind ksched does not read (skipped with a note, an error under --strict), as upstream's scheduler ignores them with the gate off"),
    gate!(DRAPartitionableDevices, false, Alpha, false, [DynamicResourceAllocation], DefaultOnly,
        "ResourceSlices' shared counters: ignored, and devices consuming counters (or chosen per device) not allocatable, as upstream with the gate off; objects that set them are warned about"),
    gate!(DRAConsumableCapacity, false, Alpha, false, [DynamicResourceAllocation], DefaultOnly,
        "devices allocated whole and once: capacity requests, request policies and distinct attributes ignored, as upstream with the gate off; objects that set them are warned about"),
    gate!(DRAExtendedResource, false, Alpha, false, [DynamicResourceAllocation], DefaultOnly,
        "extended resources backed by DeviceClasses (a class's extendedResourceName, pods' status.extendedResourceClaimStatus): ignored, as upstream with the gate off; objects that set them are warned about, and a workload file turning the gate on is skipped"),
    gate!(DRADeviceBindingConditions, false, Alpha, false, [DynamicResourceAllocation, DRAResourceClaimDeviceStatus], DefaultOnly,
        "devices with binding conditions are not allocatable, as upstream with the gate off; objects that set them are warned about"),
];

impl Feature {
    /// This gate's registry entry.
    pub fn info(self) -> &'static FeatureInfo {
        &FEATURES[self as usize]
    }

    /// Upstream's name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The gate named `name` (upstream's spelling, case-sensitive as upstream's flag).
    pub fn from_name(name: &str) -> Option<Feature> {
        FEATURES.iter().find(|f| f.name == name).map(|f| f.feature)
    }

    fn bit(self) -> u64 {
        1 << self as u8
    }

    /// A gate this one depends on that ksched can never turn on (off by default and only its
    /// default modelled), if there is one: turning this gate on is then refused whatever its
    /// own support says, so only its default runs.
    pub fn blocked_by(self) -> Option<Feature> {
        let info = self.info();
        if info.default {
            return None;
        }
        info.depends_on.iter().copied().find(|d| {
            let dep = d.info();
            !dep.default && (dep.support == Support::DefaultOnly || dep.locked || d.blocked_by().is_some())
        })
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A gate setting that upstream or ksched refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    #[error("unrecognized feature gate: {0}")]
    Unknown(String),
    #[error("invalid value of {name}={value}: must be true or false")]
    BadValue { name: String, value: String },
    #[error("missing bool value for {0}")]
    MissingValue(String),
    #[error("cannot set feature gate {feature} to {want}, feature is locked to {locked}")]
    Locked { feature: Feature, want: bool, locked: bool },
    #[error("{feature}=true requires {needs}=true")]
    Dependency { feature: Feature, needs: Feature },
    #[error("{feature}={want} is not modelled by ksched (only {default}): {effect}", default = !want, effect = feature.info().effect)]
    NotModelled { feature: Feature, want: bool },
}

/// One setting of every gate (a bit per [`Feature`]); `Default` is v1.35's defaults.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FeatureGates {
    on: u64,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates::v1_35()
    }
}

impl fmt::Debug for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let changed: Vec<String> = self.overrides().map(|(g, on)| format!("{g}={on}")).collect();
        write!(f, "FeatureGates(v1.35 defaults{}{})", if changed.is_empty() { "" } else { " with " }, changed.join(","))
    }
}

impl FeatureGates {
    /// kube-scheduler v1.35's defaults.
    pub const fn v1_35() -> FeatureGates {
        let mut on = 0u64;
        let mut i = 0;
        while i < FEATURES.len() {
            if FEATURES[i].default {
                on |= 1 << FEATURES[i].feature as u8;
            }
            i += 1;
        }
        FeatureGates { on }
    }

    #[inline]
    pub fn enabled(&self, f: Feature) -> bool {
        self.on & f.bit() != 0
    }

    /// Sets one gate by upstream's rules: a locked gate keeps its value, and a gate whose
    /// other value ksched does not model is refused. Dependencies are checked by `validate`
    /// once every gate is set (upstream checks them after the whole flag).
    pub fn set(&mut self, f: Feature, on: bool) -> Result<(), GateError> {
        let info = f.info();
        if info.locked && on != info.default {
            return Err(GateError::Locked { feature: f, want: on, locked: info.default });
        }
        if info.support == Support::DefaultOnly && on != info.default {
            return Err(GateError::NotModelled { feature: f, want: on });
        }
        self.set_unchecked(f, on);
        Ok(())
    }

    /// Sets a gate without the lock and modelling checks (tests, and callers that have
    /// already warned).
    pub fn set_unchecked(&mut self, f: Feature, on: bool) {
        if on {
            self.on |= f.bit();
        } else {
            self.on &= !f.bit();
        }
    }

    /// `set` by name.
    pub fn set_named(&mut self, name: &str, on: bool) -> Result<(), GateError> {
        let f = Feature::from_name(name).ok_or_else(|| GateError::Unknown(name.to_owned()))?;
        self.set(f, on)
    }

    /// Upstream's dependency check: every gate that is on has the gates it depends on on.
    pub fn validate(&self) -> Result<(), GateError> {
        for info in FEATURES {
            if !self.enabled(info.feature) {
                continue;
            }
            if let Some(&needs) = info.depends_on.iter().find(|d| !self.enabled(**d)) {
                return Err(GateError::Dependency { feature: info.feature, needs });
            }
        }
        Ok(())
    }

    /// v1.35's defaults with `--feature-gates`' value applied: `Name=bool` pairs separated by
    /// commas (spaces around them ignored, an empty value sets nothing), as upstream parses
    /// the flag; then `validate`.
    pub fn parse(flag: &str) -> Result<FeatureGates, GateError> {
        let mut g = FeatureGates::default();
        g.apply_flag(flag)?;
        Ok(g)
    }

    /// Applies a `--feature-gates` value over these gates (see `parse`).
    pub fn apply_flag(&mut self, flag: &str) -> Result<(), GateError> {
        for pair in flag.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = match pair.split_once('=') {
                Some((n, v)) => (n.trim(), v.trim()),
                None => return Err(GateError::MissingValue(pair.to_owned())),
            };
            let on = parse_bool(value)
                .ok_or_else(|| GateError::BadValue { name: name.to_owned(), value: value.to_owned() })?;
            self.set_named(name, on)?;
        }
        self.validate()
    }

    /// The gates that differ from v1.35's defaults, in registry order.
    pub fn overrides(&self) -> impl Iterator<Item = (Feature, bool)> + '_ {
        FEATURES.iter().filter(|i| self.enabled(i.feature) != i.default).map(|i| (i.feature, self.enabled(i.feature)))
    }

    /// The `--feature-gates` value that gives these gates (empty for the defaults): what a
    /// parent passes its child processes.
    pub fn to_flag(&self) -> String {
        self.overrides().map(|(f, on)| format!("{f}={on}")).collect::<Vec<_>>().join(",")
    }
}

/// Upstream's flag accepts Go's `strconv.ParseBool` spellings.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// The registry as a table (`ksched feature-gates`): name, v1.35 default, stage, locked, what
/// ksched does with it, and its effect.
pub fn describe(gates: &FeatureGates) -> String {
    let mut out = String::new();
    let width = FEATURES.iter().map(|f| f.name.len()).max().unwrap_or(0);
    for info in FEATURES {
        let now = gates.enabled(info.feature);
        let support = match (info.support, info.feature.blocked_by()) {
            (Support::DefaultOnly, _) => "default only".to_owned(),
            (_, Some(d)) => format!("default only: needs {d}=true, which ksched does not model"),
            (Support::Modelled, None) => "modelled".to_owned(),
            (Support::NoDecisionEffect, None) => "no decision effect".to_owned(),
        };
        let lock = if info.locked { ", locked" } else { "" };
        let set = if now != info.default { format!(" (set to {now})") } else { String::new() };
        out.push_str(&format!(
            "{:width$}  {:5}{set}  {}{lock}  [{support}]\n    {}\n",
            info.name, info.default, info.stage, info.effect
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_in_feature_order_with_unique_names() {
        for (i, info) in FEATURES.iter().enumerate() {
            assert_eq!(info.feature as usize, i, "{} out of order", info.name);
            assert_eq!(format!("{:?}", info.feature), info.name);
            assert_eq!(Feature::from_name(info.name), Some(info.feature));
            assert!(!info.locked || info.stage == Stage::Ga, "{}: only GA gates lock", info.name);
        }
        assert!(FEATURES.len() <= 64, "the gates fit the bit set");
        FeatureGates::default().validate().expect("v1.35's defaults satisfy the dependencies");
    }

    #[test]
    fn defaults_are_v1_35s() {
        let g = FeatureGates::default();
        for (f, on) in [
            (Feature::PodLevelResources, true),
            (Feature::InPlacePodVerticalScaling, true),
            (Feature::InPlacePodLevelResourcesVerticalScaling, false),
            (Feature::SidecarContainers, true),
            (Feature::SchedulerPopFromBackoffQ, true),
            (Feature::SchedulerAsyncPreemption, true),
            (Feature::NominatedNodeNameForExpectation, true),
            (Feature::OpportunisticBatching, true),
            (Feature::SchedulerAsyncAPICalls, false),
            (Feature::DynamicResourceAllocation, true),
            (Feature::DRAPrioritizedList, true),
            (Feature::DRAExtendedResource, false),
            (Feature::NodeDeclaredFeatures, false),
        ] {
            assert_eq!(g.enabled(f), on, "{f}");
        }
        assert_eq!(g.to_flag(), "");
    }

    #[test]
    fn parse_flag_table() {
        // (flag, Ok(overrides as a flag) or Err(message part))
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("", Ok("")),
            ("PodLevelResources=false", Ok("PodLevelResources=false")),
            (
                " PodLevelResources = false , SchedulerPopFromBackoffQ=0 ",
                Ok("PodLevelResources=false,SchedulerPopFromBackoffQ=false"),
            ),
            ("PodLevelResources=true", Ok("")),
            ("SchedulerAsyncAPICalls=true", Ok("SchedulerAsyncAPICalls=true")),
            ("NoSuchGate=true", Err("unrecognized feature gate: NoSuchGate")),
            ("PodLevelResources", Err("missing bool value for PodLevelResources")),
            ("PodLevelResources=maybe", Err("invalid value of PodLevelResources=maybe")),
            (
                "SchedulerQueueingHints=false",
                Err("cannot set feature gate SchedulerQueueingHints to false, feature is locked to true"),
            ),
            ("NodeDeclaredFeatures=true", Err("NodeDeclaredFeatures=true is not modelled by ksched")),
            ("InPlacePodLevelResourcesVerticalScaling=true", Err("requires NodeDeclaredFeatures=true")),
        ];
        for (flag, want) in cases {
            match (FeatureGates::parse(flag), want) {
                (Ok(g), Ok(w)) => assert_eq!(g.to_flag(), *w, "{flag:?}"),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{flag:?}: {e} does not say {w:?}"),
                (got, want) => panic!("{flag:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// A gate whose dependency ksched cannot turn on runs its default only, and the list says
    /// so; the other gates' dependencies can all be on.
    #[test]
    fn blocked_gates_are_listed_as_default_only() {
        let blocked: Vec<(Feature, Feature)> =
            FEATURES.iter().filter_map(|f| f.feature.blocked_by().map(|d| (f.feature, d))).collect();
        assert_eq!(
            blocked,
            [
                (Feature::InPlacePodLevelResourcesVerticalScaling, Feature::NodeDeclaredFeatures),
                // Default only themselves, and their dependencies too.
                (Feature::GangScheduling, Feature::GenericWorkload),
                (Feature::DRADeviceTaintRules, Feature::DRADeviceTaints),
            ]
        );
        for (f, _) in &blocked {
            let mut g = FeatureGates::default();
            assert!(g.set(*f, true).is_err() || g.validate().is_err(), "{f}: refused");
        }
        let mut g = FeatureGates::default();
        g.set(Feature::InPlacePodLevelResourcesVerticalScaling, true).unwrap();
        assert!(g.validate().is_err(), "its own value is modelled; its dependency refuses it");
        let text = describe(&FeatureGates::default());
        assert!(text.contains(
            "InPlacePodLevelResourcesVerticalScaling         false  alpha  [default only: needs NodeDeclaredFeatures=true, \
             which ksched does not model]"
        ), "{text}");
        assert!(!text.contains("wired by"), "no placeholder effects: {text}");
        // Every gate says what it does here.
        assert!(FEATURES.iter().all(|f| f.effect.len() > 20), "{text}");
    }

    #[test]
    fn to_flag_round_trips() {
        let mut g = FeatureGates::default();
        g.set(Feature::SchedulerAsyncPreemption, false).unwrap();
        g.set(Feature::NominatedNodeNameForExpectation, false).unwrap();
        assert_eq!(FeatureGates::parse(&g.to_flag()).unwrap(), g);
        assert!(describe(&g).contains("SchedulerAsyncPreemption"));
    }
}
