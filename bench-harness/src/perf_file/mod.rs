//! `ksched run --workload FILE`: runs the test cases of an upstream scheduler_perf workload
//! file (see `ksched_k8s::perf_workload` for the format) and evaluates each
//! workload's threshold like upstream. The executor is in [`exec`].

pub mod exec;

use std::path::Path;

use ksched_k8s::perf_workload::{labels_enabled, load_file, LoadOptions, ResolvedOp, TestCase, Workload};

use crate::metrics::{DataItem, DataItems};
use crate::report::Section;
use exec::{Options, Status, WorkloadResult};

/// Which workloads of the file to run.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub test: Option<String>,
    pub workload: Option<String>,
    /// Upstream's label filter entries (`performance`, `-short`, `+integration-test`).
    pub labels: Vec<String>,
}

/// Runs the selected workloads of `path`, in file order.
pub fn run_file(
    path: &Path,
    sel: &Selection,
    load: &LoadOptions,
    opts: &Options,
) -> Result<Vec<WorkloadResult>, String> {
    let mut out = Vec::new();
    for (tc, w, ops) in select(path, sel, load)? {
        match ops {
            Err(not_run) => {
                let mut r = WorkloadResult::new(format!("{}/{}", tc.name, w.name));
                r.status = match not_run {
                    NotRun::Skipped(reason) => Status::Skipped(reason),
                    NotRun::Invalid(why) => Status::Failed(why),
                };
                out.push(r);
            }
            Ok(ops) => out.push(exec::run_workload(&tc, &w, &ops, opts)),
        }
    }
    Ok(out)
}

/// Why a selected workload does not run.
#[derive(Clone, Debug, PartialEq)]
pub enum NotRun {
    /// ksched does not run it: an op or alpha feature it does not model.
    Skipped(String),
    /// The workload is not valid (a param no op uses, a threshold on a metric the test case
    /// does not collect): it fails, as upstream fails that workload and runs the others.
    Invalid(String),
}

impl std::fmt::Display for NotRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRun::Skipped(why) | NotRun::Invalid(why) => f.write_str(why),
        }
    }
}

/// A selected workload: its test case, itself, and its resolved ops or why it does not run.
pub type Selected = (TestCase, Workload, Result<Vec<ResolvedOp>, NotRun>);

/// The workloads of `path` that `sel` selects, in file order; an error when none is.
pub fn select(path: &Path, sel: &Selection, load: &LoadOptions) -> Result<Vec<Selected>, String> {
    let file = load_file(path).map_err(|e| e.to_string())?;
    if let Some(t) = &sel.test {
        if !file.test_cases.iter().any(|tc| &tc.name == t) {
            let names: Vec<&str> = file.test_cases.iter().map(|t| t.name.as_str()).collect();
            return Err(format!("{}: no test case {t:?}; test cases: {}", path.display(), names.join(", ")));
        }
    }
    let mut out = Vec::new();
    for tc in &file.test_cases {
        if sel.test.as_ref().is_some_and(|t| t != &tc.name) {
            continue;
        }
        for w in &tc.workloads {
            if sel.workload.as_ref().is_some_and(|n| n != &w.name) {
                continue;
            }
            let labels: Vec<String> = tc.labels.iter().chain(&w.labels).cloned().collect();
            if !labels_enabled(&sel.labels, &labels) {
                continue;
            }
            // A workload needing an alpha feature ksched does not model is skipped before its
            // ops are resolved: upstream checks such test cases against its own later rules.
            let gates = tc.feature_gates(w);
            if let Some(reason) = exec::unmodelled_feature(&gates) {
                out.push((tc.clone(), w.clone(), Err(NotRun::Skipped(reason))));
                continue;
            }
            let ops = match tc.resolve(w, load) {
                Err(e) => Err(NotRun::Invalid(e.to_string())),
                Ok(ops) => match exec::unsupported_reason(&ops).or_else(|| exec::unmodelled_object(&ops, &gates)) {
                    Some(reason) => Err(NotRun::Skipped(reason)),
                    None => Ok(ops),
                },
            };
            out.push((tc.clone(), w.clone(), ops));
        }
    }
    if out.is_empty() {
        return Err(format!("{}: no workload matches the selection", path.display()));
    }
    Ok(out)
}

/// All data items of the runs (skipped and failed runs have none).
pub fn data_items(results: &[WorkloadResult]) -> Vec<DataItem> {
    results.iter().flat_map(|r| r.data_items.iter().cloned()).collect()
}

pub fn print_text(path: &Path, results: &[WorkloadResult]) {
    println!("ksched run: {}", path.display());
    for r in results {
        let status = match &r.status {
            Status::Passed => "ok".to_owned(),
            Status::ThresholdMissed(m) => format!("THRESHOLD MISSED ({})", m.len()),
            Status::Failed(_) => "FAILED".to_owned(),
            Status::Skipped(why) => format!("skipped: {why}"),
        };
        println!("  {:<60} {status}", r.name);
        if matches!(r.status, Status::Skipped(_)) {
            continue;
        }
        let c = &r.counts;
        println!(
            "    {} nodes, {} pods created, {} scheduled, {} unschedulable attempts, {} preemptions ({} victims); {:.3} s wall, {:.1} s simulated",
            c.nodes, c.pods_created, c.scheduled, c.unschedulable, c.preemptions, c.victims, r.seconds, r.simulated_seconds
        );
        if c.batch_hints > 0 {
            println!(
                "    OpportunisticBatching: {} pods took the next node of the previous pod's ranking",
                c.batch_hints
            );
        }
        for item in &r.data_items {
            let metric = item.labels.get("Metric").map(String::as_str).unwrap_or("");
            let name = item.labels.get("Name").map(String::as_str).unwrap_or("");
            let data: Vec<String> = item.data.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
            let result = item.labels.get("result").map(|r| format!(" [{r}]")).unwrap_or_default();
            println!("    {name}: {metric}{result} ({}): {}", item.unit, data.join(", "));
        }
        match &r.status {
            Status::ThresholdMissed(m) => m.iter().for_each(|x| println!("    threshold missed: {x}")),
            Status::Failed(why) => println!("    error: {why}"),
            _ => {}
        }
        for w in &r.warnings {
            println!("    note: {w}");
        }
    }
    let count = |f: fn(&Status) -> bool| results.iter().filter(|r| f(&r.status)).count();
    // Skips for an unmodelled alpha feature are expected; CI tells them from the others here.
    let alpha = count(|s| matches!(s, Status::Skipped(why) if exec::is_alpha_skip(why)));
    println!(
        "  {} passed, {} missed a threshold, {} failed, {} skipped{}",
        count(|s| matches!(s, Status::Passed)),
        count(|s| matches!(s, Status::ThresholdMissed(_))),
        count(|s| matches!(s, Status::Failed(_))),
        count(|s| matches!(s, Status::Skipped(_))),
        if alpha > 0 {
            format!(" ({alpha} of them for an alpha feature ksched does not model)")
        } else {
            String::new()
        }
    );
}

/// Report sections for the runs that ran.
pub fn sections(results: Vec<WorkloadResult>) -> Vec<Section> {
    results
        .into_iter()
        .filter(|r| !matches!(r.status, Status::Skipped(_)))
        .map(|r| {
            let c = &r.counts;
            let status = match &r.status {
                Status::Passed => "passed".to_owned(),
                Status::ThresholdMissed(m) => format!("threshold missed: {}", m.join("; ")),
                Status::Failed(why) => format!("failed: {why}"),
                Status::Skipped(why) => format!("skipped: {why}"),
            };
            let mut summary = vec![
                ("status".to_owned(), status),
                ("nodes".to_owned(), c.nodes.to_string()),
                ("pods created / scheduled".to_owned(), format!("{} / {}", c.pods_created, c.scheduled)),
                ("unschedulable attempts".to_owned(), c.unschedulable.to_string()),
                ("preemptions (victims)".to_owned(), format!("{} ({})", c.preemptions, c.victims)),
                ("wall / simulated time".to_owned(), format!("{:.3} s / {:.1} s", r.seconds, r.simulated_seconds)),
            ];
            for item in
                r.data_items.iter().filter(|i| i.labels.get("Metric").is_some_and(|m| m == "SchedulingThroughput"))
            {
                let v = |k: &str| item.data.get(k).copied().unwrap_or(0.0);
                summary.push((
                    format!("throughput {}", item.labels.get("Name").cloned().unwrap_or_default()),
                    format!(
                        "avg {:.0}, p50 {:.0}, p90 {:.0}, p99 {:.0} pods/s",
                        v("Average"),
                        v("Perc50"),
                        v("Perc90"),
                        v("Perc99")
                    ),
                ));
            }
            Section { title: r.name, summary, measurements: r.measurements, utilization: r.utilization }
        })
        .collect()
}

/// Writes `--results`.
pub fn write_results(path: &Path, items: Vec<DataItem>) -> Result<(), String> {
    DataItems::new(items).write(path)
}

#[cfg(test)]
pub(crate) mod tests;
