//! `check --format junit`: JUnit XML for CI test reports (GitLab, Jenkins, Azure DevOps,
//! CircleCI, GitHub test-reporter actions).
//!
//! One `<testsuite>`; one `<testcase>` per rule evaluated (`classname` `envdoctor.<scope>`, name
//! the rule id). A rule whose findings fail the run (`--fail-on`) has one `<failure>` listing
//! them all (type: the severity); findings below the threshold are listed in the testcase's
//! `<system-out>` and it passes, so the report's verdict is the exit code's. Probe problems go to
//! the suite's `<system-err>`. The shape is the common JUnit XSD's (testsuites > testsuite >
//! properties, testcase, system-out, system-err).
//!
//! The XML is written by hand: it is a fixed, shallow shape, and escaping must also drop the
//! characters XML 1.0 forbids (control characters in a path or a message), which the XML writer
//! crates leave to the caller.

use super::locate::subject_file;
use super::verdict::{FailOn, Summary};
use crate::rules::template::display_value;
use crate::rules::{Finding, Rule};
use crate::Snapshot;

/// Escape an attribute value; characters XML 1.0 cannot carry become U+FFFD.
pub fn escape(s: &str) -> String {
    escape_as(s, true)
}

/// Escape element content (line breaks kept as they are).
pub fn escape_text(s: &str) -> String {
    escape_as(s, false)
}

fn escape_as(s: &str, attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Kept in attributes too (a parser would turn a raw one into a space).
            '\n' if attr => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attr => out.push_str("&#9;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn fail_on_name(f: FailOn) -> &'static str {
    match f {
        FailOn::Error => "error",
        FailOn::Warning => "warning",
        FailOn::Never => "never",
    }
}

/// A finding as the text of a failure or a system-out entry.
fn describe(f: &Finding, snap: &Snapshot) -> String {
    let mut s = format!("[{}] {}\n", f.severity.as_str(), f.title);
    if let Some(subject) = &f.subject {
        s.push_str(&format!("for: {subject}\n"));
        if let Some(file) = subject_file(snap, subject) {
            s.push_str(&format!("file: {file}\n"));
        }
    }
    s.push_str(&format!("{}\n", f.message));
    for e in &f.evidence {
        let v = if e.value.is_null() {
            "(absent)".to_string()
        } else {
            display_value(&e.value)
        };
        s.push_str(&format!("  {} = {v}\n", e.path));
    }
    s.push_str(&format!("fix: {}\n", f.fix));
    for r in &f.references {
        s.push_str(&format!("see: {r}\n"));
    }
    s
}

/// The JUnit report of one `check`: `rules` are those evaluated.
pub fn render(rules: &[Rule], findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    let mut cases = String::new();
    let mut failures = 0;
    for r in rules {
        if testcase(&mut cases, r, findings, summary, snap) {
            failures += 1;
        }
    }
    let tests = rules.len();
    // The XSD's timestamp has no zone designator; collected_at is always UTC.
    let timestamp = snap.collected_at.trim_end_matches('Z');
    let hostname = snap.host.hostname.as_deref().unwrap_or("unknown");
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"envdoctor check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"0\">\n"
    ));
    out.push_str(&format!(
        "  <testsuite name=\"envdoctor check\" package=\"envdoctor\" id=\"0\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"0\" timestamp=\"{}\" hostname=\"{}\">\n",
        escape(timestamp),
        escape(hostname)
    ));
    properties(&mut out, summary, snap);
    out.push_str(&cases);
    out.push_str("    <system-out/>\n");
    system_err(&mut out, snap);
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Push rule `r`'s `<testcase>`: its failing findings as one `<failure>`, those below the
/// threshold in its `<system-out>`. True when it fails.
fn testcase(
    cases: &mut String,
    r: &Rule,
    findings: &[Finding],
    summary: &Summary,
    snap: &Snapshot,
) -> bool {
    let mine: Vec<&Finding> = findings.iter().filter(|f| f.rule == r.id).collect();
    let (failing, below): (Vec<&Finding>, Vec<&Finding>) =
        mine.iter().partition(|f| summary.fail_on.fails(f.severity));
    cases.push_str(&format!(
        "    <testcase classname=\"envdoctor.{}\" name=\"{}\" time=\"0\"",
        escape(r.scope.as_str()),
        escape(&r.id)
    ));
    if failing.is_empty() && below.is_empty() {
        cases.push_str("/>\n");
        return false;
    }
    cases.push_str(">\n");
    let fails = failing.iter().map(|f| f.severity).max();
    if let Some(worst) = fails {
        let message = if failing.len() == 1 {
            format!("{}: {}", r.title, failing[0].message)
        } else {
            format!("{} ({} findings)", r.title, failing.len())
        };
        let text: Vec<String> = failing.iter().map(|f| describe(f, snap)).collect();
        cases.push_str(&format!(
            "      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
            escape(&message),
            worst.as_str(),
            escape_text(&text.join("\n"))
        ));
    }
    if !below.is_empty() {
        let text: Vec<String> = below.iter().map(|f| describe(f, snap)).collect();
        cases.push_str(&format!(
            "      <system-out>{}</system-out>\n",
            escape_text(&text.join("\n"))
        ));
    }
    cases.push_str("    </testcase>\n");
    fails.is_some()
}

/// Push the suite's `<properties>`: envdoctor's version, `--fail-on`, the root probed.
fn properties(out: &mut String, summary: &Summary, snap: &Snapshot) {
    out.push_str("    <properties>\n");
    for (k, v) in [
        ("envdoctor_version", env!("CARGO_PKG_VERSION")),
        ("fail_on", fail_on_name(summary.fail_on)),
        ("root", snap.root.as_str()),
    ] {
        out.push_str(&format!(
            "      <property name=\"{k}\" value=\"{}\"/>\n",
            escape(v)
        ));
    }
    out.push_str("    </properties>\n");
}

/// Push the suite's `<system-err>`: the probe problems, one a line (empty when there are none).
fn system_err(out: &mut String, snap: &Snapshot) {
    if snap.probe_errors.is_empty() {
        out.push_str("    <system-err/>\n");
    } else {
        let lines: Vec<String> = snap
            .probe_errors
            .iter()
            .map(|p| match &p.path {
                Some(path) => format!("{} probe: {path}: {}", p.probe, p.message),
                None => format!("{} probe: {}", p.probe, p.message),
            })
            .collect();
        out.push_str(&format!(
            "    <system-err>{}</system-err>\n",
            escape_text(&lines.join("\n"))
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_what_xml_cannot_carry() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>\n\u{1b}[31m"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;&#10;\u{FFFD}[31m"
        );
        assert_eq!(escape_text("a\nb\r"), "a\nb&#13;");
    }
}
