//! The probe options every probing command shares (`check`, `snapshot`, `report`, `diagnose`,
//! `run`): their clap definition and their translation into [`crate::probe::Options`], checked.

use crate::probe::Options;
use crate::root::{Env, Root};
use crate::Error;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// Load every library again and read every large file again, neither reading nor writing
    /// the caches (by default an environment whose library files, loader variables and
    /// envdoctor build are unchanged since an earlier run reuses that run's load results,
    /// ~/.cache/envdoctor/load-v2, and facts read out of unchanged files, files-v1).
    #[arg(long)]
    pub no_load_cache: bool,
    /// Load NVML from this file instead of searching for libnvidia-ml.so.1.
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
    /// Inspect a running training process: which CUDA libraries it really loaded (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    /// Print where the time went (each probe, each stage) to stderr.
    #[arg(long)]
    pub timings: bool,
}

impl ProbeArgs {
    /// Turn the arguments into probe options, checking them.
    pub fn to_options(&self) -> Result<Options, Error> {
        if !(self.deadline.is_finite() && self.deadline > 0.0 && self.deadline <= 3600.0) {
            return Err(Error::input(
                "--deadline",
                format!(
                    "must be more than 0 and at most 3600 seconds, not {}",
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
        opts.no_load_cache = self.no_load_cache;
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
            // `--project .` is the directory itself, not `…/proj/.`.
            Some(p) => Some(crate::root::lexical_normalize(&to_machine(p))),
            None if root.is_host() => cwd.clone(),
            None => None,
        };
        opts.checkpoints = self.checkpoints.iter().map(|p| to_machine(p)).collect();
        Ok(opts)
    }

    /// For `check` and `report` (gates): a named --project, --checkpoint or --pid that is not
    /// there is a typo, not a clean machine (`snapshot` records what it finds as probe errors).
    pub fn check_named(&self, opts: &Options) -> Result<(), Error> {
        let root = &opts.root;
        let readable = |flag: &str, p: &Path, dir: bool| -> Result<(), Error> {
            let shown = format!("{flag} {}", p.display());
            let meta = root.metadata(p).map_err(|e| match e.is_not_found() {
                true => Error::input(&shown, "no such file or directory"),
                false => Error::input(&shown, e.to_string()),
            })?;
            if dir && !meta.is_dir() {
                return Err(Error::input(shown, "not a directory"));
            }
            let r = if meta.is_dir() {
                root.read_dir(p).map(drop)
            } else {
                root.open(p).map(drop)
            };
            r.map_err(|e| Error::input(shown, format!("cannot be read: {e}")))
        };
        if self.project.is_some() {
            if let Some(p) = &opts.project {
                readable("--project", p, true)?;
            }
        }
        for c in &opts.checkpoints {
            readable("--checkpoint", c, false)?;
        }
        for pid in &self.pids {
            if !root.is_dir(&PathBuf::from(format!("/proc/{pid}"))) {
                return Err(Error::input(
                    format!("--pid {pid}"),
                    "no such process (no /proc entry) on the probed machine",
                ));
            }
        }
        Ok(())
    }
}
