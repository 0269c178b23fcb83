//! `compare` output: rendering a [`CompareReport`] for people (text within 80 columns): aligned text (coloured only when the caller says
//! so: on a terminal without `NO_COLOR`) and Markdown for a pull-request comment. JSON is the
//! serde form of the report ([`render_json`]); its schema is `schema/compare.schema.json`.

use super::fleet_matrix::{rank_title, split_entity, ABSENT};
use crate::compare::fleet::FleetReport;
use crate::compare::{Change, ChangeKind, CompareReport, Direction, Mode, Rank, Size};
use crate::report::layout::{elide_keeping_name, elide_middle};
use crate::report::style::Style;
use std::fmt::{self, Write as _};

/// The text of `compare` fits this many columns (an 80-column terminal, as `check`).
pub const TEXT_WIDTH: usize = 80;
/// Widest value cell before it is elided in the middle.
const VALUE_CAP: usize = 18;
/// Widest fact cell before it is elided (inside its directories: a key keeps its soname).
const FACT_CAP: usize = 30;
/// The ranks in the order they are shown.
const RANKS: [Rank; 3] = [Rank::Verdict, Rank::Ml, Rank::Other];

/// One displayed row: the fact (within its group), the two values, the description.
struct Row {
    fact: String,
    a: String,
    b: String,
    desc: String,
    change: ChangeKind,
    direction: Option<Direction>,
}

/// Changes under one entity (`pythons[project-venv:.venv]`), or top-level facts (empty group).
struct Group {
    group: String,
    rows: Vec<Row>,
}

/// List-valued facts (`a, b, c`) diffed item by item: what only A has, what only B has, and
/// how many items both keep.
fn list_diff(a: &str, b: &str) -> Option<(String, String, usize)> {
    if !a.contains(", ") && !b.contains(", ") {
        return None;
    }
    let xa: Vec<&str> = a.split(", ").collect();
    let xb: Vec<&str> = b.split(", ").collect();
    let only_a: Vec<&str> = xa.iter().copied().filter(|x| !xb.contains(x)).collect();
    let only_b: Vec<&str> = xb.iter().copied().filter(|x| !xa.contains(x)).collect();
    let kept = xa.len() - only_a.len();
    let show = |v: &[&str], sign: &str| {
        if v.is_empty() {
            "(none)".to_string()
        } else {
            v.iter()
                .map(|x| format!("{sign}{x}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    Some((show(&only_a, "-"), show(&only_b, "+"), kept))
}

/// One row for an entity whose every fact was added (or removed): its version when it has one.
fn whole_row(entity: &str, cs: &[&Change]) -> Row {
    let added = cs[0].change == ChangeKind::Added;
    let version = cs
        .iter()
        .find(|c| c.fact.ends_with(".version"))
        .and_then(|c| if added { c.b.clone() } else { c.a.clone() })
        .unwrap_or_else(|| "present".into());
    let (a, b) = if added {
        (ABSENT.to_string(), version)
    } else {
        (version, ABSENT.to_string())
    };
    Row {
        fact: entity.to_string(),
        a,
        b,
        desc: format!(
            "{} ({} facts)",
            if added { "added" } else { "removed" },
            cs.len()
        ),
        change: cs[0].change,
        direction: None,
    }
}

/// Group changes by entity, and make an entity that was added or removed whole (every one of its
/// fields added, or every one removed) one row, not one per field.
fn collapse(rows: &[&Change]) -> Vec<Group> {
    let by_entity = group_in_order(rows.iter().copied(), |c| {
        let (g, _) = split_entity(&c.fact);
        // Short entity names (`gpus[0]`) stay in the fact; long ones become a heading.
        let g = if g.chars().count() <= 16 { "" } else { g };
        g.to_string()
    });
    let mut groups: Vec<Group> = Vec::new();
    for (g, changes) in by_entity {
        // A whole entity added or removed (`frameworks[x:jax]`): one row, not one per field.
        if !g.is_empty() && added_or_removed_whole(&changes) {
            groups.push(Group {
                group: String::new(),
                rows: vec![whole_row(&g, &changes)],
            });
            continue;
        }
        let rows = entity_rows(&g, &changes);
        groups.push(Group { group: g, rows });
    }
    groups
}

/// `changes` grouped by `key`: the groups in the order of their first change, the changes of
/// each in their order.
fn group_in_order<'a>(
    changes: impl IntoIterator<Item = &'a Change>,
    key: impl Fn(&'a Change) -> String,
) -> Vec<(String, Vec<&'a Change>)> {
    let mut groups: Vec<(String, Vec<&'a Change>)> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = Default::default();
    for c in changes {
        let k = key(c);
        match at.get(&k) {
            Some(&i) => groups[i].1.push(c),
            None => {
                at.insert(k.clone(), groups.len());
                groups.push((k, vec![c]));
            }
        }
    }
    groups
}

/// More than one change, and all of them added or all removed: a thing added or removed whole.
fn added_or_removed_whole(cs: &[&Change]) -> bool {
    let all = |k: ChangeKind| cs.len() > 1 && cs.iter().all(|c| c.change == k);
    all(ChangeKind::Added) || all(ChangeKind::Removed)
}

/// A change's fact shown under group heading `g` (the part after the entity; all of it when
/// there is no heading).
fn fact_in(g: &str, fact: &str) -> String {
    if g.is_empty() {
        fact.to_string()
    } else {
        split_entity(fact).1.to_string()
    }
}

/// The rows of one entity's `changes`: sub-entities (`packages[x]`, `toolkits[y]`) added or
/// removed whole are one row each, every other change a row of its own.
fn entity_rows(g: &str, changes: &[&Change]) -> Vec<Row> {
    let subs = group_in_order(changes.iter().copied(), |c| {
        let rest = fact_in(g, &c.fact);
        let (sub, _) = split_entity(&rest);
        if sub.is_empty() {
            rest.clone()
        } else {
            sub.to_string()
        }
    });
    let mut rows_out: Vec<Row> = Vec::new();
    for (key, cs) in subs {
        if added_or_removed_whole(&cs) {
            rows_out.push(whole_row(&key, &cs));
            continue;
        }
        rows_out.extend(cs.iter().map(|c| change_row(g, c)));
    }
    rows_out
}

/// One change's row under heading `g`: a list-valued fact shows only the items that differ.
fn change_row(g: &str, c: &Change) -> Row {
    let a = c.a.clone().unwrap_or_else(|| ABSENT.into());
    let b = c.b.clone().unwrap_or_else(|| ABSENT.into());
    let mut desc = describe(c, "->");
    let (a, b) = match list_diff(&a, &b) {
        Some((oa, ob, kept)) if c.a.is_some() && c.b.is_some() => {
            desc = if desc.is_empty() {
                format!("{kept} item(s) kept")
            } else {
                format!("{desc}, {kept} item(s) kept")
            };
            (oa, ob)
        }
        _ => (a, b),
    };
    Row {
        fact: fact_in(g, &c.fact),
        a,
        b,
        desc,
        change: c.change,
        direction: c.direction,
    }
}

/// Aligned rows within [`TEXT_WIDTH`]: cells elided in the middle, the description on a line of
/// its own when it does not fit beside the values.
fn pair_rows(rows: &[Row], nested: bool, st: &Style) -> Vec<String> {
    let indent = if nested { "    " } else { "  " };
    let wf = width(rows.iter().map(|r| r.fact.as_str()), FACT_CAP);
    // The values share what the fact column leaves of the line.
    let room = TEXT_WIDTH
        .saturating_sub(indent.len() + wf + 8)
        .max(2 * VALUE_CAP);
    let wa = width(rows.iter().map(|r| r.a.as_str()), room / 2);
    let wb = width(rows.iter().map(|r| r.b.as_str()), room - wa);
    let mut out = Vec::new();
    for r in rows {
        let colour = |d: &str| match (r.change, r.direction) {
            (ChangeKind::Added, _) => st.good(d),
            (ChangeKind::Removed, _) => st.error(d),
            (_, Some(Direction::Downgrade)) => st.warning(d),
            _ => st.info(d),
        };
        let head = format!(
            "{indent}{}  {}  ->  {}",
            pad(&elide_keeping_name(&r.fact, wf), wf),
            pad(&elide_keeping_name(&r.a, wa), wa),
            pad(&elide_keeping_name(&r.b, wb), wb)
        );
        let used = head.chars().count();
        if r.desc.is_empty() {
            out.push(head);
        } else if used + 2 + r.desc.chars().count() <= TEXT_WIDTH {
            out.push(format!("{head}  {}", colour(&r.desc)));
        } else {
            out.push(head);
            let room = TEXT_WIDTH - indent.len() - 4;
            out.push(format!(
                "{indent}    {}",
                colour(&elide_middle(&r.desc, room))
            ));
        }
    }
    out
}

/// Pretty JSON with a trailing newline.
pub fn render_json(r: &CompareReport) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|e| {
        format!("{{\"error\": \"envdoctor could not serialise the comparison: {e}\"}}")
    });
    s.push('\n');
    s
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
    render_text_at(r, color, Detail::default())
}

/// How much of the text: `-q` the verdict line only, `-v` also what matched without drift
/// (the interpreters of a pair that does not differ).
#[derive(Clone, Copy, Debug, Default)]
pub struct Detail {
    /// `-q`.
    pub quiet: bool,
    /// `-v`.
    pub verbose: bool,
}

/// [`render_text`] at a level of detail.
pub fn render_text_at(r: &CompareReport, color: bool, d: Detail) -> String {
    let st = Style { color };
    let full = match r.mode {
        Mode::Pair => text_pair(r, st, d),
        Mode::Fleet => text_fleet(r, st, d),
    };
    if !d.quiet {
        return full;
    }
    // The verdict paragraph (the text ends with it when quiet: no footer).
    let verdict = full.rsplit("\n\n").next().unwrap_or(&full);
    verdict.to_string()
}

/// The items of each rank, in [`RANKS`] order; a rank with none is left out.
fn by_rank<T>(items: &[T], rank_of: impl Fn(&T) -> Rank) -> Vec<(Rank, Vec<&T>)> {
    RANKS
        .iter()
        .filter_map(|&rank| {
            let rows: Vec<&T> = items.iter().filter(|&x| rank_of(x) == rank).collect();
            (!rows.is_empty()).then_some((rank, rows))
        })
        .collect()
}

/// A rule verdict's change, in the parts text and Markdown show.
struct VerdictChange<'a> {
    /// The rule id.
    id: &'a str,
    /// The finding's message.
    msg: &'a str,
    /// Its severity (on B, else on A).
    sev: &'a str,
    /// The rule's title.
    title: &'a str,
    /// New on B (else fixed on B).
    new: bool,
}

/// The parts of verdict change `c`.
fn verdict_change(c: &Change) -> VerdictChange<'_> {
    let (id, msg) = verdict_parts(&c.fact);
    VerdictChange {
        id,
        msg,
        sev: c.b.as_deref().or(c.a.as_deref()).unwrap_or(""),
        title: c.note.as_deref().unwrap_or(""),
        new: c.change == ChangeKind::New,
    }
}

/// Push the footer (what the comparison left out), dimmed in parentheses, when there is one.
fn text_footer(o: &mut String, r: &CompareReport, st: &Style) -> fmt::Result {
    let f = footer(r);
    if !f.is_empty() {
        let lay = crate::report::layout::Layout::new(Some(TEXT_WIDTH), None, None);
        for l in lay.wrap("", " ", &format!("({f})")) {
            writeln!(o, "{}", st.dim(&l))?;
        }
    }
    Ok(())
}

/// Push the footer (what the comparison left out) as a `<sub>` line, when there is one.
fn md_footer(o: &mut String, r: &CompareReport) -> fmt::Result {
    let f = footer(r);
    if !f.is_empty() {
        writeln!(o, "<sub>{}</sub>", md(&f))?;
    }
    Ok(())
}

fn text_pair(r: &CompareReport, st: Style, d: Detail) -> String {
    super::written(|o| {
        writeln!(o, "{} {}", st.bold("A:"), machine_line(r, 0))?;
        writeln!(o, "{} {}", st.bold("B:"), machine_line(r, 1))?;
        for (rank, rows) in by_rank(&r.changes, |c| c.rank) {
            writeln!(o, "\n{} ({})", st.bold(rank_title(rank)), rows.len())?;
            if rank == Rank::Verdict {
                text_verdicts(o, &rows, &st)?;
            } else {
                text_changes(o, &rows, &st)?;
            }
        }
        // Without drift nothing differs to place: the interpreters only with -v (or one that has
        // no match on the other machine, which is drift).
        if !r.interpreters.is_empty() && (r.summary.drift || d.verbose) {
            text_interpreters(o, r, &st)?;
        }
        let s = &r.summary;
        let head = if s.drift {
            st.warning(&crate::plural::plural(s.differences, "difference"))
        } else {
            st.good("no drift")
        };
        let line = format!(
            "{head}: {} new finding(s), {} fixed, {} ML/CUDA, {} other; {} unmatched interpreter(s).",
            s.new_findings, s.fixed_findings, s.ml, s.other, s.unmatched_interpreters
        );
        let lay = crate::report::layout::Layout::new(Some(TEXT_WIDTH), None, None);
        writeln!(o, "\n{}", lay.wrap("", "  ", &line).join("\n"))?;
        if !d.quiet {
            text_footer(o, r, &st)?;
        }
        Ok(())
    })
}

/// Push the rule verdicts new or fixed on B: tag, severity and rule, then what B will hit (or
/// what is fixed) and the message, wrapped within the width at spaces.
fn text_verdicts(o: &mut String, rows: &[&Change], st: &Style) -> fmt::Result {
    for c in rows {
        let v = verdict_change(c);
        let (tag, lead) = if v.new {
            (st.error("new  "), "B will hit")
        } else {
            (st.good("fixed"), "fixed on B")
        };
        writeln!(o, "  {tag}  {}  {}", pad(v.sev, 7), v.id)?;
        // What B will hit, then the message, wrapped within the width at spaces.
        let lay = crate::report::layout::Layout::new(Some(TEXT_WIDTH), None, None);
        let ind = " ".repeat(4);
        for l in lay.wrap(&ind, &ind, &format!("{lead}: {}", v.title)) {
            writeln!(o, "{l}")?;
        }
        for l in lay.wrap(&ind, &ind, v.msg) {
            writeln!(o, "{}", st.dim(&l))?;
        }
    }
    Ok(())
}

/// Push fact changes grouped by entity (see [`collapse`]), aligned.
fn text_changes(o: &mut String, rows: &[&Change], st: &Style) -> fmt::Result {
    for row in collapse(rows) {
        if !row.group.is_empty() {
            writeln!(o, "  {}", elide_keeping_name(&row.group, TEXT_WIDTH - 2))?;
        }
        for line in pair_rows(&row.rows, !row.group.is_empty(), st) {
            writeln!(o, "{}", line.trim_end())?;
        }
    }
    Ok(())
}

/// Push the interpreters matched by role, A and B side by side (one under the other when too
/// wide), marking those only on one side.
fn text_interpreters(o: &mut String, r: &CompareReport, st: &Style) -> fmt::Result {
    writeln!(o, "\n{}", st.bold("Interpreters (matched by role)"))?;
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
        let one = format!("  {}  {}  <->  {b}", pad(&g.label, wl), pad(a, wa));
        let tag_w = if tag.is_empty() { 0 } else { 11 };
        if one.chars().count() + tag_w <= TEXT_WIDTH {
            let one = format!("{one}{tag}");
            writeln!(o, "{one}")?;
        } else {
            // Too wide for one line: A and B one under the other.
            let room = TEXT_WIDTH - 2 - wl - 4;
            writeln!(
                o,
                "  {}  A {}{tag}",
                pad(&g.label, wl),
                elide_middle(a, room)
            )?;
            writeln!(o, "  {}  B {}", " ".repeat(wl), elide_middle(b, room))?;
        }
    }
    Ok(())
}

/// A fleet: the machines numbered, each with how many facts it differs on; the facts that differ
/// as a matrix (facts by machines, [`super::fleet_matrix`]), or listed by fact when the matrix
/// cannot fit; the verdict.
fn text_fleet(r: &CompareReport, st: Style, d: Detail) -> String {
    super::written(|o| {
        let empty = FleetReport::default();
        let fl = r.fleet.as_ref().unwrap_or(&empty);
        writeln!(o, "{} {} machines", st.bold("Fleet:"), r.machines.len())?;
        text_fleet_machines(o, r, fl)?;
        if !fl.by_fact.is_empty() {
            let labels: Vec<&str> = r.machines.iter().map(|m| m.label.as_str()).collect();
            match super::fleet_matrix::render(fl, &labels, TEXT_WIDTH, &st) {
                Some(lines) => {
                    writeln!(
                        o,
                        "\n{}  (· the majority value; blank: not on that machine)",
                        st.bold("Differences")
                    )?;
                    for l in lines {
                        writeln!(o, "{l}")?;
                    }
                }
                None => text_by_fact(o, fl, &st)?,
            }
        }
        let s = &r.summary;
        let head = if s.drift {
            st.warning(&format!(
                "{} differ{}",
                crate::plural::plural(s.differences, "fact"),
                if s.differences == 1 { "s" } else { "" }
            ))
        } else {
            st.good("no drift")
        };
        let line = format!(
            "{head} across {} machines ({} verdict, {} ML/CUDA, {} other); {} machine(s) differ from the majority.",
            r.machines.len(),
            s.verdicts,
            s.ml,
            s.other,
            fl.by_machine.len()
        );
        let lay = crate::report::layout::Layout::new(Some(TEXT_WIDTH), None, None);
        writeln!(o, "\n{}", lay.wrap("", "", &line).join("\n"))?;
        if !d.quiet {
            text_footer(o, r, &st)?;
        }
        Ok(())
    })
}

/// Push the fleet's machines, numbered as the matrix's columns, each with how many facts it
/// differs from the majority on (up to 20; more are summed up, JSON lists them all).
fn text_fleet_machines(o: &mut String, r: &CompareReport, fl: &FleetReport) -> fmt::Result {
    let n = r.machines.len();
    if n > 20 {
        writeln!(
            o,
            "  {} ... {} (--format json lists them all)",
            r.machines[0].label,
            r.machines[n - 1].label
        )?;
        return Ok(());
    }
    let count: std::collections::HashMap<&str, usize> = fl
        .by_machine
        .iter()
        .map(|m| (m.machine.as_str(), m.differences.len()))
        .collect();
    let wn = n.to_string().len();
    // The longest count is "NN differences": the machine's line gets the rest.
    let room = TEXT_WIDTH - 2 - wn - 2 - 2 - 16;
    let wl = width(
        (0..n)
            .map(|i| machine_line(r, i))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str),
        room,
    );
    for i in 0..n {
        let line = elide_middle(&machine_line(r, i), wl);
        match count
            .get(r.machines[i].label.as_str())
            .copied()
            .unwrap_or(0)
        {
            0 => writeln!(o, "  {:>wn$}  {line}", i + 1),
            k => writeln!(
                o,
                "  {:>wn$}  {}  {}",
                i + 1,
                pad(&line, wl),
                crate::plural::plural(k, "difference")
            ),
        }?;
    }
    Ok(())
}

/// Push the fleet's "By fact" section: per rank, each fact's majority value and the machines
/// that differ from it.
fn text_by_fact(o: &mut String, fl: &FleetReport, st: &Style) -> fmt::Result {
    writeln!(o, "\n{}", st.bold("By fact"))?;
    for (rank, rows) in by_rank(&fl.by_fact, |f| f.rank) {
        writeln!(o, "  {} ({})", st.bold(rank_title(rank)), rows.len())?;
        let wf = width(rows.iter().map(|f| f.fact.as_str()), FACT_CAP);
        for f in rows {
            let fact = elide_keeping_name(&f.fact, wf);
            let maj = elide_middle(f.majority.as_deref().unwrap_or(ABSENT), VALUE_CAP);
            writeln!(
                o,
                "    {}  majority {maj} ({} of {})",
                pad(&fact, wf),
                f.majority_count,
                f.compared
            )?;
            let wm = width(f.outliers.iter().map(|x| x.machine.as_str()), 32);
            for x in &f.outliers {
                let v = elide_middle(x.value.as_deref().unwrap_or(ABSENT), TEXT_WIDTH - 8 - wm);
                writeln!(
                    o,
                    "      {}  {}",
                    pad(&elide_middle(&x.machine, wm), wm),
                    st.warning(&v)
                )?;
            }
        }
    }
    Ok(())
}

fn md(s: &str) -> String {
    super::escape::md_text(s)
}

fn code(s: &str) -> String {
    if s.is_empty() {
        return String::new();
    }
    // A cell of a few hundred characters (a long list) makes the table unreadable: elide it.
    super::escape::md_code(&elide_middle(&super::escape::one_line(s), 120))
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
    super::written(|o| {
        let s = &r.summary;
        writeln!(o, "### envdoctor compare\n")?;
        writeln!(o, "**A:** {}  ", code(&machine_line(r, 0)))?;
        writeln!(o, "**B:** {}\n", code(&machine_line(r, 1)))?;
        if !s.drift {
            writeln!(o, "**No drift.**\n")?;
        } else {
            writeln!(
                o,
                "**{} difference(s):** {} new finding(s), {} fixed, {} ML/CUDA, {} other.\n",
                s.differences, s.new_findings, s.fixed_findings, s.ml, s.other
            )?;
        }
        for (rank, rows) in by_rank(&r.changes, |c| c.rank) {
            md_rank_section(o, rank, &rows)?;
        }
        if !r.interpreters.is_empty() {
            writeln!(o, "#### Interpreters (matched by role)\n")?;
            writeln!(o, "| role | A | B |\n|---|---|---|")?;
            for g in &r.interpreters {
                writeln!(
                    o,
                    "| {} | {} | {} |",
                    code(&g.label),
                    opt_code(g.members[0].as_deref()),
                    opt_code(g.members.get(1).and_then(|m| m.as_deref()))
                )?;
            }
            writeln!(o)?;
        }
        md_footer(o, r)?;
        Ok(())
    })
}

/// Push one rank's changes as a table under its heading (folded in `<details>` when there are
/// more than 20 other changes): verdicts by severity and rule, facts with A, B and the change.
fn md_rank_section(o: &mut String, rank: Rank, rows: &[&Change]) -> fmt::Result {
    let fold = rank == Rank::Other && rows.len() > 20;
    if fold {
        writeln!(
            o,
            "<details><summary>{} ({})</summary>\n",
            rank_title(rank),
            rows.len()
        )?;
    } else {
        writeln!(o, "#### {} ({})\n", rank_title(rank), rows.len())?;
    }
    if rank == Rank::Verdict {
        writeln!(o, "| | severity | rule | finding |\n|---|---|---|---|")?;
        for c in rows {
            let v = verdict_change(c);
            let lead = if v.new {
                "**new:** B will hit"
            } else {
                "**fixed** on B"
            };
            writeln!(
                o,
                "| {lead} | {} | {} | {}: {} |",
                md(v.sev),
                code(v.id),
                md(v.title),
                md(v.msg)
            )?;
        }
    } else {
        writeln!(o, "| fact | A | B | change |\n|---|---|---|---|")?;
        for c in rows {
            writeln!(
                o,
                "| {} | {} | {} | {} |",
                code(&c.fact),
                opt_code(c.a.as_deref()),
                opt_code(c.b.as_deref()),
                md(&describe(c, "→"))
            )?;
        }
    }
    writeln!(o)?;
    if fold {
        writeln!(o, "</details>\n")?;
    }
    Ok(())
}

fn md_fleet(r: &CompareReport) -> String {
    super::written(|o| {
        let empty = FleetReport::default();
        let fl = r.fleet.as_ref().unwrap_or(&empty);
        let s = &r.summary;
        writeln!(
            o,
            "### envdoctor compare: fleet of {} machines\n",
            r.machines.len()
        )?;
        if !s.drift {
            writeln!(o, "**No drift.**\n")?;
        } else {
            writeln!(
                o,
                "**{} fact(s) differ** ({} verdict, {} ML/CUDA, {} other); {} machine(s) differ from the majority.\n",
                s.differences, s.verdicts, s.ml, s.other, fl.by_machine.len()
            )?;
            md_fleet_matrix(o, r, fl)?;
        }
        md_footer(o, r)?;
        Ok(())
    })
}

/// Push the fleet's matrix as a table: the machines numbered (with how many facts each differs
/// on), then a row per fact, a column per machine: `·` the majority value, blank where the
/// machine lacks the fact's entity, else its value.
fn md_fleet_matrix(o: &mut String, r: &CompareReport, fl: &FleetReport) -> fmt::Result {
    use super::fleet_matrix::{cells, Cell};
    let n = r.machines.len();
    let count: std::collections::HashMap<&str, usize> = fl
        .by_machine
        .iter()
        .map(|m| (m.machine.as_str(), m.differences.len()))
        .collect();
    for i in 0..n {
        let k = count
            .get(r.machines[i].label.as_str())
            .copied()
            .unwrap_or(0);
        writeln!(
            o,
            "{}. {}: {k} difference(s)",
            i + 1,
            code(&machine_line(r, i))
        )?;
    }
    let nums: Vec<String> = (1..=n).map(|m| m.to_string()).collect();
    writeln!(
        o,
        "\n| fact | majority | {} |\n|---|---|{}",
        nums.join(" | "),
        "---|".repeat(n)
    )?;
    let index: std::collections::HashMap<&str, usize> = r
        .machines
        .iter()
        .enumerate()
        .map(|(i, m)| (m.label.as_str(), i))
        .collect();
    for f in &fl.by_fact {
        let row: Vec<String> = cells(f, fl, &index, n)
            .iter()
            .map(|c| match c {
                Cell::Same => "·".to_string(),
                Cell::NotThere => String::new(),
                Cell::Value(v) => opt_code(v.as_deref()),
            })
            .collect();
        writeln!(
            o,
            "| {} | {} | {} |",
            code(&f.fact),
            opt_code(f.majority.as_deref()),
            row.join(" | ")
        )?;
    }
    writeln!(o, "\n· the majority value; blank: not on that machine.\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_diffed_item_by_item() {
        assert_eq!(
            list_diff(
                "libcudnn.so.8, libcudart.so.11",
                "libcudart.so.11, libcudnn.so.9"
            ),
            Some(("-libcudnn.so.8".into(), "+libcudnn.so.9".into(), 1))
        );
        assert_eq!(list_diff("8.7", "9.1"), None);
    }

    fn change(fact: &str, kind: ChangeKind, a: Option<&str>, b: Option<&str>) -> Change {
        Change {
            rank: Rank::Ml,
            section: crate::compare::Section::Frameworks,
            fact: fact.into(),
            change: kind,
            a: a.map(Into::into),
            b: b.map(Into::into),
            direction: None,
            size: None,
            local_a: None,
            local_b: None,
            note: None,
        }
    }

    #[test]
    fn an_added_framework_is_one_row() {
        let cs = [
            change(
                "frameworks[project-venv:.venv:jax].version",
                ChangeKind::Added,
                None,
                Some("0.4.30"),
            ),
            change(
                "frameworks[project-venv:.venv:jax].cuda_version",
                ChangeKind::Added,
                None,
                Some("12.3"),
            ),
            change(
                "frameworks[project-venv:.venv:jax].wants",
                ChangeKind::Added,
                None,
                Some("a, b"),
            ),
            change(
                "pythons[project-venv:.venv].packages[jax]",
                ChangeKind::Added,
                None,
                Some("0.4.30"),
            ),
        ];
        let refs: Vec<&Change> = cs.iter().collect();
        let groups = collapse(&refs);
        let rows: Vec<(&str, &str, &str)> = groups
            .iter()
            .flat_map(|g| {
                g.rows
                    .iter()
                    .map(|r| (r.fact.as_str(), r.b.as_str(), r.desc.as_str()))
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "frameworks[project-venv:.venv:jax]",
                    "0.4.30",
                    "added (3 facts)"
                ),
                ("packages[jax]", "0.4.30", "added")
            ]
        );
    }
}
