//! Flattening a snapshot into comparable facts: `(key, value)` pairs with a section, a rank
//! hint (ML-relevant or not), a comparison kind and an optional *scope*.
//!
//! Keys are stable and machine-independent: interpreters are named by their matched role
//! (`pythons[PATH:python3].packages[torch]`), home directories are written `~`
//! (`/home/alice/x` and `/home/bob/x` are the same fact), GPUs by index, toolkits by path.
//! A scope is the key of an *entity* fact (`pythons[conda-env:ml]`, `gpus[1]`): when the entity
//! is missing on a machine, the facts under it are not compared there (the entity itself is
//! reported once as added or removed instead of every package in it).
//!
//! Volatile facts (`collected_at`, `live` sub-structs, running jobs) and machine identity
//! (hostname, GPU UUIDs and PCI ids, the probe root) are emitted only with `--all`.
//!
//! The facts are not a second description of the Snapshot: they come from a walk of its serde
//! JSON (`facts/walk.rs`) driven by a table of rules (`facts/table.rs`): identity keys per list,
//! sections, ranks, version kinds, volatile markers, fields not compared and why. A field the
//! table does not name is compared as it is, so a new snapshot field is never invisible.

mod table;
mod walk;

use super::packages::ValueKind;
use super::{homeless, Section, Verdict};
use crate::Snapshot;
use std::collections::{BTreeSet, HashMap, HashSet};
use table::RULES;
use walk::{How, Rule, Walk};

/// A flattened snapshot: its facts and the entities (interpreters, GPUs, toolkits, checkpoints)
/// it has, whatever the section filter kept.
#[derive(Clone, Debug, Default)]
pub struct Flat {
    /// The facts, in emission order.
    pub facts: Vec<Fact>,
    /// Keys of the entities present.
    pub entities: HashSet<String>,
}

/// One comparable fact.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    /// Stable key (`pythons[PATH:python3].packages[torch]`).
    pub key: String,
    /// The value, as text.
    pub value: String,
    /// The section it belongs to (`--only`).
    pub section: Section,
    /// True when it is ML- or CUDA-relevant (ranked before the rest).
    pub ml: bool,
    /// True for a rule verdict (ranked first).
    pub verdict: bool,
    /// How its values compare.
    pub kind: ValueKind,
    /// The entity fact it belongs to, when any.
    pub scope: Option<String>,
    /// Display-only context (an interpreter's path, a verdict's title); never compared.
    pub note: Option<String>,
}

/// What to emit.
pub struct FlattenOptions<'a> {
    /// Include volatile and identity facts.
    pub all: bool,
    /// Sections to keep (empty: all).
    pub only: &'a [Section],
}

/// Flatten one snapshot. `labels[i]` names `snap.pythons[i]` (from matching); `verdicts` are the
/// rule verdicts on this snapshot, when a rule engine was given. The snapshot's facts come from
/// the walk of its JSON that the table of rules (`facts/table.rs`) drives.
pub fn flatten(
    snap: &Snapshot,
    labels: &[String],
    verdicts: Option<&[Verdict]>,
    opts: &FlattenOptions,
) -> Flat {
    let mut w = Walk::new(RULES, snap, labels, opts);
    if let Some(vs) = verdicts {
        if w.keep(Section::Verdicts) {
            w.facts
                .extend(verdict_facts(vs, &interpreter_roles(snap, labels)));
        }
    }
    // The walked value is freed off the caller's path.
    let value = walked_value(snap);
    w.run(&value);
    crate::snapshot::drop_json_off_path(value);
    Flat {
        facts: w.facts,
        entities: w.entities,
    }
}

/// The snapshot's JSON as the walk reads it. Packages are most of a large snapshot's JSON:
/// they are left out, and the walk reads them from the typed snapshot (`walk::packages`).
fn walked_value(snap: &Snapshot) -> serde_json::Value {
    crate::snapshot::python::with_package_fields_skipped(
        crate::snapshot::python::SKIP_ALL_PACKAGES,
        || serde_json::to_value(snap).unwrap_or_default(),
    )
}

/// Each interpreter's path with its matched role (`labels[i]` names `snap.pythons[i]`), the
/// longest path first, so a path that is a prefix of another is replaced after it.
fn interpreter_roles<'a>(snap: &'a Snapshot, labels: &'a [String]) -> Vec<(&'a str, &'a str)> {
    let mut v: Vec<(&str, &str)> = snap
        .pythons
        .iter()
        .zip(labels)
        .filter(|(_, l)| !l.is_empty())
        .map(|(p, l)| (p.path.as_str(), l.as_str()))
        .collect();
    v.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    v
}

/// A finding's subject with each interpreter named by its role, not its path:
/// `pythons[/home/a/p/.venv/bin/python]` -> `pythons[project-venv:.venv]`,
/// `libraries[libcudnn.so.9 @ /x/bin/python]` -> `libraries[libcudnn.so.9 @ project-venv:.venv]`.
/// So a finding on the same environment at another path (another user, another checkout) is the
/// same finding on both machines, not one new and one fixed.
pub(crate) fn subject_by_role(subject: &str, roles: &[(&str, &str)]) -> String {
    let mut s = subject.to_string();
    for (path, role) in roles {
        for (open, close) in [("[", "]"), ("@ ", "]")] {
            s = s.replace(
                &format!("{open}{path}{close}"),
                &format!("{open}{role}{close}"),
            );
        }
    }
    homeless(&s)
}

/// The rule verdicts as facts: `verdicts[rule subject]` (numbered when a rule fires twice on
/// one subject; interpreters in the subject named by role), the severity as value, the title
/// and message as note.
fn verdict_facts(vs: &[Verdict], roles: &[(&str, &str)]) -> Vec<Fact> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    vs.iter()
        .map(|v| {
            let subject = v
                .subject
                .as_deref()
                .map(|s| subject_by_role(s, roles))
                .unwrap_or_else(|| "machine".into());
            let base = format!("verdicts[{}] {}", v.rule_id, subject);
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            let key = if *n == 1 {
                base
            } else {
                format!("{base} #{n}")
            };
            Fact {
                key,
                value: v.severity.clone(),
                section: Section::Verdicts,
                ml: true,
                verdict: true,
                kind: ValueKind::Text,
                scope: None,
                note: Some(format!("{}: {}", v.title, homeless(&v.message))),
            }
        })
        .collect()
}

/// The schema paths the table names (`pythons[].version`), for the coverage test.
pub fn rule_paths() -> Vec<&'static str> {
    RULES.iter().map(|r| r.path).collect()
}

/// Why `compare` does not compare the schema leaf `path` (`a.b[].c`), when the table's most
/// specific rule on it or above it says so; `None` when it is compared.
pub fn ignored(path: &str) -> Option<&'static str> {
    let covers = |r: &&Rule| {
        path.strip_prefix(r.path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    };
    let most = RULES.iter().filter(covers).max_by_key(|r| r.path.len())?;
    match most.how {
        How::Ignore(why) => Some(why),
        _ => None,
    }
}

/// The schema paths (`a.b[].c`, map keys as they are) whose values the walk of `snap` reads,
/// with `--all`: a path reached covers what is under it.
pub fn reached(snap: &Snapshot, labels: &[String]) -> BTreeSet<String> {
    let opts = FlattenOptions {
        all: true,
        only: &[],
    };
    let mut w = Walk::new(RULES, snap, labels, &opts);
    w.reached = Some(BTreeSet::new());
    w.run(&walked_value(snap));
    w.reached.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The facts of a snapshot's JSON `v`, as (key, value, section, ml).
    fn facts_of(v: &Value, all: bool) -> Vec<(String, String, Section, bool)> {
        let snap = crate::Snapshot::empty();
        let opts = FlattenOptions { all, only: &[] };
        let mut w = Walk::new(RULES, &snap, &[], &opts);
        w.run(v);
        w.facts
            .into_iter()
            .map(|f| (f.key, f.value, f.section, f.ml))
            .collect()
    }

    #[test]
    fn a_field_no_rule_names_is_compared_under_its_parent() {
        let mut v = serde_json::to_value(crate::Snapshot::empty()).unwrap();
        v["host"]["numa_nodes"] = 2.into();
        v["host"]["live"]["pressure"] = "low".into();
        v["cuda"]["fabric"] = serde_json::json!([{"id": 1}]);
        v["nvml"]["library"] = "/usr/lib/libnvidia-ml.so.1".into();
        let got = facts_of(&v, false);
        let has = |k: &str| got.iter().find(|f| f.0 == k).cloned();
        let numa = has("host.numa_nodes").expect("an unnamed host field is compared");
        assert_eq!(
            (numa.1.as_str(), numa.2, numa.3),
            ("2", Section::Host, false)
        );
        let fabric = has("cuda.fabric").expect("an unnamed cuda list is compared");
        assert!(fabric.1.starts_with("1 entries (digest "), "{fabric:?}");
        assert_eq!((fabric.2, fabric.3), (Section::Cuda, true));
        // Ignored in the table; volatile (under `host.live`) only with --all.
        assert!(has("nvml.library").is_none());
        assert!(has("host.live.pressure").is_none());
        let all = facts_of(&v, true);
        assert!(all
            .iter()
            .any(|f| f.0 == "host.live.pressure" && f.1 == "low"));
    }
}
