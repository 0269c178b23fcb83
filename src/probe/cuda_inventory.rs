//! `cuda.inventory`: every CUDA-family library file a job here could load, wherever it comes
//! from, with its version read statically (the file names, and for a pip wheel the owning
//! distribution from its dist-info `RECORD`). Nothing is loaded.
//!
//! Directories, each labelled with how a job reaches it (`found_via`):
//! - `ld-library-path`: every `LD_LIBRARY_PATH` directory;
//! - `ld.so.conf`: the directories `/etc/ld.so.conf` names (includes followed);
//! - `default-dirs`: the loader's trusted directories (`/lib`, `/usr/lib`, multiarch);
//! - `toolkit:<path>`: each toolkit's `lib64`, `lib`, `targets/*/lib`, `extras/CUPTI/lib64`;
//! - `pip-wheel`: the files an `nvidia-*` distribution's `RECORD` lists, per interpreter.
//!
//! One entry per real file per directory: `libcudart.so.12 -> libcudart.so.12.4.127` is one
//! entry with both names.

use crate::probe::libs::frameworks::family;
use crate::probe::libs::links::name_version;
use crate::root::{Env, Root};
use crate::snapshot::cuda::{CudaLibraryFile, Toolkit};
use crate::snapshot::Python;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The inventory of the machine (unsorted; `Cuda::normalize` sorts it).
pub fn collect(
    root: &Root,
    env: &Env,
    toolkits: &[Toolkit],
    conf_dirs: &[PathBuf],
    default_dirs: &[PathBuf],
    pythons: &[Python],
) -> Vec<CudaLibraryFile> {
    let mut dirs: Vec<(PathBuf, String)> = Vec::new();
    for d in env
        .get("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split([':', ';'])
        .filter(|d| d.starts_with('/'))
    {
        dirs.push((PathBuf::from(d), "ld-library-path".into()));
    }
    for d in conf_dirs {
        dirs.push((d.clone(), "ld.so.conf".into()));
    }
    for d in default_dirs {
        dirs.push((d.clone(), "default-dirs".into()));
    }
    for t in toolkits {
        let base = Path::new(&t.path);
        let mut lib_dirs = vec![
            base.join("lib64"),
            base.join("lib"),
            base.join("extras/CUPTI/lib64"),
        ];
        for target in root.read_dir(&base.join("targets")).unwrap_or_default() {
            lib_dirs.push(target.join("lib"));
        }
        for d in lib_dirs {
            dirs.push((d, format!("toolkit:{}", t.path)));
        }
    }
    // (directory, real file) → entry; a directory named twice (a toolkit's lib64 also on
    // LD_LIBRARY_PATH) merges its labels.
    let mut by_file: BTreeMap<(PathBuf, PathBuf), CudaLibraryFile> = BTreeMap::new();
    let mut seen_dirs: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    for (dir, via) in dirs {
        let Ok(real_dir) = root.canonicalize(&dir) else {
            continue;
        };
        if let Some(first) = seen_dirs.get(&real_dir) {
            for e in by_file.values_mut() {
                if Path::new(&e.path).parent() == Some(first.as_path()) && e.wheel.is_none() {
                    e.found_via.push(via.clone());
                }
            }
            continue;
        }
        seen_dirs.insert(real_dir, dir.clone());
        for f in root.read_dir(&dir).unwrap_or_default() {
            add_file(root, &dir, &f, &via, None, &mut by_file);
        }
    }
    for py in pythons {
        for p in py.packages.iter().filter(|p| p.name.starts_with("nvidia-")) {
            let record = Path::new(&p.metadata).join("RECORD");
            let Ok(text) = root.read_to_string_lossy(&record) else {
                continue;
            };
            let owner = (format!("{} {}", p.name, p.version), py.path.clone());
            for line in text.lines() {
                let rel = line.split(',').next().unwrap_or_default();
                let name = rel.rsplit('/').next().unwrap_or_default();
                if !rel.contains("/lib/") || family(name).is_none() || !name.contains(".so") {
                    continue;
                }
                let file = Path::new(&p.location).join(rel);
                let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
                add_file(root, &dir, &file, "pip-wheel", Some(&owner), &mut by_file);
            }
        }
    }
    by_file.into_values().collect()
}

/// Record `file` (in `dir`) when it is a CUDA-family library that exists.
fn add_file(
    root: &Root,
    dir: &Path,
    file: &Path,
    via: &str,
    owner: Option<&(String, String)>,
    out: &mut BTreeMap<(PathBuf, PathBuf), CudaLibraryFile>,
) {
    let Some(name) = file.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let Some(fam) = family(&name) else {
        return;
    };
    if !name.contains(".so") {
        return;
    }
    let Ok(real) = root.canonicalize(file) else {
        return; // a dangling link: the loader skips it too
    };
    if !root.is_file(&real) {
        return;
    }
    let key = (dir.to_path_buf(), real.clone());
    let e = out.entry(key).or_insert_with(|| CudaLibraryFile {
        path: String::new(),
        family: fam.to_string(),
        python: owner.map(|o| o.1.clone()),
        wheel: owner.map(|o| o.0.clone()),
        ..Default::default()
    });
    e.names.push(name.clone());
    e.found_via.push(via.to_string());
    let real_name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_dir = real.parent() == Some(dir)
        || root
            .canonicalize(dir)
            .is_ok_and(|d| real.parent() == Some(d.as_path()));
    e.path = if in_dir {
        dir.join(&real_name).to_string_lossy().into_owned()
    } else if e.path.is_empty() {
        file.to_string_lossy().into_owned()
    } else {
        e.path.clone()
    };
    e.realpath = (!in_dir).then(|| real.to_string_lossy().into_owned());
    let best = [
        name_version(&real_name),
        name_version(&name),
        e.version.clone(),
    ]
    .into_iter()
    .flatten()
    .max_by_key(|v| v.split('.').count());
    e.version = best;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::python::Package;

    #[test]
    fn toolkit_loader_and_wheel_files_with_versions() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        let w = |rel: &str| {
            let f = p.join(rel.trim_start_matches('/'));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, b"\x7fELF").unwrap();
        };
        let link = |target: &str, rel: &str| {
            std::os::unix::fs::symlink(target, p.join(rel.trim_start_matches('/'))).unwrap();
        };
        w("/apps/cuda/11.1/lib64/libcudart.so.11.1.74");
        link(
            "libcudart.so.11.1.74",
            "/apps/cuda/11.1/lib64/libcudart.so.11.0",
        );
        w("/apps/cuda/11.1/lib64/libfoo.so.1");
        w("/apps/cuda/11.1/extras/CUPTI/lib64/libcupti.so.11.1");
        link(
            "libcupti.so.11.1",
            "/apps/cuda/11.1/extras/CUPTI/lib64/libcupti.so",
        );
        link("gone.so", "/apps/cuda/11.1/lib64/libcublas.so.11");
        let site = "/v/lib/python3.11/site-packages";
        w(&format!("{site}/nvidia/cuda_cupti/lib/libcupti.so.12"));
        let dist = format!("{site}/nvidia_cuda_cupti_cu12-12.4.127.dist-info");
        std::fs::create_dir_all(p.join(dist.trim_start_matches('/'))).unwrap();
        std::fs::write(
            p.join(dist.trim_start_matches('/')).join("RECORD"),
            "nvidia/cuda_cupti/lib/libcupti.so.12,sha256=x,10\nnvidia/cuda_cupti/include/cupti.h,,\n",
        )
        .unwrap();
        let root = Root::new(p);
        let env = Env::from_pairs([("LD_LIBRARY_PATH", "/apps/cuda/11.1/lib64")]);
        let tk = Toolkit {
            path: "/apps/cuda/11.1".into(),
            ..Default::default()
        };
        let py = Python {
            path: "/v/bin/python".into(),
            packages: vec![Package {
                name: "nvidia-cuda-cupti-cu12".into(),
                version: "12.4.127".into(),
                location: site.into(),
                metadata: dist.clone(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut inv = collect(&root, &env, &[tk], &[], &[], &[py]);
        inv.sort_by(|a, b| a.path.cmp(&b.path));
        let paths: Vec<&str> = inv.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "/apps/cuda/11.1/extras/CUPTI/lib64/libcupti.so.11.1",
                "/apps/cuda/11.1/lib64/libcudart.so.11.1.74",
                "/v/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
            ]
        );
        let cudart = &inv[1];
        assert_eq!(cudart.family, "cudart");
        assert_eq!(cudart.version.as_deref(), Some("11.1.74"));
        assert!(cudart.names.contains(&"libcudart.so.11.0".to_string()));
        let mut via = cudart.found_via.clone();
        via.sort();
        via.dedup();
        assert_eq!(via, vec!["ld-library-path", "toolkit:/apps/cuda/11.1"]);
        let cupti = &inv[2];
        assert_eq!(
            cupti.wheel.as_deref(),
            Some("nvidia-cuda-cupti-cu12 12.4.127")
        );
        assert_eq!(cupti.python.as_deref(), Some("/v/bin/python"));
        assert_eq!(cupti.version.as_deref(), Some("12"));
    }
}
