//! `cuda`: CUDA toolkits, cuDNN installs, the NVIDIA driver and the loader cache.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The CUDA world of the machine, outside any interpreter.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cuda {
    /// Every toolkit found.
    #[serde(default)]
    pub toolkits: Vec<Toolkit>,
    /// The toolkit `/usr/local/cuda` points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_toolkit: Option<String>,
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
    /// Its directory (`/usr/local/cuda-11.1`).
    pub path: String,
    /// Its version from `version.json` / `version.txt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What named it (`/usr/local/cuda-*`, `CUDA_HOME`, `CUDA_PATH`, `conda`).
    pub source: String,
    /// cuDNN version from `cudnn_version.h` / `cudnn.h` in its include dir.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_version: Option<String>,
    /// `nvvm/libdevice` present (XLA needs it).
    #[serde(default)]
    pub has_libdevice: bool,
    /// `bin/ptxas` present (XLA needs it).
    #[serde(default)]
    pub has_ptxas: bool,
}

/// The NVIDIA driver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Driver {
    /// `580.65.06`.
    pub version: String,
    /// Where it was read (`/proc/driver/nvidia/version`, `libcuda.so.580.65.06`).
    pub source: String,
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
}

impl Cuda {
    /// Sort toolkits by path.
    pub fn normalize(&mut self) {
        self.toolkits.sort_by(|a, b| a.path.cmp(&b.path));
    }
}
