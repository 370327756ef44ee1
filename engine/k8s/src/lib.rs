//! Kubernetes objects → engine objects. The objects are read with k8s-openapi's types (serde),
//! then converted here; every rejection names the object and the field.
//!
//! API defaulting is applied where the scheduler depends on it (the API server would have done
//! it before the scheduler saw the object): namespace `default`, requests defaulted from limits,
//! `TCP` ports, a host-network pod's host ports, the default scheduler name, spread-constraint policies.
//!
//! Arrows (kept by `bench-harness/tests/layering.rs`): this crate imports `ksched-engine`,
//! never `ksched-sim` or the `ksched` command's crate. Manifests loaded into a `Simulation`
//! and the workload controllers as the simulation's event sources live in the command's crate
//! (`bench-harness/src/load.rs`, `load/live.rs`), which imports both.

pub mod config;
pub mod controllers;
mod convert;
pub mod dra;
pub mod extender;
pub mod golden;
pub mod manifest;
pub mod perf_workload;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
pub mod trace;
pub mod unmodelled;

pub use convert::{
    csi_node_from_k8s, namespace_from_k8s, node_from_k8s, parse_run_duration, pdb_from_k8s, pod_from_k8s,
    pod_from_k8s_with, priority_class_from_k8s, pv_from_k8s, pvc_from_k8s, service_from_k8s, storage_class_from_k8s,
    NAMESPACE_NAME_LABEL, RUN_DURATION_ANNOTATION,
};

use thiserror::Error;

/// A Kubernetes object could not be turned into an engine object.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{object}: {field}: {message}")]
pub struct ConvertError {
    /// `pod default/web-1`, `node node-3`, `nodes.json[4]`.
    pub object: String,
    /// The field path inside the object: `spec.containers[0].resources.requests.cpu`.
    pub field: String,
    pub message: String,
}

impl ConvertError {
    pub(crate) fn new(object: &str, field: impl Into<String>, message: impl Into<String>) -> ConvertError {
        ConvertError { object: object.to_owned(), field: field.into(), message: message.into() }
    }
}
