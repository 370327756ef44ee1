//! A user's own scenario for `ksched gate --workload FILE [--config FILE]`: an upstream
//! scheduler_perf workload file, or Kubernetes manifests (nodes and pending pods, as
//! `ksched simulate -f` reads them; `--workload` repeats for several files).
//!
//! The gate never runs a scenario in its own process: it starts `ksched gate --child
//! --workload ...` of the build under test (this one or `--against`'s), which schedules the
//! scenario and prints one JSON [`ScenarioReport`] line: per measured phase, the pods it
//! scheduled and the process's CPU and wall time per pod. A workload file's measured phases
//! are its `collectMetrics` ops (upstream's `startCollectingMetrics` .. `stop`), one row per
//! phase; manifests are one phase: every pending pod scheduled until nothing more can happen,
//! per pending pod.
//!
//! Under callgrind the instructions counted are those of the scheduling loops
//! ([`TOGGLES`]), divided by every pod the scenario scheduled.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::load::LoadSim;
use ksched_engine::features::FeatureGates;
use ksched_engine::scheduler::CycleOutcome;
use ksched_k8s::manifest::{read_files_with, ReadOptions};
use ksched_k8s::perf_workload::LoadOptions;
use ksched_sim::simulation::{EventSource, RunOptions, Until};
use ksched_sim::Simulation;
use serde::{Deserialize, Serialize};

use crate::bench::{json_line, Child};
use crate::perf_file::exec::{Options, Status};
use crate::perf_file::{self, Selection};
use crate::probe::{counted_clock, measured_cpu_ns, CpuOf};
use crate::synth::{after_attempt, slowdown_from_env};

/// callgrind collects inside these (a workload file's waits; the manifests' one run).
pub const TOGGLES: [&str; 2] = ["*perf_file::exec::Exec::drive*", "*gate::scenario::drive_manifests*"];

/// What `--workload`, `--config`, `--test` and `--workload-name` name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSpec {
    pub files: Vec<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_name: Option<String>,
    /// Upstream's label filter (`short`, `-performance`), as `ksched run --label`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// `--feature-gates` the scenario runs under (passed on to the child).
    #[serde(skip)]
    pub gates: FeatureGates,
    /// `--strict` (passed on to the child).
    #[serde(skip)]
    pub strict: bool,
}

/// A child's measurements of one scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioReport {
    pub rows: Vec<ScenarioRow>,
    /// Every pod the scenario scheduled (the instruction count's denominator).
    pub scheduled: usize,
    /// What the run warned about (fields ksched does not model, kinds skipped, workloads
    /// skipped): the gate prints them once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One measured phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRow {
    pub name: String,
    pub pods: usize,
    /// Process CPU time of the phase per pod, in ns.
    pub cpu_ns_per_pod: f64,
    /// Wall time of the phase per pod, in ns.
    pub wall_ns_per_pod: f64,
}

enum Kind<'a> {
    WorkloadFile(&'a Path),
    Manifests(&'a [PathBuf]),
}

impl ScenarioSpec {
    /// A short name for tables: the file, or the first file and how many more.
    pub fn label(&self) -> String {
        match self.files.as_slice() {
            [one] => one.display().to_string(),
            [first, rest @ ..] => format!("{} (+{} files)", first.display(), rest.len()),
            [] => "-".into(),
        }
    }

    /// A workload file is one YAML file whose top level is a list (of test cases);
    /// everything else is read as manifests.
    fn kind(&self) -> Result<Kind<'_>, String> {
        if let [one] = self.files.as_slice() {
            if one.is_file() {
                let text = std::fs::read_to_string(one).map_err(|e| format!("{}: {e}", one.display()))?;
                if let Ok(serde_json::Value::Array(_)) = yaml_serde::from_str::<serde_json::Value>(&text) {
                    return Ok(Kind::WorkloadFile(one));
                }
            }
        }
        if self.test.is_some() || self.workload_name.is_some() || !self.labels.is_empty() {
            return Err(format!(
                "--test, --workload-name and --label select workloads of a scheduler_perf workload file; {} is read as manifests",
                self.label()
            ));
        }
        Ok(Kind::Manifests(&self.files))
    }

    /// The arguments of `ksched gate --child` for this scenario.
    pub fn child_args(&self, seed: u64) -> Vec<String> {
        let mut a = vec!["gate".to_string(), "--child".into()];
        for f in &self.files {
            a.push("--workload".into());
            a.push(f.display().to_string());
        }
        let opt = |a: &mut Vec<String>, flag: &str, v: Option<String>| {
            if let Some(v) = v {
                a.push(flag.into());
                a.push(v);
            }
        };
        opt(&mut a, "--config", self.config.as_ref().map(|c| c.display().to_string()));
        opt(&mut a, "--test", self.test.clone());
        opt(&mut a, "--workload-name", self.workload_name.clone());
        for l in &self.labels {
            opt(&mut a, "--label", Some(l.clone()));
        }
        a.push("--seed".into());
        a.push(seed.to_string());
        a.extend(crate::feature_gates::child_args(&self.gates));
        if self.strict {
            a.push("--strict".into());
        }
        a
    }
}

/// Runs the scenario in this process (the child's side) and measures it.
pub fn run_here(spec: &ScenarioSpec, seed: u64) -> Result<ScenarioReport, String> {
    let slowdown = slowdown_from_env();
    match spec.kind()? {
        Kind::WorkloadFile(path) => run_workload_file(spec, path, seed, slowdown),
        Kind::Manifests(files) => run_manifests(spec, files, seed, slowdown),
    }
}

fn run_workload_file(spec: &ScenarioSpec, path: &Path, seed: u64, slowdown: u64) -> Result<ScenarioReport, String> {
    let sel = Selection { test: spec.test.clone(), workload: spec.workload_name.clone(), labels: spec.labels.clone() };
    let opts = Options {
        seed,
        scheduler_config: spec.config.clone(),
        slowdown,
        gates: spec.gates,
        strict: spec.strict,
        ..Options::default()
    };
    let results = perf_file::run_file(path, &sel, &LoadOptions::default(), &opts)?;
    let mut report = ScenarioReport::default();
    for r in &results {
        report.warnings.extend(r.warnings.iter().map(|w| format!("{}: {}: {w}", path.display(), r.name)));
        match &r.status {
            Status::Failed(why) => return Err(format!("{}: {}: {why}", path.display(), r.name)),
            Status::Skipped(why) => {
                report.warnings.push(format!("{}: {} skipped: {why}", path.display(), r.name));
                continue;
            }
            Status::Passed | Status::ThresholdMissed(_) => {}
        }
        report.scheduled += r.counts.scheduled;
        for m in r.measurements.iter().filter(|m| m.scheduled > 0) {
            let pods = m.scheduled as f64;
            report.rows.push(ScenarioRow {
                name: m.name.clone(),
                pods: m.scheduled,
                cpu_ns_per_pod: m.cpu_ns as f64 / pods,
                wall_ns_per_pod: m.seconds * 1e9 / pods,
            });
        }
    }
    if report.rows.is_empty() {
        return Err(format!("{}: no selected workload measured a scheduled pod (collectMetrics)", path.display()));
    }
    Ok(report)
}

fn run_manifests(spec: &ScenarioSpec, files: &[PathBuf], seed: u64, slowdown: u64) -> Result<ScenarioReport, String> {
    let options = ReadOptions { gates: spec.gates, strict: spec.strict, ..ReadOptions::default() };
    let manifests = read_files_with(files, options).map_err(|e| e.to_string())?;
    let warnings = manifests.skipped_summary().into_iter().chain(manifests.unmodelled.lines()).collect();
    let (profiles, queue) = crate::simulate::load_profiles(spec.config.as_deref(), spec.gates)?;
    let loaded = manifests.load_full(profiles, queue, seed).map_err(|e| e.to_string())?;
    let (mut sim, mut controllers) = (loaded.sim, loaded.controllers);
    let pending = loaded.pending.len();
    if pending == 0 {
        return Err(format!("{}: no pending pods to schedule", spec.label()));
    }
    let (wall, cpu) = (Instant::now(), measured_cpu_ns(CpuOf::Process));
    let until = controllers.until(&sim, None);
    let scheduled = drive_manifests(&mut sim, &mut controllers, until, slowdown)?;
    let cpu_ns = measured_cpu_ns(CpuOf::Process).saturating_sub(cpu) as f64;
    let wall_ns = wall.elapsed().as_nanos() as f64;
    Ok(ScenarioReport {
        rows: vec![ScenarioRow {
            name: spec.label(),
            pods: pending,
            cpu_ns_per_pod: cpu_ns / pending as f64,
            wall_ns_per_pod: wall_ns / pending as f64,
        }],
        scheduled,
        warnings,
    })
}

/// The manifests' measured phase: every pending pod until nothing more can happen. Never
/// inlined: callgrind's `--toggle-collect` names it.
#[inline(never)]
fn drive_manifests(
    sim: &mut Simulation,
    controllers: &mut dyn EventSource,
    until: Until,
    slowdown: u64,
) -> Result<usize, String> {
    let mut scheduled = 0;
    // Read once: the measured phase pays one branch per attempt when both are off.
    let after = slowdown > 0 || counted_clock();
    let mut count = |o: &CycleOutcome, _: u64| {
        if after {
            after_attempt(slowdown);
        }
        scheduled += usize::from(matches!(o, CycleOutcome::Scheduled { .. }));
    };
    sim.run(until, &RunOptions::default(), &mut [controllers], &mut [&mut count]).map_err(|e| e.to_string())?;
    Ok(scheduled)
}

/// Runs `ksched gate --child` of `child`'s build and parses its report; its warnings go to
/// stderr, each once per process (the gate runs a scenario many times).
pub fn spawn(child: &Child, spec: &ScenarioSpec, seed: u64) -> Result<ScenarioReport, String> {
    static WARNED: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut cmd = child.command(&spec.child_args(seed));
    let line = json_line(&mut cmd, &format!("{} on {}", child.exe.display(), spec.label()))?;
    let report: ScenarioReport = serde_json::from_str(&line).map_err(|e| {
        format!(
            "{}: printed no scenario report ({e}); a build older than `ksched gate --workload` cannot run scenarios",
            child.exe.display()
        )
    })?;
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    for w in &report.warnings {
        if warned.insert(w.clone()) {
            eprintln!("ksched gate: warning: {w}");
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn examples() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
    }

    #[test]
    fn run_here_manifests_measures_every_pending_pod() {
        let ex = examples();
        let spec = ScenarioSpec { files: vec![ex.join("cluster.yaml"), ex.join("pods.yaml")], ..Default::default() };
        let r = run_here(&spec, 1).unwrap();
        assert_eq!(r.rows.len(), 1);
        assert!(r.rows[0].name.ends_with("cluster.yaml (+1 files)"), "{:?}", r.rows[0].name);
        assert!(r.rows[0].pods > 0 && r.rows[0].cpu_ns_per_pod > 0.0, "{r:?}");
        // The example's pods: 4 scheduled (the simulate CLI test says which).
        assert_eq!(r.scheduled, 4);
    }

    #[test]
    fn run_here_workload_file_has_one_row_per_measured_phase() {
        let dir = std::env::temp_dir().join(format!("ksched-gate-scenario-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("perf.yaml");
        std::fs::write(
            &file,
            "- name: Small\n  workloadTemplate:\n  - opcode: createNodes\n    countParam: $nodes\n  \
             - opcode: createPods\n    countParam: $pods\n    collectMetrics: true\n  workloads:\n  \
             - name: w\n    params: {nodes: 10, pods: 30}\n",
        )
        .unwrap();
        let spec = ScenarioSpec { files: vec![file.clone()], ..Default::default() };
        let r = run_here(&spec, 1).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(r.rows.len(), 1, "{r:?}");
        assert_eq!((r.rows[0].pods, r.scheduled), (30, 30));
        assert!(r.rows[0].name.starts_with("Small/w"), "{:?}", r.rows[0].name);
    }

    #[test]
    fn kind_rejects_workload_selection_for_manifests() {
        let ex = examples();
        let spec = ScenarioSpec { files: vec![ex.join("cluster.yaml")], test: Some("T".into()), ..Default::default() };
        let err = run_here(&spec, 1).unwrap_err();
        assert!(err.contains("--test, --workload-name and --label") && err.contains("manifests"), "{err}");
    }

    #[test]
    fn child_args_round_trip_the_spec() {
        let spec = ScenarioSpec {
            files: vec!["a.yaml".into(), "b.yaml".into()],
            config: Some("c.yaml".into()),
            test: None,
            workload_name: Some("w".into()),
            labels: vec!["short".into(), "-performance".into()],
            gates: Default::default(),
            strict: false,
        };
        assert_eq!(
            spec.child_args(3).join(" "),
            "gate --child --workload a.yaml --workload b.yaml --config c.yaml --workload-name w \
             --label short --label -performance --seed 3"
        );
        let gates = FeatureGates::parse("PodLevelResources=false").unwrap();
        let strict = ScenarioSpec { strict: true, gates, ..spec };
        assert!(strict.child_args(3).join(" ").ends_with("--seed 3 --feature-gates PodLevelResources=false --strict"));
    }

    /// A scenario whose pods set a field ksched does not model (a workload file's, or
    /// manifests'): its report carries the warning (the gate prints it), and under `--strict`
    /// the child fails naming the pod and field.
    #[test]
    fn run_here_warns_about_unmodelled_fields_and_strict_refuses_them() {
        let file = crate::perf_file::tests::unmodelled_field_file("gate");
        let manifests = file.with_file_name("gang.yaml");
        std::fs::write(
            &manifests,
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"10\"}}\n\
             ---\napiVersion: v1\nkind: Pod\nmetadata: {name: g, namespace: default}\nspec:\n  \
             workloadRef: {name: w, podGroup: g}\n  containers: [{name: c, image: x}]\n",
        )
        .unwrap();
        for input in [&file, &manifests] {
            let spec = ScenarioSpec { files: vec![input.clone()], ..Default::default() };
            let r = run_here(&spec, 1).unwrap();
            assert_eq!(r.scheduled, 1);
            assert!(r.warnings.iter().any(|w| w.contains("spec.workloadRef: not modelled by ksched")), "{r:?}");
            let e = run_here(&ScenarioSpec { strict: true, ..spec }, 1).unwrap_err();
            assert!(e.contains("spec.workloadRef") && e.contains("--strict"), "{e}");
        }
        std::fs::remove_dir_all(file.parent().unwrap()).ok();
    }
}
