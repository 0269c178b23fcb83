//! `envdoctor diagnose` and `envdoctor run`: from the error text people have to the rule that
//! explains it, confirmed (or ruled out) by the machine's facts.
//!
//! - [`reader`]: the log, streamed line by line with bounded memory (ANSI, `\r`, encodings);
//! - [`matcher`]: every rule's symptoms in one regex set, and error events read from lines;
//! - [`confirm`]: a candidate rule against the snapshot → confirmed / plausible / ruled out;
//! - [`render`]: text, Markdown and JSON (`schema/diagnose.schema.json`);
//! - [`cli`]: the two subcommands (`run` tees the command's output and diagnoses it on failure).

pub mod cli;
pub mod confirm;
pub mod matcher;
pub mod reader;
pub mod render;
pub mod supervise;

use crate::rules::compile::Rule;
use crate::rules::model::Severity;
use crate::rules::Evidence;
use confirm::{MissingFact, Verdict};
use matcher::{Event, SymptomIndex};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::Read;

/// Lines kept per candidate rule (the latest).
const LINES_PER_RULE: usize = 10;
/// Events kept (the latest).
const MAX_EVENTS: usize = 100;

/// The JSON `envdoctor diagnose --format json` prints.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[schemars(title = "envdoctor diagnose report")]
pub struct Report {
    /// The envdoctor that wrote it.
    pub envdoctor_version: String,
    /// The log read (a path, `-` for stdin, or the command for `run`).
    pub source: String,
    /// Where the facts came from (`this machine (/)`, `snapshot today.json`).
    pub facts_from: String,
    /// Lines read.
    pub lines_read: u64,
    /// Remarks on the input (lines cut, bytes that were not UTF-8).
    pub notes: Vec<String>,
    /// The error events read from the log (the latest ones; matched lines and exception lines).
    pub events: Vec<Event>,
    /// Candidate rules, best first: confirmed, then plausible, then ruled out.
    pub diagnoses: Vec<Diagnosis>,
    /// When no symptom matched: the rules nearest to the log's error lines by text similarity.
    pub nearest: Vec<Nearest>,
}

/// One candidate rule.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Diagnosis {
    /// The rule's id.
    pub rule: String,
    /// The rule's title.
    pub title: String,
    /// The rule's severity.
    pub severity: Severity,
    /// confirmed | plausible | ruled-out.
    pub verdict: Verdict,
    /// The ranking score (verdict, then the best symptom's specificity, then severity, then
    /// how many distinct symptoms matched).
    pub score: u32,
    /// The specificity of the most specific symptom that matched (1 generic .. 3 exact).
    pub specificity: u8,
    /// What it holds for (`libraries[libcusolver.so.10 @ /v/bin/python]`), when scoped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Confirmed: the rule's message filled with the facts; otherwise why not.
    pub message: String,
    /// The log lines that matched its symptoms (the latest ones).
    pub matched_lines: Vec<MatchedLine>,
    /// Facts that confirm it (confirmed) or contradict it (ruled out).
    pub evidence: Vec<Evidence>,
    /// Facts that would decide it (plausible), and how to get them.
    pub missing_facts: Vec<MissingFact>,
    /// What to do.
    pub fix: String,
    /// Where the failure is documented.
    pub references: Vec<String>,
}

/// A log line that matched a symptom.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MatchedLine {
    /// 1-based line number.
    pub line: u64,
    /// The line (ANSI colour and logger prefix removed).
    pub text: String,
    /// The symptom regex that matched.
    pub symptom: String,
    /// Its specificity.
    pub specificity: u8,
}

/// A rule near the log's error text, when nothing matched.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Nearest {
    /// The rule's id.
    pub rule: String,
    /// Its title.
    pub title: String,
    /// Text similarity in 0..1 (Sørensen–Dice on character bigrams).
    pub similarity: f64,
}

/// What one rule's symptoms matched.
#[derive(Default)]
struct RuleMatch {
    specificity: u8,
    patterns: BTreeSet<usize>,
    count: u64,
    lines: VecDeque<MatchedLine>,
    names: BTreeSet<String>,
}

/// What a pass over a log found.
pub struct Scan {
    stats: reader::Stats,
    events: VecDeque<Event>,
    matches: HashMap<usize, RuleMatch>,
    /// The site-packages directories traceback frames name (the interpreter that ran).
    sites: BTreeSet<String>,
}

/// Read `log` and match every line against the symptoms in `index`.
pub fn scan<R: Read>(log: R, index: &SymptomIndex) -> Result<Scan, reader::ReadError> {
    let mut events: VecDeque<Event> = VecDeque::new();
    let mut matches: HashMap<usize, RuleMatch> = HashMap::new();
    let mut sites: BTreeSet<String> = BTreeSet::new();
    let stats = reader::for_each_candidate(log, Some(index.screen_regex()), |no, line| {
        if !index.screen(line) {
            return;
        }
        let hits = index.hits(line);
        let text = reader::decode(line);
        if let Some(site) = matcher::site_dir(&text) {
            if sites.len() < 8 {
                sites.insert(site.to_string());
            }
        }
        let ev = matcher::event(no, &text, !hits.is_empty());
        if hits.is_empty() && ev.exception.is_none() {
            return;
        }
        for h in &hits {
            let m = matches.entry(h.rule).or_default();
            m.count += 1;
            m.specificity = m.specificity.max(h.specificity);
            m.patterns.insert(h.pattern);
            if let Some(lib) = &ev.library {
                if m.names.len() < 16 {
                    m.names.insert(lib.clone());
                }
            }
            if m.lines.back().is_some_and(|l| l.line == no) {
                continue;
            }
            if m.lines.len() == LINES_PER_RULE {
                m.lines.pop_front();
            }
            m.lines.push_back(MatchedLine {
                line: no,
                text: ev.text.clone(),
                symptom: index.pattern(h.pattern).to_string(),
                specificity: h.specificity,
            });
        }
        if events.len() == MAX_EVENTS {
            events.pop_front();
        }
        events.push_back(ev);
    })?;
    Ok(Scan {
        stats,
        events,
        matches,
        sites,
    })
}

/// Confirm every candidate of `scan` against `facts` (a snapshot as JSON) and rank them.
pub fn diagnose(
    scan: Scan,
    rules: &[Rule],
    facts: &Value,
    source: &str,
    facts_from: &str,
) -> Report {
    let mut diagnoses = Vec::new();
    let sites: Vec<String> = scan.sites.iter().cloned().collect();
    for (ri, m) in scan.matches {
        let rule = &rules[ri];
        let names: Vec<String> = m.names.iter().cloned().collect();
        let out = confirm::confirm(rule, facts, &names, &sites);
        let sev = match rule.severity {
            Severity::Error => 2,
            Severity::Warning => 1,
            Severity::Info => 0,
        };
        let v = match out.verdict {
            Verdict::Confirmed => 2,
            Verdict::Plausible => 1,
            Verdict::RuledOut => 0,
        };
        let score =
            v * 1000 + u32::from(m.specificity) * 100 + sev * 10 + m.patterns.len().min(9) as u32;
        diagnoses.push(Diagnosis {
            rule: rule.id.clone(),
            title: rule.title.clone(),
            severity: rule.severity,
            verdict: out.verdict,
            score,
            specificity: m.specificity,
            subject: out.subject,
            message: out.message,
            matched_lines: m.lines.into_iter().collect(),
            evidence: out.evidence,
            missing_facts: out.missing,
            fix: out.fix,
            references: rule.references.clone(),
        });
    }
    diagnoses.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.rule.cmp(&b.rule)));
    let events: Vec<Event> = scan.events.into_iter().collect();
    let nearest = if diagnoses.is_empty() {
        nearest(rules, &events, &scan.stats.tail)
    } else {
        Vec::new()
    };
    let mut notes = Vec::new();
    let st = &scan.stats;
    if st.lines == 0 {
        notes.push("the log is empty".to_string());
    }
    if st.non_utf8_lines > 0 {
        notes.push(format!(
            "{} line(s) were not UTF-8 and were read as Latin-1",
            st.non_utf8_lines
        ));
    }
    if st.long_lines > 0 {
        notes.push(format!(
            "{} line(s) longer than {} KiB were cut",
            st.long_lines,
            reader::MAX_LINE / 1024
        ));
    }
    Report {
        envdoctor_version: env!("CARGO_PKG_VERSION").to_string(),
        source: source.to_string(),
        facts_from: facts_from.to_string(),
        lines_read: st.lines,
        notes,
        events,
        diagnoses,
        nearest,
    }
}

/// The three rules whose text (title, what it looks like, symptoms) is nearest to the log's
/// error lines (its exception lines, else its last lines).
fn nearest(rules: &[Rule], events: &[Event], tail: &[u8]) -> Vec<Nearest> {
    let mut queries: Vec<String> = events
        .iter()
        .rev()
        .take(5)
        .map(|e| e.text.to_lowercase())
        .collect();
    if queries.is_empty() {
        let text = reader::decode(tail).to_lowercase();
        let mut lines: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        queries = lines.split_off(lines.len().saturating_sub(5));
    }
    if queries.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<Nearest> = rules
        .iter()
        .map(|r| {
            let mut texts = vec![r.title.to_lowercase()];
            if let Some(l) = &r.explain.looks_like {
                texts.extend(
                    l.lines()
                        .map(|l| l.trim().to_lowercase())
                        .filter(|l| !l.is_empty()),
                );
            }
            texts.extend(
                r.symptoms
                    .iter()
                    .map(|s| s.replace('\\', "").to_lowercase()),
            );
            let best = queries
                .iter()
                .flat_map(|q| texts.iter().map(move |t| strsim::sorensen_dice(q, t)))
                .fold(0.0, f64::max);
            Nearest {
                rule: r.id.clone(),
                title: r.title.clone(),
                similarity: (best * 1000.0).round() / 1000.0,
            }
        })
        .collect();
    scored.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then_with(|| a.rule.cmp(&b.rule))
    });
    scored.truncate(3);
    scored
}

/// The JSON Schema of [`Report`], as checked in at `schema/diagnose.schema.json`.
pub fn json_schema() -> String {
    crate::schema::render::<Report>()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_checked_in_diagnose_schema_is_current() {
        crate::schema::assert_current("diagnose.schema.json", &super::json_schema());
    }
}
