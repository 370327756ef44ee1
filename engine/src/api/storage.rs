//! Volumes as pods reference them, and the storage objects the volume filters consult.
//!
//! Placeholder: the volume filters (VolumeRestrictions, VolumeZone, NodeVolumeLimits) fill
//! this in with the pod volume sources, PersistentVolumes, PersistentVolumeClaims,
//! StorageClasses and CSINodes.

/// A volume of a pod (`spec.volumes[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Volume {
    pub name: super::Sym,
}

/// The storage objects of the cluster.
#[derive(Clone, Debug, Default)]
pub struct StorageObjects {}
