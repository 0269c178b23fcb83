//! The JSON outputs keep their contracts (issue 28): every one (check, snapshot, compare, report,
//! rules list, SARIF) validates against its schema with a real validator (`common::contract`,
//! the `jsonschema` crate) on every fixture machine, carries its format version, and a schema
//! that changes without a version bump fails here.

use crate::common::{cli, contract, formats};
use serde_json::Value;
use sha2::Digest;
use std::path::{Path, PathBuf};

fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The checked-in schemas of envdoctor's own formats (`schema/*.json`).
fn schemas() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(contract::schema_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

/// The version-bump rule: the latest version recorded for each schema must have the schema's
/// current hash. `ENVDOCTOR_UPDATE_SCHEMA=1` records a changed schema as the next version (a
/// new line); the code must then write that version, or every output test below fails.
#[test]
fn a_schema_change_without_a_version_bump_fails() {
    let versions = contract::schema_dir().join("VERSIONS");
    let mut missing = Vec::new();
    for path in schemas() {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let sha = sha256(&path);
        let latest = contract::recorded()
            .into_iter()
            .filter(|r| r.file == file)
            .max_by_key(|r| r.version);
        if latest.as_ref().is_some_and(|r| r.sha256 == sha) {
            continue;
        }
        let next = latest.as_ref().map_or(1, |r| r.version + 1);
        if std::env::var_os("ENVDOCTOR_UPDATE_SCHEMA").is_some() {
            let mut text = std::fs::read_to_string(&versions).unwrap_or_default();
            text.push_str(&format!("{file} {next} {sha}\n"));
            std::fs::write(&versions, text).unwrap();
        } else {
            missing.push(format!(
                "schema/{file} changed since version {}: bump the version the code writes to \
                 {next} and record it (`ENVDOCTOR_UPDATE_SCHEMA=1 cargo test --test \
                 integration contracts` adds the line `{file} {next} {sha}`)",
                latest.map_or(0, |r| r.version)
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    // Each recorded line names a schema that exists, once per version.
    let mut seen = std::collections::BTreeSet::new();
    for r in contract::recorded() {
        assert!(contract::schema_dir().join(&r.file).is_file(), "{r:?}");
        assert!(seen.insert((r.file.clone(), r.version)), "twice: {r:?}");
        assert_eq!(r.sha256.len(), 64, "{r:?}");
    }
}

/// The OASIS SARIF 2.1.0 schema is the published text (errata 01, as in
/// github.com/oasis-tcs/sarif-spec `sarif-2.1/schema/sarif-schema-2.1.0.json`, commit
/// e0583813964e).
#[test]
fn the_sarif_schema_is_the_oasis_text() {
    assert_eq!(
        sha256(&contract::schema_dir().join("external/sarif-schema-2.1.0.json")),
        "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    );
}

fn machines() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(formats::machine(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

/// `envdoctor ARGS --root fixtures/machines/NAME`: the JSON on stdout (exit 0 or 1).
fn json_of(name: &str, args: &[&str]) -> Value {
    let mut c = formats::cmd();
    c.args(args).arg("--root").arg(formats::machine(name));
    let (code, out, err) = cli::output(&mut c);
    assert!(
        code == 0 || code == 1,
        "{name} {args:?}: exit {code}: {err}"
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name} {args:?}: not JSON ({e})"))
}

/// check's JSON (and the snapshot inside it, against snapshot.schema.json) and SARIF on every
/// fixture machine; report's JSON and `snapshot`'s own output on three of them (the same
/// types: fifteen more runs would only cost time in the quick tier).
#[test]
fn check_report_snapshot_and_sarif_validate_on_every_fixture_machine() {
    for name in machines() {
        let check = json_of(&name, &["check", "--format", "json"]);
        contract::validate("check.schema.json", &check);
        let errs = contract::errors("snapshot.schema.json", &check["snapshot"]);
        assert!(errs.is_empty(), "{name}: {errs:?}");
        let sarif = json_of(&name, &["check", "--format", "sarif"]);
        contract::validate("external/sarif-schema-2.1.0.json", &sarif);
        // The shape detection the shared helpers use names each one.
        assert_eq!(contract::detect(&check), Some("check.schema.json"));
        assert_eq!(
            contract::detect(&sarif),
            Some("external/sarif-schema-2.1.0.json")
        );
    }
    for name in ["gpu-in-container", "py-conda", "lib-cuda111-cusolver"] {
        let report = json_of(name, &["report", "--format", "json"]);
        contract::validate("report.schema.json", &report);
        let snap = json_of(name, &["snapshot"]);
        contract::validate("snapshot.schema.json", &snap);
        assert_eq!(contract::detect(&report), Some("report.schema.json"));
        assert_eq!(contract::detect(&snap), Some("snapshot.schema.json"));
    }
}

#[test]
fn compare_validates_for_a_pair_a_fleet_and_fixture_machines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/snapshots/compare");
    let run = |args: &[&str]| -> Value {
        let mut c = cli::plain();
        c.current_dir(&dir)
            .arg("compare")
            .args(args)
            .args(["--format", "json"]);
        let (code, out, err) = cli::output(&mut c);
        assert!(code == 0 || code == 1, "{args:?}: {err}");
        serde_json::from_str(&out).unwrap()
    };
    contract::validate("compare.schema.json", &run(&["a.json", "b.json"]));
    contract::validate("compare.schema.json", &run(&["a.json", "a.json"]));
    contract::validate(
        "compare.schema.json",
        &run(&["fleet-1.json", "fleet-2.json", "fleet-3.json"]),
    );
    // Two fixture machines' live snapshots.
    let t = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for name in ["site-venv-isolated", "site-conda", "lib-cuda111-cusolver"] {
        let f = t.path().join(format!("{name}.json"));
        std::fs::write(&f, json_of(name, &["snapshot"]).to_string()).unwrap();
        files.push(f.to_string_lossy().into_owned());
    }
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    contract::validate("compare.schema.json", &run(&files[..2]));
    contract::validate("compare.schema.json", &run(&files));
}

#[test]
fn rules_list_validates() {
    let v = cli::json(cli::cmd().args(["rules", "list", "--format", "json"]));
    contract::validate("rules-list.schema.json", &v);
    assert!(v["rules"].as_array().unwrap().len() >= 17);
}

/// The validator is real: what breaks a schema, or carries another version, is refused.
#[test]
fn a_document_that_breaks_its_schema_or_version_is_refused() {
    let check = json_of("site-venv-isolated", &["check", "--format", "json"]);
    assert!(contract::errors("check.schema.json", &check).is_empty());
    let mut no_verdict = check.clone();
    no_verdict.as_object_mut().unwrap().remove("verdict");
    let errs = contract::errors("check.schema.json", &no_verdict);
    assert!(
        errs.iter()
            .any(|e| e.contains("\"verdict\" is a required property")),
        "{errs:?}"
    );
    let mut bad_mark = check.clone();
    bad_mark["inventory"][0]["mark"] = "maybe".into();
    assert!(!contract::errors("check.schema.json", &bad_mark).is_empty());
    let mut other_version = check.clone();
    other_version["format_version"] = 999.into();
    let refused =
        std::panic::catch_unwind(|| contract::validate("check.schema.json", &other_version));
    assert!(refused.is_err());
    // SARIF: a result without its message breaks the OASIS schema.
    let mut sarif = json_of("lib-cuda111-cusolver", &["check", "--format", "sarif"]);
    assert!(contract::errors("external/sarif-schema-2.1.0.json", &sarif).is_empty());
    let results = sarif["runs"][0]["results"].as_array_mut().unwrap();
    assert!(!results.is_empty());
    results[0].as_object_mut().unwrap().remove("message");
    assert!(!contract::errors("external/sarif-schema-2.1.0.json", &sarif).is_empty());
}
