//! Rendering a [`CompareReport`] for people: aligned text (coloured only when the caller says
//! so: on a terminal without `NO_COLOR`) and Markdown for a pull-request comment. JSON is the
//! serde form of the report ([`render_json`]); its schema is `schema/compare.schema.json`.

use super::fleet::FleetReport;
use super::{Change, ChangeKind, CompareReport, Direction, Mode, Rank, Size};
use crate::report::style::Style;
use std::fmt::Write as _;

/// Pretty JSON with a trailing newline.
pub fn render_json(r: &CompareReport) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|e| {
        format!("{{\"error\": \"envdoctor could not serialise the comparison: {e}\"}}")
    });
    s.push('\n');
    s
}

fn rank_title(r: Rank) -> &'static str {
    match r {
        Rank::Verdict => "Rule verdicts",
        Rank::Ml => "ML / CUDA",
        Rank::Other => "Other",
    }
}

fn size_name(s: Size) -> &'static str {
    match s {
        Size::Epoch => "epoch",
        Size::Major => "major",
        Size::Minor => "minor",
        Size::Patch => "patch",
        Size::PreRelease => "pre-release",
        Size::Post => "post-release",
        Size::Dev => "dev-release",
        Size::Local => "local tag",
        Size::Unknown => "not comparable",
    }
}

/// `upgrade minor, local cu118 -> cu121`, `added`, `removed`, ...
fn describe(c: &Change, arrow: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    match c.change {
        ChangeKind::Added => parts.push("added".into()),
        ChangeKind::Removed => parts.push("removed".into()),
        ChangeKind::New => parts.push("new".into()),
        ChangeKind::Fixed => parts.push("fixed".into()),
        ChangeKind::Changed => {}
    }
    match (c.direction, c.size) {
        (Some(Direction::Upgrade), Some(s)) => parts.push(format!("upgrade {}", size_name(s))),
        (Some(Direction::Downgrade), Some(s)) => parts.push(format!("downgrade {}", size_name(s))),
        (Some(Direction::Upgrade), None) => parts.push("upgrade".into()),
        (Some(Direction::Downgrade), None) => parts.push("downgrade".into()),
        (Some(Direction::Same), _) => parts.push("same version, written differently".into()),
        (None, Some(s)) => parts.push(size_name(s).into()),
        (None, None) => {}
    }
    if let (Some(a), Some(b)) = (&c.local_a, &c.local_b) {
        let show = |s: &str| {
            if s.is_empty() {
                "(none)".to_string()
            } else {
                format!("+{s}")
            }
        };
        parts.push(format!("local {} {arrow} {}", show(a), show(b)));
    }
    // Entities (an interpreter, a GPU) carry their path or model as context.
    if let Some(n) = &c.note {
        parts.push(n.clone());
    }
    parts.join(", ")
}

fn verdict_parts(fact: &str) -> (&str, &str) {
    let rest = fact.strip_prefix("verdicts[").unwrap_or(fact);
    match rest.split_once("] ") {
        Some((id, msg)) => (id, msg),
        None => (rest.trim_end_matches(']'), ""),
    }
}

fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n >= w {
        s.to_string()
    } else {
        format!("{s}{}", " ".repeat(w - n))
    }
}

fn width<'a>(items: impl Iterator<Item = &'a str>, cap: usize) -> usize {
    items.map(|s| s.chars().count()).max().unwrap_or(0).min(cap)
}

fn machine_line(r: &CompareReport, i: usize) -> String {
    let m = &r.machines[i];
    let mut extra = Vec::new();
    if let Some(h) = &m.hostname {
        extra.push(h.clone());
    }
    if !m.collected_at.is_empty() {
        extra.push(m.collected_at.clone());
    }
    if extra.is_empty() {
        m.label.clone()
    } else {
        format!("{} ({})", m.label, extra.join(", "))
    }
}

fn footer(r: &CompareReport) -> String {
    let mut s = String::new();
    if !r.options.all {
        s.push_str("volatile facts (time, live GPU/host state, pids) and machine identity ignored; --all compares them");
    }
    if !r.options.verdicts {
        if !s.is_empty() {
            s.push_str("; ");
        }
        s.push_str("rule verdicts not compared");
    }
    s
}

/// Text for a person. `color`: use ANSI colour (only on a terminal, never under `NO_COLOR`).
pub fn render_text(r: &CompareReport, color: bool) -> String {
    let st = Style { color };
    match r.mode {
        Mode::Pair => text_pair(r, st),
        Mode::Fleet => text_fleet(r, st),
    }
}

fn text_pair(r: &CompareReport, st: Style) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{} {}", st.bold("A:"), machine_line(r, 0));
    let _ = writeln!(o, "{} {}", st.bold("B:"), machine_line(r, 1));
    let absent = "(absent)";
    for rank in [Rank::Verdict, Rank::Ml, Rank::Other] {
        let rows: Vec<&Change> = r.changes.iter().filter(|c| c.rank == rank).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(o, "\n{} ({})", st.bold(rank_title(rank)), rows.len());
        if rank == Rank::Verdict {
            let wid = width(rows.iter().map(|c| verdict_parts(&c.fact).0), 40);
            for c in rows {
                let (id, msg) = verdict_parts(&c.fact);
                let sev = c.b.as_deref().or(c.a.as_deref()).unwrap_or("");
                let title = c.note.as_deref().unwrap_or("");
                let (tag, lead) = if c.change == ChangeKind::New {
                    (st.error("new  "), "B will hit")
                } else {
                    (st.good("fixed"), "fixed on B")
                };
                let _ = writeln!(
                    o,
                    "  {tag}  {}  {}  {lead}: {title}\n  {}  {}",
                    pad(sev, 7),
                    pad(id, wid),
                    " ".repeat(5 + 2 + 7 + 2 + wid),
                    st.dim(msg)
                );
            }
            continue;
        }
        let wf = width(rows.iter().map(|c| c.fact.as_str()), 64);
        let wa = width(rows.iter().map(|c| c.a.as_deref().unwrap_or(absent)), 32);
        let wb = width(rows.iter().map(|c| c.b.as_deref().unwrap_or(absent)), 32);
        for c in rows {
            let a = c.a.as_deref().unwrap_or(absent);
            let b = c.b.as_deref().unwrap_or(absent);
            let desc = describe(c, "->");
            let desc = match (c.change, c.direction) {
                (ChangeKind::Added, _) => st.good(&desc),
                (ChangeKind::Removed, _) => st.error(&desc),
                (_, Some(Direction::Downgrade)) => st.warning(&desc),
                _ => st.info(&desc),
            };
            let line = format!(
                "  {}  {}  ->  {}  {desc}",
                pad(&c.fact, wf),
                pad(a, wa),
                pad(b, wb)
            );
            let _ = writeln!(o, "{}", line.trim_end());
        }
    }
    if !r.interpreters.is_empty() {
        let _ = writeln!(o, "\n{}", st.bold("Interpreters (matched by role)"));
        let wl = width(r.interpreters.iter().map(|g| g.label.as_str()), 40);
        let none = "(none)";
        let wa = width(
            r.interpreters
                .iter()
                .map(|g| g.members[0].as_deref().unwrap_or(none)),
            60,
        );
        for g in &r.interpreters {
            let a = g.members[0].as_deref().unwrap_or(none);
            let b = g.members.get(1).and_then(|m| m.as_deref()).unwrap_or(none);
            let tag = match (
                g.members[0].is_some(),
                g.members.get(1).is_some_and(|m| m.is_some()),
            ) {
                (true, false) => st.warning("  only on A"),
                (false, true) => st.warning("  only on B"),
                _ => String::new(),
            };
            let _ = writeln!(o, "  {}  {}  <->  {b}{tag}", pad(&g.label, wl), pad(a, wa));
        }
    }
    let s = &r.summary;
    let head = if s.drift {
        st.warning(&format!(
            "{} difference{}",
            s.differences,
            if s.differences == 1 { "" } else { "s" }
        ))
    } else {
        st.good("no drift")
    };
    let _ = writeln!(
        o,
        "\n{head}: {} new finding(s), {} fixed, {} ML/CUDA, {} other; {} unmatched interpreter(s).",
        s.new_findings, s.fixed_findings, s.ml, s.other, s.unmatched_interpreters
    );
    let f = footer(r);
    if !f.is_empty() {
        let _ = writeln!(o, "{}", st.dim(&format!("({f})")));
    }
    o
}

fn text_fleet(r: &CompareReport, st: Style) -> String {
    let mut o = String::new();
    let empty = FleetReport::default();
    let fl = r.fleet.as_ref().unwrap_or(&empty);
    let _ = writeln!(o, "{} {} machines", st.bold("Fleet:"), r.machines.len());
    let n = r.machines.len();
    if n <= 20 {
        for i in 0..n {
            let _ = writeln!(o, "  {}", machine_line(r, i));
        }
    } else {
        let _ = writeln!(
            o,
            "  {} ... {} (--format json lists them all)",
            r.machines[0].label,
            r.machines[n - 1].label
        );
    }
    let absent = "(absent)";
    if !fl.by_fact.is_empty() {
        let _ = writeln!(o, "\n{}", st.bold("By fact"));
        for rank in [Rank::Verdict, Rank::Ml, Rank::Other] {
            let rows: Vec<_> = fl.by_fact.iter().filter(|f| f.rank == rank).collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(o, "  {} ({})", st.bold(rank_title(rank)), rows.len());
            let wf = width(rows.iter().map(|f| f.fact.as_str()), 64);
            for f in rows {
                let _ = writeln!(
                    o,
                    "    {}  majority {} ({} of {})",
                    pad(&f.fact, wf),
                    f.majority.as_deref().unwrap_or(absent),
                    f.majority_count,
                    f.compared
                );
                let wm = width(f.outliers.iter().map(|x| x.machine.as_str()), 48);
                for x in &f.outliers {
                    let _ = writeln!(
                        o,
                        "      {}  {}",
                        pad(&x.machine, wm),
                        st.warning(x.value.as_deref().unwrap_or(absent))
                    );
                }
            }
        }
        let _ = writeln!(o, "\n{}", st.bold("By machine"));
        for m in &fl.by_machine {
            let n = m.differences.len();
            let _ = writeln!(
                o,
                "  {}  {n} difference{}",
                st.bold(&m.machine),
                if n == 1 { "" } else { "s" }
            );
            let wf = width(m.differences.iter().map(|d| d.fact.as_str()), 64);
            let wv = width(
                m.differences
                    .iter()
                    .map(|d| d.value.as_deref().unwrap_or(absent)),
                32,
            );
            for d in &m.differences {
                let _ = writeln!(
                    o,
                    "    {}  {}  (majority {})",
                    pad(&d.fact, wf),
                    pad(d.value.as_deref().unwrap_or(absent), wv),
                    d.majority.as_deref().unwrap_or(absent)
                );
            }
        }
    }
    let s = &r.summary;
    let head = if s.drift {
        st.warning(&format!(
            "{} fact{} differ{}",
            s.differences,
            if s.differences == 1 { "" } else { "s" },
            if s.differences == 1 { "s" } else { "" }
        ))
    } else {
        st.good("no drift")
    };
    let _ = writeln!(
        o,
        "\n{head} across {} machines ({} verdict, {} ML/CUDA, {} other); {} machine(s) differ from the majority.",
        r.machines.len(),
        s.verdicts,
        s.ml,
        s.other,
        fl.by_machine.len()
    );
    let f = footer(r);
    if !f.is_empty() {
        let _ = writeln!(o, "{}", st.dim(&format!("({f})")));
    }
    o
}

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn code(s: &str) -> String {
    if s.is_empty() {
        return String::new();
    }
    format!(
        "`{}`",
        s.replace('`', "'").replace('|', "\\|").replace('\n', " ")
    )
}

fn opt_code(s: Option<&str>) -> String {
    s.map(code).unwrap_or_else(|| "_absent_".into())
}

/// Markdown for a pull-request comment.
pub fn render_markdown(r: &CompareReport) -> String {
    match r.mode {
        Mode::Pair => md_pair(r),
        Mode::Fleet => md_fleet(r),
    }
}

fn md_pair(r: &CompareReport) -> String {
    let mut o = String::new();
    let s = &r.summary;
    let _ = writeln!(o, "### envdoctor compare\n");
    let _ = writeln!(o, "**A:** {}  ", code(&machine_line(r, 0)));
    let _ = writeln!(o, "**B:** {}\n", code(&machine_line(r, 1)));
    if !s.drift {
        let _ = writeln!(o, "**No drift.**\n");
    } else {
        let _ = writeln!(
            o,
            "**{} difference(s):** {} new finding(s), {} fixed, {} ML/CUDA, {} other.\n",
            s.differences, s.new_findings, s.fixed_findings, s.ml, s.other
        );
    }
    for rank in [Rank::Verdict, Rank::Ml, Rank::Other] {
        let rows: Vec<&Change> = r.changes.iter().filter(|c| c.rank == rank).collect();
        if rows.is_empty() {
            continue;
        }
        let fold = rank == Rank::Other && rows.len() > 20;
        if fold {
            let _ = writeln!(
                o,
                "<details><summary>{} ({})</summary>\n",
                rank_title(rank),
                rows.len()
            );
        } else {
            let _ = writeln!(o, "#### {} ({})\n", rank_title(rank), rows.len());
        }
        if rank == Rank::Verdict {
            let _ = writeln!(o, "| | severity | rule | finding |\n|---|---|---|---|");
            for c in rows {
                let (id, msg) = verdict_parts(&c.fact);
                let sev = c.b.as_deref().or(c.a.as_deref()).unwrap_or("");
                let lead = if c.change == ChangeKind::New {
                    "**new:** B will hit"
                } else {
                    "**fixed** on B"
                };
                let _ = writeln!(
                    o,
                    "| {lead} | {} | {} | {}: {} |",
                    md(sev),
                    code(id),
                    md(c.note.as_deref().unwrap_or("")),
                    md(msg)
                );
            }
        } else {
            let _ = writeln!(o, "| fact | A | B | change |\n|---|---|---|---|");
            for c in rows {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} |",
                    code(&c.fact),
                    opt_code(c.a.as_deref()),
                    opt_code(c.b.as_deref()),
                    md(&describe(c, "→"))
                );
            }
        }
        let _ = writeln!(o);
        if fold {
            let _ = writeln!(o, "</details>\n");
        }
    }
    if !r.interpreters.is_empty() {
        let _ = writeln!(o, "#### Interpreters (matched by role)\n");
        let _ = writeln!(o, "| role | A | B |\n|---|---|---|");
        for g in &r.interpreters {
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                code(&g.label),
                opt_code(g.members[0].as_deref()),
                opt_code(g.members.get(1).and_then(|m| m.as_deref()))
            );
        }
        let _ = writeln!(o);
    }
    let f = footer(r);
    if !f.is_empty() {
        let _ = writeln!(o, "<sub>{}</sub>", md(&f));
    }
    o
}

fn md_fleet(r: &CompareReport) -> String {
    let mut o = String::new();
    let empty = FleetReport::default();
    let fl = r.fleet.as_ref().unwrap_or(&empty);
    let s = &r.summary;
    let _ = writeln!(
        o,
        "### envdoctor compare: fleet of {} machines\n",
        r.machines.len()
    );
    if !s.drift {
        let _ = writeln!(o, "**No drift.**\n");
    } else {
        let _ = writeln!(
            o,
            "**{} fact(s) differ** ({} verdict, {} ML/CUDA, {} other); {} machine(s) differ from the majority.\n",
            s.differences, s.verdicts, s.ml, s.other, fl.by_machine.len()
        );
        let _ = writeln!(o, "#### By fact\n");
        let _ = writeln!(
            o,
            "| fact | majority | machines that differ |\n|---|---|---|"
        );
        for f in &fl.by_fact {
            let outs: Vec<String> = f
                .outliers
                .iter()
                .map(|x| format!("{}: {}", code(&x.machine), opt_code(x.value.as_deref())))
                .collect();
            let _ = writeln!(
                o,
                "| {} | {} ({} of {}) | {} |",
                code(&f.fact),
                opt_code(f.majority.as_deref()),
                f.majority_count,
                f.compared,
                outs.join("<br>")
            );
        }
        let _ = writeln!(o, "\n#### By machine\n");
        for m in &fl.by_machine {
            let _ = writeln!(
                o,
                "<details><summary>{} ({} difference(s))</summary>\n",
                md(&m.machine),
                m.differences.len()
            );
            let _ = writeln!(o, "| fact | value | majority |\n|---|---|---|");
            for d in &m.differences {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} |",
                    code(&d.fact),
                    opt_code(d.value.as_deref()),
                    opt_code(d.majority.as_deref())
                );
            }
            let _ = writeln!(o, "\n</details>\n");
        }
    }
    let f = footer(r);
    if !f.is_empty() {
        let _ = writeln!(o, "<sub>{}</sub>", md(&f));
    }
    o
}
