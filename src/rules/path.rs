//! Fact paths (`python.package.torch.version`, `shell.package.(p.name).version`): parsing, and
//! checking them against the Snapshot's JSON Schema so a typo in a rule is a load error.
//!
//! A path is a variable followed by segments. A segment is a field name, or `(VAR.path)`: a key
//! computed from another fact at evaluation time (used after `package`, the accessor that finds a
//! distribution by name on an interpreter). The schema walk ([`SchemaWalker`]) knows the shape of
//! every section, so it can tell which variable holds what and which fields exist.

use serde_json::Value;
use std::sync::OnceLock;

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
pub enum Seg {
    /// A field name (or, after `package`, a distribution name).
    Key(String),
    /// A key computed from another fact.
    Dynamic(Path),
}

/// A parsed fact path.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// The first name: a variable or a top-level section.
    pub var: String,
    /// What follows.
    pub segs: Vec<Seg>,
    /// The path as written.
    pub text: String,
}

impl Path {
    /// Parse `a.b.(c.d).e`.
    pub fn parse(text: &str) -> Result<Path, String> {
        let text = text.trim();
        let mut parts: Vec<String> = Vec::new();
        let mut depth = 0usize;
        let mut cur = String::new();
        for ch in text.chars() {
            match ch {
                '(' => {
                    depth += 1;
                    cur.push(ch);
                }
                ')' => {
                    if depth == 0 {
                        return Err(format!("unbalanced ')' in path `{text}`"));
                    }
                    depth -= 1;
                    cur.push(ch);
                }
                '.' if depth == 0 => parts.push(std::mem::take(&mut cur)),
                _ => cur.push(ch),
            }
        }
        if depth != 0 {
            return Err(format!("unbalanced '(' in path `{text}`"));
        }
        parts.push(cur);
        let mut it = parts.into_iter();
        let var = it.next().unwrap_or_default();
        if !is_name(&var) {
            return Err(format!(
                "path `{text}` must start with a variable or section name"
            ));
        }
        let mut segs = Vec::new();
        for p in it {
            if p.starts_with('(') && p.ends_with(')') && p.len() > 2 {
                segs.push(Seg::Dynamic(Path::parse(&p[1..p.len() - 1])?));
            } else if p.is_empty() || p.contains(['(', ')', ' ', '{', '}']) {
                return Err(format!("bad segment `{p}` in path `{text}`"));
            } else {
                segs.push(Seg::Key(p));
            }
        }
        Ok(Path {
            var,
            segs,
            text: text.to_string(),
        })
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The Snapshot's JSON Schema, parsed once.
pub fn snapshot_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::to_value(schemars::schema_for!(crate::Snapshot)).unwrap_or(Value::Null)
    })
}

/// Walks the Snapshot's JSON Schema: what a node holds, which fields an object has.
#[derive(Clone, Copy)]
pub struct SchemaWalker {
    root: &'static Value,
}

/// A position in the schema (a schema object), or "anything" (`None`: a free-form value, or a
/// place the schema does not describe; nothing below it is checked).
pub type Node = Option<&'static Value>;

impl Default for SchemaWalker {
    fn default() -> Self {
        SchemaWalker {
            root: snapshot_schema(),
        }
    }
}

impl SchemaWalker {
    /// The whole snapshot.
    pub fn top(&self) -> Node {
        Some(self.root)
    }

    /// Follow `$ref`, and `anyOf`/`oneOf` made only of a type and null (how Option is written).
    pub fn deref(&self, node: Node) -> Node {
        let mut node = node?;
        for _ in 0..16 {
            if let Some(r) = node.get("$ref").and_then(Value::as_str) {
                let name = r.strip_prefix("#/$defs/")?;
                node = self.root.get("$defs")?.get(name)?;
                continue;
            }
            let alts = node
                .get("anyOf")
                .or_else(|| node.get("oneOf"))
                .and_then(Value::as_array);
            if let Some(alts) = alts {
                let non_null: Vec<&Value> = alts
                    .iter()
                    .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
                if non_null.len() == 1 {
                    node = non_null[0];
                    continue;
                }
                // An enum of several shapes: do not check below it.
                if non_null.iter().all(|a| a.get("const").is_some()) {
                    return Some(node);
                }
                return None;
            }
            return Some(node);
        }
        None
    }

    /// The element schema of an array node (None when it is not an array or not described).
    pub fn items(&self, node: Node) -> Result<Node, String> {
        let Some(n) = self.deref(node) else {
            return Ok(None);
        };
        if is_type(n, "array") {
            return Ok(self.deref(n.get("items")));
        }
        Err(format!("is not a list (it is {})", describe(n)))
    }

    /// The schema of field `key` of an object node.
    pub fn field(&self, node: Node, key: &str) -> Result<Node, String> {
        let Some(n) = self.deref(node) else {
            return Ok(None);
        };
        if let Some(props) = n.get("properties").and_then(Value::as_object) {
            if let Some(p) = props.get(key) {
                return Ok(self.deref(Some(p)));
            }
            if let Some(extra) = n.get("additionalProperties") {
                if extra.is_object() {
                    return Ok(self.deref(Some(extra)));
                }
            }
            let mut known: Vec<&str> = props.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(format!(
                "has no field `{key}` (fields: {})",
                known.join(", ")
            ));
        }
        if let Some(extra) = n.get("additionalProperties") {
            if extra.is_object() {
                return Ok(self.deref(Some(extra)));
            }
        }
        if is_type(n, "object") {
            return Ok(None);
        }
        Err(format!(
            "has no field `{key}`: it is {}, not an object",
            describe(n)
        ))
    }

    /// Whether an object node is an interpreter (it has a `packages` list): the `package`
    /// accessor applies.
    pub fn has_packages(&self, node: Node) -> bool {
        self.deref(node)
            .and_then(|n| n.get("properties"))
            .and_then(|p| p.get("packages"))
            .is_some()
    }

    /// Walk `segs` from `node`; errors say which segment is wrong. Dynamic segments are walked by
    /// `check_dyn` (they name another fact).
    pub fn walk(
        &self,
        mut node: Node,
        segs: &[Seg],
        check_dyn: &mut dyn FnMut(&Path) -> Result<(), String>,
    ) -> Result<Node, String> {
        let mut i = 0;
        while i < segs.len() {
            match &segs[i] {
                Seg::Key(k) if k == "package" && self.has_packages(node) => {
                    let pkgs = self.field(node, "packages")?;
                    let elem = self.items(pkgs)?;
                    match segs.get(i + 1) {
                        Some(Seg::Key(_)) => {}
                        Some(Seg::Dynamic(p)) => check_dyn(p)?,
                        None => return Err("`package` must be followed by a name".into()),
                    }
                    node = elem;
                    i += 2;
                    continue;
                }
                Seg::Key(k) => {
                    node = self.field(node, k).map_err(|e| format!("`{k}`: {e}"))?;
                }
                Seg::Dynamic(p) => {
                    check_dyn(p)?;
                    node = self.field(node, "*").unwrap_or(None);
                }
            }
            i += 1;
        }
        Ok(node)
    }

    /// Check a JSON value (a test's partial snapshot) against a node: every key must be a known
    /// field. Returns the first unknown field's path.
    pub fn check_value(&self, node: Node, value: &Value, at: &str) -> Result<(), String> {
        let Some(n) = self.deref(node) else {
            return Ok(());
        };
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let child = self.field(Some(n), k).map_err(|e| format!("{at}: {e}"))?;
                    self.check_value(child, v, &format!("{at}.{k}"))?;
                }
                Ok(())
            }
            Value::Array(items) => {
                let elem = self.items(Some(n)).map_err(|e| format!("{at}: {e}"))?;
                for (i, v) in items.iter().enumerate() {
                    self.check_value(elem, v, &format!("{at}[{i}]"))?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

fn is_type(n: &Value, t: &str) -> bool {
    match n.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|x| x.as_str() == Some(t)),
        _ => false,
    }
}

/// One fact path of the snapshot as rules name it (`pythons[].packages[].version`), with its
/// kind and the schema's description (the Rust type's doc comment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactPath {
    /// The path: `[]` after a list, `.NAME` under a map.
    pub path: String,
    /// `a string`, `an object`, `a list`...
    pub kind: String,
    /// The schema's description, on one line; empty when the field has none.
    pub description: String,
}

impl SchemaWalker {
    /// Every fact path of the snapshot, in schema order (`envdoctor rules facts`).
    pub fn fact_paths(&self) -> Vec<FactPath> {
        let mut out = Vec::new();
        self.visit_fields(self.top(), "", &mut out, 0);
        out
    }

    fn visit_fields(&self, node: Node, prefix: &str, out: &mut Vec<FactPath>, depth: usize) {
        let Some(n) = self.deref(node) else {
            return;
        };
        if depth > 12 {
            return;
        }
        if let Some(props) = n.get("properties").and_then(Value::as_object) {
            for (key, raw) in props {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                self.visit_one(raw, path, out, depth + 1);
            }
        } else if let Some(extra) = n.get("additionalProperties").filter(|e| e.is_object()) {
            self.visit_one(extra, format!("{prefix}.NAME"), out, depth + 1);
        }
    }

    fn visit_one(&self, raw: &'static Value, path: String, out: &mut Vec<FactPath>, depth: usize) {
        let node = self.deref(Some(raw));
        let description = raw
            .get("description")
            .or_else(|| node.and_then(|n| n.get("description")))
            .and_then(Value::as_str)
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let Some(n) = node else {
            out.push(FactPath {
                path,
                kind: "a value".into(),
                description,
            });
            return;
        };
        let is_list = is_type(n, "array");
        let kind = if is_list {
            "a list".to_string()
        } else if n.get("properties").is_some() {
            "an object".to_string()
        } else if n.get("additionalProperties").is_some_and(Value::is_object) {
            "a map".to_string()
        } else if n.get("enum").is_some() || n.get("oneOf").is_some() {
            "one of named values".to_string()
        } else {
            scalar_kind(n)
        };
        out.push(FactPath {
            path: path.clone(),
            kind,
            description,
        });
        if is_list {
            let items = self.deref(n.get("items"));
            self.visit_fields(items, &format!("{path}[]"), out, depth);
        } else {
            self.visit_fields(Some(n), &path, out, depth);
        }
    }
}

/// `a string`, `an integer`, `a boolean or a string`: the node's types without `null` (a
/// missing fact is how rules see a null).
fn scalar_kind(n: &Value) -> String {
    let types: Vec<&str> = match n.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let named: Vec<String> = types
        .into_iter()
        .filter(|t| *t != "null")
        .map(|t| match t {
            "integer" | "object" | "array" => format!("an {t}"),
            _ => format!("a {t}"),
        })
        .collect();
    if named.is_empty() {
        "a value".into()
    } else {
        named.join(" or ")
    }
}

fn describe(n: &Value) -> String {
    match n.get("type") {
        Some(Value::String(s)) => format!("a {s}"),
        Some(Value::Array(a)) => {
            let ts: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            format!("a {}", ts.join(" or "))
        }
        _ => "a value".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fact_paths_name_every_field_with_its_description() {
        let all = SchemaWalker::default().fact_paths();
        let get = |p: &str| all.iter().find(|f| f.path == p);
        let v = get("pythons[].packages[].version").expect("package version listed");
        assert!(!v.description.is_empty() && v.kind == "a string", "{v:?}");
        let fam = get("pythons[].packages[].family").expect("family listed");
        assert!(fam.description.contains("tensorflow"), "{fam:?}");
        assert_eq!(get("pythons").map(|f| f.kind.as_str()), Some("a list"));
        assert!(get("libraries[].needed_at").is_some());
        assert!(get("pythons[].sources[].path_entry").is_some());
        assert!(get("env.NAME").is_some(), "maps are listed under NAME");
        // Every path is listed once.
        let mut paths: Vec<&str> = all.iter().map(|f| f.path.as_str()).collect();
        paths.sort_unstable();
        let n = paths.len();
        paths.dedup();
        assert_eq!(n, paths.len());
        assert!(n > 300, "{n} paths");
    }

    #[test]
    fn parses_plain_and_dynamic_segments() {
        let p = Path::parse("shell.package.(p.name).version").unwrap();
        assert_eq!(p.var, "shell");
        assert_eq!(p.segs.len(), 3);
        assert!(matches!(&p.segs[1], Seg::Dynamic(d) if d.var == "p"));
        assert!(Path::parse("a.(b").is_err());
        assert!(Path::parse("a..b").is_err());
        assert!(Path::parse(".a").is_err());
        let p = Path::parse("env.TF_FORCE_GPU_ALLOW_GROWTH").unwrap();
        assert_eq!(p.segs, vec![Seg::Key("TF_FORCE_GPU_ALLOW_GROWTH".into())]);
    }

    fn walk(path: &str) -> Result<Node, String> {
        let w = SchemaWalker::default();
        let p = Path::parse(path).unwrap();
        let start = w.field(w.top(), &p.var)?;
        w.walk(start, &p.segs, &mut |_| Ok(()))
    }

    #[test]
    fn the_schema_knows_every_section() {
        assert!(walk("host.cpu_flags").is_ok());
        assert!(walk("env.ANYTHING").is_ok());
        assert!(walk("gpus").is_ok());
        let e = walk("host.cpu_flag").unwrap_err();
        assert!(
            e.contains("no field `cpu_flag`") && e.contains("cpu_flags"),
            "{e}"
        );
        assert!(walk("nosuch").is_err());
    }

    #[test]
    fn package_accessor_and_list_items() {
        let w = SchemaWalker::default();
        let pys = w.field(w.top(), "pythons").unwrap();
        let py = w.items(pys).unwrap();
        let p = Path::parse("python.package.torch.version").unwrap();
        assert!(w.walk(py, &p.segs, &mut |_| Ok(())).is_ok());
        let p = Path::parse("python.package.torch.verison").unwrap();
        assert!(w.walk(py, &p.segs, &mut |_| Ok(())).is_err());
        let p = Path::parse("python.packages").unwrap();
        let pk = w.walk(py, &p.segs, &mut |_| Ok(())).unwrap();
        assert!(w.items(pk).unwrap().is_some());
    }

    #[test]
    fn test_facts_are_checked_for_unknown_keys() {
        let w = SchemaWalker::default();
        let good = serde_json::json!({"pythons": [{"path": "/p", "packages": [{"name": "a", "version": "1"}]}]});
        assert!(w.check_value(w.top(), &good, "facts").is_ok());
        let bad = serde_json::json!({"pythons": [{"path": "/p", "pakages": []}]});
        let e = w.check_value(w.top(), &bad, "facts").unwrap_err();
        assert!(
            e.contains("facts.pythons[0]") && e.contains("pakages"),
            "{e}"
        );
    }
}
