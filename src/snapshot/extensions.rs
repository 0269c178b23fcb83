//! `pythons[].native`, `pythons[].native_failures` and `pythons[].owners`: every native
//! extension module of every distribution as `ld.so` would load it, the ABIs it was compiled
//! for, and which installer owns each distribution (issue 25).
//!
//! These are facts the probe computes once (`src/probe/extensions/`, `src/probe/python/owner.rs`)
//! so that rules stay one-line tests: "this module cannot load: undefined symbol X", "built
//! against NumPy 1", "pip replaced conda's copy".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One distribution that ships native extension modules (files its `RECORD` lists whose names
/// are Python extension modules: `*.cpython-3XY-*.so`, `*.abi3.so`, a bare `name.so`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NativeDist {
    /// Normalised distribution name.
    pub package: String,
    /// Its version.
    pub version: String,
    /// How many extension modules were read.
    pub modules: usize,
    /// The NumPy C-API generation its modules were compiled against (`1` or `2`), from the
    /// module names the NumPy headers import (`numpy._core._multiarray_umath` exists only in
    /// NumPy 2 headers); the oldest over its modules; absent when no module uses NumPy's C API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numpy_abi: Option<u32>,
    /// The module (machine path) that says `numpy_abi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numpy_module: Option<String>,
    /// The torch release it was built for, when it says: an exact `Requires-Dist: torch==X`
    /// pin, or a local version label (`+pt23cu121`, `+torch2.4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_for_torch: Option<String>,
    /// Where `built_for_torch`/`built_for_cuda` come from when the distribution's own build
    /// record says them (`deepspeed/git_version_info_installed.py`, pre-built ops only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_record: Option<String>,
    /// The CUDA major.minor its build record says its pre-built ops were compiled with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_for_cuda: Option<String>,
    /// CUDA majors of the CUDA runtime/BLAS/NVRTC sonames its modules link (`libcudart.so.12`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_majors: Vec<u64>,
    /// The framework whose process provides some of its libraries (`torch`, `tensorflow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// One extension module that the loader would refuse, with why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NativeFailure {
    /// Normalised distribution name.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The extension module (machine path).
    pub module: String,
    /// Its file name (`_C.abi3.so`), for messages.
    pub file: String,
    /// `missing-library` (a DT_NEEDED found nowhere), `missing-driver` (only the NVIDIA
    /// driver's `libcuda.so.1`/`libnvidia-ml.so.1` are missing), `missing-version` (a needed
    /// symbol version, `GLIBCXX_3.4.32`, that the library found does not define) or
    /// `undefined-symbol` (a symbol no loaded object defines) or `framework-undefined-symbol`
    /// (a framework's own library, torch's `libtorch_cuda.so`, asks a CUDA library under it
    /// for a C symbol that the copy the loader maps does not define: `missing` names each, the
    /// object asking and the copy mapped), or `wrong-python-tag` (a `.cpython-XY-*.so`
    /// module for another Python than the interpreter's, with no twin it would import:
    /// `missing` names the tag it looks for, `cpython-311`).
    pub kind: String,
    /// What is missing: sonames, `VERSION (soname at path)`, or symbol names (at most 5).
    pub missing: Vec<String>,
    /// How many were missing in all.
    pub count: usize,
    /// The libraries the module's symbols were looked up in that belong to a framework
    /// (`torch/lib/libc10.so`), for messages; empty when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searched: Vec<String>,
    /// The torch release it was built for, when it says (as in [`NativeDist`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_for_torch: Option<String>,
}

/// A distribution that two installers claim, or whose installer's record disagrees with the
/// files on disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnerConflict {
    /// Normalised distribution name.
    pub package: String,
    /// `pip-over-conda` (conda's record names a version whose metadata pip replaced or
    /// shadows), `conda-files-missing` (files a conda record lists are gone).
    pub kind: String,
    /// The version conda's record says.
    pub conda_version: String,
    /// The conda build string and channel (`py311h1234_0 conda-forge`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub conda_build: String,
    /// The version `import` sees now (absent when none is installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// Who installed that one (`INSTALLER`: pip, uv, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer: Option<String>,
    /// The conda record (machine path).
    pub record: String,
    /// For `conda-files-missing`: the first missing files (at most 5) and how many in all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_files: Vec<String>,
    /// How many listed files are missing.
    #[serde(default)]
    pub missing_count: usize,
}
