//! Cluster events and queueing hints: which changes to the cluster can make a pod that a
//! plugin rejected schedulable (upstream's `ClusterEvent`, `EventsToRegister` and
//! `QueueingHintFn`).
//!
//! Every plugin registers the events that may undo its rejections (`Plugin::events_to_register`,
//! by default every event) and answers, for one rejected pod and one event with its objects,
//! whether the pod is worth another attempt (`Plugin::queueing_hint`). The queue records on
//! each failed pod the plugins that rejected it; when an event arrives it asks only the hints of
//! those plugins that registered for the event, and a pod whose rejectors all say `QueueSkip`
//! stays parked. `QueueingHints` is that lookup, built once from the profiles.

use std::sync::Arc;

use smallvec::SmallVec;

use super::{ClusterView, Profile};
use crate::api::dra::ResourceClaim;
use crate::api::{Node, Pod, Sym};
use crate::util::hash::FxHashMap;

/// The kind of object an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventResource {
    Node,
    /// A pod bound to a node. A plugin registering `Pod` hears of unscheduled pods' changes
    /// too (`UnscheduledPod` events), as upstream's Pod registration matches both.
    Pod,
    /// A pending pod's own change (sent by the queue's `update` for that pod alone).
    UnscheduledPod,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CsiNode,
    /// resource.k8s.io objects (DynamicResources).
    ResourceClaim,
    ResourceSlice,
    DeviceClass,
    /// Any object: registered by plugins that say nothing more precise, and sent by changes
    /// that cannot be named (the unschedulable-pods flush, a caller's "anything changed").
    WildCard,
}

/// What happened to the object: a set of flags, so a registration can name several.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ActionType(u32);

impl ActionType {
    pub const ADD: ActionType = ActionType(1);
    pub const DELETE: ActionType = ActionType(1 << 1);
    pub const UPDATE_NODE_ALLOCATABLE: ActionType = ActionType(1 << 2);
    pub const UPDATE_NODE_LABEL: ActionType = ActionType(1 << 3);
    /// Taints or `spec.unschedulable` changed (upstream reports both as a taint change).
    pub const UPDATE_NODE_TAINT: ActionType = ActionType(1 << 4);
    pub const UPDATE_NODE_CONDITION: ActionType = ActionType(1 << 5);
    pub const UPDATE_NODE_ANNOTATION: ActionType = ActionType(1 << 6);
    pub const UPDATE_POD_LABEL: ActionType = ActionType(1 << 7);
    /// A bound pod's requests went down.
    pub const UPDATE_POD_SCALE_DOWN: ActionType = ActionType(1 << 8);
    pub const UPDATE_POD_TOLERATION: ActionType = ActionType(1 << 9);
    /// Any other change of a bound pod, or of a storage object.
    pub const UPDATE_OTHER: ActionType = ActionType(1 << 10);
    /// A pending pod's last scheduling gate was removed.
    pub const UPDATE_POD_SCHEDULING_GATES_ELIMINATED: ActionType = ActionType(1 << 11);
    /// A pod's `status.resourceClaimStatuses` changed (the resourceclaim controller made its
    /// template claims).
    pub const UPDATE_POD_GENERATED_RESOURCE_CLAIM: ActionType = ActionType(1 << 12);
    /// Every kind of update.
    pub const UPDATE: ActionType = ActionType(((1 << 13) - 1) & !0b11);
    pub const ALL: ActionType = ActionType((1 << 13) - 1);
    pub const NONE: ActionType = ActionType(0);

    pub const fn union(self, other: ActionType) -> ActionType {
        ActionType(self.0 | other.0)
    }

    pub const fn intersects(self, other: ActionType) -> bool {
        self.0 & other.0 != 0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for ActionType {
    type Output = ActionType;
    fn bitor(self, rhs: ActionType) -> ActionType {
        self.union(rhs)
    }
}

/// A kind of event: a resource and the actions on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClusterEvent {
    pub resource: EventResource,
    pub action: ActionType,
}

impl ClusterEvent {
    pub const WILDCARD: ClusterEvent = ClusterEvent { resource: EventResource::WildCard, action: ActionType::ALL };

    pub const fn new(resource: EventResource, action: ActionType) -> ClusterEvent {
        ClusterEvent { resource, action }
    }

    /// Whether a registration `self` covers the event `e` (a wildcard registration covers
    /// every event; a `Pod` registration covers unscheduled pods' events too).
    pub fn covers(&self, e: &ClusterEvent) -> bool {
        let resource = self.resource == e.resource
            || (self.resource == EventResource::Pod && e.resource == EventResource::UnscheduledPod);
        self.resource == EventResource::WildCard || (resource && self.action.intersects(e.action))
    }

    pub fn is_wildcard(&self) -> bool {
        self.resource == EventResource::WildCard
    }
}

/// A plugin's answer for one rejected pod and one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueingHint {
    /// The event may make the pod schedulable: move it (to backoffQ while its backoff lasts).
    Queue,
    /// The event cannot undo this plugin's rejection.
    QueueSkip,
}

/// An event with the objects it is about (`old` absent for an add, `new` absent for a
/// delete). Pods are cheap to clone (their spec is shared); nodes are copied once per node
/// event and shared from then on.
#[derive(Clone, Debug)]
pub enum EventObjects {
    /// No object (a wildcard event).
    None,
    Node {
        old: Option<Arc<Node>>,
        new: Option<Arc<Node>>,
    },
    Pod {
        old: Option<Pod>,
        new: Option<Pod>,
    },
    /// A storage object changed (PV, PVC, StorageClass, CSINode), or a DRA object whose
    /// hints need no more (ResourceSlice, DeviceClass): named only by its kind.
    Storage {
        name: Sym,
    },
    /// A ResourceClaim as it was and as it is (`old` absent for an add, `new` for a delete).
    ResourceClaim {
        old: Option<Arc<ResourceClaim>>,
        new: Option<Arc<ResourceClaim>>,
    },
}

/// One event as it reaches the queue.
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: ClusterEvent,
    pub objects: EventObjects,
}

impl Event {
    /// A change that cannot be named: every parked pod is worth another attempt.
    pub fn wildcard() -> Event {
        Event { kind: ClusterEvent::WILDCARD, objects: EventObjects::None }
    }

    pub fn node_add(node: &Node) -> Event {
        Event {
            kind: ClusterEvent::new(EventResource::Node, ActionType::ADD),
            objects: EventObjects::Node { old: None, new: Some(Arc::new(node.clone())) },
        }
    }

    /// A node update, its actions computed from what changed; `None` when nothing the
    /// scheduler reads changed (upstream sends no event then either).
    pub fn node_update(old: &Node, new: &Node) -> Option<Event> {
        let action = node_update_action(old, new);
        (!action.is_empty()).then(|| Event {
            kind: ClusterEvent::new(EventResource::Node, action),
            objects: EventObjects::Node { old: Some(Arc::new(old.clone())), new: Some(Arc::new(new.clone())) },
        })
    }

    pub fn node_delete(node: &Node) -> Event {
        Event {
            kind: ClusterEvent::new(EventResource::Node, ActionType::DELETE),
            objects: EventObjects::Node { old: Some(Arc::new(node.clone())), new: None },
        }
    }

    pub fn assigned_pod_add(pod: &Pod) -> Event {
        Event {
            kind: ClusterEvent::new(EventResource::Pod, ActionType::ADD),
            objects: EventObjects::Pod { old: None, new: Some(pod.clone()) },
        }
    }

    /// An update of a bound pod; `None` when nothing the scheduler reads changed.
    pub fn assigned_pod_update(old: &Pod, new: &Pod) -> Option<Event> {
        let action = pod_update_action(old, new);
        (!action.is_empty()).then(|| Event {
            kind: ClusterEvent::new(EventResource::Pod, action),
            objects: EventObjects::Pod { old: Some(old.clone()), new: Some(new.clone()) },
        })
    }

    pub fn assigned_pod_delete(pod: &Pod) -> Event {
        Event {
            kind: ClusterEvent::new(EventResource::Pod, ActionType::DELETE),
            objects: EventObjects::Pod { old: Some(pod.clone()), new: None },
        }
    }

    /// A pending pod's own update (upstream's unschedulablePod events: labels, requests scaled
    /// down, the last scheduling gate removed, tolerations; any other change as
    /// `UPDATE_OTHER`). The queue asks the hints of the pod's own rejectors with it.
    pub fn unscheduled_pod_update(old: &Pod, new: &Pod) -> Event {
        let mut action = pod_update_action(old, new);
        if new.scheduling_gates.is_empty() && !old.scheduling_gates.is_empty() {
            action = action | ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED;
            if action.intersects(ActionType::UPDATE_OTHER) {
                action = ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED;
            }
        }
        if action.is_empty() {
            action = ActionType::UPDATE_OTHER;
        }
        Event {
            kind: ClusterEvent::new(EventResource::UnscheduledPod, action),
            objects: EventObjects::Pod { old: Some(old.clone()), new: Some(new.clone()) },
        }
    }

    /// A storage object (`resource` is one of the storage kinds) was added, updated or
    /// deleted.
    pub fn storage(resource: EventResource, action: ActionType, name: &str) -> Event {
        Event { kind: ClusterEvent::new(resource, action), objects: EventObjects::Storage { name: Sym::new(name) } }
    }

    /// A ResourceClaim was added (`old` None), updated, or deleted (`new` None).
    pub fn resource_claim(old: Option<Arc<ResourceClaim>>, new: Option<Arc<ResourceClaim>>) -> Event {
        let action = match (&old, &new) {
            (None, _) => ActionType::ADD,
            (Some(_), None) => ActionType::DELETE,
            (Some(_), Some(_)) => ActionType::UPDATE_OTHER,
        };
        Event {
            kind: ClusterEvent::new(EventResource::ResourceClaim, action),
            objects: EventObjects::ResourceClaim { old, new },
        }
    }

    /// The claims of a ResourceClaim event (old, new).
    pub fn claims(&self) -> (Option<&ResourceClaim>, Option<&ResourceClaim>) {
        match &self.objects {
            EventObjects::ResourceClaim { old, new } => (old.as_deref(), new.as_deref()),
            _ => (None, None),
        }
    }

    /// The nodes of a node event (old, new).
    pub fn nodes(&self) -> (Option<&Node>, Option<&Node>) {
        match &self.objects {
            EventObjects::Node { old, new } => (old.as_deref(), new.as_deref()),
            _ => (None, None),
        }
    }

    /// The pods of a pod event (old, new).
    pub fn pods(&self) -> (Option<&Pod>, Option<&Pod>) {
        match &self.objects {
            EventObjects::Pod { old, new } => (old.as_ref(), new.as_ref()),
            _ => (None, None),
        }
    }
}

/// Which scheduling-relevant parts of a node changed (upstream's nodeSchedulingPropertiesChange).
pub fn node_update_action(old: &Node, new: &Node) -> ActionType {
    let mut a = ActionType::NONE;
    if old.allocatable != new.allocatable {
        a = a | ActionType::UPDATE_NODE_ALLOCATABLE;
    }
    if old.labels != new.labels {
        a = a | ActionType::UPDATE_NODE_LABEL;
    }
    if old.taints != new.taints || old.unschedulable != new.unschedulable {
        a = a | ActionType::UPDATE_NODE_TAINT;
    }
    if old.conditions != new.conditions {
        a = a | ActionType::UPDATE_NODE_CONDITION;
    }
    if old.annotations != new.annotations {
        a = a | ActionType::UPDATE_NODE_ANNOTATION;
    }
    a
}

/// Which scheduling-relevant parts of a bound pod changed.
pub fn pod_update_action(old: &Pod, new: &Pod) -> ActionType {
    let mut a = ActionType::NONE;
    if old.labels != new.labels {
        a = a | ActionType::UPDATE_POD_LABEL;
    }
    if scaled_down(old.accounted_requests(), new.accounted_requests()) {
        a = a | ActionType::UPDATE_POD_SCALE_DOWN;
    }
    if old.tolerations != new.tolerations {
        a = a | ActionType::UPDATE_POD_TOLERATION;
    }
    if old.resource_claim_statuses != new.resource_claim_statuses {
        a = a | ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM;
    }
    if a.is_empty() && (old.deletion_timestamp != new.deletion_timestamp || !old.same_spec(new)) {
        a = ActionType::UPDATE_OTHER;
    }
    a
}

/// Whether any resource of `old` is lower (or gone) in `new` (upstream's extractPodScaleDown,
/// on the status-aware requests).
fn scaled_down(old: &crate::api::Resource, new: &crate::api::Resource) -> bool {
    new.milli_cpu < old.milli_cpu
        || new.memory < old.memory
        || new.ephemeral_storage < old.ephemeral_storage
        || old.scalar.iter().any(|(name, v)| new.scalar.get(name) < v)
}

type HintFn = Arc<dyn Fn(&Pod, &Event, ClusterView<'_>) -> QueueingHint + Send + Sync>;

/// One plugin's registration for one kind of event.
#[derive(Clone)]
struct Registration {
    event: ClusterEvent,
    plugin: &'static str,
    hint: HintFn,
}

/// The registrations of every plugin of every profile that can reject a pod (PreEnqueue,
/// PreFilter and Filter plugins), by scheduler name (upstream's queueingHintMap), and the
/// PreEnqueue plugins themselves: everything the queue needs from the profiles.
#[derive(Clone, Default)]
pub struct QueueingHints {
    by_scheduler: FxHashMap<Sym, Vec<Registration>>,
    pre_enqueue: super::pre_enqueue::PreEnqueuePlugins,
}

impl QueueingHints {
    pub fn new() -> QueueingHints {
        QueueingHints::default()
    }

    /// The hints of one profile's plugins.
    pub fn from_profile(profile: &Profile) -> QueueingHints {
        let mut h = QueueingHints::new();
        h.add_profile(profile);
        h
    }

    /// Adds a profile's plugins under its scheduler name.
    pub fn add_profile(&mut self, profile: &Profile) {
        let mut regs: Vec<Registration> = Vec::new();
        let mut seen: SmallVec<[&'static str; 16]> = SmallVec::new();
        let mut add = |name: &'static str, events: Vec<ClusterEvent>, hint: HintFn| {
            if seen.contains(&name) {
                return;
            }
            seen.push(name);
            for event in events {
                regs.push(Registration { event, plugin: name, hint: Arc::clone(&hint) });
            }
        };
        for p in &profile.pre_enqueue {
            let q = Arc::clone(p);
            add(
                p.name(),
                p.events_to_register(),
                Arc::new(move |pod: &Pod, e: &Event, c: ClusterView<'_>| q.queueing_hint(pod, e, c)),
            );
        }
        for p in &profile.pre_filter {
            let q = Arc::clone(p);
            add(
                p.name(),
                p.events_to_register(),
                Arc::new(move |pod: &Pod, e: &Event, c: ClusterView<'_>| q.queueing_hint(pod, e, c)),
            );
        }
        for p in &profile.filter {
            let q = Arc::clone(p);
            add(
                p.name(),
                p.events_to_register(),
                Arc::new(move |pod: &Pod, e: &Event, c: ClusterView<'_>| q.queueing_hint(pod, e, c)),
            );
        }
        self.by_scheduler.insert(Sym::new(&profile.scheduler_name), regs);
        self.pre_enqueue.add_profile(profile);
    }

    /// The profiles' PreEnqueue plugins.
    pub fn pre_enqueue(&self) -> &super::pre_enqueue::PreEnqueuePlugins {
        &self.pre_enqueue
    }

    /// Whether any plugin of any profile registered for `e` (events nobody asked for are not
    /// kept for pods in flight).
    pub fn interested(&self, e: &ClusterEvent) -> bool {
        e.is_wildcard() || self.by_scheduler.values().flatten().any(|r| r.event.covers(e))
    }

    /// Whether `event` may make `pod`, rejected by `rejectors`, schedulable: some rejector
    /// registered for the event and its hint (reading `cluster`) says Queue. A pod with no
    /// rejector (it failed on an error), a wildcard event, and a pod of a scheduler with no
    /// hints always qualify.
    pub fn worth_requeuing(
        &self,
        pod: &Pod,
        rejectors: &[&'static str],
        event: &Event,
        cluster: ClusterView<'_>,
    ) -> bool {
        if rejectors.is_empty() || event.kind.is_wildcard() {
            return true;
        }
        let Some(regs) = self.by_scheduler.get(&pod.scheduler_name) else { return true };
        regs.iter()
            .filter(|r| rejectors.contains(&r.plugin) && r.event.covers(&event.kind))
            .any(|r| (r.hint)(pod, event, cluster) == QueueingHint::Queue)
    }
}

impl std::fmt::Debug for QueueingHints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut m = f.debug_map();
        for (k, regs) in &self.by_scheduler {
            let v: Vec<(&str, ClusterEvent)> = regs.iter().map(|r| (r.plugin, r.event)).collect();
            m.entry(k, &v);
        }
        m.finish()
    }
}

/// Helpers the plugins' hints share.
pub(crate) mod hint {
    use super::QueueingHint;

    pub fn queue_if(b: bool) -> QueueingHint {
        if b {
            QueueingHint::Queue
        } else {
            QueueingHint::QueueSkip
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{LabelSelector, Labels, ResourceName::*, Taint, TaintEffect, TopologySpreadConstraint, Volume};
    use crate::framework::plugins::{
        inter_pod_affinity, node_affinity, node_ports, node_resources_fit, node_unschedulable, node_volume_limits,
        pod_topology_spread, taint_toleration, volume_restrictions, volume_zone,
    };
    use crate::testing::{requires_pod_affinity, requires_pod_anti_affinity};

    const HOST: &str = "kubernetes.io/hostname";

    fn node(name: &str) -> crate::api::NodeBuilder {
        Node::builder(name).resources(4000, 32 << 30, 110).label(HOST, name)
    }

    fn bound(name: &str, labels: &[(&str, &str)]) -> Pod {
        let mut b = Pod::builder(name);
        for (k, v) in labels {
            b = b.label(k, v);
        }
        b.build().with_node(Sym::new("n1"))
    }

    fn relabelled(p: &Pod, labels: &[(&str, &str)]) -> Pod {
        let mut b = Pod::builder(&p.name);
        for (k, v) in labels {
            b = b.label(k, v);
        }
        b.build().with_node(Sym::new("n1"))
    }

    fn node_update(old: crate::api::NodeBuilder, new: crate::api::NodeBuilder) -> Event {
        Event::node_update(&old.build(), &new.build()).expect("something changed")
    }

    fn blue_spread() -> TopologySpreadConstraint {
        let sel = LabelSelector { match_labels: Labels::from_pairs([("topology", "blue")]), ..Default::default() };
        TopologySpreadConstraint::new(1, HOST, sel)
    }

    /// Every default plugin with a row per event kind it registered for (and some it did not):
    /// whether a pod it rejected moves.
    #[test]
    fn default_plugins_requeue_only_on_the_events_and_changes_that_can_help() {
        let hints = QueueingHints::from_profile(&Profile::default_profile());
        let taint = Taint::new("dedicated", "gpu", TaintEffect::NoSchedule);
        let cpu2 = Pod::builder("p").container("i", &[(Cpu, 2000)]).build();
        let spread = Pod::builder("p").label("topology", "blue").spread(blue_spread()).build();
        let ipa = Pod::builder("p").affinity({
            let mut a = requires_pod_affinity("app", "db");
            a.pod_anti_affinity = requires_pod_anti_affinity("app", "web").pod_anti_affinity;
            a
        });
        let ipa = ipa.build();
        let port = Pod::builder("p").host_port(8080).build();
        let zone_a = Pod::builder("p").node_selector("zone", "a").build();
        let plain = Pod::builder("p").build();
        let blue = bound("b", &[("topology", "blue")]);
        let red = bound("r", &[("topology", "red")]);
        let blue_elsewhere = Pod::builder("b2").namespace("other").label("topology", "blue").build();
        let blue_elsewhere = blue_elsewhere.with_node(Sym::new("n1"));
        let with_port = |port: i32| Pod::builder("h").host_port(port).build().with_node(Sym::new("n1"));
        let with_volume = Pod::builder("v").volume(Volume::pvc("data", "claim")).build().with_node(Sym::new("n1"));
        let unbound = Pod::builder("u").build();
        let scaled = |cpu: i64| Pod::builder("s").container("i", &[(Cpu, cpu)]).build().with_node(Sym::new("n1"));

        // (plugin, rejected pod, event, moves)
        let rows: Vec<(&str, &Pod, Event, bool)> = vec![
            // NodeResourcesFit
            (node_resources_fit::NAME, &cpu2, Event::assigned_pod_delete(&bound("x", &[])), true),
            (node_resources_fit::NAME, &cpu2, Event::assigned_pod_delete(&unbound), false),
            (node_resources_fit::NAME, &cpu2, Event::assigned_pod_update(&scaled(3000), &scaled(1000)).unwrap(), true),
            (node_resources_fit::NAME, &cpu2, Event::assigned_pod_add(&bound("x", &[])), false),
            (node_resources_fit::NAME, &cpu2, Event::node_add(&node("n2").build()), true),
            (
                node_resources_fit::NAME,
                &cpu2,
                Event::node_add(&Node::builder("n2").resources(1000, 1 << 30, 110).build()),
                false,
            ),
            (
                node_resources_fit::NAME,
                &cpu2,
                node_update(
                    Node::builder("n2").resources(1000, 1 << 30, 110),
                    Node::builder("n2").resources(4000, 1 << 30, 110),
                ),
                true,
            ),
            (node_resources_fit::NAME, &cpu2, node_update(node("n2"), node("n2").label("x", "y")), false),
            // PodTopologySpread
            (pod_topology_spread::NAME, &spread, Event::assigned_pod_add(&blue), true),
            (pod_topology_spread::NAME, &spread, Event::assigned_pod_add(&red), false),
            (pod_topology_spread::NAME, &spread, Event::assigned_pod_add(&blue_elsewhere), false),
            (pod_topology_spread::NAME, &spread, Event::assigned_pod_delete(&blue), true),
            (
                pod_topology_spread::NAME,
                &spread,
                Event::assigned_pod_update(&red, &relabelled(&red, &[("topology", "blue")])).unwrap(),
                true,
            ),
            (
                pod_topology_spread::NAME,
                &spread,
                Event::assigned_pod_update(&red, &relabelled(&red, &[("topology", "red"), ("x", "1")])).unwrap(),
                false,
            ),
            (pod_topology_spread::NAME, &spread, Event::node_add(&node("n2").build()), true),
            (pod_topology_spread::NAME, &spread, Event::node_add(&Node::builder("n2").build()), false),
            (pod_topology_spread::NAME, &spread, Event::node_delete(&node("n2").build()), true),
            (pod_topology_spread::NAME, &spread, node_update(node("n2"), node("n2").taint(taint)), true),
            (pod_topology_spread::NAME, &spread, node_update(node("n2"), node("n2").label("x", "y")), false),
            (
                pod_topology_spread::NAME,
                &spread,
                node_update(node("n2"), node("n2").resources(8000, 32 << 30, 110)),
                false,
            ),
            // InterPodAffinity
            (inter_pod_affinity::NAME, &ipa, Event::assigned_pod_add(&bound("d", &[("app", "db")])), true),
            (inter_pod_affinity::NAME, &ipa, Event::assigned_pod_add(&bound("w", &[("app", "web")])), false),
            (
                inter_pod_affinity::NAME,
                &ipa,
                Event::assigned_pod_add(&Pod::builder("d").label("app", "db").build()),
                false,
            ),
            (inter_pod_affinity::NAME, &ipa, Event::assigned_pod_delete(&bound("w", &[("app", "web")])), true),
            (inter_pod_affinity::NAME, &ipa, Event::assigned_pod_delete(&bound("d", &[("app", "db")])), false),
            (inter_pod_affinity::NAME, &ipa, Event::node_add(&node("n2").build()), true),
            (inter_pod_affinity::NAME, &ipa, node_update(node("n2"), node("n2").label("x", "y")), false),
            // NodePorts
            (node_ports::NAME, &port, Event::assigned_pod_delete(&with_port(8080)), true),
            (node_ports::NAME, &port, Event::assigned_pod_delete(&with_port(9090)), false),
            (node_ports::NAME, &port, Event::node_add(&node("n2").build()), true),
            (node_ports::NAME, &port, Event::assigned_pod_add(&with_port(9090)), false),
            // NodeAffinity
            (node_affinity::NAME, &zone_a, Event::node_add(&node("n2").label("zone", "a").build()), true),
            (node_affinity::NAME, &zone_a, Event::node_add(&node("n2").label("zone", "b").build()), false),
            (
                node_affinity::NAME,
                &zone_a,
                node_update(node("n2").label("zone", "b"), node("n2").label("zone", "a")),
                true,
            ),
            (
                node_affinity::NAME,
                &zone_a,
                node_update(node("n2").label("zone", "a"), node("n2").label("zone", "a").label("x", "y")),
                false,
            ),
            (node_affinity::NAME, &zone_a, Event::assigned_pod_delete(&bound("x", &[])), false),
            // TaintToleration
            (taint_toleration::NAME, &plain, Event::node_add(&node("n2").build()), true),
            (taint_toleration::NAME, &plain, Event::node_add(&node("n2").taint(taint).build()), false),
            (taint_toleration::NAME, &plain, node_update(node("n2").taint(taint), node("n2")), true),
            (taint_toleration::NAME, &plain, node_update(node("n2"), node("n2").resources(8000, 32 << 30, 110)), false),
            // NodeUnschedulable
            (node_unschedulable::NAME, &plain, node_update(node("n2").unschedulable(true), node("n2")), true),
            (node_unschedulable::NAME, &plain, Event::node_add(&node("n2").unschedulable(true).build()), false),
            (node_unschedulable::NAME, &plain, node_update(node("n2"), node("n2").label("x", "y")), false),
            // Volume plugins
            (volume_restrictions::NAME, &plain, Event::assigned_pod_delete(&with_volume), true),
            (volume_restrictions::NAME, &plain, Event::assigned_pod_delete(&bound("x", &[])), false),
            (
                volume_restrictions::NAME,
                &plain,
                Event::storage(EventResource::PersistentVolumeClaim, ActionType::ADD, "c"),
                true,
            ),
            (volume_restrictions::NAME, &plain, Event::node_add(&node("n2").build()), false),
            (
                node_volume_limits::NAME,
                &plain,
                Event::storage(EventResource::CsiNode, ActionType::UPDATE_OTHER, "n1"),
                true,
            ),
            (node_volume_limits::NAME, &plain, Event::assigned_pod_delete(&with_volume), true),
            (node_volume_limits::NAME, &plain, Event::node_add(&node("n2").build()), false),
            (volume_zone::NAME, &plain, Event::storage(EventResource::StorageClass, ActionType::ADD, "fast"), true),
            (
                volume_zone::NAME,
                &plain,
                Event::storage(EventResource::PersistentVolume, ActionType::DELETE, "pv"),
                false,
            ),
            (volume_zone::NAME, &plain, Event::assigned_pod_delete(&with_volume), false),
            // Any plugin: a wildcard event moves the pod.
            (node_resources_fit::NAME, &cpu2, Event::wildcard(), true),
        ];
        for (i, (plugin, pod, event, want)) in rows.iter().enumerate() {
            let got = hints.worth_requeuing(pod, &[plugin], event, crate::framework::ClusterView::NONE);
            assert_eq!(got, *want, "row {i}: {plugin} on {:?}", event.kind);
        }
        // No rejector (the attempt failed on an error): any event moves the pod.
        assert!(hints.worth_requeuing(
            &plain,
            &[],
            &Event::node_add(&node("n2").build()),
            crate::framework::ClusterView::NONE
        ));
        // A pod of a scheduler without hints moves on any event.
        let other = Pod::builder("p").scheduler_name("other").build();
        assert!(hints.worth_requeuing(
            &other,
            &[node_resources_fit::NAME],
            &Event::assigned_pod_add(&blue),
            crate::framework::ClusterView::NONE
        ));
    }

    /// Upstream's EventHandlingNodeUpdate, one row per node update of the suite and pod it
    /// should (or should not) unblock: the update's event kinds, and whether the hints of the
    /// plugin that rejected the pod move it.
    #[test]
    fn event_handling_node_updates_requeue_the_pods_they_unblock() {
        use crate::api::{Affinity, NodeBuilder, Toleration, TolerationOp};
        let hints = QueueingHints::from_profile(&Profile::default_profile());
        let taint = |key: &str| Taint::new(key, "", TaintEffect::NoSchedule);
        let tolerates = |key: &str| Toleration::new(key, TolerationOp::Exists, "", Some(TaintEffect::NoSchedule));
        let base = |name: &str, cpu: i64, mem: i64, t: &str| {
            Node::builder(name).resources(cpu, mem, 3000).label(HOST, name).taint(taint(t))
        };
        let big = |name: &str| base(name, 4000, 32 << 30, "allow");
        // The suite's node templates: before and after their update.
        let unschedulable = (big("n").unschedulable(true).build(), big("n").build());
        let low_capacity = (
            base("n", 1, 1 << 20, "allow-noderesources").build(),
            base("n", 4000, 32 << 30, "allow-noderesources").build(),
        );
        let labelled = |b: NodeBuilder| {
            b.label("topology.kubernetes.io/zone", "zone1").label("affinity", "allow").label("topology", "allow")
        };
        let without_labels = (big("n").build(), labelled(big("n")).build());
        let unrelated_label = (big("n").build(), big("n").label("x", "y").build());
        let retainted = (big("n").build(), base("n", 4000, 32 << 30, "toleration-0").build());
        // The suite's pods, each tolerating the taint its nodes keep.
        let allow = tolerates("allow");
        let plain = Pod::builder("p").toleration(allow).build();
        let resources = Pod::builder("p")
            .toleration(tolerates("allow-noderesources"))
            .container("c", &[(Cpu, 350), (Memory, 3 << 30)])
            .build();
        let green = Affinity {
            pod_affinity: Some(crate::api::PodAffinity {
                required: vec![crate::testing::pod_affinity_term("color", "green", "topology.kubernetes.io/zone")],
                preferred: vec![],
            }),
            ..Affinity::default()
        };
        let ipa = Pod::builder("p").label("color", "green").toleration(allow).affinity(green).build();
        let node_affinity = Pod::builder("p").toleration(allow).node_selector("affinity", "allow").build();
        let blue = LabelSelector { match_labels: Labels::from_pairs([("color", "blue")]), ..Default::default() };
        let spread = Pod::builder("p")
            .label("color", "blue")
            .toleration(allow)
            .spread(TopologySpreadConstraint::new(1, "topology", blue))
            .build();
        let toleration = |i: usize| Pod::builder("p").toleration(tolerates(&format!("toleration-{i}"))).build();
        let (tolerates_0, tolerates_1) = (toleration(0), toleration(1));
        // (update, its event kinds, rejecting plugin, pod, moves)
        type Update = (Node, Node);
        let rows: Vec<(&Update, ActionType, &str, &Pod, bool)> = vec![
            (&unschedulable, ActionType::UPDATE_NODE_TAINT, node_unschedulable::NAME, &plain, true),
            (&low_capacity, ActionType::UPDATE_NODE_ALLOCATABLE, node_resources_fit::NAME, &resources, true),
            (&unrelated_label, ActionType::UPDATE_NODE_LABEL, node_resources_fit::NAME, &resources, false),
            (&without_labels, ActionType::UPDATE_NODE_LABEL, inter_pod_affinity::NAME, &ipa, true),
            (&without_labels, ActionType::UPDATE_NODE_LABEL, node_affinity::NAME, &node_affinity, true),
            (&without_labels, ActionType::UPDATE_NODE_LABEL, pod_topology_spread::NAME, &spread, true),
            (&unrelated_label, ActionType::UPDATE_NODE_LABEL, inter_pod_affinity::NAME, &ipa, false),
            (&unrelated_label, ActionType::UPDATE_NODE_LABEL, node_affinity::NAME, &node_affinity, false),
            (&unrelated_label, ActionType::UPDATE_NODE_LABEL, pod_topology_spread::NAME, &spread, false),
            (&retainted, ActionType::UPDATE_NODE_TAINT, taint_toleration::NAME, &tolerates_0, true),
            (&retainted, ActionType::UPDATE_NODE_TAINT, taint_toleration::NAME, &tolerates_1, false),
        ];
        for (i, ((old, new), action, plugin, pod, want)) in rows.into_iter().enumerate() {
            let event = Event::node_update(old, new).expect("the update changes the node");
            assert_eq!(event.kind.action, action, "row {i}: event kinds");
            assert_eq!(
                hints.worth_requeuing(pod, &[plugin], &event, crate::framework::ClusterView::NONE),
                want,
                "row {i}: {plugin}"
            );
        }
    }

    #[test]
    fn node_update_action_names_each_changed_part() {
        let base = || Node::builder("n").resources(1000, 1 << 30, 10);
        let action = |b: crate::api::NodeBuilder| node_update_action(&base().build(), &b.build());
        assert_eq!(action(base()), ActionType::NONE);
        assert_eq!(action(base().label("a", "b")), ActionType::UPDATE_NODE_LABEL);
        assert_eq!(action(base().unschedulable(true)), ActionType::UPDATE_NODE_TAINT);
        assert_eq!(action(base().taint(Taint::new("k", "v", TaintEffect::NoSchedule))), ActionType::UPDATE_NODE_TAINT);
        assert_eq!(action(Node::builder("n").resources(2000, 1 << 30, 10)), ActionType::UPDATE_NODE_ALLOCATABLE);
        assert_eq!(
            action(base().label("a", "b").annotation("x", "y")),
            ActionType::UPDATE_NODE_LABEL | ActionType::UPDATE_NODE_ANNOTATION
        );
        assert!(Event::node_update(&base().build(), &base().build()).is_none());
    }
}
