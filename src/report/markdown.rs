//! `check` as Markdown, for a pull-request comment or an issue: the verdict as a heading, the
//! summary as a list, a table of findings (one row per rule and subject), details folded.

use super::fixes::fix_of;
use super::inventory::{self, Mark};
use super::verdict::Summary;
use crate::rules::template::display_value;
use crate::rules::Finding;
use crate::Snapshot;

/// A table cell: no pipe or newline breaks the table.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `<`, `>` and `&` escaped for HTML inside Markdown.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The summary as a Markdown list (`- ✓ **Python** …`).
pub fn summary_list(snap: &Snapshot, findings: &[Finding]) -> String {
    let mut out = String::new();
    for l in inventory::lines(snap, findings) {
        let sym = match l.mark {
            Mark::Ok => "✅",
            Mark::Warn => "⚠️",
            Mark::Bad => "❌",
        };
        out.push_str(&format!("- {sym} **{}** {}\n", l.area, md_cell(&l.text)));
    }
    out
}

/// The findings' table and details (empty when there are none).
pub fn findings_section(findings: &[Finding], snap: &Snapshot) -> String {
    let mut out = String::new();
    if findings.is_empty() {
        return out;
    }
    out.push_str("| severity | rule | for | finding |\n|---|---|---|---|\n");
    for f in findings {
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            f.severity.as_str(),
            f.rule,
            md_cell(f.subject.as_deref().unwrap_or("machine")),
            md_cell(&f.message)
        ));
    }
    out.push('\n');
    for f in findings {
        out.push_str(&format!(
            "<details><summary><code>{}</code>: {}</summary>\n\n",
            f.rule,
            html_escape(&f.title)
        ));
        out.push_str(&format!("{}\n\n", f.message));
        if !f.evidence.is_empty() {
            out.push_str("Evidence:\n\n");
            for e in &f.evidence {
                let v = if e.value.is_null() {
                    "(absent)".into()
                } else {
                    display_value(&e.value)
                };
                out.push_str(&format!("- `{}` = `{}`\n", e.path, v.replace('`', "'")));
            }
            out.push('\n');
        }
        let fix = fix_of(f, snap);
        out.push_str(&format!("**Fix:** {}\n\n", fix.text));
        if let Some(c) = &fix.command {
            out.push_str(&format!("```sh\n{c}\n```\n\n"));
        }
        for r in &f.references {
            out.push_str(&format!("- <{r}>\n"));
        }
        out.push_str("\n</details>\n\n");
    }
    out
}

/// Probe problems as a list (empty when there are none).
pub fn probe_problems(snap: &Snapshot) -> String {
    let mut out = String::new();
    if snap.probe_errors.is_empty() {
        return out;
    }
    out.push_str(&format!(
        "### Probe problems ({})\n\n",
        snap.probe_errors.len()
    ));
    for p in &snap.probe_errors {
        match &p.path {
            Some(path) => out.push_str(&format!(
                "- {}: `{path}`: {}\n",
                p.probe,
                md_cell(&p.message)
            )),
            None => out.push_str(&format!("- {}: {}\n", p.probe, md_cell(&p.message))),
        }
    }
    out.push('\n');
    out
}

/// `check --format markdown`.
pub fn render(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    let icon = if summary.incomplete {
        "⚠️ incomplete:"
    } else if summary.failed {
        "❌"
    } else {
        "✅"
    };
    let mut out = format!("## envdoctor check: {icon} {}\n\n", summary.counts());
    out.push_str(&summary_list(snap, findings));
    out.push('\n');
    if findings.is_empty() {
        out.push_str(&format!(
            "Nothing found ({}).\n\n",
            super::verdict::scope(snap)
        ));
    }
    out.push_str(&findings_section(findings, snap));
    out.push_str(&probe_problems(snap));
    out.push_str(&format!("{}\n", summary.line(snap)));
    out
}
