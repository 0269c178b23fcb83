//! The gpu probe against a fake NVML compiled from C: two GPUs with a foreign process holding
//! 90% of one, an exclusive-process MIG device, a wedged driver, a version mismatch, no driver,
//! no library, a crash.

use crate::fake_nvml;

use assert_cmd::Command;
use serde_json::Value;
use std::time::{Duration, Instant};

/// A pid that names no process here (close to the kernel's largest pid).
fn absent_pid() -> u32 {
    (4_190_000..4_194_000)
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .unwrap()
}

fn snapshot(scenario: &str, envs: &[(&str, &str)], extra: &[&str]) -> (Value, Duration) {
    let lib = fake_nvml::library();
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.arg("snapshot")
        .arg("--nvml-lib")
        .arg(&lib)
        .args(extra)
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_OWN_PID", std::process::id().to_string())
        .env("FAKE_NVML_FOREIGN_PID", absent_pid().to_string())
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("CUDA_DEVICE_ORDER")
        .timeout(Duration::from_secs(60));
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (serde_json::from_slice(&out.stdout).unwrap(), took)
}

fn cmd_out(cmd: &str, args: &[&str]) -> String {
    let o = std::process::Command::new(cmd).args(args).output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn two_gpus_one_held_by_a_foreign_process() {
    let (snap, _) = snapshot("two-gpus", &[], &[]);
    let nvml = &snap["nvml"];
    assert_eq!(nvml["status"], "ok", "{nvml}");
    assert_eq!(nvml["driver_version"], "580.65.06");
    assert_eq!(nvml["cuda_driver_version"], "13.0");
    assert_eq!(nvml["nvml_version"], "13.580.65.06");
    assert!(nvml["library"]
        .as_str()
        .unwrap()
        .ends_with("libnvidia-ml.so.1"));
    assert_eq!(
        nvml["visible_devices"]["visible"],
        serde_json::json!([0, 1])
    );

    let gpus = snap["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 2);
    let g0 = &gpus[0];
    assert_eq!(g0["index"], 0);
    assert_eq!(g0["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(g0["uuid"], "GPU-11111111-2222-3333-4444-555555555555");
    assert_eq!(g0["pci_bus_id"], "00000000:18:00.0");
    assert_eq!(g0["compute_capability"], "9.0");
    assert_eq!(g0["memory_total_mib"], 81559);
    assert_eq!(g0["compute_mode"], "default");
    assert_eq!(g0["mig_enabled"], false);
    assert_eq!(g0["persistence_mode"], true);
    assert_eq!(g0["visible"], true);
    let live = &g0["live"];
    assert_eq!(live["memory_used_mib"], 73403 + 512 + 600);
    assert_eq!(live["memory_free_mib"], 81559 - (73403 + 512 + 600));
    // 74515 of 81559 MiB.
    assert_eq!(live["memory_used_percent"], 91.4);
    assert_eq!(live["utilization_percent"], 97);
    assert_eq!(live["foreign_processes"], 1);
    assert_eq!(live["foreign_memory_mib"], 73403);
    let procs = live["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2);
    let me = std::process::id();
    let ours = procs
        .iter()
        .find(|p| p["pid"] == me)
        .expect("our pid listed");
    // Listed by NVML as compute and as graphics: one entry, its memory counted once.
    assert_eq!(ours["kind"], "compute+graphics");
    assert_eq!(ours["used_memory_mib"], 512);
    assert_eq!(ours["in_our_pid_namespace"], true);
    assert_eq!(ours["same_user"], true);
    assert_eq!(ours["uid"], cmd_out("id", &["-u"]).parse::<u64>().unwrap());
    assert_eq!(ours["user"], cmd_out("id", &["-un"]));
    assert_eq!(
        ours["name"],
        cmd_out("ps", &["-o", "comm=", "-p", &me.to_string()])
    );
    let foreign = procs.iter().find(|p| p["pid"] != me).unwrap();
    assert_eq!(foreign["in_our_pid_namespace"], false);
    assert_eq!(foreign["used_memory_mib"], 73403);
    assert!(foreign.get("name").is_none(), "{foreign}");

    let g1 = &gpus[1];
    assert_eq!(g1["name"], "NVIDIA A100-SXM4-40GB");
    assert_eq!(g1["compute_mode"], "exclusive-process");
    assert_eq!(g1["mig_enabled"], true);
    assert_eq!(g1["persistence_mode"], false);
    assert_eq!(
        g1["mig_devices"],
        serde_json::json!([
            "MIG-0f0e0d0c-0b0a-0908-0706-050403020100",
            "MIG-1f1e1d1c-1b1a-1918-1716-151413121110"
        ])
    );
    // Not supported under MIG: absent, not an error.
    assert!(g1["live"].get("utilization_percent").is_none());
    assert_eq!(g1["live"]["processes"][0]["kind"], "graphics");
    assert_eq!(g1["live"]["foreign_processes"], 0);
    let gpu_errors: Vec<&Value> = snap["probe_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["probe"] == "gpu")
        .collect();
    assert!(gpu_errors.is_empty(), "{gpu_errors:?}");
}

#[test]
fn cuda_visible_devices_maps_onto_the_fake_devices() {
    let (snap, _) = snapshot(
        "two-gpus",
        &[(
            "CUDA_VISIBLE_DEVICES",
            "MIG-1f1e1d1c-1b1a-1918-1716-151413121110,5,0",
        )],
        &[],
    );
    let v = &snap["nvml"]["visible_devices"];
    assert_eq!(v["visible"], serde_json::json!([1]));
    assert_eq!(v["unmatched"], serde_json::json!(["5"]));
    assert_eq!(v["ignored"], serde_json::json!(["0"]));
    assert_eq!(snap["gpus"][0]["visible"], false);
    assert_eq!(snap["gpus"][1]["visible"], true);

    let (snap, _) = snapshot("two-gpus", &[("CUDA_VISIBLE_DEVICES", "")], &[]);
    assert_eq!(
        snap["nvml"]["visible_devices"]["visible"],
        serde_json::json!([])
    );
    assert_eq!(snap["nvml"]["visible_devices"]["raw"], "");
    assert_eq!(snap["gpus"].as_array().unwrap().len(), 2);
    assert!(snap["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["visible"] == false));

    let (snap, _) = snapshot("two-gpus", &[("CUDA_VISIBLE_DEVICES", "1,GPU-1111")], &[]);
    let v = &snap["nvml"]["visible_devices"];
    assert_eq!(v["visible"], serde_json::json!([1, 0]));
    assert_eq!(v["order_uncertain"], true);
}

#[test]
fn a_wedged_driver_becomes_a_timeout_not_a_hang() {
    let (snap, took) = snapshot("hang", &[], &["--deadline", "1"]);
    assert_eq!(snap["nvml"]["status"], "timeout", "{}", snap["nvml"]);
    assert!(snap["nvml"]["reason"]
        .as_str()
        .unwrap()
        .contains("nvmlInit_v2"));
    assert_eq!(snap["gpus"], serde_json::json!([]));
    let errs = snap["probe_errors"].as_array().unwrap();
    assert!(errs
        .iter()
        .any(|e| e["probe"] == "gpu" && e["message"].as_str().unwrap().contains("timed out")));
    // The probe answers by itself before the runner gives up on it.
    assert!(!errs
        .iter()
        .any(|e| e["probe"] == "gpu" && e["message"].as_str().unwrap().contains("did not answer")));
    // A hang detector, not a speed test: a hung envdoctor would be killed at 60 s.
    assert!(took < Duration::from_secs(30), "{took:?}");
    eprintln!("hang scenario with --deadline 1 took {took:?}");
}

#[test]
fn a_hang_in_the_second_device_keeps_the_first() {
    let (snap, _) = snapshot("hang-device", &[], &["--deadline", "1"]);
    assert_eq!(snap["nvml"]["status"], "timeout");
    assert!(snap["nvml"]["reason"]
        .as_str()
        .unwrap()
        .contains("after 1 of 2 devices"));
    assert_eq!(snap["nvml"]["driver_version"], "580.65.06");
    let gpus = snap["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0]["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(gpus[0]["live"]["foreign_memory_mib"], 73403);
    // With one device missing, CUDA_VISIBLE_DEVICES cannot be judged.
    assert!(snap["nvml"].get("visible_devices").is_none());
}

#[test]
fn driver_library_version_mismatch() {
    let (snap, _) = snapshot("mismatch", &[], &[]);
    assert_eq!(snap["nvml"]["status"], "version-mismatch");
    assert!(snap["nvml"]["reason"]
        .as_str()
        .unwrap()
        .contains("Driver/library version mismatch"));
    assert_eq!(snap["gpus"], serde_json::json!([]));
}

#[test]
fn no_driver_no_devices_no_library_and_a_crash_are_facts() {
    let (snap, _) = snapshot("no-driver", &[], &[]);
    assert_eq!(snap["nvml"]["status"], "driver-not-loaded");
    assert_eq!(snap["gpus"], serde_json::json!([]));

    let (snap, _) = snapshot("no-devices", &[], &[]);
    assert_eq!(snap["nvml"]["status"], "no-device");
    assert_eq!(snap["nvml"]["driver_version"], "580.65.06");
    assert_eq!(snap["gpus"], serde_json::json!([]));

    let (snap, _) = snapshot("crash", &[], &[]);
    assert_eq!(snap["nvml"]["status"], "crashed", "{}", snap["nvml"]);
    assert!(snap["nvml"]["reason"]
        .as_str()
        .unwrap()
        .contains("signal 11"));

    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .args(["snapshot", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success());
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["nvml"]["status"], "no-library");
    assert!(snap["nvml"]["reason"]
        .as_str()
        .unwrap()
        .contains("/nonexistent/libnvidia-ml.so.1"));
    assert_eq!(snap["gpus"], serde_json::json!([]));
}

#[test]
fn no_load_and_fake_roots_do_not_touch_nvml() {
    let (snap, _) = snapshot("crash", &[], &["--no-load"]);
    assert_eq!(snap["nvml"]["status"], "not-probed");
    let root = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .arg("snapshot")
        .arg("--root")
        .arg(root.path())
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["nvml"]["status"], "not-probed");
    assert!(snap["nvml"]["reason"].as_str().unwrap().contains("--root"));
}

#[test]
fn a_pre_r510_driver_still_gives_memory_and_processes() {
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .arg("snapshot")
        .arg("--nvml-lib")
        .arg(fake_nvml::legacy_library())
        .env("FAKE_NVML_SCENARIO", "two-gpus")
        .env("FAKE_NVML_OWN_PID", std::process::id().to_string())
        .env("FAKE_NVML_FOREIGN_PID", absent_pid().to_string())
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success());
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["nvml"]["status"], "ok");
    assert_eq!(snap["nvml"]["driver_version"], "470.256.02");
    assert_eq!(snap["nvml"]["cuda_driver_version"], "11.4");
    let g0 = &snap["gpus"][0];
    assert_eq!(g0["memory_total_mib"], 81559);
    assert_eq!(g0["live"]["memory_used_mib"], 74515);
    assert_eq!(g0["live"]["foreign_memory_mib"], 73403);
    assert_eq!(g0["live"]["processes"].as_array().unwrap().len(), 2);
    assert!(
        !snap["probe_errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["probe"] == "gpu"),
        "{}",
        snap["probe_errors"]
    );
}
