//! Matching log lines against every rule's symptoms in one pass, and extracting error events
//! (exception type and message, the library, symbol, op and versions a line names).
//!
//! Distinct symptom regexes are compiled once into a [`RegexSet`] (byte-oriented, ASCII classes,
//! so a line that is not UTF-8 still matches); a single alternation of all of them plus the
//! exception-line pattern screens each line, and only lines that pass are run through the set.

use crate::rules::compile::Rule;
use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Who wrote a distinct regex: (rule index, specificity).
type Owners = Vec<(usize, u8)>;

/// Every symptom of a rule set, compiled for matching.
pub struct SymptomIndex {
    screen: Regex,
    set: RegexSet,
    patterns: Vec<String>,
    owners: Vec<Owners>,
}

/// A symptom that matched a line.
#[derive(Clone, Debug)]
pub struct Hit {
    /// The rule's index in the rule set.
    pub rule: usize,
    /// The regex as written.
    pub pattern: usize,
    /// Its specificity for that rule.
    pub specificity: u8,
}

impl SymptomIndex {
    /// Compile the symptoms of `rules`. A regex the byte engine refuses is skipped (rule
    /// compilation has already validated it as text).
    pub fn new(rules: &[Rule]) -> SymptomIndex {
        let mut by_text: HashMap<&str, usize> = HashMap::new();
        let mut patterns: Vec<String> = Vec::new();
        let mut owners: Vec<Owners> = Vec::new();
        for (ri, r) in rules.iter().enumerate() {
            for (si, s) in r.symptoms.iter().enumerate() {
                if build(s).is_none() {
                    continue;
                }
                let spec = r.symptom_specificity.get(si).copied().unwrap_or(2);
                let i = *by_text.entry(s.as_str()).or_insert_with(|| {
                    patterns.push(s.clone());
                    owners.push(Vec::new());
                    patterns.len() - 1
                });
                if !owners[i].iter().any(|(r, _)| *r == ri) {
                    owners[i].push((ri, spec));
                }
            }
        }
        let set = RegexSetBuilder::new(&patterns)
            .unicode(false)
            .size_limit(64 << 20)
            .build()
            .unwrap_or_else(|_| RegexSet::empty());
        let mut alt: Vec<String> = patterns.iter().map(|p| format!("(?:{p})")).collect();
        // Exception lines, led by a literal (so the whole alternation keeps a literal
        // prefilter); the exact shape is checked per line by `event`.
        alt.push(
            r"(?:(?:Error|Exception|Exit|Failure)(?::\s|:$|$)|Traceback \(most recent call last\))"
                .into(),
        );
        // Traceback frames name the interpreter that ran (its site-packages).
        alt.push(r#"(?:File "/[^"]*-packages/)"#.into());
        // The log reader's event families (their group names dropped: one alternation).
        let unnamed =
            regex::Regex::new(r"\(\?P<\w+>").unwrap_or_else(|e| unreachable!("fixed: {e}"));
        for p in super::logfacts::patterns() {
            alt.push(format!("(?:{})", unnamed.replace_all(p, "(?:")));
        }
        let screen = RegexBuilder::new(&alt.join("|"))
            .unicode(false)
            .multi_line(true)
            .crlf(true)
            .size_limit(64 << 20)
            .build()
            .unwrap_or_else(|_| {
                Regex::new(r"(?:Error|Exception)").unwrap_or_else(|e| unreachable!("fixed: {e}"))
            });
        SymptomIndex {
            screen,
            set,
            patterns,
            owners,
        }
    }

    /// Whether the line could be an event (a symptom or an exception line); cheap.
    pub fn screen(&self, line: &[u8]) -> bool {
        self.screen.is_match(line)
    }

    /// The screening regex (multi-line), for [`super::reader::for_each_candidate`].
    pub fn screen_regex(&self) -> &Regex {
        &self.screen
    }

    /// The symptoms that match `line`, one [`Hit`] per (rule, regex).
    pub fn hits(&self, line: &[u8]) -> Vec<Hit> {
        let mut out = Vec::new();
        for p in self.set.matches(line).iter() {
            for &(rule, specificity) in &self.owners[p] {
                out.push(Hit {
                    rule,
                    pattern: p,
                    specificity,
                });
            }
        }
        out
    }

    /// The regex text of pattern `i`.
    pub fn pattern(&self, i: usize) -> &str {
        &self.patterns[i]
    }

    /// Every distinct regex (for the benchmark's `grep -E` comparison).
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

fn build(p: &str) -> Option<Regex> {
    RegexBuilder::new(p).unicode(false).build().ok()
}

/// One error event read from a log line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Event {
    /// 1-based line number in the log.
    pub line: u64,
    /// The line, without ANSI colour, timestamp and logger prefix.
    pub text: String,
    /// The exception type, for a Python exception line (`_pickle.UnpicklingError`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// The exception's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The shared library the line names (`libcusolver.so.10`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// The symbol it names (`__nvJitLinkComplete_12_4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The TensorFlow op it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// Version strings it names (`GLIBCXX_3.4.30`, `2.6`, `8.9.2`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// The kind of event the log reader recognised on the line (`oom`, `missing-object`, …;
    /// see `log.events[]` in the rule language).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The values it read (`soname`, `held_elsewhere_gib`, `compute_capability`, …).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub values: serde_json::Map<String, serde_json::Value>,
    /// Whether some rule's symptom matched the line.
    pub matched: bool,
}

struct Extract {
    prefix: regex::Regex,
    exception: regex::Regex,
    library: regex::Regex,
    symbol: regex::Regex,
    op: regex::Regex,
    version: regex::Regex,
}

fn extract() -> &'static Extract {
    static X: OnceLock<Extract> = OnceLock::new();
    X.get_or_init(|| {
        let re = |s: &str| regex::Regex::new(s).unwrap_or_else(|e| unreachable!("fixed: {e}"));
        Extract {
            // ISO/Python-logging timestamps, absl/glog `W0102 03:04:05.678 123 file.cc:12]`,
            // TF `2021-01-01 12:00:00.123: W tensorflow/x.cc:60]`, `[rank0]:`, `INFO:root:`.
            prefix: re(concat!(
                r"^(?:\s*(?:\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?:?",
                r"|[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+[\w./-]+:\d+\]",
                r"|[IWEF] [\w./-]+:\d+\]",
                r"|\[rank\d+\]:",
                r"|(?:INFO|WARNING|ERROR|CRITICAL|DEBUG):[\w.]*:",
                r")\s*)+"
            )),
            exception: re(
                r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Failure))(?::\s*(.*))?$",
            ),
            library: re(r"\b(lib[\w+.-]*?\.so(?:\.\d+)*)\b"),
            symbol: re(r"(?:undefined symbol:|Cannot load symbol|symbol lookup error: .*?: undefined symbol:)\s*([\w@.]+)"),
            op: re(r"Op type not registered '(\w+)'"),
            version: re(r"\b((?:GLIBC|GLIBCXX|CXXABI)_[\d.]*\d|\d+\.\d+(?:\.\d+){0,2})\b"),
        }
    })
}

/// The `site-packages` (or `dist-packages`) directory a traceback frame line names.
pub fn site_dir(text: &str) -> Option<&str> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r#"File "(/[^"]*?/(?:site|dist)-packages)/"#)
            .unwrap_or_else(|e| unreachable!("fixed: {e}"))
    });
    re.captures(text).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// Remove a logger prefix (timestamp, absl/TF location, rank) from the start of `line`.
pub fn strip_prefix(line: &str) -> &str {
    match extract().prefix.find(line) {
        Some(m) => &line[m.end()..],
        None => line,
    }
    .trim_end()
}

/// The event a line describes.
pub fn event(line_no: u64, text: &str, matched: bool) -> Event {
    let x = extract();
    let text = strip_prefix(text);
    let mut ev = Event {
        line: line_no,
        text: text.chars().take(2000).collect(),
        matched,
        ..Event::default()
    };
    if let Some(c) = x.exception.captures(text) {
        ev.exception = c.get(1).map(|m| m.as_str().to_string());
        ev.message = c
            .get(2)
            .map(|m| m.as_str().chars().take(2000).collect())
            .filter(|m: &String| !m.is_empty());
    }
    ev.library = x.library.captures(text).map(|c| c[1].to_string());
    ev.symbol = x.symbol.captures(text).map(|c| c[1].to_string());
    ev.op = x.op.captures(text).map(|c| c[1].to_string());
    let lib = ev.library.clone().unwrap_or_default();
    for c in x.version.captures_iter(text).take(8) {
        let v = c[1].to_string();
        // A version inside the soname is the soname's, not a separate fact.
        if !lib.contains(&v) && !ev.versions.contains(&v) {
            ev.versions.push(v);
        }
    }
    ev
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_stripped_and_parts_extracted() {
        let e = event(
            7,
            "2021-01-04 10:00:01.123456: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'libcusolver.so.10'; dlerror: libcusolver.so.10: cannot open shared object file: No such file or directory",
            true,
        );
        assert!(
            e.text.starts_with("Could not load dynamic library"),
            "{}",
            e.text
        );
        assert_eq!(e.library.as_deref(), Some("libcusolver.so.10"));
        let e = event(
            1,
            "[rank0]: ImportError: /x/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12",
            true,
        );
        assert_eq!(e.exception.as_deref(), Some("ImportError"));
        assert_eq!(e.symbol.as_deref(), Some("__nvJitLinkComplete_12_4"));
        assert_eq!(e.library.as_deref(), Some("libcusparse.so.12"));
        let e = event(
            2,
            "E0102 03:04:05.678901  1234 cuda_dnn.cc:535] Loaded runtime CuDNN library: 8.9.4 but source was compiled with: 8.9.6.",
            true,
        );
        assert!(e.text.starts_with("Loaded runtime"), "{}", e.text);
        assert_eq!(e.versions, vec!["8.9.4", "8.9.6"]);
        let e = event(
            3,
            "_pickle.UnpicklingError: Weights only load failed.",
            true,
        );
        assert_eq!(e.exception.as_deref(), Some("_pickle.UnpicklingError"));
        assert_eq!(e.message.as_deref(), Some("Weights only load failed."));
        assert_eq!(
            site_dir(
                r#"  File "/v/lib/python3.11/site-packages/torch/serialization.py", line 1615, in load"#
            ),
            Some("/v/lib/python3.11/site-packages")
        );
        assert_eq!(site_dir(r#"  File "<string>", line 1"#), None);
    }
}
