//! Reading a `KubeSchedulerConfiguration` file (`kubescheduler.config.k8s.io/v1`, YAML or
//! JSON): the text is parsed here and built into profiles by the core's
//! [`ksched_engine::config::from_value`], which names the field of every error; its
//! `extenders[]` are connected over HTTP ([`crate::extender::connect`]) and put on every
//! profile.
//!
//! ```
//! let cfg = ksched_k8s::config::parse(
//!     "apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! profiles:
//! - schedulerName: default-scheduler
//!   plugins:
//!     score:
//!       enabled:
//!       - name: ImageLocality
//!         weight: 5
//! ",
//! )
//! .unwrap();
//! let profile = cfg.profile("default-scheduler").unwrap();
//! assert!(profile.score.iter().any(|s| s.plugin.name() == "ImageLocality" && s.weight == 5));
//! ```

#[cfg(test)]
mod tests;

use std::path::Path;

use serde_json::Value;

pub use ksched_engine::config::*;

/// Reads a configuration from YAML (or JSON) text with ksched's in-tree plugins.
pub fn parse(text: &str) -> Result<SchedulerConfig, ConfigError> {
    parse_with(text, &Registry::in_tree())
}

/// Reads a configuration from YAML (or JSON) text with the plugins of `registry`.
pub fn parse_with(text: &str, registry: &Registry) -> Result<SchedulerConfig, ConfigError> {
    let value: Value = yaml_serde::from_str(text).map_err(|e| ConfigError::Syntax { message: e.to_string() })?;
    let mut cfg = from_value(value, registry)?;
    crate::extender::connect(&mut cfg)?;
    Ok(cfg)
}

/// Reads the configuration file at `path` with ksched's in-tree plugins; errors name the file.
pub fn load_file(path: impl AsRef<Path>) -> Result<SchedulerConfig, ConfigError> {
    load_file_with(path, &Registry::in_tree())
}

/// Reads the configuration file at `path` with the plugins of `registry`.
pub fn load_file_with(path: impl AsRef<Path>, registry: &Registry) -> Result<SchedulerConfig, ConfigError> {
    let file = path.as_ref().to_path_buf();
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(source) => return Err(ConfigError::Io { file, source }),
    };
    parse_with(&text, registry).map_err(|e| ConfigError::InFile { file, source: Box::new(e) })
}
