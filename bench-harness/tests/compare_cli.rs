//! `ksched compare` through the binary, on `examples/compare/`: the exit status of
//! `--fail-if` (1 when it holds, 0 when not, 2 on a bad expression or input), JSON and HTML.

use std::path::PathBuf;
use std::process::{Command, Output};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/compare")
}

/// `ksched compare` of LeastAllocated (A) and MostAllocated (B) on the example cluster.
fn compare(extra: &[&str]) -> Output {
    let ex = examples();
    let path = |f: &str| ex.join(f).to_str().expect("UTF-8 path").to_owned();
    let base = [
        "compare".to_owned(),
        "--config".to_owned(),
        path("least-allocated.yaml"),
        "--config".to_owned(),
        path("most-allocated.yaml"),
        "-f".to_owned(),
        path("cluster.yaml"),
    ];
    Command::new(env!("CARGO_BIN_EXE_ksched")).args(base).args(extra).output().expect("ksched runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn compare_fail_if_exits_1_when_it_holds_and_0_when_not() {
    // (expressions, want exit status, want on stderr)
    let cases: [(&[&str], i32, &str); 6] = [
        (&["pending>0"], 1, "--fail-if pending>0: holds: A.pending = 1 ("),
        (&["pending>1"], 0, ""),
        (&["nodes_in_use>=3"], 1, "A.nodes_in_use = 3"),
        (&["cpu_stddev>0.15"], 1, "B.cpu_stddev = 0.4"),
        (&["B.pending>A.pending", "nodes_in_use>4"], 0, ""),
        (&["A.moved>0", "B.moved>3"], 1, "B.moved = 4"),
    ];
    for (exprs, want, text) in cases {
        let mut args = Vec::new();
        for e in exprs {
            args.extend(["--fail-if", e]);
        }
        let out = compare(&args);
        assert_eq!(out.status.code(), Some(want), "{exprs:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(text), "{exprs:?}: {}", stderr(&out));
        if want == 0 {
            assert!(!stderr(&out).contains("--fail-if"), "{exprs:?}: {}", stderr(&out));
        }
    }
}

#[test]
fn compare_bad_input_exits_2_naming_what_is_wrong() {
    let out = compare(&["--fail-if", "cpu_sd>0.1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown metric \"cpu_sd\"; metrics: scheduled, pending"), "{}", stderr(&out));
    let one = Command::new(env!("CARGO_BIN_EXE_ksched"))
        .args(["compare", "--config", examples().join("most-allocated.yaml").to_str().unwrap(), "-f"])
        .arg(examples().join("cluster.yaml"))
        .output()
        .unwrap();
    assert_eq!(one.status.code(), Some(2));
    assert!(stderr(&one).contains("two or more configurations"), "{}", stderr(&one));
    let missing = compare(&["-f", "/nonexistent/pods.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("/nonexistent/pods.yaml"), "{}", stderr(&missing));
}

#[test]
fn compare_json_and_html_say_the_same_numbers() {
    let html = std::env::temp_dir().join(format!("ksched-compare-{}.html", std::process::id()));
    let out = compare(&["--format", "json", "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let c = |i: usize, k: &str| r["configs"][i][k].clone();
    assert_eq!((c(0, "nodes_in_use"), c(1, "nodes_in_use")), (3.into(), 2.into()));
    assert_eq!(c(1, "moved"), 4);
    assert_eq!(r["configs"][1]["moved_pods"][0]["pod"], "default/web-1");
    assert_eq!(r["configs"][1]["moved_pods"][0]["deciding_plugin"], "NodeResourcesFit");
    let page = std::fs::read_to_string(&html).unwrap();
    for kind in ["cpu-utilization", "memory-utilization", "latency-cdf"] {
        assert!(page.contains(&format!("data-plot=\"{kind}\"")), "{kind}");
    }
    assert!(page.contains("default/web-1"));
    let _ = std::fs::remove_file(html);
}
