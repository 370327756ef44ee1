//! The subset of Go's `text/template` that scheduler_perf's object templates use: text with
//! `{{ ... }}` actions holding a pipeline of field references (`.Index`, `.Count`, template
//! params), literals, parenthesised sub-pipelines, `|` pipes and function calls (every function
//! upstream's harness offers: see [`super::funcs::FUNCTIONS`]). `{{-` / `-}}` trim the
//! whitespace beside an action, and
//! `{{/* ... */}}` is a comment.
//!
//! Control structures (`if`, `range`, `with`, `define`, ...) are rejected with an error naming
//! them; no upstream template uses them. A reference to a missing key is an error (Go would
//! print `<no value>` into the object and fail later, far from the cause).

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
            _ => None,
        }
    }
}

impl fmt::Display for TValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TValue::Int(i) => write!(f, "{i}"),
            TValue::Float(x) => f.write_str(&go_float(*x)),
            TValue::Str(s) => f.write_str(s),
            TValue::Bool(b) => write!(f, "{b}"),
        }
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
    let mut out = String::with_capacity(src.len());
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
        out.push_str(text);
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
            let v =
                eval_action(action, env).map_err(|m| TemplateError(format!("line {line}: {{{{{action}}}}}: {m}")))?;
            out.push_str(&v.to_string());
        }
        line += after[..end].matches('\n').count();
        rest = next;
    }
    out.push_str(rest);
    Ok(out)
}

/// Renders a template only when it has actions; a plain file is returned as is.
pub fn has_actions(src: &str) -> bool {
    src.contains("{{")
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Field(String),
    Dot,
    Ident(String),
    Lit(TValue),
    LParen,
    RParen,
    Pipe,
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

fn eval_action(action: &str, env: &BTreeMap<String, TValue>) -> Result<TValue, String> {
    let toks = lex(action)?;
    if let Some(Tok::Ident(k)) = toks.first() {
        if KEYWORDS.contains(&k.as_str()) {
            return Err(format!("{k:?} actions are not supported (only value pipelines are)"));
        }
        if k.starts_with('$') {
            return Err("template variables are not supported".into());
        }
    }
    let mut p = Parser { toks: &toks, pos: 0, env };
    let v = p.pipeline()?;
    if p.pos != toks.len() {
        return Err("unexpected tokens after the pipeline".into());
    }
    Ok(v)
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    env: &'a BTreeMap<String, TValue>,
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
            Tok::Field(name) => {
                self.env.get(name).cloned().ok_or_else(|| format!(".{name}: no such key (known: {})", self.known()))
            }
            Tok::Dot => Err("`.` (the whole environment) cannot be printed".into()),
            Tok::LParen => {
                let v = self.pipeline()?;
                if self.toks.get(self.pos) != Some(&Tok::RParen) {
                    return Err("missing )".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Tok::Ident(name) => funcs::call(name, &[]),
            Tok::RParen | Tok::Pipe => Err("unexpected token".into()),
        }
    }

    fn known(&self) -> String {
        self.env.keys().map(|k| format!(".{k}")).collect::<Vec<_>>().join(", ")
    }
}
