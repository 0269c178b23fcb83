//! `check` as text for a person: the summary first, then the findings grouped by severity and by
//! rule (a rule that fires 20 times is one entry, first 3 shown), probe problems not already
//! shown by a finding, and the verdict line last. Wrapped to the terminal (never when piped),
//! paths in full once and shortened after.

use super::fixes::fix_of;
use super::inventory::{self, Mark};
use super::layout::{elide_middle, Layout};
use super::style::Style;
use super::Context;
use crate::rules::template::display_value;
use crate::rules::{Finding, Severity};
use std::fmt::{self, Write as _};

/// How much to show.
#[derive(Clone, Copy, Debug, Default)]
pub struct Detail {
    /// Expand the summary (every interpreter, library, process, checkpoint).
    pub verbose: bool,
    /// Every finding of a repeated rule.
    pub all: bool,
}

/// Findings of one rule shown before "… N more".
pub const GROUP_SHOWN: usize = 3;

fn mark_text(st: &Style, m: Mark) -> String {
    match m {
        Mark::Ok => st.good(m.symbol()),
        Mark::Warn => st.warning(m.symbol()),
        Mark::Bad => st.error(m.symbol()),
    }
}

/// Push `text` wrapped after `first_plain` (shown as `first`, which may be coloured), following
/// lines at `indent` columns.
fn push(
    out: &mut String,
    lay: &Layout,
    first_plain: &str,
    first: &str,
    indent: usize,
    text: &str,
) -> fmt::Result {
    let rest = " ".repeat(indent);
    let lines = lay.wrap(first_plain, &rest, text);
    for (i, l) in lines.iter().enumerate() {
        if i == 0 {
            writeln!(out, "{first}{}", &l[first_plain.len().min(l.len())..])?;
        } else {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}

/// Write the summary block.
pub fn summary_block(out: &mut String, cx: &Context) -> fmt::Result {
    let (lay, st) = (&cx.lay, &cx.st);
    let lines = inventory::lines(cx.snap, cx.findings);
    let w = lines
        .iter()
        .map(|l| l.area.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(7, 12);
    writeln!(out, "{}", st.bold("Summary"))?;
    if let Some(p) = lay.project() {
        let p = lay.path(p);
        let w = w.max(7);
        push(
            out,
            lay,
            &format!("    {:<w$}  ", "Project"),
            &format!("    {:<w$}  ", "Project"),
            w + 6,
            &p,
        )?;
    }
    for l in &lines {
        let pad = w.saturating_sub(l.area.chars().count());
        let first = format!(
            "  {} {}{}  ",
            mark_text(st, l.mark),
            l.area,
            " ".repeat(pad)
        );
        // The mark is one column wide but more than one byte: wrap on a same-width stand-in.
        let stand_in = format!("  * {}{}  ", l.area, " ".repeat(pad));
        let indent = stand_in.chars().count();
        let text = lay.paths_in(&l.text);
        let wrapped = lay.wrap(&stand_in, &" ".repeat(indent), &text);
        for (i, line) in wrapped.iter().enumerate() {
            if i == 0 {
                writeln!(out, "{first}{}", line.get(stand_in.len()..).unwrap_or(""))?;
            } else {
                writeln!(out, "{line}")?;
            }
        }
        if cx.detail.verbose {
            for x in &l.detail {
                push(
                    out,
                    lay,
                    &" ".repeat(indent),
                    &" ".repeat(indent),
                    indent + 2,
                    &lay.paths_in(x),
                )?;
            }
        }
    }
    Ok(())
}

/// `check -v`'s section: each rule that fired, for each subject it fired for, the facts it read
/// (values cut at 120 characters; no absent facts, no whole records), wrapped like the
/// findings: a long fact path breaks after a `].`.
pub fn looked_at(
    all: &[(
        &crate::rules::Rule,
        Option<String>,
        Vec<crate::rules::eval::Evidence>,
    )],
    rules: usize,
    cx: &Context,
) -> String {
    super::written(|s| {
        let (lay, st) = (&cx.lay, &cx.st);
        let mut fired: Vec<&str> = all.iter().map(|(r, _, _)| r.id.as_str()).collect();
        fired.dedup();
        let head = format!(
            "Facts looked at by the rules that fired ({} of {rules} rules)",
            fired.len()
        );
        writeln!(s, "{}", st.bold(&head))?;
        let room = lay
            .width
            .map_or(usize::MAX, |w| w.saturating_sub(6).max(20));
        for (rule, subject, facts) in all {
            let head = match subject {
                Some(subject) => format!("{} for {}", rule.id, lay.paths_in(subject)),
                None => rule.id.clone(),
            };
            for l in lay.wrap("  ", "    ", &head) {
                writeln!(s, "{l}")?;
            }
            for f in facts.iter().filter(|f| shown_evidence(&f.value)) {
                let v = elide_middle(&display_value(&f.value), 120);
                let label = lay.paths_in(&f.path);
                let text = format!("{} = {v}", label_lines(&label, room).join(" "));
                for l in lay.wrap("    ", "      ", &text) {
                    writeln!(s, "{l}")?;
                }
            }
        }
        writeln!(s)
    })
}

/// `label` cut after `].` so that each piece fits `room` columns (a piece with no such place
/// stays whole).
fn label_lines(label: &str, room: usize) -> Vec<String> {
    if label.chars().count() <= room {
        return vec![label.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for piece in label.split_inclusive("].") {
        if !cur.is_empty() && cur.chars().count() + piece.chars().count() > room {
            out.push(std::mem::take(&mut cur));
        }
        cur.push_str(piece);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn severity_word(st: &Style, s: Severity) -> String {
    match s {
        Severity::Error => st.error("✗ error"),
        Severity::Warning => st.warning("! warning"),
        Severity::Info => st.info("i info"),
    }
}

fn severity_plain(s: Severity) -> &'static str {
    match s {
        Severity::Error => "✗ error",
        Severity::Warning => "! warning",
        Severity::Info => "i info",
    }
}

fn one_finding(out: &mut String, f: &Finding, cx: &Context, with_fix: bool) -> fmt::Result {
    let (lay, st) = (&cx.lay, &cx.st);
    if let Some(s) = &f.subject {
        push(
            out,
            lay,
            "  for: ",
            &format!("  {} ", st.dim("for:")),
            4,
            &lay.paths_in(s),
        )?;
    }
    push(out, lay, "  ", "  ", 2, &lay.paths_in(&f.message))?;
    evidence_lines(out, f, cx)?;
    if with_fix {
        fix_lines(out, f, cx)?;
    }
    Ok(())
}

/// Whether an evidence value is worth a line: not a fact that is absent (`(absent)` filler), not
/// a whole record or a list of records (its JSON would be cut mid-way; the facts inside it that
/// made the rule fire are lines of their own).
fn shown_evidence(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null | serde_json::Value::Object(_) => false,
        serde_json::Value::Array(items) => !items.iter().any(|i| i.is_object() || i.is_array()),
        _ => true,
    }
}

/// The evidence: one line per fact that matters, `path = value`. A line too long for the width
/// breaks after the `=`, never inside the fact's path (only a path that is itself wider than
/// the line is broken, after a `].`).
fn evidence_lines(out: &mut String, f: &Finding, cx: &Context) -> fmt::Result {
    let (lay, st) = (&cx.lay, &cx.st);
    let mut shown: Vec<_> = f
        .evidence
        .iter()
        .filter(|e| shown_evidence(&e.value))
        .collect();
    if shown.is_empty() {
        // The absence is all the rule saw (a requirement not installed): that fact, once.
        shown.extend(f.evidence.iter().filter(|e| e.value.is_null()).take(1));
    }
    if shown.is_empty() {
        return Ok(());
    }
    writeln!(out, "  {}", st.dim("evidence:"))?;
    let max = lay.width.map_or(160, |w| w.saturating_sub(8).max(40));
    for e in shown.iter().take(12) {
        let label = lay.paths_in(&e.path);
        let value = if e.value.is_null() {
            "not present".to_string()
        } else {
            elide_middle(&lay.paths_in(&display_value(&e.value)), max * 2)
        };
        let whole = format!("{label} = {value}");
        let Some(width) = lay.width else {
            writeln!(out, "    {whole}")?;
            continue;
        };
        if whole.chars().count() + 4 <= width {
            writeln!(out, "    {whole}")?;
            continue;
        }
        // The path on its line(s) (broken after a `].` only when wider than the line, its
        // continuation indented), then `= value`: beside the path's last piece when it fits.
        let room = width.saturating_sub(6).max(20);
        let pieces = label_lines(&label, room);
        let last = pieces.len() - 1;
        for (i, piece) in pieces.iter().enumerate() {
            let indent = if i == 0 { "    " } else { "      " };
            let with_value = format!("{indent}{piece} = {value}");
            if i == last && last > 0 && with_value.chars().count() <= width {
                writeln!(out, "{with_value}")?;
                continue;
            }
            writeln!(out, "{indent}{piece}")?;
            if i == last {
                for l in lay.wrap("      = ", "        ", &value) {
                    writeln!(out, "{l}")?;
                }
            }
        }
    }
    if shown.len() > 12 {
        writeln!(out, "    … {} more", shown.len() - 12)?;
    }
    Ok(())
}

fn fix_lines(out: &mut String, f: &Finding, cx: &Context) -> fmt::Result {
    let (lay, st) = (&cx.lay, &cx.st);
    let fix = fix_of(f, cx.snap);
    // The command is printed whole on its own line; the text points to it instead of repeating it.
    let text = match &fix.command {
        Some(c) => fix.text.replacen(&format!("`{c}`"), "the command below", 1),
        None => fix.text.clone(),
    };
    push(
        out,
        lay,
        "  fix: ",
        &format!("  {} ", st.good("fix:")),
        4,
        &lay.paths_in(&text),
    )?;
    if let Some(c) = &fix.command {
        // The command alone on its line, never wrapped: it is meant to be pasted.
        writeln!(out, "    $ {c}")?;
    }
    for r in &f.references {
        writeln!(out, "  {} {r}", st.dim("see:"))?;
    }
    Ok(())
}

/// Text for a person.
pub fn render(cx: &Context) -> String {
    super::written(|out| {
        summary_block(out, cx)?;
        writeln!(out)?;
        for sev in [Severity::Error, Severity::Warning, Severity::Info] {
            severity_section(out, cx, sev)?;
        }
        probe_problems(out, cx)?;
        verdict_into(out, cx)
    })
}

/// Push the findings of severity `sev` under their heading, one entry per rule (nothing when
/// there are none).
fn severity_section(out: &mut String, cx: &Context, sev: Severity) -> fmt::Result {
    let group: Vec<&Finding> = cx.findings.iter().filter(|f| f.severity == sev).collect();
    if group.is_empty() {
        return Ok(());
    }
    let heading = match sev {
        Severity::Error => "Errors",
        Severity::Warning => "Warnings",
        Severity::Info => "Info",
    };
    writeln!(
        out,
        "{}\n",
        cx.st.bold(&format!("{heading} ({})", group.len()))
    )?;
    let mut i = 0;
    while i < group.len() {
        let rule = &group[i].rule;
        let n = group[i..].iter().take_while(|f| &f.rule == rule).count();
        rule_entry(out, cx, &group[i..i + n], sev)?;
        i += n;
    }
    Ok(())
}

/// Push one rule's entry: its heading (with `× N` when it fired more than once), the first
/// findings (all with --all or --verbose), and its fix once when every finding shares it.
fn rule_entry(out: &mut String, cx: &Context, same: &[&Finding], sev: Severity) -> fmt::Result {
    let (lay, st, d) = (&cx.lay, &cx.st, cx.detail);
    let n = same.len();
    let f = same[0];
    let count = if n > 1 {
        format!(" × {n}")
    } else {
        String::new()
    };
    let plain = format!("{} [{}]{count} ", severity_plain(sev), f.rule);
    let first = format!(
        "{} {}{count} ",
        severity_word(st, sev),
        st.bold(&format!("[{}]", f.rule))
    );
    push(out, lay, &plain, &first, 2, &f.title)?;
    if d.verbose && !f.rule_source.is_empty() {
        writeln!(out, "  {} {}", st.dim("rule:"), f.rule_source)?;
    }
    let shown = if d.all || d.verbose || n <= GROUP_SHOWN + 1 {
        n
    } else {
        GROUP_SHOWN
    };
    let one_fix = same.iter().all(|g| g.fix == f.fix);
    for g in &same[..shown] {
        one_finding(out, g, cx, !one_fix)?;
    }
    if shown < n {
        writeln!(
            out,
            "  … {} more of this rule (first {shown} shown; --all for the rest)",
            n - shown
        )?;
    }
    if one_fix {
        fix_lines(out, f, cx)?;
    }
    writeln!(out)
}

/// Push the probe problems, except those a finding already shows (a corrupt file appears once);
/// the first 10 unless --all or --verbose.
fn probe_problems(out: &mut String, cx: &Context) -> fmt::Result {
    let (lay, st, d) = (&cx.lay, &cx.st, cx.detail);
    let told = |p: &str| {
        cx.findings.iter().any(|f| {
            f.message.contains(p)
                || f.subject.as_deref().is_some_and(|s| s.contains(p))
                || f.evidence
                    .iter()
                    .any(|e| e.path.contains(p) || e.value.as_str().is_some_and(|v| v.contains(p)))
        })
    };
    let problems: Vec<_> = cx
        .snap
        .probe_errors
        .iter()
        .filter(|p| p.path.as_deref().is_none_or(|path| !told(path)))
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    let head = format!(
        "Probe problems ({}): facts that could not be read",
        problems.len()
    );
    writeln!(out, "{}", st.bold(&head))?;
    let limit = if d.all || d.verbose { usize::MAX } else { 10 };
    for p in problems.iter().take(limit) {
        let text = match &p.path {
            Some(path) => format!(
                "{}: {}",
                super::escape::one_line(&lay.path(path)),
                super::escape::one_line(&p.message)
            ),
            None => super::escape::one_line(&p.message).into_owned(),
        };
        let mark = if p.is_incomplete() { "✗" } else { "!" };
        push(
            out,
            lay,
            &format!("  {mark} {}: ", p.probe),
            &format!("  {mark} {}: ", p.probe),
            4,
            &text,
        )?;
    }
    if problems.len() > limit {
        writeln!(
            out,
            "  … {} more (--all shows them)",
            problems.len() - limit
        )?;
    }
    writeln!(out)
}

/// The verdict line, wrapped (its continuation indented), styled by outcome: the last thing
/// [`render`] prints and all that `check -q` prints.
pub fn verdict(cx: &Context) -> String {
    super::written(|out| verdict_into(out, cx))
}

fn verdict_into(out: &mut String, cx: &Context) -> fmt::Result {
    let line = cx.summary.line(cx.snap);
    let styled = |s: &str| match cx.summary.word() {
        "OK" => cx.st.good(s),
        _ => cx.st.error(s),
    };
    for l in cx.lay.wrap("", "  ", &line) {
        writeln!(out, "{}", styled(&l))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::verdict::{FailOn, Summary};
    use crate::rules::{Evidence, Finding, Severity};
    use crate::Snapshot;

    #[test]
    fn the_checked_in_check_schema_is_current() {
        crate::schema::assert_current("check.schema.json", &crate::report::json::schema());
    }

    fn finding(sev: Severity) -> Finding {
        Finding {
            rule: "gpu-memory-held".into(),
            severity: sev,
            title: "Another process holds GPU memory".into(),
            subject: Some("gpus[0]".into()),
            message: "GPU 0 | busy".into(),
            message_md: String::new(),
            evidence: vec![Evidence {
                path: "gpus[0].live.memory_used_percent".into(),
                value: serde_json::json!(91.5),
            }],
            fix: "stop it".into(),
            references: vec!["https://example.org/x".into()],
            rule_source: String::new(),
        }
    }

    #[test]
    fn text_groups_by_severity_and_ends_with_a_verdict() {
        let snap = Snapshot::empty();
        let fs = vec![finding(Severity::Error), finding(Severity::Info)];
        let sum = Summary::of(&fs, &snap, FailOn::Error);
        assert!(sum.failed);
        let t = render(&Context {
            findings: &fs,
            summary: &sum,
            snap: &snap,
            st: Style { color: false },
            lay: Layout::new(None, None, None),
            detail: Detail::default(),
        });
        let e = t.find("Errors (1)").unwrap();
        let i = t.find("Info (1)").unwrap();
        assert!(e < i, "{t}");
        assert!(t.contains("gpus[0].live.memory_used_percent = 91.5"), "{t}");
        assert!(
            t.trim_end()
                .lines()
                .last()
                .unwrap()
                .starts_with("FAIL: 1 error, 0 warnings, 1 info"),
            "{t}"
        );
        assert!(!t.contains('\u{1b}'), "no colour when off");
    }

    #[test]
    fn markdown_escapes_table_cells() {
        let snap = Snapshot::empty();
        let fs = vec![finding(Severity::Warning)];
        let sum = Summary::of(&fs, &snap, FailOn::Error);
        let m = crate::report::markdown::render(&fs, &sum, &snap);
        assert!(m.contains("GPU 0 \\| busy"), "{m}");
        assert!(
            m.starts_with("## envdoctor check: ✅ 0 errors, 1 warning, 0 info"),
            "{m}"
        );
    }

    #[test]
    fn long_fact_labels_break_between_levels() {
        let l = "pythons[~/envs/e0/bin/python].unmet_requirements[charset-normalizer].installed";
        assert_eq!(
            label_lines(l, 74),
            [
                "pythons[~/envs/e0/bin/python].unmet_requirements[charset-normalizer].",
                "installed"
            ]
        );
        assert_eq!(label_lines("gpus[0].name", 74), ["gpus[0].name"]);
    }
}
