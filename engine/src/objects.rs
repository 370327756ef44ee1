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
//! priority by `admit_pod_priority`, the priority admission plugin's job) and
//! PodDisruptionBudgets (whose status `refresh_pdb_status` recomputes, the disruption
//! controller's job).

use std::sync::Arc;

pub use crate::api::AdmissionError;
use crate::api::{
    LabelSelector, Labels, Pod, PodDisruptionBudget, PreemptionPolicy, PriorityClass, StorageObjects, Sym,
};
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

    /// The pod as the priority admission plugin leaves it at creation: `priority` and
    /// `preemption_policy` taken from the class the pod names, or from the global default
    /// class (whose name is then recorded in `priority_class_name`) when it names none.
    ///
    /// Errors, with the plugin's wording: the named class does not exist
    /// (`spec.priorityClassName`); the pod states a priority other than the class's
    /// (`spec.priority`); the pod states `Never` and the class says `PreemptLowerPriority`
    /// (`spec.preemptionPolicy`).
    ///
    /// Differences, because our pod has no "unset" for these fields: a priority of 0 counts
    /// as unset (upstream rejects an explicit 0 that differs from the class's value), and
    /// `PreemptLowerPriority` counts as unset (a class saying `Never` wins over it). A pod
    /// that names no class in a cluster without a default class is returned unchanged, so a
    /// stated priority stands (upstream would reject a non-zero one); tests and synthetic
    /// clusters state priorities that way.
    pub fn admit_pod_priority(&self, pod: &Pod) -> Result<Pod, AdmissionError> {
        let err = |field: &str, message: String| AdmissionError::new(format!("pod {}", pod.key()), field, message);
        let class = match pod.priority_class_name {
            Some(name) => self
                .priority_class(name)
                .ok_or_else(|| err("spec.priorityClassName", format!("no PriorityClass with name {name} was found")))?,
            None => match self.default_priority_class() {
                Some(pc) => pc.clone(),
                None => return Ok(pod.clone()),
            },
        };
        if pod.priority != 0 && pod.priority != class.value {
            return Err(err(
                "spec.priority",
                format!(
                    "the integer value of priority ({}) must not be provided in pod spec; priority admission \
                     controller computed {} from the given PriorityClass name",
                    pod.priority, class.value
                ),
            ));
        }
        if pod.preemption_policy == PreemptionPolicy::Never && class.preemption_policy != PreemptionPolicy::Never {
            return Err(err(
                "spec.preemptionPolicy",
                "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission \
                 controller computed PreemptLowerPriority from the given PriorityClass name"
                    .to_owned(),
            ));
        }
        let resolved = (Some(class.name), class.value, class.preemption_policy);
        if (pod.priority_class_name, pod.priority, pod.preemption_policy) == resolved {
            return Ok(pod.clone());
        }
        Ok(pod.with_resolved_priority(resolved.0, resolved.1, resolved.2))
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

    /// Recomputes every budget's status from `pods` (all pods of the cluster), as the
    /// disruption controller would:
    /// - expected = the pods the budget selects (upstream uses the controllers' scale for
    ///   `maxUnavailable` and percentage `minAvailable`; we have no scale subresource);
    /// - `disrupted_pods` keeps only names of selected pods not yet being deleted (a name
    ///   whose pod is gone or terminating is dropped; we have no clock, so no expiry);
    /// - healthy = selected pods that are bound (our stand-in for Ready), not terminating and
    ///   not in `disrupted_pods`;
    /// - `disruptions_allowed` = `compute_disruptions_allowed(healthy, expected)`.
    ///
    /// Costs one pass over `pods` per budget.
    pub fn refresh_pdb_status<'a>(&mut self, pods: impl Iterator<Item = &'a Pod> + Clone) {
        for pdb in &mut self.pdbs {
            let selected = pods.clone().filter(|p| pdb.selects(p));
            let disrupted: Vec<Arc<str>> = pdb
                .disrupted_pods
                .iter()
                .filter(|name| selected.clone().any(|p| p.name == **name && !p.is_terminating()))
                .cloned()
                .collect();
            let mut expected = 0i32;
            let mut healthy = 0i32;
            for p in selected {
                expected = expected.saturating_add(1);
                if p.node_name.is_some() && !p.is_terminating() && !disrupted.iter().any(|n| *n == p.name) {
                    healthy = healthy.saturating_add(1);
                }
            }
            pdb.disrupted_pods = disrupted;
            pdb.disruptions_allowed = pdb.compute_disruptions_allowed(healthy, expected);
        }
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

    #[test]
    fn admit_pod_priority_table() {
        let with_default = |o: &mut ClusterObjects| o.upsert_priority_class(class("dflt", 100, true, Never));
        // (name, has default class, pod, want Ok((class name, priority, policy)) or Err(field))
        type Want = Result<(Option<&'static str>, i32, PreemptionPolicy), &'static str>;
        let cases: Vec<(&str, bool, Pod, Want)> = vec![
            (
                "named class",
                false,
                Pod::builder("p").priority_class_name("high").build(),
                Ok((Some("high"), 1000, Lower)),
            ),
            (
                "named class with Never",
                false,
                Pod::builder("p").priority_class_name("batch").build(),
                Ok((Some("batch"), -10, Never)),
            ),
            (
                "built-in class",
                false,
                Pod::builder("p").priority_class_name("system-node-critical").build(),
                Ok((Some("system-node-critical"), 2_000_001_000, Lower)),
            ),
            (
                "unknown class",
                false,
                Pod::builder("p").priority_class_name("nope").build(),
                Err("spec.priorityClassName"),
            ),
            (
                "named class wins over the default",
                true,
                Pod::builder("p").priority_class_name("high").build(),
                Ok((Some("high"), 1000, Lower)),
            ),
            ("no class, default class", true, Pod::builder("p").build(), Ok((Some("dflt"), 100, Never))),
            ("no class, no default: unchanged", false, Pod::builder("p").priority(7).build(), Ok((None, 7, Lower))),
            (
                "stated priority equal to the class's",
                false,
                Pod::builder("p").priority_class_name("high").priority(1000).build(),
                Ok((Some("high"), 1000, Lower)),
            ),
            (
                "stated priority differs from the class's",
                false,
                Pod::builder("p").priority_class_name("high").priority(5).build(),
                Err("spec.priority"),
            ),
            (
                "stated priority differs from the default's",
                true,
                Pod::builder("p").priority(5).build(),
                Err("spec.priority"),
            ),
            (
                "stated Never, class says PreemptLowerPriority",
                false,
                Pod::builder("p").priority_class_name("high").preemption_policy(Never).build(),
                Err("spec.preemptionPolicy"),
            ),
            (
                "stated Never, class says Never",
                false,
                Pod::builder("p").priority_class_name("batch").preemption_policy(Never).build(),
                Ok((Some("batch"), -10, Never)),
            ),
        ];
        for (name, has_default, pod, want) in cases {
            let mut o = ClusterObjects::new();
            o.upsert_priority_class(class("high", 1000, false, Lower));
            o.upsert_priority_class(class("batch", -10, false, Never));
            if has_default {
                with_default(&mut o);
            }
            match (o.admit_pod_priority(&pod), want) {
                (Ok(got), Ok((class_name, priority, policy))) => {
                    assert_eq!(got.priority_class_name.map(|c| c.as_str()), class_name, "{name}");
                    assert_eq!((got.priority, got.preemption_policy), (priority, policy), "{name}");
                    assert_eq!(got.uid, pod.uid, "{name}");
                }
                (Err(e), Err(field)) => {
                    assert_eq!((e.object.as_str(), e.field.as_str()), ("pod default/p", field), "{name}");
                    assert!(e.to_string().starts_with(&format!("pod default/p: {field}: ")), "{name}: {e}");
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn admit_pod_priority_error_messages_use_upstream_wording() {
        let mut o = ClusterObjects::new();
        o.upsert_priority_class(class("high", 1000, false, Lower));
        let unknown = o.admit_pod_priority(&Pod::builder("p").priority_class_name("nope").build()).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "pod default/p: spec.priorityClassName: no PriorityClass with name nope was found"
        );
        let stated =
            o.admit_pod_priority(&Pod::builder("p").priority_class_name("high").priority(5).build()).unwrap_err();
        assert_eq!(
            stated.message,
            "the integer value of priority (5) must not be provided in pod spec; priority admission controller \
             computed 1000 from the given PriorityClass name"
        );
        let already = Pod::builder("q").priority_class_name("high").priority(1000).build();
        assert!(o.admit_pod_priority(&already).unwrap().same_spec(&already), "nothing to resolve: same spec");
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
    use crate::util::time::Timestamp;

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

    #[test]
    fn refresh_pdb_status_table() {
        let web = |name: &str| Pod::builder(name).label("app", "web");
        let bound = |name: &str| web(name).node_name("n1").build();
        let pods = [
            bound("w1"),
            bound("w2"),
            bound("w3"),
            web("pending").build(),
            web("dying").node_name("n1").deletion_timestamp(Timestamp(1)).build(),
            Pod::builder("db").label("app", "db").node_name("n1").build(),
            Pod::builder("w-other-ns").namespace("prod").label("app", "web").node_name("n1").build(),
        ];
        // 5 selected (w1..w3, pending, dying), 3 healthy.
        let disrupted = |names: &[&str]| names.iter().map(|n| Arc::<str>::from(*n)).collect::<Vec<_>>();
        // (name, budget, want disruptions_allowed, want disrupted_pods)
        let cases: Vec<(&str, PodDisruptionBudget, i32, Vec<Arc<str>>)> = vec![
            ("minAvailable 2 of 3 healthy", pdb("b", Some(IntOrPercent::Int(2)), None), 1, vec![]),
            ("minAvailable 60% of 5 expected", pdb("b", Some(IntOrPercent::Percent(60)), None), 0, vec![]),
            ("minAvailable 40% of 5 expected", pdb("b", Some(IntOrPercent::Percent(40)), None), 1, vec![]),
            ("maxUnavailable 2 of 5 expected", pdb("b", None, Some(IntOrPercent::Int(2))), 0, vec![]),
            ("maxUnavailable 100%", pdb("b", None, Some(IntOrPercent::Percent(100))), 3, vec![]),
            (
                "disrupted healthy pod is not healthy; gone and dying names dropped",
                PodDisruptionBudget {
                    disrupted_pods: disrupted(&["w1", "gone", "dying", "pending"]),
                    ..pdb("b", Some(IntOrPercent::Int(1)), None)
                },
                1,
                disrupted(&["w1", "pending"]),
            ),
            ("selects nothing", PodDisruptionBudget { selector: None, ..pdb("b", None, None) }, 0, vec![]),
        ];
        for (name, budget, want_allowed, want_disrupted) in cases {
            let mut o = ClusterObjects::new();
            o.upsert_pdb(PodDisruptionBudget { disruptions_allowed: 99, ..budget });
            o.refresh_pdb_status(pods.iter());
            assert_eq!(o.pdbs[0].disruptions_allowed, want_allowed, "{name}");
            assert_eq!(o.pdbs[0].disrupted_pods, want_disrupted, "{name}");
        }
    }
}
