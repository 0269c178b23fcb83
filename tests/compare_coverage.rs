//! Every Snapshot field is either compared by `compare` or explicitly ignored, with a reason.
//!
//! `compare` flattens a snapshot by walking its JSON, driven by a table of rules
//! (`src/compare/table.rs`): a field no rule names is compared as it is, a field that must not
//! be compared is named in the table with the reason. This test enumerates every leaf of the
//! snapshot schema (`schema/snapshot.schema.json`, generated from the types) and asks the walk
//! which leaves it reads across a corpus: the fixture snapshots, `snapshot --root` of every
//! fixture machine, the checkpoint fixtures, and snapshots made from the schema that hold every
//! field. A leaf neither reached nor ignored (a field under a rule of its own code that the
//! table does not name), or both, fails; so does a rule naming a path the schema lacks.
//! The facts themselves are held to `tests/golden/compare/facts.txt`.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Every leaf path of the schema, as `a.b[].c` (maps as `a.*`).
fn schema_leaves() -> BTreeSet<String> {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo("schema/snapshot.schema.json")).unwrap(),
    )
    .unwrap();
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut out = BTreeSet::new();
    walk_schema(&schema, &defs, String::new(), &mut out, 0);
    out
}

/// The leaves of the schema `s` at `path` (references looked up in `defs`).
fn walk_schema(s: &Value, defs: &Value, path: String, out: &mut BTreeSet<String>, depth: usize) {
    if depth > 40 {
        return;
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or(r);
        if let Some(d) = defs.get(name) {
            walk_schema(d, defs, path, out, depth + 1);
        }
        return;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            for a in alts {
                walk_schema(a, defs, path.clone(), out, depth + 1);
            }
            return;
        }
    }
    let join = |p: &str, k: &str| {
        if p.is_empty() {
            k.to_string()
        } else {
            format!("{p}.{k}")
        }
    };
    let mut inner = false;
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            walk_schema(v, defs, join(&path, k), out, depth + 1);
        }
        inner = true;
    }
    if let Some(ap) = s.get("additionalProperties").filter(|v| v.is_object()) {
        walk_schema(ap, defs, join(&path, "*"), out, depth + 1);
        inner = true;
    }
    if let Some(items) = s.get("items") {
        walk_schema(items, defs, format!("{path}[]"), out, depth + 1);
        inner = true;
    }
    if !inner && !path.is_empty() && s.get("type").and_then(Value::as_str) != Some("null") {
        out.insert(path);
    }
}

/// The real snapshots: the fixture snapshots, `snapshot --root` of every fixture machine, and
/// the checkpoint fixtures spliced into the first.
fn corpus() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for dir in ["fixtures/snapshots/compare"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(repo(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for p in files {
            if p.extension().is_some_and(|x| x == "json") {
                let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                out.push((p.display().to_string(), v));
            }
        }
    }
    let mut machines: Vec<PathBuf> = std::fs::read_dir(repo("fixtures/machines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("root").is_dir() || p.is_dir())
        .collect();
    machines.sort();
    for m in machines {
        let root = if m.join("root").is_dir() {
            m.join("root")
        } else {
            m.clone()
        };
        let out_json = Command::new(env!("CARGO_BIN_EXE_envdoctor"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["snapshot", "--no-load", "--root"])
            .arg(&root)
            .output()
            .unwrap();
        if let Ok(v) = serde_json::from_slice::<Value>(&out_json.stdout) {
            out.push((m.display().to_string(), v));
        }
    }
    // The checkpoint fixtures (real files written by the frameworks), spliced into a fixture
    // snapshot so that nothing of this machine enters the corpus.
    let host = Command::new(env!("CARGO_BIN_EXE_envdoctor"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["snapshot", "--no-load", "--deadline", "30", "--checkpoint"])
        .arg(repo("fixtures/checkpoints"))
        .output()
        .unwrap();
    let host: Value = serde_json::from_slice(&host.stdout).unwrap();
    let mut with_ckpts = out[0].1.clone();
    with_ckpts["checkpoints"] = host["checkpoints"].clone();
    assert!(with_ckpts["checkpoints"]
        .as_array()
        .is_some_and(|c| c.len() >= 10));
    out.push(("fixtures/checkpoints".into(), with_ckpts));
    out
}

/// `path` written as the schema writes it: a map's keys as `*`.
fn schema_path(path: &str, maps: &BTreeSet<String>) -> String {
    maps.iter()
        .find(|m| {
            path.strip_prefix(m.as_str())
                .is_some_and(|r| r.starts_with('.'))
        })
        .map_or_else(|| path.to_string(), |m| format!("{m}.*"))
}

#[test]
fn every_snapshot_field_is_compared_or_ignored_with_a_reason() {
    use envdoctor::compare::facts::{ignored, reached, rule_paths};
    let schema = schema_leaves();
    assert!(schema.len() > 100, "{} leaves", schema.len());
    let maps: BTreeSet<String> = schema
        .iter()
        .filter_map(|p| p.find(".*").map(|i| p[..i].to_string()))
        .collect();
    let under = |leaf: &str, p: &str| {
        leaf.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    };
    let mut problems = Vec::new();
    for p in rule_paths() {
        if !schema.iter().any(|l| under(l, p)) {
            problems.push(format!(
                "{p}: a rule of src/compare/table.rs names it, but the schema has no such field"
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (_, snap) in flatten_corpus() {
        let labels = envdoctor::compare::matching::match_interpreters(&[&snap]).labels[0].clone();
        seen.extend(
            reached(&snap, &labels)
                .iter()
                .map(|p| schema_path(p, &maps)),
        );
    }
    for leaf in &schema {
        // A free-form leaf (`details`) is reached where a path under it is.
        let is_reached = seen.iter().any(|p| under(leaf, p) || under(p, leaf));
        match (is_reached, ignored(leaf)) {
            (false, None) => problems.push(format!(
                "{leaf}: compare does not read it: name it in src/compare/table.rs (a rule, `used` by its parent's rule, or `ignore` with the reason)"
            )),
            (true, Some(_)) => problems.push(format!("{leaf}: ignored in src/compare/table.rs, but the walk reads it")),
            _ => {}
        }
    }
    assert!(
        problems.is_empty(),
        "{} fields:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// A snapshot holding every field of the schema, made from the schema itself: variant 0 with
/// every list's items alike (duplicate keys), false truth values and the first enum value;
/// variant 1 with items apart, true values, the next enum values and home-directory paths.
fn synth(s: &Value, defs: &Value, path: &str, v: usize, depth: usize) -> Value {
    if depth > 40 {
        return Value::Null;
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or(r);
        return synth(&defs[name], defs, path, v, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            let alts: Vec<&Value> = alts
                .iter()
                .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            return synth(alts[v % alts.len()], defs, path, v, depth + 1);
        }
    }
    if let Some(vals) = s.get("enum").and_then(Value::as_array) {
        return vals[v % vals.len()].clone();
    }
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    let ty = match s.get("type") {
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_string(),
        Some(Value::String(t)) => t.clone(),
        _ if s.get("properties").is_some() => "object".into(),
        _ => "null".into(),
    };
    let leaf = path.rsplit(['.', '[']).next().unwrap_or(path);
    match ty.as_str() {
        "object" => {
            let mut m = serde_json::Map::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, x) in props {
                    m.insert(
                        k.clone(),
                        synth(x, defs, &format!("{path}.{k}"), v, depth + 1),
                    );
                }
            }
            // A map: two keys; a free-form record (`true`): two text fields.
            let text = serde_json::json!({"type": "string"});
            let ap = match s.get("additionalProperties") {
                Some(Value::Bool(true)) => Some(&text),
                other => other.filter(|x| x.is_object()),
            };
            if let Some(ap) = ap {
                for k in ["CUDA_HOME", "PAGER"] {
                    m.insert(
                        k.into(),
                        synth(ap, defs, &format!("{path}.{k}"), v, depth + 1),
                    );
                }
            }
            Value::Object(m)
        }
        "array" => {
            let item = s.get("items").cloned().unwrap_or(Value::Null);
            let a: Vec<Value> = (0..2)
                .map(|i| synth(&item, defs, &format!("{path}[{}]", i * v), v, depth + 1))
                .collect();
            Value::Array(a)
        }
        "string" if v == 0 => Value::String(leaf.to_string()),
        "string" => Value::String(format!("/home/u/{}", path.trim_start_matches('.'))),
        "integer" => Value::from(3 + v as u64),
        "number" => Value::from(1.5 + v as f64),
        "boolean" => Value::Bool(v == 1),
        _ => Value::Null,
    }
}

/// The synthetic snapshots: [`synth`]'s two variants, and variant 1 with interpreters that
/// frameworks and libraries name, a venv, and NVML up with no GPU.
fn synthetic() -> Vec<(String, Value)> {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo("schema/snapshot.schema.json")).unwrap(),
    )
    .unwrap();
    let defs = schema["$defs"].clone();
    let mut out = Vec::new();
    for v in 0..2 {
        let mut s = synth(&schema, &defs, "", v, 0);
        s["schema_version"] = Value::from(1);
        s.as_object_mut().unwrap().remove("expect");
        out.push((format!("synthetic-{v}"), s));
    }
    let mut s = out[1].1.clone();
    let py = s["pythons"][0]["path"].clone();
    s["pythons"][0]["kind"] = Value::from("venv");
    s["frameworks"][0]["python"] = py.clone();
    s["libraries"][0]["python"] = py;
    s["libraries"][1]["python"] = Value::Null;
    s["nvml"]["status"] = Value::from("ok");
    s["gpus"] = Value::Array(Vec::new());
    s["host"]["wsl"] = Value::Bool(false);
    s["pythons"][1]["shadowed"][0]["name"] = s["pythons"][1]["packages"][1]["name"].clone();
    s["pythons"][1]["shadowed"][0]["winner"]["location"] =
        s["pythons"][1]["packages"][1]["location"].clone();
    s["pythons"][1]["packages"][1]["name"] = s["pythons"][1]["packages"][0]["name"].clone();
    s["pythons"][1]["shadowed"][0]["name"] = s["pythons"][1]["packages"][0]["name"].clone();
    out.push(("synthetic-2".into(), s));
    out
}

/// Every snapshot the facts golden covers, with this checkout's path and the collection time
/// written the same everywhere.
fn flatten_corpus() -> Vec<(String, envdoctor::Snapshot)> {
    let here = repo("").display().to_string();
    let here = here.trim_end_matches('/').to_string();
    let mut all = corpus();
    all.extend(synthetic());
    all.into_iter()
        .map(|(name, mut v)| {
            v["collected_at"] = Value::from("2026-01-01T00:00:00Z");
            let text = v.to_string().replace(&here, "/repo");
            let name = name.replace(&here, "/repo");
            let snap = envdoctor::Snapshot::from_json_fast(&text, &name)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, snap)
        })
        .collect()
}

/// The facts of every corpus snapshot, as text: each fact's Debug form, for several options.
fn flattened_text() -> String {
    use envdoctor::compare::facts::{flatten, FlattenOptions};
    use envdoctor::compare::Section;
    use std::fmt::Write;
    let mut out = String::new();
    let onlys: [&[Section]; 4] = [
        &[],
        &[Section::Packages],
        &[Section::Gpus],
        &[Section::Pythons],
    ];
    for (name, snap) in flatten_corpus() {
        let labels = envdoctor::compare::matching::match_interpreters(&[&snap]).labels[0].clone();
        for all in [true, false] {
            for only in onlys {
                let flat = flatten(&snap, &labels, None, &FlattenOptions { all, only });
                let mut text = String::new();
                for f in &flat.facts {
                    let _ = writeln!(
                        text,
                        "{:?} = {:?} {:?} ml={} verdict={} {:?} scope={:?} note={:?}",
                        f.key, f.value, f.section, f.ml, f.verdict, f.kind, f.scope, f.note
                    );
                }
                let mut ents: Vec<&String> = flat.entities.iter().collect();
                ents.sort();
                let _ = writeln!(text, "entities: {ents:?}");
                let _ = writeln!(out, "## {name} all={all} only={only:?}");
                if only.is_empty() {
                    out.push_str(&text);
                } else {
                    // The filtered runs as a digest of their text: the file stays small.
                    let digest = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
                    });
                    let n = flat.facts.len();
                    let _ = writeln!(out, "{n} facts, digest {digest:016x}");
                }
            }
        }
    }
    out
}

/// `compare::facts::flatten` gives the facts recorded in `tests/golden/compare/facts.txt` for
/// every corpus snapshot and the synthetic ones that hold every schema field.
#[test]
fn flatten_gives_the_recorded_facts() {
    let got = flattened_text();
    let path = repo("tests/golden/compare/facts.txt");
    if std::env::var_os("ENVDOCTOR_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    if got != want {
        let diff = got
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (g, w))| g != w)
            .map(|(i, (g, w))| format!("line {}:\n got  {g}\n want {w}", i + 1))
            .unwrap_or_else(|| {
                format!(
                    "{} lines, want {}",
                    got.lines().count(),
                    want.lines().count()
                )
            });
        panic!("flatten's facts differ from tests/golden/compare/facts.txt: {diff}");
    }
}
