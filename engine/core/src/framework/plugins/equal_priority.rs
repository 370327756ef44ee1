//! EqualPriority: scores every node the same (the seeds' EqualPriority priority). Off by
//! default.
//!
//! Upstream's EqualPriorityMap gave every node a raw score of 1, and it kept giving 1 when
//! the score range grew from 0..=10 to 0..=100; it had no reduce (normalize) step. We do the
//! same: 1 per node, no normalization. Normalizing (scaling the largest score to 100) would
//! only add `99 * weight` to every node's total: a constant never changes which node wins, so
//! the plugin's one effect is to add `weight` to each total, as upstream's did. (Upstream also
//! used it as the whole scoring when a profile had no priorities at all; ksched's scheduler
//! breaks ties among equal totals at random either way.)

use crate::api::Pod;
use crate::framework::{CycleState, Plugin, ScorePlugin, Status};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

pub const NAME: &str = "EqualPriority";

/// The raw (and final) score of every node.
pub const SCORE: i64 = 1;

#[derive(Clone, Copy, Debug, Default)]
pub struct EqualPriority;

impl Plugin for EqualPriority {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl ScorePlugin for EqualPriority {
    #[inline]
    fn score(&self, _state: &CycleState, _pod: &Pod, _node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        Ok(SCORE)
    }

    fn score_nodes(
        &self,
        _state: &CycleState,
        _pod: &Pod,
        nodes: &[&NodeInfo],
        _snapshot: &Snapshot,
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        out.resize(out.len() + nodes.len(), SCORE);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, ResourceName::*};
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::profile::WeightedScore;
    use crate::framework::runtime::{run_scoring, ScoreTable};
    use crate::framework::Profile;
    use std::sync::Arc;

    #[test]
    fn equal_priority_scores_every_node_one_times_weight() {
        let busy = Pod::builder("busy").container("i", &[(Cpu, 3000)]).build();
        let nodes = [
            node_info(Node::builder("a").resources(4000, 1 << 30, 10).build(), &[]),
            node_info(Node::builder("b").resources(4000, 1 << 30, 10).build(), &[busy]),
            node_info(Node::builder("c").build(), &[]),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let snap = Snapshot::from_node_infos(nodes.to_vec());
        let pod = Pod::builder("p").build();
        let cases = [("weight 1", 1, [1, 1, 1]), ("weight 5", 5, [5, 5, 5])];
        for (desc, weight, want) in cases {
            let profile = Profile {
                score: vec![WeightedScore { plugin: Arc::new(EqualPriority), weight }],
                ..Profile::empty("test")
            };
            let mut table = ScoreTable::default();
            run_scoring(&profile, &mut CycleState::new(), &pod, &snap, &refs, &mut table).unwrap();
            assert_eq!(table.totals(), want, "{desc}");
        }
        let single: Vec<i64> =
            refs.iter().map(|n| EqualPriority.score(&CycleState::new(), &pod, n, &snap).unwrap()).collect();
        assert_eq!(single, [SCORE; 3]);
    }

    /// Scores the node at index i with `self.0[i]`.
    struct Given(Vec<i64>);

    impl Plugin for Given {
        fn name(&self) -> &'static str {
            "Given"
        }
    }

    impl ScorePlugin for Given {
        fn score(&self, _: &CycleState, _: &Pod, node: &NodeInfo, _: &Snapshot) -> Result<i64, Status> {
            let i = ["a", "b", "c"].iter().position(|&n| node.name() == crate::api::Sym::new(n)).unwrap_or(0);
            Ok(self.0[i])
        }
    }

    #[test]
    fn scores_outside_0_to_100_fail_the_cycle_naming_the_plugin_and_score() {
        let nodes = [
            node_info(Node::builder("a").build(), &[]),
            node_info(Node::builder("b").build(), &[]),
            node_info(Node::builder("c").build(), &[]),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let snap = Snapshot::from_node_infos(nodes.to_vec());
        let pod = Pod::builder("p").build();
        // (scores, weight, the score named in the error or None for success)
        let cases: [(&[i64], i64, Option<i64>); 5] = [
            (&[0, 100, 50], 3, None),
            (&[0, 101, 50], 3, Some(101)),
            (&[-1, 0, 0], 1, Some(-1)),
            (&[7, 8, i64::MIN], 2, Some(i64::MIN)),
            (&[100, 100, 100], 0, None),
        ];
        for (scores, weight, bad) in cases {
            let profile = Profile {
                score: vec![WeightedScore { plugin: Arc::new(Given(scores.to_vec())), weight }],
                ..Profile::empty("test")
            };
            let mut table = ScoreTable::default();
            let got = run_scoring(&profile, &mut CycleState::new(), &pod, &snap, &refs, &mut table);
            match bad {
                None => {
                    assert!(got.is_ok(), "{scores:?}: {got:?}");
                    assert_eq!(table.totals(), scores.iter().map(|s| s * weight).collect::<Vec<_>>());
                }
                Some(s) => {
                    let msg = got.expect_err("out of range").message();
                    assert!(msg.contains("\"Given\"") && msg.contains(&format!("invalid score {s},")), "{msg}");
                }
            }
        }
    }
}
