//! Calibrated verdicts (issue 12) on real files: each calibration has a case that fires and a
//! twin that stays quiet, with the facts coming from the real probes.
//!
//! - `--expect-gpu` / `ENVDOCTOR_EXPECT_GPU`: a CPU-only runner checking a GPU image gets the
//!   missing CUDA libraries as errors; without it the same machine stays quiet about them.
//! - CUPTI (profiler only): missing is `profiler-library-not-found` (info) unless profiling is
//!   configured (`--expect profiler`, `KINETO_USE_DAEMON`), then an error; on the loader path,
//!   nothing.
//! - A CUDA toolkit reachable only through `LD_LIBRARY_PATH` (HPC `module load cuda/11.1`) is a
//!   toolkit, so the TF 2.4 / CUDA 11.1 rule sees it; CUDA 11.0 there is the quiet twin.
//! - Families: `intel-tensorflow` is TensorFlow to the pack.
//! - IDE drift outside the ML packages is an info with a count.
//! - Real `nvidia-*` wheels from PyPI: every library file of theirs is in `cuda.inventory` with
//!   the owning distribution; fresh, numpy/h5py and nvidia-wheel venvs get no error or warning.
//!
//! Libraries are compiled with `cc` (real sonames); interpreters are stand-ins never run.

use crate::common::cc;
use crate::common::machine;
use crate::common::pypi;

use assert_cmd::Command;
use machine::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The TF 2.4 / CUDA 11.1 field-report machine with its libraries compiled, copied under a
/// temp dir; `toolkit` is where the CUDA 11.1 toolkit ends up (`/usr/local/cuda-11.1` as in
/// the report, or elsewhere with `/usr/local/cuda` and its ld.so.conf entry removed).
fn tf24_machine(toolkit: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let m = t.path().canonicalize().unwrap().join("m");
    copy_tree(&repo("fixtures/machines/lib-cuda111-cusolver"), &m);
    let tk = m.join(toolkit.trim_start_matches('/'));
    if toolkit != "/usr/local/cuda-11.1" {
        std::fs::create_dir_all(tk.parent().unwrap()).unwrap();
        std::fs::rename(m.join("usr/local/cuda-11.1"), &tk).unwrap();
        std::fs::remove_file(m.join("usr/local/cuda")).unwrap();
        std::fs::remove_file(m.join("etc/ld.so.conf.d/cuda.conf")).unwrap();
    }
    let lib64 = tk.join("lib64");
    cc::Lib::new("libcusolver.so.11").build(&lib64.join("libcusolver.so.11.0.1.105"));
    cc::Lib::new("libcudart.so.11.0").build(&lib64.join("libcudart.so.11.1.74"));
    cc::Lib::new("libcublas.so.11").build(&lib64.join("libcublas.so.11.3.0.106"));
    cc::Lib::new("libcuda.so.1").build(&m.join("usr/lib/x86_64-linux-gnu/libcuda.so.455.23.05"));
    (t, m)
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
    v.extend(
        pairs
            .iter()
            .map(|(k, val)| (k.to_string(), val.to_string())),
    );
    v
}

fn sonames(report: &Value, rule: &str) -> Vec<String> {
    findings_of(report, rule)
        .iter()
        .map(|f| f["subject"].as_str().unwrap_or("").to_string())
        .collect()
}

fn about(subjects: &[String], soname: &str) -> bool {
    subjects.iter().any(|s| s.contains(&format!("[{soname} @")))
}

#[test]
fn expect_gpu_makes_missing_cuda_libraries_errors_on_a_cpu_runner() {
    if !cc::have_cc() {
        eprintln!("SKIPPED: no cc");
        return;
    }
    let (_t, m) = tf24_machine("/usr/local/cuda-11.1");
    let ld = env(&[("LD_LIBRARY_PATH", "/usr/local/cuda/lib64")]);

    // No GPU, nothing expected: TF falls back to the CPU, missing libraries are not reported.
    let (_, quiet) = check_root(&m, &ld, &[]);
    assert!(sonames(&quiet, "cuda-library-not-found").is_empty());
    assert!(sonames(&quiet, "profiler-library-not-found").is_empty());

    // The same machine gating a GPU image: the flag and its variable.
    for (extra, vars) in [
        (vec!["--expect-gpu"], ld.clone()),
        (vec!["--expect", "gpu"], ld.clone()),
        (
            vec![],
            env(&[
                ("LD_LIBRARY_PATH", "/usr/local/cuda/lib64"),
                ("ENVDOCTOR_EXPECT_GPU", "1"),
            ]),
        ),
    ] {
        let (code, report) = check_root(&m, &vars, &extra);
        assert_eq!(code, 1);
        let missing = sonames(&report, "cuda-library-not-found");
        assert!(
            about(&missing, "libcusolver.so.10"),
            "{extra:?}: {missing:?}"
        );
        assert!(about(&missing, "libcudnn.so.8"), "{missing:?}");
        // What resolves is not reported.
        assert!(!about(&missing, "libcudart.so.11.0"), "{missing:?}");
        // CUPTI is the profiler's: info, not error.
        assert!(!about(&missing, "libcupti.so.11.0"), "{missing:?}");
        let prof = fired(&report, "profiler-library-not-found");
        assert_eq!(prof["severity"], "info");
        assert!(prof["message"]
            .as_str()
            .unwrap()
            .contains("libcupti.so.11.0"));
        assert_eq!(report["snapshot"]["expect"]["gpu"], true);
    }

    // A GPU image checked on a runner without the driver: libcuda.so.1 comes from the GPU host
    // at run time, so its absence is not the image's fault; the toolkit's gaps still are.
    std::fs::remove_file(m.join("usr/lib/x86_64-linux-gnu/libcuda.so.455.23.05")).unwrap();
    let (_, report) = check_root(&m, &ld, &["--expect-gpu"]);
    let missing = sonames(&report, "cuda-library-not-found");
    assert!(!about(&missing, "libcuda.so.1"), "{missing:?}");
    assert!(about(&missing, "libcusolver.so.10"), "{missing:?}");
}

#[test]
fn a_missing_cupti_is_an_error_only_when_profiling_is_configured() {
    if !cc::have_cc() {
        eprintln!("SKIPPED: no cc");
        return;
    }
    let (_t, m) = tf24_machine("/usr/local/cuda-11.1");
    for (extra, vars) in [
        (
            vec!["--expect-gpu", "--expect", "profiler"],
            env(&[("LD_LIBRARY_PATH", "/usr/local/cuda/lib64")]),
        ),
        (
            vec!["--expect-gpu"],
            env(&[
                ("LD_LIBRARY_PATH", "/usr/local/cuda/lib64"),
                ("KINETO_USE_DAEMON", "1"),
            ]),
        ),
    ] {
        let (_, report) = check_root(&m, &vars, &extra);
        assert!(
            about(
                &sonames(&report, "cuda-library-not-found"),
                "libcupti.so.11.0"
            ),
            "{extra:?}"
        );
        assert!(sonames(&report, "profiler-library-not-found").is_empty());
        assert_eq!(report["snapshot"]["expect"]["profiler"], true);
    }

    // Quiet twin: the toolkit's CUPTI (the soname TF asks for) on the loader path.
    cc::Lib::new("libcupti.so.11.0").build(
        &m.join("usr/local/cuda-11.1/extras/CUPTI/lib64")
            .join("libcupti.so.11.0"),
    );
    let vars = env(&[(
        "LD_LIBRARY_PATH",
        "/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64",
    )]);
    let (_, report) = check_root(&m, &vars, &["--expect-gpu", "--expect", "profiler"]);
    assert!(!about(
        &sonames(&report, "cuda-library-not-found"),
        "libcupti.so.11.0"
    ));
    assert!(sonames(&report, "profiler-library-not-found").is_empty());
    // And the inventory has it, found through LD_LIBRARY_PATH and the toolkit.
    let inv = report["snapshot"]["cuda"]["inventory"].as_array().unwrap();
    let cupti = inv
        .iter()
        .find(|e| e["family"] == "cupti")
        .expect("cupti in the inventory");
    let via: Vec<&str> = cupti["found_via"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(via.contains(&"ld-library-path"), "{via:?}");
    assert!(via.contains(&"toolkit:/usr/local/cuda-11.1"), "{via:?}");
}

#[test]
fn a_toolkit_only_on_ld_library_path_is_a_toolkit() {
    if !cc::have_cc() {
        eprintln!("SKIPPED: no cc");
        return;
    }
    // HPC: `module load cuda/11.1` puts /apps/cuda/11.1/lib64 on LD_LIBRARY_PATH; nothing
    // under /usr/local.
    let (_t, m) = tf24_machine("/apps/cuda/11.1");
    let vars = env(&[("LD_LIBRARY_PATH", "/apps/cuda/11.1/lib64")]);
    let (code, report) = check_root(&m, &vars, &[]);
    assert_eq!(code, 1);
    let tks = report["snapshot"]["cuda"]["toolkits"].as_array().unwrap();
    assert_eq!(tks.len(), 1, "{tks:#?}");
    assert_eq!(tks[0]["path"], "/apps/cuda/11.1");
    assert_eq!(tks[0]["source"], "LD_LIBRARY_PATH");
    assert_eq!(tks[0]["version"], "11.1.1");
    let f = fired(&report, "tf24-cusolver-10-on-cuda-11-1");
    assert!(
        f["message"].as_str().unwrap().contains("/apps/cuda/11.1"),
        "{f:#}"
    );
    let inv = report["snapshot"]["cuda"]["inventory"].as_array().unwrap();
    let cusolver = inv
        .iter()
        .find(|e| e["family"] == "cusolver")
        .expect("cusolver in the inventory");
    assert_eq!(cusolver["version"], "11.0.1.105");
    assert_eq!(
        cusolver["path"],
        "/apps/cuda/11.1/lib64/libcusolver.so.11.0.1.105"
    );

    // Quiet twin: CUDA 11.0 there, which ships the libcusolver.so.10 TF 2.4 asks for.
    let (_t0, m0) = tf24_machine("/apps/cuda/11.0");
    std::fs::write(
        m0.join("apps/cuda/11.0/version.json"),
        r#"{"cuda": {"name": "CUDA SDK", "version": "11.0.3"}}"#,
    )
    .unwrap();
    let lib64 = m0.join("apps/cuda/11.0/lib64");
    for f in [
        "libcusolver.so.11",
        "libcusolver.so",
        "libcusolver.so.11.0.1.105",
    ] {
        std::fs::remove_file(lib64.join(f)).unwrap();
    }
    cc::Lib::new("libcusolver.so.10").build(&lib64.join("libcusolver.so.10.6.0.245"));
    cc::symlink("libcusolver.so.10.6.0.245", lib64.join("libcusolver.so.10"));
    let vars = env(&[("LD_LIBRARY_PATH", "/apps/cuda/11.0/lib64")]);
    let (_, report) = check_root(&m0, &vars, &[]);
    assert_eq!(
        report["snapshot"]["cuda"]["toolkits"][0]["version"], "11.0.3",
        "the twin's toolkit is recognised too"
    );
    assert!(findings_of(&report, "tf24-cusolver-10-on-cuda-11-1").is_empty());
}

#[test]
fn family_makes_intel_tensorflow_tensorflow() {
    let mut m = Machine::new();
    m.venv(
        "3.8",
        "/opt/venv",
        &[("intel-tensorflow", "2.3.1"), ("h5py", "3.1.0")],
    );
    m.env("PATH", "/opt/venv/bin:/usr/bin:/bin");
    let (_, report) = m.check(&[]);
    let pkgs = report["snapshot"]["pythons"][0]["packages"]
        .as_array()
        .unwrap();
    let tf = pkgs
        .iter()
        .find(|p| p["name"] == "intel-tensorflow")
        .unwrap();
    assert_eq!(tf["family"], "tensorflow");
    let msg = fired(&report, "h5py3-with-old-keras")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("intel-tensorflow 2.3.1"), "{msg}");

    let mut twin = Machine::new();
    twin.venv(
        "3.8",
        "/opt/venv",
        &[("intel-tensorflow", "2.5.0"), ("h5py", "3.1.0")],
    );
    twin.env("PATH", "/opt/venv/bin:/usr/bin:/bin");
    let (_, report) = twin.check(&[]);
    assert!(findings_of(&report, "h5py3-with-old-keras").is_empty());
}

#[test]
fn ide_drift_outside_ml_packages_is_an_info_with_a_count() {
    let kernel = |m: &Machine| {
        m.write(
            "/home/u/.local/share/jupyter/kernels/old/kernel.json",
            r#"{"argv": ["/home/u/old/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "old", "language": "python"}"#,
        );
    };
    let mut m = Machine::new();
    m.venv(
        "3.11",
        "/home/u/old",
        &[("torch", "2.4.0"), ("requests", "2.31.0"), ("idna", "3.6")],
    );
    m.venv(
        "3.11",
        "/opt/venv",
        &[
            ("torch", "2.4.0"),
            ("requests", "2.32.3"),
            ("idna", "3.7"),
            ("six", "1.16.0"),
        ],
    );
    m.env("PATH", "/opt/venv/bin:/usr/bin:/bin")
        .env("HOME", "/home/u");
    kernel(&m);
    let (_, report) = m.check(&[]);
    let pythons = report["snapshot"]["pythons"].as_array().unwrap();
    let ide = pythons
        .iter()
        .find(|p| p["path"] == "/home/u/old/bin/python")
        .unwrap();
    assert_eq!(ide["roles"], serde_json::json!(["ide"]));
    let shell = pythons
        .iter()
        .find(|p| p["path"] == "/opt/venv/bin/python")
        .unwrap();
    assert_eq!(shell["roles"], serde_json::json!(["job", "shell"]));
    let f = fired(&report, "ide-interpreter-other-packages-differ");
    assert_eq!(f["severity"], "info");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("3 packages") && msg.contains("idna, requests, six"),
        "{msg}"
    );
    assert!(findings_of(&report, "ide-interpreter-package-differs").is_empty());
    assert!(findings_of(&report, "ide-interpreter-package-missing").is_empty());

    // An ML package differing is the warning.
    let mut ml = Machine::new();
    ml.venv("3.11", "/home/u/old", &[("torch", "2.3.0")]);
    ml.venv("3.11", "/opt/venv", &[("torch", "2.4.0")]);
    ml.env("PATH", "/opt/venv/bin:/usr/bin:/bin")
        .env("HOME", "/home/u");
    kernel(&ml);
    let (_, report) = ml.check(&[]);
    let msg = fired(&report, "ide-interpreter-package-differs")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("torch 2.3.0") && msg.contains("torch 2.4.0"),
        "{msg}"
    );
    assert!(findings_of(&report, "ide-interpreter-other-packages-differ").is_empty());
}

/// `envdoctor check --format json --no-load` on this host, with `PATH` = the venv's `bin`
/// first and a private HOME: (exit code, report).
fn check_host_venv(venv: &Path, home: &Path, extra: &[&str]) -> (i32, Value) {
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", venv.join("bin").display()),
        )
        .env("VIRTUAL_ENV", venv)
        .env("HOME", home)
        .current_dir(home)
        .args(["check", "--format", "json", "--no-load"])
        .args(extra);
    let out = cmd.output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), report)
}

/// Errors and warnings about this venv (subjects or messages naming it).
fn loud_about(report: &Value, venv: &Path) -> Vec<String> {
    let v = venv.to_string_lossy();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .filter(|f| {
            f["subject"].as_str().unwrap_or("").contains(v.as_ref())
                || f["message"].as_str().unwrap_or("").contains(v.as_ref())
        })
        .map(|f| format!("{} {}: {}", f["severity"], f["rule"], f["message"]))
        .collect()
}

#[test]
fn fresh_and_numpy_h5py_venvs_are_quiet() {
    let home = tempfile::tempdir().unwrap();
    let fresh = home.path().join("fresh");
    let made = pypi::run(
        std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&fresh),
    );
    let Some(_) = pypi::need("a fresh venv", made) else {
        return;
    };
    let (_, report) = check_host_venv(&fresh, home.path(), &[]);
    assert_eq!(loud_about(&report, &fresh), Vec::<String>::new());
    let py = report["snapshot"]["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"].as_str() == fresh.join("bin/python").to_str())
        .expect("the venv is probed");
    let roles: Vec<&str> = py["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        roles.contains(&"job") && roles.contains(&"shell"),
        "{roles:?}"
    );

    let Some(venv) = pypi::need(
        "numpy/h5py venv",
        pypi::cached_venv(&["numpy==2.1.3", "h5py==3.12.1"]),
    ) else {
        return;
    };
    let (_, report) = check_host_venv(&venv, home.path(), &[]);
    assert_eq!(loud_about(&report, &venv), Vec::<String>::new());
    // Expecting a GPU changes nothing here: no framework asks for a GPU library.
    let (_, report) = check_host_venv(&venv, home.path(), &["--expect-gpu"]);
    assert_eq!(loud_about(&report, &venv), Vec::<String>::new());
}

#[test]
fn nvidia_wheels_are_in_the_inventory_with_their_distribution() {
    let Some(venv) = pypi::need(
        "nvidia-* wheels",
        pypi::cached_venv(&[
            "nvidia-cuda-cupti-cu12==12.4.127",
            "nvidia-cuda-runtime-cu12==12.4.127",
        ]),
    ) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let (_, report) = check_host_venv(&venv, home.path(), &[]);
    assert_eq!(loud_about(&report, &venv), Vec::<String>::new());
    let py = venv.join("bin/python").to_string_lossy().into_owned();
    let inv: Vec<&Value> = report["snapshot"]["cuda"]["inventory"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["python"] == py.as_str())
        .collect();
    // The real files of the wheels, found by walking site-packages/nvidia/*/lib.
    let site = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages/nvidia");
    let mut on_disk: Vec<String> = Vec::new();
    for pkg in std::fs::read_dir(&site).unwrap() {
        let lib = pkg.unwrap().path().join("lib");
        for f in std::fs::read_dir(&lib).into_iter().flatten() {
            let f = f.unwrap().path();
            let n = f.file_name().unwrap().to_string_lossy().into_owned();
            if n.starts_with("libcupti.so") || n.starts_with("libcudart.so") {
                on_disk.push(f.canonicalize().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    on_disk.sort();
    let mut listed: Vec<String> = inv
        .iter()
        .filter(|e| e["family"] == "cupti" || e["family"] == "cudart")
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    assert!(!on_disk.is_empty());
    assert_eq!(listed, on_disk);
    let cupti = inv.iter().find(|e| e["family"] == "cupti").unwrap();
    assert_eq!(cupti["wheel"], "nvidia-cuda-cupti-cu12 12.4.127");
    assert_eq!(cupti["found_via"], serde_json::json!(["pip-wheel"]));
    assert_eq!(cupti["version"], "12");
    let cudart = inv.iter().find(|e| e["family"] == "cudart").unwrap();
    assert_eq!(cudart["wheel"], "nvidia-cuda-runtime-cu12 12.4.127");
}

#[test]
fn bad_expectations_are_bad_cli_input() {
    let m = Machine::new();
    for (extra, vars) in [
        (vec!["--expect", "tpu"], env(&[])),
        (vec![], env(&[("ENVDOCTOR_EXPECT_GPU", "maybe")])),
    ] {
        let mut cmd = Command::cargo_bin("envdoctor").unwrap();
        cmd.env_clear()
            .args(["check", "--no-load", "--root"])
            .arg(m.root())
            .args(&extra);
        for (k, v) in &vars {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?} {vars:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("expect"), "{err}");
    }
}

#[test]
fn rules_lint_warns_on_unquoted_versions_that_yaml_turns_into_other_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let rule = |version: &str| {
        format!(
            "rules:\n  - id: team-cuda-12-10\n    title: t\n    severity: warning\n    scope: machine\n    \
             when: {{fact: cuda.toolkits, cast: length, gte: 1}}\n    \
             message: \"{{{{cuda.default_toolkit}}}}\"\n    fix: f\n    \
             references: [https://example.org/issue/1]\n    tests:\n      \
             - name: fires\n        facts: {{cuda: {{toolkits: [{{path: /c, source: x, version: {version}}}]}}}}\n        expect: fire\n      \
             - name: quiet\n        facts: {{cuda: {{toolkits: []}}}}\n        expect: quiet\n"
        )
    };
    let lint = |text: &str| {
        let f = dir.path().join("team.yaml");
        std::fs::write(&f, text).unwrap();
        let out = Command::cargo_bin("envdoctor")
            .unwrap()
            .args(["rules", "lint"])
            .arg(&f)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, text) = lint(&rule("12.10"));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("team.yaml:12:") && text.contains("`12.10`") && text.contains("12.1;"),
        "{text}"
    );
    let (code, text) = lint(&rule("\"12.10\""));
    assert_eq!(code, Some(0), "{text}");
}
