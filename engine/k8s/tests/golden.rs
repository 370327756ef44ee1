//! Replays upstream kube-scheduler's recorded decisions (`../shared/golden/`) and holds the
//! engine to the match rates recorded in perf/FIDELITY.md. Skipped, with a note, when the
//! shared folder is absent.

use std::path::PathBuf;

use ksched_engine::framework::Profile;
use ksched_k8s::golden::replay_dir;

fn golden_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/golden");
    dir.is_dir().then_some(dir)
}

fn golden_profile() -> Profile {
    Profile { parallelism: 1, percentage_of_nodes_to_score: Some(100), ..Profile::default_profile() }
}

#[test]
fn golden_vectors_match_upstream() {
    let Some(dir) = golden_dir() else {
        eprintln!("SKIPPED: ../shared/golden is absent; golden-vector replay not run");
        return;
    };
    let reports = replay_dir(
        &dir,
        &golden_profile(),
        std::env::var("GOLDEN_MISMATCHES").ok().and_then(|v| v.parse().ok()).unwrap_or(20),
    )
    .expect("golden cases load");
    assert!(!reports.is_empty());
    for r in &reports {
        println!("{r}");
    }
    for r in &reports {
        assert!(r.is_perfect(), "case {} differs from upstream:\n{r}", r.case);
    }
}
