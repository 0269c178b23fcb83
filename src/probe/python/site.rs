//! An interpreter's layout and import path, read statically the way CPython computes them.
//!
//! - [`layout`]: kind, `sys.prefix`, the base interpreter of a venv and the version, from
//!   `pyvenv.cfg` (looked for beside the executable *as named* and one level up, never after
//!   canonicalising: a venv's `bin/python` is a link to its base), `conda-meta/`, the pyenv
//!   version directory, `include/python3.X/patchlevel.h` or the `lib/python3.X` layout.
//! - [`sys_path`]: `PYTHONPATH`, the standard library, then `site.py`'s order: the venv's own
//!   site-packages, the user site, the global site dirs (Debian's `dist-packages` scheme when the
//!   base is Debian's Python), each followed by the directories its `.pth` files add. Site dirs
//!   that do not exist are not added (as `site.py`); `PYTHONPATH` and stdlib entries are kept
//!   with `exists: false`, as Python keeps them.
//! - [`platlibdir`]: `sys.platlibdir` (`lib64` on Fedora/RHEL/SUSE builds), read from the
//!   interpreter's own `_sysconfigdata_*.py` text (`'PLATLIBDIR': 'lib64'`), else from where its
//!   standard library lies. It places the standard library and puts `<prefix>/lib64/...`
//!   before `<prefix>/lib/...` in `site.getsitepackages()`; a site directory that is the same
//!   directory as one already on the path (a venv's `lib64 -> lib` link) is listed once.

use super::dist_info::{self, EntryKind, Listing};
use super::pth;
use crate::root::{lexical_normalize, Env, Root};
use crate::snapshot::python::{PythonKind, SysPathEntry, SysPathOrigin};
use crate::snapshot::ProbeError;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A Python version as far as the files tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PyVersion {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch level, when known.
    pub patch: Option<u32>,
}

impl PyVersion {
    /// `3.11.7`, `3.11.7.final.0`, `3.11`, `3.12.1+` (a patch that is not a number is dropped).
    pub fn parse_loose(s: &str) -> Option<PyVersion> {
        let mut parts = s.trim().split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next().and_then(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        });
        Some(PyVersion {
            major,
            minor,
            patch,
        })
    }

    /// `3.11`, as in `lib/python3.11`.
    pub fn xy(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }
}

impl fmt::Display for PyVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.patch {
            Some(p) => write!(f, "{}.{}.{}", self.major, self.minor, p),
            None => write!(f, "{}.{}", self.major, self.minor),
        }
    }
}

/// `pyvenv.cfg`, read as `site.venv()` reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VenvCfg {
    /// Where it was found.
    pub file: PathBuf,
    /// `home`: the base interpreter's directory.
    pub home: Option<PathBuf>,
    /// `include-system-site-packages` (`site.py` treats a missing key as true).
    pub include_system_site_packages: bool,
    /// `version_info` (uv, virtualenv) or `version` (venv).
    pub version: Option<PyVersion>,
    /// `executable` (venv since 3.11): the base interpreter.
    pub executable: Option<PathBuf>,
}

/// Parse `pyvenv.cfg`: `key = value` lines, keys case-insensitive, as `site.venv()` does.
pub fn parse_pyvenv_cfg(file: &Path, text: &str) -> VenvCfg {
    let mut cfg = VenvCfg {
        file: file.to_path_buf(),
        include_system_site_packages: true,
        ..Default::default()
    };
    let mut version = None;
    let mut version_info = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        match key.as_str() {
            "include-system-site-packages" => {
                cfg.include_system_site_packages = value.eq_ignore_ascii_case("true")
            }
            "home" if !value.is_empty() => cfg.home = Some(PathBuf::from(value)),
            "executable" if !value.is_empty() => cfg.executable = Some(PathBuf::from(value)),
            "version" => version = PyVersion::parse_loose(value),
            "version_info" => version_info = PyVersion::parse_loose(value),
            _ => {}
        }
    }
    cfg.version = version_info.or(version);
    cfg
}

/// What the files say about one interpreter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// What kind of interpreter it is.
    pub kind: PythonKind,
    /// `sys.prefix`.
    pub prefix: Option<PathBuf>,
    /// `sys.base_prefix` (the prefix itself unless a venv).
    pub base_prefix: Option<PathBuf>,
    /// A venv's base interpreter.
    pub base_executable: Option<PathBuf>,
    /// Its version, from the files.
    pub version: Option<PyVersion>,
    /// Its `pyvenv.cfg`, for a venv.
    pub venv: Option<VenvCfg>,
    /// The base Python uses Debian's `dist-packages` scheme.
    pub debian: bool,
    /// `sys.platlibdir` when it is not `lib` (see [`platlibdir`]).
    pub platlibdir: Option<String>,
}

impl Layout {
    /// `sys.platlibdir`: `lib` unless the files say otherwise.
    pub fn platlibdir(&self) -> &str {
        self.platlibdir.as_deref().unwrap_or("lib")
    }
}

/// Work out kind, prefix, version and (for a venv) the base of the interpreter at `exe` (as
/// named) whose canonical path is `canonical`.
pub fn layout(
    root: &Root,
    env: &Env,
    exe: &Path,
    canonical: Option<&Path>,
    errors: &mut Vec<ProbeError>,
) -> Layout {
    let exe = lexical_normalize(exe);
    let Some(exe_dir) = exe.parent() else {
        return Layout::default();
    };
    let site_prefix = exe_dir.parent().unwrap_or(Path::new("/")).to_path_buf();
    // Anything but a directory counts as there: a pyvenv.cfg that cannot be read (a FIFO, a
    // device) still makes a venv, with a probe error, instead of making it vanish.
    let cfg_file = [exe_dir.join("pyvenv.cfg"), site_prefix.join("pyvenv.cfg")]
        .into_iter()
        .find(|f| root.exists(f) && !root.is_dir(f));
    let mut out = if let Some(file) = cfg_file {
        let cfg = read_pyvenv_cfg(root, file, errors);
        venv_layout(root, env, &exe, site_prefix, cfg)
    } else {
        plain_layout(root, env, &exe, canonical)
    };
    if let (Some(bp), Some(v)) = (&out.base_prefix, out.version) {
        out.debian = is_debian(root, bp, v);
        out.platlibdir = platlibdir(root, bp, v).filter(|d| d != "lib");
    }
    out
}

/// Longest `_sysconfigdata_*.py` read for `PLATLIBDIR` (CPython's are 30–80 KiB).
const SYSCONFIGDATA_MAX: u64 = 4 * 1024 * 1024;

/// `sys.platlibdir` of the interpreter whose (base) prefix is `prefix`: the `PLATLIBDIR` of its
/// `_sysconfigdata_*.py` (the build's `--with-platlibdir`, which is compiled into
/// `sys.platlibdir`), looked for in `lib64/python3.X` and `lib/python3.X`; without one,
/// `lib64` when only `lib64/python3.X` holds the standard library (`os.py`). None when the
/// files say nothing (Python before 3.9 has no platlibdir: `lib`).
pub fn platlibdir(root: &Root, prefix: &Path, v: PyVersion) -> Option<String> {
    if (v.major, v.minor) < (3, 9) {
        return None;
    }
    let xy = format!("python{}", v.xy());
    let dirs = ["lib64", "lib"].map(|l| prefix.join(l).join(&xy));
    for dir in &dirs {
        let Ok(Some(l)) = dist_info::list(root, dir) else {
            continue;
        };
        let mut names: Vec<&std::ffi::OsStr> = l
            .entries
            .iter()
            .filter(|(n, k)| {
                let b = n.as_bytes();
                *k != EntryKind::Dir && b.starts_with(b"_sysconfigdata_") && b.ends_with(b".py")
            })
            .map(|(n, _)| n.as_os_str())
            .collect();
        // The release build's file (`_sysconfigdata__<platform>_<multiarch>.py`, empty ABI
        // flags) before a debug build's (`_sysconfigdata_d_...`).
        names.sort_by_key(|n| (!n.as_bytes().starts_with(b"_sysconfigdata__"), n.to_owned()));
        for name in names {
            let Ok(bytes) = root.read_limited(&dir.join(name), SYSCONFIGDATA_MAX) else {
                continue;
            };
            if let Some(d) = platlibdir_var(&String::from_utf8_lossy(&bytes)) {
                return Some(d);
            }
        }
    }
    let [lib64, lib] = dirs.map(|d| root.exists(&d.join("os.py")));
    (lib64 && !lib).then(|| "lib64".to_string())
}

/// The value of `'PLATLIBDIR': '...'` in `_sysconfigdata_*.py`'s `build_time_vars`; only a
/// plain directory name is taken.
fn platlibdir_var(text: &str) -> Option<String> {
    let at = text.find("'PLATLIBDIR':")? + "'PLATLIBDIR':".len();
    let rest = text[at..].trim_start();
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let value = rest[1..].split(quote).next()?;
    let plain = !value.is_empty()
        && value != "."
        && value != ".."
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    plain.then(|| value.to_string())
}

/// The `pyvenv.cfg` at `file`; one that cannot be read includes the system site-packages (and
/// is a probe error).
fn read_pyvenv_cfg(root: &Root, file: PathBuf, errors: &mut Vec<ProbeError>) -> VenvCfg {
    match root.read_to_string_lossy(&file) {
        Ok(text) => parse_pyvenv_cfg(&file, &text),
        Err(e) => {
            errors.push(ProbeError::from_root("python", &e));
            VenvCfg {
                file,
                include_system_site_packages: true,
                ..Default::default()
            }
        }
    }
}

/// The layout of a venv: its prefix, its base interpreter and base prefix, its version.
fn venv_layout(root: &Root, env: &Env, exe: &Path, site_prefix: PathBuf, cfg: VenvCfg) -> Layout {
    let base_exe = cfg
        .executable
        .clone()
        .or_else(|| home_executable(root, &cfg, exe));
    let base_real = base_exe.as_ref().and_then(|b| root.canonicalize(b).ok());
    let base_prefix = base_real
        .as_deref()
        .or(base_exe.as_deref())
        .map(prefix_of_exe)
        .or_else(|| {
            cfg.home
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
        });
    let version = cfg.version.or_else(|| {
        let names = [base_real.as_deref(), Some(exe)];
        base_prefix
            .as_deref()
            .and_then(|bp| version_from_files(root, env, bp, &names))
            .or_else(|| version_from_files(root, env, &site_prefix, &names))
    });
    Layout {
        kind: PythonKind::Venv,
        // site.venv(): sys.prefix is the executable's directory's parent.
        prefix: Some(site_prefix),
        base_prefix,
        base_executable: base_exe,
        version,
        venv: Some(cfg),
        debian: false,
        platlibdir: None,
    }
}

/// A venv's base interpreter found from its `home`: the executable's own name there, else
/// `python3`, else `python` (the first when none exists).
fn home_executable(root: &Root, cfg: &VenvCfg, exe: &Path) -> Option<PathBuf> {
    let exe_name = exe.file_name().map(|n| n.to_os_string());
    let home = cfg.home.as_ref()?;
    let mut names: Vec<PathBuf> = exe_name.iter().map(PathBuf::from).collect();
    names.extend(["python3", "python"].map(PathBuf::from));
    let candidates: Vec<PathBuf> = names.iter().map(|n| home.join(n)).collect();
    candidates
        .iter()
        .find(|c| root.exists(c))
        .or(candidates.first())
        .cloned()
}

/// The layout of an interpreter that is not a venv: conda, pyenv, system or unknown, by where
/// it really lives.
fn plain_layout(root: &Root, env: &Env, exe: &Path, canonical: Option<&Path>) -> Layout {
    let real = canonical
        .map(Path::to_path_buf)
        .or_else(|| root.canonicalize(exe).ok());
    let real_or_named = real.clone().unwrap_or_else(|| exe.to_path_buf());
    let prefix = prefix_of_exe(&real_or_named);
    let kind = if root.is_dir(&prefix.join("conda-meta")) {
        PythonKind::Conda
    } else if pyenv_version_dir(env, &real_or_named).is_some() {
        PythonKind::Pyenv
    } else if matches!(
        real_or_named.parent().and_then(Path::to_str),
        Some("/usr/bin" | "/usr/local/bin" | "/bin")
    ) {
        PythonKind::System
    } else {
        PythonKind::Unknown
    };
    let version = version_from_files(root, env, &prefix, &[Some(&real_or_named), Some(exe)]);
    Layout {
        kind,
        prefix: Some(prefix.clone()),
        base_prefix: Some(prefix),
        version,
        ..Default::default()
    }
}

/// `bin/..` of an executable (CPython finds the same prefix through its landmark search for the
/// usual layouts).
fn prefix_of_exe(exe: &Path) -> PathBuf {
    let dir = exe.parent().unwrap_or(Path::new("/"));
    if dir.file_name().map(|n| n == "bin").unwrap_or(false) {
        dir.parent().unwrap_or(Path::new("/")).to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// `$PYENV_ROOT/versions/<name>` holding `exe`, if any (PYENV_ROOT defaults to `~/.pyenv`).
fn pyenv_version_dir(env: &Env, exe: &Path) -> Option<(PathBuf, String)> {
    let pyenv_root = env
        .get("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| env.home().map(|h| h.join(".pyenv")))?;
    let versions = pyenv_root.join("versions");
    let rest = exe.strip_prefix(&versions).ok()?;
    let name = rest.components().next()?.as_os_str().to_str()?.to_string();
    Some((versions.join(&name), name))
}

/// The version from conda-meta, the pyenv directory name, `patchlevel.h` or the layout.
fn version_from_files(
    root: &Root,
    env: &Env,
    prefix: &Path,
    exes: &[Option<&Path>],
) -> Option<PyVersion> {
    // conda-meta/python-3.11.7-h955ad1f_0.json
    if let Ok(Some(l)) = dist_info::list(root, &prefix.join("conda-meta")) {
        for (name, _) in &l.entries {
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("python-")) else {
                continue;
            };
            if !rest.ends_with(".json") || !rest.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            if let Some(v) = rest.split('-').next().and_then(PyVersion::parse_loose) {
                return Some(v);
            }
        }
    }
    for exe in exes.iter().flatten() {
        if let Some((_, name)) = pyenv_version_dir(env, exe) {
            if let Some(v) = PyVersion::parse_loose(&name) {
                return Some(v);
            }
        }
    }
    // The minor from the executable's name (python3.11), else from lib/python3.X (or
    // lib64/python3.X, where a platlibdir=lib64 build keeps its standard library).
    let minor = exes
        .iter()
        .flatten()
        .find_map(|e| {
            let n = e.file_name()?.to_str()?.strip_prefix("python")?;
            PyVersion::parse_loose(n)
        })
        .or_else(|| minor_from_lib_dirs(root, prefix))?;
    let header = prefix
        .join("include")
        .join(format!("python{}", minor.xy()))
        .join("patchlevel.h");
    if let Ok(bytes) = root.read_limited(&header, 256 * 1024) {
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if words.next() == Some("#define") && words.next() == Some("PY_VERSION") {
                let v = words.next().unwrap_or("").trim_matches('"');
                if let Some(v) = PyVersion::parse_loose(v) {
                    if v.major == minor.major && v.minor == minor.minor {
                        return Some(v);
                    }
                }
            }
        }
    }
    Some(PyVersion {
        patch: None,
        ..minor
    })
}

/// The highest `python3.X` directory (or link) in `<prefix>/lib`, else in `<prefix>/lib64`.
fn minor_from_lib_dirs(root: &Root, prefix: &Path) -> Option<PyVersion> {
    ["lib", "lib64"].iter().find_map(|lib| {
        let l = dist_info::list(root, &prefix.join(lib)).ok()??;
        l.entries
            .iter()
            .filter(|(_, k)| matches!(k, EntryKind::Dir | EntryKind::Symlink))
            .filter_map(|(n, _)| PyVersion::parse_loose(n.to_str()?.strip_prefix("python")?))
            .filter(|v| v.major >= 2)
            .max_by_key(|v| (v.major, v.minor))
    })
}

/// Debian's Python (patched `site.py` with `dist-packages`): recognised by its directories.
fn is_debian(root: &Root, prefix: &Path, v: PyVersion) -> bool {
    let lib = prefix.join("lib");
    root.is_dir(&lib.join("python3/dist-packages"))
        || (root.is_dir(&lib.join(format!("python{}/dist-packages", v.xy())))
            && !root.is_dir(&lib.join(format!("python{}/site-packages", v.xy()))))
}

/// `site.getsitepackages([prefix])` for the scheme in use: `<platlibdir>` then `lib`
/// (upstream `site.py` since 3.9).
fn site_packages(
    prefix: &Path,
    v: PyVersion,
    debian: bool,
    in_venv: bool,
    platlibdir: &str,
) -> Vec<PathBuf> {
    let xy = format!("python{}", v.xy());
    let mut out = Vec::new();
    if !debian || in_venv {
        if platlibdir != "lib" {
            out.push(prefix.join(platlibdir).join(&xy).join("site-packages"));
        }
        out.push(prefix.join("lib").join(&xy).join("site-packages"));
    }
    if debian {
        out.push(prefix.join("local/lib").join(&xy).join("dist-packages"));
        out.push(prefix.join("lib/python3/dist-packages"));
        out.push(prefix.join("lib").join(&xy).join("dist-packages"));
    }
    out
}

/// Directory listings made while building the path, reused by the package scan.
pub type Listings = HashMap<PathBuf, Option<Listing>>;

/// List `dir` once (cached); errors become probe errors and an absent listing.
pub fn listing<'a>(
    root: &Root,
    cache: &'a mut Listings,
    dir: &Path,
    errors: &mut Vec<ProbeError>,
) -> Option<&'a Listing> {
    cache
        .entry(dir.to_path_buf())
        .or_insert_with(|| match dist_info::list(root, dir) {
            Ok(l) => l,
            Err(e) => {
                errors.push(ProbeError::from_root("python", &e));
                None
            }
        })
        .as_ref()
}

struct PathBuilder<'a> {
    root: &'a Root,
    entries: Vec<SysPathEntry>,
    known: HashSet<PathBuf>,
    /// Canonical paths of the site directories added, so that an alias of one (a venv's
    /// `lib64 -> lib`, which `site.py` would list a second time under its other name) is
    /// listed once: the import finds the same files either way.
    site_real: HashSet<PathBuf>,
    listings: Listings,
}

impl PathBuilder<'_> {
    fn push(&mut self, path: PathBuf, origin: SysPathOrigin, exists: bool) {
        if self.known.insert(path.clone()) {
            self.entries.push(SysPathEntry {
                path: path.to_string_lossy().into_owned(),
                origin,
                exists,
            });
        }
    }

    /// `site.addsitedir`: the dir (if new) then, in name order, every `.pth` file's paths.
    fn add_site_dir(&mut self, dir: PathBuf, origin: SysPathOrigin, errors: &mut Vec<ProbeError>) {
        if let Ok(real) = self.root.canonicalize(&dir) {
            if !self.known.contains(&dir) && !self.site_real.insert(real) {
                return;
            }
        }
        let Some(l) = listing(self.root, &mut self.listings, &dir, errors) else {
            return;
        };
        let pth_files: Vec<PathBuf> = l
            .entries
            .iter()
            .filter(|(n, k)| {
                let b = n.as_bytes();
                b.ends_with(b".pth") && !b.starts_with(b".") && *k != EntryKind::Dir
            })
            .map(|(n, _)| dir.join(n))
            .collect();
        self.push(dir.clone(), origin, true);
        for file in pth_files {
            let text = match self.root.read_limited(&file, 1024 * 1024) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(e) => {
                    errors.push(ProbeError::from_root("python", &e));
                    continue;
                }
            };
            for line in pth::parse(&dir, &text) {
                if let pth::Line::Path(p) = line {
                    if !self.known.contains(&p) && self.root.exists(&p) {
                        self.push(p, SysPathOrigin::Pth, true);
                    }
                }
            }
        }
    }
}

/// The import path of an interpreter with this layout, in Python's order, and the listings of
/// the site directories read on the way.
pub fn sys_path(
    root: &Root,
    env: &Env,
    lay: &Layout,
    errors: &mut Vec<ProbeError>,
) -> (Vec<SysPathEntry>, Listings) {
    let mut b = PathBuilder {
        root,
        entries: Vec::new(),
        known: HashSet::new(),
        site_real: HashSet::new(),
        listings: HashMap::new(),
    };
    b.add_pythonpath(env);
    let Some(v) = lay.version else {
        return (b.entries, b.listings);
    };
    b.add_stdlib(env, lay, v);
    b.add_site_packages(env, lay, v, errors);
    (b.entries, b.listings)
}

impl PathBuilder<'_> {
    /// `PYTHONPATH`, relative entries kept as given (and marked missing).
    fn add_pythonpath(&mut self, env: &Env) {
        for p in env.split_path("PYTHONPATH") {
            if p.as_os_str().is_empty() {
                continue;
            }
            let exists = p.is_absolute() && self.root.exists(&p);
            let p = if p.is_absolute() {
                lexical_normalize(&p)
            } else {
                p
            };
            self.push(p, SysPathOrigin::Pythonpath, exists);
        }
    }

    /// The standard library directories under the base prefix (or `PYTHONHOME`).
    fn add_stdlib(&mut self, env: &Env, lay: &Layout, v: PyVersion) {
        // PYTHONHOME replaces the prefix the standard library is found under.
        let stdlib_prefix = env
            .get("PYTHONHOME")
            .map(|h| PathBuf::from(h.split(':').next().unwrap_or(h)))
            .or_else(|| lay.base_prefix.clone());
        let Some(sp) = &stdlib_prefix else {
            return;
        };
        // getpath: the standard library lives under `<prefix>/<platlibdir>` since 3.9.
        let lib = sp.join(lay.platlibdir());
        let zip = lib.join(format!("python{}{}.zip", v.major, v.minor));
        let std = lib.join(format!("python{}", v.xy()));
        let dynload = std.join("lib-dynload");
        let mut stdlib = vec![zip, std.clone()];
        if v.major == 2 {
            // Python 2's compiled-in path has three more directories (kept even when missing).
            stdlib.extend(["plat-linux2", "lib-tk", "lib-old"].map(|d| std.join(d)));
        }
        stdlib.push(dynload);
        for p in stdlib {
            let exists = self.root.exists(&p);
            self.push(p, SysPathOrigin::Stdlib, exists);
        }
    }

    /// The site directories with their `.pth` files: the venv's own, the user site, the
    /// system's (each as the venv's `pyvenv.cfg` and the environment allow).
    fn add_site_packages(
        &mut self,
        env: &Env,
        lay: &Layout,
        v: PyVersion,
        errors: &mut Vec<ProbeError>,
    ) {
        let in_venv = lay.venv.is_some();
        let system_site = lay
            .venv
            .as_ref()
            .map(|c| c.include_system_site_packages)
            .unwrap_or(true);
        if let (Some(cfg_prefix), true) = (&lay.prefix, in_venv) {
            for d in site_packages(cfg_prefix, v, lay.debian, true, lay.platlibdir()) {
                self.add_site_dir(d, SysPathOrigin::Site, errors);
            }
        }
        let user_site_enabled = system_site && env.get("PYTHONNOUSERSITE").is_none();
        if user_site_enabled {
            let user_base = env
                .get("PYTHONUSERBASE")
                .map(PathBuf::from)
                .or_else(|| env.home().map(|h| h.join(".local")));
            if let Some(ub) = user_base {
                let dir = ub
                    .join("lib")
                    .join(format!("python{}", v.xy()))
                    .join("site-packages");
                self.add_site_dir(lexical_normalize(&dir), SysPathOrigin::UserSite, errors);
            }
        }
        if system_site {
            if let Some(bp) = &lay.base_prefix {
                let origin = if in_venv {
                    SysPathOrigin::SystemSite
                } else {
                    SysPathOrigin::Site
                };
                for d in site_packages(bp, v, lay.debian, in_venv, lay.platlibdir()) {
                    self.add_site_dir(d, origin, errors);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyvenv_cfg_keys() {
        let cfg = parse_pyvenv_cfg(
            Path::new("/v/pyvenv.cfg"),
            "home = /usr/bin\nInclude-System-Site-Packages = False\nversion = 3.11.2\nexecutable = /usr/bin/python3.11\ncommand = x = y\n",
        );
        assert_eq!(cfg.home.as_deref(), Some(Path::new("/usr/bin")));
        assert!(!cfg.include_system_site_packages);
        assert_eq!(
            cfg.version.map(|v| v.to_string()).as_deref(),
            Some("3.11.2")
        );
        assert_eq!(
            cfg.executable.as_deref(),
            Some(Path::new("/usr/bin/python3.11"))
        );
        // site.py: a missing key means true; virtualenv's version_info wins over version.
        let cfg = parse_pyvenv_cfg(
            Path::new("/v/pyvenv.cfg"),
            "home=/opt/py/bin\nversion_info = 3.12.1.final.0\nversion = 3.12\n",
        );
        assert!(cfg.include_system_site_packages);
        assert_eq!(
            cfg.version.map(|v| v.to_string()).as_deref(),
            Some("3.12.1")
        );
    }

    #[test]
    fn loose_versions() {
        assert_eq!(
            PyVersion::parse_loose("3.13.0rc1").map(|v| v.to_string()),
            Some("3.13.0".into())
        );
        assert_eq!(PyVersion::parse_loose("3").map(|v| v.to_string()), None);
        assert_eq!(
            PyVersion::parse_loose("3.10").map(|v| v.to_string()),
            Some("3.10".into())
        );
    }

    #[test]
    fn debian_scheme_order() {
        let v = PyVersion::parse_loose("3.11").unwrap();
        let d = site_packages(Path::new("/usr"), v, true, false, "lib");
        assert_eq!(
            d,
            vec![
                PathBuf::from("/usr/local/lib/python3.11/dist-packages"),
                PathBuf::from("/usr/lib/python3/dist-packages"),
                PathBuf::from("/usr/lib/python3.11/dist-packages"),
            ]
        );
        assert_eq!(
            site_packages(Path::new("/opt/py"), v, false, false, "lib"),
            vec![PathBuf::from("/opt/py/lib/python3.11/site-packages")]
        );
        assert_eq!(
            site_packages(Path::new("/usr"), v, false, false, "lib64"),
            vec![
                PathBuf::from("/usr/lib64/python3.11/site-packages"),
                PathBuf::from("/usr/lib/python3.11/site-packages"),
            ]
        );
    }

    #[test]
    fn platlibdir_from_sysconfigdata_text() {
        // The shape of CPython's generated file (pprint of build_time_vars).
        let text = "build_time_vars = {'ABIFLAGS': '',\n 'PLATLIBDIR': 'lib64',\n 'LIBDIR': '/usr/lib64'}\n";
        assert_eq!(platlibdir_var(text).as_deref(), Some("lib64"));
        assert_eq!(
            platlibdir_var(" 'PLATLIBDIR': 'lib',").as_deref(),
            Some("lib")
        );
        assert_eq!(platlibdir_var(" 'PLATLIBDIR': '../etc',"), None);
        assert_eq!(platlibdir_var(" 'PLATLIBDIR': '',"), None);
        assert_eq!(platlibdir_var(" 'PLATLIBDIR': 3,"), None);
        assert_eq!(platlibdir_var(" 'PLATLIBDIR"), None);
        assert_eq!(platlibdir_var("'platlibdir': 'lib64'"), None);
    }
}
