use super::*;
use ksched_engine::framework::Profile;
use ksched_engine::queue::QueueConfig;
use ksched_k8s::manifest::Manifests;
use ksched_sim::simulation::{RunOptions, Until};

const NODES: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n0, labels: {topology.kubernetes.io/zone: a}}\n\
    status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n\
    apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {topology.kubernetes.io/zone: b}}\n\
    status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n";

fn bound_pod(name: &str, node: &str, app: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: {app}}}}}\nspec: {{nodeName: {node}, \
         terminationGracePeriodSeconds: 0, containers: [{{name: c, image: i, resources: {{requests: {{cpu: '1'}}}}}}]}}\n---\n"
    )
}

/// Replays `trace` over the cluster of `manifests` until nothing more can happen.
fn replay(manifests: &str, trace: &str) -> (Replay, Simulation) {
    let mut m = Manifests::new();
    m.read_str("f.yaml", manifests).unwrap_or_else(|e| panic!("{e}"));
    let loaded = m.load_full(Profile::default_profile(), QueueConfig::new(), 1).unwrap_or_else(|e| panic!("{e}"));
    let trace = Trace::parse("t.jsonl", trace).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = loaded.sim;
    let mut r = Replay::new(trace, loaded.controllers);
    sim.run(Until::Idle, &RunOptions::default(), &mut [&mut r], &mut []).unwrap_or_else(|e| panic!("{e}"));
    (r, sim)
}

fn outcomes(r: &Replay) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = r
        .drained
        .iter()
        .map(|d| {
            let o = match &d.outcome {
                DrainOutcome::Evicted { at } => format!("evicted at {at}"),
                DrainOutcome::Blocked { reason } => format!("blocked: {reason}"),
                DrainOutcome::DeletedWithNode { at, .. } => format!("deleted with node at {at}"),
            };
            (d.pod.name.to_string(), o)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn drain_blocked_by_a_budget_evicts_the_rest() {
    let manifests = format!(
        "{NODES}{}{}{}apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: db}}\n\
         spec: {{minAvailable: 2, selector: {{matchLabels: {{app: db}}}}}}\n",
        bound_pod("db-0", "n0", "db"),
        bound_pod("db-1", "n0", "db"),
        bound_pod("web", "n0", "web"),
    );
    let (r, sim) = replay(&manifests, "{\"time\": 10, \"op\": \"drain\", \"node\": \"n0\", \"timeout\": \"20s\"}\n");
    let budget = "Cannot evict pod as it would violate the pod's disruption budget default/db (disruptionsAllowed 0)";
    assert_eq!(
        outcomes(&r),
        [
            ("db-0".into(), format!("blocked: {budget}")),
            ("db-1".into(), format!("blocked: {budget}")),
            ("web".into(), "evicted at 10".into()),
        ]
    );
    // The node stays, cordoned, with the blocked pods on it; retries every 5 s until the timeout.
    let n0 = sim.cache.get_node(Sym::new("n0")).unwrap();
    assert!(n0.unschedulable);
    assert_eq!(sim.cache.update_snapshot().get(Sym::new("n0")).unwrap().pods().len(), 2);
    assert_eq!(sim.cluster.stats().evictions_refused, 2 * 5, "tries at 10, 15, 20, 25 and 30 s");
}

#[test]
fn drain_with_remove_deletes_the_node_and_a_replicaset_replaces_its_pods() {
    let manifests = format!(
        "{NODES}apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: web}}\nspec: {{replicas: 2, \
         selector: {{matchLabels: {{app: web}}}}, template: {{metadata: {{labels: {{app: web}}}}, spec: \
         {{terminationGracePeriodSeconds: 0, nodeSelector: {{topology.kubernetes.io/zone: a}}, containers: [{{name: c, image: i, \
         resources: {{requests: {{cpu: '1'}}}}}}]}}}}}}\n---\n\
         apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: any}}\nspec: {{replicas: 1, \
         selector: {{matchLabels: {{app: any}}}}, template: {{metadata: {{labels: {{app: any}}}}, spec: \
         {{terminationGracePeriodSeconds: 0, affinity: {{nodeAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: \
         [{{weight: 100, preference: {{matchExpressions: [{{key: topology.kubernetes.io/zone, operator: In, values: [a]}}]}}}}]}}}}, \
         containers: [{{name: c, image: i, resources: {{requests: {{cpu: '1'}}}}}}]}}}}}}\n"
    );
    let (r, sim) = replay(&manifests, "{\"time\": 5, \"op\": \"drain\", \"selector\": \"zone=a\", \"remove\": true}\n");
    let o = outcomes(&r);
    assert_eq!(o.len(), 3, "{o:?}");
    assert!(o.iter().all(|(_, what)| what == "evicted at 5"), "{o:?}");
    assert!(sim.cache.get_node(Sym::new("n0")).is_none(), "removed once drained");
    // `any` came back on n1; `web` (zone a only) waits: no zone-a node is left.
    let snapshot = sim.cache.update_snapshot();
    let on_n1: Vec<String> = snapshot.get(Sym::new("n1")).unwrap().pods().iter().map(|p| p.name.to_string()).collect();
    assert_eq!(on_n1.len(), 1, "{on_n1:?}");
    assert!(on_n1[0].starts_with("any-"), "{on_n1:?}");
    assert_eq!(sim.queue.pending_pods().len(), 2, "web's two replacements wait");
}

#[test]
fn replay_applies_ops_at_their_time_and_notes_what_it_cannot_do() {
    let trace = "{\"op\": \"template\", \"name\": \"t\", \"object\": {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"x\"}, \
        \"spec\": {\"terminationGracePeriodSeconds\": 0, \"containers\": [{\"name\": \"c\", \"image\": \"i\", \"resources\": {\"requests\": {\"cpu\": \"3\"}}}]}}}\n\
        {\"time\": 1, \"op\": \"create\", \"template\": \"t\", \"overrides\": {\"metadata\": {\"name\": \"a\"}}}\n\
        {\"time\": 2, \"op\": \"cordon\", \"node\": \"n1\"}\n\
        {\"time\": 3, \"op\": \"create\", \"template\": \"t\", \"overrides\": {\"metadata\": {\"name\": \"b\"}}}\n\
        {\"time\": 50, \"op\": \"delete\", \"pod\": \"a\"}\n\
        {\"time\": 60, \"op\": \"delete\", \"pod\": \"ghost\"}\n\
        {\"time\": 61, \"op\": \"cordon\", \"node\": \"n9\"}\n";
    let (r, sim) = replay(NODES, trace);
    assert!(r.finished());
    // a went to n0 or n1; n1 was cordoned at 2 s, so b waited for a's deletion at 50 s when a
    // was on n0, or took n0 at once.
    let snapshot = sim.cache.update_snapshot();
    let b = snapshot.iter().flat_map(|n| n.pods().iter()).find(|p| p.name.as_ref() == "b").expect("b is bound");
    assert_eq!(b.node_name, Some(Sym::new("n0")));
    assert_eq!(sim.clock.now().saturating_since(Timestamp::from_secs(1)).as_secs(), 61);
    assert_eq!(
        r.notes(),
        [
            "t.jsonl:6: delete pod default/ghost: no such pod (never created, or gone)",
            "t.jsonl:7: cordon n9: no such node"
        ]
    );
}
