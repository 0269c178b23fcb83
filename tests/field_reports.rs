//! The field reports (`../shared/seeds/`), reproduced as fake machines and run through
//! `envdoctor check --root`: each must print the right finding with its evidence and exit 1, and
//! its healthy twin must be quiet (no finding of that rule, exit 0).
//!
//! A machine is a directory tree built here: stand-in interpreters (shell scripts that would
//! leave a marker if run: nothing is ever executed), venvs with `pyvenv.cfg`, `.dist-info`
//! directories, and the real checkpoint files under `fixtures/checkpoints/` (written by the real
//! frameworks; see `fixtures/checkpoints/make_fixtures.py`).

use serde_json::Value;

use crate::common::machine;
use machine::*;

// Seed 001: InceptionV3 replaced by InceptionV4 in code, but the training directory still holds
// the V3 checkpoint that `checkpoint` names as latest: "Key InceptionV4/... not found".
#[test]
fn seed_001_latest_checkpoint_is_the_other_model() {
    let mut m = Machine::new();
    m.active_venv("3.6", "/opt/venv", &[("tensorflow-gpu", "1.12.0")]);
    m.checkpoint("mixed_families", "/data/train");
    let (code, report) = m.check(&["--checkpoint", "/data/train"]);
    assert_eq!(code, 1);
    let f = fired(&report, "ckpt-latest-other-family");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("InceptionV3") && msg.contains("InceptionV4"),
        "{msg}"
    );
    assert!(
        evidence_has(f, "tf_state.latest_is_other_family", &Value::Bool(true)),
        "{f:#}"
    );

    // Healthy twin: only the V4 checkpoint, named as latest.
    let twin = Machine::new();
    twin.checkpoint(
        "mixed_families/model.ckpt-200.index",
        "/data/train/model.ckpt-200.index",
    );
    twin.checkpoint(
        "mixed_families/model.ckpt-200.data-00000-of-00001",
        "/data/train/model.ckpt-200.data-00000-of-00001",
    );
    twin.write(
        "/data/train/checkpoint",
        "model_checkpoint_path: \"model.ckpt-200\"\nall_model_checkpoint_paths: \"model.ckpt-200\"\n",
    );
    let (code, report) = twin.check(&["--checkpoint", "/data/train"]);
    assert!(findings_of(&report, "ckpt-latest-other-family").is_empty());
    assert_eq!(code, 0, "{:#}", report["findings"]);
}

// Seed 003: a model trained with TF < 1.2 RNN cells (`lstm_cell/weights`, `.../biases`) restored
// on another machine whose TensorFlow names them `kernel`/`bias`.
#[test]
fn seed_003_pre_1_2_rnn_names_under_a_newer_tensorflow() {
    let mut m = Machine::new();
    m.active_venv("3.6", "/opt/venv", &[("tensorflow", "1.4.0")]);
    m.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (code, report) = m.check(&["--checkpoint", "/work/ckpt"]);
    assert_eq!(code, 1);
    let f = fired(&report, "ckpt-rnn-pre-tf12-names");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("tensorflow 1.4.0") && msg.contains("/opt/venv/bin/python"),
        "{msg}"
    );
    assert!(
        msg.contains("lstm_cell/weights") || msg.contains("weights"),
        "{msg}"
    );

    // Healthy twin: the TensorFlow that wrote it (1.1).
    let mut twin = Machine::new();
    twin.active_venv("3.6", "/opt/venv", &[("tensorflow", "1.1.0")]);
    twin.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (code, report) = twin.check(&["--checkpoint", "/work/ckpt"]);
    assert!(findings_of(&report, "ckpt-rnn-pre-tf12-names").is_empty());
    assert_eq!(code, 0, "{:#}", report["findings"]);
}

// Seed 000: a TF1 name-based checkpoint restored by TF 2's loader:
// "Key _CHECKPOINTABLE_OBJECT_GRAPH not found in checkpoint".
#[test]
fn seed_000_name_based_checkpoint_under_tensorflow_2() {
    let mut m = Machine::new();
    m.active_venv("3.8", "/opt/venv", &[("tensorflow", "2.4.1")]);
    m.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (_, report) = m.check(&["--checkpoint", "/work/ckpt"]);
    let f = fired(&report, "ckpt-tf1-name-based-with-tf2");
    assert!(f["message"].as_str().unwrap().contains("name-based"));

    let mut twin = Machine::new();
    twin.active_venv("3.8", "/opt/venv", &[("tensorflow", "2.4.1")]);
    twin.checkpoint("tf2_object_based", "/work/ckpt");
    let (_, report) = twin.check(&["--checkpoint", "/work/ckpt"]);
    assert!(findings_of(&report, "ckpt-tf1-name-based-with-tf2").is_empty());
}

use crate::common::cc;
use crate::fake_nvml;

/// `envdoctor check --root ROOT --nvml-lib <fake NVML>` in `scenario`, with exactly `env` (plus
/// the fake's pids: 4242 is the user's notebook, 3100 a process of another container).
fn check_gpus(root: &std::path::Path, scenario: &str, env: &[(&str, &str)]) -> (i32, Value) {
    let mut cmd = assert_cmd::Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_OWN_PID", "4242")
        .env("FAKE_NVML_FOREIGN_PID", "3100")
        .args(["check", "--format", "json", "--root"])
        .arg(root)
        .arg("--nvml-lib")
        .arg(fake_nvml::library());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), report)
}

// Seed 002: `Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR` and
// `cuDNN launch failure ... [Op:FusedBatchNormV3]`: a forgotten process held the GPU's memory.
#[test]
fn seed_002_gpu_memory_held_by_another_process() {
    let root = repo("fixtures/machines/gpu-host-view");
    let (code, report) = check_gpus(&root, "two-gpus", &[]);
    assert_eq!(code, 1, "{:#}", report["findings"]);
    let f = fired(&report, "gpu-memory-held-by-other-process");
    assert_eq!(f["subject"], "gpus[0]");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("NVIDIA H100") && msg.contains("pid 3100"),
        "{msg}"
    );
    assert!(
        evidence_has(
            f,
            "gpus[0].live.memory_used_percent",
            &f["evidence"][1]["value"]
        ),
        "{f:#}"
    );
    // The same GPUs, idle: no finding about memory, nothing at error level.
    let (code, report) = check_gpus(&root, "idle", &[]);
    assert!(findings_of(&report, "gpu-memory-held-by-other-process").is_empty());
    assert_eq!(code, 0, "{:#}", report["findings"]);
}

// Seed 002: `failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_INVALID_DEVICE: invalid device
// ordinal`: CUDA_VISIBLE_DEVICES names a GPU this machine does not have.
#[test]
fn seed_002_cuda_visible_devices_names_a_missing_gpu() {
    let root = repo("fixtures/machines/gpu-host-view");
    let (code, report) = check_gpus(&root, "idle", &[("CUDA_VISIBLE_DEVICES", "0,7")]);
    assert_eq!(code, 1, "{:#}", report["findings"]);
    let f = fired(&report, "cuda-visible-devices-unmatched");
    assert!(f["message"].as_str().unwrap().contains('7'), "{f:#}");
    let (code, report) = check_gpus(&root, "idle", &[("CUDA_VISIBLE_DEVICES", "1")]);
    assert!(findings_of(&report, "cuda-visible-devices-unmatched").is_empty());
    assert_eq!(code, 0, "{:#}", report["findings"]);
}

/// A TF 2.2 install (files in the shape its wheel ships) for a Debian python 3.8.
fn tf22(m: &Machine) {
    let site = debian_python(m.root(), "3.8", &[("tensorflow", "2.2.0")]);
    std::fs::create_dir_all(site.join("tensorflow/python/platform")).unwrap();
    std::fs::write(
        site.join("tensorflow/python/platform/build_info.py"),
        "is_rocm_build = False\nis_cuda_build = True\ncuda_version_number = '10.1'\ncudnn_version_number = '7'\n",
    )
    .unwrap();
}

// Seed 002: `libcupti.so.10.1` was a hand-made link to CUDA 10.2's `libcupti.so.10.2`, and
// TensorFlow 2.2 segfaulted when the profiler started.
#[test]
fn seed_002_cupti_link_to_another_cuda_release() {
    if !cc::have_cc() {
        eprintln!("SKIPPED: needs cc");
        return;
    }
    let mut m = Machine::new();
    copy_tree(&repo("fixtures/machines/lib-cupti-link"), m.root());
    cc::Lib::new("libcupti.so.10.2")
        .build(&m.path("/usr/local/cuda-10.2/extras/CUPTI/lib64/libcupti.so.10.2.75"));
    tf22(&m);
    m.env("LD_LIBRARY_PATH", "/usr/local/cuda/extras/CUPTI/lib64");
    let (code, report) = m.check(&[]);
    assert_eq!(code, 1, "{:#}", report["findings"]);
    let f = fired(&report, "cupti-symlink-other-cuda");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("libcupti.so.10.2.75") && msg.contains("tensorflow 2.2.0"),
        "{msg}"
    );
    assert!(
        evidence_has(f, "version_mismatch", &Value::Bool(true)),
        "{f:#}"
    );

    // Healthy twin: the CUPTI of CUDA 10.1 itself.
    let mut twin = Machine::new();
    cc::Lib::new("libcupti.so.10.1")
        .build(&twin.path("/usr/local/cuda-10.1/extras/CUPTI/lib64/libcupti.so.10.1.243"));
    cc::symlink(
        std::path::Path::new("libcupti.so.10.1.243"),
        twin.path("/usr/local/cuda-10.1/extras/CUPTI/lib64/libcupti.so.10.1"),
    );
    tf22(&twin);
    twin.env("LD_LIBRARY_PATH", "/usr/local/cuda-10.1/extras/CUPTI/lib64");
    let (_, report) = twin.check(&[]);
    assert!(findings_of(&report, "cupti-symlink-other-cuda").is_empty());
    assert!(findings_of(&report, "library-symlink-version-mismatch").is_empty());
}
