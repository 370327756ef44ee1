//! The workload controllers while a simulation runs: what kube-controller-manager does with a
//! workload's pods over simulated time. [`ControllerManager`] is an event source; it reads the
//! cluster's pod events (pods created, marked for deletion, gone: `ksched_sim::cluster`) and
//! reacts as the controllers would:
//!
//! - **ReplicaSet, ReplicationController, and a Deployment through its ReplicaSet**: a pod
//!   that goes (its run ended, deleted, evicted, preempted, its node deleted) is replaced at
//!   once, as soon as it is marked for deletion; `scale` creates pods, or deletes pending pods
//!   first, then the newest.
//! - **StatefulSet**: a pod that goes is created again under its name once it is gone;
//!   OrderedReady creates an ordinal only when every lower one is bound; scaling up adds
//!   ordinals (with their claims), scaling down deletes the highest.
//! - **DaemonSet**: a pod that goes while its node stays is created again (pods for nodes
//!   added during the run come from `load::OrderedReady`).
//! - **Job**: a pod that succeeds (its run duration passed) counts toward `completions` (per
//!   completion index for an Indexed Job); one that fails (`activeDeadlineSeconds`) or goes
//!   otherwise counts toward `backoffLimit` (default 6); new pods keep
//!   min(`parallelism`, what is left) active. After a failure the next pod waits
//!   10 s × 2^(failures − 1), at most 10 min. Past `backoffLimit`, or past the Job's own
//!   `activeDeadlineSeconds`, the Job fails and its pods are deleted. Without `completions`
//!   the Job is done once a pod succeeded and none is active. Pods with neither a run duration
//!   nor a deadline never end, so such a Job never completes.
//! - **CronJob**: fires on its schedule (`cron`) in its time zone, the simulated clock read as
//!   wall time from the simulation's start (`ControllerManager::new`'s `start`). Each firing
//!   creates Job `<cronjob>-<minutes since the epoch>`, run by the Job controller above.
//!   `concurrencyPolicy` Allow, Forbid (a time that comes while a Job is active starts late,
//!   when it ends, if `startingDeadlineSeconds` still allows), Replace (active Jobs are
//!   deleted first); times missed by more than `startingDeadlineSeconds` are dropped;
//!   `suspend` creates nothing.
//!
//! Its workloads come from a manifest (`new`, with the pods `expand` already made) or arrive
//! during a run (`add_workload`, a trace's `create` op); `scale` is a trace's `scale` op.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use k8s_openapi::api::apps::v1 as kapps;
use k8s_openapi::api::batch::v1 as kbatch;
use k8s_openapi::api::core::v1 as k;
use ksched_engine::api::{Pod, PodUid, Sym};
use ksched_engine::cache::PodStateName;
use ksched_engine::queue::SchedulingQueue;
use ksched_engine::util::time::{Clock, Timestamp};
use ksched_sim::cluster::{PodEvent, PodExit, PodGone, PodWatch};
use ksched_sim::simulation::EventSource;
use ksched_sim::Simulation;

use ksched_k8s::controllers::cron::{time_zone, Schedule};
use ksched_k8s::controllers::{
    claim_for, expand, job_pod, name_of, namespace_of, new_pod, owner_ref, revision_hash, set_claim_volume,
    template_hash, CreatedPod, DaemonSetWatch, Expansion, NameRng, CONTROLLER_REVISION_HASH, JOB_COMPLETION_INDEX,
    POD_INDEX, POD_TEMPLATE_HASH, STATEFULSET_POD_NAME,
};
use ksched_k8s::manifest::{ManifestError, Source, Workload};
use ksched_k8s::{pod_from_k8s_with, pvc_from_k8s};

/// The wall time a simulation starts at unless told otherwise (CronJobs read the clock
/// from it): 2025-01-01T00:00:00Z, a Wednesday.
pub fn default_start() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_735_689_600).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// The Job controller's default `backoffLimit`.
const DEFAULT_BACKOFF_LIMIT: i32 = 6;
/// The delay before a failed Job pod's replacement: this, doubled per failure, at most
/// `MAX_JOB_BACKOFF`.
const JOB_BACKOFF: Duration = Duration::from_secs(10);
const MAX_JOB_BACKOFF: Duration = Duration::from_secs(600);

/// A controller, by its place in the manager's lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Replica(usize),
    Set(usize),
    Daemon(usize),
    Job(usize),
}

/// Work due on the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Cron(usize),
    Job(usize),
}

/// A ReplicaSet or ReplicationController (a Deployment's pods are its ReplicaSet's).
struct ReplicaCtl {
    /// `deployment default/web`, `replicaset default/web-abc`: named in errors and notes.
    object: String,
    kind: &'static str,
    api_version: &'static str,
    namespace: String,
    name: String,
    uid: Option<String>,
    template: k::PodTemplateSpec,
    /// Labels the controller adds (`pod-template-hash`).
    labels: Vec<(String, String)>,
    replicas: i32,
    /// Its pods not marked for deletion, with their creation order.
    live: HashMap<PodUid, (u64, Pod)>,
    source: Source,
}

impl ReplicaCtl {
    /// The controller of a ReplicaSet or ReplicationController object.
    fn of(
        kind: &'static str,
        api_version: &'static str,
        m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        template: k::PodTemplateSpec,
        replicas: Option<i32>,
        source: &Source,
    ) -> ReplicaCtl {
        let (namespace, name) = (namespace_of(m), name_of(m));
        ReplicaCtl {
            object: format!("{} {namespace}/{name}", kind.to_lowercase()),
            kind,
            api_version,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid: m.uid.clone().filter(|u| !u.is_empty()),
            template,
            labels: Vec::new(),
            replicas: replicas.unwrap_or(1),
            live: HashMap::new(),
            source: source.clone(),
        }
    }
}

/// A StatefulSet.
struct SetCtl {
    object: String,
    namespace: String,
    name: String,
    uid: Option<String>,
    spec: kapps::StatefulSetSpec,
    parallel: bool,
    start: i32,
    replicas: i32,
    revision: String,
    /// Its pods by ordinal (terminating ones included: a name is reused only once gone).
    live: BTreeMap<i32, Pod>,
    /// Ordinals to create (again).
    to_create: BTreeSet<i32>,
    source: Source,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JobState {
    Running,
    Suspended,
    Complete,
    Failed(&'static str),
}

struct JobCtl {
    object: String,
    namespace: String,
    name: String,
    uid: Option<String>,
    template: k::PodTemplateSpec,
    parallelism: i32,
    completions: Option<i32>,
    indexed: bool,
    backoff_limit: i32,
    active_deadline: Option<Duration>,
    /// Active pods (not marked for deletion), with their completion index.
    active: HashMap<PodUid, (Option<i32>, Pod)>,
    succeeded: i32,
    failed: i32,
    done_indexes: BTreeSet<i32>,
    state: JobState,
    /// When the next pod may be created after a failure.
    retry_at: Option<Timestamp>,
    /// `activeDeadlineSeconds` from the Job's start.
    deadline: Option<Timestamp>,
    /// The CronJob that made it.
    cron: Option<usize>,
    source: Source,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Concurrency {
    Allow,
    Forbid,
    Replace,
}

struct CronCtl {
    object: String,
    namespace: String,
    name: String,
    uid: String,
    schedule: Schedule,
    tz: jiff::tz::TimeZone,
    policy: Concurrency,
    starting_deadline: Option<Duration>,
    suspend: bool,
    job_template: kbatch::JobTemplateSpec,
    /// The last time it fired (wall time; the simulation's start to begin with).
    last: jiff::Timestamp,
    /// Its Jobs still running.
    active: Vec<usize>,
    /// The next time it is due (simulated), to ignore stale timers.
    next: Option<Timestamp>,
    source: Source,
}

/// What the controllers did over a run, for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerStats {
    /// Pods the controllers created during the run.
    pub pods_created: u64,
    /// Pods they deleted (scale-downs, failed Jobs, replaced CronJob runs).
    pub pods_deleted: u64,
    pub jobs_created: u64,
    pub jobs_completed: u64,
    pub jobs_failed: u64,
    /// CronJob times never started (held back by Forbid until a later time came, or missed by
    /// more than `startingDeadlineSeconds`), counted when a later time starts.
    pub cron_skipped: u64,
}

/// The controllers as an event source (see the module docs).
pub struct ControllerManager {
    rng: NameRng,
    seed: u64,
    /// The wall time the simulation starts at, and the clock reading then (set by `attach`).
    start_wall: jiff::Timestamp,
    start_sim: Option<Timestamp>,
    replicas: Vec<ReplicaCtl>,
    sets: Vec<SetCtl>,
    daemons: Vec<DaemonSetWatch>,
    /// Per DaemonSet, how many nodes the cluster had added (`nodes_added_since`) when it
    /// appeared: it follows the nodes added after that (0 for the input's).
    daemons_since: Vec<usize>,
    jobs: Vec<JobCtl>,
    crons: Vec<CronCtl>,
    /// (kind, namespace, name) of the owner reference its pods carry → controller.
    owners: HashMap<(Sym, Sym, Sym), Owner>,
    /// (namespace, name) of a Deployment → its ReplicaSet.
    deployments: HashMap<(String, String), usize>,
    timers: BTreeSet<(Timestamp, Timer)>,
    watch: Option<PodWatch>,
    seq: u64,
    /// Replica controllers and Jobs to reconcile at the next `fire_due`.
    dirty: Vec<Owner>,
    /// StatefulSets with ordinals to create.
    sets_waiting: Vec<usize>,
    stats: ControllerStats,
    notes: Vec<String>,
}

impl ControllerManager {
    /// The controllers of `workloads` (`expansion` is what `expand` made of them: the pods
    /// already created, the DaemonSets). `start` is the wall time the simulation starts at
    /// (CronJob schedules are read against it); names come from `seed`. CronJob schedules and
    /// time zones are checked here (errors name file, object and field).
    pub fn new(
        workloads: &[(Workload, Source)],
        expansion: &Expansion,
        seed: u64,
        start: jiff::Timestamp,
    ) -> Result<ControllerManager, ManifestError> {
        let mut m = ControllerManager {
            rng: NameRng::new(seed.wrapping_add(0x6c69_7665)),
            seed,
            start_wall: start,
            start_sim: None,
            replicas: Vec::new(),
            sets: Vec::new(),
            daemons: expansion.daemon_sets.clone(),
            daemons_since: vec![0; expansion.daemon_sets.len()],
            jobs: Vec::new(),
            crons: Vec::new(),
            owners: HashMap::new(),
            deployments: HashMap::new(),
            timers: BTreeSet::new(),
            watch: None,
            seq: 0,
            dirty: Vec::new(),
            sets_waiting: Vec::new(),
            stats: ControllerStats::default(),
            notes: Vec::new(),
        };
        for (i, d) in m.daemons.iter().enumerate() {
            let meta = &d.daemon_set.metadata;
            m.owners.insert(key("DaemonSet", namespace_of(meta), name_of(meta)), Owner::Daemon(i));
        }
        let owned = owned_replica_sets(workloads);
        for (w, source) in workloads {
            m.register(w, source, &owned, &expansion.deployment_hashes)?;
        }
        Ok(m)
    }

    /// No controllers (a simulation without workloads).
    pub fn empty() -> ControllerManager {
        ControllerManager::new(&[], &Expansion::default(), 0, default_start()).expect("no workload to refuse")
    }

    /// Starts following `sim`: watches its pods from now on, and counts the pods already bound
    /// (a manifest's running pods) toward their controllers. Call before the simulation
    /// creates the pending pods (or before `run`; `start` calls it when not done yet).
    pub fn attach(&mut self, sim: &Simulation) {
        if self.watch.is_some() {
            return;
        }
        self.watch = Some(sim.cluster.watch_pods());
        let now = sim.clock.now();
        self.start_sim = Some(now);
        for (pod, _) in sim.cache.pods() {
            self.pod_created(&pod);
        }
        for pod in sim.queue.pending_pods() {
            self.pod_created(&pod);
        }
        for r in &self.replicas {
            sim.cluster.set_scale(Sym::new(&r.namespace), Sym::new(r.kind), Sym::new(&r.name), r.replicas);
        }
        for s in &self.sets {
            sim.cluster.set_scale(Sym::new(&s.namespace), Sym::new("StatefulSet"), Sym::new(&s.name), s.replicas);
        }
        for i in 0..self.jobs.len() {
            self.start_job(i, now);
        }
        for i in 0..self.crons.len() {
            self.schedule_cron(i, now);
        }
    }

    /// Sets the wall time the simulation starts at (before it runs).
    pub fn set_start(&mut self, start: jiff::Timestamp) {
        self.start_wall = start;
        for c in &mut self.crons {
            c.last = start;
        }
        if let Some(now) = self.start_sim {
            for i in 0..self.crons.len() {
                self.schedule_cron(i, now);
            }
        }
    }

    /// Every DaemonSet (the input's, then those created during the run), each with the count
    /// of cluster-added nodes (`Cluster::nodes_added_since`) it already covered: it runs a pod
    /// on each node added after those.
    pub fn daemon_sets(&self) -> impl Iterator<Item = (&DaemonSetWatch, usize)> {
        self.daemons.iter().zip(self.daemons_since.iter().copied())
    }

    /// What the controllers did so far (read by the tests; no front end shows it yet).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn stats(&self) -> &ControllerStats {
        &self.stats
    }

    /// What the simulation does not do for these controllers (Jobs whose pods never end...).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether something recurs without end (a CronJob, or a replicated pod with a lifetime),
    /// so a run must be bounded in time.
    pub fn recurs(&self) -> bool {
        self.crons.iter().any(|c| !c.suspend)
            || self.replicas.iter().any(|r| has_lifetime(&r.template))
            || self.sets.iter().any(|s| has_lifetime(&s.spec.template))
    }

    /// A workload created during the run (a trace's `create`): its pods are created now (an
    /// OrderedReady StatefulSet's one after another) and its controller runs from now on.
    pub fn add_workload(&mut self, sim: &mut Simulation, w: &Workload, source: &Source) -> Result<(), String> {
        self.attach(sim);
        let nodes: Vec<_> = sim.cache.update_snapshot().iter().map(|n| (n.node().clone(), source.clone())).collect();
        let pair = [(w.clone(), source.clone())];
        self.seed = self.seed.wrapping_add(1);
        let expansion = expand(&pair, &[], &nodes, self.seed).map_err(|e| e.to_string())?;
        // The nodes there now got their daemon pods from `expand`; later ones come through
        // `daemon_sets` (`load::OrderedReady`).
        let (_, nodes_added) = sim.cluster.nodes_added_since(usize::MAX);
        for d in &expansion.daemon_sets {
            let meta = &d.daemon_set.metadata;
            self.owners.insert(key("DaemonSet", namespace_of(meta), name_of(meta)), Owner::Daemon(self.daemons.len()));
            self.daemons.push(d.clone());
            self.daemons_since.push(nodes_added);
        }
        self.register(w, source, &HashSet::new(), &HashMap::new()).map_err(|e| e.to_string())?;
        let now = sim.clock.now();
        for c in &expansion.controllers {
            sim.cache.edit_objects(|o| o.upsert_controller(c.clone()));
        }
        for c in &expansion.pods {
            self.create_pod(sim, c.clone())?;
        }
        // OrderedReady ordinals: the set's own controller creates them in order.
        if let Some(set) = self.sets.last_mut().filter(|_| matches!(w, Workload::StatefulSet(_))) {
            for o in &expansion.ordered {
                for c in &o.remaining {
                    if let Some(ord) = c.pod.metadata.name.as_deref().and_then(|n| ordinal_of(&set.name, n)) {
                        set.to_create.insert(ord);
                    }
                }
            }
            let i = self.sets.len() - 1;
            if !self.sets[i].to_create.is_empty() {
                self.sets_waiting.push(i);
            }
            let s = &self.sets[i];
            sim.cluster.set_scale(Sym::new(&s.namespace), Sym::new("StatefulSet"), Sym::new(&s.name), s.replicas);
        }
        if let Some(r) = self.replicas.last().filter(|_| {
            matches!(w, Workload::ReplicaSet(_) | Workload::Deployment(_) | Workload::ReplicationController(_))
        }) {
            sim.cluster.set_scale(Sym::new(&r.namespace), Sym::new(r.kind), Sym::new(&r.name), r.replicas);
        }
        if matches!(w, Workload::Job(_)) {
            self.start_job(self.jobs.len() - 1, now);
        }
        if matches!(w, Workload::CronJob(_)) {
            self.schedule_cron(self.crons.len() - 1, now);
        }
        Ok(())
    }

    /// `kubectl scale KIND/NAME --replicas=N`: Deployment (`deploy`), ReplicaSet (`rs`),
    /// ReplicationController (`rc`), StatefulSet (`sts`), or a Job's parallelism.
    pub fn scale(
        &mut self,
        sim: &mut Simulation,
        kind: &str,
        namespace: &str,
        name: &str,
        replicas: i32,
    ) -> Result<(), String> {
        self.attach(sim);
        if replicas < 0 {
            return Err(format!("scale {kind}/{name}: replicas {replicas} must be greater than or equal to 0"));
        }
        let unknown = || format!("scale {kind} {namespace}/{name}: no such controller in the simulation");
        let owner = match kind.to_ascii_lowercase().as_str() {
            "deployment" | "deployments" | "deploy" => {
                Owner::Replica(*self.deployments.get(&(namespace.to_owned(), name.to_owned())).ok_or_else(unknown)?)
            }
            "replicaset" | "replicasets" | "rs" => self.owner("ReplicaSet", namespace, name).ok_or_else(unknown)?,
            "replicationcontroller" | "replicationcontrollers" | "rc" => {
                self.owner("ReplicationController", namespace, name).ok_or_else(unknown)?
            }
            "statefulset" | "statefulsets" | "sts" => self.owner("StatefulSet", namespace, name).ok_or_else(unknown)?,
            "job" | "jobs" => self.owner("Job", namespace, name).ok_or_else(unknown)?,
            other => {
                return Err(format!(
                    "scale {other}/{name}: not a scalable kind (Deployment, ReplicaSet, ReplicationController, StatefulSet, Job)"
                ))
            }
        };
        match owner {
            Owner::Replica(i) => {
                let r = &mut self.replicas[i];
                r.replicas = replicas;
                sim.cluster.set_scale(Sym::new(&r.namespace), Sym::new(r.kind), Sym::new(&r.name), replicas);
                self.reconcile_replicas(sim, i)
            }
            Owner::Set(i) => {
                let s = &mut self.sets[i];
                let old = s.replicas;
                s.replicas = replicas;
                sim.cluster.set_scale(Sym::new(&s.namespace), Sym::new("StatefulSet"), Sym::new(&s.name), replicas);
                let end = s.start.saturating_add(replicas);
                // Scaling down: the highest ordinals go (all at once).
                let gone: Vec<Pod> = s.live.range(end..).map(|(_, p)| p.clone()).collect();
                s.to_create.retain(|&o| o < end);
                for o in s.start.saturating_add(old)..end {
                    if !s.live.contains_key(&o) {
                        s.to_create.insert(o);
                    }
                }
                if !s.to_create.is_empty() && !self.sets_waiting.contains(&i) {
                    self.sets_waiting.push(i);
                }
                for p in gone {
                    sim.cluster.delete_pod(&p, None, PodExit::Deleted);
                    self.stats.pods_deleted += 1;
                }
                Ok(())
            }
            Owner::Job(i) => {
                self.jobs[i].parallelism = replicas;
                self.sync_job(sim, i)
            }
            Owner::Daemon(_) => Err(format!("scale {kind}/{name}: a DaemonSet has no scale")),
        }
    }

    fn owner(&self, kind: &str, namespace: &str, name: &str) -> Option<Owner> {
        self.owners.get(&key(kind, namespace, name)).copied()
    }

    /// Adds the controller of one workload.
    fn register(
        &mut self,
        w: &Workload,
        source: &Source,
        owned: &HashSet<(String, String)>,
        hashes: &HashMap<(String, String), String>,
    ) -> Result<(), ManifestError> {
        match w {
            Workload::Deployment(d) => {
                let m = &d.metadata;
                let (namespace, name) = (namespace_of(m), name_of(m));
                if owned.contains(&(namespace.to_owned(), name.to_owned())) {
                    // Its ReplicaSet in the input is the one that scales.
                    return Ok(());
                }
                let Some(spec) = d.spec.as_ref() else { return Ok(()) };
                let collisions = d.status.as_ref().and_then(|s| s.collision_count).and_then(|c| u32::try_from(c).ok());
                let hash = match hashes.get(&(namespace.to_owned(), name.to_owned())) {
                    Some(adopted) => adopted.clone(),
                    None => template_hash(&spec.template, collisions.unwrap_or(0)),
                };
                let i = self.replicas.len();
                self.deployments.insert((namespace.to_owned(), name.to_owned()), i);
                self.add_replicas(ReplicaCtl {
                    object: format!("deployment {namespace}/{name}"),
                    kind: "ReplicaSet",
                    api_version: "apps/v1",
                    namespace: namespace.to_owned(),
                    name: format!("{name}-{hash}"),
                    uid: None,
                    template: spec.template.clone(),
                    labels: vec![(POD_TEMPLATE_HASH.to_owned(), hash)],
                    replicas: spec.replicas.unwrap_or(1),
                    live: HashMap::new(),
                    source: source.clone(),
                });
            }
            Workload::ReplicaSet(rs) => {
                let m = &rs.metadata;
                let namespace = namespace_of(m);
                let Some(spec) = rs.spec.as_ref() else { return Ok(()) };
                let Some(template) = spec.template.clone() else { return Ok(()) };
                let i = self.replicas.len();
                for o in
                    m.owner_references.iter().flatten().filter(|o| o.kind == "Deployment" && o.controller == Some(true))
                {
                    self.deployments.insert((namespace.to_owned(), o.name.clone()), i);
                }
                self.add_replicas(ReplicaCtl::of("ReplicaSet", "apps/v1", m, template, spec.replicas, source));
            }
            Workload::ReplicationController(rc) => {
                let m = &rc.metadata;
                let Some(spec) = rc.spec.as_ref() else { return Ok(()) };
                let Some(template) = spec.template.clone() else { return Ok(()) };
                self.add_replicas(ReplicaCtl::of("ReplicationController", "v1", m, template, spec.replicas, source));
            }
            Workload::StatefulSet(s) => {
                let m = &s.metadata;
                let (namespace, name) = (namespace_of(m), name_of(m));
                let Some(spec) = s.spec.clone() else { return Ok(()) };
                let i = self.sets.len();
                self.owners.insert(key("StatefulSet", namespace, name), Owner::Set(i));
                self.sets.push(SetCtl {
                    object: format!("statefulset {namespace}/{name}"),
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    uid: m.uid.clone().filter(|u| !u.is_empty()),
                    parallel: spec.pod_management_policy.as_deref() == Some("Parallel"),
                    start: spec.ordinals.as_ref().and_then(|o| o.start).unwrap_or(0),
                    replicas: spec.replicas.unwrap_or(1).max(0),
                    revision: format!("{name}-{}", revision_hash(&spec.template)),
                    spec,
                    live: BTreeMap::new(),
                    to_create: BTreeSet::new(),
                    source: source.clone(),
                });
            }
            Workload::DaemonSet(_) => {}
            Workload::Job(j) => {
                let job = self.job_ctl(j, source, None)?;
                self.owners.insert(key("Job", &job.namespace, &job.name), Owner::Job(self.jobs.len()));
                self.jobs.push(job);
            }
            Workload::CronJob(c) => {
                let cron = cron_ctl(c, source, self.start_wall, &mut self.rng)?;
                let template = cron.job_template.spec.as_ref().map(|s| &s.template);
                if !cron.suspend && !template.is_some_and(has_lifetime) {
                    self.notes.push(format!(
                        "{}: its Jobs' pods have no ksched.io/run-duration annotation nor activeDeadlineSeconds: they never end, so its Jobs never complete",
                        cron.object
                    ));
                }
                self.crons.push(cron);
            }
        }
        Ok(())
    }

    fn add_replicas(&mut self, r: ReplicaCtl) {
        self.owners.insert(key(r.kind, &r.namespace, &r.name), Owner::Replica(self.replicas.len()));
        self.replicas.push(r);
    }

    /// A Job's controller from its object (`cron`: the CronJob that made it).
    fn job_ctl(&mut self, j: &kbatch::Job, source: &Source, cron: Option<usize>) -> Result<JobCtl, ManifestError> {
        let m = &j.metadata;
        let (namespace, name) = (namespace_of(m), name_of(m));
        let object = format!("job {namespace}/{name}");
        let spec = j.spec.clone().ok_or_else(|| ManifestError::at(source, &object, "spec", "Required value"))?;
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        // API defaulting: both unset is one pod to one completion.
        let (parallelism, completions) = match (spec.parallelism, spec.completions) {
            (None, None) => (1, Some(1)),
            (p, c) => (p.unwrap_or(1).max(0), c.map(|c| c.max(0))),
        };
        let has_life = has_lifetime(&spec.template);
        if cron.is_none() && !has_life && !spec.suspend.unwrap_or(false) {
            self.notes.push(format!(
                "{object}: its pods have no ksched.io/run-duration annotation nor activeDeadlineSeconds: they never end, so the Job never completes"
            ));
        }
        Ok(JobCtl {
            object,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid: m.uid.clone().filter(|u| !u.is_empty()),
            template: spec.template,
            parallelism,
            completions,
            indexed,
            backoff_limit: spec.backoff_limit.unwrap_or(DEFAULT_BACKOFF_LIMIT).max(0),
            active_deadline: spec.active_deadline_seconds.map(|s| Duration::from_secs(s.max(0) as u64)),
            active: HashMap::new(),
            succeeded: 0,
            failed: 0,
            done_indexes: BTreeSet::new(),
            state: if spec.suspend == Some(true) { JobState::Suspended } else { JobState::Running },
            retry_at: None,
            deadline: None,
            cron,
            source: source.clone(),
        })
    }

    fn start_job(&mut self, i: usize, now: Timestamp) {
        let j = &mut self.jobs[i];
        if let Some(d) = j.active_deadline.filter(|_| j.deadline.is_none()) {
            let at = now.saturating_add(d);
            j.deadline = Some(at);
            self.timers.insert((at, Timer::Job(i)));
        }
        self.dirty.push(Owner::Job(i));
    }

    /// Sets the CronJob's next firing as a timer.
    fn schedule_cron(&mut self, i: usize, now: Timestamp) {
        let wall = self.wall(now);
        let c = &self.crons[i];
        let next = if c.suspend { None } else { c.schedule.next_after(wall, &c.tz).map(|t| self.to_sim(t)) };
        self.crons[i].next = next;
        if let Some(at) = next {
            self.timers.insert((at, Timer::Cron(i)));
        }
    }

    /// Simulated time → wall time.
    fn wall(&self, t: Timestamp) -> jiff::Timestamp {
        let since = t.saturating_since(self.start_sim.unwrap_or(t));
        let d = jiff::SignedDuration::try_from(since).unwrap_or(jiff::SignedDuration::MAX);
        self.start_wall.checked_add(d).unwrap_or(jiff::Timestamp::MAX)
    }

    /// Wall time → simulated time (the start for times before it).
    fn to_sim(&self, t: jiff::Timestamp) -> Timestamp {
        let start = self.start_sim.unwrap_or_default();
        let d = t.duration_since(self.start_wall);
        match Duration::try_from(d) {
            Ok(d) => start.saturating_add(d),
            Err(_) => start,
        }
    }

    /// Reads the cluster's pod events and routes them to the controllers.
    fn read_events(&mut self, sim: &Simulation) {
        let Some(w) = self.watch.as_mut() else { return };
        let events = sim.cluster.pod_events(w);
        for e in events {
            match e {
                PodEvent::Created { pod, .. } => self.pod_created(&pod),
                PodEvent::Terminating(g) => self.pod_leaving(sim, &g, false),
                PodEvent::Gone(g) => self.pod_leaving(sim, &g, true),
            }
        }
    }

    fn pod_created(&mut self, pod: &Pod) {
        let Some(owner) = pod.owner.as_ref().and_then(|o| self.owners.get(&(o.kind, pod.namespace, o.name)).copied())
        else {
            return;
        };
        self.seq += 1;
        match owner {
            Owner::Replica(i) => {
                let r = &mut self.replicas[i];
                r.uid.get_or_insert_with(|| pod.owner.as_ref().map(|o| o.uid.to_string()).unwrap_or_default());
                r.live.entry(pod.uid.clone()).or_insert((self.seq, pod.clone()));
            }
            Owner::Set(i) => {
                let s = &mut self.sets[i];
                s.uid.get_or_insert_with(|| pod.owner.as_ref().map(|o| o.uid.to_string()).unwrap_or_default());
                if let Some(o) = ordinal_of(&s.name, &pod.name) {
                    s.live.insert(o, pod.clone());
                    s.to_create.remove(&o);
                }
            }
            Owner::Job(i) => {
                let j = &mut self.jobs[i];
                j.uid.get_or_insert_with(|| pod.owner.as_ref().map(|o| o.uid.to_string()).unwrap_or_default());
                let index = pod.labels.get(Sym::new(JOB_COMPLETION_INDEX)).and_then(|v| v.as_str().parse().ok());
                j.active.entry(pod.uid.clone()).or_insert((index, pod.clone()));
            }
            Owner::Daemon(_) => {}
        }
    }

    /// A pod marked for deletion (`gone` false) or gone.
    fn pod_leaving(&mut self, sim: &Simulation, g: &PodGone, gone: bool) {
        let pod = &g.pod;
        let Some(owner) = pod.owner.as_ref().and_then(|o| self.owners.get(&(o.kind, pod.namespace, o.name)).copied())
        else {
            return;
        };
        match owner {
            Owner::Replica(i) => {
                if self.replicas[i].live.remove(&pod.uid).is_some() {
                    self.dirty.push(owner);
                }
            }
            Owner::Set(i) if gone => {
                let s = &mut self.sets[i];
                let Some(o) = ordinal_of(&s.name, &pod.name) else { return };
                if s.live.get(&o).is_some_and(|p| p.uid == pod.uid) {
                    s.live.remove(&o);
                }
                if o >= s.start && o < s.start.saturating_add(s.replicas) && !s.live.contains_key(&o) {
                    s.to_create.insert(o);
                    if !self.sets_waiting.contains(&i) {
                        self.sets_waiting.push(i);
                    }
                }
            }
            Owner::Set(_) => {}
            Owner::Daemon(i) if gone && g.exit != PodExit::NodeDeleted => {
                // Created again while its node stays and still takes it.
                let Some(node) = pod.node_name.and_then(|n| sim.cache.get_node(n)) else { return };
                if let Ok(Some(created)) = self.daemons[i].pod_for(&node, &mut self.rng) {
                    if self.create_pod(sim, created).is_ok() {
                        self.stats.pods_created += 1;
                    }
                }
            }
            Owner::Daemon(_) => {}
            Owner::Job(i) => {
                let j = &mut self.jobs[i];
                let Some((index, _)) = j.active.remove(&pod.uid) else { return };
                if j.state != JobState::Running {
                    return;
                }
                if g.exit.succeeded() {
                    j.succeeded += 1;
                    if let Some(ix) = index {
                        j.done_indexes.insert(ix);
                    }
                } else {
                    j.failed += 1;
                    let backoff = JOB_BACKOFF.saturating_mul(1 << (j.failed - 1).clamp(0, 16)).min(MAX_JOB_BACKOFF);
                    let at = g.at.saturating_add(backoff);
                    j.retry_at = Some(at);
                    self.timers.insert((at, Timer::Job(i)));
                }
                self.dirty.push(owner);
            }
        }
    }

    /// Converts and creates a pod a controller made (its claims first).
    fn create_pod(&mut self, sim: &Simulation, c: CreatedPod) -> Result<Pod, String> {
        let gates = sim.queue.config().gates;
        let pod = pod_from_k8s_with(&c.pod, &gates).map_err(|e| c.template_error(e).to_string())?;
        if !c.claims.is_empty() {
            let claims = c
                .claims
                .iter()
                .map(|p| pvc_from_k8s(p).map_err(|e| c.template_error(e).to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            sim.cache.edit_objects(|o| ksched_k8s::controllers::create_missing_claims(&mut o.storage, claims));
        }
        let pod = sim.cluster.create_pod(pod).map_err(|e| format!("{}: {e}", c.controller))?;
        self.pod_created(&pod);
        Ok(pod)
    }

    fn reconcile_replicas(&mut self, sim: &Simulation, i: usize) -> Result<(), String> {
        let r = &self.replicas[i];
        let want = usize::try_from(r.replicas.max(0)).unwrap_or(0);
        let have = r.live.len();
        if have > want {
            // Scale down: pending pods first, then the newest.
            let mut pods: Vec<(bool, u64, Pod)> = r
                .live
                .values()
                .map(|(seq, p)| (sim.cache.pod_state(&p.uid) != PodStateName::Initial, *seq, p.clone()))
                .collect();
            pods.sort_by_key(|(bound, seq, _)| (*bound, std::cmp::Reverse(*seq)));
            for (_, _, p) in pods.into_iter().take(have - want) {
                self.replicas[i].live.remove(&p.uid);
                sim.cluster.delete_pod(&p, None, PodExit::Deleted);
                self.stats.pods_deleted += 1;
            }
            return Ok(());
        }
        for _ in have..want {
            let r = &mut self.replicas[i];
            let uid = r.uid.get_or_insert_with(|| self.rng.uid()).clone();
            let owner = owner_ref(r.api_version, r.kind, &r.name, &uid);
            let pod_name = format!("{}-{}", r.name, self.rng.suffix());
            let mut pod = new_pod(&r.template, &r.namespace, pod_name, owner, &r.labels, &[]);
            pod.metadata.uid = Some(self.rng.uid());
            let created =
                CreatedPod { pod, claims: Vec::new(), source: r.source.clone(), controller: r.object.clone() };
            self.create_pod(sim, created)?;
            self.stats.pods_created += 1;
        }
        Ok(())
    }

    /// Creates the StatefulSet's waiting ordinals it may create now; true when none waits.
    fn reconcile_set(&mut self, sim: &Simulation, i: usize) -> Result<bool, String> {
        loop {
            let s = &self.sets[i];
            let Some(&o) = s.to_create.iter().next() else { return Ok(true) };
            let pod_name = format!("{}-{o}", s.name);
            let key_pod = Pod::builder(&pod_name).namespace(&s.namespace).build();
            // The old pod of that name must be gone first.
            if sim.cache.get_pod(&key_pod).is_some() || s.live.contains_key(&o) {
                return Ok(false);
            }
            if !s.parallel {
                let lower_ready = (s.start..o)
                    .all(|l| s.live.get(&l).is_some_and(|p| sim.cache.pod_state(&p.uid) != PodStateName::Initial));
                if !lower_ready {
                    return Ok(false);
                }
            }
            let created = self.set_pod(i, o);
            self.sets[i].to_create.remove(&o);
            self.create_pod(sim, created)?;
            self.stats.pods_created += 1;
            if !self.sets[i].parallel {
                // The next ordinal waits for this one to be bound.
                return Ok(self.sets[i].to_create.is_empty());
            }
        }
    }

    /// The pod (and claims) of ordinal `o` of StatefulSet `i`.
    fn set_pod(&mut self, i: usize, o: i32) -> CreatedPod {
        let s = &mut self.sets[i];
        let pod_name = format!("{}-{o}", s.name);
        let labels = [
            (STATEFULSET_POD_NAME.to_owned(), pod_name.clone()),
            (POD_INDEX.to_owned(), o.to_string()),
            (CONTROLLER_REVISION_HASH.to_owned(), s.revision.clone()),
        ];
        let uid = s.uid.get_or_insert_with(|| self.rng.uid()).clone();
        let owner = owner_ref("apps/v1", "StatefulSet", &s.name, &uid);
        let mut pod = new_pod(&s.spec.template, &s.namespace, pod_name, owner, &labels, &[]);
        let mut claims = Vec::new();
        for t in s.spec.volume_claim_templates.iter().flatten() {
            let template_name = t.metadata.name.as_deref().unwrap_or("");
            let claim_name = format!("{template_name}-{}-{o}", s.name);
            claims.push(claim_for(t, &s.namespace, &claim_name, &s.spec.selector));
            set_claim_volume(&mut pod, template_name, &claim_name);
        }
        CreatedPod { pod, claims, source: s.source.clone(), controller: s.object.clone() }
    }

    /// The Job controller's sync of Job `i` (see the module docs).
    fn sync_job(&mut self, sim: &Simulation, i: usize) -> Result<(), String> {
        let now = sim.clock.now();
        let j = &self.jobs[i];
        if j.state != JobState::Running {
            return Ok(());
        }
        if j.deadline.is_some_and(|d| now >= d) {
            return self.finish_job(sim, i, JobState::Failed("DeadlineExceeded"), true);
        }
        let done = match (j.completions, j.indexed) {
            (Some(c), true) => j.done_indexes.len() >= usize::try_from(c).unwrap_or(0),
            (Some(c), false) => j.succeeded >= c,
            (None, _) => j.succeeded > 0 && j.active.is_empty(),
        };
        if done {
            return self.finish_job(sim, i, JobState::Complete, true);
        }
        if j.failed > j.backoff_limit {
            return self.finish_job(sim, i, JobState::Failed("BackoffLimitExceeded"), true);
        }
        if j.retry_at.is_some_and(|t| now < t) {
            return Ok(());
        }
        let active = i32::try_from(j.active.len()).unwrap_or(i32::MAX);
        let left = match (j.completions, j.indexed) {
            (Some(c), true) => c.saturating_sub(i32::try_from(j.done_indexes.len()).unwrap_or(i32::MAX)),
            (Some(c), false) => c.saturating_sub(j.succeeded),
            (None, _) if j.succeeded > 0 => 0,
            (None, _) => j.parallelism,
        };
        let want = j.parallelism.min(left).saturating_sub(active).max(0);
        let mut taken: BTreeSet<i32> = j.done_indexes.clone();
        taken.extend(j.active.values().filter_map(|(ix, _)| *ix));
        let mut next_index = 0;
        for _ in 0..want {
            let j = &mut self.jobs[i];
            let index = j.indexed.then(|| {
                while taken.contains(&next_index) {
                    next_index += 1;
                }
                taken.insert(next_index);
                next_index
            });
            let uid = j.uid.get_or_insert_with(|| self.rng.uid()).clone();
            let mut pod = job_pod(&j.template, &j.namespace, &j.name, &uid, index, &mut self.rng);
            pod.metadata.uid = Some(self.rng.uid());
            let created =
                CreatedPod { pod, claims: Vec::new(), source: j.source.clone(), controller: j.object.clone() };
            self.create_pod(sim, created)?;
            self.stats.pods_created += 1;
        }
        Ok(())
    }

    /// Ends Job `i` (its active pods deleted); `resync`: its CronJob, if any, syncs again (a
    /// time Forbid held back may start now).
    fn finish_job(&mut self, sim: &Simulation, i: usize, state: JobState, resync: bool) -> Result<(), String> {
        let j = &mut self.jobs[i];
        j.state = state;
        let pods: Vec<Pod> = j.active.drain().map(|(_, (_, p))| p).collect();
        match state {
            JobState::Complete => self.stats.jobs_completed += 1,
            JobState::Failed(_) => self.stats.jobs_failed += 1,
            _ => {}
        }
        for p in pods {
            sim.cluster.delete_pod(&p, None, PodExit::Deleted);
            self.stats.pods_deleted += 1;
        }
        if let Some(c) = self.jobs[i].cron {
            self.crons[c].active.retain(|&a| a != i);
            if resync {
                self.sync_cron(sim, c)?;
            }
        }
        Ok(())
    }

    /// The CronJob controller's sync of CronJob `i`: starts the most recent unmet time, if
    /// any and allowed, and sets the next timer.
    fn sync_cron(&mut self, sim: &Simulation, i: usize) -> Result<(), String> {
        let now = sim.clock.now();
        let wall_now = self.wall(now);
        let c = &self.crons[i];
        if c.suspend {
            return Ok(());
        }
        let mut earliest = c.last;
        if let Some(d) = c.starting_deadline {
            let d = jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX);
            // Times missed by more than the deadline are not started.
            earliest = earliest.max(wall_now.checked_sub(d).unwrap_or(earliest));
        }
        if let Some((t, _)) = c.schedule.last_in(earliest, wall_now, &c.tz) {
            match (c.policy, c.active.is_empty()) {
                (Concurrency::Forbid, false) => {}
                (policy, _) => {
                    if policy == Concurrency::Replace {
                        for j in self.crons[i].active.clone() {
                            self.finish_job(sim, j, JobState::Failed("Replaced"), false)?;
                        }
                    }
                    self.start_cron_job(sim, i, t)?;
                }
            }
        }
        self.schedule_cron(i, now);
        Ok(())
    }

    /// Creates the CronJob's Job for its time `t`.
    fn start_cron_job(&mut self, sim: &Simulation, i: usize, t: jiff::Timestamp) -> Result<(), String> {
        let c = &mut self.crons[i];
        // The times between the last one started and this one were never started.
        let between = c.schedule.last_in(c.last, t, &c.tz).map_or(0, |(_, n)| n);
        self.stats.cron_skipped += between.saturating_sub(1);
        c.last = t;
        let name = format!("{}-{}", c.name, t.as_second().div_euclid(60));
        let tm = c.job_template.metadata.clone().unwrap_or_default();
        let job = kbatch::Job {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(c.namespace.clone()),
                labels: tm.labels,
                annotations: tm.annotations,
                owner_references: Some(vec![owner_ref("batch/v1", "CronJob", &c.name, &c.uid)]),
                ..Default::default()
            },
            spec: c.job_template.spec.clone(),
            status: None,
        };
        let source = c.source.clone();
        let object = c.object.clone();
        let job = self.job_ctl(&job, &source, Some(i)).map_err(|e| format!("{object}: {e}"))?;
        let j = self.jobs.len();
        self.owners.insert(key("Job", &job.namespace, &job.name), Owner::Job(j));
        self.jobs.push(job);
        self.crons[i].active.push(j);
        self.stats.jobs_created += 1;
        let now = sim.clock.now();
        self.start_job(j, now);
        self.sync_job(sim, j)
    }
}

impl EventSource for ControllerManager {
    fn start(&mut self, sim: &mut Simulation) -> Result<(), String> {
        self.attach(sim);
        Ok(())
    }

    fn next_event(&self) -> Option<Timestamp> {
        self.timers.first().map(|(t, _)| *t)
    }

    fn fire_due(&mut self, sim: &mut Simulation) -> Result<(), String> {
        self.attach(sim);
        self.read_events(sim);
        let now = sim.clock.now();
        while let Some(&(at, timer)) = self.timers.first().filter(|(t, _)| *t <= now) {
            self.timers.remove(&(at, timer));
            match timer {
                Timer::Cron(i) if self.crons[i].next.is_some_and(|n| n <= now) => self.sync_cron(sim, i)?,
                Timer::Cron(_) => {}
                Timer::Job(i) => self.dirty.push(Owner::Job(i)),
            }
        }
        while let Some(owner) = self.dirty.pop() {
            match owner {
                Owner::Replica(i) => self.reconcile_replicas(sim, i)?,
                Owner::Job(i) => self.sync_job(sim, i)?,
                Owner::Set(_) | Owner::Daemon(_) => {}
            }
            // Creating and deleting pods logs events of our own: read them before going on.
            self.read_events(sim);
        }
        let mut k = 0;
        while k < self.sets_waiting.len() {
            let i = self.sets_waiting[k];
            if self.reconcile_set(sim, i)? {
                self.sets_waiting.swap_remove(k);
            } else {
                k += 1;
            }
        }
        Ok(())
    }
}

/// (kind, namespace, name) as the owner lookup keys it.
fn key(kind: &str, namespace: &str, name: &str) -> (Sym, Sym, Sym) {
    (Sym::new(kind), Sym::new(namespace), Sym::new(name))
}

/// The ordinal of StatefulSet `set`'s pod `pod` (`<set>-<ordinal>`).
fn ordinal_of(set: &str, pod: &str) -> Option<i32> {
    pod.strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

/// Whether the template's pods end by themselves (a run duration or a deadline).
fn has_lifetime(t: &k::PodTemplateSpec) -> bool {
    let annotated = t
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.as_ref())
        .is_some_and(|a| a.contains_key(ksched_k8s::RUN_DURATION_ANNOTATION));
    annotated || t.spec.as_ref().is_some_and(|s| s.active_deadline_seconds.is_some())
}

/// Deployments whose ReplicaSet is in the input (that ReplicaSet scales them).
fn owned_replica_sets(workloads: &[(Workload, Source)]) -> HashSet<(String, String)> {
    let mut out = HashSet::new();
    for (w, _) in workloads {
        if let Workload::ReplicaSet(rs) = w {
            for o in rs.metadata.owner_references.iter().flatten() {
                if o.kind == "Deployment" && o.controller == Some(true) {
                    out.insert((namespace_of(&rs.metadata).to_owned(), o.name.clone()));
                }
            }
        }
    }
    out
}

/// A CronJob's controller; its schedule, time zone and policy checked (errors name the field).
fn cron_ctl(
    c: &kbatch::CronJob,
    source: &Source,
    start: jiff::Timestamp,
    rng: &mut NameRng,
) -> Result<CronCtl, ManifestError> {
    let m = &c.metadata;
    let (namespace, name) = (namespace_of(m), name_of(m));
    let object = format!("cronjob {namespace}/{name}");
    let err = |field: &str, message: String| ManifestError::at(source, &object, field, message);
    let spec = c.spec.as_ref().ok_or_else(|| err("spec", "Required value".into()))?;
    let schedule = Schedule::parse(&spec.schedule)
        .map_err(|e| err("spec.schedule", format!("Invalid value: {:?}: {e}", spec.schedule)))?;
    let tz = time_zone(spec.time_zone.as_deref()).map_err(|e| err("spec.timeZone", e))?;
    let policy = match spec.concurrency_policy.as_deref() {
        None | Some("Allow") => Concurrency::Allow,
        Some("Forbid") => Concurrency::Forbid,
        Some("Replace") => Concurrency::Replace,
        Some(other) => {
            return Err(err(
                "spec.concurrencyPolicy",
                format!("Unsupported value: {other:?}: supported values: \"Allow\", \"Forbid\", \"Replace\""),
            ))
        }
    };
    let starting_deadline = match spec.starting_deadline_seconds {
        Some(s) if s < 0 => {
            return Err(err("spec.startingDeadlineSeconds", "must be greater than or equal to 0".into()))
        }
        Some(s) => Some(Duration::from_secs(s as u64)),
        None => None,
    };
    Ok(CronCtl {
        object,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: m.uid.clone().filter(|u| !u.is_empty()).unwrap_or_else(|| rng.uid()),
        schedule,
        tz,
        policy,
        starting_deadline,
        suspend: spec.suspend.unwrap_or(false),
        job_template: spec.job_template.clone(),
        last: start,
        active: Vec::new(),
        next: None,
        source: source.clone(),
    })
}

#[cfg(test)]
mod tests;
