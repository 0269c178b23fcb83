//! `envdoctor run` as a faithful supervisor (issue 30, defects 1-3), with real Python children:
//! signal handlers that save a file, buffered prints, background processes, a broken pipe, a
//! pseudo-terminal made here, and a child that dies of SIGSEGV.

use crate::common::cli;
use crate::common::procs::{alive, survivors};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// `envdoctor run --no-load --root EMPTY -- ARGS` (a quick diagnosis on failure).
fn run(root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(cli::bin());
    c.env("NO_COLOR", "1")
        .args(["run", "--no-load", "--root"])
        .arg(root)
        .arg("--")
        .args(args);
    c
}

fn wait_for(path: &Path, what: &str) {
    let t = Instant::now();
    while !path.exists() {
        assert!(t.elapsed() < Duration::from_secs(60), "{what} never came");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_timeout(c: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let t = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return Some(s);
        }
        if t.elapsed() > limit {
            let _ = c.kill();
            let _ = c.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// All that `out` gives until its end, read on a thread (the test goes on meanwhile).
fn read_all_later(mut out: ChildStdout) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        // A read error ends the text there: what was read is what the job printed.
        let _ = out.read_to_string(&mut s);
        s
    })
}

fn signal(c: &Child, sig: i32) {
    assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
}

/// A training loop that prints a step every 0.1 s and, on `sig`, prints "saving", writes its
/// checkpoint and exits 0 (as a job's graceful-shutdown handler does).
const SAVER: &str = r#"
import signal, sys, time, pathlib
d = pathlib.Path(sys.argv[1]); sig = getattr(signal, sys.argv[2])
def save(*a):
    print("saving", flush=True)
    (d / "checkpoint.pt").write_text("saved")
    sys.exit(0)
signal.signal(sig, save)
(d / "ready").write_text("")
while True:
    print("step", flush=True)
    time.sleep(0.1)
"#;

#[test]
fn sigterm_sigint_and_sighup_reach_the_job_and_its_handler_saves() {
    let root = tempfile::tempdir().unwrap();
    for sig in ["SIGTERM", "SIGINT", "SIGHUP"] {
        let d = tempfile::tempdir().unwrap();
        let mut c = run(root.path(), &["python3", "-c", SAVER])
            .arg(d.path())
            .arg(sig)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let reader = read_all_later(c.stdout.take().unwrap());
        wait_for(&d.path().join("ready"), "the job's start");
        std::thread::sleep(Duration::from_millis(300));
        let n = match sig {
            "SIGTERM" => libc::SIGTERM,
            "SIGINT" => libc::SIGINT,
            _ => libc::SIGHUP,
        };
        signal(&c, n);
        let status = wait_timeout(&mut c, Duration::from_secs(30)).expect("run ended");
        let out = reader.join().unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("checkpoint.pt"))
                .ok()
                .as_deref(),
            Some("saved"),
            "{sig}: the handler saved (output: {out})"
        );
        assert!(out.ends_with("step\nsaving\n"), "{sig}: {out}");
        assert_eq!(status.code(), Some(0), "{sig}: the job's own status");
    }
}

#[test]
fn a_quiet_job_that_dies_of_sigterm_is_not_orphaned_and_run_dies_the_same_way() {
    let root = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    let script =
        "import os, sys, time\nopen(sys.argv[1], 'w').write(str(os.getpid()))\ntime.sleep(120)\n";
    let mut c = run(root.path(), &["python3", "-c", script])
        .arg(&pidfile)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&pidfile, "the job's pid");
    std::thread::sleep(Duration::from_millis(100));
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    signal(&c, libc::SIGTERM);
    let status = wait_timeout(&mut c, Duration::from_secs(60)).expect("run ended");
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let left = survivors(&[pid], Duration::from_secs(10));
    assert!(left.is_empty(), "the job (pid {pid}) outlived run");
}

#[test]
fn run_waits_for_the_job_not_for_a_background_process_holding_its_output() {
    let root = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let mut c = run(
        root.path(),
        &["sh", "-c", "sleep 60 & echo started; echo oops >&2; exit 3"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut out = c.stdout.take().unwrap();
    let mut err = c.stderr.take().unwrap();
    let status = wait_timeout(&mut c, Duration::from_secs(45)).expect("run ended");
    let elapsed = t.elapsed();
    let (mut o, mut e) = (String::new(), String::new());
    out.read_to_string(&mut o).unwrap();
    err.read_to_string(&mut e).unwrap();
    assert_eq!(status.code(), Some(3));
    assert_eq!(o, "started\n", "output before the exit is drained");
    // run's own lines wrap at 80 columns: read them with the line breaks as spaces.
    let words = e.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        e.starts_with("oops\n") && words.contains("exited with status 3"),
        "{e}"
    );
    assert!(elapsed < Duration::from_secs(40), "took {elapsed:?}");
}

#[test]
fn a_broken_stdout_ends_the_relay_and_the_job_like_a_shell_pipe() {
    // `envdoctor run -- yes | head -1`.
    let root = tempfile::tempdir().unwrap();
    let mut c = run(root.path(), &["yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = c.stdout.take().unwrap();
    let mut first = [0u8; 2];
    out.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"y\n");
    drop(out);
    let status = wait_timeout(&mut c, Duration::from_secs(20)).expect("run ended");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}");
    let mut err = String::new();
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(!err.contains("diagnosing"), "{err}");
}

#[test]
fn a_job_killed_by_a_signal_kills_run_with_the_same_signal_after_the_diagnosis() {
    let root = tempfile::tempdir().unwrap();
    let out = run(
        root.path(),
        &[
            "python3",
            "-c",
            "import os, signal; print('Segmentation fault', flush=True); os.kill(os.getpid(), signal.SIGSEGV)",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{:?}", out.status);
    assert!(!out.status.core_dumped(), "no core file of envdoctor's own");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exited with status 139"), "{err}");
}

/// A pseudo-terminal made here: (master, slave).
fn pty() -> (OwnedFd, OwnedFd) {
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(m >= 0);
        assert_eq!(libc::grantpt(m), 0);
        assert_eq!(libc::unlockpt(m), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
        let s = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        assert!(s >= 0);
        let ws = libc::winsize {
            ws_row: 40,
            ws_col: 123,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        libc::ioctl(s, libc::TIOCSWINSZ, &ws);
        (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s))
    }
}

#[test]
fn on_a_terminal_the_job_gets_a_terminal_and_its_prints_show_while_it_runs() {
    let root = tempfile::tempdir().unwrap();
    let (master, slave) = pty();
    // No flush: on a pipe CPython would hold "epoch 1 done" until exit.
    let script = "import sys, os, time\nprint('epoch 1 done')\nprint('tty', sys.stdout.isatty(), sys.stderr.isatty(), os.get_terminal_size().columns)\ntime.sleep(4)\nprint('bye')\n";
    let started = Instant::now();
    let mut c = run(root.path(), &["python3", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let fd = master.as_raw_fd();
    let reader = std::thread::spawn(move || {
        let _keep = master;
        let mut buf = [0u8; 4096];
        loop {
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let _ = tx.send((Instant::now(), buf[..n as usize].to_vec()));
        }
    });
    let status = wait_timeout(&mut c, Duration::from_secs(60)).expect("run ended");
    let ended = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let mut text = Vec::new();
    let mut epoch_at = None;
    while let Ok((at, chunk)) = rx.try_recv() {
        text.extend_from_slice(&chunk);
        if epoch_at.is_none() && memchr::memmem::find(&text, b"epoch 1 done").is_some() {
            epoch_at = Some(at);
        }
    }
    drop(reader);
    let text = String::from_utf8_lossy(&text);
    assert_eq!(status.code(), Some(0), "{text}");
    assert!(text.contains("tty True True 123"), "{text}");
    let epoch_at = epoch_at.unwrap_or_else(|| panic!("no epoch line: {text}"));
    assert!(
        ended.duration_since(epoch_at) > Duration::from_secs(2),
        "the line came at {:?}, the job ended at {:?}",
        epoch_at - started,
        ended - started
    );
    assert!(text.contains("bye"), "{text}");
}

/// Issue 30: the job led a session of its own, so its own `os.setpgrp()` (a training script
/// that makes a group to `killpg` its workers at the end) raised PermissionError under `run`
/// while it works when a script starts it. Without a terminal the job leads a process group,
/// not a session.
#[test]
fn a_job_that_makes_its_own_process_group_runs_as_it_does_from_a_script() {
    let root = tempfile::tempdir().unwrap();
    let script = "import os\nos.setpgrp()\nassert os.getpgrp() == os.getpid()\nprint('own group', flush=True)\n";
    let plain = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(plain.status.success(), "without run: {plain:?}");
    let out = run(root.path(), &["python3", "-c", script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "own group\n");
}

/// A launcher whose worker calls `setsid` (`start_new_session=True`, as launchers do to kill a
/// worker's whole tree): the worker is outside the job's process group, so a SIGTERM sent to
/// `run` reaches the launcher only, once, as it reaches a job started from a shell; the
/// launcher's handler passes it on and waits, the worker saves, and `run` ends with the
/// launcher's status. The worker's output is relayed while it runs.
const LAUNCHER: &str = r#"
import os, signal, subprocess, sys, pathlib
d = pathlib.Path(sys.argv[1])
worker = subprocess.Popen([sys.executable, "-c", """
import os, signal, sys, time, pathlib
d = pathlib.Path(sys.argv[1]); got = []
def save(*a):
    got.append(1)
    time.sleep(0.5)  # a second SIGTERM sent straight to the worker would land here
    (d / "saved").write_text(str(len(got)))
    print("worker saved", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, save)
(d / "worker-sid").write_text(f"{os.getsid(0)} {os.getpid()}")
while True:
    time.sleep(0.1)
""", str(d)], start_new_session=True)
def stop(*a):
    worker.send_signal(signal.SIGTERM)
    sys.exit(worker.wait() + 5)
signal.signal(signal.SIGTERM, stop)
(d / "ready").write_text("")
while True:
    signal.pause()
"#;

#[test]
fn a_setsid_worker_gets_no_forwarded_signal_and_its_launcher_stops_it() {
    let root = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut c = run(root.path(), &["python3", "-c", LAUNCHER])
        .arg(d.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let reader = read_all_later(c.stdout.take().unwrap());
    wait_for(&d.path().join("ready"), "the launcher's start");
    wait_for(&d.path().join("worker-sid"), "the worker's start");
    let sid = std::fs::read_to_string(d.path().join("worker-sid")).unwrap();
    let (s, p) = sid.split_once(' ').unwrap();
    assert_eq!(s, p, "the worker leads its own session");
    signal(&c, libc::SIGTERM);
    let status = wait_timeout(&mut c, Duration::from_secs(60)).expect("run ended");
    let out = reader.join().unwrap();
    assert_eq!(
        std::fs::read_to_string(d.path().join("saved"))
            .ok()
            .as_deref(),
        Some("1"),
        "the worker saved after exactly one SIGTERM (output: {out})"
    );
    assert_eq!(out, "worker saved\n");
    assert_eq!(status.code(), Some(5), "the launcher's own status");
}

/// A job that leaves a quiet `setsid` daemon behind (holding the pipes run reads) and exits:
/// run ends with the job, as a shell does, and leaves the daemon running, as a shell does.
#[test]
fn run_waits_for_the_job_and_not_for_a_setsid_daemon_it_leaves() {
    let root = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("daemon.pid");
    let script = format!(
        "setsid sh -c 'echo $$ > {p}; exec sleep 60' & \
         while [ ! -s {p} ]; do sleep 0.01; done; echo started; exit 4",
        p = pidfile.display()
    );
    let t = Instant::now();
    let out = run(root.path(), &["sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = t.elapsed();
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let still = alive(pid);
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
    assert!(took < Duration::from_secs(40), "took {took:?}");
    assert!(still, "the daemon was left running, as a shell leaves it");
}

/// Issue 30: a broken rule pack given to `run` went unreported after a job that succeeded (the
/// rules were never looked at) and, after a failure, read "could not diagnose" as if the log
/// were at fault. Now the job runs first and ends as it ends; then the pack's file and error
/// are named, whether the job succeeded or failed. A FIFO given as a rule file neither hangs
/// nor delays anything.
#[test]
fn a_broken_rule_pack_is_named_after_the_job_and_changes_nothing_about_it() {
    let root = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let broken = d.path().join("broken.yaml");
    std::fs::write(&broken, "rules:\n  - id: x\n    title: [unclosed\n").unwrap();
    let fifo = d.path().join("fifo.yaml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for pack in [&broken, &fifo] {
        for (job, code) in [("echo job ran", 0), ("echo job ran; exit 3", 3)] {
            let t = Instant::now();
            let mut c = Command::new(cli::bin());
            c.env("NO_COLOR", "1")
                .args(["run", "--no-load", "--root"])
                .arg(root.path())
                .arg("--rules")
                .arg(pack)
                .args(["--", "sh", "-c", job])
                .stdin(Stdio::null());
            let out = c.output().unwrap();
            let took = t.elapsed();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(code), "{job}: {err}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "job ran\n", "{job}");
            assert!(err.contains(pack.to_str().unwrap()), "{job}: {err}");
            let said = if code == 0 {
                "succeeded, but the rules given with --rules could not be loaded"
            } else {
                "exited with status 3; its output was not diagnosed: the rules could not be loaded"
            };
            // run's own lines wrap at the terminal's width: read line breaks as spaces.
            let flat = err.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(said), "{job}: {err}");
            assert!(!flat.contains("diagnosing its output"), "{err}");
            assert!(took < Duration::from_secs(60), "{job}: took {took:?}");
        }
    }
}
