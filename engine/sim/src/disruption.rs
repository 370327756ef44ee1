//! The disruption controller: PodDisruptionBudget status recomputed from the cluster's pods.

use std::sync::Arc;

use ksched_engine::api::Pod;
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
    for pdb in &mut objects.pdbs {
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

#[cfg(test)]
mod tests {
    use super::*;
    use ksched_engine::api::{IntOrPercent, LabelSelector, Labels, PodDisruptionBudget};
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
}
