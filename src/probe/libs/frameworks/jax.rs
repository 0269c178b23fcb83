//! JAX CUDA builds: the PJRT plugin (`jax-cuda12-pjrt` / `jax-cuda13-pjrt`:
//! `jax_plugins/xla_cuda<N>/xla_cuda_plugin.so`), the kernels plugin (`jax-cuda<N>-plugin`:
//! `jax_cuda<N>_plugin/*.so`) and old `jaxlib+cuda` wheels, read statically.
//!
//! - **CUDA build**: the major from the package name (`jax-cuda13-pjrt` → 13) or jaxlib's
//!   local label (`+cuda12.cudnn89`).
//! - **Wants and requester**: the plugins carry no CUDA DT_NEEDED; XLA `dlopen`s every CUDA
//!   library from `xla_cuda_plugin.so`, whose RPATH lists `nvidia/cu<N>/lib`,
//!   `nvidia/cudnn/lib`, `nvidia/nvshmem/lib`…
//! - **Its own loader**: `jax_plugins/xla_cuda<N>/__init__.py` `_load_nvidia_libraries()` runs at
//!   backend initialisation: `_load("cu13", ["libcudart.so.13"])` imports the namespace
//!   package `nvidia.cu13` (the first sys.path entry holding `nvidia/cu13`) and loads
//!   `<it>/lib/libcudart.so.13` by path, silently skipping a missing file. The calls are read
//!   from the installed file; a library it loads wins later requests, one it could not load is
//!   `dlopen`ed by XLA by soname from `xla_cuda_plugin.so`.

use super::preload::Spec;
use super::{family, implied_family, read_text, want, Scan};
use crate::root::Root;
use crate::snapshot::libs::Framework;
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};

/// `_load("module", ["libA.so.1", "libB.so.2"])` calls, in order.
pub fn load_calls(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('#') {
            continue;
        }
        let Some(rest) = t.strip_prefix("_load(") else {
            continue;
        };
        let Some((args, _)) = rest.rsplit_once(')') else {
            continue;
        };
        let mut strs = Vec::new();
        let mut cur = String::new();
        let mut inq: Option<char> = None;
        for c in args.chars() {
            match inq {
                Some(q) if c == q => {
                    strs.push(std::mem::take(&mut cur));
                    inq = None;
                }
                Some(_) => cur.push(c),
                None if c == '"' || c == '\'' => inq = Some(c),
                None => {}
            }
        }
        if strs.len() >= 2 {
            let module = strs.remove(0);
            out.push((module, strs));
        }
    }
    out
}

/// The PJRT plugin directory for a CUDA major under `site`.
pub fn pjrt_dir(site: &Path, major: u64) -> PathBuf {
    site.join(format!("jax_plugins/xla_cuda{major}"))
}

/// Fill `fw` for a JAX CUDA package whose module directory is `dir`; returns the preload specs.
pub(super) fn scan(
    root: &Root,
    site: &Path,
    dir: &Path,
    fw: &mut Framework,
    scan: &mut Scan,
    errors: &mut Vec<ProbeError>,
) -> Vec<Spec> {
    if let Some(l) = &fw.local_version {
        if let Some(d) = l.strip_prefix("cuda") {
            fw.cuda_major = d.get(..2).and_then(|x| x.parse().ok());
        }
    }
    let Some(major) = fw.cuda_major else {
        return Vec::new();
    };
    fw.is_cuda_build = Some(true);
    let pjrt = pjrt_dir(site, major);
    let plugin = pjrt.join("xla_cuda_plugin.so");
    if root.is_file(&plugin) {
        scan.dlopen_requester = plugin.clone();
        if !fw
            .entry_points
            .contains(&plugin.to_string_lossy().into_owned())
        {
            fw.entry_points.push(plugin.to_string_lossy().into_owned());
        }
    }
    // Only the PJRT package owns the loader code and the dlopen wants (the kernels plugin
    // and the PJRT plugin would otherwise ask twice).
    if dir != pjrt {
        return Vec::new();
    }
    let init = pjrt.join("__init__.py");
    let Some(text) = read_text(root, &init, errors) else {
        return Vec::new();
    };
    let evidence = format!("{} _load_nvidia_libraries", init.display());
    let implied = implied_family(Some(major), None);
    let mut specs = Vec::new();
    for (module, libs) in load_calls(&text) {
        for lib in libs {
            // The list serves both CUDA majors' wheel layouts: this build asks for the
            // sonames of its own release (and cuDNN, NCCL, NVSHMEM, which it names alone).
            let own = implied.contains(&lib)
                || matches!(family(&lib), Some("cudnn" | "nccl" | "nvshmem_host"));
            if own && !fw.wants.iter().any(|w| w.soname == lib) {
                want(
                    fw,
                    lib.clone(),
                    format!("{evidence}; else dlopen by XLA from {}", plugin.display()),
                    &plugin,
                );
            }
            specs.push(Spec {
                dirs: vec![format!("{}/lib", module_dir(&module))],
                pattern: lib,
                first_package_dir: true,
                evidence: evidence.clone(),
            });
        }
    }
    specs
}

/// `cu13` → `nvidia/cu13`.
fn module_dir(module: &str) -> String {
    format!("nvidia/{}", module.replace('.', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_calls_as_written() {
        let t = "def _load_nvidia_libraries():\n  _load(\"cuda_runtime\", [\"libcudart.so.12\"])\n  _load(\"cu13\", [\"libcublas.so.13\", \"libcublasLt.so.13\"])\n  # _load(\"x\", [\"liby.so\"])\n  ctypes.cdll.LoadLibrary(lib)\n";
        assert_eq!(
            load_calls(t),
            vec![
                (
                    "cuda_runtime".to_string(),
                    vec!["libcudart.so.12".to_string()]
                ),
                (
                    "cu13".to_string(),
                    vec![
                        "libcublas.so.13".to_string(),
                        "libcublasLt.so.13".to_string()
                    ]
                )
            ]
        );
    }
}
