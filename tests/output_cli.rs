//! `check` at the command line: bad input exits 2 naming the argument, an incomplete run (a probe
//! that timed out) says so and exits 2 unless `--allow-incomplete`, and a run in a real terminal
//! (tmux, 80 columns) has no line longer than 80.

use crate::fake_nvml;

use crate::common::cli;
use std::time::Duration;

#[test]
fn every_bad_input_exits_2_naming_the_argument() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let unreadable = dir.path().join("secret.pt");
    std::fs::write(&unreadable, b"x").unwrap();
    let fifo = dir.path().join("fifo.pt");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--checkpoint", "/nonexistent/x.pt"],
            "--checkpoint /nonexistent/x.pt",
        ),
        (vec!["--checkpoint", fifo], "--checkpoint"),
        (vec!["--project", "/nonexistent"], "--project /nonexistent"),
        (
            vec!["--project", unreadable.to_str().unwrap()],
            "not a directory",
        ),
        (vec!["--pid", "999999999"], "--pid 999999999"),
        (vec!["--rules", "/nonexistent/rules"], "/nonexistent/rules"),
        (
            vec!["--param", "gpu-memory-held-by-other-process.threshold=abc"],
            "--param gpu-memory-held-by-other-process.threshold=abc",
        ),
        (
            vec!["--from", "/nonexistent/snap.json"],
            "/nonexistent/snap.json",
        ),
    ];
    for (extra, named) in cases {
        let mut args = vec!["check", "--no-load"];
        if extra[0] != "--project" {
            args.extend(["--project", d]);
        }
        args.extend(extra.iter().copied());
        let (code, stdout, stderr) = cli::output(cli::plain().timeout(cli::TIMEOUT).args(&args));
        assert_eq!(code, 2, "{extra:?}: {stderr}");
        assert!(stderr.contains(named), "{extra:?} must be named: {stderr}");
        assert!(stdout.is_empty(), "{extra:?}: {stdout}");
    }
    // A number is a number; a well-typed value is accepted.
    let (code, _, stderr) = cli::output(cli::plain().timeout(cli::TIMEOUT).args([
        "check",
        "--no-load",
        "--project",
        d,
        "--param",
        "gpu-memory-held-by-other-process.threshold=50",
    ]));
    assert_ne!(code, 2, "{stderr}");
    // --pid of a process that exists is accepted.
    let me = std::process::id().to_string();
    let (code, _, stderr) = cli::output(cli::plain().timeout(cli::TIMEOUT).args([
        "check",
        "--no-load",
        "--project",
        d,
        "--pid",
        &me,
    ]));
    assert_ne!(code, 2, "{stderr}");
    // `report` is a document in Markdown or JSON, not a CI format.
    let (code, _, stderr) = cli::output(cli::plain().timeout(cli::TIMEOUT).args([
        "report",
        "--no-load",
        "--format",
        "sarif",
    ]));
    assert_eq!(code, 2);
    assert!(stderr.contains("--format"), "{stderr}");
}

#[test]
fn a_probe_that_timed_out_makes_the_run_incomplete_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let lib = fake_nvml::library();
    let run = |extra: &[&str], format: &str| {
        let out = cli::plain()
            .args(["check", "--deadline", "1", "--format", format])
            .arg("--project")
            .arg(dir.path())
            .arg("--nvml-lib")
            .arg(&lib)
            .args(extra)
            // nvmlInit_v2 never returns: a wedged driver.
            .env("FAKE_NVML_SCENARIO", "hang")
            .timeout(cli::TIMEOUT)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, text) = run(&[], "text");
    assert_eq!(code, 2, "{text}");
    let err = cli::cmd()
        .args(["check", "--deadline", "1", "--nvml-lib"])
        .arg(&lib)
        .env("FAKE_NVML_SCENARIO", "hang")
        .timeout(cli::TIMEOUT)
        .output()
        .unwrap()
        .stderr;
    let err = String::from_utf8_lossy(&err);
    assert!(
        err.contains("envdoctor: incomplete: gpu: NVML timed out"),
        "{err}"
    );
    let last = text.lines().last().unwrap_or_default();
    assert!(last.starts_with("INCOMPLETE: "), "{text}");
    assert!(text.contains("probe problem"), "{text}");
    assert!(text.contains("✗ gpu: NVML timed out"), "{text}");
    let (code, md) = run(&[], "markdown");
    assert_eq!(code, 2);
    assert!(md.starts_with("## envdoctor check: ⚠️ incomplete:"), "{md}");
    let (code, json) = run(&[], "json");
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["incomplete"], true);
    assert!(v["verdict"].as_str().unwrap().starts_with("INCOMPLETE"));
    let (code, text) = run(&["--allow-incomplete"], "text");
    assert!(code == 0 || code == 1, "{code}: {text}");
    assert!(text.lines().last().unwrap().starts_with("INCOMPLETE: "));
}

#[test]
fn in_an_80_column_tmux_no_line_is_longer_than_80() {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("ENVDOCTOR_REQUIRE_PYPI").is_none(),
            "CI installs tmux (.ci/run)"
        );
        eprintln!("SKIPPED: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("done");
    let sock = dir.path().join("tmux.sock");
    let exe = assert_cmd::cargo::cargo_bin("envdoctor");
    // A project whose paths are long, and a fixture checkpoint under it.
    let proj = dir.path().join("a-project-with-a-long-name/runs");
    std::fs::create_dir_all(&proj).unwrap();
    for f in ["torch_custom_object.pt", "torch_legacy_9.pt"] {
        std::fs::copy(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/checkpoints")
                .join(f),
            proj.join(f),
        )
        .unwrap();
    }
    let script = format!(
        "cd '{}' && '{}' check --no-load --verbose; touch '{}'; sleep 30",
        proj.display(),
        exe.display(),
        out.display()
    );
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&sock)
            .args(args)
            .env_remove("TMUX")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    // -v prints every fact each rule read: thousands of lines, so keep them all in history.
    let started = tmux(&[
        "start-server",
        ";",
        "set-option",
        "-g",
        "history-limit",
        "100000",
        ";",
        "new-session",
        "-d",
        "-x",
        "80",
        "-y",
        "200",
        &script,
    ]);
    assert!(started.status.success(), "{started:?}");
    let t0 = std::time::Instant::now();
    while !out.exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    // -J joins lines the terminal wrapped: a line longer than 80 shows as one long line.
    let pane = tmux(&["capture-pane", "-p", "-J", "-S", "-"]);
    let _ = tmux(&["kill-server"]);
    let text = String::from_utf8_lossy(&pane.stdout).into_owned();
    assert!(out.exists(), "envdoctor did not finish in tmux: {text}");
    assert!(text.contains("Summary"), "{text}");
    assert!(text.contains("Checkpoints  2 found"), "{text}");
    for l in text.lines() {
        assert!(
            l.trim_end().chars().count() <= 80,
            "longer than 80: {l:?}\n{text}"
        );
    }
}

/// compare in an 80-column tmux: the pair, the pair with --all and a fleet fit; keys keep their
/// soname; without drift there is no interpreter block (-v shows it); -q is the verdict line.
#[test]
fn compare_fits_80_columns_and_honours_q_and_v() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/snapshots/compare");
    for args in [
        vec!["compare", "a.json", "b.json"],
        vec!["compare", "a.json", "b.json", "--all"],
        vec![
            "compare",
            "fleet-1.json",
            "fleet-2.json",
            "fleet-3.json",
            "a.json",
            "b.json",
            "--all",
        ],
    ] {
        let Some(text) = in_tmux_80(&dir, &args) else {
            return;
        };
        assert!(text.lines().count() > 5, "{text}");
        assert_fits_80(&format!("{args:?}"), &text);
        // No key lost its file name to the elision: an elided library key still ends with
        // its soname.
        for l in text
            .lines()
            .filter(|l| l.contains("libraries[") && l.contains('…'))
        {
            assert!(l.contains(".so"), "{l}");
        }
    }
    let run = |args: &[&str]| cli::stdout_ok_or_1(cli::plain().current_dir(&dir).args(args));
    let same = run(&["compare", "a.json", "a.json"]);
    assert!(same.contains("no drift"), "{same}");
    assert!(!same.contains("Interpreters"), "{same}");
    assert!(same.lines().count() <= 8, "{same}");
    let same_v = run(&["compare", "a.json", "a.json", "-v"]);
    assert!(
        same_v.contains("Interpreters (matched by role)"),
        "{same_v}"
    );
    let full = run(&["compare", "a.json", "b.json"]);
    let quiet = run(&["compare", "a.json", "b.json", "-q"]);
    assert!(full.lines().count() > 10, "{full}");
    assert!(quiet.lines().count() <= 2, "{quiet}");
    assert!(quiet.contains(" difference"), "{quiet}");
    assert!(full.contains(quiet.trim_end()), "{quiet}\n---\n{full}");
}

#[test]
fn a_slow_probe_is_named_on_the_terminal_and_cleared() {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("ENVDOCTOR_REQUIRE_PYPI").is_none(),
            "CI installs tmux"
        );
        eprintln!("SKIPPED: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let done = dir.path().join("done");
    let sock = dir.path().join("tmux.sock");
    let exe = assert_cmd::cargo::cargo_bin("envdoctor");
    let lib = fake_nvml::library();
    // NVML hangs (a wedged driver); stdout goes to a file so the pane shows stderr alone.
    let script = format!(
        "cd '{d}' && FAKE_NVML_SCENARIO=hang '{exe}' check --deadline 4 --nvml-lib '{lib}' \
         > '{d}/out.txt'; touch '{done}'; sleep 30",
        d = dir.path().display(),
        exe = exe.display(),
        lib = lib.display(),
        done = done.display()
    );
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&sock)
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap()
    };
    assert!(
        tmux(&["new-session", "-d", "-x", "80", "-y", "20", &script])
            .status
            .success()
    );
    let t0 = std::time::Instant::now();
    let mut seen = String::new();
    while !done.exists() && t0.elapsed() < Duration::from_secs(60) {
        let pane = tmux(&["capture-pane", "-p"]);
        let text = String::from_utf8_lossy(&pane.stdout).into_owned();
        if text.contains("waiting for") {
            seen = text;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let after = String::from_utf8_lossy(&tmux(&["capture-pane", "-p"]).stdout).into_owned();
    let _ = tmux(&["kill-server"]);
    assert!(done.exists(), "envdoctor did not finish: {after}");
    assert!(
        seen.contains("waiting for NVML ("),
        "never named NVML: {seen:?}"
    );
    assert!(seen.contains(" s of 4)"), "{seen}");
    assert!(
        !after.contains("waiting for"),
        "the progress line was not cleared: {after}"
    );
    // Piped stderr (as here) never gets it.
    let out = cli::cmd()
        .args(["check", "--deadline", "2", "--nvml-lib"])
        .arg(&lib)
        .env("FAKE_NVML_SCENARIO", "hang")
        .current_dir(dir.path())
        .timeout(cli::TIMEOUT)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("waiting for"));
}

/// Run `args` of envdoctor in a detached 80-column tmux pane (in `cwd`): the pane's text, lines
/// the terminal wrapped joined again (`capture-pane -J`), so a line over 80 columns shows as
/// one; None when tmux is not installed (CI installs it).
fn in_tmux_80(cwd: &std::path::Path, args: &[&str]) -> Option<String> {
    in_tmux_80_with(cwd, &[], args)
}

/// [`in_tmux_80`] with `env` set for envdoctor (`("PATH", "/usr/bin:/bin")`; an empty value
/// unsets it).
fn in_tmux_80_with(cwd: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> Option<String> {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs tmux (.ci/run)"
        );
        eprintln!("SKIPPED: tmux is not installed");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let done = dir.path().join("done");
    let sock = dir.path().join("tmux.sock");
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    // An empty value unsets the variable (`env` takes `-u` before the assignments).
    let mut env = env.to_vec();
    env.sort_by_key(|(_, v)| !v.is_empty());
    let vars: Vec<String> = env
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                format!("-u {k}")
            } else {
                format!("{k}='{v}'")
            }
        })
        .collect();
    let script = format!(
        "cd '{}' && env {} '{}' {}; touch '{}'; sleep 30",
        cwd.display(),
        vars.join(" "),
        assert_cmd::cargo::cargo_bin("envdoctor").display(),
        quoted.join(" "),
        done.display()
    );
    let tmux = |a: &[&str]| {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&sock)
            .args(a)
            .env_remove("TMUX")
            .env_remove("ENVDOCTOR_WIDTH")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let started = tmux(&[
        "start-server",
        ";",
        "set-option",
        "-g",
        "history-limit",
        "100000",
        ";",
        "new-session",
        "-d",
        "-x",
        "80",
        "-y",
        "50",
        &script,
    ]);
    assert!(started.status.success(), "{started:?}");
    let t0 = std::time::Instant::now();
    while !done.exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let pane = tmux(&["capture-pane", "-p", "-J", "-S", "-"]);
    let _ = tmux(&["kill-server"]);
    let text = String::from_utf8_lossy(&pane.stdout).into_owned();
    assert!(
        done.exists(),
        "envdoctor {args:?} did not finish in tmux: {text}"
    );
    Some(text)
}

fn assert_fits_80(what: &str, text: &str) {
    for l in text.lines() {
        assert!(
            l.trim_end().chars().count() <= 80,
            "{what}: longer than 80: {l:?}\n{text}"
        );
    }
}

/// `explain` shows a fix's holes as `<fact.path>`, never the raw template.
#[test]
fn explain_shows_fix_holes_not_raw_templates() {
    let t = cli::stdout_ok(cli::plain().args(["explain", "cuda-library-not-found"]));
    let fix = t.split("## How to fix it").nth(1).unwrap();
    assert!(
        fix.contains("Install what provides <library.soname> and"),
        "{fix}"
    );
    assert!(!t.contains("{{"), "{t}");
    // Not "other CUDA cuda libraries" (the family of libcudart is `cuda`).
    assert!(!fix.contains("CUDA cuda"), "{fix}");
}

/// `explain` and `rules list` wrap to an 80-column terminal, as check does (the same layout).
#[test]
fn explain_and_rules_list_fit_an_80_column_tmux() {
    let cwd = tempfile::tempdir().unwrap();
    // The rule with the longest fix text of the shipped pack, and a rule with a long regex list.
    for id in ["cuda-library-not-found", "ckpt-rnn-pre-tf12-names"] {
        let Some(text) = in_tmux_80(cwd.path(), &["explain", id]) else {
            return;
        };
        assert!(text.contains("## How to fix it"), "{text}");
        assert_fits_80(id, &text);
        // Piped, the same text is not wrapped: its longest line is wider than 80.
        let piped = cli::stdout_ok(cli::plain().args(["explain", id]));
        assert!(piped.lines().any(|l| l.chars().count() > 80), "{piped}");
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let body = |t: &str| words(t.split("## How to fix it").nth(1).unwrap());
        assert!(body(&text).starts_with(&body(&piped)[..60]), "{text}");
    }
    let Some(text) = in_tmux_80(cwd.path(), &["rules", "list"]) else {
        return;
    };
    assert!(text.contains(" rules\n"), "{text}");
    assert_fits_80("rules list", &text);
}

/// Every subcommand, in an 80-column tmux: its help, and what it prints for a person. The list
/// of subcommands is read from `envdoctor --help`, so a new one fails here until it is tried.
/// Outputs that are files for a program are not text for a person and are not wrapped: `snapshot`
/// to stdout (JSON; it is run with `-o`, where the terminal shows nothing), `completions` (a
/// shell script), `man` (roff, which `man` lays out) and the YAML that `rules show` prints as
/// written. `check`, `compare`, `explain` and `rules list` have their own tests above.
#[test]
fn every_subcommand_fits_an_80_column_tmux() {
    let help = cli::stdout_ok(cli::plain().arg("--help"));
    let subs: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(subs.len() >= 10, "{help}");
    let tried = [
        "check", "snapshot", "report", "rules", "explain", "compare", "diagnose", "run", "help",
    ];
    let data = ["completions", "man"];
    for s in &subs {
        assert!(
            tried.contains(s) || data.contains(s),
            "`{s}` is not tried here"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("train.log"),
        "Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n\
         ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n",
    )
    .unwrap();
    let rules = concat!(env!("CARGO_MANIFEST_DIR"), "/rules/python.yaml");
    let mut runs: Vec<(Vec<&str>, &str)> = vec![(vec!["--help"], "Commands:")];
    for s in subs.iter().filter(|s| **s != "help") {
        runs.push((vec![s, "--help"], "Usage:"));
    }
    for s in ["list", "show", "test", "lint"] {
        runs.push((vec!["rules", s, "--help"], "Usage:"));
    }
    runs.extend([
        (vec!["help", "run"], "Usage:"),
        (vec!["snapshot", "--no-load", "-o", "s.json"], ""),
        (vec!["report", "--no-load"], "## "),
        (
            vec!["check", "--no-load", "--format", "markdown"],
            "envdoctor check",
        ),
        (vec!["rules", "test", rules], " passed"),
        (vec!["rules", "lint", rules], "rules valid"),
        (vec!["diagnose", "train.log"], "cuda-library-not-found"),
        (
            vec![
                "run",
                "--",
                "sh",
                "-c",
                "echo \"ImportError: libcudnn.so.9: cannot open shared object file\" >&2; exit 3",
            ],
            "exited with status 3; diagnosing its output",
        ),
    ]);
    // `report` shows PATH and the library path whole (one word each, in a code block): a
    // short PATH, and not cargo's LD_LIBRARY_PATH.
    let env = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("LD_LIBRARY_PATH", ""),
    ];
    for (args, shows) in runs {
        let Some(text) = in_tmux_80_with(d, &env, &args) else {
            return;
        };
        let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(joined.contains(shows), "{args:?} shows {shows:?}:\n{text}");
        assert_fits_80(&format!("{args:?}"), &text);
    }
    assert!(d.join("s.json").exists());
}
