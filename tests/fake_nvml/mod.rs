//! Builds the fake NVML (`fake_nvml.c`) with the system C compiler, once per test binary.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The compiled fake of a current driver, named like the real library (`libnvidia-ml.so.1`).
#[allow(dead_code)]
pub fn library() -> PathBuf {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| build(&[])).1.clone()
}

/// The fake of a pre-R510 driver (no `_v3` process lists, no `MemoryInfo_v2`).
#[allow(dead_code)]
pub fn legacy_library() -> PathBuf {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    BUILT
        .get_or_init(|| build(&["-DFAKE_NVML_LEGACY"]))
        .1
        .clone()
}

fn build(defines: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_nvml/fake_nvml.c");
    let out = dir.path().join("libnvidia-ml.so.1");
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
        .args(defines)
        .arg("-Wl,-soname,libnvidia-ml.so.1")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed on {}", src.display());
    (dir, out)
}
