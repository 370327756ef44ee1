use proptest::prelude::*;

use super::*;
use ksched_engine::framework::Profile;

/// Nodes of 4 CPUs and 8Gi; pods asking whole CPUs and 1Gi per CPU (one dimension: with
/// LeastAllocated and BalancedAllocation each pod goes to a node with the most room left).
fn shape() -> Shape {
    let mut m = Manifests::new();
    m.read_str(
        "t.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: w}\nstatus: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n",
    )
    .unwrap();
    Shape { name: "w".into(), nodes: m.nodes.into_iter().map(|(n, _)| n).collect(), price: 1.0 }
}

fn pods_yaml(cpus: &[u32]) -> String {
    cpus.iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec: {{containers: [{{name: c, image: i, \
                 resources: {{requests: {{cpu: '{c}', memory: {c}Gi}}}}}}]}}\n---\n"
            )
        })
        .collect()
}

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    capacity: CapacityArgs,
}

fn args(argv: &[&str]) -> CapacityArgs {
    use clap::Parser as _;
    Cli::parse_from(std::iter::once("capacity").chain(argv.iter().copied())).capacity
}

fn input(cpus: &[u32], crit: Criterion) -> Input {
    let mut manifests = Manifests::new();
    manifests.read_str("pods.yaml", &pods_yaml(cpus)).unwrap();
    Input {
        manifests,
        trace: Trace::default(),
        replay: replay_args(&args(&["-t", "w.yaml"])),
        profiles: Profile::default_profile().into(),
        queue: QueueConfig::new(),
        zones: Vec::new(),
        criterion: crit,
    }
}

#[test]
fn capacity_input_errors_name_what_is_missing() {
    let err = load_input(&args(&["-t", "w.yaml"])).err().unwrap();
    assert_eq!(err, "no workload: give manifests (-f) or a trace (--trace)");
    let err = load_input(&args(&["-t", "w.yaml", "-f", "/nonexistent/pods.yaml"])).err().unwrap();
    assert!(err.contains("/nonexistent/pods.yaml"), "{err}");
}

const EVERY_POD: Criterion = Criterion { max_pending: 0, pending_for: None };

#[test]
fn capacity_five_pods_of_three_cpus_need_five_nodes_of_four() {
    // By hand: two 3-CPU pods never share a 4-CPU node, so 5 pods need 5 nodes although
    // their 15 CPUs would fit the 16 of 4 nodes; with 4 nodes one pod stays pending.
    let input = input(&[3, 3, 3, 3, 3], EVERY_POD);
    let r = capacity(&input, &[shape()], 64, 2, None).unwrap();
    let a = r.answer.as_ref().expect("an answer");
    assert_eq!((a.units, a.nodes, a.cost), (5, 5, 5.0));
    let f = r.one_fewer.as_ref().expect("the run below");
    assert_eq!((f.run.units, f.run.passed, f.run.left_pending), (4, false, 1));
    let e = f.explain.as_ref().expect("explained");
    assert_eq!(e.result.as_deref(), Some("unschedulable"));
    assert!(e.fit_error.as_deref().unwrap().starts_with("0/4 nodes are available: 4 Insufficient cpu"), "{e:?}");
    // Two a round: 0, 1 | 2, 4 | 8, 16 | then inside (4, 8): 6, 7 | and 5.
    let runs: Vec<(usize, bool)> = r.shapes[0].runs.iter().map(|x| (x.units, x.passed)).collect();
    let want = [(0, false), (1, false), (2, false), (4, false), (5, true), (6, true), (7, true), (8, true), (16, true)];
    assert_eq!(runs, want);
    assert_eq!(r.shapes[0].rounds, 5);
    assert!(r.shapes[0].not_monotone.is_empty());
    // At most one pod left pending: 4 nodes do.
    let one = Input { criterion: Criterion { max_pending: 1, pending_for: None }, ..input };
    assert_eq!(capacity(&one, &[shape()], 64, 3, None).unwrap().answer.unwrap().units, 4);
}

#[test]
fn capacity_none_when_nothing_up_to_the_limit_passes() {
    // A pod of 5 CPUs never fits a 4-CPU node.
    let input = input(&[5], EVERY_POD);
    let r = capacity(&input, &[shape()], 3, 2, None).unwrap();
    assert!(r.answer.is_none());
    let runs: Vec<usize> = r.shapes[0].runs.iter().map(|x| x.units).collect();
    assert_eq!(runs, [0, 1, 2, 3]);
    assert!(table(&r, 3, 10).contains("no count up to 3 of any shape passes (every pod is bound)"));
}

#[test]
fn capacity_shapes_are_named_priced_and_instantiated() {
    let dir = std::env::temp_dir().join(format!("ksched-capacity-shapes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let one = dir.join("big.yaml");
    std::fs::write(
        &one,
        "apiVersion: v1\nkind: Node\nmetadata: {name: big, labels: {pool: b}, annotations: {ksched.io/cost: '2.5'}}\n\
         status: {allocatable: {cpu: '8', memory: 16Gi}}\n",
    )
    .unwrap();
    let unit = dir.join("pair.yaml");
    std::fs::write(
        &unit,
        "apiVersion: v1\nkind: Node\nmetadata: {name: cpu}\nstatus: {allocatable: {cpu: '8'}}\n---\n\
         apiVersion: v1\nkind: Node\nmetadata: {name: gpu, annotations: {ksched.io/cost: '3'}}\nstatus: {allocatable: {cpu: '8', nvidia.com/gpu: '1'}}\n",
    )
    .unwrap();
    let shapes = load_shapes(&[one.clone(), unit.clone()], &[]).unwrap();
    let named: Vec<(&str, usize, f64)> = shapes.iter().map(|s| (s.name.as_str(), s.nodes.len(), s.price)).collect();
    assert_eq!(named, [("big", 1, 2.5), ("pair", 2, 4.0)]);
    let shapes = load_shapes(&[one.clone(), unit.clone()], &["pair=1.5".into()]).unwrap();
    assert_eq!(shapes[1].price, 1.5);
    let nodes = shapes[1].instantiate(2, &["a".into(), "b".into()]);
    let names: Vec<(String, Option<Sym>, Option<Sym>)> = nodes
        .iter()
        .map(|n| (n.name.to_string(), n.labels.get(Sym::new(LABEL_HOSTNAME)), n.labels.get(Sym::new(LABEL_ZONE))))
        .collect();
    let s = |x: &str| Some(Sym::new(x));
    assert_eq!(
        names,
        [
            ("cpu-0".into(), s("cpu-0"), s("a")),
            ("gpu-0".into(), s("gpu-0"), s("a")),
            ("cpu-1".into(), s("cpu-1"), s("b")),
            ("gpu-1".into(), s("gpu-1"), s("b")),
        ]
    );
    let errors: Vec<(Vec<String>, &str)> = vec![
        (vec!["nope=1".into()], "--cost \"nope=1\": no shape \"nope\" (the shapes: big, pair)"),
        (vec!["big".into()], "--cost \"big\": want SHAPE=PRICE"),
        (vec!["big=-1".into()], "--cost \"big=-1\": \"-1\" is not a price"),
    ];
    for (costs, want) in errors {
        let err = load_shapes(&[one.clone(), unit.clone()], &costs).unwrap_err();
        assert!(err.starts_with(want), "{err}");
    }
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "apiVersion: v1\nkind: Node\nmetadata: {name: x, annotations: {ksched.io/cost: cheap}}\n")
        .unwrap();
    let err = load_shapes(std::slice::from_ref(&bad), &[]).unwrap_err();
    assert!(err.contains("node x: metadata.annotations[ksched.io/cost]: \"cheap\" is not a price"), "{err}");
    let pod = dir.join("pod.yaml");
    std::fs::write(&pod, pods_yaml(&[1])).unwrap();
    let err = load_shapes(std::slice::from_ref(&pod), &[]).unwrap_err();
    assert!(err.ends_with("a node template holds at least one Node; none found"), "{err}");
    assert!(load_shapes(&[one.clone(), one], &[]).unwrap_err().ends_with("shape \"big\" is given twice"));
    std::fs::remove_dir_all(&dir).ok();
}

/// The least count the linear scan finds, for a predicate given as a pass/fail table.
fn linear(table: &[bool]) -> Option<usize> {
    table.iter().position(|&p| p)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// On a monotone predicate (fails below a threshold, passes from it) the search finds the
    /// threshold, runs no count twice, and takes about log2 rounds.
    #[test]
    fn bisect_finds_the_threshold_of_a_monotone_predicate(max in 0usize..300, threshold in 0usize..400, width in 1usize..6) {
        let table: Vec<bool> = (0..=max).map(|n| n >= threshold).collect();
        let mut seen = std::collections::HashSet::new();
        let mut problems = Vec::new();
        let b = bisect(max, width, |counts| {
            if counts.len() > width {
                problems.push(format!("{} counts in a round", counts.len()));
            }
            for &c in counts {
                if c > max || !seen.insert(c) {
                    problems.push(format!("{c} beyond {max} or run twice"));
                }
            }
            Ok(counts.iter().map(|&c| c <= max && table[c]).collect())
        })
        .unwrap();
        prop_assert!(problems.is_empty(), "{:?}", problems);
        prop_assert_eq!(b.least, linear(&table));
        prop_assert!(b.not_monotone().is_empty());
        // Doubling to the threshold, then halving the gap: at most 2 log2(max) + 3 rounds.
        let log = usize::BITS - max.max(1).leading_zeros();
        prop_assert!(b.rounds <= 2 * log as usize + 3, "{} rounds for max {}", b.rounds, max);
    }

    /// On any predicate, an answer passes and the count below it (run too) fails.
    #[test]
    fn bisect_brackets_its_answer_on_any_predicate(table in prop::collection::vec(any::<bool>(), 1..80), width in 1usize..5) {
        let max = table.len() - 1;
        let b = bisect(max, width, |counts| Ok(counts.iter().map(|&c| table[c]).collect())).unwrap();
        match b.least {
            Some(n) => {
                prop_assert_eq!(b.results.get(&n), Some(&true));
                if n > 0 {
                    prop_assert_eq!(b.results.get(&(n - 1)), Some(&false));
                }
            }
            None => prop_assert!(b.results.values().all(|p| !p)),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// What the search relies on: for pods of whole CPUs (1Gi per CPU) on identical 4-CPU
    /// nodes, a count of nodes where every pod is bound is followed by counts where every pod
    /// is bound too.
    #[test]
    fn capacity_more_nodes_never_leave_more_pods_pending(cpus in prop::collection::vec(1u32..=4, 1..9)) {
        let input = input(&cpus, EVERY_POD);
        let s = shape();
        let passed: Vec<bool> = (0..=cpus.len() + 1).map(|n| input.run(&s, n).unwrap().passed).collect();
        let first = passed.iter().position(|&p| p);
        prop_assert!(first.is_some(), "one node per pod always passes: {:?}", passed);
        let first = first.unwrap_or(0);
        prop_assert!(passed[first..].iter().all(|&p| p), "{:?}: {:?}", cpus, passed);
        // No fewer nodes than the CPUs asked for need.
        let total: u32 = cpus.iter().sum();
        prop_assert!(first >= total.div_ceil(4) as usize);
    }
}

#[test]
fn capacity_explains_the_last_failed_attempt_of_a_pod_bound_late() {
    // One 4-CPU node, four 3-CPU pods at 0 s running 60 s each: the last bound waits 180 s,
    // failing at 0, 60 and 120 s. Its explanation is its last failed attempt, kept while the
    // earlier ones are dropped.
    let pod = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "3"}}}]}}"#;
    let mut text = format!("{{\"op\": \"template\", \"name\": \"t\", \"object\": {pod}}}\n");
    for i in 0..4 {
        text.push_str(&format!(
            "{{\"time\": 0, \"op\": \"create\", \"template\": \"t\", \"overrides\": {{\"metadata\": {{\"name\": \"j{i}\"}}}}, \"duration\": \"60s\"}}\n"
        ));
    }
    let crit = Criterion { max_pending: 0, pending_for: Some(Duration::from_secs(30)) };
    let input =
        Input { trace: Trace::parse("t.jsonl", &text).unwrap(), manifests: Manifests::new(), ..input(&[], crit) };
    let run = input.run(&shape(), 1).unwrap();
    assert_eq!((run.passed, run.left_pending, run.bound), (false, 3, 4));
    let late = run.example.expect("the longest wait");
    assert_eq!((late.waited, late.never_bound), (180.0, false));
    let e = input.explain(&shape(), 1, &late).unwrap().expect("a failed attempt");
    assert_eq!(e.pod, late.pod);
    assert!(e.attempts >= 4, "three failures and the binding: {}", e.attempts);
    assert_eq!(e.attempt, e.attempts - 1, "the last failed one");
    assert!(e.fit_error.as_deref().unwrap().starts_with("0/1 nodes are available: 1 Insufficient cpu"), "{e:?}");
}
