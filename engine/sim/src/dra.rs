//! The resourceclaim controller's part, as a stand-in: claims for pods' template entries,
//! DynamicResources PreBind's writes, and what happens to claims when a pod goes.
//!
//! - A pod is created: for each `spec.resourceClaims` entry naming a template, a claim is made
//!   in the pod's namespace, named as upstream names it (`upstream_generate_name`: `<pod>-<entry>-`,
//!   both cut in proportion beyond 57 characters, then 5 characters of the API server's
//!   alphabet), owned by the pod, with the template's labels, annotations and spec; the pod
//!   carries `status.resourceClaimStatuses`. The suffix is drawn from the cluster's name RNG,
//!   seeded by the run's `--seed` (the API server draws it at random), so a run's names are
//!   the same for the same seed and input. A missing template makes no claim: the pod waits
//!   (in DynamicResources' PreEnqueue) until the template is added
//!   (`InMemoryCluster::claim_templates_added`).
//! - PreBind: each claim gets the pod in `reservedFor`; those the scheduler allocated get
//!   their allocation.
//! - A pod goes: it leaves its claims' `reservedFor`; a claim reserved for nobody is
//!   deallocated (structured parameters need no driver); a claim made for the pod is deleted.

use ksched_engine::api::dra::{
    random_suffix, upstream_generate_name, ConsumerRef, PodClaimSource, PodClaimStatus, ResourceClaim,
    POD_CLAIM_NAME_ANNOTATION,
};
use std::sync::Arc;

use ksched_engine::api::{Pod, Sym};
use ksched_engine::cluster::ClaimBinding;
use ksched_engine::snapshot::ClusterObjects;
use ksched_engine::util::rng::Rng;

/// A claim as it was and as it is now (`old` absent: created; `new` absent: deleted): what
/// the claim informer would tell the scheduler's queue.
#[derive(Clone, Debug)]
pub struct ClaimChange {
    pub old: Option<Arc<ResourceClaim>>,
    pub new: Option<Arc<ResourceClaim>>,
}

/// Stores `claim` and returns the change from what was there.
fn store(objects: &mut ClusterObjects, claim: ResourceClaim) -> ClaimChange {
    let (namespace, name) = (claim.namespace, claim.name);
    let old = objects.dra.claim(namespace, name).cloned();
    objects.dra.upsert_claim(claim);
    ClaimChange { old, new: objects.dra.claim(namespace, name).cloned() }
}

/// Whether `pod` has a template entry without its claim whose template exists (what
/// `make_pod_claims` would make a claim for).
pub fn can_make_claims(objects: &ClusterObjects, pod: &Pod) -> bool {
    pod.resource_claims.iter().any(|e| match e.source {
        PodClaimSource::Template(t) => {
            !pod.resource_claim_statuses.iter().any(|s| s.name == e.name)
                && objects.dra.template(pod.namespace, t).is_some()
        }
        PodClaimSource::Claim(_) => false,
    })
}

/// Makes the claims of `pod`'s template entries that have none yet: the pod with its
/// `resourceClaimStatuses` (the pod itself when nothing was made), and the claims made.
pub fn make_pod_claims(objects: &mut ClusterObjects, pod: &Pod, names: &mut Rng) -> (Pod, Vec<ClaimChange>) {
    let mut statuses = pod.resource_claim_statuses.clone();
    let mut made = Vec::new();
    for entry in &pod.resource_claims {
        let PodClaimSource::Template(t) = entry.source else { continue };
        if statuses.iter().any(|s| s.name == entry.name) {
            continue;
        }
        let Some(template) = objects.dra.template(pod.namespace, t).cloned() else { continue };
        // The API server refuses a generated name that exists; the controller tries again.
        let base = upstream_generate_name(&pod.name, entry.name.as_str());
        let name = loop {
            let name = format!("{base}{}", random_suffix(names));
            if objects.dra.claim(pod.namespace, Sym::new(&name)).is_none() {
                break name;
            }
        };
        let mut claim = ResourceClaim::new(pod.namespace.as_str(), &name, Default::default());
        claim.spec = template.spec.clone();
        claim.owner_pod = Some(Sym::new(pod.uid.as_str()));
        claim.labels = template.labels.clone();
        claim.annotations = template.annotations.clone();
        claim.annotations.push((Sym::new(POD_CLAIM_NAME_ANNOTATION), entry.name));
        statuses.push(PodClaimStatus { name: entry.name, claim: Some(claim.name) });
        made.push(store(objects, claim));
    }
    if made.is_empty() {
        (pod.clone(), made)
    } else {
        (pod.with_resource_claim_statuses(statuses), made)
    }
}

/// DynamicResources PreBind's writes for `pod`; the claims changed.
pub fn bind_claims(
    objects: &mut ClusterObjects,
    pod: &Pod,
    claims: &[ClaimBinding],
) -> Result<Vec<ClaimChange>, String> {
    let mut changes = Vec::with_capacity(claims.len());
    for b in claims {
        let Some(claim) = objects.dra.claim(b.namespace, b.name) else {
            return Err(format!("resourceclaim {}/{} not found", b.namespace, b.name));
        };
        let mut claim = (**claim).clone();
        if let Some(a) = &b.allocation {
            if claim.allocation.is_some() {
                return Err(format!("resourceclaim {}/{} is already allocated", b.namespace, b.name));
            }
            claim.allocation = Some(a.clone());
        }
        if !claim.is_reserved_for(pod.uid.as_str()) {
            claim.reserved_for.push(ConsumerRef::pod(pod));
        }
        changes.push(store(objects, claim));
    }
    Ok(changes)
}

/// DynamicResources PostFilter's write (`ClusterApi::deallocate_claim`): the claim as the
/// scheduler saw it loses its allocation and reservations; refused, as the API server's
/// conflict, when the stored claim changed since (or is gone).
pub fn deallocate_claim(objects: &mut ClusterObjects, seen: &ResourceClaim) -> Result<ClaimChange, String> {
    let key = || format!("{}/{}", seen.namespace, seen.name);
    let Some(claim) = objects.dra.claim(seen.namespace, seen.name) else {
        return Err(format!("resourceclaim {} not found", key()));
    };
    if **claim != *seen {
        return Err(format!(
            "Operation cannot be fulfilled on resourceclaims.resource.k8s.io {:?}: the object has been modified",
            seen.name.as_str()
        ));
    }
    let mut claim = (**claim).clone();
    claim.allocation = None;
    claim.reserved_for.clear();
    Ok(store(objects, claim))
}

/// `pod` is gone: its reservations go, unreserved claims are deallocated, claims made for it
/// are deleted (after their reservation went, as upstream's controller does it). Returns the
/// changes in order.
pub fn release_pod_claims(objects: &mut ClusterObjects, pod: &Pod) -> Vec<ClaimChange> {
    let mut changes = Vec::new();
    for entry in &pod.resource_claims {
        let ksched_engine::api::dra::ClaimName::Named(name, _) = pod.claim_name(entry) else { continue };
        let Some(claim) = objects.dra.claim(pod.namespace, name) else { continue };
        let owned = claim.owner_pod.is_some_and(|o| o.as_str() == pod.uid.as_str());
        if claim.is_reserved_for(pod.uid.as_str()) {
            let mut claim = (**claim).clone();
            claim.reserved_for.retain(|r| r.uid.as_str() != pod.uid.as_str());
            if claim.reserved_for.is_empty() {
                claim.allocation = None;
            }
            changes.push(store(objects, claim));
        }
        if owned {
            let old = objects.dra.remove_claim(pod.namespace, name);
            changes.push(ClaimChange { old, new: None });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksched_engine::api::dra::{ClaimSpec, ResourceClaimTemplate};

    #[test]
    fn deallocation_clears_the_claim_as_seen_and_refuses_a_stale_one() {
        let mut o = ClusterObjects::default();
        let mut claim = ResourceClaim::new("default", "c", ClaimSpec::default());
        claim.allocation = Some(ksched_engine::api::dra::AllocationResult { results: Vec::new(), node_selector: None });
        let pod = Pod::builder("p").build();
        claim.reserved_for.push(ConsumerRef::pod(&pod));
        o.dra.upsert_claim(claim.clone());
        let mut stale = claim.clone();
        stale.reserved_for.clear();
        let err = deallocate_claim(&mut o, &stale).unwrap_err();
        assert!(err.contains("the object has been modified"), "{err}");
        let change = deallocate_claim(&mut o, &claim).unwrap();
        let now = change.new.unwrap();
        assert!(now.allocation.is_none() && now.reserved_for.is_empty());
        assert!(change.old.unwrap().allocation.is_some());
        assert!(deallocate_claim(&mut o, &ResourceClaim::new("default", "gone", ClaimSpec::default()))
            .unwrap_err()
            .contains("not found"));
    }

    #[test]
    fn claims_follow_their_pods() {
        let mut o = ClusterObjects::default();
        o.dra.upsert_template(ResourceClaimTemplate {
            namespace: Sym::new("default"),
            name: Sym::new("t"),
            labels: Vec::new(),
            annotations: Vec::new(),
            spec: Arc::new(ClaimSpec::default()),
        });
        o.dra.upsert_claim(ResourceClaim::new("default", "shared", ClaimSpec::default()));
        let pod = Pod::builder("web-0")
            .resource_claim("gpu", PodClaimSource::Template(Sym::new("t")))
            .resource_claim("link", PodClaimSource::Claim(Sym::new("shared")))
            .build();
        let before = o.clone();
        let mut names = Rng::seed(1);
        let (pod, made_changes) = make_pod_claims(&mut o, &pod, &mut names);
        assert!(made_changes.len() == 1 && made_changes[0].old.is_none(), "one claim created");
        let made = pod.resource_claim_statuses[0].claim.unwrap();
        assert!(made.as_str().starts_with("web-0-gpu-") && made.as_str().len() == "web-0-gpu-".len() + 5, "{made}");
        assert!(o.dra.claim(Sym::new("default"), made).is_some());
        // The suffix comes from the seed: the same seed names the claim the same, another
        // seed (almost surely) not; a name already taken is drawn again.
        let name_with = |seed: u64| {
            let mut o = before.clone();
            let fresh = Pod::builder("web-0").resource_claim("gpu", PodClaimSource::Template(Sym::new("t"))).build();
            make_pod_claims(&mut o, &fresh, &mut Rng::seed(seed)).0.resource_claim_statuses[0].claim.unwrap()
        };
        assert_eq!(name_with(1), made);
        assert_eq!(name_with(7), name_with(7));
        assert_ne!(name_with(7), name_with(8));
        let fresh = Pod::builder("web-0").resource_claim("gpu", PodClaimSource::Template(Sym::new("t"))).build();
        let again = make_pod_claims(&mut o.clone(), &fresh, &mut Rng::seed(1)).0.resource_claim_statuses[0].claim;
        assert_ne!(again, Some(made), "a taken name is not reused");
        // The same pod again makes nothing new.
        let (same, none) = make_pod_claims(&mut o, &pod, &mut names);
        assert!(same.resource_claim_statuses.len() == 1 && none.is_empty());
        let bindings = [
            ClaimBinding { namespace: Sym::new("default"), name: made, allocation: None },
            ClaimBinding { namespace: Sym::new("default"), name: Sym::new("shared"), allocation: None },
        ];
        bind_claims(&mut o, &pod, &bindings).unwrap();
        assert!(o.dra.claim(Sym::new("default"), Sym::new("shared")).unwrap().is_reserved_for(pod.uid.as_str()));
        let changed = release_pod_claims(&mut o, &pod);
        // The template claim: its reservation goes, then the claim; the shared one: its
        // reservation goes.
        let kinds: Vec<(Option<Sym>, Option<Sym>)> =
            changed.iter().map(|c| (c.old.as_ref().map(|x| x.name), c.new.as_ref().map(|x| x.name))).collect();
        let shared_name = Sym::new("shared");
        assert_eq!(kinds, [(Some(made), Some(made)), (Some(made), None), (Some(shared_name), Some(shared_name))]);
        assert!(changed[0].new.as_ref().unwrap().reserved_for.is_empty());
        assert!(o.dra.claim(Sym::new("default"), made).is_none(), "the template claim goes with its pod");
        let shared = o.dra.claim(Sym::new("default"), Sym::new("shared")).unwrap();
        assert!(shared.reserved_for.is_empty() && shared.allocation.is_none());
    }
}
