//! The load probe: `dlopen` each resolved library in a child envdoctor process
//! (`envdoctor __load-child`), so that a library that crashes in its constructor, hangs, or
//! lacks a symbol becomes a [`LoadResult`] instead of taking envdoctor down.
//!
//! - **One child per environment** (per interpreter): glibc reuses an already-loaded object
//!   with the same SONAME, so two environments' `libcudnn.so.8` must never meet in one process.
//!   Within one child, libraries are loaded in the order given, `RTLD_NOW | RTLD_LOCAL` (what
//!   TensorFlow's `dso_loader` and CPython's extension import use), so undefined symbols fail
//!   at load.
//! - **The child regime** ([`crate::probe::childproc`]): its own process group, killed as a
//!   group when it is done or late (a library that forks leaves no orphan and does not hold the
//!   probe to its deadline); results on a dedicated fd, read by a bounded line reader; whatever
//!   the libraries print on stdout/stderr goes to `/dev/null`, so it can neither forge a result
//!   nor glue itself onto one.
//! - The child writes a line before each library (`start`), one after `dlopen` succeeded and
//!   before the version call (`loaded`), one with the result (`done`) and one at the end
//!   (`bye`), each prefixed by [`MARK`]. When the child dies by a signal (or hangs past its
//!   limit, see [`per_library_limit`]) **while loading**, that library is `crashed` (`timeout`);
//!   when it dies or hangs **in the version call**, the library is `loaded` with the version
//!   unknown and `version_error` saying why: a fact about envdoctor's question, never a finding
//!   about the library. A fresh child goes on with the rest; whatever is left at the probe's
//!   deadline is `skipped`.
//! - **Static versions first** ([`static_version`]): a library listed in the `RECORD` of an
//!   `nvidia-*` wheel takes that wheel's version and is only loaded, never called into.
//! - Version entry points otherwise, by family ([`version_entry_point`]), only those safe
//!   without a driver: `cudaRuntimeGetVersion` and `cuDriverGetVersion` (12040 → 12.4),
//!   `cudnnGetVersion` (8904 → 8.9.4 up to cuDNN 8, 90100 → 9.1.0 from 9.0), `ncclGetVersion`
//!   (2.9+: 22105 → 2.21.5; before: 2408 → 2.4.8), `cublasLtGetVersion` (120405 → 12.4.5),
//!   `nvrtcVersion` / `nvJitLinkVersion` (major, minor), and `<lib>GetProperty` (major, minor,
//!   patch) for cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE. `cuptiGetVersion` is never called
//!   (it crashes without a driver); [`cupti_release`] still maps its API numbers.

use crate::snapshot::libs::LoadResult;
use serde::{Deserialize, Serialize};
use std::io::Write;
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
    /// About to `dlopen` item `index`.
    Start { index: usize },
    /// `dlopen` succeeded; the version entry point `call` is asked next. A crash or hang from
    /// here on is the version call's, not the load's.
    Loaded { index: usize, call: String },
    /// Item `index` is finished.
    Done { index: usize, result: LoadResult },
    /// Every item is finished.
    Bye,
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
    // The parent's result fd; stdout when run by hand.
    let mut sink: Box<dyn Write> = match crate::probe::childproc::result_writer() {
        Some(f) => Box::new(f),
        None => Box::new(std::io::stdout()),
    };
    let mut emit = |l: &Line| -> bool {
        let Ok(json) = serde_json::to_string(l) else {
            return false;
        };
        // One write per line: a line never interleaves with another writer's bytes.
        let line = format!("{MARK}{json}\n");
        sink.write_all(line.as_bytes())
            .and_then(|_| sink.flush())
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
        let result = load_one(fam, Path::new(path), &mut |call| {
            emit(&Line::Loaded {
                index,
                call: call.to_string(),
            })
        });
        if !emit(&Line::Done { index, result }) {
            return 1;
        }
    }
    if !emit(&Line::Bye) {
        return 1;
    }
    0
}

/// The version entry point of a family, when one is asked at all. CUPTI's `cuptiGetVersion`
/// is never called: without an NVIDIA driver it crashes (and its answer is an API number, not
/// a release); its version comes from the owning wheel instead ([`static_version`]).
pub fn version_entry_point(family: &str) -> Option<&'static str> {
    Some(match family {
        "cudart" => "cudaRuntimeGetVersion",
        "cuda" => "cuDriverGetVersion",
        "cudnn" => "cudnnGetVersion",
        "nccl" => "ncclGetVersion",
        "cublasLt" => "cublasLtGetVersion",
        "nvrtc" => "nvrtcVersion",
        "nvJitLink" => "nvJitLinkVersion",
        "cublas" => "cublasGetProperty",
        "cufft" => "cufftGetProperty",
        "curand" => "curandGetProperty",
        "cusolver" => "cusolverGetProperty",
        "cusparse" => "cusparseGetProperty",
        _ => return None,
    })
}

fn load_one(
    family: Option<&str>,
    path: &Path,
    before_call: &mut dyn FnMut(&str) -> bool,
) -> LoadResult {
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
        if let Some(call) = version_entry_point(f) {
            if before_call(call) {
                // SAFETY: each symbol is called with the C signature NVIDIA documents for it.
                unsafe { ask_version(&lib, f, &mut r) };
            }
        }
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
            r.version_error = Some(format!("version unknown: {name} returned error {rc}"));
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
            r.version_error = Some(format!("version unknown: {name} returned error {rc}"));
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
                r.version_error = Some(format!("version unknown: {name}({t}) returned error {rc}"));
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
    if r.version.is_some() {
        r.version_source = Some("call".into());
    }
}

/// How a family's wheel version maps to `LoadResult::version`: CUDA-release families keep
/// `major.minor` (like their version calls), the others `major.minor.patch`.
fn wheel_version_for(family: &str, version: &str) -> Option<String> {
    let parts: Vec<&str> = version.split('.').collect();
    if parts.len() < 2
        || !parts
            .iter()
            .take(2)
            .all(|p| p.chars().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    let keep = match family {
        "cudart" | "cupti" | "nvrtc" | "nvJitLink" => 2,
        _ => 3.min(parts.len()),
    };
    Some(parts[..keep].join("."))
}

/// Whether a wheel's `RECORD` (CSV: `path,hash,size`) lists `rel` (relative to site-packages).
/// A path with a comma is quoted in RECORD (`"a,b.so",sha256=…,1`).
pub fn record_lists(record: &str, rel: &str) -> bool {
    record.lines().any(|l| {
        let first = match l.strip_prefix('"') {
            Some(q) => q.split_once("\",").map_or(q, |(p, _)| p),
            None => l.split(',').next().unwrap_or(""),
        };
        first == rel
    })
}

/// Largest RECORD read when looking for a library's owning wheel.
const MAX_RECORD: u64 = 8 * 1024 * 1024;

/// The version of `path` without calling into it: the `nvidia-*` wheel whose RECORD lists the
/// file (its site-packages directory is an ancestor of the file). Returns (version, source).
pub fn static_version(path: &Path, family: &str) -> Option<(String, String)> {
    use std::io::Read;
    if family == "cuda" {
        // libcuda is the driver: no wheel owns it, its file name is the driver's version.
        return None;
    }
    for dir in path.ancestors().skip(1).take(6) {
        let Ok(rel) = path.strip_prefix(dir) else {
            continue;
        };
        let rel = rel.to_string_lossy();
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in rd.filter_map(Result::ok) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Some(stem) = name.strip_suffix(".dist-info") else {
                continue;
            };
            if !stem.to_ascii_lowercase().starts_with("nvidia") {
                continue;
            }
            let Ok(f) = std::fs::File::open(e.path().join("RECORD")) else {
                continue;
            };
            if !f.metadata().is_ok_and(|m| m.is_file()) {
                continue;
            }
            let mut text = String::new();
            if f.take(MAX_RECORD).read_to_string(&mut text).is_err() {
                continue;
            }
            if !record_lists(&text, &rel) {
                continue;
            }
            let (dist, version) = stem.rsplit_once('-')?;
            let v = wheel_version_for(family, version)?;
            return Some((v, format!("dist-info {dist} {version}")));
        }
    }
    None
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
    // Static versions first: a library whose version is known from its wheel is only loaded,
    // never called into.
    let statics: Vec<Option<(String, String)>> = items
        .iter()
        .map(|it| {
            it.family
                .as_deref()
                .and_then(|f| static_version(&it.path, f))
        })
        .collect();
    let to_load: Vec<Item> = items
        .iter()
        .zip(&statics)
        .map(|(it, st)| Item {
            family: if st.is_some() {
                None
            } else {
                it.family.clone()
            },
            path: it.path.clone(),
        })
        .collect();
    let mut next = 0;
    while next < to_load.len() {
        if Instant::now() >= deadline {
            break;
        }
        next = run_child(exe, env, &to_load, next, per_lib, deadline, &mut results);
    }
    results
        .into_iter()
        .zip(statics)
        .zip(items)
        .map(|((r, st), it)| {
            let mut r = r.unwrap_or_else(|| skipped("the probe deadline came first"));
            if r.status == "loaded" {
                if let Some((v, source)) = st {
                    r.version = Some(v);
                    r.version_source = Some(source);
                } else if it.family.as_deref() == Some("cupti") {
                    r.version_error = Some(
                        "version unknown: cuptiGetVersion is not called (it crashes without an \
                         NVIDIA driver) and no nvidia-* wheel lists this file"
                            .into(),
                    );
                }
            }
            r
        })
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
    use crate::probe::childproc;
    let mut child = match spawn_child(exe, env, &items[from..]) {
        Ok(c) => c,
        Err(e) => {
            for r in results.iter_mut().skip(from) {
                *r = Some(skipped(&format!("could not start the load child: {e}")));
            }
            return items.len();
        }
    };
    let Some(out) = child.results.take() else {
        return items.len();
    };
    let lines = childproc::line_reader(out, childproc::MAX_LINE, childproc::MAX_TOTAL);
    let mut work = Work {
        from,
        current: None,
        calling: None,
    };
    // When the child was seen gone: lines it wrote before are still drained for a moment.
    let mut gone_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let limit = match work.current {
            Some((_, since)) => (since + per_lib).min(deadline),
            None => deadline,
        };
        // Poll often enough to notice an exit even when a forked grandchild keeps the pipe open.
        let wait = limit
            .saturating_duration_since(now)
            .min(Duration::from_millis(20));
        match lines.recv_timeout(wait) {
            Ok(line) => {
                let Some(l) = parse_line(&line) else { continue };
                if work.record(l, results) {
                    // Done: whatever it forked goes with it.
                    child.kill_group();
                    return items.len();
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if gone_at.is_none() {
                    gone_at = Some(Instant::now());
                }
            }
        }
        let status = child.exited();
        if status.is_some() && gone_at.is_none() {
            gone_at = Some(Instant::now());
        }
        // Gone for 100 ms (its last lines are read by then) or the pipe closed: conclude.
        let concluded = match gone_at {
            Some(t) => t.elapsed() >= Duration::from_millis(100) || status.is_none(),
            None => false,
        };
        if concluded {
            let status = status.or_else(|| child.wait_exit(Duration::from_millis(200)));
            child.kill_group();
            return ended(status, work.current, work.calling, from, results);
        }
        if Instant::now() >= limit {
            child.kill_group();
            return work.killed(results).unwrap_or(items.len());
        }
    }
}

/// Start a load child on `items`, its output going nowhere but the result fd.
fn spawn_child(
    exe: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    items: &[Item],
) -> std::io::Result<crate::probe::childproc::Spawned> {
    let mut cmd = Command::new(exe);
    cmd.arg(CHILD_SUBCOMMAND);
    for it in items {
        cmd.arg(it.family.as_deref().unwrap_or("-")).arg(&it.path);
    }
    // Whatever the libraries print goes nowhere: results travel on the result fd only.
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    crate::probe::childproc::spawn(&mut cmd)
}

/// Where one load child is: the index (absolute) being worked on, since when, and the version
/// call under way.
struct Work {
    from: usize,
    current: Option<(usize, Instant)>,
    calling: Option<String>,
}

impl Work {
    /// Take one line of the child into account; true when it said `Bye`.
    fn record(&mut self, l: Line, results: &mut [Option<LoadResult>]) -> bool {
        match l {
            Line::Start { index } => {
                self.current = Some((self.from + index, Instant::now()));
                self.calling = None;
            }
            Line::Loaded { call, .. } => self.calling = Some(call),
            Line::Done { index, result } => {
                if let Some(r) = results.get_mut(self.from + index) {
                    *r = Some(result);
                }
                self.current = None;
                self.calling = None;
            }
            Line::Bye => return true,
        }
        false
    }

    /// The child was killed at the limit: the library under way timed out (or its version call
    /// did not return); the index to go on from, `None` when nothing was under way.
    fn killed(self, results: &mut [Option<LoadResult>]) -> Option<usize> {
        let (i, since) = self.current?;
        let secs = since.elapsed().as_secs_f64();
        results[i] = Some(match self.calling {
            Some(call) => version_failed(
                &call,
                format!("{call} did not return within {secs:.1} s (killed)"),
            ),
            None => LoadResult {
                status: "timeout".into(),
                error: Some(format!("still loading after {secs:.1} s: killed")),
                ..Default::default()
            },
        });
        Some(i + 1)
    }
}

fn parse_line(line: &crate::probe::childproc::Line) -> Option<Line> {
    if line.cut {
        return None;
    }
    let text = std::str::from_utf8(&line.bytes).ok()?;
    serde_json::from_str::<Line>(text.strip_prefix(MARK)?).ok()
}

/// A library that loaded, whose version call failed: the load is fine, the version unknown.
fn version_failed(call: &str, why: String) -> LoadResult {
    LoadResult {
        status: "loaded".into(),
        version_call: Some(call.to_string()),
        version_error: Some(format!("version unknown: {why}")),
        ..Default::default()
    }
}

/// The result of the item under way when the child ended; returns the index to go on from.
fn ended(
    status: Option<std::process::ExitStatus>,
    current: Option<(usize, Instant)>,
    calling: Option<String>,
    from: usize,
    results: &mut [Option<LoadResult>],
) -> usize {
    let Some((i, _)) = current else {
        for r in results.iter_mut().skip(from).filter(|r| r.is_none()) {
            *r = Some(LoadResult {
                status: "error".into(),
                error: Some("the load child ended before loading it".into()),
                ..Default::default()
            });
        }
        return results.len();
    };
    use std::os::unix::process::ExitStatusExt;
    let how = match status {
        Some(st) => match (st.signal(), st.code()) {
            (Some(sig), _) => Ok(signal_name(sig)),
            (None, code) => Err(format!(
                "the process exited (status {})",
                code.unwrap_or(-1)
            )),
        },
        None => Err("closed its result pipe".to_string()),
    };
    results[i] = Some(match (calling, how) {
        (Some(call), Ok(sig)) => version_failed(&call, format!("{call} crashed ({sig})")),
        (Some(call), Err(e)) => version_failed(&call, format!("{e} in {call}")),
        (None, Ok(sig)) => LoadResult {
            status: "crashed".into(),
            signal: Some(sig.clone()),
            error: Some(format!("killed by {sig} while loading")),
            ..Default::default()
        },
        (None, Err(e)) => LoadResult {
            status: "error".into(),
            error: Some(format!("{e} while loading it")),
            ..Default::default()
        },
    });
    i + 1
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
