//! Volumes as pods reference them, and the storage objects the volume filters consult:
//! PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes.
//!
//! Plain data keyed by interned names, so the filters look claims and volumes up without
//! allocating. The in-tree volume plugins that CSI migration moved to CSI drivers
//! (`InTreePlugin`) live here too: both the CSI and the legacy volume-count filters need them.

use std::borrow::Cow;
use std::sync::Arc;

use smallvec::SmallVec;

use super::affinity::NodeSelector;
use super::intern::Sym;
use super::labels::{LabelSelector, Labels};
use crate::util::hash::FxHashMap;

/// An in-tree volume plugin whose volumes CSI migration hands to a CSI driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InTreePlugin {
    AwsEbs,
    GcePd,
    AzureDisk,
    Cinder,
}

impl InTreePlugin {
    pub const ALL: [InTreePlugin; 4] =
        [InTreePlugin::AwsEbs, InTreePlugin::GcePd, InTreePlugin::AzureDisk, InTreePlugin::Cinder];

    /// The in-tree plugin name, as StorageClass provisioners spell it.
    pub fn plugin_name(self) -> &'static str {
        match self {
            InTreePlugin::AwsEbs => "kubernetes.io/aws-ebs",
            InTreePlugin::GcePd => "kubernetes.io/gce-pd",
            InTreePlugin::AzureDisk => "kubernetes.io/azure-disk",
            InTreePlugin::Cinder => "kubernetes.io/cinder",
        }
    }

    /// The CSI driver the plugin's volumes migrate to.
    pub fn csi_driver(self) -> &'static str {
        match self {
            InTreePlugin::AwsEbs => "ebs.csi.aws.com",
            InTreePlugin::GcePd => "pd.csi.storage.gke.io",
            InTreePlugin::AzureDisk => "disk.csi.azure.com",
            InTreePlugin::Cinder => "cinder.csi.openstack.org",
        }
    }

    /// The plugin whose in-tree name is `provisioner`.
    pub fn from_plugin_name(provisioner: &str) -> Option<InTreePlugin> {
        InTreePlugin::ALL.into_iter().find(|p| p.plugin_name() == provisioner)
    }
}

/// `spec.accessModes` of a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessMode {
    ReadWriteOnce,
    ReadOnlyMany,
    ReadWriteMany,
    ReadWriteOncePod,
}

impl AccessMode {
    pub fn parse(s: &str) -> Option<AccessMode> {
        match s {
            "ReadWriteOnce" => Some(AccessMode::ReadWriteOnce),
            "ReadOnlyMany" => Some(AccessMode::ReadOnlyMany),
            "ReadWriteMany" => Some(AccessMode::ReadWriteMany),
            "ReadWriteOncePod" => Some(AccessMode::ReadWriteOncePod),
            _ => None,
        }
    }
}

/// Where a pod volume comes from. Only the sources some filter looks at are spelled out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VolumeSource {
    PersistentVolumeClaim {
        claim_name: Sym,
        read_only: bool,
    },
    GcePersistentDisk {
        pd_name: Sym,
        read_only: bool,
    },
    AwsElasticBlockStore {
        volume_id: Sym,
        read_only: bool,
    },
    AzureDisk {
        disk_name: Sym,
        data_disk_uri: Sym,
    },
    Cinder {
        volume_id: Sym,
    },
    Rbd {
        monitors: SmallVec<[Sym; 3]>,
        pool: Sym,
        image: Sym,
        read_only: bool,
    },
    Iscsi {
        target_portal: Sym,
        iqn: Sym,
        lun: i32,
        read_only: bool,
    },
    /// An inline (ephemeral) CSI volume.
    Csi {
        driver: Sym,
    },
    /// A generic ephemeral volume: the claim `<pod name>-<volume name>`, which `PodBuilder`
    /// fills in when the pod is built.
    Ephemeral {
        claim_name: Sym,
    },
    /// emptyDir, configMap, secret, hostPath...: nothing the filters count.
    Other,
}

/// What a pod signature (`framework::signature`) compares of a volume's source. Upstream
/// signs every source but configMap and secret by its JSON; `VolumeSource` keeps only what
/// the filters read (emptyDir, hostPath, projected... are all `Other`), so a volume read from
/// an object carries the canonical text of its whole source here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SignedSource {
    /// Derived from `source` (volumes made in code: builders, generators).
    #[default]
    FromSource,
    /// A configMap or secret volume: left out of signatures.
    Excluded,
    /// The source as read, in a canonical text form (equal sources, equal text).
    Canonical(Arc<str>),
}

/// A volume of a pod (`spec.volumes[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Volume {
    pub name: Sym,
    pub source: VolumeSource,
    /// What pod signatures compare of the source (`Volume::signed_source`).
    pub signed: SignedSource,
}

impl Volume {
    pub fn new(name: &str, source: VolumeSource) -> Volume {
        Volume { name: Sym::new(name), source, signed: SignedSource::FromSource }
    }

    /// The same volume with what signatures compare of its source replaced.
    pub fn with_signed(mut self, signed: SignedSource) -> Volume {
        self.signed = signed;
        self
    }

    /// The text pod signatures compare for this volume's source, or `None` when signatures
    /// leave it out (configMap, secret). Never the volume's name, nor a name derived from the
    /// pod's (a generic ephemeral volume's claim): pods of one template sign alike.
    pub fn signed_source(&self) -> Option<Cow<'_, str>> {
        match &self.signed {
            SignedSource::Excluded => None,
            SignedSource::Canonical(text) => Some(Cow::Borrowed(text)),
            SignedSource::FromSource => Some(Cow::Owned(match &self.source {
                VolumeSource::Ephemeral { .. } => "Ephemeral".to_owned(),
                other => format!("{other:?}"),
            })),
        }
    }

    pub fn pvc(name: &str, claim: &str) -> Volume {
        Volume::new(name, VolumeSource::PersistentVolumeClaim { claim_name: Sym::new(claim), read_only: false })
    }

    pub fn gce_pd(name: &str, pd_name: &str, read_only: bool) -> Volume {
        Volume::new(name, VolumeSource::GcePersistentDisk { pd_name: Sym::new(pd_name), read_only })
    }

    pub fn aws_ebs(name: &str, volume_id: &str, read_only: bool) -> Volume {
        Volume::new(name, VolumeSource::AwsElasticBlockStore { volume_id: Sym::new(volume_id), read_only })
    }

    pub fn azure_disk(name: &str, disk_name: &str, data_disk_uri: &str) -> Volume {
        Volume::new(
            name,
            VolumeSource::AzureDisk { disk_name: Sym::new(disk_name), data_disk_uri: Sym::new(data_disk_uri) },
        )
    }

    pub fn cinder(name: &str, volume_id: &str) -> Volume {
        Volume::new(name, VolumeSource::Cinder { volume_id: Sym::new(volume_id) })
    }

    pub fn rbd(name: &str, monitors: &[&str], pool: &str, image: &str, read_only: bool) -> Volume {
        Volume::new(
            name,
            VolumeSource::Rbd {
                monitors: monitors.iter().map(|m| Sym::new(m)).collect(),
                pool: Sym::new(pool),
                image: Sym::new(image),
                read_only,
            },
        )
    }

    pub fn iscsi(name: &str, target_portal: &str, iqn: &str, lun: i32, read_only: bool) -> Volume {
        Volume::new(
            name,
            VolumeSource::Iscsi { target_portal: Sym::new(target_portal), iqn: Sym::new(iqn), lun, read_only },
        )
    }

    pub fn csi(name: &str, driver: &str) -> Volume {
        Volume::new(name, VolumeSource::Csi { driver: Sym::new(driver) })
    }

    /// A generic ephemeral volume; its claim name is set when the pod is built.
    pub fn ephemeral(name: &str) -> Volume {
        Volume::new(name, VolumeSource::Ephemeral { claim_name: Sym::EMPTY })
    }

    /// emptyDir, configMap and the like.
    pub fn other(name: &str) -> Volume {
        Volume::new(name, VolumeSource::Other)
    }

    /// The claim this volume uses: a PVC volume's claim, or a generic ephemeral volume's.
    #[inline]
    pub fn claim_name(&self) -> Option<Sym> {
        match self.source {
            VolumeSource::PersistentVolumeClaim { claim_name, .. } | VolumeSource::Ephemeral { claim_name } => {
                Some(claim_name)
            }
            _ => None,
        }
    }

    /// The inline in-tree disk of this volume that CSI migration covers, with its volume ID
    /// (EBS volume ID, GCE PD name, Azure data disk URI, Cinder volume ID).
    #[inline]
    pub fn migratable_inline(&self) -> Option<(InTreePlugin, Sym)> {
        match self.source {
            VolumeSource::AwsElasticBlockStore { volume_id, .. } => Some((InTreePlugin::AwsEbs, volume_id)),
            VolumeSource::GcePersistentDisk { pd_name, .. } => Some((InTreePlugin::GcePd, pd_name)),
            VolumeSource::AzureDisk { data_disk_uri, .. } => Some((InTreePlugin::AzureDisk, data_disk_uri)),
            VolumeSource::Cinder { volume_id } => Some((InTreePlugin::Cinder, volume_id)),
            _ => None,
        }
    }
}

/// Sets the claim name of each generic ephemeral volume to `<pod name>-<volume name>`, as the
/// ephemeral volume controller names the claims it creates.
pub fn fill_ephemeral_claim_names(volumes: &mut [Volume], pod_name: &str) {
    for v in volumes {
        if let VolumeSource::Ephemeral { claim_name } = &mut v.source {
            *claim_name = Sym::new(&format!("{pod_name}-{}", v.name));
        }
    }
}

/// `persistentvolumeclaim "<name>" not found`: the API's NotFound message, which upstream's
/// volume filters pass on as their reason.
pub fn pvc_not_found(name: Sym) -> String {
    format!("persistentvolumeclaim {:?} not found", name.as_str())
}

/// `persistentvolume "<name>" not found`.
pub fn pv_not_found(name: Sym) -> String {
    format!("persistentvolume {:?} not found", name.as_str())
}

/// `storageclass.storage.k8s.io "<name>" not found`.
pub fn storage_class_not_found(name: Sym) -> String {
    format!("storageclass.storage.k8s.io {:?} not found", name.as_str())
}

/// `spec` source of a PersistentVolume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PersistentVolumeSource {
    Csi { driver: Sym, volume_handle: Sym },
    GcePersistentDisk { pd_name: Sym },
    AwsElasticBlockStore { volume_id: Sym },
    AzureDisk { disk_name: Sym, data_disk_uri: Sym },
    Cinder { volume_id: Sym },
    Other,
}

impl PersistentVolumeSource {
    /// The in-tree plugin of this source and the volume ID CSI migration uses for it.
    #[inline]
    pub fn migratable(&self) -> Option<(InTreePlugin, Sym)> {
        match *self {
            PersistentVolumeSource::AwsElasticBlockStore { volume_id } => Some((InTreePlugin::AwsEbs, volume_id)),
            PersistentVolumeSource::GcePersistentDisk { pd_name } => Some((InTreePlugin::GcePd, pd_name)),
            PersistentVolumeSource::AzureDisk { data_disk_uri, .. } => Some((InTreePlugin::AzureDisk, data_disk_uri)),
            PersistentVolumeSource::Cinder { volume_id } => Some((InTreePlugin::Cinder, volume_id)),
            _ => None,
        }
    }
}

/// A PersistentVolume: only what the scheduler reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistentVolume {
    pub name: Sym,
    /// Carries the zone / region labels VolumeZone matches nodes against.
    pub labels: Labels,
    pub storage_class: Sym,
    pub source: PersistentVolumeSource,
    /// `spec.nodeAffinity.required`.
    pub node_affinity: Option<NodeSelector>,
    /// `spec.capacity.storage` in bytes (0 when absent).
    pub capacity: i64,
    pub access_modes: SmallVec<[AccessMode; 2]>,
    /// `spec.volumeMode == Block` (else Filesystem, the API's default).
    pub block: bool,
    /// `spec.claimRef`: the claim this volume is bound or reserved to.
    pub claim_ref: Option<ClaimRef>,
    pub phase: VolumePhase,
    /// `spec.persistentVolumeReclaimPolicy` (empty when absent).
    pub reclaim_policy: Sym,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

/// `spec.claimRef` of a PersistentVolume.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClaimRef {
    pub namespace: Sym,
    pub name: Sym,
    /// Empty: any claim of that name (a volume pre-bound by name).
    pub uid: Sym,
}

/// `status.phase` of a PersistentVolume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum VolumePhase {
    Pending,
    #[default]
    Available,
    Bound,
    Released,
    Failed,
}

impl VolumePhase {
    pub fn parse(s: &str) -> Option<VolumePhase> {
        match s {
            "Pending" => Some(VolumePhase::Pending),
            "Available" => Some(VolumePhase::Available),
            "Bound" => Some(VolumePhase::Bound),
            "Released" => Some(VolumePhase::Released),
            "Failed" => Some(VolumePhase::Failed),
            _ => None,
        }
    }
}

impl PersistentVolume {
    pub fn new(name: &str, source: PersistentVolumeSource) -> PersistentVolume {
        PersistentVolume {
            name: Sym::new(name),
            labels: Labels::new(),
            storage_class: Sym::EMPTY,
            source,
            node_affinity: None,
            capacity: 0,
            access_modes: SmallVec::new(),
            block: false,
            claim_ref: None,
            phase: VolumePhase::Available,
            reclaim_policy: Sym::EMPTY,
            deleting: false,
        }
    }

    /// Whether `claimRef` names `claim` (and its uid, when the reference carries one).
    #[inline]
    pub fn is_bound_to(&self, claim: &PersistentVolumeClaim) -> bool {
        self.claim_ref.is_some_and(|r| {
            r.namespace == claim.namespace && r.name == claim.name && (r.uid.is_empty() || r.uid == claim.uid)
        })
    }

    /// Whether the volume offers every access mode the claim asks for.
    #[inline]
    pub fn offers_access_modes(&self, claim: &PersistentVolumeClaim) -> bool {
        claim.access_modes.iter().all(|m| self.access_modes.contains(m))
    }

    /// Whether a node with `labels` may use the volume (no node affinity: any node). The
    /// node's name is not consulted, as upstream matches the affinity against labels alone.
    #[inline]
    pub fn node_affinity_allows(&self, labels: &Labels) -> bool {
        self.node_affinity.as_ref().is_none_or(|a| a.matches(labels, Sym::EMPTY))
    }

    pub fn capacity(mut self, bytes: i64) -> Self {
        self.capacity = bytes;
        self
    }

    pub fn access_mode(mut self, mode: AccessMode) -> Self {
        self.access_modes.push(mode);
        self
    }

    pub fn claim_ref(mut self, namespace: &str, name: &str) -> Self {
        self.claim_ref = Some(ClaimRef { namespace: Sym::new(namespace), name: Sym::new(name), uid: Sym::EMPTY });
        self
    }

    pub fn phase(mut self, phase: VolumePhase) -> Self {
        self.phase = phase;
        self
    }

    pub fn csi(name: &str, driver: &str, volume_handle: &str) -> PersistentVolume {
        PersistentVolume::new(
            name,
            PersistentVolumeSource::Csi { driver: Sym::new(driver), volume_handle: Sym::new(volume_handle) },
        )
    }

    pub fn gce_pd(name: &str, pd_name: &str) -> PersistentVolume {
        PersistentVolume::new(name, PersistentVolumeSource::GcePersistentDisk { pd_name: Sym::new(pd_name) })
    }

    pub fn aws_ebs(name: &str, volume_id: &str) -> PersistentVolume {
        PersistentVolume::new(name, PersistentVolumeSource::AwsElasticBlockStore { volume_id: Sym::new(volume_id) })
    }

    pub fn azure_disk(name: &str, disk_name: &str, data_disk_uri: &str) -> PersistentVolume {
        PersistentVolume::new(
            name,
            PersistentVolumeSource::AzureDisk {
                disk_name: Sym::new(disk_name),
                data_disk_uri: Sym::new(data_disk_uri),
            },
        )
    }

    pub fn cinder(name: &str, volume_id: &str) -> PersistentVolume {
        PersistentVolume::new(name, PersistentVolumeSource::Cinder { volume_id: Sym::new(volume_id) })
    }

    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.labels.insert(Sym::new(k), Sym::new(v));
        self
    }

    pub fn storage_class(mut self, class: &str) -> Self {
        self.storage_class = Sym::new(class);
        self
    }

    pub fn node_affinity(mut self, selector: NodeSelector) -> Self {
        self.node_affinity = Some(selector);
        self
    }
}

/// A PersistentVolumeClaim: only what the scheduler reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistentVolumeClaim {
    pub namespace: Sym,
    pub name: Sym,
    /// `spec.volumeName`: the bound PersistentVolume, empty while unbound.
    pub volume_name: Sym,
    /// `spec.storageClassName` (or the beta annotation), empty when none.
    pub storage_class: Sym,
    pub access_modes: SmallVec<[AccessMode; 2]>,
    /// `metadata.uid` (empty when absent).
    pub uid: Sym,
    /// `spec.resources.requests.storage` in bytes; `None` when the claim requests none.
    pub request: Option<i64>,
    /// `spec.volumeMode == Block`.
    pub block: bool,
    /// `spec.selector`: only volumes with matching labels.
    pub selector: Option<LabelSelector>,
    /// The `pv.kubernetes.io/bind-completed` annotation: the PV controller finished binding.
    /// A claim is bound for the scheduler only with `volume_name` set and this annotation.
    pub bind_completed: bool,
    /// The `volume.kubernetes.io/selected-node` annotation: the node chosen for provisioning.
    pub selected_node: Sym,
    /// `status.phase == Lost` (its volume is gone).
    pub lost: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `status.phase == Bound`.
    pub phase_bound: bool,
}

impl PersistentVolumeClaim {
    pub fn new(namespace: &str, name: &str) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            namespace: Sym::new(namespace),
            name: Sym::new(name),
            volume_name: Sym::EMPTY,
            storage_class: Sym::EMPTY,
            access_modes: SmallVec::new(),
            uid: Sym::EMPTY,
            request: None,
            block: false,
            selector: None,
            bind_completed: false,
            selected_node: Sym::EMPTY,
            lost: false,
            deleting: false,
            phase_bound: false,
        }
    }

    /// Binds the claim to the PersistentVolume `pv`, as the PV controller completes it
    /// (`spec.volumeName`, the bind-completed annotation, phase Bound).
    pub fn bound_to(mut self, pv: &str) -> Self {
        self.volume_name = Sym::new(pv);
        self.bind_completed = true;
        self.phase_bound = true;
        self
    }

    /// Bound as far as the scheduler is concerned: a volume named and binding completed.
    #[inline]
    pub fn is_fully_bound(&self) -> bool {
        !self.volume_name.is_empty() && self.bind_completed
    }

    pub fn request(mut self, bytes: i64) -> Self {
        self.request = Some(bytes);
        self
    }

    pub fn uid(mut self, uid: &str) -> Self {
        self.uid = Sym::new(uid);
        self
    }

    pub fn storage_class(mut self, class: &str) -> Self {
        self.storage_class = Sym::new(class);
        self
    }

    pub fn access_mode(mut self, mode: AccessMode) -> Self {
        self.access_modes.push(mode);
        self
    }

    pub fn has_access_mode(&self, mode: AccessMode) -> bool {
        self.access_modes.contains(&mode)
    }
}

/// `volumeBindingMode` of a StorageClass (the API defaults it to Immediate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum VolumeBindingMode {
    #[default]
    Immediate,
    WaitForFirstConsumer,
}

impl VolumeBindingMode {
    pub fn parse(s: &str) -> Option<VolumeBindingMode> {
        match s {
            "Immediate" => Some(VolumeBindingMode::Immediate),
            "WaitForFirstConsumer" => Some(VolumeBindingMode::WaitForFirstConsumer),
            _ => None,
        }
    }
}

/// The provisioner of classes whose volumes are only created by hand (local volumes).
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// One term of a StorageClass's `allowedTopologies`: label keys each with allowed values,
/// ANDed. An empty term selects nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopologySelectorTerm {
    pub match_label_expressions: Vec<(Sym, Vec<Sym>)>,
}

impl TopologySelectorTerm {
    pub fn matches(&self, labels: &Labels) -> bool {
        !self.match_label_expressions.is_empty()
            && self.match_label_expressions.iter().all(|(k, vs)| labels.get(*k).is_some_and(|v| vs.contains(&v)))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageClass {
    pub name: Sym,
    pub provisioner: Sym,
    pub volume_binding_mode: VolumeBindingMode,
    /// `allowedTopologies`, ORed; empty: provisioning anywhere.
    pub allowed_topologies: Vec<TopologySelectorTerm>,
    /// `reclaimPolicy` (the API defaults it to Delete).
    pub reclaim_policy: Sym,
}

impl StorageClass {
    pub fn new(name: &str, provisioner: &str) -> StorageClass {
        StorageClass {
            name: Sym::new(name),
            provisioner: Sym::new(provisioner),
            volume_binding_mode: VolumeBindingMode::Immediate,
            allowed_topologies: Vec::new(),
            reclaim_policy: Sym::new("Delete"),
        }
    }

    /// Whether volumes of this class can be provisioned on a node with `labels`.
    pub fn allows_topology(&self, labels: &Labels) -> bool {
        self.allowed_topologies.is_empty() || self.allowed_topologies.iter().any(|t| t.matches(labels))
    }

    /// Whether the class provisions volumes at all.
    pub fn provisions(&self) -> bool {
        !self.provisioner.is_empty() && self.provisioner.as_str() != NO_PROVISIONER
    }

    pub fn allowed_topology(mut self, key: &str, values: &[&str]) -> Self {
        let values = values.iter().map(|v| Sym::new(v)).collect();
        self.allowed_topologies.push(TopologySelectorTerm { match_label_expressions: vec![(Sym::new(key), values)] });
        self
    }

    pub fn binding_mode(mut self, mode: VolumeBindingMode) -> Self {
        self.volume_binding_mode = mode;
        self
    }
}

/// One CSI driver registered on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsiNodeDriver {
    pub name: Sym,
    /// `allocatable.count`: how many unique volumes of this driver the node can use.
    pub allocatable_count: Option<i64>,
}

/// The CSINode object of a node (same name as the node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsiNode {
    pub node_name: Sym,
    pub drivers: SmallVec<[CsiNodeDriver; 2]>,
}

impl CsiNode {
    pub fn new(node_name: &str) -> CsiNode {
        CsiNode { node_name: Sym::new(node_name), drivers: SmallVec::new() }
    }

    pub fn driver(mut self, name: &str, allocatable_count: Option<i64>) -> Self {
        self.drivers.push(CsiNodeDriver { name: Sym::new(name), allocatable_count });
        self
    }

    /// The allocatable count of `driver`, if the driver is registered with one.
    #[inline]
    pub fn allocatable(&self, driver: Sym) -> Option<i64> {
        self.drivers.iter().find(|d| d.name == driver).and_then(|d| d.allocatable_count)
    }
}

/// A CSIDriver: whether its volumes are subject to storage capacity tracking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsiDriver {
    pub name: Sym,
    /// `spec.storageCapacity`: provisioning checks CSIStorageCapacity objects.
    pub storage_capacity: bool,
}

/// A CSIStorageCapacity: how much a class can still provision on the nodes its topology
/// selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsiStorageCapacity {
    pub namespace: Sym,
    pub name: Sym,
    pub storage_class: Sym,
    /// `nodeTopology`; `None` selects no node.
    pub node_topology: Option<LabelSelector>,
    /// `capacity` in bytes.
    pub capacity: Option<i64>,
    /// `maximumVolumeSize` in bytes; preferred over `capacity` when set.
    pub maximum_volume_size: Option<i64>,
}

impl CsiStorageCapacity {
    /// The largest volume this capacity can provision.
    pub fn volume_limit(&self) -> Option<i64> {
        self.maximum_volume_size.or(self.capacity)
    }
}

/// What VolumeBinding's PreBind asks the cluster to write for a pod's unbound claims once
/// its node is chosen; the PV controller and provisioners then complete the bindings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodVolumeBindings {
    pub node: Sym,
    /// The node's labels (the provisioner takes the new volume's topology from them).
    pub node_labels: Labels,
    /// (claim namespace, claim name, volume): the existing volume the claim is to bind to.
    pub static_bindings: Vec<(Sym, Sym, Sym)>,
    /// (namespace, name) of claims to provision a volume for on the node.
    pub provisions: Vec<(Sym, Sym)>,
}

impl PodVolumeBindings {
    pub fn is_empty(&self) -> bool {
        self.static_bindings.is_empty() && self.provisions.is_empty()
    }
}

/// The storage objects of the cluster, keyed for allocation-free lookups.
#[derive(Clone, Debug, Default)]
pub struct StorageObjects {
    pvs: FxHashMap<Sym, PersistentVolume>,
    /// (namespace, name) → claim.
    pvcs: FxHashMap<(Sym, Sym), PersistentVolumeClaim>,
    classes: FxHashMap<Sym, StorageClass>,
    /// Node name → its CSINode.
    csi_nodes: FxHashMap<Sym, CsiNode>,
    csi_drivers: FxHashMap<Sym, CsiDriver>,
    /// In insertion order (replaced in place by namespace and name).
    capacities: Vec<CsiStorageCapacity>,
}

impl StorageObjects {
    pub fn new() -> StorageObjects {
        StorageObjects::default()
    }

    /// Adds a PersistentVolume or replaces the one with the same name.
    pub fn upsert_pv(&mut self, pv: PersistentVolume) {
        self.pvs.insert(pv.name, pv);
    }

    pub fn remove_pv(&mut self, name: Sym) -> Option<PersistentVolume> {
        self.pvs.remove(&name)
    }

    #[inline]
    pub fn pv(&self, name: Sym) -> Option<&PersistentVolume> {
        self.pvs.get(&name)
    }

    /// Adds a claim or replaces the one with the same namespace and name.
    pub fn upsert_pvc(&mut self, pvc: PersistentVolumeClaim) {
        self.pvcs.insert((pvc.namespace, pvc.name), pvc);
    }

    pub fn remove_pvc(&mut self, namespace: Sym, name: Sym) -> Option<PersistentVolumeClaim> {
        self.pvcs.remove(&(namespace, name))
    }

    #[inline]
    pub fn pvc(&self, namespace: Sym, name: Sym) -> Option<&PersistentVolumeClaim> {
        self.pvcs.get(&(namespace, name))
    }

    /// Adds a StorageClass or replaces the one with the same name.
    pub fn upsert_storage_class(&mut self, class: StorageClass) {
        self.classes.insert(class.name, class);
    }

    pub fn remove_storage_class(&mut self, name: Sym) -> Option<StorageClass> {
        self.classes.remove(&name)
    }

    #[inline]
    pub fn storage_class(&self, name: Sym) -> Option<&StorageClass> {
        self.classes.get(&name)
    }

    /// Adds a CSINode or replaces the one of the same node.
    pub fn upsert_csi_node(&mut self, csi_node: CsiNode) {
        self.csi_nodes.insert(csi_node.node_name, csi_node);
    }

    pub fn remove_csi_node(&mut self, node_name: Sym) -> Option<CsiNode> {
        self.csi_nodes.remove(&node_name)
    }

    #[inline]
    pub fn csi_node(&self, node_name: Sym) -> Option<&CsiNode> {
        self.csi_nodes.get(&node_name)
    }

    /// Every PersistentVolume of class `class`, by name (a stable order).
    pub fn pvs_of_class(&self, class: Sym) -> Vec<&PersistentVolume> {
        let mut out: Vec<&PersistentVolume> = self.pvs.values().filter(|p| p.storage_class == class).collect();
        out.sort_unstable_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
        out
    }

    /// Adds a CSIDriver or replaces the one with the same name.
    pub fn upsert_csi_driver(&mut self, driver: CsiDriver) {
        self.csi_drivers.insert(driver.name, driver);
    }

    pub fn remove_csi_driver(&mut self, name: Sym) -> Option<CsiDriver> {
        self.csi_drivers.remove(&name)
    }

    #[inline]
    pub fn csi_driver(&self, name: Sym) -> Option<&CsiDriver> {
        self.csi_drivers.get(&name)
    }

    /// Adds a CSIStorageCapacity or replaces the one with the same namespace and name.
    pub fn upsert_capacity(&mut self, c: CsiStorageCapacity) {
        match self.capacities.iter_mut().find(|x| x.namespace == c.namespace && x.name == c.name) {
            Some(x) => *x = c,
            None => self.capacities.push(c),
        }
    }

    pub fn remove_capacity(&mut self, namespace: Sym, name: Sym) {
        self.capacities.retain(|x| !(x.namespace == namespace && x.name == name));
    }

    pub fn capacities(&self) -> &[CsiStorageCapacity] {
        &self.capacities
    }

    /// Builder-style `upsert_pv` (tests).
    pub fn with_pv(mut self, pv: PersistentVolume) -> Self {
        self.upsert_pv(pv);
        self
    }

    /// Builder-style `upsert_pvc` (tests).
    pub fn with_pvc(mut self, pvc: PersistentVolumeClaim) -> Self {
        self.upsert_pvc(pvc);
        self
    }

    /// Builder-style `upsert_storage_class` (tests).
    pub fn with_storage_class(mut self, class: StorageClass) -> Self {
        self.upsert_storage_class(class);
        self
    }

    /// Builder-style `upsert_csi_node` (tests).
    pub fn with_csi_node(mut self, csi_node: CsiNode) -> Self {
        self.upsert_csi_node(csi_node);
        self
    }

    pub fn num_pvs(&self) -> usize {
        self.pvs.len()
    }

    /// Whether it holds no object at all.
    pub fn is_empty(&self) -> bool {
        self.pvs.is_empty()
            && self.pvcs.is_empty()
            && self.classes.is_empty()
            && self.csi_nodes.is_empty()
            && self.csi_drivers.is_empty()
            && self.capacities.is_empty()
    }

    /// Adds every object of `other`, each replacing ours of the same name (objects created
    /// while a simulation runs: a trace's `create`).
    pub fn upsert_all(&mut self, other: &StorageObjects) {
        self.pvs.extend(other.pvs.iter().map(|(k, v)| (*k, v.clone())));
        self.pvcs.extend(other.pvcs.iter().map(|(k, v)| (*k, v.clone())));
        self.classes.extend(other.classes.iter().map(|(k, v)| (*k, v.clone())));
        self.csi_nodes.extend(other.csi_nodes.iter().map(|(k, v)| (*k, v.clone())));
        self.csi_drivers.extend(other.csi_drivers.iter().map(|(k, v)| (*k, *v)));
        for c in &other.capacities {
            self.upsert_capacity(c.clone());
        }
    }

    pub fn num_pvcs(&self) -> usize {
        self.pvcs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_objects_upsert_replaces_and_remove_forgets() {
        let mut s = StorageObjects::new()
            .with_pvc(PersistentVolumeClaim::new("ns", "c").storage_class("fast"))
            .with_pv(PersistentVolume::csi("pv1", "d", "h1"))
            .with_storage_class(StorageClass::new("fast", "d"))
            .with_csi_node(CsiNode::new("n1").driver("d", Some(3)));
        s.upsert_pvc(PersistentVolumeClaim::new("ns", "c").bound_to("pv1"));
        assert_eq!(s.num_pvcs(), 1);
        let c = s.pvc(Sym::new("ns"), Sym::new("c")).expect("claim");
        assert_eq!(c.volume_name, Sym::new("pv1"));
        assert!(c.storage_class.is_empty(), "the upsert replaced the whole claim");
        assert!(s.pvc(Sym::new("other"), Sym::new("c")).is_none(), "claims are namespaced");
        assert_eq!(s.csi_node(Sym::new("n1")).and_then(|n| n.allocatable(Sym::new("d"))), Some(3));
        assert_eq!(s.csi_node(Sym::new("n1")).and_then(|n| n.allocatable(Sym::new("x"))), None);
        assert!(s.remove_pv(Sym::new("pv1")).is_some());
        assert!(s.pv(Sym::new("pv1")).is_none());
        assert!(s.remove_storage_class(Sym::new("fast")).is_some());
        assert!(s.remove_csi_node(Sym::new("n1")).is_some());
        assert!(s.remove_pvc(Sym::new("ns"), Sym::new("c")).is_some());
        assert_eq!(s.num_pvcs(), 0);
    }

    #[test]
    fn volume_claim_names_and_migratable_sources() {
        let mut vols = vec![Volume::pvc("a", "claim"), Volume::ephemeral("scratch"), Volume::other("cfg")];
        fill_ephemeral_claim_names(&mut vols, "web-0");
        let names: Vec<Option<Sym>> = vols.iter().map(Volume::claim_name).collect();
        assert_eq!(names, [Some(Sym::new("claim")), Some(Sym::new("web-0-scratch")), None]);
        assert_eq!(
            Volume::azure_disk("d", "disk", "uri").migratable_inline(),
            Some((InTreePlugin::AzureDisk, Sym::new("uri")))
        );
        assert_eq!(Volume::csi("c", "drv").migratable_inline(), None);
        assert_eq!(
            PersistentVolume::cinder("p", "vol").source.migratable(),
            Some((InTreePlugin::Cinder, Sym::new("vol")))
        );
        assert_eq!(InTreePlugin::from_plugin_name("kubernetes.io/gce-pd"), Some(InTreePlugin::GcePd));
        assert_eq!(InTreePlugin::from_plugin_name("pd.csi.storage.gke.io"), None);
    }
}
