use super::*;
use crate::framework::pick::heap_root;
use crate::util::rng::Rng;

fn sym(i: usize) -> Sym {
    Sym::new(&format!("n{i}"))
}

fn ranking(totals: &[i64]) -> Ranking {
    let mut r = Ranking::default();
    r.build(totals.iter().enumerate().map(|(i, &t)| (t, sym(i))));
    r
}

fn pops(totals: &[i64]) -> Vec<usize> {
    let mut r = ranking(totals);
    std::iter::from_fn(|| r.pop()).map(|s| (0..totals.len()).find(|&i| sym(i) == s).unwrap()).collect()
}

/// Pop orders worked out by hand from Go's heap.Init and heap.Pop (Less: a higher total).
#[test]
fn ranking_pops_in_go_heap_order() {
    let table: &[(&[i64], &[usize])] = &[
        (&[], &[]),
        (&[7], &[0]),
        (&[1, 9, 5], &[1, 2, 0]),
        // Identical nodes: not the found order. Pop 1 swaps the last entry to the root and it
        // stays (no child strictly higher), so the last node comes next, and so on.
        (&[5, 5, 5, 5], &[0, 3, 2, 1]),
        (&[5, 5, 5, 5, 5], &[0, 4, 3, 2, 1]),
        // Init: index 1 (9) rises over 0; then each pop re-sifts.
        (&[3, 9, 3, 9], &[1, 3, 2, 0]),
    ];
    for (totals, want) in table {
        assert_eq!(pops(totals), *want, "{totals:?}");
    }
}

/// Against a simple model: the first pop is the heap root the cycle picks (`heap_root`),
/// and the pops give every node once, by non-increasing total.
#[test]
fn ranking_property_first_is_the_pick_and_totals_never_rise() {
    let mut rng = Rng::seed(7);
    for _ in 0..500 {
        let n = rng.below(40) as usize;
        let totals: Vec<i64> = (0..n).map(|_| rng.below(4) as i64 * 10).collect();
        let order = pops(&totals);
        assert_eq!(order.len(), n);
        if n > 0 {
            assert_eq!(order[0], heap_root(&totals), "{totals:?}");
        }
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{totals:?}");
        assert!(order.windows(2).all(|w| totals[w[0]] >= totals[w[1]]), "{totals:?} popped {order:?}");
    }
}

fn sig(name: &str) -> PodSignature {
    let mut s = PodSignature::new(Sym::new("default-scheduler"));
    s.set(crate::framework::signature::keys::LABELS, name.into());
    s
}

const T0: Timestamp = Timestamp(1_000_000_000);

/// A batch after cycle 1 chose n0 from totals [9, 5, 3] (n1, n2 left), signature "a".
fn kept() -> Batch {
    let mut b = Batch::default();
    b.chose(1, sym(0), None, Some(sig("a")), T0, |r| {
        r.build([(9, sym(0)), (5, sym(1)), (3, sym(2))]);
        r.pop();
        true
    });
    b
}

#[test]
fn a_hint_needs_every_condition() {
    let later = T0.saturating_add(MAX_AGE);
    let expired = T0.saturating_add(MAX_AGE + Duration::from_nanos(1));
    /// (case, signature, cycle, now, the previous node's verdict, the answer)
    type Case = (&'static str, Option<PodSignature>, u64, Timestamp, Option<bool>, Result<Sym, NoHint>);
    let table: &[Case] = &[
        ("all hold", Some(sig("a")), 2, T0, Some(true), Ok(sym(1))),
        ("at the age limit", Some(sig("a")), 2, later, Some(true), Ok(sym(1))),
        ("expired", Some(sig("a")), 2, expired, Some(true), Err(NoHint::Expired)),
        ("a cycle in between", Some(sig("a")), 3, T0, Some(true), Err(NoHint::CycleSkipped)),
        ("the same cycle", Some(sig("a")), 1, T0, Some(true), Err(NoHint::CycleSkipped)),
        ("another signature", Some(sig("b")), 2, T0, Some(true), Err(NoHint::OtherSignature)),
        ("no signature", None, 2, T0, Some(true), Err(NoHint::OtherSignature)),
        ("previous node still fits", Some(sig("a")), 2, T0, Some(false), Err(NoHint::NodeNotFull)),
        ("previous node gone", Some(sig("a")), 2, T0, None, Err(NoHint::NodeGone)),
    ];
    for (case, s, cycle, now, verdict, want) in table {
        let mut b = kept();
        let mut asked = None;
        let got = b.hint(s.as_ref(), *cycle, *now, |n| {
            asked = Some(n);
            *verdict
        });
        assert_eq!(got, *want, "{case}");
        assert_eq!(b.has_ranking(), got.is_ok(), "{case}: a failed check drops the ranking");
        if asked.is_some() {
            assert_eq!(asked, Some(sym(0)), "{case}: asks about the previous pod's node");
        }
    }
}

#[test]
fn a_taken_hint_keeps_the_ranking_and_a_refused_one_replaces_it() {
    let mut b = kept();
    assert_eq!(b.hint(Some(&sig("a")), 2, T0, |_| Some(true)), Ok(sym(1)));
    b.chose(2, sym(1), Some(sym(1)), Some(sig("a")), T0, |_| panic!("no new ranking when the hint is taken"));
    assert_eq!(b.hinted(), 1);
    assert_eq!(b.hint(Some(&sig("a")), 3, T0, |n| Some(n == sym(1))), Ok(sym(2)));
    // The ranking is used up: the next pod gets none, whatever else holds.
    b.chose(3, sym(2), Some(sym(2)), Some(sig("a")), T0, |_| unreachable!());
    assert_eq!(b.hint(Some(&sig("a")), 4, T0, |_| Some(true)), Err(NoHint::Empty));

    // A hint that did not fit: the full pass's ranking replaces the old one.
    let mut b = kept();
    assert_eq!(b.hint(Some(&sig("a")), 2, T0, |_| Some(true)), Ok(sym(1)));
    b.chose(2, sym(2), Some(sym(1)), Some(sig("a")), T0, |r| {
        r.build([(4, sym(2)), (2, sym(0)), (1, sym(3))]);
        r.pop();
        true
    });
    assert_eq!(b.hinted(), 0);
    assert_eq!(b.hint(Some(&sig("a")), 3, T0, |n| Some(n == sym(2))), Ok(sym(0)));
}

#[test]
fn no_ranking_is_kept_without_a_signature_or_nodes_left() {
    let mut b = kept();
    b.chose(2, sym(4), None, None, T0, |_| panic!("no ranking without a signature"));
    assert!(!b.has_ranking());
    let mut b = kept();
    // The only feasible node (or a nominated one): nothing left to rank.
    b.chose(2, sym(4), None, Some(sig("a")), T0, |_| false);
    assert!(!b.has_ranking());
    assert_eq!(b.hint(Some(&sig("a")), 3, T0, |_| Some(true)), Err(NoHint::Empty));
}
