//! What a run looks like over simulated time: [`Timeline`] is an observer that samples the
//! cluster every `step` of simulated time and measures, per sample:
//!
//! * pending pods (in the scheduling queue) and running pods (bound, in the cache);
//! * allocation per resource: requested and allocatable, summed over the nodes, for cpu
//!   (millicores), memory (bytes) and each extended resource a node offers (`nvidia.com/gpu`);
//! * fragmentation per resource: the free amount stranded on nodes where no waiting pod fits
//!   (a node counts when, for every pending pod, the free cpu, memory or one of the pod's
//!   extended resources on it is less than the pod asks; resources alone, no affinity). With
//!   no pod waiting nothing is stranded;
//! * scheduling delay in simulated time (creation → bind) of the pods bound since the last
//!   sample: p50 and p99, and over the whole run in [`Timeline::delays`];
//! * unschedulable attempts since the last sample by rejecting plugin (a FitError's
//!   plugins; one attempt counts once for each plugin that rejected it somewhere).
//!
//! A sample at time `t` shows the cluster as it stood from `t` until the clock moved on.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use ksched_engine::api::{Pod, PodUid, Sym};
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::scheduler::{CycleOutcome, ScheduleError};
use ksched_engine::util::time::{Clock, Timestamp};
use serde::Serialize;

use crate::cluster::{PodEvent, PodWatch};
use crate::simulation::Observer;
use crate::Simulation;

/// One resource's totals at a sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ResourceUse {
    pub requested: i64,
    pub allocatable: i64,
    /// Free on nodes where no pending pod fits (see the module docs).
    pub stranded: i64,
}

/// The cluster at one instant, and what happened since the sample before.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds from the run's start.
    pub t: f64,
    pub pending: usize,
    pub running: usize,
    pub nodes: usize,
    /// `cpu`, `memory`, extended resources by name.
    pub resources: BTreeMap<String, ResourceUse>,
    /// Pods bound since the previous sample, and their scheduling delay's p50 / p99 (seconds).
    pub bound: usize,
    pub delay_p50: Option<f64>,
    pub delay_p99: Option<f64>,
    /// Unschedulable attempts since the previous sample, by rejecting plugin.
    pub unschedulable: BTreeMap<String, u64>,
}

/// The observer (see the module docs).
pub struct Timeline {
    step: Duration,
    start: Option<Timestamp>,
    next_sample: Timestamp,
    now: Timestamp,
    watch: Option<PodWatch>,
    created: HashMap<PodUid, Timestamp>,
    /// Delays (seconds) since the last sample.
    window: Vec<f64>,
    unschedulable: BTreeMap<String, u64>,
    pub samples: Vec<Sample>,
    /// Every bound pod's delay in seconds, in bind order.
    pub delays: Vec<f64>,
    /// Unschedulable attempts over the run, by plugin.
    pub unschedulable_total: BTreeMap<String, u64>,
}

impl Timeline {
    /// Samples every `step` of simulated time (at least 1 ms).
    pub fn new(step: Duration) -> Timeline {
        Timeline {
            step: step.max(Duration::from_millis(1)),
            start: None,
            next_sample: Timestamp::default(),
            now: Timestamp::default(),
            watch: None,
            created: HashMap::new(),
            window: Vec::new(),
            unschedulable: BTreeMap::new(),
            samples: Vec::new(),
            delays: Vec::new(),
            unschedulable_total: BTreeMap::new(),
        }
    }

    /// Starts watching `sim` (call before the run; pods already pending count as created now).
    pub fn attach(&mut self, sim: &Simulation) {
        let now = sim.clock.now();
        self.start = Some(now);
        self.now = now;
        self.next_sample = now;
        self.watch = Some(sim.cluster.watch_pods());
        for p in sim.queue.pending_pods() {
            self.created.insert(p.uid.clone(), now);
        }
    }

    /// The last sample, at the end of the run.
    pub fn finish(&mut self, sim: &Simulation) {
        self.follow(sim);
        let now = sim.clock.now();
        if self.samples.last().is_none_or(|s| s.t < self.secs(now)) || !self.window.is_empty() {
            self.sample(sim, now);
        }
        if let Some(w) = self.watch.take() {
            sim.cluster.unwatch_pods(w);
        }
    }

    /// p-th percentile (0..=100) of `v` (nearest rank), `None` when empty.
    pub fn percentile(v: &[f64], p: f64) -> Option<f64> {
        if v.is_empty() {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
        Some(s[rank.clamp(1, s.len()) - 1])
    }

    fn secs(&self, t: Timestamp) -> f64 {
        t.saturating_since(self.start.unwrap_or_default()).as_secs_f64()
    }

    fn follow(&mut self, sim: &Simulation) {
        let Some(w) = self.watch.as_mut() else { return };
        for e in sim.cluster.pod_events(w) {
            match e {
                PodEvent::Created { pod, at } if pod.node_name.is_none() => {
                    self.created.insert(pod.uid.clone(), at);
                }
                PodEvent::Gone(g) => {
                    self.created.remove(&g.pod.uid);
                }
                _ => {}
            }
        }
    }

    fn sample(&mut self, sim: &Simulation, at: Timestamp) {
        let snapshot = sim.cache.update_snapshot();
        let pending: Vec<Pod> = sim.queue.pending_pods();
        let mut resources: BTreeMap<String, ResourceUse> = BTreeMap::new();
        let mut running = 0;
        let mut names: Vec<Sym> = Vec::new();
        for n in snapshot.iter() {
            running += n.pods().len();
            let (req, alloc) = (n.requested(), n.allocatable());
            let free_cpu = alloc.milli_cpu - req.milli_cpu;
            let free_mem = alloc.memory - req.memory;
            // Whether some pending pod fits here by its resources.
            let fits_one = pending.iter().any(|p| {
                let r = p.requests();
                r.milli_cpu <= free_cpu
                    && r.memory <= free_mem
                    && r.scalar.iter().all(|(k, v)| v <= alloc.scalar.get(k) - req.scalar.get(k))
            });
            let stranded = !pending.is_empty() && !fits_one;
            let mut add = |name: &str, requested: i64, allocatable: i64| {
                let u = resources.entry(name.to_owned()).or_default();
                u.requested += requested;
                u.allocatable += allocatable;
                if stranded {
                    u.stranded += (allocatable - requested).max(0);
                }
            };
            add("cpu", req.milli_cpu, alloc.milli_cpu);
            add("memory", req.memory, alloc.memory);
            names.clear();
            names.extend(alloc.scalar.iter().map(|(k, _)| k));
            for &k in &names {
                add(k.as_str(), req.scalar.get(k), alloc.scalar.get(k));
            }
        }
        let window = std::mem::take(&mut self.window);
        self.samples.push(Sample {
            t: self.secs(at),
            pending: pending.len(),
            running,
            nodes: snapshot.num_nodes(),
            resources,
            bound: window.len(),
            delay_p50: Self::percentile(&window, 50.0),
            delay_p99: Self::percentile(&window, 99.0),
            unschedulable: std::mem::take(&mut self.unschedulable),
        });
    }
}

impl Observer for Timeline {
    fn before_cycle(&mut self, sim: &Simulation, _pod: &Pod) {
        self.now = sim.clock.now();
        self.follow(sim);
    }

    fn attempt(&mut self, outcome: &CycleOutcome, _ns: u64) {
        match outcome {
            CycleOutcome::Scheduled { pod, .. } => {
                if let Some(c) = self.created.remove(&pod.uid) {
                    let d = self.now.saturating_since(c).as_secs_f64();
                    self.window.push(d);
                    self.delays.push(d);
                }
            }
            CycleOutcome::Unschedulable { error, .. } => {
                let plugins: Vec<&str> = match error {
                    ScheduleError::Unschedulable(fe) if !fe.plugins.is_empty() => fe.plugins.to_vec(),
                    ScheduleError::Unschedulable(_) => vec!["(prefilter)"],
                    ScheduleError::NoNodes => vec!["(no nodes)"],
                    ScheduleError::Plugin(st) => vec![st.plugin],
                    ScheduleError::Extender(_) => vec!["(extender)"],
                };
                for p in plugins {
                    *self.unschedulable.entry(p.to_owned()).or_default() += 1;
                    *self.unschedulable_total.entry(p.to_owned()).or_default() += 1;
                }
            }
            CycleOutcome::BindFailed { .. } => {}
        }
    }

    fn clock_moving(&mut self, sim: &Simulation, to: Timestamp) {
        self.follow(sim);
        // The cluster stands as it is over [now, to): one sample per step boundary in it.
        let now = sim.clock.now();
        let mut sampled = false;
        while self.next_sample < to {
            if self.next_sample >= now || !sampled {
                let at = self.next_sample.max(now);
                if sampled {
                    // Nothing changed since the last sample: copy it with the new time.
                    if let Some(mut s) = self.samples.last().cloned() {
                        s.t = self.secs(at);
                        s.bound = 0;
                        s.delay_p50 = None;
                        s.delay_p99 = None;
                        s.unschedulable.clear();
                        self.samples.push(s);
                    }
                } else {
                    self.sample(sim, at);
                    sampled = true;
                }
            }
            self.next_sample = self.next_sample.saturating_add(self.step);
        }
        self.now = to;
    }
}

#[cfg(test)]
mod tests;
