//! `check --format prometheus`: the Prometheus text exposition format, for node-exporter's
//! textfile collector (`deploy/systemd/` writes it on a timer).
//!
//! Gauges, each with HELP and TYPE:
//! - `envdoctor_findings{rule,severity}`: findings per rule evaluated (0 for a rule that found
//!   nothing, so an alert on `> 0` resolves when the problem goes away);
//! - `envdoctor_check_failed`: 1 when a finding is at or above `--fail-on`;
//! - `envdoctor_probe_errors`: facts that could not be read;
//! - `envdoctor_gpu_memory_used_bytes{gpu,uuid,name}`, `envdoctor_gpu_memory_total_bytes{…}`;
//! - `envdoctor_last_run_seconds`: when the check ran (Unix time), to alert on a stale file.

use super::verdict::Summary;
use crate::rules::{Finding, Rule, Severity};
use crate::Snapshot;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

/// Escape a label value (`\`, `"`, line feed).
pub fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, help: &str) -> fmt::Result {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} gauge")
}

fn labels(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// The metrics of one `check` that ran at `now` (seconds since the Unix epoch).
pub fn render(
    rules: &[Rule],
    findings: &[Finding],
    summary: &Summary,
    snap: &Snapshot,
    now: f64,
) -> String {
    let mut counts: BTreeMap<(&str, Severity), usize> = BTreeMap::new();
    for r in rules {
        if !findings.iter().any(|f| f.rule == r.id) {
            counts.insert((r.id.as_str(), r.severity), 0);
        }
    }
    for f in findings {
        *counts.entry((f.rule.as_str(), f.severity)).or_insert(0) += 1;
    }
    super::written(|out| {
        family(
            out,
            "envdoctor_findings",
            "Findings of the last envdoctor check, per rule evaluated and severity.",
        )?;
        for ((rule, sev), n) in &counts {
            writeln!(
                out,
                "envdoctor_findings{} {n}",
                labels(&[("rule", rule), ("severity", sev.as_str())])
            )?;
        }
        family(
            out,
            "envdoctor_check_failed",
            "1 when the last envdoctor check had a finding at or above its --fail-on severity.",
        )?;
        writeln!(out, "envdoctor_check_failed {}", u8::from(summary.failed))?;
        family(
            out,
            "envdoctor_probe_errors",
            "Facts the last envdoctor check could not read (probe problems).",
        )?;
        writeln!(out, "envdoctor_probe_errors {}", snap.probe_errors.len())?;
        if !snap.gpus.is_empty() {
            const MIB: u64 = 1024 * 1024;
            for (name, help, value) in [
                (
                    "envdoctor_gpu_memory_used_bytes",
                    "GPU memory in use when envdoctor last checked.",
                    (|g: &crate::snapshot::Gpu| g.live.memory_used_mib) as fn(&_) -> u64,
                ),
                (
                    "envdoctor_gpu_memory_total_bytes",
                    "GPU memory in total.",
                    |g: &crate::snapshot::Gpu| g.memory_total_mib,
                ),
            ] {
                family(out, name, help)?;
                for g in &snap.gpus {
                    let index = g.index.to_string();
                    writeln!(
                        out,
                        "{name}{} {}",
                        labels(&[("gpu", &index), ("uuid", &g.uuid), ("name", &g.name)]),
                        value(g).saturating_mul(MIB)
                    )?;
                }
            }
        }
        family(
            out,
            "envdoctor_last_run_seconds",
            "When the last envdoctor check ran, in seconds since the Unix epoch.",
        )?;
        writeln!(out, "envdoctor_last_run_seconds {now:.3}")?;
        Ok(())
    })
}

/// Seconds since the Unix epoch, now.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(
            labels(&[("gpu", "0"), ("name", "A \"B\"")]),
            "{gpu=\"0\",name=\"A \\\"B\\\"\"}"
        );
    }
}
