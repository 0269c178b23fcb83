//! The gpu probe's process attribution on fixture machines (their `/proc` laid out as files),
//! with the fake NVML reporting pids that exist in those fixtures.

use crate::fake_nvml;

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn snapshot(machine: &str, scenario: &str, own: u32, foreign: u32) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/machines")
        .join(machine);
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .arg("snapshot")
        .arg("--root")
        .arg(&root)
        .arg("--nvml-lib")
        .arg(fake_nvml::library())
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_OWN_PID", own.to_string())
        .env("FAKE_NVML_FOREIGN_PID", foreign.to_string())
        .env_remove("CUDA_VISIBLE_DEVICES")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn process(gpu: &Value, pid: u32) -> &Value {
    gpu["live"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == pid)
        .unwrap_or_else(|| panic!("pid {pid} not listed: {gpu}"))
}

#[test]
fn from_the_host_a_container_process_is_named_and_counted_as_foreign() {
    let snap = snapshot("gpu-host-view", "two-gpus", 4242, 3100);
    let g0 = &snap["gpus"][0];
    let mine = process(g0, 4242);
    assert_eq!(mine["name"], "jupyter-lab");
    assert_eq!(mine["user"], "ana");
    assert_eq!(mine["uid"], 1000);
    assert_eq!(mine["same_user"], true);
    assert_eq!(mine["in_our_pid_namespace"], true);
    assert_eq!(
        mine["container"],
        "/user.slice/user-1000.slice/session-4.scope"
    );
    let theirs = process(g0, 3100);
    assert_eq!(theirs["name"], "python3");
    assert_eq!(theirs["user"], "bob");
    assert_eq!(theirs["same_user"], false);
    assert_eq!(theirs["in_our_pid_namespace"], false);
    assert_eq!(theirs["container"], "docker:9c8b7a6f5e4d");
    assert_eq!(theirs["used_memory_mib"], 73403);
    assert_eq!(g0["live"]["foreign_processes"], 1);
    assert_eq!(g0["live"]["foreign_memory_mib"], 73403);
}

#[test]
fn inside_a_container_host_pids_are_foreign_even_when_a_look_alike_exists() {
    // pid 12 is this container's own process and 3100 exists here too, but NVML's pids are
    // the host's: neither may be attributed to the local process of the same number.
    let snap = snapshot("gpu-in-container", "two-gpus", 12, 3100);
    let g0 = &snap["gpus"][0];
    for pid in [12, 3100] {
        let p = process(g0, pid);
        assert_eq!(p["in_our_pid_namespace"], false, "{p}");
        assert!(p.get("name").is_none(), "{p}");
    }
    assert_eq!(g0["live"]["foreign_processes"], 2);
    assert_eq!(g0["live"]["foreign_memory_mib"], 73403 + 512);
    assert_eq!(snap["host"]["container"]["kind"], "docker");
}

#[test]
fn a_version_mismatch_names_the_loaded_kernel_module() {
    let snap = snapshot("gpu-host-view", "mismatch", 4242, 3100);
    assert_eq!(snap["nvml"]["status"], "version-mismatch");
    let reason = snap["nvml"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("Driver/library version mismatch"),
        "{reason}"
    );
    assert!(reason.contains("kernel module is 570.124.06"), "{reason}");
}
