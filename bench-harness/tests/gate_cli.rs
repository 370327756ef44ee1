//! `ksched gate` through the binary: the paired gate (`--against`) with the same build on both
//! sides (passes) and the candidate slowed with KSCHED_DEMO_SLOWDOWN (fails); a scenario's
//! baseline recorded and compared; flags that do not apply. Small scale, time only (no
//! valgrind), so it stays quick. The paired runs read the counted clock
//! (KSCHED_TEST_COUNTED_CLOCK: a fixed cost per attempt plus one per busy-loop iteration, in
//! place of CPU time), so their figures repeat exactly and no verdict hangs on the machine's
//! load: the same build's ratios are exactly 1, the slowed one's exactly (1 + 6).

use std::process::{Command, Output};

mod common;
use common::{examples, KSCHED};

/// What an attempt costs on the counted clock (`probe::COUNTED_NS_PER_ATTEMPT`).
const NS_PER_ATTEMPT: f64 = 10_000.0;

/// `ksched gate --against` itself, 5 rounds, on the counted clock (the children inherit it).
fn gate(extra: &[&str]) -> Output {
    Command::new(KSCHED)
        .args(["gate", "--against", KSCHED, "--no-callgrind", "--format", "json", "--rounds", "5"])
        .args(extra)
        .env("KSCHED_TEST_COUNTED_CLOCK", "1")
        .output()
        .expect("ksched runs")
}

/// The row's per-round ratios, all exactly `want` (the counted clock repeats exactly).
fn assert_ratios(row: &serde_json::Value, want: f64) {
    let ratios: Vec<f64> = row["ratios"].as_array().unwrap().iter().map(|r| r.as_f64().unwrap()).collect();
    assert_eq!(ratios, vec![want; 5], "{row:#}");
    assert_eq!(
        (row["ratio"].as_f64(), row["ci"][0].as_f64(), row["ci"][1].as_f64()),
        (Some(want), Some(want), Some(want))
    );
}

fn report(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("JSON ({e}): {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

const BASIC: [&str; 6] = ["--only", "basic", "--nodes", "200", "--scale", "2"];

#[test]
fn gate_paired_same_build_passes() {
    let out = gate(&BASIC);
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    let row = &r["rows"][0];
    assert_eq!(
        (row["metric"].as_str(), row["workload"].as_str()),
        (Some("CpuTimePerPod"), Some("SchedulingBasic/200Nodes"))
    );
    // Every pod of SchedulingBasic schedules at its first attempt, on both sides.
    assert_eq!((row["baseline"].as_f64(), row["candidate"].as_f64()), (Some(NS_PER_ATTEMPT), Some(NS_PER_ATTEMPT)));
    assert_ratios(row, 1.0);
    assert_eq!(row["verdict"], "ok", "{r:#}");
    assert_eq!(r["pass"], true);
}

#[test]
fn gate_paired_slowed_candidate_fails() {
    // 60,000 busy-loop iterations per attempt: six attempts' cost on the counted clock.
    let out = gate(&[&BASIC[..], &["--candidate-env", "KSCHED_DEMO_SLOWDOWN=60000"]].concat());
    let r = report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    let row = &r["rows"][0];
    assert_eq!(row["verdict"], "REGRESSION", "{r:#}");
    assert_eq!(row["candidate"].as_f64(), Some(7.0 * NS_PER_ATTEMPT), "{r:#}");
    assert_ratios(row, 7.0);
    assert_eq!(r["candidate"]["env"][0], "KSCHED_DEMO_SLOWDOWN=60000");
    assert_eq!(r["pass"], false);
}

#[test]
fn gate_paired_scenario_manifests_same_build_passes() {
    let ex = examples();
    let (cluster, pods) = (ex.join("cluster.yaml"), ex.join("pods.yaml"));
    let out = gate(&["--workload", cluster.to_str().unwrap(), "--workload", pods.to_str().unwrap()]);
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    let row = &r["rows"][0];
    assert!(row["workload"].as_str().is_some_and(|w| w.ends_with("cluster.yaml (+1 files)")), "{r:#}");
    assert_eq!(row["baseline"], row["candidate"], "{r:#}");
    assert!(row["baseline"].as_f64().is_some_and(|ns| ns >= NS_PER_ATTEMPT), "{r:#}");
    assert_ratios(row, 1.0);
    assert_eq!((row["verdict"].as_str(), r["pass"].as_bool()), (Some("ok"), Some(true)), "{r:#}");
}

#[test]
fn gate_flags_that_do_not_apply_exit_2() {
    let out = Command::new(KSCHED).args(["gate", "--rounds", "5"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--rounds applies to the paired mode only"), "{err}");
}

#[test]
fn gate_scenario_baseline_records_then_compares_the_same_scenario_only() {
    let ex = examples();
    let (cluster, pods) = (ex.join("cluster.yaml"), ex.join("pods.yaml"));
    let (cluster, pods) = (cluster.to_str().unwrap(), pods.to_str().unwrap());
    let file = std::env::temp_dir().join(format!("ksched-gate-cli-{}.json", std::process::id()));
    let baseline = file.to_str().unwrap();
    let ksched = |extra: &[&str]| {
        Command::new(KSCHED)
            .args(["gate", "--no-callgrind", "--repetitions", "1", "--baseline", baseline, "--format", "json"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = ksched(&["--workload", cluster, "--workload", pods, "--update-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let recorded: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(recorded["ksched"]["scenario"]["files"].as_array().map(Vec::len), Some(2));
    assert_eq!(recorded["dataItems"][0]["labels"]["Metric"], "CpuTimePerPod");
    // The same scenario compares; its time is reported, not gated.
    let out = ksched(&["--workload", cluster, "--workload", pods]);
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(
        (r["mode"].as_str(), r["rows"][0]["verdict"].as_str()),
        (Some("baseline"), Some("reported, not gated")),
        "{r:#}"
    );
    // --time-tolerance is the paired mode's.
    let out = ksched(&["--workload", cluster, "--workload", pods, "--time-tolerance", "20%"]);
    assert_eq!(out.status.code(), Some(2));
    // Another scenario (one file fewer) is refused, not compared.
    let out = ksched(&["--workload", cluster]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was recorded for scenario"));
    std::fs::remove_file(&file).ok();
}
