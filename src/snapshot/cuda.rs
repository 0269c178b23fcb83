//! `cuda`: CUDA toolkits, cuDNN installs, the NVIDIA driver and the loader cache.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The CUDA world of the machine, outside any interpreter.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cuda {
    /// Every toolkit found, one entry per real directory.
    #[serde(default)]
    pub toolkits: Vec<Toolkit>,
    /// The toolkit `/usr/local/cuda` points at (its real directory, `/usr/local/cuda-11.1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_toolkit: Option<String>,
    /// cuDNN version headers outside any toolkit (`/usr/include/cudnn_version.h`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cudnn: Vec<CudnnHeader>,
    /// The NVIDIA kernel driver, when one is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<Driver>,
    /// `/etc/ld.so.cache` and whether it is stale against `ld.so.conf`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ld_cache: Option<LdCache>,
}

/// One CUDA toolkit installation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Toolkit {
    /// Its real directory (`/usr/local/cuda-11.1`).
    pub path: String,
    /// Its version from `version.json` (`cuda.version`) / `version.txt` / conda-meta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The file the version was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_source: Option<String>,
    /// What named it first (`/usr/local/cuda-*`, `/usr/local/cuda`, `CUDA_HOME`, `CUDA_PATH`,
    /// `conda`).
    pub source: String,
    /// Every other name that leads to the same directory (`/usr/local/cuda`, `CUDA_HOME`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// cuDNN version from `cudnn_version.h` / `cudnn.h` in its include dir.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_version: Option<String>,
    /// `nvvm/libdevice/libdevice.10.bc` present (XLA needs it).
    #[serde(default)]
    pub has_libdevice: bool,
    /// `bin/ptxas` present (XLA needs it).
    #[serde(default)]
    pub has_ptxas: bool,
    /// Library file names it ships (`libcusolver.so.11`, `libcudart.so.11.0`, ...), from `lib64`,
    /// `lib`, `targets/*/lib` and `extras/CUPTI/lib64`, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libraries: Vec<String>,
}

/// A cuDNN version header.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CudnnHeader {
    /// The header read.
    pub path: String,
    /// `8.9.2`.
    pub version: String,
}

/// The NVIDIA driver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Driver {
    /// `580.65.06` (the kernel module's when known, else the user-space library's).
    pub version: String,
    /// Where it was read (`/proc/driver/nvidia/version`, `libcuda.so.580.65.06`).
    pub source: String,
    /// The kernel module's version from `/proc/driver/nvidia/version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_module: Option<String>,
    /// The user-space driver version from the `libcuda.so.<version>` file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libcuda: Option<String>,
    /// That `libcuda.so.<version>` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libcuda_path: Option<String>,
    /// True when both are known and differ (`Driver/library version mismatch`).
    #[serde(default)]
    pub mismatch: bool,
}

/// The binary loader cache.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LdCache {
    /// Its path.
    pub path: String,
    /// `new`, `old`, `old+new`.
    pub format: String,
    /// Number of entries.
    pub entries: usize,
    /// True when a directory of `ld.so.conf` holds libraries the cache does not list.
    #[serde(default)]
    pub stale: bool,
    /// Those libraries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_files: Vec<String>,
    /// Cache entries whose file is gone (`soname => path`); the loader falls through them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dangling: Vec<String>,
    /// The directories `ld.so.conf` names (includes followed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conf_dirs: Vec<String>,
}

impl Cuda {
    /// Sort toolkits by path.
    pub fn normalize(&mut self) {
        self.toolkits.sort_by(|a, b| a.path.cmp(&b.path));
        for t in &mut self.toolkits {
            t.aliases.sort();
            t.aliases.dedup();
            t.libraries.sort();
            t.libraries.dedup();
        }
        self.cudnn.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(c) = &mut self.ld_cache {
            c.stale_files.sort();
            c.dangling.sort();
        }
    }
}
