//! The Python probe's per-interpreter facts against ground truth.
//!
//! - Real venvs built with `python3 -m venv` and `pip install` of small pinned wheels (plus an
//!   editable install, a `.pth` file and a PYTHONPATH directory holding a second copy of a
//!   package): envdoctor's package list must equal `pip list --format=json`, its `sys_path` must
//!   equal the interpreter's own `sys.path`, and its `Requires-Dist` lines must equal
//!   `importlib.metadata`'s. These need PyPI: they are skipped (with the reason printed) when it
//!   cannot be reached, unless `ENVDOCTOR_REQUIRE_PYPI` is set.
//! - Fixture machines under `fixtures/machines/site-*` for the layouts a CI box does not have:
//!   Debian's dist-packages, egg-info directories and files, `.egg-link`, user site, a venv with
//!   `include-system-site-packages`, conda-meta, garbage METADATA.

use assert_cmd::Command;
use envdoctor::snapshot::python::{Python, PythonKind, SysPathOrigin};
use envdoctor::Snapshot;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command as Std;

use crate::common::pypi;
use pypi::{need, pip, run};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/machines")
        .join(name)
}

/// `envdoctor snapshot --root ROOT` with only the given variables set.
fn snapshot(root: &Path, vars: &[(&str, &str)]) -> Snapshot {
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear().args(["snapshot", "--root"]).arg(root);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Snapshot::from_json(&String::from_utf8(out.stdout).unwrap(), "stdout").unwrap()
}

fn python<'a>(snap: &'a Snapshot, path: &str) -> &'a Python {
    snap.pythons
        .iter()
        .find(|p| p.path == path)
        .unwrap_or_else(|| {
            panic!(
                "no interpreter {path}; found {:?}",
                snap.pythons.iter().map(|p| &p.path).collect::<Vec<_>>()
            )
        })
}

fn sys_path(py: &Python) -> Vec<(String, SysPathOrigin, bool)> {
    py.sys_path
        .iter()
        .map(|e| (e.path.clone(), e.origin, e.exists))
        .collect()
}

/// name -> version of the copy `import` sees (what `pip list` shows).
fn winners(py: &Python) -> BTreeMap<String, String> {
    py.packages
        .iter()
        .map(|p| {
            let w = py.package(&p.name).unwrap();
            (w.name.clone(), w.version.clone())
        })
        .collect()
}

fn s(x: &str) -> String {
    x.to_string()
}

#[test]
fn debian_system_python_dist_packages_egg_info_user_site_and_pth() {
    let snap = snapshot(
        &fixture("site-debian"),
        &[("PATH", "/usr/bin"), ("HOME", "/home/u")],
    );
    let py = python(&snap, "/usr/bin/python3");
    assert_eq!(py.kind, PythonKind::System);
    assert_eq!(py.version.as_deref(), Some("3.11.2"), "from patchlevel.h");
    assert_eq!(py.prefix.as_deref(), Some("/usr"));
    use SysPathOrigin::*;
    assert_eq!(
        sys_path(py),
        vec![
            (s("/usr/lib/python311.zip"), Stdlib, false),
            (s("/usr/lib/python3.11"), Stdlib, true),
            (s("/usr/lib/python3.11/lib-dynload"), Stdlib, true),
            // site.py adds the user site before the global site dirs.
            (
                s("/home/u/.local/lib/python3.11/site-packages"),
                UserSite,
                true
            ),
            (s("/usr/local/lib/python3.11/dist-packages"), Site, true),
            (s("/usr/lib/python3/dist-packages"), Site, true),
            // extra.pth: /opt/extra exists, /opt/missing does not; the import line is skipped.
            (s("/opt/extra"), Pth, true),
        ]
    );
    let expected: BTreeMap<String, String> = [
        ("chardet", "5.1.0"),
        ("devpkg", "0.1.dev0"),
        ("localtool", "0.3"),
        ("noversion", ""),
        ("numpy", "1.26.4"),
        ("pygments", "2.14.0"),
        ("pyyaml", "6.0"),
        ("requests", "2.31.0"),
    ]
    .into_iter()
    .map(|(a, b)| (s(a), s(b)))
    .collect();
    assert_eq!(winners(py), expected);
    let yaml = py.package("pyyaml").unwrap();
    assert_eq!(yaml.installer.as_deref(), Some("debian"));
    assert_eq!(yaml.location, "/usr/lib/python3/dist-packages");
    let pyg = py.package("pygments").unwrap();
    assert!(pyg.metadata.ends_with("Pygments-2.14.0.egg-info"));
    assert_eq!(
        pyg.requires,
        vec!["importlib-metadata ; extra == \"plugins\""]
    );
    let chardet = py.package("chardet").unwrap();
    assert_eq!(chardet.requires_python.as_deref(), Some(">=3.7"));
    let dev = py.package("devpkg").unwrap();
    assert_eq!(dev.editable.as_deref(), Some("/home/u/src/devpkg"));
    assert_eq!(dev.location, "/home/u/src/devpkg");
    let req = py.package("requests").unwrap();
    assert_eq!(
        req.requires,
        vec![
            "charset-normalizer<4,>=2",
            "PySocks!=1.5.7,>=1.5.6; extra == \"socks\""
        ]
    );
    assert_eq!(py.shadowed.len(), 1, "{:?}", py.shadowed);
    let sh = &py.shadowed[0];
    assert_eq!(sh.name, "requests");
    assert_eq!(
        (sh.winner.version.as_str(), sh.winner.location.as_str()),
        ("2.31.0", "/usr/local/lib/python3.11/dist-packages")
    );
    assert_eq!(sh.hidden.len(), 1);
    assert_eq!(sh.hidden[0].version, "2.28.1");
    assert_eq!(sh.hidden[0].location, "/usr/lib/python3/dist-packages");
    // Bad input: named, reasoned, and the rest intact.
    let errs: Vec<(&str, &str)> = snap
        .probe_errors
        .iter()
        .map(|e| (e.path.as_deref().unwrap_or(""), e.message.as_str()))
        .collect();
    assert!(
        errs.iter()
            .any(|(p, m)| p.ends_with("broken-1.0.dist-info/METADATA")
                && m.contains("not a core-metadata file")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|(p, m)| p.ends_with("noversion-1.0.dist-info/METADATA") && m.contains("Version")),
        "{errs:?}"
    );
    assert!(!py.package("noversion").unwrap().version_valid);
}

#[test]
fn venv_with_system_site_packages_sees_user_site_then_base_site() {
    let snap = snapshot(
        &fixture("site-venv-system"),
        &[
            (
                "PATH",
                "/home/u/proj/.venv/bin:/home/u/.pyenv/versions/3.10.4/bin",
            ),
            ("HOME", "/home/u"),
        ],
    );
    let venv = python(&snap, "/home/u/proj/.venv/bin/python");
    assert_eq!(venv.kind, PythonKind::Venv);
    assert_eq!(venv.version.as_deref(), Some("3.10.4"));
    assert_eq!(venv.prefix.as_deref(), Some("/home/u/proj/.venv"));
    assert_eq!(
        venv.base_executable.as_deref(),
        Some("/home/u/.pyenv/versions/3.10.4/bin/python3"),
        "home + a name that exists there"
    );
    assert!(venv.include_system_site_packages);
    use SysPathOrigin::*;
    let base = "/home/u/.pyenv/versions/3.10.4";
    assert_eq!(
        sys_path(venv),
        vec![
            (format!("{base}/lib/python310.zip"), Stdlib, false),
            (format!("{base}/lib/python3.10"), Stdlib, true),
            (format!("{base}/lib/python3.10/lib-dynload"), Stdlib, true),
            (
                s("/home/u/proj/.venv/lib/python3.10/site-packages"),
                Site,
                true
            ),
            // CPython's site.py keeps the user site on for a venv that includes system site.
            (
                s("/home/u/.local/lib/python3.10/site-packages"),
                UserSite,
                true
            ),
            (
                format!("{base}/lib/python3.10/site-packages"),
                SystemSite,
                true
            ),
        ]
    );
    assert_eq!(venv.package("six").unwrap().version, "1.16.0");
    assert_eq!(venv.shadowed.len(), 1);
    assert_eq!(venv.shadowed[0].winner.origin, Site);
    assert_eq!(venv.shadowed[0].hidden[0].origin, SystemSite);
    assert_eq!(venv.shadowed[0].hidden[0].version, "1.15.0");
    let attrs = venv.package("attrs").unwrap();
    assert_eq!(attrs.requires_python.as_deref(), Some(">=3.7"));
    assert_eq!(attrs.requires.len(), 2);

    let base_py = python(&snap, "/home/u/.pyenv/versions/3.10.4/bin/python3");
    assert_eq!(base_py.kind, PythonKind::Pyenv);
    assert_eq!(
        base_py.version.as_deref(),
        Some("3.10.4"),
        "from the pyenv dir"
    );
    assert_eq!(base_py.package("six").unwrap().version, "1.15.0");
    assert!(base_py.package("attrs").is_none());
}

#[test]
fn isolated_venv_has_no_user_or_system_site_and_reads_pep660_editables() {
    let snap = snapshot(
        &fixture("site-venv-isolated"),
        &[("PATH", "/home/u/venv/bin"), ("HOME", "/home/u")],
    );
    let venv = python(&snap, "/home/u/venv/bin/python");
    assert_eq!(venv.kind, PythonKind::Venv);
    assert_eq!(venv.version.as_deref(), Some("3.12.1"), "version_info wins");
    assert_eq!(venv.base_executable.as_deref(), Some("/usr/bin/python3.12"));
    assert!(!venv.include_system_site_packages);
    use SysPathOrigin::*;
    assert_eq!(
        sys_path(venv),
        vec![
            (s("/usr/lib/python312.zip"), Stdlib, false),
            (s("/usr/lib/python3.12"), Stdlib, true),
            (s("/usr/lib/python3.12/lib-dynload"), Stdlib, true),
            (s("/home/u/venv/lib/python3.12/site-packages"), Site, true),
            (s("/home/u/src/my lib"), Pth, true),
        ]
    );
    assert_eq!(venv.packages.len(), 1, "{:?}", venv.packages);
    let mylib = &venv.packages[0];
    assert_eq!(mylib.name, "mylib");
    assert_eq!(mylib.editable.as_deref(), Some("/home/u/src/my lib"));
    assert_eq!(mylib.installer.as_deref(), Some("pip"));
}

#[test]
fn conda_version_from_conda_meta_and_local_version_labels() {
    let snap = snapshot(&fixture("site-conda"), &[("PATH", "/opt/conda/bin")]);
    let py = python(&snap, "/opt/conda/bin/python");
    assert_eq!(py.kind, PythonKind::Conda);
    assert_eq!(py.version.as_deref(), Some("3.11.7"));
    assert_eq!(py.prefix.as_deref(), Some("/opt/conda"));
    let torch = py.package("torch").unwrap();
    assert_eq!(torch.version, "2.5.1+cu121");
    assert_eq!(torch.local.as_deref(), Some("cu121"));
    assert!(torch.version_valid);
    assert_eq!(torch.installer.as_deref(), Some("conda"));
    assert_eq!(torch.requires.len(), 2);
    let weird = py.package("weird").unwrap();
    assert_eq!(weird.version, "1.0-SNAPSHOT-build7");
    assert!(!weird.version_valid);
}

// ---------------------------------------------------------------------------------------------
// Real venvs and pip.

fn normalize(name: &str) -> String {
    envdoctor::probe::python::dist_info::normalize_name(name)
}

/// normalised name -> (version, Requires-Dist lines) of the copy `import` sees.
type Dists = BTreeMap<String, (String, Vec<String>)>;

/// What the interpreter itself says, under the same environment: sys.path (without the script
/// directory) and, for each distribution `import` sees, its version and requirements.
fn ground_truth(py: &Path, vars: &[(&str, String)]) -> Result<(Vec<String>, Dists), String> {
    let script = "import sys, json, importlib.metadata as m\n\
                  seen = {}\n\
                  for d in m.distributions():\n\
                  \x20   n = d.metadata['Name']\n\
                  \x20   if n is None: continue\n\
                  \x20   seen.setdefault(n, (d.version, d.requires or []))\n\
                  print(json.dumps({'path': sys.path[1:], 'dists': seen}))\n";
    let mut c = Std::new(py);
    c.env_clear().args(["-c", script]);
    for (k, v) in vars {
        c.env(k, v);
    }
    let text = run(&mut c)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let path = v["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    let mut dists = BTreeMap::new();
    for (name, d) in v["dists"].as_object().unwrap() {
        let version = d[0].as_str().unwrap().to_string();
        let reqs = d[1]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        dists.entry(normalize(name)).or_insert((version, reqs));
    }
    Ok((path, dists))
}

fn snapshot_host(vars: &[(&str, String)]) -> Snapshot {
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear().args(["snapshot", "--deadline", "60"]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Snapshot::from_json(&String::from_utf8(out.stdout).unwrap(), "stdout").unwrap()
}

struct PipVenv {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    venv: PathBuf,
    site: PathBuf,
    proj: PathBuf,
}

/// A venv with pinned wheels, an editable project, a `.pth` to a second copy of idna (3.6) and a
/// PYTHONPATH directory with a second copy of six (1.15.0).
fn build_pip_venv() -> Result<PipVenv, String> {
    crate::common::pypi::off()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path().to_path_buf();
    let venv = dir.join("venv");
    run(Std::new("python3").args(["-m", "venv"]).arg(&venv))?;
    let py = venv.join("bin/python");
    run(pip(&py).args([
        "install",
        "six==1.16.0",
        "packaging==24.1",
        "idna==3.7",
        // Requires-Dist lines with markers and extras.
        "attrs==23.2.0",
    ]))?;
    // The editable project (PEP 660 through setuptools, built without network isolation).
    let proj = dir.join("tiny-proj");
    std::fs::create_dir_all(proj.join("tiny_proj")).map_err(|e| e.to_string())?;
    std::fs::write(
        proj.join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
         [project]\nname = \"Tiny_Proj\"\nversion = \"0.1.0\"\ndependencies = [\"six>=1.10; python_version >= '3'\"]\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(proj.join("tiny_proj/__init__.py"), "").map_err(|e| e.to_string())?;
    // Pinned: setuptools >= 70.1 builds PEP 660 editables without the separate `wheel`.
    run(pip(&py).args(["install", "setuptools==75.3.0"]))?;
    run(pip(&py)
        .args(["install", "--no-build-isolation", "--no-deps", "-e"])
        .arg(&proj))?;
    let site = PathBuf::from(
        run(Std::new(&py).args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ]))?
        .trim(),
    );
    run(pip(&py)
        .args(["install", "--no-deps", "--target"])
        .arg(dir.join("extra"))
        .arg("idna==3.6"))?;
    run(pip(&py)
        .args(["install", "--no-deps", "--target"])
        .arg(dir.join("pp"))
        .arg("six==1.15.0"))?;
    // A .pth with a path line (a second idna, behind the venv's) and an import line that would
    // leave a marker if anything executed it.
    std::fs::write(
        site.join("zz-extra.pth"),
        format!(
            "{}\nimport pathlib; pathlib.Path({:?}).touch()\n",
            dir.join("extra").display(),
            dir.join("pth-was-executed").display()
        ),
    )
    .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir.join("home")).map_err(|e| e.to_string())?;
    Ok(PipVenv {
        _tmp: tmp,
        dir,
        venv,
        site,
        proj,
    })
}

#[test]
fn pip_venv_packages_match_pip_list_and_sys_path_matches_python() {
    let Some(v) = need("real venv", build_pip_venv()) else {
        return;
    };
    let vars = vec![
        ("PATH", format!("{}", v.venv.join("bin").display())),
        ("HOME", format!("{}", v.dir.join("home").display())),
        ("PYTHONPATH", format!("{}", v.dir.join("pp").display())),
    ];
    let snap = snapshot_host(&vars);
    assert!(
        !v.dir.join("pth-was-executed").exists(),
        "envdoctor executed a .pth import line"
    );
    let py_path = v.venv.join("bin/python");
    let py = python(&snap, py_path.to_str().unwrap());
    assert_eq!(py.kind, PythonKind::Venv);
    assert_eq!(py.prefix.as_deref(), v.venv.to_str());

    // pip list, name by name and version by version.
    let mut c = Std::new(&py_path);
    // Not `-q`: pip list's output goes through its logger and -q silences it.
    c.env_clear().args([
        "-m",
        "pip",
        "--disable-pip-version-check",
        "list",
        "--format=json",
    ]);
    for (k, val) in &vars {
        c.env(k, val);
    }
    let listed: serde_json::Value = serde_json::from_str(&run(&mut c).expect("pip list")).unwrap();
    let pip_list: BTreeMap<String, String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                normalize(d["name"].as_str().unwrap()),
                d["version"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(winners(py), pip_list);
    for name in ["six", "packaging", "idna", "attrs", "tiny-proj", "pip"] {
        assert!(pip_list.contains_key(name), "{name} missing from pip list");
    }

    // sys.path and Requires-Dist as the interpreter sees them.
    let (real_path, dists) = ground_truth(&py_path, &vars).expect("python -c");
    let ours: Vec<String> = py.sys_path.iter().map(|e| e.path.clone()).collect();
    assert_eq!(ours, real_path);
    for (name, (version, requires)) in &dists {
        let p = py.package(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(&p.version, version, "{name}");
        assert_eq!(&p.requires, requires, "{name}");
    }
    assert!(
        py.package("attrs")
            .unwrap()
            .requires
            .iter()
            .any(|r| r == "importlib-metadata; python_version < '3.8'"),
        "attrs has marker lines"
    );

    // Shadowing both ways: PYTHONPATH beats the venv, the venv beats a .pth directory.
    let six = py.shadowed.iter().find(|s| s.name == "six").expect("six");
    assert_eq!(six.winner.version, "1.15.0");
    assert_eq!(six.winner.origin, SysPathOrigin::Pythonpath);
    assert_eq!(six.hidden[0].version, "1.16.0");
    assert_eq!(six.hidden[0].location, v.site.to_str().unwrap());
    let idna = py.shadowed.iter().find(|s| s.name == "idna").expect("idna");
    assert_eq!(idna.winner.version, "3.7");
    assert_eq!(idna.hidden[0].version, "3.6");
    assert_eq!(idna.hidden[0].origin, SysPathOrigin::Pth);

    let tiny = py.package("tiny-proj").unwrap();
    assert_eq!(tiny.editable.as_deref(), v.proj.to_str());
    assert_eq!(py.package("six").unwrap().installer.as_deref(), Some("pip"));
}

#[test]
fn system_site_venv_matches_python_with_user_site() {
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("sysvenv");
    let Some(_) = need(
        "python3 -m venv",
        run(Std::new("python3")
            .args(["-m", "venv", "--without-pip", "--system-site-packages"])
            .arg(&venv)),
    ) else {
        return;
    };
    let py_path = venv.join("bin/python");
    let xy =
        run(Std::new(&py_path).args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]))
            .unwrap();
    let home = tmp.path().join("home");
    let user_site = home.join(format!(".local/lib/python{}/site-packages", xy.trim()));
    let Some(_) = need(
        "pip install --target",
        run(Std::new("python3")
            .args([
                "-m",
                "pip",
                "--disable-pip-version-check",
                "-q",
                "install",
                "--no-deps",
                "--target",
            ])
            .arg(&user_site)
            .arg("packaging==24.1")),
    ) else {
        return;
    };
    let vars = vec![
        ("PATH", format!("{}", venv.join("bin").display())),
        ("HOME", format!("{}", home.display())),
    ];
    let snap = snapshot_host(&vars);
    let py = python(&snap, py_path.to_str().unwrap());
    assert!(py.include_system_site_packages);
    let (real_path, dists) = ground_truth(&py_path, &vars).expect("python -c");
    let ours: Vec<String> = py.sys_path.iter().map(|e| e.path.clone()).collect();
    assert_eq!(ours, real_path);
    let theirs: BTreeMap<String, String> = dists
        .iter()
        .map(|(n, (v, _))| (n.clone(), v.clone()))
        .collect();
    assert_eq!(winners(py), theirs);
    assert_eq!(py.package("packaging").unwrap().version, "24.1");
    assert!(py
        .sys_path
        .iter()
        .any(|e| e.origin == SysPathOrigin::UserSite && e.path == user_site.to_str().unwrap()));
}
