//! What a compiled distribution was built against, read statically.
//!
//! - NumPy's C API ([`numpy_abi`]): `import_array()` is a macro from NumPy's headers that
//!   imports NumPy's core module by name, so the name is a string in every module that uses the
//!   C API. NumPy 2 headers (and pybind11 >= 2.12) name `numpy._core…` (falling back to
//!   `numpy.core…` at run time); NumPy 1 headers (and older pybind11) name only `numpy.core…`,
//!   which NumPy 2 answers with "A module that was compiled using NumPy 1.x cannot be run in
//!   NumPy 2". Verified on real wheels of both eras (`tests/extensions_probe.rs`).
//! - torch ([`built_for_torch`]): an exact `Requires-Dist: torch==X` pin, or the local version
//!   label the PyG/DGL wheel indexes use (`+pt23cu121`, `+torch2.4`).
//! - CUDA ([`cuda_major`]): the major of the CUDA runtime, cuBLAS, NVRTC or CUPTI soname a
//!   module links (`libcudart.so.12`).
//! - A build record ([`recorded_build`]): DeepSpeed's setup.py writes
//!   `deepspeed/git_version_info_installed.py` with the ops it pre-built (`installed_ops`) and
//!   the torch and CUDA they were compiled with (`torch_info`); its op loader refuses a pre-built
//!   op when the running torch's or CUDA's major.minor differs.

use crate::root::Root;
use crate::snapshot::python::Package;
use std::io::Read;
use std::path::Path;

/// The largest module scanned for NumPy's marker (bigger ones are libraries, not bindings).
pub const MAX_SCAN: u64 = 32 * 1024 * 1024;

const NEW: &[u8] = b"numpy._core";
const OLD: &[&[u8]] = &[b"numpy.core._multiarray_umath", b"numpy.core.multiarray"];

/// `Some(2)` when the module at `path` was compiled with NumPy 2 headers, `Some(1)` with NumPy 1
/// headers, `None` when it does not use NumPy's C API (or cannot be read). Reads at most
/// [`MAX_SCAN`] bytes in 1 MiB blocks.
pub fn numpy_abi(root: &Root, path: &Path) -> Option<u32> {
    let mut f = root.open(path).ok()?;
    if f.metadata().ok()?.len() > MAX_SCAN {
        return None;
    }
    let (mut new, mut old) = (false, false);
    let keep = 64;
    let mut buf = vec![0u8; (1 << 20) + keep];
    let mut have = 0usize;
    loop {
        let n = f.read(&mut buf[have..]).ok()?;
        if n == 0 {
            break;
        }
        let block = &buf[..have + n];
        new |= memchr::memmem::find(block, NEW).is_some();
        old |= OLD.iter().any(|m| memchr::memmem::find(block, m).is_some());
        // Keep the tail so a marker split across two reads is still seen.
        let tail = block.len().saturating_sub(keep);
        buf.copy_within(tail..have + n, 0);
        have = have + n - tail;
    }
    if new {
        Some(2)
    } else if old {
        Some(1)
    } else {
        None
    }
}

/// The torch release a distribution was built for, when its metadata says.
pub fn built_for_torch(pkg: &Package) -> Option<String> {
    for r in &pkg.requires {
        let (req, marker) = r.split_once(';').unwrap_or((r, ""));
        if marker.contains("extra") {
            continue;
        }
        let req = req.trim();
        let name_end = req
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .unwrap_or(req.len());
        if !req[..name_end].eq_ignore_ascii_case("torch") {
            continue;
        }
        let spec = req[name_end..]
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')');
        if spec.contains(',') {
            continue;
        }
        if let Some(v) = spec.trim().strip_prefix("==") {
            let v = v.trim().trim_end_matches(".*");
            if !v.is_empty() {
                return Some(v.to_string());
            }
        }
    }
    let local = pkg.local.as_deref()?;
    from_label(local)
}

/// What a distribution's own build record says its pre-built native code was compiled with.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// torch major.minor (`2.2`).
    pub torch: Option<String>,
    /// CUDA major.minor (`12.1`); none for a CPU/ROCm build (`0.0`).
    pub cuda: Option<String>,
}

/// Longest build record read.
const MAX_RECORD_FILE: u64 = 256 * 1024;

/// DeepSpeed's `git_version_info_installed.py` when some op was pre-built (an
/// `installed_ops` entry `True`); None otherwise (ops built on first use record nothing that
/// is checked).
pub fn recorded_build(root: &Root, pkg: &Package) -> Option<Recorded> {
    if pkg.name != "deepspeed" {
        return None;
    }
    let file = Path::new(&pkg.location).join("deepspeed/git_version_info_installed.py");
    let bytes = root.read_limited(&file, MAX_RECORD_FILE).ok()?;
    parse_deepspeed_record(&String::from_utf8_lossy(&bytes))
}

/// The `installed_ops=` and `torch_info=` lines of DeepSpeed's record (Python dict reprs).
fn parse_deepspeed_record(text: &str) -> Option<Recorded> {
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key)?.trim_start().strip_prefix('='))
    };
    let prebuilt = line("installed_ops")?.contains(": True");
    if !prebuilt {
        return None;
    }
    let info = line("torch_info")?;
    let value = |key: &str| {
        let at = info.find(&format!("'{key}':"))? + key.len() + 3;
        let v = info[at..]
            .trim_start()
            .strip_prefix('\'')?
            .split('\'')
            .next()?;
        let numeric = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        (numeric && v != "0.0").then(|| v.to_string())
    };
    Some(Recorded {
        torch: value("version"),
        cuda: value("cuda_version"),
    })
}

/// `pt23cu121` → `2.3`, `pt113` → `1.13`, `torch2.4` → `2.4`.
fn from_label(local: &str) -> Option<String> {
    let lower = local.to_ascii_lowercase();
    for part in lower
        .split(['.', '_', '-'])
        .chain(std::iter::once(lower.as_str()))
    {
        if let Some(rest) = part.strip_prefix("torch") {
            let v: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            if v.contains('.') {
                return Some(v.trim_end_matches('.').to_string());
            }
        }
        if let Some(rest) = part.strip_prefix("pt") {
            let d: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            if d.len() >= 2 {
                return Some(format!("{}.{}", &d[..1], &d[1..]));
            }
        }
    }
    None
}

/// The CUDA major a soname says, for the CUDA runtime and the libraries versioned with it.
pub fn cuda_major(soname: &str) -> Option<u64> {
    let stem = soname.strip_prefix("lib")?.split(".so").next()?;
    if !matches!(stem, "cudart" | "cublas" | "cublasLt" | "nvrtc" | "cupti") {
        return None;
    }
    crate::probe::libs::frameworks::soname_major(soname)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepspeed_record() {
        // The lines DeepSpeed's setup.py writes (`fd.write(f"installed_ops={install_ops}\n")`).
        let text = "version='0.14.0+ce78a632'\ngit_hash='ce78a632'\ngit_branch='master'\n\
                    installed_ops={'async_io': False, 'fused_adam': True, 'cpu_adam': True}\n\
                    accelerator_name='cuda'\n\
                    torch_info={'version': '2.2', 'bf16_support': True, 'cuda_version': '12.1', 'nccl_version': '2.19', 'hip_version': '0.0'}\n";
        assert_eq!(
            parse_deepspeed_record(text),
            Some(Recorded {
                torch: Some("2.2".into()),
                cuda: Some("12.1".into())
            })
        );
        // JIT mode: nothing pre-built, nothing checked.
        let jit = text
            .replace("True}", "False}")
            .replace("'fused_adam': True", "'fused_adam': False");
        assert_eq!(parse_deepspeed_record(&jit), None);
        // A CPU build records CUDA 0.0.
        let cpu = text.replace("'12.1'", "'0.0'");
        assert_eq!(parse_deepspeed_record(&cpu).unwrap().cuda, None);
        assert_eq!(parse_deepspeed_record("garbage"), None);
    }

    fn pkg(requires: &[&str], local: Option<&str>) -> Package {
        Package {
            name: "x".into(),
            version: "1".into(),
            local: local.map(str::to_string),
            requires: requires.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn torch_from_pins_and_labels() {
        assert_eq!(
            built_for_torch(&pkg(&["torch==2.4.0", "numpy"], None)).as_deref(),
            Some("2.4.0")
        );
        assert_eq!(
            built_for_torch(&pkg(&["torch (==2.1.2)"], None)).as_deref(),
            Some("2.1.2")
        );
        assert_eq!(built_for_torch(&pkg(&["torch>=2.1"], None)), None);
        assert_eq!(
            built_for_torch(&pkg(&["torch==2.5.1; extra == \"gpu\""], None)),
            None
        );
        assert_eq!(
            built_for_torch(&pkg(&[], Some("pt23cu121"))).as_deref(),
            Some("2.3")
        );
        assert_eq!(
            built_for_torch(&pkg(&[], Some("pt113cu117"))).as_deref(),
            Some("1.13")
        );
        assert_eq!(
            built_for_torch(&pkg(&[], Some("torch2.4.cu121"))).as_deref(),
            Some("2.4")
        );
        assert_eq!(built_for_torch(&pkg(&[], Some("cu121"))), None);
    }

    #[test]
    fn cuda_majors_from_sonames() {
        assert_eq!(cuda_major("libcudart.so.12"), Some(12));
        assert_eq!(cuda_major("libcublasLt.so.11"), Some(11));
        assert_eq!(cuda_major("libcufft.so.11"), None);
        assert_eq!(cuda_major("libc10.so"), None);
    }
}
