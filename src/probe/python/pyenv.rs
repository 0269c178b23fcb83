//! pyenv, read statically: recognising a shim, resolving it to the interpreter pyenv would run,
//! and listing installed versions under `$PYENV_ROOT/versions`. pyenv itself is never run.
//!
//! A shim is recognised by location (a file in `$PYENV_ROOT/shims`) or by content (a script
//! that `exec`s `pyenv exec`), whatever its name. Its pyenv root is the `export PYENV_ROOT=`
//! line it carries, else `$PYENV_ROOT`, else `$HOME/.pyenv`. The version is chosen as pyenv
//! does: `$PYENV_VERSION` (colon-separated, first that has the command wins), else the first
//! `.python-version` in the project directory or its parents, else `$PYENV_ROOT/version`, else
//! `system`. The first selected version that has the command wins, then (as `pyenv which` does)
//! the system one: the first non-shim of that name on PATH. A version prefix such as `3.11`
//! resolves to the newest installed `3.11.N`, as `pyenv latest` does.
//!
//! Source detail of a resolved shim (after the PATH part): `version 3.11.7 from
//! PYENV_VERSION=3.11.7`, `version 3.10.13 (from 3.10) from /proj/.python-version`, `version
//! system from /home/u/.pyenv/version: PATH entry 3: /usr/bin/python3`, `version 3.9.1 from
//! PYENV_VERSION=3.9.1 is not installed; falls back to system: PATH entry 1: /usr/bin/python3`,
//! or `version 3.9.1 from ... is not installed` when nothing has the command. An installed
//! version's detail is its directory.

use super::locate::read_head;
use super::locate::{
    env_path, interpreter_in, is_executable, prefix_kind, source, Collector, Hint,
};
use crate::snapshot::python::{PythonKind, SourceKind};
use std::path::{Path, PathBuf};

/// The pyenv root named by the environment: `$PYENV_ROOT`, else `$HOME/.pyenv`.
pub fn env_root(c: &Collector) -> Option<PathBuf> {
    env_path(c.env, "PYENV_ROOT")
        .filter(|p| p.is_absolute())
        .or_else(|| c.home().map(|h| h.join(".pyenv")))
}

/// When `path` is a pyenv shim, the pyenv root it belongs to.
pub fn shim_root(c: &mut Collector, path: &Path) -> Option<PathBuf> {
    let dir = path.parent()?;
    let env_root = env_root(c);
    if let Some(r) = &env_root {
        let here = c.root.canonicalize(dir).ok();
        if here.is_some() && here == c.root.canonicalize(&r.join("shims")).ok() {
            return Some(r.clone());
        }
    }
    let head = read_head(c, path)?;
    if !head.starts_with("#!") || !(head.contains("pyenv\" exec") || head.contains("pyenv exec")) {
        return None;
    }
    if let Some(r) = exported_root(&head) {
        return Some(r);
    }
    if dir.file_name().is_some_and(|n| n == "shims") {
        if let Some(parent) = dir.parent() {
            return Some(parent.to_path_buf());
        }
    }
    env_root
}

/// The `export PYENV_ROOT="..."` a shim carries.
fn exported_root(head: &str) -> Option<PathBuf> {
    head.lines().find_map(|l| {
        let v = l.trim().strip_prefix("export PYENV_ROOT=")?;
        let v = v.trim().trim_matches(|ch| ch == '"' || ch == '\'');
        let p = PathBuf::from(v);
        p.is_absolute().then_some(p)
    })
}

/// A shim resolved: the interpreter (or script) it would run, and how it was chosen.
pub struct Resolved {
    /// The file pyenv would exec (may not exist).
    pub path: PathBuf,
    /// Which version, chosen how.
    pub how: String,
}

/// The versions pyenv would select and where that choice comes from.
fn selected(c: &mut Collector, pyenv_root: &Path) -> (Vec<String>, String) {
    if let Some(v) = c.env.get("PYENV_VERSION") {
        let list = v.split(':').map(str::trim).filter(|s| !s.is_empty());
        return (
            list.map(String::from).collect(),
            format!("PYENV_VERSION={v}"),
        );
    }
    let mut dir = c.project.clone();
    while let Some(d) = dir {
        let file = d.join(".python-version");
        if let Some(text) = c.read_text(&file) {
            let list = version_file(&text);
            if !list.is_empty() {
                return (list, file.display().to_string());
            }
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    let global = pyenv_root.join("version");
    if let Some(text) = c.read_text(&global) {
        let list = version_file(&text);
        if !list.is_empty() {
            return (list, global.display().to_string());
        }
    }
    (vec!["system".into()], "the default (no version set)".into())
}

/// The versions listed in a `.python-version` / `version` file, as `pyenv version-file-read`
/// takes them: the first word of each line, `#` lines skipped, `..` refused.
fn version_file(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| !w.starts_with('#') && !w.split('/').any(|part| part == ".."))
        .map(String::from)
        .collect()
}

/// What a shim named `name` under `pyenv_root` would run.
pub fn resolve_shim(c: &mut Collector, pyenv_root: &Path, name: &str) -> Resolved {
    let (versions, origin) = selected(c, pyenv_root);
    let versions_dir = pyenv_root.join("versions");
    let mut first_missing: Option<Resolved> = None;
    for v in &versions {
        if v == "system" {
            if let Some((i, p)) = system_command(c, name) {
                return Resolved {
                    how: format!(
                        "version system from {origin}: PATH entry {i}: {}",
                        p.display()
                    ),
                    path: p,
                };
            }
            continue;
        }
        let (real, label) = match resolve_version(c, &versions_dir, v) {
            Some(r) if &r != v => (r.clone(), format!("{r} (from {v})")),
            _ => (v.clone(), v.clone()),
        };
        let p = versions_dir.join(&real).join("bin").join(name);
        if c.root.exists(&p) {
            return Resolved {
                path: p,
                how: format!("version {label} from {origin}"),
            };
        }
        if first_missing.is_none() {
            let why = if c.root.is_dir(&versions_dir.join(&real)) {
                format!("version {label} from {origin} has no {name}")
            } else {
                format!("version {label} from {origin} is not installed")
            };
            first_missing = Some(Resolved { path: p, how: why });
        }
    }
    // `pyenv which` falls back to the system command after the selected versions.
    if !versions.iter().any(|v| v == "system") {
        if let Some((i, p)) = system_command(c, name) {
            let why = match &first_missing {
                Some(m) => m.how.clone(),
                None => format!("version {} from {origin}", versions.join(":")),
            };
            return Resolved {
                how: format!(
                    "{why}; falls back to system: PATH entry {i}: {}",
                    p.display()
                ),
                path: p,
            };
        }
    }
    first_missing.unwrap_or_else(|| Resolved {
        path: PathBuf::from(name),
        how: format!(
            "version {} from {origin}: no {name} found",
            versions.join(":")
        ),
    })
}

/// The first executable `name` on PATH that is not a pyenv shim.
fn system_command(c: &mut Collector, name: &str) -> Option<(usize, PathBuf)> {
    let path = c.env.split_path("PATH");
    for (i, dir) in path.iter().enumerate() {
        if !dir.is_absolute() {
            continue;
        }
        let p = dir.join(name);
        if is_executable(c.root, &p) && shim_root(c, &p).is_none() {
            return Some((i, p));
        }
    }
    None
}

/// An installed version directory for `v`: itself, without a `python-` prefix, or the newest
/// installed `v.N...` (numeric parts only, as `pyenv latest`).
fn resolve_version(c: &mut Collector, versions_dir: &Path, v: &str) -> Option<String> {
    let v = v.strip_prefix("python-").unwrap_or(v);
    if c.root.is_dir(&versions_dir.join(v)) {
        return Some(v.to_string());
    }
    let want = format!("{v}.");
    c.list_dir(versions_dir)
        .into_iter()
        .filter_map(|p| p.file_name()?.to_str().map(String::from))
        .filter(|n| {
            n.strip_prefix(&want).is_some_and(|rest| {
                rest.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            })
        })
        .max_by_key(|n| numeric_key(n))
}

fn numeric_key(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// Every installed version under `$PYENV_ROOT/versions` (pyenv-virtualenv envs included).
pub fn versions(c: &mut Collector) {
    let Some(pyenv_root) = env_root(c) else {
        return;
    };
    for dir in c.list_dir(&pyenv_root.join("versions")) {
        let Some(py) = interpreter_in(c.root, &dir) else {
            continue;
        };
        let kind = prefix_kind(c.root, &dir, PythonKind::Pyenv);
        let detail = dir.display().to_string();
        c.add(
            &py,
            source(SourceKind::PyenvVersion, detail),
            Hint::kind(kind),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_files() {
        assert_eq!(
            version_file("3.11.7 ignored\n# a comment\n  3.10\nsystem # trailing\n../../x\n\n"),
            vec!["3.11.7", "3.10", "system"]
        );
        assert!(version_file("\n# only a comment\n").is_empty());
    }

    #[test]
    fn root_exported_by_a_shim() {
        let shim = "#!/usr/bin/env bash\nset -e\nprogram=\"${0##*/}\"\n\n\
                    export PYENV_ROOT=\"/opt/pyenv\"\nexec \"/opt/pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n";
        assert_eq!(exported_root(shim), Some(PathBuf::from("/opt/pyenv")));
        assert_eq!(exported_root("#!/bin/sh\n"), None);
    }

    #[test]
    fn newest_patch_wins_numerically() {
        let mut v = ["3.11.2", "3.11.10", "3.11.9"];
        v.sort_by_key(|n| numeric_key(n));
        assert_eq!(v.last(), Some(&"3.11.10"));
    }
}
