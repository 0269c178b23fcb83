//! The walk of a snapshot's JSON that the table (`table.rs`) drives: each record's fields in
//! the table's order, then the fields no rule names, compared as they are. What data cannot say
//! (the package `import` sees, the GPU count, keys made of several fields) is the few functions
//! at the end, which the table names.

use super::{Fact, FlattenOptions};
use crate::compare::packages::{is_ml_package, ValueKind};
use crate::compare::{homeless, Section};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A rule's own code: the walk, the field's value (`Null` when absent), its record, its place.
pub(crate) type Custom = fn(&mut Walk, &Value, &Value, &At);
/// A list record's name and, when it has one, the scope of the facts under it.
pub(crate) type IdFn = fn(&Value, &Walk) -> (String, Option<String>);
/// An entity's display note.
pub(crate) type NoteFn = fn(&Value) -> String;

/// What a rule does with the value at its path.
#[derive(Clone, Copy)]
pub(crate) enum How {
    /// Not compared, and why.
    Ignore(&'static str),
    /// Read by the rule above it (a list's identity, a plucked field, a custom rule's input).
    Used,
    /// Compared as it is.
    Value,
    /// `"true"` when true, nothing when false.
    IfTrue,
    /// A list's length; `always`: even when empty.
    Count { always: bool },
    /// One field of each record of a list, joined with `, `; `sorted`: sorted and deduplicated.
    Pluck { field: &'static str, sorted: bool },
    /// A list of scalars joined with this separator, even when empty.
    Joined(&'static str),
    /// A record whose fields have rules of their own; `inline`: their keys hang off the
    /// parent's key rather than this field's.
    Object { inline: bool },
    /// A list of records, each named by its identity.
    List(List),
    /// Code of its own (the functions at the end of `walk.rs`), for what data cannot say.
    Custom(Custom),
}

/// How a list's records are named.
#[derive(Clone, Copy)]
pub(crate) enum Id {
    /// By the interpreter label `compare` matched (`labels[i]`).
    Label,
    /// By a field's text; `true`: home directories written `~`.
    Field(&'static str, bool),
    /// By code: the name, and the scope of the facts under it when it has one.
    Custom(IdFn),
}

/// A list of records.
#[derive(Clone, Copy)]
pub(crate) struct List {
    /// How each record is named (`key[name]`).
    pub id: Id,
    /// A name seen before gets `#2`, `#3`, ... appended.
    pub dedup: bool,
    /// Each record is an entity: a `present` fact of its own, and the scope of its facts.
    pub entity: bool,
    /// The entity fact's display note.
    pub note: Option<NoteFn>,
    /// Each record is one fact: this field's value under the record's name.
    pub one: Option<&'static str>,
}

/// One rule: a schema path and what is made of its value. Section, rank and scope are the
/// parent's unless the rule sets them.
#[derive(Clone, Copy)]
pub(crate) struct Rule {
    /// The schema path (`pythons[].version`).
    pub path: &'static str,
    /// What is made of the value.
    pub how: How,
    /// The section of its facts, when not its parent's.
    pub section: Option<Section>,
    /// Whether its facts are ML-relevant, when not as its parent's.
    pub ml: Option<bool>,
    /// How its values compare.
    pub kind: ValueKind,
    /// Volatile or machine identity: emitted only with `--all`.
    pub volatile: bool,
    /// Home directories written `~`.
    pub homeless: bool,
    /// The last part of its key, when not the field's name.
    pub rename: Option<&'static str>,
    /// Only when the sibling field (first) has this text value (second).
    pub when: Option<(&'static str, &'static str)>,
}

/// Where the walk is: the key and schema path of the value, and what its facts inherit.
#[derive(Clone)]
pub(crate) struct At {
    key: String,
    path: String,
    section: Section,
    ml: bool,
    kind: ValueKind,
    scope: Option<String>,
    volatile: bool,
    homeless: bool,
}

/// `a.b`, or `b` when `a` is empty.
fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

impl At {
    /// The snapshot itself.
    fn root() -> At {
        At {
            key: String::new(),
            path: String::new(),
            section: Section::Meta,
            ml: false,
            kind: ValueKind::Text,
            scope: None,
            volatile: false,
            homeless: false,
        }
    }

    /// A field no rule names: keyed by its name, everything else inherited.
    fn field(&self, name: &str) -> At {
        At {
            key: join(&self.key, name),
            path: join(&self.path, name),
            kind: ValueKind::Text,
            homeless: false,
            ..self.clone()
        }
    }

    /// The field a rule names, with what the rule sets.
    fn under(&self, r: &Rule) -> At {
        let name = r.rename.unwrap_or_else(|| field_name(r.path));
        At {
            key: join(&self.key, name),
            path: r.path.to_string(),
            section: r.section.unwrap_or(self.section),
            ml: r.ml.unwrap_or(self.ml),
            kind: r.kind,
            scope: self.scope.clone(),
            volatile: self.volatile || r.volatile,
            homeless: r.homeless,
        }
    }
}

/// The last field of a schema path (`version` of `pythons[].version`).
fn field_name(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// The schema path a rule's field belongs to (`pythons[]` of `pythons[].version`).
fn parent_path(path: &str) -> &str {
    path.rsplit_once('.').map_or("", |(p, _)| p)
}

/// The rules of `rules` for the fields of the record at `path`, in table order.
fn children<'p>(rules: &'static [Rule], path: &'p str) -> impl Iterator<Item = &'static Rule> + 'p {
    rules.iter().filter(move |r| parent_path(r.path) == path)
}

/// A field's text: a string as it is, anything else as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A string field of a record, `""` when absent.
fn str_of<'v>(v: &'v Value, field: &str) -> &'v str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The walk's state: the facts so far, the entities seen, and what names interpreters.
pub(crate) struct Walk<'a> {
    /// The facts, in emission order.
    pub facts: Vec<Fact>,
    /// Keys of the entities present.
    pub entities: HashSet<String>,
    opts: &'a FlattenOptions<'a>,
    rules: &'static [Rule],
    labels: &'a [String],
    label_of: HashMap<&'a str, &'a str>,
    /// The typed interpreters by path (their packages are not in the walked JSON).
    pythons: HashMap<&'a str, &'a crate::snapshot::python::Python>,
    /// The schema paths whose values the walk read (only when asked for).
    pub reached: Option<BTreeSet<String>>,
}

impl<'a> Walk<'a> {
    /// A walk of `snap` by `rules`, its interpreters named `labels`.
    pub fn new(
        rules: &'static [Rule],
        snap: &'a crate::Snapshot,
        labels: &'a [String],
        opts: &'a FlattenOptions<'a>,
    ) -> Self {
        Walk {
            facts: Vec::with_capacity(
                64 + snap.pythons.iter().map(|p| p.packages.len()).sum::<usize>(),
            ),
            entities: HashSet::new(),
            opts,
            rules,
            labels,
            label_of: snap
                .pythons
                .iter()
                .zip(labels)
                .map(|(p, l)| (p.path.as_str(), l.as_str()))
                .collect(),
            pythons: snap.pythons.iter().map(|p| (p.path.as_str(), p)).collect(),
            reached: None,
        }
    }

    /// Walk the snapshot's JSON.
    pub fn run(&mut self, snap: &Value) {
        self.object(snap, &At::root());
    }

    /// Whether facts of this section are kept (`--only`).
    pub fn keep(&self, s: Section) -> bool {
        self.opts.only.is_empty() || self.opts.only.contains(&s)
    }

    /// Push a fact at `at`.
    fn push(&mut self, at: &At, value: String) {
        if !self.keep(at.section) {
            return;
        }
        self.facts.push(Fact {
            key: at.key.clone(),
            value,
            section: at.section,
            ml: at.ml,
            verdict: at.section == Section::Verdicts,
            kind: at.kind,
            scope: at.scope.clone(),
            note: None,
        });
    }

    /// Note that the walk read the value at this schema path.
    fn reach(&mut self, path: &str) {
        if let Some(r) = &mut self.reached {
            r.insert(path.to_string());
        }
    }

    /// Note the fields a rule reads for its parent (its [`How::Used`] rules).
    fn reach_used(&mut self, r: &Rule) {
        if self.reached.is_none() {
            return;
        }
        for u in self.rules.iter().filter(|u| matches!(u.how, How::Used)) {
            if u.path
                .strip_prefix(r.path)
                .is_some_and(|rest| rest.starts_with(['.', '[']))
            {
                self.reach(u.path);
            }
        }
    }

    /// A record: the fields the table names, in its order, then the others as they are.
    fn object(&mut self, v: &Value, at: &At) {
        let Some(m) = v.as_object() else {
            return self.value(v, at);
        };
        for r in children(self.rules, &at.path) {
            self.apply(r, m.get(field_name(r.path)), v, at);
        }
        for (k, x) in m {
            if !children(self.rules, &at.path).any(|r| field_name(r.path) == k) {
                self.value(x, &at.field(k));
            }
        }
    }

    /// One rule on its field's value `x` (of the record `parent`, at `at`).
    fn apply(&mut self, r: &Rule, x: Option<&Value>, parent: &Value, at: &At) {
        if matches!(r.how, How::Ignore(_) | How::Used) {
            return;
        }
        if let Some((f, want)) = r.when {
            if parent.get(f).and_then(Value::as_str) != Some(want) {
                return;
            }
        }
        let here = at.under(r);
        if here.volatile && !self.opts.all {
            return;
        }
        let x = x.unwrap_or(&Value::Null);
        if let How::Custom(f) = r.how {
            self.reach_used(r);
            return f(self, x, parent, &here);
        }
        if x.is_null() {
            return;
        }
        self.reach_used(r);
        match r.how {
            How::Value => self.value(x, &here),
            How::Object { inline } => {
                let mut here = here;
                if inline {
                    here.key = at.key.clone();
                }
                self.object(x, &here)
            }
            How::List(l) => self.list(&l, x, &here),
            _ => self.shaped(r, x, &here),
        }
    }

    /// The rules that shape a value into one fact: [`How::IfTrue`], [`How::Count`],
    /// [`How::Pluck`], [`How::Joined`].
    fn shaped(&mut self, r: &Rule, x: &Value, at: &At) {
        let items = x.as_array().map(Vec::as_slice).unwrap_or_default();
        match r.how {
            How::IfTrue => {
                self.reach(&at.path);
                if x.as_bool() == Some(true) {
                    self.push(at, "true".into());
                }
            }
            How::Count { always } => {
                if !items.is_empty() && items.iter().all(|i| !i.is_object()) {
                    self.reach(&at.path);
                }
                if always || !items.is_empty() {
                    self.push(at, items.len().to_string());
                }
            }
            How::Pluck { field, sorted } => {
                let mut got: Vec<String> = items.iter().map(|i| text(&i[field])).collect();
                if sorted {
                    got.sort();
                    got.dedup();
                }
                if !got.is_empty() {
                    self.push(at, got.join(", "));
                }
            }
            How::Joined(sep) => {
                self.reach(&at.path);
                let got: Vec<String> = items.iter().map(text).collect();
                self.push(at, got.join(sep));
            }
            _ => {}
        }
    }

    /// A value no rule shapes: scalars as text, lists of scalars joined, lists of records as
    /// their count and a digest (one changed tensor shape shows without listing thousands of
    /// tensors), records field by field.
    fn value(&mut self, v: &Value, at: &At) {
        match v {
            Value::Null => {}
            Value::Object(_) => self.object(v, at),
            Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
                self.reach(&at.path);
                if !a.is_empty() {
                    let items: Vec<String> = a.iter().map(text).collect();
                    self.push(at, items.join(", "));
                }
            }
            Value::Array(a) => {
                self.reach(&at.path);
                let digest = v
                    .to_string()
                    .bytes()
                    .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
                    });
                self.push(at, format!("{} entries (digest {digest:016x})", a.len()));
            }
            Value::String(s) => {
                self.reach(&at.path);
                let s = if at.homeless { homeless(s) } else { s.clone() };
                self.push(at, s);
            }
            other => {
                self.reach(&at.path);
                self.push(at, other.to_string());
            }
        }
    }

    /// A list of records, each named by the list's identity (`key[name]`).
    fn list(&mut self, l: &List, x: &Value, at: &At) {
        let Some(items) = x.as_array() else { return };
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            let (id, scope) = match l.id {
                Id::Label => match self.labels.get(i) {
                    Some(label) => (label.clone(), None),
                    None => break,
                },
                Id::Field(f, true) => (homeless(&text(&item[f])), None),
                Id::Field(f, false) => (text(&item[f]), None),
                Id::Custom(f) => f(item, self),
            };
            let mut key = format!("{}[{id}]", at.key);
            if l.dedup {
                let n = seen.entry(key.clone()).or_insert(0);
                *n += 1;
                if *n > 1 {
                    key = format!("{key}#{n}");
                }
            }
            let mut here = At {
                key,
                path: format!("{}[]", at.path),
                scope: scope.or_else(|| at.scope.clone()),
                ..at.clone()
            };
            if l.entity {
                self.entity(l, item, &here, &at.path);
                here.scope = Some(here.key.clone());
            }
            match l.one {
                Some(f) => self.value(&item[f], &here),
                None => {
                    here.kind = ValueKind::Text;
                    here.homeless = false;
                    self.object(item, &here)
                }
            }
        }
    }

    /// An entity (an interpreter, a toolkit, a GPU, a checkpoint): facts under it are compared
    /// only where it exists on both sides; its own `present` fact is kept with any section of
    /// the facts under it.
    fn entity(&mut self, l: &List, item: &Value, at: &At, list_path: &str) {
        self.entities.insert(at.key.clone());
        let inner = format!("{list_path}[]");
        let kept = self.keep(at.section)
            || self
                .rules
                .iter()
                .filter(|r| r.path.starts_with(&inner))
                .filter_map(|r| r.section)
                .any(|s| self.keep(s));
        if kept {
            self.facts.push(Fact {
                key: at.key.clone(),
                value: "present".into(),
                section: at.section,
                ml: at.ml,
                verdict: false,
                kind: ValueKind::Text,
                scope: None,
                note: l.note.map(|f| f(item)),
            });
        }
    }

    /// An interpreter's label, or its path (home written `~`) when it has none.
    fn py_label(&self, p: &str) -> String {
        self.label_of
            .get(p)
            .map(|l| l.to_string())
            .unwrap_or_else(|| homeless(p))
    }

    /// The scope of facts about the interpreter at `p`, when it is one of this snapshot's.
    fn py_scope(&self, p: &str) -> Option<String> {
        self.label_of
            .contains_key(p)
            .then(|| format!("pythons[{}]", self.py_label(p)))
    }
}

/// `env`: each allowlisted variable, home directories written `~`; CUDA, NCCL, XLA, TF, torch
/// and the loader's variables rank as ML-relevant.
pub(crate) fn env(w: &mut Walk, x: &Value, _: &Value, at: &At) {
    w.reach(&format!("{}.*", at.path));
    let Some(m) = x.as_object() else { return };
    for (k, v) in m {
        let mut here = at.field(k);
        here.ml = env_is_ml(k);
        w.push(&here, homeless(&text(v)));
    }
}

/// Whether an environment variable matters to ML jobs.
fn env_is_ml(name: &str) -> bool {
    const P: &[&str] = &[
        "CUDA",
        "NVIDIA_",
        "NCCL_",
        "XLA_",
        "TF_",
        "TORCH",
        "PYTORCH_",
        "JAX_",
        "CUDNN",
        "LD_",
        "HF_",
        "TRANSFORMERS_",
        "OMP_",
        "MKL_",
    ];
    P.iter().any(|p| name.starts_with(p))
}

/// `pythons[].packages`: one fact per name, the copy `import` sees (shadowed copies are their
/// own fact). Packages are sorted by name; the winner is the first of its name unless
/// `shadowed` names another location (what `Python::package` does, without its linear scans).
/// Read from the typed interpreter: the walked JSON leaves packages out (`walked_value`).
pub(crate) fn packages(w: &mut Walk, _: &Value, py: &Value, at: &At) {
    let Some(typed) = w.pythons.get(str_of(py, "path")).copied() else {
        return;
    };
    let pkgs = &typed.packages;
    let winners: HashMap<&str, &str> = typed
        .shadowed
        .iter()
        .map(|s| (s.name.as_str(), s.winner.location.as_str()))
        .collect();
    let mut last: Option<&str> = None;
    for (i, p) in pkgs.iter().enumerate() {
        let name = p.name.as_str();
        if last == Some(name) {
            continue;
        }
        last = Some(name);
        let win = match winners.get(name) {
            Some(loc) => pkgs[i..]
                .iter()
                .take_while(|q| q.name == name)
                .find(|q| q.location == *loc)
                .unwrap_or(p),
            None => p,
        };
        let mut here = at.clone();
        here.key = format!("{}[{name}]", at.key);
        here.ml = is_ml_package(name);
        here.kind = if win.version_valid {
            ValueKind::Pep440
        } else {
            ValueKind::Text
        };
        w.push(&here, win.version.clone());
    }
}

/// `pythons[].shadowed`: per name, the winner's version and the versions it hides.
pub(crate) fn shadowed(w: &mut Walk, x: &Value, _: &Value, at: &At) {
    for s in x.as_array().map(Vec::as_slice).unwrap_or_default() {
        let name = str_of(s, "name");
        let hidden: Vec<&str> = s["hidden"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|c| str_of(c, "version"))
            .collect();
        let mut here = at.clone();
        here.key = format!("{}[{name}]", at.key);
        here.ml = is_ml_package(name);
        let winner = str_of(&s["winner"], "version");
        w.push(&here, format!("{winner} hides {}", hidden.join(", ")));
    }
}

/// `gpus.count`: how many GPUs, where NVML answered or GPUs were found.
pub(crate) fn gpu_count(w: &mut Walk, x: &Value, snap: &Value, at: &At) {
    let n = x.as_array().map_or(0, Vec::len);
    if str_of(&snap["nvml"], "status") == "ok" || n > 0 {
        let mut here = at.clone();
        here.key = format!("{}.count", at.key);
        w.push(&here, n.to_string());
    }
}

/// `frameworks[]`: named by interpreter and framework (`PATH:python3:torch`), scoped by the
/// interpreter when it is one of the snapshot's.
pub(crate) fn framework_id(f: &Value, w: &Walk) -> (String, Option<String>) {
    let py = str_of(f, "python");
    let id = format!("{}:{}", w.py_label(py), str_of(f, "name"));
    (id, w.py_scope(py))
}

/// `libraries[]`: named by interpreter (or `machine`), soname and the requester's file name.
pub(crate) fn library_id(l: &Value, w: &Walk) -> (String, Option<String>) {
    let py = l.get("python").and_then(Value::as_str);
    let who = py.map_or_else(|| "machine".into(), |p| w.py_label(p));
    let requester = str_of(l, "requester");
    let req = requester.rsplit('/').next().unwrap_or(requester);
    let id = format!("{who}:{}<-{req}", str_of(l, "soname"));
    (id, py.and_then(|p| w.py_scope(p)))
}

/// `probe_errors[]`: named by probe and path.
pub(crate) fn probe_error_id(e: &Value, _: &Walk) -> (String, Option<String>) {
    let path = e.get("path").and_then(Value::as_str);
    let at = path
        .map(|p| format!(" {}", homeless(p)))
        .unwrap_or_default();
    (format!("{}{at}", str_of(e, "probe")), None)
}

/// An interpreter's note: its path and version.
pub(crate) fn python_note(py: &Value) -> String {
    let version = py.get("version").and_then(Value::as_str);
    let v = version.map(|v| format!(" ({v})")).unwrap_or_default();
    format!("{}{v}", str_of(py, "path"))
}

/// A GPU's note: its name.
pub(crate) fn gpu_note(g: &Value) -> String {
    str_of(g, "name").to_string()
}
