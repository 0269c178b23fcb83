//! Running the built `envdoctor` from a test, in an environment the test chooses rather than the
//! developer's shell: pick a builder (`cmd`, `plain`, `empty`, `bare`), add arguments and
//! variables, then run it with `output`, `stdout_ok` or `json`.

use assert_cmd::Command;
use std::path::PathBuf;
use std::time::Duration;

/// Variables outside `ENVDOCTOR_*` that change how envdoctor colours its output.
pub const COLOUR_VARS: &[&str] = &[
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "TERM",
    "CI",
];

/// How long a test lets one run take before it is killed (a hang fails instead of blocking).
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The path of the envdoctor under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_envdoctor"))
}

/// The binary with the caller's environment less every `ENVDOCTOR_*` and colour variable.
pub fn cmd() -> Command {
    let mut c = Command::new(bin());
    for (k, _) in std::env::vars_os() {
        let name = k.to_string_lossy();
        if name.starts_with("ENVDOCTOR_") || COLOUR_VARS.contains(&name.as_ref()) {
            c.env_remove(&k);
        }
    }
    c
}

/// `cmd()` with `NO_COLOR=1`: plain text whatever the output is connected to.
pub fn plain() -> Command {
    let mut c = cmd();
    c.env("NO_COLOR", "1");
    c
}

/// The binary with an empty environment: it sees only the variables the test sets.
pub fn empty() -> Command {
    let mut c = Command::new(bin());
    c.env_clear();
    c
}

/// `empty()` with `PATH=/usr/bin:/bin`, the minimal environment of a service or cron job.
pub fn bare() -> Command {
    let mut c = empty();
    c.env("PATH", "/usr/bin:/bin");
    c
}

/// Run `c`: (exit code, or -1 when killed by a signal; stdout; stderr), both read lossily.
pub fn output(c: &mut Command) -> (i32, String, String) {
    let out = c.output().expect("run envdoctor");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run `c`, which must succeed: its stdout (UTF-8); on failure the panic shows stderr.
pub fn stdout_ok(c: &mut Command) -> String {
    let out = c.output().expect("run envdoctor");
    assert!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// Run `c`, which must exit 0 or 1 (a verdict): its stdout (UTF-8).
pub fn stdout_ok_or_1(c: &mut Command) -> String {
    let out = c.output().expect("run envdoctor");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// Run `c`, which must succeed and print JSON: the parsed stdout, validated against its schema
/// when it is one of envdoctor's documents (`contract::auto`).
pub fn json(c: &mut Command) -> serde_json::Value {
    super::contract::auto(serde_json::from_str(&stdout_ok(c)).expect("stdout is JSON"))
}
