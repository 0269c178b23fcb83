//! `libraries[]`: each soname a framework wants (and the CUDA family its CUDA release implies),
//! resolved the way `ld.so` would for that framework, in its interpreter's world.
//!
//! For one interpreter, every soname gets one [`Library`]: the first framework entry point that
//! asks for it is the requester (loaded by the interpreter's executable), [`Loader::resolve`]
//! finds the file, [`links::describe`] follows its symlinks, [`elf::read`] gives its facts,
//! [`Loader::all_candidates`] lists the other copies (pip `nvidia/*/lib` and the framework's own
//! `lib/` labelled `pip-nvidia` / `framework`), and symbol-version needs are checked one level
//! deep: the requester against the library, the library against its own dependencies; for
//! CUDA-family dependencies also each versioned symbol (`__nvJitLinkComplete_12_4@libnvJitLink.so.12`
//! that an older `libnvJitLink.so.12` lacks: knowledge.md B23).

use crate::probe::file_memo::FileMemo;
use crate::probe::libs::frameworks::{family, implied_family, soname_major, Scan};
use crate::probe::libs::search::{Loader, Object, Preload, Requester};
use crate::probe::libs::{elf, links};
use crate::root::Root;
use crate::snapshot::libs::{Candidate, Library, LinkHop, Wanted};
use crate::snapshot::{ProbeError, Python};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

const PROBE: &str = "libs";

/// Origins that are a framework's own copy.
const OWN: [&str; 2] = ["framework", "pip-nvidia"];

/// ELF reads memoised by machine path (a missing file is `None` without an error).
#[derive(Default)]
struct ElfMemo {
    map: HashMap<PathBuf, Option<elf::ElfInfo>>,
    syms: HashMap<PathBuf, Option<std::rc::Rc<elf::DynSymbols>>>,
}

impl ElfMemo {
    /// The dynamic symbols of `p` (read once).
    fn symbols(
        &mut self,
        root: &Root,
        p: &Path,
        errors: &mut Vec<ProbeError>,
    ) -> Option<std::rc::Rc<elf::DynSymbols>> {
        if let Some(v) = self.syms.get(p) {
            return v.clone();
        }
        let v = match elf::read_with_symbols(root, p) {
            Ok((_, s)) => Some(std::rc::Rc::new(s)),
            Err(e) => {
                errors.push(ProbeError::at(PROBE, e.path(), e.to_string()));
                None
            }
        };
        self.syms.insert(p.to_path_buf(), v.clone());
        v
    }

    fn get(&mut self, root: &Root, p: &Path, errors: &mut Vec<ProbeError>) -> Option<elf::ElfInfo> {
        if let Some(v) = self.map.get(p) {
            return v.clone();
        }
        let v = match elf::read(root, p) {
            Ok(i) => Some(i),
            Err(elf::ElfError::Root(e)) if e.is_not_found() => None,
            Err(e) => {
                errors.push(ProbeError::at(PROBE, e.path(), e.to_string()));
                None
            }
        };
        self.map.insert(p.to_path_buf(), v.clone());
        v
    }
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The pip `nvidia-*` distribution (name, version) whose `site-packages/nvidia/<dir>/lib`
/// holds `real`: `nvidia-<dir>-cuNN` or `nvidia-<dir>` with `_` read as `-` (`cuda_runtime` →
/// `nvidia-cuda-runtime-cu12`). The shared `nvidia/cu13` directory holds several: none.
fn pip_package_of(python: &Python, real: &Path) -> Option<(String, String)> {
    let lib_dir = real.parent()?;
    if lib_dir.file_name()? != "lib" {
        return None;
    }
    let dir = lib_dir.parent()?;
    if dir.parent()?.file_name()? != "nvidia" {
        return None;
    }
    let site = dir.parent()?.parent()?.to_string_lossy().into_owned();
    let name = dir.file_name()?.to_string_lossy().replace('_', "-");
    let base = format!("nvidia-{name}");
    python
        .packages
        .iter()
        .filter(|p| p.location == site)
        .find(|p| {
            p.name == base
                || p.name
                    .strip_prefix(&base)
                    .and_then(|r| r.strip_prefix("-cu"))
                    .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
        })
        .map(|p| (p.name.clone(), p.version.clone()))
}

/// One library waiting to be resolved, with who asks.
struct Item {
    lib: Library,
    req: Requester,
    req_path: PathBuf,
}

/// The names a resolved CUDA-family library hands to `dlopen` itself, read from its file:
/// nvrtc's `libnvrtc-builtins.so.X.Y`, cuDNN's sub-libraries (`libcudnn_graph.so` + its major,
/// named in `libcudnn.so.N` and `libcudnn_graph.so.N`).
fn dlopen_names(root: &Root, memo: &FileMemo, soname: &str, real: &Path) -> Vec<String> {
    memo.answer(root, real, &format!("dlopen-names {soname}"), || {
        read_dlopen_names(root, soname, real)
    })
}

/// [`dlopen_names`], read from the file.
fn read_dlopen_names(root: &Root, soname: &str, real: &Path) -> Vec<String> {
    use crate::probe::libs::frameworks::strings::{find_strings, soname_byte};
    match family(soname) {
        Some("nvrtc") => find_strings(root, real, b"libnvrtc-builtins.so.", soname_byte, 64)
            .into_iter()
            .map(|s| s.trim_end_matches('.').to_string())
            .filter(|s| soname_major(s).is_some())
            .collect(),
        // The dispatcher loads the graph library, which loads the engines and heuristics.
        Some("cudnn")
            if soname.starts_with("libcudnn.so.") || soname.starts_with("libcudnn_graph.so.") =>
        {
            let Some(major) = soname_major(soname) else {
                return Vec::new();
            };
            let mut v: Vec<String> = find_strings(root, real, b"libcudnn_", soname_byte, 64)
                .into_iter()
                .filter_map(|s| {
                    let stem = s.split(".so").next()?.to_string();
                    let ok = stem.len() > "libcudnn_".len()
                        && stem["libcudnn_".len()..]
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c == '_');
                    ok.then(|| format!("{stem}.so.{major}"))
                })
                .collect();
            v.sort();
            v.dedup();
            v
        }
        _ => Vec::new(),
    }
}

/// Resolve every library the frameworks of `python` want (and their implied CUDA family), then
/// what those libraries need in turn (`transitive`).
pub fn resolve_python(
    root: &Root,
    loader: &Loader,
    python: &Python,
    scans: &[Scan],
    file_memo: &FileMemo,
    errors: &mut Vec<ProbeError>,
) -> Vec<Library> {
    if scans.is_empty() {
        return Vec::new();
    }
    let mut memo = ElfMemo::default();
    let py_path = PathBuf::from(&python.path);
    let py_obj = match memo.get(root, &py_path, &mut Vec::new()) {
        Some(info) => Object::from_elf(&py_path, &info),
        None => Object::bare(&py_path),
    }
    .main_executable();
    let loader = &loader
        .clone()
        .with_framework_loaded(framework_loaded(scans));
    let wanted = wanted_libraries(scans, &py_path);
    let implied = implied_libraries(scans, &wanted);
    let mut r = Resolver {
        root,
        loader,
        python,
        extra: extra_dirs(root, scans),
        py_path,
        py_obj,
        memo,
        file_memo,
        queue: VecDeque::new(),
        seen: HashSet::new(),
    };
    for (soname, (lib, req_path)) in wanted {
        r.seen.insert(soname);
        let i = r.item(lib, req_path, errors);
        r.queue.push_back(i);
    }
    let mut implied: VecDeque<Item> = implied
        .into_values()
        .map(|(lib, req_path)| r.item(lib, req_path, errors))
        .collect();

    let mut out = Vec::new();
    while let Some(item) = r.next_item(&mut implied) {
        out.push(r.resolve_one(item, errors));
    }
    settle_needed_at(&mut out);
    out
}

/// A library is needed as early as the earliest library that lists it in DT_NEEDED: the queue
/// gave it the `needed_at` of whoever reached it first (libnvJitLink through a lazily loaded
/// cuSOLVER), while cuSPARSE, needed at import, needs it too.
fn settle_needed_at(libs: &mut [Library]) {
    loop {
        let mut changed = false;
        for i in 0..libs.len() {
            let Some(at) = libs[i].needed_at.clone() else {
                continue;
            };
            let needed: Vec<String> = libs[i]
                .elf
                .as_ref()
                .map(|e| e.needed.clone())
                .unwrap_or_default();
            for l in libs.iter_mut() {
                if l.reason == "cuda-family" || !needed.contains(&l.soname) {
                    continue;
                }
                let e = earliest(l.needed_at.as_deref(), &at);
                if l.needed_at.as_deref() != Some(e.as_str()) {
                    l.needed_at = Some(e);
                    changed = true;
                }
            }
        }
        if !changed {
            return;
        }
    }
}

/// What the frameworks' own code loaded by path: it wins later requests for its soname.
fn framework_loaded(scans: &[Scan]) -> Vec<Preload> {
    let mut loaded: Vec<Preload> = Vec::new();
    for scan in scans {
        for p in &scan.framework.preloads {
            if !loaded
                .iter()
                .any(|l| l.soname.as_deref() == Some(&p.soname))
            {
                loaded.push(Preload {
                    name: p.path.clone(),
                    path: PathBuf::from(&p.path),
                    soname: Some(p.soname.clone()),
                });
            }
        }
    }
    loaded
}

/// soname -> (library skeleton, requester) for everything the frameworks want or preload.
fn wanted_libraries(scans: &[Scan], py_path: &Path) -> BTreeMap<String, (Library, PathBuf)> {
    let mut wanted: BTreeMap<String, (Library, PathBuf)> = BTreeMap::new();
    for scan in scans {
        for w in &scan.framework.wants {
            let req = w
                .requester
                .as_ref()
                .map(PathBuf::from)
                .unwrap_or_else(|| scan.dlopen_requester.clone());
            let e = wanted.entry(w.soname.clone()).or_insert_with(|| {
                (
                    Library {
                        soname: w.soname.clone(),
                        reason: "wanted".into(),
                        ..Default::default()
                    },
                    req,
                )
            });
            e.0.wanted_by.push(scan.label());
            e.0.needed_at = Some(earliest(e.0.needed_at.as_deref(), want_needed_at(w)));
        }
        // torch preloads in `import torch`; JAX when its GPU backend starts.
        let preload_at = if scan.framework.name == "torch" {
            "import"
        } else {
            "run-time"
        };
        for p in &scan.framework.preloads {
            let e = wanted.entry(p.soname.clone()).or_insert_with(|| {
                (
                    Library {
                        soname: p.soname.clone(),
                        reason: "preloaded".into(),
                        ..Default::default()
                    },
                    py_path.to_path_buf(),
                )
            });
            e.0.wanted_by.push(scan.label());
            e.0.needed_at = Some(earliest(e.0.needed_at.as_deref(), preload_at));
        }
    }
    wanted
}

/// When a framework's want is first needed (see `Library::needed_at`).
fn want_needed_at(w: &Wanted) -> &'static str {
    if !w.evidence.starts_with("DT_NEEDED") {
        "run-time"
    } else if w.lazy {
        "first-use"
    } else {
        "import"
    }
}

/// Stamp each unmet `nvidia-*` requirement with when the process first needs the libraries
/// of that wheel's family in that interpreter (the earliest `needed_at` of `libs`). A CUDA
/// wheel's own requirement (`nvidia-cusolver-cu11` requires `nvidia-cublas-cu11`) is needed
/// when the requiring wheel's libraries load, so it takes theirs.
pub fn stamp_unmet_wheels(pythons: &mut [crate::snapshot::Python], libs: &[Library]) {
    use super::frameworks::wheel_family;
    for py in pythons {
        for u in &mut py.unmet_requirements {
            let Some(family) = wheel_family(&u.package).or_else(|| wheel_family(&u.required))
            else {
                continue;
            };
            if wheel_family(&u.required).is_none() {
                continue;
            }
            u.needed_at = libs
                .iter()
                .filter(|l| l.python.as_deref() == Some(py.path.as_str()))
                .filter(|l| l.family.as_deref() == Some(family))
                .filter_map(|l| l.needed_at.as_deref())
                .fold(None, |acc: Option<String>, at| {
                    Some(earliest(acc.as_deref(), at))
                });
        }
    }
}

/// The earlier of two `needed_at` values (`import` before `first-use` before `run-time`).
fn earliest(a: Option<&str>, b: &str) -> String {
    let rank = |x: &str| match x {
        "import" => 0,
        "first-use" => 1,
        _ => 2,
    };
    match a {
        Some(a) if rank(a) <= rank(b) => a.to_string(),
        _ => b.to_string(),
    }
}

/// The CUDA family a release implies, less what is already `wanted`. It comes after everything
/// asked for and its transitive needs (a library that is both is resolved from the object that
/// really asks).
fn implied_libraries(
    scans: &[Scan],
    wanted: &BTreeMap<String, (Library, PathBuf)>,
) -> BTreeMap<String, (Library, PathBuf)> {
    let mut implied: BTreeMap<String, (Library, PathBuf)> = BTreeMap::new();
    for scan in scans {
        let fw = &scan.framework;
        if fw.is_cuda_build == Some(false) {
            continue;
        }
        let asked: Vec<&str> = fw
            .wants
            .iter()
            .map(|w| w.soname.as_str())
            .chain(fw.preloads.iter().map(|p| p.soname.as_str()))
            .filter_map(family)
            .collect();
        for so in implied_family(fw.cuda_major, fw.cudnn_major) {
            // What the framework itself asks for beats what its CUDA release implies.
            if family(&so).is_some_and(|f| asked.contains(&f)) {
                continue;
            }
            if wanted.contains_key(&so) {
                continue;
            }
            implied.entry(so.clone()).or_insert_with(|| {
                (
                    Library {
                        soname: so,
                        reason: "cuda-family".into(),
                        ..Default::default()
                    },
                    scan.dlopen_requester.clone(),
                )
            });
        }
    }
    implied
}

/// The frameworks' labelled directories of own copies that exist, each once.
fn extra_dirs(root: &Root, scans: &[Scan]) -> Vec<(PathBuf, String)> {
    let mut extra: Vec<(PathBuf, String)> = Vec::new();
    for scan in scans {
        for d in &scan.extra_dirs {
            if !extra.contains(d) && root.is_dir(&d.0) {
                extra.push(d.clone());
            }
        }
    }
    extra
}

/// One interpreter's resolution under way: the loader, the ELF reads and the work queue.
struct Resolver<'a> {
    root: &'a Root,
    loader: &'a Loader,
    python: &'a Python,
    extra: Vec<(PathBuf, String)>,
    py_path: PathBuf,
    py_obj: Object,
    memo: ElfMemo,
    /// Answers read out of large files, kept across runs.
    file_memo: &'a FileMemo,
    queue: VecDeque<Item>,
    seen: HashSet<String>,
}

impl Resolver<'_> {
    /// The queue item for `lib` asked for by the object at `req_path` (loaded by the interpreter).
    fn item(&mut self, lib: Library, req_path: PathBuf, errors: &mut Vec<ProbeError>) -> Item {
        let req_obj = match self.memo.get(self.root, &req_path, errors) {
            Some(i) => Object::from_elf(&req_path, &i),
            None => Object::bare(&req_path),
        };
        let req = if req_path == self.py_path {
            Requester::new(self.py_obj.clone())
        } else {
            Requester::new(req_obj).loaded_by(self.py_obj.clone())
        };
        Item { lib, req, req_path }
    }

    /// The next library to resolve: the queue, then the implied family, unless a transitive
    /// need already resolved the soname.
    fn next_item(&mut self, implied: &mut VecDeque<Item>) -> Option<Item> {
        self.queue.pop_front().or_else(|| {
            while let Some(i) = implied.pop_front() {
                if self.seen.insert(i.lib.soname.clone()) {
                    return Some(i);
                }
            }
            None
        })
    }

    /// Resolve one library: the search, its file, its ELF needs, every copy and which wins.
    fn resolve_one(&mut self, item: Item, errors: &mut Vec<ProbeError>) -> Library {
        let Item {
            mut lib,
            req,
            req_path,
        } = item;
        let soname = lib.soname.clone();
        lib.python = Some(self.python.path.clone());
        lib.family = family(&soname).map(String::from);
        lib.requester = s(&req_path);
        let req_info = self.memo.get(self.root, &req_path, errors);
        let res = self.loader.resolve(&soname, &req);
        lib.resolves = res.resolves();
        lib.error = res.error.clone();
        lib.found_via = res.label().map(String::from);
        lib.name_version = links::name_version(&soname);
        lib.major = soname_major(&soname);
        let mut winner_real: Option<PathBuf> = None;
        if let Some(p) = &res.path {
            // Kept when the search stopped on it (`file too short`): the file to look at.
            lib.path = Some(s(p));
        }
        if let Some(p) = res.path.as_ref().filter(|_| res.error.is_none()) {
            winner_real = self.follow_file(&mut lib, p, errors);
            let real = winner_real.clone().unwrap_or_else(|| p.clone());
            if let Some(info) = self.memo.get(self.root, &real, errors) {
                let found = Found {
                    path: p,
                    real: &real,
                    info: &info,
                };
                self.check_elf(&mut lib, &found, &req, req_info.as_ref(), errors);
            }
        }
        self.add_candidates(&mut lib, winner_real);
        mark_shadowing(&mut lib);
        lib.missing_symbols.sort();
        lib.missing_symbols.dedup();
        lib.missing_symbol_versions.sort();
        lib.missing_symbol_versions.dedup();
        lib
    }

    /// Follow the symlinks of the file found at `p` (chain, version, real path, pip package);
    /// the real path, when known.
    fn follow_file(
        &self,
        lib: &mut Library,
        p: &Path,
        errors: &mut Vec<ProbeError>,
    ) -> Option<PathBuf> {
        let f = links::describe(self.root, p);
        if f.is_loop {
            errors.push(ProbeError::at(PROBE, p, "symlink loop"));
        } else if let Some(e) = &f.error {
            errors.push(ProbeError::at(PROBE, p, e.clone()));
        }
        lib.chain = f
            .chain
            .iter()
            .map(|h| LinkHop {
                link: s(&h.link),
                target: s(&h.target),
            })
            .collect();
        lib.file_version = f.file_version.clone();
        lib.version_mismatch = f.version_mismatch;
        lib.realpath = f.realpath.as_deref().map(s);
        if let Some((name, version)) = f
            .realpath
            .as_deref()
            .and_then(|r| pip_package_of(self.python, r))
        {
            lib.package = Some(name);
            lib.package_version = Some(version);
        }
        f.realpath
    }

    /// The ELF facts of the found file, what the requester needs from it, its transitive
    /// CUDA-family loads, and what it needs from its own dependencies.
    fn check_elf(
        &mut self,
        lib: &mut Library,
        found: &Found<'_>,
        req: &Requester,
        req_info: Option<&elf::ElfInfo>,
        errors: &mut Vec<ProbeError>,
    ) {
        let info = found.info;
        lib.elf = Some(info.facts());
        if let Some(m) = info.soname.as_deref().and_then(soname_major) {
            lib.major = Some(m);
        }
        // What the requester needs from it.
        if let Some(ri) = req_info {
            for v in ri.needs_from(&lib.soname) {
                if !info.version_defs.contains(v) {
                    lib.missing_symbol_versions
                        .push(format!("{}:{v}", lib.soname));
                }
            }
        }
        // What it needs from its own dependencies.
        let child = req.child(Object::from_elf(found.path, info));
        self.queue_transitive(lib, found, &child);
        self.check_version_needs(lib, found, &child, errors);
    }

    /// Transitive: queue the CUDA-family libraries the found file loads in turn.
    fn queue_transitive(&mut self, lib: &Library, found: &Found<'_>, child: &Requester) {
        // A DT_NEEDED is needed when its owner is; a name handed to dlopen, at run time.
        let next: Vec<(String, Option<String>)> = found
            .info
            .needed
            .iter()
            .filter(|n| family(n).is_some())
            .map(|n| (n.clone(), lib.needed_at.clone()))
            .chain(
                dlopen_names(self.root, self.file_memo, &lib.soname, found.real)
                    .into_iter()
                    .map(|n| (n, Some("run-time".to_string()))),
            )
            .collect();
        for (n, needed_at) in next {
            if self.seen.insert(n.clone()) {
                self.queue.push_back(Item {
                    lib: Library {
                        soname: n,
                        reason: "transitive".into(),
                        wanted_by: lib.wanted_by.clone(),
                        needed_at,
                        ..Default::default()
                    },
                    req: child.clone(),
                    req_path: found.path.to_path_buf(),
                });
            }
        }
    }

    /// The symbol versions the found file needs from each dependency, checked against what
    /// that dependency defines (for CUDA-family ones also each versioned symbol).
    fn check_version_needs(
        &mut self,
        lib: &mut Library,
        found: &Found<'_>,
        child: &Requester,
        errors: &mut Vec<ProbeError>,
    ) {
        for need in &found.info.version_needs {
            let r = self.loader.resolve(&need.file, child);
            let Some(dp) = r.path.filter(|_| r.error.is_none()) else {
                continue;
            };
            let Some(di) = self.memo.get(self.root, &dp, errors) else {
                continue;
            };
            for v in &need.versions {
                if !di.version_defs.contains(v) {
                    lib.missing_symbol_versions
                        .push(format!("{}:{v}", need.file));
                }
            }
            // CUDA-family dependencies: every versioned symbol it takes from them.
            if family(&need.file).is_some() {
                self.check_symbols(lib, need, found.real, &dp, errors);
            }
        }
    }

    /// Every versioned symbol the file at `real` takes from the dependency at `dp` under
    /// `need`, checked against what that dependency exports.
    fn check_symbols(
        &mut self,
        lib: &mut Library,
        need: &elf::VersionNeed,
        real: &Path,
        dp: &Path,
        errors: &mut Vec<ProbeError>,
    ) {
        let mine = self.memo.symbols(self.root, real, errors);
        let theirs = self.memo.symbols(self.root, dp, errors);
        let (Some(mine), Some(theirs)) = (mine, theirs) else {
            return;
        };
        for u in &mine.undefined {
            let Some(ver) = u.version.as_deref() else {
                continue;
            };
            if need.versions.iter().any(|v| v == ver) && !theirs.provides(&u.name, Some(ver)) {
                lib.missing_symbols
                    .push(format!("{}:{}@{ver}", need.file, u.name));
            }
        }
    }

    /// Every copy on the machine, and which wins (the found file itself when no copy does).
    fn add_candidates(&self, lib: &mut Library, winner_real: Option<PathBuf>) {
        let label = lib.found_via.clone().unwrap_or_default();
        for c in self.loader.all_candidates(&lib.soname, &self.extra) {
            let wins = lib.resolves
                && (winner_real.is_some() && c.realpath == winner_real
                    || lib.path.as_deref() == Some(&s(&c.path)));
            lib.candidates.push(Candidate {
                file_version: c
                    .realpath
                    .as_ref()
                    .and_then(|r| r.file_name())
                    .and_then(|n| links::name_version(&n.to_string_lossy())),
                path: s(&c.path),
                origin: c.origin,
                wins,
            });
        }
        if lib.resolves && !lib.candidates.iter().any(|c| c.wins) {
            if let Some(p) = &lib.path {
                lib.candidates.push(Candidate {
                    path: p.clone(),
                    origin: label,
                    wins: true,
                    file_version: lib.file_version.clone(),
                });
            }
        }
    }
}

/// The file a library resolved to: the path found, its real path and its ELF facts.
struct Found<'a> {
    path: &'a Path,
    real: &'a Path,
    info: &'a elf::ElfInfo,
}

/// A library that resolves to a copy not the framework's own while such a copy exists
/// shadows it.
fn mark_shadowing(lib: &mut Library) {
    let winner_own = lib
        .candidates
        .iter()
        .any(|c| c.wins && OWN.contains(&c.origin.as_str()));
    if lib.resolves && !winner_own {
        if let Some(c) = lib
            .candidates
            .iter()
            .find(|c| !c.wins && OWN.contains(&c.origin.as_str()))
        {
            lib.shadows_framework_copy = true;
            lib.shadowed_path = Some(c.path.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::root::Env;
    use crate::snapshot::libs::{Framework, Wanted};

    #[test]
    fn an_unmet_cuda_wheel_is_needed_when_what_asks_for_it_loads() {
        let lib = |soname: &str, family: &str, at: &str| Library {
            soname: soname.into(),
            family: Some(family.into()),
            python: Some("/v/bin/python".into()),
            needed_at: Some(at.into()),
            ..Default::default()
        };
        let libs = vec![
            lib("libcublas.so.12", "cublas", "import"),
            lib("libcusolver.so.11", "cusolver", "first-use"),
            lib("libcudnn.so.9", "cudnn", "import"),
        ];
        let unmet = |package: &str, required: &str| crate::snapshot::python::UnmetRequirement {
            package: package.into(),
            version: "1".into(),
            requirement: required.into(),
            required: required.into(),
            specifier: None,
            installed: None,
            needed_at: None,
        };
        let mut pythons = vec![crate::snapshot::Python {
            path: "/v/bin/python".into(),
            unmet_requirements: vec![
                unmet("torch", "nvidia-cusolver-cu12"),
                unmet("torch", "nvidia-cudnn-cu12"),
                // cuSOLVER from CUDA 11 needs CUDA 11's cuBLAS: only when cuSOLVER loads.
                unmet("nvidia-cusolver-cu11", "nvidia-cublas-cu11"),
                unmet("torch", "sympy"),
                unmet("torch", "nvidia-cufile-cu12"),
            ],
            ..Default::default()
        }];
        stamp_unmet_wheels(&mut pythons, &libs);
        let at: Vec<Option<&str>> = pythons[0]
            .unmet_requirements
            .iter()
            .map(|u| u.needed_at.as_deref())
            .collect();
        assert_eq!(
            at,
            vec![
                Some("first-use"),
                Some("import"),
                Some("first-use"),
                None,
                None
            ]
        );
    }

    #[test]
    fn wants_beat_the_implied_family_and_a_short_file_stops_the_search() {
        let t = tempfile::tempdir().unwrap();
        let lib = t.path().join("usr/lib/x86_64-linux-gnu");
        std::fs::create_dir_all(&lib).unwrap();
        // A truncated download where libcudnn.so.8 should be.
        std::fs::write(lib.join("libcudnn.so.8"), b"not an ELF file").unwrap();
        let root = Root::new(t.path());
        let loader = Loader::new(&root, &Env::default());
        let python = Python {
            path: "/usr/bin/python3".into(),
            ..Default::default()
        };
        let scan = Scan {
            framework: Framework {
                python: python.path.clone(),
                name: "tensorflow".into(),
                version: "2.4.0".into(),
                cuda_major: Some(11),
                cudnn_major: Some(8),
                wants: vec![Wanted {
                    soname: "libcusolver.so.10".into(),
                    evidence: "test".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
            dlopen_requester: "/site/tensorflow/python/_pywrap_tensorflow_internal.so".into(),
            extra_dirs: Vec::new(),
        };
        let mut errors = Vec::new();
        let libs = resolve_python(
            &root,
            &loader,
            &python,
            &[scan],
            &FileMemo::off(),
            &mut errors,
        );
        let names: Vec<&str> = libs.iter().map(|l| l.soname.as_str()).collect();
        assert!(names.contains(&"libcusolver.so.10"));
        assert!(!names.contains(&"libcusolver.so.11"), "{names:?}");
        assert!(names.contains(&"libcudart.so.11.0"));
        let cudnn = libs.iter().find(|l| l.soname == "libcudnn.so.8").unwrap();
        assert_eq!(cudnn.reason, "cuda-family");
        assert!(!cudnn.resolves, "{cudnn:?}");
        assert!(cudnn
            .error
            .as_deref()
            .unwrap_or("")
            .contains("file too short"));
        assert_eq!(
            cudnn.path.as_deref(),
            Some("/usr/lib/x86_64-linux-gnu/libcudnn.so.8")
        );
        let sol = libs
            .iter()
            .find(|l| l.soname == "libcusolver.so.10")
            .unwrap();
        assert_eq!(sol.wanted_by, vec!["tensorflow 2.4.0".to_string()]);
        assert_eq!(
            sol.requester,
            "/site/tensorflow/python/_pywrap_tensorflow_internal.so"
        );
    }
}
