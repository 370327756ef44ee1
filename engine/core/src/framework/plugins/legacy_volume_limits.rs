//! The legacy in-tree volume count filters (MaxEBSVolumeCount, MaxGCEPDVolumeCount,
//! MaxAzureDiskVolumeCount, MaxCinderVolumeCount; plugins EBSLimits, GCEPDLimits,
//! AzureDiskLimits, CinderLimits): reject nodes where the pod's disks of one in-tree kind would
//! take the node past that kind's attach limit. Off by default; on nodes with a CSINode the
//! kind counts as migrated and NodeVolumeLimits counts it instead.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::api::{
    InTreePlugin, PersistentVolumeClaim, PersistentVolumeSource, Pod, StorageObjects, Sym, Volume, VolumeSource,
};
use crate::framework::plugins::node_volume_limits::{pod_volumes, Resolved};
use crate::framework::{CycleState, FilterPlugin, Plugin, PreFilterPlugin, Status};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::objects::ClusterObjects;
use crate::snapshot::Snapshot;

pub use super::node_volume_limits::REASON;

pub const EBS_NAME: &str = "EBSLimits";
pub const GCE_PD_NAME: &str = "GCEPDLimits";
pub const AZURE_DISK_NAME: &str = "AzureDiskLimits";
pub const CINDER_NAME: &str = "CinderLimits";

/// Attach limit of an AWS instance without Nitro.
pub const DEFAULT_MAX_EBS_VOLUMES: i64 = 39;
/// Attach limit of the Nitro instance types (c5, m5, r5, t3, z1d).
pub const DEFAULT_MAX_EBS_NITRO_VOLUMES: i64 = 25;
pub const DEFAULT_MAX_GCE_PD_VOLUMES: i64 = 16;
pub const DEFAULT_MAX_AZURE_DISK_VOLUMES: i64 = 16;
pub const DEFAULT_MAX_CINDER_VOLUMES: i64 = 256;

/// The environment variable that overrides the default limit of every kind (not the node's
/// allocatable one).
pub const KUBE_MAX_PD_VOLS: &str = "KUBE_MAX_PD_VOLS";

const LABEL_INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
const LABEL_INSTANCE_TYPE_BETA: &str = "beta.kubernetes.io/instance-type";

/// A volume's identity for counting: the disk ID, or a claim whose disk is not known yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum DiskKey {
    Id(Sym),
    Claim(Sym, Sym),
}

/// One of the four legacy count filters, by the in-tree plugin it counts.
#[derive(Debug)]
pub struct LegacyVolumeLimits {
    kind: InTreePlugin,
    /// Replaces the default limit (what `KUBE_MAX_PD_VOLS` does upstream).
    max_volumes: Option<i64>,
    /// The in-tree provisioner name, interned.
    provisioner: Sym,
    /// The node allocatable resource carrying this kind's limit.
    limit_key: Sym,
    instance_type_keys: [Sym; 2],
}

impl LegacyVolumeLimits {
    pub fn new(kind: InTreePlugin) -> LegacyVolumeLimits {
        LegacyVolumeLimits {
            kind,
            max_volumes: None,
            provisioner: Sym::new(kind.plugin_name()),
            limit_key: Sym::new(limit_key(kind)),
            instance_type_keys: [Sym::new(LABEL_INSTANCE_TYPE), Sym::new(LABEL_INSTANCE_TYPE_BETA)],
        }
    }

    pub fn ebs() -> LegacyVolumeLimits {
        LegacyVolumeLimits::new(InTreePlugin::AwsEbs)
    }

    pub fn gce_pd() -> LegacyVolumeLimits {
        LegacyVolumeLimits::new(InTreePlugin::GcePd)
    }

    pub fn azure_disk() -> LegacyVolumeLimits {
        LegacyVolumeLimits::new(InTreePlugin::AzureDisk)
    }

    pub fn cinder() -> LegacyVolumeLimits {
        LegacyVolumeLimits::new(InTreePlugin::Cinder)
    }

    /// Replaces the default limit; a node's allocatable limit still wins.
    pub fn with_max_volumes(mut self, max: Option<i64>) -> Self {
        self.max_volumes = max;
        self
    }

    /// Reads `KUBE_MAX_PD_VOLS` as upstream does: a positive integer replaces the default
    /// limit; anything else is ignored.
    pub fn with_max_volumes_from_env(self) -> Self {
        let max = std::env::var(KUBE_MAX_PD_VOLS).ok().and_then(|v| v.trim().parse::<i64>().ok()).filter(|&v| v > 0);
        self.with_max_volumes(max)
    }

    pub fn kind(&self) -> InTreePlugin {
        self.kind
    }

    /// The disk ID of an inline volume of this kind.
    #[inline]
    fn inline_id(&self, v: &Volume) -> Option<Sym> {
        match (self.kind, &v.source) {
            (InTreePlugin::AwsEbs, VolumeSource::AwsElasticBlockStore { volume_id, .. }) => Some(*volume_id),
            (InTreePlugin::GcePd, VolumeSource::GcePersistentDisk { pd_name, .. }) => Some(*pd_name),
            (InTreePlugin::AzureDisk, VolumeSource::AzureDisk { disk_name, .. }) => Some(*disk_name),
            (InTreePlugin::Cinder, VolumeSource::Cinder { volume_id }) => Some(*volume_id),
            _ => None,
        }
    }

    /// The disk ID of a PV of this kind.
    #[inline]
    fn pv_id(&self, source: &PersistentVolumeSource) -> Option<Sym> {
        match (self.kind, source) {
            (InTreePlugin::AwsEbs, PersistentVolumeSource::AwsElasticBlockStore { volume_id }) => Some(*volume_id),
            (InTreePlugin::GcePd, PersistentVolumeSource::GcePersistentDisk { pd_name }) => Some(*pd_name),
            (InTreePlugin::AzureDisk, PersistentVolumeSource::AzureDisk { disk_name, .. }) => Some(*disk_name),
            (InTreePlugin::Cinder, PersistentVolumeSource::Cinder { volume_id }) => Some(*volume_id),
            _ => None,
        }
    }

    /// Whether the claim's StorageClass provisions disks of this kind.
    #[inline]
    fn matches_provisioner(&self, storage: &StorageObjects, pvc: &PersistentVolumeClaim) -> bool {
        !pvc.storage_class.is_empty()
            && storage.storage_class(pvc.storage_class).is_some_and(|c| c.provisioner == self.provisioner)
    }

    fn resolve(&self, storage: &StorageObjects, pod: &Pod, v: &Volume) -> Resolved<DiskKey> {
        if let Some(id) = self.inline_id(v) {
            return Resolved::Counted(DiskKey::Id(id));
        }
        let Some(claim) = v.claim_name() else {
            return Resolved::NotCounted;
        };
        if claim.is_empty() {
            return Resolved::NoClaimName;
        }
        let Some(pvc) = storage.pvc(pod.namespace, claim) else {
            return Resolved::MissingClaim(claim);
        };
        // Unbound, or bound to a PV that is gone: the pod may still use the disk it had, so
        // count the claim if its class provisions this kind.
        let pv = storage.pv(pvc.volume_name).filter(|_| !pvc.volume_name.is_empty());
        match pv {
            Some(pv) => self.pv_id(&pv.source).map_or(Resolved::NotCounted, |id| Resolved::Counted(DiskKey::Id(id))),
            None if self.matches_provisioner(storage, pvc) => Resolved::Counted(DiskKey::Claim(pod.namespace, claim)),
            None => Resolved::NotCounted,
        }
    }

    /// The default limit on `node` when neither an override nor node allocatable sets one.
    fn default_max(&self, node: &NodeInfo, nitro_types: &[Sym]) -> i64 {
        match self.kind {
            InTreePlugin::AwsEbs => {
                let labels = &node.node().labels;
                let instance_type = self.instance_type_keys.iter().find_map(|&k| labels.get(k));
                if instance_type.is_some_and(|t| nitro_types.contains(&t)) {
                    DEFAULT_MAX_EBS_NITRO_VOLUMES
                } else {
                    DEFAULT_MAX_EBS_VOLUMES
                }
            }
            InTreePlugin::GcePd => DEFAULT_MAX_GCE_PD_VOLUMES,
            InTreePlugin::AzureDisk => DEFAULT_MAX_AZURE_DISK_VOLUMES,
            InTreePlugin::Cinder => DEFAULT_MAX_CINDER_VOLUMES,
        }
    }
}

/// The node allocatable resource with the attach limit of `kind`.
pub fn limit_key(kind: InTreePlugin) -> &'static str {
    match kind {
        InTreePlugin::AwsEbs => "attachable-volumes-aws-ebs",
        InTreePlugin::GcePd => "attachable-volumes-gce-pd",
        InTreePlugin::AzureDisk => "attachable-volumes-azure-disk",
        InTreePlugin::Cinder => "attachable-volumes-cinder",
    }
}

/// Whether an AWS instance type has the Nitro attach limit (upstream's `^[cmr]5.*|t3|z1d`,
/// unanchored but for its first branch).
pub fn is_ebs_nitro_instance_type(t: &str) -> bool {
    ["c5", "m5", "r5"].iter().any(|p| t.starts_with(p)) || t.contains("t3") || t.contains("z1d")
}

impl Plugin for LegacyVolumeLimits {
    fn name(&self) -> &'static str {
        match self.kind {
            InTreePlugin::AwsEbs => EBS_NAME,
            InTreePlugin::GcePd => GCE_PD_NAME,
            InTreePlugin::AzureDisk => AZURE_DISK_NAME,
            InTreePlugin::Cinder => CINDER_NAME,
        }
    }
}

#[derive(Clone)]
struct PreFilterState {
    rejected: Option<Status>,
    /// The pod's disks of this kind, unique.
    volumes: SmallVec<[DiskKey; 4]>,
    /// Instance types in the snapshot with the Nitro EBS limit (EBS without an override only).
    nitro_types: SmallVec<[Sym; 4]>,
    objects: Arc<ClusterObjects>,
}

#[derive(Clone)]
/// The cycle-state slot, one per kind so that several legacy filters can run in one profile.
struct KindState<const K: usize>(PreFilterState);

impl PreFilterPlugin for LegacyVolumeLimits {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        if !pod.volumes.iter().any(|v| self.inline_id(v).is_some() || v.claim_name().is_some()) {
            return Status::skip();
        }
        let objects = Arc::clone(&snapshot.objects);
        let (volumes, rejected) = pod_volumes(pod, |v| self.resolve(&objects.storage, pod, v), |a, b| a == b);
        let mut nitro_types: SmallVec<[Sym; 4]> = SmallVec::new();
        if self.kind == InTreePlugin::AwsEbs && self.max_volumes.is_none() && !volumes.is_empty() {
            // Classify each instance type once here, so Filter compares ids only.
            let mut seen: SmallVec<[Sym; 8]> = SmallVec::new();
            for info in snapshot.iter() {
                let labels = &info.node().labels;
                if let Some(t) = self.instance_type_keys.iter().find_map(|&k| labels.get(k)) {
                    if !seen.contains(&t) {
                        seen.push(t);
                        if is_ebs_nitro_instance_type(t.as_str()) {
                            nitro_types.push(t);
                        }
                    }
                }
            }
        }
        let s = PreFilterState { rejected, volumes, nitro_types, objects };
        match self.kind {
            InTreePlugin::AwsEbs => state.write(KindState::<0>(s)),
            InTreePlugin::GcePd => state.write(KindState::<1>(s)),
            InTreePlugin::AzureDisk => state.write(KindState::<2>(s)),
            InTreePlugin::Cinder => state.write(KindState::<3>(s)),
        }
        Status::success()
    }
}

impl LegacyVolumeLimits {
    fn read_state<'a>(&self, state: &'a CycleState) -> Option<&'a PreFilterState> {
        match self.kind {
            InTreePlugin::AwsEbs => state.read::<KindState<0>>().map(|s| &s.0),
            InTreePlugin::GcePd => state.read::<KindState<1>>().map(|s| &s.0),
            InTreePlugin::AzureDisk => state.read::<KindState<2>>().map(|s| &s.0),
            InTreePlugin::Cinder => state.read::<KindState<3>>().map(|s| &s.0),
        }
    }
}

impl FilterPlugin for LegacyVolumeLimits {
    fn filter(&self, state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        if pod.volumes.is_empty() {
            return Status::success();
        }
        let Some(s) = self.read_state(state) else {
            return Status::error(format!("{}: no PreFilter state", self.name()));
        };
        if let Some(st) = &s.rejected {
            return st.clone();
        }
        if s.volumes.is_empty() {
            return Status::success();
        }
        let storage = &s.objects.storage;
        // Migrated to CSI on this node: NodeVolumeLimits counts these volumes.
        if storage.csi_node(node.name()).is_some() {
            return Status::success();
        }
        let mut existing: SmallVec<[DiskKey; 16]> = SmallVec::new();
        for p in node.pods() {
            for v in &p.volumes {
                if let Resolved::Counted(k) = self.resolve(storage, p, v) {
                    existing.push(k);
                }
            }
        }
        existing.sort_unstable();
        existing.dedup();
        let new = s.volumes.iter().filter(|k| existing.binary_search(k).is_err()).count() as i64;
        let from_node = node.allocatable().scalar.get(self.limit_key);
        let max = if from_node != 0 {
            from_node
        } else {
            self.max_volumes.unwrap_or_else(|| self.default_max(node, &s.nitro_types))
        };
        if existing.len() as i64 + new > max {
            return Status::unschedulable(REASON);
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{CsiNode, Node, PersistentVolume, ResourceName, StorageClass};
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;

    /// (description, pod, storage, node, pods on the node, want).
    type Case<'a> = (&'static str, Pod, &'a StorageObjects, &'a Node, Vec<Pod>, Code);
    type VolumeOf = fn(&str) -> Volume;

    fn pod(name: &str, vols: Vec<Volume>) -> Pod {
        vols.into_iter().fold(Pod::builder(name), |b, v| b.volume(v)).build()
    }

    fn ebs_pods(prefix: &str, n: usize) -> Vec<Pod> {
        (0..n)
            .map(|i| pod(&format!("{prefix}{i}"), vec![Volume::aws_ebs("v", &format!("{prefix}-vol-{i}"), false)]))
            .collect()
    }

    fn run(pl: &LegacyVolumeLimits, p: &Pod, storage: &StorageObjects, node: &NodeInfo) -> Status {
        let objects = ClusterObjects { storage: storage.clone(), ..ClusterObjects::default() };
        let snap = Snapshot::from_node_infos(vec![node.clone()]).with_objects(objects);
        let mut state = CycleState::new();
        let st = pl.pre_filter(&mut state, p, &snap);
        if !st.is_success() {
            return st;
        }
        pl.filter(&state, p, node)
    }

    fn storage() -> StorageObjects {
        StorageObjects::new()
            .with_storage_class(StorageClass::new("ebs-sc", "kubernetes.io/aws-ebs"))
            .with_storage_class(StorageClass::new("csi-sc", "ebs.csi.aws.com"))
            .with_pv(PersistentVolume::aws_ebs("pv-ebs", "a-vol-0"))
            .with_pv(PersistentVolume::gce_pd("pv-gce", "pd"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-ebs").bound_to("pv-ebs"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-gce").bound_to("pv-gce"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-unbound-ebs").storage_class("ebs-sc"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-unbound-csi").storage_class("csi-sc"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-pv-gone").bound_to("gone").storage_class("ebs-sc"))
    }

    #[test]
    fn legacy_ebs_limits_table() {
        let s = storage();
        let migrated = s.clone().with_csi_node(CsiNode::new("n"));
        let plain = Node::builder("n").build();
        let nitro = Node::builder("n").label(LABEL_INSTANCE_TYPE, "m5.large").build();
        let alloc2 =
            Node::builder("n").capacity(ResourceName::Scalar(Sym::new("attachable-volumes-aws-ebs")), 2).build();
        let new_ebs = || pod("p", vec![Volume::aws_ebs("v", "new-vol", false)]);
        let ebs = LegacyVolumeLimits::ebs();
        let cases: Vec<Case> = vec![
            ("no volumes: skip", pod("p", vec![]), &s, &plain, vec![], Code::Skip),
            ("GCE disk only: skip", pod("p", vec![Volume::gce_pd("g", "pd", false)]), &s, &plain, vec![], Code::Skip),
            ("38 + 1 fits the default 39", new_ebs(), &s, &plain, ebs_pods("a", 38), Code::Success),
            ("39 + 1 exceeds the default 39", new_ebs(), &s, &plain, ebs_pods("a", 39), Code::Unschedulable),
            ("nitro limit 25", new_ebs(), &s, &nitro, ebs_pods("a", 25), Code::Unschedulable),
            ("allocatable limit", new_ebs(), &s, &alloc2, ebs_pods("a", 2), Code::Unschedulable),
            (
                "already attached counts once",
                pod("p", vec![Volume::aws_ebs("v", "a-vol-1", false)]),
                &s,
                &alloc2,
                ebs_pods("a", 2),
                Code::Success,
            ),
            (
                "PV of the same disk counts once",
                pod("p", vec![Volume::pvc("v", "c-ebs")]),
                &s,
                &alloc2,
                ebs_pods("a", 2),
                Code::Success,
            ),
            (
                "unbound claim of an EBS class counts",
                pod("p", vec![Volume::pvc("v", "c-unbound-ebs")]),
                &s,
                &alloc2,
                ebs_pods("a", 2),
                Code::Unschedulable,
            ),
            (
                "claim with PV gone counts by class",
                pod("p", vec![Volume::pvc("v", "c-pv-gone")]),
                &s,
                &alloc2,
                ebs_pods("a", 2),
                Code::Unschedulable,
            ),
            (
                "unbound claim of a CSI class not counted",
                pod("p", vec![Volume::pvc("v", "c-unbound-csi")]),
                &s,
                &alloc2,
                ebs_pods("a", 2),
                Code::Success,
            ),
            (
                "GCE PV not counted by EBS",
                pod("p", vec![Volume::pvc("v", "c-gce")]),
                &s,
                &alloc2,
                ebs_pods("a", 2),
                Code::Success,
            ),
            ("migrated node defers to CSI", new_ebs(), &migrated, &alloc2, ebs_pods("a", 2), Code::Success),
            (
                "missing claim",
                pod("p", vec![Volume::pvc("v", "nope")]),
                &s,
                &plain,
                vec![],
                Code::UnschedulableAndUnresolvable,
            ),
            ("empty claim name", pod("p", vec![Volume::pvc("v", "")]), &s, &plain, vec![], Code::Error),
        ];
        for (desc, p, storage, node, existing, want) in cases {
            let st = run(&ebs, &p, storage, &node_info(node.clone(), &existing));
            assert_eq!(st.code, want, "{desc}: {}", st.message());
            if want == Code::Unschedulable {
                assert_eq!(st.message(), REASON, "{desc}");
            }
        }
    }

    #[test]
    fn legacy_limits_defaults_and_override_per_kind() {
        let s = storage();
        let node = Node::builder("n").build();
        // (plugin, a volume of its kind, default limit)
        let kinds: [(LegacyVolumeLimits, VolumeOf, i64); 3] = [
            (LegacyVolumeLimits::gce_pd(), |id| Volume::gce_pd("v", id, false), DEFAULT_MAX_GCE_PD_VOLUMES),
            (LegacyVolumeLimits::azure_disk(), |id| Volume::azure_disk("v", id, "uri"), DEFAULT_MAX_AZURE_DISK_VOLUMES),
            (LegacyVolumeLimits::cinder(), |id| Volume::cinder("v", id), DEFAULT_MAX_CINDER_VOLUMES),
        ];
        for (pl, vol, limit) in kinds {
            let existing: Vec<Pod> = (0..limit).map(|i| pod(&format!("e{i}"), vec![vol(&format!("d{i}"))])).collect();
            let p = pod("p", vec![vol("new")]);
            let full = node_info(node.clone(), &existing);
            let room = node_info(node.clone(), &existing[1..]);
            assert_eq!(run(&pl, &p, &s, &full).code, Code::Unschedulable, "{}", pl.name());
            assert_eq!(run(&pl, &p, &s, &room).code, Code::Success, "{}", pl.name());
            let pl = pl.with_max_volumes(Some(limit - 1));
            assert_eq!(run(&pl, &p, &s, &room).code, Code::Unschedulable, "{} override", pl.name());
        }
    }

    #[test]
    fn legacy_limits_separate_state_per_kind() {
        let s = storage();
        let objects = ClusterObjects { storage: s, ..ClusterObjects::default() };
        let info = node_info(Node::builder("n").build(), &[]);
        let snap = Snapshot::from_node_infos(vec![info.clone()]).with_objects(objects);
        let p = pod("p", vec![Volume::aws_ebs("a", "x", false), Volume::gce_pd("g", "y", false)]);
        let (ebs, gce) = (LegacyVolumeLimits::ebs(), LegacyVolumeLimits::gce_pd().with_max_volumes(Some(0)));
        let mut state = CycleState::new();
        assert!(ebs.pre_filter(&mut state, &p, &snap).is_success());
        assert!(gce.pre_filter(&mut state, &p, &snap).is_success());
        assert_eq!(ebs.filter(&state, &p, &info).code, Code::Success);
        assert_eq!(gce.filter(&state, &p, &info).code, Code::Unschedulable);
    }

    #[test]
    fn ebs_nitro_instance_types() {
        for (t, want) in [
            ("m5.large", true),
            ("c5d.xlarge", true),
            ("t3.micro", true),
            ("z1d.large", true),
            ("m4.large", false),
            ("xm5", false),
            ("i3.large", false),
        ] {
            assert_eq!(is_ebs_nitro_instance_type(t), want, "{t}");
        }
    }
}
