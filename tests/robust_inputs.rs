//! Hostile files on a probed machine (issue 16): each test writes the input an audit found
//! taking envdoctor down (a panic, a stack overflow, a hang, a lost fact) onto a fake machine
//! and asserts that the snapshot is still written, that the bad file is named in
//! `probe_errors`, and that the neighbouring facts are kept.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

use crate::common::machine;
use machine::Machine;

/// `envdoctor snapshot --root ROOT --no-load` with exactly `env`; asserts exit 0 and JSON.
fn snapshot(root: &Path, env: &[(String, String)], extra: &[&str]) -> Value {
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear()
        .args(["snapshot", "--no-load", "--root"])
        .arg(root)
        .args(extra)
        .timeout(std::time::Duration::from_secs(60));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

fn errors(snap: &Value) -> Vec<String> {
    snap["probe_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{} {}", e["path"].as_str().unwrap_or(""), e["message"]))
        .collect()
}

fn packages(snap: &Value, venv: &str) -> Vec<String> {
    let py = snap["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"].as_str() == Some(&format!("{venv}/bin/python")))
        .unwrap_or_else(|| panic!("no interpreter {venv}/bin/python in {:#}", snap["pythons"]));
    py["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

fn add_dist(m: &Machine, venv: &str, name: &str, metadata_tail: &str) {
    m.write(
        &format!("{venv}/lib/python3.11/site-packages/{name}-1.0.dist-info/METADATA"),
        &format!("Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n{metadata_tail}"),
    );
}

/// `Requires-Dist: foo.*` made pep508_rs 0.9.2 panic and the whole python probe die: now the
/// line is refused, the file named, and both venvs keep every package.
#[test]
fn requires_dist_name_ending_in_dot_is_a_probe_error_not_a_panic() {
    let mut m = Machine::new();
    m.venv("3.11", "/a", &[("six", "1.16.0")]);
    m.venv("3.11", "/b", &[("idna", "3.7")]);
    add_dist(
        &m,
        "/a",
        "badpkg",
        "Requires-Dist: foo.*\nRequires-Dist: six\n",
    );
    // The egg-info form of the same line, as some real requires.txt files have it.
    m.write(
        "/b/lib/python3.11/site-packages/eggy-2.0-py3.11.egg-info/PKG-INFO",
        "Metadata-Version: 1.2\nName: eggy\nVersion: 2.0\n",
    );
    m.write(
        "/b/lib/python3.11/site-packages/eggy-2.0-py3.11.egg-info/requires.txt",
        "idna\n\n[gpu]\nfoo.*\n",
    );
    m.env("PATH", "/a/bin:/b/bin:/usr/bin:/bin");
    let snap = snapshot(m.root(), &m.env, &[]);
    let mut a = packages(&snap, "/a");
    a.sort();
    assert_eq!(a, ["badpkg", "six"]);
    let mut b = packages(&snap, "/b");
    b.sort();
    assert_eq!(b, ["eggy", "idna"]);
    let errs = errors(&snap);
    assert!(
        errs.iter()
            .any(|e| e.contains("badpkg-1.0.dist-info") && e.contains("foo.*")),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("eggy-2.0-py3.11.egg-info") && e.contains("foo.*")),
        "{errs:#?}"
    );
}

/// A marker nested 3,000 parentheses deep overflowed the probe thread's stack (exit 134).
#[test]
fn deeply_nested_marker_is_refused_with_the_file_named() {
    let mut m = Machine::new();
    m.venv("3.11", "/a", &[("six", "1.16.0")]);
    let marker = format!(
        "{}python_version >= \"3\"{}",
        "(".repeat(3000),
        ")".repeat(3000)
    );
    add_dist(
        &m,
        "/a",
        "deep",
        &format!("Requires-Dist: six ; {marker}\n"),
    );
    m.env("PATH", "/a/bin:/usr/bin:/bin");
    let snap = snapshot(m.root(), &m.env, &[]);
    let mut a = packages(&snap, "/a");
    a.sort();
    assert_eq!(a, ["deep", "six"]);
    let errs = errors(&snap);
    assert!(
        errs.iter()
            .any(|e| e.contains("deep-1.0.dist-info") && e.contains("nested 3000 deep")),
        "{errs:#?}"
    );
}

/// VS Code settings nested 5,000 deep (project and user settings) overflowed the stack.
#[test]
fn deeply_nested_vscode_settings_are_refused_with_the_file_named() {
    let mut m = Machine::new();
    m.venv("3.11", "/proj/.venv", &[("six", "1.16.0")]);
    let deep = format!("{{\"a\": {}1{}}}", "[".repeat(5000), "]".repeat(5000));
    m.write("/proj/.vscode/settings.json", &deep);
    m.write("/home/u/.config/Code/User/settings.json", &deep);
    m.env("HOME", "/home/u");
    let snap = snapshot(m.root(), &m.env, &["--project", "/proj"]);
    assert_eq!(packages(&snap, "/proj/.venv"), ["six"]);
    let errs = errors(&snap);
    for f in [
        "/proj/.vscode/settings.json",
        "/home/u/.config/Code/User/settings.json",
    ] {
        assert!(
            errs.iter()
                .any(|e| e.contains(f) && e.contains("nested 5001 deep")),
            "{f}: {errs:#?}"
        );
    }
}

/// Secrets by shape (audit item 9): a URL password with an unescaped `/`, `user:pass@host`
/// without a scheme and a long random token in allowlisted variables never reach the snapshot.
#[test]
fn secrets_are_redacted_by_shape_in_the_snapshot() {
    let mut m = Machine::new();
    m.env("HF_ENDPOINT", "https://bob:s3/cr3t@hf.example/api");
    m.env("MASTER_ADDR", "trainer:hunter2pw@10.0.0.7");
    m.env("PYTORCH_EXTRA", "--auth aZ9kQ2mX7pL4vN8rT1yB6cD3fG5hJ0wE");
    m.env("CUDA_VISIBLE_DEVICES", "0,1");
    let snap = snapshot(m.root(), &m.env, &[]);
    let text = snap["env"].to_string();
    for secret in [
        "s3/cr3t",
        "cr3t",
        "hunter2pw",
        "aZ9kQ2mX7pL4vN8rT1yB6cD3fG5hJ0wE",
    ] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert_eq!(
        snap["env"]["HF_ENDPOINT"],
        "https://bob:<redacted>@hf.example/api"
    );
    assert_eq!(snap["env"]["MASTER_ADDR"], "trainer:<redacted>@10.0.0.7");
    assert_eq!(snap["env"]["CUDA_VISIBLE_DEVICES"], "0,1");
}

/// A venv under a directory whose name is not UTF-8 lost its packages (the lossy spelling was
/// read back as a path).
#[test]
fn venv_under_a_non_utf8_path_keeps_its_packages() {
    use std::os::unix::ffi::OsStrExt;
    let mut m = Machine::new();
    m.venv("3.11", "/usr/venv-template", &[]);
    let raw = std::ffi::OsStr::from_bytes(b"/p\xff/venv");
    let venv = m.root().join(std::ffi::OsStr::from_bytes(b"p\xff/venv"));
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(
        venv.join("pyvenv.cfg"),
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.9\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3.11", venv.join("bin/python")).unwrap();
    let dist = venv.join("lib/python3.11/site-packages/six-1.16.0.dist-info");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("METADATA"),
        "Metadata-Version: 2.1\nName: six\nVersion: 1.16.0\n",
    )
    .unwrap();
    // PATH names the venv by its real (non-UTF-8) bytes.
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    let mut path = raw.as_bytes().to_vec();
    path.extend_from_slice(b"/bin:/usr/bin:/bin");
    cmd.env_clear()
        .env("PATH", std::ffi::OsStr::from_bytes(&path))
        .args(["snapshot", "--no-load", "--root"])
        .arg(m.root());
    let out = cmd.output().unwrap();
    assert!(out.status.success());
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(packages(&snap, "/p\u{FFFD}/venv"), ["six"]);
}

/// A FIFO `pyvenv.cfg` made its venv vanish (not a venv, no packages, nothing said): now the
/// venv stays a venv, keeps its packages, and the FIFO is named.
#[test]
fn fifo_pyvenv_cfg_is_a_probe_error_and_the_venv_stays() {
    let mut m = Machine::new();
    m.venv("3.11", "/v", &[("six", "1.16.0")]);
    let cfg = m.path("/v/pyvenv.cfg");
    std::fs::remove_file(&cfg).unwrap();
    let st = std::process::Command::new("mkfifo")
        .arg(&cfg)
        .status()
        .unwrap();
    assert!(st.success());
    m.env("PATH", "/v/bin:/usr/bin:/bin");
    let snap = snapshot(m.root(), &m.env, &[]);
    let py = snap["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == "/v/bin/python")
        .unwrap();
    assert_eq!(py["kind"], "venv", "{py:#}");
    assert_eq!(packages(&snap, "/v"), ["six"]);
    let errs = errors(&snap);
    assert!(
        errs.iter()
            .any(|e| e.contains("/v/pyvenv.cfg") && e.to_lowercase().contains("fifo")),
        "{errs:#?}"
    );
}

/// Issue 30, 10f for CUDA: a FIFO `version.json` (a toolkit directory on a network mount, a
/// bind-mounted pipe) blocked no read, but its facts were lost without a word. Now the probe
/// neither hangs nor goes quiet: a toolkit with a FIFO `version.json` and a real `version.txt`
/// keeps the `version.txt` version, one with the FIFO alone stays a toolkit with its version
/// unknown, and each FIFO is a probe problem naming the file.
#[test]
fn fifo_cuda_version_json_is_named_and_never_hangs() {
    let m = Machine::new();
    m.write(
        "/usr/local/cuda-12.4/version.txt",
        "CUDA Version 12.4.131\n",
    );
    m.write("/usr/local/cuda-12.4/bin/nvcc", "");
    m.write("/usr/local/cuda-11.8/bin/nvcc", "");
    for dir in ["/usr/local/cuda-12.4", "/usr/local/cuda-11.8"] {
        let st = std::process::Command::new("mkfifo")
            .arg(m.path(&format!("{dir}/version.json")))
            .status()
            .unwrap();
        assert!(st.success());
    }
    let started = std::time::Instant::now();
    let snap = snapshot(
        m.root(),
        &[("PATH".into(), "/usr/bin:/bin".into())],
        &["--deadline", "20"],
    );
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(15), "took {took:?}");
    let tks = snap["cuda"]["toolkits"].as_array().unwrap();
    let tk = |p: &str| {
        tks.iter()
            .find(|t| t["path"] == p)
            .unwrap_or_else(|| panic!("no toolkit {p} in {tks:#?}"))
    };
    assert_eq!(tk("/usr/local/cuda-12.4")["version"], "12.4.131");
    assert_eq!(
        tk("/usr/local/cuda-12.4")["version_source"],
        "/usr/local/cuda-12.4/version.txt"
    );
    assert!(tk("/usr/local/cuda-11.8")["version"].is_null());
    let errs = errors(&snap);
    for dir in ["/usr/local/cuda-12.4", "/usr/local/cuda-11.8"] {
        let file = format!("{dir}/version.json");
        assert!(
            errs.iter()
                .any(|e| e.contains(&file) && e.to_lowercase().contains("fifo")),
            "{file} not named: {errs:#?}"
        );
    }
    assert!(
        !errs
            .iter()
            .any(|e| e.contains("deadline") || e.contains("timed out")),
        "{errs:#?}"
    );
}
