//! One extension module `dlopen`ed into its interpreter, emulated: the objects `ld.so` maps
//! (breadth first, each DT_NEEDED searched from the object that needs it with the RPATH chain up
//! to the interpreter, an already-loaded soname reused), then the checks it makes before
//! `dlopen` returns: every symbol version needed is defined (`version 'GLIBCXX_3.4.32' not
//! found`), and, because Python opens extensions with `RTLD_NOW`, every undefined non-weak
//! symbol binds in the global scope (the interpreter and what it loaded) or the module's own
//! dependency tree (`undefined symbol: _ZN3c10…`).
//!
//! A framework's process has already loaded its own libraries (torch's `libc10.so`, TF's
//! `libtensorflow_framework.so.2`): the caller passes them to the [`Loader`] as
//! framework-loaded, so a module's `DT_NEEDED: libc10.so` reuses torch's copy as it would.
//!
//! What a fake machine cannot show is never reported: on a root without glibc (a fixture), the
//! C and C++ runtime sonames are taken as present and symbols versioned by them as bound; when
//! the interpreter's global scope is not known (its executable is not ELF, or a library it
//! needs or glibc is missing) unversioned C names (`PyLong_FromLong`, `fmod`: the interpreter
//! and the C runtime it loaded define them, and manylinux modules do not link libm themselves)
//! are taken as bound; C++ names (`_ZN3c10…`) are still checked against the module's own tree.

use super::exports;
use crate::probe::file_memo::FileMemo;
use crate::probe::libs::elf::{self, DynSymbols, ElfInfo};
use crate::probe::libs::search::{Loader, Object, Requester};
use crate::root::Root;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most objects mapped for one module (torch's tree is ~40).
const MAX_OBJECTS: usize = 256;
/// Undefined symbols named per module.
pub const NAMED: usize = 5;

/// Sonames of the C and C++ runtimes, taken as present on a root without glibc.
const RUNTIME: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "ld-linux-x86-64.so.2",
    "libstdc++.so.6",
    "libgcc_s.so.1",
];

/// Sonames only the NVIDIA driver installs.
const DRIVER: &[&str] = &["libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1"];

/// One mapped object.
#[derive(Clone, Debug)]
pub struct Mapped {
    /// Its machine path as opened.
    pub path: PathBuf,
    /// Its facts.
    pub info: Arc<ElfInfo>,
    requester: Requester,
}

/// The interpreter a module is loaded into, shared by all its modules.
pub struct Interp<'a> {
    /// The machine.
    pub root: &'a Root,
    /// The loader, with the framework-loaded objects.
    pub loader: &'a Loader,
    /// The interpreter executable when it is ELF.
    pub exe: Option<Object>,
    /// The global scope: the executable and what it loaded.
    pub global: Vec<Mapped>,
    /// Every object of the global scope was found (so `Py*` symbols can be checked).
    pub python_complete: bool,
    /// The root has a glibc the loader knows.
    pub glibc: bool,
    /// Exports of every object read so far (all interpreters).
    pub exports: &'a exports::Cache,
    /// Objects the framework's process loaded (machine paths), also given to `loader`.
    pub framework: Vec<PathBuf>,
    /// ELF facts read so far in this interpreter, by machine path.
    pub infos: std::sync::Mutex<HashMap<PathBuf, Option<Arc<ElfInfo>>>>,
    /// Each framework object's unbound symbols, once per interpreter (by machine path).
    framework_unbound: std::sync::Mutex<HashMap<PathBuf, Vec<String>>>,
    /// Answers read out of large files, kept across runs.
    memo: &'a FileMemo,
}

/// What loading one module comes to.
#[derive(Debug, Default)]
pub struct Outcome {
    /// DT_NEEDED names found nowhere.
    pub missing_libraries: Vec<String>,
    /// `VERSION (soname at path)` needs the found library does not define.
    pub missing_versions: Vec<String>,
    /// Undefined symbols nothing binds (the first [`NAMED`]).
    pub undefined: Vec<String>,
    /// How many undefined symbols nothing binds.
    pub undefined_count: usize,
    /// Objects of the module's tree that a framework had loaded (their paths).
    pub from_framework: Vec<String>,
    /// Every soname in the module's tree (for CUDA majors).
    pub sonames: Vec<String>,
    /// Undefined symbols of the framework's own objects in the tree (torch's
    /// `libtorch_cuda.so`) that nothing binds, as `name (in file)`: a downgraded library under
    /// it (an NCCL without `ncclCommRegister`) fails the framework's own import.
    pub framework_undefined: Vec<String>,
}

impl<'a> Interp<'a> {
    /// The interpreter at `exe_path` (its global scope resolved now).
    pub fn new(
        root: &'a Root,
        loader: &'a Loader,
        exe_path: &Path,
        framework: Vec<PathBuf>,
        exports: &'a exports::Cache,
        memo: &'a FileMemo,
    ) -> Self {
        let mut it = Interp {
            root,
            loader,
            exe: None,
            global: Vec::new(),
            python_complete: false,
            glibc: loader.glibc().is_some(),
            exports,
            framework,
            infos: Default::default(),
            framework_unbound: Default::default(),
            memo,
        };
        let Ok(info) = elf::read(root, exe_path) else {
            return it;
        };
        let exe = Object::from_elf(exe_path, &info).main_executable();
        let start = Mapped {
            path: exe_path.to_path_buf(),
            info: Arc::new(info),
            requester: Requester::new(exe.clone()),
        };
        let (global, missing, unread) = it.map_tree(start, &[]);
        it.python_complete = missing.is_empty() && !unread && it.glibc;
        it.global = global;
        it.exe = Some(exe);
        it
    }

    fn info(&self, path: &Path) -> Option<Arc<ElfInfo>> {
        if let Some(hit) = self.infos.lock().ok()?.get(path) {
            return hit.clone();
        }
        let i = elf::read(self.root, path).ok().map(Arc::new);
        if let Ok(mut m) = self.infos.lock() {
            m.insert(path.to_path_buf(), i.clone());
        }
        i
    }

    /// Map `start` and its dependencies breadth first, reusing what `already` holds; the
    /// objects mapped (start first) and the names found nowhere.
    fn map_tree(&self, start: Mapped, already: &[Mapped]) -> (Vec<Mapped>, Vec<String>, bool) {
        let mut by_name: HashMap<String, ()> = HashMap::new();
        for m in already {
            by_name.insert(file_name(&m.path), ());
            if let Some(s) = &m.info.soname {
                by_name.insert(s.clone(), ());
            }
        }
        let mut tree = vec![start];
        let mut missing = Vec::new();
        let mut unread = false;
        let mut i = 0;
        while i < tree.len() && tree.len() < MAX_OBJECTS {
            let needed = tree[i].info.needed.clone();
            for name in needed {
                if by_name.contains_key(&name) {
                    continue;
                }
                by_name.insert(name.clone(), ());
                let res = self.loader.resolve(&name, &tree[i].requester);
                let Some(path) = res.path.filter(|_| res.error.is_none()) else {
                    if self.glibc || !RUNTIME.contains(&name.as_str()) {
                        missing.push(name);
                    }
                    continue;
                };
                // A file the loader opens but envdoctor cannot read (a string table past its
                // bound): what it needs and defines is unknown, so no verdict on symbols.
                let Some(info) = self.info(&path) else {
                    unread = true;
                    continue;
                };
                if let Some(s) = &info.soname {
                    by_name.insert(s.clone(), ());
                }
                let requester = tree[i].requester.child(Object::from_elf(&path, &info));
                tree.push(Mapped {
                    path,
                    info,
                    requester,
                });
            }
            i += 1;
        }
        (tree, missing, unread)
    }

    /// Load the module at `path` (its facts and symbols already read).
    pub fn load(&self, path: &Path, info: ElfInfo, syms: &DynSymbols) -> Outcome {
        let object = Object::from_elf(path, &info);
        let requester = match &self.exe {
            Some(exe) => Requester::new(object).loaded_by(exe.clone()),
            None => Requester::new(object),
        };
        let start = Mapped {
            path: path.to_path_buf(),
            info: Arc::new(info),
            requester,
        };
        let (tree, missing, unread) = self.map_tree(start, &self.global);
        let mut out = Outcome {
            missing_libraries: missing,
            ..Default::default()
        };
        for m in &tree {
            out.sonames.extend(m.info.soname.clone());
            out.sonames.extend(m.info.needed.iter().cloned());
            if self.framework.iter().any(|p| p == &m.path) {
                out.from_framework
                    .push(m.path.to_string_lossy().into_owned());
            }
        }
        out.sonames.sort();
        out.sonames.dedup();
        if !out.missing_libraries.is_empty() || unread {
            // ld.so stops at the first library it cannot find; an object envdoctor could not
            // read leaves the symbols unknown.
            return out;
        }
        out.missing_versions = self.missing_versions(&tree);
        let (named, count) = self.unbound(&tree, syms);
        out.undefined = named;
        out.undefined_count = count;
        out.framework_undefined = self.framework_objects_unbound(&tree);
        out
    }

    /// `name (libtorch_cuda.so asks; not in libnccl.so.2 at PATH)`: the CUDA library of `m`'s
    /// DT_NEEDED whose API prefix the C name carries (`nccl`, `cublasLt`, `cuda` for cudart),
    /// with the copy the loader mapped.
    fn asked_where(&self, tree: &[Mapped], m: &Mapped, name: &str) -> String {
        let file = file_name(&m.path);
        let lower = name.to_ascii_lowercase();
        let prefix = |soname: &str| {
            let family = crate::probe::libs::frameworks::family(soname)?;
            let api = if family == "cudart" { "cuda" } else { family };
            lower
                .starts_with(&api.to_ascii_lowercase())
                .then_some(api.len())
        };
        let provider = m
            .info
            .needed
            .iter()
            .filter_map(|n| Some((prefix(n)?, n)))
            .max_by_key(|(len, _)| *len)
            .map(|(_, n)| n);
        let Some(soname) = provider else {
            return format!("{name} ({file} asks for it)");
        };
        let mapped = tree
            .iter()
            .chain(self.global.iter())
            .find(|t| t.info.soname.as_deref() == Some(soname.as_str()));
        match mapped {
            Some(t) => format!(
                "{name} ({file} asks for it; {soname} at {} does not define it)",
                t.path.display()
            ),
            None => format!("{name} ({file} asks {soname} for it)"),
        }
    }

    /// The unbound symbols of the framework's own objects in `tree` (after the module), each
    /// object read once per interpreter: Python's `RTLD_NOW` binds them all before `import`
    /// returns.
    fn framework_objects_unbound(&self, tree: &[Mapped]) -> Vec<String> {
        let mut out = Vec::new();
        for m in tree.iter().skip(1) {
            // Only the objects that link CUDA libraries: the symbols a pip user can pull from
            // under the framework (an `nvidia-*` wheel up- or downgraded); the rest of its own
            // objects ship together and are not read (libtorch_cpu's table is large).
            let links_cuda = m.info.needed.iter().any(|n| {
                crate::probe::libs::frameworks::family(n).is_some() && !DRIVER.contains(&n.as_str())
            });
            if !links_cuda || !self.framework.contains(&m.path) {
                continue;
            }
            let memo = self
                .framework_unbound
                .lock()
                .ok()
                .and_then(|memo| memo.get(&m.path).cloned());
            let names = match memo {
                Some(names) => names,
                None => {
                    let started = std::time::Instant::now();
                    // What the object asks of CUDA libraries is a fact of its file alone: kept
                    // across runs (libtorch_cuda's table is tens of MB).
                    let read = || {
                        elf::read_undefined_symbols(self.root, &m.path)
                            .ok()
                            .map(|syms| {
                                let mut undefined = syms.undefined;
                                undefined.retain(|sym| asked_of_cuda(&m.info, sym));
                                undefined
                            })
                    };
                    let question = "undefined symbols asked of CUDA libraries";
                    let undefined = self.memo.answer(self.root, &m.path, question, read);
                    let names = match undefined {
                        Some(undefined) => {
                            let syms = DynSymbols {
                                undefined,
                                ..DynSymbols::default()
                            };
                            let (names, _) = self.unbound_of(tree, m, &syms);
                            names.iter().map(|n| self.asked_where(tree, m, n)).collect()
                        }
                        None => Vec::new(),
                    };
                    crate::timings::record(
                        format!("extensions: symbols of {}", file_name(&m.path)),
                        started.elapsed(),
                    );
                    if let Ok(mut memo) = self.framework_unbound.lock() {
                        memo.insert(m.path.clone(), names.clone());
                    }
                    names
                }
            };
            out.extend(names);
        }
        out.truncate(NAMED);
        out
    }

    /// Symbol versions each object of the tree needs that the object it found lacks.
    fn missing_versions(&self, tree: &[Mapped]) -> Vec<String> {
        let all: Vec<&Mapped> = self.global.iter().chain(tree.iter()).collect();
        let provider = |file: &str| {
            all.iter()
                .find(|m| m.info.soname.as_deref() == Some(file) || file_name(&m.path) == file)
        };
        let mut out = Vec::new();
        for m in tree {
            for need in &m.info.version_needs {
                let Some(p) = provider(&need.file) else {
                    continue;
                };
                // An object without version definitions only draws a warning from ld.so.
                if p.info.version_defs.is_empty() {
                    continue;
                }
                for v in &need.versions {
                    if !p.info.version_defs.contains(v) {
                        out.push(format!(
                            "{v} ({} at {}, needed by {})",
                            need.file,
                            p.path.display(),
                            file_name(&m.path)
                        ));
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The module's undefined symbols that no object in scope binds: the first [`NAMED`]
    /// names and the count.
    fn unbound(&self, tree: &[Mapped], syms: &DynSymbols) -> (Vec<String>, usize) {
        self.unbound_of(tree, &tree[0], syms)
    }

    /// `object`'s undefined symbols (`syms`) that no object of the global scope or `tree`
    /// (but itself) binds: the first [`NAMED`] names and the count.
    fn unbound_of(
        &self,
        tree: &[Mapped],
        module: &Mapped,
        syms: &DynSymbols,
    ) -> (Vec<String>, usize) {
        let version_file = |v: &str| {
            module
                .info
                .version_needs
                .iter()
                .find(|n| n.versions.iter().any(|x| x == v))
                .map(|n| n.file.clone())
        };
        let loaded = |file: &str| {
            self.global
                .iter()
                .chain(tree.iter())
                .any(|m| m.info.soname.as_deref() == Some(file) || file_name(&m.path) == file)
        };
        let mut left: Vec<(&str, Option<&str>)> = syms
            .undefined
            .iter()
            .filter(|s| match &s.version {
                Some(v) => version_file(v).is_none_or(|f| loaded(&f)),
                None => self.python_complete || is_cplusplus(&s.name),
            })
            .map(|s| (s.name.as_str(), s.version.as_deref()))
            .collect();
        let scope = self
            .global
            .iter()
            .chain(tree.iter())
            .filter(|m| m.path != module.path);
        for m in scope {
            if left.is_empty() {
                break;
            }
            let Some(e) = self.exports.get(self.root, &m.path) else {
                continue;
            };
            left.retain(|(n, v)| !e.binds(n, *v));
        }
        let count = left.len();
        let mut names: Vec<String> = left
            .iter()
            .map(|(n, v)| match v {
                Some(v) => format!("{n}@{v}"),
                None => n.to_string(),
            })
            .collect();
        names.sort();
        names.truncate(NAMED);
        (names, count)
    }
}

/// A symbol an object asks a CUDA library for: a C name (the CUDA libraries' APIs are C:
/// `ncclCommRegister`, `cublasLtMatmul`), unversioned or versioned by a CUDA-family soname.
/// The C++ names and the C runtime's versioned names come from what ships with the object.
fn asked_of_cuda(info: &ElfInfo, sym: &elf::Symbol) -> bool {
    if is_cplusplus(&sym.name) {
        return false;
    }
    let Some(v) = &sym.version else {
        return true;
    };
    info.version_needs
        .iter()
        .find(|n| n.versions.iter().any(|x| x == v))
        .is_some_and(|n| crate::probe::libs::frameworks::family(&n.file).is_some())
}

/// A C++ (Itanium-mangled) name: defined by the C++ libraries a module links (torch's, its
/// own), never by the interpreter or the C runtime, whose C names (`PyLong_FromLong`, `fmod`)
/// the global scope provides.
fn is_cplusplus(name: &str) -> bool {
    name.starts_with("_Z")
}

/// Only the driver's libraries are missing.
pub fn only_driver(missing: &[String]) -> bool {
    !missing.is_empty() && missing.iter().all(|m| DRIVER.contains(&m.as_str()))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
