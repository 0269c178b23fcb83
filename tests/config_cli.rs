//! Configuration as a user meets it: `envdoctor.toml` or `[tool.envdoctor]` in the project
//! (found from a subdirectory too), `ENVDOCTOR_*` variables, the flags, their precedence
//! (command line > environment > project file > defaults) and bad configuration as exit 2
//! naming file:line. Every case runs the real binary on a saved snapshot with two findings: an
//! error (a checkpoint that needs `weights_only=False`) and a warning (64 MiB /dev/shm in a
//! container, parameter `min_mib`).

use crate::common::cli;
use serde_json::Value;
use std::path::{Path, PathBuf};

const CKPT: &str = "ckpt-torch-needs-weights-only-false";
const SHM: &str = "shm-small-in-container";

/// A project directory (with `.git`, so the search stops there) and the snapshot in it.
fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let snap = serde_json::json!({
        "schema_version": 1, "envdoctor_version": "0.1.0",
        "host": {"container": {"kind": "docker", "evidence": "/.dockerenv"}, "shm_total_mib": 64},
        "pythons": [{
            "path": "/opt/venv/bin/python", "exists": true, "kind": "venv", "sources": [],
            "include_system_site_packages": false,
            "packages": [{"name": "torch", "version": "2.6.0", "version_valid": true,
                          "location": "/opt/venv/lib/python3.11/site-packages",
                          "metadata": "/opt/venv/lib/python3.11/site-packages/torch-2.6.0.dist-info/METADATA"}]
        }],
        "checkpoints": [{
            "path": "/data/run1/last.pt", "format": "torch-zip",
            "torch": {"zip": true, "globals": ["__main__.TrainConfig"],
                      "unsafe_globals": ["__main__.TrainConfig"],
                      "needs_weights_only_false": true, "storage_count": 2}
        }]
    });
    let p = dir.path().join("snap.json");
    std::fs::write(&p, serde_json::to_string(&snap).unwrap()).unwrap();
    (dir, p)
}

/// `check --from SNAP --format json` in `dir` with `extra` flags and `env`: (exit code,
/// [(rule, severity)], fail_on).
fn check(
    dir: &Path,
    snap: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Vec<(String, String)>, String) {
    let mut c = cli::cmd();
    c.current_dir(dir);
    c.args(["check", "--format", "json", "--from"])
        .arg(snap)
        .args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let code = out.status.code().unwrap();
    assert!(
        code == 0 || code == 1,
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let fail_on = v["summary"]["fail_on"].as_str().unwrap().to_string();
    (code, found, fail_on)
}

/// A run that must fail with exit 2: its stderr.
fn check_err(dir: &Path, snap: &Path, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = cli::cmd();
    c.current_dir(dir);
    c.args(["check", "--from"]).arg(snap).args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn rules(found: &[(String, String)]) -> Vec<&str> {
    found.iter().map(|(r, _)| r.as_str()).collect()
}

#[test]
fn without_configuration_both_findings_and_exit_1() {
    let (dir, snap) = project();
    let (code, found, fail_on) = check(dir.path(), &snap, &[], &[]);
    assert_eq!(code, 1);
    assert_eq!(rules(&found), [CKPT, SHM]);
    assert_eq!(fail_on, "error");
}

#[test]
fn fail_on_precedence_cli_over_env_over_file_over_default() {
    let (dir, snap) = project();
    std::fs::write(dir.path().join("envdoctor.toml"), "fail-on = \"never\"\n").unwrap();
    // File: never.
    let (code, _, fail_on) = check(dir.path(), &snap, &[], &[]);
    assert_eq!((code, fail_on.as_str()), (0, "never"));
    // Environment over file.
    let env = [("ENVDOCTOR_FAIL_ON", "warning")];
    let (code, _, fail_on) = check(dir.path(), &snap, &[], &env);
    assert_eq!((code, fail_on.as_str()), (1, "warning"));
    // Command line over environment.
    let (code, _, fail_on) = check(dir.path(), &snap, &["--fail-on", "never"], &env);
    assert_eq!((code, fail_on.as_str()), (0, "never"));
}

#[test]
fn params_precedence_each_level_overrides_the_one_below() {
    let (dir, snap) = project();
    // min_mib 32: 64 MiB is enough, the warning goes.
    std::fs::write(
        dir.path().join("envdoctor.toml"),
        format!("[params.{SHM}]\nmin_mib = 32\n"),
    )
    .unwrap();
    let (_, found, _) = check(dir.path(), &snap, &[], &[]);
    assert_eq!(rules(&found), [CKPT]);
    let env = [("ENVDOCTOR_PARAMS", "shm-small-in-container.min_mib=128")];
    let (_, found, _) = check(dir.path(), &snap, &[], &env);
    assert_eq!(rules(&found), [CKPT, SHM]);
    let (_, found, _) = check(
        dir.path(),
        &snap,
        &["--param", "shm-small-in-container.min_mib=16"],
        &env,
    );
    assert_eq!(rules(&found), [CKPT]);
}

#[test]
fn severity_overrides_from_file_and_env() {
    let (dir, snap) = project();
    std::fs::write(
        dir.path().join("envdoctor.toml"),
        format!("[severity]\n{CKPT} = \"warning\"\n"),
    )
    .unwrap();
    let (code, found, _) = check(dir.path(), &snap, &[], &[]);
    assert_eq!(code, 0, "no error left at the default fail-on");
    assert!(
        found.contains(&(CKPT.into(), "warning".into())),
        "{found:?}"
    );
    let env = [(
        "ENVDOCTOR_SEVERITY",
        "ckpt-torch-needs-weights-only-false=error",
    )];
    let (code, found, _) = check(dir.path(), &snap, &[], &env);
    assert_eq!(code, 1);
    assert!(found.contains(&(CKPT.into(), "error".into())), "{found:?}");
}

#[test]
fn ignore_a_rule_or_one_subject_from_every_level() {
    let (dir, snap) = project();
    // The command line: the right subject (bare or as labelled) drops it, another does not.
    for subject in ["/data/run1/last.pt", "checkpoints[/data/run1/last.pt]"] {
        let (code, found, _) = check(
            dir.path(),
            &snap,
            &["--ignore", &format!("{CKPT}:{subject}")],
            &[],
        );
        assert_eq!((code, rules(&found)), (0, vec![SHM]), "{subject}");
    }
    let (_, found, _) = check(
        dir.path(),
        &snap,
        &["--ignore", &format!("{CKPT}:/other.pt")],
        &[],
    );
    assert_eq!(rules(&found), [CKPT, SHM]);
    // Environment and file add up with the command line.
    std::fs::write(
        dir.path().join("envdoctor.toml"),
        format!("ignore = [\"{SHM}\"]\n"),
    )
    .unwrap();
    let (_, found, _) = check(dir.path(), &snap, &[], &[]);
    assert_eq!(rules(&found), [CKPT]);
    let (code, found, _) = check(dir.path(), &snap, &[], &[("ENVDOCTOR_IGNORE", CKPT)]);
    assert_eq!((code, found.len()), (0, 0));
}

#[test]
fn pyproject_tool_table_is_read_from_a_subdirectory() {
    let (dir, snap) = project();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        format!(
            "[project]\nname = \"trainer\"\n\n[tool.ruff]\nline-length = 100\n\n\
             [tool.envdoctor]\nfail-on = \"never\"\nignore = [\"{SHM}\"]\n"
        ),
    )
    .unwrap();
    let sub = dir.path().join("src/trainer");
    std::fs::create_dir_all(&sub).unwrap();
    let (code, found, fail_on) = check(&sub, &snap, &[], &[]);
    assert_eq!(
        (code, fail_on.as_str(), rules(&found)),
        (0, "never", vec![CKPT])
    );
    // envdoctor.toml wins over pyproject.toml in the same directory.
    std::fs::write(dir.path().join("envdoctor.toml"), "fail-on = \"warning\"\n").unwrap();
    let (code, found, fail_on) = check(&sub, &snap, &[], &[]);
    assert_eq!((code, fail_on.as_str(), found.len()), (1, "warning", 2));
    // A pyproject.toml without the table is not configuration.
    std::fs::remove_file(dir.path().join("envdoctor.toml")).unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"t\"\n",
    )
    .unwrap();
    let (_, _, fail_on) = check(&sub, &snap, &[], &[]);
    assert_eq!(fail_on, "error");
}

#[test]
fn rule_directories_are_relative_to_the_file_and_join_env_and_cli() {
    let (dir, snap) = project();
    let rule = |id: &str| {
        format!(
            "rules:\n  - id: {id}\n    title: team rule {id}\n    severity: info\n    scope: machine\n    \
             when: {{fact: host.shm_total_mib, lt: 100}}\n    message: small shm\n    fix: grow it\n    \
             references: [https://example.org/{id}]\n    tests:\n      - name: fires\n        \
             facts: {{host: {{shm_total_mib: 1}}}}\n        expect: fire\n"
        )
    };
    for (d, id) in [
        ("team-rules", "team-a"),
        ("env-rules", "team-b"),
        ("cli-rules", "team-c"),
    ] {
        std::fs::create_dir(dir.path().join(d)).unwrap();
        std::fs::write(dir.path().join(d).join("r.yaml"), rule(id)).unwrap();
    }
    std::fs::write(
        dir.path().join("envdoctor.toml"),
        "rules = [\"team-rules\"]\n",
    )
    .unwrap();
    let sub = dir.path().join("notebooks");
    std::fs::create_dir(&sub).unwrap();
    let env_rules = dir.path().join("env-rules");
    let (_, found, _) = check(
        &sub,
        &snap,
        &["--rules", dir.path().join("cli-rules").to_str().unwrap()],
        &[("ENVDOCTOR_RULES", env_rules.to_str().unwrap())],
    );
    for id in ["team-a", "team-b", "team-c"] {
        assert!(rules(&found).contains(&id), "{id}: {found:?}");
    }
    // The same directory named twice (file and command line) is loaded once.
    let (_, found, _) = check(
        dir.path(),
        &snap,
        &["--rules", dir.path().join("team-rules").to_str().unwrap()],
        &[],
    );
    assert_eq!(rules(&found).iter().filter(|r| **r == "team-a").count(), 1);
}

#[test]
fn bad_configuration_is_exit_2_naming_file_and_line() {
    let (dir, snap) = project();
    let file = dir.path().join("envdoctor.toml");
    let cases = [
        (
            "fail-on = \"warning\"\n\nfail-onn = \"never\"\n",
            ":3:",
            "fail-onn",
        ),
        (
            "ignore = [\"a\"]\nfail-on = \"critical\"\n",
            ":2:",
            "critical",
        ),
        ("fail-on = [\n", ":", "invalid configuration"),
        (
            "\n\nignore = [\"no-such-rule\"]\n",
            ":3:",
            "no rule `no-such-rule`",
        ),
        (
            "[params.shm-small-in-container]\nmin_gib = 1\n",
            ":2:",
            "no parameter `min_gib`",
        ),
        (
            "[severity]\nshm-small-in-container = \"fatal\"\n",
            ":2:",
            "fatal",
        ),
    ];
    for (text, line, what) in cases {
        std::fs::write(&file, text).unwrap();
        let err = check_err(dir.path(), &snap, &[], &[]);
        let want = format!("{}{line}", file.display());
        assert!(err.contains(&want), "{text:?}: want {want} in {err}");
        assert!(err.contains(what), "{text:?}: want {what} in {err}");
    }
    std::fs::remove_file(&file).unwrap();
    let py = dir.path().join("pyproject.toml");
    std::fs::write(
        &py,
        "[project]\nname = \"x\"\n[tool.envdoctor]\nexpect-gpu = \"yes\"\n",
    )
    .unwrap();
    let err = check_err(dir.path(), &snap, &[], &[]);
    assert!(err.contains(&format!("{}:4", py.display())), "{err}");
    std::fs::remove_file(&py).unwrap();
    // Variables and flags are named too.
    let err = check_err(
        dir.path(),
        &snap,
        &[],
        &[("ENVDOCTOR_FAIL_ON", "sometimes")],
    );
    assert!(err.contains("ENVDOCTOR_FAIL_ON"), "{err}");
    let err = check_err(dir.path(), &snap, &[], &[("ENVDOCTOR_IGNORE", "typo-rule")]);
    assert!(
        err.contains("ENVDOCTOR_IGNORE") && err.contains("typo-rule"),
        "{err}"
    );
    let err = check_err(dir.path(), &snap, &["--ignore", ":x"], &[]);
    assert!(err.contains("--ignore :x"), "{err}");
    // --config names a file explicitly; a missing one is an error, not a silent default.
    let err = check_err(dir.path(), &snap, &["--config", "nope.toml"], &[]);
    assert!(err.contains("nope.toml"), "{err}");
}

#[test]
fn expect_gpu_is_accepted_from_file_and_env() {
    let (dir, snap) = project();
    std::fs::write(dir.path().join("envdoctor.toml"), "expect-gpu = true\n").unwrap();
    let (code, _, _) = check(dir.path(), &snap, &[], &[("ENVDOCTOR_EXPECT_GPU", "0")]);
    assert_eq!(code, 1);
}
