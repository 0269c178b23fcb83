//! The command line: argument definitions (clap derive), dispatch, and each command's
//! orchestration (`check`/`report`, `snapshot`, `rules`, `explain` here; [`compare`],
//! [`diagnose`] (`diagnose` and `run`) and the probe options they share ([`probe_args`]) beside).
//!
//! Each subcommand's work lives in the library; this layer turns arguments into
//! [`crate::probe::Options`], calls the layers below (probes, snapshot, rules, compare,
//! diagnose) and hands their results to `report`. Nothing below it imports it. Exit codes: 0
//! success / nothing to report, 1 findings or drift, 2 envdoctor could not do its job.

pub mod compare;
pub mod diagnose;
pub mod probe_args;

use crate::exit::Exit;
use crate::probe;
use crate::report::layout::Layout;
use crate::report::style::{ColorWhen, Style};
use crate::report::verdict::{FailOn, Summary};
use crate::report::{write_stdout, Format};
use crate::root::Env;
use crate::rules::RuleSet;
use crate::Error;
use clap::{Args, CommandFactory, Parser, Subcommand};
pub use probe_args::ProbeArgs;
use std::path::{Path, PathBuf};

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
  envdoctor diagnose train.log            which known failure this log shows, confirmed by facts
  envdoctor run -- python train.py        run it; if it fails, diagnose its output
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
    /// Options every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes (before or after the subcommand).
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Print only the verdict line (check's and compare's text output).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// More detail: check, the facts the rules that fired looked at; compare, the
    /// interpreters even when nothing differs.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// When to colour: auto (a terminal, unless NO_COLOR, CLICOLOR=0 or TERM=dumb;
    /// FORCE_COLOR or CLICOLOR_FORCE colour a pipe too), always, never.
    #[arg(long, value_enum, global = true, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
}

/// `envdoctor --version`: the version, the shipped rule pack (count and SHA-256 of its files) and
/// the target it was built for, so two binaries that print the same version can be told apart.
pub fn version_text() -> String {
    let rules = RuleSet::shipped().map(|s| s.rules().len()).unwrap_or(0);
    format!(
        "{} (rule pack: {rules} rules, sha256 {}; target {})",
        env!("CARGO_PKG_VERSION"),
        &env!("ENVDOCTOR_RULES_SHA256")[..16],
        env!("ENVDOCTOR_TARGET"),
    )
}

/// The command-line definition with the computed version (completions and the man page).
pub fn command() -> clap::Command {
    Cli::command().version(version_text())
}

/// The definition `main` parses `args` with: the rule-pack count in the version costs a
/// compilation of the pack, so it is computed only when `--version`/`-V` or `man` is asked
/// for, never for the probes' internal children (started many times per run).
pub fn command_for(args: &[std::ffi::OsString]) -> clap::Command {
    let wants_version = args
        .iter()
        .skip(1)
        .any(|a| a == "--version" || a == "-V" || a == "man");
    if wants_version {
        command()
    } else {
        Cli::command()
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Probe the machine (or read a saved snapshot), evaluate the rule pack and say what will
    /// break, why and how to fix it.
    Check(CheckArgs),
    /// Probe the machine and write every fact as JSON (stdout by default).
    Snapshot(SnapshotArgs),
    /// Probe and write an environment report to paste into a bug report (Markdown; --format
    /// json for tools): the summary, the findings and the facts a maintainer asks for.
    #[command(
        after_help = REPORT_EXAMPLES,
        mut_arg("format", |a| a
            .value_parser(clap::builder::TypedValueParser::map(
                clap::builder::PossibleValuesParser::new(["markdown", "json"]),
                |s| if s == "json" { CheckFormat::Json } else { CheckFormat::Markdown },
            ))
            .default_value("markdown")
            .help("Output format: Markdown to paste into an issue, or JSON for tools"))
    )]
    Report(CheckArgs),
    /// List, show, test and lint rules.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Explain a rule: what the failure looks like, why it happens, what is checked, the fix.
    Explain(ExplainArgs),
    /// Compare snapshots: the drift between two machines or two days, or across a fleet.
    #[command(long_about = COMPARE_ABOUT, after_help = COMPARE_EXAMPLES)]
    Compare(compare::CompareArgs),
    /// Diagnose a log: which known failure it shows, confirmed or ruled out by the machine's facts.
    Diagnose(diagnose::DiagnoseArgs),
    /// Run a command; when it fails, diagnose what it printed (exits with its status).
    Run(diagnose::RunArgs),
    /// Print a shell completion script: `envdoctor completions bash > /etc/bash_completion.d/envdoctor`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `envdoctor man > ~/.local/share/man/man1/envdoctor.1`.
    Man,
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

/// The one man page, envdoctor(1): clap_mangen's sections, with the commands listed in it (clap_mangen
/// would name an `envdoctor-check(1)` page per command, which nothing installs).
fn man_page() -> std::io::Result<String> {
    let cmd = command();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    man.render_options_section(&mut buf)?;
    let roff = |s: &str| s.replace('\\', "\\e").replace('-', "\\-");
    buf.extend_from_slice(b".SH COMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let about = about.lines().map(str::trim).collect::<Vec<_>>().join(" ");
        let line = format!(
            ".TP\n\\fBenvdoctor {}\\fR\n\\&{}\n",
            roff(sub.get_name()),
            roff(&about)
        );
        buf.extend_from_slice(line.as_bytes());
    }
    buf.extend_from_slice(
        b".PP\nEach command's options and examples: \\fBenvdoctor\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR.\n",
    );
    if cmd.get_after_help().is_some() || cmd.get_after_long_help().is_some() {
        man.render_extra_section(&mut buf)?;
    }
    man.render_version_section(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// `envdoctor report --help`: its own examples and exit codes (not check's).
const REPORT_EXAMPLES: &str = "\
Examples:
  envdoctor report > env.md                 paste into a bug report or pull request
  envdoctor report --checkpoint runs/exp1   with a training directory's checkpoints
  envdoctor report --format json            the same for tools (schema/report.schema.json)

Exit codes: 0 the report was written (findings or not: it is a document, not a gate), 2
envdoctor could not write it (bad arguments, a named file or directory that is not there,
invalid rules). Secrets never appear: environment values come from an allowlist, and the
hostname, user and process names are left out.";

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
its job (bad arguments, a named file, directory or pid that is not there, unreadable snapshot,
invalid rules) or did it incompletely (a probe failed or timed out; --allow-incomplete: 0 or 1).")]
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
    /// Exit 1 when a finding is at or above this severity [default: error, or the configuration's].
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOn>,
    /// Leave out a rule's findings, or one subject's (`RULE:/venv/bin/python`) (repeatable).
    #[arg(long = "ignore", value_name = "RULE[:SUBJECT]")]
    pub ignore: Vec<String>,
    /// Read this configuration file instead of looking for envdoctor.toml or pyproject.toml's
    /// [tool.envdoctor] in the project and its parents.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// When a probe failed or timed out (the verdict says "incomplete"), exit as if it had not
    /// (0 or 1) instead of 2.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Show every finding of a repeated rule (the text groups them, first 3 shown).
    #[arg(long)]
    pub all: bool,
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
    /// List every fact path rules can read, with the snapshot schema's description of it.
    Facts(RulesFactsArgs),
}

/// `envdoctor rules facts`.
#[derive(Debug, Args)]
pub struct RulesFactsArgs {
    /// Only the paths that start with this (`pythons[].packages`, `libraries[]`, `gpus`).
    pub prefix: Option<String>,
}

/// `envdoctor rules list`.
#[derive(Debug, Args)]
pub struct RulesListArgs {
    /// Also load rules from here (repeatable).
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Output format (text, json or a Markdown table).
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

/// Run a parsed command line; returns the exit code.
pub fn run(cli: Cli) -> Result<Exit, Error> {
    crate::report::style::set_color_when(cli.global.color);
    match cli.command {
        Command::Check(args) => check(args, &cli.global, false),
        Command::Report(args) => check(args, &cli.global, true),
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut command(), "envdoctor", &mut buf);
            out(&String::from_utf8_lossy(&buf))?;
            Ok(Exit::Success)
        }
        Command::Man => {
            out(&man_page()
                .map_err(|e| Error::other(format!("cannot render the man page: {e}")))?)?;
            Ok(Exit::Success)
        }
        Command::Snapshot(args) => snapshot(args),
        Command::Rules(cmd) => rules_cmd(cmd),
        Command::Explain(args) => explain(args),
        Command::Compare(args) => compare::run(
            args,
            crate::report::compare::Detail {
                quiet: cli.global.quiet,
                verbose: cli.global.verbose,
            },
        ),
        Command::Diagnose(args) => diagnose::diagnose_cmd(args),
        Command::Run(args) => diagnose::run_cmd(args),
        // Both children work under a reaper that leaves no descendant behind (probe::reaper).
        Command::NvmlChild(args) => Ok(Exit::Passed(probe::reaper::run(|| {
            probe::gpu::child::run(args.lib.as_deref())
        }))),
        Command::LoadChild { args } => Ok(Exit::Passed(probe::reaper::run(|| {
            probe::libs::load::child_main(&args)
        }))),
    }
}

fn snapshot(args: SnapshotArgs) -> Result<Exit, Error> {
    let start = std::time::Instant::now();
    if args.probe.timings {
        crate::timings::enable();
    }
    let mut opts = args.probe.to_options()?;
    opts.progress = crate::report::progress::wanted()
        .then_some(crate::report::progress::terminal as probe::Progress);
    let snap = probe::collect(opts);
    let written = std::time::Instant::now();
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
    if args.probe.timings {
        crate::timings::record("render (write JSON)", written.elapsed());
        eprint!("{}", crate::timings::report(start));
    }
    Ok(Exit::Success)
}

fn out(text: &str) -> Result<(), Error> {
    write_stdout(text).map_err(|e| Error::other(format!("cannot write to stdout: {e}")))
}

/// Stack of the thread that compiles the rule pack (YAML and conditions nest; the main
/// thread's 8 MiB is what it had before).
const RULES_STACK: usize = 8 << 20;

/// Time the rules may take beyond the probe deadline (the probes hand over within 0.25 s of it).
const RULES_GRACE: std::time::Duration = std::time::Duration::from_millis(400);

fn check(args: CheckArgs, global: &GlobalArgs, report: bool) -> Result<Exit, Error> {
    check_arguments(&args, report)?;
    let start = std::time::Instant::now();
    if args.probe.timings {
        crate::timings::enable();
    }
    let (config, rules, mut snap, project) = rules_and_facts(&args)?;
    if global.verbose {
        for note in crate::snapshot::take_ignored_fields() {
            eprintln!("envdoctor: note: {note}");
        }
    }
    apply_expectations(&args, &config, &mut snap);
    if report {
        crate::report::envreport::leave_out_people(&mut snap);
    }
    // Rules get what is left of the deadline, and a little grace, so `check` ends by then.
    let deadline = std::time::Duration::from_secs_f64(args.probe.deadline.clamp(0.1, 3600.0));
    let limits = crate::rules::EvalLimits {
        per_rule: std::time::Duration::from_secs_f64(args.rule_budget),
        until: Some((start + deadline + RULES_GRACE).max(std::time::Instant::now() + RULES_GRACE)),
    };
    let (found, stopped) =
        crate::timings::span("rules evaluate", || rules.check_within(&snap, limits));
    let found = config.filter(found);
    snap.probe_errors.extend(
        stopped
            .into_iter()
            .map(|m| crate::snapshot::ProbeError::new("rules", m)),
    );
    let t = std::time::Instant::now();
    let summary = Summary::of(&found, &snap, config.fail_on.value);
    let cx = crate::report::Context {
        findings: &found,
        summary: &summary,
        snap: &snap,
        st: Style::stdout(),
        lay: Layout::new(
            crate::report::layout::stdout_width(),
            Env::from_process().home().map(|h| h.display().to_string()),
            project,
        ),
        detail: crate::report::text::Detail {
            verbose: global.verbose,
            all: args.all,
        },
    };
    let text = render_check(&args, global, report, &rules, &cx);
    let text = if !report && args.format == CheckFormat::Text {
        // The last guard for a terminal or a CI log: only our own colours get through.
        crate::report::escape::terminal(&text, Style::stdout().color).into_owned()
    } else {
        text
    };
    out(&text)?;
    if args.probe.timings {
        crate::timings::record("render", t.elapsed());
        eprint!("{}", crate::timings::report(start));
    }
    if summary.incomplete && !args.allow_incomplete && !report {
        // Exit 2 says why on stderr too, as every other exit 2 does (a plugin reads it there).
        if let Some(p) = snap.probe_errors.iter().find(|p| probe::is_incomplete(p)) {
            eprintln!("envdoctor: incomplete: {}: {}", p.probe, p.message);
        }
    }
    let code = if report {
        Exit::Success
    } else {
        summary.exit(args.allow_incomplete)
    };
    // The process exits next: freeing a large snapshot piece by piece is time for nothing.
    std::mem::forget(snap);
    Ok(code)
}

/// Refuse what `check` / `report` cannot do before doing anything.
fn check_arguments(args: &CheckArgs, report: bool) -> Result<(), Error> {
    if report
        && !matches!(
            args.format,
            CheckFormat::Text | CheckFormat::Markdown | CheckFormat::Json
        )
    {
        return Err(Error::input(
            "--format",
            "report writes Markdown (the default) or json",
        ));
    }
    if !(args.rule_budget.is_finite() && args.rule_budget > 0.0 && args.rule_budget <= 3600.0) {
        return Err(Error::input(
            "--rule-budget",
            format!(
                "must be more than 0 and at most 3600 seconds, not {}",
                args.rule_budget
            ),
        ));
    }
    Ok(())
}

/// The configuration, the compiled pack and the facts (probed, or read with `--from`), with the
/// project directory when one was named. The pack compiles on its own thread while the probes
/// run (it needs no fact); a bad rule file is reported before a bad snapshot.
fn rules_and_facts(
    args: &CheckArgs,
) -> Result<
    (
        crate::config::Config,
        RuleSet,
        crate::Snapshot,
        Option<String>,
    ),
    Error,
> {
    let t = std::time::Instant::now();
    let cwd = std::env::current_dir().ok();
    let config_dir = match &args.probe.project {
        Some(p) if args.probe.root == Path::new("/") && args.from.is_none() => Some(p.clone()),
        _ => cwd,
    };
    let config = crate::config::load(
        config_dir.as_deref(),
        args.config.as_deref(),
        crate::config::from_cli(&args.rules, args.fail_on, &args.params, &args.ignore)?,
    )?;
    let compile = || -> Result<RuleSet, Error> {
        let mut rules = RuleSet::for_evaluation(&config.rule_dirs())?;
        config.apply(&mut rules)?;
        crate::timings::record("rules compile", t.elapsed());
        Ok(rules)
    };
    let mut project = None;
    let (rules, snap) = std::thread::scope(|s| {
        let compiling = std::thread::Builder::new()
            .name("rules".into())
            .stack_size(RULES_STACK)
            .spawn_scoped(s, compile);
        let snap = match &args.from {
            Some(path) => crate::timings::span("read snapshot", || crate::Snapshot::load(path)),
            None => args.probe.to_options().and_then(|mut opts| {
                args.probe.check_named(&opts)?;
                opts.progress = crate::report::progress::wanted()
                    .then_some(crate::report::progress::terminal as probe::Progress);
                project = opts.project.as_ref().map(|p| p.display().to_string());
                Ok(probe::collect(opts))
            }),
        };
        let rules = match compiling {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(Error::other("compiling the rules panicked"))),
            // No thread to be had: compile here.
            Err(_) => compile(),
        };
        (rules, snap)
    });
    let rules = rules?;
    let snap = snap?;
    Ok((config, rules, snap, project))
}

/// What the run was told to expect (`--expect-gpu`, `--expect`, the config, the environment).
fn apply_expectations(
    args: &CheckArgs,
    config: &crate::config::Config,
    snap: &mut crate::Snapshot,
) {
    snap.expect.from_env(&snap.env);
    if args.expect_gpu {
        snap.expect
            .given(true, false, "--expect-gpu / ENVDOCTOR_EXPECT_GPU");
    } else if let Some(c) = config.expect_gpu.as_ref().filter(|c| c.value) {
        snap.expect
            .given(true, false, &format!("expect-gpu in {}", c.source));
    }
    for e in &args.expect {
        match e {
            Expectation::Gpu => snap.expect.given(true, false, "--expect gpu"),
            Expectation::Profiler => snap.expect.given(false, true, "--expect profiler"),
        }
    }
}

/// Markdown for stdout: wrapped to the terminal's width when stdout is one.
fn on_terminal(markdown: String) -> String {
    Layout::new(crate::report::layout::stdout_width(), None, None).wrap_markdown(&markdown)
}

/// The output of `check` / `report` in the format asked for.
fn render_check(
    args: &CheckArgs,
    global: &GlobalArgs,
    report: bool,
    rules: &RuleSet,
    cx: &crate::report::Context,
) -> String {
    let (found, summary, snap) = (cx.findings, cx.summary, cx.snap);
    match (report, args.format) {
        (true, CheckFormat::Json) => crate::report::envreport::json(found, summary, snap),
        // Markdown on a terminal wraps as text does; piped, it is the document as pasted.
        (true, _) => on_terminal(crate::report::envreport::markdown(found, summary, snap)),
        (false, CheckFormat::Json) => crate::report::json::render(found, summary, snap),
        (false, CheckFormat::Markdown) => {
            on_terminal(crate::report::markdown::render(found, summary, snap))
        }
        (false, CheckFormat::Sarif) => {
            crate::report::sarif::render(rules.rules(), found, snap, sarif_base(args).as_deref())
        }
        (false, CheckFormat::Junit) => {
            crate::report::junit::render(rules.rules(), found, summary, snap)
        }
        (false, CheckFormat::Github) => crate::report::github::render(found, summary, snap),
        (false, CheckFormat::Prometheus) => crate::report::prometheus::render(
            rules.rules(),
            found,
            summary,
            snap,
            crate::report::prometheus::now(),
        ),
        (false, CheckFormat::Text) => {
            let verdict = crate::report::text::verdict(cx);
            if global.quiet {
                return verdict;
            }
            let full = crate::report::text::render(cx);
            if !global.verbose {
                return full;
            }
            let body = full.strip_suffix(&verdict).unwrap_or(&full);
            // Bounded by what the findings used: the rules that fired, for their subjects.
            let used: Vec<_> = rules
                .looked_at(snap)
                .into_iter()
                .filter(|(r, subject, _)| {
                    found
                        .iter()
                        .any(|f| f.rule == r.id && (f.subject == *subject || subject.is_none()))
                })
                .collect();
            if used.is_empty() {
                return full;
            }
            let facts = crate::report::text::looked_at(&used, rules.rules().len(), cx);
            format!("{body}{facts}{verdict}")
        }
    }
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

fn rules_cmd(cmd: RulesCommand) -> Result<Exit, Error> {
    match cmd {
        RulesCommand::List(a) => {
            let set = RuleSet::shipped_with(&a.rules)?;
            out(&match a.format {
                Format::Json => crate::report::rules::list_json(&set),
                Format::Markdown => crate::report::rules::list_markdown(&set),
                Format::Text => crate::report::rules::list_text(
                    &set,
                    &Layout::new(crate::report::layout::stdout_width(), None, None),
                ),
            })?;
            Ok(Exit::Success)
        }
        RulesCommand::Show(a) => {
            let set = RuleSet::shipped_with(&a.rules)?;
            let r = set.get(&a.id).ok_or_else(|| unknown_rule(&set, &a.id))?;
            out(&format!(
                "# {}:{}{}\n{}\n",
                r.origin.file,
                r.origin.line,
                if r.origin.shipped { " (shipped)" } else { "" },
                r.origin.source
            ))?;
            Ok(Exit::Success)
        }
        RulesCommand::Test(a) => {
            let set = load_for_files(&a.paths, &a.rules)?;
            let results = set.run_tests();
            let failed = results.iter().filter(|r| r.failure.is_some()).count();
            let lay = Layout::new(crate::report::layout::stdout_width(), None, None);
            out(&lay.wrap_lines(&crate::report::rules::test_text(&set, &results)))?;
            Ok(Exit::found_if(failed > 0))
        }
        RulesCommand::Facts(a) => {
            let paths = crate::rules::path::SchemaWalker::default().fact_paths();
            let prefix = a.prefix.as_deref().unwrap_or("");
            let text = crate::report::rules::facts_text(&paths, prefix);
            if text.is_empty() {
                return Err(Error::input(prefix, "no fact path starts with this")
                    .with_hint("`envdoctor rules facts` lists them all"));
            }
            out(&text)?;
            Ok(Exit::Success)
        }
        RulesCommand::Lint(a) => {
            let set = load_for_files(&a.paths, &a.rules)?;
            let problems = set.lint();
            let mut s = String::new();
            for p in &problems {
                s.push_str(&format!("warning: {p}\n"));
            }
            s.push_str(&format!(
                "{} rules valid; {}\n",
                set.rules().len(),
                crate::plural::plural(problems.len(), "style problem")
            ));
            let lay = Layout::new(crate::report::layout::stdout_width(), None, None);
            out(&lay.wrap_lines(&s))?;
            Ok(Exit::found_if(!problems.is_empty()))
        }
    }
}

fn unknown_rule(set: &RuleSet, id: &str) -> Error {
    let msg = match crate::rules::did_you_mean(id, set.rules().iter().map(|r| r.id.as_str())) {
        Some(near) => format!("no rule with this id (did you mean `{near}`?)"),
        None => "no rule with this id".to_string(),
    };
    Error::input(id, msg).with_hint("`envdoctor rules list` shows them all")
}

fn explain(a: ExplainArgs) -> Result<Exit, Error> {
    let set = RuleSet::shipped_with(&a.rules)?;
    let r = set.get(&a.id).ok_or_else(|| unknown_rule(&set, &a.id))?;
    let lay = Layout::new(crate::report::layout::stdout_width(), None, None);
    out(&lay.wrap_lines(&crate::report::explain::render(r)))?;
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks (conflicting flags, duplicate shorts across the global
    /// `-q`/`-v` and subcommands' options) on the whole definition.
    #[test]
    fn clap_definitions_are_consistent() {
        super::command().debug_assert();
    }
}
