//! `frameworks[]`, `libraries[]` and `jobs[]`: what frameworks ask the dynamic loader for, and
//! what it gives them. Filled by the native-library probe (`probe::libs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What one installed ML framework expects from the native world, read statically.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Framework {
    /// The interpreter (`pythons[].path`) it is installed in.
    pub python: String,
    /// `tensorflow`, `torch`, `jax`, `cupy`, `onnxruntime`, ...
    pub name: String,
    /// Its version (as installed).
    pub version: String,
    /// Its package directory.
    pub location: String,
    /// The CUDA version it was built for (`11.0`, `12.1`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    /// The cuDNN version it was built for (`8`, `8.9`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_version: Option<String>,
    /// Whether it is a CUDA build at all (`None` when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_cuda_build: Option<bool>,
    /// Compute capabilities it was compiled for (`sm_80`, `compute_90`, `8.0`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute_capabilities: Vec<String>,
    /// The sonames it will ask the loader for, and where each expectation was read.
    #[serde(default)]
    pub wants: Vec<Wanted>,
    /// The native entry points resolution starts from (e.g. `torch/_C.cpython-311-x86_64-linux-gnu.so`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entry_points: Vec<String>,
    /// nvidia-* requirements from its metadata (`nvidia-cudnn-cu12==9.1.0.70`), markers dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvidia_requirements: Vec<String>,
    /// Derived: the CUDA major it was built for (`11` from `cuda_version` `11.0`, or from the
    /// package name `cupy-cuda12x` / `jax-cuda12-plugin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_major: Option<u64>,
    /// Derived: the cuDNN major it expects (`TF_CUDNN_VERSION`, build_info `cudnn_version`, the
    /// `libcudnn.so.N` in its DT_NEEDED, or its `nvidia-cudnn-cu*` pin), when any tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cudnn_major: Option<u64>,
    /// The local version label of the installed package (`cu121` in `2.1.2+cu121`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_version: Option<String>,
    /// The installed nvidia-* pip packages of the same interpreter (`nvidia-cudnn-cu12==9.1.0.70`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvidia_installed: Vec<String>,
    /// True when it gets (some of) its CUDA libraries from pip's `site-packages/nvidia/*/lib`:
    /// it requires nvidia-* packages, or an entry point's RPATH/RUNPATH points into `nvidia/`.
    #[serde(default)]
    pub uses_pip_nvidia: bool,
    /// Libraries the framework's own Python code loads by path before its extension modules
    /// (torch's `_preload_cuda_deps`, the JAX CUDA plugin's `_load_nvidia_libraries`), found
    /// on `sys.path` as that code would find them. Each wins every later request for its soname.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preloads: Vec<FrameworkPreload>,
    /// What installed it: `conda` when the environment's `conda-meta/` has its package record
    /// (then its CUDA libraries are conda packages in the environment's `lib/`), else the
    /// dist-info's INSTALLER (`pip`, `uv`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_by: Option<String>,
    /// Where the CUDA-family facts were read, one line per fact (`cuda_version: .../version.py`,
    /// `compute_capabilities: .../libtorch_python.so`, `cudnn_version: nvidia-cudnn-cu13==9.26.0.51`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// One library a framework loads itself, by path, from a `sys.path` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameworkPreload {
    /// The file's DT_SONAME (its file name when it has none).
    pub soname: String,
    /// The file loaded (a machine path).
    pub path: String,
    /// The `sys.path` entry it was found under (the first is the working directory, as
    /// `sys.path[0]` of `python -c` / `-m` / a REPL).
    pub sys_path_entry: String,
    /// That entry's index in the modelled `sys.path` (0: the working directory).
    pub sys_path_index: u64,
    /// What was searched under each entry (`nvidia/cublas/lib|nvidia/cu13/lib/libcublas.so.*[0-9]`).
    pub pattern: String,
    /// The code the rule was read from (`.../torch/__init__.py _preload_cuda_deps`).
    pub evidence: String,
    /// True when the entry is not the site-packages the framework itself is installed in
    /// (the working directory, a PYTHONPATH entry, another site): a copy the framework's own
    /// wheels did not put there.
    #[serde(default)]
    pub foreign: bool,
}

/// One soname a framework will ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Wanted {
    /// The exact name handed to dlopen / listed in DT_NEEDED (`libcusolver.so.10`).
    pub soname: String,
    /// Where that came from (`.../cuda_config.h TF_CUSOLVER_VERSION`, `DT_NEEDED of .../_C.so`).
    pub evidence: String,
    /// The object that asks for it (the DT_NEEDED owner, or the entry point whose code calls
    /// `dlopen`), a machine path; resolution starts there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    /// True when the requester is not loaded at import: the framework loads it on first use
    /// (torch's `libcaffe2_nvrtc.so` for JIT kernels, `libtorch_cuda_linalg.so` for
    /// `torch.linalg` on the GPU), so a missing library breaks that use, not the import.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lazy: bool,
}

/// One wanted library, resolved for one requester the way `ld.so` would.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Library {
    /// The soname asked for (`libcusolver.so.10`).
    pub soname: String,
    /// The CUDA-family name (`cusolver`, `cudnn`, `cudart`, ...), when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The interpreter whose world this resolution belongs to (`None`: machine-wide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// The object that asks (a framework entry point, or `dlopen` by a framework).
    #[serde(default)]
    pub requester: String,
    /// Frameworks that want it (`tensorflow 2.4.0`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_by: Vec<String>,
    /// Why it is resolved: `wanted` (a framework asks for this exact soname, see
    /// `frameworks[].wants`), `preloaded` (the framework's own Python code loads this file by
    /// path, see `frameworks[].preloads`), `transitive` (a CUDA-family library that another
    /// resolved one needs in turn: its DT_NEEDED, or a name it hands to `dlopen`, such as
    /// nvrtc's `libnvrtc-builtins.so.13.2` or cuDNN's sub-libraries; `requester` is that
    /// library) or `cuda-family` (a CUDA-family library the framework's CUDA release implies,
    /// resolved so every copy on the machine is on record).
    #[serde(default = "wanted")]
    pub reason: String,
    /// When the process first needs it: `import` (a DT_NEEDED of an object loaded when the
    /// framework is imported, a library the framework's own code preloads, or what such a
    /// library needs in turn: the import fails without it), `first-use` (a DT_NEEDED only of
    /// objects the framework loads later, on first use: see `frameworks[].wants[].lazy`) or
    /// `run-time` (handed to `dlopen` by the framework or a CUDA library when the GPU, a JIT
    /// or a profiler starts: the import works without it). Absent for the `cuda-family`
    /// libraries nobody asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_at: Option<String>,
    /// The major version of the soname resolved (`10` for `libcusolver.so.10`, `11` for
    /// `libcudart.so.11.0`): the real file's DT_SONAME when it resolves, the asked name otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major: Option<u64>,
    /// True when the loader finds a file.
    pub resolves: bool,
    /// The path the loader opens (as opened, not canonicalised); also set when `resolves` is
    /// false because the search stopped on this file (`error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How it was found: `rpath`, `ld-library-path`, `runpath`, `ld-so-cache`, `default-dirs`,
    /// `hwcaps`, `preloaded-by-framework`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_via: Option<String>,
    /// The symlink chain from `path` to the real file, hop by hop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<LinkHop>,
    /// The real file (all links followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realpath: Option<String>,
    /// ELF facts of the real file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elf: Option<ElfFacts>,
    /// The version the requested file name claims (`10.1` in `libcupti.so.10.1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_version: Option<String>,
    /// The version the real file's name says (`10.2` in `libcupti.so.10.2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_version: Option<String>,
    /// The pip distribution whose `site-packages/nvidia/<name>/lib` holds the real file
    /// (`nvidia-cudnn-cu12`), when one of the interpreter's packages matches the directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// That distribution's version (`9.1.0.70`): the library's version known without loading it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_version: Option<String>,
    /// True when a link's name claims another version than its target.
    #[serde(default)]
    pub version_mismatch: bool,
    /// Every file of that name found anywhere it could come from; one `wins`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    /// True when the winner is not the framework's own copy (`origin` `framework`) nor its pip
    /// nvidia-* copy (`pip-nvidia`) although such a copy exists: typically a system CUDA library
    /// on LD_LIBRARY_PATH shadowing what the framework ships.
    #[serde(default)]
    pub shadows_framework_copy: bool,
    /// The framework or pip copy that loses, when `shadows_framework_copy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadowed_path: Option<String>,
    /// Why the search failed or stopped (`invalid ELF header` on a file), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Result of loading it in a child process (absent with `--no-load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadResult>,
    /// Symbol versions needed but not provided, as `needed-soname:VERSION`
    /// (`libstdc++.so.6:GLIBCXX_3.4.30`): what the requester needs from this library that it
    /// does not define, and what this library needs from its own DT_NEEDED dependencies (as the
    /// loader resolves them for it) that they do not define. Each is a certain load failure
    /// (`version `GLIBCXX_3.4.30' not found`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_symbol_versions: Vec<String>,
    /// Versioned symbols this library takes from a CUDA-family dependency (as the loader
    /// resolves it for this library) that the dependency does not export, as
    /// `dep-soname:symbol@VERSION` (`libnvJitLink.so.12:__nvJitLinkComplete_12_4@libnvJitLink.so.12`):
    /// a certain `undefined symbol` at load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_symbols: Vec<String>,
}

fn wanted() -> String {
    "wanted".to_string()
}

/// One symlink hop.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkHop {
    /// The link.
    pub link: String,
    /// What it points at, as written.
    pub target: String,
}

/// Facts from an ELF file's headers and dynamic section.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElfFacts {
    /// DT_SONAME.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soname: Option<String>,
    /// `elf64` / `elf32`.
    pub class: String,
    /// `x86_64`, `aarch64`, ...
    pub machine: String,
    /// DT_NEEDED entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needed: Vec<String>,
    /// DT_RPATH entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpath: Vec<String>,
    /// DT_RUNPATH entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runpath: Vec<String>,
}

/// A file that could satisfy a soname.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// Its path.
    pub path: String,
    /// Where it lives: `pip-nvidia`, `conda`, `cuda-toolkit`, `system`, `framework`, ...
    pub origin: String,
    /// True for the copy the loader picks.
    pub wins: bool,
    /// Its real version from the file name, when it tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_version: Option<String>,
}

/// What happened when the library was loaded in a child process.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadResult {
    /// `loaded` (dlopen succeeded), `error` (dlopen failed: `error` holds dlerror), `crashed`
    /// (the child died by a signal while loading it: `signal`), `timeout` (still loading at its
    /// time limit: the child was killed), `skipped` (not tried: `error` says why).
    pub status: String,
    /// The decoded version (`12.4`, `9.1.0`), when the library answered. For CUPTI this is the
    /// CUDA release its API version belongs to (`12.4` for API 22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The raw number the version entry point returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_version: Option<i64>,
    /// The entry point asked (`cudnnGetVersion`), when one was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_call: Option<String>,
    /// The dlerror text, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the version is unknown although the library loaded (the version call crashed, hung
    /// or returned an error): a fact about the probe, never about the library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_error: Option<String>,
    /// Where `version` comes from: `dist-info NAME VERSION` (the wheel that owns the file),
    /// `file name`, or `call` (`version_call` answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_source: Option<String>,
    /// The signal that killed the child (`SIGSEGV`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// True when this outcome comes from the load cache (an earlier run loaded exactly these
    /// files with the same loader environment) rather than from a child of this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_cache: bool,
}

/// A running process inspected with `--pid`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunningJob {
    /// Its pid.
    pub pid: u32,
    /// `/proc/PID/exe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// CUDA-family libraries mapped into it (from `/proc/PID/maps`), as the process sees them.
    #[serde(default)]
    pub loaded: Vec<String>,
    /// False when `/proc/PID/maps` could not be read (gone, or not ours: see `probe_errors`).
    #[serde(default)]
    pub readable: bool,
    /// The interpreter (`pythons[].path`) whose executable it runs, when one matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// Each loaded CUDA-family library beside what the emulation predicted for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compared: Vec<JobLibrary>,
}

/// One library a running process loaded, against `libraries[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobLibrary {
    /// Its DT_SONAME (or file name when it has none).
    pub soname: String,
    /// The file mapped (real path as in `/proc/PID/maps`).
    pub loaded: String,
    /// The real file `libraries[]` predicted for that soname (same interpreter first), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<String>,
    /// True when a prediction exists and names another file than the one loaded.
    #[serde(default)]
    pub differs: bool,
}

impl RunningJob {
    /// Sort its lists.
    pub fn normalize(&mut self) {
        self.loaded.sort();
        self.loaded.dedup();
        self.compared
            .sort_by(|a, b| (&a.soname, &a.loaded).cmp(&(&b.soname, &b.loaded)));
    }
}

impl Framework {
    /// Sort its lists.
    pub fn normalize(&mut self) {
        self.wants
            .sort_by(|a, b| (&a.soname, &a.evidence).cmp(&(&b.soname, &b.evidence)));
        self.wants.dedup();
        self.entry_points.sort();
        self.entry_points.dedup();
        self.nvidia_requirements.sort();
        self.nvidia_installed.sort();
        self.preloads
            .sort_by(|a, b| (&a.soname, &a.path).cmp(&(&b.soname, &b.path)));
    }
}

impl Library {
    /// Sort candidate lists by path.
    pub fn normalize(&mut self) {
        self.candidates.sort_by(|a, b| a.path.cmp(&b.path));
        self.wanted_by.sort();
        self.wanted_by.dedup();
    }
}
