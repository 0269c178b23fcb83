//! The `compare` subcommand's arguments and run: read the files, compare, print, exit code.

use crate::compare::{compare, load_all, CompareOptions, Section, Verdict, VerdictFn};
use crate::report::{style, write_stdout, Format};
use crate::rules::RuleSet;
use crate::Error;
use clap::Args;
use std::path::PathBuf;

/// `envdoctor compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Snapshot files (JSON from `envdoctor snapshot`): two for A against B, three or more for a
    /// fleet. One of two may be a lock file (`uv.lock`, `pylock.toml`, `poetry.lock`,
    /// `pdm.lock`, `Pipfile.lock`, `requirements*.txt`, `pixi.lock`, `conda-lock.yml`,
    /// `environment.yml`): the snapshot's job interpreter is compared with what it locks.
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
    /// Seconds one rule may spend on one snapshot before it is stopped (as `check`'s).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub rule_budget: f64,
    /// Seconds all rules together may take on all the snapshots.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub deadline: f64,
}

/// Every snapshot's verdicts under the rule budget and the deadline. A rule stopped on any
/// snapshot is left out on all of them (a verdict it did not reach is unknown, not fixed), and
/// named on stderr.
fn all_verdicts(
    rules: &RuleSet,
    snaps: &[(String, crate::Snapshot)],
    args: &CompareArgs,
) -> Result<Vec<Vec<Verdict>>, Error> {
    let secs = |v: f64, flag: &str| {
        if v.is_finite() && v > 0.0 && v <= 3600.0 {
            Ok(std::time::Duration::from_secs_f64(v))
        } else {
            Err(Error::input(
                flag,
                format!("{v} is not a number of seconds between 0 and 3600"),
            ))
        }
    };
    let limits = crate::rules::EvalLimits {
        per_rule: secs(args.rule_budget, "--rule-budget")?,
        until: Some(std::time::Instant::now() + secs(args.deadline, "--deadline")?),
    };
    let mut cut = std::collections::BTreeSet::new();
    let mut all = Vec::new();
    for (_, s) in snaps {
        let (found, stopped, ids) = rules.check_limited(s, limits);
        for m in stopped {
            eprintln!("envdoctor: compare: {m}");
        }
        cut.extend(ids);
        all.push(found);
    }
    Ok(all
        .into_iter()
        .map(|found| {
            found
                .into_iter()
                .filter(|f| !cut.contains(&f.rule))
                .map(|f| Verdict {
                    rule_id: f.rule,
                    severity: f.severity.as_str().to_string(),
                    title: f.title,
                    message: f.message,
                    subject: f.subject,
                })
                .collect()
        })
        .collect())
}

/// The snapshots to compare: the files, or for `LOCK SNAPSHOT` (either order) the snapshot as
/// the lock would have it and the snapshot.
fn load_inputs(files: &[PathBuf]) -> Result<Vec<(String, crate::Snapshot)>, Error> {
    let locks: Vec<bool> = files
        .iter()
        .map(|f| crate::compare::lock::is_lock(f))
        .collect();
    match (files.len(), locks.iter().filter(|l| **l).count()) {
        (_, 0) => load_all(files),
        (2, 1) => {
            let (li, si) = if locks[0] { (0, 1) } else { (1, 0) };
            let snap = crate::compare::load(&files[si])?;
            let locked = crate::compare::lock::as_locked(&files[li], &snap)?;
            let mut out = vec![
                (files[si].display().to_string(), snap),
                (files[li].display().to_string(), locked),
            ];
            if li == 0 {
                out.reverse();
            }
            Ok(out)
        }
        _ => Err(Error::input(
            "compare",
            "a lock file is compared with one snapshot: `envdoctor compare LOCK SNAPSHOT`",
        )),
    }
}

/// Run `envdoctor compare`; returns 0 (no drift) or 1 (drift). `-q`/`-v` (global) set how
/// much of the text is printed.
pub fn run(
    args: CompareArgs,
    detail: crate::report::compare::Detail,
) -> Result<crate::exit::Exit, Error> {
    // The rule pack compiles while the snapshots are read.
    let (snaps, rules) = std::thread::scope(|scope| {
        let rules = (!args.no_rules).then(|| scope.spawn(|| RuleSet::for_evaluation(&args.rules)));
        let snaps = load_inputs(&args.files);
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
        only: args.only.clone(),
    };
    // Drift that changes a rule's verdict ranks first: the shipped pack (and --rules) runs on
    // each snapshot, under check's limits: each rule its budget, all of them one deadline.
    let verdicts = rules
        .as_ref()
        .map(|r| all_verdicts(r, &snaps, &args))
        .transpose()?
        .unwrap_or_default();
    let verdicts = |s: &crate::Snapshot| -> Vec<Verdict> {
        snaps
            .iter()
            .position(|(_, x)| std::ptr::eq(x, s))
            .and_then(|i| verdicts.get(i).cloned())
            .unwrap_or_default()
    };
    let report = compare(
        &snaps,
        &opts,
        rules.as_ref().map(|_| &verdicts as &VerdictFn),
    )?;
    // For people: every value from the snapshots on one line, no control characters.
    let shown = crate::report::escape::one_line_all;
    let text = match args.format {
        Format::Json => crate::report::compare::render_json(&report),
        Format::Markdown => crate::report::compare::render_markdown(&shown(&report)),
        Format::Text => {
            let color = style::stdout_color();
            let t = crate::report::compare::render_text_at(&shown(&report), color, detail);
            crate::report::escape::terminal(&t, color).into_owned()
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
