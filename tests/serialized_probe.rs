//! What serialized files reference (issue 25, item 5): the `checkpoint` probe walks the pickle
//! opcodes of plain pickles, joblib files and torch checkpoints and reads Keras configs
//! (`checkpoints[].references`); the `serialized` probe resolves each name against the job's
//! interpreter from files. The files are the committed fixtures of `fixtures/serialized/`,
//! written by the real libraries (`make_fixtures.py`).
//!
//! - quick tier: a machine root whose venv, project and site-packages are laid out as Python
//!   lays them out: a whole torch module from a training repo that is missing, in the project,
//!   or installed without the class; a scikit-learn 1.5.2 joblib file under 1.3.2 and 1.5.2;
//! - PyPI tier: the real venvs (numpy 1.26.4 + scikit-learn 1.3.2, numpy 2.1.3 + scikit-learn
//!   1.5.2, torch 2.15.0): every file is loaded there by the library that wrote it
//!   (`cross_load.py`), and a file is reported unresolved exactly when that load fails, and
//!   with a scikit-learn version mismatch exactly when scikit-learn warns.

use crate::common::fw;
use crate::common::machine::{copy_tree, findings_of, repo, Machine};
use crate::common::pypi;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const SITE: &str = "/venv/lib/python3.11/site-packages";

fn fixture(m: &Machine, name: &str, to: &str) {
    copy_tree(&repo("fixtures/serialized").join(name), &m.path(to));
}

/// The `references` of the checkpoint whose path ends with `name`.
fn refs<'a>(report: &'a Value, name: &str) -> &'a Value {
    let cks = report["snapshot"]["checkpoints"].as_array().unwrap();
    let ck = cks
        .iter()
        .find(|c| c["path"].as_str().is_some_and(|p| p.ends_with(name)))
        .unwrap_or_else(|| panic!("no {name} in {cks:#?}"));
    &ck["references"]
}

/// `(global, reason)` of each unresolved reference.
fn unresolved(r: &Value) -> Vec<(String, String)> {
    r["unresolved"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|u| {
                    (
                        u["global"].as_str().unwrap().to_string(),
                        u["reason"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The host python3's own `collections`, `pathlib` and `copyreg` sources, as the machine's
/// standard library (the resolver gives no top-level verdict on a stand-in without them).
fn stdlib(m: &Machine) {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .unwrap();
    let host = String::from_utf8_lossy(&out.stdout).trim().to_string();
    for f in ["collections/__init__.py", "pathlib.py", "copyreg.py"] {
        let text = std::fs::read_to_string(Path::new(&host).join(f)).unwrap();
        m.write(&format!("/usr/lib/python3.11/{f}"), &text);
    }
}

/// A machine with an active venv (no torch installed) and a whole torch module pickled from a
/// `trainlib` training repo, in `/proj/ckpt/model.pt`.
fn torch_module_machine() -> Machine {
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[]);
    stdlib(&m);
    fixture(&m, "torch_whole_module.pt", "/proj/ckpt/model.pt");
    m
}

#[test]
fn a_whole_module_from_a_missing_training_repo_is_named() {
    let m = torch_module_machine();
    let (_, report) = m.check(&["--project", "/proj"]);
    let r = refs(&report, "model.pt");
    assert_eq!(r["source"], "pickle");
    // collections.OrderedDict is the standard library's: resolved.
    assert!(r["globals"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g == "collections.OrderedDict"));
    assert_eq!(r["checked_with"], "/venv/bin/python");
    let u = unresolved(r);
    assert!(
        u.contains(&("trainlib.models.Net".into(), "package-not-installed".into())),
        "{u:?}"
    );
    assert!(
        u.iter().all(|(g, _)| !g.starts_with("collections.")),
        "{u:?}"
    );
    assert!(!findings_of(&report, "serialized-package-not-installed").is_empty());
    // Without a real standard library on the path there is no top-level verdict.
    std::fs::remove_dir_all(m.path("/usr/lib/python3.11/collections")).unwrap();
    let (_, report) = m.check(&["--project", "/proj"]);
    assert!(unresolved(refs(&report, "model.pt")).is_empty());
}

#[test]
fn the_training_repo_in_the_project_resolves_it() {
    let m = torch_module_machine();
    m.write("/proj/trainlib/__init__.py", "");
    m.write("/proj/trainlib/models.py", "class Net:\n    pass\n");
    let (_, report) = m.check(&["--project", "/proj"]);
    let u = unresolved(refs(&report, "model.pt"));
    assert!(u.iter().all(|(g, _)| !g.starts_with("trainlib")), "{u:?}");
}

#[test]
fn an_installed_module_without_the_class_is_a_missing_name_with_its_distribution() {
    let m = torch_module_machine();
    m.write(&format!("{SITE}/trainlib/__init__.py"), "");
    m.write(
        &format!("{SITE}/trainlib/models.py"),
        "class Network:\n    pass\n",
    );
    m.write(
        &format!("{SITE}/trainlib-2.0.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: trainlib\nVersion: 2.0\n",
    );
    m.write(
        &format!("{SITE}/trainlib-2.0.dist-info/top_level.txt"),
        "trainlib\n",
    );
    let (_, report) = m.check(&["--project", "/proj"]);
    let r = refs(&report, "model.pt");
    let u = r["unresolved"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["global"] == "trainlib.models.Net")
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(u["reason"], "name-not-found");
    assert_eq!(u["package"], "trainlib");
    assert_eq!(u["version"], "2.0");
    assert!(u["file"].as_str().unwrap().ends_with("trainlib/models.py"));
    assert!(!findings_of(&report, "serialized-name-not-found").is_empty());
    // A module that builds its names at run time is given the benefit of the doubt.
    m.write(
        &format!("{SITE}/trainlib/models.py"),
        "def __getattr__(name):\n    raise AttributeError(name)\n",
    );
    let (_, report) = m.check(&["--project", "/proj"]);
    let u = unresolved(refs(&report, "model.pt"));
    assert!(u.iter().all(|(g, _)| !g.starts_with("trainlib")), "{u:?}");
}

#[test]
fn a_scikit_learn_version_recorded_in_a_joblib_file_is_compared() {
    for (installed, fires) in [("1.3.2", true), ("1.5.2", false)] {
        let mut m = Machine::new();
        m.active_venv("3.11", "/venv", &[("scikit-learn", installed)]);
        fixture(&m, "sklearn152_scaler.joblib", "/proj/scaler.joblib");
        let (_, report) = m.check(&["--project", "/proj"]);
        let r = refs(&report, "scaler.joblib");
        assert_eq!(r["sklearn_version"], "1.5.2");
        let found = findings_of(&report, "sklearn-pickle-version-mismatch");
        assert_eq!(
            !found.is_empty(),
            fires,
            "scikit-learn {installed}: {found:#?}"
        );
        let format = report["snapshot"]["checkpoints"][0]["format"].clone();
        assert_eq!(format, "joblib");
    }
}

#[test]
fn a_machine_without_checkpoints_gets_no_references() {
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[("scikit-learn", "1.5.2")]);
    m.write("/proj/train.py", "print('hi')\n");
    let (_, report) = m.check(&["--project", "/proj"]);
    for rule in [
        "pickle-numpy2-file-under-numpy1",
        "serialized-module-not-found",
        "serialized-name-not-found",
        "serialized-package-not-installed",
        "sklearn-pickle-version-mismatch",
    ] {
        assert!(findings_of(&report, rule).is_empty(), "{rule}");
    }
}

/// What the real libraries of `venv` do loading each fixture (`cross_load.py`).
fn real_loads(venv: &Path, files: &[&str]) -> Value {
    let out = Command::new(venv.join("bin/python"))
        .arg(repo("fixtures/serialized/cross_load.py"))
        .args(files)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    })
}

/// The fixtures, checked in `venv`: the snapshot's verdict on each file against the real load.
fn agree_with_real_loads(venv: &Path, files: &[&str]) {
    let cwd = tempfile::tempdir().unwrap();
    let report = fw::check(
        venv,
        cwd.path(),
        &[],
        &[
            "--checkpoint",
            repo("fixtures/serialized").to_str().unwrap(),
        ],
    );
    let real = real_loads(venv, files);
    let sklearn = report["snapshot"]["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["path"]
                .as_str()
                .unwrap()
                .starts_with(venv.to_str().unwrap())
        })
        .and_then(|p| {
            p["packages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["name"] == "scikit-learn")
                .map(|k| k["version"].clone())
        });
    for (name, load) in real.as_object().unwrap() {
        let r = refs(&report, name);
        let failed = load["ok"] == false;
        let u = unresolved(r);
        assert_eq!(
            !u.is_empty(),
            failed,
            "{name} in {}: {u:?} vs {load}",
            venv.display()
        );
        let warned = load["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == "InconsistentVersionWarning");
        let mismatch = r["sklearn_version"].is_string()
            && sklearn.as_ref().is_some_and(|v| *v != r["sklearn_version"]);
        assert_eq!(mismatch, warned, "{name}: {r:#} vs {load}");
    }
}

#[test]
fn pypi_numpy_and_scikit_learn_loads_fail_exactly_where_references_are_unresolved() {
    for reqs in [
        ["numpy==1.26.4", "scikit-learn==1.3.2", "pandas==2.1.4"],
        ["numpy==2.1.3", "scikit-learn==1.5.2", "pandas==2.2.3"],
    ] {
        let Some(venv) = pypi::need(&reqs.join(" "), pypi::cached_venv(&reqs)) else {
            return;
        };
        agree_with_real_loads(&venv, &[]);
    }
}

#[test]
fn pypi_torch_resolves_its_own_globals_and_not_the_training_repo() {
    let Some(venv) = pypi::need("torch venv", pypi::cached_venv(&["torch==2.15.0"])) else {
        return;
    };
    agree_with_real_loads(&venv, &["torch_whole_module.pt"]);
    let cwd = tempfile::tempdir().unwrap();
    let file = repo("fixtures/serialized/torch_whole_module.pt");
    let report = fw::check(
        &venv,
        cwd.path(),
        &[],
        &["--checkpoint", file.to_str().unwrap()],
    );
    let u = unresolved(refs(&report, "torch_whole_module.pt"));
    assert_eq!(
        u,
        [(
            "trainlib.models.Net".to_string(),
            "package-not-installed".to_string()
        )]
    );
}
