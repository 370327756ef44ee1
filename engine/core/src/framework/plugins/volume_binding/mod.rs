//! VolumeBinding: rejects nodes where the pod's PersistentVolumeClaims cannot be used — a
//! bound claim's volume excludes the node, or an unbound WaitForFirstConsumer claim finds no
//! volume there and cannot be provisioned there — and, once a node is chosen, binds the claims
//! (Reserve assumes the bindings, PreBind asks the cluster to write them).
//!
//! PreFilter rejects a pod whose claim is missing, lost or being deleted, or that uses an
//! unbound Immediate claim (the PV controller binds those, not the scheduler). Everything that
//! does not depend on the node — which claims are bound, each unbound claim's candidate volumes
//! (class, access modes, capacity, volume mode, selector, phase) sorted smallest first, each
//! class's provisioning rules — is worked out there once, so Filter only matches node labels
//! and allocates nothing.
//!
//! The assume cache holds the bindings of pods reserved but not yet pre-bound: a volume
//! assumed for a claim is taken for every other claim, and a claim assumed for provisioning
//! belongs to its node. PreBind hands the bindings to the cluster (`ClusterApi::bind_volumes`,
//! which the simulation's PV controller completes at once) and then drops them; Unreserve
//! drops them too.
//!
//! Score is upstream's only with the StorageCapacityScoring feature gate (alpha, off in
//! v1.35), so it is not run; `shape` is refused as upstream refuses it with the gate off.

use serde::Deserialize;
use smallvec::SmallVec;

use super::super::{
    ArgsError, Code, CycleState, Plugin, PreBindPlugin, PreFilterPlugin, Reason, ReservePlugin, Status,
};
use crate::api::storage::pvc_not_found;
use crate::api::{
    LabelSelector, Labels, PersistentVolumeClaim, Pod, PodVolumeBindings, Sym, TopologySelectorTerm, VolumeBindingMode,
    VolumeSource,
};
use crate::cluster::ClusterApi;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;
use crate::sync::{lock, Mutex};
use crate::util::hash::FxHashMap;

#[cfg(test)]
mod tests;

pub const NAME: &str = "VolumeBinding";

pub const ERR_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
pub const ERR_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
pub const ERR_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
pub const ERR_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
pub const ERR_PV_NOT_EXIST: &str = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

/// `VolumeBindingArgs`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeBindingArgs {
    /// How long PreBind waits for the PV controller (600 s). The simulation's PV controller
    /// binds at once, so the timeout never runs out.
    #[serde(default = "default_bind_timeout")]
    pub bind_timeout_seconds: i64,
    /// The StorageCapacityScoring score shape; refused (the gate is off).
    #[serde(default)]
    pub shape: Option<serde_json::Value>,
}

fn default_bind_timeout() -> i64 {
    600
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        VolumeBindingArgs { bind_timeout_seconds: default_bind_timeout(), shape: None }
    }
}

impl VolumeBindingArgs {
    /// Upstream's validation with the StorageCapacityScoring gate off.
    pub fn validate(&self) -> Result<(), ArgsError> {
        if self.bind_timeout_seconds < 0 {
            return Err(ArgsError::new(
                "bindTimeoutSeconds",
                format!(
                    "Invalid value: {}: invalid BindTimeoutSeconds, should not be a negative value",
                    self.bind_timeout_seconds
                ),
            ));
        }
        if self.shape.as_ref().is_some_and(|s| !s.is_null()) {
            return Err(ArgsError::new(
                "shape",
                "Invalid value: unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
            ));
        }
        Ok(())
    }
}

/// Bindings assumed at Reserve and not yet written by PreBind.
#[derive(Debug, Default)]
struct AssumeCache {
    /// Volume → the claim (namespace, name, uid) it is assumed bound to.
    pvs: FxHashMap<Sym, (Sym, Sym, Sym)>,
    /// Claim (namespace, name) → the node it is assumed provisioned on.
    claims: FxHashMap<(Sym, Sym), Sym>,
}

#[derive(Debug)]
pub struct VolumeBinding {
    pub bind_timeout_seconds: i64,
    assumed: Mutex<AssumeCache>,
}

impl VolumeBinding {
    pub fn new(args: &VolumeBindingArgs) -> VolumeBinding {
        VolumeBinding { bind_timeout_seconds: args.bind_timeout_seconds, assumed: Mutex::new(AssumeCache::default()) }
    }

    /// How many volumes and claims are assumed and not yet written (tests and tools).
    pub fn num_assumed(&self) -> usize {
        let a = lock(&self.assumed);
        a.pvs.len() + a.claims.len()
    }
}

impl Default for VolumeBinding {
    fn default() -> Self {
        VolumeBinding::new(&VolumeBindingArgs::default())
    }
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(VOLUMES => volumes);
}

/// A candidate volume of an unbound claim: what Filter still has to check on a node.
#[derive(Clone, Debug)]
struct Candidate {
    name: Sym,
    capacity: i64,
    affinity: Option<crate::api::NodeSelector>,
}

impl Candidate {
    #[inline]
    fn allows(&self, labels: &Labels) -> bool {
        self.affinity.as_ref().is_none_or(|a| a.matches(labels, Sym::EMPTY))
    }
}

/// How an unbound claim's class provisions volumes, as far as the node does not matter.
#[derive(Clone, Debug)]
enum Provisioning {
    /// The claim names no class, or its class is gone: an error at Filter.
    Error(Sym),
    /// No provisioner (or `kubernetes.io/no-provisioner`).
    NotSupported,
    Supported {
        allowed_topologies: Vec<TopologySelectorTerm>,
        /// `None`: no capacity check (no request, or the driver does not track capacity).
        /// Otherwise the node topologies of the CSIStorageCapacities of the class that can
        /// hold the request (`None` topology selects no node).
        capacities: Option<Vec<Option<LabelSelector>>>,
    },
}

#[derive(Clone, Debug)]
struct UnboundClaim {
    namespace: Sym,
    name: Sym,
    uid: Sym,
    /// The node a previous attempt chose for provisioning (annotation or assumed).
    selected_node: Sym,
    /// A volume pre-bound to this claim (its `claimRef`), which wins whenever it can be used.
    prebound: Option<Candidate>,
    /// Available volumes fitting the claim, smallest first (then by name).
    candidates: Vec<Candidate>,
    provisioning: Provisioning,
}

/// What PreFilter found, for Filter, Reserve and PreBind.
#[derive(Clone, Debug)]
struct PreFilterState {
    /// The node affinity of each bound claim's volume; `None` when the volume is missing.
    bound: Vec<Option<Option<crate::api::NodeSelector>>>,
    unbound: Vec<UnboundClaim>,
    snapshot: Snapshot,
}

/// What Reserve assumed, for PreBind and Unreserve.
#[derive(Clone, Debug)]
struct Reserved(PodVolumeBindings);

const NODE_CONFLICT: u8 = 1;
const BIND_CONFLICT: u8 = 2;
const NOT_ENOUGH_SPACE: u8 = 4;
const PV_NOT_EXIST: u8 = 8;

fn unresolvable(text: &str) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, Reason::Text(Sym::new(text)))
}

/// The claim a volume uses, and whether it is a generic ephemeral volume's.
#[inline]
fn claim_of(source: &VolumeSource) -> Option<(Sym, bool)> {
    match *source {
        VolumeSource::PersistentVolumeClaim { claim_name, .. } => Some((claim_name, false)),
        VolumeSource::Ephemeral { claim_name } => Some((claim_name, true)),
        _ => None,
    }
}

impl VolumeBinding {
    /// The unbound claim's candidates and provisioning, with the assumed bindings applied.
    fn unbound_claim(&self, claim: &PersistentVolumeClaim, snapshot: &Snapshot, assumed: &AssumeCache) -> UnboundClaim {
        let storage = &snapshot.objects().storage;
        let request = claim.request.unwrap_or(0);
        let mut prebound = None;
        let mut candidates = Vec::new();
        for pv in storage.pvs_of_class(claim.storage_class) {
            let claim_ref = match assumed.pvs.get(&pv.name) {
                Some(&(namespace, name, uid)) => Some(crate::api::ClaimRef { namespace, name, uid }),
                None => pv.claim_ref,
            };
            let for_this = claim_ref.is_some_and(|r| {
                r.namespace == claim.namespace && r.name == claim.name && (r.uid.is_empty() || r.uid == claim.uid)
            });
            if (claim_ref.is_some() && !for_this) || pv.capacity < request || pv.block != claim.block || pv.deleting {
                continue;
            }
            let c = Candidate { name: pv.name, capacity: pv.capacity, affinity: pv.node_affinity.clone() };
            if for_this {
                prebound = Some(c);
                break;
            }
            let selected = claim.selector.as_ref().is_none_or(|s| s.matches(&pv.labels));
            if pv.phase == crate::api::VolumePhase::Available && selected && pv.offers_access_modes(claim) {
                candidates.push(c);
            }
        }
        candidates.sort_by(|a, b| a.capacity.cmp(&b.capacity).then_with(|| a.name.as_str().cmp(b.name.as_str())));
        let provisioning = match storage.storage_class(claim.storage_class) {
            _ if claim.storage_class.is_empty() => {
                Provisioning::Error(Sym::new(&format!("no class for claim \"{}/{}\"", claim.namespace, claim.name)))
            }
            None => Provisioning::Error(Sym::new(&format!(
                "failed to find storage class {:?}",
                claim.storage_class.as_str()
            ))),
            Some(class) if !class.provisions() => Provisioning::NotSupported,
            Some(class) => {
                let tracked = storage.csi_driver(class.provisioner).is_some_and(|d| d.storage_capacity);
                let capacities = match claim.request {
                    Some(size) if tracked => Some(
                        storage
                            .capacities()
                            .iter()
                            .filter(|c| c.storage_class == class.name && c.volume_limit().is_some_and(|l| l >= size))
                            .map(|c| c.node_topology.clone())
                            .collect(),
                    ),
                    _ => None,
                };
                Provisioning::Supported { allowed_topologies: class.allowed_topologies.clone(), capacities }
            }
        };
        let selected_node = assumed.claims.get(&(claim.namespace, claim.name)).copied().unwrap_or(claim.selected_node);
        UnboundClaim {
            namespace: claim.namespace,
            name: claim.name,
            uid: claim.uid,
            selected_node,
            prebound,
            candidates,
            provisioning,
        }
    }
}

/// Upstream's FindPodVolumes on one node: the reasons the node does not fit (bits), and when
/// `plan` is given, the bindings that make it fit. `Err` for a claim whose class is missing.
fn find_pod_volumes(
    s: &PreFilterState,
    labels: &Labels,
    node: Sym,
    mut plan: Option<&mut PodVolumeBindings>,
) -> Result<u8, Sym> {
    let mut reasons = 0;
    for affinity in &s.bound {
        match affinity {
            None => {
                reasons |= PV_NOT_EXIST;
                break;
            }
            Some(a) if !a.as_ref().is_none_or(|a| a.matches(labels, Sym::EMPTY)) => {
                reasons |= NODE_CONFLICT;
                break;
            }
            Some(_) => {}
        }
    }
    if s.unbound.is_empty() {
        return Ok(reasons);
    }
    if s.unbound.iter().any(|c| !c.selected_node.is_empty() && c.selected_node != node) {
        return Ok(reasons | BIND_CONFLICT);
    }
    // Static binding, claim by claim; a volume chosen for one claim is not offered to the next.
    let mut chosen: SmallVec<[Sym; 4]> = SmallVec::new();
    let mut to_provision: SmallVec<[&UnboundClaim; 4]> =
        s.unbound.iter().filter(|c| !c.selected_node.is_empty()).collect();
    let mut all_matched = true;
    for c in s.unbound.iter().filter(|c| c.selected_node.is_empty()) {
        let found = match &c.prebound {
            Some(p) if !chosen.contains(&p.name) => p.allows(labels).then_some(p),
            _ => c.candidates.iter().find(|v| !chosen.contains(&v.name) && v.allows(labels)),
        };
        match found {
            Some(v) => {
                chosen.push(v.name);
                if let Some(plan) = plan.as_deref_mut() {
                    plan.static_bindings.push((c.namespace, c.name, v.name));
                }
            }
            None => {
                all_matched = false;
                to_provision.push(c);
            }
        }
    }
    if to_provision.is_empty() {
        return Ok(if all_matched { reasons } else { reasons | BIND_CONFLICT });
    }
    for c in to_provision {
        match &c.provisioning {
            Provisioning::Error(e) => return Err(*e),
            Provisioning::NotSupported => return Ok(reasons | BIND_CONFLICT),
            Provisioning::Supported { allowed_topologies, capacities } => {
                if !allowed_topologies.is_empty() && !allowed_topologies.iter().any(|t| t.matches(labels)) {
                    return Ok(reasons | BIND_CONFLICT);
                }
                if let Some(caps) = capacities {
                    if !caps.iter().any(|t| t.as_ref().is_some_and(|t| t.matches(labels))) {
                        return Ok(reasons | NOT_ENOUGH_SPACE);
                    }
                }
                if let Some(plan) = plan.as_deref_mut() {
                    plan.provisions.push((c.namespace, c.name));
                }
            }
        }
    }
    Ok(reasons)
}

impl PreFilterPlugin for VolumeBinding {
    fn pre_filter(&self, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Status {
        if !pod.volumes.iter().any(|v| claim_of(&v.source).is_some()) {
            return Status::skip();
        }
        let storage = &snapshot.objects().storage;
        let mut claims: SmallVec<[&PersistentVolumeClaim; 4]> = SmallVec::new();
        for v in &pod.volumes {
            let Some((name, ephemeral)) = claim_of(&v.source) else { continue };
            let Some(claim) = storage.pvc(pod.namespace, name) else {
                if ephemeral {
                    return unresolvable(&format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim {:?}",
                        name.as_str()
                    ));
                }
                return unresolvable(&pvc_not_found(name));
            };
            if claim.lost {
                return unresolvable(&format!(
                    "persistentvolumeclaim {:?} bound to non-existent persistentvolume {:?}",
                    name.as_str(),
                    claim.volume_name.as_str()
                ));
            }
            if claim.deleting {
                return unresolvable(&format!("persistentvolumeclaim {:?} is being deleted", name.as_str()));
            }
            claims.push(claim);
        }
        let assumed = lock(&self.assumed);
        let mut bound = Vec::new();
        let mut unbound = Vec::new();
        for claim in claims {
            if claim.is_fully_bound() {
                bound.push(storage.pv(claim.volume_name).map(|pv| pv.node_affinity.clone()));
                continue;
            }
            let delayed = storage
                .storage_class(claim.storage_class)
                .is_some_and(|c| c.volume_binding_mode == VolumeBindingMode::WaitForFirstConsumer);
            if !delayed || !claim.volume_name.is_empty() {
                return Status::new(Code::UnschedulableAndUnresolvable, Reason::Static(ERR_UNBOUND_IMMEDIATE));
            }
            unbound.push(self.unbound_claim(claim, snapshot, &assumed));
        }
        drop(assumed);
        state.write(PreFilterState { bound, unbound, snapshot: snapshot.clone() });
        Status::success()
    }
}

impl super::super::FilterPlugin for VolumeBinding {
    fn filter(&self, state: &CycleState, _pod: &Pod, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::success();
        };
        match find_pod_volumes(s, &node.node().labels, node.name(), None) {
            Err(e) => Status::error(e.as_str()),
            Ok(0) => Status::success(),
            Ok(bits) => {
                let mut reasons = SmallVec::new();
                for (bit, text) in [
                    (NODE_CONFLICT, ERR_NODE_CONFLICT),
                    (BIND_CONFLICT, ERR_BIND_CONFLICT),
                    (NOT_ENOUGH_SPACE, ERR_NOT_ENOUGH_SPACE),
                    (PV_NOT_EXIST, ERR_PV_NOT_EXIST),
                ] {
                    if bits & bit != 0 {
                        reasons.push(Reason::Static(text));
                    }
                }
                Status { code: Code::UnschedulableAndUnresolvable, reasons, plugin: "", detail: None }
            }
        }
    }

    fn reads_pods(&self) -> bool {
        false
    }
}

impl ReservePlugin for VolumeBinding {
    fn reserve(&self, state: &mut CycleState, _pod: &Pod, node: Sym) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::success();
        };
        let Some(info) = s.snapshot.get(node) else {
            return Status::error(format!("node {node} is not in the cycle's snapshot"));
        };
        let labels = &info.node().labels;
        let mut plan = PodVolumeBindings { node, ..PodVolumeBindings::default() };
        match find_pod_volumes(s, labels, node, Some(&mut plan)) {
            Err(e) => return Status::error(e.as_str()),
            Ok(0) => {}
            Ok(_) => return Status::error(format!("the pod's volumes no longer fit node {node}")),
        }
        plan.node_labels = labels.clone();
        let uids: Vec<(Sym, Sym, Sym)> = s.unbound.iter().map(|c| (c.namespace, c.name, c.uid)).collect();
        {
            let mut a = lock(&self.assumed);
            for &(ns, name, pv) in &plan.static_bindings {
                let uid = uids.iter().find(|u| u.0 == ns && u.1 == name).map_or(Sym::EMPTY, |u| u.2);
                a.pvs.insert(pv, (ns, name, uid));
            }
            for &(ns, name) in &plan.provisions {
                a.claims.insert((ns, name), node);
            }
        }
        state.write(Reserved(plan));
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _pod: &Pod, _node: Sym) {
        if let Some(Reserved(plan)) = state.read::<Reserved>() {
            self.forget(plan);
        }
    }
}

impl VolumeBinding {
    fn forget(&self, plan: &PodVolumeBindings) {
        let mut a = lock(&self.assumed);
        for (_, _, pv) in &plan.static_bindings {
            a.pvs.remove(pv);
        }
        for key in &plan.provisions {
            a.claims.remove(key);
        }
    }
}

impl PreBindPlugin for VolumeBinding {
    /// Work to do unless every claim of the pod is bound already.
    fn pre_bind_has_work(&self, state: &CycleState, _pod: &Pod, _node: Sym) -> bool {
        state.read::<Reserved>().is_some_and(|Reserved(plan)| !plan.is_empty())
    }

    fn pre_bind(&self, state: &mut CycleState, pod: &Pod, _node: Sym, api: &dyn ClusterApi) -> Status {
        let Some(Reserved(plan)) = state.read::<Reserved>() else {
            return Status::success();
        };
        if plan.is_empty() {
            return Status::success();
        }
        let result = api.bind_volumes(pod, plan);
        // Written (the cluster's objects now say so) or failed (Unreserve follows): either way
        // the assumption has served its purpose.
        self.forget(plan);
        match result {
            Ok(()) => Status::success(),
            Err(e) => Status::error(e.to_string()),
        }
    }
}
