//! The log as facts: each line a framework, the loader or a resolver prints when something
//! fails is read into an event of a known kind with named values (`missing-object` with its
//! `soname`, `oom` with the allocator's figures, `gpu-arch` with the GPU's `sm`). The events
//! become the `log` section of the facts rules read (`log.events[]`, and `log.<kind>` for the
//! latest event of each kind), and fill what a snapshot lacks or got wrong:
//!
//! - facts the snapshot does not hold (a GPU named in the log when `gpus` is empty, the
//!   architectures torch printed when the framework was not loaded) are added, marked
//!   `from_log`;
//! - volatile facts (GPU memory) are taken from the log when it has them: a snapshot taken
//!   after the failure sees the memory free again;
//! - the log's timestamps are compared with the snapshot's `collected_at`.
//!
//! The patterns are message formats (what a line says), not knowledge of causes: which cause
//! an event points to is in the rules (`rules/*.yaml`), which test these values.

use regex::{Regex, RegexSet};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

/// Events kept (the latest).
const MAX_EVENTS: usize = 200;

/// (kind, pattern): named groups become the event's values. Order matters only for reading.
const FAMILIES: &[(&str, &str)] = &[
    // The loader.
    (
        "missing-object",
        r"(?P<soname>lib[\w+.\-]*?\.so(?:\.[\w]+)*)\s*: cannot open shared object file",
    ),
    (
        "missing-object",
        r"Could not load dynamic library '(?P<soname>[^']+)'",
    ),
    (
        "missing-object",
        r"(?:Could not|Unable to|Failed to) (?:load|find|open) (?:library )?(?P<soname>lib\w[\w+.\-]*\.so(?:\.\d+)*)",
    ),
    (
        "undefined-symbol",
        r"(?:(?P<object>[\w/.+\-]+\.so[\w.]*): )?undefined symbol: (?P<symbol>[\w@.$]+)(?:, version (?P<version>[\w.]+))?",
    ),
    (
        "symbol-version-missing",
        r"version `(?P<version>[\w.]+)' not found \(required by (?P<object>[^)]+)\)",
    ),
    (
        "wrong-elf-class",
        r"(?P<object>[\w/.+\-]+): wrong ELF class: (?P<class>ELFCLASS\d+)",
    ),
    // Python imports.
    ("module-not-found", r"No module named '(?P<module>[\w.]+)'"),
    (
        "import-name",
        r"cannot import name '(?P<name>\w+)' from '(?P<module>[\w.]+)'",
    ),
    // Framework version mismatches.
    (
        "numpy-abi",
        r"compiled using NumPy (?P<built_major>\d)\.x cannot be run in\s*NumPy (?P<numpy>[\d.]+)",
    ),
    (
        "numpy-abi",
        r"numpy\.dtype size changed, may indicate binary incompatibility(?:\. Expected (?P<expected_size>\d+) from C header, got (?P<got_size>\d+) from PyObject)?",
    ),
    (
        "numpy-abi",
        r"module compiled against (?:ABI|API) version (?P<built_abi>0x[0-9a-fA-F]+) but this version of numpy is (?P<numpy_abi>0x[0-9a-fA-F]+)",
    ),
    (
        "numpy-abi",
        r"_ARRAY_API not found|numpy\.core\.multiarray failed to import",
    ),
    // torch.utils.cpp_extension prints this message over two lines (a newline after
    // "compile"): each line is read on its own and the two events merge under one kind.
    (
        "torch-cuda-mismatch",
        r"detected CUDA version \((?P<cuda>[\d.]+)\) mismatches the version that was used to compile",
    ),
    (
        "torch-cuda-mismatch",
        r"PyTorch \((?P<torch_cuda>[\d.]+)\)\. Please make sure to use the same CUDA versions",
    ),
    (
        "torchvision-mismatch",
        r"PyTorch has CUDA Version=(?P<torch_cuda>[\d.]+) and torchvision has CUDA Version=(?P<vision_cuda>[\d.]+)",
    ),
    (
        "torchvision-mismatch",
        r"operator (?P<op>torchvision::\w+) does not exist",
    ),
    (
        "jax-plugin-mismatch",
        r"plugin (?P<plugin>[\w\-]+) version (?P<plugin_version>[\w.+\-]+) is installed, but it is not compatible with the installed jaxlib version (?P<jaxlib>[\w.+\-]+)",
    ),
    (
        "jaxlib-mismatch",
        r"jaxlib version (?P<jaxlib>[\w.+\-]+) is newer than and incompatible with jax version (?P<jax>[\w.+\-]+)",
    ),
    (
        "jaxlib-mismatch",
        r"jaxlib is version (?P<jaxlib>[\w.+\-]+), but this version of jax requires version >= (?P<required>[\w.]+)",
    ),
    (
        "jaxlib-mismatch",
        r"Mismatched PJRT plugin PJRT API version \((?P<plugin_api>[\d.]+)\) and framework PJRT API version (?P<framework_api>[\d.]+)",
    ),
    (
        "keras-deserialize",
        r"Could not deserialize class '(?P<class>\w+)'(?: because its parent module (?P<module>[\w.]+) cannot be imported)?",
    ),
    (
        "keras-deserialize",
        r"Unrecognized keyword arguments(?: passed to (?P<layer>\w+))?: [\[{]'(?P<kwarg>\w+)'",
    ),
    (
        "keras-deserialize",
        r"Error when deserializing class '(?P<class>\w+)'",
    ),
    (
        "keras-deserialize",
        r"Unknown (?:layer|object|optimizer|activation): '?(?P<class>[\w>]+)",
    ),
    (
        "jax-plugin-init",
        r"Jax plugin configuration error: Exception when calling (?P<plugin>[\w.]+)\.initialize\(\)",
    ),
    (
        "missing-object",
        r"Unable to load (?P<library>cuPTI|cuDNN|cuBLAS|cuSPARSE|cuFFT|cuSOLVER|cuRAND|NCCL|nvJitLink)\. Is it installed\?",
    ),
    (
        "protobuf",
        r"Descriptors cannot be created directly|Couldn't build proto file into descriptor pool|cannot import name '(?P<name>\w+)' from 'google\.protobuf",
    ),
    (
        "cudnn-version",
        r"Loaded runtime CuDNN library: (?P<runtime>[\d.]+) but source was compiled with: (?P<compiled>[\d.]+)",
    ),
    // CUDA driver and runtime.
    (
        "cuda-init",
        // TF 2.16+ wraps the driver's answer in an absl status: `failed call to cuInit:
        // INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)`.
        r"failed call to cuInit: (?:[A-Z_]+: CUDA error: [Ff]ailed call to cuInit: )?(?P<name>[A-Z_ ]+?)(?:: (?P<message>[^(]+?))?(?: \((?P<code>\d+)\))?$",
    ),
    (
        "cuda-error",
        r"[Ee]rror (?P<code>\d{1,3}): (?P<message>[a-z][^\n(]*?)(?: \(|$)",
    ),
    ("cuda-error", r"CUDA error: (?P<message>[a-z][\w ,'\-]+)"),
    ("cuda-error", r"(?P<name>CUDA_ERROR_[A-Z_]+)"),
    // The runtime's enum name as CUDA samples, cupy and others print it:
    // `code=35(cudaErrorInsufficientDriver)`, `cudaErrorCompatNotSupportedOnDevice: …`.
    ("cuda-error", r"\b(?P<name>cudaError[A-Z]\w*)"),
    (
        "driver-too-old",
        r"(?:driver version is insufficient for CUDA runtime version|NVIDIA driver on your system is too old \(found version (?P<driver>\d+)\))",
    ),
    (
        "no-driver",
        r"Found no NVIDIA driver on your system|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver|kernel driver does not appear to be running on this host",
    ),
    (
        "library-status",
        r"(?P<status>CUDNN_STATUS_[A-Z_]+|CUBLAS_STATUS_[A-Z_]+|CUSOLVER_STATUS_[A-Z_]+|CUFFT_[A-Z_]+|nccl(?:Internal|System|Unhandled\w*|InvalidUsage|Remote)Error)",
    ),
    ("nccl", r"NCCL error[^:]*: (?P<message>[^,\n]+)"),
    ("nccl", r"NCCL version (?P<version>\d+\.\d+\.\d+)"),
    (
        "nccl-shm",
        r"Call to shm_open failed|Error while creating shared memory segment (?P<segment>[\w-]+)(?: \(size (?P<size>\d+)\))?",
    ),
    // Memory.
    (
        "oom",
        r"Tried to allocate (?P<requested>[\d.]+ [KMGT]iB) \(GPU (?P<gpu>\d+); (?P<total>[\d.]+ [KMGT]iB) total capacity; (?P<allocated>[\d.]+ [KMGT]iB) already allocated; (?P<free>[\d.]+ [KMGT]iB) free; (?:(?P<max>[\d.]+ [KMGT]iB) allowed; )?(?P<reserved>[\d.]+ [KMGT]iB) reserved",
    ),
    (
        "oom",
        r"Tried to allocate (?P<requested>[\d.]+ [KMGT]iB)\. GPU (?P<gpu>\d+) has a total capacity of (?P<total>[\d.]+ [KMGT]iB) of which (?P<free>[\d.]+ [KMGT]iB) is free\.(?:.*?Including non-PyTorch memory, this process has (?P<this_process>[\d.]+ [KMGT]iB) memory in use)?",
    ),
    (
        "oom",
        r"OOM when allocating tensor with shape\s*\[?(?P<shape>[\d, ]*)",
    ),
    (
        "oom",
        r"RESOURCE_EXHAUSTED: Out of memory while trying to allocate (?P<requested_bytes>\d+) bytes",
    ),
    (
        "oom",
        r"CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|out of memory",
    ),
    // GPUs and architectures.
    (
        "gpu-arch",
        r"(?P<gpu>[\w\- ]+?) with CUDA capability sm_(?P<sm>\d+) is not compatible with the current PyTorch installation",
    ),
    (
        "torch-arch-list",
        r"supports CUDA capabilities (?P<arches>(?:sm_\d+\w?\s*)+)",
    ),
    (
        "gpu-arch",
        r"Found GPU\d* (?P<gpu>[^\n]+?) which is of cuda capability (?P<cc>\d+\.\d+)",
    ),
    (
        "gpu-name",
        r"device: (?P<index>\d+), name: (?P<gpu>[^,]+), pci bus id: [^,]+, compute capability: (?P<cc>\d+\.\d+)",
    ),
    (
        "no-kernel-image",
        r"no kernel image is available for execution on the device|device kernel image is invalid",
    ),
    (
        "ptx-version",
        r"(?:the provided PTX was compiled with an unsupported toolchain|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|Unsupported \.version (?P<ptx>[\d.]+); current version is '(?P<current>[\d.]+)')",
    ),
    (
        "driver-older-than-ptxas",
        r"driver's CUDA version is (?P<driver_cuda>[\d.]+) which is older than the ptxas CUDA version \((?P<ptxas>[\d.]+)\)",
    ),
    (
        "ptxas-old",
        r"ptxas does not support CC (?P<cc>[\d.]+)|ptxas too old",
    ),
    // Serialized files.
    (
        "weights-only",
        r"Weights only load failed|Unsupported global: GLOBAL (?P<global>[\w.]+)",
    ),
    ("unpickling", r"UnpicklingError: (?P<message>[^\n]+)"),
    (
        "torch-zip",
        r"PytorchStreamReader failed (?P<message>[^\n]+)",
    ),
    (
        "safetensors",
        r"SafetensorError: Error while deserializing header: (?P<error>\w+)",
    ),
    (
        "h5py",
        r"Unable to (?:synchronously )?open file \((?P<reason>[^)]+)\)",
    ),
    (
        "keras-format",
        r"File format not supported:? ?(?:filepath=(?P<path>\S*?)\.?(?:\s|$))?|Keras 3 only supports V3",
    ),
    (
        "tf-checkpoint",
        // TF prints both on one line: `Unsuccessful TensorSliceReader constructor: Failed to
        // find any matching files for PATH` (the path alternative comes first so it is read).
        r"(?:Key (?P<key>\S+) not found in checkpoint|(?:Unsuccessful TensorSliceReader constructor: )?Failed to find any matching files for (?P<path>\S+)|Unsuccessful TensorSliceReader constructor)",
    ),
    // Resolvers.
    (
        "resolver",
        r"No matching distribution found for (?P<requirement>[^\s;]+)",
    ),
    (
        "resolver",
        r"Could not find a version that satisfies the requirement (?P<requirement>[^\s;]+)(?: \(from versions: (?P<available>[^)]*)\))?",
    ),
    (
        "resolver",
        r"requires a different Python: (?P<python>[\d.]+) not in '(?P<python_spec>[^']+)'",
    ),
    (
        "resolver",
        r"(?P<requirement>[\w\-.=<>+]+) (?:has no wheels (?:are available )?|is unusable because no wheels are available )with a matching (?P<tag>Python(?: ABI| implementation)?(?: tag)?|platform tag)",
    ),
    (
        "wheel-platform",
        r"(?:(?P<wheel>[\w.+\-]*?-(?P<python_tag>(?:cp|py|pp)\d+)-(?P<abi_tag>\w+)-(?P<platform_tag>[\w.]+)\.whl) )?is not a supported wheel on this platform",
    ),
    (
        "resolver",
        r"No solution found when resolving dependencies|ResolutionImpossible|UnsatisfiableError|LibMambaUnsatisfiableError|PackagesNotFoundError",
    ),
    (
        "resolver",
        r"nothing provides (?P<dependency>[^\n]+?) needed by (?P<package>\S+)",
    ),
    // Devices not found.
    ("no-gpu-device", r"Skipping registering GPU devices"),
    (
        "jax-cpu-fallback",
        r"(?i:No GPU/TPU found, falling back to CPU|a CUDA-enabled jaxlib is not installed\. Falling back to cpu|Unknown backend:? '?(?P<backend>gpu|cuda)'? requested)",
    ),
    (
        "no-gpu-device",
        r"Unable to initialize backend '(?P<backend>\w+)'",
    ),
    (
        "no-gpu-device",
        r"Torch not compiled with CUDA enabled|torch\.cuda\.is_available\(\) is False",
    ),
    // Files a traceback loads.
    (
        "loads-file",
        r#"(?:torch\.load|torch\.jit\.load|load_model|load_weights|h5py\.File|safe_open|load_file|from_pretrained|restore|load_checkpoint)\(\s*(?:f=)?["'](?P<path>[^"']+)["']"#,
    ),
];

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
    stamp: Regex,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let pats: Vec<&str> = FAMILIES.iter().map(|(_, p)| *p).collect();
        let re = |s: &str| Regex::new(s).unwrap_or_else(|e| unreachable!("fixed pattern: {e}"));
        Compiled {
            set: RegexSet::new(&pats).unwrap_or_else(|e| unreachable!("fixed patterns: {e}")),
            each: pats.iter().map(|p| re(p)).collect(),
            stamp: re(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})"),
        }
    })
}

/// Every message format read: (event kind, pattern whose named groups are its values).
pub fn families() -> &'static [(&'static str, &'static str)] {
    FAMILIES
}

/// The patterns of every event family (for the line screen).
pub fn patterns() -> impl Iterator<Item = &'static str> {
    FAMILIES.iter().map(|(_, p)| *p)
}

/// One event read from the log.
#[derive(Clone, Debug, PartialEq)]
pub struct LogEvent {
    /// 1-based line.
    pub line: u64,
    /// Its kind (`oom`, `missing-object`, …).
    pub kind: &'static str,
    /// The named values, with derived ones (`held_elsewhere_gib`, `compute_capability`).
    pub values: Map<String, Value>,
}

/// Everything read from a log.
#[derive(Clone, Debug, Default)]
pub struct LogFacts {
    /// The events (the latest [`MAX_EVENTS`]).
    pub events: Vec<LogEvent>,
    /// The first and the latest timestamp seen (`YYYY-MM-DDTHH:MM:SS`, as the log wrote it).
    pub first_timestamp: Option<String>,
    /// See `first_timestamp`.
    pub last_timestamp: Option<String>,
}

impl LogFacts {
    /// Read one line (prefix already stripped or not: the patterns are unanchored).
    pub fn read(&mut self, line: u64, text: &str) {
        let c = compiled();
        if let Some(m) = c.stamp.captures(text) {
            let ts = format!("{}T{}", &m[1], &m[2]);
            if self.first_timestamp.is_none() {
                self.first_timestamp = Some(ts.clone());
            }
            self.last_timestamp = Some(ts);
        }
        let mut seen: Vec<&str> = Vec::new();
        for i in c.set.matches(text).iter() {
            let kind = FAMILIES[i].0;
            if seen.contains(&kind) {
                continue;
            }
            let Some(caps) = c.each[i].captures(text) else {
                continue;
            };
            seen.push(kind);
            let mut values = Map::new();
            for name in c.each[i].capture_names().flatten() {
                if let Some(m) = caps.name(name) {
                    values.insert(name.to_string(), Value::from(m.as_str().trim()));
                }
            }
            derive(kind, &mut values);
            if self.events.len() == MAX_EVENTS {
                self.events.remove(0);
            }
            self.events.push(LogEvent { line, kind, values });
        }
    }

    /// The latest event of `kind`.
    pub fn latest(&self, kind: &str) -> Option<&LogEvent> {
        self.events.iter().rev().find(|e| e.kind == kind)
    }

    /// The kinds seen, in order of first appearance.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for e in &self.events {
            if !out.contains(&e.kind) {
                out.push(e.kind);
            }
        }
        out
    }

    /// The files the traceback loads (for the checkpoint probe).
    pub fn loaded_files(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in &self.events {
            if let Some(Value::String(p)) = e.values.get("path") {
                if p.starts_with('/') && !out.contains(p) {
                    out.push(p.clone());
                }
            }
        }
        out
    }

    /// The `log` section: `events[]`, `kinds`, the timestamps, and for each kind the values of
    /// its latest event, merged over the earlier ones of that kind (so `log.oom.total_gib`
    /// survives a later bare `CUDA out of memory` line).
    pub fn to_value(&self) -> Value {
        let mut root = Map::new();
        for e in &self.events {
            let slot = root
                .entry(e.kind.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = slot {
                m.insert("line".into(), Value::from(e.line));
                for (k, v) in &e.values {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        let events: Vec<Value> = self
            .events
            .iter()
            .map(|e| json!({"line": e.line, "kind": e.kind, "values": e.values}))
            .collect();
        root.insert("events".into(), Value::Array(events));
        root.insert("kinds".into(), json!(self.kinds()));
        if let Some(t) = &self.first_timestamp {
            root.insert("first_timestamp".into(), Value::from(t.clone()));
        }
        if let Some(t) = &self.last_timestamp {
            root.insert("last_timestamp".into(), Value::from(t.clone()));
        }
        Value::Object(root)
    }
}

/// A size as the allocators print it (`2.42 GiB`, `26.12 MiB`) in GiB.
pub fn gib(s: &str) -> Option<f64> {
    let (n, unit) = s.trim().split_once(' ')?;
    let n: f64 = n.parse().ok()?;
    let f = match unit {
        "KiB" => 1.0 / (1024.0 * 1024.0),
        "MiB" => 1.0 / 1024.0,
        "GiB" => 1.0,
        "TiB" => 1024.0,
        _ => return None,
    };
    Some(n * f)
}

fn round2(x: f64) -> Value {
    serde_json::Number::from_f64((x * 100.0).round() / 100.0).map_or(Value::Null, Value::Number)
}

/// Values computed from the ones read: sizes in GiB and the memory another process holds (an
/// OOM), a compute capability from `sm_XX`, an architecture list as a list.
fn derive(kind: &str, v: &mut Map<String, Value>) {
    let text =
        |v: &Map<String, Value>, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match kind {
        "oom" => {
            for k in [
                "requested",
                "total",
                "allocated",
                "free",
                "reserved",
                "this_process",
            ] {
                if let Some(g) = text(v, k).as_deref().and_then(gib) {
                    v.insert(format!("{k}_gib"), round2(g));
                }
            }
            let num = |v: &Map<String, Value>, k: &str| v.get(k).and_then(Value::as_f64);
            let (total, free) = (num(v, "total_gib"), num(v, "free_gib"));
            // What this process holds: its reserved pool (old format) or all it has in use.
            let ours = num(v, "this_process_gib").or(num(v, "reserved_gib"));
            if let (Some(t), Some(f), Some(o)) = (total, free, ours) {
                v.insert("held_elsewhere_gib".into(), round2((t - f - o).max(0.0)));
            }
        }
        "numpy-abi" => {
            // `0x10` / `0x1000009` as numbers, so that rules can order them.
            for k in ["built_abi", "numpy_abi"] {
                let n = text(v, k).and_then(|h| {
                    u64::from_str_radix(h.trim_start_matches("0x").trim_start_matches("0X"), 16)
                        .ok()
                });
                if let Some(n) = n {
                    v.insert(format!("{k}_value"), Value::from(n));
                }
            }
        }
        "gpu-arch" => {
            if let Some(sm) = text(v, "sm") {
                if let Ok(n) = sm.parse::<u32>() {
                    v.insert(
                        "compute_capability".into(),
                        Value::from(format!("{}.{}", n / 10, n % 10)),
                    );
                }
            }
            if let Some(cc) = text(v, "cc") {
                v.insert("compute_capability".into(), Value::from(cc));
            }
        }
        "gpu-name" => {
            if let Some(cc) = text(v, "cc") {
                v.insert("compute_capability".into(), Value::from(cc));
            }
        }
        "torch-arch-list" => {
            if let Some(a) = text(v, "arches") {
                let list: Vec<Value> = a.split_whitespace().map(Value::from).collect();
                v.insert("arches".into(), Value::Array(list));
            }
        }
        _ => {}
    }
}

/// Add `log` to `root` (a snapshot as JSON) and fill the snapshot from the log: a GPU the log
/// names when the snapshot has none, the architectures torch printed when the framework was not
/// loaded, the GPU memory an OOM reports (the log wins: memory changes). Returns remarks for the
/// report (what was taken from the log, the snapshot taken after the failure).
pub fn overlay(root: &mut Value, log: &LogFacts) -> Vec<String> {
    let mut notes = Vec::new();
    if !root.is_object() {
        *root = Value::Object(Map::new());
    }
    let lv = log.to_value();
    if let Value::Object(m) = root {
        m.insert("log".into(), lv.clone());
    }
    if let Some(n) = gpu_from_log(root, &lv) {
        notes.push(n);
    }
    if let Some(n) = arches_from_log(root, &lv) {
        notes.push(n);
    }
    if let Some(n) = memory_from_log(root, &lv) {
        notes.push(n);
    }
    let collected = root
        .get("collected_at")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Some(last) = &log.last_timestamp {
        if collected.len() >= 19 && collected[..19] > *last.as_str() {
            notes.push(format!(
                "the facts were collected at {collected}, after the log's last timestamp \
                 ({last}): GPU memory and processes are taken from the log"
            ));
        }
    }
    notes
}

fn gpu_from_log(root: &mut Value, lv: &Value) -> Option<String> {
    let gpus = root.get("gpus").and_then(Value::as_array);
    if gpus.is_some_and(|g| !g.is_empty()) {
        return None;
    }
    let Some(src) = lv.get("gpu-arch").or_else(|| lv.get("gpu-name")) else {
        // Only an out-of-memory report: the GPU it names, with its capacity.
        let oom = lv.get("oom")?;
        let total = oom.get("total").and_then(Value::as_str).and_then(gib)?;
        let index: u64 = oom.get("gpu").and_then(Value::as_str)?.parse().ok()?;
        root["gpus"] = json!([{
            "index": index, "visible": true, "from_log": true,
            "memory_total_mib": (total * 1024.0).round()
        }]);
        return Some(format!(
            "GPU {index} is taken from the log's out-of-memory report"
        ));
    };
    let cc = src.get("compute_capability")?.as_str()?.to_string();
    let name = src
        .get("gpu")
        .and_then(Value::as_str)
        .unwrap_or("GPU")
        .to_string();
    root["gpus"] = json!([{
        "index": 0, "name": name, "compute_capability": cc, "visible": true, "from_log": true
    }]);
    Some(format!(
        "GPU 0 ({name}, compute capability {cc}) is taken from the log"
    ))
}

fn arches_from_log(root: &mut Value, lv: &Value) -> Option<String> {
    let arches = lv.get("torch-arch-list")?.get("arches")?.clone();
    let fws = root.get_mut("frameworks")?.as_array_mut()?;
    let mut filled = false;
    for fw in fws.iter_mut() {
        let torch = fw.get("name").and_then(Value::as_str) == Some("torch");
        if torch && fw.get("compute_capabilities").is_none_or(Value::is_null) {
            fw["compute_capabilities"] = arches.clone();
            fw["compute_capabilities_from_log"] = Value::Bool(true);
            filled = true;
        }
    }
    filled.then(|| "torch's compiled architectures are taken from the log".to_string())
}

fn memory_from_log(root: &mut Value, lv: &Value) -> Option<String> {
    let oom = lv.get("oom")?;
    // From the figures as printed (the `_gib` values are rounded).
    let exact = |k: &str| oom.get(k).and_then(Value::as_str).and_then(gib);
    let total = exact("total")?;
    let free = exact("free")?;
    let index: u64 = oom
        .get("gpu")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let gpus = root.get_mut("gpus")?.as_array_mut()?;
    let gpu = gpus
        .iter_mut()
        .find(|g| g.get("index").and_then(Value::as_u64) == Some(index))?;
    let mib = |g: f64| (g * 1024.0).round();
    let used = mib(total - free);
    // At the failure, someone else held what this process did not: that is the process the
    // log proves (the snapshot's process list is of another moment).
    let elsewhere = oom.get("held_elsewhere_gib").and_then(Value::as_f64);
    let processes = match elsewhere {
        Some(g) if g >= 0.5 => json!([{
            "pid": "?", "kind": "compute", "used_memory_mib": mib(g),
            "name": "another process (from the log's out-of-memory figures)"
        }]),
        Some(_) => json!([]),
        None => gpu
            .get("live")
            .and_then(|l| l.get("processes"))
            .cloned()
            .unwrap_or(json!([])),
    };
    gpu["live"] = json!({
        "memory_used_mib": used,
        "memory_free_mib": mib(free),
        "memory_used_percent": ((total - free) / total * 1000.0).round() / 10.0,
        "processes": processes,
        "from_log": true,
    });
    Some(format!(
        "GPU {index} memory in use is taken from the log's out-of-memory report"
    ))
}

/// Whether `text` holds any event (for the screen).
pub fn any(text: &str) -> bool {
    compiled().set.is_match(text)
}

/// The facts the log holds for `text` alone (tests, the corpus bench).
pub fn read_text(text: &str) -> LogFacts {
    let mut f = LogFacts::default();
    for (i, l) in text.lines().enumerate() {
        f.read(i as u64 + 1, l);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str, kind: &str) -> Map<String, Value> {
        let f = read_text(text);
        f.latest(kind)
            .unwrap_or_else(|| panic!("no {kind} in {text}: {:?}", f.events))
            .values
            .clone()
    }

    /// Lines as the frameworks print them (produced here or quoted in the corpus): torch's
    /// two-line CUDA mismatch merges, TF's checkpoint path is read, cudaError names and numpy's
    /// hex versions come out.
    #[test]
    fn formats_read_real_lines_as_printed() {
        let f = read_text("RuntimeError:\nThe detected CUDA version (12.2) mismatches the version that was used to compile\nPyTorch (11.3). Please make sure to use the same CUDA versions.\n");
        let v = f.to_value();
        assert_eq!(v["torch-cuda-mismatch"]["cuda"], "12.2", "{v}");
        assert_eq!(v["torch-cuda-mismatch"]["torch_cuda"], "11.3", "{v}");
        let v = one("tensorflow.python.framework.errors_impl.NotFoundError: Unsuccessful TensorSliceReader constructor: Failed to find any matching files for copy/model", "tf-checkpoint");
        assert_eq!(v["path"], "copy/model");
        let v = one("CUDA error at bandwidthTest.cu:255 code=35(cudaErrorInsufficientDriver) \"cudaSetDevice(currentDevice)\"", "cuda-error");
        assert_eq!(v["name"], "cudaErrorInsufficientDriver");
        let v = one("RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xf . Check the section", "numpy-abi");
        assert_eq!(
            (v["built_abi_value"].clone(), v["numpy_abi_value"].clone()),
            (Value::from(16), Value::from(15))
        );
    }

    #[test]
    fn oom_figures_give_the_memory_another_process_holds() {
        let v = one("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; 2.42 GiB already allocated; 26.12 MiB free; 2.75 GiB reserved in total by PyTorch)", "oom");
        assert_eq!(v["total_gib"], json!(10.76));
        assert_eq!(v["held_elsewhere_gib"], json!(7.98));
        let v = one("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 12.10 GiB memory in use. Of the allocated memory 11.2 GiB is allocated by PyTorch", "oom");
        assert_eq!(v["held_elsewhere_gib"], json!(10.49));
    }

    #[test]
    fn loader_import_and_version_messages_carry_their_values() {
        let v = one(
            "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
            "missing-object",
        );
        assert_eq!(v["soname"], "libcudnn.so.9");
        let v = one("ImportError: /v/lib/python3.11/site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12", "undefined-symbol");
        assert_eq!(v["symbol"], "__nvJitLinkComplete_12_4");
        assert_eq!(v["version"], "libnvJitLink.so.12");
        assert!(v["object"].as_str().unwrap().ends_with("libcusparse.so.12"));
        let v = one(
            "OSError: /usr/lib/libfoo.so: wrong ELF class: ELFCLASS32",
            "wrong-elf-class",
        );
        assert_eq!(v["class"], "ELFCLASS32");
        let v = one(
            "ModuleNotFoundError: No module named 'numpy._core'",
            "module-not-found",
        );
        assert_eq!(v["module"], "numpy._core");
        let v = one("JAX plugin jax_cuda12_plugin version 0.4.30 is installed, but it is not compatible with the installed jaxlib version 0.4.29, so it will not be used.", "jax-plugin-mismatch");
        assert_eq!(v["jaxlib"], "0.4.29");
        let v = one("TypeError: Could not deserialize class 'Functional' because its parent module keras.src.models.functional cannot be imported.", "keras-deserialize");
        assert_eq!(v["class"], "Functional");
        let v = one(
            "ValueError: Unrecognized keyword arguments: ['batch_shape']",
            "keras-deserialize",
        );
        assert_eq!(v["kwarg"], "batch_shape");
        let v = one(
            "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
            "safetensors",
        );
        assert_eq!(v["error"], "HeaderTooLarge");
        let v = one(
            "ERROR: No matching distribution found for tensorflow==2.12.0",
            "resolver",
        );
        assert_eq!(v["requirement"], "tensorflow==2.12.0");
    }

    #[test]
    fn cuda_gpu_and_arch_messages_carry_their_values() {
        let v = one("2024-03-01 10:00:00.000000: E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", "cuda-init");
        assert_eq!(v["name"], "CUDA_ERROR_NO_DEVICE");
        let v = one("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)", "cuda-error");
        assert_eq!(v["code"], "804");
        let f = read_text("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.");
        let lv = f.to_value();
        assert_eq!(lv["gpu-arch"]["compute_capability"], "12.0");
        assert_eq!(lv["gpu-arch"]["gpu"], "NVIDIA GeForce RTX 5090");
        assert_eq!(lv["torch-arch-list"]["arches"][6], "sm_90");
        let v = one("RuntimeError: jax.errors.JaxRuntimeError: Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present.", "jax-cpu-fallback");
        assert_eq!(v["backend"], "gpu");
        let v = one(
            r#"    model = torch.load("/data/runs/model.pt")"#,
            "loads-file",
        );
        assert_eq!(v["path"], "/data/runs/model.pt");
    }

    #[test]
    fn the_log_fills_the_snapshot_and_wins_for_memory() {
        let f = read_text("2026-11-20 10:00:00 step 1\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; 2.42 GiB already allocated; 26.12 MiB free; 2.75 GiB reserved in total by PyTorch)\nNVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.");
        let mut root = json!({"collected_at": "2026-11-27T08:00:00Z",
            "gpus": [{"index": 0, "name": "x", "live": {"memory_used_mib": 3, "memory_free_mib": 11000, "processes": []}}]});
        let notes = overlay(&mut root, &f);
        assert_eq!(root["gpus"][0]["live"]["memory_free_mib"], json!(26.0));
        assert!(
            notes
                .iter()
                .any(|n| n.contains("after the log's last timestamp")),
            "{notes:?}"
        );
        // No GPU facts at all: the log's GPU is used.
        let mut root = json!({});
        overlay(&mut root, &f);
        assert_eq!(root["gpus"][0]["compute_capability"], "12.0");
        assert_eq!(root["log"]["oom"]["held_elsewhere_gib"], json!(7.98));
    }
}
