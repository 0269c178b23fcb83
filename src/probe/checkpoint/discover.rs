//! Finding checkpoints in a directory tree, bounded: at most [`Limits::depth`] levels,
//! [`Limits::max_files`] candidates and [`Limits::max_entries`] directory entries looked at.
//! Skips hidden directories (`.git`, `.venv`, ...), virtualenvs (directories holding
//! `pyvenv.cfg`), `node_modules`, `site-packages`, `__pycache__`, cache directories tagged with
//! `CACHEDIR.TAG` (cargo's `target/`) or holding a `.envdoctorignore` file (test fixtures, data
//! you never train from), and never follows a symlinked directory (no loops). A path named with
//! `--checkpoint` is always inspected.

use crate::root::Root;
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};

/// How far discovery goes.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// How many directory levels below the start are walked.
    pub depth: usize,
    /// The most checkpoint files reported.
    pub max_files: usize,
    /// The most directory entries looked at in all.
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            depth: 4,
            max_files: 200,
            max_entries: 20_000,
        }
    }
}

/// Something worth inspecting.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Candidate {
    /// A TF checkpoint `checkpoint` state file.
    TfState(PathBuf),
    /// A TF checkpoint index (`PREFIX.index`).
    TfIndex(PathBuf),
    /// A SavedModel directory.
    SavedModel(PathBuf),
    /// A Hugging Face model directory.
    HfDir(PathBuf),
    /// A single model file (sniffed by its magic bytes).
    File(PathBuf),
}

const SKIP_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "site-packages",
    "dist-packages",
    "__pycache__",
    ".hg",
    ".svn",
    ".tox",
    ".mypy_cache",
    ".cache",
];
const FILE_EXTS: &[&str] = &[
    "h5",
    "hdf5",
    "keras",
    "pt",
    "pth",
    "ckpt",
    "safetensors",
    "pkl",
    "pickle",
    "joblib",
    "tar",
    "onnx",
];

/// What `name` (a file name) is, when it is a checkpoint candidate.
pub fn classify_file(path: &Path) -> Option<Candidate> {
    let name = path.file_name()?.to_string_lossy();
    if name == "checkpoint" {
        return Some(Candidate::TfState(path.to_path_buf()));
    }
    if name.ends_with(".index") {
        return Some(Candidate::TfIndex(path.to_path_buf()));
    }
    // transformers' Trainer writes `training_args.bin` with torch.save (a pickled dataclass).
    if (name.starts_with("pytorch_model") && name.ends_with(".bin")) || name == "training_args.bin"
    {
        return Some(Candidate::File(path.to_path_buf()));
    }
    let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
    FILE_EXTS
        .contains(&ext.as_str())
        .then(|| Candidate::File(path.to_path_buf()))
}

/// Directories that hold no checkpoints of the project: the SKIP_DIRS names, hidden directories
/// (`.git`, `.venv`, `.cache`, ...), cache directories tagged with `CACHEDIR.TAG` (cargo's
/// `target/`, ...) and directories a user marked with a `.envdoctorignore` file.
fn skip_dir(root: &Root, dir: &Path, name: &str) -> bool {
    SKIP_DIRS.contains(&name)
        || name.starts_with('.')
        || root.exists(&dir.join("CACHEDIR.TAG"))
        || root.exists(&dir.join(IGNORE_MARKER))
}

/// A file whose presence keeps project discovery out of its directory.
pub const IGNORE_MARKER: &str = ".envdoctorignore";

/// Walk `dir` within `limits`, appending candidates.
pub fn walk(
    root: &Root,
    dir: &Path,
    limits: Limits,
    out: &mut Vec<Candidate>,
    errors: &mut Vec<ProbeError>,
) {
    let mut entries_seen = 0usize;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let entries = match root.read_dir(&d) {
            Ok(e) => e,
            Err(e) => {
                errors.push(ProbeError::from_root("checkpoint", &e));
                continue;
            }
        };
        let has = |n: &str| {
            entries
                .iter()
                .any(|p| p.file_name().is_some_and(|f| f == n))
        };
        if depth > 0 && has("pyvenv.cfg") {
            continue;
        }
        let saved_model = has("saved_model.pb");
        if saved_model {
            out.push(Candidate::SavedModel(d.clone()));
        }
        let weights = entries.iter().any(|p| {
            p.file_name()
                .is_some_and(|f| super::hf::is_weight_file(&f.to_string_lossy()))
        });
        if has("config.json") && weights {
            out.push(Candidate::HfDir(d.clone()));
        }
        for p in entries {
            entries_seen += 1;
            if entries_seen > limits.max_entries || out.len() >= limits.max_files {
                errors.push(ProbeError::at(
                    "checkpoint",
                    dir,
                    format!(
                        "checkpoint discovery stopped after {} entries / {} candidates; name checkpoints with --checkpoint",
                        limits.max_entries, limits.max_files
                    ),
                ));
                return;
            }
            let Ok(md) = root.symlink_metadata(&p) else {
                continue;
            };
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if md.is_dir() {
                let skip = depth + 1 >= limits.depth
                    || (saved_model && name == "variables")
                    || skip_dir(root, &p, &name);
                if !skip {
                    stack.push((p, depth + 1));
                }
                continue;
            }
            // Regular files, and symlinks to files (never to directories).
            if md.file_type().is_symlink() && !root.is_file(&p) {
                continue;
            }
            if let Some(c) = classify_file(&p) {
                out.push(c);
            }
        }
    }
}
