//! A trace replayed on the simulation's clock: [`Replay`] is an event source that applies each
//! operation when the clock reaches its time (trace time 0 is the clock when the run starts),
//! with the workload controllers (`load::live`) running beside it: a trace's workloads
//! make, replace and complete their pods, CronJobs fire, scale ops reach their controller.
//!
//! Drains cordon their nodes and evict the pods there through the Eviction API's rules (a
//! PodDisruptionBudget that allows no disruption refuses); refused evictions are retried every
//! [`DRAIN_RETRY`] until the drain's timeout, and what happened to each pod is kept
//! ([`Replay::drains`]).

use std::collections::HashMap;
use std::time::Duration;

use std::sync::Arc;

use ksched_engine::api::{Pod, Sym};
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::util::time::{Clock, Timestamp};
use ksched_sim::cluster::{PodEvent, PodExit, PodWatch};
use ksched_sim::simulation::EventSource;
use ksched_sim::Simulation;

use crate::load::OrderedReady;
use ksched_k8s::manifest::Source;
use ksched_k8s::trace::{NodeSelection, Op, Trace, TraceEvent};

/// A pod's (namespace, name).
pub type PodKey = (Sym, Arc<str>);

/// The key of `namespace/name`.
pub fn pod_key(namespace: &str, name: &str) -> PodKey {
    (Sym::new(namespace), Arc::from(name))
}

/// How often a drain retries the evictions a budget refused (`kubectl drain`'s 5 s).
pub const DRAIN_RETRY: Duration = Duration::from_secs(5);

/// The most notes kept; later ones are only counted.
const MAX_NOTES: usize = 200;

/// A binding the recorded cluster's scheduler made (a trace's `bind`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedBinding {
    pub node: Sym,
    pub line: u32,
}

/// What a drain did with one pod.
#[derive(Clone, Debug, PartialEq)]
pub enum DrainOutcome {
    /// Evicted at this time (seconds into the replay).
    Evicted { at: f64 },
    /// Every eviction was refused until the drain's timeout; the last refusal.
    Blocked { reason: String },
    /// Still there when its node was removed (the drain's `remove`): deleted with the node.
    DeletedWithNode { at: f64, reason: String },
}

/// One pod a drain met.
#[derive(Clone, Debug)]
pub struct DrainedPod {
    /// The trace line of the drain (0 for a `--drain` on the command line).
    pub line: u32,
    pub node: Sym,
    pub pod: Pod,
    pub outcome: DrainOutcome,
}

/// A drain under way.
struct Drain {
    line: u32,
    nodes: Vec<Sym>,
    remove: bool,
    until: Timestamp,
    next_try: Timestamp,
    /// Pods whose eviction was refused, with the last refusal.
    waiting: Vec<(Pod, String)>,
}

/// The trace as an event source (see the module docs).
pub struct Replay {
    file: String,
    events: Vec<TraceEvent>,
    next: usize,
    start: Option<Timestamp>,
    /// The workload controllers (the initial manifests' and the trace's).
    pub controllers: OrderedReady,
    /// Live pods by (namespace, name): the latest created under that name, until gone.
    pods: HashMap<PodKey, Pod>,
    watch: Option<PodWatch>,
    /// The recorded bindings by (namespace, name).
    pub recorded: HashMap<PodKey, RecordedBinding>,
    drains: Vec<Drain>,
    /// What each drain did, in order.
    pub drained: Vec<DrainedPod>,
    notes: Vec<String>,
    notes_dropped: usize,
}

impl Replay {
    /// A replay of `trace` with `controllers` (a loaded manifest's, or `OrderedReady::default()`).
    pub fn new(trace: Trace, controllers: OrderedReady) -> Replay {
        Replay {
            file: trace.file,
            events: trace.events,
            next: 0,
            start: None,
            controllers,
            pods: HashMap::new(),
            watch: None,
            recorded: HashMap::new(),
            drains: Vec::new(),
            drained: Vec::new(),
            notes: Vec::new(),
            notes_dropped: 0,
        }
    }

    /// Adds a drain at `at` into the replay (`ksched replay --drain`), after the trace's
    /// events at that time.
    pub fn add_drain(&mut self, at: Duration, nodes: NodeSelection, remove: bool, timeout: Duration) {
        let i = self.events.partition_point(|e| e.at <= at);
        self.events.insert(i, TraceEvent { at, line: 0, op: Op::Drain { nodes, remove, timeout } });
    }

    /// What the replay could not do (a delete of a pod that is not there, a cordon of an
    /// unknown node...), one line each.
    pub fn notes(&self) -> Vec<String> {
        let mut out = self.notes.clone();
        if self.notes_dropped > 0 {
            out.push(format!("... and {} more like these", self.notes_dropped));
        }
        out
    }

    /// The trace time `t` on the simulated clock.
    fn time(&self, t: Duration) -> Timestamp {
        self.start.unwrap_or_default().saturating_add(t)
    }

    /// Seconds into the replay at `t`.
    pub fn seconds(&self, t: Timestamp) -> f64 {
        t.saturating_since(self.start.unwrap_or_default()).as_secs_f64()
    }

    /// Whether every operation of the trace has been applied.
    pub fn finished(&self) -> bool {
        self.next >= self.events.len() && self.drains.is_empty()
    }

    fn note(&mut self, line: u32, message: String) {
        if self.notes.len() < MAX_NOTES {
            let at = if line > 0 { format!("{}:{line}", self.file) } else { "--drain".into() };
            self.notes.push(format!("{at}: {message}"));
        } else {
            self.notes_dropped += 1;
        }
    }

    fn err(&self, line: u32, message: impl std::fmt::Display) -> String {
        format!("{}:{line}: {message}", self.file)
    }

    /// Follows the pod event log: who lives under which name.
    fn follow_pods(&mut self, sim: &Simulation) {
        let Some(w) = self.watch.as_mut() else { return };
        for e in sim.cluster.pod_events(w) {
            match e {
                PodEvent::Created { pod, .. } => {
                    self.pods.insert((pod.namespace, pod.name.clone()), pod);
                }
                PodEvent::Gone(g) => {
                    let key = (g.pod.namespace, g.pod.name.clone());
                    if self.pods.get(&key).is_some_and(|p| p.uid == g.pod.uid) {
                        self.pods.remove(&key);
                    }
                }
                PodEvent::Terminating(_) => {}
            }
        }
    }

    fn apply(&mut self, sim: &mut Simulation, e: TraceEvent) -> Result<(), String> {
        let line = e.line;
        match e.op {
            Op::CreatePod(pod) => {
                let key = pod.key();
                let created = if pod.node_name.is_some() {
                    sim.cluster.add_bound_pod(*pod)
                } else {
                    sim.cluster.create_pod(*pod)
                };
                if let Err(err) = created {
                    return Err(self.err(line, format!("pod {key}: {err}")));
                }
            }
            Op::AddNode(node) => {
                let name = node.name;
                if let Err(err) = sim.cluster.add_node(*node) {
                    self.note(line, format!("add node {name}: {err}"));
                }
            }
            Op::CreateWorkload(w) => {
                let source = Source { file: self.file.as_str().into(), document: 1, line: Some(line), item: None };
                self.controllers.manager.add_workload(sim, &w, &source).map_err(|err| self.err(line, err))?;
            }
            Op::CreateObjects(m) => {
                let pods: Vec<Pod> = sim.cache.pods().into_iter().map(|(p, _)| p).collect();
                sim.cache.edit_objects(|o| {
                    for (name, labels, _) in &m.namespaces {
                        o.set_namespace(*name, labels.clone());
                    }
                    for (pc, _) in &m.priority_classes {
                        o.upsert_priority_class(pc.clone());
                    }
                    for (svc, _) in &m.services {
                        o.upsert_service(svc.clone());
                    }
                    for b in &m.pdbs {
                        o.upsert_pdb(b.pdb.clone());
                    }
                    if m.pdbs.iter().any(|b| !b.has_status) {
                        ksched_sim::disruption::refresh_pdb_status(o, pods.iter());
                    }
                    o.storage.upsert_all(&m.storage);
                });
                sim.queue.move_all_to_active();
            }
            Op::DeletePod { namespace, name, grace } => {
                let key = pod_key(&namespace, &name);
                match self.pods.get(&key) {
                    Some(p) => {
                        let p = p.clone();
                        sim.cluster.delete_pod(&p, grace, PodExit::Deleted);
                    }
                    None => {
                        self.note(line, format!("delete pod {namespace}/{name}: no such pod (never created, or gone)"))
                    }
                }
            }
            Op::RemoveNode(name) => {
                if sim.cache.get_node(Sym::new(&name)).is_none() {
                    self.note(line, format!("remove node {name}: no such node"));
                } else if let Err(err) = sim.cluster.delete_node(Sym::new(&name)) {
                    self.note(line, format!("remove node {name}: {err}"));
                }
            }
            Op::Cordon(ref name) | Op::Uncordon(ref name) => {
                let cordon = matches!(e.op, Op::Cordon(_));
                match sim.cluster.set_unschedulable(Sym::new(name), cordon) {
                    Ok(true) => {}
                    Ok(false) => self.note(line, format!("cordon {name}: no such node")),
                    Err(err) => self.note(line, format!("cordon {name}: {err}")),
                }
            }
            Op::Drain { nodes, remove, timeout } => self.start_drain(sim, line, &nodes, remove, timeout),
            Op::Scale { kind, namespace, name, replicas } => {
                self.controllers
                    .manager
                    .scale(sim, &kind, &namespace, &name, replicas)
                    .map_err(|err| self.err(line, err))?;
            }
            Op::Bind { namespace, name, node } => {
                self.recorded.insert(pod_key(&namespace, &name), RecordedBinding { node: Sym::new(&node), line });
            }
        }
        Ok(())
    }

    fn start_drain(&mut self, sim: &mut Simulation, line: u32, sel: &NodeSelection, remove: bool, timeout: Duration) {
        let snapshot = sim.cache.update_snapshot();
        let nodes: Vec<Sym> = snapshot.iter().filter(|n| sel.matches(n.node())).map(|n| n.name()).collect();
        if nodes.is_empty() {
            self.note(line, format!("drain {sel}: no such node"));
            return;
        }
        for &n in &nodes {
            let _ = sim.cluster.set_unschedulable(n, true);
        }
        let now = sim.clock.now();
        let mut waiting = Vec::new();
        for &n in &nodes {
            let Some(info) = snapshot.get(n) else { continue };
            for p in info.pods().iter() {
                if p.is_terminating() || p.owner.as_ref().is_some_and(|o| o.kind.as_str() == "DaemonSet") {
                    continue;
                }
                waiting.push((p.clone(), String::new()));
            }
        }
        let drain = Drain { line, nodes, remove, until: now.saturating_add(timeout), next_try: now, waiting };
        self.drains.push(drain);
        self.run_drains(sim);
    }

    /// Tries the evictions due; ends the drains past their timeout.
    fn run_drains(&mut self, sim: &mut Simulation) {
        let now = sim.clock.now();
        let at = self.seconds(now);
        let mut i = 0;
        while i < self.drains.len() {
            if self.drains[i].next_try > now {
                i += 1;
                continue;
            }
            let d = &mut self.drains[i];
            let mut still = Vec::new();
            for (pod, _) in std::mem::take(&mut d.waiting) {
                match sim.cluster.evict(&pod) {
                    Ok(()) => self.drained.push(DrainedPod {
                        line: d.line,
                        node: pod.node_name.unwrap_or(Sym::EMPTY),
                        pod,
                        outcome: DrainOutcome::Evicted { at },
                    }),
                    // Gone meanwhile: nothing to evict.
                    Err(ksched_sim::cluster::EvictionError::NotFound { .. }) => {}
                    Err(e) => still.push((pod, e.to_string())),
                }
            }
            d.waiting = still;
            d.next_try = now.saturating_add(DRAIN_RETRY);
            if !d.waiting.is_empty() && now < d.until {
                i += 1;
                continue;
            }
            let d = self.drains.remove(i);
            for (pod, reason) in d.waiting {
                let node = pod.node_name.unwrap_or(Sym::EMPTY);
                let outcome = if d.remove {
                    DrainOutcome::DeletedWithNode { at, reason }
                } else {
                    DrainOutcome::Blocked { reason }
                };
                self.drained.push(DrainedPod { line: d.line, node, pod, outcome });
            }
            if d.remove {
                for n in d.nodes {
                    if sim.cache.get_node(n).is_some() {
                        if let Err(e) = sim.cluster.delete_node(n) {
                            self.note(d.line, format!("remove node {n}: {e}"));
                        }
                    }
                }
            }
        }
    }
}

impl EventSource for Replay {
    fn start(&mut self, sim: &mut Simulation) -> Result<(), String> {
        self.controllers.manager.attach(sim);
        self.watch = Some(sim.cluster.watch_pods());
        for (p, _) in sim.cache.pods() {
            self.pods.insert((p.namespace, p.name.clone()), p);
        }
        for p in sim.queue.pending_pods() {
            self.pods.insert((p.namespace, p.name.clone()), p);
        }
        self.start = Some(sim.clock.now());
        self.controllers.start(sim)
    }

    fn next_event(&self) -> Option<Timestamp> {
        let trace = self.events.get(self.next).map(|e| self.time(e.at));
        let drains = self.drains.iter().map(|d| d.next_try).min();
        [trace, drains, self.controllers.next_event()].into_iter().flatten().min()
    }

    fn fire_due(&mut self, sim: &mut Simulation) -> Result<(), String> {
        let now = sim.clock.now();
        self.follow_pods(sim);
        while self.events.get(self.next).is_some_and(|e| self.time(e.at) <= now) {
            let placeholder = TraceEvent { at: Duration::ZERO, line: 0, op: Op::Cordon(String::new()) };
            let e = std::mem::replace(&mut self.events[self.next], placeholder);
            self.next += 1;
            self.apply(sim, e)?;
            self.follow_pods(sim);
        }
        if !self.drains.is_empty() {
            self.run_drains(sim);
        }
        self.controllers.fire_due(sim)?;
        self.follow_pods(sim);
        Ok(())
    }

    fn done(&self, _sim: &Simulation) -> bool {
        self.finished()
    }
}

#[cfg(test)]
mod tests;
