//! TensorFlow SavedModel directories: `saved_model.pb` (SavedModel → MetaGraphDef →
//! MetaInfoDef: `tensorflow_version`, `tensorflow_git_version`, tags, stripped op list),
//! `keras_metadata.pb` (layer class names), `fingerprint.pb`, and `variables/variables.index`.
//!
//! `saved_model.pb` can be hundreds of MB (embedded constants); only a bounded prefix is read,
//! which always holds MetaInfoDef (field 1 of the first MetaGraphDef, written first).

use super::proto::{self, Value};
use super::{keras, read_prefix, tf_ckpt};
use crate::root::Root;
use crate::snapshot::checkpoint::SavedModel;
use std::collections::BTreeSet;
use std::path::Path;

const PREFIX: u64 = 8 << 20;
const MAX_OPS: usize = 500;

/// Parse the bounded prefix of `saved_model.pb` into `sm`.
pub fn parse_saved_model_pb(buf: &[u8], sm: &mut SavedModel) -> Result<(), String> {
    let mut tags = BTreeSet::new();
    let mut ops = BTreeSet::new();
    let mut any = false;
    for f in proto::fields(buf) {
        let (n, v) = match f {
            Ok(x) => x,
            // A MetaGraphDef longer than the prefix: parse what we have of it.
            Err(_) if any => break,
            Err(e) => return Err(format!("saved_model.pb is not a SavedModel: {e}")),
        };
        any = true;
        if n != 2 {
            continue;
        }
        let Value::Bytes(mg) = v else { continue };
        sm.meta_graphs += 1;
        let Some(info) = tf_ckpt::first_bytes_field(mg, 1) else {
            continue;
        };
        for (n, v) in proto::fields(info).map_while(Result::ok) {
            match n {
                2 => {
                    if let Value::Bytes(oplist) = v {
                        for (m, op) in proto::fields(oplist).map_while(Result::ok) {
                            if let (1, Some(name)) = (
                                m,
                                op.as_bytes().and_then(|b| tf_ckpt::first_bytes_field(b, 1)),
                            ) {
                                if ops.len() < MAX_OPS {
                                    ops.insert(String::from_utf8_lossy(name).into_owned());
                                }
                            }
                        }
                    }
                }
                4 => {
                    if let Some(t) = v.as_string() {
                        tags.insert(t);
                    }
                }
                5 if sm.tensorflow_version.is_none() => sm.tensorflow_version = v.as_string(),
                6 if sm.tensorflow_git_version.is_none() => {
                    sm.tensorflow_git_version = v.as_string()
                }
                _ => {}
            }
        }
    }
    // A truncated prefix may end inside a MetaGraphDef: count it if we saw its start.
    if sm.meta_graphs == 0 {
        if let Some((2, _)) = first_key(buf) {
            sm.meta_graphs = 1;
        }
    }
    sm.tags = tags.into_iter().collect();
    sm.ops = ops.into_iter().collect();
    Ok(())
}

fn first_key(buf: &[u8]) -> Option<(u64, u64)> {
    let mut pos = 0;
    let k = proto::read_varint(buf, &mut pos).ok()?;
    Some((k >> 3, k & 7))
}

/// Keras layer class names in `keras_metadata.pb` (SavedMetadata.nodes[].metadata JSON).
pub fn keras_metadata_classes(buf: &[u8]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (n, v) in proto::fields(buf).map_while(Result::ok) {
        let (1, Value::Bytes(node)) = (n, v) else {
            continue;
        };
        let mut identifier = String::new();
        let mut meta = None;
        for (m, w) in proto::fields(node).map_while(Result::ok) {
            match m {
                4 => identifier = w.as_string().unwrap_or_default(),
                5 => meta = w.as_bytes(),
                _ => {}
            }
        }
        if !(identifier.starts_with("_tf_keras_layer")
            || identifier.starts_with("_tf_keras_network")
            || identifier.starts_with("_tf_keras_model")
            || identifier.starts_with("_tf_keras_sequential"))
        {
            continue;
        }
        if let Some(json) = meta.and_then(|m| serde_json::from_slice::<serde_json::Value>(m).ok()) {
            if let Some(c) = json.get("class_name").and_then(|c| c.as_str()) {
                out.insert(c.to_string());
            }
        }
    }
    out
}

/// Inspect the SavedModel directory `dir`.
pub fn inspect(root: &Root, dir: &Path) -> Result<SavedModel, String> {
    let mut sm = SavedModel::default();
    let pb = dir.join("saved_model.pb");
    let buf = read_prefix(root, &pb, PREFIX)?;
    parse_saved_model_pb(&buf, &mut sm)?;
    sm.fingerprint = root.is_file(&dir.join("fingerprint.pb"));
    let km = dir.join("keras_metadata.pb");
    sm.keras_metadata = root.is_file(&km);
    if sm.keras_metadata {
        if let Ok(b) = root.read_limited(&km, 64 << 20) {
            let classes = keras_metadata_classes(&b);
            sm.custom_layers = classes
                .iter()
                .filter(|c| !keras::is_builtin(c))
                .cloned()
                .collect();
            sm.layer_classes = classes.into_iter().collect();
        }
    }
    let index = dir.join("variables/variables.index");
    if root.is_file(&index) {
        sm.variables = tf_ckpt::inspect_prefix(root, &index).ok();
    }
    Ok(sm)
}
