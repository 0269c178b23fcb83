//! `check` as Markdown, for a pull-request comment or an issue: the verdict as a heading, the
//! summary as a list, a table of findings (one row per rule and subject), details folded.

use super::fixes::fix_of;
use super::inventory::{self, Mark};
use super::verdict::Summary;
use crate::rules::template::display_value;
use crate::rules::Finding;
use crate::Snapshot;

use super::escape::{html, md_code, md_fence, md_text};

/// A table cell or inline text: no pipe, newline, HTML, mention or emphasis from a value.
pub fn md_cell(s: &str) -> String {
    md_text(s)
}

/// A finding's message as Markdown: the rule's own rendering, else the message escaped.
pub fn message_md(f: &Finding) -> String {
    if f.message_md.is_empty() {
        md_text(&f.message)
    } else {
        f.message_md.clone()
    }
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
            "| {} | {} | {} | {} |\n",
            f.severity.as_str(),
            md_code(&f.rule),
            md_cell(f.subject.as_deref().unwrap_or("machine")),
            message_md(f)
        ));
    }
    out.push('\n');
    for f in findings {
        out.push_str(&format!(
            "<details><summary><code>{}</code>: {}</summary>\n\n",
            html(&f.rule),
            html(&f.title)
        ));
        out.push_str(&format!("{}\n\n", message_md(f)));
        if !f.evidence.is_empty() {
            out.push_str("Evidence:\n\n");
            for e in &f.evidence {
                let v = if e.value.is_null() {
                    "(absent)".into()
                } else {
                    display_value(&e.value)
                };
                out.push_str(&format!(
                    "- {} = {}\n",
                    md_code(&e.path.to_string()),
                    md_code(&v)
                ));
            }
            out.push('\n');
        }
        let fix = fix_of(f, snap);
        out.push_str(&format!("**Fix:** {}\n\n", md_text(&fix.text)));
        if let Some(c) = &fix.command {
            let fence = md_fence(c);
            out.push_str(&format!("{fence}sh\n{c}\n{fence}\n\n"));
        }
        for r in &f.references {
            out.push_str(&format!("- {}\n", reference(r)));
        }
        out.push_str("\n</details>\n\n");
    }
    out
}

/// A rule's reference: an autolink when it is a plain `http(s)` URL, else text.
fn reference(r: &str) -> String {
    let plain = (r.starts_with("https://") || r.starts_with("http://"))
        && !r
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "<>\"`".contains(c));
    if plain {
        format!("<{r}>")
    } else {
        md_text(r)
    }
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
                "- {}: {}: {}\n",
                md_text(&p.probe),
                md_code(path),
                md_text(&p.message)
            )),
            None => out.push_str(&format!(
                "- {}: {}\n",
                md_text(&p.probe),
                md_text(&p.message)
            )),
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
