//! DefaultPreemption, step by step: eligibility, potential nodes and the candidate search,
//! the dry run (victims with and without PodDisruptionBudgets), pickOneNode's tie-breaks,
//! and a property test against a plain model of the whole plugin when only resources
//! constrain the pod.

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::api::Sym;
use crate::api::{
    LabelSelector, Labels, Node, PodDisruptionBudget, PreemptionPolicy, ResourceName, ResourceName::*, Taint,
    TaintEffect,
};
use crate::framework::plugins::test_util::node_info;
use crate::framework::runtime::{run_filters, run_filters_with_nominated, run_pre_filter, NominatedPods, Overlay};
use crate::framework::Profile;
use crate::queue::Nominator;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::objects::ClusterObjects;
use crate::util::rng::Rng;
use crate::util::time::Timestamp;

const MI: i64 = 1 << 20;
const GI: i64 = 1 << 30;

// ---------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------

/// A node with `cpu` millicores, 32Gi and 110 pods, labelled with its hostname.
fn node(name: &str, cpu: i64) -> Node {
    Node::builder(name).resources(cpu, 32 * GI, 110).label("kubernetes.io/hostname", name).build()
}

/// A pod of `priority` asking for `cpu` millicores and 1Mi.
fn pod(name: &str, priority: i32, cpu: i64) -> Pod {
    Pod::builder(name).priority(priority).container("i", &[(Cpu, cpu), (Memory, MI)]).build()
}

/// `pod` that started at `t` seconds.
fn started(name: &str, priority: i32, cpu: i64, t: u64) -> Pod {
    Pod::builder(name)
        .priority(priority)
        .container("i", &[(Cpu, cpu), (Memory, MI)])
        .start_time(Timestamp::from_secs(t))
        .build()
}

/// `pod` labelled `app=<app>`.
fn labelled(name: &str, priority: i32, cpu: i64, app: &str) -> Pod {
    Pod::builder(name).priority(priority).label("app", app).container("i", &[(Cpu, cpu), (Memory, MI)]).build()
}

/// `labelled` that started at `t` seconds.
fn web_started(name: &str, priority: i32, cpu: i64, t: u64) -> Pod {
    Pod::builder(name)
        .priority(priority)
        .label("app", "web")
        .container("i", &[(Cpu, cpu), (Memory, MI)])
        .start_time(Timestamp::from_secs(t))
        .build()
}

/// A budget in `default` over `app=<app>` allowing `allowed` more disruptions.
fn pdb(name: &str, app: &str, allowed: i32) -> PodDisruptionBudget {
    let selector = LabelSelector { match_labels: Labels::from_pairs([("app", app)]), ..Default::default() };
    PodDisruptionBudget { disruptions_allowed: allowed, ..PodDisruptionBudget::new("default", name, selector) }
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter().map(|p| p.name.to_string()).collect()
}

/// A snapshot of `nodes` (each with its pods) and `pdbs`, and the default profile.
struct Fx {
    profile: Profile,
    snapshot: Snapshot,
}

impl Fx {
    fn new(nodes: Vec<(Node, Vec<Pod>)>, pdbs: Vec<PodDisruptionBudget>) -> Fx {
        let infos = nodes.into_iter().map(|(n, pods)| node_info(n, &pods)).collect();
        let mut objects = ClusterObjects::new();
        for b in pdbs {
            objects.upsert_pdb(b);
        }
        Fx { profile: Profile::default_profile(), snapshot: Snapshot::from_node_infos(infos).with_objects(objects) }
    }

    /// What a scheduling cycle has when PostFilter runs: the state after PreFilter, every
    /// node's filter verdict (with the two-pass filter for nominated pods) and the nominated
    /// pods the pod must leave room for.
    fn cycle(&self, pod: &Pod, nominator: Option<&Nominator>) -> Cycle {
        let mut state = CycleState::new();
        let mut statuses = NodeStatuses::default();
        let nominated = NominatedPods::for_pod(nominator, pod);
        match run_pre_filter(&self.profile, &mut state, pod, &self.snapshot) {
            Err(st) => statuses.absent = Some(st),
            Ok(()) => {
                let filters = active_filters(&self.profile, &state);
                let overlay = Overlay::new(&self.profile, &state, &filters);
                for i in 0..self.snapshot.num_nodes() {
                    let n = self.snapshot.node_at(i).expect("in range");
                    let st = run_filters_with_nominated(&overlay, &filters, &state, pod, n, &nominated, &self.snapshot);
                    if !st.is_success() {
                        statuses.push(i as u32, st);
                    }
                }
            }
        }
        Cycle { state, statuses, nominated }
    }

    /// Runs the plugin's PostFilter as the scheduler would, with the RNG seeded `seed`.
    fn post_filter(
        &self,
        plugin: &DefaultPreemption,
        pod: &Pod,
        nominator: Option<&Nominator>,
        seed: u64,
    ) -> (Option<PostFilterResult>, Status) {
        let cy = self.cycle(pod, nominator);
        let mut rng = Rng::seed(seed);
        let mut ctx = PostFilterContext {
            profile: &self.profile,
            snapshot: &self.snapshot,
            statuses: &cy.statuses,
            nominator: nominator.map(|n| n as &dyn crate::framework::PodNominator),
            nominated: &cy.nominated,
            pool: None,
            rng: &mut rng,
            preemption_trace: None,
            api: &crate::testing::RefusingApi,
        };
        plugin.post_filter(&mut ctx, &cy.state, pod)
    }

    /// `post_filter` with the dry run traced.
    fn post_filter_traced(
        &self,
        plugin: &DefaultPreemption,
        pod: &Pod,
        seed: u64,
    ) -> (Option<PostFilterResult>, Status, PreemptionTrace) {
        let cy = self.cycle(pod, None);
        let mut rng = Rng::seed(seed);
        let mut trace = PreemptionTrace::default();
        let mut ctx = PostFilterContext {
            profile: &self.profile,
            snapshot: &self.snapshot,
            statuses: &cy.statuses,
            nominator: None,
            nominated: &cy.nominated,
            pool: None,
            rng: &mut rng,
            preemption_trace: Some(&mut trace),
            api: &crate::testing::RefusingApi,
        };
        let (r, st) = plugin.post_filter(&mut ctx, &cy.state, pod);
        (r, st, trace)
    }

    /// The dry run of `pod` on the node named `name`.
    fn victims_on(&self, pod: &Pod, name: &str, nominator: Option<&Nominator>) -> Result<Candidate, Status> {
        let cy = self.cycle(pod, nominator);
        let filters = active_filters(&self.profile, &cy.state);
        let following = victims::following_pods(&filters);
        let overlay = Overlay::new(&self.profile, &cy.state, &filters);
        let dry = self.dry(&cy, &filters, &following, &overlay, pod);
        let node = self.snapshot.get(Sym::new(name)).expect("node exists");
        select_victims(&dry, node, &mut victims::Scratch::default())
    }

    fn dry<'a>(
        &'a self,
        cy: &'a Cycle,
        filters: &'a [&'a dyn crate::framework::FilterPlugin],
        following: &'a [&'a dyn crate::framework::FilterPlugin],
        overlay: &'a Overlay<'a>,
        pod: &'a Pod,
    ) -> DryRun<'a> {
        DryRun {
            filters,
            following,
            overlay,
            state: &cy.state,
            pod,
            snapshot: &self.snapshot,
            nominated: &cy.nominated,
            pdbs: &self.snapshot.objects().pdbs,
        }
    }
}

/// `find_found` with every candidate's victims copied out of the snapshot.
fn find_candidates(
    dry: &DryRun<'_>,
    pool: Option<&crate::parallel::WorkerPool>,
    potential: &[u32],
    offset: usize,
    want: usize,
    failures: &mut NodeStatuses,
    bufs: &mut DryRunBuffers,
) -> Result<Vec<Candidate>, Status> {
    let found = find_found(dry, pool, potential, offset, want, failures, bufs)?;
    Ok(found.iter().map(|f| f.candidate(dry.snapshot)).collect())
}

struct Cycle {
    state: CycleState,
    statuses: NodeStatuses,
    nominated: NominatedPods,
}

// ---------------------------------------------------------------------------------------
// Eligibility
// ---------------------------------------------------------------------------------------

#[test]
fn eligibility_table() {
    // "a" (position 0) and "b" (position 1); the nominated node's verdict is given per case.
    let terminating_by_preemption = |name: &str, priority: i32| {
        Pod::builder(name)
            .priority(priority)
            .container("i", &[(Cpu, 1000)])
            .deletion_timestamp(Timestamp::from_secs(5))
            .preempted_by_scheduler()
            .build()
    };
    let terminating_by_user = |name: &str, priority: i32| {
        Pod::builder(name)
            .priority(priority)
            .container("i", &[(Cpu, 1000)])
            .deletion_timestamp(Timestamp::from_secs(5))
            .build()
    };
    let preempted_not_deleted =
        |name: &str, priority: i32| Pod::builder(name).priority(priority).preempted_by_scheduler().build();
    let nominated_to = |node: &str| Pod::builder("p").priority(10).nominated_node_name(node).build();
    let unschedulable = Status::unschedulable("Insufficient cpu");
    let unresolvable = Status::unresolvable("node(s) had untolerated taint(s)");
    // (name, pods on a, pod, a's verdict, want)
    type Case = (&'static str, Vec<Pod>, Pod, Option<Status>, Result<(), &'static str>);
    let cases: Vec<Case> = vec![
        (
            "preemptionPolicy Never",
            vec![],
            Pod::builder("p").priority(10).preemption_policy(PreemptionPolicy::Never).build(),
            None,
            Err(MSG_POLICY_NEVER),
        ),
        (
            "Never wins even with nothing terminating and no nomination",
            vec![pod("low", 1, 1000)],
            Pod::builder("p").priority(1000).preemption_policy(PreemptionPolicy::Never).build(),
            Some(unschedulable.clone()),
            Err(MSG_POLICY_NEVER),
        ),
        (
            "not nominated",
            vec![terminating_by_preemption("t", 1)],
            Pod::builder("p").priority(10).build(),
            None,
            Ok(()),
        ),
        (
            "nominated; a lower-priority pod there is terminating by preemption",
            vec![terminating_by_preemption("t", 1)],
            nominated_to("a"),
            Some(unschedulable.clone()),
            Err(MSG_TERMINATING),
        ),
        (
            "same, but the nominated node is now UnschedulableAndUnresolvable",
            vec![terminating_by_preemption("t", 1)],
            nominated_to("a"),
            Some(unresolvable.clone()),
            Ok(()),
        ),
        (
            "the terminating pod has equal priority",
            vec![terminating_by_preemption("t", 10)],
            nominated_to("a"),
            Some(unschedulable.clone()),
            Ok(()),
        ),
        (
            "the terminating pod has higher priority",
            vec![terminating_by_preemption("t", 11)],
            nominated_to("a"),
            Some(unschedulable.clone()),
            Ok(()),
        ),
        (
            "a lower-priority pod terminating, but not by preemption",
            vec![terminating_by_user("t", 1)],
            nominated_to("a"),
            Some(unschedulable.clone()),
            Ok(()),
        ),
        (
            "marked preempted but not being deleted",
            vec![preempted_not_deleted("t", 1)],
            nominated_to("a"),
            Some(unschedulable.clone()),
            Ok(()),
        ),
        (
            "the terminating pod is on another node than the nominated one",
            vec![terminating_by_preemption("t", 1)],
            nominated_to("b"),
            Some(unschedulable.clone()),
            Ok(()),
        ),
        (
            "the nominated node is gone",
            vec![terminating_by_preemption("t", 1)],
            nominated_to("gone"),
            Some(unschedulable.clone()),
            Ok(()),
        ),
        (
            "nominated, one terminating pod among plain ones",
            vec![pod("x", 1, 100), terminating_by_preemption("t", 9), pod("y", 20, 100)],
            nominated_to("a"),
            Some(unschedulable.clone()),
            Err(MSG_TERMINATING),
        ),
    ];
    for (name, pods_on_a, p, verdict, want) in cases {
        let fx = Fx::new(vec![(node("a", 4000), pods_on_a), (node("b", 4000), vec![])], vec![]);
        let mut statuses = NodeStatuses::default();
        if let Some(st) = verdict {
            statuses.push(0, st);
        }
        assert_eq!(eligible_to_preempt(&p, &fx.snapshot, &statuses), want, "{name}");
    }
}

#[test]
fn eligibility_reads_the_shared_verdict_when_prefilter_rejected_every_node() {
    // PreFilter's rejection stands for every node (`absent`): when it is unresolvable, a pod
    // waiting on a terminating victim may look again.
    let t = Pod::builder("t").priority(1).deletion_timestamp(Timestamp::from_secs(1)).preempted_by_scheduler().build();
    let fx = Fx::new(vec![(node("a", 4000), vec![t])], vec![]);
    let p = Pod::builder("p").priority(10).nominated_node_name("a").build();
    let statuses = |st: Status| {
        let mut s = NodeStatuses::default();
        s.absent = Some(st);
        s
    };
    assert_eq!(eligible_to_preempt(&p, &fx.snapshot, &statuses(Status::unresolvable("x"))), Ok(()));
    assert_eq!(eligible_to_preempt(&p, &fx.snapshot, &statuses(Status::unschedulable("x"))), Err(MSG_TERMINATING));
}

#[test]
fn post_filter_reports_ineligibility_with_the_preemption_prefix() {
    let fx = Fx::new(vec![(node("a", 4000), vec![pod("low", 1, 4000)])], vec![]);
    let never = Pod::builder("p")
        .priority(10)
        .preemption_policy(PreemptionPolicy::Never)
        .container("i", &[(Cpu, 1000)])
        .build();
    let (result, st) = fx.post_filter(&DefaultPreemption::default(), &never, None, 1);
    assert_eq!(result, None);
    assert_eq!(st.code, Code::Unschedulable);
    assert_eq!(st.message(), "preemption: not eligible due to preemptionPolicy=Never.");
    // The same pod may preempt once its policy allows it.
    let may = pod("p", 10, 1000);
    let (result, st) = fx.post_filter(&DefaultPreemption::default(), &may, None, 1);
    assert!(st.is_success(), "{st}");
    assert_eq!(result.map(|r| r.nominating), Some(Nominating::Set(Sym::new("a"))));
}

#[test]
fn post_filter_trace_records_the_dry_run_it_decided_on() {
    let taint = Taint::new("k", "v", TaintEffect::NoSchedule);
    let tainted = Node::builder("t").resources(4000, 32 * GI, 110).taint(taint).build();
    let fx = Fx::new(
        vec![
            // Only a pod of equal priority to evict.
            (node("eq", 4000), vec![pod("e", 10, 3000)]),
            // Removing the low pod is not enough beside the high one.
            (node("hi", 4000), vec![pod("h", 20, 3000), pod("l", 1, 1000)]),
            // Two equal candidates: a tie after every criterion.
            (node("ok1", 4000), vec![pod("a", 1, 3000)]),
            (node("ok2", 4000), vec![pod("b", 1, 3000)]),
            // Not a potential node (untolerated taint).
            (tainted, vec![pod("c", 1, 4000)]),
        ],
        vec![],
    );
    let p = pod("p", 10, 2000);
    for seed in 0..4 {
        let (result, st, trace) = fx.post_filter_traced(&DefaultPreemption::default(), &p, seed);
        assert!(st.is_success(), "{st}");
        assert_eq!(trace.potential, 4, "every node but the tainted one");
        let found: Vec<&str> = trace.candidates.iter().map(|c| c.node.as_str()).collect();
        let mut sorted = found.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["ok1", "ok2"], "seed {seed}");
        for c in &trace.candidates {
            assert_eq!(Ok(c.clone()), fx.victims_on(&p, c.node.as_str(), None), "the dry run's own result");
        }
        let mut rejected: Vec<(&str, String)> =
            trace.rejected.iter().map(|(n, st)| (n.as_str(), format!("{}: {}", st.plugin, st.message()))).collect();
        rejected.sort();
        assert_eq!(
            rejected,
            [
                ("eq", ": No preemption victims found for incoming pod".to_owned()),
                ("hi", "NodeResourcesFit: Insufficient cpu".to_owned())
            ]
        );
        assert_eq!(trace.best, [0, 1], "both tied");
        let picked = trace.candidates[trace.best[0]].node;
        assert_eq!(result.map(|r| r.nominating), Some(Nominating::Set(picked)), "the pick is the first of the tie");
    }
}

// ---------------------------------------------------------------------------------------
// Potential nodes and candidates
// ---------------------------------------------------------------------------------------

#[test]
fn only_unschedulable_nodes_are_dry_run() {
    // Every node holds a low-priority pod whose removal would make room; only "s" failed the
    // filter in a way preemption can fix.
    let taint = Taint::new("k", "v", TaintEffect::NoSchedule);
    let tainted = Node::builder("t").resources(4000, 32 * GI, 110).taint(taint).build();
    let cordoned = Node::builder("u").resources(4000, 32 * GI, 110).unschedulable(true).build();
    let tiny = node("tiny", 1500);
    let fx = Fx::new(
        vec![
            (tainted, vec![pod("lt", 1, 4000)]),
            (cordoned, vec![pod("lu", 1, 4000)]),
            (tiny, vec![pod("ltiny", 1, 1500)]),
            (node("s", 4000), vec![pod("ls", 1, 3000)]),
        ],
        vec![],
    );
    let p = pod("p", 10, 2000);
    let (result, st) = fx.post_filter(&DefaultPreemption::default(), &p, None, 3);
    assert!(st.is_success(), "{st}");
    let r = result.expect("a result");
    assert_eq!(r.nominating, Nominating::Set(Sym::new("s")));
    assert_eq!(names(&r.victims), ["ls"]);
    assert!(r.lower_priority_nominated.is_empty());
}

#[test]
fn no_candidates_clears_the_nomination_table() {
    let taint = Taint::new("k", "v", TaintEffect::NoSchedule);
    let tainted = || Node::builder("t").resources(4000, 32 * GI, 110).taint(taint).build();
    let cordoned = || Node::builder("u").resources(4000, 32 * GI, 110).unschedulable(true).build();
    // (name, nodes, want message)
    type Case = (&'static str, Vec<(Node, Vec<Pod>)>, &'static str);
    let cases: Vec<Case> = vec![
        (
            "no node is Unschedulable",
            vec![
                (tainted(), vec![pod("a", 1, 4000)]),
                (cordoned(), vec![pod("b", 1, 4000)]),
                (node("tiny", 1000), vec![]),
            ],
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        ),
        (
            "Unschedulable nodes where the dry run fails",
            vec![
                // Only a pod of equal priority to evict.
                (node("eq", 4000), vec![pod("e", 10, 3000)]),
                // Removing the low pod is not enough beside the high one.
                (node("hi", 4000), vec![pod("h", 20, 3000), pod("l", 1, 1000)]),
                (tainted(), vec![]),
            ],
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming \
             pod, 1 Preemption is not helpful for scheduling.",
        ),
        (
            "one node, nothing lower to evict",
            vec![(node("a", 4000), vec![pod("h", 11, 3000)])],
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
    ];
    for (name, nodes, want) in cases {
        let fx = Fx::new(nodes, vec![]);
        let p = Pod::builder("p").priority(10).nominated_node_name("old").container("i", &[(Cpu, 2000)]).build();
        let (result, st) = fx.post_filter(&DefaultPreemption::default(), &p, None, 9);
        assert_eq!(result, Some(PostFilterResult::nominating(Nominating::Clear)), "{name}");
        assert_eq!(st.code, Code::Unschedulable, "{name}");
        assert_eq!(st.message(), want, "{name}");
    }
}

#[test]
fn num_candidates_table() {
    let args = |p: i32, a: i32| DefaultPreemptionArgs {
        min_candidate_nodes_percentage: p,
        min_candidate_nodes_absolute: a,
        ..Default::default()
    };
    // (percentage, absolute, potential nodes, want)
    let cases = [
        (10, 100, 0, 0),
        (10, 100, 1, 1),
        (10, 100, 50, 50),
        (10, 100, 100, 100),
        (10, 100, 999, 100),
        (10, 100, 1000, 100),
        (10, 100, 1010, 101),
        (10, 100, 5000, 500),
        (50, 1, 1, 1),
        (50, 1, 3, 1),
        (50, 1, 10, 5),
        (0, 5, 3, 3),
        (0, 5, 100, 5),
        (100, 0, 7, 7),
        (10, 0, 5, 0),
        (10, 0, 19, 1),
        (33, 2, 100, 33),
    ];
    for (p, a, n, want) in cases {
        assert_eq!(DefaultPreemption::new(args(p, a)).num_candidates(n), want, "{p}% / {a} of {n}");
    }
}

#[test]
fn args_validate_table() {
    let args = |p: i32, a: i32| DefaultPreemptionArgs {
        min_candidate_nodes_percentage: p,
        min_candidate_nodes_absolute: a,
        ..Default::default()
    };
    let cases = [
        ("defaults", args(10, 100), None),
        ("bounds", args(100, 0), None),
        ("percentage only zero", args(0, 1), None),
        ("negative percentage", args(-1, 100), Some("minCandidateNodesPercentage")),
        ("percentage above 100", args(101, 100), Some("minCandidateNodesPercentage")),
        ("negative absolute", args(10, -1), Some("minCandidateNodesAbsolute")),
        ("both zero", args(0, 0), Some("minCandidateNodesPercentage")),
    ];
    for (name, a, want) in cases {
        assert_eq!(a.validate().err().map(|e| e.field), want.map(str::to_owned), "{name}");
    }
    let parsed: DefaultPreemptionArgs = serde_json::from_str(
        r#"{"kind":"DefaultPreemptionArgs","apiVersion":"kubescheduler.config.k8s.io/v1","minCandidateNodesAbsolute":5}"#,
    )
    .expect("parses");
    assert_eq!((parsed.min_candidate_nodes_percentage, parsed.min_candidate_nodes_absolute), (10, 5));
    assert!(serde_json::from_str::<DefaultPreemptionArgs>(r#"{"minCandidates":1}"#).is_err());
}

/// Five nodes, each with one low-priority pod that must go; what differs per node is given.
fn five_nodes(per_node: impl Fn(usize) -> Pod) -> Fx {
    Fx::new((0..5).map(|i| (node(&format!("n{i}"), 2000), vec![per_node(i)])).collect(), vec![])
}

fn find(fx: &Fx, pod: &Pod, potential: &[u32], offset: usize, want: usize) -> (Vec<String>, Vec<u32>) {
    let cy = fx.cycle(pod, None);
    let filters = active_filters(&fx.profile, &cy.state);
    let following = victims::following_pods(&filters);
    let overlay = Overlay::new(&fx.profile, &cy.state, &filters);
    let dry = fx.dry(&cy, &filters, &following, &overlay, pod);
    let mut failures = NodeStatuses::default();
    let found =
        find_candidates(&dry, None, potential, offset, want, &mut failures, &mut Default::default()).expect("no error");
    let mut failed: Vec<u32> = failures.positions().collect();
    failed.sort();
    (found.iter().map(|c| c.node.to_string()).collect(), failed)
}

#[test]
fn dry_run_stops_after_enough_candidates_from_the_offset_wrapping() {
    let p = pod("p", 10, 1000);
    let all = five_nodes(|i| pod(&format!("v{i}"), 1, 2000));
    // (name, potential, offset, want, candidates)
    type Case = (&'static str, Vec<u32>, usize, usize, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        ("from the start", vec![0, 1, 2, 3, 4], 0, 2, vec!["n0", "n1"]),
        ("from an offset", vec![0, 1, 2, 3, 4], 3, 2, vec!["n3", "n4"]),
        ("wrapping", vec![0, 1, 2, 3, 4], 4, 3, vec!["n4", "n0", "n1"]),
        ("everything", vec![0, 1, 2, 3, 4], 2, 5, vec!["n2", "n3", "n4", "n0", "n1"]),
        ("more wanted than there are", vec![0, 1, 2, 3, 4], 1, 9, vec!["n1", "n2", "n3", "n4", "n0"]),
        ("want 0 still finds one", vec![0, 1, 2, 3, 4], 2, 0, vec!["n2"]),
        ("a subset of the nodes, wrapping", vec![0, 2, 4], 2, 2, vec!["n4", "n0"]),
    ];
    for (name, potential, offset, want, expect) in cases {
        let (got, failed) = find(&all, &p, &potential, offset, want);
        assert_eq!(got, expect, "{name}");
        assert!(failed.is_empty(), "{name}");
    }

    // n1 and n3 have nothing to evict: they are visited (and recorded) but do not count.
    let some_fail = five_nodes(|i| pod(&format!("v{i}"), if i % 2 == 1 { 10 } else { 1 }, 2000));
    let (got, failed) = find(&some_fail, &p, &[0, 1, 2, 3, 4], 0, 2);
    assert_eq!((got, failed), (vec!["n0".to_owned(), "n2".to_owned()], vec![1]), "failures before the stop");
    let (got, failed) = find(&some_fail, &p, &[0, 1, 2, 3, 4], 3, 2);
    assert_eq!((got, failed), (vec!["n4".to_owned(), "n0".to_owned()], vec![3]), "failures after an offset");
}

#[test]
fn dry_run_keeps_looking_until_a_candidate_violates_no_budget() {
    let p = pod("p", 10, 1000);
    // n0, n1 and n3 would break the budget of app=web; n2 and n4 would not.
    let mut fx = five_nodes(|i| {
        if i == 2 || i == 4 {
            pod(&format!("v{i}"), 1, 2000)
        } else {
            labelled(&format!("v{i}"), 1, 2000, "web")
        }
    });
    let mut objects = ClusterObjects::new();
    objects.upsert_pdb(pdb("web", "web", 0));
    fx.snapshot = fx.snapshot.clone().with_objects(objects);
    // (offset, want, candidates: non-violating first, then violating, each in visiting order)
    let cases: Vec<(usize, usize, Vec<&str>)> = vec![
        (0, 1, vec!["n2", "n0", "n1"]),
        (0, 2, vec!["n2", "n0", "n1"]),
        (0, 4, vec!["n2", "n0", "n1", "n3"]),
        (3, 1, vec!["n4", "n3"]),
        (3, 3, vec!["n4", "n3", "n0"]),
        (4, 1, vec!["n4"]),
    ];
    for (offset, want, expect) in cases {
        let (got, _) = find(&fx, &p, &[0, 1, 2, 3, 4], offset, want);
        assert_eq!(got, expect, "offset {offset}, want {want}");
    }
}

#[test]
fn parallel_dry_run_matches_the_sequential_one() {
    // 30 potential nodes: a mix of clean candidates, budget-breaking ones and failures.
    let kinds = |i: usize| match (i * 7) % 5 {
        0 => labelled(&format!("v{i}"), 1, 2000, "web"),
        1 => pod(&format!("v{i}"), 10, 2000),
        _ => pod(&format!("v{i}"), (i % 3) as i32, 2000),
    };
    let mut objects = ClusterObjects::new();
    objects.upsert_pdb(pdb("web", "web", 0));
    let fx = Fx {
        profile: Profile::default_profile(),
        snapshot: Snapshot::from_node_infos(
            (0..30).map(|i| node_info(node(&format!("n{i}"), 2000), &[kinds(i)])).collect(),
        )
        .with_objects(objects),
    };
    let p = pod("p", 10, 1000);
    let cy = fx.cycle(&p, None);
    let filters = active_filters(&fx.profile, &cy.state);
    let following = victims::following_pods(&filters);
    let overlay = Overlay::new(&fx.profile, &cy.state, &filters);
    let dry = fx.dry(&cy, &filters, &following, &overlay, &p);
    let potential: Vec<u32> = (0..30).collect();
    let pool = crate::parallel::WorkerPool::new(3);
    for offset in [0, 7, 29] {
        for want in [0, 1, 3, 10, 30] {
            let run = |pool: Option<&crate::parallel::WorkerPool>| {
                let mut failures = NodeStatuses::default();
                let c = find_candidates(&dry, pool, &potential, offset, want, &mut failures, &mut Default::default())
                    .expect("no error");
                let mut f: Vec<(u32, Status)> = failures.iter().map(|(p, st)| (p, st.clone())).collect();
                f.sort_by_key(|(p, _)| *p);
                (c, f)
            };
            assert_eq!(run(Some(&pool)), run(None), "offset {offset}, want {want}");
        }
    }
}

#[test]
fn post_filter_starts_the_dry_run_at_a_random_offset() {
    // Six equal nodes and one candidate wanted: the candidate is the node at the offset the
    // cycle's RNG draws.
    let fx =
        Fx::new((0..6).map(|i| (node(&format!("n{i}"), 2000), vec![pod(&format!("v{i}"), 1, 2000)])).collect(), vec![]);
    let plugin = DefaultPreemption::new(DefaultPreemptionArgs {
        min_candidate_nodes_percentage: 0,
        min_candidate_nodes_absolute: 1,
        ..Default::default()
    });
    let p = pod("p", 10, 1000);
    let mut chosen = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let offset = Rng::seed(seed).below(6);
        let (result, st) = fx.post_filter(&plugin, &p, None, seed);
        assert!(st.is_success(), "{st}");
        let node = format!("n{offset}");
        assert_eq!(result.map(|r| r.nominating), Some(Nominating::Set(Sym::new(&node))), "seed {seed}");
        chosen.insert(node);
    }
    assert!(chosen.len() > 3, "the offset varies: {chosen:?}");
}

#[test]
fn post_filter_lists_lower_priority_pods_nominated_to_the_chosen_node() {
    let taint = Taint::new("k", "v", TaintEffect::NoSchedule);
    let fx = Fx::new(
        vec![
            (node("a", 4000), vec![pod("v", 1, 3000)]),
            (Node::builder("t").resources(4000, 32 * GI, 110).taint(taint).build(), vec![]),
        ],
        vec![],
    );
    let nominator = Nominator::new();
    let lower = pod("lower", 5, 100);
    let equal = pod("equal", 10, 100);
    let lower_elsewhere = pod("lower-elsewhere", 5, 100);
    nominator.add(&lower, Some(Sym::new("a")));
    nominator.add(&equal, Some(Sym::new("a")));
    nominator.add(&lower_elsewhere, Some(Sym::new("t")));
    let p = pod("p", 10, 2000);
    let (result, st) = fx.post_filter(&DefaultPreemption::default(), &p, Some(&nominator), 0);
    assert!(st.is_success(), "{st}");
    let r = result.expect("a result");
    assert_eq!(r.nominating, Nominating::Set(Sym::new("a")));
    assert_eq!(names(&r.victims), ["v"]);
    assert_eq!(names(&r.lower_priority_nominated), ["lower"]);
}

// ---------------------------------------------------------------------------------------
// Victims on one node
// ---------------------------------------------------------------------------------------

/// (name, pods on the 4-CPU node "n", budgets, preemptor, victims or the failure's message,
/// PDB violations)
type VictimCase =
    (&'static str, Vec<Pod>, Vec<PodDisruptionBudget>, Pod, Result<Vec<&'static str>, &'static str>, usize);

#[test]
fn select_victims_table() {
    let cases: Vec<VictimCase> = vec![
        (
            "the higher-priority pod is reprieved first",
            vec![started("low", 1, 2000, 1), started("high", 5, 2000, 100)],
            vec![],
            pod("p", 10, 2000),
            Ok(vec!["low"]),
            0,
        ),
        (
            "equal priority: the earlier start is reprieved",
            vec![started("late", 1, 2000, 10), started("early", 1, 2000, 5)],
            vec![],
            pod("p", 10, 2000),
            Ok(vec!["late"]),
            0,
        ),
        (
            "equal priority, listed the other way round",
            vec![started("early", 1, 2000, 5), started("late", 1, 2000, 10)],
            vec![],
            pod("p", 10, 2000),
            Ok(vec!["late"]),
            0,
        ),
        (
            "a pod that has not started counts as starting now",
            vec![pod("unstarted", 1, 2000), started("old", 1, 2000, 500)],
            vec![],
            pod("p", 10, 2000),
            Ok(vec!["unstarted"]),
            0,
        ),
        (
            "greedy: a later, smaller pod is reprieved when the big one could not be",
            vec![started("big", 5, 3000, 1), started("small", 1, 1000, 1)],
            vec![],
            pod("p", 10, 3000),
            Ok(vec!["big"]),
            0,
        ),
        (
            "everything lower must go; victims most important first",
            vec![
                started("a", 1, 1000, 3),
                started("b", 3, 1000, 1),
                started("c", 1, 1000, 2),
                started("d", 2, 1000, 9),
            ],
            vec![],
            pod("p", 10, 4000),
            Ok(vec!["b", "d", "c", "a"]),
            0,
        ),
        (
            "pods of equal priority are never victims",
            vec![pod("same", 10, 2000), pod("low", 1, 2000)],
            vec![],
            pod("p", 10, 2000),
            Ok(vec!["low"]),
            0,
        ),
        (
            "equal priority pods do not make room",
            vec![pod("same", 10, 2000), pod("low", 1, 2000)],
            vec![],
            pod("p", 10, 4000),
            Err("Insufficient cpu"),
            0,
        ),
        (
            "does not fit even with every lower pod gone",
            vec![pod("high", 20, 3000), pod("low", 1, 1000)],
            vec![],
            pod("p", 10, 2000),
            Err("Insufficient cpu"),
            0,
        ),
        ("no lower-priority pods", vec![pod("high", 20, 3000)], vec![], pod("p", 10, 2000), Err(REASON_NO_VICTIMS), 0),
        ("an empty node", vec![], vec![], pod("p", 10, 5000), Err(REASON_NO_VICTIMS), 0),
        (
            "negative priorities are victims of a pod of priority 0",
            vec![started("m", -5, 2000, 1), started("n", -1, 2000, 1)],
            vec![],
            pod("p", 0, 2000),
            Ok(vec!["m"]),
            0,
        ),
        (
            "without a budget the higher-priority pod stays",
            vec![labelled("web", 1, 2000, "web"), pod("other", 5, 2000)],
            vec![],
            pod("p", 10, 2000),
            Ok(vec!["web"]),
            0,
        ),
        (
            "a budget-protected pod is reprieved before a more important one",
            vec![labelled("web", 1, 2000, "web"), pod("other", 5, 2000)],
            vec![pdb("b", "web", 0)],
            pod("p", 10, 2000),
            Ok(vec!["other"]),
            0,
        ),
        (
            "a budget with room left does not protect",
            vec![labelled("web", 1, 2000, "web"), pod("other", 5, 2000)],
            vec![pdb("b", "web", 1)],
            pod("p", 10, 2000),
            Ok(vec!["web"]),
            0,
        ),
        (
            "a budget in another namespace does not protect",
            vec![labelled("web", 1, 2000, "web"), pod("other", 5, 2000)],
            vec![PodDisruptionBudget { namespace: Sym::new("prod"), ..pdb("b", "web", 0) }],
            pod("p", 10, 2000),
            Ok(vec!["web"]),
            0,
        ),
        (
            "a violating victim is counted; victims re-sorted across the groups",
            vec![labelled("web", 1, 2000, "web"), pod("other", 5, 2000)],
            vec![pdb("b", "web", 0)],
            pod("p", 10, 4000),
            Ok(vec!["other", "web"]),
            1,
        ),
        (
            "the allowance is spent most important first",
            vec![web_started("w3", 1, 1000, 3), web_started("w1", 1, 1000, 1), web_started("w2", 1, 1000, 2)],
            vec![pdb("b", "web", 1)],
            pod("p", 10, 4000),
            // w1 spends the one allowed disruption; w2 and w3 break the budget.
            Ok(vec!["w1", "w2", "w3"]),
            2,
        ),
        (
            "a pod already counted as disrupted spends nothing",
            vec![labelled("web", 1, 2000, "web"), pod("other", 5, 2000)],
            vec![PodDisruptionBudget { disrupted_pods: vec![Arc::from("web")], ..pdb("b", "web", 0) }],
            pod("p", 10, 2000),
            Ok(vec!["web"]),
            0,
        ),
        (
            "two budgets over one pod: breaking either violates",
            vec![
                Pod::builder("both")
                    .priority(1)
                    .label("app", "web")
                    .label("tier", "x")
                    .container("i", &[(Cpu, 2000)])
                    .build(),
                pod("other", 5, 2000),
            ],
            vec![
                pdb("b", "web", 1),
                PodDisruptionBudget {
                    selector: Some(LabelSelector {
                        match_labels: Labels::from_pairs([("tier", "x")]),
                        ..Default::default()
                    }),
                    ..pdb("c", "x", 0)
                },
            ],
            pod("p", 10, 2000),
            Ok(vec!["other"]),
            0,
        ),
        (
            "within the violating group, higher priority is reprieved first",
            vec![labelled("w-low", 1, 1900, "web"), labelled("w-high", 2, 1900, "web"), pod("free", 0, 100)],
            vec![pdb("b", "web", 0)],
            pod("p", 10, 2000),
            // Both break the budget; w-high is tried first and stays.
            Ok(vec!["w-low"]),
            1,
        ),
    ];
    for (name, pods, pdbs, p, want, violations) in cases {
        let fx = Fx::new(vec![(node("n", 4000), pods)], pdbs);
        match (fx.victims_on(&p, "n", None), want) {
            (Ok(c), Ok(want)) => {
                assert_eq!(c.node, Sym::new("n"), "{name}");
                assert_eq!(names(&c.victims.pods), want, "{name}");
                assert_eq!(c.victims.num_pdb_violations, violations, "{name}: violations");
            }
            (Err(st), Err(msg)) => {
                assert_eq!(st.message(), msg, "{name}");
                let code =
                    if msg == REASON_NO_VICTIMS { Code::UnschedulableAndUnresolvable } else { Code::Unschedulable };
                assert_eq!(st.code, code, "{name}");
            }
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn select_victims_respects_anti_affinity_and_nominated_pods() {
    use crate::testing::requires_pod_anti_affinity;
    // Resources are plentiful; the preemptor refuses to share the node with app=db, so the
    // dry run must remove the db pod (the InterPodAffinity extension sees it go).
    let fx =
        Fx::new(vec![(node("n", 8000), vec![labelled("db", 1, 100, "db"), labelled("web", 1, 100, "web")])], vec![]);
    let p = Pod::builder("p").priority(10).affinity(requires_pod_anti_affinity("app", "db")).build();
    let c = fx.victims_on(&p, "n", None).expect("a candidate");
    assert_eq!(names(&c.victims.pods), ["db"]);

    // A pod of higher priority nominated to the node keeps its room during the dry run.
    let fx = Fx::new(vec![(node("n", 4000), vec![started("a", 1, 2000, 1), started("b", 1, 2000, 2)])], vec![]);
    let p = pod("p", 10, 2000);
    assert_eq!(names(&fx.victims_on(&p, "n", None).expect("candidate").victims.pods), ["b"]);
    let nominator = Nominator::new();
    nominator.add(&pod("h", 20, 2000), Some(Sym::new("n")));
    assert_eq!(names(&fx.victims_on(&p, "n", Some(&nominator)).expect("candidate").victims.pods), ["a", "b"]);
    // One of lower priority does not.
    let nominator = Nominator::new();
    nominator.add(&pod("l", 5, 2000), Some(Sym::new("n")));
    assert_eq!(names(&fx.victims_on(&p, "n", Some(&nominator)).expect("candidate").victims.pods), ["b"]);
}

#[test]
fn split_by_pdb_keeps_order_and_spends_allowances() {
    let w = |n: &str| labelled(n, 1, 100, "web");
    let pods = vec![w("a"), pod("x", 1, 100), w("b"), w("c")];
    let (mut violating, mut clean) = (Vec::new(), Vec::new());
    victims::split_by_pdb(&pods, &[pdb("b", "web", 1)], &mut violating, &mut clean);
    assert_eq!(
        (names(&violating), names(&clean)),
        (vec!["b".to_owned(), "c".to_owned()], vec!["a".to_owned(), "x".to_owned()])
    );
    victims::split_by_pdb(&pods, &[], &mut violating, &mut clean);
    assert_eq!((violating.len(), clean.len()), (0, 4), "buffers are cleared");
}

#[test]
fn more_important_orders_by_priority_then_start() {
    use std::cmp::Ordering::*;
    let cases = [
        ("higher priority first", started("a", 5, 1, 9), started("b", 1, 1, 1), Less),
        ("lower priority after", started("a", 1, 1, 1), started("b", 5, 1, 9), Greater),
        ("earlier start first", started("a", 1, 1, 1), started("b", 1, 1, 2), Less),
        ("started before unstarted", started("a", 1, 1, 1_000_000), pod("b", 1, 1), Less),
        ("both unstarted tie", pod("a", 1, 1), pod("b", 1, 1), Equal),
        ("extreme priorities", pod("a", i32::MIN, 1), pod("b", i32::MAX, 1), Greater),
    ];
    for (name, a, b, want) in cases {
        assert_eq!(victims::more_important(&a, &b), want, "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// pickOneNode
// ---------------------------------------------------------------------------------------

/// A victim of `priority` started at `t` seconds (`None`: not started).
fn v(priority: i32, t: Option<u64>) -> Pod {
    let b = Pod::builder("v").priority(priority);
    match t {
        Some(t) => b.start_time(Timestamp::from_secs(t)).build(),
        None => b.build(),
    }
}

fn cand(node: &str, violations: usize, victims: Vec<Pod>) -> Candidate {
    Candidate { node: Sym::new(node), victims: Victims { pods: victims, num_pdb_violations: violations } }
}

#[test]
fn best_of_decided_names_the_criterion_that_left_one_candidate() {
    let s = Some;
    let keys = |cands: &[Candidate]| cands.iter().map(PickKey::of).collect::<Vec<_>>();
    // (candidates, the picked index, what decided)
    let cases: Vec<(Vec<Candidate>, usize, Decided)> = vec![
        (vec![], usize::MAX, Decided::NoCandidates),
        (vec![cand("a", 3, vec![v(9, s(1))])], 0, Decided::OnlyCandidate),
        (vec![cand("a", 0, vec![v(1, s(1))]), cand("b", 4, vec![])], 1, Decided::NoVictims),
        (vec![cand("a", 1, vec![v(1, s(1))]), cand("b", 0, vec![v(9, s(1))])], 1, Decided::Criterion(0)),
        (vec![cand("a", 0, vec![v(5, s(1))]), cand("b", 0, vec![v(3, s(1)), v(3, s(1))])], 1, Decided::Criterion(1)),
        (
            vec![cand("a", 0, vec![v(5, s(1)), v(2, s(1))]), cand("b", 0, vec![v(5, s(1)), v(1, s(1))])],
            1,
            Decided::Criterion(2),
        ),
        (
            vec![cand("a", 0, vec![v(0, s(1)), v(i32::MIN, s(1))]), cand("b", 0, vec![v(0, s(1))])],
            1,
            Decided::Criterion(3),
        ),
        (vec![cand("a", 0, vec![v(5, s(100))]), cand("b", 0, vec![v(5, s(200))])], 1, Decided::Criterion(4)),
        (vec![cand("a", 0, vec![v(5, s(100))]), cand("b", 0, vec![v(5, s(100))])], 0, Decided::Tied),
    ];
    for (cands, picked, want) in cases {
        let (best, decided) = best_of_decided(&keys(&cands));
        assert_eq!(decided, want, "{cands:?}");
        assert_eq!(best.first().copied().unwrap_or(usize::MAX), picked, "{cands:?}");
        assert_eq!(best, best_candidates(&cands), "{cands:?}");
    }
    // The figures the criteria compare, as a reader reads them.
    let key = PickKey::of(&cand("a", 2, vec![v(7, s(3)), v(-1, None)]));
    let shift = 1i64 << 31;
    assert_eq!(key.criteria(), (2, 7, 7 + shift + (-1 + shift), 2, Some(3_000_000_000)));
    assert_eq!(PickKey::of(&cand("a", 0, vec![v(7, None)])).criteria().4, None, "not started");
    assert_eq!(Decided::Criterion(3).describe(), "fewest victims");
}

#[test]
fn pick_one_node_table() {
    let s = Some;
    // (name, candidates, the index picked)
    let cases: Vec<(&str, Vec<Candidate>, usize)> = vec![
        ("a single candidate", vec![cand("a", 3, vec![v(9, s(1))])], 0),
        (
            "a candidate without victims wins at once",
            vec![cand("a", 0, vec![v(-100, s(1))]), cand("b", 0, vec![v(-200, s(1))]), cand("c", 7, vec![])],
            2,
        ),
        (
            "fewest PDB violations first",
            vec![cand("a", 1, vec![v(1, s(1))]), cand("b", 0, vec![v(100, s(1)), v(100, s(1)), v(100, s(1))])],
            1,
        ),
        (
            "then the lowest priority of the most important victim",
            vec![cand("a", 0, vec![v(5, s(1))]), cand("b", 0, vec![v(3, s(1)), v(3, s(1)), v(3, s(1))])],
            1,
        ),
        (
            "then the smallest priority sum",
            vec![cand("a", 0, vec![v(5, s(1)), v(2, s(1))]), cand("b", 0, vec![v(5, s(1)), v(1, s(1))])],
            1,
        ),
        (
            "the shifted sum prefers fewer victims over a smaller raw sum",
            vec![cand("a", 0, vec![v(5, s(1)), v(1, s(1)), v(1, s(1))]), cand("b", 0, vec![v(5, s(1)), v(4, s(1))])],
            1,
        ),
        (
            // Raw sums: a = -20 < b = -10 would pick a; shifted by 2^31 each, b is smaller.
            "negative priorities: the shift makes the single victim cheaper",
            vec![cand("a", 0, vec![v(-10, s(1)), v(-10, s(1))]), cand("b", 0, vec![v(-10, s(1))])],
            1,
        ),
        (
            "negative priorities, equal counts: the raw order holds",
            vec![cand("a", 0, vec![v(-10, s(1)), v(-30, s(1))]), cand("b", 0, vec![v(-10, s(1)), v(-20, s(1))])],
            0,
        ),
        (
            // Shifted sums are equal: 0 + 2^31 == (0 + 2^31) + (i32::MIN + 2^31).
            "then fewest victims",
            vec![cand("a", 0, vec![v(0, s(1)), v(i32::MIN, s(1))]), cand("b", 0, vec![v(0, s(1))])],
            1,
        ),
        (
            "then the latest start of the most important victims",
            vec![cand("a", 0, vec![v(5, s(100)), v(1, s(999))]), cand("b", 0, vec![v(5, s(200)), v(1, s(0))])],
            1,
        ),
        (
            "the earliest among several most important victims counts",
            vec![cand("a", 0, vec![v(5, s(300)), v(5, s(50))]), cand("b", 0, vec![v(5, s(100)), v(5, s(100))])],
            1,
        ),
        (
            "a victim that has not started counts as starting now",
            vec![cand("a", 0, vec![v(5, s(1000))]), cand("b", 0, vec![v(5, None)])],
            1,
        ),
        (
            "an earlier started victim beside an unstarted one counts",
            vec![cand("a", 0, vec![v(5, s(10)), v(5, None)]), cand("b", 0, vec![v(5, s(20)), v(5, None)])],
            1,
        ),
        ("a full tie: the first", vec![cand("a", 0, vec![v(5, s(1))]), cand("b", 0, vec![v(5, s(1))])], 0),
        (
            "a tie among the later ones: the first of them",
            vec![cand("a", 1, vec![v(5, s(1))]), cand("b", 0, vec![v(5, s(7))]), cand("c", 0, vec![v(5, s(7))])],
            1,
        ),
        (
            "each criterion only among those tied so far",
            vec![
                // Best on start time, but loses on the sum.
                cand("a", 0, vec![v(5, s(900)), v(4, s(900))]),
                // Loses on violations.
                cand("b", 1, vec![v(1, s(1))]),
                // Ties a on the top priority, wins on the sum.
                cand("c", 0, vec![v(5, s(1)), v(3, s(1))]),
            ],
            2,
        ),
        ("no candidates", vec![], 0),
    ];
    for (name, cands, want) in cases {
        assert_eq!(pick_one_node(&cands), want, "{name}");
    }
}

/// pickOneNode written plainly: the candidates ordered by the tuple of the five criteria,
/// the first of the best (after a candidate without victims, which wins at once).
fn naive_pick(cands: &[Candidate]) -> usize {
    if let Some(i) = cands.iter().position(|c| c.victims.pods.is_empty()) {
        return i;
    }
    let key = |c: &Candidate| {
        let top = c.victims.pods.iter().map(|p| p.priority).max().unwrap_or(i32::MIN);
        let sum: i128 = c.victims.pods.iter().map(|p| p.priority as i128 + (1i128 << 31)).sum();
        let earliest_top = c
            .victims
            .pods
            .iter()
            .filter(|p| p.priority == top)
            .map(|p| p.start_time.map_or(u64::MAX, |t| t.0))
            .min()
            .unwrap_or(u64::MAX);
        (c.victims.num_pdb_violations, top, sum, c.victims.pods.len(), std::cmp::Reverse(earliest_top))
    };
    let mut best = 0;
    for i in 1..cands.len() {
        if key(&cands[i]) < key(&cands[best]) {
            best = i;
        }
    }
    best
}

/// Every candidate tied with the naive pick on all five criteria (the pick alone when it has
/// no victims).
fn naive_best(cands: &[Candidate]) -> Vec<usize> {
    if cands.is_empty() {
        return Vec::new();
    }
    let pick = naive_pick(cands);
    if cands[pick].victims.pods.is_empty() {
        return vec![pick];
    }
    let key = |c: &Candidate| {
        let top = c.victims.pods.iter().map(|p| p.priority).max().unwrap_or(i32::MIN);
        let sum: i128 = c.victims.pods.iter().map(|p| p.priority as i128 + (1i128 << 31)).sum();
        let earliest_top =
            c.victims.pods.iter().filter(|p| p.priority == top).map(|p| p.start_time.map_or(u64::MAX, |t| t.0)).min();
        (c.victims.num_pdb_violations, top, sum, c.victims.pods.len(), earliest_top)
    };
    (0..cands.len()).filter(|&i| key(&cands[i]) == key(&cands[pick])).collect()
}

fn arb_priority() -> impl Strategy<Value = i32> {
    prop_oneof![4 => -3i32..=3, 1 => Just(i32::MIN), 1 => Just(i32::MAX), 1 => Just(-2_000_000_000), 1 => any::<i32>()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// pickOneNode agrees with the plain tuple ordering on random candidate lists (victims
    /// sorted most important first, as the dry run returns them).
    #[test]
    fn pick_one_node_matches_the_naive_model(
        raw in prop::collection::vec(
            (0usize..3, prop::collection::vec((arb_priority(), prop::option::of(0u64..4)), 0..4)),
            1..7,
        ),
    ) {
        let cands: Vec<Candidate> = raw
            .iter()
            .enumerate()
            .map(|(i, (viol, vs))| {
                let mut pods: Vec<Pod> = vs.iter().map(|&(p, t)| v(p, t)).collect();
                pods.sort_by(victims::more_important);
                cand(&format!("n{i}"), *viol, pods)
            })
            .collect();
        prop_assert_eq!(pick_one_node(&cands), naive_pick(&cands));
        prop_assert_eq!(best_candidates(&cands), naive_best(&cands));
    }
}

// ---------------------------------------------------------------------------------------
// The whole plugin against a plain model, when only resources constrain the pod
// ---------------------------------------------------------------------------------------

/// A pod of the model: priority, cpu (milli), memory (MiB), start (s), app label.
#[derive(Clone, Debug)]
struct MPod {
    name: String,
    priority: i32,
    cpu: i64,
    mem: i64,
    start: Option<u64>,
    app: Option<u8>,
}

#[derive(Clone, Debug)]
struct MNode {
    name: String,
    cpu: i64,
    mem: i64,
    pods: Vec<MPod>,
}

/// Whether the preemptor (`cpu`, `mem`) fits beside `pods` on `node`.
fn model_fits(node: &MNode, pods: &[&MPod], cpu: i64, mem: i64) -> bool {
    let used_cpu: i64 = pods.iter().map(|p| p.cpu).sum();
    let used_mem: i64 = pods.iter().map(|p| p.mem).sum();
    used_cpu + cpu <= node.cpu && used_mem + mem <= node.mem && pods.len() < 110
}

/// The dry run as the issue describes it: sort by priority (desc) then start (asc, unstarted
/// last), budget-breaking pods first, put back greedily. `None`: not a candidate.
fn model_victims(node: &MNode, pre: &MPod, pdbs: &[(u8, i32)]) -> Option<(Vec<String>, usize)> {
    let (mut lower, keep): (Vec<&MPod>, Vec<&MPod>) = node.pods.iter().partition(|p| p.priority < pre.priority);
    if lower.is_empty() || !model_fits(node, &keep, pre.cpu, pre.mem) {
        return None;
    }
    let start = |p: &MPod| p.start.unwrap_or(u64::MAX);
    lower.sort_by(|a, b| b.priority.cmp(&a.priority).then(start(a).cmp(&start(b))));
    let mut allowed: Vec<i32> = pdbs.iter().map(|&(_, n)| n).collect();
    let mut violating = Vec::new();
    let mut clean = Vec::new();
    for p in &lower {
        let mut breaks = false;
        for (i, &(app, _)) in pdbs.iter().enumerate() {
            if p.app == Some(app) {
                allowed[i] -= 1;
                breaks |= allowed[i] < 0;
            }
        }
        if breaks {
            violating.push(*p);
        } else {
            clean.push(*p);
        }
    }
    let mut kept = keep;
    let mut victims: Vec<&MPod> = Vec::new();
    let mut violations = 0;
    for (group, counts) in [(&violating, true), (&clean, false)] {
        for p in group.iter() {
            kept.push(p);
            if !model_fits(node, &kept, pre.cpu, pre.mem) {
                kept.pop();
                victims.push(p);
                violations += counts as usize;
            }
        }
    }
    victims.sort_by(|a, b| b.priority.cmp(&a.priority).then(start(a).cmp(&start(b))));
    Some((victims.iter().map(|p| p.name.clone()).collect(), violations))
}

fn arb_model_pod() -> impl Strategy<Value = RawPod> {
    (
        prop_oneof![6 => -4i32..=5, 1 => Just(i32::MIN), 1 => Just(-2_000_000_000)],
        (1i64..=6).prop_map(|k| k * 250),
        (1i64..=4).prop_map(|k| k * 256),
        prop::option::of(0u64..5),
        prop::option::of(0u8..2),
    )
}

/// (priority, cpu in quarter cores, memory in 256Mi, start, app label)
type RawPod = (i32, i64, i64, Option<u64>, Option<u8>);

/// Nodes as (cpu, memory in MiB, pods).
fn arb_cluster() -> impl Strategy<Value = Vec<(i64, i64, Vec<RawPod>)>> {
    prop::collection::vec(
        (
            (4i64..=8).prop_map(|k| k * 500),
            (2i64..=4).prop_map(|k| k * 1024),
            prop::collection::vec(arb_model_pod(), 0..9),
        ),
        1..=6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Random small clusters and a pod that fits nowhere: the plugin's choice is a valid,
    /// minimal preemption, equal to the plain model's (same candidates, same victims, same
    /// node by the naive pick).
    #[test]
    fn preemption_matches_the_model(
        cluster in arb_cluster(),
        pdbs in prop::collection::vec((0u8..2, 0i32..3), 0..=2),
        pre_priority in -2i32..=6,
        extra_cpu in 1i64..800,
        pre_mem in (1i64..=6).prop_map(|k| k * 256),
        args in prop_oneof![
            Just((10, 100)),
            (0i32..=100, 0i32..=6).prop_filter("not both zero", |&(p, a)| p != 0 || a != 0),
        ],
        seed in any::<u64>(),
    ) {
        // The model cluster: pods are placed only where they fit.
        let mut nodes: Vec<MNode> = Vec::new();
        for (i, (cpu, mem, pods)) in cluster.iter().enumerate() {
            let mut n = MNode { name: format!("n{i}"), cpu: *cpu, mem: *mem, pods: vec![] };
            for (j, &(priority, pcpu, pmem, start, app)) in pods.iter().enumerate() {
                let p = MPod { name: format!("p{i}-{j}"), priority, cpu: pcpu, mem: pmem, start, app };
                let refs: Vec<&MPod> = n.pods.iter().collect();
                if model_fits(&n, &refs, p.cpu, p.mem) {
                    n.pods.push(p);
                }
            }
            nodes.push(n);
        }
        let max_free = nodes.iter().map(|n| n.cpu - n.pods.iter().map(|p| p.cpu).sum::<i64>()).max().unwrap_or(0);
        let pre = MPod { name: "pre".into(), priority: pre_priority, cpu: max_free + extra_cpu, mem: pre_mem, start: None, app: None };

        // The same cluster for the engine.
        let to_pod = |p: &MPod| {
            let mut b = Pod::builder(&p.name).priority(p.priority).container("i", &[(Cpu, p.cpu), (Memory, p.mem * MI)]);
            if let Some(t) = p.start { b = b.start_time(Timestamp::from_secs(t)); }
            if let Some(a) = p.app { b = b.label("app", if a == 0 { "a" } else { "b" }); }
            b.build()
        };
        let budgets: Vec<PodDisruptionBudget> = pdbs
            .iter()
            .enumerate()
            .map(|(i, &(app, allowed))| pdb(&format!("b{i}"), if app == 0 { "a" } else { "b" }, allowed))
            .collect();
        let fx = Fx::new(
            nodes
                .iter()
                .map(|n| (Node::builder(&n.name).resources(n.cpu, n.mem * MI, 110).build(), n.pods.iter().map(to_pod).collect()))
                .collect(),
            budgets,
        );
        let preemptor = to_pod(&pre);
        let plugin_args = DefaultPreemptionArgs { min_candidate_nodes_percentage: args.0, min_candidate_nodes_absolute: args.1, ..Default::default() };
        let plugin = DefaultPreemption::new(plugin_args);
        let (result, st) = fx.post_filter(&plugin, &preemptor, None, seed);

        // The model: potential nodes are those where the pod could fit at all.
        let potential: Vec<usize> = (0..nodes.len()).filter(|&i| pre.cpu <= nodes[i].cpu && pre.mem <= nodes[i].mem).collect();
        let mut model_clean = Vec::new();
        let mut model_violating = Vec::new();
        if !potential.is_empty() {
            let want = {
                let n = potential.len() as i64;
                (n * args.0 as i64 / 100).max(args.1 as i64).min(n) as usize
            };
            let offset = Rng::seed(seed).below(potential.len() as u64) as usize;
            for k in 0..potential.len() {
                if !model_clean.is_empty() && model_clean.len() + model_violating.len() >= want {
                    break;
                }
                let i = potential[(offset + k) % potential.len()];
                if let Some((victims, violations)) = model_victims(&nodes[i], &pre, &pdbs) {
                    let c = (i, victims, violations);
                    if violations == 0 { model_clean.push(c) } else { model_violating.push(c) }
                }
            }
        }
        let model_cands: Vec<(usize, Vec<String>, usize)> = model_clean.into_iter().chain(model_violating).collect();

        // Per node, the engine's dry run equals the model's.
        let cy = fx.cycle(&preemptor, None);
        let filters = active_filters(&fx.profile, &cy.state);
        let following = victims::following_pods(&filters);
        let overlay = Overlay::new(&fx.profile, &cy.state, &filters);
        for &i in &potential {
            let got = select_victims(&fx.dry(&cy, &filters, &following, &overlay, &preemptor), fx.snapshot.node_at(i).unwrap(), &mut victims::Scratch::default());
            let want = model_victims(&nodes[i], &pre, &pdbs);
            match (got, want) {
                (Ok(c), Some((victims, violations))) => {
                    prop_assert_eq!(names(&c.victims.pods), victims, "node {}", i);
                    prop_assert_eq!(c.victims.num_pdb_violations, violations, "node {}", i);
                }
                (Err(_), None) => {}
                (got, want) => prop_assert!(false, "node {}: got {:?}, model {:?}", i, got, want),
            }
        }

        if model_cands.is_empty() {
            prop_assert_eq!(result, Some(PostFilterResult::nominating(Nominating::Clear)));
            prop_assert_eq!(st.code, Code::Unschedulable);
            let prefix = format!("preemption: 0/{} nodes are available: ", nodes.len());
            prop_assert!(st.message().starts_with(&prefix), "{}", st.message());
            return Ok(());
        }
        prop_assert!(st.is_success(), "{}", st);
        let r = result.expect("a result");
        let Nominating::Set(chosen) = r.nominating else {
            return Err(TestCaseError::fail(format!("nominating {:?}", r.nominating)));
        };

        // The naive pick over the model's candidates (in the same order) names the same node.
        let as_candidates: Vec<Candidate> = model_cands
            .iter()
            .map(|(i, victims, violations)| {
                let pods = victims
                    .iter()
                    .map(|n| to_pod(nodes[*i].pods.iter().find(|p| &p.name == n).unwrap()))
                    .collect();
                cand(&nodes[*i].name, *violations, pods)
            })
            .collect();
        let best = &model_cands[naive_pick(&as_candidates)];
        prop_assert_eq!(chosen, Sym::new(&nodes[best.0].name));
        prop_assert_eq!(names(&r.victims), best.1.clone());

        // Independently of the model: every victim is less important, the pod fits once
        // they are gone, and putting any one of them back makes it not fit.
        let info = fx.snapshot.get(chosen).unwrap();
        for v in &r.victims {
            prop_assert!(v.priority < preemptor.priority, "victim {} of priority {}", v.name, v.priority);
            prop_assert!(info.pods().iter().any(|p| p.uid == v.uid), "victim {} is on the node", v.name);
        }
        let mut without: NodeInfo = (**info).clone();
        for v in &r.victims {
            without.remove_pod(&v.uid);
        }
        let st = run_filters(&filters, &cy.state, &preemptor, &without);
        prop_assert!(st.is_success(), "fits without the victims: {}", st);
        for v in &r.victims {
            let mut back = without.clone();
            back.add_pod(v.clone());
            prop_assert!(!run_filters(&filters, &cy.state, &preemptor, &back).is_success(), "victim {} was needless", v.name);
        }
        let mut sorted = r.victims.clone();
        sorted.sort_by(victims::more_important);
        prop_assert_eq!(names(&r.victims), names(&sorted), "victims most important first");
    }
}

// ---------------------------------------------------------------------------------------
// The dry run's copies agree
// ---------------------------------------------------------------------------------------

/// (priority, cpu in quarter cores, wants a gpu, preferred anti-affinity, required anti-affinity, nominated)
type CopyPod = (i32, i64, bool, bool, bool, bool);

fn arb_copy_pod() -> impl Strategy<Value = CopyPod> {
    (
        -2i32..=6,
        1i64..=8,
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.3),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The dry run and the two-pass filter judge a node the same whether they work on rows
    /// (`HotTally`), on a copy of the aggregates, or on a full copy of the node: random nodes
    /// (unschedulable, tainted, few pod slots, gpus), pods with and without anti-affinity or
    /// extended resources, and nominated pods of either priority.
    #[test]
    fn dry_run_copies_agree(
        nodes in prop::collection::vec(
            ((4i64..=8).prop_map(|k| k * 500), prop::bool::weighted(0.15), prop::bool::weighted(0.15), 2i64..=12, 0i64..=2, prop::collection::vec(arb_copy_pod(), 0..8)),
            1..=5,
        ),
        pre in (-1i32..=6, 1i64..=16, prop::bool::weighted(0.2)),
    ) {
        let gpu = ResourceName::Scalar(Sym::new("example.com/gpu"));
        let nominator = Nominator::new();
        let mut built = Vec::new();
        for (i, (cpu, unschedulable, tainted, slots, gpus, pods)) in nodes.iter().enumerate() {
            let name = format!("n{i}");
            let mut b = Node::builder(&name)
                .resources(*cpu, 32 * GI, *slots)
                .capacity(gpu, *gpus)
                .label("kubernetes.io/hostname", &name)
                .unschedulable(*unschedulable);
            if *tainted {
                b = b.taint(Taint::new("dedicated", "x", TaintEffect::NoSchedule));
            }
            let mut placed = Vec::new();
            for (j, &(priority, quarters, wants_gpu, preferred, required, nominated)) in pods.iter().enumerate() {
                let mut requests = vec![(Cpu, quarters * 250), (Memory, MI)];
                if wants_gpu {
                    requests.push((gpu, 1));
                }
                let mut pb = Pod::builder(&format!("p{i}-{j}")).priority(priority).label("app", "web").container("i", &requests);
                if required {
                    pb = pb.affinity(crate::testing::requires_pod_anti_affinity("app", "db"));
                } else if preferred {
                    pb = pb.affinity(crate::testing::prefers_pod_anti_affinity(1, crate::testing::pod_affinity_term("app", "db", "kubernetes.io/hostname")));
                }
                let p = pb.build();
                if nominated {
                    nominator.add(&p, Some(Sym::new(&name)));
                } else {
                    placed.push(p);
                }
            }
            built.push((b.build(), placed));
        }
        let fx = Fx::new(built, Vec::new());
        let mut requests = vec![(Cpu, pre.1 * 250), (Memory, MI)];
        if pre.2 {
            requests.push((gpu, 1));
        }
        let preemptor = Pod::builder("pre").priority(pre.0).container("i", &requests).build();
        let cy = fx.cycle(&preemptor, Some(&nominator));
        let filters = active_filters(&fx.profile, &cy.state);
        let following = victims::following_pods(&filters);
        let rows = Overlay::new(&fx.profile, &cy.state, &filters);
        let full = Overlay { extensions: rows.extensions.clone(), aggregates_only: false };
        let mut marked = NominatedPods::for_pod(Some(&nominator), &preemptor);
        marked.mark_positions(&fx.snapshot);
        for i in 0..fx.snapshot.num_nodes() {
            let node = fx.snapshot.node_at(i).unwrap();
            let on_rows = run_filters_with_nominated(&rows, &filters, &cy.state, &preemptor, node, &cy.nominated, &fx.snapshot);
            let on_copy = run_filters_with_nominated(&full, &filters, &cy.state, &preemptor, node, &cy.nominated, &fx.snapshot);
            prop_assert_eq!(&on_rows, &on_copy, "two-pass filter on node {}", i);
            let hot = fx.snapshot.columns().at(i);
            let at = crate::framework::runtime::run_filters_at(&rows, &filters, &cy.state, &preemptor, node, i, hot, &marked, &fx.snapshot);
            prop_assert_eq!(&at.into_status(), &on_copy, "filter pass on node {}", i);
            let mut scratch = victims::Scratch::default();
            let a = select_victims(&fx.dry(&cy, &filters, &following, &rows, &preemptor), node, &mut scratch);
            let b = select_victims(&fx.dry(&cy, &filters, &following, &full, &preemptor), node, &mut victims::Scratch::default());
            prop_assert_eq!(&a, &b, "dry run on node {}", i);
            // The scratch is reused from node to node: a second dry run gives the same.
            let again = select_victims(&fx.dry(&cy, &filters, &following, &rows, &preemptor), node, &mut scratch);
            prop_assert_eq!(&a, &again, "dry run again on node {}", i);
            // By position, judged from the snapshot's columns where they tell: the same,
            // whether the nominations were marked by position or are looked up by name.
            let by_pos = DryRun { nominated: &marked, ..fx.dry(&cy, &filters, &following, &rows, &preemptor) };
            let at = victims::select_victims_at(&by_pos, i, &mut scratch).map(|r| r.map(|f| f.candidate(&fx.snapshot)).map_err(Verdict::into_status));
            prop_assert_eq!(at.as_ref(), Some(&b), "dry run by position (marked) on node {}", i);
            let at = victims::select_victims_at(&fx.dry(&cy, &filters, &following, &rows, &preemptor), i, &mut scratch)
                .map(|r| r.map(|f| f.candidate(&fx.snapshot)).map_err(Verdict::into_status));
            prop_assert_eq!(at.as_ref(), Some(&b), "dry run by position on node {}", i);
        }
        let past = fx.snapshot.num_nodes();
        prop_assert!(victims::select_victims_at(&fx.dry(&cy, &filters, &following, &rows, &preemptor), past, &mut victims::Scratch::default()).is_none());
    }
}

proptest! {
    /// The dry run by position with one scratch kept across a run of snapshots, each a
    /// change of the last (a pod added or removed on a node; the other nodes' pod lists are
    /// shared, as the cache shares them), gives what a fresh scratch gives: briefs kept from
    /// an earlier snapshot are used exactly while the node's pods are the same.
    #[test]
    fn kept_briefs_give_the_dry_run_of_fresh_ones(
        start in prop::collection::vec(prop::collection::vec((0i32..3, 1i64..5, 0u64..4), 0..6), 1..6),
        steps in prop::collection::vec((0usize..6, 0usize..10, 0i32..3, 1i64..5, 0u64..4), 1..12),
        pre in (1i32..4, 1i64..9),
    ) {
        // Shared as the cache's snapshots share them: a node a step leaves alone is the same
        // NodeInfo in the next snapshot (the kept briefs' first check), a changed one a new
        // NodeInfo (`Arc::make_mut` copies or moves it); `k` of 8 or 9 gives the node a new
        // NodeInfo with the same pods.
        let mut infos: Vec<Arc<NodeInfo>> = start
            .iter()
            .enumerate()
            .map(|(i, ps)| {
                let pods: Vec<Pod> =
                    ps.iter().enumerate().map(|(j, &(p, q, t))| started(&format!("p{i}-{j}"), p, q * 500, t)).collect();
                Arc::new(node_info(node(&format!("n{i}"), 4000), &pods))
            })
            .collect();
        let preemptor = pod("pre", pre.0, pre.1 * 500);
        let mut kept = victims::Scratch::default();
        for step in 0..=steps.len() {
            if let Some(&(n, k, p, q, t)) = step.checked_sub(1).map(|s| &steps[s]) {
                let shared = &mut infos[n % start.len()];
                if k >= 8 {
                    *shared = Arc::new((**shared).clone());
                } else {
                    let info = Arc::make_mut(shared);
                    if let Some(uid) = info.pods().get(k).map(|p| p.uid.clone()) {
                        info.remove_pod(&uid);
                    } else {
                        let name = info.name();
                        info.add_pod(started(&format!("x{step}"), p, q * 500, t).with_node(name));
                    }
                }
            }
            let fx = Fx { profile: Profile::default_profile(), snapshot: Snapshot::from_shared_node_infos(infos.clone()) };
            let cy = fx.cycle(&preemptor, None);
            let filters = active_filters(&fx.profile, &cy.state);
            let following = victims::following_pods(&filters);
            let overlay = Overlay::new(&fx.profile, &cy.state, &filters);
            let dry = fx.dry(&cy, &filters, &following, &overlay, &preemptor);
            // Twice over: the second pass finds every node as the first left it.
            for i in (0..fx.snapshot.num_nodes()).chain(0..fx.snapshot.num_nodes()) {
                let a = victims::select_victims_at(&dry, i, &mut kept)
                    .map(|r| r.map(|f| (f.key, f.candidate(&fx.snapshot))).map_err(Verdict::into_status));
                let b = victims::select_victims_at(&dry, i, &mut victims::Scratch::default())
                    .map(|r| r.map(|f| (f.key, f.candidate(&fx.snapshot))).map_err(Verdict::into_status));
                if let Some(Ok((key, c))) = &a {
                    prop_assert_eq!(*key, PickKey::of(c), "the pick's key of node {}", i);
                }
                prop_assert_eq!(a, b, "step {} node {}", step, i);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The filters a row trial asks again after a put-back
// ---------------------------------------------------------------------------------------

/// A row verdict with the brief's builder left out (it has no equality).
fn verdict_kind(v: crate::framework::RowVerdict) -> (u8, Option<(Code, u32)>) {
    use crate::framework::RowVerdict::*;
    match v {
        Pass => (0, None),
        Fail(f) => (1, Some((f.code, f.what))),
        NeedsNode => (2, None),
    }
}

proptest! {
    /// A filter that says its row verdict does not follow the pods (`row_follows_pods`) gives
    /// the same verdict on a row whatever the pods add to it: requested resources, pod count,
    /// the has-affinity-pods flag. (A filter claiming so wrongly would let the dry run keep
    /// pods the node has no room for.)
    #[test]
    fn a_row_verdict_not_following_the_pods_ignores_them(
        requested in (0i64..5000, 0i64..(40 * GI), 0i64..120, 0i64..GI),
        added in (1i64..3000, 1i64..(8 * GI), 1i64..20, 0i64..GI),
        flags in 0u8..8,
        toggle_affinity in any::<bool>(),
        pod_cpu in 1i64..4000,
        named in prop::option::of(prop::sample::select(vec!["n", "other"])),
        tolerates in any::<bool>(),
    ) {
        use crate::snapshot::columns::HAS_AFFINITY_PODS;
        use crate::snapshot::{HotRow, LooseRow};
        let mut b = Pod::builder("p").container("i", &[(Cpu, pod_cpu), (Memory, MI)]);
        if let Some(n) = named {
            b = b.node_name(n);
        }
        if tolerates {
            b = b.toleration(crate::api::Toleration::new(
                "node.kubernetes.io/unschedulable",
                crate::api::TolerationOp::Exists,
                "",
                Some(crate::api::TaintEffect::NoSchedule),
            ));
        }
        let p = b.build();
        let profile = Profile::default_profile();
        let snapshot = Snapshot::from_node_infos(vec![node_info(node("n", 4000), &[])]);
        let mut state = CycleState::new();
        let _ = run_pre_filter(&profile, &mut state, &p, &snapshot);
        let row = HotRow {
            allocatable_cpu: 4000,
            allocatable_memory: 32 * GI,
            allocatable_pods: 110,
            allocatable_ephemeral: 10 * GI,
            requested_cpu: requested.0,
            requested_memory: requested.1,
            requested_pods: requested.2,
            requested_ephemeral: requested.3,
            non_zero_cpu: requested.0,
            non_zero_memory: requested.1,
            flags,
        };
        let more = HotRow {
            requested_cpu: row.requested_cpu + added.0,
            requested_memory: row.requested_memory + added.1,
            requested_pods: row.requested_pods + added.2,
            requested_ephemeral: row.requested_ephemeral + added.3,
            non_zero_cpu: row.non_zero_cpu + added.0,
            non_zero_memory: row.non_zero_memory + added.1,
            flags: if toggle_affinity { flags ^ HAS_AFFINITY_PODS } else { flags },
            ..row
        };
        let (mut a, mut b) = (LooseRow::default(), LooseRow::default());
        let mut checked = 0;
        for f in profile.filter.iter().filter(|f| !f.row_follows_pods()) {
            let before = verdict_kind(f.filter_hot(&state, &p, a.set(&row)));
            let after = verdict_kind(f.filter_hot(&state, &p, b.set(&more)));
            prop_assert_eq!(before, after, "{}", f.name());
            checked += 1;
        }
        prop_assert!(checked >= 3, "NodeUnschedulable, NodeName and TaintToleration at least");
    }
}
