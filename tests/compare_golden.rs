//! Golden outputs of `envdoctor compare` in every format, for a pair and a fleet.
//!
//! The inputs are checked in under `fixtures/snapshots/compare/` (made from fixture-machine
//! snapshots by `make.py` there); the expected outputs under `tests/golden/compare/`. Output is
//! made deterministic with `NO_COLOR=1` and relative file names; only the comparing envdoctor's
//! own version is redacted from the JSON. The goldens are insta snapshots;
//! `INSTA_UPDATE=always cargo test --test integration golden` rewrites them (read `git diff`
//! before committing).

use crate::common::cli;
use envdoctor::compare::CompareReport;
use std::path::Path;

fn run(args: &[&str]) -> (i32, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/snapshots/compare");
    let out = cli::plain()
        .current_dir(&dir)
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

/// Check `actual` against the snapshot `tests/golden/compare/NAME.snap`; insta compares without
/// trailing whitespace, so the single final newline is checked here.
fn golden(name: &str, actual: &str) {
    assert_eq!(&actual[actual.trim_end().len()..], "\n", "how {name} ends");
    insta::with_settings!({
        snapshot_path => "golden/compare",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, actual);
    });
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

/// Five machines, two of which differ: one matrix (a row per fact that differs, a column per
/// machine, `·` where a machine holds the majority value), within 80 columns, each fact once
/// (there is no second "by machine" listing: each machine's count is on its line at the top).
#[test]
fn fleet_of_five_is_a_matrix_within_80_columns() {
    let files = [
        "fleet-1.json",
        "fleet-2.json",
        "fleet-3.json",
        "a.json",
        "b.json",
    ];
    let (code, text) = run(&files);
    assert_eq!(code, 1);
    golden("fleet5.txt", &text);
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "longer than 80: {l:?}");
    }
    let mut args = files.to_vec();
    args.extend(["--format", "json"]);
    let (_, json) = run(&args);
    let report: CompareReport = serde_json::from_str(&json).unwrap();
    let fleet = report.fleet.unwrap();
    // One line per differing fact (plus headings): not one per fact and one per outlier twice.
    assert!(text.lines().count() < fleet.by_fact.len() + 25, "{text}");
    assert!(text.contains("  3  fleet-3.json (node-3, 2026-11-22T09:00:09Z)  12 differences"));
    let torch = text
        .lines()
        .find(|l| l.trim_start().starts_with("packages[torch]"))
        .unwrap();
    let cells: Vec<&str> = torch.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "packages[torch]",
            "2.1.0+cu118",
            "·",
            "·",
            "2.3.1+cu121",
            "·",
            "2.3.1+cu121"
        ]
    );
}
