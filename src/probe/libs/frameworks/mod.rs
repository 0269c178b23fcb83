//! `frameworks[]`: what each installed ML framework asks the native world for, read statically
//! from its files (Python is never run), one module per family and era:
//!
//! - [`tensorflow`]: TF 1.13 → 2.21 (`tensorflow/` or `tensorflow_core/`, build_info,
//!   `cuda_config.h` with or without per-library versions, the object defining `DsoLoader`);
//! - [`torch`]: torch 1.x → 2.15 (version.py, DT_NEEDED of `_C` and `torch/lib`, the
//!   architecture list, the build's cuDNN, and the `_preload_cuda_deps` of its `__init__.py`);
//! - [`jax`]: the JAX CUDA PJRT/kernel plugins (`_load_nvidia_libraries` of the PJRT package,
//!   dlopens from `xla_cuda_plugin.so`) and `jaxlib+cuda`;
//! - CuPy (`cupy/.data/_wheel.json`) and ONNX Runtime (`build_and_package_info.py`): the CUDA
//!   major from the name or file and the CUDA-family DT_NEEDED of their extension modules;
//! - [`extension`]: `cuda-extension`, any other package whose native modules link CUDA-family
//!   libraries;
//! - [`preload`]: the sys.path search torch and JAX do to load libraries by path;
//! - [`strings`]: literal names inside binaries (dlopen names, the torch arch list).
//!
//! Unreadable or corrupt files become `probe_errors` naming the file; the framework is still
//! reported with what the other files told.

pub mod conda;
pub mod extension;
pub mod jax;
pub mod preload;
pub mod strings;
pub mod tensorflow;
pub mod torch;

use crate::probe::file_memo::FileMemo;
use crate::probe::libs::elf;
use crate::probe::libs::search::{Loader, Object};
use crate::root::Root;
use crate::snapshot::libs::{Framework, Wanted};
use crate::snapshot::python::Package;
use crate::snapshot::{ProbeError, Python};
use std::path::{Path, PathBuf};

/// The probe name used in `probe_errors`.
const PROBE: &str = "libs";

/// Most bytes read from a Python/C text file we parse.
const MAX_TEXT: u64 = 4 * 1024 * 1024;

/// Most shared objects scanned per framework directory (torch/lib holds ~60).
const MAX_SCANNED: usize = 400;

/// The CUDA family: library stems (without `lib`) whose sonames we track.
pub const CUDA_FAMILY: &[&str] = &[
    "nvrtc-builtins",
    "nvshmem_host",
    "cusolverMg",
    "cufftw",
    "nvblas",
    "cuda",
    "cudart",
    "cublas",
    "cublasLt",
    "cufft",
    "curand",
    "cusolver",
    "cusparse",
    "cusparseLt",
    "nvrtc",
    "nvJitLink",
    "cupti",
    "cudnn",
    "nccl",
    "nvinfer",
    "nvidia-ml",
    "nvToolsExt",
    "cufile",
];

/// The CUDA-family name of a soname or file name (`libcusolver.so.10` → `cusolver`; cuDNN's
/// sub-libraries `libcudnn_ops.so.9` → `cudnn`; auditwheel's renamed bundled copies
/// `libcudart-80664282.so.10.2` → `cudart`), when it is one.
pub fn family(name: &str) -> Option<&'static str> {
    let stem = name.strip_prefix("lib")?.split(".so").next()?;
    // auditwheel's bundled copies: `libcudart-80664282.so.10.2`.
    let stem = match stem.rsplit_once('-') {
        Some((s, h)) if h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit()) => s,
        _ => stem,
    };
    if let Some(f) = CUDA_FAMILY.iter().find(|f| **f == stem) {
        return Some(f);
    }
    if stem.starts_with("cudnn_") {
        return Some("cudnn");
    }
    if stem.starts_with("nvinfer_") {
        return Some("nvinfer");
    }
    None
}

/// The CUDA family of an NVIDIA library wheel (`nvidia-cusolver-cu12` → `cusolver`,
/// `nvidia-cuda-runtime-cu12` → `cudart`, `nvidia-cublas` → `cublas`), when it ships one.
pub fn wheel_family(wheel: &str) -> Option<&'static str> {
    let (stem, _) = crate::snapshot::family::nvidia_wheel(wheel)?;
    let family = match stem {
        "cuda-runtime" => "cudart",
        "cuda-nvrtc" => "nvrtc",
        "cuda-cupti" => "cupti",
        "nvjitlink" => "nvJitLink",
        "cusparselt" => "cusparseLt",
        "nvtx" => "nvToolsExt",
        "nvshmem" => "nvshmem_host",
        other => return CUDA_FAMILY.iter().copied().find(|f| *f == other),
    };
    Some(family)
}

/// The major of a soname's version (`libcudart.so.11.0` → 11), when it has one.
pub fn soname_major(name: &str) -> Option<u64> {
    name.rsplit_once(".so.")?.1.split('.').next()?.parse().ok()
}

/// One framework found, with what resolution needs beyond the snapshot's facts.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// The facts.
    pub framework: Framework,
    /// The object whose `dlopen` calls ask for the libraries (a machine path).
    pub dlopen_requester: PathBuf,
    /// Labelled directories where its own copies live (`framework`, `pip-nvidia`).
    pub extra_dirs: Vec<(PathBuf, String)>,
}

/// What the interpreter's world looks like to a framework's own loader code.
#[derive(Clone, Debug, Default)]
pub struct World {
    /// The modelled `sys.path`: the working directory (`sys.path[0]` of `python -c`, `-m`, a
    /// REPL) and then `pythons[].sys_path`.
    pub sys_path: Vec<String>,
}

impl World {
    /// The world of `python` run from `cwd`.
    pub fn of(python: &Python, cwd: &Path) -> Self {
        let mut sys_path = vec![cwd.to_string_lossy().into_owned()];
        sys_path.extend(
            python
                .sys_path
                .iter()
                .filter(|e| e.exists)
                .map(|e| e.path.clone()),
        );
        World { sys_path }
    }
}

impl Scan {
    /// `tensorflow 2.4.0`.
    pub fn label(&self) -> String {
        format!("{} {}", self.framework.name, self.framework.version)
    }
}

/// Which framework a package is, and the module directories to look in (the one table of
/// names, `crate::snapshot::family`).
pub(crate) fn kind_of(pkg: &Package) -> Option<crate::snapshot::family::Scan> {
    crate::snapshot::family::scan(&pkg.name)
}

/// The CUDA major a package name states (`cupy-cuda12x` → 12, `cupy-cuda110` → 11,
/// `jax-cuda12-plugin` → 12).
fn cuda_major_from_name(name: &str) -> Option<u64> {
    let rest = name
        .strip_prefix("cupy-cuda")
        .or_else(|| name.strip_prefix("jax-cuda"))?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    match digits.len() {
        0 => None,
        1 | 2 => digits.parse().ok(),
        // cupy-cuda110, cupy-cuda102: major is all but the last digit.
        _ => digits[..digits.len() - 1].parse().ok(),
    }
}

/// Every framework installed for `python`, with the libraries their own loader code loads
/// (found with `loader` and the interpreter's `world`).
pub fn scan_python(
    root: &Root,
    loader: &Loader,
    python: &Python,
    world: &World,
    records: &crate::probe::record::Records,
    memo: &FileMemo,
    errors: &mut Vec<ProbeError>,
) -> Vec<Scan> {
    let py_path = PathBuf::from(&python.path);
    let py_obj = match elf::read(root, &py_path) {
        Ok(info) => Object::from_elf(&py_path, &info),
        Err(_) => Object::bare(&py_path),
    }
    .main_executable();
    let nvidia_installed: Vec<String> = python
        .packages
        .iter()
        .filter(|p| p.name.starts_with("nvidia-"))
        .map(|p| format!("{}=={}", p.name, p.version))
        .collect();
    let ctx = ScanContext {
        root,
        loader,
        python,
        world,
        py_obj: &py_obj,
        nvidia_installed: &nvidia_installed,
        records,
        memo,
    };
    let mut extensions: Vec<&Package> = Vec::new();
    let mut out = Vec::new();
    let mut seen_dirs: Vec<PathBuf> = Vec::new();
    for pkg in &python.packages {
        let Some(crate::snapshot::family::Scan {
            framework: kind,
            modules,
        }) = kind_of(pkg)
        else {
            // After the frameworks: a per-CUDA variant follows their CUDA.
            extensions.push(pkg);
            continue;
        };
        let site = PathBuf::from(&pkg.location);
        let Some(dir) = modules
            .iter()
            .map(|m| site.join(m))
            .find(|d| root.is_dir(d))
        else {
            continue;
        };
        // A package listed twice on sys.path (shadowed copies) is scanned once, the winner.
        if seen_dirs.contains(&dir) {
            continue;
        }
        seen_dirs.push(dir.clone());
        out.push(scan_framework(&ctx, pkg, kind, &site, &dir, errors));
    }
    let runtime_major = out
        .iter()
        .find(|s| s.framework.name == "torch")
        .or_else(|| out.first())
        .and_then(|s| s.framework.cuda_major);
    let mut ext_budget = 0usize;
    for pkg in extensions {
        if let Some(scan) = scan_extension(&ctx, pkg, runtime_major, &mut ext_budget, errors) {
            out.push(scan);
        }
    }
    out
}

/// What every framework scan of one interpreter shares.
struct ScanContext<'a> {
    root: &'a Root,
    loader: &'a Loader,
    python: &'a Python,
    world: &'a World,
    /// The interpreter as the loader sees it (the main executable).
    py_obj: &'a Object,
    /// The interpreter's installed nvidia-* wheels (`nvidia-cudnn-cu12==9.1.0.70`).
    nvidia_installed: &'a [String],
    /// The distributions' `RECORD`s, shared with the `extensions` probe.
    records: &'a crate::probe::record::Records,
    /// Answers read out of large files, kept across runs.
    memo: &'a FileMemo,
}

/// The facts every framework entry starts from: its package, version and requirements.
fn framework_base(ctx: &ScanContext, pkg: &Package, kind: &str, location: &str) -> Framework {
    let local = pkg.version.split_once('+').map(|(_, l)| l.to_string());
    Framework {
        python: ctx.python.path.clone(),
        name: kind.to_string(),
        version: pkg.version.clone(),
        location: location.to_string(),
        local_version: local.or_else(|| pkg.local.clone()),
        nvidia_requirements: pkg
            .requires
            .iter()
            .filter(|r| r.trim_start().starts_with("nvidia-"))
            .map(|r| r.split(';').next().unwrap_or(r).trim().to_string())
            .collect(),
        nvidia_installed: ctx.nvidia_installed.to_vec(),
        cuda_major: cuda_major_from_name(&pkg.name),
        ..Default::default()
    }
}

/// One framework package (`kind` installed in `dir` under `site`), read by its model.
fn scan_framework(
    ctx: &ScanContext,
    pkg: &Package,
    kind: &str,
    site: &Path,
    dir: &Path,
    errors: &mut Vec<ProbeError>,
) -> Scan {
    let root = ctx.root;
    let mut fw = framework_base(ctx, pkg, kind, &dir.to_string_lossy());
    let mut scan = Scan {
        dlopen_requester: dir.to_path_buf(),
        ..Default::default()
    };
    match kind {
        "tensorflow" => tensorflow::scan(root, dir, &mut fw, &mut scan, errors),
        "torch" => {
            if let Some(plan) = torch::scan(root, ctx.memo, dir, &mut fw, &mut scan, errors) {
                if torch::plan_applies(&plan, root, ctx.loader, ctx.py_obj) {
                    fw.preloads = preload::resolve(root, &plan.specs, &ctx.world.sys_path);
                    preload::mark_foreign(&mut fw.preloads, site);
                }
            }
        }
        "onnxruntime" => {
            read_assignments(
                root,
                &dir.join("capi/build_and_package_info.py"),
                &mut fw,
                errors,
            );
            scan_elf_dirs(root, &[dir.join("capi")], &mut fw, &mut scan, errors);
        }
        "cupy" => scan_cupy(root, site, dir, &mut fw, &mut scan, errors),
        _ => {
            // jax plugins and jaxlib: extension modules in the package dir.
            scan_elf_dirs(
                root,
                &[dir.to_path_buf(), dir.join("cuda")],
                &mut fw,
                &mut scan,
                errors,
            );
            let specs = jax::scan(root, site, dir, &mut fw, &mut scan, errors);
            // jaxlib itself is the CPU build since CUDA moved to plugins (jaxlib's `+cuda`
            // local versions before that): with no CUDA plugin beside it, JAX has no GPU.
            let has_plugin = ctx.python.packages.iter().any(|p| {
                p.name.starts_with("jax-cuda")
                    && (p.name.ends_with("-plugin") || p.name.ends_with("-pjrt"))
            });
            if pkg.name == "jaxlib" && fw.is_cuda_build.is_none() && !has_plugin {
                fw.is_cuda_build = Some(false);
            }
            fw.preloads = preload::resolve(root, &specs, &ctx.world.sys_path);
            preload::mark_foreign(&mut fw.preloads, site);
        }
    }
    conda::scan(root, site, kind, pkg.installer.as_deref(), &mut fw, errors);
    // Own copies: the framework's lib dir and pip's nvidia/*/lib beside it.
    scan.extra_dirs.push((dir.join("lib"), "framework".into()));
    scan.extra_dirs
        .extend(crate::probe::libs::search::pip_nvidia_dirs(root, site));
    finish(fw, scan)
}

/// CuPy: its CUDA from `.data/_wheel.json`, its modules in the package and `cupy_backends`.
fn scan_cupy(
    root: &Root,
    site: &Path,
    dir: &Path,
    fw: &mut Framework,
    scan: &mut Scan,
    errors: &mut Vec<ProbeError>,
) {
    let wheel = dir.join(".data/_wheel.json");
    if let Ok(text) = root.read_to_string_lossy(&wheel) {
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => {
                if let Some(c) = v.get("cuda").and_then(|c| c.as_str()) {
                    fw.cuda_version = Some(c.to_string());
                }
            }
            Err(e) => errors.push(ProbeError::at(PROBE, &wheel, format!("not JSON: {e}"))),
        }
    }
    let backends = site.join("cupy_backends/cuda");
    scan_elf_dirs(
        root,
        &[
            dir.to_path_buf(),
            dir.join("cuda"),
            backends.clone(),
            backends.join("api"),
            backends.join("libs"),
        ],
        fw,
        scan,
        errors,
    );
}

/// Any other package with native modules linking CUDA (`cuda-extension`), when it has one.
fn scan_extension(
    ctx: &ScanContext,
    pkg: &Package,
    runtime_major: Option<u64>,
    budget: &mut usize,
    errors: &mut Vec<ProbeError>,
) -> Option<Scan> {
    let site = PathBuf::from(&pkg.location);
    let mut fw = framework_base(ctx, pkg, "cuda-extension", &pkg.metadata);
    if !extension::scan(
        ctx.root,
        ctx.records,
        pkg,
        &mut fw,
        runtime_major,
        budget,
        errors,
    ) {
        return None;
    }
    let mut scan = Scan {
        dlopen_requester: fw
            .entry_points
            .first()
            .map(PathBuf::from)
            .unwrap_or_else(|| site.clone()),
        ..Default::default()
    };
    scan.extra_dirs
        .extend(crate::probe::libs::search::pip_nvidia_dirs(ctx.root, &site));
    Some(finish(fw, scan))
}

/// The derived facts, and the scan with its framework.
fn finish(mut fw: Framework, mut scan: Scan) -> Scan {
    if !fw.nvidia_requirements.is_empty() {
        fw.uses_pip_nvidia = true;
    }
    derive(&mut fw);
    scan.framework = fw;
    scan
}

/// Fill the derived majors from what was read.
fn derive(fw: &mut Framework) {
    if fw.cuda_major.is_none() {
        fw.cuda_major = fw
            .cuda_version
            .as_deref()
            .and_then(|v| v.split('.').next()?.parse().ok());
    }
    if fw.cudnn_major.is_none() {
        fw.cudnn_major = fw
            .cudnn_version
            .as_deref()
            .and_then(|v| v.split('.').next()?.parse().ok())
            .or_else(|| {
                fw.wants
                    .iter()
                    .filter(|w| {
                        family(&w.soname) == Some("cudnn") && w.soname.starts_with("libcudnn.so")
                    })
                    .find_map(|w| soname_major(&w.soname))
            })
            .or_else(|| {
                fw.nvidia_requirements.iter().find_map(|r| {
                    let rest = r.strip_prefix("nvidia-cudnn-cu")?;
                    let (_, v) = rest.split_once("==")?;
                    v.trim().split('.').next()?.parse().ok()
                })
            });
    }
}

pub(crate) fn read_text(root: &Root, path: &Path, errors: &mut Vec<ProbeError>) -> Option<String> {
    match root.read_limited(path, MAX_TEXT) {
        Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            errors.push(ProbeError::from_root(PROBE, &e));
            None
        }
    }
}

/// A Python literal we understand.
#[derive(Clone, Debug, PartialEq)]
pub enum PyValue {
    /// A string.
    Str(String),
    /// `True` or `False`.
    Bool(bool),
    /// A list or tuple of strings.
    List(Vec<String>),
    /// `None`.
    None,
}

fn parse_value(s: &str) -> Option<PyValue> {
    let s = s.trim_start();
    if let Some(q) = s.chars().next().filter(|c| *c == '\'' || *c == '"') {
        let rest = &s[1..];
        let end = rest.find(q)?;
        return Some(PyValue::Str(rest[..end].to_string()));
    }
    if s.starts_with("True") {
        return Some(PyValue::Bool(true));
    }
    if s.starts_with("False") {
        return Some(PyValue::Bool(false));
    }
    if s.starts_with("None") {
        return Some(PyValue::None);
    }
    if let Some(rest) = s.strip_prefix('[') {
        let end = rest.find(']')?;
        let items = rest[..end]
            .split(',')
            .map(|i| i.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
            .filter(|i| !i.is_empty())
            .collect();
        return Some(PyValue::List(items));
    }
    None
}

/// The value bound to `key` in a Python file written by a build: `key = v`, `key: T = v`,
/// `'key': v` (a dict) or `('key', v)` (an OrderedDict's pairs).
pub fn py_value(text: &str, key: &str) -> Option<PyValue> {
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(key) {
            let rest = rest.trim_start();
            let rest = match rest.strip_prefix(':') {
                // An annotation: `cuda: Optional[str] = '12.1'`.
                Some(r) => r.split_once('=').map(|(_, v)| v)?,
                None => match rest.strip_prefix('=') {
                    Some(v) if !v.starts_with('=') => v,
                    _ => continue,
                },
            };
            if let Some(v) = parse_value(rest) {
                return Some(v);
            }
        }
    }
    for q in ['\'', '"'] {
        let quoted = format!("{q}{key}{q}");
        let mut from = 0;
        while let Some(i) = text[from..].find(&quoted) {
            let after = &text[from + i + quoted.len()..];
            let after = after.trim_start();
            if let Some(v) = after.strip_prefix(':').or_else(|| after.strip_prefix(',')) {
                if let Some(v) = parse_value(v) {
                    return Some(v);
                }
            }
            from += i + quoted.len();
        }
    }
    None
}

/// `#define NAME "value"` (or unquoted) in a C header.
pub fn c_define(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix("#define")?.trim_start();
        let rest = rest.strip_prefix(name)?;
        if !rest.starts_with([' ', '\t']) {
            return None;
        }
        let v = rest.trim().trim_matches('"').to_string();
        (!v.is_empty()).then_some(v)
    })
}

fn read_assignments(root: &Root, path: &Path, fw: &mut Framework, errors: &mut Vec<ProbeError>) {
    let Some(text) = read_text(root, path, errors) else {
        return;
    };
    if let Some(PyValue::Str(v)) = py_value(&text, "cuda_version") {
        fw.cuda_version = Some(v);
    }
    if let Some(PyValue::Str(v)) = py_value(&text, "cudnn_version") {
        fw.cudnn_version = Some(v);
    }
}

pub(crate) fn want(fw: &mut Framework, soname: String, evidence: String, requester: &Path) {
    fw.wants.push(Wanted {
        soname,
        evidence,
        requester: Some(requester.to_string_lossy().into_owned()),
        lazy: false,
    });
}

pub(crate) fn file_names(root: &Root, dir: &Path) -> Vec<PathBuf> {
    let mut v = root.read_dir(dir).unwrap_or_default();
    v.sort();
    v
}

/// Record the CUDA-family DT_NEEDED of `path` as wants; notes RPATHs into `nvidia/`.
pub(crate) fn needed_of(
    root: &Root,
    path: &Path,
    fw: &mut Framework,
    errors: &mut Vec<ProbeError>,
) {
    match elf::read(root, path) {
        Ok(info) => {
            if info
                .rpath
                .iter()
                .chain(&info.runpath)
                .any(|r| r.contains("/nvidia/"))
            {
                fw.uses_pip_nvidia = true;
            }
            for n in &info.needed {
                if family(n).is_some() {
                    want(
                        fw,
                        n.clone(),
                        format!("DT_NEEDED of {}", path.display()),
                        path,
                    );
                }
            }
        }
        Err(e) => errors.push(ProbeError::at(PROBE, e.path(), e.to_string())),
    }
}

fn scan_elf_dirs(
    root: &Root,
    dirs: &[PathBuf],
    fw: &mut Framework,
    scan: &mut Scan,
    errors: &mut Vec<ProbeError>,
) {
    let mut n = 0;
    for d in dirs {
        for p in file_names(root, d) {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !name.ends_with(".so") || !root.is_file(&p) || n >= MAX_SCANNED {
                continue;
            }
            n += 1;
            let before = fw.wants.len();
            needed_of(root, &p, fw, errors);
            if fw.wants.len() > before {
                fw.entry_points.push(p.to_string_lossy().into_owned());
                if scan.dlopen_requester.extension().is_none() {
                    scan.dlopen_requester = p.clone();
                }
            }
        }
    }
}

/// The CUDA-family sonames a CUDA major implies (CUDA release majors; knowledge.md A2 and the
/// NVIDIA wheels), beside `libcuda.so.1` and `libnvidia-ml.so.1` which every release uses.
pub fn implied_family(cuda_major: Option<u64>, cudnn_major: Option<u64>) -> Vec<String> {
    let mut v: Vec<String> = vec!["libcuda.so.1".into(), "libnvidia-ml.so.1".into()];
    let table: &[(&str, &str)] = match cuda_major {
        Some(11) => &[
            ("cudart", "11.0"),
            ("cublas", "11"),
            ("cublasLt", "11"),
            ("cufft", "10"),
            ("curand", "10"),
            ("cusolver", "11"),
            ("cusparse", "11"),
            ("nvrtc", "11.2"),
            ("nccl", "2"),
        ],
        Some(12) => &[
            ("cudart", "12"),
            ("cublas", "12"),
            ("cublasLt", "12"),
            ("cufft", "11"),
            ("curand", "10"),
            ("cusolver", "11"),
            ("cusparse", "12"),
            ("nvrtc", "12"),
            ("nvJitLink", "12"),
            ("cupti", "12"),
            ("nccl", "2"),
        ],
        Some(13) => &[
            ("cudart", "13"),
            ("cublas", "13"),
            ("cublasLt", "13"),
            ("cufft", "12"),
            ("curand", "10"),
            ("cusolver", "12"),
            ("cusparse", "12"),
            ("nvrtc", "13"),
            ("nvJitLink", "13"),
            ("cupti", "13"),
            ("nccl", "2"),
        ],
        _ => &[],
    };
    for (l, ver) in table {
        v.push(format!("lib{l}.so.{ver}"));
    }
    if let Some(c) = cudnn_major {
        v.push(format!("libcudnn.so.{c}"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_families_match_the_sonames_they_ship() {
        for (wheel, soname) in [
            ("nvidia-cusolver-cu12", "libcusolver.so.11"),
            ("nvidia-cuda-runtime-cu12", "libcudart.so.12"),
            ("nvidia-cuda-nvrtc-cu11", "libnvrtc.so.11.2"),
            ("nvidia-cuda-cupti-cu12", "libcupti.so.12"),
            ("nvidia-nvjitlink-cu12", "libnvJitLink.so.12"),
            ("nvidia-cudnn-cu13", "libcudnn.so.9"),
            ("nvidia-cublas", "libcublas.so.13"),
            ("nvidia-cusparselt-cu12", "libcusparseLt.so.0"),
            ("nvidia-nccl-cu12", "libnccl.so.2"),
            ("nvidia-nvtx-cu12", "libnvToolsExt.so.1"),
        ] {
            assert_eq!(wheel_family(wheel), family(soname), "{wheel}");
            assert!(wheel_family(wheel).is_some(), "{wheel}");
        }
        assert_eq!(wheel_family("nvidia-cuda-nvcc-cu12"), None);
        assert_eq!(wheel_family("nvidia-ml-py"), None);
        assert_eq!(wheel_family("torch"), None);
    }

    #[test]
    fn build_info_in_every_shape() {
        let tf24 = "import collections\nbuild_info = collections.OrderedDict([('cpu_compiler', '/dt7/usr/bin/gcc'), ('cuda_compute_capabilities', ['sm_35', 'sm_50', 'compute_80']), ('cuda_version', '11.0'), ('cudnn_version', '8'), ('is_cuda_build', True)])\n";
        assert_eq!(
            py_value(tf24, "cuda_version"),
            Some(PyValue::Str("11.0".into()))
        );
        assert_eq!(py_value(tf24, "is_cuda_build"), Some(PyValue::Bool(true)));
        assert_eq!(
            py_value(tf24, "cuda_compute_capabilities"),
            Some(PyValue::List(vec![
                "sm_35".into(),
                "sm_50".into(),
                "compute_80".into()
            ]))
        );
        let tf26 = "build_info = {'cuda_version': '11.2', \"cudnn_version\": \"8\"}";
        assert_eq!(
            py_value(tf26, "cudnn_version"),
            Some(PyValue::Str("8".into()))
        );
        let tf22 = "is_cuda_build = True\ncuda_version_number = '10.1'\n";
        assert_eq!(
            py_value(tf22, "cuda_version_number"),
            Some(PyValue::Str("10.1".into()))
        );
        assert_eq!(py_value(tf22, "cuda_version"), None);
        let torch = "__version__ = '2.1.2+cu121'\ncuda: Optional[str] = '12.1'\nhip: Optional[str] = None\n";
        assert_eq!(py_value(torch, "cuda"), Some(PyValue::Str("12.1".into())));
        assert_eq!(py_value(torch, "hip"), Some(PyValue::None));
        assert_eq!(py_value("x == 1\n", "x"), None);
    }

    #[test]
    fn header_defines_and_names() {
        let h = "#define TF_CUDA_VERSION \"11.0\"\n#define TF_CUSOLVER_VERSION \"10\"\n#define TF_CUDART_VERSION_X \"9\"\n";
        assert_eq!(c_define(h, "TF_CUSOLVER_VERSION").as_deref(), Some("10"));
        assert_eq!(c_define(h, "TF_CUDART_VERSION"), None);
        assert_eq!(family("libcusolver.so.10"), Some("cusolver"));
        assert_eq!(family("libcudnn_ops.so.9"), Some("cudnn"));
        assert_eq!(family("libcublasLt.so.12"), Some("cublasLt"));
        assert_eq!(family("libtorch_cuda.so"), None);
        assert_eq!(family("libcudart-80664282.so.10.2"), Some("cudart"));
        assert_eq!(family("libnvrtc-builtins.so.13.2"), Some("nvrtc-builtins"));
        assert_eq!(soname_major("libcudart.so.11.0"), Some(11));
        assert_eq!(soname_major("libnvrtc.so"), None);
        assert_eq!(cuda_major_from_name("cupy-cuda12x"), Some(12));
        assert_eq!(cuda_major_from_name("cupy-cuda110"), Some(11));
        assert_eq!(cuda_major_from_name("jax-cuda12-plugin"), Some(12));
        assert!(implied_family(Some(12), Some(9)).contains(&"libcudnn.so.9".to_string()));
    }
}
