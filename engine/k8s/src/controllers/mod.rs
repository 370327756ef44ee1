//! Workload controllers expanded into the pods their controllers would create.
//!
//! A manifest's Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet, Job and
//! CronJob become pods (k8s-openapi `Pod`s, converted like any other pod) the way the
//! kube-controller-manager's controllers write them: the template's labels and annotations,
//! the namespace, a controller owner reference, and names in the controller's style
//! (`<replicaset>-<5 chars>`, `<statefulset>-<ordinal>`, `<job>-<index>-<5 chars>`), the random
//! parts drawn from the run's seed. Each controller is reconciled against the pods already in
//! the input: pods it controls (by owner reference) count toward its replicas, so a
//! `kubectl get all -o yaml` dump only gets the missing ones.
//!
//! - Deployment → a ReplicaSet `<deployment>-<pod-template-hash>` (the hash of its template)
//!   → pods labelled `pod-template-hash`. A Deployment with a ReplicaSet of its own in the input
//!   is left to that ReplicaSet.
//! - StatefulSet → pods `<set>-<ordinal>` labelled `statefulset.kubernetes.io/pod-name` and
//!   `apps.kubernetes.io/pod-index`; each `volumeClaimTemplates` entry → a claim
//!   `<template>-<set>-<ordinal>` that the pod's volume names. `OrderedReady` (the default)
//!   creates ordinal N+1 only once N is bound (`OrderedSet`); `Parallel` creates all at once.
//! - DaemonSet → one pod per node where the daemon controller would run one: the template's
//!   node selector and required node affinity match the node, and its taints (NoSchedule /
//!   NoExecute) are tolerated by the template's tolerations plus those the controller adds.
//!   Each pod is pinned by a required `matchFields metadata.name In [node]` term, which
//!   replaces the template's required terms as the controller does. `daemon_pod_for_node`
//!   serves nodes added later.
//! - Job → min(parallelism, completions) pods (indexes 0.. for Indexed Jobs, labelled and
//!   annotated `batch.kubernetes.io/job-completion-index`); the live controllers create the rest as pods
//!   complete.
//! - CronJob → no pods now; the live controllers fire it over simulated time (`cron`: its
//!   schedule).
//!
//! What happens to these pods over time (pods replaced, Jobs completing, CronJobs firing,
//! scaling) is the live controllers' (the `ksched` command's `load::live`, which runs them
//! beside a simulation; this crate knows no simulation).

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

use k8s_openapi::api::apps::v1 as kapps;
use k8s_openapi::api::core::v1 as k;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use ksched_engine::api::{tolerations_tolerate, LabelSelector, Node, Pod, Sym, TaintEffect};
use ksched_engine::snapshot::objects::{Controller, ControllerKind};

mod adopt;
pub mod cron;

pub use adopt::adopt;

use crate::convert::label_selector;
use crate::manifest::{ManifestError, ManifestPod, Source, Workload};
use crate::{pod_from_k8s, ConvertError};

/// The label a Deployment's ReplicaSet and pods carry: the hash of the pod template.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// The label naming a StatefulSet pod.
pub const STATEFULSET_POD_NAME: &str = "statefulset.kubernetes.io/pod-name";
/// The label holding a StatefulSet pod's ordinal.
pub const POD_INDEX: &str = "apps.kubernetes.io/pod-index";
/// The label (and annotation) holding an Indexed Job pod's completion index.
pub const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// The label holding the template revision (StatefulSet, DaemonSet).
pub const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";

/// The characters of generated name suffixes (no vowels, no look-alike digits).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Taints the daemon controller makes its pods tolerate: key, effect, and whether only pods
/// on the host network get it.
const DAEMON_TOLERATIONS: &[(&str, &str, bool)] = &[
    ("node.kubernetes.io/not-ready", "NoExecute", false),
    ("node.kubernetes.io/unreachable", "NoExecute", false),
    ("node.kubernetes.io/disk-pressure", "NoSchedule", false),
    ("node.kubernetes.io/memory-pressure", "NoSchedule", false),
    ("node.kubernetes.io/pid-pressure", "NoSchedule", false),
    ("node.kubernetes.io/unschedulable", "NoSchedule", false),
    ("node.kubernetes.io/network-unavailable", "NoSchedule", true),
];

/// A pod a controller creates, with the claims to create before it (StatefulSet).
#[derive(Clone, Debug)]
pub struct CreatedPod {
    pub pod: k::Pod,
    pub claims: Vec<k::PersistentVolumeClaim>,
    /// The controller's source.
    pub source: Source,
    /// The controller (`deployment default/web`), named in errors about the pod.
    pub controller: String,
}

impl CreatedPod {
    /// An error converting this pod (or its claims) as one about the controller's template:
    /// `spec.containers[0]...` becomes `spec.template.spec.containers[0]...`.
    pub fn template_error(&self, e: ConvertError) -> ManifestError {
        let field = if e.object.starts_with("persistentvolumeclaim") {
            format!("spec.volumeClaimTemplates: {}", e.field)
        } else {
            format!("spec.template.{}", e.field)
        };
        ManifestError::at(&self.source, &self.controller, field, e.message)
    }
}

/// The rest of an OrderedReady StatefulSet: each pod is created once the one before it is
/// bound.
#[derive(Clone, Debug)]
pub struct OrderedSet {
    /// `statefulset NAMESPACE/NAME`.
    pub set: String,
    /// `namespace/name` of the pod the next one waits for (`None`: create the next now).
    pub waiting_for: Option<String>,
    pub remaining: VecDeque<CreatedPod>,
}

impl OrderedSet {
    /// The next pod to create, when the one it waits for is bound (`is_bound` of its
    /// `namespace/name`). Call again after creating it.
    pub fn next_ready(&mut self, is_bound: impl Fn(&str) -> bool) -> Option<CreatedPod> {
        if self.waiting_for.as_deref().is_some_and(|w| !is_bound(w)) {
            return None;
        }
        let next = self.remaining.pop_front()?;
        self.waiting_for = Some(pod_key(&next.pod));
        Some(next)
    }
}

/// A DaemonSet of the input, kept to create the daemon pods of nodes added later.
#[derive(Clone, Debug)]
pub struct DaemonSetWatch {
    pub daemon_set: kapps::DaemonSet,
    /// Its uid (`metadata.uid`, or the one made up for its pods' owner references).
    pub uid: String,
    pub source: Source,
}

impl DaemonSetWatch {
    /// The pod the daemon controller would create on `node` (a node added later), if it runs
    /// one there.
    pub fn pod_for(&self, node: &Node, rng: &mut NameRng) -> Result<Option<CreatedPod>, ManifestError> {
        let pod = daemon_pod_for_node(&self.daemon_set, &self.uid, node, rng, &self.source)?;
        let m = &self.daemon_set.metadata;
        let controller = format!("daemonset {}/{}", namespace_of(m), name_of(m));
        Ok(pod.map(|pod| CreatedPod { pod, claims: Vec::new(), source: self.source.clone(), controller }))
    }
}

/// What the controllers make of the input's workloads.
#[derive(Clone, Debug, Default)]
pub struct Expansion {
    /// Pods to create now, in the order of their controllers in the input.
    pub pods: Vec<CreatedPod>,
    /// OrderedReady StatefulSets' pods still to create, one after another.
    pub ordered: Vec<OrderedSet>,
    /// Selectors of ReplicaSets (those the Deployments create too), ReplicationControllers
    /// and StatefulSets, for SelectorSpread and default topology spreading.
    pub controllers: Vec<Controller>,
    /// What the simulation does not do for them (a replica controller it does not scale down).
    pub notes: Vec<String>,
    /// The DaemonSets, for the nodes added while the simulation runs.
    pub daemon_sets: Vec<DaemonSetWatch>,
    /// Deployment (namespace, name) → the `pod-template-hash` of the ReplicaSet whose pods it
    /// adopted from the input (its pods and the ones it creates carry it).
    pub deployment_hashes: std::collections::HashMap<(String, String), String>,
}

/// A small deterministic generator (splitmix64) for name suffixes and uids.
#[derive(Clone, Debug)]
pub struct NameRng(u64);

impl NameRng {
    pub fn new(seed: u64) -> NameRng {
        NameRng(seed ^ 0x6b73_6368_6564_2131)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Five characters like a `generateName` suffix.
    pub fn suffix(&mut self) -> String {
        (0..5).map(|_| char::from(ALPHANUMS[(self.next() % ALPHANUMS.len() as u64) as usize])).collect()
    }

    /// A version-4-shaped uid.
    pub fn uid(&mut self) -> String {
        let (a, b) = (self.next(), self.next());
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | ((b >> 48) & 0x3fff),
            b & 0xffff_ffff_ffff
        )
    }
}

/// The pods of the input a controller owns: `(kind, namespace, name)` → pods.
struct Owned<'a> {
    by_owner: BTreeMap<(String, String, String), Vec<&'a Pod>>,
}

impl<'a> Owned<'a> {
    fn new(pods: &'a [ManifestPod]) -> Owned<'a> {
        let mut by_owner: BTreeMap<_, Vec<&Pod>> = BTreeMap::new();
        for p in pods {
            // Terminating pods are on their way out; the controller already replaces them.
            if p.pod.deletion_timestamp.is_some() {
                continue;
            }
            if let Some(o) = &p.pod.owner {
                by_owner
                    .entry((
                        o.kind.as_str().to_owned(),
                        p.pod.namespace.as_str().to_owned(),
                        o.name.as_str().to_owned(),
                    ))
                    .or_default()
                    .push(&p.pod);
            }
        }
        Owned { by_owner }
    }

    fn of(&self, kind: &str, namespace: &str, name: &str) -> &[&'a Pod] {
        self.by_owner.get(&(kind.to_owned(), namespace.to_owned(), name.to_owned())).map_or(&[], Vec::as_slice)
    }

    /// The ReplicaSet `<deployment>-<hash>` of Deployment `namespace/name` that owns input
    /// pods labelled with that hash (what `adopt` gave the Deployment), with the hash, the
    /// pods, and the other hashes they carry (a rollout's old or new ReplicaSet, whose pods
    /// `adopt` gave to the same one). Every pod carries a `pod-template-hash`, and one at least
    /// this ReplicaSet's: so Deployment `web` does not take ReplicaSet `web-api-<hash>`.
    fn deployment_set(&self, namespace: &str, name: &str) -> Option<(String, &[&'a Pod], Vec<String>)> {
        let from = ("ReplicaSet".to_owned(), namespace.to_owned(), format!("{name}-"));
        self.by_owner.range(from..).take_while(|((k, ns, _), _)| k == "ReplicaSet" && ns == namespace).find_map(
            |((_, _, rs), pods)| {
                let hash = rs.strip_prefix(name)?.strip_prefix('-')?;
                let mut hashes = BTreeSet::new();
                for p in pods {
                    hashes.insert(p.labels.get(Sym::new(POD_TEMPLATE_HASH))?.as_str().to_owned());
                }
                hashes.remove(hash).then(|| (hash.to_owned(), pods.as_slice(), hashes.into_iter().collect()))
            },
        )
    }
}

/// Expands `workloads` against the input's `pods` and `nodes`; names and uids come from
/// `seed`. Errors name the workload's file, document and field.
pub fn expand(
    workloads: &[(Workload, Source)],
    pods: &[ManifestPod],
    nodes: &[(Node, Source)],
    seed: u64,
) -> Result<Expansion, ManifestError> {
    let owned = Owned::new(pods);
    let mut rng = NameRng::new(seed);
    let mut out = Expansion::default();
    // ReplicaSets in the input that a Deployment owns: that Deployment is already rolled out.
    let mut owned_sets: HashSet<(String, String)> = HashSet::new();
    for (w, _) in workloads {
        if let Workload::ReplicaSet(rs) = w {
            for o in rs.metadata.owner_references.iter().flatten() {
                if o.kind == "Deployment" && o.controller == Some(true) {
                    owned_sets.insert((namespace_of(&rs.metadata).to_owned(), o.name.clone()));
                }
            }
        }
    }
    for (w, source) in workloads {
        let mut cx = Context { source, rng: &mut rng, owned: &owned, out: &mut out };
        match w {
            Workload::Deployment(d) => cx.deployment(d, &owned_sets)?,
            Workload::ReplicaSet(rs) => cx.replica_set(rs)?,
            Workload::ReplicationController(rc) => cx.replication_controller(rc)?,
            Workload::StatefulSet(s) => cx.stateful_set(s)?,
            Workload::DaemonSet(ds) => cx.daemon_set(ds, nodes)?,
            Workload::Job(j) => cx.job(j)?,
            // No pods until its schedule fires (`live`).
            Workload::CronJob(_) => {}
        }
    }
    Ok(out)
}

/// Creates the claims of a StatefulSet's pod that do not exist yet: an existing claim of that
/// name (a dump's `data-db-0`, bound to its volume) is the pod's, as the StatefulSet
/// controller uses it rather than making another.
pub fn create_missing_claims(
    storage: &mut ksched_engine::api::StorageObjects,
    claims: impl IntoIterator<Item = ksched_engine::api::PersistentVolumeClaim>,
) {
    for c in claims {
        if storage.pvc(c.namespace, c.name).is_none() {
            storage.upsert_pvc(c);
        }
    }
}

/// The pod a DaemonSet would create on `node`, or `None` when the daemon controller would not
/// run one there. `uid` is the DaemonSet's (its `metadata.uid`, or one made up by the caller).
pub fn daemon_pod_for_node(
    ds: &kapps::DaemonSet,
    uid: &str,
    node: &Node,
    rng: &mut NameRng,
    source: &Source,
) -> Result<Option<k::Pod>, ManifestError> {
    let m = &ds.metadata;
    let (namespace, name) = (namespace_of(m), name_of(m));
    let object = format!("daemonset {namespace}/{name}");
    let spec = ds.spec.as_ref().ok_or_else(|| ManifestError::at(source, &object, "spec", "Required value"))?;
    let template = with_daemon_tolerations(&spec.template);
    let probe = template_pod(&template, namespace, name, &object, source)?;
    if !daemon_should_run(&probe, node) {
        return Ok(None);
    }
    let owner = owner_ref("apps/v1", "DaemonSet", name, uid);
    let labels = [
        (CONTROLLER_REVISION_HASH.to_owned(), revision_hash(&spec.template)),
        ("pod-template-generation".to_owned(), m.generation.unwrap_or(1).to_string()),
    ];
    let mut pod = new_pod(&template, namespace, format!("{name}-{}", rng.suffix()), owner, &labels, &[]);
    pin_to_node(&mut pod, node.name.as_str());
    Ok(Some(pod))
}

struct Context<'a, 'b> {
    source: &'a Source,
    rng: &'b mut NameRng,
    owned: &'a Owned<'a>,
    out: &'b mut Expansion,
}

impl Context<'_, '_> {
    fn uid(&mut self, m: &meta::ObjectMeta) -> String {
        match m.uid.as_deref().filter(|u| !u.is_empty()) {
            Some(u) => u.to_owned(),
            None => self.rng.uid(),
        }
    }

    fn err(&self, object: &str, field: &str, message: impl Into<String>) -> ManifestError {
        ManifestError::at(self.source, object, field, message)
    }

    fn push(&mut self, controller: &str, pod: k::Pod) {
        let source = self.source.clone();
        self.out.pods.push(CreatedPod { pod, claims: Vec::new(), source, controller: controller.to_owned() });
    }

    /// Checks that `selector` selects the template's labels (the API server rejects a
    /// workload otherwise) and returns it converted.
    fn selector(
        &self,
        object: &str,
        selector: &meta::LabelSelector,
        template: &k::PodTemplateSpec,
    ) -> Result<LabelSelector, ManifestError> {
        let sel = label_selector(object, "spec.selector", selector).map_err(|e| self.convert(e))?;
        let labels = template_labels(template);
        if sel.is_empty() {
            return Err(self.err(object, "spec.selector", "Invalid value: empty selector is invalid for a workload"));
        }
        if !sel.matches(&labels) {
            return Err(self.err(
                object,
                "spec.template.metadata.labels",
                "Invalid value: `selector` does not match template `labels`",
            ));
        }
        Ok(sel)
    }

    /// Says how many of the input's pods a replica controller counts as its own (`whose`
    /// says where they came from), and what it does about the rest.
    fn adopted_note(&mut self, object: &str, whose: &str, have: usize, want: usize) {
        if have == 0 {
            return;
        }
        let rest = match have.cmp(&want) {
            std::cmp::Ordering::Less => format!("creates {} more", want - have),
            std::cmp::Ordering::Equal => "creates none".to_owned(),
            std::cmp::Ordering::Greater => "ksched does not scale down".to_owned(),
        };
        self.out.notes.push(format!("{object}: adopted {have} existing pod(s){whose} for {want} replicas; {rest}"));
    }

    fn convert(&self, e: ConvertError) -> ManifestError {
        ManifestError::at(self.source, e.object, e.field, e.message)
    }

    fn deployment(
        &mut self,
        d: &kapps::Deployment,
        owned_sets: &HashSet<(String, String)>,
    ) -> Result<(), ManifestError> {
        let m = &d.metadata;
        let (namespace, name) = (namespace_of(m), name_of(m));
        let object = format!("deployment {namespace}/{name}");
        let spec = d.spec.as_ref().ok_or_else(|| self.err(&object, "spec", "Required value"))?;
        let mut selector = self.selector(&object, &spec.selector, &spec.template)?;
        if owned_sets.contains(&(namespace.to_owned(), name.to_owned())) {
            return Ok(());
        }
        // The ReplicaSet whose pods the input holds (its hash is the cluster's), or one of ours.
        let (hash, have, others) = match self.owned.deployment_set(namespace, name) {
            Some((hash, pods, others)) => {
                self.out.deployment_hashes.insert((namespace.to_owned(), name.to_owned()), hash.clone());
                (hash, pods.len(), others)
            }
            None => (template_hash(&spec.template, collision_count(d)), 0, Vec::new()),
        };
        let rs_name = format!("{name}-{hash}");
        selector.match_labels.insert(Sym::new(POD_TEMPLATE_HASH), Sym::new(&hash));
        self.out.controllers.push(Controller {
            kind: ControllerKind::ReplicaSet,
            namespace: Sym::new(namespace),
            name: Sym::new(&rs_name),
            selector,
        });
        let rs_uid = self.rng.uid();
        let labels = [(POD_TEMPLATE_HASH.to_owned(), hash)];
        let want = usize::try_from(spec.replicas.unwrap_or(1).max(0)).unwrap_or(0);
        let mut whose = format!(" of ReplicaSet {rs_name}");
        for other in &others {
            whose.push_str(&format!(" and {name}-{other}"));
        }
        whose.push_str(match others.len() {
            0 => ", which the input does not hold",
            _ => " (a rollout in progress, ReplicaSets not in the input), counted as one ReplicaSet",
        });
        self.adopted_note(&object, &whose, have, want);
        for _ in have..want {
            let owner = owner_ref("apps/v1", "ReplicaSet", &rs_name, &rs_uid);
            let pod_name = format!("{rs_name}-{}", self.rng.suffix());
            let pod = new_pod(&spec.template, namespace, pod_name, owner, &labels, &[]);
            self.push(&object, pod);
        }
        Ok(())
    }

    /// Pods for a replica controller (ReplicaSet or ReplicationController): `replicas` minus
    /// those it already owns.
    #[allow(clippy::too_many_arguments)]
    fn replicas(
        &mut self,
        kind: &str,
        api_version: &str,
        m: &meta::ObjectMeta,
        replicas: i32,
        template: &k::PodTemplateSpec,
    ) -> Result<(), ManifestError> {
        let (namespace, name) = (namespace_of(m), name_of(m));
        let have = self.owned.of(kind, namespace, name).len();
        let want = usize::try_from(replicas.max(0)).unwrap_or(0);
        self.adopted_note(&format!("{} {namespace}/{name}", kind.to_lowercase()), "", have, want);
        let uid = self.uid(m);
        for _ in have..want {
            let owner = owner_ref(api_version, kind, name, &uid);
            let pod_name = format!("{name}-{}", self.rng.suffix());
            let pod = new_pod(template, namespace, pod_name, owner, &[], &[]);
            self.push(&format!("{} {namespace}/{name}", kind.to_lowercase()), pod);
        }
        Ok(())
    }

    fn replica_set(&mut self, rs: &kapps::ReplicaSet) -> Result<(), ManifestError> {
        let m = &rs.metadata;
        let object = format!("replicaset {}/{}", namespace_of(m), name_of(m));
        let spec = rs.spec.as_ref().ok_or_else(|| self.err(&object, "spec", "Required value"))?;
        let template = spec.template.as_ref().ok_or_else(|| self.err(&object, "spec.template", "Required value"))?;
        let selector = self.selector(&object, &spec.selector, template)?;
        self.out.controllers.push(Controller {
            kind: ControllerKind::ReplicaSet,
            namespace: Sym::new(namespace_of(m)),
            name: Sym::new(name_of(m)),
            selector,
        });
        self.replicas("ReplicaSet", "apps/v1", m, spec.replicas.unwrap_or(1), template)
    }

    fn replication_controller(&mut self, rc: &k::ReplicationController) -> Result<(), ManifestError> {
        let m = &rc.metadata;
        let object = format!("replicationcontroller {}/{}", namespace_of(m), name_of(m));
        let spec = rc.spec.as_ref().ok_or_else(|| self.err(&object, "spec", "Required value"))?;
        let template = spec.template.as_ref().ok_or_else(|| self.err(&object, "spec.template", "Required value"))?;
        // Without a selector, the template's labels are the selector (API defaulting).
        let labels = template.metadata.as_ref().and_then(|t| t.labels.clone()).unwrap_or_default();
        let map = spec.selector.clone().filter(|s| !s.is_empty()).unwrap_or(labels);
        let selector = meta::LabelSelector { match_labels: Some(map), match_expressions: None };
        let selector = self.selector(&object, &selector, template)?;
        self.out.controllers.push(Controller {
            kind: ControllerKind::ReplicationController,
            namespace: Sym::new(namespace_of(m)),
            name: Sym::new(name_of(m)),
            selector,
        });
        self.replicas("ReplicationController", "v1", m, spec.replicas.unwrap_or(1), template)
    }

    fn stateful_set(&mut self, s: &kapps::StatefulSet) -> Result<(), ManifestError> {
        let m = &s.metadata;
        let (namespace, name) = (namespace_of(m), name_of(m));
        let object = format!("statefulset {namespace}/{name}");
        let spec = s.spec.as_ref().ok_or_else(|| self.err(&object, "spec", "Required value"))?;
        let selector = self.selector(&object, &spec.selector, &spec.template)?;
        self.out.controllers.push(Controller {
            kind: ControllerKind::StatefulSet,
            namespace: Sym::new(namespace),
            name: Sym::new(name),
            selector: selector.clone(),
        });
        let parallel = match spec.pod_management_policy.as_deref() {
            None | Some("OrderedReady") => false,
            Some("Parallel") => true,
            Some(other) => {
                return Err(self.err(
                    &object,
                    "spec.podManagementPolicy",
                    format!("Unsupported value: {other:?}: supported values: \"OrderedReady\", \"Parallel\""),
                ))
            }
        };
        let start = spec.ordinals.as_ref().and_then(|o| o.start).unwrap_or(0);
        let replicas = spec.replicas.unwrap_or(1).max(0);
        let uid = self.uid(m);
        let revision = format!("{name}-{}", revision_hash(&spec.template));
        let have: Vec<&Pod> = self.owned.of("StatefulSet", namespace, name).to_vec();
        let mut ordered = OrderedSet { set: object.clone(), waiting_for: None, remaining: VecDeque::new() };
        for ordinal in start..start.saturating_add(replicas) {
            let pod_name = format!("{name}-{ordinal}");
            if let Some(existing) = have.iter().find(|p| *p.name == *pod_name) {
                // An existing pod still pending holds back the ordinals after it.
                ordered.waiting_for = existing.node_name.is_none().then(|| existing.key());
                continue;
            }
            let labels = [
                (STATEFULSET_POD_NAME.to_owned(), pod_name.clone()),
                (POD_INDEX.to_owned(), ordinal.to_string()),
                (CONTROLLER_REVISION_HASH.to_owned(), revision.clone()),
            ];
            let owner = owner_ref("apps/v1", "StatefulSet", name, &uid);
            let mut pod = new_pod(&spec.template, namespace, pod_name, owner, &labels, &[]);
            let mut claims = Vec::new();
            for (i, t) in spec.volume_claim_templates.iter().flatten().enumerate() {
                let template_name = t.metadata.name.as_deref().unwrap_or("");
                if template_name.is_empty() {
                    return Err(self.err(
                        &object,
                        &format!("spec.volumeClaimTemplates[{i}].metadata.name"),
                        "Required value",
                    ));
                }
                let claim_name = format!("{template_name}-{name}-{ordinal}");
                claims.push(claim_for(t, namespace, &claim_name, &spec.selector));
                set_claim_volume(&mut pod, template_name, &claim_name);
            }
            let created = CreatedPod { pod, claims, source: self.source.clone(), controller: object.clone() };
            if parallel {
                self.out.pods.push(created);
            } else {
                ordered.remaining.push_back(created);
            }
        }
        if !ordered.remaining.is_empty() {
            self.out.ordered.push(ordered);
        }
        Ok(())
    }

    fn daemon_set(&mut self, ds: &kapps::DaemonSet, nodes: &[(Node, Source)]) -> Result<(), ManifestError> {
        let m = &ds.metadata;
        let (namespace, name) = (namespace_of(m), name_of(m));
        let object = format!("daemonset {namespace}/{name}");
        let spec = ds.spec.as_ref().ok_or_else(|| self.err(&object, "spec", "Required value"))?;
        self.selector(&object, &spec.selector, &spec.template)?;
        let uid = self.uid(m);
        let covered: HashSet<Sym> =
            self.owned.of("DaemonSet", namespace, name).iter().filter_map(|p| pinned_node(p)).collect();
        for (node, _) in nodes {
            if covered.contains(&node.name) {
                continue;
            }
            if let Some(pod) = daemon_pod_for_node(ds, &uid, node, self.rng, self.source)? {
                self.push(&object, pod);
            }
        }
        self.out.daemon_sets.push(DaemonSetWatch { daemon_set: ds.clone(), uid, source: self.source.clone() });
        Ok(())
    }

    fn job(&mut self, j: &k8s_openapi::api::batch::v1::Job) -> Result<(), ManifestError> {
        let m = &j.metadata;
        let (namespace, name) = (namespace_of(m), name_of(m));
        let object = format!("job {namespace}/{name}");
        let spec = j.spec.as_ref().ok_or_else(|| self.err(&object, "spec", "Required value"))?;
        if spec.suspend == Some(true) {
            self.out.notes.push(format!("{object}: suspended, no pods"));
            return Ok(());
        }
        let indexed = match spec.completion_mode.as_deref() {
            None | Some("NonIndexed") => false,
            Some("Indexed") => true,
            Some(other) => {
                return Err(self.err(
                    &object,
                    "spec.completionMode",
                    format!("Unsupported value: {other:?}: supported values: \"NonIndexed\", \"Indexed\""),
                ))
            }
        };
        let parallelism = spec.parallelism.unwrap_or(1).max(0);
        let completions = spec.completions;
        if indexed && completions.is_none() {
            return Err(self.err(&object, "spec.completions", "Required value: when completion mode is Indexed"));
        }
        let want = completions.map_or(parallelism, |c| parallelism.min(c.max(0)));
        let uid = self.uid(m);
        let have = self.owned.of("Job", namespace, name);
        let taken: HashSet<String> =
            have.iter().filter_map(|p| p.labels.get(Sym::new(JOB_COMPLETION_INDEX)).map(|v| v.to_string())).collect();
        let missing = usize::try_from(want).unwrap_or(0).saturating_sub(have.len());
        let mut next_index = 0i32;
        for _ in 0..missing {
            let index = indexed.then(|| {
                while taken.contains(&next_index.to_string()) {
                    next_index += 1;
                }
                next_index += 1;
                next_index - 1
            });
            let pod = job_pod(&spec.template, namespace, name, &uid, index, self.rng);
            self.push(&object, pod);
        }
        Ok(())
    }
}

/// A pod of Job `name` (uid `uid`): the job's labels, and for an Indexed Job its completion
/// index as label, annotation and in the name (`<job>-<index>-<5 chars>`).
pub fn job_pod(
    template: &k::PodTemplateSpec,
    namespace: &str,
    name: &str,
    uid: &str,
    index: Option<i32>,
    rng: &mut NameRng,
) -> k::Pod {
    let mut labels = vec![
        ("batch.kubernetes.io/controller-uid".to_owned(), uid.to_owned()),
        ("batch.kubernetes.io/job-name".to_owned(), name.to_owned()),
        ("controller-uid".to_owned(), uid.to_owned()),
        ("job-name".to_owned(), name.to_owned()),
    ];
    let mut annotations = Vec::new();
    let pod_name = match index {
        Some(i) => {
            labels.push((JOB_COMPLETION_INDEX.to_owned(), i.to_string()));
            annotations.push((JOB_COMPLETION_INDEX.to_owned(), i.to_string()));
            format!("{name}-{i}-{}", rng.suffix())
        }
        None => format!("{name}-{}", rng.suffix()),
    };
    let owner = owner_ref("batch/v1", "Job", name, uid);
    new_pod(template, namespace, pod_name, owner, &labels, &annotations)
}

fn collision_count(d: &kapps::Deployment) -> u32 {
    d.status.as_ref().and_then(|s| s.collision_count).and_then(|c| u32::try_from(c).ok()).unwrap_or(0)
}

pub fn namespace_of(m: &meta::ObjectMeta) -> &str {
    m.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default")
}

pub fn name_of(m: &meta::ObjectMeta) -> &str {
    m.name.as_deref().unwrap_or("")
}

fn pod_key(p: &k::Pod) -> String {
    format!("{}/{}", namespace_of(&p.metadata), name_of(&p.metadata))
}

pub fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> meta::OwnerReference {
    meta::OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn template_labels(t: &k::PodTemplateSpec) -> ksched_engine::api::Labels {
    let mut out = ksched_engine::api::Labels::new();
    for (k, v) in t.metadata.as_ref().and_then(|m| m.labels.as_ref()).into_iter().flatten() {
        out.insert(Sym::new(k), Sym::new(v));
    }
    out
}

/// A pod from `template` named `name` in `namespace`, owned by `owner`, with extra labels and
/// annotations on top of the template's.
pub fn new_pod(
    template: &k::PodTemplateSpec,
    namespace: &str,
    name: String,
    owner: meta::OwnerReference,
    labels: &[(String, String)],
    annotations: &[(String, String)],
) -> k::Pod {
    let tm = template.metadata.clone().unwrap_or_default();
    let mut all_labels = tm.labels.unwrap_or_default();
    all_labels.extend(labels.iter().cloned());
    let mut all_annotations = tm.annotations.unwrap_or_default();
    all_annotations.extend(annotations.iter().cloned());
    k::Pod {
        metadata: meta::ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_owned()),
            labels: Some(all_labels).filter(|l| !l.is_empty()),
            annotations: Some(all_annotations).filter(|a| !a.is_empty()),
            owner_references: Some(vec![owner]),
            ..meta::ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// The template as an engine pod (for the daemon controller's node check); errors name the
/// workload and the template's field.
fn template_pod(
    template: &k::PodTemplateSpec,
    namespace: &str,
    name: &str,
    object: &str,
    source: &Source,
) -> Result<Pod, ManifestError> {
    if template.spec.is_none() {
        return Err(ManifestError::at(source, object, "spec.template.spec", "Required value"));
    }
    let owner = owner_ref("v1", "Template", name, "");
    let pod = new_pod(template, namespace, name.to_owned(), owner, &[], &[]);
    pod_from_k8s(&pod).map_err(|e| ManifestError::at(source, object, format!("spec.template.{}", e.field), e.message))
}

/// The template with the tolerations the daemon controller adds to its pods (each only when
/// the template has no toleration with the same key and effect).
fn with_daemon_tolerations(template: &k::PodTemplateSpec) -> k::PodTemplateSpec {
    let mut t = template.clone();
    let Some(spec) = t.spec.as_mut() else { return t };
    let host_network = spec.host_network == Some(true);
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for &(key, effect, host_network_only) in DAEMON_TOLERATIONS {
        if host_network_only && !host_network {
            continue;
        }
        let present = tolerations.iter().any(|t| t.key.as_deref() == Some(key) && t.effect.as_deref() == Some(effect));
        if !present {
            tolerations.push(k::Toleration {
                key: Some(key.to_owned()),
                operator: Some("Exists".to_owned()),
                effect: Some(effect.to_owned()),
                ..k::Toleration::default()
            });
        }
    }
    t
}

/// Whether the daemon controller runs `pod` (its template, tolerations added) on `node`: the
/// node selector and the required node affinity match, and every NoSchedule / NoExecute taint
/// is tolerated.
fn daemon_should_run(pod: &Pod, node: &Node) -> bool {
    if !node.labels.is_superset_of(&pod.node_selector) {
        return false;
    }
    let required = pod.affinity.as_ref().and_then(|a| a.node_affinity.as_ref()).and_then(|n| n.required.as_ref());
    if required.is_some_and(|r| !r.matches(&node.labels, node.name)) {
        return false;
    }
    node.taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .all(|t| tolerations_tolerate(&pod.tolerations, t))
}

/// Replaces the pod's required node affinity terms with one `matchFields metadata.name In
/// [node]` term, as the daemon controller pins its pods; preferred terms stay.
fn pin_to_node(pod: &mut k::Pod, node: &str) {
    let term = k::NodeSelectorTerm {
        match_expressions: None,
        match_fields: Some(vec![k::NodeSelectorRequirement {
            key: "metadata.name".to_owned(),
            operator: "In".to_owned(),
            values: Some(vec![node.to_owned()]),
        }]),
    };
    let Some(spec) = pod.spec.as_mut() else { return };
    let affinity = spec.affinity.get_or_insert_with(k::Affinity::default);
    let node_affinity = affinity.node_affinity.get_or_insert_with(k::NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution =
        Some(k::NodeSelector { node_selector_terms: vec![term] });
}

/// The node a daemon pod is on or pinned to.
fn pinned_node(p: &Pod) -> Option<Sym> {
    if let Some(n) = p.node_name {
        return Some(n);
    }
    let required = p.affinity.as_ref()?.node_affinity.as_ref()?.required.as_ref()?;
    required
        .terms
        .iter()
        .flat_map(|t| t.match_fields.iter())
        .find_map(|r| (r.key.as_str() == "metadata.name" && r.values.len() == 1).then(|| r.values[0]))
}

/// The claim a StatefulSet creates for one pod from a `volumeClaimTemplates` entry: the
/// template's spec, labels and annotations, plus the set's `matchLabels`.
pub fn claim_for(
    t: &k::PersistentVolumeClaim,
    namespace: &str,
    claim_name: &str,
    selector: &meta::LabelSelector,
) -> k::PersistentVolumeClaim {
    let mut labels = t.metadata.labels.clone().unwrap_or_default();
    labels.extend(selector.match_labels.iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
    k::PersistentVolumeClaim {
        metadata: meta::ObjectMeta {
            name: Some(claim_name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels).filter(|l| !l.is_empty()),
            annotations: t.metadata.annotations.clone(),
            ..meta::ObjectMeta::default()
        },
        spec: t.spec.clone(),
        status: None,
    }
}

/// Points the pod's volume named `volume` at `claim` (adding the volume when the template
/// has none of that name), as the StatefulSet controller does.
pub fn set_claim_volume(pod: &mut k::Pod, volume: &str, claim: &str) {
    let Some(spec) = pod.spec.as_mut() else { return };
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    let source = k::PersistentVolumeClaimVolumeSource { claim_name: claim.to_owned(), read_only: None };
    match volumes.iter_mut().find(|v| v.name == volume) {
        Some(v) => {
            *v = k::Volume { name: volume.to_owned(), persistent_volume_claim: Some(source), ..k::Volume::default() }
        }
        None => volumes.push(k::Volume {
            name: volume.to_owned(),
            persistent_volume_claim: Some(source),
            ..k::Volume::default()
        }),
    }
}

/// 32-bit FNV-1a.
fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// The `pod-template-hash` of a template, shaped like the Deployment controller's: a 32-bit
/// hash of the template (and the collision count) in decimal, each digit mapped to a name-safe
/// character. The hash is of ksched's own encoding of the template, so its value differs from
/// the one the controller would compute.
pub fn template_hash(template: &k::PodTemplateSpec, collision_count: u32) -> String {
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if collision_count > 0 {
        bytes.extend_from_slice(&collision_count.to_le_bytes());
    }
    fnv32a(&bytes).to_string().bytes().map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()])).collect()
}

/// The revision hash of a StatefulSet's or DaemonSet's template.
pub fn revision_hash(template: &k::PodTemplateSpec) -> String {
    template_hash(template, 0)
}

#[cfg(test)]
mod tests;
