//! TensorFlow checkpoints as a user sees them: a prefix (`model.ckpt-5049`) with its index,
//! data shards and optional `.meta`, and the `checkpoint` state file that names the latest one.
//!
//! Turns a parsed index ([`super::tf_index`]) into the facts rules need: object-based or
//! name-based, top-level scopes (the model family), RNN key-naming era, optimizer slots, shard
//! presence. Also groups the prefixes of one directory into families and says whether the
//! state file's `latest` points at a different family than the newest checkpoint.

use super::tf_index::{self, Bundle};
use super::{proto, Found};
use crate::root::Root;
use crate::snapshot::checkpoint::{Checkpoint, Tensor, TfCheckpoint, TfCheckpointState};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The key TF2's object-based saver writes (`trackable/constants.py` `OBJECT_GRAPH_PROTO_KEY`).
pub const OBJECT_GRAPH_KEY: &str = "_CHECKPOINTABLE_OBJECT_GRAPH";
const MAX_TENSORS: usize = 200;

/// Keys that say nothing about which model a checkpoint holds.
fn is_bookkeeping(first: &str) -> bool {
    matches!(
        first,
        OBJECT_GRAPH_KEY | "global_step" | "beta1_power" | "beta2_power" | "save_counter"
    ) || first.starts_with("beta1_power_")
        || first.starts_with("beta2_power_")
}

const SLOT_NAMES: &[&str] = &[
    "Adam",
    "Adam_1",
    "Momentum",
    "RMSProp",
    "RMSProp_1",
    "Adagrad",
    "Adadelta",
    "Adadelta_1",
    "Ftrl",
    "Ftrl_1",
    "ExponentialMovingAverage",
];

/// Inspect the checkpoint whose index is `index` (a machine path ending in `.index`).
pub fn inspect_prefix(root: &Root, index: &Path) -> Result<TfCheckpoint, String> {
    let file = root.open(index).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let bundle = tf_index::read_bundle(&file, len)?;
    let prefix = strip_suffix(index, ".index");
    Ok(summarize(root, &prefix, &bundle))
}

fn strip_suffix(p: &Path, suffix: &str) -> PathBuf {
    let s = p.as_os_str().to_string_lossy();
    PathBuf::from(s.strip_suffix(suffix).unwrap_or(&s).to_string())
}

/// The facts of one parsed bundle. `prefix` locates the data shards and `.meta`.
pub fn summarize(root: &Root, prefix: &Path, bundle: &Bundle) -> TfCheckpoint {
    let header = bundle.header.clone().unwrap_or_default();
    let mut ck = TfCheckpoint {
        tensor_count: bundle.entries.len() as u64,
        num_shards: header.num_shards,
        endianness: if header.big_endian { "big" } else { "little" }.into(),
        bundle_version: header.version,
        ..Default::default()
    };
    let mut scopes = BTreeSet::new();
    let mut slots = BTreeSet::new();
    let mut old_rnn = Vec::new();
    let mut new_rnn = Vec::new();
    for e in &bundle.entries {
        if e.name == OBJECT_GRAPH_KEY {
            ck.object_based = true;
        }
        let parts: Vec<&str> = e.name.split('/').collect();
        let first = parts.first().copied().unwrap_or("");
        if !is_bookkeeping(first) && !first.is_empty() {
            scopes.insert(first.to_string());
        }
        // TF1 slots: `var/Adam`; TF2 object-based slots: `.../.OPTIMIZER_SLOT/.../m/...`.
        if let Some(last) = parts.last() {
            if parts.len() > 1 && SLOT_NAMES.contains(last) {
                slots.insert(last.to_string());
            }
        }
        if let Some(i) = parts.iter().position(|p| *p == ".OPTIMIZER_SLOT") {
            if let Some(slot) = parts.get(i + 3) {
                slots.insert(format!("OPTIMIZER_SLOT:{slot}"));
            }
        }
        // RNN cell variables: `.../lstm_cell/weights` (TF < 1.2) vs `.../lstm_cell/kernel`.
        let in_cell = parts.iter().any(|p| {
            p.ends_with("lstm_cell") || p.ends_with("gru_cell") || p.ends_with("rnn_cell")
        });
        if in_cell {
            let var = parts
                .iter()
                .rev()
                .find(|p| !SLOT_NAMES.contains(p))
                .copied()
                .unwrap_or("");
            match var {
                "weights" | "biases" => old_rnn.push(e.name.clone()),
                "kernel" | "bias" => new_rnn.push(e.name.clone()),
                _ => {}
            }
        }
        if ck.tensors.len() < MAX_TENSORS {
            ck.tensors.push(Tensor {
                name: e.name.clone(),
                dtype: tf_index::dtype_name(e.dtype),
                shape: e.shape.clone(),
            });
        } else {
            ck.tensors_truncated = true;
        }
    }
    if !old_rnn.is_empty() {
        ck.rnn_key_naming = Some("weights_biases".into());
        ck.rnn_keys = old_rnn.into_iter().take(8).collect();
    } else if !new_rnn.is_empty() {
        ck.rnn_key_naming = Some("kernel_bias".into());
        ck.rnn_keys = new_rnn.into_iter().take(8).collect();
    }
    ck.scopes = scopes.into_iter().collect();
    ck.family = ck.scopes.join("+");
    ck.optimizer_slots = slots.into_iter().collect();
    check_shards(root, prefix, bundle, &mut ck);
    ck.meta_tensorflow_version = meta_version(root, prefix);
    ck
}

fn check_shards(root: &Root, prefix: &Path, bundle: &Bundle, ck: &mut TfCheckpoint) {
    let n = ck.num_shards.max(1);
    // Cap the shards we stat: a corrupt header must not make us stat a billion files.
    for shard in 0..n.min(4096) {
        let name = format!(
            "{}.data-{shard:05}-of-{n:05}",
            prefix.as_os_str().to_string_lossy()
        );
        let path = PathBuf::from(&name);
        match root.metadata(&path) {
            Ok(md) => {
                let need = bundle
                    .entries
                    .iter()
                    .filter(|e| e.shard == shard)
                    .map(|e| e.offset.saturating_add(e.size))
                    .max()
                    .unwrap_or(0);
                if md.len() < need {
                    ck.short_shards.push(name);
                }
            }
            Err(_) => ck.missing_shards.push(name),
        }
    }
}

/// `MetaGraphDef.meta_info_def.tensorflow_version` from `PREFIX.meta`, read from a bounded
/// prefix of the file (MetaInfoDef is field 1, written first).
fn meta_version(root: &Root, prefix: &Path) -> Option<String> {
    let meta = PathBuf::from(format!("{}.meta", prefix.as_os_str().to_string_lossy()));
    let buf = super::read_prefix(root, &meta, 4 << 20).ok()?;
    let info = first_bytes_field(&buf, 1)?;
    let mut out = None;
    for (n, v) in proto::fields(info).map_while(Result::ok) {
        if n == 5 {
            out = v.as_string();
        }
    }
    out
}

/// The first length-delimited field `number` of a message (lenient about a truncated tail).
pub fn first_bytes_field(buf: &[u8], number: u32) -> Option<&[u8]> {
    for (n, v) in proto::fields(buf).map_while(Result::ok) {
        if n == number {
            return v.as_bytes();
        }
    }
    None
}

/// Parse a `checkpoint` state file (text proto) into (latest, all).
pub fn parse_state(text: &str) -> (Option<String>, Vec<String>) {
    let mut latest = None;
    let mut all = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(value) = unquote(rest.trim()) else {
            continue;
        };
        match key.trim() {
            "model_checkpoint_path" => latest = Some(value),
            "all_model_checkpoint_paths" => all.push(value),
            _ => {}
        }
    }
    (latest, all)
}

fn unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// Resolve a prefix named in a state file in `dir` the way `tf.train.latest_checkpoint` does:
/// relative to the directory; an absolute path from another machine falls back to its file
/// name inside the directory.
pub fn resolve_prefix(root: &Root, dir: &Path, written: &str) -> PathBuf {
    let p = Path::new(written);
    let index_of = |q: &Path| PathBuf::from(format!("{}.index", q.as_os_str().to_string_lossy()));
    if p.is_absolute() {
        if root.is_file(&index_of(p)) {
            return p.to_path_buf();
        }
        if let Some(name) = p.file_name() {
            return dir.join(name);
        }
        p.to_path_buf()
    } else {
        dir.join(p)
    }
}

/// The state-file entry for `state` (the `checkpoint` file in `dir`), given the prefixes of the
/// directory already inspected (`found`), whose `is_latest` it sets.
pub fn state_entry(root: &Root, dir: &Path, state: &Path, found: &mut [Found]) -> Checkpoint {
    let mut entry = Checkpoint {
        path: state.to_string_lossy().into_owned(),
        format: "tf-checkpoint-state".into(),
        producer: Some("tensorflow".into()),
        ..Default::default()
    };
    let text = match root.read_limited(state, 1 << 20) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            entry.error = Some(e.to_string());
            return entry;
        }
    };
    let (latest, all) = parse_state(&text);
    let mut st = TfCheckpointState {
        all,
        ..Default::default()
    };
    let in_dir = |f: &Found| Path::new(&f.entry.path).parent() == Some(dir);
    let mut families = BTreeSet::new();
    // Newest: the highest global step in the prefix names (`model.ckpt-5049`), then the index
    // file's mtime (a fresh clone or copy resets mtimes; step numbers survive).
    type Order = (Option<u64>, Option<std::time::SystemTime>);
    let mut newest: Option<(Order, String)> = None;
    for f in found.iter().filter(|f| in_dir(f)) {
        if let Some(tf) = &f.entry.tf {
            families.insert(tf.family.clone());
            let key = (f.step, f.mtime);
            if newest.as_ref().is_none_or(|(k, _)| key > *k) {
                newest = Some((key, tf.family.clone()));
            }
        }
    }
    if let Some(l) = &latest {
        let resolved = resolve_prefix(root, dir, l);
        let resolved_s = resolved.to_string_lossy().into_owned();
        st.latest_exists = root.is_file(&PathBuf::from(format!("{resolved_s}.index")));
        for f in found.iter_mut() {
            let here = in_dir(f);
            if let Some(tf) = f.entry.tf.as_mut() {
                if here || f.entry.path == resolved_s {
                    let is = f.entry.path == resolved_s;
                    tf.is_latest = Some(is);
                    if is {
                        st.latest_family = Some(tf.family.clone());
                    }
                }
            }
        }
        st.latest_resolved = Some(resolved_s);
    }
    st.latest = latest;
    st.mixed_families = families.len() > 1;
    st.families = families.into_iter().collect();
    st.newest_family = newest.map(|(_, f)| f);
    st.latest_is_other_family = st.mixed_families
        && st.latest_family.is_some()
        && st.newest_family.is_some()
        && st.latest_family != st.newest_family;
    entry.tf_state = Some(st);
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_state_file_with_escapes() {
        let text = "model_checkpoint_path: \"/output/ckpt/model.ckpt-5049\"\n\
                    all_model_checkpoint_paths: \"model.ckpt-10\"\n\
                    all_model_checkpoint_paths: \"C:\\\\ckpt\\\\model.ckpt-5049\"\n\
                    garbage line\n";
        let (latest, all) = parse_state(text);
        assert_eq!(latest.as_deref(), Some("/output/ckpt/model.ckpt-5049"));
        assert_eq!(all, ["model.ckpt-10", "C:\\ckpt\\model.ckpt-5049"]);
    }

    #[test]
    fn absolute_latest_from_another_machine_falls_back_to_the_directory() {
        let root = Root::host();
        let dir = Path::new("/nonexistent-envdoctor-dir");
        assert_eq!(
            resolve_prefix(&root, dir, "/output/ckpt/model.ckpt-5049"),
            dir.join("model.ckpt-5049")
        );
        assert_eq!(resolve_prefix(&root, dir, "m-1"), dir.join("m-1"));
    }
}
