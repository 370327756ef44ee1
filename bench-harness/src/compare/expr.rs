//! `--fail-if` expressions: `METRIC OP VALUE`, where each side is a number or a metric,
//! optionally of a named configuration (`B.pending > A.pending`). A side without a
//! configuration is evaluated for every configuration (`pending>0` holds when any
//! configuration has a pending pod); with every metric named, the expression is evaluated once.

use super::metrics::ConfigReport;

/// The metrics `--fail-if` knows, with their values.
pub fn metric(r: &ConfigReport, name: &str) -> Option<f64> {
    let f = r.fragmentation.as_ref();
    Some(match name {
        "scheduled" => r.scheduled as f64,
        "pending" => r.pending as f64,
        "preempted" => r.preempted as f64,
        "victims" => r.victims as f64,
        "attempts" => r.attempts as f64,
        "unschedulable_attempts" => r.unschedulable_attempts as f64,
        "nodes" => r.nodes as f64,
        "nodes_in_use" => r.nodes_in_use as f64,
        "nodes_non_empty" => r.nodes_non_empty as f64,
        "cpu_mean" => r.cpu.mean,
        "cpu_stddev" => r.cpu.stddev,
        "cpu_min" => r.cpu.min,
        "cpu_max" => r.cpu.max,
        "cpu_p10" => r.cpu.p10,
        "cpu_p90" => r.cpu.p90,
        "cpu_range" => r.cpu.range,
        "memory_mean" => r.memory.mean,
        "memory_stddev" => r.memory.stddev,
        "memory_min" => r.memory.min,
        "memory_max" => r.memory.max,
        "memory_p10" => r.memory.p10,
        "memory_p90" => r.memory.p90,
        "memory_range" => r.memory.range,
        "fragmentation" => f.map_or(0.0, |f| f.fragmentation),
        "fit_individually" => f.map_or(0.0, |f| f.fit_individually as f64),
        "fit_by_totals" => f.map_or(0.0, |f| f.fit_by_totals as f64),
        "max_zone_skew" => r.max_zone_skew as f64,
        "cluster_fragmentation" => r.cluster_fragmentation.as_ref().map_or(0.0, |f| f.fragmentation),
        "cluster_max_zone_skew" => r.cluster_max_zone_skew as f64,
        "moved" => r.moved as f64,
        "throughput" => r.throughput_pods_per_second,
        "latency_p50_us" => r.attempt_latency_us.p50,
        "latency_p90_us" => r.attempt_latency_us.p90,
        "latency_p99_us" => r.attempt_latency_us.p99,
        _ => return None,
    })
}

pub const METRICS: &[&str] = &[
    "scheduled",
    "pending",
    "preempted",
    "victims",
    "attempts",
    "unschedulable_attempts",
    "nodes",
    "nodes_in_use",
    "nodes_non_empty",
    "cpu_mean",
    "cpu_stddev",
    "cpu_min",
    "cpu_max",
    "cpu_p10",
    "cpu_p90",
    "cpu_range",
    "memory_mean",
    "memory_stddev",
    "memory_min",
    "memory_max",
    "memory_p10",
    "memory_p90",
    "memory_range",
    "fragmentation",
    "fit_individually",
    "fit_by_totals",
    "max_zone_skew",
    "cluster_fragmentation",
    "cluster_max_zone_skew",
    "moved",
    "throughput",
    "latency_p50_us",
    "latency_p90_us",
    "latency_p99_us",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Side {
    Number(f64),
    /// (configuration label, metric); no label: each configuration's own.
    Metric(Option<String>, String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FailIf {
    pub text: String,
    pub left: Side,
    pub op: Op,
    pub right: Side,
}

fn side(s: &str, labels: &[String], expr: &str) -> Result<Side, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err(format!("--fail-if {expr:?}: a side of the comparison is empty"));
    }
    if let Ok(n) = s.parse::<f64>() {
        return Ok(Side::Number(n));
    }
    let (label, name) = match s.split_once('.') {
        Some((l, m)) => (Some(l.trim().to_owned()), m.trim()),
        None => (None, s),
    };
    if let Some(l) = &label {
        if !labels.contains(l) {
            return Err(format!(
                "--fail-if {expr:?}: no configuration {l:?}; the configurations are {}",
                labels.join(", ")
            ));
        }
    }
    if !METRICS.contains(&name) {
        return Err(format!("--fail-if {expr:?}: unknown metric {name:?}; metrics: {}", METRICS.join(", ")));
    }
    Ok(Side::Metric(label, name.to_owned()))
}

impl FailIf {
    /// Parses `expr`; `labels` are the configurations' (A, B, ...).
    pub fn parse(expr: &str, labels: &[String]) -> Result<FailIf, String> {
        const OPS: [(&str, Op); 7] = [
            (">=", Op::Ge),
            ("<=", Op::Le),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            (">", Op::Gt),
            ("<", Op::Lt),
            ("=", Op::Eq),
        ];
        let found = OPS
            .iter()
            .filter_map(|(t, op)| expr.find(t).map(|i| (i, *t, *op)))
            .min_by_key(|(i, t, _)| (*i, usize::MAX - t.len()));
        let Some((i, t, op)) = found else {
            return Err(format!("--fail-if {expr:?}: expected METRIC OP VALUE with OP one of > >= < <= == !="));
        };
        let left = side(&expr[..i], labels, expr)?;
        let right = side(&expr[i + t.len()..], labels, expr)?;
        if matches!((&left, &right), (Side::Number(_), Side::Number(_))) {
            return Err(format!("--fail-if {expr:?}: compares no metric"));
        }
        Ok(FailIf { text: expr.to_owned(), left, op, right })
    }

    /// A message per configuration (or one for the whole comparison) where the expression
    /// holds.
    pub fn holds(&self, configs: &[ConfigReport]) -> Result<Vec<String>, String> {
        let named = |label: &str| configs.iter().find(|c| c.label == label);
        let value = |s: &Side, own: Option<&ConfigReport>| -> Result<(f64, String), String> {
            match s {
                Side::Number(n) => Ok((*n, String::new())),
                Side::Metric(label, m) => {
                    let c = match label {
                        Some(l) => named(l).ok_or_else(|| format!("no configuration {l}"))?,
                        None => own.ok_or("a metric without a configuration")?,
                    };
                    let v = metric(c, m).ok_or_else(|| format!("unknown metric {m}"))?;
                    Ok((v, format!("{}.{m} = {} ({})", c.label, fmt(v), c.config)))
                }
            }
        };
        let per_config = [&self.left, &self.right].iter().any(|s| matches!(s, Side::Metric(None, _)));
        let owners: Vec<Option<&ConfigReport>> =
            if per_config { configs.iter().map(Some).collect() } else { vec![None] };
        let mut hits = Vec::new();
        for own in owners {
            let (a, da) = value(&self.left, own)?;
            let (b, db) = value(&self.right, own)?;
            if self.op.holds(a, b) {
                let shown: Vec<String> = [da, db].into_iter().filter(|d| !d.is_empty()).collect();
                hits.push(format!("holds: {}", shown.join(", ")));
            }
        }
        Ok(hits)
    }
}

fn fmt(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}
