//! `ksched gate --against-ref GITREF`: the baseline build of a git ref.
//!
//! The ref is checked out in a temporary detached `git worktree` under the repository's
//! `target/`, built there with `cargo build --release -p ksched-bench --bin ksched` into one
//! shared `CARGO_TARGET_DIR` (`target/gate-against`), so the next gate rebuilds only what
//! changed, and the binary is copied to `target/gate-against/ksched-<commit>`. The worktree is
//! removed afterwards, also when the build fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The built baseline.
pub struct BuiltRef {
    pub exe: PathBuf,
    /// The commit the ref named.
    pub commit: String,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git ({e}); --against-ref needs git"))?;
    if !out.status.success() {
        return Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Removes the worktree when dropped.
struct Worktree {
    repo: PathBuf,
    path: PathBuf,
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let path = self.path.display().to_string();
        if git(&self.repo, &["worktree", "remove", "--force", &path]).is_err() {
            let _ = std::fs::remove_dir_all(&self.path);
            let _ = git(&self.repo, &["worktree", "prune"]);
        }
    }
}

/// Builds `gitref` of the repository around the current directory.
pub fn build(gitref: &str) -> Result<BuiltRef, String> {
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let repo = PathBuf::from(
        git(&cwd, &["rev-parse", "--show-toplevel"])
            .map_err(|e| format!("--against-ref: run inside the ksched repository ({e})"))?,
    );
    let commit = git(&repo, &["rev-parse", "--verify", "--quiet", &format!("{gitref}^{{commit}}")])
        .map_err(|_| format!("--against-ref: {gitref:?} names no commit in {}", repo.display()))?;
    let short = &commit[..commit.len().min(12)];
    let target = repo.join("target").join("gate-against");
    std::fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    let wt = Worktree { repo: repo.clone(), path: target.join(format!("worktree-{}", std::process::id())) };
    let wt_path = wt.path.display().to_string();
    git(&repo, &["worktree", "add", "--detach", "--quiet", &wt_path, &commit])?;
    eprintln!("ksched gate: building {gitref} ({short}) in {wt_path} (CARGO_TARGET_DIR={})", target.display());
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .current_dir(&wt.path)
        .args(["build", "--release", "-p", "ksched-bench", "--bin", "ksched"])
        .env("CARGO_TARGET_DIR", &target)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {cargo:?}: {e}"))?;
    if !status.success() {
        return Err(format!("--against-ref {gitref}: cargo build of {short} failed ({status})"));
    }
    let built = target.join("release").join("ksched");
    let exe = target.join(format!("ksched-{short}"));
    std::fs::copy(&built, &exe).map_err(|e| format!("{} -> {}: {e}", built.display(), exe.display()))?;
    Ok(BuiltRef { exe, commit })
}
