//! The field reports (`../shared/seeds/`), reproduced as fake machines and run through
//! `envdoctor check --root`: each must print the right finding with its evidence and exit 1, and
//! its healthy twin must be quiet (no finding of that rule, exit 0).
//!
//! A machine is a directory tree built here: stand-in interpreters (shell scripts that would
//! leave a marker if run: nothing is ever executed), venvs with `pyvenv.cfg`, `.dist-info`
//! directories, and the real checkpoint files under `fixtures/checkpoints/` (written by the real
//! frameworks; see `fixtures/checkpoints/make_fixtures.py`).

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A fake machine under a temp dir.
struct Machine {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Machine {
    fn new() -> Machine {
        Machine {
            dir: tempfile::tempdir().unwrap(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, machine_path: &str) -> PathBuf {
        self.root().join(machine_path.trim_start_matches('/'))
    }

    fn write(&self, machine_path: &str, text: &str) -> &Self {
        let p = self.path(machine_path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn env(&mut self, k: &str, v: &str) -> &mut Self {
        self.env.retain(|(key, _)| key != k);
        self.env.push((k.into(), v.into()));
        self
    }

    /// A base interpreter `/usr/bin/pythonX.Y` and a venv at `venv` using it, active
    /// (VIRTUAL_ENV, first on PATH), with `packages` (name, version) installed.
    fn venv(&mut self, xy: &str, venv: &str, packages: &[(&str, &str)]) -> &mut Self {
        let marker = self.path("/executed");
        self.write(
            &format!("/usr/bin/python{xy}"),
            &format!("#!/bin/sh\ntouch {}\n", marker.display()),
        );
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
        self.env("VIRTUAL_ENV", venv);
        self.env("PATH", &format!("{venv}/bin:/usr/bin:/bin"));
        self
    }

    /// Copy a real checkpoint file or directory from `fixtures/checkpoints/` to `to`.
    fn checkpoint(&self, fixture: &str, to: &str) -> &Self {
        copy_tree(&repo("fixtures/checkpoints").join(fixture), &self.path(to));
        self
    }

    /// `envdoctor check --root` with this machine's environment; (exit code, JSON report).
    fn check(&self, extra: &[&str]) -> (i32, Value) {
        let mut cmd = Command::cargo_bin("envdoctor").unwrap();
        cmd.env_clear()
            .args(["check", "--format", "json", "--no-load", "--root"])
            .arg(self.root())
            .args(extra);
        for (k, v) in &self.env {
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
            !self.path("/executed").exists(),
            "envdoctor executed a stand-in interpreter"
        );
        (out.status.code().unwrap_or(-1), report)
    }
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
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

fn findings_of<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

/// Assert `rule` fired (once or more) and return the first finding.
fn fired<'a>(report: &'a Value, rule: &str) -> &'a Value {
    let f = findings_of(report, rule);
    assert!(
        !f.is_empty(),
        "{rule} did not fire; findings: {:#?}",
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| &f["rule"])
            .collect::<Vec<_>>()
    );
    f[0]
}

fn evidence_has(finding: &Value, path_part: &str, value: &Value) -> bool {
    finding["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["path"].as_str().unwrap_or("").contains(path_part) && &e["value"] == value)
}

// Seed 001: InceptionV3 replaced by InceptionV4 in code, but the training directory still holds
// the V3 checkpoint that `checkpoint` names as latest: "Key InceptionV4/... not found".
#[test]
fn seed_001_latest_checkpoint_is_the_other_model() {
    let mut m = Machine::new();
    m.venv("3.6", "/opt/venv", &[("tensorflow-gpu", "1.12.0")]);
    m.checkpoint("mixed_families", "/data/train");
    let (code, report) = m.check(&["--checkpoint", "/data/train"]);
    assert_eq!(code, 1);
    let f = fired(&report, "ckpt-latest-other-family");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("InceptionV3") && msg.contains("InceptionV4"),
        "{msg}"
    );
    assert!(
        evidence_has(f, "tf_state.latest_is_other_family", &Value::Bool(true)),
        "{f:#}"
    );

    // Healthy twin: only the V4 checkpoint, named as latest.
    let twin = Machine::new();
    twin.checkpoint(
        "mixed_families/model.ckpt-200.index",
        "/data/train/model.ckpt-200.index",
    );
    twin.checkpoint(
        "mixed_families/model.ckpt-200.data-00000-of-00001",
        "/data/train/model.ckpt-200.data-00000-of-00001",
    );
    twin.write(
        "/data/train/checkpoint",
        "model_checkpoint_path: \"model.ckpt-200\"\nall_model_checkpoint_paths: \"model.ckpt-200\"\n",
    );
    let (code, report) = twin.check(&["--checkpoint", "/data/train"]);
    assert!(findings_of(&report, "ckpt-latest-other-family").is_empty());
    assert_eq!(code, 0, "{:#}", report["findings"]);
}

// Seed 003: a model trained with TF < 1.2 RNN cells (`lstm_cell/weights`, `.../biases`) restored
// on another machine whose TensorFlow names them `kernel`/`bias`.
#[test]
fn seed_003_pre_1_2_rnn_names_under_a_newer_tensorflow() {
    let mut m = Machine::new();
    m.venv("3.6", "/opt/venv", &[("tensorflow", "1.4.0")]);
    m.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (code, report) = m.check(&["--checkpoint", "/work/ckpt"]);
    assert_eq!(code, 1);
    let f = fired(&report, "ckpt-rnn-pre-tf12-names");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("tensorflow 1.4.0") && msg.contains("/opt/venv/bin/python"),
        "{msg}"
    );
    assert!(
        msg.contains("lstm_cell/weights") || msg.contains("weights"),
        "{msg}"
    );

    // Healthy twin: the TensorFlow that wrote it (1.1).
    let mut twin = Machine::new();
    twin.venv("3.6", "/opt/venv", &[("tensorflow", "1.1.0")]);
    twin.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (code, report) = twin.check(&["--checkpoint", "/work/ckpt"]);
    assert!(findings_of(&report, "ckpt-rnn-pre-tf12-names").is_empty());
    assert_eq!(code, 0, "{:#}", report["findings"]);
}

// Seed 000: a TF1 name-based checkpoint restored by TF 2's loader:
// "Key _CHECKPOINTABLE_OBJECT_GRAPH not found in checkpoint".
#[test]
fn seed_000_name_based_checkpoint_under_tensorflow_2() {
    let mut m = Machine::new();
    m.venv("3.8", "/opt/venv", &[("tensorflow", "2.4.1")]);
    m.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (_, report) = m.check(&["--checkpoint", "/work/ckpt"]);
    let f = fired(&report, "ckpt-tf1-name-based-with-tf2");
    assert!(f["message"].as_str().unwrap().contains("name-based"));

    let mut twin = Machine::new();
    twin.venv("3.8", "/opt/venv", &[("tensorflow", "2.4.1")]);
    twin.checkpoint("tf2_object_based", "/work/ckpt");
    let (_, report) = twin.check(&["--checkpoint", "/work/ckpt"]);
    assert!(findings_of(&report, "ckpt-tf1-name-based-with-tf2").is_empty());
}
