//! The system's loader layout, shared by the loader emulation (`search`) and the cache reader
//! (`ldcache`): the `glibc-hwcaps` levels a CPU supports, the legacy hwcaps subdirectories, and
//! the default (trusted) directories of a multiarch (Debian/Ubuntu) or lib64 (Fedora/RHEL)
//! system. Facts about the machine's layout only; no search order lives here.

use crate::root::Root;
use std::path::{Path, PathBuf};

/// The x86-64 microarchitecture levels with a `glibc-hwcaps` subdirectory, best first.
pub const HWCAPS_LEVELS: [&str; 3] = ["x86-64-v4", "x86-64-v3", "x86-64-v2"];

const V2: &[&str] = &[
    "cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3",
];
const V3: &[&str] = &[
    "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
];
const V4: &[&str] = &["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"];

/// The supported `glibc-hwcaps` levels, best first, for a `/proc/cpuinfo` text.
pub fn hwcaps_from_cpuinfo(cpuinfo: &str) -> Vec<&'static str> {
    let Some(flags) = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, f)| {
            f.split_whitespace()
                .collect::<std::collections::HashSet<_>>()
        })
    else {
        return Vec::new();
    };
    let has = |set: &[&str]| set.iter().all(|f| flags.contains(f));
    let mut out = Vec::new();
    if has(V2) {
        if has(V3) {
            if has(V4) {
                out.push(HWCAPS_LEVELS[0]);
            }
            out.push(HWCAPS_LEVELS[1]);
        }
        out.push(HWCAPS_LEVELS[2]);
    }
    out
}

/// True when `root` has the Debian/Ubuntu multiarch layout.
pub fn is_multiarch(root: &Root) -> bool {
    root.is_dir(Path::new("/usr/lib/x86_64-linux-gnu"))
        || root.is_dir(Path::new("/lib/x86_64-linux-gnu"))
        || !(root.is_dir(Path::new("/usr/lib64")))
}

/// The default (system) search directories for `root` (see the module docs).
pub fn default_dirs(root: &Root) -> Vec<PathBuf> {
    if is_multiarch(root) {
        [
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
            "/lib",
            "/usr/lib",
        ]
        .iter()
        .map(PathBuf::from)
        .collect()
    } else {
        ["/lib64", "/usr/lib64"].iter().map(PathBuf::from).collect()
    }
}

/// The legacy hwcaps subdirectories glibc 2.26–2.36 tries on x86-64 after the
/// `glibc-hwcaps` ones (`ld.so --help` of 2.36: `tls`, platform `x86_64`, hwcap `x86_64`).
pub const LEGACY_SUBDIRS: [&str; 5] = [
    "tls/x86_64/x86_64",
    "tls/x86_64",
    "tls",
    "x86_64/x86_64",
    "x86_64",
];
