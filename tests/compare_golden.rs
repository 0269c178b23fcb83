//! Golden outputs of `envdoctor compare` in every format, for a pair and a fleet.
//!
//! The inputs are checked in under `fixtures/snapshots/compare/` (made from fixture-machine
//! snapshots by `make.py` there); the expected outputs under `tests/golden/compare/`. Output is
//! made deterministic with `NO_COLOR=1` and relative file names; only the comparing envdoctor's
//! own version is redacted from the JSON. `ENVDOCTOR_UPDATE_GOLDEN=1 cargo test --test
//! compare_golden` rewrites the goldens (review the diff before committing).

use assert_cmd::Command;
use envdoctor::compare::CompareReport;
use std::path::Path;

fn run(args: &[&str]) -> (i32, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/snapshots/compare");
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .arg("compare")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/compare")
        .join(name);
    if std::env::var_os("ENVDOCTOR_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from the golden file from line {}:\n--- expected\n{}\n--- actual\n{}\n\
             (ENVDOCTOR_UPDATE_GOLDEN=1 cargo test --test integration compare_golden rewrites it)",
            first + 1,
            expected
                .lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
            actual
                .lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
}

fn redact(json: &str) -> String {
    json.replace(
        &format!(
            "\n  \"envdoctor_version\": \"{}\",",
            env!("CARGO_PKG_VERSION")
        ),
        "\n  \"envdoctor_version\": \"[version]\",",
    )
}

#[test]
fn pair_text_json_markdown() {
    let (code, text) = run(&["a.json", "b.json"]);
    assert_eq!(code, 1);
    assert!(
        !text.contains('\u{1b}'),
        "no colour under NO_COLOR or a pipe"
    );
    golden("pair.txt", &text);
    let (code, json) = run(&["a.json", "b.json", "--format", "json"]);
    assert_eq!(code, 1);
    let report: CompareReport = serde_json::from_str(&json).expect("stdout is clean JSON");
    assert_eq!(report.summary.ml, 26);
    golden("pair.json", &redact(&json));
    let (_, md) = run(&["a.json", "b.json", "--format", "markdown"]);
    golden("pair.md", &md);
}

#[test]
fn pair_with_all_shows_volatile_and_identity_facts() {
    let (code, text) = run(&["a.json", "b.json", "--all", "--only", "host,gpus,meta"]);
    assert_eq!(code, 1);
    golden("pair-all-host-gpus.txt", &text);
    for fact in [
        "collected_at",
        "host.hostname",
        "host.live.memory_available_mib",
        "gpus[0].live.memory_used_mib",
        "gpus[0].uuid",
    ] {
        assert!(text.contains(fact), "{fact} with --all:\n{text}");
    }
    let (_, text) = run(&["a.json", "b.json", "--only", "host,gpus,meta"]);
    assert!(
        !text.contains("live.") && !text.contains("collected_at") && !text.contains("hostname")
    );
}

#[test]
fn fleet_text_json_markdown() {
    let files = ["fleet-1.json", "fleet-2.json", "fleet-3.json"];
    let (code, text) = run(&files);
    assert_eq!(code, 1);
    golden("fleet.txt", &text);
    let mut args = files.to_vec();
    args.extend(["--format", "json"]);
    let (_, json) = run(&args);
    let report: CompareReport = serde_json::from_str(&json).unwrap();
    let fleet = report.fleet.as_ref().unwrap();
    assert_eq!(fleet.by_machine.len(), 1);
    assert_eq!(fleet.by_machine[0].machine, "fleet-3.json");
    golden("fleet.json", &redact(&json));
    let mut args = files.to_vec();
    args.extend(["--format", "markdown"]);
    let (_, md) = run(&args);
    golden("fleet.md", &md);
}
