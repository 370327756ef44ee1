use super::*;
use crate::simulate::tests::{manifests, node, pod};
use crate::simulate::{simulate, PodResult};
use ksched_engine::framework::Profile;
use ksched_engine::queue::QueueConfig;
use target::Target;

fn explain_in(files: &[(&str, &str)], wanted: &str, seed: u64) -> ExplainReport {
    explain(
        &manifests(files),
        wanted,
        Profile::default_profile(),
        QueueConfig::new(),
        seed,
        crate::simulate::Timing::default(),
        1,
    )
    .unwrap()
}

/// Four nodes each rejecting the pod for another reason, two that fit (one preferred).
fn mixed_cluster() -> String {
    node("small", "1", "")
        + &node("tainted", "8", "taints: [{key: k, value: v, effect: NoSchedule}]")
        + &node("cordoned", "8", "unschedulable: true")
        // Tainted and too small: the first failing plugin is TaintToleration (earlier in the
        // profile), NodeResourcesFit fails too.
        + &node("both", "1", "taints: [{key: k, value: v, effect: NoSchedule}]")
        + &node("fit-1", "8", "")
        + &node("fit-2", "8", "")
}

#[test]
fn explain_first_failing_filter_per_node_is_the_schedulers_verdict() {
    let r = explain_in(&[("c", &mixed_cluster()), ("p", &pod("web", "2", ""))], "web", 1);
    let rejected: Vec<(&str, &str)> =
        r.nodes.iter().filter_map(|n| n.rejected_by.as_ref().map(|s| (n.node.as_str(), s.plugin.as_str()))).collect();
    assert_eq!(
        rejected,
        [
            ("small", "NodeResourcesFit"),
            ("tainted", "TaintToleration"),
            ("cordoned", "NodeUnschedulable"),
            ("both", "TaintToleration")
        ]
    );
    // Every plugin before the rejecting one passed; the later failures are listed too.
    for n in &r.nodes {
        let Some(by) = &n.rejected_by else { continue };
        let pos = n.filters.iter().position(|f| f.plugin == by.plugin).expect("rejecting plugin listed");
        assert!(n.filters[..pos].iter().all(|f| f.code == "Success" || f.code == "Skipped"), "{}", n.node);
        assert_eq!(n.filters[pos].message, by.message, "{}", n.node);
    }
    let both = r.nodes.iter().find(|n| n.node == "both").unwrap();
    let fit = both.filters.iter().find(|f| f.plugin == "NodeResourcesFit").unwrap();
    assert_eq!((fit.code.as_str(), fit.message.as_str()), ("UnschedulableAndUnresolvable", "Insufficient cpu"));
    // Selected among the feasible nodes, with the scores adding up.
    assert_eq!(r.result.as_deref(), Some("scheduled"));
    let selected = r.selected_node.clone().expect("selected");
    assert!(["fit-1", "fit-2"].contains(&selected.as_str()), "{selected}");
    for n in r.nodes.iter().filter(|n| n.feasible) {
        let sum: i64 = n.scores.iter().map(|s| s.weighted).sum();
        assert_eq!(n.total, Some(sum), "{}", n.node);
        for s in &n.scores {
            assert_eq!(s.weighted, s.normalized * s.weight, "{} {}", n.node, s.plugin);
        }
    }
}

#[test]
fn explain_verdicts_add_up_to_the_cycles_fit_error() {
    let cluster = mixed_cluster().replace("name: fit-1", "name: fit-x").replace("cpu: \"8\"", "cpu: \"1\"");
    let r = explain_in(&[("c", &cluster), ("p", &pod("web", "2", ""))], "default/web", 1);
    assert_eq!(r.result.as_deref(), Some("unschedulable"));
    // Count the explained verdicts as FitError does and compare with the cycle's own text.
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for n in &r.nodes {
        let by = n.rejected_by.as_ref().expect("every node rejected");
        for reason in by.message.split(", ") {
            *counts.entry(reason.to_owned()).or_default() += 1;
        }
    }
    let mut parts: Vec<String> = counts.iter().map(|(reason, c)| format!("{c} {reason}")).collect();
    parts.sort();
    let want = format!("0/{} nodes are available: {}.", r.nodes.len(), parts.join(", "));
    let got = r.fit_error.clone().unwrap_or_default();
    assert!(got.starts_with(&want), "explained: {want}\ncycle: {got}");
    assert!(r.nodes.iter().all(|n| n.scores.is_empty()));
}

#[test]
fn explain_selects_the_node_simulate_picks_for_every_seed() {
    // Eight identical nodes: every one ties, and the tie-break decides.
    let cluster: String = (0..8).map(|i| node(&format!("n{i}"), "4", "")).collect();
    let pods = pod("a", "100m", "") + &pod("b", "100m", "") + &pod("c", "100m", "");
    let files = [("c", cluster.as_str()), ("p", pods.as_str())];
    let m = manifests(&files);
    for seed in 1..=6 {
        let sim = simulate(&m, Profile::default_profile(), QueueConfig::new(), seed).unwrap();
        for wanted in ["default/a", "default/c"] {
            let r = explain_in(&files, wanted, seed);
            let simulated = sim.pods.iter().find(|p| p.pod == wanted).and_then(|p| p.node.clone());
            assert_eq!(r.selected_node, simulated, "seed {seed} {wanted}");
            assert!(r.tied.contains(r.selected_node.as_ref().unwrap()), "seed {seed}: {:?}", r.tied);
            assert_eq!(r.final_result, PodResult::Scheduled);
        }
    }
}

#[test]
fn explain_shows_the_preemption_of_a_pod_that_did_not_fit() {
    let cluster = node("n1", "1", "")
        + "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n"
        + &pod("low", "800m", "nodeName: n1, ");
    let r = explain_in(&[("c", &cluster), ("p", &pod("urgent", "800m", "priorityClassName: high, "))], "urgent", 1);
    assert_eq!(r.priority, 1000);
    assert_eq!(r.result.as_deref(), Some("unschedulable"));
    let p = r.preemption.as_ref().expect("preemption");
    assert_eq!((p.node.as_deref(), p.victims.clone()), (Some("n1"), vec!["default/low".to_owned()]));
    assert_eq!((r.final_result, r.final_node.as_deref(), r.final_attempts), (PodResult::Scheduled, Some("n1"), 2));
    let t = table(&r, 20);
    assert!(t.contains("preemption: nominated to n1, deleting default/low"), "{t}");
    assert!(t.contains("NodeResourcesFit: Insufficient cpu"), "{t}");
}

#[test]
fn explain_rejects_unknown_ambiguous_and_bound_pods() {
    let cluster = node("n1", "1", "") + &pod("running", "1m", "nodeName: n1, ");
    let two = pod("web", "1m", "") + &pod("web", "1m", "").replace("labels:", "namespace: other, labels:");
    let files = [("c", cluster.as_str()), ("p", two.as_str())];
    let m = manifests(&files);
    let err = |wanted: &str| {
        explain(&m, wanted, Profile::default_profile(), QueueConfig::new(), 1, crate::simulate::Timing::default(), 1)
            .map(|_| ())
            .unwrap_err()
    };
    assert_eq!(
        err("nope"),
        "pod \"nope\" is not in the manifests; closest names: default/web, other/web, default/running"
    );
    assert!(err("web").contains("ambiguous: default/web, other/web"), "{}", err("web"));
    assert!(err("running").contains("already bound to node n1"), "{}", err("running"));
    assert!(explain(
        &m,
        "other/web",
        Profile::default_profile(),
        QueueConfig::new(),
        1,
        crate::simulate::Timing::default(),
        1
    )
    .is_ok());
}

#[test]
fn explain_attempt_after_preemption_is_the_retry_on_the_nominated_node() {
    let cluster = node("n1", "1", "")
        + "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n"
        + &pod("low", "800m", "nodeName: n1, ");
    let pods = pod("urgent", "800m", "priorityClassName: high, ");
    let m = manifests(&[("c", &cluster), ("p", &pods)]);
    let at = |attempt| {
        explain(
            &m,
            "urgent",
            Profile::default_profile(),
            QueueConfig::new(),
            1,
            crate::simulate::Timing::default(),
            attempt,
        )
    };
    let first = at(1).unwrap();
    assert_eq!((first.attempt, first.attempts, first.result.as_deref()), (1, 2, Some("unschedulable")));
    assert!(first.preemption.is_some());
    let second = at(2).unwrap();
    assert_eq!(second.result.as_deref(), Some("scheduled"));
    assert_eq!(second.nominated_node.as_deref(), Some("n1"), "the retry starts nominated");
    assert_eq!(second.selection.as_deref(), Some("nominated node fits"));
    assert_eq!(second.selected_node.as_deref(), Some("n1"));
    assert!(second.cycles_before > first.cycles_before);
    let n1 = second.nodes.iter().find(|n| n.node == "n1").unwrap();
    assert!(n1.feasible && n1.evaluated);
    let err = at(3).unwrap_err();
    assert!(err.contains("had 2 scheduling attempt(s)") && err.contains("--attempt 3"), "{err}");
    assert!(at(0).is_err());
}

/// An in-process extender: fails node `a`, scores node `c` 10 and the others 0.
struct FakeExtender;

impl ksched_engine::framework::extender::Extender for FakeExtender {
    fn name(&self) -> &str {
        "fake"
    }
    fn is_interested(&self, _: &ksched_engine::api::Pod) -> bool {
        true
    }
    fn is_filter(&self) -> bool {
        true
    }
    fn is_prioritizer(&self) -> bool {
        true
    }
    fn supports_preemption(&self) -> bool {
        false
    }
    fn is_binder(&self) -> bool {
        false
    }
    fn is_ignorable(&self) -> bool {
        false
    }
    fn weight(&self) -> i64 {
        2
    }
    fn filter(
        &self,
        _: &ksched_engine::api::Pod,
        nodes: &[&ksched_engine::snapshot::node_info::NodeInfo],
    ) -> Result<
        ksched_engine::framework::extender::ExtenderFilterResult,
        ksched_engine::framework::extender::ExtenderError,
    > {
        let (failed, kept): (Vec<_>, Vec<_>) = nodes.iter().map(|n| n.name()).partition(|n| n.as_str() == "a");
        Ok(ksched_engine::framework::extender::ExtenderFilterResult {
            nodes: kept,
            failed: failed.into_iter().map(|n| (n, "no GPU left".to_owned())).collect(),
            failed_unresolvable: Vec::new(),
        })
    }
    fn prioritize(
        &self,
        _: &ksched_engine::api::Pod,
        nodes: &[&ksched_engine::snapshot::node_info::NodeInfo],
    ) -> Result<Vec<(ksched_engine::api::Sym, i64)>, ksched_engine::framework::extender::ExtenderError> {
        Ok(nodes.iter().map(|n| (n.name(), if n.name().as_str() == "c" { 10 } else { 0 })).collect())
    }
    fn process_preemption(
        &self,
        _: &ksched_engine::api::Pod,
        _: &[(ksched_engine::api::Sym, ksched_engine::framework::extender::ExtenderVictims)],
        _: &ksched_engine::snapshot::Snapshot,
    ) -> Result<
        Vec<(ksched_engine::api::Sym, ksched_engine::framework::extender::ExtenderVictims)>,
        ksched_engine::framework::extender::ExtenderError,
    > {
        unreachable!("no preempt verb")
    }
    fn bind(
        &self,
        _: &ksched_engine::api::Pod,
        _: ksched_engine::api::Sym,
    ) -> Result<(), ksched_engine::framework::extender::ExtenderError> {
        unreachable!("no bind verb")
    }
}

#[test]
fn explain_extender_rows_are_the_explained_cycles_calls() {
    let cluster = node("a", "8", "") + &node("b", "8", "") + &node("c", "8", "");
    let pods = pod("first", "1", "") + &pod("web", "1", "");
    let mut profile = Profile::default_profile();
    profile.extenders = vec![std::sync::Arc::new(FakeExtender)];
    let r = explain(
        &manifests(&[("c", &cluster), ("p", &pods)]),
        "web",
        profile,
        QueueConfig::new(),
        1,
        crate::simulate::Timing::default(),
        1,
    )
    .unwrap();
    assert_eq!(r.selected_node.as_deref(), Some("c"));
    // The node the extender failed passed every Filter plugin, and is rejected by it.
    let a = r.nodes.iter().find(|n| n.node == "a").unwrap();
    let by = a.rejected_by.as_ref().map(|s| (s.plugin.as_str(), s.code.as_str(), s.message.as_str()));
    assert_eq!((a.feasible, by), (false, Some(("extender fake", "Unschedulable", "no GPU left"))));
    assert!(a.filters.iter().all(|f| f.code == "Success" || f.code == "Skipped"), "{:?}", a.filters);
    // Only web's cycle: one filter and one prioritize call (first's cycle made two more).
    let verbs: Vec<&str> = r.extenders.iter().map(|e| e.verb.as_str()).collect();
    assert_eq!(verbs, ["filter", "prioritize"]);
    let f = &r.extenders[0];
    assert_eq!((f.extender.as_str(), f.sent), ("fake", 3));
    let failed: Vec<(&str, &str, &str)> =
        f.failed.iter().map(|x| (x.node.as_str(), x.code.as_str(), x.reason.as_str())).collect();
    assert_eq!(failed, [("a", "Unschedulable", "no GPU left")]);
    let scores: Vec<(&str, i64, i64)> =
        r.extenders[1].scores.iter().map(|s| (s.node.as_str(), s.raw, s.weighted)).collect();
    assert_eq!(scores, [("b", 0, 0), ("c", 10, 200)]);
    let text = table(&r, 10);
    assert!(text.contains("Extenders (one row per call)") && text.contains("a Unschedulable: no GPU left"), "{text}");
    assert!(text.contains("c 10 → 200"), "{text}");
}

#[test]
fn explain_pod_of_an_ordered_ready_stateful_set_follows_its_late_creation() {
    // db-1 is created only once db-0 is bound (OrderedReady, run by the controllers' event
    // source as in simulate); per-host anti-affinity then keeps it off db-0's node.
    let set = "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  replicas: 2\n  \
               selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      \
               affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: \
               [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}}]}}\n      \
               containers: [{name: c, resources: {requests: {cpu: 100m}}}]\n";
    let cluster = node("a", "4", "") + &node("b", "4", "");
    let files = [("cluster.yaml", cluster.as_str()), ("db.yaml", set)];
    let first = explain_in(&files, "db-0", 1);
    let second = explain_in(&files, "default/db-1", 1);
    assert_eq!((first.final_result, second.final_result), (PodResult::Scheduled, PodResult::Scheduled));
    assert_eq!(second.attempts, 1);
    let (n0, n1) = (first.final_node.unwrap(), second.final_node.unwrap());
    assert_ne!(n0, n1);
    let rejected = second.nodes.iter().find(|n| n.node == n0).and_then(|n| n.rejected_by.clone()).unwrap();
    assert_eq!(rejected.plugin, "InterPodAffinity");
}

#[test]
fn explain_pod_of_a_second_profile_is_explained_with_that_profile() {
    let cfg = ksched_engine::config::from_value(
        serde_json::json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"schedulerName": "default-scheduler"},
                {"schedulerName": "packer", "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "ImageLocality"}]}}}
            ]
        }),
        &ksched_engine::config::Registry::in_tree(),
    )
    .unwrap();
    let pods = pod("plain", "100m", "") + &pod("packed", "100m", "schedulerName: packer, ");
    let cluster = node("a", "4", "") + &node("b", "4", "");
    let m = manifests(&[("c", cluster.as_str()), ("p", pods.as_str())]);
    let scored = |wanted: &str| -> Vec<String> {
        let r = explain(&m, wanted, cfg.all_profiles(), QueueConfig::new(), 1, crate::simulate::Timing::default(), 1)
            .unwrap();
        assert_eq!(r.final_result, PodResult::Scheduled, "{wanted}");
        let mut plugins: Vec<String> = r.nodes[0].scores.iter().map(|c| c.plugin.clone()).collect();
        plugins.dedup();
        plugins
    };
    assert_eq!(scored("packed"), ["ImageLocality"]);
    assert!(scored("plain").contains(&"NodeResourcesBalancedAllocation".to_owned()));
}

/// `KIND/NAME` (kubectl's words), name prefixes, `-n`, and the closest names when nothing
/// matches: what each target resolves to.
#[test]
fn explain_targets_follow_kubectls_habits() {
    let controllers = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  \
                       selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    \
                       spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n\
                       ---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: data}\nspec:\n  \
                       replicas: 2\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    \
                       spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n";
    let pods = pod("api-0", "100m", "")
        + &pod("api-1", "100m", "")
        + &pod("solo", "100m", "")
        + &pod("api-0", "100m", "").replace("labels:", "namespace: shop, labels:")
        + &pod("running", "100m", "nodeName: n1, ");
    let cluster = node("n1", "8", "") + &node("n2", "8", "");
    let m = manifests(&[("c", cluster.as_str()), ("w", controllers), ("p", pods.as_str())]);
    enum Want {
        Pod(&'static str),
        List(&'static str, usize),
        Err(&'static str),
    }
    // (target, -n, what it resolves to)
    let cases: Vec<(&str, Option<&str>, Want)> = vec![
        ("solo", None, Want::Pod("default/solo")),
        ("sol", None, Want::Pod("default/solo")),
        ("shop/api-0", None, Want::Pod("shop/api-0")),
        ("api-0", Some("shop"), Want::Pod("shop/api-0")),
        ("pod/solo", None, Want::Pod("default/solo")),
        ("po/solo", None, Want::Pod("default/solo")),
        ("api-0", None, Want::Err("ambiguous: default/api-0, shop/api-0")),
        ("api", None, Want::List("pods named api*", 3)),
        ("api", Some("default"), Want::List("pods named api* in namespace default", 2)),
        ("deploy/web", None, Want::List("deployment default/web", 2)),
        ("deployments.apps/web", Some("default"), Want::List("deployment default/web", 2)),
        ("sts/db", None, Want::List("statefulset data/db", 2)),
        ("statefulset/db", Some("data"), Want::List("statefulset data/db", 2)),
        ("sts/db", Some("default"), Want::Err("statefulset \"db\" is not in the manifests in namespace default")),
        ("deploy/wbe", None, Want::Err("closest names: deployment/web")),
        ("ds/web", None, Want::Err("closest names: deployment/web")),
        ("pod/sol", None, Want::Err("pod \"sol\" is not in the manifests; closest names: default/solo")),
        ("xyz", Some("shop"), Want::Err("not in the manifests in namespace shop; closest names: shop/api-0")),
        ("running", None, Want::Err("already bound to node n1")),
    ];
    for (text, ns, want) in cases {
        let target = Target::parse(text, ns).unwrap();
        let got = explain_target(
            &m,
            &target,
            Profile::default_profile(),
            QueueConfig::new(),
            1,
            crate::simulate::Timing::default(),
            1,
        );
        match (got, want) {
            (Ok(Explained::Pod(r)), Want::Pod(key)) => {
                assert_eq!(r.pod, key, "{text}");
                assert_eq!(r.matched_prefix.is_some(), text == "sol", "{text}");
            }
            (Ok(Explained::Pods(list)), Want::List(title, n)) => {
                assert_eq!((list.target.as_str(), list.pods.len()), (title, n), "{text}: {list:?}");
                assert!(list.pods.iter().all(|p| p.result == "scheduled"), "{text}: {list:?}");
            }
            (Err(e), Want::Err(words)) => assert!(e.contains(words), "{text}: {e}"),
            (got, _) => panic!("{text} {ns:?}: got {got:?}"),
        }
    }
}

/// A controller's listing holds its bound pods (a dump's, adopted through its ReplicaSet)
/// beside the ones the run made, and the text says how each ended.
#[test]
fn explain_controller_listing_shows_bound_and_new_pods_with_outcomes() {
    let deploy = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  \
                  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    \
                  spec: {containers: [{name: c, resources: {requests: {cpu: \"3\"}}}]}\n";
    let cluster = node("n1", "4", "") + &node("n2", "4", "");
    let m = manifests(&[("c", cluster.as_str()), ("w", deploy)]);
    let target = Target::parse("deploy/web", None).unwrap();
    let Explained::Pods(list) = explain_target(
        &m,
        &target,
        Profile::default_profile(),
        QueueConfig::new(),
        1,
        crate::simulate::Timing::default(),
        1,
    )
    .unwrap() else {
        panic!("a listing")
    };
    let mut results: Vec<&str> = list.pods.iter().map(|p| p.result.as_str()).collect();
    results.sort_unstable();
    assert_eq!(results, ["scheduled", "scheduled", "unschedulable"]);
    let stuck = list.pods.iter().find(|p| p.result == "unschedulable").unwrap();
    assert!(stuck.reason.as_deref().unwrap_or("").contains("Insufficient cpu"), "{stuck:?}");
    let text = list_table(&list, false);
    assert!(text.starts_with("deployment default/web: 3 pod(s): 2 scheduled, 1 unschedulable\n"), "{text}");
    assert!(text.contains("explain one pod's cycles: ksched explain default/web-"), "{text}");
    let wide = list_table(&list, true);
    assert!(wide.contains("PRIORITY") && wide.contains("SOURCE") && !text.contains("SOURCE"), "{wide}");
    let json = serde_json::to_value(Explained::Pods(list)).unwrap();
    let attempt_2 = explain_target(
        &m,
        &target,
        Profile::default_profile(),
        QueueConfig::new(),
        1,
        crate::simulate::Timing::default(),
        2,
    );
    assert!(attempt_2.is_err_and(|e| e.contains("--attempt applies to one pod")));
    assert_eq!((json["kind"].as_str(), json["pods"].as_array().map(Vec::len)), (Some("Deployment"), Some(3)));
}

/// Preemption shows every candidate with its victims and the figures the pick compares, the
/// potential nodes where no victim set helps, and the criterion that chose the node.
#[test]
fn explain_preemption_lists_every_candidate_and_the_deciding_criterion() {
    let classes = "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n";
    let cluster = node("n1", "1", "")
        + &node("n2", "1", "")
        + &node("n3", "1", "")
        + &node("tainted", "1", "taints: [{key: k, value: v, effect: NoSchedule}]")
        + &pod("mid", "800m", "nodeName: n1, priority: 10, ")
        + &pod("low", "800m", "nodeName: n2, priority: 5, ")
        + &pod("top", "800m", "nodeName: n3, priority: 2000, ")
        + classes;
    let r = explain_in(&[("c", &cluster), ("p", &pod("urgent", "800m", "priorityClassName: high, "))], "urgent", 1);
    let p = r.preemption.as_ref().expect("preemption");
    assert_eq!(p.node.as_deref(), Some("n2"));
    assert_eq!(p.potential_nodes, 3, "the tainted node is unresolvable");
    type Row<'a> = (&'a str, Vec<(&'a str, i32)>, Option<i64>, i64);
    let candidates: Vec<Row> = p
        .candidates
        .iter()
        .map(|c| {
            let victims = c.victims.iter().map(|v| (v.pod.as_str(), v.priority)).collect();
            (c.node.as_str(), victims, c.highest_victim_priority, c.victim_count)
        })
        .collect();
    assert_eq!(
        candidates,
        [("n1", vec![("default/mid", 10)], Some(10), 1), ("n2", vec![("default/low", 5)], Some(5), 1)]
    );
    assert_eq!(p.candidates[1].victim_priority_sum, 5);
    let rejected: Vec<(&str, &str)> = p.dry_run_rejected.iter().map(|d| (d.node.as_str(), d.plugin.as_str())).collect();
    assert_eq!(rejected, [("n3", "DefaultPreemption")]);
    assert_eq!(p.dry_run_rejected[0].message, "No preemption victims found for incoming pod");
    assert_eq!(p.best_candidates, ["n2"]);
    assert_eq!(p.chosen_by.as_deref(), Some("lowest priority of the most important victim"));
    let text = table(&r, 20);
    assert!(text.contains("n2 chosen by: lowest priority of the most important victim"), "{text}");
    assert!(text.contains("n2 <- chosen") && text.contains("default/mid (10)"), "{text}");
    assert!(text.contains("no victim set on n3: DefaultPreemption: No preemption victims"), "{text}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["preemption"]["best_candidates"], serde_json::json!(["n2"]));
    assert_eq!(json["preemption"]["candidates"][0]["pdb_violations"], 0);
}

/// Every rejected node names a plugin, also those ruled out before filtering: a PreFilter
/// node set's (NodeAffinity on metadata.name) and, when PreFilter rejects the pod, all.
#[test]
fn explain_names_the_plugin_on_every_rejected_node() {
    let cluster = node("a", "4", "unschedulable: true") + &node("b", "4", "") + &node("c", "4", "");
    let narrowed = pod(
        "narrowed",
        "100m",
        "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: \
         [{matchFields: [{key: metadata.name, operator: In, values: [a]}]}]}}}, ",
    );
    let no_claim = pod("noclaim", "100m", "volumes: [{name: d, persistentVolumeClaim: {claimName: missing}}], ");
    let files = [("c", cluster.as_str()), ("p", &(narrowed + &no_claim))];
    // (pod, node, plugin, ruled out before filtering)
    let cases = [
        ("narrowed", "a", "NodeUnschedulable", false),
        ("narrowed", "b", "NodeAffinity", true),
        ("narrowed", "c", "NodeAffinity", true),
        ("noclaim", "a", "VolumeRestrictions", true),
        ("noclaim", "b", "VolumeRestrictions", true),
        ("noclaim", "c", "VolumeRestrictions", true),
    ];
    for (wanted, node, plugin, before) in cases {
        let r = explain_in(&files, wanted, 1);
        let n = r.nodes.iter().find(|n| n.node == node).unwrap_or_else(|| panic!("{wanted}: no {node}"));
        let by = n.rejected_by.as_ref().expect("rejected");
        assert_eq!((by.plugin.as_str(), n.ruled_out_by_pre_filter), (plugin, before), "{wanted} on {node}");
        let json = serde_json::to_value(&r).unwrap();
        for n in json["nodes"].as_array().unwrap() {
            assert_ne!(n["rejected_by"]["plugin"], "", "{wanted}: {n}");
        }
        let text = table(&r, 20);
        assert!(!text.contains(" : "), "an empty plugin name in\n{text}");
    }
}
