//! The lock probe: the project's lock files and pinned requirements, read as their tools
//! define them, and the job's environment compared with the one its tool would sync.
//!
//! One reader per format ([`uv`], [`pylock`], [`poetry`], [`pdm`], [`pipfile`],
//! [`requirements`], [`conda`] for `environment.yml` and `conda-lock.yml`, [`pixi`]), each
//! producing [`model::Entry`]s for one interpreter ([`model::Target`]: markers evaluated for its
//! Python version and platform); [`drift`] compares them with what is installed; [`stale`]
//! compares a lock with `pyproject.toml`. Stage 2: it reads the interpreters the python probe
//! found. Nothing named in a project file is executed.

pub mod drift;
pub mod model;
pub mod pdm;
pub mod pipfile;
pub mod poetry;
pub mod pylock;
pub mod requirements;
pub mod stale;
pub mod uv;

use super::{Apply, Context};
use crate::root::Root;
use crate::snapshot::lock::{LockFile, LockFormat};
use crate::snapshot::python::{Python, PythonRole};
use crate::snapshot::{LockDrift, ProbeError};
use model::{Locked, Target, MAX_LOCK_BYTES};
use std::path::{Path, PathBuf};

/// Name used in `probe_errors[].probe`.
pub const PROBE: &str = "lock";

/// The probe entry point (registered as `lock`, stage 2).
pub fn probe(ctx: &Context) -> Apply {
    let (locks, drift, errors) = match ctx.opts.project.as_deref() {
        Some(project) => {
            let machine = if ctx.root().is_host() {
                std::env::consts::ARCH
            } else {
                crate::probe::python::requires::DEFAULT_MACHINE
            };
            survey(ctx.root(), project, &ctx.earlier.pythons, machine)
        }
        None => Default::default(),
    };
    Box::new(move |snap| {
        snap.locks.extend(locks);
        snap.lock_drift.extend(drift);
        snap.probe_errors.extend(errors);
    })
}

/// The lock files of `project` in the order one is chosen to compare: the managing tool's own
/// lock first, exported or hand-written pins last.
fn candidates(root: &Root, project: &Path) -> Vec<(PathBuf, LockFormat)> {
    let mut out = Vec::new();
    for (name, f) in [
        ("uv.lock", LockFormat::Uv),
        ("poetry.lock", LockFormat::Poetry),
        ("pdm.lock", LockFormat::Pdm),
        ("Pipfile.lock", LockFormat::Pipfile),
        ("pixi.lock", LockFormat::Pixi),
        ("conda-lock.yml", LockFormat::CondaLock),
        ("pylock.toml", LockFormat::Pylock),
    ] {
        let p = project.join(name);
        if root.is_file(&p) {
            out.push((p, f));
        }
    }
    let listing = root.read_dir(project).unwrap_or_default();
    let named = |pred: &dyn Fn(&str) -> bool| -> Vec<PathBuf> {
        listing
            .iter()
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(pred))
            .filter(|p| root.is_file(p))
            .cloned()
            .collect()
    };
    for p in named(&|n| n.starts_with("pylock.") && n.ends_with(".toml") && n != "pylock.toml") {
        out.push((p, LockFormat::Pylock));
    }
    for n in ["environment.yml", "environment.yaml"] {
        let p = project.join(n);
        if root.is_file(&p) {
            out.push((p, LockFormat::CondaEnvironment));
        }
    }
    let mut reqs = named(&|n| n.starts_with("requirements") && n.ends_with(".txt"));
    // `requirements.txt` itself before `requirements-dev.txt` and the like.
    reqs.sort_by_key(|p| p.file_name().is_none_or(|n| n != "requirements.txt"));
    out.extend(reqs.into_iter().map(|p| (p, LockFormat::Requirements)));
    out
}

/// The formats this envdoctor compares with (the others are recorded with their digest).
fn readable(f: LockFormat) -> bool {
    !matches!(
        f,
        LockFormat::CondaEnvironment | LockFormat::CondaLock | LockFormat::Pixi
    )
}

/// Every lock file of `project`, the chosen one compared with the job's interpreter.
pub fn survey(
    root: &Root,
    project: &Path,
    pythons: &[Python],
    machine: &str,
) -> (Vec<LockFile>, Vec<LockDrift>, Vec<ProbeError>) {
    let mut errors = Vec::new();
    let mut locks = Vec::new();
    let mut drift = Vec::new();
    let job = pythons
        .iter()
        .find(|p| p.exists && p.roles.contains(&PythonRole::Job));
    let pyproject = root
        .read_limited(&project.join("pyproject.toml"), MAX_LOCK_BYTES)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let mut compared = false;
    for (path, format) in candidates(root, project) {
        let shown = path.display().to_string();
        let bytes = match root.read_limited(&path, MAX_LOCK_BYTES) {
            Ok(b) => b,
            Err(e) => {
                errors.push(ProbeError::from_root(PROBE, &e));
                continue;
            }
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut lock = LockFile {
            path: shown.clone(),
            format,
            digest: digest(&bytes),
            sync_command: sync_command(format, &path, &text),
            ..LockFile::default()
        };
        if let (false, Some(py), true) = (compared, job, readable(format)) {
            let target = Target::linux(py.version.as_deref(), machine);
            match read(root, &path, format, &text, &target, pyproject.as_deref()) {
                Ok(locked) => {
                    compared = true;
                    for w in &locked.warnings {
                        errors.push(ProbeError::at(PROBE, &path, w.clone()));
                    }
                    let c = drift::compare(root, &shown, &lock.sync_command, &locked.entries, py);
                    lock.compared = true;
                    lock.python = Some(py.path.clone());
                    lock.packages = locked.entries.len();
                    lock.unlocked_count = c.unlocked.len();
                    lock.unlocked_first =
                        c.unlocked.into_iter().take(drift::UNLOCKED_NAMED).collect();
                    lock.stale = staleness(&locked, pyproject.as_deref(), &target);
                    drift.extend(c.drift);
                }
                Err(e) => errors.push(ProbeError::at(PROBE, &path, e)),
            }
        }
        locks.push(lock);
    }
    (locks, drift, errors)
}

fn staleness(locked: &Locked, pyproject: Option<&str>, target: &Target) -> Vec<String> {
    let Some(declared) = pyproject.and_then(stale::declared) else {
        return Vec::new();
    };
    match &locked.recorded {
        Some(rec) => stale::against_recorded(&declared, rec),
        None => stale::against_entries(&declared, &locked.entries, target),
    }
}

/// Read one lock for `target` with the selection the project's `pyproject.toml` makes.
fn read(
    root: &Root,
    path: &Path,
    format: LockFormat,
    text: &str,
    target: &Target,
    pyproject: Option<&str>,
) -> Result<Locked, String> {
    let doc: Option<toml::Table> = pyproject.and_then(|t| toml::from_str(t).ok());
    let get = |keys: &[&str]| -> Option<toml::Value> {
        let mut v = toml::Value::Table(doc.clone()?);
        for k in keys {
            v = v.get(k)?.clone();
        }
        Some(v)
    };
    match format {
        LockFormat::Uv => {
            let groups = match get(&["tool", "uv", "default-groups"]) {
                Some(toml::Value::String(s)) if s == "all" => uv::Groups::All,
                Some(toml::Value::Array(a)) => uv::Groups::Named(
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect(),
                ),
                _ => uv::Groups::default(),
            };
            uv::read(text, target, &groups)
        }
        LockFormat::Poetry => {
            let optional: Vec<String> = get(&["tool", "poetry", "group"])
                .and_then(|g| g.as_table().cloned())
                .map(|t| {
                    t.iter()
                        .filter(|(_, v)| v.get("optional").and_then(|o| o.as_bool()) == Some(true))
                        .map(|(k, _)| k.clone())
                        .collect()
                })
                .unwrap_or_default();
            poetry::read(text, target, &optional)
        }
        LockFormat::Pdm => pdm::read(text, target, false),
        LockFormat::Pipfile => pipfile::read(text, target, false),
        LockFormat::Pylock => pylock::read(text, target),
        LockFormat::Requirements => {
            let shown = path.display().to_string();
            let mut include = |name: &str, from: &str| -> Result<(String, String), String> {
                let dir = Path::new(from).parent().unwrap_or(Path::new("/"));
                let p = crate::root::lexical_normalize(&dir.join(name));
                let b = root
                    .read_limited(&p, MAX_LOCK_BYTES)
                    .map_err(|e| e.to_string())?;
                Ok((
                    p.display().to_string(),
                    String::from_utf8_lossy(&b).into_owned(),
                ))
            };
            Ok(requirements::read(text, &shown, target, &mut include))
        }
        LockFormat::CondaEnvironment | LockFormat::CondaLock | LockFormat::Pixi => {
            Err("this format is recorded, not compared, by this envdoctor".into())
        }
    }
}

/// The command that makes the environment match `path`.
fn sync_command(format: LockFormat, path: &Path, text: &str) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match format {
        LockFormat::Uv => "uv sync".into(),
        LockFormat::Poetry => "poetry install --sync".into(),
        LockFormat::Pdm => "pdm sync --clean".into(),
        LockFormat::Pipfile => "pipenv sync".into(),
        LockFormat::Pylock => format!("uv pip sync {name}"),
        LockFormat::Requirements if requirements::by_pip_compile(text) => {
            format!("pip-sync {name}")
        }
        LockFormat::Requirements => format!("python -m pip install -r {name}"),
        LockFormat::CondaEnvironment => format!("conda env update --file {name} --prune"),
        LockFormat::CondaLock => format!("conda-lock install {name}"),
        LockFormat::Pixi => "pixi install".into(),
    }
}

/// SHA-256 of the bytes, hex.
fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
