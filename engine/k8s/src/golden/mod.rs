//! Replaying upstream kube-scheduler's recorded decisions (golden vectors) against ours.
//!
//! A case folder holds the cluster (`nodes.json`, and in extended cases namespaces,
//! PriorityClasses, PDBs, services, storage objects and pods already running), the pods to
//! create (`pods.json`) and `decisions.jsonl`: one line per pod, in creation order, with
//! upstream's first attempt (feasible set, the first failing filter per rejected node,
//! per-plugin weighted scores, the top-score nodes, its pick and counts; when no node fit, the
//! FitError and PostFilter's outcome: preemption's candidates, victims, PDB violations, ties,
//! nomination and message; in sampled cases, its rotating start and the nodes its own pass
//! kept, rejected and scored) and what the cluster then did. `meta.json` says which
//! percentageOfNodesToScore and parallelism the recording ran with; the replay runs with them.
//!
//! Replay: load every object before the first pod; then for pod k, observe the scheduler's own
//! cycle on the current state without letting it change anything but its rotating start
//! (`observe`), compare it with line k (`compare`), and apply line k's outcome whatever ours
//! was: bind the pod where upstream did; or, after a preemption, delete
//! the recorded victims and bind the pod to the node its retry went to; or drop the pod. Pods
//! bound during the case start at `clock + (seq + 1) s`; running pods keep their own start.
//!
//! The three parts are separate so each can change alone: `case` reads the files, `observe`
//! is the only code that knows how ksched's per-node results are obtained, `compare` and
//! `report` only see plain data.

mod case;
mod compare;
pub mod observe;
mod report;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use case::{
    CandidateRecord, ClaimAllocationRecord, Decision, GoldenCase, GoldenError, PreemptionRecord, VolumeBindingRecord,
    RECORDED_PARALLELISM, RECORDED_PERCENTAGE,
};
pub use report::{Check, Mismatch, PreemptionChecks, ReplayReport, SamplingChecks};

use case::{split_key, DeviceResultRecord};
use ksched_engine::api::{Pod, Sym};
use ksched_engine::cache::Cache;
use ksched_engine::cluster::volumes;
use ksched_engine::features::FeatureGates;
use ksched_engine::framework::plugins::dynamic_resources;
use ksched_engine::framework::Profile;

/// Mixes whose differences are reported but do not fail a replay (`ReplayReport::passes`).
/// None today: `volumes` gates since VolumeBinding exists. A mix whose plugin is still missing
/// goes here until it lands.
pub const REPORT_ONLY_MIXES: &[&str] = &[];

/// Seed of the observing scheduler's RNG (the preemption dry run's random offset, and the
/// draw among tied nodes an extender returned). Every recorded case either tries all
/// potential nodes or finds no candidate, so the offset changes nothing compared; no case
/// has extenders.
const RNG_SEED: u64 = 1;

/// Replays `case` with its own profiles (from `scheduler-config.json`) or else `profile`, in
/// both cases with the recording's percentageOfNodesToScore and parallelism (`meta.json`),
/// listing at most `max_mismatches` differences in detail.
///
/// The cycle that decides is the scheduler's own with those settings: its rotating start,
/// the nodes its pass kept and rejected, its totals, ties and pick are compared with the
/// line's upstream-cycle fields. In a sampled case (a pass that stops before every node) the
/// line's `feasible_nodes`, `rejected`, `scores` and `best` come from a re-run over every
/// node, so a second scheduler on the same cluster, scoring every node, is compared with them.
pub fn replay(case: &GoldenCase, profile: &Profile, max_mismatches: usize) -> ReplayReport {
    let profiles = case.recorded_profiles(profile);
    let profile_source = if case.profile.is_some() { "scheduler-config.json" } else { "the default profile" };
    let sampled = case.sampled(&profiles);
    let mut report = ReplayReport {
        case: case.name.clone(),
        mix: case.mix.clone(),
        report_only: REPORT_ONLY_MIXES.contains(&case.mix.as_str()),
        pods: case.pods.len(),
        running: case.running.len(),
        profile_source: profile_source.to_owned(),
        percentage: case.percentage,
        parallelism: case.parallelism,
        sampled,
        config_warnings: case.config_warnings.clone(),
        extra_files: case.extra_files.clone(),
        ..ReplayReport::default()
    };
    let mut cluster =
        Cluster { cache: Arc::new(Cache::new(Duration::ZERO)), bound: HashMap::new(), generated: HashMap::new() };
    cluster.cache.edit_objects(|o| *o = case.objects.clone());
    for n in &case.nodes {
        if let Err(e) = cluster.cache.add_node(n.clone()) {
            replay_error(&mut report, max_mismatches, 0, "", "load", n.name.as_str(), e.to_string());
        }
    }
    for p in &case.running {
        if let Err(e) = cluster.bind(p.clone()) {
            replay_error(&mut report, max_mismatches, 0, &p.key(), "load", p.node_name.unwrap_or_default().as_str(), e);
        }
    }
    // The score plugins of each profile, by scheduler name (a pod's own are compared), and
    // whether upstream's pick is a function of the found order (no extender randomizes it).
    let scored: HashMap<&str, BTreeSet<&'static str>> = profiles
        .iter()
        .map(|p| (p.scheduler_name.as_str(), p.score.iter().map(|w| w.plugin.name()).collect()))
        .collect();
    let without_extenders: HashSet<&str> =
        profiles.iter().filter(|p| p.extenders.is_empty()).map(|p| p.scheduler_name.as_str()).collect();
    let none = BTreeSet::new();
    let mut not_modelled: BTreeSet<String> = BTreeSet::new();
    let mut scheduler = observe::observer_scheduler(cluster.cache.clone(), &profiles, RNG_SEED);
    let mut every_node = sampled.then(|| observe::every_node_scheduler(cluster.cache.clone(), &profiles, RNG_SEED));
    for (pod, d) in &case.pods {
        let pod = &cluster.create_claims(pod, d.seq);
        let ours = observe::observe(&mut scheduler, pod);
        let all = every_node.as_mut().map(|s| observe::observe(s, pod));
        let claims = d.node.as_deref().filter(|_| !d.claim_allocations.is_empty()).map(|node| {
            let snapshot = cluster.cache.update_snapshot();
            claim_views(&dynamic_resources::allocate_on_node(&case.feature_gates, pod, &snapshot, Sym::new(node))?, pod)
        });
        let name = pod.scheduler_name.as_str();
        compare::Comparer {
            report: &mut report,
            limit: max_mismatches,
            scored: scored.get(name).unwrap_or(&none),
            not_modelled: &mut not_modelled,
            pick_is_deterministic: case.parallelism == 1 && without_extenders.contains(name),
        }
        .compare(d, all.as_ref().unwrap_or(&ours), &ours);
        if let Some(c) = claims {
            compare::Comparer {
                report: &mut report,
                limit: max_mismatches,
                scored: &none,
                not_modelled: &mut not_modelled,
                pick_is_deterministic: false,
            }
            .claim_allocations(d, c);
        }
        for (check, node, e) in cluster.apply(case, pod, d) {
            replay_error(&mut report, max_mismatches, d.seq, &d.pod, check, &node, e);
        }
    }
    report.not_modelled = not_modelled.into_iter().collect();
    report
}

fn replay_error(
    report: &mut ReplayReport,
    limit: usize,
    seq: usize,
    pod: &str,
    check: &'static str,
    node: &str,
    error: String,
) {
    report.replay_errors += 1;
    let m = Mismatch {
        seq,
        pod: pod.to_owned(),
        check,
        node: Some(node.to_owned()),
        ours: error,
        upstream: "applied".into(),
    };
    report.mismatch(limit, m);
}

/// The replayed cluster: the scheduler's cache, and the bound pods by `namespace/name` (so
/// recorded victims can be found and deleted).
struct Cluster {
    cache: Arc<Cache>,
    bound: HashMap<String, Pod>,
    /// Claims the resourceclaim controller stand-in made, by pod key.
    generated: HashMap<String, Vec<(Sym, Sym)>>,
}

type ApplyError = (&'static str, String, String);

impl Cluster {
    fn bind(&mut self, pod: Pod) -> Result<(), String> {
        self.cache.add_pod(&pod).map_err(|e| e.to_string())?;
        self.bound.insert(pod.key(), pod);
        Ok(())
    }

    /// What happened after line `d` (the case README's three outcomes).
    fn apply(&mut self, case: &GoldenCase, pod: &Pod, d: &Decision) -> Vec<ApplyError> {
        let mut errors = Vec::new();
        let node = match (&d.node, &d.preemption) {
            (Some(node), _) => node.clone(),
            (None, Some(p)) if p.nominated_node.is_some() => {
                // Every victim that can be is deleted and the pod bound, whatever failed, so
                // one bad line does not spoil the lines after it.
                for v in &p.victims {
                    let deleted = match self.bound.remove(v) {
                        Some(victim) => self.cache.remove_pod(&victim).map_err(|e| e.to_string()),
                        None => Err(format!("victim {v} is not a bound pod")),
                    };
                    if let Err(e) = deleted {
                        errors.push(("delete", v.clone(), e));
                    }
                }
                match p.bound_node.as_ref().or(p.nominated_node.as_ref()) {
                    Some(n) => n.clone(),
                    None => return errors,
                }
            }
            // Unschedulable without a nomination: the pod is deleted (it was never bound), and
            // the claims made for it with it (the garbage collector's part).
            (None, _) => {
                if let Some(claims) = self.generated.remove(&pod.key()) {
                    self.cache.edit_objects(|o| {
                        for (ns, name) in claims {
                            o.dra.remove_claim(ns, name);
                        }
                    });
                }
                return errors;
            }
        };
        let mut bound = pod.with_node(Sym::new(&node));
        if let Some(t) = case.start_time(d.seq) {
            bound = bound.with_start_time(t);
        }
        if let Err(e) = self.bind(bound) {
            errors.push(("bind", node.clone(), e));
        }
        if let Err(e) = self.apply_volume_bindings(d) {
            errors.push(("bind", node.clone(), e));
        }
        if let Err(e) = self.apply_claim_allocations(pod, d) {
            errors.push(("bind", node, e));
        }
        errors
    }

    /// The resourceclaim controller stand-in (the case README's "before pod k is created"):
    /// a claim for each template entry, named `<pod>-<entry>-<seq as 5 digits>`, owned by the
    /// pod, with the template's labels and annotations and spec; the pod then carries
    /// `status.resourceClaimStatuses`. A template that does not exist makes no claim.
    fn create_claims(&mut self, pod: &Pod, seq: usize) -> Pod {
        use ksched_engine::api::dra::{
            generated_claim_name, PodClaimSource, PodClaimStatus, ResourceClaim, POD_CLAIM_NAME_ANNOTATION,
        };
        if !pod.resource_claims.iter().any(|e| matches!(e.source, PodClaimSource::Template(_))) {
            return pod.clone();
        }
        let snapshot = self.cache.update_snapshot();
        let dra = &snapshot.objects().dra;
        let mut statuses = pod.resource_claim_statuses.clone();
        let mut made = Vec::new();
        for entry in &pod.resource_claims {
            let PodClaimSource::Template(t) = entry.source else { continue };
            if statuses.iter().any(|s| s.name == entry.name) {
                continue;
            }
            let Some(template) = dra.template(pod.namespace, t) else { continue };
            let name = generated_claim_name(&pod.name, entry.name.as_str(), &format!("{seq:05}"));
            let mut claim = ResourceClaim::new(pod.namespace.as_str(), &name, Default::default());
            claim.spec = template.spec.clone();
            claim.owner_pod = Some(Sym::new(pod.uid.as_str()));
            claim.labels = template.labels.clone();
            claim.annotations = template.annotations.clone();
            claim.annotations.push((Sym::new(POD_CLAIM_NAME_ANNOTATION), entry.name));
            statuses.push(PodClaimStatus { name: entry.name, claim: Some(claim.name) });
            made.push(claim);
        }
        if made.is_empty() {
            return pod.clone();
        }
        self.generated.insert(pod.key(), made.iter().map(|c| (c.namespace, c.name)).collect());
        self.cache.edit_objects(|o| made.into_iter().for_each(|c| o.dra.upsert_claim(c)));
        pod.with_resource_claim_statuses(statuses)
    }

    /// DynamicResources PreBind as recorded: a claim this pod allocated gets the line's
    /// devices and node selector; every claim gets the pod in `reservedFor`.
    fn apply_claim_allocations(&mut self, pod: &Pod, d: &Decision) -> Result<(), String> {
        use ksched_engine::api::dra::{AllocationResult, ConsumerRef, DeviceResult};
        if d.claim_allocations.is_empty() {
            return Ok(());
        }
        self.cache.edit_objects(|o| {
            for rec in &d.claim_allocations {
                let (ns, name) = split_key(&rec.claim);
                let Some(claim) = o.dra.claim(ns, name) else {
                    return Err(format!("claim {} does not exist", rec.claim));
                };
                let mut claim = (**claim).clone();
                if rec.allocated {
                    let node_selector = rec
                        .node_selector
                        .as_ref()
                        .map(|s| crate::dra::node_selector(&rec.claim, "node_selector", s))
                        .transpose()
                        .map_err(|e| e.to_string())?;
                    let results = rec
                        .results
                        .iter()
                        .map(|r| DeviceResult {
                            request: Sym::new(&r.request),
                            driver: Sym::new(&r.driver),
                            pool: Sym::new(&r.pool),
                            device: Sym::new(&r.device),
                            admin_access: false,
                        })
                        .collect();
                    claim.allocation = Some(AllocationResult { results, node_selector });
                }
                claim.reserved_for.push(ConsumerRef::pod(pod));
                o.dra.upsert_claim(claim);
            }
            Ok(())
        })
    }

    /// VolumeBinding's PreBind as the case's PV controller stand-in applies it (the
    /// simulation's, `ksched_engine::cluster::volumes`): a provisioned volume is created on the node's
    /// topology, and the claim and its volume are bound to each other.
    fn apply_volume_bindings(&mut self, d: &Decision) -> Result<(), String> {
        if d.volume_bindings.is_empty() {
            return Ok(());
        }
        let snapshot = self.cache.snapshot();
        self.cache.edit_objects(|o| {
            for b in &d.volume_bindings {
                let (ns, name) = split_key(&b.claim);
                let pv = Sym::new(&b.pv);
                let done = if b.provisioned {
                    let node = b.node.as_deref().map_or(Sym::EMPTY, Sym::new);
                    let labels = snapshot.get(node).map(|n| n.node().labels.clone()).unwrap_or_default();
                    volumes::provision(&mut o.storage, ns, name, pv, node, &labels)
                } else {
                    volumes::bind_claim(&mut o.storage, ns, name, pv)
                };
                done.map_err(|e| format!("claim {}: {e}", b.claim))?;
            }
            Ok(())
        })
    }
}

/// ksched's claim outcomes in the recording's terms.
fn claim_views(
    outcomes: &[dynamic_resources::ClaimOutcome],
    _pod: &Pod,
) -> Result<Vec<compare::ClaimAllocationView>, String> {
    Ok(outcomes
        .iter()
        .map(|o| {
            let (allocated, results, node_selector) = match &o.allocation {
                None => (false, Vec::new(), None),
                Some(a) => (
                    true,
                    a.results
                        .iter()
                        .map(|r| DeviceResultRecord {
                            request: r.request.as_str().to_owned(),
                            driver: r.driver.as_str().to_owned(),
                            pool: r.pool.as_str().to_owned(),
                            device: r.device.as_str().to_owned(),
                        })
                        .collect(),
                    a.node_selector.as_ref().map(node_selector_to_k8s),
                ),
            };
            compare::ClaimAllocationView { claim: o.claim.key(), allocated, results, node_selector }
        })
        .collect())
}

/// An engine node selector as the API writes it (empty lists left out).
fn node_selector_to_k8s(s: &ksched_engine::api::NodeSelector) -> k8s_openapi::api::core::v1::NodeSelector {
    use k8s_openapi::api::core::v1 as k;
    let reqs = |rs: &[ksched_engine::api::NodeSelectorRequirement]| {
        let out: Vec<k::NodeSelectorRequirement> = rs
            .iter()
            .map(|r| k::NodeSelectorRequirement {
                key: r.key.as_str().to_owned(),
                operator: format!("{:?}", r.operator),
                values: (!r.values.is_empty()).then(|| r.values.iter().map(|v| v.as_str().to_owned()).collect()),
            })
            .collect();
        (!out.is_empty()).then_some(out)
    };
    k::NodeSelector {
        node_selector_terms: s
            .terms
            .iter()
            .map(|t| k::NodeSelectorTerm {
                match_expressions: reqs(&t.match_expressions),
                match_fields: reqs(&t.match_fields),
            })
            .collect(),
    }
}

/// Loads and replays every case folder under `dir` (or `dir` itself when it is a case).
pub fn replay_dir(dir: &Path, profile: &Profile, max_mismatches: usize) -> Result<Vec<ReplayReport>, GoldenError> {
    replay_dir_with(dir, profile, max_mismatches, &FeatureGates::default())
}

/// `replay_dir` with `gates` (`--feature-gates`) over each recording's gates.
pub fn replay_dir_with(
    dir: &Path,
    profile: &Profile,
    max_mismatches: usize,
    gates: &FeatureGates,
) -> Result<Vec<ReplayReport>, GoldenError> {
    let mut cases = Vec::new();
    if dir.join("decisions.jsonl").is_file() {
        cases.push(dir.to_owned());
    } else {
        let entries =
            std::fs::read_dir(dir).map_err(|e| GoldenError { file: dir.to_owned(), message: e.to_string() })?;
        for e in entries.flatten() {
            if e.path().join("decisions.jsonl").is_file() {
                cases.push(e.path());
            }
        }
        cases.sort();
        if cases.is_empty() {
            return Err(GoldenError {
                file: dir.to_owned(),
                message: "no case folders (with decisions.jsonl) found".into(),
            });
        }
    }
    cases.iter().map(|c| Ok(replay(&GoldenCase::load_with(c, gates)?, profile, max_mismatches))).collect()
}
