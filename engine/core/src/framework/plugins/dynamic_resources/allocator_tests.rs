//! Table tests of the allocator, one or more per rule, and a property test against a
//! brute-force search.

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::api::dra::{AttributeValue as A, DeviceConstraint, ExactRequest};
use crate::api::{NodeSelectorOp, Quantity};

const GPU: &str = "gpu.example.com";

fn gpu(name: &str, model: &str, index: i64) -> Device {
    Device::new(name)
        .attribute("model", A::String(model.into()))
        .attribute("index", A::Int(index))
        .capacity("memory", Quantity::parse("80Gi").unwrap())
}

fn slice(name: &str, pool: &str, nodes: SliceNodes, devices: Vec<Device>) -> ResourceSlice {
    ResourceSlice {
        name: Sym::new(name),
        driver: Sym::new(GPU),
        pool: Sym::new(pool),
        generation: 1,
        resource_slice_count: 1,
        nodes,
        devices,
    }
}

fn local(node: &str, devices: Vec<Device>) -> ResourceSlice {
    slice(&format!("{node}-gpu"), node, SliceNodes::Node(Sym::new(node)), devices)
}

fn classes() -> FxHashMap<Sym, Arc<DeviceClass>> {
    let mut m = FxHashMap::default();
    let any = DeviceClass {
        name: Sym::new("gpu"),
        selectors: vec![CelSelector::compile(&format!("device.driver == {GPU:?}")).unwrap()],
    };
    let h100 = DeviceClass {
        name: Sym::new("h100"),
        selectors: vec![CelSelector::compile(&format!("device.attributes[{GPU:?}].model == \"h100\"")).unwrap()],
    };
    m.insert(any.name, Arc::new(any));
    m.insert(h100.name, Arc::new(h100));
    m
}

fn spec(requests: Vec<DeviceRequest>) -> ClaimSpec {
    ClaimSpec { requests, constraints: Vec::new() }
}

fn exact(r: ExactRequest) -> DeviceRequest {
    DeviceRequest::Exactly(r)
}

fn same_model(requests: &[&str]) -> DeviceConstraint {
    DeviceConstraint {
        requests: requests.iter().map(|r| Sym::new(r)).collect(),
        match_attribute: Some(Sym::new("gpu.example.com/model")),
    }
}

const ALL_FEATURES: Features = Features { admin_access: true, prioritized_list: true };

/// Allocates `specs` on node `n1` (zone-a): the devices as `request=pool/device` per claim.
fn run(
    slices: &[ResourceSlice],
    specs: &[ClaimSpec],
    allocated: &[(&str, &str)],
    features: Features,
) -> Result<Option<Vec<Vec<String>>>, AllocError> {
    let slices: Vec<Arc<ResourceSlice>> = slices.iter().cloned().map(Arc::new).collect();
    let classes = classes();
    let allocated: FxHashSet<DeviceId> = allocated
        .iter()
        .map(|(p, d)| DeviceId { driver: Sym::new(GPU), pool: Sym::new(p), device: Sym::new(d) })
        .collect();
    let alloc = Allocator { features, classes: &classes, slices: &slices, allocated: &allocated };
    let keys: Vec<String> = (0..specs.len()).map(|i| format!("ns/c{i}")).collect();
    let claims: Vec<ClaimRef<'_>> = specs.iter().zip(&keys).map(|(s, k)| ClaimRef { key: k, spec: s }).collect();
    let labels = Labels::from_pairs([("topology.kubernetes.io/zone", "zone-a")]);
    let got = alloc.allocate(Sym::new("n1"), &labels, &claims)?;
    Ok(got.map(|rs| {
        rs.iter()
            .map(|r| r.results.iter().map(|d| format!("{}={}/{}", d.request, d.pool, d.device)).collect())
            .collect()
    }))
}

fn ok(v: &[&[&str]]) -> Result<Option<Vec<Vec<String>>>, AllocError> {
    Ok(Some(v.iter().map(|c| c.iter().map(|s| s.to_string()).collect()).collect()))
}

fn zone_selector(zone: &str) -> SliceNodes {
    SliceNodes::Selector(NodeSelector {
        terms: vec![NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement::new(
                "topology.kubernetes.io/zone",
                NodeSelectorOp::In,
                &[zone],
            )],
            match_fields: Vec::new(),
        }],
    })
}

#[test]
fn allocator_rules_table() {
    let one = || spec(vec![exact(ExactRequest::new("gpu", "gpu"))]);
    let two = || spec(vec![exact(ExactRequest::new("gpu", "gpu").count(2))]);
    let n1 = || local("n1", vec![gpu("g0", "a100", 0), gpu("g1", "h100", 1), gpu("g2", "h100", 2)]);
    type Case = (
        &'static str,
        Vec<ResourceSlice>,
        Vec<ClaimSpec>,
        Vec<(&'static str, &'static str)>,
        Result<Option<Vec<Vec<String>>>, AllocError>,
    );
    let cases: Vec<Case> = vec![
        ("node-local pool: first device", vec![n1()], vec![one()], vec![], ok(&[&["gpu=n1/g0"]])),
        ("another node's slice is invisible", vec![local("n2", vec![gpu("g0", "a", 0)])], vec![one()], vec![], Ok(None)),
        ("nodeSelector slice matching the node", vec![slice("f", "fabric", zone_selector("zone-a"), vec![gpu("l0", "x", 0)])], vec![one()], vec![], ok(&[&["gpu=fabric/l0"]])),
        ("nodeSelector slice not matching", vec![slice("f", "fabric", zone_selector("zone-b"), vec![gpu("l0", "x", 0)])], vec![one()], vec![], Ok(None)),
        ("allNodes slice", vec![slice("f", "net", SliceNodes::AllNodes, vec![gpu("l0", "x", 0)])], vec![one()], vec![], ok(&[&["gpu=net/l0"]])),
        ("count 2: the first two free devices", vec![n1()], vec![two()], vec![("n1", "g0")], ok(&[&["gpu=n1/g1", "gpu=n1/g2"]])),
        ("devices in use are never reused", vec![n1()], vec![two()], vec![("n1", "g0"), ("n1", "g2")], Ok(None)),
        ("devices picked for one claim are not offered to the next", vec![n1()], vec![one(), one()], vec![], ok(&[&["gpu=n1/g0"], &["gpu=n1/g1"]])),
        ("class selector", vec![n1()], vec![spec(vec![exact(ExactRequest::new("gpu", "h100"))])], vec![], ok(&[&["gpu=n1/g1"]])),
        ("request selector after the class's", vec![n1()], vec![spec(vec![exact(ExactRequest::new("gpu", "gpu").selector(&format!("device.attributes[{GPU:?}].index >= 2")))])], vec![], ok(&[&["gpu=n1/g2"]])),
        ("capacity selector with quantities", vec![n1()], vec![spec(vec![exact(ExactRequest::new("gpu", "gpu").selector(&format!("device.capacity[{GPU:?}].memory.compareTo(quantity(\"81Gi\")) >= 0")))])], vec![], Ok(None)),
        ("All: every matching device", vec![n1()], vec![spec(vec![exact(ExactRequest::new("gpu", "h100").all())])], vec![], ok(&[&["gpu=n1/g1", "gpu=n1/g2"]])),
        ("All: one in use fails", vec![n1()], vec![spec(vec![exact(ExactRequest::new("gpu", "h100").all())])], vec![("n1", "g2")], Ok(None)),
        ("All: no matching device fails", vec![local("n1", vec![gpu("g0", "a100", 0)])], vec![spec(vec![exact(ExactRequest::new("gpu", "h100").all())])], vec![], Ok(None)),
        (
            "matchAttribute within a request backtracks to two of a model",
            vec![n1()],
            vec![ClaimSpec { requests: vec![exact(ExactRequest::new("gpu", "gpu").count(2))], constraints: vec![same_model(&["gpu"])] }],
            vec![],
            ok(&[&["gpu=n1/g1", "gpu=n1/g2"]]),
        ),
        (
            "matchAttribute across requests",
            vec![n1()],
            vec![ClaimSpec {
                requests: vec![exact(ExactRequest::new("a", "gpu").selector(&format!("device.attributes[{GPU:?}].index == 1"))), exact(ExactRequest::new("b", "gpu"))],
                constraints: vec![same_model(&[])],
            }],
            vec![],
            ok(&[&["a=n1/g1", "b=n1/g2"]]),
        ),
        (
            "matchAttribute: a device lacking the attribute fails",
            vec![local("n1", vec![Device::new("g0"), Device::new("g1")])],
            vec![ClaimSpec { requests: vec![exact(ExactRequest::new("gpu", "gpu"))], constraints: vec![same_model(&["gpu"])] }],
            vec![],
            Ok(None),
        ),
        (
            "firstAvailable: the first subrequest that fits",
            vec![n1()],
            vec![spec(vec![DeviceRequest::FirstAvailable {
                name: Sym::new("gpu"),
                subrequests: vec![ExactRequest::new("big", "h100").count(3), ExactRequest::new("small", "h100").count(2)],
            }])],
            vec![],
            ok(&[&["gpu/small=n1/g1", "gpu/small=n1/g2"]]),
        ),
        (
            "newest generation only",
            vec![
                ResourceSlice { generation: 1, ..local("n1", vec![gpu("old", "a", 0)]) },
                ResourceSlice { generation: 2, name: Sym::new("n1-gpu-2"), ..local("n1", vec![gpu("new", "a", 0)]) },
            ],
            vec![one()],
            vec![],
            ok(&[&["gpu=n1/new"]]),
        ),
        (
            "incomplete pool is skipped",
            vec![ResourceSlice { resource_slice_count: 2, ..n1() }],
            vec![one()],
            vec![],
            Ok(None),
        ),
        (
            "invalid pool: duplicate device names",
            vec![
                ResourceSlice { resource_slice_count: 2, ..local("n1", vec![gpu("g0", "a", 0)]) },
                ResourceSlice { resource_slice_count: 2, name: Sym::new("n1-b"), ..local("n1", vec![gpu("g0", "a", 0)]) },
            ],
            vec![one()],
            vec![],
            Err(AllocError::Failed("invalid resource pools were encountered".into())),
        ),
        (
            "All with an invalid pool is an error",
            vec![
                ResourceSlice { resource_slice_count: 2, ..local("n1", vec![gpu("g0", "a", 0)]) },
                ResourceSlice { resource_slice_count: 2, name: Sym::new("n1-b"), ..local("n1", vec![gpu("g0", "a", 0)]) },
            ],
            vec![spec(vec![exact(ExactRequest::new("gpus", "gpu").all())])],
            vec![],
            Err(AllocError::Fatal("claim ns/c0, request gpus: asks for all devices, but resource pool gpu.example.com/n1 is currently invalid".into())),
        ),
        (
            "All with an incomplete pool is an error",
            vec![ResourceSlice { resource_slice_count: 2, ..n1() }],
            vec![spec(vec![exact(ExactRequest::new("gpus", "gpu").all())])],
            vec![],
            Err(AllocError::Fatal("claim ns/c0, request gpus: asks for all devices, but resource pool gpu.example.com/n1 is currently being updated".into())),
        ),
        ("admin access may use an allocated device", vec![n1()], vec![spec(vec![exact(ExactRequest::new("gpu", "gpu").admin())])], vec![("n1", "g0")], ok(&[&["gpu=n1/g0"]])),
        ("more than 32 devices", vec![n1()], vec![spec(vec![exact(ExactRequest::new("gpu", "gpu").count(33))])], vec![], Err(AllocError::Fatal("claim ns/c0: number of requested devices 33 exceeds the claim limit of 32".into()))),
        ("a missing class", vec![n1()], vec![spec(vec![exact(ExactRequest::new("gpu", "tpu"))])], vec![], Err(AllocError::Fatal("claim ns/c0, request gpu: could not retrieve device class tpu: deviceclass.resource.k8s.io \"tpu\" not found".into()))),
        (
            "a CEL runtime error names the claim and the selector",
            vec![n1()],
            vec![spec(vec![exact(ExactRequest::new("gpu", "gpu").selector(&format!("device.attributes[{GPU:?}].nope == 1")))])],
            vec![],
            Err(AllocError::Fatal("claim ns/c0: selector #0: CEL runtime error: No such key: nope".into())),
        ),
    ];
    for (name, slices, specs, allocated, want) in cases {
        let got = run(&slices, &specs, &allocated, ALL_FEATURES);
        match (&got, &want) {
            (Err(AllocError::Fatal(g)), Err(AllocError::Fatal(w))) if name.contains("CEL") => {
                assert!(g.starts_with("claim ns/c0: selector #0: CEL runtime error"), "{name}: {g} vs {w}")
            }
            _ => assert_eq!(got, want, "{name}"),
        }
    }
}

#[test]
fn allocator_gates_table() {
    let n1 = vec![local("n1", vec![gpu("g0", "a", 0)])];
    let admin = spec(vec![exact(ExactRequest::new("gpu", "gpu").admin())]);
    let got = run(&n1, &[admin], &[], Features { admin_access: false, prioritized_list: true });
    assert_eq!(
        got,
        Err(AllocError::Fatal(
            "claim ns/c0, request gpu: admin access is requested, but the feature is disabled".into()
        ))
    );
    let subs = spec(vec![DeviceRequest::FirstAvailable {
        name: Sym::new("gpu"),
        subrequests: vec![ExactRequest::new("x", "gpu")],
    }]);
    let got = run(&n1, &[subs], &[], Features { admin_access: true, prioritized_list: false });
    assert_eq!(
        got,
        Err(AllocError::Fatal(
            "claim ns/c0, request gpu: has subrequests, but the DRAPrioritizedList feature is disabled".into()
        ))
    );
}

#[test]
fn allocation_node_selector_table() {
    let classes = classes();
    let allocated = FxHashSet::default();
    let labels = Labels::from_pairs([("topology.kubernetes.io/zone", "zone-a")]);
    let one = spec(vec![exact(ExactRequest::new("gpu", "gpu"))]);
    let claims = [ClaimRef { key: "ns/c", spec: &one }];
    let fabric = Arc::new(slice("f", "fabric", zone_selector("zone-a"), vec![gpu("l0", "x", 0)]));
    let all = Arc::new(slice("a", "net", SliceNodes::AllNodes, vec![gpu("l0", "x", 0)]));
    let n1 = Arc::new(local("n1", vec![gpu("g0", "x", 0)]));
    let sel = |slices: &[Arc<ResourceSlice>]| {
        let alloc = Allocator { features: ALL_FEATURES, classes: &classes, slices, allocated: &allocated };
        alloc.allocate(Sym::new("n1"), &labels, &claims).unwrap().unwrap().remove(0).node_selector
    };
    let by_name = sel(std::slice::from_ref(&n1)).unwrap();
    assert_eq!(by_name.terms[0].match_fields[0].values, vec![Sym::new("n1")]);
    let zone = sel(std::slice::from_ref(&fabric)).unwrap();
    assert_eq!(zone.terms[0].match_expressions[0].key, Sym::new("topology.kubernetes.io/zone"));
    assert_eq!(sel(std::slice::from_ref(&all)), None);
}

// ---- property test against brute force ----

/// A random small world: one node's devices in one or two pools, claims with one or two
/// exact requests (class any or h100, count 1-2, maybe an index selector), maybe a
/// same-model constraint, some devices already allocated.
/// A request: class h100 (else any), count, minimum index.
type RequestGen = (bool, i64, Option<i64>);

#[derive(Clone, Debug)]
struct World {
    pools: Vec<Vec<(String, i64)>>,
    /// Each claim's requests and whether they share one model.
    claims: Vec<(Vec<RequestGen>, bool)>,
    allocated: Vec<(usize, usize)>,
}

fn world() -> impl Strategy<Value = World> {
    let device = (prop_oneof![Just("h100".to_string()), Just("a100".to_string())], 0i64..4);
    let pools = prop::collection::vec(prop::collection::vec(device, 0..4), 1..3);
    let request = (any::<bool>(), 1i64..3, prop::option::of(0i64..3));
    let claim = (prop::collection::vec(request, 1..3), any::<bool>());
    let claims = prop::collection::vec(claim, 1..3);
    let allocated = prop::collection::vec((0usize..2, 0usize..4), 0..3);
    (pools, claims, allocated).prop_map(|(pools, claims, allocated)| World { pools, claims, allocated })
}

fn world_inputs(w: &World) -> (Vec<ResourceSlice>, Vec<ClaimSpec>, Vec<(String, String)>) {
    let slices: Vec<ResourceSlice> = w
        .pools
        .iter()
        .enumerate()
        .map(|(p, devs)| {
            let devices = devs.iter().enumerate().map(|(i, (m, idx))| gpu(&format!("d{i}"), m, *idx)).collect();
            slice(&format!("s{p}"), &format!("p{p}"), SliceNodes::Node(Sym::new("n1")), devices)
        })
        .collect();
    let specs = w
        .claims
        .iter()
        .map(|(reqs, same)| {
            let requests = reqs
                .iter()
                .enumerate()
                .map(|(i, &(h100, count, min_index))| {
                    let mut r = ExactRequest::new(&format!("r{i}"), if h100 { "h100" } else { "gpu" }).count(count);
                    if let Some(m) = min_index {
                        r = r.selector(&format!("device.attributes[{GPU:?}].index >= {m}"));
                    }
                    exact(r)
                })
                .collect();
            ClaimSpec { requests, constraints: if *same { vec![same_model(&[])] } else { Vec::new() } }
        })
        .collect();
    let allocated = w
        .allocated
        .iter()
        .filter(|(p, d)| w.pools.get(*p).is_some_and(|devs| *d < devs.len()))
        .map(|(p, d)| (format!("p{p}"), format!("d{d}")))
        .collect();
    (slices, specs, allocated)
}

/// Brute force: every slot (claim, request, device number) takes any free device its class
/// and selector accept, in pool / device order; constraints are checked only once every
/// slot is filled; the first complete assignment in that order wins.
fn brute_force(w: &World) -> Option<Vec<Vec<String>>> {
    let mut devices: Vec<(String, String, String, i64)> = Vec::new(); // pool, device, model, index
    for (p, devs) in w.pools.iter().enumerate() {
        for (i, (m, idx)) in devs.iter().enumerate() {
            devices.push((format!("p{p}"), format!("d{i}"), m.clone(), *idx));
        }
    }
    let (_, _, allocated) = world_inputs(w);
    let mut slots: Vec<(usize, String, bool, Option<i64>)> = Vec::new(); // claim, request, h100, min index
    for (c, (reqs, _)) in w.claims.iter().enumerate() {
        for (i, &(h100, count, min)) in reqs.iter().enumerate() {
            for _ in 0..count {
                slots.push((c, format!("r{i}"), h100, min));
            }
        }
    }
    fn go(
        k: usize,
        slots: &[(usize, String, bool, Option<i64>)],
        devices: &[(String, String, String, i64)],
        allocated: &[(String, String)],
        w: &World,
        chosen: &mut Vec<usize>,
    ) -> bool {
        if k == slots.len() {
            // Constraints: within each claim with `same`, one model.
            return w.claims.iter().enumerate().all(|(c, (_, same))| {
                let models: Vec<&String> =
                    slots.iter().zip(chosen.iter()).filter(|(s, _)| s.0 == c).map(|(_, &d)| &devices[d].2).collect();
                !*same || models.windows(2).all(|m| m[0] == m[1])
            });
        }
        let (_, _, h100, min) = &slots[k];
        for (d, (pool, name, model, index)) in devices.iter().enumerate() {
            if chosen.contains(&d) || allocated.iter().any(|(p, n)| p == pool && n == name) {
                continue;
            }
            if (*h100 && model != "h100") || min.is_some_and(|m| *index < m) {
                continue;
            }
            chosen.push(d);
            if go(k + 1, slots, devices, allocated, w, chosen) {
                return true;
            }
            chosen.pop();
        }
        false
    }
    let mut chosen = Vec::new();
    if !go(0, &slots, &devices, &allocated, w, &mut chosen) {
        return None;
    }
    let mut out = vec![Vec::new(); w.claims.len()];
    for (s, &d) in slots.iter().zip(&chosen) {
        out[s.0].push(format!("{}={}/{}", s.1, devices[d].0, devices[d].1));
    }
    Some(out)
}

proptest! {
    #[test]
    fn allocator_agrees_with_brute_force(w in world()) {
        let (slices, specs, allocated) = world_inputs(&w);
        let allocated: Vec<(&str, &str)> = allocated.iter().map(|(p, d)| (p.as_str(), d.as_str())).collect();
        let got = run(&slices, &specs, &allocated, ALL_FEATURES).unwrap();
        prop_assert_eq!(got, brute_force(&w));
    }
}

// ---- the simple search against the allocator ----

proptest! {
    /// On every world whose claims are of the simple shape, the index-based search finds what
    /// the allocator finds (the same devices), with the same devices in use.
    #[test]
    fn simple_search_agrees_with_the_allocator(w in world()) {
        use crate::framework::plugins::dynamic_resources::{index::{self, DraIndex}, simple};
        use crate::snapshot::{node_info::NodeInfo, objects::ClusterObjects, Snapshot};
        let (slices, specs, allocated) = world_inputs(&w);
        let refs: Vec<(&str, &str)> = allocated.iter().map(|(p, d)| (p.as_str(), d.as_str())).collect();
        let want = run(&slices, &specs, &refs, ALL_FEATURES).unwrap();
        let node = crate::api::Node::builder("n1").label("topology.kubernetes.io/zone", "zone-a").build();
        let mut objects = ClusterObjects::default();
        for s in &slices {
            objects.dra.upsert_slice(s.clone());
        }
        objects.dra.classes = classes();
        let snapshot = Snapshot::from_node_infos(vec![NodeInfo::new(Arc::new(node))]).with_objects(objects);
        let index = DraIndex::build(&snapshot);
        let mut held = index::Held::new(index.num_devices());
        for (p, d) in &refs {
            for &id in index.ids_of(&DeviceId { driver: Sym::new(GPU), pool: Sym::new(p), device: Sym::new(d) }) {
                held.add(id, 1);
            }
        }
        let spec_refs: Vec<&ClaimSpec> = specs.iter().collect();
        let Some(requests) = simple::prepare(&index, &classes(), &spec_refs) else {
            prop_assert!(specs.iter().any(|s| !s.constraints.is_empty()), "only constraints leave the simple shape here");
            return Ok(());
        };
        let mut picked = smallvec::SmallVec::new();
        let in_use = simple::InUse { held: &held, in_flight: &[] };
        let got = match simple::search(&index, index.node_pools(Sym::new("n1")), &requests, in_use, &mut picked) {
            simple::Search::Found => {
                let rs = simple::results(&index, &requests, specs.len(), &picked).unwrap();
                Some(rs.iter().map(|r| r.results.iter().map(|d| format!("{}={}/{}", d.request, d.pool, d.device)).collect()).collect())
            }
            simple::Search::NotFound => None,
            other => panic!("{other:?}"),
        };
        prop_assert_eq!(got, want);
    }
}
