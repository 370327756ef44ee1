use proptest::prelude::*;

use super::*;
use crate::util::rng::Rng;

/// Go's `container/heap.Init` followed by reading the root, written out as upstream runs it
/// on its nodeScoreHeap: `Less(i, j)` is "total i > total j, or equal totals and
/// tie-breaker i > tie-breaker j"; `down` prefers the right child only when it is Less than
/// the left, and swaps only when the child is Less than the parent.
fn go_heap_init_root(keys: &[(i64, u64)]) -> usize {
    let mut h: Vec<usize> = (0..keys.len()).collect();
    let less = |h: &[usize], i: usize, j: usize| {
        let (a, b) = (keys[h[i]], keys[h[j]]);
        a.0 > b.0 || (a.0 == b.0 && a.1 > b.1)
    };
    let n = h.len();
    for i0 in (0..n / 2).rev() {
        let mut i = i0;
        loop {
            let j1 = 2 * i + 1;
            if j1 >= n {
                break;
            }
            let mut j = j1;
            if j1 + 1 < n && less(&h, j1 + 1, j1) {
                j = j1 + 1;
            }
            if !less(&h, j, i) {
                break;
            }
            h.swap(i, j);
            i = j;
        }
    }
    h.first().copied().unwrap_or(0)
}

fn model(totals: &[i64]) -> usize {
    go_heap_init_root(&totals.iter().map(|&t| (t, 0)).collect::<Vec<_>>())
}

/// The pick among ties, by hand from Go's heap.Init and by the literal model.
#[test]
fn heap_root_table() {
    // (totals in found order, the index upstream's heap leaves at the root)
    let cases: &[(&[i64], usize)] = &[
        (&[], 0),
        (&[7], 0),
        (&[3, 9], 1),
        // The root is tied: it stays (no child is strictly greater).
        (&[5, 5, 5, 5], 0),
        // Equal children: the left one rises.
        (&[1, 5, 5], 1),
        // The left subtree's tied node (index 3) rises through index 1 before index 2.
        (&[1, 3, 5, 5], 3),
        (&[0, 0, 9, 9], 3),
        // Tied at 2, 3 and 5: neither the first nor the last of them.
        (&[0, 0, 9, 9, 0, 9], 3),
        // Deeper: the first tied node of the left subtree in preorder (3 before 4, 2).
        (&[0, 0, 0, 9, 9], 3),
        // A strictly higher total wins wherever it is.
        (&[9, 9, 9, 9, 9, 9, 10], 6),
        // Tied at 4 (under 1) and 7 (under 3, under 1): 7's path (left, left, left) comes
        // first in preorder, ahead of 4 (left, right).
        (&[0, 0, 0, 0, 8, 0, 0, 8], 7),
        // Negative totals (extenders may lower them).
        (&[-5, -1, -1], 1),
    ];
    for &(totals, want) in cases {
        assert_eq!(model(totals), want, "the literal heap.Init on {totals:?}");
        assert_eq!(heap_root(totals), want, "heap_root on {totals:?}");
    }
}

#[test]
fn upstream_pick_prefers_randomized_ties_and_draws_them_uniformly() {
    let totals = [4, 9, 9, 1, 9, 9];
    // No extender: the heap root, index 1 (preorder 0, 1, 3, 4, 2, 5).
    let mut rng = Rng::seed(1);
    assert_eq!(model(&totals), 1);
    assert_eq!(upstream_pick(&totals, None, None, &mut rng), 1);
    // An extender returned only non-tied nodes: the heap root still.
    let none_tied = [true, false, false, true, false, false];
    assert_eq!(upstream_pick(&totals, None, Some(&none_tied), &mut rng), model(&totals));
    // It returned tied nodes 2 and 5: one of them, each drawn about as often.
    let some = [false, false, true, false, false, true];
    let mut seen = [0u32; 6];
    for seed in 0..400 {
        seen[upstream_pick(&totals, Top::of(&totals), Some(&some), &mut Rng::seed(seed))] += 1;
    }
    assert_eq!(seen[0] + seen[1] + seen[3] + seen[4], 0, "{seen:?}");
    assert!(seen[2] > 150 && seen[5] > 150, "{seen:?}");
    // The literal model with random tie-breakers for those nodes agrees: the winner is
    // always one of them.
    for seed in 0..50 {
        let mut r = Rng::seed(seed);
        let keys: Vec<(i64, u64)> =
            totals.iter().zip(&some).map(|(&t, &on)| (t, if on { r.next_u64() >> 1 } else { 0 })).collect();
        assert!(some[go_heap_init_root(&keys)]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// heap_root is the literal heap.Init's root for any totals, ties being common.
    #[test]
    fn heap_root_equals_go_heap_init(totals in prop::collection::vec(0i64..4, 0..300)) {
        prop_assert_eq!(heap_root(&totals), model(&totals));
    }

    /// Mostly distinct totals: a lone highest one, or a few tied anywhere in the tree.
    #[test]
    fn heap_root_equals_go_heap_init_with_few_ties(totals in prop::collection::vec(0i64..400, 0..300)) {
        prop_assert_eq!(heap_root(&totals), model(&totals));
    }
}
