//! Kubernetes manifests → engine objects: what `ksched simulate` and `ksched explain` read.
//!
//! A file is a YAML stream (documents separated by `---`) or a JSON stream (one or more
//! values; a top-level array counts as a list of objects). Each document is read into a
//! `serde_json::Value`; empty documents are skipped; `kind: List` (and the typed lists
//! `NodeList`, `PodList`, ...) is opened into its `items` (a file that is one list, as
//! `kubectl get -o yaml|json` prints, is read one item at a time: `stream.rs`); every object
//! is dispatched on `apiVersion` + `kind`, decoded into k8s-openapi's type (strictly, as `kubectl` does by
//! default: an unknown field is an error) and converted by `convert.rs`.
//!
//! Read: `v1` Node, Pod, Namespace (its labels), Service (its selector), `scheduling.k8s.io/v1`
//! PriorityClass, `policy/v1` PodDisruptionBudget, storage (`v1` PersistentVolume and
//! PersistentVolumeClaim, `storage.k8s.io/v1` StorageClass, CSINode, CSIDriver and
//! CSIStorageCapacity), and the workload controllers (`apps/v1`
//! Deployment, ReplicaSet, StatefulSet, DaemonSet, `v1` ReplicationController, `batch/v1` Job
//! and CronJob), which `controllers` expands into pods. Any other kind is counted in
//! `skipped` and otherwise ignored (with `ReadOptions::strict` it is an error), as a dump of a
//! real cluster holds ConfigMaps, Secrets, RBAC, Events and custom resources. Terminal pods
//! (`status.phase` Succeeded or Failed) are counted in `terminal_pods` and dropped, as the
//! scheduler's informer never hands them over. Pods with `spec.nodeName` are already bound;
//! the others are pending, in file order. Every error names the file, the document (1-based,
//! with its line when known, and the list item), the object and the field; nothing panics on
//! any input.
//!
//! The `ksched` command loads what was read into a simulation (`bench-harness/src/load.rs`:
//! this crate knows no simulation).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::apps::v1 as kapps;
use k8s_openapi::api::batch::v1 as kbatch;
use k8s_openapi::api::core::v1 as k;
use k8s_openapi::api::policy::v1 as kpolicy;
use k8s_openapi::api::scheduling::v1 as kscheduling;
use k8s_openapi::api::storage::v1 as kstorage;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use super::{
    node_from_k8s, pdb_from_k8s, pod_from_k8s_with, priority_class_from_k8s, pvc_from_k8s, service_from_k8s,
    ConvertError,
};
use crate::convert::{
    csi_driver_from_k8s, csi_node_from_k8s, csi_storage_capacity_from_k8s, pv_from_k8s, storage_class_from_k8s,
};
use crate::unmodelled::{
    device_class_unmodelled, node_unmodelled, pod_spec_unmodelled, pod_unmodelled, resource_claim_template_unmodelled,
    resource_claim_unmodelled, resource_slice_unmodelled, Unmodelled, UnmodelledField,
};
use ksched_engine::api::{Labels, Node, Pod, PodDisruptionBudget, PriorityClass, StorageObjects, Sym};
use ksched_engine::features::FeatureGates;
use ksched_engine::snapshot::objects::Service;

/// Where an object came from: file, document (1-based), its first line when known, and its
/// index in the document's `items` when it came from a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub file: Arc<str>,
    pub document: u32,
    pub line: Option<u32>,
    pub item: Option<u32>,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.file, self.document)?;
        if let Some(l) = self.line {
            write!(f, " (line {l})")?;
        }
        if let Some(i) = self.item {
            write!(f, " items[{i}]")?;
        }
        Ok(())
    }
}

/// A manifest could not be read. `Display`: `FILE: document N (line L) items[I]: OBJECT:
/// FIELD: MESSAGE`, leaving out what is unknown.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub struct ManifestError {
    pub file: String,
    /// 1-based; `None` for errors about the whole file (unreadable, not UTF-8).
    pub document: Option<u32>,
    pub line: Option<u32>,
    pub item: Option<u32>,
    /// `pod default/web`, `node n1` (empty when the object could not be named).
    pub object: String,
    /// The field path inside the object (`spec.containers[0].resources.requests.cpu`).
    pub field: String,
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(d) = self.document {
            write!(f, ": document {d}")?;
        }
        if let Some(l) = self.line {
            write!(f, " (line {l})")?;
        }
        if let Some(i) = self.item {
            write!(f, " items[{i}]")?;
        }
        for part in [&self.object, &self.field] {
            if !part.is_empty() {
                write!(f, ": {part}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl ManifestError {
    pub fn at(
        source: &Source,
        object: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ManifestError {
            file: source.file.to_string(),
            document: Some(source.document),
            line: source.line,
            item: source.item,
            object: object.into(),
            field: field.into(),
            message: message.into(),
        }
    }

    fn file(file: &str, line: Option<u32>, message: impl Into<String>) -> Self {
        ManifestError {
            file: file.to_owned(),
            document: None,
            line,
            item: None,
            object: String::new(),
            field: String::new(),
            message: message.into(),
        }
    }

    pub(crate) fn from_convert(source: &Source, e: ConvertError) -> Self {
        ManifestError::at(source, e.object, e.field, e.message)
    }
}

/// A pod read from a manifest, with where it came from.
#[derive(Clone, Debug)]
pub struct ManifestPod {
    pub pod: Pod,
    pub source: Source,
    /// The pod carries `spec.priority`: the API server's priority admission ran when it was
    /// created (a dump's pods). A bound pod keeps it; only new pods are resolved against
    /// the PriorityClasses.
    pub admitted: bool,
}

/// A PodDisruptionBudget and whether the manifest gave its status (without one, `load` lets
/// the disruption controller compute it from the bound pods).
#[derive(Clone, Debug)]
pub struct ManifestPdb {
    pub pdb: PodDisruptionBudget,
    pub has_status: bool,
    pub source: Source,
}

/// Everything read from one or more manifest files, in file order.
#[derive(Clone, Debug, Default)]
pub struct Manifests {
    pub nodes: Vec<(Node, Source)>,
    /// Namespace name → labels.
    pub namespaces: Vec<(Sym, Labels, Source)>,
    pub priority_classes: Vec<(PriorityClass, Source)>,
    pub pdbs: Vec<ManifestPdb>,
    /// Services (their selectors: SelectorSpread, default topology spreading).
    pub services: Vec<(Service, Source)>,
    /// Workload controllers, in file order; `controllers::expand` turns them into pods.
    pub workloads: Vec<(Workload, Source)>,
    /// Bound (`spec.nodeName` set) and pending pods, in file order.
    pub pods: Vec<ManifestPod>,
    /// PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities.
    pub storage: StorageObjects,
    /// DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates.
    pub dra: ksched_engine::api::dra::DraObjects,
    /// Objects of kinds ksched does not model, skipped: `kind` (with its apiVersion when it
    /// is not `v1`) → count.
    pub skipped: BTreeMap<String, usize>,
    /// Pods dropped because they are terminal: `status.phase` (Succeeded, Failed) → count.
    pub terminal_pods: BTreeMap<String, usize>,
    /// What reading reconciled as `kubectl apply` would (objects defined twice), for the
    /// report's notes.
    pub notes: Vec<String>,
    /// Objects defined twice, identically, and merged into one.
    pub merged_duplicates: usize,
    /// Fields that change upstream's decision and that ksched does not model, per field
    /// (with `ReadOptions::strict` each is an error instead).
    pub unmodelled: Unmodelled,
    /// How to read (strictness).
    pub options: ReadOptions,
    /// (kind, namespace, name) → where it was first defined and a fingerprint of what it
    /// says (server-set fields and status left out), for the duplicate check.
    seen: HashMap<(&'static str, String, String), (Source, u64)>,
}

/// A workload controller as read (k8s-openapi's type, decoded strictly).
#[derive(Clone, Debug)]
pub enum Workload {
    Deployment(Box<kapps::Deployment>),
    ReplicaSet(Box<kapps::ReplicaSet>),
    StatefulSet(Box<kapps::StatefulSet>),
    DaemonSet(Box<kapps::DaemonSet>),
    ReplicationController(Box<k::ReplicationController>),
    Job(Box<kbatch::Job>),
    CronJob(Box<kbatch::CronJob>),
}

/// How manifests are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// A kind ksched does not model, or a field that changes upstream's decision and that
    /// ksched does not model, is an error instead of being skipped or warned about.
    pub strict: bool,
    /// Directories are read recursively (`kubectl -R`); otherwise only their own files.
    pub recursive: bool,
    /// The feature gates pods are converted under (how their requests are summed).
    pub gates: FeatureGates,
}

/// The kinds read: kind, its one supported apiVersion, namespaced.
const KINDS: &[(&str, &str, bool)] = &[
    ("Node", "v1", false),
    ("Pod", "v1", true),
    ("Namespace", "v1", false),
    ("Service", "v1", true),
    ("PriorityClass", "scheduling.k8s.io/v1", false),
    ("PodDisruptionBudget", "policy/v1", true),
    ("Deployment", "apps/v1", true),
    ("ReplicaSet", "apps/v1", true),
    ("StatefulSet", "apps/v1", true),
    ("DaemonSet", "apps/v1", true),
    ("ReplicationController", "v1", true),
    ("Job", "batch/v1", true),
    ("CronJob", "batch/v1", true),
    ("PersistentVolume", "v1", false),
    ("PersistentVolumeClaim", "v1", true),
    ("StorageClass", "storage.k8s.io/v1", false),
    ("CSINode", "storage.k8s.io/v1", false),
    ("CSIDriver", "storage.k8s.io/v1", false),
    ("CSIStorageCapacity", "storage.k8s.io/v1", true),
    // resource.k8s.io: v1beta2 and v1beta1 are read too, rewritten to v1 first.
    ("DeviceClass", "resource.k8s.io/v1", false),
    ("ResourceSlice", "resource.k8s.io/v1", false),
    ("ResourceClaim", "resource.k8s.io/v1", true),
    ("ResourceClaimTemplate", "resource.k8s.io/v1", true),
];

/// Reads the files at `paths` (`-` is standard input) into one `Manifests`, with the default
/// options (unmodelled kinds skipped, directories not recursed).
pub fn read_files<P: AsRef<Path>>(paths: &[P]) -> Result<Manifests, ManifestError> {
    read_files_with(paths, ReadOptions::default())
}

/// Reads the files at `paths` into one `Manifests`. A directory is read like `kubectl -f DIR`:
/// its `.yaml`, `.yml` and `.json` files in name order, and its subdirectories too when
/// `options.recursive`.
pub fn read_files_with<P: AsRef<Path>>(paths: &[P], options: ReadOptions) -> Result<Manifests, ManifestError> {
    let mut m = Manifests { options, ..Manifests::default() };
    for p in paths {
        let p = p.as_ref();
        let name = p.display().to_string();
        if name != "-" && p.is_dir() {
            for file in directory_files(p, options.recursive)? {
                let bytes = std::fs::read(&file)
                    .map_err(|e| ManifestError::file(&file.display().to_string(), None, e.to_string()))?;
                m.read_bytes(&file.display().to_string(), &bytes)?;
            }
            continue;
        }
        let bytes = if name == "-" {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map(|_| buf)
        } else {
            std::fs::read(p)
        }
        .map_err(|e| ManifestError::file(&name, None, e.to_string()))?;
        m.read_bytes(if name == "-" { "<stdin>" } else { &name }, &bytes)?;
    }
    Ok(m)
}

/// The manifest files of a directory (`.yaml`, `.yml`, `.json`) in name order; with
/// `recursive`, those of its subdirectories too, each subdirectory where it sorts.
fn directory_files(dir: &Path, recursive: bool) -> Result<Vec<PathBuf>, ManifestError> {
    let err = |e: std::io::Error| ManifestError::file(&dir.display().to_string(), None, e.to_string());
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(err)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(err)?;
    entries.sort();
    let mut out = Vec::new();
    for path in entries {
        if path.is_dir() {
            if recursive {
                out.extend(directory_files(&path, true)?);
            }
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| matches!(e, "yaml" | "yml" | "json")) {
            out.push(path);
        }
    }
    Ok(out)
}

impl Workload {
    /// The pod template's spec (a CronJob's through its job template).
    pub fn pod_template_spec(&self) -> Option<&k::PodSpec> {
        match self {
            Workload::Deployment(w) => w.spec.as_ref()?.template.spec.as_ref(),
            Workload::ReplicaSet(w) => w.spec.as_ref()?.template.as_ref()?.spec.as_ref(),
            Workload::StatefulSet(w) => w.spec.as_ref()?.template.spec.as_ref(),
            Workload::DaemonSet(w) => w.spec.as_ref()?.template.spec.as_ref(),
            Workload::ReplicationController(w) => w.spec.as_ref()?.template.as_ref()?.spec.as_ref(),
            Workload::Job(w) => w.spec.as_ref()?.template.spec.as_ref(),
            Workload::CronJob(w) => w.spec.as_ref()?.job_template.spec.as_ref()?.template.spec.as_ref(),
        }
    }
}

impl Manifests {
    pub fn new() -> Manifests {
        Manifests::default()
    }

    /// Reading with `options` from now on.
    pub fn with_options(options: ReadOptions) -> Manifests {
        Manifests { options, ..Manifests::default() }
    }

    /// Counts `fields` (an object's fields that change upstream's decision and that ksched
    /// does not model), or refuses the first under `--strict`.
    fn unmodelled_fields(&mut self, source: &Source, fields: Vec<UnmodelledField>) -> Result<(), ManifestError> {
        for w in fields {
            if self.options.strict {
                let message = format!("not modelled by ksched: {}; upstream's decision may differ (--strict)", w.why);
                return Err(ManifestError::at(source, w.object, w.field, message));
            }
            self.unmodelled.add(w);
        }
        Ok(())
    }

    /// One line saying what was skipped (kinds not modelled, terminal pods), or `None`.
    pub fn skipped_summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.skipped.is_empty() {
            let n: usize = self.skipped.values().sum();
            let kinds: Vec<String> = self.skipped.iter().map(|(k, c)| format!("{k} {c}")).collect();
            parts.push(format!("{n} object(s) of kinds ksched does not model ({})", kinds.join(", ")));
        }
        if !self.terminal_pods.is_empty() {
            let n: usize = self.terminal_pods.values().sum();
            let phases: Vec<String> = self.terminal_pods.iter().map(|(k, c)| format!("{k} {c}")).collect();
            parts.push(format!("{n} terminal pod(s) ({})", phases.join(", ")));
        }
        (!parts.is_empty()).then(|| format!("skipped {}", parts.join(" and ")))
    }

    /// Reads one file's content (`file` names it in errors). YAML unless the first
    /// non-blank character is `{` or `[`, which starts a JSON stream.
    pub fn read_bytes(&mut self, file: &str, bytes: &[u8]) -> Result<(), ManifestError> {
        let text =
            std::str::from_utf8(bytes).map_err(|e| ManifestError::file(file, None, format!("not UTF-8 text: {e}")))?;
        self.read_str(file, text)
    }

    /// Reads one file's text.
    pub fn read_str(&mut self, file: &str, text: &str) -> Result<(), ManifestError> {
        let file: Arc<str> = Arc::from(file);
        // A single list document (what `kubectl get -o yaml|json` prints) is read one item at
        // a time; on any error, again the ordinary way, for its exact error.
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') {
            let line = text[..text.len() - trimmed.len()].matches('\n').count() + 1;
            let source = Source { file: file.clone(), document: 1, line: Some(n32(line)), item: None };
            let mark = self.mark();
            if stream::read_json_list(self, &source, text).is_ok() {
                return Ok(());
            }
            self.rollback(mark);
        } else if !trimmed.starts_with('[') {
            if let Some(cut) = stream::cut_list(text) {
                let mark = self.mark();
                if self.read_cut_list(&file, text, &cut).is_ok() {
                    return Ok(());
                }
                self.rollback(mark);
            }
        }
        self.read_documents(file, text)
    }

    /// Reads one file's text the ordinary way: every document parsed whole, then read.
    fn read_documents(&mut self, file: Arc<str>, text: &str) -> Result<(), ManifestError> {
        let docs = if text.trim_start().starts_with(['{', '[']) {
            json_documents(&file, text)?
        } else {
            yaml_documents(&file, text)?
        };
        for (i, (value, line)) in docs.into_iter().enumerate() {
            let source = Source { file: file.clone(), document: n32(i + 1), line, item: None };
            match value {
                Value::Null => {}
                Value::Array(items) => self.read_items(&source, items, None)?,
                other => self.read_object(source, other, None)?,
            }
        }
        Ok(())
    }

    /// One object read from elsewhere (a trace line): `file` and `line` name it in errors.
    pub fn read_value(&mut self, file: &str, line: u32, value: Value) -> Result<(), ManifestError> {
        let source = Source { file: Arc::from(file), document: 1, line: Some(line), item: None };
        self.read_object(source, value, None)
    }

    /// Pods with `spec.nodeName`, in file order.
    pub fn bound_pods(&self) -> impl Iterator<Item = &ManifestPod> {
        self.pods.iter().filter(|p| p.pod.node_name.is_some())
    }

    /// Pods without `spec.nodeName`, in file order.
    pub fn pending_pods(&self) -> impl Iterator<Item = &ManifestPod> {
        self.pods.iter().filter(|p| p.pod.node_name.is_none())
    }

    fn read_items(
        &mut self,
        source: &Source,
        items: Vec<Value>,
        default: Option<(&str, &str)>,
    ) -> Result<(), ManifestError> {
        for (j, item) in items.into_iter().enumerate() {
            let at = Source { item: Some(n32(j)), ..source.clone() };
            if item.is_null() {
                continue;
            }
            self.read_object(at, item, default)?;
        }
        Ok(())
    }

    /// One object; `default` is (apiVersion, kind) for items of a typed list, which the API
    /// server sends without them.
    fn read_object(
        &mut self,
        source: Source,
        mut value: Value,
        default: Option<(&str, &str)>,
    ) -> Result<(), ManifestError> {
        let Value::Object(obj) = &mut value else {
            return Err(ManifestError::at(
                &source,
                "",
                "",
                format!("expected a Kubernetes object (a mapping), got {}", ksched_engine::config::kind_of(&value)),
            ));
        };
        if let Some((api_version, kind)) = default {
            obj.entry("apiVersion").or_insert_with(|| api_version.into());
            obj.entry("kind").or_insert_with(|| kind.into());
        }
        let (kind, api_version) = object_kind(&source, obj)?;
        // Lists: `List` (any item kinds) and the typed `<Kind>List`s.
        if kind.ends_with("List") {
            let item_default = list_item_default(&source, &kind, &api_version)?;
            let item_default = item_default.as_ref().map(|(v, k)| (v.as_str(), k.as_str()));
            let items = match obj.remove("items") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items,
                Some(other) => {
                    return Err(ManifestError::at(
                        &source,
                        "",
                        "items",
                        format!("expected a list, got {}", ksched_engine::config::kind_of(&other)),
                    ))
                }
            };
            return self.read_items(&source, items, item_default);
        }
        let Some(&(kind, want_version, namespaced)) = KINDS.iter().find(|(k, _, _)| *k == kind) else {
            if self.options.strict {
                return Err(unsupported_kind(&source, &kind));
            }
            let key = if api_version == "v1" { kind } else { format!("{kind} ({api_version})") };
            *self.skipped.entry(key).or_default() += 1;
            return Ok(());
        };
        let api_version =
            if crate::dra::KINDS.contains(&kind) && crate::dra::API_VERSIONS.contains(&api_version.as_str()) {
                crate::dra::to_v1(kind, &api_version, &mut value);
                want_version.to_owned()
            } else {
                api_version
            };
        let meta_str = |field: &str| {
            value.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("").to_owned()
        };
        let name = meta_str("name");
        let namespace = if namespaced {
            Some(meta_str("namespace")).filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into())
        } else {
            String::new()
        };
        let object = if namespaced {
            format!("{} {namespace}/{name}", kind.to_lowercase())
        } else {
            format!("{} {name}", kind.to_lowercase())
        };
        if api_version != want_version {
            let e = unsupported_api_version(&source, kind, &api_version, want_version);
            return Err(ManifestError { object, ..e });
        }
        if name.is_empty() {
            let message = if meta_str("generateName").is_empty() {
                "Required value"
            } else {
                "Required value (generateName is not supported: name the object)"
            };
            return Err(ManifestError::at(&source, object, "metadata.name", message));
        }
        let key = (kind, namespace, name);
        let fingerprint = fingerprint(&value);
        // Defined before: the same object merges; another one replaces it where it stood
        // (last wins, as `kubectl apply` of the later file would); --strict refuses both.
        let mut replaces = false;
        if let Some((first, before)) = self.seen.get(&key) {
            if self.options.strict {
                return Err(ManifestError::at(
                    &source,
                    object,
                    "metadata.name",
                    format!("Duplicate value: already defined at {first}"),
                ));
            }
            if *before == fingerprint {
                self.merged_duplicates += 1;
                return Ok(());
            }
            self.notes.push(format!(
                "{object}: defined at {first} and again at {source}, differently: the later one is used"
            ));
            replaces = true;
        }
        if let Some(field) = missing_required(kind, &value) {
            return Err(ManifestError::at(&source, object, field, "Required value"));
        }
        let (namespace, name) = (key.1.as_str(), key.2.as_str());
        match kind {
            "Node" => {
                let n: k::Node = decode(&source, &object, value)?;
                self.unmodelled_fields(&source, node_unmodelled(&n))?;
                let node = node_from_k8s(&n).map_err(|e| ManifestError::from_convert(&source, e))?;
                put(&mut self.nodes, (node, source.clone()), replaces, |(n, _)| n.name.as_str() == name);
            }
            "Pod" => {
                let p: k::Pod = decode(&source, &object, value)?;
                self.unmodelled_fields(&source, pod_unmodelled(&p))?;
                let pod =
                    pod_from_k8s_with(&p, &self.options.gates).map_err(|e| ManifestError::from_convert(&source, e))?;
                let same = |m: &ManifestPod| m.pod.namespace.as_str() == namespace && &*m.pod.name == name;
                match p.status.as_ref().and_then(|s| s.phase.as_deref()) {
                    // Terminal: the scheduler's informer filters these out; they hold nothing.
                    Some(phase @ ("Succeeded" | "Failed")) => {
                        *self.terminal_pods.entry(phase.to_owned()).or_default() += 1;
                        if replaces {
                            self.pods.retain(|m| !same(m));
                        }
                    }
                    _ => {
                        let admitted = p.spec.as_ref().is_some_and(|s| s.priority.is_some());
                        put(&mut self.pods, ManifestPod { pod, source: source.clone(), admitted }, replaces, same)
                    }
                }
            }
            "Service" => {
                let svc: k::Service = decode(&source, &object, value)?;
                let svc = service_from_k8s(&svc).map_err(|e| ManifestError::from_convert(&source, e))?;
                put(&mut self.services, (svc, source.clone()), replaces, |(s, _)| {
                    s.namespace.as_str() == namespace && s.name.as_str() == name
                });
            }
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "ReplicationController" | "Job" | "CronJob" => {
                let w = match kind {
                    "Deployment" => Workload::Deployment(Box::new(decode(&source, &object, value)?)),
                    "ReplicaSet" => Workload::ReplicaSet(Box::new(decode(&source, &object, value)?)),
                    "StatefulSet" => Workload::StatefulSet(Box::new(decode(&source, &object, value)?)),
                    "DaemonSet" => Workload::DaemonSet(Box::new(decode(&source, &object, value)?)),
                    "ReplicationController" => {
                        Workload::ReplicationController(Box::new(decode(&source, &object, value)?))
                    }
                    "Job" => Workload::Job(Box::new(decode(&source, &object, value)?)),
                    _ => Workload::CronJob(Box::new(decode(&source, &object, value)?)),
                };
                if let Some(spec) = w.pod_template_spec() {
                    let template = format!("{object} (its pod template)");
                    self.unmodelled_fields(&source, pod_spec_unmodelled(&template, spec, None))?;
                }
                put(&mut self.workloads, (w, source.clone()), replaces, |(w, _)| w.is(kind, namespace, name));
            }
            "Namespace" => {
                let ns: k::Namespace = decode(&source, &object, value)?;
                let mut labels = Labels::new();
                for (k, v) in ns.metadata.labels.iter().flatten() {
                    labels.insert(Sym::new(k), Sym::new(v));
                }
                put(&mut self.namespaces, (Sym::new(name), labels, source.clone()), replaces, |(n, _, _)| {
                    n.as_str() == name
                });
            }
            "PriorityClass" => {
                let pc: kscheduling::PriorityClass = decode(&source, &object, value)?;
                let pc = priority_class_from_k8s(&pc).map_err(|e| ManifestError::from_convert(&source, e))?;
                // The dump spells out defaults the manifest leaves out: the same class.
                if replaces && self.priority_classes.iter().any(|(p, _)| *p == pc) {
                    self.notes.pop();
                    self.merged_duplicates += 1;
                }
                put(&mut self.priority_classes, (pc, source.clone()), replaces, |(p, _)| p.name.as_str() == name);
            }
            "PersistentVolume" => {
                let pv: k::PersistentVolume = decode(&source, &object, value)?;
                self.storage.upsert_pv(pv_from_k8s(&pv).map_err(|e| ManifestError::from_convert(&source, e))?);
            }
            "PersistentVolumeClaim" => {
                let pvc: k::PersistentVolumeClaim = decode(&source, &object, value)?;
                self.storage.upsert_pvc(pvc_from_k8s(&pvc).map_err(|e| ManifestError::from_convert(&source, e))?);
            }
            "StorageClass" => {
                let sc: kstorage::StorageClass = decode(&source, &object, value)?;
                let sc = storage_class_from_k8s(&sc).map_err(|e| ManifestError::from_convert(&source, e))?;
                self.storage.upsert_storage_class(sc);
            }
            "CSINode" => {
                let c: kstorage::CSINode = decode(&source, &object, value)?;
                self.storage
                    .upsert_csi_node(csi_node_from_k8s(&c).map_err(|e| ManifestError::from_convert(&source, e))?);
            }
            "CSIDriver" => {
                let d: kstorage::CSIDriver = decode(&source, &object, value)?;
                let d = csi_driver_from_k8s(&d).map_err(|e| ManifestError::from_convert(&source, e))?;
                self.storage.upsert_csi_driver(d);
            }
            "CSIStorageCapacity" => {
                let c: kstorage::CSIStorageCapacity = decode(&source, &object, value)?;
                let c = csi_storage_capacity_from_k8s(&c).map_err(|e| ManifestError::from_convert(&source, e))?;
                self.storage.upsert_capacity(c);
            }
            "DeviceClass" => {
                let c: k8s_openapi::api::resource::v1::DeviceClass = decode(&source, &object, value)?;
                self.unmodelled_fields(&source, device_class_unmodelled(&c, &self.options.gates))?;
                self.dra.upsert_class(
                    crate::dra::device_class_from_k8s(&c).map_err(|e| ManifestError::from_convert(&source, e))?,
                );
            }
            "ResourceSlice" => {
                let c: k8s_openapi::api::resource::v1::ResourceSlice = decode(&source, &object, value)?;
                self.unmodelled_fields(&source, resource_slice_unmodelled(&c, &self.options.gates))?;
                self.dra.upsert_slice(
                    crate::dra::resource_slice_from_k8s(&c).map_err(|e| ManifestError::from_convert(&source, e))?,
                );
            }
            "ResourceClaim" => {
                let c: k8s_openapi::api::resource::v1::ResourceClaim = decode(&source, &object, value)?;
                self.unmodelled_fields(&source, resource_claim_unmodelled(&c, &self.options.gates))?;
                self.dra.upsert_claim(
                    crate::dra::resource_claim_from_k8s(&c).map_err(|e| ManifestError::from_convert(&source, e))?,
                );
            }
            "ResourceClaimTemplate" => {
                let c: k8s_openapi::api::resource::v1::ResourceClaimTemplate = decode(&source, &object, value)?;
                self.unmodelled_fields(&source, resource_claim_template_unmodelled(&c, &self.options.gates))?;
                self.dra.upsert_template(
                    crate::dra::resource_claim_template_from_k8s(&c)
                        .map_err(|e| ManifestError::from_convert(&source, e))?,
                );
            }
            "PodDisruptionBudget" => {
                let pdb: kpolicy::PodDisruptionBudget = decode(&source, &object, value)?;
                let has_status = pdb.status.is_some();
                let pdb = pdb_from_k8s(&pdb).map_err(|e| ManifestError::from_convert(&source, e))?;
                let b = ManifestPdb { pdb, has_status, source: source.clone() };
                put(&mut self.pdbs, b, replaces, |b| {
                    b.pdb.namespace.as_str() == namespace && b.pdb.name.as_str() == name
                });
            }
            _ => return Err(unsupported_kind(&source, kind)),
        }
        self.seen.insert(key, (source, fingerprint));
        Ok(())
    }
}

/// Pushes `item`, or when it `replaces` an earlier definition (`same`), puts it in that one's
/// place.
fn put<T>(list: &mut Vec<T>, item: T, replaces: bool, same: impl Fn(&T) -> bool) {
    match list.iter_mut().find(|t| replaces && same(t)) {
        Some(slot) => *slot = item,
        None => list.push(item),
    }
}

/// A fingerprint of what an object says, leaving out what the API server writes (uid,
/// resourceVersion, timestamps, managedFields, generation, kubectl's last-applied annotation)
/// and its status: a dump's copy and the manifest it was applied from agree.
fn fingerprint(value: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    const SERVER_SET: &[&str] =
        &["uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"];
    fn walk(v: &Value, path: &[&str], h: &mut std::collections::hash_map::DefaultHasher) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for k in keys {
                    let skip = match path {
                        [] => k == "status",
                        ["metadata"] => SERVER_SET.contains(&k.as_str()),
                        ["metadata", "annotations"] => k == "kubectl.kubernetes.io/last-applied-configuration",
                        _ => false,
                    };
                    if skip || m[k].is_null() {
                        continue;
                    }
                    k.hash(h);
                    let mut sub = path.to_vec();
                    sub.push(k);
                    walk(&m[k], &sub, h);
                }
                0xffu8.hash(h);
            }
            Value::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    i.hash(h);
                    walk(item, &["[]"], h);
                }
                0xfeu8.hash(h);
            }
            other => other.to_string().hash(h),
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    walk(value, &[], &mut h);
    h.finish()
}

impl Workload {
    /// Whether this is the `kind` named `namespace/name`.
    pub fn is(&self, kind: &str, namespace: &str, name: &str) -> bool {
        let (k, m) = self.meta();
        k == kind
            && m.name.as_deref() == Some(name)
            && m.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default") == namespace
    }

    /// Its kind and metadata.
    pub fn meta(&self) -> (&'static str, &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) {
        match self {
            Workload::Deployment(w) => ("Deployment", &w.metadata),
            Workload::ReplicaSet(w) => ("ReplicaSet", &w.metadata),
            Workload::StatefulSet(w) => ("StatefulSet", &w.metadata),
            Workload::DaemonSet(w) => ("DaemonSet", &w.metadata),
            Workload::ReplicationController(w) => ("ReplicationController", &w.metadata),
            Workload::Job(w) => ("Job", &w.metadata),
            Workload::CronJob(w) => ("CronJob", &w.metadata),
        }
    }
}

/// How many items of a cut list one YAML parse reads.
const ITEMS_PER_PARSE: usize = 64;

/// A `Manifests`' extent, to undo a partly read file (`Manifests::rollback`).
struct Mark {
    lens: [usize; 7],
    storage: StorageObjects,
    dra: ksched_engine::api::dra::DraObjects,
    skipped: BTreeMap<String, usize>,
    terminal_pods: BTreeMap<String, usize>,
    notes: usize,
    merged_duplicates: usize,
    seen: HashMap<(&'static str, String, String), (Source, u64)>,
}

impl Manifests {
    fn lens(&self) -> [usize; 7] {
        [
            self.nodes.len(),
            self.namespaces.len(),
            self.priority_classes.len(),
            self.pdbs.len(),
            self.services.len(),
            self.workloads.len(),
            self.pods.len(),
        ]
    }

    fn mark(&self) -> Mark {
        Mark {
            lens: self.lens(),
            storage: self.storage.clone(),
            dra: self.dra.clone(),
            skipped: self.skipped.clone(),
            terminal_pods: self.terminal_pods.clone(),
            notes: self.notes.len(),
            merged_duplicates: self.merged_duplicates,
            seen: self.seen.clone(),
        }
    }

    fn rollback(&mut self, mark: Mark) {
        let [nodes, namespaces, priority_classes, pdbs, services, workloads, pods] = mark.lens;
        self.nodes.truncate(nodes);
        self.namespaces.truncate(namespaces);
        self.priority_classes.truncate(priority_classes);
        self.pdbs.truncate(pdbs);
        self.services.truncate(services);
        self.workloads.truncate(workloads);
        self.pods.truncate(pods);
        self.storage = mark.storage;
        self.dra = mark.dra;
        self.skipped = mark.skipped;
        self.terminal_pods = mark.terminal_pods;
        self.notes.truncate(mark.notes);
        self.merged_duplicates = mark.merged_duplicates;
        self.seen = mark.seen;
    }

    /// A one-document YAML file cut by `stream::cut_list`: the list's own fields, then each
    /// item parsed and read in turn. Any error (including a header that is not a list) means
    /// "read it the ordinary way": the caller rolls back and does.
    fn read_cut_list(&mut self, file: &Arc<str>, text: &str, cut: &stream::ListCut) -> Result<(), ManifestError> {
        let lines = yaml_document_lines(text);
        let line = if lines.len() == 1 { lines.first().copied() } else { None };
        let source = Source { file: file.clone(), document: 1, line, item: None };
        let fallback = || ManifestError::at(&source, "", "", "read the ordinary way");
        let mut header: Value = yaml_serde::from_str(&cut.header).map_err(|_| fallback())?;
        let Value::Object(obj) = &mut header else { return Err(fallback()) };
        let (kind, api_version) = object_kind(&source, obj)?;
        if !kind.ends_with("List") || obj.contains_key("items") {
            return Err(fallback());
        }
        let item_default = list_item_default(&source, &kind, &api_version)?;
        let item_default = item_default.as_ref().map(|(v, k)| (v.as_str(), k.as_str()));
        // Items are parsed a few dozen at a time: a parser's setup costs about as much as a
        // small object, and a few dozen objects' trees are small.
        let mut chunk = String::new();
        for (c, ranges) in cut.items.chunks(ITEMS_PER_PARSE).enumerate() {
            chunk.clear();
            for range in ranges {
                stream::push_item(text, range.clone(), cut.indent, &mut chunk);
            }
            let values: Vec<Value> = yaml_serde::from_str(&chunk).map_err(|_| fallback())?;
            if values.len() != ranges.len() {
                return Err(fallback());
            }
            for (j, value) in values.into_iter().enumerate() {
                if value.is_null() {
                    continue;
                }
                let at = Source { item: Some(n32(c * ITEMS_PER_PARSE + j)), ..source.clone() };
                self.read_object(at, value, item_default)?;
            }
        }
        Ok(())
    }
}

/// An object's `kind` and `apiVersion`, both required non-empty strings.
fn object_kind(source: &Source, obj: &serde_json::Map<String, Value>) -> Result<(String, String), ManifestError> {
    let text = |field: &str| -> Result<String, ManifestError> {
        match obj.get(field) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            None | Some(Value::Null) => Err(ManifestError::at(source, "", field, "Required value")),
            Some(Value::String(_)) => Err(ManifestError::at(source, "", field, "Required value")),
            Some(other) => Err(ManifestError::at(
                source,
                "",
                field,
                format!("expected a string, got {}", ksched_engine::config::kind_of(other)),
            )),
        }
    };
    Ok((text("kind")?, text("apiVersion")?))
}

/// For a list (`kind` ends in `List`): the (apiVersion, kind) its items default to — none
/// for `List`, which holds any kinds.
fn list_item_default(
    source: &Source,
    kind: &str,
    api_version: &str,
) -> Result<Option<(String, String)>, ManifestError> {
    let item_kind = kind.strip_suffix("List").unwrap_or(kind);
    if item_kind.is_empty() {
        if api_version != "v1" {
            return Err(unsupported_api_version(source, kind, api_version, "v1"));
        }
        return Ok(None);
    }
    match KINDS.iter().find(|(k, _, _)| *k == item_kind) {
        Some(&(k, v, _)) if v == api_version => Ok(Some((v.to_owned(), k.to_owned()))),
        Some(&(_, v, _)) => Err(unsupported_api_version(source, kind, api_version, v)),
        // A list of a kind not modelled: its items are skipped one by one.
        None => Ok(Some((api_version.to_owned(), item_kind.to_owned()))),
    }
}

/// Fields the API server requires that k8s-openapi's types default silently (`[]` = every
/// element of a list).
fn required_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "spec",
            "spec.containers",
            "spec.containers[].name",
            "spec.containers[].ports[].containerPort",
            "spec.initContainers[].name",
            "spec.initContainers[].ports[].containerPort",
        ],
        "Node" => &["spec.taints[].key", "spec.taints[].effect"],
        "PriorityClass" => &["value"],
        "StorageClass" => &["provisioner"],
        "CSINode" => &["spec", "spec.drivers[].name", "spec.drivers[].nodeID"],
        "CSIDriver" => &["spec"],
        "CSIStorageCapacity" => &["storageClassName"],
        "Deployment" | "StatefulSet" | "DaemonSet" => &["spec", "spec.selector", "spec.template"],
        "ReplicaSet" => &["spec", "spec.selector"],
        "ReplicationController" | "Job" => &["spec", "spec.template"],
        "CronJob" => &["spec", "spec.schedule", "spec.jobTemplate"],
        _ => &[],
    }
}

/// The first field of `required_fields(kind)` missing (or null, or an empty list) in `value`.
fn missing_required(kind: &str, value: &Value) -> Option<String> {
    fn walk(v: &Value, segments: &[&str], path: String) -> Option<String> {
        let (first, rest) = segments.split_first()?;
        let (name, each) = match first.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (*first, false),
        };
        let sub = if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") };
        let child = v.get(name).filter(|c| !c.is_null());
        match (child, each) {
            // Under an optional list: nothing to check when it (or its parent) is absent.
            (None, _) if segments.iter().any(|s| s.ends_with("[]")) => None,
            (None, _) => Some(sub),
            (Some(Value::Array(items)), false) if items.is_empty() && rest.is_empty() => Some(sub),
            (Some(c), false) => walk(c, rest, sub),
            (Some(c), true) => c
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .find_map(|(i, item)| walk(item, rest, format!("{sub}[{i}]"))),
        }
    }
    required_fields(kind).iter().find_map(|path| {
        let segments: Vec<&str> = path.split('.').collect();
        walk(value, &segments, String::new())
    })
}

/// A count or position for messages (saturating; no manifest has four billion lines).
fn n32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn unsupported_kind(source: &Source, kind: &str) -> ManifestError {
    let kinds: Vec<&str> = KINDS.iter().map(|(k, _, _)| *k).chain(["List"]).collect();
    ManifestError::at(source, "", "kind", format!("Unsupported value: {kind:?}: ksched reads {}", kinds.join(", ")))
}

fn unsupported_api_version(source: &Source, kind: &str, got: &str, want: &str) -> ManifestError {
    ManifestError::at(source, "", "apiVersion", format!("Unsupported value: {got:?}: ksched reads {kind} as {want:?}"))
}

/// Decodes `value` into `T` strictly: a wrong type names its field path, and a field `T` does
/// not have is an error (`kubectl`'s default `--validate=strict`).
fn decode<T: DeserializeOwned + Serialize>(source: &Source, object: &str, value: Value) -> Result<T, ManifestError> {
    let typed: T = serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        ManifestError::at(source, object, field, e.into_inner().to_string())
    })?;
    let back = serde_json::to_value(&typed).map_err(|e| ManifestError::at(source, object, "", e.to_string()))?;
    if let Some(field) = unknown_field(&value, &back) {
        return Err(ManifestError::at(source, object, field, "unknown field"));
    }
    Ok(typed)
}

/// The path of the first field in `input` (not null) that `typed` (the same object decoded
/// and encoded again) does not have. The path is built only for the field found.
fn unknown_field(input: &Value, typed: &Value) -> Option<String> {
    match (input, typed) {
        (Value::Object(a), Value::Object(b)) => {
            a.iter().find_map(|(k, v)| match b.get(k) {
                None if !v.is_null() => Some(k.clone()),
                None => None,
                Some(w) => unknown_field(v, w).map(|sub| {
                    if sub.starts_with('[') {
                        format!("{k}{sub}")
                    } else {
                        format!("{k}.{sub}")
                    }
                }),
            })
        }
        (Value::Array(a), Value::Array(b)) => a.iter().zip(b).enumerate().find_map(|(i, (v, w))| {
            unknown_field(v, w)
                .map(|sub| if sub.starts_with('[') { format!("[{i}]{sub}") } else { format!("[{i}].{sub}") })
        }),
        _ => None,
    }
}

/// The documents of a YAML stream with their first lines (when the `---` markers account for
/// every document). A syntax error names its line.
fn yaml_documents(file: &str, text: &str) -> Result<Vec<(Value, Option<u32>)>, ManifestError> {
    let mut docs = Vec::new();
    for doc in yaml_serde::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).map_err(|e| {
            let line = e.location().map(|l| n32(l.line()));
            let n = n32(docs.len() + 1);
            ManifestError { document: Some(n), ..ManifestError::file(file, line, format!("malformed YAML: {e}")) }
        })?;
        docs.push(value);
    }
    let lines = yaml_document_lines(text);
    let lines_known = lines.len() == docs.len();
    Ok(docs.into_iter().enumerate().map(|(i, v)| (v, if lines_known { lines.get(i).copied() } else { None })).collect())
}

/// 1-based first lines of the documents of a YAML stream: the first content line (when
/// something other than comments and directives precedes the first `---`), then every `---`.
fn yaml_document_lines(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut before_first_marker = true;
    for (i, line) in text.lines().enumerate() {
        let is_marker = line.strip_prefix("---").is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']));
        if is_marker {
            out.push(n32(i + 1));
            before_first_marker = false;
        } else if before_first_marker {
            let t = line.trim_start();
            if !(t.is_empty() || t.starts_with('#') || line.starts_with('%')) {
                out.push(n32(i + 1));
                before_first_marker = false;
            }
        }
    }
    if out.is_empty() {
        // An empty stream is one empty document.
        out.push(1);
    }
    out
}

/// The values of a JSON stream with their first lines.
fn json_documents(file: &str, text: &str) -> Result<Vec<(Value, Option<u32>)>, ManifestError> {
    let mut docs = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let start = stream.byte_offset();
        let Some(next) = stream.next() else { break };
        let value = next.map_err(|e| ManifestError {
            document: Some(n32(docs.len() + 1)),
            ..ManifestError::file(file, Some(n32(e.line())), format!("malformed JSON: {e}"))
        })?;
        // The value starts at the first non-blank byte after the previous one.
        let skipped = text.get(start..).map_or(0, |rest| rest.len() - rest.trim_start().len());
        let line = text.get(..start + skipped).map_or(1, |before| before.matches('\n').count() + 1);
        docs.push((value, Some(n32(line))));
    }
    Ok(docs)
}

/// A pending pod the simulation does not schedule, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotQueued {
    /// `spec.schedulingGates` is not empty: the pod is created and queued, and the
    /// SchedulingGates PreEnqueue plugin holds it in the queue.
    Gated(Vec<Sym>),
    /// `spec.schedulerName` names no profile of the scheduler (another scheduler's pod, which
    /// upstream's scheduler ignores).
    OtherScheduler(Sym),
    /// An OrderedReady StatefulSet's pod not created yet: it waits for the pod (namespace/name)
    /// of the ordinal before it to be bound. Cleared when the pod is created.
    WaitingForOrdinal(String),
}

impl fmt::Display for NotQueued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotQueued::Gated(gates) => {
                // SchedulingGates' own message (Go's `%v` of the names).
                let names: Vec<&str> = gates.iter().map(|g| g.as_str()).collect();
                write!(f, "waiting for scheduling gates: [{}]", names.join(" "))
            }
            NotQueued::OtherScheduler(name) => {
                write!(f, "spec.schedulerName {name:?} names no profile of this scheduler: another scheduler's pod")
            }
            NotQueued::WaitingForOrdinal(pod) => {
                write!(f, "not created: the StatefulSet (OrderedReady) waits for {pod} to be bound")
            }
        }
    }
}

mod stream;

#[cfg(test)]
mod tests;
