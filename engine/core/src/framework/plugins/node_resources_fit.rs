//! NodeResourcesFit: rejects nodes without room for the pod's requests (pod count, cpu,
//! memory, ephemeral storage, scalar resources) and scores by the configured strategy
//! (LeastAllocated by default: free fraction after placing the pod, weighted over resources;
//! MostAllocated; RequestedToCapacityRatio: a piecewise-linear utilization → score shape).

use serde::{Deserialize, Deserializer};
use smallvec::SmallVec;

use crate::api::{Pod, Resource, ResourceName, Sym};
use crate::features::{Feature, FeatureGates};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::ScoreMemoKey;
use crate::framework::{
    filter_rows_each, ArgsError, Code, ColumnScoring, CycleState, FilterPlugin, Plugin, Reason, RowFail, RowJudged,
    RowVerdict, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{Columns, Floors, HotRef, Snapshot};

pub const NAME: &str = "NodeResourcesFit";
pub const TOO_MANY_PODS: &str = "Too many pods";

/// The highest score a RequestedToCapacityRatio shape point may give (upstream's
/// `MaxCustomPriorityScore`); shape scores are scaled by `MAX_NODE_SCORE / 10`.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
/// Utilization is measured in percent.
const MAX_UTILIZATION: i64 = 100;

/// How requested resources turn into a score.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScoringStrategy {
    /// `(allocatable - requested) * 100 / allocatable`: prefer empty nodes.
    LeastAllocated,
    /// `requested * 100 / allocatable`: prefer full nodes.
    MostAllocated,
    /// The shape maps utilization percent to a score, linear between points; scores here
    /// are already scaled to `0..=MAX_NODE_SCORE`.
    RequestedToCapacityRatio(Vec<ShapePoint>),
}

/// One point of a RequestedToCapacityRatio shape, on the scheduler's 0..=100 score scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapePoint {
    pub utilization: i64,
    pub score: i64,
}

#[derive(Clone, Debug)]
pub struct NodeResourcesFit {
    pub strategy: ScoringStrategy,
    /// Resources scored, with weights (default cpu 1, memory 1).
    pub resources: Vec<(ResourceName, i64)>,
    /// Extended resources the filter does not check.
    pub ignored_resources: Vec<Sym>,
    /// Extended resource groups (the part before `/`) the filter does not check.
    pub ignored_resource_groups: Vec<Sym>,
    /// The DRAExtendedResource gate (alpha, off): while on, no pod is signed.
    pub dra_extended_resource: bool,
}

impl Default for NodeResourcesFit {
    fn default() -> Self {
        NodeResourcesFit {
            strategy: ScoringStrategy::LeastAllocated,
            resources: vec![(ResourceName::Cpu, 1), (ResourceName::Memory, 1)],
            ignored_resources: Vec::new(),
            ignored_resource_groups: Vec::new(),
            dra_extended_resource: false,
        }
    }
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(
        unless dra_extended_resource => "pods are not signed while DRAExtendedResource is on";
        RESOURCES => resources,
    );

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::DELETE | ActionType::UPDATE_POD_SCALE_DOWN),
            ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD
                    | ActionType::UPDATE_NODE_ALLOCATABLE
                    | ActionType::UPDATE_NODE_TAINT
                    | ActionType::UPDATE_NODE_LABEL,
            ),
        ]
    }

    /// A bound pod deleted, or scaled down in a resource the pod requests, frees room. A node
    /// matters when its allocatable alone fits the pod and (for an update) a resource the pod
    /// requests grew.
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        match (event.pods(), event.nodes()) {
            ((Some(gone), None), _) => queue_if(gone.node_name.is_some()),
            ((Some(old), Some(new)), _) => queue_if(old.node_name.is_some() && scaled_down_for(pod, old, new)),
            (_, (old, Some(new))) => {
                let fits_empty =
                    self.insufficient(pod.requests(), &NodeInfo::new(std::sync::Arc::new(new.clone()))).is_empty();
                queue_if(fits_empty && old.is_none_or(|old| requested_grew(pod, &old.allocatable, &new.allocatable)))
            }
            _ => QueueingHint::Queue,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Args (`NodeResourcesFitArgs` of kubescheduler.config.k8s.io/v1)
// ---------------------------------------------------------------------------------------

/// `pluginConfig[].args` of NodeResourcesFit. The v1 API's defaulting is applied by
/// [`NodeResourcesFitArgs::scoring_strategy_or_default`], which `validate` and
/// [`NodeResourcesFit::new`] both read: an absent strategy is LeastAllocated over cpu and
/// memory, empty `resources` are cpu and memory, and a weight of 0 is 1.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesFitArgs {
    /// Accepted and ignored (`NodeResourcesFitArgs`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Accepted and ignored.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Extended resources (`example.com/foo`) the filter does not check.
    #[serde(default)]
    pub ignored_resources: Vec<String>,
    /// Extended resource groups (`example.com`) the filter does not check.
    #[serde(default)]
    pub ignored_resource_groups: Vec<String>,
    #[serde(default)]
    pub scoring_strategy: Option<ScoringStrategyArgs>,
}

impl Default for NodeResourcesFitArgs {
    fn default() -> Self {
        NodeResourcesFitArgs {
            kind: None,
            api_version: None,
            ignored_resources: Vec::new(),
            ignored_resource_groups: Vec::new(),
            scoring_strategy: Some(ScoringStrategyArgs::default()),
        }
    }
}

/// `scoringStrategy`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoringStrategyArgs {
    /// `type`; absent is an unsupported empty type, as upstream.
    #[serde(rename = "type", default = "ScoringStrategyType::unset")]
    pub strategy_type: ScoringStrategyType,
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    /// Only with `type: RequestedToCapacityRatio`.
    #[serde(default)]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

impl Default for ScoringStrategyArgs {
    fn default() -> Self {
        ScoringStrategyArgs {
            strategy_type: ScoringStrategyType::LeastAllocated,
            resources: default_resources(),
            requested_to_capacity_ratio: None,
        }
    }
}

/// `scoringStrategy.type`. An unknown name is kept so that `validate` can name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScoringStrategyType {
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio,
    Unsupported(String),
}

impl ScoringStrategyType {
    pub fn parse(s: &str) -> ScoringStrategyType {
        match s {
            "LeastAllocated" => ScoringStrategyType::LeastAllocated,
            "MostAllocated" => ScoringStrategyType::MostAllocated,
            "RequestedToCapacityRatio" => ScoringStrategyType::RequestedToCapacityRatio,
            other => ScoringStrategyType::Unsupported(other.to_owned()),
        }
    }

    fn unset() -> ScoringStrategyType {
        ScoringStrategyType::Unsupported(String::new())
    }
}

impl<'de> Deserialize<'de> for ScoringStrategyType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(ScoringStrategyType::parse(&s))
    }
}

/// A scored resource and its weight (`0` means the default, 1).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSpec {
    pub name: String,
    #[serde(default)]
    pub weight: i64,
}

impl ResourceSpec {
    pub fn new(name: &str, weight: i64) -> ResourceSpec {
        ResourceSpec { name: name.to_owned(), weight }
    }
}

fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
}

/// `scoringStrategy.requestedToCapacityRatio`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedToCapacityRatioParam {
    #[serde(default)]
    pub shape: Vec<UtilizationShapePoint>,
}

/// A shape point as configured: utilization 0..=100, score 0..=10.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UtilizationShapePoint {
    #[serde(default)]
    pub utilization: i32,
    #[serde(default)]
    pub score: i32,
}

const SUPPORTED_TYPES: &str = "\"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\"";

impl NodeResourcesFitArgs {
    /// The scoring strategy after the v1 API's defaulting.
    pub fn scoring_strategy_or_default(&self) -> ScoringStrategyArgs {
        let mut s = self.scoring_strategy.clone().unwrap_or_default();
        if s.resources.is_empty() {
            s.resources = default_resources();
        }
        for r in &mut s.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
        s
    }

    /// Upstream's `ValidateNodeResourcesFitArgs` (after defaulting); the first error found.
    pub fn validate(&self) -> Result<(), ArgsError> {
        for (i, name) in self.ignored_resources.iter().enumerate() {
            if let Some(msg) = qualified_name_error(name) {
                return Err(invalid(format!("ignoredResources[{i}]"), name, &msg));
            }
        }
        for (i, group) in self.ignored_resource_groups.iter().enumerate() {
            let path = format!("ignoredResourceGroups[{i}]");
            if group.contains('/') {
                return Err(invalid(path, group, "resource group name can't contain '/'"));
            }
            if let Some(msg) = qualified_name_error(group) {
                return Err(invalid(path, group, &msg));
            }
        }
        let s = self.scoring_strategy_or_default();
        if let ScoringStrategyType::Unsupported(t) = &s.strategy_type {
            return Err(ArgsError::new(
                "scoringStrategy.type",
                format!("Unsupported value: {t:?}: supported values: {SUPPORTED_TYPES}"),
            ));
        }
        for (i, r) in s.resources.iter().enumerate() {
            if r.weight <= 0 || r.weight > 100 {
                return Err(ArgsError::new(
                    format!("scoringStrategy.resources[{i}].weight"),
                    format!("Invalid value: {}: resource weight of {} not in valid range (0, 100]", r.weight, r.name),
                ));
            }
        }
        let rtcr_path = "scoringStrategy.requestedToCapacityRatio";
        match (&s.strategy_type, &s.requested_to_capacity_ratio) {
            (ScoringStrategyType::RequestedToCapacityRatio, None) => Err(ArgsError::new(
                rtcr_path,
                "Required value: must be specified when type is RequestedToCapacityRatio",
            )),
            (ScoringStrategyType::RequestedToCapacityRatio, Some(p)) => {
                validate_function_shape(&p.shape, &format!("{rtcr_path}.shape"))
            }
            (_, Some(_)) => {
                Err(ArgsError::new(rtcr_path, "Forbidden: must be nil when type is not RequestedToCapacityRatio"))
            }
            (_, None) => Ok(()),
        }
    }
}

/// A shape must have points, utilizations strictly increasing within 0..=100, scores within
/// 0..=10 (upstream's `validateFunctionShape`, which checks the order first).
pub fn validate_function_shape(shape: &[UtilizationShapePoint], path: &str) -> Result<(), ArgsError> {
    if shape.is_empty() {
        return Err(ArgsError::new(path, "Required value: at least one point must be specified"));
    }
    for i in 1..shape.len() {
        if shape[i - 1].utilization >= shape[i].utilization {
            return Err(ArgsError::new(
                format!("{path}[{i}].utilization"),
                format!("Invalid value: {}: values must be sorted in increasing order", shape[i].utilization),
            ));
        }
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=MAX_UTILIZATION as i32).contains(&p.utilization) {
            return Err(ArgsError::new(
                format!("{path}[{i}].utilization"),
                format!("Invalid value: {}: not in valid range [0, {MAX_UTILIZATION}]", p.utilization),
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE as i32).contains(&p.score) {
            return Err(ArgsError::new(
                format!("{path}[{i}].score"),
                format!("Invalid value: {}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]", p.score),
            ));
        }
    }
    Ok(())
}

fn invalid(field: String, value: &str, msg: &str) -> ArgsError {
    ArgsError::new(field, format!("Invalid value: {value:?}: {msg}"))
}

/// Why `s` is not a Kubernetes qualified name (`[prefix/]name`: the prefix a DNS subdomain,
/// the name at most 63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric), as
/// upstream's `IsQualifiedName` judges label keys and resource names. `None` when valid.
pub(crate) fn qualified_name_error(s: &str) -> Option<String> {
    const NAME_FMT: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start \
                            and end with an alphanumeric character";
    let (prefix, name) = match s.split('/').collect::<SmallVec<[&str; 3]>>().as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return Some(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and \
                 end with an alphanumeric character, with an optional DNS subdomain prefix and '/'"
                    .to_owned(),
            )
        }
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            return Some("prefix part must be non-empty".to_owned());
        }
        if p.len() > 253 {
            return Some("prefix part must be no more than 253 characters".to_owned());
        }
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        };
        if !p.split('.').all(label_ok) {
            return Some(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
                 '-' or '.', and must start and end with an alphanumeric character"
                    .to_owned(),
            );
        }
    }
    if name.is_empty() {
        return Some("name part must be non-empty".to_owned());
    }
    if name.len() > 63 {
        return Some("name part must be no more than 63 characters".to_owned());
    }
    let b = name.as_bytes();
    let inner_ok = b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !inner_ok || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return Some(NAME_FMT.to_owned());
    }
    None
}

impl NodeResourcesFit {
    /// The plugin as constructed under `gates` (what of it a gate steers).
    pub fn with_gates(self, gates: &FeatureGates) -> NodeResourcesFit {
        NodeResourcesFit { dra_extended_resource: gates.enabled(Feature::DRAExtendedResource), ..self }
    }
}

impl NodeResourcesFit {
    /// The plugin configured by `args` (validate them first: an unsupported type scores as
    /// LeastAllocated and a RequestedToCapacityRatio without a shape scores 0).
    pub fn new(args: NodeResourcesFitArgs) -> NodeResourcesFit {
        let s = args.scoring_strategy_or_default();
        let strategy = match s.strategy_type {
            ScoringStrategyType::LeastAllocated | ScoringStrategyType::Unsupported(_) => {
                ScoringStrategy::LeastAllocated
            }
            ScoringStrategyType::MostAllocated => ScoringStrategy::MostAllocated,
            ScoringStrategyType::RequestedToCapacityRatio => ScoringStrategy::RequestedToCapacityRatio(
                s.requested_to_capacity_ratio
                    .iter()
                    .flat_map(|p| p.shape.iter())
                    .map(|p| ShapePoint {
                        utilization: i64::from(p.utilization),
                        score: i64::from(p.score) * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
                    })
                    .collect(),
            ),
        };
        NodeResourcesFit {
            strategy,
            resources: s.resources.iter().map(|r| (ResourceName::parse(&r.name), r.weight)).collect(),
            ignored_resources: args.ignored_resources.iter().map(|r| Sym::new(r)).collect(),
            ignored_resource_groups: args.ignored_resource_groups.iter().map(|g| Sym::new(g)).collect(),
            dra_extended_resource: false,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Filter
// ---------------------------------------------------------------------------------------

/// Whether `new` requests less than `old` of a resource `pod` requests (a bound pod scaled
/// down in place).
fn scaled_down_for(pod: &Pod, old: &Pod, new: &Pod) -> bool {
    let (want, o, n) = (pod.accounted_requests(), old.accounted_requests(), new.accounted_requests());
    (want.milli_cpu > 0 && n.milli_cpu < o.milli_cpu)
        || (want.memory > 0 && n.memory < o.memory)
        || (want.ephemeral_storage > 0 && n.ephemeral_storage < o.ephemeral_storage)
        || want.scalar.iter().any(|(name, v)| v > 0 && n.scalar.get(name) < o.scalar.get(name))
}

/// Whether a node's allocatable grew in a resource `pod` requests (or in its pod count).
fn requested_grew(pod: &Pod, old: &Resource, new: &Resource) -> bool {
    let want = pod.requests();
    new.allowed_pod_number > old.allowed_pod_number
        || (want.milli_cpu > 0 && new.milli_cpu > old.milli_cpu)
        || (want.memory > 0 && new.memory > old.memory)
        || (want.ephemeral_storage > 0 && new.ephemeral_storage > old.ephemeral_storage)
        || want.scalar.iter().any(|(name, v)| v > 0 && new.scalar.get(name) > old.scalar.get(name))
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
        // The requested pod count, not `pods().len()`: the two-pass filter's copies carry
        // nominated pods in the aggregates only (see `FilterPlugin::reads_pods`).
        let basic = |r: &Resource| Basic {
            pods: r.allowed_pod_number,
            cpu: r.milli_cpu,
            memory: r.memory,
            ephemeral: r.ephemeral_storage,
        };
        if !insufficient_basic(request, basic(alloc), basic(used), |i| out.push(i)) {
            return out;
        }
        let any_ignored = !self.ignored_resources.is_empty() || !self.ignored_resource_groups.is_empty();
        for (name, want) in request.scalar.iter() {
            if want == 0 || (any_ignored && is_extended(name) && self.ignored(name)) {
                continue;
            }
            let (have, used) = (alloc.scalar.get(name), used.scalar.get(name));
            if want > have - used {
                out.push(Insufficient { resource: Some(ResourceName::Scalar(name)), unresolvable: want > have });
            }
        }
        out
    }
}

/// A node's pod count, cpu, memory and ephemeral storage (allocatable or requested).
#[derive(Clone, Copy)]
struct Basic {
    pods: i64,
    cpu: i64,
    memory: i64,
    ephemeral: i64,
}

/// The pod-count, cpu, memory and ephemeral-storage part of `insufficient`, shared by the
/// NodeInfo and the hot-column paths. Returns whether scalar resources remain to check.
#[inline]
fn insufficient_basic(request: &Resource, alloc: Basic, used: Basic, mut lack: impl FnMut(Insufficient)) -> bool {
    if used.pods + 1 > alloc.pods {
        lack(Insufficient { resource: None, unresolvable: false });
    }
    if request.milli_cpu == 0 && request.memory == 0 && request.ephemeral_storage == 0 && request.scalar.is_empty() {
        return false;
    }
    let mut check = |name: ResourceName, want: i64, have: i64, used: i64| {
        if want > 0 && want > have - used {
            lack(Insufficient { resource: Some(name), unresolvable: want > have });
        }
    };
    check(ResourceName::Cpu, request.milli_cpu, alloc.cpu, used.cpu);
    check(ResourceName::Memory, request.memory, alloc.memory, used.memory);
    check(ResourceName::EphemeralStorage, request.ephemeral_storage, alloc.ephemeral, used.ephemeral);
    true
}

/// The reason upstream gives for one lack.
#[inline]
fn reason_for(i: &Insufficient) -> Reason {
    i.resource.map_or(Reason::Static(TOO_MANY_PODS), Reason::Insufficient)
}

/// The filter's status for what a node lacks.
fn lacking_status(lacking: &[Insufficient]) -> Status {
    if lacking.is_empty() {
        return Status::success();
    }
    // Pushed one by one: collecting into a SmallVec costs more than the whole check.
    let mut reasons = SmallVec::new();
    let mut unresolvable = false;
    for i in lacking {
        reasons.push(reason_for(i));
        unresolvable |= i.unresolvable;
    }
    let code = if unresolvable { Code::UnschedulableAndUnresolvable } else { Code::Unschedulable };
    Status { code, reasons, plugin: "", detail: None }
}

// ---------------------------------------------------------------------------------------
// Score
// ---------------------------------------------------------------------------------------

impl NodeResourcesFit {
    /// The score of placing a pod with `pod_non_zero` (requests with scoring defaults) on `node`.
    pub fn score_node(&self, pod_non_zero: &Resource, node: &NodeInfo) -> i64 {
        self.score_with(|name| allocatable_and_requested(node, name, pod_non_zero.get(name), false))
    }

    /// The score given each scored resource's (allocatable, requested-with-pod): the
    /// configured strategy's formula (`weighted_mean`, `shape_mean`) over the resources.
    #[inline]
    fn score_with(&self, alloc_req: impl Fn(ResourceName) -> (i64, i64)) -> i64 {
        let parts = self.resources.iter().map(|&(name, weight)| {
            let (alloc, req) = alloc_req(name);
            (alloc, req, weight)
        });
        match &self.strategy {
            ScoringStrategy::LeastAllocated => weighted_mean(parts, least_requested_score),
            ScoringStrategy::MostAllocated => weighted_mean(parts, most_requested_score),
            ScoringStrategy::RequestedToCapacityRatio(shape) => shape_mean(shape, parts),
        }
    }

    /// The default configuration (LeastAllocated over cpu and memory) with `pod`'s requests:
    /// what the column fast path reads besides the row, and so the memo key.
    #[inline]
    fn fast_path(&self, pod: &Pod) -> Option<FastPath> {
        let (
            ScoringStrategy::LeastAllocated,
            &[(ResourceName::Cpu, cpu_weight), (ResourceName::Memory, memory_weight)],
        ) = (&self.strategy, self.resources.as_slice())
        else {
            return None;
        };
        let request = pod.non_zero_requests();
        Some(FastPath { cpu: request.milli_cpu, memory: request.memory, cpu_weight, memory_weight })
    }
}

/// The inputs of NodeResourcesFit's column fast path (`NodeResourcesFit::fast_path`).
struct FastPath {
    cpu: i64,
    memory: i64,
    cpu_weight: i64,
    memory_weight: i64,
}

impl FastPath {
    /// The score of the row: `score_with` for the default configuration, per-pod lookups
    /// hoisted.
    #[inline]
    fn score(&self, node: HotRef<'_>) -> i64 {
        let part = |name, request, weight| {
            let (alloc, req) = hot_allocatable_and_requested(node, name, request, false).unwrap_or((0, 0));
            (alloc, req, weight)
        };
        weighted_mean(
            [
                part(ResourceName::Cpu, self.cpu, self.cpu_weight),
                part(ResourceName::Memory, self.memory, self.memory_weight),
            ],
            least_requested_score,
        )
    }

    /// What the score depends on besides the row.
    fn key(&self) -> ScoreMemoKey {
        [self.cpu, self.memory, 0, 0]
    }
}

/// LeastAllocated's and MostAllocated's combination: the weighted mean (truncated) of
/// `score(requested, allocatable)` over the (allocatable, requested, weight) `parts` with
/// something allocatable; 0 when none has.
#[inline]
pub fn weighted_mean(parts: impl IntoIterator<Item = (i64, i64, i64)>, score: impl Fn(i64, i64) -> i64) -> i64 {
    let (mut total, mut weights) = (0, 0);
    for (alloc, req, weight) in parts {
        if alloc != 0 {
            total += score(req, alloc) * weight;
            weights += weight;
        }
    }
    if weights == 0 {
        0
    } else {
        total / weights
    }
}

/// RequestedToCapacityRatio's combination: the weighted mean, rounded, of the shape's scores
/// over the `parts` with something allocatable, leaving out (as upstream) those scoring 0.
#[inline]
fn shape_mean(shape: &[ShapePoint], parts: impl IntoIterator<Item = (i64, i64, i64)>) -> i64 {
    let (mut total, mut weights) = (0, 0);
    for (alloc, req, weight) in parts {
        if alloc == 0 {
            continue;
        }
        let s = requested_to_capacity_ratio_score(shape, req, alloc);
        if s > 0 {
            total += s * weight;
            weights += weight;
        }
    }
    if weights == 0 {
        0
    } else {
        // math.Round of the quotient: half away from zero (both are positive).
        (2 * total + weights) / (2 * weights)
    }
}

/// An extended resource: a domain-prefixed name outside `kubernetes.io/` (upstream's
/// `IsExtendedResourceName`; quota's `requests.` names are not resources).
fn is_extended(name: Sym) -> bool {
    let s = name.as_str();
    s.contains('/') && !s.contains("kubernetes.io/") && !s.starts_with("requests.")
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

/// `allocatable_and_requested` from a node's hot columns; `None` for scalar resources, which
/// the columns do not hold.
#[inline]
pub fn hot_allocatable_and_requested(
    node: HotRef<'_>,
    name: ResourceName,
    pod_request: i64,
    use_requested: bool,
) -> Option<(i64, i64)> {
    Some(match name {
        ResourceName::Cpu => (
            node.allocatable_cpu(),
            if use_requested { node.requested_cpu() } else { node.non_zero_cpu() } + pod_request,
        ),
        ResourceName::Memory => (
            node.allocatable_memory(),
            if use_requested { node.requested_memory() } else { node.non_zero_memory() } + pod_request,
        ),
        ResourceName::EphemeralStorage => (node.allocatable_ephemeral(), node.requested_ephemeral() + pod_request),
        ResourceName::Scalar(_) => return None,
        ResourceName::Pods => (0, 0),
    })
}

/// Appends `score(row)` for the rows at `positions`, unless a scored resource is a scalar one
/// (the columns do not hold those): then appends nothing and returns false.
pub(crate) fn score_from_columns(
    mut resources: impl Iterator<Item = ResourceName>,
    columns: &Columns,
    positions: &[u32],
    out: &mut Vec<i64>,
    score: impl Fn(HotRef<'_>) -> i64,
) -> ColumnScoring {
    if resources.any(|r| matches!(r, ResourceName::Scalar(_))) {
        return ColumnScoring::Declined;
    }
    out.extend(columns.rows(positions).map(score));
    ColumnScoring::Scored
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

/// The shape's score at `requested / capacity` in percent (truncated); over capacity or
/// without capacity counts as 100% utilization.
#[inline]
pub fn requested_to_capacity_ratio_score(shape: &[ShapePoint], requested: i64, capacity: i64) -> i64 {
    let utilization = if capacity == 0 || requested > capacity {
        MAX_UTILIZATION
    } else if requested <= 0 {
        0
    } else {
        // Exact even where requested * 100 overflows i64.
        (i128::from(requested) * i128::from(MAX_UTILIZATION) / i128::from(capacity)) as i64
    };
    broken_linear(shape, utilization)
}

/// The piecewise-linear function through `shape`: the first point's score below it, the last
/// point's score above it, integer interpolation (truncating) between points. 0 for no points.
pub fn broken_linear(shape: &[ShapePoint], p: i64) -> i64 {
    for (i, point) in shape.iter().enumerate() {
        if p <= point.utilization {
            let Some(prev) = i.checked_sub(1).map(|j| shape[j]) else {
                return point.score;
            };
            // `p > prev.utilization` here, so the denominator is positive.
            return prev.score
                + (point.score - prev.score) * (p - prev.utilization) / (point.utilization - prev.utilization);
        }
    }
    shape.last().map_or(0, |p| p.score)
}

impl FilterPlugin for NodeResourcesFit {
    fn reads_pods(&self) -> bool {
        false
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        lacking_status(&self.insufficient(pod.requests(), node))
    }

    fn judges_rows(&self, _state: &CycleState, pod: &Pod) -> bool {
        pod.requests().scalar.is_empty()
    }

    /// The block's rows read as slices of the chunk's arrays, the pod's requests once: a
    /// row that fits costs a handful of compares and no branch. Rows that do not fit get
    /// `filter_hot`'s brief of what they lack.
    fn filter_rows(&self, state: &CycleState, pod: &Pod, snapshot: &Snapshot, lo: usize, judged: &mut [RowJudged]) {
        let request = pod.requests();
        if !request.scalar.is_empty() {
            return filter_rows_each(self, state, pod, snapshot, lo, judged);
        }
        let block = snapshot.columns().block(lo);
        let (chunk, k0) = block.parts();
        let n = judged.len();
        let rows = k0..k0 + n;
        let (cpu, memory, ephemeral) = room_bounds(request);
        // The chunk keeps allocatable less requested (wrapping) for cpu, memory and ephemeral
        // storage: the rooms compared here.
        let fits = chunk.steady.allocatable_pods[rows.clone()]
            .iter()
            .zip(&chunk.requested_pods[rows.clone()])
            .zip(&chunk.free_cpu[rows.clone()])
            .zip(&chunk.free_memory[rows.clone()])
            .zip(&chunk.free_ephemeral[rows])
            .map(|((((ap, rp), fc), fm), fe)| (rp < ap) & (cpu <= *fc) & (memory <= *fm) & (ephemeral <= *fe));
        for (i, (j, fits)) in judged.iter_mut().zip(fits).enumerate() {
            if !fits {
                if let RowJudged::Pass = j {
                    let (alloc, used) = basic_of(block.at(i));
                    if let RowVerdict::Fail(fail) = lacks_in_brief(request, alloc, used) {
                        *j = RowJudged::Fail(self.name(), fail);
                    }
                }
            }
        }
    }

    /// A pod without scalar resources whose requests fit the chunk's least room (and that
    /// every row has room for one more pod) fits every row of it.
    fn passes_chunk(&self, _state: &CycleState, pod: &Pod, floors: &Floors) -> bool {
        let request = pod.requests();
        let (cpu, memory, ephemeral) = room_bounds(request);
        request.scalar.is_empty()
            && floors.pods_room > 0
            && cpu <= floors.free_cpu
            && memory <= floors.free_memory
            && ephemeral <= floors.free_ephemeral
    }

    #[inline]
    fn filter_hot(&self, _state: &CycleState, pod: &Pod, node: HotRef<'_>) -> RowVerdict {
        let request = pod.requests();
        if !request.scalar.is_empty() {
            return RowVerdict::NeedsNode;
        }
        let (alloc, used) = basic_of(node);
        // The common verdict first, without building the list of what is lacking.
        let room = |want: i64, have: i64, used: i64| want <= 0 || want <= have - used;
        if used.pods < alloc.pods
            && room(request.milli_cpu, alloc.cpu, used.cpu)
            && room(request.memory, alloc.memory, used.memory)
            && room(request.ephemeral_storage, alloc.ephemeral, used.ephemeral)
        {
            return RowVerdict::Pass;
        }
        lacks_in_brief(request, alloc, used)
    }
}

/// The least room for cpu, memory and ephemeral storage that `request` fits, with the test
/// for a request of 0 folded in: i64::MIN is within any room (have − used taken wrapping, as
/// release arithmetic would).
#[inline]
fn room_bounds(request: &Resource) -> (i64, i64, i64) {
    let bound = |want: i64| if want <= 0 { i64::MIN } else { want };
    (bound(request.milli_cpu), bound(request.memory), bound(request.ephemeral_storage))
}

/// What a row lacks for `request` (no scalar resources), in brief: a bit per lack, and one
/// per lack the node could never meet; `Pass` when it lacks nothing.
fn lacks_in_brief(request: &Resource, alloc: Basic, used: Basic) -> RowVerdict {
    let mut what = 0u32;
    let mut code = Code::Unschedulable;
    insufficient_basic(request, alloc, used, |i| {
        let bit = i.resource.map_or(0, |r| match r {
            ResourceName::Cpu => 1,
            ResourceName::Memory => 2,
            _ => 3,
        });
        what |= 1 << bit;
        if i.unresolvable {
            what |= 1 << (bit + 4);
            code = Code::UnschedulableAndUnresolvable;
        }
    });
    if what == 0 {
        return RowVerdict::Pass;
    }
    RowVerdict::Fail(RowFail { code, what, make: basic_lacks_status })
}

/// A row's allocatable and requested basic resources.
#[inline]
fn basic_of(node: HotRef<'_>) -> (Basic, Basic) {
    let alloc = Basic {
        pods: node.allocatable_pods(),
        cpu: node.allocatable_cpu(),
        memory: node.allocatable_memory(),
        ephemeral: node.allocatable_ephemeral(),
    };
    let used = Basic {
        pods: node.requested_pods(),
        cpu: node.requested_cpu(),
        memory: node.requested_memory(),
        ephemeral: node.requested_ephemeral(),
    };
    (alloc, used)
}

/// The status of the lacks `filter_hot` put in brief: bit 0 too many pods, bits 1–3 cpu,
/// memory, ephemeral storage (in that order, as `insufficient_basic` finds them), each with
/// an unresolvable bit four higher.
fn basic_lacks_status(what: u32) -> Status {
    const ORDER: [Option<ResourceName>; 4] =
        [None, Some(ResourceName::Cpu), Some(ResourceName::Memory), Some(ResourceName::EphemeralStorage)];
    let lacking: SmallVec<[Insufficient; 4]> = ORDER
        .iter()
        .enumerate()
        .filter(|(bit, _)| what & (1 << bit) != 0)
        .map(|(bit, &resource)| Insufficient { resource, unresolvable: what & (1 << (bit + 4)) != 0 })
        .collect();
    lacking_status(&lacking)
}

impl ScorePlugin for NodeResourcesFit {
    fn normalizing(&self) -> crate::framework::Normalizing {
        crate::framework::Normalizing::Unchanged
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        Ok(self.score_node(pod.non_zero_requests(), node))
    }

    fn memo_key(&self, pod: &Pod) -> Option<ScoreMemoKey> {
        self.fast_path(pod).map(|fast| fast.key())
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
        if let Some(fast) = self.fast_path(pod) {
            out.extend(columns.rows(positions).map(|node| fast.score(node)));
            return Ok(ColumnScoring::Scored);
        }
        let request = pod.non_zero_requests();
        Ok(score_from_columns(self.resources.iter().map(|&(r, _)| r), columns, positions, out, |node| {
            self.score_with(|name| {
                hot_allocatable_and_requested(node, name, request.get(name), false).unwrap_or((0, 0))
            })
        }))
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

    /// Every combination of lacks the hot row can find (pods full or not; cpu, memory and
    /// ephemeral storage each enough, short, or more than the node has): the brief
    /// `filter_hot` returns, once built, is the status `filter` gives, code first.
    #[test]
    fn hot_brief_builds_the_filter_status() {
        let node =
            |max_pods| Node::builder("n").resources(4000, 8 * GI, max_pods).capacity(EphemeralStorage, 10 * GI).build();
        let filler =
            Pod::builder("f").container("i", &[(Cpu, 3000), (Memory, 6 * GI), (EphemeralStorage, 8 * GI)]).build();
        // Enough, short (fits an empty node), more than the node has.
        let cpu = [500, 1500, 5000];
        let mem = [GI, 3 * GI, 9 * GI];
        let eph = [GI, 3 * GI, 11 * GI];
        let plugin = NodeResourcesFit::default();
        let mut seen = std::collections::HashSet::new();
        for max_pods in [1, 2] {
            let info = node_info(node(max_pods), std::slice::from_ref(&filler));
            let snapshot = Snapshot::from_node_infos(vec![info.clone()]);
            for (c, m, e) in product3(&cpu, &mem, &eph) {
                let p = Pod::builder("p").container("i", &[(Cpu, c), (Memory, m), (EphemeralStorage, e)]).build();
                let mut want = plugin.filter(&CycleState::new(), &p, &info);
                if !want.is_success() {
                    want = want.with_plugin(NAME);
                }
                let got = match plugin.filter_hot(&CycleState::new(), &p, snapshot.columns().at(0)) {
                    RowVerdict::Pass => Status::success(),
                    RowVerdict::Fail(f) => {
                        assert_eq!(f.code, want.code, "pods {max_pods}, cpu {c}, memory {m}, ephemeral {e}");
                        crate::framework::Verdict::Brief(NAME, f).into_status()
                    }
                    RowVerdict::NeedsNode => panic!("a basic pod is judged from the row"),
                };
                assert_eq!(got, want, "pods {max_pods}, cpu {c}, memory {m}, ephemeral {e}");
                seen.insert(want.message());
            }
        }
        // The table reaches every lack: 1 + 2 * 2 * 2 * 2 different messages.
        assert_eq!(seen.len(), 16, "{seen:?}");
    }

    /// A chunk passes whole exactly when every one of its nodes fits: at the bounds of each
    /// resource and of the pod count, on a chunk of two nodes (4000m / 8Gi / 10Gi, one of
    /// them with a pod of 1000m / 2Gi / 3Gi): the least room is 3000m / 6Gi / 7Gi, and pods
    /// `max - 1` on it.
    #[test]
    fn a_chunk_passes_whole_exactly_when_every_node_fits() {
        let node = |name: &str, max_pods| {
            Node::builder(name).resources(4000, 8 * GI, max_pods).capacity(EphemeralStorage, 10 * GI).build()
        };
        let used =
            Pod::builder("u").container("i", &[(Cpu, 1000), (Memory, 2 * GI), (EphemeralStorage, 3 * GI)]).build();
        let gpu = ResourceName::Scalar(Sym::new("example.com/gpu"));
        type Case<'a> = (&'a str, i64, &'a [(ResourceName, i64)], bool);
        let cases: &[Case<'_>] = &[
            ("at every bound", 5, &[(Cpu, 3000), (Memory, 6 * GI), (EphemeralStorage, 7 * GI)], true),
            ("cpu 1m over on one node", 5, &[(Cpu, 3001)], false),
            ("memory 1 byte over on one node", 5, &[(Memory, 6 * GI + 1)], false),
            ("ephemeral 1 byte over on one node", 5, &[(EphemeralStorage, 7 * GI + 1)], false),
            ("no request", 5, &[], true),
            ("the last pod slot on one node", 2, &[(Cpu, 100)], true),
            ("no pod slot left on one node", 1, &[(Cpu, 100)], false),
            ("a scalar resource", 5, &[(Cpu, 100), (gpu, 1)], false),
        ];
        let plugin = NodeResourcesFit::default();
        for &(desc, max_pods, req, want) in cases {
            let infos =
                vec![node_info(node("a", max_pods), &[]), node_info(node("b", max_pods), std::slice::from_ref(&used))];
            let snapshot = Snapshot::from_node_infos(infos.clone());
            let pod = Pod::builder("p").container("i", req).build();
            let state = CycleState::new();
            let got = plugin.passes_chunk(&state, &pod, snapshot.columns().floors(0));
            assert_eq!(got, want, "{desc}");
            // The table's answers are the filter's, where the floors can tell (no scalar).
            if req.iter().all(|(r, _)| *r != gpu) {
                let every_node_fits = infos.iter().all(|i| plugin.filter(&state, &pod, i).is_success());
                assert_eq!(every_node_fits, want, "{desc}: the filter");
            }
        }
    }

    fn product3<'a>(a: &'a [i64], b: &'a [i64], c: &'a [i64]) -> impl Iterator<Item = (i64, i64, i64)> + 'a {
        a.iter().flat_map(move |&x| b.iter().flat_map(move |&y| c.iter().map(move |&z| (x, y, z))))
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

    fn args(json: &str) -> NodeResourcesFitArgs {
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"))
    }

    #[test]
    fn node_resources_fit_args_defaults_match_upstream() {
        let from_empty = args("{}");
        let with_kind = args(r#"{"kind":"NodeResourcesFitArgs","apiVersion":"kubescheduler.config.k8s.io/v1"}"#);
        for a in [&from_empty, &with_kind, &NodeResourcesFitArgs::default()] {
            let s = a.scoring_strategy_or_default();
            assert_eq!(s.strategy_type, ScoringStrategyType::LeastAllocated);
            assert_eq!(s.resources, vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]);
            assert_eq!(a.validate(), Ok(()));
            let fit = NodeResourcesFit::new(a.clone());
            assert_eq!(fit.strategy, NodeResourcesFit::default().strategy);
            assert_eq!(fit.resources, NodeResourcesFit::default().resources);
        }
        // Empty resources and zero weights take the defaults.
        let a = args(r#"{"scoringStrategy":{"type":"MostAllocated","resources":[]}}"#);
        assert_eq!(a.scoring_strategy_or_default().resources, default_resources());
        let a = args(r#"{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"example.com/gpu"}]}}"#);
        assert_eq!(a.scoring_strategy_or_default().resources, vec![ResourceSpec::new("example.com/gpu", 1)]);
        assert!(serde_json::from_str::<NodeResourcesFitArgs>(r#"{"scoringStrategy":{"typo":1}}"#).is_err());
        assert!(serde_json::from_str::<NodeResourcesFitArgs>(r#"{"ignoredResource":[]}"#).is_err());
    }

    #[test]
    fn node_resources_fit_args_validation_table() {
        // (description, args JSON, expected error field or "" for valid)
        let cases = [
            ("defaults", r#"{}"#, ""),
            ("ignored extended resource", r#"{"ignoredResources":["example.com/foo"]}"#, ""),
            (
                "ignored resource with two slashes",
                r#"{"ignoredResources":["a","example.com/foo/bar"]}"#,
                "ignoredResources[1]",
            ),
            ("ignored resource with bad name", r#"{"ignoredResources":["example.com/-foo"]}"#, "ignoredResources[0]"),
            ("ignored group with slash", r#"{"ignoredResourceGroups":["example.com/x"]}"#, "ignoredResourceGroups[0]"),
            ("ignored group with bad name", r#"{"ignoredResourceGroups":["ok","bad_"]}"#, "ignoredResourceGroups[1]"),
            ("unknown type", r#"{"scoringStrategy":{"type":"Spread"}}"#, "scoringStrategy.type"),
            (
                "missing type",
                r#"{"scoringStrategy":{"resources":[{"name":"cpu","weight":1}]}}"#,
                "scoringStrategy.type",
            ),
            (
                "negative weight",
                r#"{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":-1}]}}"#,
                "scoringStrategy.resources[0].weight",
            ),
            (
                "weight over 100",
                r#"{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":100},{"name":"memory","weight":101}]}}"#,
                "scoringStrategy.resources[1].weight",
            ),
            (
                "zero weight defaults to 1",
                r#"{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":0}]}}"#,
                "",
            ),
            (
                "ratio without its parameters",
                r#"{"scoringStrategy":{"type":"RequestedToCapacityRatio"}}"#,
                "scoringStrategy.requestedToCapacityRatio",
            ),
            (
                "ratio parameters with another type",
                r#"{"scoringStrategy":{"type":"MostAllocated","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0}]}}}"#,
                "scoringStrategy.requestedToCapacityRatio",
            ),
            (
                "empty shape",
                r#"{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[]}}}"#,
                "scoringStrategy.requestedToCapacityRatio.shape",
            ),
            (
                "valid shape",
                r#"{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":10},{"utilization":100,"score":0}]}}}"#,
                "",
            ),
            (
                "shape not increasing",
                r#"{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":50,"score":1},{"utilization":50,"score":2}]}}}"#,
                "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            ),
            (
                "shape utilization over 100",
                r#"{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":10,"score":1},{"utilization":101,"score":2}]}}}"#,
                "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            ),
            (
                "shape negative utilization",
                r#"{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":-1,"score":1}]}}}"#,
                "scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
            ),
            (
                "shape score over 10",
                r#"{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":11}]}}}"#,
                "scoringStrategy.requestedToCapacityRatio.shape[0].score",
            ),
        ];
        for (desc, json, want_field) in cases {
            let got = args(json).validate();
            match (got, want_field) {
                (Ok(()), "") => {}
                (Err(e), f) if !f.is_empty() => {
                    assert_eq!(e.field, f, "{desc}: {e}");
                    assert!(!e.message.is_empty(), "{desc}");
                }
                (got, _) => panic!("{desc}: got {got:?}, want field {want_field:?}"),
            }
        }
        let e = args(r#"{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":-1}]}}"#)
            .validate()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of cpu not in valid range (0, 100]"
        );
    }

    #[test]
    fn node_resources_fit_ignored_resources_from_args() {
        let gpu = Sym::new("example.com/gpu");
        let native = Sym::new("example.kubernetes.io/thing");
        let info = node_info(Node::builder("n").resources(1000, GI, 10).build(), &[]);
        let fit = NodeResourcesFit::new(args(
            r#"{"ignoredResources":["example.com/gpu"],"ignoredResourceGroups":["example.kubernetes.io"]}"#,
        ));
        let wants = |r: Sym| Pod::builder("p").container("i", &[(Scalar(r), 1)]).build();
        assert!(fit.filter(&CycleState::new(), &wants(gpu), &info).is_success());
        // Names under kubernetes.io are native, never ignored (as upstream).
        let st = fit.filter(&CycleState::new(), &wants(native), &info);
        assert_eq!(st.message(), "Insufficient example.kubernetes.io/thing");
    }

    #[test]
    fn most_allocated_score_table() {
        let fit = NodeResourcesFit::new(args(r#"{"scoringStrategy":{"type":"MostAllocated"}}"#));
        let weighted = NodeResourcesFit::new(args(
            r#"{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":3},{"name":"memory","weight":1}]}}"#,
        ));
        let cases: Vec<(&str, &NodeResourcesFit, Pod, Vec<Pod>, i64)> = vec![
            // cpu 25, memory 50 → 37
            ("empty node", &fit, pod(1000, 5000), vec![], 37),
            // cpu 3000/4000 = 75, memory 7000/10000 = 70 → 72
            ("with existing pods", &fit, pod(1000, 5000), vec![pod(2000, 2000)], 72),
            // cpu capped at 100, memory 10 → 55
            ("over capacity is capped", &fit, pod(8000, 1000), vec![], 55),
            // (25 * 3 + 50) / 4 = 31
            ("weights", &weighted, pod(1000, 5000), vec![], 31),
        ];
        for (desc, f, p, existing, want) in cases {
            let info = node_info(Node::builder("n").resources(4000, 10_000, 110).build(), &existing);
            assert_eq!(f.score(&CycleState::new(), &p, &info, &Snapshot::default()).unwrap(), want, "{desc}");
        }
    }

    #[test]
    fn requested_to_capacity_ratio_score_table() {
        let rtcr = |shape: &str, resources: &str| {
            let a = args(&format!(
                r#"{{"scoringStrategy":{{"type":"RequestedToCapacityRatio","resources":{resources},"requestedToCapacityRatio":{{"shape":{shape}}}}}}}"#
            ));
            assert_eq!(a.validate(), Ok(()));
            NodeResourcesFit::new(a)
        };
        let cpu_mem = r#"[{"name":"cpu","weight":1},{"name":"memory","weight":1}]"#;
        let bin_pack = rtcr(r#"[{"utilization":0,"score":0},{"utilization":100,"score":10}]"#, cpu_mem);
        let spread = rtcr(r#"[{"utilization":0,"score":10},{"utilization":100,"score":0}]"#, cpu_mem);
        let peak = rtcr(
            r#"[{"utilization":0,"score":0},{"utilization":50,"score":10},{"utilization":100,"score":0}]"#,
            cpu_mem,
        );
        let weighted = rtcr(
            r#"[{"utilization":0,"score":0},{"utilization":100,"score":10}]"#,
            r#"[{"name":"cpu","weight":3},{"name":"memory","weight":1}]"#,
        );
        let gpu = Scalar(Sym::new("example.com/gpu"));
        let gpu_only = rtcr(
            r#"[{"utilization":0,"score":0},{"utilization":100,"score":10}]"#,
            r#"[{"name":"example.com/gpu","weight":1}]"#,
        );
        let cases: Vec<(&str, &NodeResourcesFit, Pod, i64)> = vec![
            // cpu 25%, memory 50% → 25 and 50 → 37.5 rounds to 38 (MostAllocated truncates to 37)
            ("bin packing rounds half up", &bin_pack, pod(1000, 5000), 38),
            // 75 and 50 → 62.5 → 63
            ("spreading", &spread, pod(1000, 5000), 63),
            // cpu 25% → 50, memory 50% → 100 → 75
            ("peaked shape", &peak, pod(1000, 5000), 75),
            // (25 * 3 + 50) / 4 = 31.25 → 31
            ("weights", &weighted, pod(1000, 5000), 31),
            // cpu explicitly 0 scores 0 and leaves the average: memory alone → 50
            ("zero-scoring resource is left out", &bin_pack, pod(0, 5000), 50),
            // cpu over capacity counts as 100% → 100, memory 10% → 10 → 55
            ("over capacity is full", &bin_pack, pod(8000, 1000), 55),
            // one of two gpus → 50
            ("extended resource", &gpu_only, Pod::builder("p").container("i", &[(gpu, 1)]).build(), 50),
            // a pod not requesting the extended resource is not scored on it → 0
            ("extended resource not requested", &gpu_only, pod(1000, 5000), 0),
        ];
        for (desc, f, p, want) in cases {
            let info = node_info(Node::builder("n").resources(4000, 10_000, 110).capacity(gpu, 2).build(), &[]);
            assert_eq!(f.score(&CycleState::new(), &p, &info, &Snapshot::default()).unwrap(), want, "{desc}");
        }
    }

    #[test]
    fn broken_linear_table() {
        let pt = |utilization, score| ShapePoint { utilization, score };
        let shape = [pt(10, 20), pt(50, 100), pt(80, 40)];
        for (p, want) in [(0, 20), (10, 20), (30, 60), (50, 100), (52, 96), (60, 80), (80, 40), (95, 40)] {
            assert_eq!(broken_linear(&shape, p), want, "p={p}");
        }
        // Interpolation truncates toward zero on falling segments: 100 - 33.3 → 67.
        assert_eq!(broken_linear(&[pt(0, 100), pt(30, 0)], 10), 67);
        assert_eq!(broken_linear(&[], 50), 0);
        // Exact past i64 overflow of requested * 100: 49% → 20 + 80 * 39 / 40 = 98.
        assert_eq!(requested_to_capacity_ratio_score(&shape, i64::MAX / 2, i64::MAX), 98);
        assert_eq!(requested_to_capacity_ratio_score(&shape, 5, 0), 40);
    }
}
