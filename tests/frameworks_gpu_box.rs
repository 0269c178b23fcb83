//! The three clean installs (torch==2.15.0, tensorflow[and-cuda]==2.21.0, jax[cuda13]==0.10.2)
//! on a simulated GPU box: the project's fake NVML (two GPUs, driver 580.65.06 / CUDA 13.0)
//! and a `cc`-built `libcuda.so.1` stand-in on LD_LIBRARY_PATH, with libraries loaded in the
//! child as `check` does. No error finding is false:
//! - JAX: none at all;
//! - torch: only CUPTI's load in the child, which dies because the stand-in is no real driver
//!   (a plain interpreter dies the same way asking CUPTI its version with this stand-in:
//!   checked here);
//! - TensorFlow: only `libcusolver.so.11`, which TF's own DsoLoader cannot load on this clean
//!   install either (its RUNPATH lacks `nvidia/cusolver/lib`: `frameworks_tensorflow.rs`
//!   calls the real loader).
//!
//! Needs PyPI (cached venvs): skipped with a message unless `ENVDOCTOR_REQUIRE_PYPI` is set.

use crate::common::cc;
use crate::common::pypi;
use crate::fake_nvml;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A `libcuda.so.1` that initialises and reports CUDA 13.0, and nothing else.
fn libcuda_dir(t: &Path) -> PathBuf {
    let dir = t.join("driver");
    cc::Lib::new("libcuda.so.1")
        .c("int cuInit(unsigned f) { (void)f; return 0; }\nint cuDriverGetVersion(int *v) { *v = 13000; return 0; }")
        .build(&dir.join("libcuda.so.1"));
    dir
}

fn check_on_gpu_box(venv: &Path, t: &Path) -> Value {
    check_on_gpu_box_with(venv, t, &[])
}

/// The same, with `extra` directories after the driver's on LD_LIBRARY_PATH.
fn check_on_gpu_box_with(venv: &Path, t: &Path, extra: &[PathBuf]) -> Value {
    let driver = libcuda_dir(t);
    let ld_path =
        std::env::join_paths(std::iter::once(driver).chain(extra.iter().cloned())).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_envdoctor"))
        .env_clear()
        .env("HOME", t)
        .env("PWD", t)
        .env("VIRTUAL_ENV", venv)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", venv.join("bin").display()),
        )
        .env("LD_LIBRARY_PATH", &ld_path)
        .env("FAKE_NVML_SCENARIO", "idle")
        .current_dir(t)
        .args([
            "check",
            "--format",
            "json",
            "--deadline",
            "60",
            "--nvml-lib",
        ])
        .arg(fake_nvml::library())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["snapshot"]["gpus"].as_array().unwrap().len(), 2);
    report
}

/// (rule, subject) of the error findings about `venv`.
fn errors(report: &Value, venv: &Path) -> Vec<(String, String)> {
    let v = venv.to_string_lossy();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["subject"].as_str().unwrap_or("").to_string(),
            )
        })
        .filter(|(_, s)| s.contains(&*v) || s.is_empty())
        .collect()
}

#[test]
fn jax_cuda13_is_quiet() {
    let Some(venv) = pypi::need(
        "jax[cuda13]==0.10.2",
        pypi::cached_venv(&["jax[cuda13]==0.10.2"]),
    ) else {
        return;
    };
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let report = check_on_gpu_box(&venv, t.path());
    assert_eq!(errors(&report, &venv), Vec::<(String, String)>::new());
}

#[test]
fn torch_is_quiet_though_cupti_cannot_tell_its_version_with_the_stand_in_driver() {
    let Some(venv) = pypi::need("torch==2.15.0", pypi::cached_venv(&["torch==2.15.0"])) else {
        return;
    };
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let report = check_on_gpu_box(&venv, t.path());
    assert_eq!(errors(&report, &venv), Vec::<(String, String)>::new());
    // Why envdoctor must not ask CUPTI its version: `cuptiGetVersion` kills a plain interpreter
    // with this driver, though the library loads. The load probe reads CUPTI's version from its
    // wheel instead and never calls it.
    let cupti = venv.join("lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13");
    let st = Command::new(venv.join("bin/python"))
        .env("LD_LIBRARY_PATH", t.path().join("driver"))
        .args([
            "-c",
            "import ctypes, sys\nl = ctypes.CDLL(sys.argv[1])\nv = ctypes.c_uint()\nl.cuptiGetVersion(ctypes.byref(v))\n",
        ])
        .arg(&cupti)
        .status()
        .unwrap();
    assert!(st.code().is_none(), "cuptiGetVersion survived: {st:?}");
    let lib = report["snapshot"]["libraries"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| {
            l["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("libcupti.so.13"))
        })
        .expect("torch's libcupti.so.13 is resolved");
    assert_eq!(lib["load"]["status"], "loaded", "{lib:#}");
}

#[test]
fn tensorflow_errs_only_on_the_cusolver_its_dso_loader_cannot_find() {
    let Some(venv) = pypi::need(
        "tensorflow[and-cuda]==2.21.0",
        pypi::cached_venv(&["tensorflow[and-cuda]==2.21.0"]),
    ) else {
        return;
    };
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let report = check_on_gpu_box(&venv, t.path());
    let errs = errors(&report, &venv);
    let subjects: Vec<&str> = errs.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(errs.len(), 1, "{errs:#?}");
    // The wheel is installed: the finding says where, and that the loader does not look there.
    assert_eq!(errs[0].0, "cuda-library-off-search-path");
    assert!(
        subjects[0].starts_with("libraries[libcusolver.so.11 "),
        "{errs:#?}"
    );
    let cusolver_dir = venv.join("lib/python3.11/site-packages/nvidia/cusolver/lib");
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "cuda-library-off-search-path")
        .unwrap();
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.contains(&*cusolver_dir.join("libcusolver.so.11").to_string_lossy()),
        "{message}"
    );
    // Its fix, applied (the directory on LD_LIBRARY_PATH), makes the same box quiet; that the
    // fix also satisfies TensorFlow's own loader is `frameworks_tensorflow.rs`'s to show.
    let fixed = check_on_gpu_box_with(&venv, t.path(), &[cusolver_dir]);
    let errs = errors(&fixed, &venv);
    assert!(errs.is_empty(), "{errs:#?}");
}
