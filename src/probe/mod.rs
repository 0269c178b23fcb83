//! Probes: each reads one part of the machine through a [`Root`] and an [`Env`] into the
//! [`Snapshot`], under a deadline.
//!
//! This module owns the runner: probes run concurrently on their own threads, in stages (a
//! stage-2 probe sees the facts stage 1 found: the library probe needs the interpreters). A probe
//! that has not answered by its deadline, or that panics, becomes an entry in `probe_errors`; the
//! others' facts are kept. A thread stuck in a blocking syscall (a dead network mount) is
//! abandoned, not joined: the process exits without waiting for it.

pub mod checkpoint;
pub mod childproc;
pub mod cuda;
pub mod env;
pub mod extensions;
pub mod file_memo;
pub mod gpu;
pub mod host;
pub mod libs;
pub mod lock;
pub mod pool;
pub mod python;
pub mod reaper;
pub mod record;
pub mod serialized;
pub mod tools;

use crate::root::{Env, Root};
use crate::snapshot::{ProbeError, Snapshot};
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Default per-probe deadline.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(5);

/// What to probe and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// The machine's `/`.
    pub root: Root,
    /// Its environment.
    pub env: Env,
    /// The project directory (a machine path), when there is one.
    pub project: Option<PathBuf>,
    /// Checkpoints named on the command line (machine paths).
    pub checkpoints: Vec<PathBuf>,
    /// Per-probe deadline.
    pub deadline: Duration,
    /// Do not load libraries in child processes.
    pub no_load: bool,
    /// Neither read nor write the load probe's result cache nor the file memo.
    pub no_load_cache: bool,
    /// Load NVML from this host path instead of the default search.
    pub nvml_lib: Option<PathBuf>,
    /// Running processes to inspect.
    pub pids: Vec<u32>,
    /// Only run these probes (empty: all). Used by tests and benchmarks.
    pub only: Vec<String>,
    /// Told which probes are still running once a batch has run for [`PROGRESS_AFTER`] (the
    /// caller shows it; the probe layer prints nothing).
    pub progress: Option<Progress>,
}

/// How the runner says which probes it still waits for: their names, the time since the batch
/// started and the deadline; called once more with no names when they are done.
pub type Progress = fn(&[&str], Duration, Duration);

/// How long a probe runs before [`Options::progress`] hears of it.
pub const PROGRESS_AFTER: Duration = Duration::from_secs(1);

impl Options {
    /// Options for probing `root` with `env`, everything else default.
    pub fn new(root: Root, env: Env) -> Self {
        Options {
            root,
            env,
            project: None,
            checkpoints: Vec::new(),
            deadline: DEFAULT_DEADLINE,
            no_load: false,
            no_load_cache: false,
            nvml_lib: None,
            pids: Vec::new(),
            only: Vec::new(),
            progress: None,
        }
    }
}

/// What a probe gets: the options, the facts of earlier stages, and its deadline.
pub struct Context {
    /// The options.
    pub opts: Arc<Options>,
    /// Facts from earlier stages (empty for stage 1).
    pub earlier: Arc<Snapshot>,
    /// When this probe must be done (children it starts must be killed by then).
    pub deadline: Instant,
    /// The distributions' `RECORD`s, read once per run for every probe.
    pub records: Arc<record::Records>,
    /// Answers read out of large files, kept across runs.
    pub memo: Arc<file_memo::FileMemo>,
}

impl Context {
    /// The root.
    pub fn root(&self) -> &Root {
        &self.opts.root
    }
    /// The environment.
    pub fn env(&self) -> &Env {
        &self.opts.env
    }
    /// Time left before the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// A probe's result: a function that writes its facts (and its own errors) into the snapshot.
pub type Apply = Box<dyn FnOnce(&mut Snapshot) + Send>;

/// A registered probe.
pub struct Probe {
    /// Its name, as used in `probe_errors[].probe`.
    pub name: &'static str,
    /// 1 or 2: stage-2 probes see stage-1 facts.
    pub stage: u8,
    /// The probe.
    pub run: fn(&Context) -> Apply,
}

/// Every probe envdoctor runs.
pub fn registry() -> Vec<Probe> {
    vec![
        Probe {
            name: "python",
            stage: 1,
            run: python::probe,
        },
        Probe {
            name: "cuda",
            stage: 2,
            run: cuda::probe,
        },
        Probe {
            name: "gpu",
            stage: 1,
            run: gpu::probe,
        },
        Probe {
            name: "host",
            stage: 1,
            run: host::probe,
        },
        Probe {
            name: "env",
            stage: 1,
            run: env::probe,
        },
        Probe {
            name: "checkpoint",
            stage: 1,
            run: checkpoint::probe,
        },
        Probe {
            name: "lock",
            stage: 2,
            run: lock::probe,
        },
        Probe {
            name: "libs",
            stage: 2,
            run: libs::probe,
        },
        Probe {
            name: "extensions",
            stage: 2,
            run: extensions::probe,
        },
        Probe {
            name: "tools",
            stage: 2,
            run: tools::probe,
        },
        Probe {
            name: "serialized",
            stage: 2,
            run: serialized::probe,
        },
    ]
}

/// Run every probe (or those in `opts.only`) and assemble the snapshot.
pub fn collect(opts: Options) -> Snapshot {
    collect_with(registry(), opts)
}

/// Run the given probes (or those of them in `opts.only`) and assemble the snapshot.
pub fn collect_with(probes: Vec<Probe>, opts: Options) -> Snapshot {
    let opts = Arc::new(opts);
    let mut snap = Snapshot::empty();
    snap.collected_at = crate::time::now_rfc3339();
    snap.root = opts.root.prefix().to_string_lossy().into_owned();
    let probes: Vec<Probe> = probes
        .into_iter()
        .filter(|p| opts.only.is_empty() || opts.only.iter().any(|o| o == p.name))
        .collect();
    let records = Arc::new(record::Records::default());
    let memo = Arc::new(file_memo::FileMemo::for_run(
        &opts.root,
        &opts.env,
        !opts.no_load_cache,
    ));
    for stage in [1u8, 2] {
        let batch: Vec<&Probe> = probes.iter().filter(|p| p.stage == stage).collect();
        if batch.is_empty() {
            continue;
        }
        let started = Instant::now();
        // The facts so far are lent to the probes, not copied (a machine with hundreds of venvs
        // makes a snapshot of hundreds of megabytes); results are applied once they are back.
        let earlier = Arc::new(std::mem::take(&mut snap));
        let (applies, errors) = run_stage(&batch, &opts, &earlier, &records, &memo);
        // A probe abandoned at its deadline may still hold the facts: copy them then.
        snap = Arc::try_unwrap(earlier).unwrap_or_else(|shared| (*shared).clone());
        for (name, apply) in applies {
            let applied =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| apply(&mut snap)));
            if let Err(payload) = applied {
                snap.probe_errors.push(ProbeError::new(
                    name,
                    format!(
                        "the probe failed unexpectedly (a bug in envdoctor): {}",
                        panic_message(&payload)
                    ),
                ));
            }
        }
        snap.probe_errors.extend(errors);
        crate::timings::record(format!("probes stage {stage}"), started.elapsed());
    }
    crate::timings::span("snapshot normalize", || snap.normalize());
    snap
}

/// Stack of each probe thread: parsers of hostile files are depth-limited, and this leaves them
/// room to spare (the default 2 MiB left little for recursive parsers in debug builds).
pub const PROBE_STACK: usize = 16 * 1024 * 1024;

/// Run one stage's probes; returns their results (to apply in the order they answered) and the
/// errors of those that failed or did not answer.
fn run_stage(
    batch: &[&Probe],
    opts: &Arc<Options>,
    earlier: &Arc<Snapshot>,
    records: &Arc<record::Records>,
    memo: &Arc<file_memo::FileMemo>,
) -> (Vec<(&'static str, Apply)>, Vec<ProbeError>) {
    let mut errors = Vec::new();
    let (tx, rx) = mpsc::channel::<(usize, Result<Apply, String>)>();
    let start = Instant::now();
    let deadline = start + opts.deadline;
    for (i, probe) in batch.iter().enumerate() {
        let ctx = Context {
            opts: Arc::clone(opts),
            earlier: Arc::clone(earlier),
            deadline,
            records: Arc::clone(records),
            memo: Arc::clone(memo),
        };
        if let Err(e) = spawn_probe(probe, ctx, i, tx.clone()) {
            errors.push(ProbeError::new(
                probe.name,
                format!("could not start the probe thread: {e}"),
            ));
        }
    }
    drop(tx);
    let (applies, answered) = collect_answers(batch, opts, &rx, start, deadline, &mut errors);
    for (i, done) in answered.iter().enumerate() {
        if !done {
            errors.push(ProbeError::new(
                batch[i].name,
                format!(
                    "did not answer within the {:.1} s deadline (a blocking file or device?); \
                     its facts are missing. Raise it with --deadline.",
                    opts.deadline.as_secs_f64()
                ),
            ));
        }
    }
    (applies, errors)
}

/// Run `probe` on its own thread (with [`PROBE_STACK`]); its result, or its panic as text, is
/// sent on `tx` as answer `i`.
fn spawn_probe(
    probe: &Probe,
    ctx: Context,
    i: usize,
    tx: mpsc::Sender<(usize, Result<Apply, String>)>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let run = probe.run;
    let name = probe.name;
    std::thread::Builder::new()
        .name(format!("probe-{name}"))
        .stack_size(PROBE_STACK)
        .spawn(move || {
            let began = Instant::now();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&ctx)))
                .map_err(|payload| panic_message(&payload));
            // Give the lent facts back before answering, so the runner can take them back.
            drop(ctx);
            crate::timings::record(format!("probe {name}"), began.elapsed());
            // The receiver may be gone when we answered too late; nothing to do then.
            let _ = tx.send((i, result));
        })
}

/// The answers of `batch` until each has answered or the deadline (plus a little grace) has
/// passed, showing which are still running when progress is wanted; which answered.
fn collect_answers(
    batch: &[&Probe],
    opts: &Options,
    rx: &mpsc::Receiver<(usize, Result<Apply, String>)>,
    start: Instant,
    deadline: Instant,
    errors: &mut Vec<ProbeError>,
) -> (Vec<(&'static str, Apply)>, Vec<bool>) {
    let mut applies = Vec::new();
    let mut answered = vec![false; batch.len()];
    // A little grace beyond the deadline so a probe that honours it can hand its result over.
    let hard_deadline = deadline + Duration::from_millis(250);
    let mut shown = false;
    while answered.iter().any(|a| !a) {
        let now = Instant::now();
        let left = hard_deadline.saturating_duration_since(now);
        if let Some(progress) = opts.progress {
            if now.duration_since(start) >= PROGRESS_AFTER {
                let waiting: Vec<&str> = batch
                    .iter()
                    .zip(&answered)
                    .filter(|(_, done)| !**done)
                    .map(|(p, _)| p.name)
                    .collect();
                progress(&waiting, now.duration_since(start), opts.deadline);
                shown = true;
            }
        }
        // Wake at least every quarter second to keep the progress line current.
        let wait = if opts.progress.is_some() {
            left.min(Duration::from_millis(250))
        } else {
            left
        };
        match rx.recv_timeout(wait) {
            Ok((i, Ok(apply))) => {
                answered[i] = true;
                applies.push((batch[i].name, apply));
            }
            Ok((i, Err(msg))) => {
                answered[i] = true;
                errors.push(ProbeError::new(
                    batch[i].name,
                    format!("the probe failed unexpectedly (a bug in envdoctor): {msg}"),
                ));
            }
            Err(mpsc::RecvTimeoutError::Timeout) if !left.is_zero() => {}
            Err(_) => break,
        }
    }
    if let Some(progress) = opts.progress.filter(|_| shown) {
        progress(&[], Duration::ZERO, opts.deadline);
    }
    (applies, answered)
}

/// Whether a probe problem leaves the snapshot incomplete ([`ProbeError::is_incomplete`]).
pub fn is_incomplete(e: &ProbeError) -> bool {
    e.is_incomplete()
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(_: &Context) -> Apply {
        Box::new(|s: &mut Snapshot| {
            s.env
                .insert("QUICK".into(), "1".into())
                .map(drop)
                .unwrap_or(())
        })
    }
    fn stuck(_: &Context) -> Apply {
        // Stands for a read from a dead network mount: never answers.
        std::thread::sleep(Duration::from_secs(3600));
        Box::new(|_| ())
    }
    fn broken(ctx: &Context) -> Apply {
        let v: Vec<u8> = Vec::new();
        // An out-of-bounds index: a bug inside a probe must not take envdoctor down.
        let i = v.len() + ctx.opts.pids.len() + 3;
        let x = v[i];
        Box::new(move |s: &mut Snapshot| s.root = x.to_string())
    }
    fn sees_stage_one(ctx: &Context) -> Apply {
        let saw = ctx.earlier.env.contains_key("QUICK");
        Box::new(move |s| {
            s.env.insert("STAGE2_SAW_QUICK".into(), saw.to_string());
        })
    }

    #[test]
    fn a_stuck_probe_times_out_and_the_others_are_kept() {
        let mut opts = Options::new(Root::host(), Env::default());
        opts.deadline = Duration::from_millis(300);
        let started = Instant::now();
        let snap = collect_with(
            vec![
                Probe {
                    name: "quick",
                    stage: 1,
                    run: quick,
                },
                Probe {
                    name: "stuck",
                    stage: 1,
                    run: stuck,
                },
                Probe {
                    name: "late",
                    stage: 2,
                    run: sees_stage_one,
                },
            ],
            opts,
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(snap.env.get("QUICK").map(String::as_str), Some("1"));
        assert_eq!(
            snap.env.get("STAGE2_SAW_QUICK").map(String::as_str),
            Some("true")
        );
        assert_eq!(snap.probe_errors.len(), 1, "{:?}", snap.probe_errors);
        assert_eq!(snap.probe_errors[0].probe, "stuck");
        assert!(snap.probe_errors[0].message.contains("deadline"));
    }

    #[test]
    fn a_panicking_probe_becomes_a_probe_error() {
        let snap = collect_with(
            vec![Probe {
                name: "broken",
                stage: 1,
                run: broken,
            }],
            Options::new(Root::host(), Env::default()),
        );
        assert_eq!(snap.probe_errors.len(), 1);
        assert_eq!(snap.probe_errors[0].probe, "broken");
        assert!(snap.probe_errors[0].message.contains("index out of bounds"));
    }
}
