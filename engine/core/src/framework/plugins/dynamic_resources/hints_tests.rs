//! DynamicResources' registrations and queueing hints: one row per event and parked pod,
//! whether the pod goes back to the queue (through the profile's hint lookup, so an event the
//! plugin did not register for never moves the pod).

use std::sync::Arc;

use super::NAME;
use crate::api::dra::{AllocationResult, ClaimSpec, ConsumerRef, PodClaimSource, PodClaimStatus, ResourceClaim};
use crate::api::{Node, Pod, Sym, Taint, TaintEffect};
use crate::framework::events::{ActionType, Event, EventResource, QueueingHints};
use crate::framework::Profile;

fn claim(name: &str) -> ResourceClaim {
    ResourceClaim::new("default", name, ClaimSpec::default())
}

fn allocated(mut c: ResourceClaim) -> ResourceClaim {
    c.allocation = Some(AllocationResult { results: Vec::new(), node_selector: None });
    c
}

fn reserved_for(mut c: ResourceClaim, pod: &Pod) -> ResourceClaim {
    c.reserved_for.push(ConsumerRef::pod(pod));
    c
}

fn owned_by(mut c: ResourceClaim, pod: &Pod) -> ResourceClaim {
    c.owner_pod = Some(Sym::new(pod.uid.as_str()));
    c
}

fn update(old: ResourceClaim, new: ResourceClaim) -> Event {
    Event::resource_claim(Some(Arc::new(old)), Some(Arc::new(new)))
}

fn add(c: ResourceClaim) -> Event {
    Event::resource_claim(None, Some(Arc::new(c)))
}

#[test]
fn dynamic_resources_hints_queue_only_what_can_help() {
    let hints = QueueingHints::from_profile(&Profile::default_profile());
    // A pod naming claim `c1`; a pod whose template claim the controller has not made yet; the
    // same pod once it has (its claim `t-gpu-x`); another pod.
    let named = Pod::builder("named").resource_claim("gpu", PodClaimSource::Claim(Sym::new("c1"))).build();
    let waiting = Pod::builder("tmpl").resource_claim("gpu", PodClaimSource::Template(Sym::new("two-gpus"))).build();
    let made = waiting
        .with_resource_claim_statuses(vec![PodClaimStatus { name: Sym::new("gpu"), claim: Some(Sym::new("t-gpu-x")) }]);
    let other = Pod::builder("other").build();
    let relabelled = {
        let mut c = allocated(claim("c1"));
        c.labels.push((Sym::new("team"), Sym::new("a")));
        c
    };
    let elsewhere = ResourceClaim::new("other-ns", "c1", ClaimSpec::default());
    let node = || Node::builder("n2").resources(1000, 1 << 30, 10);
    let taint = Taint::new("k", "v", TaintEffect::NoSchedule);

    // (what, parked pod, event, moves)
    let rows: Vec<(&str, &Pod, Event, bool)> = vec![
        // ResourceClaim add / update.
        ("its claim is created", &named, add(claim("c1")), true),
        ("another claim is created", &named, add(claim("c2")), false),
        ("a claim of the same name in another namespace", &named, add(elsewhere), false),
        ("its claim gets allocated", &named, update(claim("c1"), allocated(claim("c1"))), true),
        (
            "its claim gets reserved",
            &named,
            update(allocated(claim("c1")), reserved_for(allocated(claim("c1")), &other)),
            true,
        ),
        ("its claim changes outside its status", &named, update(allocated(claim("c1")), relabelled), false),
        ("another claim is deallocated: devices free", &named, update(allocated(claim("c2")), claim("c2")), true),
        (
            "another claim loses one of two reservations but stays allocated",
            &named,
            update(
                reserved_for(reserved_for(allocated(claim("c2")), &other), &named),
                reserved_for(allocated(claim("c2")), &other),
            ),
            false,
        ),
        ("another claim is allocated", &named, update(claim("c2"), allocated(claim("c2"))), false),
        (
            "a deallocation, but the pod's template claim is not made yet",
            &waiting,
            update(allocated(claim("c2")), claim("c2")),
            false,
        ),
        ("its template claim is created", &made, add(owned_by(claim("t-gpu-x"), &made)), true),
        ("a claim of its name, not made for it", &made, add(owned_by(claim("t-gpu-x"), &other)), false),
        (
            "a deallocation of a claim of its name, not made for it",
            &made,
            update(allocated(owned_by(claim("t-gpu-x"), &other)), owned_by(claim("t-gpu-x"), &other)),
            false,
        ),
        ("claim deletes are not registered", &named, Event::resource_claim(Some(Arc::new(claim("c1"))), None), false),
        // The pod's own generated claims.
        (
            "its template claim is recorded in its status",
            &waiting,
            Event::unscheduled_pod_update(&waiting, &made),
            true,
        ),
        ("another pod's generated claims", &other, Event::unscheduled_pod_update(&waiting, &made), false),
        (
            "a pod update that leaves its claim statuses",
            &waiting,
            Event::unscheduled_pod_update(&waiting, &waiting.with_resource_claim_statuses(Vec::new())),
            false,
        ),
        // Slices and classes: always worth a retry when added or updated.
        ("a slice is added", &named, Event::storage(EventResource::ResourceSlice, ActionType::ADD, "s"), true),
        (
            "a slice is updated",
            &named,
            Event::storage(EventResource::ResourceSlice, ActionType::UPDATE_OTHER, "s"),
            true,
        ),
        ("a slice is deleted", &named, Event::storage(EventResource::ResourceSlice, ActionType::DELETE, "s"), false),
        ("a class is added", &named, Event::storage(EventResource::DeviceClass, ActionType::ADD, "gpu"), true),
        (
            "a class is updated",
            &named,
            Event::storage(EventResource::DeviceClass, ActionType::UPDATE_OTHER, "gpu"),
            true,
        ),
        // Nodes: added, relabelled or grown; not tainted.
        ("a node is added", &named, Event::node_add(&node().build()), true),
        (
            "a node is relabelled",
            &named,
            Event::node_update(&node().build(), &node().label("a", "b").build()).unwrap(),
            true,
        ),
        (
            "a node is tainted",
            &named,
            Event::node_update(&node().build(), &node().taint(taint).build()).unwrap(),
            false,
        ),
        // Pods: a bound pod's deletion frees devices through its claims' updates, not itself.
        ("a bound pod is deleted", &named, Event::assigned_pod_delete(&other.with_node(Sym::new("n1"))), false),
        (
            "PVC events are not DynamicResources'",
            &named,
            Event::storage(EventResource::PersistentVolumeClaim, ActionType::ADD, "c1"),
            false,
        ),
    ];
    for (what, pod, event, want) in rows {
        assert_eq!(
            hints.worth_requeuing(pod, &[NAME], &event, crate::framework::ClusterView::NONE),
            want,
            "{what}: {:?}",
            event.kind
        );
    }
}

#[test]
fn pod_claim_status_change_is_its_own_action() {
    let waiting = Pod::builder("tmpl").resource_claim("gpu", PodClaimSource::Template(Sym::new("t"))).build();
    let made = waiting.with_resource_claim_statuses(vec![PodClaimStatus { name: Sym::new("gpu"), claim: None }]);
    let e = Event::unscheduled_pod_update(&waiting, &made);
    assert_eq!(e.kind.action, ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM);
    assert!(ActionType::UPDATE.intersects(ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM));
    assert!(!ActionType::UPDATE.intersects(ActionType::ADD | ActionType::DELETE));
}

/// With the cluster seen, a hint also waits while another of the pod's claims cannot be had
/// (upstream's hints run the PreEnqueue check against the listers first).
#[test]
fn dynamic_resources_hints_read_the_cluster() {
    use crate::api::dra::DraObjects;
    use crate::framework::ClusterView;
    use crate::snapshot::ClusterObjects;
    let hints = QueueingHints::from_profile(&Profile::default_profile());
    let two = Pod::builder("two")
        .resource_claim("a", PodClaimSource::Claim(Sym::new("c1")))
        .resource_claim("b", PodClaimSource::Claim(Sym::new("c2")))
        .build();
    let cluster = |claims: Vec<ResourceClaim>| {
        let mut dra = DraObjects::default();
        for c in claims {
            dra.upsert_claim(c);
        }
        ClusterObjects { dra, ..ClusterObjects::default() }
    };
    let deleting = {
        let mut c = claim("c2");
        c.deleting = true;
        c
    };
    // (what, the cluster after the event, event, moves with the cluster seen, moves without)
    let rows: Vec<(&str, ClusterObjects, Event, bool, bool)> = vec![
        ("c1 created, c2 still missing", cluster(vec![claim("c1")]), add(claim("c1")), false, true),
        ("c1 created, c2 there", cluster(vec![claim("c1"), claim("c2")]), add(claim("c1")), true, true),
        ("c1 created, c2 being deleted", cluster(vec![claim("c1"), deleting]), add(claim("c1")), false, true),
        (
            "another claim deallocated, c2 missing",
            cluster(vec![claim("c1"), claim("c3")]),
            update(allocated(claim("c3")), claim("c3")),
            false,
            true,
        ),
        (
            "another claim deallocated, both there",
            cluster(vec![claim("c1"), claim("c2"), claim("c3")]),
            update(allocated(claim("c3")), claim("c3")),
            true,
            true,
        ),
    ];
    for (what, objects, event, seen, blind) in rows {
        let got = (
            hints.worth_requeuing(&two, &[NAME], &event, ClusterView::new(&objects)),
            hints.worth_requeuing(&two, &[NAME], &event, ClusterView::NONE),
        );
        assert_eq!(got, (seen, blind), "{what}");
    }
    // The pod's own update recording its template claim: retried only once that claim exists.
    let waiting = Pod::builder("tmpl").resource_claim("gpu", PodClaimSource::Template(Sym::new("t"))).build();
    let made = waiting
        .with_resource_claim_statuses(vec![PodClaimStatus { name: Sym::new("gpu"), claim: Some(Sym::new("t-gpu-x")) }]);
    let update = Event::unscheduled_pod_update(&waiting, &made);
    let empty = cluster(vec![]);
    assert!(!hints.worth_requeuing(&waiting, &[NAME], &update, ClusterView::new(&empty)));
    let there = cluster(vec![owned_by(claim("t-gpu-x"), &made)]);
    assert!(hints.worth_requeuing(&waiting, &[NAME], &update, ClusterView::new(&there)));
}
