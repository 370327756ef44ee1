//! A whole cluster on simulated time: the cache, the queue, the in-memory cluster and a
//! scheduler sharing one mock clock. Whenever activeQ runs dry, the clock jumps to the next
//! backoff expiry or grace-period end, so backoffs and graceful termination cost no wall time
//! and a run is reproducible from its seed. The `ksched` commands drive their runs with it.

use std::sync::Arc;
use std::time::Instant;

use crate::cluster::InMemoryCluster;
use ksched_engine::api::Pod;
use ksched_engine::cache::Cache;
use ksched_engine::framework::events::QueueingHints;
use ksched_engine::framework::Profile;
use ksched_engine::queue::{PriorityQueue, QueueConfig, SchedulingQueue};
use ksched_engine::scheduler::{CycleOutcome, Scheduler};
use ksched_engine::util::time::{Clock, MockClock, Timestamp};

pub struct Simulation {
    pub cache: Arc<Cache>,
    pub queue: Arc<PriorityQueue>,
    pub cluster: Arc<InMemoryCluster>,
    pub clock: Arc<MockClock>,
    pub scheduler: Scheduler,
}

impl Simulation {
    /// A simulation over `cache` (nodes and bound pods already in it), starting at 1 s on the
    /// simulated clock. `queue_config`'s clock is replaced by the simulated one.
    pub fn new(cache: Arc<Cache>, profile: Profile, queue_config: QueueConfig, seed: u64) -> Simulation {
        let clock = Arc::new(MockClock::new(Timestamp::from_secs(1)));
        let hints = QueueingHints::from_profile(&profile);
        let queue = Arc::new(PriorityQueue::new(queue_config.with_clock(clock.clone()).with_hints(hints)));
        let cluster = Arc::new(InMemoryCluster::new(cache.clone()).with_queue(queue.clone()).with_clock(clock.clone()));
        let scheduler =
            Scheduler::new(cache.clone(), queue.clone(), profile, cluster.clone(), seed).with_clock(clock.clone());
        Simulation { cache, queue, cluster, clock, scheduler }
    }

    /// Moves the clock to the next backoff expiry, grace-period end or unschedulable-pods
    /// leftover flush (if that is later than now), lets due terminations finish, due backoffs
    /// and leftovers flush. `false` when nothing is waiting on the clock.
    pub fn advance(&self) -> bool {
        let next = [self.queue.next_backoff_expiry(), self.cluster.next_deadline(), self.queue.next_leftover_flush()]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = next else { return false };
        if next > self.clock.now() {
            self.clock.set(next);
        }
        self.cluster.tick();
        self.queue.flush_backoff_completed();
        self.queue.flush_unschedulable_leftover();
        true
    }

    /// Schedules until nothing more can happen: runs cycles while activeQ has pods, then
    /// advances the clock, until nothing waits on it. Pods parked as unschedulable with nothing
    /// left to wake them stay parked. `f` gets each cycle's outcome and its wall time in ns.
    pub fn drain(&mut self, f: impl FnMut(CycleOutcome, u64)) {
        self.drain_observed(|_, _| {}, f);
    }

    /// `drain`, with `before` called on each popped pod just before its cycle runs, when the
    /// cache, queue and scheduler are as that cycle will find them.
    pub fn drain_observed(&mut self, mut before: impl FnMut(&Simulation, &Pod), mut f: impl FnMut(CycleOutcome, u64)) {
        loop {
            loop {
                let t0 = Instant::now();
                let Some(info) = self.queue.try_pop() else { break };
                before(self, &info.pod);
                let outcome = self.scheduler.schedule_popped(info);
                f(outcome, t0.elapsed().as_nanos() as u64);
            }
            if !self.advance() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use ksched_engine::api::{Node, Pod, ResourceName::*};

    #[test]
    fn drain_waits_out_backoff_and_grace_periods_on_the_simulated_clock() {
        // One node with room for one big pod; a low-priority pod holds it with a 30 s grace
        // period, and a high-priority pod must preempt it.
        let cache = Arc::new(Cache::new(Duration::from_secs(30)));
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
}
