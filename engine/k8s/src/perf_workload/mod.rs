//! Upstream scheduler_perf workload files (`test/integration/scheduler_perf/*/performance-config.yaml`),
//! read unchanged.
//!
//! A file is a YAML list of test cases. Each test case has a `workloadTemplate` (a list of ops,
//! each selected by its `opcode`) and `workloads` that instantiate it with `params`; an op
//! names a parameter with a `$` (`countParam: $initNodes`). Decoding is strict as upstream's
//! (`yaml.UnmarshalStrict` plus `DisallowUnknownFields` per op): an unknown field is an error.
//!
//! Loading ([`load_file`] / [`parse`]) checks what upstream checks before running: unique
//! test case and workload names, at least one op and one workload, an op that collects
//! metrics, each op's own rules (`collectMetrics` with `skipWaitToCompletion`, churn modes,
//! barrier stages, ...), thresholds and their metric selectors. [`TestCase::resolve`] then
//! substitutes a workload's params (a missing param, a param of the wrong type and a param no
//! op uses are errors, as upstream's), unrolls `createPodSets`, and checks the counts (not
//! negative, not over [`LoadOptions::max_count`]).
//!
//! Every error names the file, the test case, the workload, the op (index and opcode) and the
//! field. Paths inside the file (templates, `schedulerConfigPath`) are relative to the file's
//! folder, as upstream's test binaries (which run in that folder) read them.
//!
//! Object templates are rendered with the Go `text/template` subset in [`template`].

pub mod funcs;
pub mod ops;
pub mod template;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

pub use ops::{
    parse_go_duration, AllocResourceClaimsOp, BarrierOp, CheckPodScheduledOp, ChurnOp, CreateAnyOp, CreateNamespacesOp,
    CreateNodesOp, CreatePodSetsOp, CreatePodsOp, CreateResourceDriverOp, DeletePodsOp, LabelNodePrepareStrategy,
    NodeAllocatableStrategy, OpSpec, SleepOp, StartCollectingMetricsOp, StopCollectingMetricsOp,
    UniqueNodeLabelStrategy, UpdateAnyOp, SUPPORTED_OPCODES, UNSUPPORTED_OPCODES,
};

/// Metric names scheduler_perf collects by default (a `thresholdMetricSelector` may name one
/// of them, or `SchedulingThroughput`).
pub const DEFAULT_COLLECTED_METRICS: &[&str] = &[
    "scheduler_framework_extension_point_duration_seconds",
    "scheduler_scheduling_attempt_duration_seconds",
    "scheduler_pod_scheduling_duration_seconds",
    "scheduler_plugin_execution_duration_seconds",
    "scheduler_queueing_hint_execution_duration_seconds",
    "scheduler_event_handling_duration_seconds",
];

/// Limits applied while loading.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// The largest count (nodes, pods, namespaces, pod sets, objects) one op may ask for.
    pub max_count: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { max_count: 1_000_000 }
    }
}

/// Where in a workload file an error is, and what is wrong (boxed: errors travel through
/// every parsing function).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct WorkloadError(Box<ErrorDetail>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorDetail {
    pub file: PathBuf,
    pub test_case: Option<String>,
    pub workload: Option<String>,
    /// `(index in workloadTemplate, opcode)`.
    pub op: Option<(usize, String)>,
    /// The field path inside the test case, workload or op (`countParam`, `workloads[1].threshold`).
    pub field: String,
    pub message: String,
}

impl std::ops::Deref for WorkloadError {
    type Target = ErrorDetail;
    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(t) = &self.test_case {
            write!(f, ": test case {t}")?;
        }
        if let Some(w) = &self.workload {
            write!(f, ", workload {w}")?;
        }
        if let Some((i, code)) = &self.op {
            write!(f, ", op {i} ({code})")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Builds errors for one place in the file.
#[derive(Clone, Debug)]
struct Ctx<'a> {
    file: &'a Path,
    test_case: Option<&'a str>,
    workload: Option<&'a str>,
    op: Option<(usize, &'a str)>,
}

impl<'a> Ctx<'a> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> WorkloadError {
        WorkloadError(Box::new(ErrorDetail {
            file: self.file.to_path_buf(),
            test_case: self.test_case.map(str::to_owned),
            workload: self.workload.map(str::to_owned),
            op: self.op.map(|(i, c)| (i, c.to_owned())),
            field: field.into(),
            message: message.into(),
        }))
    }

    fn op(&self, index: usize, opcode: &'a str) -> Ctx<'a> {
        Ctx { op: Some((index, opcode)), ..self.clone() }
    }
}

/// `thresholdMetricSelector`: which data item a workload's threshold applies to.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ThresholdMetricSelector {
    /// Compared with a data item's `Metric` label.
    pub name: String,
    /// Every one must equal the data item's label.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The data key compared (`Average`, `Perc50`, ...).
    #[serde(default)]
    pub data_bucket: String,
    /// The threshold is a maximum instead of a minimum.
    #[serde(default)]
    pub expect_lower: bool,
}

impl Default for ThresholdMetricSelector {
    fn default() -> Self {
        ThresholdMetricSelector {
            name: "SchedulingThroughput".into(),
            labels: BTreeMap::new(),
            data_bucket: "Average".into(),
            expect_lower: false,
        }
    }
}

/// `threshold`: one value, or values by topic name (ksched has no topics and uses `value`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Threshold {
    pub value: f64,
    pub by_topic: BTreeMap<String, f64>,
}

/// One instantiation of a test case's template.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: String,
    pub params: BTreeMap<String, Value>,
    pub labels: Vec<String>,
    pub threshold: Threshold,
    /// Defaulted as upstream: the workload's, else the test case's default, else
    /// SchedulingThroughput / Average.
    pub threshold_metric_selector: ThresholdMetricSelector,
    pub feature_gates: BTreeMap<String, bool>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TestCase {
    /// The file the test case came from.
    pub file: PathBuf,
    pub name: String,
    pub feature_gates: BTreeMap<String, bool>,
    /// Recorded, not used: ksched collects its own metrics.
    pub metrics_collector_config: Option<Value>,
    pub ops: Vec<OpSpec>,
    pub workloads: Vec<Workload>,
    /// Resolved against the file's folder.
    pub scheduler_config_path: Option<PathBuf>,
    pub default_pod_template_path: Option<PathBuf>,
    pub labels: Vec<String>,
}

/// A loaded workload file.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadFile {
    pub path: PathBuf,
    pub test_cases: Vec<TestCase>,
}

/// One op of a workload, its params substituted: counts are final, paths absolute (or
/// relative to the working directory when the file path was), `createPodSets` unrolled into
/// its `createPods` ops.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedOp {
    /// The op's index in `workloadTemplate` (for messages).
    pub template_index: usize,
    /// Upstream's index after unrolling: default namespaces are `namespace-<index>`.
    pub index: usize,
    pub op: OpSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TestCaseRaw {
    name: String,
    #[serde(default)]
    feature_gates: BTreeMap<String, bool>,
    metrics_collector_config: Option<Value>,
    #[serde(default)]
    workload_template: Vec<Value>,
    #[serde(default)]
    workloads: Vec<WorkloadRaw>,
    #[serde(default)]
    scheduler_config_path: String,
    default_pod_template_path: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    default_threshold_metric_selector: Option<ThresholdMetricSelector>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WorkloadRaw {
    name: String,
    #[serde(default)]
    params: BTreeMap<String, Value>,
    #[serde(default)]
    labels: Vec<String>,
    threshold: Option<Value>,
    threshold_metric_selector: Option<ThresholdMetricSelector>,
    #[serde(default)]
    feature_gates: BTreeMap<String, bool>,
}

/// Reads and checks a workload file; also checks that every file it refers to exists.
pub fn load_file(path: &Path) -> Result<WorkloadFile, WorkloadError> {
    let ctx = Ctx { file: path, test_case: None, workload: None, op: None };
    let text = std::fs::read_to_string(path).map_err(|e| ctx.err("", format!("cannot read: {e}")))?;
    let file = parse(&text, path)?;
    for tc in &file.test_cases {
        tc.check_files()?;
    }
    Ok(file)
}

/// Parses and checks a workload file's text; `path` names it in errors and anchors its
/// relative paths. Reads nothing from disk.
pub fn parse(text: &str, path: &Path) -> Result<WorkloadFile, WorkloadError> {
    let ctx = Ctx { file: path, test_case: None, workload: None, op: None };
    let value: Value = yaml_serde::from_str(text).map_err(|e| ctx.err("", format!("not valid YAML: {e}")))?;
    let Value::Array(items) = value else {
        return Err(ctx.err("", "want a list of test cases"));
    };
    if items.is_empty() {
        return Err(ctx.err("", "no test cases defined"));
    }
    let base = path.parent().unwrap_or(Path::new(""));
    let mut test_cases: Vec<TestCase> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let name = item.get("name").and_then(Value::as_str).map(str::to_owned);
        let label = name.clone().unwrap_or_else(|| format!("#{i}"));
        let tc_ctx = Ctx { test_case: Some(&label), ..ctx.clone() };
        let tc = test_case(item, base, &tc_ctx)?;
        if test_cases.iter().any(|t| t.name == tc.name) {
            return Err(tc_ctx.err("name", "not unique in the file"));
        }
        test_cases.push(tc);
    }
    Ok(WorkloadFile { path: path.to_path_buf(), test_cases })
}

fn decode<T: serde::de::DeserializeOwned>(value: Value, ctx: &Ctx<'_>, prefix: &str) -> Result<T, WorkloadError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let field = match (prefix.is_empty(), inner.as_str()) {
            (_, ".") => prefix.to_owned(),
            (true, p) => p.to_owned(),
            (false, p) => format!("{prefix}.{p}"),
        };
        ctx.err(field, e.into_inner().to_string())
    })
}

fn test_case(item: Value, base: &Path, ctx: &Ctx<'_>) -> Result<TestCase, WorkloadError> {
    let raw: TestCaseRaw = decode(item, ctx, "")?;
    let resolve = |p: &str| base.join(p);
    let mut ops = Vec::with_capacity(raw.workload_template.len());
    for (i, v) in raw.workload_template.into_iter().enumerate() {
        ops.push(op_spec(v, i, base, ctx)?);
    }
    if ops.is_empty() {
        return Err(ctx.err("workloadTemplate", "no ops defined"));
    }
    if raw.workloads.is_empty() {
        return Err(ctx.err("workloads", "no workloads defined"));
    }
    if !ops.iter().any(OpSpec::collects_metrics) {
        return Err(ctx.err("workloadTemplate", "no op in the workload template collects metrics"));
    }
    let mut workloads: Vec<Workload> = Vec::with_capacity(raw.workloads.len());
    for (i, w) in raw.workloads.into_iter().enumerate() {
        let wctx = Ctx { workload: Some(&w.name), ..ctx.clone() };
        let field = |f: &str| format!("workloads[{i}].{f}");
        if workloads.iter().any(|x| x.name == w.name) {
            return Err(wctx.err(field("name"), "not unique in the test case"));
        }
        let threshold = threshold(w.threshold.as_ref()).map_err(|m| wctx.err(field("threshold"), m))?;
        let selector =
            w.threshold_metric_selector.or_else(|| raw.default_threshold_metric_selector.clone()).unwrap_or_default();
        if selector.data_bucket.is_empty() {
            return Err(wctx.err(field("thresholdMetricSelector.dataBucket"), "must be set"));
        }
        workloads.push(Workload {
            name: w.name,
            params: w.params,
            labels: w.labels,
            threshold,
            threshold_metric_selector: selector,
            feature_gates: w.feature_gates,
        });
    }
    let tc = TestCase {
        file: ctx.file.to_path_buf(),
        name: raw.name,
        feature_gates: raw.feature_gates,
        metrics_collector_config: raw.metrics_collector_config,
        ops,
        workloads,
        scheduler_config_path: Some(raw.scheduler_config_path).filter(|p| !p.is_empty()).map(|p| resolve(&p)),
        default_pod_template_path: raw.default_pod_template_path.map(|p| resolve(&p)),
        labels: raw.labels,
    };
    Ok(tc)
}

fn threshold(v: Option<&Value>) -> Result<Threshold, String> {
    let t = match v {
        None => Threshold::default(),
        Some(Value::Number(n)) => Threshold { value: n.as_f64().unwrap_or(0.0), by_topic: BTreeMap::new() },
        Some(Value::Object(m)) => {
            let mut by_topic = BTreeMap::new();
            for (k, v) in m {
                let x = v.as_f64().ok_or_else(|| format!("topic {k}: want a number"))?;
                by_topic.insert(k.clone(), x);
            }
            Threshold { value: 0.0, by_topic }
        }
        Some(other) => return Err(format!("want a number or a map of topic name to number, got {other}")),
    };
    if t.value < 0.0 || t.by_topic.values().any(|x| *x < 0.0) {
        return Err("must not be negative".into());
    }
    Ok(t)
}

/// Decodes one op: its opcode first (leniently), then the whole object strictly into that
/// op's struct, then the op's own checks (counts may still be `$params`).
fn op_spec(mut v: Value, index: usize, base: &Path, ctx: &Ctx<'_>) -> Result<OpSpec, WorkloadError> {
    let opcode = match v.as_object_mut().and_then(|o| o.remove("opcode")) {
        Some(Value::String(s)) => s,
        Some(other) => return Err(ctx.op(index, "?").err("opcode", format!("want a string, got {other}"))),
        None => return Err(ctx.op(index, "?").err("opcode", "missing")),
    };
    // Upstream accepts any opcode (or none) on `createPodSets`' pod template.
    if let Some(Value::Object(o)) = v.get_mut("createPodsOp") {
        o.remove("opcode");
    }
    let octx = ctx.op(index, &opcode);
    if let Some((_, reason)) = UNSUPPORTED_OPCODES.iter().find(|(c, _)| *c == opcode) {
        return Ok(OpSpec::Unsupported { opcode, reason, params: param_refs(&v) });
    }
    let resolve = |p: &mut String| *p = base.join(&*p).to_string_lossy().into_owned();
    let resolve_opt = |p: &mut Option<String>| {
        if let Some(p) = p.as_mut() {
            resolve(p);
        }
    };
    let spec = match opcode.as_str() {
        "createNodes" => {
            let mut o: CreateNodesOp = decode(v, &octx, "")?;
            check_count(&octx, o.count, &o.count_param, "count")?;
            if let Some(s) = &o.label_node_prepare_strategy {
                if s.label_values.is_empty() {
                    return Err(octx.err("labelNodePrepareStrategy.labelValues", "must not be empty"));
                }
            }
            resolve_opt(&mut o.node_template_path);
            OpSpec::CreateNodes(o)
        }
        "createNamespaces" => {
            let mut o: CreateNamespacesOp = decode(v, &octx, "")?;
            check_count(&octx, o.count, &o.count_param, "count")?;
            resolve_opt(&mut o.namespace_template_path);
            OpSpec::CreateNamespaces(o)
        }
        "createPods" => {
            let mut o: CreatePodsOp = decode(v, &octx, "")?;
            check_create_pods(&octx, &o, "")?;
            resolve_create_pods(&mut o, base);
            OpSpec::CreatePods(o)
        }
        "createPodSets" => {
            let mut o: CreatePodSetsOp = decode(v, &octx, "")?;
            check_count(&octx, o.count, &o.count_param, "count")?;
            check_create_pods(&octx, &o.create_pods_op, "createPodsOp.")?;
            resolve_create_pods(&mut o.create_pods_op, base);
            OpSpec::CreatePodSets(o)
        }
        "deletePods" => {
            let o: DeletePodsOp = decode(v, &octx, "")?;
            if o.delete_pods_per_second < 0 {
                return Err(octx.err("deletePodsPerSecond", "must not be negative"));
            }
            OpSpec::DeletePods(o)
        }
        "churn" => {
            let mut o: ChurnOp = decode(v, &octx, "")?;
            if o.mode != "create" && o.mode != "recreate" {
                return Err(octx.err("mode", format!("invalid mode {:?}; must be one of create, recreate", o.mode)));
            }
            if o.number < 0 {
                return Err(octx.err("number", "must not be negative"));
            }
            if o.mode == "recreate" && o.number == 0 {
                return Err(octx.err("number", "cannot be 0 when mode is recreate"));
            }
            if o.template_paths.is_empty() {
                return Err(octx.err("templatePaths", "at least one template file needs to be given"));
            }
            if o.interval_milliseconds < 0 {
                return Err(octx.err("intervalMilliseconds", "must not be negative"));
            }
            o.template_paths.iter_mut().for_each(resolve);
            OpSpec::Churn(o)
        }
        "barrier" => {
            let o: BarrierOp = decode(v, &octx, "")?;
            if !["", "Scheduled", "Attempted"].contains(&o.stage_requirement.as_str()) {
                return Err(octx.err(
                    "stageRequirement",
                    format!("invalid stage {:?}; must be Scheduled or Attempted", o.stage_requirement),
                ));
            }
            OpSpec::Barrier(o)
        }
        "sleep" => {
            let o: SleepOp = decode(v, &octx, "")?;
            if let Some(d) = &o.duration {
                parse_go_duration(d).map_err(|m| octx.err("duration", m))?;
            }
            check_param_name(&octx, &o.duration_param, "durationParam")?;
            OpSpec::Sleep(o)
        }
        "startCollectingMetrics" => {
            let o: StartCollectingMetricsOp = decode(v, &octx, "")?;
            if o.namespaces.is_empty() {
                return Err(octx.err("namespaces", "cannot be empty"));
            }
            OpSpec::StartCollectingMetrics(o)
        }
        "stopCollectingMetrics" => OpSpec::StopCollectingMetrics(decode(v, &octx, "")?),
        "createAny" => {
            let mut o: CreateAnyOp = decode(v, &octx, "")?;
            check_any_template(&octx, &o.template_path, o.count, &o.count_param)?;
            resolve(&mut o.template_path);
            OpSpec::CreateAny(o)
        }
        "createResourceDriver" => {
            let o: CreateResourceDriverOp = decode(fold_keys(v, ops::CREATE_RESOURCE_DRIVER_FIELDS), &octx, "")?;
            check_count(&octx, o.max_claims_per_node, &o.max_claims_per_node_param, "maxClaimsPerNode")?;
            if o.driver_name.is_empty() {
                return Err(octx.err("driverName", "must be set"));
            }
            if o.nodes.is_empty() {
                return Err(octx.err("nodes", "must be set"));
            }
            glob_match(&o.nodes, "").map_err(|m| octx.err("nodes", m))?;
            OpSpec::CreateResourceDriver(o)
        }
        "allocResourceClaims" => {
            OpSpec::AllocResourceClaims(decode(fold_keys(v, ops::ALLOC_RESOURCE_CLAIMS_FIELDS), &octx, "")?)
        }
        "checkPodScheduled" => {
            let o: CheckPodScheduledOp = decode(fold_keys(v, ops::CHECK_POD_SCHEDULED_FIELDS), &octx, "")?;
            if o.namespace.is_empty() {
                return Err(octx.err("namespace", "must be set"));
            }
            if let Some(d) = &o.duration {
                parse_go_duration(d).map_err(|m| octx.err("duration", m))?;
            }
            check_param_name(&octx, &o.duration_param, "durationParam")?;
            check_param_name(&octx, &o.scheduled_param, "scheduledParam")?;
            OpSpec::CheckPodScheduled(o)
        }
        "updateAny" => {
            let mut o: UpdateAnyOp = decode(v, &octx, "")?;
            check_any_template(&octx, &o.template_path, o.count, &o.count_param)?;
            if o.update_per_second < 0 {
                return Err(octx.err("updatePerSecond", "must not be negative"));
            }
            resolve(&mut o.template_path);
            OpSpec::UpdateAny(o)
        }
        other => {
            let known: Vec<&str> =
                SUPPORTED_OPCODES.iter().copied().chain(UNSUPPORTED_OPCODES.iter().map(|(c, _)| *c)).collect();
            return Err(octx.err("opcode", format!("unknown opcode {other:?}; known: {}", known.join(", "))));
        }
    };
    Ok(spec)
}

/// An op object with its keys spelled as `fields` spells them where they differ only in case:
/// Go's JSON decoding (upstream's) matches field names case-insensitively, and upstream's
/// DRA file writes `ScheduledParam`. Keys matching no field are kept (strict decoding then
/// names them).
fn fold_keys(mut v: Value, fields: &[&str]) -> Value {
    if let Some(o) = v.as_object_mut() {
        let keys: Vec<String> = o.keys().cloned().collect();
        for key in keys {
            let Some(field) = fields.iter().find(|f| f.eq_ignore_ascii_case(&key) && **f != key) else { continue };
            if !o.contains_key(*field) {
                if let Some(x) = o.remove(&key) {
                    o.insert((*field).to_owned(), x);
                }
            }
        }
    }
    v
}

/// The `$params` an op's fields name (`countParam: $n`, `ScheduledParam: $scheduled`).
fn param_refs(v: &Value) -> Vec<String> {
    let Some(o) = v.as_object() else { return Vec::new() };
    o.iter()
        .filter(|(k, _)| k.to_ascii_lowercase().ends_with("param"))
        .filter_map(|(_, x)| x.as_str().filter(|s| s.starts_with('$')).map(str::to_owned))
        .collect()
}

/// Go's `filepath.Match` on names without separators: `*` (any run), `?` (any one
/// character), `[...]` classes with ranges and `^` negation, backslash escapes. `Err` for a
/// malformed pattern (as Go's `ErrBadPattern`).
pub fn glob_match(pattern: &str, name: &str) -> Result<bool, String> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Checked whole first, as Go reports a bad pattern even when an earlier part decides.
    let mut i = 0;
    while i < p.len() {
        i = match p[i] {
            '[' => class_end(&p, i)?,
            '\\' if i + 1 >= p.len() => return Err(format!("bad pattern {pattern:?}: trailing backslash")),
            '\\' => i + 2,
            _ => i + 1,
        };
    }
    Ok(glob_at(&p, 0, &n, 0))
}

/// The index after the class starting at `p[start] == '['`.
fn class_end(p: &[char], start: usize) -> Result<usize, String> {
    let mut i = start + 1;
    if p.get(i) == Some(&'^') {
        i += 1;
    }
    let mut first = true;
    loop {
        match p.get(i) {
            None => return Err("bad pattern: unterminated [".into()),
            Some(']') if !first => return Ok(i + 1),
            Some('\\') => i += 2,
            Some(_) => i += 1,
        }
        first = false;
    }
}

fn class_matches(p: &[char], start: usize, c: char) -> bool {
    let mut i = start + 1;
    let negate = p.get(i) == Some(&'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while let Some(&x) = p.get(i) {
        if x == ']' && !first {
            break;
        }
        first = false;
        let lo = if x == '\\' {
            i += 1;
            p.get(i).copied().unwrap_or(x)
        } else {
            x
        };
        i += 1;
        let hi = if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|&y| y != ']') {
            i += 1;
            let y = if p[i] == '\\' {
                i += 1;
                p.get(i).copied().unwrap_or('\\')
            } else {
                p[i]
            };
            i += 1;
            y
        } else {
            lo
        };
        matched |= lo <= c && c <= hi;
    }
    matched != negate
}

fn glob_at(p: &[char], pi: usize, n: &[char], ni: usize) -> bool {
    let Some(&c) = p.get(pi) else { return ni == n.len() };
    match c {
        '*' => (ni..=n.len()).any(|k| glob_at(p, pi + 1, n, k)),
        '?' => ni < n.len() && glob_at(p, pi + 1, n, ni + 1),
        '[' => {
            let end = class_end(p, pi).unwrap_or(p.len());
            ni < n.len() && class_matches(p, pi, n[ni]) && glob_at(p, end, n, ni + 1)
        }
        '\\' => {
            let lit = p.get(pi + 1).copied().unwrap_or('\\');
            ni < n.len() && n[ni] == lit && glob_at(p, pi + 2, n, ni + 1)
        }
        _ => ni < n.len() && n[ni] == c && glob_at(p, pi + 1, n, ni + 1),
    }
}

fn resolve_create_pods(o: &mut CreatePodsOp, base: &Path) {
    for p in
        [&mut o.pod_template_path, &mut o.persistent_volume_template_path, &mut o.persistent_volume_claim_template_path]
            .into_iter()
            .flatten()
    {
        *p = base.join(&*p).to_string_lossy().into_owned();
    }
}

/// `createAny` / `updateAny`: a template, and a count or a count parameter.
fn check_any_template(ctx: &Ctx<'_>, template: &str, count: Option<i64>, param: &str) -> Result<(), WorkloadError> {
    if template.is_empty() {
        return Err(ctx.err("templatePath", "must be set"));
    }
    if let Some(c) = count {
        check_count(ctx, c, param, "count")?;
    }
    check_param_name(ctx, param, "countParam")
}

fn check_param_name(ctx: &Ctx<'_>, param: &str, field: &str) -> Result<(), WorkloadError> {
    if !param.is_empty() && !param.starts_with('$') {
        return Err(ctx.err(field, format!("{param:?} must name a parameter with a leading $")));
    }
    Ok(())
}

/// Upstream's `isValidCount` with parameters allowed: the count itself must not be negative
/// unless a `$param` gives it.
fn check_count(ctx: &Ctx<'_>, count: i64, param: &str, field: &str) -> Result<(), WorkloadError> {
    if param.is_empty() {
        if count < 0 {
            return Err(ctx.err(field, format!("{count} is negative")));
        }
        return Ok(());
    }
    check_param_name(ctx, param, &format!("{field}Param"))
}

fn check_create_pods(ctx: &Ctx<'_>, o: &CreatePodsOp, prefix: &str) -> Result<(), WorkloadError> {
    let f = |s: &str| format!("{prefix}{s}");
    check_count(ctx, o.count, &o.count_param, &f("count"))?;
    check_count(ctx, o.signature_batch_size, &o.signature_batch_size_param, &f("signatureBatchSize"))?;
    check_param_name(ctx, &o.count_multiplier_param, &f("countMultiplierParam"))?;
    check_param_name(ctx, &o.steady_state_param, &f("steadyStateParam"))?;
    check_param_name(ctx, &o.duration_param, &f("durationParam"))?;
    if o.collect_metrics && o.skip_wait_to_completion {
        return Err(ctx.err(f("collectMetrics"), "collectMetrics and skipWaitToCompletion cannot both be true"));
    }
    if o.skip_wait_to_completion && o.steady_state {
        return Err(ctx.err(f("steadyState"), "skipWaitToCompletion and steadyState cannot both be true"));
    }
    if let Some(d) = &o.duration {
        parse_go_duration(d).map_err(|m| ctx.err(f("duration"), m))?;
    }
    Ok(())
}

/// A workload's params with the set of names looked up so far.
struct Params<'a> {
    map: &'a BTreeMap<String, Value>,
    used: BTreeSet<String>,
}

impl Params<'_> {
    fn raw(&mut self, param: &str) -> Result<&Value, String> {
        let key = param.strip_prefix('$').unwrap_or(param);
        self.used.insert(key.to_owned());
        self.map.get(key).ok_or_else(|| format!("parameter {key} is undefined"))
    }

    /// A number param as an integer (a fraction is cut off, as upstream's `int(float64)`).
    fn int(&mut self, param: &str) -> Result<i64, String> {
        match self.raw(param)? {
            Value::Number(n) => Ok(n.as_i64().unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i64)),
            other => Err(format!("parameter {} has the wrong type: want a number, got {other}", &param[1..])),
        }
    }

    fn string(&mut self, param: &str) -> Result<String, String> {
        match self.raw(param)? {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!("parameter {} has the wrong type: want a string, got {other}", &param[1..])),
        }
    }

    fn bool(&mut self, param: &str) -> Result<bool, String> {
        match self.raw(param)? {
            Value::Bool(b) => Ok(*b),
            other => Err(format!("parameter {} has the wrong type: want a bool, got {other}", &param[1..])),
        }
    }

    /// Template params whose string values start with `$` are replaced by the workload's.
    fn template_params(&mut self, tp: &mut BTreeMap<String, Value>) -> Result<(), String> {
        for v in tp.values_mut() {
            if let Some(name) = v.as_str().filter(|s| s.starts_with('$')).map(str::to_owned) {
                *v = self.raw(&name)?.clone();
            }
        }
        Ok(())
    }
}

impl TestCase {
    /// The metrics the test case collects: its `metricsCollectorConfig`'s, else upstream's
    /// default set.
    pub fn collected_metrics(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match &self.metrics_collector_config {
            Some(cfg) => Box::new(
                cfg.get("metrics").and_then(Value::as_object).into_iter().flat_map(|m| m.keys().map(String::as_str)),
            ),
            None => Box::new(DEFAULT_COLLECTED_METRICS.iter().copied()),
        }
    }

    /// Feature gates of a workload: the test case's, overridden by the workload's.
    pub fn feature_gates(&self, w: &Workload) -> BTreeMap<String, bool> {
        let mut g = self.feature_gates.clone();
        g.extend(w.feature_gates.iter().map(|(k, v)| (k.clone(), *v)));
        g
    }

    /// The ops ksched cannot run: `(template index, opcode, reason)`.
    pub fn unsupported_ops(&self) -> Vec<(usize, String, &'static str)> {
        self.ops
            .iter()
            .enumerate()
            .filter_map(|(i, o)| match o {
                OpSpec::Unsupported { opcode, reason, .. } => Some((i, opcode.clone(), *reason)),
                _ => None,
            })
            .collect()
    }

    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.name == name)
    }

    /// Checks that every file the test case refers to exists.
    pub fn check_files(&self) -> Result<(), WorkloadError> {
        let ctx = Ctx { file: &self.file, test_case: Some(&self.name), workload: None, op: None };
        let exists = |ctx: &Ctx<'_>, field: &str, p: &Path| {
            if p.is_file() {
                Ok(())
            } else {
                Err(ctx.err(field, format!("{}: no such file", p.display())))
            }
        };
        if let Some(p) = &self.scheduler_config_path {
            exists(&ctx, "schedulerConfigPath", p)?;
        }
        if let Some(p) = &self.default_pod_template_path {
            exists(&ctx, "defaultPodTemplatePath", p)?;
        }
        for (i, op) in self.ops.iter().enumerate() {
            let octx = ctx.op(i, op.opcode());
            let mut paths: Vec<(String, &str)> = Vec::new();
            match op {
                OpSpec::CreateNodes(o) => {
                    paths.extend(o.node_template_path.iter().map(|p| ("nodeTemplatePath".into(), p.as_str())))
                }
                OpSpec::CreateNamespaces(o) => {
                    paths.extend(o.namespace_template_path.iter().map(|p| ("namespaceTemplatePath".into(), p.as_str())))
                }
                OpSpec::CreatePods(o) => paths.extend(pod_paths(o, "")),
                OpSpec::CreatePodSets(o) => paths.extend(pod_paths(&o.create_pods_op, "createPodsOp.")),
                OpSpec::Churn(o) => paths.extend(
                    o.template_paths.iter().enumerate().map(|(j, p)| (format!("templatePaths[{j}]"), p.as_str())),
                ),
                OpSpec::CreateAny(o) => paths.push(("templatePath".into(), o.template_path.as_str())),
                OpSpec::UpdateAny(o) => paths.push(("templatePath".into(), o.template_path.as_str())),
                _ => {}
            }
            for (field, p) in paths {
                exists(&octx, &field, Path::new(p))?;
            }
        }
        Ok(())
    }

    /// The ops of workload `w` with its params substituted, `createPodSets` unrolled, and
    /// counts checked. Errors name the op and field; a param no op used is an error.
    pub fn resolve(&self, w: &Workload, opts: &LoadOptions) -> Result<Vec<ResolvedOp>, WorkloadError> {
        let ctx = Ctx { file: &self.file, test_case: Some(&self.name), workload: Some(&w.name), op: None };
        // Checked per workload, as upstream checks a workload when it runs: a file may target
        // a metric only some selected workloads collect.
        let selector = &w.threshold_metric_selector.name;
        if selector != "SchedulingThroughput" && !self.collected_metrics().any(|m| m == selector) {
            return Err(ctx.err(
                "thresholdMetricSelector.name",
                format!("the metric {selector} is targeted, but it is not collected during the test"),
            ));
        }
        let mut params = Params { map: &w.params, used: BTreeSet::new() };
        let mut out = Vec::with_capacity(self.ops.len());
        for (i, spec) in self.ops.iter().enumerate() {
            let octx = ctx.op(i, spec.opcode());
            let count = |field: &str, c: i64| -> Result<i64, WorkloadError> {
                if c < 0 {
                    return Err(octx.err(field, format!("{c} is negative")));
                }
                if c as u64 > opts.max_count {
                    return Err(octx.err(field, format!("{c} is over the limit of {}", opts.max_count)));
                }
                Ok(c)
            };
            let mut patched = spec.clone();
            match &mut patched {
                OpSpec::CreateNodes(o) => {
                    if !o.count_param.is_empty() {
                        o.count = params.int(&o.count_param).map_err(|m| octx.err("countParam", m))?;
                    }
                    o.count = count(if o.count_param.is_empty() { "count" } else { "countParam" }, o.count)?;
                    params.template_params(&mut o.template_params).map_err(|m| octx.err("templateParams", m))?;
                }
                OpSpec::CreateNamespaces(o) => {
                    if !o.count_param.is_empty() {
                        o.count = params.int(&o.count_param).map_err(|m| octx.err("countParam", m))?;
                    }
                    o.count = count(if o.count_param.is_empty() { "count" } else { "countParam" }, o.count)?;
                }
                OpSpec::CreatePods(o) => {
                    patch_create_pods(o, &mut params, &octx, "", &count, self)?;
                }
                OpSpec::CreatePodSets(o) => {
                    if !o.count_param.is_empty() {
                        o.count = params.int(&o.count_param).map_err(|m| octx.err("countParam", m))?;
                    }
                    let sets = count(if o.count_param.is_empty() { "count" } else { "countParam" }, o.count)?;
                    let mut template = o.create_pods_op.clone();
                    patch_create_pods(&mut template, &mut params, &octx, "createPodsOp.", &count, self)?;
                    for s in 0..sets {
                        let mut one = template.clone();
                        one.namespace = Some(format!("{}-{s}", o.namespace_prefix));
                        let index = out.len();
                        out.push(ResolvedOp { template_index: i, index, op: OpSpec::CreatePods(one) });
                    }
                    continue;
                }
                OpSpec::Sleep(o) => {
                    if !o.duration_param.is_empty() {
                        let d = params.string(&o.duration_param).map_err(|m| octx.err("durationParam", m))?;
                        parse_go_duration(&d).map_err(|m| octx.err("durationParam", m))?;
                        o.duration = Some(d);
                    }
                }
                OpSpec::CreateAny(CreateAnyOp { count: n, count_param, template_params, .. })
                | OpSpec::UpdateAny(UpdateAnyOp { count: n, count_param, template_params, .. }) => {
                    if !count_param.is_empty() {
                        *n = Some(params.int(count_param).map_err(|m| octx.err("countParam", m))?);
                    }
                    if let Some(c) = *n {
                        count(if count_param.is_empty() { "count" } else { "countParam" }, c)?;
                    }
                    params.template_params(template_params).map_err(|m| octx.err("templateParams", m))?;
                }
                OpSpec::CreateResourceDriver(o) => {
                    if !o.max_claims_per_node_param.is_empty() {
                        o.max_claims_per_node = params
                            .int(&o.max_claims_per_node_param)
                            .map_err(|m| octx.err("maxClaimsPerNodeParam", m))?;
                    }
                    let field = if o.max_claims_per_node_param.is_empty() {
                        "maxClaimsPerNode"
                    } else {
                        "maxClaimsPerNodeParam"
                    };
                    o.max_claims_per_node = count(field, o.max_claims_per_node)?;
                }
                OpSpec::CheckPodScheduled(o) => {
                    if !o.scheduled_param.is_empty() {
                        o.expected_scheduled =
                            params.bool(&o.scheduled_param).map_err(|m| octx.err("scheduledParam", m))?;
                    }
                    if !o.duration_param.is_empty() {
                        let d = params.string(&o.duration_param).map_err(|m| octx.err("durationParam", m))?;
                        parse_go_duration(&d).map_err(|m| octx.err("durationParam", m))?;
                        o.duration = Some(d);
                    }
                }
                OpSpec::Unsupported { params: refs, .. } => {
                    // Not run, but its params are this op's, not unused ones.
                    for r in refs.iter() {
                        let _ = params.raw(r);
                    }
                }
                OpSpec::DeletePods(_)
                | OpSpec::Churn(_)
                | OpSpec::Barrier(_)
                | OpSpec::StartCollectingMetrics(_)
                | OpSpec::StopCollectingMetrics(_)
                | OpSpec::AllocResourceClaims(_) => {}
            }
            let index = out.len();
            out.push(ResolvedOp { template_index: i, index, op: patched });
        }
        let unused: Vec<&String> = w.params.keys().filter(|k| !params.used.contains(*k)).collect();
        if !unused.is_empty() {
            let names: Vec<&str> = unused.iter().map(|s| s.as_str()).collect();
            return Err(ctx.err(
                "params",
                format!("the parameters {} are defined but no op uses them (a typo?)", names.join(", ")),
            ));
        }
        Ok(out)
    }
}

fn pod_paths<'a>(o: &'a CreatePodsOp, prefix: &str) -> Vec<(String, &'a str)> {
    [
        ("podTemplatePath", &o.pod_template_path),
        ("persistentVolumeTemplatePath", &o.persistent_volume_template_path),
        ("persistentVolumeClaimTemplatePath", &o.persistent_volume_claim_template_path),
    ]
    .into_iter()
    .filter_map(|(f, p)| p.as_deref().map(|p| (format!("{prefix}{f}"), p)))
    .collect()
}

fn patch_create_pods(
    o: &mut CreatePodsOp,
    params: &mut Params<'_>,
    ctx: &Ctx<'_>,
    prefix: &str,
    count: &dyn Fn(&str, i64) -> Result<i64, WorkloadError>,
    tc: &TestCase,
) -> Result<(), WorkloadError> {
    let f = |s: &str| format!("{prefix}{s}");
    if !o.count_param.is_empty() {
        o.count = params.int(&o.count_param).map_err(|m| ctx.err(f("countParam"), m))?;
    }
    let count_field = if o.count_param.is_empty() { f("count") } else { f("countParam") };
    o.count = count(&count_field, o.count)?;
    if !o.count_multiplier_param.is_empty() {
        let m = params.int(&o.count_multiplier_param).map_err(|m| ctx.err(f("countMultiplierParam"), m))?;
        o.count = count(&f("countMultiplierParam"), o.count.saturating_mul(m))?;
    }
    if !o.signature_batch_size_param.is_empty() {
        o.signature_batch_size =
            params.int(&o.signature_batch_size_param).map_err(|m| ctx.err(f("signatureBatchSizeParam"), m))?;
    }
    if o.signature_batch_size == 0 {
        o.signature_batch_size = 1;
    }
    if o.signature_batch_size < 0 {
        return Err(ctx.err(f("signatureBatchSize"), "must not be negative"));
    }
    if !o.duration_param.is_empty() {
        let d = params.string(&o.duration_param).map_err(|m| ctx.err(f("durationParam"), m))?;
        parse_go_duration(&d).map_err(|m| ctx.err(f("durationParam"), m))?;
        o.duration = Some(d);
    }
    if !o.steady_state_param.is_empty() {
        o.steady_state = params.bool(&o.steady_state_param).map_err(|m| ctx.err(f("steadyStateParam"), m))?;
    }
    if o.steady_state {
        let d = o.duration.as_deref().map(parse_go_duration).transpose().map_err(|m| ctx.err(f("duration"), m))?;
        if d.is_none_or(|d| d.is_zero()) {
            return Err(ctx.err(f("duration"), "when creating pods in a steady state, the duration must be > 0"));
        }
    }
    params.template_params(&mut o.template_params).map_err(|m| ctx.err(f("templateParams"), m))?;
    if o.pod_template_path.is_none() {
        o.pod_template_path = tc.default_pod_template_path.as_ref().map(|p| p.to_string_lossy().into_owned());
    }
    Ok(())
}

/// Upstream's label filter: each entry must be present (`name` or `+name`) or absent
/// (`-name`); empty entries are ignored.
pub fn labels_enabled(filter: &[String], labels: &[String]) -> bool {
    filter.iter().flat_map(|f| f.split(',')).all(|sel| {
        let sel = sel.trim();
        if let Some(l) = sel.strip_prefix('-') {
            !labels.iter().any(|x| x == l)
        } else {
            let l = sel.strip_prefix('+').unwrap_or(sel);
            l.is_empty() || labels.iter().any(|x| x == l)
        }
    })
}
