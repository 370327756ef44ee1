//! Upstream scheduler_perf workloads, synthesized: their nodes and pods (from upstream's
//! templates: node-default.yaml, pod-default.yaml, pod-with-*.yaml, pod-high-priority*.yaml)
//! and the churn their `churn` op runs while the measured pods are scheduled.
//!
//! Churn is counted in scheduling attempts, not wall time: upstream creates its churn objects
//! every N milliseconds, which at our throughput would mean a handful per run and a different
//! number on every machine. One churn step per [`CHURN_EVERY`] attempts keeps a run
//! reproducible (the gate counts its instructions) and a little denser than upstream's at its
//! own throughput (Unschedulable: 200 ms at ~590 pods/s ≈ one per 120 pods; MixedChurn: 1 s at
//! ~710 pods/s).

use clap::ValueEnum;
use ksched_engine::api::{
    Affinity, Labels, Node, NodeAffinity, NodeSelector, NodeSelectorOp, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodAffinity, PodAffinityTerm, ResourceName::*, Sym, TopologySpreadConstraint, LABEL_HOSTNAME, LABEL_ZONE,
};
use std::sync::Arc;

use ksched_engine::cache::Cache;
use ksched_engine::framework::Profiles;
use ksched_engine::queue::{QueueConfig, SchedulingQueue};
use ksched_engine::scheduler::CycleOutcome;
use ksched_engine::snapshot::objects::Service;
use ksched_engine::testing::{default_pod, pod_affinity_term, prefers_pod_anti_affinity, selector};
use ksched_sim::simulation::{EventSource, Observer, RunOptions, Until};
use ksched_sim::Simulation;

use crate::front_ends::{HookObserver, RunHooks};

/// Attempts between two churn steps (Unschedulable, MixedChurn).
pub const CHURN_EVERY: u64 = 100;

/// The environment variable that slows every scheduling cycle down by this many busy-loop
/// iterations. For demonstrating that `ksched gate` catches a slowdown; read once per run.
pub const SLOWDOWN_ENV: &str = "KSCHED_DEMO_SLOWDOWN";

const PAUSE: &str = "registry.k8s.io/pause:3.10.1";

/// A built-in workload run's pod counts (`Workload::fitted_counts`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FittedCounts {
    pub warmup: usize,
    pub measured: usize,
    /// Why the warm-up was scaled down, or a warning that pods cannot all be scheduled.
    pub notes: Vec<String>,
}

/// Upstream scheduler_perf workloads (their `5000Nodes` variants), synthesized.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Workload {
    /// SchedulingBasic: pod-default.yaml pods (100m CPU, 500Mi); 1000 warm-up, 10000 measured.
    Basic,
    /// SchedulingNodeAffinity: every node in zone1; pods require zone In (zone1, zone2);
    /// 5000 + 1000.
    NodeAffinity,
    /// SchedulingPodAffinity: every node in zone1; pods labelled color=blue require pod
    /// affinity to color=blue per zone; warm-up in namespace sched-0, measured in sched-1;
    /// 5000 + 1000.
    PodAffinity,
    /// SchedulingPodAntiAffinity: pods labelled color=green with required anti-affinity to
    /// color=green per host, warm-up in namespace sched-0, measured in sched-1; 1000 + 1000.
    PodAntiAffinity,
    /// SchedulingPreferredPodAntiAffinity: pods labelled color=yellow prefer (weight 1) no
    /// color=yellow pod on their host; sched-0 then sched-1; 5000 + 1000.
    PreferredPodAntiAffinity,
    /// TopologySpreading: nodes in zones moon-1..3; 5000 default pods, then 2000 pods with a
    /// DoNotSchedule zone spread constraint (maxSkew 5, color=blue).
    TopologySpreading,
    /// PreferredTopologySpreading: as TopologySpreading, with ScheduleAnyway; 5000 + 2000.
    PreferredTopologySpreading,
    /// Unschedulable: 100 default pods, then 10000 measured default pods with a priority-10
    /// pod asking for 9 CPU (fits no node, so it runs preemption's dry run in vain) created
    /// every 100 attempts.
    Unschedulable,
    /// SchedulingWithMixedChurn: 10000 default pods on an empty cluster while, every 100
    /// attempts, the previous churn node (capacity 0 pods), 9-CPU priority-10 pod and service
    /// are deleted and new ones created.
    MixedChurn,
    /// PreemptionBasic: 4 low-priority pods per node (900m CPU, grace period 0) fill the
    /// cluster, then one priority-10 pod per node (3000m CPU) each has to preempt 3 of them.
    /// Runs on a simulated clock (backoff and grace periods pass instantly).
    Preemption,
}

impl Workload {
    pub const ALL: [Workload; 10] = [
        Workload::Basic,
        Workload::NodeAffinity,
        Workload::PodAffinity,
        Workload::PodAntiAffinity,
        Workload::PreferredPodAntiAffinity,
        Workload::TopologySpreading,
        Workload::PreferredTopologySpreading,
        Workload::Unschedulable,
        Workload::MixedChurn,
        Workload::Preemption,
    ];

    pub fn upstream_name(self) -> &'static str {
        match self {
            Workload::Basic => "SchedulingBasic",
            Workload::NodeAffinity => "SchedulingNodeAffinity",
            Workload::PodAffinity => "SchedulingPodAffinity",
            Workload::PodAntiAffinity => "SchedulingPodAntiAffinity",
            Workload::PreferredPodAntiAffinity => "SchedulingPreferredPodAntiAffinity",
            Workload::TopologySpreading => "TopologySpreading",
            Workload::PreferredTopologySpreading => "PreferredTopologySpreading",
            Workload::Unschedulable => "Unschedulable",
            Workload::MixedChurn => "SchedulingWithMixedChurn",
            Workload::Preemption => "PreemptionBasic",
        }
    }

    /// The `--workload` / `--only` spelling (kebab-case).
    pub fn cli_name(self) -> String {
        self.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
    }

    /// Every built-in workload's CLI name, comma-separated, in suite order: the one list
    /// `--help`, the error for an unknown name and the README's table say.
    pub fn names() -> String {
        Workload::ALL.iter().map(|w| w.cli_name()).collect::<Vec<_>>().join(", ")
    }

    /// `--workload`'s help: the names (`-h`).
    pub fn help() -> String {
        format!(
            "A built-in upstream scheduler_perf workload to synthesize ({}), or the path of an upstream \
             scheduler_perf workload file (performance-config.yaml) to run",
            Workload::names()
        )
    }

    /// `--workload`'s long help: each name with what it runs (`--help`).
    pub fn long_help() -> String {
        let mut out = format!("{}.\n\nBuilt-in workloads:", Workload::help());
        for w in Workload::ALL {
            let about = w.to_possible_value().and_then(|v| v.get_help().map(|h| h.to_string())).unwrap_or_default();
            out.push_str(&format!("\n  {:<28} {about}", w.cli_name()));
        }
        out
    }

    /// Parses a CLI name (`pod-affinity`) or an upstream name (`SchedulingPodAffinity`,
    /// `PodAffinity`), case-insensitively.
    pub fn parse(s: &str) -> Option<Workload> {
        let norm = |x: &str| x.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
        let want = norm(s);
        Workload::ALL.into_iter().find(|w| {
            let up = norm(w.upstream_name());
            want == norm(&w.cli_name()) || want == up || up.strip_prefix("scheduling") == Some(want.as_str())
        })
    }

    /// (warm-up pods, measured pods) of upstream's 5000-node variant (for preemption, its
    /// ratio: 4 low-priority pods per node and one preemptor per node).
    pub fn default_counts(self, nodes: usize) -> (usize, usize) {
        match self {
            Workload::Preemption => (4 * nodes, nodes),
            Workload::Basic => (1000, 10000),
            Workload::PodAntiAffinity => (1000, 1000),
            Workload::TopologySpreading | Workload::PreferredTopologySpreading => (5000, 2000),
            Workload::NodeAffinity | Workload::PodAffinity | Workload::PreferredPodAntiAffinity => (5000, 1000),
            Workload::Unschedulable => (100, 10000),
            Workload::MixedChurn => (0, 10000),
        }
    }

    /// How many of the workload's pods one node holds: its allocatable (CPU, memory, pod
    /// count) over a warm-up pod's requests, and one for PodAntiAffinity (every pod, warm-up
    /// and measured alike, refuses a host holding another).
    pub fn pods_per_node(self) -> usize {
        let node = self.node(0);
        let pod = self.pod("probe", false);
        let (a, r) = (&node.allocatable, pod.requests());
        let fit = |have: i64, need: i64| if need > 0 { usize::try_from(have / need).unwrap_or(0) } else { usize::MAX };
        let by_resources = fit(a.milli_cpu, r.milli_cpu).min(fit(a.memory, r.memory)).min(fit(a.allowed_pod_number, 1));
        if self == Workload::PodAntiAffinity {
            by_resources.min(1)
        } else {
            by_resources
        }
    }

    /// The (warm-up, measured) pods of a run on `nodes` nodes, each the one asked for or the
    /// workload's default, and notes for the run's report. A default warm-up that leaves the
    /// measured pods no room is scaled down to what does; a warm-up asked for, or measured pods,
    /// that cannot all fit are a warning (the run would otherwise report unschedulable pods
    /// without a word). Preemption's measured pods make their room by preempting.
    pub fn fitted_counts(self, nodes: usize, warmup: Option<usize>, measured: Option<usize>) -> FittedCounts {
        let (default_warmup, default_measured) = self.default_counts(nodes);
        let measured = measured.unwrap_or(default_measured);
        let per_node = self.pods_per_node();
        let holds = per_node.saturating_mul(nodes);
        // The pods that compete for the room: the warm-up's, and the measured ones unless
        // they preempt.
        let measured_room = if self == Workload::Preemption { 0 } else { measured };
        let why = format!("{nodes} nodes hold {holds} pods of {} ({per_node} per node)", self.upstream_name());
        let mut notes = Vec::new();
        let warmup = match warmup {
            Some(w) => {
                if w.saturating_add(measured_room) > holds {
                    notes.push(format!(
                        "warning: {w} warm-up + {measured_room} measured pods cannot all be scheduled: {why}"
                    ));
                }
                w
            }
            None => {
                let room = holds.saturating_sub(measured_room);
                if default_warmup > room {
                    notes.push(format!(
                        "warm-up scaled from {default_warmup} to {room} pods so the {measured} measured pods fit: {why} \
                         (--warmup-pods sets it)"
                    ));
                    if measured_room > holds {
                        notes.push(format!(
                            "warning: only {holds} of the {measured} measured pods can be scheduled: {why}"
                        ));
                    }
                    room
                } else {
                    default_warmup
                }
            }
        };
        FittedCounts { warmup, measured, notes }
    }

    /// node-default.yaml (4 CPU, 32Gi, 110 pods) with the workload's labels. Nodes carry
    /// `kubernetes.io/hostname` as every real node does.
    pub fn node(self, i: usize) -> Node {
        let name = format!("scheduler-perf-{i}");
        let mut b = Node::builder(&name).resources(4000, 32 << 30, 110).label(LABEL_HOSTNAME, &name);
        match self {
            Workload::TopologySpreading | Workload::PreferredTopologySpreading => {
                b = b.label(LABEL_ZONE, ["moon-1", "moon-2", "moon-3"][i % 3])
            }
            Workload::NodeAffinity | Workload::PodAffinity => b = b.label(LABEL_ZONE, "zone1"),
            Workload::Basic
            | Workload::PodAntiAffinity
            | Workload::PreferredPodAntiAffinity
            | Workload::Unschedulable
            | Workload::MixedChurn
            | Workload::Preemption => {}
        }
        b.build()
    }

    pub fn pod(self, name: &str, measured: bool) -> Pod {
        let base = || Pod::builder(name).container(PAUSE, &[(Cpu, 100), (Memory, 500 << 20)]);
        let namespace = if measured { "sched-1" } else { "sched-0" };
        match self {
            Workload::Basic | Workload::Unschedulable | Workload::MixedChurn => default_pod(name),
            // pod-low-priority.yaml and pod-high-priority.yaml.
            Workload::Preemption if !measured => Pod::builder(name)
                .container("registry.k8s.io/pause:3.10", &[(Cpu, 900), (Memory, 500 << 20)])
                .termination_grace_period_seconds(0)
                .build(),
            Workload::Preemption => Pod::builder(name)
                .container("registry.k8s.io/pause:3.10", &[(Cpu, 3000), (Memory, 500 << 20)])
                .priority(10)
                .build(),
            // pod-with-pod-anti-affinity.yaml
            Workload::PodAntiAffinity => base()
                .namespace(namespace)
                .label("color", "green")
                .affinity(Affinity {
                    pod_anti_affinity: Some(PodAffinity {
                        required: vec![sched_term("color", "green", LABEL_HOSTNAME)],
                        preferred: vec![],
                    }),
                    ..Affinity::default()
                })
                .build(),
            // pod-with-pod-affinity.yaml
            Workload::PodAffinity => base()
                .namespace(namespace)
                .label("color", "blue")
                .affinity(Affinity {
                    pod_affinity: Some(PodAffinity {
                        required: vec![sched_term("color", "blue", LABEL_ZONE)],
                        preferred: vec![],
                    }),
                    ..Affinity::default()
                })
                .build(),
            // pod-with-preferred-pod-anti-affinity.yaml
            Workload::PreferredPodAntiAffinity => base()
                .namespace(namespace)
                .label("color", "yellow")
                .affinity(prefers_pod_anti_affinity(1, sched_term("color", "yellow", LABEL_HOSTNAME)))
                .build(),
            Workload::TopologySpreading | Workload::PreferredTopologySpreading if !measured => default_pod(name),
            // pod-with-topology-spreading.yaml / pod-with-preferred-topology-spreading.yaml
            Workload::TopologySpreading | Workload::PreferredTopologySpreading => {
                let c = TopologySpreadConstraint::new(5, LABEL_ZONE, selector("color", "blue"));
                base()
                    .label("color", "blue")
                    .spread(if self == Workload::PreferredTopologySpreading { c.schedule_anyway() } else { c })
                    .build()
            }
            // pod-with-node-affinity.yaml
            Workload::NodeAffinity => base()
                .node_affinity(NodeAffinity {
                    required: Some(NodeSelector {
                        terms: vec![NodeSelectorTerm {
                            match_expressions: vec![NodeSelectorRequirement::new(
                                LABEL_ZONE,
                                NodeSelectorOp::In,
                                &["zone1", "zone2"],
                            )],
                            match_fields: vec![],
                        }],
                    }),
                    preferred: vec![],
                })
                .build(),
        }
    }

    /// The churn upstream's `churn` op runs beside the measured pods, if any.
    pub fn churn(self) -> Churn {
        match self {
            Workload::Unschedulable => Churn::new(ChurnMode::CreateUnschedulable),
            Workload::MixedChurn => Churn::new(ChurnMode::Recreate),
            _ => Churn::none(),
        }
    }
}

/// A term over `k=v` pods in namespaces sched-1 and sched-0, as upstream's templates write it.
fn sched_term(k: &str, v: &str, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        namespaces: vec![Sym::new("sched-1"), Sym::new("sched-0")],
        ..pod_affinity_term(k, v, topology_key)
    }
}

/// pod-high-priority-large-cpu.yaml: priority 10, 9 CPU: fits no node-default.yaml node.
fn large_cpu_pod(name: &str) -> Pod {
    Pod::builder(name).container(PAUSE, &[(Cpu, 9000), (Memory, 500 << 20)]).priority(10).build()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChurnMode {
    None,
    /// Upstream's `mode: create` with pod-high-priority-large-cpu.yaml.
    CreateUnschedulable,
    /// Upstream's `mode: recreate`, `number: 1`, with churn/node-default.yaml (capacity 0
    /// pods), pod-high-priority-large-cpu.yaml and churn/service-default.yaml.
    Recreate,
}

/// The objects a churn step created that the next step deletes.
struct Live {
    node: Sym,
    pod: Pod,
    service: Sym,
}

/// Cluster changes made between scheduling attempts, one step every [`CHURN_EVERY`].
pub struct Churn {
    mode: ChurnMode,
    attempts: u64,
    steps: u64,
    live: Option<Live>,
}

impl Churn {
    pub fn none() -> Churn {
        Churn::new(ChurnMode::None)
    }

    fn new(mode: ChurnMode) -> Churn {
        Churn { mode, attempts: 0, steps: 0, live: None }
    }

    /// Churn steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// One step, also taken once before the first attempt (upstream's ticker creates its first
    /// objects at once).
    pub fn step(&mut self, sim: &Simulation) -> Result<(), String> {
        let n = self.steps;
        match self.mode {
            ChurnMode::None => return Ok(()),
            ChurnMode::CreateUnschedulable => {
                sim.cluster.create_pod(large_cpu_pod(&format!("pod-h-{n}"))).map_err(|e| e.to_string())?;
            }
            ChurnMode::Recreate => {
                let ns = Sym::new("default");
                if let Some(old) = self.live.take() {
                    sim.cluster.remove_node(old.node).map_err(|e| e.to_string())?;
                    sim.queue.delete(&old.pod);
                    sim.cache.edit_objects(|o| o.remove_service(ns, old.service));
                }
                let node = format!("node-churn-{n}");
                // A node add is a cluster event: parked pods whose rejectors' hints say so retry.
                sim.cluster
                    .add_node(Node::builder(&node).resources(0, 0, 0).label(LABEL_HOSTNAME, &node).build())
                    .map_err(|e| e.to_string())?;
                let service = Sym::new(&format!("service-churn-{n}"));
                sim.cache.edit_objects(|o| {
                    o.upsert_service(Service {
                        namespace: ns,
                        name: service,
                        selector: Labels::from_pairs([("app", "foo")]),
                    })
                });
                let pod = sim.cluster.create_pod(large_cpu_pod(&format!("pod-h-{n}"))).map_err(|e| e.to_string())?;
                self.live = Some(Live { node: Sym::new(&node), pod, service });
            }
        }
        self.steps += 1;
        Ok(())
    }
}

/// The churn is an event source of the driver: one step when the run starts (upstream's
/// ticker creates its first objects at once), then one after every [`CHURN_EVERY`]th attempt.
impl EventSource for Churn {
    fn start(&mut self, sim: &mut Simulation) -> Result<(), String> {
        self.step(sim)
    }

    fn after_attempt(&mut self, sim: &mut Simulation, _outcome: &CycleOutcome) -> Result<(), String> {
        if self.mode == ChurnMode::None {
            return Ok(());
        }
        self.attempts += 1;
        if self.attempts % CHURN_EVERY != 0 {
            return Ok(());
        }
        self.step(sim)
    }
}

/// A synthesized workload's starting point for `ksched compare` (as `ksched run` builds it):
/// `nodes` of the workload's nodes, `warmup` warm-up pods scheduled until idle, then
/// `measured` pods created and queued for [`drive`]. `hooks` are started before the warm-up
/// and see its attempts.
#[allow(clippy::too_many_arguments)]
pub fn prepare(
    w: Workload,
    nodes: usize,
    warmup: usize,
    measured: usize,
    profiles: impl Into<Profiles>,
    queue: QueueConfig,
    seed: u64,
    hooks: &mut dyn RunHooks,
) -> Result<Simulation, String> {
    let cache = Arc::new(Cache::upstream());
    for i in 0..nodes {
        cache.add_node(w.node(i)).map_err(|e| e.to_string())?;
    }
    let mut sim = Simulation::new(cache, profiles, queue, seed);
    hooks.started(&mut sim);
    for i in 0..warmup {
        sim.cluster.create_pod(w.pod(&format!("warmup-{i}"), false)).map_err(|e| e.to_string())?;
    }
    sim.run(Until::Idle, &RunOptions::default(), &mut [], &mut [&mut HookObserver(hooks)])
        .map_err(|e| e.to_string())?;
    for i in 0..measured {
        sim.cluster.create_pod(w.pod(&format!("pod-{i}"), true)).map_err(|e| e.to_string())?;
    }
    Ok(sim)
}

/// After every attempt of a measured phase: the demonstration slowdown.
struct Slowdown(u64);

impl Observer for Slowdown {
    fn attempt(&mut self, _outcome: &CycleOutcome, _ns: u64) {
        after_attempt(self.0);
    }
}

/// What follows every attempt of a measured phase: `slowdown` busy-loop iterations (0: none;
/// [`SLOWDOWN_ENV`]), and the attempt on the counted clock of tests
/// ([`crate::probe::COUNTED_CLOCK_ENV`]).
pub(crate) fn after_attempt(slowdown: u64) {
    if slowdown > 0 {
        busy_loop(slowdown);
    }
    crate::probe::count_attempt(slowdown);
}

/// Reads [`SLOWDOWN_ENV`]: busy-loop iterations to add to every cycle (0 = off).
pub fn slowdown_from_env() -> u64 {
    std::env::var(SLOWDOWN_ENV).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// The measured phase of a synthesized workload: [`Simulation::run`] until idle, with the
/// workload's churn as its event source and the optional demonstration slowdown after each
/// attempt (before `observers`).
///
/// Never inlined: `ksched gate` counts instructions with callgrind's
/// `--toggle-collect=*synth::drive*`, so only the measured phase counts.
#[inline(never)]
pub fn drive(
    sim: &mut Simulation,
    churn: &mut Churn,
    slowdown: u64,
    observers: &mut [&mut dyn Observer],
) -> Result<(), String> {
    let mut slow = Slowdown(slowdown);
    let mut all: Vec<&mut dyn Observer> = Vec::with_capacity(observers.len() + 1);
    if slowdown > 0 || crate::probe::counted_clock() {
        all.push(&mut slow);
    }
    for o in observers.iter_mut() {
        all.push(&mut **o);
    }
    sim.run(Until::Idle, &RunOptions::default(), &mut [churn], &mut all).map(|_| ()).map_err(|e| e.to_string())
}

/// Work that costs instructions and time (a sleep would cost neither instructions nor CPU).
#[inline(never)]
pub(crate) fn busy_loop(iterations: u64) {
    let mut x = 0u64;
    for i in 0..iterations {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    std::hint::black_box(x);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_counts_scale_a_warmup_that_leaves_no_room_and_warn_otherwise() {
        // (workload, nodes, --warmup-pods, --pods) → (warm-up, measured, notes starting with).
        type Case = (Workload, usize, Option<usize>, Option<usize>, (usize, usize), &'static [&'static str]);
        let cases: &[Case] = &[
            (Workload::PodAntiAffinity, 5000, None, None, (1000, 1000), &[]),
            (Workload::PodAntiAffinity, 500, None, Some(500), (0, 500), &["warm-up scaled from 1000 to 0 pods"]),
            (Workload::PodAntiAffinity, 500, None, Some(200), (300, 200), &["warm-up scaled from 1000 to 300"]),
            (
                Workload::PodAntiAffinity,
                500,
                None,
                Some(600),
                (0, 600),
                &["warm-up scaled", "warning: only 500 of the 600"],
            ),
            (
                Workload::PodAntiAffinity,
                500,
                Some(400),
                Some(200),
                (400, 200),
                &["warning: 400 warm-up + 200 measured"],
            ),
            (Workload::Basic, 10, None, Some(100), (300, 100), &["warm-up scaled from 1000 to 300"]),
            (Workload::Basic, 500, None, None, (1000, 10000), &[]),
            (Workload::Preemption, 10, None, None, (40, 10), &[]),
            (Workload::Preemption, 10, Some(41), None, (41, 10), &["warning: 41 warm-up + 0 measured"]),
        ];
        for &(w, nodes, warmup, measured, want, notes) in cases {
            let got = w.fitted_counts(nodes, warmup, measured);
            assert_eq!((got.warmup, got.measured), want, "{w:?} {nodes}: {:?}", got.notes);
            assert_eq!(got.notes.len(), notes.len(), "{w:?} {nodes}: {:?}", got.notes);
            for (n, prefix) in got.notes.iter().zip(notes) {
                assert!(n.starts_with(prefix), "{w:?} {nodes}: {n}");
            }
        }
        assert_eq!(Workload::Basic.pods_per_node(), 40);
        assert_eq!(Workload::PodAntiAffinity.pods_per_node(), 1);
    }

    #[derive(Default, Debug, PartialEq, Eq)]
    struct Tally {
        scheduled: usize,
        unschedulable: usize,
    }

    /// Runs `w` on `nodes` nodes with `warmup` + `measured` pods; the measured phase through
    /// `drive`.
    fn run(w: Workload, nodes: usize, warmup: usize, measured: usize) -> (Tally, Churn, Simulation) {
        let cache = Arc::new(Cache::upstream());
        for i in 0..nodes {
            cache.add_node(w.node(i)).unwrap();
        }
        let mut sim =
            Simulation::new(cache, ksched_engine::framework::Profile::default_profile(), QueueConfig::new(), 1);
        for i in 0..warmup {
            sim.cluster.create_pod(w.pod(&format!("w{i}"), false)).unwrap();
        }
        sim.drain(|_, _| {});
        for i in 0..measured {
            sim.cluster.create_pod(w.pod(&format!("m{i}"), true)).unwrap();
        }
        let mut t = Tally::default();
        let mut churn = w.churn();
        let mut tally = |o: &CycleOutcome, _: u64| match o {
            CycleOutcome::Scheduled { .. } => t.scheduled += 1,
            CycleOutcome::Unschedulable { .. } => t.unschedulable += 1,
            CycleOutcome::BindFailed { .. } => {}
        };
        drive(&mut sim, &mut churn, 0, &mut [&mut tally]).unwrap();
        (t, churn, sim)
    }

    #[test]
    fn synthesized_workloads_schedule_every_measured_pod() {
        // (workload, nodes, warm-up, measured, churn steps expected)
        let cases = [
            (Workload::Basic, 20, 10, 50, 0),
            (Workload::NodeAffinity, 20, 10, 50, 0),
            (Workload::PodAffinity, 20, 10, 50, 0),
            (Workload::PodAntiAffinity, 30, 10, 20, 0),
            (Workload::PreferredPodAntiAffinity, 20, 10, 50, 0),
            (Workload::TopologySpreading, 21, 10, 50, 0),
            (Workload::PreferredTopologySpreading, 21, 10, 50, 0),
            // one step at the start, one per 100 attempts (250 pods + the churn pods' attempts)
            (Workload::Unschedulable, 20, 1, 250, 3),
            (Workload::MixedChurn, 20, 0, 250, 3),
        ];
        for (w, nodes, warmup, measured, steps) in cases {
            let (t, churn, sim) = run(w, nodes, warmup, measured);
            assert_eq!(t.scheduled, measured, "{w:?}");
            assert_eq!(churn.steps(), steps, "{w:?}: churn steps");
            assert!(sim.cache.check_invariants().is_empty(), "{w:?}");
            let unschedulable_churn_pods = match w {
                Workload::Unschedulable => steps as usize,
                Workload::MixedChurn => 1, // only the last step's pod is still there
                _ => 0,
            };
            assert_eq!(sim.queue.num_unschedulable(), unschedulable_churn_pods, "{w:?}: parked pods");
        }
    }

    #[test]
    fn pod_anti_affinity_workload_puts_one_green_pod_per_host() {
        // 10 nodes, 10 pods: each on its own host; the 11th has nowhere to go.
        let (t, _, _) = run(Workload::PodAntiAffinity, 10, 0, 11);
        assert_eq!(t, Tally { scheduled: 10, unschedulable: 1 });
    }

    #[test]
    fn parse_accepts_cli_and_upstream_names() {
        let cases = [
            ("pod-affinity", Some(Workload::PodAffinity)),
            ("SchedulingPodAffinity", Some(Workload::PodAffinity)),
            ("PodAffinity", Some(Workload::PodAffinity)),
            ("schedulingwithmixedchurn", Some(Workload::MixedChurn)),
            ("mixed-churn", Some(Workload::MixedChurn)),
            ("PreemptionBasic", Some(Workload::Preemption)),
            ("SchedulingBasic", Some(Workload::Basic)),
            ("nope", None),
        ];
        for (s, want) in cases {
            assert_eq!(Workload::parse(s), want, "{s}");
        }
    }

    #[test]
    fn busy_loop_zero_iterations_returns() {
        busy_loop(0);
        busy_loop(10);
    }
}
