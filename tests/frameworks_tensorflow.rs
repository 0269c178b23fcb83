//! TensorFlow's model against the real thing, for `tensorflow[and-cuda]==2.21.0` from PyPI.
//!
//! On a machine without a GPU `import tensorflow` maps only libcudart (checked here too), so
//! the ground truth for the rest is TensorFlow's own loader: a child interpreter loads
//! `libtensorflow_framework.so.2` and calls each real `tsl::internal::DsoLoader::Get<Lib>DsoHandle`
//! (the functions TF's GPU initialisation calls), then reads `/proc/self/maps`. Each wanted
//! library must be predicted to load exactly when the real call succeeds, at the file it mapped,
//! and every CUDA-family file it mapped (cuSPARSE's nvJitLink too) must be predicted there.
//! Needs PyPI (cached venv): skipped with a message unless `ENVDOCTOR_REQUIRE_PYPI` is set.

use crate::common::fw;
use crate::common::pypi;

use envdoctor::probe::libs::frameworks::{family, tensorflow};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn venv() -> Option<PathBuf> {
    pypi::need(
        "tensorflow[and-cuda]==2.21.0",
        pypi::cached_venv(&["tensorflow[and-cuda]==2.21.0"]),
    )
}

/// stem → (the real loader succeeded, the CUDA-family files its call mapped).
type Real = BTreeMap<String, (bool, Vec<PathBuf>)>;

/// Call each DsoLoader getter of `framework` in a child and report what happened.
fn real_dso_loader(venv: &std::path::Path, framework: &std::path::Path) -> Real {
    let (_, syms) =
        envdoctor::probe::libs::elf::read_with_symbols(&envdoctor::root::Root::host(), framework)
            .unwrap();
    let mangled: Vec<(String, String)> = syms
        .exported
        .iter()
        .filter_map(|s| {
            let names = tensorflow::dso_loader_names(std::iter::once(s.name.as_str()));
            let n = names.first()?;
            let stem = tensorflow::LOADERS.iter().find(|(l, _)| l == n)?.1;
            Some((s.name.clone(), stem.to_string()))
        })
        .collect();
    assert!(mangled.len() >= 8, "{mangled:?}");
    let calls: String = mangled
        .iter()
        .map(|(m, stem)| format!("({m:?}, {stem:?}),"))
        .collect();
    let script = format!(
        r#"
import ctypes
def maps():
    out = set()
    for line in open('/proc/self/maps'):
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].strip().startswith('/'):
            out.add(parts[5].strip())
    return out
lib = ctypes.CDLL({fwk:?})
for mangled, stem in [{calls}]:
    before = maps()
    f = getattr(lib, mangled)
    f.argtypes = [ctypes.c_void_p]
    f.restype = None
    buf = ctypes.create_string_buffer(64)
    f(buf)
    ok = int.from_bytes(buf.raw[:8], 'little') == 1  # absl: the inlined OK status
    print('CALL', stem, 'ok' if ok else 'error', *sorted(maps() - before))
"#,
        fwk = framework.to_str().unwrap()
    );
    let out = pypi::run(
        std::process::Command::new(venv.join("bin/python"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["-c", &script]),
    )
    .unwrap();
    let mut real = Real::new();
    for line in out.lines() {
        let mut w = line.split(' ');
        if w.next() != Some("CALL") {
            continue;
        }
        let stem = w.next().unwrap().to_string();
        let ok = w.next() == Some("ok");
        let files = w
            .map(PathBuf::from)
            .filter(|p| family(&p.file_name().unwrap().to_string_lossy()).is_some())
            .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
            .collect();
        real.insert(stem, (ok, files));
    }
    real
}

#[test]
fn prediction_equals_the_real_dso_loader() {
    let Some(venv) = venv() else { return };
    let cwd = tempfile::tempdir().unwrap();
    // On this GPU-less machine the import itself maps only libcudart: predicted there too.
    let at_import = fw::mapped_after(&venv, cwd.path(), "import tensorflow", &[]).unwrap();
    let snap = fw::snapshot(&venv, cwd.path(), &[]);
    let bad = fw::mismatches(&at_import, &fw::predicted(&snap, &venv));
    assert!(bad.is_empty(), "{bad:#?}");
    let tf = fw::frameworks(&snap, &venv, "tensorflow")[0];
    let framework =
        PathBuf::from(tf["location"].as_str().unwrap()).join("libtensorflow_framework.so.2");
    let libs = fw::libraries(&snap, &venv);
    let wanted: Vec<_> = libs.iter().filter(|l| l["reason"] == "wanted").collect();
    // Every dlopen is TF's DsoLoader's, in libtensorflow_framework: its RUNPATH applies.
    for l in &wanted {
        assert_eq!(l["requester"], framework.to_str().unwrap(), "{l:#}");
    }
    let real = real_dso_loader(&venv, &framework);
    let predicted = fw::predicted(&snap, &venv);
    let mut compared = 0;
    for l in &wanted {
        let stem = l["family"].as_str().unwrap();
        let Some((ok, files)) = real.get(stem) else {
            panic!("no DsoLoader call for {stem}: {real:?}");
        };
        compared += 1;
        if stem == "cuda" {
            // The driver: absent on this machine, for both.
            assert!(!ok && l["resolves"] == false);
            continue;
        }
        assert_eq!(
            l["resolves"] == true,
            *ok,
            "{} predicted {l:#}, real {ok}",
            l["soname"]
        );
        for f in files {
            let so = envdoctor::probe::libs::elf::read(&envdoctor::root::Root::host(), f)
                .unwrap()
                .soname
                .unwrap();
            assert_eq!(
                predicted.get(&so),
                Some(f),
                "{so} mapped at {}",
                f.display()
            );
        }
    }
    let mapped: usize = real.values().map(|(_, f)| f.len()).sum();
    eprintln!(
        "tensorflow 2.21.0: {compared} wanted sonames checked against the real DsoLoader; it mapped {mapped} CUDA-family files, all predicted at the same file; envdoctor resolves {} libraries",
        predicted.len()
    );
    // The facts behind it: no cuRAND loader in this build, so no cuRAND want although the
    // header names TF_CURAND_VERSION; cuSOLVER's is called from libtensorflow_framework,
    // whose RUNPATH lacks nvidia/cusolver/lib, and fails for real too.
    assert!(!real.contains_key("curand"));
    assert!(!wanted.iter().any(|l| l["family"] == "curand"));
    assert!(!real["cusolver"].0);
    assert!(real["cudart"].0);
}

#[test]
fn build_facts_from_the_installed_files() {
    let Some(venv) = venv() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let snap = fw::snapshot(&venv, cwd.path(), &[]);
    let tf = fw::frameworks(&snap, &venv, "tensorflow")[0];
    assert_eq!(tf["cuda_version"], "12.5.1");
    assert_eq!(tf["cudnn_version"], "9");
    assert_eq!(tf["is_cuda_build"], true);
    assert!(tf["compute_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == "sm_80"));
}

/// TensorFlow's own GPU gate, `DsoLoader::TryDlopenCUDALibraries` (what TF calls before it
/// registers a GPU), run in a child: whether it passed, and soname → opened, from TF's own log.
fn real_gpu_gate(
    framework: &std::path::Path,
    venv: &std::path::Path,
    ld_path: Option<&std::path::Path>,
) -> (bool, BTreeMap<String, bool>) {
    let script = format!(
        r#"
import ctypes
lib = ctypes.CDLL({fwk:?})
f = lib._ZN3tsl8internal9DsoLoader22TryDlopenCUDALibrariesEv
f.argtypes = [ctypes.c_void_p]
f.restype = None
buf = ctypes.create_string_buffer(64)
f(buf)
print('GATE', 'ok' if int.from_bytes(buf.raw[:8], 'little') == 1 else 'error')
"#,
        fwk = framework.to_str().unwrap()
    );
    let mut cmd = std::process::Command::new(venv.join("bin/python"));
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TF_CPP_MIN_LOG_LEVEL", "0")
        .env("TF_CPP_VMODULE", "dso_loader=1")
        .args(["-c", &script]);
    if let Some(p) = ld_path {
        cmd.env("LD_LIBRARY_PATH", p);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("GATE"), "{stdout}\n{stderr}");
    let mut opened = BTreeMap::new();
    for line in stderr.lines() {
        if let Some(so) = line.split("Successfully opened dynamic library ").nth(1) {
            opened.insert(so.trim().to_string(), true);
        } else if let Some(rest) = line.split("Could not load dynamic library '").nth(1) {
            opened.insert(rest.split('\'').next().unwrap().to_string(), false);
        }
    }
    (stdout.contains("GATE ok"), opened)
}

#[test]
fn the_gpu_gate_fails_on_cusolver_as_predicted_and_its_fix_passes_it() {
    let Some(venv) = venv() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let snap = fw::snapshot(&venv, cwd.path(), &[]);
    let tf = fw::frameworks(&snap, &venv, "tensorflow")[0];
    let framework =
        PathBuf::from(tf["location"].as_str().unwrap()).join("libtensorflow_framework.so.2");
    let (ok, opened) = real_gpu_gate(&framework, &venv, None);
    assert!(!ok, "{opened:?}");
    assert_eq!(opened.get("libcusolver.so.11"), Some(&false), "{opened:?}");
    assert!(opened.len() >= 7, "{opened:?}");
    // envdoctor's prediction for each library the real gate tried, library by library.
    let libs = fw::libraries(&snap, &venv);
    for (so, real) in &opened {
        let l = libs
            .iter()
            .find(|l| l["soname"] == so.as_str() && l["reason"] == "wanted")
            .unwrap_or_else(|| panic!("TF's gate opens {so}, envdoctor does not predict it"));
        assert_eq!(l["resolves"] == true, *real, "{so}: {l:#}");
    }
    // The fix cuda-library-off-search-path prints: the wheel's directory on LD_LIBRARY_PATH.
    let dir = venv.join("lib/python3.11/site-packages/nvidia/cusolver/lib");
    let (ok, opened) = real_gpu_gate(&framework, &venv, Some(&dir));
    assert!(ok, "{opened:?}");
    let ld = dir.to_str().unwrap();
    let snap = fw::snapshot(&venv, cwd.path(), &[("LD_LIBRARY_PATH", ld)]);
    let libs = fw::libraries(&snap, &venv);
    for (so, real) in &opened {
        let l = libs
            .iter()
            .find(|l| l["soname"] == so.as_str() && l["reason"] == "wanted")
            .unwrap();
        assert!(*real && l["resolves"] == true, "{so}: {l:#}");
    }
}
