use super::*;
use crate::load::LoadSim;
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

/// Daemon pods by node, sorted.
fn daemon_pods(sim: &Simulation, name: &str) -> Vec<String> {
    let snapshot = sim.cache.update_snapshot();
    let mut out: Vec<String> = snapshot
        .iter()
        .flat_map(|n| n.pods().iter())
        .filter(|p| p.owner.as_ref().is_some_and(|o| o.kind.as_str() == "DaemonSet" && o.name.as_str() == name))
        .map(|p| p.node_name.map_or_else(|| "-".into(), |n| n.to_string()))
        .collect();
    out.sort();
    out
}

const NODE_LINE: &str = "{\"op\": \"template\", \"name\": \"node\", \"object\": {\"apiVersion\": \"v1\", \"kind\": \"Node\", \
    \"metadata\": {\"name\": \"x\"}, \"status\": {\"allocatable\": {\"cpu\": \"4\", \"memory\": \"8Gi\", \"pods\": \"110\"}}}}\n";

fn daemon_set_line(t: u32, name: &str) -> String {
    format!(
        "{{\"time\": {t}, \"op\": \"create\", \"object\": {{\"apiVersion\": \"apps/v1\", \"kind\": \"DaemonSet\", \
         \"metadata\": {{\"name\": \"{name}\"}}, \"spec\": {{\"selector\": {{\"matchLabels\": {{\"app\": \"{name}\"}}}}, \
         \"template\": {{\"metadata\": {{\"labels\": {{\"app\": \"{name}\"}}}}, \"spec\": {{\"containers\": [{{\"name\": \"c\", \
         \"image\": \"i\", \"resources\": {{\"requests\": {{\"cpu\": \"100m\"}}}}}}]}}}}}}}}}}\n"
    )
}

fn add_node_line(t: u32, name: &str) -> String {
    format!("{{\"time\": {t}, \"op\": \"add_node\", \"template\": \"node\", \"overrides\": {{\"metadata\": {{\"name\": \"{name}\"}}}}}}\n")
}

#[test]
fn replay_daemonset_created_by_the_trace_follows_nodes_added_later() {
    // `agent` comes with the trace at 5 s: a pod on n0 and n1 (there already) and on n2
    // (added in the same instant, before it), then one on each node added later, none twice.
    // `early` comes with the manifests and follows the trace's nodes too.
    let manifests = format!(
        "{NODES}apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: early}}\nspec: {{selector: {{matchLabels: {{app: early}}}}, \
         template: {{metadata: {{labels: {{app: early}}}}, spec: {{containers: [{{name: c, image: i}}]}}}}}}\n"
    );
    let trace = format!(
        "{NODE_LINE}{}{}{}{}{}",
        add_node_line(5, "n2"),
        daemon_set_line(5, "agent"),
        add_node_line(10, "n3"),
        add_node_line(20, "n4"),
        add_node_line(20, "n5"),
    );
    let (r, sim) = replay(&manifests, &trace);
    assert!(r.finished());
    let all: Vec<String> = ["n0", "n1", "n2", "n3", "n4", "n5"].map(String::from).to_vec();
    assert_eq!(daemon_pods(&sim, "agent"), all);
    assert_eq!(daemon_pods(&sim, "early"), all);
    assert!(sim.queue.pending_pods().is_empty());
}

#[test]
fn replay_daemonset_created_before_any_node_added() {
    // No DaemonSet in the manifests and none at the first node: the later one still sees
    // only the nodes added after it as new.
    let trace =
        format!("{NODE_LINE}{}{}{}", add_node_line(1, "n2"), daemon_set_line(2, "agent"), add_node_line(3, "n3"));
    let (_, sim) = replay(NODES, &trace);
    assert_eq!(daemon_pods(&sim, "agent"), ["n0", "n1", "n2", "n3"]);
}

fn line(t: u32, object: serde_json::Value) -> String {
    format!("{}\n", serde_json::json!({"time": t, "op": "create", "object": object}))
}

#[test]
fn replay_storage_objects_in_a_trace_reach_volume_binding() {
    // `db` asks for claim `data` before it exists (pending: claim not found); the class, a
    // local volume on zone b (n1) and the claim come later, and `db` goes where the volume is.
    let class = serde_json::json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"});
    let pv = serde_json::json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-b"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
            "local": {"path": "/mnt/b"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]}]}}}});
    let pvc = serde_json::json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local", "resources": {"requests": {"storage": "5Gi"}}}});
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db"},
        "spec": {"containers": [{"name": "c", "image": "i"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}});
    let trace = format!("{}{}{}{}", line(1, pod), line(5, class), line(5, pv), line(10, pvc));
    let (r, sim) = replay(NODES, &trace);
    assert!(r.finished());
    let snapshot = sim.cache.update_snapshot();
    let db = snapshot.iter().flat_map(|n| n.pods().iter()).find(|p| p.name.as_ref() == "db").expect("db is bound");
    assert_eq!(db.node_name, Some(Sym::new("n1")), "the volume's zone");
    let objects = sim.cache.objects();
    let claim = objects.storage.pvc(Sym::new("default"), Sym::new("data")).expect("the claim");
    assert_eq!(claim.volume_name, Sym::new("pv-b"), "bound by the PV controller stand-in");
}

#[test]
fn replay_dra_objects_in_a_trace_are_refused_naming_the_line() {
    let class =
        serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}});
    let err = Trace::parse("t.jsonl", &line(1, class)).unwrap_err().to_string();
    assert!(err.starts_with("t.jsonl:1: object.kind: create: DRA objects"), "{err}");
}

mod properties {
    use std::collections::{BTreeMap, HashMap, HashSet};

    use proptest::prelude::*;

    use super::*;
    use ksched_sim::simulation::Observer;

    /// Checks at every cycle and every clock move that no node holds more than its allocatable.
    #[derive(Default)]
    struct NoOvercommit {
        violations: Vec<String>,
        checks: usize,
    }

    impl NoOvercommit {
        fn check(&mut self, sim: &Simulation) {
            self.checks += 1;
            for n in sim.cache.update_snapshot().iter() {
                let (r, a) = (n.requested(), n.allocatable());
                if r.milli_cpu > a.milli_cpu || r.memory > a.memory || n.pods().len() as i64 > a.allowed_pod_number {
                    self.violations.push(format!("{} at {}: {r:?} > {a:?}", n.name(), sim.clock.now()));
                }
            }
        }
    }

    impl Observer for NoOvercommit {
        fn before_cycle(&mut self, sim: &Simulation, _pod: &Pod) {
            self.check(sim);
        }
        fn attempt(&mut self, _: &ksched_engine::scheduler::CycleOutcome, _: u64) {}
        fn clock_moving(&mut self, sim: &Simulation, _to: Timestamp) {
            self.check(sim);
        }
    }

    /// One random op: (kind, seconds after the previous op, two small arguments).
    fn trace_text(ops: &[(u8, u8, u8, u8)]) -> String {
        let mut out = String::from(
            "{\"op\": \"template\", \"name\": \"p\", \"object\": {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"x\"}, \
             \"spec\": {\"terminationGracePeriodSeconds\": 5, \"containers\": [{\"name\": \"c\", \"image\": \"i\", \"resources\": {\"requests\": {\"cpu\": \"1\"}}}]}}}\n\
             {\"op\": \"template\", \"name\": \"n\", \"object\": {\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"x\"}, \
             \"status\": {\"allocatable\": {\"cpu\": \"3\", \"memory\": \"8Gi\", \"pods\": \"4\"}}}}\n",
        );
        let mut t = 0u32;
        let mut pods = 0u32;
        let mut extra_nodes = 0u32;
        for &(kind, dt, a, b) in ops {
            t += u32::from(dt);
            let line = match kind % 8 {
                0..=2 => {
                    pods += 1;
                    let cpu = ["500m", "1", "2"][usize::from(a % 3)];
                    let duration =
                        if b % 3 == 0 { String::new() } else { format!(", \"duration\": {}", 10 + u32::from(b)) };
                    format!(
                        "{{\"time\": {t}, \"op\": \"create\", \"template\": \"p\", \"overrides\": {{\"metadata\": {{\"name\": \"p{pods}\"}}, \
                         \"spec\": {{\"containers\": [{{\"name\": \"c\", \"image\": \"i\", \"resources\": {{\"requests\": {{\"cpu\": \"{cpu}\"}}}}}}]}}}}{duration}}}"
                    )
                }
                3 => format!("{{\"time\": {t}, \"op\": \"delete\", \"pod\": \"p{}\"}}", 1 + u32::from(a) % pods.max(1)),
                4 => format!(
                    "{{\"time\": {t}, \"op\": \"{}\", \"node\": \"n{}\"}}",
                    ["cordon", "uncordon"][usize::from(b % 2)],
                    a % 4
                ),
                5 => format!("{{\"time\": {t}, \"op\": \"remove_node\", \"node\": \"n{}\"}}", a % 4),
                6 => {
                    extra_nodes += 1;
                    format!(
                        "{{\"time\": {t}, \"op\": \"add_node\", \"template\": \"n\", \"overrides\": {{\"metadata\": {{\"name\": \"x{extra_nodes}\"}}}}}}"
                    )
                }
                _ => format!(
                    "{{\"time\": {t}, \"op\": \"drain\", \"node\": \"n{}\", \"remove\": {}}}",
                    a % 4,
                    b % 2 == 0
                ),
            };
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    const CLUSTER: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n0}\nstatus: {allocatable: {cpu: '3', memory: 8Gi, pods: '4'}}\n---\n\
        apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '3', memory: 8Gi, pods: '4'}}\n---\n\
        apiVersion: v1\nkind: Node\nmetadata: {name: n2}\nstatus: {allocatable: {cpu: '2', memory: 8Gi, pods: '4'}}\n---\n\
        apiVersion: v1\nkind: Node\nmetadata: {name: n3}\nstatus: {allocatable: {cpu: '2', memory: 8Gi, pods: '4'}}\n";

    /// What a run did: every pod's creation time, end and node at the end, in creation order.
    type Outcome = Vec<(String, u64, Option<(u64, String)>, Option<String>)>;

    fn run(text: &str, seed: u64) -> (Outcome, Trace, Vec<String>) {
        let mut m = Manifests::new();
        m.read_str("f.yaml", CLUSTER).unwrap();
        let loaded = m.load_full(Profile::default_profile(), QueueConfig::new(), seed).unwrap();
        let trace = Trace::parse("t.jsonl", text).unwrap_or_else(|e| panic!("{e}"));
        let mut sim = loaded.sim;
        let mut watch = sim.cluster.watch_pods();
        let start = sim.clock.now();
        let mut r = Replay::new(trace.clone(), loaded.controllers);
        let mut check = NoOvercommit::default();
        sim.run(Until::Idle, &RunOptions::default(), &mut [&mut r], &mut [&mut check]).unwrap();
        check.check(&sim);
        assert!(check.checks > 0);
        let secs = |t: Timestamp| t.saturating_since(start).as_millis() as u64;
        let mut rows: Outcome = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut problems = check.violations;
        for e in sim.cluster.pod_events(&mut watch) {
            match e {
                PodEvent::Created { pod, at } => {
                    if index.insert(pod.uid.to_string(), rows.len()).is_some_and(|i| rows[i].2.is_none()) {
                        problems.push(format!("{} created twice while alive", pod.key()));
                    }
                    rows.push((pod.key(), secs(at), None, None));
                }
                PodEvent::Gone(g) => match index.get(&g.pod.uid.to_string()) {
                    Some(&i) if rows[i].2.is_none() => rows[i].2 = Some((secs(g.at), g.exit.as_str().to_owned())),
                    Some(_) => problems.push(format!("{} gone twice", g.pod.key())),
                    None => problems.push(format!("{} gone, never created", g.pod.key())),
                },
                PodEvent::Terminating(_) => {}
            }
        }
        // Every pod alive at the end is bound (in the cache) or pending (in the queue), not both.
        let bound: HashMap<String, String> = sim
            .cache
            .pods()
            .into_iter()
            .map(|(p, _)| (p.uid.to_string(), p.node_name.map(|n| n.to_string()).unwrap_or_default()))
            .collect();
        let pending: HashSet<String> = sim.queue.pending_pods().iter().map(|p| p.uid.to_string()).collect();
        for (uid, &i) in &index {
            let row = &mut rows[i];
            let (b, p) = (bound.get(uid), pending.contains(uid));
            match (&row.2, b, p) {
                (None, Some(node), false) => row.3 = Some(node.clone()),
                (None, None, true) => {}
                (Some(_), None, false) => {}
                other => {
                    problems.push(format!("{}: ended {:?}, bound {:?}, pending {}", row.0, other.0, other.1, other.2))
                }
            }
        }
        if bound.len() + pending.len() != rows.iter().filter(|r| r.2.is_none()).count() {
            problems.push(format!("{} bound + {} pending, alive {:?}", bound.len(), pending.len(), rows));
        }
        (rows, trace, problems)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn random_traces_keep_every_pod_once_within_allocatable_in_time_order(
            ops in proptest::collection::vec((0u8..8, 0u8..30, 0u8..16, 0u8..16), 1..40),
            seed in 0u64..4,
        ) {
            let text = trace_text(&ops);
            let (rows, trace, problems) = run(&text, seed);
            prop_assert!(problems.is_empty(), "{problems:?}\n{text}");
            // Applied in time order: each trace pod was created at its line's time.
            let mut created: BTreeMap<String, Vec<u64>> = BTreeMap::new();
            for (key, at, _, _) in &rows {
                created.entry(key.clone()).or_default().push(*at);
            }
            for e in &trace.events {
                if let Op::CreatePod(p) = &e.op {
                    let want = e.at.as_millis() as u64;
                    prop_assert_eq!(created.get(&p.key()).map(|v| v[0]), Some(want), "{}", p.key());
                }
            }
            let times: Vec<u64> = rows.iter().map(|r| r.1).collect();
            prop_assert!(times.windows(2).all(|w| w[0] <= w[1]), "creations out of order: {times:?}");
            // The same trace and seed: the same result.
            let (again, _, _) = run(&text, seed);
            prop_assert_eq!(rows, again);
        }
    }
}
