//! The `libs` probe end to end: `frameworks[]`, `libraries[]` (resolution checked against the
//! real loader), the crash-isolated load child (`libraries[].load`) and `--pid` (`jobs[]`),
//! with real shared libraries compiled by `cc`, real venvs and real processes.

use crate::common::cc;

use crate::common::cli;
use envdoctor::probe::libs::load::{self, Item};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::pypi;
use pypi::{need, run};

use crate::common::machine;
use machine::{copy_tree, debian_python};

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/machines")
        .join(name)
}

fn library<'a>(snap: &'a Value, python_part: &str, soname: &str) -> &'a Value {
    snap["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| {
            l["soname"] == soname
                && l["python"]
                    .as_str()
                    .is_some_and(|p| p.contains(python_part))
        })
        .unwrap_or_else(|| panic!("no {soname} for {python_part}: {:#}", snap["libraries"]))
}

/// `snapshot --no-load --project PROJECT` in an empty environment (PATH=/usr/bin:/bin, and
/// LD_LIBRARY_PATH when given): the static resolution only.
fn static_snapshot(project: &Path, ld_library_path: Option<&str>) -> Value {
    let mut c = cli::empty();
    c.args(["snapshot", "--no-load", "--project"])
        .arg(project)
        .env("PATH", "/usr/bin:/bin");
    if let Some(llp) = ld_library_path {
        c.env("LD_LIBRARY_PATH", llp);
    }
    cli::json(&mut c)
}

fn sonames(fw: &Value) -> Vec<String> {
    fw["wants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["soname"].as_str().unwrap().to_string())
        .collect()
}

/// The committed fixture as it is: TensorFlow 2.4 asks for `libcusolver.so.10`, nothing has it.
#[test]
fn raw_fixture_shows_tensorflow_and_the_unresolved_cusolver() {
    let root = fixture_dir("lib-cuda111-cusolver");
    let snap = cli::json(
        cli::empty()
            .args(["snapshot", "--root", root.to_str().unwrap()])
            .env("LD_LIBRARY_PATH", "/usr/local/cuda/lib64"),
    );
    let fws = snap["frameworks"].as_array().unwrap();
    assert_eq!(fws.len(), 1, "{fws:#?}");
    let tf = &fws[0];
    assert_eq!(tf["name"], "tensorflow");
    assert_eq!(tf["version"], "2.4.0");
    assert_eq!(tf["python"], "/usr/bin/python3");
    assert_eq!(tf["cuda_version"], "11.0");
    assert_eq!(tf["cuda_major"], 11);
    assert_eq!(tf["cudnn_major"], 8);
    assert_eq!(tf["is_cuda_build"], true);
    assert!(tf["compute_capabilities"]
        .as_array()
        .unwrap()
        .contains(&Value::from("compute_80")));
    let wants = sonames(tf);
    for s in [
        "libcudart.so.11.0",
        "libcublas.so.11",
        "libcublasLt.so.11",
        "libcusolver.so.10",
        "libcurand.so.10",
        "libcufft.so.10",
        "libcusparse.so.11",
        "libcudnn.so.8",
        "libcupti.so.11.0",
        "libcuda.so.1",
    ] {
        assert!(wants.contains(&s.to_string()), "{s} not in {wants:?}");
    }
    let w = tf["wants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["soname"] == "libcusolver.so.10")
        .unwrap();
    assert!(w["evidence"]
        .as_str()
        .unwrap()
        .ends_with("cuda_config.h TF_CUSOLVER_VERSION"));
    let l = library(&snap, "/usr/bin/python3", "libcusolver.so.10");
    assert_eq!(l["resolves"], false);
    assert_eq!(l["reason"], "wanted");
    assert_eq!(l["family"], "cusolver");
    assert_eq!(l["major"], 10);
    assert_eq!(l["wanted_by"], serde_json::json!(["tensorflow 2.4.0"]));
    // The framework's own wants beat what CUDA 11 implies: no separate libcusolver.so.11 entry.
    assert!(!snap["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["soname"] == "libcusolver.so.11"));
}

/// The fixture completed with real libraries: everything TF 2.4 wants resolves except
/// cuSOLVER 10; the copy of `.so.11` is on record. Libraries under another root are not loaded.
#[test]
fn tf24_on_cuda111_resolves_all_but_cusolver_10() {
    let t = tempfile::tempdir().unwrap();
    let m = t.path().canonicalize().unwrap().join("m");
    copy_tree(&fixture_dir("lib-cuda111-cusolver"), &m);
    let lib64 = m.join("usr/local/cuda-11.1/lib64");
    cc::Lib::new("libcusolver.so.11").build(&lib64.join("libcusolver.so.11.0.1.105"));
    cc::Lib::new("libcudart.so.11.0").build(&lib64.join("libcudart.so.11.1.74"));
    cc::Lib::new("libcublas.so.11").build(&lib64.join("libcublas.so.11.3.0.106"));
    cc::Lib::new("libcuda.so.1").build(&m.join("usr/lib/x86_64-linux-gnu/libcuda.so.455.23.05"));
    let snap = cli::json(
        cli::empty()
            .args(["snapshot", "--root", m.to_str().unwrap()])
            .env("LD_LIBRARY_PATH", "/usr/local/cuda/lib64"),
    );
    let py = "/usr/bin/python3";
    let l = library(&snap, py, "libcusolver.so.10");
    assert_eq!(l["resolves"], false);
    assert!(l.get("load").is_none(), "nothing to load: {l:#}");
    let cudart = library(&snap, py, "libcudart.so.11.0");
    assert_eq!(cudart["resolves"], true);
    assert_eq!(cudart["found_via"], "ld-library-path");
    assert_eq!(cudart["path"], "/usr/local/cuda/lib64/libcudart.so.11.0");
    assert_eq!(
        cudart["realpath"],
        "/usr/local/cuda-11.1/lib64/libcudart.so.11.1.74"
    );
    assert_eq!(cudart["elf"]["soname"], "libcudart.so.11.0");
    assert_eq!(cudart["name_version"], "11.0");
    assert_eq!(cudart["file_version"], "11.1.74");
    assert_eq!(cudart["version_mismatch"], false);
    assert_eq!(cudart["major"], 11);
    assert_eq!(cudart["load"]["status"], "skipped");
    assert!(cudart["load"]["error"].as_str().unwrap().contains("--root"));
    let cands = cudart["candidates"].as_array().unwrap();
    assert!(cands.iter().any(|c| c["wins"] == true), "{cands:#?}");
    let cuda = library(&snap, py, "libcuda.so.1");
    assert_eq!(cuda["resolves"], true);
    assert_eq!(cuda["found_via"], "default-dirs");
    let libs_errors: Vec<&Value> = snap["probe_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["probe"] == "libs")
        .collect();
    assert!(libs_errors.is_empty(), "{libs_errors:#?}");
}

/// A real venv (python3 -m venv, no pip) holding a torch-like package.
struct TorchVenv {
    venv: PathBuf,
    site: PathBuf,
    c_ext: PathBuf,
}

fn python3_ok() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `torch` `version` built for CUDA `cuda`, whose `_C` extension has DT_RUNPATH
/// `$ORIGIN/../nvidia/cudnn/lib` and DT_NEEDED `cudnn_soname` (pip copy returning
/// `cudnn_version`) plus each of `more` found in `sys_dir`.
fn torch_venv(
    dir: &Path,
    name: &str,
    version: &str,
    cudnn_soname: &str,
    cudnn_version: i64,
    sys_dir: &Path,
    more: &[&str],
) -> TorchVenv {
    let venv = dir.join(name);
    cc::run(
        std::process::Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    let site = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages");
    let pip_cudnn = site.join("nvidia/cudnn/lib");
    cc::Lib::new(cudnn_soname)
        .returns("cudnnGetVersion", cudnn_version)
        .build(&pip_cudnn.join(cudnn_soname));
    let dist = site.join(format!("torch-{version}.dist-info"));
    std::fs::create_dir_all(&dist).unwrap();
    let major = cudnn_soname.rsplit('.').next().unwrap();
    std::fs::write(
        dist.join("METADATA"),
        format!(
            "Metadata-Version: 2.1\nName: torch\nVersion: {version}\nRequires-Dist: filelock\n\
             Requires-Dist: nvidia-cudnn-cu12=={major}.1.0.70; platform_system == \"Linux\"\n"
        ),
    )
    .unwrap();
    std::fs::write(dist.join("RECORD"), "").unwrap();
    std::fs::write(dist.join("INSTALLER"), "pip\n").unwrap();
    let torch = site.join("torch");
    std::fs::create_dir_all(torch.join("lib")).unwrap();
    std::fs::write(
        torch.join("version.py"),
        format!("__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = '12.1'\nhip: Optional[str] = None\n"),
    )
    .unwrap();
    let mut c = cc::Lib::new("_C.so")
        .runpath("$ORIGIN/../nvidia/cudnn/lib")
        .needs(&pip_cudnn, &format!(":{cudnn_soname}"));
    for m in more {
        c = c.needs(sys_dir, &format!(":{m}"));
    }
    let c_ext = c.build(&torch.join("_C.cpython-311-x86_64-linux-gnu.so"));
    TorchVenv { venv, site, c_ext }
}

/// Two environments, one system cuDNN on LD_LIBRARY_PATH: in `a` it shadows the pip copy
/// (torch wants `libcudnn.so.9`), in `b` (wants `.so.8`) the pip copy wins. Paths agree with
/// the real loader; the load child reports each environment's own version (one child per
/// environment); a constructor that segfaults becomes `crashed`, one that sleeps `timeout`,
/// and envdoctor still answers within its deadline.
#[test]
fn torch_venvs_resolution_and_load_results() {
    if !cc::have_cc() || !python3_ok() {
        eprintln!("SKIPPED: needs cc and python3");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path().canonicalize().unwrap();
    let sys = d.join("sys-cuda/lib64");
    cc::Lib::new("libcudnn.so.9")
        .returns("cudnnGetVersion", 90000)
        .build(&sys.join("libcudnn.so.9.0.0"));
    cc::symlink("libcudnn.so.9.0.0", sys.join("libcudnn.so.9"));
    cc::Lib::new("libcudart.so.12")
        .c("#include <stdlib.h>\n__attribute__((constructor)) static void boom(void) { volatile int *p = 0; *p = 1; }")
        .build(&sys.join("libcudart.so.12"));
    cc::Lib::new("libnccl.so.2")
        .c("#include <unistd.h>\n__attribute__((constructor)) static void nap(void) { for (;;) sleep(1000); }")
        .build(&sys.join("libnccl.so.2"));
    cc::Lib::new("libcublas.so.12")
        .c("extern int cublasMissingSymbol(void);\nint cublasUse(void) { return cublasMissingSymbol(); }")
        .arg("-Wl,--allow-shlib-undefined")
        .build(&sys.join("libcublas.so.12"));
    let project = d.join("proj");
    let a = torch_venv(
        &project,
        ".venv",
        "2.4.1+cu121",
        "libcudnn.so.9",
        90100,
        &sys,
        &["libcudart.so.12", "libnccl.so.2", "libcublas.so.12"],
    );
    let b = torch_venv(
        &project,
        "venv",
        "2.1.2+cu121",
        "libcudnn.so.8",
        8904,
        &sys,
        &[],
    );
    let llp = sys.to_str().unwrap().to_string();
    let started = Instant::now();
    let snap = cli::json(
        cli::empty()
            .args([
                "snapshot",
                "--deadline",
                "4",
                "--project",
                project.to_str().unwrap(),
            ])
            .env("LD_LIBRARY_PATH", &llp)
            .env("PATH", "/usr/bin:/bin"),
    );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(7), "took {took:?}");

    let a_py = a.venv.to_str().unwrap();
    let b_py = b.venv.to_str().unwrap();
    let fw_a = snap["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["python"].as_str().unwrap().starts_with(a_py))
        .expect("torch in venv a");
    assert_eq!(fw_a["name"], "torch");
    assert_eq!(fw_a["local_version"], "cu121");
    assert_eq!(fw_a["cuda_version"], "12.1");
    assert_eq!(fw_a["cudnn_major"], 9);
    assert_eq!(fw_a["uses_pip_nvidia"], true);
    assert_eq!(
        fw_a["nvidia_requirements"],
        serde_json::json!(["nvidia-cudnn-cu12==9.1.0.70"])
    );
    assert!(sonames(fw_a).contains(&"libcudnn.so.9".to_string()));

    // a: the system copy on LD_LIBRARY_PATH wins over the pip one, as the real loader says.
    let ca = library(&snap, a_py, "libcudnn.so.9");
    assert_eq!(ca["requester"], a.c_ext.to_str().unwrap());
    assert_eq!(ca["found_via"], "ld-library-path");
    assert_eq!(ca["shadows_framework_copy"], true);
    assert_eq!(
        ca["shadowed_path"],
        a.site
            .join("nvidia/cudnn/lib/libcudnn.so.9")
            .to_str()
            .unwrap()
    );
    // The real loader, asked with a twin of `_C` (same directory, same RUNPATH) that needs only
    // cuDNN: `_C` itself would stop at the crashing and the undefined-symbol libraries.
    let twin = cc::Lib::new("_twin.so")
        .runpath("$ORIGIN/../nvidia/cudnn/lib")
        .needs(&a.site.join("nvidia/cudnn/lib"), ":libcudnn.so.9")
        .build(&a.site.join("torch/_twin.so"));
    let exe = cc::Exe::dlopener().build(&d.join("dlopener"));
    let dbg = cc::ld_debug(
        &exe,
        &[twin.to_str().unwrap()],
        &[("LD_LIBRARY_PATH", &llp)],
        None,
    );
    assert_eq!(
        Some(PathBuf::from(ca["path"].as_str().unwrap())),
        dbg.picked("libcudnn.so.9"),
        "{}",
        dbg.log
    );
    assert_eq!(ca["load"]["status"], "loaded", "{ca:#}");
    assert_eq!(ca["load"]["version"], "9.0.0");
    assert_eq!(ca["load"]["raw_version"], 90000);
    assert_eq!(ca["load"]["version_call"], "cudnnGetVersion");

    // b: its own environment, its own child: the pip cuDNN 8.9.4 through RUNPATH.
    let cb = library(&snap, b_py, "libcudnn.so.8");
    assert_eq!(cb["found_via"], "runpath");
    assert_eq!(cb["shadows_framework_copy"], false);
    let dbg = cc::ld_debug(
        &exe,
        &[b.c_ext.to_str().unwrap()],
        &[("LD_LIBRARY_PATH", &llp)],
        None,
    );
    assert_eq!(
        Some(PathBuf::from(cb["path"].as_str().unwrap())),
        dbg.picked("libcudnn.so.8")
    );
    assert_eq!(cb["load"]["status"], "loaded");
    assert_eq!(cb["load"]["version"], "8.9.4");
    let cand = cb["candidates"].as_array().unwrap();
    assert!(cand
        .iter()
        .any(|c| c["origin"] == "pip-nvidia" && c["wins"] == true));

    // The troublemakers, each a fact.
    let crt = library(&snap, a_py, "libcudart.so.12");
    assert_eq!(crt["load"]["status"], "crashed", "{crt:#}");
    assert_eq!(crt["load"]["signal"], "SIGSEGV");
    let nccl = library(&snap, a_py, "libnccl.so.2");
    assert_eq!(nccl["load"]["status"], "timeout", "{nccl:#}");
    let cublas = library(&snap, a_py, "libcublas.so.12");
    assert_eq!(cublas["load"]["status"], "error");
    assert!(
        cublas["load"]["error"]
            .as_str()
            .unwrap()
            .contains("undefined symbol: cublasMissingSymbol"),
        "{cublas:#}"
    );
}

/// The load child through the library API: versions, a crash and a hang in the middle, and the
/// libraries after them still loaded by fresh children.
#[test]
fn load_child_survives_crashes_and_hangs() {
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let c9 = cc::Lib::new("libcudnn.so.9")
        .returns("cudnnGetVersion", 90100)
        .build(&d.join("a/libcudnn.so.9"));
    let c8 = cc::Lib::new("libcudnn.so.8")
        .returns("cudnnGetVersion", 8904)
        .build(&d.join("b/libcudnn.so.8"));
    let rt = cc::Lib::new("libcudart.so.12")
        .c("int cudaRuntimeGetVersion(int *v) { *v = 12040; return 0; }")
        .build(&d.join("libcudart.so.12"));
    let cupti = cc::Lib::new("libcupti.so.12")
        .c("int cuptiGetVersion(unsigned *v) { *v = 22; return 0; }")
        .build(&d.join("libcupti.so.12"));
    let segv = cc::Lib::new("libcublasLt.so.12")
        .c("__attribute__((constructor)) static void boom(void) { volatile int *p = 0; *p = 1; }")
        .build(&d.join("libcublasLt.so.12"));
    let sleeper = cc::Lib::new("libnccl.so.2")
        .c("#include <unistd.h>\n__attribute__((constructor)) static void nap(void) { for (;;) sleep(1000); }")
        .build(&d.join("libnccl.so.2"));
    let item = |f: &str, p: &Path| Item {
        family: Some(f.to_string()),
        path: p.to_path_buf(),
    };
    let items = vec![
        item("cudnn", &c9),
        item("cublasLt", &segv),
        item("cudart", &rt),
        item("nccl", &sleeper),
        item("cudnn", &c8),
        item("cupti", &cupti),
        item("cudnn", &d.join("missing/libcudnn.so.7")),
    ];
    let started = Instant::now();
    let r = load::load_all(
        Path::new(env!("CARGO_BIN_EXE_envdoctor")),
        &[],
        &items,
        Duration::from_millis(800),
        started + Duration::from_secs(10),
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r[0].status, "loaded");
    assert_eq!(r[0].version.as_deref(), Some("9.1.0"));
    assert_eq!(r[0].raw_version, Some(90100));
    assert_eq!(r[1].status, "crashed");
    assert_eq!(r[1].signal.as_deref(), Some("SIGSEGV"));
    assert_eq!(r[2].version.as_deref(), Some("12.4"));
    assert_eq!(r[3].status, "timeout");
    // A fresh child after the hang: cuDNN 8's encoding, and no reuse of the 9 loaded earlier.
    assert_eq!(r[4].version.as_deref(), Some("8.9.4"));
    // CUPTI loads, and is never called into (cuptiGetVersion crashes without a driver): with
    // no wheel owning the file its version is unknown, and says why.
    assert_eq!(r[5].status, "loaded");
    assert_eq!(r[5].version, None);
    assert!(r[5]
        .version_error
        .as_deref()
        .unwrap()
        .contains("cuptiGetVersion is not called"));
    assert_eq!(r[6].status, "error");
    assert!(r[6]
        .error
        .as_deref()
        .unwrap()
        .contains("cannot open shared object file"));

    // The deadline comes while the sleeper sleeps: it is a timeout, the rest skipped.
    let started = Instant::now();
    let r = load::load_all(
        Path::new(env!("CARGO_BIN_EXE_envdoctor")),
        &[],
        &[item("nccl", &sleeper), item("cudnn", &c9)],
        Duration::from_secs(60),
        started + Duration::from_millis(700),
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(r[0].status, "timeout");
    assert_eq!(r[1].status, "skipped");
}

/// `--pid`: a real process that dlopened a CUDA-named library; its maps say so.
#[test]
fn pid_reads_the_libraries_a_process_really_loaded() {
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path().canonicalize().unwrap();
    let lib = cc::Lib::new("libcudnn.so.9")
        .returns("cudnnGetVersion", 90100)
        .build(&d.join("lib/libcudnn.so.9.1.0"));
    cc::symlink("libcudnn.so.9.1.0", d.join("lib/libcudnn.so.9"));
    let src = d.join("job.c");
    std::fs::write(
        &src,
        "#include <dlfcn.h>\n#include <stdio.h>\n#include <unistd.h>\n\
         int main(int c, char **v) { if (!dlopen(v[1], RTLD_NOW)) return 1; \
         puts(\"ready\"); fflush(stdout); sleep(60); return 0; }\n",
    )
    .unwrap();
    let exe = d.join("job");
    cc::run(
        std::process::Command::new("cc")
            .arg("-o")
            .arg(&exe)
            .arg(&src)
            .arg("-ldl"),
    );
    let mut child = std::process::Command::new(&exe)
        .arg(d.join("lib/libcudnn.so.9"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.id().to_string();
    let snap = cli::json(
        cli::empty()
            .args([
                "snapshot",
                "--no-load",
                "--pid",
                &pid,
                "--project",
                d.to_str().unwrap(),
            ])
            .env("PATH", "/usr/bin:/bin"),
    );
    let _ = child.kill();
    let _ = child.wait();
    let job = &snap["jobs"][0];
    assert_eq!(job["pid"].as_u64().unwrap().to_string(), pid);
    assert_eq!(job["readable"], true);
    assert_eq!(job["exe"], exe.to_str().unwrap());
    assert_eq!(
        job["loaded"],
        serde_json::json!([lib.to_str().unwrap()]),
        "{job:#}"
    );
    assert_eq!(job["compared"][0]["soname"], "libcudnn.so.9");

    // A pid that does not exist is a probe error, not a failure.
    let snap = cli::json(
        cli::empty()
            .args([
                "snapshot",
                "--no-load",
                "--pid",
                "999999999",
                "--project",
                d.to_str().unwrap(),
            ])
            .env("PATH", "/usr/bin:/bin"),
    );
    assert_eq!(snap["jobs"][0]["readable"], false);
    assert!(snap["probe_errors"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["probe"] == "libs" && e["path"] == "/proc/999999999/maps"));
}

// ---------------------------------------------------------------------------------------------
// A real NVIDIA wheel from PyPI (skipped without network unless ENVDOCTOR_REQUIRE_PYPI is set).

/// A venv with `nvidia-cuda-runtime-cu12` from PyPI; returns (tempdir, venv, wheel version).
fn cudart_venv() -> Result<(tempfile::TempDir, PathBuf, String), String> {
    let t = tempfile::tempdir().map_err(|e| e.to_string())?;
    let venv = t
        .path()
        .canonicalize()
        .map_err(|e| e.to_string())?
        .join(".venv");
    run(std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv))?;
    let py = venv.join("bin/python");
    run(std::process::Command::new(&py).args([
        "-m",
        "pip",
        "--disable-pip-version-check",
        "--no-input",
        "-q",
        "install",
        "--timeout",
        "30",
        "nvidia-cuda-runtime-cu12",
    ]))?;
    let version = run(std::process::Command::new(&py).args([
        "-c",
        "import importlib.metadata as m; print(m.version('nvidia-cuda-runtime-cu12'))",
    ]))?;
    Ok((t, venv, version.trim().to_string()))
}

/// Add a torch-like package that names CUDA 12 to `venv`, so the CUDA family is resolved in
/// it; returns the wheel's `nvidia/cuda_runtime/lib`.
fn torch_like(venv: &Path) -> PathBuf {
    let site = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages");
    let dist = site.join("torch-2.4.1.dist-info");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.1\nRequires-Dist: nvidia-cuda-runtime-cu12\n",
    )
    .unwrap();
    std::fs::write(dist.join("RECORD"), "").unwrap();
    std::fs::create_dir_all(site.join("torch")).unwrap();
    std::fs::write(site.join("torch/version.py"), "cuda = '12.4'\n").unwrap();
    site.join("nvidia/cuda_runtime/lib")
}

/// The real libcudart from NVIDIA's wheel, loaded by the load child: `cudaRuntimeGetVersion`
/// says the wheel's CUDA major.minor.
#[test]
fn pypi_cudart_wheel_version_from_the_load_probe() {
    let Some((t, venv, wheel)) = need("nvidia-cuda-runtime-cu12 venv", cudart_venv()) else {
        return;
    };
    let pip_dir = torch_like(&venv);
    let snap = cli::json(
        cli::empty()
            .args([
                "snapshot",
                "--project",
                t.path().canonicalize().unwrap().to_str().unwrap(),
            ])
            .env("LD_LIBRARY_PATH", pip_dir.to_str().unwrap())
            .env("PATH", "/usr/bin:/bin"),
    );
    let l = library(&snap, venv.to_str().unwrap(), "libcudart.so.12");
    assert_eq!(l["resolves"], true, "{l:#}");
    assert_eq!(l["reason"], "cuda-family");
    assert_eq!(l["load"]["status"], "loaded", "{l:#}");
    // The version is read from the owning wheel, without calling into the library...
    let want: Vec<&str> = wheel.split('.').take(2).collect();
    assert_eq!(l["load"]["version"], want.join("."), "wheel {wheel}: {l:#}");
    assert!(
        l["load"]["version_source"]
            .as_str()
            .unwrap()
            .starts_with("dist-info nvidia_cuda_runtime_cu12"),
        "{l:#}"
    );
    // ...and it is what the library itself says: a copy outside the wheel (no dist-info owns
    // it) is asked through cudaRuntimeGetVersion.
    let copy = t.path().join("copy/libcudart.so.12");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(pip_dir.join("libcudart.so.12"), &copy).unwrap();
    let r = load::load_all(
        Path::new(env!("CARGO_BIN_EXE_envdoctor")),
        &[],
        &[Item {
            family: Some("cudart".into()),
            path: copy,
        }],
        Duration::from_secs(5),
        Instant::now() + Duration::from_secs(10),
    );
    assert_eq!(r[0].version_call.as_deref(), Some("cudaRuntimeGetVersion"));
    assert_eq!(r[0].version_source.as_deref(), Some("call"));
    assert_eq!(r[0].version.as_deref(), Some(want.join(".").as_str()));
}

/// TF 2.2 (CUDA 10.1, no cuda_config.h: sonames derived from build_info.py) on the CUPTI-link
/// fixture: `libcupti.so.10.1` resolves, through a link whose name lies about its target.
#[test]
fn tf22_cupti_link_claims_another_version() {
    let t = tempfile::tempdir().unwrap();
    let m = t.path().canonicalize().unwrap().join("m");
    copy_tree(&fixture_dir("lib-cupti-link"), &m);
    cc::Lib::new("libcupti.so.10.2")
        .build(&m.join("usr/local/cuda-10.2/extras/CUPTI/lib64/libcupti.so.10.2.75"));
    // A Debian python 3.8 with tensorflow 2.2.0 (files in the shape TF 2.2's wheel ships).
    let site = debian_python(&m, "3.8", &[("tensorflow", "2.2.0")]);
    std::fs::create_dir_all(site.join("tensorflow/python/platform")).unwrap();
    std::fs::write(
        site.join("tensorflow/python/platform/build_info.py"),
        "is_rocm_build = False\nis_cuda_build = True\ncuda_version_number = '10.1'\ncudnn_version_number = '7'\n",
    )
    .unwrap();
    let snap = cli::json(
        cli::empty()
            .args(["snapshot", "--root", m.to_str().unwrap()])
            .env("LD_LIBRARY_PATH", "/usr/local/cuda/extras/CUPTI/lib64"),
    );
    let tf = &snap["frameworks"][0];
    assert_eq!(tf["version"], "2.2.0");
    assert_eq!(tf["cuda_version"], "10.1");
    assert_eq!(tf["cudnn_major"], 7);
    let wants = sonames(tf);
    for s in ["libcudart.so.10.1", "libcupti.so.10.1", "libcudnn.so.7"] {
        assert!(wants.contains(&s.to_string()), "{s}: {wants:?}");
    }
    let l = library(&snap, "/usr/bin/python3.8", "libcupti.so.10.1");
    assert_eq!(l["resolves"], true);
    assert_eq!(l["found_via"], "ld-library-path");
    assert_eq!(l["name_version"], "10.1");
    assert_eq!(l["file_version"], "10.2.75");
    assert_eq!(l["version_mismatch"], true);
    assert_eq!(l["elf"]["soname"], "libcupti.so.10.2");
    // The soname the file really carries.
    assert_eq!(l["major"], 10);
    assert_eq!(l["chain"].as_array().unwrap().len(), 2, "{l:#}");
}

/// A symbol version the requester needs that the winning copy does not define is on record
/// (`version 'CUDNN_9.1' not found` at import), and the real loader agrees it fails.
#[test]
fn missing_symbol_versions_of_the_winning_copy() {
    if !cc::have_cc() || !python3_ok() {
        eprintln!("SKIPPED: needs cc and python3");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path().canonicalize().unwrap();
    let sys = d.join("sys/lib64");
    cc::Lib::new("libcudnn.so.9")
        .defines_versions(&["CUDNN_9.0"])
        .build(&sys.join("libcudnn.so.9"));
    let project = d.join("proj");
    let v = torch_venv(
        &project,
        ".venv",
        "2.4.1",
        "libcudnn.so.9",
        90100,
        &sys,
        &[],
    );
    // The pip copy defines CUDNN_9.1 and _C uses it; rebuild both.
    let pip = v.site.join("nvidia/cudnn/lib");
    cc::Lib::new("libcudnn.so.9")
        .defines_versions(&["CUDNN_9.0", "CUDNN_9.1"])
        .build(&pip.join("libcudnn.so.9"));
    cc::Lib::new("_C.so")
        .runpath("$ORIGIN/../nvidia/cudnn/lib")
        .c("extern int envdoctor_v1(void);\nint use_it(void) { return envdoctor_v1(); }")
        .needs(&pip, ":libcudnn.so.9")
        .build(&v.c_ext);
    let llp = sys.to_str().unwrap();
    let snap = static_snapshot(&project, Some(llp));
    let l = library(&snap, v.venv.to_str().unwrap(), "libcudnn.so.9");
    assert_eq!(l["path"], sys.join("libcudnn.so.9").to_str().unwrap());
    assert_eq!(
        l["missing_symbol_versions"],
        serde_json::json!(["libcudnn.so.9:CUDNN_9.1"])
    );
    assert_eq!(l["shadows_framework_copy"], true);
    let exe = cc::Exe::dlopener().build(&d.join("dlopener"));
    let out = cc::ld_debug(
        &exe,
        &[v.c_ext.to_str().unwrap()],
        &[("LD_LIBRARY_PATH", llp)],
        None,
    );
    assert!(
        out.stdout.contains("version `CUDNN_9.1' not found"),
        "{}",
        out.stdout
    );
    // Without LD_LIBRARY_PATH the pip copy wins and nothing is missing.
    let snap = static_snapshot(&project, None);
    let l = library(&snap, v.venv.to_str().unwrap(), "libcudnn.so.9");
    assert_eq!(l["found_via"], "runpath");
    assert!(l.get("missing_symbol_versions").is_none(), "{l:#}");
}

/// Bad input is a probe error naming the file, never a failure: a torch whose `_C` is not ELF,
/// a `torch/lib` entry that is a symlink loop, a `build_info.py` that is not text we know.
#[test]
fn corrupt_entry_points_are_probe_errors() {
    let t = tempfile::tempdir().unwrap();
    let m = t.path().canonicalize().unwrap().join("m");
    let site = debian_python(&m, "3.11", &[("torch", "2.4.1")]);
    std::fs::create_dir_all(site.join("torch/lib")).unwrap();
    std::fs::write(site.join("torch/version.py"), [0xff, 0xfe, 0x00, 0x01]).unwrap();
    std::fs::write(
        site.join("torch/_C.cpython-311-x86_64-linux-gnu.so"),
        b"\x7fELF garbage",
    )
    .unwrap();
    cc::symlink("libloop.so", site.join("torch/lib/libloop.so"));
    let snap = cli::json(cli::empty().args(["snapshot", "--root", m.to_str().unwrap()]));
    let fw = &snap["frameworks"][0];
    assert_eq!(fw["name"], "torch");
    let errs: Vec<(String, String)> = snap["probe_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["probe"] == "libs")
        .map(|e| {
            (
                e["path"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let torch = "/usr/local/lib/python3.11/dist-packages/torch";
    assert!(
        errs.iter()
            .any(|(p, _)| p == &format!("{torch}/_C.cpython-311-x86_64-linux-gnu.so")),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|(p, _)| p == &format!("{torch}/lib/libloop.so")),
        "{errs:#?}"
    );
}

/// knowledge.md B23: pip's cuSPARSE needs `__nvJitLinkComplete_12_4` from `libnvJitLink.so.12`;
/// an older system copy on LD_LIBRARY_PATH wins and lacks it. The emulation names the missing
/// symbol; the real loader fails with exactly that undefined symbol.
#[test]
fn old_nvjitlink_on_ld_library_path_misses_a_symbol() {
    if !cc::have_cc() || !python3_ok() {
        eprintln!("SKIPPED: needs cc and python3");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path().canonicalize().unwrap();
    let jit = |dir: &Path, syms: &[&str]| {
        let map = d.join(format!("jit{}.map", syms.len()));
        std::fs::write(
            &map,
            format!(
                "libnvJitLink.so.12 {{ global: {}; local: *; }};\n",
                syms.join("; ")
            ),
        )
        .unwrap();
        let code: String = syms
            .iter()
            .map(|s| format!("int {s}(void) {{ return 0; }}\n"))
            .collect();
        cc::Lib::new("libnvJitLink.so.12")
            .c(&code)
            .arg(format!("-Wl,--version-script={}", map.display()))
            .build(&dir.join("libnvJitLink.so.12"))
    };
    let sys = d.join("cuda-12.1/lib64");
    jit(&sys, &["__nvJitLinkCreate_12_1"]);
    let project = d.join("proj");
    let v = torch_venv(
        &project,
        ".venv",
        "2.5.1",
        "libcudnn.so.9",
        90100,
        &sys,
        &[],
    );
    let pip_jit = v.site.join("nvidia/nvjitlink/lib");
    jit(
        &pip_jit,
        &["__nvJitLinkCreate_12_1", "__nvJitLinkComplete_12_4"],
    );
    let pip_sparse = v.site.join("nvidia/cusparse/lib");
    cc::Lib::new("libcusparse.so.12")
        .runpath("$ORIGIN/../../nvjitlink/lib")
        .c("extern int __nvJitLinkComplete_12_4(void);\nint cusparseUse(void) { return __nvJitLinkComplete_12_4(); }")
        .needs(&pip_jit, ":libnvJitLink.so.12")
        .build(&pip_sparse.join("libcusparse.so.12"));
    cc::Lib::new("_C.so")
        .runpath("$ORIGIN/../nvidia/cusparse/lib")
        .needs(&pip_sparse, ":libcusparse.so.12")
        .build(&v.c_ext);
    let llp = sys.to_str().unwrap();
    let snap = static_snapshot(&project, Some(llp));
    let venv = v.venv.to_str().unwrap();
    let sparse = library(&snap, venv, "libcusparse.so.12");
    assert_eq!(sparse["found_via"], "runpath");
    assert_eq!(
        sparse["missing_symbols"],
        serde_json::json!(["libnvJitLink.so.12:__nvJitLinkComplete_12_4@libnvJitLink.so.12"]),
        "{sparse:#}"
    );
    let j = library(&snap, venv, "libnvJitLink.so.12");
    // Resolved as cuSPARSE's own DT_NEEDED (its RUNPATH does not apply: LD_LIBRARY_PATH wins).
    assert_eq!(j["reason"], "transitive");
    assert!(j["requester"]
        .as_str()
        .unwrap()
        .ends_with("libcusparse.so.12"));
    assert_eq!(j["found_via"], "ld-library-path");
    assert_eq!(j["shadows_framework_copy"], true);
    assert_eq!(
        j["shadowed_path"],
        pip_jit.join("libnvJitLink.so.12").to_str().unwrap()
    );
    let exe = cc::Exe::dlopener().build(&d.join("dlopener"));
    let out = cc::ld_debug(
        &exe,
        &[v.c_ext.to_str().unwrap()],
        &[("LD_LIBRARY_PATH", llp)],
        None,
    );
    assert!(
        out.stdout
            .contains("undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12"),
        "{}",
        out.stdout
    );
}

/// The load cache with the real libcudart from PyPI: an unchanged environment reuses the
/// earlier run's result without starting a child; a rewritten library, or `--no-load-cache`,
/// loads again.
#[test]
fn load_results_are_reused_until_a_library_file_changes() {
    let Some((t, venv, _)) = need("nvidia-cuda-runtime-cu12 venv", cudart_venv()) else {
        return;
    };
    let pip_dir = torch_like(&venv);
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let project = t.path().canonicalize().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["snapshot", "--project", project.to_str().unwrap()];
        args.extend_from_slice(extra);
        let snap = cli::json(
            cli::empty()
                .args(&args)
                .env("LD_LIBRARY_PATH", pip_dir.to_str().unwrap())
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", home.to_str().unwrap()),
        );
        library(&snap, venv.to_str().unwrap(), "libcudart.so.12")["load"].clone()
    };
    let first = run(&[]);
    assert_eq!(first["status"], "loaded", "{first:#}");
    assert!(first.get("from_cache").is_none(), "{first:#}");
    assert!(home.join(".cache/envdoctor/load-v2").is_dir());
    let second = run(&[]);
    assert_eq!(second["from_cache"], true, "{second:#}");
    let mut same = second.clone();
    same.as_object_mut().unwrap().remove("from_cache");
    assert_eq!(same, first);
    assert!(run(&["--no-load-cache"]).get("from_cache").is_none());
    // The same bytes written again: a new mtime/ctime, so a new load.
    let lib = pip_dir.join("libcudart.so.12");
    let real = std::fs::canonicalize(&lib).unwrap();
    let bytes = std::fs::read(&real).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&real, bytes).unwrap();
    let after = run(&[]);
    assert_eq!(after["status"], "loaded", "{after:#}");
    assert!(after.get("from_cache").is_none(), "{after:#}");
}
