//! What the scheduler asks of the cluster (the API server's side): binding pods, deleting
//! preemption victims and recording nominations. The in-memory cluster that plays the API
//! server, the kubelets and the informers lives in `ksched-sim`; what it does with VolumeBinding's
//! bindings (`volumes`) is here, where the golden replay, which plays no cluster, applies it
//! too.

pub mod volumes;

use thiserror::Error;

use crate::api::{Pod, PodVolumeBindings, Sym};

#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("binding pod {pod} to node {node}: {why}")]
pub struct BindError {
    pub pod: String,
    pub node: Sym,
    pub why: String,
}

/// A request to the cluster other than binding failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{op} pod {pod}: {why}")]
pub struct ApiError {
    pub op: &'static str,
    pub pod: String,
    pub why: String,
}

/// One claim DynamicResources PreBind writes for a pod.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimBinding {
    pub namespace: Sym,
    pub name: Sym,
    /// The allocation made for the pod (`None`: the claim was already allocated).
    pub allocation: Option<crate::api::dra::AllocationResult>,
}

/// What the scheduler asks of the cluster: the API server in a real cluster; here the
/// in-memory cluster or a fault-injecting one.
pub trait ClusterApi: Send + Sync {
    /// Binds the pod to the node.
    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError>;

    /// Deletes a preemption victim gracefully: it is marked terminating (with the
    /// `DisruptionTarget: PreemptionByScheduler` condition) and keeps its resources until its
    /// termination grace period has passed.
    fn delete_victim(&self, victim: &Pod) -> Result<(), ApiError>;

    /// Sets or clears a pending pod's `status.nominatedNodeName`.
    fn set_nominated_node(&self, pod: &Pod, node: Option<Sym>) -> Result<(), ApiError>;

    /// Writes VolumeBinding's decisions for a pod's unbound claims (upstream's PreBind API
    /// calls: a volume's `claimRef`, a claim's selected node) and waits until the PV controller
    /// and provisioners have bound every claim. A cluster that does not model storage refuses.
    fn bind_volumes(&self, pod: &Pod, bindings: &PodVolumeBindings) -> Result<(), ApiError> {
        let _ = bindings;
        Err(ApiError { op: "bind volumes of", pod: pod.key(), why: "this cluster does not bind volumes".into() })
    }

    /// Writes DynamicResources' PreBind for a pod: each claim gets the pod appended to
    /// `status.reservedFor`, and the ones it allocated their `status.allocation` and the
    /// delete-protection finalizer. A cluster that does not model DRA refuses.
    fn bind_claims(&self, pod: &Pod, claims: &[ClaimBinding]) -> Result<(), ApiError> {
        let _ = claims;
        Err(ApiError {
            op: "reserve claims of",
            pod: pod.key(),
            why: "this cluster does not model resource claims".into(),
        })
    }

    /// DynamicResources PostFilter's write for a pod no node fits: `claim` (as the scheduler
    /// last saw it) loses its allocation and reservations, so that its devices can be picked
    /// again. Refused (upstream's conflict) when the stored claim is no longer `claim`. A
    /// cluster that does not model DRA refuses.
    fn deallocate_claim(&self, pod: &Pod, claim: &crate::api::dra::ResourceClaim) -> Result<(), ApiError> {
        Err(ApiError {
            op: "deallocate a claim for",
            pod: pod.key(),
            why: format!("{}: this cluster does not model resource claims", claim.key()),
        })
    }

    /// Whether the pod still exists and is not bound (upstream asks its informer's pod lister
    /// before returning a failed pod to the queue). A pod deleted or bound while its attempt
    /// was failing is not queued again. The default, for clusters that do not track pending
    /// pods, says yes.
    fn is_pending(&self, _pod: &Pod) -> bool {
        true
    }
}
