//! `nvml` and `gpus[]`: what NVML says about the driver, each device, and who occupies it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// NVML itself and what the environment makes visible.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nvml {
    /// `ok`, `no-device` (NVML works, lists no GPU), `no-library`, `driver-not-loaded`,
    /// `version-mismatch` ("Driver/library version mismatch"), `no-permission`, `timeout` (NVML
    /// did not answer by the deadline: a wedged driver), `crashed` (NVML killed the child
    /// process that queried it), `error`, `not-probed` (`--no-load`, or `--root` without
    /// `--nvml-lib`).
    pub status: String,
    /// A sentence for a person when status is not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The library that was loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// Driver version (`580.65.06`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// Highest CUDA version the driver supports (`13.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_driver_version: Option<String>,
    /// NVML's own version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml_version: Option<String>,
    /// `CUDA_VISIBLE_DEVICES` mapped onto the devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visible_devices: Option<VisibleDevices>,
}

/// `CUDA_VISIBLE_DEVICES` against the devices NVML lists.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VisibleDevices {
    /// The raw value (`None` when unset: every device is visible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Indices of the devices a job here would see, in CUDA order.
    pub visible: Vec<u32>,
    /// Entries that match no device (CUDA stops at the first of these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmatched: Vec<String>,
    /// Entries after the first unmatched one: CUDA never reads them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<String>,
    /// True when indices were given, `CUDA_DEVICE_ORDER` is not `PCI_BUS_ID` and the devices
    /// differ: CUDA numbers them fastest first, NVML by PCI bus, so an index may name another
    /// device than `visible` says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub order_uncertain: bool,
}

/// One GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// NVML index.
    pub index: u32,
    /// `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// `GPU-…`.
    pub uuid: String,
    /// PCI bus id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// `9.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// Total memory in MiB.
    pub memory_total_mib: u64,
    /// `default`, `exclusive-process`, `prohibited`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_mode: Option<String>,
    /// MIG enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_enabled: Option<bool>,
    /// Persistence mode enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_mode: Option<bool>,
    /// UUIDs of its MIG devices (`MIG-…`), when MIG is enabled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig_devices: Vec<String>,
    /// ECC and memory-error state, as far as the device and driver report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc: Option<GpuEcc>,
    /// Whether `CUDA_VISIBLE_DEVICES` lets a job here see it.
    pub visible: bool,
    /// Volatile state: memory in use, utilisation, processes.
    #[serde(default)]
    pub live: GpuLive,
}

/// ECC and memory-error state of a GPU (NVML; absent fields are not supported there).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuEcc {
    /// ECC is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Uncorrectable ECC errors since the driver loaded (the volatile counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_volatile: Option<u64>,
    /// Pages with errors wait to be retired; they are retired when the driver reloads (a
    /// reboot or GPU reset). Before Ampere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_pages_pending: Option<bool>,
    /// A row remap waits for a GPU reset (Ampere and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_pending: Option<bool>,
    /// A row remap failed: the memory has more errors than spare rows (Ampere and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_failed: Option<bool>,
}

/// The minute-to-minute state of a GPU (ignored by `compare` unless `--all`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuLive {
    /// Memory in use, MiB.
    pub memory_used_mib: u64,
    /// Memory free, MiB.
    pub memory_free_mib: u64,
    /// Percent of memory in use (0-100).
    pub memory_used_percent: f64,
    /// GPU utilisation percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_percent: Option<u32>,
    /// Processes holding the device.
    #[serde(default)]
    pub processes: Vec<GpuProcess>,
    /// Memory held by processes outside this PID namespace, MiB.
    #[serde(default)]
    pub foreign_memory_mib: u64,
    /// How many of `processes` are outside this PID namespace.
    #[serde(default)]
    pub foreign_processes: u32,
    /// Memory in use that no listed process accounts for, MiB (used minus every process's
    /// memory): a process in another container the driver does not list, an MPS server, a
    /// context leaked by a process that is gone. Absent when a process's memory is unknown or
    /// MIG is enabled (the parent's counters then cover every instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unaccounted_memory_mib: Option<u64>,
}

/// A process on a GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuProcess {
    /// Pid as NVML reports it (a host pid).
    pub pid: u32,
    /// `compute`, `graphics`, or `compute+graphics` (NVML lists such a process twice).
    pub kind: String,
    /// GPU memory used, MiB (when NVML tells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_memory_mib: Option<u64>,
    /// Process name, when visible here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Owner, when visible here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Owner's uid, when visible here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// Owned by the user running envdoctor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_user: Option<bool>,
    /// False when the pid is not in our PID namespace (another container, the host).
    pub in_our_pid_namespace: bool,
    /// Its cgroup / container, when visible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// `zombie` (it exited and its parent has not reaped it: its GPU memory stays held), or
    /// `exited` (no such process, seen from the host's PID namespace with every pid visible:
    /// the driver still holds its context). Absent for a live process or when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

impl Gpu {
    /// Sort processes by pid.
    pub fn normalize(&mut self) {
        self.live.processes.sort_by_key(|p| p.pid);
    }
}
