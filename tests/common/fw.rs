//! Test helper for the framework-model tests: envdoctor's prediction for a real venv, and the
//! ground truth from a real child interpreter (`/proc/self/maps` after an import).
//! `use crate::common::fw;`
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `envdoctor snapshot --no-load` with `venv` active, run in `cwd` with `extra` variables.
pub fn snapshot(venv: &Path, cwd: &Path, extra: &[(&str, &str)]) -> Value {
    run(venv, cwd, extra, &["snapshot"])
}

/// `envdoctor snapshot --no-load ARGS` the same way.
pub fn snapshot_with(venv: &Path, cwd: &Path, extra: &[(&str, &str)], args: &[&str]) -> Value {
    let mut a = vec!["snapshot"];
    a.extend_from_slice(args);
    run(venv, cwd, extra, &a)
}

/// `envdoctor check --format json --no-load` the same way: the report (findings + snapshot).
pub fn check(venv: &Path, cwd: &Path, extra: &[(&str, &str)], args: &[&str]) -> Value {
    let mut a = vec!["check", "--format", "json"];
    a.extend_from_slice(args);
    run(venv, cwd, extra, &a)
}

/// The ids of the report's findings.
pub fn finding_ids(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            f["rule"]
                .as_str()
                .or(f["id"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// `envdoctor check --format json` with the load probe on (a fresh child, no load cache): what
/// a user's `check` says, with `venv` active, in `cwd`, with `extra` variables.
pub fn check_loaded(venv: &Path, cwd: &Path, extra: &[(&str, &str)], args: &[&str]) -> Value {
    let mut a = vec!["check", "--format", "json", "--no-load-cache"];
    a.extend_from_slice(args);
    run_with(venv, cwd, extra, &a, false)
}

fn run(venv: &Path, cwd: &Path, extra: &[(&str, &str)], args: &[&str]) -> Value {
    run_with(venv, cwd, extra, args, true)
}

fn run_with(
    venv: &Path,
    cwd: &Path,
    extra: &[(&str, &str)],
    args: &[&str],
    no_load: bool,
) -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_envdoctor"));
    cmd.env_clear()
        .env("HOME", home.path())
        .env("VIRTUAL_ENV", venv)
        .env("PWD", cwd)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", venv.join("bin").display()),
        )
        .current_dir(cwd)
        .args(args)
        .args(["--deadline", "120"]);
    if no_load {
        cmd.arg("--no-load");
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    super::contract::auto(serde_json::from_slice(&out.stdout).unwrap())
}

/// The venv's `libraries[]`.
pub fn libraries<'a>(snap: &'a Value, venv: &Path) -> Vec<&'a Value> {
    let v = venv.to_string_lossy();
    snap["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["python"].as_str().is_some_and(|p| p.starts_with(&*v)))
        .collect()
}

/// The venv's frameworks named `name`.
pub fn frameworks<'a>(snap: &'a Value, venv: &Path, name: &str) -> Vec<&'a Value> {
    let v = venv.to_string_lossy();
    snap["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["python"].as_str().is_some_and(|p| p.starts_with(&*v)) && f["name"] == name)
        .collect()
}

/// soname → predicted real file, for the libraries that resolve.
pub fn predicted(snap: &Value, venv: &Path) -> BTreeMap<String, PathBuf> {
    libraries(snap, venv)
        .into_iter()
        .filter(|l| l["resolves"] == true)
        .filter_map(|l| {
            let real = l["realpath"].as_str().or(l["path"].as_str())?;
            Some((
                l["soname"].as_str()?.to_string(),
                std::fs::canonicalize(real).unwrap_or_else(|_| PathBuf::from(real)),
            ))
        })
        .collect()
}

/// Run `code` (which must import the framework) in the venv's interpreter in `cwd`, then list
/// the CUDA-family files the process maps: DT_SONAME (file name when none) → real file.
/// `Err` carries the interpreter's stderr when the import fails.
pub fn mapped_after(
    venv: &Path,
    cwd: &Path,
    code: &str,
    extra: &[(&str, &str)],
) -> Result<BTreeMap<String, PathBuf>, String> {
    let script = format!(
        "{code}\nimport sys\nfor line in open('/proc/self/maps'):\n    parts = line.split(None, 5)\n    if len(parts) == 6 and parts[5].strip().startswith('/'):\n        print('MAPPED', parts[5].strip())\n"
    );
    let mut cmd = Command::new(venv.join("bin/python"));
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", cwd)
        .current_dir(cwd)
        .args(["-c", &script]);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(p) = line.strip_prefix("MAPPED ") else {
            continue;
        };
        let p = PathBuf::from(p);
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if envdoctor::probe::libs::frameworks::family(&name).is_none() {
            continue;
        }
        let soname = envdoctor::probe::libs::elf::read(&envdoctor::root::Root::host(), &p)
            .ok()
            .and_then(|i| i.soname)
            .unwrap_or(name);
        m.insert(soname, std::fs::canonicalize(&p).unwrap_or(p));
    }
    Ok(m)
}

/// Every mapped library predicted at the same file: the mismatches (empty when equal).
pub fn mismatches(
    mapped: &BTreeMap<String, PathBuf>,
    predicted: &BTreeMap<String, PathBuf>,
) -> Vec<String> {
    mapped
        .iter()
        .filter(|(s, p)| predicted.get(*s) != Some(*p))
        .map(|(s, p)| {
            format!(
                "{s}: mapped {} predicted {:?}",
                p.display(),
                predicted.get(s)
            )
        })
        .collect()
}
