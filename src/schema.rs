//! The JSON Schemas checked in under `schema/` (snapshot, rule files, compare output): how
//! they are rendered, and the test helper that fails when a checked-in copy is stale.

/// The JSON Schema of `T`, pretty-printed with a trailing newline.
pub fn render<T: schemars::JsonSchema>() -> String {
    let schema = schemars::schema_for!(T);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
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
