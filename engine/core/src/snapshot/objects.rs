//! Cluster objects other than nodes and pods that plugins consult: namespaces (for pod
//! affinity's namespace selectors), services and workload controllers (SelectorSpread,
//! ServiceAffinity, PodTopologySpread's system defaults) and storage (the volume filters).
//!
//! The cache keeps one `ClusterObjects` and publishes it with every snapshot (copy-on-write,
//! behind an `Arc`), so a cycle sees objects consistent with its nodes. Plugins read it in
//! PreFilter / PreScore and keep what they need in the cycle state; nothing here is read per
//! node.
//!
//! They also hold the scheduling policy objects: PriorityClasses (resolved into a pod's
//! priority at creation by the simulation's priority admission) and PodDisruptionBudgets
//! (whose status the simulation's disruption controller recomputes). Everything here is plain
//! data; what changes it lives outside the core.

pub use crate::api::AdmissionError;
use crate::api::{LabelSelector, Labels, Pod, PodDisruptionBudget, PriorityClass, StorageObjects, Sym};
use crate::util::hash::FxHashMap;

/// A Service: only what the scheduler uses (its pod selector).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub namespace: Sym,
    pub name: Sym,
    /// `spec.selector`; an empty selector selects nothing (as for Services upstream).
    pub selector: Labels,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControllerKind {
    ReplicationController,
    ReplicaSet,
    StatefulSet,
}

/// A workload controller's pod selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Controller {
    pub kind: ControllerKind,
    pub namespace: Sym,
    pub name: Sym,
    /// ReplicationControllers have a plain map selector, stored as `match_labels`.
    pub selector: LabelSelector,
}

/// Where the cluster's objects can be read as the informers hold them now (the cache): the
/// queue asks it for what PreEnqueue plugins and queueing hints read (`framework::ClusterView`).
pub trait ObjectsSource: Send + Sync {
    fn objects(&self) -> std::sync::Arc<ClusterObjects>;
}

#[derive(Clone, Debug, Default)]
pub struct ClusterObjects {
    /// Namespace name → its labels.
    pub namespaces: FxHashMap<Sym, Labels>,
    pub services: Vec<Service>,
    pub controllers: Vec<Controller>,
    pub storage: StorageObjects,
    /// PriorityClasses by name.
    pub priority_classes: FxHashMap<Sym, PriorityClass>,
    /// PodDisruptionBudgets with their status, in insertion order.
    pub pdbs: Vec<PodDisruptionBudget>,
    /// Dynamic Resource Allocation: device classes, slices, claims and templates.
    pub dra: crate::api::dra::DraObjects,
}

impl ClusterObjects {
    pub fn new() -> ClusterObjects {
        ClusterObjects::default()
    }

    /// Adds a namespace or replaces its labels.
    pub fn set_namespace(&mut self, name: Sym, labels: Labels) {
        self.namespaces.insert(name, labels);
    }

    /// The labels of namespace `name` (empty when unknown).
    pub fn namespace_labels(&self, name: Sym) -> Option<&Labels> {
        self.namespaces.get(&name)
    }

    /// Adds a service or replaces the one with the same namespace and name.
    pub fn upsert_service(&mut self, svc: Service) {
        match self.services.iter_mut().find(|s| s.namespace == svc.namespace && s.name == svc.name) {
            Some(s) => *s = svc,
            None => self.services.push(svc),
        }
    }

    pub fn remove_service(&mut self, namespace: Sym, name: Sym) {
        self.services.retain(|s| !(s.namespace == namespace && s.name == name));
    }

    /// Adds a controller or replaces the one with the same kind, namespace and name.
    pub fn upsert_controller(&mut self, c: Controller) {
        match self.controllers.iter_mut().find(|x| x.kind == c.kind && x.namespace == c.namespace && x.name == c.name) {
            Some(x) => *x = c,
            None => self.controllers.push(c),
        }
    }

    pub fn remove_controller(&mut self, kind: ControllerKind, namespace: Sym, name: Sym) {
        self.controllers.retain(|x| !(x.kind == kind && x.namespace == namespace && x.name == name));
    }

    /// Services in the pod's namespace whose selector selects the pod.
    pub fn services_selecting<'a>(&'a self, pod: &'a Pod) -> impl Iterator<Item = &'a Service> + 'a {
        self.services.iter().filter(move |s| {
            s.namespace == pod.namespace && !s.selector.is_empty() && pod.labels.is_superset_of(&s.selector)
        })
    }

    /// Controllers in the pod's namespace whose selector selects the pod.
    pub fn controllers_selecting<'a>(&'a self, pod: &'a Pod) -> impl Iterator<Item = &'a Controller> + 'a {
        self.controllers
            .iter()
            .filter(move |c| c.namespace == pod.namespace && !c.selector.is_empty() && c.selector.matches(&pod.labels))
    }

    /// The selector of "pods like this one": the AND of the selectors of every service,
    /// ReplicationController, ReplicaSet and StatefulSet selecting the pod (upstream's
    /// `DefaultSelector`). `None` when nothing selects the pod.
    pub fn default_selector(&self, pod: &Pod) -> Option<LabelSelector> {
        let mut out = LabelSelector::default();
        let mut any = false;
        for s in self.services_selecting(pod) {
            any = true;
            for l in s.selector.iter() {
                out.match_labels.insert(l.key, l.value);
            }
        }
        for c in self.controllers_selecting(pod) {
            any = true;
            for l in c.selector.match_labels.iter() {
                out.match_labels.insert(l.key, l.value);
            }
            out.match_expressions.extend(c.selector.match_expressions.iter().cloned());
        }
        any.then_some(out)
    }

    /// Adds a PriorityClass or replaces the one with the same name.
    pub fn upsert_priority_class(&mut self, pc: PriorityClass) {
        self.priority_classes.insert(pc.name, pc);
    }

    pub fn remove_priority_class(&mut self, name: Sym) {
        self.priority_classes.remove(&name);
    }

    /// The class named `name`: a stored one, else one of the two built-in classes
    /// (`system-node-critical`, `system-cluster-critical`), which every cluster has.
    pub fn priority_class(&self, name: Sym) -> Option<PriorityClass> {
        self.priority_classes.get(&name).cloned().or_else(|| PriorityClass::system(name))
    }

    /// The class whose value pods naming no class get: the `globalDefault` one. The API
    /// server allows only one, but when several are marked (a race upstream tolerates) the
    /// priority admission plugin takes the lowest value; ties go to the smallest name here.
    pub fn default_priority_class(&self) -> Option<&PriorityClass> {
        self.priority_classes
            .values()
            .filter(|pc| pc.global_default)
            .min_by(|a, b| a.value.cmp(&b.value).then_with(|| a.name.as_str().cmp(b.name.as_str())))
    }

    /// Adds a PodDisruptionBudget or replaces the one with the same namespace and name.
    pub fn upsert_pdb(&mut self, pdb: PodDisruptionBudget) {
        match self.pdbs.iter_mut().find(|p| p.namespace == pdb.namespace && p.name == pdb.name) {
            Some(p) => *p = pdb,
            None => self.pdbs.push(pdb),
        }
    }

    pub fn remove_pdb(&mut self, namespace: Sym, name: Sym) {
        self.pdbs.retain(|p| !(p.namespace == namespace && p.name == name));
    }

    /// The budgets of one namespace (the only ones that can cover its pods).
    pub fn pdbs_in(&self, namespace: Sym) -> impl Iterator<Item = &PodDisruptionBudget> + '_ {
        self.pdbs.iter().filter(move |p| p.namespace == namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(ns: &str, name: &str, sel: &[(&str, &str)]) -> Service {
        Service { namespace: Sym::new(ns), name: Sym::new(name), selector: Labels::from_pairs(sel.iter().copied()) }
    }

    #[test]
    fn default_selector_ands_services_and_controllers_in_the_pod_namespace() {
        let mut o = ClusterObjects::new();
        o.upsert_service(svc("default", "web", &[("app", "web")]));
        o.upsert_service(svc("other", "web", &[("app", "web"), ("x", "y")]));
        o.upsert_service(svc("default", "empty", &[]));
        o.upsert_controller(Controller {
            kind: ControllerKind::ReplicaSet,
            namespace: Sym::new("default"),
            name: Sym::new("web-1"),
            selector: LabelSelector { match_labels: Labels::from_pairs([("tier", "front")]), ..Default::default() },
        });
        let pod = Pod::builder("p").label("app", "web").label("tier", "front").build();
        let sel = o.default_selector(&pod).expect("selected");
        assert_eq!(sel.match_labels, Labels::from_pairs([("app", "web"), ("tier", "front")]));
        let lonely = Pod::builder("q").label("app", "db").build();
        assert!(o.default_selector(&lonely).is_none());
        o.upsert_service(svc("default", "web", &[("app", "db")]));
        assert_eq!(o.services.len(), 3, "upsert replaces by namespace/name");
        o.remove_service(Sym::new("default"), Sym::new("web"));
        assert_eq!(o.services.len(), 2);
    }

    use crate::api::PreemptionPolicy;

    fn class(name: &str, value: i32, global_default: bool, policy: PreemptionPolicy) -> PriorityClass {
        PriorityClass { name: Sym::new(name), value, global_default, preemption_policy: policy }
    }

    use PreemptionPolicy::{Never, PreemptLowerPriority as Lower};

    #[test]
    fn priority_classes_upsert_remove_and_builtins() {
        let mut o = ClusterObjects::new();
        o.upsert_priority_class(class("high", 1000, false, Lower));
        o.upsert_priority_class(class("high", 2000, false, Never));
        assert_eq!(o.priority_classes.len(), 1, "upsert replaces by name");
        assert_eq!(o.priority_class(Sym::new("high")), Some(class("high", 2000, false, Never)));
        assert_eq!(o.priority_class(Sym::new("system-node-critical")).map(|c| c.value), Some(2_000_001_000));
        assert_eq!(o.priority_class(Sym::new("system-cluster-critical")).map(|c| c.value), Some(2_000_000_000));
        o.upsert_priority_class(class("system-cluster-critical", 2_000_000_000, false, Never));
        assert_eq!(o.priority_class(Sym::new("system-cluster-critical")).map(|c| c.preemption_policy), Some(Never));
        o.remove_priority_class(Sym::new("high"));
        assert_eq!(o.priority_class(Sym::new("high")), None);
    }

    #[test]
    fn default_priority_class_table() {
        let cases: Vec<(&str, Vec<PriorityClass>, Option<&str>)> = vec![
            ("none stored", vec![], None),
            ("none marked", vec![class("a", 5, false, Lower)], None),
            ("one marked", vec![class("a", 5, false, Lower), class("b", 9, true, Lower)], Some("b")),
            (
                "several marked: lowest value",
                vec![class("a", 50, true, Lower), class("b", 9, true, Lower), class("c", 100, true, Lower)],
                Some("b"),
            ),
            ("equal values: smallest name", vec![class("z", 9, true, Lower), class("m", 9, true, Lower)], Some("m")),
        ];
        for (name, classes, want) in cases {
            let mut o = ClusterObjects::new();
            for c in classes {
                o.upsert_priority_class(c);
            }
            assert_eq!(o.default_priority_class().map(|c| c.name.as_str()), want, "{name}");
        }
    }

    fn pdb(name: &str, min: Option<IntOrPercent>, max: Option<IntOrPercent>) -> PodDisruptionBudget {
        let web = LabelSelector { match_labels: Labels::from_pairs([("app", "web")]), ..Default::default() };
        PodDisruptionBudget {
            min_available: min,
            max_unavailable: max,
            ..PodDisruptionBudget::new("default", name, web)
        }
    }

    use crate::api::IntOrPercent;

    #[test]
    fn pdbs_upsert_remove_and_by_namespace() {
        let mut o = ClusterObjects::new();
        o.upsert_pdb(pdb("a", Some(IntOrPercent::Int(1)), None));
        o.upsert_pdb(PodDisruptionBudget { namespace: Sym::new("prod"), ..pdb("a", None, None) });
        o.upsert_pdb(pdb("a", Some(IntOrPercent::Int(2)), None));
        assert_eq!(o.pdbs.len(), 2, "upsert replaces by namespace/name");
        let names: Vec<_> = o.pdbs_in(Sym::new("default")).map(|p| p.min_available).collect();
        assert_eq!(names, vec![Some(IntOrPercent::Int(2))]);
        o.remove_pdb(Sym::new("default"), Sym::new("a"));
        assert_eq!(o.pdbs_in(Sym::new("default")).count(), 0);
        assert_eq!(o.pdbs_in(Sym::new("prod")).count(), 1);
    }
}
