//! Arbitrary nominator operations against a plain model (pod → node): after every step the
//! nominator agrees with the model, lists each pod once on exactly its node, and its two
//! maps agree with each other.
#![no_main]

use std::collections::HashMap;

use ksched_engine::api::{Pod, Sym};
use ksched_engine::queue::Nominator;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

const PODS: usize = 6;
const NODES: [&str; 3] = ["a", "b", "c"];

#[derive(Arbitrary, Debug)]
enum Op {
    /// `node` None: fall back to the pod's own nominatedNodeName (`field`).
    Add {
        pod: u8,
        node: Option<u8>,
        field: Option<u8>,
    },
    Delete {
        pod: u8,
    },
    Update {
        pod: u8,
        old_field: Option<u8>,
        new_field: Option<u8>,
    },
}

fn pod(i: u8, field: Option<u8>) -> Pod {
    let mut b = Pod::builder(&format!("p{}", i as usize % PODS));
    if let Some(f) = field {
        b = b.nominated_node_name(NODES[f as usize % NODES.len()]);
    }
    b.build()
}

fn node(n: u8) -> Sym {
    Sym::new(NODES[n as usize % NODES.len()])
}

fuzz_target!(|ops: Vec<Op>| {
    let n = Nominator::new();
    let mut model: HashMap<usize, Sym> = HashMap::new();
    for op in &ops {
        match *op {
            Op::Add { pod: i, node: to, field } => {
                n.add(&pod(i, field), to.map(node));
                let key = i as usize % PODS;
                match to.or(field) {
                    Some(x) => model.insert(key, node(x)),
                    None => model.remove(&key),
                };
            }
            Op::Delete { pod: i } => {
                n.delete(&pod(i, None));
                model.remove(&(i as usize % PODS));
            }
            Op::Update { pod: i, old_field, new_field } => {
                n.update(&pod(i, old_field), &pod(i, new_field));
                let key = i as usize % PODS;
                match (old_field, new_field) {
                    (None, None) => {} // keeps the scheduler's nomination
                    (_, Some(x)) => {
                        model.insert(key, node(x));
                    }
                    (Some(_), None) => {
                        model.remove(&key);
                    }
                }
            }
        }
        let bad = n.check_consistent();
        assert!(bad.is_empty(), "after {op:?}: {bad:?}");
        assert_eq!(n.len(), model.len(), "after {op:?}");
        for i in 0..PODS {
            let p = pod(i as u8, None);
            assert_eq!(n.nominated_node(&p.uid), model.get(&i).copied(), "after {op:?}: pod {i}");
        }
        for x in NODES {
            let want = model.values().filter(|&&m| m == Sym::new(x)).count();
            assert_eq!(n.nominated_pods_for_node(Sym::new(x)).len(), want, "after {op:?}: node {x}");
        }
    }
});
