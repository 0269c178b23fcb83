//! torch's model against a real `import torch` (torch==2.15.0 from PyPI, CUDA 13.2 build with
//! its nvidia cu13 wheels): every CUDA-family library the real import maps (read from
//! `/proc/self/maps` in a child interpreter) is predicted at the same file, including what
//! torch's own `_preload_cuda_deps` loads by path (nvrtc-builtins, nvshmem, cuFile) and what
//! the preload search does with a stray `nvidia/` directory in the working directory or a
//! PYTHONPATH entry, or an old copy on LD_LIBRARY_PATH. Needs PyPI (cached venv): skipped with
//! a message unless `ENVDOCTOR_REQUIRE_PYPI` is set.

use crate::common::cc;
use crate::common::fw;
use crate::common::pypi;

use std::path::{Path, PathBuf};

const IMPORT: &str = "import warnings\nwarnings.simplefilter('ignore')\nimport torch";

fn venv() -> Option<PathBuf> {
    pypi::need("torch==2.15.0", pypi::cached_venv(&["torch==2.15.0"]))
}

fn site(venv: &Path) -> PathBuf {
    venv.join("lib/python3.11/site-packages")
}

/// A stand-in `libnvJitLink.so.13` (right soname, none of the real symbols) at `dir`.
fn fake_nvjitlink(dir: &Path) -> PathBuf {
    cc::Lib::new("libnvJitLink.so.13")
        .c("int nvJitLinkVersion(unsigned *a, unsigned *b) { *a = 13; *b = 0; return 0; }")
        .build(&dir.join("libnvJitLink.so.13"))
}

#[test]
fn prediction_equals_the_real_import() {
    let Some(venv) = venv() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let mapped = fw::mapped_after(&venv, cwd.path(), IMPORT, &[]).unwrap();
    let snap = fw::snapshot(&venv, cwd.path(), &[]);
    let predicted = fw::predicted(&snap, &venv);
    let bad = fw::mismatches(&mapped, &predicted);
    eprintln!(
        "torch 2.15.0: real import maps {} CUDA-family libraries; envdoctor resolves {} ({} of the mapped at the same file)",
        mapped.len(),
        predicted.len(),
        mapped.len() - bad.len()
    );
    assert!(bad.is_empty(), "{bad:#?}");
    // The libraries the issue saw missing, and what the model says of them.
    assert!(mapped.len() >= 15, "{mapped:#?}");
    for so in [
        "libnvshmem_host.so.3",
        "libnvrtc-builtins.so.13.2",
        "libcufile.so.0",
    ] {
        assert!(mapped.contains_key(so), "{so} not mapped: {mapped:#?}");
    }
    let libs = fw::libraries(&snap, &venv);
    let lib = |so: &str| libs.iter().find(|l| l["soname"] == so).unwrap();
    assert_eq!(
        lib("libcublas.so.13")["found_via"],
        "preloaded-by-framework"
    );
    // cuDNN's sub-libraries are resolved from libcudnn itself.
    let graph = lib("libcudnn_graph.so.9");
    assert_eq!(graph["reason"], "transitive");
    assert!(graph["requester"]
        .as_str()
        .unwrap()
        .ends_with("libcudnn.so.9"));
    assert_eq!(graph["resolves"], true);
    let torch = fw::frameworks(&snap, &venv, "torch");
    let t = torch[0];
    assert_eq!(t["cuda_version"], "13.2");
    assert!(t["preloads"].as_array().unwrap().len() >= 15, "{t:#}");
    // The build's facts, read statically from its files.
    let archs: Vec<&str> = t["compute_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(archs.contains(&"sm_90"), "{archs:?}");
    assert_eq!(t["cudnn_version"], "9.26");
    // Its own wheels: nothing foreign; the cuDNN wheel's version is on record.
    assert!(t["preloads"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["foreign"] == false));
    let cudnn = lib("libcudnn.so.9");
    assert_eq!(cudnn["package"], "nvidia-cudnn-cu13");
    assert_eq!(cudnn["package_version"], "9.26.0.51");
}

/// The real list `torch.cuda.get_arch_list()` returns is the one read from libtorch_python.so.
#[test]
fn arch_list_equals_get_arch_list() {
    let Some(venv) = venv() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let out = pypi::run(
        std::process::Command::new(venv.join("bin/python"))
            .current_dir(cwd.path())
            .args([
                "-c",
                "import warnings; warnings.simplefilter('ignore'); import torch; print(' '.join(torch._C._cuda_getArchFlags().split()))",
            ]),
    )
    .unwrap();
    let snap = fw::snapshot(&venv, cwd.path(), &[]);
    let t = fw::frameworks(&snap, &venv, "torch")[0];
    let ours: Vec<&str> = t["compute_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ours.join(" "), out.trim());
}

/// A stray `nvidia/cu13/lib` in the working directory is `sys.path[0]` for `python -c`: torch
/// preloads its libnvJitLink, not site-packages'. The prediction names the stray file.
#[test]
fn stray_nvidia_dir_in_the_working_dir_wins() {
    let Some(venv) = venv() else { return };
    if !cc::have_cc() {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let cwd = cwd.path().canonicalize().unwrap();
    let stray = fake_nvjitlink(&cwd.join("nvidia/cu13/lib"));
    let mapped = fw::mapped_after(&venv, &cwd, IMPORT, &[]).unwrap();
    assert_eq!(
        mapped.get("libnvJitLink.so.13"),
        Some(&stray),
        "{mapped:#?}"
    );
    let snap = fw::snapshot(&venv, &cwd, &[]);
    let predicted = fw::predicted(&snap, &venv);
    let bad = fw::mismatches(&mapped, &predicted);
    assert!(bad.is_empty(), "{bad:#?}");
    let t = fw::frameworks(&snap, &venv, "torch")[0];
    let p = t["preloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["soname"] == "libnvJitLink.so.13")
        .unwrap();
    assert_eq!(p["sys_path_index"], 0);
    assert_eq!(p["path"], stray.to_str().unwrap());
    assert_eq!(p["foreign"], true);
    // The rule says so.
    let report = fw::check(&venv, &cwd, &[], &[]);
    let ids = fw::finding_ids(&report);
    assert!(
        ids.iter()
            .any(|i| i == "framework-preloads-foreign-cuda-library"),
        "{ids:?}"
    );
}

/// The same stray directory in a PYTHONPATH entry wins too (PYTHONPATH precedes site-packages).
#[test]
fn stray_nvidia_dir_on_pythonpath_wins() {
    let Some(venv) = venv() else { return };
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path().canonicalize().unwrap();
    let (cwd, pp) = (t.join("work"), t.join("pp"));
    std::fs::create_dir_all(&cwd).unwrap();
    let stray = fake_nvjitlink(&pp.join("nvidia/nvjitlink/lib"));
    let env = [("PYTHONPATH", pp.to_str().unwrap())];
    let mapped = fw::mapped_after(&venv, &cwd, IMPORT, &env).unwrap();
    assert_eq!(
        mapped.get("libnvJitLink.so.13"),
        Some(&stray),
        "{mapped:#?}"
    );
    let snap = fw::snapshot(&venv, &cwd, &env);
    let bad = fw::mismatches(&mapped, &fw::predicted(&snap, &venv));
    assert!(bad.is_empty(), "{bad:#?}");
}

/// An old copy on LD_LIBRARY_PATH is harmless: torch loads the wheel's by path first, and
/// every later request for the soname reuses it.
#[test]
fn old_copy_on_ld_library_path_is_harmless() {
    let Some(venv) = venv() else { return };
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path().canonicalize().unwrap();
    let (cwd, old) = (t.join("work"), t.join("old"));
    std::fs::create_dir_all(&cwd).unwrap();
    fake_nvjitlink(&old);
    let env = [("LD_LIBRARY_PATH", old.to_str().unwrap())];
    let mapped = fw::mapped_after(&venv, &cwd, IMPORT, &env).unwrap();
    let wheel = site(&venv).join("nvidia/cu13/lib/libnvJitLink.so.13");
    assert_eq!(
        mapped.get("libnvJitLink.so.13"),
        Some(&wheel),
        "{mapped:#?}"
    );
    let snap = fw::snapshot(&venv, &cwd, &env);
    let bad = fw::mismatches(&mapped, &fw::predicted(&snap, &venv));
    assert!(bad.is_empty(), "{bad:#?}");
    let libs = fw::libraries(&snap, &venv);
    let l = libs
        .iter()
        .find(|l| l["soname"] == "libnvJitLink.so.13")
        .unwrap();
    assert_eq!(l["found_via"], "preloaded-by-framework");
    assert_eq!(l["shadows_framework_copy"], false, "{l:#}");
    // The old copy is on record as a candidate that does not win.
    assert!(l["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["origin"] == "ld-library-path" && c["wins"] == false));
}

/// `--pid` on a real process that imported torch: every CUDA-family library it mapped is
/// compared with the prediction, and none differs.
#[test]
fn pid_of_a_real_torch_process_matches_the_prediction() {
    let Some(venv) = venv() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(venv.join("bin/python"))
        .current_dir(cwd.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args([
            "-c",
            "import warnings\nwarnings.simplefilter('ignore')\nimport torch, sys\nprint('ready', flush=True)\nsys.stdin.read()\n",
        ])
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
    let pid = child.id().to_string();
    let snap = fw::snapshot_with(&venv, cwd.path(), &[], &["--pid", &pid]);
    drop(child.stdin.take());
    let _ = child.wait();
    let job = &snap["jobs"][0];
    assert_eq!(job["readable"], true, "{job:#}");
    let compared = job["compared"].as_array().unwrap();
    assert!(compared.len() >= 15, "{job:#}");
    for c in compared {
        assert!(c["predicted"].is_string(), "{c:#}");
        assert_eq!(c["differs"], false, "{c:#}");
    }
}

/// The rules that were blind for torch see its real build facts now: the architecture list
/// read from libtorch_python.so against a Maxwell GPU, the build's cuDNN (9.26) against a
/// pre-Turing one, and nothing against an H100.
#[test]
fn build_facts_drive_the_gpu_rules() {
    let Some(venv) = venv() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let snap = fw::snapshot(&venv, cwd.path(), &[]);
    let rules = envdoctor::rules::RuleSet::shipped().unwrap();
    let fired = |name: &str, cc: &str| -> Vec<String> {
        let mut s = snap.clone();
        s["gpus"] = serde_json::json!([{
            "index": 0, "name": name, "uuid": "GPU-0", "memory_total_mib": 16384,
            "visible": true, "compute_capability": cc
        }]);
        rules
            .check_value(&s)
            .into_iter()
            .filter(|f| f.subject.as_deref().is_some_and(|x| x.contains("torch")))
            .map(|f| f.rule)
            .collect()
    };
    let maxwell = fired("NVIDIA GeForce GTX 970", "5.2");
    assert!(
        maxwell
            .iter()
            .any(|r| r == "gpu-arch-not-in-framework-build"),
        "{maxwell:?}"
    );
    let volta = fired("Tesla V100-SXM2-16GB", "7.0");
    assert!(
        volta
            .iter()
            .any(|r| r == "torch-cudnn-drops-pre-turing-gpus"),
        "{volta:?}"
    );
    let hopper = fired("NVIDIA H100 80GB HBM3", "9.0");
    assert!(
        !hopper
            .iter()
            .any(|r| r == "gpu-arch-not-in-framework-build"
                || r == "torch-cudnn-drops-pre-turing-gpus"),
        "{hopper:?}"
    );
}
