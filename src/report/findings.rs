//! `envdoctor check` output: findings as text for a person (grouped by severity, each with its
//! evidence and fix, a one-line verdict at the end), as JSON (findings + the snapshot they came
//! from), or as Markdown for a pull-request comment.

use super::style::Style;
use crate::rules::template::display_value;
use crate::rules::{Finding, Severity};
use crate::snapshot::Checkpoint;
use crate::Snapshot;
use serde::Serialize;

/// When `check` fails: findings at or above this severity (never: always exit 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// Errors fail the run.
    Error,
    /// Errors and warnings fail the run.
    Warning,
    /// Nothing fails the run.
    Never,
}

impl FailOn {
    /// Whether a finding of this severity fails the run.
    pub fn fails(self, s: Severity) -> bool {
        match self {
            FailOn::Error => s == Severity::Error,
            FailOn::Warning => s >= Severity::Warning,
            FailOn::Never => false,
        }
    }
}

/// Counts per severity, and the verdict.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Summary {
    /// Error findings.
    pub errors: usize,
    /// Warning findings.
    pub warnings: usize,
    /// Info findings.
    pub info: usize,
    /// Probe problems recorded in the snapshot.
    pub probe_errors: usize,
    /// The threshold.
    pub fail_on: FailOn,
    /// Whether some finding is at or above it (exit 1).
    pub failed: bool,
}

impl Summary {
    /// Count `findings` against `fail_on`.
    pub fn of(findings: &[Finding], snap: &Snapshot, fail_on: FailOn) -> Summary {
        let count = |s| findings.iter().filter(|f| f.severity == s).count();
        Summary {
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            info: count(Severity::Info),
            probe_errors: snap.probe_errors.len(),
            fail_on,
            failed: findings.iter().any(|f| fail_on.fails(f.severity)),
        }
    }

    /// `2 errors, 1 warning, 3 info`.
    pub fn counts(&self) -> String {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        format!(
            "{}, {}, {} info",
            plural(self.errors, "error"),
            plural(self.warnings, "warning"),
            self.info
        )
    }
}

/// The JSON document `check --format json` prints (`schema/check.schema.json`).
#[derive(Serialize, schemars::JsonSchema)]
pub struct CheckReport<'a> {
    /// The envdoctor that wrote it.
    pub envdoctor_version: &'static str,
    /// Counts and verdict.
    pub summary: &'a Summary,
    /// The findings, most severe first.
    pub findings: &'a [Finding],
    /// The facts they were drawn from.
    pub snapshot: &'a Snapshot,
}

/// JSON: findings, summary and snapshot.
pub fn json(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    let report = CheckReport {
        envdoctor_version: env!("CARGO_PKG_VERSION"),
        summary,
        findings,
        snapshot: snap,
    };
    let mut s = serde_json::to_string_pretty(&report).unwrap_or_else(|e| {
        format!("{{\"error\": \"envdoctor could not serialise the report: {e}\"}}")
    });
    s.push('\n');
    s
}

fn severity_label(st: &Style, s: Severity) -> String {
    match s {
        Severity::Error => st.error("error"),
        Severity::Warning => st.warning("warning"),
        Severity::Info => st.info("info"),
    }
}

/// Text for a person.
pub fn text(findings: &[Finding], summary: &Summary, snap: &Snapshot, st: &Style) -> String {
    let mut out = String::new();
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        let group: Vec<&Finding> = findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        let heading = match sev {
            Severity::Error => "Errors",
            Severity::Warning => "Warnings",
            Severity::Info => "Info",
        };
        out.push_str(&st.bold(&format!("{heading} ({})", group.len())));
        out.push_str("\n\n");
        for f in group {
            out.push_str(&format!(
                "{} {} {}\n",
                severity_label(st, f.severity),
                st.bold(&format!("[{}]", f.rule)),
                f.title
            ));
            if let Some(s) = &f.subject {
                out.push_str(&format!("  {} {s}\n", st.dim("for:")));
            }
            for line in wrap(&f.message, 96) {
                out.push_str(&format!("  {line}\n"));
            }
            if !f.evidence.is_empty() {
                out.push_str(&format!("  {}\n", st.dim("evidence:")));
                for e in f.evidence.iter().take(12) {
                    let v = if e.value.is_null() {
                        "(absent)".to_string()
                    } else {
                        shorten(&display_value(&e.value), 120)
                    };
                    out.push_str(&format!("    {} = {v}\n", e.path));
                }
                if f.evidence.len() > 12 {
                    out.push_str(&format!("    … {} more\n", f.evidence.len() - 12));
                }
            }
            out.push_str(&format!("  {} {}\n", st.good("fix:"), f.fix));
            for r in &f.references {
                out.push_str(&format!("  {} {r}\n", st.dim("see:")));
            }
            out.push('\n');
        }
    }
    if !snap.checkpoints.is_empty() {
        out.push_str(&st.bold(&format!("Checkpoints ({})", snap.checkpoints.len())));
        out.push('\n');
        for c in snap.checkpoints.iter().take(20) {
            out.push_str(&format!("  {}\n    {}\n", c.path, checkpoint_summary(c)));
        }
        if snap.checkpoints.len() > 20 {
            out.push_str(&format!(
                "  … {} more (envdoctor snapshot shows them all)\n",
                snap.checkpoints.len() - 20
            ));
        }
        out.push('\n');
    }
    if !snap.probe_errors.is_empty() {
        out.push_str(&st.bold(&format!(
            "Probe problems ({}): facts that could not be read",
            snap.probe_errors.len()
        )));
        out.push('\n');
        for p in snap.probe_errors.iter().take(10) {
            match &p.path {
                Some(path) => out.push_str(&format!("  {}: {path}: {}\n", p.probe, p.message)),
                None => out.push_str(&format!("  {}: {}\n", p.probe, p.message)),
            }
        }
        if snap.probe_errors.len() > 10 {
            out.push_str(&format!(
                "  … {} more (envdoctor snapshot shows them all)\n",
                snap.probe_errors.len() - 10
            ));
        }
        out.push('\n');
    }
    let scope = format!(
        "{} interpreter{}, {} GPU{}, {} librar{}, {} checkpoint{}",
        snap.pythons.len(),
        if snap.pythons.len() == 1 { "" } else { "s" },
        snap.gpus.len(),
        if snap.gpus.len() == 1 { "" } else { "s" },
        snap.libraries.len(),
        if snap.libraries.len() == 1 {
            "y"
        } else {
            "ies"
        },
        snap.checkpoints.len(),
        if snap.checkpoints.len() == 1 { "" } else { "s" },
    );
    let verdict = if summary.failed {
        st.error(&format!(
            "FAIL: {} (checked {scope}); failing on {}",
            summary.counts(),
            fail_on_text(summary.fail_on)
        ))
    } else if findings.is_empty() {
        st.good(&format!("OK: nothing found (checked {scope})"))
    } else {
        st.good(&format!(
            "OK: {} (checked {scope}); none at or above {}",
            summary.counts(),
            fail_on_text(summary.fail_on)
        ))
    };
    out.push_str(&verdict);
    out.push('\n');
    out
}

/// One line on what a checkpoint is: format, producer, and the facts that decide who can load it.
pub fn checkpoint_summary(c: &Checkpoint) -> String {
    let mut parts: Vec<String> = vec![c.format.clone()];
    match (&c.producer, &c.producer_version) {
        (Some(p), Some(v)) => parts.push(format!("written by {p} {v}")),
        (Some(p), None) => parts.push(format!("{p} (no version recorded)")),
        _ => {}
    }
    if let Some(e) = &c.error {
        parts.push(format!("unreadable: {e}"));
    }
    if let Some(t) = &c.tf {
        parts.push(format!(
            "{} tensors in {} shard{}",
            t.tensor_count,
            t.num_shards,
            if t.num_shards == 1 { "" } else { "s" }
        ));
        parts.push(if t.object_based {
            "object-based (TF2 tf.train.Checkpoint)".into()
        } else {
            "name-based (TF1 Saver)".into()
        });
        if !t.scopes.is_empty() {
            parts.push(format!("scopes {}", t.scopes.join(", ")));
        }
        if let Some(era) = &t.rnn_key_naming {
            parts.push(format!("RNN names {era}"));
        }
        if !t.optimizer_slots.is_empty() {
            parts.push(format!("optimizer slots {}", t.optimizer_slots.join(", ")));
        }
    }
    if let Some(st) = &c.tf_state {
        if let Some(l) = &st.latest {
            parts.push(format!(
                "latest {l}{}",
                st.latest_family
                    .as_ref()
                    .map(|f| format!(" ({f})"))
                    .unwrap_or_default()
            ));
        }
        if st.mixed_families {
            parts.push(format!("families {}", st.families.join(", ")));
        }
    }
    if let Some(sm) = &c.saved_model {
        if !sm.tags.is_empty() {
            parts.push(format!("tags {}", sm.tags.join(", ")));
        }
        if !sm.custom_layers.is_empty() {
            parts.push(format!("custom layers {}", sm.custom_layers.join(", ")));
        }
    }
    if let Some(k) = &c.keras {
        if let Some(b) = &k.backend {
            parts.push(format!("backend {b}"));
        }
        if !k.custom_layers.is_empty() {
            parts.push(format!("custom layers {}", k.custom_layers.join(", ")));
        }
    }
    if let Some(t) = &c.torch {
        parts.push(if t.zip {
            "zip format (torch >= 1.6)".into()
        } else {
            "legacy format".into()
        });
        parts.push(format!("{} storages", t.storage_count));
        if !t.storage_locations.is_empty() {
            parts.push(format!("on {}", t.storage_locations.join(", ")));
        }
        if t.needs_weights_only_false {
            parts.push(format!(
                "needs weights_only=False for {}",
                t.unsafe_globals.join(", ")
            ));
        }
    }
    if let Some(sf) = &c.safetensors {
        parts.push(format!(
            "{} tensors ({})",
            sf.tensor_count,
            sf.dtypes.join(", ")
        ));
    }
    if let Some(h) = &c.hf {
        if !h.architectures.is_empty() {
            parts.push(h.architectures.join(", "));
        }
        if let Some(d) = &h.torch_dtype {
            parts.push(d.clone());
        }
    }
    if let Some(o) = &c.onnx {
        if let Some(ir) = o.ir_version {
            parts.push(format!("ONNX IR {ir}"));
        }
        if let Some(p) = &o.producer_name {
            parts.push(format!(
                "from {p} {}",
                o.producer_version.as_deref().unwrap_or("")
            ));
        }
    }
    parts.join("; ")
}

fn fail_on_text(f: FailOn) -> &'static str {
    match f {
        FailOn::Error => "errors",
        FailOn::Warning => "warnings",
        FailOn::Never => "nothing (--fail-on never)",
    }
}

/// Markdown for a pull-request comment.
pub fn markdown(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    let mut out = format!(
        "## envdoctor check: {} {}\n\n",
        if summary.failed { "❌" } else { "✅" },
        summary.counts()
    );
    if findings.is_empty() {
        out.push_str(&format!(
            "Nothing found ({} interpreters, {} GPUs, {} libraries, {} checkpoints checked).\n",
            snap.pythons.len(),
            snap.gpus.len(),
            snap.libraries.len(),
            snap.checkpoints.len()
        ));
        return out;
    }
    out.push_str("| severity | rule | for | finding |\n|---|---|---|---|\n");
    for f in findings {
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            f.severity.as_str(),
            f.rule,
            md_cell(f.subject.as_deref().unwrap_or("machine")),
            md_cell(&f.message)
        ));
    }
    out.push('\n');
    for f in findings {
        out.push_str(&format!(
            "<details><summary><code>{}</code>: {}</summary>\n\n",
            f.rule,
            html_escape(&f.title)
        ));
        out.push_str(&format!("{}\n\n", f.message));
        if !f.evidence.is_empty() {
            out.push_str("Evidence:\n\n");
            for e in &f.evidence {
                let v = if e.value.is_null() {
                    "(absent)".into()
                } else {
                    display_value(&e.value)
                };
                out.push_str(&format!("- `{}` = `{}`\n", e.path, v.replace('`', "'")));
            }
            out.push('\n');
        }
        out.push_str(&format!("**Fix:** {}\n\n", f.fix));
        for r in &f.references {
            out.push_str(&format!("- <{r}>\n"));
        }
        out.push_str("\n</details>\n\n");
    }
    out
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// Wrap text at spaces to about `width` columns.
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The JSON Schema of `check --format json`, as checked in at `schema/check.schema.json`.
pub fn json_schema() -> String {
    crate::schema::render::<CheckReport<'static>>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Evidence;

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
            evidence: vec![Evidence {
                path: "gpus[0].live.memory_used_percent".into(),
                value: serde_json::json!(91.5),
            }],
            fix: "stop it".into(),
            references: vec!["https://example.org/x".into()],
        }
    }

    #[test]
    fn fail_on_thresholds() {
        assert!(FailOn::Error.fails(Severity::Error));
        assert!(!FailOn::Error.fails(Severity::Warning));
        assert!(FailOn::Warning.fails(Severity::Warning));
        assert!(!FailOn::Warning.fails(Severity::Info));
        assert!(!FailOn::Never.fails(Severity::Error));
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

    #[test]
    fn wraps_at_spaces() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
    }
}
