//! Every Snapshot field is either seen by `compare` or explicitly ignored, with a reason.
//!
//! `compare` flattens a snapshot with code of its own (`compare::facts`), so a new snapshot
//! field is invisible to it until someone adds it there. This test enumerates every leaf of the
//! snapshot schema (`schema/snapshot.schema.json`, generated from the types), finds each in a
//! corpus of real snapshots (the fixture snapshots and `snapshot --root` of every fixture
//! machine), changes that one value and asks `compare --all` for the difference. A field whose
//! change `compare` does not report, or that no snapshot of the corpus holds, must be listed in
//! [`IGNORED`] with the reason; a field listed there that `compare` does see fails too, so the
//! list stays true.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Schema leaves `compare` does not diff, or that no fixture holds, and why.
///
/// `TODO(coverage)`: no snapshot of the corpus holds the field, so whether `compare` sees it is
/// not known; a fixture that has it removes the entry (the test then says which way it goes).
const IGNORED: &[(&str, &str)] = &[
    ("schema_version", "the format of the file: a snapshot of another is refused, not compared"),
    ("cuda.driver.source", "where the driver version was read, not the driver: the version is compared"),
    ("cuda.toolkits[].aliases", "how the toolkit was reached (/usr/local/cuda links); its path and version are compared"),
    ("cuda.toolkits[].source", "how the toolkit was found; its path and version are compared"),
    ("cuda.toolkits[].version_source", "where the version was read; the version is compared"),
    ("cuda.toolkits[].libraries", "the toolkit's file list; its version is compared and the libraries' resolution is in libraries[]"),
    ("frameworks[].cuda_major", "derived from cuda_version, which is compared"),
    ("frameworks[].cudnn_major", "derived from cudnn_version, which is compared"),
    ("frameworks[].uses_pip_nvidia", "derived from nvidia_requirements and RPATHs; the requirements are compared"),
    ("frameworks[].location", "a path: frameworks are matched by interpreter and name"),
    ("frameworks[].wants[].evidence", "where a wanted soname was read; the sonames are compared"),
    ("frameworks[].wants[].requester", "which object asks; the sonames and how each resolves are compared"),
    ("gpus[].live.foreign_memory_mib", "live usage, minute to minute: the processes holding memory are compared with --all"),
    ("gpus[].live.memory_used_percent", "live usage, minute to minute"),
    ("host.container.evidence", "how the container was detected; the container kind is compared"),
    ("libraries[].family", "derived from the soname, which is the key"),
    ("libraries[].major", "derived from the soname, which is the key"),
    ("libraries[].name_version", "derived from the soname, which is the key"),
    ("libraries[].reason", "why the library was resolved (wanted, transitive); the soname and requester are the key"),
    ("libraries[].wanted_by", "the frameworks asking, compared as frameworks[]"),
    ("libraries[].shadows_framework_copy", "follows from which copy wins, and the winner is compared"),
    ("nvml.reason", "the message behind nvml.status, which is compared"),
    ("pythons[].canonical_path", "a path: interpreters are matched by role across home directories"),
    ("pythons[].prefix", "a path: interpreters are matched by role across home directories"),
    ("pythons[].roles", "the key interpreters are matched by"),
    ("pythons[].include_system_site_packages", "its effect, the packages the interpreter sees, is compared"),
    ("pythons[].sources[].detail", "how the interpreter was found"),
    ("pythons[].sys_path", "the search path: what it yields (packages, their versions) is compared"),
    ("pythons[].shadowed[].hidden[].location", "where a losing copy is; the versions are compared"),
    ("pythons[].shadowed[].hidden[].origin", "where a losing copy is; the versions are compared"),
    ("pythons[].shadowed[].winner.origin", "where the winning copy lives; its version is compared"),
    ("pythons[].packages[].editable", "how it was installed; its version is compared"),
    ("pythons[].packages[].installer", "which tool installed it (pip, uv, conda); its version is compared"),
    ("pythons[].packages[].location", "a path; the version is compared"),
    ("pythons[].packages[].metadata", "a path; the version is compared"),
    ("pythons[].packages[].local", "the local label, part of the version, which is compared"),
    ("pythons[].packages[].version_valid", "derived from the version, which is compared"),
    ("pythons[].packages[].family", "derived from the name"),
    ("pythons[].packages[].requires", "what it requires: the versions of what is installed are compared, check reports unmet ones"),
    ("pythons[].packages[].requires_python", "a bound on the interpreter, whose version is compared"),
    ("pythons[].unmet_requirements", "pip check's verdict, derived from the compared versions; check reports it"),
    ("pythons[].unmet_requirements_omitted", "a count of the above"),
    ("checkpoints[].details", "TODO(coverage): no fixture snapshot holds it"),
    ("checkpoints[].error", "TODO(coverage): no fixture checkpoint is unreadable"),
    ("checkpoints[].saved_model.variables.is_latest", "TODO(coverage): no SavedModel fixture has it"),
    ("checkpoints[].saved_model.variables.meta_tensorflow_version", "TODO(coverage): no SavedModel fixture has it"),
    ("checkpoints[].saved_model.variables.missing_shards", "TODO(coverage): no SavedModel fixture has it"),
    ("checkpoints[].saved_model.variables.optimizer_slots", "TODO(coverage): no SavedModel fixture has it"),
    ("checkpoints[].saved_model.variables.rnn_key_naming", "TODO(coverage): no SavedModel fixture has it"),
    ("checkpoints[].saved_model.variables.rnn_keys", "TODO(coverage): no SavedModel fixture has it"),
    ("checkpoints[].saved_model.variables.short_shards", "TODO(coverage): no SavedModel fixture has it"),
    ("checkpoints[].tf.missing_shards", "TODO(coverage): no fixture checkpoint misses a shard"),
    ("checkpoints[].tf.short_shards", "TODO(coverage): no fixture checkpoint has a short shard"),
    ("cuda.cudnn", "TODO(coverage): no fixture snapshot holds it"),
    ("cuda.driver.libcuda", "TODO(coverage): no fixture snapshot holds it"),
    ("cuda.driver.libcuda_path", "TODO(coverage): no fixture snapshot holds it"),
    ("cuda.inventory", "TODO(coverage): no fixture snapshot holds it"),
    ("cuda.ld_cache", "TODO(coverage): no fixture snapshot holds it"),
    ("expect", "what the run was told to expect (--expect-gpu), not a fact of the machine"),
    ("frameworks[].entry_points", "TODO(coverage): no fixture snapshot holds it"),
    ("frameworks[].evidence", "where each fact was read; the facts are compared"),
    ("frameworks[].local_version", "TODO(coverage): no fixture snapshot holds it"),
    ("frameworks[].nvidia_installed", "TODO(coverage): no fixture snapshot holds it"),
    ("frameworks[].preloads", "TODO(coverage): no fixture snapshot holds it"),
    ("gpus[].live.processes", "TODO(coverage): no fixture snapshot holds it"),
    ("gpus[].mig_devices", "TODO(coverage): no fixture snapshot holds it"),
    ("gpus[].mig_enabled", "TODO(coverage): no fixture snapshot holds it"),
    ("host.arch", "TODO(coverage): no fixture snapshot holds it"),
    ("host.live.shm_free_mib", "TODO(coverage): no fixture snapshot holds it"),
    ("jobs", "TODO(coverage): no fixture snapshot holds a --pid job"),
    ("libraries[].candidates", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].chain", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].elf", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].error", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].file_version", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].found_via", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].load", "TODO(coverage): fixture snapshots are taken with --no-load"),
    ("libraries[].missing_symbol_versions", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].missing_symbols", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].package", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].package_version", "TODO(coverage): no fixture snapshot holds it"),
    ("libraries[].path", "TODO(coverage): no fixture snapshot holds a resolved library"),
    ("libraries[].realpath", "TODO(coverage): no fixture snapshot holds a resolved library"),
    ("libraries[].shadowed_path", "TODO(coverage): no fixture snapshot holds it"),
    ("nvml.library", "TODO(coverage): no fixture snapshot holds it"),
    ("nvml.nvml_version", "TODO(coverage): no fixture snapshot holds it"),
    ("nvml.visible_devices.ignored", "TODO(coverage): no fixture snapshot holds it"),
    ("nvml.visible_devices.order_uncertain", "TODO(coverage): no fixture snapshot holds it"),
    ("nvml.visible_devices.unmatched", "TODO(coverage): no fixture snapshot holds it"),
    ("probe_errors", "TODO(coverage): no fixture snapshot holds one"),
    ("pythons[].conda_env", "TODO(coverage): no fixture snapshot holds it"),
    ("pythons[].ide_drift", "TODO(coverage): no fixture snapshot holds it"),
];

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The values a leaf may take, where the schema lists them (enums).
type Choices = BTreeMap<String, Vec<Value>>;

/// Every leaf path of the schema, as `a.b[].c` (maps as `a.*`), and the enums' values.
fn schema_leaves() -> (BTreeSet<String>, Choices) {
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
    let mut choices = Choices::new();
    walk_schema(&schema, &defs, String::new(), &mut out, &mut choices, 0);
    (out, choices)
}

fn walk_schema(
    s: &Value,
    defs: &Value,
    path: String,
    out: &mut BTreeSet<String>,
    choices: &mut Choices,
    depth: usize,
) {
    if depth > 40 {
        return;
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or(r);
        if let Some(d) = defs.get(name) {
            walk_schema(d, defs, path, out, choices, depth + 1);
        }
        return;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            for a in alts {
                walk_schema(a, defs, path.clone(), out, choices, depth + 1);
            }
            return;
        }
    }
    let listed = s
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .or_else(|| s.get("const").map(|c| vec![c.clone()]));
    if let Some(vals) = listed {
        choices.entry(path.clone()).or_default().extend(vals);
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
            walk_schema(v, defs, join(&path, k), out, choices, depth + 1);
        }
        inner = true;
    }
    if let Some(ap) = s.get("additionalProperties").filter(|v| v.is_object()) {
        walk_schema(ap, defs, join(&path, "*"), out, choices, depth + 1);
        inner = true;
    }
    if let Some(items) = s.get("items") {
        walk_schema(items, defs, format!("{path}[]"), out, choices, depth + 1);
        inner = true;
    }
    if !inner && !path.is_empty() && s.get("type").and_then(Value::as_str) != Some("null") {
        out.insert(path);
    }
}

/// Every leaf of a snapshot value: (schema-style path, JSON pointer).
fn leaves(
    v: &Value,
    path: &str,
    ptr: &str,
    maps: &BTreeSet<String>,
    out: &mut Vec<(String, String)>,
) {
    let join = |p: &str, k: &str| {
        if p.is_empty() {
            k.to_string()
        } else {
            format!("{p}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            let is_map = maps.contains(path);
            for (k, x) in m {
                let seg = if is_map { "*" } else { k.as_str() };
                let p = join(path, seg);
                let esc = k.replace('~', "~0").replace('/', "~1");
                leaves(x, &p, &format!("{ptr}/{esc}"), maps, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, &format!("{path}[]"), &format!("{ptr}/{i}"), maps, out);
            }
        }
        Value::Null => {}
        _ => out.push((path.to_string(), ptr.to_string())),
    }
}

/// The value changed so that it differs: another allowed value of an enum, another string,
/// number or truth value.
fn mutated(v: &Value, allowed: Option<&Vec<Value>>) -> Value {
    if let Some(other) = allowed.and_then(|a| a.iter().find(|x| *x != v)) {
        return other.clone();
    }
    match v {
        Value::String(s) if s.chars().all(|c| c.is_ascii_digit() || c == '.') && !s.is_empty() => {
            Value::String(format!("{s}9"))
        }
        Value::String(s) => Value::String(format!("{s}-changed")),
        Value::Number(n) => match n.as_u64() {
            Some(u) => Value::from(u + 7),
            None => Value::from(n.as_f64().unwrap_or(0.0) + 7.5),
        },
        Value::Bool(b) => Value::Bool(!b),
        other => other.clone(),
    }
}

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

/// How many changes `compare --all` reports between `a` and `b`; `None` when `b` is not a
/// snapshot envdoctor reads.
fn changes(a: &Value, b: &Value) -> Option<usize> {
    let parse = |v: &Value| envdoctor::Snapshot::from_json_fast(&v.to_string(), "x.json");
    let snaps = vec![
        ("a".to_string(), parse(a).unwrap()),
        ("b".to_string(), parse(b).ok()?),
    ];
    let opts = envdoctor::compare::CompareOptions {
        all: true,
        only: Vec::new(),
    };
    Some(
        envdoctor::compare::compare(&snaps, &opts, None)
            .unwrap()
            .changes
            .len(),
    )
}

#[test]
fn every_snapshot_field_is_compared_or_ignored_with_a_reason() {
    let (schema, choices) = schema_leaves();
    assert!(schema.len() > 100, "{} leaves", schema.len());
    let maps: BTreeSet<String> = schema
        .iter()
        .filter_map(|p| p.find(".*").map(|i| p[..i].to_string()))
        .collect();
    // An IGNORED entry covers its path and everything under it.
    let ignored_reason = |leaf: &str| {
        IGNORED.iter().find_map(|(p, r)| {
            (leaf == *p
                || leaf
                    .strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with(['.', '['])))
            .then_some(*r)
        })
    };
    let corpus = corpus();
    assert!(corpus.len() >= 10, "{} snapshots", corpus.len());
    // The first occurrence of each leaf path in the corpus.
    let mut found: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (i, (_, v)) in corpus.iter().enumerate() {
        let mut ls = Vec::new();
        leaves(v, "", "", &maps, &mut ls);
        for (path, ptr) in ls {
            found.entry(path).or_insert((i, ptr));
        }
    }
    let mut problems = Vec::new();
    for leaf in &schema {
        let reason = ignored_reason(leaf);
        let Some((i, ptr)) = found.get(leaf) else {
            if reason.is_none() {
                problems.push(format!("{leaf}: in no snapshot of the corpus (add a fixture that has it, or list it in IGNORED with the reason)"));
            }
            continue;
        };
        let a = &corpus[*i].1;
        let mut b = a.clone();
        let slot = b.pointer_mut(ptr).unwrap();
        *slot = mutated(slot, choices.get(leaf));
        let Some(n) = changes(a, &b) else {
            if reason.is_none() {
                problems.push(format!("{leaf}: no changed value of it is a readable snapshot: list it in IGNORED with the reason"));
            }
            continue;
        };
        let seen = n > 0;
        match (seen, reason) {
            (false, None) => problems.push(format!(
                "{leaf}: changing it ({} {ptr}) makes no compare difference: compare it (src/compare/facts.rs) or list it in IGNORED with the reason",
                corpus[*i].0
            )),
            (true, Some(_)) => problems.push(format!("{leaf}: listed in IGNORED, but compare reports it")),
            _ => {}
        }
    }
    for (p, _) in IGNORED {
        assert!(
            schema.iter().any(|l| l == p || l.starts_with(p)),
            "IGNORED names {p}, which the schema does not have"
        );
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
            if let Some(ap) = s.get("additionalProperties").filter(|x| x.is_object()) {
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
    if std::env::var_os("ENVDOCTOR_RECORD_FACTS").is_some() {
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
