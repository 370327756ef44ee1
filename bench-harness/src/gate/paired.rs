//! The paired gate: `ksched gate --against BINARY` (or `--against-ref GITREF`).
//!
//! Two builds, the **candidate** (this binary) and the **baseline** (the other), run the same
//! workloads in child processes, interleaved: in every round, each workload runs once on
//! each side, in an order drawn per round (seeded), so load that comes and goes on a shared
//! machine falls on both sides alike. Each child reports the CPU time of its measured phase
//! per pod; per round and workload the gate takes candidate ÷ baseline, and decides on the
//! median of those ratios with a bootstrap confidence interval (stats.rs): a workload fails
//! when the median is beyond `1 + tolerance` and the interval's lower bound is above 1.
//!
//! Instructions per pod (callgrind) stay the hard gate: both builds are counted on the same
//! input, and a candidate count beyond `baseline × (1 + tolerance)` fails, no interval
//! needed (the counts repeat exactly).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ksched_engine::util::rng::Rng;
use serde::Serialize;

use super::scenario::{self, ScenarioSpec};
use super::stats::{self, Bootstrap, RatioDecision};
use super::{instructions_per_pod, INSTRUCTIONS};
use crate::bench::{spawn_child_of, Child};
use crate::progress::Progress;
use crate::synth::Workload;

pub const TIME: &str = "CpuTimePerPod";

/// One side of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub label: &'static str,
    pub exe: PathBuf,
    /// Where the binary came from, for the report (`--against-ref`'s ref and commit).
    pub origin: String,
    /// Environment set for this side's children only.
    #[serde(serialize_with = "env_strings")]
    pub env: Vec<(String, String)>,
    /// `--feature-gates` both sides' children run under.
    #[serde(skip)]
    pub gates: ksched_engine::features::FeatureGates,
}

fn env_strings<S: serde::Serializer>(env: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(env.iter().map(|(k, v)| format!("{k}={v}")))
}

impl Side {
    pub(super) fn child<'a>(&'a self, wrapper: &'a [String]) -> Child<'a> {
        Child { exe: &self.exe, wrapper, env: &self.env, gates: self.gates }
    }
}

/// What runs in one child: one built-in workload, or the user's whole scenario.
#[derive(Clone, Debug)]
pub enum Unit {
    Builtin { workload: Workload, nodes: u32, scale: f64 },
    Scenario(ScenarioSpec),
}

/// One measured phase of a child run.
#[derive(Clone, Debug)]
struct Sample {
    name: String,
    cpu_ns_per_pod: f64,
}

impl Unit {
    /// The row name: `Workload/NNodes`, or the scenario's files.
    pub(super) fn name(&self) -> String {
        match self {
            Unit::Builtin { workload, nodes, .. } => format!("{}/{nodes}Nodes", workload.upstream_name()),
            Unit::Scenario(s) => s.label(),
        }
    }

    /// The `Workload` label: the CLI name, or the scenario's files.
    pub(super) fn label(&self) -> String {
        match self {
            Unit::Builtin { workload, .. } => workload.cli_name(),
            Unit::Scenario(s) => s.label(),
        }
    }

    fn time(&self, side: &Side, seed: u64) -> Result<Vec<Sample>, String> {
        let child = side.child(&[]);
        match self {
            Unit::Builtin { workload, nodes, scale } => {
                let r = spawn_child_of(&child, *workload, *nodes as usize, *scale, seed, true)
                    .map_err(|e| format!("{} build: {e}", side.label))?;
                Ok(vec![Sample { name: self.name(), cpu_ns_per_pod: r.cpu_ns_per_pod }])
            }
            Unit::Scenario(spec) => {
                let r = scenario::spawn(&child, spec, seed).map_err(|e| format!("{} build: {e}", side.label))?;
                Ok(r.rows
                    .into_iter()
                    .map(|row| Sample { name: row.name, cpu_ns_per_pod: row.cpu_ns_per_pod })
                    .collect())
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct PairedOptions {
    pub rounds: u32,
    pub tolerance: f64,
    pub time_tolerance: f64,
    pub bootstrap: Bootstrap,
    /// Seed of the workloads' RNG and of each round's order.
    pub seed: u64,
    /// The valgrind to count instructions with; None: no instruction counts.
    pub valgrind: Option<String>,
    pub time: bool,
    /// Show a progress bar on stderr when it is a terminal (text output).
    pub progress: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct PairedReport {
    pub mode: &'static str,
    pub candidate: Side,
    pub baseline: Side,
    pub rounds: u32,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub rows: Vec<PairedRow>,
    pub regressions: usize,
    pub pass: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct PairedRow {
    pub metric: &'static str,
    pub workload: String,
    /// Median of the baseline's samples (instructions per pod, or CPU ns per pod).
    pub baseline: f64,
    pub candidate: f64,
    /// Candidate ÷ baseline: the median of the per-round ratios for time.
    pub ratio: f64,
    /// The bootstrap interval of the median ratio (time only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<[f64; 2]>,
    /// The per-round ratios (time only), in round order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ratios: Vec<f64>,
    pub tolerance: f64,
    pub verdict: &'static str,
    /// The unit of `baseline` and `candidate` (`gate::unit_of`).
    pub unit: &'static str,
}

/// Runs the paired comparison of `units` on both sides.
pub fn run(units: &[Unit], candidate: Side, baseline: Side, o: &PairedOptions) -> Result<PairedReport, String> {
    let mut rows = Vec::new();
    let runs = u64::from(o.time) * u64::from(o.rounds) * units.len() as u64 * 2
        + u64::from(o.valgrind.is_some()) * units.len() as u64 * 2;
    let mut bar = Progress::stderr(!o.progress, runs, "{spinner} gate [{bar:30}] {pos}/{len} runs  {msg}");
    if let Some(valgrind) = &o.valgrind {
        for u in units {
            let mut counts = [(); 2].map(|_| BTreeMap::new());
            for (i, side) in [&baseline, &candidate].into_iter().enumerate() {
                bar.set_message(format!("callgrind: {} ({})", u.name(), side.label));
                counts[i] = instructions_per_pod(valgrind, side, u, o.seed)?;
                bar.inc(1);
            }
            let [b, c] = counts;
            for (name, base) in &b {
                let cand = c.get(name).copied().unwrap_or(f64::NAN);
                let regression = base > &0.0 && cand > base * (1.0 + o.tolerance);
                rows.push(PairedRow {
                    metric: INSTRUCTIONS,
                    unit: super::unit_of(INSTRUCTIONS),
                    workload: name.clone(),
                    baseline: *base,
                    candidate: cand,
                    ratio: cand / base,
                    ci: None,
                    ratios: Vec::new(),
                    tolerance: o.tolerance,
                    verdict: if regression {
                        "REGRESSION"
                    } else if cand.is_nan() {
                        "missing"
                    } else {
                        "ok"
                    },
                });
            }
        }
    }
    if o.time {
        // name -> (baseline samples, candidate samples), in first-seen order.
        let mut names: Vec<String> = Vec::new();
        let mut samples: BTreeMap<String, [Vec<f64>; 2]> = BTreeMap::new();
        let mut rng = Rng::seed(o.seed);
        for round in 0..o.rounds {
            for u in units {
                let order: [usize; 2] = if rng.below(2) == 0 { [0, 1] } else { [1, 0] };
                let mut got: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
                for i in order {
                    let side = if i == 0 { &baseline } else { &candidate };
                    bar.set_message(format!("round {}/{}: {} ({})", round + 1, o.rounds, u.name(), side.label));
                    got[i] = u.time(side, o.seed)?;
                    bar.inc(1);
                }
                // A round counts for a phase only when both sides measured it.
                for s in &got[0] {
                    let Some(c) = got[1].iter().find(|c| c.name == s.name) else { continue };
                    if !names.contains(&s.name) {
                        names.push(s.name.clone());
                    }
                    let e = samples.entry(s.name.clone()).or_default();
                    e[0].push(s.cpu_ns_per_pod);
                    e[1].push(c.cpu_ns_per_pod);
                }
            }
        }
        for (k, name) in names.iter().enumerate() {
            let [b, c] = &samples[name];
            let ratios = stats::paired_ratios(c, b);
            // Each workload's interval from its own stream of the bootstrap seed.
            let boot = Bootstrap { seed: o.bootstrap.seed.wrapping_add(k as u64), ..o.bootstrap };
            let d: RatioDecision = stats::decide(&ratios, o.time_tolerance, boot);
            rows.push(PairedRow {
                metric: TIME,
                unit: super::unit_of(TIME),
                workload: name.clone(),
                baseline: stats::median(b),
                candidate: stats::median(c),
                ratio: d.median,
                ci: Some([d.ci_low, d.ci_high]),
                ratios,
                tolerance: o.time_tolerance,
                verdict: if d.regression {
                    "REGRESSION"
                } else if d.faster {
                    "faster"
                } else {
                    "ok"
                },
            });
        }
    }
    bar.finish();
    let regressions = rows.iter().filter(|r| r.verdict == "REGRESSION").count();
    Ok(PairedReport {
        mode: "paired",
        candidate,
        baseline,
        rounds: o.rounds,
        confidence: o.bootstrap.confidence,
        resamples: o.bootstrap.resamples,
        seed: o.seed,
        rows,
        regressions,
        pass: regressions == 0,
    })
}

pub fn render(r: &PairedReport) -> String {
    let origin = |s: &Side| {
        let env: Vec<String> = s.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let env = if env.is_empty() { String::new() } else { format!(" with {}", env.join(" ")) };
        format!("{}{env}", s.origin)
    };
    let mut s = format!(
        "ksched gate (paired): candidate {} vs baseline {}\n  {} rounds, order drawn per round; time: median of per-round ratios, {:.0}% bootstrap interval ({} resamples, seed {})\n",
        origin(&r.candidate),
        origin(&r.baseline),
        r.rounds,
        r.confidence * 100.0,
        r.resamples,
        r.seed
    );
    s += &format!(
        "{:<19} {:<46} {:>20} {:>20} {:>7} {:>17} {:>6}  {}\n",
        "metric", "workload", "baseline", "candidate", "ratio", "interval", "limit", "verdict"
    );
    for row in &r.rows {
        let ci = row.ci.map(|[lo, hi]| format!("[{lo:.3}, {hi:.3}]")).unwrap_or_else(|| "-".into());
        s += &format!(
            "{:<19} {:<46} {:>20} {:>20} {:>7.3} {:>17} {:>6.2}  {}\n",
            row.metric,
            row.workload,
            super::figure(row.metric, Some(row.baseline)),
            super::figure(row.metric, Some(row.candidate)),
            row.ratio,
            ci,
            1.0 + row.tolerance,
            row.verdict
        );
    }
    s += &super::verdict_line(r.regressions);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rows: Vec<PairedRow>) -> PairedReport {
        let side =
            |label| Side { label, exe: "k".into(), origin: label.to_string(), env: vec![], gates: Default::default() };
        let regressions = rows.iter().filter(|r| r.verdict == "REGRESSION").count();
        PairedReport {
            mode: "paired",
            candidate: side("candidate"),
            baseline: side("baseline"),
            rounds: 5,
            confidence: 0.95,
            resamples: 2000,
            seed: 1,
            rows,
            regressions,
            pass: regressions == 0,
        }
    }

    #[test]
    fn render_shows_the_interval_and_the_verdict() {
        let row = PairedRow {
            metric: TIME,
            workload: "SchedulingBasic/100Nodes".into(),
            baseline: 10_000.0,
            candidate: 52_000.0,
            ratio: 5.2,
            ci: Some([5.0, 5.4]),
            ratios: vec![5.2; 5],
            tolerance: 0.1,
            verdict: "REGRESSION",
            unit: crate::gate::unit_of(TIME),
        };
        let text = render(&report(vec![row]));
        assert!(
            text.contains("[5.000, 5.400]") && text.contains("52.00 µs/pod") && text.contains("REGRESSION"),
            "{text}"
        );
        assert!(text.ends_with("ksched gate: FAIL: 1 metric(s) regressed beyond tolerance\n"), "{text}");
        let json = serde_json::to_value(report(vec![])).unwrap();
        assert_eq!((json["pass"].as_bool(), json["mode"].as_str()), (Some(true), Some("paired")));
    }
}
