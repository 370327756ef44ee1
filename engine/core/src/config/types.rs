//! `kubescheduler.config.k8s.io/v1` as written in a file: the fields ksched reads, and the
//! fields upstream has that ksched accepts and ignores. Anything else is an error naming it.

use serde::de::IgnoredAny;
use serde::Deserialize;

pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
pub const KIND: &str = "KubeSchedulerConfiguration";

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeSchedulerConfiguration {
    /// Checked before decoding.
    #[serde(default)]
    pub api_version: Option<IgnoredAny>,
    #[serde(default)]
    pub kind: Option<IgnoredAny>,
    pub parallelism: Option<i32>,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub pod_initial_backoff_seconds: Option<i64>,
    pub pod_max_backoff_seconds: Option<i64>,
    pub profiles: Option<Vec<KubeSchedulerProfile>>,
    /// Scheduler extenders, consulted by every profile.
    pub extenders: Option<Vec<Extender>>,
    // Upstream fields with no meaning for ksched: accepted, ignored.
    #[serde(default)]
    pub leader_election: Option<IgnoredAny>,
    #[serde(default)]
    pub client_connection: Option<IgnoredAny>,
    #[serde(default)]
    pub enable_profiling: Option<IgnoredAny>,
    #[serde(default)]
    pub enable_contention_profiling: Option<IgnoredAny>,
    #[serde(default)]
    pub delay_cache_until_active: Option<IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeSchedulerProfile {
    pub scheduler_name: Option<String>,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: Option<Plugins>,
    pub plugin_config: Option<Vec<PluginConfig>>,
}

/// One plugin set per extension point, and `multiPoint`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plugins {
    pub pre_enqueue: Option<PluginSet>,
    pub queue_sort: Option<PluginSet>,
    pub pre_filter: Option<PluginSet>,
    pub filter: Option<PluginSet>,
    pub post_filter: Option<PluginSet>,
    pub pre_score: Option<PluginSet>,
    pub score: Option<PluginSet>,
    pub reserve: Option<PluginSet>,
    pub permit: Option<PluginSet>,
    pub pre_bind: Option<PluginSet>,
    pub bind: Option<PluginSet>,
    pub post_bind: Option<PluginSet>,
    pub multi_point: Option<PluginSet>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginSet {
    pub enabled: Option<Vec<Plugin>>,
    pub disabled: Option<Vec<Plugin>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plugin {
    pub name: String,
    /// Used only at Score; 0 or absent means the default weight (1).
    pub weight: Option<i32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginConfig {
    pub name: String,
    /// The plugin's `XArgs`, decoded by the plugin's registry entry.
    pub args: Option<serde_json::Value>,
}

/// One `extenders[]` entry as written (upstream's `Extender`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Extender {
    pub url_prefix: Option<String>,
    pub filter_verb: Option<String>,
    pub preempt_verb: Option<String>,
    pub prioritize_verb: Option<String>,
    pub weight: Option<i64>,
    pub bind_verb: Option<String>,
    #[serde(rename = "enableHTTPS")]
    pub enable_https: Option<bool>,
    pub tls_config: Option<ExtenderTlsConfig>,
    /// A Go duration (`30s`, `1m30s`, `500ms`).
    pub http_timeout: Option<String>,
    pub node_cache_capable: Option<bool>,
    pub managed_resources: Option<Vec<ExtenderManagedResource>>,
    pub ignorable: Option<bool>,
}

/// `tlsConfig`: the `*Data` fields are base64 (PEM inside), as upstream's `[]byte` fields are.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtenderTlsConfig {
    pub insecure: Option<bool>,
    pub server_name: Option<String>,
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    #[serde(rename = "caFile")]
    pub ca_file: Option<String>,
    pub cert_data: Option<String>,
    pub key_data: Option<String>,
    #[serde(rename = "caData")]
    pub ca_data: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtenderManagedResource {
    pub name: String,
    pub ignored_by_scheduler: Option<bool>,
}
