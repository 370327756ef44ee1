//! Runs one workload of an upstream scheduler_perf test case on a [`Simulation`].
//!
//! Time: the simulation's clock is simulated. Each scheduling attempt moves it on by
//! [`Options::attempt_cost`] (1 ms by default, roughly what one attempt costs upstream), and
//! when the scheduler is idle but the workload still waits for something, it jumps to the next
//! backoff expiry, grace-period end or background event. Background ops — `churn` ticks every
//! `intervalMilliseconds` and `deletePods` at `deletePodsPerSecond` — fire on that clock, so
//! they interleave with scheduling deterministically; `sleep` passes simulated time (the
//! scheduler keeps working through it). Throughput and attempt latency are wall time.
//!
//! Waiting: a `createPods` op (unless `skipWaitToCompletion`) and a `barrier` wait until the
//! pods they wait for are bound. If nothing is left that could bind them, or 10 simulated
//! minutes pass (upstream's timeout), the workload fails with the reason.
//!
//! Pods with `schedulingGates` are created and queued like any other (`createPods`,
//! `createAny`); the queue's SchedulingGates PreEnqueue holds them until an update (`updateAny`)
//! removes the last gate. They count as attempted for a `barrier` with `stageRequirement:
//! Attempted`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1 as kapps;
use k8s_openapi::api::core::v1 as k;
use k8s_openapi::api::policy::v1 as kpolicy;
use k8s_openapi::api::scheduling::v1 as kscheduling;
use k8s_openapi::api::storage::v1 as kstorage;
use ksched_engine::api::{Labels, Node, Pod, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::features::{Feature, FeatureGates, Support};
use ksched_engine::framework::events::{ActionType, EventResource};
use ksched_engine::framework::pick::TieBreak;
use ksched_engine::framework::{Profile, Profiles};
use ksched_engine::queue::{QueueConfig, SchedulingQueue};
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::snapshot::objects::Service;
use ksched_engine::util::time::{Clock, Timestamp};
use ksched_k8s::config;
use ksched_k8s::controllers::{DaemonSetWatch, NameRng};
use ksched_k8s::manifest::Source as ManifestSource;
use ksched_k8s::perf_workload::template::{self, TValue};
use ksched_k8s::perf_workload::{
    glob_match, parse_go_duration, AllocResourceClaimsOp, CheckPodScheduledOp, ChurnOp, CreateNodesOp, CreatePodsOp,
    CreateResourceDriverOp, NodeAllocatableStrategy, OpSpec, ResolvedOp, TestCase, Workload,
};
use ksched_k8s::unmodelled::{node_unmodelled, pod_unmodelled, Unmodelled, UnmodelledField};
use ksched_k8s::{
    csi_node_from_k8s, node_from_k8s, pdb_from_k8s, pod_from_k8s_with, priority_class_from_k8s, pv_from_k8s,
    pvc_from_k8s,
};
use ksched_sim::observe;
use ksched_sim::simulation::{EventSource, RunError, RunOptions, Stop, Until};
use ksched_sim::Simulation;
use serde_json::{json, Value};

use crate::front_ends::{NoHooks, RunHooks};
use crate::metrics::{apply_threshold, Collector, DataItem, Measurement, PodFilter};
use crate::progress::Progress;

/// How long a wait may take on the simulated clock before the workload fails (upstream's
/// pod-scheduling timeout).
const WAIT_LIMIT: Duration = Duration::from_secs(600);

#[derive(Clone, Debug)]
pub struct Options {
    pub seed: u64,
    /// How cycles pick among nodes tied at the highest total (every profile).
    pub tie_break: TieBreak,
    /// Simulated time one scheduling attempt takes.
    pub attempt_cost: Duration,
    /// Filter workers; `None`: the scheduler config's, else 1.
    pub parallelism: Option<usize>,
    /// Measure throughput on time each attempt is said to take instead of wall time, so
    /// windows are reproducible (tests); `None`: wall time.
    pub attempt_time: Option<fn(&CycleOutcome) -> Duration>,
    /// A KubeSchedulerConfiguration used instead of every test case's `schedulerConfigPath`
    /// (`ksched gate --workload FILE --config FILE`).
    pub scheduler_config: Option<PathBuf>,
    /// `KSCHED_DEMO_SLOWDOWN`'s busy-loop iterations after every attempt (0: off).
    pub slowdown: u64,
    /// Show a progress bar per op on stderr (when it is a terminal).
    pub progress: bool,
    /// `--feature-gates`: the gates every workload starts from (its file's `featureGates`
    /// are applied over them).
    pub gates: FeatureGates,
    /// `--preemption-api-delay`, given to the queue the workload's scheduler configuration
    /// builds (a caller that hands `run_workload_hooked` its own scheduler sets it there).
    pub api: crate::front_ends::PreemptionApiArgs,
    /// `--strict`: a field of a node or pod the workload creates or updates that changes
    /// upstream's decision and that ksched does not model fails the workload instead of being
    /// counted in its warnings.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 1,
            tie_break: TieBreak::Upstream,
            attempt_cost: Duration::from_millis(1),
            parallelism: None,
            attempt_time: None,
            scheduler_config: None,
            slowdown: 0,
            progress: false,
            gates: FeatureGates::default(),
            api: Default::default(),
            strict: false,
        }
    }
}

/// How a `--strict` refusal of an unmodelled field ends the workload's failure (callers that
/// turn a failed workload into a note make this one an error).
pub const STRICT_REFUSAL: &str = "upstream's decision may differ (--strict)";

/// How a workload ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Passed,
    /// Ran; these thresholds were missed.
    ThresholdMissed(Vec<String>),
    /// Could not complete (pods never scheduled, bad template, ...).
    Failed(String),
    /// Not run: an op ksched cannot honour.
    Skipped(String),
}

/// Requested / allocatable of one node after the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeUse {
    pub cpu: f64,
    pub memory: f64,
}

#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub nodes: usize,
    pub pods_created: usize,
    /// OpportunisticBatching: pods that took the next node of the previous pod's ranking.
    pub batch_hints: u64,
    /// What the attempts ended in (read through `Deref`: `counts.scheduled`).
    pub outcomes: observe::Counts,
}

impl std::ops::Deref for Counts {
    type Target = observe::Counts;
    fn deref(&self) -> &observe::Counts {
        &self.outcomes
    }
}

pub struct WorkloadResult {
    /// `TestCase/Workload`.
    pub name: String,
    pub status: Status,
    pub data_items: Vec<DataItem>,
    pub measurements: Vec<Measurement>,
    pub utilization: Vec<NodeUse>,
    pub counts: Counts,
    pub warnings: Vec<String>,
    /// Per field that changes upstream's decision and that ksched does not model, the nodes
    /// and pods that set it (each field also one of `warnings`).
    pub unmodelled_fields: BTreeMap<String, usize>,
    pub seconds: f64,
    pub simulated_seconds: f64,
}

impl WorkloadResult {
    pub fn new(name: String) -> WorkloadResult {
        WorkloadResult {
            name,
            status: Status::Passed,
            data_items: Vec::new(),
            measurements: Vec::new(),
            utilization: Vec::new(),
            counts: Counts::default(),
            warnings: Vec::new(),
            unmodelled_fields: BTreeMap::new(),
            seconds: 0.0,
            simulated_seconds: 0.0,
        }
    }
}

/// What a skip for an alpha feature ksched does not model says (`is_alpha_skip`): such a
/// skip is expected, unlike one for an op or object ksched should run. (The reasons of
/// `perf_workload::UNSUPPORTED_OPCODES` for such ops say it too.)
pub const ALPHA_SKIP_MARK: &str = "needs the alpha feature ";

/// Alpha feature gates whose behaviour ksched does not model: a workload turning one on is
/// skipped (what it measures is that behaviour). DRAExtendedResource is not one: it changes
/// nothing for pods whose extended resources nodes have, as in upstream's misc file; a
/// DeviceClass naming an extended resource is what ksched does not model (`unmodelled_object`).
/// Other gates ksched cannot turn on (StorageCapacityScoring...) run at their default with a
/// warning (`workload_gates`).
pub const UNMODELLED_ALPHA_GATES: &[(&str, &str)] = &[
    ("DRADeviceTaints", "device taints and tolerations"),
    ("DRADeviceTaintRules", "DeviceTaintRules"),
    ("DRAPartitionableDevices", "partitionable devices"),
    ("DRADeviceBindingConditions", "device binding conditions"),
    ("DRAConsumableCapacity", "consumable capacity"),
    ("NodeDeclaredFeatures", "nodes declaring features that pods need"),
    ("GenericWorkload", "Workload objects and pod groups"),
    ("GangScheduling", "pod groups scheduled together"),
];

/// Why ksched does not run these ops under these feature gates, if it does not: an object
/// using an alpha feature the workload turns on that ksched does not model. Today: a
/// DeviceClass naming an extended resource (`spec.extendedResourceName`) with
/// DRAExtendedResource on, which upstream schedules through the class's devices.
pub fn unmodelled_object(ops: &[ResolvedOp], gates: &BTreeMap<String, bool>) -> Option<String> {
    if gates.get("DRAExtendedResource") != Some(&true) {
        return None;
    }
    ops.iter().find_map(|r| {
        let OpSpec::CreateAny(o) = &r.op else { return None };
        let doc = template_doc(Path::new(&o.template_path)).ok()?;
        let kind = doc.get("kind").and_then(Value::as_str);
        let name = doc.pointer("/spec/extendedResourceName").and_then(Value::as_str).filter(|n| !n.is_empty());
        (kind == Some("DeviceClass") && name.is_some()).then(|| {
            format!(
                "op {} ({}): a DeviceClass with spec.extendedResourceName {ALPHA_SKIP_MARK}DRAExtendedResource (extended resources backed by DeviceClasses), which ksched does not model",
                r.template_index,
                r.op.opcode()
            )
        })
    })
}

/// Whether a skip reason is for an alpha feature ksched does not model.
pub fn is_alpha_skip(reason: &str) -> bool {
    reason.contains(ALPHA_SKIP_MARK)
}

/// Why ksched does not run a workload with these feature gates, if it does not: the first
/// unmodelled alpha gate turned on.
pub fn unmodelled_feature(gates: &BTreeMap<String, bool>) -> Option<String> {
    UNMODELLED_ALPHA_GATES
        .iter()
        .find(|(g, _)| gates.get(*g) == Some(&true))
        .map(|(g, what)| format!("{ALPHA_SKIP_MARK}{g} ({what}), which ksched does not model"))
}

/// Why ksched cannot run these ops, if it cannot: the first op it cannot honour.
pub fn unsupported_reason(ops: &[ResolvedOp]) -> Option<String> {
    for r in ops {
        let at = format!("op {} ({})", r.template_index, r.op.opcode());
        match &r.op {
            OpSpec::Unsupported { reason, .. } => return Some(format!("{at}: {reason}")),
            OpSpec::UpdateAny(o) => {
                let kind = match template_kind(Path::new(&o.template_path)) {
                    Ok(kind) => kind,
                    Err(e) => return Some(format!("{at}: {e}")),
                };
                // Nodes: the object or its status; pods: the object or an in-place resize.
                let allowed: &[&str] = match kind.as_str() {
                    "Node" => &["status"],
                    "Pod" => &["resize"],
                    _ => return Some(format!("{at}: updating objects of kind {kind} is not modelled")),
                };
                if let Some(s) = o.subresources.iter().find(|s| !allowed.contains(&s.as_str())) {
                    return Some(format!("{at}: updating the {s} subresource of a {kind} is not modelled"));
                }
            }
            OpSpec::CreateAny(o) => match template_kind(Path::new(&o.template_path)) {
                Ok(kind) if CREATE_ANY_KINDS.contains(&kind.as_str()) => {}
                Ok(kind) => return Some(format!("{at}: objects of kind {kind} are not modelled")),
                Err(e) => return Some(format!("{at}: {e}")),
            },
            OpSpec::Churn(o) => {
                for p in &o.template_paths {
                    match template_kind(Path::new(p)) {
                        Ok(kind) if ["Pod", "Node", "Service"].contains(&kind.as_str()) => {}
                        Ok(kind) => return Some(format!("{at}: churning objects of kind {kind} is not modelled")),
                        Err(e) => return Some(format!("{at}: {e}")),
                    }
                }
            }
            _ => {}
        }
    }
    None
}

const CREATE_ANY_KINDS: &[&str] = &[
    "Pod",
    "Node",
    "Namespace",
    "Service",
    "PriorityClass",
    "PodDisruptionBudget",
    "DaemonSet",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
];

fn template_kind(path: &Path) -> Result<String, String> {
    match template_doc(path) {
        Ok(v) => Ok(v.get("kind").and_then(Value::as_str).unwrap_or("").to_owned()),
        // A template that needs parameters the op passes is read for its top-level `kind:`
        // line instead.
        Err(e) => std::fs::read_to_string(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .lines()
            .find_map(|l| l.strip_prefix("kind:"))
            .map(|k| k.trim().to_owned())
            .ok_or(e),
    }
}

/// A template rendered for the first object (`Index` 0, `Count` 1), read as YAML.
fn template_doc(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let env = BTreeMap::from([("Index".to_owned(), TValue::Int(0)), ("Count".to_owned(), TValue::Int(1))]);
    let rendered = template::render(&text, &env).map_err(|e| format!("{}: {e}", path.display()))?;
    yaml_serde::from_str(&rendered).map_err(|e| format!("{}: {e}", path.display()))
}

struct PodRec {
    pod: Pod,
    /// The pod carries scheduling gates (the queue's SchedulingGates holds it).
    gated: bool,
    deleted: bool,
}

enum Bg {
    Churn(usize),
    Delete { rec: usize, batch: usize },
}

enum ChurnMade {
    Pod(usize),
    Node(Sym),
    Service(Sym, Sym),
}

struct Churn {
    recreate: bool,
    number: i64,
    ticks: i64,
    interval: Duration,
    namespace: String,
    templates: Vec<Value>,
    /// Recreate mode: per template, `number` slots of what was made.
    slots: Vec<Vec<Option<ChurnMade>>>,
}

struct Steady {
    namespace: String,
    template: Option<PathBuf>,
    params: BTreeMap<String, TValue>,
}

/// What a workload op waits for.
enum Wait {
    Idle,
    PodsBound(std::ops::Range<usize>),
    NamespacesBound(Vec<String>),
    Time(Timestamp),
    Deletes(usize),
}

struct Exec<'a> {
    opts: &'a Options,
    /// The caller's hooks (taken out while a run borrows the executor).
    hooks: Option<&'a mut dyn RunHooks>,
    result: WorkloadResult,
    recs: Vec<PodRec>,
    namespaces: BTreeSet<String>,
    events: BTreeMap<(Timestamp, u64), Bg>,
    seq: u64,
    churns: Vec<Churn>,
    collector: Option<Collector>,
    steady: Option<Steady>,
    /// Why the steady state's last pod that did not fit did not (for a note when none fits).
    steady_failure: Option<String>,
    /// Deletions still due, per deletePods op.
    deletes_left: Vec<usize>,
    templates: HashMap<PathBuf, (String, Option<Value>)>,
    threshold: f64,
    names: u64,
    /// Pods bound out of those the current op waits for (taken out while the driver runs).
    progress: Option<Progress>,
    /// Every node as created or last updated (what `updateAny` merges with).
    node_objects: HashMap<String, Value>,
    /// DaemonSets created by `createAny`: each node added later gets its daemon pod too.
    daemon_sets: Vec<(DaemonSetWatch, String)>,
    daemon_names: NameRng,
    /// Fields of the created objects that change upstream's decision and that ksched does not
    /// model, per field: one warning each at the end.
    unmodelled: Unmodelled,
}

/// The gates a workload runs under: `base` (`--feature-gates`) with the workload's
/// `featureGates` (its test case's, then its own) applied as upstream's harness applies them.
/// What ksched cannot apply is a warning saying what the workload runs with instead: an
/// unknown gate, a gate locked in v1.35, a value ksched does not model (the gate keeps its
/// default), a broken dependency (then `base` is used); a gate that changes nothing ksched
/// decides is said to have no effect.
pub fn workload_gates(base: FeatureGates, asked: &BTreeMap<String, bool>, warnings: &mut Vec<String>) -> FeatureGates {
    let mut gates = base;
    for (name, &on) in asked {
        let Some(f) = Feature::from_name(name) else {
            warnings.push(format!("feature gate {name}={on}: not known to ksched; ignored"));
            continue;
        };
        // The file's gates are the test case's own (as upstream's harness sets them for the
        // test), so they win over `--feature-gates`; a gate the command line moved off its
        // default is said to be overridden, never silently.
        if base.enabled(f) != f.info().default && base.enabled(f) != on {
            warnings.push(format!(
                "feature gate {name}={on}: the workload file's setting overrides --feature-gates {name}={}",
                base.enabled(f)
            ));
        }
        match gates.set(f, on) {
            Ok(()) if f.info().support == Support::NoDecisionEffect && on != f.info().default => warnings.push(
                format!("feature gate {name}={on}: changes how upstream's scheduler works, not what it decides; no effect in ksched"),
            ),
            Ok(()) => {}
            Err(e) => warnings.push(format!(
                "feature gate {name}={on}: {e}; the workload runs with {name}={}",
                gates.enabled(f)
            )),
        }
    }
    if let Err(e) = gates.validate() {
        warnings.push(format!("featureGates: {e}; the workload runs with the command line's gates"));
        return base;
    }
    gates
}

/// Runs workload `w` of test case `tc` (ops already resolved and checked supported).
pub fn run_workload(tc: &TestCase, w: &Workload, ops: &[ResolvedOp], opts: &Options) -> WorkloadResult {
    run_workload_hooked(tc, w, ops, opts, None, &mut NoHooks)
}

/// `run_workload` with `scheduler` (a profile and its queue timing) in place of the test
/// case's `schedulerConfigPath` when given, calling `hooks` around the run.
pub fn run_workload_hooked(
    tc: &TestCase,
    w: &Workload,
    ops: &[ResolvedOp],
    opts: &Options,
    scheduler: Option<(Profile, QueueConfig)>,
    hooks: &mut dyn RunHooks,
) -> WorkloadResult {
    let mut result = WorkloadResult::new(format!("{}/{}", tc.name, w.name));
    let gates = workload_gates(opts.gates, &tc.feature_gates(w), &mut result.warnings);
    // Every profile of the configuration schedules, each its schedulerName's pods (the
    // caller's profile alone when given).
    let config_path = opts.scheduler_config.as_ref().or(tc.scheduler_config_path.as_ref());
    let (mut profiles, queue_config) = match (scheduler, config_path) {
        (Some((profile, queue)), _) => (Profiles::from(profile), queue.with_feature_gates(gates)),
        (None, Some(p)) => match config::load_file_with(p, &config::Registry::in_tree_with(gates)) {
            Ok(cfg) => {
                result.warnings.extend(cfg.warnings.iter().map(|w| format!("{}: {w}", p.display())));
                let mut queue = cfg.queue_config();
                opts.api.apply(&mut queue);
                (cfg.all_profiles(), queue)
            }
            Err(e) => {
                result.status = Status::Failed(format!("schedulerConfigPath: {e}"));
                return result;
            }
        },
        (None, None) => {
            let mut p = Profile::default_profile_with(gates);
            p.parallelism = 1;
            let mut queue = QueueConfig::new().with_feature_gates(gates);
            opts.api.apply(&mut queue);
            (Profiles::from(p), queue)
        }
    };
    if let Some(n) = opts.parallelism {
        profiles.iter_mut().for_each(|p| p.parallelism = n);
    }
    profiles.iter_mut().for_each(|p| p.tie_break = opts.tie_break);
    crate::run::note_parallelism(profiles.primary().parallelism);
    let cache = Arc::new(Cache::upstream());
    let mut sim = Simulation::new(cache, profiles, queue_config, opts.seed);
    hooks.started(&mut sim);
    let mut ex = Exec {
        opts,
        hooks: Some(hooks),
        result,
        recs: Vec::new(),
        namespaces: BTreeSet::new(),
        events: BTreeMap::new(),
        seq: 0,
        churns: Vec::new(),
        collector: None,
        steady: None,
        steady_failure: None,
        deletes_left: Vec::new(),
        templates: HashMap::new(),
        threshold: w.threshold.value,
        names: 0,
        progress: Some(Progress::stderr(!opts.progress, 0, "{spinner} {msg} [{bar:30}] {pos}/{len} pods bound")),
        node_objects: HashMap::new(),
        daemon_sets: Vec::new(),
        daemon_names: NameRng::new(opts.seed),
        unmodelled: Unmodelled::default(),
    };
    let wall = Instant::now();
    let sim_start = sim.clock.now();
    let mut failure = None;
    for r in ops {
        ex.show_op(&sim, r);
        if let Err(e) = ex.op(&mut sim, r, w) {
            failure = Some(format!("op {} ({}): {e}", r.template_index, r.op.opcode()));
            break;
        }
    }
    if failure.is_none() && ex.collector.is_some() {
        failure = Some("startCollectingMetrics without a stopCollectingMetrics".into());
    }
    if let Some(h) = ex.hooks.take() {
        h.finished(&mut sim);
    }
    let mut res = ex.finish(&sim, wall, sim_start);
    if let Some(f) = failure {
        res.status = Status::Failed(f);
    } else if let Status::ThresholdMissed(m) = &res.status {
        if m.is_empty() {
            res.status = Status::Passed;
        }
    }
    res
}

impl Exec<'_> {
    /// Points the progress bar at op `r`: the pods it creates, or (a barrier) all pods so far.
    fn show_op(&mut self, sim: &Simulation, r: &ResolvedOp) {
        if self.progress.as_ref().is_none_or(Progress::is_hidden) {
            return;
        }
        let msg = format!("{} op {} ({})", self.result.name, r.template_index, r.op.opcode());
        let bound = match &r.op {
            OpSpec::Barrier(_) => self.recs.iter().filter(|rec| self.bound(sim, rec)).count(),
            _ => 0,
        };
        let Some(p) = self.progress.as_mut() else { return };
        match &r.op {
            OpSpec::CreatePods(o) => p.restart(o.count.max(0) as u64, msg),
            OpSpec::Barrier(_) => {
                p.restart(self.recs.len() as u64, msg);
                p.inc(bound as u64);
            }
            _ => p.set_message(msg),
        }
    }

    /// Counts `fields` (a node's or pod's fields that change upstream's decision and that
    /// ksched does not model) for the workload's warnings, or refuses the first under
    /// `--strict`.
    fn unmodelled_fields(&mut self, fields: Vec<UnmodelledField>) -> Result<(), String> {
        for w in fields {
            if self.opts.strict {
                return Err(format!("{w}; {STRICT_REFUSAL}"));
            }
            self.unmodelled.add(w);
        }
        Ok(())
    }

    fn finish(mut self, sim: &Simulation, wall: Instant, sim_start: Timestamp) -> WorkloadResult {
        if let Some(p) = self.progress.as_mut() {
            p.finish();
        }
        self.result.warnings.extend(self.unmodelled.lines());
        self.result.unmodelled_fields = self.unmodelled.counts();
        self.result.seconds = wall.elapsed().as_secs_f64();
        self.result.simulated_seconds = sim.clock.now().saturating_since(sim_start).as_secs_f64();
        self.result.counts.batch_hints = sim.scheduler.batch_hints();
        self.result.utilization = node_utilization(&sim.cache);
        let violations = sim.cache.check_invariants();
        if let Some(v) = violations.first() {
            self.result.status = Status::Failed(format!("{} cache invariant violations, first: {v}", violations.len()));
        }
        self.result
    }

    fn op(&mut self, sim: &mut Simulation, r: &ResolvedOp, w: &Workload) -> Result<(), String> {
        match &r.op {
            OpSpec::CreateNodes(o) => self.create_nodes(sim, o, r.index),
            OpSpec::CreateNamespaces(o) => {
                for i in 0..o.count {
                    let name = format!("{}-{i}", o.prefix);
                    let labels = match &o.namespace_template_path {
                        Some(p) => {
                            let v = self.object(Path::new(p), i, o.count, &BTreeMap::new())?;
                            let ns: k::Namespace = serde_json::from_value(v).map_err(|e| format!("{p}: {e}"))?;
                            ns.metadata.labels.unwrap_or_default()
                        }
                        None => BTreeMap::new(),
                    };
                    self.ensure_namespace(sim, &name, Some(&labels));
                }
                Ok(())
            }
            OpSpec::CreatePods(o) => self.create_pods(sim, o, r.index, w),
            OpSpec::DeletePods(o) => {
                let targets: Vec<usize> = (0..self.recs.len())
                    .filter(|&i| {
                        let p = &self.recs[i];
                        !p.deleted
                            && p.pod.namespace.as_str() == o.namespace
                            && o.label_selector.iter().all(|(k, v)| p.pod.labels.get(Sym::new(k)) == Some(Sym::new(v)))
                    })
                    .collect();
                let batch = self.deletes_left.len();
                self.deletes_left.push(0);
                if o.delete_pods_per_second == 0 {
                    for i in targets {
                        self.delete_pod(sim, i);
                    }
                    return Ok(());
                }
                let step = Duration::from_secs(1) / o.delete_pods_per_second as u32;
                let now = sim.clock.now();
                self.deletes_left[batch] = targets.len();
                for (n, rec) in targets.into_iter().enumerate() {
                    self.push_event(now.saturating_add(step * (n as u32 + 1)), Bg::Delete { rec, batch });
                }
                if !o.skip_wait_to_completion {
                    self.drive(sim, Wait::Deletes(batch))?;
                }
                Ok(())
            }
            OpSpec::Churn(o) => self.start_churn(sim, o, r.index),
            OpSpec::Barrier(o) => {
                for ns in &o.namespaces {
                    if !self.namespaces.contains(ns) {
                        return Err(format!("namespaces: unknown namespace {ns}"));
                    }
                }
                if o.stage_requirement == "Attempted" {
                    return self.drive(sim, Wait::Idle);
                }
                self.drive(sim, Wait::NamespacesBound(o.namespaces.clone()))
            }
            OpSpec::Sleep(o) => {
                let d = o.duration.as_deref().map(parse_go_duration).transpose()?.unwrap_or_default();
                let t = sim.clock.now().saturating_add(d);
                self.drive(sim, Wait::Time(t))
            }
            OpSpec::StartCollectingMetrics(o) => {
                if self.collector.is_some() {
                    return Err("metrics collection is overlapping: a collector is already running".into());
                }
                let filter = PodFilter { namespaces: o.namespaces.clone(), labels: o.label_selector.clone() };
                self.collector = Some(
                    Collector::start(format!("{}/{}", self.result.name, o.name), filter)
                        .with_attempt_time(self.opts.attempt_time),
                );
                Ok(())
            }
            OpSpec::StopCollectingMetrics(_) => self.stop_collecting(w),
            OpSpec::CreateAny(o) => {
                let count = o.count.unwrap_or(1);
                let params = tparams(&o.template_params);
                for i in 0..count {
                    let v = self.object(Path::new(&o.template_path), i, count, &params)?;
                    self.create_any(sim, v, &o.namespace)?;
                }
                Ok(())
            }
            OpSpec::UpdateAny(o) => {
                let count = o.count.unwrap_or(1);
                let params = tparams(&o.template_params);
                // A resize replaces the pod's spec (its resources) as an update of it does.
                let status_only = o.subresources.iter().any(|s| s == "status");
                let step = (o.update_per_second > 0).then(|| Duration::from_secs(1) / o.update_per_second as u32);
                for i in 0..count {
                    if let (Some(step), true) = (step, i > 0) {
                        // Paced updates: the scheduler keeps working between them.
                        let t = sim.clock.now().saturating_add(step);
                        self.drive(sim, Wait::Time(t))?;
                    }
                    let v = self.object(Path::new(&o.template_path), i, count, &params)?;
                    self.update_any(sim, v, &o.namespace, status_only)?;
                }
                Ok(())
            }
            OpSpec::CreateResourceDriver(o) => self.create_resource_driver(sim, o),
            OpSpec::AllocResourceClaims(o) => self.alloc_resource_claims(sim, o),
            OpSpec::CheckPodScheduled(o) => self.check_pod_scheduled(sim, o),
            OpSpec::CreatePodSets(_) | OpSpec::Unsupported { .. } => {
                Err("not runnable (should have been unrolled or skipped)".into())
            }
        }
    }

    fn stop_collecting(&mut self, w: &Workload) -> Result<(), String> {
        let c = self.collector.take().ok_or("missing startCollectingMetrics before stopping")?;
        let (mut items, m) = c.finish();
        let misses = apply_threshold(&mut items, self.threshold, &w.threshold_metric_selector);
        if !misses.is_empty() {
            match &mut self.result.status {
                Status::ThresholdMissed(all) => all.extend(misses),
                s => *s = Status::ThresholdMissed(misses),
            }
        }
        self.result.data_items.extend(items);
        self.result.measurements.push(m);
        Ok(())
    }

    fn push_event(&mut self, t: Timestamp, e: Bg) {
        self.seq += 1;
        self.events.insert((t, self.seq), e);
    }

    fn ensure_namespace(&mut self, sim: &Simulation, name: &str, labels: Option<&BTreeMap<String, String>>) {
        let fresh = self.namespaces.insert(name.to_owned());
        if fresh || labels.is_some() {
            let mut l = Labels::new();
            for (k, v) in labels.into_iter().flatten() {
                l.insert(Sym::new(k), Sym::new(v));
            }
            sim.cache.edit_objects(|o| o.set_namespace(Sym::new(name), l));
        }
    }

    /// A template file rendered for object `index` of `count` (read and parsed once when it
    /// has no actions).
    fn object(
        &mut self,
        path: &Path,
        index: i64,
        count: i64,
        params: &BTreeMap<String, TValue>,
    ) -> Result<Value, String> {
        if !self.templates.contains_key(path) {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let parsed = if template::has_actions(&text) {
                None
            } else {
                Some(yaml_serde::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?)
            };
            self.templates.insert(path.to_path_buf(), (text, parsed));
        }
        let Some((text, parsed)) = self.templates.get(path) else { return Err("template cache".into()) };
        if let Some(v) = parsed {
            return Ok(v.clone());
        }
        let mut env = params.clone();
        env.insert("Index".into(), TValue::Int(index));
        env.insert("Count".into(), TValue::Int(count));
        let rendered = template::render(text, &env).map_err(|e| format!("{}: {e}", path.display()))?;
        yaml_serde::from_str(&rendered).map_err(|e| format!("{} (rendered for index {index}): {e}", path.display()))
    }

    /// metadata.name, or generateName plus a serial number.
    fn name_object(&mut self, v: &mut Value, fallback_prefix: &str) -> String {
        let meta = &v["metadata"];
        if let Some(n) = meta.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            return n.to_owned();
        }
        let prefix = meta.get("generateName").and_then(Value::as_str).unwrap_or(fallback_prefix).to_owned();
        self.names += 1;
        let name = format!("{prefix}{:05}", self.names);
        v["metadata"]["name"] = json!(name);
        name
    }

    fn create_nodes(&mut self, sim: &Simulation, o: &CreateNodesOp, index: usize) -> Result<(), String> {
        let params = tparams(&o.template_params);
        for i in 0..o.count {
            let mut v = match &o.node_template_path {
                Some(p) => self.object(Path::new(p), i, o.count, &params)?,
                None => default_node(index),
            };
            let name = self.name_object(&mut v, &format!("node-{index}-"));
            let labels = &mut v["metadata"]["labels"];
            if !labels.is_object() {
                *labels = json!({});
            }
            labels["kubernetes.io/hostname"] = json!(name);
            if let Some(s) = &o.label_node_prepare_strategy {
                let value = s.label_values.get(i as usize % s.label_values.len().max(1)).cloned().unwrap_or_default();
                labels[&s.label_key] = json!(value);
            }
            if let Some(s) = &o.unique_node_label_strategy {
                labels[&s.label_key] = json!(format!("{name}-uid"));
            }
            if let Some(s) = &o.node_allocatable_strategy {
                // The API server defaults allocatable to capacity; the strategy overrides entries.
                let status = &mut v["status"];
                if status.get("allocatable").is_none_or(|a| !a.is_object()) {
                    status["allocatable"] = status.get("capacity").cloned().unwrap_or_else(|| json!({}));
                }
                for (r, q) in &s.node_allocatable {
                    status["allocatable"][r] = json!(q);
                }
            }
            let node = self.add_node(sim, v)?;
            if let Some(s) = o.node_allocatable_strategy.as_ref().filter(|s| !s.csi_node_allocatable.is_empty()) {
                self.add_csi_node(sim, node, s)?;
            }
        }
        Ok(())
    }

    fn add_node(&mut self, sim: &Simulation, v: Value) -> Result<Sym, String> {
        let kn: k::Node = serde_json::from_value(v.clone()).map_err(|e| format!("node: {e}"))?;
        self.unmodelled_fields(node_unmodelled(&kn))?;
        let node = node_from_k8s(&kn).map_err(|e| e.to_string())?;
        let name = node.name;
        sim.cluster.add_node(node.clone()).map_err(|e| format!("node {name}: {e}"))?;
        self.node_objects.insert(name.to_string(), v);
        self.result.counts.nodes += 1;
        // The DaemonSet controller's reaction to the new node.
        for i in 0..self.daemon_sets.len() {
            self.create_daemon_pod(sim, i, &node)?;
        }
        Ok(name)
    }

    /// `nodeAllocatableStrategy.csiNodeAllocatable`: the node's CSINode, one driver per entry
    /// with its `allocatable` (upstream's node preparer creates the same object).
    fn add_csi_node(&mut self, sim: &Simulation, node: Sym, s: &NodeAllocatableStrategy) -> Result<(), String> {
        let drivers: Vec<Value> = s
            .csi_node_allocatable
            .iter()
            .map(|(driver, allocatable)| json!({"name": driver, "nodeID": node.as_str(), "allocatable": allocatable}))
            .collect();
        let v = json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {
                "name": node.as_str(),
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": s.migrated_plugins.join(",")}
            },
            "spec": {"drivers": drivers}
        });
        let c: kstorage::CSINode = serde_json::from_value(v)
            .map_err(|e| format!("nodeAllocatableStrategy.csiNodeAllocatable: CSINode {node}: {e}"))?;
        let c = csi_node_from_k8s(&c).map_err(|e| e.to_string())?;
        sim.cache.edit_objects(|o| o.storage.upsert_csi_node(c));
        sim.cluster.storage_changed(EventResource::CsiNode, ActionType::ADD, node.as_str());
        Ok(())
    }

    /// `persistentVolumeClaimTemplatePath` with `persistentVolumeTemplatePath`: pod `index`
    /// of the op gets its own claim `pvc-<index>` and volume `<namespace>-vol-<index>`, bound
    /// to each other (the volume's `claimRef`, the claim's `volumeName`, both phase Bound) as
    /// upstream's pod creator makes them; a CSI volume's handle is its name, an EBS volume's
    /// ID `vol-<index>`. The claim is as its template says otherwise: upstream's `pvc.yaml`
    /// carries the bind-completed annotation, without which VolumeBinding takes the claim for
    /// an unbound one. The pod's volumes become that one claim.
    fn create_pod_storage(
        &mut self,
        sim: &Simulation,
        pod: &mut Value,
        templates: (&Path, &Path),
        index: i64,
        count: i64,
        namespace: &str,
    ) -> Result<(), String> {
        let (claim_template, volume_template) = templates;
        let no_params = BTreeMap::new();
        let mut claim = self.object(claim_template, index, count, &no_params)?;
        let mut volume = self.object(volume_template, index, count, &no_params)?;
        let claim_name = format!("pvc-{index}");
        let volume_name = format!("{namespace}-vol-{index}");
        volume["metadata"]["name"] = json!(volume_name);
        if volume.pointer("/spec/csi").is_some_and(Value::is_object) {
            volume["spec"]["csi"]["volumeHandle"] = json!(volume_name);
        } else if volume.pointer("/spec/awsElasticBlockStore").is_some_and(Value::is_object) {
            volume["spec"]["awsElasticBlockStore"]["volumeID"] = json!(format!("vol-{index}"));
        }
        volume["spec"]["claimRef"] = json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace, "name": claim_name
        });
        volume["status"] = json!({"phase": "Bound"});
        claim["metadata"]["name"] = json!(claim_name);
        claim["metadata"]["namespace"] = json!(namespace);
        claim["spec"]["volumeName"] = json!(volume_name);
        claim["status"] = json!({"phase": "Bound"});
        let kv: k::PersistentVolume = serde_json::from_value(volume)
            .map_err(|e| format!("{}: persistentvolume {volume_name}: {e}", volume_template.display()))?;
        let kc: k::PersistentVolumeClaim = serde_json::from_value(claim)
            .map_err(|e| format!("{}: persistentvolumeclaim {claim_name}: {e}", claim_template.display()))?;
        let pv = pv_from_k8s(&kv).map_err(|e| format!("{}: {e}", volume_template.display()))?;
        let pvc = pvc_from_k8s(&kc).map_err(|e| format!("{}: {e}", claim_template.display()))?;
        sim.cache.edit_objects(|o| {
            o.storage.upsert_pvc(pvc);
            o.storage.upsert_pv(pv);
        });
        sim.cluster.storage_changed(EventResource::PersistentVolumeClaim, ActionType::ADD, &claim_name);
        sim.cluster.storage_changed(EventResource::PersistentVolume, ActionType::ADD, &volume_name);
        pod["spec"]["volumes"] = json!([{"name": "vol", "persistentVolumeClaim": {"claimName": claim_name}}]);
        Ok(())
    }

    /// `updateAny`: replaces node or pod `v` (by name) as an API update would.
    fn update_any(&mut self, sim: &Simulation, mut v: Value, namespace: &str, status_only: bool) -> Result<(), String> {
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
        let name = v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_owned();
        if name.is_empty() {
            return Err(format!("{kind}: metadata.name must be set (updateAny updates an existing object)"));
        }
        match kind.as_str() {
            "Node" => {
                let old = self.node_objects.get(&name).ok_or_else(|| format!("node {name:?} not found"))?;
                // Upstream's updateAny updates the object (or the subresources named), then its
                // status, with the same rendering: without subresources the node becomes the
                // template (metadata, spec and status); with `status`, only its status does.
                // The hostname label ksched gave it at creation (the kubelet's) stays.
                let merged = if status_only {
                    let mut m = old.clone();
                    m["status"] = v.get("status").cloned().unwrap_or(Value::Null);
                    m
                } else {
                    if let Some(host) = old.pointer("/metadata/labels/kubernetes.io~1hostname") {
                        let labels = &mut v["metadata"]["labels"];
                        if !labels.is_object() {
                            *labels = json!({});
                        }
                        if labels.get("kubernetes.io/hostname").is_none() {
                            labels["kubernetes.io/hostname"] = host.clone();
                        }
                    }
                    v
                };
                let kn: k::Node = serde_json::from_value(merged.clone()).map_err(|e| format!("node {name}: {e}"))?;
                self.unmodelled_fields(node_unmodelled(&kn))?;
                let node = node_from_k8s(&kn).map_err(|e| e.to_string())?;
                sim.cluster.update_node(node).map_err(|e| format!("node {name}: {e}"))?;
                self.node_objects.insert(name, merged);
                Ok(())
            }
            "Pod" => {
                let ns = if namespace.is_empty() { "default" } else { namespace };
                let ns_sym = Sym::new(ns);
                let i = self
                    .recs
                    .iter()
                    .rposition(|r| !r.deleted && r.pod.namespace == ns_sym && *r.pod.name == *name)
                    .ok_or_else(|| format!("pod {ns}/{name} not found"))?;
                v["metadata"]["namespace"] = json!(ns);
                go_case_fixups(&mut v);
                let kp: k::Pod = serde_json::from_value(v).map_err(|e| format!("pod {ns}/{name}: {e}"))?;
                self.unmodelled_fields(pod_unmodelled(&kp))?;
                let new = pod_from_k8s_with(&kp, &sim.queue.config().gates).map_err(|e| e.to_string())?;
                self.update_pod(sim, i, new)
            }
            other => Err(format!("objects of kind {other:?} cannot be updated")),
        }
    }

    /// Pod `i` becomes `new`: a pending pod is updated in the queue (which lets a gated pod
    /// whose last gate is gone in); a bound pod in the cache (its node kept), and the queue
    /// hears of it so parked pods it might help are requeued.
    fn update_pod(&mut self, sim: &Simulation, i: usize, new: Pod) -> Result<(), String> {
        let objects = sim.cache.objects();
        let new = ksched_sim::admission::admit_pod_priority(&objects, &new).map_err(|e| e.to_string())?;
        let Some(rec) = self.recs.get_mut(i) else { return Ok(()) };
        rec.gated = !new.scheduling_gates.is_empty();
        match sim.cache.get_pod(&rec.pod) {
            Some(current) => {
                let node = current.node_name.ok_or("bound pod without a node")?;
                let updated = new.with_node(node);
                sim.cache.update_pod(&current, &updated).map_err(|e| e.to_string())?;
                sim.queue.assigned_pod_updated(&current, &updated);
                rec.pod = updated;
            }
            None => {
                sim.queue.update(&rec.pod, new.clone()).map_err(|e| e.to_string())?;
                rec.pod = new;
            }
        }
        Ok(())
    }

    /// The pod DaemonSet `i` runs on `node`, created (when the controller would run one).
    fn create_daemon_pod(&mut self, sim: &Simulation, i: usize, node: &Node) -> Result<(), String> {
        let (watch, namespace) = &self.daemon_sets[i];
        let Some(created) = watch.pod_for(node, &mut self.daemon_names).map_err(|e| e.to_string())? else {
            return Ok(());
        };
        let namespace = namespace.clone();
        let v = serde_json::to_value(&created.pod).map_err(|e| format!("{}: {e}", created.controller))?;
        self.create_pod(sim, v, &namespace).map(|_| ())
    }

    fn create_pods(
        &mut self,
        sim: &mut Simulation,
        o: &CreatePodsOp,
        index: usize,
        w: &Workload,
    ) -> Result<(), String> {
        let namespace = o.namespace.clone().unwrap_or_else(|| format!("namespace-{index}"));
        self.ensure_namespace(sim, &namespace, None);
        let template = o.pod_template_path.as_ref().map(PathBuf::from);
        let params = tparams(&o.template_params);
        if o.collect_metrics {
            if self.collector.is_some() {
                return Err("metrics collection is overlapping: a collector is already running".into());
            }
            let filter = PodFilter { namespaces: vec![namespace.clone()], labels: BTreeMap::new() };
            self.collector = Some(
                Collector::start(format!("{}/{namespace}", self.result.name), filter)
                    .with_attempt_time(self.opts.attempt_time),
            );
        }
        let storage = match (&o.persistent_volume_claim_template_path, &o.persistent_volume_template_path) {
            (Some(claim), Some(volume)) => Some((PathBuf::from(claim), PathBuf::from(volume))),
            (Some(_), None) => {
                return Err("persistentVolumeTemplatePath: must be set with persistentVolumeClaimTemplatePath".into())
            }
            // Upstream reads the volume template only for a claim template.
            (None, _) => None,
        };
        let first = self.recs.len();
        for i in 0..o.count {
            let mut v = self.pod_object(template.as_deref(), i, o.count, &params)?;
            if let Some((claim, volume)) = &storage {
                self.create_pod_storage(sim, &mut v, (claim, volume), i, o.count, &namespace)?;
            }
            if o.signature_batch_size > 1 {
                v["metadata"]["labels"]["signature"] = json!(format!("signature-label-{}", i / o.signature_batch_size));
            }
            self.create_pod(sim, v, &namespace)?;
        }
        if let Some(c) = &mut self.collector {
            // Creation is not scheduling: the wall clock starts once the pods are queued.
            c.restart_clock();
        }
        if o.steady_state {
            let d = o.duration.as_deref().map(parse_go_duration).transpose()?.unwrap_or_default();
            self.steady = Some(Steady { namespace: namespace.clone(), template, params });
            let before = self.result.counts.scheduled;
            let t = sim.clock.now().saturating_add(d);
            let r = self.drive(sim, Wait::Time(t));
            self.steady = None;
            r?;
            if self.result.counts.scheduled == before {
                // Upstream's steady state ends after its duration whatever got scheduled; so
                // does ksched's, saying so.
                let why = self.steady_failure.take().map(|f| format!(" (last attempt: {f})")).unwrap_or_default();
                self.result.warnings.push(format!(
                    "op {index} (createPods): no pod of namespace {namespace} got scheduled during the steady state{why}"
                ));
            }
            self.steady_failure = None;
        } else if !o.skip_wait_to_completion {
            self.drive(sim, Wait::PodsBound(first..self.recs.len()))?;
        }
        if o.collect_metrics {
            self.stop_collecting(w)?;
        }
        Ok(())
    }

    fn pod_object(
        &mut self,
        template: Option<&Path>,
        i: i64,
        count: i64,
        params: &BTreeMap<String, TValue>,
    ) -> Result<Value, String> {
        match template {
            Some(p) => self.object(p, i, count, params),
            None => Ok(default_pod()),
        }
    }

    fn create_pod(&mut self, sim: &Simulation, mut v: Value, namespace: &str) -> Result<usize, String> {
        self.name_object(&mut v, "pod-");
        v["metadata"]["namespace"] = json!(namespace);
        go_case_fixups(&mut v);
        let kp: k::Pod = serde_json::from_value(v).map_err(|e| format!("pod: {e}"))?;
        self.unmodelled_fields(pod_unmodelled(&kp))?;
        let pod = pod_from_k8s_with(&kp, &sim.queue.config().gates).map_err(|e| e.to_string())?;
        self.ensure_namespace(sim, namespace, None);
        // A gated pod is queued like any other: the queue's SchedulingGates holds it.
        let gated = !pod.scheduling_gates.is_empty();
        let pod = sim.cluster.create_pod(pod).map_err(|e| e.to_string())?;
        self.recs.push(PodRec { pod, gated, deleted: false });
        self.result.counts.pods_created += 1;
        Ok(self.recs.len() - 1)
    }

    fn delete_pod(&mut self, sim: &Simulation, i: usize) {
        let Some(rec) = self.recs.get_mut(i) else { return };
        if rec.deleted {
            return;
        }
        rec.deleted = true;
        match sim.cache.get_pod(&rec.pod) {
            Some(current) => {
                sim.cluster.delete_bound_pod(&current);
            }
            None => sim.queue.delete(&rec.pod),
        }
    }

    fn create_any(&mut self, sim: &Simulation, mut v: Value, namespace: &str) -> Result<(), String> {
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
        match kind.as_str() {
            "Pod" => self.create_pod(sim, v, if namespace.is_empty() { "default" } else { namespace }).map(|_| ()),
            "Node" => {
                let name = self.name_object(&mut v, "node-");
                v["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
                self.add_node(sim, v).map(|_| ())
            }
            "Namespace" => {
                let name = self.name_object(&mut v, "ns-");
                let ns: k::Namespace = serde_json::from_value(v).map_err(|e| format!("namespace: {e}"))?;
                self.ensure_namespace(sim, &name, Some(&ns.metadata.labels.unwrap_or_default()));
                Ok(())
            }
            "Service" => {
                if namespace.is_empty() {
                    return Err("namespace not set, but Service is namespaced".into());
                }
                self.add_service(sim, v, namespace).map(|_| ())
            }
            "PriorityClass" => {
                self.name_object(&mut v, "pc-");
                let pc: kscheduling::PriorityClass =
                    serde_json::from_value(v).map_err(|e| format!("priorityclass: {e}"))?;
                let pc = priority_class_from_k8s(&pc).map_err(|e| e.to_string())?;
                sim.cache.edit_objects(|o| o.upsert_priority_class(pc));
                Ok(())
            }
            "PodDisruptionBudget" => {
                self.name_object(&mut v, "pdb-");
                v["metadata"]["namespace"] = json!(namespace);
                let pdb: kpolicy::PodDisruptionBudget = serde_json::from_value(v).map_err(|e| format!("pdb: {e}"))?;
                let pdb = pdb_from_k8s(&pdb).map_err(|e| e.to_string())?;
                sim.cache.edit_objects(|o| o.upsert_pdb(pdb));
                Ok(())
            }
            "DaemonSet" => {
                let name = self.name_object(&mut v, "ds-");
                let namespace = if namespace.is_empty() { "default" } else { namespace };
                v["metadata"]["namespace"] = json!(namespace);
                let ds: kapps::DaemonSet = serde_json::from_value(v).map_err(|e| format!("daemonset: {e}"))?;
                let uid = self.daemon_names.uid();
                let source =
                    ManifestSource { file: format!("daemonset {name}").into(), document: 1, line: None, item: None };
                self.daemon_sets.push((DaemonSetWatch { daemon_set: ds, uid, source }, namespace.to_owned()));
                // One pod on each node the cluster has now where the controller runs one.
                let snapshot = sim.cache.update_snapshot();
                let nodes: Vec<Node> =
                    (0..snapshot.num_nodes()).filter_map(|i| snapshot.node_at(i).map(|n| n.node().clone())).collect();
                for node in &nodes {
                    self.create_daemon_pod(sim, self.daemon_sets.len() - 1, node)?;
                }
                Ok(())
            }
            "DeviceClass" | "ResourceSlice" | "ResourceClaim" | "ResourceClaimTemplate" => {
                self.create_dra_object(sim, &kind, v, namespace)
            }
            other => Err(format!("objects of kind {other:?} are not modelled")),
        }
    }

    /// A resource.k8s.io object (any served version, read as v1), into the cluster's DRA
    /// objects; parked pods get a retry, as the object's Add event would give them.
    fn create_dra_object(&mut self, sim: &Simulation, kind: &str, mut v: Value, namespace: &str) -> Result<(), String> {
        use ksched_k8s::dra;
        let prefix = match kind {
            "DeviceClass" => "deviceclass-",
            "ResourceSlice" => "resourceslice-",
            "ResourceClaim" => "resourceclaim-",
            _ => "resourceclaimtemplate-",
        };
        self.name_object(&mut v, prefix);
        if matches!(kind, "ResourceClaim" | "ResourceClaimTemplate") {
            let namespace = if namespace.is_empty() { "default" } else { namespace };
            v["metadata"]["namespace"] = json!(namespace);
            self.ensure_namespace(sim, namespace, None);
        }
        let mut version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_owned();
        if version == "resource.k8s.io/v1alpha3" && matches!(kind, "ResourceClaim" | "ResourceClaimTemplate") {
            // Upstream's DRA folder, assembled from several commits, has claim templates of
            // v1alpha3, which v1.35's API server no longer serves; the shape is v1beta1's.
            let note = format!(
                "{kind}: apiVersion resource.k8s.io/v1alpha3 is no longer served; read as v1beta1 (the same shape)"
            );
            if !self.result.warnings.contains(&note) {
                self.result.warnings.push(note);
            }
            version = "resource.k8s.io/v1beta1".into();
        }
        if !dra::API_VERSIONS.contains(&version.as_str()) {
            return Err(format!("{kind}: apiVersion {version:?} is not one of {:?}", dra::API_VERSIONS));
        }
        dra::to_v1(kind, &version, &mut v);
        let err = |e: &dyn std::fmt::Display| format!("{kind}: {e}");
        // The queue hears each object as its informer would report it.
        let action = |existed: bool| if existed { ActionType::UPDATE } else { ActionType::ADD };
        match kind {
            "DeviceClass" => {
                // Upstream's API server drops this alpha field with DRAExtendedResource off;
                // a workload turning the gate on is skipped (`unmodelled_object`).
                if v.pointer("/spec/extendedResourceName").is_some() {
                    let note = "DeviceClass: spec.extendedResourceName ignored, as upstream's API server drops it with DRAExtendedResource off".to_owned();
                    if !self.result.warnings.contains(&note) {
                        self.result.warnings.push(note);
                    }
                }
                let c = serde_json::from_value(v).map_err(|e| err(&e))?;
                let c = dra::device_class_from_k8s(&c).map_err(|e| err(&e))?;
                let name = c.name;
                let existed = sim.cache.edit_objects(|o| {
                    let existed = o.dra.class(name).is_some();
                    o.dra.upsert_class(c);
                    existed
                });
                sim.cluster.storage_changed(EventResource::DeviceClass, action(existed), name.as_str());
            }
            "ResourceSlice" => {
                let c = serde_json::from_value(v).map_err(|e| err(&e))?;
                let c = dra::resource_slice_from_k8s(&c).map_err(|e| err(&e))?;
                let name = c.name;
                let existed = sim.cache.edit_objects(|o| {
                    let existed = o.dra.slices.iter().any(|s| s.name == name);
                    o.dra.upsert_slice(c);
                    existed
                });
                sim.cluster.storage_changed(EventResource::ResourceSlice, action(existed), name.as_str());
            }
            "ResourceClaim" => {
                let c = serde_json::from_value(v).map_err(|e| err(&e))?;
                let c = dra::resource_claim_from_k8s(&c).map_err(|e| err(&e))?;
                let change = sim.cache.edit_objects(|o| {
                    let old = o.dra.claim(c.namespace, c.name).cloned();
                    let key = (c.namespace, c.name);
                    o.dra.upsert_claim(c);
                    ksched_sim::dra::ClaimChange { old, new: o.dra.claims.get(&key).cloned() }
                });
                sim.cluster.claims_changed(vec![change]);
            }
            _ => {
                let c = serde_json::from_value(v).map_err(|e| err(&e))?;
                let c = dra::resource_claim_template_from_k8s(&c).map_err(|e| err(&e))?;
                sim.cache.edit_objects(|o| o.dra.upsert_template(c));
                sim.cluster.claim_templates_added();
            }
        }
        sim.queue.move_all_to_active();
        Ok(())
    }

    /// `createResourceDriver`: one ResourceSlice per node whose name matches the op's glob
    /// (in name order), as upstream's harness writes it: slice and pool named after the node,
    /// `maxClaimsPerNode` devices `instance-<i>` with the attributes `model` A100, `family` GPU,
    /// `driverVersion` 1.2.3, `dra.example.com/numa` i and 1Gi of `memory`. (Upstream's devices
    /// also carry binding conditions, which the API server drops while
    /// DRADeviceBindingConditions is off; a test case turning it on is skipped.)
    fn create_resource_driver(&mut self, sim: &Simulation, o: &CreateResourceDriverOp) -> Result<(), String> {
        let mut nodes = Vec::new();
        for name in self.node_objects.keys() {
            if glob_match(&o.nodes, name).map_err(|e| format!("nodes: {e}"))? {
                nodes.push(name.clone());
            }
        }
        nodes.sort();
        for node in nodes {
            let v = driver_slice(&o.driver_name, &node, o.max_claims_per_node);
            self.create_dra_object(sim, "ResourceSlice", v, "")?;
        }
        Ok(())
    }

    /// `allocResourceClaims`: each unallocated claim of the namespace (every namespace when
    /// empty), in namespace and name order, is allocated on the first node of a freshly
    /// shuffled node order (seeded) that can serve it, as upstream's op does without a pod.
    fn alloc_resource_claims(&mut self, sim: &Simulation, o: &AllocResourceClaimsOp) -> Result<(), String> {
        let snapshot = sim.cache.update_snapshot();
        let gates = ksched_engine::features::FeatureGates::default();
        let mut claims: Vec<_> = snapshot
            .objects()
            .dra
            .claims
            .values()
            .filter(|c| o.namespace.is_empty() || c.namespace.as_str() == o.namespace)
            .cloned()
            .collect();
        claims.sort_by(|a, b| (a.namespace.as_str(), a.name.as_str()).cmp(&(b.namespace.as_str(), b.name.as_str())));
        let mut nodes: Vec<Sym> = (0..snapshot.num_nodes()).filter_map(|i| snapshot.name_at(i)).collect();
        let mut rng = ksched_engine::util::rng::Rng::seed(self.opts.seed);
        let mut allocator =
            ksched_engine::framework::plugins::dynamic_resources::ClaimAllocator::new(&gates, &snapshot);
        let total = claims.len();
        let mut done = Vec::new();
        'claims: for (i, claim) in claims.iter().enumerate() {
            if claim.allocation.is_some() {
                continue;
            }
            for k in (1..nodes.len()).rev() {
                nodes.swap(k, rng.below(k as u64 + 1) as usize);
            }
            for &node in &nodes {
                if let Some(a) =
                    allocator.allocate(claim, node).map_err(|e| format!("allocate claim {}: {e}", claim.key()))?
                {
                    let mut c = (**claim).clone();
                    c.allocation = Some(a);
                    done.push(c);
                    continue 'claims;
                }
            }
            return Err(format!("could not allocate claim {i} out of {total}"));
        }
        let changes = sim.cache.edit_objects(|o| {
            let mut changes = Vec::with_capacity(done.len());
            for c in done {
                let key = (c.namespace, c.name);
                let old = o.dra.claims.get(&key).cloned();
                o.dra.upsert_claim(c);
                changes.push(ksched_sim::dra::ClaimChange { old, new: o.dra.claims.get(&key).cloned() });
            }
            changes
        });
        sim.cluster.claims_changed(changes);
        sim.queue.move_all_to_active();
        Ok(())
    }

    /// `checkPodScheduled`: with `expectedScheduled`, every pod of the namespace must be bound
    /// within `duration`; without, no pod of it may be bound after 5 s (or `duration`, if
    /// shorter), as upstream's stability check.
    fn check_pod_scheduled(&mut self, sim: &mut Simulation, o: &CheckPodScheduledOp) -> Result<(), String> {
        let d = o.duration.as_deref().map(parse_go_duration).transpose()?.unwrap_or_default();
        let in_ns = |ex: &Self, sim: &Simulation| -> (usize, usize, String) {
            let mut bound = 0;
            let mut total = 0;
            let mut first_unmet = String::new();
            for r in ex.recs.iter().filter(|r| !r.deleted && r.pod.namespace.as_str() == o.namespace) {
                total += 1;
                let b = ex.bound(sim, r);
                bound += usize::from(b);
                if first_unmet.is_empty() && b != o.expected_scheduled {
                    first_unmet = r.pod.key();
                }
            }
            (bound, total, first_unmet)
        };
        // The scheduler works on until then (whether the pods get bound sooner changes
        // nothing in the verdict).
        let wait = if o.expected_scheduled { d } else { d.min(Duration::from_secs(5)) };
        let t = sim.clock.now().saturating_add(wait);
        self.drive(sim, Wait::Time(t))?;
        let (bound, total, first) = in_ns(self, sim);
        let ok = if o.expected_scheduled { bound == total } else { bound == 0 };
        if ok {
            return Ok(());
        }
        Err(format!(
            "{bound} of {total} pods of namespace {} are scheduled, expected {}, e.g. {first}",
            o.namespace,
            if o.expected_scheduled { "all" } else { "none" }
        ))
    }

    fn add_service(&mut self, sim: &Simulation, mut v: Value, namespace: &str) -> Result<(Sym, Sym), String> {
        let name = self.name_object(&mut v, "service-");
        self.ensure_namespace(sim, namespace, None);
        let svc: k::Service = serde_json::from_value(v).map_err(|e| format!("service: {e}"))?;
        let mut selector = Labels::new();
        for (k, val) in svc.spec.and_then(|s| s.selector).unwrap_or_default() {
            selector.insert(Sym::new(&k), Sym::new(&val));
        }
        let (ns, name) = (Sym::new(namespace), Sym::new(&name));
        sim.cache.edit_objects(|o| o.upsert_service(Service { namespace: ns, name, selector }));
        sim.queue.move_all_to_active();
        Ok((ns, name))
    }

    fn start_churn(&mut self, sim: &Simulation, o: &ChurnOp, index: usize) -> Result<(), String> {
        let namespace = o.namespace.clone().unwrap_or_else(|| format!("namespace-{index}"));
        self.ensure_namespace(sim, &namespace, None);
        let mut templates = Vec::new();
        for p in &o.template_paths {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))?;
            templates.push(yaml_serde::from_str::<Value>(&text).map_err(|e| format!("{p}: {e}"))?);
        }
        let interval =
            Duration::from_millis(if o.interval_milliseconds == 0 { 500 } else { o.interval_milliseconds as u64 });
        let slots = (0..templates.len()).map(|_| (0..o.number).map(|_| None).collect()).collect();
        self.churns.push(Churn {
            recreate: o.mode == "recreate",
            number: o.number,
            ticks: 0,
            interval,
            namespace,
            templates,
            slots,
        });
        let t = sim.clock.now().saturating_add(interval);
        self.push_event(t, Bg::Churn(self.churns.len() - 1));
        Ok(())
    }

    fn churn_tick(&mut self, sim: &Simulation, c: usize, now: Timestamp) -> Result<(), String> {
        let Some(ch) = self.churns.get_mut(c) else { return Ok(()) };
        let (recreate, number, tick, ns) = (ch.recreate, ch.number, ch.ticks, ch.namespace.clone());
        ch.ticks += 1;
        let templates = ch.templates.clone();
        for (t, v) in templates.into_iter().enumerate() {
            let slot = if recreate { (tick % number.max(1)) as usize } else { 0 };
            if recreate {
                let made = self
                    .churns
                    .get_mut(c)
                    .and_then(|ch| ch.slots.get_mut(t))
                    .and_then(|s| s.get_mut(slot))
                    .and_then(Option::take);
                if let Some(m) = made {
                    self.churn_delete(sim, m);
                    continue;
                }
            }
            let made = match v.get("kind").and_then(Value::as_str) {
                Some("Pod") => ChurnMade::Pod(self.create_pod(sim, v, &ns)?),
                Some("Node") => {
                    let mut v = v;
                    let name = self.name_object(&mut v, "node-churn-");
                    v["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
                    ChurnMade::Node(self.add_node(sim, v)?)
                }
                Some("Service") => {
                    let (a, b) = self.add_service(sim, v, &ns)?;
                    ChurnMade::Service(a, b)
                }
                other => return Err(format!("churn: kind {other:?} is not modelled")),
            };
            if recreate {
                if let Some(s) = self.churns.get_mut(c).and_then(|ch| ch.slots.get_mut(t)).and_then(|s| s.get_mut(slot))
                {
                    *s = Some(made);
                }
            }
        }
        let more = recreate || number == 0 || tick + 1 < number;
        if more {
            let interval = self.churns.get(c).map(|ch| ch.interval).unwrap_or_default();
            self.push_event(now.saturating_add(interval), Bg::Churn(c));
        }
        Ok(())
    }

    fn churn_delete(&mut self, sim: &Simulation, m: ChurnMade) {
        match m {
            ChurnMade::Pod(i) => self.delete_pod(sim, i),
            ChurnMade::Node(name) => {
                self.node_objects.remove(name.as_str());
                if sim.cluster.remove_node(name).is_ok() {
                    self.result.counts.nodes = self.result.counts.nodes.saturating_sub(1);
                }
            }
            ChurnMade::Service(ns, name) => {
                sim.cache.edit_objects(|o| o.remove_service(ns, name));
                sim.queue.move_all_to_active();
            }
        }
    }

    fn fire_due(&mut self, sim: &Simulation) -> Result<(), String> {
        let now = sim.clock.now();
        while let Some(entry) = self.events.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((t, _), e) = entry.remove_entry();
            match e {
                Bg::Churn(c) => self.churn_tick(sim, c, t)?,
                Bg::Delete { rec, batch } => {
                    self.delete_pod(sim, rec);
                    if let Some(n) = self.deletes_left.get_mut(batch) {
                        *n = n.saturating_sub(1);
                    }
                }
            }
        }
        Ok(())
    }

    fn bound(&self, sim: &Simulation, rec: &PodRec) -> bool {
        rec.deleted || sim.cache.get_pod(&rec.pod).is_some_and(|p| p.node_name.is_some())
    }

    fn satisfied(&self, sim: &Simulation, u: &Wait) -> bool {
        match u {
            Wait::Idle => true,
            Wait::PodsBound(r) => self.recs.get(r.clone()).is_some_and(|recs| recs.iter().all(|p| self.bound(sim, p))),
            Wait::NamespacesBound(ns) => self
                .recs
                .iter()
                .filter(|p| !p.gated && (ns.is_empty() || ns.iter().any(|n| n == p.pod.namespace.as_str())))
                .all(|p| self.bound(sim, p)),
            Wait::Time(t) => sim.clock.now() >= *t,
            Wait::Deletes(b) => self.deletes_left.get(*b).is_none_or(|n| *n == 0),
        }
    }

    fn unmet(&self, sim: &Simulation, u: &Wait) -> String {
        let pending = |recs: &mut dyn Iterator<Item = &PodRec>| {
            let left: Vec<&PodRec> = recs.filter(|p| !self.bound(sim, p)).collect();
            let gated = left.iter().filter(|p| p.gated).count();
            let first = left.first().map(|p| p.pod.key()).unwrap_or_default();
            format!("{} pods never got scheduled ({gated} of them gated), e.g. {first}", left.len())
        };
        match u {
            Wait::PodsBound(r) => pending(&mut self.recs.get(r.clone()).unwrap_or_default().iter()),
            Wait::NamespacesBound(ns) => pending(
                &mut self.recs.iter().filter(|p| ns.is_empty() || ns.iter().any(|n| n == p.pod.namespace.as_str())),
            ),
            _ => "the condition was not met".into(),
        }
    }

    /// Schedules on the driver, moving the simulated clock, until `wait` holds. The workload
    /// is the run's event source (background events, steady-state replacement, outcome
    /// counting); the collector, if one is running, observes. Never inlined: `ksched gate
    /// --workload` counts the instructions inside it.
    #[inline(never)]
    fn drive(&mut self, sim: &mut Simulation, wait: Wait) -> Result<(), String> {
        let until = match wait {
            Wait::Time(t) => Until::Time(t),
            _ => Until::SourcesDone,
        };
        let opts = RunOptions { attempt_cost: Some(self.opts.attempt_cost), wait_limit: Some(WAIT_LIMIT) };
        let mut collector = self.collector.take();
        let mut hooks = self.hooks.take();
        let slowdown = self.opts.slowdown;
        // Read once: the measured phase pays one branch per attempt when both are off.
        let after = slowdown > 0 || crate::probe::counted_clock();
        let mut progress = self.progress.take();
        let stop = {
            let mut record = |o: &CycleOutcome, ns: u64| {
                if after {
                    crate::synth::after_attempt(slowdown);
                }
                if let Some(c) = collector.as_mut() {
                    c.record(o, ns);
                }
                if let Some(h) = hooks.as_mut() {
                    h.attempt(o, ns);
                }
                if let (Some(p), CycleOutcome::Scheduled { .. }) = (progress.as_mut(), o) {
                    p.inc(1);
                }
            };
            let mut source = Source { ex: self, wait: &wait };
            sim.run(until, &opts, &mut [&mut source], &mut [&mut record])
        };
        self.collector = collector;
        self.hooks = hooks;
        self.progress = progress;
        match stop {
            Ok(Stop::Met) => Ok(()),
            Ok(Stop::Stuck) => Err(self.unmet(sim, &wait)),
            Err(RunError::WaitLimit(d)) => {
                Err(format!("timed out after {} simulated seconds: {}", d.as_secs(), self.unmet(sim, &wait)))
            }
            Err(RunError::Source(e)) => Err(e),
        }
    }

    fn on_outcome(&mut self, sim: &Simulation, outcome: &CycleOutcome) -> Result<(), String> {
        self.result.counts.outcomes.record(outcome);
        if let (CycleOutcome::Unschedulable { pod, error, .. }, Some(s)) = (outcome, &self.steady) {
            if pod.namespace.as_str() == s.namespace {
                self.steady_failure = Some(format!("pod {}: {error}", pod.key()));
            }
        }
        if let (CycleOutcome::Scheduled { pod, .. }, Some(s)) = (outcome, &self.steady) {
            if pod.namespace.as_str() == s.namespace {
                // Steady state: every pod scheduled in the namespace is deleted and replaced
                // by a new one.
                let (template, params, namespace) = (s.template.clone(), s.params.clone(), s.namespace.clone());
                if let Some(i) = self.recs.iter().rposition(|r| r.pod.uid == pod.uid) {
                    self.delete_pod(sim, i);
                }
                let v = self.pod_object(template.as_deref(), 0, 1, &params)?;
                self.create_pod(sim, v, &namespace)?;
            }
        }
        Ok(())
    }
}

/// The workload as the driver's event source while one wait runs.
struct Source<'e, 'a> {
    ex: &'e mut Exec<'a>,
    wait: &'e Wait,
}

impl EventSource for Source<'_, '_> {
    fn next_event(&self) -> Option<Timestamp> {
        self.ex.events.first_key_value().map(|(k, _)| k.0)
    }

    fn fire_due(&mut self, sim: &mut Simulation) -> Result<(), String> {
        self.ex.fire_due(sim)
    }

    fn after_attempt(&mut self, sim: &mut Simulation, outcome: &CycleOutcome) -> Result<(), String> {
        self.ex.on_outcome(sim, outcome)
    }

    fn done(&self, sim: &Simulation) -> bool {
        self.ex.satisfied(sim, self.wait)
    }
}

/// Requested / allocatable of every node in the cache.
pub fn node_utilization(cache: &Cache) -> Vec<NodeUse> {
    let frac = |a: i64, b: i64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    cache
        .update_snapshot()
        .iter()
        .map(|n| NodeUse {
            cpu: frac(n.requested().milli_cpu, n.allocatable().milli_cpu),
            memory: frac(n.requested().memory, n.allocatable().memory),
        })
        .collect()
}

fn tparams(tp: &BTreeMap<String, Value>) -> BTreeMap<String, TValue> {
    tp.iter().filter_map(|(k, v)| TValue::from_json(v).map(|t| (k.clone(), t))).collect()
}

/// The ResourceSlice upstream's `createResourceDriver` writes for `node` (see
/// `create_resource_driver`), as a v1 object.
fn driver_slice(driver: &str, node: &str, devices: i64) -> Value {
    let devices: Vec<Value> = (0..devices)
        .map(|i| {
            json!({
                "name": format!("instance-{i}"),
                "attributes": {
                    "model": {"string": "A100"},
                    "family": {"string": "GPU"},
                    "driverVersion": {"version": "1.2.3"},
                    "dra.example.com/numa": {"int": i},
                },
                "capacity": {"memory": {"value": "1Gi"}},
            })
        })
        .collect();
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": devices,
        }
    })
}

/// Upstream's node when an op names no template (its node preparer's base node).
fn default_node(op_index: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"generateName": format!("node-{op_index}-")},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running"
        }
    })
}

/// Upstream's pod when neither the op nor the test case names a template (`makeBasePod`).
fn default_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {"containers": [{
            "name": "pause", "image": "registry.k8s.io/pause:3.10.1",
            "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "100m", "memory": "500Mi"}, "requests": {"cpu": "100m", "memory": "500Mi"}}
        }]}
    })
}

/// Go's JSON decoding matches field names case-insensitively; upstream's
/// pod-with-node-inclusion-policy.yaml relies on it (`NodeAffinityPolicy`, `NodeTaintsPolicy`
/// in a topology spread constraint). serde does not, so those keys are put in their API case.
fn go_case_fixups(pod: &mut Value) {
    const SPREAD_FIELDS: &[&str] = &[
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    ];
    let Some(list) = pod.pointer_mut("/spec/topologySpreadConstraints").and_then(Value::as_array_mut) else { return };
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        let keys: Vec<String> = c.keys().cloned().collect();
        for key in keys {
            if let Some(api) = SPREAD_FIELDS.iter().find(|f| f.eq_ignore_ascii_case(&key) && **f != key) {
                if !c.contains_key(*api) {
                    if let Some(v) = c.remove(&key) {
                        c.insert((*api).to_owned(), v);
                    }
                }
            }
        }
    }
}
