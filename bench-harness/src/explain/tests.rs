use super::*;
use crate::simulate::tests::{manifests, node, pod};
use crate::simulate::{simulate, PodResult};
use ksched_engine::framework::Profile;
use ksched_engine::queue::QueueConfig;

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
    assert_eq!((p.node.as_str(), p.victims.clone()), ("n1", vec!["default/low".to_owned()]));
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
    assert_eq!(err("nope"), "pod \"nope\" is not in the manifests");
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
