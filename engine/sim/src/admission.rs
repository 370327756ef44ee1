//! Priority admission: what the API server's priority admission plugin does to a pod at
//! creation (its PriorityClass, or the global default class, sets its priority and
//! preemption policy).

use ksched_engine::api::{AdmissionError, Pod, PreemptionPolicy};
use ksched_engine::snapshot::objects::ClusterObjects;

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
pub fn admit_pod_priority(objects: &ClusterObjects, pod: &Pod) -> Result<Pod, AdmissionError> {
    let err = |field: &str, message: String| AdmissionError::new(format!("pod {}", pod.key()), field, message);
    let class = match pod.priority_class_name {
        Some(name) => objects
            .priority_class(name)
            .ok_or_else(|| err("spec.priorityClassName", format!("no PriorityClass with name {name} was found")))?,
        None => match objects.default_priority_class() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use ksched_engine::api::PriorityClass;
    use ksched_engine::api::Sym;

    fn class(name: &str, value: i32, global_default: bool, policy: PreemptionPolicy) -> PriorityClass {
        PriorityClass { name: Sym::new(name), value, global_default, preemption_policy: policy }
    }

    use PreemptionPolicy::{Never, PreemptLowerPriority as Lower};

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
            match (admit_pod_priority(&o, &pod), want) {
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
        let unknown = admit_pod_priority(&o, &Pod::builder("p").priority_class_name("nope").build()).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "pod default/p: spec.priorityClassName: no PriorityClass with name nope was found"
        );
        let stated =
            admit_pod_priority(&o, &Pod::builder("p").priority_class_name("high").priority(5).build()).unwrap_err();
        assert_eq!(
            stated.message,
            "the integer value of priority (5) must not be provided in pod spec; priority admission controller \
             computed 1000 from the given PriorityClass name"
        );
        let already = Pod::builder("q").priority_class_name("high").priority(1000).build();
        assert!(admit_pod_priority(&o, &already).unwrap().same_spec(&already), "nothing to resolve: same spec");
    }
}
