//! `check --format sarif`: the findings as a SARIF 2.1.0 log, for code-scanning dashboards
//! (GitHub code scanning, GitLab, Azure DevOps, SonarQube imports).
//!
//! One run; `tool.driver.rules` holds every rule evaluated (its title, the `envdoctor explain`
//! text as help, its first reference as `helpUri`); each finding is a result with its rule, level
//! (`error`, `warning`, `note`), message (with the fix), and a location: the file behind the
//! subject where there is one (interpreter, library, checkpoint, framework), else the subject as
//! a logical location. Probe problems are tool-execution notifications of the invocation.
//!
//! Files inside the project directory (a project venv's interpreter, a checkpoint in the
//! repository) are written relative to `%SRCROOT%`, which `originalUriBaseIds` maps to the
//! project, so code-scanning services can place them in the repository; other files are
//! absolute `file://` URIs.

use super::locate::subject_file;
use crate::rules::{Finding, Rule, Severity};
use crate::Snapshot;
use serde_json::{json, Map, Value};
use std::path::Path;

/// The schema URI written in `$schema` (the OASIS errata 01 text).
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// SARIF's name for a severity.
pub fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The base id relative locations use.
pub const SRCROOT: &str = "%SRCROOT%";

/// The SARIF log of one `check`: `rules` are those evaluated, `findings` what they found,
/// `project` the project directory (a machine path) when there is one.
pub fn render(
    rules: &[Rule],
    findings: &[Finding],
    snap: &Snapshot,
    project: Option<&Path>,
) -> String {
    let mut s =
        serde_json::to_string_pretty(&log(rules, findings, snap, project)).unwrap_or_else(|e| {
            format!("{{\"error\": \"envdoctor could not serialise the SARIF log: {e}\"}}")
        });
    s.push('\n');
    s
}

/// The SARIF log as JSON.
pub fn log(rules: &[Rule], findings: &[Finding], snap: &Snapshot, project: Option<&Path>) -> Value {
    let base = project.and_then(|p| url::Url::from_directory_path(p).ok());
    let descriptors: Vec<Value> = rules.iter().map(descriptor).collect();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            result(
                f,
                rules.iter().position(|r| r.id == f.rule),
                snap,
                base.as_ref(),
            )
        })
        .collect();
    let notifications: Vec<Value> = snap
        .probe_errors
        .iter()
        .map(|p| {
            let mut n = json!({
                "level": "warning",
                "message": {"text": format!("{} probe: {}", p.probe, p.message)},
                "descriptor": {"id": format!("probe/{}", p.probe)},
            });
            if let Some(loc) = p.path.as_deref().and_then(|f| physical(f, base.as_ref())) {
                n["locations"] = json!([loc]);
            }
            n
        })
        .collect();
    let mut run = json!({
            "tool": {"driver": {
                "name": "envdoctor",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "informationUri": env!("CARGO_PKG_REPOSITORY"),
                "rules": descriptors,
            }},
            "invocations": [{
                "executionSuccessful": true,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
            "properties": {
                "collected_at": snap.collected_at,
                "hostname": snap.host.hostname,
                "root": snap.root,
            },
    });
    if let Some(b) = &base {
        run["originalUriBaseIds"] = json!({SRCROOT: {"uri": super::escape::uri_path(b.as_str())}});
    }
    json!({"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]})
}

/// `tool.driver.rules[]`: a reportingDescriptor for one rule.
fn descriptor(r: &Rule) -> Value {
    let help = super::explain::render(r);
    let mut d = json!({
        "id": r.id,
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.explain.why.as_deref().map(str::trim).unwrap_or(&r.title)},
        "help": {"text": help, "markdown": help},
        "defaultConfiguration": {"level": level(r.severity)},
        "properties": {"tags": ["envdoctor", r.scope.as_str()], "references": r.references},
    });
    if let Some(uri) = r.references.iter().find(|u| url::Url::parse(u).is_ok()) {
        d["helpUri"] = json!(uri);
    }
    d
}

fn result(
    f: &Finding,
    rule_index: Option<usize>,
    snap: &Snapshot,
    base: Option<&url::Url>,
) -> Value {
    let mut r = Map::new();
    r.insert("ruleId".into(), json!(f.rule));
    if let Some(i) = rule_index {
        r.insert("ruleIndex".into(), json!(i));
    }
    r.insert("level".into(), json!(level(f.severity)));
    // The same rule on the same subject is the same alert from run to run (code scanning
    // cannot fingerprint files outside the repository by their content).
    let key = format!("{}\0{}", f.rule, f.subject.as_deref().unwrap_or(""));
    r.insert(
        "partialFingerprints".into(),
        json!({"envdoctorSubject/v1": format!("{:016x}", fnv1a(&key))}),
    );
    r.insert(
        "message".into(),
        json!({"text": format!("{}\nFix: {}", f.message, f.fix)}),
    );
    let location = match &f.subject {
        Some(subject) => match subject_file(snap, subject)
            .as_deref()
            .and_then(|p| physical(p, base))
        {
            Some(mut loc) => {
                loc["logicalLocations"] = json!([{"fullyQualifiedName": subject}]);
                Some(loc)
            }
            None => Some(json!({"logicalLocations": [{"fullyQualifiedName": subject}]})),
        },
        None => None,
    };
    if let Some(loc) = location {
        r.insert("locations".into(), json!([loc]));
    }
    let evidence: Map<String, Value> = f
        .evidence
        .iter()
        .map(|e| (e.path.clone(), e.value.clone()))
        .collect();
    r.insert(
        "properties".into(),
        json!({
            "title": f.title,
            "subject": f.subject,
            "fix": f.fix,
            "evidence": evidence,
            "references": f.references,
        }),
    );
    Value::Object(r)
}

/// FNV-1a 64: a stable hash (std's hasher may change between releases).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A location naming a file: relative to [`SRCROOT`] when it is inside `base`, else by its
/// `file://` URI (machine paths are absolute).
fn physical(path: &str, base: Option<&url::Url>) -> Option<Value> {
    let uri = url::Url::from_file_path(path).ok()?;
    let inside = base.and_then(|b| {
        uri.as_str()
            .starts_with(b.as_str())
            .then(|| b.make_relative(&uri))
            .flatten()
    });
    let artifact = match inside {
        Some(rel) if !rel.is_empty() => {
            json!({"uri": super::escape::uri_path(&rel), "uriBaseId": SRCROOT})
        }
        _ => json!({"uri": super::escape::uri_path(uri.as_str())}),
    };
    Some(json!({"physicalLocation": {"artifactLocation": artifact}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_sarif_names() {
        assert_eq!(level(Severity::Error), "error");
        assert_eq!(level(Severity::Warning), "warning");
        assert_eq!(level(Severity::Info), "note");
    }

    #[test]
    fn fingerprints_are_stable() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn file_uris_are_percent_encoded() {
        let loc = physical("/home/a b/proj/.venv/bin/python", None).unwrap();
        assert_eq!(
            loc["physicalLocation"]["artifactLocation"]["uri"],
            "file:///home/a%20b/proj/.venv/bin/python"
        );
        assert!(physical("relative/path", None).is_none());
        // RFC 3986 has no `[`, `]` or `|` in a path (issue 30); `url` leaves them.
        let loc = physical("/home/u/runs/[1]|x.pt", None).unwrap();
        assert_eq!(
            loc["physicalLocation"]["artifactLocation"]["uri"],
            "file:///home/u/runs/%5B1%5D%7Cx.pt"
        );
        let base = url::Url::from_directory_path("/home/u").unwrap();
        let loc = physical("/home/u/runs/[a].pt", Some(&base)).unwrap();
        assert_eq!(
            loc["physicalLocation"]["artifactLocation"]["uri"],
            "runs/%5Ba%5D.pt"
        );
    }

    #[test]
    fn files_in_the_project_are_relative_to_srcroot() {
        let base = url::Url::from_directory_path("/home/a b/proj").unwrap();
        let loc = physical("/home/a b/proj/runs/m 1.pt", Some(&base)).unwrap();
        assert_eq!(
            loc["physicalLocation"]["artifactLocation"],
            json!({"uri": "runs/m%201.pt", "uriBaseId": "%SRCROOT%"})
        );
        // A sibling directory sharing the prefix is outside.
        let loc = physical("/home/a b/project2/x", Some(&base)).unwrap();
        assert_eq!(
            loc["physicalLocation"]["artifactLocation"],
            json!({"uri": "file:///home/a%20b/project2/x"})
        );
    }
}
