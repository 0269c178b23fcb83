//! The `cuda` probe: CUDA toolkits, cuDNN headers, the NVIDIA driver version and the loader
//! cache, read statically (nothing is executed or loaded).
//!
//! Toolkits come from `/usr/local/cuda`, `/usr/local/cuda-*`, `$CUDA_HOME`, `$CUDA_PATH`,
//! `$CUDA_ROOT` and conda prefixes (`$CONDA_PREFIX`, and `/opt/conda`, `~/miniconda3`,
//! `~/anaconda3`, `~/miniforge3` with their `envs/*`) whose `conda-meta` holds `cuda-toolkit` or
//! `cudatoolkit`. One entry per real directory; the other names that lead there are `aliases`.
//! Per toolkit: the version (`version.json` `cuda.version`, else `version.txt`, else conda-meta),
//! the cuDNN version in its headers, `nvvm/libdevice/libdevice.10.bc`, `bin/ptxas`, and the
//! library file names it ships.
//!
//! The driver: the kernel module's version from `/proc/driver/nvidia/version`, and the user-space
//! one from the name of the file `libcuda.so.1` leads to (`libcuda.so.580.65.06`) as the loader
//! finds it without LD_LIBRARY_PATH; both differing is the `Driver/library version mismatch` case.
//!
//! Toolkits reachable only through the loader or the shell count too: a directory of
//! `LD_LIBRARY_PATH` or `ld.so.conf` that is a toolkit's `lib64`/`lib`/`targets/*/lib`/
//! `extras/CUPTI/lib64` (HPC `module load cuda/11.1`, conda's `cudatoolkit` in `<prefix>/lib`),
//! and a `PATH` directory that is a toolkit's `bin` with `nvcc`. A toolkit is a directory with
//! `version.json`/`version.txt`, `bin/nvcc` or `include/cuda_runtime.h`, or a conda prefix with a
//! CUDA package in `conda-meta` (never `/`, `/usr`, `/usr/local` themselves).
//!
//! The inventory (`cuda.inventory`, [`inventory`]): every CUDA-family library file on the
//! loader's paths, in the toolkits and in `nvidia-*` wheels, with its static version.
//!
//! The loader cache: format, entry count, the dirs of `/etc/ld.so.conf`, the libraries in
//! those dirs (and the trusted dirs) that the cache does not list, and entries whose file is
//! gone.

use super::libs::ldcache::{self, LdCache as ParsedCache};
use super::libs::links::name_version;
use super::libs::search::{Loader, Object, Requester};
use super::{Apply, Context};
use crate::root::{Env, Root};
use crate::snapshot::cuda::{Cuda, CudnnHeader, Driver, LdCache, Toolkit};
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};

const PROBE: &str = "cuda";

#[path = "cuda_inventory.rs"]
pub mod inventory;

/// The probe entry point (registered as `cuda`, in stage 2: the inventory reads the
/// interpreters' `nvidia-*` wheels).
pub fn probe(ctx: &Context) -> Apply {
    let mut errors = Vec::new();
    let mut cuda = collect(ctx.root(), ctx.env(), &mut errors);
    let (conf_dirs, _) = ldcache::conf_dirs(ctx.root(), Path::new("/etc/ld.so.conf"));
    cuda.inventory = inventory::collect(
        ctx.root(),
        ctx.env(),
        &cuda.toolkits,
        &conf_dirs,
        &super::libs::search::default_dirs(ctx.root()),
        &ctx.earlier.pythons,
    );
    cuda.normalize();
    Box::new(move |snap| {
        snap.cuda = cuda;
        snap.probe_errors.extend(errors);
    })
}

/// Everything the probe finds.
pub fn collect(root: &Root, env: &Env, errors: &mut Vec<ProbeError>) -> Cuda {
    // The system's view: no LD_LIBRARY_PATH.
    let loader = Loader::new(root, &Env::default());
    let mut cuda = Cuda {
        toolkits: toolkits(root, env, errors),
        default_toolkit: root
            .canonicalize(Path::new("/usr/local/cuda"))
            .ok()
            .filter(|p| root.is_dir(p))
            .map(|p| p.to_string_lossy().into_owned()),
        cudnn: system_cudnn(root),
        driver: driver(root, &loader, &Loader::new(root, env), errors),
        ld_cache: ld_cache(root, &loader, errors),
        inventory: Vec::new(),
    };
    cuda.normalize();
    cuda
}

/// `cuda.version` of a `version.json`.
pub fn parse_version_json(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("cuda")?
        .get("version")?
        .as_str()
        .map(|s| s.trim().to_string())
}

/// `CUDA Version 11.1.74` → `11.1.74`.
pub fn parse_version_txt(text: &str) -> Option<String> {
    let rest = text.trim().strip_prefix("CUDA Version")?;
    crate::version::DottedVersion::parse_prefix(rest).map(|v| v.as_str().to_string())
}

/// `CUDNN_MAJOR`/`MINOR`/`PATCHLEVEL` defines → `8.9.2`.
pub fn parse_cudnn_header(text: &str) -> Option<String> {
    let get = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some("#define") && it.next() == Some(name))
                .then(|| it.next()?.parse().ok())
                .flatten()
        })
    };
    Some(format!(
        "{}.{}.{}",
        get("CUDNN_MAJOR")?,
        get("CUDNN_MINOR")?,
        get("CUDNN_PATCHLEVEL")?
    ))
}

/// The kernel module version in `/proc/driver/nvidia/version`
/// (`NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ...`).
pub fn parse_proc_driver(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    let after = line
        .split_once("Kernel Module")
        .map(|(_, r)| r)
        .unwrap_or(line);
    after
        .split_whitespace()
        .find(|w| w.contains('.') && w.split('.').all(|p| p.parse::<u64>().is_ok()))
        .map(str::to_string)
}

fn read_text(root: &Root, p: &Path) -> Option<String> {
    root.read_to_string_lossy(p).ok()
}

/// A directory that may be a toolkit, what named it, and a conda-meta (version, file).
type Named = (PathBuf, String, Option<(String, String)>);

fn toolkits(root: &Root, env: &Env, errors: &mut Vec<ProbeError>) -> Vec<Toolkit> {
    let mut out: Vec<Toolkit> = Vec::new();
    for (path, source, conda_meta) in named_toolkits(root, env) {
        let real = match root.canonicalize(&path) {
            Ok(r) if root.is_dir(&r) => r,
            Ok(_) => continue,
            Err(e) if e.is_not_found() => {
                if source.starts_with("CUDA_") {
                    errors.push(ProbeError::at(
                        PROBE,
                        &path,
                        format!("{source} names a directory that does not exist"),
                    ));
                }
                continue;
            }
            Err(e) => {
                errors.push(ProbeError::from_root(PROBE, &e));
                continue;
            }
        };
        // A version file that is a FIFO or a device is read by no one: said, not lost.
        for name in ["version.json", "version.txt"] {
            if let Err(e @ crate::root::RootError::NotAFile { .. }) = root.open(&real.join(name)) {
                if !errors
                    .iter()
                    .any(|x| x.path.as_deref() == Some(&*e.path().to_string_lossy()))
                {
                    errors.push(ProbeError::from_root(PROBE, &e));
                }
            }
        }
        let real_s = real.to_string_lossy().into_owned();
        if let Some(t) = out.iter_mut().find(|t| t.path == real_s) {
            let alias = if by_dir(&source) {
                source
            } else if source.starts_with('/') || source == "conda" {
                path.to_string_lossy().into_owned()
            } else {
                source
            };
            if alias != t.path {
                t.aliases.push(alias);
            }
            continue;
        }
        out.push(new_toolkit(root, &path, &real, source, conda_meta));
    }
    out
}

/// Every place that names a toolkit, as (path, source, conda version), in priority order.
fn named_toolkits(root: &Root, env: &Env) -> Vec<Named> {
    let mut named: Vec<Named> = Vec::new();
    let mut versioned: Vec<PathBuf> = root
        .read_dir(Path::new("/usr/local"))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("cuda-"))
        })
        .collect();
    versioned.sort();
    for p in versioned {
        named.push((p, "/usr/local/cuda-*".into(), None));
    }
    named.push((
        PathBuf::from("/usr/local/cuda"),
        "/usr/local/cuda".into(),
        None,
    ));
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(v) = env.get(var) {
            named.push((PathBuf::from(v), var.into(), None));
        }
    }
    for (prefix, meta) in conda_toolkits(root, env) {
        named.push((prefix, "conda".into(), Some(meta)));
    }
    named.extend(reachable_toolkits(root, env));
    named
}

/// Toolkits reachable only through the loader or the shell: `module load cuda/11.1` puts
/// `<toolkit>/lib64` on LD_LIBRARY_PATH and `<toolkit>/bin` on PATH; a conda env with
/// `cudatoolkit` puts `<prefix>/lib` on LD_LIBRARY_PATH; a toolkit registered with ldconfig
/// has its library directory in ld.so.conf.
fn reachable_toolkits(root: &Root, env: &Env) -> Vec<Named> {
    let mut named: Vec<Named> = Vec::new();
    let split = |v: Option<String>| -> Vec<PathBuf> {
        v.unwrap_or_default()
            .split([':', ';'])
            .filter(|d| d.starts_with('/'))
            .map(PathBuf::from)
            .collect()
    };
    for d in split(env.get("LD_LIBRARY_PATH").map(str::to_string)) {
        if let Some(t) = toolkit_of_lib_dir(root, &d) {
            named.push((t, "LD_LIBRARY_PATH".into(), None));
        }
    }
    for d in split(env.get("PATH").map(str::to_string)) {
        if d.file_name().is_some_and(|n| n == "bin") && root.is_file(&d.join("nvcc")) {
            if let Some(t) = d.parent().filter(|t| looks_like_toolkit(root, t)) {
                named.push((t.to_path_buf(), "PATH".into(), None));
            }
        }
    }
    let (conf_dirs, _) = ldcache::conf_dirs(root, Path::new("/etc/ld.so.conf"));
    for d in conf_dirs {
        if let Some(t) = toolkit_of_lib_dir(root, &d) {
            named.push((t, "ld.so.conf".into(), None));
        }
    }
    named
}

/// A toolkit first named at `path` (real directory `real`) by `source`.
fn new_toolkit(
    root: &Root,
    path: &Path,
    real: &Path,
    source: String,
    conda_meta: Option<(String, String)>,
) -> Toolkit {
    let mut t = inspect_toolkit(root, real);
    let conda_meta = conda_meta.or_else(|| conda_cuda_meta(root, real));
    if t.version.is_none() {
        if let Some((v, src)) = conda_meta {
            t.version = Some(v);
            t.version_source = Some(src);
        }
    }
    t.source = source.clone();
    if path != real && !source.starts_with("/usr/local/cuda-") {
        let alias = if source.starts_with('/') || source == "conda" || by_dir(&source) {
            path.to_string_lossy().into_owned()
        } else {
            source
        };
        t.aliases.push(alias);
    }
    t
}

/// Sources that name a toolkit through one of its directories rather than a variable naming it.
fn by_dir(source: &str) -> bool {
    matches!(source, "LD_LIBRARY_PATH" | "PATH" | "ld.so.conf")
}

/// The toolkit a library directory belongs to (`<t>/lib64`, `<t>/lib`, `<t>/targets/*/lib`,
/// `<t>/extras/CUPTI/lib64`), when `<t>` looks like a toolkit.
pub fn toolkit_of_lib_dir(root: &Root, dir: &Path) -> Option<PathBuf> {
    let name = dir.file_name()?.to_str()?;
    let parent = dir.parent()?;
    let candidate = match name {
        "lib64" if parent.ends_with("extras/CUPTI") => parent.parent()?.parent()?,
        "lib64" | "lib" => {
            let grand = parent.parent();
            match grand {
                Some(g) if g.file_name().is_some_and(|n| n == "targets") => g.parent()?,
                _ => parent,
            }
        }
        _ => return None,
    };
    looks_like_toolkit(root, candidate).then(|| candidate.to_path_buf())
}

/// A directory with a toolkit's landmarks: `version.json`/`version.txt`, `bin/nvcc`,
/// `include/cuda_runtime.h` (any of them), or a conda prefix whose `conda-meta` holds a CUDA
/// toolkit or runtime package.
pub fn looks_like_toolkit(root: &Root, dir: &Path) -> bool {
    // The system prefixes hold a distribution's CUDA packages (Debian's nvidia-cuda-toolkit puts
    // nvcc in /usr/bin) among everything else: not a toolkit directory of its own.
    if ["/", "/usr", "/usr/local"]
        .iter()
        .any(|p| dir == Path::new(p))
    {
        return false;
    }
    [
        "version.json",
        "version.txt",
        "bin/nvcc",
        "include/cuda_runtime.h",
    ]
    .iter()
    .any(|f| root.is_file(&dir.join(f)))
        || conda_cuda_meta(root, dir).is_some()
}

/// A conda prefix's CUDA package (`cudatoolkit-11.1.74-*.json`, `cuda-toolkit-*`,
/// `cuda-cudart-*`): (version, conda-meta file).
fn conda_cuda_meta(root: &Root, prefix: &Path) -> Option<(String, String)> {
    let mut files = root.read_dir(&prefix.join("conda-meta")).ok()?;
    files.sort();
    files.into_iter().find_map(|f| {
        let n = f.file_name()?.to_string_lossy().into_owned();
        let rest = ["cuda-toolkit-", "cudatoolkit-", "cuda-cudart-"]
            .iter()
            .find_map(|p| n.strip_prefix(p))?;
        if !n.ends_with(".json") || !rest.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let from_json = read_text(root, &f)
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| v.get("version")?.as_str().map(str::to_string));
        let v = from_json.or_else(|| rest.split('-').next().map(str::to_string))?;
        Some((v, f.to_string_lossy().into_owned()))
    })
}

/// Facts of one toolkit directory (a real machine path).
pub fn inspect_toolkit(root: &Root, dir: &Path) -> Toolkit {
    let mut t = Toolkit {
        path: dir.to_string_lossy().into_owned(),
        ..Default::default()
    };
    let vj = dir.join("version.json");
    let vt = dir.join("version.txt");
    if let Some(v) = read_text(root, &vj).and_then(|s| parse_version_json(&s)) {
        t.version = Some(v);
        t.version_source = Some(vj.to_string_lossy().into_owned());
    } else if let Some(v) = read_text(root, &vt).and_then(|s| parse_version_txt(&s)) {
        t.version = Some(v);
        t.version_source = Some(vt.to_string_lossy().into_owned());
    }
    let mut includes = vec![dir.join("include")];
    for target in root.read_dir(&dir.join("targets")).unwrap_or_default() {
        includes.push(target.join("include"));
    }
    t.cudnn_version = includes.iter().find_map(|inc| {
        ["cudnn_version.h", "cudnn.h"]
            .iter()
            .find_map(|h| read_text(root, &inc.join(h)).and_then(|s| parse_cudnn_header(&s)))
    });
    t.has_libdevice = root.is_file(&dir.join("nvvm/libdevice/libdevice.10.bc"));
    t.has_ptxas = root.is_file(&dir.join("bin/ptxas"));
    let mut lib_dirs = vec![
        dir.join("lib64"),
        dir.join("lib"),
        dir.join("extras/CUPTI/lib64"),
    ];
    for target in root.read_dir(&dir.join("targets")).unwrap_or_default() {
        lib_dirs.push(target.join("lib"));
    }
    for d in lib_dirs {
        for f in root.read_dir(&d).unwrap_or_default() {
            if let Some(n) = f.file_name().map(|n| n.to_string_lossy().into_owned()) {
                if n.starts_with("lib") && n.contains(".so") {
                    t.libraries.push(n);
                }
            }
        }
    }
    t
}

/// Conda prefixes with a CUDA toolkit package: (prefix, (version, conda-meta file)).
fn conda_toolkits(root: &Root, env: &Env) -> Vec<(PathBuf, (String, String))> {
    let mut prefixes: Vec<PathBuf> = Vec::new();
    if let Some(p) = env.get("CONDA_PREFIX") {
        prefixes.push(PathBuf::from(p));
    }
    let mut bases = vec![PathBuf::from("/opt/conda")];
    if let Some(home) = env.home() {
        for n in ["miniconda3", "anaconda3", "miniforge3", "mambaforge"] {
            bases.push(home.join(n));
        }
    }
    for b in bases {
        if root.is_dir(&b.join("conda-meta")) {
            prefixes.push(b.clone());
        }
        prefixes.extend(root.read_dir(&b.join("envs")).unwrap_or_default());
    }
    let mut out = Vec::new();
    for p in prefixes {
        for f in root.read_dir(&p.join("conda-meta")).unwrap_or_default() {
            let n = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Some(rest) = n
                .strip_prefix("cuda-toolkit-")
                .or_else(|| n.strip_prefix("cudatoolkit-"))
            else {
                continue;
            };
            if !n.ends_with(".json") {
                continue;
            }
            let from_json = read_text(root, &f)
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| v.get("version")?.as_str().map(str::to_string));
            let version = from_json.or_else(|| rest.split('-').next().map(str::to_string));
            if let Some(v) = version {
                out.push((p.clone(), (v, f.to_string_lossy().into_owned())));
                break;
            }
        }
    }
    out
}

fn system_cudnn(root: &Root) -> Vec<CudnnHeader> {
    let mut out = Vec::new();
    for dir in [
        "/usr/include",
        "/usr/include/x86_64-linux-gnu",
        "/usr/local/include",
    ] {
        let mut names: Vec<PathBuf> = root
            .read_dir(Path::new(dir))
            .unwrap_or_default()
            .into_iter()
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("cudnn_version") && n.ends_with(".h") || n == "cudnn.h"
                })
            })
            .collect();
        names.sort();
        for p in names {
            if let Some(v) = read_text(root, &p).and_then(|s| parse_cudnn_header(&s)) {
                out.push(CudnnHeader {
                    path: p.to_string_lossy().into_owned(),
                    version: v,
                });
            }
        }
    }
    out
}

fn driver(
    root: &Root,
    loader: &Loader,
    job_loader: &Loader,
    errors: &mut Vec<ProbeError>,
) -> Option<Driver> {
    let proc_path = Path::new("/proc/driver/nvidia/version");
    let kernel = match root.read_to_string_lossy(proc_path) {
        Ok(t) => {
            let v = parse_proc_driver(&t);
            if v.is_none() {
                errors.push(ProbeError::at(
                    PROBE,
                    proc_path,
                    "no `NVRM version: ... Kernel Module X.Y.Z` line",
                ));
            }
            v
        }
        Err(_) => None,
    };
    // libcuda.so.1 as the system loader finds it, then its real file name; a forward-
    // compatibility copy there (ld.so.conf naming `compat/`) is not the driver's own.
    let mut libcuda = resolve_libcuda(root, loader).filter(|(_, p)| !is_compat_dir(p));
    if libcuda.is_none() {
        // No libcuda.so.1 link: any libcuda.so.X.Y file in the default dirs.
        'dirs: for d in loader.default_dirs() {
            for f in root.read_dir(d).unwrap_or_default() {
                let n = f
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if n.starts_with("libcuda.so.") {
                    if let Some(v) = name_version(&n).filter(|v| v.contains('.')) {
                        libcuda = Some((v, f));
                        break 'dirs;
                    }
                }
            }
        }
    }
    // What a job here loads, with its LD_LIBRARY_PATH: a compat copy wins over the driver's.
    let compat = resolve_libcuda(root, job_loader).filter(|(_, p)| is_compat_dir(p));
    let (version, source) = match (&kernel, &libcuda) {
        (Some(k), _) => (k.clone(), proc_path.to_string_lossy().into_owned()),
        (None, Some((v, p))) => (v.clone(), p.to_string_lossy().into_owned()),
        (None, None) => return None,
    };
    Some(Driver {
        version,
        source,
        mismatch: matches!((&kernel, &libcuda), (Some(k), Some((l, _))) if k != l),
        kernel_module: kernel,
        libcuda: libcuda.as_ref().map(|(v, _)| v.clone()),
        libcuda_path: libcuda.map(|(_, p)| p.to_string_lossy().into_owned()),
        compat_libcuda: compat
            .as_ref()
            .map(|(_, p)| p.to_string_lossy().into_owned()),
        compat_version: compat.map(|(v, _)| v),
    })
}

/// `libcuda.so.1` as `loader` resolves it from an ordinary executable: the real file and the
/// version its name carries.
fn resolve_libcuda(root: &Root, loader: &Loader) -> Option<(String, PathBuf)> {
    let req = Requester::new(Object::bare("/"));
    let p = loader.resolve("libcuda.so.1", &req).path?;
    let real = root.canonicalize(&p).ok()?;
    let name = real.file_name()?.to_string_lossy().into_owned();
    let v = name_version(&name).filter(|v| v.contains('.'))?;
    Some((v, real))
}

/// A CUDA forward-compatibility directory: the `cuda-compat-X-Y` package's
/// `/usr/local/cuda-X.Y/compat` (NGC and vLLM images put it on the loader path).
pub fn is_compat_dir(file: &Path) -> bool {
    file.parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == "compat")
}

fn ld_cache(root: &Root, loader: &Loader, errors: &mut Vec<ProbeError>) -> Option<LdCache> {
    let path = Path::new("/etc/ld.so.cache");
    let cache: &ParsedCache = match loader.cache() {
        Some(c) => c,
        None => {
            if root.exists(path) {
                errors.push(ProbeError::at(
                    PROBE,
                    path,
                    loader.cache_error().unwrap_or("unreadable").to_string(),
                ));
            }
            return None;
        }
    };
    let (conf_dirs, conf_errors) = ldcache::conf_dirs(root, Path::new("/etc/ld.so.conf"));
    errors.extend(
        conf_errors
            .into_iter()
            .map(|e| ProbeError::at(PROBE, "/etc/ld.so.conf", e)),
    );
    let mut scan = conf_dirs.clone();
    for d in ldcache::trusted_dirs(root) {
        if !scan.contains(&d) {
            scan.push(d);
        }
    }
    let stale = ldcache::stale_files(root, cache, &scan);
    let dangling = ldcache::dangling_entries(root, cache)
        .into_iter()
        .map(|e| format!("{} => {}", e.key, e.value))
        .collect();
    Some(LdCache {
        path: path.to_string_lossy().into_owned(),
        format: cache
            .format
            .map(|f| f.as_str().to_string())
            .unwrap_or_default(),
        entries: cache.entries.len(),
        stale: !stale.is_empty(),
        stale_files: stale
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
        dangling,
        conf_dirs: conf_dirs
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_files() {
        let j = r#"{"cuda" : {"name" : "CUDA SDK", "version" : "11.1.1"}, "cuda_cudart": {"version": "11.1.74"}}"#;
        assert_eq!(parse_version_json(j).as_deref(), Some("11.1.1"));
        assert_eq!(parse_version_json("{").as_deref(), None);
        assert_eq!(
            parse_version_txt("CUDA Version 10.2.89\n").as_deref(),
            Some("10.2.89")
        );
        assert_eq!(parse_version_txt("garbage"), None);
    }

    #[test]
    fn conda_and_env_toolkits_are_merged_by_real_directory() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        let env_dir = p.join("home/u/miniconda3/envs/tf");
        std::fs::create_dir_all(env_dir.join("conda-meta")).unwrap();
        std::fs::create_dir_all(env_dir.join("lib")).unwrap();
        std::fs::write(
            env_dir.join("conda-meta/cuda-toolkit-12.1.0-0.json"),
            r#"{"name": "cuda-toolkit", "version": "12.1.0"}"#,
        )
        .unwrap();
        std::fs::write(env_dir.join("lib/libcudart.so.12"), b"x").unwrap();
        std::fs::create_dir_all(p.join("opt/cuda-x/include")).unwrap();
        std::fs::write(
            p.join("opt/cuda-x/include/cudnn.h"),
            "#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 5\n",
        )
        .unwrap();
        std::fs::create_dir_all(p.join("usr/include")).unwrap();
        std::fs::write(
            p.join("usr/include/cudnn_version.h"),
            "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n",
        )
        .unwrap();
        let root = Root::new(p);
        let env = Env::from_pairs([
            ("HOME", "/home/u"),
            ("CONDA_PREFIX", "/home/u/miniconda3/envs/tf"),
            ("CUDA_HOME", "/opt/cuda-x"),
            ("CUDA_PATH", "/opt/nowhere"),
        ]);
        let mut errors = Vec::new();
        let c = collect(&root, &env, &mut errors);
        assert_eq!(c.toolkits.len(), 2, "{c:#?}");
        let conda = c.toolkits.iter().find(|t| t.source == "conda").unwrap();
        assert_eq!(conda.path, "/home/u/miniconda3/envs/tf");
        assert_eq!(conda.version.as_deref(), Some("12.1.0"));
        assert!(conda.libraries.contains(&"libcudart.so.12".to_string()));
        let home = c.toolkits.iter().find(|t| t.source == "CUDA_HOME").unwrap();
        assert_eq!(home.cudnn_version.as_deref(), Some("7.6.5"));
        assert_eq!(home.version, None);
        assert_eq!(c.cudnn.len(), 1);
        assert_eq!(c.cudnn[0].version, "9.1.0");
        assert_eq!(c.default_toolkit, None);
        assert_eq!(c.driver, None);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path.as_deref(), Some("/opt/nowhere"));
        assert!(errors[0].message.contains("CUDA_PATH"));
    }

    #[test]
    fn toolkits_reachable_only_through_the_loader_or_path() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        let mk = |rel: &str, text: &str| {
            let f = p.join(rel);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        };
        // HPC `module load cuda/11.1`: only LD_LIBRARY_PATH names it.
        mk(
            "apps/cuda/11.1/version.json",
            r#"{"cuda": {"version": "11.1.1"}}"#,
        );
        mk("apps/cuda/11.1/lib64/libcusolver.so.11", "x");
        // A conda env's cudatoolkit on LD_LIBRARY_PATH, outside the usual conda bases.
        mk(
            "work/envs/tf/conda-meta/cudatoolkit-11.2.2-hbe64b41_10.json",
            r#"{"name": "cudatoolkit", "version": "11.2.2"}"#,
        );
        mk("work/envs/tf/lib/libcudart.so.11.0", "x");
        // A toolkit whose bin/ is on PATH; one registered in ld.so.conf (targets layout).
        mk("opt/nv/cuda-12.4/bin/nvcc", "x");
        mk(
            "opt/nv/cuda-12.4/version.json",
            r#"{"cuda": {"version": "12.4.1"}}"#,
        );
        mk(
            "opt/cu13/version.json",
            r#"{"cuda": {"version": "13.0.0"}}"#,
        );
        mk("opt/cu13/targets/x86_64-linux/lib/libcublas.so.13", "x");
        mk("etc/ld.so.conf", "/opt/cu13/targets/x86_64-linux/lib\n");
        // Not toolkits: a bare library directory, and /usr itself.
        mk("data/libs/libcudart.so.12", "x");
        mk("usr/include/cuda_runtime.h", "x");
        let root = Root::new(p);
        let env = Env::from_pairs([
            (
                "LD_LIBRARY_PATH",
                "/apps/cuda/11.1/lib64:/work/envs/tf/lib:/data/libs:/usr/lib",
            ),
            ("PATH", "/opt/nv/cuda-12.4/bin:/usr/bin"),
        ]);
        let mut errors = Vec::new();
        let c = collect(&root, &env, &mut errors);
        let got: Vec<(&str, &str, Option<&str>)> = c
            .toolkits
            .iter()
            .map(|t| (t.path.as_str(), t.source.as_str(), t.version.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/apps/cuda/11.1", "LD_LIBRARY_PATH", Some("11.1.1")),
                ("/opt/cu13", "ld.so.conf", Some("13.0.0")),
                ("/opt/nv/cuda-12.4", "PATH", Some("12.4.1")),
                ("/work/envs/tf", "LD_LIBRARY_PATH", Some("11.2.2")),
            ]
        );
        assert!(c.toolkits[0]
            .libraries
            .contains(&"libcusolver.so.11".to_string()));
        assert!(c.toolkits[1]
            .libraries
            .contains(&"libcublas.so.13".to_string()));
    }

    #[test]
    fn cudnn_and_driver_text() {
        let h = "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 2\n#define CUDNN_VERSION (CUDNN_MAJOR * 1000)\n";
        assert_eq!(parse_cudnn_header(h).as_deref(), Some("8.9.2"));
        assert_eq!(parse_cudnn_header("#define CUDNN_MAJOR 8\n"), None);
        let p = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:00 UTC 2025\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(parse_proc_driver(p).as_deref(), Some("580.65.06"));
        let open =
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build\n";
        assert_eq!(parse_proc_driver(open).as_deref(), Some("535.104.05"));
        assert_eq!(parse_proc_driver("nothing"), None);
    }
}
