//! NodeLabel: rejects nodes lacking a required label key or carrying a forbidden one, and
//! scores nodes by how many preferred keys they have and dispreferred keys they lack (the
//! seeds' CheckNodeLabelPresence predicate and NodeLabelPriority; upstream removed the plugin
//! in v1.23, and NodeAffinity's Exists / DoesNotExist terms do the same today). Off by default.
//!
//! Only label keys matter, never values. Filter: every `presentLabels` key must be on the
//! node and no `absentLabels` key may be. Score: 100 for each `presentLabelsPreference` key
//! the node has and each `absentLabelsPreference` key it lacks, averaged over all preference
//! keys, so already in 0..=100 with no normalization (0 when there are no preferences).
//! Upstream's policy translation multiplied the plugin's weight by the number of preference
//! labels; a profile that wants that sets the weight itself.

use serde::Deserialize;

use crate::api::{Pod, Sym};
use crate::framework::{ArgsError, CycleState, FilterPlugin, Plugin, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::snapshot::node_info::NodeInfo;
use crate::snapshot::Snapshot;

pub const NAME: &str = "NodeLabel";
pub const REASON: &str = "node(s) didn't have the requested labels";

/// `NodeLabelArgs` (kubescheduler.config.k8s.io/v1beta1, the last API that had it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeLabelArgs {
    /// Accepted and ignored (`NodeLabelArgs`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Accepted and ignored.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Keys every feasible node must have.
    #[serde(default)]
    pub present_labels: Vec<String>,
    /// Keys no feasible node may have.
    #[serde(default)]
    pub absent_labels: Vec<String>,
    /// Keys whose presence raises the score.
    #[serde(default)]
    pub present_labels_preference: Vec<String>,
    /// Keys whose absence raises the score.
    #[serde(default)]
    pub absent_labels_preference: Vec<String>,
}

impl NodeLabelArgs {
    /// Upstream's `ValidateNodeLabelArgs`: no key may be both present and absent, neither in
    /// the filter lists nor in the preference lists. The error names the present-list entry.
    pub fn validate(&self) -> Result<(), ArgsError> {
        no_conflict(&self.present_labels, &self.absent_labels, "presentLabels", "absentLabels")?;
        no_conflict(
            &self.present_labels_preference,
            &self.absent_labels_preference,
            "presentLabelsPreference",
            "absentLabelsPreference",
        )
    }
}

fn no_conflict(present: &[String], absent: &[String], present_path: &str, absent_path: &str) -> Result<(), ArgsError> {
    for (i, label) in absent.iter().enumerate() {
        // Upstream indexes the present list by label, so a repeated label names its last entry.
        if let Some(j) = present.iter().rposition(|p| p == label) {
            return Err(ArgsError::new(
                format!("{present_path}[{j}]"),
                format!("Invalid value: {label:?}: conflict with {absent_path}[{i}]"),
            ));
        }
    }
    Ok(())
}

#[derive(Clone, Debug, Default)]
pub struct NodeLabel {
    pub present: Vec<Sym>,
    pub absent: Vec<Sym>,
    pub present_preference: Vec<Sym>,
    pub absent_preference: Vec<Sym>,
}

impl NodeLabel {
    pub fn new(args: NodeLabelArgs) -> NodeLabel {
        let syms = |v: &[String]| v.iter().map(|s| Sym::new(s)).collect();
        NodeLabel {
            present: syms(&args.present_labels),
            absent: syms(&args.absent_labels),
            present_preference: syms(&args.present_labels_preference),
            absent_preference: syms(&args.absent_labels_preference),
        }
    }

    /// Whether the node's label keys satisfy the presence and absence requirements.
    pub fn fits(&self, node: &NodeInfo) -> bool {
        let labels = &node.node().labels;
        self.present.iter().all(|&k| labels.contains_key(k)) && !self.absent.iter().any(|&k| labels.contains_key(k))
    }

    pub fn score_node(&self, node: &NodeInfo) -> i64 {
        let n = (self.present_preference.len() + self.absent_preference.len()) as i64;
        if n == 0 {
            return 0;
        }
        let labels = &node.node().labels;
        let met = self.present_preference.iter().filter(|&&k| labels.contains_key(k)).count()
            + self.absent_preference.iter().filter(|&&k| !labels.contains_key(k)).count();
        met as i64 * MAX_NODE_SCORE / n
    }
}

impl Plugin for NodeLabel {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl FilterPlugin for NodeLabel {
    fn reads_pods(&self) -> bool {
        false
    }

    #[inline]
    fn filter(&self, _state: &CycleState, _pod: &Pod, node: &NodeInfo) -> Status {
        if self.fits(node) {
            Status::success()
        } else {
            Status::unresolvable(REASON)
        }
    }
}

impl ScorePlugin for NodeLabel {
    #[inline]
    fn score(&self, _state: &CycleState, _pod: &Pod, node: &NodeInfo, _snapshot: &Snapshot) -> Result<i64, Status> {
        Ok(self.score_node(node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Node;
    use crate::framework::plugins::test_util::node_info;
    use crate::framework::Code;

    /// A list of label keys in a case table.
    type Keys = &'static [&'static str];

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn plugin(present: &[&str], absent: &[&str], present_pref: &[&str], absent_pref: &[&str]) -> NodeLabel {
        let args = NodeLabelArgs {
            present_labels: strings(present),
            absent_labels: strings(absent),
            present_labels_preference: strings(present_pref),
            absent_labels_preference: strings(absent_pref),
            ..Default::default()
        };
        assert_eq!(args.validate(), Ok(()));
        NodeLabel::new(args)
    }

    fn node(labels: &[&str]) -> NodeInfo {
        let mut b = Node::builder("n");
        for l in labels {
            b = b.label(l, "any-value");
        }
        node_info(b.build(), &[])
    }

    #[test]
    fn node_label_filter_table() {
        // (description, present, absent, node label keys, fits)
        let cases: [(&str, Keys, Keys, Keys, bool); 7] = [
            ("no requirements", &[], &[], &["foo"], true),
            ("present label there", &["foo"], &[], &["foo", "bar"], true),
            ("present label missing", &["foo", "baz"], &[], &["foo", "bar"], false),
            ("absent label missing", &[], &["retiring"], &["foo"], true),
            ("absent label there", &[], &["retiring"], &["foo", "retiring"], false),
            ("both satisfied", &["foo"], &["retiring"], &["foo"], true),
            ("present ok but absent violated", &["foo"], &["retiring"], &["foo", "retiring"], false),
        ];
        for (desc, present, absent, labels, fits) in cases {
            let st =
                plugin(present, absent, &[], &[]).filter(&CycleState::new(), &Pod::builder("p").build(), &node(labels));
            if fits {
                assert!(st.is_success(), "{desc}: {st}");
            } else {
                assert_eq!(st.code, Code::UnschedulableAndUnresolvable, "{desc}");
                assert_eq!(st.message(), REASON, "{desc}");
            }
        }
    }

    #[test]
    fn node_label_score_table() {
        // (description, present preference, absent preference, node label keys, score)
        let cases: [(&str, Keys, Keys, Keys, i64); 7] = [
            ("no preferences", &[], &[], &["foo"], 0),
            ("preferred present", &["foo"], &[], &["foo"], 100),
            ("preferred missing", &["foo"], &[], &["bar"], 0),
            ("dispreferred missing", &[], &["retiring"], &["foo"], 100),
            ("dispreferred present", &[], &["retiring"], &["retiring"], 0),
            ("two of three met", &["foo", "bar"], &["retiring"], &["foo"], 66),
            ("one of four met", &["a", "b", "c"], &["d"], &["a", "d"], 25),
        ];
        let pod = Pod::builder("p").build();
        for (desc, present, absent, labels, want) in cases {
            let got =
                plugin(&[], &[], present, absent).score(&CycleState::new(), &pod, &node(labels), &Snapshot::default());
            assert_eq!(got, Ok(want), "{desc}");
        }
    }

    #[test]
    fn node_label_args_validation_table() {
        let cases = [
            ("defaults", r#"{}"#, ""),
            ("disjoint lists", r#"{"presentLabels":["a"],"absentLabels":["b"],"presentLabelsPreference":["a"]}"#, ""),
            ("filter conflict", r#"{"presentLabels":["a","b"],"absentLabels":["c","b"]}"#, "presentLabels[1]"),
            (
                "preference conflict",
                r#"{"presentLabelsPreference":["x"],"absentLabelsPreference":["x"]}"#,
                "presentLabelsPreference[0]",
            ),
            (
                "present filter and absent preference may share",
                r#"{"presentLabels":["a"],"absentLabelsPreference":["a"]}"#,
                "",
            ),
        ];
        for (desc, json, want) in cases {
            let args: NodeLabelArgs = serde_json::from_str(json).unwrap_or_else(|e| panic!("{desc}: {e}"));
            match args.validate() {
                Ok(()) => assert_eq!(want, "", "{desc}"),
                Err(e) => assert_eq!(e.field, want, "{desc}: {e}"),
            }
        }
        let e = serde_json::from_str::<NodeLabelArgs>(r#"{"presentLabels":["a"],"absentLabels":["a"]}"#)
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(e.to_string(), r#"presentLabels[0]: Invalid value: "a": conflict with absentLabels[0]"#);
        assert!(serde_json::from_str::<NodeLabelArgs>(r#"{"labels":["a"]}"#).is_err(), "unknown field");
        assert!(serde_json::from_str::<NodeLabelArgs>(r#"{"kind":"NodeLabelArgs","apiVersion":"v1"}"#).is_ok());
    }
}
