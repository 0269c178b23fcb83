//! The search `ld.so` (glibc, x86-64) performs for one soname on behalf of one object, emulated
//! file by file inside a [`Root`].
//!
//! Order, as in glibc's `_dl_map_object` (checked against the real loader by
//! `tests/loader_*.rs`):
//! 1. a name containing `/` is opened as a path (relative to the working directory);
//! 2. DT_RPATH of the requester, then of the object that loaded it, and on up the chain to the
//!    executable, but only when the requester has no DT_RUNPATH (an object that has both ignores
//!    its own DT_RPATH, so it contributes nothing while walking the chain);
//! 3. `LD_LIBRARY_PATH` (split on `:` and `;`; an empty entry is the working directory);
//! 4. DT_RUNPATH of the requester only (never inherited);
//! 5. `/etc/ld.so.cache` (its paths resolved inside the root); when the requester says
//!    `DF_1_NODEFLIB`, an entry lying under a default directory is not used;
//! 6. the default directories, unless `DF_1_NODEFLIB`. Debian/Ubuntu's glibc (multiarch) uses
//!    `/lib/x86_64-linux-gnu`, `/usr/lib/x86_64-linux-gnu`, `/lib`, `/usr/lib` (`ld.so --help`
//!    says so; no `/lib64`); a root without `*/x86_64-linux-gnu` but with `/usr/lib64` is taken
//!    for a Fedora/RHEL layout: `/lib64`, `/usr/lib64`.
//!
//! In every directory of steps 2–4 and 6, the `glibc-hwcaps/<level>/` subdirectories the CPU
//! supports are tried first, best level first (glibc ≥ 2.33). Levels come from the `flags` line
//! of `/proc/cpuinfo` (read through the root; a root without `/proc` is taken to run on this
//! host's CPU, whose `/proc/cpuinfo` is read instead), after glibc's
//! `get-isa-level.h`:
//! - `x86-64-v2`: cx16 lahf_lm popcnt pni(sse3) sse4_1 sse4_2 ssse3
//! - `x86-64-v3`: v2 + avx avx2 bmi1 bmi2 f16c fma abm(lzcnt) movbe xsave
//! - `x86-64-v4`: v3 + avx512f avx512bw avx512cd avx512dq avx512vl
//!
//! glibc's release is read from the root's `libc.so.6` ([`glibc_version`]): before 2.33 there
//! are no `glibc-hwcaps` subdirectories; before 2.37 the legacy ones ([`LEGACY_SUBDIRS`]:
//! `tls/`, `x86_64/`) follow them. An unknown release (a fixture root without libc) is taken
//! as a current one.
//!
//! Step 0: an object already loaded under the name asked for, or with that DT_SONAME, is reused
//! without a search; envdoctor knows the ones loaded before the program (`LD_PRELOAD`, split on
//! spaces and colons, then `/etc/ld.so.preload`): `found_via` = `ld-preload`.
//!
//! Each candidate is checked as glibc's `open_verify` does ([`elf::check_header`]): a 32-bit or
//! foreign-machine ELF is skipped and the search goes on; a file that is not ELF at all (a
//! linker script, a truncated download) stops the search with `invalid ELF header`.
//!
//! Dynamic string tokens in RPATH/RUNPATH/LD_LIBRARY_PATH: `$ORIGIN` is the directory of the
//! object whose entry it is, *as opened* (its path is not canonicalised), except for the main
//! executable, whose origin the kernel reports resolved (`/proc/self/exe`); in LD_LIBRARY_PATH it
//! is the executable's. `$LIB` is `lib/x86_64-linux-gnu` on the Debian layout and `lib64` on the
//! Fedora one; `$PLATFORM` is `x86_64` (AT_PLATFORM). Both `$NAME` and `${NAME}` are accepted.
//!
//! Besides [`Loader::resolve`] (what the loader picks), [`Loader::all_candidates`] lists every
//! file of that name the machine holds in the usual places, labelled by origin, so a report can
//! say which copy wins and which are shadowed.

use crate::probe::libs::elf::{self, ElfClass, ElfError, ElfInfo, HeaderVerdict, EM_X86_64};
use crate::probe::libs::ldcache::LdCache;
use crate::root::{Env, Root};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::layout::is_multiarch;
pub use super::layout::{default_dirs, hwcaps_from_cpuinfo, HWCAPS_LEVELS, LEGACY_SUBDIRS};

/// The glibc release of `root`, from the highest `GLIBC_2.N` symbol version its `libc.so.6`
/// defines. A release that added no new symbol version reads as the previous one (2.37 reads as
/// 2.36): then legacy subdirectories that it no longer searches are tried as well, which only
/// matters if such a directory exists.
pub fn glibc_version(root: &Root, default_dirs: &[PathBuf]) -> Option<(u32, u32)> {
    let libc = default_dirs
        .iter()
        .map(|d| d.join("libc.so.6"))
        .find(|p| root.is_file(p))?;
    let info = elf::read(root, &libc).ok()?;
    info.version_defs
        .iter()
        .filter_map(|v| {
            let rest = v.strip_prefix("GLIBC_")?;
            let mut it = rest.split('.');
            let major = it.next()?.parse().ok()?;
            let minor = it.next()?.parse().ok()?;
            Some((major, minor))
        })
        .max()
}

/// An object loaded before the program (`LD_PRELOAD`, `/etc/ld.so.preload`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preload {
    /// The name as listed.
    pub name: String,
    /// The file loaded.
    pub path: PathBuf,
    /// Its DT_SONAME.
    pub soname: Option<String>,
}

/// An object taking part in a search: a requester or one of the objects that loaded it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Object {
    /// Its machine path as the loader opened it (not canonicalised: `$ORIGIN` comes from it).
    pub path: PathBuf,
    /// DT_RPATH entries, raw.
    pub rpath: Vec<String>,
    /// DT_RUNPATH entries, raw.
    pub runpath: Vec<String>,
    /// DF_1_NODEFLIB.
    pub nodeflib: bool,
    /// True for the main executable (its `$ORIGIN` is resolved, as the kernel reports it).
    pub is_main: bool,
    /// True when it has a DT_RUNPATH (then its DT_RPATH is ignored), even an empty one.
    pub has_runpath: bool,
}

impl Object {
    /// An object with no search paths of its own (e.g. a `dlopen` from code without RPATH).
    pub fn bare(path: impl Into<PathBuf>) -> Self {
        Object {
            path: path.into(),
            ..Default::default()
        }
    }

    /// The object at `path` (as opened) with the facts of its ELF file.
    pub fn from_elf(path: impl Into<PathBuf>, info: &ElfInfo) -> Self {
        let has_runpath = !info.runpath.is_empty();
        Object {
            path: path.into(),
            // glibc drops DT_RPATH when DT_RUNPATH is present (get-dynamic-info.h).
            rpath: if has_runpath {
                Vec::new()
            } else {
                info.rpath.clone()
            },
            runpath: info.runpath.clone(),
            nodeflib: info.nodeflib,
            is_main: false,
            has_runpath,
        }
    }

    /// Read the ELF file at `path` (a machine path, as opened) and build its object.
    pub fn read(root: &Root, path: &Path) -> Result<Self, ElfError> {
        Ok(Self::from_elf(path, &elf::read(root, path)?))
    }

    /// Mark it as the main executable.
    pub fn main_executable(mut self) -> Self {
        self.is_main = true;
        self
    }
}

/// Who asks: the object whose DT_NEEDED (or `dlopen` call) names the library, and the chain of
/// objects that loaded it, nearest first, ending with the executable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requester {
    /// The requesting object.
    pub object: Object,
    /// Its loaders: `loaders[0]` loaded `object`, `loaders[1]` loaded `loaders[0]`, ...
    pub loaders: Vec<Object>,
}

impl Requester {
    /// A requester loaded by nobody we know of.
    pub fn new(object: Object) -> Self {
        Requester {
            object,
            loaders: Vec::new(),
        }
    }

    /// Add the next loader up the chain (call in order: the nearest first).
    pub fn loaded_by(mut self, loader: Object) -> Self {
        self.loaders.push(loader);
        self
    }

    /// The requester for the dependencies of `child`, which this requester loaded.
    pub fn child(&self, child: Object) -> Requester {
        let mut loaders = vec![self.object.clone()];
        loaders.extend(self.loaders.iter().cloned());
        Requester {
            object: child,
            loaders,
        }
    }

    fn main(&self) -> Option<&Object> {
        std::iter::once(&self.object)
            .chain(self.loaders.iter())
            .find(|o| o.is_main)
    }
}

/// Which step of the search found the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FoundVia {
    /// Already loaded by `LD_PRELOAD` / `/etc/ld.so.preload` under that name or soname.
    Preload,
    /// Already loaded, by path, by the framework's own code (torch's `_preload_cuda_deps`,
    /// the JAX plugin's `_load_nvidia_libraries`) under that soname.
    Framework,
    /// The name held a `/`.
    Path,
    /// DT_RPATH of the requester or of a loader.
    Rpath,
    /// LD_LIBRARY_PATH.
    LdLibraryPath,
    /// DT_RUNPATH of the requester.
    Runpath,
    /// `/etc/ld.so.cache`.
    LdSoCache,
    /// The default directories.
    DefaultDirs,
}

impl FoundVia {
    /// `ld-preload`, `path`, `rpath`, `ld-library-path`, `runpath`, `ld-so-cache`,
    /// `default-dirs`.
    pub fn as_str(self) -> &'static str {
        match self {
            FoundVia::Preload => "ld-preload",
            FoundVia::Framework => "preloaded-by-framework",
            FoundVia::Path => "path",
            FoundVia::Rpath => "rpath",
            FoundVia::LdLibraryPath => "ld-library-path",
            FoundVia::Runpath => "runpath",
            FoundVia::LdSoCache => "ld-so-cache",
            FoundVia::DefaultDirs => "default-dirs",
        }
    }
}

/// One directory searched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tried {
    /// The directory (DSTs expanded), as the loader spells it.
    pub dir: PathBuf,
    /// The step it belongs to.
    pub via: FoundVia,
}

/// The outcome of one search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// The name asked for.
    pub name: String,
    /// The file opened (a machine path as the loader spells it: search dir + name), if any.
    pub path: Option<PathBuf>,
    /// The step that found it.
    pub found_via: Option<FoundVia>,
    /// The `glibc-hwcaps` subdirectory (`x86-64-v3`) it was found in, if any.
    pub hwcaps: Option<String>,
    /// Directories searched, in order (for the cache: the cached file's directory).
    pub tried: Vec<Tried>,
    /// Files of that name the loader opened and passed over (wrong class or machine).
    pub skipped: Vec<(PathBuf, HeaderVerdict)>,
    /// A fatal error that stopped the search (`invalid ELF header` on `path`).
    pub error: Option<String>,
}

impl Resolution {
    /// True when the loader opens a usable file.
    pub fn resolves(&self) -> bool {
        self.path.is_some() && self.error.is_none()
    }

    /// The snapshot's `found_via` label: `hwcaps` when a `glibc-hwcaps` subdirectory won,
    /// otherwise the step.
    pub fn label(&self) -> Option<&'static str> {
        if self.hwcaps.is_some() && self.error.is_none() {
            return Some("hwcaps");
        }
        self.found_via.map(FoundVia::as_str)
    }
}

/// A file that could satisfy a soname, with where it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Its machine path.
    pub path: PathBuf,
    /// `ld-library-path`, `ld-so-cache`, `system`, `cuda-toolkit`, `conda`, or the label a
    /// caller gave (`pip-nvidia`, `framework`).
    pub origin: String,
    /// Its real file, links followed.
    pub realpath: Option<PathBuf>,
}

/// glibc's loader, for one machine and one environment.
#[derive(Clone, Debug)]
pub struct Loader {
    root: Root,
    env: Env,
    cache: Option<LdCache>,
    cache_error: Option<String>,
    hwcaps: Vec<&'static str>,
    default_dirs: Vec<PathBuf>,
    lib: String,
    platform: String,
    cwd: PathBuf,
    class: ElfClass,
    machine: u16,
    cuda_dirs: Vec<PathBuf>,
    glibc: Option<(u32, u32)>,
    legacy_subdirs: Vec<&'static str>,
    preloads: Vec<Preload>,
    /// Objects a framework's code loaded by path before the request (after `preloads`).
    framework_loaded: Vec<Preload>,
    /// Directories already found present or absent (glibc keeps the same memo), shared by
    /// clones: a search never re-walks a missing `glibc-hwcaps/<level>` directory.
    dir_memo: Arc<Mutex<HashMap<PathBuf, bool>>>,
}

impl Loader {
    /// True when `dir` exists (memoised).
    fn dir_exists(&self, dir: &Path) -> bool {
        if let Ok(memo) = self.dir_memo.lock() {
            if let Some(v) = memo.get(dir) {
                return *v;
            }
        }
        let v = self.root.is_dir(dir);
        if let Ok(mut memo) = self.dir_memo.lock() {
            memo.insert(dir.to_path_buf(), v);
        }
        v
    }

    /// A loader for `root` with `env` (its LD_LIBRARY_PATH); reads `/etc/ld.so.cache` and the
    /// CPU flags once.
    pub fn new(root: &Root, env: &Env) -> Self {
        let (cache, cache_error) = match LdCache::load(root, Path::new("/etc/ld.so.cache")) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e)),
        };
        // A root without /proc (an image, a fixture) runs on this CPU: use ours.
        let hwcaps = root
            .read_to_string_lossy(Path::new("/proc/cpuinfo"))
            .or_else(|_| Root::host().read_to_string_lossy(Path::new("/proc/cpuinfo")))
            .map(|t| hwcaps_from_cpuinfo(&t))
            .unwrap_or_default();
        let multiarch = is_multiarch(root);
        let defaults = default_dirs(root);
        let glibc = glibc_version(root, &defaults);
        // glibc-hwcaps subdirectories exist since 2.33; legacy ones were dropped in 2.37.
        let hwcaps = match glibc {
            Some(v) if v < (2, 33) => Vec::new(),
            _ => hwcaps,
        };
        let legacy_subdirs = match glibc {
            Some(v) if v < (2, 37) => LEGACY_SUBDIRS.to_vec(),
            _ => Vec::new(),
        };
        let mut loader = Loader {
            root: root.clone(),
            env: env.clone(),
            cache,
            cache_error,
            hwcaps,
            default_dirs: defaults,
            lib: if multiarch {
                "lib/x86_64-linux-gnu".into()
            } else {
                "lib64".into()
            },
            platform: "x86_64".into(),
            cwd: env
                .get("PWD")
                .map(PathBuf::from)
                .unwrap_or_else(|| "/".into()),
            class: ElfClass::Elf64,
            machine: EM_X86_64,
            cuda_dirs: cuda_lib_dirs(root),
            glibc,
            legacy_subdirs,
            preloads: Vec::new(),
            framework_loaded: Vec::new(),
            dir_memo: Arc::new(Mutex::new(HashMap::new())),
        };
        loader.preloads = loader.find_preloads();
        loader
    }

    /// The glibc release found in the root (`(2, 36)`), when its libc could be read.
    pub fn glibc(&self) -> Option<(u32, u32)> {
        self.glibc
    }

    /// Objects loaded before anything else (`LD_PRELOAD`, then `/etc/ld.so.preload`).
    pub fn preloads(&self) -> &[Preload] {
        &self.preloads
    }

    fn find_preloads(&self) -> Vec<Preload> {
        let mut names: Vec<String> = Vec::new();
        if let Some(v) = self.env.get("LD_PRELOAD") {
            names.extend(
                v.split([' ', ':'])
                    .filter(|s| !s.is_empty())
                    .map(String::from),
            );
        }
        if let Ok(text) = self
            .root
            .read_to_string_lossy(Path::new("/etc/ld.so.preload"))
        {
            names.extend(text.split_whitespace().map(String::from));
        }
        let main = Requester::new(Object::bare("/").main_executable());
        names
            .into_iter()
            .filter_map(|name| {
                let res = self.resolve_searching(&name, &main);
                let path = res.path.filter(|_| res.error.is_none())?;
                let soname = elf::read(&self.root, &path).ok().and_then(|i| i.soname);
                Some(Preload { name, path, soname })
            })
            .collect()
    }

    /// Replace the cache (tests, or a cache read elsewhere).
    pub fn with_cache(mut self, cache: Option<LdCache>) -> Self {
        self.cache = cache;
        self.cache_error = None;
        self
    }

    /// Replace the supported hwcaps levels (best first).
    pub fn with_hwcaps(mut self, hwcaps: Vec<&'static str>) -> Self {
        self.hwcaps = hwcaps;
        self
    }

    /// The same loader with `objects` already loaded by a framework's own code (by path):
    /// a later request for one's soname reuses it (`found_via` `preloaded-by-framework`).
    pub fn with_framework_loaded(mut self, objects: Vec<Preload>) -> Self {
        self.framework_loaded = objects;
        self
    }

    /// The working directory relative names are taken from.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Set the working directory relative names are taken from (default: `$PWD` or `/`).
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = cwd.into();
        self
    }

    /// The parsed cache, when it could be read.
    pub fn cache(&self) -> Option<&LdCache> {
        self.cache.as_ref()
    }

    /// Why the cache could not be read (missing, corrupt).
    pub fn cache_error(&self) -> Option<&str> {
        self.cache_error.as_deref()
    }

    /// The supported `glibc-hwcaps` levels, best first.
    pub fn hwcaps(&self) -> &[&'static str] {
        &self.hwcaps
    }

    /// The default directories.
    pub fn default_dirs(&self) -> &[PathBuf] {
        &self.default_dirs
    }

    /// The root.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// LD_LIBRARY_PATH entries, raw (split on `:` and `;`, empty entries kept).
    pub fn ld_library_path(&self) -> Vec<String> {
        match self.env.get_os("LD_LIBRARY_PATH") {
            Some(v) if !v.is_empty() => v
                .to_string_lossy()
                .split([':', ';'])
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Resolve `name` for `req` exactly as `ld.so` would.
    pub fn resolve(&self, name: &str, req: &Requester) -> Resolution {
        // An object already loaded under that name (preloaded) is reused, no search happens.
        if let Some(p) = self
            .preloads
            .iter()
            .find(|p| p.name == name || p.soname.as_deref() == Some(name))
        {
            return Resolution {
                name: name.to_string(),
                path: Some(p.path.clone()),
                found_via: Some(FoundVia::Preload),
                hwcaps: None,
                tried: Vec::new(),
                skipped: Vec::new(),
                error: None,
            };
        }
        if let Some(p) = self
            .framework_loaded
            .iter()
            .find(|p| p.soname.as_deref() == Some(name))
        {
            return Resolution {
                name: name.to_string(),
                path: Some(p.path.clone()),
                found_via: Some(FoundVia::Framework),
                hwcaps: None,
                tried: Vec::new(),
                skipped: Vec::new(),
                error: None,
            };
        }
        self.resolve_searching(name, req)
    }

    fn resolve_searching(&self, name: &str, req: &Requester) -> Resolution {
        let mut res = Resolution {
            name: name.to_string(),
            path: None,
            found_via: None,
            hwcaps: None,
            tried: Vec::new(),
            skipped: Vec::new(),
            error: None,
        };
        if name.contains('/') {
            let p = self.absolute(Path::new(name));
            self.try_file(&p, FoundVia::Path, None, &mut res);
            return res;
        }
        // 2. DT_RPATH chain, unless the requester has DT_RUNPATH.
        if !req.object.has_runpath {
            for obj in std::iter::once(&req.object).chain(req.loaders.iter()) {
                let dirs = self.expand_list(&obj.rpath, obj);
                if self.search_dirs(name, &dirs, FoundVia::Rpath, &mut res) {
                    return res;
                }
            }
        }
        // 3. LD_LIBRARY_PATH ($ORIGIN there is the executable's).
        let llp = self.ld_library_path();
        if !llp.is_empty() {
            let dirs = match req.main() {
                Some(main) => self.expand_list(&llp, main),
                None => self.expand_list_no_origin(&llp),
            };
            if self.search_dirs(name, &dirs, FoundVia::LdLibraryPath, &mut res) {
                return res;
            }
        }
        // 4. DT_RUNPATH of the requester only.
        if req.object.has_runpath {
            let dirs = self.expand_list(&req.object.runpath, &req.object);
            if self.search_dirs(name, &dirs, FoundVia::Runpath, &mut res) {
                return res;
            }
        }
        let nodeflib = req.object.nodeflib;
        // 5. The cache; with DF_1_NODEFLIB an entry under a default dir is not used (glibc
        // compares the cached path's prefix with each system dir + `/`).
        if let Some(entry) = self.cache.as_ref().and_then(|c| {
            let active: Vec<&str> = self.hwcaps.to_vec();
            c.lookup(name, &active)
        }) {
            let in_system_dir = self.default_dirs.iter().any(|d| {
                let prefix = format!("{}/", d.to_string_lossy());
                entry.value.starts_with(&prefix)
            });
            if !(nodeflib && in_system_dir) {
                let p = PathBuf::from(&entry.value);
                res.tried.push(Tried {
                    dir: p.parent().unwrap_or(Path::new("/")).to_path_buf(),
                    via: FoundVia::LdSoCache,
                });
                if self.try_file(&p, FoundVia::LdSoCache, entry.hwcaps.clone(), &mut res) {
                    return res;
                }
            }
        }
        // 6. Default directories.
        if !nodeflib {
            let dirs = self.default_dirs.clone();
            if self.search_dirs(name, &dirs, FoundVia::DefaultDirs, &mut res) {
                return res;
            }
        }
        res
    }

    /// Search `dirs` (hwcaps subdirectories first in each); true when the search is over
    /// (found, or a fatal error).
    fn search_dirs(
        &self,
        name: &str,
        dirs: &[PathBuf],
        via: FoundVia,
        res: &mut Resolution,
    ) -> bool {
        for dir in dirs {
            res.tried.push(Tried {
                dir: dir.clone(),
                via,
            });
            if !self.dir_exists(dir) {
                continue;
            }
            let hw = self
                .hwcaps
                .iter()
                .map(|l| (Path::new("glibc-hwcaps").join(l), *l));
            let legacy = self.legacy_subdirs.iter().map(|l| (PathBuf::from(l), *l));
            for (rel, label) in hw.chain(legacy) {
                let sub = dir.join(rel);
                if !self.dir_exists(&sub) {
                    continue;
                }
                if self.try_file(&sub.join(name), via, Some(label.to_string()), res) {
                    return true;
                }
            }
            if self.try_file(&dir.join(name), via, None, res) {
                return true;
            }
        }
        false
    }

    /// Check one candidate; true when the search is over.
    fn try_file(
        &self,
        p: &Path,
        via: FoundVia,
        hwcaps: Option<String>,
        res: &mut Resolution,
    ) -> bool {
        match elf::check_header(&self.root, p, self.class, self.machine) {
            HeaderVerdict::Accept => {
                res.path = Some(p.to_path_buf());
                res.found_via = Some(via);
                res.hwcaps = hwcaps;
                true
            }
            HeaderVerdict::Unopenable => false,
            v @ (HeaderVerdict::OtherClass | HeaderVerdict::OtherMachine) => {
                res.skipped.push((p.to_path_buf(), v));
                false
            }
            HeaderVerdict::Fatal(msg) => {
                res.path = Some(p.to_path_buf());
                res.found_via = Some(via);
                res.hwcaps = hwcaps;
                res.error = Some(format!("{}: {msg}", p.display()));
                true
            }
        }
    }

    fn absolute(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.cwd.join(p)
        }
    }

    /// The `$ORIGIN` of `obj`.
    fn origin(&self, obj: &Object) -> PathBuf {
        let p = self.absolute(&obj.path);
        let p = if obj.is_main {
            self.root.canonicalize(&p).unwrap_or(p)
        } else {
            p
        };
        p.parent().unwrap_or(Path::new("/")).to_path_buf()
    }

    fn expand_list(&self, entries: &[String], obj: &Object) -> Vec<PathBuf> {
        let origin = self.origin(obj);
        entries
            .iter()
            .filter_map(|e| self.expand(e, Some(&origin)))
            .collect()
    }

    fn expand_list_no_origin(&self, entries: &[String]) -> Vec<PathBuf> {
        entries
            .iter()
            .filter_map(|e| self.expand(e, None))
            .collect()
    }

    /// Expand DSTs in one entry and clean it as glibc's `fillin_rpath` does (trailing slashes
    /// dropped; empty and relative entries taken against the working directory). `None` when
    /// it needs an origin we do not know.
    pub fn expand(&self, entry: &str, origin: Option<&Path>) -> Option<PathBuf> {
        let mut out = String::new();
        let mut rest = entry;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let (token, len) = if let Some(inner) = after.strip_prefix('{') {
                match inner.find('}') {
                    Some(end) => (&inner[..end], end + 2),
                    None => ("", 0),
                }
            } else {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            };
            let value = match token {
                "ORIGIN" => Some(origin?.to_string_lossy().into_owned()),
                "LIB" => Some(self.lib.clone()),
                "PLATFORM" => Some(self.platform.clone()),
                _ => None,
            };
            match value {
                Some(v) => {
                    out.push_str(&v);
                    rest = &after[len..];
                }
                None => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        while out.len() > 1 && out.ends_with('/') {
            out.pop();
        }
        // An empty entry is the working directory (glibc opens the bare name).
        Some(self.absolute(Path::new(&out)))
    }

    /// Every file called `name` in the places a library of that name usually comes from:
    /// LD_LIBRARY_PATH, the cache, the default dirs, `/usr/local/cuda*/lib64`,
    /// `/usr/local/cuda*/targets/*/lib`, `$CONDA_PREFIX/lib`, and `extra` (labelled dirs the
    /// caller knows: pip's `site-packages/nvidia/*/lib` via [`pip_nvidia_dirs`], a framework's
    /// own `lib/`). One entry per real file (the first spelling found wins).
    pub fn all_candidates(&self, name: &str, extra: &[(PathBuf, String)]) -> Vec<Found> {
        let mut dirs: Vec<(PathBuf, String)> = Vec::new();
        for d in self.expand_list_no_origin(&self.ld_library_path()) {
            dirs.push((d, "ld-library-path".into()));
        }
        let mut out: Vec<Found> = Vec::new();
        let mut seen: Vec<PathBuf> = Vec::new();
        let mut push = |path: PathBuf, origin: &str, out: &mut Vec<Found>| {
            if !self.root.is_file(&path) {
                return;
            }
            let real = self.root.canonicalize(&path).ok();
            let key = real.clone().unwrap_or_else(|| path.clone());
            if seen.contains(&key) {
                return;
            }
            seen.push(key);
            out.push(Found {
                path,
                origin: origin.to_string(),
                realpath: real,
            });
        };
        for (d, o) in &dirs {
            if self.dir_exists(d) {
                push(d.join(name), o, &mut out);
            }
        }
        if let Some(c) = &self.cache {
            for e in c.entries.iter().filter(|e| e.key == name) {
                push(PathBuf::from(&e.value), "ld-so-cache", &mut out);
            }
        }
        for d in &self.default_dirs {
            if self.dir_exists(d) {
                push(d.join(name), "system", &mut out);
            }
        }
        for d in &self.cuda_dirs {
            push(d.join(name), "cuda-toolkit", &mut out);
        }
        if let Some(conda) = self.env.get("CONDA_PREFIX") {
            push(Path::new(conda).join("lib").join(name), "conda", &mut out);
        }
        for (d, o) in extra {
            push(d.join(name), o, &mut out);
        }
        out
    }
}

/// `/usr/local/cuda*/lib64`, `/usr/local/cuda*/extras/CUPTI/lib64` (where CUPTI lives) and
/// `/usr/local/cuda*/targets/*/lib` that exist in `root`.
pub fn cuda_lib_dirs(root: &Root) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = root.read_dir(Path::new("/usr/local")) else {
        return out;
    };
    for top in entries {
        let is_cuda = top
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("cuda"));
        if !is_cuda || !root.is_dir(&top) {
            continue;
        }
        for sub in ["lib64", "extras/CUPTI/lib64"] {
            let d = top.join(sub);
            if root.is_dir(&d) {
                out.push(d);
            }
        }
        for t in root.read_dir(&top.join("targets")).unwrap_or_default() {
            let lib = t.join("lib");
            if root.is_dir(&lib) {
                out.push(lib);
            }
        }
    }
    out
}

/// pip's NVIDIA wheel library dirs under a `site-packages` (machine path):
/// `site-packages/nvidia/*/lib`, labelled `pip-nvidia`.
pub fn pip_nvidia_dirs(root: &Root, site_packages: &Path) -> Vec<(PathBuf, String)> {
    root.read_dir(&site_packages.join("nvidia"))
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.join("lib"))
        .filter(|d| root.is_dir(d))
        .map(|d| (d, "pip-nvidia".to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hwcaps_levels_follow_the_flag_sets() {
        let v2 = "flags\t: fpu cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3\n";
        assert_eq!(hwcaps_from_cpuinfo(v2), vec!["x86-64-v2"]);
        let v3 = "flags\t: cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave\n";
        assert_eq!(hwcaps_from_cpuinfo(v3), vec!["x86-64-v3", "x86-64-v2"]);
        let v4 = format!(
            "{} avx512f avx512bw avx512cd avx512dq avx512vl",
            v3.trim_end()
        );
        assert_eq!(
            hwcaps_from_cpuinfo(&v4),
            vec!["x86-64-v4", "x86-64-v3", "x86-64-v2"]
        );
        assert!(hwcaps_from_cpuinfo("flags : fpu sse2").is_empty());
        assert!(hwcaps_from_cpuinfo("").is_empty());
    }

    #[test]
    fn glibc_release_from_libc_version_definitions() {
        let root = Root::host();
        let dirs = default_dirs(&root);
        if !dirs.iter().any(|d| root.is_file(&d.join("libc.so.6"))) {
            return; // not a Debian-layout host
        }
        let v = glibc_version(&root, &dirs).unwrap();
        assert_eq!(v.0, 2);
        assert!(v.1 >= 17, "{v:?}");
        let t = tempfile::tempdir().unwrap();
        assert_eq!(glibc_version(&Root::new(t.path()), &dirs), None);
    }

    #[test]
    fn dst_expansion_and_cleanup() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("usr/lib/x86_64-linux-gnu")).unwrap();
        let l = Loader::new(&Root::new(t.path()), &Env::default()).with_cwd("/work");
        let o = Some(Path::new("/opt/app/lib"));
        assert_eq!(
            l.expand("$ORIGIN/../x/", o),
            Some("/opt/app/lib/../x".into())
        );
        assert_eq!(
            l.expand("${ORIGIN}/$LIB", o),
            Some("/opt/app/lib/lib/x86_64-linux-gnu".into())
        );
        assert_eq!(l.expand("/p/$PLATFORM", o), Some("/p/x86_64".into()));
        assert_eq!(l.expand("", o), Some("/work".into()));
        assert_eq!(l.expand("rel/", o), Some("/work/rel".into()));
        assert_eq!(l.expand("$ORIGIN", None), None);
        assert_eq!(l.expand("/a/$FOO", None), Some("/a/$FOO".into()));
    }
}
