//! `run`'s supervisor: starts the command and stands between it and whoever started envdoctor,
//! the way `tini`, `dumb-init` and `torchrun` do, so that wrapping a job changes nothing it
//! can see.
//!
//! - The child leads its own process group (its own session when envdoctor's stdin or stdout
//!   is a terminal, see [`supervise`]; a job's children that call `setsid` leave it, as
//!   they leave a shell's job, and get no forwarded signal). SIGINT, SIGTERM, SIGHUP,
//!   SIGQUIT, SIGUSR1 and SIGUSR2 sent to envdoctor (Ctrl-C, `docker stop`, Kubernetes,
//!   systemd, a CI cancel, Slurm's `--signal`) are forwarded to that group, so a training job's
//!   own handler saves its checkpoint while envdoctor keeps reading its output.
//! - envdoctor waits for the child, not for end-of-file on its output: a background process
//!   (`tensorboard &`) that inherited the pipes does not hold it. Output still buffered is
//!   drained for a moment afterwards ([`DRAIN_IDLE`], at most [`DRAIN_MAX`]).
//! - When envdoctor's stdout is a terminal the child gets a pseudo-terminal of the same size
//!   (its `isatty()` is true, so Python line-buffers and progress bars draw as without `run`);
//!   otherwise pipes.
//! - A write to envdoctor's stdout or stderr that fails (EPIPE: `run -- yes | head -1`) ends
//!   that relay and closes the child's end, so the child sees the broken pipe too.
//! - The caller re-raises a child's death by signal ([`reraise`]), so a parent that checks
//!   `WIFSIGNALED` (Python's `subprocess`, Slurm) sees SIGSEGV, not status 139.
//!
//! The last [`RUN_CAPTURE`] bytes of output (complete lines) are kept for the diagnosis.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How much of a command's output `run` keeps for the diagnosis (the latest bytes).
pub const RUN_CAPTURE: usize = 32 << 20;

/// After the child exits, output is drained until nothing arrives for this long…
pub const DRAIN_IDLE: Duration = Duration::from_millis(200);
/// …or this long has passed, whichever comes first.
pub const DRAIN_MAX: Duration = Duration::from_secs(2);

/// The signals forwarded to the child's process group.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// The child's process group while it runs (0: none yet, or already exited).
static CHILD_PGID: AtomicI32 = AtomicI32::new(0);
/// A signal that arrived before the child existed, to forward once it does.
static PENDING: AtomicI32 = AtomicI32::new(0);
/// The pseudo-terminal's master while it exists (-1: none), for SIGWINCH.
static PTY_MASTER: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe calls here (kill, ioctl); errno is restored.
    let saved = unsafe { *libc::__errno_location() };
    if sig == libc::SIGWINCH {
        copy_winsize(PTY_MASTER.load(Ordering::SeqCst));
    } else {
        let pg = CHILD_PGID.load(Ordering::SeqCst);
        if pg > 0 {
            unsafe { libc::kill(-pg, sig) };
        } else {
            PENDING.store(sig, Ordering::SeqCst);
        }
    }
    unsafe { *libc::__errno_location() = saved };
}

fn set_handler(sig: libc::c_int, handler: libc::sighandler_t) {
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigfillset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// Give the pseudo-terminal `master` the size of envdoctor's terminal.
fn copy_winsize(master: RawFd) {
    if master < 0 {
        return;
    }
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) == 0 {
            libc::ioctl(master, libc::TIOCSWINSZ, &ws);
        }
    }
}

/// The latest lines a command printed, complete lines only, at most [`RUN_CAPTURE`] bytes.
#[derive(Default)]
struct Tail {
    buf: Vec<u8>,
    partial: Vec<u8>,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.partial.extend_from_slice(data);
        if let Some(last) = memchr::memrchr(b'\n', &self.partial) {
            let line: Vec<u8> = self.partial.drain(..=last).collect();
            self.push_line(&line);
        }
        if self.partial.len() > super::reader::MAX_LINE * 4 {
            self.partial.truncate(super::reader::MAX_LINE);
        }
    }

    fn push_line(&mut self, line: &[u8]) {
        self.buf.extend_from_slice(line);
        if self.buf.len() > RUN_CAPTURE {
            let excess = self.buf.len() - RUN_CAPTURE / 2;
            let cut = memchr::memchr(b'\n', &self.buf[excess..]).map_or(excess, |i| excess + i + 1);
            self.buf.drain(..cut);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if !self.partial.is_empty() {
            let mut last = std::mem::take(&mut self.partial);
            last.push(b'\n');
            self.push_line(&last);
        }
        self.buf
    }
}

/// What became of the command.
#[derive(Debug)]
pub struct Outcome {
    /// How it ended.
    pub status: ExitStatus,
    /// Its latest output (stdout and stderr as they arrived).
    pub captured: Vec<u8>,
}

impl Outcome {
    /// The shell's view of the status: the exit code, or 128 + the signal.
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| 128 + self.status.signal().unwrap_or(0))
    }
}

/// When the child exited (None while it runs), shared with the relays.
#[derive(Default)]
struct Exited {
    at: Mutex<Option<Instant>>,
    flag: AtomicBool,
}

impl Exited {
    fn set(&self) {
        if let Ok(mut a) = self.at.lock() {
            *a = Some(Instant::now());
        }
        self.flag.store(true, Ordering::SeqCst);
    }
    fn since(&self) -> Option<Duration> {
        if !self.flag.load(Ordering::SeqCst) {
            return None;
        }
        self.at.lock().ok().and_then(|a| a.map(|t| t.elapsed()))
    }
}

/// Where a relay writes.
#[derive(Clone, Copy)]
enum Sink {
    Stdout,
    Stderr,
}

impl Sink {
    fn write(self, data: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout => {
                let mut o = io::stdout().lock();
                o.write_all(data).and_then(|_| o.flush())
            }
            Sink::Stderr => {
                let mut e = io::stderr().lock();
                e.write_all(data).and_then(|_| e.flush())
            }
        }
    }
}

/// Copy `fd` to `sink` until end-of-file, a failed write, or the drain after the child's exit
/// is over; `fd` is closed on return.
fn relay(fd: OwnedFd, sink: Sink, tail: Arc<Mutex<Tail>>, exited: Arc<Exited>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let since = exited.since();
        if since.is_some_and(|s| s >= DRAIN_MAX) {
            return;
        }
        let wait = if since.is_some() {
            DRAIN_IDLE
        } else {
            Duration::from_millis(100)
        };
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let r = unsafe { libc::poll(&mut p, 1, wait.as_millis() as libc::c_int) };
        if r < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if r == 0 {
            if since.is_some() {
                return; // idle after the exit: what is left belongs to background processes
            }
            continue;
        }
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if matches!(
                e.kind(),
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
            ) {
                continue;
            }
            return; // EIO: the pseudo-terminal's last slave closed
        }
        if n == 0 {
            return;
        }
        let data = &buf[..n as usize];
        if let Ok(mut t) = tail.lock() {
            t.push(data);
        }
        if sink.write(data).is_err() {
            return; // closing `fd` hands the broken pipe on to the child
        }
    }
}

/// A pseudo-terminal: (master, slave).
fn open_pty() -> io::Result<(OwnedFd, OwnedFd)> {
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if m < 0 {
            return Err(io::Error::last_os_error());
        }
        let master = OwnedFd::from_raw_fd(m);
        if libc::grantpt(m) != 0 || libc::unlockpt(m) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut name = [0 as libc::c_char; 128];
        if libc::ptsname_r(m, name.as_mut_ptr(), name.len()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let s = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        let slave = OwnedFd::from_raw_fd(s);
        copy_winsize(m);
        Ok((master, slave))
    }
}

fn is_tty(fd: RawFd) -> bool {
    unsafe { libc::isatty(fd) == 1 }
}

/// The child's stdout/stderr and the ends envdoctor reads (with their sinks).
fn child_stdio(cmd: &mut Command) -> io::Result<(bool, Vec<(OwnedFd, Sink)>)> {
    let mut reads = Vec::new();
    let pty = if is_tty(libc::STDOUT_FILENO) {
        open_pty().ok()
    } else {
        None
    };
    let Some((master, slave)) = pty else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        return Ok((false, reads));
    };
    if is_tty(libc::STDERR_FILENO) {
        cmd.stderr(Stdio::from(slave.try_clone()?));
    } else {
        cmd.stderr(Stdio::piped());
    }
    cmd.stdout(Stdio::from(slave));
    PTY_MASTER.store(master.as_raw_fd(), Ordering::SeqCst);
    reads.push((master, Sink::Stdout));
    Ok((true, reads))
}

/// Run `argv` under supervision until it exits; `Err` only when it could not be started.
pub fn supervise(argv: &[String]) -> io::Result<Outcome> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::inherit());
    let (pty, mut reads) = child_stdio(&mut cmd)?;
    let session = pty || reads_our_terminal();
    unsafe {
        cmd.pre_exec(move || {
            // A process group of its own, led by the job, not a session: the job's own
            // `os.setpgrp()` then works as it does when a script starts it (a session leader
            // is refused). On a terminal the job leads a session, so that it can read the
            // terminal without job control stopping it and the pseudo-terminal can be its
            // controlling terminal.
            let r = if session {
                libc::setsid()
            } else {
                libc::setpgid(0, 0)
            };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
            // The pseudo-terminal becomes the new session's controlling terminal.
            if pty && libc::ioctl(libc::STDOUT_FILENO, libc::TIOCSCTTY, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for s in FORWARDED.into_iter().chain([libc::SIGWINCH]) {
        set_handler(s, handler);
    }
    let spawned = cmd.spawn();
    drop(cmd); // closes envdoctor's copy of the pseudo-terminal's slave
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            restore_handlers();
            return Err(e);
        }
    };
    let pid = child.id() as i32;
    CHILD_PGID.store(pid, Ordering::SeqCst);
    let pending = PENDING.swap(0, Ordering::SeqCst);
    if pending != 0 {
        unsafe { libc::kill(-pid, pending) };
    }
    if let Some(o) = child.stdout.take() {
        reads.push((o.into(), Sink::Stdout));
    }
    if let Some(e) = child.stderr.take() {
        reads.push((e.into(), Sink::Stderr));
    }
    let tail = Arc::new(Mutex::new(Tail::default()));
    let exited = Arc::new(Exited::default());
    let relays: Vec<_> = reads
        .into_iter()
        .map(|(fd, sink)| {
            let (t, x) = (tail.clone(), exited.clone());
            std::thread::spawn(move || relay(fd, sink, t, x))
        })
        .collect();
    wait_exited(pid);
    // The child is a zombie now: its pid cannot be reused until it is reaped, so forwarding
    // stops before that.
    CHILD_PGID.store(0, Ordering::SeqCst);
    restore_handlers();
    let status = child.wait()?;
    exited.set();
    for r in relays {
        let _ = r.join();
    }
    PTY_MASTER.store(-1, Ordering::SeqCst);
    let captured = Arc::try_unwrap(tail)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .map(Tail::finish)
        .unwrap_or_default();
    Ok(Outcome { status, captured })
}

/// Whether the job's stdin would be envdoctor's controlling terminal (a read from it by a
/// process group other than the foreground one stops the reader).
fn reads_our_terminal() -> bool {
    is_tty(libc::STDIN_FILENO) && unsafe { libc::tcgetpgrp(libc::STDIN_FILENO) } >= 0
}

/// Block until `pid` has exited, without reaping it.
fn wait_exited(pid: i32) {
    loop {
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

fn restore_handlers() {
    for s in FORWARDED.into_iter().chain([libc::SIGWINCH]) {
        set_handler(s, libc::SIG_DFL);
    }
}

/// End envdoctor by the signal that ended the child (no core file of envdoctor's own), so
/// its parent sees the same death. Returns only where the signal does not terminate.
pub fn reraise(sig: i32) {
    let _ = io::stdout().flush();
    let _ = io::stderr().flush();
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        set_handler(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_complete_lines_and_the_last_partial_one() {
        let mut t = Tail::default();
        t.push(b"a\nb");
        t.push(b"c\nd");
        assert_eq!(t.finish(), b"a\nbc\nd\n");
    }
}
