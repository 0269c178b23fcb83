//! `check --format github`: GitHub Actions workflow commands, one annotation per finding
//! (`::error file=…,title=…::message`), so findings show on the run's summary and, for files in
//! the repository, on the pull request.
//!
//! Severities map to `error`, `warning` and `notice`. Data and properties are escaped as the
//! runner unescapes them (`%` → `%25`, CR → `%0D`, LF → `%0A`, and in properties also `:` →
//! `%3A`, `,` → `%2C`), so a finding's text can never start a command of its own. Probe
//! problems are warnings; the last line is the verdict as plain log text.

use super::locate::subject_file;
use super::verdict::Summary;
use crate::rules::{Finding, Severity};
use crate::Snapshot;

/// The workflow command for a severity.
pub fn command(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    }
}

/// Escape a command's message (the part after `::`).
pub fn escape_data(s: &str) -> String {
    super::escape::gh_data(s)
}

/// Escape a property value (`file=`, `title=`).
pub fn escape_property(s: &str) -> String {
    super::escape::gh_property(s)
}

/// One `::cmd k=v,k=v::data` line.
fn line(cmd: &str, props: &[(&str, &str)], data: &str) -> String {
    let props: Vec<String> = props
        .iter()
        .map(|(k, v)| format!("{k}={}", escape_property(v)))
        .collect();
    let sep = if props.is_empty() { "" } else { " " };
    format!("::{cmd}{sep}{}::{}\n", props.join(","), escape_data(data))
}

/// The annotations of one `check`, then its verdict.
pub fn render(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    let mut out = String::new();
    for f in findings {
        let title = format!("{}: {}", f.rule, f.title);
        let file = f.subject.as_deref().and_then(|s| subject_file(snap, s));
        let mut body = f.message.clone();
        if let Some(s) = &f.subject {
            body.push_str(&format!("\nfor: {s}"));
        }
        body.push_str(&format!("\nfix: {}", f.fix));
        for r in &f.references {
            body.push_str(&format!("\nsee: {r}"));
        }
        let mut props = Vec::new();
        if let Some(file) = &file {
            props.push(("file", file.as_str()));
        }
        props.push(("title", title.as_str()));
        out.push_str(&line(command(f.severity), &props, &body));
    }
    for p in &snap.probe_errors {
        let title = format!("envdoctor could not read: {} probe", p.probe);
        let mut props = Vec::new();
        if let Some(path) = &p.path {
            props.push(("file", path.as_str()));
        }
        props.push(("title", title.as_str()));
        out.push_str(&line("warning", &props, &p.message));
    }
    out.push_str(&format!(
        "envdoctor: {} {} ({})\n",
        if summary.failed { "FAIL:" } else { "OK:" },
        summary.counts(),
        crate::plural::plural(summary.probe_errors, "probe problem")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_the_runner_unescapes() {
        assert_eq!(escape_data("50% a\r\nb: c, d"), "50%25 a%0D%0Ab: c, d");
        assert_eq!(
            escape_property("50% a\r\nb: c, d"),
            "50%25 a%0D%0Ab%3A c%2C d"
        );
        // `%` first, so an escape already in the text is not undone by the runner.
        assert_eq!(escape_property("%3A"), "%253A");
    }

    #[test]
    fn a_line_with_and_without_properties() {
        assert_eq!(
            line("error", &[("file", "/a,b"), ("title", "t:1")], "x\ny"),
            "::error file=/a%2Cb,title=t%3A1::x%0Ay\n"
        );
        assert_eq!(line("notice", &[], "hi"), "::notice::hi\n");
    }
}
