//! NodeTree: nodes grouped by zone (region + zone labels), listed round-robin across zones so
//! that consecutive nodes come from different zones and a sampled prefix spreads over zones.

use crate::api::{Node, Sym};
use crate::util::hash::FxHashMap;

pub type ZoneKey = (Sym, Sym);

#[derive(Clone, Debug, Default)]
pub struct NodeTree {
    /// Zones in the order they first appeared, each with its nodes in insertion order.
    zones: Vec<(ZoneKey, Vec<Sym>)>,
    /// Every node's zone, for O(1) membership.
    members: FxHashMap<Sym, ZoneKey>,
    num_nodes: usize,
}

impl NodeTree {
    pub fn add(&mut self, node: &Node) {
        if self.members.contains_key(&node.name) {
            return;
        }
        let zone = node.zone_key();
        match self.zones.iter_mut().find(|(z, _)| *z == zone) {
            Some((_, names)) => names.push(node.name),
            None => self.zones.push((zone, vec![node.name])),
        }
        self.members.insert(node.name, zone);
        self.num_nodes += 1;
    }

    /// Removes `node` from its zone; returns whether it was there. Empty zones are dropped.
    pub fn remove(&mut self, node: &Node) -> bool {
        let Some(zone) = self.members.remove(&node.name) else { return false };
        let Some(zi) = self.zones.iter().position(|(z, _)| *z == zone) else {
            return false;
        };
        let names = &mut self.zones[zi].1;
        let Some(i) = names.iter().position(|&n| n == node.name) else {
            return false;
        };
        names.remove(i);
        if names.is_empty() {
            self.zones.remove(zi);
        }
        self.num_nodes -= 1;
        true
    }

    /// Moves the node if its zone labels changed; returns whether it moved.
    pub fn update(&mut self, old: &Node, new: &Node) -> bool {
        if old.zone_key() == new.zone_key() {
            return false;
        }
        self.remove(old);
        self.add(new);
        true
    }

    pub fn len(&self) -> usize {
        self.num_nodes
    }

    pub fn is_empty(&self) -> bool {
        self.num_nodes == 0
    }

    /// All nodes, one from each zone in turn.
    pub fn list(&self) -> Vec<Sym> {
        let mut out = Vec::with_capacity(self.num_nodes);
        let longest = self.zones.iter().map(|(_, n)| n.len()).max().unwrap_or(0);
        for round in 0..longest {
            for (_, names) in &self.zones {
                if let Some(&n) = names.get(round) {
                    out.push(n);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::LABEL_ZONE;

    fn node(name: &str, zone: &str) -> Node {
        Node::builder(name).label(LABEL_ZONE, zone).build()
    }

    fn names(t: &NodeTree) -> Vec<&'static str> {
        t.list().into_iter().map(|s| s.as_str()).collect()
    }

    #[test]
    fn node_tree_round_robins_zones_and_tracks_changes() {
        let mut t = NodeTree::default();
        for (n, z) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")] {
            t.add(&node(n, z));
        }
        t.add(&node("a1", "a"));
        assert_eq!(t.len(), 6);
        assert_eq!(names(&t), ["a1", "b1", "c1", "a2", "c2", "a3"]);
        assert!(t.remove(&node("b1", "b")));
        assert!(!t.remove(&node("b1", "b")));
        assert_eq!(names(&t), ["a1", "c1", "a2", "c2", "a3"]);
        assert!(t.update(&node("a1", "a"), &node("a1", "c")));
        assert!(!t.update(&node("a2", "a"), &node("a2", "a")));
        assert_eq!(names(&t), ["a2", "c1", "a3", "c2", "a1"]);
    }

    /// The zone key reads each `failure-domain.beta` label first and its
    /// `topology.kubernetes.io` label only when the beta one is absent (upstream's
    /// GetZoneKey); nodes with neither share the empty key.
    #[test]
    fn zone_key_table() {
        use crate::api::{LABEL_REGION, LABEL_REGION_BETA, LABEL_ZONE_BETA};
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], (&'a str, &'a str));
        let cases: &[Case] = &[
            ("no labels", &[], ("", "")),
            ("GA zone only", &[(LABEL_ZONE, "z1")], ("", "z1")),
            ("beta zone only", &[(LABEL_ZONE_BETA, "z1")], ("", "z1")),
            ("both zones: the beta one", &[(LABEL_ZONE, "ga"), (LABEL_ZONE_BETA, "beta")], ("", "beta")),
            ("an empty beta zone still wins", &[(LABEL_ZONE, "ga"), (LABEL_ZONE_BETA, "")], ("", "")),
            ("both regions: the beta one", &[(LABEL_REGION, "ga"), (LABEL_REGION_BETA, "beta")], ("beta", "")),
            ("GA region, beta zone", &[(LABEL_REGION, "r"), (LABEL_ZONE_BETA, "z")], ("r", "z")),
        ];
        for (name, labels, (region, zone)) in cases {
            let mut b = Node::builder("n");
            for (k, v) in labels.iter() {
                b = b.label(k, v);
            }
            assert_eq!(b.build().zone_key(), (Sym::new(region), Sym::new(zone)), "{name}");
        }
        // Grouping follows the key: a node whose GA zone says "a" but beta zone says "b"
        // is listed with zone b.
        let mut t = NodeTree::default();
        t.add(&node("a1", "a"));
        t.add(&Node::builder("x").label(LABEL_ZONE, "a").label(LABEL_ZONE_BETA, "b").build());
        t.add(&node("b1", "b"));
        t.add(&node("b2", "b"));
        assert_eq!(names(&t), ["a1", "x", "b1", "b2"]);
    }
}
