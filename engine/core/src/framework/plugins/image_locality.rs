//! ImageLocality: prefers nodes that already have the pod's images, weighted by image size
//! and by how widely the image is spread (to avoid piling pods on the few nodes with it).

use crate::api::Pod;
use crate::framework::{ColumnScoring, CycleState, Plugin, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::{Columns, Snapshot};

pub const NAME: &str = "ImageLocality";
const MB: i64 = 1024 * 1024;
/// Below this sum of scaled image sizes a node scores 0.
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: at or above this sum a node scores 100.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

#[derive(Debug, Default)]
pub struct ImageLocality;

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }

    crate::framework::signature::sign_fragments!(IMAGE_NAMES => image_names);
}

/// Sum over the pod's (init and regular) container images present on the node of
/// `size * nodes_with_image / total_nodes`, each term truncated.
pub fn sum_image_scores(pod: &Pod, node: &NodeInfo, snapshot: &Snapshot) -> i64 {
    let total = snapshot.num_nodes().max(1) as f64;
    let mut sum = 0;
    for &image in pod.images() {
        if node.image_size(image).is_some() {
            if let Some(state) = snapshot.image(image) {
                sum += (state.size_bytes as f64 * (state.num_nodes as f64 / total)) as i64;
            }
        }
    }
    sum
}

/// Maps the sum onto 0..=100 between the thresholds.
pub fn calculate_priority(sum: i64, num_containers: usize) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD * num_containers.max(1) as i64;
    let sum = sum.clamp(MIN_THRESHOLD, max);
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

impl ScorePlugin for ImageLocality {
    fn normalizing(&self) -> crate::framework::Normalizing {
        crate::framework::Normalizing::Unchanged
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &Pod, node: &NodeInfo, snapshot: &Snapshot) -> Result<i64, Status> {
        if pod.images().is_empty() {
            return Ok(0);
        }
        Ok(calculate_priority(sum_image_scores(pod, node, snapshot), pod.images().len()))
    }

    /// When no node has any of the pod's images, every node scores 0 without a look at it.
    fn score_columns(
        &self,
        _state: &CycleState,
        pod: &Pod,
        _columns: &Columns,
        _positions: &[u32],
        snapshot: &Snapshot,
        _out: &mut Vec<i64>,
    ) -> Result<ColumnScoring, Status> {
        Ok(if no_image_on_any_node(pod, snapshot) { ColumnScoring::AllZero } else { ColumnScoring::Declined })
    }
}

/// None of `pod`'s images is on a node of the snapshot: it scores 0 everywhere.
fn no_image_on_any_node(pod: &Pod, snapshot: &Snapshot) -> bool {
    !pod.images().iter().any(|&i| snapshot.image(i).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Node;
    use crate::framework::plugins::test_util::node_info;

    #[test]
    fn image_locality_score_table() {
        // Two nodes; "big:1" (500 MB) on both, "small:1" (10 MB) on one.
        let a = node_info(Node::builder("a").image(&["big:1"], 500 * MB).image(&["small:1"], 10 * MB).build(), &[]);
        let b = node_info(Node::builder("b").image(&["big:1"], 500 * MB).build(), &[]);
        let snap = Snapshot::from_node_infos(vec![a.clone(), b.clone()]);
        let pod = |images: &[&str]| {
            let mut p = Pod::builder("p");
            for i in images {
                p = p.container(i, &[]);
            }
            p.build()
        };
        let cases = [
            // 500 MB * 2/2 = 500 MB: 100 * (500-23) / (1000-23) = 48
            ("big image everywhere", pod(&["big:1"]), &a, 48),
            // 10 MB * 1/2 = 5 MB < 23 MB → 0
            ("small image below threshold", pod(&["small:1"]), &a, 0),
            ("image absent", pod(&["other"]), &b, 0),
            // two containers: max 2000 MB; 500 MB + 5 MB = 505 MB → 100*(505-23)/(2000-23) = 24
            ("two containers", pod(&["big:1", "small:1"]), &a, 24),
            // untagged names match ":latest"
            ("tag normalization", pod(&["big"]), &a, 0),
        ];
        for (desc, p, node, want) in cases {
            assert_eq!(ImageLocality.score(&CycleState::new(), &p, node, &snap).unwrap(), want, "{desc}");
        }
        let latest = node_info(Node::builder("c").image(&["app:latest"], 900 * MB).build(), &[]);
        let snap = Snapshot::from_node_infos(vec![latest.clone()]);
        assert_eq!(
            ImageLocality.score(&CycleState::new(), &pod(&["app"]), &latest, &snap).unwrap(),
            100 * (900 - 23) / (1000 - 23)
        );
    }
}
