//! The in-repo fuzz engine (stable toolchain: no libFuzzer, no coverage feedback).
//!
//! Each target is a parser entry point fed bytes. Inputs are seeds (real files: fixtures, real
//! wheels' files, system files) mutated by a havoc of byte-level operations (bit flips,
//! interesting integers, inserted dictionary tokens, deleted/duplicated/repeated chunks,
//! splices with another seed, truncation), or by the target's structure-aware mutator where a
//! checksum or a container would stop a naive one (rebuilt zips, recomputed CRCs). Every input
//! runs under `catch_unwind`; a panic is recorded with its message and the input is saved; an
//! abort (stack overflow) is saved by a signal handler before the process dies; an input that
//! runs past the watchdog limit is saved and the process aborted.
//!
//! Shared by `examples/fuzz.rs` (long campaigns, `bench/fuzz.sh`) and `tests/robust_fuzz.rs`
//! (the bounded smoke run); include with `#[path = "../fuzz/engine.rs"] mod engine;`.
#![allow(dead_code)]

use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// xorshift64*: small, fast, seedable.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// A structure-aware mutator: from a seed to a new input (it may call [`havoc`] on a part).
pub type Mutate = fn(&mut Rng, &[u8], &[Vec<u8>], &[&[u8]]) -> Vec<u8>;

/// One fuzz target.
pub struct Target {
    /// Its name (`metadata`, `torch-zip`, ...).
    pub name: &'static str,
    /// The parser it drives.
    pub parser: &'static str,
    /// Tokens worth inserting (keywords, delimiters of the format).
    pub dict: &'static [&'static [u8]],
    /// Structure-aware mutator, used for most inputs when present.
    pub mutate: Option<Mutate>,
    /// Run one input. A panic is a finding; returning is success whatever the parser said.
    pub run: fn(&mut Scratch, &[u8]),
}

/// Per-run scratch resources (a memfd, a temp machine) so targets need no allocation of their own.
pub struct Scratch {
    /// A temp directory that plays `/` for targets that read through `Root`.
    pub dir: tempfile::TempDir,
    /// An anonymous in-memory file for targets that read a `&File`.
    pub memfd: std::fs::File,
}

impl Scratch {
    pub fn new() -> Scratch {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("envdoctor-fuzz")
            .tempdir_in(base)
            .expect("temp dir for fuzzing");
        let name = CString::new("envdoctor-fuzz").unwrap_or_default();
        // SAFETY: memfd_create with a valid C string; the fd is owned by the File below.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        let memfd = if fd >= 0 {
            use std::os::fd::FromRawFd;
            // SAFETY: a fresh fd we own.
            unsafe { std::fs::File::from_raw_fd(fd) }
        } else {
            tempfile::tempfile_in(dir.path()).expect("temp file for fuzzing")
        };
        Scratch { dir, memfd }
    }

    /// The memfd holding exactly `data`.
    pub fn file(&mut self, data: &[u8]) -> &std::fs::File {
        use std::os::unix::fs::FileExt;
        let _ = self.memfd.set_len(0);
        let _ = self.memfd.write_all_at(data, 0);
        &self.memfd
    }

    /// Write `data` at machine path `rel` (parents made) under the scratch root.
    pub fn put(&self, rel: &str, data: &[u8]) -> PathBuf {
        let p = self.dir.path().join(rel.trim_start_matches('/'));
        if let Some(parent) = p.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(&p, data);
        p
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch::new()
    }
}

const INTERESTING: &[u64] = &[
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0x8000,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x7fff_ffff_ffff_ffff,
    0xffff_ffff_ffff_ffff,
];

/// 1 to 6 stacked byte-level mutations of `data`.
pub fn havoc(rng: &mut Rng, data: &[u8], others: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    let mut d = data.to_vec();
    let rounds = 1 + rng.below(6);
    for _ in 0..rounds {
        let len = d.len();
        match rng.below(12) {
            0 if len > 0 => {
                let i = rng.below(len);
                d[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                d[i] = rng.next() as u8;
            }
            2 if len > 0 => {
                let width = [1usize, 2, 4, 8][rng.below(4)];
                let v = INTERESTING[rng.below(INTERESTING.len())];
                let bytes = if rng.chance(2) {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                };
                let at = rng.below(len);
                for k in 0..width.min(len - at) {
                    d[at + k] = if rng.chance(2) {
                        bytes[k]
                    } else {
                        bytes[8 - width + k]
                    };
                }
            }
            3 if !dict.is_empty() => {
                let tok = dict[rng.below(dict.len())];
                let at = rng.below(len + 1);
                d.splice(at..at, tok.iter().copied());
            }
            4 if len > 1 => {
                let a = rng.below(len);
                let n = 1 + rng.below((len - a).min(64));
                d.drain(a..a + n);
            }
            5 if len > 1 => {
                let a = rng.below(len);
                let n = 1 + rng.below((len - a).min(64));
                let chunk = d[a..a + n].to_vec();
                let at = rng.below(len + 1);
                d.splice(at..at, chunk);
            }
            6 if len > 0 => {
                // Repeat a short chunk many times: nesting, long lines, huge counts.
                let a = rng.below(len);
                let n = 1 + rng.below((len - a).min(4));
                let chunk = d[a..a + n].to_vec();
                let times = [16usize, 256, 4096][rng.below(3)];
                let rep: Vec<u8> = chunk.iter().copied().cycle().take(n * times).collect();
                d.splice(a..a, rep);
            }
            7 if !others.is_empty() => {
                let o = &others[rng.below(others.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(o.len() + 1);
                d.truncate(cut);
                d.extend_from_slice(&o[from..]);
            }
            8 if len > 0 => {
                let keep = rng.below(len);
                d.truncate(keep);
            }
            9 if len > 0 => {
                let i = rng.below(len);
                let delta = (rng.below(35) as i32 - 17) as i8;
                d[i] = d[i].wrapping_add(delta as u8);
            }
            10 if !dict.is_empty() && len > 0 => {
                let tok = dict[rng.below(dict.len())];
                let at = rng.below(len);
                for (k, b) in tok.iter().enumerate() {
                    if at + k < d.len() {
                        d[at + k] = *b;
                    }
                }
            }
            _ => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                d.splice(at..at, bytes);
            }
        }
        if d.len() > 8 * 1024 * 1024 {
            d.truncate(8 * 1024 * 1024);
        }
    }
    d
}

/// The figures of one run.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub target: String,
    pub execs: u64,
    pub panics: u64,
    pub seeds: usize,
    pub elapsed: Duration,
    /// The slowest input: (time, its length).
    pub slowest: (Duration, usize),
    /// One line per distinct panic message, with where the input was saved.
    pub findings: Vec<String>,
}

impl Stats {
    pub fn line(&self) -> String {
        format!(
            "{:<18} execs {:>11}  panics {:>3}  seeds {:>4}  {:>8.0} exec/s  slowest {:>8.2} ms ({} bytes)",
            self.target,
            self.execs,
            self.panics,
            self.seeds,
            self.execs as f64 / self.elapsed.as_secs_f64().max(1e-9),
            self.slowest.0.as_secs_f64() * 1000.0,
            self.slowest.1
        )
    }
}

// The input under test, for the abort handler and the watchdog.
static CURRENT_PTR: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static CURRENT_LEN: AtomicUsize = AtomicUsize::new(0);
static ABORT_PATH: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
static STARTED_MS: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_abort(sig: libc::c_int) {
    // Only async-signal-safe calls: open, write, close, signal, raise.
    let path = ABORT_PATH.load(Ordering::SeqCst);
    let ptr = CURRENT_PTR.load(Ordering::SeqCst);
    let len = CURRENT_LEN.load(Ordering::SeqCst);
    if !path.is_null() && !ptr.is_null() {
        // SAFETY: path is a leaked CString; ptr/len describe the live input buffer.
        unsafe {
            let fd = libc::open(path, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, 0o644);
            if fd >= 0 {
                libc::write(fd, ptr as *const libc::c_void, len);
                libc::close(fd);
            }
        }
    }
    // SAFETY: restore the default action and die by the same signal.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn install_abort_handler(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    if let Ok(c) = CString::new(path.as_os_str().as_bytes()) {
        ABORT_PATH.store(c.into_raw(), Ordering::SeqCst);
    }
    // SAFETY: installing a handler that only makes async-signal-safe calls.
    unsafe {
        libc::signal(libc::SIGABRT, on_abort as *const () as usize);
    }
}

/// Milliseconds since the process's first call (one epoch for every target: a watchdog that
/// outlives its target by one sleep compares times of the same clock).
fn now_ms() -> u64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

/// What to run: a time limit, an exec limit, or both (whichever comes first).
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub time: Option<Duration>,
    pub execs: Option<u64>,
    /// An input running longer than this is saved and the process aborted.
    pub hang: Duration,
}

/// Fuzz `t` from `seeds` within `budget`; crashers go to `crash_dir` (made when needed).
pub fn run(t: &Target, seeds: &[Vec<u8>], budget: Budget, seed: u64, crash_dir: &Path) -> Stats {
    let mut stats = Stats {
        target: t.name.to_string(),
        seeds: seeds.len(),
        ..Default::default()
    };
    let _ = std::fs::create_dir_all(crash_dir);
    install_abort_handler(&crash_dir.join(format!("{}-abort.bin", t.name)));
    // Watchdog: an input stuck past `hang` is saved and the process aborted (no way to stop a
    // parser thread from outside).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        let hang_ms = budget.hang.as_millis() as u64;
        let hang_file = crash_dir.join(format!("{}-hang.bin", t.name));
        let name = t.name;
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(200));
                // Checked after the sleep: the next target's inputs are not this one's.
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let started = STARTED_MS.load(Ordering::SeqCst);
                if started > 0 && now_ms().saturating_sub(started) > hang_ms {
                    let ptr = CURRENT_PTR.load(Ordering::SeqCst);
                    let len = CURRENT_LEN.load(Ordering::SeqCst);
                    if !ptr.is_null() {
                        // SAFETY: the fuzz loop keeps the buffer alive while STARTED_MS is set.
                        let data = unsafe { std::slice::from_raw_parts(ptr, len) };
                        let _ = std::fs::write(&hang_file, data);
                    }
                    eprintln!(
                        "fuzz: {name}: an input ran over {hang_ms} ms: saved to {}",
                        hang_file.display()
                    );
                    std::process::abort();
                }
            }
        });
    }
    // Panics are findings: keep their message, print nothing per input. Only this thread's:
    // the smoke test shares its process with other tests, whose panics keep their message.
    let last_panic: Arc<std::sync::Mutex<String>> = Arc::default();
    let prev_hook: Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send> =
        Arc::from(std::panic::take_hook());
    {
        let last = Arc::clone(&last_panic);
        let prev = Arc::clone(&prev_hook);
        let fuzzing = std::thread::current().id();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().id() != fuzzing {
                return prev(info);
            }
            let loc = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if let Ok(mut l) = last.lock() {
                *l = format!("{msg} at {loc}");
            }
        }));
    }
    let mut rng = Rng::new(seed);
    let mut scratch = Scratch::new();
    let mut seen_msgs = std::collections::BTreeSet::new();
    let empty: Vec<Vec<u8>> = vec![Vec::new()];
    let seeds = if seeds.is_empty() { &empty[..] } else { seeds };
    let mut base: Vec<u8> = Vec::new();
    let start = Instant::now();
    loop {
        if budget.execs.is_some_and(|n| stats.execs >= n) {
            break;
        }
        if stats.execs % 64 == 0 && budget.time.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        // Seeds as they are first; then mutations, sometimes of the previous mutation.
        let input: Vec<u8> = if (stats.execs as usize) < seeds.len() {
            seeds[stats.execs as usize].clone()
        } else {
            let from: &[u8] = if !base.is_empty() && rng.chance(3) {
                &base
            } else {
                &seeds[rng.below(seeds.len())]
            };
            match t.mutate {
                Some(m) if !rng.chance(5) => m(&mut rng, from, seeds, t.dict),
                _ => havoc(&mut rng, from, seeds, t.dict),
            }
        };
        CURRENT_PTR.store(input.as_ptr() as *mut u8, Ordering::SeqCst);
        CURRENT_LEN.store(input.len(), Ordering::SeqCst);
        STARTED_MS.store(now_ms(), Ordering::SeqCst);
        let t0 = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| (t.run)(&mut scratch, &input)));
        let took = t0.elapsed();
        STARTED_MS.store(0, Ordering::SeqCst);
        stats.execs += 1;
        if took > stats.slowest.0 {
            stats.slowest = (took, input.len());
            let _ = std::fs::write(crash_dir.join(format!("{}-slowest.bin", t.name)), &input);
        }
        if r.is_err() {
            stats.panics += 1;
            let msg = last_panic.lock().map(|m| m.clone()).unwrap_or_default();
            if seen_msgs.insert(msg.clone()) {
                let file = crash_dir.join(format!("{}-panic-{}.bin", t.name, seen_msgs.len()));
                let _ = std::fs::write(&file, &input);
                stats
                    .findings
                    .push(format!("{msg} (input saved to {})", file.display()));
            }
        }
        if input.len() <= 1 << 20 {
            base = input;
        }
    }
    CURRENT_PTR.store(std::ptr::null_mut(), Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    std::panic::set_hook(Box::new(move |info| prev_hook(info)));
    stats.elapsed = start.elapsed();
    stats
}
