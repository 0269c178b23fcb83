//! Test helper: a fake machine under a temp dir, probed with `envdoctor check --root`.
//!
//! Stand-in interpreters are shell scripts that would leave a marker file if run; `check`
//! asserts the marker never appears (envdoctor reads interpreters, it never executes them).
//! `use crate::common::machine;`
#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A path inside the repository.
pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A distribution's dist-info under `site`: METADATA (`requires` as Requires-Dist) and a RECORD
/// listing `files`.
pub fn dist(m: &Machine, site: &str, name: &str, version: &str, requires: &[&str], files: &[&str]) {
    let di = format!("{site}/{}-{version}.dist-info", name.replace('-', "_"));
    let mut meta = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    for r in requires {
        meta.push_str(&format!("Requires-Dist: {r}\n"));
    }
    m.write(&format!("{di}/METADATA"), &meta);
    let record: String = files.iter().map(|f| format!("{f},,\n")).collect();
    m.write(&format!("{di}/RECORD"), &record);
}

/// A fake machine: a directory that plays `/`, and the environment envdoctor runs with.
pub struct Machine {
    pub dir: tempfile::TempDir,
    pub env: Vec<(String, String)>,
}

impl Machine {
    /// An empty machine with `PATH=/usr/bin:/bin`.
    pub fn new() -> Machine {
        Machine {
            dir: tempfile::tempdir().unwrap(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        }
    }

    /// The host directory that plays `/`.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The host path of a machine path.
    pub fn path(&self, machine_path: &str) -> PathBuf {
        self.root().join(machine_path.trim_start_matches('/'))
    }

    /// Write a file (parents made).
    pub fn write(&self, machine_path: &str, text: &str) -> &Self {
        let p = self.path(machine_path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    /// Set an environment variable.
    pub fn env(&mut self, k: &str, v: &str) -> &mut Self {
        self.env.retain(|(key, _)| key != k);
        self.env.push((k.into(), v.into()));
        self
    }

    /// A venv at `venv` on base `/usr/bin/pythonX.Y` with `packages` (name, version); nothing
    /// is put on PATH.
    pub fn venv(&mut self, xy: &str, venv: &str, packages: &[(&str, &str)]) -> &mut Self {
        let marker = self.path("/executed");
        self.write(
            &format!("/usr/bin/python{xy}"),
            &format!("#!/bin/sh\ntouch {}\n", marker.display()),
        );
        // Executable, so that PATH lookup finds it (it is still never run).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            self.path(&format!("/usr/bin/python{xy}")),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        self.write(&format!("/usr/lib/python{xy}/os.py"), "");
        self.write(&format!("/usr/lib/python{xy}/lib-dynload/.keep"), "");
        self.write(
            &format!("{venv}/pyvenv.cfg"),
            &format!(
                "home = /usr/bin\ninclude-system-site-packages = false\nversion = {xy}.9\nexecutable = /usr/bin/python{xy}\n"
            ),
        );
        let bin = self.path(&format!("{venv}/bin"));
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(format!("/usr/bin/python{xy}"), bin.join("python")).unwrap();
        for (name, version) in packages {
            self.write(
                &format!(
                    "{venv}/lib/python{xy}/site-packages/{}-{version}.dist-info/METADATA",
                    name.replace('-', "_")
                ),
                &format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
            );
        }
        self
    }

    /// Like [`Machine::venv`], and activated: `VIRTUAL_ENV` set and its `bin` first on PATH.
    pub fn active_venv(&mut self, xy: &str, venv: &str, packages: &[(&str, &str)]) -> &mut Self {
        self.venv(xy, venv, packages);
        self.env("VIRTUAL_ENV", venv);
        self.env("PATH", &format!("{venv}/bin:/usr/bin:/bin"));
        self
    }

    /// Copy a real checkpoint file or directory from `fixtures/checkpoints/` to `to`.
    pub fn checkpoint(&self, fixture: &str, to: &str) -> &Self {
        copy_tree(&repo("fixtures/checkpoints").join(fixture), &self.path(to));
        self
    }

    /// `envdoctor check --format json --no-load --root` (exit code, report).
    pub fn check(&self, extra: &[&str]) -> (i32, Value) {
        check_root(self.root(), &self.env, extra)
    }
}

/// Copy a file or a directory tree; symbolic links are copied as links.
pub fn copy_tree(from: &Path, to: &Path) {
    let meta = std::fs::symlink_metadata(from).unwrap();
    if meta.file_type().is_symlink() {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(std::fs::read_link(from).unwrap(), to).unwrap();
    } else if meta.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
}

/// `envdoctor check --format json --no-load --root ROOT` with exactly `env`: (exit code, report).
pub fn check_root(root: &Path, env: &[(String, String)], extra: &[&str]) -> (i32, Value) {
    json_on_root(&["check".as_ref()], root, env, extra)
}

/// `envdoctor COMMAND... --format json --no-load --root ROOT EXTRA...` with exactly `env`:
/// (exit code, the JSON on stdout). Fails when stdout is not JSON or when a stand-in
/// interpreter under the root was executed.
pub fn json_on_root(
    command: &[&std::ffi::OsStr],
    root: &Path,
    env: &[(String, String)],
    extra: &[&str],
) -> (i32, Value) {
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear()
        .args(command)
        .args(["--format", "json", "--no-load", "--root"])
        .arg(root)
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        !root.join("executed").exists(),
        "envdoctor executed a stand-in interpreter"
    );
    (
        out.status.code().unwrap_or(-1),
        super::contract::auto(report),
    )
}

/// The findings of one rule.
pub fn findings_of<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

/// Assert `rule` fired and return its first finding.
pub fn fired<'a>(report: &'a Value, rule: &str) -> &'a Value {
    let f = findings_of(report, rule);
    assert!(
        !f.is_empty(),
        "{rule} did not fire; findings: {:#}",
        report["findings"]
    );
    f[0]
}

/// Whether a finding's evidence has a path containing `path_part` with this value.
pub fn evidence_has(finding: &Value, path_part: &str, value: &Value) -> bool {
    finding["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["path"].as_str().unwrap_or("").contains(path_part) && &e["value"] == value)
}

/// A Debian-style interpreter in the machine under `root`: a stand-in `/usr/bin/pythonX.Y`
/// (never run: it would leave `root/executed`), its stdlib landmark, `/usr/lib/python3/
/// dist-packages` (which puts `/usr/local/lib/pythonX.Y/dist-packages` on sys.path) and the
/// distributions `packages` (name, version) installed there. Returns that site directory
/// (a host path), for the framework files a test adds.
pub fn debian_python(root: &Path, xy: &str, packages: &[(&str, &str)]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let exe = root.join(format!("usr/bin/python{xy}"));
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::write(
        &exe,
        format!("#!/bin/sh\ntouch {}\n", root.join("executed").display()),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(root.join(format!("usr/lib/python{xy}/lib-dynload"))).unwrap();
    std::fs::write(root.join(format!("usr/lib/python{xy}/os.py")), "").unwrap();
    std::fs::create_dir_all(root.join("usr/lib/python3/dist-packages")).unwrap();
    let site = root.join(format!("usr/local/lib/python{xy}/dist-packages"));
    for (name, version) in packages {
        let dist = site.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(
            dist.join("METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        )
        .unwrap();
        std::fs::write(dist.join("RECORD"), "").unwrap();
    }
    site
}
