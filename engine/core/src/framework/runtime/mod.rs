//! Running a profile's plugins, one file per job:
//!
//! - `prefilter.rs`: PreFilter in order, Skip recorded, the nodes a plugin names narrowing
//!   the cycle.
//! - `filters.rs`: how filters run, the chain on one node (on its NodeInfo, its hot row, or a
//!   row alone).
//! - `nominated_pods.rs`: the nominated pods a cycle must leave room for, gathered per cycle.
//! - `nominated_overlay.rs`: how nominated pods are overlaid, the two filter passes with and
//!   without them.
//! - `score_table.rs`: how scores are combined (normalize, range check, weights, totals) and
//!   the pick of a highest total.
//! - `score_chunks.rs`: scoring chunk by chunk on the worker pool, with kept scores.
//! - `post_filter.rs`: PostFilter in order.
//! - `statuses.rs`: each rejected node's status and the FitError summary of why no node fit.

mod filters;
mod nominated_overlay;
mod nominated_pods;
mod post_filter;
mod prefilter;
mod score_chunks;
mod score_table;
mod statuses;

pub use filters::{
    active_filters, run_filters, run_filters_hot, run_filters_on_row, run_filters_on_tally, ActiveFilters,
};
pub use nominated_overlay::{run_filters_at, run_filters_with_nominated, run_filters_with_nominated_mut, Overlay};
pub use nominated_pods::NominatedPods;
pub use post_filter::run_post_filter_plugins;
pub use prefilter::{narrowed_out_status, run_pre_filter, run_pre_filter_observed};
pub use score_chunks::SCORE_POOL_MIN_NODES;
pub use score_table::{run_scoring, run_scoring_at, run_scoring_observed, ScoreTable};
pub use statuses::{FitError, NodeStatuses};

#[cfg(test)]
mod tests;
