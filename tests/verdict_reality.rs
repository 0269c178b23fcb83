//! The verdict against the real import (issue 24), on real venvs from PyPI, on this GPU-less
//! machine: what `check` says (with the load probe on) is what `import torch` and a first
//! tensor do.
//!
//! - When each library is needed: every library `check` says is needed at import is mapped by a
//!   real `import torch; torch.zeros(1)`, and the objects torch loads on first use
//!   (`libcaffe2_nvrtc.so`, `libtorch_cuda_linalg.so`) are not.
//! - A stock CUDA torch on a CPU box: no error and no warning; with `--expect-gpu`, exactly one
//!   error; the summary's torch row is ✓ in both.
//! - torch 2.6 (cu124) with a real older `libnvJitLink.so.12` (nvidia-nvjitlink-cu12 12.1.105,
//!   pytorch#138460): on LD_LIBRARY_PATH the import works (torch preloads the wheel's copy) and
//!   `check` has no error; in the working directory's `nvidia/nvjitlink/lib` the import breaks
//!   with `undefined symbol: __nvJitLinkComplete_12_4` and `check` has an error naming it.
//!
//! Needs PyPI (cached venvs): skipped with a message unless `ENVDOCTOR_REQUIRE_PYPI` is set.

use crate::common::fw;
use crate::common::pypi;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const FIRST_OP: &str =
    "import warnings\nwarnings.simplefilter('ignore')\nimport torch\ntorch.zeros(1)";

fn torch(version: &str) -> Option<PathBuf> {
    let spec = format!("torch=={version}");
    pypi::need(&spec, pypi::cached_venv(&[spec.as_str()]))
}

/// Run `code` in the venv's interpreter in `cwd` with `extra` variables: `Ok(stdout)` when it
/// works, `Err(stderr)` when it breaks.
fn real(venv: &Path, cwd: &Path, code: &str, extra: &[(&str, &str)]) -> Result<String, String> {
    let mut cmd = Command::new(venv.join("bin/python"));
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", cwd)
        .current_dir(cwd)
        .args(["-c", code]);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn findings_at<'a>(report: &'a Value, severity: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == severity)
        .collect()
}

fn ids(fs: &[&Value]) -> Vec<String> {
    fs.iter()
        .map(|f| f["rule"].as_str().unwrap_or("").to_string())
        .collect()
}

fn summary_mark<'a>(report: &'a Value, area: &str) -> &'a Value {
    let inv = report["inventory"].as_array().expect("inventory");
    &inv.iter().find(|l| l["area"] == area).expect(area)["mark"]
}

/// `needed_at: import` is exactly what the real import and a first op map.
fn needed_at_matches_the_real_process(version: &str) {
    let Some(venv) = torch(version) else { return };
    let cwd = tempfile::tempdir().unwrap();
    let code = format!(
        "{FIRST_OP}\nfor line in open('/proc/self/maps'):\n    p = line.split(None, 5)\n    if len(p) == 6 and p[5].strip().startswith('/'):\n        print(p[5].strip())\n"
    );
    let out = real(&venv, cwd.path(), &code, &[]).unwrap();
    let mapped: Vec<&str> = out.lines().collect();
    let mapped_name = |name: &str| {
        mapped
            .iter()
            .any(|p| Path::new(p).file_name().is_some_and(|n| n == name))
    };
    let snap = fw::snapshot(&venv, cwd.path(), &[]);
    let libs = fw::libraries(&snap, &venv);
    let mut at_import = 0;
    for l in &libs {
        if l["needed_at"] == "import" && l["resolves"] == true {
            at_import += 1;
            let so = l["soname"].as_str().unwrap();
            let real = l["realpath"].as_str().or(l["path"].as_str()).unwrap();
            let file = Path::new(real).file_name().unwrap().to_str().unwrap();
            assert!(
                mapped_name(file) || mapped_name(so),
                "torch {version}: {so} is said to be needed at import, but the import does not map {real}"
            );
        }
    }
    assert!(at_import >= 10, "torch {version}: {at_import} at import");
    let t = fw::frameworks(&snap, &venv, "torch")[0];
    let lazy: Vec<&str> = t["wants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["lazy"] == true)
        .map(|w| w["requester"].as_str().unwrap())
        .collect();
    assert!(
        lazy.iter().any(|r| r.ends_with("libcaffe2_nvrtc.so")),
        "torch {version}: {lazy:?}"
    );
    for r in &lazy {
        let name = Path::new(r).file_name().unwrap().to_str().unwrap();
        assert!(
            !mapped_name(name),
            "torch {version}: {name} is said to load on first use, but the import maps it"
        );
    }
}

#[test]
fn torch_2_15_needed_at_import_is_what_the_import_maps() {
    needed_at_matches_the_real_process("2.15.0");
}

#[test]
fn torch_2_6_needed_at_import_is_what_the_import_maps() {
    needed_at_matches_the_real_process("2.6.0");
}

/// A stock CUDA torch on this CPU box: the real first op works; `check` has no error and no
/// warning, and with `--expect-gpu` exactly one error.
fn clean_on_a_cpu_box(version: &str) {
    let Some(venv) = torch(version) else { return };
    let cwd = tempfile::tempdir().unwrap();
    real(&venv, cwd.path(), FIRST_OP, &[]).expect("the real import works");
    let report = fw::check_loaded(&venv, cwd.path(), &[], &[]);
    let loud: Vec<&Value> = findings_at(&report, "error")
        .into_iter()
        .chain(findings_at(&report, "warning"))
        .collect();
    assert!(loud.is_empty(), "torch {version}: {:?}", ids(&loud));
    assert_eq!(summary_mark(&report, "torch"), "ok");
    let expect = fw::check_loaded(&venv, cwd.path(), &[], &["--expect-gpu"]);
    let errors = findings_at(&expect, "error");
    assert_eq!(
        ids(&errors),
        ["gpu-expected-but-no-gpu"],
        "torch {version} with --expect-gpu"
    );
    assert!(findings_at(&expect, "warning").is_empty());
    assert_eq!(summary_mark(&expect, "Driver"), "bad");
    assert_eq!(summary_mark(&expect, "torch"), "ok");
}

#[test]
fn torch_2_15_on_a_cpu_box_is_quiet_and_expect_gpu_fails_once() {
    clean_on_a_cpu_box("2.15.0");
}

#[test]
fn torch_2_6_on_a_cpu_box_is_quiet_and_expect_gpu_fails_once() {
    clean_on_a_cpu_box("2.6.0");
}

/// The real libnvJitLink.so.12 of nvidia-nvjitlink-cu12 12.1.105 (it lacks the `_12_4` symbols
/// torch 2.6's libcusparse needs), unpacked once into `dir/nvidia/nvjitlink/lib`.
fn old_nvjitlink(dir: &Path) -> Option<PathBuf> {
    let spec = "nvidia-nvjitlink-cu12==12.1.105";
    let whl = pypi::need(
        spec,
        pypi::wheel_file(
            spec,
            "nvidia_nvjitlink_cu12-12.1.105-py3-none-manylinux1_x86_64.whl",
            "3.11",
        ),
    )?;
    let member = "nvidia/nvjitlink/lib/libnvJitLink.so.12";
    let mut zip = zip::ZipArchive::new(std::fs::File::open(whl).unwrap()).unwrap();
    let mut src = zip.by_name(member).unwrap();
    let out = dir.join(member);
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::io::copy(&mut src, &mut std::fs::File::create(&out).unwrap()).unwrap();
    Some(out)
}

#[test]
fn torch_2_6_old_nvjitlink_on_ld_library_path_works_and_check_agrees() {
    let Some(venv) = torch("2.6.0") else { return };
    let t = tempfile::tempdir().unwrap();
    let t = t.path().canonicalize().unwrap();
    let (cwd, old) = (t.join("work"), t.join("old"));
    std::fs::create_dir_all(&cwd).unwrap();
    let Some(lib) = old_nvjitlink(&old) else {
        return;
    };
    let dir = lib.parent().unwrap().to_str().unwrap().to_string();
    let env = [("LD_LIBRARY_PATH", dir.as_str())];
    real(&venv, &cwd, FIRST_OP, &env).expect("torch preloads the wheel's nvJitLink");
    let report = fw::check_loaded(&venv, &cwd, &env, &[]);
    let errors = findings_at(&report, "error");
    assert!(errors.is_empty(), "{:?}", ids(&errors));
}

#[test]
fn torch_2_6_old_nvjitlink_in_the_working_dir_breaks_and_check_says_so() {
    let Some(venv) = torch("2.6.0") else { return };
    let t = tempfile::tempdir().unwrap();
    let cwd = t.path().canonicalize().unwrap();
    if old_nvjitlink(&cwd).is_none() {
        return;
    }
    let err = real(&venv, &cwd, FIRST_OP, &[]).expect_err("the stray copy wins torch's preload");
    assert!(err.contains("__nvJitLinkComplete_12_4"), "{err}");
    let report = fw::check_loaded(&venv, &cwd, &[], &["--project", "."]);
    let errors = findings_at(&report, "error");
    assert!(
        errors
            .iter()
            .any(|f| f.to_string().contains("libnvJitLink.so.12")),
        "{:?}",
        ids(&errors)
    );
    assert_eq!(summary_mark(&report, "torch"), "bad");
}

/// The torchvision fix is computed from the facts, and it is right to paste: on the real torch
/// 2.6 venv with a torchvision of torch 2.5 (0.20.1) on record, the printed command resolves with
/// `pip install --dry-run` to torchvision 0.21 and leaves torch alone; applied to a copy of the
/// snapshot, the rule is quiet.
#[test]
fn torchvision_fix_resolves_to_the_pair_of_the_installed_torch() {
    let Some(venv) = torch("2.6.0") else { return };
    let cwd = tempfile::tempdir().unwrap();
    let mut snap = fw::snapshot(&venv, cwd.path(), &[]);
    let py = venv.join("bin/python");
    let set_torchvision = |snap: &mut Value, version: &str| {
        for p in snap["pythons"].as_array_mut().unwrap() {
            if p["path"] != py.to_str().unwrap() {
                continue;
            }
            let pkgs = p["packages"].as_array_mut().unwrap();
            let torch = pkgs.iter().find(|k| k["name"] == "torch").unwrap().clone();
            pkgs.retain(|k| k["name"] != "torchvision");
            let mut tv = torch;
            tv["name"] = "torchvision".into();
            tv["version"] = version.into();
            pkgs.push(tv);
        }
    };
    set_torchvision(&mut snap, "0.20.1");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    std::fs::write(&file, snap.to_string()).unwrap();
    let report = check_from(&file);
    let f = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "torchvision-built-for-other-torch")
        .expect("the rule fires for torchvision 0.20 with torch 2.6");
    let fix = f["fix"]["text"].as_str().unwrap();
    let command = fix.split('`').nth(1).expect("a command in backticks");
    let words: Vec<String> = command
        .split_whitespace()
        .map(|w| w.trim_matches('\'').to_string())
        .collect();
    assert_eq!(words[0], py.to_str().unwrap(), "{command}");
    assert_eq!(&words[1..4], ["-m", "pip", "install"], "{command}");
    // pip's own words (`Would install ...`), so not pypi::pip's -q.
    let out = pypi::run(
        Command::new(&py)
            .args(["-m", "pip", "--disable-pip-version-check", "--no-input"])
            .args(["install", "--dry-run"])
            .args(&words[4..]),
    )
    .unwrap_or_else(|e| panic!("{command}: {e}"));
    assert!(out.contains("torchvision-0.21."), "{command}: {out}");
    assert!(!out.contains("torch-2."), "torch stays: {out}");
    // Applied to the snapshot: quiet.
    set_torchvision(&mut snap, "0.21.0");
    std::fs::write(&file, snap.to_string()).unwrap();
    let report = check_from(&file);
    assert!(!fw::finding_ids(&report).contains(&"torchvision-built-for-other-torch".to_string()));
}

/// `check --format json --from FILE` (exit 0 or 1): the report.
fn check_from(file: &Path) -> Value {
    let (code, out, err) = crate::common::cli::output(
        crate::common::cli::cmd()
            .args(["check", "--format", "json", "--from"])
            .arg(file),
    );
    assert!(matches!(code, 0 | 1), "{err}");
    serde_json::from_str(&out).unwrap()
}
