//! `check --format json` (`schema/check.schema.json`): the verdict, the summary lines, the
//! findings with their fix (`fix.text`, `fix.command`) and the snapshot they came from.

use super::fixes::{fix_of, Fix};
use super::inventory::{self, Line};
use super::verdict::Summary;
use crate::rules::{Evidence, Finding, Severity};
use crate::Snapshot;
use serde::Serialize;

/// Version of the `check --format json` format ([`CheckReport::format_version`]): bumped with
/// every change of `schema/check.schema.json` (recorded in `schema/VERSIONS`).
pub const FORMAT_VERSION: u32 = 3;

/// A finding as `check --format json` writes it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct FindingOut<'a> {
    /// The rule's stable id.
    pub rule: &'a str,
    /// error | warning | info.
    pub severity: Severity,
    /// The rule's title.
    pub title: &'a str,
    /// What it was evaluated for (`pythons[/venv/bin/python]`); absent for machine rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<&'a str>,
    /// The message, filled with the facts it matched.
    pub message: &'a str,
    /// The facts that made it fire.
    pub evidence: &'a [Evidence],
    /// What to do, and the command to paste when it is one.
    pub fix: Fix,
    /// URLs.
    pub references: &'a [String],
}

/// The JSON document `check --format json` prints (`schema/check.schema.json`).
#[derive(Serialize, schemars::JsonSchema)]
pub struct CheckReport<'a> {
    /// Version of this format ([`FORMAT_VERSION`]).
    pub format_version: u32,
    /// The envdoctor that wrote it.
    pub envdoctor_version: &'static str,
    /// Counts and verdict.
    pub summary: &'a Summary,
    /// The verdict line, as the text output ends.
    pub verdict: String,
    /// What envdoctor assumed, one line per area (interpreter, frameworks, driver, GPUs,
    /// checkpoints).
    pub inventory: Vec<Line>,
    /// The findings, most severe first.
    pub findings: Vec<FindingOut<'a>>,
    /// The facts they were drawn from.
    pub snapshot: &'a Snapshot,
}

/// The findings with their fixes worked out on `snap`.
pub fn findings_out<'a>(findings: &'a [Finding], snap: &Snapshot) -> Vec<FindingOut<'a>> {
    findings
        .iter()
        .map(|f| FindingOut {
            rule: &f.rule,
            severity: f.severity,
            title: &f.title,
            subject: f.subject.as_deref(),
            message: &f.message,
            evidence: &f.evidence,
            fix: fix_of(f, snap),
            references: &f.references,
        })
        .collect()
}

/// JSON: summary, inventory, findings and snapshot.
pub fn render(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    let report = CheckReport {
        format_version: FORMAT_VERSION,
        envdoctor_version: env!("CARGO_PKG_VERSION"),
        summary,
        verdict: summary.line(snap),
        inventory: inventory::lines(snap, findings),
        findings: findings_out(findings, snap),
        snapshot: snap,
    };
    let mut s = serde_json::to_string_pretty(&report).unwrap_or_else(|e| {
        format!("{{\"error\": \"envdoctor could not serialise the report: {e}\"}}")
    });
    s.push('\n');
    s
}

/// The JSON Schema of `check --format json`, as checked in at `schema/check.schema.json`.
pub fn schema() -> String {
    crate::schema::render_output::<CheckReport<'static>>()
}
