//! The load probe: `dlopen` each resolved library in a child envdoctor process
//! (`envdoctor __load-child`) and ask it its version, so that a library that crashes in its
//! constructor, hangs, or lacks a symbol becomes a [`LoadResult`] instead of taking envdoctor
//! down.
//!
//! - **One child per environment** (per interpreter): glibc reuses an already-loaded object
//!   with the same SONAME, so two environments' `libcudnn.so.8` must never meet in one process.
//!   Within one child, libraries are loaded in the order given, `RTLD_NOW | RTLD_LOCAL` (what
//!   TensorFlow's `dso_loader` and CPython's extension import use), so undefined symbols fail
//!   at load.
//! - The child writes one line before each library (`start`) and one after (`done`), each
//!   prefixed by [`MARK`] so that a library printing to stdout cannot forge them. When the child
//!   dies by a signal, the library it had started is `crashed` (with the signal's name) and a
//!   fresh child goes on with the rest; when a library has not finished within its time limit
//!   (see [`per_library_limit`]) the child is killed, that library is `timeout`, and a fresh
//!   child goes on. Whatever is left at the probe's deadline is `skipped`.
//! - Version entry points, by family: `cudaRuntimeGetVersion` and `cuDriverGetVersion`
//!   (12040 → 12.4), `cudnnGetVersion` (8904 → 8.9.4 up to cuDNN 8, 90100 → 9.1.0 from 9.0),
//!   `cuptiGetVersion` (the CUPTI API version, mapped to its CUDA release by [`CUPTI_API`]),
//!   `ncclGetVersion` (2.9+: 22105 → 2.21.5; before: 2408 → 2.4.8), `cublasLtGetVersion`
//!   (120405 → 12.4.5), `nvrtcVersion` / `nvJitLinkVersion` (major, minor), and
//!   `<lib>GetProperty` (major, minor, patch) for cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE.

use crate::snapshot::libs::LoadResult;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The hidden subcommand that runs [`child_main`].
pub const CHILD_SUBCOMMAND: &str = "__load-child";

/// Prefix of every protocol line the child writes.
pub const MARK: &str = "@@envdoctor-load ";

/// CUPTI API version → the CUDA release that ships it (`CUPTI_API_VERSION` in `cupti_version.h`).
pub const CUPTI_API: &[(i64, &str)] = &[
    (18, "11.8"),
    (19, "12.0"),
    (22, "12.4"),
    (24, "12.6"),
    (26, "12.8"),
];

/// One library to load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Its CUDA family (`cudnn`), which picks the version entry point; `None`: just load it.
    pub family: Option<String>,
    /// The host path to load.
    pub path: PathBuf,
}

/// One protocol line.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
enum Line {
    Start { index: usize },
    Done { index: usize, result: LoadResult },
}

/// `12040` → `12.4` (CUDA runtime and driver API encoding).
pub fn cuda_version(v: i64) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// cuDNN's `cudnnGetVersion`: `MAJOR*1000 + MINOR*100 + PATCH` up to 8.x, `MAJOR*10000 +
/// MINOR*100 + PATCH` from 9.0.
pub fn cudnn_version(v: i64) -> String {
    if v >= 90000 {
        format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
    } else {
        format!("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100)
    }
}

/// NCCL's `ncclGetVersion`: `MAJOR*10000 + MINOR*100 + PATCH` from 2.9, `MAJOR*1000 + MINOR*100
/// + PATCH` before.
pub fn nccl_version(v: i64) -> String {
    if v >= 10000 {
        format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
    } else {
        format!("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100)
    }
}

/// `cublasLtGetVersion`: `MAJOR*10000 + MINOR*100 + PATCH`.
pub fn cublaslt_version(v: i64) -> String {
    format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
}

/// The CUDA release of a CUPTI API version, when known.
pub fn cupti_release(api: i64) -> Option<String> {
    CUPTI_API
        .iter()
        .find(|(a, _)| *a == api)
        .map(|(_, r)| r.to_string())
}

/// A signal's name (`SIGSEGV`).
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        other => format!("signal {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The child.

/// Entry point of `envdoctor __load-child FAMILY PATH [FAMILY PATH]...` (`-` for no family).
pub fn child_main(args: &[String]) -> i32 {
    let stdout = std::io::stdout();
    let emit = |l: &Line| -> bool {
        let Ok(json) = serde_json::to_string(l) else {
            return false;
        };
        let mut out = stdout.lock();
        writeln!(out, "{MARK}{json}")
            .and_then(|_| out.flush())
            .is_ok()
    };
    for (index, pair) in args.chunks(2).enumerate() {
        let [fam, path] = pair else {
            return 2;
        };
        if !emit(&Line::Start { index }) {
            return 1;
        }
        let fam = (fam != "-").then_some(fam.as_str());
        let result = load_one(fam, Path::new(path));
        if !emit(&Line::Done { index, result }) {
            return 1;
        }
    }
    0
}

fn load_one(family: Option<&str>, path: &Path) -> LoadResult {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading a library runs its constructors; that is the point of this child
    // process, which exists so that whatever they do cannot harm envdoctor.
    let lib = match unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) } {
        Ok(l) => l,
        Err(e) => {
            return LoadResult {
                status: "error".into(),
                error: Some(dl_error_text(&e)),
                ..Default::default()
            }
        }
    };
    let mut r = LoadResult {
        status: "loaded".into(),
        ..Default::default()
    };
    if let Some(f) = family {
        // SAFETY: each symbol is called with the C signature NVIDIA documents for it.
        unsafe { ask_version(&lib, f, &mut r) };
    }
    // Never unload: some libraries crash in their destructors; the process exit is enough.
    std::mem::forget(lib);
    r
}

fn dl_error_text(e: &libloading::Error) -> String {
    use std::error::Error as _;
    match e.source() {
        Some(s) => s.to_string(),
        None => e.to_string(),
    }
}

type IntOut = unsafe extern "C" fn(*mut libc::c_int) -> libc::c_int;
type SizeRet = unsafe extern "C" fn() -> libc::size_t;
type TwoOut = unsafe extern "C" fn(*mut libc::c_int, *mut libc::c_int) -> libc::c_int;
type Property = unsafe extern "C" fn(libc::c_int, *mut libc::c_int) -> libc::c_int;

/// # Safety
/// Calls foreign functions found in `lib` with the signatures their families document.
unsafe fn ask_version(lib: &libloading::os::unix::Library, family: &str, r: &mut LoadResult) {
    let int_out = |name: &str, r: &mut LoadResult| -> Option<i64> {
        let sym = lib.get::<IntOut>(format!("{name}\0").as_bytes()).ok()?;
        r.version_call = Some(name.to_string());
        let mut v: libc::c_int = 0;
        let rc = sym(&mut v);
        if rc != 0 {
            r.error = Some(format!("{name} returned error {rc}"));
            return None;
        }
        r.raw_version = Some(v as i64);
        Some(v as i64)
    };
    let size_ret = |name: &str, r: &mut LoadResult| -> Option<i64> {
        let sym = lib.get::<SizeRet>(format!("{name}\0").as_bytes()).ok()?;
        r.version_call = Some(name.to_string());
        // size_t; a C `int` return leaves the upper half zero on x86-64.
        let v = (sym() & 0xffff_ffff) as i64;
        r.raw_version = Some(v);
        Some(v)
    };
    let two_out = |name: &str, r: &mut LoadResult| -> Option<String> {
        let sym = lib.get::<TwoOut>(format!("{name}\0").as_bytes()).ok()?;
        r.version_call = Some(name.to_string());
        let (mut a, mut b): (libc::c_int, libc::c_int) = (0, 0);
        let rc = sym(&mut a, &mut b);
        if rc != 0 {
            r.error = Some(format!("{name} returned error {rc}"));
            return None;
        }
        r.raw_version = Some(a as i64 * 1000 + b as i64 * 10);
        Some(format!("{a}.{b}"))
    };
    let property = |name: &str, r: &mut LoadResult| -> Option<String> {
        let sym = lib.get::<Property>(format!("{name}\0").as_bytes()).ok()?;
        r.version_call = Some(name.to_string());
        let mut parts = [0 as libc::c_int; 3];
        for (t, p) in parts.iter_mut().enumerate() {
            let rc = sym(t as libc::c_int, p);
            if rc != 0 {
                r.error = Some(format!("{name}({t}) returned error {rc}"));
                return None;
            }
        }
        r.raw_version = Some(parts[0] as i64 * 1000 + parts[1] as i64 * 10);
        Some(format!("{}.{}.{}", parts[0], parts[1], parts[2]))
    };
    r.version = match family {
        "cudart" => int_out("cudaRuntimeGetVersion", r).map(cuda_version),
        "cuda" => int_out("cuDriverGetVersion", r).map(cuda_version),
        "cudnn" => size_ret("cudnnGetVersion", r).map(cudnn_version),
        "cupti" => int_out("cuptiGetVersion", r).and_then(cupti_release),
        "nccl" => int_out("ncclGetVersion", r).map(nccl_version),
        "cublasLt" => size_ret("cublasLtGetVersion", r).map(cublaslt_version),
        "nvrtc" => two_out("nvrtcVersion", r),
        "nvJitLink" => two_out("nvJitLinkVersion", r),
        "cublas" => property("cublasGetProperty", r),
        "cufft" => property("cufftGetProperty", r),
        "curand" => property("curandGetProperty", r),
        "cusolver" => property("cusolverGetProperty", r),
        "cusparse" => property("cusparseGetProperty", r),
        _ => None,
    };
}

// ---------------------------------------------------------------------------------------------
// The parent.

/// How long one library may take: 40 % of the probe deadline, at least 1 s, so that one
/// library that hangs leaves time for the others.
pub fn per_library_limit(deadline: Duration) -> Duration {
    deadline.mul_f64(0.4).max(Duration::from_secs(1))
}

fn skipped(why: &str) -> LoadResult {
    LoadResult {
        status: "skipped".into(),
        error: Some(why.into()),
        ..Default::default()
    }
}

/// Load `items` (one environment's libraries) in fresh children of `exe`, each library within
/// `per_lib`, everything by `deadline`. `env` is the environment the children get. Returns
/// one result per item, in order.
pub fn load_all(
    exe: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    items: &[Item],
    per_lib: Duration,
    deadline: Instant,
) -> Vec<LoadResult> {
    let mut results: Vec<Option<LoadResult>> = vec![None; items.len()];
    let mut next = 0;
    while next < items.len() {
        if Instant::now() >= deadline {
            break;
        }
        next = run_child(exe, env, items, next, per_lib, deadline, &mut results);
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| skipped("the probe deadline came first")))
        .collect()
}

/// Run one child on `items[from..]`; returns the index to go on from.
fn run_child(
    exe: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    items: &[Item],
    from: usize,
    per_lib: Duration,
    deadline: Instant,
    results: &mut [Option<LoadResult>],
) -> usize {
    let mut cmd = Command::new(exe);
    cmd.arg(CHILD_SUBCOMMAND);
    for it in &items[from..] {
        cmd.arg(it.family.as_deref().unwrap_or("-")).arg(&it.path);
    }
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            for r in results.iter_mut().skip(from) {
                *r = Some(skipped(&format!("could not start the load child: {e}")));
            }
            return items.len();
        }
    };
    let (tx, rx) = mpsc::channel::<Line>();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let Some(json) = line.strip_prefix(MARK) else {
                    continue;
                };
                if let Ok(l) = serde_json::from_str::<Line>(json) {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
            }
        });
    }
    // The index (absolute) being loaded and since when.
    let mut current: Option<(usize, Instant)> = None;
    loop {
        let now = Instant::now();
        let limit = match current {
            Some((_, since)) => (since + per_lib).min(deadline),
            None => deadline,
        };
        let wait = limit.saturating_duration_since(now);
        match rx.recv_timeout(wait) {
            Ok(Line::Start { index }) => current = Some((from + index, Instant::now())),
            Ok(Line::Done { index, result }) => {
                if let Some(r) = results.get_mut(from + index) {
                    *r = Some(result);
                }
                current = None;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = wait_timeout::ChildExt::wait_timeout(&mut child, Duration::from_millis(50));
                return match current {
                    Some((i, since)) => {
                        results[i] = Some(LoadResult {
                            status: "timeout".into(),
                            error: Some(format!(
                                "still loading after {:.1} s: killed",
                                since.elapsed().as_secs_f64()
                            )),
                            ..Default::default()
                        });
                        i + 1
                    }
                    None => items.len(),
                };
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed: the child is gone (or closed it); learn how it ended.
                let left = deadline.saturating_duration_since(Instant::now());
                let status = wait_timeout::ChildExt::wait_timeout(
                    &mut child,
                    left.min(Duration::from_secs(1)),
                );
                let Some((i, _)) = current else {
                    if !matches!(status, Ok(Some(_))) {
                        let _ = child.kill();
                    }
                    for r in results.iter_mut().skip(from).filter(|r| r.is_none()) {
                        *r = Some(LoadResult {
                            status: "error".into(),
                            error: Some("the load child ended before loading it".into()),
                            ..Default::default()
                        });
                    }
                    return items.len();
                };
                use std::os::unix::process::ExitStatusExt;
                results[i] = Some(match status {
                    Ok(Some(st)) => match (st.signal(), st.code()) {
                        (Some(sig), _) => LoadResult {
                            status: "crashed".into(),
                            signal: Some(signal_name(sig)),
                            error: Some(format!("killed by {} while loading", signal_name(sig))),
                            ..Default::default()
                        },
                        (None, code) => LoadResult {
                            status: "error".into(),
                            error: Some(format!(
                                "the process exited (status {}) while loading it",
                                code.unwrap_or(-1)
                            )),
                            ..Default::default()
                        },
                    },
                    _ => {
                        let _ = child.kill();
                        LoadResult {
                            status: "error".into(),
                            error: Some("closed its output while loading it".into()),
                            ..Default::default()
                        }
                    }
                });
                return i + 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_encodings() {
        assert_eq!(cuda_version(12040), "12.4");
        assert_eq!(cuda_version(11010), "11.1");
        assert_eq!(cudnn_version(8904), "8.9.4");
        assert_eq!(cudnn_version(90100), "9.1.0");
        assert_eq!(cudnn_version(7605), "7.6.5");
        assert_eq!(nccl_version(22105), "2.21.5");
        assert_eq!(nccl_version(2408), "2.4.8");
        assert_eq!(cublaslt_version(120405), "12.4.5");
        assert_eq!(cupti_release(22).as_deref(), Some("12.4"));
        assert_eq!(cupti_release(99), None);
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(
            per_library_limit(Duration::from_secs(5)),
            Duration::from_secs(2)
        );
        assert_eq!(
            per_library_limit(Duration::from_millis(500)),
            Duration::from_secs(1)
        );
    }
}
