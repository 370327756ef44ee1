use proptest::prelude::*;

use super::*;
use ksched_engine::api::ResourceName::Cpu;

fn small(seed: u64, nodes: usize, rates: FaultRates) -> Soak {
    let mut config = SoakConfig::new(seed, nodes, rates);
    config.pods_per_node = 8;
    Soak::new(config).unwrap()
}

fn run(seed: u64, nodes: usize, steps: u64, rates: FaultRates) -> SoakReport {
    run_ttl(seed, nodes, steps, rates, ksched_engine::cache::ASSUMED_POD_TTL)
}

/// `run` with the seeds' TTL cleaner expiring assumed pods `ttl` after binding (0: never).
fn run_ttl(seed: u64, nodes: usize, steps: u64, rates: FaultRates, ttl: Duration) -> SoakReport {
    let mut config = SoakConfig::new(seed, nodes, rates);
    config.pods_per_node = 8;
    config.assumed_ttl = ttl;
    let mut soak = Soak::new(config).unwrap();
    for _ in 0..steps {
        soak.step();
    }
    soak.finish()
}

fn assert_passed(r: &SoakReport) {
    assert!(
        r.passed(),
        "soak failed; replay with seed {}: {} violations, {} lost pods\n{}",
        r.seed,
        r.invariant_violations,
        r.lost_pods,
        r.messages.join("\n")
    );
}

#[test]
fn soak_without_faults_binds_and_balances_the_ledger() {
    let r = run(1, 12, 150, FaultRates::default());
    assert_passed(&r);
    assert!(r.pods_created > 100 && r.pods_bound > 30 && r.pods_deleted > 0, "{r:?}");
    assert_eq!(r.pods_created, r.pods_bound + r.pods_pending + r.pods_deleted);
    assert_eq!(r.pods_pending, r.pending_by_reason.values().sum::<u64>());
    assert_eq!((r.faults.events_lost, r.faults.binds_failed, r.assumed_pods_expired), (0, 0, 0));
}

#[test]
fn soak_with_every_fault_exercises_each_fault_and_stays_sound() {
    let rates = FaultRates { lost_confirmation: 0.1, ..FaultRates::all() };
    // Upstream's assumed pods never expire: the relists alone keep the cache sound.
    let r = run(7, 15, 400, rates);
    assert_passed(&r);
    assert_eq!(r.assumed_pods_expired, 0);
    assert!(r.faults.events_lost > 0 && r.faults.deleted_while_assumed > 0, "{r:#?}");
    // With the seeds' TTL cleaner.
    let r = run_ttl(7, 15, 400, rates, Duration::from_secs(30));
    assert_passed(&r);
    let f = r.faults;
    for (what, n) in [
        ("failed binds", f.binds_failed),
        ("applied-but-failed binds", f.binds_applied_but_failed),
        ("delayed binds", f.binds_delayed),
        ("pods deleted while assumed", f.deleted_while_assumed),
        ("late events", f.events_late),
        ("lost events", f.events_lost),
        ("duplicated events", f.events_duplicated),
        ("relist repairs", f.relist_repairs),
        ("nodes removed", f.nodes_removed),
        ("nodes updated", f.nodes_updated),
        ("victims", f.victims_deleted),
        ("victims deleted while their preemptor waits", f.victims_deleted_early),
        ("expired assumed pods", r.assumed_pods_expired),
    ] {
        assert!(n > 0, "no {what} in 400 steps: {r:#?}");
    }
    assert!(r.attempts.preemptions > 0, "{:?}", r.attempts);
}

#[test]
fn soak_replays_exactly_from_its_seed() {
    let a = run(42, 10, 120, FaultRates::all());
    let b = run(42, 10, 120, FaultRates::all());
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
}

#[test]
fn soak_check_reports_a_lost_pod() {
    let mut soak = small(3, 4, FaultRates::default());
    soak.step();
    // A pod leaves the queue behind the cluster's back: nobody will ever schedule it.
    let p = soak.queue.pending_pods().into_iter().next().or_else(|| {
        let p = Pod::builder("extra").container("i", &[(Cpu, 100_000)]).build();
        soak.cluster.create_pod(p.clone()).ok()
    });
    let p = p.unwrap();
    soak.queue.delete(&p);
    soak.step();
    assert_eq!(soak.lost.len(), 1);
    let r = soak.finish();
    assert!(!r.passed());
    assert!(r.messages.iter().any(|m| m.contains("is lost")), "{:?}", r.messages);
}

#[test]
fn soak_check_reports_a_resurrected_pod_and_a_leaked_assumed_pod() {
    let mut soak = small(4, 4, FaultRates::default());
    let p = soak.cluster.create_pod(Pod::builder("ghost").container("i", &[(Cpu, 100_000)]).build()).unwrap();
    soak.cluster.delete_pod(&p.uid, false);
    soak.queue.add(p.clone()).unwrap();
    let pending = soak.cluster.create_pod(Pod::builder("held").container("i", &[(Cpu, 100_000)]).build()).unwrap();
    let node = soak.cluster.node_names()[0];
    soak.cache.assume_pod(&pending.with_node(node)).unwrap();
    soak.check();
    let r = soak.report();
    let has = |s: &str| r.messages.iter().any(|m| m.contains(s));
    assert!(has("was deleted (resurrected)"), "{:?}", r.messages);
    assert!(has("pending pod default/held is Assumed in the cache"), "{:?}", r.messages);
}

/// A lost confirmation: with upstream's TTL (0) the assumed pod stays assumed until the
/// relist confirms it; with the seeds' cleaner (a positive TTL) it expires first.
#[test]
fn lost_confirmation_by_assumed_pod_ttl() {
    // (ttl, state after 31 s, expired count)
    let cases = [
        (ksched_engine::cache::ASSUMED_POD_TTL, PodStateName::Assumed, 0),
        (Duration::from_secs(30), PodStateName::Initial, 1),
        (Duration::from_secs(60), PodStateName::Assumed, 0),
    ];
    for (ttl, after, expired) in cases {
        let rates = FaultRates { lost_confirmation: 1.0, ..FaultRates::default() };
        let mut config = SoakConfig::new(5, 2, rates);
        config.pods_per_node = 8;
        config.assumed_ttl = ttl;
        let mut soak = Soak::new(config).unwrap();
        assert_eq!(soak.cache.assumed_pod_ttl(), ttl);
        let p = soak.cluster.create_pod(Pod::builder("p").container("i", &[(Cpu, 100)]).build()).unwrap();
        assert!(matches!(soak.sim.scheduler.schedule_one(), Some(CycleOutcome::Scheduled { .. })));
        assert_eq!(soak.cache.pod_state(&p.uid), PodStateName::Assumed);
        soak.clock.advance(Duration::from_secs(31));
        soak.cluster.tick();
        assert_eq!(soak.cache.pod_state(&p.uid), after, "ttl {ttl:?}: its Add never came");
        assert_eq!(soak.cluster.stats().assumed_expired, expired, "ttl {ttl:?}");
        soak.cluster.relist();
        assert_eq!(soak.cache.pod_state(&p.uid), PodStateName::Added, "ttl {ttl:?}: the relist delivered it");
        assert!(soak.cache.check_invariants().is_empty());
    }
}

#[test]
fn duplicate_confirmations_count_the_pod_once() {
    let rates = FaultRates { duplicate_confirmation: 1.0, ..FaultRates::default() };
    let mut soak = small(6, 1, rates);
    let p = soak.cluster.create_pod(Pod::builder("p").container("i", &[(Cpu, 700)]).build()).unwrap();
    soak.sim.scheduler.schedule_one();
    soak.cluster.tick();
    let node = soak.cluster.bound_node(&p.uid).unwrap();
    assert_eq!(soak.cache.update_snapshot().get(node).unwrap().requested().milli_cpu, 700);
    let st = soak.cluster.stats();
    assert_eq!((st.events_delivered, st.events_refused), (2, 1));
}

#[test]
fn a_delete_after_a_lost_add_removes_the_assumed_pod() {
    // Regression: the cache refused to remove an Assumed pod, so a bound pod whose Add was
    // lost and which was then deleted stayed counted on its node until the TTL (forever with
    // a TTL of 0).
    let mut soak = small(8, 1, FaultRates { lost_confirmation: 1.0, ..FaultRates::default() });
    let p = soak.cluster.create_pod(Pod::builder("p").container("i", &[(Cpu, 700)]).build()).unwrap();
    soak.sim.scheduler.schedule_one();
    soak.cluster.set_rates(FaultRates::default());
    soak.cluster.delete_pod(&p.uid, false);
    soak.cluster.tick();
    assert_eq!(soak.cache.pod_state(&p.uid), PodStateName::Initial);
    let node = soak.cluster.node_names()[0];
    assert_eq!(soak.cache.update_snapshot().get(node).unwrap().requested().milli_cpu, 0);
}

#[test]
fn rates_outside_zero_to_one_are_refused() {
    let bad = FaultRates { bind_delay: 1.5, ..FaultRates::default() };
    let err = Soak::new(SoakConfig::new(1, 1, bad)).err().unwrap();
    assert_eq!(err, "--bind-delay-rate: 1.5 is not a probability between 0 and 1");
}

fn rates_strategy() -> impl Strategy<Value = FaultRates> {
    let r = || prop_oneof![Just(0.0), 0.0..0.3f64];
    (r(), r(), r(), r(), r(), 0.0..1.0f64, r()).prop_map(|(a, b, c, d, e, f, g)| FaultRates {
        bind_failure: a,
        bind_delay: b,
        late_confirmation: c,
        lost_confirmation: d,
        duplicate_confirmation: e,
        node_churn: f,
        delete_while_assumed: g,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Short soaks with random seeds and fault mixes: no violation, no lost pod. A failure
    /// prints the seed; `ksched soak --seed N --steps S --nodes M` with the same rates
    /// replays it.
    #[test]
    fn short_soaks_lose_nothing_and_count_nothing_twice(
        seed in any::<u64>(),
        nodes in 2usize..12,
        steps in 20u64..120,
        rates in rates_strategy(),
    ) {
        let r = run(seed, nodes, steps, rates);
        prop_assert!(
            r.passed(),
            "replay: seed {seed}, {nodes} nodes, {steps} steps, rates {rates:?}: {} violations, {} lost\n{}",
            r.invariant_violations,
            r.lost_pods,
            r.messages.join("\n")
        );
    }
}
