//! The verdict of `check`: counts per severity, probe problems, whether the run is incomplete,
//! the exit code, and the one line that says it all.

use crate::rules::{Finding, Severity};
use crate::Snapshot;
use serde::Serialize;

/// When `check` fails: findings at or above this severity (never: always exit 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// Errors fail the run.
    Error,
    /// Errors and warnings fail the run.
    Warning,
    /// Nothing fails the run.
    Never,
}

impl FailOn {
    /// Whether a finding of this severity fails the run.
    pub fn fails(self, s: Severity) -> bool {
        match self {
            FailOn::Error => s == Severity::Error,
            FailOn::Warning => s >= Severity::Warning,
            FailOn::Never => false,
        }
    }

    fn text(self) -> &'static str {
        match self {
            FailOn::Error => "errors",
            FailOn::Warning => "warnings",
            FailOn::Never => "nothing (--fail-on never)",
        }
    }
}

/// Counts per severity, and the verdict.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Summary {
    /// Error findings.
    pub errors: usize,
    /// Warning findings.
    pub warnings: usize,
    /// Info findings.
    pub info: usize,
    /// Probe problems recorded in the snapshot.
    pub probe_errors: usize,
    /// Whether some probe failed, panicked or timed out, so facts are missing: the verdict is
    /// "incomplete" and `check` exits 2 (unless `--allow-incomplete`).
    pub incomplete: bool,
    /// The threshold.
    pub fail_on: FailOn,
    /// Whether some finding is at or above it (exit 1).
    pub failed: bool,
}

use crate::plural::plural;

impl Summary {
    /// Count `findings` against `fail_on`.
    pub fn of(findings: &[Finding], snap: &Snapshot, fail_on: FailOn) -> Summary {
        let count = |s| findings.iter().filter(|f| f.severity == s).count();
        Summary {
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            info: count(Severity::Info),
            probe_errors: snap.probe_errors.len(),
            incomplete: snap.probe_errors.iter().any(|e| e.is_incomplete()),
            fail_on,
            failed: findings.iter().any(|f| fail_on.fails(f.severity)),
        }
    }

    /// `2 errors, 1 warning, 3 info` (and `, 1 probe problem` when there are some).
    pub fn counts(&self) -> String {
        let mut s = format!(
            "{}, {}, {} info",
            plural(self.errors, "error"),
            plural(self.warnings, "warning"),
            self.info
        );
        if self.probe_errors > 0 {
            s.push_str(&format!(", {}", plural(self.probe_errors, "probe problem")));
        }
        s
    }

    /// The exit code of `check`: 2 when incomplete (unless allowed), 1 when failed, else 0.
    pub fn exit(&self, allow_incomplete: bool) -> crate::exit::Exit {
        if self.incomplete && !allow_incomplete {
            crate::exit::Exit::Trouble
        } else {
            crate::exit::Exit::found_if(self.failed)
        }
    }

    /// The kind of verdict: `INCOMPLETE`, `FAIL` or `OK`.
    pub fn word(&self) -> &'static str {
        if self.incomplete {
            "INCOMPLETE"
        } else if self.failed {
            "FAIL"
        } else {
            "OK"
        }
    }

    /// The verdict line (without colour).
    pub fn line(&self, snap: &Snapshot) -> String {
        let scope = scope(snap);
        let nothing = self.errors + self.warnings + self.info == 0;
        let counts = if nothing && self.probe_errors == 0 {
            "nothing found".to_string()
        } else {
            self.counts()
        };
        let tail = if self.incomplete {
            "; a probe failed or timed out, so facts are missing (exit 2; --allow-incomplete)"
                .to_string()
        } else if self.failed {
            format!("; failing on {}", self.fail_on.text())
        } else if nothing {
            String::new()
        } else {
            format!("; none at or above {}", self.fail_on.text())
        };
        format!("{}: {counts} (checked {scope}){tail}", self.word())
    }
}

/// `3 interpreters, 1 GPU, 12 libraries, 0 checkpoints`.
pub fn scope(snap: &Snapshot) -> String {
    format!(
        "{}, {}, {} librar{}, {}",
        plural(snap.pythons.len(), "interpreter"),
        plural(snap.gpus.len(), "GPU"),
        snap.libraries.len(),
        if snap.libraries.len() == 1 {
            "y"
        } else {
            "ies"
        },
        plural(snap.checkpoints.len(), "checkpoint"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::ProbeError;

    #[test]
    fn fail_on_thresholds() {
        assert!(FailOn::Error.fails(Severity::Error));
        assert!(!FailOn::Error.fails(Severity::Warning));
        assert!(FailOn::Warning.fails(Severity::Warning));
        assert!(!FailOn::Warning.fails(Severity::Info));
        assert!(!FailOn::Never.fails(Severity::Error));
    }

    #[test]
    fn a_probe_that_failed_makes_the_verdict_incomplete_and_the_exit_2() {
        let mut snap = Snapshot::empty();
        snap.probe_errors
            .push(ProbeError::at("checkpoint", "/x.pt", "corrupt"));
        let s = Summary::of(&[], &snap, FailOn::Error);
        assert!(
            !s.incomplete,
            "a corrupt file is a fact, not a failed probe"
        );
        assert_eq!(s.exit(false), crate::exit::Exit::Success);
        assert!(s
            .line(&snap)
            .starts_with("OK: 0 errors, 0 warnings, 0 info, 1 probe problem"));
        snap.probe_errors
            .push(ProbeError::new("gpu", "did not answer"));
        let s = Summary::of(&[], &snap, FailOn::Error);
        assert!(s.incomplete);
        assert_eq!(s.exit(false), crate::exit::Exit::Trouble);
        assert_eq!(s.exit(true), crate::exit::Exit::Success);
        assert!(s
            .line(&snap)
            .starts_with("INCOMPLETE: 0 errors, 0 warnings, 0 info, 2 probe problems"));
    }
}
