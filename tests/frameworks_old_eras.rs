//! Old framework eras that cannot be installed on this Python, from their real wheel files:
//! `pip download --no-deps --only-binary=:all: --python-version 3.7` into the PyPI cache
//! (`cache_dir()/wheels`, kept between runs), then only the build files and one native module
//! are unzipped into a fake machine. The ELF facts (DT_NEEDED, RPATH, the DsoLoader symbols)
//! and the build files are the real ones.
//!
//! - TF 1.15, 2.0, 2.1 (`tensorflow_core/`, `cuda_config.h` without per-library versions,
//!   build_info `'10'` meaning 10.0): the classic `libcudart.so.10.0` is wanted, by
//!   `libtensorflow_framework.so.N`, which defines the DsoLoader.
//! - torch 1.8.1 (CUDA libraries bundled in `torch/lib`) and 1.13.1 (cu117, pip `nvidia/*/lib`).

#[path = "common/machine.rs"]
mod machine;
#[path = "common/pypi.rs"]
mod pypi;

use machine::Machine;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SITE: &str = "/venv/lib/python3.7/site-packages";

/// The wheel `file` of `spec` in the PyPI cache, downloaded once.
fn wheel(spec: &str, file: &str) -> Option<PathBuf> {
    pypi::need(
        spec,
        (|| {
            let dir = pypi::cache_dir().join("wheels");
            let whl = dir.join(file);
            if whl.is_file() {
                return Ok(whl);
            }
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            pypi::run(
                pypi::pip(Path::new("python3"))
                    .args([
                        "download",
                        "--no-deps",
                        "--only-binary=:all:",
                        "--python-version",
                        "3.7",
                        "--platform",
                        "manylinux2010_x86_64",
                        "--platform",
                        "manylinux1_x86_64",
                        "-d",
                    ])
                    .arg(&dir)
                    .arg(spec),
            )?;
            whl.is_file()
                .then_some(whl)
                .ok_or_else(|| format!("{file} not downloaded"))
        })(),
    )
}

/// Unzip `members` of `whl` into the machine's site-packages.
fn unzip(m: &Machine, whl: &Path, members: &[&str]) {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(whl).unwrap()).unwrap();
    for f in members {
        let mut src = zip
            .by_name(f)
            .unwrap_or_else(|e| panic!("{f} in {}: {e}", whl.display()));
        let out = m.path(&format!("{SITE}/{f}"));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::io::copy(&mut src, &mut std::fs::File::create(out).unwrap()).unwrap();
    }
}

fn framework<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["snapshot"]["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no {name}: {:#}", report["snapshot"]["frameworks"]))
}

fn wants(fw: &Value) -> Vec<String> {
    let mut v: Vec<String> = fw["wants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["soname"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

/// A fake machine with a TF wheel's build files and its libtensorflow_framework.
fn tf_machine(whl: &Path, version: &str, framework_so: &str) -> Machine {
    let mut m = Machine::new();
    m.active_venv("3.7", "/venv", &[("tensorflow-gpu", version)]);
    unzip(
        &m,
        whl,
        &[
            "tensorflow_core/python/platform/build_info.py",
            "tensorflow_core/include/external/local_config_cuda/cuda/cuda/cuda_config.h",
            framework_so,
        ],
    );
    // The thin alias package those releases install beside tensorflow_core.
    m.write(
        &format!("{SITE}/tensorflow/__init__.py"),
        "from tensorflow_core import *\n",
    );
    m
}

fn check_tf(version: &str, file: &str, framework_so: &str, cuda: &str, expected: &[&str]) {
    let Some(whl) = wheel(&format!("tensorflow-gpu=={version}"), file) else {
        return;
    };
    let m = tf_machine(&whl, version, framework_so);
    let (_, report) = m.check(&[]);
    let tf = framework(&report, "tensorflow");
    assert!(tf["location"]
        .as_str()
        .unwrap()
        .ends_with("tensorflow_core"));
    assert_eq!(tf["cuda_version"], cuda);
    assert_eq!(tf["cudnn_version"], "7");
    assert_eq!(tf["cuda_major"], 10);
    assert_eq!(wants(tf), expected, "{tf:#}");
    let requester = format!("{SITE}/{framework_so}");
    for w in tf["wants"].as_array().unwrap() {
        assert_eq!(w["requester"], requester.as_str(), "{w:#}");
    }
    // No CUDA 10 on this machine: the classic miss is on record, from the right object.
    let cudart = report["snapshot"]["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == expected[2])
        .unwrap();
    assert_eq!(cudart["resolves"], false);
    assert_eq!(cudart["requester"], requester.as_str());
}

#[test]
fn tensorflow_1_15_wants_cuda_10_0_from_tensorflow_core() {
    check_tf(
        "1.15.5",
        "tensorflow_gpu-1.15.5-cp37-cp37m-manylinux2010_x86_64.whl",
        "tensorflow_core/libtensorflow_framework.so.1",
        "10.0",
        &[
            "libcublas.so.10.0",
            "libcuda.so.1",
            "libcudart.so.10.0",
            "libcudnn.so.7",
            "libcufft.so.10.0",
            "libcupti.so.10.0",
            "libcurand.so.10.0",
            "libcusolver.so.10.0",
            "libcusparse.so.10.0",
        ],
    );
}

#[test]
fn tensorflow_2_0_reads_10_as_10_0() {
    check_tf(
        "2.0.4",
        "tensorflow_gpu-2.0.4-cp37-cp37m-manylinux2010_x86_64.whl",
        "tensorflow_core/libtensorflow_framework.so.2",
        "10.0",
        &[
            "libcublas.so.10.0",
            "libcuda.so.1",
            "libcudart.so.10.0",
            "libcudnn.so.7",
            "libcufft.so.10.0",
            "libcupti.so.10.0",
            "libcurand.so.10.0",
            "libcusolver.so.10.0",
            "libcusparse.so.10.0",
        ],
    );
}

#[test]
fn tensorflow_2_1_math_libraries_use_the_lib_version() {
    // CUDA 10.1: cudart/cupti .so.10.1, the math libraries TF_CUDA_LIB_VERSION .so.10; no
    // cuBLASLt loader in this build.
    check_tf(
        "2.1.4",
        "tensorflow_gpu-2.1.4-cp37-cp37m-manylinux2010_x86_64.whl",
        "tensorflow_core/libtensorflow_framework.so.2",
        "10.1",
        &[
            "libcublas.so.10",
            "libcuda.so.1",
            "libcudart.so.10.1",
            "libcudnn.so.7",
            "libcufft.so.10",
            "libcupti.so.10.1",
            "libcurand.so.10",
            "libcusolver.so.10",
            "libcusparse.so.10",
        ],
    );
}
