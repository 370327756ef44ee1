//! A `KubeSchedulerConfiguration` (`kubescheduler.config.k8s.io/v1`) document, already parsed
//! into a `serde_json::Value`, built into ksched [`Profile`]s. Reading the YAML or JSON file is
//! the Kubernetes adapters' job (`ksched_k8s::config`).
//!
//! The document's `apiVersion` and `kind` are checked, then
//! decoded strictly: a field upstream does not have is an error naming it; the fields
//! upstream has and ksched has no use for (`leaderElection`, `clientConnection`,
//! `enableProfiling`, `enableContentionProfiling`, `delayCacheUntilActive`) are
//! accepted and ignored; `extenders` are checked here ([`extenders`]) and connected by the
//! adapters. Each profile's plugins are then merged over kube-scheduler v1.35's
//! default plugin set and expanded from `multiPoint` exactly as upstream does (see
//! [`build`](self::build) for the rules), each plugin is constructed once from the
//! [`Registry`] with its `pluginConfig` args, and placed at every extension point it runs at.
//!
//! Where ksched knowingly differs from upstream:
//! - a plugin upstream has but ksched does not yet is skipped, with a line in
//!   [`SchedulerConfig::warnings`], instead of failing (a name unknown to both is an error);
//! - a negative score weight is an error (upstream accepts it and inverts the plugin's scores);
//! - `pluginConfig` for a plugin the profile does not enable, and args given to a plugin that
//!   takes none, are ignored as upstream does, but with a warning.
//!
//! ```
//! use ksched_engine::config::{self, Registry};
//! use serde_json::json;
//!
//! let doc = json!({
//!     "apiVersion": "kubescheduler.config.k8s.io/v1",
//!     "kind": "KubeSchedulerConfiguration",
//!     "profiles": [{
//!         "schedulerName": "default-scheduler",
//!         "plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}}
//!     }]
//! });
//! let cfg = config::from_value(doc, &Registry::in_tree()).unwrap();
//! let profile = cfg.profile("default-scheduler").unwrap();
//! let image = profile.score.iter().find(|s| s.plugin.name() == "ImageLocality").unwrap();
//! assert_eq!(image.weight, 5);
//! ```

pub mod build;
pub mod extenders;
pub mod registry;
pub mod types;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

pub use build::DEFAULT_SCHEDULER_NAME;
pub use extenders::{ExtenderConfig, ExtenderTls, ManagedResource};
pub use registry::{decode_args, ExtensionPoint, PluginInstance, Registry};
pub use types::{API_VERSION, KIND};

use crate::framework::{Profile, Profiles};
use crate::queue::QueueConfig;

/// A configuration that could not be read. `Invalid` names the field path
/// (`profiles[1].plugins.score.enabled[0].weight`).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {}: {source}", .file.display())]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("not a valid YAML document: {message}")]
    Syntax { message: String },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{}: {source}", .file.display())]
    InFile {
        file: PathBuf,
        #[source]
        source: Box<ConfigError>,
    },
}

impl ConfigError {
    /// The field path of an `Invalid` error (also inside `InFile`).
    pub fn field(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { field, .. } => Some(field),
            ConfigError::InFile { source, .. } => source.field(),
            _ => None,
        }
    }
}

/// What a configuration file sets up: the profiles (each with its plugins, weights,
/// percentageOfNodesToScore and parallelism) and the queue's backoff.
pub struct SchedulerConfig {
    pub profiles: Vec<Profile>,
    /// `parallelism` (default 16), also set on every profile.
    pub parallelism: usize,
    /// The top-level `percentageOfNodesToScore`; each profile has its own or this one.
    pub percentage_of_nodes_to_score: Option<u32>,
    /// `podInitialBackoffSeconds` (default 1 s).
    pub pod_initial_backoff: Duration,
    /// `podMaxBackoffSeconds` (default 10 s).
    pub pod_max_backoff: Duration,
    /// `extenders[]`, checked and in calling order; the adapters build clients from them
    /// and put them on every profile (`Profile::extenders`).
    pub extenders: Vec<ExtenderConfig>,
    /// What was accepted but not applied (plugins ksched lacks, ignored args).
    pub warnings: Vec<String>,
    /// The feature gates the profiles were built under (the registry's); the queue gets them
    /// too (`queue_config`).
    pub feature_gates: crate::features::FeatureGates,
}

impl SchedulerConfig {
    pub fn profile(&self, scheduler_name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.scheduler_name == scheduler_name)
    }

    /// The `default-scheduler` profile, or the first one.
    pub fn default_profile(&self) -> &Profile {
        self.profile(DEFAULT_SCHEDULER_NAME).unwrap_or(&self.profiles[0])
    }

    /// Every profile, for a scheduler that runs them all (each pod by its `schedulerName`).
    pub fn all_profiles(&self) -> Profiles {
        Profiles::new(self.profiles.clone()).unwrap_or_else(|| Profile::default_profile_with(self.feature_gates).into())
    }

    /// A queue configuration with this configuration's backoff.
    pub fn queue_config(&self) -> QueueConfig {
        QueueConfig {
            initial_backoff: self.pod_initial_backoff,
            max_backoff: self.pod_max_backoff,
            ..QueueConfig::new().with_feature_gates(self.feature_gates)
        }
    }
}

impl fmt::Debug for SchedulerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.profiles.iter().map(|p| p.scheduler_name.as_str()).collect();
        f.debug_struct("SchedulerConfig")
            .field("profiles", &names)
            .field("parallelism", &self.parallelism)
            .field("percentage_of_nodes_to_score", &self.percentage_of_nodes_to_score)
            .field("pod_initial_backoff", &self.pod_initial_backoff)
            .field("pod_max_backoff", &self.pod_max_backoff)
            .field("extenders", &self.extenders)
            .field("warnings", &self.warnings)
            .field("feature_gates", &self.feature_gates)
            .finish()
    }
}

/// Builds the configuration from an already parsed document.
pub fn from_value(value: Value, registry: &Registry) -> Result<SchedulerConfig, ConfigError> {
    let invalid = |field: &str, message: String| ConfigError::Invalid { field: field.to_owned(), message };
    let Value::Object(doc) = &value else {
        return Err(invalid("", format!("expected a {KIND} mapping, got {}", kind_of(&value))));
    };
    for (field, want) in [("apiVersion", API_VERSION), ("kind", KIND)] {
        match doc.get(field) {
            Some(Value::String(s)) if s == want => {}
            None | Some(Value::Null) => return Err(invalid(field, format!("Required value: must be {want:?}"))),
            Some(other) => {
                return Err(invalid(field, format!("Unsupported value: {other}: ksched reads {want:?}")));
            }
        }
    }
    let cfg: types::KubeSchedulerConfiguration = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ConfigError::Invalid {
            field: if path == "." { String::new() } else { path },
            message: short_serde_message(&e.into_inner().to_string()),
        }
    })?;
    build::build(&cfg, registry)
}

pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "an empty document",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// serde's message without the list of expected fields that follows an unknown one.
pub fn short_serde_message(message: &str) -> String {
    match message.find(", expected one of") {
        Some(i) if message.starts_with("unknown field") => message[..i].to_owned(),
        _ => message.to_owned(),
    }
}
