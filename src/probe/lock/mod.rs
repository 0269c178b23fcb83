//! The lock probe: the project's lock files and pinned requirements, read as their tools
//! define them, and the job's environment compared with the one its tool would sync.
//!
//! One reader per format ([`uv`], [`pylock`], [`poetry`], [`pdm`], [`pipfile`],
//! [`requirements`], [`conda`] for `environment.yml` and `conda-lock.yml`, [`pixi`]), each
//! producing [`model::Entry`]s for one interpreter ([`model::Target`]: markers evaluated for its
//! Python version and platform); [`drift`] compares them with what is installed (PyPI
//! packages with dist-info, conda packages with `conda-meta/` through [`conda_meta`]);
//! [`stale`] compares a lock with `pyproject.toml`. Stage 2: it reads the interpreters the
//! python probe found. Nothing named in a project file is executed.
//!
//! A lock is compared with the job's interpreter only where its tool would install into it
//! ([`installs_into`]): `uv sync` into a venv (or `$UV_PROJECT_ENVIRONMENT`); Poetry, PDM,
//! Pipenv, pip and `uv pip` into a venv, a conda env, or an interpreter that is not externally
//! managed (PEP 668: a Docker image's `/usr/local/bin/python` with `virtualenvs.create false`,
//! `pipenv --system`, `pip install -r`); `pixi install` into `.pixi/envs/<env>`; conda into a
//! conda env. Otherwise the lock is recorded with the reason (`not_compared`) and the next
//! lock of the project is tried.

pub mod conda;
pub mod conda_meta;
pub mod drift;
pub mod model;
pub mod pdm;
pub mod pipfile;
pub mod pixi;
pub mod poetry;
pub mod pylock;
pub mod requirements;
pub mod stale;
pub mod uv;

use super::{Apply, Context};
use crate::root::Root;
use crate::snapshot::lock::{DriftKind, LockFile, LockFormat};
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

/// The format a file is, by its name as [`candidates`] finds it (`None`: not a lock file).
pub fn format_of(path: &Path) -> Option<LockFormat> {
    let n = path.file_name()?.to_str()?;
    Some(match n {
        "uv.lock" => LockFormat::Uv,
        "poetry.lock" => LockFormat::Poetry,
        "pdm.lock" => LockFormat::Pdm,
        "Pipfile.lock" => LockFormat::Pipfile,
        "pixi.lock" => LockFormat::Pixi,
        "conda-lock.yml" => LockFormat::CondaLock,
        "environment.yml" | "environment.yaml" => LockFormat::CondaEnvironment,
        _ if n.starts_with("pylock.") && n.ends_with(".toml") => LockFormat::Pylock,
        _ if n.ends_with(".txt") => LockFormat::Requirements,
        _ => return None,
    })
}

/// The sync command of a lock file (for `compare LOCK SNAPSHOT`).
pub fn sync_command_of(format: LockFormat, path: &Path, text: &str) -> String {
    sync_command(format, path, text)
}

/// Why `format`'s tool would not install into `py` (`None`: it would, compare them).
pub fn installs_into(root: &Root, format: LockFormat, py: &Python) -> Option<String> {
    use crate::snapshot::python::{PythonKind, SourceKind};
    let shown = &py.path;
    let conda = conda_meta::prefix(root, py).is_some();
    match format {
        LockFormat::Uv => {
            let named = py.sources.iter().any(|s| {
                s.kind == SourceKind::ProjectVenv && s.detail.contains("UV_PROJECT_ENVIRONMENT")
            });
            (py.kind != PythonKind::Venv && !named).then(|| {
                format!("{shown} is not a virtual environment: `uv sync` installs into the project's .venv (or $UV_PROJECT_ENVIRONMENT)")
            })
        }
        LockFormat::Pixi => {
            let prefix = py.prefix.as_deref().unwrap_or("");
            (!prefix.trim_end_matches('/').rsplit_once('/').is_some_and(|(d, _)| d.ends_with(".pixi/envs")))
                .then(|| format!("{shown} is not a pixi environment: `pixi install` installs into the project's .pixi/envs/"))
        }
        LockFormat::CondaEnvironment | LockFormat::CondaLock => (!conda)
            .then(|| format!("{shown} is not a conda environment (no conda-meta/): conda installs into one")),
        _ if py.kind == PythonKind::Venv || conda => None,
        _ => externally_managed(root, py).map(|m| {
            format!("{shown} is externally managed ({m}, PEP 668): pip and the lock tools install into a virtual environment, not into it")
        }),
    }
}

/// The `EXTERNALLY-MANAGED` marker of `py`'s standard library, when it has one.
fn externally_managed(root: &Root, py: &Python) -> Option<String> {
    use crate::snapshot::python::SysPathOrigin;
    py.sys_path
        .iter()
        .filter(|s| s.origin == SysPathOrigin::Stdlib)
        .map(|s| Path::new(&s.path).join("EXTERNALLY-MANAGED"))
        .find(|m| root.is_file(m))
        .map(|m| m.display().to_string())
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
        if let (false, Some(py)) = (compared, job) {
            if let Some(why) = installs_into(root, format, py) {
                lock.not_compared = Some(why);
            } else {
                let target = Target::linux(py.version.as_deref(), machine);
                match read(
                    root,
                    &path,
                    format,
                    &text,
                    &target,
                    pyproject.as_deref(),
                    py,
                ) {
                    Ok(locked) => {
                        compared = true;
                        for w in &locked.warnings {
                            errors.push(ProbeError::at(PROBE, &path, w.clone()));
                        }
                        let (c, problems) = compare(root, &mut lock, format, &locked, py);
                        errors.extend(
                            problems
                                .into_iter()
                                .map(|p| ProbeError::at(PROBE, &path, p)),
                        );
                        lock.stale = staleness(&locked, pyproject.as_deref(), &target);
                        drift.extend(c.drift);
                    }
                    Err(e) => errors.push(ProbeError::at(PROBE, &path, e)),
                }
            }
        }
        locks.push(lock);
    }
    (locks, drift, errors)
}

/// `locked` against `py`: PyPI entries with its dist-info, conda ones with its `conda-meta/`;
/// the counts go into `lock`. Also the records that could not be read.
fn compare(
    root: &Root,
    lock: &mut LockFile,
    format: LockFormat,
    locked: &Locked,
    py: &Python,
) -> (drift::Compared, Vec<String>) {
    let mut c = drift::compare(root, &lock.path, &lock.sync_command, &locked.entries, py);
    let also: std::collections::HashSet<&str> =
        locked.also_locked.iter().map(String::as_str).collect();
    c.drift
        .retain(|d| d.kind != DriftKind::Unlocked || !also.contains(d.name.as_str()));
    c.unlocked.retain(|n| !also.contains(n.as_str()));
    for d in &mut c.drift {
        if let Some(cmd) = reinstall_command(format, d) {
            d.sync_command = cmd;
        }
    }
    let mut problems = Vec::new();
    if let Some(prefix) = conda_meta::prefix(root, py) {
        let (records, p) = conda_meta::records(root, &prefix);
        problems = p;
        let against = conda_meta::Against {
            lock: &lock.path,
            sync: &lock.sync_command,
            count_unlocked: format != LockFormat::CondaEnvironment,
        };
        conda_meta::compare(&against, &locked.entries, &records, py, &mut c);
    }
    if format == LockFormat::CondaEnvironment {
        // It names what the user asked for, not everything installed.
        c.drift.retain(|d| d.kind != DriftKind::Unlocked);
        c.unlocked.clear();
    }
    c.unlocked.sort();
    lock.compared = true;
    lock.python = Some(py.path.clone());
    lock.packages = locked.entries.len();
    lock.unlocked_count = c.unlocked.len();
    lock.unlocked_first = c
        .unlocked
        .iter()
        .take(drift::UNLOCKED_NAMED)
        .cloned()
        .collect();
    (c, problems)
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
pub fn read(
    root: &Root,
    path: &Path,
    format: LockFormat,
    text: &str,
    target: &Target,
    pyproject: Option<&str>,
    py: &Python,
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
        LockFormat::Requirements => Ok(requirements::read(
            text,
            &path.display().to_string(),
            target,
            &mut includer(root),
        )),
        LockFormat::CondaEnvironment => conda::read_environment(
            text,
            &path.display().to_string(),
            target,
            &mut includer(root),
        ),
        LockFormat::CondaLock => conda::read_conda_lock(text, target),
        LockFormat::Pixi => pixi::read(text, target, &pixi::environment_of(py.prefix.as_deref())),
    }
}

/// Reads a `-r`/`-c` include relative to the file that names it.
fn includer(root: &Root) -> impl FnMut(&str, &str) -> Result<(String, String), String> + '_ {
    move |name: &str, from: &str| {
        let dir = Path::new(from).parent().unwrap_or(Path::new("/"));
        let p = crate::root::lexical_normalize(&dir.join(name));
        let b = root
            .read_limited(&p, MAX_LOCK_BYTES)
            .map_err(|e| e.to_string())?;
        Ok((
            p.display().to_string(),
            String::from_utf8_lossy(&b).into_owned(),
        ))
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
        // `pipenv sync` installs and never removes; `pipenv clean` removes what the lock
        // lacks (keeping its `develop` packages).
        LockFormat::Pipfile => "pipenv sync && pipenv clean".into(),
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

/// For a package at the locked version but from another source or with another local label,
/// the command that really replaces it, where the lock's sync command keeps it: `pdm sync`,
/// `pipenv sync` and `pip install -r` see the version installed and leave it (checked with pdm
/// 2.29.4, pipenv 2026.10.3 and pip 23.2), where `uv sync`, `pip-sync` and `poetry install
/// --sync` replace it themselves (checked with uv 0.13.9, pip-tools 7.6.2, poetry 2.5.1).
fn reinstall_command(format: LockFormat, d: &LockDrift) -> Option<String> {
    if !matches!(d.kind, DriftKind::Source | DriftKind::Local) {
        return None;
    }
    match format {
        LockFormat::Pdm => Some("pdm sync --clean --reinstall".into()),
        LockFormat::Pipfile => Some(format!(
            "pipenv run python -m pip uninstall -y {} && pipenv sync",
            d.name
        )),
        LockFormat::Requirements if d.sync_command.starts_with("python -m pip install") => {
            Some(format!(
                "python -m pip uninstall -y {} && {}",
                d.name, d.sync_command
            ))
        }
        _ => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn drift(kind: DriftKind, sync: &str) -> LockDrift {
        LockDrift {
            name: "six".into(),
            kind,
            sync_command: sync.into(),
            ..LockDrift::default()
        }
    }

    #[test]
    fn a_same_version_from_elsewhere_gets_a_command_that_replaces_it() {
        let pip = "python -m pip install -r requirements.txt";
        let cases = [
            (
                LockFormat::Pdm,
                DriftKind::Source,
                "pdm sync --clean",
                "pdm sync --clean --reinstall",
            ),
            (
                LockFormat::Pdm,
                DriftKind::Local,
                "pdm sync --clean",
                "pdm sync --clean --reinstall",
            ),
            (
                LockFormat::Pipfile,
                DriftKind::Source,
                "pipenv sync && pipenv clean",
                "pipenv run python -m pip uninstall -y six && pipenv sync",
            ),
            (
                LockFormat::Requirements,
                DriftKind::Source,
                pip,
                "python -m pip uninstall -y six && python -m pip install -r requirements.txt",
            ),
        ];
        for (format, kind, sync, want) in cases {
            assert_eq!(
                reinstall_command(format, &drift(kind, sync)).as_deref(),
                Some(want)
            );
        }
        // The tools that replace it themselves, and the drifts a plain sync repairs.
        for (format, kind, sync) in [
            (LockFormat::Uv, DriftKind::Source, "uv sync"),
            (
                LockFormat::Poetry,
                DriftKind::Local,
                "poetry install --sync",
            ),
            (
                LockFormat::Requirements,
                DriftKind::Source,
                "pip-sync requirements.txt",
            ),
            (LockFormat::Pdm, DriftKind::Version, "pdm sync --clean"),
            (
                LockFormat::Pipfile,
                DriftKind::NotInstalled,
                "pipenv sync && pipenv clean",
            ),
        ] {
            assert_eq!(reinstall_command(format, &drift(kind, sync)), None);
        }
    }
}

#[cfg(test)]
mod bench {
    //! The target: a 500-package `uv.lock` or `pylock.toml` parsed and compared in
    //! under 20 ms. `cargo test --release --lib probe::lock::bench -- --ignored --nocapture`
    //! (bench/lock_parse.sh); each lock is shaped as uv writes it: every package with a
    //! marker-carrying dependency edge from the project, a wheel and an sdist with hashes.
    use super::*;
    use crate::snapshot::python::{Package, SysPathEntry, SysPathOrigin};
    use std::fmt::Write;

    /// 50 distinct markers, each true for CPython 3.11 on x86_64 Linux (a real lock repeats a
    /// handful: `python_full_version < '3.10'`, `sys_platform == 'linux'`, ...).
    fn marker(i: usize) -> String {
        format!(
            "python_full_version >= '3.{}' and platform_machine != 'arm{}'",
            i % 10,
            i % 5
        )
    }

    fn uv_lock(n: usize) -> String {
        let mut s = String::from("version = 1\nrevision = 3\nrequires-python = \">=3.9\"\n\n[[package]]\nname = \"demo\"\nversion = \"0.1.0\"\nsource = { editable = \".\" }\ndependencies = [\n");
        for i in 0..n {
            writeln!(
                s,
                "    {{ name = \"pkg-{i}\", marker = \"{}\" }},",
                marker(i)
            )
            .unwrap();
        }
        s.push_str("]\n");
        for i in 0..n {
            write!(s, "\n[[package]]\nname = \"pkg-{i}\"\nversion = \"1.{i}.0\"\nsource = {{ registry = \"https://pypi.org/simple\" }}\nsdist = {{ url = \"https://files.pythonhosted.org/packages/aa/bb/pkg_{i}-1.{i}.0.tar.gz\", hash = \"sha256:{:064x}\", size = 12345, upload-time = \"2025-01-01T00:00:00Z\" }}\nwheels = [\n    {{ url = \"https://files.pythonhosted.org/packages/cc/dd/pkg_{i}-1.{i}.0-py3-none-any.whl\", hash = \"sha256:{:064x}\", size = 2345, upload-time = \"2025-01-01T00:00:00Z\" }},\n]\n", i, i + 1).unwrap();
        }
        s
    }

    fn pylock(n: usize) -> String {
        let mut s = String::from(
            "lock-version = \"1.0\"\nrequires-python = \">=3.9\"\ncreated-by = \"uv\"\n",
        );
        for i in 0..n {
            write!(s, "\n[[packages]]\nname = \"pkg-{i}\"\nversion = \"1.{i}.0\"\nmarker = \"{}\"\nindex = \"https://pypi.org/simple\"\nwheels = [{{ url = \"https://files.pythonhosted.org/packages/cc/dd/pkg_{i}-1.{i}.0-py3-none-any.whl\", upload-time = 2025-01-01T00:00:00Z, size = 2345, hashes = {{ sha256 = \"{:064x}\" }} }}]\n", marker(i), i).unwrap();
        }
        s
    }

    #[test]
    #[ignore = "a benchmark: run with --ignored --nocapture"]
    fn parse_and_compare_500_packages() {
        let n = 500;
        let site = "/p/.venv/lib/python3.11/site-packages";
        let py = Python {
            path: "/p/.venv/bin/python".into(),
            version: Some("3.11.9".into()),
            sys_path: vec![SysPathEntry {
                path: site.into(),
                origin: SysPathOrigin::Site,
                exists: true,
            }],
            packages: (0..n)
                .map(|i| Package {
                    name: format!("pkg-{i}"),
                    version: format!("1.{i}.0"),
                    location: site.into(),
                    metadata: format!("{site}/pkg_{i}-1.{i}.0.dist-info"),
                    ..Package::default()
                })
                .collect(),
            ..Python::default()
        };
        let root = Root::new(tempfile::tempdir().unwrap().path());
        let target = Target::linux(Some("3.11.9"), "x86_64");
        for (name, format, text) in [
            ("uv.lock", LockFormat::Uv, uv_lock(n)),
            ("pylock.toml", LockFormat::Pylock, pylock(n)),
        ] {
            let path = Path::new("/p").join(name);
            let mut times = Vec::new();
            let mut parse = Vec::new();
            for _ in 0..5 {
                let t = std::time::Instant::now();
                let locked = read(&root, &path, format, &text, &target, None, &py).unwrap();
                parse.push(t.elapsed());
                let c = drift::compare(&root, name, "uv sync", &locked.entries, &py);
                times.push(t.elapsed());
                assert_eq!(
                    locked.entries.len(),
                    n + usize::from(format == LockFormat::Uv)
                );
                assert!(
                    c.drift.iter().all(|d| d.name == "demo"),
                    "{:?}",
                    c.drift.first()
                );
            }
            times.sort();
            parse.sort();
            println!(
                "{name}: {n} packages, {} KiB: parse+compare median {:.2} ms (parse {:.2} ms), max {:.2} ms",
                text.len() / 1024,
                times[2].as_secs_f64() * 1e3,
                parse[2].as_secs_f64() * 1e3,
                times[4].as_secs_f64() * 1e3
            );
        }
    }
}
