use std::sync::Mutex as StdMutex;

use super::*;
use crate::api::{
    AccessMode, CsiDriver, CsiStorageCapacity, Node, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolume, StorageClass, StorageObjects, Volume, VolumePhase, NO_PROVISIONER,
};
use crate::cluster::{ApiError, BindError};
use crate::framework::plugins::test_util::node_info;
use crate::framework::FilterPlugin;
use crate::snapshot::ClusterObjects;

const GI: i64 = 1 << 30;

fn zone_affinity(zone: &str) -> crate::api::NodeSelector {
    crate::api::NodeSelector {
        terms: vec![NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement::new(
                "topology.kubernetes.io/zone",
                NodeSelectorOp::In,
                &[zone],
            )],
            match_fields: vec![],
        }],
    }
}

fn node(name: &str, zone: &str) -> NodeInfo {
    node_info(Node::builder(name).label("topology.kubernetes.io/zone", zone).build(), &[])
}

fn wffc(name: &str, provisioner: &str) -> StorageClass {
    StorageClass::new(name, provisioner).binding_mode(VolumeBindingMode::WaitForFirstConsumer)
}

fn local_pv(name: &str, zone: &str, size: i64) -> PersistentVolume {
    PersistentVolume::csi(name, "local", name)
        .storage_class("local")
        .capacity(size)
        .access_mode(AccessMode::ReadWriteOnce)
        .node_affinity(zone_affinity(zone))
}

fn claim(name: &str, class: &str, size: i64) -> PersistentVolumeClaim {
    PersistentVolumeClaim::new("default", name)
        .storage_class(class)
        .request(size)
        .access_mode(AccessMode::ReadWriteOnce)
}

/// The base storage of the table: zones a and b, an Immediate class and three WFFC classes.
fn storage() -> StorageObjects {
    StorageObjects::new()
        .with_storage_class(StorageClass::new("immediate", "ebs.csi"))
        .with_storage_class(wffc("local", NO_PROVISIONER))
        .with_storage_class(wffc("ebs", "ebs.csi"))
        .with_storage_class(wffc("zonal", "ebs.csi").allowed_topology("topology.kubernetes.io/zone", &["a"]))
        .with_storage_class(wffc("tracked", "tracked.csi"))
        .with_pv(local_pv("pv-a-10", "a", 10 * GI))
        .with_pv(local_pv("pv-a-5", "a", 5 * GI))
        .with_pv(
            PersistentVolume::csi("pv-bound", "ebs.csi", "h")
                .storage_class("immediate")
                .node_affinity(zone_affinity("b")),
        )
        .with_pvc(PersistentVolumeClaim::new("default", "bound-b").storage_class("immediate").bound_to("pv-bound"))
        .with_pvc(PersistentVolumeClaim::new("default", "bound-gone").storage_class("immediate").bound_to("pv-gone"))
        .with_pvc(claim("imm-unbound", "immediate", GI))
        .with_pvc(claim("local-small", "local", 4 * GI))
        .with_pvc(claim("local-small2", "local", 4 * GI))
        .with_pvc(claim("local-small3", "local", 4 * GI))
        .with_pvc(claim("local-big", "local", 20 * GI))
        .with_pvc(claim("dyn", "ebs", GI))
        .with_pvc(claim("dyn-zonal", "zonal", GI))
        .with_pvc(claim("tracked", "tracked", 8 * GI))
}

/// A CSIStorageCapacity of class `tracked` in `zone`.
fn capacity(name: &str, zone: &str, total: i64, max_volume: Option<i64>) -> CsiStorageCapacity {
    CsiStorageCapacity {
        namespace: Sym::new("kube-system"),
        name: Sym::new(name),
        storage_class: Sym::new("tracked"),
        node_topology: Some(LabelSelector {
            match_labels: Labels::from_pairs([("topology.kubernetes.io/zone", zone)]),
            ..Default::default()
        }),
        capacity: Some(total),
        maximum_volume_size: max_volume,
    }
}

fn snapshot_with(nodes: Vec<NodeInfo>, storage: StorageObjects) -> Snapshot {
    let mut objects = ClusterObjects::new();
    objects.storage = storage;
    Snapshot::from_node_infos(nodes).with_objects(objects)
}

fn pod(claims: &[&str]) -> Pod {
    let mut b = Pod::builder("p");
    for (i, c) in claims.iter().enumerate() {
        b = b.volume(Volume::pvc(&format!("v{i}"), c));
    }
    b.build()
}

/// PreFilter, then Filter on `node`: (code, message).
fn run(pl: &VolumeBinding, p: &Pod, snap: &Snapshot, node: &NodeInfo) -> (Code, String) {
    let mut state = CycleState::new();
    let st = pl.pre_filter(&mut state, p, snap);
    if !st.is_success() {
        return (st.code, st.message());
    }
    let st = pl.filter(&state, p, node);
    (st.code, st.message())
}

#[test]
fn volume_binding_pre_filter_and_filter_table() {
    let a = node("na", "a");
    let b = node("nb", "b");
    let c = node("nc", "c");
    let mut s = storage()
        .with_pvc(PersistentVolumeClaim { deleting: true, ..claim("going", "ebs", GI) })
        .with_pvc(PersistentVolumeClaim { lost: true, ..claim("lost", "ebs", GI).bound_to("pv-x") });
    s.upsert_csi_driver(CsiDriver { name: Sym::new("tracked.csi"), storage_capacity: true });
    s.upsert_capacity(capacity("cap-a", "a", 100 * GI, None));
    s.upsert_capacity(capacity("cap-b", "b", 100 * GI, Some(4 * GI)));
    let snap = snapshot_with(vec![a.clone(), b.clone(), c.clone()], s);
    let pl = VolumeBinding::default();
    use Code::*;
    let unresolvable = UnschedulableAndUnresolvable;
    let cases: Vec<(&str, Vec<&str>, &NodeInfo, Code, &str)> = vec![
        ("no claims: skip", vec![], &a, Skip, ""),
        ("missing claim", vec!["nope"], &a, unresolvable, r#"persistentvolumeclaim "nope" not found"#),
        ("claim being deleted", vec!["going"], &a, unresolvable, r#"persistentvolumeclaim "going" is being deleted"#),
        (
            "lost claim",
            vec!["lost"],
            &a,
            unresolvable,
            r#"persistentvolumeclaim "lost" bound to non-existent persistentvolume "pv-x""#,
        ),
        ("unbound Immediate claim", vec!["imm-unbound"], &a, unresolvable, ERR_UNBOUND_IMMEDIATE),
        ("bound claim, its volume's zone", vec!["bound-b"], &b, Success, ""),
        ("bound claim, another zone", vec!["bound-b"], &a, unresolvable, ERR_NODE_CONFLICT),
        ("bound claim, volume gone", vec!["bound-gone"], &a, unresolvable, ERR_PV_NOT_EXIST),
        ("WFFC static: a volume in the zone", vec!["local-small"], &a, Success, ""),
        ("WFFC static: no volume in the zone", vec!["local-small"], &b, unresolvable, ERR_BIND_CONFLICT),
        ("WFFC static: every volume too small", vec!["local-big"], &a, unresolvable, ERR_BIND_CONFLICT),
        ("two claims share the zone's two volumes", vec!["local-small", "local-small2"], &a, Success, ""),
        (
            "three claims, two volumes, no provisioner",
            vec!["local-small", "local-small2", "local-small3"],
            &a,
            unresolvable,
            ERR_BIND_CONFLICT,
        ),
        ("WFFC dynamic: provisioned anywhere", vec!["dyn"], &b, Success, ""),
        ("WFFC dynamic: allowedTopologies admit the zone", vec!["dyn-zonal"], &a, Success, ""),
        ("WFFC dynamic: allowedTopologies exclude the zone", vec!["dyn-zonal"], &b, unresolvable, ERR_BIND_CONFLICT),
        ("capacity: enough in the zone", vec!["tracked"], &a, Success, ""),
        ("capacity: maximumVolumeSize too small", vec!["tracked"], &b, unresolvable, ERR_NOT_ENOUGH_SPACE),
        (
            "bound elsewhere and no volume: both reasons",
            vec!["bound-b", "local-small"],
            &c,
            unresolvable,
            "node(s) didn't match PersistentVolume's node affinity, node(s) didn't find available persistent volumes to bind",
        ),
    ];
    for (desc, claims, node, want, msg) in cases {
        let (code, got) = run(&pl, &pod(&claims), &snap, node);
        assert_eq!(code, want, "{desc}: {got}");
        if !msg.is_empty() {
            assert_eq!(got, msg, "{desc}");
        }
    }
}

#[test]
fn volume_binding_static_match_takes_the_smallest_fitting_volume_and_skips_taken_ones() {
    let a = node("na", "a");
    let mut s = storage();
    // A Released volume and one bound to another claim are never offered.
    s.upsert_pv(local_pv("pv-a-4-released", "a", 4 * GI).phase(VolumePhase::Released));
    s.upsert_pv(local_pv("pv-a-4-taken", "a", 4 * GI).claim_ref("default", "someone"));
    // Wrong access mode.
    s.upsert_pv(PersistentVolume {
        access_modes: [AccessMode::ReadOnlyMany][..].into(),
        ..local_pv("pv-a-4-rox", "a", 4 * GI)
    });
    let snap = snapshot_with(vec![a.clone()], s);
    let pl = VolumeBinding::default();
    let p = pod(&["local-small"]);
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &p, &snap).is_success());
    assert!(pl.reserve(&mut state, &p, Sym::new("na")).is_success());
    let Some(Reserved(plan)) = state.read::<Reserved>() else { panic!("reserved") };
    assert_eq!(plan.static_bindings, vec![(Sym::new("default"), Sym::new("local-small"), Sym::new("pv-a-5"))]);
    assert!(plan.provisions.is_empty());
}

/// A cluster that records PreBind's requests, or refuses them.
#[derive(Default)]
struct RecordingApi {
    refuse: bool,
    calls: StdMutex<Vec<PodVolumeBindings>>,
}

impl ClusterApi for RecordingApi {
    fn bind(&self, _pod: &Pod, _node: Sym) -> Result<(), BindError> {
        Ok(())
    }
    fn delete_victim(&self, _victim: &Pod) -> Result<(), ApiError> {
        Ok(())
    }
    fn set_nominated_node(&self, _pod: &Pod, _node: Option<Sym>) -> Result<(), ApiError> {
        Ok(())
    }
    fn bind_volumes(&self, pod: &Pod, bindings: &PodVolumeBindings) -> Result<(), ApiError> {
        if self.refuse {
            return Err(ApiError { op: "bind volumes of", pod: pod.key(), why: "refused".into() });
        }
        self.calls.lock().unwrap().push(bindings.clone());
        Ok(())
    }
}

#[test]
fn volume_binding_reserve_assumes_so_the_next_pod_sees_the_volume_taken_until_unreserve() {
    // Zone a has exactly one volume that fits: once one pod reserved it for its claim, another
    // claim finds none there (the same claim still finds it); Unreserve gives it back.
    let a = node("na", "a");
    let s = storage().with_pvc(claim("local-other", "local", 6 * GI)).with_pvc(claim("local-other2", "local", 6 * GI));
    let snap = snapshot_with(vec![a.clone()], s);
    let pl = VolumeBinding::default();
    let first = pod(&["local-other"]);
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &first, &snap).is_success());
    assert!(pl.filter(&state, &first, &a).is_success());
    assert!(pl.reserve(&mut state, &first, Sym::new("na")).is_success());
    assert_eq!(pl.num_assumed(), 1);
    let (code, msg) = run(&pl, &pod(&["local-other2"]), &snap, &a);
    assert_eq!((code, msg.as_str()), (Code::UnschedulableAndUnresolvable, ERR_BIND_CONFLICT));
    assert_eq!(run(&pl, &pod(&["local-other"]), &snap, &a).0, Code::Success, "its own claim");
    pl.unreserve(&mut state, &first, Sym::new("na"));
    assert_eq!(pl.num_assumed(), 0);
    assert_eq!(run(&pl, &pod(&["local-other2"]), &snap, &a).0, Code::Success);
}

#[test]
fn volume_binding_provisioning_assumes_the_claim_on_its_node() {
    // A claim reserved for provisioning on node na belongs to na: another pod using it
    // elsewhere does not fit, on na it does.
    let a = node("na", "a");
    let a2 = node("na2", "a");
    let snap = snapshot_with(vec![a.clone(), a2.clone()], storage());
    let pl = VolumeBinding::default();
    let first = pod(&["dyn"]);
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &first, &snap).is_success());
    assert!(pl.reserve(&mut state, &first, Sym::new("na")).is_success());
    assert_eq!(run(&pl, &pod(&["dyn"]), &snap, &a2).1, ERR_BIND_CONFLICT);
    assert_eq!(run(&pl, &pod(&["dyn"]), &snap, &a).0, Code::Success);
}

#[test]
fn volume_binding_pre_bind_writes_the_plan_and_forgets_the_assumption() {
    let a = node("na", "a");
    let snap = snapshot_with(vec![a.clone()], storage());
    let pl = VolumeBinding::default();
    let mut state = CycleState::new();
    let p2 = pod(&["local-small", "dyn"]);
    assert!(pl.pre_filter(&mut state, &p2, &snap).is_success());
    assert!(pl.reserve(&mut state, &p2, Sym::new("na")).is_success());
    let api = RecordingApi::default();
    assert!(pl.pre_bind(&mut state, &p2, Sym::new("na"), &api).is_success());
    let calls = api.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].node, Sym::new("na"));
    assert_eq!(calls[0].static_bindings, vec![(Sym::new("default"), Sym::new("local-small"), Sym::new("pv-a-5"))]);
    assert_eq!(calls[0].provisions, vec![(Sym::new("default"), Sym::new("dyn"))]);
    assert_eq!(calls[0].node_labels.get(Sym::new("topology.kubernetes.io/zone")), Some(Sym::new("a")));
    assert_eq!(pl.num_assumed(), 0);

    // A refusal is an error status (the scheduler then unreserves and retries the pod).
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &p2, &snap).is_success());
    assert!(pl.reserve(&mut state, &p2, Sym::new("na")).is_success());
    let refusing = RecordingApi { refuse: true, ..Default::default() };
    assert_eq!(pl.pre_bind(&mut state, &p2, Sym::new("na"), &refusing).code, Code::Error);
    assert_eq!(pl.num_assumed(), 0);

    // All claims bound: nothing to write, the cluster is not asked.
    let mut state = CycleState::new();
    let bound = pod(&["bound-b"]);
    let b = node("nb", "b");
    let snap = snapshot_with(vec![b], storage());
    assert!(pl.pre_filter(&mut state, &bound, &snap).is_success());
    assert!(pl.reserve(&mut state, &bound, Sym::new("nb")).is_success());
    assert!(pl.pre_bind(&mut state, &bound, Sym::new("nb"), &refusing).is_success());
}

#[test]
fn volume_binding_args_validate_like_upstream_with_the_gate_off() {
    assert_eq!(VolumeBindingArgs::default().bind_timeout_seconds, 600);
    assert!(VolumeBindingArgs::default().validate().is_ok());
    let neg = VolumeBindingArgs { bind_timeout_seconds: -1, shape: None };
    assert_eq!(neg.validate().unwrap_err().field, "bindTimeoutSeconds");
    let shaped =
        VolumeBindingArgs { bind_timeout_seconds: 5, shape: Some(serde_json::json!([{"utilization": 0, "score": 0}])) };
    let err = shaped.validate().unwrap_err();
    assert_eq!(err.field, "shape");
    assert!(err.message.contains("StorageCapacityScoring"), "{}", err.message);
}
