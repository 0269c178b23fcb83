//! PyTorch, 1.x to 2.15, read statically.
//!
//! - **Build facts**: `torch/version.py` (`__version__`, `cuda`: `None` for a CPU build); the
//!   architecture list `torch.cuda.get_arch_list()` returns, compiled into
//!   `torch/lib/libtorch_python.so` (else `libtorch_cuda.so`) as the text `sm_75 sm_80 ...`;
//!   the cuDNN it was built with, from its `nvidia-cudnn-cu*==X.Y...` pin (wheels since 1.13
//!   build against the cuDNN they pin) or a bundled `torch/lib/libcudnn.so.X.Y.Z` file name
//!   (older wheels ship cuDNN inside).
//! - **Sonames and requesters**: the CUDA-family DT_NEEDED of `torch/_C*.so` and
//!   `torch/lib/*.so*` (each with its owner as requester: its RPATH applies); `dlopen`s
//!   (NVRTC, libcuda) come from `libtorch_cuda.so`. Layouts: CUDA libraries inside
//!   `torch/lib` (1.x cu10x/cu11x), pip's `nvidia/<lib>/lib` (cu11x/cu12x since 1.13) or
//!   `nvidia/cu13/lib` (cu13x), each reached through the owners' RPATH.
//! - **torch's own loader** (`torch/__init__.py`, read from the installed file): the
//!   `(folder, glob)` pairs of `_preload_cuda_deps` and when they apply — always once
//!   `libtorch_global_deps.so` has mapped `libcudart` (2.9+: `_preload_cuda_deps(required=False)`
//!   after `"libcudart.so" not in _maps`), only for the explicitly named ones when cudart came
//!   from `nvidia/cuda_runtime/lib` (2.5–2.8), or only when loading `libtorch_global_deps.so`
//!   fails (2.1–2.4). Directories tried under each `sys.path` entry: `nvidia/<folder>/lib`,
//!   `nvidia/cu<major>/lib` when the code names it, `<folder>/lib` when the code names it.

use super::preload::Spec;
use super::{family, file_names, needed_of, py_value, read_text, strings, PyValue, Scan};
use crate::probe::file_memo::FileMemo;
use crate::probe::libs::elf;
use crate::probe::libs::search::{Loader, Object, Requester};
use crate::root::Root;
use crate::snapshot::libs::Framework;
use crate::snapshot::ProbeError;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Most shared objects scanned in `torch/lib`.
const MAX_SCANNED: usize = 400;

/// When torch's preload applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Whenever `libtorch_global_deps.so` mapped libcudart (2.9+).
    CudartMapped,
    /// When the libcudart it mapped lives in `nvidia/cuda_runtime/lib` (2.5–2.8).
    CudartFromPip,
    /// Only when `libtorch_global_deps.so` fails to load (2.1–2.4).
    OnError,
}

/// torch's preload, as its `__init__.py` writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// What it preloads, in order.
    pub specs: Vec<Spec>,
    /// When the preload applies.
    pub mode: Mode,
    /// `torch/lib/libtorch_global_deps.so`.
    pub global_deps: PathBuf,
}

/// The `("folder", "libX.so.*[0-9]")` pairs a torch `__init__.py` names, in order (tuples,
/// dict items and direct calls alike), first occurrence kept.
pub fn preload_pairs(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    // 1.13: `os.path.join(nvidia_path, 'cublas', 'lib', 'libcublas.so.11')`.
    for (i, _) in text.match_indices("os.path.join(nvidia_path,") {
        let args: Vec<&str> = text[i..]
            .split_once('(')
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(a, _)| {
                a.split(',')
                    .map(|x| x.trim().trim_matches(['\'', '"']))
                    .collect()
            })
            .unwrap_or_default();
        if let [_, folder, "lib", name] = args.as_slice() {
            if !out.iter().any(|(_, n)| n == name) {
                out.push((folder.to_string(), name.to_string()));
            }
        }
    }
    let b = text.as_bytes();
    let quoted = |i: usize| -> Option<(String, usize)> {
        let q = *b.get(i)?;
        if q != b'"' && q != b'\'' {
            return None;
        }
        let end = text[i + 1..].find(q as char)? + i + 1;
        Some((text[i + 1..end].to_string(), end + 1))
    };
    let mut i = 0;
    while i < b.len() {
        if let Some((first, after)) = quoted(i) {
            let mut j = after;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < b.len() && (b[j] == b',' || b[j] == b':') {
                j += 1;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                if let Some((second, _)) = quoted(j) {
                    let folder_ok = !first.is_empty()
                        && first != "lib"
                        && first.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    if folder_ok && second.starts_with("lib") && second.contains(".so") {
                        if !out.iter().any(|(_, n)| *n == second) {
                            out.push((first, second));
                        }
                        i = j;
                        continue;
                    }
                }
            }
            i = after;
            continue;
        }
        i += 1;
    }
    out
}

/// The preload plan of a torch `__init__.py` text (`None` when it has no preload).
pub fn plan_from_init(
    text: &str,
    init: &Path,
    cuda_major: Option<u64>,
    dir: &Path,
) -> Option<Plan> {
    if !text.contains("_preload_cuda_deps") {
        return None;
    }
    let mode = if text.contains("_preload_cuda_deps(required=False)")
        || text.contains("\"libcudart.so\" not in _maps")
    {
        Mode::CudartMapped
    } else if text.contains("nvidia/cuda_runtime/lib/libcudart.so") {
        Mode::CudartFromPip
    } else {
        Mode::OnError
    };
    let mut pairs = preload_pairs(text);
    if mode == Mode::CudartFromPip {
        // Only the libraries preloaded by a direct call after the _maps check.
        let tail = text
            .find("nvidia/cuda_runtime/lib/libcudart.so")
            .and_then(|i| text[i..].find('\n').map(|j| &text[i + j..]))
            .unwrap_or("");
        let tail = tail.split("except OSError").next().unwrap_or(tail);
        // The direct calls after the check, read from that part alone: a quote earlier in
        // the file (an apostrophe in a docstring) must not decide what is found here.
        pairs = preload_pairs(tail);
    }
    let cu_dir =
        text.contains("f\"cu{maj_cuda_version}\"") || text.contains("f'cu{maj_cuda_version}'");
    let plain_dir = text.contains("os.path.join(path, lib_folder, \"lib\", lib_name)");
    let evidence = format!("{} _preload_cuda_deps", init.display());
    let specs = pairs
        .into_iter()
        .map(|(folder, pattern)| {
            let mut dirs = vec![format!("nvidia/{folder}/lib")];
            if let (true, Some(m)) = (cu_dir, cuda_major) {
                dirs.push(format!("nvidia/cu{m}/lib"));
            }
            if plain_dir {
                dirs.push(format!("{folder}/lib"));
            }
            Spec {
                dirs,
                pattern,
                first_package_dir: false,
                evidence: evidence.clone(),
            }
        })
        .collect();
    Some(Plan {
        specs,
        mode,
        global_deps: dir.join("lib/libtorch_global_deps.so"),
    })
}

/// Whether the plan runs on this machine: what `libtorch_global_deps.so` maps (its DT_NEEDED
/// resolved from it, loaded by the interpreter) decides.
pub fn plan_applies(plan: &Plan, root: &Root, loader: &Loader, python: &Object) -> bool {
    let Ok(info) = elf::read(root, &plan.global_deps) else {
        // It cannot be loaded at all: the OSError path preloads.
        return plan.mode == Mode::OnError;
    };
    let req = Requester::new(Object::from_elf(&plan.global_deps, &info)).loaded_by(python.clone());
    let mut all_resolve = true;
    let mut cudart: Option<PathBuf> = None;
    for n in &info.needed {
        let r = loader.resolve(n, &req);
        if !r.resolves() {
            all_resolve = false;
        } else if n.starts_with("libcudart.so") {
            cudart = r.path.clone();
        }
    }
    match plan.mode {
        Mode::OnError => !all_resolve,
        Mode::CudartMapped => !all_resolve || cudart.is_some(),
        Mode::CudartFromPip => {
            !all_resolve
                || cudart.is_some_and(|p| {
                    p.to_string_lossy()
                        .contains("nvidia/cuda_runtime/lib/libcudart.so")
                })
        }
    }
}

/// Fill `fw` from a torch package directory `dir`; returns its preload plan.
pub(super) fn scan(
    root: &Root,
    memo: &FileMemo,
    dir: &Path,
    fw: &mut Framework,
    scan: &mut Scan,
    errors: &mut Vec<ProbeError>,
) -> Option<Plan> {
    read_version(root, dir, fw, errors);
    let lib = dir.join("lib");
    let lib_files = file_names(root, &lib);
    let entries = entry_points(root, dir, &lib_files);
    // dlopen from libtorch_cuda (NVRTC, libcuda) or else _C.
    scan.dlopen_requester = entries
        .iter()
        .find(|p| p.ends_with("libtorch_cuda.so"))
        .or_else(|| entries.first())
        .cloned()
        .unwrap_or_else(|| dir.join("_C.so"));
    for e in &entries {
        fw.entry_points.push(e.to_string_lossy().into_owned());
        needed_of(root, e, fw, errors);
    }
    mark_lazy(fw, &loaded_at_import(root, dir, &lib_files));
    if fw.is_cuda_build != Some(false) {
        read_arch_list(root, memo, &lib, fw);
        read_build_cudnn(&lib_files, fw);
    }
    let init = dir.join("__init__.py");
    let major = fw
        .cuda_version
        .as_deref()
        .and_then(|c| c.split('.').next()?.parse().ok());
    read_text(root, &init, errors).and_then(|t| plan_from_init(&t, &init, major, dir))
}

/// The objects `import torch` maps from its own files: `torch/_C*.so`, the
/// `lib/libtorch_global_deps.so` that `_load_global_deps` opens, and what they need in turn
/// (DT_NEEDED) among the files of `torch/lib`. The others torch opens on first use
/// (`libcaffe2_nvrtc.so` for JIT kernels, `libtorch_cuda_linalg.so` for GPU linear algebra).
fn loaded_at_import(root: &Root, dir: &Path, lib_files: &[PathBuf]) -> HashSet<PathBuf> {
    let by_name: HashMap<String, &PathBuf> = lib_files
        .iter()
        .filter_map(|p| Some((p.file_name()?.to_string_lossy().into_owned(), p)))
        .collect();
    let mut todo: Vec<PathBuf> = c_modules(root, dir);
    todo.push(dir.join("lib/libtorch_global_deps.so"));
    let mut seen: HashSet<PathBuf> = HashSet::new();
    while let Some(p) = todo.pop() {
        if seen.len() >= MAX_SCANNED || !seen.insert(p.clone()) {
            continue;
        }
        if let Ok(info) = elf::read(root, &p) {
            todo.extend(
                info.needed
                    .iter()
                    .filter_map(|n| by_name.get(n).map(|q| (*q).clone())),
            );
        }
    }
    seen
}

/// Mark the wants whose requester is one of torch's own objects that the import does not map.
fn mark_lazy(fw: &mut Framework, at_import: &HashSet<PathBuf>) {
    if at_import.is_empty() {
        return;
    }
    for w in &mut fw.wants {
        let Some(req) = w.requester.as_deref() else {
            continue;
        };
        if w.evidence.starts_with("DT_NEEDED") && !at_import.contains(Path::new(req)) {
            w.lazy = true;
        }
    }
}

/// `torch/version.py`: the CUDA it was built for (`None`: a CPU build).
fn read_version(root: &Root, dir: &Path, fw: &mut Framework, errors: &mut Vec<ProbeError>) {
    let vp = dir.join("version.py");
    let Some(text) = read_text(root, &vp, errors) else {
        return;
    };
    if let Some(PyValue::Str(c)) = py_value(&text, "cuda") {
        fw.cuda_version = Some(c);
        fw.is_cuda_build = Some(true);
        fw.evidence
            .push(format!("cuda_version: {} cuda", vp.display()));
    } else if let Some(PyValue::None) = py_value(&text, "cuda") {
        fw.is_cuda_build = Some(false);
    }
}

/// torch's own extension modules, `torch/_C*.so` (what `import torch` opens first).
fn c_modules(root: &Root, dir: &Path) -> Vec<PathBuf> {
    file_names(root, dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy())
                .is_some_and(|n| n.starts_with("_C") && n.ends_with(".so"))
        })
        .collect()
}

/// The native objects whose DT_NEEDED are read: `torch/_C*.so` and the non-CUDA objects of
/// `torch/lib` (`lib_files`), at most [`MAX_SCANNED`].
fn entry_points(root: &Root, dir: &Path, lib_files: &[PathBuf]) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = c_modules(root, dir);
    entries.extend(
        lib_files
            .iter()
            .filter(|p| {
                p.file_name()
                    .map(|n| n.to_string_lossy())
                    .is_some_and(|n| n.contains(".so") && family(&n).is_none())
            })
            .cloned(),
    );
    entries.truncate(MAX_SCANNED);
    entries
}

/// The architecture list, as `torch.cuda.get_arch_list()` reports it, from the text compiled
/// into libtorch_python (else libtorch_cuda).
fn read_arch_list(root: &Root, memo: &FileMemo, lib: &Path, fw: &mut Framework) {
    for f in ["libtorch_python.so", "libtorch_cuda.so"] {
        let p = lib.join(f);
        let read = || strings::find_strings(root, &p, b"sm_", arch_byte, 512);
        let found = memo
            .answer(root, &p, "strings sm_", read)
            .into_iter()
            .filter(|s| is_arch_list(s))
            .max_by_key(|s| s.len());
        if let Some(list) = found {
            fw.compute_capabilities = list.split(' ').map(String::from).collect();
            fw.evidence
                .push(format!("compute_capabilities: {}", p.display()));
            return;
        }
    }
}

/// The cuDNN it was built with: its `nvidia-cudnn-cu*==X.Y...` pin, else a bundled
/// `torch/lib/libcudnn.so.X.Y.Z` (older wheels ship cuDNN inside).
fn read_build_cudnn(lib_files: &[PathBuf], fw: &mut Framework) {
    let pin = fw.nvidia_requirements.iter().find_map(|r| {
        let v = r
            .strip_prefix("nvidia-cudnn-cu")?
            .split_once("==")?
            .1
            .trim();
        Some((r.clone(), v.to_string()))
    });
    if let Some((r, v)) = pin {
        fw.cudnn_version = Some(v.split('.').take(2).collect::<Vec<_>>().join("."));
        fw.evidence.push(format!("cudnn_version: requirement {r}"));
        return;
    }
    let bundled = lib_files.iter().find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("libcudnn.so."))
    });
    let Some(p) = bundled else {
        return;
    };
    let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
    if let Some(v) = n.as_deref().and_then(|n| n.strip_prefix("libcudnn.so.")) {
        if v.contains('.') {
            fw.cudnn_version = Some(v.split('.').take(2).collect::<Vec<_>>().join("."));
            fw.evidence
                .push(format!("cudnn_version: bundled {}", p.display()));
        }
    }
}

fn arch_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b' '
}

/// `sm_75 sm_80 sm_86 sm_90 sm_100 sm_120` (and `compute_90`): two or more arch names.
fn is_arch_list(s: &str) -> bool {
    let parts: Vec<&str> = s.split(' ').collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            let rest = p.strip_prefix("sm_").or_else(|| p.strip_prefix("compute_"));
            rest.is_some_and(|r| {
                let d: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
                !d.is_empty() && r[d.len()..].chars().all(|c| c == 'a' || c == 'f')
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preload_lists_in_every_spelling() {
        let t215 = r#"
    cuda_libs: list[tuple[str, str]] = [
        ("cublas", "libcublasLt.so.*[0-9]"),
        ("cublas", "libcublas.so.*[0-9]"),
        ("cuda_nvrtc", "libnvrtc-builtins.so.*[0-9]"),
    ]
    _preload_cuda_lib("nvtx", "libnvToolsExt.so.*[0-9]", required=False)
            if "libcudart.so" not in _maps:
            _preload_cuda_deps(required=False)
        nvidia_lib_paths += glob.glob(
            os.path.join(path, "nvidia", f"cu{maj_cuda_version}", "lib", lib_name)
        )
"#;
        let p =
            plan_from_init(t215, Path::new("/t/__init__.py"), Some(13), Path::new("/t")).unwrap();
        assert_eq!(p.mode, Mode::CudartMapped);
        let names: Vec<&str> = p.specs.iter().map(|s| s.pattern.as_str()).collect();
        assert_eq!(
            names,
            [
                "libcublasLt.so.*[0-9]",
                "libcublas.so.*[0-9]",
                "libnvrtc-builtins.so.*[0-9]",
                "libnvToolsExt.so.*[0-9]"
            ]
        );
        assert_eq!(p.specs[0].dirs, ["nvidia/cublas/lib", "nvidia/cu13/lib"]);
        let t21 = "cuda_libs: Dict[str, str] = {\n 'cublas': 'libcublas.so.*[0-9]',\n 'cudnn': 'libcudnn.so.*[0-9]',\n}\n_preload_cuda_deps(lib_folder, lib_name)\n";
        let p =
            plan_from_init(t21, Path::new("/t/__init__.py"), Some(12), Path::new("/t")).unwrap();
        assert_eq!(p.mode, Mode::OnError);
        assert_eq!(p.specs.len(), 2);
        assert_eq!(p.specs[1].dirs, ["nvidia/cudnn/lib"]);
        // torch 2.6's text: an apostrophe in a docstring before the check must not hide the
        // direct calls after it.
        let t25 = "\"\"\"it doesn't matter\"\"\"\ncuda_libs = {'cublas': 'libcublas.so.*[0-9]', 'nvjitlink': 'libnvJitLink.so.*[0-9]'}\n_preload_cuda_deps(a, b)\n if \"nvidia/cuda_runtime/lib/libcudart.so\" not in _maps:\n  return\n _preload_cuda_deps(\"nvjitlink\", \"libnvJitLink.so.*[0-9]\")\n except OSError as err:\n";
        let p =
            plan_from_init(t25, Path::new("/t/__init__.py"), Some(12), Path::new("/t")).unwrap();
        assert_eq!(p.mode, Mode::CudartFromPip);
        assert_eq!(p.specs.len(), 1);
        assert!(plan_from_init("import os\n", Path::new("/x"), None, Path::new("/t")).is_none());
        let t113 = "def _preload_cuda_deps():\n        cublas_path = os.path.join(nvidia_path, 'cublas', 'lib', 'libcublas.so.11')\n        cudnn_path = os.path.join(nvidia_path, 'cudnn', 'lib', 'libcudnn.so.8')\n";
        let p =
            plan_from_init(t113, Path::new("/t/__init__.py"), Some(11), Path::new("/t")).unwrap();
        assert_eq!(p.mode, Mode::OnError);
        let names: Vec<(&str, &str)> = p
            .specs
            .iter()
            .map(|s| (s.dirs[0].as_str(), s.pattern.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("nvidia/cublas/lib", "libcublas.so.11"),
                ("nvidia/cudnn/lib", "libcudnn.so.8")
            ]
        );
        assert!(is_arch_list("sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"));
        assert!(is_arch_list("sm_50 sm_90a compute_90"));
        assert!(!is_arch_list("sm_80"));
        assert!(!is_arch_list("sm_80 smx"));
    }
}
