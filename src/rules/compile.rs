//! Turning rules as written ([`super::model`]) into rules the evaluator runs, validating
//! everything on the way: one condition kind per node, known fact paths (against the Snapshot's
//! schema), regexes, PEP 440 specifiers, parameters, templates and test facts. Every error names
//! the file, line and column.

use super::model::{self, Cast, Expect, RawCond, RawOperand, RawRule, Scope, Severity};
use super::path::{Node, Path, SchemaWalker, Seg};
use super::template::Template;
use pep440_rs::VersionSpecifiers;
use regex::Regex;
use serde_json::Value;
use serde_saphyr::{Location, Spanned};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A problem in a rule file, at a place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    /// The file.
    pub file: String,
    /// 1-based line (0 when unknown).
    pub line: u64,
    /// 1-based column (0 when unknown).
    pub column: u64,
    /// What is wrong.
    pub message: String,
    /// The source line with a caret under the column, when the text is at hand.
    pub snippet: Option<String>,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )?;
        } else {
            write!(f, "{}: {}", self.file, self.message)?;
        }
        if let Some(s) = &self.snippet {
            write!(f, "\n{s}")?;
        }
        Ok(())
    }
}

/// Line `line` of `text` with a caret under `column` (both 1-based), as a compiler shows it:
/// ```text
///    4 |     severity: eror
///      |               ^
/// ```
pub fn snippet(text: &str, line: u64, column: u64) -> Option<String> {
    let src = text
        .lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    // A pathological line is cut: the point is where, not all of it.
    let src: String = src.chars().take(200).collect();
    let col = usize::try_from(column)
        .unwrap_or(1)
        .clamp(1, src.chars().count() + 1);
    let width = line.to_string().len().max(3);
    Some(format!(
        "{line:>width$} | {src}\n{blank:>width$} | {pad}^",
        blank = "",
        pad = " ".repeat(col - 1)
    ))
}

/// A compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Stable kebab-case id.
    pub id: String,
    /// One line.
    pub title: String,
    /// How bad.
    pub severity: Severity,
    /// What it is evaluated for.
    pub scope: Scope,
    /// The condition.
    pub when: Cond,
    /// Message template.
    pub message: Template,
    /// Fix template.
    pub fix: Template,
    /// Parameters with their values (defaults, then overrides).
    pub params: BTreeMap<String, Value>,
    /// Explain sections.
    pub explain: model::RawExplain,
    /// Symptom regexes, as written.
    pub symptoms: Vec<String>,
    /// The specificity of each symptom (same order; 1 generic .. 3 exact).
    pub symptom_specificity: Vec<u8>,
    /// URLs.
    pub references: Vec<String>,
    /// Rules whose failure this one causes (`envdoctor diagnose` ranks it above them).
    pub explains: Vec<String>,
    /// Inline tests.
    pub tests: Vec<RuleTest>,
    /// Where it was written.
    pub origin: Origin,
}

/// Where a rule was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The file (`rules/python.yaml` for shipped rules).
    pub file: String,
    /// 1-based line of its `id`.
    pub line: u64,
    /// Whether it ships inside envdoctor.
    pub shipped: bool,
    /// The rule's YAML text, for `rules show`.
    pub source: String,
}

/// A compiled test case.
#[derive(Clone, Debug)]
pub struct RuleTest {
    /// What it shows.
    pub name: String,
    /// The partial snapshot.
    pub facts: Value,
    /// Expected verdict.
    pub expect: Expect,
    /// Substring of the message, when given.
    pub message_contains: Option<String>,
    /// Parameter overrides for this case.
    pub params: BTreeMap<String, Value>,
    /// Line of the case.
    pub line: u64,
}

/// A compiled condition.
#[derive(Clone, Debug)]
pub enum Cond {
    /// Every one.
    All(Vec<Cond>),
    /// The first that holds.
    Any(Vec<Cond>),
    /// Negation.
    Not(Box<Cond>),
    /// A quantifier over a list.
    Quant {
        /// any / all / none.
        kind: Quant,
        /// The list.
        list: Path,
        /// The variable.
        var: String,
        /// The condition on each element.
        body: Box<Cond>,
    },
    /// A test on one fact.
    Test {
        /// The fact.
        fact: Path,
        /// Its cast.
        cast: Option<Cast>,
        /// The test.
        op: Op,
    },
}

impl Cond {
    /// Every fact path the condition reads (lists of quantifiers included), in order, once each.
    pub fn facts(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(&mut out);
        let mut seen = std::collections::HashSet::new();
        out.retain(|p| seen.insert(p.clone()));
        out
    }

    fn collect(&self, out: &mut Vec<String>) {
        match self {
            Cond::All(items) | Cond::Any(items) => items.iter().for_each(|c| c.collect(out)),
            Cond::Not(inner) => inner.collect(out),
            Cond::Quant { list, body, .. } => {
                out.push(list.text.clone());
                body.collect(out);
            }
            Cond::Test { fact, op, .. } => {
                out.push(fact.text.clone());
                for o in op.operands() {
                    if let Operand::Fact(p) = o {
                        out.push(p.text.clone());
                    }
                }
            }
        }
    }
}

/// Quantifier kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quant {
    /// Some element.
    Any,
    /// Every element (of a non-empty list).
    All,
    /// No element.
    None,
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Lte,
    /// `>`
    Gt,
    /// `>=`
    Gte,
}

/// A test operator with its operand.
#[derive(Clone, Debug)]
pub enum Op {
    /// Present or absent.
    Exists(bool),
    /// Equal.
    Equals(Operand),
    /// Not equal.
    NotEquals(Operand),
    /// Member.
    In(Vec<Operand>),
    /// Not a member.
    NotIn(Vec<Operand>),
    /// Ordered comparison.
    Cmp(CmpOp, Operand),
    /// PEP 440 specifier set (and its text).
    Pep440(VersionSpecifiers, String),
    /// Regex.
    Matches(Regex),
    /// Element or substring.
    Contains(Operand),
    /// Empty or not.
    Empty(bool),
}

impl Op {
    /// The operands it compares the fact with (none for exists, empty, pep440, matches).
    pub fn operands(&self) -> Vec<&Operand> {
        match self {
            Op::Equals(o) | Op::NotEquals(o) | Op::Cmp(_, o) | Op::Contains(o) => vec![o],
            Op::In(l) | Op::NotIn(l) => l.iter().collect(),
            Op::Exists(_) | Op::Empty(_) | Op::Pep440(..) | Op::Matches(_) => Vec::new(),
        }
    }
}

/// A compiled operand.
#[derive(Clone, Debug)]
pub enum Operand {
    /// A literal.
    Lit(Value),
    /// Another fact.
    Fact(Path),
    /// A rule parameter.
    Param(String),
}

/// The top-level sections a path may start with.
pub const SECTIONS: &[&str] = &[
    "host",
    "env",
    "pythons",
    "frameworks",
    "libraries",
    "jobs",
    "cuda",
    "nvml",
    "gpus",
    "checkpoints",
    "locks",
    "lock_drift",
    "probe_errors",
    "expect",
    "log",
];

/// Test facts without their `log` section (free-form: what `diagnose` reads from a log).
fn without_log(facts: &Value) -> std::borrow::Cow<'_, Value> {
    match facts.get("log") {
        Some(_) => {
            let mut f = facts.clone();
            if let Value::Object(m) = &mut f {
                m.remove("log");
            }
            std::borrow::Cow::Owned(f)
        }
        None => std::borrow::Cow::Borrowed(facts),
    }
}

/// Compiles the rules of one file.
pub struct Compiler<'a> {
    file: &'a str,
    text: &'a str,
    walker: SchemaWalker,
    errors: Vec<RuleError>,
}

/// What is known while compiling one rule: its variables and their schema nodes.
struct RuleCtx {
    /// Variables in scope now (innermost last).
    vars: Vec<(String, Node)>,
    /// Every variable the rule binds anywhere (for templates).
    all_vars: Vec<(String, Node)>,
    params: BTreeMap<String, Value>,
}

impl<'a> Compiler<'a> {
    /// A compiler for `text`, read from `file`.
    pub fn new(file: &'a str, text: &'a str) -> Self {
        Compiler {
            file,
            text,
            walker: SchemaWalker::default(),
            errors: Vec::new(),
        }
    }

    fn err(&mut self, loc: Location, message: impl Into<String>) {
        self.errors.push(RuleError {
            file: self.file.to_string(),
            line: loc.line(),
            column: loc.column(),
            message: message.into(),
            snippet: snippet(self.text, loc.line(), loc.column()),
        });
    }

    /// Parse and compile the whole file.
    pub fn compile_file(mut self, shipped: bool) -> Result<Vec<Rule>, Vec<RuleError>> {
        let raw: model::RawFile = match serde_saphyr::from_str(self.text) {
            Ok(r) => r,
            Err(e) => {
                let (line, column) = e
                    .location()
                    .map(|l| (l.line(), l.column()))
                    .unwrap_or((0, 0));
                let msg = e.to_string();
                // The parser's own text may repeat the position and add a snippet: keep line 1.
                let first = msg.lines().next().unwrap_or("invalid YAML");
                let first = first.strip_prefix("error: ").unwrap_or(first);
                let first = match first.split_once(": ") {
                    Some((pos, rest)) if pos.starts_with("line ") && pos.contains(" column ") => {
                        rest
                    }
                    _ => first,
                }
                .to_string();
                return Err(vec![RuleError {
                    file: self.file.to_string(),
                    line,
                    column,
                    message: first,
                    snippet: snippet(self.text, line, column),
                }]);
            }
        };
        let starts: Vec<u64> = raw.rules.iter().map(|r| r.referenced.line()).collect();
        let lines: Vec<&str> = self.text.lines().collect();
        let mut rules = Vec::new();
        for (i, spanned) in raw.rules.into_iter().enumerate() {
            let loc = spanned.referenced;
            let end = starts.get(i + 1).copied();
            let source = slice_lines(&lines, loc.line(), end);
            if let Some(rule) = self.compile_rule(spanned.value, loc, source, shipped) {
                rules.push(rule);
            }
        }
        if self.errors.is_empty() {
            Ok(rules)
        } else {
            Err(self.errors)
        }
    }
}

/// Lines `from` up to `to` (1-based, `to` excluded; the end when `None`), trailing blanks cut.
fn slice_lines(lines: &[&str], from: u64, to: Option<u64>) -> String {
    let from = from.saturating_sub(1) as usize;
    let to = to
        .map(|t| (t.saturating_sub(1) as usize).min(lines.len()))
        .unwrap_or(lines.len());
    if from >= to {
        return String::new();
    }
    let mut s = lines[from..to].join("\n");
    while s.ends_with('\n') || s.ends_with(' ') {
        s.pop();
    }
    s
}

impl Compiler<'_> {
    fn compile_rule(
        &mut self,
        raw: RawRule,
        loc: Location,
        source: String,
        shipped: bool,
    ) -> Option<Rule> {
        let before = self.errors.len();
        let id = raw.id.value.clone();
        if !is_kebab(&id) {
            self.err(
                raw.id.referenced,
                format!("rule id `{id}` is not kebab-case (lower-case words joined by '-')"),
            );
        }
        let mut ctx = self.rule_ctx(&raw);
        let when = self.compile_cond(&raw.when, &mut ctx, &id);
        let message = self.compile_template(&raw.message, &ctx, &id, "message");
        let fix = self.compile_template(&raw.fix, &ctx, &id, "fix");
        self.check_symptoms(&raw.symptoms, &id);
        let tests: Vec<RuleTest> = raw
            .tests
            .into_iter()
            .map(|t| self.compile_inline_test(t, &ctx, &id))
            .collect();
        if self.errors.len() > before {
            return None;
        }
        Some(Rule {
            id,
            title: raw.title,
            severity: raw.severity,
            scope: raw.scope,
            when: when?,
            message: message?,
            fix: fix?,
            params: raw.params,
            explain: raw.explain.unwrap_or_default(),
            symptom_specificity: raw.symptoms.iter().map(|s| s.value.parts().1).collect(),
            symptoms: raw
                .symptoms
                .iter()
                .map(|s| s.value.parts().0.to_string())
                .collect(),
            references: raw.references,
            explains: raw.explains,
            tests,
            origin: Origin {
                file: self.file.to_string(),
                line: loc.line(),
                shipped,
                source,
            },
        })
    }

    /// The rule's context to start with: its parameters, and the variable its scope binds (with
    /// the schema node of its section's elements).
    fn rule_ctx(&self, raw: &RawRule) -> RuleCtx {
        let mut ctx = RuleCtx {
            vars: Vec::new(),
            all_vars: Vec::new(),
            params: raw.params.clone(),
        };
        if let Some((section, var)) = raw.scope.binding() {
            let list = self
                .walker
                .field(self.walker.top(), section)
                .unwrap_or(None);
            let elem = self.walker.items(list).unwrap_or(None);
            ctx.vars.push((var.to_string(), elem));
            ctx.all_vars.push((var.to_string(), elem));
        }
        ctx
    }

    /// Checks each symptom: a valid regex, specificity 1 to 3. The regex is only parsed here
    /// (its syntax, as `regex` reads it); the automaton is built by `diagnose`, the one command
    /// that matches symptoms, so `check` does not pay for it.
    fn check_symptoms(&mut self, symptoms: &[Spanned<model::RawSymptom>], id: &str) {
        for s in symptoms {
            let (re, spec) = s.value.parts();
            if let Err(e) = regex_syntax::Parser::new().parse(re) {
                self.err(
                    s.referenced,
                    format!("rule `{id}`: symptom is not a valid regex: {e}"),
                );
            }
            if !(1..=3).contains(&spec) {
                self.err(
                    s.referenced,
                    format!("rule `{id}`: symptom specificity must be 1, 2 or 3, not {spec}"),
                );
            }
        }
    }

    /// One inline test, checked: facts a map the schema knows, parameters declared,
    /// message_contains only with expect: fire.
    fn compile_inline_test(
        &mut self,
        t: Spanned<model::RawTest>,
        ctx: &RuleCtx,
        id: &str,
    ) -> RuleTest {
        let tloc = t.referenced;
        let t = t.value;
        if !t.facts.is_null() && !t.facts.is_object() {
            self.err(
                tloc,
                format!("rule `{id}`, test `{}`: facts must be a map", t.name),
            );
        } else if let Err(e) =
            self.walker
                .check_value(self.walker.top(), &without_log(&t.facts), "facts")
        {
            self.err(tloc, format!("rule `{id}`, test `{}`: {e}", t.name));
        }
        for k in t.params.keys() {
            if !ctx.params.contains_key(k) {
                self.err(
                    tloc,
                    format!("rule `{id}`, test `{}`: unknown parameter `{k}`", t.name),
                );
            }
        }
        if t.message_contains.is_some() && t.expect == Expect::Quiet {
            self.err(
                tloc,
                format!(
                    "rule `{id}`, test `{}`: message_contains needs expect: fire",
                    t.name
                ),
            );
        }
        RuleTest {
            name: t.name,
            facts: if t.facts.is_null() {
                Value::Object(Default::default())
            } else {
                t.facts
            },
            expect: t.expect,
            message_contains: t.message_contains,
            params: t.params,
            line: tloc.line(),
        }
    }

    fn compile_template(
        &mut self,
        raw: &Spanned<String>,
        ctx: &RuleCtx,
        id: &str,
        what: &str,
    ) -> Option<Template> {
        match Template::parse(&raw.value) {
            Ok(t) => {
                let mut ok = true;
                for p in t.paths() {
                    if let Err(e) = self.check_path(p, ctx, true) {
                        self.err(raw.referenced, format!("rule `{id}`: {what}: {e}"));
                        ok = false;
                    }
                }
                ok.then_some(t)
            }
            Err(e) => {
                self.err(raw.referenced, format!("rule `{id}`: {what}: {e}"));
                None
            }
        }
    }

    /// The schema node a path reaches, or why it is not a fact.
    fn check_path(&self, path: &Path, ctx: &RuleCtx, in_template: bool) -> Result<Node, String> {
        let vars = if in_template {
            &ctx.all_vars
        } else {
            &ctx.vars
        };
        if in_template && path.var == "param" {
            return match path.segs.as_slice() {
                [Seg::Key(k)] if ctx.params.contains_key(k) => Ok(None),
                _ => Err(format!("`{}` names no parameter of this rule", path.text)),
            };
        }
        let start = if let Some((_, node)) = vars.iter().rev().find(|(v, _)| *v == path.var) {
            *node
        } else if path.var == "log" {
            // What `diagnose` read from the log: free-form (kinds and values are documented in
            // docs/rule-language.md, "Log facts"), not a snapshot section.
            None
        } else if SECTIONS.contains(&path.var.as_str()) {
            self.walker
                .field(self.walker.top(), &path.var)
                .map_err(|e| format!("`{}`: {e}", path.text))?
        } else {
            let mut known: Vec<&str> = vars.iter().map(|(v, _)| v.as_str()).collect();
            known.extend_from_slice(SECTIONS);
            return Err(format!(
                "unknown fact `{}`: `{}` is not a variable here or a snapshot section (known: {})",
                path.text,
                path.var,
                known.join(", ")
            ));
        };
        let mut dyn_err = |p: &Path| self.check_path(p, ctx, in_template).map(|_| ());
        self.walker
            .walk(start, &path.segs, &mut dyn_err)
            .map_err(|e| format!("unknown fact `{}`: {e}", path.text))
    }

    fn compile_cond(
        &mut self,
        raw: &Spanned<RawCond>,
        ctx: &mut RuleCtx,
        id: &str,
    ) -> Option<Cond> {
        let loc = raw.referenced;
        let c = &raw.value;
        let kinds = [
            c.all.is_some(),
            c.any.is_some(),
            c.not.is_some(),
            c.any_in.is_some() || c.all_in.is_some() || c.none_in.is_some(),
            c.fact.is_some(),
        ];
        let n = kinds.iter().filter(|k| **k).count();
        if n != 1 {
            self.err(
                loc,
                format!(
                    "rule `{id}`: a condition needs exactly one of all / any / not / any_in / \
                     all_in / none_in / fact (found {n})"
                ),
            );
            return None;
        }
        if let Some(list) = c.all.as_ref().or(c.any.as_ref()) {
            if list.is_empty() {
                self.err(loc, format!("rule `{id}`: an empty all/any list"));
                return None;
            }
            // In `all`, a variable an earlier condition binds stays bound for the later ones (as
            // at evaluation); in `any`, each alternative starts afresh.
            let mark = ctx.vars.len();
            let mut out = Vec::new();
            for sub in list {
                out.push(self.compile_cond(sub, ctx, id));
                if c.any.is_some() {
                    ctx.vars.truncate(mark);
                }
            }
            ctx.vars.truncate(mark);
            let out: Option<Vec<Cond>> = out.into_iter().collect();
            return Some(if c.all.is_some() {
                Cond::All(out?)
            } else {
                Cond::Any(out?)
            });
        }
        if let Some(inner) = &c.not {
            let mark = ctx.vars.len();
            let compiled = self.compile_cond(inner, ctx, id);
            ctx.vars.truncate(mark);
            return Some(Cond::Not(Box::new(compiled?)));
        }
        if c.fact.is_none() {
            return self.compile_quant(c, loc, ctx, id);
        }
        if c.as_.is_some() || c.where_.is_some() {
            self.err(
                loc,
                format!("rule `{id}`: `as`/`where` belong to a quantifier"),
            );
            return None;
        }
        self.compile_test(c, loc, ctx, id)
    }

    fn compile_quant(
        &mut self,
        c: &RawCond,
        loc: Location,
        ctx: &mut RuleCtx,
        id: &str,
    ) -> Option<Cond> {
        let (kind, list) = match (&c.any_in, &c.all_in, &c.none_in) {
            (Some(l), None, None) => (Quant::Any, l),
            (None, Some(l), None) => (Quant::All, l),
            (None, None, Some(l)) => (Quant::None, l),
            _ => {
                self.err(loc, format!("rule `{id}`: one quantifier per condition"));
                return None;
            }
        };
        let (Some(var), Some(body)) = (&c.as_, &c.where_) else {
            self.err(
                loc,
                format!("rule `{id}`: a quantifier needs `as:` and `where:`"),
            );
            return None;
        };
        if SECTIONS.contains(&var.as_str()) || var == "param" || Path::parse(var).is_err() {
            self.err(
                loc,
                format!("rule `{id}`: `{var}` cannot be a variable name"),
            );
            return None;
        }
        let path = match Path::parse(list) {
            Ok(p) => p,
            Err(e) => {
                self.err(loc, format!("rule `{id}`: {e}"));
                return None;
            }
        };
        let node = match self.check_path(&path, ctx, false) {
            Ok(n) => n,
            Err(e) => {
                self.err(loc, format!("rule `{id}`: {e}"));
                return None;
            }
        };
        let elem = match self.walker.items(node) {
            Ok(e) => e,
            Err(e) => {
                self.err(loc, format!("rule `{id}`: `{list}` {e}"));
                return None;
            }
        };
        ctx.vars.push((var.clone(), elem));
        ctx.all_vars.push((var.clone(), elem));
        let mark = ctx.vars.len();
        let body = self.compile_cond(body, ctx, id);
        // The element stays bound for later conditions of an enclosing `all` (evaluation keeps
        // the first match); `none_in` binds nothing.
        ctx.vars.truncate(mark);
        if kind == Quant::None {
            ctx.vars.pop();
        }
        Some(Cond::Quant {
            kind,
            list: path,
            var: var.clone(),
            body: Box::new(body?),
        })
    }

    fn compile_test(
        &mut self,
        c: &RawCond,
        loc: Location,
        ctx: &mut RuleCtx,
        id: &str,
    ) -> Option<Cond> {
        let text = c.fact.as_deref().unwrap_or_default();
        let fact = self.test_fact(text, loc, ctx, id)?;
        let mut ops: Vec<Op> = Vec::new();
        if let Some(b) = c.exists {
            ops.push(Op::Exists(b));
        }
        if let Some(b) = c.empty {
            ops.push(Op::Empty(b));
        }
        let mut bad = self.operand_ops(c, loc, ctx, id, &mut ops);
        bad |= self.pattern_ops(c, loc, id, &mut ops);
        if bad {
            return None;
        }
        if ops.len() != 1 {
            self.err(
                loc,
                format!(
                    "rule `{id}`: a test on `{text}` needs exactly one operator (exists, equals, \
                     not_equals, in, not_in, lt, lte, gt, gte, pep440, matches, contains, empty); \
                     found {}",
                    ops.len()
                ),
            );
            return None;
        }
        Some(Cond::Test {
            fact,
            cast: c.cast,
            op: ops.pop()?,
        })
    }

    /// The fact a test reads, parsed and checked against the schema and the variables in scope.
    fn test_fact(&mut self, text: &str, loc: Location, ctx: &RuleCtx, id: &str) -> Option<Path> {
        let fact = match Path::parse(text) {
            Ok(p) => p,
            Err(e) => {
                self.err(loc, format!("rule `{id}`: {e}"));
                return None;
            }
        };
        if let Err(e) = self.check_path(&fact, ctx, false) {
            self.err(loc, format!("rule `{id}`: {e}"));
            return None;
        }
        Some(fact)
    }

    /// One operand: a literal, a declared parameter, or a fact path that checks.
    fn compile_operand(
        &mut self,
        o: &RawOperand,
        loc: Location,
        ctx: &RuleCtx,
        id: &str,
    ) -> Option<Operand> {
        match o {
            RawOperand::Lit(v) => Some(Operand::Lit(v.clone())),
            RawOperand::Param(p) => {
                if ctx.params.contains_key(&p.param) {
                    Some(Operand::Param(p.param.clone()))
                } else {
                    self.err(
                        loc,
                        format!(
                            "rule `{id}`: unknown parameter `{}` (declare it under params:)",
                            p.param
                        ),
                    );
                    None
                }
            }
            RawOperand::Fact(f) => match Path::parse(&f.fact)
                .and_then(|p| self.check_path(&p, ctx, false).map(|_| p))
            {
                Ok(p) => Some(Operand::Fact(p)),
                Err(e) => {
                    self.err(loc, format!("rule `{id}`: {e}"));
                    None
                }
            },
        }
    }

    /// The operators with operands (equals ... contains, in, not_in) pushed onto `ops`; whether
    /// an operand was bad.
    fn operand_ops(
        &mut self,
        c: &RawCond,
        loc: Location,
        ctx: &RuleCtx,
        id: &str,
        ops: &mut Vec<Op>,
    ) -> bool {
        let mut bad = false;
        let singles: [(&Option<RawOperand>, MakeOp); 7] = [
            (&c.equals, Op::Equals),
            (&c.not_equals, Op::NotEquals),
            (&c.lt, |o| Op::Cmp(CmpOp::Lt, o)),
            (&c.lte, |o| Op::Cmp(CmpOp::Lte, o)),
            (&c.gt, |o| Op::Cmp(CmpOp::Gt, o)),
            (&c.gte, |o| Op::Cmp(CmpOp::Gte, o)),
            (&c.contains, Op::Contains),
        ];
        for (raw, make) in singles {
            if let Some(o) = raw {
                match self.compile_operand(o, loc, ctx, id) {
                    Some(o) => ops.push(make(o)),
                    None => bad = true,
                }
            }
        }
        for (raw, negate) in [(&c.in_, false), (&c.not_in, true)] {
            if let Some(list) = raw {
                let compiled: Option<Vec<Operand>> = list
                    .iter()
                    .map(|o| self.compile_operand(o, loc, ctx, id))
                    .collect();
                match compiled {
                    Some(l) if negate => ops.push(Op::NotIn(l)),
                    Some(l) => ops.push(Op::In(l)),
                    None => bad = true,
                }
            }
        }
        bad
    }

    /// The pattern operators (pep440, matches) pushed onto `ops`; whether a pattern was bad.
    fn pattern_ops(&mut self, c: &RawCond, loc: Location, id: &str, ops: &mut Vec<Op>) -> bool {
        let mut bad = false;
        if let Some(spec) = &c.pep440 {
            match VersionSpecifiers::from_str(spec) {
                Ok(s) => ops.push(Op::Pep440(s, spec.clone())),
                Err(e) => {
                    self.err(
                        loc,
                        format!("rule `{id}`: `{spec}` is not a PEP 440 specifier set: {e}"),
                    );
                    bad = true;
                }
            }
        }
        if let Some(re) = &c.matches {
            match Regex::new(re) {
                Ok(r) => ops.push(Op::Matches(r)),
                Err(e) => {
                    self.err(loc, format!("rule `{id}`: bad regex in matches: {e}"));
                    bad = true;
                }
            }
        }
        bad
    }
}

/// Builds an operator from its operand.
type MakeOp = fn(Operand) -> Op;

fn is_kebab(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('-')
        && !id.ends_with('-')
        && !id.contains("--")
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_the_snapshots_top_level_fields() {
        // The snapshot's own metadata is not a section rules read; `log` is what `diagnose`
        // reads from a log, not a snapshot field.
        const METADATA: &[&str] = &[
            "schema_version",
            "envdoctor_version",
            "collected_at",
            "root",
        ];
        let schema = crate::rules::path::snapshot_schema();
        let mut fields: Vec<&str> = schema["properties"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        fields.retain(|f| !METADATA.contains(f));
        fields.push("log");
        fields.sort_unstable();
        let mut sections = SECTIONS.to_vec();
        sections.sort_unstable();
        assert_eq!(
            sections, fields,
            "SECTIONS in src/rules/compile.rs must list every top-level snapshot field"
        );
    }

    fn compile(yaml: &str) -> Result<Vec<Rule>, Vec<RuleError>> {
        Compiler::new("t.yaml", yaml).compile_file(false)
    }

    const GOOD: &str = r#"
rules:
  - id: tf-old
    title: old tf
    severity: warning
    scope: interpreter
    when:
      all:
        - {fact: python.package.tensorflow.version, pep440: "<2"}
        - any_in: python.packages
          as: p
          where: {fact: p.name, equals: numpy}
    message: "{{python.path}} has tensorflow {{python.package.tensorflow.version}} and {{p.name}}"
    fix: upgrade
    tests:
      - name: fires
        facts: {pythons: [{path: /p, packages: [{name: tensorflow, version: "1.15.0"}]}]}
        expect: fire
"#;

    #[test]
    fn a_good_rule_compiles() {
        let rules = compile(GOOD).unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].id, "tf-old");
        assert_eq!(rules[0].origin.line, 3);
        assert!(rules[0].origin.source.contains("tf-old"));
    }

    fn first_error(yaml: &str) -> RuleError {
        compile(yaml).unwrap_err().remove(0)
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = first_error(&GOOD.replace(
            "python.package.tensorflow.version, pep",
            "python.pakage.x, pep",
        ));
        assert_eq!((e.file.as_str(), e.line), ("t.yaml", 9), "{e}");
        assert!(e.message.contains("pakage"), "{e}");
        let e = first_error(&GOOD.replace("severity: warning", "severity: fatal"));
        assert_eq!(e.line, 5, "{e}");
        let e = first_error(&GOOD.replace("    fix: upgrade", "    fix: upgrade\n    fixx: no"));
        assert!(e.message.contains("fixx"), "{e}");
        assert_eq!(e.line, 15, "{e}");
    }

    #[test]
    fn validation_catches_each_kind_of_mistake() {
        let cases = [
            ("id: tf-old", "id: TF_old", "kebab-case"),
            ("pep440: \"<2\"", "pep440: \"<<2\"", "PEP 440"),
            ("equals: numpy", "matches: \"(\"", "regex"),
            ("{{p.name}}", "{{q.name}}", "unknown fact `q.name`"),
            ("{{p.name}}", "{{p.nmae}}", "nmae"),
            (
                "equals: numpy",
                "equals: {param: nope}",
                "unknown parameter",
            ),
            (
                "equals: numpy",
                "equals: numpy, in: [a]",
                "exactly one operator",
            ),
            ("[{name: tensorflow,", "[{nmae: tensorflow,", "nmae"),
            ("expect: fire", "expect: maybe", "maybe"),
        ];
        for (from, to, want) in cases {
            let yaml = GOOD.replace(from, to);
            assert_ne!(yaml, GOOD, "{from}");
            let errs = compile(&yaml).unwrap_err();
            assert!(
                errs.iter().any(|e| e.message.contains(want) && e.line > 0),
                "{to}: {errs:?}"
            );
        }
    }

    #[test]
    fn a_symptom_must_be_a_regex() {
        let yaml = GOOD.replace(
            "    fix: upgrade",
            "    fix: upgrade\n    symptoms: [\"a(b\"]",
        );
        let e = first_error(&yaml);
        assert!(e.message.contains("symptom"), "{e}");
    }

    #[test]
    fn a_symptom_is_a_string_or_a_regex_with_a_specificity() {
        let yaml = GOOD.replace(
            "    fix: upgrade",
            "    fix: upgrade\n    symptoms: [\"plain\", {regex: \"generic line\", specificity: 1}]",
        );
        let rules = compile(&yaml).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(rules[0].symptoms, vec!["plain", "generic line"]);
        assert_eq!(rules[0].symptom_specificity, vec![2, 1]);
        let bad = GOOD.replace(
            "    fix: upgrade",
            "    fix: upgrade\n    symptoms: [{regex: \"x\", specificity: 7}]",
        );
        assert!(first_error(&bad).message.contains("specificity"));
        let bad = GOOD.replace(
            "    fix: upgrade",
            "    fix: upgrade\n    symptoms: [{regex: \"a(b\", specificity: 1}]",
        );
        assert!(first_error(&bad).message.contains("not a valid regex"));
    }
}
