//! The numbers compare reports per configuration, computed from a run's record and the
//! cluster it ended with. Definitions (also in the README):
//!
//! * **utilization** of a node: requested ÷ allocatable, for CPU and for memory; over all
//!   nodes: mean, population standard deviation, min, max, p10 and p90 (nearest rank: the
//!   ⌈q·n⌉-th smallest); **range** = max − min. Imbalance is the standard deviation and the
//!   range.
//! * **nodes in use**: nodes holding at least one pod the run scheduled; **non-empty**: nodes
//!   holding any pod (pods bound before the run too).
//! * **fragmentation** and **spread** are computed twice: over **the pods the run scheduled**
//!   (the headline: what this configuration did; a node's room is its allocatable less the
//!   run's pods) and, labelled `cluster_*`, over **the whole cluster** (pods bound before the
//!   run too: static pods, DaemonSet pods of a dump).
//! * **fragmentation**, for one pod shape (CPU, memory): the most common shape among the
//!   pending pods, or among the pods the run attempted when none is pending. `fit_individually`
//!   = Σ over nodes of how many more such pods fit in the node's free CPU, memory and pod
//!   slots; `fit_by_totals` = the same for one node holding all the free CPU, memory and pod
//!   slots; `fragmentation` = 1 − fit_individually ÷ fit_by_totals (0: free room is where
//!   pods fit; 0 also when nothing would fit anyway). Resources only: taints, affinity and
//!   ports are not considered.
//! * **spread**: per owner (the controller owner reference, else the `app` label; pods with
//!   neither are not counted), its bound pods per zone (`topology.kubernetes.io/zone`; nodes
//!   without it are zone `""`) over all of the cluster's zones, and its **skew** = max − min
//!   of those counts.
//! * **throughput**: pods scheduled ÷ the wall time of all attempts (the scheduler's own time:
//!   setup, object creation and the driver are not counted); **attempt latency**: p50 / p90 /
//!   p99 of every attempt's wall time, warm-up included.
//! * **devices** (DRA): per driver and per DeviceClass, devices allocated ÷ devices there are
//!   at the end (`crate::device_use`).

use std::collections::{BTreeMap, HashMap, HashSet};

use hdrhistogram::Histogram;
use ksched_engine::api::{Pod, Sym, LABEL_ZONE};
use ksched_engine::snapshot::node_info::NodeInfo;
use serde::Serialize;

use super::moves::MovedPod;
use super::run::{pending_by_reason, RunRecord};
use crate::device_use::DeviceUse;
use crate::perf_file::exec::NodeUse;

/// Distribution of one utilization over the nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    pub p10: f64,
    pub p90: f64,
    /// max − min.
    pub range: f64,
}

impl Stats {
    pub fn of(values: &[f64]) -> Stats {
        if values.is_empty() {
            return Stats::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        let rank = |q: f64| v[((q * n).ceil() as usize).clamp(1, v.len()) - 1];
        let (min, max) = (v[0], v[v.len() - 1]);
        Stats { mean, stddev: var.sqrt(), min, max, p10: rank(0.1), p90: rank(0.9), range: max - min }
    }
}

/// A pod shape: what NodeResourcesFit compares with a node's free room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Shape {
    pub cpu_milli: i64,
    pub memory_bytes: i64,
}

impl Shape {
    pub fn of(pod: &Pod) -> Shape {
        Shape { cpu_milli: pod.requests().milli_cpu, memory_bytes: pod.requests().memory }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Fragmentation {
    pub shape: Shape,
    /// `pending` or `requested`: which pods the shape is the most common of.
    pub shape_of: String,
    /// How many pods of that set have the shape.
    pub pods_of_shape: usize,
    pub fit_individually: u64,
    pub fit_by_totals: u64,
    /// 1 − fit_individually ÷ fit_by_totals.
    pub fragmentation: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OwnerSpread {
    /// `Kind/name` of the controller owner, or `app=value`.
    pub owner: String,
    pub pods: usize,
    /// Pods per zone, every zone of the cluster listed.
    pub zones: BTreeMap<String, usize>,
    /// max − min over `zones`.
    pub skew: usize,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencyUs {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

/// One configuration's results.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigReport {
    pub label: String,
    pub config: String,
    /// Successful scheduling attempts (pods bound).
    pub scheduled: usize,
    /// Pods waiting at the end (never-queued pods of the manifests included).
    pub pending: usize,
    /// Pending pods per reason of their last attempt (a pod counts under each of its reasons).
    pub pending_by_reason: BTreeMap<String, usize>,
    /// Attempts whose preemption nominated a node.
    pub preempted: usize,
    /// Pods those preemptions deleted.
    pub victims: usize,
    pub attempts: usize,
    pub unschedulable_attempts: usize,
    pub nodes: usize,
    pub nodes_in_use: usize,
    pub nodes_non_empty: usize,
    pub cpu: Stats,
    pub memory: Stats,
    /// Over the pods the run scheduled (a node's room: allocatable less the run's pods).
    pub fragmentation: Option<Fragmentation>,
    /// The largest skew of any owner of the pods the run scheduled (0 without owners).
    pub max_zone_skew: usize,
    /// Per owner, over the pods the run scheduled.
    pub spread: Vec<OwnerSpread>,
    /// `fragmentation` over the whole cluster (the room really left: pods bound before the
    /// run hold theirs too).
    pub cluster_fragmentation: Option<Fragmentation>,
    /// `max_zone_skew` over every bound pod of the cluster.
    pub cluster_max_zone_skew: usize,
    /// `spread` over every bound pod of the cluster.
    pub cluster_spread: Vec<OwnerSpread>,
    pub throughput_pods_per_second: f64,
    pub attempt_latency_us: LatencyUs,
    /// Wall time of the whole run (workload setup included).
    pub wall_seconds: f64,
    /// Pods whose placement differs from the first configuration's (0 for the first).
    pub moved: usize,
    /// The first `--max-moved` of them, with why.
    pub moved_pods: Vec<MovedPod>,
    pub notes: Vec<String>,
    /// DRA devices at the end, allocated / total per driver and per DeviceClass (absent
    /// without ResourceSlices and DeviceClasses).
    #[serde(skip_serializing_if = "DeviceUse::is_empty")]
    pub devices: DeviceUse,
    /// Per node (for the HTML page).
    #[serde(skip)]
    pub utilization: Vec<NodeUse>,
    #[serde(skip)]
    pub latency: Option<Histogram<u64>>,
}

fn frac(a: i64, b: i64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        0.0
    }
}

/// The report of one run (no moved pods yet).
pub fn config_report(label: &str, config: &str, r: &RunRecord) -> ConfigReport {
    let nodes: Vec<&NodeInfo> = r.snapshot.iter().map(|n| &**n).collect();
    let utilization: Vec<NodeUse> = nodes
        .iter()
        .map(|n| NodeUse {
            cpu: frac(n.requested().milli_cpu, n.allocatable().milli_cpu),
            memory: frac(n.requested().memory, n.allocatable().memory),
        })
        .collect();
    let cpu: Vec<f64> = utilization.iter().map(|u| u.cpu).collect();
    let memory: Vec<f64> = utilization.iter().map(|u| u.memory).collect();
    let scheduled_here: HashSet<&str> = r
        .placement
        .iter()
        .filter(|(_, p)| matches!(p, super::run::Placement::Node(_)))
        .map(|(k, _)| k.as_str())
        .collect();
    let nodes_in_use =
        nodes.iter().filter(|n| n.pods().iter().any(|p| scheduled_here.contains(p.key().as_str()))).count();
    let nodes_non_empty = nodes.iter().filter(|n| !n.pods().is_empty()).count();
    let cluster_spread = spread(&nodes, None);
    let spread = spread(&nodes, Some(&scheduled_here));
    let hist = &r.latency.0;
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    let pending_by_reason = pending_by_reason(r);
    ConfigReport {
        label: label.to_owned(),
        config: config.to_owned(),
        scheduled: r.counts.scheduled,
        pending: r.pending.len() + r.not_queued.len(),
        pending_by_reason,
        preempted: r.counts.preemptions,
        victims: r.counts.victims,
        attempts: r.counts.attempts,
        unschedulable_attempts: r.counts.unschedulable,
        nodes: nodes.len(),
        nodes_in_use,
        nodes_non_empty,
        cpu: Stats::of(&cpu),
        memory: Stats::of(&memory),
        fragmentation: fragmentation(&nodes, r, Some(&scheduled_here)),
        max_zone_skew: spread.iter().map(|s| s.skew).max().unwrap_or(0),
        spread,
        cluster_fragmentation: fragmentation(&nodes, r, None),
        cluster_max_zone_skew: cluster_spread.iter().map(|s| s.skew).max().unwrap_or(0),
        cluster_spread,
        // Attempt pods/s: over the attempts' summed time (ksched_sim::observe::pods_per_second).
        throughput_pods_per_second: ksched_sim::observe::pods_per_second(r.counts.scheduled, r.attempt_ns as f64 / 1e9),
        attempt_latency_us: if hist.is_empty() {
            LatencyUs::default()
        } else {
            LatencyUs { p50: us(0.5), p90: us(0.9), p99: us(0.99) }
        },
        wall_seconds: r.wall_seconds,
        moved: 0,
        moved_pods: Vec::new(),
        notes: r.notes.clone(),
        devices: DeviceUse::of(&r.snapshot.objects().dra),
        utilization,
        latency: Some(hist.clone()),
    }
}

/// The most common shape of `pods` (ties: the smallest shape), with its count.
fn most_common<'a>(pods: impl Iterator<Item = &'a Pod>) -> Option<(Shape, usize)> {
    let mut counts: HashMap<Shape, usize> = HashMap::new();
    for p in pods {
        *counts.entry(Shape::of(p)).or_insert(0) += 1;
    }
    counts.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
}

/// How many pods of `shape` fit in free room `(cpu, memory, pod slots)`.
fn fits(shape: Shape, cpu: i64, memory: i64, slots: i64) -> u64 {
    let by = |free: i64, need: i64| if need > 0 { free.max(0) / need } else { i64::MAX };
    by(cpu, shape.cpu_milli).min(by(memory, shape.memory_bytes)).min(slots.max(0)) as u64
}

/// The fragmentation of the nodes' free room: with `only`, the room the pods of `only`
/// (`namespace/name`) leave of each node's allocatable; without, the room really free.
pub fn fragmentation(nodes: &[&NodeInfo], r: &RunRecord, only: Option<&HashSet<&str>>) -> Option<Fragmentation> {
    let (shape, count, shape_of) = match most_common(r.pending.iter()) {
        Some((s, c)) => (s, c, "pending"),
        None => {
            let attempted: HashSet<&str> = r.attempted.iter().map(String::as_str).collect();
            let pods = nodes.iter().flat_map(|n| n.pods().iter()).filter(|p| attempted.contains(p.key().as_str()));
            let (s, c) = most_common(pods)?;
            (s, c, "requested")
        }
    };
    let free = |n: &NodeInfo| {
        let a = n.allocatable();
        match only {
            None => {
                let q = n.requested();
                (a.milli_cpu - q.milli_cpu, a.memory - q.memory, a.allowed_pod_number - n.pods().len() as i64)
            }
            Some(only) => {
                let (mut cpu, mut memory, mut count) = (a.milli_cpu, a.memory, a.allowed_pod_number);
                for p in n.pods().iter().filter(|p| only.contains(p.key().as_str())) {
                    cpu -= p.requests().milli_cpu;
                    memory -= p.requests().memory;
                    count -= 1;
                }
                (cpu, memory, count)
            }
        }
    };
    let mut individually = 0u64;
    let (mut cpu, mut memory, mut slots) = (0i64, 0i64, 0i64);
    for n in nodes {
        let (c, m, s) = free(n);
        individually += fits(shape, c, m, s);
        cpu += c.max(0);
        memory += m.max(0);
        slots += s.max(0);
    }
    let by_totals = fits(shape, cpu, memory, slots);
    Some(Fragmentation {
        shape,
        shape_of: shape_of.to_owned(),
        pods_of_shape: count,
        fit_individually: individually,
        fit_by_totals: by_totals,
        fragmentation: if by_totals > 0 { 1.0 - individually as f64 / by_totals as f64 } else { 0.0 },
    })
}

/// A pod's owner for spread: its controller owner reference, else its `app` label.
pub fn owner_of(pod: &Pod) -> Option<String> {
    if let Some(o) = &pod.owner {
        return Some(format!("{}/{}/{}", pod.namespace, o.kind, o.name));
    }
    pod.labels.get(Sym::new("app")).map(|v| format!("{}/app={v}", pod.namespace))
}

/// Per owner, its pods per zone over every zone of the cluster: the pods of `only`
/// (`namespace/name`), or every bound pod.
pub fn spread(nodes: &[&NodeInfo], only: Option<&HashSet<&str>>) -> Vec<OwnerSpread> {
    let zone_key = Sym::new(LABEL_ZONE);
    let zone_of = |n: &NodeInfo| n.node().labels.get(zone_key).map(|z| z.to_string()).unwrap_or_default();
    let zones: BTreeMap<String, usize> = nodes.iter().map(|n| (zone_of(n), 0)).collect();
    let mut owners: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for n in nodes {
        let zone = zone_of(n);
        for p in n.pods().iter().filter(|p| only.is_none_or(|only| only.contains(p.key().as_str()))) {
            if let Some(o) = owner_of(p) {
                *owners.entry(o).or_insert_with(|| zones.clone()).entry(zone.clone()).or_insert(0) += 1;
            }
        }
    }
    owners
        .into_iter()
        .map(|(owner, zones)| {
            let max = zones.values().copied().max().unwrap_or(0);
            let min = zones.values().copied().min().unwrap_or(0);
            OwnerSpread { owner, pods: zones.values().sum(), zones, skew: max - min }
        })
        .collect()
}
