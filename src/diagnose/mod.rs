//! `envdoctor diagnose` and `envdoctor run`: from the error text people have to the rule that
//! explains it, confirmed (or ruled out) by the machine's facts.
//!
//! - [`reader`]: the log, streamed line by line with bounded memory (ANSI, `\r`, encodings);
//! - [`matcher`]: every rule's symptoms in one regex set, and error events read from lines;
//! - [`logfacts`]: the log as facts (`log.*`: events of known kinds with their values), laid
//!   over the snapshot (it fills what the snapshot lacks, and wins for GPU memory);
//! - [`confirm`]: a candidate rule against the facts → confirmed / plausible / ruled out
//!   (three-valued: a missing or unorderable fact is never a contradiction);
//! - [`explain`]: what the facts say about each recognised event no rule explains;
//! - the report's text, Markdown and JSON (`schema/diagnose.schema.json`) are
//!   [`crate::report::diagnose`]'s;
//! - the two subcommands are [`crate::cli`]'s (`run` tees the command's output and diagnoses it
//!   on failure).

pub mod confirm;
pub mod explain;
pub mod logfacts;
pub mod matcher;
pub mod reader;
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

/// Version of the `diagnose` JSON format ([`Report::format_version`]): 2 added `explanations`,
/// events' `kind` and `values`, and `format_version` itself.
pub const FORMAT_VERSION: u32 = 2;

/// The JSON `envdoctor diagnose --format json` prints.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[schemars(title = "envdoctor diagnose report")]
pub struct Report {
    /// Version of this format ([`FORMAT_VERSION`]).
    pub format_version: u32,
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
    /// What the facts say about each recognised event that no candidate explains.
    pub explanations: Vec<explain::Explanation>,
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
    /// What the reader saw (lines, bytes, the tail).
    pub stats: reader::Stats,
    events: VecDeque<Event>,
    matches: HashMap<usize, RuleMatch>,
    /// The site-packages directories traceback frames name (the interpreter that ran).
    sites: BTreeSet<String>,
    /// The log as facts.
    pub log: logfacts::LogFacts,
}

impl Scan {
    /// Whether facts are worth gathering: a rule is a candidate, or the log holds an event the
    /// facts can explain.
    pub fn needs_facts(&self) -> bool {
        !self.matches.is_empty() || !self.log.events.is_empty()
    }
}

/// Read `log` and match every line against the symptoms in `index`.
pub fn scan<R: Read>(log: R, index: &SymptomIndex) -> Result<Scan, reader::ReadError> {
    let mut events: VecDeque<Event> = VecDeque::new();
    let mut matches: HashMap<usize, RuleMatch> = HashMap::new();
    let mut sites: BTreeSet<String> = BTreeSet::new();
    let mut log_facts = logfacts::LogFacts::default();
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
        let before = log_facts.events.len();
        log_facts.read(no, &text);
        let mut ev = matcher::event(no, &text, !hits.is_empty());
        if let Some(le) = log_facts.events.get(before) {
            ev.kind = Some(le.kind.to_string());
            ev.values = le.values.clone();
        }
        if hits.is_empty() && ev.exception.is_none() && ev.kind.is_none() {
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
        log: log_facts,
    })
}

/// Confirm every candidate of `scan` against `facts` (a snapshot as JSON, with the log's facts
/// laid over it) and rank them.
pub fn diagnose(
    scan: Scan,
    rules: &[Rule],
    facts: &Value,
    source: &str,
    facts_from: &str,
) -> Report {
    let mut facts = facts.clone();
    let mut notes = logfacts::overlay(&mut facts, &scan.log);
    let sites: Vec<String> = scan.sites.iter().cloned().collect();
    let diagnoses = candidates(scan.matches, rules, &facts, &sites);
    let events: Vec<Event> = scan.events.into_iter().collect();
    let explained: Vec<u64> = diagnoses
        .iter()
        .filter(|d| d.verdict != Verdict::RuledOut)
        .flat_map(|d| d.matched_lines.iter().map(|l| l.line))
        .collect();
    let explanations = explain::explain(&scan.log, &facts, &explained);
    // Rules "near by text" only when nothing else is known about the log.
    let nearest = if diagnoses.is_empty() && explanations.is_empty() {
        nearest(rules, &events, &scan.stats.tail)
    } else {
        Vec::new()
    };
    notes.extend(input_notes(&scan.stats));
    Report {
        format_version: FORMAT_VERSION,
        envdoctor_version: env!("CARGO_PKG_VERSION").to_string(),
        source: source.to_string(),
        facts_from: facts_from.to_string(),
        lines_read: scan.stats.lines,
        notes,
        events,
        diagnoses,
        nearest,
        explanations,
    }
}

/// Each matched rule confirmed against `facts`, best first: verdict, then the best symptom's
/// specificity, then severity, then how many distinct symptoms matched.
fn candidates(
    matches: HashMap<usize, RuleMatch>,
    rules: &[Rule],
    facts: &Value,
    sites: &[String],
) -> Vec<Diagnosis> {
    let mut diagnoses = Vec::new();
    for (ri, m) in matches {
        let rule = &rules[ri];
        let names: Vec<String> = m.names.iter().cloned().collect();
        let out = confirm::confirm(rule, facts, &names, sites);
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
    causes_first(&mut diagnoses, rules);
    diagnoses.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.rule.cmp(&b.rule)));
    diagnoses
}

/// A confirmed rule that `explains` another confirmed candidate (its cause: a downgraded wheel
/// behind an `undefined symbol`) scores just above it, whatever the symptoms' specificity and
/// the severities say.
/// Chains (a foreign copy behind an unmet pin behind an `undefined symbol`) settle in a few
/// passes; a cycle in `explains` stops there.
fn causes_first(diagnoses: &mut [Diagnosis], rules: &[Rule]) {
    for _ in 0..4 {
        let confirmed: HashMap<String, u32> = diagnoses
            .iter()
            .filter(|d| d.verdict == Verdict::Confirmed)
            .map(|d| (d.rule.clone(), d.score))
            .collect();
        let mut changed = false;
        for d in diagnoses.iter_mut() {
            if d.verdict != Verdict::Confirmed {
                continue;
            }
            let Some(rule) = rules.iter().find(|r| r.id == d.rule) else {
                continue;
            };
            let above = rule
                .explains
                .iter()
                .filter_map(|e| confirmed.get(e))
                .max()
                .map(|s| s + 1);
            if let Some(s) = above.filter(|s| *s > d.score) {
                d.score = s;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// Remarks on the input: empty, not UTF-8, lines cut.
fn input_notes(st: &reader::Stats) -> Vec<String> {
    let mut notes = Vec::new();
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
    notes
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
    use super::confirm::Verdict;
    use super::*;
    use serde_json::json;

    fn shipped() -> crate::rules::RuleSet {
        crate::rules::RuleSet::shipped_with(&[]).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn run(log: &str, facts: &Value) -> Report {
        let set = shipped();
        let index = SymptomIndex::new(set.rules());
        let scan = scan(log.as_bytes(), &index).unwrap_or_else(|e| panic!("{e:?}"));
        diagnose(scan, set.rules(), facts, "test", "test")
    }

    fn verdict<'a>(r: &'a Report, rule: &str) -> &'a Diagnosis {
        r.diagnoses
            .iter()
            .find(|d| d.rule == rule)
            .unwrap_or_else(|| panic!("{rule} not a candidate: {:#?}", r.diagnoses))
    }

    const SM120: &str = "/v/lib/python3.11/site-packages/torch/cuda/__init__.py:287: UserWarning:\nNVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\nRuntimeError: CUDA error: no kernel image is available for execution on the device\n";

    #[test]
    fn an_absent_arch_list_is_not_a_contradiction_and_the_log_supplies_it() {
        // The example: torch known, its compiled architectures absent (--no-load).
        let torch = json!({"frameworks": [{"python": "/v/bin/python", "name": "torch", "version": "2.6.0+cu126", "location": "/v/torch", "wants": []}]});
        let r = run(SM120, &torch);
        let d = verdict(&r, "gpu-arch-not-in-framework-build");
        // The log's GPU (sm_120) and the arch list torch printed decide it.
        assert_eq!(d.verdict, Verdict::Confirmed, "{d:#?}");
        assert!(d.message.contains("12.0"), "{}", d.message);
        // Without the arch list in the log: the missing fact is named, not held against it.
        let short = SM120.lines().take(2).collect::<Vec<_>>().join("\n");
        let r = run(&short, &torch);
        let d = verdict(&r, "gpu-arch-not-in-framework-build");
        assert_eq!(d.verdict, Verdict::Plausible, "{d:#?}");
        assert!(
            d.missing_facts
                .iter()
                .any(|m| m.fact.ends_with("compute_capabilities")),
            "{d:#?}"
        );
        assert!(d.missing_facts[0].how.contains("--no-load"), "{d:#?}");
        // A present arch list that includes sm_120 does contradict it.
        let mut built = torch.clone();
        built["frameworks"][0]["compute_capabilities"] = json!(["sm_90", "sm_100", "sm_120"]);
        let r = run(&short, &built);
        let d = verdict(&r, "gpu-arch-not-in-framework-build");
        assert_eq!(d.verdict, Verdict::RuledOut, "{d:#?}");
        assert!(d.message.contains("compute_capabilities"), "{}", d.message);
    }

    #[test]
    fn an_absent_load_result_is_plausible_not_ruled_out() {
        let log = "OSError: /v/lib/libcusparse.so.12: wrong ELF class: ELFCLASS32\n";
        let lib = json!({"libraries": [{"soname": "libcusparse.so.12", "requester": "/x.so", "resolves": true, "wanted_by": ["torch 2.5.1"]}]});
        let r = run(log, &lib);
        let d = verdict(&r, "library-load-fails");
        assert_eq!(d.verdict, Verdict::Plausible, "{d:#?}");
        assert!(
            d.missing_facts.iter().any(|m| m.fact.contains(".load")),
            "{d:#?}"
        );
        let mut loaded = lib.clone();
        loaded["libraries"][0]["load"] = json!({"status": "ok"});
        let r = run(log, &loaded);
        assert_eq!(verdict(&r, "library-load-fails").verdict, Verdict::RuledOut);
    }

    #[test]
    fn a_version_a_specifier_cannot_order_is_plausible_and_named() {
        let r = crate::rules::compile::Compiler::new(
            "t.yaml",
            "rules:\n  - id: t\n    title: t\n    severity: error\n    scope: interpreter\n    when: {fact: python.package.torch.version, pep440: \">=2.6\"}\n    message: m\n    fix: f\n",
        )
        .compile_file(false)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .remove(0);
        let facts = |v: &str| json!({"pythons": [{"path": "/v/bin/python", "packages": [{"name": "torch", "version": v, "location": "/s"}]}]});
        // A nightly written by a conda build string: no PEP 440 version to order.
        let o = confirm::confirm(&r, &facts("2.9.0.dev20250801 py3.12_cuda12.8_0"), &[], &[]);
        assert_eq!(o.verdict, Verdict::Plausible, "{o:?}");
        assert!(o.message.contains("cannot be ordered"), "{}", o.message);
        assert!(o.missing[0].how.contains("nightly"), "{:?}", o.missing);
        let o = confirm::confirm(&r, &facts("2.4.1"), &[], &[]);
        assert_eq!(o.verdict, Verdict::RuledOut, "{o:?}");
        let o = confirm::confirm(&r, &facts("2.9.0.dev20250801+cu128"), &[], &[]);
        assert_eq!(o.verdict, Verdict::Confirmed, "{o:?}");
    }

    #[test]
    fn the_oom_figures_confirm_memory_held_elsewhere_over_a_later_snapshot() {
        let log = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; 2.42 GiB already allocated; 26.12 MiB free; 2.75 GiB reserved in total by PyTorch)\n";
        // Taken after the failure: the GPU is free again, nobody holds it.
        let later = json!({"collected_at": "2099-01-01T00:00:00Z", "gpus": [{"index": 0, "name": "GeForce RTX 2080 Ti", "visible": true, "memory_total_mib": 11019,
            "live": {"memory_used_mib": 5, "memory_free_mib": 11014, "memory_used_percent": 0.1, "processes": []}}]});
        let r = run(log, &later);
        let d = verdict(&r, "gpu-memory-held-by-other-process");
        assert_eq!(d.verdict, Verdict::Confirmed, "{d:#?}");
        assert!(
            r.notes.iter().any(|n| n.contains("taken from the log")),
            "{:?}",
            r.notes
        );
        assert!(r
            .events
            .iter()
            .any(|e| e.values.get("held_elsewhere_gib") == Some(&json!(7.98))));
    }

    #[test]
    fn the_json_carries_its_format_version_and_explanations() {
        let r = run("ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n", &json!({}));
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(v["format_version"], json!(FORMAT_VERSION));
        assert_eq!(v["events"][0]["kind"], "missing-object");
        assert_eq!(v["events"][0]["values"]["soname"], "libcudnn.so.9");
    }

    #[test]
    fn the_checked_in_diagnose_schema_is_current() {
        crate::schema::assert_current("diagnose.schema.json", &super::json_schema());
    }

    /// The real stderr of torch 2.6 under a downgraded nvidia-nccl-cu12 (the reality matrix's
    /// `nccl-wheel-downgraded` cell), with the interpreter's unmet pin: the pin, which names
    /// the wheel to reinstall, is ranked above the loader mechanisms it explains.
    const NCCL: &str = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n  File \"/v/lib/python3.11/site-packages/torch/__init__.py\", line 405, in <module>\n    from torch._C import *  # noqa: F403\n    ^^^^^^^^^^^^^^^^^^^^^^\nImportError: /v/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister\n";

    fn venv(unmet: Value) -> Value {
        json!({"pythons": [{"path": "/v/bin/python", "sys_path": [{"path": "/v/lib/python3.11/site-packages"}],
            "unmet_requirements": unmet}]})
    }

    #[test]
    fn a_confirmed_cause_ranks_above_the_mechanism_it_explains() {
        let pin = json!([{"package": "torch", "version": "2.6.0", "requirement": "nvidia-nccl-cu12 (==2.21.5)", "required": "nvidia-nccl-cu12", "specifier": "==2.21.5", "installed": "2.18.1"}]);
        let r = run(NCCL, &venv(pin));
        assert_eq!(
            r.diagnoses[0].rule, "framework-nvidia-wheel-version",
            "{:#?}",
            r.diagnoses
        );
        assert_eq!(r.diagnoses[0].verdict, Verdict::Confirmed);
        assert!(
            r.diagnoses[0].message.contains("nvidia-nccl-cu12 2.18.1"),
            "{}",
            r.diagnoses[0].message
        );
        // Without the unmet pin the wheel is ruled out, and no longer first.
        let r = run(NCCL, &venv(json!([])));
        assert_eq!(
            verdict(&r, "framework-nvidia-wheel-version").verdict,
            Verdict::RuledOut
        );
        assert_ne!(r.diagnoses[0].rule, "framework-nvidia-wheel-version");
        // Both a mechanism and its cause confirmed (nvJitLink 12.1 under torch 2.6): the cause
        // first, though the mechanism's symptom is more specific and its severity higher.
        let log = NCCL.replace(
            "libtorch_cuda.so: undefined symbol: ncclCommRegister",
            "../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
        );
        let pin = json!([{"package": "torch", "version": "2.6.0", "requirement": "nvidia-nvjitlink-cu12 (==12.4.127)", "required": "nvidia-nvjitlink-cu12", "specifier": "==12.4.127", "installed": "12.1.105"}]);
        let mut facts = venv(pin);
        facts["libraries"] = json!([{"soname": "libcusparse.so.12", "family": "cusparse", "path": "/v/nvidia/cusparse/lib/libcusparse.so.12",
            "requester": "/v/torch/lib/libtorch_cuda.so", "wanted_by": ["torch 2.6.0"], "resolves": true,
            "missing_symbols": ["libnvJitLink.so.12:__nvJitLinkComplete_12_4@libnvJitLink.so.12"]}]);
        let r = run(&log, &facts);
        assert_eq!(
            verdict(&r, "library-missing-cuda-symbols").verdict,
            Verdict::Confirmed,
            "{:#?}",
            r.diagnoses
        );
        assert_eq!(
            r.diagnoses[0].rule, "framework-nvidia-wheel-version",
            "{:#?}",
            r.diagnoses
        );
    }
}
