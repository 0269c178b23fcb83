//! Three-valued evaluation of a rule, for `diagnose`: each test is true, false, or unknown, and
//! unknown is never false. A fact that is absent (other than `env.*`, where an unset variable is
//! itself a fact), a value a test cannot order (a version specifier on `2.9.0.dev… nightly`,
//! a comparison on a string that holds no version), or a list section the probes left empty
//! (`gpus`, `libraries`, … on a machine that was not the one that failed) makes a test unknown.
//! `all`, `any`, `not` and the quantifiers combine the values with Kleene's strong logic, and
//! each value carries the facts that decided it: the present facts that contradict (false), the
//! facts whose absence left it open (unknown).

use super::{apply_cast, compare, BindLabel, Binding, Eval, Evidence, Index, Subject};
use crate::rules::compile::{Cond, Op, Operand, Quant, Rule};
use crate::rules::path::Path;
use serde_json::Value;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::str::FromStr;

/// True, false, or not decidable on these facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tri {
    /// It holds.
    True,
    /// A present fact contradicts it.
    False,
    /// Facts it needs are absent or cannot be ordered.
    Unknown,
}

/// What decided a value.
#[derive(Clone, Debug, Default)]
pub struct Why {
    /// Facts of tests that held.
    pub support: Vec<Evidence>,
    /// Present facts of tests that did not hold.
    pub against: Vec<Evidence>,
    /// Facts that are absent (value null) or whose value the test cannot order.
    pub unknown: Vec<Evidence>,
}

impl Why {
    fn merge(&mut self, other: Why) {
        self.support.extend(other.support);
        self.against.extend(other.against);
        self.unknown.extend(other.unknown);
    }
}

/// The three-valued verdict of a rule on one subject.
#[derive(Clone, Debug)]
pub struct Judgement {
    /// The subject's label (None for machine rules).
    pub subject: Option<String>,
    /// The value.
    pub value: Tri,
    /// What decided it.
    pub why: Why,
}

/// Top-level lists that the probes fill only on the machine where the job ran: empty means
/// "not looked at here", not "there are none".
const PROBED_SECTIONS: &[&str] = &["gpus", "libraries", "frameworks", "checkpoints", "jobs"];

/// Judge `rule` on `root` for each of its subjects.
pub fn judge<'a>(
    rule: &Rule,
    root: &'a Value,
    params: &BTreeMap<String, Value>,
    index: &Index<'a>,
) -> Vec<Judgement> {
    super::subjects_of(rule, root)
        .into_iter()
        .map(|subject: Subject<'a>| {
            let (mut ev, label) = Eval::on_subject(root, params, index, subject, None);
            let (value, why) = ev.cond3(&rule.when);
            Judgement {
                subject: label,
                value,
                why,
            }
        })
        .collect()
}

/// Kleene conjunction of `parts`, keeping the facts that decided it.
fn and(parts: Vec<(Tri, Why)>) -> (Tri, Why) {
    let value = if parts.iter().any(|(t, _)| *t == Tri::False) {
        Tri::False
    } else if parts.iter().any(|(t, _)| *t == Tri::Unknown) {
        Tri::Unknown
    } else {
        Tri::True
    };
    let mut why = Why::default();
    for (t, w) in parts {
        if t == value {
            why.merge(w);
        }
    }
    (value, why)
}

/// Kleene disjunction.
fn or(parts: Vec<(Tri, Why)>) -> (Tri, Why) {
    let (value, why) = and(parts.into_iter().map(not).collect());
    not((value, why))
}

fn not((t, w): (Tri, Why)) -> (Tri, Why) {
    let t = match t {
        Tri::True => Tri::False,
        Tri::False => Tri::True,
        Tri::Unknown => Tri::Unknown,
    };
    (
        t,
        Why {
            support: w.against,
            against: w.support,
            unknown: w.unknown,
        },
    )
}

fn unknown(path: String, value: Value) -> (Tri, Why) {
    (
        Tri::Unknown,
        Why {
            unknown: vec![Evidence { path, value }],
            ..Why::default()
        },
    )
}

impl<'a> Eval<'a, '_> {
    fn cond3(&mut self, c: &Cond) -> (Tri, Why) {
        match c {
            Cond::All(items) => and(items.iter().map(|i| self.cond3(i)).collect()),
            Cond::Any(items) => or(items.iter().map(|i| self.cond3(i)).collect()),
            Cond::Not(inner) => not(self.cond3(inner)),
            Cond::Quant {
                kind,
                list,
                var,
                body,
            } => self.quant3(*kind, list, var, body),
            Cond::Test { fact, cast, op } => self.test3(fact, *cast, op),
        }
    }

    fn quant3(&mut self, kind: Quant, list: &Path, var: &str, body: &Cond) -> (Tri, Why) {
        let (items, label): (&'a [Value], Rc<str>) = match self.resolve(list) {
            Some((Value::Array(a), l)) => (a.as_slice(), Rc::from(l)),
            Some((other, l)) => {
                return (
                    Tri::False,
                    Why {
                        against: vec![Evidence {
                            path: l,
                            value: other.clone(),
                        }],
                        ..Why::default()
                    },
                )
            }
            None => return unknown(self.label_of(list), Value::Null),
        };
        if items.is_empty() && list.segs.is_empty() && PROBED_SECTIONS.contains(&list.var.as_str())
        {
            return unknown(format!("{label}[]"), Value::Array(Vec::new()));
        }
        let mut parts = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let mark = self.bindings.len();
            self.bindings.push(Binding {
                name: var.to_string(),
                value: item,
                label: BindLabel::Elem(Rc::clone(&label), i),
            });
            parts.push(self.cond3(body));
            self.bindings.truncate(mark);
        }
        let empty = || Evidence {
            path: label.to_string(),
            value: Value::Array(Vec::new()),
        };
        match kind {
            Quant::Any if items.is_empty() => (
                Tri::False,
                Why {
                    against: vec![empty()],
                    ..Why::default()
                },
            ),
            Quant::Any => or(parts),
            // `all_in` holds only on a list with an element (as in `eval`).
            Quant::All if items.is_empty() => (
                Tri::False,
                Why {
                    against: vec![empty()],
                    ..Why::default()
                },
            ),
            Quant::All => and(parts),
            Quant::None => not(or(parts)),
        }
    }

    fn test3(
        &mut self,
        fact: &Path,
        cast: Option<crate::rules::model::Cast>,
        op: &Op,
    ) -> (Tri, Why) {
        let resolved = self.resolve(fact);
        let (label, raw) = match resolved {
            Some((v, l)) => (l, Some(v)),
            None => (self.label_of(fact), None),
        };
        let evidence = |v: Option<&Value>| Evidence {
            path: label.clone(),
            value: v.cloned().unwrap_or(Value::Null),
        };
        let decided = |t: bool, e: Evidence| {
            let mut why = Why::default();
            if t {
                why.support.push(e);
                (Tri::True, why)
            } else {
                why.against.push(e);
                (Tri::False, why)
            }
        };
        let Some(raw) = raw else {
            // An unset variable is a fact, and so is a distribution missing from a package list
            // that was read; a test that wants the fact absent holds.
            let wants_absent = matches!(op, Op::Exists(false) | Op::Empty(true));
            if fact.var == "env" || wants_absent || self.not_installed(fact) {
                return decided(self.holds(op, None), evidence(None));
            }
            // `cast: length` defines a missing fact as length 0: the rule asked for that.
            if matches!(cast, Some(crate::rules::model::Cast::Length)) {
                let zero = apply_cast(None, cast);
                return decided(self.holds(op, zero.as_ref()), evidence(None));
            }
            return unknown(label, Value::Null);
        };
        // A load the probe did not attempt (a library loaded through another, the deadline)
        // or that hung has no result: its status and error say nothing about the library.
        if let Some(status) = self.unattempted_load(fact) {
            return unknown(label, Value::from(format!("load {status}")));
        }
        let cast_value = apply_cast(Some(raw), cast);
        let Some(value) = cast_value.as_ref() else {
            return unknown(label, raw.clone());
        };
        for o in op.operands() {
            if self.operand(o).is_none() {
                if let Operand::Fact(p) = o {
                    return unknown(self.label_of(p), Value::Null);
                }
            }
        }
        if !self.orderable(op, value) {
            return unknown(label, raw.clone());
        }
        decided(self.holds(op, Some(value)), evidence(Some(raw)))
    }

    /// Whether `fact` goes through `X.package.NAME` where `X.packages` was read: the
    /// distribution is then known not to be installed.
    fn not_installed(&self, fact: &Path) -> bool {
        let Some(i) = fact
            .segs
            .iter()
            .position(|s| matches!(s, crate::rules::path::Seg::Key(k) if k == "package"))
        else {
            return false;
        };
        let owner = Path {
            var: fact.var.clone(),
            segs: fact.segs[..i].to_vec(),
            text: String::new(),
        };
        self.resolve_value(&owner)
            .and_then(|o| o.get("packages"))
            .is_some_and(Value::is_array)
    }

    /// The status of the `load` result `fact` goes through when the probe did not get one
    /// (`skipped`, `timeout`).
    fn unattempted_load(&self, fact: &Path) -> Option<&'a str> {
        let i = fact
            .segs
            .iter()
            .position(|s| matches!(s, crate::rules::path::Seg::Key(k) if k == "load"))?;
        let owner = Path {
            var: fact.var.clone(),
            segs: fact.segs[..=i].to_vec(),
            text: String::new(),
        };
        let status = self.resolve_value(&owner)?.get("status")?.as_str()?;
        matches!(status, "skipped" | "timeout").then_some(status)
    }

    /// Whether an ordering test can order `value` (always true for other tests).
    fn orderable(&self, op: &Op, value: &Value) -> bool {
        match op {
            Op::Cmp(_, o) => self.operand(o).is_none_or(|r| compare(value, r).is_some()),
            Op::Pep440(_, _) => {
                let text = match value {
                    Value::String(s) => s.trim().to_string(),
                    Value::Number(n) => n.to_string(),
                    _ => return false,
                };
                pep440_rs::Version::from_str(&text).is_ok()
            }
            _ => true,
        }
    }
}
