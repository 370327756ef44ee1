//! The PriorityQueue: activeQ, backoffQ and the unschedulable pods, under one lock.
//!
//! ```text
//!   add ─────────────────────────────▶ activeQ ──── pop ───▶ in flight (being scheduled;
//!                                        ▲  ▲                 │        events are recorded)
//!      flush_backoff_completed ──────────┘  │                 │
//!      (backoff completed; or, with         │                 ├── done (bound / gone) ──▶ ✕
//!       SchedulerPopFromBackoffQ, pop       │                 │
//!       when activeQ is empty)              │                 ├── failed by an error (no
//!                                           │                 │   rejecting plugin) ──▶ backoff
//!   backoffQ ◀── requeue (still backing off)┴── requeue ──┐   │ add_unschedulable_if_not_present
//!      ▲                                                  │   ▼
//!      │                                       unschedulable pods (parked)
//!      │                                                  ▲
//!      └── rejected, and an event recorded during its ────┘ otherwise
//!          flight is worth requeuing it
//! ```
//!
//! "requeue" happens on `on_event` (a cluster event) for each parked pod the event is worth
//! requeuing: a plugin in the pod's `unschedulable_plugins` registered for the event and its
//! queueing hint says Queue (`framework::events::QueueingHints`; a wildcard event moves every
//! pod); on `flush_unschedulable_leftover` (pods parked longer than `max_in_unschedulable`,
//! upstream's 5 minutes); and on `update` of a parked pod whose spec changed. A pod whose
//! attempt failed without a rejecting plugin (a bind failure, an error) is never parked: it is
//! requeued at once, as upstream's queue does. Without hints (`QueueConfig::hints` unset)
//! every event moves every parked pod.
//!
//! Backoff, as upstream's: a requeued pod goes to backoffQ while it is backing off, else to
//! activeQ. Its backoff is `initial_backoff` doubled per failure, capped at `max_backoff`,
//! from its last enqueue; the failures counted are its rejections, or while its last attempts
//! erred its errors in a row (`QueuedPodInfo::backoff_count`). backoffQ is two heaps: pods
//! rejected by plugins, and pods that erred. With SchedulerPopFromBackoffQ (on by default)
//! expiries are aligned down to whole seconds, a pod is backing off until the window after
//! its expiry's starts, the rejected pods' heap is ordered by window and then as activeQ, and
//! a pop that finds activeQ empty takes that heap's first pod even if it is still backing off
//! (never an erred one); PreEnqueue then runs when a pod enters backoffQ. Without the gate a
//! pod backs off until just after its expiry and only a flush moves it.
//!
//! Events that arrive while pods are in flight and that some plugin registered for are kept
//! until every pod popped before them has failed or is done; a failing pod is checked against
//! the events of its own flight, so a change during its attempt is never lost.
//!
//! A pod is in at most one of the three sub-queues, or in flight (popped, not yet returned), or
//! not held at all. Time comes only from the injected `Clock`: tests drive the flushes by hand.

use std::collections::VecDeque;
use std::sync::Arc as StdArc;
use std::time::Duration;

use super::heap::{backoff_key, backoff_window_key, priority_key, PodHeap};
use super::nominator::Nominator;
use super::{blocking_pop, QueueError, QueueLocation, QueuedPodInfo, SchedulingQueue};
use crate::api::{Pod, PodUid};
use crate::features::{Feature, FeatureGates};
use crate::framework::events::{Event, QueueingHints};
use crate::framework::ClusterView;
use crate::snapshot::{ClusterObjects, ObjectsSource};
use crate::sync::{lock, thread, Arc, Condvar, Mutex};
use crate::util::hash::FxHashMap;
use crate::util::time::{Clock, SystemClock, Timestamp};
use smallvec::SmallVec;

/// The queue's timing and the plugins' queueing hints. Defaults are upstream's.
#[derive(Clone)]
pub struct QueueConfig {
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// Parked pods older than this go back on `flush_unschedulable_leftover`.
    pub max_in_unschedulable: Duration,
    /// How often the flusher thread moves expired backoffs (upstream: 1 s).
    pub backoff_flush_period: Duration,
    /// How often the flusher thread flushes leftovers (upstream: 30 s).
    pub leftover_flush_period: Duration,
    pub clock: StdArc<dyn Clock>,
    /// Which events may requeue a pod rejected by which plugins (from the profiles). `None`:
    /// every event moves every parked pod.
    pub hints: Option<StdArc<QueueingHints>>,
    /// The feature gates the queue runs under (SchedulerPopFromBackoffQ...); the scheduler
    /// a simulation builds over this queue takes them from here too.
    pub gates: FeatureGates,
    /// Where PreEnqueue plugins and queueing hints read the cluster's objects (the cache).
    /// `None`: they see none (`ClusterView::NONE`).
    pub objects: Option<StdArc<dyn ObjectsSource>>,
    /// Not the queue's: the scheduler a simulation builds over this queue takes it from here
    /// (`Scheduler::with_preemption_api_delay`, as the gates). With SchedulerAsyncPreemption,
    /// how long after the cycle that decided a preemption its victims' deletion step is due
    /// on the clock (upstream's API calls, made while other pods' cycles run). Zero by
    /// default: the step runs right after that cycle.
    pub preemption_api_delay: Duration,
}

impl QueueConfig {
    pub fn new() -> QueueConfig {
        QueueConfig {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            max_in_unschedulable: Duration::from_secs(5 * 60),
            backoff_flush_period: Duration::from_secs(1),
            leftover_flush_period: Duration::from_secs(30),
            clock: StdArc::new(SystemClock::new()),
            hints: None,
            gates: FeatureGates::default(),
            objects: None,
            preemption_api_delay: Duration::ZERO,
        }
    }

    /// PreEnqueue plugins and queueing hints read the cluster's objects from `source` (the
    /// cache), fetched once per queue operation before the queue's lock is taken.
    pub fn with_objects(mut self, source: StdArc<dyn ObjectsSource>) -> QueueConfig {
        self.objects = Some(source);
        self
    }

    pub fn with_feature_gates(mut self, gates: FeatureGates) -> QueueConfig {
        self.gates = gates;
        self
    }

    /// The preemption API delay a simulation's scheduler runs with (see the field).
    pub fn with_preemption_api_delay(mut self, delay: Duration) -> QueueConfig {
        self.preemption_api_delay = delay;
        self
    }

    /// Requeue parked pods by the profiles' queueing hints.
    pub fn with_hints(mut self, hints: QueueingHints) -> QueueConfig {
        self.hints = Some(StdArc::new(hints));
        self
    }

    pub fn with_clock(mut self, clock: StdArc<dyn Clock>) -> QueueConfig {
        self.clock = clock;
        self
    }

    /// The backoff after `attempts` failed attempts (upstream counts rejections, or errors in
    /// a row: `QueuedPodInfo::backoff_count`): initial × 2^(attempts−1), capped.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        let mut d = self.initial_backoff;
        for _ in 1..attempts {
            if d >= self.max_backoff.saturating_sub(d) {
                return self.max_backoff;
            }
            d += d;
        }
        d.min(self.max_backoff)
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self::new()
    }
}

struct Inner {
    active: PodHeap,
    /// Pods backing off after plugins rejected them; with SchedulerPopFromBackoffQ an empty
    /// activeQ pops from here, earliest window first.
    backoff: PodHeap,
    /// Pods backing off after an error (no rejecting plugin): they wait out their backoff,
    /// never popped early (upstream's podErrorBackoffQ).
    error_backoff: PodHeap,
    unschedulable: FxHashMap<PodUid, QueuedPodInfo>,
    /// Incremented by every pop.
    scheduling_cycle: u64,
    /// Pods popped and not yet returned or done, with the event count at their pop.
    in_flight: Vec<(PodUid, u64)>,
    /// Events (numbered by `events`) received while pods were in flight, oldest first.
    in_flight_events: VecDeque<(u64, Event)>,
    /// Cluster events received so far.
    events: u64,
    seq: u64,
    closed: bool,
}

/// See the module docs.
pub struct PriorityQueue {
    inner: Mutex<Inner>,
    /// Signalled when activeQ gains a pod or the queue closes.
    nonempty: Condvar,
    nominator: Nominator,
    config: QueueConfig,
}

impl PriorityQueue {
    pub fn new(config: QueueConfig) -> PriorityQueue {
        PriorityQueue {
            inner: Mutex::new(Inner {
                active: PodHeap::new(priority_key),
                backoff: PodHeap::new(if config.gates.enabled(Feature::SchedulerPopFromBackoffQ) {
                    backoff_window_key
                } else {
                    backoff_key
                }),
                error_backoff: PodHeap::new(backoff_key),
                unschedulable: FxHashMap::default(),
                scheduling_cycle: 0,
                in_flight: Vec::new(),
                in_flight_events: VecDeque::new(),
                events: 0,
                seq: 0,
                closed: false,
            }),
            nonempty: Condvar::new(),
            nominator: Nominator::new(),
            config,
        }
    }

    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Starts the flusher thread (backoff every `backoff_flush_period`, leftovers every
    /// `leftover_flush_period`). It stops when the queue is closed; the returned guard closes
    /// the queue and joins the thread when dropped.
    pub fn start_flusher(queue: &Arc<Self>) -> Flusher {
        let q = Arc::clone(queue);
        let handle = thread::spawn(move || {
            let clock = StdArc::clone(&q.config.clock);
            let mut last_leftover = clock.now();
            loop {
                q.flush_backoff_completed();
                let now = clock.now();
                if now.saturating_since(last_leftover) >= q.config.leftover_flush_period {
                    q.flush_unschedulable_leftover();
                    last_leftover = now;
                }
                let guard = lock(&q.inner);
                if guard.closed {
                    return;
                }
                let (guard, _) =
                    q.nonempty.wait_timeout(guard, q.config.backoff_flush_period).unwrap_or_else(|e| e.into_inner());
                if guard.closed {
                    return;
                }
            }
        });
        Flusher { queue: Arc::clone(queue), handle: Some(handle) }
    }

    /// The first instant at which some pod in backoffQ has completed its backoff (a
    /// simulation's clock jumps there): just after its expiry, or with
    /// SchedulerPopFromBackoffQ the start of the window after its expiry's. A pod backing
    /// off after an error counts only if a cluster event came after its error: with nothing
    /// changed a retry on a simulated cluster would err the same way, and a simulation
    /// would never end (on a real clock the flush still retries it).
    pub fn next_backoff_expiry(&self) -> Option<Timestamp> {
        let q = lock(&self.inner);
        let errs = q.error_backoff.iter().filter(|p| p.parked_at_event < q.events);
        q.backoff.peek().into_iter().chain(errs).map(|p| self.backoff_done_at(p)).min()
    }

    /// The cluster's objects for this queue operation (fetched before the queue's lock is
    /// taken, so the queue never holds its lock while waiting for the source's).
    fn objects(&self) -> Option<StdArc<ClusterObjects>> {
        self.config.objects.as_ref().map(|s| s.objects())
    }

    fn windowed(&self) -> bool {
        self.config.gates.enabled(Feature::SchedulerPopFromBackoffQ)
    }

    /// When a pod with this (aligned) expiry stops backing off: upstream's pod is backing off
    /// while its expiry is not before now (with windows: not before now's window start).
    fn backoff_done_at(&self, info: &QueuedPodInfo) -> Timestamp {
        let step = if self.windowed() { Duration::from_secs(1) } else { Duration::from_nanos(1) };
        info.backoff_expiry.saturating_add(step)
    }

    /// Whether the pod is still backing off at `now` (a pod never failed is not).
    fn backing_off(&self, info: &QueuedPodInfo, now: Timestamp) -> bool {
        if info.backoff_count() == 0 {
            return false;
        }
        let now = if self.windowed() { Timestamp(now.0 - now.0 % 1_000_000_000) } else { now };
        info.backoff_expiry >= now
    }

    /// Moves pods whose backoff completed from backoffQ to activeQ. With SchedulerPopFromBackoffQ
    /// their PreEnqueue ran when they entered backoffQ; without it, it runs now.
    pub fn flush_backoff_completed(&self) {
        let now = self.config.clock.now();
        let objects = if self.windowed() { None } else { self.objects() };
        let mut q = lock(&self.inner);
        let mut moved = false;
        let checked_on_entry = self.windowed();
        loop {
            let info = if q.backoff.peek().is_some_and(|p| !self.backing_off(p, now)) {
                q.backoff.pop()
            } else if q.error_backoff.peek().is_some_and(|p| !self.backing_off(p, now)) {
                q.error_backoff.pop()
            } else {
                break;
            };
            let Some(mut info) = info else { break };
            if !checked_on_entry && !self.pre_enqueue(&mut info, view(&objects)) {
                self.park_gated(&mut q, info);
                continue;
            }
            q.active.upsert(info);
            moved = true;
        }
        drop(q);
        if moved {
            self.nonempty.notify_all();
        }
    }

    /// Moves pods parked longer than `max_in_unschedulable` back (to backoffQ or activeQ):
    /// upstream's UnschedulableTimeout, which moves them whatever rejected them.
    pub fn flush_unschedulable_leftover(&self) {
        let now = self.config.clock.now();
        let max = self.config.max_in_unschedulable;
        let objects = self.objects();
        let mut q = lock(&self.inner);
        // A gated pod waits for its gating plugin's events, never for the flush.
        let old: Vec<PodUid> = q
            .unschedulable
            .values()
            .filter(|i| !i.is_gated() && now.saturating_since(i.timestamp) > max)
            .map(|i| i.pod.uid.clone())
            .collect();
        self.move_to_active_or_backoff(&mut q, old, now, view(&objects));
    }

    /// When the next leftover flush would move a parked pod, for a simulated clock to jump to.
    /// Only pods parked before the latest cluster event count: with nothing changed since
    /// their attempt, a retry would fail the same way, and a simulation would never end.
    pub fn next_leftover_flush(&self) -> Option<Timestamp> {
        let q = lock(&self.inner);
        q.unschedulable
            .values()
            .filter(|i| !i.is_gated() && i.parked_at_event < q.events)
            .map(|i| i.timestamp.saturating_add(self.config.max_in_unschedulable + Duration::from_nanos(1)))
            .min()
    }

    /// Whether `event` may make the parked (or failing) pod `info` schedulable. A gated pod
    /// moves only on an event its gating plugin registered for.
    fn worth_requeuing(&self, info: &QueuedPodInfo, event: &Event, cluster: ClusterView<'_>) -> bool {
        let Some(h) = &self.config.hints else { return true };
        if let Some(gate) = &info.gated {
            if !h.pre_enqueue().registered_for(&info.pod, gate.plugin, event) {
                return false;
            }
        }
        h.worth_requeuing(&info.pod, &info.unschedulable_plugins, event, cluster)
    }

    /// Runs the PreEnqueue plugins on a pod about to enter activeQ or backoffQ; false (and
    /// `info.gated` set, its plugin among the rejectors) when one holds it back.
    fn pre_enqueue(&self, info: &mut QueuedPodInfo, cluster: ClusterView<'_>) -> bool {
        let first = info.gated.as_ref().map(|st| st.plugin);
        let verdict = self.config.hints.as_ref().and_then(|h| h.pre_enqueue().run(&info.pod, first, cluster));
        match verdict {
            None => {
                info.gated = None;
                true
            }
            Some(st) => {
                if !info.unschedulable_plugins.contains(&st.plugin) {
                    info.unschedulable_plugins.push(st.plugin);
                }
                info.gated = Some(st);
                false
            }
        }
    }

    /// Holds a pod a PreEnqueue plugin rejected in the unschedulable pods.
    fn park_gated(&self, q: &mut Inner, mut info: QueuedPodInfo) {
        info.parked_at_event = q.events;
        q.unschedulable.insert(info.pod.uid.clone(), info);
    }

    /// Forgets a pod in flight; drops the events no pod in flight needs any more.
    fn finish_flight(q: &mut Inner, uid: &PodUid) -> Option<u64> {
        let at = q.in_flight.iter().position(|(u, _)| u == uid).map(|i| q.in_flight.remove(i).1);
        match q.in_flight.iter().map(|&(_, s)| s).min() {
            None => q.in_flight_events.clear(),
            Some(oldest) => {
                while q.in_flight_events.front().is_some_and(|(n, _)| *n <= oldest) {
                    q.in_flight_events.pop_front();
                }
            }
        }
        at
    }

    /// Where the pod is held, if anywhere (in flight counts as nowhere).
    pub fn location(&self, uid: &PodUid) -> Option<QueueLocation> {
        let q = lock(&self.inner);
        if q.active.contains(uid) {
            Some(QueueLocation::Active)
        } else if q.backoff.contains(uid) || q.error_backoff.contains(uid) {
            Some(QueueLocation::Backoff)
        } else if q.unschedulable.contains_key(uid) {
            Some(QueueLocation::Unschedulable)
        } else {
            None
        }
    }

    /// The plugins that rejected the queued pod in its last attempt (empty when it has not
    /// failed, or failed with an error); `None` when the queue does not hold it.
    pub fn unschedulable_plugins(&self, uid: &PodUid) -> Option<SmallVec<[&'static str; 4]>> {
        let q = lock(&self.inner);
        let info = q
            .active
            .get(uid)
            .or_else(|| q.backoff.get(uid))
            .or_else(|| q.error_backoff.get(uid))
            .or_else(|| q.unschedulable.get(uid))?;
        Some(info.unschedulable_plugins.clone())
    }

    /// Events kept for pods in flight.
    pub fn in_flight_events(&self) -> usize {
        lock(&self.inner).in_flight_events.len()
    }

    /// Sizes of activeQ, backoffQ (both heaps) and the unschedulable pods.
    pub fn lens(&self) -> (usize, usize, usize) {
        let q = lock(&self.inner);
        (q.active.len(), q.backoff.len() + q.error_backoff.len(), q.unschedulable.len())
    }

    /// When the pod's backoff ends: its last enqueue plus the backoff of its failures (a pod
    /// never failed has none), aligned down to the second with SchedulerPopFromBackoffQ.
    fn backoff_expiry(&self, info: &QueuedPodInfo) -> Timestamp {
        let count = info.backoff_count();
        if count == 0 {
            return info.timestamp;
        }
        let t = info.timestamp.saturating_add(self.config.backoff_duration(count));
        if self.windowed() {
            Timestamp(t.0 - t.0 % 1_000_000_000)
        } else {
            t
        }
    }

    fn new_info(&self, q: &mut Inner, pod: Pod, now: Timestamp) -> QueuedPodInfo {
        q.seq += 1;
        QueuedPodInfo::fresh(pod, now, q.seq)
    }

    /// Moves the named parked pods to backoffQ (still backing off) or activeQ; wakes poppers
    /// if activeQ gained pods.
    fn move_to_active_or_backoff(&self, q: &mut Inner, uids: Vec<PodUid>, now: Timestamp, cluster: ClusterView<'_>) {
        let mut woke = false;
        for uid in uids {
            if let Some(info) = q.unschedulable.remove(&uid) {
                woke |= self.requeue(q, info, now, cluster);
            }
        }
        if woke {
            self.nonempty.notify_all();
        }
    }

    /// Puts a pod that failed or was parked into backoffQ (the error heap after an error) or
    /// activeQ, or holds it gated when a PreEnqueue plugin rejects it (run on the way into
    /// activeQ, and into backoffQ with SchedulerPopFromBackoffQ); true if a pop may now
    /// find it (activeQ, or backoffQ's popping heap with SchedulerPopFromBackoffQ).
    fn requeue(&self, q: &mut Inner, mut info: QueuedPodInfo, now: Timestamp, cluster: ClusterView<'_>) -> bool {
        info.backoff_expiry = self.backoff_expiry(&info);
        let to_backoff = self.backing_off(&info, now);
        if (!to_backoff || self.windowed()) && !self.pre_enqueue(&mut info, cluster) {
            self.park_gated(q, info);
            return false;
        }
        if !to_backoff {
            q.active.upsert(info);
            true
        } else if info.failed_by_error() {
            info.parked_at_event = q.events;
            q.error_backoff.upsert(info);
            false
        } else {
            q.backoff.upsert(info);
            self.windowed()
        }
    }
}

impl SchedulingQueue for PriorityQueue {
    fn add(&self, pod: Pod) -> Result<(), QueueError> {
        let now = self.config.clock.now();
        let objects = self.objects();
        let mut q = lock(&self.inner);
        if q.closed {
            return Err(QueueError::Closed);
        }
        q.backoff.remove(&pod.uid);
        q.error_backoff.remove(&pod.uid);
        q.unschedulable.remove(&pod.uid);
        let mut info = match q.active.get(&pod.uid) {
            Some(old) => QueuedPodInfo { pod, ..old.clone() },
            None => self.new_info(&mut q, pod, now),
        };
        if !self.pre_enqueue(&mut info, view(&objects)) {
            q.active.remove(&info.pod.uid);
            self.park_gated(&mut q, info);
            return Ok(());
        }
        self.nominator.add(&info.pod, None);
        q.active.upsert(info);
        drop(q);
        self.nonempty.notify_one();
        Ok(())
    }

    fn add_if_not_present(&self, pod: Pod) -> Result<(), QueueError> {
        let now = self.config.clock.now();
        let objects = self.objects();
        let mut q = lock(&self.inner);
        if q.closed {
            return Err(QueueError::Closed);
        }
        if q.active.contains(&pod.uid)
            || q.backoff.contains(&pod.uid)
            || q.error_backoff.contains(&pod.uid)
            || q.unschedulable.contains_key(&pod.uid)
        {
            return Ok(());
        }
        let mut info = self.new_info(&mut q, pod, now);
        if !self.pre_enqueue(&mut info, view(&objects)) {
            self.park_gated(&mut q, info);
            return Ok(());
        }
        self.nominator.add(&info.pod, None);
        q.active.upsert(info);
        drop(q);
        self.nonempty.notify_one();
        Ok(())
    }

    fn add_unschedulable_if_not_present(&self, mut info: QueuedPodInfo) -> Result<(), QueueError> {
        let now = self.config.clock.now();
        let objects = self.objects();
        let mut q = lock(&self.inner);
        // The events of this pod's flight, before they are dropped.
        let popped_at = q.in_flight.iter().find(|(u, _)| *u == info.pod.uid).map(|&(_, s)| s);
        let changed_in_flight = popped_at.is_some_and(|at| {
            q.in_flight_events
                .iter()
                .filter(|(n, _)| *n > at)
                .any(|(_, e)| self.worth_requeuing(&info, e, view(&objects)))
        });
        Self::finish_flight(&mut q, &info.pod.uid);
        if q.closed {
            return Err(QueueError::Closed);
        }
        // A newer version the informer delivered while the pod was in flight (an add, or an
        // update, perhaps gated) is already held: it wins, as upstream's queue refuses a pod
        // present in any of its sub-queues, the unschedulable pods included. Accepting the
        // stale copy would lose the newer spec (a gate the update added, say).
        let uid = &info.pod.uid;
        if q.active.contains(uid)
            || q.backoff.contains(uid)
            || q.error_backoff.contains(uid)
            || q.unschedulable.contains_key(uid)
        {
            return Err(QueueError::AlreadyQueued { pod: info.pod.key() });
        }
        info.timestamp = now;
        let errored = info.unschedulable_plugins.is_empty();
        if errored {
            info.consecutive_errors += 1;
        } else {
            info.unschedulable_count += 1;
            info.consecutive_errors = 0;
        }
        self.nominator.add(&info.pod, None);
        if changed_in_flight || errored {
            // Something that may help it changed while it was being scheduled, or it failed
            // without a plugin rejecting it (an error, which no event would announce): retry
            // it after its backoff.
            if self.requeue(&mut q, info, now, view(&objects)) {
                drop(q);
                self.nonempty.notify_one();
            }
        } else {
            info.parked_at_event = q.events;
            q.unschedulable.insert(info.pod.uid.clone(), info);
        }
        Ok(())
    }

    fn pop(&self) -> Result<QueuedPodInfo, QueueError> {
        let from_backoff = self.windowed();
        blocking_pop(&self.inner, &self.nonempty, |q| q.closed, |q| pop_next(q, from_backoff))
    }

    fn try_pop(&self) -> Option<QueuedPodInfo> {
        pop_next(&mut lock(&self.inner), self.windowed())
    }

    fn scheduling_cycle(&self) -> u64 {
        lock(&self.inner).scheduling_cycle
    }

    fn update(&self, old: &Pod, new: Pod) -> Result<(), QueueError> {
        let now = self.config.clock.now();
        let objects = self.objects();
        let mut q = lock(&self.inner);
        if q.closed {
            return Err(QueueError::Closed);
        }
        self.nominator.update(old, &new);
        if let Some(info) = q.active.get(&old.uid) {
            let info = QueuedPodInfo { pod: new, ..info.clone() };
            q.active.upsert(info);
            return Ok(());
        }
        if let Some(info) = q.backoff.get(&old.uid) {
            let info = QueuedPodInfo { pod: new, ..info.clone() };
            q.backoff.upsert(info);
            return Ok(());
        }
        if let Some(info) = q.error_backoff.get(&old.uid) {
            let info = QueuedPodInfo { pod: new, ..info.clone() };
            q.error_backoff.upsert(info);
            return Ok(());
        }
        if let Some(mut info) = q.unschedulable.remove(&old.uid) {
            // A gated pod moves when its gating plugin says the update may let it in; any
            // other parked pod when the update changed its spec. Both compare the informer's
            // old and new objects (upstream's isPodUpdated(oldPod, newPod)), never the queue's
            // copy: an update that changes nothing leaves the pod where it is.
            let changed = match &info.gated {
                Some(_) => self.worth_requeuing(&info, &Event::unscheduled_pod_update(old, &new), view(&objects)),
                None => !old.same_spec(&new),
            };
            info.pod = new;
            if !changed {
                q.unschedulable.insert(old.uid.clone(), info);
            } else if self.requeue(&mut q, info, now, view(&objects)) {
                // The update may have made it schedulable.
                drop(q);
                self.nonempty.notify_one();
            }
            return Ok(());
        }
        let mut info = self.new_info(&mut q, new, now);
        if !self.pre_enqueue(&mut info, view(&objects)) {
            self.park_gated(&mut q, info);
            return Ok(());
        }
        q.active.upsert(info);
        drop(q);
        self.nonempty.notify_one();
        Ok(())
    }

    fn delete(&self, pod: &Pod) {
        let mut q = lock(&self.inner);
        Self::finish_flight(&mut q, &pod.uid);
        self.nominator.delete(pod);
        q.active.remove(&pod.uid);
        q.backoff.remove(&pod.uid);
        q.error_backoff.remove(&pod.uid);
        q.unschedulable.remove(&pod.uid);
    }

    fn done(&self, uid: &PodUid) {
        let mut q = lock(&self.inner);
        if !q.in_flight.is_empty() {
            Self::finish_flight(&mut q, uid);
        }
    }

    fn activate(&self, pod: &Pod) {
        let objects = self.objects();
        let mut q = lock(&self.inner);
        let uid = &pod.uid;
        let (mut info, from_backoff) = if let Some(info) = q.unschedulable.remove(uid) {
            (info, false)
        } else if let Some(info) = q.backoff.remove(uid).or_else(|| q.error_backoff.remove(uid)) {
            (info, true)
        } else {
            return;
        };
        // With SchedulerPopFromBackoffQ a pod in backoffQ passed PreEnqueue on its way in.
        let admitted = (from_backoff && self.windowed()) || self.pre_enqueue(&mut info, view(&objects));
        if !admitted {
            self.park_gated(&mut q, info);
            return;
        }
        q.active.upsert(info);
        drop(q);
        self.nonempty.notify_one();
    }

    fn on_event(&self, event: &Event) {
        let now = self.config.clock.now();
        let objects = self.objects();
        let mut q = lock(&self.inner);
        q.events += 1;
        if !q.in_flight.is_empty() && self.config.hints.as_ref().is_none_or(|h| h.interested(&event.kind)) {
            let n = q.events;
            q.in_flight_events.push_back((n, event.clone()));
        }
        if q.unschedulable.is_empty() {
            return;
        }
        let cluster = view(&objects);
        let moving: Vec<PodUid> = q
            .unschedulable
            .values()
            .filter(|i| self.worth_requeuing(i, event, cluster))
            .map(|i| i.pod.uid.clone())
            .collect();
        self.move_to_active_or_backoff(&mut q, moving, now, cluster);
    }

    fn pending_pods(&self) -> Vec<Pod> {
        let q = lock(&self.inner);
        q.active
            .iter()
            .chain(q.backoff.iter())
            .chain(q.error_backoff.iter())
            .chain(q.unschedulable.values())
            .map(|i| i.pod.clone())
            .collect()
    }

    fn gated_pods(&self) -> Vec<(Pod, crate::framework::Status)> {
        let q = lock(&self.inner);
        q.unschedulable.values().filter_map(|i| Some((i.pod.clone(), i.gated.clone()?))).collect()
    }

    fn num_pending(&self) -> usize {
        let q = lock(&self.inner);
        q.active.len() + q.backoff.len() + q.error_backoff.len() + q.unschedulable.len()
    }

    fn num_unschedulable(&self) -> usize {
        lock(&self.inner).unschedulable.len()
    }

    fn close(&self) {
        lock(&self.inner).closed = true;
        self.nonempty.notify_all();
    }

    fn nominator(&self) -> Option<&Nominator> {
        Some(&self.nominator)
    }
}

/// What plugins read of the cluster in one queue operation.
fn view(objects: &Option<StdArc<ClusterObjects>>) -> ClusterView<'_> {
    objects.as_deref().map_or(ClusterView::NONE, ClusterView::new)
}

/// The next pod: activeQ's first; when activeQ is empty and `from_backoff`
/// (SchedulerPopFromBackoffQ), backoffQ's first — the rejected pod whose backoff window ends
/// first, backing off or not; pods backing off after an error are never popped early.
fn pop_next(q: &mut Inner, from_backoff: bool) -> Option<QueuedPodInfo> {
    let mut info = match q.active.pop() {
        Some(info) => info,
        None if from_backoff => q.backoff.pop()?,
        None => return None,
    };
    info.attempts += 1;
    info.unschedulable_plugins.clear();
    info.gated = None;
    q.scheduling_cycle += 1;
    let at = q.events;
    q.in_flight.push((info.pod.uid.clone(), at));
    Some(info)
}

/// The running flusher thread; dropping it closes the queue and waits for the thread.
pub struct Flusher {
    queue: Arc<PriorityQueue>,
    handle: Option<thread::JoinHandle<()>>,
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.queue.close();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl PriorityQueue {
    /// The debug checker: heap order and indexes intact, and no pod in two sub-queues.
    pub fn check_invariants(&self) -> Vec<String> {
        let q = lock(&self.inner);
        let mut v = Vec::new();
        if !q.active.is_consistent() {
            v.push("activeQ heap order or index broken".to_string());
        }
        if !q.backoff.is_consistent() || !q.error_backoff.is_consistent() {
            v.push("backoffQ heap order or index broken".to_string());
        }
        for i in q.active.iter() {
            if q.backoff.contains(&i.pod.uid)
                || q.error_backoff.contains(&i.pod.uid)
                || q.unschedulable.contains_key(&i.pod.uid)
            {
                v.push(format!("pod {} is in activeQ and another sub-queue", i.pod.key()));
            }
        }
        for i in q.backoff.iter().chain(q.error_backoff.iter()) {
            if q.unschedulable.contains_key(&i.pod.uid) {
                v.push(format!("pod {} is in backoffQ and unschedulable", i.pod.key()));
            }
        }
        for i in q.backoff.iter() {
            if q.error_backoff.contains(&i.pod.uid) {
                v.push(format!("pod {} is in both backoff heaps", i.pod.key()));
            }
            if i.failed_by_error() {
                v.push(format!("pod {} backs off after an error in the rejected pods' heap", i.pod.key()));
            }
        }
        v
    }
}
