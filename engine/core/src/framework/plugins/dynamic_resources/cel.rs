//! DynamicResources' CEL environment: how a compiled device selector (`api::dra::CelSelector`)
//! is evaluated against one device, as upstream's DRA CEL environment does.
//!
//! The variable is `device`: `driver` (string), `allowMultipleAllocations` (false),
//! `attributes` and `capacity`, each a map from domain to a map from name to value. A bare
//! attribute or capacity name belongs to the driver's domain. An unknown domain reads as an
//! empty map (upstream's maps have that default), an unknown name within a domain is a
//! runtime error. Attribute values are int, bool, string or a semantic version; capacities
//! are quantities. Kubernetes' CEL libraries are there for them: `quantity(s)`,
//! `isQuantity(s)`, `semver(s)`, `isSemver(s)`, and on both `compareTo`, `isGreaterThan`,
//! `isLessThan`; on quantities `isInteger`, `asInteger`, `asApproximateFloat`, `sign`; on
//! versions `major`, `minor`, `patch`.
//!
//! The builtins are registered once per thread (a root context); an evaluation adds only the
//! `device` variable in a child scope. The result must be a bool. Cost is bounded when the
//! selector is compiled (`CelSelector::cost`).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};

use crate::api::dra::{AttributeValue, CelSelector, Device};
use crate::api::{Quantity, Sym};

#[derive(Debug, PartialEq, Eq)]
struct QuantityValue(Quantity);

impl Opaque for QuantityValue {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// A semantic version: major, minor, patch and the pre-release identifiers (build metadata
/// does not count in comparisons).
#[derive(Debug, PartialEq, Eq)]
struct Semver {
    core: [u64; 3],
    pre: Vec<String>,
}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

impl Semver {
    fn parse(text: &str) -> Option<Semver> {
        let text = text.split('+').next()?;
        let (core, pre) = match text.split_once('-') {
            Some((c, p)) => (c, p.split('.').map(str::to_owned).collect()),
            None => (text, Vec::new()),
        };
        let mut parts = core.split('.');
        let mut out = [0u64; 3];
        for slot in &mut out {
            let p = parts.next()?;
            if p.is_empty() || (p.len() > 1 && p.starts_with('0')) || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            *slot = p.parse().ok()?;
        }
        if parts.next().is_some() || (pre.iter().any(String::is_empty)) {
            return None;
        }
        Some(Semver { core: out, pre })
    }

    fn compare(&self, other: &Semver) -> Ordering {
        self.core.cmp(&other.core).then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                for (a, b) in self.pre.iter().zip(&other.pre) {
                    let ord = match (a.parse::<u64>(), b.parse::<u64>()) {
                        (Ok(x), Ok(y)) => x.cmp(&y),
                        (Ok(_), Err(_)) => Ordering::Less,
                        (Err(_), Ok(_)) => Ordering::Greater,
                        (Err(_), Err(_)) => a.cmp(b),
                    };
                    if ord != Ordering::Equal {
                        return ord;
                    }
                }
                self.pre.len().cmp(&other.pre.len())
            }
        })
    }
}

fn err(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message.to_string())
}

fn quantity(s: Arc<String>) -> Result<Value, ExecutionError> {
    let q = Quantity::parse(&s).map_err(|e| err("quantity", e))?;
    Ok(Value::Opaque(Arc::new(QuantityValue(q))))
}

fn is_quantity(s: Arc<String>) -> bool {
    Quantity::parse(&s).is_ok()
}

fn semver(s: Arc<String>) -> Result<Value, ExecutionError> {
    let v = Semver::parse(&s).ok_or_else(|| err("semver", format!("could not parse {s:?} as semver")))?;
    Ok(Value::Opaque(Arc::new(v)))
}

fn is_semver(s: Arc<String>) -> bool {
    Semver::parse(&s).is_some()
}

/// The ordering of two quantities or two versions.
fn ordering(function: &str, a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    if let (Value::Opaque(a), Value::Opaque(b)) = (a, b) {
        if let (Some(x), Some(y)) = (a.downcast_ref::<QuantityValue>(), b.downcast_ref::<QuantityValue>()) {
            return Ok(x.0.cmp_value(&y.0));
        }
        if let (Some(x), Some(y)) = (a.downcast_ref::<Semver>(), b.downcast_ref::<Semver>()) {
            return Ok(x.compare(y));
        }
    }
    Err(err(function, "no such overload: want two quantities or two semantic versions"))
}

fn compare_to(This(a): This<Value>, b: Value) -> Result<i64, ExecutionError> {
    Ok(ordering("compareTo", &a, &b)? as i64)
}

fn is_greater_than(This(a): This<Value>, b: Value) -> Result<bool, ExecutionError> {
    Ok(ordering("isGreaterThan", &a, &b)? == Ordering::Greater)
}

fn is_less_than(This(a): This<Value>, b: Value) -> Result<bool, ExecutionError> {
    Ok(ordering("isLessThan", &a, &b)? == Ordering::Less)
}

fn quantity_of(function: &str, v: &Value) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Opaque(o) => {
            o.downcast_ref::<QuantityValue>().map(|q| q.0).ok_or_else(|| err(function, "not a quantity"))
        }
        _ => Err(err(function, "not a quantity")),
    }
}

fn semver_of<'a>(function: &str, v: &'a Value) -> Result<&'a Semver, ExecutionError> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<Semver>().ok_or_else(|| err(function, "not a semantic version")),
        _ => Err(err(function, "not a semantic version")),
    }
}

fn is_integer(This(v): This<Value>) -> Result<bool, ExecutionError> {
    let q = quantity_of("isInteger", &v)?;
    Ok(q.cmp_value(&Quantity::parse(&q.value().to_string()).map_err(|e| err("isInteger", e))?) == Ordering::Equal)
}

fn as_integer(This(v): This<Value>) -> Result<i64, ExecutionError> {
    let q = quantity_of("asInteger", &v)?;
    let i = q.value();
    if q.cmp_value(&Quantity::parse(&i.to_string()).map_err(|e| err("asInteger", e))?) != Ordering::Equal {
        return Err(err("asInteger", "cannot convert value to integer"));
    }
    Ok(i)
}

fn as_approximate_float(This(v): This<Value>) -> Result<f64, ExecutionError> {
    Ok(quantity_of("asApproximateFloat", &v)?.approximate())
}

fn sign(This(v): This<Value>) -> Result<i64, ExecutionError> {
    let q = quantity_of("sign", &v)?;
    Ok(q.cmp_value(&Quantity::parse("0").map_err(|e| err("sign", e))?) as i64)
}

fn major(This(v): This<Value>) -> Result<i64, ExecutionError> {
    Ok(semver_of("major", &v)?.core[0] as i64)
}

fn minor(This(v): This<Value>) -> Result<i64, ExecutionError> {
    Ok(semver_of("minor", &v)?.core[1] as i64)
}

fn patch(This(v): This<Value>) -> Result<i64, ExecutionError> {
    Ok(semver_of("patch", &v)?.core[2] as i64)
}

fn root() -> Context<'static, 'static> {
    let mut c = Context::default();
    let registered = [
        c.add_function("quantity", quantity),
        c.add_function("isQuantity", is_quantity),
        c.add_function("semver", semver),
        c.add_function("isSemver", is_semver),
        c.add_function("compareTo", compare_to),
        c.add_function("isGreaterThan", is_greater_than),
        c.add_function("isLessThan", is_less_than),
        c.add_function("isInteger", is_integer),
        c.add_function("asInteger", as_integer),
        c.add_function("asApproximateFloat", as_approximate_float),
        c.add_function("sign", sign),
        c.add_function("major", major),
        c.add_function("minor", minor),
        c.add_function("patch", patch),
    ];
    // None of these names is a standard overload (a test checks it), so none is refused.
    debug_assert!(registered.iter().all(Result::is_ok));
    c
}

thread_local! {
    static ROOT: Context<'static, 'static> = root();
}

/// `(domain, name)` of an attribute or capacity name: a bare name is in the driver's domain.
fn qualified(name: &str, driver: Sym) -> (String, String) {
    match name.split_once('/') {
        Some((d, n)) => (d.to_owned(), n.to_owned()),
        None => (driver.as_str().to_owned(), name.to_owned()),
    }
}

fn attribute_value(v: &AttributeValue) -> Value {
    match v {
        AttributeValue::Int(i) => Value::Int(*i),
        AttributeValue::Bool(b) => Value::Bool(*b),
        AttributeValue::String(s) => Value::String(Arc::new(s.to_string())),
        AttributeValue::Version(s) => match Semver::parse(s) {
            Some(v) => Value::Opaque(Arc::new(v)),
            None => Value::String(Arc::new(s.to_string())),
        },
    }
}

/// The `device` variable for `sel`: every domain the selector names literally is present
/// (empty when the device has nothing there), as upstream's defaulting maps behave.
fn device_value(sel: &CelSelector, driver: Sym, device: &Device) -> Value {
    let mut attributes: HashMap<String, HashMap<String, Value>> = HashMap::new();
    for (name, v) in &device.attributes {
        let (d, n) = qualified(name.as_str(), driver);
        attributes.entry(d).or_default().insert(n, attribute_value(v));
    }
    let mut capacity: HashMap<String, HashMap<String, Value>> = HashMap::new();
    for (name, q) in &device.capacity {
        let (d, n) = qualified(name.as_str(), driver);
        capacity.entry(d).or_default().insert(n, Value::Opaque(Arc::new(QuantityValue(*q))));
    }
    for lit in sel.literals.iter() {
        attributes.entry(lit.to_string()).or_default();
        capacity.entry(lit.to_string()).or_default();
    }
    let nested = |m: HashMap<String, HashMap<String, Value>>| -> Value {
        let m: HashMap<String, Value> = m.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
        Value::from(m)
    };
    let mut dev: HashMap<String, Value> = HashMap::new();
    dev.insert("driver".into(), Value::String(Arc::new(driver.as_str().to_owned())));
    dev.insert("allowMultipleAllocations".into(), Value::Bool(false));
    dev.insert("attributes".into(), nested(attributes));
    dev.insert("capacity".into(), nested(capacity));
    Value::from(dev)
}

/// Whether `device` (of `driver`) satisfies `sel`; `Err` is upstream's CEL runtime error (an
/// unknown attribute name, a result that is not a bool, ...).
pub fn device_matches(sel: &CelSelector, driver: Sym, device: &Device) -> Result<bool, String> {
    let value = device_value(sel, driver, device);
    let result = ROOT.with(|root| {
        let mut scope = root.new_inner_scope();
        scope.add_variable_from_value("device", value);
        sel.program.execute(&scope)
    });
    match result {
        Ok(Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("CEL result of type {} could not be converted to bool", other.type_of())),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::dra::AttributeValue as A;

    fn gpu() -> Device {
        Device::new("gpu-0")
            .attribute("model", A::String("h100".into()))
            .attribute("index", A::Int(5))
            .attribute("healthy", A::Bool(true))
            .attribute("driverVersion", A::Version("2.0.0".into()))
            .attribute("resource.kubernetes.io/pcieRoot", A::String("pci-0".into()))
            .capacity("memory", Quantity::parse("80Gi").unwrap())
    }

    #[test]
    fn root_registers_every_function() {
        let c = root();
        // A refused registration would leave the function unknown: call each once.
        let sel = CelSelector::compile(
            r#"quantity("1") == quantity("1") && isQuantity("1Gi") && isSemver("1.0.0") && semver("1.2.3").major() == 1"#,
        )
        .unwrap();
        let mut scope = c.new_inner_scope();
        scope.add_variable_from_value("device", Value::Null);
        assert_eq!(sel.program.execute(&scope), Ok(Value::Bool(true)));
    }

    #[test]
    fn device_matches_table() {
        let driver = Sym::new("gpu.example.com");
        let cases: &[(&str, Result<bool, &str>)] = &[
            (r#"device.driver == "gpu.example.com""#, Ok(true)),
            (r#"device.driver == "nic.example.com""#, Ok(false)),
            (r#"device.attributes["gpu.example.com"].model == "h100""#, Ok(true)),
            (r#"device.attributes["gpu.example.com"].index >= 4"#, Ok(true)),
            (r#"device.attributes["gpu.example.com"].index < 4"#, Ok(false)),
            (r#"device.attributes["gpu.example.com"].healthy"#, Ok(true)),
            (r#"device.attributes["resource.kubernetes.io"].pcieRoot == "pci-0""#, Ok(true)),
            (r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0"#, Ok(true)),
            (r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("81Gi")) >= 0"#, Ok(false)),
            (r#"device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("40Gi"))"#, Ok(true)),
            (r#"device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.3.0"))"#, Ok(true)),
            (r#"device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("2.0.0-rc.1"))"#, Ok(false)),
            (r#"device.attributes["gpu.example.com"].driverVersion.compareTo(semver("2.0.0")) == 0"#, Ok(true)),
            // Unknown domain: an empty map, so has() is false, not an error.
            (r#"has(device.attributes["other.example.com"].model)"#, Ok(false)),
            (r#"device.attributes["gpu.example.com"].missing == 1"#, Err("")),
            (r#"device.attributes["gpu.example.com"].index"#, Err("could not be converted to bool")),
        ];
        for (expr, want) in cases {
            let sel = CelSelector::compile(expr).unwrap();
            let got = device_matches(&sel, driver, &gpu());
            match (want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{expr}"),
                (Err(w), Err(g)) => assert!(g.contains(w), "{expr}: {g}"),
                _ => panic!("{expr}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn semver_order() {
        let v = |s| Semver::parse(s).unwrap();
        assert_eq!(v("1.0.0-alpha").compare(&v("1.0.0")), Ordering::Less);
        assert_eq!(v("1.0.0-alpha.1").compare(&v("1.0.0-alpha.beta")), Ordering::Less);
        assert_eq!(v("1.0.0-2").compare(&v("1.0.0-11")), Ordering::Less);
        assert_eq!(v("1.10.0").compare(&v("1.9.0")), Ordering::Greater);
        assert_eq!(v("1.0.0+build").compare(&v("1.0.0")), Ordering::Equal);
        assert!(Semver::parse("1.0").is_none());
        assert!(Semver::parse("01.0.0").is_none());
    }

    proptest::proptest! {
        /// Arbitrary expressions over the device never panic, and the ones that compile
        /// answer (bounded cost: compile refuses what would not).
        #[test]
        fn arbitrary_selectors_do_not_panic(expr in "[a-z\\[\\]\"().=<>!&| 0-9,]{0,40}") {
            if let Ok(sel) = CelSelector::compile(&expr) {
                let _ = device_matches(&sel, Sym::new("gpu.example.com"), &gpu());
            }
        }
    }
}
