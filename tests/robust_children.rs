//! Misbehaving libraries in the load child (issue 16 item 6, issue 12 "load probe honesty"),
//! built with `cc` as real shared objects: a version call that crashes or hangs in a library
//! that loads fine, a library that forks while loading, one that floods stdout, one that prints
//! a forged result line; and the real libcupti from NVIDIA's wheel.

use crate::common::cc;
use crate::common::procs::survivors;
use crate::common::pypi;
use crate::fake_nvml;

use envdoctor::probe::libs::load::{self, Item};
use envdoctor::snapshot::libs::LoadResult;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_envdoctor"))
}

fn item(f: &str, p: &Path) -> Item {
    Item {
        family: Some(f.to_string()),
        path: p.to_path_buf(),
    }
}

/// `libcudnn.so.9` (its `cudnnGetVersion` says 9.1.0) built in `dir`, whose constructor runs
/// `body` (C, with `unistd.h`, `stdio.h` and `sys/wait.h` included).
fn cudnn_whose_constructor(dir: &Path, body: &str) -> PathBuf {
    cc::Lib::new("libcudnn.so.9")
        .c(&format!(
            "#include <unistd.h>\n#include <stdio.h>\n#include <stddef.h>\n#include <sys/wait.h>\n\
             size_t cudnnGetVersion(void) {{ return 90100; }}\n\
             __attribute__((constructor)) static void spawn(void) {{\n{body}}}"
        ))
        .build(&dir.join("libcudnn.so.9"))
}

/// Load `lib` (of `family`) alone in the load child, 20 s for it and for the whole probe: its
/// result and how long the probe took.
fn load_alone(family: &str, lib: &Path) -> (LoadResult, Duration) {
    let started = Instant::now();
    let r = load::load_all(
        exe(),
        &[],
        &[item(family, lib)],
        Duration::from_secs(20),
        started + Duration::from_secs(20),
    );
    (r[0].clone(), started.elapsed())
}

/// A library that loads fine but whose version function segfaults (as libcupti's did without a
/// driver) or never returns: the load is "loaded", the version unknown with the reason, never
/// a crash of the library.
#[test]
fn a_crashing_or_hanging_version_call_is_version_unknown_not_a_load_crash() {
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let segv = cc::Lib::new("libcudnn.so.9")
        .c("#include <stddef.h>\nsize_t cudnnGetVersion(void) { volatile int *p = 0; *p = 1; return 0; }")
        .build(&d.join("a/libcudnn.so.9"));
    let hang = cc::Lib::new("libnccl.so.2")
        .c("#include <unistd.h>\nint ncclGetVersion(int *v) { for (;;) sleep(1000); return 0; }")
        .build(&d.join("b/libnccl.so.2"));
    let good = cc::Lib::new("libcudart.so.12")
        .c("int cudaRuntimeGetVersion(int *v) { *v = 12040; return 0; }")
        .build(&d.join("c/libcudart.so.12"));
    let r = load::load_all(
        exe(),
        &[],
        &[
            item("cudnn", &segv),
            item("nccl", &hang),
            item("cudart", &good),
        ],
        Duration::from_millis(800),
        Instant::now() + Duration::from_secs(10),
    );
    assert_eq!(r[0].status, "loaded", "{:?}", r[0]);
    assert_eq!(r[0].signal, None);
    assert_eq!(r[0].version, None);
    let why = r[0].version_error.as_deref().unwrap();
    assert!(why.contains("cudnnGetVersion crashed (SIGSEGV)"), "{why}");
    assert_eq!(r[1].status, "loaded", "{:?}", r[1]);
    assert!(
        r[1].version_error
            .as_deref()
            .unwrap()
            .contains("ncclGetVersion did not return"),
        "{:?}",
        r[1]
    );
    assert_eq!(r[2].version.as_deref(), Some("12.4"));
}

/// A library whose constructor forks a child that sleeps forever (holding every pipe): the
/// probe ends when the load child does, not at the deadline, and the forked process is killed.
#[test]
fn a_library_that_forks_neither_stalls_the_probe_nor_leaves_an_orphan() {
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let pidfile = t.path().join("forked.pid");
    let forker = cudnn_whose_constructor(
        t.path(),
        &format!(
            "pid_t p = fork();\n\
             if (p == 0) {{ for (;;) sleep(1000); }}\n\
             FILE *f = fopen(\"{}\", \"w\"); fprintf(f, \"%d\", (int)p); fclose(f);\n",
            pidfile.display()
        ),
    );
    let (r, took) = load_alone("cudnn", &forker);
    eprintln!("load probe with a forking library took {took:?} (deadline 20 s)");
    assert_eq!(r.status, "loaded", "{r:?}");
    assert_eq!(r.version.as_deref(), Some("9.1.0"));
    assert!(took < Duration::from_secs(5), "waited {took:?}");
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    let left = survivors(&[pid], Duration::from_secs(2));
    assert!(
        left.is_empty(),
        "the forked process {pid} outlived the probe"
    );
}

/// The session a process belongs to (`/proc/PID/stat`'s sixth field).
fn session(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(3)?.parse().ok()
}

/// Kill what a failed test left behind (the test's own processes: their pids were written by
/// the library it compiled).
fn kill_all(pids: &[i32]) {
    for p in pids {
        // SAFETY: kill(2) on a pid the test's own library forked.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
}

/// Issue 30, 10g: a library whose constructor forks a child that calls `setsid()` (out of the
/// load child's process group, so the group kill misses it) and a double-forked daemon whose
/// middle process exits at once (orphaned while the load child still runs): neither outlives
/// the probe. Before the load child became a subreaper, both lived on under init.
#[test]
fn a_library_whose_children_call_setsid_leaves_no_orphan() {
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let pidfile = t.path().join("escaped.pid");
    let escaper = cudnn_whose_constructor(
        t.path(),
        &format!(
            "int fds[2]; if (pipe(fds) != 0) return;\n\
               pid_t child = fork();\n\
               if (child == 0) {{ setsid(); for (;;) sleep(1000); }}\n\
               pid_t middle = fork();\n\
               if (middle == 0) {{\n\
                 setsid(); pid_t d = fork();\n\
                 if (d == 0) {{ for (;;) sleep(1000); }}\n\
                 if (write(fds[1], &d, sizeof d) != sizeof d) _exit(1);\n\
                 _exit(0);\n\
               }}\n\
               pid_t daemon = 0; if (read(fds[0], &daemon, sizeof daemon) != sizeof daemon) daemon = 0;\n\
               waitpid(middle, NULL, 0);\n\
               FILE *f = fopen(\"{}\", \"w\"); fprintf(f, \"%d %d\", (int)child, (int)daemon); fclose(f);\n",
            pidfile.display()
        ),
    );
    let (r, took) = load_alone("cudnn", &escaper);
    let text = std::fs::read_to_string(&pidfile).unwrap();
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{text}");
    assert!(pids.iter().all(|p| *p > 0), "{text}");
    let left = survivors(&pids, Duration::from_secs(3));
    let sessions: Vec<Option<i32>> = left.iter().map(|p| session(*p)).collect();
    kill_all(&left);
    eprintln!("load probe with setsid children took {took:?}");
    assert!(
        left.is_empty(),
        "processes {left:?} (sessions {sessions:?}, ours {:?}) outlived the probe",
        session(std::process::id() as i32)
    );
    assert_eq!(r.status, "loaded", "{r:?}");
    assert_eq!(r.version.as_deref(), Some("9.1.0"));
    assert!(took < Duration::from_secs(5), "waited {took:?}");
}

/// A library that crashes after forking a `setsid()` child: the crash is still reported as the
/// library's (the reaper dies of the worker's signal), and the child is gone.
#[test]
fn a_crash_after_a_setsid_fork_is_still_the_librarys_crash() {
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let pidfile = t.path().join("escaped.pid");
    let lib = cc::Lib::new("libnccl.so.2")
        .c(&format!(
            "#include <unistd.h>\n#include <stdio.h>\n\
             __attribute__((constructor)) static void spawn(void) {{\n\
               pid_t child = fork();\n\
               if (child == 0) {{ setsid(); for (;;) sleep(1000); }}\n\
               FILE *f = fopen(\"{}\", \"w\"); fprintf(f, \"%d\", (int)child); fclose(f);\n\
               volatile int *p = 0; *p = 1;\n\
             }}",
            pidfile.display()
        ))
        .build(&t.path().join("libnccl.so.2"));
    let (r, _) = load_alone("nccl", &lib);
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    let left = survivors(&[pid], Duration::from_secs(3));
    kill_all(&left);
    assert!(left.is_empty(), "the setsid child {pid} outlived the probe");
    assert_eq!(r.status, "crashed", "{r:?}");
    assert_eq!(r.signal.as_deref(), Some("SIGSEGV"), "{r:?}");
}

/// Libraries that write to stdout: one floods it without a newline (the parent buffered all of
/// it before), one prints a forged result line for another library and leaves a line open
/// (which glued the next result line onto it and made a good load look failed).
#[test]
fn what_a_library_prints_can_neither_forge_nor_spoil_a_result() {
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let flood = cc::Lib::new("libcublasLt.so.12")
        .c("#include <stdio.h>\n#include <stddef.h>\n\
            size_t cublasLtGetVersion(void) { return 120405; }\n\
            __attribute__((constructor)) static void flood(void) {\n\
              static char buf[1 << 20];\n\
              for (size_t i = 0; i < sizeof buf; i++) buf[i] = 'x';\n\
              for (int i = 0; i < 200; i++) fwrite(buf, 1, sizeof buf, stdout);\n\
              fflush(stdout);\n\
            }")
        .build(&d.join("a/libcublasLt.so.12"));
    let forger = cc::Lib::new("libcudart.so.12")
        .c("#include <stdio.h>\n\
            int cudaRuntimeGetVersion(int *v) { *v = 12040; return 0; }\n\
            __attribute__((constructor)) static void forge(void) {\n\
              printf(\"@@envdoctor-load {\\\"event\\\":\\\"done\\\",\\\"index\\\":2,\\\"result\\\":{\\\"status\\\":\\\"loaded\\\",\\\"version\\\":\\\"99.9\\\"}}\\n\");\n\
              printf(\"no newline here\");\n\
              fflush(stdout);\n\
            }")
        .build(&d.join("b/libcudart.so.12"));
    let victim = cc::Lib::new("libcudnn.so.9")
        .c("#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 90100; }")
        .build(&d.join("c/libcudnn.so.9"));
    let started = Instant::now();
    let r = load::load_all(
        exe(),
        &[],
        &[
            item("cublasLt", &flood),
            item("cudart", &forger),
            item("cudnn", &victim),
        ],
        Duration::from_secs(10),
        started + Duration::from_secs(20),
    );
    assert_eq!(r[0].status, "loaded", "{:?}", r[0]);
    assert_eq!(r[0].version.as_deref(), Some("12.4.5"));
    assert_eq!(r[1].status, "loaded", "{:?}", r[1]);
    assert_eq!(r[1].version.as_deref(), Some("12.4"));
    assert_eq!(r[2].status, "loaded", "{:?}", r[2]);
    assert_eq!(r[2].version.as_deref(), Some("9.1.0"), "forged: {:?}", r[2]);
}

/// The real libcupti from NVIDIA's CUDA 13 wheel (the one a fresh `pip install torch==2.15.0`
/// brings, whose cuptiGetVersion crashed without a driver and was reported as
/// `library-load-crashes`): it loads, its version comes from the wheel, nothing is called.
#[test]
fn real_cupti_wheel_loads_and_is_versioned_from_its_wheel() {
    let Some(venv) = pypi::need(
        "nvidia-cuda-cupti venv",
        pypi::cached_venv(&["torch==2.15.0"]),
    ) else {
        return;
    };
    let site = venv.join("lib/python3.11/site-packages");
    let cupti = site.join("nvidia/cu13/lib/libcupti.so.13");
    assert!(cupti.is_file(), "{} missing", cupti.display());
    let wheel = std::fs::read_dir(&site)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("nvidia_cuda_cupti") && n.ends_with(".dist-info"))
        .unwrap();
    let version = wheel
        .trim_end_matches(".dist-info")
        .rsplit_once('-')
        .unwrap()
        .1
        .to_string();
    let want: Vec<&str> = version.split('.').take(2).collect();
    let r = load::load_all(
        exe(),
        &[],
        &[item("cupti", &cupti)],
        Duration::from_secs(10),
        Instant::now() + Duration::from_secs(20),
    );
    assert_eq!(r[0].status, "loaded", "{:?}", r[0]);
    assert_eq!(r[0].signal, None);
    assert_eq!(r[0].version_call, None);
    assert_eq!(r[0].version.as_deref(), Some(want.join(".").as_str()));
    assert!(r[0]
        .version_source
        .as_deref()
        .unwrap()
        .starts_with("dist-info nvidia_cuda_cupti"));
}

/// End to end on the fresh torch==2.15.0 venv that reported `library-load-crashes` for
/// libcupti.so.13: every CUDA library of the venv loads, and no finding blames one.
#[test]
fn fresh_torch_venv_check_reports_no_load_crash() {
    let Some(venv) = pypi::need("torch venv", pypi::cached_venv(&["torch==2.15.0"])) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("envdoctor")
        .unwrap()
        .env_clear()
        .env("PATH", format!("{}/bin:/usr/bin:/bin", venv.display()))
        .env("VIRTUAL_ENV", &venv)
        .env("HOME", home.path())
        .current_dir(home.path())
        .args(["check", "--format", "json", "--deadline", "30"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(!rules.contains(&"library-load-crashes"), "{rules:?}");
    let libs = report["snapshot"]["libraries"].as_array().unwrap();
    let cupti = libs
        .iter()
        .find(|l| {
            l["soname"] == "libcupti.so.13"
                && l["python"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with(venv.to_str().unwrap())
        })
        .unwrap_or_else(|| panic!("no libcupti.so.13 in {libs:#?}"));
    assert_eq!(cupti["load"]["status"], "loaded", "{cupti:#}");
    assert!(cupti["load"]["version"]
        .as_str()
        .unwrap()
        .starts_with("13."));
}

/// The NVML child under the same regime: a driver that forks at init and prints a forged event
/// on stdout neither loses the GPU facts, nor holds the probe to its deadline, nor leaves its
/// forked process behind.
#[test]
fn a_forking_noisy_nvml_keeps_its_facts_and_leaves_no_orphan() {
    if !cc::have_cc() {
        return;
    }
    let lib = fake_nvml::library();
    let t = tempfile::tempdir().unwrap();
    let pidfile = t.path().join("nvml-fork.pid");
    let started = Instant::now();
    let out = assert_cmd::Command::cargo_bin("envdoctor")
        .unwrap()
        .args(["snapshot", "--deadline", "20", "--nvml-lib"])
        .arg(&lib)
        .env("FAKE_NVML_SCENARIO", "fork-noisy")
        .env("FAKE_NVML_PIDFILE", &pidfile)
        .env("FAKE_NVML_OWN_PID", std::process::id().to_string())
        .env("FAKE_NVML_FOREIGN_PID", "4193999")
        .env_remove("CUDA_VISIBLE_DEVICES")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(out.status.success());
    let snap: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["nvml"]["status"], "ok", "{:#}", snap["nvml"]);
    assert_eq!(snap["gpus"].as_array().unwrap().len(), 2);
    eprintln!("snapshot with a forking NVML took {took:?} (deadline 20 s)");
    assert!(took < Duration::from_secs(15), "waited {took:?}");
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    let left = survivors(&[pid], Duration::from_secs(2));
    assert!(
        left.is_empty(),
        "NVML's forked process {pid} outlived envdoctor"
    );
}

/// Issue 30, 10g for the NVML child: a driver that forks a `setsid()` child and a
/// double-forked daemon during `nvmlInit_v2` keeps its GPU facts and leaves neither behind.
#[test]
fn an_nvml_whose_children_call_setsid_leaves_no_orphan() {
    if !cc::have_cc() {
        return;
    }
    let lib = fake_nvml::library();
    let t = tempfile::tempdir().unwrap();
    let pidfile = t.path().join("nvml-setsid.pid");
    let out = assert_cmd::Command::cargo_bin("envdoctor")
        .unwrap()
        .args(["snapshot", "--deadline", "20", "--nvml-lib"])
        .arg(&lib)
        .env("FAKE_NVML_SCENARIO", "fork-setsid")
        .env("FAKE_NVML_PIDFILE", &pidfile)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&pidfile).unwrap();
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{text}");
    assert!(pids.iter().all(|p| *p > 0), "{text}");
    let left = survivors(&pids, Duration::from_secs(3));
    kill_all(&left);
    assert!(
        left.is_empty(),
        "NVML's setsid processes {left:?} outlived envdoctor"
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["nvml"]["status"], "ok", "{:#}", snap["nvml"]);
    assert_eq!(snap["gpus"].as_array().unwrap().len(), 2);
}

/// The system's `libgcc_s.so.1` copied into a directory of its own (the job's
/// `$CONDA_PREFIX/lib` in the issue), and that directory.
fn libgcc_s_copy(into: &Path) -> Option<std::path::PathBuf> {
    let out = std::process::Command::new("cc")
        .arg("-print-file-name=libgcc_s.so.1")
        .output()
        .ok()?;
    let real = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !real.is_absolute() {
        return None;
    }
    let dir = into.join("jobs-lib");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&real, dir.join("libgcc_s.so.1")).unwrap();
    Some(dir)
}

/// Whether an `LD_DEBUG=libs` log shows an object of `dir` initialised.
fn inits_from(log: &str, dir: &Path) -> bool {
    let needle = format!("calling init: {}/", dir.display());
    log.lines().any(|l| l.contains(&needle))
}

/// Issue 30: envdoctor's own `libgcc_s.so.1` was taken from the job's `LD_LIBRARY_PATH`, its
/// constructor run in envdoctor (before any deadline) and in every load child, where a probed
/// library then found it already loaded whatever its own search path says. envdoctor links
/// libgcc's unwinder in (build.rs): `ld.so`'s own log shows nothing of that directory
/// initialised, in envdoctor or in a load child, unless a probed library itself needs
/// `libgcc_s` (then the child takes it from there, as the job would: the check can see it).
#[test]
fn no_library_of_the_jobs_ld_library_path_is_envdoctors_own() {
    if !cc::have_cc() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let Some(jobs) = libgcc_s_copy(t.path()) else {
        return;
    };
    let jobs_s = jobs.to_str().unwrap();
    let main = cc::ld_debug(exe(), &["--version"], &[("LD_LIBRARY_PATH", jobs_s)], None);
    assert!(main.stdout.starts_with("envdoctor "), "{}", main.stdout);
    assert!(
        !inits_from(&main.log, &jobs),
        "envdoctor ran the job's libgcc_s:\n{}",
        main.log
    );

    let plain = cc::Lib::new("libcudart.so.12")
        .c("int cudaRuntimeGetVersion(int *v) { *v = 12040; return 0; }")
        .build(&t.path().join("plain/libcudart.so.12"));
    let unwinds = cc::Lib::new("libnccl.so.2")
        .c("#include <unwind.h>\nint ncclGetVersion(int *v) { *v = 22105; return _Unwind_GetCFA(0) != 0; }")
        .arg("-Wl,--no-as-needed")
        .arg("-lgcc_s")
        .build(&t.path().join("unwinds/libnccl.so.2"));
    for (lib, family, needs_gcc_s) in [(&plain, "cudart", false), (&unwinds, "nccl", true)] {
        let logs = t.path().join(format!("ld-{family}"));
        std::fs::create_dir_all(&logs).unwrap();
        let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = [
            ("LD_LIBRARY_PATH", jobs_s),
            ("LD_DEBUG", "libs"),
            ("LD_DEBUG_OUTPUT", logs.join("ld").to_str().unwrap()),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let r = load::load_all(
            exe(),
            &env,
            &[item(family, lib)],
            Duration::from_secs(20),
            Instant::now() + Duration::from_secs(20),
        );
        assert_eq!(r[0].status, "loaded", "{:?}", r[0]);
        let log: String = std::fs::read_dir(&logs)
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect();
        assert!(
            log.contains("calling init:"),
            "no ld.so log from the load child"
        );
        assert_eq!(inits_from(&log, &jobs), needs_gcc_s, "{family}:\n{log}");
    }
}
