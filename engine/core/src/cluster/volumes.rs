//! The PV controller and provisioners, as a stand-in that completes VolumeBinding's PreBind at
//! once: a claim given an existing volume is bound to it, and a claim to provision gets a new
//! CSI volume on the selected node's topology, bound to it.
//!
//! Binding sets the volume's `claimRef` and phase Bound, and the claim's `volumeName`, its
//! bind-completed annotation and phase Bound. A provisioned volume is named `pvc-<claim uid>`
//! (`pvc-<namespace>-<name>` for a claim without a uid); its driver is the class's
//! provisioner, its capacity the claim's request, its access modes the claim's, its reclaim
//! policy the class's, and its node affinity the node's `topology.kubernetes.io/zone` or, on
//! a node without a zone, its hostname.

use crate::api::{
    ClaimRef, Labels, NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm, PersistentVolume,
    PersistentVolumeSource, PodVolumeBindings, StorageObjects, Sym, VolumePhase, LABEL_HOSTNAME, LABEL_ZONE,
};
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum VolumeBindError {
    #[error("persistentvolumeclaim \"{namespace}/{name}\" not found")]
    ClaimNotFound { namespace: Sym, name: Sym },
    #[error("persistentvolume {0:?} not found")]
    VolumeNotFound(String),
    #[error("persistentvolume {volume:?} is bound to another claim")]
    VolumeTaken { volume: String },
}

/// Carries out PreBind's bindings for one pod (static bindings, then provisioning).
pub fn bind_pod_volumes(storage: &mut StorageObjects, b: &PodVolumeBindings) -> Result<(), VolumeBindError> {
    for &(ns, name, pv) in &b.static_bindings {
        bind_claim(storage, ns, name, pv)?;
    }
    for &(ns, name) in &b.provisions {
        let claim = storage.pvc(ns, name).ok_or(VolumeBindError::ClaimNotFound { namespace: ns, name })?;
        let volume = if claim.uid.is_empty() { format!("pvc-{ns}-{name}") } else { format!("pvc-{}", claim.uid) };
        provision(storage, ns, name, Sym::new(&volume), b.node, &b.node_labels)?;
    }
    Ok(())
}

/// Binds claim `namespace/name` to the existing volume `pv` (the PV controller's bind).
pub fn bind_claim(storage: &mut StorageObjects, namespace: Sym, name: Sym, pv: Sym) -> Result<(), VolumeBindError> {
    let mut claim = storage.pvc(namespace, name).cloned().ok_or(VolumeBindError::ClaimNotFound { namespace, name })?;
    let mut volume = storage.pv(pv).cloned().ok_or_else(|| VolumeBindError::VolumeNotFound(pv.to_string()))?;
    if volume.claim_ref.is_some() && !volume.is_bound_to(&claim) {
        return Err(VolumeBindError::VolumeTaken { volume: pv.to_string() });
    }
    volume.claim_ref = Some(ClaimRef { namespace, name, uid: claim.uid });
    volume.phase = VolumePhase::Bound;
    claim.volume_name = pv;
    claim.bind_completed = true;
    claim.phase_bound = true;
    storage.upsert_pv(volume);
    storage.upsert_pvc(claim);
    Ok(())
}

/// Provisions volume `pv` for claim `namespace/name` on `node` (with `node_labels`) and binds
/// the claim to it.
pub fn provision(
    storage: &mut StorageObjects,
    namespace: Sym,
    name: Sym,
    pv: Sym,
    node: Sym,
    node_labels: &Labels,
) -> Result<(), VolumeBindError> {
    let mut claim = storage.pvc(namespace, name).cloned().ok_or(VolumeBindError::ClaimNotFound { namespace, name })?;
    let class = storage.storage_class(claim.storage_class);
    let driver = class.map_or(Sym::EMPTY, |c| c.provisioner);
    let reclaim_policy = class.map_or(Sym::new("Delete"), |c| c.reclaim_policy);
    let mut volume = PersistentVolume::new(pv.as_str(), PersistentVolumeSource::Csi { driver, volume_handle: pv });
    volume.storage_class = claim.storage_class;
    volume.capacity = claim.request.unwrap_or(0);
    volume.access_modes = claim.access_modes.clone();
    volume.block = claim.block;
    volume.reclaim_policy = reclaim_policy;
    let zone = Sym::new(LABEL_ZONE);
    let hostname = Sym::new(LABEL_HOSTNAME);
    let (key, value) = match node_labels.get(zone) {
        Some(z) => (zone, z),
        None => (hostname, node_labels.get(hostname).unwrap_or(node)),
    };
    let requirement = NodeSelectorRequirement::from_syms(key, NodeSelectorOp::In, vec![value]);
    volume.node_affinity = Some(NodeSelector {
        terms: vec![NodeSelectorTerm { match_expressions: vec![requirement], match_fields: vec![] }],
    });
    volume.claim_ref = Some(ClaimRef { namespace, name, uid: claim.uid });
    volume.phase = VolumePhase::Bound;
    claim.volume_name = pv;
    claim.bind_completed = true;
    claim.phase_bound = true;
    claim.selected_node = node;
    storage.upsert_pv(volume);
    storage.upsert_pvc(claim);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{AccessMode, PersistentVolumeClaim, StorageClass, VolumeBindingMode};

    fn s(x: &str) -> Sym {
        Sym::new(x)
    }

    #[test]
    fn bind_pod_volumes_binds_static_and_provisions_on_the_node_zone_or_hostname() {
        let mut storage = StorageObjects::new()
            .with_storage_class(
                StorageClass::new("ebs", "ebs.csi").binding_mode(VolumeBindingMode::WaitForFirstConsumer),
            )
            .with_pv(PersistentVolume::csi("local-1", "local", "h").storage_class("local").capacity(10 << 30))
            .with_pvc(PersistentVolumeClaim::new("ns", "a").storage_class("local"))
            .with_pvc(
                PersistentVolumeClaim::new("ns", "b")
                    .storage_class("ebs")
                    .uid("u-b")
                    .request(5 << 30)
                    .access_mode(AccessMode::ReadWriteOnce),
            )
            .with_pvc(PersistentVolumeClaim::new("ns", "c").storage_class("ebs"));
        let zoned = Labels::from_pairs([("topology.kubernetes.io/zone", "z1"), ("kubernetes.io/hostname", "h1")]);
        let plan = PodVolumeBindings {
            node: s("n1"),
            node_labels: zoned,
            static_bindings: vec![(s("ns"), s("a"), s("local-1"))],
            provisions: vec![(s("ns"), s("b"))],
        };
        bind_pod_volumes(&mut storage, &plan).unwrap();
        let a = storage.pvc(s("ns"), s("a")).unwrap();
        assert!(a.is_fully_bound() && a.volume_name == s("local-1"));
        let pv = storage.pv(s("local-1")).unwrap();
        assert_eq!(pv.phase, VolumePhase::Bound);
        assert!(pv.is_bound_to(a));
        let b = storage.pvc(s("ns"), s("b")).unwrap();
        assert_eq!(b.volume_name, s("pvc-u-b"));
        let new = storage.pv(s("pvc-u-b")).unwrap();
        assert_eq!((new.capacity, new.storage_class, new.reclaim_policy), (5 << 30, s("ebs"), s("Delete")));
        assert!(new.node_affinity_allows(&Labels::from_pairs([("topology.kubernetes.io/zone", "z1")])));
        assert!(!new.node_affinity_allows(&Labels::from_pairs([("topology.kubernetes.io/zone", "z2")])));

        // No zone: the node's hostname.
        let plan = PodVolumeBindings {
            node: s("n2"),
            node_labels: Labels::from_pairs([("kubernetes.io/hostname", "host-2")]),
            static_bindings: vec![],
            provisions: vec![(s("ns"), s("c"))],
        };
        bind_pod_volumes(&mut storage, &plan).unwrap();
        let c = storage.pv(s("pvc-ns-c")).unwrap();
        assert!(c.node_affinity_allows(&Labels::from_pairs([("kubernetes.io/hostname", "host-2")])));
        assert!(!c.node_affinity_allows(&Labels::from_pairs([("kubernetes.io/hostname", "n2")])));

        // A volume bound to another claim is refused.
        let err = bind_claim(&mut storage, s("ns"), s("c"), s("local-1")).unwrap_err();
        assert_eq!(err, VolumeBindError::VolumeTaken { volume: "local-1".into() });
        let err = bind_claim(&mut storage, s("ns"), s("zz"), s("local-1")).unwrap_err();
        assert_eq!(err.to_string(), "persistentvolumeclaim \"ns/zz\" not found");
    }
}
