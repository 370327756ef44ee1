//! What preemption finds, in the framework's words (upstream's `framework/preemption`):
//! the candidate nodes with their victims, and the trace a PostFilter plugin records of its
//! dry run for the tools that show or compare it (`PostFilterContext::preemption_trace`).
//! DefaultPreemption fills them; the framework, the scheduler and the observers read them
//! without naming the plugin.

use crate::api::{Pod, Sym};
use crate::framework::extender::ExtenderTrace;
use crate::framework::Status;

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

/// What one preemption attempt's dry run found (`PostFilterContext::preemption_trace`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreemptionTrace {
    /// Every candidate node with its victims (most important first) and PDB violations, in
    /// the order the dry run returns them (violating no PDB first, then visiting order).
    pub candidates: Vec<Candidate>,
    /// The potential nodes where the dry run found no victim set, with why, in visiting order.
    pub rejected: Vec<(Sym, Status)>,
    /// Indices into `candidates` tied after the pick's five criteria (`best_candidates`);
    /// the pick is the first.
    pub best: Vec<usize>,
    /// How many potential nodes there were: when `candidates` and `rejected` together hold
    /// fewer, the dry run stopped early and which nodes it tried depends on its random offset.
    pub potential: usize,
    /// The extenders' preempt calls (which candidates and victims each one removed).
    pub extenders: ExtenderTrace,
}
