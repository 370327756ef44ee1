//! OpportunisticBatching through whole cycles (`framework::batch`): when a pod takes the next
//! node of the previous pod's ranking, and where that differs from a full cycle.
//!
//! The profile here is three test plugins that sign pods: a filter letting `per_node` pods on
//! a node, a score normalized by the highest raw score (node label `raw`, like NodeAffinity's
//! preferred terms), and an unnormalized score (node label `bias`). Pods sign by their `sig`
//! label.

use std::time::Duration;

use super::observer_tests::Binder;
use super::*;
use crate::api::ResourceName::*;
use crate::framework::profile::WeightedScore;
use crate::framework::signature::{keys, PodSignature, Unsigned};
use crate::framework::{Normalizing, Plugin, ScorePlugin};
use crate::observer::{CycleRecord, CycleRecorder};
use crate::queue::Fifo;
use crate::util::time::{MockClock, Timestamp};

fn label_num(node: &NodeInfo, key: &str) -> i64 {
    node.node().labels.get(Sym::new(key)).map_or(0, |v| v.as_str().parse().unwrap_or(0))
}

/// Lets `per_node` pods on a node, and none labelled `sig: nowhere` anywhere; signs pods by
/// their `sig` label (`signs`: whether it signs at all; `sig: none` is not signed).
struct PerNode {
    per_node: usize,
    signs: bool,
}

impl Plugin for PerNode {
    fn name(&self) -> &'static str {
        "PerNode"
    }
    fn signs_pods(&self) -> bool {
        self.signs
    }
    fn sign_pod(&self, pod: &Pod, sig: &mut PodSignature) -> Result<(), Unsigned> {
        match pod.labels.get(Sym::new("sig")) {
            Some(v) if v.as_str() != "none" => {
                sig.set(keys::LABELS, v.to_string());
                Ok(())
            }
            _ => Err("no sig label"),
        }
    }
}

impl FilterPlugin for PerNode {
    fn filter(&self, _: &CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        if pod.labels.get(Sym::new("sig")).is_some_and(|v| v.as_str() == "nowhere") {
            Status::unschedulable("this pod fits nowhere")
        } else if node.pods().len() >= self.per_node {
            Status::unschedulable("node is full")
        } else {
            Status::success()
        }
    }
}

/// Scores a node's `raw` label, normalized to 100 for the highest (`normalize`) or as it is.
struct LabelScore {
    key: &'static str,
    normalized: bool,
}

impl Plugin for LabelScore {
    fn name(&self) -> &'static str {
        self.key
    }
    fn signs_pods(&self) -> bool {
        true
    }
    fn sign_pod(&self, _: &Pod, _: &mut PodSignature) -> Result<(), Unsigned> {
        Ok(())
    }
}

impl ScorePlugin for LabelScore {
    fn score(&self, _: &CycleState, _: &Pod, node: &NodeInfo, _: &Snapshot) -> Result<i64, Status> {
        Ok(label_num(node, self.key))
    }
    fn normalize(&self, _: &CycleState, _: &Pod, scores: &mut [i64]) -> Status {
        let max = scores.iter().copied().max().unwrap_or(0);
        if self.normalized && max > 0 {
            scores.iter_mut().for_each(|s| *s = *s * 100 / max);
        }
        Status::success()
    }
    fn normalizing(&self) -> Normalizing {
        if self.normalized {
            Normalizing::Whole
        } else {
            Normalizing::Unchanged
        }
    }
}

struct World {
    cache: Arc<Cache>,
    queue: Arc<Fifo>,
    clock: Arc<MockClock>,
    sched: Scheduler,
}

/// Nodes `a`, `b`, `c`, ... with the given (raw, bias) labels; `gate`: OpportunisticBatching.
fn world(nodes: &[(i64, i64)], per_node: usize, signs: bool, gate: bool) -> World {
    world_of(nodes, per_node, signs, gate, &["default-scheduler"])
}

/// `world` with a profile of these plugins for each scheduler name.
fn world_of(nodes: &[(i64, i64)], per_node: usize, signs: bool, gate: bool, names: &[&str]) -> World {
    let cache = Arc::new(Cache::new(Duration::ZERO));
    for (i, (raw, bias)) in nodes.iter().enumerate() {
        let name = ((b'a' + i as u8) as char).to_string();
        let node = Node::builder(&name)
            .resources(64_000, 256 << 30, 110)
            .label("raw", &raw.to_string())
            .label("bias", &bias.to_string())
            .build();
        cache.add_node(node).unwrap();
    }
    let profile = |name: &str| {
        let mut profile = Profile::empty(name);
        profile.filter.push(Arc::new(PerNode { per_node, signs }));
        for (key, normalized) in [("raw", true), ("bias", false)] {
            profile.score.push(WeightedScore { plugin: Arc::new(LabelScore { key, normalized }), weight: 1 });
        }
        profile
    };
    let profiles = Profiles::new(names.iter().map(|n| profile(n)).collect()).expect("a profile");
    let queue = Arc::new(Fifo::new());
    let clock = Arc::new(MockClock::new(Timestamp::from_secs(1)));
    let mut gates = FeatureGates::default();
    gates.set(Feature::OpportunisticBatching, gate).unwrap();
    let api = Arc::new(Binder(cache.clone()));
    let sched = Scheduler::new(cache.clone(), queue.clone(), profiles, api, 1)
        .with_clock(clock.clone())
        .with_feature_gates(gates);
    World { cache, queue, clock, sched }
}

fn pod(name: &str, sig: &str) -> Pod {
    Pod::builder(name).container("img", &[(Cpu, 100), (Memory, 1 << 28)]).label("sig", sig).build()
}

impl World {
    /// Queues and schedules `pod`: its node, or None.
    fn schedule(&mut self, pod: Pod) -> Option<String> {
        self.queue.add(pod).unwrap();
        match self.sched.schedule_one().expect("a pod to pop") {
            CycleOutcome::Scheduled { decision, .. } => Some(decision.node.to_string()),
            _ => None,
        }
    }
}

/// Nodes where a hint and a full cycle disagree for the second pod: a holds the highest raw
/// score, so once a is full, renormalizing over b and c lifts c (raw 2 of 2) above b (raw 1
/// of 2 plus its bias), while the first pod's ranking had b (33 + 40) above c (66).
const SPLIT: &[(i64, i64)] = &[(3, 0), (1, 40), (2, 0)];

fn placements(w: &mut World, pods: &[(&str, &str)]) -> Vec<Option<String>> {
    pods.iter().map(|(name, sig)| w.schedule(pod(name, sig))).collect()
}

fn nodes(names: &[&str]) -> Vec<Option<String>> {
    names.iter().map(|n| (!n.is_empty()).then(|| n.to_string())).collect()
}

fn last_record(w: &mut World) -> CycleRecord {
    let obs = w.sched.take_observer().expect("a recorder installed");
    let mut recorder = (obs as Box<dyn std::any::Any>).downcast::<CycleRecorder>().unwrap();
    recorder.records.pop().expect("the cycle recorded")
}

#[test]
fn a_hint_is_the_next_node_of_the_previous_ranking_unscored() {
    let same = [("p1", "a"), ("p2", "a"), ("p3", "a")];
    /// (case, gate, plugins sign, pods, where they land, how many took a hint)
    type Case<'a> = (&'a str, bool, bool, &'a [(&'a str, &'a str)], &'a [&'a str], u64);
    let table: &[Case] = &[
        ("gate on: the second pod takes b, next in the first pod's ranking", true, true, &same, &["a", "b", "c"], 2),
        ("gate off: a full cycle renormalizes and takes c", false, true, &same, &["a", "c", "b"], 0),
        ("a plugin that does not sign: no batch", true, false, &same, &["a", "c", "b"], 0),
        (
            "no signature: a full cycle",
            true,
            true,
            &[("p1", "none"), ("p2", "none"), ("p3", "none")],
            &["a", "c", "b"],
            0,
        ),
        // p2's full cycle ranks b after c; p3, of p2's signature, takes that hint.
        ("another signature: a full cycle", true, true, &[("p1", "a"), ("p2", "b"), ("p3", "b")], &["a", "c", "b"], 1),
    ];
    for (case, gate, signs, pods, want, hinted) in table {
        let mut w = world(SPLIT, 1, *signs, *gate);
        assert_eq!(placements(&mut w, pods), nodes(want), "{case}");
        assert_eq!(w.sched.batch_hints(), *hinted, "{case}");
    }
}

#[test]
fn the_batch_ends_when_the_clock_passes_its_age_or_another_cycle_runs() {
    // Expired: more than 500 ms after the ranking was kept.
    let mut w = world(SPLIT, 1, true, true);
    assert_eq!(w.schedule(pod("p1", "a")).as_deref(), Some("a"));
    w.clock.advance(crate::framework::batch::MAX_AGE + Duration::from_millis(1));
    assert_eq!(w.schedule(pod("p2", "a")).as_deref(), Some("c"), "expired: a full cycle");

    // At the age limit it still serves.
    let mut w = world(SPLIT, 1, true, true);
    assert_eq!(w.schedule(pod("p1", "a")).as_deref(), Some("a"));
    w.clock.advance(crate::framework::batch::MAX_AGE);
    assert_eq!(w.schedule(pod("p2", "a")).as_deref(), Some("b"));
}

#[test]
fn a_failed_cycle_in_between_ends_the_batch() {
    let mut w = world(SPLIT, 1, true, true);
    assert_eq!(w.schedule(pod("p1", "a")).as_deref(), Some("a"));
    let q = pod("q", "nowhere");
    assert_eq!(w.schedule(q.clone()), None);
    // Out of the way of the next pop (the queue here retries it first).
    w.queue.delete(&q);
    // q's cycle came between and chose nothing: p2 gets a full cycle (c, not the hint b).
    assert_eq!(w.schedule(pod("p2", "a")).as_deref(), Some("c"));
    assert_eq!(w.sched.batch_hints(), 0);
}

#[test]
fn a_previous_node_with_room_left_or_a_full_hint_means_a_full_cycle() {
    // Two pods per node: a still fits the second pod, so its ranking cannot say where a
    // ranks now: a full cycle (a again).
    let mut w = world(SPLIT, 2, true, true);
    assert_eq!(placements(&mut w, &[("p1", "a"), ("p2", "a")]), nodes(&["a", "a"]));
    assert_eq!(w.sched.batch_hints(), 0);

    // The hint b filled meanwhile by a pod bound outside the scheduler: the hint fails its
    // filter, counts as processed, and the full pass takes c.
    let mut w = world(SPLIT, 1, true, true);
    assert_eq!(w.schedule(pod("p1", "a")).as_deref(), Some("a"));
    w.cache.add_pod(&pod("outsider", "z").with_node(Sym::new("b"))).unwrap();
    w.queue.add(pod("p2", "a")).unwrap();
    w.sched.set_observer(Box::new(CycleRecorder::new()));
    let out = w.sched.schedule_one().unwrap();
    let CycleOutcome::Scheduled { decision, .. } = out else { panic!("{out:?}") };
    assert_eq!(decision.node.as_str(), "c");
    assert_eq!((decision.evaluated, decision.feasible), (3, 1), "the hint, then a and c (b counted once)");
    let cycle = last_record(&mut w);
    assert_eq!(cycle.batch_hint.as_ref().map(|(n, st)| (n.as_str(), st.is_success())), Some(("b", false)));
}

#[test]
fn a_hinted_cycle_is_observed_and_leaves_the_rotating_start() {
    let mut w = world(SPLIT, 1, true, true);
    assert_eq!(w.schedule(pod("p1", "a")).as_deref(), Some("a"));
    let start = w.sched.next_start_node_index();
    w.sched.set_observer(Box::new(CycleRecorder::new()));
    assert_eq!(w.schedule(pod("p2", "a")).as_deref(), Some("b"));
    assert_eq!(w.sched.next_start_node_index(), start, "no filter pass ran");
    let cycle = last_record(&mut w);
    assert_eq!(cycle.batch_hint.as_ref().map(|(n, st)| (n.as_str(), st.is_success())), Some(("b", true)));
    assert_eq!(cycle.selection.as_ref().map(|s| (s.node.as_str(), s.by)), Some(("b", SelectedBy::BatchHint)));
}

#[test]
fn each_profile_keeps_its_own_batch_and_a_cycle_of_another_ends_it() {
    let mut w = world_of(&[(3, 0), (1, 40), (2, 0), (0, 0), (0, 0)], 1, true, true, &["default-scheduler", "other"]);
    let of = |name: &str, scheduler: &str| {
        let b = Pod::builder(name).container("img", &[(Cpu, 100), (Memory, 1 << 28)]).label("sig", "a");
        b.scheduler_name(scheduler).build()
    };
    assert!(w.schedule(of("p1", "default-scheduler")).is_some());
    assert!(w.schedule(of("q1", "other")).is_some());
    assert!(w.schedule(of("q2", "other")).is_some());
    assert_eq!(w.sched.batch_hints(), 1, "q2 takes the next node of q1's ranking");
    assert!(w.schedule(of("p2", "default-scheduler")).is_some());
    assert_eq!(w.sched.batch_hints(), 1, "other cycles ran since p1's: p2 gets a full cycle");
}

/// Against a simple model, the gate off: where every score is the node's own (nothing
/// normalized over the feasible set) and no two nodes tie, the previous pod's ranking is
/// still right for the next pod once its node is full, so batching changes no decision;
/// only the work done differs.
#[test]
fn property_without_normalization_or_ties_batching_decides_as_full_cycles() {
    let mut rng = crate::util::rng::Rng::seed(11);
    let mut hinted = 0;
    for round in 0..60 {
        let n = 2 + rng.below(10) as usize;
        let mut biases: Vec<i64> = (0..n as i64).map(|i| i * 7).collect();
        for i in (1..n).rev() {
            biases.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let nodes: Vec<(i64, i64)> = biases.iter().map(|&b| (0, b)).collect();
        let per_node = 1 + rng.below(2) as usize;
        let pods: Vec<(String, &str)> =
            (0..n * per_node + 2).map(|i| (format!("p{i}"), ["a", "a", "b", "none"][rng.below(4) as usize])).collect();
        let pods: Vec<(&str, &str)> = pods.iter().map(|(name, sig)| (name.as_str(), *sig)).collect();
        let mut on = world(&nodes, per_node, true, true);
        let mut off = world(&nodes, per_node, true, false);
        assert_eq!(placements(&mut on, &pods), placements(&mut off, &pods), "round {round}: {nodes:?} {pods:?}");
        hinted += on.sched.batch_hints();
    }
    assert!(hinted > 20, "the rounds batch pods ({hinted} hints taken)");
}
