//! Property tests of CEL selectors built from a grammar of what device selectors are made
//! of (the device's driver, attributes of every type, capacities, quantities, versions,
//! operators, macros and comprehensions over lists, nested): compiling and evaluating never
//! panics; what compiles is within the cost limit and answers the same twice; what is
//! refused for its cost is refused with the limit's message; and a comparison of an integer
//! attribute with a literal answers as plain integer arithmetic does (the model).

use proptest::prelude::*;

use super::cel::device_matches;
use crate::api::dra::{AttributeValue, CelSelector, Device, CEL_MAX_COST};
use crate::api::quantity::Quantity;
use crate::api::Sym;

const DRIVER: &str = "gpu.example.com";

/// A device with every kind of attribute: `index` (int), `model` (string), `healthy` (bool),
/// `driverVersion` (version), a qualified string attribute, and `memory` capacity.
fn device() -> impl Strategy<Value = Device> {
    (any::<i64>(), prop::sample::select(vec!["h100", "a100", "", "l4"]), any::<bool>(), 0u32..4, 0u32..64).prop_map(
        |(index, model, healthy, major, gib)| {
            Device::new("gpu-0")
                .attribute("index", AttributeValue::Int(index))
                .attribute("model", AttributeValue::String(model.into()))
                .attribute("healthy", AttributeValue::Bool(healthy))
                .attribute("driverVersion", AttributeValue::Version(format!("{major}.1.0").into()))
                .attribute("resource.kubernetes.io/pcieRoot", AttributeValue::String("pci-0".into()))
                .capacity("memory", Quantity::parse(&format!("{gib}Gi")).unwrap())
        },
    )
}

/// Leaves: the device's fields and literals of every type.
fn leaf() -> impl Strategy<Value = String> {
    let attr = |a: &str| format!(r#"device.attributes["{DRIVER}"].{a}"#);
    prop_oneof![
        Just("device.driver".to_owned()),
        Just(attr("index")),
        Just(attr("model")),
        Just(attr("healthy")),
        Just(attr("driverVersion")),
        Just(attr("missing")),
        Just(r#"device.attributes["resource.kubernetes.io"].pcieRoot"#.to_owned()),
        Just(r#"device.attributes["other.example.com"]"#.to_owned()),
        Just(format!(r#"device.capacity["{DRIVER}"].memory"#)),
        any::<i64>().prop_map(|i| i.to_string()),
        (0u8..200).prop_map(|i| format!("{i}u")),
        "[a-z0-9.]{0,6}".prop_map(|s| format!("{s:?}")),
        any::<bool>().prop_map(|b| b.to_string()),
        (0u32..1000, prop::sample::select(vec!["", "m", "Ki", "Gi", "e3", "x"]))
            .prop_map(|(n, u)| format!(r#"quantity("{n}{u}")"#)),
        (0u32..3, 0u32..3).prop_map(|(a, b)| format!(r#"semver("{a}.{b}.0")"#)),
        Just("null".to_owned()),
        Just("[1, 2, 3]".to_owned()),
        Just(r#"{"a": 1}"#.to_owned()),
    ]
}

/// Expressions: leaves combined by CEL's operators, functions, macros and comprehensions.
fn expr() -> impl Strategy<Value = String> {
    leaf().prop_recursive(5, 48, 3, |inner| {
        let op =
            prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/", "%", "in"]);
        let method = prop::sample::select(vec![
            "compareTo",
            "isGreaterThan",
            "isLessThan",
            "startsWith",
            "endsWith",
            "contains",
            "matches",
            "isInteger",
            "asInteger",
            "asApproximateFloat",
            "sign",
            "major",
            "minor",
            "patch",
            "size",
        ]);
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("({a}) {o} ({b})")),
            inner.clone().prop_map(|a| format!("!({a})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, a, b)| format!("({c}) ? ({a}) : ({b})")),
            (inner.clone(), method, prop::option::of(inner.clone()))
                .prop_map(|(t, m, a)| format!("({t}).{m}({})", a.unwrap_or_default())),
            inner.clone().prop_map(|a| format!("has(({a}).model)")),
            inner.clone().prop_map(|a| format!("size({a})")),
            inner.clone().prop_map(|a| format!("string({a})")),
            inner.clone().prop_map(|a| format!("int({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("[{a}, {b}]")),
            (prop::sample::select(vec!["all", "exists", "exists_one", "map", "filter"]), inner.clone(), inner)
                .prop_map(|(m, range, body)| format!("({range}).{m}(x, {body})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// No panic; what compiles is within the cost limit and answers the same twice.
    #[test]
    fn cel_selectors_from_the_grammar_never_panic_and_stay_within_cost(e in expr(), d in device()) {
        match CelSelector::compile(&e) {
            Ok(sel) => {
                prop_assert!(sel.cost <= CEL_MAX_COST, "{e}: cost {}", sel.cost);
                let first = device_matches(&sel, Sym::new(DRIVER), &d);
                prop_assert_eq!(first, device_matches(&sel, Sym::new(DRIVER), &d), "{}", e);
            }
            Err(msg) => prop_assert!(!msg.is_empty(), "{e}"),
        }
    }

    /// A comparison of the integer attribute with a literal answers as integer arithmetic.
    #[test]
    fn integer_comparisons_answer_as_arithmetic(d in device(), n in any::<i64>(), op in 0usize..6) {
        let ops = ["==", "!=", "<", "<=", ">", ">="];
        let e = format!(r#"device.attributes["{DRIVER}"].index {} {n}"#, ops[op]);
        let sel = CelSelector::compile(&e).unwrap();
        let Some(AttributeValue::Int(index)) = d.lookup_attribute(Sym::new(DRIVER), "index").cloned() else {
            unreachable!("the strategy sets index")
        };
        let want = match op {
            0 => index == n,
            1 => index != n,
            2 => index < n,
            3 => index <= n,
            4 => index > n,
            _ => index >= n,
        };
        prop_assert_eq!(device_matches(&sel, Sym::new(DRIVER), &d), Ok(want), "{}", e);
    }
}

/// Nested comprehensions over long lists are refused at compile time (their evaluation would
/// be the hang the cost limit prevents), at any depth beyond what the limit allows.
#[test]
fn nested_comprehensions_beyond_the_cost_limit_are_refused() {
    let list = format!("[{}]", (0..120).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
    let mut e = "x0 >= 0".to_owned();
    for depth in 1..=4 {
        e = format!("{list}.all(x{depth}, {e})");
        let got = CelSelector::compile(&e);
        if depth >= 3 {
            let msg = got.expect_err("refused");
            assert!(msg.contains("estimated cost"), "{msg}");
        } else {
            assert!(got.unwrap().cost <= CEL_MAX_COST);
        }
    }
}
