//! Labels and label selectors over interned keys and values.

use super::intern::Sym;

/// One label; `int` caches the value parsed as an integer for the `Gt`/`Lt` operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label {
    pub key: Sym,
    pub value: Sym,
    pub int: Option<i64>,
}

/// A label map, sorted by key (keys are unique).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels(Vec<Label>);

impl Labels {
    pub fn new() -> Labels {
        Labels(Vec::new())
    }

    /// Builds from string pairs; a later duplicate key replaces an earlier one.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Labels {
        let mut l = Labels::new();
        for (k, v) in pairs {
            l.insert(Sym::new(k), Sym::new(v));
        }
        l
    }

    pub fn insert(&mut self, key: Sym, value: Sym) {
        let label = Label { key, value, int: value.as_str().parse::<i64>().ok() };
        match self.0.binary_search_by_key(&key, |l| l.key) {
            Ok(i) => self.0[i] = label,
            Err(i) => self.0.insert(i, label),
        }
    }

    pub fn remove(&mut self, key: Sym) {
        if let Ok(i) = self.0.binary_search_by_key(&key, |l| l.key) {
            self.0.remove(i);
        }
    }

    /// The label under `key`. Linear for the few labels most objects have, binary beyond.
    #[inline]
    pub fn get_label(&self, key: Sym) -> Option<&Label> {
        if self.0.len() <= 8 {
            self.0.iter().find(|l| l.key == key)
        } else {
            self.0.binary_search_by_key(&key, |l| l.key).ok().map(|i| &self.0[i])
        }
    }

    #[inline]
    pub fn get(&self, key: Sym) -> Option<Sym> {
        self.get_label(key).map(|l| l.value)
    }

    pub fn contains_key(&self, key: Sym) -> bool {
        self.get_label(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Label> {
        self.0.iter()
    }

    /// True when every label of `subset` is present here with the same value.
    pub fn is_superset_of(&self, subset: &Labels) -> bool {
        subset.0.iter().all(|l| self.get(l.key) == Some(l.value))
    }
}

/// Operators of a label selector requirement (pod affinity, topology spread, PDBs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectorOp {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorRequirement {
    pub key: Sym,
    pub operator: SelectorOp,
    pub values: Vec<Sym>,
}

impl SelectorRequirement {
    pub fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(self.key);
        match self.operator {
            SelectorOp::In => value.is_some_and(|v| self.values.contains(&v)),
            SelectorOp::NotIn => value.is_none_or(|v| !self.values.contains(&v)),
            SelectorOp::Exists => value.is_some(),
            SelectorOp::DoesNotExist => value.is_none(),
        }
    }
}

/// A `metav1.LabelSelector`: match labels AND match expressions. An empty selector matches
/// everything (a `None` selector, where the API allows one, matches nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub match_labels: Labels,
    pub match_expressions: Vec<SelectorRequirement>,
}

impl LabelSelector {
    pub fn matches(&self, labels: &Labels) -> bool {
        labels.is_superset_of(&self.match_labels) && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, op: SelectorOp, values: &[&str]) -> SelectorRequirement {
        SelectorRequirement { key: Sym::new(key), operator: op, values: values.iter().map(|v| Sym::new(v)).collect() }
    }

    #[test]
    fn selector_requirement_table() {
        let labels = Labels::from_pairs([("app", "web"), ("tier", "front")]);
        let cases = [
            (req("app", SelectorOp::In, &["web", "db"]), true),
            (req("app", SelectorOp::In, &["db"]), false),
            (req("app", SelectorOp::NotIn, &["db"]), true),
            (req("missing", SelectorOp::NotIn, &["db"]), true),
            (req("app", SelectorOp::NotIn, &["web"]), false),
            (req("tier", SelectorOp::Exists, &[]), true),
            (req("missing", SelectorOp::Exists, &[]), false),
            (req("missing", SelectorOp::DoesNotExist, &[]), true),
            (req("app", SelectorOp::DoesNotExist, &[]), false),
        ];
        for (i, (r, want)) in cases.iter().enumerate() {
            assert_eq!(r.matches(&labels), *want, "case {i}: {r:?}");
        }
    }

    #[test]
    fn labels_insert_replaces_and_parses_ints() {
        let mut l = Labels::from_pairs([("cores", "8"), ("zone", "a")]);
        l.insert(Sym::new("zone"), Sym::new("b"));
        assert_eq!(l.len(), 2);
        assert_eq!(l.get(Sym::new("zone")), Some(Sym::new("b")));
        assert_eq!(l.get_label(Sym::new("cores")).and_then(|x| x.int), Some(8));
        assert!(LabelSelector::default().matches(&l));
    }
}
