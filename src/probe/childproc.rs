//! The regime every child envdoctor process runs under (the load probe's `__load-child`, the
//! gpu probe's `__nvml-child`): code we do not trust (a library's constructors, a driver) runs
//! there, so the parent must survive whatever it does.
//!
//! - **Own process group**: the child is the leader of a new group; [`Spawned::kill_group`]
//!   sends `SIGKILL` to the whole group, so a library that forks while loading leaves no
//!   orphan behind once the parent is done with the child.
//! - **A reaper for what leaves the group**: the child runs its work in a forked worker under
//!   itself made a child subreaper ([`crate::probe::reaper`]); a process that called `setsid()`
//!   is re-parented to the reaper, not to init, and killed by it. [`Spawned::kill_group`] asks
//!   the reaper first (`SIGTERM`), then kills the group.
//! - **Results on a dedicated fd**: the child writes its protocol lines to fd [`RESULT_FD`]
//!   (named in [`RESULT_FD_VAR`]), not stdout, so a library printing to stdout can neither forge
//!   another library's result nor glue its text onto a result line. The child marks the fd
//!   close-on-exec ([`result_writer`]) so programs a library runs do not inherit it.
//! - **Bounded reading**: [`line_reader`] delivers complete lines, each at most a cap long
//!   (longer lines are cut and flagged), and stops after a total cap, so a child cannot make
//!   the parent buffer without limit; [`tail_reader`] keeps the last bytes of a stream.
//! - **Exit without end-of-file**: a forked grandchild may hold the pipes open after the child
//!   exits, so callers watch the child's exit ([`Spawned::exited`]) rather than wait for EOF.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The fd a child writes its results to.
pub const RESULT_FD: i32 = 3;

/// The variable that tells a child its result fd is open.
pub const RESULT_FD_VAR: &str = "ENVDOCTOR_RESULT_FD";

/// Longest result line kept (longer ones are cut and flagged).
pub const MAX_LINE: usize = 1024 * 1024;

/// Most result bytes read from one child.
pub const MAX_TOTAL: usize = 16 * 1024 * 1024;

/// How long [`Spawned::kill_group`] lets the reaper clean up before killing the group.
pub const REAPER_GRACE: Duration = Duration::from_millis(1500);

/// A child started by [`spawn`].
pub struct Spawned {
    /// The process (leader of its own process group).
    pub child: Child,
    /// The read end of its result pipe.
    pub results: Option<File>,
    reaped: Option<ExitStatus>,
}

/// Start `cmd` in its own process group, with a result pipe on fd [`RESULT_FD`].
pub fn spawn(cmd: &mut Command) -> io::Result<Spawned> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two descriptors, owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let w = write.as_raw_fd();
    cmd.env(RESULT_FD_VAR, RESULT_FD.to_string());
    cmd.process_group(0);
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if w == RESULT_FD {
                // Already in place: just let it survive exec.
                if libc::fcntl(w, libc::F_SETFD, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(w, RESULT_FD) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    // The parent's copy of the write end must close, or the reader never sees end-of-file.
    drop(write);
    Ok(Spawned {
        child,
        results: Some(File::from(read)),
        reaped: None,
    })
}

impl Spawned {
    /// `Some(status)` once the child has exited (reaped here, at most once).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.reaped.is_none() {
            if let Ok(Some(st)) = self.child.try_wait() {
                self.reaped = Some(st);
            }
        }
        self.reaped
    }

    /// Wait up to `limit` for the child to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + limit;
        loop {
            if let Some(st) = self.exited() {
                return Some(st);
            }
            let now = Instant::now();
            if now >= until {
                return None;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(5)));
        }
    }

    /// Ask the child (a reaper, see [`crate::probe::reaper`]) to kill its worker and every
    /// descendant, `setsid()` ones included, and wait for it up to [`REAPER_GRACE`]; then
    /// `SIGKILL` the child's whole process group (the child, and whatever it forked that stayed
    /// in the group), and reap the child if it dies within 50 ms.
    pub fn kill_group(&mut self) {
        let pgid = self.child.id() as libc::pid_t;
        if self.reaped.is_none() && pgid > 0 {
            // SAFETY: kill(2) on our own child, not reaped yet (so its pid is not reused).
            unsafe {
                libc::kill(pgid, libc::SIGTERM);
            }
            self.wait_exit(REAPER_GRACE);
        }
        if pgid > 0 {
            // SAFETY: a plain kill(2) on the group this child leads.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        if self.reaped.is_none() {
            let _ = self.child.kill();
            self.wait_exit(Duration::from_millis(50));
        }
    }
}

impl Drop for Spawned {
    /// No child, and nothing it forked, outlives the probe.
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// One line from [`line_reader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The bytes, without the newline (at most [`MAX_LINE`]).
    pub bytes: Vec<u8>,
    /// It was longer than the cap and was cut.
    pub cut: bool,
}

/// Read `src` on a thread, sending each complete line (capped at `max_line`), until end of
/// file, a read error, `max_total` bytes, or the receiver is dropped. A last line without a
/// newline is not sent (it may have been cut by a kill).
pub fn line_reader(
    mut src: impl Read + Send + 'static,
    max_line: usize,
    max_total: usize,
) -> mpsc::Receiver<Line> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut line = Vec::new();
        let mut cut = false;
        let mut total = 0usize;
        loop {
            let n = match src.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            total += n;
            for chunk in buf[..n].split_inclusive(|b| *b == b'\n') {
                let (body, end) = match chunk.split_last() {
                    Some((b'\n', body)) => (body, true),
                    _ => (chunk, false),
                };
                let room = max_line.saturating_sub(line.len());
                if body.len() > room {
                    cut = true;
                }
                line.extend_from_slice(&body[..body.len().min(room)]);
                if end {
                    let l = Line {
                        bytes: std::mem::take(&mut line),
                        cut,
                    };
                    cut = false;
                    if tx.send(l).is_err() {
                        return;
                    }
                }
            }
            if total >= max_total {
                return;
            }
        }
    });
    rx
}

/// Keep the last `keep` bytes of `src` (read on a thread) in the returned buffer.
pub fn tail_reader(mut src: impl Read + Send + 'static, keep: usize) -> Arc<Mutex<Vec<u8>>> {
    let sink = Arc::new(Mutex::new(Vec::new()));
    let out = Arc::clone(&sink);
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match src.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let Ok(mut s) = sink.lock() else { break };
                    s.extend_from_slice(&buf[..n]);
                    if s.len() > 2 * keep {
                        let drop_n = s.len() - keep;
                        s.drain(..drop_n);
                    }
                }
            }
        }
    });
    out
}

/// In a child: the result fd the parent opened for it (close-on-exec from now on, so programs
/// a library runs do not inherit it); `None` when run by hand (then stdout is used).
pub fn result_writer() -> Option<File> {
    let fd: i32 = std::env::var(RESULT_FD_VAR).ok()?.parse().ok()?;
    // SAFETY: fcntl on an fd number only inspects/sets its flags.
    let ok = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == 0;
    if !ok {
        return None;
    }
    // Libraries loaded later must not find the variable and write to the fd by accident.
    std::env::remove_var(RESULT_FD_VAR);
    // SAFETY: the parent opened this fd for us alone (see `spawn`); we own it from here.
    Some(unsafe { File::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_capped_and_the_unterminated_tail_dropped() {
        let data = b"one\n"
            .to_vec()
            .into_iter()
            .chain(std::iter::repeat_n(b'x', 100))
            .chain(b"\nthree".iter().copied())
            .collect::<Vec<u8>>();
        let rx = line_reader(std::io::Cursor::new(data), 10, 1 << 20);
        let got: Vec<Line> = rx.iter().collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].bytes, b"one");
        assert!(!got[0].cut);
        assert_eq!(got[1].bytes.len(), 10);
        assert!(got[1].cut);
    }

    #[test]
    fn the_total_cap_stops_reading() {
        let data = vec![b'a'; 1 << 20];
        let rx = line_reader(std::io::Cursor::new(data), 10, 4096);
        assert_eq!(rx.iter().count(), 0);
    }
}
