//! The collector API every interpreter locator reports through, and the helpers they share:
//! [`Collector`] (dedupe by [`Found`] key, errors, bounded reads), [`Hint`], [`source`], the
//! interpreter-name tests and prefix helpers. Locators (`discovery_path`, `pyenv`, `conda`,
//! `project`, `ide`) depend on this module only (and `discovery_path` on `pyenv` for shims);
//! `discovery` lists them in order. The dedupe key is described in `discovery`'s docs.

use crate::root::{lexical_normalize, Env, Root, RootError};
use crate::snapshot::python::{PythonKind, Source, SourceKind};
use crate::snapshot::ProbeError;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Name used in `probe_errors[].probe`.
pub const PROBE: &str = "python";

/// One interpreter found, before inspection.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Found {
    /// The interpreter as first named (not canonicalised). Absolute, except for a bare command
    /// name (`python`) that a reference looked up on PATH without finding it (then `canonical`
    /// is `None`).
    pub path: PathBuf,
    /// Where it resolves to; `None` when it does not exist.
    pub canonical: Option<PathBuf>,
    /// Everything that named it, in discovery order.
    pub sources: Vec<Source>,
    /// The kind a source implied (a conda env, a pyenv version, ...), if any.
    pub kind_hint: Option<PythonKind>,
    /// A conda env name, when the source gave one.
    pub conda_env: Option<String>,
}

/// Identity of an interpreter for deduplication (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Venv(PathBuf, PathBuf),
    Real(PathBuf),
    Missing(PathBuf),
}

/// What a reference contributes besides its source.
#[derive(Clone, Debug, Default)]
pub struct Hint {
    /// The kind the reference implies.
    pub kind: Option<PythonKind>,
    /// A conda env name.
    pub conda_env: Option<String>,
}

impl Hint {
    /// A hint with only a kind.
    pub fn kind(kind: PythonKind) -> Self {
        Hint {
            kind: Some(kind),
            conda_env: None,
        }
    }
}

/// Collects references, deduplicating them, and the errors met on the way.
pub struct Collector<'a> {
    /// The machine.
    pub root: &'a Root,
    /// Its environment.
    pub env: &'a Env,
    /// The project directory (a machine path).
    pub project: Option<PathBuf>,
    /// Errors met so far.
    pub errors: &'a mut Vec<ProbeError>,
    /// Interpreters found so far, in discovery order.
    pub found: Vec<Found>,
    index: HashMap<Key, usize>,
}

impl<'a> Collector<'a> {
    /// An empty collector.
    pub fn new(
        root: &'a Root,
        env: &'a Env,
        project: Option<PathBuf>,
        errors: &'a mut Vec<ProbeError>,
    ) -> Self {
        Collector {
            root,
            env,
            project,
            errors,
            found: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Record an error about `path`.
    pub fn error(&mut self, path: &Path, message: impl Into<String>) {
        self.errors.push(ProbeError::at(PROBE, path, message));
    }

    /// Record a root error (it names its path).
    pub fn root_error(&mut self, err: &RootError) {
        self.errors.push(ProbeError::from_root(PROBE, err));
    }

    /// Record that `path` (an absolute machine path) names an interpreter. A missing file is
    /// kept (`canonical: None`); a symlink loop is kept the same way and also reported.
    pub fn add(&mut self, path: &Path, source: Source, hint: Hint) {
        let path = if path.is_absolute() {
            lexical_normalize(path)
        } else {
            path.to_path_buf()
        };
        let canonical = if path.is_absolute() {
            match self.root.canonicalize(&path) {
                Ok(c) => Some(c),
                Err(e) if e.is_not_found() => None,
                Err(e) => {
                    self.root_error(&e);
                    None
                }
            }
        } else {
            None
        };
        let key = match &canonical {
            None => Key::Missing(path.clone()),
            Some(real) => match self.venv_prefix(&path) {
                Some(prefix) => Key::Venv(prefix, real.clone()),
                None => Key::Real(real.clone()),
            },
        };
        if let Some(&i) = self.index.get(&key) {
            let f = &mut self.found[i];
            if !f.sources.contains(&source) {
                f.sources.push(source);
            }
            if f.kind_hint.is_none() {
                f.kind_hint = hint.kind;
            }
            if f.conda_env.is_none() {
                f.conda_env = hint.conda_env;
            }
            return;
        }
        if path.to_str().is_none() {
            self.error(
                &path,
                "the path is not valid UTF-8; it is written with replacement characters",
            );
        }
        self.index.insert(key, self.found.len());
        self.found.push(Found {
            path,
            canonical,
            sources: vec![source],
            kind_hint: hint.kind,
            conda_env: hint.conda_env,
        });
    }

    /// `realpath(<prefix>)` when `path` is `<prefix>/<bin>/<name>` with `<prefix>/pyvenv.cfg`.
    fn venv_prefix(&self, path: &Path) -> Option<PathBuf> {
        let prefix = path.parent()?.parent()?;
        if self.root.is_file(&prefix.join("pyvenv.cfg")) {
            self.root.canonicalize(prefix).ok()
        } else {
            None
        }
    }

    /// `$HOME` as a machine path (raw bytes kept).
    pub fn home(&self) -> Option<PathBuf> {
        env_path(self.env, "HOME")
    }

    /// A directory listing where a missing directory is simply empty and any other failure
    /// (permissions, a loop, not a directory) is reported.
    pub fn list_dir(&mut self, dir: &Path) -> Vec<PathBuf> {
        match self.root.read_dir(dir) {
            Ok(v) => v,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => {
                self.root_error(&e);
                Vec::new()
            }
        }
    }

    /// Read a small text file; a missing file is `None` silently, other failures are reported.
    pub fn read_text(&mut self, file: &Path) -> Option<String> {
        match self.root.read_limited(file, MAX_CONFIG_BYTES) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                self.root_error(&e);
                None
            }
        }
    }
}

/// Largest settings / config file read by discovery (they are small; a huge one is refused).
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// A source with a kind and detail.
pub fn source(kind: SourceKind, detail: impl Into<String>) -> Source {
    Source {
        kind,
        detail: detail.into(),
        ..Default::default()
    }
}

/// An environment variable as a path (raw bytes kept), when set and non-empty.
pub fn env_path(env: &Env, name: &str) -> Option<PathBuf> {
    env.get_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// True for `python`, `python3`, `python3.11` (not `python3-config`, `python3.11m`).
pub fn is_python_name(name: &OsStr) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix("python"))
        .is_some_and(version_suffix)
}

/// True for `pip`, `pip3`, `pip3.11`.
pub fn is_pip_name(name: &OsStr) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix("pip"))
        .is_some_and(version_suffix)
}

/// `""`, `3`, `3.11`.
fn version_suffix(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let mut parts = s.split('.');
    let ok =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let major = parts.next();
    if !ok(major) {
        return false;
    }
    match parts.next() {
        None => true,
        minor => ok(minor) && parts.next().is_none(),
    }
}

/// True when `path` (links followed) is a regular file with an execute bit.
pub fn is_executable(root: &Root, path: &Path) -> bool {
    root.metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The interpreter of an environment prefix: `bin/python`, else `bin/python3`, else the first
/// `bin/pythonX.Y`. `None` when there is none (the caller decides whether that is a fact).
pub fn interpreter_in(root: &Root, prefix: &Path) -> Option<PathBuf> {
    let bin = prefix.join("bin");
    for name in ["python", "python3"] {
        let p = bin.join(name);
        if root.exists(&p) {
            return Some(p);
        }
    }
    root.read_dir(&bin)
        .ok()?
        .into_iter()
        .find(|p| p.file_name().is_some_and(is_python_name) && root.exists(p))
}

/// The interpreter of `prefix`, or `<prefix>/bin/python` (missing) when it has none.
pub fn interpreter_or_default(root: &Root, prefix: &Path) -> PathBuf {
    interpreter_in(root, prefix).unwrap_or_else(|| prefix.join("bin/python"))
}

/// The kind an environment prefix's layout tells: `pyvenv.cfg` (venv), `conda-meta/` (conda),
/// else `default`.
pub fn prefix_kind(root: &Root, prefix: &Path, default: PythonKind) -> PythonKind {
    if root.is_file(&prefix.join("pyvenv.cfg")) {
        PythonKind::Venv
    } else if root.is_dir(&prefix.join("conda-meta")) {
        PythonKind::Conda
    } else {
        default
    }
}

/// Bytes read from the start of a script: enough for a shebang and pip's `exec` trick.
const HEAD_BYTES: u64 = 4096;

/// The first [`HEAD_BYTES`] of a file as text (lossy), or `None` (reported unless missing).
pub fn read_head(c: &mut Collector, file: &Path) -> Option<String> {
    let f = match c.root.open(file) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return None,
        Err(e) => {
            c.root_error(&e);
            return None;
        }
    };
    let mut buf = Vec::new();
    if let Err(e) = f.take(HEAD_BYTES).read_to_end(&mut buf) {
        c.error(file, format!("cannot read: {e}"));
        return None;
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    #[test]
    fn interpreter_names() {
        for ok in ["python", "python3", "python3.11", "python2.7"] {
            assert!(is_python_name(OsStr::new(ok)), "{ok}");
        }
        for bad in [
            "python3-config",
            "python3.11m",
            "python3.",
            "python.3",
            "pythonw",
            "python3.11.1",
            "ipython3",
        ] {
            assert!(!is_python_name(OsStr::new(bad)), "{bad}");
        }
        assert!(is_pip_name(OsStr::new("pip3.12")));
        assert!(!is_pip_name(OsStr::new("pipx")));
    }

    fn exe(p: &Path) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, "#!/bin/sh\nexit 1\n").unwrap();
        fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn venvs_keep_their_identity_and_base_links_merge() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        exe(&r.join("usr/bin/python3.11"));
        symlink("python3.11", r.join("usr/bin/python3")).unwrap();
        for v in ["a", "b"] {
            let bin = r.join(format!("venvs/{v}/bin"));
            fs::create_dir_all(&bin).unwrap();
            fs::write(r.join(format!("venvs/{v}/pyvenv.cfg")), "home = /usr/bin\n").unwrap();
            symlink("/usr/bin/python3", bin.join("python3")).unwrap();
            symlink("python3", bin.join("python")).unwrap();
        }
        // A link to a venv directory: the same venv by another spelling.
        symlink("/venvs/a", r.join("alias")).unwrap();
        let root = Root::new(r);
        let env = Env::default();
        let mut errors = Vec::new();
        let mut c = Collector::new(&root, &env, None, &mut errors);
        let s = |d: &str| source(SourceKind::Other, d);
        c.add(Path::new("/usr/bin/python3"), s("1"), Hint::default());
        c.add(Path::new("/usr/bin/python3.11"), s("2"), Hint::default());
        c.add(Path::new("/venvs/a/bin/python"), s("3"), Hint::default());
        c.add(Path::new("/venvs/a/bin/python3"), s("4"), Hint::default());
        c.add(Path::new("/alias/bin/python"), s("5"), Hint::default());
        c.add(Path::new("/venvs/b/bin/python"), s("6"), Hint::default());
        c.add(Path::new("/gone/bin/python"), s("7"), Hint::default());
        c.add(
            Path::new("/gone/bin/../bin/python"),
            s("8"),
            Hint::default(),
        );
        let found = std::mem::take(&mut c.found);
        let got: Vec<(String, Vec<String>)> = found
            .iter()
            .map(|f| {
                (
                    f.path.display().to_string(),
                    f.sources.iter().map(|s| s.detail.clone()).collect(),
                )
            })
            .collect();
        let want = |p: &str, s: &[&str]| (p.to_string(), s.iter().map(|x| x.to_string()).collect());
        assert_eq!(
            got,
            vec![
                want("/usr/bin/python3", &["1", "2"]),
                want("/venvs/a/bin/python", &["3", "4", "5"]),
                want("/venvs/b/bin/python", &["6"]),
                want("/gone/bin/python", &["7", "8"]),
            ]
        );
        assert_eq!(
            found[1].canonical.as_deref(),
            Some(Path::new("/usr/bin/python3.11"))
        );
        assert_eq!(found[3].canonical, None);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn a_symlink_loop_is_kept_missing_and_reported() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        fs::create_dir_all(r.join("bin")).unwrap();
        symlink("python3", r.join("bin/python")).unwrap();
        symlink("python", r.join("bin/python3")).unwrap();
        let root = Root::new(r);
        let env = Env::default();
        let mut errors = Vec::new();
        let mut c = Collector::new(&root, &env, None, &mut errors);
        c.add(
            Path::new("/bin/python"),
            source(SourceKind::Other, "x"),
            Hint::default(),
        );
        assert_eq!(c.found.len(), 1);
        assert_eq!(c.found[0].canonical, None);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path.as_deref(), Some("/bin/python"));
        assert!(errors[0].message.contains("loop"), "{}", errors[0].message);
    }
}
