//! DynamicResources, as it behaves in a cluster without DRA objects (ksched models no
//! ResourceClaims): no pod has claims, so its PreFilter skips (and so does its Filter), it
//! scores 0, and its PostFilter, which would deallocate claims to make room, says there is
//! nothing to deallocate. That last part is visible: upstream joins every PostFilter plugin's
//! message, so a FitError reads `... no new claims to deallocate, preemption: ...`. When its
//! PreFilter never ran (an earlier PreFilter plugin rejected the pod), its PostFilter finds no
//! cycle data and fails with `not found`, which then is the whole PostFilter message.

use crate::api::Pod;
use crate::framework::{
    Code, CycleState, Plugin, PostFilterContext, PostFilterPlugin, PostFilterResult, PreFilterPlugin, Reason, Status,
};
use crate::snapshot::Snapshot;

pub const NAME: &str = "DynamicResources";
/// Upstream's PostFilter message for a pod without claims to deallocate.
pub const MSG_NO_CLAIMS: &str = "no new claims to deallocate";
/// Upstream's cycle-state lookup error, when its PreFilter did not run.
pub const MSG_NO_STATE: &str = "not found";

#[derive(Debug, Default)]
pub struct DynamicResources;

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PreFilterPlugin for DynamicResources {
    /// No claims: Skip. The skip itself is the record PostFilter reads (no state is written,
    /// so the cycle allocates nothing for it).
    fn pre_filter(&self, _state: &mut CycleState, _pod: &Pod, _snapshot: &Snapshot) -> Status {
        Status::skip()
    }
}

impl PostFilterPlugin for DynamicResources {
    fn post_filter(
        &self,
        _ctx: &mut PostFilterContext<'_>,
        state: &CycleState,
        _pod: &Pod,
    ) -> (Option<PostFilterResult>, Status) {
        if !state.skips_filter(NAME) {
            return (None, Status::error(MSG_NO_STATE));
        }
        (None, Status::new(Code::Unschedulable, Reason::Static(MSG_NO_CLAIMS)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, ResourceName::Cpu, Volume};
    use crate::framework::runtime::{run_post_filter_plugins, run_pre_filter, NodeStatuses, NominatedPods};
    use crate::framework::Profile;
    use crate::snapshot::node_info::NodeInfo;
    use crate::util::rng::Rng;

    /// The PostFilter message of the default profile for `pod` on one small node, after
    /// PreFilter ran as the cycle runs it.
    fn post_filter_message(profile: &Profile, pod: &Pod) -> Option<String> {
        let node = Node::builder("n1").resources(1000, 1 << 30, 10).build();
        let snapshot = Snapshot::from_node_infos(vec![NodeInfo::new(std::sync::Arc::new(node))]);
        let mut state = CycleState::new();
        let mut statuses = NodeStatuses::default();
        if let Err(st) = run_pre_filter(profile, &mut state, pod, &snapshot) {
            statuses.absent = Some(st);
        } else {
            statuses.push(0, Status::new(Code::Unschedulable, Reason::Insufficient(Cpu)));
        }
        let mut rng = Rng::seed(1);
        let nominated = NominatedPods::default();
        let mut ctx = PostFilterContext {
            profile,
            snapshot: &snapshot,
            statuses: &statuses,
            nominator: None,
            nominated: &nominated,
            pool: None,
            rng: &mut rng,
            preemption_trace: None,
        };
        run_post_filter_plugins(profile, &mut ctx, &state, pod).1
    }

    #[test]
    fn post_filter_message_table() {
        let too_big = Pod::builder("big").container("c", &[(Cpu, 2000)]).build();
        // VolumeRestrictions' PreFilter rejects a pod whose claim does not exist.
        let missing_claim = Pod::builder("claims").volume(Volume::pvc("data", "missing")).build();
        let cases: Vec<(&str, &Pod, &str)> = vec![
            (
                "no victims: both plugins' messages, joined",
                &too_big,
                "no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            ),
            ("PreFilter rejected the pod before DynamicResources' PreFilter ran", &missing_claim, MSG_NO_STATE),
        ];
        for (name, pod, want) in cases {
            assert_eq!(post_filter_message(&Profile::default_profile(), pod).as_deref(), Some(want), "{name}");
        }
    }
}
