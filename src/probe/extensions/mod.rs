//! The extensions probe (stage 2, after `python`): every native extension module of every
//! distribution of every interpreter, loaded as `ld.so` would load it into that interpreter
//! ([`load`]), with what it was compiled against ([`abi`]), and who installed each
//! distribution ([`crate::probe::python::owner`]). Facts: `pythons[].native`,
//! `pythons[].native_failures`, `pythons[].owners`.
//!
//! Cheap by construction: only files a distribution's `RECORD` lists and whose names are
//! extension modules are read (the directory of an editable install, or the `top_level.txt`
//! packages of a distribution without RECORD, are walked, bounded), only their ELF headers, dynamic sections, `.dynsym` and
//! `.gnu.version*` (the NumPy marker scan reads the modules of distributions that require
//! NumPy, when NumPy is installed); each library's exports are read once per run
//! ([`exports::Cache`]); at most [`MAX_MODULES`] modules per interpreter; the deadline is checked
//! before each module.

pub mod abi;
pub mod exports;
pub mod load;

use super::{pool, Apply, Context};
use crate::probe::libs::search::{Loader, Preload};
use crate::probe::python::owner;
use crate::probe::record::Records;
use crate::root::Root;
use crate::snapshot::extensions::{NativeDist, NativeFailure, OwnerConflict};
use crate::snapshot::python::{Package, Python};
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Most extension modules read per interpreter.
pub const MAX_MODULES: usize = 4000;

/// One interpreter's facts.
struct Found {
    python: String,
    native: Vec<NativeDist>,
    failures: Vec<NativeFailure>,
    owners: Vec<OwnerConflict>,
}

/// The probe entry point (registered as `extensions`, stage 2).
pub fn probe(ctx: &Context) -> Apply {
    let (found, errors) = collect(ctx);
    Box::new(move |snap| {
        for f in found {
            if let Some(py) = snap.pythons.iter_mut().find(|p| p.path == f.python) {
                py.native = f.native;
                py.native_failures = f.failures;
                py.owners = f.owners;
            }
        }
        snap.probe_errors.extend(errors);
    })
}

fn collect(ctx: &Context) -> (Vec<Found>, Vec<ProbeError>) {
    let root = ctx.root();
    let loader = Loader::new(root, ctx.env());
    let cache = exports::Cache::default();
    let pythons = &ctx.earlier.pythons;
    let slots = pool::map_in_order(pythons, ctx.deadline, |py| {
        let mut errors = Vec::new();
        let (native, failures) = scan_python(ctx, &loader, &cache, py, &mut errors);
        let owners = owner::conflicts(root, py, &mut errors);
        let found = Found {
            python: py.path.clone(),
            native,
            failures,
            owners,
        };
        (found, errors)
    });
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for slot in slots {
        match slot {
            pool::Slot::Done((f, e)) => {
                out.push(f);
                errors.extend(e);
            }
            pool::Slot::Panicked => errors.push(ProbeError::new(
                "extensions",
                "reading an interpreter's extension modules failed unexpectedly (a bug in envdoctor)",
            )),
            pool::Slot::Skipped => errors.push(ProbeError::new(
                "extensions",
                "the deadline came before every interpreter's extension modules were read",
            )),
        }
    }
    (out, errors)
}

/// A framework's distribution name, the directory of its own libraries, which files count.
type HostDir = (&'static str, &'static str, fn(&str) -> bool);

/// The libraries a framework's own process has loaded before any extension of it is imported:
/// torch's `torch/lib/*.so*`, TensorFlow's `libtensorflow_framework.so.2` and
/// `libtensorflow_cc.so.2`.
fn framework_loaded(root: &Root, py: &Python) -> (Vec<Preload>, Option<&'static str>) {
    let mut out = Vec::new();
    let mut host = None;
    let dirs: [HostDir; 2] = [
        ("torch", "torch/lib", |n| {
            n.starts_with("lib") && n.contains(".so")
        }),
        ("tensorflow", "tensorflow", |n| {
            n.starts_with("libtensorflow_framework.so") || n.starts_with("libtensorflow_cc.so")
        }),
    ];
    for (name, rel, keep) in dirs {
        let Some(pkg) = py.package(name) else {
            continue;
        };
        let dir = Path::new(&pkg.location).join(rel);
        let Ok(entries) = root.read_dir(&dir) else {
            continue;
        };
        for p in entries {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
            if !n.as_deref().is_some_and(keep) {
                continue;
            }
            let soname = crate::probe::libs::elf::read(root, &p)
                .ok()
                .and_then(|i| i.soname);
            out.push(Preload {
                name: n.unwrap_or_default(),
                path: p,
                soname,
            });
            host.get_or_insert(name);
        }
    }
    (out, host)
}

/// True for a file name Python imports as an extension module (`x.cpython-311-x86_64-linux-gnu.so`,
/// `x.abi3.so`, a bare `x.so`); `libfoo.so*` are libraries loaded by others.
pub fn is_extension_module(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".so") else {
        return false;
    };
    if stem.contains(".cpython-") || stem.ends_with(".abi3") || stem.contains(".pypy") {
        return true;
    }
    !stem.contains('.') && !stem.starts_with("lib") && !stem.is_empty()
}

/// The extension modules of a distribution (machine paths): those its `RECORD` lists; for an
/// editable install, those under its source directory (the build puts them in the tree, and
/// the RECORD lists only the import hook); for a distribution without RECORD (an OS package's
/// `.egg-info`), those under its `top_level.txt` packages.
fn modules_of(root: &Root, records: &Records, pkg: &Package) -> Vec<PathBuf> {
    let meta = Path::new(&pkg.metadata);
    let site = Path::new(&pkg.location);
    let mut out: Vec<PathBuf> = match records.shared_objects(root, pkg) {
        Some(files) => files
            .iter()
            .filter(|f| is_extension_module(f.rsplit('/').next().unwrap_or(f)))
            .map(|f| crate::root::lexical_normalize(&site.join(f)))
            .collect(),
        None => top_level(root, meta)
            .iter()
            .flat_map(|t| walk(root, &site.join(t)))
            .collect(),
    };
    if let Some(src) = pkg.editable.as_deref().filter(|e| e.starts_with('/')) {
        out.extend(walk(root, Path::new(src)));
    }
    out.sort();
    out.dedup();
    out
}

/// The top-level import names a distribution lists (`top_level.txt`).
fn top_level(root: &Root, meta: &Path) -> Vec<String> {
    root.read_limited(&meta.join("top_level.txt"), 64 * 1024)
        .map(|b| {
            String::from_utf8_lossy(&b)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.contains(['/', '.']))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Deepest directory level and most entries [`walk`] visits for one distribution.
const WALK_DEPTH: usize = 8;
const WALK_ENTRIES: usize = 20_000;

/// Extension modules under `dir` (bounded: [`WALK_DEPTH`], [`WALK_ENTRIES`]; `.git`,
/// `__pycache__` and hidden directories skipped).
fn walk(root: &Root, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = root.read_dir(&d) else {
            continue;
        };
        for p in entries {
            seen += 1;
            if seen > WALK_ENTRIES {
                return out;
            }
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if is_extension_module(&name) {
                out.push(p);
            } else if depth < WALK_DEPTH
                && !name.starts_with('.')
                && name != "__pycache__"
                && root.symlink_metadata(&p).is_ok_and(|m| m.is_dir())
            {
                stack.push((p, depth + 1));
            }
        }
    }
    out
}

/// Every distribution's extension modules in `py`, loaded.
fn scan_python(
    ctx: &Context,
    base: &Loader,
    cache: &exports::Cache,
    py: &Python,
    errors: &mut Vec<ProbeError>,
) -> (Vec<NativeDist>, Vec<NativeFailure>) {
    let (root, deadline) = (ctx.root(), ctx.deadline);
    let (preloads, host) = framework_loaded(root, py);
    let framework: Vec<PathBuf> = preloads.iter().map(|p| p.path.clone()).collect();
    let loader = base.clone().with_framework_loaded(preloads);
    let exe = PathBuf::from(py.canonical_path.as_deref().unwrap_or(&py.path));
    let interp = load::Interp::new(root, &loader, &exe, framework, cache, &ctx.memo);
    let numpy_major = py
        .package("numpy")
        .and_then(|n| n.version.split('.').next()?.parse::<u32>().ok());
    // `311` for CPython 3.11: the tag its import system accepts in `.cpython-311-*.so`.
    let py_tag = py.version.as_deref().and_then(|v| {
        let mut parts = v.split('.');
        Some(format!("{}{}", parts.next()?, parts.next()?))
    });
    let py_tag = py_tag.as_deref();
    let mut budget = MAX_MODULES;
    let mut native = Vec::new();
    let mut failures = Vec::new();
    let visible = py.visible_packages();
    for pkg in &py.packages {
        if visible.get(pkg.name.as_str()).map(|w| &w.metadata) != Some(&pkg.metadata) {
            continue; // a shadowed copy: import never sees it
        }
        let modules = modules_of(root, &ctx.records, pkg);
        if modules.is_empty() {
            continue;
        }
        if let Some(xy) = py_tag {
            failures.extend(wrong_python_tag(pkg, &modules, xy));
        }
        if Instant::now() >= deadline || budget == 0 {
            errors.push(ProbeError::new(
                "extensions",
                format!(
                    "{}: stopped before every extension module was read (deadline or the {MAX_MODULES}-module bound)",
                    py.path
                ),
            ));
            break;
        }
        let wants_numpy = numpy_major.is_some() && requires(pkg, "numpy");
        let take = modules.len().min(budget);
        budget -= take;
        let (dist, fails, visited) = scan_dist(
            root,
            &interp,
            pkg,
            &modules[..take],
            Want {
                numpy: wants_numpy,
                host,
                framework: crate::probe::libs::frameworks::kind_of(pkg).is_some(),
            },
            deadline,
        );
        if visited < take {
            errors.push(ProbeError::at(
                "extensions",
                &py.path,
                format!(
                    "the deadline came after {} of {}'s {take} extension modules; the rest were not checked",
                    visited, pkg.name
                ),
            ));
        }
        native.push(dist);
        failures.extend(fails);
    }
    (native, failures)
}

/// The CPython tag of an extension module's file name (`x.cpython-310-x86_64-linux-gnu.so` →
/// (`x`, `310`)); None for `abi3`, bare and non-CPython modules, which any CPython 3 imports.
fn cpython_tag(name: &str) -> Option<(&str, &str)> {
    let (stem, rest) = name.split_once(".cpython-")?;
    let tag = rest.split('-').next()?;
    let digits = tag.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some((stem, digits))
}

/// Modules whose CPython tag is not the interpreter's (`xy`, `311`) and that have no twin of
/// the same name it would import instead (its own tag, `abi3`, a bare `.so`): the import
/// system looks only for `EXTENSION_SUFFIXES`, so `import` says "No module named ...".
fn wrong_python_tag(pkg: &Package, modules: &[PathBuf], xy: &str) -> Vec<NativeFailure> {
    let importable = |dir: Option<&Path>, stem: &str| {
        modules.iter().any(|m| {
            let Some(n) = m.file_name().and_then(|n| n.to_str()) else {
                return false;
            };
            let own = match cpython_tag(n) {
                Some((s, tag)) => s == stem && tag == xy,
                None => n
                    .strip_suffix(".so")
                    .is_some_and(|b| b == stem || b.strip_suffix(".abi3") == Some(stem)),
            };
            own && m.parent() == dir
        })
    };
    let mut out = Vec::new();
    for m in modules {
        let Some(name) = m.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some((stem, tag)) = cpython_tag(name) else {
            continue;
        };
        if tag == xy || importable(m.parent(), stem) {
            continue;
        }
        out.push(NativeFailure {
            package: pkg.name.clone(),
            version: pkg.version.clone(),
            module: m.to_string_lossy().into_owned(),
            file: name.to_string(),
            kind: "wrong-python-tag".into(),
            missing: vec![format!("cpython-{xy}")],
            count: 1,
            ..Default::default()
        });
    }
    out
}

/// Whether `pkg` names `dep` in its `Requires-Dist`.
fn requires(pkg: &Package, dep: &str) -> bool {
    pkg.requires.iter().any(|r| {
        let name: String = r
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect();
        crate::probe::python::dist_info::normalize_name(&name) == dep
    })
}

/// What to learn of a distribution besides its loading: its NumPy marker (it requires NumPy
/// and NumPy is installed), the framework whose libraries it may reuse.
struct Want<'a> {
    numpy: bool,
    host: Option<&'a str>,
    /// A framework the library probe models (torch, TensorFlow, jaxlib, ...): its facts are
    /// kept, its loading is judged there.
    framework: bool,
}

/// Most modules of one distribution scanned for the NumPy marker (its modules are compiled
/// together: the first with a marker says the build).
const NUMPY_SCANS: usize = 4;

/// One distribution's modules, until `deadline` (less a margin to hand the facts over).
fn scan_dist(
    root: &Root,
    interp: &load::Interp,
    pkg: &Package,
    modules: &[PathBuf],
    want: Want,
    deadline: Instant,
) -> (NativeDist, Vec<NativeFailure>, usize) {
    let stop = deadline
        .checked_sub(std::time::Duration::from_millis(300))
        .unwrap_or(deadline);
    let mut scans = 0;
    let mut visited = 0;
    let record = abi::recorded_build(root, pkg);
    let built_for_torch = record
        .as_ref()
        .and_then(|r| r.torch.clone())
        .or_else(|| abi::built_for_torch(pkg));
    let mut dist = NativeDist {
        package: pkg.name.clone(),
        version: pkg.version.clone(),
        built_for_torch: built_for_torch.clone(),
        build_record: record
            .as_ref()
            .map(|_| format!("{}/deepspeed/git_version_info_installed.py", pkg.location)),
        built_for_cuda: record.and_then(|r| r.cuda),
        ..Default::default()
    };
    let mut failures = Vec::new();
    for m in modules {
        if Instant::now() >= stop {
            break;
        }
        visited += 1;
        let Ok((info, syms)) = crate::probe::libs::elf::read_with_symbols(root, m) else {
            continue; // not there, or not ELF (a stub): Python would not import it either way
        };
        dist.modules += 1;
        let out = interp.load(m, info, &syms);
        if !out.from_framework.is_empty() {
            dist.host = want.host.map(str::to_string);
        }
        dist.cuda_majors
            .extend(out.sonames.iter().filter_map(|s| abi::cuda_major(s)));
        // One module with the marker says the distribution's build (its modules are compiled
        // together): the rest are not scanned.
        if want.numpy && dist.numpy_abi.is_none() && scans < NUMPY_SCANS {
            scans += 1;
            if let Some(v) = abi::numpy_abi(root, m) {
                if dist.numpy_abi.is_none_or(|old| v < old) {
                    dist.numpy_abi = Some(v);
                    dist.numpy_module = Some(m.to_string_lossy().into_owned());
                }
            }
        }
        // A framework's own modules are the library probe's: it follows the framework's
        // real load order and knows when each library is needed (`needed_at`), so a second
        // verdict here would only repeat, or contradict, its own.
        if want.framework {
            failures.extend(framework_failure(pkg, m, &out));
            continue;
        }
        if let Some(f) = failure(pkg, m, &out, &built_for_torch) {
            failures.push(f);
        }
    }
    dist.cuda_majors.sort();
    dist.cuda_majors.dedup();
    (dist, failures, visited)
}

/// The failure of a framework's own module: only what the library probe does not judge, an
/// undefined symbol in one of the framework's own objects (torch's `libtorch_cuda.so` asking
/// an older NCCL for `ncclCommRegister`).
fn framework_failure(pkg: &Package, module: &Path, out: &load::Outcome) -> Option<NativeFailure> {
    if out.framework_undefined.is_empty() {
        return None;
    }
    let only = load::Outcome {
        undefined: out.framework_undefined.clone(),
        undefined_count: out.framework_undefined.len(),
        ..Default::default()
    };
    let mut f = failure(pkg, module, &only, &None)?;
    f.kind = "framework-undefined-symbol".into();
    Some(f)
}

/// The failure `out` describes, if any (the first the loader would meet).
fn failure(
    pkg: &Package,
    module: &Path,
    out: &load::Outcome,
    built_for_torch: &Option<String>,
) -> Option<NativeFailure> {
    let (kind, missing, count) = if !out.missing_libraries.is_empty() {
        let kind = if load::only_driver(&out.missing_libraries) {
            "missing-driver"
        } else {
            "missing-library"
        };
        let n = out.missing_libraries.len();
        (kind, out.missing_libraries.clone(), n)
    } else if !out.missing_versions.is_empty() {
        let n = out.missing_versions.len();
        ("missing-version", out.missing_versions.clone(), n)
    } else if out.undefined_count > 0 {
        (
            "undefined-symbol",
            out.undefined.clone(),
            out.undefined_count,
        )
    } else {
        return None;
    };
    let mut missing = missing;
    missing.truncate(load::NAMED);
    Some(NativeFailure {
        package: pkg.name.clone(),
        version: pkg.version.clone(),
        module: module.to_string_lossy().into_owned(),
        file: module
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        kind: kind.into(),
        missing,
        count,
        searched: out.from_framework.clone(),
        built_for_torch: built_for_torch.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_tags() {
        assert_eq!(
            cpython_tag("_C.cpython-310-x86_64-linux-gnu.so"),
            Some(("_C", "310"))
        );
        assert_eq!(
            cpython_tag("m.cpython-313t-x86_64-linux-gnu.so"),
            Some(("m", "313"))
        );
        assert_eq!(cpython_tag("_C.abi3.so"), None);
        assert_eq!(cpython_tag("x.so"), None);
        let pkg = Package {
            name: "p".into(),
            version: "1".into(),
            ..Default::default()
        };
        let ms = |names: &[&str]| -> Vec<PathBuf> {
            names.iter().map(|n| Path::new("/s/p").join(n)).collect()
        };
        let f = wrong_python_tag(&pkg, &ms(&["_C.cpython-310-x86_64-linux-gnu.so"]), "311");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, "wrong-python-tag");
        assert_eq!(f[0].missing, ["cpython-311"]);
        // Debian's shared dist-packages: one build per Python, the right one is there.
        let both = ms(&[
            "_C.cpython-310-x86_64-linux-gnu.so",
            "_C.cpython-311-x86_64-linux-gnu.so",
        ]);
        assert!(wrong_python_tag(&pkg, &both, "311").is_empty());
        let abi3 = ms(&["_C.cpython-310-x86_64-linux-gnu.so", "_C.abi3.so"]);
        assert!(wrong_python_tag(&pkg, &abi3, "311").is_empty());
        // A twin in another directory is another module.
        let mut other = ms(&["_C.cpython-310-x86_64-linux-gnu.so"]);
        other.push(PathBuf::from("/s/q/_C.cpython-311-x86_64-linux-gnu.so"));
        assert_eq!(wrong_python_tag(&pkg, &other, "311").len(), 1);
    }

    #[test]
    fn extension_module_names() {
        assert!(is_extension_module("_C.cpython-311-x86_64-linux-gnu.so"));
        assert!(is_extension_module("_C.abi3.so"));
        assert!(is_extension_module("_version_cuda.so"));
        assert!(!is_extension_module("libtorch_cpu.so"));
        assert!(!is_extension_module("libcudart.so.12"));
        assert!(!is_extension_module("foo.py"));
        assert!(!is_extension_module(".so"));
    }
}
