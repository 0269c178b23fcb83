//! `rules list` and `rules test` output: one line per rule (id, severity, scope, title) or a JSON
//! array, and the inline-test results with their count.

use crate::rules::{RuleSet, TestResult};

/// `rules list` as JSON: one object per rule.
pub fn list_json(set: &RuleSet) -> String {
    let list: Vec<serde_json::Value> = set
        .rules()
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id, "severity": r.severity, "scope": r.scope.as_str(),
                "title": r.title, "file": r.origin.file, "line": r.origin.line,
                "shipped": r.origin.shipped, "facts": r.when.facts(),
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&list).unwrap_or_default();
    s.push('\n');
    s
}

/// `rules list` as text: aligned columns, the count last.
pub fn list_text(set: &RuleSet) -> String {
    let w = set.rules().iter().map(|r| r.id.len()).max().unwrap_or(0);
    let mut s = String::new();
    for r in set.rules() {
        s.push_str(&format!(
            "{:<w$}  {:<7}  {:<11}  {}\n",
            r.id,
            r.severity.as_str(),
            r.scope.as_str(),
            r.title
        ));
    }
    s.push_str(&format!("{} rules\n", set.rules().len()));
    s
}

/// `rules test`: one line per test (`ok` or `FAIL` with why), then the counts.
pub fn test_text(set: &RuleSet, results: &[TestResult]) -> String {
    let mut s = String::new();
    let failed = results.iter().filter(|r| r.failure.is_some()).count();
    for r in results {
        match &r.failure {
            None => s.push_str(&format!("ok    {} / {}\n", r.rule, r.name)),
            Some(why) => s.push_str(&format!(
                "FAIL  {} / {} ({}:{})\n      {why}\n",
                r.rule, r.name, r.file, r.line
            )),
        }
    }
    s.push_str(&format!(
        "\n{} rules, {} tests: {} passed, {} failed\n",
        set.rules().len(),
        results.len(),
        results.len() - failed,
        failed
    ));
    s
}
