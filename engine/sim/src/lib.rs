//! The simulated cluster around ksched's engine: what plays the API server, the kubelets, the
//! informers and the controllers, on one mock clock.
//!
//! * [`cluster`]: the in-memory cluster (binds, graceful deletion of victims, nominations),
//!   implementing the core's `ClusterApi`.
//! * [`admission`]: priority admission at pod creation.
//! * [`disruption`]: the disruption controller's PodDisruptionBudget status.
//! * [`volumes`]: the PV controller and provisioners completing VolumeBinding's bindings
//!   (the engine's `cluster::volumes`, which the golden replay applies too).
//! * [`simulation`]: the one driver: the cache, queue, cluster and scheduler on simulated
//!   time, with event sources and observers.
//! * [`observe`]: observers every front end shares (outcome counts, attempt latency, RSS).
//! * [`timeline`]: what a run looks like over simulated time (pending, allocation,
//!   fragmentation, scheduling delay, unschedulable reasons), sampled every step.
//! * [`soak`]: long runs under churn and injected faults (a fault-injecting cluster), checking
//!   that no pod is lost or counted twice.
//!
//! Arrows (kept by `bench-harness/tests/layering.rs`): this crate imports `ksched-engine` only,
//! never `ksched-k8s` (which reads Kubernetes files) or the `ksched` command's crate.

pub mod admission;
pub mod cluster;
pub mod disruption;
pub mod dra;
pub mod observe;
pub mod simulation;
pub mod soak;
pub mod timeline;

pub use cluster::InMemoryCluster;
pub use ksched_engine::cluster::volumes;
pub use simulation::Simulation;
