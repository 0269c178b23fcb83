//! Test helper: running python3/pip for tests that need PyPI, under the project's policy: such
//! a test skips (saying why) when PyPI or python3 is not at hand, unless
//! `ENVDOCTOR_REQUIRE_PYPI` is set (CI sets it), where it fails instead.
//! Include with `#[path = "common/pypi.rs"] mod pypi;`.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Whether PyPI tests are mandatory here.
pub fn require_pypi() -> bool {
    std::env::var_os("ENVDOCTOR_REQUIRE_PYPI").is_some()
}

/// Run a command that must succeed: its stdout, or why not.
pub fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Skip (None, with a message) or fail, as the policy says.
pub fn need<T>(what: &str, r: Result<T, String>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) if require_pypi() => panic!("{what}: {e}"),
        Err(e) => {
            eprintln!("SKIPPED: {what} needs python3, pip and PyPI: {e}");
            None
        }
    }
}

/// `PY -m pip` with quiet, non-interactive defaults.
pub fn pip(py: &Path) -> Command {
    let mut c = Command::new(py);
    c.args([
        "-m",
        "pip",
        "--disable-pip-version-check",
        "--no-input",
        "-q",
    ]);
    c
}
