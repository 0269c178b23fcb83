//! Lock drift and back, end to end for PDM and Pipenv: a project locked by the real tool (from
//! PyPI; the lock is kept under the PyPI cache by a hash of the tool, the Python and the project
//! file, so a rerun does not resolve again), synced into its environment by the real tool, and
//! `check --project` is quiet. Then the environment is changed by hand (another version, a
//! removed package, the locked version from a local wheel, an unlocked package): `check` names
//! each drift with the line of the lock that pinned it and the tool's command. Each command the
//! findings print is then run for real, and `check` is quiet again: the printed fix works.
//! `check` runs with a bare environment (no `VIRTUAL_ENV`), so the job's interpreter is found
//! as `pdm run`/`pipenv run` find it: PDM's in-project `.venv`, Pipenv's
//! `~/.local/share/virtualenvs/<dir>-<hash>`.

use crate::common::pypi;
use crate::lock_drift::{check, lock_findings, pinned_line, run, tool, DEPS};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Copy `lock` into `dir` from the cache when `make` wrote it before for the same inputs (the
/// tool's requirement, the Python, the bytes of `inputs` in `dir`); else run `make` (which
/// writes it in `dir`) and keep a copy. `None`: the tool could not lock here (skipped).
fn cached_lock(
    req: &str,
    dir: &Path,
    inputs: &[&str],
    lock: &str,
    make: impl FnOnce() -> Option<String>,
) -> Option<()> {
    let py = run(Command::new("python3").args(["-c", "import sys; print(sys.version)"]))?;
    let mut key = format!("{req}|{}", py.trim());
    for i in inputs {
        key.push('|');
        key.push_str(&fs::read_to_string(dir.join(i)).unwrap());
    }
    let cached = pypi::cache_dir()
        .join("locks")
        .join(format!("{:016x}", pypi::fnv(&key)))
        .join(lock);
    if cached.is_file() {
        fs::copy(&cached, dir.join(lock)).unwrap();
        return Some(());
    }
    make()?;
    fs::create_dir_all(cached.parent().unwrap()).unwrap();
    let part = cached.with_extension("part");
    fs::copy(dir.join(lock), &part).unwrap();
    fs::rename(&part, &cached).unwrap();
    Some(())
}

/// A command of the tool `bin` run in `dir` as its user would: `HOME` is the test's (where
/// Pipenv puts its envs and `check` looks), the tool's directory first on `PATH`, no venv active;
/// pip's download cache is the real user's.
fn tool_cmd(bin: &Path, dir: &Path, home: &Path) -> Command {
    let mut c = Command::new("sh");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    if let Some(h) = std::env::var_os("HOME") {
        c.env("PIP_CACHE_DIR", Path::new(&h).join(".cache/pip"));
    }
    c.current_dir(dir)
        .env_remove("VIRTUAL_ENV")
        .env_remove("PIPENV_VENV_IN_PROJECT")
        .env_remove("WORKON_HOME")
        .env("HOME", home)
        .env("PATH", path)
        .env("PDM_CHECK_UPDATE", "false")
        .env("PDM_CACHE_DIR", pypi::cache_dir().join("pdm-cache"))
        .env("PIPENV_IGNORE_VIRTUALENVS", "1")
        .env("PIPENV_YES", "1")
        .env("PIPENV_NOSPIN", "1");
    c
}

/// `sh -c LINE` through [`tool_cmd`].
fn shell(bin: &Path, dir: &Path, home: &Path, line: &str) -> Option<String> {
    run(tool_cmd(bin, dir, home).args(["-c", line]))
}

/// The locked `six` wheel, from the PyPI cache (downloaded once).
fn six_wheel() -> PathBuf {
    pypi::wheel_file("six==1.17.0", "six-1.17.0-py2.py3-none-any.whl", "3.11").unwrap()
}

/// The first `…` of each finding's fix: the command it tells the user to run.
fn printed_commands(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in v["findings"].as_array().unwrap() {
        if !f["rule"].as_str().unwrap_or("").starts_with("lock-") {
            continue;
        }
        let fix = f["fix"]["text"].as_str().unwrap_or("");
        let cmd = fix.split('`').nth(1).unwrap_or_default().to_string();
        assert!(!cmd.is_empty(), "{f}");
        if !out.contains(&cmd) {
            out.push(cmd);
        }
    }
    out
}

/// The lock drift facts by package name: (kind, pinned_at, sync_command, locked version).
fn drift_facts(v: &Value) -> BTreeMap<String, (String, String, String, String)> {
    let s = |x: &Value| x.as_str().unwrap_or("").to_string();
    v["snapshot"]["lock_drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                s(&d["name"]),
                (
                    s(&d["kind"]),
                    s(&d["pinned_at"]),
                    s(&d["sync_command"]),
                    s(&d["locked"]),
                ),
            )
        })
        .collect()
}

/// The four hand changes, through `installer` (a command prefix, e.g. `uv pip` with
/// `--python`): urllib3 1.26.20 (version), packaging removed, six 1.17.0 from a local wheel
/// (source), idna (unlocked).
fn drift_by_hand(installer: &dyn Fn(&[&str]) -> Command) {
    let wheel = six_wheel();
    let wheel = wheel.to_str().unwrap();
    for args in [
        &["install", "urllib3==1.26.20"][..],
        &["uninstall", "-y", "packaging"],
        &["install", "--no-deps", "--force-reinstall", wheel],
        &["install", "idna"],
    ] {
        let mut c = installer(args);
        run(&mut c).unwrap();
    }
}

/// What `check` said after [`drift_by_hand`]: the rules, each message naming the pin's
/// `file:line` (the locked line in the file, found by `line_of`), and `expect_cmd` per drift.
fn assert_drifted(
    v: &Value,
    lock: &Path,
    line_of: &dyn Fn(&str, &str) -> usize,
    expect_cmd: &dyn Fn(&str, &str) -> String,
) {
    let found = lock_findings(v);
    let rules: Vec<&str> = found.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        rules,
        [
            "lock-package-not-installed",
            "lock-source-drift",
            "lock-unlocked-packages",
            "lock-version-drift"
        ],
        "{found:?}"
    );
    assert!(found[2].1.contains("idna"), "{found:?}");
    let facts = drift_facts(v);
    let want = [
        ("packaging", "not-installed"),
        ("six", "source"),
        ("urllib3", "version"),
    ];
    assert_eq!(facts.len(), want.len(), "{facts:?}");
    for (name, kind) in want {
        let (k, at, cmd, locked) = &facts[name];
        assert_eq!(k, kind, "{name}");
        let pin = format!("{}:{}", lock.display(), line_of(name, locked));
        assert_eq!(at, &pin, "{name}");
        assert_eq!(cmd, &expect_cmd(name, kind), "{name}");
        let msg = found.iter().find(|(_, m)| m.contains(&pin));
        assert!(msg.is_some(), "no message names {pin}: {found:?}");
    }
    assert_eq!(facts["six"].3, "1.17.0");
}

/// A PDM project under `t` (DEPS and a dev group), locked by the real pdm (the lock cached
/// outside the clone) and not yet synced: (pdm, uv, the project, its HOME); None without PyPI.
fn pdm_locked_project(t: &Path) -> Option<(PathBuf, PathBuf, PathBuf, PathBuf)> {
    let pdm = tool("pdm==2.29.4 hishel==1.4.0", "pdm")?;
    let uvx = tool("uv==0.13.9", "uv").unwrap();
    let (dir, home) = (t.join("proj"), t.join("home"));
    fs::create_dir_all(&dir).unwrap();
    fs::create_dir_all(&home).unwrap();
    fs::write(
        dir.join("pyproject.toml"),
        format!(
            "[project]\nname = \"demo\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n{DEPS}\n\n\
             [dependency-groups]\ndev = [\"iniconfig\"]\n\n[tool.pdm]\ndistribution = false\n"
        ),
    )
    .unwrap();
    cached_lock("pdm==2.29.4", &dir, &["pyproject.toml"], "pdm.lock", || {
        shell(&pdm, &dir, &home, "pdm lock -q")
    })
    .unwrap();
    Some((pdm, uvx, dir, home))
}

/// PDM: `pdm lock`, `pdm sync` into the in-project `.venv` (PDM seeds no pip there, so the hand
/// changes go through `uv pip --python`); drift names pdm.lock's lines, `pdm sync --clean`,
/// and for the locally built six `pdm sync --clean --reinstall` (plain `pdm sync` keeps a
/// package whose version matches); both run, and `check` is quiet again.
#[test]
fn pdm_project_synced_drifted_and_resynced() {
    let t = tempfile::tempdir().unwrap();
    let Some((pdm, uvx, dir, home)) = pdm_locked_project(t.path()) else {
        return;
    };
    let sh = |line: &str| shell(&pdm, &dir, &home, line);
    sh("pdm sync -q").unwrap();
    let (code, clean) = check(&dir, &home);
    assert_eq!(lock_findings(&clean), vec![], "a synced project is quiet");
    assert_eq!(code, 0, "{}", clean["findings"]);
    let venv_py = dir.join(".venv/bin/python");
    let row = clean["inventory"][0]["text"].as_str().unwrap();
    assert!(
        row.contains("/proj/.venv/bin/python") && row.contains("pdm run"),
        "{row}"
    );
    let l = &clean["snapshot"]["locks"][0];
    assert_eq!(l["format"], "pdm", "{l}");
    assert_eq!(l["python"], venv_py.display().to_string(), "{l}");
    assert_eq!(l["sync_command"], "pdm sync --clean");

    drift_by_hand(&|args: &[&str]| {
        let mut c = Command::new(&uvx);
        c.args(["pip", args[0], "-q", "--python"])
            .arg(&venv_py)
            .args(args[1..].iter().filter(|a| **a != "-y"));
        c
    });
    let (_, v) = check(&dir, &home);
    let lock = dir.join("pdm.lock");
    assert_drifted(
        &v,
        &lock,
        &|name, version| pinned_line(&lock, name, version),
        &|_, kind| {
            if kind == "source" {
                "pdm sync --clean --reinstall".into()
            } else {
                "pdm sync --clean".into()
            }
        },
    );
    let cmds = printed_commands(&v);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    for cmd in &cmds {
        sh(cmd).unwrap();
    }
    let (code, resynced) = check(&dir, &home);
    assert_eq!(lock_findings(&resynced), vec![], "after {cmds:?}");
    assert_eq!(code, 0);
}

/// PDM with `venv.in_project = false`: `pdm sync` makes its venv under
/// `~/.local/share/pdm/venvs/` and records it in `.pdm-python`; that venv is the job's
/// interpreter (what `pdm run` uses), the lock is compared with it, and the synced project is
/// quiet. A hand `uv pip install six==1.15.0` there is drift, so the comparison is real.
#[test]
fn pdm_venv_outside_the_project_is_the_job() {
    let t = tempfile::tempdir().unwrap();
    let Some((pdm, uvx, dir, home)) = pdm_locked_project(t.path()) else {
        return;
    };
    let sh = |line: &str| shell(&pdm, &dir, &home, line);
    sh("pdm config --local venv.in_project false && pdm sync -q").unwrap();
    assert!(!dir.join(".venv").exists());
    let recorded = fs::read_to_string(dir.join(".pdm-python")).unwrap();
    let venv_py = PathBuf::from(recorded.trim());
    assert!(
        venv_py.starts_with(home.join(".local/share/pdm/venvs")),
        "{}",
        venv_py.display()
    );
    let (code, clean) = check(&dir, &home);
    assert_eq!(lock_findings(&clean), vec![], "a synced project is quiet");
    assert_eq!(code, 0, "{}", clean["findings"]);
    let row = clean["inventory"][0]["text"].as_str().unwrap();
    assert!(
        row.contains(&venv_py.display().to_string()) && row.contains("pdm run"),
        "{row}"
    );
    assert_eq!(
        clean["snapshot"]["locks"][0]["python"],
        venv_py.display().to_string()
    );
    run(Command::new(&uvx)
        .args(["pip", "install", "-q", "--python"])
        .arg(&venv_py)
        .arg("six==1.15.0"))
    .unwrap();
    let (_, v) = check(&dir, &home);
    let rules: Vec<String> = lock_findings(&v).into_iter().map(|(r, _)| r).collect();
    assert_eq!(rules, ["lock-version-drift"]);
}

/// The line of `"name": {` in Pipfile.lock's `default` section.
fn pipfile_line(lock: &Path, name: &str) -> usize {
    let text = fs::read_to_string(lock).unwrap();
    let key = format!("\"{name}\": {{");
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == "\"default\": {")
        .unwrap();
    start
        + lines[start..]
            .iter()
            .position(|l| l.trim() == key)
            .expect("pinned")
        + 1
}

/// Pipenv: `pipenv lock`, `pipenv sync --dev` into its own env (found by pipenv's hash of the
/// Pipfile path, without `VIRTUAL_ENV`); the dev package is locked, not reported. Drift by hand
/// with the env's pip names Pipfile.lock's lines; `pipenv sync && pipenv clean` (sync never
/// removes: clean drops idna) and, for the locally built six, an uninstall before
/// `pipenv sync` (pip keeps a package whose version matches); both run, quiet again.
#[test]
fn pipenv_project_synced_drifted_and_resynced() {
    let Some(pipenv) = tool("pipenv==2026.10.3", "pipenv") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let (dir, home) = (t.path().join("proj"), t.path().join("home"));
    fs::create_dir_all(&dir).unwrap();
    fs::create_dir_all(&home).unwrap();
    fs::write(
        dir.join("Pipfile"),
        "[[source]]\nurl = \"https://pypi.org/simple\"\nverify_ssl = true\nname = \"pypi\"\n\n\
         [packages]\nsix = \"==1.17.0\"\nurllib3 = \">=2,<3\"\npackaging = \"*\"\n\
         tomli = {version = \"*\", markers = \"python_version < '3.11'\"}\n\n\
         [dev-packages]\niniconfig = \"*\"\n",
    )
    .unwrap();
    let sh = |line: &str| shell(&pipenv, &dir, &home, line);
    cached_lock(
        "pipenv==2026.10.3",
        &dir,
        &["Pipfile"],
        "Pipfile.lock",
        || sh("pipenv lock >/dev/null 2>&1"),
    )
    .unwrap();
    sh("pipenv sync --dev >/dev/null 2>&1").unwrap();
    let env_dir = sh("pipenv --venv 2>/dev/null").unwrap();
    let venv_py = Path::new(env_dir.trim()).join("bin/python");
    assert!(
        venv_py.starts_with(home.join(".local/share/virtualenvs")),
        "{}",
        venv_py.display()
    );
    let (code, clean) = check(&dir, &home);
    assert_eq!(lock_findings(&clean), vec![], "a synced project is quiet");
    assert_eq!(code, 0, "{}", clean["findings"]);
    let row = clean["inventory"][0]["text"].as_str().unwrap();
    assert!(
        row.contains(env_dir.trim()) && row.contains("pipenv run"),
        "{row}"
    );
    let l = &clean["snapshot"]["locks"][0];
    assert_eq!(l["format"], "pipfile", "{l}");
    assert_eq!(l["python"], venv_py.display().to_string(), "{l}");
    assert_eq!(l["sync_command"], "pipenv sync && pipenv clean");
    assert_eq!(l["unlocked_count"], 0, "iniconfig is a locked dev package");

    drift_by_hand(&|args: &[&str]| {
        let mut c = pypi::pip(&venv_py);
        c.args(args);
        c
    });
    let (_, v) = check(&dir, &home);
    let lock = dir.join("Pipfile.lock");
    assert_drifted(
        &v,
        &lock,
        &|name, _| pipfile_line(&lock, name),
        &|name, kind| {
            if kind == "source" {
                format!("pipenv run python -m pip uninstall -y {name} && pipenv sync")
            } else {
                "pipenv sync && pipenv clean".into()
            }
        },
    );
    let cmds = printed_commands(&v);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    for cmd in &cmds {
        sh(cmd).unwrap();
    }
    let (code, resynced) = check(&dir, &home);
    assert_eq!(lock_findings(&resynced), vec![], "after {cmds:?}");
    assert_eq!(code, 0);
}
