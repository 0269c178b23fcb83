//! The command line: argument definitions (clap derive) and dispatch to the library.
//!
//! Each subcommand's work lives in the library; this module only turns arguments into
//! [`crate::probe::Options`] and calls it. Exit codes: 0 success / nothing to report, 1 findings or
//! drift, 2 envdoctor could not do its job.

use crate::probe::{self, Options};
use crate::report::findings::{self, FailOn, Summary};
use crate::report::style::Style;
use crate::report::{write_stdout, Format};
use crate::root::{Env, Root};
use crate::rules::RuleSet;
use crate::Error;
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  envdoctor check                         what will break on this machine, and how to fix it
  envdoctor check --checkpoint runs/exp1  also: can this environment load that checkpoint?
  envdoctor check --format json           the same as JSON (findings + snapshot), for CI
  envdoctor snapshot -o today.json        every fact, saved to a file
  envdoctor compare yesterday.json today.json
                                          what drifted, what it will break first
  envdoctor explain gpu-memory-held-by-other-process
                                          a rule's symptoms, cause, check and fix
  envdoctor rules test ./team-rules       run your rules' inline tests
  envdoctor snapshot --root fixtures/machines/py-pyenv
                                          probe a fake machine laid out under a directory

Exit codes: 0 success, 1 findings (check) or drift (compare), 2 envdoctor could not do its job.";

const COMPARE_ABOUT: &str = "\
Compare snapshots written by `envdoctor snapshot`: a semantic diff, not a JSON diff.

Two snapshots (A, B): every fact that differs, ranked: first rule verdicts that change (a finding
that fires on B and not on A: \"B will hit ...\"), then ML and CUDA facts (torch, tensorflow, jax,
numpy, nvidia-* and other ML packages, the interpreter version, CUDA toolkits, cuDNN, the driver,
resolved libraries, GPUs), then the rest. Package changes say upgrade or downgrade and how big
(major, minor, patch, pre-release, local tag such as +cu118 -> +cu121) under PEP 440.
Interpreters are matched by role (the PATH python, VIRTUAL_ENV, the project's venv, the IDE's, a
conda env by name, a pyenv version), not by absolute path, and home directories are written ~,
so machines with different users line up; interpreters that match nothing are listed.

Three or more snapshots (a fleet): for each fact, the majority value and the machines that differ
from it, grouped by fact and by machine.

Volatile facts (collected_at, live GPU and host state, pids) and machine identity (hostname, GPU
UUIDs) are ignored unless --all.";

const COMPARE_EXAMPLES: &str = "\
Examples:
  envdoctor snapshot -o monday.json; ...; envdoctor snapshot -o friday.json
  envdoctor compare monday.json friday.json           what changed on this machine
  envdoctor compare good.json bad.json --only packages,cuda
  envdoctor compare node*.json --format markdown      a fleet, for a pull-request comment
  envdoctor compare a.json b.json --format json | jq '.changes[] | select(.rank == \"ml\")'

Exit codes (as diff): 0 no drift in what is compared, 1 drift, 2 trouble (a file missing, empty,
truncated, not a snapshot, or from a newer envdoctor). The JSON format is described by
schema/compare.schema.json.";

/// A doctor for machine-learning training machines: finds the environment drift that breaks
/// training (wrong interpreter, missing CUDA libraries, busy GPUs, stale checkpoints) before
/// the job starts.
#[derive(Debug, Parser)]
#[command(name = "envdoctor", version, about, long_about = None, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Probe the machine (or read a saved snapshot), evaluate the rule pack and say what will
    /// break, why and how to fix it.
    Check(CheckArgs),
    /// Probe the machine and write every fact as JSON (stdout by default).
    Snapshot(SnapshotArgs),
    /// List, show, test and lint rules.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Explain a rule: what the failure looks like, why it happens, what is checked, the fix.
    Explain(ExplainArgs),
    /// Compare snapshots: the drift between two machines or two days, or across a fleet.
    #[command(long_about = COMPARE_ABOUT, after_help = COMPARE_EXAMPLES)]
    Compare(crate::compare::cli::CompareArgs),
    /// Internal: query NVML and stream JSON lines (run by the gpu probe in a child process).
    #[command(name = "__nvml-child", hide = true)]
    NvmlChild(NvmlChildArgs),
    /// Internal: load libraries and report versions (run by the libs probe in a child process).
    #[command(name = "__load-child", hide = true)]
    LoadChild {
        /// FAMILY PATH pairs (`-` for no family).
        #[arg(num_args = 0.., allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `envdoctor __nvml-child` (internal).
#[derive(Debug, Args)]
pub struct NvmlChildArgs {
    /// The NVML library to load (default: `libnvidia-ml.so.1` by the loader's search).
    #[arg(long, value_name = "PATH")]
    pub lib: Option<PathBuf>,
}

/// Options shared by every command that probes a machine.
#[derive(Debug, Args, Clone)]
pub struct ProbeArgs {
    /// The directory that plays the machine's `/` (for probing a copied or fake machine).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// The project directory: its venvs, IDE settings and checkpoints are probed. Default: the
    /// current directory (none with --root).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// A checkpoint file or directory to inspect (repeatable).
    #[arg(long = "checkpoint", value_name = "PATH")]
    pub checkpoints: Vec<PathBuf>,
    /// Seconds each probe may take before it is reported as timed out.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub deadline: f64,
    /// Never load shared libraries (not even in a child process).
    #[arg(long)]
    pub no_load: bool,
    /// Load NVML from this file instead of searching for libnvidia-ml.so.1.
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
    /// Inspect a running training process: which CUDA libraries it really loaded (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
}

/// `envdoctor check`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  envdoctor check                           this machine, this project
  envdoctor check --checkpoint runs/exp1    also inspect a training directory
  envdoctor check --from today.json         rules on a saved snapshot
  envdoctor check --format json --fail-on warning      a CI gate
  envdoctor check --rules ./team-rules      add (or replace) rules

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 envdoctor could not do
its job (bad arguments, unreadable snapshot, invalid rules).")]
pub struct CheckArgs {
    /// Probe options (ignored with --from).
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Evaluate the rules on a snapshot saved by `envdoctor snapshot` instead of probing.
    #[arg(long, value_name = "SNAPSHOT")]
    pub from: Option<PathBuf>,
    /// Add the rules in this directory or file (repeatable); a rule with a shipped id replaces it.
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Override a rule parameter, e.g. `gpu-memory-held-by-other-process.threshold=50`.
    #[arg(long = "param", value_name = "RULE.NAME=VALUE")]
    pub params: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Seconds one rule may spend evaluating before it is stopped (and named in probe_errors).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub rule_budget: f64,
    /// Jobs here must use a GPU: a missing GPU library is an error even on a machine without one
    /// (a CI runner checking a GPU image). Same as `--expect gpu`.
    #[arg(long, env = "ENVDOCTOR_EXPECT_GPU", value_parser = clap::builder::BoolishValueParser::new())]
    pub expect_gpu: bool,
    /// What must work here besides the defaults (comma-separated): `gpu`, `profiler` (a missing
    /// CUPTI becomes an error; profiler variables such as KINETO_USE_DAEMON imply it).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "WHAT",
        env = "ENVDOCTOR_EXPECT"
    )]
    pub expect: Vec<Expectation>,
}

/// `--expect` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Expectation {
    /// GPU jobs (as `--expect-gpu`).
    Gpu,
    /// Profiling (CUPTI).
    Profiler,
}

/// `check`'s output formats: the shared ones, and those of CI and fleet tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    /// For a person, aligned, coloured on a terminal.
    Text,
    /// Machine-readable JSON (findings + snapshot, schema/check.schema.json).
    Json,
    /// Markdown, for a pull-request comment or an issue.
    Markdown,
    /// SARIF 2.1.0, for code-scanning dashboards.
    Sarif,
    /// JUnit XML: one testcase per rule, failures for findings at or above --fail-on.
    Junit,
    /// GitHub Actions workflow commands (`::error file=…,title=…::…`).
    Github,
    /// Prometheus text format, for node-exporter's textfile collector.
    Prometheus,
}

/// `envdoctor rules ...`.
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// List the rules (shipped, plus --rules).
    List(RulesListArgs),
    /// Show one rule as written, with where it comes from.
    Show(RulesShowArgs),
    /// Run rules' inline tests (default: the shipped pack and --rules; or the given files/dirs).
    Test(RulesFilesArgs),
    /// Validate rule files and report style problems (missing tests, references, ...).
    Lint(RulesFilesArgs),
}

/// `envdoctor rules list`.
#[derive(Debug, Args)]
pub struct RulesListArgs {
    /// Also load rules from here (repeatable).
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Output format (text or json).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `envdoctor rules show`.
#[derive(Debug, Args)]
pub struct RulesShowArgs {
    /// The rule id.
    pub id: String,
    /// Also load rules from here (repeatable).
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
}

/// `envdoctor rules test|lint`.
#[derive(Debug, Args)]
pub struct RulesFilesArgs {
    /// Rule files or directories (default: the shipped pack plus --rules).
    pub paths: Vec<PathBuf>,
    /// Also load rules from here (repeatable; with no PATHs).
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
}

/// `envdoctor explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The rule id (see `envdoctor rules list`).
    pub id: String,
    /// Also load rules from here (repeatable).
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
}

/// `envdoctor snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Probe options.
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Write the snapshot here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl ProbeArgs {
    /// Turn the arguments into probe options, checking them.
    pub fn to_options(&self) -> Result<Options, Error> {
        if !(self.deadline.is_finite() && self.deadline > 0.0 && self.deadline <= 3600.0) {
            return Err(Error::input(
                "--deadline",
                format!(
                    "{} is not a number of seconds between 0 and 3600",
                    self.deadline
                ),
            ));
        }
        let root_dir = if self.root == Path::new("/") {
            PathBuf::from("/")
        } else {
            std::fs::canonicalize(&self.root).map_err(|e| {
                Error::input(self.root.display().to_string(), format!("--root: {e}"))
            })?
        };
        if !root_dir.is_dir() {
            return Err(Error::input(
                self.root.display().to_string(),
                "--root must be a directory",
            ));
        }
        let root = Root::new(root_dir);
        let mut opts = Options::new(root.clone(), Env::from_process());
        opts.deadline = Duration::from_secs_f64(self.deadline);
        opts.no_load = self.no_load;
        opts.nvml_lib = self.nvml_lib.clone();
        opts.pids = self.pids.clone();
        let cwd = std::env::current_dir().ok();
        // With the real root, relative paths are relative to the current directory; with --root
        // they are machine paths inside the root (relative ones taken from its `/`).
        let to_machine = |p: &Path| -> PathBuf {
            if p.is_absolute() {
                p.to_path_buf()
            } else if root.is_host() {
                cwd.clone().unwrap_or_else(|| PathBuf::from("/")).join(p)
            } else {
                Path::new("/").join(p)
            }
        };
        opts.project = match &self.project {
            Some(p) => Some(to_machine(p)),
            None if root.is_host() => cwd.clone(),
            None => None,
        };
        opts.checkpoints = self.checkpoints.iter().map(|p| to_machine(p)).collect();
        Ok(opts)
    }
}

/// Run a parsed command line; returns the exit code.
pub fn run(cli: Cli) -> Result<i32, Error> {
    match cli.command {
        Command::Check(args) => check(args),
        Command::Snapshot(args) => snapshot(args),
        Command::Rules(cmd) => rules_cmd(cmd),
        Command::Explain(args) => explain(args),
        Command::Compare(args) => crate::compare::cli::run(args),
        Command::NvmlChild(args) => Ok(probe::gpu::child::run(args.lib.as_deref())),
        Command::LoadChild { args } => Ok(probe::libs::load::child_main(&args)),
    }
}

fn snapshot(args: SnapshotArgs) -> Result<i32, Error> {
    let opts = args.probe.to_options()?;
    let snap = probe::collect(opts);
    // Streamed, not built as one string: a machine with many environments makes a snapshot of
    // a hundred megabytes.
    match &args.output {
        Some(path) => {
            let shown = path.display().to_string();
            let file = std::fs::File::create(path)
                .map_err(|e| Error::input(&shown, format!("cannot write: {e}")))?;
            snap.write_json(std::io::BufWriter::new(file))
                .map_err(|e| Error::input(&shown, format!("cannot write: {e}")))?;
        }
        None => {
            let stdout = std::io::stdout();
            match snap.write_json(std::io::BufWriter::new(stdout.lock())) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.map_err(|e| Error::other(format!("cannot write to stdout: {e}")))?,
            }
        }
    }
    Ok(0)
}

fn out(text: &str) -> Result<(), Error> {
    write_stdout(text).map_err(|e| Error::other(format!("cannot write to stdout: {e}")))
}

/// Time the rules may take beyond the probe deadline (the probes hand over within 0.25 s of it).
const RULES_GRACE: std::time::Duration = std::time::Duration::from_millis(400);

fn check(args: CheckArgs) -> Result<i32, Error> {
    let started = std::time::Instant::now();
    if !(args.rule_budget.is_finite() && args.rule_budget > 0.0 && args.rule_budget <= 3600.0) {
        return Err(Error::input(
            "--rule-budget",
            format!(
                "{} is not a number of seconds between 0 and 3600",
                args.rule_budget
            ),
        ));
    }
    let mut rules = RuleSet::shipped_with(&args.rules)?;
    rules.set_params(&args.params)?;
    let mut snap = match &args.from {
        Some(path) => crate::Snapshot::read_file(path)?,
        None => probe::collect(args.probe.to_options()?),
    };
    snap.expect.from_env(&snap.env);
    if args.expect_gpu {
        snap.expect
            .given(true, false, "--expect-gpu / ENVDOCTOR_EXPECT_GPU");
    }
    for e in &args.expect {
        match e {
            Expectation::Gpu => snap.expect.given(true, false, "--expect gpu"),
            Expectation::Profiler => snap.expect.given(false, true, "--expect profiler"),
        }
    }
    // Rules get what is left of the deadline, and a little grace, so `check` ends by then.
    let deadline = std::time::Duration::from_secs_f64(args.probe.deadline.clamp(0.1, 3600.0));
    let limits = crate::rules::EvalLimits {
        per_rule: std::time::Duration::from_secs_f64(args.rule_budget),
        until: Some(
            (started + deadline + RULES_GRACE).max(std::time::Instant::now() + RULES_GRACE),
        ),
    };
    let (found, stopped) = rules.check_within(&snap, limits);
    snap.probe_errors.extend(
        stopped
            .into_iter()
            .map(|m| crate::snapshot::ProbeError::new("rules", m)),
    );
    let summary = Summary::of(&found, &snap, args.fail_on);
    let text = match args.format {
        CheckFormat::Json => findings::json(&found, &summary, &snap),
        CheckFormat::Markdown => findings::markdown(&found, &summary, &snap),
        CheckFormat::Sarif => {
            crate::report::sarif::render(rules.rules(), &found, &snap, sarif_base(&args).as_deref())
        }
        CheckFormat::Junit => crate::report::junit::render(rules.rules(), &found, &summary, &snap),
        CheckFormat::Github => crate::report::github::render(&found, &summary, &snap),
        CheckFormat::Prometheus => crate::report::prometheus::render(
            rules.rules(),
            &found,
            &summary,
            &snap,
            crate::report::prometheus::now(),
        ),
        CheckFormat::Text => findings::text(
            &found,
            &summary,
            &snap,
            &Style {
                color: crate::report::style::stdout_color(),
            },
        ),
    };
    out(&text)?;
    Ok(if summary.failed { 1 } else { 0 })
}

/// The project directory SARIF locations are relative to: only when probing this machine (a
/// snapshot or a `--root` speaks of another machine's paths).
fn sarif_base(args: &CheckArgs) -> Option<PathBuf> {
    if args.from.is_some() || args.probe.root != Path::new("/") {
        return None;
    }
    let dir = match &args.probe.project {
        Some(p) => p.clone(),
        None => std::env::current_dir().ok()?,
    };
    std::path::absolute(dir).ok()
}

fn load_for_files(paths: &[PathBuf], extra: &[PathBuf]) -> Result<RuleSet, Error> {
    if paths.is_empty() {
        RuleSet::shipped_with(extra)
    } else {
        RuleSet::from_paths(paths)
    }
}

fn rules_cmd(cmd: RulesCommand) -> Result<i32, Error> {
    match cmd {
        RulesCommand::List(a) => {
            let set = RuleSet::shipped_with(&a.rules)?;
            if a.format == Format::Json {
                let list: Vec<serde_json::Value> = set
                    .rules()
                    .iter()
                    .map(|r| {
                        serde_json::json!({
                            "id": r.id, "severity": r.severity, "scope": r.scope.as_str(),
                            "title": r.title, "file": r.origin.file, "line": r.origin.line,
                            "shipped": r.origin.shipped, "facts": r.when.facts(),
                        })
                    })
                    .collect();
                let mut s = serde_json::to_string_pretty(&list).unwrap_or_default();
                s.push('\n');
                out(&s)?;
            } else {
                let w = set.rules().iter().map(|r| r.id.len()).max().unwrap_or(0);
                let mut s = String::new();
                for r in set.rules() {
                    s.push_str(&format!(
                        "{:<w$}  {:<7}  {:<11}  {}\n",
                        r.id,
                        r.severity.as_str(),
                        r.scope.as_str(),
                        r.title
                    ));
                }
                s.push_str(&format!("{} rules\n", set.rules().len()));
                out(&s)?;
            }
            Ok(0)
        }
        RulesCommand::Show(a) => {
            let set = RuleSet::shipped_with(&a.rules)?;
            let r = set.get(&a.id).ok_or_else(|| unknown_rule(&a.id))?;
            out(&format!(
                "# {}:{}{}\n{}\n",
                r.origin.file,
                r.origin.line,
                if r.origin.shipped { " (shipped)" } else { "" },
                r.origin.source
            ))?;
            Ok(0)
        }
        RulesCommand::Test(a) => {
            let set = load_for_files(&a.paths, &a.rules)?;
            let results = set.run_tests();
            let mut s = String::new();
            let failed = results.iter().filter(|r| r.failure.is_some()).count();
            for r in &results {
                match &r.failure {
                    None => s.push_str(&format!("ok    {} / {}\n", r.rule, r.name)),
                    Some(why) => s.push_str(&format!(
                        "FAIL  {} / {} ({}:{})\n      {why}\n",
                        r.rule, r.name, r.file, r.line
                    )),
                }
            }
            s.push_str(&format!(
                "\n{} rules, {} tests: {} passed, {} failed\n",
                set.rules().len(),
                results.len(),
                results.len() - failed,
                failed
            ));
            out(&s)?;
            Ok(if failed > 0 { 1 } else { 0 })
        }
        RulesCommand::Lint(a) => {
            let set = load_for_files(&a.paths, &a.rules)?;
            let problems = set.lint();
            let mut s = String::new();
            for p in &problems {
                s.push_str(&format!("warning: {p}\n"));
            }
            s.push_str(&format!(
                "{} rules valid; {} style problem{}\n",
                set.rules().len(),
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            ));
            out(&s)?;
            Ok(if problems.is_empty() { 0 } else { 1 })
        }
    }
}

fn unknown_rule(id: &str) -> Error {
    Error::input(id, "no rule with this id").with_hint("`envdoctor rules list` shows them all")
}

fn explain(a: ExplainArgs) -> Result<i32, Error> {
    let set = RuleSet::shipped_with(&a.rules)?;
    let r = set.get(&a.id).ok_or_else(|| unknown_rule(&a.id))?;
    out(&crate::rules::explain::render(r))?;
    Ok(0)
}
