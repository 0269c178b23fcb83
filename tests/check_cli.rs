//! `envdoctor check`, `rules` and `explain` as a user runs them: exit codes, output formats,
//! user rule files (good, broken, replacing a shipped rule), colour, and no false alarms on a
//! healthy machine (a fresh venv made here, and this machine itself).

use crate::common::cli;
use serde_json::Value;
use std::path::Path;

/// A saved snapshot where a torch 2.6 interpreter meets a checkpoint that pickles a custom class.
fn failing_snapshot(dir: &Path) -> std::path::PathBuf {
    let snap = serde_json::json!({
        "schema_version": 1,
        "envdoctor_version": "0.1.0",
        "pythons": [{
            "path": "/opt/venv/bin/python", "exists": true, "kind": "venv", "sources": [],
            "include_system_site_packages": false,
            "packages": [{"name": "torch", "version": "2.6.0", "version_valid": true,
                          "location": "/opt/venv/lib/python3.11/site-packages",
                          "metadata": "/opt/venv/lib/python3.11/site-packages/torch-2.6.0.dist-info/METADATA"}]
        }],
        "checkpoints": [{
            "path": "/data/run1/last.pt", "format": "torch-zip",
            "torch": {"zip": true, "globals": ["__main__.TrainConfig"], "unsafe_globals": ["__main__.TrainConfig"],
                      "needs_weights_only_false": true, "storage_count": 2}
        }]
    });
    let p = dir.join("snap.json");
    std::fs::write(&p, serde_json::to_string_pretty(&snap).unwrap()).unwrap();
    p
}

#[test]
fn check_from_a_snapshot_reports_the_finding_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let snap = failing_snapshot(dir.path());
    let out = cli::cmd()
        .args(["check", "--from"])
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("[ckpt-torch-needs-weights-only-false]"),
        "{text}"
    );
    assert!(text.contains("__main__.TrainConfig"), "{text}");
    assert!(
        text.contains("checkpoints[/data/run1/last.pt].torch.needs_weights_only_false = true"),
        "{text}"
    );
    assert!(text.contains("fix:"), "{text}");
    assert!(
        text.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("FAIL: 1 error"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no colour when stdout is not a terminal"
    );

    cli::cmd()
        .args(["check", "--fail-on", "never", "--from"])
        .arg(&snap)
        .assert()
        .code(0);
}

#[test]
fn json_output_is_clean_json_with_findings_and_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let snap = failing_snapshot(dir.path());
    let out = cli::cmd()
        .args(["check", "--format", "json", "--from"])
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON alone");
    assert_eq!(v["summary"]["errors"], 1);
    assert_eq!(v["summary"]["failed"], true);
    let f = &v["findings"][0];
    assert_eq!(f["rule"], "ckpt-torch-needs-weights-only-false");
    assert_eq!(f["severity"], "error");
    assert!(f["evidence"].as_array().unwrap().len() >= 2);
    assert!(f["references"][0].as_str().unwrap().starts_with("https://"));
    assert_eq!(v["snapshot"]["pythons"][0]["path"], "/opt/venv/bin/python");
}

#[test]
fn markdown_output_has_a_table_and_details() {
    let dir = tempfile::tempdir().unwrap();
    let snap = failing_snapshot(dir.path());
    let out = cli::cmd()
        .args(["check", "--format", "markdown", "--from"])
        .arg(&snap)
        .output()
        .unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.starts_with("## envdoctor check: ❌ 1 error"), "{md}");
    assert!(
        md.contains("| error | `ckpt-torch-needs-weights-only-false` |"),
        "{md}"
    );
    assert!(md.contains("<details>"), "{md}");
}

#[test]
fn colour_only_when_forced_and_never_under_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let snap = failing_snapshot(dir.path());
    let forced = cli::cmd()
        .env("CLICOLOR_FORCE", "1")
        .args(["check", "--from"])
        .arg(&snap)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&forced.stdout).contains('\u{1b}'));
    let no = cli::cmd()
        .env("CLICOLOR_FORCE", "1")
        .env("NO_COLOR", "1")
        .args(["check", "--from"])
        .arg(&snap)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&no.stdout).contains('\u{1b}'));
}

#[test]
fn bad_snapshots_are_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("trunc.json");
    std::fs::write(&bad, "{\"schema_version\": 1, \"pyth").unwrap();
    let out = cli::cmd()
        .args(["check", "--from"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("trunc.json") && err.contains("not valid JSON"),
        "{err}"
    );
    let out = cli::cmd()
        .args(["check", "--from", "/nonexistent/x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.json"));
}

const USER_RULE: &str = r#"rules:
  - id: team-no-torch-26
    title: Our code is not ready for torch 2.6
    severity: warning
    scope: interpreter
    when: {fact: python.package.torch.version, pep440: ">=2.6"}
    message: "{{python.path}} has torch {{python.package.torch.version}}"
    fix: "pin torch<2.6 in {{python.path}}"
    references: [https://example.org/team/torch]
    tests:
      - name: fires on 2.6
        facts: {pythons: [{path: /p, packages: [{name: torch, version: "2.6.0"}]}]}
        expect: fire
        message_contains: torch 2.6.0
      - name: quiet on 2.5
        facts: {pythons: [{path: /p, packages: [{name: torch, version: "2.5.1"}]}]}
        expect: quiet
"#;

#[test]
fn user_rules_are_added_tested_and_can_replace_shipped_ones() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules");
    std::fs::create_dir(&rules).unwrap();
    std::fs::write(rules.join("team.yaml"), USER_RULE).unwrap();
    let snap = failing_snapshot(dir.path());

    let out = cli::cmd()
        .args(["check", "--fail-on", "warning", "--rules"])
        .arg(&rules)
        .arg("--from")
        .arg(&snap)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[team-no-torch-26]")
            && text.contains("/opt/venv/bin/python has torch 2.6.0"),
        "{text}"
    );

    let out = cli::cmd()
        .args(["rules", "test"])
        .arg(&rules)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 passed, 0 failed"));

    // Replace the shipped torch rule with a quiet one of the same id.
    let replacement = USER_RULE
        .replace("team-no-torch-26", "ckpt-torch-needs-weights-only-false")
        .replace("pep440: \">=2.6\"", "pep440: \">=99\"")
        .replace("fires on 2.6", "fires on 99")
        .replace(
            "version: \"2.6.0\"}]}]}\n        expect: fire\n        message_contains: torch 2.6.0",
            "version: \"99.0\"}]}]}\n        expect: fire",
        );
    std::fs::write(rules.join("team.yaml"), replacement).unwrap();
    cli::cmd()
        .args(["check", "--rules"])
        .arg(&rules)
        .arg("--from")
        .arg(&snap)
        .assert()
        .code(0);
    let shown = cli::cmd()
        .args([
            "rules",
            "show",
            "ckpt-torch-needs-weights-only-false",
            "--rules",
        ])
        .arg(&rules)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("team.yaml"));
}

#[test]
fn a_broken_user_rule_file_is_exit_2_with_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        USER_RULE.replace(
            "python.package.torch.version, pep440",
            "python.package.torch.verison, pep440",
        ),
    )
    .unwrap();
    let out = cli::cmd()
        .args(["check", "--rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:6:", file.display())), "{err}");
    assert!(err.contains("verison"), "{err}");

    std::fs::write(&file, "rules:\n  - id: x\n    title: [unclosed\n").unwrap();
    let out = cli::cmd()
        .args(["rules", "lint"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.yaml:"));
}

#[test]
fn rules_test_reports_a_failing_case_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.yaml");
    std::fs::write(&file, USER_RULE.replace("expect: quiet", "expect: fire")).unwrap();
    let out = cli::cmd()
        .args(["rules", "test"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("FAIL  team-no-torch-26 / quiet on 2.5"),
        "{text}"
    );
    assert!(text.contains("1 passed, 1 failed"), "{text}");
}

#[test]
fn the_shipped_pack_lists_tests_and_lints_clean() {
    let out = cli::cmd().args(["rules", "test"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    cli::cmd().args(["rules", "lint"]).assert().code(0);
    let out = cli::cmd()
        .args(["rules", "list", "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["rules"].as_array().unwrap().len() >= 17);
}

#[test]
fn explain_prints_fixed_sections() {
    let out = cli::cmd()
        .args(["explain", "ckpt-rnn-pre-tf12-names"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let t = String::from_utf8_lossy(&out.stdout);
    let order = [
        "## What it looks like",
        "## Why it happens",
        "## What envdoctor checks",
        "## How to fix it",
        "## References",
    ];
    let mut at = 0;
    for h in order {
        let i = t[at..]
            .find(h)
            .unwrap_or_else(|| panic!("{h} missing or out of order:\n{t}"));
        at += i;
    }
    assert!(t.contains("Key [\\w/]*(lstm|gru|rnn)_cell"), "{t}");
    let out = cli::cmd()
        .args(["explain", "no-such-rule"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The error-level findings of a `check --format json` report.
fn errors_of(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect()
}

#[test]
fn no_error_finding_on_a_fresh_venv() {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    let ok = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(proj.join(".venv"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "python3 -m venv must work here (CI installs python3-venv)"
    );
    let out = cli::cmd()
        .args(["check", "--format", "json", "--no-load", "--project"])
        .arg(&proj)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(
        errors.is_empty(),
        "false alarms on a fresh venv: {errors:#?}"
    );
    assert_eq!(out.status.code(), Some(0));
    let venv_python = proj.join(".venv/bin/python");
    assert!(
        v["snapshot"]["pythons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["path"] == venv_python.to_string_lossy().as_ref()),
        "the project's venv is among the interpreters checked"
    );
}

#[test]
fn the_readme_rule_example_loads_and_its_tests_pass() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("```yaml\nrules:\n")
        .expect("README has a worked rule example")
        + "```yaml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("torch.yaml"), &readme[start..end]).unwrap();
    let out = cli::cmd()
        .args(["rules", "test"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 passed, 0 failed"));
    cli::cmd()
        .args(["rules", "lint"])
        .arg(dir.path())
        .assert()
        .code(0);
}

use crate::common::pypi;

#[test]
fn no_error_finding_on_a_venv_with_numpy_and_h5py() {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    let venv = proj.join(".venv");
    let py = venv.join("bin/python");
    let made = pypi::off()
        .and_then(|_| {
            pypi::run(
                std::process::Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv),
            )
        })
        .and_then(|_| pypi::run(pypi::pip(&py).args(["install", "numpy", "h5py"])));
    if pypi::need("a venv with numpy and h5py", made).is_none() {
        return;
    }
    let out = cli::cmd()
        .args(["check", "--format", "json", "--project"])
        .arg(&proj)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = errors_of(&v);
    assert!(errors.is_empty(), "false alarms: {errors:#?}");
    assert_eq!(out.status.code(), Some(0));
    let checked = v["snapshot"]["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == py.to_string_lossy().as_ref())
        .expect("the venv was probed");
    let names: Vec<&str> = checked["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.contains(&"numpy") && names.contains(&"h5py"),
        "{names:?}"
    );
}

#[test]
fn a_broken_rule_file_is_named_with_the_line_and_a_caret_under_the_column() {
    let t = tempfile::tempdir().unwrap();
    let rules = t.path().join("team");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("bad.yaml"),
        "rules:\n  - id: team-x\n    title: t\n    severity: eror\n    scope: machine\n    when: {fact: host.arch, equals: x}\n    message: m\n    fix: f\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_envdoctor"))
        .args(["check", "--no-load", "--root"])
        .arg(t.path())
        .arg("--rules")
        .arg(&rules)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.yaml:4:15: unknown variant `eror`"),
        "{err}"
    );
    assert!(
        err.contains("  4 |     severity: eror\n    |               ^"),
        "{err}"
    );
}
