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
    build_in(&cwd, gitref)
}

/// Builds `gitref` of the repository around `dir`.
fn build_in(dir: &Path, gitref: &str) -> Result<BuiltRef, String> {
    let repo = PathBuf::from(
        git(dir, &["rev-parse", "--show-toplevel"])
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A git repository holding a one-file `ksched-bench` package whose `ksched` prints
    /// `version`; one commit per version.
    fn repo(versions: &[&str]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ksched-gate-ref-{}-{}", std::process::id(), versions.len()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let run = |args: &[&str]| git(&dir, args).unwrap();
        run(&["init", "--quiet"]);
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"ksched-bench\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"ksched\"\npath = \"src/main.rs\"\n\n[workspace]\n",
        )
        .unwrap();
        std::fs::write(dir.join(".gitignore"), "/target\n").unwrap();
        for v in versions {
            std::fs::write(dir.join("src/main.rs"), format!("fn main() {{ println!(\"{v}\"); }}\n")).unwrap();
            run(&["add", "-A"]);
            run(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", v]);
        }
        dir
    }

    fn worktrees(dir: &Path) -> usize {
        git(dir, &["worktree", "list"]).unwrap().lines().count()
    }

    #[test]
    fn build_in_builds_the_ref_and_removes_the_worktree() {
        let dir = repo(&["one", "two"]);
        let built = build_in(&dir, "HEAD~1").unwrap();
        let out = Command::new(&built.exe).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "one", "the ref's build, not HEAD's");
        assert_eq!(built.commit, git(&dir, &["rev-parse", "HEAD~1"]).unwrap());
        assert_eq!(worktrees(&dir), 1, "only the main worktree is left");
        assert!(dir.join("target/gate-against/release").is_dir(), "the target dir is kept for the next build");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn build_in_names_a_bad_ref_and_cleans_up_after_a_failed_build() {
        let dir = repo(&["broken"]);
        let err = build_in(&dir, "no-such-ref").err().unwrap();
        assert!(err.contains("\"no-such-ref\" names no commit"), "{err}");
        std::fs::write(dir.join("src/main.rs"), "fn main() { not rust }\n").unwrap();
        git(&dir, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-am", "x"]).unwrap();
        let err = build_in(&dir, "HEAD").err().unwrap();
        assert!(err.contains("cargo build of") && err.contains("failed"), "{err}");
        assert_eq!(worktrees(&dir), 1, "the worktree is removed after a failed build");
        std::fs::remove_dir_all(&dir).ok();
    }
}
