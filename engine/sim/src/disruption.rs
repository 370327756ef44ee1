//! The disruption controller: PodDisruptionBudget status recomputed from the cluster's pods.

use std::sync::Arc;

use ksched_engine::api::{IntOrPercent, OwnerRef, Pod, Sym};
use ksched_engine::snapshot::objects::ClusterObjects;

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
pub fn refresh_pdb_status<'a>(objects: &mut ClusterObjects, pods: impl Iterator<Item = &'a Pod> + Clone) {
    refresh_pdb_status_scaled(objects, pods, &|_, _| None);
}

/// `refresh_pdb_status`, with the scale of the pods' controllers where `scale_of(namespace,
/// owner)` knows it: for `maxUnavailable` and a percentage `minAvailable`, expected is then
/// the sum of the scales of the selected pods' controllers (each counted once), as upstream
/// computes it, and pods whose controller's scale is unknown (or that have none) count one
/// each. So a budget stays exhausted while an evicted pod's replacement is not yet running.
pub fn refresh_pdb_status_scaled<'a>(
    objects: &mut ClusterObjects,
    pods: impl Iterator<Item = &'a Pod> + Clone,
    scale_of: &dyn Fn(Sym, &OwnerRef) -> Option<i32>,
) {
    for pdb in &mut objects.pdbs {
        let selected = pods.clone().filter(|p| pdb.selects(p));
        let disrupted: Vec<Arc<str>> = pdb
            .disrupted_pods
            .iter()
            .filter(|name| selected.clone().any(|p| p.name == **name && !p.is_terminating()))
            .cloned()
            .collect();
        let by_scale = pdb.max_unavailable.is_some() || matches!(pdb.min_available, Some(IntOrPercent::Percent(_)));
        let mut expected = 0i32;
        let mut healthy = 0i32;
        let mut scaled: Vec<&OwnerRef> = Vec::new();
        for p in selected {
            let scale = p.owner.as_ref().filter(|_| by_scale).and_then(|o| Some((o, scale_of(p.namespace, o)?)));
            match scale {
                Some((o, _)) if scaled.contains(&o) => {}
                Some((o, n)) => {
                    scaled.push(o);
                    expected = expected.saturating_add(n.max(0));
                }
                None => expected = expected.saturating_add(1),
            }
            if p.node_name.is_some() && !p.is_terminating() && !disrupted.iter().any(|n| *n == p.name) {
                healthy = healthy.saturating_add(1);
            }
        }
        pdb.disrupted_pods = disrupted;
        pdb.disruptions_allowed = pdb.compute_disruptions_allowed(healthy, expected);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksched_engine::api::{LabelSelector, Labels, PodDisruptionBudget};
    use ksched_engine::util::time::Timestamp;

    fn pdb(name: &str, min: Option<IntOrPercent>, max: Option<IntOrPercent>) -> PodDisruptionBudget {
        let web = LabelSelector { match_labels: Labels::from_pairs([("app", "web")]), ..Default::default() };
        PodDisruptionBudget {
            min_available: min,
            max_unavailable: max,
            ..PodDisruptionBudget::new("default", name, web)
        }
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
            refresh_pdb_status(&mut o, pods.iter());
            assert_eq!(o.pdbs[0].disruptions_allowed, want_allowed, "{name}");
            assert_eq!(o.pdbs[0].disrupted_pods, want_disrupted, "{name}");
        }
    }

    #[test]
    fn refresh_pdb_status_scaled_counts_the_controllers_scale_as_expected() {
        // Two running pods of a ReplicaSet scaled to 3 (the third was evicted and its
        // replacement is pending), one bare pod.
        let rs = |name: &str| Pod::builder(name).label("app", "web").owner_ref("ReplicaSet", "rs", "u").node_name("n");
        let pods = [rs("a").build(), rs("b").build(), Pod::builder("bare").label("app", "web").node_name("n").build()];
        let scale_of = |_: Sym, o: &OwnerRef| (o.name.as_str() == "rs").then_some(3);
        // (budget, want allowed without scales, want allowed with them)
        let cases = [
            (pdb("b", None, Some(IntOrPercent::Int(1))), 1, 0),
            (pdb("b", Some(IntOrPercent::Percent(75)), None), 0, 0),
            (pdb("b", Some(IntOrPercent::Percent(50)), None), 1, 1),
            (pdb("b", Some(IntOrPercent::Int(2)), None), 1, 1),
        ];
        for (budget, plain, scaled) in cases {
            let mut o = ClusterObjects::new();
            o.upsert_pdb(budget.clone());
            refresh_pdb_status(&mut o, pods.iter());
            assert_eq!(o.pdbs[0].disruptions_allowed, plain, "{budget:?} without scales");
            refresh_pdb_status_scaled(&mut o, pods.iter(), &scale_of);
            assert_eq!(o.pdbs[0].disruptions_allowed, scaled, "{budget:?} with scales");
        }
    }
}
