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

use crate::api::{Pod, Sym};

/// A pod's signature: the scheduler name and the plugins' fragments, by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSignature {
    scheduler_name: Sym,
    /// Sorted by key, one value each.
    fragments: Vec<(&'static str, String)>,
}

impl PodSignature {
    /// A signature with no fragment yet, for a pod of `scheduler_name`.
    pub fn new(scheduler_name: Sym) -> PodSignature {
        PodSignature { scheduler_name, fragments: Vec::new() }
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
/// plugins, each once), or why it has none.
pub fn sign_pod<'p>(
    plugins: impl IntoIterator<Item = &'p dyn super::Plugin>,
    pod: &Pod,
) -> Result<PodSignature, Unsigned> {
    let mut sig = PodSignature::new(pod.scheduler_name);
    for p in plugins {
        p.sign_pod(pod, &mut sig)?;
    }
    Ok(sig)
}

#[cfg(test)]
mod tests {
    use super::*;

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
