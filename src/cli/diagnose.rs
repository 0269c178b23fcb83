//! The `diagnose` and `run` subcommands: arguments, where the log and the facts come from, and
//! what `run` does with the output its supervisor ([`crate::diagnose::supervise`]) relayed and kept.

use super::probe_args::ProbeArgs;
use crate::diagnose::matcher::SymptomIndex;
use crate::diagnose::Report;
use crate::exit::Exit;
use crate::probe;
use crate::report::diagnose as render;
use crate::report::style::Style;
use crate::report::{write_stdout, Format};
use crate::rules::RuleSet;
use crate::Error;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Where the facts come from and how to print, shared by `diagnose` and `run`.
#[derive(Debug, Args)]
pub struct FactArgs {
    /// Probe options (ignored with --from).
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Confirm against a snapshot saved where the job ran, instead of probing this machine.
    #[arg(long, value_name = "SNAPSHOT")]
    pub from: Option<PathBuf>,
    /// Add the rules in this directory or file (repeatable).
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `envdoctor diagnose`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  envdoctor diagnose train.log                    which known failure is this, on this machine?
  python train.py 2>&1 | envdoctor diagnose -     the same, from a pipe
  envdoctor diagnose job.err --from node17.json   confirm with the facts of the machine it ran on
  envdoctor diagnose job.err --checkpoint runs/exp1/last.pt
                                                  also inspect the checkpoint the job loaded

Exit codes: 0 a diagnosis is confirmed by the facts, 1 only plausible ones or none, 2 envdoctor
could not do its job (unreadable or binary log, bad arguments). JSON: schema/diagnose.schema.json.")]
pub struct DiagnoseArgs {
    /// The log, traceback or pasted excerpt (`-` or nothing: stdin).
    #[arg(value_name = "LOG")]
    pub log: Option<PathBuf>,
    /// Facts and output.
    #[command(flatten)]
    pub facts: FactArgs,
}

/// `envdoctor run`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  envdoctor run -- python train.py --epochs 3
  envdoctor run --checkpoint runs/last.pt -- python eval.py

The command's output passes through unchanged; when it exits non-zero its output is diagnosed
(the diagnosis goes to stderr) and envdoctor exits with the command's status.")]
pub struct RunArgs {
    /// Facts and output.
    #[command(flatten)]
    pub facts: FactArgs,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, num_args = 1.., value_name = "CMD")]
    pub command: Vec<String>,
}

/// `envdoctor diagnose`: exit 0 confirmed, 1 otherwise.
pub fn diagnose_cmd(a: DiagnoseArgs) -> Result<Exit, Error> {
    let rules = RuleSet::for_evaluation(&a.facts.rules)?;
    let index = SymptomIndex::new(rules.rules());
    let (shown, scanned) = match a.log.as_deref().filter(|p| p.as_os_str() != "-") {
        None => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                return Err(Error::input(
                    "LOG",
                    "no log given and stdin is a terminal: pass a file, or pipe the output in \
                     (`python train.py 2>&1 | envdoctor diagnose -`)",
                ));
            }
            (
                "stdin".to_string(),
                crate::diagnose::scan(stdin.lock(), &index),
            )
        }
        Some(p) => {
            let shown = p.display().to_string();
            if p.is_dir() {
                return Err(Error::input(&shown, "is a directory, not a log"));
            }
            let f = std::fs::File::open(p)
                .map_err(|e| Error::input(&shown, format!("cannot read log: {e}")))?;
            let scanned = crate::diagnose::scan(f, &index);
            (shown, scanned)
        }
    };
    let scanned = scanned.map_err(|e| read_error(&shown, e))?;
    if scanned.stats.lines == 0 {
        return Err(Error::input(
            &shown,
            "the log is empty: pass the job's output (`python train.py 2>&1 | envdoctor \
             diagnose -`), or the file it was saved to",
        ));
    }
    let report = finish(scanned, &rules, &a.facts, &shown)?;
    emit(&report, a.facts.format, false)?;
    Ok(exit(&report))
}

fn read_error(shown: &str, e: crate::diagnose::reader::ReadError) -> Error {
    match e {
        crate::diagnose::reader::ReadError::Io(e) => {
            Error::input(shown, format!("cannot read log: {e}"))
        }
        crate::diagnose::reader::ReadError::NotText(m) => Error::input(shown, m),
    }
}

fn finish(
    scan: crate::diagnose::Scan,
    rules: &RuleSet,
    f: &FactArgs,
    shown: &str,
) -> Result<Report, Error> {
    // Facts are only gathered when some rule is a candidate or an event can be explained.
    let (facts, from) = if !scan.needs_facts() {
        (serde_json::Value::Null, "none needed".to_string())
    } else {
        match &f.from {
            Some(path) => {
                let s = path.display().to_string();
                let snap = crate::Snapshot::load(path)?;
                (
                    serde_json::to_value(&snap).unwrap_or_default(),
                    format!("snapshot {s}"),
                )
            }
            None => {
                let mut opts = f.probe.to_options()?;
                if opts.checkpoints.is_empty() {
                    opts.checkpoints = loaded_checkpoints(&scan, &f.probe.root);
                }
                let snap = probe::collect(opts);
                (
                    serde_json::to_value(&snap).unwrap_or_default(),
                    format!("this machine ({})", f.probe.root.display()),
                )
            }
        }
    };
    Ok(crate::diagnose::diagnose(
        scan,
        rules.rules(),
        &facts,
        shown,
        &from,
    ))
}

/// The files the log's traceback loads (`torch.load("/data/model.pt")`) that exist under
/// `root`, as paths on the probed machine: probed as checkpoints instead of asking for
/// `--checkpoint`.
fn loaded_checkpoints(scan: &crate::diagnose::Scan, root: &std::path::Path) -> Vec<PathBuf> {
    scan.log
        .loaded_files()
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| {
            let on_host = root.join(p.strip_prefix("/").unwrap_or(p));
            on_host.exists()
        })
        .take(4)
        .collect()
}

fn emit(report: &Report, format: Format, to_stderr: bool) -> Result<(), Error> {
    let color = if to_stderr {
        false
    } else {
        crate::report::style::stdout_color()
    };
    let text = match format {
        Format::Json => render::json(report),
        Format::Markdown => render::markdown(report),
        // The log's own lines are quoted: no terminal escape of theirs reaches the terminal.
        Format::Text => crate::report::escape::terminal(
            &render::text(report, &Style { color }, &text_layout(to_stderr)),
            color,
        )
        .into_owned(),
    };
    if to_stderr {
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(text.as_bytes());
        let _ = e.flush();
        Ok(())
    } else {
        write_stdout(&text).map_err(|e| Error::other(format!("cannot write to stdout: {e}")))
    }
}

/// The layout of the text report: the terminal's width (`ENVDOCTOR_WIDTH` forces one, `0`
/// never wraps), 80 columns when not a terminal (a log diagnosis is pasted into issues).
fn text_layout(to_stderr: bool) -> crate::report::layout::Layout {
    let forced = std::env::var("ENVDOCTOR_WIDTH")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok());
    let width = match forced {
        Some(0) => None,
        Some(_) => crate::report::layout::stdout_width(),
        None if to_stderr => Some(80),
        None => crate::report::layout::stdout_width().or(Some(80)),
    };
    crate::report::layout::Layout::new(width, None, None)
}

/// A line of `run`'s own on stderr, wrapped as its diagnosis is (continuation lines indented):
/// a long command line does not run past the terminal.
fn say(text: &str) {
    for l in text_layout(true).wrap("", "  ", text) {
        eprintln!("{l}");
    }
}

fn exit(r: &Report) -> Exit {
    let confirmed = r
        .diagnoses
        .first()
        .is_some_and(|d| d.verdict == crate::diagnose::confirm::Verdict::Confirmed);
    Exit::found_if(!confirmed)
}

/// A rule-loading thread that panicked.
fn panicked() -> Result<RuleSet, Error> {
    Err(Error::other("loading the rules failed (a panic)"))
}

/// `envdoctor run -- CMD ARGS…`: exit with CMD's status.
pub fn run_cmd(a: RunArgs) -> Result<Exit, Error> {
    // The rules load while the command runs: the job starts at once, and a signal sent right
    // after `run` starts already finds the supervisor.
    let extra = a.facts.rules.clone();
    let rules = std::thread::spawn(move || RuleSet::for_evaluation(&extra));
    // The user's own rules alone (the shipped pack is known to compile): cheap, so that a
    // broken pack is named after a job that succeeded too, without waiting for the whole set.
    let extra = a.facts.rules.clone();
    let user_rules =
        (!extra.is_empty()).then(|| std::thread::spawn(move || RuleSet::from_paths(&extra)));
    let shown = crate::report::escape::one_line(&a.command.join(" ")).into_owned();
    let outcome = match crate::diagnose::supervise::supervise(&a.command) {
        Ok(o) => o,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            say(&format!(
                "envdoctor run: cannot run `{}`: {e}",
                a.command[0]
            ));
            return Ok(Exit::Passed(code));
        }
    };
    if outcome.status.success() {
        // Nothing to diagnose: the shipped pack is not waited for, the user's rules are.
        if let Some(Err(e)) = user_rules.map(|t| t.join().unwrap_or_else(|_| panicked())) {
            eprintln!(
                "envdoctor run: warning: `{shown}` succeeded, but the rules given with --rules \
                 could not be loaded, so a failure would not have been diagnosed:\n{e}"
            );
        }
        return Ok(Exit::Success);
    }
    let code = outcome.code();
    let signal = std::os::unix::process::ExitStatusExt::signal(&outcome.status);
    // A child ended by a broken pipe has no reader left to tell.
    if signal != Some(libc::SIGPIPE) {
        match rules.join().unwrap_or_else(|_| panicked()) {
            Err(e) => {
                eprintln!();
                say(&format!(
                    "envdoctor run: `{shown}` exited with status {code}; its output was not \
                     diagnosed: the rules could not be loaded:"
                ));
                eprintln!("{e}");
            }
            Ok(rules) => {
                eprintln!();
                say(&format!(
                    "envdoctor run: `{shown}` exited with status {code}; diagnosing its output"
                ));
                eprintln!();
                let index = SymptomIndex::new(rules.rules());
                let result = crate::diagnose::scan(&outcome.captured[..], &index)
                    .map_err(|e| read_error(&shown, e))
                    .and_then(|s| finish(s, &rules, &a.facts, &shown));
                match result {
                    Ok(report) => emit(&report, a.facts.format, true)?,
                    Err(e) => say(&format!("envdoctor run: could not diagnose: {e}")),
                }
            }
        }
    }
    if let Some(sig) = signal {
        crate::diagnose::supervise::reraise(sig);
    }
    Ok(Exit::Passed(code))
}
