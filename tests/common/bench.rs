//! What the report benches (`measure_bench`, `mechanism_bench`) share: the binary they run
//! (`ENVDOCTOR_BENCH_BIN` for the "before" figure), `check`'s JSON on a rebuilt machine, and
//! the outcome of one report (hit, partial, miss).
#![allow(dead_code)]

use super::machine::Machine;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The binary to run and whether it is another build than this one (`ENVDOCTOR_BENCH_BIN`:
/// then outcomes are printed, not held to the recorded ones).
pub fn binary() -> (PathBuf, bool) {
    match std::env::var_os("ENVDOCTOR_BENCH_BIN") {
        Some(other) => (PathBuf::from(other), true),
        None => (PathBuf::from(env!("CARGO_BIN_EXE_envdoctor")), false),
    }
}

/// `check --format json EXTRA... --root` of `m` with `bin`, in `m`'s environment alone;
/// `more` adds what a bench needs (the fake NVML).
pub fn check_json(
    bin: &Path,
    m: &Machine,
    extra: &[&str],
    more: impl FnOnce(&mut Command),
) -> Value {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .args(["check", "--format", "json"])
        .args(extra)
        .arg("--root")
        .arg(m.root());
    for (k, v) in &m.env {
        cmd.env(k, v);
    }
    more(&mut cmd);
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

/// The outcome of one report: `hit` when a rule of `cause` fired, else `partial` when one of
/// `partial` did, else `miss`; with the ids of the rules that fired (sorted, once each).
pub fn outcome(report: &Value, cause: &[&str], partial: &[&str]) -> (&'static str, Vec<String>) {
    let mut ids: Vec<String> = report["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["rule"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids.dedup();
    let any = |set: &[&str]| ids.iter().any(|i| set.contains(&i.as_str()));
    let o = if any(cause) {
        "hit"
    } else if any(partial) {
        "partial"
    } else {
        "miss"
    };
    (o, ids)
}
