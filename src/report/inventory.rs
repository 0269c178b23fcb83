//! The summary `check` and `report` lead with (flutter-doctor style): what envdoctor assumed,
//! one line per area with a mark, even when all is well: the job's interpreter and why it is the
//! one, each framework's CUDA/cuDNN build against the libraries the loader will give it, the
//! driver, each GPU's free memory and other processes, the checkpoints found.
//!
//! A framework's mark is the worst finding about it (its own, or one about a library it wants),
//! so a ✗ row always has an error finding behind it and a ✓ row none. The other areas' marks
//! come from the findings whose evidence touches them and from their facts (no driver under a
//! CUDA build is a `!`).

use crate::rules::{Finding, Severity};
use crate::snapshot::python::{Python, SourceKind};
use crate::snapshot::{Framework, Gpu, Library};
use crate::Snapshot;
use serde::Serialize;

/// A line's mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    /// All good (✓).
    Ok,
    /// Worth a look (!).
    Warn,
    /// Will break (✗).
    Bad,
}

impl Mark {
    /// `✓`, `!` or `✗`.
    pub fn symbol(self) -> &'static str {
        match self {
            Mark::Ok => "✓",
            Mark::Warn => "!",
            Mark::Bad => "✗",
        }
    }
    fn of(s: Severity) -> Mark {
        match s {
            Severity::Error => Mark::Bad,
            Severity::Warning => Mark::Warn,
            Severity::Info => Mark::Ok,
        }
    }
}

/// One line of the summary.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Line {
    /// The mark.
    pub mark: Mark,
    /// The area (`Python`, `torch`, `Driver`, `GPU 0`, `Checkpoints`).
    pub area: String,
    /// What was found.
    pub text: String,
    /// More, shown with --verbose.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<String>,
}

/// The command that runs a job in the project's in-project venv, told by its lock file (the
/// compared one, else the first): `pdm run`, `poetry run`, `pipenv run`, else `uv run`.
fn project_runner(snap: &Snapshot) -> &'static str {
    use crate::snapshot::lock::LockFormat;
    let lock = snap
        .locks
        .iter()
        .find(|l| l.compared)
        .or_else(|| snap.locks.first());
    match lock.map(|l| l.format) {
        Some(LockFormat::Pdm) => "pdm run",
        Some(LockFormat::Poetry) => "poetry run",
        Some(LockFormat::Pipfile) => "pipenv run",
        _ => "uv run",
    }
}

/// Why an interpreter is the job's: the best of its sources (`runner` runs the project's venv).
fn job_rank(py: &Python, runner: &str) -> Option<(u8, String)> {
    py.sources
        .iter()
        .filter_map(|s| {
            let (rank, why) = match s.kind {
                SourceKind::VirtualEnv => (0, "VIRTUAL_ENV is set".to_string()),
                SourceKind::CondaPrefix => (1, "the active conda env (CONDA_PREFIX)".into()),
                SourceKind::Path if !s.detail.contains("dangling") => (
                    2,
                    format!(
                        "`{}` on PATH",
                        s.detail.split(' ').next().unwrap_or("python")
                    ),
                ),
                SourceKind::PyenvShim => (
                    2,
                    format!(
                        "pyenv shim `{}` on PATH",
                        s.detail.split(' ').next().unwrap_or("python")
                    ),
                ),
                SourceKind::ProjectVenv => (3, format!("the project's venv, what `{runner}` uses")),
                SourceKind::Poetry => {
                    (3, "the project's Poetry env, what `poetry run` uses".into())
                }
                SourceKind::Pipenv => {
                    (3, "the project's Pipenv env, what `pipenv run` uses".into())
                }
                SourceKind::Pixi => (3, "the project's Pixi env, what `pixi run` uses".into()),
                SourceKind::Vscode | SourceKind::Pycharm => (4, "the IDE's interpreter".into()),
                _ => return None,
            };
            // `python` and `python3` are what a job runs; `python3.11` only when they are not.
            let name = s.detail.split(' ').next().unwrap_or("");
            let pref = match name {
                "python" => 0u8,
                "python3" => 1,
                _ => 2,
            };
            Some((rank, pref, why))
        })
        .min()
        .map(|(rank, _, why)| (rank, why))
}

/// The interpreter a job started here runs (`python train.py`, `uv run`), and why: the one with
/// the `job` role (an active env, else the project's, else the shell's), else the best-ranked.
pub fn job_python(snap: &Snapshot) -> Option<(&Python, String)> {
    let runner = project_runner(snap);
    if let Some(py) = snap
        .pythons
        .iter()
        .find(|p| p.exists && p.roles.contains(&crate::snapshot::python::PythonRole::Job))
    {
        let why =
            job_rank(py, runner).map_or_else(|| "the job's interpreter".to_string(), |(_, w)| w);
        return Some((py, why));
    }
    // Among PATH entries only the lowest one wins; the detail names the entry.
    let path_pos = |py: &Python| -> usize {
        py.sources
            .iter()
            .filter(|s| matches!(s.kind, SourceKind::Path | SourceKind::PyenvShim))
            .filter_map(|s| s.path_entry)
            .min()
            .unwrap_or(usize::MAX)
    };
    snap.pythons
        .iter()
        .filter(|p| p.exists)
        .filter_map(|p| job_rank(p, runner).map(|(r, why)| ((r, path_pos(p)), p, why)))
        .min_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, p, why)| (p, why))
}

fn worst(findings: &[Finding], touches: impl Fn(&str) -> bool) -> Mark {
    findings
        .iter()
        .filter(|f| {
            f.subject.as_deref().is_some_and(&touches)
                || f.evidence.iter().any(|e| touches(&e.path))
        })
        .map(|f| Mark::of(f.severity))
        .max()
        .unwrap_or(Mark::Ok)
}

fn gib(mib: u64) -> String {
    format!("{:.1} GiB", mib as f64 / 1024.0)
}

fn lib_version(l: &Library) -> Option<&str> {
    l.load
        .as_ref()
        .and_then(|r| r.version.as_deref())
        .or(l.file_version.as_deref())
        .or(l.name_version.as_deref())
}

/// Whether `l` is one of `fw`'s libraries: a framework named in its `wanted_by` (`torch 2.15.0`).
fn wanted_by(l: &Library, fw: &str) -> bool {
    l.wanted_by.iter().any(|w| w.split(' ').next() == Some(fw))
}

/// The driver's own libraries (libcuda, libnvidia-ml) are the Driver line's business.
fn driver_lib(l: &Library) -> bool {
    l.soname.starts_with("libcuda.so") || l.soname.starts_with("libnvidia-")
}

/// The findings about one framework: its own (`frameworks[NAME @ PY]`) and those about a
/// library it wants, in its interpreter.
fn framework_findings<'f>(
    name: &str,
    python: &str,
    libs: &[&Library],
    findings: &'f [Finding],
) -> Vec<&'f Finding> {
    let key = format!("frameworks[{name} @ {python}]");
    findings
        .iter()
        .filter(|f| {
            let touches = |p: &str| {
                p.starts_with(&key)
                    || libs.iter().any(|l| {
                        wanted_by(l, name)
                            && p.starts_with(&format!("libraries[{} @ {python}]", l.soname))
                    })
            };
            // A machine-wide finding about the GPU or driver (no GPU where one is expected)
            // is the Driver line's, even when its evidence names the framework.
            let driver = f.evidence.iter().any(|e| driver_area(&e.path));
            match f.subject.as_deref() {
                Some(s) => touches(s),
                None => !driver && f.evidence.iter().any(|e| touches(&e.path)),
            }
        })
        .collect()
}

/// The fact paths the Driver line answers for.
fn driver_area(p: &str) -> bool {
    p.starts_with("nvml")
        || p.starts_with("cuda.driver")
        || p.starts_with("expect.gpu")
        || p.starts_with("gpus")
}

/// What a framework group was built for: `CPU-only build`, `built for CUDA 12.4, cuDNN 9.1`.
fn build_part(group: &[&Framework]) -> Option<String> {
    if group.iter().all(|f| f.is_cuda_build == Some(false)) {
        return Some("CPU-only build".to_string());
    }
    let mut built = Vec::new();
    if let Some(c) = group.iter().find_map(|f| f.cuda_version.as_ref()) {
        built.push(format!("CUDA {c}"));
    }
    if let Some(c) = group.iter().find_map(|f| f.cudnn_version.as_ref()) {
        built.push(format!("cuDNN {c}"));
    }
    (!built.is_empty()).then(|| format!("built for {}", built.join(", ")))
}

/// One framework's line (its distributions together: jax, jaxlib and its CUDA plugins are one
/// row). Its mark is the worst finding about it, so a ✗ always has an error behind it; the
/// libraries a finding names as missing are listed.
fn framework_line(group: &[&Framework], libs: &[&Library], findings: &[Finding]) -> Line {
    let fw = group[0];
    let mut parts: Vec<String> = build_part(group).into_iter().collect();
    let mine: Vec<&&Library> = libs.iter().filter(|l| wanted_by(l, &fw.name)).collect();
    let about = framework_findings(&fw.name, &fw.python, libs, findings);
    let named = |l: &Library| {
        let key = format!("libraries[{} @ {}]", l.soname, fw.python);
        about
            .iter()
            .any(|f| f.subject.as_deref().is_some_and(|s| s.starts_with(&key)))
    };
    let got: Vec<String> = mine
        .iter()
        .filter(|l| l.resolves && !driver_lib(l))
        .filter(|l| matches!(l.family.as_deref(), Some("cudart" | "cudnn")))
        .filter(|l| l.reason != "transitive")
        .map(|l| {
            format!(
                "{} {}",
                l.soname,
                lib_version(l).unwrap_or("(version unknown)")
            )
        })
        .collect();
    if !got.is_empty() {
        parts.push(format!("loader gives {}", got.join(", ")));
    }
    let mut missing: Vec<String> = mine
        .iter()
        .filter(|l| !l.resolves && named(l))
        .map(|l| l.soname.clone())
        .collect();
    if !missing.is_empty() {
        let more = if missing.len() > 3 {
            format!(", … {} more", missing.len() - 3)
        } else {
            String::new()
        };
        missing.truncate(3);
        parts.push(format!("not found: {}{more}", missing.join(", ")));
    }
    let versions: Vec<String> = group.iter().map(|f| f.version.clone()).collect();
    let mut version = versions[0].clone();
    if versions.iter().any(|v| *v != version) {
        version = versions.join(" / ");
    }
    Line {
        mark: about
            .iter()
            .map(|f| Mark::of(f.severity))
            .max()
            .unwrap_or(Mark::Ok),
        area: fw.name.clone(),
        text: format!(
            "{version} {}",
            if parts.is_empty() {
                String::new()
            } else {
                format!("({})", parts.join("; "))
            }
        )
        .trim_end()
        .to_string(),
        detail: mine
            .iter()
            .map(|l| match &l.path {
                Some(p) => format!("{} -> {p}", l.soname),
                None => format!("{} -> not found", l.soname),
            })
            .collect(),
    }
}

/// The summary lines of `snap`.
pub fn lines(snap: &Snapshot, findings: &[Finding]) -> Vec<Line> {
    let mut out = Vec::new();
    let job = job_python(snap);
    out.push(python_line(snap, job.as_ref(), findings));
    let job_path = job.as_ref().map(|(p, _)| p.path.as_str());
    let fws: Vec<&Framework> = snap
        .frameworks
        .iter()
        .filter(|f| Some(f.python.as_str()) == job_path)
        .collect();
    let libs: Vec<&Library> = snap
        .libraries
        .iter()
        .filter(|l| l.python.as_deref() == job_path)
        .collect();
    // One row per framework, its distributions together (in the order first seen).
    let mut names: Vec<&str> = Vec::new();
    for fw in &fws {
        if !names.contains(&fw.name.as_str()) {
            names.push(&fw.name);
        }
    }
    for name in names {
        let group: Vec<&Framework> = fws.iter().copied().filter(|f| f.name == name).collect();
        out.push(framework_line(&group, &libs, findings));
    }
    if fws.is_empty() && job_path.is_some() {
        out.push(Line {
            mark: Mark::Ok,
            area: "Frameworks".into(),
            text: "none in this interpreter (torch, TensorFlow, jax, ...)".into(),
            detail: vec![],
        });
    }
    let wants_gpu = fws.iter().any(|f| f.is_cuda_build == Some(true));
    out.push(driver_line(snap, wants_gpu, findings));
    for g in &snap.gpus {
        out.push(gpu_line(g, findings));
    }
    out.push(checkpoints_line(snap, findings));
    for l in &mut out {
        // Paths and names from the machine, on one line with no control characters.
        if let std::borrow::Cow::Owned(t) = super::escape::one_line(&l.text) {
            l.text = t;
        }
        for d in &mut l.detail {
            if let std::borrow::Cow::Owned(t) = super::escape::one_line(d) {
                *d = t;
            }
        }
    }
    out
}

/// The Python line: the job's interpreter and why (the others in its detail), or a warning
/// that no interpreter would run a job here.
fn python_line(snap: &Snapshot, job: Option<&(&Python, String)>, findings: &[Finding]) -> Line {
    let Some((py, why)) = job else {
        return Line {
            mark: Mark::Warn,
            area: "Python".into(),
            text: if snap.pythons.is_empty() {
                "no interpreter found".into()
            } else {
                format!(
                    "none that a job here would run ({} found, none on PATH or active)",
                    snap.pythons.len()
                )
            },
            detail: vec![],
        };
    };
    let key = format!("pythons[{}]", py.path);
    let others: Vec<String> = snap
        .pythons
        .iter()
        .filter(|p| p.path != py.path)
        .map(|p| {
            let mut kinds: Vec<&str> = p.sources.iter().map(|s| kind_name(s.kind)).collect();
            kinds.sort_unstable();
            kinds.dedup();
            format!(
                "also: {} {} ({})",
                p.path,
                p.version.as_deref().unwrap_or("?"),
                kinds.join(", ")
            )
        })
        .collect();
    Line {
        mark: worst(findings, |p| p.starts_with(&key)),
        area: "Python".into(),
        text: format!(
            "{} {} ({why}; {} found)",
            py.path,
            py.version.as_deref().unwrap_or("(version unknown)"),
            crate::plural::plural(snap.pythons.len(), "interpreter")
        ),
        detail: others,
    }
}

/// The Driver line: the NVIDIA driver and its CUDA version, or why there is none (a warning
/// when a framework is a CUDA build).
fn driver_line(snap: &Snapshot, wants_gpu: bool, findings: &[Finding]) -> Line {
    let driver_mark = worst(findings, |p| driver_area(p) && !p.starts_with("gpus"));
    let nvml = &snap.nvml;
    if nvml.status == "ok" {
        return Line {
            mark: driver_mark,
            area: "Driver".into(),
            text: format!(
                "NVIDIA {}{}",
                nvml.driver_version
                    .as_deref()
                    .unwrap_or("(version unknown)"),
                nvml.cuda_driver_version
                    .as_deref()
                    .map(|c| format!(", CUDA {c} (driver API)"))
                    .unwrap_or_default()
            ),
            detail: nvml.library.iter().map(|l| format!("NVML: {l}")).collect(),
        };
    }
    let why = match nvml.status.as_str() {
        "no-library" | "" => "no NVIDIA driver (libnvidia-ml.so.1 not found)".to_string(),
        "not-probed"
            if nvml
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with("--no-load")) =>
        {
            "not probed (--no-load)".to_string()
        }
        "not-probed" => "not probed (--root names another machine)".to_string(),
        s => format!("NVML {s}"),
    };
    // Its mark is the findings' (cuda-framework-without-gpu is an info; with --expect-gpu,
    // gpu-expected-but-no-gpu an error).
    Line {
        mark: driver_mark,
        area: "Driver".into(),
        text: if wants_gpu {
            format!("{why}: the CUDA build runs on the CPU")
        } else {
            format!("{why}; CPU only")
        },
        detail: nvml.reason.iter().cloned().collect(),
    }
}

/// A GPU's line: its free memory and the processes on it (a warning when one is not ours).
fn gpu_line(g: &Gpu, findings: &[Finding]) -> Line {
    let key = format!("gpus[{}]", g.index);
    let mut mark = worst(findings, |p| p.starts_with(&key));
    let others = g.live.processes.len();
    let mut text = format!(
        "{}: {} of {} free",
        g.name,
        gib(g.live.memory_free_mib),
        gib(g.memory_total_mib)
    );
    if others > 0 {
        text.push_str(&format!(
            ", {} process{} on it",
            others,
            if others == 1 { "" } else { "es" }
        ));
        if g.live.foreign_processes > 0 {
            text.push_str(&format!(
                " ({} from other containers)",
                g.live.foreign_processes
            ));
        }
        if g.live.processes.iter().any(|p| p.same_user != Some(true)) {
            mark = mark.max(Mark::Warn);
        }
    } else {
        text.push_str(", no process on it");
    }
    if !g.visible {
        text.push_str("; hidden by CUDA_VISIBLE_DEVICES");
    }
    Line {
        mark,
        area: format!("GPU {}", g.index),
        text,
        detail: g
            .live
            .processes
            .iter()
            .map(|p| {
                format!(
                    "pid {} {} {}{}",
                    p.pid,
                    p.name.as_deref().unwrap_or("?"),
                    p.used_memory_mib.map(gib).unwrap_or_default(),
                    if p.in_our_pid_namespace {
                        ""
                    } else {
                        " (another container)"
                    }
                )
            })
            .collect(),
    }
}

/// The Checkpoints line: how many were found and how many could not be read.
fn checkpoints_line(snap: &Snapshot, findings: &[Finding]) -> Line {
    let unreadable = snap
        .checkpoints
        .iter()
        .filter(|c| c.error.is_some())
        .count();
    let ck_mark = worst(findings, |p| p.starts_with("checkpoints"));
    Line {
        mark: ck_mark.max(if unreadable > 0 { Mark::Warn } else { Mark::Ok }),
        area: "Checkpoints".into(),
        text: match (snap.checkpoints.len(), unreadable) {
            (0, _) => "none found".into(),
            (n, 0) => format!("{n} found"),
            (n, u) => format!("{n} found, {u} unreadable"),
        },
        detail: snap
            .checkpoints
            .iter()
            .map(|c| format!("{}: {}", c.path, super::checkpoints::summary(c)))
            .collect(),
    }
}

fn kind_name(k: SourceKind) -> &'static str {
    match k {
        SourceKind::Path => "PATH",
        SourceKind::PyenvShim => "pyenv shim",
        SourceKind::PipShebang => "pip on PATH",
        SourceKind::VirtualEnv => "VIRTUAL_ENV",
        SourceKind::CondaPrefix => "CONDA_PREFIX",
        SourceKind::CondaEnv => "conda env",
        SourceKind::PyenvVersion => "pyenv",
        SourceKind::System => "system",
        SourceKind::ProjectVenv => "project venv",
        SourceKind::Poetry => "poetry",
        SourceKind::Pipenv => "pipenv",
        SourceKind::Pixi => "pixi",
        SourceKind::CondaEnvironmentYml => "environment.yml",
        SourceKind::Vscode => "VS Code",
        SourceKind::Pycharm => "PyCharm",
        SourceKind::JupyterKernel => "Jupyter kernel",
        SourceKind::Other => "other",
    }
}
