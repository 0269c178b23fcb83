//! The rule file format as written (serde types, with source spans), kept apart from the compiled
//! rules the evaluator runs ([`super::compile`]). `schema/rules.schema.json` is generated from
//! these types so editors can validate rule files while people write them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

/// A rule file: `rules: [...]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "envdoctor rule file")]
pub struct RawFile {
    /// The rules in this file.
    #[schemars(with = "Vec<RawRule>")]
    pub rules: Vec<Spanned<RawRule>>,
}

/// How bad a finding is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; never fails a run.
    Info,
    /// May fail or behave wrongly.
    Warning,
    /// The job will fail.
    Error,
}

impl Severity {
    /// `error`, `warning` or `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What a rule is evaluated once for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Once for the machine.
    Machine,
    /// Once per `pythons[]`, bound as `python`.
    Interpreter,
    /// Once per `gpus[]`, bound as `gpu`.
    Gpu,
    /// Once per `libraries[]`, bound as `library`.
    Library,
    /// Once per `frameworks[]`, bound as `framework`.
    Framework,
    /// Once per `checkpoints[]`, bound as `checkpoint`.
    Checkpoint,
    /// Once per `lock_drift[]` (a package that differs from the project's lock), bound as
    /// `drift`.
    Lock,
}

impl Scope {
    /// The snapshot section it ranges over and the variable it binds (None for `machine`).
    pub fn binding(self) -> Option<(&'static str, &'static str)> {
        match self {
            Scope::Machine => None,
            Scope::Interpreter => Some(("pythons", "python")),
            Scope::Gpu => Some(("gpus", "gpu")),
            Scope::Library => Some(("libraries", "library")),
            Scope::Framework => Some(("frameworks", "framework")),
            Scope::Checkpoint => Some(("checkpoints", "checkpoint")),
            Scope::Lock => Some(("lock_drift", "drift")),
        }
    }

    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Machine => "machine",
            Scope::Interpreter => "interpreter",
            Scope::Gpu => "gpu",
            Scope::Library => "library",
            Scope::Framework => "framework",
            Scope::Checkpoint => "checkpoint",
            Scope::Lock => "lock",
        }
    }
}

/// One rule as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    /// Stable kebab-case code, unique across every loaded file.
    #[schemars(with = "String", regex(pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$"))]
    pub id: Spanned<String>,
    /// One line: what is wrong.
    pub title: String,
    /// error | warning | info.
    pub severity: Severity,
    /// What the rule is evaluated once for.
    pub scope: Scope,
    /// The condition.
    #[schemars(with = "RawCond")]
    pub when: Spanned<RawCond>,
    /// A template (`{{path}}`) filled from the facts the condition matched.
    #[schemars(with = "String")]
    pub message: Spanned<String>,
    /// A template: what to do.
    #[schemars(with = "String")]
    pub fix: Spanned<String>,
    /// Named values the condition uses as `{param: NAME}`; `--param ID.NAME=VALUE` overrides.
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    /// Text for `envdoctor explain`.
    #[serde(default)]
    pub explain: Option<RawExplain>,
    /// Regexes of the error text this failure prints: a string (specificity 2), or
    /// `{regex, specificity}` (1: a generic line many failures print, such as a loader's
    /// `cannot open shared object file`; 2: this failure's own message; 3: names exactly what
    /// this rule is about, such as one soname and version). `envdoctor diagnose` ranks by it.
    #[serde(default)]
    #[schemars(with = "Vec<RawSymptom>")]
    pub symptoms: Vec<Spanned<RawSymptom>>,
    /// URLs.
    #[serde(default)]
    pub references: Vec<String>,
    /// Rules whose failure this one causes (ids): when both are confirmed by the same log,
    /// `envdoctor diagnose` ranks this one, the cause, above the mechanism it explains (a
    /// downgraded nvidia-* wheel above the `undefined symbol` it produces).
    #[serde(default)]
    pub explains: Vec<String>,
    /// Inline tests: partial snapshots and the expected verdict.
    #[serde(default)]
    #[schemars(with = "Vec<RawTest>")]
    pub tests: Vec<Spanned<RawTest>>,
}

/// One symptom as written: a regex, or a regex with its specificity.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawSymptom {
    /// A regex of specificity 2.
    Regex(String),
    /// A regex with a specificity.
    Weighted(WeightedSymptom),
}

/// `{regex, specificity}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightedSymptom {
    /// The regex.
    pub regex: String,
    /// 1 (generic line), 2 (this failure's own message) or 3 (names exactly this rule's subject).
    #[schemars(range(min = 1, max = 3))]
    pub specificity: u8,
}

impl RawSymptom {
    /// The default specificity of a plain string.
    pub const DEFAULT_SPECIFICITY: u8 = 2;

    /// The regex and its specificity.
    pub fn parts(&self) -> (&str, u8) {
        match self {
            RawSymptom::Regex(r) => (r, Self::DEFAULT_SPECIFICITY),
            RawSymptom::Weighted(w) => (&w.regex, w.specificity),
        }
    }
}

/// The fixed sections `envdoctor explain` prints.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExplain {
    /// What the failure looks like (the error text people see).
    #[serde(default)]
    pub looks_like: Option<String>,
    /// Why it happens.
    #[serde(default)]
    pub why: Option<String>,
    /// What the rule checks (default: a rendering of `when`).
    #[serde(default)]
    pub checks: Option<String>,
}

/// A condition as written: exactly one of the combinators, quantifiers or a fact test.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCond {
    /// Every condition holds.
    #[serde(default)]
    #[schemars(with = "Option<Vec<RawCond>>")]
    pub all: Option<Vec<Spanned<RawCond>>>,
    /// Some condition holds (the first that does binds its variables).
    #[serde(default)]
    #[schemars(with = "Option<Vec<RawCond>>")]
    pub any: Option<Vec<Spanned<RawCond>>>,
    /// The condition does not hold.
    #[serde(default)]
    #[schemars(with = "Option<Box<RawCond>>")]
    pub not: Option<Box<Spanned<RawCond>>>,
    /// Some element of this list satisfies `where` (bound as `as`).
    #[serde(default)]
    pub any_in: Option<String>,
    /// Every element of this (non-empty) list satisfies `where`.
    #[serde(default)]
    pub all_in: Option<String>,
    /// No element of this list satisfies `where`.
    #[serde(default)]
    pub none_in: Option<String>,
    /// The variable a quantifier binds.
    #[serde(default, rename = "as")]
    pub as_: Option<String>,
    /// A quantifier's condition on each element.
    #[serde(default, rename = "where")]
    #[schemars(with = "Option<Box<RawCond>>")]
    pub where_: Option<Box<Spanned<RawCond>>>,
    /// The fact a test reads.
    #[serde(default)]
    pub fact: Option<String>,
    /// Turn the fact into something else before the test.
    #[serde(default)]
    pub cast: Option<Cast>,
    /// The fact is present (true) or absent (false).
    #[serde(default)]
    pub exists: Option<bool>,
    /// Equal (numbers by value).
    #[serde(default)]
    pub equals: Option<RawOperand>,
    /// Not equal (false when the fact is missing).
    #[serde(default)]
    pub not_equals: Option<RawOperand>,
    /// One of these.
    #[serde(default, rename = "in")]
    pub in_: Option<Vec<RawOperand>>,
    /// None of these (false when the fact is missing).
    #[serde(default)]
    pub not_in: Option<Vec<RawOperand>>,
    /// Less than (numbers, or dotted versions part by part).
    #[serde(default)]
    pub lt: Option<RawOperand>,
    /// At most.
    #[serde(default)]
    pub lte: Option<RawOperand>,
    /// Greater than.
    #[serde(default)]
    pub gt: Option<RawOperand>,
    /// At least.
    #[serde(default)]
    pub gte: Option<RawOperand>,
    /// A PEP 440 specifier set the version must satisfy (`">=2.4,<2.5"`).
    #[serde(default)]
    pub pep440: Option<String>,
    /// A regex the string (or some element of the list) matches.
    #[serde(default)]
    pub matches: Option<String>,
    /// The list has this element, or the string contains it.
    #[serde(default)]
    pub contains: Option<RawOperand>,
    /// The list, string or object is empty (a missing fact is empty).
    #[serde(default)]
    pub empty: Option<bool>,
}

/// What `cast:` turns a fact into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cast {
    /// Length of a list, string or object (0 when missing).
    Length,
    /// First number of a dotted version.
    Major,
    /// Second number of a dotted version.
    Minor,
    /// `"X.Y"` of a dotted version.
    MajorMinor,
    /// Lower-case string.
    Lower,
    /// A numeric string as a number.
    Number,
}

/// The right-hand side of a test: another fact, a rule parameter, or a literal.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawOperand {
    /// `{fact: PATH}`.
    Fact(FactRef),
    /// `{param: NAME}`.
    Param(ParamRef),
    /// Any YAML scalar, list or map.
    Lit(serde_json::Value),
}

/// `{fact: PATH}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FactRef {
    /// The path.
    pub fact: String,
}

/// `{param: NAME}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParamRef {
    /// The parameter's name.
    pub param: String,
}

/// A test case: a partial snapshot and the expected verdict.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTest {
    /// What the case shows.
    pub name: String,
    /// A partial snapshot: only the facts the rule reads.
    #[serde(default)]
    pub facts: serde_json::Value,
    /// `fire` or `quiet`.
    pub expect: Expect,
    /// With `fire`: a finding's message must contain this.
    #[serde(default)]
    pub message_contains: Option<String>,
    /// Parameter values for this case.
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
}

/// A test's expected verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// The rule fires.
    Fire,
    /// The rule stays quiet.
    Quiet,
}

/// The JSON Schema of rule files, as checked in at `schema/rules.schema.json`.
pub fn json_schema() -> String {
    crate::schema::render::<RawFile>()
}
