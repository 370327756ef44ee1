//! OpportunisticBatching (KEP-5598, beta, on in v1.35) is not modelled: every pod gets a full
//! cycle (see `scheduler.rs`' module docs). This finds the profiles where that can differ from
//! upstream, for the configuration's warnings.
//!
//! Upstream reuses a ranking only for a pod with a signature: the profile has no extender,
//! every plugin of its PreFilter, Filter, PreScore and Score points signs pods (v1.35's in-tree
//! plugins all do), and PodTopologySpread, when the profile runs it, has no default
//! constraints (it refuses to sign any pod while it has some: the system defaults always have
//! them). Pods with spread constraints, inter-pod affinity or resource claims are never
//! signed; other consecutive pods of one signature are batched.

use serde_json::Value;

use super::registry::{decode_args, ExtensionPoint};
use crate::features::{Feature, FeatureGates};
use crate::framework::plugins::pod_topology_spread::{DefaultingType, PodTopologySpreadArgs};

/// v1.35's plugins that sign pods (upstream's `SignPlugin`).
const SIGNING_PLUGINS: &[&str] = &[
    "DynamicResources",
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeDeclaredFeatures",
    "NodeName",
    "NodePorts",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "NodeVolumeLimits",
    "PodTopologySpread",
    "TaintToleration",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
];

/// The points whose plugins must all sign for upstream to sign a pod.
const SIGNED_POINTS: [ExtensionPoint; 4] =
    [ExtensionPoint::PreFilter, ExtensionPoint::Filter, ExtensionPoint::PreScore, ExtensionPoint::Score];

/// The warning for a profile (`ppath`, `name`) in which upstream would batch pods under
/// `gates`, or `None`: `plugins_at` gives a point's plugin names, `spread_args` the
/// PodTopologySpread `pluginConfig` args, `extenders` whether the configuration has any.
pub(crate) fn batching_warning<'a>(
    ppath: &str,
    name: &str,
    gates: &FeatureGates,
    extenders: bool,
    plugins_at: impl Fn(ExtensionPoint) -> &'a [&'a str],
    spread_args: Option<&Value>,
) -> Option<String> {
    if !gates.enabled(Feature::OpportunisticBatching) || extenders {
        return None;
    }
    let plugins: Vec<&str> = SIGNED_POINTS.iter().flat_map(|&p| plugins_at(p).iter().copied()).collect();
    if plugins.iter().any(|p| !SIGNING_PLUGINS.contains(p)) {
        return None;
    }
    let why = if plugins.contains(&"PodTopologySpread") {
        let args: PodTopologySpreadArgs = decode_args(spread_args).ok()?;
        if args.defaulting_type == DefaultingType::System || !args.default_constraints.is_empty() {
            return None;
        }
        "its PodTopologySpread has no default constraints (defaultingType: List, none listed)"
    } else {
        "it does not run PodTopologySpread"
    };
    Some(format!(
        "{ppath} ({name}): OpportunisticBatching (beta, on in v1.35) is not modelled by ksched, and upstream batches \
         pods in this profile: {why} and it has no extender, so pods without topology spread constraints, inter-pod \
         affinity or resource claims are signed, and a pod of the same signature as the one just bound, that no \
         longer fits the node that pod took, gets the next node of that pod's ranking, checked by the filters alone \
         (not rescored, no sampled filter pass); ksched gives every pod a full cycle, so placements may differ from \
         upstream's. --feature-gates OpportunisticBatching=false matches ksched exactly"
    ))
}
