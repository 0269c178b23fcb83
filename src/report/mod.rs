//! Reporters: turning findings, snapshots and drift into text, JSON or Markdown, and `check`'s
//! findings into the formats of CI and fleet tools (SARIF, JUnit, GitHub workflow commands,
//! Prometheus textfile: [`sarif`], [`junit`], [`github`], [`prometheus`], [`locate`]).
//!
//! This module owns the output conventions shared by every command: colour only on a terminal and
//! never under `NO_COLOR`, JSON on stdout alone, a quiet exit on a closed pipe, text wrapped to the
//! terminal ([`layout`]) with one mark per line (`✓ ! ✗`). One module per part: the verdict
//! ([`verdict`]), the summary of what envdoctor assumed ([`inventory`]), fixes to paste
//! ([`fixes`]), `check` as text, JSON and Markdown ([`text`], [`json`], [`markdown`]),
//! checkpoints in one line ([`checkpoints`]), `compare` ([`compare`]),
//! `rules list` ([`rules`]), `explain ID` ([`explain`]), `diagnose` ([`diagnose`]), the bug-report document ([`envreport`]) and the progress line on
//! stderr ([`progress`]).

pub mod checkpoints;
pub mod compare;
pub mod diagnose;
pub mod envreport;
pub mod escape;
pub mod explain;
pub mod fixes;
pub mod fleet_matrix;
pub mod github;
pub mod inventory;
pub mod json;
pub mod junit;
pub mod layout;
pub mod locate;
pub mod markdown;
pub mod progress;
pub mod prometheus;
pub mod rules;
pub mod sarif;
pub mod style;
pub mod text;
pub mod verdict;

use crate::rules::Finding;
use crate::Snapshot;
use std::fmt;
use std::io::{self, Write};

/// What a reporter of `check` reads: the findings, their verdict and the facts, and for text the
/// style, the layout and how much to show. Built once by `cli` and handed down whole, instead of
/// the same values passed through each function.
pub struct Context<'a> {
    /// The findings, in the order shown.
    pub findings: &'a [Finding],
    /// Their verdict.
    pub summary: &'a verdict::Summary,
    /// The facts the rules read.
    pub snap: &'a Snapshot,
    /// Colour or not.
    pub st: style::Style,
    /// The width to wrap to and the paths to shorten.
    pub lay: layout::Layout,
    /// How much of the text to show (`-v`, `--all`).
    pub detail: text::Detail,
}

/// The text that `write` writes with `fmt::Write` (`writeln!(o, ..)?`): the one writing style of
/// the reporters. A `String` never refuses a write, so the `fmt::Result` ends here.
pub fn written(write: impl FnOnce(&mut String) -> fmt::Result) -> String {
    let mut o = String::new();
    match write(&mut o) {
        Ok(()) | Err(fmt::Error) => o,
    }
}

/// Output formats shared by `check` and `compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For a person, aligned, coloured on a terminal.
    Text,
    /// Machine-readable JSON, alone on stdout.
    Json,
    /// Markdown, for a pull-request comment or an issue.
    Markdown,
}

/// Write `text` to stdout. A closed pipe (`envdoctor check | head`) is not an error.
pub fn write_stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
