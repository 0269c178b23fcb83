//! `envdoctor snapshot` end to end on hostile input and for determinism.
//!
//! - A venv whose site-packages holds a FIFO named `METADATA` (plus a symlink loop, a broken
//!   link, a non-UTF-8 directory name and binary garbage): `snapshot --deadline 2` completes,
//!   exits 0, names each bad file in `probe_errors`, and still lists the good distribution.
//! - The same input twice gives the same bytes apart from `collected_at`.

use assert_cmd::Command;
use envdoctor::Snapshot;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn mkfifo(p: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", p.display());
}

fn dist(site: &Path, dir: &OsStr, name: &str, version: &str) {
    let d = site.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("METADATA"),
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n"),
    )
    .unwrap();
}

/// A venv made by `python3 -m venv` (by hand when python3 is missing: pyvenv.cfg beside bin/).
fn venv(dir: &Path) -> PathBuf {
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !made {
        eprintln!("python3 -m venv unavailable; laying the venv out by hand");
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(dir.join("lib/python3.11/site-packages")).unwrap();
        std::fs::write(dir.join("bin/python"), "#!/bin/sh\nexit 99\n").unwrap();
        std::fs::write(
            dir.join("pyvenv.cfg"),
            "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n",
        )
        .unwrap();
    }
    let lib = dir.join("lib");
    let pyxy = std::fs::read_dir(&lib)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .expect("lib/python3.X")
        .file_name();
    lib.join(pyxy).join("site-packages")
}

#[test]
fn fifo_metadata_and_other_bad_files_do_not_hang_or_fail_the_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("venv");
    let site = venv(&v);
    dist(&site, OsStr::new("good-1.0.dist-info"), "good", "1.0");
    // A FIFO named METADATA: open(2) on it would block forever.
    let evil = site.join("evil-1.0.dist-info");
    std::fs::create_dir_all(&evil).unwrap();
    mkfifo(&evil.join("METADATA"));
    // A METADATA that is a symlink loop, a broken .dist-info link, binary garbage, a name
    // that is not UTF-8.
    let looped = site.join("looped-1.0.dist-info");
    std::fs::create_dir_all(&looped).unwrap();
    symlink("METADATA", looped.join("METADATA")).unwrap();
    symlink("/nonexistent/x", site.join("gone-1.0.dist-info")).unwrap();
    let garbage = site.join("garbage-1.0.dist-info");
    std::fs::create_dir_all(&garbage).unwrap();
    std::fs::write(
        garbage.join("METADATA"),
        [0u8, 159, 146, 150, 255, 10, 0, 1],
    )
    .unwrap();
    dist(
        &site,
        OsStr::from_bytes(b"caf\xe9-2.0.dist-info"),
        "cafe",
        "2.0",
    );

    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .env_clear()
        .env("PATH", v.join("bin"))
        .env("HOME", tmp.path())
        .args(["snapshot", "--deadline", "2"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap = Snapshot::from_json(&String::from_utf8(out.stdout).unwrap(), "stdout").unwrap();
    let py = snap
        .pythons
        .iter()
        .find(|p| Path::new(&p.path) == v.join("bin/python"))
        .expect("the venv's interpreter");
    let names: Vec<&str> = py.packages.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"good"), "{names:?}");
    assert!(names.contains(&"cafe"), "{names:?}");
    let errs: Vec<(String, String)> = snap
        .probe_errors
        .iter()
        .map(|e| (e.path.clone().unwrap_or_default(), e.message.clone()))
        .collect();
    let named = |suffix: &str, word: &str| {
        errs.iter()
            .any(|(p, m)| p.ends_with(suffix) && m.contains(word))
    };
    assert!(named("evil-1.0.dist-info/METADATA", "FIFO"), "{errs:#?}");
    assert!(
        named("looped-1.0.dist-info/METADATA", "symbolic links"),
        "{errs:#?}"
    );
    assert!(
        named("gone-1.0.dist-info", "broken symbolic link"),
        "{errs:#?}"
    );
    assert!(
        named("garbage-1.0.dist-info/METADATA", "core-metadata"),
        "{errs:#?}"
    );
    assert!(named("-2.0.dist-info", "UTF-8"), "{errs:#?}");
    assert!(
        !errs.iter().any(|(_, m)| m.contains("deadline")),
        "nothing timed out: {errs:#?}"
    );
}

fn snapshot_bytes(root: &Path, vars: &[(&str, &str)]) -> String {
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear().args(["snapshot", "--root"]).arg(root);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

fn without_collected_at(s: &str) -> String {
    s.lines()
        .filter(|l| !l.trim_start().starts_with("\"collected_at\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_same_machine_gives_the_same_bytes() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/machines");
    for (machine, path) in [
        ("site-debian", "/usr/bin"),
        (
            "site-venv-system",
            "/home/u/proj/.venv/bin:/home/u/.pyenv/versions/3.10.4/bin",
        ),
        ("site-conda", "/opt/conda/bin"),
        ("site-venv-isolated", "/home/u/venv/bin"),
    ] {
        let vars = [("PATH", path), ("HOME", "/home/u")];
        let a = snapshot_bytes(&fixtures.join(machine), &vars);
        let b = snapshot_bytes(&fixtures.join(machine), &vars);
        assert!(a.contains("\"collected_at\""));
        assert!(a.contains("\"packages\""), "{machine}: {a}");
        assert_eq!(
            without_collected_at(&a),
            without_collected_at(&b),
            "{machine}"
        );
    }
}
