//! Adoption: the input's pods that a workload controller of the input takes as its own, as
//! kube-controller-manager's controllers do before they count replicas.
//!
//! - A ReplicaSet, ReplicationController, DaemonSet or Job (with its own `spec.selector`)
//!   adopts the pods of its namespace that match its selector and have no controller.
//! - A StatefulSet adopts such pods when they carry one of its pod names (`<set>-<ordinal>`).
//! - A Deployment's pods belong to its ReplicaSet, whose selector adds `pod-template-hash`: a
//!   dump's pods of ReplicaSet `<deployment>-<hash>` (labelled with that hash) whose
//!   ReplicaSet is not in the input, and orphans carrying the label, are the Deployment's.
//!   They are all given to one ReplicaSet, the hash most of them carry, which is the one the
//!   Deployment then uses for the pods it still has to create (`expand` finds it in the
//!   adopted pods' owner references).
//!
//! Terminating pods are never adopted (the controller is already replacing them). A pod two
//! controllers could adopt goes to the first in the input, as the first to sync would take it.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use ksched_engine::api::{OwnerRef, Pod, Sym};

use super::{name_of, namespace_of, POD_TEMPLATE_HASH};
use crate::convert::label_selector;
use crate::manifest::{ManifestPod, Source, Workload};

/// The input's pods with the adopted ones' controller owner references written, as the
/// controllers would patch them.
pub fn adopt(workloads: &[(Workload, Source)], pods: &[ManifestPod]) -> Vec<ManifestPod> {
    let mut out = pods.to_vec();
    let in_input: HashSet<(&str, &str, &str)> = workloads
        .iter()
        .map(|(w, _)| {
            let (kind, m) = w.meta();
            (kind, namespace_of(m), name_of(m))
        })
        .collect();
    // Deployments with a ReplicaSet of their own in the input: that ReplicaSet adopts.
    let mut rolled_out: HashSet<(&str, &str)> = HashSet::new();
    for (w, _) in workloads {
        if let Workload::ReplicaSet(rs) = w {
            for o in rs.metadata.owner_references.iter().flatten() {
                if o.kind == "Deployment" && o.controller == Some(true) {
                    rolled_out.insert((namespace_of(&rs.metadata), o.name.as_str()));
                }
            }
        }
    }
    for (w, _) in workloads {
        let (kind, m) = w.meta();
        let (namespace, name) = (namespace_of(m), name_of(m));
        let Some(selector) = selector_of(w) else { continue };
        // An invalid selector is `expand`'s error to report.
        let Ok(selector) = label_selector("", "", &selector) else { continue };
        if selector.is_empty() {
            continue;
        }
        let candidates = |p: &ManifestPod| {
            p.pod.namespace.as_str() == namespace
                && p.pod.deletion_timestamp.is_none()
                && selector.matches(&p.pod.labels)
        };
        match w {
            Workload::Deployment(_) => {
                if rolled_out.contains(&(namespace, name)) {
                    continue;
                }
                adopt_for_deployment(&mut out, namespace, name, &in_input, candidates);
            }
            Workload::CronJob(_) => {}
            _ => {
                let uid = m.uid.clone().unwrap_or_default();
                let owner = OwnerRef { kind: Sym::new(kind), name: Sym::new(name), uid: Sym::new(&uid) };
                let is_set = matches!(w, Workload::StatefulSet(_));
                for p in out.iter_mut().filter(|p| p.pod.owner.is_none() && candidates(p)) {
                    if is_set && !is_ordinal_name(&p.pod.name, name) {
                        continue;
                    }
                    p.pod = p.pod.with_owner(Some(owner.clone()));
                }
            }
        }
    }
    out
}

/// The selector a workload adopts by: the Job's only when it gives one.
fn selector_of(w: &Workload) -> Option<meta::LabelSelector> {
    match w {
        Workload::Deployment(d) => d.spec.as_ref().map(|s| s.selector.clone()),
        Workload::ReplicaSet(r) => r.spec.as_ref().map(|s| s.selector.clone()),
        Workload::StatefulSet(s) => s.spec.as_ref().map(|s| s.selector.clone()),
        Workload::DaemonSet(d) => d.spec.as_ref().map(|s| s.selector.clone()),
        Workload::ReplicationController(rc) => {
            let spec = rc.spec.as_ref()?;
            let labels = spec.template.as_ref().and_then(|t| t.metadata.as_ref()).and_then(|m| m.labels.clone());
            let map = spec.selector.clone().filter(|s| !s.is_empty()).or(labels)?;
            Some(meta::LabelSelector { match_labels: Some(map), match_expressions: None })
        }
        Workload::Job(j) => j.spec.as_ref().and_then(|s| s.selector.clone()),
        Workload::CronJob(_) => None,
    }
}

/// Whether `pod` is named `<set>-<ordinal>`.
fn is_ordinal_name(pod: &str, set: &str) -> bool {
    pod.strip_prefix(set)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Gives Deployment `namespace/name` the pods of its ReplicaSets missing from the input (and
/// the orphans labelled with a `pod-template-hash`), all under the ReplicaSet of the hash most
/// of them carry (the first seen among equals).
fn adopt_for_deployment(
    pods: &mut [ManifestPod],
    namespace: &str,
    name: &str,
    in_input: &HashSet<(&str, &str, &str)>,
    candidates: impl Fn(&ManifestPod) -> bool,
) {
    let hash_of = |p: &Pod| p.labels.get(Sym::new(POD_TEMPLATE_HASH));
    let mut taken = Vec::new();
    let mut counts: BTreeMap<Sym, (usize, usize)> = BTreeMap::new();
    for (i, p) in pods.iter().enumerate() {
        if !candidates(p) {
            continue;
        }
        let Some(hash) = hash_of(&p.pod) else { continue };
        let rs = format!("{name}-{hash}");
        let ours = match &p.pod.owner {
            None => true,
            Some(o) => {
                o.kind.as_str() == "ReplicaSet"
                    && o.name.as_str() == rs
                    && !in_input.contains(&("ReplicaSet", namespace, rs.as_str()))
            }
        };
        if ours {
            let n = counts.len();
            counts.entry(hash).or_insert((0, n)).0 += 1;
            taken.push(i);
        }
    }
    // Most pods, then first seen.
    let Some((&hash, _)) = counts.iter().max_by_key(|(_, &(n, first))| (n, std::cmp::Reverse(first))) else { return };
    let rs = Sym::new(&format!("{name}-{hash}"));
    let uid = taken
        .iter()
        .find_map(|&i| pods[i].pod.owner.as_ref().filter(|o| o.name == rs).map(|o| o.uid))
        .unwrap_or(Sym::EMPTY);
    let owner = OwnerRef { kind: Sym::new("ReplicaSet"), name: rs, uid };
    for i in taken {
        if pods[i].pod.owner.as_ref() != Some(&owner) {
            pods[i].pod = pods[i].pod.with_owner(Some(owner.clone()));
        }
    }
}
