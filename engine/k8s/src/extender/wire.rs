//! Upstream's extender v1 wire format (`k8s.io/kube-scheduler/extender/v1`) as serde types of
//! our own. Field names are upstream's JSON names exactly (they are Go field names without
//! json tags, hence the capitals), so an existing extender reads and answers them unchanged.
//! Pods and nodes travel as Kubernetes v1 JSON objects.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What filter and prioritize send: the pod, and the candidate nodes either whole (a v1
/// `NodeList`) or, for a `nodeCacheCapable` extender, by name.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ExtenderArgs {
    #[serde(rename = "Pod")]
    pub pod: Value,
    #[serde(rename = "Nodes", default)]
    pub nodes: Option<NodeList>,
    #[serde(rename = "NodeNames", default)]
    pub node_names: Option<Vec<String>>,
}

/// A v1 `NodeList` (`items` of v1 Node objects).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct NodeList {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(rename = "apiVersion", default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default)]
    pub metadata: Value,
    #[serde(default)]
    pub items: Vec<Value>,
}

/// Node name → why it failed.
pub type FailedNodesMap = BTreeMap<String, String>;

/// The filter verb's answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ExtenderFilterResult {
    #[serde(rename = "Nodes", default)]
    pub nodes: Option<NodeList>,
    #[serde(rename = "NodeNames", default)]
    pub node_names: Option<Vec<String>>,
    #[serde(rename = "FailedNodes", default)]
    pub failed_nodes: Option<FailedNodesMap>,
    #[serde(rename = "FailedAndUnresolvableNodes", default)]
    pub failed_and_unresolvable_nodes: Option<FailedNodesMap>,
    #[serde(rename = "Error", default)]
    pub error: Option<String>,
}

/// One node's score from the prioritize verb (0–10).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct HostPriority {
    #[serde(rename = "Host")]
    pub host: String,
    #[serde(rename = "Score")]
    pub score: i64,
}

/// The prioritize verb's answer.
pub type HostPriorityList = Vec<HostPriority>;

/// Victims by pod object (sent to extenders that are not nodeCacheCapable).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Victims {
    #[serde(rename = "Pods", default)]
    pub pods: Vec<Value>,
    #[serde(rename = "NumPDBViolations", default)]
    pub num_pdb_violations: i64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MetaPod {
    #[serde(rename = "UID")]
    pub uid: String,
}

/// Victims by UID (sent to nodeCacheCapable extenders, and always what comes back).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MetaVictims {
    #[serde(rename = "Pods", default)]
    pub pods: Vec<MetaPod>,
    #[serde(rename = "NumPDBViolations", default)]
    pub num_pdb_violations: i64,
}

/// What the preempt verb is sent: the preemptor and each candidate node's victims.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ExtenderPreemptionArgs {
    #[serde(rename = "Pod")]
    pub pod: Value,
    #[serde(rename = "NodeNameToVictims", default)]
    pub node_name_to_victims: Option<BTreeMap<String, Victims>>,
    #[serde(rename = "NodeNameToMetaVictims", default)]
    pub node_name_to_meta_victims: Option<BTreeMap<String, MetaVictims>>,
}

/// The preempt verb's answer: the candidates kept, victims by UID.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ExtenderPreemptionResult {
    #[serde(rename = "NodeNameToMetaVictims", default)]
    pub node_name_to_meta_victims: Option<BTreeMap<String, MetaVictims>>,
}

/// What the bind verb is sent.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ExtenderBindingArgs {
    #[serde(rename = "PodName")]
    pub pod_name: String,
    #[serde(rename = "PodNamespace")]
    pub pod_namespace: String,
    #[serde(rename = "PodUID")]
    pub pod_uid: String,
    #[serde(rename = "Node")]
    pub node: String,
}

/// The bind verb's answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ExtenderBindingResult {
    #[serde(rename = "Error", default)]
    pub error: Option<String>,
}
