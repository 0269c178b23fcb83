//! Evaluating compiled rules on a snapshot (as JSON): resolving paths through variables,
//! applying casts and operators, and collecting the evidence (fact paths and values) that made a
//! rule fire.

use super::compile::{CmpOp, Cond, Op, Operand, Quant, Rule};
use super::path::{Path, Seg};
use super::template::display_value;
use serde::Serialize;
use serde_json::Value;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::str::FromStr;
use std::time::Instant;

mod tri;
pub use tri::{judge, Judgement, Tri, Why};

/// One fact that made a rule fire.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Evidence {
    /// Where it is in the snapshot, with list elements named (`pythons[/v/bin/python].packages[torch].version`).
    pub path: String,
    /// Its value (null when the evidence is that it is absent).
    pub value: Value,
}

/// A variable bound during evaluation.
#[derive(Clone, Debug)]
struct Binding<'a> {
    name: String,
    value: &'a Value,
    label: BindLabel,
}

/// How a bound value is named in evidence, computed only when evidence needs it (a quantifier
/// binds thousands of packages and names none of them unless one matches).
#[derive(Clone, Debug)]
enum BindLabel {
    /// Already a label.
    Text(String),
    /// Element `i` of the list labelled so.
    Elem(Rc<str>, usize),
}

impl Binding<'_> {
    fn label(&self) -> String {
        match &self.label {
            BindLabel::Text(s) => s.clone(),
            BindLabel::Elem(list, i) => element_label(list, *i, self.value),
        }
    }
}

/// Lookups shared by every rule evaluated on one snapshot: each interpreter's distributions by
/// normalised name.
#[derive(Default)]
pub struct Index<'a> {
    packages: RefCell<HashMap<usize, Rc<Packages<'a>>>>,
}

/// One interpreter's distributions by normalised name.
#[derive(Default)]
struct Packages<'a> {
    /// The copy `import` sees (the shadowing winner when there are several).
    winner: HashMap<std::borrow::Cow<'a, str>, &'a Value>,
    /// Every copy's position in `packages[]`.
    all: HashMap<std::borrow::Cow<'a, str>, Vec<usize>>,
}

impl<'a> Index<'a> {
    fn of(&self, py: &'a Value) -> Rc<Packages<'a>> {
        let key = py as *const Value as usize;
        let mut cache = self.packages.borrow_mut();
        Rc::clone(
            cache
                .entry(key)
                .or_insert_with(|| Rc::new(Packages::build(py))),
        )
    }

    /// The distribution `name` of interpreter `py`.
    fn package(&self, py: &'a Value, name: &str) -> Option<&'a Value> {
        self.of(py).winner.get(normalized(name).as_ref()).copied()
    }

    /// Positions in `py.packages` of every copy of these distributions, in list order.
    fn positions(&self, py: &'a Value, names: &[&str]) -> Vec<usize> {
        let map = self.of(py);
        let mut out: Vec<usize> = names
            .iter()
            .filter_map(|n| map.all.get(normalized(n).as_ref()))
            .flatten()
            .copied()
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

impl<'a> Packages<'a> {
    fn build(py: &'a Value) -> Packages<'a> {
        let mut me = Packages::default();
        let Some(Value::Array(pkgs)) = py.get("packages") else {
            return me;
        };
        for (i, p) in pkgs.iter().enumerate() {
            if let Some(n) = p.get("name").and_then(Value::as_str) {
                let n = normalized(n);
                me.winner.entry(n.clone()).or_insert(p);
                me.all.entry(n).or_default().push(i);
            }
        }
        // packages[] is sorted by name and location, not by sys.path order: the shadowing
        // record says which copy wins.
        if let Some(Value::Array(shadowed)) = py.get("shadowed") {
            for sh in shadowed {
                let (Some(n), Some(loc)) = (
                    sh.get("name").and_then(Value::as_str),
                    sh.pointer("/winner/location"),
                ) else {
                    continue;
                };
                let want = normalized(n);
                let winner = me.all.get(&want).and_then(|copies| {
                    copies
                        .iter()
                        .map(|&i| &pkgs[i])
                        .find(|p| p.get("location") == Some(loc))
                });
                if let Some(w) = winner {
                    me.winner.insert(want, w);
                }
            }
        }
        me
    }
}

/// When a quantifier over an interpreter's `packages` starts by naming the distributions it
/// wants (`{fact: VAR.name, in: [...]}` or `equals`), those names: only their copies need a
/// look (the rest cannot match).
fn wanted_names<'c>(var: &str, body: &'c Cond) -> Option<Vec<&'c str>> {
    let first = match body {
        Cond::All(items) => items.first()?,
        other => other,
    };
    let Cond::Test {
        fact,
        cast: None,
        op,
    } = first
    else {
        return None;
    };
    if fact.var != var || fact.segs != [Seg::Key("name".into())] {
        return None;
    }
    let lits: Vec<&Operand> = match op {
        Op::Equals(o) => vec![o],
        Op::In(list) => list.iter().collect(),
        _ => return None,
    };
    lits.into_iter()
        .map(|o| match o {
            Operand::Lit(Value::String(s)) => Some(s.as_str()),
            _ => None,
        })
        .collect()
}

/// Evaluation state for one rule on one subject.
pub struct Eval<'a, 'p> {
    root: &'a Value,
    params: &'p BTreeMap<String, Value>,
    index: &'p Index<'a>,
    bindings: Vec<Binding<'a>>,
    evidence: Vec<Evidence>,
    /// Every fact a test read, when tracing (`check -v`).
    trace: Option<Vec<Evidence>>,
    /// When this rule must stop (its evaluation budget); `None`: no limit.
    stop_at: Option<Instant>,
    /// Conditions evaluated so far (the clock is read every [`CLOCK_EVERY`] of them).
    steps: u64,
    /// Set once `stop_at` passed: every condition is then false and the subject's result is
    /// thrown away by [`run_rule_within`].
    out_of_time: bool,
}

impl<'a, 'p> Eval<'a, 'p> {
    /// The evaluation of one rule on one subject, its variable bound (nothing bound for a
    /// machine rule), and the subject's label; `stop_at`: the rule's budget.
    fn on_subject(
        root: &'a Value,
        params: &'p BTreeMap<String, Value>,
        index: &'p Index<'a>,
        subject: Subject<'a>,
        stop_at: Option<Instant>,
    ) -> (Self, Option<String>) {
        let mut ev = Eval {
            root,
            params,
            index,
            bindings: Vec::new(),
            evidence: Vec::new(),
            trace: None,
            stop_at,
            steps: 0,
            out_of_time: stop_at.is_some_and(|t| Instant::now() >= t),
        };
        let label = subject.as_ref().map(|(_, _, l)| l.clone());
        if let Some((name, value, label)) = subject {
            ev.bindings.push(Binding {
                name,
                value,
                label: BindLabel::Text(label),
            });
        }
        (ev, label)
    }
}

/// How many conditions are evaluated between two readings of the clock.
const CLOCK_EVERY: u64 = 256;

/// What a rule found on one subject.
pub struct Hit {
    /// The subject's label (`pythons[/usr/bin/python3]`), None for machine rules.
    pub subject: Option<String>,
    /// The filled message.
    pub message: String,
    /// The message as Markdown ([`super::template::Template::render_markdown`]).
    pub message_md: String,
    /// The filled fix.
    pub fix: String,
    /// The facts that made it fire.
    pub evidence: Vec<Evidence>,
}

/// What a scoped rule is evaluated for: (variable, element, label); None for machine rules.
type Subject<'a> = Option<(String, &'a Value, String)>;

fn subjects_of<'a>(rule: &Rule, root: &'a Value) -> Vec<Subject<'a>> {
    match rule.scope.binding() {
        None => vec![None],
        Some((section, var)) => match root.get(section) {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| Some((var.to_string(), v, element_label(section, i, v))))
                .collect(),
            _ => Vec::new(),
        },
    }
}

/// Every fact `rule` read on each of its subjects (subject label, facts in reading order, a
/// missing one as null), for `check -v`. Evaluation stops where the rule's logic stops
/// (`all` at the first false test), so these are the facts that decided the verdict.
pub fn looked_at<'a>(
    rule: &Rule,
    root: &'a Value,
    params: &BTreeMap<String, Value>,
    index: &Index<'a>,
) -> Vec<(Option<String>, Vec<Evidence>)> {
    let mut out = Vec::new();
    for subject in subjects_of(rule, root) {
        let (mut ev, label) = Eval::on_subject(root, params, index, subject, None);
        ev.trace = Some(Vec::new());
        ev.cond(&rule.when);
        let mut facts = ev.trace.take().unwrap_or_default();
        dedup_keep_order(&mut facts);
        out.push((label, facts));
    }
    out
}

/// Evaluate `rule` on `root` (a snapshot as JSON), with `params` (the rule's, overridden);
/// `index` is shared by every rule run on the same `root`.
pub fn run_rule<'a>(
    rule: &Rule,
    root: &'a Value,
    params: &BTreeMap<String, Value>,
    index: &Index<'a>,
) -> Vec<Hit> {
    run_rule_within(rule, root, params, index, None).0
}

/// [`run_rule`] that stops at `stop_at`: the hits of the subjects finished in time, and whether
/// it was stopped (then the subjects not finished are unknown, never reported as hits).
pub fn run_rule_within<'a>(
    rule: &Rule,
    root: &'a Value,
    params: &BTreeMap<String, Value>,
    index: &Index<'a>,
    stop_at: Option<Instant>,
) -> (Vec<Hit>, bool) {
    let mut hits = Vec::new();
    let subjects = subjects_of(rule, root);
    for subject in subjects {
        let (mut ev, label) = Eval::on_subject(root, params, index, subject, stop_at);
        if ev.out_of_time {
            return (hits, true);
        }
        let fired = ev.cond(&rule.when);
        if ev.out_of_time {
            return (hits, true);
        }
        if fired {
            let mut evidence = std::mem::take(&mut ev.evidence);
            dedup_keep_order(&mut evidence);
            let lookup = |p: &Path| -> Option<Value> {
                if p.var == "param" {
                    if let Some(Seg::Key(k)) = p.segs.first() {
                        return params.get(k).cloned();
                    }
                }
                ev.resolve_value(p).cloned()
            };
            let message = rule.message.render(&lookup);
            let message_md = rule.message.render_markdown(&lookup);
            let fix = rule.fix.render(&lookup);
            hits.push(Hit {
                subject: label,
                message,
                message_md,
                fix,
                evidence,
            });
        }
    }
    (hits, false)
}

fn dedup_keep_order(ev: &mut Vec<Evidence>) {
    let mut seen = std::collections::HashSet::new();
    ev.retain(|e| seen.insert(e.path.clone()));
}

/// How a list element is named in evidence: a library by soname and interpreter, a framework by
/// name and interpreter, anything else by its path, index, pid, uuid, soname or name field, else
/// by position.
fn element_label(list_label: &str, i: usize, v: &Value) -> String {
    let text = |k: &str| match v.get(k) {
        Some(Value::String(s)) if !s.is_empty() => {
            Some(crate::report::escape::one_line(s).into_owned())
        }
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    for first in ["soname", "name"] {
        if let (Some(a), Some(py)) = (text(first), text("python")) {
            return format!("{list_label}[{a} @ {py}]");
        }
    }
    for key in ["path", "index", "pid", "uuid", "soname", "name", "required"] {
        if let Some(t) = text(key) {
            return format!("{list_label}[{t}]");
        }
    }
    format!("{list_label}[{i}]")
}

/// PEP 503 normalisation, for the `package` accessor.
pub fn normalize_name(name: &str) -> String {
    normalized(name).into_owned()
}

/// PEP 503 normalisation, borrowing when the name is already normal (the probes write normal
/// names, so this is the common case).
fn normalized(name: &str) -> std::borrow::Cow<'_, str> {
    let b = name.as_bytes();
    let plain = !b.is_empty()
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
        && b.windows(2).all(|w| !(w[0] == b'-' && w[1] == b'-'))
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c >= 0x80);
    if plain {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    std::borrow::Cow::Owned(out)
}

impl<'a> Eval<'a, '_> {
    /// Resolve a path to a value; None when missing or null. The hot path: no labels, no
    /// allocation for plain field names.
    fn resolve_value(&self, path: &Path) -> Option<&'a Value> {
        self.walk(path, false).map(|(v, _)| v)
    }

    /// Resolve a path to a value and its evidence label; None when missing or null.
    fn resolve(&self, path: &Path) -> Option<(&'a Value, String)> {
        self.walk(path, true)
    }

    /// A segment's key: its name, or a dynamic segment's value.
    fn key_at<'s>(&self, seg: &'s Seg) -> Option<std::borrow::Cow<'s, str>> {
        match seg {
            Seg::Key(k) => Some(std::borrow::Cow::Borrowed(k.as_str())),
            Seg::Dynamic(p) => key_of(self.resolve_value(p)?).map(std::borrow::Cow::Owned),
        }
    }

    fn walk(&self, path: &Path, labelled: bool) -> Option<(&'a Value, String)> {
        let (mut cur, mut label) =
            if let Some(b) = self.bindings.iter().rev().find(|b| b.name == path.var) {
                (b.value, if labelled { b.label() } else { String::new() })
            } else {
                (self.root.get(&path.var)?, path.var.clone())
            };
        let mut i = 0;
        while i < path.segs.len() {
            let key = self.key_at(&path.segs[i])?;
            if key == "package" && cur.get("package").is_none() && cur.get("packages").is_some() {
                let name = self.key_at(path.segs.get(i + 1)?)?;
                cur = self.index.package(cur, &name)?;
                if labelled {
                    label = format!("{label}.packages[{}]", normalize_name(&name));
                }
                i += 2;
                continue;
            }
            cur = match cur {
                Value::Object(m) => m.get(key.as_ref())?,
                Value::Array(a) => a.get(key.parse::<usize>().ok()?)?,
                _ => return None,
            };
            if labelled {
                label.push('.');
                label.push_str(&key);
            }
            i += 1;
        }
        if cur.is_null() {
            None
        } else {
            Some((cur, label))
        }
    }

    /// The label of a path that may be missing: the longest prefix that resolves, named as
    /// evidence names it, followed by the rest as written
    /// (`pythons[/usr/bin/python3].unmet_requirements[numpy].installed`).
    fn label_of(&self, path: &Path) -> String {
        for keep in (0..=path.segs.len()).rev() {
            let prefix = Path {
                var: path.var.clone(),
                segs: path.segs[..keep].to_vec(),
                text: String::new(),
            };
            if let Some((_, label)) = self.resolve(&prefix) {
                let mut out = label;
                for seg in &path.segs[keep..] {
                    match seg {
                        Seg::Key(k) => {
                            out.push('.');
                            out.push_str(k);
                        }
                        Seg::Dynamic(p) => out.push_str(&format!(".({})", p.text)),
                    }
                }
                return out;
            }
        }
        path.text.clone()
    }

    fn cond(&mut self, c: &Cond) -> bool {
        if self.out_of_time {
            return false;
        }
        self.steps += 1;
        if self.steps % CLOCK_EVERY == 0 && self.stop_at.is_some_and(|t| Instant::now() >= t) {
            self.out_of_time = true;
            return false;
        }
        match c {
            Cond::All(items) => {
                let mark = (self.bindings.len(), self.evidence.len());
                for item in items {
                    if !self.cond(item) {
                        self.rewind(mark);
                        return false;
                    }
                }
                true
            }
            Cond::Any(items) => items.iter().any(|item| self.cond(item)),
            Cond::Not(inner) => {
                let mark = (self.bindings.len(), self.evidence.len());
                let r = self.cond(inner);
                self.rewind(mark);
                !r
            }
            Cond::Quant {
                kind,
                list,
                var,
                body,
            } => self.quant(*kind, list, var, body),
            Cond::Test { fact, cast, op } => self.test(fact, *cast, op),
        }
    }

    fn rewind(&mut self, (b, e): (usize, usize)) {
        self.bindings.truncate(b);
        self.evidence.truncate(e);
    }

    fn quant(&mut self, kind: Quant, list: &Path, var: &str, body: &Cond) -> bool {
        let (items, list_label): (&'a [Value], Rc<str>) = match self.resolve(list) {
            Some((Value::Array(a), l)) => (a.as_slice(), Rc::from(l)),
            Some(_) => return false,
            None => (&[], Rc::from(list.text.as_str())),
        };
        let mark = (self.bindings.len(), self.evidence.len());
        let mut matched = 0usize;
        let mut first_match: Option<(usize, usize)> = None;
        // `any_in py.packages` that names its distributions visits only their copies.
        let only: Option<Vec<usize>> = match (kind, list.segs.split_last()) {
            (Quant::Any, Some((Seg::Key(last), parent))) if last == "packages" => {
                wanted_names(var, body).and_then(|names| {
                    let owner = Path {
                        var: list.var.clone(),
                        segs: parent.to_vec(),
                        text: String::new(),
                    };
                    let py = self.resolve_value(&owner)?;
                    Some(self.index.positions(py, &names))
                })
            }
            _ => None,
        };
        let visit: Box<dyn Iterator<Item = (usize, &'a Value)>> = match only {
            Some(positions) => Box::new(
                positions
                    .into_iter()
                    .filter_map(move |i| items.get(i).map(|v| (i, v))),
            ),
            None => Box::new(items.iter().enumerate()),
        };
        for (i, item) in visit {
            let before = (self.bindings.len(), self.evidence.len());
            self.bindings.push(Binding {
                name: var.to_string(),
                value: item,
                label: BindLabel::Elem(Rc::clone(&list_label), i),
            });
            let ok = self.cond(body);
            match kind {
                Quant::Any if ok => return true,
                Quant::All if ok => {
                    matched += 1;
                    // Keep the first element's bindings (for the message) and every element's
                    // evidence; drop later elements' bindings.
                    if first_match.is_none() {
                        first_match = Some((self.bindings.len(), before.1));
                    } else {
                        let ev: Vec<Evidence> = self.evidence.drain(before.1..).collect();
                        self.bindings.truncate(before.0);
                        self.evidence.extend(ev);
                    }
                }
                Quant::All => {
                    self.rewind(mark);
                    return false;
                }
                Quant::None if ok => {
                    self.rewind(mark);
                    return false;
                }
                _ => self.rewind(before),
            }
        }
        match kind {
            Quant::Any => false,
            Quant::All => matched > 0,
            Quant::None => {
                self.evidence.push(Evidence {
                    path: list_label.to_string(),
                    value: Value::from(format!("{} checked, none matched", items.len())),
                });
                true
            }
        }
    }

    /// The value of an operand (borrowed: literals from the rule, facts from the snapshot).
    fn operand<'s>(&'s self, o: &'s Operand) -> Option<&'s Value> {
        match o {
            Operand::Lit(v) => Some(v),
            Operand::Param(p) => self.params.get(p),
            Operand::Fact(path) => self.resolve_value(path),
        }
    }

    fn test(&mut self, fact: &Path, cast: Option<super::model::Cast>, op: &Op) -> bool {
        let raw = self.resolve_value(fact);
        if self.trace.is_some() {
            self.trace_test(fact, raw, op);
        }
        let cast_value;
        let value = match cast {
            None => raw,
            Some(_) => {
                cast_value = apply_cast(raw, cast);
                cast_value.as_ref()
            }
        };
        let ok = self.holds(op, value);
        if ok {
            // Evidence (labels, clones) only for tests that held.
            self.push_test_evidence(fact, raw, op);
        }
        ok
    }

    /// Traces the fact tested (`raw`, as read), and any fact it is compared with.
    fn trace_test(&mut self, fact: &Path, raw: Option<&Value>, op: &Op) {
        let mut looked = vec![Evidence {
            path: self.label_of(fact),
            value: raw.cloned().unwrap_or(Value::Null),
        }];
        for o in op.operands() {
            if let Operand::Fact(p) = o {
                looked.push(Evidence {
                    path: self.label_of(p),
                    value: self.resolve_value(p).cloned().unwrap_or(Value::Null),
                });
            }
        }
        if let Some(t) = self.trace.as_mut() {
            t.extend(looked);
        }
    }

    /// Whether `op` holds for `value` (the fact, cast; None when absent).
    fn holds(&self, op: &Op, value: Option<&Value>) -> bool {
        match (op, value) {
            (Op::Exists(want), v) => v.is_some() == *want,
            (Op::Empty(want), v) => is_empty(v) == *want,
            (_, None) => false,
            (Op::Equals(o), Some(v)) => self.operand(o).is_some_and(|r| loose_eq(v, r)),
            (Op::NotEquals(o), Some(v)) => self.operand(o).is_some_and(|r| !loose_eq(v, r)),
            (Op::In(list), Some(v)) => list
                .iter()
                .any(|o| self.operand(o).is_some_and(|r| member(v, r))),
            (Op::NotIn(list), Some(v)) => list
                .iter()
                .all(|o| self.operand(o).is_none_or(|r| !member(v, r))),
            (Op::Cmp(cmp, o), Some(v)) => {
                self.operand(o)
                    .and_then(|r| compare(v, r))
                    .is_some_and(|ord| match cmp {
                        CmpOp::Lt => ord == Ordering::Less,
                        CmpOp::Lte => ord != Ordering::Greater,
                        CmpOp::Gt => ord == Ordering::Greater,
                        CmpOp::Gte => ord != Ordering::Less,
                    })
            }
            (Op::Pep440(spec, _), Some(v)) => as_text(v)
                .and_then(|s| pep440_rs::Version::from_str(s.trim()).ok())
                .is_some_and(|ver| pep440_contains(spec, &ver)),
            (Op::Matches(re), Some(v)) => match v {
                Value::Array(items) => items
                    .iter()
                    .any(|i| as_text(i).is_some_and(|s| re.is_match(&s))),
                other => as_text(other).is_some_and(|s| re.is_match(&s)),
            },
            (Op::Contains(o), Some(v)) => self.operand(o).is_some_and(|r| match v {
                Value::Array(items) => items.iter().any(|i| loose_eq(i, r)),
                Value::String(s) => as_text(r).is_some_and(|t| s.contains(t.as_str())),
                _ => false,
            }),
        }
    }

    /// Evidence of a test that held: the fact tested (`raw`, as read) and any fact it was
    /// compared with, by their labels.
    fn push_test_evidence(&mut self, fact: &Path, raw: Option<&Value>, op: &Op) {
        let path = match self.resolve(fact) {
            Some((_, l)) => l,
            None => self.label_of(fact),
        };
        self.evidence.push(Evidence {
            path,
            value: raw.cloned().unwrap_or(Value::Null),
        });
        for o in op.operands() {
            if let Operand::Fact(p) = o {
                if let Some((v, label)) = self.resolve(p) {
                    self.evidence.push(Evidence {
                        path: label,
                        value: v.clone(),
                    });
                }
            }
        }
    }
}

/// Whether `ver` satisfies every specifier of `spec`, with the pack's pre-release rule (see
/// `docs/rule-language.md`, "Versions"): against an ordered bound (`>=`, `>`, `<=`, `<`, `~=`)
/// that is itself not a pre-release, a pre-release or dev release counts as the release it
/// leads to (`2.0.0rc1` as `2.0.0`), so `>=2` means "TF 2 and later, its release candidates
/// included" and `<2` leaves `2.0.0rc1` out, as PEP 440 says for `<V`. `==`, `!=` and `===`
/// compare the version as written (`==2.0.0` does not match `2.0.0rc1`; `==2.0.*` does, by
/// prefix). Local labels (`+cu121`) are ignored throughout.
pub fn pep440_contains(spec: &pep440_rs::VersionSpecifiers, ver: &pep440_rs::Version) -> bool {
    use pep440_rs::Operator as O;
    let release = ver
        .any_prerelease()
        .then(|| ver.only_release().with_epoch(ver.epoch()));
    spec.iter().all(|s| {
        let ordered = matches!(
            s.operator(),
            O::GreaterThan | O::GreaterThanEqual | O::LessThan | O::LessThanEqual | O::TildeEqual
        );
        match &release {
            Some(r) if ordered && !s.version().any_prerelease() => s.contains(r),
            _ => s.contains(ver),
        }
    })
}

fn key_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(display_value(v)),
        _ => None,
    }
}

fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

/// The leading dotted numbers of a version-like string (`"12.4.1"`, `"2.5.1+cu121"`,
/// `"580.65.06"`, `"v1.2"`): None when it does not start with a number.
pub fn dotted(s: &str) -> Option<Vec<u64>> {
    let s = s.trim().trim_start_matches(['v', 'V']);
    let mut parts = Vec::new();
    for piece in s.split('.') {
        let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        parts.push(digits.parse::<u64>().ok()?);
        if digits.len() != piece.len() {
            break;
        }
    }
    (!parts.is_empty()).then_some(parts)
}

fn apply_cast(v: Option<&Value>, cast: Option<super::model::Cast>) -> Option<Value> {
    use super::model::Cast;
    let Some(cast) = cast else {
        return v.cloned();
    };
    match cast {
        Cast::Length => Some(Value::from(match v {
            None => 0,
            Some(Value::Array(a)) => a.len(),
            Some(Value::String(s)) => s.chars().count(),
            Some(Value::Object(o)) => o.len(),
            Some(_) => return None,
        })),
        Cast::Major | Cast::Minor | Cast::MajorMinor => {
            let parts = dotted(&as_text(v?)?)?;
            match cast {
                Cast::Major => Some(Value::from(parts[0])),
                Cast::Minor => parts.get(1).map(|m| Value::from(*m)),
                _ => Some(Value::from(format!(
                    "{}.{}",
                    parts[0],
                    parts.get(1).copied().unwrap_or(0)
                ))),
            }
        }
        Cast::Lower => as_text(v?).map(|s| Value::from(s.to_lowercase())),
        Cast::Number => match v? {
            Value::Number(n) => Some(Value::Number(n.clone())),
            other => as_text(other)
                .and_then(|s| s.trim().parse::<f64>().ok())
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
        },
    }
}

/// Equality with numbers by value and a number equal to its decimal string.
fn loose_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Number(_), Value::String(s)) | (Value::String(s), Value::Number(_)) => {
            let n = if a.is_number() { a } else { b };
            s.trim().parse::<f64>().ok() == n.as_f64()
        }
        _ => a == b,
    }
}

/// `in:` membership: equal, or (for a list fact) sharing an element.
fn member(v: &Value, r: &Value) -> bool {
    match v {
        Value::Array(items) => items.iter().any(|i| loose_eq(i, r)),
        _ => loose_eq(v, r),
    }
}

/// Order two values: numbers numerically, otherwise as dotted versions part by part, to the
/// precision of the less precise one (`12.4` == `12.4.1`, `12.4` < `12.10`).
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) {
        if a.is_number() && b.is_number() {
            return x.partial_cmp(&y);
        }
    }
    let x = dotted(&as_text(a)?)?;
    let y = dotted(&as_text(b)?)?;
    // Compared to the precision of the less precise one: `12.4` equals `12.4.1`.
    for (p, q) in x.iter().zip(y.iter()) {
        match p.cmp(q) {
            Ordering::Equal => continue,
            o => return Some(o),
        }
    }
    Some(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pep(spec: &str, v: &str) -> bool {
        pep440_contains(
            &pep440_rs::VersionSpecifiers::from_str(spec).unwrap(),
            &pep440_rs::Version::from_str(v).unwrap(),
        )
    }

    #[test]
    fn pre_releases_count_as_their_release_against_ordered_bounds() {
        // "TF 2 and later" includes its release candidates and dev builds.
        assert!(pep(">=2", "2.0.0rc1"));
        assert!(pep(">=2", "2.0.0.dev20190101"));
        assert!(pep(">=2.4,<2.5", "2.4.0rc0"));
        assert!(pep("~=2.4", "2.4.0b1"));
        assert!(pep(">1.15", "2.0.0a0"));
        // ... and they are not "before 2".
        assert!(!pep("<2", "2.0.0rc1"));
        assert!(pep("<=2", "2.0.0rc1"));
        assert!(pep(">=2.5", "2.5.0rc1+cu121"));
        // A bound that names a pre-release compares as PEP 440 orders them.
        assert!(!pep(">=2.0.0rc2", "2.0.0rc1"));
        assert!(pep(">=2.0.0rc1", "2.0.0rc1"));
        // Exact pins compare as written; prefix pins match by release.
        assert!(!pep("==2.0.0", "2.0.0rc1"));
        assert!(pep("==2.0.*", "2.0.0rc1"));
        assert!(pep("!=2.0.0", "2.0.0rc1"));
        // Stable versions: plain PEP 440 (local labels ignored).
        assert!(pep(">=2", "2.1.0+cu121"));
        assert!(!pep(">=2", "1.15.5"));
        assert!(pep("<2", "1.15.5"));
        // The epoch is kept.
        assert!(!pep(">=2", "1.0rc1"));
        assert!(pep(">=2", "1!1.0rc1"));
    }

    #[test]
    fn dotted_versions_compare_numerically() {
        assert_eq!(
            compare(&json!("12.4"), &json!("12.10")),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare(&json!("580.65.06"), &json!("525.60.13")),
            Some(Ordering::Greater)
        );
        assert_eq!(compare(&json!("11.0"), &json!("11")), Some(Ordering::Equal));
        assert_eq!(compare(&json!(12), &json!("12.1")), Some(Ordering::Equal));
        assert_eq!(compare(&json!(11), &json!("12.1")), Some(Ordering::Less));
        assert_eq!(
            compare(&json!("2.5.1+cu121"), &json!("2.5")),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare(&json!("2.15.0"), &json!("2.15.1")),
            Some(Ordering::Less)
        );
        assert_eq!(compare(&json!("abc"), &json!("1")), None);
        assert_eq!(dotted("8.9.4.25"), Some(vec![8, 9, 4, 25]));
        assert_eq!(dotted("3.11rc1"), Some(vec![3, 11]));
    }

    #[test]
    fn casts() {
        use crate::rules::model::Cast;
        let v = json!("12.4.1");
        assert_eq!(apply_cast(Some(&v), Some(Cast::Major)), Some(json!(12)));
        assert_eq!(apply_cast(Some(&v), Some(Cast::Minor)), Some(json!(4)));
        assert_eq!(
            apply_cast(Some(&v), Some(Cast::MajorMinor)),
            Some(json!("12.4"))
        );
        assert_eq!(apply_cast(None, Some(Cast::Length)), Some(json!(0)));
        assert_eq!(
            apply_cast(Some(&json!([1, 2])), Some(Cast::Length)),
            Some(json!(2))
        );
        assert_eq!(
            apply_cast(Some(&json!("ABC")), Some(Cast::Lower)),
            Some(json!("abc"))
        );
        assert_eq!(
            apply_cast(Some(&json!(" 64 ")), Some(Cast::Number)),
            Some(json!(64.0))
        );
    }

    #[test]
    fn names_normalise_as_pep_503() {
        assert_eq!(normalize_name("TF_Keras"), "tf-keras");
        assert_eq!(normalize_name("zope.interface"), "zope-interface");
        assert_eq!(normalize_name("a--b__c"), "a-b-c");
        assert_eq!(normalize_name("torch"), "torch");
        assert_eq!(normalize_name("-torch"), "torch");
        assert_eq!(normalize_name("nvidia-cudnn-cu12"), "nvidia-cudnn-cu12");
    }

    #[test]
    fn loose_equality() {
        assert!(loose_eq(&json!(3), &json!(3.0)));
        assert!(loose_eq(&json!("3"), &json!(3)));
        assert!(!loose_eq(&json!("3.1"), &json!(3)));
        assert!(member(&json!(["a", "b"]), &json!("b")));
    }
}
