//! `envdoctor diagnose` on bad input (empty, binary, UTF-16, Latin-1, a missing file, a huge
//! stream), its text and Markdown output, "nothing matched", and `envdoctor run -- CMD` end to
//! end on failing Python scripts.

use crate::common::machine;

use crate::common::cli;
use machine::{repo, Machine};
use std::io::Write;

#[test]
fn an_empty_log_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("empty.log");
    std::fs::write(&p, "").unwrap();
    let out = cli::plain().arg("diagnose").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("empty.log") && err.contains("the log is empty"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn binary_utf16_and_missing_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // A real binary: the envdoctor executable itself.
    let bin = assert_cmd::cargo::cargo_bin("envdoctor");
    let utf16 = dir.path().join("utf16.log");
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend(
        std::fs::read_to_string(repo("fixtures/logs/torch_weights_only.log"))
            .unwrap()
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes()),
    );
    std::fs::write(&utf16, bytes).unwrap();
    let cases = [
        (bin.clone(), "not a text log"),
        (utf16.clone(), "UTF-16"),
        (dir.path().join("nope.log"), "cannot read log"),
        (dir.path().to_path_buf(), "is a directory"),
    ];
    for (path, want) in cases {
        let out = cli::plain().arg("diagnose").arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path:?}: {err}");
        assert!(err.contains(want), "{path:?}: {err}");
        assert!(
            err.contains(&*path.file_name().unwrap().to_string_lossy()),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_latin1_log_is_read_and_still_matched() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("latin1.log");
    let mut bytes = b"Entra\xeenement d\xe9marr\xe9\n".to_vec();
    bytes.extend(std::fs::read(repo("fixtures/logs/numpy2_with_tf215.log")).unwrap());
    std::fs::write(&p, bytes).unwrap();
    let m = Machine::new();
    let out = cli::plain()
        .args(["diagnose", "--format", "json", "--no-load", "--root"])
        .arg(m.root())
        .arg(&p)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r["diagnoses"][0]["rule"], "numpy2-with-numpy1-build",
        "{r:#}"
    );
    assert!(
        r["notes"][0].as_str().unwrap().contains("read as Latin-1"),
        "{r:#}"
    );
}

#[test]
fn stdin_text_and_markdown_and_nothing_matched() {
    let m = Machine::new();
    let log = std::fs::read(repo("fixtures/logs/torch_weights_only.log")).unwrap();
    let out = cli::plain()
        .env("ENVDOCTOR_WIDTH", "0")
        .args(["diagnose", "-", "--no-load", "--root"])
        .arg(m.root())
        .write_stdin(log.clone())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // No checkpoint inspected: plausible, and it says how to get the fact.
    assert!(
        text.contains("PLAUSIBLE  ckpt-torch-needs-weights-only-false"),
        "{text}"
    );
    assert!(text.contains("--checkpoint PATH"), "{text}");
    assert!(text.contains("Weights only load failed"), "{text}");
    assert_eq!(out.status.code(), Some(1));
    let out = cli::plain()
        .args(["diagnose", "--format", "markdown", "--no-load", "--root"])
        .arg(m.root())
        .write_stdin(log)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("## envdoctor diagnose"), "{md}");
    assert!(
        md.contains("### PLAUSIBLE: `ckpt-torch-needs-weights-only-false`"),
        "{md}"
    );
    // A real error no rule knows: the three nearest rules by text.
    let out = cli::plain()
        .args(["diagnose", "--format", "json", "-"])
        .write_stdin("Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'learning_rate'\n")
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["diagnoses"], serde_json::json!([]));
    assert_eq!(r["nearest"].as_array().unwrap().len(), 3, "{r:#}");
    assert_eq!(r["events"][0]["exception"], "KeyError", "{r:#}");
    assert_eq!(r["events"][0]["message"], "'learning_rate'", "{r:#}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
#[ignore = "streams 1 GiB (about 40 s with the debug build on this box); bench/diagnose.sh measures the release build"]
fn a_1_gib_log_is_streamed_with_bounded_memory() {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("envdoctor"))
        .args([
            "diagnose",
            "-",
            "--format",
            "json",
            "--no-load",
            "--root",
            "/nonexistent-is-not-probed",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let line = "Epoch 1/50 500/500 [==============================] - 12s 24ms/step - loss: 0.1234 - accuracy: 0.91\n".repeat(1000);
        let mut written = 0usize;
        while written < (1 << 30) {
            stdin.write_all(line.as_bytes()).unwrap();
            written += line.len();
        }
    });
    writer.join().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    // Peak resident memory of the child (ru_maxrss, KiB).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert!(ru.ru_maxrss < 64 * 1024, "peak RSS {} KiB", ru.ru_maxrss);
}

fn python_script(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("train.py");
    std::fs::write(&p, body).unwrap();
    p
}

#[test]
fn run_streams_the_output_and_diagnoses_a_failing_python_script_keeping_its_status() {
    let dir = tempfile::tempdir().unwrap();
    // A real Python failure: importing a module that is not installed.
    let script = python_script(
        dir.path(),
        "import sys\nprint('epoch 1 loss 0.5', flush=True)\nprint('warming up', file=sys.stderr, flush=True)\nimport tf_keras\n",
    );
    let m = Machine::new();
    let out = cli::plain()
        .args(["run", "--no-load", "--root"])
        .arg(m.root())
        .args(["--", "python3"])
        .arg(&script)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stdout, "epoch 1 loss 0.5\n",
        "the command's stdout passes unchanged"
    );
    assert!(stderr.starts_with("warming up\n"), "{stderr}");
    assert!(
        stderr.contains("ModuleNotFoundError: No module named 'tf_keras'"),
        "{stderr}"
    );
    assert!(stderr.contains("exited with status 1"), "{stderr}");
    assert!(
        stderr.contains("legacy-keras-requested-without-tf-keras"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(1));

    // Another status is kept as is; a success is not diagnosed.
    let script = python_script(
        dir.path(),
        "import sys\nprint('A module that was compiled using NumPy 1.x cannot be run in', file=sys.stderr)\nsys.exit(3)\n",
    );
    let out = cli::plain()
        .args(["run", "--no-load", "--root"])
        .arg(m.root())
        .args(["--", "python3"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("numpy2-with-numpy1-build"));
    let script = python_script(dir.path(), "print('ok')\n");
    let out = cli::plain()
        .args(["run", "--", "python3"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A command that does not exist: the shell's 127.
    let out = cli::plain()
        .args(["run", "--", "/nonexistent/cmd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn from_a_snapshot_taken_where_the_job_ran() {
    // The machine where the job ran: torch 2.6 and the checkpoint it failed to load.
    let mut m = Machine::new();
    m.active_venv("3.11", "/home/u/venv", &[("torch", "2.6.0")]);
    m.checkpoint("torch_custom_object.pt", "/home/u/last.pt");
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("node17.json");
    let mut cmd = cli::empty();
    cmd.args([
        "snapshot",
        "--no-load",
        "--checkpoint",
        "/home/u/last.pt",
        "--root",
    ])
    .arg(m.root())
    .arg("-o")
    .arg(&snap);
    for (k, v) in &m.env {
        cmd.env(k, v);
    }
    assert!(cmd.output().unwrap().status.success());
    // Diagnosed here, on another machine, with that machine's facts.
    let out = cli::plain()
        .args(["diagnose", "--format", "json", "--from"])
        .arg(&snap)
        .arg(repo("fixtures/logs/torch_weights_only.log"))
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r["diagnoses"][0]["rule"], "ckpt-torch-needs-weights-only-false",
        "{r:#}"
    );
    assert_eq!(r["diagnoses"][0]["verdict"], "confirmed", "{r:#}");
    assert!(r["facts_from"].as_str().unwrap().contains("node17.json"));
    assert_eq!(out.status.code(), Some(0));
    // A snapshot that is not one: trouble, naming the file.
    std::fs::write(&snap, "{\"not\": \"a snapshot\"").unwrap();
    let out = cli::plain()
        .args(["diagnose", "--from"])
        .arg(&snap)
        .arg(repo("fixtures/logs/torch_weights_only.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("node17.json"));
}
