//! `--timings` (issue 17) and the bounded unmet-requirement list, end to end on a real venv.
//!
//! - `snapshot --timings`: stdout is still a valid snapshot; stderr has one `timing` line per
//!   probe, per stage, for writing the JSON, and the total.
//! - A distribution with 300 missing `Requires-Dist` and one version conflict: the snapshot lists
//!   256 unmet requirements, the conflict among them, and counts the other 45.
//! - `check --from SNAPSHOT --timings --format json`: stdout is still JSON; stderr names rule
//!   compile, the rules' view, evaluation and rendering.

use assert_cmd::Command;
use envdoctor::Snapshot;
use std::path::Path;
use std::time::Duration;

fn dist(site: &Path, name: &str, version: &str, requires: &[String]) {
    let d = site.join(format!("{name}-{version}.dist-info"));
    std::fs::create_dir_all(&d).unwrap();
    let mut m = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    for r in requires {
        m.push_str(&format!("Requires-Dist: {r}\n"));
    }
    m.push_str("\nbody\n");
    std::fs::write(d.join("METADATA"), m).unwrap();
}

fn timing_names(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("timing "))
        .map(|l| l.rsplitn(3, ' ').nth(2).unwrap_or("").trim().to_string())
        .collect()
}

#[test]
fn timings_go_to_stderr_and_unmet_requirements_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&v)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(made, "python3 -m venv failed");
    let site = std::fs::read_dir(v.join("lib"))
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .expect("lib/python3.X")
        .path()
        .join("site-packages");
    let missing: Vec<String> = (0..300).map(|i| format!("missing-{i:03}>=1")).collect();
    dist(&site, "aaa", "1.0", &missing);
    dist(&site, "numpy", "2.1.3", &[]);
    dist(&site, "zzz", "1.0", &["numpy<2".to_string()]);

    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .env_clear()
        .env("PATH", v.join("bin"))
        .env("HOME", tmp.path())
        .args(["snapshot", "--no-load", "--timings"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let snap = Snapshot::from_json(&text, "stdout").unwrap();
    let names = timing_names(&out.stderr);
    for want in [
        "probe python",
        "probe libs",
        "probes stage 1",
        "probes stage 2",
        "render (write JSON)",
        "total",
    ] {
        assert!(names.iter().any(|n| n == want), "no `{want}` in {names:?}");
    }
    let py = snap
        .pythons
        .iter()
        .find(|p| p.path.starts_with(&*v.to_string_lossy()))
        .expect("the venv's interpreter");
    assert_eq!(py.unmet_requirements.len(), 256);
    assert_eq!(py.unmet_requirements_omitted, 45);
    assert!(py
        .unmet_requirements
        .iter()
        .any(|u| u.package == "zzz" && u.installed.as_deref() == Some("2.1.3")));

    let path = tmp.path().join("snap.json");
    std::fs::write(&path, &text).unwrap();
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .args(["check", "--timings", "--format", "json", "--from"])
        .arg(&path)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert!(json.get("findings").is_some(), "{json}");
    let names = timing_names(&out.stderr);
    for want in [
        "rules compile",
        "read snapshot",
        "rules: snapshot to JSON view",
        "rules: evaluate",
        "render",
        "total",
    ] {
        assert!(names.iter().any(|n| n == want), "no `{want}` in {names:?}");
    }
    // Without the flag, stderr has no timings.
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .args(["check", "--format", "json", "--from"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(timing_names(&out.stderr).is_empty());
}
