use super::*;
use crate::manifest::Manifests;

/// Reads `text` and expands its workloads against its own pods and nodes (seed 7).
fn expand_text(text: &str) -> Expansion {
    let mut m = Manifests::new();
    m.read_str("f", text).unwrap_or_else(|e| panic!("{e}"));
    expand(&m.workloads, &m.pods, &m.nodes, 7).unwrap_or_else(|e| panic!("{e}"))
}

fn names(pods: &[CreatedPod]) -> Vec<String> {
    pods.iter().map(|p| p.pod.metadata.name.clone().unwrap_or_default()).collect()
}

fn label<'a>(p: &'a k::Pod, key: &str) -> Option<&'a str> {
    p.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn owner(p: &k::Pod) -> (String, String, bool) {
    let o = &p.metadata.owner_references.as_ref().unwrap()[0];
    (o.kind.clone(), o.name.clone(), o.controller == Some(true))
}

const NODES: &str = "
apiVersion: v1
kind: Node
metadata: {name: cp, labels: {role: cp}}
spec: {taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}
---
apiVersion: v1
kind: Node
metadata: {name: w1, labels: {disk: ssd}}
spec: {unschedulable: true, taints: [{key: node.kubernetes.io/unschedulable, effect: NoSchedule}]}
---
apiVersion: v1
kind: Node
metadata: {name: w2, labels: {disk: hdd}}
spec: {taints: [{key: node.kubernetes.io/memory-pressure, effect: NoSchedule}, {key: gpu, value: 'yes', effect: PreferNoSchedule}]}
---
apiVersion: v1
kind: Node
metadata: {name: w3, labels: {disk: ssd}}
spec: {taints: [{key: dedicated, value: db, effect: NoExecute}]}
";

fn workload(kind_and_spec: &str) -> String {
    format!("{NODES}---\n{kind_and_spec}")
}

#[test]
fn controllers_replica_kinds_create_named_labelled_owned_pods() {
    // (name, manifest, pod names' prefix, count, owner kind, owner name prefix, extra label)
    let template =
        "template: {metadata: {labels: {app: a}, annotations: {note: kept}}, spec: {containers: [{name: c}]}}";
    let cases = [
        (
            "Deployment",
            format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: prod}}\nspec: {{replicas: 3, selector: {{matchLabels: {{app: a}}}}, {template}}}\n"),
            "web-",
            3,
            "ReplicaSet",
            "web-",
            Some(POD_TEMPLATE_HASH),
        ),
        (
            "ReplicaSet",
            format!("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: rs, namespace: prod}}\nspec: {{replicas: 2, selector: {{matchLabels: {{app: a}}}}, {template}}}\n"),
            "rs-",
            2,
            "ReplicaSet",
            "rs",
            None,
        ),
        (
            "ReplicationController defaults its selector and replicas",
            format!("apiVersion: v1\nkind: ReplicationController\nmetadata: {{name: rc, namespace: prod}}\nspec: {{{template}}}\n"),
            "rc-",
            1,
            "ReplicationController",
            "rc",
            None,
        ),
    ];
    for (name, text, prefix, count, owner_kind, owner_prefix, extra) in cases {
        let e = expand_text(&text);
        assert_eq!(e.pods.len(), count, "{name}");
        for p in &e.pods {
            let pod_name = p.pod.metadata.name.as_deref().unwrap();
            assert!(pod_name.starts_with(prefix), "{name}: {pod_name}");
            let suffix = pod_name.rsplit('-').next().unwrap();
            assert_eq!(suffix.len(), 5, "{name}: {pod_name}");
            assert!(suffix.bytes().all(|b| ALPHANUMS.contains(&b)), "{name}: {pod_name}");
            assert_eq!(p.pod.metadata.namespace.as_deref(), Some("prod"), "{name}");
            assert_eq!(label(&p.pod, "app"), Some("a"), "{name}");
            assert_eq!(p.pod.metadata.annotations.as_ref().unwrap()["note"], "kept", "{name}");
            let (kind, owner_name, controller) = owner(&p.pod);
            assert_eq!(kind, owner_kind, "{name}");
            assert!(owner_name.starts_with(owner_prefix) && controller, "{name}: {owner_name}");
            if let Some(l) = extra {
                let hash = label(&p.pod, l).unwrap();
                assert_eq!(owner_name, format!("web-{hash}"), "{name}: the ReplicaSet is named by the template hash");
                assert!(pod_name.starts_with(&format!("web-{hash}-")), "{name}");
            }
        }
        let unique: HashSet<String> = names(&e.pods).into_iter().collect();
        assert_eq!(unique.len(), count, "{name}: names are unique");
        assert_eq!(e.controllers.len(), 1, "{name}: its selector is known to SelectorSpread");
    }
}

#[test]
fn controllers_names_come_from_the_seed() {
    let text = "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec: {replicas: 3, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c}]}}}\n";
    let mut m = Manifests::new();
    m.read_str("f", text).unwrap();
    let run = |seed| names(&expand(&m.workloads, &m.pods, &m.nodes, seed).unwrap().pods);
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn controllers_reconcile_only_creates_missing_replicas() {
    // (name, manifest with some of its pods present, pods created)
    let rs_pod = |name: &str, owner_kind: &str, owner: &str, node: &str| {
        format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: a}}, ownerReferences: [{{apiVersion: apps/v1, kind: {owner_kind}, name: {owner}, uid: u, controller: true}}]}}\nspec: {{{node}containers: [{{name: c}}]}}\n")
    };
    let tpl = "template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c}]}}";
    let cases = [
        (
            "ReplicaSet with 2 of 3",
            format!(
                "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: rs}}\nspec: {{replicas: 3, selector: {{matchLabels: {{app: a}}}}, {tpl}}}\n{}{}",
                rs_pod("rs-aaaaa", "ReplicaSet", "rs", "nodeName: w1, "),
                rs_pod("rs-bbbbb", "ReplicaSet", "rs", "")
            ),
            1,
        ),
        (
            "a pod of another ReplicaSet does not count",
            format!(
                "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: rs}}\nspec: {{replicas: 2, selector: {{matchLabels: {{app: a}}}}, {tpl}}}\n{}",
                rs_pod("other-aaaaa", "ReplicaSet", "other", "")
            ),
            2,
        ),
        (
            "Deployment whose ReplicaSet is in the input is left to it",
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec: {{replicas: 3, selector: {{matchLabels: {{app: a}}}}, {tpl}}}\n---\n\
                 apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: web-abc, ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: web, uid: d, controller: true}}]}}\n\
                 spec: {{replicas: 3, selector: {{matchLabels: {{app: a}}}}, {tpl}}}\n{}",
                rs_pod("web-abc-aaaaa", "ReplicaSet", "web-abc", "nodeName: w1, ")
            ),
            2,
        ),
        (
            "StatefulSet with ordinal 1 present",
            format!(
                "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: db}}\nspec: {{replicas: 3, podManagementPolicy: Parallel, selector: {{matchLabels: {{app: a}}}}, {tpl}}}\n{}",
                rs_pod("db-1", "StatefulSet", "db", "nodeName: w1, ")
            ),
            2,
        ),
        (
            "Job with one active pod of parallelism 3",
            format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nspec: {{parallelism: 3, template: {{spec: {{restartPolicy: Never, containers: [{{name: c}}]}}}}}}\n{}",
                rs_pod("j-aaaaa", "Job", "j", "")
            ),
            2,
        ),
        (
            "DaemonSet with its pod on w1 already (all nodes tolerated)",
            format!(
                "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: ds}}\nspec: {{selector: {{matchLabels: {{app: a}}}}, template: {{metadata: {{labels: {{app: a}}}}, spec: {{tolerations: [{{operator: Exists}}], containers: [{{name: c}}]}}}}}}\n{}",
                rs_pod("ds-aaaaa", "DaemonSet", "ds", "nodeName: w1, ")
            ),
            3,
        ),
    ];
    for (name, text, want) in cases {
        let e = expand_text(&workload(&text));
        assert_eq!(
            e.pods.len() + e.ordered.iter().map(|o| o.remaining.len()).sum::<usize>(),
            want,
            "{name}: {:?}",
            names(&e.pods)
        );
    }
}

#[test]
fn controllers_daemonset_runs_where_its_controller_would() {
    // (name, template spec fields, nodes that get a pod)
    let cases: [(&str, &str, &[&str]); 6] = [
        ("no tolerations: the controller's own cover unschedulable and memory-pressure", "", &["w1", "w2"]),
        ("tolerating the control plane", "tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}], ", &["cp", "w1", "w2"]),
        ("tolerating everything", "tolerations: [{operator: Exists}], ", &["cp", "w1", "w2", "w3"]),
        ("node selector", "nodeSelector: {disk: ssd}, tolerations: [{operator: Exists}], ", &["w1", "w3"]),
        (
            "required node affinity",
            "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: In, values: [hdd]}]}]}}}, ",
            &["w2"],
        ),
        ("NoExecute taint tolerated by value", "tolerations: [{key: dedicated, value: db, effect: NoExecute}], ", &["w1", "w2", "w3"]),
    ];
    for (name, spec, want) in cases {
        let text = format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent}}\nspec: {{selector: {{matchLabels: {{app: agent}}}}, template: {{metadata: {{labels: {{app: agent}}}}, spec: {{{spec}containers: [{{name: c}}]}}}}}}\n"
        );
        let e = expand_text(&workload(&text));
        let mut got = Vec::new();
        for p in &e.pods {
            let spec = p.pod.spec.as_ref().unwrap();
            let terms = &spec
                .affinity
                .as_ref()
                .unwrap()
                .node_affinity
                .as_ref()
                .unwrap()
                .required_during_scheduling_ignored_during_execution
                .as_ref()
                .unwrap()
                .node_selector_terms;
            assert_eq!(terms.len(), 1, "{name}: the pin replaces the template's required terms");
            let fields = terms[0].match_fields.as_ref().unwrap();
            assert_eq!((fields[0].key.as_str(), fields[0].operator.as_str()), ("metadata.name", "In"), "{name}");
            got.push(fields[0].values.as_ref().unwrap()[0].clone());
            let tolerations = spec.tolerations.as_ref().unwrap();
            for key in
                ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable"]
            {
                assert!(tolerations.iter().any(|t| t.key.as_deref() == Some(key)), "{name}: {key}");
            }
            assert!(
                !tolerations.iter().any(|t| t.key.as_deref() == Some("node.kubernetes.io/network-unavailable")),
                "{name}: only host-network daemons tolerate network-unavailable"
            );
            assert_eq!(owner(&p.pod).0, "DaemonSet");
            assert!(label(&p.pod, CONTROLLER_REVISION_HASH).is_some(), "{name}");
        }
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn controllers_daemonset_pod_for_a_later_node() {
    let text = workload("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec: {selector: {matchLabels: {app: agent}}, template: {metadata: {labels: {app: agent}}, spec: {hostNetwork: true, containers: [{name: c}]}}}\n");
    let mut m = Manifests::new();
    m.read_str("f", &text).unwrap();
    let Workload::DaemonSet(ds) = &m.workloads[0].0 else { panic!() };
    let mut rng = NameRng::new(1);
    let plain = Node::builder("late").build();
    let pod = daemon_pod_for_node(ds, "u", &plain, &mut rng, &m.workloads[0].1).unwrap().unwrap();
    let tolerations = pod.spec.as_ref().unwrap().tolerations.as_ref().unwrap();
    assert!(tolerations.iter().any(|t| t.key.as_deref() == Some("node.kubernetes.io/network-unavailable")));
    let tainted =
        Node::builder("late2").taint(ksched_engine::api::Taint::new("special", "", TaintEffect::NoSchedule)).build();
    assert!(daemon_pod_for_node(ds, "u", &tainted, &mut rng, &m.workloads[0].1).unwrap().is_none());
}

#[test]
fn controllers_statefulset_ordinals_labels_claims_and_ordering() {
    let set = |policy: &str| {
        workload(&format!(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: db, namespace: prod}}\nspec:\n  replicas: 3\n  {policy}\n  serviceName: db\n  \
             selector: {{matchLabels: {{app: db}}}}\n  template: {{metadata: {{labels: {{app: db}}}}, spec: {{containers: [{{name: c}}], volumes: [{{name: data, emptyDir: {{}}}}]}}}}\n  \
             volumeClaimTemplates:\n  - metadata: {{name: data, labels: {{tier: storage}}}}\n    spec: {{accessModes: [ReadWriteOnce], storageClassName: fast, resources: {{requests: {{storage: 1Gi}}}}}}\n  \
             - metadata: {{name: logs}}\n    spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}\n"
        ))
    };
    let parallel = expand_text(&set("podManagementPolicy: Parallel"));
    assert!(parallel.ordered.is_empty());
    assert_eq!(names(&parallel.pods), ["db-0", "db-1", "db-2"]);
    for (i, p) in parallel.pods.iter().enumerate() {
        assert_eq!(label(&p.pod, STATEFULSET_POD_NAME), Some(format!("db-{i}").as_str()));
        assert_eq!(label(&p.pod, POD_INDEX), Some(i.to_string().as_str()));
        assert_eq!(owner(&p.pod), ("StatefulSet".to_owned(), "db".to_owned(), true));
        let claims: Vec<&str> = p.claims.iter().map(|c| c.metadata.name.as_deref().unwrap()).collect();
        assert_eq!(claims, [format!("data-db-{i}"), format!("logs-db-{i}")]);
        assert_eq!(p.claims[0].metadata.namespace.as_deref(), Some("prod"));
        let claim_labels = p.claims[0].metadata.labels.as_ref().unwrap();
        assert_eq!((claim_labels["tier"].as_str(), claim_labels["app"].as_str()), ("storage", "db"));
        let volumes = p.pod.spec.as_ref().unwrap().volumes.as_ref().unwrap();
        assert_eq!(volumes.len(), 2, "the template's `data` volume is replaced by the claim");
        let claim_of = |v: &str| {
            volumes
                .iter()
                .find(|x| x.name == v)
                .and_then(|x| x.persistent_volume_claim.as_ref())
                .map(|c| c.claim_name.clone())
        };
        assert_eq!(claim_of("data"), Some(format!("data-db-{i}")));
        assert_eq!(claim_of("logs"), Some(format!("logs-db-{i}")));
    }
    for policy in ["", "podManagementPolicy: OrderedReady"] {
        let mut ordered = expand_text(&set(policy));
        assert!(ordered.pods.is_empty(), "{policy}");
        let set = &mut ordered.ordered[0];
        assert_eq!(set.waiting_for, None);
        let first = set.next_ready(|_| false).unwrap();
        assert_eq!(first.pod.metadata.name.as_deref(), Some("db-0"));
        assert!(set.next_ready(|_| false).is_none(), "db-1 waits for db-0 to be bound");
        let second = set.next_ready(|k| k == "prod/db-0").unwrap();
        assert_eq!(second.pod.metadata.name.as_deref(), Some("db-1"));
        assert!(set.next_ready(|k| k == "prod/db-0").is_none());
        assert_eq!(set.next_ready(|_| true).unwrap().pod.metadata.name.as_deref(), Some("db-2"));
        assert!(set.next_ready(|_| true).is_none());
    }
}

#[test]
fn controllers_jobs_create_their_parallelism_and_indexes() {
    // (name, spec fields, pod names' prefixes)
    let cases: [(&str, &str, &[&str]); 5] = [
        ("defaults: one pod", "", &["j-"]),
        ("parallelism below completions", "parallelism: 3, completions: 10, ", &["j-", "j-", "j-"]),
        ("completions below parallelism", "parallelism: 5, completions: 2, ", &["j-", "j-"]),
        ("Indexed", "parallelism: 2, completions: 4, completionMode: Indexed, ", &["j-0-", "j-1-"]),
        ("suspended", "parallelism: 2, suspend: true, ", &[]),
    ];
    for (name, spec, want) in cases {
        let text = format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j, uid: job-uid}}\nspec: {{{spec}template: {{metadata: {{labels: {{team: t}}}}, spec: {{restartPolicy: Never, containers: [{{name: c}}]}}}}}}\n"
        );
        let e = expand_text(&text);
        assert_eq!(e.pods.len(), want.len(), "{name}");
        for (p, prefix) in e.pods.iter().zip(want) {
            let pod_name = p.pod.metadata.name.as_deref().unwrap();
            assert!(pod_name.starts_with(prefix) && pod_name.len() == prefix.len() + 5, "{name}: {pod_name}");
            assert_eq!(label(&p.pod, "batch.kubernetes.io/job-name"), Some("j"), "{name}");
            assert_eq!(label(&p.pod, "batch.kubernetes.io/controller-uid"), Some("job-uid"), "{name}");
            assert_eq!(label(&p.pod, "team"), Some("t"), "{name}");
            if prefix.len() > 2 {
                let index = &prefix[2..3];
                assert_eq!(label(&p.pod, JOB_COMPLETION_INDEX), Some(index), "{name}");
                assert_eq!(p.pod.metadata.annotations.as_ref().unwrap()[JOB_COMPLETION_INDEX], index, "{name}");
            }
        }
        assert_eq!(e.notes.is_empty(), !spec.contains("suspend"), "{name}: {:?}", e.notes);
    }
}

#[test]
fn controllers_cronjob_creates_no_pods_until_it_fires() {
    let e = expand_text(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec: {schedule: '0 0 * * *', jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c}]}}}}}\n",
    );
    assert!(e.pods.is_empty() && e.notes.is_empty(), "{:?}", e.notes);
}

#[test]
fn controllers_template_errors_name_the_workload_and_field() {
    // (name, manifest, object, field, message)
    let cases = [
        (
            "selector not matching",
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec: {selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: b}}, spec: {containers: [{name: c}]}}}\n",
            "replicaset default/rs",
            "spec.template.metadata.labels",
            "does not match",
        ),
        (
            "bad pod management policy",
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {podManagementPolicy: Sometimes, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c}]}}}\n",
            "statefulset default/s",
            "spec.podManagementPolicy",
            "Unsupported value",
        ),
        (
            "Indexed job without completions",
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {completionMode: Indexed, template: {spec: {restartPolicy: Never, containers: [{name: c}]}}}\n",
            "job default/j",
            "spec.completions",
            "Required value",
        ),
    ];
    for (name, text, object, field, message) in cases {
        let mut m = Manifests::new();
        m.read_str("f", text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let e = expand(&m.workloads, &m.pods, &m.nodes, 1).expect_err(name);
        assert_eq!((e.object.as_str(), e.field.as_str()), (object, field), "{name}: {e}");
        assert!(e.message.contains(message), "{name}: {e}");
        assert_eq!(e.file, "f");
    }
}
