//! The `tools` probe (stage 2, after `python`; issue 25 item 6): the CUDA compiler tools each
//! interpreter's frameworks run at run time, found in the order each framework searches, with
//! versions read from the binaries, never by running them. Facts: `pythons[].cuda_tools`.
//!
//! - **XLA** (JAX, TensorFlow) runs `ptxas`: `FindCudaExecutable` in
//!   `xla/stream_executor/cuda/subprocess_compilation.cc` tries `<xla_gpu_cuda_data_dir>/bin`,
//!   then every `PATH` directory, then `tsl::CandidateCudaRoots()` (`/usr/local/cuda`,
//!   `/opt/cuda`, then `../nvidia/cu13` or `../nvidia/cuda_nvcc` beside the framework's
//!   library), skipping versions below 11.8 and 12.3.103. JAX sets the data dir itself
//!   (`jax/_src/lib/__init__.py` `_cuda_path()`: `CUDA_ROOT`, else the `nvidia.cu13` or
//!   `nvidia.cuda_nvcc` package) when its `compiler.py` passes `lib.cuda_path` on; TensorFlow
//!   takes it from `XLA_FLAGS=--xla_gpu_cuda_data_dir=`, so a `PATH` ptxas wins over its wheel.
//! - **Triton** runs `ptxas` from `TRITON_PTXAS_PATH`, else its bundled
//!   `backends/nvidia/bin/ptxas` (`knobs.py` `env_nvidia_tool`); newer releases run
//!   `ptxas-blackwell` (`TRITON_PTXAS_BLACKWELL_PATH`) for compute capability 9.0 and later.
//! - **torch** `cpp_extension` builds run `nvcc` under `CUDA_HOME`/`CUDA_PATH`, else the
//!   `PATH` one, else `/usr/local/cuda` (`_find_cuda_home`), and refuse a CUDA major other
//!   than torch's.
//!
//! The version is the `Cuda compilation tools, release X.Y, VX.Y.Z` string `--version`
//! prints: it sits in `.rodata` of every `ptxas`, `nvcc`, `nvlink` and `fatbinary` (checked on
//! the `nvidia-cuda-nvcc` 12.9 and 13.5 wheels and Triton's bundled ptxas, `tests/tools_probe.rs`),
//! so only that section is scanned.

use super::file_memo::FileMemo;
use super::{Apply, Context};
use crate::root::{Env, Root};
use crate::snapshot::python::{Package, Python};
use crate::snapshot::tools::ToolUse;
use crate::version::DottedVersion;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The marker `--version` prints, followed by `X.Y, VX.Y.Z`.
pub const MARKER: &[u8] = b"Cuda compilation tools, release ";
/// XLA's `kMinimumSupportedPtxAsVersion`.
const XLA_MIN: &str = "11.8";
/// XLA's `kBuggyPtxAsVersions`.
const XLA_EXCLUDED: &str = "12.3.103";
/// Largest section scanned for the marker.
const MAX_SECTION: u64 = 256 * 1024 * 1024;

/// The probe entry point (registered as `tools`, stage 2).
pub fn probe(ctx: &Context) -> Apply {
    let mut versions = Versions::with_memo(std::sync::Arc::clone(&ctx.memo));
    let found: Vec<(String, Vec<ToolUse>)> = ctx
        .earlier
        .pythons
        .iter()
        .take_while(|_| ctx.remaining() > std::time::Duration::ZERO)
        .map(|py| {
            (
                py.path.clone(),
                uses(ctx.root(), ctx.env(), py, &mut versions),
            )
        })
        .filter(|(_, u)| !u.is_empty())
        .collect();
    Box::new(move |snap| {
        for (path, uses) in found {
            if let Some(py) = snap.pythons.iter_mut().find(|p| p.path == path) {
                py.cuda_tools = uses;
            }
        }
    })
}

/// Versions read so far, by machine path (and across runs, by file identity, in the memo).
#[derive(Default)]
pub struct Versions {
    seen: HashMap<PathBuf, Option<String>>,
    memo: std::sync::Arc<FileMemo>,
}

impl Versions {
    /// Versions kept across runs in `memo`.
    pub fn with_memo(memo: std::sync::Arc<FileMemo>) -> Versions {
        Versions {
            seen: HashMap::new(),
            memo,
        }
    }

    /// The version of the tool at `path` (`None`: no marker, or unreadable).
    pub fn of(&mut self, root: &Root, path: &Path) -> Option<String> {
        let memo = &self.memo;
        self.seen
            .entry(path.to_path_buf())
            .or_insert_with(|| memo.answer(root, path, "tool-version", || tool_version(root, path)))
            .clone()
    }
}

/// Every tool use of `py`'s frameworks.
pub fn uses(root: &Root, env: &Env, py: &Python, v: &mut Versions) -> Vec<ToolUse> {
    let mut out = Vec::new();
    for p in &py.packages {
        let name = p.name.as_str();
        let jax_plugin = name.starts_with("jax-cuda") && name.ends_with("-plugin");
        let tf = p.family.as_deref() == Some("tensorflow") && name != "tensorflow-cpu";
        if jax_plugin || tf {
            out.push(xla(root, env, py, p, jax_plugin, v));
        } else if name == "triton" {
            out.extend(triton(root, env, p, v));
        } else if name == "torch" {
            out.extend(torch_nvcc(root, env, p, v));
        }
    }
    out
}

fn base(user: &str, p: &Package, tool: &str) -> ToolUse {
    ToolUse {
        user: user.into(),
        framework: p.name.clone(),
        framework_version: p.version.clone(),
        tool: tool.into(),
        ..Default::default()
    }
}

/// The lowest `nvidia-cuda-nvcc*` version a `Requires-Dist` list accepts (`>=X`).
pub fn nvcc_floor(requires: &[String]) -> Option<String> {
    requires.iter().find_map(|r| {
        let spec = r.split(';').next()?.trim();
        let rest = spec.strip_prefix("nvidia-cuda-nvcc")?;
        let at = rest.find(">=")?;
        let v: String = rest[at + 2..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (!v.is_empty()).then_some(v)
    })
}

/// The ptxas XLA runs for `p` (a JAX CUDA plugin or TensorFlow) in `py`.
fn xla(root: &Root, env: &Env, py: &Python, p: &Package, jax: bool, v: &mut Versions) -> ToolUse {
    let site = PathBuf::from(&p.location);
    let wheel_dirs: Vec<PathBuf> = ["cu13", "cuda_nvcc"]
        .iter()
        .map(|d| site.join("nvidia").join(d))
        .collect();
    let own = wheel_dirs
        .iter()
        .map(|d| d.join("bin/ptxas"))
        .find(|f| root.is_file(f));
    let mut cands: Vec<(PathBuf, &str)> = Vec::new();
    if let Some((dir, via)) = preferred_dir(root, env, py, jax, &wheel_dirs) {
        cands.push((dir.join("bin/ptxas"), via));
    }
    for d in env.split_path("PATH") {
        cands.push((d.join("ptxas"), "PATH"));
    }
    cands.push((
        PathBuf::from("/usr/local/cuda/bin/ptxas"),
        "/usr/local/cuda",
    ));
    cands.push((PathBuf::from("/opt/cuda/bin/ptxas"), "/opt/cuda"));
    for d in &wheel_dirs {
        cands.push((d.join("bin/ptxas"), "nvidia-wheel"));
    }
    let mut u = base("xla", p, "ptxas");
    u.needs = nvcc_floor(&p.requires);
    choose(root, &mut u, &cands, v, xla_accepts);
    if let (Some(own), Some(chosen)) = (&own, &u.path) {
        if Path::new(chosen) != own.as_path() {
            u.own_version = v.of(root, own);
        }
    }
    u
}

/// `xla_gpu_cuda_data_dir` as the framework sets it.
fn preferred_dir<'a>(
    root: &Root,
    env: &Env,
    py: &Python,
    jax: bool,
    wheel_dirs: &[PathBuf],
) -> Option<(PathBuf, &'a str)> {
    if jax && jax_sets_data_dir(root, py) {
        if let Some(d) = env.get("CUDA_ROOT").filter(|d| !d.is_empty()) {
            return Some((PathBuf::from(d), "CUDA_ROOT"));
        }
        if let Some(d) = wheel_dirs.iter().find(|d| root.is_dir(d)) {
            return Some((d.clone(), "nvidia-wheel"));
        }
    }
    let flags = env.get("XLA_FLAGS")?;
    let dir = flags
        .split_whitespace()
        .find_map(|f| f.strip_prefix("--xla_gpu_cuda_data_dir="))?;
    Some((
        PathBuf::from(dir.trim_matches(['"', '\'']).to_string()),
        "XLA_FLAGS",
    ))
}

/// JAX's `compiler.py` passes the wheel's CUDA directory to XLA (JAX 0.4.14 and later).
fn jax_sets_data_dir(root: &Root, py: &Python) -> bool {
    let Some(jax) = py.package("jax") else {
        return false;
    };
    let f = Path::new(&jax.location).join("jax/_src/compiler.py");
    root.read_limited(&f, 1 << 20)
        .is_ok_and(|b| memchr::memmem::find(&b, b"xla_gpu_cuda_data_dir = lib.cuda_path").is_some())
}

/// Why XLA would pass over a ptxas of version `ver` (`None`: it takes it).
fn xla_accepts(ver: Option<&str>) -> Option<String> {
    let ver = ver?;
    let v = DottedVersion::parse_prefix(ver)?;
    if v < DottedVersion::parse_prefix(XLA_MIN)? {
        return Some(format!("older than XLA's minimum {XLA_MIN}"));
    }
    (ver == XLA_EXCLUDED).then(|| "a version XLA excludes (miscompiles)".to_string())
}

/// Take the first candidate that exists and that `reject` does not refuse.
fn choose(
    root: &Root,
    u: &mut ToolUse,
    cands: &[(PathBuf, &str)],
    v: &mut Versions,
    reject: fn(Option<&str>) -> Option<String>,
) {
    for (path, via) in cands {
        if !root.is_file(path) {
            continue;
        }
        let ver = v.of(root, path);
        if let Some(why) = reject(ver.as_deref()) {
            u.passed_over.push(format!(
                "{} {}: {why}",
                path.display(),
                ver.as_deref().unwrap_or("?")
            ));
            continue;
        }
        u.path = Some(path.display().to_string());
        u.version = ver;
        u.via = Some(via.to_string());
        break;
    }
    u.passed_over.dedup();
    u.same_major = match (&u.version, &u.needs) {
        (Some(a), Some(b)) => Some(a.split('.').next() == b.split('.').next()),
        _ => None,
    };
}

fn accept_any(_: Option<&str>) -> Option<String> {
    None
}

/// Triton's ptxas (and `ptxas-blackwell` when it ships one).
fn triton(root: &Root, env: &Env, p: &Package, v: &mut Versions) -> Vec<ToolUse> {
    let pkg = Path::new(&p.location).join("triton");
    let bin = pkg.join("backends/nvidia/bin");
    let old = pkg.join("third_party/cuda/bin/ptxas");
    let blackwell = bin.join("ptxas-blackwell");
    let has_blackwell = root.is_file(&blackwell);
    let mut out = Vec::new();
    for (user, var, bundled) in [
        ("triton", "TRITON_PTXAS_PATH", bin.join("ptxas")),
        ("triton-blackwell", "TRITON_PTXAS_BLACKWELL_PATH", blackwell),
    ] {
        if user == "triton-blackwell" && !has_blackwell {
            continue;
        }
        let mut cands: Vec<(PathBuf, &str)> = Vec::new();
        if let Some(e) = env.get(var).filter(|e| !e.is_empty()) {
            cands.push((PathBuf::from(e), var));
        }
        cands.push((bundled, "bundled"));
        cands.push((old.clone(), "bundled"));
        let mut u = base(user, p, "ptxas");
        choose(root, &mut u, &cands, v, accept_any);
        if has_blackwell {
            let cc = Some("9.0".to_string());
            if user == "triton" {
                u.below_cc = cc;
            } else {
                u.min_cc = cc;
            }
        }
        if u.path.is_some() {
            out.push(u);
        }
    }
    out
}

/// The nvcc `torch.utils.cpp_extension` builds with, against torch's CUDA.
fn torch_nvcc(root: &Root, env: &Env, p: &Package, v: &mut Versions) -> Option<ToolUse> {
    let version_py = Path::new(&p.location).join("torch/version.py");
    let text = root.read_to_string_lossy(&version_py).ok()?;
    let cuda = torch_cuda(&text)?;
    let mut cands: Vec<(PathBuf, &str)> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = env.get(var).filter(|h| !h.is_empty()) {
            cands.push((Path::new(h).join("bin/nvcc"), var));
            break;
        }
    }
    if cands.is_empty() {
        for d in env.split_path("PATH") {
            cands.push((d.join("nvcc"), "PATH"));
        }
        cands.push((PathBuf::from("/usr/local/cuda/bin/nvcc"), "/usr/local/cuda"));
    }
    let mut u = base("torch-cpp-extension", p, "nvcc");
    u.needs = Some(cuda);
    choose(root, &mut u, &cands, v, accept_any);
    u.path.is_some().then_some(u)
}

/// `12.8` from torch's `version.py` (`cuda: Optional[str] = '12.8'`; `None` for CPU builds).
pub fn torch_cuda(text: &str) -> Option<String> {
    let line = text
        .lines()
        .find(|l| l.starts_with("cuda:") || l.starts_with("cuda ="))?;
    let q = line.split(['\'', '"']).nth(1)?;
    (!q.is_empty() && q.chars().next()?.is_ascii_digit()).then(|| q.to_string())
}

/// The version a CUDA tool binary prints for `--version`, read from its `.rodata` (the whole
/// file, bounded, when it has no section table).
pub fn tool_version(root: &Root, path: &Path) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let f = root.open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let (start, size) = rodata(&f, len).unwrap_or((0, len));
    // A stated size past the end of the file reads nothing more than the file holds.
    let size = size.min(MAX_SECTION).min(len.saturating_sub(start));
    const CHUNK: u64 = 4 << 20;
    let overlap = 64u64;
    let mut buf = vec![0u8; CHUNK as usize];
    let mut off = 0u64;
    while off < size {
        let want = CHUNK.min(size - off) as usize;
        let n = f.read_at(&mut buf[..want], start + off).ok()?;
        if n == 0 {
            break;
        }
        if let Some(v) = find_version(&buf[..n]) {
            return Some(v);
        }
        // A read no longer than the overlap would not move on (a short file under a large
        // stated section looped here forever).
        if (n as u64) <= overlap || off + n as u64 >= size {
            break;
        }
        off += n as u64 - overlap;
    }
    None
}

/// The first `release X.Y, VX.Y.Z` after the marker in `bytes` (`X.Y` when there is no `V`).
pub fn find_version(bytes: &[u8]) -> Option<String> {
    let finder = memchr::memmem::Finder::new(MARKER);
    for at in finder.find_iter(bytes) {
        let rest = &bytes[at + MARKER.len()..bytes.len().min(at + MARKER.len() + 48)];
        let text = String::from_utf8_lossy(rest);
        let short: String = text
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        if !short.contains('.') {
            continue; // the `%d.%d` format string
        }
        let full = text.split_once(", V").map(|(_, r)| {
            r.chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect::<String>()
        });
        return Some(full.filter(|f| f.starts_with(&short)).unwrap_or(short));
    }
    None
}

/// (file offset, size) of `.rodata` in a little-endian ELF64 file of `len` bytes.
fn rodata(f: &std::fs::File, len: u64) -> Option<(u64, u64)> {
    crate::probe::libs::elf::sections(f, len)?
        .into_iter()
        .find(|s| s.name == b".rodata")
        .map(|s| (s.offset, s.size))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzzer (2026-11-27, `tool-rodata`): a `.rodata` that claims 1 GiB in an
    /// 11 KB file; the last read returned exactly the 64-byte overlap and the loop stood still.
    #[test]
    fn a_rodata_larger_than_its_file_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = vec![0u8; 4096];
        b[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let shoff = 3000u64;
        b[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        b[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        b[0x3c..0x3e].copy_from_slice(&2u16.to_le_bytes());
        b[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        let names = b"\0.rodata\0.shstrtab\0";
        b[2000..2000 + names.len()].copy_from_slice(names);
        let mut section = |i: u64, name: u32, off: u64, size: u64| {
            let at = (shoff + i * 64) as usize;
            b[at..at + 4].copy_from_slice(&name.to_le_bytes());
            b[at + 0x18..at + 0x20].copy_from_slice(&off.to_le_bytes());
            b[at + 0x20..at + 0x28].copy_from_slice(&size.to_le_bytes());
        };
        section(0, 1, 4096 - 200, 1 << 30);
        section(1, 9, 2000, names.len() as u64);
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/nvcc"), &b).unwrap();
        let root = Root::new(dir.path());
        let started = std::time::Instant::now();
        assert_eq!(tool_version(&root, Path::new("/bin/nvcc")), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn the_version_after_the_marker() {
        let b = b"x\0Cuda compilation tools, release %d.%d, V%s\0Cuda compilation tools, release 12.9, V12.9.86\nBuild";
        assert_eq!(find_version(b).as_deref(), Some("12.9.86"));
        assert_eq!(
            find_version(b"Cuda compilation tools, release 11.8\0").as_deref(),
            Some("11.8")
        );
        assert_eq!(find_version(b"nothing here"), None);
    }

    #[test]
    fn requirement_floors_and_torch_cuda() {
        let r = vec![
            "jax-cuda13-pjrt==0.10.2".to_string(),
            "nvidia-cuda-nvcc>=13.0.48; sys_platform == \"linux\" and extra == \"with-cuda\""
                .to_string(),
        ];
        assert_eq!(nvcc_floor(&r).as_deref(), Some("13.0.48"));
        let tf = vec!["nvidia-cuda-nvcc-cu12<13.0,>=12.5.82; extra == \"and-cuda\"".to_string()];
        assert_eq!(nvcc_floor(&tf).as_deref(), Some("12.5.82"));
        assert_eq!(nvcc_floor(&["numpy>=1".to_string()]), None);
        assert_eq!(
            torch_cuda("__version__ = '2.6.0+cu124'\ncuda: Optional[str] = '12.4'\n").as_deref(),
            Some("12.4")
        );
        assert_eq!(torch_cuda("cuda: Optional[str] = None\n"), None);
    }

    #[test]
    fn xla_passes_over_old_and_excluded_ptxas() {
        assert!(xla_accepts(Some("11.5.119")).is_some());
        assert!(xla_accepts(Some("12.3.103")).is_some());
        assert_eq!(xla_accepts(Some("12.3.107")), None);
        assert_eq!(xla_accepts(None), None);
    }
}
