//! Confirming a candidate rule with the machine's facts (and the log's, under `log`): the
//! rule's `when` holds (for the subject the log names, when it names one) → confirmed; else the
//! rule is judged three-valued ([`crate::rules::eval::judge`]): a subject on which it is
//! unknown → plausible, naming each fact that is absent or cannot be ordered and how to collect
//! it; only when present facts contradict it on every subject → ruled out, naming them. A
//! missing or unorderable value is never a contradiction.

use crate::rules::compile::Rule;
use crate::rules::eval::{self, Evidence, Tri};
use crate::rules::model::Scope;
use serde::Serialize;
use serde_json::Value;

/// The verdict on one candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The rule's condition holds on the facts.
    Confirmed,
    /// The log matches but facts needed to decide are missing.
    Plausible,
    /// The facts contradict the rule.
    RuledOut,
}

impl Verdict {
    /// As written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Confirmed => "confirmed",
            Verdict::Plausible => "plausible",
            Verdict::RuledOut => "ruled-out",
        }
    }
}

/// A fact that would decide a plausible candidate.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MissingFact {
    /// The fact path, as the rule reads it.
    pub fact: String,
    /// How to get it.
    pub how: String,
}

/// The outcome of confirming one rule.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// The subject it holds (or was checked) for.
    pub subject: Option<String>,
    /// The rule's message when confirmed; otherwise why not, in one line.
    pub message: String,
    /// Facts that confirm or contradict it.
    pub evidence: Vec<Evidence>,
    /// Facts missing to decide.
    pub missing: Vec<MissingFact>,
    /// The fix (rendered with the facts when confirmed).
    pub fix: String,
}

fn how_to_get(section: &str) -> &'static str {
    match section {
        "libraries" | "frameworks" => "no framework's native libraries were resolved here: run `envdoctor diagnose` where the job ran (not with --no-load), or pass --from a snapshot taken there",
        "gpus" | "nvml" => "no GPU facts here (NVML not found): run on the GPU machine, or pass --from a snapshot taken there",
        "checkpoints" => "no checkpoint was inspected: pass --checkpoint PATH (the file or directory the job loads)",
        "pythons" => "no matching Python interpreter was found: pass --project DIR (the job's project), or run where the job ran",
        "cuda" => "no CUDA facts here: run on the GPU machine, or pass --from a snapshot taken there",
        "log" => "the log does not say: diagnose the job's whole output (`envdoctor run -- CMD`, or the full stderr file), not an excerpt",
        _ => "run where the job ran, or pass --from a snapshot taken there",
    }
}

/// Confirm `rule` on `root` (a snapshot as JSON). The log binds the rule's subject: `names`
/// (sonames the matched lines name) for library rules, `sites` (site-packages directories its
/// traceback frames name) for interpreter rules.
pub fn confirm(rule: &Rule, root: &Value, names: &[String], sites: &[String]) -> Outcome {
    let index = eval::Index::default();
    let hits = eval::run_rule(rule, root, &rule.params, &index);
    let targets = log_targets(rule, root, names, sites);
    if let Some(out) = confirmed_for_targets(rule, &hits, &targets) {
        return out;
    }
    if let Some(out) = held_for_another(rule, root, &hits, &targets) {
        return out;
    }
    if let Some(out) = lacking_subjects(rule, root, &targets) {
        return out;
    }
    // A scoped rule is judged on the subjects the log names.
    let narrowed = narrow_to_targets(rule, root, &targets);
    let root = narrowed.as_ref().unwrap_or(root);
    judged(rule, root)
}

/// The fix with the facts it names shown as `<path>` (for a rule not confirmed).
fn unrendered(rule: &Rule) -> String {
    rule.fix
        .render(&|p| Some(Value::String(format!("<{}>", p.text))))
}

/// The subjects the log binds: the sonames it names for library rules, the interpreters that
/// ran its traceback's sites for interpreter rules, none otherwise.
fn log_targets(rule: &Rule, root: &Value, names: &[String], sites: &[String]) -> Vec<String> {
    match rule.scope {
        Scope::Library => names.to_vec(),
        Scope::Interpreter => interpreters_that_ran(root, sites),
        _ => Vec::new(),
    }
}

/// Whether `root`'s `libraries` hold one whose soname is among `targets`.
fn libraries_name_one(libs: Option<&Value>, targets: &[String]) -> bool {
    libs.and_then(Value::as_array).is_some_and(|libs| {
        libs.iter().any(|l| {
            l.get("soname")
                .and_then(Value::as_str)
                .is_some_and(|s| targets.iter().any(|n| n == s))
        })
    })
}

/// Confirmed: the first hit for a subject the log names (any hit when it names none).
fn confirmed_for_targets(rule: &Rule, hits: &[eval::Hit], targets: &[String]) -> Option<Outcome> {
    let bind = !targets.is_empty();
    let is_target = |subject: &str| match rule.scope {
        Scope::Interpreter => targets.iter().any(|p| subject == format!("pythons[{p}]")),
        _ => targets.iter().any(|n| subject.contains(n.as_str())),
    };
    let h = hits
        .iter()
        .find(|h| !bind || h.subject.as_deref().is_some_and(is_target))?;
    Some(Outcome {
        verdict: Verdict::Confirmed,
        subject: h.subject.clone(),
        message: h.message.clone(),
        evidence: h.evidence.clone(),
        missing: Vec::new(),
        fix: h.fix.clone(),
    })
}

/// Ruled out: the rule holds here, but for another subject than the one the log names (unless
/// the log names a library the facts do not hold: that cannot be judged here).
fn held_for_another(
    rule: &Rule,
    root: &Value,
    hits: &[eval::Hit],
    targets: &[String],
) -> Option<Outcome> {
    let bind = !targets.is_empty();
    let named_here =
        rule.scope != Scope::Library || !bind || libraries_name_one(root.get("libraries"), targets);
    let h = hits.first().filter(|_| named_here)?;
    Some(Outcome {
        verdict: Verdict::RuledOut,
        subject: h.subject.clone(),
        message: format!(
            "the log names {}; on these facts the rule holds only for {}",
            targets.join(", "),
            hits.iter()
                .filter_map(|h| h.subject.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        evidence: h.evidence.clone(),
        missing: Vec::new(),
        fix: unrendered(rule),
    })
}

/// Plausible: the rule does not hold for lack of subjects (its section is empty, or holds none
/// of the libraries the log names).
fn lacking_subjects(rule: &Rule, root: &Value, targets: &[String]) -> Option<Outcome> {
    let (section, _) = rule.scope.binding()?;
    let bind = !targets.is_empty();
    let empty = root
        .get(section)
        .and_then(Value::as_array)
        .is_none_or(|a| a.is_empty());
    let unnamed = bind
        && rule.scope == Scope::Library
        && root.get(section).and_then(Value::as_array).is_some()
        && !libraries_name_one(root.get(section), targets);
    if !(empty || unnamed) {
        return None;
    }
    let fact = if unnamed {
        format!("{section}[{}]", targets.join(", "))
    } else {
        format!("{section}[]")
    };
    Some(Outcome {
        verdict: Verdict::Plausible,
        subject: None,
        message: format!("cannot be checked: {fact} is not among the facts"),
        evidence: Vec::new(),
        missing: vec![MissingFact {
            fact,
            how: how_to_get(section).into(),
        }],
        fix: unrendered(rule),
    })
}

/// `root` with its scoped section narrowed to the subjects the log names; None when it names
/// none.
fn narrow_to_targets(rule: &Rule, root: &Value, targets: &[String]) -> Option<Value> {
    if targets.is_empty() {
        return None;
    }
    let mut r = root.clone();
    let (section, key) = match rule.scope {
        Scope::Interpreter => ("pythons", "path"),
        _ => ("libraries", "soname"),
    };
    if let Some(Value::Array(items)) = r.get_mut(section) {
        items.retain(|l| {
            l.get(key)
                .and_then(Value::as_str)
                .is_some_and(|s| targets.iter().any(|n| n == s))
        });
    }
    Some(r)
}

/// Plausible or ruled out, from the rule judged three-valued on every subject: any subject
/// whose verdict is unknown makes it plausible (naming the facts that are absent or cannot be
/// ordered); only when every subject is contradicted by present facts is it ruled out.
fn judged(rule: &Rule, root: &Value) -> Outcome {
    let index = eval::Index::default();
    let judgements = eval::judge(rule, root, &rule.params, &index);
    if let Some(j) = judgements.iter().find(|j| j.value != Tri::False) {
        let mut unknown = j.why.unknown.clone();
        dedup(&mut unknown);
        let missing: Vec<MissingFact> = unknown
            .iter()
            .map(|e| MissingFact {
                how: how_for(rule, e),
                fact: e.path.clone(),
            })
            .collect();
        let named: Vec<String> = unknown
            .iter()
            .take(4)
            .map(|e| match &e.value {
                Value::Null => format!("{} is not among the facts", e.path),
                Value::Array(a) if a.is_empty() => format!("{} is empty here", e.path),
                v => format!(
                    "{} = {} cannot be ordered by the rule's test",
                    e.path,
                    short(v)
                ),
            })
            .collect();
        return Outcome {
            verdict: Verdict::Plausible,
            subject: j.subject.clone(),
            message: if named.is_empty() {
                "cannot be checked on these facts".into()
            } else {
                format!("cannot be checked: {}", named.join("; "))
            },
            evidence: j
                .why
                .support
                .iter()
                .filter(|e| !is_big(&e.value))
                .cloned()
                .collect(),
            missing,
            fix: unrendered(rule),
        };
    }
    let mut evidence: Vec<Evidence> = judgements
        .iter()
        .flat_map(|j| j.why.against.iter().cloned())
        .filter(|e| !is_big(&e.value))
        .collect();
    dedup(&mut evidence);
    let shown: Vec<String> = evidence
        .iter()
        .take(3)
        .map(|e| format!("{} = {}", e.path, short(&e.value)))
        .collect();
    Outcome {
        verdict: Verdict::RuledOut,
        subject: judgements.first().and_then(|j| j.subject.clone()),
        message: if shown.is_empty() {
            "the facts contradict it".into()
        } else {
            format!("the facts contradict it: {}", shown.join("; "))
        },
        evidence,
        missing: Vec::new(),
        fix: unrendered(rule),
    }
}

/// How to collect a fact that is missing or cannot be ordered.
fn how_for(rule: &Rule, e: &Evidence) -> String {
    if let Some(status) = e.value.as_str().and_then(|v| v.strip_prefix("load ")) {
        return format!(
            "the load probe has no result for it ({status}: loaded through another library, or \
             out of time): run `envdoctor diagnose` where the job ran with a longer --deadline, \
             or pass --from a snapshot taken there"
        );
    }
    if !e.value.is_null() && !matches!(&e.value, Value::Array(a) if a.is_empty()) {
        return format!(
            "its value `{}` is not a version the rule's test can order (a nightly or local \
             build): compare it by hand with the rule (`envdoctor explain {}`)",
            short(&e.value),
            rule.id
        );
    }
    if e.path.ends_with("compute_capabilities") {
        return "the framework's compiled architectures are read by loading it: run `envdoctor \
                diagnose` where the job ran without --no-load, or pass --from a snapshot taken \
                there"
            .into();
    }
    if e.path.contains(".load") {
        return "load results come from loading the libraries: run `envdoctor diagnose` where the \
                job ran without --no-load, or pass --from a snapshot taken there"
            .into();
    }
    how_to_get(section_of(rule, &e.path)).into()
}

/// The interpreters of `root` whose `sys.path` holds one of `sites`.
fn interpreters_that_ran(root: &Value, sites: &[String]) -> Vec<String> {
    let Some(Value::Array(pythons)) = root.get("pythons") else {
        return Vec::new();
    };
    let on_path = |p: &Value| {
        p.get("sys_path")
            .and_then(Value::as_array)
            .is_some_and(|entries| {
                entries.iter().any(|e| {
                    e.get("path").and_then(Value::as_str).is_some_and(|d| {
                        sites
                            .iter()
                            .any(|s| s.trim_end_matches('/') == d.trim_end_matches('/'))
                    })
                })
            })
    };
    pythons
        .iter()
        .filter(|p| on_path(p))
        .filter_map(|p| p.get("path").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

fn section_of<'a>(rule: &Rule, fact: &'a str) -> &'a str {
    let head = fact.split(['.', '[']).next().unwrap_or(fact);
    match rule.scope.binding() {
        Some((section, var)) if head == var => section,
        _ => match head {
            "python" | "py" => "pythons",
            "checkpoint" => "checkpoints",
            "gpu" => "gpus",
            "library" => "libraries",
            "framework" => "frameworks",
            other => other,
        },
    }
}

fn is_big(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.len() > 8,
        Value::Object(_) => true,
        _ => false,
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::Null => "absent".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn dedup(ev: &mut Vec<Evidence>) {
    let mut seen = std::collections::HashSet::new();
    ev.retain(|e| seen.insert(e.path.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(scope: &str, when: &str) -> Rule {
        let yaml = format!(
            "rules:\n  - id: t\n    title: t\n    severity: error\n    scope: {scope}\n    when: {when}\n    message: \"m\"\n    fix: \"f\"\n"
        );
        crate::rules::compile::Compiler::new("t.yaml", &yaml)
            .compile_file(false)
            .unwrap_or_else(|e| panic!("{e:?}"))
            .remove(0)
    }

    fn lib(soname: &str, resolves: bool) -> Value {
        json!({"soname": soname, "family": "x", "requester": "/r.so", "wanted_by": ["tensorflow 2.4.0"], "resolves": resolves})
    }

    #[test]
    fn library_rules_are_judged_on_the_soname_the_log_names() {
        let r = rule("library", "{fact: library.resolves, equals: false}");
        let facts =
            json!({"libraries": [lib("libcublas.so.11", false), lib("libcusolver.so.10", true)]});
        // It holds for another library than the one the log names.
        let o = confirm(&r, &facts, &["libcusolver.so.10".into()], &[]);
        assert_eq!(o.verdict, Verdict::RuledOut, "{o:?}");
        assert!(o.message.contains("libcublas.so.11"), "{}", o.message);
        let o = confirm(&r, &facts, &["libcublas.so.11".into()], &[]);
        assert_eq!(o.verdict, Verdict::Confirmed);
        assert_eq!(o.subject.as_deref(), Some("libraries[libcublas.so.11]"));
        // A soname the facts do not hold: plausible, naming it.
        let o = confirm(&r, &facts, &["libcudnn.so.8".into()], &[]);
        assert_eq!(o.verdict, Verdict::Plausible);
        assert_eq!(o.missing[0].fact, "libraries[libcudnn.so.8]");
        // No library facts at all: plausible, with how to get them.
        let o = confirm(&r, &json!({}), &[], &[]);
        assert_eq!(o.verdict, Verdict::Plausible);
        assert!(o.missing[0].how.contains("--from"), "{:?}", o.missing);
    }

    #[test]
    fn the_failing_conjunct_names_the_contradicting_or_missing_fact() {
        let r = rule(
            "machine",
            "{all: [{fact: env.X, exists: true}, {fact: cuda.driver.version, gte: \"550\"}]}",
        );
        let o = confirm(
            &r,
            &json!({"env": {"X": "1"}, "cuda": {"driver": {"version": "535.1"}}}),
            &[],
            &[],
        );
        assert_eq!(o.verdict, Verdict::RuledOut);
        assert_eq!(o.evidence[0].path, "cuda.driver.version");
        assert!(
            o.message.contains("cuda.driver.version = 535.1"),
            "{}",
            o.message
        );
        let o = confirm(&r, &json!({"env": {"X": "1"}}), &[], &[]);
        assert_eq!(o.verdict, Verdict::Plausible, "{o:?}");
        assert_eq!(o.missing[0].fact, "cuda.driver.version");
        // An unset environment variable is a fact, not a missing one.
        let o = confirm(
            &r,
            &json!({"cuda": {"driver": {"version": "560"}}}),
            &[],
            &[],
        );
        assert_eq!(o.verdict, Verdict::RuledOut, "{o:?}");
        let o = confirm(
            &r,
            &json!({"env": {"X": "1"}, "cuda": {"driver": {"version": "560"}}}),
            &[],
            &[],
        );
        assert_eq!(o.verdict, Verdict::Confirmed);
        assert_eq!(o.fix, "f");
    }

    /// A load the probe did not attempt (`skipped`: loaded through another library, or the
    /// deadline came first) is no result: the rule is plausible, not ruled out (the real
    /// torch 2.6 + nvjitlink 12.1 venv, whose libcusparse.so.12 loads through libtorch_cuda.so).
    #[test]
    fn a_skipped_or_timed_out_load_is_unknown_not_a_contradiction() {
        let r = rule(
            "library",
            "{all: [{fact: library.resolves, equals: true}, {fact: library.load.status, equals: error}, {fact: library.load.error, matches: \"undefined symbol\"}]}",
        );
        let with_load = |load: Value| {
            let mut l = lib("libcusparse.so.12", true);
            l["load"] = load;
            json!({ "libraries": [l] })
        };
        let names = ["libcusparse.so.12".to_string()];
        for status in ["skipped", "timeout"] {
            let facts = with_load(
                json!({"status": status, "error": "loaded through /v/torch/lib/libtorch_cuda.so"}),
            );
            let o = confirm(&r, &facts, &names, &[]);
            assert_eq!(o.verdict, Verdict::Plausible, "{status}: {o:?}");
            assert!(o.missing[0].how.contains(status), "{:?}", o.missing);
        }
        // A load that ran and worked contradicts it; one that failed so confirms it.
        let o = confirm(&r, &with_load(json!({"status": "ok"})), &names, &[]);
        assert_eq!(o.verdict, Verdict::RuledOut, "{o:?}");
        let facts = with_load(json!({"status": "error", "error": "undefined symbol: x"}));
        assert_eq!(confirm(&r, &facts, &names, &[]).verdict, Verdict::Confirmed);
    }
}
