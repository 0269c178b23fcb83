//! The command-line contract that every subcommand shares: exit codes for bad arguments, output
//! files, clean JSON on stdout, and a quiet closed pipe.

use crate::common::cli;
use std::process::Stdio;

#[test]
fn a_missing_root_is_exit_2_naming_it() {
    let out = cli::cmd()
        .args(["snapshot", "--root", "/definitely/not/here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/definitely/not/here"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_bad_deadline_is_exit_2() {
    let out = cli::cmd()
        .args(["snapshot", "--deadline", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // Not "0 is not ... between 0 and 3600": the bound that 0 breaks.
    assert!(
        err.contains("--deadline: must be more than 0 and at most 3600 seconds, not 0"),
        "{err}"
    );
    let out = cli::cmd()
        .args(["check", "--rule-budget", "5000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--rule-budget: must be more than 0 and at most 3600 seconds, not 5000"),
        "{err}"
    );
}

/// A mistyped rule id or parameter gets the nearest name, and the parameters are listed as
/// words, not Debug output.
#[test]
fn a_mistyped_rule_or_parameter_gets_a_did_you_mean() {
    let run = |args: &[&str]| {
        let out = cli::cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&["explain", "gpu-memory-held-by-other-proces"]);
    assert!(
        err.contains("did you mean `gpu-memory-held-by-other-process`?"),
        "{err}"
    );
    let err = run(&["rules", "show", "gpu-memory-held-by-other"]);
    assert!(
        err.contains("did you mean `gpu-memory-held-by-other-process`?"),
        "{err}"
    );
    let err = run(&[
        "check",
        "--no-load",
        "--param",
        "gpu-memory-held-by-other-process.treshold=50",
    ]);
    assert!(err.contains("did you mean `threshold`?"), "{err}");
    assert!(err.contains("it has: threshold"), "{err}");
    assert!(!err.contains("[\""), "Debug formatting: {err}");
    let err = run(&[
        "check",
        "--no-load",
        "--param",
        "gpu-memory-held-by-other-proces.threshold=50",
    ]);
    assert!(
        err.contains("no rule `gpu-memory-held-by-other-proces` (did you mean `gpu-memory-held-by-other-process`?)"),
        "{err}"
    );
    // Nothing near: no guess.
    let err = run(&["explain", "zzzz-qqqq"]);
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn snapshot_of_an_empty_root_is_clean_json_and_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli::bare()
        .args(["snapshot", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON alone");
    assert_eq!(v["schema_version"], envdoctor::snapshot::SCHEMA_VERSION);
    assert_eq!(
        v["root"],
        dir.path().canonicalize().unwrap().to_str().unwrap()
    );
    // An empty machine has no interpreters.
    assert_eq!(v["pythons"].as_array().map(Vec::len), Some(0));
}

#[test]
fn output_file_is_written_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    let out = cli::cmd()
        .args(["snapshot", "--root"])
        .arg(dir.path())
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let text = std::fs::read_to_string(&file).unwrap();
    let snap = envdoctor::Snapshot::from_json(&text, "snap.json").unwrap();
    assert_eq!(snap.schema_version, envdoctor::snapshot::SCHEMA_VERSION);
}

#[test]
fn an_unwritable_output_is_exit_2_naming_the_file() {
    let out = cli::cmd()
        .args([
            "snapshot",
            "--root",
            "/tmp",
            "-o",
            "/nonexistent-dir/x.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent-dir/x.json"));
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    // `envdoctor snapshot | head -c1`: the reader goes away early.
    let bin = assert_cmd::cargo::cargo_bin("envdoctor");
    let mut child = std::process::Command::new(bin)
        .arg("snapshot")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn help_lists_examples_and_exit_codes() {
    let out = cli::cmd().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Examples:") && text.contains("Exit codes:"),
        "{text}"
    );
    let out = cli::cmd().arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("envdoctor "));
}

#[test]
fn rules_facts_lists_paths_with_their_descriptions_and_refuses_an_unknown_prefix() {
    let out = cli::stdout_ok(cli::cmd().args(["rules", "facts", "pythons[].packages[]"]));
    let version = out
        .lines()
        .find(|l| l.starts_with("pythons[].packages[].version  "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(version.contains("(a string)"), "{version}");
    assert!(
        out.lines().all(|l| l.starts_with("pythons[].packages[]")),
        "{out}"
    );
    // Every path a listed rule reads is among them: the pack's own `library.needed_at` is
    // `libraries[].needed_at` in the schema.
    let all = cli::stdout_ok(cli::cmd().args(["rules", "facts"]));
    assert!(
        all.lines()
            .any(|l| l.starts_with("libraries[].needed_at  ")),
        "{all}"
    );
    let (code, stdout, err) = cli::output(cli::cmd().args(["rules", "facts", "nosuch"]));
    assert_eq!(code, 2, "{stdout}");
    assert!(
        err.contains("nosuch") && err.contains("no fact path"),
        "{err}"
    );
}
