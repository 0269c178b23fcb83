//! `pythons[].cuda_tools`: the CUDA compiler tools (`ptxas`, `nvcc`) each framework of an
//! interpreter runs at run time, found the way that framework looks them up, with the version
//! read from the binary (issue 25 item 6; `src/probe/tools.rs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One tool a framework of this interpreter would run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolUse {
    /// Who runs it: `xla` (JAX and TensorFlow compile their GPU kernels with `ptxas`), `triton`,
    /// `triton-blackwell` (Triton's second `ptxas` for compute capability 9.0 and later), or
    /// `torch-cpp-extension` (`nvcc` for `torch.utils.cpp_extension` builds).
    pub user: String,
    /// The distribution that makes it run (`jax-cuda13-plugin`, `tensorflow`, `triton`, `torch`).
    pub framework: String,
    /// That distribution's version.
    pub framework_version: String,
    /// `ptxas` or `nvcc`.
    pub tool: String,
    /// The file it would run (a machine path); absent when none is found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its version (`12.9.86`), from the `Cuda compilation tools, release X.Y, VX.Y.Z` string
    /// that `--version` prints, read from the binary; absent when the binary has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// How it was found: `CUDA_ROOT`, `XLA_FLAGS`, `nvidia-wheel` (the `nvidia-cuda-nvcc`
    /// wheel beside the framework), `PATH`, `/usr/local/cuda`, `/opt/cuda`, `TRITON_PTXAS_PATH`,
    /// `TRITON_PTXAS_BLACKWELL_PATH`, `bundled` (Triton's own), `CUDA_HOME`, `CUDA_PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// What the framework needs: the lowest `nvidia-cuda-nvcc` its `Requires-Dist` accepts
    /// (`13.0.48`), or, for torch, the CUDA it was built with (`12.8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    /// True when `version` and `needs` are both known and their majors agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_major: Option<bool>,
    /// The version of the framework's own copy (the `nvidia-cuda-nvcc` wheel beside it) when
    /// another file was chosen before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_version: Option<String>,
    /// The lowest GPU compute capability this tool serves (`9.0` for `triton-blackwell`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cc: Option<String>,
    /// The compute capability from which another tool takes over (`9.0` for `triton` when
    /// Triton ships `ptxas-blackwell`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below_cc: Option<String>,
    /// Files the lookup passed over before `path`, with why (`/usr/bin/ptxas 11.5.119: older
    /// than XLA's minimum 11.8`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<String>,
}
