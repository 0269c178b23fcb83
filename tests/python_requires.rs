//! The static `pip check` (`pythons[].unmet_requirements`) against the real `pip check` of a
//! venv with a forced conflict: `requests` installed with `--no-deps` (certifi and
//! charset-normalizer missing) beside a too-old `urllib3`, plus packages whose requirements are
//! met and `extra ==` lines that must be skipped. Needs python3, pip and PyPI: skipped (with the
//! reason printed) when they cannot be reached, unless `ENVDOCTOR_REQUIRE_PYPI` is set.

use assert_cmd::Command;
use envdoctor::Snapshot;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command as Std;

use crate::common::pypi;
use pypi::{pip, run};

fn build(dir: &Path) -> Result<(), String> {
    crate::common::pypi::off()?;
    let venv = dir.join("venv");
    run(Std::new("python3").args(["-m", "venv"]).arg(&venv))?;
    let py = venv.join("bin/python");
    run(pip(&py).args(["install", "six==1.16.0"]))?;
    run(pip(&py).args([
        "install",
        "--no-deps",
        // requires certifi, charset-normalizer (missing), idna (met), urllib3>=1.21.1 (1.21).
        "requests==2.31.0",
        "idna==3.7",
        "urllib3==1.21",
        // requires six>=1.5 (met).
        "python-dateutil==2.9.0",
        // only marker and extra lines.
        "attrs==23.2.0",
    ]))?;
    Ok(())
}

fn norm(name: &str) -> String {
    envdoctor::probe::python::dist_info::normalize_name(name)
}

/// The leading distribution name of a requirement string (`urllib3<3,>=1.21.1`).
fn req_name(req: &str) -> String {
    let end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(req.len());
    norm(&req[..end])
}

/// `pip check` lines as (package, required, installed version or None).
fn parse_pip_check(text: &str) -> BTreeSet<(String, String, Option<String>)> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(pkg), Some(_version), Some(verb), Some(req)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        let req = req.trim_end_matches(',');
        match verb {
            // "requests 2.31.0 requires certifi, which is not installed."
            "requires" => {
                out.insert((norm(pkg), req_name(req), None));
            }
            // "requests 2.31.0 has requirement urllib3<3,>=1.21.1, but you have urllib3 1.21."
            "has" => {
                let req = line
                    .split("has requirement ")
                    .nth(1)
                    .and_then(|r| r.split(", but you have ").next())
                    .unwrap_or_default();
                let have = line
                    .rsplit(' ')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches('.');
                out.insert((norm(pkg), req_name(req), Some(have.to_string())));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn unmet_requirements_match_pip_check() {
    let tmp = tempfile::tempdir().unwrap();
    if let Err(e) = build(tmp.path()) {
        if std::env::var_os("ENVDOCTOR_REQUIRE_PYPI").is_some() {
            panic!("real venv: {e}");
        }
        eprintln!("SKIPPED: the pip check comparison needs python3, pip and PyPI: {e}");
        return;
    }
    let venv = tmp.path().join("venv");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let vars = [
        ("PATH", venv.join("bin").display().to_string()),
        ("HOME", home.display().to_string()),
    ];

    // pip's own verdict (exit 1 when something is unmet).
    let py = venv.join("bin/python");
    let mut c = Std::new(&py);
    c.env_clear()
        .args(["-m", "pip", "--disable-pip-version-check", "check"]);
    for (k, v) in &vars {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let pip_says = parse_pip_check(&String::from_utf8_lossy(&out.stdout));
    let expected: BTreeSet<(String, String, Option<String>)> = [
        ("requests", "certifi", None),
        ("requests", "charset-normalizer", None),
        ("requests", "urllib3", Some("1.21")),
    ]
    .into_iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.map(str::to_string)))
    .collect();
    assert_eq!(pip_says, expected, "pip check said:\n{out:?}");

    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear().args(["snapshot", "--deadline", "60"]);
    for (k, v) in &vars {
        cmd.env(k, v);
    }
    let snap = cmd.output().unwrap();
    assert_eq!(snap.status.code(), Some(0));
    let snap = Snapshot::from_json(&String::from_utf8(snap.stdout).unwrap(), "stdout").unwrap();
    let ours = snap
        .pythons
        .iter()
        .find(|p| p.path == py.to_str().unwrap())
        .expect("the venv's python");
    let got: BTreeSet<(String, String, Option<String>)> = ours
        .unmet_requirements
        .iter()
        .map(|u| (u.package.clone(), u.required.clone(), u.installed.clone()))
        .collect();
    assert_eq!(got, pip_says);
    let urllib3 = ours
        .unmet_requirements
        .iter()
        .find(|u| u.required == "urllib3")
        .unwrap();
    assert_eq!(urllib3.version, "2.31.0");
    // Verbatim, old parenthesised style included: `urllib3 (<3,>=1.21.1)`.
    assert!(urllib3.requirement.contains("<3,>=1.21.1"), "{urllib3:?}");
    assert_eq!(urllib3.specifier.as_deref(), Some(">=1.21.1, <3"));
}
