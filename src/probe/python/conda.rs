//! conda, read statically: its installations (roots), their environments, and the envs listed
//! in `~/.conda/environments.txt`. conda itself is never run.
//!
//! A conda root is a directory with `conda-meta/`, taken from `$CONDA_EXE`
//! (`<root>/bin/conda` or `<root>/condabin/conda`), `$CONDA_PREFIX` / `$CONDA_PREFIX_1` (the env
//! itself when it is a root, else the root above `envs/`), `$MAMBA_ROOT_PREFIX`, then the usual
//! places (`~/miniconda3`, `~/anaconda3`, `~/miniforge3`, `~/mambaforge`, `/opt/conda`,
//! `/opt/miniconda3`, `/opt/anaconda3`). Env directories: `<root>/envs`, `~/.conda/envs` and
//! `$CONDA_ENVS_PATH` / `$CONDA_ENVS_DIRS` entries. Prefixes without an interpreter (an R-only
//! env, a stale `environments.txt` line) are not interpreters and are skipped.
//!
//! Source details: `base env /home/u/miniconda3 (conda root from CONDA_EXE=...)`,
//! `env ml in /home/u/miniconda3/envs`, `/home/u/.conda/environments.txt line 2: /path`.

use super::locate::{env_path, interpreter_in, source, Collector, Hint};
use crate::root::Root;
use crate::snapshot::python::{PythonKind, SourceKind};
use std::path::{Path, PathBuf};

/// A conda installation and how it was found.
struct CondaRoot {
    prefix: PathBuf,
    how: String,
}

fn is_root(root: &Root, prefix: &Path) -> bool {
    root.is_dir(&prefix.join("conda-meta"))
        && (root.is_dir(&prefix.join("envs"))
            || root.is_dir(&prefix.join("condabin"))
            || root.exists(&prefix.join("bin/conda")))
}

/// The root above an env prefix (`<root>/envs/<name>`), or the prefix when it is a root.
fn root_of(root: &Root, prefix: &Path) -> Option<PathBuf> {
    if is_root(root, prefix) {
        return Some(prefix.to_path_buf());
    }
    let envs = prefix.parent()?;
    if envs.file_name()? == "envs" {
        let r = envs.parent()?;
        return root.is_dir(&r.join("conda-meta")).then(|| r.to_path_buf());
    }
    None
}

/// The env name of a conda prefix: its directory name under a root's `envs/` (or
/// `~/.conda/envs/`), or `base` for a root.
pub fn env_name(root: &Root, prefix: &Path) -> Option<String> {
    if is_root(root, prefix) {
        return Some("base".into());
    }
    // Named only inside a conda root's `envs/` or `~/.conda/envs/`; elsewhere conda names an
    // env by its path.
    let envs = prefix.parent()?;
    let above = envs.parent()?;
    let named = envs.file_name()? == "envs"
        && (above.file_name().is_some_and(|n| n == ".conda")
            || root.is_dir(&above.join("conda-meta")));
    named.then(|| prefix.file_name().map(|n| n.to_string_lossy().into_owned()))?
}

fn roots(c: &mut Collector) -> Vec<CondaRoot> {
    let mut cands: Vec<(PathBuf, String)> = Vec::new();
    if let Some(exe) = env_path(c.env, "CONDA_EXE") {
        if let Some(r) = exe.parent().and_then(Path::parent) {
            cands.push((r.to_path_buf(), format!("CONDA_EXE={}", exe.display())));
        }
    }
    for var in ["CONDA_PREFIX", "CONDA_PREFIX_1", "MAMBA_ROOT_PREFIX"] {
        if let Some(p) = env_path(c.env, var) {
            if let Some(r) = root_of(c.root, &p) {
                cands.push((r, format!("{var}={}", p.display())));
            }
        }
    }
    if let Some(home) = c.home() {
        for d in ["miniconda3", "anaconda3", "miniforge3", "mambaforge"] {
            cands.push((home.join(d), "a usual place".into()));
        }
    }
    for d in ["/opt/conda", "/opt/miniconda3", "/opt/anaconda3"] {
        cands.push((PathBuf::from(d), "a usual place".into()));
    }
    let mut out: Vec<CondaRoot> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for (prefix, how) in cands {
        if !prefix.is_absolute() || !c.root.is_dir(&prefix.join("conda-meta")) {
            continue;
        }
        let Ok(real) = c.root.canonicalize(&prefix) else {
            continue;
        };
        if seen.contains(&real) {
            continue;
        }
        seen.push(real);
        out.push(CondaRoot { prefix, how });
    }
    out
}

/// Directories that hold named envs.
fn envs_dirs(c: &Collector, roots: &[CondaRoot]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = roots.iter().map(|r| r.prefix.join("envs")).collect();
    if let Some(home) = c.home() {
        dirs.push(home.join(".conda/envs"));
    }
    for var in ["CONDA_ENVS_PATH", "CONDA_ENVS_DIRS"] {
        dirs.extend(
            c.env
                .split_path(var)
                .into_iter()
                .filter(|d| d.is_absolute()),
        );
    }
    let mut uniq = Vec::new();
    for d in dirs {
        if !uniq.contains(&d) {
            uniq.push(d);
        }
    }
    uniq
}

fn conda_hint(c: &Collector, prefix: &Path) -> Hint {
    Hint {
        kind: Some(PythonKind::Conda),
        conda_env: env_name(c.root, prefix),
    }
}

/// Every conda root's base env, every named env, and every `environments.txt` line.
pub fn discover(c: &mut Collector) {
    let roots = roots(c);
    for r in &roots {
        if let Some(py) = interpreter_in(c.root, &r.prefix) {
            let detail = format!(
                "base env {} (conda root from {})",
                r.prefix.display(),
                r.how
            );
            let hint = conda_hint(c, &r.prefix);
            c.add(&py, source(SourceKind::CondaEnv, detail), hint);
        }
    }
    for dir in envs_dirs(c, &roots) {
        for env in c.list_dir(&dir) {
            let Some(py) = interpreter_in(c.root, &env) else {
                continue;
            };
            let name = env.file_name().unwrap_or_default().to_string_lossy();
            let detail = format!("env {name} in {}", dir.display());
            let hint = conda_hint(c, &env);
            c.add(&py, source(SourceKind::CondaEnv, detail), hint);
        }
    }
    let Some(home) = c.home() else {
        return;
    };
    let list = home.join(".conda/environments.txt");
    let Some(text) = c.read_text(&list) else {
        return;
    };
    for (n, line) in text.lines().enumerate() {
        let prefix = PathBuf::from(line.trim());
        if !prefix.is_absolute() {
            continue;
        }
        let Some(py) = interpreter_in(c.root, &prefix) else {
            continue;
        };
        let detail = format!("{} line {}: {}", list.display(), n + 1, prefix.display());
        let hint = conda_hint(c, &prefix);
        c.add(&py, source(SourceKind::CondaEnv, detail), hint);
    }
}

/// The prefix of the conda env called `name` (`base`: the first root), searched in the roots,
/// the env directories and `environments.txt`. When none exists, where it would be created
/// (`<first root>/envs/<name>`), or `None` without any conda.
pub fn find_env(c: &mut Collector, name: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let roots = roots(c);
    if name == "base" {
        return (roots.first().map(|r| r.prefix.clone()), None);
    }
    for dir in envs_dirs(c, &roots) {
        let p = dir.join(name);
        if c.root.is_dir(&p) {
            return (Some(p), None);
        }
    }
    if let Some(home) = c.home() {
        if let Some(text) = c.read_text(&home.join(".conda/environments.txt")) {
            for line in text.lines() {
                let p = PathBuf::from(line.trim());
                if p.is_absolute() && p.file_name().is_some_and(|n| n == name) && c.root.is_dir(&p)
                {
                    return (Some(p), None);
                }
            }
        }
    }
    (
        None,
        roots.first().map(|r| r.prefix.join("envs").join(name)),
    )
}
