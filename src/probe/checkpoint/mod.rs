//! The checkpoint probe (registered as `checkpoint`): what each checkpoint holds, which
//! framework version wrote it, and what loading it needs — read statically from headers and
//! indexes only (never a data shard, never an unpickle), in bounded memory.
//!
//! Inputs: `--checkpoint PATH` (files, directories, or TF prefixes) and bounded discovery in
//! the project directory ([`discover`]). Each format has its own module: [`tf_index`] /
//! [`tf_ckpt`] (TF checkpoints and the `checkpoint` state file), [`saved_model`], [`keras`]
//! (+ [`hdf5`]), [`torch`] (+ [`torch_allowlist`]), [`safetensors`], [`hf`], [`onnx`]; [`proto`] is the
//! protobuf wire reader they share. A file that cannot be read becomes an entry with `error`
//! set and a `probe_errors[]` entry naming it.

pub mod discover;
pub mod hdf5;
pub mod hf;
pub mod keras;
pub mod onnx;
pub mod pickle;
pub mod proto;
pub mod references;
pub mod safetensors;
pub mod saved_model;
pub mod tf_ckpt;
pub mod tf_index;
pub mod torch;
pub mod torch_allowlist;

use super::{Apply, Context};
use crate::root::Root;
use crate::snapshot::{Checkpoint, ProbeError};
use discover::{Candidate, Limits};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

const PROBE: &str = "checkpoint";

/// An inspected checkpoint and what orders TF prefixes in time.
#[derive(Clone, Debug)]
pub struct Found {
    /// The checkpoint as the snapshot records it.
    pub entry: Checkpoint,
    /// Its modification time, when the file system gives one.
    pub mtime: Option<SystemTime>,
    /// The global step in a TF prefix name (`model.ckpt-5049` → 5049).
    pub step: Option<u64>,
}

/// Read at most `limit` bytes from the start of a regular file (a prefix, never an error for a
/// larger file).
pub fn read_prefix(root: &Root, path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let f = root.open(path).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    f.take(limit)
        .read_to_end(&mut buf)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(buf)
}

/// The probe entry point.
pub fn probe(ctx: &Context) -> Apply {
    let mut errors = Vec::new();
    let mut candidates = Vec::new();
    let root = ctx.root();
    for p in &ctx.opts.checkpoints {
        named(root, p, &mut candidates, &mut errors);
    }
    if let Some(project) = &ctx.opts.project {
        if root.is_dir(project) {
            discover::walk(
                root,
                project,
                Limits::default(),
                &mut candidates,
                &mut errors,
            );
        }
    }
    let found = inspect_all(root, candidates, &mut errors, ctx);
    Box::new(move |snap| {
        snap.checkpoints.extend(found);
        snap.probe_errors.extend(errors);
    })
}

/// Turn a `--checkpoint` argument into candidates.
fn named(root: &Root, p: &Path, out: &mut Vec<Candidate>, errors: &mut Vec<ProbeError>) {
    if root.is_dir(p) {
        discover::walk(root, p, Limits::default(), out, errors);
        return;
    }
    // Regular files, and FIFOs/devices too: opening refuses those with an error naming them.
    if root.metadata(p).is_ok() {
        out.push(discover::classify_file(p).unwrap_or_else(|| Candidate::File(p.to_path_buf())));
        return;
    }
    // A TF prefix (`model.ckpt-5049`) names no file itself.
    let index = PathBuf::from(format!("{}.index", p.as_os_str().to_string_lossy()));
    if root.is_file(&index) {
        out.push(Candidate::TfIndex(index));
        return;
    }
    if let Err(e) = root.metadata(p) {
        errors.push(ProbeError::at(PROBE, p, format!("--checkpoint: {e}")));
    }
}

/// Inspect every candidate (deduplicated), then the TF state files, which need the prefixes.
pub fn inspect_all(
    root: &Root,
    candidates: Vec<Candidate>,
    errors: &mut Vec<ProbeError>,
    ctx: &Context,
) -> Vec<Checkpoint> {
    let unique: BTreeSet<Candidate> = candidates.into_iter().collect();
    let mut found: Vec<Found> = Vec::new();
    let mut states = Vec::new();
    for c in unique {
        if ctx.remaining().is_zero() {
            errors.push(ProbeError::new(
                PROBE,
                "deadline reached; remaining checkpoints not inspected",
            ));
            break;
        }
        match c {
            Candidate::TfState(p) => states.push(p),
            other => found.push(inspect_one_by(root, &other, ctx.deadline)),
        }
    }
    for s in states {
        let dir = s.parent().unwrap_or(Path::new("/")).to_path_buf();
        let entry = tf_ckpt::state_entry(root, &dir, &s, &mut found);
        found.push(Found {
            entry,
            mtime: None,
            step: None,
        });
    }
    let mut out = Vec::new();
    for f in found {
        if let Some(err) = &f.entry.error {
            errors.push(ProbeError::at(PROBE, &f.entry.path, err.clone()));
        }
        out.push(f.entry);
    }
    out
}

fn step_of(prefix: &str) -> Option<u64> {
    let tail = prefix.rsplit(['-', '_']).next()?;
    tail.parse().ok()
}

/// Inspect one candidate into an entry (with `error` set when it could not be read).
pub fn inspect_one(root: &Root, c: &Candidate) -> Found {
    inspect_one_by(root, c, Instant::now() + super::DEFAULT_DEADLINE)
}

/// [`inspect_one`], with walks of long pickles stopped at `deadline`.
pub fn inspect_one_by(root: &Root, c: &Candidate, deadline: Instant) -> Found {
    let (path, format) = match c {
        Candidate::TfIndex(p) => {
            let s = p.to_string_lossy();
            (
                PathBuf::from(s.strip_suffix(".index").unwrap_or(&s).to_string()),
                "tf-checkpoint",
            )
        }
        Candidate::SavedModel(p) => (p.clone(), "tf-saved-model"),
        Candidate::HfDir(p) => (p.clone(), "hf-directory"),
        Candidate::File(p) | Candidate::TfState(p) => (p.clone(), "unknown"),
    };
    let mut entry = Checkpoint {
        path: path.to_string_lossy().into_owned(),
        format: format.to_string(),
        ..Default::default()
    };
    let mut found = Found {
        mtime: None,
        step: None,
        entry: Checkpoint::default(),
    };
    let result: Result<(), String> = match c {
        Candidate::TfIndex(index) => {
            found.mtime = root.metadata(index).ok().and_then(|m| m.modified().ok());
            found.step = step_of(&entry.path);
            entry.producer = Some("tensorflow".into());
            tf_ckpt::inspect_prefix(root, index).map(|tf| entry.tf = Some(tf))
        }
        Candidate::SavedModel(dir) => {
            entry.producer = Some("tensorflow".into());
            saved_model::inspect(root, dir).map(|sm| {
                entry.producer_version = sm.tensorflow_version.clone();
                entry.saved_model = Some(sm);
            })
        }
        Candidate::HfDir(dir) => hf::inspect(root, dir).map(|hf| {
            if let Some(hf) = hf {
                entry.producer = Some("transformers".into());
                entry.producer_version = hf.transformers_version.clone();
                entry.hf = Some(hf);
            }
        }),
        Candidate::File(p) | Candidate::TfState(p) => inspect_file(root, p, &mut entry, deadline),
    };
    if let Err(e) = result {
        entry.error = Some(e);
    }
    found.entry = entry;
    found
}

/// File names that hold plain pickles (joblib's among them), whatever their first byte.
const PICKLE_EXTS: &[&str] = &[".pkl", ".pickle", ".joblib"];

/// File names `torch.save` output goes by.
const TORCH_EXTS: &[&str] = &[".pt", ".pth", ".bin", ".ckpt", ".tar"];

/// Sniff a single file by its first bytes and inspect it.
fn inspect_file(
    root: &Root,
    p: &Path,
    entry: &mut Checkpoint,
    deadline: Instant,
) -> Result<(), String> {
    let file = root.open(p).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut head = [0u8; 64];
    let n = {
        use std::os::unix::fs::FileExt;
        file.read_at(&mut head, 0).map_err(|e| e.to_string())?
    };
    let head = &head[..n];
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.ends_with(".safetensors") {
        return inspect_safetensors(&file, len, entry);
    }
    if name.ends_with(".onnx") {
        return inspect_onnx(&file, len, entry);
    }
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return inspect_zip(root, p, &name, file, entry);
    }
    if hdf5::find_superblock(&file, len).is_some() {
        return inspect_hdf5(&file, len, entry);
    }
    let pickle_name = PICKLE_EXTS.iter().any(|e| name.ends_with(e));
    let joblib_packed = name.ends_with(".joblib") && references::is_compressed_joblib(head);
    if head.first() == Some(&0x80) || pickle_name || joblib_packed {
        return inspect_pickle(root, p, len, head, &name, entry, deadline);
    }
    if head.starts_with(b"version https://git-lfs") {
        return Err("a Git LFS pointer, not the checkpoint itself (run `git lfs pull`)".into());
    }
    Err(format!(
        "unrecognised checkpoint format (first bytes {:02x?})",
        &head[..head.len().min(8)]
    ))
}

/// A `.safetensors` file; its `format` metadata names the producer.
fn inspect_safetensors(file: &File, len: u64, entry: &mut Checkpoint) -> Result<(), String> {
    entry.format = "safetensors".into();
    let st = safetensors::inspect(file, len)?;
    if let Some(f) = st.metadata.get("format") {
        entry.producer = Some(match f.as_str() {
            "pt" => "torch".to_string(),
            "tf" => "tensorflow".to_string(),
            other => other.to_string(),
        });
    }
    entry.safetensors = Some(st);
    Ok(())
}

/// An `.onnx` model.
fn inspect_onnx(file: &File, len: u64, entry: &mut Checkpoint) -> Result<(), String> {
    entry.format = "onnx".into();
    let o = onnx::inspect(file, len)?;
    entry.producer = o.producer_name.clone();
    entry.producer_version = o.producer_version.clone();
    entry.onnx = Some(o);
    Ok(())
}

/// A zip: Keras v3 zips carry metadata.json at the top; torch zips ARCHIVE/data.pkl.
fn inspect_zip(
    root: &Root,
    p: &Path,
    name: &str,
    file: File,
    entry: &mut Checkpoint,
) -> Result<(), String> {
    let probe_zip = zip::ZipArchive::new(root.open(p).map_err(|e| e.to_string())?)
        .map_err(|e| format!("not a readable zip archive: {e}"))?;
    let is_keras = probe_zip
        .file_names()
        .any(|n| n.is_ok_and(|n| n == "metadata.json"));
    drop(probe_zip);
    if is_keras || name.ends_with(".keras") {
        entry.format = "keras-v3".into();
        let (k, refs) = keras::inspect_v3(file)?;
        entry.producer = Some("keras".into());
        entry.producer_version = k.keras_version.clone();
        entry.keras = Some(k);
        entry.references = refs;
    } else {
        entry.format = "torch-zip".into();
        entry.producer = Some("torch".into());
        let t = torch::inspect_zip(file)?;
        entry.references = Some(references::from_globals(&t.globals, t.pickle_protocol));
        entry.torch = Some(t);
    }
    Ok(())
}

/// An HDF5 file: a Keras `.h5` model, or plain HDF5.
fn inspect_hdf5(file: &File, len: u64, entry: &mut Checkpoint) -> Result<(), String> {
    entry.format = "keras-h5".into();
    match keras::inspect_h5(file, len)? {
        Some((k, refs)) => {
            entry.producer = Some("keras".into());
            entry.producer_version = k.keras_version.clone();
            entry.keras = Some(k);
            entry.references = refs;
        }
        None => entry.format = "hdf5".into(),
    }
    Ok(())
}

/// A pickle stream: a legacy `torch.save` file when its first pickle is torch's magic number,
/// else a plain pickle (`joblib` when joblib wrote it: a `.joblib` name, or its
/// `NumpyArrayWrapper` inside).
fn inspect_pickle(
    root: &Root,
    p: &Path,
    len: u64,
    head: &[u8],
    name: &str,
    entry: &mut Checkpoint,
    deadline: Instant,
) -> Result<(), String> {
    if head.first() == Some(&0x80) {
        // A torch name keeps the torch reading (and its "Invalid magic number" error).
        let torch_name = TORCH_EXTS.iter().any(|e| name.ends_with(e));
        let first = read_prefix(root, p, 4096)?;
        if torch_name
            || torch::scan(&first).is_ok_and(|s| s.first_long == Some(torch::LEGACY_MAGIC))
        {
            return inspect_torch_legacy(root, p, len, entry);
        }
    }
    let refs = references::inspect_pickle(root, p, head, deadline)?;
    let joblib = name.ends_with(".joblib")
        || refs
            .globals
            .iter()
            .any(|g| g.ends_with(".NumpyArrayWrapper"));
    entry.format = if joblib { "joblib" } else { "pickle" }.into();
    entry.references = Some(refs);
    Ok(())
}

/// A legacy (pre-zip) torch pickle. The pickles come first and the raw storages after them:
/// read a growing prefix (1 MiB, 8 MiB, 64 MiB) until the pickles are complete, never the
/// whole file.
fn inspect_torch_legacy(
    root: &Root,
    p: &Path,
    len: u64,
    entry: &mut Checkpoint,
) -> Result<(), String> {
    entry.format = "torch-legacy".into();
    entry.producer = Some("torch".into());
    let mut limit = 1u64 << 20;
    loop {
        let buf = read_prefix(root, p, limit)?;
        match torch::inspect_legacy(&buf) {
            Err(e) if e.contains("truncated") && limit < len && limit < torch::MAX_PICKLE => {
                limit *= 8;
            }
            r => {
                let t = r?;
                entry.references = Some(references::from_globals(&t.globals, t.pickle_protocol));
                entry.torch = Some(t);
                return Ok(());
            }
        }
    }
}
