//! The dry run on one node (upstream's SelectVictimsOnNode): which pods must go for the
//! preemptor to fit, keeping as many as possible.
//!
//! On a copy of the node every pod of lower priority is removed (with the PreFilter
//! extensions told, so pod affinity and topology spread counts follow). If the pod still does
//! not fit, the node is out. Otherwise the removed pods are put back one at a time, most
//! important first — those whose eviction would break a PodDisruptionBudget before the others
//! — and each stays if the pod still fits beside it ("reprieved"); the rest are the victims.

use std::cmp::Ordering as CmpOrdering;

use crate::api::{Pod, PodDisruptionBudget, Sym};
use crate::framework::runtime::{run_filters_with_nominated_mut, NominatedPods, Overlay};
use crate::framework::{CycleState, FilterPlugin, PreFilterPlugin, Status};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

use super::REASON_NO_VICTIMS;

/// What the dry run reads, shared by every node it tries.
pub struct DryRun<'a> {
    pub filters: &'a [&'a dyn FilterPlugin],
    /// The cycle's two-pass filter overlay; its extensions are told of every pod taken off
    /// or put back.
    pub overlay: &'a Overlay<'a>,
    /// The cycle state after PreFilter (copied before the extensions change it).
    pub state: &'a CycleState,
    pub pod: &'a Pod,
    pub snapshot: &'a Snapshot,
    pub nominated: &'a NominatedPods,
    pub pdbs: &'a [PodDisruptionBudget],
}

/// The pods to evict on a node, most important first, and how many of them break a PDB.
#[derive(Clone, Debug, PartialEq)]
pub struct Victims {
    pub pods: Vec<Pod>,
    pub num_pdb_violations: usize,
}

/// A node where preemption would make the pod fit.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub node: Sym,
    pub victims: Victims,
}

/// Reused across the nodes one worker tries, so a dry run allocates only for its result.
#[derive(Default)]
pub struct Scratch {
    potential: Vec<Pod>,
    violating: Vec<Pod>,
    clean: Vec<Pod>,
}

/// Upstream's MoreImportantPod: higher priority first, then the earlier start (a pod that
/// has not started counts as starting now, after every pod that has).
pub fn more_important(a: &Pod, b: &Pod) -> CmpOrdering {
    b.priority.cmp(&a.priority).then_with(|| start_key(a).cmp(&start_key(b)))
}

fn start_key(p: &Pod) -> u64 {
    p.start_time.map_or(u64::MAX, |t| t.0)
}

/// Whether evicting `pods` (in this order) breaks a PodDisruptionBudget, pod by pod: each
/// matching budget's allowance is spent in turn (pods the budget already counts as disrupted
/// spend nothing), and a pod that takes any budget below zero violates it. Returns the
/// violating and the other pods, each in their original order.
pub fn split_by_pdb(pods: &[Pod], pdbs: &[PodDisruptionBudget], violating: &mut Vec<Pod>, clean: &mut Vec<Pod>) {
    violating.clear();
    clean.clear();
    let mut allowed: smallvec::SmallVec<[i32; 8]> = pdbs.iter().map(|b| b.disruptions_allowed).collect();
    for p in pods {
        let mut violates = false;
        for (i, pdb) in pdbs.iter().enumerate() {
            if !pdb.selects(p) || pdb.is_disrupted(&p.name) {
                continue;
            }
            allowed[i] -= 1;
            violates |= allowed[i] < 0;
        }
        if violates {
            violating.push(p.clone());
        } else {
            clean.push(p.clone());
        }
    }
}

/// The dry run on `node`: `Ok` with the victims (at least one), or the status saying why
/// preempting there cannot help.
pub fn select_victims(dry: &DryRun<'_>, node: &NodeInfo, scratch: &mut Scratch) -> Result<Candidate, Status> {
    let pod = dry.pod;
    scratch.potential.clear();
    let mut copy = node.clone_taking(|p| p.priority < pod.priority, &mut scratch.potential);
    if scratch.potential.is_empty() {
        return Err(Status::unresolvable(REASON_NO_VICTIMS));
    }
    // The extensions change the state, so they get a copy of it (the common case, no
    // extension active, copies nothing).
    let mut own: Option<CycleState> = (!dry.overlay.extensions.is_empty()).then(|| dry.state.clone());
    let name = node.name();
    if let Some(s) = own.as_mut() {
        change_pods(dry, &dry.overlay.extensions, s, &scratch.potential, &copy, false)?;
    }
    let fits = |own: &Option<CycleState>, copy: &mut NodeInfo| {
        let state = own.as_ref().unwrap_or(dry.state);
        run_filters_with_nominated_mut(dry.overlay, dry.filters, state, pod, copy, dry.nominated, dry.snapshot)
    };
    let st = fits(&own, &mut copy);
    if !st.is_success() {
        return Err(st);
    }
    scratch.potential.sort_by(more_important);
    split_by_pdb(&scratch.potential, dry.pdbs, &mut scratch.violating, &mut scratch.clean);
    let mut victims = Vec::new();
    let mut num_pdb_violations = 0;
    let groups = [(&scratch.violating, true), (&scratch.clean, false)];
    for (group, violating) in groups {
        for p in group.iter() {
            copy.add_pod(p.with_node(name));
            if let Some(s) = own.as_mut() {
                change_pods(dry, &dry.overlay.extensions, s, std::slice::from_ref(p), &copy, true)?;
            }
            if fits(&own, &mut copy).is_success() {
                continue;
            }
            copy.remove_pod(&p.uid);
            if let Some(s) = own.as_mut() {
                change_pods(dry, &dry.overlay.extensions, s, std::slice::from_ref(p), &copy, false)?;
            }
            victims.push(p.clone());
            num_pdb_violations += violating as usize;
        }
    }
    if !scratch.violating.is_empty() && !scratch.clean.is_empty() {
        victims.sort_by(more_important);
    }
    if victims.is_empty() {
        // Every lower-priority pod could stay: the pod fits as things are, which the filter
        // said it did not (upstream treats this as an error on the node).
        return Err(Status::error(format!("expected at least one victim pod on node {:?}", name.as_str())));
    }
    Ok(Candidate { node: name, victims: Victims { pods: victims, num_pdb_violations } })
}

/// Tells the PreFilter extensions that `pods` were added to or removed from `node`.
fn change_pods(
    dry: &DryRun<'_>,
    extensions: &[&dyn PreFilterPlugin],
    state: &mut CycleState,
    pods: &[Pod],
    node: &NodeInfo,
    add: bool,
) -> Result<(), Status> {
    for p in pods {
        for ext in extensions {
            let st = if add {
                ext.add_pod(state, dry.pod, p, node, dry.snapshot)
            } else {
                ext.remove_pod(state, dry.pod, p, node, dry.snapshot)
            };
            if !st.is_success() {
                return Err(Status::error(format!("{}: {}", ext.name(), st.message())));
            }
        }
    }
    Ok(())
}
