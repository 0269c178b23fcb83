//! The NVML child: runs inside `envdoctor __nvml-child`, loads NVML through `nvml-wrapper` and
//! writes what it learns to its result fd (see [`crate::probe::childproc`]; stdout when run by
//! hand) as JSON lines, one [`Event`] per line, as soon as it knows
//! it. The parent keeps every complete line it got, so a driver that wedges in the middle of
//! device 3 still leaves devices 0–2 in the snapshot.
//!
//! Nothing here touches the filesystem or the environment beyond what NVML itself does.

use nvml_wrapper::enum_wrappers::device::ComputeMode;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;

/// The name NVML is loaded by when `--nvml-lib` is not given.
pub const DEFAULT_LIBRARY: &str = "libnvidia-ml.so.1";

/// One line of the child's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// Written first: the child started and speaks this protocol.
    Hello {
        /// The protocol version.
        protocol: u32,
    },
    /// The library could not be loaded or initialised.
    InitFailed {
        /// The `nvml.status` it maps to.
        status: String,
        /// NVML's (or the loader's) message.
        message: String,
    },
    /// NVML is up: system facts.
    System {
        /// The NVML library file that was loaded.
        library: Option<String>,
        /// The driver version NVML reports.
        driver_version: Option<String>,
        /// The CUDA version the driver supports (`12.4`).
        cuda_driver_version: Option<String>,
        /// NVML's own version.
        nvml_version: Option<String>,
        /// How many devices NVML counts.
        device_count: u32,
        /// Calls that failed, as messages.
        errors: Vec<String>,
    },
    /// One device, complete.
    Device(RawDevice),
    /// Everything was written.
    Done,
}

/// What NVML says about one device (bytes as NVML gives them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RawDevice {
    /// NVML's device index.
    pub index: u32,
    /// The product name.
    pub name: Option<String>,
    /// The device UUID.
    pub uuid: Option<String>,
    /// The PCI bus id.
    pub pci_bus_id: Option<String>,
    /// The compute capability (`8.0`).
    pub compute_capability: Option<String>,
    /// Total memory in bytes.
    pub memory_total: Option<u64>,
    /// Memory in use in bytes.
    pub memory_used: Option<u64>,
    /// Free memory in bytes.
    pub memory_free: Option<u64>,
    /// GPU utilisation in percent.
    pub utilization_gpu: Option<u32>,
    /// The compute mode.
    pub compute_mode: Option<String>,
    /// Whether MIG mode is on.
    pub mig_enabled: Option<bool>,
    /// Whether persistence mode is on.
    pub persistence_mode: Option<bool>,
    /// The MIG devices' UUIDs.
    pub mig_devices: Vec<String>,
    /// Processes holding memory on it.
    pub processes: Vec<RawProcess>,
    /// ECC memory health (absent fields: not supported or an older child).
    #[serde(default)]
    pub ecc: RawEcc,
    /// Failed queries other than "not supported", for `probe_errors`.
    pub errors: Vec<String>,
}

/// What NVML says about a device's memory errors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RawEcc {
    /// ECC currently enabled (`nvmlDeviceGetEccMode`).
    pub enabled: Option<bool>,
    /// Uncorrectable errors since the driver loaded (`nvmlDeviceGetTotalEccErrors`, volatile).
    pub uncorrected_volatile: Option<u64>,
    /// Pages waiting to be retired at the next driver reload
    /// (`nvmlDeviceGetRetiredPagesPendingStatus`, before Ampere).
    pub retired_pages_pending: Option<bool>,
    /// Row remapping (Ampere and later, `nvmlDeviceGetRemappedRows`): a remap waits for a GPU
    /// reset, or a remap failed.
    pub remap_pending: Option<bool>,
    /// Whether a row remapping failed.
    pub remap_failed: Option<bool>,
}

/// A process NVML lists on a device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RawProcess {
    /// The process id.
    pub pid: u32,
    /// `compute` or `graphics`.
    pub kind: String,
    /// GPU memory it holds, in bytes.
    pub used_bytes: Option<u64>,
}

/// The version of the line protocol (bumped when [`Event`] changes incompatibly).
pub const PROTOCOL: u32 = 1;

/// Entry point of `envdoctor __nvml-child`: query NVML, write events, return the exit code.
pub fn run(lib: Option<&Path>) -> i32 {
    // The parent's result fd (see `probe::childproc`); stdout when run by hand.
    let mut out: Box<dyn Write> = match crate::probe::childproc::result_writer() {
        Some(f) => Box::new(f),
        None => Box::new(std::io::stdout()),
    };
    let mut emit = |e: &Event| -> bool {
        match serde_json::to_string(e) {
            // One write per line, so nothing the driver prints can split it.
            Ok(line) => out
                .write_all(format!("{line}\n").as_bytes())
                .and_then(|_| out.flush())
                .is_ok(),
            Err(_) => false,
        }
    };
    if !emit(&Event::Hello { protocol: PROTOCOL }) {
        return 1;
    }
    let path: &OsStr = lib.map_or(OsStr::new(DEFAULT_LIBRARY), |p| p.as_os_str());
    let nvml = match Nvml::builder().lib_path(path).init() {
        Ok(n) => n,
        Err(e) => {
            let (status, message) = init_failure(&e, path);
            emit(&Event::InitFailed { status, message });
            return 0;
        }
    };
    let mut errors = Vec::new();
    let driver_version = opt(
        nvml.sys_driver_version(),
        "nvmlSystemGetDriverVersion",
        &mut errors,
    );
    let nvml_version = opt(
        nvml.sys_nvml_version(),
        "nvmlSystemGetNVMLVersion",
        &mut errors,
    );
    let cuda_driver_version = opt(
        nvml.sys_cuda_driver_version(),
        "nvmlSystemGetCudaDriverVersion_v2",
        &mut errors,
    )
    .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
    let device_count = match nvml.device_count() {
        Ok(n) => n,
        Err(e) => {
            errors.push(format!("nvmlDeviceGetCount_v2: {e}"));
            0
        }
    };
    let library = loaded_library(path);
    if !emit(&Event::System {
        library,
        driver_version,
        cuda_driver_version,
        nvml_version,
        device_count,
        errors,
    }) {
        return 1;
    }
    for index in 0..device_count {
        let dev = device(&nvml, index);
        if !emit(&Event::Device(dev)) {
            return 1;
        }
    }
    emit(&Event::Done);
    // Process exit releases NVML; skipping `nvmlShutdown` also keeps a library that lacks the
    // symbol from panicking in nvml-wrapper's `Drop`.
    std::mem::forget(nvml);
    0
}

/// `nvml.status` and a message for a failed load or `nvmlInit_v2`.
fn init_failure(e: &NvmlError, path: &OsStr) -> (String, String) {
    let lib = path.to_string_lossy();
    let (status, message) = match e {
        NvmlError::LibloadingError(le) => (
            "no-library",
            format!("could not load {lib}: {le} (no NVIDIA driver installed, or not visible here)"),
        ),
        NvmlError::FailedToLoadSymbol(s) => (
            "error",
            format!("{lib} is not a usable NVML library: {s}"),
        ),
        NvmlError::DriverNotLoaded => (
            "driver-not-loaded",
            "NVIDIA driver is not loaded (NVML_ERROR_DRIVER_NOT_LOADED): no kernel module, \
             or a container started without the GPU runtime"
                .to_string(),
        ),
        NvmlError::LibRmVersionMismatch => (
            "version-mismatch",
            "Failed to initialize NVML: Driver/library version mismatch \
             (NVML_ERROR_LIB_RM_VERSION_MISMATCH): the loaded kernel module and the user-space \
             driver libraries differ, typically after a driver upgrade without a reboot"
                .to_string(),
        ),
        NvmlError::NoPermission => (
            "no-permission",
            "NVML_ERROR_NO_PERMISSION: this user may not open the NVIDIA device nodes (/dev/nvidia*)"
                .to_string(),
        ),
        NvmlError::LibraryNotFound => (
            "no-library",
            format!("{lib} could not find a library it needs (NVML_ERROR_LIBRARY_NOT_FOUND)"),
        ),
        other => ("error", format!("nvmlInit_v2 failed: {other}")),
    };
    (status.to_string(), message)
}

/// `Some(value)`; `None` for "not supported"; `None` and an error line otherwise.
fn opt<T>(r: Result<T, NvmlError>, call: &str, errors: &mut Vec<String>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported) => None,
        Err(e) => {
            errors.push(format!("{call}: {e}"));
            None
        }
    }
}

/// The file NVML was really loaded from, from our own memory map.
fn loaded_library(requested: &OsStr) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let requested_name = Path::new(requested)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            let name = Path::new(p).file_name().map(|n| n.to_string_lossy());
            name.as_deref().is_some_and(|n| {
                n.starts_with("libnvidia-ml.so") || Some(n) == requested_name.as_deref()
            })
        })
        .map(str::to_string)
}

/// Every fact NVML gives about device `index`, an error line for each call that failed.
fn device(nvml: &Nvml, index: u32) -> RawDevice {
    let mut d = RawDevice {
        index,
        ..Default::default()
    };
    let dev = match nvml.device_by_index(index) {
        Ok(dev) => dev,
        Err(e) => {
            d.errors
                .push(format!("nvmlDeviceGetHandleByIndex_v2({index}): {e}"));
            return d;
        }
    };
    let errs = &mut d.errors;
    d.name = opt(dev.name(), "nvmlDeviceGetName", errs);
    d.uuid = opt(dev.uuid(), "nvmlDeviceGetUUID", errs);
    d.pci_bus_id = opt(dev.pci_info(), "nvmlDeviceGetPciInfo_v3", errs).map(|p| p.bus_id);
    d.compute_capability = opt(
        dev.cuda_compute_capability(),
        "nvmlDeviceGetCudaComputeCapability",
        errs,
    )
    .map(|c| format!("{}.{}", c.major, c.minor));
    let memory = match dev.memory_info() {
        Ok(m) => Ok((m.total, m.used, m.free)),
        // Drivers before R510 have only the v1 call.
        Err(NvmlError::FailedToLoadSymbol(_)) => legacy::memory(nvml, &dev),
        Err(e) => Err(e),
    };
    if let Some((total, used, free)) = opt(memory, "nvmlDeviceGetMemoryInfo", errs) {
        d.memory_total = Some(total);
        d.memory_used = Some(used);
        d.memory_free = Some(free);
    }
    d.utilization_gpu = opt(
        dev.utilization_rates(),
        "nvmlDeviceGetUtilizationRates",
        errs,
    )
    .map(|u| u.gpu);
    d.compute_mode = opt(dev.compute_mode(), "nvmlDeviceGetComputeMode", errs)
        .map(|m| compute_mode_name(m).to_string());
    d.mig_enabled = opt(dev.mig_mode(), "nvmlDeviceGetMigMode", errs).map(|m| m.current == 1);
    d.persistence_mode = opt(
        dev.is_in_persistent_mode(),
        "nvmlDeviceGetPersistenceMode",
        errs,
    );
    if d.mig_enabled == Some(true) {
        d.mig_devices = mig_devices(&dev, errs);
    }
    d.ecc = ecc(nvml, &dev, errs);
    for kind in ["compute", "graphics"] {
        d.processes.extend(processes(nvml, &dev, kind, errs));
    }
    d
}

/// ECC mode, uncorrectable error count, pending page retirement and row remapping of `dev`.
fn ecc(nvml: &Nvml, dev: &nvml_wrapper::Device<'_>, errs: &mut Vec<String>) -> RawEcc {
    use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError};
    let mut e = RawEcc {
        enabled: opt(
            unsupported_if_absent(dev.is_ecc_enabled()),
            "nvmlDeviceGetEccMode",
            errs,
        )
        .map(|m| m.currently_enabled),
        ..Default::default()
    };
    if e.enabled == Some(true) {
        e.uncorrected_volatile = opt(
            unsupported_if_absent(
                dev.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile),
            ),
            "nvmlDeviceGetTotalEccErrors",
            errs,
        );
    }
    e.retired_pages_pending = opt(
        unsupported_if_absent(dev.are_pages_pending_retired()),
        "nvmlDeviceGetRetiredPagesPendingStatus",
        errs,
    );
    if let Some((pending, failed)) = opt(
        legacy::remapped_rows(nvml, dev),
        "nvmlDeviceGetRemappedRows",
        errs,
    ) {
        e.remap_pending = Some(pending);
        e.remap_failed = Some(failed);
    }
    e
}

/// An entry point the library does not export answers as "not supported" would (older
/// drivers, and fakes that implement only part of NVML).
fn unsupported_if_absent<T>(r: Result<T, NvmlError>) -> Result<T, NvmlError> {
    match r {
        Err(NvmlError::FailedToLoadSymbol(_)) => Err(NvmlError::NotSupported),
        other => other,
    }
}

/// The snapshot's name of a compute mode.
fn compute_mode_name(m: ComputeMode) -> &'static str {
    match m {
        ComputeMode::Default => "default",
        ComputeMode::ExclusiveThread => "exclusive-thread",
        ComputeMode::Prohibited => "prohibited",
        ComputeMode::ExclusiveProcess => "exclusive-process",
    }
}

/// The UUIDs of the populated MIG slots of `dev`.
fn mig_devices(dev: &nvml_wrapper::Device<'_>, errs: &mut Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let max = opt(
        dev.mig_device_count(),
        "nvmlDeviceGetMaxMigDeviceCount",
        errs,
    )
    .unwrap_or(0);
    for i in 0..max {
        // Unpopulated slots answer NOT_FOUND: not an error.
        match dev.mig_device_by_index(i) {
            Ok(mig) => {
                if let Some(u) = opt(mig.uuid(), "nvmlDeviceGetUUID (MIG)", errs) {
                    out.push(u);
                }
            }
            Err(NvmlError::NotFound) | Err(NvmlError::NotSupported) => {}
            Err(e) => errs.push(format!("nvmlDeviceGetMigDeviceHandleByIndex({i}): {e}")),
        }
    }
    out
}

/// The processes of `kind` (`compute` or `graphics`) running on `dev`.
fn processes(
    nvml: &Nvml,
    dev: &nvml_wrapper::Device<'_>,
    kind: &str,
    errs: &mut Vec<String>,
) -> Vec<RawProcess> {
    let current = if kind == "compute" {
        dev.running_compute_processes()
    } else {
        dev.running_graphics_processes()
    };
    let list = match current {
        Ok(list) => Ok(list
            .into_iter()
            .map(|p| RawProcess {
                pid: p.pid,
                kind: kind.to_string(),
                used_bytes: match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                },
            })
            .collect()),
        // Drivers before R510 have only the _v2 lists.
        Err(NvmlError::FailedToLoadSymbol(_)) => legacy::processes(nvml, dev, kind),
        Err(e) => Err(e),
    };
    let call = format!(
        "nvmlDevice{}RunningProcesses",
        if kind == "compute" {
            "GetCompute"
        } else {
            "GetGraphics"
        }
    );
    opt(list, &call, errs).unwrap_or_default()
}

/// The pre-R510 entry points nvml-wrapper does not call: `nvmlDeviceGetMemoryInfo` (v1) and
/// the `_v2` process lists.
mod legacy {
    use super::RawProcess;
    use nvml_wrapper::error::{nvml_try, NvmlError};
    use nvml_wrapper::{Device, Nvml};
    use nvml_wrapper_sys::bindings::{
        nvmlMemory_t, nvmlProcessInfo_v2_t, nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE,
        nvmlReturn_enum_NVML_SUCCESS,
    };

    const NOT_AVAILABLE: u64 = u64::MAX;

    /// (a remap is pending, a remap failed). nvml-wrapper has no call for it; a library
    /// without the entry point (before R460) is "not supported".
    pub fn remapped_rows(nvml: &Nvml, dev: &Device) -> Result<(bool, bool), NvmlError> {
        let Ok(f) = nvml.lib().nvmlDeviceGetRemappedRows.as_ref() else {
            return Err(NvmlError::NotSupported);
        };
        let (mut corrected, mut uncorrected, mut pending, mut failed) = (0u32, 0u32, 0u32, 0u32);
        // SAFETY: a device handle from this NVML and four out-parameters of the declared type.
        nvml_try(unsafe {
            f(
                dev.handle(),
                &mut corrected,
                &mut uncorrected,
                &mut pending,
                &mut failed,
            )
        })?;
        Ok((pending != 0, failed != 0))
    }

    /// (total, used, free) bytes.
    pub fn memory(nvml: &Nvml, dev: &Device) -> Result<(u64, u64, u64), NvmlError> {
        let f = nvml
            .lib()
            .nvmlDeviceGetMemoryInfo
            .as_ref()
            .map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
        let mut m = nvmlMemory_t {
            total: 0,
            free: 0,
            used: 0,
        };
        // SAFETY: a device handle from this NVML and a properly sized v1 struct.
        nvml_try(unsafe { f(dev.handle(), &mut m) })?;
        Ok((m.total, m.used, m.free))
    }

    pub fn processes(nvml: &Nvml, dev: &Device, kind: &str) -> Result<Vec<RawProcess>, NvmlError> {
        let lib = nvml.lib();
        let f = if kind == "compute" {
            lib.nvmlDeviceGetComputeRunningProcesses_v2.as_ref()
        } else {
            lib.nvmlDeviceGetGraphicsRunningProcesses_v2.as_ref()
        }
        .map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
        let mut count: u32 = 0;
        // SAFETY: asking for the count with a null buffer is the documented protocol.
        let r = unsafe { f(dev.handle(), &mut count, std::ptr::null_mut()) };
        if r == nvmlReturn_enum_NVML_SUCCESS {
            return Ok(Vec::new());
        }
        if r != nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE {
            nvml_try(r)?;
        }
        // Headroom for processes that start between the two calls.
        count += 5;
        let empty = nvmlProcessInfo_v2_t {
            pid: 0,
            usedGpuMemory: 0,
            gpuInstanceId: 0,
            computeInstanceId: 0,
        };
        let mut buf = vec![empty; count as usize];
        // SAFETY: `buf` holds `count` entries of the struct this entry point fills.
        nvml_try(unsafe { f(dev.handle(), &mut count, buf.as_mut_ptr()) })?;
        buf.truncate(count as usize);
        Ok(buf
            .into_iter()
            .map(|p| RawProcess {
                pid: p.pid,
                kind: kind.to_string(),
                used_bytes: (p.usedGpuMemory != NOT_AVAILABLE).then_some(p.usedGpuMemory),
            })
            .collect())
    }
}
