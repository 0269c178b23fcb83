//! The host probe against this machine (checked with independent tools) and fixture machines.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn snapshot(args: &[&str]) -> Value {
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .arg("snapshot")
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("snapshot is JSON")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/machines")
        .join(name)
        .display()
        .to_string()
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(cmd).args(args).output().unwrap();
    assert!(out.status.success(), "{cmd} {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn this_machine_matches_uname_getconf_cpuinfo_and_df() {
    let snap = snapshot(&["--root", "/", "--deadline", "30"]);
    let host = &snap["host"];
    assert_eq!(host["kernel"], run("uname", &["-r"]).trim());
    assert_eq!(host["arch"], run("uname", &["-m"]).trim());
    // `getconf GNU_LIBC_VERSION` prints `glibc 2.36`.
    let glibc = run("getconf", &["GNU_LIBC_VERSION"]);
    assert_eq!(
        host["glibc_version"],
        glibc.split_whitespace().nth(1).unwrap()
    );

    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let threads = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    assert_eq!(host["cpu_threads"], threads as u64);
    let flags_line = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags") || l.starts_with("Features"))
        .unwrap();
    let cpu_flags: Vec<&str> = flags_line
        .split_once(':')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let reported: Vec<&str> = host["cpu_flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for f in ["avx", "avx2", "avx512f", "fma", "f16c", "sse4_2"] {
        assert_eq!(
            reported.contains(&f),
            cpu_flags.contains(&f),
            "flag {f}: reported {reported:?}"
        );
    }
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .map(|l| l.split_once(':').unwrap().1.trim().to_string());
    if let Some(model) = model {
        assert_eq!(host["cpu_model"], model);
    }

    // df -k /dev/shm: 1K-blocks is the second field of the second line.
    let df = run("df", &["-k", "/dev/shm"]);
    let kib: u64 = df
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(host["shm_total_mib"], kib / 1024);

    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(host["memory_total_mib"], total_kib / 1024);
    assert!(host["live"]["memory_available_mib"].as_u64().unwrap() <= total_kib / 1024);

    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(host["hostname"], hostname.trim());
    assert_eq!(
        host["container"]["kind"] == "docker",
        Path::new("/.dockerenv").exists() && std::env::var_os("KUBERNETES_SERVICE_HOST").is_none()
    );
}

#[test]
fn old_docker_box_without_avx_and_a_64_mib_shm() {
    let snap = snapshot(&["--root", &fixture("host-docker-noavx")]);
    let host = &snap["host"];
    assert_eq!(host["os_name"], "Ubuntu");
    assert_eq!(host["os_version"], "18.04");
    assert_eq!(host["kernel"], "5.4.0-150-generic");
    assert_eq!(host["glibc_version"], "2.27");
    assert_eq!(host["hostname"], "trainer-7");
    assert_eq!(host["cpu_model"], "Intel(R) Celeron(R) CPU G3930 @ 2.90GHz");
    assert_eq!(host["cpu_threads"], 4);
    assert_eq!(host["cpu_cores"], 2);
    assert_eq!(host["cpu_flags"], serde_json::json!(["sse4_1", "sse4_2"]));
    assert_eq!(host["memory_total_mib"], 7859);
    assert_eq!(host["memory_limit_mib"], 4096);
    assert_eq!(host["swap_total_mib"], 2047);
    assert_eq!(host["live"]["memory_available_mib"], 3929);
    assert_eq!(host["shm_total_mib"], 64);
    assert_eq!(host["container"]["kind"], "docker");
    assert_eq!(host["wsl"], false);
    // This machine's facts must not leak into a fake machine's snapshot.
    assert!(host.get("arch").is_none(), "{host}");
}

#[test]
fn wsl2_fedora_with_avx512() {
    let snap = snapshot(&["--root", &fixture("host-wsl2")]);
    let host = &snap["host"];
    assert_eq!(host["os_name"], "Fedora Linux");
    assert_eq!(host["os_version"], "40");
    assert_eq!(host["wsl"], true);
    assert_eq!(host["glibc_version"], "2.39");
    assert_eq!(host["shm_total_mib"], 7944);
    assert!(host.get("container").is_none());
    let flags = host["cpu_flags"].as_array().unwrap();
    assert!(flags.contains(&"avx512f".into()) && flags.contains(&"avx".into()));
}
