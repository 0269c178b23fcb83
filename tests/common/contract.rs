//! The JSON outputs' contracts, checked with a real JSON Schema validator (the `jsonschema`
//! crate): a document must validate against its checked-in schema (`schema/*.schema.json`), and
//! carry the latest format version `schema/VERSIONS` records for that schema (`format_version`;
//! a snapshot's is `schema_version`). SARIF is validated against the OASIS SARIF 2.1.0 schema
//! (`schema/external/sarif-schema-2.1.0.json`, Draft 4, with its formats).
//!
//! [`auto`] recognises a document by its shape; the shared helpers that parse envdoctor's JSON
//! (`cli::json`, `machine::json_on_root`, `fw`, `formats::check`) call it, so every fixture
//! machine and real venv the tests run is also a contract test.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// `schema/`.
pub fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema")
}

/// One line of `schema/VERSIONS`: a schema file, a format version and the sha256 of the file
/// at that version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub file: String,
    pub version: u32,
    pub sha256: String,
}

/// `schema/VERSIONS`, without its comments.
pub fn recorded() -> Vec<Recorded> {
    let text = std::fs::read_to_string(schema_dir().join("VERSIONS")).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3, "schema/VERSIONS: `FILE VERSION SHA256`: {l}");
            Recorded {
                file: f[0].to_string(),
                version: f[1].parse().expect("a version number"),
                sha256: f[2].to_string(),
            }
        })
        .collect()
}

/// The latest version recorded for `file`.
pub fn latest(file: &str) -> Option<u32> {
    recorded()
        .into_iter()
        .filter(|r| r.file == file)
        .map(|r| r.version)
        .max()
}

/// The compiled validator of `schema/<file>`, once per test process.
fn validator(file: &str) -> &'static jsonschema::Validator {
    static CACHE: OnceLock<Mutex<HashMap<String, &'static jsonschema::Validator>>> =
        OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    if let Some(v) = cache.get(file) {
        return v;
    }
    let path = schema_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let schema: Value = serde_json::from_str(&text).expect("a schema is JSON");
    let v = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("schema/{file} is not a valid schema: {e}"));
    let v: &'static jsonschema::Validator = Box::leak(Box::new(v));
    cache.insert(file.to_string(), v);
    v
}

/// Every way `doc` breaks `schema/<file>`: `message @ /instance/path`.
pub fn errors(file: &str, doc: &Value) -> Vec<String> {
    validator(file)
        .iter_errors(doc)
        .map(|e| format!("{e} @ {}", e.instance_path()))
        .collect()
}

/// Panic unless `doc` validates against `schema/<file>` and carries its latest recorded version.
pub fn validate(file: &str, doc: &Value) {
    let errs = errors(file, doc);
    assert!(
        errs.is_empty(),
        "the output breaks schema/{file}:\n  {}",
        errs.iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    if file.starts_with("external/") {
        return;
    }
    let field = if file == "snapshot.schema.json" {
        "schema_version"
    } else {
        "format_version"
    };
    let want = latest(file).unwrap_or_else(|| panic!("schema/VERSIONS has no line for {file}"));
    assert_eq!(
        doc[field],
        Value::from(want),
        "{field} of a {file} document is not the latest version schema/VERSIONS records"
    );
}

/// The schema a document of envdoctor's answers to, from its shape (None: not one of ours, or
/// `diagnose`'s, whose contract its own tests check).
pub fn detect(doc: &Value) -> Option<&'static str> {
    let has = |k: &str| doc.get(k).is_some();
    if has("version") && has("runs") && doc.get("$schema").is_some() {
        Some("external/sarif-schema-2.1.0.json")
    } else if has("inventory") && has("snapshot") && has("findings") {
        Some("check.schema.json")
    } else if has("inventory") && has("facts") {
        Some("report.schema.json")
    } else if has("mode") && has("machines") && has("changes") {
        Some("compare.schema.json")
    } else if has("rules") && has("format_version") {
        Some("rules-list.schema.json")
    } else if has("schema_version") && has("host") {
        Some("snapshot.schema.json")
    } else {
        None
    }
}

/// Validate `doc` if it is one of envdoctor's documents; returns it.
pub fn auto(doc: Value) -> Value {
    if let Some(file) = detect(&doc) {
        validate(file, &doc);
    }
    doc
}
