//! The diagnose report as text (the top diagnosis in full, runners-up one line each, the matched
//! log lines), Markdown, and JSON.

use super::layout::Layout;
use super::style::Style;
use crate::diagnose::confirm::Verdict;
use crate::diagnose::{Diagnosis, MatchedLine, Report};

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

/// Lines of `text` after `first`, continued under `rest`, at the layout's width.
fn para(s: &mut String, lay: &Layout, first: &str, rest: &str, text: &str) {
    for l in lay.wrap(first, rest, text) {
        s.push_str(&l);
        s.push('\n');
    }
}

/// For a person, wrapped like `check` (`lay`'s width; never inside a word or a path).
pub fn text(r: &Report, st: &Style, lay: &Layout) -> String {
    let mut s = String::new();
    para(&mut s, lay, "", "  ", headline(r).trim_end());
    for n in &r.notes {
        para(&mut s, lay, "note: ", "      ", n);
    }
    s.push('\n');
    let Some(top) = r.diagnoses.first() else {
        s.push_str("No known failure matches this log.\n");
        explanations(&mut s, r, lay);
        if !r.nearest.is_empty() {
            s.push_str("Nearest rules by text (see `envdoctor explain ID`):\n");
            for n in &r.nearest {
                let t = format!("{}  {} ({:.2})", n.rule, n.title, n.similarity);
                para(&mut s, lay, "  ", "    ", &t);
            }
        }
        return s;
    };
    if top.verdict == Verdict::RuledOut {
        para(
            &mut s,
            lay,
            "",
            "",
            "Every candidate is ruled out by these facts. If the job ran on another machine, \
             diagnose with --from a snapshot taken there.",
        );
        s.push('\n');
    }
    top_diagnosis(&mut s, top, st, lay);
    if r.diagnoses.len() > 1 {
        s.push_str("\nOther candidates:\n");
        for d in &r.diagnoses[1..] {
            para(&mut s, lay, "  ", "      ", &one_line(d));
        }
    }
    explanations(&mut s, r, lay);
    s
}

fn top_diagnosis(s: &mut String, top: &Diagnosis, st: &Style, lay: &Layout) {
    let tag = match top.verdict {
        Verdict::Confirmed => st.error(label(top.verdict)),
        Verdict::Plausible => st.warning(label(top.verdict)),
        Verdict::RuledOut => st.dim(label(top.verdict)),
    };
    // The tag and the id are never split; colour codes do not count towards the width.
    let head = format!("{}  {}  ", label(top.verdict), top.rule);
    let indent = " ".repeat(head.chars().count().min(20));
    let lines = lay.wrap(&head, &indent, &top.title);
    for (i, l) in lines.iter().enumerate() {
        if i == 0 {
            let rest = l.strip_prefix(&head).unwrap_or(l);
            s.push_str(&format!("{tag}  {}  {rest}\n", st.bold(&top.rule)));
        } else {
            s.push_str(l);
            s.push('\n');
        }
    }
    if let Some(subj) = &top.subject {
        para(s, lay, "  for ", "      ", subj);
    }
    para(s, lay, "  ", "  ", &top.message);
    if !top.evidence.is_empty() {
        s.push_str("  evidence:\n");
        for e in top.evidence.iter().take(8) {
            para(
                s,
                lay,
                "    ",
                "      ",
                &format!("{} = {}", e.path, value(&e.value)),
            );
        }
    }
    for m in &top.missing_facts {
        para(
            s,
            lay,
            "  missing fact: ",
            "    ",
            &format!("{} ({})", m.fact, m.how),
        );
    }
    para(s, lay, "  fix: ", "    ", top.fix.trim());
    if let Some(r) = top.references.first() {
        para(s, lay, "  see: ", "    ", r);
    }
    s.push_str("  matched log lines:\n");
    for l in &top.matched_lines {
        let first = format!("    {:>6}: ", l.line);
        para(s, lay, &first, "            ", &clip(&l.text, 300));
    }
}

/// What the facts say about the events no candidate explains.
fn explanations(s: &mut String, r: &Report, lay: &Layout) {
    if r.explanations.is_empty() {
        return;
    }
    s.push_str("\nWhat the facts say about the other errors in the log:\n");
    for x in &r.explanations {
        let first = format!("  line {} ({}): ", x.line, x.kind);
        para(s, lay, &first, "    ", &x.summary);
    }
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
        clip(&why, 300)
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

/// The log's own lines as a fenced block that no line of theirs can close.
fn excerpt_md(matched: &[MatchedLine]) -> String {
    use crate::report::escape::{md_fence, one_line};
    let lines: Vec<String> = matched
        .iter()
        .map(|l| format!("{:>6}: {}", l.line, one_line(&clip(&l.text, 300))))
        .collect();
    let fence = md_fence(&lines.join("\n"));
    format!("{fence}\n{}\n{fence}\n", lines.join("\n"))
}

/// For an issue or a pull request.
pub fn markdown(r: &Report) -> String {
    use crate::report::escape::{md_code, md_text};
    let mut s = format!("## envdoctor diagnose: {}\n\n", md_code(&r.source));
    s.push_str(&format!(
        "{} lines; facts from {}.\n\n",
        r.lines_read,
        md_text(&r.facts_from)
    ));
    for n in &r.notes {
        s.push_str(&format!("> note: {}\n\n", md_text(n)));
    }
    for x in &r.explanations {
        s.push_str(&format!(
            "- line {} ({}): {}\n",
            x.line,
            md_code(&x.kind),
            md_text(&x.summary)
        ));
    }
    if !r.explanations.is_empty() {
        s.push('\n');
    }
    if r.diagnoses.is_empty() {
        s.push_str("No known failure matches this log.\n\n");
        for n in &r.nearest {
            s.push_str(&format!(
                "- nearest: {} {} ({:.2})\n",
                md_code(&n.rule),
                md_text(&n.title),
                n.similarity
            ));
        }
        return s;
    }
    let top = &r.diagnoses[0];
    s.push_str(&format!(
        "### {}: {} {}\n\n{}\n\n",
        label(top.verdict),
        md_code(&top.rule),
        md_text(&top.title),
        md_text(&top.message)
    ));
    if !top.evidence.is_empty() {
        s.push_str("| fact | value |\n|---|---|\n");
        for e in &top.evidence {
            s.push_str(&format!(
                "| {} | {} |\n",
                md_code(&e.path),
                md_code(&value(&e.value))
            ));
        }
        s.push('\n');
    }
    for m in &top.missing_facts {
        s.push_str(&format!(
            "- missing fact {}: {}\n",
            md_code(&m.fact),
            md_text(&m.how)
        ));
    }
    s.push_str(&format!("**Fix:** {}\n\n", md_text(top.fix.trim())));
    s.push_str(&excerpt_md(&top.matched_lines));
    if r.diagnoses.len() > 1 {
        s.push_str("\n| verdict | rule | why |\n|---|---|---|\n");
        for d in &r.diagnoses[1..] {
            s.push_str(&format!(
                "| {} | {} | {} |\n",
                d.verdict.as_str(),
                md_code(&d.rule),
                md_text(&clip(&d.message, 200))
            ));
        }
    }
    s
}
