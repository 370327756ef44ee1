//! VolumeRestrictions (the NoDiskConflict predicate): rejects nodes where a pod already mounts
//! the same GCE PD, AWS EBS, RBD or ISCSI disk in a conflicting way, and pods whose
//! ReadWriteOncePod claim another pod already uses.

use smallvec::SmallVec;

use crate::api::storage::pvc_not_found;
use crate::api::{AccessMode, Pod, Sym, Volume, VolumeSource};
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::{Code, CycleState, FilterPlugin, Plugin, PreFilterPlugin, Reason, Status};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

pub const NAME: &str = "VolumeRestrictions";
pub const REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
pub const REASON_READ_WRITE_ONCE_POD_CONFLICT: &str =
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

#[derive(Debug, Default)]
pub struct VolumeRestrictions;

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(VOLUMES => volumes);

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::DELETE),
            ClusterEvent::new(EventResource::PersistentVolumeClaim, ActionType::ADD | ActionType::UPDATE),
        ]
    }

    /// A deleted bound pod matters when it mounted volumes; claim changes always do.
    fn queueing_hint(&self, _pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        match event.pods() {
            (Some(gone), None) => queue_if(gone.node_name.is_some() && !gone.volumes.is_empty()),
            _ => QueueingHint::Queue,
        }
    }
}

#[derive(Clone)]
/// What PreFilter found for the pod.
struct PreFilterState {
    /// The pod has inline disks whose mounts may conflict (GCE PD, EBS, RBD, ISCSI).
    check_disks: bool,
    /// The pod's claims with the ReadWriteOncePod access mode (in the pod's namespace).
    rwop_claims: SmallVec<[Sym; 2]>,
    /// References to those claims by pods in the snapshot, in all.
    rwop_refs_total: u32,
    /// The same per node, for the nodes that have any. Filter recounts the node it is given
    /// so that nodes with pods added (nominated) or removed (preemption) see the difference.
    rwop_refs_by_node: SmallVec<[(Sym, u32); 2]>,
}

/// Whether the volume is one whose mounts can conflict across pods on a node.
#[inline]
fn needs_restrictions_check(v: &Volume) -> bool {
    matches!(
        v.source,
        VolumeSource::GcePersistentDisk { .. }
            | VolumeSource::AwsElasticBlockStore { .. }
            | VolumeSource::Rbd { .. }
            | VolumeSource::Iscsi { .. }
    )
}

/// Whether mounting `v` conflicts with a volume of `existing`: the same GCE PD unless both are
/// read-only; the same EBS volume always; the same ISCSI IQN unless both are read-only; an RBD
/// image sharing a monitor, pool and image unless both are read-only.
fn volume_conflicts(v: &Volume, existing: &Pod) -> bool {
    existing.volumes.iter().any(|e| match (&v.source, &e.source) {
        (
            VolumeSource::GcePersistentDisk { pd_name: a, read_only: ra },
            VolumeSource::GcePersistentDisk { pd_name: b, read_only: rb },
        ) => a == b && !(*ra && *rb),
        (
            VolumeSource::AwsElasticBlockStore { volume_id: a, .. },
            VolumeSource::AwsElasticBlockStore { volume_id: b, .. },
        ) => a == b,
        (VolumeSource::Iscsi { iqn: a, read_only: ra, .. }, VolumeSource::Iscsi { iqn: b, read_only: rb, .. }) => {
            a == b && !(*ra && *rb)
        }
        (
            VolumeSource::Rbd { monitors: ma, pool: pa, image: ia, read_only: ra },
            VolumeSource::Rbd { monitors: mb, pool: pb, image: ib, read_only: rb },
        ) => pa == pb && ia == ib && !(*ra && *rb) && ma.iter().any(|m| mb.contains(m)),
        _ => false,
    })
}

/// Whether the pod's inline disks fit next to the pods on `node` (the NoDiskConflict part;
/// preemption may call it with a trimmed NodeInfo).
pub fn fits(pod: &Pod, node: &NodeInfo) -> bool {
    pod.volumes
        .iter()
        .filter(|v| needs_restrictions_check(v))
        .all(|v| !node.pods().iter().any(|existing| volume_conflicts(v, existing)))
}

/// How many volumes of the pods on `node` use one of `claims` in `namespace`.
fn claim_refs(node: &NodeInfo, namespace: Sym, claims: &[Sym]) -> u32 {
    let mut n = 0;
    for p in node.pods() {
        if p.namespace != namespace {
            continue;
        }
        for v in &p.volumes {
            if let VolumeSource::PersistentVolumeClaim { claim_name, .. } = v.source {
                n += claims.contains(&claim_name) as u32;
            }
        }
    }
    n
}

impl PreFilterPlugin for VolumeRestrictions {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        if pod.volumes.is_empty() {
            return Status::skip();
        }
        let check_disks = pod.volumes.iter().any(needs_restrictions_check);
        let storage = &snapshot.objects().storage;
        let mut rwop_claims: SmallVec<[Sym; 2]> = SmallVec::new();
        for v in &pod.volumes {
            let VolumeSource::PersistentVolumeClaim { claim_name, .. } = v.source else {
                continue;
            };
            let Some(pvc) = storage.pvc(pod.namespace, claim_name) else {
                return Status::new(
                    Code::UnschedulableAndUnresolvable,
                    Reason::Text(Sym::new(&pvc_not_found(claim_name))),
                );
            };
            if pvc.has_access_mode(AccessMode::ReadWriteOncePod) && !rwop_claims.contains(&claim_name) {
                rwop_claims.push(claim_name);
            }
        }
        let mut rwop_refs_total = 0;
        let mut rwop_refs_by_node = SmallVec::new();
        if !rwop_claims.is_empty() {
            for info in snapshot.iter() {
                let n = claim_refs(info, pod.namespace, &rwop_claims);
                if n > 0 {
                    rwop_refs_total += n;
                    rwop_refs_by_node.push((info.name(), n));
                }
            }
        }
        if !check_disks && rwop_refs_total == 0 {
            return Status::skip();
        }
        state.write_slot(PreFilterState { check_disks, rwop_claims, rwop_refs_total, rwop_refs_by_node });
        Status::success()
    }
}

impl FilterPlugin for VolumeRestrictions {
    fn filter(&self, state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        let Some(s) = state.read_slot::<PreFilterState>() else {
            return Status::error("VolumeRestrictions: no PreFilter state");
        };
        if s.check_disks && !fits(pod, node) {
            return Status::unschedulable(REASON_DISK_CONFLICT);
        }
        if !s.rwop_claims.is_empty() {
            let name = node.name();
            let before = s.rwop_refs_by_node.iter().find(|(n, _)| *n == name).map_or(0, |&(_, c)| c);
            let now = claim_refs(node, pod.namespace, &s.rwop_claims);
            if s.rwop_refs_total - before + now > 0 {
                return Status::unschedulable(REASON_READ_WRITE_ONCE_POD_CONFLICT);
            }
        }
        Status::success()
    }
}

crate::state_slot!(PreFilterState);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, PersistentVolumeClaim, StorageObjects};
    use crate::framework::plugins::test_util::node_info;
    use crate::snapshot::node_info::NodeInfo;
    use crate::snapshot::objects::ClusterObjects;

    fn snapshot(infos: Vec<NodeInfo>, storage: StorageObjects) -> Snapshot {
        Snapshot::from_node_infos(infos).with_objects(ClusterObjects { storage, ..ClusterObjects::default() })
    }

    fn pod(name: &str, vols: Vec<Volume>) -> Pod {
        vols.into_iter().fold(Pod::builder(name), |b, v| b.volume(v)).build()
    }

    /// Runs PreFilter then (unless skipped) Filter on `node`; returns the code and message.
    fn run(p: &Pod, snap: &Snapshot, node: &NodeInfo) -> (Code, String) {
        let mut state = CycleState::new();
        let st = VolumeRestrictions.pre_filter(&mut state, p, snap);
        if st.is_skip() || !st.is_success() {
            return (st.code, st.message());
        }
        let st = VolumeRestrictions.filter(&state, p, node);
        (st.code, st.message())
    }

    #[test]
    fn volume_restrictions_disk_conflict_table() {
        let existing = pod(
            "e",
            vec![
                Volume::gce_pd("g", "pd-1", false),
                Volume::gce_pd("gro", "pd-ro", true),
                Volume::aws_ebs("a", "vol-1", true),
                Volume::iscsi("i", "10.0.0.1:3260", "iqn.a", 0, true),
                Volume::rbd("r", &["m1", "m2"], "pool", "img", false),
            ],
        );
        let node = node_info(Node::builder("n").build(), &[existing]);
        let snap = snapshot(vec![node.clone()], StorageObjects::new());
        let cases = [
            ("no volumes: skip", vec![], Code::Skip),
            ("only emptyDir: skip", vec![Volume::other("tmp")], Code::Skip),
            ("same GCE PD read-write", vec![Volume::gce_pd("x", "pd-1", false)], Code::Unschedulable),
            ("same GCE PD, one read-write", vec![Volume::gce_pd("x", "pd-1", true)], Code::Unschedulable),
            ("same GCE PD both read-only", vec![Volume::gce_pd("x", "pd-ro", true)], Code::Success),
            ("other GCE PD", vec![Volume::gce_pd("x", "pd-2", false)], Code::Success),
            ("same EBS even read-only", vec![Volume::aws_ebs("x", "vol-1", true)], Code::Unschedulable),
            ("other EBS", vec![Volume::aws_ebs("x", "vol-2", false)], Code::Success),
            ("same IQN both read-only", vec![Volume::iscsi("x", "p", "iqn.a", 1, true)], Code::Success),
            ("same IQN read-write", vec![Volume::iscsi("x", "p", "iqn.a", 1, false)], Code::Unschedulable),
            ("RBD shared monitor", vec![Volume::rbd("x", &["m2", "m9"], "pool", "img", true)], Code::Unschedulable),
            ("RBD no shared monitor", vec![Volume::rbd("x", &["m9"], "pool", "img", false)], Code::Success),
            ("RBD other image", vec![Volume::rbd("x", &["m1"], "pool", "img2", false)], Code::Success),
            ("PD name equals EBS id: no conflict", vec![Volume::aws_ebs("x", "pd-1", false)], Code::Success),
        ];
        for (desc, vols, want) in cases {
            let (code, msg) = run(&pod("p", vols), &snap, &node);
            assert_eq!(code, want, "{desc}: {msg}");
            if code == Code::Unschedulable {
                assert_eq!(msg, REASON_DISK_CONFLICT, "{desc}");
            }
        }
    }

    #[test]
    fn volume_restrictions_read_write_once_pod_table() {
        let storage = StorageObjects::new()
            .with_pvc(PersistentVolumeClaim::new("default", "rwop").access_mode(AccessMode::ReadWriteOncePod))
            .with_pvc(PersistentVolumeClaim::new("default", "rwop-free").access_mode(AccessMode::ReadWriteOncePod))
            .with_pvc(PersistentVolumeClaim::new("default", "rwo").access_mode(AccessMode::ReadWriteOnce));
        let user = pod("user", vec![Volume::pvc("v", "rwop"), Volume::pvc("w", "rwo")]);
        let other_ns = Pod::builder("o").namespace("other").volume(Volume::pvc("v", "rwop-free")).build();
        let n1 = node_info(Node::builder("n1").build(), &[user]);
        let n2 = node_info(Node::builder("n2").build(), &[other_ns]);
        let snap = snapshot(vec![n1.clone(), n2.clone()], storage);
        let cases = [
            ("RWOP claim in use elsewhere", vec![Volume::pvc("d", "rwop")], &n2, Code::Unschedulable),
            ("RWOP claim in use on the node", vec![Volume::pvc("d", "rwop")], &n1, Code::Unschedulable),
            ("RWOP claim unused: skip", vec![Volume::pvc("d", "rwop-free")], &n1, Code::Skip),
            ("RWO claim in use: skip", vec![Volume::pvc("d", "rwo")], &n1, Code::Skip),
            ("missing claim", vec![Volume::pvc("d", "nope")], &n1, Code::UnschedulableAndUnresolvable),
        ];
        for (desc, vols, node, want) in cases {
            let (code, msg) = run(&pod("p", vols), &snap, node);
            assert_eq!(code, want, "{desc}: {msg}");
        }
        let (_, msg) = run(&pod("p", vec![Volume::pvc("d", "rwop")]), &snap, &n2);
        assert_eq!(msg, REASON_READ_WRITE_ONCE_POD_CONFLICT);
        let (_, msg) = run(&pod("p", vec![Volume::pvc("d", "nope")]), &snap, &n1);
        assert_eq!(msg, r#"persistentvolumeclaim "nope" not found"#);
    }

    #[test]
    fn volume_restrictions_read_write_once_pod_user_removed_fits() {
        // Preemption's dry run hands Filter the node without the pod holding the claim.
        let storage = StorageObjects::new()
            .with_pvc(PersistentVolumeClaim::new("default", "rwop").access_mode(AccessMode::ReadWriteOncePod));
        let user = pod("user", vec![Volume::pvc("v", "rwop")]);
        let n1 = node_info(Node::builder("n1").build(), std::slice::from_ref(&user));
        let snap = snapshot(vec![n1.clone()], storage);
        let p = pod("p", vec![Volume::pvc("d", "rwop")]);
        let mut state = CycleState::new();
        assert!(VolumeRestrictions.pre_filter(&mut state, &p, &snap).is_success());
        assert_eq!(VolumeRestrictions.filter(&state, &p, &n1).code, Code::Unschedulable);
        let mut trimmed = n1.clone();
        trimmed.remove_pod(&user.uid).expect("user is on n1");
        assert_eq!(VolumeRestrictions.filter(&state, &p, &trimmed).code, Code::Success);
    }
}
