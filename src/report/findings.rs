//! `envdoctor check` output, one module per part (this module keeps the names other code uses):
//! the verdict ([`super::verdict`]), the summary ([`super::inventory`]), text
//! ([`super::text`]), JSON ([`super::json`]), Markdown ([`super::markdown`]) and the one-line
//! checkpoint description ([`super::checkpoints`]).

pub use super::checkpoints::summary as checkpoint_summary;
pub use super::json::{CheckReport, FindingOut};
use super::layout::Layout;
use super::style::Style;
pub use super::text::Detail;
pub use super::verdict::{FailOn, Summary};
use crate::rules::Finding;
use crate::Snapshot;

/// JSON: findings, summary and snapshot.
pub fn json(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    super::json::render(findings, summary, snap)
}

/// Text for a person, unwrapped (as when piped).
pub fn text(findings: &[Finding], summary: &Summary, snap: &Snapshot, st: &Style) -> String {
    let lay = Layout::new(None, None, None);
    super::text::render(findings, summary, snap, st, &lay, Detail::default())
}

/// Markdown for a pull-request comment.
pub fn markdown(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    super::markdown::render(findings, summary, snap)
}

/// The JSON Schema of `check --format json`, as checked in at `schema/check.schema.json`.
pub fn json_schema() -> String {
    super::json::schema()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Evidence, Severity};

    #[test]
    fn the_checked_in_check_schema_is_current() {
        crate::schema::assert_current("check.schema.json", &json_schema());
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
        let t = text(&fs, &sum, &snap, &Style { color: false });
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
        let m = markdown(&fs, &sum, &snap);
        assert!(m.contains("GPU 0 \\| busy"), "{m}");
        assert!(
            m.starts_with("## envdoctor check: ✅ 0 errors, 1 warning, 0 info"),
            "{m}"
        );
    }
}
