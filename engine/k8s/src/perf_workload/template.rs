//! The subset of Go's `text/template` that scheduler_perf's object templates use: text with
//! `{{ ... }}` actions holding a pipeline of field references (`.Index`, `.Count`, template
//! params), literals, parenthesised sub-pipelines, `|` pipes and function calls (every function
//! upstream's harness offers: see [`super::funcs::FUNCTIONS`]). `{{-` / `-}}` trim the
//! whitespace beside an action, and
//! `{{/* ... */}}` is a comment.
//!
//! Control structures as Go has them: `if` / `else if` / `else`, `range` (over an int as Go
//! 1.22 does, a list or a map; `$i, $e :=`; `else`), `with`, and variables (`$x := ...`,
//! `$x = ...`, scoped to their control structure). `define`, `template`, `block`, `break`
//! and `continue` are rejected with an error naming them. A missing key is nil (false in `if`
//! and `or`, as in Go); printing one is an error (Go would print `<no value>` into the object
//! and fail later, far from the cause).

use std::collections::BTreeMap;
use std::fmt;

use super::funcs;

/// A value in a template's environment or produced by a pipeline.
#[derive(Clone, Debug, PartialEq)]
pub enum TValue {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    /// A missing key, or the `nil` literal.
    Nil,
    /// A list or map parameter.
    Json(serde_json::Value),
}

impl TValue {
    /// A workload parameter (decoded from YAML/JSON) as a template value. Whole numbers stay
    /// integers, as Go's `int` fields would print; other numbers are floats.
    pub fn from_json(v: &serde_json::Value) -> Option<TValue> {
        match v {
            serde_json::Value::Number(n) => Some(match n.as_i64() {
                Some(i) => TValue::Int(i),
                None => TValue::Float(n.as_f64().unwrap_or(0.0)),
            }),
            serde_json::Value::String(s) => Some(TValue::Str(s.clone())),
            serde_json::Value::Bool(b) => Some(TValue::Bool(*b)),
            serde_json::Value::Null => Some(TValue::Nil),
            serde_json::Value::Array(_) | serde_json::Value::Object(_) => Some(TValue::Json(v.clone())),
        }
    }

    /// [`TValue::from_json`] for any value (every JSON value has a template value).
    pub fn from_json_any(v: &serde_json::Value) -> TValue {
        TValue::from_json(v).unwrap_or(TValue::Nil)
    }
}

impl fmt::Display for TValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TValue::Int(i) => write!(f, "{i}"),
            TValue::Float(x) => f.write_str(&go_float(*x)),
            TValue::Str(s) => f.write_str(s),
            TValue::Bool(b) => write!(f, "{b}"),
            TValue::Nil => f.write_str("<nil>"),
            TValue::Json(v) => go_json(f, v),
        }
    }
}

/// Go's `%v` of a decoded list or map: `[a b]`, `map[k:v]` (keys sorted).
fn go_json(f: &mut fmt::Formatter<'_>, v: &serde_json::Value) -> fmt::Result {
    use serde_json::Value as J;
    match v {
        J::Array(a) => {
            f.write_str("[")?;
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    f.write_str(" ")?;
                }
                go_json(f, e)?;
            }
            f.write_str("]")
        }
        J::Object(m) => {
            f.write_str("map[")?;
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{k}:")?;
                go_json(f, &m[k])?;
            }
            f.write_str("]")
        }
        other => write!(f, "{}", TValue::from_json_any(other)),
    }
}

/// Go's `%v` of a float64: the shortest representation, in exponent form (`1e+06`) when the
/// decimal exponent is below -4 or at least 6, as `strconv.FormatFloat(x, 'g', -1, 64)`.
pub fn go_float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    // Rust's `{:e}` is the shortest round-trip mantissa: `1.5e6`.
    let e = format!("{x:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if x == 0.0 || (-4..6).contains(&exp) {
        return format!("{x}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Renders `src` with `env` (the keys `.Index`, `.Count` and the template params refer to).
pub fn render(src: &str, env: &BTreeMap<String, TValue>) -> Result<String, TemplateError> {
    let segs = split(src)?;
    let mut pos = 0;
    let (nodes, stop) = parse_list(&segs, &mut pos)?;
    if let Some((what, line)) = stop {
        return Err(TemplateError(format!("line {line}: unexpected {{{{{what}}}}}")));
    }
    let mut cx = Cx { env, vars: Vec::new(), dot: None };
    let mut out = String::with_capacity(src.len());
    exec(&nodes, &mut cx, &mut out)?;
    Ok(out)
}

/// Renders a template only when it has actions; a plain file is returned as is.
pub fn has_actions(src: &str) -> bool {
    src.contains("{{")
}

/// The source cut into text and actions (comments dropped, trim markers applied).
enum Seg {
    Text(String),
    Action { src: String, line: usize },
}

fn split(src: &str) -> Result<Vec<Seg>, TemplateError> {
    let mut segs = Vec::new();
    let mut rest = src;
    let mut line = 1usize;
    while let Some(start) = rest.find("{{") {
        let mut text = &rest[..start];
        let after = &rest[start + 2..];
        let (after, trim_left) = match after.strip_prefix("- ") {
            Some(a) => (a, true),
            None => (after, false),
        };
        if trim_left {
            text = text.trim_end();
        }
        segs.push(Seg::Text(text.to_owned()));
        line += rest[..start].matches('\n').count();
        let end = after.find("}}").ok_or_else(|| TemplateError(format!("line {line}: unclosed action")))?;
        let mut action = &after[..end];
        let mut next = &after[end + 2..];
        if let Some(a) = action.strip_suffix(" -") {
            action = a;
            next = next.trim_start();
        }
        let action = action.trim();
        if !(action.starts_with("/*") && action.ends_with("*/")) {
            segs.push(Seg::Action { src: action.to_owned(), line });
        }
        line += after[..end].matches('\n').count();
        rest = next;
    }
    segs.push(Seg::Text(rest.to_owned()));
    Ok(segs)
}

/// A pipeline as written: its tokens, its source and line (for errors).
struct Pipe {
    toks: Vec<Tok>,
    src: String,
    line: usize,
}

impl Pipe {
    fn err(&self, m: impl fmt::Display) -> TemplateError {
        TemplateError(format!("line {}: {{{{{}}}}}: {m}", self.line, self.src))
    }
}

enum Node {
    Text(String),
    /// A pipeline printed, or a variable declared (`$x := ...`) or assigned (`$x = ...`).
    Action(Pipe),
    /// `if` / `else if` arms, then the `else` body.
    If(Vec<(Pipe, Vec<Node>)>, Vec<Node>),
    /// `range [$i,] [$e :=] pipeline`: the variables, the pipeline, the body, the `else` body.
    Range(Vec<String>, Pipe, Vec<Node>, Vec<Node>),
    With(Pipe, Vec<Node>, Vec<Node>),
}

/// Nodes up to an `{{end}}` or `{{else ...}}` (returned with its line) or the end of input.
type Stop = Option<(String, usize)>;

fn parse_list(segs: &[Seg], pos: &mut usize) -> Result<(Vec<Node>, Stop), TemplateError> {
    let mut nodes = Vec::new();
    while let Some(seg) = segs.get(*pos) {
        *pos += 1;
        let (src, line) = match seg {
            Seg::Text(t) => {
                nodes.push(Node::Text(t.clone()));
                continue;
            }
            Seg::Action { src, line } => (src.as_str(), *line),
        };
        let err = |m: String| TemplateError(format!("line {line}: {{{{{src}}}}}: {m}"));
        let mut toks = lex(src).map_err(err)?;
        let keyword = match toks.first() {
            Some(Tok::Ident(k)) if KEYWORDS.contains(&k.as_str()) => k.clone(),
            _ => {
                nodes.push(Node::Action(Pipe { toks, src: src.to_owned(), line }));
                continue;
            }
        };
        toks.remove(0);
        let pipe = |toks: Vec<Tok>| Pipe { toks, src: src.to_owned(), line };
        match keyword.as_str() {
            "end" | "else" => return Ok((nodes, Some((src.to_owned(), line)))),
            "if" => {
                let mut arms = vec![(pipe(toks), Vec::new())];
                let otherwise = loop {
                    let (body, stop) = parse_list(segs, pos)?;
                    if let Some(last) = arms.last_mut() {
                        last.1 = body;
                    }
                    let (stop, at) = stop.ok_or_else(|| err("missing {{end}}".into()))?;
                    let mut rest = lex(&stop).map_err(err)?;
                    match rest.first() {
                        Some(Tok::Ident(k)) if k == "end" => break Vec::new(),
                        _ if matches!(rest.get(1), Some(Tok::Ident(k)) if k == "if") => {
                            rest.drain(..2);
                            arms.push((Pipe { toks: rest, src: stop, line: at }, Vec::new()));
                        }
                        _ => break end_of(segs, pos, &err)?,
                    }
                };
                nodes.push(Node::If(arms, otherwise));
            }
            "range" => {
                let (vars, toks) = declared(toks).map_err(err)?;
                let (body, otherwise) = body_and_else(segs, pos, &err)?;
                nodes.push(Node::Range(vars, pipe(toks), body, otherwise));
            }
            "with" => {
                let (body, otherwise) = body_and_else(segs, pos, &err)?;
                nodes.push(Node::With(pipe(toks), body, otherwise));
            }
            other => return Err(err(format!("{other:?} actions are not supported"))),
        }
    }
    Ok((nodes, None))
}

/// The body of a `range`/`with` and its `else` body.
fn body_and_else(
    segs: &[Seg],
    pos: &mut usize,
    err: &dyn Fn(String) -> TemplateError,
) -> Result<(Vec<Node>, Vec<Node>), TemplateError> {
    let (body, stop) = parse_list(segs, pos)?;
    let (stop, _) = stop.ok_or_else(|| err("missing {{end}}".into()))?;
    if stop == "end" {
        return Ok((body, Vec::new()));
    }
    if stop != "else" {
        return Err(err(format!("{{{{{stop}}}}} is not supported here")));
    }
    Ok((body, end_of(segs, pos, err)?))
}

/// An `else` body, up to its `{{end}}`.
fn end_of(segs: &[Seg], pos: &mut usize, err: &dyn Fn(String) -> TemplateError) -> Result<Vec<Node>, TemplateError> {
    let (body, stop) = parse_list(segs, pos)?;
    match stop {
        Some((s, _)) if s == "end" => Ok(body),
        Some((s, _)) => Err(err(format!("unexpected {{{{{s}}}}} after {{{{else}}}}"))),
        None => Err(err("missing {{end}}".into())),
    }
}

/// `$i, $e :=` or `$e :=` before a range's pipeline.
fn declared(toks: Vec<Tok>) -> Result<(Vec<String>, Vec<Tok>), String> {
    let Some(at) = toks.iter().position(|t| *t == Tok::Declare) else { return Ok((Vec::new(), toks)) };
    let vars: Vec<String> = toks[..at]
        .iter()
        .filter(|t| **t != Tok::Comma)
        .map(|t| match t {
            Tok::Var(v) => Ok(v.clone()),
            _ => Err("range declares variables: $x := or $i, $x :=".to_owned()),
        })
        .collect::<Result<_, _>>()?;
    if vars.is_empty() || vars.len() > 2 {
        return Err("range declares one or two variables".into());
    }
    Ok((vars, toks[at + 1..].to_vec()))
}

/// What a pipeline sees: the environment, the variables in scope and `.` (the environment
/// itself at the top, the element inside `range`, the value inside `with`).
struct Cx<'a> {
    env: &'a BTreeMap<String, TValue>,
    vars: Vec<(String, TValue)>,
    dot: Option<TValue>,
}

fn exec(nodes: &[Node], cx: &mut Cx<'_>, out: &mut String) -> Result<(), TemplateError> {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Action(p) => action(p, cx, out)?,
            Node::If(arms, otherwise) => {
                let mut taken = None;
                for (cond, body) in arms {
                    if funcs::truthy(&eval(cond, &cond.toks, cx)?) {
                        taken = Some(body);
                        break;
                    }
                }
                scoped(cx, |cx| exec(taken.unwrap_or(otherwise), cx, out))?;
            }
            Node::Range(vars, p, body, otherwise) => {
                let items = range_items(eval(p, &p.toks, cx)?).map_err(|m| p.err(m))?;
                if items.is_empty() {
                    scoped(cx, |cx| exec(otherwise, cx, out))?;
                }
                for (key, item) in items {
                    scoped(cx, |cx| {
                        match vars.as_slice() {
                            [e] => cx.vars.push((e.clone(), item.clone())),
                            [i, e] => {
                                cx.vars.push((i.clone(), key.clone()));
                                cx.vars.push((e.clone(), item.clone()));
                            }
                            _ => {}
                        }
                        let saved = cx.dot.replace(item.clone());
                        let r = exec(body, cx, out);
                        cx.dot = saved;
                        r
                    })?;
                }
            }
            Node::With(p, body, otherwise) => {
                let v = eval(p, &p.toks, cx)?;
                if funcs::truthy(&v) {
                    let saved = cx.dot.replace(v);
                    let r = scoped(cx, |cx| exec(body, cx, out));
                    cx.dot = saved;
                    r?;
                } else {
                    scoped(cx, |cx| exec(otherwise, cx, out))?;
                }
            }
        }
    }
    Ok(())
}

/// Runs `f` with the variables declared inside it dropped afterwards (Go scopes them to the
/// enclosing control structure).
fn scoped<T>(cx: &mut Cx<'_>, f: impl FnOnce(&mut Cx<'_>) -> T) -> T {
    let depth = cx.vars.len();
    let r = f(cx);
    cx.vars.truncate(depth);
    r
}

/// A printed pipeline, or a variable declared or assigned.
fn action(p: &Pipe, cx: &mut Cx<'_>, out: &mut String) -> Result<(), TemplateError> {
    match p.toks.as_slice() {
        [Tok::Var(name), Tok::Declare, rest @ ..] => {
            let v = eval(p, rest, cx)?;
            cx.vars.push((name.clone(), v));
        }
        [Tok::Var(name), Tok::Assign, rest @ ..] => {
            let v = eval(p, rest, cx)?;
            let slot = cx.vars.iter_mut().rev().find(|(n, _)| n == name);
            slot.ok_or_else(|| p.err(format!("undefined variable {name}")))?.1 = v;
        }
        toks => match eval(p, toks, cx)? {
            // Go would print `<no value>` into the object and fail later, far from the cause.
            TValue::Nil => {
                return Err(p.err(match toks {
                    [Tok::Field(name)] if cx.dot.is_none() => {
                        format!(".{name}: no such key (known: {})", known(cx.env))
                    }
                    _ => "the pipeline has no value (a missing key or nil)".to_owned(),
                }))
            }
            v => out.push_str(&v.to_string()),
        },
    }
    Ok(())
}

fn known(env: &BTreeMap<String, TValue>) -> String {
    env.keys().map(|k| format!(".{k}")).collect::<Vec<_>>().join(", ")
}

/// The most items a `range` over an int walks (a guard against a runaway template).
const RANGE_LIMIT: i64 = 1 << 20;

/// What `range` walks: an int n as 0..n (Go 1.22), a list's elements, a map's values in key
/// order; nothing for nil. Each with its index or key.
fn range_items(v: TValue) -> Result<Vec<(TValue, TValue)>, String> {
    Ok(match v {
        TValue::Nil => Vec::new(),
        TValue::Int(n) if n > RANGE_LIMIT => return Err(format!("range over {n}: more than {RANGE_LIMIT} items")),
        TValue::Int(n) => (0..n.max(0)).map(|i| (TValue::Int(i), TValue::Int(i))).collect(),
        TValue::Json(serde_json::Value::Array(a)) => {
            a.iter().enumerate().map(|(i, e)| (TValue::Int(i as i64), TValue::from_json_any(e))).collect()
        }
        TValue::Json(serde_json::Value::Object(m)) => {
            m.iter().map(|(k, e)| (TValue::Str(k.clone()), TValue::from_json_any(e))).collect()
        }
        other => return Err(format!("range can't iterate over {other}")),
    })
}

fn eval(p: &Pipe, toks: &[Tok], cx: &Cx<'_>) -> Result<TValue, TemplateError> {
    let mut parser = Parser { toks, pos: 0, cx };
    let v = parser.pipeline().map_err(|m| p.err(m))?;
    if parser.pos != toks.len() {
        return Err(p.err("unexpected tokens after the pipeline"));
    }
    Ok(v)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Field(String),
    Dot,
    Ident(String),
    Var(String),
    Lit(TValue),
    LParen,
    RParen,
    Pipe,
    Comma,
    Declare,
    Assign,
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut toks = Vec::new();
    while let Some(&c) = b.get(i) {
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            '(' => {
                toks.push(Tok::LParen);
                i += 1;
            }
            ')' => {
                toks.push(Tok::RParen);
                i += 1;
            }
            '|' => {
                toks.push(Tok::Pipe);
                i += 1;
            }
            ',' => {
                toks.push(Tok::Comma);
                i += 1;
            }
            ':' if b.get(i + 1) == Some(&'=') => {
                toks.push(Tok::Declare);
                i += 2;
            }
            '=' => {
                toks.push(Tok::Assign);
                i += 1;
            }
            '.' => {
                let start = i + 1;
                let mut j = start;
                while b.get(j).is_some_and(|c| c.is_alphanumeric() || *c == '_') {
                    j += 1;
                }
                if j == start {
                    toks.push(Tok::Dot);
                } else {
                    toks.push(Tok::Field(b[start..j].iter().collect()));
                }
                if b.get(j) == Some(&'.') {
                    return Err("nested field references (.a.b) are not supported".into());
                }
                i = j;
            }
            '"' => {
                let mut j = i + 1;
                let mut v = String::new();
                loop {
                    match b.get(j) {
                        None => return Err("unterminated string".into()),
                        Some('"') => break,
                        Some('\\') => {
                            let esc = b.get(j + 1).ok_or("unterminated string")?;
                            v.push(match esc {
                                'n' => '\n',
                                't' => '\t',
                                other => *other,
                            });
                            j += 2;
                        }
                        Some(c) => {
                            v.push(*c);
                            j += 1;
                        }
                    }
                }
                toks.push(Tok::Lit(TValue::Str(v)));
                i = j + 1;
            }
            '`' => {
                let end = b[i + 1..].iter().position(|c| *c == '`').ok_or("unterminated raw string")?;
                toks.push(Tok::Lit(TValue::Str(b[i + 1..i + 1 + end].iter().collect())));
                i += end + 2;
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' => {
                let mut j = i + 1;
                while b.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '_') {
                    j += 1;
                }
                let word: String = b[i..j].iter().collect();
                let clean = word.replace('_', "");
                let lit = if let Ok(n) = clean.parse::<i64>() {
                    TValue::Int(n)
                } else if let Ok(f) = clean.parse::<f64>() {
                    TValue::Float(f)
                } else {
                    return Err(format!("bad number {word:?}"));
                };
                toks.push(Tok::Lit(lit));
                i = j;
            }
            c if c.is_alphabetic() || c == '_' || c == '$' => {
                let mut j = i + 1;
                while b.get(j).is_some_and(|c| c.is_alphanumeric() || *c == '_') {
                    j += 1;
                }
                let word: String = b[i..j].iter().collect();
                toks.push(match word.as_str() {
                    "true" => Tok::Lit(TValue::Bool(true)),
                    "false" => Tok::Lit(TValue::Bool(false)),
                    "nil" => Tok::Lit(TValue::Nil),
                    w if w.starts_with('$') => Tok::Var(word),
                    _ => Tok::Ident(word),
                });
                i = j;
            }
            other => return Err(format!("unexpected character {other:?}")),
        }
    }
    Ok(toks)
}

const KEYWORDS: &[&str] = &["if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"];

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    cx: &'a Cx<'a>,
}

impl Parser<'_> {
    /// command ('|' command)*: each later command gets the previous value as its last argument.
    fn pipeline(&mut self) -> Result<TValue, String> {
        let mut v = self.command(None)?;
        while self.toks.get(self.pos) == Some(&Tok::Pipe) {
            self.pos += 1;
            v = self.command(Some(v))?;
        }
        Ok(v)
    }

    fn command(&mut self, piped: Option<TValue>) -> Result<TValue, String> {
        if let Some(Tok::Ident(name)) = self.toks.get(self.pos) {
            self.pos += 1;
            let mut args = Vec::new();
            while let Some(t) = self.toks.get(self.pos) {
                if matches!(t, Tok::Pipe | Tok::RParen) {
                    break;
                }
                args.push(self.operand()?);
            }
            args.extend(piped);
            return funcs::call(name, &args);
        }
        let v = self.operand()?;
        match self.toks.get(self.pos) {
            None | Some(Tok::Pipe | Tok::RParen) => {}
            Some(_) => return Err("a value cannot take arguments".into()),
        }
        if piped.is_some() {
            return Err("can only pipe into a function".into());
        }
        Ok(v)
    }

    fn operand(&mut self) -> Result<TValue, String> {
        let t = self.toks.get(self.pos).ok_or("missing value")?;
        self.pos += 1;
        match t {
            Tok::Lit(v) => Ok(v.clone()),
            // A missing key is nil (false in `if`, `or`); printing it is an error.
            Tok::Field(name) => match &self.cx.dot {
                None => Ok(self.cx.env.get(name).cloned().unwrap_or(TValue::Nil)),
                Some(TValue::Json(serde_json::Value::Object(m))) => {
                    Ok(m.get(name).map_or(TValue::Nil, TValue::from_json_any))
                }
                Some(other) => Err(format!("can't evaluate field {name} in {other}")),
            },
            Tok::Dot => self.cx.dot.clone().ok_or_else(|| "`.` (the whole environment) cannot be printed".into()),
            Tok::Var(name) => self
                .cx
                .vars
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("undefined variable {name}")),
            Tok::LParen => {
                let v = self.pipeline()?;
                if self.toks.get(self.pos) != Some(&Tok::RParen) {
                    return Err("missing )".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Tok::Ident(name) => funcs::call(name, &[]),
            Tok::RParen | Tok::Pipe | Tok::Comma | Tok::Declare | Tok::Assign => Err("unexpected token".into()),
        }
    }
}
