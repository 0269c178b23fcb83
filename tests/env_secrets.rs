//! The env section: allowlisted variables only, secrets never written.

use assert_cmd::Command;
use serde_json::Value;

#[test]
fn secrets_never_reach_the_snapshot_and_unlisted_variables_are_left_out() {
    let root = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .arg("snapshot")
        .arg("--root")
        .arg(root.path())
        .env("HF_TOKEN", "hf_secret123")
        .env("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG")
        .env("WANDB_API_KEY", "wandb-secret-456")
        .env("CUDA_VISIBLE_DEVICES", "1,0")
        .env("TF_FORCE_GPU_ALLOW_GROWTH", "true")
        .env("PIP_INDEX_URL", "https://u:pipsecret@pypi.example/simple")
        .env("HF_ENDPOINT", "https://bob:endpointsecret@hf.example")
        .env("MY_UNRELATED_VAR", "hello-unrelated")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for secret in [
        "hf_secret123",
        "wJalrXUtnFEMI",
        "wandb-secret-456",
        "pipsecret",
        "endpointsecret",
    ] {
        assert!(!text.contains(secret), "{secret} leaked into the snapshot");
    }
    let snap: Value = serde_json::from_str(&text).unwrap();
    let env = snap["env"].as_object().unwrap();
    assert_eq!(env["HF_TOKEN"], "<redacted>");
    assert_eq!(env["WANDB_API_KEY"], "<redacted>");
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "1,0");
    assert_eq!(env["TF_FORCE_GPU_ALLOW_GROWTH"], "true");
    assert_eq!(env["HF_ENDPOINT"], "https://bob:<redacted>@hf.example");
    assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
    assert!(!env.contains_key("MY_UNRELATED_VAR"));
    assert!(!env.contains_key("PIP_INDEX_URL"));
    assert!(!text.contains("hello-unrelated"));
    // PATH is allowlisted and recorded verbatim.
    assert_eq!(env["PATH"], std::env::var("PATH").unwrap());
}
