//! The rule engine: known failures as YAML data (`rules/*.yaml`, embedded at build time, plus
//! `--rules DIR`), evaluated on a [`Snapshot`] into [`Finding`]s.
//!
//! - [`model`]: the file format as written (serde + spans; the source of `schema/rules.schema.json`);
//! - [`compile`]: validation and compilation (every error names file, line and column);
//! - [`path`]: fact paths and their check against the Snapshot's schema;
//! - [`eval`]: evaluation and evidence; [`template`]: messages and fixes.
//!
//! The language is documented in `docs/rule-language.md`.

pub mod compile;
pub mod eval;
pub mod lint;
pub mod model;
pub mod path;
pub mod template;

pub use compile::{Rule, RuleError};
pub use eval::Evidence;
pub use model::{Expect, Scope, Severity};

use crate::{Error, Snapshot};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path as FsPath, PathBuf};

/// The candidate nearest to `word` (a mistyped rule id or parameter), when one is near enough:
/// Jaro-Winkler similarity of at least 0.8, or `word` a part of it.
pub fn did_you_mean<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| {
            let score = if !word.is_empty() && c.contains(word) {
                1.0
            } else {
                strsim::jaro_winkler(word, c)
            };
            (score, c)
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

mod shipped {
    include!(concat!(env!("OUT_DIR"), "/shipped_rules.rs"));
}

/// What a rule found: the failure, why (evidence), and what to do.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Finding {
    /// The rule's stable id.
    pub rule: String,
    /// error | warning | info.
    pub severity: Severity,
    /// The rule's title.
    pub title: String,
    /// What it was evaluated for (`pythons[/venv/bin/python]`); absent for machine rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The message, filled with the facts it matched.
    pub message: String,
    /// The message as Markdown (the author's code spans kept, the facts escaped); empty when
    /// the finding was not made from a template (Markdown outputs then escape `message`).
    #[serde(skip)]
    #[schemars(skip)]
    pub message_md: String,
    /// The facts that made it fire.
    pub evidence: Vec<Evidence>,
    /// What to do.
    pub fix: String,
    /// URLs.
    pub references: Vec<String>,
    /// Where the rule is defined: `rules/libraries.yaml:6` (shipped) or the user file's path
    /// and line.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub rule_source: String,
}

/// A loaded, validated set of rules.
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    rules: Vec<Rule>,
}

/// Format rule errors, one per line.
pub fn format_errors(errors: &[RuleError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

fn to_error(errors: Vec<RuleError>) -> Error {
    let subject = errors
        .first()
        .map(|e| e.file.clone())
        .unwrap_or_else(|| "rules".into());
    let n = errors.len();
    Error::input(
        subject,
        format!(
            "invalid rules ({}):\n{}",
            crate::plural::plural(n, "error"),
            format_errors(&errors)
        ),
    )
}

impl RuleSet {
    /// The shipped pack.
    pub fn shipped() -> Result<RuleSet, Error> {
        RuleSet::compile_shipped(shipped::SHIPPED)
    }

    /// The shipped pack without its inline tests (blanked at build time, positions kept): what
    /// evaluating rules needs, in a little over half the parsing. `rules test`, `rules lint` and
    /// `rules show` use [`RuleSet::shipped`].
    pub fn shipped_lean() -> Result<RuleSet, Error> {
        RuleSet::compile_shipped(shipped::SHIPPED_LEAN)
    }

    fn compile_shipped(files: &[(&str, &str)]) -> Result<RuleSet, Error> {
        RuleSet::compile(
            files
                .iter()
                .map(|(name, text)| Ok((name.to_string(), text.to_string()))),
            true,
        )
    }

    /// Rules from files or directories (every `*.yaml`/`*.yml` in a directory, sorted).
    pub fn from_paths(paths: &[PathBuf]) -> Result<RuleSet, Error> {
        let files = rule_files(paths)?;
        RuleSet::compile(
            files.iter().map(|file| {
                let shown = file.display().to_string();
                let text = read_rule_file(file)?;
                let text = String::from_utf8(text)
                    .map_err(|_| Error::input(&shown, "rule file is not UTF-8"))?;
                Ok((shown, text))
            }),
            false,
        )
    }

    /// Compile every (name, text) file; all their errors together, duplicates included.
    fn compile(
        files: impl Iterator<Item = Result<(String, String), Error>>,
        shipped: bool,
    ) -> Result<RuleSet, Error> {
        let mut set = RuleSet::default();
        let mut errors = Vec::new();
        for file in files {
            let (name, text) = file?;
            match compile::Compiler::new(&name, &text).compile_file(shipped) {
                Ok(rules) => set.rules.extend(rules),
                Err(e) => errors.extend(e),
            }
        }
        errors.extend(set.duplicates());
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(to_error(errors))
        }
    }

    /// The shipped pack with user rules added; a user rule with a shipped id replaces it.
    pub fn shipped_with(user_dirs: &[PathBuf]) -> Result<RuleSet, Error> {
        RuleSet::shipped()?.with_user(user_dirs)
    }

    /// [`RuleSet::shipped_lean`] with user rules added (those keep their tests): for the
    /// commands that evaluate rules (`check`, `diagnose`, `compare`).
    pub fn for_evaluation(user_dirs: &[PathBuf]) -> Result<RuleSet, Error> {
        RuleSet::shipped_lean()?.with_user(user_dirs)
    }

    fn with_user(self, user_dirs: &[PathBuf]) -> Result<RuleSet, Error> {
        let mut set = self;
        if user_dirs.is_empty() {
            return Ok(set);
        }
        let user = RuleSet::from_paths(user_dirs)?;
        let replaced: std::collections::HashSet<&str> =
            user.rules.iter().map(|r| r.id.as_str()).collect();
        set.rules.retain(|r| !replaced.contains(r.id.as_str()));
        set.rules.extend(user.rules);
        Ok(set)
    }

    fn duplicates(&self) -> Vec<RuleError> {
        let mut seen: HashMap<&str, &Rule> = HashMap::new();
        let mut errors = Vec::new();
        for r in &self.rules {
            if let Some(first) = seen.insert(&r.id, r) {
                errors.push(RuleError {
                    file: r.origin.file.clone(),
                    line: r.origin.line,
                    column: 0,
                    snippet: None,
                    message: format!(
                        "duplicate rule id `{}` (first defined at {}:{})",
                        r.id, first.origin.file, first.origin.line
                    ),
                });
            }
        }
        errors
    }

    /// A set of already compiled rules (benchmarks, tests).
    pub fn from_rules(rules: Vec<Rule>) -> RuleSet {
        RuleSet { rules }
    }

    /// Every rule, in load order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule with this id.
    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }

    /// Override parameters: `ID.NAME=VALUE` (VALUE a number, true/false, or a string).
    pub fn set_params(&mut self, assignments: &[String]) -> Result<(), Error> {
        for a in assignments {
            let (id, name, value) = parse_param(a).map_err(|_| {
                Error::input(
                    format!("--param {a}"),
                    "expected RULE-ID.NAME=VALUE (see `envdoctor rules show RULE-ID`)",
                )
            })?;
            self.set_param(&id, &name, value)
                .map_err(|e| Error::input(format!("--param {a}"), e))?;
        }
        Ok(())
    }

    /// "no rule `ID`", with the nearest id when one is near.
    pub fn no_rule(&self, id: &str) -> String {
        let near = did_you_mean(id, self.rules.iter().map(|r| r.id.as_str()));
        match near {
            Some(n) => format!("no rule `{id}` (did you mean `{n}`?)"),
            None => format!("no rule `{id}`"),
        }
    }

    /// Override one parameter of one rule; the error says what is wrong (no such rule or
    /// parameter, with the nearest name).
    pub fn set_param(&mut self, id: &str, name: &str, value: Value) -> Result<(), String> {
        if self.get(id).is_none() {
            return Err(self.no_rule(id));
        }
        let Some(rule) = self.rules.iter_mut().find(|r| r.id == id) else {
            return Err(format!("no rule `{id}`"));
        };
        if !rule.params.contains_key(name) {
            let known: Vec<&str> = rule.params.keys().map(String::as_str).collect();
            let near = did_you_mean(name, known.iter().copied())
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            let has = if known.is_empty() {
                "it has no parameters".to_string()
            } else {
                format!("it has: {}", known.join(", "))
            };
            return Err(format!(
                "rule `{id}` has no parameter `{name}` ({near}{has})"
            ));
        }
        // The declared default gives the parameter its type: a number stays a number, a
        // boolean a boolean (`threshold=abc` would otherwise silently disable the rule).
        let want = match rule.params.get(name) {
            Some(Value::Number(_)) if !value.is_number() => Some("a number"),
            Some(Value::Bool(_)) if !value.is_boolean() => Some("true or false"),
            _ => None,
        };
        if let Some(want) = want {
            return Err(format!(
                "`{name}` of rule `{id}` is {want}, not `{}`",
                crate::rules::template::display_value(&value)
            ));
        }
        rule.params.insert(name.to_string(), value);
        Ok(())
    }

    /// Change a rule's severity (configuration's per-rule overrides).
    pub fn set_severity(&mut self, id: &str, severity: Severity) -> Result<(), String> {
        if self.get(id).is_none() {
            return Err(self.no_rule(id));
        }
        let Some(rule) = self.rules.iter_mut().find(|r| r.id == id) else {
            return Err(format!("no rule `{id}`"));
        };
        rule.severity = severity;
        Ok(())
    }

    /// Evaluate every rule on a snapshot. Findings are sorted: most severe first, then by rule
    /// id and subject.
    pub fn check(&self, snap: &Snapshot) -> Vec<Finding> {
        let root = self.view(snap);
        let found = crate::timings::span("rules: evaluate", || self.check_value(&root));
        crate::snapshot::drop_json_off_path(root);
        found
    }

    /// The snapshot as the rules read it: JSON, leaving out the package fields no rule names
    /// (a cheaper view than the whole snapshot).
    fn view(&self, snap: &Snapshot) -> Value {
        let mask = unread_package_fields(&self.rules);
        crate::timings::span("rules: snapshot to JSON view", || {
            crate::snapshot::python::with_package_fields_skipped(mask, || {
                serde_json::to_value(snap).unwrap_or(Value::Null)
            })
        })
    }

    /// Evaluate every rule on a snapshot given as JSON (a partial one is fine).
    pub fn check_value(&self, root: &Value) -> Vec<Finding> {
        let mut out = Vec::new();
        let index = eval::Index::default();
        for rule in &self.rules {
            out.extend(findings_of(rule, root, &rule.params, &index));
        }
        sort_findings(&mut out);
        out
    }

    /// For `check -v`: each rule's subjects and, for each, the facts it read (in rule order).
    pub fn looked_at(&self, snap: &Snapshot) -> Vec<(&Rule, Option<String>, Vec<Evidence>)> {
        let root = serde_json::to_value(snap).unwrap_or(Value::Null);
        let index = eval::Index::default();
        let mut out = Vec::new();
        for rule in &self.rules {
            for (subject, facts) in eval::looked_at(rule, &root, &rule.params, &index) {
                out.push((rule, subject, facts));
            }
        }
        out
    }

    /// [`RuleSet::check`] under limits: each rule stops after `limits.per_rule`, and every rule
    /// stops at `limits.until`. Returns the findings and, for each rule that was stopped, a
    /// message naming it (its findings on the subjects not reached are unknown, not absent).
    pub fn check_within(&self, snap: &Snapshot, limits: EvalLimits) -> (Vec<Finding>, Vec<String>) {
        let (out, stopped, _) = self.check_limited(snap, limits);
        (out, stopped)
    }

    /// [`RuleSet::check_within`], and the ids of the rules whose findings are incomplete
    /// (stopped or not run), for a caller that compares verdicts (`compare`).
    pub fn check_limited(
        &self,
        snap: &Snapshot,
        limits: EvalLimits,
    ) -> (Vec<Finding>, Vec<String>, Vec<String>) {
        let root = self.view(snap);
        let evaluating = std::time::Instant::now();
        let mut out = Vec::new();
        let mut stopped = Vec::new();
        let index = eval::Index::default();
        let mut not_run: Vec<&str> = Vec::new();
        let mut cut_ids: Vec<String> = Vec::new();
        for rule in &self.rules {
            let start = std::time::Instant::now();
            if limits.until.is_some_and(|u| start >= u) {
                not_run.push(&rule.id);
                continue;
            }
            let mut stop_at = start + limits.per_rule;
            if let Some(until) = limits.until {
                stop_at = stop_at.min(until);
            }
            let (hits, cut) =
                eval::run_rule_within(rule, &root, &rule.params, &index, Some(stop_at));
            out.extend(hits.into_iter().map(|h| finding(rule, h)));
            if cut {
                let why = if limits.until.is_some_and(|u| stop_at == u) {
                    "the check deadline came first".to_string()
                } else {
                    format!(
                        "it used its {:.1} s evaluation budget (`--rule-budget`)",
                        limits.per_rule.as_secs_f64()
                    )
                };
                cut_ids.push(rule.id.clone());
                stopped.push(format!(
                    "rule `{}` ({}:{}) was stopped after {:.2} s: {why}; its findings are \
                     incomplete",
                    rule.id,
                    rule.origin.file,
                    rule.origin.line,
                    start.elapsed().as_secs_f64()
                ));
            }
        }
        if !not_run.is_empty() {
            let shown: Vec<&str> = not_run.iter().take(5).copied().collect();
            stopped.push(format!(
                "{} rules were not evaluated: the check deadline came first ({}{})",
                not_run.len(),
                shown.join(", "),
                if not_run.len() > shown.len() {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        sort_findings(&mut out);
        crate::timings::record("rules: evaluate", evaluating.elapsed());
        crate::snapshot::drop_json_off_path(root);
        cut_ids.extend(not_run.into_iter().map(str::to_string));
        (out, stopped, cut_ids)
    }

    /// Run every rule's inline tests.
    pub fn run_tests(&self) -> Vec<TestResult> {
        let mut results = Vec::new();
        for rule in &self.rules {
            for t in &rule.tests {
                let mut params = rule.params.clone();
                params.extend(t.params.clone());
                let found = findings_of(rule, &t.facts, &params, &eval::Index::default());
                let failure = match (t.expect, found.is_empty()) {
                    (Expect::Fire, true) => {
                        Some("expected the rule to fire; it stayed quiet".into())
                    }
                    (Expect::Quiet, false) => {
                        Some(format!("expected quiet; it fired: {}", found[0].message))
                    }
                    (Expect::Fire, false) => t.message_contains.as_ref().and_then(|want| {
                        (!found.iter().any(|f| f.message.contains(want.as_str()))).then(|| {
                            format!(
                                "the message does not contain `{want}`: {}",
                                found[0].message
                            )
                        })
                    }),
                    (Expect::Quiet, true) => None,
                };
                results.push(TestResult {
                    rule: rule.id.clone(),
                    name: t.name.clone(),
                    file: rule.origin.file.clone(),
                    line: t.line,
                    failure,
                });
            }
        }
        results
    }

    /// Style problems that do not stop a rule from loading: missing tests, references, ...
    pub fn lint(&self) -> Vec<RuleError> {
        let mut out = Vec::new();
        for r in &self.rules {
            let mut warn = |m: String| {
                out.push(RuleError {
                    file: r.origin.file.clone(),
                    line: r.origin.line,
                    column: 0,
                    snippet: None,
                    message: format!("rule `{}`: {m}", r.id),
                })
            };
            if !r.tests.iter().any(|t| t.expect == Expect::Fire) {
                warn("has no `expect: fire` test".into());
            }
            if !r.tests.iter().any(|t| t.expect == Expect::Quiet) {
                warn("has no `expect: quiet` test".into());
            }
            if r.references.is_empty() {
                warn("has no references".into());
            }
            for e in &r.explains {
                if self.get(e).is_none() {
                    warn(format!("explains `{e}`, which no loaded rule defines"));
                }
            }
            if r.message.paths().next().is_none() {
                warn("its message names no fact: say which path or version".into());
            }
            for url in &r.references {
                if !url.starts_with("https://") && !url.starts_with("http://") {
                    warn(format!("reference `{url}` is not a URL"));
                }
            }
            for n in lint::lossy_numbers(&r.origin.source) {
                out.push(RuleError {
                    file: r.origin.file.clone(),
                    line: r.origin.line + n.line as u64,
                    column: 0,
                    snippet: None,
                    message: format!(
                        "rule `{}`: `{}` is unquoted, so YAML reads the number {}; quote it (\"{}\") to keep the version as written",
                        r.id, n.written, n.read_as, n.written
                    ),
                });
            }
        }
        out
    }
}

fn findings_of<'a>(
    rule: &Rule,
    root: &'a Value,
    params: &BTreeMap<String, Value>,
    index: &eval::Index<'a>,
) -> Vec<Finding> {
    eval::run_rule(rule, root, params, index)
        .into_iter()
        .map(|h| finding(rule, h))
        .collect()
}

/// The mask of [`crate::snapshot::python::SKIPPABLE_PACKAGE_FIELDS`] that no rule can read:
/// those whose name never follows a `.` as a whole word in any rule's source (conditions,
/// templates, subjects), so leaving them out of the rules' view cannot change a verdict.
fn unread_package_fields(rules: &[Rule]) -> u8 {
    let mut mask = 0u8;
    for (bit, field) in crate::snapshot::python::SKIPPABLE_PACKAGE_FIELDS
        .iter()
        .enumerate()
    {
        let named = rules.iter().any(|r| {
            r.origin.source.match_indices(field).any(|(at, _)| {
                let src = r.origin.source.as_bytes();
                let before = at.checked_sub(1).map(|i| src[i]);
                let after = src.get(at + field.len()).copied();
                before == Some(b'.')
                    && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
            })
        });
        if !named {
            mask |= 1 << bit;
        }
    }
    mask
}

fn finding(rule: &Rule, h: eval::Hit) -> Finding {
    Finding {
        rule: rule.id.clone(),
        severity: rule.severity,
        title: rule.title.clone(),
        subject: h.subject,
        message: h.message,
        message_md: h.message_md,
        evidence: h.evidence,
        fix: h.fix,
        references: rule.references.clone(),
        rule_source: format!("{}:{}", rule.origin.file, rule.origin.line),
    }
}

/// Most severe first, then by rule id and subject.
fn sort_findings(out: &mut [Finding]) {
    out.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.rule.cmp(&b.rule))
            .then_with(|| a.subject.cmp(&b.subject))
    });
}

/// Limits on rule evaluation ([`RuleSet::check_within`]).
#[derive(Clone, Copy, Debug)]
pub struct EvalLimits {
    /// The most one rule may take.
    pub per_rule: std::time::Duration,
    /// When every rule must have stopped (the check's deadline), if any.
    pub until: Option<std::time::Instant>,
}

impl Default for EvalLimits {
    fn default() -> Self {
        EvalLimits {
            per_rule: DEFAULT_RULE_BUDGET,
            until: None,
        }
    }
}

/// Default evaluation budget of one rule (the whole shipped pack takes milliseconds).
pub const DEFAULT_RULE_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// A parameter value from text: an integer, a float, true/false, else the string.
pub fn parse_scalar(s: &str) -> Value {
    if let Ok(n) = s.parse::<i64>() {
        return Value::from(n);
    }
    if let Ok(f) = s.parse::<f64>() {
        if let Some(n) = serde_json::Number::from_f64(f) {
            return Value::Number(n);
        }
    }
    match s {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::from(s),
    }
}

fn rule_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    for p in paths {
        let shown = p.display().to_string();
        let meta = std::fs::metadata(p)
            .map_err(|e| Error::input(&shown, format!("cannot read rules: {e}")))?;
        if meta.is_dir() {
            let rd = std::fs::read_dir(p)
                .map_err(|e| Error::input(&shown, format!("cannot list rule directory: {e}")))?;
            let mut here: Vec<PathBuf> = rd
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|f| is_yaml(f))
                .collect();
            here.sort();
            for f in &here {
                regular_file(f)?;
            }
            files.extend(here);
        } else {
            regular_file(p)?;
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// Largest rule file read (the whole shipped pack is far smaller).
pub const MAX_RULE_FILE: u64 = 8 * 1024 * 1024;

/// Refuse anything but a regular file (after links): opening a FIFO or a device would block
/// `check`, `compare`, `rules` and `explain` forever.
fn regular_file(p: &FsPath) -> Result<(), Error> {
    let shown = p.display().to_string();
    let meta = std::fs::metadata(p)
        .map_err(|e| Error::input(&shown, format!("cannot read rule file: {e}")))?;
    if !meta.is_file() {
        let kind = crate::root::file_kind(&meta.file_type());
        return Err(Error::input(
            &shown,
            format!("refused: a rule file must be a regular file, this is {kind}"),
        ));
    }
    if meta.len() > MAX_RULE_FILE {
        return Err(Error::input(
            &shown,
            format!(
                "refused: {} bytes, more than the {} MiB a rule file may have",
                meta.len(),
                MAX_RULE_FILE / (1024 * 1024)
            ),
        ));
    }
    Ok(())
}

/// Read a rule file already checked by [`regular_file`], never more than [`MAX_RULE_FILE`]
/// (it could have been swapped since), without blocking on a FIFO put in its place.
fn read_rule_file(p: &FsPath) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = p.display().to_string();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)
        .map_err(|e| Error::input(&shown, format!("cannot read rule file: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| Error::input(&shown, format!("cannot read rule file: {e}")))?;
    if !meta.is_file() {
        return Err(Error::input(
            &shown,
            "refused: a rule file must be a regular file",
        ));
    }
    let mut text = Vec::new();
    f.take(MAX_RULE_FILE + 1)
        .read_to_end(&mut text)
        .map_err(|e| Error::input(&shown, format!("cannot read rule file: {e}")))?;
    if text.len() as u64 > MAX_RULE_FILE {
        return Err(Error::input(
            &shown,
            format!(
                "refused: more than the {} MiB a rule file may have",
                MAX_RULE_FILE / (1024 * 1024)
            ),
        ));
    }
    Ok(text)
}

fn is_yaml(p: &FsPath) -> bool {
    p.extension().is_some_and(|x| x == "yaml" || x == "yml")
}

/// The outcome of one inline rule test.
#[derive(Clone, Debug, Serialize)]
pub struct TestResult {
    /// The rule.
    pub rule: String,
    /// The case.
    pub name: String,
    /// The rule's file.
    pub file: String,
    /// The case's line.
    pub line: u64,
    /// Why it failed (None: passed).
    pub failure: Option<String>,
}

/// `RULE.NAME=VALUE` (VALUE a number, true/false, or a string).
pub fn parse_param(a: &str) -> Result<(String, String, Value), String> {
    let bad = || format!("`{a}` is not RULE-ID.NAME=VALUE");
    let (lhs, value) = a.split_once('=').ok_or_else(bad)?;
    let (id, name) = lhs.rsplit_once('.').ok_or_else(bad)?;
    if id.is_empty() || name.is_empty() {
        return Err(bad());
    }
    Ok((id.to_string(), name.to_string(), parse_scalar(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lean pack (tests blanked at build time) is the full pack without its tests: the
    /// same rules, at the same lines, compiled the same way.
    #[test]
    fn the_lean_pack_is_the_full_pack_without_its_tests() {
        let full = RuleSet::shipped().unwrap_or_else(|e| panic!("{e}"));
        let lean = RuleSet::shipped_lean().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(full.rules().len(), lean.rules().len());
        assert!(full.rules().iter().all(|r| !r.tests.is_empty()));
        for (f, l) in full.rules().iter().zip(lean.rules()) {
            assert!(l.tests.is_empty(), "{}", l.id);
            let mut f = f.clone();
            f.tests.clear();
            f.origin.source = l.origin.source.clone();
            assert_eq!(format!("{f:?}"), format!("{l:?}"), "{}", l.id);
            assert!(
                f.origin.source.contains(&format!("id: {}", f.id)),
                "{}",
                f.id
            );
        }
        let (mut full_len, mut lean_len) = (0, 0);
        for ((_, full), (_, lean)) in shipped::SHIPPED.iter().zip(shipped::SHIPPED_LEAN) {
            assert_eq!(full.lines().count(), lean.lines().count());
            (full_len, lean_len) = (full_len + full.len(), lean_len + lean.len());
        }
        assert!(
            lean_len < full_len * 3 / 4,
            "{lean_len} of {full_len} bytes"
        );
    }

    #[test]
    fn the_shipped_pack_loads_and_every_test_passes() {
        let set = RuleSet::shipped().unwrap_or_else(|e| panic!("{e}"));
        assert!(!set.rules().is_empty());
        let results = set.run_tests();
        let failed: Vec<String> = results
            .iter()
            .filter_map(|r| {
                r.failure
                    .as_ref()
                    .map(|f| format!("{}:{} {} / {}: {f}", r.file, r.line, r.rule, r.name))
            })
            .collect();
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }

    #[test]
    fn shipped_rule_ids_are_unique_kebab_case_and_fully_tested() {
        let set = RuleSet::shipped().unwrap_or_else(|e| panic!("{e}"));
        let mut ids: Vec<&str> = set.rules().iter().map(|r| r.id.as_str()).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate ids");
        let lint = set.lint();
        assert!(lint.is_empty(), "{}", format_errors(&lint));
    }

    #[test]
    fn the_checked_in_rule_schema_is_current() {
        crate::schema::assert_current("rules.schema.json", &model::json_schema());
    }

    fn one(when: &str, message: &str, scope: &str, params: &str) -> RuleSet {
        let yaml = format!(
            "rules:\n  - id: t\n    title: t\n    severity: error\n    scope: {scope}\n    {params}\n    when: {when}\n    message: \"{message}\"\n    fix: f\n"
        );
        let rules = compile::Compiler::new("t.yaml", &yaml)
            .compile_file(false)
            .unwrap_or_else(|e| panic!("{}\n{yaml}", format_errors(&e)));
        RuleSet { rules }
    }

    fn machine() -> Value {
        serde_json::json!({
            "env": {"CUDA_VISIBLE_DEVICES": "0,7"},
            "pythons": [
                {"path": "/usr/bin/python3", "sources": [{"kind": "path", "detail": "python3"}],
                 "packages": [{"name": "torch", "version": "2.1.0+cu118"}, {"name": "numpy", "version": "1.26.4"}]},
                {"path": "/ide/bin/python", "sources": [{"kind": "vscode", "detail": "settings"}],
                 "packages": [{"name": "torch", "version": "2.5.1"}, {"name": "numpy", "version": "1.26.4"}]}
            ],
            "gpus": [
                {"index": 0, "name": "A100", "live": {"memory_used_percent": 91.5, "foreign_processes": 1}},
                {"index": 1, "name": "A100", "live": {"memory_used_percent": 3.0, "foreign_processes": 0}}
            ]
        })
    }

    #[test]
    fn scoped_rules_fire_once_per_matching_subject_with_evidence() {
        let set = one(
            "{all: [{fact: gpu.live.memory_used_percent, gte: {param: pct}}, {fact: gpu.live.foreign_processes, gt: 0}]}",
            "GPU {{gpu.index}} is {{gpu.live.memory_used_percent}}% full (over {{param.pct}}%)",
            "gpu",
            "params: {pct: 50}",
        );
        let f = set.check_value(&machine());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].subject.as_deref(), Some("gpus[0]"));
        assert_eq!(f[0].message, "GPU 0 is 91.5% full (over 50%)");
        assert_eq!(
            f[0].evidence[0],
            Evidence {
                path: "gpus[0].live.memory_used_percent".into(),
                value: serde_json::json!(91.5)
            }
        );
        assert_eq!(f[0].evidence[1].value, serde_json::json!(1));
        // A lower threshold catches the second GPU too.
        let mut set = set;
        set.set_params(&["t.pct=2".into()]).unwrap();
        // foreign_processes > 0 still excludes GPU 1.
        assert_eq!(set.check_value(&machine()).len(), 1);
    }

    #[test]
    fn relating_two_interpreters_with_a_dynamic_package_name() {
        let set = one(
            "{any_in: pythons, as: ide, where: {all: [{any_in: ide.sources, as: s, where: {fact: s.kind, equals: vscode}}, {any_in: pythons, as: sh, where: {all: [{any_in: sh.sources, as: s2, where: {fact: s2.kind, equals: path}}, {any_in: ide.packages, as: p, where: {fact: p.version, not_equals: {fact: sh.package.(p.name).version}}}]}}]}}",
            "{{p.name}}: {{ide.package.(p.name).version}} in {{ide.path}} vs {{sh.package.(p.name).version}} in {{sh.path}}",
            "machine",
            "",
        );
        let f = set.check_value(&machine());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].message,
            "torch: 2.5.1 in /ide/bin/python vs 2.1.0+cu118 in /usr/bin/python3"
        );
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.path == "pythons[/usr/bin/python3].packages[torch].version"),
            "{:?}",
            f[0].evidence
        );
    }

    #[test]
    fn quantifiers_all_none_and_negation() {
        let all = one(
            "{all_in: pythons, as: p, where: {fact: p.package.numpy.version, pep440: \">=1.26\"}}",
            "x",
            "machine",
            "",
        );
        assert_eq!(all.check_value(&machine()).len(), 1);
        assert!(
            all.check_value(&serde_json::json!({"pythons": []}))
                .is_empty(),
            "all_in over nothing"
        );
        let none = one(
            "{none_in: pythons, as: p, where: {fact: p.package.jax.version, exists: true}}",
            "x",
            "machine",
            "",
        );
        assert_eq!(none.check_value(&machine()).len(), 1);
        let not = one(
            "{not: {fact: env.CUDA_VISIBLE_DEVICES, exists: true}}",
            "x",
            "machine",
            "",
        );
        assert!(not.check_value(&machine()).is_empty());
        assert_eq!(not.check_value(&serde_json::json!({})).len(), 1);
        let local = one(
            "{fact: python.package.torch.version, pep440: \"<2.2\"}",
            "{{python.path}}",
            "interpreter",
            "",
        );
        let f = local.check_value(&machine());
        assert_eq!(f.len(), 1, "a local tag does not stop PEP 440 matching");
        assert_eq!(f[0].message, "/usr/bin/python3");
        let missing = one(
            "{fact: python.package.jax.version, not_equals: x}",
            "x",
            "interpreter",
            "",
        );
        assert!(
            missing.check_value(&machine()).is_empty(),
            "a missing fact is never unequal"
        );
        let m = one(
            "{fact: env.CUDA_VISIBLE_DEVICES, matches: \"(^|,)7\"}",
            "{{env.CUDA_VISIBLE_DEVICES}}",
            "machine",
            "",
        );
        assert_eq!(m.check_value(&machine())[0].message, "0,7");
    }

    #[test]
    fn duplicate_ids_across_user_files_are_an_error_naming_both_places() {
        let dir = tempfile::tempdir().unwrap();
        let rule = "rules:\n  - id: same-id\n    title: t\n    severity: info\n    scope: machine\n    when: {fact: env.X, exists: true}\n    message: \"{{env.X}}\"\n    fix: f\n";
        std::fs::write(dir.path().join("a.yaml"), rule).unwrap();
        std::fs::write(dir.path().join("b.yml"), rule).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a rule file").unwrap();
        let err = RuleSet::from_paths(&[dir.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("duplicate rule id `same-id`"), "{err}");
        assert!(err.contains("b.yml:2") && err.contains("a.yaml:2"), "{err}");
        let set = one("{fact: env.X, exists: true}", "x", "machine", "");
        assert_eq!(set.rules()[0].when.facts(), vec!["env.X".to_string()]);
    }

    #[test]
    fn params_are_overridden_by_name() {
        let mut set = RuleSet::shipped().unwrap_or_else(|e| panic!("{e}"));
        assert!(set.set_params(&["nope.x=1".into()]).is_err());
        assert!(set.set_params(&["bad".into()]).is_err());
        assert_eq!(parse_scalar("50"), Value::from(50));
        assert_eq!(parse_scalar("true"), Value::Bool(true));
        assert_eq!(parse_scalar("x"), Value::from("x"));
    }
}

#[cfg(test)]
mod view_tests {
    use super::*;
    use crate::snapshot::python::{Package, Python};

    fn snap() -> Snapshot {
        let pkg = |name: &str, version: &str, requires: &[&str]| Package {
            name: name.into(),
            version: version.into(),
            version_valid: true,
            location: "/v/lib/python3.11/site-packages".into(),
            metadata: format!("/v/lib/python3.11/site-packages/{name}-{version}.dist-info"),
            installer: Some("pip".into()),
            requires: requires.iter().map(|s| s.to_string()).collect(),
            requires_python: Some(">=3.9".into()),
            ..Default::default()
        };
        let mut s = Snapshot::empty();
        s.pythons.push(Python {
            path: "/v/bin/python".into(),
            exists: true,
            version: Some("3.11.7".into()),
            packages: vec![
                pkg("numpy", "2.1.3", &[]),
                pkg("tensorflow", "2.15.0", &["numpy<2.0.0,>=1.23.5"]),
                pkg("torch", "2.5.1", &["nvidia-cudnn-cu12==9.1.0.70"]),
            ],
            ..Default::default()
        });
        s
    }

    #[test]
    fn the_rules_view_leaves_out_only_package_fields_no_rule_reads() {
        let shipped = RuleSet::shipped().unwrap_or_else(|e| panic!("{e}"));
        let mask = unread_package_fields(shipped.rules());
        // `installer` is read by the pip-check rules; `requires` and `requires_python` are not.
        assert_eq!(mask, 0b110);
        let s = snap();
        let full = serde_json::to_value(&s).unwrap_or(Value::Null);
        let view = crate::snapshot::python::with_package_fields_skipped(mask, || {
            serde_json::to_value(&s).unwrap_or(Value::Null)
        });
        let p = &view["pythons"][0]["packages"][1];
        assert!(p.get("requires").is_none() && p.get("requires_python").is_none());
        assert_eq!(p["installer"], "pip");
        assert!(full["pythons"][0]["packages"][1].get("requires").is_some());
        // Out of the view, serialising is whole again.
        assert_eq!(serde_json::to_value(&s).unwrap_or(Value::Null), full);
        // Same verdicts on the view as on the whole snapshot.
        let on_view = shipped.check(&s);
        let on_full = shipped.check_value(&full);
        let ids = |f: &[Finding]| -> Vec<(String, Option<String>)> {
            f.iter()
                .map(|f| (f.rule.clone(), f.subject.clone()))
                .collect()
        };
        assert_eq!(ids(&on_view), ids(&on_full));
    }

    #[test]
    fn a_rule_that_reads_requires_keeps_it_in_the_view() {
        let yaml = "rules:\n  - id: t\n    title: t\n    severity: error\n    scope: interpreter\n    when:\n      any_in: python.packages\n      as: p\n      where: {fact: p.requires, contains: \"nvidia-cudnn-cu12==9.1.0.70\"}\n    message: \"{{ p.name }}\"\n    fix: f\n";
        let rules = compile::Compiler::new("t.yaml", yaml)
            .compile_file(false)
            .unwrap_or_else(|e| panic!("{}\n{yaml}", format_errors(&e)));
        let set = RuleSet { rules };
        assert_eq!(unread_package_fields(set.rules()), 0b101);
        let found = set.check(&snap());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].message, "torch");
    }
}
