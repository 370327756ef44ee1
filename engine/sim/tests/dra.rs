//! DRA through the simulation: template claims named from the seed, and a pod waiting for
//! devices moved back to the queue by the claim update that frees them, not by unrelated
//! events (DynamicResources' queueing hints).

use std::sync::Arc;

use ksched_engine::api::dra::{
    ClaimSpec, Device, DeviceClass, DeviceRequest, ExactRequest, PodClaimSource, ResourceClaim, ResourceClaimTemplate,
    ResourceSlice, SliceNodes,
};
use ksched_engine::api::{Node, Pod, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::framework::Profile;
use ksched_engine::queue::{QueueConfig, QueueLocation, SchedulingQueue};
use ksched_engine::scheduler::CycleOutcome;
use ksched_sim::cluster::PodExit;
use ksched_sim::simulation::{RunOptions, Until};
use ksched_sim::Simulation;

/// The template `one-gpu`, asking for one device of class `gpu`.
fn template() -> ResourceClaimTemplate {
    let spec =
        ClaimSpec { requests: vec![DeviceRequest::Exactly(ExactRequest::new("gpu", "gpu"))], constraints: vec![] };
    ResourceClaimTemplate {
        namespace: Sym::new("default"),
        name: Sym::new("one-gpu"),
        labels: Vec::new(),
        annotations: Vec::new(),
        spec: Arc::new(spec),
    }
}

/// One node with one GPU, a class and a template asking for one GPU.
fn one_gpu_cluster(seed: u64) -> Simulation {
    let sim = gpu_node_without_template(seed);
    sim.cache.edit_objects(|o| o.dra.upsert_template(template()));
    sim
}

/// One node with one GPU and a class, no template.
fn gpu_node_without_template(seed: u64) -> Simulation {
    let cache = Arc::new(Cache::upstream());
    cache.add_node(Node::builder("n1").resources(8000, 32 << 30, 110).build()).unwrap();
    cache.edit_objects(|o| {
        o.dra.upsert_class(DeviceClass { name: Sym::new("gpu"), selectors: Vec::new() });
        o.dra.upsert_slice(ResourceSlice {
            name: Sym::new("n1-gpu"),
            driver: Sym::new("gpu.example.com"),
            pool: Sym::new("n1"),
            generation: 1,
            resource_slice_count: 1,
            nodes: SliceNodes::Node(Sym::new("n1")),
            devices: vec![Device::new("gpu-0")],
        });
    });
    Simulation::new(cache, Profile::default_profile(), QueueConfig::new(), seed)
}

fn gpu_pod(name: &str) -> Pod {
    Pod::builder(name).resource_claim("gpu", PodClaimSource::Template(Sym::new("one-gpu"))).build()
}

/// Runs until idle; the attempts' (pod, node or None).
fn drain(sim: &mut Simulation) -> Vec<(String, Option<String>)> {
    let mut seen = Vec::new();
    let mut obs = |o: &CycleOutcome, _: u64| {
        seen.push(match o {
            CycleOutcome::Scheduled { pod, decision } => (pod.name.to_string(), Some(decision.node.to_string())),
            CycleOutcome::Unschedulable { pod, .. } | CycleOutcome::BindFailed { pod, .. } => {
                (pod.name.to_string(), None)
            }
        })
    };
    sim.run(Until::Idle, &RunOptions::default(), &mut [], &mut [&mut obs]).unwrap();
    seen
}

#[test]
fn template_claims_are_named_from_the_seed() {
    let name_with = |seed: u64| {
        let sim = one_gpu_cluster(seed);
        let pod = sim.cluster.create_pod(gpu_pod("train-0")).unwrap();
        pod.resource_claim_statuses[0].claim.unwrap().to_string()
    };
    let a = name_with(1);
    assert!(a.starts_with("train-0-gpu-") && a.len() == "train-0-gpu-".len() + 5, "{a}");
    assert_eq!(a, name_with(1), "the same seed names the claim the same");
    assert_ne!(name_with(1), name_with(2));
}

#[test]
fn a_pod_waiting_for_a_device_moves_when_a_claim_frees_it_not_before() {
    let mut sim = one_gpu_cluster(1);
    let holder = sim.cluster.create_pod(gpu_pod("holder")).unwrap();
    let waiter = sim.cluster.create_pod(gpu_pod("waiter")).unwrap();
    let seen = drain(&mut sim);
    assert_eq!(seen, [("holder".into(), Some("n1".into())), ("waiter".into(), None)]);

    // An unrelated claim created and allocated elsewhere: the waiter stays parked.
    let other = ResourceClaim::new("default", "unrelated", ClaimSpec::default());
    let before = sim.cache.objects().dra.claim(Sym::new("default"), Sym::new("unrelated")).cloned();
    sim.cache.edit_objects(|o| o.dra.upsert_claim(other));
    let after = sim.cache.objects().dra.claim(Sym::new("default"), Sym::new("unrelated")).cloned();
    sim.cluster.claims_changed(vec![ksched_sim::dra::ClaimChange { old: before, new: after }]);
    let parked = Some(QueueLocation::Unschedulable);
    assert_eq!(sim.queue.location(&waiter.uid), parked, "an unrelated claim does not move the waiter");

    // The holder goes: its claim is released (deallocated, then deleted) and the waiter gets
    // the device.
    let holder = sim.cache.get_pod(&holder).unwrap();
    assert!(sim.cluster.delete_pod(&holder, Some(0), PodExit::Deleted));
    assert_ne!(sim.queue.location(&waiter.uid), parked, "the freed device moves the waiter");
    let seen = drain(&mut sim);
    assert_eq!(seen, [("waiter".into(), Some("n1".into()))]);
    let claim = waiter.resource_claim_statuses[0].claim.unwrap();
    let claim = sim.cache.objects().dra.claim(Sym::new("default"), claim).cloned().unwrap();
    assert_eq!(claim.allocation.as_ref().unwrap().results[0].device.as_str(), "gpu-0");
}

#[test]
fn a_pod_waits_for_its_template_then_gets_its_claim_and_schedules() {
    let mut sim = gpu_node_without_template(1);
    let pod = sim.cluster.create_pod(gpu_pod("early")).unwrap();
    assert!(pod.resource_claim_statuses.is_empty(), "no template, no claim");
    assert!(drain(&mut sim).is_empty(), "held by DynamicResources' PreEnqueue, never attempted");
    assert_eq!(sim.cluster.claim_templates_added(), 0, "still no template");
    sim.cache.edit_objects(|o| o.dra.upsert_template(template()));
    assert_eq!(sim.cluster.claim_templates_added(), 1);
    assert_eq!(drain(&mut sim), [("early".into(), Some("n1".into()))]);
    assert_eq!(sim.cluster.claim_templates_added(), 0, "nothing left to make");
}

/// Two nodes with one GPU each, n1 tainted so that no pod here goes there, and the claim
/// `shared` allocated n1's GPU, reserved for `reserved` (none: nobody).
fn allocated_on_tainted_n1(reserved: Option<&Pod>) -> Simulation {
    use ksched_engine::api::dra::{AllocationResult, ConsumerRef, DeviceResult};
    use ksched_engine::api::{
        NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm, Taint, TaintEffect,
    };
    let cache = Arc::new(Cache::upstream());
    let taint = Taint::new("dedicated", "other", TaintEffect::NoSchedule);
    cache.add_node(Node::builder("n1").resources(8000, 32 << 30, 110).taint(taint).build()).unwrap();
    cache.add_node(Node::builder("n2").resources(8000, 32 << 30, 110).build()).unwrap();
    let mut claim = ResourceClaim::new(
        "default",
        "shared",
        ClaimSpec { requests: vec![DeviceRequest::Exactly(ExactRequest::new("gpu", "gpu"))], constraints: vec![] },
    );
    claim.allocation = Some(AllocationResult {
        results: vec![DeviceResult {
            request: Sym::new("gpu"),
            driver: Sym::new("gpu.example.com"),
            pool: Sym::new("n1"),
            device: Sym::new("gpu-0"),
            admin_access: false,
        }],
        node_selector: Some(NodeSelector {
            terms: vec![NodeSelectorTerm {
                match_expressions: Vec::new(),
                match_fields: vec![NodeSelectorRequirement::new("metadata.name", NodeSelectorOp::In, &["n1"])],
            }],
        }),
    });
    claim.reserved_for.extend(reserved.map(ConsumerRef::pod));
    cache.edit_objects(|o| {
        o.dra.upsert_class(DeviceClass { name: Sym::new("gpu"), selectors: Vec::new() });
        for n in ["n1", "n2"] {
            o.dra.upsert_slice(ResourceSlice {
                name: Sym::new(&format!("{n}-gpu")),
                driver: Sym::new("gpu.example.com"),
                pool: Sym::new(n),
                generation: 1,
                resource_slice_count: 1,
                nodes: SliceNodes::Node(Sym::new(n)),
                devices: vec![Device::new("gpu-0")],
            });
        }
        o.dra.upsert_claim(claim);
    });
    Simulation::new(cache, Profile::default_profile(), QueueConfig::new(), 1)
}

/// The PostFilter messages of the failed attempts, and each attempt's (pod, node).
fn drain_with_messages(sim: &mut Simulation) -> (Vec<(String, Option<String>)>, Vec<String>) {
    let mut seen = Vec::new();
    let mut messages = Vec::new();
    let mut obs = |o: &CycleOutcome, _: u64| match o {
        CycleOutcome::Scheduled { pod, decision } => seen.push((pod.name.to_string(), Some(decision.node.to_string()))),
        CycleOutcome::Unschedulable { pod, error, .. } => {
            seen.push((pod.name.to_string(), None));
            messages.push(error.to_string());
        }
        CycleOutcome::BindFailed { pod, .. } => seen.push((pod.name.to_string(), None)),
    };
    sim.run(Until::Idle, &RunOptions::default(), &mut [], &mut [&mut obs]).unwrap();
    (seen, messages)
}

#[test]
fn post_filter_deallocates_a_claim_reserved_for_nobody_and_the_pod_then_schedules() {
    let mut sim = allocated_on_tainted_n1(None);
    let pod = Pod::builder("p").resource_claim("gpu", PodClaimSource::Claim(Sym::new("shared"))).build();
    sim.cluster.create_pod(pod).unwrap();
    let (seen, messages) = drain_with_messages(&mut sim);
    // The first attempt: n1 tainted, the claim not available on n2; PostFilter deallocates it
    // and its update event (during the attempt) sends the pod back; the second attempt
    // allocates n2's GPU.
    assert_eq!(seen, [("p".into(), None), ("p".into(), Some("n2".into()))]);
    assert!(messages[0].contains("deallocation of ResourceClaim completed"), "{}", messages[0]);
    let claim = sim.cache.objects().dra.claim(Sym::new("default"), Sym::new("shared")).cloned().unwrap();
    let a = claim.allocation.as_ref().unwrap();
    assert_eq!((a.results[0].pool.as_str(), claim.reserved_for.len()), ("n2", 1));
}

#[test]
fn post_filter_keeps_a_claim_another_pod_holds() {
    let holder = Pod::builder("holder").build();
    let mut sim = allocated_on_tainted_n1(Some(&holder));
    let pod = Pod::builder("p").resource_claim("gpu", PodClaimSource::Claim(Sym::new("shared"))).build();
    let pod = sim.cluster.create_pod(pod).unwrap();
    let (seen, messages) = drain_with_messages(&mut sim);
    assert_eq!(seen, [("p".into(), None)]);
    assert!(messages[0].contains("still not schedulable"), "{}", messages[0]);
    assert_eq!(sim.queue.location(&pod.uid), Some(QueueLocation::Unschedulable));
    let claim = sim.cache.objects().dra.claim(Sym::new("default"), Sym::new("shared")).cloned().unwrap();
    assert_eq!(claim.allocation.as_ref().unwrap().results[0].pool.as_str(), "n1");
}

#[test]
fn a_pod_naming_a_missing_claim_waits_without_an_attempt_until_it_is_created() {
    let mut sim = gpu_node_without_template(1);
    let pod = Pod::builder("early").resource_claim("gpu", PodClaimSource::Claim(Sym::new("later"))).build();
    let pod = sim.cluster.create_pod(pod).unwrap();
    assert!(drain(&mut sim).is_empty(), "held by DynamicResources' PreEnqueue, never attempted");
    let gated = sim.queue.gated_pods();
    assert_eq!(gated.len(), 1);
    assert_eq!(gated[0].1.message(), "resourceclaim.resource.k8s.io \"later\" not found");
    // Another claim appears: the pod's claim is still missing, it stays.
    let add = |sim: &Simulation, name: &str| {
        let spec =
            ClaimSpec { requests: vec![DeviceRequest::Exactly(ExactRequest::new("gpu", "gpu"))], constraints: vec![] };
        sim.cache.edit_objects(|o| o.dra.upsert_claim(ResourceClaim::new("default", name, spec)));
        let new = sim.cache.objects().dra.claim(Sym::new("default"), Sym::new(name)).cloned();
        sim.cluster.claims_changed(vec![ksched_sim::dra::ClaimChange { old: None, new }]);
    };
    add(&sim, "unrelated");
    assert_eq!(sim.queue.location(&pod.uid), Some(QueueLocation::Unschedulable));
    assert!(drain(&mut sim).is_empty());
    // Its claim is created: the pod passes PreEnqueue and is scheduled at its first attempt.
    add(&sim, "later");
    assert_eq!(sim.queue.location(&pod.uid), Some(QueueLocation::Active));
    assert_eq!(drain(&mut sim), [("early".into(), Some("n1".into()))]);
}
