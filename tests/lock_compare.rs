//! `envdoctor compare LOCK SNAPSHOT` for each PyPI lock format, on the lock files the real
//! tools wrote (fixtures/locks/, see generate.sh): a snapshot of a project venv is compared
//! with the lock as two machines are, and the drift shows as package changes. The conda
//! formats (pixi.lock, conda-lock.yml, environment.yml) are in `lock_conda`.

use crate::common::machine::{repo, Machine};
use crate::lock_conda::{compare, snapshot};

/// A project at /proj with the fixture files of `dir` and a .venv (3.11) holding `packages`.
fn project(dir: &str, packages: &[(&str, &str)]) -> Machine {
    let mut m = Machine::new();
    m.venv("3.11", "/proj/.venv", packages);
    for f in std::fs::read_dir(repo("fixtures/locks").join(dir)).unwrap() {
        let f = f.unwrap();
        let name = f.file_name().to_string_lossy().into_owned();
        m.write(
            &format!("/proj/{name}"),
            &std::fs::read_to_string(f.path()).unwrap(),
        );
    }
    m
}

#[test]
fn compare_each_pypi_lock_format_with_a_snapshot() {
    let t = tempfile::tempdir().unwrap();
    let snap = t.path().join("s.json");
    for (dir, file) in [
        ("uv", "uv.lock"),
        ("uv", "pylock.toml"),
        ("poetry", "poetry.lock"),
        ("pdm", "pdm.lock"),
        ("pipenv", "Pipfile.lock"),
        ("pip-tools", "requirements.txt"),
    ] {
        let m = project(dir, &[("six", "1.15.0")]);
        snapshot(&m, &snap);
        let (code, changes) = compare(&m.path(&format!("/proj/{file}")), &snap);
        assert_eq!(code, 1, "{file}: {changes:?}");
        assert!(
            changes.contains(&"six 1.17.0 1.15.0".to_string()),
            "{file}: {changes:?}"
        );
    }
    // The synced twin: exactly what uv.lock locks for 3.11 (the editable project too).
    let m = project(
        "uv",
        &[
            ("demo", "0.1.0"),
            ("iniconfig", "2.3.1"),
            ("packaging", "26.4"),
            ("six", "1.17.0"),
            ("urllib3", "2.8.0"),
        ],
    );
    snapshot(&m, &snap);
    assert_eq!(compare(&m.path("/proj/uv.lock"), &snap), (0, vec![]));
    // A lock against a lock, or a broken lock: exit 2 with the file named.
    let o = assert_cmd::Command::cargo_bin("envdoctor")
        .unwrap()
        .env_clear()
        .arg("compare")
        .arg(m.path("/proj/uv.lock"))
        .arg(m.path("/proj/pylock.toml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    m.write("/proj/uv.lock", "version = [");
    let o = assert_cmd::Command::cargo_bin("envdoctor")
        .unwrap()
        .env_clear()
        .arg("compare")
        .arg(m.path("/proj/uv.lock"))
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("uv.lock"));
}
