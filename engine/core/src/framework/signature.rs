//! Pod signatures (KEP-5598, OpportunisticBatching): what of a pod the plugins' verdicts and
//! scores depend on, so that two pods of one signature are judged alike on the same nodes in
//! the same state.
//!
//! Upstream builds a signature from the scheduler name and every signing plugin's fragments,
//! each a key and a value, a later plugin's fragment replacing an earlier one of the same key
//! (plugins sharing a key write the same value). A plugin that cannot sign a pod (inter-pod
//! affinity, spread constraints, resource claims...) leaves the pod without a signature, and a
//! profile with a plugin that does not sign at all signs no pod. Two signatures are equal when
//! their keys and canonical values are; a value is written in a canonical text form (sets
//! sorted, maps by key) so that equal requirements in another order sign alike.
//!
//! The in-tree plugins' rules (v1.35), each fragment written by [`signers`]:
//!
//! | plugin | signs | refuses |
//! |---|---|---|
//! | DynamicResources | nothing | a pod with `spec.resourceClaims` |
//! | ImageLocality | `ImageNames`: the set of normalized images (containers and init containers) | |
//! | InterPodAffinity | `Labels` (none with `ignorePreferredTermsOfExistingPods`) | a pod with pod affinity or anti-affinity |
//! | NodeAffinity | `NodeAffinity` (terms in canonical order), `NodeSelector` | |
//! | NodeName | `NodeName` | |
//! | NodePorts | `HostPorts`: the set of host ports (containers and init containers) | |
//! | NodeResourcesFit, NodeResourcesBalancedAllocation | `Resources`: the filter's request (`PodData::requests`) | every pod while DRAExtendedResource is on |
//! | NodeUnschedulable, TaintToleration | `Tolerations`, stably sorted by key then value | |
//! | NodeVolumeLimits, VolumeBinding, VolumeRestrictions, VolumeZone | `Volumes`: every source but configMap and secret, sorted | |
//! | PodTopologySpread | nothing | a pod with spread constraints; every pod while the plugin has default constraints |
//!
//! NodeDeclaredFeatures (alpha, not modelled) and the plugins v1.35 no longer has (the seeds'
//! legacy ones) do not sign, so a profile running any of them signs no pod. A profile with
//! extenders signs none either (`Profile::signs_pods`). A plugin that refuses every pod
//! (PodTopologySpread with default constraints, the two resource plugins under
//! DRAExtendedResource) says it does not sign (`Plugin::signs_pods`): upstream's outcome, no
//! pod signed, without the scheduler signing each pod of the default profile only to have
//! PodTopologySpread refuse it.
//!
//! Upstream compares the JSON of what it signs; ksched reads the same fields and keeps their
//! distinctions (`affinity.podAffinity: {}` is present and refuses, as upstream's non-nil
//! pointer; `nodeAffinity: {}` signs apart from no node affinity, an empty `nodeSelectorTerms`
//! alike, as upstream), except where its pod model keeps less than the JSON:
//! - A toleration's `operator: Equal` and an omitted operator are one value here; upstream's
//!   JSON tells them apart (an omitted `key`, `value` or `effect` is empty in both).
//! - `nodeSelector: {}` and absent, `metadata.labels: {}` and absent are one empty map here;
//!   upstream marshals `{}` and `null`, but the API server stores neither empty map, so pods
//!   it serves never differ so.
//! - Upstream sorts tolerations with an unstable sort, which keeps the order of entries of
//!   equal key and value only up to 12 tolerations (its insertion sort); ksched's is stable
//!   at any length.
//! - `Resources` is the filter's request: an explicit zero request and an unnamed one sign
//!   alike though NodeResourcesFit's scores default only the unnamed one (upstream signs the
//!   same request, so its batches have the same quirk).
//! - Volumes read from an object are signed by the canonical JSON of their source without
//!   the API server's defaulting (a `hostPath` with `type: ""` and one without sign apart
//!   here, alike upstream); an emptyDir `sizeLimit` is compared by value and notation
//!   (`1Gi` and `1024Mi` alike, `1Gi` and `1073741824` apart, as upstream's canonical
//!   quantities), other quantities inside a source as written. A field spelled out with its
//!   zero value (`readOnly: false`, `medium: ""`, `items: []`) and the field left out sign
//!   apart here where upstream's `omitempty` makes them alike; pods of one template never
//!   differ so. Volumes made in code sign by their modelled source
//!   (`api::Volume::signed_source`).

use std::borrow::Cow;

use crate::api::{NodeSelectorRequirement, NodeSelectorTerm, Pod, Sym};

use super::Plugin;

/// A pod's signature: the scheduler name and the plugins' fragments, by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSignature {
    scheduler_name: Sym,
    /// Sorted by key, one value each.
    fragments: Vec<(&'static str, String)>,
    /// Only the plugins' refusals are wanted (`sign_pod`'s first pass): `set_with` builds
    /// nothing.
    probe: bool,
}

impl PodSignature {
    /// A signature with no fragment yet, for a pod of `scheduler_name`.
    pub fn new(scheduler_name: Sym) -> PodSignature {
        PodSignature { scheduler_name, fragments: Vec::new(), probe: false }
    }

    /// Sets the fragment `key` to what `value` makes, unless a plugin set it already (plugins
    /// sharing a key write the same value) or this signature only probes for refusals: then
    /// `value` is not called. What the in-tree plugins use, so that a refused pod and a key
    /// met again cost no string.
    pub fn set_with(&mut self, key: &'static str, value: impl FnOnce() -> String) {
        if self.probe {
            return;
        }
        if let Err(i) = self.fragments.binary_search_by(|(k, _)| k.cmp(&key)) {
            self.fragments.insert(i, (key, value()));
        }
    }

    /// Sets the fragment `key` to `value` (replacing what an earlier plugin set).
    pub fn set(&mut self, key: &'static str, value: String) {
        match self.fragments.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => self.fragments[i].1 = value,
            Err(i) => self.fragments.insert(i, (key, value)),
        }
    }

    /// The fragment `key`, if a plugin set it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fragments.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    /// The keys set, in order.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.fragments.iter().map(|(k, _)| *k)
    }
}

/// Fragment keys shared by the plugins that sign the same part of a pod (upstream's signer
/// names).
pub mod keys {
    pub const IMAGE_NAMES: &str = "ImageNames";
    pub const LABELS: &str = "Labels";
    pub const NODE_NAME: &str = "NodeName";
    pub const NODE_AFFINITY: &str = "NodeAffinity";
    pub const NODE_SELECTOR: &str = "NodeSelector";
    pub const HOST_PORTS: &str = "HostPorts";
    pub const RESOURCES: &str = "Resources";
    pub const TOLERATIONS: &str = "Tolerations";
    pub const VOLUMES: &str = "Volumes";
    pub const FEATURES: &str = "Features";
}

/// Why a plugin gives a pod no signature.
pub type Unsigned = &'static str;

/// The signature of `pod` under `plugins` (a profile's PreFilter, Filter, PreScore and Score
/// plugins), or why it has none. A plugin met again (at another point) is asked once. Every
/// plugin is first asked for its refusal alone (a probing signature), so that a pod some
/// plugin refuses costs no fragment.
pub fn sign_pod<'p>(plugins: impl IntoIterator<Item = &'p dyn Plugin>, pod: &Pod) -> Result<PodSignature, Unsigned> {
    let mut unique: smallvec::SmallVec<[&'p dyn Plugin; 24]> = smallvec::SmallVec::new();
    for p in plugins {
        if !unique.iter().any(|q| q.name() == p.name()) {
            unique.push(p);
        }
    }
    let mut probe = PodSignature { probe: true, ..PodSignature::new(pod.scheduler_name) };
    for p in &unique {
        p.sign_pod(pod, &mut probe)?;
    }
    let mut sig = PodSignature::new(pod.scheduler_name);
    for p in &unique {
        p.sign_pod(pod, &mut sig)?;
    }
    Ok(sig)
}

/// Inside `impl Plugin for X`: `signs_pods` and a `sign_pod` that signs every pod with the
/// fragments named, each `KEY => signer` of [`keys`] and [`signers`]
/// (`sign_fragments!(TOLERATIONS => tolerations);`); with `unless field => "why";` first, no
/// pod while the plugin's `field` is true (and `signs_pods` says so).
macro_rules! sign_fragments {
    ($($key:ident => $signer:ident),+ $(,)?) => {
        $crate::framework::signature::sign_fragments!(unless ALWAYS => ""; $($key => $signer),+);
    };
    (unless $flag:ident => $why:literal; $($key:ident => $signer:ident),+ $(,)?) => {
        fn signs_pods(&self) -> bool {
            !$crate::framework::signature::sign_fragments!(@flag self $flag)
        }

        fn sign_pod(
            &self,
            pod: &$crate::api::Pod,
            sig: &mut $crate::framework::signature::PodSignature,
        ) -> Result<(), $crate::framework::signature::Unsigned> {
            if $crate::framework::signature::sign_fragments!(@flag self $flag) {
                return Err($why);
            }
            $(sig.set_with($crate::framework::signature::keys::$key, || {
                $crate::framework::signature::signers::$signer(pod)
            });)+
            Ok(())
        }
    };
    (@flag $self:ident ALWAYS) => {
        false
    };
    (@flag $self:ident $flag:ident) => {
        $self.$flag
    };
}
pub(crate) use sign_fragments;

/// The fragments the in-tree plugins write (upstream's shared signers), each in a canonical
/// text form: strings quoted (Rust's escapes, so no value can forge a separator), sets sorted
/// and without repeats, multisets sorted, maps by key.
pub mod signers {
    use super::*;

    /// Sorted, without repeats.
    fn set<T: Ord>(mut v: Vec<T>) -> Vec<T> {
        v.sort();
        v.dedup();
        v
    }

    /// A label map by key (`Labels` orders by interned key, not by text).
    fn map(labels: &crate::api::Labels) -> String {
        let mut pairs: Vec<(&str, &str)> = labels.iter().map(|l| (l.key.as_str(), l.value.as_str())).collect();
        pairs.sort_unstable();
        format!("{pairs:?}")
    }

    /// `ImageNames`: the set of the containers' and init containers' images, normalized as
    /// ImageLocality looks them up (`:latest` added to untagged names).
    pub fn image_names(pod: &Pod) -> String {
        format!("{:?}", set(pod.images().iter().map(|s| s.as_str()).collect()))
    }

    /// `Labels`: the pod's labels.
    pub fn labels(pod: &Pod) -> String {
        map(&pod.labels)
    }

    /// `NodeName`: `spec.nodeName` (empty when unset).
    pub fn node_name(pod: &Pod) -> String {
        format!("{:?}", pod.node_name.map_or("", |n| n.as_str()))
    }

    /// `NodeSelector`: `spec.nodeSelector`.
    pub fn node_selector(pod: &Pod) -> String {
        map(&pod.node_selector)
    }

    /// One requirement with its values sorted.
    fn requirement(r: &NodeSelectorRequirement) -> String {
        let mut values: Vec<&str> = r.values.iter().map(|v| v.as_str()).collect();
        values.sort_unstable();
        format!("({:?} {:?} {values:?})", r.key.as_str(), r.operator)
    }

    /// A term: its expressions and its fields, each a sorted multiset of requirements.
    fn term(t: &NodeSelectorTerm) -> String {
        let sorted = |rs: &[NodeSelectorRequirement]| {
            let mut v: Vec<String> = rs.iter().map(requirement).collect();
            v.sort_unstable();
            v
        };
        format!("(expressions {:?} fields {:?})", sorted(&t.match_expressions), sorted(&t.match_fields))
    }

    /// `NodeAffinity`: the required terms and the preferred terms (weight and term), each a
    /// sorted multiset; `null` without node affinity.
    pub fn node_affinity(pod: &Pod) -> String {
        let Some(na) = pod.affinity.as_ref().and_then(|a| a.node_affinity.as_ref()) else {
            return "null".to_owned();
        };
        let mut required: Vec<String> = na.required.iter().flat_map(|s| &s.terms).map(term).collect();
        required.sort_unstable();
        let mut preferred: Vec<String> =
            na.preferred.iter().map(|p| format!("({} {})", p.weight, term(&p.preference))).collect();
        preferred.sort_unstable();
        format!("(required {required:?} preferred {preferred:?})")
    }

    /// `HostPorts`: the set of host ports (not 0) of the containers and every init container.
    pub fn host_ports(pod: &Pod) -> String {
        let ports = pod.containers.iter().chain(&pod.init_containers).flat_map(|c| &c.ports);
        format!("{:?}", set(ports.map(|p| p.host_port).filter(|&p| p != 0).collect()))
    }

    /// `Resources`: the request NodeResourcesFit's filter checks (`PodData::requests`:
    /// containers, sidecars, init containers, pod-level requests, overhead).
    pub fn resources(pod: &Pod) -> String {
        let r = pod.requests();
        let mut scalars: Vec<(&str, i64)> = r.scalar.iter().map(|(n, v)| (n.as_str(), v)).collect();
        scalars.sort_unstable();
        format!(
            "(cpu {} memory {} ephemeral-storage {} pods {} {scalars:?})",
            r.milli_cpu, r.memory, r.ephemeral_storage, r.allowed_pod_number
        )
    }

    /// `Tolerations`: every toleration, whole, stably sorted by key then value.
    pub fn tolerations(pod: &Pod) -> String {
        let mut t = pod.tolerations.clone();
        t.sort_by(|a, b| (a.key.as_str(), a.value.as_str()).cmp(&(b.key.as_str(), b.value.as_str())));
        format!("{t:?}")
    }

    /// `Volumes`: the sources of every volume but configMap and secret ones
    /// (`api::Volume::signed_source`), sorted; names left out.
    pub fn volumes(pod: &Pod) -> String {
        let mut v: Vec<Cow<'_, str>> = pod.volumes.iter().filter_map(|v| v.signed_source()).collect();
        v.sort_unstable();
        format!("{v:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A plugin setting `key` (counting the values it builds), or refusing every pod.
    struct Counting {
        name: &'static str,
        key: Option<&'static str>,
        built: AtomicUsize,
    }

    impl Plugin for Counting {
        fn name(&self) -> &'static str {
            self.name
        }

        fn signs_pods(&self) -> bool {
            true
        }

        fn sign_pod(&self, _pod: &Pod, sig: &mut PodSignature) -> Result<(), Unsigned> {
            let key = self.key.ok_or("refused")?;
            sig.set_with(key, || {
                self.built.fetch_add(1, Ordering::Relaxed);
                self.name.to_owned()
            });
            Ok(())
        }
    }

    #[test]
    fn sign_pod_builds_no_fragment_for_a_refused_pod_nor_a_key_twice() {
        let counting = |name, key| Counting { name, key, built: AtomicUsize::new(0) };
        let (a, b, refuses) =
            (counting("A", Some(keys::VOLUMES)), counting("B", Some(keys::VOLUMES)), counting("R", None));
        let pod = Pod::builder("p").build();
        let built = |ps: &[&Counting]| ps.iter().map(|p| p.built.swap(0, Ordering::Relaxed)).collect::<Vec<_>>();
        // (plugins in order, signed, fragments each built)
        let cases: [(Vec<&Counting>, bool, Vec<usize>); 4] = [
            (vec![&a, &refuses], false, vec![0, 0]),
            (vec![&refuses, &a], false, vec![0, 0]),
            (vec![&a, &b], true, vec![1, 0]),
            (vec![&a, &a, &a], true, vec![1, 0, 0]),
        ];
        for (plugins, signed, want) in cases {
            let got = sign_pod(plugins.iter().map(|p| *p as &dyn Plugin), &pod);
            assert_eq!(got.is_ok(), signed, "{got:?}");
            if let Ok(sig) = got {
                assert_eq!(sig.get(keys::VOLUMES), Some("A"), "the first plugin's value");
            }
            let names: Vec<&str> = plugins.iter().map(|p| p.name).collect();
            assert_eq!(built(&plugins), want, "{names:?}");
        }
    }

    #[test]
    fn a_later_fragment_replaces_an_earlier_one_of_its_key_and_order_does_not_matter() {
        let mut a = PodSignature::new(Sym::new("default-scheduler"));
        a.set(keys::VOLUMES, "x".into());
        a.set(keys::TOLERATIONS, "t".into());
        a.set(keys::VOLUMES, "v".into());
        let mut b = PodSignature::new(Sym::new("default-scheduler"));
        b.set(keys::TOLERATIONS, "t".into());
        b.set(keys::VOLUMES, "v".into());
        assert_eq!(a, b);
        assert_eq!(a.get(keys::VOLUMES), Some("v"));
        assert_eq!(a.keys().collect::<Vec<_>>(), vec![keys::TOLERATIONS, keys::VOLUMES]);
        let other = PodSignature { scheduler_name: Sym::new("other"), ..b.clone() };
        assert_ne!(other, b, "the scheduler name is part of the signature");
    }
}
