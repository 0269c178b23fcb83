//! The child side of [`crate::probe::childproc`]'s regime for what escapes a process group: a
//! child envdoctor process (`__load-child`, `__nvml-child`) first makes itself a **child
//! subreaper** (`PR_SET_CHILD_SUBREAPER`), then forks a **worker** that does the untrusted work
//! (loading libraries, initialising NVML). The reaper loads nothing; it waits for the worker,
//! and when the worker is done, or the parent asks (`SIGTERM`, also sent by the kernel when the
//! parent dies: `PR_SET_PDEATHSIG`), it kills every process left below it and exits with the
//! worker's status (re-raising the worker's death signal, so the parent sees a crash as before).
//!
//! Why a subreaper: a library whose constructor forks a child that calls `setsid()` moves that
//! child out of the process group, so the parent's `killpg` cannot reach it, and when its own
//! parent exits the kernel would hand it to init: an orphan. Under a subreaper every such
//! process is re-parented to the reaper instead of init, so the reaper can find it (its
//! children in `/proc`) and kill it, generation after generation, until it has no child left.
//! The other mechanisms do not cover it: `PR_SET_PDEATHSIG` is cleared by `fork`, so it would
//! have to be set by the library's own child; a process group or session is exactly what
//! `setsid()` leaves; and a subreaper in the process that ran the library would be killed with
//! it at the deadline (its orphans then go to init). A PID namespace or cgroup would do it but
//! needs privileges envdoctor does not have.
//!
//! Where the kernel refuses (no subreaper support, fork fails), the work runs in this process
//! as before: the process group still covers every child that does not call `setsid()`.

use std::time::{Duration, Instant};

/// How long the reaper spends killing what is left (a process in uninterruptible sleep may not
/// die at once); the parent's `SIGKILL` to the group follows anyway.
const KILL_FOR: Duration = Duration::from_millis(1000);

/// Run `work` in a worker forked under this process made a subreaper, and return its exit
/// code (from the reaper, after every descendant is gone; a worker killed by a signal makes the
/// reaper die of the same signal). In the worker, returns `work`'s own code.
pub fn run(work: impl FnOnce() -> i32) -> i32 {
    // SAFETY: prctl with integer arguments only changes this process's attributes.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return work();
    }
    // An inherited SIG_IGN would make the kernel reap children itself, and the waits fail.
    // SAFETY: resets one disposition to the default.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    let signals = signal_set();
    let mut old = empty_set();
    // SAFETY: valid sigset pointers; blocking lets the reaper wait for them with sigtimedwait.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &signals, &mut old) };
    // SAFETY: the child process is envdoctor's own, still single-threaded here (nothing but
    // argument parsing ran), so the forked worker may go on running Rust code.
    let worker = unsafe { libc::fork() };
    if worker < 0 {
        // SAFETY: restores the mask saved above.
        unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        return work();
    }
    if worker == 0 {
        // SAFETY: restores the mask; the worker dies with the reaper (the reaper is our own
        // code and only dies when killed by the parent, whose group kill reaches both anyway).
        unsafe {
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        }
        return work();
    }
    // SAFETY: plain prctl/close on this process. The reaper does not write results: its copy
    // of the result pipe is closed so the parent sees end-of-file when the worker's closes.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        if std::env::var_os(crate::probe::childproc::RESULT_FD_VAR).is_some() {
            libc::close(crate::probe::childproc::RESULT_FD);
        }
    }
    let mut status = wait_worker(worker, &signals);
    kill_descendants(worker, &mut status, &signals);
    finish(status)
}

fn empty_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        s
    }
}

/// SIGCHLD (a child ended) and the signals that ask the reaper to stop.
fn signal_set() -> libc::sigset_t {
    let mut s = empty_set();
    for sig in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: adds a valid signal number to an initialised set.
        unsafe { libc::sigaddset(&mut s, sig) };
    }
    s
}

/// Wait up to `limit` for one of `set` (consumed); the signal number, or 0.
fn wait_signal(set: &libc::sigset_t, limit: Duration) -> i32 {
    let ts = libc::timespec {
        tv_sec: limit.as_secs() as libc::time_t,
        tv_nsec: limit.subsec_nanos() as libc::c_long,
    };
    // SAFETY: valid set and timeout; no siginfo wanted.
    let sig = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    sig.max(0)
}

/// Reap every child that has ended (the worker's status kept); false once there is no child
/// left at all.
fn reap(worker: libc::pid_t, status: &mut Option<i32>) -> bool {
    loop {
        let mut st = 0;
        // SAFETY: waitpid on any child of the reaper: all of them are the worker or processes
        // re-parented to it, none owned by other code.
        let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if pid == worker {
            *status = Some(st);
        }
        if pid > 0 {
            continue;
        }
        return !(pid < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD));
    }
}

/// Until the worker ends or the parent asks the reaper to stop: the worker's wait status.
fn wait_worker(worker: libc::pid_t, signals: &libc::sigset_t) -> Option<i32> {
    let mut status = None;
    loop {
        reap(worker, &mut status);
        if status.is_some() {
            return status;
        }
        match wait_signal(signals, Duration::from_millis(200)) {
            libc::SIGTERM | libc::SIGINT | libc::SIGHUP => return None,
            _ => {}
        }
    }
}

/// `SIGKILL` every child of the reaper (the worker, and whatever was re-parented to it), again
/// and again as their own children are re-parented in turn, until none is left or
/// [`KILL_FOR`] has passed.
fn kill_descendants(worker: libc::pid_t, status: &mut Option<i32>, signals: &libc::sigset_t) {
    let until = Instant::now() + KILL_FOR;
    loop {
        for pid in children() {
            // SAFETY: kill(2) on a child of this process: it cannot be reaped (and its pid
            // reused) by anyone but this process, which has not reaped it yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if !reap(worker, status) || Instant::now() >= until {
            return;
        }
        wait_signal(signals, Duration::from_millis(10));
    }
}

/// The reaper's children: `/proc/self/task/*/children`, or a scan of every process's parent
/// where the kernel has no such file.
fn children() -> Vec<libc::pid_t> {
    let me = std::process::id() as libc::pid_t;
    let mut out = Vec::new();
    let mut listed = false;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.filter_map(Result::ok) {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                listed = true;
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<libc::pid_t>().ok()),
                );
            }
        }
    }
    if listed {
        return out;
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.filter_map(Result::ok) {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(p.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses, the last `)` ends it.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|s| s.parse::<libc::pid_t>().ok());
        if ppid == Some(me) {
            out.push(pid);
        }
    }
    out
}

/// The reaper's exit code for the worker's wait status; a death by signal is re-raised.
fn finish(status: Option<i32>) -> i32 {
    let Some(st) = status else {
        // Stopped by the parent before the worker could be reaped: the parent decides.
        return 128 + libc::SIGKILL;
    };
    if libc::WIFEXITED(st) {
        return libc::WEXITSTATUS(st);
    }
    if libc::WIFSIGNALED(st) {
        let sig = libc::WTERMSIG(st);
        // SAFETY: no core of the reaper's own (the worker's, if any, is written already);
        // the default action restored and the signal unblocked, then raised at this process.
        unsafe {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(sig, libc::SIG_DFL);
            let mut one = empty_set();
            libc::sigaddset(&mut one, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
            libc::raise(sig);
        }
        return 128 + sig;
    }
    1
}
