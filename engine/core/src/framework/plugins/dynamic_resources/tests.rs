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
        api: &crate::testing::RefusingApi,
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

    /// A cluster that records DynamicResources' deallocations (or refuses them).
    struct Deallocations {
        refuse: bool,
        written: crate::sync::Mutex<Vec<String>>,
    }

    impl crate::cluster::ClusterApi for Deallocations {
        fn bind(&self, pod: &Pod, node: Sym) -> Result<(), crate::cluster::BindError> {
            crate::testing::RefusingApi.bind(pod, node)
        }
        fn delete_victim(&self, victim: &Pod) -> Result<(), crate::cluster::ApiError> {
            crate::testing::RefusingApi.delete_victim(victim)
        }
        fn set_nominated_node(&self, pod: &Pod, node: Option<Sym>) -> Result<(), crate::cluster::ApiError> {
            crate::testing::RefusingApi.set_nominated_node(pod, node)
        }
        fn deallocate_claim(&self, pod: &Pod, claim: &ResourceClaim) -> Result<(), crate::cluster::ApiError> {
            if self.refuse {
                return crate::testing::RefusingApi.deallocate_claim(pod, claim);
            }
            crate::sync::lock(&self.written).push(claim.key());
            Ok(())
        }
    }

    fn reserved_for(mut c: ResourceClaim, pod: &Pod) -> ResourceClaim {
        c.reserved_for.push(crate::api::dra::ConsumerRef::pod(pod));
        c
    }

    /// PreFilter, Filter on the nodes named `reach` (the others rejected by earlier plugins),
    /// then PostFilter: its status and the claims it deallocated.
    fn post_filter_after(claims: Vec<ResourceClaim>, pod: &Pod, reach: &[&str], refuse: bool) -> (String, Vec<String>) {
        let snapshot = world(claims);
        let pl = DynamicResources::default();
        let mut state = CycleState::new();
        let _ = pl.pre_filter(&mut state, pod, &snapshot);
        for n in reach {
            let _ = pl.filter(&state, pod, snapshot.get(Sym::new(n)).unwrap());
        }
        let api = Deallocations { refuse, written: Default::default() };
        let (profile, statuses, nominated) =
            (crate::framework::Profile::default_profile(), NodeStatuses::default(), NominatedPods::default());
        let mut rng = crate::util::rng::Rng::seed(1);
        let mut ctx = PostFilterContext {
            profile: &profile,
            snapshot: &snapshot,
            statuses: &statuses,
            nominator: None,
            nominated: &nominated,
            pool: None,
            rng: &mut rng,
            preemption_trace: None,
            api: &api,
        };
        let (result, st) = pl.post_filter(&mut ctx, &state, pod);
        assert!(result.is_none(), "DynamicResources nominates no node");
        let written = crate::sync::lock(&api.written).clone();
        (format!("{:?}: {}", st.code, st.message()), written)
    }

    use crate::framework::runtime::{NodeStatuses, NominatedPods};

    #[test]
    fn post_filter_deallocation_table() {
        let p = pod(&["c"]);
        let other = Pod::builder("other").build();
        let dealloc = "Unschedulable: deallocation of ResourceClaim completed";
        let still = "Unschedulable: still not schedulable";
        let w = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // (what, claims, pod, nodes reaching DynamicResources' Filter, cluster refuses, status, deallocated)
        type Case = (&'static str, Vec<ResourceClaim>, Pod, &'static [&'static str], bool, &'static str, Vec<String>);
        let cases: Vec<Case> = vec![
            (
                "allocated on n1, reserved for nobody, unavailable on n2: deallocated",
                vec![on_n1(claim("c", "gpu"))],
                p.clone(),
                &["n2"],
                false,
                dealloc,
                w(&["default/c"]),
            ),
            (
                "reserved for this pod alone: deallocated",
                vec![reserved_for(on_n1(claim("c", "gpu")), &p)],
                p.clone(),
                &["n2"],
                false,
                dealloc,
                w(&["default/c"]),
            ),
            (
                "reserved for another pod: kept",
                vec![reserved_for(on_n1(claim("c", "gpu")), &other)],
                p.clone(),
                &["n2"],
                false,
                still,
                w(&[]),
            ),
            (
                "reserved for this pod and another: kept",
                vec![reserved_for(reserved_for(on_n1(claim("c", "gpu")), &p), &other)],
                p.clone(),
                &["n2"],
                false,
                still,
                w(&[]),
            ),
            (
                "only n1 reached DynamicResources (available there): nothing to deallocate",
                vec![on_n1(claim("c", "gpu"))],
                p.clone(),
                &["n1"],
                false,
                still,
                w(&[]),
            ),
            (
                "no node reached DynamicResources' Filter",
                vec![on_n1(claim("c", "gpu"))],
                p.clone(),
                &[],
                false,
                still,
                w(&[]),
            ),
            (
                "an unallocated claim only: nothing to deallocate",
                vec![claim("c", "gpu")],
                p.clone(),
                &["n1", "n2"],
                false,
                still,
                w(&[]),
            ),
            (
                "the allocation failed on n2 first: unavailability not recorded",
                vec![on_n1(claim("held", "gpu")), claim("c", "gpu"), claim("d", "gpu")],
                pod(&["held", "c", "d"]),
                &["n2"],
                false,
                still,
                w(&[]),
            ),
            (
                "two unavailable claims: one deallocation per attempt, the first in spec order",
                vec![on_n1(claim("a", "gpu")), on_n1(claim("b", "gpu"))],
                pod(&["b", "a"]),
                &["n2"],
                false,
                dealloc,
                w(&["default/b"]),
            ),
            (
                "the first unavailable claim is reserved elsewhere: the next one goes",
                vec![reserved_for(on_n1(claim("a", "gpu")), &other), on_n1(claim("b", "gpu"))],
                pod(&["a", "b"]),
                &["n2"],
                false,
                dealloc,
                w(&["default/b"]),
            ),
            (
                "the cluster refuses the write: the attempt errs",
                vec![on_n1(claim("c", "gpu"))],
                p.clone(),
                &["n2"],
                true,
                "Error: deallocate a claim for pod default/p: default/c: this cluster does not model resource claims",
                w(&[]),
            ),
            (
                "PreFilter rejected the pod (missing claim)",
                vec![],
                p.clone(),
                &[],
                false,
                "Unschedulable: no new claims to deallocate",
                w(&[]),
            ),
        ];
        for (name, claims, pod, reach, refuse, want, dealloc) in cases {
            assert_eq!(post_filter_after(claims, &pod, reach, refuse), (want.to_string(), dealloc), "{name}");
        }
    }

    #[test]
    fn pre_enqueue_table() {
        use crate::api::dra::PodClaimStatus;
        use crate::framework::ClusterView;
        let pl = DynamicResources::default();
        let waiting = Pod::builder("p").resource_claim("gpu", PodClaimSource::Template(Sym::new("t"))).build();
        let made = waiting.with_resource_claim_statuses(vec![PodClaimStatus {
            name: Sym::new("gpu"),
            claim: Some(Sym::new("p-gpu-x")),
        }]);
        let own = |mut c: ResourceClaim, p: &Pod| {
            c.owner_pod = Some(Sym::new(p.uid.as_str()));
            c
        };
        let deleting = {
            let mut c = claim("c", "gpu");
            c.deleting = true;
            c
        };
        let someone = Pod::builder("someone").build();
        let ok = "Success: ";
        // (what, the cluster's claims, pod, with the cluster seen, without it)
        type Case = (&'static str, Vec<ResourceClaim>, Pod, &'static str, &'static str);
        let cases: Vec<Case> = vec![
            ("no claims", vec![], pod(&[]), ok, ok),
            ("its named claim exists", vec![claim("c", "gpu")], pod(&["c"]), ok, ok),
            (
                "its named claim does not exist (yet)",
                vec![claim("d", "gpu")],
                pod(&["c"]),
                "UnschedulableAndUnresolvable: resourceclaim.resource.k8s.io \"c\" not found",
                ok,
            ),
            (
                "its named claim is being deleted",
                vec![deleting],
                pod(&["c"]),
                "UnschedulableAndUnresolvable: resourceclaim \"c\" is being deleted",
                ok,
            ),
            (
                "a template entry without its claim",
                vec![],
                waiting.clone(),
                "UnschedulableAndUnresolvable: pod \"default/p\": ResourceClaim not created yet",
                "UnschedulableAndUnresolvable: pod \"default/p\": ResourceClaim not created yet",
            ),
            ("its template claim, made for it", vec![own(claim("p-gpu-x", "gpu"), &made)], made.clone(), ok, ok),
            (
                "a claim of that name made for another pod",
                vec![own(claim("p-gpu-x", "gpu"), &someone)],
                made.clone(),
                "UnschedulableAndUnresolvable: ResourceClaim default/p-gpu-x was not created for pod default/p (pod is not owner)",
                ok,
            ),
            (
                "two claims, the second missing",
                vec![claim("a", "gpu")],
                pod(&["a", "b"]),
                "UnschedulableAndUnresolvable: resourceclaim.resource.k8s.io \"b\" not found",
                ok,
            ),
        ];
        for (what, claims, pod, seen, blind) in cases {
            let snapshot = world(claims);
            let verdict = |cluster: ClusterView<'_>| {
                let st = pl.pre_enqueue(&pod, cluster);
                format!("{:?}: {}", st.code, st.message())
            };
            let got = (verdict(ClusterView::new(snapshot.objects())), verdict(ClusterView::NONE));
            assert_eq!(got, (seen.to_string(), blind.to_string()), "{what}");
        }
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
