//! Reporters: turning findings, snapshots and drift into text, JSON or Markdown, and `check`'s
//! findings into the formats of CI and fleet tools (SARIF, JUnit, GitHub workflow commands,
//! Prometheus textfile).
//!
//! This module owns the output conventions shared by every command: colour only on a terminal and
//! never under `NO_COLOR`, JSON on stdout alone, and a quiet exit on a closed pipe.

pub mod findings;
pub mod github;
pub mod junit;
pub mod locate;
pub mod prometheus;
pub mod sarif;
pub mod style;

use std::io::{self, Write};

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
