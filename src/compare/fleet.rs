//! Fleets (three or more snapshots): for each fact, the majority value and the machines that
//! differ from it, reported by fact and by machine.
//!
//! A fact under an entity (`pythons[conda-env:ml].packages[torch]`) is compared only among the
//! machines that have the entity; the entity itself (present / absent) is a fact of its own. An
//! absent fact counts as a value (`null`), so a package missing on one machine of three is an
//! outlier of that machine. Ties go to the value of the earliest machine in argument order.
//! Cost: one hash-map pass over all facts of all machines (about a second for 1,000 snapshots
//! of 300 packages each, most of it JSON parsing).

use super::facts::{Fact, Flat};
use super::{Rank, Section};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Majority values and outliers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetReport {
    /// Each fact on which some machine differs from the majority, ranked.
    pub by_fact: Vec<FleetFact>,
    /// Each machine that differs somewhere, with its differences (machines in argument order).
    pub by_machine: Vec<FleetMachine>,
}

/// A fact with outliers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetFact {
    /// Where it ranks.
    pub rank: Rank,
    /// Its section.
    pub section: Section,
    /// The fact's key.
    pub fact: String,
    /// The majority value (`null`: most machines lack the fact).
    pub majority: Option<String>,
    /// How many machines hold the majority value.
    pub majority_count: usize,
    /// How many machines were compared on it (those with its entity).
    pub compared: usize,
    /// The machines that differ, in argument order.
    pub outliers: Vec<Outlier>,
    /// Context for a person (a rule's title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One machine's value where it differs from the majority.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Outlier {
    /// The machine's label.
    pub machine: String,
    /// Its value (`null`: absent there).
    pub value: Option<String>,
}

/// One machine's differences from the majority.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetMachine {
    /// The machine's label.
    pub machine: String,
    /// Its differences, ranked.
    pub differences: Vec<MachineDifference>,
}

/// One difference of one machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MachineDifference {
    /// Where it ranks.
    pub rank: Rank,
    /// The fact's key.
    pub fact: String,
    /// This machine's value (`null`: absent here).
    pub value: Option<String>,
    /// The majority value.
    pub majority: Option<String>,
}

struct Slot<'a> {
    first: &'a Fact,
    values: Vec<(usize, &'a str)>,
}

/// Compute the fleet report of `flats` (one per machine, labelled by `labels`).
pub fn fleet(labels: &[&str], flats: &[Flat]) -> FleetReport {
    let n = flats.len();
    let slots = gather_slots(flats);
    // Which machines have each scope entity.
    let mut scopes: HashMap<&str, Vec<bool>> = HashMap::new();
    // Each reported fact with the indices of its outliers (labels need not be unique).
    let mut by_fact: Vec<(FleetFact, Vec<usize>)> = Vec::new();
    for slot in &slots {
        let members: Option<&Vec<bool>> = match &slot.first.scope {
            None => None,
            Some(s) => Some(
                scopes
                    .entry(s.as_str())
                    .or_insert_with(|| flats.iter().map(|f| f.entities.contains(s)).collect()),
            ),
        };
        by_fact.extend(slot_outliers(slot, members.map(Vec::as_slice), labels, n));
    }
    by_fact.sort_by(|(x, _), (y, _)| {
        (x.rank, x.section)
            .cmp(&(y.rank, y.section))
            .then_with(|| x.fact.cmp(&y.fact))
    });
    let by_machine = by_machine(&by_fact, labels, n);
    let by_fact: Vec<FleetFact> = by_fact.into_iter().map(|(f, _)| f).collect();
    FleetReport {
        by_fact,
        by_machine,
    }
}

/// Every fact key of every machine, in first-seen order, with each machine's value.
fn gather_slots(flats: &[Flat]) -> Vec<Slot<'_>> {
    let n = flats.len();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut slots: Vec<Slot> = Vec::new();
    for (m, flat) in flats.iter().enumerate() {
        for f in &flat.facts {
            let i = *index.entry(f.key.as_str()).or_insert_with(|| {
                slots.push(Slot {
                    first: f,
                    values: Vec::with_capacity(n),
                });
                slots.len() - 1
            });
            slots[i].values.push((m, f.value.as_str()));
        }
    }
    slots
}

/// The fact of `slot` with the indices of its outliers among the machines compared on it
/// (`members`: those with its entity; all when None); None when they all agree.
fn slot_outliers(
    slot: &Slot,
    members: Option<&[bool]>,
    labels: &[&str],
    n: usize,
) -> Option<(FleetFact, Vec<usize>)> {
    let compared = members.map_or(n, |m| m.iter().filter(|x| **x).count());
    let in_set = |m: usize| members.is_none_or(|v| v[m]);
    // Fast path: every compared machine holds the same value.
    let present: Vec<(usize, &str)> = slot
        .values
        .iter()
        .copied()
        .filter(|(m, _)| in_set(*m))
        .collect();
    if present.len() == compared && present.windows(2).all(|w| w[0].1 == w[1].1) {
        return None;
    }
    let (majority, majority_count) = majority_of(&present, compared, in_set, n)?;
    let mut value_of: Vec<Option<&str>> = vec![None; n];
    for (m, v) in &present {
        value_of[*m] = Some(v);
    }
    let idx: Vec<usize> = (0..n)
        .filter(|m| in_set(*m) && value_of[*m] != majority)
        .collect();
    let outliers: Vec<Outlier> = idx
        .iter()
        .map(|&m| Outlier {
            machine: labels[m].to_string(),
            value: value_of[m].map(str::to_string),
        })
        .collect();
    let f = slot.first;
    let ff = FleetFact {
        rank: if f.verdict {
            Rank::Verdict
        } else if f.ml {
            Rank::Ml
        } else {
            Rank::Other
        },
        section: f.section,
        fact: f.key.clone(),
        majority: majority.map(str::to_string),
        majority_count,
        compared,
        outliers,
        note: f.note.clone(),
    };
    Some((ff, idx))
}

/// The majority value (None = absent) among the `compared` machines and how many hold it; ties
/// go to the value of the earliest machine.
fn majority_of<'a>(
    present: &[(usize, &'a str)],
    compared: usize,
    in_set: impl Fn(usize) -> bool,
    n: usize,
) -> Option<(Option<&'a str>, usize)> {
    // Count values (None = absent), remembering the first machine holding each.
    let mut counts: HashMap<Option<&str>, (usize, usize)> = HashMap::new();
    for (m, v) in present {
        let e = counts.entry(Some(*v)).or_insert((0, *m));
        e.0 += 1;
    }
    let absent = compared - present.len();
    if absent > 0 {
        let mut have = vec![false; n];
        for (m, _) in present {
            have[*m] = true;
        }
        let first_absent = (0..n).find(|m| in_set(*m) && !have[*m]).unwrap_or(0);
        counts.insert(None, (absent, first_absent));
    }
    counts
        .iter()
        .max_by(|a, b| (a.1 .0).cmp(&b.1 .0).then((b.1 .1).cmp(&a.1 .1)))
        .map(|(k, v)| (*k, v.0))
}

/// Each machine that differs somewhere, with its differences in `by_fact`'s order.
fn by_machine(by_fact: &[(FleetFact, Vec<usize>)], labels: &[&str], n: usize) -> Vec<FleetMachine> {
    let mut per_machine: Vec<Vec<MachineDifference>> = vec![Vec::new(); n];
    for (ff, idx) in by_fact {
        for (o, &m) in ff.outliers.iter().zip(idx) {
            per_machine[m].push(MachineDifference {
                rank: ff.rank,
                fact: ff.fact.clone(),
                value: o.value.clone(),
                majority: ff.majority.clone(),
            });
        }
    }
    per_machine
        .into_iter()
        .enumerate()
        .filter(|(_, d)| !d.is_empty())
        .map(|(m, differences)| FleetMachine {
            machine: labels[m].to_string(),
            differences,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::packages::ValueKind;

    fn flat(facts: &[(&str, &str)]) -> Flat {
        Flat {
            facts: facts
                .iter()
                .map(|(k, v)| Fact {
                    key: k.to_string(),
                    value: v.to_string(),
                    section: Section::Packages,
                    ml: k.contains("torch"),
                    verdict: false,
                    kind: ValueKind::Pep440,
                    scope: None,
                    note: None,
                })
                .collect(),
            entities: Default::default(),
        }
    }

    #[test]
    fn majority_and_outliers() {
        let flats = vec![
            flat(&[("torch", "2.3.1"), ("six", "1.16.0")]),
            flat(&[("torch", "2.3.1"), ("six", "1.16.0")]),
            flat(&[("torch", "2.1.0"), ("six", "1.16.0"), ("extra", "1")]),
            flat(&[("torch", "2.3.1")]),
        ];
        let r = fleet(&["a", "b", "c", "d"], &flats);
        let facts: Vec<(&str, Option<&str>, usize, Vec<&str>)> = r
            .by_fact
            .iter()
            .map(|f| {
                (
                    f.fact.as_str(),
                    f.majority.as_deref(),
                    f.majority_count,
                    f.outliers.iter().map(|o| o.machine.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            facts,
            vec![
                ("torch", Some("2.3.1"), 3, vec!["c"]),
                ("extra", None, 3, vec!["c"]),
                ("six", Some("1.16.0"), 3, vec!["d"]),
            ]
        );
        assert_eq!(r.by_machine.len(), 2);
        assert_eq!(r.by_machine[0].machine, "c");
        assert_eq!(r.by_machine[0].differences.len(), 2);
        assert_eq!(r.by_machine[1].differences[0].value, None);
    }
}
