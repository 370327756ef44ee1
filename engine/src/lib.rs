//! ksched's engine: a faithful, fast re-implementation of kube-scheduler's core.
//!
//! The pipeline: queue → snapshot → filter → score → assume → bind.
//!
//! * [`api`]: plain data (pods, nodes, resources, interned labels, taints, affinity).
//! * [`cache`]: nodes and the pods bound or assumed on them, the pod state machine, and the
//!   publisher of copy-on-write [`snapshot`]s.
//! * [`queue`]: pods waiting to be scheduled (PriorityQueue with backoff, FIFO, the nominator).
//! * [`framework`]: the plugin traits, `Status`, `CycleState`, profiles and the in-tree plugins.
//! * [`config`]: a `KubeSchedulerConfiguration` file read into profiles (plugin registry,
//!   upstream's default plugins and multiPoint expansion).
//! * [`parallel`]: sampled filtering across a worker pool, deterministic in its result.
//! * [`scheduler`]: `schedule_one` wires them together.
//! * [`soak`]: long runs under churn and injected faults (a fault-injecting cluster), checking
//!   that no pod is lost or counted twice.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use ksched_engine::api::{Node, Pod, ResourceName::*};
//! use ksched_engine::cache::Cache;
//! use ksched_engine::framework::Profile;
//! use ksched_engine::queue::{PriorityQueue, QueueConfig, SchedulingQueue};
//! use ksched_engine::scheduler::{CycleOutcome, InMemoryCluster, Scheduler};
//!
//! let cache = Arc::new(Cache::new(Duration::from_secs(30)));
//! cache.add_node(Node::builder("node-a").resources(4000, 32 << 30, 110).build()).unwrap();
//! let queue = Arc::new(PriorityQueue::new(QueueConfig::new()));
//! queue.add(Pod::builder("web").container("nginx", &[(Cpu, 100), (Memory, 500 << 20)]).build()).unwrap();
//! let cluster = Arc::new(InMemoryCluster::new(cache.clone()));
//! let mut sched = Scheduler::new(cache.clone(), queue, Profile::default_profile(), cluster, 42);
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
pub mod framework;
#[cfg(feature = "k8s")]
pub mod k8s;
pub mod objects;
pub mod parallel;
pub mod queue;
pub mod scheduler;
pub mod sim;
pub mod snapshot;
pub mod soak;
pub mod sync;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
pub mod util;
