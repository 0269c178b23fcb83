//! Builds the fake NVML (`fake_nvml.c`) with the system C compiler, once per test binary.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The compiled fake, named like the real library (`libnvidia-ml.so.1`).
pub fn library() -> PathBuf {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_nvml/fake_nvml.c");
        let out = dir.path().join("libnvidia-ml.so.1");
        let status = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
            .arg("-Wl,-soname,libnvidia-ml.so.1")
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .status()
            .expect("run cc");
        assert!(status.success(), "cc failed on {}", src.display());
        (dir, out)
    });
    path.clone()
}
