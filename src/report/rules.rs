//! `rules list` and `rules test` output: one line per rule (id, severity, scope, title) or a JSON
//! array, and the inline-test results with their count.

use crate::rules::{RuleSet, Severity, TestResult};
use serde::Serialize;

/// Version of the `rules list --format json` format ([`RuleList::format_version`]): bumped with
/// every change of `schema/rules-list.schema.json` (recorded in `schema/VERSIONS`).
pub const FORMAT_VERSION: u32 = 1;

/// One rule as `rules list --format json` writes it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct RuleOut<'a> {
    /// The stable id.
    pub id: &'a str,
    /// error | warning | info.
    pub severity: Severity,
    /// What it is evaluated for (`machine`, `interpreter`, `gpu`, `library`, `framework`,
    /// `checkpoint`).
    pub scope: &'static str,
    /// The title.
    pub title: &'a str,
    /// The file it was loaded from (`rules/python.yaml` for shipped rules).
    pub file: &'a str,
    /// 1-based line of its `id` there.
    pub line: u64,
    /// Whether it ships inside envdoctor.
    pub shipped: bool,
    /// The fact paths its condition reads.
    pub facts: Vec<String>,
}

/// The JSON document `rules list --format json` prints (`schema/rules-list.schema.json`).
#[derive(Serialize, schemars::JsonSchema)]
pub struct RuleList<'a> {
    /// Version of this format ([`FORMAT_VERSION`]).
    pub format_version: u32,
    /// The envdoctor that wrote it.
    pub envdoctor_version: &'static str,
    /// Every rule, in evaluation order.
    pub rules: Vec<RuleOut<'a>>,
}

/// `rules list` as JSON: the format version and one object per rule.
pub fn list_json(set: &RuleSet) -> String {
    let list = RuleList {
        format_version: FORMAT_VERSION,
        envdoctor_version: env!("CARGO_PKG_VERSION"),
        rules: set
            .rules()
            .iter()
            .map(|r| RuleOut {
                id: &r.id,
                severity: r.severity,
                scope: r.scope.as_str(),
                title: &r.title,
                file: &r.origin.file,
                line: r.origin.line,
                shipped: r.origin.shipped,
                facts: r.when.facts(),
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&list).unwrap_or_default();
    s.push('\n');
    s
}

/// The JSON Schema of `rules list --format json` (`schema/rules-list.schema.json`).
pub fn list_json_schema() -> String {
    crate::schema::render_output::<RuleList<'static>>()
}

/// `rules list` as a Markdown table (id, severity, scope, title), the count last.
pub fn list_markdown(set: &RuleSet) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut s = String::from("| rule | severity | scope | title |\n|---|---|---|---|\n");
    for r in set.rules() {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            r.id,
            r.severity.as_str(),
            r.scope.as_str(),
            cell(&r.title)
        ));
    }
    s.push_str(&format!("\n{} rules\n", set.rules().len()));
    s
}

/// `rules list` as text: aligned columns, the count last. On a terminal narrower than a row,
/// each rule is its id, then severity, scope and title wrapped below it.
pub fn list_text(set: &RuleSet, lay: &super::layout::Layout) -> String {
    let w = set.rules().iter().map(|r| r.id.len()).max().unwrap_or(0);
    let widest = set
        .rules()
        .iter()
        .map(|r| w + 2 + 7 + 2 + 11 + 2 + r.title.chars().count())
        .max()
        .unwrap_or(0);
    let stacked = lay.width.is_some_and(|width| widest > width);
    let mut s = String::new();
    for r in set.rules() {
        if stacked {
            s.push_str(&format!("{}\n", r.id));
            let text = format!("{} {}: {}", r.severity.as_str(), r.scope.as_str(), r.title);
            for l in lay.wrap("    ", "    ", &text) {
                s.push_str(&format!("{l}\n"));
            }
            continue;
        }
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

/// `envdoctor rules facts [PREFIX]`: every fact path starting with `prefix`, one per line with
/// its kind and description, for rule authors.
pub fn facts_text(paths: &[crate::rules::path::FactPath], prefix: &str) -> String {
    let mut s = String::new();
    for f in paths.iter().filter(|f| f.path.starts_with(prefix)) {
        s.push_str(&f.path);
        s.push_str("  (");
        s.push_str(&f.kind);
        s.push(')');
        if !f.description.is_empty() {
            s.push_str("  ");
            s.push_str(&f.description);
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleSet;

    #[test]
    fn the_checked_in_rules_list_schema_is_current() {
        crate::schema::assert_current("rules-list.schema.json", &super::list_json_schema());
    }

    #[test]
    fn markdown_is_a_table_with_a_row_per_rule() {
        let set = RuleSet::shipped_with(&[]).unwrap();
        let md = super::list_markdown(&set);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| `")).collect();
        assert_eq!(rows.len(), set.rules().len());
        assert!(
            md.starts_with("| rule | severity | scope | title |\n|---|"),
            "{md}"
        );
        // Every row has its four cells (a `|` in a title is escaped).
        for row in rows {
            let cells = row.replace("\\|", "").matches('|').count();
            assert_eq!(cells, 5, "{row}");
        }
    }
}
