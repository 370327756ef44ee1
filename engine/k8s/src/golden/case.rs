//! Reading a case folder: the objects (base and extended format) and upstream's decisions.
//!
//! Base files: `nodes.json`, `pods.json`, `decisions.jsonl`, optionally
//! `scheduler-config.json` and `meta.json`. Extended cases add, each optional (a JSON array):
//! `namespaces.json`, `priorityclasses.json`, `pdbs.json`, `services.json`, `running.json`
//! (pods bound from the start), `pvs.json`, `pvcs.json`, `storageclasses.json`,
//! `csinodes.json`, and DRA's `deviceclasses.json`, `resourceslices.json`, `resourceclaims.json`,
//! `resourceclaimtemplates.json`. Every object is read through k8s-openapi's types and converted like a
//! manifest; an error names the file, the array index and the field.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1 as k;
use k8s_openapi::api::policy::v1 as kpolicy;
use k8s_openapi::api::scheduling::v1 as kscheduling;
use k8s_openapi::api::storage::v1 as kstorage;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use serde::Deserialize;
use thiserror::Error;

use crate::{
    csi_node_from_k8s, namespace_from_k8s, node_from_k8s, pdb_from_k8s, pod_from_k8s_with, priority_class_from_k8s,
    pv_from_k8s, pvc_from_k8s, service_from_k8s, storage_class_from_k8s, ConvertError, NAMESPACE_NAME_LABEL,
};
use ksched_engine::api::{Labels, Node, Pod, Sym};
use ksched_engine::features::FeatureGates;
use ksched_engine::framework::{Profile, Profiles};
use ksched_engine::snapshot::ClusterObjects;
use ksched_engine::util::time::Timestamp;

/// A case folder could not be read.
#[derive(Debug, Error)]
#[error("{}: {message}", file.display())]
pub struct GoldenError {
    pub file: PathBuf,
    pub message: String,
}

/// One line of `decisions.jsonl`: upstream's first attempt at one pod, and what followed.
#[derive(Clone, Debug, Deserialize)]
pub struct Decision {
    pub seq: usize,
    /// `namespace/name`.
    pub pod: String,
    /// Where upstream bound the pod; `None` when its first attempt was unschedulable.
    pub node: Option<String>,
    #[serde(default)]
    pub feasible_nodes: Vec<String>,
    /// Rejected node → `"Plugin: reason[; reason]"`.
    #[serde(default)]
    pub rejected: BTreeMap<String, String>,
    /// Present when a PreFilter plugin rejected the pod outright.
    #[serde(default)]
    pub prefilter: Option<serde_json::Value>,
    /// Feasible node → plugin → weighted score, plus `_total`.
    #[serde(default)]
    pub scores: BTreeMap<String, BTreeMap<String, i64>>,
    #[serde(default)]
    pub best: Vec<String>,
    /// The FitError text of an unschedulable first attempt (without PostFilter's part).
    #[serde(default)]
    pub error: Option<String>,
    /// Extended cases: upstream's PostFilter outcome when the first attempt was unschedulable.
    #[serde(default)]
    pub preemption: Option<PreemptionRecord>,
    /// Extended cases: claims VolumeBinding bound for this pod at PreBind.
    #[serde(default)]
    pub volume_bindings: Vec<VolumeBindingRecord>,
    /// DRA cases: each of the pod's ResourceClaims after DynamicResources PreBind.
    #[serde(default)]
    pub claim_allocations: Vec<ClaimAllocationRecord>,
    /// Upstream's pick (its ScheduleResult's SuggestedHost).
    #[serde(default)]
    pub suggested_host: Option<String>,
    /// Upstream's ScheduleResult counts: nodes evaluated (feasible + rejected, 0 when no
    /// node was picked) and feasible.
    #[serde(default)]
    pub evaluated: Option<usize>,
    #[serde(default)]
    pub feasible: Option<usize>,
    /// Sampled cases: upstream's rotating start index when the cycle began.
    #[serde(default)]
    pub next_start_node_index: Option<usize>,
    /// Sampled cases: the feasible nodes upstream's own pass kept, in the order it found them.
    #[serde(default)]
    pub sampled_feasible: Option<Vec<String>>,
    /// Sampled cases: node → `"Plugin: reason"` for every node that pass visited and rejected.
    #[serde(default)]
    pub sampled_rejected: Option<BTreeMap<String, String>>,
    /// Sampled cases: the total score of each node of `sampled_feasible`, same order (absent
    /// with fewer than two).
    #[serde(default)]
    pub sampled_totals: Option<Vec<i64>>,
    /// Sampled cases: the nodes of `sampled_feasible` tied at the top of those totals.
    #[serde(default)]
    pub sampled_best: Option<Vec<String>>,
}

impl Decision {
    /// Upstream's pick: `suggested_host`, else the node it bound the pod to.
    pub fn pick(&self) -> Option<&str> {
        self.suggested_host.as_deref().or(self.node.as_deref())
    }
}

/// Upstream's PostFilter outcome for one pod.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PreemptionRecord {
    /// Every PostFilter plugin's message joined (empty when preemption succeeded).
    #[serde(default)]
    pub message: String,
    /// Node → the victims the dry run found there (upstream's order) and its PDB violations.
    #[serde(default)]
    pub candidates: BTreeMap<String, CandidateRecord>,
    /// Potential node → `"Plugin: reason"` where the dry run found no victim set.
    #[serde(default)]
    pub dry_run_rejected: BTreeMap<String, String>,
    /// The candidates still tied after pickOneNodeForPreemption's criteria.
    #[serde(default)]
    pub best_candidates: Vec<String>,
    pub nominated_node: Option<String>,
    /// The nominated node's victims, `namespace/name`.
    #[serde(default)]
    pub victims: Vec<String>,
    /// Where the retry bound the pod (after the victims were deleted).
    #[serde(default)]
    pub bound_node: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct CandidateRecord {
    #[serde(default)]
    pub victims: Vec<String>,
    #[serde(default)]
    pub pdb_violations: usize,
}

/// One claim bound by VolumeBinding PreBind.
#[derive(Clone, Debug, Deserialize)]
pub struct VolumeBindingRecord {
    /// `namespace/name` of the claim.
    pub claim: String,
    pub pv: String,
    /// A volume dynamically provisioned for the claim on `node`.
    #[serde(default)]
    pub provisioned: bool,
    #[serde(default)]
    pub node: Option<String>,
}

/// One ResourceClaim of a bound pod, read back after DynamicResources PreBind.
#[derive(Clone, Debug, Deserialize)]
pub struct ClaimAllocationRecord {
    /// `namespace/name`.
    pub claim: String,
    /// This pod's PreBind wrote the allocation (else it was allocated already).
    pub allocated: bool,
    #[serde(default)]
    pub results: Vec<DeviceResultRecord>,
    #[serde(default)]
    pub node_selector: Option<k::NodeSelector>,
    /// Pod names in `status.reservedFor` afterwards.
    #[serde(default)]
    pub reserved_for: Vec<String>,
}

/// One allocated device (`request` is `request/subrequest` for a `firstAvailable` one).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct DeviceResultRecord {
    pub request: String,
    pub driver: String,
    pub pool: String,
    pub device: String,
}

/// `meta.json`: what the replay reads of it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Meta {
    /// The case's mix (`preemption`, `volumes`, ...); extended cases only.
    #[serde(default)]
    pub mix: Option<String>,
    /// The recording's clock: pods bound during the case start at `clock + (seq + 1) s`.
    #[serde(default)]
    pub clock: Option<meta::Time>,
    /// The feature gates upstream ran with.
    #[serde(default)]
    pub feature_gates: std::collections::BTreeMap<String, bool>,
    /// The configuration the recording ran with (whatever `scheduler-config.json` says):
    /// percentageOfNodesToScore (0 = adaptive) and parallelism.
    #[serde(default, rename = "percentageOfNodesToScore")]
    pub percentage_of_nodes_to_score: Option<i64>,
    #[serde(default)]
    pub parallelism: Option<i64>,
}

impl Meta {
    /// The recording's gates over v1.35's defaults, and a warning for each one ksched cannot
    /// set as recorded (unknown, locked, or a value it does not model): its decisions may then
    /// differ from the recording's.
    /// Then the gates of `command_line` that differ from v1.35's defaults applied over
    /// them (`ksched golden --feature-gates`: what upstream would have decided with them).
    pub fn gates_over(&self, command_line: &FeatureGates) -> (FeatureGates, Vec<String>) {
        let mut gates = FeatureGates::default();
        let mut warnings = Vec::new();
        for (name, &on) in &self.feature_gates {
            if let Err(e) = gates.set_named(name, on) {
                warnings.push(format!("meta.json feature_gates: {e}"));
            }
        }
        for (f, on) in command_line.overrides() {
            if gates.enabled(f) != on {
                warnings.push(format!("--feature-gates {f}={on} over the recording's {f}={}", gates.enabled(f)));
                gates.set_unchecked(f, on);
            }
        }
        if let Err(e) = gates.validate() {
            warnings.push(format!("meta.json feature_gates: {e}"));
        }
        (gates, warnings)
    }
}

/// What the base format's README says every case without these `meta.json` fields ran with.
pub const RECORDED_PERCENTAGE: u32 = 100;
pub const RECORDED_PARALLELISM: usize = 1;

/// A loaded case.
pub struct GoldenCase {
    pub name: String,
    /// The mix from `meta.json`, else the folder name without its `-<seed>` suffix.
    pub mix: String,
    /// The profiles built from the case's `scheduler-config.json`, when it has one (upstream's
    /// configuration as recorded, every profile); replays use them instead of the caller's
    /// profile, each pod with the profile its `schedulerName` names.
    pub profile: Option<Profiles>,
    /// Warnings from reading that configuration (upstream plugins ksched does not model).
    pub config_warnings: Vec<String>,
    pub nodes: Vec<Node>,
    /// Namespaces, services, PriorityClasses, PDBs and storage objects, loaded into the
    /// cluster before the first pod. Namespaces pods use but `namespaces.json` does not list
    /// are there with only `kubernetes.io/metadata.name`.
    pub objects: ClusterObjects,
    /// Pods bound from the start (`running.json`), in file order.
    pub running: Vec<Pod>,
    /// In creation order, paired with upstream's decision.
    pub pods: Vec<(Pod, Decision)>,
    /// `meta.json`'s clock.
    pub clock: Option<Timestamp>,
    /// The gates the case is replayed under (`meta.json`'s, over v1.35's defaults).
    pub feature_gates: FeatureGates,
    /// The recording's percentageOfNodesToScore (0 = adaptive) and parallelism: `meta.json`'s,
    /// else `RECORDED_PERCENTAGE` and `RECORDED_PARALLELISM`. Already applied to `profile`.
    pub percentage: u32,
    pub parallelism: usize,
    /// Which optional object files were read, for the report.
    pub extra_files: Vec<&'static str>,
}

fn read(path: &Path) -> Result<String, GoldenError> {
    std::fs::read_to_string(path).map_err(|e| GoldenError { file: path.to_owned(), message: e.to_string() })
}

fn parse_array<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, GoldenError> {
    let text = read(path)?;
    let values: Vec<serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| GoldenError { file: path.to_owned(), message: format!("not a JSON array: {e}") })?;
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            serde_json::from_value(v).map_err(|e| GoldenError { file: path.to_owned(), message: format!("[{i}]: {e}") })
        })
        .collect()
}

/// Reads `dir/file` (a JSON array of `K`) and converts each item; `Ok(None)` when the file is
/// absent.
fn convert_file<K, T>(
    dir: &Path,
    file: &str,
    convert: impl Fn(&K) -> Result<T, ConvertError>,
) -> Result<Option<Vec<T>>, GoldenError>
where
    K: serde::de::DeserializeOwned,
{
    let path = dir.join(file);
    if !path.is_file() {
        return Ok(None);
    }
    let items = parse_array::<K>(&path)?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| convert(item).map_err(|e| GoldenError { file: path.clone(), message: format!("[{i}]: {e}") }))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn timestamp(t: &meta::Time) -> Timestamp {
    Timestamp(u64::try_from(t.0.as_nanosecond()).unwrap_or(0))
}

impl GoldenCase {
    pub fn load(dir: &Path) -> Result<GoldenCase, GoldenError> {
        GoldenCase::load_with(dir, &FeatureGates::default())
    }

    /// `load`, with `command_line`'s gates (those that differ from v1.35's defaults) over the
    /// recording's (see [`Meta::gates_over`]).
    pub fn load_with(dir: &Path, command_line: &FeatureGates) -> Result<GoldenCase, GoldenError> {
        let err = |file: &Path, message: String| GoldenError { file: file.to_owned(), message };
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let meta_path = dir.join("meta.json");
        let meta: Meta = if meta_path.is_file() {
            serde_json::from_str(&read(&meta_path)?).map_err(|e| err(&meta_path, e.to_string()))?
        } else {
            Meta::default()
        };
        let (gates, gate_warnings) = meta.gates_over(command_line);
        let pod_from_k8s = |p: &k::Pod| pod_from_k8s_with(p, &gates);
        let mut nodes = convert_file(dir, "nodes.json", node_from_k8s)?
            .ok_or_else(|| err(&dir.join("nodes.json"), "missing".into()))?;
        // The recorder adds nodes sorted by name (golden-extended/README.md, "Sampled cases"),
        // whatever the file's order: their arrival order is the node tree's, which decides
        // the nodes a sampled cycle visits and the order its heap sees ties in.
        nodes.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
        let pods_path = dir.join("pods.json");
        let mut pods: HashMap<String, Pod> = HashMap::new();
        for pod in convert_file(dir, "pods.json", pod_from_k8s)?.ok_or_else(|| err(&pods_path, "missing".into()))? {
            pods.insert(pod.key(), pod);
        }
        let dec_path = dir.join("decisions.jsonl");
        let mut paired = Vec::new();
        for (i, line) in read(&dec_path)?.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let d: Decision = serde_json::from_str(line).map_err(|e| err(&dec_path, format!("line {}: {e}", i + 1)))?;
            let pod = pods
                .remove(&d.pod)
                .ok_or_else(|| err(&dec_path, format!("line {}: pod {} is not in pods.json", i + 1, d.pod)))?;
            paired.push((pod, d));
        }
        let percentage = match meta.percentage_of_nodes_to_score {
            None => RECORDED_PERCENTAGE,
            Some(p @ 0..=100) => p as u32,
            Some(p) => return Err(err(&meta_path, format!("percentageOfNodesToScore: {p} is not in 0..=100"))),
        };
        let parallelism = match meta.parallelism {
            None => RECORDED_PARALLELISM,
            Some(p @ 1..=4096) => p as usize,
            Some(p) => return Err(err(&meta_path, format!("parallelism: {p} is not in 1..=4096"))),
        };
        let mix = meta.mix.clone().unwrap_or_else(|| match name.rsplit_once('-') {
            Some((mix, _seed)) => mix.to_owned(),
            None => name.clone(),
        });

        let mut extra_files = Vec::new();
        let mut objects = ClusterObjects::new();
        let mut note = |file: &'static str, present: bool| {
            if present {
                extra_files.push(file);
            }
        };
        let namespaces = convert_file(dir, "namespaces.json", namespace_from_k8s)?;
        note("namespaces.json", namespaces.is_some());
        for (ns, labels) in namespaces.into_iter().flatten() {
            objects.set_namespace(ns, labels);
        }
        let classes =
            convert_file(dir, "priorityclasses.json", |pc: &kscheduling::PriorityClass| priority_class_from_k8s(pc))?;
        note("priorityclasses.json", classes.is_some());
        for pc in classes.into_iter().flatten() {
            objects.upsert_priority_class(pc);
        }
        let pdbs = convert_file(dir, "pdbs.json", |p: &kpolicy::PodDisruptionBudget| pdb_from_k8s(p))?;
        note("pdbs.json", pdbs.is_some());
        for pdb in pdbs.into_iter().flatten() {
            objects.upsert_pdb(pdb);
        }
        let services = convert_file(dir, "services.json", service_from_k8s)?;
        note("services.json", services.is_some());
        for svc in services.into_iter().flatten() {
            objects.upsert_service(svc);
        }
        let pvs = convert_file(dir, "pvs.json", pv_from_k8s)?;
        note("pvs.json", pvs.is_some());
        for pv in pvs.into_iter().flatten() {
            objects.storage.upsert_pv(pv);
        }
        let pvcs = convert_file(dir, "pvcs.json", pvc_from_k8s)?;
        note("pvcs.json", pvcs.is_some());
        for pvc in pvcs.into_iter().flatten() {
            objects.storage.upsert_pvc(pvc);
        }
        let scs = convert_file(dir, "storageclasses.json", |s: &kstorage::StorageClass| storage_class_from_k8s(s))?;
        note("storageclasses.json", scs.is_some());
        for sc in scs.into_iter().flatten() {
            objects.storage.upsert_storage_class(sc);
        }
        let csi = convert_file(dir, "csinodes.json", |c: &kstorage::CSINode| csi_node_from_k8s(c))?;
        note("csinodes.json", csi.is_some());
        for c in csi.into_iter().flatten() {
            objects.storage.upsert_csi_node(c);
        }
        let classes = convert_file(dir, "deviceclasses.json", crate::dra::device_class_from_k8s)?;
        note("deviceclasses.json", classes.is_some());
        for c in classes.into_iter().flatten() {
            objects.dra.upsert_class(c);
        }
        let slices = convert_file(dir, "resourceslices.json", crate::dra::resource_slice_from_k8s)?;
        note("resourceslices.json", slices.is_some());
        for s in slices.into_iter().flatten() {
            objects.dra.upsert_slice(s);
        }
        let claims = convert_file(dir, "resourceclaims.json", crate::dra::resource_claim_from_k8s)?;
        note("resourceclaims.json", claims.is_some());
        for c in claims.into_iter().flatten() {
            objects.dra.upsert_claim(c);
        }
        let templates = convert_file(dir, "resourceclaimtemplates.json", crate::dra::resource_claim_template_from_k8s)?;
        note("resourceclaimtemplates.json", templates.is_some());
        for t in templates.into_iter().flatten() {
            objects.dra.upsert_template(t);
        }
        let running = convert_file(dir, "running.json", |p: &k::Pod| {
            let pod = pod_from_k8s(p)?;
            if pod.node_name.is_none_or(|n| n.is_empty()) {
                return Err(ConvertError::new(&format!("pod {}", pod.key()), "spec.nodeName", "must be set"));
            }
            Ok(pod)
        })?;
        note("running.json", running.is_some());
        let running = running.unwrap_or_default();

        // Namespaces the pods use and the file does not list exist with only their name label.
        for pod in running.iter().chain(paired.iter().map(|(p, _)| p)) {
            if objects.namespace_labels(pod.namespace).is_none() {
                let name = pod.namespace.as_str();
                objects.set_namespace(pod.namespace, Labels::from_pairs([(NAMESPACE_NAME_LABEL, name)]));
            }
        }

        let config_path = dir.join("scheduler-config.json");
        let (profile, config_warnings) = if config_path.is_file() {
            // Recorded from the running scheduler, which prints no apiVersion / kind.
            let mut value: serde_json::Value =
                serde_json::from_str(&read(&config_path)?).map_err(|e| err(&config_path, format!("not JSON: {e}")))?;
            if let Some(obj) = value.as_object_mut() {
                obj.entry("apiVersion").or_insert_with(|| "kubescheduler.config.k8s.io/v1".into());
                obj.entry("kind").or_insert_with(|| "KubeSchedulerConfiguration".into());
                // The recording ran with meta.json's values (a profile's own percentage,
                // where one is set, still wins, as upstream's does).
                obj.insert("percentageOfNodesToScore".into(), percentage.into());
                obj.insert("parallelism".into(), parallelism.into());
            }
            let cfg = ksched_engine::config::from_value(value, &ksched_engine::config::Registry::in_tree_with(gates))
                .map_err(|e| err(&config_path, e.to_string()))?;
            (Some(cfg.all_profiles()), cfg.warnings)
        } else {
            (None, Vec::new())
        };
        let config_warnings = gate_warnings.into_iter().chain(config_warnings).collect();
        Ok(GoldenCase {
            name,
            mix,
            profile,
            config_warnings,
            nodes,
            objects,
            running,
            pods: paired,
            clock: meta.clock.as_ref().map(timestamp),
            feature_gates: gates,
            percentage,
            parallelism,
            extra_files,
        })
    }

    /// The profiles the recording ran: the case's own (`scheduler-config.json`), else
    /// `fallback`, with the recording's percentageOfNodesToScore and parallelism.
    pub fn recorded_profiles(&self, fallback: &Profile) -> Profiles {
        if let Some(p) = &self.profile {
            return p.clone();
        }
        let mut profiles = Profiles::from(fallback.clone());
        for p in profiles.iter_mut() {
            p.percentage_of_nodes_to_score = Some(self.percentage);
            p.parallelism = self.parallelism;
        }
        profiles
    }

    /// Whether upstream's pass visited only part of the nodes for some profile (its
    /// `feasible_nodes`, `rejected`, `scores` and `best` then come from a re-run over every
    /// node, and the `sampled_*` fields from its own cycle).
    pub fn sampled(&self, profiles: &Profiles) -> bool {
        let n = self.nodes.len();
        profiles.iter().any(|p| p.nodes_to_find(n) < n)
    }

    /// The start time of the pod of decision `seq` when bound during the case (what the
    /// kubelet would set): `clock + (seq + 1) s`; `None` without a clock.
    pub fn start_time(&self, seq: usize) -> Option<Timestamp> {
        self.clock.map(|c| Timestamp(c.0 + (seq as u64 + 1) * 1_000_000_000))
    }
}

/// `Sym` of a `namespace/name` key's parts.
pub(crate) fn split_key(key: &str) -> (Sym, Sym) {
    match key.split_once('/') {
        Some((ns, name)) => (Sym::new(ns), Sym::new(name)),
        None => (Sym::new("default"), Sym::new(key)),
    }
}
