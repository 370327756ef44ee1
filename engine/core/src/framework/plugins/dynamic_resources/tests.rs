//! DynamicResources: table tests of the extension points.

use super::*;
use crate::api::{Node, ResourceName::Cpu, Volume};
use crate::framework::runtime::{run_post_filter_plugins, run_pre_filter, NodeStatuses, NominatedPods};
use crate::framework::Profile;
use crate::snapshot::node_info::NodeInfo;
use crate::util::rng::Rng;

/// The PostFilter message of the default profile for `pod` on one small node, after
/// PreFilter ran as the cycle runs it.
fn post_filter_message(profile: &Profile, pod: &Pod) -> Option<String> {
    let node = Node::builder("n1").resources(1000, 1 << 30, 10).build();
    let snapshot = Snapshot::from_node_infos(vec![NodeInfo::new(std::sync::Arc::new(node))]);
    let mut state = CycleState::new();
    let mut statuses = NodeStatuses::default();
    if let Err(st) = run_pre_filter(profile, &mut state, pod, &snapshot) {
        statuses.absent = Some(st);
    } else {
        statuses.push(0, Status::new(Code::Unschedulable, Reason::Insufficient(Cpu)));
    }
    let mut rng = Rng::seed(1);
    let nominated = NominatedPods::default();
    let mut ctx = PostFilterContext {
        profile,
        snapshot: &snapshot,
        statuses: &statuses,
        nominator: None,
        nominated: &nominated,
        pool: None,
        rng: &mut rng,
        preemption_trace: None,
    };
    run_post_filter_plugins(profile, &mut ctx, &state, pod).1
}

#[test]
fn post_filter_message_table() {
    let too_big = Pod::builder("big").container("c", &[(Cpu, 2000)]).build();
    // VolumeRestrictions' PreFilter rejects a pod whose claim does not exist.
    let missing_claim = Pod::builder("claims").volume(Volume::pvc("data", "missing")).build();
    let cases: Vec<(&str, &Pod, &str)> = vec![
        (
            "no victims: both plugins' messages, joined",
            &too_big,
            "no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
        ("PreFilter rejected the pod before DynamicResources' PreFilter ran", &missing_claim, MSG_NO_STATE),
    ];
    for (name, pod, want) in cases {
        assert_eq!(post_filter_message(&Profile::default_profile(), pod).as_deref(), Some(want), "{name}");
    }
}

mod points {
    use std::sync::Arc;

    use super::super::*;
    use crate::api::dra::{
        AllocationResult, ClaimSpec, Device, DeviceClass, DeviceRequest, DeviceResult, DraObjects, ExactRequest,
        PodClaimSource, ResourceClaim, ResourceSlice, SliceNodes,
    };
    use crate::api::{Node, NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm};
    use crate::snapshot::{ClusterObjects, NodeInfo};

    const GPU: &str = "gpu.example.com";

    fn world(claims: Vec<ResourceClaim>) -> Snapshot {
        let mut dra = DraObjects::default();
        dra.upsert_class(DeviceClass { name: Sym::new("gpu"), selectors: Vec::new() });
        for n in ["n1", "n2"] {
            dra.upsert_slice(ResourceSlice {
                name: Sym::new(&format!("{n}-gpu")),
                driver: Sym::new(GPU),
                pool: Sym::new(n),
                generation: 1,
                resource_slice_count: 1,
                nodes: SliceNodes::Node(Sym::new(n)),
                devices: vec![Device::new("g0")],
            });
        }
        for c in claims {
            dra.upsert_claim(c);
        }
        let infos = ["n1", "n2"]
            .iter()
            .map(|n| NodeInfo::new(Arc::new(Node::builder(n).resources(1000, 1 << 30, 10).build())))
            .collect();
        Snapshot::from_node_infos(infos).with_objects(ClusterObjects { dra, ..ClusterObjects::default() })
    }

    fn claim(name: &str, class: &str) -> ResourceClaim {
        ResourceClaim::new(
            "default",
            name,
            ClaimSpec {
                requests: vec![DeviceRequest::Exactly(ExactRequest::new("gpu", class))],
                constraints: Vec::new(),
            },
        )
    }

    fn on_n1(mut c: ResourceClaim) -> ResourceClaim {
        c.allocation = Some(AllocationResult {
            results: vec![DeviceResult {
                request: Sym::new("gpu"),
                driver: Sym::new(GPU),
                pool: Sym::new("n1"),
                device: Sym::new("g0"),
                admin_access: false,
            }],
            node_selector: Some(NodeSelector {
                terms: vec![NodeSelectorTerm {
                    match_expressions: Vec::new(),
                    match_fields: vec![NodeSelectorRequirement::new("metadata.name", NodeSelectorOp::In, &["n1"])],
                }],
            }),
        });
        c
    }

    fn pod(claims: &[&str]) -> Pod {
        let mut b = Pod::builder("p");
        for c in claims {
            b = b.resource_claim(c, PodClaimSource::Claim(Sym::new(c)));
        }
        b.build()
    }

    /// PreFilter's status, then each node's Filter message ("" for success).
    fn run(claims: Vec<ResourceClaim>, pod: &Pod) -> (String, Vec<String>) {
        let snapshot = world(claims);
        let pl = DynamicResources::default();
        let mut state = CycleState::new();
        let pre = pl.pre_filter(&mut state, pod, &snapshot);
        if !pre.is_success() {
            return (format!("{:?}: {}", pre.code, pre.message()), Vec::new());
        }
        let verdicts: Vec<String> = snapshot.iter().map(|n| pl.filter(&state, pod, n).message()).collect();
        // Judged a block of rows at a time, from one row or the other (as the filter pass
        // starts anywhere): the same verdicts; and a cycle judged by rows leaves no row to
        // the node check.
        for lo in 0..snapshot.num_nodes() {
            let mut judged = vec![RowJudged::Pass; snapshot.num_nodes() - lo];
            pl.filter_rows(&state, pod, &snapshot, lo, &mut judged);
            for (i, j) in judged.iter().enumerate() {
                let got = match *j {
                    RowJudged::Pass => String::new(),
                    RowJudged::Fail(plugin, fail) => {
                        assert_eq!(plugin, NAME);
                        crate::framework::Verdict::Brief(plugin, fail).into_status().message()
                    }
                    RowJudged::Node => {
                        assert!(!pl.judges_rows(&state, pod), "row {} left to the node check", lo + i);
                        continue;
                    }
                };
                assert_eq!(got, verdicts[lo + i], "row {}", lo + i);
            }
        }
        ("Success".into(), verdicts)
    }

    #[test]
    fn pre_filter_and_filter_table() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        type Case = (&'static str, Vec<ResourceClaim>, Pod, (&'static str, Vec<String>));
        let cases: Vec<Case> = vec![
            ("no claims: skipped", vec![], pod(&[]), ("Skip: ", vec![])),
            (
                "a missing claim",
                vec![],
                pod(&["c"]),
                ("UnschedulableAndUnresolvable: resourceclaim.resource.k8s.io \"c\" not found", vec![]),
            ),
            (
                "a missing class",
                vec![claim("c", "tpu")],
                pod(&["c"]),
                ("UnschedulableAndUnresolvable: request gpu: device class tpu does not exist", vec![]),
            ),
            (
                "unallocated: every node with a free device",
                vec![claim("c", "gpu")],
                pod(&["c"]),
                ("Success", s(&["", ""])),
            ),
            (
                "allocated on n1: other nodes unavailable",
                vec![on_n1(claim("c", "gpu"))],
                pod(&["c"]),
                ("Success", s(&["", ERR_NOT_AVAILABLE])),
            ),
            (
                "n1's device in use by another claim",
                vec![on_n1(claim("held", "gpu")), claim("c", "gpu")],
                pod(&["c"]),
                ("Success", s(&[ERR_CANNOT_ALLOCATE, ""])),
            ),
            (
                "allocation failure wins over unavailability",
                vec![on_n1(claim("held", "gpu")), claim("c", "gpu"), claim("d", "gpu")],
                pod(&["held", "c", "d"]),
                ("Success", s(&[ERR_CANNOT_ALLOCATE, ERR_CANNOT_ALLOCATE])),
            ),
        ];
        for (name, claims, pod, (pre, filters)) in cases {
            let (got_pre, got) = run(claims, &pod);
            assert_eq!((got_pre.as_str(), got), (pre, filters), "{name}");
        }
    }

    #[test]
    fn pre_enqueue_waits_for_template_claims() {
        let pl = DynamicResources::default();
        let waiting = Pod::builder("p").resource_claim("gpu", PodClaimSource::Template(Sym::new("t"))).build();
        assert_eq!(pl.pre_enqueue(&waiting).message(), "pod \"default/p\": ResourceClaim not created yet");
        let made = waiting.with_resource_claim_statuses(vec![crate::api::dra::PodClaimStatus {
            name: Sym::new("gpu"),
            claim: Some(Sym::new("p-gpu-x")),
        }]);
        assert!(pl.pre_enqueue(&made).is_success());
    }

    #[test]
    fn reserve_keeps_devices_in_flight_until_pre_bind_or_unreserve() {
        let snapshot = world(vec![claim("c", "gpu"), claim("d", "gpu")]);
        let pl = DynamicResources::default();
        let (p, q) = (pod(&["c"]), pod(&["d"]));
        let mut state = CycleState::new();
        assert!(pl.pre_filter(&mut state, &p, &snapshot).is_success());
        assert!(pl.reserve(&mut state, &p, Sym::new("n1")).is_success());
        assert_eq!(pl.num_in_flight(), 1);
        // The next pod's cycle sees n1's device in use.
        let mut next = CycleState::new();
        assert!(pl.pre_filter(&mut next, &q, &snapshot).is_success());
        let n1 = snapshot.get(Sym::new("n1")).unwrap();
        assert_eq!(pl.filter(&next, &q, n1).message(), ERR_CANNOT_ALLOCATE);
        // A claim in flight cannot be allocated by another pod's cycle.
        let mut again = CycleState::new();
        let st = pl.pre_filter(&mut again, &p, &snapshot);
        assert_eq!(st.message(), "resource claim default/c is in the process of being allocated");
        pl.unreserve(&mut state, &p, Sym::new("n1"));
        assert_eq!(pl.num_in_flight(), 0);
    }
}
