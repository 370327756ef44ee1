//! Replays upstream kube-scheduler's recorded decisions (`../shared/golden/` and
//! `../shared/golden-extended/`) and fails on any difference, except in the mixes of
//! `REPORT_ONLY_MIXES`, whose rates are printed only. Each folder is skipped, with a note,
//! when it is absent.

use std::path::PathBuf;

use ksched_engine::framework::Profile;
use ksched_k8s::golden::{replay_dir, REPORT_ONLY_MIXES};

fn shared(folder: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared").join(folder);
    dir.is_dir().then_some(dir)
}

/// Cases without `scheduler-config.json` run upstream's default profile, with their
/// recording's percentageOfNodesToScore and parallelism (`meta.json`).
fn golden_profile() -> Profile {
    Profile::default_profile()
}

fn replay_folder(folder: &str) {
    let Some(dir) = shared(folder) else {
        eprintln!("SKIPPED: ../shared/{folder} is absent; golden-vector replay not run");
        return;
    };
    let limit = std::env::var("GOLDEN_MISMATCHES").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let reports = replay_dir(&dir, &golden_profile(), limit).expect("golden cases load");
    assert!(!reports.is_empty());
    for r in &reports {
        println!("{r}");
    }
    for r in &reports {
        assert!(r.passes(), "case {} differs from upstream:\n{r}", r.case);
        if r.report_only {
            println!("case {}: mix {} is in REPORT_ONLY_MIXES {REPORT_ONLY_MIXES:?}: not gated", r.case, r.mix);
        }
    }
}

#[test]
fn golden_vectors_match_upstream() {
    replay_folder("golden");
}

#[test]
fn extended_golden_vectors_match_upstream() {
    replay_folder("golden-extended");
}
