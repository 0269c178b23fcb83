//! `cuda-extension`: any other package whose native modules name a CUDA-family library in
//! DT_NEEDED (ctranslate2, bitsandbytes, flash-attn, xformers, vLLM, compiled torch
//! extensions, …) becomes a framework entry with its CUDA major and wants, resolved like the
//! big frameworks' (each DT_NEEDED from its owner, whose RPATH/RUNPATH applies).
//!
//! The package's shared objects come from its `RECORD` (the files pip installed), so nothing
//! is walked; NVIDIA's own library wheels (`nvidia-*`) and files that are themselves
//! CUDA-family libraries are not extensions. The CUDA major is the one of the `libcudart`
//! (else `libcublas`, `libnvrtc`…) it links, else the `-cuNN` / `cudaNN` in its name or
//! `nvidia-*-cuNN` requirements.

use super::{family, needed_of, soname_major};
use crate::probe::record::Records;
use crate::root::Root;
use crate::snapshot::libs::Framework;
use crate::snapshot::python::Package;
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};

/// Most shared objects read per interpreter for extensions.
const MAX_FILES: usize = 3000;

/// The shared objects a distribution installed, from its `RECORD` (machine paths).
fn shared_objects(root: &Root, records: &Records, pkg: &Package) -> Vec<PathBuf> {
    let Some(files) = records.shared_objects(root, pkg) else {
        return Vec::new();
    };
    let site = Path::new(&pkg.location);
    files
        .iter()
        .filter(|f| family(f.rsplit('/').next().unwrap_or(f)).is_none())
        .map(|f| crate::root::lexical_normalize(&site.join(f)))
        .collect()
}

/// The CUDA major from the libraries it links (cudart first).
pub fn major_from_wants(fw: &Framework) -> Option<u64> {
    for f in ["cudart", "cublas", "nvrtc", "cufft", "cusparse", "cupti"] {
        if let Some(m) = fw
            .wants
            .iter()
            .filter(|w| family(&w.soname) == Some(f))
            .find_map(|w| soname_major(&w.soname))
        {
            // cuFFT/cuSPARSE majors are not CUDA's: only cudart, cublas, nvrtc, cupti say it.
            if matches!(f, "cudart" | "cublas" | "nvrtc" | "cupti") {
                return Some(m);
            }
        }
    }
    None
}

/// `-cu12` / `cuda12` / `cu118` in a package name or requirement.
fn major_from_name(s: &str) -> Option<u64> {
    for key in ["-cuda", "-cu", "cuda", "+cu"] {
        for (i, _) in s.match_indices(key) {
            let d: String = s[i + key.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            let m = match d.len() {
                1 | 2 => d.parse().ok(),
                3 => d[..2].parse().ok(),
                _ => None,
            };
            if m.is_some_and(|m| (9..=20).contains(&m)) {
                return m;
            }
        }
    }
    None
}

/// Scan `pkg` for CUDA-linked extensions; `budget` counts files read across the interpreter.
/// A package that ships one variant per CUDA release (bitsandbytes' `libbitsandbytes_cuda118.so`
/// … `_cuda126.so`) loads the one matching the runtime it finds (torch's CUDA): only the
/// variants of `runtime_major` count, and none when it is unknown (the evidence says why).
pub(super) fn scan(
    root: &Root,
    records: &Records,
    pkg: &Package,
    fw: &mut Framework,
    runtime_major: Option<u64>,
    budget: &mut usize,
    errors: &mut Vec<ProbeError>,
) -> bool {
    if pkg.name.starts_with("nvidia-") {
        return false;
    }
    // (object, its CUDA major, its wants)
    let mut objects: Vec<(PathBuf, Option<u64>, Vec<crate::snapshot::libs::Wanted>)> = Vec::new();
    for so in shared_objects(root, records, pkg) {
        if *budget >= MAX_FILES {
            break;
        }
        if !root.is_file(&so) {
            continue;
        }
        *budget += 1;
        let mut one = Framework::default();
        needed_of(root, &so, &mut one, errors);
        if one.uses_pip_nvidia {
            fw.uses_pip_nvidia = true;
        }
        if !one.wants.is_empty() {
            let m = major_from_wants(&one);
            objects.push((so, m, one.wants));
        }
    }
    if objects.is_empty() {
        return false;
    }
    let mut majors: Vec<u64> = objects.iter().filter_map(|o| o.1).collect();
    majors.sort();
    majors.dedup();
    if majors.len() > 1 {
        let list: Vec<String> = majors.iter().map(|m| m.to_string()).collect();
        fw.evidence.push(format!(
            "variants: objects for CUDA {} (one is loaded, by the runtime it finds)",
            list.join(", ")
        ));
        match runtime_major.filter(|m| majors.contains(m)) {
            Some(m) => objects.retain(|o| o.1.is_none_or(|x| x == m)),
            None => objects.clear(),
        }
    }
    for (so, _, wants) in objects {
        fw.entry_points.push(so.to_string_lossy().into_owned());
        fw.wants.extend(wants);
    }
    fw.is_cuda_build = Some(true);
    fw.cuda_major = major_from_wants(fw)
        .or_else(|| (majors.len() == 1).then(|| majors[0]))
        .or_else(|| major_from_name(&pkg.name))
        .or_else(|| pkg.local.as_deref().and_then(major_from_name))
        .or_else(|| {
            fw.nvidia_requirements
                .iter()
                .find_map(|r| major_from_name(r))
        });
    if fw.cuda_version.is_none() {
        fw.cuda_version = fw
            .wants
            .iter()
            .find(|w| family(&w.soname) == Some("cudart"))
            .and_then(|w| w.soname.split_once(".so.").map(|(_, v)| v.to_string()));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majors_from_names() {
        assert_eq!(major_from_name("cupy-cuda12x"), Some(12));
        assert_eq!(major_from_name("nvidia-cublas-cu11==11.10"), Some(11));
        assert_eq!(major_from_name("cu118"), None);
        assert_eq!(major_from_name("+cu118"), Some(11));
        assert_eq!(major_from_name("ctranslate2"), None);
    }
}
