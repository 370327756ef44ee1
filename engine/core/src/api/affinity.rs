//! Node selectors and affinity, pod (anti-)affinity terms, taints and tolerations.

use super::intern::Sym;
use super::labels::{LabelSelector, Labels};

/// Operators of a node selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeSelectorOp {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

/// One requirement of a node selector term. Built with `new`, which checks the values the way
/// the API's selector conversion does; an invalid requirement makes its term match nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSelectorRequirement {
    pub key: Sym,
    pub operator: NodeSelectorOp,
    pub values: Vec<Sym>,
    int_value: Option<i64>,
    valid: bool,
}

impl NodeSelectorRequirement {
    pub fn new(key: &str, operator: NodeSelectorOp, values: &[&str]) -> Self {
        Self::from_syms(Sym::new(key), operator, values.iter().map(|v| Sym::new(v)).collect())
    }

    pub fn from_syms(key: Sym, operator: NodeSelectorOp, values: Vec<Sym>) -> Self {
        let int_value = match values.as_slice() {
            [v] => v.as_str().parse::<i64>().ok(),
            _ => None,
        };
        let valid = match operator {
            NodeSelectorOp::In | NodeSelectorOp::NotIn => !values.is_empty(),
            NodeSelectorOp::Exists | NodeSelectorOp::DoesNotExist => values.is_empty(),
            NodeSelectorOp::Gt | NodeSelectorOp::Lt => int_value.is_some(),
        };
        NodeSelectorRequirement { key, operator, values, int_value, valid }
    }

    /// Matches against node labels (`matchExpressions`).
    #[inline]
    pub fn matches_labels(&self, labels: &Labels) -> bool {
        if !self.valid {
            return false;
        }
        let label = labels.get_label(self.key);
        match self.operator {
            NodeSelectorOp::In => label.is_some_and(|l| self.values.contains(&l.value)),
            NodeSelectorOp::NotIn => label.is_none_or(|l| !self.values.contains(&l.value)),
            NodeSelectorOp::Exists => label.is_some(),
            NodeSelectorOp::DoesNotExist => label.is_none(),
            NodeSelectorOp::Gt => {
                matches!((label.and_then(|l| l.int), self.int_value), (Some(v), Some(want)) if v > want)
            }
            NodeSelectorOp::Lt => {
                matches!((label.and_then(|l| l.int), self.int_value), (Some(v), Some(want)) if v < want)
            }
        }
    }

    /// Matches against node fields (`matchFields`): only `metadata.name`, with `In`/`NotIn` and
    /// exactly one value, as the API accepts.
    #[inline]
    pub fn matches_fields(&self, node_name: Sym) -> bool {
        let field = if self.key == Sym::METADATA_NAME { node_name } else { Sym::EMPTY };
        match (self.operator, self.values.as_slice()) {
            (NodeSelectorOp::In, [v]) => field == *v,
            (NodeSelectorOp::NotIn, [v]) => field != *v,
            _ => false,
        }
    }
}

/// Requirements ANDed. A term with no requirements matches nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    pub match_expressions: Vec<NodeSelectorRequirement>,
    pub match_fields: Vec<NodeSelectorRequirement>,
}

impl NodeSelectorTerm {
    #[inline]
    pub fn matches(&self, labels: &Labels, node_name: Sym) -> bool {
        if self.match_expressions.is_empty() && self.match_fields.is_empty() {
            return false;
        }
        self.match_expressions.iter().all(|r| r.matches_labels(labels))
            && self.match_fields.iter().all(|r| r.matches_fields(node_name))
    }
}

/// Terms ORed. No terms matches nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelector {
    pub terms: Vec<NodeSelectorTerm>,
}

impl NodeSelector {
    #[inline]
    pub fn matches(&self, labels: &Labels, node_name: Sym) -> bool {
        self.terms.iter().any(|t| t.matches(labels, node_name))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredSchedulingTerm {
    pub weight: i32,
    pub preference: NodeSelectorTerm,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAffinity {
    pub required: Option<NodeSelector>,
    pub preferred: Vec<PreferredSchedulingTerm>,
}

/// A pod (anti-)affinity term: pods matching `label_selector` in the given namespaces, within
/// the topology domain named by `topology_key`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodAffinityTerm {
    /// `None` matches no pods.
    pub label_selector: Option<LabelSelector>,
    /// Empty with no namespace selector means the pod's own namespace.
    pub namespaces: Vec<Sym>,
    /// `Some(empty)` selects all namespaces.
    pub namespace_selector: Option<LabelSelector>,
    pub topology_key: Sym,
    pub match_label_keys: Vec<Sym>,
    pub mismatch_label_keys: Vec<Sym>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedPodAffinityTerm {
    pub weight: i32,
    pub term: PodAffinityTerm,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodAffinity {
    pub required: Vec<PodAffinityTerm>,
    pub preferred: Vec<WeightedPodAffinityTerm>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Affinity {
    pub node_affinity: Option<NodeAffinity>,
    pub pod_affinity: Option<PodAffinity>,
    pub pod_anti_affinity: Option<PodAffinity>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    pub fn parse(s: &str) -> Option<TaintEffect> {
        match s {
            "NoSchedule" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taint {
    pub key: Sym,
    pub value: Sym,
    pub effect: TaintEffect,
}

impl Taint {
    pub fn new(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint { key: Sym::new(key), value: Sym::new(value), effect }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TolerationOp {
    Equal,
    Exists,
}

/// A toleration. An empty key with `Exists` tolerates every taint; `effect: None` matches
/// every effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Toleration {
    pub key: Sym,
    pub operator: TolerationOp,
    pub value: Sym,
    pub effect: Option<TaintEffect>,
    pub toleration_seconds: Option<i64>,
}

impl Toleration {
    pub fn new(key: &str, operator: TolerationOp, value: &str, effect: Option<TaintEffect>) -> Toleration {
        Toleration { key: Sym::new(key), operator, value: Sym::new(value), effect, toleration_seconds: None }
    }

    #[inline]
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOp::Exists => true,
            TolerationOp::Equal => self.value == taint.value,
        }
    }
}

/// True when some toleration tolerates `taint`.
#[inline]
pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use NodeSelectorOp::*;

    #[test]
    fn node_selector_requirement_table() {
        let labels = Labels::from_pairs([("zone", "a"), ("cores", "8"), ("name", "x")]);
        let cases: &[(&str, NodeSelectorOp, &[&str], bool)] = &[
            ("zone", In, &["a", "b"], true),
            ("zone", In, &["b"], false),
            ("zone", In, &[], false),
            ("zone", NotIn, &["b"], true),
            ("absent", NotIn, &["b"], true),
            ("zone", NotIn, &["a"], false),
            ("zone", Exists, &[], true),
            ("zone", Exists, &["a"], false),
            ("absent", DoesNotExist, &[], true),
            ("zone", DoesNotExist, &[], false),
            ("cores", Gt, &["4"], true),
            ("cores", Gt, &["8"], false),
            ("cores", Lt, &["9"], true),
            ("cores", Lt, &["8"], false),
            ("cores", Gt, &["x"], false),
            ("cores", Gt, &["1", "2"], false),
            ("name", Gt, &["1"], false),
            ("absent", Lt, &["1"], false),
        ];
        for (i, (key, op, values, want)) in cases.iter().enumerate() {
            let r = NodeSelectorRequirement::new(key, *op, values);
            assert_eq!(r.matches_labels(&labels), *want, "case {i}: {key} {op:?} {values:?}");
        }
    }

    #[test]
    fn node_selector_terms_or_requirements_and() {
        let labels = Labels::from_pairs([("zone", "a"), ("disk", "ssd")]);
        let node = Sym::new("node-1");
        let t = |reqs: Vec<NodeSelectorRequirement>| NodeSelectorTerm { match_expressions: reqs, match_fields: vec![] };
        let zone_a = || NodeSelectorRequirement::new("zone", In, &["a"]);
        let disk_hdd = || NodeSelectorRequirement::new("disk", In, &["hdd"]);
        assert!(!NodeSelector { terms: vec![] }.matches(&labels, node));
        assert!(!NodeSelector { terms: vec![t(vec![])] }.matches(&labels, node));
        assert!(!NodeSelector { terms: vec![t(vec![zone_a(), disk_hdd()])] }.matches(&labels, node));
        assert!(NodeSelector { terms: vec![t(vec![disk_hdd()]), t(vec![zone_a()])] }.matches(&labels, node));
        let by_name = NodeSelectorTerm {
            match_expressions: vec![],
            match_fields: vec![NodeSelectorRequirement::new("metadata.name", In, &["node-1"])],
        };
        assert!(by_name.matches(&labels, node));
        assert!(!by_name.matches(&labels, Sym::new("node-2")));
    }

    #[test]
    fn toleration_table() {
        use TaintEffect::*;
        let taint = Taint::new("dedicated", "gpu", NoSchedule);
        let cases = [
            (Toleration::new("dedicated", TolerationOp::Equal, "gpu", Some(NoSchedule)), true),
            (Toleration::new("dedicated", TolerationOp::Equal, "gpu", None), true),
            (Toleration::new("dedicated", TolerationOp::Equal, "cpu", None), false),
            (Toleration::new("dedicated", TolerationOp::Exists, "", None), true),
            (Toleration::new("dedicated", TolerationOp::Exists, "", Some(NoExecute)), false),
            (Toleration::new("", TolerationOp::Exists, "", None), true),
            (Toleration::new("other", TolerationOp::Exists, "", None), false),
        ];
        for (i, (tol, want)) in cases.iter().enumerate() {
            assert_eq!(tol.tolerates(&taint), *want, "case {i}: {tol:?}");
        }
    }
}
