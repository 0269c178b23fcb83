//! Old framework eras that cannot be installed on this Python, from their real wheel files:
//! `pip download --no-deps --only-binary=:all: --python-version 3.7` into the PyPI cache
//! (`cache_dir()/wheels`, kept between runs), then only the build files and one native module
//! are unzipped into a fake machine. The ELF facts (DT_NEEDED, RPATH, the DsoLoader symbols)
//! and the build files are the real ones.
//!
//! - TF 1.13 (`libtensorflow_framework.so` links libcudart.so.10.0, libcudnn.so.7 and
//!   libcuda.so.1: the import fails without them, on a CPU machine too, as the real loader
//!   shows on the real file);
//! - TF 1.14 (`tensorflow/`, files under the wheel's `.data/purelib/`), 1.15, 2.0, 2.1
//!   (`tensorflow_core/`, `cuda_config.h` without per-library versions, build_info `'10'`
//!   meaning 10.0): the classic `libcudart.so.10.0` is wanted, by
//!   `libtensorflow_framework.so.N`, which defines the DsoLoader; TF 2.4 (per-library versions:
//!   the famous `libcusolver.so.10` of a CUDA 11.0 build).
//! - torch 1.8.1 (CUDA libraries bundled in `torch/lib`), 1.13.1 (cu117, pip `nvidia/*/lib`) and
//!   2.5.1 (cu124: one pip wheel per library, reached through `$ORIGIN/../../nvidia/*/lib`).

use crate::common::machine;
use crate::common::pypi;

use machine::Machine;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SITE: &str = "/venv/lib/python3.7/site-packages";

/// The wheel `file` of `spec` in the PyPI cache, downloaded once (for Python 3.7).
fn wheel(spec: &str, file: &str) -> Option<PathBuf> {
    wheel_for(spec, file, "3.7")
}

/// The wheel `file` of `spec` for Python `py`, downloaded once.
fn wheel_for(spec: &str, file: &str, py: &str) -> Option<PathBuf> {
    pypi::need(spec, pypi::wheel_file(spec, file, py))
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
    v.dedup();
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

/// A fake machine with `members` of a torch wheel.
fn torch_machine(whl: &Path, version: &str, members: &[&str]) -> Machine {
    let mut m = Machine::new();
    m.active_venv("3.7", "/venv", &[]);
    m.write(
        &format!("{SITE}/torch-{version}.dist-info/METADATA"),
        &format!("Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"),
    );
    unzip(&m, whl, members);
    m
}

fn library<'a>(report: &'a Value, soname: &str) -> &'a Value {
    report["snapshot"]["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == soname)
        .unwrap_or_else(|| panic!("no {soname}: {:#}", report["snapshot"]["libraries"]))
}

#[test]
fn torch_1_8_cu102_bundles_cudart_under_an_auditwheel_name() {
    let Some(whl) = wheel(
        "torch==1.8.1",
        "torch-1.8.1-cp37-cp37m-manylinux1_x86_64.whl",
    ) else {
        return;
    };
    let m = torch_machine(
        &whl,
        "1.8.1+cu102",
        &[
            "torch/version.py",
            "torch/lib/libc10_cuda.so",
            "torch/lib/libcudart-80664282.so.10.2",
            "torch/lib/libtorch_python.so",
        ],
    );
    let (_, report) = m.check(&[]);
    let t = framework(&report, "torch");
    assert_eq!(t["cuda_version"], "10.2");
    assert_eq!(t["cuda_major"], 10);
    let archs: Vec<&str> = t["compute_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(archs, ["sm_37", "sm_50", "sm_60", "sm_70"]);
    // The bundled copies keep auditwheel's names in DT_NEEDED (NVTX too).
    assert_eq!(
        wants(t),
        ["libcudart-80664282.so.10.2", "libnvToolsExt-3965bdd0.so.1"]
    );
    let rt = library(&report, "libcudart-80664282.so.10.2");
    assert_eq!(rt["family"], "cudart");
    assert_eq!(rt["resolves"], true);
    assert_eq!(rt["found_via"], "runpath");
    assert_eq!(
        rt["requester"],
        format!("{SITE}/torch/lib/libc10_cuda.so").as_str()
    );
    assert_eq!(rt["elf"]["soname"], "libcudart.so.10.2");
}

#[test]
fn torch_1_13_cu117_gets_cublas_and_cudnn_from_pip_nvidia() {
    let Some(whl) = wheel(
        "torch==1.13.1",
        "torch-1.13.1-cp37-cp37m-manylinux1_x86_64.whl",
    ) else {
        return;
    };
    let mut m = torch_machine(
        &whl,
        "1.13.1+cu117",
        &[
            "torch/version.py",
            "torch/__init__.py",
            "torch/lib/libtorch_global_deps.so",
            "torch/lib/libtorch_python.so",
        ],
    );
    m.write(
        &format!("{SITE}/torch-1.13.1+cu117.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 1.13.1+cu117\nRequires-Dist: nvidia-cudnn-cu11 (==8.5.0.96) ; platform_system == \"Linux\"\nRequires-Dist: nvidia-cublas-cu11 (==11.10.3.66) ; platform_system == \"Linux\"\n",
    );
    m.env("PWD", "/work");
    let (_, report) = m.check(&[]);
    let t = framework(&report, "torch");
    assert_eq!(t["cuda_version"], "11.7");
    assert_eq!(t["cudnn_version"], "8.5");
    assert_eq!(t["uses_pip_nvidia"], true);
    assert_eq!(
        wants(t),
        [
            "libcublas.so.11",
            "libcudnn.so.8",
            "libnvToolsExt-847d78f2.so.1"
        ]
    );
    assert!(t["compute_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "sm_86"));
    // The wheels are not installed: libtorch_global_deps fails to load, and torch's 1.13
    // fallback (`_preload_cuda_deps` over sys.path) finds nothing either.
    assert!(t.get("preloads").is_none(), "{t:#}");
    assert_eq!(library(&report, "libcublas.so.11")["resolves"], false);
    // With the cuBLAS wheel's directory in the working directory (sys.path[0]), the fallback
    // loads it by path: the 1.13 preload, read from its own __init__.py.
    m.write("/work/nvidia/cublas/lib/libcublas.so.11", "");
    let lib = m.path("/work/nvidia/cublas/lib/libcublas.so.11");
    std::fs::copy(
        m.path(&format!("{SITE}/torch/lib/libtorch_global_deps.so")),
        &lib,
    )
    .unwrap();
    let (_, report) = m.check(&[]);
    let t = framework(&report, "torch");
    let p = &t["preloads"][0];
    assert_eq!(
        p["path"], "/work/nvidia/cublas/lib/libcublas.so.11",
        "{t:#}"
    );
    assert_eq!(p["sys_path_index"], 0);
}

/// `--pid` on a real process that mapped torch 1.8.1's bundled cudart (auditwheel named it
/// `libcudart-80664282.so.10.2`; its DT_SONAME is `libcudart.so.10.2`): the mapped file is
/// matched with the prediction made under the renamed soname.
#[test]
fn pid_matches_an_auditwheel_renamed_library() {
    let Some(whl) = wheel(
        "torch==1.8.1",
        "torch-1.8.1-cp37-cp37m-manylinux1_x86_64.whl",
    ) else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let t = t.path().canonicalize().unwrap();
    let venv = t.join("venv");
    pypi::run(
        std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv),
    )
    .unwrap();
    let xy = pypi::run(std::process::Command::new(venv.join("bin/python")).args([
        "-c",
        "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
    ]))
    .unwrap();
    let site = venv.join(format!("lib/python{}/site-packages", xy.trim()));
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&whl).unwrap()).unwrap();
    for f in [
        "torch/version.py",
        "torch/lib/libc10_cuda.so",
        "torch/lib/libcudart-80664282.so.10.2",
    ] {
        let out = site.join(f);
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::io::copy(
            &mut zip.by_name(f).unwrap(),
            &mut std::fs::File::create(out).unwrap(),
        )
        .unwrap();
    }
    let di = site.join("torch-1.8.1+cu102.dist-info");
    std::fs::create_dir_all(&di).unwrap();
    std::fs::write(
        di.join("METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 1.8.1+cu102\n",
    )
    .unwrap();
    let cudart = site.join("torch/lib/libcudart-80664282.so.10.2");
    let mut child = std::process::Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import ctypes, sys\nctypes.CDLL(sys.argv[1])\nprint('ready', flush=True)\nsys.stdin.read()\n",
        ])
        .arg(&cudart)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_envdoctor"))
        .env_clear()
        .env("HOME", &t)
        .env("VIRTUAL_ENV", &venv)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", venv.join("bin").display()),
        )
        .args(["snapshot", "--no-load", "--pid", &child.id().to_string()])
        .output()
        .unwrap();
    drop(child.stdin.take());
    let _ = child.wait();
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    let compared = snap["jobs"][0]["compared"].as_array().unwrap();
    let c = compared
        .iter()
        .find(|c| c["soname"] == "libcudart.so.10.2")
        .unwrap_or_else(|| panic!("{:#}", snap["jobs"]));
    assert_eq!(c["predicted"], cudart.to_str().unwrap(), "{c:#}");
    assert_eq!(c["differs"], false);
}

/// Unzip `members` (wheel paths) to `to` (site-packages relative paths).
fn unzip_to(m: &Machine, whl: &Path, members: &[(&str, &str)]) {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(whl).unwrap()).unwrap();
    for (from, to) in members {
        let mut src = zip.by_name(from).unwrap();
        let out = m.path(&format!("{SITE}/{to}"));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::io::copy(&mut src, &mut std::fs::File::create(out).unwrap()).unwrap();
    }
}

/// A machine with TF `version`'s build files and `framework_so` unzipped from a wheel that
/// keeps them under `.data/purelib/` (TF 1.13, 1.14).
fn purelib_tf_machine(whl: &Path, version: &str, framework_so: &str) -> Machine {
    let mut m = Machine::new();
    m.active_venv("3.7", "/venv", &[("tensorflow-gpu", version)]);
    let p = format!("tensorflow_gpu-{version}.data/purelib/");
    let files = [
        "tensorflow/python/platform/build_info.py",
        "tensorflow/include/external/local_config_cuda/cuda/cuda/cuda_config.h",
        framework_so,
    ];
    let members: Vec<(String, &str)> = files.iter().map(|f| (format!("{p}{f}"), *f)).collect();
    let members: Vec<(&str, &str)> = members.iter().map(|(a, b)| (a.as_str(), *b)).collect();
    unzip_to(&m, whl, &members);
    m
}

#[test]
fn tensorflow_1_14_keeps_its_files_in_tensorflow() {
    let Some(whl) = wheel(
        "tensorflow-gpu==1.14.0",
        "tensorflow_gpu-1.14.0-cp37-cp37m-manylinux1_x86_64.whl",
    ) else {
        return;
    };
    let m = purelib_tf_machine(&whl, "1.14.0", "tensorflow/libtensorflow_framework.so.1");
    let (_, report) = m.check(&[]);
    let tf = framework(&report, "tensorflow");
    assert!(tf["location"]
        .as_str()
        .unwrap()
        .ends_with("site-packages/tensorflow"));
    assert_eq!(tf["cuda_version"], "10.0");
    let w = wants(tf);
    assert!(w.contains(&"libcudart.so.10.0".to_string()), "{w:?}");
    assert!(w.contains(&"libcublas.so.10.0".to_string()), "{w:?}");
    assert!(!w.iter().any(|s| s.starts_with("libcublasLt")), "{w:?}");
    assert_eq!(
        tf["wants"][0]["requester"],
        format!("{SITE}/tensorflow/libtensorflow_framework.so.1").as_str()
    );
}

#[test]
fn tensorflow_2_4_per_library_versions() {
    let Some(whl) = wheel(
        "tensorflow-gpu==2.4.4",
        "tensorflow_gpu-2.4.4-cp37-cp37m-manylinux2010_x86_64.whl",
    ) else {
        return;
    };
    let mut m = Machine::new();
    m.active_venv("3.7", "/venv", &[("tensorflow-gpu", "2.4.4")]);
    let files = [
        "tensorflow/python/platform/build_info.py",
        "tensorflow/include/external/local_config_cuda/cuda/cuda/cuda_config.h",
        "tensorflow/libtensorflow_framework.so.2",
    ];
    let members: Vec<(&str, &str)> = files.iter().map(|f| (*f, *f)).collect();
    unzip_to(&m, &whl, &members);
    let (_, report) = m.check(&[]);
    let tf = framework(&report, "tensorflow");
    assert_eq!(tf["cuda_version"], "11.0");
    assert_eq!(tf["cudnn_version"], "8");
    assert_eq!(
        wants(tf),
        [
            "libcublas.so.11",
            "libcublasLt.so.11",
            "libcuda.so.1",
            "libcudart.so.11.0",
            "libcudnn.so.8",
            "libcufft.so.10",
            "libcupti.so.11.0",
            "libcurand.so.10",
            "libcusolver.so.10",
            "libcusparse.so.11",
        ]
    );
    let caps: Vec<&str> = tf["compute_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        caps,
        ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"]
    );
}

#[test]
fn tensorflow_1_13_links_cudart_cudnn_and_the_driver_so_its_import_fails_without_them() {
    let Some(whl) = wheel(
        "tensorflow-gpu==1.13.2",
        "tensorflow_gpu-1.13.2-cp37-cp37m-manylinux1_x86_64.whl",
    ) else {
        return;
    };
    // (_pywrap_tensorflow_internal.so, which links cuBLAS & co., is 974 MB unzipped: left out.)
    let m = purelib_tf_machine(&whl, "1.13.2", "tensorflow/libtensorflow_framework.so");
    let (code, report) = m.check(&[]);
    let tf = framework(&report, "tensorflow");
    assert_eq!(tf["cuda_version"], "10.0");
    assert_eq!(tf["cudnn_version"], "7");
    let framework_so = format!("{SITE}/tensorflow/libtensorflow_framework.so");
    let linked: Vec<&str> = tf["wants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w["evidence"]
                .as_str()
                .is_some_and(|e| e.starts_with("DT_NEEDED"))
        })
        .map(|w| w["soname"].as_str().unwrap())
        .collect();
    assert_eq!(
        linked,
        ["libcuda.so.1", "libcudart.so.10.0", "libcudnn.so.7"],
        "{tf:#}"
    );
    // On this CPU-only machine the import fails: an error for each, GPU or not.
    let errors: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            (
                f["rule"].as_str().unwrap(),
                f["subject"].as_str().unwrap_or(""),
            )
        })
        .collect();
    for so in linked {
        assert!(
            errors
                .iter()
                .any(|(r, s)| *r == "cuda-library-not-found" && s.contains(so)),
            "{so}: {errors:#?}"
        );
    }
    assert_eq!(code, 1);
    // The real loader agrees: loading the real file fails on its first missing DT_NEEDED.
    let file = m.path(&framework_so);
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            &format!("import ctypes\nctypes.CDLL({:?})", file.to_str().unwrap()),
        ])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("libcuda.so.1: cannot open shared object file"),
        "{err}"
    );
}

/// torch 2.5.1 (CUDA 12.4, the cu12x era: one pip wheel per library under `nvidia/<lib>/lib`,
/// reached through `$ORIGIN/../../nvidia/*/lib` RPATHs), from its real wheel: the wants, their
/// requester, the build facts from version.py and METADATA, and the real loader on the real
/// `libc10_cuda.so` with and without the real cuda-runtime wheel's libcudart.
#[test]
fn torch_2_5_cu124_reaches_each_nvidia_wheel_through_its_rpath() {
    let Some(whl) = wheel_for(
        "torch==2.5.1",
        "torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl",
        "3.11",
    ) else {
        return;
    };
    let Some(cudart_venv) = pypi::need(
        "nvidia-cuda-runtime-cu12",
        pypi::cached_venv(&[
            "nvidia-cuda-cupti-cu12==12.4.127",
            "nvidia-cuda-runtime-cu12==12.4.127",
        ]),
    ) else {
        return;
    };
    let site = "/venv/lib/python3.11/site-packages";
    let mut m = Machine::new();
    m.active_venv("3.11", "/venv", &[]);
    let members = [
        "torch/version.py",
        "torch/__init__.py",
        "torch/lib/libtorch_global_deps.so",
        "torch/lib/libc10_cuda.so",
        "torch/lib/libc10.so",
        "torch-2.5.1.dist-info/METADATA",
    ];
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&whl).unwrap()).unwrap();
    for f in members {
        let mut src = zip.by_name(f).unwrap();
        let dst = m.path(&format!("{site}/{f}"));
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::io::copy(&mut src, &mut std::fs::File::create(&dst).unwrap()).unwrap();
    }
    m.env("PWD", "/work");
    let (_, report) = m.check(&[]);
    let t = framework(&report, "torch");
    assert_eq!(t["cuda_version"], "12.4", "{t:#}");
    assert_eq!(t["cudnn_version"], "9.1", "{t:#}");
    assert_eq!(t["uses_pip_nvidia"], true);
    let w = wants(t);
    assert!(w.contains(&"libcudart.so.12".to_string()), "{w:?}");
    let cudart = library(&report, "libcudart.so.12");
    assert_eq!(cudart["resolves"], false, "{cudart:#}");
    // The real loader agrees: the real libc10_cuda.so fails on libcudart.so.12.
    let c10 = m.path(&format!("{site}/torch/lib/libc10_cuda.so"));
    let load = |lib: &Path| {
        std::process::Command::new("python3")
            .args([
                "-c",
                &format!("import ctypes\nctypes.CDLL({:?})", lib.to_str().unwrap()),
            ])
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap()
    };
    let out = load(&c10);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("libcudart.so.12"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The nvidia-cuda-runtime-cu12 wheel's real file where pip puts it: predicted found there
    // (through libc10_cuda's RPATH), and the real loader loads it.
    let real = std::fs::read_dir(cudart_venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages/nvidia/cuda_runtime/lib/libcudart.so.12");
    let dst = m.path(&format!("{site}/nvidia/cuda_runtime/lib/libcudart.so.12"));
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::copy(&real, &dst).unwrap();
    let (_, report) = m.check(&[]);
    let cudart = library(&report, "libcudart.so.12");
    assert_eq!(cudart["resolves"], true, "{cudart:#}");
    assert_eq!(cudart["found_via"], "rpath", "{cudart:#}");
    assert_eq!(
        cudart["realpath"],
        format!("{site}/nvidia/cuda_runtime/lib/libcudart.so.12").as_str(),
        "{cudart:#}"
    );
    let out = load(&c10);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
