//! `sys.platlibdir = lib64` (Fedora, RHEL, SUSE builds of CPython): the standard library and
//! the site directories envdoctor works out from files, against what a real CPython puts on
//! `sys.path` and what `importlib.metadata` finds there.
//!
//! The interpreter is built like a RHEL python: a prefix with `bin/python3.X` (a copy of a real
//! upstream CPython ≥ 3.9 from this host), the standard library under `lib64/python3.X`, its
//! `_sysconfigdata_*.py` saying `'PLATLIBDIR': 'lib64'` (what `--with-platlibdir=lib64` writes),
//! arch packages in `lib64/python3.X/site-packages`, noarch ones in `lib/python3.X/site-packages`.
//! The real interpreter is run with `PYTHONPLATLIBDIR=lib64`, which sets `sys.platlibdir` as the
//! build option does; envdoctor is not given that variable, so it must read the layout from the
//! sysconfig file. Two venvs made by that interpreter's own `venv` module: one as made (`lib64 ->
//! lib`), one whose `lib64` is a real directory holding the platlib wheel (pytorch#165812).
//! Skips, saying why, where no upstream CPython ≥ 3.9 is at hand.

use crate::common::fw;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A host CPython ≥ 3.9 with upstream `site.py`: (its executable, its stdlib dir, "3.X").
fn upstream_cpython() -> Result<(PathBuf, PathBuf, String), String> {
    let code = "import sys, site, inspect, sysconfig\n\
                print(sys._base_executable)\n\
                print(sysconfig.get_paths()['stdlib'])\n\
                print('%d.%d' % sys.version_info[:2])\n\
                print(sys.version_info >= (3, 9) and 'dist-packages' not in inspect.getsource(site))";
    let out = Command::new("python3")
        .args(["-c", code])
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    if !out.status.success() || lines.len() != 4 {
        return Err(format!("python3 failed: {text}"));
    }
    if lines[3] != "True" {
        return Err("python3 is older than 3.9 or has a distribution-patched site.py".into());
    }
    Ok((lines[0].into(), lines[1].into(), lines[2].into()))
}

/// A dist-info (and its module) in `site`.
fn dist(site: &Path, name: &str, version: &str) {
    let di = site.join(format!("{name}-{version}.dist-info"));
    std::fs::create_dir_all(&di).unwrap();
    std::fs::write(
        di.join("METADATA"),
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
    )
    .unwrap();
    std::fs::write(di.join("RECORD"), format!("{name}.py,,\n")).unwrap();
    std::fs::write(site.join(format!("{name}.py")), "").unwrap();
}

/// The RHEL-like prefix under `dir`: its executable.
fn rhel_prefix(dir: &Path, exe: &Path, stdlib: &Path, xy: &str) -> Result<PathBuf, String> {
    let bin = dir.join("bin");
    let lib64 = dir.join(format!("lib64/python{xy}"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(lib64.join("site-packages")).unwrap();
    std::fs::create_dir_all(dir.join(format!("lib/python{xy}/site-packages"))).unwrap();
    let py = bin.join(format!("python{xy}"));
    std::fs::copy(exe, &py).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(format!("python{xy}"), bin.join("python3")).unwrap();
    for e in std::fs::read_dir(stdlib).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        let n = name.to_string_lossy();
        if n == "site-packages" {
            continue;
        }
        if n.starts_with("_sysconfigdata_") && n.ends_with(".py") {
            // The real file, as a --with-platlibdir=lib64 build writes it.
            let text = std::fs::read_to_string(e.path()).unwrap();
            assert!(
                text.contains("'PLATLIBDIR': 'lib'"),
                "{}",
                e.path().display()
            );
            let text = text.replace("'PLATLIBDIR': 'lib'", "'PLATLIBDIR': 'lib64'");
            std::fs::write(lib64.join(&name), text).unwrap();
            continue;
        }
        std::os::unix::fs::symlink(e.path(), lib64.join(&name)).unwrap();
    }
    let probe = Command::new(&py)
        .args(["-c", "import sys; assert sys.platlibdir == 'lib64'"])
        .env("PYTHONPLATLIBDIR", "lib64")
        .output()
        .map_err(|e| e.to_string())?;
    if !probe.status.success() {
        return Err(format!(
            "the copied interpreter does not start: {}",
            String::from_utf8_lossy(&probe.stderr)
        ));
    }
    Ok(py)
}

/// What the real interpreter says: (sys.path without the script's entry and with a directory
/// reached a second time through a link dropped, {(dist name, real site dir)}).
fn oracle(py: &Path, home: &Path) -> (Vec<String>, BTreeSet<(String, PathBuf)>) {
    let code = "import sys, json, importlib.metadata as m\n\
                print(json.dumps({'path': sys.path[1:], 'dists': \
                [[d.metadata['Name'], str(d._path.parent)] for d in m.distributions()]}))";
    let out = Command::new(py)
        .args(["-s", "-c", code])
        .env_clear()
        .env("HOME", home)
        .env("PYTHONPLATLIBDIR", "lib64")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut seen = BTreeSet::new();
    let path = v["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .filter(|p| match std::fs::canonicalize(p) {
            Ok(real) => seen.insert(real),
            Err(_) => true,
        })
        .collect();
    let dists = v["dists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let dir = d[1].as_str().unwrap();
            let name = d[0].as_str().unwrap().to_string();
            (name, std::fs::canonicalize(dir).unwrap())
        })
        .collect();
    (path, dists)
}

/// envdoctor's view of the interpreter at `exe`: (sys_path, {(package, real location)}).
fn ours(snap: &Value, exe: &Path) -> (Vec<String>, BTreeSet<(String, PathBuf)>) {
    let py = snap["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == exe.to_str().unwrap())
        .unwrap_or_else(|| panic!("{} not probed: {snap}", exe.display()));
    let path = py["sys_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    let dists = py["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let loc = p["location"].as_str().unwrap();
            (
                p["name"].as_str().unwrap().to_string(),
                std::fs::canonicalize(loc).unwrap(),
            )
        })
        .collect();
    (path, dists)
}

#[test]
fn lib64_platlib_site_dirs_are_the_ones_cpython_uses() {
    let (exe, stdlib, xy) = match upstream_cpython() {
        Ok(found) => found,
        Err(why) => {
            eprintln!("SKIPPED: needs an upstream CPython >= 3.9 as python3: {why}");
            return;
        }
    };
    let t = tempfile::tempdir().unwrap();
    let prefix = t.path().join("usr");
    let py = match rhel_prefix(&prefix, &exe, &stdlib, &xy) {
        Ok(py) => py,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    dist(
        &prefix.join(format!("lib64/python{xy}/site-packages")),
        "archpkg",
        "1.0",
    );
    dist(
        &prefix.join(format!("lib/python{xy}/site-packages")),
        "noarchpkg",
        "2.0",
    );
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The two venvs, made by the interpreter's own venv module.
    let mut venvs = Vec::new();
    for name in ["linked", "split"] {
        let v = t.path().join(name);
        let made = Command::new(&py)
            .args(["-m", "venv", "--without-pip", "--system-site-packages"])
            .arg(&v)
            .env("PYTHONPLATLIBDIR", "lib64")
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        let lib64 = v.join("lib64");
        assert_eq!(std::fs::read_link(&lib64).unwrap(), Path::new("lib"));
        dist(
            &v.join(format!("lib/python{xy}/site-packages")),
            "purewheel",
            "3.0",
        );
        if name == "split" {
            // pytorch#165812: pip put the platlib wheel in a real lib64 directory.
            std::fs::remove_file(&lib64).unwrap();
            let plat = lib64.join(format!("python{xy}/site-packages"));
            std::fs::create_dir_all(&plat).unwrap();
            dist(&plat, "platwheel", "4.0");
        }
        venvs.push(v);
    }
    for v in &venvs {
        let (want_path, want_dists) = oracle(&v.join("bin/python"), &home);
        let path = format!(
            "{}:{}:/usr/bin:/bin",
            v.join("bin").display(),
            prefix.join("bin").display()
        );
        let snap = fw::snapshot(v, t.path(), &[("PATH", &path)]);
        let (path, dists) = ours(&snap, &v.join("bin/python"));
        assert_eq!(path, want_path, "{}", v.display());
        assert_eq!(dists, want_dists, "{}", v.display());
        let names: BTreeSet<&str> = dists.iter().map(|(n, _)| n.as_str()).collect();
        assert!(
            names.contains("archpkg") && names.contains("noarchpkg"),
            "{names:?}"
        );
        if v.ends_with("split") {
            assert!(names.contains("platwheel"), "{names:?}");
        }
        // The base interpreter itself (on PATH): its own sys.path and packages.
        let base = prefix.join("bin/python3");
        let (want_path, want_dists) = oracle(&base, &home);
        let (path, dists) = ours(&snap, &base);
        assert_eq!(path, want_path);
        assert_eq!(dists, want_dists);
    }
}
