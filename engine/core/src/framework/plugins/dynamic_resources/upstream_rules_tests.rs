//! Table tests of upstream v1.35.4 rules that the recorded `dra-a` case leaves unexercised
//! but other seeds of its generator (or other clusters) can reach. The gates of the recorded
//! cases (DRAAdminAccess and DRAPrioritizedList on, partitionable devices off) select
//! upstream's "incubating" allocator; these rules are that allocator's and the plugin's.

use std::sync::Arc;

use super::allocator::{gather_pool_indices, node_selector_of, AllocError, Allocator, ClaimRef, Features};
use super::*;
use crate::api::dra::{
    AllocationResult, ClaimSpec, Device, DeviceClass, DeviceRequest, DeviceResult, DraObjects, ExactRequest,
    PodClaimSource, ResourceClaim, ResourceSlice, SliceNodes,
};
use crate::api::{Labels, Node, NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm};
use crate::snapshot::{ClusterObjects, NodeInfo};
use crate::util::hash::{FxHashMap, FxHashSet};

const GPU: &str = "gpu.example.com";

fn slice(name: &str, pool: &str, generation: i64, count: i64, nodes: SliceNodes, devices: &[&str]) -> ResourceSlice {
    ResourceSlice {
        name: Sym::new(name),
        driver: Sym::new(GPU),
        pool: Sym::new(pool),
        generation,
        resource_slice_count: count,
        nodes,
        devices: devices.iter().map(|d| Device::new(d)).collect(),
    }
}

fn on(node: &str) -> SliceNodes {
    SliceNodes::Node(Sym::new(node))
}

fn zone(values: &[&str]) -> SliceNodes {
    SliceNodes::Selector(NodeSelector {
        terms: vec![NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement::new(
                "topology.kubernetes.io/zone",
                NodeSelectorOp::In,
                values,
            )],
            match_fields: Vec::new(),
        }],
    })
}

/// Pool gathering (upstream's GatherPools): which pools a node sees, whether complete, whether
/// valid. Each case lists every slice and which of them are visible from the node; the
/// answer is `pool: slices (incomplete?, invalid?)` per pool kept.
#[test]
fn pool_gathering_table() {
    type Case = (&'static str, Vec<ResourceSlice>, Vec<usize>, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (
            "visible slices complete: a newer generation elsewhere is not looked for",
            vec![slice("a", "p", 1, 1, on("n1"), &["d0"]), slice("b", "p", 2, 1, on("n2"), &["d0"])],
            vec![0],
            vec!["p: [0] complete valid"],
        ),
        (
            "visible slices too few and a newer generation elsewhere: the pool is dropped",
            vec![slice("a", "p", 1, 2, on("n1"), &["d0"]), slice("b", "p", 2, 2, on("n2"), &["d0"])],
            vec![0],
            vec![],
        ),
        (
            "visible slices too few, the rest elsewhere at the same generation: complete",
            vec![
                slice("fa", "fabric", 3, 3, zone(&["zone-a"]), &["fab-a-0"]),
                slice("fb", "fabric", 3, 3, zone(&["zone-b"]), &["fab-b-0"]),
                slice("fc", "fabric", 3, 3, zone(&["zone-c"]), &["fab-c-0"]),
            ],
            vec![0],
            vec!["fabric: [0] complete valid"],
        ),
        (
            "older slices elsewhere do not count towards the newest generation",
            vec![
                slice("fa", "fabric", 3, 2, zone(&["zone-a"]), &["fab-a-0"]),
                slice("fb", "fabric", 2, 2, zone(&["zone-b"]), &["fab-b-0"]),
            ],
            vec![0],
            vec!["fabric: [0] incomplete valid"],
        ),
        (
            "a device name repeated only in slices the node does not see: valid",
            vec![
                slice("fa", "fabric", 1, 2, zone(&["zone-a"]), &["fab-0"]),
                slice("fb", "fabric", 1, 2, zone(&["zone-b"]), &["fab-0"]),
            ],
            vec![0],
            vec!["fabric: [0] complete valid"],
        ),
        (
            "a device name repeated in a complete pool: invalid",
            vec![slice("a", "p", 1, 2, on("n1"), &["d0"]), slice("b", "p", 1, 2, on("n1"), &["d0"])],
            vec![0, 1],
            vec!["p: [0, 1] complete invalid"],
        ),
        (
            "a device name repeated in an incomplete pool: incomplete, never validated",
            vec![slice("a", "p", 1, 3, on("n1"), &["d0"]), slice("b", "p", 1, 3, on("n1"), &["d0"])],
            vec![0, 1],
            vec!["p: [0, 1] incomplete valid"],
        ),
        (
            "an older visible slice after a newer one is ignored",
            vec![slice("new", "p", 2, 1, on("n1"), &["d1"]), slice("old", "p", 1, 1, on("n1"), &["d0"])],
            vec![0, 1],
            vec!["p: [0] complete valid"],
        ),
    ];
    for (name, slices, visible, want) in cases {
        let slices: Vec<Arc<ResourceSlice>> = slices.into_iter().map(Arc::new).collect();
        let got: Vec<String> = gather_pool_indices(&slices, visible.into_iter())
            .iter()
            .map(|p| {
                format!(
                    "{}: {:?} {} {}",
                    p.pool,
                    p.slices.as_slice(),
                    if p.incomplete { "incomplete" } else { "complete" },
                    if p.invalid { "invalid" } else { "valid" }
                )
            })
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

/// What the node's Filter says for one claim of one device when its only pool is
/// incomplete and repeats a device name: "cannot allocate all claims" (upstream never
/// validates an incomplete pool), not "invalid resource pools were encountered".
#[test]
fn an_incomplete_pool_with_repeated_names_is_not_reported_invalid() {
    let slices: Vec<Arc<ResourceSlice>> =
        vec![Arc::new(slice("a", "n1", 1, 3, on("n1"), &["d0"])), Arc::new(slice("b", "n1", 1, 3, on("n1"), &["d0"]))];
    let class = DeviceClass { name: Sym::new("gpu"), selectors: Vec::new() };
    let classes: FxHashMap<Sym, Arc<DeviceClass>> = [(class.name, Arc::new(class))].into_iter().collect();
    let allocated = FxHashSet::default();
    let features = Features { admin_access: true, prioritized_list: true };
    let alloc = Allocator { features, classes: &classes, slices: &slices, allocated: &allocated };
    let one =
        ClaimSpec { requests: vec![DeviceRequest::Exactly(ExactRequest::new("gpu", "gpu"))], constraints: vec![] };
    let all = ClaimSpec {
        requests: vec![DeviceRequest::Exactly(ExactRequest::new("gpus", "gpu").all())],
        constraints: vec![],
    };
    let got = |spec: &ClaimSpec| alloc.allocate(Sym::new("n1"), &Labels::new(), &[ClaimRef { key: "ns/c", spec }]);
    assert_eq!(got(&one), Ok(None));
    assert_eq!(
        got(&all),
        Err(AllocError::Fatal(
            "claim ns/c, request gpus: asks for all devices, but resource pool gpu.example.com/n1 is currently being updated"
                .into()
        ))
    );
}

/// The allocation's node selector merges the requirements of the devices' slices into one
/// term, a requirement already there (same key, operator and set of values, in any order)
/// only once; a device from a node-local slice pins the node whatever came before it.
#[test]
fn allocation_node_selector_merging_table() {
    let req = |key: &str, values: &[&str]| NodeSelectorRequirement::new(key, NodeSelectorOp::In, values);
    let sel = |reqs: Vec<NodeSelectorRequirement>| {
        SliceNodes::Selector(NodeSelector {
            terms: vec![NodeSelectorTerm { match_expressions: reqs, match_fields: Vec::new() }],
        })
    };
    let zone_ab = sel(vec![req("zone", &["a", "b"])]);
    let zone_ba = sel(vec![req("zone", &["b", "a"])]);
    let rack = sel(vec![req("rack", &["r1"])]);
    type Case = (&'static str, Vec<SliceNodes>, Option<Vec<String>>);
    let cases: Vec<Case> = vec![
        ("one selector slice", vec![zone_ab.clone()], Some(vec!["zone In [a, b]".into()])),
        (
            "the same requirement with its values in another order: once",
            vec![zone_ab.clone(), zone_ba.clone()],
            Some(vec!["zone In [a, b]".into()]),
        ),
        (
            "different requirements: both, in device order",
            vec![zone_ab.clone(), rack.clone()],
            Some(vec!["zone In [a, b]".into(), "rack In [r1]".into()]),
        ),
        (
            "a node-local device pins the node",
            vec![zone_ab.clone(), on("n1")],
            Some(vec!["fields metadata.name In [n1]".into()]),
        ),
        ("allNodes devices only: no selector", vec![SliceNodes::AllNodes], None),
    ];
    for (name, nodes, want) in cases {
        let slices: Vec<ResourceSlice> =
            nodes.into_iter().enumerate().map(|(i, n)| slice(&format!("s{i}"), "p", 1, 1, n, &["d"])).collect();
        let got = node_selector_of(slices.iter()).expect("one term each").map(|ns| {
            assert_eq!(ns.terms.len(), 1, "{name}");
            let t = &ns.terms[0];
            let show = |r: &NodeSelectorRequirement| {
                let values: Vec<&str> = r.values.iter().map(|v| v.as_str()).collect();
                format!("{} {:?} [{}]", r.key, r.operator, values.join(", "))
            };
            t.match_fields
                .iter()
                .map(|r| format!("fields {}", show(r)))
                .chain(t.match_expressions.iter().map(show))
                .collect::<Vec<_>>()
        });
        assert_eq!(got, want, "{name}");
    }
}

// ---- Score ----

/// Nodes n1 (two devices) and n2 (three devices), class `gpu`, and `claims`.
fn score_world(claims: Vec<ResourceClaim>) -> Snapshot {
    let mut dra = DraObjects::default();
    dra.upsert_class(DeviceClass { name: Sym::new("gpu"), selectors: Vec::new() });
    dra.upsert_slice(slice("n1-gpu", "n1", 1, 1, on("n1"), &["g0", "g1"]));
    dra.upsert_slice(slice("n2-gpu", "n2", 1, 1, on("n2"), &["g0", "g1", "g2"]));
    claims.into_iter().for_each(|c| dra.upsert_claim(c));
    let node = |n: &str| NodeInfo::new(Arc::new(Node::builder(n).resources(1000, 1 << 30, 10).build()));
    Snapshot::from_node_infos(vec![node("n1"), node("n2")])
        .with_objects(ClusterObjects { dra, ..ClusterObjects::default() })
}

fn first_available(name: &str, subs: &[(&str, i64)]) -> ResourceClaim {
    let subrequests = subs.iter().map(|(s, n)| ExactRequest::new(s, "gpu").count(*n)).collect();
    ResourceClaim::new(
        "default",
        name,
        ClaimSpec {
            requests: vec![DeviceRequest::FirstAvailable { name: Sym::new("gpu"), subrequests }],
            constraints: Vec::new(),
        },
    )
}

fn exactly(name: &str) -> ResourceClaim {
    ResourceClaim::new(
        "default",
        name,
        ClaimSpec { requests: vec![DeviceRequest::Exactly(ExactRequest::new("gpu", "gpu"))], constraints: Vec::new() },
    )
}

/// `claim`, allocated n2's `g2`.
fn allocated_on_n2(mut c: ResourceClaim) -> ResourceClaim {
    c.allocation = Some(AllocationResult {
        results: vec![DeviceResult {
            request: Sym::new("gpu"),
            driver: Sym::new(GPU),
            pool: Sym::new("n2"),
            device: Sym::new("g2"),
            admin_access: false,
        }],
        node_selector: None,
    });
    c
}

/// DynamicResources' raw scores on n1 and n2, then normalized (or the Score error).
fn scores(claims: Vec<ResourceClaim>, pod_claims: &[&str]) -> Result<(Vec<i64>, Vec<i64>), String> {
    let snapshot = score_world(claims);
    let mut b = Pod::builder("p");
    for c in pod_claims {
        b = b.resource_claim(c, PodClaimSource::Claim(Sym::new(c)));
    }
    let pod = b.build();
    let pl = DynamicResources::default();
    let mut state = CycleState::new();
    let pre = pl.pre_filter(&mut state, &pod, &snapshot);
    assert!(pre.is_success() || pre.code == Code::Skip, "PreFilter: {}", pre.message());
    let mut raw = Vec::new();
    for n in snapshot.iter() {
        assert!(pl.filter(&state, &pod, n).is_success(), "{} filtered out", n.name());
        raw.push(pl.score(&state, &pod, n, &snapshot).map_err(|st| st.message())?);
    }
    let mut normalized = raw.clone();
    assert!(pl.normalize(&state, &pod, &mut normalized).is_success());
    Ok((raw, normalized))
}

/// Score: each `firstAvailable` request of each claim adds 8 minus the index of the
/// subrequest chosen on that node; exact requests add nothing; normalized by the maximum. A
/// pod with an allocated and an unallocated claim fails Score, whatever their order; a pod
/// whose claims are all allocated scores 0.
#[test]
fn score_table() {
    type Case = (&'static str, Vec<ResourceClaim>, Vec<&'static str>, Result<(Vec<i64>, Vec<i64>), String>);
    let err = || Err("number of allocations 1 is smaller than number of claims".to_string());
    let cases: Vec<Case> = vec![
        (
            "two claims' firstAvailable requests add up; the first claim backs off on n1",
            vec![first_available("a", &[("two", 2), ("one", 1)]), first_available("b", &[("one", 1)])],
            vec!["a", "b"],
            // n1: a takes one device (index 1: 7), b the other (8); n2: 8 + 8.
            Ok((vec![15, 16], vec![93, 100])),
        ),
        (
            "the same subrequest everywhere: all at the maximum",
            vec![first_available("a", &[("three", 3), ("one", 1)])],
            vec!["a"],
            Ok((vec![7, 8], vec![87, 100])),
        ),
        ("exact requests only: zero", vec![exactly("a")], vec!["a"], Ok((vec![0, 0], vec![0, 0]))),
        (
            "an allocated claim then an unallocated one: Score fails",
            vec![allocated_on_n2(exactly("held")), exactly("a")],
            vec!["held", "a"],
            err(),
        ),
        (
            "an unallocated claim then an allocated one: Score fails",
            vec![allocated_on_n2(exactly("held")), first_available("a", &[("one", 1)])],
            vec!["a", "held"],
            err(),
        ),
        (
            "only allocated claims: zero",
            vec![allocated_on_n2(exactly("held"))],
            vec!["held"],
            Ok((vec![0, 0], vec![0, 0])),
        ),
    ];
    for (name, claims, pod_claims, want) in cases {
        assert_eq!(scores(claims, &pod_claims), want, "{name}");
    }
}

// ---- matchAttribute ----

/// `matchAttribute` rules beyond the recorded case's shapes: a constraint naming a
/// subrequest binds only when that subrequest is chosen; values of different types never
/// match; under allocationMode All a device breaking a constraint is an error, not a miss.
#[test]
fn match_attribute_table() {
    use crate::api::dra::{AttributeValue as A, DeviceConstraint};
    let dev = |name: &str, model: A| Device::new(name).attribute("model", model);
    let slices: Vec<Arc<ResourceSlice>> = vec![Arc::new(ResourceSlice {
        devices: vec![
            dev("g0", A::String("a100".into())),
            dev("g1", A::String("1".into())),
            dev("g2", A::Int(1)),
            dev("g3", A::String("h100".into())),
        ],
        ..slice("n1-gpu", "n1", 1, 1, on("n1"), &[])
    })];
    let class = DeviceClass { name: Sym::new("gpu"), selectors: Vec::new() };
    let classes: FxHashMap<Sym, Arc<DeviceClass>> = [(class.name, Arc::new(class))].into_iter().collect();
    let allocated = FxHashSet::default();
    let features = Features { admin_access: true, prioritized_list: true };
    let alloc = Allocator { features, classes: &classes, slices: &slices, allocated: &allocated };
    let same = |requests: &[&str]| DeviceConstraint {
        requests: requests.iter().map(|r| Sym::new(r)).collect(),
        match_attribute: Some(Sym::new("gpu.example.com/model")),
    };
    let run = |spec: ClaimSpec| -> Result<Option<Vec<String>>, AllocError> {
        let got = alloc.allocate(Sym::new("n1"), &Labels::new(), &[ClaimRef { key: "ns/c", spec: &spec }])?;
        Ok(got.map(|mut rs| rs.remove(0).results.iter().map(|d| format!("{}={}", d.request, d.device)).collect()))
    };
    let sel = |expr: &str| ExactRequest::new("x", "gpu").selector(expr);
    let by_name = |name: &str, n: &str| ExactRequest {
        name: Sym::new(name),
        ..sel(&format!("device.attributes[{GPU:?}].model == {n:?}"))
    };
    // An a100 for `first`, then any device for subrequest `pick/any`, constrained as given.
    let a100_then_any = |constrained: &[&str]| ClaimSpec {
        requests: vec![
            DeviceRequest::Exactly(by_name("first", "a100")),
            DeviceRequest::FirstAvailable {
                name: Sym::new("pick"),
                subrequests: vec![ExactRequest::new("any", "gpu")],
            },
        ],
        constraints: vec![same(constrained)],
    };
    type Case = (&'static str, ClaimSpec, Result<Option<Vec<&'static str>>, AllocError>);
    let cases: Vec<Case> = vec![
        (
            "a constraint on a subrequest binds when it is chosen",
            a100_then_any(&["first", "pick/any"]),
            // g0 is the only a100: the subrequest finds no second a100.
            Ok(None),
        ),
        (
            "a constraint on another subrequest does not bind the one chosen",
            a100_then_any(&["first", "pick/other"]),
            Ok(Some(vec!["first=g0", "pick/any=g1"])),
        ),
        (
            "a string \"1\" and an int 1 do not match",
            ClaimSpec {
                requests: vec![
                    DeviceRequest::Exactly(ExactRequest { name: Sym::new("s"), ..sel(&format!("device.attributes[{GPU:?}].model == \"1\"")) }),
                    DeviceRequest::Exactly(ExactRequest {
                        name: Sym::new("i"),
                        ..sel(&format!("device.attributes[{GPU:?}].model == 1"))
                    }),
                ],
                constraints: vec![same(&[])],
            },
            Ok(None),
        ),
        (
            "All: a device breaking the constraint is an error",
            ClaimSpec { requests: vec![DeviceRequest::Exactly(ExactRequest::new("all", "gpu").all())], constraints: vec![same(&[])] },
            Err(AllocError::Fatal(
                "claim ns/c, request all: cannot add device gpu.example.com/n1/g1 because a claim constraint would not be satisfied".into(),
            )),
        ),
    ];
    for (name, spec, want) in cases {
        let want = want.map(|o| o.map(|v| v.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
        assert_eq!(run(spec), want, "{name}");
    }
}
