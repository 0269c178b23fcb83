//! The JSON Schemas checked in under `schema/` (snapshot, rule files, and every JSON output:
//! check, report, compare, diagnose, rules list): how they are rendered, and the test helper that
//! fails when a checked-in copy is stale.
//!
//! Each output carries its format version (`format_version`; a snapshot's is `schema_version`)
//! and `schema/VERSIONS` records the sha256 of each schema at each version, so a schema that
//! changes without a version bump fails `tests/contracts.rs`.

/// The JSON Schema of `T` as it is read (a field with a default is optional), pretty-printed with
/// a trailing newline: for documents envdoctor also reads (snapshots, rule files).
pub fn render<T: schemars::JsonSchema>() -> String {
    let schema = schemars::schema_for!(T);
    pretty(&schema)
}

/// The JSON Schema of `T` as serde writes it (a field skipped when empty is optional, every
/// other field is there): for outputs envdoctor only writes.
pub fn render_output<T: schemars::JsonSchema>() -> String {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    pretty(&generator.into_root_schema_for::<T>())
}

fn pretty(schema: &schemars::Schema) -> String {
    let mut s = serde_json::to_string_pretty(schema).unwrap_or_default();
    s.push('\n');
    s
}

/// Assert that `schema/<file>` equals `fresh`; with `ENVDOCTOR_UPDATE_SCHEMA` set, rewrite it
/// first.
#[cfg(test)]
pub fn assert_current(file: &str, fresh: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(file);
    if std::env::var_os("ENVDOCTOR_UPDATE_SCHEMA").is_some() {
        let _ = std::fs::create_dir_all(path.parent().unwrap_or(&path));
        let _ = std::fs::write(&path, fresh);
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == fresh,
        "schema/{file} is stale: run `ENVDOCTOR_UPDATE_SCHEMA=1 cargo test schema` and commit it"
    );
}
