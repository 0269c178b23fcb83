//! The `gpu` probe: NVML (driver, CUDA driver and NVML versions, each device, who occupies it)
//! and `CUDA_VISIBLE_DEVICES`, into the `nvml` and `gpus[]` sections.
//!
//! NVML is a shared library and a wedged driver can make any NVML call block forever (or
//! crash), so it is never loaded into envdoctor itself: [`child`] runs in a child process
//! (`envdoctor __nvml-child`) that streams JSON lines; this module kills it at the probe's
//! deadline and keeps every line that arrived, so a hang in device 3 still leaves devices 0–2
//! and `nvml.status = "timeout"`. Processes are attributed on this side ([`procs`]) through the
//! [`crate::root::Root`]; `CUDA_VISIBLE_DEVICES` is mapped by [`visible`].

pub mod child;
pub mod procs;
pub mod visible;

use super::{Apply, Context};
use crate::snapshot::gpu::{Gpu, GpuLive, Nvml};
use crate::snapshot::ProbeError;
use child::{Event, RawDevice};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The hidden subcommand that runs [`child::run`].
pub const CHILD_SUBCOMMAND: &str = "__nvml-child";

/// Time kept back from the deadline to kill the child and hand the facts over.
const MARGIN: Duration = Duration::from_millis(150);

/// Most bytes read from the child (a machine with many GPUs and processes stays far below).
const MAX_OUTPUT: usize = 16 * 1024 * 1024;

const MIB: u64 = 1024 * 1024;

/// The probe entry point (registered as `gpu`).
pub fn probe(ctx: &Context) -> Apply {
    let (nvml, gpus, errors) = collect(ctx);
    Box::new(move |snap| {
        snap.nvml = nvml;
        snap.gpus = gpus;
        snap.probe_errors.extend(errors);
    })
}

fn not_probed(reason: &str) -> Nvml {
    Nvml {
        status: "not-probed".into(),
        reason: Some(reason.into()),
        ..Default::default()
    }
}

/// Query NVML in a child, attribute processes, map `CUDA_VISIBLE_DEVICES`.
pub fn collect(ctx: &Context) -> (Nvml, Vec<Gpu>, Vec<ProbeError>) {
    let opts = &ctx.opts;
    if opts.no_load {
        return (
            not_probed("--no-load: NVML is a shared library and was not loaded"),
            Vec::new(),
            Vec::new(),
        );
    }
    if !ctx.root().is_host() && opts.nvml_lib.is_none() {
        return (
            not_probed("--root names another machine; NVML would describe this one's GPUs (pass --nvml-lib to query it anyway)"),
            Vec::new(),
            Vec::new(),
        );
    }
    let exe = match std::env::current_exe() {
        Ok(p) if p.file_name().is_some_and(|n| n == "envdoctor") => p,
        Ok(p) => {
            return (
                not_probed(&format!(
                    "NVML is queried by a child envdoctor process, and {} is not envdoctor",
                    p.display()
                )),
                Vec::new(),
                Vec::new(),
            )
        }
        Err(e) => {
            return (
                error_status(
                    "error",
                    format!("cannot find the envdoctor executable: {e}"),
                ),
                Vec::new(),
                vec![ProbeError::new(
                    "gpu",
                    format!("cannot find the envdoctor executable: {e}"),
                )],
            )
        }
    };
    let run = run_child(
        &exe,
        opts.nvml_lib.as_deref(),
        ctx.remaining().saturating_sub(MARGIN),
    );
    assemble(ctx, run)
}

fn error_status(status: &str, reason: String) -> Nvml {
    Nvml {
        status: status.into(),
        reason: Some(reason),
        ..Default::default()
    }
}

/// What came back from the child.
#[derive(Debug, Default)]
pub struct ChildRun {
    /// Every complete line, parsed.
    pub events: Vec<Event>,
    /// Lines that were not events (a child that is not ours, or garbage).
    pub bad_lines: usize,
    /// How it ended.
    pub ending: Ending,
    /// The tail of its stderr.
    pub stderr: String,
}

/// How the child ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub enum Ending {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal (a crash inside NVML).
    Signal(i32),
    /// Still running at the deadline: killed.
    #[default]
    TimedOut,
    /// Could not be started.
    SpawnFailed(String),
}

fn run_child(exe: &Path, lib: Option<&Path>, budget: Duration) -> ChildRun {
    use crate::probe::childproc;
    let until = std::time::Instant::now() + budget;
    let mut child = match spawn_child(exe, lib) {
        Ok(c) => c,
        Err(e) => {
            return ChildRun {
                ending: Ending::SpawnFailed(e.to_string()),
                ..Default::default()
            }
        }
    };
    let err = child
        .child
        .stderr
        .take()
        .map(|s| childproc::tail_reader(s, 64 * 1024));
    let mut run = ChildRun::default();
    let Some(out) = child.results.take() else {
        return run;
    };
    let lines = childproc::line_reader(out, childproc::MAX_LINE, MAX_OUTPUT);
    let ending = read_events(&mut child, &lines, &mut run, until);
    // Kill the group: the child if still running, and anything the driver forked.
    child.kill_group();
    let err_bytes = err
        .and_then(|e| e.lock().map(|b| b.clone()).ok())
        .unwrap_or_default();
    run.ending = ending;
    run.stderr = tail(&String::from_utf8_lossy(&err_bytes), 2000);
    run
}

/// Start the NVML child (`envdoctor <CHILD_SUBCOMMAND> [--lib LIB]`). Events travel on the
/// result fd; what the driver prints on stdout is not read.
fn spawn_child(
    exe: &Path,
    lib: Option<&Path>,
) -> std::io::Result<crate::probe::childproc::Spawned> {
    let mut cmd = Command::new(exe);
    cmd.arg(CHILD_SUBCOMMAND);
    if let Some(lib) = lib {
        cmd.arg("--lib").arg(lib);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    crate::probe::childproc::spawn(&mut cmd)
}

/// Collect the child's events into `run` until it says `Done`, exits, or the deadline passes.
/// Lines arrive as they are written, so whatever came before a kill is kept; the child's exit
/// is watched directly, because a process NVML forked may hold the pipe open.
fn read_events(
    child: &mut crate::probe::childproc::Spawned,
    lines: &std::sync::mpsc::Receiver<crate::probe::childproc::Line>,
    run: &mut ChildRun,
    until: std::time::Instant,
) -> Ending {
    let mut gone_at: Option<std::time::Instant> = None;
    // The results pipe closed: every line is in, nothing is left to wait for.
    let mut drained = false;
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left.min(Duration::from_millis(20))) {
            Ok(l) => {
                if record_line(run, &l) {
                    let st = child.wait_exit(Duration::from_millis(100));
                    return ending_of(st);
                }
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                gone_at.get_or_insert_with(std::time::Instant::now);
                drained = true;
            }
        }
        if child.exited().is_some() {
            gone_at.get_or_insert_with(std::time::Instant::now);
        }
        if let Some(t) = gone_at {
            let status = child.exited();
            // A child that exited while something it forked holds the pipe gets 100 ms for its
            // last lines; one whose pipe is closed has sent them all.
            if drained || t.elapsed() >= Duration::from_millis(100) || status.is_none() {
                let st = status.or_else(|| child.wait_exit(Duration::from_millis(200)));
                return ending_of(st);
            }
        }
        if std::time::Instant::now() >= until {
            return Ending::TimedOut;
        }
    }
}

/// Parse one line of the child into `run` (an event, or a bad line; blank lines are ignored).
/// True when the line was the `Done` event.
fn record_line(run: &mut ChildRun, l: &crate::probe::childproc::Line) -> bool {
    let parsed = std::str::from_utf8(&l.bytes)
        .ok()
        .filter(|_| !l.cut)
        .and_then(|t| serde_json::from_str::<Event>(t).ok());
    match parsed {
        Some(e) => {
            let done = e == Event::Done;
            run.events.push(e);
            done
        }
        None if l.bytes.iter().all(u8::is_ascii_whitespace) => false,
        None => {
            run.bad_lines += 1;
            false
        }
    }
}

fn ending_of(status: Option<std::process::ExitStatus>) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(st) => match (st.code(), st.signal()) {
            (Some(c), _) => Ending::Exited(c),
            (None, Some(s)) => Ending::Signal(s),
            _ => Ending::Exited(-1),
        },
        None => Ending::TimedOut,
    }
}

fn tail(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &s[start..])
}

/// Turn the child's events into the snapshot's sections.
pub fn assemble(ctx: &Context, run: ChildRun) -> (Nvml, Vec<Gpu>, Vec<ProbeError>) {
    let mut errors = Vec::new();
    let mut nvml = Nvml {
        status: "error".into(),
        ..Default::default()
    };
    let seen = fold_events(run.events, &mut nvml, &mut errors);
    if nvml.library.is_none() {
        nvml.library = Some(
            ctx.opts
                .nvml_lib
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| child::DEFAULT_LIBRARY.to_string()),
        );
    }
    explain_ending(ctx, &run.ending, &run.stderr, &seen, &mut nvml, &mut errors);
    if run.bad_lines > 0 {
        errors.push(ProbeError::new(
            "gpu",
            format!("{} unreadable lines from the NVML child", run.bad_lines),
        ));
    }
    if nvml.status == "version-mismatch" {
        name_kernel_module(ctx, &mut nvml);
    }
    if nvml.status == "ok" && seen.device_count == Some(0) {
        nvml.status = "no-device".into();
        nvml.reason = Some("NVML works but lists no GPU".into());
    }

    let viewer = procs::Viewer::read(ctx.root());
    let mut gpus = Vec::new();
    for d in seen.raw_devices {
        for e in &d.errors {
            errors.push(ProbeError::new("gpu", format!("GPU {}: {e}", d.index)));
        }
        gpus.push(to_gpu(ctx, &viewer, d));
    }
    // Only a complete device list can say which entries match nothing.
    if seen.device_count == Some(gpus.len() as u32) {
        map_visible(ctx, &mut gpus, &mut nvml);
    }
    (nvml, gpus, errors)
}

/// What the child's events said beyond the `nvml` section itself.
struct Seen {
    raw_devices: Vec<RawDevice>,
    said_hello: bool,
    device_count: Option<u32>,
    done: bool,
}

/// Fold the child's events into `nvml` (and the system query's errors into `errors`).
fn fold_events(events: Vec<Event>, nvml: &mut Nvml, errors: &mut Vec<ProbeError>) -> Seen {
    let mut seen = Seen {
        raw_devices: Vec::new(),
        said_hello: false,
        device_count: None,
        done: false,
    };
    for e in events {
        match e {
            Event::Hello { .. } => seen.said_hello = true,
            Event::InitFailed { status, message } => {
                nvml.status = status;
                nvml.reason = Some(message);
            }
            Event::System {
                library,
                driver_version,
                cuda_driver_version,
                nvml_version,
                device_count: n,
                errors: errs,
            } => {
                nvml.status = "ok".into();
                nvml.library = library;
                nvml.driver_version = driver_version;
                nvml.cuda_driver_version = cuda_driver_version;
                nvml.nvml_version = nvml_version;
                seen.device_count = Some(n);
                errors.extend(errs.into_iter().map(|m| ProbeError::new("gpu", m)));
            }
            Event::Device(d) => seen.raw_devices.push(d),
            Event::Done => seen.done = true,
        }
    }
    seen
}

/// Status and reason for a child that could not start, timed out, crashed or exited without
/// an answer.
fn explain_ending(
    ctx: &Context,
    ending: &Ending,
    stderr: &str,
    seen: &Seen,
    nvml: &mut Nvml,
    errors: &mut Vec<ProbeError>,
) {
    let failed = nvml.status != "ok";
    let done = seen.done;
    match ending {
        Ending::SpawnFailed(e) => {
            nvml.status = "error".into();
            nvml.reason = Some(format!("could not start the NVML child process: {e}"));
        }
        Ending::TimedOut if !done && nvml.reason.is_none() => {
            let secs = ctx.opts.deadline.as_secs_f64();
            let where_ = match seen.device_count {
                None => "in nvmlInit_v2 or the first system queries".to_string(),
                Some(n) => format!("after {} of {n} devices", seen.raw_devices.len()),
            };
            nvml.status = "timeout".into();
            nvml.reason = Some(format!(
                "NVML did not answer within the {secs:.1} s deadline ({where_}): a wedged driver \
                 or a GPU that fell off the bus; facts gathered before are kept"
            ));
            errors.push(ProbeError::new(
                "gpu",
                format!("NVML timed out {where_}; the query was killed at the deadline"),
            ));
        }
        Ending::Signal(sig) if !done => {
            nvml.status = "crashed".into();
            nvml.reason = Some(format!(
                "the NVML library crashed the process that queried it (signal {sig}); facts \
                 gathered before are kept"
            ));
            errors.push(ProbeError::new(
                "gpu",
                format!("NVML crashed (signal {sig})"),
            ));
        }
        Ending::Exited(code) if !seen.said_hello || (!done && failed && nvml.reason.is_none()) => {
            nvml.status = "error".into();
            nvml.reason = Some(format!(
                "the NVML child process exited with status {code} without an answer: {}",
                if stderr.is_empty() {
                    "no message"
                } else {
                    stderr
                }
            ));
        }
        _ => {}
    }
}

/// Name the two versions of a version mismatch when the kernel module tells its own.
fn name_kernel_module(ctx: &Context, nvml: &mut Nvml) {
    if let Ok(text) = ctx
        .root()
        .read_to_string_lossy(Path::new("/proc/driver/nvidia/version"))
    {
        if let Some(k) = kernel_module_version(&text) {
            if let Some(r) = nvml.reason.as_mut() {
                r.push_str(&format!("; the loaded kernel module is {k}"));
            }
        }
    }
}

/// Map `CUDA_VISIBLE_DEVICES` (in `CUDA_DEVICE_ORDER`) onto the complete device list.
fn map_visible(ctx: &Context, gpus: &mut [Gpu], nvml: &mut Nvml) {
    let ids: Vec<visible::DeviceId> = gpus
        .iter()
        .map(|g| visible::DeviceId {
            index: g.index,
            uuid: g.uuid.clone(),
            name: g.name.clone(),
            mig: g.mig_devices.clone(),
        })
        .collect();
    let env = ctx.env();
    let v = visible::map(
        env.get_os("CUDA_VISIBLE_DEVICES"),
        env.get("CUDA_DEVICE_ORDER"),
        &ids,
    );
    for g in gpus.iter_mut() {
        g.visible = v.visible.contains(&g.index);
    }
    nvml.visible_devices = Some(v);
}

/// `580.65.06` from `/proc/driver/nvidia/version`
/// (`NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ...`).
pub fn kernel_module_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version"))?;
    line.split_whitespace()
        .find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_string)
}

fn to_gpu(ctx: &Context, viewer: &procs::Viewer, d: RawDevice) -> Gpu {
    let total = d.memory_total.unwrap_or(0) / MIB;
    let used = d.memory_used.unwrap_or(0) / MIB;
    let mut live = GpuLive {
        memory_used_mib: used,
        memory_free_mib: d.memory_free.unwrap_or(0) / MIB,
        memory_used_percent: if total > 0 {
            (used as f64 * 1000.0 / total as f64).round() / 10.0
        } else {
            0.0
        },
        utilization_percent: d.utilization_gpu,
        ..Default::default()
    };
    for p in &d.processes {
        // A process with both a compute and a graphics context is listed twice by NVML with
        // the same memory: keep one entry, so nothing is counted twice.
        if let Some(seen) = live.processes.iter_mut().find(|s| s.pid == p.pid) {
            if !seen.kind.split('+').any(|k| k == p.kind) {
                seen.kind = format!("{}+{}", seen.kind, p.kind);
            }
            continue;
        }
        let gp = procs::attribute(
            ctx.root(),
            viewer,
            p.pid,
            &p.kind,
            p.used_bytes.map(|b| b / MIB),
        );
        if !gp.in_our_pid_namespace {
            live.foreign_processes += 1;
            live.foreign_memory_mib += gp.used_memory_mib.unwrap_or(0);
        }
        live.processes.push(gp);
    }
    live.unaccounted_memory_mib = unaccounted(&live, d.mig_enabled);
    Gpu {
        index: d.index,
        name: d.name.unwrap_or_default(),
        uuid: d.uuid.unwrap_or_default(),
        pci_bus_id: d.pci_bus_id,
        compute_capability: d.compute_capability,
        memory_total_mib: total,
        compute_mode: d.compute_mode,
        mig_enabled: d.mig_enabled,
        persistence_mode: d.persistence_mode,
        mig_devices: d.mig_devices,
        ecc: ecc(&d.ecc),
        visible: true,
        live,
    }
}

/// Memory in use beyond what the listed processes hold; `None` when a process's memory is
/// unknown or MIG is on.
fn unaccounted(live: &GpuLive, mig_enabled: Option<bool>) -> Option<u64> {
    if mig_enabled == Some(true) {
        return None;
    }
    let mut held = 0u64;
    for p in &live.processes {
        held += p.used_memory_mib?;
    }
    Some(live.memory_used_mib.saturating_sub(held))
}

fn ecc(raw: &child::RawEcc) -> Option<crate::snapshot::gpu::GpuEcc> {
    let e = crate::snapshot::gpu::GpuEcc {
        enabled: raw.enabled,
        uncorrected_volatile: raw.uncorrected_volatile,
        retired_pages_pending: raw.retired_pages_pending,
        remap_pending: raw.remap_pending,
        remap_failed: raw.remap_failed,
    };
    (e != crate::snapshot::gpu::GpuEcc::default()).then_some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_module_version_from_proc() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb 26 01:51:44 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
        assert_eq!(kernel_module_version(text).as_deref(), Some("570.124.06"));
        assert_eq!(kernel_module_version("garbage"), None);
    }

    #[test]
    fn tail_keeps_the_end_on_a_char_boundary() {
        assert_eq!(tail("short", 10), "short");
        let t = tail("ééééé", 3);
        assert!(t.starts_with('…') && t.ends_with('é'));
    }
}
