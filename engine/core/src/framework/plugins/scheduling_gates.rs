//! SchedulingGates: holds a pod with `spec.schedulingGates` in the queue (PreEnqueue) until
//! its last gate is removed.

use crate::api::Pod;
use crate::framework::events::{hint::queue_if, ActionType, ClusterEvent, Event, EventResource, QueueingHint};
use crate::framework::{Code, Plugin, PreEnqueuePlugin, Status};

pub const NAME: &str = "SchedulingGates";

#[derive(Debug, Default)]
pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED)]
    }

    /// Only the gated pod's own update can let it in.
    fn queueing_hint(&self, pod: &Pod, event: &Event, _cluster: crate::framework::ClusterView<'_>) -> QueueingHint {
        queue_if(event.pods().1.is_some_and(|p| p.uid == pod.uid))
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, pod: &Pod, _cluster: crate::framework::ClusterView<'_>) -> Status {
        if pod.scheduling_gates.is_empty() {
            return Status::success();
        }
        let names: Vec<&str> = pod.scheduling_gates.iter().map(|g| g.as_str()).collect();
        Status::with_text(
            Code::UnschedulableAndUnresolvable,
            &format!("waiting for scheduling gates: [{}]", names.join(" ")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduling_gates_pre_enqueue_table() {
        // (gates, want code, want message)
        let cases: &[(&[&str], Code, &str)] = &[
            (&[], Code::Success, ""),
            (
                &["example.com/wait"],
                Code::UnschedulableAndUnresolvable,
                "waiting for scheduling gates: [example.com/wait]",
            ),
            (&["a", "b"], Code::UnschedulableAndUnresolvable, "waiting for scheduling gates: [a b]"),
        ];
        for (gates, code, msg) in cases {
            let mut b = Pod::builder("p");
            for g in *gates {
                b = b.scheduling_gate(g);
            }
            let st = SchedulingGates.pre_enqueue(&b.build(), crate::framework::ClusterView::NONE);
            assert_eq!((st.code, st.message().as_str()), (*code, *msg), "{gates:?}");
        }
    }

    #[test]
    fn scheduling_gates_hint_queues_only_the_pods_own_ungating() {
        let gated = Pod::builder("p").scheduling_gate("g").build();
        let ungated = Pod::builder("p").build();
        let other_gated = Pod::builder("q").scheduling_gate("g").build();
        let other = Pod::builder("q").build();
        let own = Event::unscheduled_pod_update(&gated, &ungated);
        assert!(own.kind.action.intersects(ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED));
        assert!(SchedulingGates.events_to_register()[0].covers(&own.kind));
        assert_eq!(
            SchedulingGates.queueing_hint(&gated, &own, crate::framework::ClusterView::NONE),
            QueueingHint::Queue
        );
        let theirs = Event::unscheduled_pod_update(&other_gated, &other);
        assert_eq!(
            SchedulingGates.queueing_hint(&gated, &theirs, crate::framework::ClusterView::NONE),
            QueueingHint::QueueSkip
        );
        let relabel =
            Event::unscheduled_pod_update(&gated, &Pod::builder("p").label("a", "b").scheduling_gate("g").build());
        assert!(!SchedulingGates.events_to_register()[0].covers(&relabel.kind), "a gate left: no event for it");
    }
}
