//! The machine being probed: a filesystem prefix ([`Root`]) and an environment ([`Env`]).
//!
//! Every probe reads the filesystem through a [`Root`]. With the default root `/` this is the
//! real machine; with `--root DIR`, `DIR` plays the machine's `/`: absolute paths found in
//! environment variables, config files and symlink targets are resolved *inside* it, so a whole
//! fake machine under `fixtures/machines/` can be probed in tests.
//!
//! Paths handed around by probes are *machine paths* (absolute paths as the probed machine sees
//! them, e.g. `/usr/local/cuda/lib64`). [`Root::host_path`] turns one into the path on this host
//! without following links; [`Root::canonicalize`] follows links the way the kernel would, but
//! never leaves the root. Reads refuse anything that is not a regular file (a FIFO named
//! `METADATA` would otherwise block `open(2)` forever).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

/// Symlink hops followed before a path is declared a loop (the kernel's `MAXSYMLINKS` is 40).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// Deepest path whose directories are resolved through the memo (real paths stay far below).
const MEMO_DEPTH: usize = 64;

/// Largest file the generic readers return, so a hostile or huge file cannot exhaust memory.
pub const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

/// A filesystem prefix that plays the probed machine's `/`.
///
/// Directories it has resolved are remembered (shared by its clones): a probe run opens
/// thousands of files in a few hundred directories, and under a prefix each open would
/// otherwise `lstat` every component of its path again. A root lives for one run, so a
/// directory replaced by a link while it runs is not seen; files are always resolved afresh.
#[derive(Clone, Debug)]
pub struct Root {
    prefix: PathBuf,
    dirs: std::sync::Arc<std::sync::RwLock<std::collections::HashMap<PathBuf, PathBuf>>>,
}

impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        self.prefix == other.prefix
    }
}

impl Eq for Root {}

/// Why a path could not be resolved or read. Carries the machine path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("{path}: {source}")]
    /// An I/O error.
    Io {
        /// The machine path.
        path: PathBuf,
        #[source]
        /// The error.
        source: io::Error,
    },
    #[error("{path}: too many levels of symbolic links (a symlink loop)")]
    /// A symlink loop.
    Loop {
        /// The machine path.
        path: PathBuf,
    },
    #[error("{path}: not a regular file ({kind})")]
    /// Not a regular file.
    NotAFile {
        /// The machine path.
        path: PathBuf,
        /// What it is instead (`a FIFO`, `a directory`).
        kind: &'static str,
    },
    #[error("{path}: larger than {limit} bytes")]
    /// Larger than a read allows.
    TooLarge {
        /// The machine path.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    #[error("{path}: not an absolute path")]
    /// A relative path where a machine path must be absolute.
    Relative {
        /// The path.
        path: PathBuf,
    },
}

impl RootError {
    /// The machine path this error is about.
    pub fn path(&self) -> &Path {
        match self {
            RootError::Io { path, .. }
            | RootError::Loop { path }
            | RootError::NotAFile { path, .. }
            | RootError::TooLarge { path, .. }
            | RootError::Relative { path } => path,
        }
    }

    /// True when the error says the file simply is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, RootError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

fn io_err(path: &Path, source: io::Error) -> RootError {
    RootError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One hop of a symlink chain: the link's machine path and the target text it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The link's machine path.
    pub link: PathBuf,
    /// What it points to, as written.
    pub target: PathBuf,
}

impl Root {
    /// A root at `prefix` (a host path). `/` probes this machine.
    pub fn new(prefix: impl Into<PathBuf>) -> Self {
        Root {
            prefix: prefix.into(),
            dirs: Default::default(),
        }
    }

    /// The root of this machine, `/`.
    pub fn host() -> Self {
        Root::new("/")
    }

    /// The host path that plays `/`.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    /// True when this root is the real machine (`/`).
    pub fn is_host(&self) -> bool {
        self.prefix == Path::new("/")
    }

    /// The host path of a machine path, lexically (no link is followed). A relative machine path
    /// is taken relative to `/`.
    pub fn host_path(&self, machine: &Path) -> PathBuf {
        let mut out = self.prefix.clone();
        for c in machine.components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::ParentDir => {
                    // Never climb above the prefix.
                    if out != self.prefix {
                        out.pop();
                    }
                }
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        out
    }

    /// The machine path of a host path under the prefix (`None` when it lies outside).
    pub fn machine_path(&self, host: &Path) -> Option<PathBuf> {
        let rest = host.strip_prefix(&self.prefix).ok()?;
        Some(Path::new("/").join(rest))
    }

    /// Resolve every symlink in `machine` inside the root, as `realpath(3)` would on the probed
    /// machine. The result is a machine path. Errors on loops and on missing components.
    pub fn canonicalize(&self, machine: &Path) -> Result<PathBuf, RootError> {
        self.resolve(machine, true)
    }

    /// Like [`Root::canonicalize`] but the last component may be missing or a dangling link;
    /// only the parents must exist. Useful to say where a broken link points.
    pub fn canonicalize_parent(&self, machine: &Path) -> Result<PathBuf, RootError> {
        self.resolve(machine, false)
    }

    fn resolve(&self, machine: &Path, must_exist: bool) -> Result<PathBuf, RootError> {
        if !machine.is_absolute() {
            return Err(RootError::Relative {
                path: machine.to_path_buf(),
            });
        }
        // The parent from the memo, then the last component: the same walk as from `/`, since
        // after a directory's components the walk stands at that directory's real path. Each
        // level asks for its parent, so only paths of at most MEMO_DEPTH components do (a
        // hostile `a/b/.../z` thousands deep is walked once from `/`, without recursion).
        let shallow = machine.components().count() <= MEMO_DEPTH;
        if let (Some(parent), Some(name), true) = (machine.parent(), machine.file_name(), shallow) {
            if parent.file_name().is_some() {
                let dir = self.resolved_dir(parent)?;
                return self.walk(machine, dir, vec![name.to_os_string()], must_exist);
            }
        }
        self.walk(
            machine,
            PathBuf::from("/"),
            components_rev(machine),
            must_exist,
        )
    }

    /// The real (machine) path of directory path `dir`, from the memo or resolved and kept.
    fn resolved_dir(&self, dir: &Path) -> Result<PathBuf, RootError> {
        if let Some(hit) = self.dirs.read().ok().and_then(|m| m.get(dir).cloned()) {
            return Ok(hit);
        }
        let real = self.resolve(dir, true)?;
        if let Ok(mut m) = self.dirs.write() {
            m.insert(dir.to_path_buf(), real.clone());
        }
        Ok(real)
    }

    /// Walk `todo` (components, front last) from the real path `done`, following links inside
    /// the root; `machine` names the whole path in errors.
    fn walk(
        &self,
        machine: &Path,
        mut done: PathBuf,
        mut todo: Vec<OsString>,
        must_exist: bool,
    ) -> Result<PathBuf, RootError> {
        let mut hops = 0usize;
        while let Some(name) = todo.pop() {
            if name == ".." {
                done.pop();
                continue;
            }
            let candidate = done.join(&name);
            let host = self.host_path(&candidate);
            match fs::symlink_metadata(&host) {
                Ok(md) if md.file_type().is_symlink() => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(RootError::Loop {
                            path: machine.to_path_buf(),
                        });
                    }
                    let target = fs::read_link(&host).map_err(|e| io_err(&candidate, e))?;
                    if target.is_absolute() {
                        done = PathBuf::from("/");
                    }
                    todo.extend(components_rev(&target));
                }
                Ok(_) => done = candidate,
                Err(e) => {
                    if !must_exist && todo.is_empty() && e.kind() == io::ErrorKind::NotFound {
                        return Ok(candidate);
                    }
                    return Err(io_err(&candidate, e));
                }
            }
        }
        Ok(done)
    }

    /// The host path of `machine` after resolving its links inside the root.
    pub fn real_host_path(&self, machine: &Path) -> Result<PathBuf, RootError> {
        Ok(self.host_path(&self.canonicalize(machine)?))
    }

    /// The host path to hand the kernel for reading what `machine` names (links followed). On
    /// this machine (`/`) the kernel's own path walk is the resolution, so the path is used as
    /// given (no `lstat` per component); under a prefix, links are resolved inside the root.
    fn io_path(&self, machine: &Path) -> Result<PathBuf, RootError> {
        if self.is_host() {
            if !machine.is_absolute() {
                return Err(RootError::Relative {
                    path: machine.to_path_buf(),
                });
            }
            return Ok(machine.to_path_buf());
        }
        self.real_host_path(machine)
    }

    /// Metadata of the file `machine` names, links followed inside the root.
    pub fn metadata(&self, machine: &Path) -> Result<fs::Metadata, RootError> {
        let host = self.io_path(machine)?;
        fs::metadata(&host).map_err(|e| io_err(machine, e))
    }

    /// Metadata of `machine` itself (a link is not followed; its parents are).
    pub fn symlink_metadata(&self, machine: &Path) -> Result<fs::Metadata, RootError> {
        let host = self.host_path(&self.parent_resolved(machine)?);
        fs::symlink_metadata(&host).map_err(|e| io_err(machine, e))
    }

    /// True when `machine` exists (links followed inside the root).
    pub fn exists(&self, machine: &Path) -> bool {
        self.metadata(machine).is_ok()
    }

    /// True when `machine` is a directory (links followed).
    pub fn is_dir(&self, machine: &Path) -> bool {
        self.metadata(machine).map(|m| m.is_dir()).unwrap_or(false)
    }

    /// True when `machine` is a regular file (links followed).
    pub fn is_file(&self, machine: &Path) -> bool {
        self.metadata(machine).map(|m| m.is_file()).unwrap_or(false)
    }

    /// The target text of the link `machine` (parents resolved inside the root).
    pub fn read_link(&self, machine: &Path) -> Result<PathBuf, RootError> {
        let host = self.host_path(&self.parent_resolved(machine)?);
        fs::read_link(&host).map_err(|e| io_err(machine, e))
    }

    /// Every symlink hop from `machine` to the file it finally names, in order. The last hop's
    /// target may be missing (a broken link): check [`Root::canonicalize`] for that.
    pub fn symlink_chain(&self, machine: &Path) -> Result<Vec<Hop>, RootError> {
        let mut hops = Vec::new();
        let mut cur = self.parent_resolved(machine)?;
        loop {
            let host = self.host_path(&cur);
            let md = match fs::symlink_metadata(&host) {
                Ok(md) => md,
                Err(e) if e.kind() == io::ErrorKind::NotFound && !hops.is_empty() => {
                    return Ok(hops)
                }
                Err(e) => return Err(io_err(&cur, e)),
            };
            if !md.file_type().is_symlink() {
                return Ok(hops);
            }
            if hops.len() >= MAX_SYMLINK_HOPS {
                return Err(RootError::Loop {
                    path: machine.to_path_buf(),
                });
            }
            let target = fs::read_link(&host).map_err(|e| io_err(&cur, e))?;
            let next = if target.is_absolute() {
                target.clone()
            } else {
                cur.parent().unwrap_or(Path::new("/")).join(&target)
            };
            hops.push(Hop {
                link: cur.clone(),
                target,
            });
            cur = self.parent_resolved(&lexical_normalize(&next))?;
        }
    }

    /// `machine` with its parent directory canonicalised and its last component kept as is.
    fn parent_resolved(&self, machine: &Path) -> Result<PathBuf, RootError> {
        match (machine.parent(), machine.file_name()) {
            (Some(parent), Some(name)) => Ok(self.canonicalize(parent)?.join(name)),
            _ => Ok(PathBuf::from("/")),
        }
    }

    /// Open a regular file for reading, refusing FIFOs, sockets and devices (which can block).
    pub fn open(&self, machine: &Path) -> Result<fs::File, RootError> {
        let host = self.io_path(machine)?;
        let md = fs::metadata(&host).map_err(|e| io_err(machine, e))?;
        let ft = md.file_type();
        if !ft.is_file() {
            return Err(RootError::NotAFile {
                path: machine.to_path_buf(),
                kind: file_kind(&ft),
            });
        }
        fs::File::open(&host).map_err(|e| io_err(machine, e))
    }

    /// Read at most `limit` bytes of a regular file.
    pub fn read_limited(&self, machine: &Path, limit: u64) -> Result<Vec<u8>, RootError> {
        let f = self.open(machine)?;
        let mut buf = Vec::new();
        f.take(limit + 1)
            .read_to_end(&mut buf)
            .map_err(|e| io_err(machine, e))?;
        if buf.len() as u64 > limit {
            return Err(RootError::TooLarge {
                path: machine.to_path_buf(),
                limit,
            });
        }
        Ok(buf)
    }

    /// Read a whole regular file (up to [`MAX_READ_BYTES`]).
    pub fn read(&self, machine: &Path) -> Result<Vec<u8>, RootError> {
        self.read_limited(machine, MAX_READ_BYTES)
    }

    /// Read a regular file as text; invalid UTF-8 is replaced, never an error.
    pub fn read_to_string_lossy(&self, machine: &Path) -> Result<String, RootError> {
        let bytes = self.read(machine)?;
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// The entries of a directory (links followed to reach it), as machine paths, sorted by
    /// name so that output is deterministic. Names are kept as raw `OsString`s (non-UTF-8 ok).
    pub fn read_dir(&self, machine: &Path) -> Result<Vec<PathBuf>, RootError> {
        let host = self.io_path(machine)?;
        let rd = fs::read_dir(&host).map_err(|e| io_err(machine, e))?;
        let mut names: Vec<OsString> = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| io_err(machine, e))?;
            names.push(entry.file_name());
        }
        names.sort();
        // Entries keep the caller's spelling of the directory (not its canonical form), as a
        // loader or interpreter walking it would.
        Ok(names.into_iter().map(|n| machine.join(n)).collect())
    }
}

/// Read a file named by the user or found in a project (configuration, a pyproject.toml) on
/// this host, guarded: only a regular file (a FIFO, socket, device or directory is refused
/// without opening it, and the open is non-blocking with the type checked again on the open
/// file), at most `limit` bytes, and within `deadline` (a dead network mount cannot hang the
/// caller; the reading thread is left behind).
pub fn read_guarded(
    path: &Path,
    limit: u64,
    deadline: std::time::Duration,
) -> Result<Vec<u8>, RootError> {
    let owned = path.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("guarded-read".into())
        .spawn(move || {
            let _ = tx.send(read_regular(&owned, limit));
        });
    if spawned.is_err() {
        return read_regular(path, limit);
    }
    rx.recv_timeout(deadline).unwrap_or_else(|_| {
        Err(io_err(
            path,
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no answer within {} s", deadline.as_secs_f32()),
            ),
        ))
    })
}

fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, RootError> {
    use std::os::unix::fs::OpenOptionsExt;
    let not_a_file = |ft: &fs::FileType| RootError::NotAFile {
        path: path.to_path_buf(),
        kind: file_kind(ft),
    };
    let md = fs::metadata(path).map_err(|e| io_err(path, e))?;
    if !md.is_file() {
        return Err(not_a_file(&md.file_type()));
    }
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let md = f.metadata().map_err(|e| io_err(path, e))?;
    if !md.is_file() {
        return Err(not_a_file(&md.file_type()));
    }
    if md.len() > limit {
        return Err(RootError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    let mut buf = Vec::with_capacity(md.len() as usize);
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| io_err(path, e))?;
    if buf.len() as u64 > limit {
        return Err(RootError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(buf)
}

/// `value` with the userinfo of every `scheme://userinfo@host` replaced by `***` (before a
/// PATH-like list is split on `:`, which would cut `user:password` apart): no fact derived
/// from `PYTHONPATH`, `PATH` or `LD_LIBRARY_PATH` carries a URL's password.
pub fn without_url_credentials(value: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let Some(first) = memchr::memmem::find(value, b"://") else {
        return std::borrow::Cow::Borrowed(value);
    };
    let mut out = value[..first].to_vec();
    let mut rest = &value[first..];
    while let Some(pos) = memchr::memmem::find(rest, b"://") {
        out.extend_from_slice(&rest[..pos + 3]);
        let tail = &rest[pos + 3..];
        let host_end = memchr::memchr(b'/', tail).unwrap_or(tail.len());
        match memchr::memrchr(b'@', &tail[..host_end]) {
            Some(at) => {
                out.extend_from_slice(b"***");
                rest = &tail[at..];
            }
            None => rest = tail,
        }
    }
    out.extend_from_slice(rest);
    std::borrow::Cow::Owned(out)
}

/// What a file that is not a regular file is, in words for an error message (`a FIFO`,
/// `a directory`): the one wording for every reader that refuses such a file.
pub fn file_kind(ft: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Components of `p` (without the root) in reverse order, for use as a stack.
fn components_rev(p: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    v.reverse();
    v
}

/// Remove `.` and fold `..` lexically (used on joined link targets; `..` at `/` stays at `/`).
pub fn lexical_normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The environment a probe sees: a snapshot of variables, raw bytes kept (non-UTF-8 is legal).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<OsString, OsString>,
}

impl Env {
    /// The environment of this process.
    pub fn from_process() -> Self {
        Env {
            vars: std::env::vars_os().collect(),
        }
    }

    /// An environment from pairs (tests).
    pub fn from_pairs<K: Into<OsString>, V: Into<OsString>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A variable's raw value.
    pub fn get_os(&self, name: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(name)).map(|v| v.as_os_str())
    }

    /// A variable's value when it is set, non-empty and UTF-8.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.get_os(name)
            .and_then(|v| v.to_str())
            .filter(|v| !v.is_empty())
    }

    /// Set a variable (tests and derived environments).
    pub fn set(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        self.vars.insert(name.into(), value.into());
    }

    /// Remove a variable.
    pub fn remove(&mut self, name: &str) {
        self.vars.remove(OsStr::new(name));
    }

    /// All variables, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.vars
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
    }

    /// A colon-separated list variable (`PATH`, `LD_LIBRARY_PATH`, `PYTHONPATH`) split into its
    /// entries. Empty entries are kept as `""` because they mean "the current directory" to the
    /// loader and to Python.
    pub fn split_path(&self, name: &str) -> Vec<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        match self.get_os(name) {
            None => Vec::new(),
            Some(v) if v.is_empty() => Vec::new(),
            Some(v) => without_url_credentials(v.as_bytes())
                .split(|b| *b == b':')
                .map(|part| PathBuf::from(OsStr::from_bytes(part)))
                .collect(),
        }
    }

    /// The user's home directory as a machine path (`$HOME`).
    pub fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path();
        fs::create_dir_all(p.join("usr/local/cuda-11.1/lib64")).unwrap();
        fs::write(
            p.join("usr/local/cuda-11.1/version.txt"),
            "CUDA Version 11.1.74",
        )
        .unwrap();
        // An absolute link: must resolve inside the root, never on the host.
        symlink("/usr/local/cuda-11.1", p.join("usr/local/cuda")).unwrap();
        symlink("loop-b", p.join("loop-a")).unwrap();
        symlink("loop-a", p.join("loop-b")).unwrap();
        symlink("/usr/local/missing.so", p.join("dangling")).unwrap();
        t
    }

    #[test]
    fn absolute_links_resolve_inside_the_root() {
        let t = tree();
        let root = Root::new(t.path());
        let canon = root
            .canonicalize(Path::new("/usr/local/cuda/version.txt"))
            .unwrap();
        assert_eq!(canon, Path::new("/usr/local/cuda-11.1/version.txt"));
        let text = root
            .read_to_string_lossy(Path::new("/usr/local/cuda/version.txt"))
            .unwrap();
        assert_eq!(text, "CUDA Version 11.1.74");
    }

    /// A path thousands of components deep (a fuzzed settings file named one) is walked, not
    /// recursed through the directory memo: it answers on a small stack.
    #[test]
    fn a_path_thousands_deep_resolves_without_recursion() {
        let t = tree();
        let root = Root::new(t.path());
        let deep = format!("/{}", vec!["s"; 5000].join("/"));
        let res = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || root.canonicalize(Path::new(&deep)).map(|_| ()))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(res.is_err_and(|e| e.is_not_found()));
    }

    #[test]
    fn loops_and_dangling_links_are_errors_not_hangs() {
        let t = tree();
        let root = Root::new(t.path());
        let err = root.canonicalize(Path::new("/loop-a")).unwrap_err();
        assert!(matches!(err, RootError::Loop { .. }), "{err}");
        let err = root.canonicalize(Path::new("/dangling")).unwrap_err();
        assert!(err.is_not_found(), "{err}");
        assert_eq!(
            root.canonicalize_parent(Path::new("/dangling")).unwrap(),
            Path::new("/usr/local/missing.so")
        );
    }

    #[test]
    fn symlink_chain_lists_each_hop() {
        let t = tree();
        let p = t.path().join("usr/local/cuda-11.1/lib64");
        fs::write(p.join("libcupti.so.10.2"), b"x").unwrap();
        symlink("libcupti.so.10.2", p.join("libcupti.so.10.1")).unwrap();
        symlink("libcupti.so.10.1", p.join("libcupti.so")).unwrap();
        let root = Root::new(t.path());
        let chain = root
            .symlink_chain(Path::new("/usr/local/cuda/lib64/libcupti.so"))
            .unwrap();
        let targets: Vec<_> = chain.iter().map(|h| h.target.clone()).collect();
        assert_eq!(
            targets,
            vec![
                PathBuf::from("libcupti.so.10.1"),
                PathBuf::from("libcupti.so.10.2")
            ]
        );
        assert_eq!(
            chain[0].link,
            Path::new("/usr/local/cuda-11.1/lib64/libcupti.so")
        );
        let loop_err = root.symlink_chain(Path::new("/loop-a")).unwrap_err();
        assert!(matches!(loop_err, RootError::Loop { .. }));
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let t = tree();
        let fifo = t.path().join("METADATA");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        let rc = unsafe { libc_mkfifo(c.as_ptr(), 0o644) };
        assert_eq!(rc, 0);
        let root = Root::new(t.path());
        let err = root.read(Path::new("/METADATA")).unwrap_err();
        assert!(
            matches!(err, RootError::NotAFile { kind: "a FIFO", .. }),
            "{err}"
        );
    }

    extern "C" {
        #[link_name = "mkfifo"]
        fn libc_mkfifo(path: *const std::os::raw::c_char, mode: u32) -> i32;
    }

    #[test]
    fn host_path_never_climbs_above_the_prefix() {
        let root = Root::new("/srv/machine");
        assert_eq!(
            root.host_path(Path::new("/../../etc/passwd")),
            Path::new("/srv/machine/etc/passwd")
        );
        assert_eq!(
            root.machine_path(Path::new("/srv/machine/usr/bin")),
            Some(PathBuf::from("/usr/bin"))
        );
    }

    #[test]
    fn url_credentials_never_reach_a_split_path_list() {
        let env = Env::from_pairs([(
            "PYTHONPATH",
            "/a:https://bob:s3cr:et@pypi.example/simple:/b",
        )]);
        let parts: Vec<String> = env
            .split_path("PYTHONPATH")
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(parts, ["/a", "https", "//***@pypi.example/simple", "/b"]);
    }

    #[test]
    fn env_split_keeps_empty_entries() {
        let env = Env::from_pairs([("LD_LIBRARY_PATH", "/a::/b"), ("HOME", "/home/u")]);
        assert_eq!(
            env.split_path("LD_LIBRARY_PATH"),
            vec![PathBuf::from("/a"), PathBuf::from(""), PathBuf::from("/b")]
        );
        assert_eq!(env.home(), Some(PathBuf::from("/home/u")));
        assert_eq!(env.get("MISSING"), None);
    }
}
