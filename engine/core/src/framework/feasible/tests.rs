use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::api::Node;
use crate::framework::{Code, RowFail, RowJudged, Status, Verdict};
use crate::parallel::WorkerPool;

fn snapshot(n: usize) -> Snapshot {
    Snapshot::from_node_infos(
        (0..n).map(|i| NodeInfo::new(Arc::new(Node::builder(&format!("n{i}")).build()))).collect(),
    )
}

/// Why a node is rejected: two reasons, alternating every four nodes.
const REJECTED: [&str; 2] = ["rejected", "rejected too"];

/// A check that rejects the nodes whose index bit is set in `mask` (cycled), in runs of
/// `stride` nodes alike.
fn checker(mask: Vec<bool>, stride: usize) -> impl Fn(usize, &NodeInfo) -> Verdict + Sync {
    move |_pos: usize, node: &NodeInfo| {
        let i: usize = node.name().as_str()[1..].parse().unwrap_or(0);
        if mask[(i / stride) % mask.len()] {
            Status::unschedulable(REJECTED[(i / 4) % 2]).into()
        } else {
            Verdict::Pass
        }
    }
}

/// Feasible positions (in order), rejected positions (sorted), nodes processed.
type Pass = (Vec<u32>, Vec<u32>, usize);

fn run(pool: Option<&WorkerPool>, snap: &Snapshot, start: usize, want: usize, mask: &[bool]) -> Pass {
    run_rows(pool, snap, start, want, (mask, 1), Rows::NodeByNode).0
}

/// How `run_rows` judges the nodes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rows {
    NodeByNode,
    /// A block at a time.
    Blocks,
    /// A block at a time, and blocks where every row passes are told so whole.
    Whole,
}

/// The mask's verdicts a block at a time, every seventh row left to the node check (every
/// 127th when blocks may pass whole). Node `ni` sits at position i: `snapshot` builds them
/// in order.
struct MaskRows<'m> {
    mask: &'m [bool],
    stride: usize,
    whole: bool,
}

const FAILS: [RowFail; 2] = [
    RowFail { code: Code::Unschedulable, what: 0, make: |_| Status::unschedulable(REJECTED[0]) },
    RowFail { code: Code::Unschedulable, what: 1, make: |_| Status::unschedulable(REJECTED[1]) },
];

impl MaskRows<'_> {
    fn at(&self, pos: usize) -> RowJudged {
        if pos % (if self.whole { 127 } else { 7 }) == 0 {
            RowJudged::Node
        } else if self.mask[(pos / self.stride) % self.mask.len()] {
            RowJudged::Fail("", FAILS[(pos / 4) % 2])
        } else {
            RowJudged::Pass
        }
    }
}

impl RowsJudge for MaskRows<'_> {
    fn judge(&self, lo: usize, judged: &mut [RowJudged]) {
        for (i, j) in judged.iter_mut().enumerate() {
            *j = self.at(lo + i);
        }
    }

    fn pass_whole(&self, lo: usize, hi: usize) -> bool {
        self.whole && (lo..hi).all(|p| matches!(self.at(p), RowJudged::Pass))
    }
}

/// `run`, judging the nodes as `how` says; also each rejected node's status text.
fn run_rows(
    pool: Option<&WorkerPool>,
    snap: &Snapshot,
    start: usize,
    want: usize,
    (mask, stride): (&[bool], usize),
    how: Rows,
) -> (Pass, Vec<(u32, String)>) {
    let mut out = FilterOutput::default();
    let check = checker(mask.to_vec(), stride);
    let rows = MaskRows { mask, stride, whole: how == Rows::Whole };
    let rows = (how != Rows::NodeByNode).then_some(&rows as RowsCheck<'_>);
    find_feasible_nodes_from(pool, snap, start, want, &check, rows, &mut out);
    let mut rejected: Vec<u32> = out.statuses.positions().collect();
    rejected.sort_unstable();
    let mut texts: Vec<(u32, String)> = out.statuses.iter().map(|(p, st)| (p, st.to_string())).collect();
    texts.sort();
    ((out.feasible.clone(), rejected, out.processed), texts)
}

#[test]
fn sequential_scan_stops_at_the_next_passing_node_and_wraps() {
    let snap = snapshot(10);
    // Nodes 0..10, rejecting odd ones, from 7: visits 7(x) 8 9(x) 0 1(x) 2 → 3 feasible; then
    // 3(x) is recorded and counted, and 4 passes: dropped, where the next cycle starts.
    let mask: Vec<bool> = (0..10).map(|i| i % 2 == 1).collect();
    let (feasible, rejected, processed) = run(None, &snap, 7, 3, &mask);
    assert_eq!(feasible, [8, 0, 2]);
    assert_eq!(rejected, [1, 3, 7, 9]);
    assert_eq!(processed, 7);
    // The wanted count reached on the last node: nothing left to drop.
    let (feasible, _, processed) = run(None, &snap, 1, 5, &mask);
    assert_eq!((feasible.len(), processed), (5, 10));
    // Not enough feasible: every node visited.
    let (feasible, rejected, processed) = run(None, &snap, 3, 100, &mask);
    assert_eq!(feasible.len(), 5);
    assert_eq!(rejected.len(), 5);
    assert_eq!(processed, 10);
}

/// Upstream's filter pass on one worker, written plainly (findNodesThatPassFilters with
/// parallelism 1): from `start`, keep passing nodes until `want` are kept; the next passing
/// node cancels the pass and is dropped; rejected nodes on the way are recorded. Feasible
/// positions in order, rejected positions in visiting order, processed.
fn upstream_one_worker(n: usize, start: usize, want: usize, rejects: impl Fn(usize) -> bool) -> Pass {
    let (mut feasible, mut rejected) = (Vec::new(), Vec::new());
    for i in 0..n {
        let pos = (start + i) % n;
        if rejects(pos) {
            rejected.push(pos as u32);
        } else if feasible.len() == want {
            break;
        } else {
            feasible.push(pos as u32);
        }
    }
    let processed = feasible.len() + rejected.len();
    (feasible, rejected, processed)
}

/// `run_rows` with the rejected positions in the order the pass recorded them.
fn run_in_order(
    pool: Option<&WorkerPool>,
    snap: &Snapshot,
    start: usize,
    want: usize,
    mask: (&[bool], usize),
    how: Rows,
) -> Pass {
    let mut out = FilterOutput::default();
    let check = checker(mask.0.to_vec(), mask.1);
    let rows = MaskRows { mask: mask.0, stride: mask.1, whole: how == Rows::Whole };
    let rows = (how != Rows::NodeByNode).then_some(&rows as RowsCheck<'_>);
    find_feasible_nodes_from(pool, snap, start, want, &check, rows, &mut out);
    (out.feasible.clone(), out.statuses.positions().collect(), out.processed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Parallel filtering returns the same feasible set, statuses and processed count as the
    /// sequential scan, for any cluster, start and target; so does judging rows a block at
    /// a time, with blocks where every row passes told whole or not, with nodes rejected
    /// alone or in runs (`stride`: blocks with no rejected row).
    #[test]
    fn parallel_equals_sequential(n in 0usize..1500, start in 0usize..2000, want in 1usize..700, mask in prop::collection::vec(any::<bool>(), 1..64), stride in prop::sample::select(vec![1usize, 40, 200])) {
        let snap = snapshot(n);
        let pool = WorkerPool::new(3);
        let seq = run(None, &snap, start, want, &mask);
        let par = run(Some(&pool), &snap, start, want, &mask);
        prop_assert_eq!(&seq, &par);
        let node_by_node = run_rows(None, &snap, start, want, (&mask, stride), Rows::NodeByNode);
        if stride == 1 {
            prop_assert_eq!(&node_by_node.0, &seq);
        }
        for how in [Rows::Blocks, Rows::Whole] {
            prop_assert_eq!(&run_rows(None, &snap, start, want, (&mask, stride), how), &node_by_node);
            prop_assert_eq!(&run_rows(Some(&pool), &snap, start, want, (&mask, stride), how), &node_by_node);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// On random clusters with random rejections (alone or in runs, judged node by node or a
    /// block at a time, whole chunks passed from their floors or not), the one-worker pass and
    /// the pool at every parallelism record exactly the nodes upstream's one-worker pass
    /// records, in its order: the same feasible nodes, the same rejected nodes, the same
    /// `evaluated` (processed) and so the same next start index.
    #[test]
    fn every_parallelism_visits_what_upstream_visits_with_one_worker(
        n in 0usize..1200,
        start in 0usize..1500,
        percentage in prop_oneof![Just(None), (1u32..=100).prop_map(Some)],
        small_want in 1usize..40,
        mask in prop::collection::vec(prop::bool::weighted(0.35), 1..48),
        stride in prop::sample::select(vec![1usize, 3, 40, 300]),
        how in prop::sample::select(vec![Rows::NodeByNode, Rows::Blocks, Rows::Whole]),
    ) {
        let snap = snapshot(n);
        // Upstream's count for the cluster, and a small one (the pass then stops early even
        // on small clusters).
        for want in [crate::parallel::num_feasible_nodes_to_find(percentage, n).max(1), small_want] {
            let rejects = |pos: usize| mask[(pos / stride) % mask.len()];
            let upstream = upstream_one_worker(n, start % n.max(1), want, rejects);
            let one = run_in_order(None, &snap, start, want, (&mask, stride), how);
            prop_assert_eq!(&one, &upstream, "one worker, want {}", want);
            for workers in [2, 3, 4, 8] {
                let pool = WorkerPool::new(workers);
                let pooled = run_in_order(Some(&pool), &snap, start, want, (&mask, stride), how);
                prop_assert_eq!(&pooled, &upstream, "{} workers, want {}", workers, want);
            }
            let next = |p: &Pass| (start % n.max(1) + p.2) % n.max(1);
            prop_assert_eq!(next(&one), next(&upstream));
        }
    }
}

#[test]
fn parallel_equals_sequential_on_5000_nodes() {
    let snap = snapshot(5000);
    let pool = WorkerPool::new(2);
    let mask: Vec<bool> = (0..97).map(|i| i % 3 == 0 || i % 7 == 0).collect();
    for start in [0, 1, 2500, 4999, 4990] {
        for want in [1, 100, 500, 5000] {
            assert_eq!(
                run(None, &snap, start, want, &mask),
                run(Some(&pool), &snap, start, want, &mask),
                "start {start} want {want}"
            );
        }
    }
}
