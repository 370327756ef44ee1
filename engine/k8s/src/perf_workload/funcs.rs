//! The functions a scheduler_perf object template may call, as upstream's harness offers them:
//! Go `text/template`'s predefined functions, scheduler_perf's own helpers (the lower-case
//! `div` and `mod` of its template loader, the `AddInt` ... `Mod` family, `Int` and `JSON`),
//! and the integer arithmetic of sprig that templates written for Helm-like loaders reach for
//! (`add`, `sub`, `mul`, `max`, `min`, ...). [`FUNCTIONS`] lists every one with where it comes
//! from; [`call`] evaluates one.
//!
//! Types follow Go's: a function declared on `int` (`div`, `mod`) rejects a float or a string
//! argument as Go's template engine would; the `AddInt` family converts any number or numeric
//! string through float64, as upstream's `toFloat64` does; comparisons of different kinds are
//! an error, as Go's `eq`/`lt` report "incompatible types for comparison".

use super::template::{go_float, TValue};

/// Where a template function comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Go's `text/template` predefined functions.
    GoBuiltin,
    /// scheduler_perf's template loader.
    SchedulerPerf,
    /// sprig's integer arithmetic.
    Sprig,
}

type Func = fn(&str, &[TValue]) -> Result<TValue, String>;

/// Every function a template may call: name, origin, what it does.
pub const FUNCTIONS: &[(&str, Origin, &str)] = &[
    ("and", Origin::GoBuiltin, "the first empty argument, or the last"),
    ("or", Origin::GoBuiltin, "the first non-empty argument, or the last"),
    ("not", Origin::GoBuiltin, "whether its argument is empty"),
    ("eq", Origin::GoBuiltin, "whether the first argument equals any of the others"),
    ("ne", Origin::GoBuiltin, "whether two arguments differ"),
    ("lt", Origin::GoBuiltin, "a < b"),
    ("le", Origin::GoBuiltin, "a <= b"),
    ("gt", Origin::GoBuiltin, "a > b"),
    ("ge", Origin::GoBuiltin, "a >= b"),
    ("len", Origin::GoBuiltin, "a string's length in bytes"),
    ("index", Origin::GoBuiltin, "the byte at an index of a string"),
    ("slice", Origin::GoBuiltin, "a substring (byte offsets)"),
    ("print", Origin::GoBuiltin, "fmt.Sprint: spaces between operands when neither is a string"),
    ("println", Origin::GoBuiltin, "fmt.Sprintln: spaces between operands, a newline after"),
    ("printf", Origin::GoBuiltin, "fmt.Sprintf (%d %s %v %q %f %x %t %%, width, zero padding)"),
    ("html", Origin::GoBuiltin, "HTML-escaped text"),
    ("js", Origin::GoBuiltin, "JavaScript-escaped text"),
    ("urlquery", Origin::GoBuiltin, "text escaped for a URL query"),
    ("div", Origin::SchedulerPerf, "integer division of two ints (truncates toward zero)"),
    ("mod", Origin::SchedulerPerf, "remainder of two ints (sign of the dividend)"),
    ("AddInt", Origin::SchedulerPerf, "sum of its numbers, truncated to an int"),
    ("AddFloat", Origin::SchedulerPerf, "sum of its numbers"),
    ("SubtractInt", Origin::SchedulerPerf, "a - b, truncated to an int"),
    ("SubtractFloat", Origin::SchedulerPerf, "a - b"),
    ("MultiplyInt", Origin::SchedulerPerf, "product of its numbers, truncated to an int"),
    ("MultiplyFloat", Origin::SchedulerPerf, "product of its numbers"),
    ("DivideInt", Origin::SchedulerPerf, "a / b, truncated to an int"),
    ("DivideFloat", Origin::SchedulerPerf, "a / b"),
    ("Mod", Origin::SchedulerPerf, "int(a) % int(b)"),
    ("Int", Origin::SchedulerPerf, "a number or numeric string as an int"),
    ("JSON", Origin::SchedulerPerf, "its argument encoded as JSON"),
    ("add", Origin::Sprig, "sum of its numbers as int64"),
    ("add1", Origin::Sprig, "a + 1 as int64"),
    ("sub", Origin::Sprig, "a - b as int64"),
    ("mul", Origin::Sprig, "product of its numbers as int64"),
    ("max", Origin::Sprig, "the largest of its numbers as int64"),
    ("min", Origin::Sprig, "the smallest of its numbers as int64"),
];

fn lookup(name: &str) -> Option<Func> {
    let f: Func = match name {
        "and" => |_, a| first_or_last(a, |v| !truthy(v)),
        "or" => |_, a| first_or_last(a, truthy),
        "not" => |n, a| Ok(TValue::Bool(!truthy(one(n, a)?))),
        "eq" => eq,
        "ne" => |n, a| {
            let [x, y] = exact::<2>(n, a)?;
            Ok(TValue::Bool(compare(n, x, y)? != std::cmp::Ordering::Equal))
        },
        "lt" => |n, a| ordered(n, a, std::cmp::Ordering::is_lt),
        "le" => |n, a| ordered(n, a, std::cmp::Ordering::is_le),
        "gt" => |n, a| ordered(n, a, std::cmp::Ordering::is_gt),
        "ge" => |n, a| ordered(n, a, std::cmp::Ordering::is_ge),
        "len" => |n, a| match one(n, a)? {
            TValue::Str(s) => Ok(TValue::Int(s.len() as i64)),
            other => Err(format!("{n}: len of {} is not defined", kind(other))),
        },
        "index" => index,
        "slice" => slice,
        "print" => |_, a| Ok(TValue::Str(sprint(a))),
        "println" => |_, a| {
            let mut s = a.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
            s.push('\n');
            Ok(TValue::Str(s))
        },
        "printf" => |n, a| {
            let (fmt, rest) = a.split_first().ok_or_else(|| format!("{n} needs a format"))?;
            Ok(TValue::Str(printf(&fmt.to_string(), rest)?))
        },
        "html" => |_, a| Ok(TValue::Str(html_escape(&sprint(a)))),
        "js" => |_, a| Ok(TValue::Str(js_escape(&sprint(a)))),
        "urlquery" => |_, a| Ok(TValue::Str(query_escape(&sprint(a)))),
        "div" => |n, a| {
            let [x, y] = go_ints::<2>(n, a)?;
            x.checked_div(y).map(TValue::Int).ok_or_else(|| format!("{n}: integer divide by zero"))
        },
        "mod" => |n, a| {
            let [x, y] = go_ints::<2>(n, a)?;
            x.checked_rem(y).map(TValue::Int).ok_or_else(|| format!("{n}: integer divide by zero"))
        },
        "AddInt" => |n, a| Ok(TValue::Int(floats(n, a)?.iter().sum::<f64>() as i64)),
        "AddFloat" => |n, a| Ok(TValue::Float(floats(n, a)?.iter().sum())),
        "SubtractInt" => |n, a| float_pair(n, a).map(|(x, y)| TValue::Int((x - y) as i64)),
        "SubtractFloat" => |n, a| float_pair(n, a).map(|(x, y)| TValue::Float(x - y)),
        "MultiplyInt" => |n, a| Ok(TValue::Int(floats(n, a)?.iter().product::<f64>() as i64)),
        "MultiplyFloat" => |n, a| Ok(TValue::Float(floats(n, a)?.iter().product())),
        "DivideInt" => |n, a| divide(n, a).map(|q| TValue::Int(q as i64)),
        "DivideFloat" => |n, a| divide(n, a).map(TValue::Float),
        "Mod" => |n, a| {
            let (x, y) = float_pair(n, a)?;
            (x as i64).checked_rem(y as i64).map(TValue::Int).ok_or_else(|| format!("{n}: division by zero"))
        },
        "Int" => |n, a| Ok(TValue::Int(float(n, one(n, a)?)? as i64)),
        "JSON" => |n, a| Ok(TValue::Str(json(one(n, a)?))),
        "add" => |n, a| Ok(TValue::Int(int64s(n, a)?.iter().fold(0i64, |s, x| s.wrapping_add(*x)))),
        "add1" => |n, a| Ok(TValue::Int(int64(one(n, a)?).wrapping_add(1))),
        "sub" => |n, a| {
            let [x, y] = exact::<2>(n, a)?;
            Ok(TValue::Int(int64(x).wrapping_sub(int64(y))))
        },
        "mul" => |n, a| Ok(TValue::Int(int64s(n, a)?.iter().fold(1i64, |p, x| p.wrapping_mul(*x)))),
        "max" => |n, a| int64s(n, a)?.into_iter().max().map(TValue::Int).ok_or_else(|| format!("{n} needs a number")),
        "min" => |n, a| int64s(n, a)?.into_iter().min().map(TValue::Int).ok_or_else(|| format!("{n} needs a number")),
        _ => return None,
    };
    Some(f)
}

/// Calls template function `name` on `args` (a piped value comes last).
pub fn call(name: &str, args: &[TValue]) -> Result<TValue, String> {
    match lookup(name) {
        Some(f) => f(name, args),
        None => Err(format!("function {name:?} not defined")),
    }
}

/// Go's truth: false, 0, and the empty string are empty.
pub fn truthy(v: &TValue) -> bool {
    match v {
        TValue::Int(i) => *i != 0,
        TValue::Float(f) => *f != 0.0,
        TValue::Str(s) => !s.is_empty(),
        TValue::Bool(b) => *b,
    }
}

fn kind(v: &TValue) -> &'static str {
    match v {
        TValue::Int(_) => "int",
        TValue::Float(_) => "float64",
        TValue::Str(_) => "string",
        TValue::Bool(_) => "bool",
    }
}

fn one<'a>(name: &str, args: &'a [TValue]) -> Result<&'a TValue, String> {
    let [v] = exact::<1>(name, args)?;
    Ok(v)
}

fn exact<'a, const N: usize>(name: &str, args: &'a [TValue]) -> Result<[&'a TValue; N], String> {
    if args.len() != N {
        let s = if N == 1 { "" } else { "s" };
        return Err(format!("{name} takes {N} argument{s}, got {}", args.len()));
    }
    Ok(std::array::from_fn(|i| &args[i]))
}

fn first_or_last(args: &[TValue], stop: impl Fn(&TValue) -> bool) -> Result<TValue, String> {
    let last = args.last().ok_or("needs at least one argument")?;
    Ok(args.iter().find(|v| stop(v)).unwrap_or(last).clone())
}

/// Go's `eq` and `lt` on basic kinds: ints with ints, floats with floats, strings with
/// strings; bools only for equality.
fn compare(name: &str, a: &TValue, b: &TValue) -> Result<std::cmp::Ordering, String> {
    use TValue::*;
    match (a, b) {
        (Int(x), Int(y)) => Ok(x.cmp(y)),
        (Float(x), Float(y)) => x.partial_cmp(y).ok_or_else(|| format!("{name}: NaN cannot be compared")),
        (Str(x), Str(y)) => Ok(x.cmp(y)),
        (Bool(x), Bool(y)) if matches!(name, "eq" | "ne") => Ok(x.cmp(y)),
        (Bool(_), Bool(_)) => Err(format!("{name}: invalid type for comparison")),
        _ => Err(format!("{name}: incompatible types for comparison ({} and {})", kind(a), kind(b))),
    }
}

fn eq(name: &str, args: &[TValue]) -> Result<TValue, String> {
    let (first, rest) = args.split_first().ok_or_else(|| format!("{name}: missing argument for comparison"))?;
    if rest.is_empty() {
        return Err(format!("{name}: missing argument for comparison"));
    }
    for other in rest {
        if compare(name, first, other)? == std::cmp::Ordering::Equal {
            return Ok(TValue::Bool(true));
        }
    }
    Ok(TValue::Bool(false))
}

fn ordered(name: &str, args: &[TValue], want: fn(std::cmp::Ordering) -> bool) -> Result<TValue, String> {
    let [x, y] = exact::<2>(name, args)?;
    Ok(TValue::Bool(want(compare(name, x, y)?)))
}

fn go_ints<const N: usize>(name: &str, args: &[TValue]) -> Result<[i64; N], String> {
    let vals = exact::<N>(name, args)?;
    let mut out = [0i64; N];
    for (o, v) in out.iter_mut().zip(vals) {
        *o = match v {
            TValue::Int(i) => *i,
            other => return Err(format!("{name}: wrong type for value; expected int; got {}", kind(other))),
        };
    }
    Ok(out)
}

/// Upstream's `toFloat64`: any number, or a string that parses as one.
fn float(name: &str, v: &TValue) -> Result<f64, String> {
    match v {
        TValue::Int(i) => Ok(*i as f64),
        TValue::Float(f) => Ok(*f),
        TValue::Str(s) => s.parse().map_err(|_| format!("{name}: cannot use {s:?} as a number")),
        TValue::Bool(b) => Err(format!("{name}: cannot use {b} as a number")),
    }
}

fn floats(name: &str, args: &[TValue]) -> Result<Vec<f64>, String> {
    args.iter().map(|a| float(name, a)).collect()
}

fn float_pair(name: &str, args: &[TValue]) -> Result<(f64, f64), String> {
    let [x, y] = exact::<2>(name, args)?;
    Ok((float(name, x)?, float(name, y)?))
}

fn divide(name: &str, args: &[TValue]) -> Result<f64, String> {
    let (x, y) = float_pair(name, args)?;
    if y == 0.0 {
        return Err(format!("{name}: division by zero"));
    }
    Ok(x / y)
}

/// sprig's `toInt64`: numbers truncate, numeric strings parse, anything else is 0.
fn int64(v: &TValue) -> i64 {
    match v {
        TValue::Int(i) => *i,
        TValue::Float(f) => *f as i64,
        TValue::Str(s) => s.parse::<i64>().ok().or_else(|| s.parse::<f64>().ok().map(|f| f as i64)).unwrap_or(0),
        TValue::Bool(b) => i64::from(*b),
    }
}

fn int64s(name: &str, args: &[TValue]) -> Result<Vec<i64>, String> {
    if args.is_empty() {
        return Err(format!("{name} needs a number"));
    }
    Ok(args.iter().map(int64).collect())
}

fn byte_index(name: &str, v: &TValue, len: usize) -> Result<usize, String> {
    match v {
        TValue::Int(i) if *i >= 0 && (*i as usize) <= len => Ok(*i as usize),
        TValue::Int(i) => Err(format!("{name}: index out of range: {i}")),
        other => Err(format!("{name}: cannot index with a {}", kind(other))),
    }
}

fn index(name: &str, args: &[TValue]) -> Result<TValue, String> {
    let (s, idx) = args.split_first().ok_or_else(|| format!("{name} needs an argument"))?;
    match (s, idx) {
        (v, []) => Ok(v.clone()),
        (TValue::Str(s), [i]) => {
            let i = byte_index(name, i, s.len())?;
            s.as_bytes()
                .get(i)
                .map(|b| TValue::Int(i64::from(*b)))
                .ok_or_else(|| format!("{name}: index out of range: {i}"))
        }
        (TValue::Str(_), _) => Err(format!("{name}: a string takes one index")),
        (other, _) => Err(format!("{name}: cannot index into a {}", kind(other))),
    }
}

fn slice(name: &str, args: &[TValue]) -> Result<TValue, String> {
    let (s, idx) = args.split_first().ok_or_else(|| format!("{name} needs an argument"))?;
    let TValue::Str(s) = s else { return Err(format!("{name}: cannot slice a {}", kind(s))) };
    let (from, to) = match idx {
        [] => (0, s.len()),
        [a] => (byte_index(name, a, s.len())?, s.len()),
        [a, b] => (byte_index(name, a, s.len())?, byte_index(name, b, s.len())?),
        _ => return Err(format!("{name}: a string takes at most two indexes")),
    };
    if from > to {
        return Err(format!("{name}: invalid slice index: {from} > {to}"));
    }
    s.get(from..to).map(|t| TValue::Str(t.to_owned())).ok_or_else(|| format!("{name}: {from}..{to} splits a character"))
}

/// `fmt.Sprint`: a space between two operands when neither is a string.
fn sprint(args: &[TValue]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, TValue::Str(_)) && !matches!(args[i - 1], TValue::Str(_)) {
            out.push(' ');
        }
        out.push_str(&a.to_string());
    }
    out
}

fn json(v: &TValue) -> String {
    match v {
        TValue::Int(i) => i.to_string(),
        TValue::Float(f) => serde_json::Number::from_f64(*f).map_or_else(|| "null".into(), |n| n.to_string()),
        // encoding/json escapes what HTML would read.
        TValue::Str(s) => serde_json::Value::String(s.clone())
            .to_string()
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029"),
        TValue::Bool(b) => b.to_string(),
    }
}

/// Go's `template.HTMLEscapeString`.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' | '>' | '&' | '=' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Go's `url.QueryEscape`.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `fmt.Sprintf` for the verbs templates use: `%d %s %v %q %f %x %X %t %%`, with `-`, `0`
/// and a width, and a precision for `%f`.
pub fn printf(f: &str, args: &[TValue]) -> Result<String, String> {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let (mut left, mut zero) = (false, false);
        while let Some(flag) = chars.peek().copied().filter(|c| *c == '-' || *c == '0') {
            left |= flag == '-';
            zero |= flag == '0';
            chars.next();
        }
        let mut width = String::new();
        while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
            width.push(d);
            chars.next();
        }
        let mut precision = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                p.push(d);
                chars.next();
            }
            precision = Some(p.parse::<usize>().unwrap_or(0));
        }
        let verb = chars.next().ok_or("printf: format ends in %")?;
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.next() else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        let s = match (verb, arg) {
            ('d', TValue::Int(i)) => i.to_string(),
            ('x', TValue::Int(i)) if *i < 0 => format!("-{:x}", i.unsigned_abs()),
            ('x', TValue::Int(i)) => format!("{i:x}"),
            ('X', TValue::Int(i)) if *i < 0 => format!("-{:X}", i.unsigned_abs()),
            ('X', TValue::Int(i)) => format!("{i:X}"),
            ('x', TValue::Str(s)) => s.bytes().map(|b| format!("{b:02x}")).collect(),
            ('f', TValue::Float(x)) => format!("{x:.*}", precision.unwrap_or(6)),
            ('f', TValue::Int(_)) => format!("%!f(int={arg})"),
            ('s' | 'v', _) => arg.to_string(),
            ('q', TValue::Str(s)) => serde_json::Value::String(s.clone()).to_string(),
            ('t', TValue::Bool(b)) => b.to_string(),
            ('g', TValue::Float(x)) => go_float(*x),
            (verb, arg) => format!("%!{verb}({}={arg})", kind(arg)),
        };
        let w: usize = width.parse().unwrap_or(0);
        let pad = w.saturating_sub(s.chars().count());
        if left {
            out.push_str(&s);
            out.push_str(&" ".repeat(pad));
        } else if zero && !matches!(arg, TValue::Str(_)) {
            let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
            out.push_str(sign);
            out.push_str(&"0".repeat(pad));
            out.push_str(digits);
        } else {
            out.push_str(&" ".repeat(pad));
            out.push_str(&s);
        }
    }
    if args.len() > 0 {
        out.push_str("%!(EXTRA ");
        out.push_str(&args.map(|a| format!("{}={a}", kind(a))).collect::<Vec<_>>().join(", "));
        out.push(')');
    }
    Ok(out)
}
