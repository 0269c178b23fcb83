//! Issue 25 item 7: GPU facts that the process list does not explain, through the real probe
//! and the fake NVML (a C library implementing the NVML entry points): memory no listed
//! process holds, a real zombie and a vanished pid holding memory, MIG on with no instance,
//! ECC errors with a pending row remap (and, on a pre-R510 driver, pending page retirement),
//! and a CUDA forward-compatibility libcuda (cc-built, on a fake root) against the kernel
//! module and the GPU class. Each broken case fires its rule; its healthy twin is quiet.

use crate::common::cc;
use crate::common::machine::findings_of;
use crate::fake_nvml;

use serde_json::Value;
use std::path::Path;

/// `envdoctor check --format json` on this host (only the gpu facts matter) with the fake NVML
/// `lib` in `scenario`, GPU 0's other process being `foreign`.
fn check(lib: &Path, scenario: &str, foreign: u32) -> Value {
    let out = crate::common::cli::cmd()
        .args(["check", "--format", "json", "--nvml-lib"])
        .arg(lib)
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_OWN_PID", std::process::id().to_string())
        .env("FAKE_NVML_FOREIGN_PID", foreign.to_string())
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("LD_LIBRARY_PATH")
        .timeout(crate::common::cli::TIMEOUT)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

/// The rules of this item that fired (other rules, such as the occupied GPU's, are not ours).
fn ours(report: &Value) -> Vec<String> {
    const OURS: &[&str] = &[
        "gpu-memory-unaccounted",
        "gpu-memory-held-by-exited-process",
        "gpu-mig-enabled-without-instances",
        "gpu-memory-repair-pending",
        "gpu-row-remap-failed",
        "gpu-uncorrectable-ecc-errors",
        "cuda-forward-compat-unsupported-gpu",
        "cuda-forward-compat-older-than-driver",
    ];
    let mut v: Vec<String> = OURS
        .iter()
        .filter(|r| !findings_of(report, r).is_empty())
        .map(|r| r.to_string())
        .collect();
    v.sort();
    v
}

fn absent_pid() -> u32 {
    (4_190_000..4_194_000)
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap()
}

#[test]
fn the_idle_twin_is_quiet() {
    let r = check(&fake_nvml::library(), "idle", absent_pid());
    assert_eq!(ours(&r), Vec::<String>::new(), "{:#}", r["findings"]);
    let g0 = &r["snapshot"]["gpus"][0];
    // The driver's reserve only: 600 MiB no process holds, below the rule's 2048.
    assert_eq!(g0["live"]["unaccounted_memory_mib"], 600);
    assert_eq!(g0["ecc"]["enabled"], true);
    assert_eq!(g0["ecc"]["remap_pending"], false);
    // MIG is on with two instances: no unaccounted figure for the parent.
    assert!(r["snapshot"]["gpus"][1]["live"]
        .get("unaccounted_memory_mib")
        .is_none());
}

#[test]
fn memory_no_listed_process_holds() {
    let r = check(&fake_nvml::library(), "hidden-memory", absent_pid());
    assert_eq!(ours(&r), ["gpu-memory-unaccounted"], "{:#}", r["findings"]);
    let f = findings_of(&r, "gpu-memory-unaccounted");
    assert_eq!(f.len(), 1);
    assert!(f[0]["message"].as_str().unwrap().contains("30000 MiB"));
}

#[test]
fn a_real_zombie_and_a_vanished_pid_holding_memory() {
    // A child that exits and is not reaped: a real zombie in our PID namespace.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    let status = format!("/proc/{pid}/status");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(&status)
        .unwrap_or_default()
        .contains("State:\tZ")
    {
        assert!(std::time::Instant::now() < deadline, "no zombie");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let r = check(&fake_nvml::library(), "two-gpus", pid);
    let _ = child.wait();
    let procs = r["snapshot"]["gpus"][0]["live"]["processes"]
        .as_array()
        .unwrap();
    let z = procs.iter().find(|p| p["pid"] == pid).unwrap();
    assert_eq!(z["state"], "zombie", "{z}");
    let f = findings_of(&r, "gpu-memory-held-by-exited-process");
    assert!(
        f.iter().any(|f| f["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{pid} (zombie)"))),
        "{:#}",
        r["findings"]
    );

    // From the host's namespace, with /proc hiding nothing, a pid that is gone.
    let gone = absent_pid();
    let r = check(&fake_nvml::library(), "two-gpus", gone);
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let in_init = std::fs::read_link("/proc/self/ns/pid")
        .is_ok_and(|l| l.to_string_lossy() == "pid:[4026531836]");
    let sees_all = !mountinfo
        .lines()
        .any(|l| l.contains(" /proc ") && l.contains("hidepid="));
    let fired = !findings_of(&r, "gpu-memory-held-by-exited-process").is_empty();
    assert_eq!(fired, in_init && sees_all, "{:#}", r["findings"]);

    // Twin: the other process is alive (this test process itself).
    let r = check(&fake_nvml::library(), "two-gpus", std::process::id());
    assert!(findings_of(&r, "gpu-memory-held-by-exited-process").is_empty());
}

#[test]
fn mig_on_without_instances() {
    let r = check(&fake_nvml::library(), "mig-empty", absent_pid());
    assert_eq!(
        ours(&r),
        ["gpu-mig-enabled-without-instances"],
        "{:#}",
        r["findings"]
    );
    assert!(
        findings_of(&r, "gpu-mig-enabled-without-instances")[0]["message"]
            .as_str()
            .unwrap()
            .contains("GPU 1")
    );
}

#[test]
fn ecc_errors_with_a_pending_repair() {
    let r = check(&fake_nvml::library(), "memory-errors", absent_pid());
    assert_eq!(
        ours(&r),
        ["gpu-memory-repair-pending"],
        "{:#}",
        r["findings"]
    );
    let ecc = &r["snapshot"]["gpus"][0]["ecc"];
    assert_eq!(ecc["uncorrected_volatile"], 2);
    assert_eq!(ecc["remap_pending"], true);
    // Hopper has no page retirement: not supported, so absent.
    assert!(ecc.get("retired_pages_pending").is_none());

    // A pre-R510 driver without nvmlDeviceGetRemappedRows: page retirement instead, and the
    // missing entry point is no probe error.
    let r = check(&fake_nvml::legacy_library(), "memory-errors", absent_pid());
    assert_eq!(
        ours(&r),
        ["gpu-memory-repair-pending"],
        "{:#}",
        r["findings"]
    );
    let ecc = &r["snapshot"]["gpus"][0]["ecc"];
    assert_eq!(ecc["retired_pages_pending"], true);
    assert!(ecc.get("remap_pending").is_none());
    let errs = r["snapshot"]["probe_errors"].as_array().cloned();
    assert!(
        !errs
            .unwrap_or_default()
            .iter()
            .any(|e| e.to_string().contains("Remapped")),
        "{:#}",
        r["snapshot"]["probe_errors"]
    );
}

/// A fake machine with kernel module 580.95.05, the driver's libcuda, and an image's
/// cuda-compat libcuda `compat_version` under /usr/local/cuda-12.9/compat, reached through
/// LD_LIBRARY_PATH when `on_path`.
fn compat_machine(
    compat_version: &str,
    on_path: bool,
) -> (tempfile::TempDir, Vec<(String, String)>) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let w = |p: &str, text: &str| {
        let f = root.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    };
    w(
        "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu Sep 25 2025\n",
    );
    w("etc/ld.so.conf", "");
    let sys = root.join("usr/lib/x86_64-linux-gnu");
    let compat = root.join("usr/local/cuda-12.9/compat");
    std::fs::create_dir_all(&sys).unwrap();
    std::fs::create_dir_all(&compat).unwrap();
    cc::Lib::new("libcuda.so.1")
        .returns("cuInit", 0)
        .build(&sys.join("libcuda.so.580.95.05"));
    cc::symlink("libcuda.so.580.95.05", sys.join("libcuda.so.1"));
    let real = format!("libcuda.so.{compat_version}");
    cc::Lib::new("libcuda.so.1")
        .returns("cuInit", 0)
        .build(&compat.join(&real));
    cc::symlink(&real, compat.join("libcuda.so.1"));
    let mut env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
    if on_path {
        env.push((
            "LD_LIBRARY_PATH".into(),
            "/usr/local/cuda-12.9/compat".into(),
        ));
    }
    (t, env)
}

fn check_root(root: &Path, env: &[(String, String)], scenario: &str) -> Value {
    let mut c = crate::common::cli::empty();
    c.args(["check", "--format", "json", "--root"])
        .arg(root)
        .arg("--nvml-lib")
        .arg(fake_nvml::library())
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_FOREIGN_PID", absent_pid().to_string());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn forward_compat_libcuda_against_the_driver_and_the_gpu() {
    if !cc::have_cc() {
        return;
    }
    // An image's compat copy older than the host's driver: error 803 (gpustack#4678).
    let (m, env) = compat_machine("575.57.08", true);
    let r = check_root(m.path(), &env, "idle");
    let d = &r["snapshot"]["cuda"]["driver"];
    assert_eq!(d["compat_version"], "575.57.08", "{d:#}");
    assert_eq!(
        d["libcuda"], "580.95.05",
        "the driver's own, not the compat copy"
    );
    assert_eq!(d["mismatch"], false);
    assert_eq!(ours(&r), ["cuda-forward-compat-older-than-driver"]);
    assert!(findings_of(&r, "nvml-driver-library-mismatch").is_empty());

    // A newer compat copy is its purpose on an H100 (quiet), and error 804 on a GeForce.
    let (m, env) = compat_machine("590.44.01", true);
    assert_eq!(
        ours(&check_root(m.path(), &env, "idle")),
        Vec::<String>::new()
    );
    assert_eq!(
        ours(&check_root(m.path(), &env, "geforce")),
        ["cuda-forward-compat-unsupported-gpu"]
    );

    // The same files with the compat directory off the loader's path: quiet.
    let (m, env) = compat_machine("590.44.01", false);
    let r = check_root(m.path(), &env, "geforce");
    assert!(r["snapshot"]["cuda"]["driver"]
        .get("compat_version")
        .is_none());
    assert_eq!(ours(&r), Vec::<String>::new());
}
