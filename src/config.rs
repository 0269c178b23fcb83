//! Configuration for `check`: a project file (`envdoctor.toml`, or `[tool.envdoctor]` in
//! `pyproject.toml`), `ENVDOCTOR_*` variables for the same keys, and the command line.
//!
//! Precedence, highest first: command line, environment, project file, defaults. Scalars
//! (`fail-on`, `expect-gpu`) and each single entry of a table (one parameter, one rule's
//! severity) come from the highest level that sets them; lists (`rules` directories, `ignore`)
//! add up across levels. This module owns finding and parsing the file, reading the
//! variables and the merge; `cli` applies the result to the rule set. Every value remembers
//! where it came from (`envdoctor.toml:7`, `ENVDOCTOR_FAIL_ON`, `--ignore`) so a bad one is an
//! exit-2 error that names it.
//!
//! | file key            | variable               | command line            |
//! |---------------------|------------------------|-------------------------|
//! | `rules = [DIR]`     | `ENVDOCTOR_RULES` (`:`) | `--rules DIR`          |
//! | `fail-on`           | `ENVDOCTOR_FAIL_ON`    | `--fail-on`             |
//! | `[params.RULE] N=V` | `ENVDOCTOR_PARAMS` (`RULE.N=V,...`) | `--param RULE.N=V` |
//! | `expect-gpu`        | `ENVDOCTOR_EXPECT_GPU` | `--expect-gpu`          |
//! | `ignore = [RULE[:SUBJECT]]` | `ENVDOCTOR_IGNORE` (`,`) | `--ignore RULE[:SUBJECT]` |
//! | `[severity] RULE=S` | `ENVDOCTOR_SEVERITY` (`RULE=S,...`) | —              |

use crate::report::verdict::FailOn;
use crate::rules::{Finding, RuleSet, Severity};
use crate::Error;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Where a value came from: `FILE:LINE`, a variable's name or a flag.
pub type Source = String;

/// A value and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Where it was set.
    pub source: Source,
}

fn sourced<T>(value: T, source: impl Into<String>) -> Sourced<T> {
    Sourced {
        value,
        source: source.into(),
    }
}

/// A `RULE[:SUBJECT]` to leave out of the results.
#[derive(Clone, Debug, PartialEq)]
pub struct Ignore {
    /// The rule id.
    pub rule: String,
    /// A subject (`pythons[/venv/bin/python]` or just `/venv/bin/python`); None: every subject.
    pub subject: Option<String>,
}

impl Ignore {
    /// Parse `RULE[:SUBJECT]`.
    pub fn parse(s: &str) -> Option<Ignore> {
        let (rule, subject) = match s.split_once(':') {
            Some((r, sub)) => (r.trim(), Some(sub.trim().to_string())),
            None => (s.trim(), None),
        };
        if rule.is_empty() || subject.as_deref().is_some_and(str::is_empty) {
            return None;
        }
        Some(Ignore {
            rule: rule.to_string(),
            subject,
        })
    }

    /// Whether `f` is one this entry leaves out.
    pub fn matches(&self, f: &Finding) -> bool {
        if f.rule != self.rule {
            return false;
        }
        let Some(want) = &self.subject else {
            return true;
        };
        let Some(label) = &f.subject else {
            return false;
        };
        // `pythons[/venv/bin/python]` matches itself and `/venv/bin/python`.
        let inner = label
            .split_once('[')
            .and_then(|(_, rest)| rest.strip_suffix(']'));
        label == want || inner == Some(want.as_str())
    }
}

/// One level's settings (file, environment or command line), before the merge.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layer {
    /// Rule directories or files.
    pub rules: Vec<Sourced<PathBuf>>,
    /// The failure threshold.
    pub fail_on: Option<Sourced<FailOn>>,
    /// `(rule, name) = value`.
    pub params: Vec<Sourced<(String, String, Value)>>,
    /// Whether jobs here must use a GPU (`check --expect-gpu`).
    pub expect_gpu: Option<Sourced<bool>>,
    /// Findings to leave out.
    pub ignore: Vec<Sourced<Ignore>>,
    /// Per-rule severity overrides.
    pub severity: Vec<Sourced<(String, Severity)>>,
}

/// The merged configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The project file it read, if any.
    pub file: Option<PathBuf>,
    /// Rule directories: the file's, the environment's, the command line's (duplicates removed).
    pub rules: Vec<Sourced<PathBuf>>,
    /// The threshold (default: error).
    pub fail_on: Sourced<FailOn>,
    /// Parameter overrides, lowest level first (so later ones win when applied in order).
    pub params: Vec<Sourced<(String, String, Value)>>,
    /// Expect a GPU (as `check --expect-gpu`; the flag wins when given).
    pub expect_gpu: Option<Sourced<bool>>,
    /// Findings to leave out (all levels).
    pub ignore: Vec<Sourced<Ignore>>,
    /// Severity overrides, lowest level first.
    pub severity: Vec<Sourced<(String, Severity)>>,
}

impl Config {
    /// Merge levels given lowest first (file, environment, command line).
    pub fn merge(file: Option<PathBuf>, layers: Vec<Layer>) -> Config {
        let mut c = Config {
            file,
            rules: Vec::new(),
            fail_on: sourced(FailOn::Error, "default"),
            params: Vec::new(),
            expect_gpu: None,
            ignore: Vec::new(),
            severity: Vec::new(),
        };
        // Each path is resolved once: thousands of entries merge in linear time.
        let mut seen = std::collections::HashSet::new();
        for l in layers {
            for r in l.rules {
                let key = std::fs::canonicalize(&r.value).unwrap_or_else(|_| r.value.clone());
                if seen.insert(key) {
                    c.rules.push(r);
                }
            }
            if let Some(f) = l.fail_on {
                c.fail_on = f;
            }
            if l.expect_gpu.is_some() {
                c.expect_gpu = l.expect_gpu;
            }
            c.params.extend(l.params);
            c.ignore.extend(l.ignore);
            c.severity.extend(l.severity);
        }
        c
    }

    /// Rule directories as paths.
    pub fn rule_dirs(&self) -> Vec<PathBuf> {
        self.rules.iter().map(|r| r.value.clone()).collect()
    }

    /// Apply parameters and severities to `set`, and check that every ignored rule exists; an
    /// unknown rule or parameter is an error naming where it was set.
    pub fn apply(&self, set: &mut RuleSet) -> Result<(), Error> {
        for p in &self.params {
            let (rule, name, value) = &p.value;
            set.set_param(rule, name, value.clone())
                .map_err(|e| Error::input(&p.source, e))?;
        }
        for s in &self.severity {
            let (rule, sev) = &s.value;
            set.set_severity(rule, *sev)
                .map_err(|e| Error::input(&s.source, e))?;
        }
        for i in &self.ignore {
            if set.get(&i.value.rule).is_none() {
                return Err(Error::input(
                    &i.source,
                    format!("ignore: {}", set.no_rule(&i.value.rule)),
                )
                .with_hint("`envdoctor rules list` shows them all"));
            }
        }
        Ok(())
    }

    /// Drop the findings an `ignore` entry names.
    pub fn filter(&self, findings: Vec<Finding>) -> Vec<Finding> {
        findings
            .into_iter()
            .filter(|f| !self.ignore.iter().any(|i| i.value.matches(f)))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// The project file.

/// The keys, as written in `envdoctor.toml` or under `[tool.envdoctor]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileKeys {
    rules: Option<Vec<Spanned<String>>>,
    fail_on: Option<Spanned<String>>,
    params: Option<BTreeMap<String, Spanned<ParamTable>>>,
    expect_gpu: Option<Spanned<bool>>,
    ignore: Option<Vec<Spanned<String>>>,
    severity: Option<BTreeMap<String, Spanned<String>>>,
}

/// `[params.RULE]`: parameter name to value.
type ParamTable = BTreeMap<String, Spanned<toml::Value>>;

#[derive(Debug, Default, Deserialize)]
struct PyProject {
    tool: Option<PyTool>,
}

#[derive(Debug, Default, Deserialize)]
struct PyTool {
    envdoctor: Option<FileKeys>,
}

/// The project file for `start`: the nearest `envdoctor.toml`, or `pyproject.toml` with a
/// `[tool.envdoctor]` table, in `start` or a parent, not above the repository root (a
/// directory with `.git`).
pub fn find(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let own = dir.join("envdoctor.toml");
        // Whatever it is: a directory or a FIFO of that name is refused by name when read.
        if std::fs::symlink_metadata(&own).is_ok() {
            return Some(own);
        }
        let py = dir.join("pyproject.toml");
        if std::fs::symlink_metadata(&py).is_ok() {
            match read_text(&py) {
                Ok(t) if has_tool_table(&t) => return Some(py),
                Ok(_) => {}
                // Not necessarily ours: said, and passed over.
                Err(e) => eprintln!("envdoctor: warning: {e}; not read"),
            }
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Whether a pyproject.toml has a `tool.envdoctor` table, in any TOML spelling (`[tool]` with
/// `envdoctor.fail-on = ...`, `[ tool.envdoctor ]`, `tool = { envdoctor = ... }`). A file that
/// is not valid TOML counts when a line mentions it, so that reading it names the error.
pub fn has_tool_table(text: &str) -> bool {
    if let Ok(t) = text.parse::<toml::Table>() {
        return t
            .get("tool")
            .and_then(|t| t.as_table())
            .is_some_and(|t| t.contains_key("envdoctor"));
    }
    text.lines().any(|l| {
        let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
        l.starts_with("[tool.envdoctor]")
            || l.starts_with("[tool.envdoctor.")
            || l.starts_with("tool.envdoctor")
    })
}

/// Read a project file (`envdoctor.toml`, or a `pyproject.toml`'s `[tool.envdoctor]`).
pub fn read_file(path: &Path) -> Result<Layer, Error> {
    let shown = path.display().to_string();
    let text = read_text(path)?;
    parse_file(&shown, &text, is_pyproject(path))
}

/// The most a configuration file may hold.
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;
/// How long reading one may take (a dead network mount).
pub const CONFIG_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// A configuration file's text, through the guarded reader (regular files only, capped,
/// with a deadline).
fn read_text(path: &Path) -> Result<String, Error> {
    let shown = path.display().to_string();
    let bytes =
        crate::root::read_guarded(path, MAX_CONFIG_BYTES, CONFIG_DEADLINE).map_err(|e| {
            let why = match e {
                crate::root::RootError::NotAFile { kind, .. } => format!("is {kind}, not a file"),
                crate::root::RootError::Io { source, .. } => source.to_string(),
                other => other.to_string(),
            };
            Error::input(&shown, format!("cannot read configuration: {why}"))
        })?;
    String::from_utf8(bytes)
        .map_err(|_| Error::input(&shown, "cannot read configuration: not UTF-8 text"))
}

fn is_pyproject(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "pyproject.toml")
}

/// Parse a project file's text; `shown` names it in errors (`shown:LINE: ...`).
pub fn parse_file(shown: &str, text: &str, pyproject: bool) -> Result<Layer, Error> {
    let starts = line_starts(text);
    let at = |span: std::ops::Range<usize>| format!("{shown}:{}", line_of(&starts, span.start));
    let keys = if pyproject {
        toml::from_str::<PyProject>(text)
            .map(|p| p.tool.and_then(|t| t.envdoctor).unwrap_or_default())
    } else {
        toml::from_str::<FileKeys>(text)
    }
    .map_err(|e| {
        let place = e.span().map(&at).unwrap_or_else(|| shown.to_string());
        Error::input(
            place,
            format!("invalid configuration: {}", e.message().trim()),
        )
    })?;
    let base = Path::new(shown).parent().unwrap_or(Path::new("."));
    let mut layer = Layer::default();
    for r in keys.rules.unwrap_or_default() {
        let src = at(r.span());
        let p = PathBuf::from(r.into_inner());
        // Relative to the file, not to wherever envdoctor was started.
        let p = if p.is_relative() { base.join(p) } else { p };
        layer.rules.push(sourced(p, src));
    }
    if let Some(f) = keys.fail_on {
        let src = at(f.span());
        let v =
            parse_fail_on(f.get_ref()).map_err(|e| Error::input(&src, format!("fail-on: {e}")))?;
        layer.fail_on = Some(sourced(v, src));
    }
    if let Some(g) = keys.expect_gpu {
        let src = at(g.span());
        layer.expect_gpu = Some(sourced(g.into_inner(), src));
    }
    for (rule, table) in keys.params.unwrap_or_default() {
        for (name, v) in table.into_inner() {
            let src = at(v.span());
            let value = toml_to_json(v.get_ref()).ok_or_else(|| {
                Error::input(
                    &src,
                    format!("params.{rule}.{name}: not a number, boolean or string"),
                )
            })?;
            layer.params.push(sourced((rule.clone(), name, value), src));
        }
    }
    for i in keys.ignore.unwrap_or_default() {
        let src = at(i.span());
        let v = Ignore::parse(i.get_ref()).ok_or_else(|| {
            Error::input(
                &src,
                format!("ignore: `{}` is not RULE or RULE:SUBJECT", i.get_ref()),
            )
        })?;
        layer.ignore.push(sourced(v, src));
    }
    for (rule, s) in keys.severity.unwrap_or_default() {
        let src = at(s.span());
        let sev = parse_severity(s.get_ref())
            .map_err(|e| Error::input(&src, format!("severity.{rule}: {e}")))?;
        layer.severity.push(sourced((rule, sev), src));
    }
    Ok(layer)
}

/// Where each line after the first starts, so a value's line is a binary search away.
fn line_starts(text: &str) -> Vec<usize> {
    memchr::memchr_iter(b'\n', text.as_bytes())
        .map(|i| i + 1)
        .collect()
}

/// The 1-based line of byte `offset`.
fn line_of(starts: &[usize], offset: usize) -> usize {
    starts.partition_point(|&s| s <= offset) + 1
}

fn toml_to_json(v: &toml::Value) -> Option<Value> {
    match v {
        toml::Value::String(s) => Some(Value::from(s.as_str())),
        toml::Value::Integer(i) => Some(Value::from(*i)),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number),
        toml::Value::Boolean(b) => Some(Value::Bool(*b)),
        _ => None,
    }
}

fn parse_fail_on(s: &str) -> Result<FailOn, String> {
    <FailOn as clap::ValueEnum>::from_str(s.trim(), true)
        .map_err(|_| format!("`{s}` is not one of error, warning, never"))
}

fn parse_severity(s: &str) -> Result<Severity, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "error" => Ok(Severity::Error),
        "warning" => Ok(Severity::Warning),
        "info" => Ok(Severity::Info),
        _ => Err(format!("`{s}` is not one of error, warning, info")),
    }
}

// ---------------------------------------------------------------------------------------------
// The environment.

/// The `ENVDOCTOR_*` layer, from `var` (the process environment in `envdoctor`, a map in tests).
pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Layer, Error> {
    let mut layer = Layer::default();
    let items = |s: &str| -> Vec<String> {
        s.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    const RULES: &str = "ENVDOCTOR_RULES";
    if let Some(v) = var(RULES).filter(|v| !v.is_empty()) {
        // An empty entry (`:/dir`, a trailing `:`) names nothing, as in PATH-like lists.
        for p in std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()) {
            layer.rules.push(sourced(p, RULES));
        }
    }
    const FAIL_ON: &str = "ENVDOCTOR_FAIL_ON";
    if let Some(v) = var(FAIL_ON).filter(|v| !v.is_empty()) {
        let f = parse_fail_on(&v).map_err(|e| Error::input(FAIL_ON, e))?;
        layer.fail_on = Some(sourced(f, FAIL_ON));
    }
    const GPU: &str = "ENVDOCTOR_EXPECT_GPU";
    if let Some(v) = var(GPU).filter(|v| !v.is_empty()) {
        let b = match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => true,
            "0" | "false" | "no" | "off" => false,
            _ => {
                return Err(Error::input(
                    GPU,
                    format!("`{v}` is not true or false (1/0)"),
                ))
            }
        };
        layer.expect_gpu = Some(sourced(b, GPU));
    }
    const PARAMS: &str = "ENVDOCTOR_PARAMS";
    if let Some(v) = var(PARAMS) {
        for a in items(&v) {
            let p = parse_param(&a).map_err(|e| Error::input(PARAMS, e))?;
            layer.params.push(sourced(p, PARAMS));
        }
    }
    const IGNORE: &str = "ENVDOCTOR_IGNORE";
    if let Some(v) = var(IGNORE) {
        for a in items(&v) {
            let i = Ignore::parse(&a).ok_or_else(|| {
                Error::input(IGNORE, format!("`{a}` is not RULE or RULE:SUBJECT"))
            })?;
            layer.ignore.push(sourced(i, IGNORE));
        }
    }
    const SEVERITY: &str = "ENVDOCTOR_SEVERITY";
    if let Some(v) = var(SEVERITY) {
        for a in items(&v) {
            let (rule, s) = a
                .split_once('=')
                .ok_or_else(|| Error::input(SEVERITY, format!("`{a}` is not RULE=SEVERITY")))?;
            let sev = parse_severity(s).map_err(|e| Error::input(SEVERITY, e))?;
            layer
                .severity
                .push(sourced((rule.to_string(), sev), SEVERITY));
        }
    }
    Ok(layer)
}

pub use crate::rules::parse_param;

// ---------------------------------------------------------------------------------------------
// The command line.

/// The command line's layer: `--rules`, `--fail-on`, `--param`, `--ignore`.
pub fn from_cli(
    rules: &[PathBuf],
    fail_on: Option<FailOn>,
    params: &[String],
    ignore: &[String],
) -> Result<Layer, Error> {
    let mut layer = Layer {
        rules: rules
            .iter()
            .map(|p| sourced(p.clone(), "--rules"))
            .collect(),
        fail_on: fail_on.map(|f| sourced(f, "--fail-on")),
        ..Layer::default()
    };
    for a in params {
        let p = parse_param(a).map_err(|e| Error::input(format!("--param {a}"), e))?;
        layer.params.push(sourced(p, format!("--param {a}")));
    }
    for a in ignore {
        let i = Ignore::parse(a).ok_or_else(|| {
            Error::input(format!("--ignore {a}"), "expected RULE or RULE:SUBJECT")
        })?;
        layer.ignore.push(sourced(i, format!("--ignore {a}")));
    }
    Ok(layer)
}

/// Everything for one `check`: the project file found from `project_dir` (or `explicit`), the
/// process environment, and the command line's layer.
pub fn load(
    project_dir: Option<&Path>,
    explicit: Option<&Path>,
    cli: Layer,
) -> Result<Config, Error> {
    let file = match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => project_dir.and_then(find),
    };
    let mut layers = Vec::new();
    if let Some(f) = &file {
        layers.push(read_file(f)?);
    }
    layers.push(from_env(|k| std::env::var(k).ok())?);
    layers.push(cli);
    Ok(Config::merge(file, layers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_errors_name_the_line() {
        let text = "fail-on = \"warning\"\n\nignore = [\"a-rule\"]\nfail_on_typo = 1\n";
        let e = parse_file("p/envdoctor.toml", text, false).unwrap_err();
        assert_eq!(e.subject.as_deref(), Some("p/envdoctor.toml:4"), "{e}");
        assert!(e.message.contains("fail_on_typo"), "{e}");

        let text = "[tool.black]\nx = 1\n[tool.envdoctor]\nfail-on = \"critical\"\n";
        let e = parse_file("pyproject.toml", text, true).unwrap_err();
        assert_eq!(e.subject.as_deref(), Some("pyproject.toml:4"), "{e}");
        assert!(e.message.contains("critical"), "{e}");

        let e = parse_file("envdoctor.toml", "rules = [\n  1,\n]\n", false).unwrap_err();
        assert_eq!(e.subject.as_deref(), Some("envdoctor.toml:2"), "{e}");
    }

    #[test]
    fn file_keys_parse_with_their_lines() {
        let text = "rules = [\"team-rules\"]\nfail-on = \"never\"\nexpect-gpu = true\n\
                    ignore = [\"r1\", \"r2:/venv/bin/python\"]\n\
                    [params.r3]\nthreshold = 50\n[severity]\nr4 = \"info\"\n";
        let l = parse_file("/proj/envdoctor.toml", text, false).unwrap();
        assert_eq!(l.rules[0].value, PathBuf::from("/proj/team-rules"));
        assert_eq!(l.fail_on.as_ref().unwrap().value, FailOn::Never);
        assert_eq!(l.fail_on.as_ref().unwrap().source, "/proj/envdoctor.toml:2");
        assert!(l.expect_gpu.as_ref().unwrap().value);
        assert_eq!(
            l.ignore[1].value.subject.as_deref(),
            Some("/venv/bin/python")
        );
        assert_eq!(
            l.params[0].value,
            ("r3".into(), "threshold".into(), Value::from(50))
        );
        assert_eq!(l.params[0].source, "/proj/envdoctor.toml:6");
        assert_eq!(l.severity[0].value, ("r4".into(), Severity::Info));
        // A pyproject.toml without the table configures nothing.
        let l = parse_file("pyproject.toml", "[project]\nname = \"x\"\n", true).unwrap();
        assert_eq!(l, Layer::default());
    }

    #[test]
    fn precedence_is_cli_then_env_then_file() {
        let file = parse_file(
            "envdoctor.toml",
            "fail-on = \"never\"\n[params.r]\nt = 1\n",
            false,
        )
        .unwrap();
        let env = from_env(|k| match k {
            "ENVDOCTOR_FAIL_ON" => Some("warning".into()),
            "ENVDOCTOR_PARAMS" => Some("r.t=2".into()),
            _ => None,
        })
        .unwrap();
        let cli = from_cli(&[], Some(FailOn::Error), &[], &[]).unwrap();
        let c = Config::merge(None, vec![file.clone(), env.clone(), cli]);
        assert_eq!(c.fail_on.value, FailOn::Error);
        assert_eq!(c.fail_on.source, "--fail-on");
        let c = Config::merge(None, vec![file.clone(), env, Layer::default()]);
        assert_eq!(c.fail_on.source, "ENVDOCTOR_FAIL_ON");
        // Parameters are applied lowest first: the environment's 2 is applied last.
        assert_eq!(c.params.last().unwrap().value.2, Value::from(2));
        let c = Config::merge(None, vec![Layer::default()]);
        assert_eq!(
            (c.fail_on.value, c.fail_on.source.as_str()),
            (FailOn::Error, "default")
        );
    }

    #[test]
    fn bad_variables_are_named() {
        let e = from_env(|k| (k == "ENVDOCTOR_EXPECT_GPU").then(|| "maybe".into())).unwrap_err();
        assert_eq!(e.subject.as_deref(), Some("ENVDOCTOR_EXPECT_GPU"));
        let e = from_env(|k| (k == "ENVDOCTOR_SEVERITY").then(|| "r=fatal".into())).unwrap_err();
        assert!(e.message.contains("fatal"), "{e}");
    }
}
