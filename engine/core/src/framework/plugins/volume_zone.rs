//! VolumeZone (the NoVolumeZoneConflict predicate): rejects nodes outside the zones / regions
//! of the PersistentVolumes bound to the pod's claims.

use smallvec::SmallVec;

use crate::api::storage::{pv_not_found, pvc_not_found, storage_class_not_found};
use crate::api::{
    Pod, Sym, VolumeBindingMode, VolumeSource, LABEL_REGION, LABEL_REGION_BETA, LABEL_ZONE, LABEL_ZONE_BETA,
};
use crate::framework::events::{ActionType, ClusterEvent, EventResource};
use crate::framework::{Code, CycleState, FilterPlugin, Plugin, PreFilterPlugin, Reason, Status};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

pub const NAME: &str = "VolumeZone";
pub const REASON: &str = "node(s) had no available volume zone";

/// What PVs carry multi-zone label values joined with (`zone-a__zone-b`).
const MULTI_ZONE_DELIMITER: &str = "__";

/// The topology label keys, in the order upstream reads them off a PersistentVolume.
const TOPOLOGY_LABELS: [&str; 4] = [LABEL_ZONE_BETA, LABEL_REGION_BETA, LABEL_ZONE, LABEL_REGION];

#[derive(Debug)]
pub struct VolumeZone {
    /// `TOPOLOGY_LABELS` interned once, so Filter compares ids only.
    keys: [Sym; 4],
}

impl Default for VolumeZone {
    fn default() -> Self {
        VolumeZone { keys: TOPOLOGY_LABELS.map(Sym::new) }
    }
}

impl VolumeZone {
    pub fn new() -> VolumeZone {
        VolumeZone::default()
    }

    /// The GA key for a beta key (the GA keys map to themselves).
    fn ga_key(&self, key: Sym) -> Sym {
        if key == self.keys[0] {
            self.keys[2]
        } else if key == self.keys[1] {
            self.keys[3]
        } else {
            key
        }
    }
}

impl Plugin for VolumeZone {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(VOLUMES => volumes);

    /// Storage that can move a claim's volume into a zone, and nodes that gain zone labels.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        let add_update = ActionType::ADD | ActionType::UPDATE;
        vec![
            ClusterEvent::new(EventResource::PersistentVolume, add_update),
            ClusterEvent::new(EventResource::PersistentVolumeClaim, add_update),
            ClusterEvent::new(EventResource::StorageClass, add_update),
            ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE_NODE_LABEL),
        ]
    }
}

/// One topology label of a PV the pod uses: the node must carry `key` (or its GA form) with
/// one of `values`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PvTopology {
    key: Sym,
    ga_key: Sym,
    values: SmallVec<[Sym; 2]>,
}

#[derive(Clone)]
struct PreFilterState(SmallVec<[PvTopology; 2]>);

/// Splits a multi-zone label value; `None` when an element is empty (upstream then ignores the
/// label).
fn label_zones(value: &str) -> Option<SmallVec<[Sym; 2]>> {
    let mut out = SmallVec::new();
    for z in value.split(MULTI_ZONE_DELIMITER) {
        let z = z.trim();
        if z.is_empty() {
            return None;
        }
        let z = Sym::new(z);
        if !out.contains(&z) {
            out.push(z);
        }
    }
    Some(out)
}

fn unresolvable(msg: &str) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, Reason::Text(Sym::new(msg)))
}

impl VolumeZone {
    /// The topology constraints of the PVs bound to the pod's claims, or the status that
    /// rejects the pod (a claim, class or volume that does not exist or cannot be resolved).
    fn pv_topologies(&self, pod: &Pod, snapshot: &Snapshot) -> Result<SmallVec<[PvTopology; 2]>, Status> {
        let storage = &snapshot.objects().storage;
        let mut out = SmallVec::new();
        for v in &pod.volumes {
            let VolumeSource::PersistentVolumeClaim { claim_name, .. } = v.source else {
                continue;
            };
            if claim_name.is_empty() {
                return Err(unresolvable("PersistentVolumeClaim had no name"));
            }
            let pvc = storage.pvc(pod.namespace, claim_name).ok_or_else(|| unresolvable(&pvc_not_found(claim_name)))?;
            if pvc.volume_name.is_empty() {
                if pvc.storage_class.is_empty() {
                    return Err(unresolvable("PersistentVolumeClaim had no pv name and storageClass name"));
                }
                let class = storage
                    .storage_class(pvc.storage_class)
                    .ok_or_else(|| unresolvable(&storage_class_not_found(pvc.storage_class)))?;
                if class.volume_binding_mode == VolumeBindingMode::WaitForFirstConsumer {
                    // Bound when a node is chosen: nothing to match yet.
                    continue;
                }
                return Err(unresolvable("PersistentVolume had no name"));
            }
            let pv = storage.pv(pvc.volume_name).ok_or_else(|| unresolvable(&pv_not_found(pvc.volume_name)))?;
            for key in self.keys {
                let Some(value) = pv.labels.get(key) else {
                    continue;
                };
                if let Some(values) = label_zones(value.as_str()) {
                    out.push(PvTopology { key, ga_key: self.ga_key(key), values });
                }
            }
        }
        Ok(out)
    }
}

impl PreFilterPlugin for VolumeZone {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        if pod.volumes.is_empty() {
            return Status::skip();
        }
        match self.pv_topologies(pod, snapshot) {
            Err(st) => st,
            Ok(t) if t.is_empty() => Status::skip(),
            Ok(t) => {
                state.write_slot(PreFilterState(t));
                Status::success()
            }
        }
    }
}

impl FilterPlugin for VolumeZone {
    fn reads_pods(&self) -> bool {
        false
    }

    fn filter(&self, state: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        if pod.volumes.is_empty() {
            return Status::success();
        }
        let Some(PreFilterState(topologies)) = state.read_slot::<PreFilterState>() else {
            return Status::error("VolumeZone: no PreFilter state");
        };
        let labels = &node.node().labels;
        // A node without any topology label (a single-zone cluster) takes any volume.
        if !self.keys.iter().any(|&k| labels.contains_key(k)) {
            return Status::success();
        }
        for t in topologies {
            let value = labels.get(t.key).or_else(|| labels.get(t.ga_key));
            if !value.is_some_and(|v| t.values.contains(&v)) {
                return Status::unresolvable(REASON);
            }
        }
        Status::success()
    }
}

crate::state_slot!(PreFilterState);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, PersistentVolume, PersistentVolumeClaim, StorageClass, StorageObjects, Volume};
    use crate::framework::plugins::test_util::node_info;
    use crate::snapshot::objects::ClusterObjects;

    fn storage() -> StorageObjects {
        StorageObjects::new()
            .with_pv(PersistentVolume::gce_pd("pv-a", "d1").label(LABEL_ZONE, "zone-a"))
            .with_pv(PersistentVolume::gce_pd("pv-beta", "d2").label(LABEL_ZONE_BETA, "zone-b"))
            .with_pv(PersistentVolume::gce_pd("pv-multi", "d3").label(LABEL_ZONE, "zone-a__zone-c"))
            .with_pv(PersistentVolume::gce_pd("pv-region", "d4").label(LABEL_REGION, "r1"))
            .with_pv(PersistentVolume::gce_pd("pv-bad-label", "d5").label(LABEL_ZONE, "zone-a__"))
            .with_pv(PersistentVolume::gce_pd("pv-none", "d6"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-a").bound_to("pv-a"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-beta").bound_to("pv-beta"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-multi").bound_to("pv-multi"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-region").bound_to("pv-region"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-bad-label").bound_to("pv-bad-label"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-none").bound_to("pv-none"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-wffc").storage_class("wffc"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-immediate").storage_class("immediate"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-no-class"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-missing-class").storage_class("gone"))
            .with_pvc(PersistentVolumeClaim::new("default", "c-missing-pv").bound_to("pv-gone"))
            .with_storage_class(StorageClass::new("wffc", "p").binding_mode(VolumeBindingMode::WaitForFirstConsumer))
            .with_storage_class(StorageClass::new("immediate", "p"))
    }

    #[test]
    fn volume_zone_table() {
        let snap = Snapshot::from_node_infos(vec![])
            .with_objects(ClusterObjects { storage: storage(), ..ClusterObjects::default() });
        let zone_a = node_info(Node::builder("a").label(LABEL_ZONE, "zone-a").label(LABEL_REGION, "r1").build(), &[]);
        let zone_b_beta = node_info(Node::builder("b").label(LABEL_ZONE_BETA, "zone-b").build(), &[]);
        let zone_b_ga = node_info(Node::builder("b2").label(LABEL_ZONE, "zone-b").build(), &[]);
        let unlabeled = node_info(Node::builder("u").build(), &[]);
        let c = |claim: &str| Volume::pvc("v", claim);
        let unres = Code::UnschedulableAndUnresolvable;
        let cases: Vec<(&str, Vec<Volume>, &NodeInfo, Code, &str)> = vec![
            ("no volumes: skip", vec![], &zone_a, Code::Skip, ""),
            ("inline volumes only: skip", vec![Volume::gce_pd("g", "pd", false)], &zone_a, Code::Skip, ""),
            ("PV without zone labels: skip", vec![c("c-none")], &zone_a, Code::Skip, ""),
            ("WaitForFirstConsumer unbound: skip", vec![c("c-wffc")], &zone_b_ga, Code::Skip, ""),
            ("zone matches", vec![c("c-a")], &zone_a, Code::Success, ""),
            ("zone differs", vec![c("c-a")], &zone_b_ga, unres, REASON),
            ("unlabeled node takes any volume", vec![c("c-a")], &unlabeled, Code::Success, ""),
            ("beta PV label, beta node label", vec![c("c-beta")], &zone_b_beta, Code::Success, ""),
            ("beta PV label matches GA node label", vec![c("c-beta")], &zone_b_ga, Code::Success, ""),
            ("multi-zone PV", vec![c("c-multi")], &zone_a, Code::Success, ""),
            ("multi-zone PV, other zone", vec![c("c-multi")], &zone_b_ga, unres, REASON),
            ("region matches", vec![c("c-region")], &zone_a, Code::Success, ""),
            ("region label missing on labeled node", vec![c("c-region")], &zone_b_ga, unres, REASON),
            ("all PVs must match", vec![c("c-a"), c("c-region"), c("c-beta")], &zone_a, unres, REASON),
            ("malformed label ignored", vec![c("c-bad-label")], &zone_b_ga, Code::Skip, ""),
            ("missing claim", vec![c("nope")], &zone_a, unres, r#"persistentvolumeclaim "nope" not found"#),
            ("missing PV", vec![c("c-missing-pv")], &zone_a, unres, r#"persistentvolume "pv-gone" not found"#),
            (
                "missing storage class",
                vec![c("c-missing-class")],
                &zone_a,
                unres,
                r#"storageclass.storage.k8s.io "gone" not found"#,
            ),
            (
                "unbound without class",
                vec![c("c-no-class")],
                &zone_a,
                unres,
                "PersistentVolumeClaim had no pv name and storageClass name",
            ),
            ("unbound Immediate claim", vec![c("c-immediate")], &zone_a, unres, "PersistentVolume had no name"),
            ("empty claim name", vec![c("")], &zone_a, unres, "PersistentVolumeClaim had no name"),
        ];
        for (desc, vols, node, want, msg) in cases {
            let p = vols.into_iter().fold(Pod::builder("p"), |b, v| b.volume(v)).build();
            let mut state = CycleState::new();
            let mut st = VolumeZone::new().pre_filter(&mut state, &p, &snap);
            if st.is_success() {
                st = VolumeZone::new().filter(&state, &p, node);
            }
            assert_eq!(st.code, want, "{desc}: {}", st.message());
            assert_eq!(st.message(), msg, "{desc}");
        }
    }

    #[test]
    fn label_zones_splits_and_rejects_empty_elements() {
        let z = |s: &str| Sym::new(s);
        assert_eq!(label_zones("a").as_deref(), Some(&[z("a")][..]));
        assert_eq!(label_zones("a__ b __a").as_deref(), Some(&[z("a"), z("b")][..]));
        assert_eq!(label_zones("a____b"), None);
        assert_eq!(label_zones(""), None);
    }
}
