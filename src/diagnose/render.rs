//! The diagnose report as text (the top diagnosis in full, runners-up one line each, the matched
//! log lines), Markdown, and JSON.

use super::confirm::Verdict;
use super::{Diagnosis, Report};
use crate::report::style::Style;

/// Pretty JSON with a trailing newline.
pub fn json(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_default();
    s.push('\n');
    s
}

fn label(v: Verdict) -> &'static str {
    match v {
        Verdict::Confirmed => "CONFIRMED",
        Verdict::Plausible => "PLAUSIBLE",
        Verdict::RuledOut => "RULED OUT",
    }
}

fn headline(r: &Report) -> String {
    format!(
        "envdoctor diagnose: {} ({} lines; facts from {})\n",
        r.source, r.lines_read, r.facts_from
    )
}

/// For a person.
pub fn text(r: &Report, st: &Style) -> String {
    let mut s = headline(r);
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push('\n');
    let Some(top) = r.diagnoses.first() else {
        s.push_str("No known failure matches this log.\n");
        if !r.nearest.is_empty() {
            s.push_str("Nearest rules by text (see `envdoctor explain ID`):\n");
            for n in &r.nearest {
                s.push_str(&format!(
                    "  {}  {} ({:.2})\n",
                    n.rule, n.title, n.similarity
                ));
            }
        }
        return s;
    };
    if top.verdict == Verdict::RuledOut {
        s.push_str(
            "Every candidate is ruled out by these facts. If the job ran on another machine, \
             diagnose with --from a snapshot taken there.\n\n",
        );
    }
    let tag = match top.verdict {
        Verdict::Confirmed => st.error(label(top.verdict)),
        Verdict::Plausible => st.warning(label(top.verdict)),
        Verdict::RuledOut => st.dim(label(top.verdict)),
    };
    s.push_str(&format!("{tag}  {}  {}\n", st.bold(&top.rule), top.title));
    if let Some(subj) = &top.subject {
        s.push_str(&format!("  for {subj}\n"));
    }
    s.push_str(&format!("  {}\n", top.message));
    if !top.evidence.is_empty() {
        s.push_str("  evidence:\n");
        for e in top.evidence.iter().take(8) {
            s.push_str(&format!("    {} = {}\n", e.path, value(&e.value)));
        }
    }
    for m in &top.missing_facts {
        s.push_str(&format!("  missing fact: {} ({})\n", m.fact, m.how));
    }
    s.push_str(&format!("  fix: {}\n", top.fix.trim()));
    if let Some(r) = top.references.first() {
        s.push_str(&format!("  see: {r}\n"));
    }
    s.push_str("  matched log lines:\n");
    for l in &top.matched_lines {
        s.push_str(&format!("    {:>6}: {}\n", l.line, clip(&l.text, 160)));
    }
    if r.diagnoses.len() > 1 {
        s.push_str("\nOther candidates:\n");
        for d in &r.diagnoses[1..] {
            s.push_str(&format!("  {}\n", one_line(d)));
        }
    }
    s
}

fn one_line(d: &Diagnosis) -> String {
    let why = match d.verdict {
        Verdict::Plausible if !d.missing_facts.is_empty() => format!(
            "missing: {}",
            d.missing_facts
                .iter()
                .map(|m| m.fact.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => d.message.clone(),
    };
    format!(
        "{:<9}  {}  (line {}): {}",
        label(d.verdict).to_lowercase(),
        d.rule,
        d.matched_lines.last().map(|l| l.line).unwrap_or(0),
        clip(&why, 160)
    )
}

fn value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

/// For an issue or a pull request.
pub fn markdown(r: &Report) -> String {
    let mut s = format!("## envdoctor diagnose: `{}`\n\n", r.source);
    s.push_str(&format!(
        "{} lines; facts from {}.\n\n",
        r.lines_read, r.facts_from
    ));
    for n in &r.notes {
        s.push_str(&format!("> note: {n}\n\n"));
    }
    if r.diagnoses.is_empty() {
        s.push_str("No known failure matches this log.\n\n");
        for n in &r.nearest {
            s.push_str(&format!(
                "- nearest: `{}` {} ({:.2})\n",
                n.rule, n.title, n.similarity
            ));
        }
        return s;
    }
    let top = &r.diagnoses[0];
    s.push_str(&format!(
        "### {}: `{}` {}\n\n{}\n\n",
        label(top.verdict),
        top.rule,
        top.title,
        top.message
    ));
    if !top.evidence.is_empty() {
        s.push_str("| fact | value |\n|---|---|\n");
        for e in &top.evidence {
            s.push_str(&format!(
                "| `{}` | `{}` |\n",
                e.path.replace('|', "\\|"),
                value(&e.value).replace('|', "\\|")
            ));
        }
        s.push('\n');
    }
    for m in &top.missing_facts {
        s.push_str(&format!("- missing fact `{}`: {}\n", m.fact, m.how));
    }
    s.push_str(&format!("**Fix:** {}\n\n", top.fix.trim()));
    s.push_str("```\n");
    for l in &top.matched_lines {
        s.push_str(&format!("{:>6}: {}\n", l.line, clip(&l.text, 300)));
    }
    s.push_str("```\n");
    if r.diagnoses.len() > 1 {
        s.push_str("\n| verdict | rule | why |\n|---|---|---|\n");
        for d in &r.diagnoses[1..] {
            s.push_str(&format!(
                "| {} | `{}` | {} |\n",
                d.verdict.as_str(),
                d.rule,
                clip(&d.message, 200).replace('|', "\\|")
            ));
        }
    }
    s
}
