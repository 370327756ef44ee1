//! NodeVolumeLimits (the MaxCSIVolumeCount predicate): rejects nodes where the pod's CSI
//! volumes would take a driver past the number of unique volumes the node may use.
//!
//! Volumes count per CSI driver: claims through their bound PV's CSI source (or, unbound or
//! with the PV gone, through their StorageClass's provisioner), and in-tree GCE PD / EBS /
//! Azure Disk / Cinder disks (inline or PV) under the CSI driver migration hands them to, on
//! nodes that have a CSINode. The limit of a driver is its CSINode `allocatable.count`, else
//! the node's allocatable `attachable-volumes-csi-<driver>`.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::api::storage::pvc_not_found;
use crate::api::{InTreePlugin, PersistentVolumeSource, Pod, StorageObjects, Sym, Volume};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::{Code, CycleState, FilterPlugin, Plugin, PreFilterPlugin, Reason, Status};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::objects::ClusterObjects;
use crate::snapshot::Snapshot;

pub const NAME: &str = "NodeVolumeLimits";
pub const REASON: &str = "node(s) exceed max volume count";

/// Node allocatable resource holding a CSI driver's limit: this prefix + the driver name.
pub const CSI_ATTACH_LIMIT_PREFIX: &str = "attachable-volumes-csi-";
/// Longest resource name; longer CSI limit keys are hashed upstream (see `attach_limit_key`).
const RESOURCE_NAME_LENGTH_LIMIT: usize = 63;

/// A volume's identity within its driver: a volume handle, or, for a claim not bound yet, the
/// claim itself (upstream makes a random-prefixed handle of `namespace/name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum VolumeKey {
    Handle(Sym),
    Claim(Sym, Sym),
}

/// One volume counted against a CSI driver's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CsiVolume {
    driver: Sym,
    key: VolumeKey,
    /// An in-tree volume counted under its migration driver: only on nodes with a CSINode.
    migrated: bool,
}

impl CsiVolume {
    #[inline]
    fn counts_on(&self, has_csi_node: bool) -> bool {
        !self.migrated || has_csi_node
    }
}

/// How one pod volume counts.
/// What one pod volume means to a volume count filter (this one and the legacy counts).
pub(crate) enum Resolved<T> {
    Counted(T),
    NotCounted,
    /// The claim does not exist.
    MissingClaim(Sym),
    /// A claim volume with an empty claim name.
    NoClaimName,
}

/// The pod's distinct counted volumes (`same` decides distinctness), or the status that
/// rejects it: a missing claim (on every node) or a claim volume with no name.
pub(crate) fn pod_volumes<T>(
    pod: &Pod,
    mut resolve: impl FnMut(&crate::api::Volume) -> Resolved<T>,
    same: impl Fn(&T, &T) -> bool,
) -> (SmallVec<[T; 4]>, Option<Status>) {
    let mut volumes: SmallVec<[T; 4]> = SmallVec::new();
    for v in &pod.volumes {
        match resolve(v) {
            Resolved::Counted(c) => {
                if !volumes.iter().any(|x| same(x, &c)) {
                    volumes.push(c);
                }
            }
            Resolved::NotCounted => {}
            Resolved::MissingClaim(claim) => {
                let msg = format!("looking up PVC {}/{}: {}", pod.namespace, claim, pvc_not_found(claim));
                let st = Status::new(Code::UnschedulableAndUnresolvable, Reason::Text(Sym::new(&msg)));
                return (volumes, Some(st));
            }
            Resolved::NoClaimName => return (volumes, Some(Status::error("PersistentVolumeClaim had no name"))),
        }
    }
    (volumes, None)
}

#[derive(Debug)]
pub struct NodeVolumeLimits {
    /// Per `InTreePlugin` (by discriminant): its in-tree plugin name and its CSI driver,
    /// interned once.
    migration: [(Sym, Sym); 4],
}

impl Default for NodeVolumeLimits {
    fn default() -> Self {
        NodeVolumeLimits { migration: InTreePlugin::ALL.map(|p| (Sym::new(p.plugin_name()), Sym::new(p.csi_driver()))) }
    }
}

impl Plugin for NodeVolumeLimits {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(VOLUMES => volumes);

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::CsiNode, ActionType::ADD | ActionType::UPDATE),
            ClusterEvent::new(EventResource::Pod, ActionType::DELETE),
            ClusterEvent::new(EventResource::PersistentVolumeClaim, ActionType::ADD),
        ]
    }

    /// A deleted bound pod matters when it mounted volumes; CSINode and claim changes always do.
    fn queueing_hint(&self, _pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        match event.pods() {
            (Some(gone), None) => queue_if(gone.node_name.is_some() && !gone.volumes.is_empty()),
            _ => QueueingHint::Queue,
        }
    }
}

/// The node allocatable resource for `driver`'s limit; `None` for names long enough that
/// upstream hashes them (those nodes' limits come from CSINode only here).
pub fn attach_limit_key(driver: &str) -> Option<String> {
    (CSI_ATTACH_LIMIT_PREFIX.len() + driver.len() < RESOURCE_NAME_LENGTH_LIMIT)
        .then(|| format!("{CSI_ATTACH_LIMIT_PREFIX}{driver}"))
}

#[derive(Clone)]
struct PreFilterState {
    /// Set when the pod's own volumes cannot be resolved; every node is rejected with it.
    rejected: Option<Status>,
    /// The pod's volumes that count, unique.
    volumes: SmallVec<[CsiVolume; 4]>,
    /// The drivers of `volumes`, each with its node allocatable limit key.
    drivers: SmallVec<[(Sym, Option<Sym>); 2]>,
    objects: Arc<ClusterObjects>,
}

impl NodeVolumeLimits {
    pub fn new() -> NodeVolumeLimits {
        NodeVolumeLimits::default()
    }

    #[inline]
    fn driver_of(&self, plugin: InTreePlugin) -> Sym {
        self.migration[plugin as usize].1
    }

    #[inline]
    fn migratable_provisioner(&self, provisioner: Sym) -> Option<InTreePlugin> {
        InTreePlugin::ALL.into_iter().find(|&p| self.migration[p as usize].0 == provisioner)
    }

    fn resolve(&self, storage: &StorageObjects, pod: &Pod, v: &Volume) -> Resolved<CsiVolume> {
        let Some(claim) = v.claim_name() else {
            // Inline CSI volumes are not counted; inline in-tree disks under their driver.
            return match v.migratable_inline() {
                Some((plugin, id)) if !id.is_empty() => Resolved::Counted(CsiVolume {
                    driver: self.driver_of(plugin),
                    key: VolumeKey::Handle(id),
                    migrated: true,
                }),
                _ => Resolved::NotCounted,
            };
        };
        if claim.is_empty() {
            return Resolved::NoClaimName;
        }
        let Some(pvc) = storage.pvc(pod.namespace, claim) else {
            return Resolved::MissingClaim(claim);
        };
        if let Some(pv) = storage.pv(pvc.volume_name).filter(|_| !pvc.volume_name.is_empty()) {
            if let PersistentVolumeSource::Csi { driver, volume_handle } = pv.source {
                if driver.is_empty() || volume_handle.is_empty() {
                    return Resolved::NotCounted;
                }
                return Resolved::Counted(CsiVolume { driver, key: VolumeKey::Handle(volume_handle), migrated: false });
            }
            return match pv.source.migratable() {
                Some((plugin, id)) if !id.is_empty() => Resolved::Counted(CsiVolume {
                    driver: self.driver_of(plugin),
                    key: VolumeKey::Handle(id),
                    migrated: true,
                }),
                _ => Resolved::NotCounted,
            };
        }
        // Unbound, or its PV is gone: count it under its class's provisioner. Without a class
        // the claim binds immediately and must be bound before scheduling: not counted.
        let Some(class) = storage.storage_class(pvc.storage_class).filter(|_| !pvc.storage_class.is_empty()) else {
            return Resolved::NotCounted;
        };
        let key = VolumeKey::Claim(pod.namespace, claim);
        if let Some(plugin) = self.migratable_provisioner(class.provisioner) {
            return Resolved::Counted(CsiVolume { driver: self.driver_of(plugin), key, migrated: true });
        }
        if class.provisioner.is_empty() {
            return Resolved::NotCounted;
        }
        Resolved::Counted(CsiVolume { driver: class.provisioner, key, migrated: false })
    }
}

impl PreFilterPlugin for NodeVolumeLimits {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        if !pod.volumes.iter().any(|v| v.claim_name().is_some() || v.migratable_inline().is_some()) {
            return Status::skip();
        }
        let objects = Arc::clone(&snapshot.objects);
        let (volumes, rejected) =
            pod_volumes(pod, |v| self.resolve(&objects.storage, pod, v), |a, b| a.driver == b.driver && a.key == b.key);
        let mut drivers: SmallVec<[(Sym, Option<Sym>); 2]> = SmallVec::new();
        for v in &volumes {
            if !drivers.iter().any(|(d, _)| *d == v.driver) {
                drivers.push((v.driver, attach_limit_key(v.driver.as_str()).map(|k| Sym::new(&k))));
            }
        }
        state.write_slot(PreFilterState { rejected, volumes, drivers, objects });
        Status::success()
    }
}

impl FilterPlugin for NodeVolumeLimits {
    fn filter(&self, state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        if pod.volumes.is_empty() {
            return Status::success();
        }
        let Some(s) = state.read_slot::<PreFilterState>() else {
            return Status::error("NodeVolumeLimits: no PreFilter state");
        };
        if let Some(st) = &s.rejected {
            return st.clone();
        }
        if s.volumes.is_empty() {
            return Status::success();
        }
        let storage = &s.objects.storage;
        let csi_node = storage.csi_node(node.name());
        let has_csi_node = csi_node.is_some();

        // The limits of the drivers this pod adds volumes of on this node.
        let mut limits: SmallVec<[(Sym, i64); 2]> = SmallVec::new();
        for &(driver, alloc_key) in &s.drivers {
            if !s.volumes.iter().any(|v| v.driver == driver && v.counts_on(has_csi_node)) {
                continue;
            }
            let from_csi_node = csi_node.and_then(|c| c.allocatable(driver));
            let from_node = || alloc_key.map(|k| node.allocatable().scalar.get(k)).filter(|&l| l != 0);
            if let Some(limit) = from_csi_node.or_else(from_node) {
                limits.push((driver, limit));
            }
        }
        if limits.is_empty() {
            return Status::success();
        }

        // Unique volumes of those drivers already used by the node's pods.
        let mut attached: SmallVec<[(Sym, VolumeKey); 16]> = SmallVec::new();
        for p in node.pods() {
            for v in &p.volumes {
                if let Resolved::Counted(c) = self.resolve(storage, p, v) {
                    if c.counts_on(has_csi_node) && limits.iter().any(|(d, _)| *d == c.driver) {
                        attached.push((c.driver, c.key));
                    }
                }
            }
        }
        attached.sort_unstable();
        attached.dedup();

        for &(driver, limit) in &limits {
            let new = s
                .volumes
                .iter()
                .filter(|v| {
                    v.driver == driver && v.counts_on(has_csi_node) && attached.binary_search(&(driver, v.key)).is_err()
                })
                .count() as i64;
            let existing = attached.iter().filter(|(d, _)| *d == driver).count() as i64;
            if new > 0 && existing + new > limit {
                return Status::unschedulable(REASON);
            }
        }
        Status::success()
    }
}

crate::state_slot!(PreFilterState);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{
        CsiNode, Node, PersistentVolume, PersistentVolumeClaim, ResourceName, StorageClass, VolumeBindingMode,
    };
    use crate::framework::plugins::test_util::node_info;

    const EBS_CSI: &str = "ebs.csi.aws.com";

    fn storage() -> StorageObjects {
        let mut s = StorageObjects::new()
            .with_storage_class(StorageClass::new("csi-sc", "csi.example.com"))
            .with_storage_class(
                StorageClass::new("ebs-sc", "kubernetes.io/aws-ebs")
                    .binding_mode(VolumeBindingMode::WaitForFirstConsumer),
            )
            .with_storage_class(StorageClass::new("empty-provisioner", ""))
            .with_pv(PersistentVolume::aws_ebs("pv-ebs", "vol-intree"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-ebs-pv").bound_to("pv-ebs"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-unbound").storage_class("csi-sc"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-unbound-ebs").storage_class("ebs-sc"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-pv-gone").bound_to("gone").storage_class("csi-sc"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-no-class"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-empty-provisioner").storage_class("empty-provisioner"))
            .with_pvc(PersistentVolumeClaim::new("default", "p-eph").storage_class("csi-sc"));
        for i in 0..4 {
            s.upsert_pv(PersistentVolume::csi(&format!("pv{i}"), "csi.example.com", &format!("h{i}")));
            s.upsert_pvc(PersistentVolumeClaim::new("default", &format!("c{i}")).bound_to(&format!("pv{i}")));
        }
        s.upsert_pv(PersistentVolume::csi("pv-other", "other.example.com", "h0"));
        s.upsert_pvc(PersistentVolumeClaim::new("default", "c-other").bound_to("pv-other"));
        s
    }

    /// (description, pod, storage, node, pods on the node, want).
    type Case<'a> = (&'static str, Pod, &'a StorageObjects, Node, Vec<Pod>, Code);

    fn pod(name: &str, vols: Vec<Volume>) -> Pod {
        vols.into_iter().fold(Pod::builder(name), |b, v| b.volume(v)).build()
    }

    fn claims(name: &str, claims: &[&str]) -> Pod {
        pod(name, claims.iter().enumerate().map(|(i, c)| Volume::pvc(&format!("v{i}"), c)).collect())
    }

    fn run(p: &Pod, storage: &StorageObjects, node: &NodeInfo) -> Status {
        let objects = ClusterObjects { storage: storage.clone(), ..ClusterObjects::default() };
        let snap = Snapshot::from_node_infos(vec![node.clone()]).with_objects(objects);
        let mut state = CycleState::new();
        let st = NodeVolumeLimits::new().pre_filter(&mut state, p, &snap);
        if !st.is_success() {
            return st;
        }
        NodeVolumeLimits::new().filter(&state, p, node)
    }

    #[test]
    fn node_volume_limits_filter_table() {
        let base = storage();
        let limit2 = base.clone().with_csi_node(CsiNode::new("n").driver("csi.example.com", Some(2)));
        let ebs_limit1 = base.clone().with_csi_node(CsiNode::new("n").driver(EBS_CSI, Some(1)));
        let no_count = base.clone().with_csi_node(CsiNode::new("n").driver("csi.example.com", None));
        let node = Node::builder("n").build();
        let alloc_node = Node::builder("n")
            .capacity(ResourceName::Scalar(Sym::new("attachable-volumes-csi-csi.example.com")), 1)
            .build();
        let one = claims("e1", &["c0"]);
        let two = claims("e2", &["c0", "c1"]);
        let unres = Code::UnschedulableAndUnresolvable;
        let cases: Vec<Case> = vec![
            ("no volumes: skip", pod("p", vec![]), &limit2, node.clone(), vec![], Code::Skip),
            (
                "emptyDir and inline CSI: skip",
                pod("p", vec![Volume::other("x"), Volume::csi("c", "d")]),
                &limit2,
                node.clone(),
                vec![],
                Code::Skip,
            ),
            ("under the limit", claims("p", &["c1"]), &limit2, node.clone(), vec![one.clone()], Code::Success),
            ("over the limit", claims("p", &["c2"]), &limit2, node.clone(), vec![two.clone()], Code::Unschedulable),
            (
                "two new over the limit",
                claims("p", &["c1", "c2"]),
                &limit2,
                node.clone(),
                vec![one.clone()],
                Code::Unschedulable,
            ),
            (
                "shared volume counts once",
                claims("p", &["c0", "c1"]),
                &limit2,
                node.clone(),
                vec![two.clone()],
                Code::Success,
            ),
            (
                "same claim twice in the pod counts once",
                claims("p", &["c1", "c1"]),
                &limit2,
                node.clone(),
                vec![one.clone()],
                Code::Success,
            ),
            (
                "other driver not limited",
                claims("p", &["c-other"]),
                &limit2,
                node.clone(),
                vec![two.clone()],
                Code::Success,
            ),
            (
                "no CSINode and no allocatable: no limit",
                claims("p", &["c2", "c3"]),
                &base,
                node.clone(),
                vec![two.clone()],
                Code::Success,
            ),
            (
                "CSINode driver without count: no limit",
                claims("p", &["c2"]),
                &no_count,
                node.clone(),
                vec![two.clone()],
                Code::Success,
            ),
            (
                "node allocatable limit",
                claims("p", &["c1"]),
                &base,
                alloc_node.clone(),
                vec![one.clone()],
                Code::Unschedulable,
            ),
            (
                "CSINode count overrides allocatable",
                claims("p", &["c1"]),
                &limit2,
                alloc_node.clone(),
                vec![one.clone()],
                Code::Success,
            ),
            (
                "unbound claim counts by class provisioner",
                claims("p", &["c-unbound"]),
                &limit2,
                node.clone(),
                vec![two.clone()],
                Code::Unschedulable,
            ),
            (
                "claim whose PV is gone counts by class",
                claims("p", &["c-pv-gone"]),
                &limit2,
                node.clone(),
                vec![two.clone()],
                Code::Unschedulable,
            ),
            (
                "unbound claim without class not counted",
                claims("p", &["c-no-class"]),
                &limit2,
                node.clone(),
                vec![two.clone()],
                Code::Success,
            ),
            (
                "class with empty provisioner not counted",
                claims("p", &["c-empty-provisioner"]),
                &limit2,
                node.clone(),
                vec![two.clone()],
                Code::Success,
            ),
            (
                "generic ephemeral volume counts its claim",
                pod("p", vec![Volume::ephemeral("eph")]),
                &limit2,
                node.clone(),
                vec![two.clone()],
                Code::Unschedulable,
            ),
            (
                "in-tree EBS PV migrated",
                claims("p", &["c-ebs-pv"]),
                &ebs_limit1,
                node.clone(),
                vec![pod("e", vec![Volume::aws_ebs("x", "vol-9", false)])],
                Code::Unschedulable,
            ),
            (
                "in-tree EBS same disk inline and PV counts once",
                claims("p", &["c-ebs-pv"]),
                &ebs_limit1,
                node.clone(),
                vec![pod("e", vec![Volume::aws_ebs("x", "vol-intree", false)])],
                Code::Success,
            ),
            (
                "in-tree EBS class provisioner migrated",
                claims("p", &["c-unbound-ebs"]),
                &ebs_limit1,
                node.clone(),
                vec![pod("e", vec![Volume::aws_ebs("x", "vol-9", false)])],
                Code::Unschedulable,
            ),
            (
                "inline EBS migrated",
                pod("p", vec![Volume::aws_ebs("x", "vol-8", false)]),
                &ebs_limit1,
                node.clone(),
                vec![pod("e", vec![Volume::aws_ebs("x", "vol-9", false)])],
                Code::Unschedulable,
            ),
            (
                "in-tree not counted without CSINode",
                pod("p", vec![Volume::aws_ebs("x", "vol-8", false)]),
                &base,
                Node::builder("n")
                    .capacity(ResourceName::Scalar(Sym::new("attachable-volumes-csi-ebs.csi.aws.com")), 1)
                    .build(),
                vec![pod("e", vec![Volume::aws_ebs("x", "vol-9", false)])],
                Code::Success,
            ),
            (
                "existing pod with a missing claim is ignored",
                claims("p", &["c1"]),
                &limit2,
                node.clone(),
                vec![claims("e", &["c0", "gone"])],
                Code::Success,
            ),
            ("missing claim", claims("p", &["nope"]), &limit2, node.clone(), vec![], unres),
            ("empty claim name", claims("p", &[""]), &limit2, node.clone(), vec![], Code::Error),
        ];
        for (desc, p, storage, node, existing, want) in cases {
            let st = run(&p, storage, &node_info(node, &existing));
            assert_eq!(st.code, want, "{desc}: {}", st.message());
            if want == Code::Unschedulable {
                assert_eq!(st.message(), REASON, "{desc}");
            }
        }
        let st = run(&claims("p", &["nope"]), &limit2, &node_info(node.clone(), &[]));
        assert_eq!(st.message(), r#"looking up PVC default/nope: persistentvolumeclaim "nope" not found"#);
    }

    #[test]
    fn node_volume_limits_node_already_over_limit_fits_when_nothing_new() {
        let s = storage().with_csi_node(CsiNode::new("n").driver("csi.example.com", Some(1)));
        let info = node_info(Node::builder("n").build(), &[claims("e", &["c0", "c1"])]);
        assert_eq!(run(&claims("p", &["c1"]), &s, &info).code, Code::Success);
        assert_eq!(run(&claims("p", &["c2"]), &s, &info).code, Code::Unschedulable);
    }

    #[test]
    fn attach_limit_key_short_and_long_names() {
        assert_eq!(attach_limit_key("csi.example.com").as_deref(), Some("attachable-volumes-csi-csi.example.com"));
        assert_eq!(attach_limit_key(&"x".repeat(40)), None);
    }
}
