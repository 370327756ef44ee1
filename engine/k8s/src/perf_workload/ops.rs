//! The ops of a workload template, decoded strictly (an unknown field is an error, as
//! upstream's `DisallowUnknownFields`). Field names are upstream's (camelCase of the Go struct
//! fields). `opcode` is not a field: the reader takes it out of the op object (and out of
//! `createPodSets`' `createPodsOp`) to pick the struct, and [`OpSpec::opcode`] gives it back.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// Opcodes upstream has and ksched does not run: a test case using one is reported as skipped.
pub const UNSUPPORTED_OPCODES: &[(&str, &str)] = &[
    ("createResourceClaims", "the old createResourceClaims op is not modelled (createAny of a ResourceClaim is)"),
    (
        "updateDeviceConditions",
        "needs the alpha feature DRADeviceBindingConditions (device binding conditions), which ksched does not model",
    ),
    (
        "createPodGroups",
        "needs the alpha feature GangScheduling (pod groups scheduled together), which ksched does not model",
    ),
    (
        "waitForPodGroups",
        "needs the alpha feature GangScheduling (pod groups scheduled together), which ksched does not model",
    ),
    ("startCollectingProfile", "Go CPU profiles do not apply to ksched"),
    ("stopCollectingProfile", "Go CPU profiles do not apply to ksched"),
];

/// The opcodes ksched runs.
pub const SUPPORTED_OPCODES: &[&str] = &[
    "createNodes",
    "createNamespaces",
    "createPods",
    "createPodSets",
    "deletePods",
    "churn",
    "barrier",
    "sleep",
    "startCollectingMetrics",
    "stopCollectingMetrics",
    "createAny",
    "updateAny",
    "createResourceDriver",
    "allocResourceClaims",
    "checkPodScheduled",
];

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeAllocatableStrategy {
    #[serde(default)]
    pub node_allocatable: BTreeMap<String, String>,
    /// Per CSI driver, its `allocatable` on the node's CSINode (`{count: N}`): the runner
    /// creates a CSINode for each node with these drivers (NodeVolumeLimits reads them).
    #[serde(default)]
    pub csi_node_allocatable: BTreeMap<String, Value>,
    /// In-tree plugins the CSINode's `storage.alpha.kubernetes.io/migrated-plugins` annotation
    /// names. ksched counts in-tree volumes under their CSI driver wherever a CSINode exists
    /// (migration is on for every in-tree plugin upstream), so this changes nothing.
    #[serde(default)]
    pub migrated_plugins: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LabelNodePrepareStrategy {
    pub label_key: String,
    pub label_values: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UniqueNodeLabelStrategy {
    pub label_key: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateNodesOp {
    #[serde(default)]
    pub count: i64,
    #[serde(default)]
    pub count_param: String,
    pub node_template_path: Option<String>,
    pub node_allocatable_strategy: Option<NodeAllocatableStrategy>,
    pub label_node_prepare_strategy: Option<LabelNodePrepareStrategy>,
    pub unique_node_label_strategy: Option<UniqueNodeLabelStrategy>,
    #[serde(default)]
    pub template_params: BTreeMap<String, Value>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateNamespacesOp {
    #[serde(default)]
    pub prefix: String,
    #[serde(default)]
    pub count: i64,
    #[serde(default)]
    pub count_param: String,
    pub namespace_template_path: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePodsOp {
    #[serde(default)]
    pub count: i64,
    #[serde(default)]
    pub count_param: String,
    #[serde(default)]
    pub count_multiplier_param: String,
    #[serde(default)]
    pub steady_state: bool,
    #[serde(default)]
    pub steady_state_param: String,
    /// A Go duration (`30s`): how long a steady-state op runs.
    pub duration: Option<String>,
    #[serde(default)]
    pub duration_param: String,
    #[serde(default)]
    pub collect_metrics: bool,
    pub namespace: Option<String>,
    pub pod_template_path: Option<String>,
    #[serde(default)]
    pub skip_wait_to_completion: bool,
    pub persistent_volume_template_path: Option<String>,
    pub persistent_volume_claim_template_path: Option<String>,
    #[serde(default)]
    pub template_params: BTreeMap<String, Value>,
    #[serde(default)]
    pub signature_batch_size: i64,
    #[serde(default)]
    pub signature_batch_size_param: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePodSetsOp {
    #[serde(default)]
    pub count: i64,
    #[serde(default)]
    pub count_param: String,
    #[serde(default)]
    pub namespace_prefix: String,
    pub create_pods_op: CreatePodsOp,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeletePodsOp {
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub label_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub skip_wait_to_completion: bool,
    #[serde(default)]
    pub delete_pods_per_second: i64,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChurnOp {
    #[serde(default)]
    pub mode: String,
    #[serde(default)]
    pub number: i64,
    #[serde(default)]
    pub interval_milliseconds: i64,
    pub namespace: Option<String>,
    #[serde(default)]
    pub template_paths: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BarrierOp {
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub label_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub stage_requirement: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SleepOp {
    pub duration: Option<String>,
    #[serde(default)]
    pub duration_param: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartCollectingMetricsOp {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub label_selector: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StopCollectingMetricsOp {}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateAnyOp {
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub template_path: String,
    pub count: Option<i64>,
    #[serde(default)]
    pub count_param: String,
    #[serde(default)]
    pub template_params: BTreeMap<String, Value>,
}

/// `updateAny`: replaces existing objects with a template's rendering, as an API update does:
/// `subresources: [status]` changes only the status, otherwise the status is kept and
/// everything else replaced (`resize`: a pod's resources, in place). The runner says which
/// kinds and subresources it can update.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateAnyOp {
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub template_path: String,
    pub count: Option<i64>,
    #[serde(default)]
    pub count_param: String,
    /// Objects updated per second (0: all at once).
    #[serde(default)]
    pub update_per_second: i64,
    #[serde(default)]
    pub subresources: Vec<String>,
    #[serde(default)]
    pub template_params: BTreeMap<String, Value>,
}

/// `createResourceDriver`: a DRA driver with `maxClaimsPerNode` devices on each node whose
/// name matches the glob `nodes` (one ResourceSlice per node, as upstream's harness writes it).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateResourceDriverOp {
    #[serde(default)]
    pub driver_name: String,
    #[serde(default)]
    pub max_claims_per_node: i64,
    #[serde(default)]
    pub max_claims_per_node_param: String,
    #[serde(default)]
    pub nodes: String,
}

/// `allocResourceClaims`: allocates the unallocated ResourceClaims of `namespace` (every
/// namespace when empty) without a pod, each on the first node (in a seeded random order)
/// whose devices can serve it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AllocResourceClaimsOp {
    #[serde(default)]
    pub namespace: String,
}

/// `checkPodScheduled`: every pod of `namespace` is scheduled (`expectedScheduled`) within
/// `duration`, or none is and none gets scheduled for 5 s.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckPodScheduledOp {
    #[serde(default)]
    pub namespace: String,
    /// A Go duration.
    pub duration: Option<String>,
    #[serde(default)]
    pub duration_param: String,
    #[serde(default)]
    pub scheduled_param: String,
    #[serde(default)]
    pub expected_scheduled: bool,
}

/// The field names of the DRA ops, for Go's case-insensitive decoding (upstream's file writes
/// `ScheduledParam`, `ConditionTypeParam`).
pub const CREATE_RESOURCE_DRIVER_FIELDS: &[&str] =
    &["driverName", "maxClaimsPerNode", "maxClaimsPerNodeParam", "nodes"];
pub const ALLOC_RESOURCE_CLAIMS_FIELDS: &[&str] = &["namespace"];
pub const CHECK_POD_SCHEDULED_FIELDS: &[&str] =
    &["namespace", "duration", "durationParam", "scheduledParam", "expectedScheduled"];

/// One op of a workload template, as written (counts may still be `$param`s).
#[derive(Clone, Debug, PartialEq)]
pub enum OpSpec {
    CreateNodes(CreateNodesOp),
    CreateNamespaces(CreateNamespacesOp),
    CreatePods(CreatePodsOp),
    CreatePodSets(CreatePodSetsOp),
    DeletePods(DeletePodsOp),
    Churn(ChurnOp),
    Barrier(BarrierOp),
    Sleep(SleepOp),
    StartCollectingMetrics(StartCollectingMetricsOp),
    StopCollectingMetrics(StopCollectingMetricsOp),
    CreateAny(CreateAnyOp),
    UpdateAny(UpdateAnyOp),
    CreateResourceDriver(CreateResourceDriverOp),
    AllocResourceClaims(AllocResourceClaimsOp),
    CheckPodScheduled(CheckPodScheduledOp),
    /// An upstream op ksched cannot honour; `reason` says why. `params` are the `$params`
    /// its fields name (used, so a workload's params are not reported as unused).
    Unsupported {
        opcode: String,
        reason: &'static str,
        params: Vec<String>,
    },
}

impl OpSpec {
    pub fn opcode(&self) -> &str {
        match self {
            OpSpec::CreateNodes(_) => "createNodes",
            OpSpec::CreateNamespaces(_) => "createNamespaces",
            OpSpec::CreatePods(_) => "createPods",
            OpSpec::CreatePodSets(_) => "createPodSets",
            OpSpec::DeletePods(_) => "deletePods",
            OpSpec::Churn(_) => "churn",
            OpSpec::Barrier(_) => "barrier",
            OpSpec::Sleep(_) => "sleep",
            OpSpec::StartCollectingMetrics(_) => "startCollectingMetrics",
            OpSpec::StopCollectingMetrics(_) => "stopCollectingMetrics",
            OpSpec::CreateAny(_) => "createAny",
            OpSpec::UpdateAny(_) => "updateAny",
            OpSpec::CreateResourceDriver(_) => "createResourceDriver",
            OpSpec::AllocResourceClaims(_) => "allocResourceClaims",
            OpSpec::CheckPodScheduled(_) => "checkPodScheduled",
            OpSpec::Unsupported { opcode, .. } => opcode,
        }
    }

    /// Whether the op produces metrics (upstream's `collectsMetrics`).
    pub fn collects_metrics(&self) -> bool {
        match self {
            OpSpec::CreatePods(o) => o.collect_metrics,
            OpSpec::CreatePodSets(o) => o.create_pods_op.collect_metrics,
            OpSpec::StopCollectingMetrics(_) => true,
            _ => false,
        }
    }
}

pub use ksched_engine::util::duration::parse_go_duration;
