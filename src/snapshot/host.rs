//! `host`: the machine around the GPUs: OS, kernel, CPU, memory, shared memory, container.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Host identity facts (volatile ones under `live`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// `Debian GNU/Linux`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_name: Option<String>,
    /// `12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_version: Option<String>,
    /// Kernel release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// `x86_64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// glibc version (`2.36`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc_version: Option<String>,
    /// Hostname.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// CPU model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Physical cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_cores: Option<u32>,
    /// Logical CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_threads: Option<u32>,
    /// The CPU flags that matter to ML wheels (`avx`, `avx2`, `avx512f`, `fma`, ...).
    #[serde(default)]
    pub cpu_flags: Vec<String>,
    /// Total memory, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_mib: Option<u64>,
    /// The memory limit of envdoctor's cgroup (a container's `--memory`), MiB; absent when
    /// unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_mib: Option<u64>,
    /// Total swap, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_total_mib: Option<u64>,
    /// Size of `/dev/shm`, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_total_mib: Option<u64>,
    /// The container it runs in, when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Container>,
    /// Running under WSL.
    #[serde(default)]
    pub wsl: bool,
    /// Volatile facts.
    #[serde(default)]
    pub live: HostLive,
}

/// A container the probe runs in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Container {
    /// `docker`, `podman`, `kubernetes`, `lxc`, `containerd`, `other`.
    pub kind: String,
    /// What told (`/.dockerenv`, `/proc/1/cgroup`, `KUBERNETES_SERVICE_HOST`).
    pub evidence: String,
}

/// Minute-to-minute host state (ignored by `compare` unless `--all`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostLive {
    /// Available memory, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_available_mib: Option<u64>,
    /// Free swap, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_free_mib: Option<u64>,
    /// Free space in `/dev/shm`, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_free_mib: Option<u64>,
}
