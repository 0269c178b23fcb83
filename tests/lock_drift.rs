//! Lock-file drift end to end, on projects locked and synced by the real tools from PyPI (uv,
//! Poetry, pip-tools), drifted by hand the way people do (`uv pip install six==1.15.0`,
//! `pip install` into the project's venv, a local wheel, an uninstall, an edit of
//! pyproject.toml), each rule's firing case with its quiet twin: the freshly synced project.
//! `check` runs with a bare environment (no `VIRTUAL_ENV`): the job's interpreter must be the
//! project's own environment, as `uv run`/`poetry run` would use.

use crate::common::{cli, pypi};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const DEPS: &str = r#"dependencies = [
    "six==1.17.0",
    "urllib3>=2,<3",
    "packaging",
    "tomli>=2; python_version < '3.11'",
]"#;

/// A tool's executable from its cached venv (`uv`, `poetry`, `pip-compile`).
pub(crate) fn tool(req: &str, exe: &str) -> Option<PathBuf> {
    let venv = pypi::need(req, pypi::cached_venv(&[req]))?;
    Some(venv.join("bin").join(exe))
}

/// `check --project DIR --no-load --format json` with a bare environment.
pub(crate) fn check(project: &Path, home: &Path) -> (i32, Value) {
    let mut c = cli::bare();
    c.env("HOME", home).current_dir(project).args([
        "check",
        "--project",
        ".",
        "--no-load",
        "--format",
        "json",
    ]);
    let (code, out, err) = cli::output(&mut c);
    assert!(code == 0 || code == 1, "exit {code}: {err}");
    (code, serde_json::from_str(&out).expect("check JSON"))
}

/// `(rule, message)` of the lock findings, sorted.
pub(crate) fn lock_findings(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap_or("").starts_with("lock-"))
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

pub(crate) fn run(c: &mut Command) -> Option<String> {
    pypi::need("a packaging tool", pypi::run(c))
}

/// The locked version line of `name` in a `[[package]]`-style TOML lock.
pub(crate) fn pinned_line(lock: &Path, name: &str, version: &str) -> usize {
    let text = fs::read_to_string(lock).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .windows(2)
        .position(|w| {
            w[0] == format!("name = \"{name}\"") && w[1] == format!("version = \"{version}\"")
        })
        .expect("pinned");
    at + 2
}

fn uv_project(dir: &Path) {
    fs::create_dir_all(dir.join("src/demo")).unwrap();
    fs::write(dir.join("src/demo/__init__.py"), "").unwrap();
    fs::write(
        dir.join("pyproject.toml"),
        format!(
            "[project]\nname = \"demo\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n{DEPS}\n\n\
             [dependency-groups]\ndev = [\"iniconfig\"]\n\n[build-system]\nrequires = [\"hatchling\"]\n\
             build-backend = \"hatchling.build\"\n"
        ),
    )
    .unwrap();
}

fn uv(uv: &Path, dir: &Path) -> Command {
    let mut c = Command::new(uv);
    c.current_dir(dir).env_remove("VIRTUAL_ENV").arg("-q");
    c
}

/// The issue's case: `uv lock && uv sync` is quiet and names `.venv` as the job's interpreter;
/// `uv pip install six==1.15.0 urllib3==1.26.20` is two version drifts with the line of each
/// pin in uv.lock and `uv sync`; a wheel installed from a path, an uninstall, an unlocked
/// package and an edited pyproject.toml fire their rules.
#[test]
fn uv_project_synced_then_drifted() {
    let Some(uvx) = tool("uv==0.13.9", "uv") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("proj");
    uv_project(&dir);
    let Some(_) = run(uv(&uvx, &dir).arg("lock")) else {
        return;
    };
    run(uv(&uvx, &dir).arg("sync")).unwrap();
    let lock = dir.join("uv.lock");

    let (code, clean) = check(&dir, t.path());
    assert_eq!(lock_findings(&clean), vec![], "a synced project is quiet");
    assert_eq!(code, 0, "{}", clean["findings"]);
    let python = &clean["inventory"][0];
    let text = python["text"].as_str().unwrap();
    assert!(
        text.contains("/proj/.venv/bin/python") && text.contains("uv run"),
        "{python}"
    );
    let snap = &clean["snapshot"];
    let l = &snap["locks"][0];
    assert_eq!(l["format"], "uv");
    assert_eq!(l["compared"], true);
    assert_eq!(l["packages"], 5, "{l}");
    assert_eq!(l["sync_command"], "uv sync");
    assert_eq!(l["digest"].as_str().unwrap().len(), 64);

    run(uv(&uvx, &dir).args(["pip", "install", "six==1.15.0", "urllib3==1.26.20"])).unwrap();
    let (_, drifted) = check(&dir, t.path());
    let lk = lock.display().to_string();
    let venv_py = format!("{}/.venv/bin/python", dir.display());
    assert_eq!(
        lock_findings(&drifted),
        vec![
            (
                "lock-version-drift".to_string(),
                format!(
                    "{venv_py} has six 1.15.0; {lk}:{} pins 1.17.0.",
                    pinned_line(&lock, "six", "1.17.0")
                )
            ),
            (
                "lock-version-drift".to_string(),
                format!(
                    "{venv_py} has urllib3 1.26.20; {lk}:{} pins 2.8.0.",
                    pinned_line(&lock, "urllib3", "2.8.0")
                )
            ),
        ]
    );
    let fix = drifted["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "lock-version-drift")
        .unwrap()["fix"]["text"]
        .clone();
    assert!(fix.as_str().unwrap().contains("`uv sync`"), "{fix}");

    // Back in sync: quiet again. Then a local wheel of the locked version (another source), an
    // uninstall, and a package the lock lacks.
    run(uv(&uvx, &dir).arg("sync")).unwrap();
    let wheels = t.path().join("wheels");
    let pip_py = pypi::cached_venv(&["uv==0.13.9"])
        .unwrap()
        .join("bin/python");
    run(pypi::pip(&pip_py)
        .args(["download", "--no-deps", "six==1.17.0", "-d"])
        .arg(&wheels))
    .unwrap();
    let wheel = fs::read_dir(&wheels)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    run(uv(&uvx, &dir)
        .args(["pip", "install", "--reinstall"])
        .arg(&wheel))
    .unwrap();
    run(uv(&uvx, &dir).args(["pip", "uninstall", "iniconfig"])).unwrap();
    run(uv(&uvx, &dir).args(["pip", "install", "idna"])).unwrap();
    let (_, v) = check(&dir, t.path());
    let rules: Vec<String> = lock_findings(&v).into_iter().map(|(r, _)| r).collect();
    assert_eq!(
        rules,
        [
            "lock-package-not-installed",
            "lock-source-drift",
            "lock-unlocked-packages"
        ],
        "{:?}",
        lock_findings(&v)
    );
    let msgs = lock_findings(&v);
    assert!(
        msgs[1].1.contains(&format!("path {}", wheel.display())),
        "{msgs:?}"
    );
    assert!(msgs[2].1.contains("idna"), "{msgs:?}");

    // A dependency added to pyproject.toml and not locked: the lock is stale.
    let py = fs::read_to_string(dir.join("pyproject.toml")).unwrap();
    fs::write(
        dir.join("pyproject.toml"),
        py.replace("\"packaging\",", "\"packaging\",\n    \"idna\","),
    )
    .unwrap();
    let (_, v) = check(&dir, t.path());
    let stale: Vec<_> = lock_findings(&v)
        .into_iter()
        .filter(|(r, _)| r == "lock-stale")
        .collect();
    assert_eq!(stale.len(), 1, "{:?}", lock_findings(&v));
    assert!(stale[0].1.contains("`idna`"), "{stale:?}");
    // uv agrees that the lock is stale.
    assert!(uv(&uvx, &dir)
        .args(["lock", "--check"])
        .output()
        .map(|o| !o.status.success())
        .unwrap());
}

/// Poetry: `poetry lock && poetry install` into the in-project `.venv`, then `pip install
/// six==1.15.0` there: version drift naming poetry.lock's line and `poetry install --sync`.
#[test]
fn poetry_project_synced_then_drifted() {
    let Some(poetry) = tool("poetry==2.5.1", "poetry") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("proj");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("pyproject.toml"),
        format!(
            "[project]\nname = \"demo\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n{DEPS}\n\n\
             [tool.poetry]\npackage-mode = false\n\n[tool.poetry.group.dev.dependencies]\niniconfig = \"*\"\n\n\
             [[tool.poetry.source]]\nname = \"pypi-simple\"\nurl = \"https://pypi.org/simple/\"\npriority = \"primary\"\n"
        ),
    )
    .unwrap();
    let poetry_cmd = |args: &[&str]| {
        let mut c = Command::new(&poetry);
        c.current_dir(&dir)
            .env_remove("VIRTUAL_ENV")
            .env("POETRY_VIRTUALENVS_IN_PROJECT", "true")
            .env("POETRY_CACHE_DIR", t.path().join("poetry-cache"))
            .args(args);
        c
    };
    let Some(_) = run(&mut poetry_cmd(&["lock", "-q"])) else {
        return;
    };
    run(&mut poetry_cmd(&["install", "-q", "--no-root"])).unwrap();
    let (_, clean) = check(&dir, t.path());
    assert_eq!(lock_findings(&clean), vec![], "a synced project is quiet");
    let python = clean["inventory"][0]["text"].as_str().unwrap().to_string();
    assert!(python.contains("/proj/.venv/bin/python"), "{python}");

    let venv_py = dir.join(".venv/bin/python");
    run(pypi::pip(&venv_py).args(["install", "six==1.15.0"])).unwrap();
    let (_, v) = check(&dir, t.path());
    let lock = dir.join("poetry.lock");
    assert_eq!(
        lock_findings(&v),
        vec![(
            "lock-version-drift".to_string(),
            format!(
                "{} has six 1.15.0; {}:{} pins 1.17.0.",
                venv_py.display(),
                lock.display(),
                pinned_line(&lock, "six", "1.17.0")
            )
        )]
    );
    assert_eq!(
        v["snapshot"]["locks"][0]["sync_command"],
        "poetry install --sync"
    );
}

/// pip-tools: `pip-compile --generate-hashes` then `pip-sync` into the project's `.venv`; a
/// hand `pip install six==1.15.0` is drift with the requirements line and `pip-sync`.
#[test]
fn pip_tools_project_synced_then_drifted() {
    let Some(compile) = tool("pip-tools==7.6.2", "pip-compile") else {
        return;
    };
    let sync = compile.with_file_name("pip-sync");
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("proj");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("requirements.in"),
        "six==1.17.0\nurllib3>=2,<3\npackaging\ntomli>=2; python_version < \"3.11\"\n",
    )
    .unwrap();
    let Some(_) = run(Command::new(&compile).current_dir(&dir).args([
        "-q",
        "--generate-hashes",
        "-o",
        "requirements.txt",
        "requirements.in",
    ])) else {
        return;
    };
    run(Command::new("python3")
        .args(["-m", "venv"])
        .arg(dir.join(".venv")))
    .unwrap();
    let venv_py = dir.join(".venv/bin/python");
    run(Command::new(&sync)
        .current_dir(&dir)
        .arg("--python-executable")
        .arg(&venv_py)
        .arg("requirements.txt"))
    .unwrap();
    let (_, clean) = check(&dir, t.path());
    assert_eq!(lock_findings(&clean), vec![], "a synced project is quiet");
    run(pypi::pip(&venv_py).args(["install", "six==1.15.0"])).unwrap();
    let (_, v) = check(&dir, t.path());
    let req = dir.join("requirements.txt");
    let text = fs::read_to_string(&req).unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("six==1.17.0"))
        .unwrap()
        + 1;
    assert_eq!(
        lock_findings(&v),
        vec![(
            "lock-version-drift".to_string(),
            format!(
                "{} has six 1.15.0; {}:{line} pins 1.17.0.",
                venv_py.display(),
                req.display()
            )
        )]
    );
    assert_eq!(
        v["snapshot"]["locks"][0]["sync_command"],
        "pip-sync requirements.txt"
    );
}
