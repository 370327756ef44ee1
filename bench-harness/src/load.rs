//! Manifests loaded into a simulation: `LoadSim::load` builds a `Simulation` from what
//! `ksched_k8s::manifest` read — nodes and cluster objects first, then the bound pods into the
//! cache, then the pending pods created through the in-memory cluster (so priority admission
//! applies), in file order — and `live` runs the workload controllers beside it. Here, in the
//! command's crate, because ksched-k8s reads Kubernetes files and knows no simulation.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ksched_engine::api::{PersistentVolumeClaim, Pod, Sym};
use ksched_engine::cache::{Cache, PodStateName};
use ksched_engine::framework::Profiles;
use ksched_engine::queue::QueueConfig;
use ksched_k8s::controllers;
use ksched_k8s::manifest::{ManifestError, ManifestPod, Manifests, NotQueued, Source};
use ksched_k8s::{pod_from_k8s_with, pvc_from_k8s};
use ksched_sim::cluster::CreateError;
use ksched_sim::simulation::{EventSource, Until};
use ksched_sim::{admission, disruption, Simulation};

pub mod live;

/// `Manifests` loaded into a simulation.
pub trait LoadSim {
    /// A simulation of the manifests' cluster with its pending pods queued: nodes, namespaces,
    /// PriorityClasses and PodDisruptionBudgets first, then the bound pods (priority admission
    /// applied) into the cache, then the budgets without a status computed from them, then the
    /// pending pods created in file order. Returns the simulation and the pending pods.
    // The command's front ends take `load_full`; the tests read this.
    #[cfg_attr(not(test), allow(dead_code))]
    fn load(
        &self,
        profile: impl Into<Profiles>,
        queue_config: QueueConfig,
        seed: u64,
    ) -> Result<(Simulation, Vec<PendingPod>), ManifestError>;

    /// `load`, with the workload controllers' pods (created after the input's pending pods)
    /// and their notes. An OrderedReady StatefulSet's later ordinals are created by
    /// `Loaded::controllers`, an event source for `Simulation::run`, as the ordinals before
    /// them are bound (`load` leaves them uncreated).
    fn load_full(
        &self,
        profiles: impl Into<Profiles>,
        queue_config: QueueConfig,
        seed: u64,
    ) -> Result<Loaded, ManifestError>;
}

/// A pending pod after `load`: as admitted (priority resolved) and queued, or held back.
#[derive(Clone, Debug)]
pub struct PendingPod {
    pub pod: Pod,
    pub source: Source,
    pub not_queued: Option<NotQueued>,
}

/// A loaded simulation: the simulation, the pending pods (the input's, then those the
/// workload controllers create, OrderedReady StatefulSets' later ordinals last), and the
/// controllers' notes (what the simulation does not do for them).
pub struct Loaded {
    pub sim: Simulation,
    pub pending: Vec<PendingPod>,
    pub notes: Vec<String>,
    /// How many of the input's bound pods are in the cache (those on nodes the input holds).
    pub bound_pods: usize,
    /// Creates the OrderedReady StatefulSets' later ordinals, and the DaemonSets' pods on
    /// nodes added during the run: an event source for `Simulation::run`.
    pub controllers: OrderedReady,
}

/// One OrderedReady StatefulSet's pods still to create: each is created once `waiting_for`
/// is bound.
struct OrderedPods {
    waiting_for: Option<Pod>,
    remaining: VecDeque<(Pod, Vec<PersistentVolumeClaim>)>,
}

/// The controllers' work while a simulation runs, as its event source (pass it to
/// `Simulation::run`: `Loaded::controllers`): the StatefulSet controller's OrderedReady
/// creation, the DaemonSet controller's pod for each node the cluster adds (when the
/// controller would run one there), and everything `live` does over time (pods
/// replaced, Jobs completing, CronJobs firing, scaling).
pub struct OrderedReady {
    sets: Vec<OrderedPods>,
    /// How many of the cluster's added nodes the DaemonSets (the manager's: the input's and
    /// those a trace creates) have seen.
    nodes_seen: usize,
    /// Names of the daemon pods created during the run.
    rng: controllers::NameRng,
    pub manager: live::ControllerManager,
}

impl Default for OrderedReady {
    fn default() -> OrderedReady {
        OrderedReady {
            sets: Vec::new(),
            nodes_seen: 0,
            rng: controllers::NameRng::new(0),
            manager: live::ControllerManager::empty(),
        }
    }
}

/// How long a run goes on when something recurs without end (a CronJob, replicated pods with
/// lifetimes) and no horizon is given: one simulated day.
pub const DEFAULT_HORIZON: Duration = Duration::from_secs(24 * 3600);

impl OrderedReady {
    /// When a run of these controllers stops: `horizon` after now when given; otherwise when
    /// nothing more can happen, or after `DEFAULT_HORIZON` when something recurs without end.
    pub fn until(&self, sim: &Simulation, horizon: Option<Duration>) -> Until {
        use ksched_engine::util::time::Clock;
        let horizon = horizon.or_else(|| self.manager.recurs().then_some(DEFAULT_HORIZON));
        match horizon {
            Some(h) => Until::Time(sim.clock.now().saturating_add(h)),
            None => Until::Idle,
        }
    }
}

impl EventSource for OrderedReady {
    fn start(&mut self, sim: &mut Simulation) -> Result<(), String> {
        self.manager.start(sim)
    }

    fn next_event(&self) -> Option<ksched_engine::util::time::Timestamp> {
        self.manager.next_event()
    }

    fn fire_due(&mut self, sim: &mut Simulation) -> Result<(), String> {
        self.manager.fire_due(sim)?;
        for set in &mut self.sets {
            let ready = set.waiting_for.as_ref().is_none_or(|w| sim.cache.pod_state(&w.uid) != PodStateName::Initial);
            if !ready {
                continue;
            }
            let Some((pod, claims)) = set.remaining.pop_front() else { continue };
            if !claims.is_empty() {
                sim.cache.edit_objects(|o| controllers::create_missing_claims(&mut o.storage, claims));
            }
            set.waiting_for = Some(sim.cluster.create_pod(pod).map_err(|e| e.to_string())?);
        }
        let first = self.nodes_seen;
        let (added, seen) = sim.cluster.nodes_added_since(first);
        self.nodes_seen = seen;
        for (k, name) in added.into_iter().enumerate() {
            // Removed again before the controller saw it: nothing to do.
            let Some(node) = sim.cache.get_node(name) else { continue };
            // A DaemonSet created after this node was added made its pod there already.
            let watching = self.manager.daemon_sets().filter(|&(_, since)| since <= first + k).map(|(ds, _)| ds);
            for ds in watching {
                let Some(created) = ds.pod_for(&node, &mut self.rng).map_err(|e| e.to_string())? else { continue };
                let gates = sim.queue.config().gates;
                let pod = pod_from_k8s_with(&created.pod, &gates).map_err(|e| created.template_error(e).to_string())?;
                sim.cluster.create_pod(pod).map_err(|e| format!("{}: {e}", created.controller))?;
            }
        }
        Ok(())
    }
}

impl LoadSim for Manifests {
    fn load(
        &self,
        profile: impl Into<Profiles>,
        queue_config: QueueConfig,
        seed: u64,
    ) -> Result<(Simulation, Vec<PendingPod>), ManifestError> {
        let loaded = self.load_full(profile, queue_config, seed)?;
        Ok((loaded.sim, loaded.pending))
    }

    fn load_full(
        &self,
        profiles: impl Into<Profiles>,
        queue_config: QueueConfig,
        seed: u64,
    ) -> Result<Loaded, ManifestError> {
        // The input's pods, those the workloads adopt owned by them (as their controllers
        // would patch them).
        let pods = controllers::adopt(&self.workloads, &self.pods);
        let expansion = controllers::expand(&self.workloads, &pods, &self.nodes, seed)?;
        let gates = queue_config.gates;
        let convert_pod =
            |c: &controllers::CreatedPod| -> Result<(ManifestPod, Vec<PersistentVolumeClaim>), ManifestError> {
                let pod = pod_from_k8s_with(&c.pod, &gates).map_err(|e| c.template_error(e))?;
                let claims = c
                    .claims
                    .iter()
                    .map(|pvc| pvc_from_k8s(pvc).map_err(|e| c.template_error(e)))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((ManifestPod { pod, source: c.source.clone(), admitted: false }, claims))
            };
        let created: Vec<_> = expansion.pods.iter().map(convert_pod).collect::<Result<_, _>>()?;
        let mut ordered = Vec::new();
        for set in &expansion.ordered {
            let remaining: Vec<_> = set.remaining.iter().map(convert_pod).collect::<Result<_, _>>()?;
            let waiting_for = set.waiting_for.as_ref().and_then(|key| {
                pods.iter().find(|p| p.pod.node_name.is_none() && p.pod.key() == *key).map(|p| p.pod.clone())
            });
            ordered.push((waiting_for, remaining));
        }

        let cache = Arc::new(Cache::upstream());
        for (node, source) in &self.nodes {
            cache
                .add_node(node.clone())
                .map_err(|e| ManifestError::at(source, format!("node {}", node.name), "", e.to_string()))?;
        }
        cache.edit_objects(|o| {
            for (name, labels, _) in &self.namespaces {
                o.set_namespace(*name, labels.clone());
            }
            for (pc, _) in &self.priority_classes {
                o.upsert_priority_class(pc.clone());
            }
            for b in &self.pdbs {
                o.upsert_pdb(b.pdb.clone());
            }
            for (svc, _) in &self.services {
                o.upsert_service(svc.clone());
            }
            for c in &expansion.controllers {
                o.upsert_controller(c.clone());
            }
            o.storage = self.storage.clone();
            o.dra = self.dra.clone();
            for (_, claims) in &created {
                controllers::create_missing_claims(&mut o.storage, claims.iter().cloned());
            }
        });
        let objects = cache.objects();
        let admission = |p: &ManifestPod| {
            admission::admit_pod_priority(&objects, &p.pod)
                .map_err(|e| ManifestError::at(&p.source, e.object, e.field, e.message))
        };
        let mut bound = Vec::new();
        let mut notes = self.notes.clone();
        if self.merged_duplicates > 0 {
            notes.push(format!(
                "{} object(s) defined twice identically (a dump and the manifest applied): merged",
                self.merged_duplicates
            ));
        }
        let node_names: HashSet<Sym> = self.nodes.iter().map(|(n, _)| n.name).collect();
        let mut off_input = BTreeMap::<Sym, Vec<String>>::new();
        for p in pods.iter().filter(|p| p.pod.node_name.is_some()) {
            let object = || format!("pod {}", p.pod.key());
            let node = p.pod.node_name.unwrap_or(Sym::EMPTY);
            if !node_names.contains(&node) {
                if self.options.strict {
                    return Err(ManifestError::at(
                        &p.source,
                        object(),
                        "spec.nodeName",
                        format!("node {node:?} is not in the manifests"),
                    ));
                }
                // A dump filtered by label: the pod runs on a node the input leaves out.
                off_input.entry(node).or_default().push(p.pod.key());
                continue;
            }
            // Admitted when it was created: it keeps the priority it runs with.
            let pod = if p.admitted { p.pod.clone() } else { admission(p)? };
            cache.add_pod(&pod).map_err(|e| ManifestError::at(&p.source, object(), "", e.to_string()))?;
            bound.push(pod);
        }
        if self.pdbs.iter().any(|b| !b.has_status) {
            // The disruption controller computes the budgets given without a status.
            cache.edit_objects(|o| {
                disruption::refresh_pdb_status(o, bound.iter());
                for b in self.pdbs.iter().filter(|b| b.has_status) {
                    o.upsert_pdb(b.pdb.clone());
                }
            });
        }
        let bound_pods = bound.len();
        let sim = Simulation::new(cache, profiles, queue_config, seed);
        // Running pods with a lifetime start their runs now.
        sim.cluster.start_runs(&bound);
        let mut pending = Vec::new();
        let input_pending = pods.iter().filter(|p| p.pod.node_name.is_none());
        for p in input_pending.chain(created.iter().map(|(p, _)| p)) {
            let not_queued = if !p.pod.scheduling_gates.is_empty() {
                Some(NotQueued::Gated(p.pod.scheduling_gates.clone()))
            } else if !sim.cluster.schedules(p.pod.scheduler_name) {
                Some(NotQueued::OtherScheduler(p.pod.scheduler_name))
            } else {
                None
            };
            // A gated pod is created like any other: the queue's SchedulingGates holds it.
            let pod = match not_queued {
                Some(NotQueued::OtherScheduler(_) | NotQueued::WaitingForOrdinal(_)) => admission(p)?,
                Some(NotQueued::Gated(_)) | None => sim.cluster.create_pod(p.pod.clone()).map_err(|e| match e {
                    CreateError::Admission(a) => ManifestError::at(&p.source, a.object, a.field, a.message),
                    other => ManifestError::at(&p.source, format!("pod {}", p.pod.key()), "", other.to_string()),
                })?,
            };
            pending.push(PendingPod { pod, source: p.source.clone(), not_queued });
        }
        let mut sets = Vec::new();
        for (waiting_for, remaining) in ordered {
            let mut before = waiting_for.as_ref().map(Pod::key);
            let mut queue = VecDeque::new();
            for (p, claims) in remaining {
                let pod = admission(&p)?;
                let not_queued = before.replace(pod.key()).map(NotQueued::WaitingForOrdinal);
                pending.push(PendingPod { pod: pod.clone(), source: p.source.clone(), not_queued });
                queue.push_back((p.pod, claims));
            }
            sets.push(OrderedPods { waiting_for, remaining: queue });
        }
        let mut manager = live::ControllerManager::new(&self.workloads, &expansion, seed, live::default_start())?;
        // Its watch starts before the run's first pod event.
        manager.attach(&sim);
        let controllers = OrderedReady {
            sets,
            nodes_seen: 0,
            // Apart from the names drawn when loading, reproducible from the seed.
            rng: controllers::NameRng::new(seed.wrapping_add(1)),
            manager,
        };
        for (node, pods) in &off_input {
            let shown: Vec<&str> = pods.iter().take(3).map(String::as_str).collect();
            let more = if pods.len() > 3 { format!(" and {} more", pods.len() - 3) } else { String::new() };
            notes.push(format!(
                "warning: {} bound pod(s) on node {node:?}, which is not in the input, left out: {}{more}",
                pods.len(),
                shown.join(", ")
            ));
        }
        notes.extend(expansion.notes);
        notes.extend(controllers.manager.notes().iter().cloned());
        Ok(Loaded { sim, pending, notes, bound_pods, controllers })
    }
}

#[cfg(test)]
mod tests;
