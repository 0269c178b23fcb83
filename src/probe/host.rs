//! The `host` probe: OS, kernel, CPU, memory, `/dev/shm`, container and WSL.
//!
//! File-based facts are read through the [`Root`] (`/etc/os-release`, `/proc/cpuinfo`,
//! `/proc/meminfo`, `/proc/sys/kernel/*`, `/proc/1/cgroup`, the libc file, `/proc/mounts`) so a
//! fixture machine answers like a real one. Facts that only the live kernel knows (`statvfs` of
//! `/dev/shm`, the architecture, physical cores when cpuinfo does not say) come from `sysinfo`
//! and libc, and only when the root is this machine.

use super::{Apply, Context};
use crate::root::{Env, Root};
use crate::snapshot::host::{Container, Host};
use crate::snapshot::ProbeError;
use std::collections::BTreeSet;
use std::path::Path;

/// The CPU flags recorded (x86 then Arm), in this order, when present.
pub const FLAGS_THAT_MATTER: &[&str] = &[
    "sse4_1",
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_bf16",
    "asimd",
    "sve",
    "sve2",
];

/// Where glibc's `libc.so.6` lives on common distributions, most common first.
const LIBC_PATHS: &[&str] = &[
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/usr/lib/aarch64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/lib/libc.so.6",
    "/usr/lib/libc.so.6",
];

/// The probe entry point (registered as `host`).
pub fn probe(ctx: &Context) -> Apply {
    let mut errors = Vec::new();
    let host = collect(ctx.root(), ctx.env(), &mut errors);
    Box::new(move |snap| {
        snap.host = host;
        snap.probe_errors.extend(errors);
    })
}

/// Every host fact of the machine under `root`.
pub fn collect(root: &Root, env: &Env, errors: &mut Vec<ProbeError>) -> Host {
    let mut h = Host::default();
    if let Some(text) = read_optional(root, "/etc/os-release", errors)
        .or_else(|| read_optional(root, "/usr/lib/os-release", errors))
    {
        let (name, version) = parse_os_release(&text);
        h.os_name = name;
        h.os_version = version;
    }
    let osrelease = read_optional(root, "/proc/sys/kernel/osrelease", errors);
    h.kernel = osrelease.as_deref().map(|s| s.trim().to_string());
    if let Some(k) = &h.kernel {
        let lower = k.to_ascii_lowercase();
        h.wsl = lower.contains("microsoft") || lower.contains("wsl");
    }
    h.hostname = read_optional(root, "/proc/sys/kernel/hostname", errors)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    h.glibc_version = glibc_version(root);
    if let Some(text) = read_optional(root, "/proc/cpuinfo", errors) {
        let cpu = parse_cpuinfo(&text);
        h.cpu_model = cpu.model;
        h.cpu_cores = cpu.cores;
        h.cpu_threads = cpu.threads;
        h.cpu_flags = cpu.flags;
    }
    if let Some(text) = read_optional(root, "/proc/meminfo", errors) {
        let m = parse_meminfo(&text);
        h.memory_total_mib = m.total;
        h.swap_total_mib = m.swap_total;
        h.live.memory_available_mib = m.available;
        h.live.swap_free_mib = m.swap_free;
    }
    h.memory_limit_mib = cgroup_memory_limit(root);
    h.container = detect_container(root, env);
    if root.is_host() {
        fill_from_live_system(&mut h);
        match statvfs_mib(Path::new("/dev/shm")) {
            Ok((total, free)) => {
                h.shm_total_mib = Some(total);
                h.live.shm_free_mib = Some(free);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => errors.push(ProbeError::at("host", "/dev/shm", format!("statvfs: {e}"))),
        }
    }
    if h.shm_total_mib.is_none() {
        // A copied or fake machine: the tmpfs size its mount table asked for.
        h.shm_total_mib = read_optional(root, "/proc/mounts", errors)
            .as_deref()
            .and_then(shm_size_from_mounts);
    }
    h
}

/// Facts only the running kernel knows, or that the files did not give.
fn fill_from_live_system(h: &mut Host) {
    let arch = sysinfo::System::cpu_arch();
    if !arch.is_empty() && arch != "unknown" {
        h.arch = Some(arch);
    }
    if h.kernel.is_none() {
        h.kernel = sysinfo::System::kernel_version().ok();
    }
    if h.hostname.is_none() {
        h.hostname = sysinfo::System::host_name().ok();
    }
    if h.cpu_cores.is_none() {
        h.cpu_cores = sysinfo::System::physical_core_count()
            .ok()
            .and_then(|n| u32::try_from(n).ok());
    }
    if h.memory_total_mib.is_none() {
        let Ok(mut sys) = sysinfo::System::new() else {
            return;
        };
        sys.refresh_memory();
        h.memory_total_mib = Some(sys.total_memory() / MIB);
        h.swap_total_mib = Some(sys.total_swap() / MIB);
        h.live.memory_available_mib = Some(sys.available_memory() / MIB);
        h.live.swap_free_mib = Some(sys.free_swap() / MIB);
    }
}

const MIB: u64 = 1024 * 1024;

/// Read a small text file; a missing file is `None` silently, any other failure is recorded.
fn read_optional(root: &Root, path: &str, errors: &mut Vec<ProbeError>) -> Option<String> {
    match root.read_to_string_lossy(Path::new(path)) {
        Ok(s) => Some(s),
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            errors.push(ProbeError::from_root("host", &e));
            None
        }
    }
}

/// `NAME` and `VERSION_ID` (or `VERSION`) of an os-release file.
pub fn parse_os_release(text: &str) -> (Option<String>, Option<String>) {
    let mut name = None;
    let mut version_id = None;
    let mut version = None;
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim().trim_matches('"').trim_matches('\'').to_string();
        if v.is_empty() {
            continue;
        }
        match k.trim() {
            "NAME" => name = Some(v),
            "VERSION_ID" => version_id = Some(v),
            "VERSION" => version = Some(v),
            _ => {}
        }
    }
    (name, version_id.or(version))
}

/// What `/proc/cpuinfo` says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CpuInfo {
    /// The CPU model name.
    pub model: Option<String>,
    /// Physical cores.
    pub cores: Option<u32>,
    /// Hardware threads.
    pub threads: Option<u32>,
    /// The [`FLAGS_THAT_MATTER`] present on *every* logical CPU.
    pub flags: Vec<String>,
}

/// Parse `/proc/cpuinfo` (x86 `flags`, Arm `Features`).
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut model = None;
    let mut threads = 0u32;
    let mut cores: BTreeSet<(String, String)> = BTreeSet::new();
    let mut flag_sets: Vec<BTreeSet<&str>> = Vec::new();
    let (mut phys, mut core) = (String::new(), String::new());
    for line in text.lines().chain(std::iter::once("")) {
        if line.trim().is_empty() {
            if !core.is_empty() {
                cores.insert((phys.clone(), core.clone()));
            }
            phys.clear();
            core.clear();
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "processor" => threads += 1,
            "model name" | "Model Name" if model.is_none() && !v.is_empty() => {
                model = Some(v.to_string())
            }
            "physical id" => phys = v.to_string(),
            "core id" => core = v.to_string(),
            "flags" | "Features" => flag_sets.push(v.split_whitespace().collect()),
            _ => {}
        }
    }
    let flags = FLAGS_THAT_MATTER
        .iter()
        .filter(|f| !flag_sets.is_empty() && flag_sets.iter().all(|s| s.contains(**f)))
        .map(|f| f.to_string())
        .collect();
    CpuInfo {
        model,
        cores: (!cores.is_empty()).then_some(cores.len() as u32),
        threads: (threads > 0).then_some(threads),
        flags,
    }
}

/// What `/proc/meminfo` says, in MiB.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MemInfo {
    /// Total memory in bytes.
    pub total: Option<u64>,
    /// Available memory in bytes.
    pub available: Option<u64>,
    /// Total swap in bytes.
    pub swap_total: Option<u64>,
    /// Free swap in bytes.
    pub swap_free: Option<u64>,
}

/// Parse `/proc/meminfo` (`MemTotal:  16314488 kB`).
pub fn parse_meminfo(text: &str) -> MemInfo {
    let mut m = MemInfo::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let kib: Option<u64> = v.split_whitespace().next().and_then(|n| n.parse().ok());
        let mib = kib.map(|k| k / 1024);
        match k.trim() {
            "MemTotal" => m.total = mib,
            "MemAvailable" => m.available = mib,
            "SwapTotal" => m.swap_total = mib,
            "SwapFree" => m.swap_free = mib,
            _ => {}
        }
    }
    m
}

/// The glibc version of the machine: from the name of the file `libc.so.6` links to
/// (`libc-2.31.so`), else from the `release version 2.36` banner inside the library.
pub fn glibc_version(root: &Root) -> Option<String> {
    for candidate in LIBC_PATHS {
        let p = Path::new(candidate);
        let Ok(canon) = root.canonicalize(p) else {
            continue;
        };
        if let Some(v) = canon
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("libc-"))
            .and_then(|n| n.strip_suffix(".so"))
        {
            return Some(v.to_string());
        }
        if let Ok(bytes) = root.read(&canon) {
            if let Some(v) = banner_version(&bytes) {
                return Some(v);
            }
        }
    }
    None
}

/// The version in glibc's `... release version 2.36.` banner.
fn banner_version(bytes: &[u8]) -> Option<String> {
    const NEEDLE: &[u8] = b"release version ";
    let pos = bytes.windows(NEEDLE.len()).position(|w| w == NEEDLE)?;
    let rest = &bytes[pos + NEEDLE.len()..];
    let end = rest
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'.'))
        .unwrap_or(rest.len());
    let v = std::str::from_utf8(&rest[..end])
        .ok()?
        .trim_end_matches('.');
    (!v.is_empty() && v.contains('.')).then(|| v.to_string())
}

/// The size of the `/dev/shm` tmpfs from a mount table's `size=65536k` option, in MiB.
pub fn shm_size_from_mounts(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .rfind(|l| l.split_whitespace().nth(1) == Some("/dev/shm"))?;
    let opts = line.split_whitespace().nth(3)?;
    let size = opts.split(',').find_map(|o| o.strip_prefix("size="))?;
    parse_size(size).map(|b| b / MIB)
}

/// `65536k`, `64m`, `2g`, or bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1024),
        'm' | 'M' => (&s[..s.len() - 1], MIB),
        'g' | 'G' => (&s[..s.len() - 1], 1024 * MIB),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// `statvfs` of a directory of this machine: (total, free) MiB.
fn statvfs_mib(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let frsize = if st.f_frsize > 0 {
        st.f_frsize
    } else {
        st.f_bsize
    } as u64;
    Ok((
        st.f_blocks as u64 * frsize / MIB,
        st.f_bavail as u64 * frsize / MIB,
    ))
}

/// The memory limit of our cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), in MiB;
/// `None` when unlimited or unknown.
pub fn cgroup_memory_limit(root: &Root) -> Option<u64> {
    for p in [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ] {
        let Ok(text) = root.read_to_string_lossy(Path::new(p)) else {
            continue;
        };
        let t = text.trim();
        if t == "max" {
            return None;
        }
        if let Ok(bytes) = t.parse::<u64>() {
            // cgroup v1 says "unlimited" with a number near i64::MAX.
            if bytes >= (1u64 << 60) {
                return None;
            }
            return Some(bytes / MIB);
        }
    }
    None
}

/// The container envdoctor runs in, and what told.
pub fn detect_container(root: &Root, env: &Env) -> Option<Container> {
    let found = |kind: &str, evidence: &str| {
        Some(Container {
            kind: kind.to_string(),
            evidence: evidence.to_string(),
        })
    };
    if env.get("KUBERNETES_SERVICE_HOST").is_some() {
        return found("kubernetes", "KUBERNETES_SERVICE_HOST");
    }
    let cgroup = root
        .read_to_string_lossy(Path::new("/proc/1/cgroup"))
        .unwrap_or_default();
    if let Some(kind) = container_from_cgroup(&cgroup) {
        if kind == "kubernetes" {
            return found(kind, "/proc/1/cgroup");
        }
    }
    if root.exists(Path::new("/run/.containerenv")) {
        return found("podman", "/run/.containerenv");
    }
    if root.exists(Path::new("/.dockerenv")) {
        return found("docker", "/.dockerenv");
    }
    if let Some(kind) = container_from_cgroup(&cgroup) {
        return found(kind, "/proc/1/cgroup");
    }
    let mountinfo = root
        .read_to_string_lossy(Path::new("/proc/self/mountinfo"))
        .unwrap_or_default();
    if mountinfo.contains("/kubelet/pods/") {
        return found("kubernetes", "/proc/self/mountinfo");
    }
    if mountinfo.contains("/docker/containers/") {
        return found("docker", "/proc/self/mountinfo");
    }
    None
}

/// The container kind a cgroup file (`/proc/PID/cgroup`) names, when any.
pub fn container_from_cgroup(text: &str) -> Option<&'static str> {
    let t = text.to_ascii_lowercase();
    if t.contains("kubepods") {
        Some("kubernetes")
    } else if t.contains("libpod") {
        Some("podman")
    } else if t.contains("docker") {
        Some("docker")
    } else if t.contains("containerd") || t.contains("cri-containerd") {
        Some("containerd")
    } else if t.contains("/lxc") || t.contains("lxc.payload") {
        Some("lxc")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const CPUINFO_NO_AVX: &str = "processor\t: 0\nmodel name\t: Intel(R) Pentium(R) CPU G4560\n\
physical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu sse sse2 sse4_1 sse4_2 popcnt\n\n\
processor\t: 1\nmodel name\t: Intel(R) Pentium(R) CPU G4560\nphysical id\t: 0\ncore id\t\t: 0\n\
flags\t\t: fpu sse sse2 sse4_1 sse4_2 popcnt\n\n\
processor\t: 2\nmodel name\t: Intel(R) Pentium(R) CPU G4560\nphysical id\t: 0\ncore id\t\t: 1\n\
flags\t\t: fpu sse sse2 sse4_1 sse4_2 popcnt\n";

    #[test]
    fn cpuinfo_without_avx() {
        let c = parse_cpuinfo(CPUINFO_NO_AVX);
        assert_eq!(c.model.as_deref(), Some("Intel(R) Pentium(R) CPU G4560"));
        assert_eq!(c.threads, Some(3));
        assert_eq!(c.cores, Some(2));
        assert_eq!(c.flags, vec!["sse4_1", "sse4_2"]);
    }

    #[test]
    fn a_flag_missing_on_one_cpu_is_not_claimed() {
        let text = "processor: 0\nflags: avx avx2\n\nprocessor: 1\nflags: avx\n";
        assert_eq!(parse_cpuinfo(text).flags, vec!["avx"]);
    }

    #[test]
    fn os_release_and_meminfo() {
        let (n, v) = parse_os_release(
            "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\n",
        );
        assert_eq!(n.as_deref(), Some("Ubuntu"));
        assert_eq!(v.as_deref(), Some("22.04"));
        let (_, v) = parse_os_release("NAME=Arch\nVERSION=rolling\n");
        assert_eq!(v.as_deref(), Some("rolling"));
        let m = parse_meminfo("MemTotal:       16314488 kB\nMemFree: 1 kB\nMemAvailable:    8157244 kB\nSwapTotal:  0 kB\nSwapFree: 0 kB\n");
        assert_eq!(m.total, Some(15932));
        assert_eq!(m.available, Some(7966));
        assert_eq!(m.swap_total, Some(0));
    }

    #[test]
    fn shm_size_from_a_docker_mount_table() {
        let mounts = "overlay / overlay rw 0 0\nshm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n";
        assert_eq!(shm_size_from_mounts(mounts), Some(64));
        assert_eq!(shm_size_from_mounts("tmpfs /tmp tmpfs rw 0 0\n"), None);
        assert_eq!(parse_size("2g"), Some(2 * 1024 * MIB));
    }

    #[test]
    fn glibc_from_link_name_or_banner() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("lib/x86_64-linux-gnu");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("libc-2.31.so"), b"\x7fELF").unwrap();
        std::os::unix::fs::symlink("libc-2.31.so", dir.join("libc.so.6")).unwrap();
        assert_eq!(glibc_version(&Root::new(t.path())).as_deref(), Some("2.31"));

        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("usr/lib64");
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("libc.so.6"),
            b"\x7fELF\0\0GNU C Library (GNU libc) stable release version 2.39.\n\0",
        )
        .unwrap();
        assert_eq!(glibc_version(&Root::new(t.path())).as_deref(), Some("2.39"));
    }

    #[test]
    fn containers_from_their_marks() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let env = Env::default();
        assert_eq!(detect_container(&root, &env), None);
        fs::write(t.path().join(".dockerenv"), b"").unwrap();
        assert_eq!(detect_container(&root, &env).unwrap().kind, "docker");
        fs::create_dir_all(t.path().join("proc/1")).unwrap();
        fs::write(
            t.path().join("proc/1/cgroup"),
            "0::/kubepods/besteffort/pod1234/abcd\n",
        )
        .unwrap();
        let c = detect_container(&root, &env).unwrap();
        assert_eq!(
            (c.kind.as_str(), c.evidence.as_str()),
            ("kubernetes", "/proc/1/cgroup")
        );
        let env = Env::from_pairs([("KUBERNETES_SERVICE_HOST", "10.0.0.1")]);
        assert_eq!(
            detect_container(&Root::new("/nonexistent"), &env)
                .unwrap()
                .evidence,
            "KUBERNETES_SERVICE_HOST"
        );
        assert_eq!(
            container_from_cgroup("12:memory:/docker/0123abcd\n"),
            Some("docker")
        );
        assert_eq!(
            container_from_cgroup("0::/user.slice/user-1000.slice\n"),
            None
        );
    }
}
