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
    /// Every CUDA-family library file on the machine where a job could get one: the loader's
    /// directories (`LD_LIBRARY_PATH`, `ld.so.conf`, the default directories), the toolkits'
    /// library directories and the `nvidia-*` wheels of every interpreter; one entry per real
    /// file per directory, with its version read statically.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<CudaLibraryFile>,
}

/// One CUDA-family library file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CudaLibraryFile {
    /// The file (a machine path; the real file when it lies in the same directory as its
    /// names, else the first name).
    pub path: String,
    /// `cudart`, `cudnn`, `cupti`, ... (`cudnn` for `libcudnn_ops.so.9`).
    pub family: String,
    /// Every name in the directory that leads to this file (`libcudart.so.12`,
    /// `libcudart.so.12.4.127`), sorted.
    pub names: Vec<String>,
    /// The version its file names say, the longest of them (`12.4.127`); absent for an
    /// unversioned `libX.so`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The real file when the names are links leading elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realpath: Option<String>,
    /// The pip distribution that installed it, with its version (`nvidia-cuda-runtime-cu12
    /// 12.4.127`), from the dist-info `RECORD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wheel: Option<String>,
    /// The interpreter whose site-packages holds that wheel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// How a job reaches it: `ld-library-path`, `ld.so.conf`, `default-dirs`,
    /// `toolkit:<path>`, `pip-wheel`, sorted.
    pub found_via: Vec<String>,
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
    /// `CUDA_ROOT`, `conda`, `LD_LIBRARY_PATH` (a directory of it there: `module load cuda`),
    /// `PATH` (its `bin/nvcc`), `ld.so.conf`).
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
    /// The `libcuda.so.1` a job here loads (its `LD_LIBRARY_PATH`, the loader cache, the
    /// default directories) when it is a CUDA forward-compatibility copy (a `compat`
    /// directory: the `cuda-compat-X-Y` package, NGC and vLLM images) instead of the driver's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat_libcuda: Option<String>,
    /// That copy's version, from its file name (`575.57.08`): it only works on data-center
    /// GPUs, and only with an older kernel module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat_version: Option<String>,
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
        for f in &mut self.inventory {
            f.names.sort();
            f.names.dedup();
            f.found_via.sort();
            f.found_via.dedup();
        }
        self.inventory
            .sort_by(|a, b| (&a.path, &a.python).cmp(&(&b.path, &b.python)));
        if let Some(c) = &mut self.ld_cache {
            c.stale_files.sort();
            c.dangling.sort();
        }
    }
}
