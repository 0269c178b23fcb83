//! The `compare` subcommand's arguments and run: read the files, compare, print, exit code.

use super::{compare, load_all, CompareOptions, Section, Verdict, VerdictFn};
use crate::report::{style, write_stdout, Format};
use crate::rules::RuleSet;
use crate::Error;
use clap::Args;
use std::path::PathBuf;

/// `envdoctor compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Snapshot files (JSON from `envdoctor snapshot`): two for A against B, three or more for a
    /// fleet.
    #[arg(value_name = "SNAPSHOT", num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also compare volatile facts (collected_at, live GPU and host state, pids) and machine
    /// identity (hostname, GPU UUIDs and PCI ids, envdoctor version, probe root).
    #[arg(long)]
    pub all: bool,
    /// Compare only these sections (repeatable or comma-separated).
    #[arg(long, value_enum, value_name = "SECTION", value_delimiter = ',')]
    pub only: Vec<Section>,
    /// Also evaluate the rules in this directory or file (repeatable), as `check --rules` does.
    #[arg(long = "rules", value_name = "DIR")]
    pub rules: Vec<PathBuf>,
    /// Do not evaluate rules: compare facts only.
    #[arg(long)]
    pub no_rules: bool,
}

/// Run `envdoctor compare`; returns 0 (no drift) or 1 (drift). `-q`/`-v` (global) set how
/// much of the text is printed.
pub fn run(
    args: CompareArgs,
    detail: crate::report::compare::Detail,
) -> Result<crate::exit::Exit, Error> {
    // The rule pack compiles while the snapshots are read.
    let (snaps, rules) = std::thread::scope(|scope| {
        let rules = (!args.no_rules).then(|| scope.spawn(|| RuleSet::shipped_with(&args.rules)));
        let snaps = load_all(&args.files);
        let rules = rules.map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(Error::other("loading the rules failed unexpectedly")))
        });
        (snaps, rules)
    });
    let snaps = snaps?;
    let rules = rules.transpose()?;
    if args.files.len() == 2 {
        let same = match (
            std::fs::canonicalize(&args.files[0]),
            std::fs::canonicalize(&args.files[1]),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            eprintln!(
                "envdoctor: note: {} and {} are the same file: no drift",
                args.files[0].display(),
                args.files[1].display()
            );
        }
    }
    let opts = CompareOptions {
        all: args.all,
        only: args.only,
    };
    // Drift that changes a rule's verdict ranks first: the shipped pack (and --rules) runs on
    // each snapshot.
    let verdicts = |s: &crate::Snapshot| -> Vec<Verdict> {
        rules
            .as_ref()
            .map(|r| {
                r.check(s)
                    .into_iter()
                    .map(|f| Verdict {
                        rule_id: f.rule,
                        severity: f.severity.as_str().to_string(),
                        title: f.title,
                        message: f.message,
                        subject: f.subject,
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let report = compare(
        &snaps,
        &opts,
        rules.as_ref().map(|_| &verdicts as &VerdictFn),
    )?;
    let text = match args.format {
        Format::Json => crate::report::compare::render_json(&report),
        Format::Markdown => crate::report::compare::render_markdown(&report),
        Format::Text => {
            crate::report::compare::render_text_at(&report, style::stdout_color(), detail)
        }
    };
    write_stdout(&text).map_err(|e| Error::other(format!("cannot write to stdout: {e}")))?;
    let code = report.exit();
    // The process exits next: freeing tens of MB of snapshots piece by piece would be a
    // tenth of the run time for a 20,000-distribution pair, for nothing.
    std::mem::forget(snaps);
    std::mem::forget(report);
    Ok(code)
}
