//! What the `ksched` binary's integration tests share (`mod common;` in each): the binary, the
//! example manifests, scratch directories, and running the binary for a JSON report. Each
//! test file is its own crate and uses some of these, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The binary under test.
pub const KSCHED: &str = env!("CARGO_BIN_EXE_ksched");

/// The repository's `examples/` folder.
pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// A fresh directory `ksched-NAME-PID` in the temporary directory (emptied if a previous run
/// left it), removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("ksched-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// `new` holding `files` (path inside it, content).
    pub fn with(name: &str, files: &[(&str, &str)]) -> Scratch {
        let s = Scratch::new(name);
        for (file, text) in files {
            s.write(file, text);
        }
        s
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to `file` inside (its folders created) and returns its path.
    pub fn write(&self, file: &str, text: &str) -> PathBuf {
        let p = self.0.join(file);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// `ksched ARGS`, its output.
pub fn ksched<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(KSCHED).args(args).output().expect("ksched runs")
}

/// The JSON a run printed on stdout; the run must have exited 0 (its stderr shown if not).
pub fn json(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON output")
}
