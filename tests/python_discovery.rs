//! Interpreter discovery, end to end: `envdoctor snapshot` on fixture machines
//! (`fixtures/machines/py-*`), on machines built in a tempdir (the no-execution trap, hostile
//! names and files), and on real venvs made with `python3 -m venv`.

use assert_cmd::Command;
use serde_json::Value;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/machines")
        .join(name)
}

/// `envdoctor snapshot --root ROOT [--project P]` with exactly `env` as its environment.
fn snapshot(root: &Path, project: Option<&str>, env: &[(&str, &str)]) -> Value {
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear()
        .envs(env.iter().copied())
        .arg("snapshot")
        .arg("--root")
        .arg(root)
        .args(["--deadline", "60"]);
    if let Some(p) = project {
        cmd.args(["--project", p]);
    }
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("snapshot is JSON")
}

fn pythons(s: &Value) -> &Vec<Value> {
    s["pythons"].as_array().expect("pythons[]")
}

/// The interpreter whose `path` is `path` (panics with the list when absent).
fn py<'a>(s: &'a Value, path: &str) -> &'a Value {
    pythons(s)
        .iter()
        .find(|p| p["path"] == path)
        .unwrap_or_else(|| panic!("no python {path} in {:#?}", paths(s)))
}

fn paths(s: &Value) -> Vec<String> {
    pythons(s)
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect()
}

/// `(kind, detail)` of every source, in order.
fn sources(p: &Value) -> Vec<(String, String)> {
    p["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["kind"].as_str().unwrap().to_string(),
                s["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn kinds(p: &Value) -> Vec<String> {
    sources(p).into_iter().map(|(k, _)| k).collect()
}

fn has_source(p: &Value, kind: &str, detail_part: &str) -> bool {
    sources(p)
        .iter()
        .any(|(k, d)| k == kind && d.contains(detail_part))
}

fn errors(s: &Value) -> Vec<(String, String)> {
    s["probe_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const PYENV_PATH: &str = "/home/u/.pyenv/shims:/usr/bin";

#[test]
fn pyenv_shims_resolve_through_pyenv_version() {
    let s = snapshot(
        &fixture("py-pyenv"),
        Some("/home/u/proj/sub"),
        &[
            ("PATH", PYENV_PATH),
            ("HOME", "/home/u"),
            ("PYENV_VERSION", "3.11.7"),
        ],
    );
    let p = py(&s, "/home/u/.pyenv/versions/3.11.7/bin/python");
    assert_eq!(
        p["canonical_path"],
        "/home/u/.pyenv/versions/3.11.7/bin/python3.11"
    );
    assert_eq!(
        sources(p),
        vec![
            (
                "pyenv-shim".into(),
                "python (PATH entry 0: /home/u/.pyenv/shims) is a pyenv shim; \
                 version 3.11.7 from PYENV_VERSION=3.11.7"
                    .into()
            ),
            (
                "pyenv-shim".into(),
                "python3 (PATH entry 0: /home/u/.pyenv/shims) is a pyenv shim; \
                 version 3.11.7 from PYENV_VERSION=3.11.7"
                    .into()
            ),
            (
                "pip-shebang".into(),
                "pip (PATH entry 0: /home/u/.pyenv/shims) is a pyenv shim; version 3.11.7 from \
                 PYENV_VERSION=3.11.7: #!/home/u/.pyenv/versions/3.11.7/bin/python3.11"
                    .into()
            ),
            (
                "pyenv-version".into(),
                "/home/u/.pyenv/versions/3.11.7".into()
            ),
        ]
    );
    // The shims themselves are never reported as interpreters.
    assert!(
        paths(&s).iter().all(|p| !p.contains("/shims/")),
        "{:?}",
        paths(&s)
    );
    // Every installed version is listed once.
    for v in ["3.10.13", "3.12.1"] {
        let p = py(&s, &format!("/home/u/.pyenv/versions/{v}/bin/python"));
        assert_eq!(kinds(p), vec!["pyenv-version"]);
    }
    // System python: PATH, pip3's shebang and the system scan agree; `-config` is no interpreter.
    let sys = py(&s, "/usr/bin/python3");
    assert_eq!(sys["canonical_path"], "/usr/bin/python3.12");
    assert_eq!(
        kinds(sys),
        vec!["path", "path", "pip-shebang", "system", "system"]
    );
    assert!(has_source(
        sys,
        "pip-shebang",
        "pip3 (PATH entry 1: /usr/bin): #!/usr/bin/python3"
    ));
    assert_eq!(pythons(&s).len(), 4, "{:?}", paths(&s));
    assert!(errors(&s).is_empty(), "{:?}", errors(&s));
}

#[test]
fn pyenv_version_files_project_parents_then_global() {
    // `.python-version` in the project's parent; `3.12` is a prefix of the installed 3.12.1.
    let s = snapshot(
        &fixture("py-pyenv"),
        Some("/home/u/proj/sub"),
        &[("PATH", PYENV_PATH), ("HOME", "/home/u")],
    );
    let p = py(&s, "/home/u/.pyenv/versions/3.12.1/bin/python");
    assert!(has_source(
        p,
        "pyenv-shim",
        "version 3.12.1 (from 3.12) from /home/u/proj/.python-version"
    ));
    // Without a project: the global `$PYENV_ROOT/version`.
    let s = snapshot(
        &fixture("py-pyenv"),
        None,
        &[("PATH", PYENV_PATH), ("HOME", "/home/u")],
    );
    let p = py(&s, "/home/u/.pyenv/versions/3.10.13/bin/python");
    assert!(has_source(
        p,
        "pyenv-shim",
        "version 3.10.13 from /home/u/.pyenv/version"
    ));
    assert!(!has_source(
        py(&s, "/home/u/.pyenv/versions/3.12.1/bin/python"),
        "pyenv-shim",
        ""
    ));
}

#[test]
fn pyenv_system_and_missing_versions() {
    let env = |v| {
        vec![
            ("PATH", PYENV_PATH),
            ("HOME", "/home/u"),
            ("PYENV_VERSION", v),
        ]
    };
    let s = snapshot(&fixture("py-pyenv"), None, &env("system"));
    assert!(has_source(
        py(&s, "/usr/bin/python3"),
        "pyenv-shim",
        "python3 (PATH entry 0: /home/u/.pyenv/shims) is a pyenv shim; version system from \
         PYENV_VERSION=system: PATH entry 1: /usr/bin/python3"
    ));
    // A version that is not installed: `python3` falls back to the system one, as `pyenv which`
    // does; `python`, which the system lacks, is a missing interpreter (a fact).
    let s = snapshot(&fixture("py-pyenv"), None, &env("3.9.0"));
    assert!(has_source(
        py(&s, "/usr/bin/python3"),
        "pyenv-shim",
        "python3 (PATH entry 0: /home/u/.pyenv/shims) is a pyenv shim; version 3.9.0 from \
         PYENV_VERSION=3.9.0 is not installed; falls back to system: PATH entry 1: /usr/bin/python3"
    ));
    let p = py(&s, "/home/u/.pyenv/versions/3.9.0/bin/python");
    assert_eq!(p["exists"], false);
    assert!(p.get("canonical_path").is_none());
    assert!(has_source(
        p,
        "pyenv-shim",
        "version 3.9.0 from PYENV_VERSION=3.9.0 is not installed"
    ));
    // The first version that has the command wins.
    let s = snapshot(&fixture("py-pyenv"), None, &env("3.9.0:3.10.13"));
    assert!(has_source(
        py(&s, "/home/u/.pyenv/versions/3.10.13/bin/python"),
        "pyenv-shim",
        "version 3.10.13 from PYENV_VERSION=3.9.0:3.10.13"
    ));
}

#[test]
fn a_shim_is_recognised_by_its_content() {
    // Neither $PYENV_ROOT nor $HOME points at the pyenv that owns the shims: the shim's own
    // `export PYENV_ROOT=` line tells.
    let s = snapshot(
        &fixture("py-pyenv"),
        None,
        &[("PATH", PYENV_PATH), ("HOME", "/home/nobody")],
    );
    let p = py(&s, "/home/u/.pyenv/versions/3.10.13/bin/python");
    assert!(has_source(
        p,
        "pyenv-shim",
        "python3 (PATH entry 0: /home/u/.pyenv/shims)"
    ));
    assert!(paths(&s).iter().all(|p| !p.contains("/shims/")));
}

#[test]
fn conda_roots_envs_environments_txt_and_environment_yml() {
    let s = snapshot(
        &fixture("py-conda"),
        Some("/home/u/proj"),
        &[
            (
                "PATH",
                "/home/u/miniconda3/envs/ml/bin:/home/u/miniconda3/condabin:/usr/bin",
            ),
            ("HOME", "/home/u"),
            ("CONDA_PREFIX", "/home/u/miniconda3/envs/ml"),
            ("CONDA_PREFIX_1", "/home/u/miniconda3"),
            ("CONDA_EXE", "/home/u/miniconda3/bin/conda"),
        ],
    );
    let ml = py(&s, "/home/u/miniconda3/envs/ml/bin/python");
    assert_eq!(
        kinds(ml),
        vec![
            "conda-prefix",
            "path",
            "path",
            "path",
            "conda-env",
            "conda-env"
        ]
    );
    assert!(has_source(
        ml,
        "conda-prefix",
        "CONDA_PREFIX=/home/u/miniconda3/envs/ml"
    ));
    assert!(has_source(
        ml,
        "conda-env",
        "env ml in /home/u/miniconda3/envs"
    ));
    assert!(has_source(
        ml,
        "conda-env",
        "/home/u/.conda/environments.txt line 2: /home/u/miniconda3/envs/ml"
    ));
    let base = py(&s, "/home/u/miniconda3/bin/python");
    assert!(has_source(
        base,
        "conda-env",
        "base env /home/u/miniconda3 (conda root from CONDA_EXE=/home/u/miniconda3/bin/conda)"
    ));
    let tf = py(&s, "/home/u/miniconda3/envs/tf/bin/python");
    assert_eq!(
        sources(tf)[0],
        (
            "conda-environment-yml".to_string(),
            "/home/u/proj/environment.yml name: tf".to_string()
        )
    );
    let extra = py(&s, "/data/envs/extra/bin/python");
    assert_eq!(kinds(extra), vec!["conda-env"]);
    // An R-only env and a stale environments.txt line are not interpreters.
    let all = paths(&s);
    assert!(
        all.iter()
            .all(|p| !p.contains("rlang") && !p.contains("/gone")),
        "{all:?}"
    );
    assert_eq!(all.len(), 5, "{all:?}");
    assert!(errors(&s).is_empty(), "{:?}", errors(&s));

    // An environment.yml naming an env that was never created: a missing interpreter.
    let s = snapshot(
        &fixture("py-conda"),
        Some("/home/u/proj2"),
        &[("PATH", "/usr/bin"), ("HOME", "/home/u")],
    );
    let p = py(&s, "/home/u/miniconda3/envs/never-created/bin/python");
    assert_eq!(p["exists"], false);
    assert_eq!(kinds(p), vec!["conda-environment-yml"], "{:?}", sources(p));
}

#[test]
fn ides_project_envs_and_kernels() {
    let s = snapshot(
        &fixture("py-ide"),
        Some("/home/u/proj"),
        &[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("JUPYTER_PATH", "/opt/jupyter"),
        ],
    );
    // `.venv` links to /usr/bin/python3.11 yet stays its own interpreter, named four ways.
    let venv = py(&s, "/home/u/proj/.venv/bin/python");
    assert_eq!(venv["canonical_path"], "/usr/bin/python3.11");
    assert_eq!(
        sources(venv),
        vec![
            ("project-venv".into(), "/home/u/proj/.venv".into()),
            (
                "vscode".into(),
                "/home/u/proj/.vscode/settings.json python.defaultInterpreterPath = \
                 \"${workspaceFolder}/.venv/bin/python\""
                    .into()
            ),
            (
                "jupyter-kernel".into(),
                "/home/u/.local/share/jupyter/kernels/proj/kernel.json argv[0] = \
                 \"/home/u/proj/.venv/bin/python\""
                    .into()
            ),
        ]
    );
    // The deleted venv VS Code still names (`~` expanded).
    let gone = py(&s, "/home/u/venvs/deleted/bin/python");
    assert_eq!(gone["exists"], false);
    assert!(gone.get("canonical_path").is_none());
    assert!(has_source(
        gone,
        "vscode",
        "python.pythonPath = \"~/venvs/deleted/bin/python\""
    ));
    // PyCharm's project SDK through jdk.table.xml, and the kernel inside that env.
    let pc = py(&s, "/home/u/venvs/pc/bin/python");
    assert!(has_source(
        pc,
        "vscode",
        "/home/u/.config/Code/User/settings.json python.defaultInterpreterPath = \
         \"${userHome}/venvs/pc/bin/python\""
    ));
    assert_eq!(
        sources(pc)[2],
        (
            "pycharm".to_string(),
            "/home/u/proj/.idea/misc.xml project SDK \"Python 3.11 (pc)\" -> \
             /home/u/.config/JetBrains/PyCharm2024.1/options/jdk.table.xml homePath \
             $USER_HOME$/venvs/pc/bin/python"
                .to_string()
        )
    );
    assert!(has_source(
        pc,
        "jupyter-kernel",
        "/home/u/venvs/pc/share/jupyter/kernels/pc/kernel.json"
    ));
    // pip's `#!/bin/sh` + `'''exec'` form for long or spaced paths.
    assert!(has_source(
        pc,
        "pip-shebang",
        "pip (PATH entry 0: /usr/bin): #!/bin/sh + '''exec' \"/home/u/venvs/pc/bin/python\""
    ));
    // Poetry and Pipenv envs of this project only.
    let poetry = py(
        &s,
        "/home/u/.cache/pypoetry/virtualenvs/proj-demo-AbCd12_4-py3.11/bin/python",
    );
    assert!(has_source(poetry, "poetry", "Poetry env of \"Proj_Demo\""));
    let pipenv = py(
        &s,
        "/home/u/.local/share/virtualenvs/proj-Q1w2E3r4/bin/python",
    );
    assert!(has_source(pipenv, "pipenv", "Pipenv env of directory proj"));
    // A bare `python3` in a system kernelspec is a PATH lookup.
    let sys = py(&s, "/usr/bin/python3");
    assert!(has_source(
        sys,
        "jupyter-kernel",
        "/usr/share/jupyter/kernels/python3/kernel.json argv[0] = \"python3\"; \
         PATH lookup: /usr/bin/python3"
    ));
    assert!(has_source(
        sys,
        "pip-shebang",
        "pip3.11 (PATH entry 0: /usr/bin): #!/usr/bin/env python3; PATH lookup: /usr/bin/python3"
    ));
    let all = paths(&s);
    assert!(
        all.iter()
            .all(|p| !p.contains("other-") && !p.contains("project-")),
        "{all:?}"
    );
    // The R kernel is not a python; nothing else is there.
    assert_eq!(all.len(), 6, "{all:?}");
    assert!(errors(&s).is_empty(), "{:?}", errors(&s));
}

#[test]
fn bad_input_becomes_probe_errors_and_the_rest_is_kept() {
    let s = snapshot(
        &fixture("py-broken"),
        Some("/home/u/proj"),
        &[
            ("PATH", "/opt/loop/bin:/opt/dangling/bin:/usr/bin"),
            ("HOME", "/home/u"),
        ],
    );
    let errs = errors(&s);
    let has = |path: &str, part: &str| errs.iter().any(|(p, m)| p == path && m.contains(part));
    assert!(
        has(
            "/home/u/proj/.vscode/settings.json",
            "invalid settings.json"
        ),
        "{errs:?}"
    );
    assert!(
        has("/home/u/proj/.idea/misc.xml", "invalid XML"),
        "{errs:?}"
    );
    assert!(
        has(
            "/home/u/.local/share/jupyter/kernels/bad/kernel.json",
            "invalid kernel.json"
        ),
        "{errs:?}"
    );
    assert!(
        has(
            "/home/u/.local/share/jupyter/kernels/noargv/kernel.json",
            "no argv[0]"
        ),
        "{errs:?}"
    );
    assert!(has("/opt/loop/bin/python", "symlink loop"), "{errs:?}");
    assert!(
        errs.iter().all(|(_, m)| !m.contains("bug in envdoctor")),
        "{errs:?}"
    );
    let dangling = py(&s, "/opt/dangling/bin/python3");
    assert_eq!(dangling["exists"], false);
    assert!(has_source(dangling, "path", "is a dangling symlink"));
    let sys = py(&s, "/usr/bin/python3");
    assert!(has_source(
        sys,
        "jupyter-kernel",
        "kernels/good/kernel.json"
    ));
    assert_eq!(paths(&s).len(), 2, "{:?}", paths(&s));
}

fn write_exe(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn nothing_named_is_ever_executed() {
    let t = tempfile::tempdir().unwrap();
    let m = t.path().join("machine");
    let marker = t.path().join("marker");
    let trap = format!("#!/bin/sh\necho \"$0 ran\" >> '{}'\n", marker.display());
    // Interpreters named by PATH, a pip shebang, a pyenv-shim look-alike, VS Code and a kernel.
    write_exe(&m.join("opt/bin/python3"), &trap);
    write_exe(
        &m.join("opt/bin/pip3"),
        "#!/opt/py/bin/python3.11\nimport sys\n",
    );
    write_exe(&m.join("opt/py/bin/python3.11"), &trap);
    write_exe(
        &m.join("opt/pyenv/shims/python"),
        &format!("{trap}export PYENV_ROOT=\"/opt/pyenv\"\nexec \"/opt/pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n"),
    );
    write_exe(&m.join("opt/pyenv/libexec/pyenv"), &trap);
    write_exe(&m.join("opt/pyenv/versions/3.12.0/bin/python"), &trap);
    fs::write(m.join("opt/pyenv/version"), "3.12.0\n").unwrap();
    write_exe(&m.join("srv/venv/bin/python"), &trap);
    fs::create_dir_all(m.join("proj/.vscode")).unwrap();
    fs::write(
        m.join("proj/.vscode/settings.json"),
        "{ \"python.defaultInterpreterPath\": \"/srv/venv/bin/python\", }",
    )
    .unwrap();
    write_exe(&m.join("srv/kernel-py/bin/python"), &trap);
    fs::create_dir_all(m.join("home/u/.local/share/jupyter/kernels/k")).unwrap();
    fs::write(
        m.join("home/u/.local/share/jupyter/kernels/k/kernel.json"),
        r#"{"argv": ["/srv/kernel-py/bin/python", "-m", "ipykernel_launcher"], "language": "python"}"#,
    )
    .unwrap();

    let s = snapshot(
        &m,
        Some("/proj"),
        &[("PATH", "/opt/pyenv/shims:/opt/bin"), ("HOME", "/home/u")],
    );
    assert!(
        !marker.exists(),
        "envdoctor executed something: {}",
        fs::read_to_string(&marker).unwrap_or_default()
    );
    // Everything was looked at.
    assert!(has_source(
        py(&s, "/opt/bin/python3"),
        "path",
        "PATH entry 1"
    ));
    assert!(has_source(
        py(&s, "/opt/py/bin/python3.11"),
        "pip-shebang",
        "pip3"
    ));
    assert!(has_source(
        py(&s, "/opt/pyenv/versions/3.12.0/bin/python"),
        "pyenv-shim",
        "version 3.12.0 from /opt/pyenv/version"
    ));
    assert!(has_source(
        py(&s, "/srv/venv/bin/python"),
        "vscode",
        "settings.json"
    ));
    assert!(has_source(
        py(&s, "/srv/kernel-py/bin/python"),
        "jupyter-kernel",
        "kernel.json"
    ));
    // The trap works: running one of them does write the marker.
    let st = std::process::Command::new(m.join("opt/bin/python3"))
        .status()
        .unwrap();
    assert!(st.success() && marker.exists());
}

#[test]
fn hostile_names_and_files_are_reported_not_fatal() {
    let t = tempfile::tempdir().unwrap();
    let m = t.path();
    // A conda env whose name is not UTF-8.
    let envs = m.join("opt/conda/envs");
    let bad = envs.join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    write_exe(&bad.join("bin/python"), "placeholder\n");
    fs::create_dir_all(bad.join("conda-meta")).unwrap();
    fs::create_dir_all(m.join("opt/conda/conda-meta")).unwrap();
    // settings.json that is a directory, a kernel.json that is a FIFO (a read would block).
    fs::create_dir_all(m.join("proj/.vscode/settings.json")).unwrap();
    let kdir = m.join("usr/share/jupyter/kernels/fifo");
    fs::create_dir_all(&kdir).unwrap();
    let st = std::process::Command::new("mkfifo")
        .arg(kdir.join("kernel.json"))
        .status()
        .unwrap();
    assert!(st.success());
    // A PATH entry that is a file, not a directory.
    fs::create_dir_all(m.join("opt")).unwrap();
    fs::write(m.join("opt/notadir"), "x").unwrap();
    write_exe(&m.join("usr/bin/python3"), "placeholder\n");

    let s = snapshot(
        m,
        Some("/proj"),
        &[("PATH", "/opt/notadir:/usr/bin"), ("HOME", "/home/u")],
    );
    let errs = errors(&s);
    let lossy = "/opt/conda/envs/caf\u{fffd}/bin/python";
    let p = py(&s, lossy);
    assert!(has_source(p, "conda-env", "/opt/conda/envs"));
    assert!(
        errs.iter()
            .any(|(p, m)| p == lossy && m.contains("not valid UTF-8")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|(p, m)| p == "/proj/.vscode/settings.json" && m.contains("not a regular file")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|(p, m)| p == "/usr/share/jupyter/kernels/fifo/kernel.json" && m.contains("FIFO")),
        "{errs:?}"
    );
    assert!(errs.iter().any(|(p, _)| p == "/opt/notadir"), "{errs:?}");
    assert!(has_source(
        py(&s, "/usr/bin/python3"),
        "path",
        "PATH entry 1"
    ));
}

/// `python3 -m venv DIR --without-pip`, or `None` (the reason printed) when there is no python3.
fn make_venv(dir: &Path) -> Option<()> {
    match std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(dir)
        .status()
    {
        Ok(st) if st.success() => Some(()),
        other => {
            eprintln!("skipping: `python3 -m venv` is not available here ({other:?})");
            None
        }
    }
}

#[test]
fn real_venvs_are_found_and_not_merged_with_their_base() {
    let t = tempfile::tempdir().unwrap();
    let t = fs::canonicalize(t.path()).unwrap();
    let active = t.join("active");
    let project = t.join("proj");
    fs::create_dir_all(&project).unwrap();
    if make_venv(&active).is_none() || make_venv(&project.join(".venv")).is_none() {
        return;
    }
    // The base interpreter the venvs were made from, put on PATH so it is found too.
    let base_real = fs::canonicalize(active.join("bin/python")).unwrap();
    let base_dir = base_real.parent().unwrap().to_str().unwrap().to_string();
    let s = snapshot(
        Path::new("/"),
        Some(project.to_str().unwrap()),
        &[
            ("PATH", &base_dir),
            ("HOME", t.join("home").to_str().unwrap()),
            ("VIRTUAL_ENV", active.to_str().unwrap()),
        ],
    );
    let base_real = base_real.to_str().unwrap();
    let a = py(&s, &format!("{}/bin/python", active.display()));
    assert_eq!(kinds(a), vec!["virtual-env"]);
    assert_eq!(a["canonical_path"], base_real);
    let v = py(&s, &format!("{}/.venv/bin/python", project.display()));
    assert_eq!(kinds(v), vec!["project-venv"]);
    assert_eq!(v["canonical_path"], base_real);
    // The base itself is a third, separate interpreter named by PATH.
    let base: Vec<&Value> = pythons(&s)
        .iter()
        .filter(|p| {
            p["canonical_path"] == base_real
                && !p["path"].as_str().unwrap().starts_with(t.to_str().unwrap())
        })
        .collect();
    assert_eq!(base.len(), 1, "{:?}", paths(&s));
    assert!(kinds(base[0]).iter().any(|k| k == "path"));
}

/// The hints discovery hands to inspection (kind, conda env name), read through the library.
#[test]
fn hints_for_inspection() {
    use envdoctor::probe::python::discovery::discover;
    use envdoctor::probe::{Context, Options};
    use envdoctor::root::{Env, Root};
    use envdoctor::snapshot::python::PythonKind;
    use std::sync::Arc;

    let env = Env::from_pairs([
        ("PATH", "/home/u/miniconda3/envs/ml/bin:/usr/bin"),
        ("HOME", "/home/u"),
        ("CONDA_PREFIX", "/home/u/miniconda3/envs/ml"),
        ("CONDA_EXE", "/home/u/miniconda3/bin/conda"),
    ]);
    let mut opts = Options::new(Root::new(fixture("py-conda")), env);
    opts.project = Some(PathBuf::from("/home/u/proj"));
    let ctx = Context {
        opts: Arc::new(opts),
        earlier: Arc::new(envdoctor::Snapshot::empty()),
        deadline: std::time::Instant::now() + std::time::Duration::from_secs(60),
        records: Default::default(),
        memo: Default::default(),
    };
    let mut errs = Vec::new();
    let found = discover(&ctx, &mut errs);
    assert!(errs.is_empty(), "{errs:?}");
    let get = |p: &str| {
        found
            .iter()
            .find(|f| f.path == Path::new(p))
            .unwrap_or_else(|| panic!("{p} not found"))
    };
    let hint = |p: &str| (get(p).kind_hint, get(p).conda_env.clone());
    let conda = Some(PythonKind::Conda);
    assert_eq!(
        hint("/home/u/miniconda3/envs/ml/bin/python"),
        (conda, Some("ml".into()))
    );
    assert_eq!(
        hint("/home/u/miniconda3/bin/python"),
        (conda, Some("base".into()))
    );
    assert_eq!(
        hint("/home/u/miniconda3/envs/tf/bin/python"),
        (conda, Some("tf".into()))
    );
    // Made with --prefix outside any envs dir: conda names it by path only.
    assert_eq!(hint("/data/envs/extra/bin/python"), (conda, None));
    assert_eq!(hint("/usr/bin/python3"), (Some(PythonKind::System), None));
    // Discovery order: the active env first.
    assert_eq!(
        found[0].path,
        Path::new("/home/u/miniconda3/envs/ml/bin/python")
    );
}

/// On a machine with pyenv (this developer machine has one), the shim resolution agrees with
/// `pyenv which python3` for the global version and for each `.python-version` we write.
#[test]
fn pyenv_which_agrees_on_this_machine() {
    let pyenv_ok = std::process::Command::new("pyenv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let first_python3 = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("python3"))
            .find(|c| c.is_file())
    });
    let on_shim = first_python3
        .as_ref()
        .is_some_and(|p| p.parent().is_some_and(|d| d.ends_with("shims")));
    if !pyenv_ok || !on_shim {
        eprintln!("skipping: no pyenv shim first on PATH here ({first_python3:?})");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let proj = fs::canonicalize(t.path()).unwrap();
    let installed = std::process::Command::new("pyenv")
        .args(["versions", "--bare", "--skip-aliases"])
        .output()
        .unwrap();
    let installed: Vec<String> = String::from_utf8_lossy(&installed.stdout)
        .lines()
        .filter(|v| !v.contains('/'))
        .map(String::from)
        .collect();
    let mut cases: Vec<Option<String>> = vec![None];
    cases.extend(installed.iter().take(3).cloned().map(Some));
    for case in cases {
        if let Some(v) = &case {
            fs::write(proj.join(".python-version"), format!("{v}\n")).unwrap();
        }
        let which = std::process::Command::new("pyenv")
            .args(["which", "python3"])
            .current_dir(&proj)
            .env_remove("PYENV_DIR")
            .output()
            .unwrap();
        let out = Command::cargo_bin("envdoctor")
            .unwrap()
            .env_remove("PYENV_DIR")
            .args(["snapshot", "--deadline", "60", "--project"])
            .arg(&proj)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let s: Value = serde_json::from_slice(&out).unwrap();
        let shimmed: Vec<&Value> = pythons(&s)
            .iter()
            .filter(|p| {
                sources(p)
                    .iter()
                    .any(|(k, d)| k == "pyenv-shim" && d.starts_with("python3 (PATH entry"))
            })
            .collect();
        assert_eq!(shimmed.len(), 1, "case {case:?}: {:?}", paths(&s));
        if which.status.success() {
            let want = String::from_utf8_lossy(&which.stdout).trim().to_string();
            let want = fs::canonicalize(&want).unwrap();
            assert_eq!(
                shimmed[0]["canonical_path"],
                want.to_str().unwrap(),
                "case {case:?}: {:?}",
                sources(shimmed[0])
            );
        } else {
            assert_eq!(shimmed[0]["exists"], false, "case {case:?}");
        }
    }
}
