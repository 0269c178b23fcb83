//! The command line: argument definitions (clap derive) and dispatch to the library.
//!
//! Each subcommand's work lives in the library; this module only turns arguments into
//! [`crate::probe::Options`] and calls it. Exit codes: 0 success / nothing to report, 1 findings or
//! drift, 2 envdoctor could not do its job.

use crate::probe::{self, Options};
use crate::report::write_stdout;
use crate::root::{Env, Root};
use crate::Error;
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  envdoctor snapshot                      facts about this machine, as JSON on stdout
  envdoctor snapshot -o today.json        ... saved to a file
  envdoctor snapshot --project ~/proj     also the project's venvs and IDE interpreters
  envdoctor snapshot --root fixtures/machines/pyenv-shims
                                          probe a fake machine laid out under a directory

Exit codes: 0 success, 1 findings (check) or drift (compare), 2 envdoctor could not do its job.";

const COMPARE_ABOUT: &str = "\
Compare snapshots written by `envdoctor snapshot`: a semantic diff, not a JSON diff.

Two snapshots (A, B): every fact that differs, ranked: first rule verdicts that change (a finding
that fires on B and not on A: \"B will hit ...\"), then ML and CUDA facts (torch, tensorflow, jax,
numpy, nvidia-* and other ML packages, the interpreter version, CUDA toolkits, cuDNN, the driver,
resolved libraries, GPUs), then the rest. Package changes say upgrade or downgrade and how big
(major, minor, patch, pre-release, local tag such as +cu118 -> +cu121) under PEP 440.
Interpreters are matched by role (the PATH python, VIRTUAL_ENV, the project's venv, the IDE's, a
conda env by name, a pyenv version), not by absolute path, and home directories are written ~,
so machines with different users line up; interpreters that match nothing are listed.

Three or more snapshots (a fleet): for each fact, the majority value and the machines that differ
from it, grouped by fact and by machine.

Volatile facts (collected_at, live GPU and host state, pids) and machine identity (hostname, GPU
UUIDs) are ignored unless --all.";

const COMPARE_EXAMPLES: &str = "\
Examples:
  envdoctor snapshot -o monday.json; ...; envdoctor snapshot -o friday.json
  envdoctor compare monday.json friday.json           what changed on this machine
  envdoctor compare good.json bad.json --only packages,cuda
  envdoctor compare node*.json --format markdown      a fleet, for a pull-request comment
  envdoctor compare a.json b.json --format json | jq '.changes[] | select(.rank == \"ml\")'

Exit codes (as diff): 0 no drift in what is compared, 1 drift, 2 trouble (a file missing, empty,
truncated, not a snapshot, or from a newer envdoctor). The JSON format is described by
schema/compare.schema.json.";

/// A doctor for machine-learning training machines: finds the environment drift that breaks
/// training (wrong interpreter, missing CUDA libraries, busy GPUs, stale checkpoints) before
/// the job starts.
#[derive(Debug, Parser)]
#[command(name = "envdoctor", version, about, long_about = None, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Probe the machine and write every fact as JSON (stdout by default).
    Snapshot(SnapshotArgs),
    /// Compare snapshots: the drift between two machines or two days, or across a fleet.
    #[command(long_about = COMPARE_ABOUT, after_help = COMPARE_EXAMPLES)]
    Compare(crate::compare::cli::CompareArgs),
    /// Internal: query NVML and stream JSON lines (run by the gpu probe in a child process).
    #[command(name = "__nvml-child", hide = true)]
    NvmlChild(NvmlChildArgs),
}

/// `envdoctor __nvml-child` (internal).
#[derive(Debug, Args)]
pub struct NvmlChildArgs {
    /// The NVML library to load (default: `libnvidia-ml.so.1` by the loader's search).
    #[arg(long, value_name = "PATH")]
    pub lib: Option<PathBuf>,
}

/// Options shared by every command that probes a machine.
#[derive(Debug, Args, Clone)]
pub struct ProbeArgs {
    /// The directory that plays the machine's `/` (for probing a copied or fake machine).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// The project directory: its venvs, IDE settings and checkpoints are probed. Default: the
    /// current directory (none with --root).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// A checkpoint file or directory to inspect (repeatable).
    #[arg(long = "checkpoint", value_name = "PATH")]
    pub checkpoints: Vec<PathBuf>,
    /// Seconds each probe may take before it is reported as timed out.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub deadline: f64,
    /// Never load shared libraries (not even in a child process).
    #[arg(long)]
    pub no_load: bool,
    /// Load NVML from this file instead of searching for libnvidia-ml.so.1.
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
    /// Inspect a running training process: which CUDA libraries it really loaded (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
}

/// `envdoctor snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Probe options.
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Write the snapshot here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl ProbeArgs {
    /// Turn the arguments into probe options, checking them.
    pub fn to_options(&self) -> Result<Options, Error> {
        if !(self.deadline.is_finite() && self.deadline > 0.0 && self.deadline <= 3600.0) {
            return Err(Error::input(
                "--deadline",
                format!(
                    "{} is not a number of seconds between 0 and 3600",
                    self.deadline
                ),
            ));
        }
        let root_dir = if self.root == Path::new("/") {
            PathBuf::from("/")
        } else {
            std::fs::canonicalize(&self.root).map_err(|e| {
                Error::input(self.root.display().to_string(), format!("--root: {e}"))
            })?
        };
        if !root_dir.is_dir() {
            return Err(Error::input(
                self.root.display().to_string(),
                "--root must be a directory",
            ));
        }
        let root = Root::new(root_dir);
        let mut opts = Options::new(root.clone(), Env::from_process());
        opts.deadline = Duration::from_secs_f64(self.deadline);
        opts.no_load = self.no_load;
        opts.nvml_lib = self.nvml_lib.clone();
        opts.pids = self.pids.clone();
        let cwd = std::env::current_dir().ok();
        // With the real root, relative paths are relative to the current directory; with --root
        // they are machine paths inside the root (relative ones taken from its `/`).
        let to_machine = |p: &Path| -> PathBuf {
            if p.is_absolute() {
                p.to_path_buf()
            } else if root.is_host() {
                cwd.clone().unwrap_or_else(|| PathBuf::from("/")).join(p)
            } else {
                Path::new("/").join(p)
            }
        };
        opts.project = match &self.project {
            Some(p) => Some(to_machine(p)),
            None if root.is_host() => cwd.clone(),
            None => None,
        };
        opts.checkpoints = self.checkpoints.iter().map(|p| to_machine(p)).collect();
        Ok(opts)
    }
}

/// Run a parsed command line; returns the exit code.
pub fn run(cli: Cli) -> Result<i32, Error> {
    match cli.command {
        Command::Snapshot(args) => snapshot(args),
        Command::Compare(args) => crate::compare::cli::run(args),
        Command::NvmlChild(args) => Ok(probe::gpu::child::run(args.lib.as_deref())),
    }
}

fn snapshot(args: SnapshotArgs) -> Result<i32, Error> {
    let opts = args.probe.to_options()?;
    let snap = probe::collect(opts);
    let json = snap.to_json();
    match &args.output {
        Some(path) => std::fs::write(path, json)
            .map_err(|e| Error::input(path.display().to_string(), format!("cannot write: {e}")))?,
        None => {
            write_stdout(&json).map_err(|e| Error::other(format!("cannot write to stdout: {e}")))?
        }
    }
    Ok(0)
}
