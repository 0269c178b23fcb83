//! TensorFlow, every era from 1.13 to 2.21, read statically.
//!
//! - **Where**: `tensorflow/`, or `tensorflow_core/` for 1.15, 2.0 and 2.1 (whose `tensorflow/`
//!   is a thin alias package); the caller picks the first that exists.
//! - **Build facts**: `python/platform/build_info.py` (`cuda_version`, `cudnn_version`,
//!   `cuda_compute_capabilities`, `is_cuda_build`; 1.x–2.3 spell them `cuda_version_number`,
//!   `cudnn_version_number`; a bare `'10'` there means CUDA 10.0) and
//!   `include/external/local_config_cuda/cuda/cuda/cuda_config.h`, whose `TF_*_VERSION` macros
//!   are the versions TF's `dso_loader` puts in each soname.
//! - **Sonames**: from 2.4 on the header has one macro per library (`TF_CUSOLVER_VERSION` …);
//!   before that only `TF_CUDA_VERSION` (every library `.so.<TF_CUDA_VERSION>`, e.g.
//!   `libcudart.so.10.0` for 1.15) and, from CUDA 10.1 builds on, `TF_CUDA_LIB_VERSION` for the
//!   math libraries (`libcublas.so.10`). CUPTI is `.so.<TF_CUDA_VERSION>` before CUDA 12 and
//!   `.so.<cudart>` from 12 on. Without the header, cudart/cupti/cudnn follow from build_info.
//! - **Which object asks**: the `dlopen` calls are made by the object that *defines*
//!   `DsoLoader::Get<Lib>DsoHandle` (`tsl::internal`, `stream_executor::internal`), read from
//!   the dynamic symbol tables of `libtensorflow_framework.so.*` and
//!   `_pywrap_tensorflow_internal.so`: glibc applies that object's RUNPATH, nobody else's. The
//!   same symbols say which libraries this build can load at all (2.21 has no cuRAND loader,
//!   so `TF_CURAND_VERSION` in its header asks for nothing). When no loader symbol is readable
//!   every library of the header is taken as wanted by `libtensorflow_framework`. NCCL and
//!   NVSHMEM, which it loads only for collectives, are not counted as wanted.

use super::{c_define, family, file_names, needed_of, py_value, read_text, want, PyValue, Scan};
use crate::probe::libs::elf;
use crate::root::Root;
use crate::snapshot::libs::Framework;
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};

/// `DsoLoader::Get<Name>DsoHandle` names → the CUDA-family stem they open.
pub const LOADERS: &[(&str, &str)] = &[
    ("CudaDriver", "cuda"),
    ("CudaRuntime", "cudart"),
    ("Cublas", "cublas"),
    ("CublasLt", "cublasLt"),
    ("Cufft", "cufft"),
    ("Curand", "curand"),
    ("Cusolver", "cusolver"),
    ("Cusparse", "cusparse"),
    ("Cudnn", "cudnn"),
    ("Cupti", "cupti"),
    ("Nccl", "nccl"),
    ("Nvml", "nvidia-ml"),
    ("Nvshmem", "nvshmem_host"),
    ("NvInfer", "nvinfer"),
];

/// The loader names (`Cusolver`, `CudaRuntime`) a symbol table defines, from mangled names
/// such as `_ZN3tsl8internal9DsoLoader20GetCusolverDsoHandleEv` (`15CachedDsoLoader`, whose
/// wrappers call these, does not match).
pub fn dso_loader_names<'a>(symbols: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in symbols {
        let Some(i) = s.find("9DsoLoader") else {
            continue;
        };
        let rest = &s[i + "9DsoLoader".len()..];
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        let Some(name) = rest
            .strip_prefix("Get")
            .and_then(|r| r.split_once("DsoHandleE"))
            .map(|(n, _)| n)
        else {
            continue;
        };
        if !name.is_empty() && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Fill `fw` from a TensorFlow package directory `dir`.
pub(super) fn scan(
    root: &Root,
    dir: &Path,
    fw: &mut Framework,
    scan: &mut Scan,
    errors: &mut Vec<ProbeError>,
) {
    let entries = entry_points(root, dir, fw, errors);
    let (requester, loaders) = dso_loader_object(root, &entries, errors);
    scan.dlopen_requester =
        requester.unwrap_or_else(|| dir.join("python/_pywrap_tensorflow_internal.so"));
    let req = scan.dlopen_requester.clone();
    let can_load = |stem: &str| {
        loaders.is_empty()
            || LOADERS
                .iter()
                .any(|(n, s)| *s == stem && loaders.iter().any(|l| l == n))
    };
    let bi_path = dir.join("python/platform/build_info.py");
    let tensorrt = read_build_info(root, &bi_path, fw, errors);
    let h_path = dir.join("include/external/local_config_cuda/cuda/cuda/cuda_config.h");
    let header = read_text(root, &h_path, errors);
    if let Some(h) = &header {
        let hp = h_path.to_string_lossy().into_owned();
        wants_from_header(h, &hp, fw, &req, &can_load, tensorrt || loaders.is_empty());
    } else if let Some(cuda) = fw
        .cuda_version
        .clone()
        .filter(|_| fw.is_cuda_build != Some(false))
    {
        wants_without_header(&cuda, &bi_path, fw, &req);
    }
    if fw.is_cuda_build != Some(false)
        && (header.is_some() || fw.cuda_version.is_some())
        && can_load("cuda")
    {
        want(
            fw,
            "libcuda.so.1".into(),
            "TF dso_loader: libcuda is always libcuda.so.1".into(),
            &req,
        );
    }
    // Keep only CUDA-family wants (a header may name something else in a future release).
    fw.wants.retain(|w| family(&w.soname).is_some());
}

/// The native entry points (`libtensorflow_framework.so*` first, then
/// `_pywrap_tensorflow_internal*`), with what each links in recorded as wants.
fn entry_points(
    root: &Root,
    dir: &Path,
    fw: &mut Framework,
    errors: &mut Vec<ProbeError>,
) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = Vec::new();
    for d in [dir.to_path_buf(), dir.join("python")] {
        for p in file_names(root, &d) {
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if n.starts_with("libtensorflow_framework.so")
                || n.starts_with("_pywrap_tensorflow_internal")
            {
                entries.push(p);
            }
        }
    }
    entries.sort_by_key(|p| !p.to_string_lossy().contains("libtensorflow_framework"));
    for e in &entries {
        fw.entry_points.push(e.to_string_lossy().into_owned());
        needed_of(root, e, fw, errors);
    }
    entries
}

/// The object that defines the DsoLoader (it does the dlopen calls), and the loader functions
/// it has; the first entry point when none defines one.
fn dso_loader_object(
    root: &Root,
    entries: &[PathBuf],
    errors: &mut Vec<ProbeError>,
) -> (Option<PathBuf>, Vec<String>) {
    for e in entries {
        match elf::read_with_symbols(root, e) {
            Ok((_, syms)) => {
                let names = dso_loader_names(syms.exported.iter().map(|s| s.name.as_str()));
                if !names.is_empty() {
                    return (Some(e.clone()), names);
                }
            }
            Err(err) => errors.push(ProbeError::at(super::PROBE, err.path(), err.to_string())),
        }
    }
    (entries.first().cloned(), Vec::new())
}

/// `python/platform/build_info.py`: CUDA, cuDNN, CUDA build, compute capabilities; returns
/// whether it is a TensorRT build.
fn read_build_info(
    root: &Root,
    bi_path: &Path,
    fw: &mut Framework,
    errors: &mut Vec<ProbeError>,
) -> bool {
    let Some(bi) = read_text(root, bi_path, errors) else {
        return false;
    };
    let s = |k: &str| match py_value(&bi, k) {
        Some(PyValue::Str(v)) => Some(v),
        _ => None,
    };
    fw.cuda_version = s("cuda_version")
        .or_else(|| s("cuda_version_number"))
        .map(|v| normalize_cuda(&v));
    fw.cudnn_version = s("cudnn_version").or_else(|| s("cudnn_version_number"));
    if let Some(PyValue::Bool(b)) = py_value(&bi, "is_cuda_build") {
        fw.is_cuda_build = Some(b);
    }
    if let Some(PyValue::List(l)) = py_value(&bi, "cuda_compute_capabilities") {
        fw.compute_capabilities = l;
    }
    matches!(
        py_value(&bi, "is_tensorrt_build"),
        Some(PyValue::Bool(true))
    )
}

/// `60, 70, 80` (2.x) or `CudaVersion("3.5"), CudaVersion("3.7")` (1.x–2.3) as capabilities.
fn capabilities(cc: &str) -> Vec<String> {
    cc.split(',')
        .map(|c| {
            let c = c.trim();
            let inner = c
                .strip_prefix("CudaVersion(")
                .map(|r| r.trim_end_matches(')').trim_matches('"'));
            match inner {
                Some(v) => v.to_string(),
                None if c.len() >= 2 && c.chars().all(|x| x.is_ascii_digit()) => {
                    format!("sm_{c}")
                }
                None => c.to_string(),
            }
        })
        .filter(|c| !c.is_empty())
        .collect()
}

/// The sonames `cuda_config.h` (text `h`, at `hp`) makes the DsoLoader ask for, each only when
/// the build has its loader (`can_load`); TensorRT's when `tensorrt`.
fn wants_from_header(
    h: &str,
    hp: &str,
    fw: &mut Framework,
    req: &Path,
    can_load: &dyn Fn(&str) -> bool,
    tensorrt: bool,
) {
    let d = |n: &str| c_define(h, n).filter(|v| !v.is_empty());
    if fw.cuda_version.is_none() {
        fw.cuda_version = d("TF_CUDA_VERSION").map(|v| normalize_cuda(&v));
    }
    if fw.cudnn_version.is_none() {
        fw.cudnn_version = d("TF_CUDNN_VERSION");
    }
    if fw.compute_capabilities.is_empty() {
        if let Some(cc) = d("TF_CUDA_COMPUTE_CAPABILITIES").or_else(|| d("TF_CUDA_CAPABILITIES")) {
            fw.compute_capabilities = capabilities(&cc);
        }
    }
    let cuda = d("TF_CUDA_VERSION");
    let major: u64 = cuda
        .as_deref()
        .and_then(|c| c.split('.').next()?.parse().ok())
        .unwrap_or(0);
    // Before 2.4: one version for all (`TF_CUDA_VERSION`), or TF_CUDA_LIB_VERSION for the
    // math libraries of CUDA >= 10.1 builds.
    let lib_default = d("TF_CUDA_LIB_VERSION")
        .map(|v| (v, "TF_CUDA_LIB_VERSION"))
        .or_else(|| cuda.clone().map(|v| (v, "TF_CUDA_VERSION")));
    let cudart = d("TF_CUDART_VERSION")
        .map(|v| (v, "TF_CUDART_VERSION"))
        .or_else(|| cuda.clone().map(|v| (v, "TF_CUDA_VERSION")));
    let lib = |mac: &'static str| d(mac).map(|v| (v, mac)).or_else(|| lib_default.clone());
    let cublas = lib("TF_CUBLAS_VERSION");
    for (stem, v) in [
        ("cudart", cudart.clone()),
        ("cublas", cublas.clone()),
        ("cublasLt", cublas.clone()),
        ("cusolver", lib("TF_CUSOLVER_VERSION")),
        ("curand", lib("TF_CURAND_VERSION")),
        ("cufft", lib("TF_CUFFT_VERSION")),
        ("cusparse", lib("TF_CUSPARSE_VERSION")),
        (
            "cudnn",
            d("TF_CUDNN_VERSION").map(|v| (v, "TF_CUDNN_VERSION")),
        ),
        (
            "nvinfer",
            d("TF_TENSORRT_VERSION")
                .filter(|_| tensorrt)
                .map(|v| (v, "TF_TENSORRT_VERSION")),
        ),
    ] {
        // cuBLASLt exists from CUDA 10.1 on.
        if stem == "cublasLt"
            && fw
                .cuda_version
                .as_deref()
                .is_some_and(|c| c.starts_with("10.0") || c.starts_with("9."))
        {
            continue;
        }
        if !can_load(stem) {
            continue;
        }
        if let Some((v, mac)) = v {
            want(fw, format!("lib{stem}.so.{v}"), format!("{hp} {mac}"), req);
        }
    }
    if let Some(cuda) = cuda.filter(|_| can_load("cupti")) {
        let (v, why) = match (d("TF_CUPTI_VERSION"), &cudart, major >= 12) {
            (Some(c), _, _) => (c, "TF_CUPTI_VERSION"),
            (None, Some((c, _)), true) => (c.clone(), "TF_CUDART_VERSION (CUDA >= 12)"),
            _ => (cuda.clone(), "TF_CUDA_VERSION"),
        };
        want(fw, format!("libcupti.so.{v}"), format!("{hp} {why}"), req);
    }
}

/// No header: cudart and cupti follow from the CUDA version by cuda_configure.bzl's rule, cuDNN
/// from build_info's major.
fn wants_without_header(cuda: &str, bi_path: &Path, fw: &mut Framework, req: &Path) {
    let ev = format!(
        "{} cuda_version (derived: cuda_configure.bzl)",
        bi_path.display()
    );
    let parts: Vec<u64> = cuda.split('.').filter_map(|p| p.parse().ok()).collect();
    let (ma, mi) = (
        parts.first().copied().unwrap_or(0),
        parts.get(1).copied().unwrap_or(0),
    );
    let cudart = match ma {
        0 => None,
        11 => Some("11.0".to_string()),
        m if m >= 12 => Some(m.to_string()),
        _ => Some(format!("{ma}.{mi}")),
    };
    if let Some(c) = &cudart {
        want(fw, format!("libcudart.so.{c}"), ev.clone(), req);
        let cupti = if ma >= 12 {
            c.clone()
        } else {
            format!("{ma}.{mi}")
        };
        want(fw, format!("libcupti.so.{cupti}"), ev.clone(), req);
    }
    if let Some(cudnn) = fw.cudnn_version.clone() {
        if let Some(m) = cudnn.split('.').next().filter(|m| !m.is_empty()) {
            want(
                fw,
                format!("libcudnn.so.{m}"),
                format!("{} cudnn_version", bi_path.display()),
                req,
            );
        }
    }
}

/// `'10'` in an old build_info means CUDA 10.0 (TF 1.x / 2.0 wrote the major alone).
pub fn normalize_cuda(v: &str) -> String {
    let v = v.trim();
    if !v.contains('.') && v.parse::<u64>().is_ok_and(|m| m <= 10) {
        format!("{v}.0")
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loader_names_from_mangled_symbols() {
        let syms = [
            "_ZN3tsl8internal9DsoLoader20GetCusolverDsoHandleEv",
            "_ZN3tsl8internal15CachedDsoLoader20GetCusolverDsoHandleEv",
            "_ZN15stream_executor8internal9DsoLoader23GetCudaRuntimeDsoHandleEv",
            "_ZN3tsl8internal9DsoLoader22TryDlopenCUDALibrariesEv",
            "_ZN3tsl8internal9DsoLoader20GetCusolverDsoHandleEv",
        ];
        assert_eq!(
            dso_loader_names(syms.iter().copied()),
            vec!["Cusolver".to_string(), "CudaRuntime".to_string()]
        );
        assert_eq!(normalize_cuda("10"), "10.0");
        assert_eq!(normalize_cuda("12"), "12");
        assert_eq!(normalize_cuda("11.2"), "11.2");
    }
}
