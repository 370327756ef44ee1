//! Progress bars for long runs (`simulate`, workload files, `soak`, `bench`, `run`): drawn on
//! stderr only when it is a terminal and the output is not machine-readable; otherwise a
//! [`Progress`] is inert (a hidden bar that is never touched).
//!
//! Cheap on the hot path: [`Progress::inc`] adds to a local count and hands it to the bar only
//! every [`Progress::EVERY`] increments and at most every [`Progress::INTERVAL`], so a driver's
//! observer can call it once per pod.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar with a length and a message, or nothing.
pub struct Progress {
    bar: ProgressBar,
    visible: bool,
    /// Increments not yet handed to the bar.
    pending: u64,
    last: Instant,
}

impl Progress {
    /// Increments handed to the bar at once (at most).
    pub const EVERY: u64 = 256;
    /// The least time between two updates of the bar.
    pub const INTERVAL: Duration = Duration::from_millis(100);

    /// A bar of `len` steps drawn with `template` (indicatif's syntax) when `is_terminal`;
    /// a hidden, inert one otherwise.
    pub fn new(is_terminal: bool, len: u64, template: &str) -> Progress {
        let bar = if is_terminal {
            let b = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr_with_hz(10));
            if let Ok(style) = ProgressStyle::with_template(template) {
                b.set_style(style.progress_chars("=> "));
            }
            b
        } else {
            ProgressBar::hidden()
        };
        Progress { bar, visible: is_terminal, pending: 0, last: Instant::now() }
    }

    /// A bar on stderr when it is a terminal and `machine_output` (JSON, YAML) is off.
    pub fn stderr(machine_output: bool, len: u64, template: &str) -> Progress {
        Progress::new(!machine_output && std::io::stderr().is_terminal(), len, template)
    }

    /// An inert bar.
    pub fn hidden() -> Progress {
        Progress::new(false, 0, "")
    }

    pub fn is_hidden(&self) -> bool {
        !self.visible
    }

    /// One more step done (handed to the bar in batches).
    #[inline]
    pub fn inc(&mut self, n: u64) {
        if !self.visible {
            return;
        }
        self.pending += n;
        if self.pending >= Self::EVERY || self.last.elapsed() >= Self::INTERVAL {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.bar.inc(std::mem::take(&mut self.pending));
        self.last = Instant::now();
    }

    /// Starts a new stage: `len` steps, none done, with `message`.
    pub fn restart(&mut self, len: u64, message: impl Into<String>) {
        if !self.visible {
            return;
        }
        self.pending = 0;
        self.bar.set_length(len);
        self.bar.set_position(0);
        self.bar.set_message(message.into());
    }

    /// The work grew by `n` steps (pods made during a run).
    pub fn inc_length(&mut self, n: u64) {
        if self.visible {
            self.bar.inc_length(n);
        }
    }

    /// Where the bar stands (rate-limited like [`Progress::inc`]).
    pub fn set_position(&mut self, pos: u64) {
        if !self.visible || self.last.elapsed() < Self::INTERVAL {
            return;
        }
        self.pending = 0;
        self.bar.set_position(pos);
        self.last = Instant::now();
    }

    pub fn set_message(&self, message: impl Into<String>) {
        if self.visible {
            self.bar.set_message(message.into());
        }
    }

    /// Prints `line` on stderr without tearing the bar.
    pub fn note(&self, line: &str) {
        if self.visible {
            self.bar.suspend(|| eprintln!("{line}"));
        } else {
            eprintln!("{line}");
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&mut self) {
        if self.visible {
            self.flush();
            self.bar.finish_and_clear();
        }
    }

    #[cfg(test)]
    fn bar(&self) -> &ProgressBar {
        &self.bar
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.visible && !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_not_a_terminal_is_hidden_and_inert() {
        let mut p = Progress::new(false, 100, "{bar} {pos}/{len}");
        assert!(p.is_hidden());
        assert!(p.bar().is_hidden(), "indicatif draws nothing");
        for _ in 0..1000 {
            p.inc(1);
        }
        p.restart(5, "stage");
        p.set_position(3);
        p.finish();
        assert_eq!(p.bar().position(), 0, "a hidden bar is never updated");
        assert!(Progress::stderr(true, 10, "{bar}").is_hidden(), "machine output hides the bar");
    }

    #[test]
    fn progress_terminal_batches_increments() {
        let mut p = Progress::new(true, 10_000, "{bar} {pos}/{len}");
        assert!(!p.is_hidden());
        // The interval has not passed: increments stay local until a batch is full.
        p.last = Instant::now() + Duration::from_secs(3600);
        for _ in 0..Progress::EVERY - 1 {
            p.inc(1);
        }
        assert_eq!(p.bar().position(), 0);
        p.inc(1);
        assert_eq!(p.bar().position(), Progress::EVERY);
        p.inc(1);
        p.finish();
        assert!(p.bar().is_finished());
    }
}
