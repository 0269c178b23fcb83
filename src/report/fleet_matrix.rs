//! A fleet's drift as a matrix, for `compare` of three or more snapshots in text: one row per fact
//! that differs somewhere, one column per machine, the majority value in a column of its own.
//! A machine that holds the majority value shows `·`, one whose value differs shows it, one that
//! lacks the fact's entity (a venv, a GPU) is left blank: the entity's own row says it is absent.
//! Facts under one entity (`pythons[project-venv:.venv]`) sit under it as a heading, as in a
//! pair. Columns are as wide as what they show: a machine that agrees everywhere is one `·`
//! wide, so the machines that differ get the room. When the matrix cannot fit the width (too
//! many machines differ), [`render`] answers None and the caller lists the facts instead.
//! It also owns the names the pair text shares with it (`ABSENT`, [`split_entity`],
//! [`rank_title`]): `report::compare` uses this module, never the reverse (no import circle).

use super::layout::elide_keeping_name;
use super::style::Style;
use crate::compare::fleet::{FleetFact, FleetReport};
use crate::compare::Rank;
use std::collections::HashMap;

/// What a missing value shows as.
pub(super) const ABSENT: &str = "(absent)";

/// `frameworks[x:torch].version` -> (`frameworks[x:torch]`, `version`); no entity: ("", fact).
pub(super) fn split_entity(fact: &str) -> (&str, &str) {
    match fact.find("].") {
        Some(i) => (&fact[..=i], &fact[i + 2..]),
        None => ("", fact),
    }
}

/// A rank's title, as text and Markdown show it.
pub(super) fn rank_title(r: Rank) -> &'static str {
    match r {
        Rank::Verdict => "Rule verdicts",
        Rank::Ml => "ML / CUDA",
        Rank::Other => "Other",
    }
}

/// The narrowest a value column gets before the matrix gives up.
const MIN_VALUE: usize = 6;
/// The narrowest the fact column gets.
const MIN_FACT: usize = 16;
/// Values shrink to this before the fact column does.
const SOFT_VALUE: usize = 12;
/// The fact column shrinks to this before values go below [`SOFT_VALUE`].
const SOFT_FACT: usize = 24;
/// The widest the fact column starts at.
const MAX_FACT: usize = 30;
/// An entity name longer than this becomes a heading over its facts.
const HEADING_OVER: usize = 16;

/// One machine's cell in a row.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Cell {
    /// It holds the majority value.
    Same,
    /// It lacks the entity the fact belongs to: not compared there.
    NotThere,
    /// Its own value (None: absent).
    Value(Option<String>),
}

impl Cell {
    fn text(&self) -> &str {
        match self {
            Cell::Same => "·",
            Cell::NotThere => "",
            Cell::Value(v) => v.as_deref().unwrap_or(ABSENT),
        }
    }
}

/// A line of the matrix.
enum Line {
    /// A rank's title (`ML / CUDA (26)`).
    Rank(String),
    /// An entity over the facts below it.
    Heading(String),
    /// A fact: its name (indented under a heading), the majority value, each machine's cell.
    Fact {
        name: String,
        majority: String,
        cells: Vec<Cell>,
    },
}

/// Column widths: the fact, the majority value, each machine.
#[derive(Clone, Debug, PartialEq)]
struct Widths {
    fact: usize,
    majority: usize,
    machines: Vec<usize>,
}

impl Widths {
    /// The line's width: `  fact  majority  m1 m2 …`.
    fn total(&self) -> usize {
        2 + self.fact + 2 + self.majority + 1 + self.machines.iter().map(|w| w + 1).sum::<usize>()
    }
}

/// The matrix of `fl` for machines `labels` (in argument order) within `width` columns; None
/// when it cannot fit. The machines are numbered from 1 in the column heads.
pub fn render(fl: &FleetReport, labels: &[&str], width: usize, st: &Style) -> Option<Vec<String>> {
    let lines = lines(fl, labels);
    let w = fit(natural(&lines, labels.len()), width)?;
    let mut out = Vec::new();
    let mut head = format!("{}    {} ", " ".repeat(w.fact), pad("majority", w.majority));
    for (m, cw) in w.machines.iter().enumerate() {
        head.push(' ');
        head.push_str(&pad(&(m + 1).to_string(), *cw));
    }
    out.push(st.bold(head.trim_end()));
    for l in &lines {
        match l {
            Line::Rank(t) => out.push(st.bold(t)),
            Line::Heading(h) => out.push(format!("  {}", elide_keeping_name(h, width - 2))),
            Line::Fact {
                name,
                majority,
                cells,
            } => out.push(fact_line(name, majority, cells, &w, st)),
        }
    }
    Some(out)
}

/// One fact's line: each cell elided to its column, a differing value in the warning colour.
fn fact_line(name: &str, majority: &str, cells: &[Cell], w: &Widths, st: &Style) -> String {
    let mut s = format!(
        "  {}  {} ",
        pad(&elide_keeping_name(name, w.fact), w.fact),
        pad(&elide_keeping_name(majority, w.majority), w.majority)
    );
    for (c, cw) in cells.iter().zip(&w.machines) {
        let shown = pad(&elide_keeping_name(c.text(), *cw), *cw);
        s.push(' ');
        match c {
            Cell::Value(_) => s.push_str(&st.warning(&shown)),
            _ => s.push_str(&shown),
        }
    }
    s.trim_end().to_string()
}

/// The lines of the matrix: per rank its title, then its facts, those under a long entity name
/// under a heading.
fn lines(fl: &FleetReport, labels: &[&str]) -> Vec<Line> {
    let index: HashMap<&str, usize> = labels.iter().enumerate().map(|(i, l)| (*l, i)).collect();
    let mut out = Vec::new();
    for rank in [Rank::Verdict, Rank::Ml, Rank::Other] {
        let facts: Vec<&FleetFact> = fl.by_fact.iter().filter(|f| f.rank == rank).collect();
        if facts.is_empty() {
            continue;
        }
        out.push(Line::Rank(format!(
            "{} ({})",
            rank_title(rank),
            facts.len()
        )));
        let mut heading = "";
        for f in facts {
            let (entity, rest) = split_entity(&f.fact);
            let nested = entity.chars().count() > HEADING_OVER;
            if nested && entity != heading {
                out.push(Line::Heading(entity.to_string()));
            }
            // An entity's own row (`pythons[conda-env:ml]` present/absent) heads its facts.
            heading = if nested { entity } else { f.fact.as_str() };
            out.push(Line::Fact {
                name: if nested {
                    format!("  {rest}")
                } else {
                    f.fact.clone()
                },
                majority: f.majority.clone().unwrap_or_else(|| ABSENT.into()),
                cells: cells(f, fl, &index, labels.len()),
            });
        }
    }
    out
}

/// Each machine's cell for fact `f`: its value where it differs, blank where it lacks the
/// fact's entity (when fewer machines were compared than there are), `·` elsewhere.
pub(super) fn cells(
    f: &FleetFact,
    fl: &FleetReport,
    index: &HashMap<&str, usize>,
    n: usize,
) -> Vec<Cell> {
    let mut out = vec![Cell::Same; n];
    if f.compared < n {
        if let Some(has) = entity_presence(f, fl, index, n) {
            for (c, has) in out.iter_mut().zip(has) {
                if !has {
                    *c = Cell::NotThere;
                }
            }
        }
    }
    for o in &f.outliers {
        if let Some(&m) = index.get(o.machine.as_str()) {
            out[m] = Cell::Value(o.value.clone());
        }
    }
    out
}

/// Which machines have the entity `f` belongs to: read off the entity's own row (the longest
/// fact of the report that `f`'s key extends), which exists whenever some machine lacks it.
fn entity_presence(
    f: &FleetFact,
    fl: &FleetReport,
    index: &HashMap<&str, usize>,
    n: usize,
) -> Option<Vec<bool>> {
    let entity = fl
        .by_fact
        .iter()
        .filter(|e| {
            f.fact
                .strip_prefix(e.fact.as_str())
                .is_some_and(|rest| rest.starts_with(['.', '[']))
        })
        .max_by_key(|e| e.fact.len())?;
    let mut has = vec![entity.majority.is_some(); n];
    for o in &entity.outliers {
        if let Some(&m) = index.get(o.machine.as_str()) {
            has[m] = o.value.is_some();
        }
    }
    Some(has)
}

/// The widths the lines ask for, before any elision (a machine column at least as wide as its
/// number).
fn natural(lines: &[Line], n: usize) -> Widths {
    let mut w = Widths {
        fact: 0,
        majority: "majority".len(),
        machines: (1..=n).map(|m| m.to_string().len()).collect(),
    };
    for l in lines {
        if let Line::Fact {
            name,
            majority,
            cells,
        } = l
        {
            w.fact = w.fact.max(name.chars().count());
            w.majority = w.majority.max(majority.chars().count());
            for (cw, c) in w.machines.iter_mut().zip(cells) {
                *cw = (*cw).max(c.text().chars().count());
            }
        }
    }
    w.fact = w.fact.min(MAX_FACT);
    w
}

/// Shrink `w` until the line fits `width`, the widest column first: the values down to
/// [`SOFT_VALUE`], then the fact down to [`SOFT_FACT`] (a fact's name is what a reader scans),
/// then the values to [`MIN_VALUE`] and the fact to [`MIN_FACT`]; None when it cannot.
fn fit(mut w: Widths, width: usize) -> Option<Widths> {
    let floors = [
        (MAX_FACT, SOFT_VALUE),
        (SOFT_FACT, SOFT_VALUE),
        (SOFT_FACT, MIN_VALUE),
        (MIN_FACT, MIN_VALUE),
    ];
    for (fact_min, value_min) in floors {
        while w.total() > width {
            if !shrink_widest(&mut w, fact_min, value_min) {
                break;
            }
        }
    }
    (w.total() <= width).then_some(w)
}

/// Take one column off the widest column still above its floor; false when none is.
fn shrink_widest(w: &mut Widths, fact_min: usize, value_min: usize) -> bool {
    // (width, which, floor): 0 the fact, 1 the majority, 2+ a machine.
    let mut cols: Vec<(usize, usize, usize)> = vec![(w.fact, 0, fact_min)];
    cols.push((w.majority, 1, value_min.max("majority".len())));
    cols.extend(
        w.machines
            .iter()
            .enumerate()
            .map(|(m, cw)| (*cw, m + 2, value_min)),
    );
    let Some((_, which, _)) = cols
        .into_iter()
        .filter(|(cw, _, min)| cw > min)
        .max_by_key(|(cw, which, _)| (*cw, std::cmp::Reverse(*which)))
    else {
        return false;
    };
    match which {
        0 => w.fact -= 1,
        1 => w.majority -= 1,
        m => w.machines[m - 2] -= 1,
    }
    true
}

fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    format!("{s}{}", " ".repeat(w.saturating_sub(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_widest_column_gives_way_first_and_a_crowd_does_not_fit() {
        let w = Widths {
            fact: 30,
            majority: 20,
            machines: vec![1, 1, 25, 1, 12],
        };
        let fitted = fit(w, 80).unwrap();
        assert!(fitted.total() <= 80, "{fitted:?}");
        assert_eq!(fitted.machines[0], 1, "a column of · keeps its width");
        assert!(fitted.machines[2] < 25 && fitted.machines[2] >= MIN_VALUE);
        // Twelve machines that each differ somewhere cannot share 80 columns.
        let crowd = Widths {
            fact: 20,
            majority: 10,
            machines: vec![10; 12],
        };
        assert_eq!(fit(crowd, 80), None);
    }

    fn fact(
        key: &str,
        majority: Option<&str>,
        compared: usize,
        out: &[(&str, Option<&str>)],
    ) -> FleetFact {
        FleetFact {
            rank: Rank::Ml,
            section: crate::compare::Section::Pythons,
            fact: key.into(),
            majority: majority.map(Into::into),
            majority_count: compared - out.len(),
            compared,
            outliers: out
                .iter()
                .map(|(m, v)| crate::compare::fleet::Outlier {
                    machine: m.to_string(),
                    value: v.map(Into::into),
                })
                .collect(),
            note: None,
        }
    }

    #[test]
    fn a_machine_without_the_entity_is_blank_under_it_and_absent_on_its_row() {
        // m3 has no conda env `ml`; m2's torch in it differs.
        let fl = FleetReport {
            by_fact: vec![
                fact("pythons[conda-env:ml]", Some("present"), 3, &[("m3", None)]),
                fact(
                    "pythons[conda-env:ml].packages[torch]",
                    Some("2.3.1"),
                    2,
                    &[("m2", Some("2.1.0"))],
                ),
            ],
            by_machine: vec![],
        };
        let st = Style { color: false };
        let text = render(&fl, &["m1", "m2", "m3"], 80, &st)
            .unwrap()
            .join("\n");
        let row = |k: &str| text.lines().find(|l| l.contains(k)).unwrap().to_string();
        let entity = row("pythons[conda-env:ml]");
        let words = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(
            words(&entity)[1..],
            ["present", "·", "·", "(absent)"],
            "{text}"
        );
        let torch = row("packages[torch]");
        assert_eq!(
            words(&torch),
            ["packages[torch]", "2.3.1", "·", "2.1.0"],
            "m3 is blank: {text}"
        );
        // The entity's row heads its facts: its name is not repeated as a heading.
        assert_eq!(text.matches("pythons[conda-env:ml]").count(), 1, "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80));
    }
}
