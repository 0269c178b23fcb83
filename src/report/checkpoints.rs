//! One line on a checkpoint: its format, who wrote it, and the facts that decide who can load it.

use crate::snapshot::checkpoint::{
    HfModel, KerasModel, OnnxModel, Safetensors, SavedModel, TfCheckpoint, TfCheckpointState,
    TorchCheckpoint,
};
use crate::snapshot::Checkpoint;

/// One line on what a checkpoint is: format, producer, and the facts that decide who can load it.
pub fn summary(c: &Checkpoint) -> String {
    let mut parts: Vec<String> = vec![c.format.clone()];
    match (&c.producer, &c.producer_version) {
        (Some(p), Some(v)) => parts.push(format!("written by {p} {v}")),
        (Some(p), None) => parts.push(format!("{p} (no version recorded)")),
        _ => {}
    }
    if let Some(e) = &c.error {
        parts.push(format!("unreadable: {e}"));
    }
    if let Some(t) = &c.tf {
        tf_parts(&mut parts, t);
    }
    if let Some(st) = &c.tf_state {
        tf_state_parts(&mut parts, st);
    }
    if let Some(sm) = &c.saved_model {
        saved_model_parts(&mut parts, sm);
    }
    if let Some(k) = &c.keras {
        keras_parts(&mut parts, k);
    }
    if let Some(t) = &c.torch {
        torch_parts(&mut parts, t);
    }
    if let Some(sf) = &c.safetensors {
        safetensors_parts(&mut parts, sf);
    }
    if let Some(h) = &c.hf {
        hf_parts(&mut parts, h);
    }
    if let Some(o) = &c.onnx {
        onnx_parts(&mut parts, o);
    }
    parts.join("; ")
}

/// A TF checkpoint's tensors and shards, its naming (object- or name-based), scopes, RNN names
/// and optimizer slots.
fn tf_parts(parts: &mut Vec<String>, t: &TfCheckpoint) {
    parts.push(format!(
        "{} tensors in {}",
        t.tensor_count,
        crate::plural::plural(t.num_shards as usize, "shard")
    ));
    parts.push(if t.object_based {
        "object-based (TF2 tf.train.Checkpoint)".into()
    } else {
        "name-based (TF1 Saver)".into()
    });
    if !t.scopes.is_empty() {
        parts.push(format!("scopes {}", t.scopes.join(", ")));
    }
    if let Some(era) = &t.rnn_key_naming {
        parts.push(format!("RNN names {era}"));
    }
    if !t.optimizer_slots.is_empty() {
        parts.push(format!("optimizer slots {}", t.optimizer_slots.join(", ")));
    }
}

/// A TF `checkpoint` state file's latest entry and its families when they are mixed.
fn tf_state_parts(parts: &mut Vec<String>, st: &TfCheckpointState) {
    if let Some(l) = &st.latest {
        parts.push(format!(
            "latest {l}{}",
            st.latest_family
                .as_ref()
                .map(|f| format!(" ({f})"))
                .unwrap_or_default()
        ));
    }
    if st.mixed_families {
        parts.push(format!("families {}", st.families.join(", ")));
    }
}

/// A SavedModel's tags and custom layers.
fn saved_model_parts(parts: &mut Vec<String>, sm: &SavedModel) {
    if !sm.tags.is_empty() {
        parts.push(format!("tags {}", sm.tags.join(", ")));
    }
    if !sm.custom_layers.is_empty() {
        parts.push(format!("custom layers {}", sm.custom_layers.join(", ")));
    }
}

/// A Keras model's backend and custom layers.
fn keras_parts(parts: &mut Vec<String>, k: &KerasModel) {
    if let Some(b) = &k.backend {
        parts.push(format!("backend {b}"));
    }
    if !k.custom_layers.is_empty() {
        parts.push(format!("custom layers {}", k.custom_layers.join(", ")));
    }
}

/// A torch checkpoint's format (zip or legacy), storages and where they live, and whether it
/// needs `weights_only=False`.
fn torch_parts(parts: &mut Vec<String>, t: &TorchCheckpoint) {
    parts.push(if t.zip {
        "zip format (torch >= 1.6)".into()
    } else {
        "legacy format".into()
    });
    parts.push(format!("{} storages", t.storage_count));
    if !t.storage_locations.is_empty() {
        parts.push(format!("on {}", t.storage_locations.join(", ")));
    }
    if t.needs_weights_only_false {
        parts.push(format!(
            "needs weights_only=False for {}",
            t.unsafe_globals.join(", ")
        ));
    }
}

/// A safetensors file's tensor count and dtypes.
fn safetensors_parts(parts: &mut Vec<String>, sf: &Safetensors) {
    parts.push(format!(
        "{} tensors ({})",
        sf.tensor_count,
        sf.dtypes.join(", ")
    ));
}

/// A Hugging Face model's architectures and torch dtype.
fn hf_parts(parts: &mut Vec<String>, h: &HfModel) {
    if !h.architectures.is_empty() {
        parts.push(h.architectures.join(", "));
    }
    if let Some(d) = &h.torch_dtype {
        parts.push(d.clone());
    }
}

/// An ONNX model's IR version and producer.
fn onnx_parts(parts: &mut Vec<String>, o: &OnnxModel) {
    if let Some(ir) = o.ir_version {
        parts.push(format!("ONNX IR {ir}"));
    }
    if let Some(p) = &o.producer_name {
        parts.push(format!(
            "from {p} {}",
            o.producer_version.as_deref().unwrap_or("")
        ));
    }
}
