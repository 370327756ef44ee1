//! ksched's engine: a faithful, fast re-implementation of kube-scheduler's core.
//!
//! The pipeline: queue → snapshot → filter → score → assume → bind.
//!
//! * [`api`]: plain data (pods, nodes, resources, interned labels, taints, affinity).
//! * [`cache`]: nodes and the pods bound or assumed on them, the pod state machine, and the
//!   publisher of copy-on-write [`snapshot`]s.
//! * [`snapshot`]: `NodeInfo` and the snapshots plugins read, with the cluster objects
//!   published beside the nodes (namespaces, services, controllers, storage, PriorityClasses,
//!   PDBs: plain data).
//! * [`queue`]: pods waiting to be scheduled (PriorityQueue with backoff, FIFO, the nominator).
//! * [`framework`]: the plugin traits, `Status`, `CycleState`, profiles and the in-tree plugins.
//! * [`features`]: feature gates (v1.35's defaults; what each changes in ksched).
//! * [`config`]: a `KubeSchedulerConfiguration` file read into profiles (plugin registry,
//!   upstream's default plugins and multiPoint expansion).
//! * [`parallel`]: sampled filtering across a worker pool, deterministic in its result.
//! * [`scheduler`]: `schedule_one` wires them together.
//! * [`observer`]: the cycle's observer hook (explain, golden and tests see the real cycle).
//! * [`cluster`]: the `ClusterApi` the scheduler binds, deletes victims and nominates through.
//!
//! This crate knows no YAML, no Kubernetes API types and no simulation: `ksched-k8s` reads
//! Kubernetes objects and files, `ksched-sim` plays the cluster around the scheduler.
//!
//! Arrows (kept by `bench-harness/tests/layering.rs`, which fails on an import against them;
//! this crate has no known exception):
//!
//! * this crate imports no other ksched crate, no YAML crate and no k8s-openapi;
//! * `scheduler` → `framework`, `queue`, `cache`, `parallel`, `config`, `cluster`, `observer`;
//! * `config` → `framework` (the registry declares and builds the plugins);
//! * `framework` → `snapshot`, `api`, `parallel`: never `queue`, `cache`, `scheduler` or
//!   `config`, and it names no plugin (nominations reach it as `framework::PodNominator`);
//! * `framework::plugins` → `framework`, `snapshot`, `api`: never `queue`, `cache`,
//!   `scheduler` or `config`;
//! * `queue` and `cache` → `snapshot`, `api`: never each other, never the scheduler;
//! * `snapshot` → `api`.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use ksched_engine::api::{Node, Pod, ResourceName::*, Sym};
//! use ksched_engine::cache::Cache;
//! use ksched_engine::cluster::{ApiError, BindError, ClusterApi};
//! use ksched_engine::framework::Profile;
//! use ksched_engine::queue::{PriorityQueue, QueueConfig, SchedulingQueue};
//! use ksched_engine::scheduler::{CycleOutcome, Scheduler};
//!
//! /// The API server's side: a bind reaches the cache at once, as the informer's Add would.
//! struct Binder(Arc<Cache>);
//! impl ClusterApi for Binder {
//!     fn bind(&self, pod: &Pod, node: Sym) -> Result<(), BindError> {
//!         self.0.add_pod(&pod.with_node(node)).map_err(|e| BindError { pod: pod.key(), node, why: e.to_string() })
//!     }
//!     fn delete_victim(&self, _: &Pod) -> Result<(), ApiError> { Ok(()) }
//!     fn set_nominated_node(&self, _: &Pod, _: Option<Sym>) -> Result<(), ApiError> { Ok(()) }
//! }
//!
//! let cache = Arc::new(Cache::upstream());
//! cache.add_node(Node::builder("node-a").resources(4000, 32 << 30, 110).build()).unwrap();
//! let queue = Arc::new(PriorityQueue::new(QueueConfig::new()));
//! queue.add(Pod::builder("web").container("nginx", &[(Cpu, 100), (Memory, 500 << 20)]).build()).unwrap();
//! let mut sched = Scheduler::new(cache.clone(), queue, Profile::default_profile(), Arc::new(Binder(cache.clone())), 42);
//! match sched.schedule_one() {
//!     Some(CycleOutcome::Scheduled { decision, .. }) => assert_eq!(decision.node.as_str(), "node-a"),
//!     other => panic!("{other:?}"),
//! }
//! assert!(cache.check_invariants().is_empty());
//! ```

pub mod api;
pub mod cache;
pub mod cluster;
pub mod config;
pub mod features;
pub mod framework;
pub mod observer;
pub mod parallel;
pub mod queue;
pub mod scheduler;
pub mod snapshot;
pub mod sync;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
pub mod util;
