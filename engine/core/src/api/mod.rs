//! Plain data: pods, nodes, resources, labels (interned), taints, affinity.

pub mod affinity;
pub mod dra;
pub mod intern;
pub mod labels;
pub mod node;
pub mod pod;
pub mod policy;
pub mod quantity;
pub mod requests;
pub mod resources;
pub mod spread;
pub mod storage;
pub mod validation;

pub use affinity::*;
pub use intern::Sym;
pub use labels::*;
pub use node::*;
pub use pod::*;
pub use policy::{AdmissionError, IntOrPercent, PodDisruptionBudget, PriorityClass};
pub use quantity::{Quantity, QuantityError};
pub use requests::{is_pod_level_resource, ContainerResizeStatus, PodResourceStatus, ResourceList};
pub use resources::*;
pub use spread::*;
pub use storage::{
    AccessMode, ClaimRef, CsiDriver, CsiNode, CsiNodeDriver, CsiStorageCapacity, InTreePlugin, PersistentVolume,
    PersistentVolumeClaim, PersistentVolumeSource, PodVolumeBindings, SignedSource, StorageClass, StorageObjects,
    TopologySelectorTerm, Volume, VolumeBindingMode, VolumePhase, VolumeSource, NO_PROVISIONER,
};
