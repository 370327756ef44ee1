//! The one simulation driver: the cache, the queue, a simulated cluster and a scheduler
//! sharing one mock clock, and [`Simulation::run`], the loop every front end drives its runs
//! with (`ksched run`, workload files, `simulate`, `explain`, `bench`, `soak`).
//!
//! A run pops pods and runs their cycles; whenever activeQ runs dry it jumps the clock to the
//! next backoff expiry, grace-period end, asynchronous preemption step or event a source
//! asked for, so backoffs, graceful
//! termination and paced background work cost no wall time and a run is reproducible from its
//! seed. What a front end adds is not a loop but:
//!
//! * **event sources** ([`EventSource`]): what changes the cluster while it runs — pods and
//!   nodes a workload op creates, churn, steady-state replacement, paced deletions, faults,
//!   controllers. A source acts when the run starts, whenever the clock reaches the time it
//!   asked for, and after each attempt;
//! * **observers** ([`Observer`], a few in [`crate::observe`]): what it measures — outcome
//!   counts, the attempt-latency histogram, throughput windows, time series sampled each time
//!   the clock is about to move;
//! * **when to stop** ([`Until`]) and how the clock moves ([`RunOptions`]).
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use ksched_engine::api::{Node, Pod, ResourceName::Cpu};
//! use ksched_engine::cache::Cache;
//! use ksched_engine::framework::Profile;
//! use ksched_engine::queue::QueueConfig;
//! use ksched_engine::util::time::{Clock, Timestamp};
//! use ksched_sim::observe::Counts;
//! use ksched_sim::simulation::{EventSource, RunOptions, Simulation, Until};
//!
//! /// Creates one pod every simulated second, `left` times.
//! struct Trickle { left: u32, next: Timestamp }
//!
//! impl EventSource for Trickle {
//!     fn next_event(&self) -> Option<Timestamp> {
//!         (self.left > 0).then_some(self.next)
//!     }
//!     fn fire_due(&mut self, sim: &mut Simulation) -> Result<(), String> {
//!         while self.left > 0 && self.next <= sim.clock.now() {
//!             let pod = Pod::builder(&format!("p{}", self.left)).container("i", &[(Cpu, 100)]).build();
//!             sim.cluster.create_pod(pod).map_err(|e| e.to_string())?;
//!             self.left -= 1;
//!             self.next = self.next.saturating_add(Duration::from_secs(1));
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let cache = Arc::new(Cache::upstream());
//! cache.add_node(Node::builder("n").resources(4000, 1 << 30, 110).build()).unwrap();
//! let mut sim = Simulation::new(cache, Profile::default_profile(), QueueConfig::new(), 1);
//! let mut trickle = Trickle { left: 3, next: sim.clock.now() };
//! let mut counts = Counts::default();
//! sim.run(Until::Idle, &RunOptions::default(), &mut [&mut trickle], &mut [&mut counts]).unwrap();
//! assert_eq!(counts.scheduled, 3);
//! ```
//!
//! The regression gate counts the instructions of a measured phase with callgrind's
//! `--toggle-collect` on a named, never-inlined caller of `run` (`synth::drive` in the
//! harness); `run` itself is generic and may be inlined into it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cluster::InMemoryCluster;
use ksched_engine::api::{Pod, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::cluster::ClusterApi;
use ksched_engine::framework::events::QueueingHints;
use ksched_engine::framework::Profiles;
use ksched_engine::queue::{PriorityQueue, QueueConfig, SchedulingQueue};
use ksched_engine::scheduler::{CycleOutcome, Scheduler};
use ksched_engine::util::time::{Clock, MockClock, Timestamp};

/// A cluster the driver can run on: the scheduler's `ClusterApi`, plus the work it has
/// waiting on the clock (grace periods, delayed informer events).
pub trait SimCluster: ClusterApi + 'static {
    /// When the next piece of the cluster's own work is due, if any.
    fn next_deadline(&self) -> Option<Timestamp>;
    /// Does the work due by now on the clock.
    fn tick(&self);
}

impl SimCluster for InMemoryCluster {
    fn next_deadline(&self) -> Option<Timestamp> {
        InMemoryCluster::next_deadline(self)
    }
    fn tick(&self) {
        InMemoryCluster::tick(self);
    }
}

/// Something that changes the cluster while a run goes on. Every method has a default that
/// does nothing, so a source implements only what it needs. Errors end the run.
pub trait EventSource<C: SimCluster = InMemoryCluster> {
    /// Once, when a run starts (before its first attempt).
    fn start(&mut self, _sim: &mut Simulation<C>) -> Result<(), String> {
        Ok(())
    }
    /// The time of this source's next event, if it has one: an idle run jumps the clock there.
    fn next_event(&self) -> Option<Timestamp> {
        None
    }
    /// Before every attempt and after every clock jump: acts on everything due by now.
    fn fire_due(&mut self, _sim: &mut Simulation<C>) -> Result<(), String> {
        Ok(())
    }
    /// After every attempt, with its outcome.
    fn after_attempt(&mut self, _sim: &mut Simulation<C>, _outcome: &CycleOutcome) -> Result<(), String> {
        Ok(())
    }
    /// For [`Until::SourcesDone`]: whether what this source waits for has happened.
    fn done(&self, _sim: &Simulation<C>) -> bool {
        true
    }
}

/// Something that measures a run. Observers see every attempt after its cycle, before the
/// sources' `after_attempt`.
pub trait Observer<C: SimCluster = InMemoryCluster> {
    /// Just before a popped pod's cycle runs, when the cache, queue and scheduler are as that
    /// cycle will find them (`ksched explain`).
    fn before_cycle(&mut self, _sim: &Simulation<C>, _pod: &Pod) {}
    /// One attempt's outcome and its wall time in ns.
    fn attempt(&mut self, outcome: &CycleOutcome, ns: u64);
    /// Just before the clock moves from now to `to`, with the cluster as it stood over that
    /// stretch of simulated time (time series sample it here).
    fn clock_moving(&mut self, _sim: &Simulation<C>, _to: Timestamp) {}
}

/// Any `FnMut(outcome, ns)` observes attempts.
impl<C: SimCluster, F: FnMut(&CycleOutcome, u64)> Observer<C> for F {
    fn attempt(&mut self, outcome: &CycleOutcome, ns: u64) {
        self(outcome, ns)
    }
}

/// When a run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Nothing more can happen: activeQ is empty and nothing waits on the clock.
    Idle,
    /// The clock reached this time (the scheduler keeps working until then).
    Time(Timestamp),
    /// Every source's [`EventSource::done`] holds once activeQ is empty.
    SourcesDone,
    /// This many attempts ran, or activeQ is empty (without moving the clock when idle).
    Attempts(u64),
}

/// How the clock moves during a run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Simulated time each attempt takes (`None`: attempts take no simulated time).
    pub attempt_cost: Option<Duration>,
    /// The longest an idle run may jump the clock ahead of where it started before it gives
    /// up ([`RunError::WaitLimit`]); `None`: no limit. Not applied to [`Until::Time`].
    pub wait_limit: Option<Duration>,
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Its `Until` held.
    Met,
    /// Nothing more could happen, and `Until::SourcesDone` did not hold.
    Stuck,
}

/// A run that could not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// An event source failed.
    Source(String),
    /// The clock would have passed the wait limit.
    WaitLimit(Duration),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Source(e) => f.write_str(e),
            RunError::WaitLimit(d) => write!(f, "timed out after {} simulated seconds", d.as_secs()),
        }
    }
}

pub struct Simulation<C: SimCluster = InMemoryCluster> {
    pub cache: Arc<Cache>,
    pub queue: Arc<PriorityQueue>,
    pub cluster: Arc<C>,
    pub clock: Arc<MockClock>,
    pub scheduler: Scheduler,
}

impl Simulation {
    /// A simulation over `cache` (nodes and bound pods already in it) with an in-memory
    /// cluster, starting at 1 s on the simulated clock. `queue_config`'s clock is replaced by
    /// the simulated one. `profiles` (a `Profile` or a configuration's `Profiles`) share the
    /// queue; the cluster queues only the pods one of them schedules.
    pub fn new(cache: Arc<Cache>, profiles: impl Into<Profiles>, queue_config: QueueConfig, seed: u64) -> Simulation {
        let profiles: Profiles = profiles.into();
        let clock = Arc::new(MockClock::new(Timestamp::from_secs(1)));
        let mut hints = QueueingHints::new();
        for p in profiles.iter() {
            hints.add_profile(p);
        }
        // PreEnqueue plugins and hints read the cluster's objects from the cache (the
        // informers' listers), unless the caller gave the queue another source.
        let queue_config = match queue_config.objects {
            Some(_) => queue_config,
            None => queue_config.with_objects(cache.clone()),
        };
        let queue = Arc::new(PriorityQueue::new(queue_config.with_clock(clock.clone()).with_hints(hints)));
        let names = profiles.iter().map(|p| Sym::new(&p.scheduler_name)).collect();
        let cluster = InMemoryCluster::new(cache.clone()).with_queue(queue.clone()).with_clock(clock.clone());
        let cluster = Arc::new(cluster.with_scheduler_names(names).with_name_seed(seed));
        Simulation::with_cluster(cache, queue, clock, cluster, profiles, seed)
    }
}

impl<C: SimCluster> Simulation<C> {
    /// A simulation on a cluster of the caller's (e.g. a fault-injecting one) that shares
    /// `cache`, `queue` and `clock`. The scheduler runs under the queue configuration's feature
    /// gates and preemption API delay.
    pub fn with_cluster(
        cache: Arc<Cache>,
        queue: Arc<PriorityQueue>,
        clock: Arc<MockClock>,
        cluster: Arc<C>,
        profiles: impl Into<Profiles>,
        seed: u64,
    ) -> Simulation<C> {
        let api: Arc<dyn ClusterApi> = cluster.clone();
        let scheduler = Scheduler::new(cache.clone(), queue.clone(), profiles, api, seed)
            .with_clock(clock.clone())
            .with_feature_gates(queue.config().gates)
            .with_preemption_api_delay(queue.config().preemption_api_delay);
        Simulation { cache, queue, cluster, clock, scheduler }
    }

    /// Moves the clock to the next backoff expiry, cluster deadline or unschedulable-pods
    /// leftover flush (if that is later than now), lets due cluster work happen, due backoffs
    /// and leftovers flush. `false` when nothing is waiting on the clock.
    pub fn advance(&mut self) -> bool {
        let Some(next) = self.next_wakeup(None) else { return false };
        self.jump_to(next);
        true
    }

    fn next_wakeup(&self, other: Option<Timestamp>) -> Option<Timestamp> {
        let leftover = self.queue.next_leftover_flush();
        let preemption = self.scheduler.next_preemption_step();
        [self.queue.next_backoff_expiry(), self.cluster.next_deadline(), leftover, preemption, other]
            .into_iter()
            .flatten()
            .min()
    }

    /// Moves the clock to `t` (if later) and does the work due there: the cluster's (grace
    /// periods, runs), the scheduler's asynchronous preemption steps, then the queue's flushes.
    fn jump_to(&mut self, t: Timestamp) {
        if t > self.clock.now() {
            self.clock.set(t);
        }
        self.cluster.tick();
        self.scheduler.run_preemption_steps();
        self.queue.flush_backoff_completed();
        self.queue.flush_unschedulable_leftover();
    }

    /// The driver: runs cycles and moves the clock until `until` holds (see the module docs).
    pub fn run(
        &mut self,
        until: Until,
        opts: &RunOptions,
        sources: &mut [&mut dyn EventSource<C>],
        observers: &mut [&mut dyn Observer<C>],
    ) -> Result<Stop, RunError> {
        for s in sources.iter_mut() {
            s.start(self).map_err(RunError::Source)?;
        }
        let start = self.clock.now();
        let mut attempts = 0u64;
        loop {
            for s in sources.iter_mut() {
                s.fire_due(self).map_err(RunError::Source)?;
            }
            match until {
                Until::Time(t) if self.clock.now() >= t => return Ok(Stop::Met),
                Until::Attempts(n) if attempts >= n => return Ok(Stop::Met),
                _ => {}
            }
            let t0 = Instant::now();
            if let Some(info) = self.queue.try_pop() {
                for o in observers.iter_mut() {
                    o.before_cycle(self, &info.pod);
                }
                let outcome = self.scheduler.schedule_popped(info);
                let ns = t0.elapsed().as_nanos() as u64;
                attempts += 1;
                for o in observers.iter_mut() {
                    o.attempt(&outcome, ns);
                }
                for s in sources.iter_mut() {
                    s.after_attempt(self, &outcome).map_err(RunError::Source)?;
                }
                if let Some(cost) = opts.attempt_cost {
                    let to = self.clock.now().saturating_add(cost);
                    for o in observers.iter_mut() {
                        o.clock_moving(self, to);
                    }
                    self.clock.advance(cost);
                    self.cluster.tick();
                    self.scheduler.run_preemption_steps();
                    self.queue.flush_backoff_completed();
                }
                continue;
            }
            let target = match until {
                Until::Attempts(_) => return Ok(Stop::Met),
                Until::SourcesDone if sources.iter().all(|s| s.done(self)) => return Ok(Stop::Met),
                Until::Time(t) => Some(t),
                Until::Idle | Until::SourcesDone => None,
            };
            let events = sources.iter().filter_map(|s| s.next_event()).min();
            let Some(next) = self.next_wakeup([events, target].into_iter().flatten().min()) else {
                return Ok(if until == Until::Idle { Stop::Met } else { Stop::Stuck });
            };
            if let (Some(limit), None) = (opts.wait_limit, target) {
                if next.saturating_since(start) > limit {
                    return Err(RunError::WaitLimit(limit));
                }
            }
            if next > self.clock.now() {
                for o in observers.iter_mut() {
                    o.clock_moving(self, next);
                }
            }
            self.jump_to(next);
        }
    }

    /// Schedules until nothing more can happen: runs cycles while activeQ has pods, then
    /// advances the clock, until nothing waits on it. Pods parked as unschedulable with nothing
    /// left to wake them stay parked. `f` gets each cycle's outcome and its wall time in ns.
    pub fn drain(&mut self, mut f: impl FnMut(CycleOutcome, u64)) {
        let mut obs = |o: &CycleOutcome, ns: u64| f(o.clone(), ns);
        // No sources, no limit: nothing can fail.
        let _ = self.run(Until::Idle, &RunOptions::default(), &mut [], &mut [&mut obs]);
    }

    /// `drain`, with `before` called on each popped pod just before its cycle runs, when the
    /// cache, queue and scheduler are as that cycle will find them.
    pub fn drain_observed(&mut self, before: impl FnMut(&Simulation<C>, &Pod), f: impl FnMut(CycleOutcome, u64)) {
        struct Both<B, F>(B, F);
        impl<C: SimCluster, B: FnMut(&Simulation<C>, &Pod), F: FnMut(CycleOutcome, u64)> Observer<C> for Both<B, F> {
            fn before_cycle(&mut self, sim: &Simulation<C>, pod: &Pod) {
                (self.0)(sim, pod)
            }
            fn attempt(&mut self, outcome: &CycleOutcome, ns: u64) {
                (self.1)(outcome.clone(), ns)
            }
        }
        let mut obs = Both(before, f);
        let _ = self.run(Until::Idle, &RunOptions::default(), &mut [], &mut [&mut obs]);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use ksched_engine::api::{Node, Pod, ResourceName::*};
    use ksched_engine::framework::Profile;

    #[test]
    fn drain_waits_out_backoff_and_grace_periods_on_the_simulated_clock() {
        // One node with room for one big pod; a low-priority pod holds it with a 30 s grace
        // period, and a high-priority pod must preempt it.
        let cache = Arc::new(Cache::upstream());
        cache.add_node(Node::builder("n").resources(1000, 1 << 30, 10).build()).unwrap();
        let mut sim = Simulation::new(cache, Profile::default_profile(), QueueConfig::new(), 1);
        let low = Pod::builder("low").container("i", &[(Cpu, 800)]).termination_grace_period_seconds(30).build();
        sim.cluster.create_pod(low).unwrap();
        sim.drain(|_, _| {});
        let high = Pod::builder("high").container("i", &[(Cpu, 800)]).priority(10).build();
        sim.cluster.create_pod(high).unwrap();
        let mut outcomes = Vec::new();
        let start = sim.clock.now();
        sim.drain(|o, _| outcomes.push(o));
        let scheduled: Vec<_> = outcomes
            .iter()
            .filter_map(|o| match o {
                CycleOutcome::Scheduled { decision, .. } => Some(decision.node.as_str().to_owned()),
                _ => None,
            })
            .collect();
        assert_eq!(scheduled, ["n"]);
        assert!(outcomes.iter().any(|o| matches!(o, CycleOutcome::Unschedulable { preemption: Some(_), .. })));
        // The victim's 30 s grace period passed on the simulated clock.
        assert!(sim.clock.now().saturating_since(start) >= Duration::from_secs(30));
        assert!(!sim.advance());
        assert!(sim.cache.check_invariants().is_empty());
    }

    /// Creates a pod at each of `times` (seconds after the start); done once all are created.
    struct At {
        times: Vec<u64>,
        base: Timestamp,
        made: usize,
    }

    impl EventSource for At {
        fn start(&mut self, sim: &mut Simulation) -> Result<(), String> {
            self.base = sim.clock.now();
            Ok(())
        }
        fn next_event(&self) -> Option<Timestamp> {
            self.times.get(self.made).map(|&s| self.base.saturating_add(Duration::from_secs(s)))
        }
        fn fire_due(&mut self, sim: &mut Simulation) -> Result<(), String> {
            while self.next_event().is_some_and(|t| t <= sim.clock.now()) {
                let pod = Pod::builder(&format!("p{}", self.made)).container("i", &[(Cpu, 100)]).build();
                sim.cluster.create_pod(pod).map_err(|e| e.to_string())?;
                self.made += 1;
            }
            Ok(())
        }
        fn done(&self, _: &Simulation) -> bool {
            self.made == self.times.len()
        }
    }

    fn one_node_sim() -> Simulation {
        let cache = Arc::new(Cache::upstream());
        cache.add_node(Node::builder("n").resources(4000, 1 << 30, 110).build()).unwrap();
        Simulation::new(cache, Profile::default_profile(), QueueConfig::new(), 1)
    }

    #[test]
    fn run_until_conditions_stop_where_they_say() {
        // (until, attempt cost, wait limit, want result, want pods scheduled, want seconds on the clock)
        let base = Timestamp::from_secs(1);
        type Case = (Until, Option<Duration>, Option<Duration>, Result<Stop, RunError>, usize, u64);
        let cases: Vec<Case> = vec![
            (Until::Idle, None, None, Ok(Stop::Met), 3, 20),
            (Until::SourcesDone, None, None, Ok(Stop::Met), 3, 20),
            (Until::Time(base.saturating_add(Duration::from_secs(7))), None, None, Ok(Stop::Met), 2, 7),
            (Until::Attempts(10), None, None, Ok(Stop::Met), 1, 0),
            (Until::Idle, None, Some(Duration::from_secs(10)), Err(RunError::WaitLimit(Duration::from_secs(10))), 2, 5),
            // Each attempt takes 1 s: the clock reaches the last event at 20 s regardless.
            (Until::Idle, Some(Duration::from_secs(1)), None, Ok(Stop::Met), 3, 21),
        ];
        for (i, (until, cost, limit, want, scheduled, secs)) in cases.into_iter().enumerate() {
            let mut sim = one_node_sim();
            let mut src = At { times: vec![0, 5, 20], base, made: 0 };
            let mut counts = crate::observe::Counts::default();
            let opts = RunOptions { attempt_cost: cost, wait_limit: limit };
            let got = sim.run(until, &opts, &mut [&mut src], &mut [&mut counts]);
            assert_eq!(got, want, "case {i}");
            assert_eq!(counts.scheduled, scheduled, "case {i}");
            assert_eq!(sim.clock.now().saturating_since(base).as_secs(), secs, "case {i}");
        }
    }

    #[test]
    fn run_until_sources_done_reports_stuck_when_nothing_can_happen() {
        struct Never;
        impl EventSource for Never {
            fn done(&self, _: &Simulation) -> bool {
                false
            }
        }
        let mut sim = one_node_sim();
        let got = sim.run(Until::SourcesDone, &RunOptions::default(), &mut [&mut Never], &mut []);
        assert_eq!(got, Ok(Stop::Stuck));
    }

    #[test]
    fn run_durations_free_the_node_on_the_clock_and_waiting_pods_follow() {
        // One node with room for one pod at a time; three pods of 60 s each run one after
        // another, each bound when the one before it ends. An observer sees the clock move.
        let cache = Arc::new(Cache::upstream());
        cache.add_node(Node::builder("n").resources(1000, 1 << 30, 10).build()).unwrap();
        let mut sim = Simulation::new(cache, Profile::default_profile(), QueueConfig::new(), 1);
        let start = sim.clock.now();
        for i in 0..3 {
            let p = Pod::builder(&format!("p{i}")).container("i", &[(Cpu, 800)]).run_duration(Duration::from_secs(60));
            sim.cluster.create_pod(p.build()).unwrap();
        }
        struct Binds(Vec<(String, u64)>, Arc<MockClock>, Timestamp, Vec<u64>);
        impl Observer for Binds {
            fn attempt(&mut self, o: &CycleOutcome, _: u64) {
                if let CycleOutcome::Scheduled { pod, .. } = o {
                    self.0.push((pod.name.to_string(), self.1.now().saturating_since(self.2).as_secs()));
                }
            }
            fn clock_moving(&mut self, sim: &Simulation, to: Timestamp) {
                assert!(to > sim.clock.now());
                self.3.push(to.saturating_since(self.2).as_secs());
            }
        }
        let mut binds = Binds(Vec::new(), sim.clock.clone(), start, Vec::new());
        sim.run(Until::Idle, &RunOptions::default(), &mut [], &mut [&mut binds]).unwrap();
        let times: Vec<u64> = binds.0.iter().map(|(_, t)| *t).collect();
        assert_eq!(times, [0, 60, 120]);
        assert_eq!(sim.clock.now().saturating_since(start).as_secs(), 180, "the last run ended too");
        assert!(binds.3.contains(&60) && binds.3.contains(&180), "{:?}", binds.3);
        assert_eq!(sim.cluster.stats().runs_ended, 3);
        assert!(sim.cache.update_snapshot().get(Sym::new("n")).unwrap().pods().is_empty());
    }
}
