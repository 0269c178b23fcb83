//! `envdoctor report`: the environment as Markdown to paste into a bug report or a pull request
//! (like PyTorch's collect_env, with envdoctor's evidence), or as JSON for tools: the verdict,
//! the summary, the findings, and the facts a maintainer asks for (OS, glibc, CPU, interpreters,
//! framework builds, ML packages, driver, toolkits, GPUs, training environment variables).
//!
//! Secrets are never included: environment values come from the snapshot's allowlist (already
//! redacted by the env probe), and the hostname, user names and process names are left out.

use super::escape::{html, one_line};
use super::inventory;
use super::markdown::{findings_section, md_cell, probe_problems, summary_list};
use super::verdict::Summary;
use crate::rules::Finding;
use crate::snapshot::{Framework, Host, Nvml, Python};
use crate::Snapshot;
use serde::Serialize;

/// Leave out of `snap` who else uses this machine before a report is made of it (the rules
/// then never name them either): the name, user and uid of every GPU process, and the host
/// name.
pub fn leave_out_people(snap: &mut Snapshot) {
    for g in &mut snap.gpus {
        for p in &mut g.live.processes {
            p.name = None;
            p.user = None;
            p.uid = None;
        }
    }
    snap.host.hostname = None;
}

/// Packages a maintainer asks about (besides `nvidia-*`).
const ML_PACKAGES: &[&str] = &[
    "torch",
    "torchvision",
    "torchaudio",
    "tensorflow",
    "tensorflow-cpu",
    "tf-keras",
    "keras",
    "jax",
    "jaxlib",
    "numpy",
    "scipy",
    "transformers",
    "accelerate",
    "onnxruntime",
    "onnxruntime-gpu",
    "protobuf",
    "h5py",
    "cupy",
    "triton",
];

/// One interpreter's facts.
#[derive(Serialize, schemars::JsonSchema)]
pub struct PythonFacts {
    /// Its path.
    pub path: String,
    /// Its version.
    pub version: Option<String>,
    /// How it was found (`path`, `virtual-env`, `vscode`, ...).
    pub found_as: Vec<String>,
    /// The ML packages installed in it (`torch==2.15.0+cu132`).
    pub packages: Vec<String>,
    /// Frameworks with their CUDA/cuDNN build (`torch 2.15.0 (CUDA 13.2, cuDNN 9.13)`).
    pub frameworks: Vec<String>,
}

/// The facts of the report.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Facts {
    /// `Ubuntu 22.04, Linux 6.8.0, x86_64, glibc 2.35`.
    pub os: String,
    /// CPU model, cores, memory.
    pub cpu: String,
    /// Container runtime, when in one.
    pub container: Option<String>,
    /// Every interpreter found.
    pub pythons: Vec<PythonFacts>,
    /// The NVIDIA driver and its CUDA version.
    pub driver: String,
    /// CUDA toolkits (`12.4 at /usr/local/cuda-12.4`).
    pub toolkits: Vec<String>,
    /// GPUs (`0: NVIDIA A100 80GB, sm_80, 81920 MiB`).
    pub gpus: Vec<String>,
    /// Training-related environment variables (allowlisted, secrets redacted).
    pub env: Vec<String>,
}

/// Version of the `report --format json` format ([`EnvReport::format_version`]): bumped with
/// every change of `schema/report.schema.json` (recorded in `schema/VERSIONS`).
pub const FORMAT_VERSION: u32 = 1;

/// `envdoctor report --format json`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct EnvReport<'a> {
    /// Version of this format ([`FORMAT_VERSION`]).
    pub format_version: u32,
    /// The envdoctor that wrote it.
    pub envdoctor_version: &'static str,
    /// The verdict line.
    pub verdict: String,
    /// Counts.
    pub summary: &'a Summary,
    /// The summary lines.
    pub inventory: Vec<inventory::Line>,
    /// The findings.
    pub findings: Vec<super::json::FindingOut<'a>>,
    /// The facts.
    pub facts: Facts,
    /// Probe problems.
    pub probe_errors: &'a [crate::snapshot::ProbeError],
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("?")
}

/// The facts of `snap` a maintainer asks for.
pub fn facts(snap: &Snapshot) -> Facts {
    let h = &snap.host;
    Facts {
        os: os_line(h),
        cpu: cpu_line(h),
        container: h.container.as_ref().map(|c| c.kind.clone()),
        pythons: snap.pythons.iter().map(|p| python_facts(snap, p)).collect(),
        driver: driver_line(&snap.nvml),
        toolkits: snap
            .cuda
            .toolkits
            .iter()
            .map(|t| format!("{} at {}", opt(&t.version), t.path))
            .collect(),
        gpus: snap
            .gpus
            .iter()
            .map(|g| {
                format!(
                    "{}: {}, sm {}, {} MiB",
                    g.index,
                    g.name,
                    opt(&g.compute_capability),
                    g.memory_total_mib
                )
            })
            .collect(),
        env: snap.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    }
}

/// `Ubuntu 22.04, Linux 6.8.0, x86_64, glibc 2.35`.
fn os_line(h: &Host) -> String {
    format!(
        "{} {}, {} {}, glibc {}",
        opt(&h.os_name),
        opt(&h.os_version),
        opt(&h.kernel),
        opt(&h.arch),
        opt(&h.glibc_version)
    )
}

/// CPU model, cores and threads, memory.
fn cpu_line(h: &Host) -> String {
    format!(
        "{}, {} cores / {} threads, {} MiB memory",
        opt(&h.cpu_model),
        h.cpu_cores.map_or("?".into(), |n| n.to_string()),
        h.cpu_threads.map_or("?".into(), |n| n.to_string()),
        h.memory_total_mib.map_or("?".into(), |n| n.to_string())
    )
}

/// One interpreter's facts: how it was found, its ML packages, its frameworks' builds.
fn python_facts(snap: &Snapshot, p: &Python) -> PythonFacts {
    let mut found_as: Vec<String> = p
        .sources
        .iter()
        .map(|s| {
            serde_json::to_value(s.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    found_as.dedup();
    let packages = p
        .packages
        .iter()
        .filter(|k| ML_PACKAGES.contains(&k.name.as_str()) || k.name.starts_with("nvidia-"))
        .map(|k| format!("{}=={}", k.name, k.version))
        .collect();
    let frameworks = snap
        .frameworks
        .iter()
        .filter(|f| f.python == p.path)
        .map(framework_build)
        .collect();
    PythonFacts {
        path: p.path.clone(),
        version: p.version.clone(),
        found_as,
        packages,
        frameworks,
    }
}

/// A framework with its build: `torch 2.15.0 (CUDA 13.2, cuDNN 9.13)`.
fn framework_build(f: &Framework) -> String {
    let mut b = Vec::new();
    if let Some(c) = &f.cuda_version {
        b.push(format!("CUDA {c}"));
    }
    if let Some(c) = &f.cudnn_version {
        b.push(format!("cuDNN {c}"));
    }
    if f.is_cuda_build == Some(false) {
        b.push("CPU-only".into());
    }
    format!("{} {} ({})", f.name, f.version, b.join(", "))
}

/// The NVIDIA driver and its CUDA version, or why there is none usable.
fn driver_line(n: &Nvml) -> String {
    if n.status == "ok" {
        format!(
            "NVIDIA {}, CUDA {} (driver API)",
            opt(&n.driver_version),
            opt(&n.cuda_driver_version)
        )
    } else {
        format!(
            "none usable (NVML {})",
            if n.status.is_empty() {
                "not probed"
            } else {
                &n.status
            }
        )
    }
}

/// Lines in a fenced code block (each on its own line, fenced past any backticks they hold).
fn code_block(lines: &[String]) -> String {
    let body: Vec<String> = lines.iter().map(|l| one_line(l).into_owned()).collect();
    let body = body.join("\n");
    let fence = super::escape::md_fence(&body);
    format!("\n{fence}\n{body}\n{fence}\n")
}

/// `envdoctor report` as Markdown.
pub fn markdown(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    let f = facts(snap);
    let mut out = format!(
        "## Environment (envdoctor {})\n\n**{}**\n\n### Summary\n\n",
        env!("CARGO_PKG_VERSION"),
        md_cell(&summary.line(snap))
    );
    out.push_str(&summary_list(snap, findings));
    out.push_str("\n### Findings\n\n");
    if findings.is_empty() {
        out.push_str("None.\n\n");
    } else {
        out.push_str(&findings_section(findings, snap));
    }
    out.push_str("### Facts\n\n| | |\n|---|---|\n");
    let row = |out: &mut String, k: &str, v: &str| {
        out.push_str(&format!("| {k} | {} |\n", md_cell(v)));
    };
    row(&mut out, "OS", &f.os);
    row(&mut out, "CPU", &f.cpu);
    if let Some(c) = &f.container {
        row(&mut out, "container", c);
    }
    row(&mut out, "driver", &f.driver);
    row(
        &mut out,
        "CUDA toolkits",
        &if f.toolkits.is_empty() {
            "none".into()
        } else {
            f.toolkits.join("; ")
        },
    );
    row(
        &mut out,
        "GPUs",
        &if f.gpus.is_empty() {
            "none".into()
        } else {
            f.gpus.join("; ")
        },
    );
    out.push('\n');
    for p in &f.pythons {
        out.push_str(&format!(
            "<details><summary>Python {} at <code>{}</code> ({})</summary>\n\n",
            html(p.version.as_deref().unwrap_or("?")),
            html(&p.path),
            html(&p.found_as.join(", "))
        ));
        for fw in &p.frameworks {
            out.push_str(&format!("- framework: {}\n", md_cell(fw)));
        }
        if p.packages.is_empty() {
            out.push_str("- no ML packages\n");
        } else {
            out.push_str(&code_block(&p.packages));
        }
        out.push_str("\n</details>\n\n");
    }
    if !f.env.is_empty() {
        out.push_str("Environment variables:\n");
        out.push_str(&code_block(&f.env));
        out.push('\n');
    }
    out.push_str(&probe_problems(snap));
    out
}

/// `envdoctor report --format json`.
pub fn json(findings: &[Finding], summary: &Summary, snap: &Snapshot) -> String {
    let r = EnvReport {
        format_version: FORMAT_VERSION,
        envdoctor_version: env!("CARGO_PKG_VERSION"),
        verdict: summary.line(snap),
        summary,
        inventory: inventory::lines(snap, findings),
        findings: super::json::findings_out(findings, snap),
        facts: facts(snap),
        probe_errors: &snap.probe_errors,
    };
    let mut s = serde_json::to_string_pretty(&r).unwrap_or_default();
    s.push('\n');
    s
}

/// The JSON Schema of `report --format json`, as checked in at `schema/report.schema.json`.
pub fn json_schema() -> String {
    crate::schema::render_output::<EnvReport<'static>>()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_checked_in_report_schema_is_current() {
        crate::schema::assert_current("report.schema.json", &super::json_schema());
    }
}
