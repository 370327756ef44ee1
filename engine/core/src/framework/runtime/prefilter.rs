//! Running PreFilter: each plugin in order, Skip recorded, a rejection returned, and the
//! nodes a plugin names narrowing the cycle.

use crate::api::{Pod, Sym};
use crate::framework::{Code, CycleState, PreFilterPlugin, Profile, Reason, Status};
use crate::observer::{CycleObserver, NoObserver};
use crate::snapshot::Snapshot;

/// Runs PreFilter plugins; records skips in `state`. Err = the pod is rejected outright.
pub fn run_pre_filter(profile: &Profile, state: &mut CycleState, pod: &Pod, snapshot: &Snapshot) -> Result<(), Status> {
    run_pre_filter_observed(profile, state, pod, snapshot, &mut NoObserver)
}

/// `run_pre_filter`, telling `obs` each plugin's status.
pub fn run_pre_filter_observed<O: CycleObserver + ?Sized>(
    profile: &Profile,
    state: &mut CycleState,
    pod: &Pod,
    snapshot: &Snapshot,
    obs: &mut O,
) -> Result<(), Status> {
    let observed = obs.observes();
    for p in &profile.pre_filter {
        let st = p.pre_filter(state, pod, snapshot);
        if observed {
            obs.pre_filter(p.name(), &st);
        }
        if st.is_skip() {
            state.skip_filter.push(p.name());
        } else if !st.is_success() {
            return Err(st.with_plugin(p.name()));
        } else {
            narrow(&**p, state, pod)?;
        }
    }
    Ok(())
}

/// After `plugin`'s successful PreFilter: narrows the cycle to the nodes it names, if any;
/// `Err` with upstream's rejection when no node is left.
pub(crate) fn narrow(plugin: &dyn PreFilterPlugin, state: &mut CycleState, pod: &Pod) -> Result<(), Status> {
    let Some(names) = plugin.node_names(pod) else { return Ok(()) };
    if state.narrow(plugin.name(), &names) {
        return Ok(());
    }
    // Upstream's wording when the plugins' node sets do not intersect.
    let msg = match state.narrowed_by() {
        [one] => format!("node(s) didn't satisfy plugin {one}"),
        many => format!("node(s) didn't satisfy plugin(s) [{}] simultaneously", many.join(" ")),
    };
    Err(Status::new(Code::Unschedulable, Reason::Text(Sym::new(&msg))))
}

/// The verdict of every node PreFilter's narrowing left out.
pub fn narrowed_out_status(state: &CycleState) -> Status {
    let mut names = state.narrowed_by().to_vec();
    names.sort_unstable();
    names.dedup();
    let msg = format!("node(s) didn't satisfy plugin(s) [{}]", names.join(" "));
    Status::new(Code::UnschedulableAndUnresolvable, Reason::Text(Sym::new(&msg)))
}
