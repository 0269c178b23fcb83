//! `envdoctor compare` on a real venv changed with pip between two snapshots.
//!
//! A venv is made with `python3 -m venv` and pinned wheels; envdoctor snapshots the machine with
//! that venv active; pip then upgrades one package, downgrades another, installs a third and
//! removes a fourth; envdoctor snapshots again. The ground truth is `pip list --format=json`
//! before and after: the package changes compare reports for the active venv must be exactly
//! the difference of those two lists, with the right direction and size. Needs PyPI: skipped
//! (with the reason printed) unless it can be reached or `ENVDOCTOR_REQUIRE_PYPI` is set.

use assert_cmd::Command;
use envdoctor::compare::{ChangeKind, CompareReport, Direction, Size};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command as Std;

use crate::common::pypi;
use pypi::{pip, require_pypi, run};

/// normalised name -> version, from pip itself.
fn pip_list(py: &Path) -> Result<BTreeMap<String, String>, String> {
    // Not `pip()`: `-q` silences `pip list` too.
    let text = run(Std::new(py).args([
        "-m",
        "pip",
        "--disable-pip-version-check",
        "list",
        "--format=json",
    ]))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(v.as_array()
        .ok_or("pip list: not an array")?
        .iter()
        .map(|d| {
            (
                envdoctor::probe::python::dist_info::normalize_name(
                    d["name"].as_str().unwrap_or(""),
                ),
                d["version"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect())
}

fn snapshot(venv: &Path, home: &Path, out: &Path) {
    let o = Command::cargo_bin("envdoctor")
        .unwrap()
        .env_clear()
        .env("HOME", home)
        .env("VIRTUAL_ENV", venv)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", venv.join("bin").display()),
        )
        .args(["snapshot", "--no-load", "--deadline", "60", "-o"])
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

type Lists = (BTreeMap<String, String>, BTreeMap<String, String>);

fn build(dir: &Path) -> Result<Lists, String> {
    crate::common::pypi::off()?;
    let venv = dir.join("venv");
    run(Std::new("python3").args(["-m", "venv"]).arg(&venv))?;
    let py = venv.join("bin/python");
    run(pip(&py).args(["install", "six==1.16.0", "packaging==24.1", "attrs==23.2.0"]))?;
    let before = pip_list(&py)?;
    snapshot(&venv, &dir.join("home"), &dir.join("before.json"));
    run(pip(&py).args(["install", "six==1.17.0", "packaging==23.2", "idna==3.7"]))?;
    run(pip(&py).args(["uninstall", "-y", "attrs"]))?;
    let after = pip_list(&py)?;
    Ok((before, after))
}

#[test]
fn pip_changes_between_two_snapshots_match_pip_list() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let (before, after) = match build(dir) {
        Ok(l) => l,
        Err(e) if require_pypi() => panic!("real venv: {e}"),
        Err(e) => {
            eprintln!("SKIPPED: needs python3, pip and PyPI: {e}");
            return;
        }
    };
    snapshot(
        &dir.join("venv"),
        &dir.join("home"),
        &dir.join("after.json"),
    );
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .arg("compare")
        .arg(dir.join("before.json"))
        .arg(dir.join("after.json"))
        .args(["--format", "json", "--only", "packages"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: CompareReport = serde_json::from_slice(&out.stdout).unwrap();
    // The active venv's label: matched by VIRTUAL_ENV, the strongest role it has.
    let prefix = "pythons[VIRTUAL_ENV].packages[";
    let mut got: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
    for c in &r.changes {
        if let Some(name) = c.fact.strip_prefix(prefix) {
            got.insert(
                name.trim_end_matches(']').to_string(),
                (c.a.clone(), c.b.clone()),
            );
        }
    }
    let mut want: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
    for name in before.keys().chain(after.keys()) {
        let (a, b) = (before.get(name).cloned(), after.get(name).cloned());
        if a != b {
            want.insert(name.clone(), (a, b));
        }
    }
    assert_eq!(got, want, "compare against the difference of `pip list`s");
    let change = |n: &str| {
        r.changes
            .iter()
            .find(|c| c.fact == format!("{prefix}{n}]"))
            .unwrap()
    };
    assert_eq!(
        (change("six").direction, change("six").size),
        (Some(Direction::Upgrade), Some(Size::Minor))
    );
    assert_eq!(
        (change("packaging").direction, change("packaging").size),
        (Some(Direction::Downgrade), Some(Size::Major))
    );
    assert_eq!(change("idna").change, ChangeKind::Added);
    assert_eq!(change("attrs").change, ChangeKind::Removed);
    // Everything else on this machine (other interpreters) is unchanged.
    assert!(
        r.changes.iter().all(|c| c.fact.starts_with(prefix)),
        "{:?}",
        r.changes.iter().map(|c| &c.fact).collect::<Vec<_>>()
    );
}
