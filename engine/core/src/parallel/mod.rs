//! Parallel work for a scheduling cycle, independent of what is searched: how many feasible
//! nodes a cycle needs (`num_feasible_nodes_to_find`), the worker pool (`pool`) and the
//! ordered search with early cancel (`search`) that the filter (`framework::feasible`) and
//! preemption's dry run (`default_preemption`) both run on, and whether a cycle runs on the
//! pool at all (`gate`). Imports nothing from the framework.

pub mod chunks;
pub mod gate;
pub mod pool;
pub mod search;

pub use pool::{available_parallelism, effective_parallelism, WorkerPool};

/// Below this many nodes every node is checked.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never goes below this.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// How many feasible nodes to look for among `num_all_nodes`, given the profile's
/// percentageOfNodesToScore (`None`/0 = adaptive: 50% − nodes/125, at least 5%).
pub fn num_feasible_nodes_to_find(percentage: Option<u32>, num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let mut pct = percentage.unwrap_or(0) as i64;
    if pct >= 100 {
        return num_all_nodes;
    }
    if pct == 0 {
        pct = (50 - num_all_nodes as i64 / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let n = (num_all_nodes as i64 * pct / 100) as usize;
    n.max(MIN_FEASIBLE_NODES_TO_FIND)
}

#[cfg(test)]
mod tests;
