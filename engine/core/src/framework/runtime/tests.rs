//! The runtime's tests: statuses and FitError, nominated pods, scoring on the pool and with
//! kept scores, the hot columns' verdicts and scores, the nominated-pod overlay.

use std::collections::HashMap;

use super::score_table::ChunkBest;
use super::*;
use crate::api::{Pod, ResourceName, Sym};
use crate::framework::feasible::Feasible;
use crate::framework::{
    Code, ColumnScoring, CycleState, Normalizing, Reason, ScorePlugin, Status, Verdict, MAX_NODE_SCORE,
};
use crate::observer::NoObserver;
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

/// A chunk's best against the obvious loop: the highest total, how many share it, and
/// the first of them (offset by the chunk's first node), for small totals that tie often,
/// `i64::MIN` among them, and the empty chunk.
#[test]
fn chunk_best_is_the_first_highest_total_and_its_ties() {
    use proptest::prelude::*;
    let total = prop_oneof![8 => -3i64..3, 1 => Just(i64::MIN), 1 => Just(i64::MAX)];
    proptest!(|(totals in prop::collection::vec(total, 0..70), lo in 0usize..1000)| {
        let (mut max, mut ties, mut first) = (i64::MIN, 0u32, lo as u32);
        for (i, &t) in totals.iter().enumerate() {
            if t > max {
                (max, ties, first) = (t, 1, (lo + i) as u32);
            } else if t == max {
                ties += 1;
            }
        }
        let got = ChunkBest::of(&totals, lo);
        prop_assert_eq!((got.max, got.ties, got.first), (max, ties, first));
    });
}

#[test]
fn fit_error_message_sorts_count_reason_strings() {
    let mut s = NodeStatuses::default();
    for i in 0..10 {
        s.push(i, Status::new(Code::Unschedulable, Reason::Insufficient(ResourceName::Cpu)));
    }
    for i in 10..12 {
        s.push(i, Status::unresolvable("node(s) had untolerated taint(s)"));
    }
    let e = FitError::from_statuses(13, &s);
    // Plain string order: "10 ..." sorts before "2 ...".
    assert_eq!(e.to_string(), "0/13 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s).");
    let pre = FitError {
        pre_filter_msg: Some("pod affinity terms conflict".into()),
        ..FitError::from_statuses(3, &NodeStatuses::default())
    };
    assert_eq!(pre.to_string(), "0/3 nodes are available: pod affinity terms conflict.");
    // PostFilter's message is appended as is: preemption's own summary ends the sentence.
    let post = FitError {
        post_filter_msg: Some(
            "no new claims to deallocate, preemption: 0/13 nodes are available: 13 Preemption is not helpful \
             for scheduling."
                .into(),
        ),
        ..FitError::from_statuses(13, &s)
    };
    assert_eq!(
        post.to_string(),
        "0/13 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s). no new claims to \
         deallocate, preemption: 0/13 nodes are available: 13 Preemption is not helpful for scheduling."
    );
}

/// `NominatedPods` kept across cycles against one gathered afresh each cycle (the model).
mod statuses {
    use super::*;
    use crate::framework::RowFail;
    use proptest::prelude::*;

    fn lack(what: u32) -> Status {
        let r = if what == 0 { ResourceName::Cpu } else { ResourceName::Memory };
        Status::new(Code::Unschedulable, Reason::Insufficient(r))
    }

    fn other(_: u32) -> Status {
        Status::unresolvable("node(s) were unschedulable")
    }

    /// What one entry records: nothing (a pass), a brief, or a full status.
    fn verdict(kind: u8) -> Verdict {
        let brief = |plugin, what, make: fn(u32) -> Status| {
            Verdict::Brief(plugin, RowFail { code: make(what).code, what, make })
        };
        match kind {
            0 => Verdict::Pass,
            1 => brief("A", 0, lack),
            2 => brief("A", 1, lack),
            // The same brief from another plugin: a different status.
            3 => brief("B", 0, lack),
            4 => brief("A", 0, other),
            5 => Verdict::Full(lack(0).with_plugin("A")),
            6 => Verdict::Full(Status::error("boom").with_plugin("C")),
            _ => Verdict::Full(other(0).with_plugin("C")),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        /// Statuses recorded in brief, in full, or both, read back as a plain list of
        /// (position, built status) would give them: each node's status, the codes, the
        /// lookup by position, the reason histogram, and each different status once.
        #[test]
        fn recorded_statuses_read_back_as_a_list(
            pushes in prop::collection::vec((0u32..40, 0u8..8, any::<bool>()), 0..60),
        ) {
            let mut got = NodeStatuses::default();
            let mut model: Vec<(u32, Status)> = Vec::new();
            for (pos, kind, as_status) in pushes {
                let v = verdict(kind);
                if !v.is_success() {
                    model.push((pos, v.clone().into_status()));
                }
                if as_status && !v.is_success() {
                    got.push(pos, v.into_status());
                } else {
                    got.push_verdict(pos, v);
                }
            }
            let read: Vec<(u32, Status)> = got.iter().map(|(p, st)| (p, st.clone())).collect();
            prop_assert_eq!(&read, &model);
            prop_assert_eq!(got.len(), model.len());
            prop_assert_eq!(got.positions().collect::<Vec<_>>(), model.iter().map(|e| e.0).collect::<Vec<_>>());
            let mut codes = vec![Code::Success; 40];
            for (p, st) in &model {
                codes[*p as usize] = st.code;
            }
            prop_assert_eq!(got.codes(40), codes);
            for pos in 0..40 {
                prop_assert_eq!(got.at(pos), model.iter().find(|e| e.0 == pos).map(|e| &e.1));
            }
            let mut naive: HashMap<String, usize> = HashMap::new();
            for (_, st) in &model {
                for r in &st.reasons {
                    *naive.entry(r.to_string()).or_default() += 1;
                }
            }
            prop_assert_eq!(FitError::from_statuses(50, &got).reasons, naive);
            let mut distinct: Vec<&Status> = Vec::new();
            for (_, st) in &model {
                if !distinct.contains(&st) {
                    distinct.push(st);
                }
            }
            for st in &distinct {
                prop_assert!(got.statuses().contains(st));
            }
            prop_assert!(got.statuses().iter().all(|st| distinct.contains(&st)));
        }
    }
}

mod nominated {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::api::{Node, ResourceName::*};
    use crate::cache::Cache;
    use crate::queue::Nominator;

    #[derive(Clone, Debug)]
    enum Op {
        /// Nominate pod `.0` to node `.1`.
        Nominate(usize, usize),
        Delete(usize),
        /// A cycle for pod `.0` of the pool, or (`None`) a pod nominated nowhere, with
        /// priority `.1`.
        Cycle(Option<usize>, i32),
        /// A node joins the cluster (the snapshot's positions move).
        AddNode,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..8, 0usize..6).prop_map(|(p, n)| Op::Nominate(p, n)),
            2 => (0usize..8).prop_map(Op::Delete),
            4 => (prop::option::of(0usize..8), prop_oneof![Just(0), Just(5), Just(10)]).prop_map(|(p, q)| Op::Cycle(p, q)),
            1 => Just(Op::AddNode),
        ]
    }

    fn uids(pods: &[Pod]) -> Vec<String> {
        pods.iter().map(|p| p.uid.to_string()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        /// After any sequence of nominations, deletions, node additions and cycles of pods
        /// of varying priority (some nominated themselves), the kept nominations answer
        /// every lookup (by node, by position, emptiness) as a fresh gather does.
        #[test]
        fn kept_nominations_match_a_fresh_gather(ops in prop::collection::vec(op(), 1..60)) {
            let cache = Cache::new(Duration::from_secs(30));
            let mut nodes = 0usize;
            let mut add_node = |cache: &Cache| {
                let name = format!("n{nodes}");
                cache.add_node(Node::builder(&name).resources(4000, 1 << 34, 110).build()).unwrap();
                nodes += 1;
            };
            for _ in 0..6 {
                add_node(&cache);
            }
            let pool: Vec<Pod> = (0..8)
                .map(|i| {
                    Pod::builder(&format!("p{i}"))
                        .priority([0, 5, 10][i % 3])
                        .container("c", &[(Cpu, 100 * (i as i64 + 1)), (Memory, 1 << 20)])
                        .build()
                })
                .collect();
            let nominator = Nominator::new();
            let mut kept = NominatedPods::default();
            let mut snapshot = cache.update_snapshot();
            for (step, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Nominate(p, n) => nominator.add(&pool[p], Some(Sym::new(&format!("n{n}")))),
                    Op::Delete(p) => nominator.delete(&pool[p]),
                    Op::AddNode => {
                        add_node(&cache);
                        snapshot = cache.update_snapshot();
                    }
                    Op::Cycle(p, priority) => {
                        let pod = match p {
                            Some(i) => pool[i].clone(),
                            None => Pod::builder("fresh").container("c", &[(Cpu, 1)]).build(),
                        };
                        // A cycle's pod of another priority is another pod: model it so.
                        let pod = if pod.priority == priority { pod } else {
                            Pod::builder(&format!("q{priority}")).priority(priority).container("c", &[(Cpu, 1)]).build()
                        };
                        kept.gather(Some(&nominator), &pod);
                        let mut fresh = NominatedPods::for_pod(Some(&nominator), &pod);
                        // Lookups by name before the positions are marked.
                        for i in 0..snapshot.num_nodes() {
                            let name = snapshot.node_at(i).unwrap().name();
                            prop_assert_eq!(kept.delta_on(name), fresh.delta_on(name), "step {} node {}", step, name);
                            prop_assert_eq!(uids(kept.on(name)), uids(fresh.on(name)), "step {} node {}", step, name);
                            prop_assert_eq!(kept.delta_at(i, || Some(name)), fresh.delta_on(name));
                        }
                        prop_assert_eq!(kept.is_empty(), fresh.is_empty(), "step {}", step);
                        kept.mark_positions(&snapshot);
                        fresh.mark_positions(&snapshot);
                        for i in 0..snapshot.num_nodes() {
                            let (a, b) = (kept.at(i), fresh.at(i));
                            prop_assert_eq!(a.map(|g| (uids(g.0), *g.1)), b.map(|g| (uids(g.0), *g.1)), "step {} position {}", step, i);
                            prop_assert_eq!(kept.delta_at(i, || None), fresh.delta_on(snapshot.node_at(i).unwrap().name()));
                        }
                    }
                }
            }
        }
    }

    /// A kept gather that fell further behind than the nominator's log reaches gathers
    /// afresh, and still answers as a fresh gather does.
    #[test]
    fn a_gather_behind_the_log_starts_over() {
        let cache = Cache::new(Duration::from_secs(30));
        for i in 0..4 {
            cache.add_node(Node::builder(&format!("n{i}")).resources(4000, 1 << 34, 110).build()).unwrap();
        }
        let snapshot = cache.update_snapshot();
        let nominator = Nominator::new();
        let pods: Vec<Pod> =
            (0..4).map(|i| Pod::builder(&format!("p{i}")).container("c", &[(Cpu, 10 * (i + 1))]).build()).collect();
        let scheduled = Pod::builder("s").build();
        let mut kept = NominatedPods::default();
        nominator.add(&pods[0], Some(Sym::new("n0")));
        kept.gather(Some(&nominator), &scheduled);
        // n0's only change comes first, then far more changes elsewhere than the log
        // keeps, ending with p1 on n1 and p2 on n3.
        nominator.delete(&pods[0]);
        for k in 0..10_000usize {
            nominator.add(&pods[1 + k % 3], Some(Sym::new(&format!("n{}", 1 + k % 3))));
        }
        nominator.delete(&pods[3]);
        nominator.add(&pods[1], Some(Sym::new("n1")));
        nominator.add(&pods[2], Some(Sym::new("n3")));
        kept.gather(Some(&nominator), &scheduled);
        kept.mark_positions(&snapshot);
        let fresh = NominatedPods::for_pod(Some(&nominator), &scheduled);
        for i in 0..4 {
            let name = Sym::new(&format!("n{i}"));
            assert_eq!(uids(kept.on(name)), uids(fresh.on(name)), "node n{i}");
            assert_eq!(kept.delta_on(name), fresh.delta_on(name), "node n{i}");
        }
        assert_eq!(uids(kept.on(Sym::new("n1"))), vec![pods[1].uid.to_string()]);
        assert!(kept.on(Sym::new("n0")).is_empty(), "n0's change is older than the log");
    }
}

mod pool_scoring {
    use std::sync::{Arc, OnceLock};

    use proptest::prelude::*;

    use super::*;
    use crate::api::Node;
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::profile::WeightedScore;
    use crate::framework::{default_normalize_score, Plugin, Profile};
    use crate::parallel::WorkerPool;
    use crate::util::rng::Rng;

    /// Scores node `n{i}` with `scores[i]`, from the columns unless `declines` holds
    /// one of the positions asked (and, if `tells_zeros`, says `AllZero` when they all
    /// score 0); normalizes as `normalizing` says (`Whole`: scores minus the smallest).
    struct Listed {
        name: &'static str,
        scores: Vec<i64>,
        normalizing: Normalizing,
        declines: Option<u32>,
        fails: Option<u32>,
        tells_zeros: bool,
    }

    impl Listed {
        fn fails_on(&self, positions: impl IntoIterator<Item = u32>) -> Result<(), Status> {
            match self.fails.filter(|f| positions.into_iter().any(|p| p == *f)) {
                Some(f) => Err(Status::error(format!("{} cannot score n{f}", self.name))),
                None => Ok(()),
            }
        }
    }

    impl Plugin for Listed {
        fn name(&self) -> &'static str {
            self.name
        }
    }

    impl ScorePlugin for Listed {
        fn score(&self, _: &CycleState, _: &Pod, node: &NodeInfo, _: &Snapshot) -> Result<i64, Status> {
            let i: usize = node.name().as_str()[1..].parse().unwrap();
            self.fails_on([i as u32])?;
            Ok(self.scores[i])
        }

        fn score_columns(
            &self,
            _: &CycleState,
            _: &Pod,
            _: &crate::snapshot::Columns,
            positions: &[u32],
            _: &Snapshot,
            out: &mut Vec<i64>,
        ) -> Result<ColumnScoring, Status> {
            self.fails_on(positions.iter().copied())?;
            if self.declines.is_some_and(|d| positions.contains(&d)) {
                return Ok(ColumnScoring::Declined);
            }
            if self.tells_zeros && positions.iter().all(|&p| self.scores[p as usize] == 0) {
                return Ok(ColumnScoring::AllZero);
            }
            out.extend(positions.iter().map(|&p| self.scores[p as usize]));
            Ok(ColumnScoring::Scored)
        }

        fn normalize(&self, _: &CycleState, _: &Pod, scores: &mut [i64]) -> Status {
            match self.normalizing {
                Normalizing::Unchanged => {}
                Normalizing::ByMax { reverse } => default_normalize_score(MAX_NODE_SCORE, reverse, scores),
                Normalizing::Whole => {
                    let min = scores.iter().copied().min().unwrap_or(0);
                    scores.iter_mut().for_each(|s| *s -= min);
                }
            }
            Status::success()
        }

        fn normalizing(&self) -> Normalizing {
            self.normalizing
        }
    }

    const NAMES: [&str; 4] = ["P0", "P1", "P2", "P3"];

    /// Scores the nodes at `positions` into `table` as a cycle does (chunk by chunk when
    /// the table says so), on `pool` if given.
    pub(super) fn score_chunked(
        profile: &Profile,
        pod: &Pod,
        snapshot: &Snapshot,
        positions: &[u32],
        pool: Option<&WorkerPool>,
        table: &mut ScoreTable,
    ) -> Result<(), Status> {
        let nodes = Feasible::at(snapshot, positions);
        run_scoring_observed(profile, &mut CycleState::new(), pod, snapshot, &nodes, pool, table, &mut NoObserver)
    }

    /// (how it normalizes: 0 unchanged, 1 by max, 2 by max reversed, 3 whole; weight;
    /// raw scores mostly 0, some out of range; declines at a position or not; fails at
    /// a position or not; says `AllZero` for positions all scoring 0 or scores them).
    type Spec = (u8, i64, Vec<i64>, Option<u32>, Option<u32>, bool);

    fn spec(n: usize) -> impl Strategy<Value = Spec> {
        let score = prop_oneof![6 => Just(0i64), 3 => 0i64..=100, 1 => -2i64..=103];
        let scores = prop_oneof![
            1 => Just(vec![0; n]),
            2 => prop::collection::vec(score, n),
        ];
        let at = move |none| prop_oneof![none => Just(None), 1 => (0..n as u32).prop_map(Some)];
        (0u8..4, 0i64..4, scores, at(4), at(3), any::<bool>())
    }

    fn case() -> impl Strategy<Value = (usize, Vec<Spec>, usize)> {
        (1usize..40).prop_flat_map(|n| (Just(n), prop::collection::vec(spec(n), 1..=4), 1usize..9))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        /// Scoring chunk by chunk, on a pool or not, gives the plugin-by-plugin table: the same error, the
        /// same rows and totals, and the same node for the same draw. Cases mix every
        /// kind of normalize, weights, all-zero rows (taken as final in each chunk),
        /// rows with a non-zero score somewhere (which undo that), declined chunks,
        /// scores out of range and plugins failing on some node.
        #[test]
        fn chunks_on_a_pool_give_the_serial_table((n, specs, chunk) in case()) {
            let nodes: Vec<NodeInfo> = (0..n).map(|i| node_info(Node::builder(&format!("n{i}")).build(), &[])).collect();
            let snapshot = Snapshot::from_node_infos(nodes);
            let score = specs
                .iter()
                .zip(NAMES)
                .map(|((kind, weight, scores, declines, fails, tells_zeros), name)| {
                    let normalizing = match kind {
                        0 => Normalizing::Unchanged,
                        1 => Normalizing::ByMax { reverse: false },
                        2 => Normalizing::ByMax { reverse: true },
                        _ => Normalizing::Whole,
                    };
                    let plugin = Listed {
                        name,
                        scores: scores.clone(),
                        normalizing,
                        declines: *declines,
                        fails: *fails,
                        tells_zeros: *tells_zeros,
                    };
                    WeightedScore { plugin: Arc::new(plugin), weight: *weight }
                })
                .collect();
            let profile = Profile { score, ..Profile::empty("test") };
            let pod = Pod::builder("p").build();
            let positions: Vec<u32> = (0..n as u32).collect();
            let mut want = ScoreTable::plugin_by_plugin();
            let want_st = run_scoring_at(&profile, &mut CycleState::new(), &pod, &snapshot, &positions, &mut want);
            static POOL: OnceLock<WorkerPool> = OnceLock::new();
            let pool = POOL.get_or_init(|| WorkerPool::new(3));
            // On the pool, and chunk by chunk on the caller alone.
            for pool in [Some(pool), None] {
            let mut got = ScoreTable::scoring_on_pool_from(0, chunk);
            let got_st = score_chunked(&profile, &pod, &snapshot, &positions, pool, &mut got);
            prop_assert_eq!(&got_st, &want_st);
            if want_st.is_ok() {
                prop_assert_eq!(&got.plugins, &want.plugins);
                prop_assert_eq!(got.plugin_scores(), want.plugin_scores());
                prop_assert_eq!(got.totals(), want.totals());
                if let Some(top) = got.top() {
                    prop_assert_eq!(Some(top), crate::framework::pick::Top::of(want.totals()));
                }
                for seed in 0..3 {
                    let (mut a, mut b) = (Rng::seed(seed), Rng::seed(seed));
                    prop_assert_eq!(got.select_host(&mut a), crate::scheduler::select_host(want.totals(), &mut b));
                    prop_assert_eq!(a.next_u64(), b.next_u64());
                }
            }
            }
        }
    }
}

mod kept_scores {
    use std::sync::{Arc, OnceLock};
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::api::{Node, ResourceName::*};
    use crate::cache::Cache;
    use crate::framework::plugins::node_resources_balanced::BalancedAllocation;
    use crate::framework::plugins::node_resources_fit::NodeResourcesFit;
    use crate::framework::profile::WeightedScore;
    use crate::framework::Profile;
    use crate::parallel::WorkerPool;

    /// Pod kinds (cpu milli, memory MiB): a few, so that keys come back.
    const KINDS: [(i64, i64); 3] = [(100, 200), (250, 0), (0, 0)];

    /// Scores a node by its allocatable cpu alone, kept (one key for every pod), out of
    /// range on nodes of 4990m or more.
    struct ByCpu;

    impl ByCpu {
        fn of(cpu: i64) -> i64 {
            cpu / 50 + if cpu >= 4990 { 5 } else { 0 }
        }
    }

    impl crate::framework::Plugin for ByCpu {
        fn name(&self) -> &'static str {
            "ByCpu"
        }
    }

    impl ScorePlugin for ByCpu {
        fn score(&self, _: &CycleState, _: &Pod, node: &NodeInfo, _: &Snapshot) -> Result<i64, Status> {
            Ok(ByCpu::of(node.allocatable().milli_cpu))
        }

        fn score_columns(
            &self,
            _: &CycleState,
            _: &Pod,
            columns: &crate::snapshot::Columns,
            positions: &[u32],
            _: &Snapshot,
            out: &mut Vec<i64>,
        ) -> Result<ColumnScoring, Status> {
            out.extend(columns.rows(positions).map(|r| ByCpu::of(r.allocatable_cpu())));
            Ok(ColumnScoring::Scored)
        }

        fn memo_key(&self, _: &Pod) -> Option<crate::framework::ScoreMemoKey> {
            Some([0; 4])
        }

        fn normalizing(&self) -> Normalizing {
            Normalizing::Unchanged
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Scores kept from cycle to cycle (NodeResourcesFit's and BalancedAllocation's,
        /// under the rows' stamps and the pods' requests) give the table of scoring every
        /// node plugin by plugin, cycle after cycle, while pods land, nodes come, go and
        /// change and pod kinds alternate; chunked on a pool or on the caller. A kept
        /// plugin's score out of range is the error it is when every node is scored.
        #[test]
        fn kept_scores_give_the_table_of_scoring_every_node(
            nodes in prop::collection::vec((0i64..5000, 0i64..4096), 1..150),
            // (pod kind; then 0..=5 a pod of that kind lands on a node, 6 a node goes,
            // 7 a node comes, 8 a node's allocatable changes, 9 nothing; which node).
            steps in prop::collection::vec((0usize..3, 0u8..10, any::<usize>()), 1..25),
            chunk in 1usize..70,
            on_pool in any::<bool>(),
            by_cpu in any::<bool>(),
        ) {
            let cache = Cache::new(Duration::from_secs(30));
            let node = |i: usize, cpu: i64, mem: i64| Node::builder(&format!("n{i}")).resources(cpu, mem << 20, 110).build();
            for (i, &(cpu, mem)) in nodes.iter().enumerate() {
                cache.add_node(node(i, cpu, mem)).unwrap();
            }
            let mut score = vec![
                WeightedScore { plugin: Arc::new(NodeResourcesFit::default()), weight: 1 },
                WeightedScore { plugin: Arc::new(BalancedAllocation::default()), weight: 2 },
            ];
            if by_cpu {
                score.push(WeightedScore { plugin: Arc::new(ByCpu), weight: 3 });
            }
            let profile = Profile { score, ..Profile::empty("test") };
            static POOL: OnceLock<WorkerPool> = OnceLock::new();
            let pool = on_pool.then(|| POOL.get_or_init(|| WorkerPool::new(2)));
            let mut added = nodes.len();
            let mut got = ScoreTable::scoring_on_pool_from(0, chunk);
            for (s, &(kind, change, at)) in steps.iter().enumerate() {
                let snapshot = cache.update_snapshot();
                let n = snapshot.num_nodes();
                let (cpu, mem) = KINDS[kind];
                let pod = Pod::builder(&format!("p{s}")).container("i", &[(Cpu, cpu), (Memory, mem << 20)]).build();
                // Every node, from a rotating start, as a search visits them.
                let positions: Vec<u32> = (0..n).map(|i| ((i + at) % n) as u32).collect();
                let mut want = ScoreTable::plugin_by_plugin();
                let want_st = run_scoring_at(&profile.clone(), &mut CycleState::new(), &pod, &snapshot, &positions, &mut want);
                let got_st = super::pool_scoring::score_chunked(&profile, &pod, &snapshot, &positions, pool, &mut got);
                prop_assert_eq!(&got_st, &want_st);
                prop_assert_eq!(got.plugin_scores(), want.plugin_scores(), "cycle {}", s);
                prop_assert_eq!(got.totals(), want.totals(), "cycle {}", s);
                prop_assert_eq!(profile.score_memo.mismatches(&snapshot), Vec::<String>::new());
                let target = snapshot.node_at(at % n).map(|i| i.name()).unwrap();
                match change {
                    0..=5 => cache.add_pod(&pod.with_node(target)).unwrap(),
                    6 if n > 1 => cache.remove_node(target).unwrap(),
                    7 => {
                        cache.add_node(node(added, 1000 + at as i64 % 4000, 1024)).unwrap();
                        added += 1;
                    }
                    8 => {
                        let i: usize = target.as_str()[1..].parse().unwrap();
                        cache.update_node(node(i, 500 + at as i64 % 4500, 2048)).unwrap();
                    }
                    _ => {}
                }
            }
        }
    }
}

mod columns {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::api::{Node, ResourceName::*, Taint, TaintEffect, Toleration, TolerationOp};
    use crate::cache::Cache;
    use crate::framework::{Profile, RowJudged};
    use crate::util::rng::Rng;

    /// (cpu, memory MiB, max pods, unschedulable, taint effect: 0 none / 1 NoSchedule /
    /// 2 PreferNoSchedule, pods already there (cpu, memory MiB, ephemeral GiB)).
    type NodeSpec = (i64, i64, i64, bool, u8, Vec<(i64, i64, i64)>);
    /// (cpu, memory MiB, ephemeral GiB, scalar gpu, tolerates the taints, image).
    type PodSpec = (i64, i64, i64, i64, bool, bool);

    fn node_spec() -> impl Strategy<Value = NodeSpec> {
        (
            0i64..5000,
            0i64..4096,
            0i64..5,
            any::<bool>(),
            0u8..3,
            prop::collection::vec((0i64..1500, 0i64..1500, 0i64..3), 0..4),
        )
    }

    fn pod_spec() -> impl Strategy<Value = PodSpec> {
        (0i64..2000, 0i64..2000, 0i64..3, prop_oneof![4 => Just(0i64), 1 => 1i64..3], any::<bool>(), any::<bool>())
    }

    fn pod(name: &str, (cpu, mem, eph, gpu, tolerates, image): PodSpec) -> Pod {
        let gpu_name = crate::api::ResourceName::Scalar(Sym::new("example.com/gpu"));
        let mut req = vec![(Cpu, cpu), (Memory, mem << 20), (EphemeralStorage, eph << 30)];
        if gpu > 0 {
            req.push((gpu_name, gpu));
        }
        let mut b = Pod::builder(name).container(if image { "img:1" } else { "other:1" }, &req);
        if tolerates {
            b = b.toleration(Toleration::new("k", TolerationOp::Exists, "", None));
        }
        b.build()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// The hot-column paths give exactly the NodeInfo paths' answers: every node's
        /// filter verdict (code, reasons, plugin), and every plugin's score and the totals
        /// over the feasible nodes.
        #[test]
        fn hot_columns_give_the_node_info_verdicts_and_scores(
            nodes in prop::collection::vec(node_spec(), 1..12),
            incoming in pod_spec(),
            names_node in prop::option::weighted(0.2, 0usize..12),
            split in 0usize..12,
        ) {
            let cache = Cache::new(Duration::from_secs(30));
            let gpu = crate::api::ResourceName::Scalar(Sym::new("example.com/gpu"));
            for (i, (cpu, mem, max_pods, unsched, taint, pods)) in nodes.iter().enumerate() {
                let name = format!("n{i}");
                let mut b = Node::builder(&name).resources(*cpu, mem << 20, *max_pods).capacity(gpu, 2).unschedulable(*unsched);
                if *taint > 0 {
                    let effect = if *taint == 1 { TaintEffect::NoSchedule } else { TaintEffect::PreferNoSchedule };
                    b = b.taint(Taint::new("k", "v", effect));
                }
                if i % 3 == 0 {
                    b = b.image(&["img:1"], 300 << 20);
                }
                cache.add_node(b.build()).unwrap();
                for (j, &(c, m, e)) in pods.iter().enumerate() {
                    let p = pod(&format!("b{i}-{j}"), (c, m, e, 0, false, false));
                    cache.add_pod(&p.with_node(Sym::new(&name))).unwrap();
                }
            }
            let snapshot = cache.update_snapshot();
            let profile = Profile::default_profile();
            let mut incoming = pod("incoming", incoming);
            incoming.node_name = names_node.map(|i| Sym::new(&format!("n{i}")));
            let mut state = CycleState::new();
            prop_assume!(run_pre_filter(&profile, &mut state, &incoming, &snapshot).is_ok());
            let filters = active_filters(&profile, &state);
            let mut feasible = Vec::new();
            let mut wants = Vec::new();
            for pos in 0..snapshot.num_nodes() {
                let info = snapshot.node_at(pos).unwrap();
                let want = run_filters(&filters, &state, &incoming, info);
                let got = run_filters_hot(&filters, &state, &incoming, info, snapshot.columns().at(pos));
                prop_assert_eq!(&got.into_status(), &want, "node {}", info.name());
                if want.is_success() {
                    feasible.push(pos as u32);
                }
                wants.push(want);
            }
            // Judged a block at a time, a filter at a time (`filter_rows`, the filter
            // pass's way, which runs it when every filter `judges_rows`; its verdicts
            // hold whether or not they do), in two blocks, the second starting inside
            // the chunk (as the search's from its rotating start): the same verdicts,
            // rows left to the node check aside.
            let mut judged = vec![RowJudged::Pass; snapshot.num_nodes()];
            let split = split.min(judged.len());
            for f in filters.iter() {
                let (first, second) = judged.split_at_mut(split);
                f.filter_rows(&state, &incoming, &snapshot, 0, first);
                f.filter_rows(&state, &incoming, &snapshot, split, second);
            }
            for (pos, (j, want)) in judged.iter().zip(&wants).enumerate() {
                let got = match *j {
                    RowJudged::Pass => Status::success(),
                    RowJudged::Fail(plugin, fail) => Verdict::Brief(plugin, fail).into_status(),
                    RowJudged::Node => continue,
                };
                prop_assert_eq!(&got, want, "node n{} judged by rows", pos);
            }
            // A filter that passes the chunk from its floors (every node here sits in
            // chunk 0) leaves each of its rows passed.
            let floors = snapshot.columns().floors(0);
            for f in filters.iter() {
                if f.passes_chunk(&state, &incoming, floors) {
                    let mut alone = vec![RowJudged::Pass; snapshot.num_nodes()];
                    f.filter_rows(&state, &incoming, &snapshot, 0, &mut alone);
                    prop_assert!(alone.iter().all(|j| matches!(j, RowJudged::Pass)), "{} passed whole", f.name());
                }
            }
            let infos: Vec<&NodeInfo> = feasible.iter().map(|&p| &**snapshot.node_at(p as usize).unwrap()).collect();
            let (mut want, mut got) = (ScoreTable::default(), ScoreTable::default());
            let want_st = run_scoring(&profile, &mut state.clone(), &incoming, &snapshot, &infos, &mut want);
            // On a pool too, in chunks of 2 nodes.
            static POOL: std::sync::OnceLock<crate::parallel::WorkerPool> = std::sync::OnceLock::new();
            let pool = POOL.get_or_init(|| crate::parallel::WorkerPool::new(3));
            let mut pooled = ScoreTable::scoring_on_pool_from(0, 2);
            let on_pool = Feasible::at(&snapshot, &feasible);
            let pooled_st = run_scoring_observed(
                &profile, &mut state.clone(), &incoming, &snapshot, &on_pool, Some(pool), &mut pooled, &mut NoObserver,
            );
            let got_st = run_scoring_at(&profile, &mut state, &incoming, &snapshot, &feasible, &mut got);
            prop_assert_eq!(&got_st, &want_st);
            prop_assert_eq!(&got.plugins, &want.plugins);
            prop_assert_eq!(got.plugin_scores(), want.plugin_scores());
            prop_assert_eq!(got.totals(), want.totals());
            prop_assert_eq!(&pooled_st, &want_st);
            prop_assert_eq!(&pooled.plugins, &want.plugins);
            prop_assert_eq!(pooled.plugin_scores(), want.plugin_scores());
            prop_assert_eq!(pooled.totals(), want.totals());
            // The same draw picks the same node, whether from the chunks' best totals
            // or from the totals.
            if want_st.is_ok() && !feasible.is_empty() {
                if let Some(top) = pooled.top() {
                    prop_assert_eq!(Some(top), crate::framework::pick::Top::of(want.totals()));
                }
                for seed in 0..4 {
                    let (mut a, mut b) = (Rng::seed(seed), Rng::seed(seed));
                    prop_assert_eq!(pooled.select_host(&mut a), crate::scheduler::select_host(want.totals(), &mut b));
                    prop_assert_eq!(a.next_u64(), b.next_u64());
                }
            }
            // The nodes are looked up only to score a pod whose image some node has
            // (ImageLocality), or nodes with taints (TaintToleration).
            let has_image = incoming.images().iter().any(|&i| snapshot.image(i).is_some());
            let tainted = feasible.iter().any(|&p| snapshot.columns().at(p as usize).has_taints());
            prop_assert_eq!(on_pool.looked_up(), (has_image || tainted) && !feasible.is_empty());
        }
    }
}

mod overlay {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;
    use crate::api::{Node, ResourceName::*};
    use crate::cache::Cache;
    use crate::framework::Profile;

    /// (cpu, memory MiB, host port or 0) of a pod.
    type Spec = (i64, i64, i32);

    fn pod(name: &str, (cpu, mem, port): Spec, priority: i32) -> Pod {
        let b = Pod::builder(name).container("i", &[(Cpu, cpu), (Memory, mem << 20)]).priority(priority);
        if port > 0 { b.host_port(port) } else { b }.build()
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (0i64..2500, 0i64..3000, prop_oneof![Just(0), Just(80), Just(81)])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// Nominated pods counted in a copy of the aggregates give every node the verdict
        /// (code, reasons, plugin) that placing them on a full copy of the node gives, and
        /// the dry run's own node comes back from `_mut` as it went in.
        #[test]
        fn aggregates_only_overlay_gives_the_full_copy_verdicts(
            nodes in prop::collection::vec(
                (prop::collection::vec(spec(), 0..4), prop::collection::vec(spec(), 0..3), 2i64..6),
                1..6,
            ),
            incoming in spec(),
        ) {
            let cache = Cache::new(Duration::from_secs(30));
            let nominator = crate::queue::Nominator::new();
            for (i, (bound, nominated, max_pods)) in nodes.iter().enumerate() {
                let name = format!("n{i}");
                cache.add_node(Node::builder(&name).resources(4000, 4 << 30, *max_pods).build()).unwrap();
                for (j, s) in bound.iter().enumerate() {
                    cache.add_pod(&pod(&format!("b{i}-{j}"), *s, 0).with_node(Sym::new(&name))).unwrap();
                }
                for (j, s) in nominated.iter().enumerate() {
                    nominator.add(&pod(&format!("m{i}-{j}"), *s, 5), Some(Sym::new(&name)));
                }
            }
            let snapshot = cache.update_snapshot();
            let profile = Profile::default_profile();
            let incoming = pod("incoming", incoming, 5);
            let mut state = CycleState::new();
            prop_assume!(run_pre_filter(&profile, &mut state, &incoming, &snapshot).is_ok());
            let filters = active_filters(&profile, &state);
            let fast = Overlay::new(&profile, &state, &filters);
            prop_assert!(fast.aggregates_only, "plain pods must take the aggregates-only path");
            let full = Overlay { extensions: fast.extensions.clone(), aggregates_only: false };
            let nominated = NominatedPods::for_pod(Some(&nominator), &incoming);
            for info in snapshot.iter() {
                let want = run_filters_with_nominated(&full, &filters, &state, &incoming, info, &nominated, &snapshot);
                let got = run_filters_with_nominated(&fast, &filters, &state, &incoming, info, &nominated, &snapshot);
                prop_assert_eq!(&got, &want, "node {}", info.name());
                let mut own = (**info).clone();
                let got_mut =
                    run_filters_with_nominated_mut(&fast, &filters, &state, &incoming, &mut own, &nominated, &snapshot);
                prop_assert_eq!(&got_mut, &want, "node {} (_mut)", info.name());
                prop_assert!(own.aggregates_match(info) && own.pods().len() == info.pods().len());
            }
        }
    }
}
