//! `checkpoints[]`: what a checkpoint holds and which framework version wrote it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One checkpoint (a file, a TF prefix, or a model directory).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Its path (a file, a directory, or a TF checkpoint prefix).
    pub path: String,
    /// `tf-checkpoint`, `tf-saved-model`, `keras-h5`, `keras-v3`, `torch-zip`, `torch-legacy`,
    /// `safetensors`, `hf-directory`, `onnx`, `unknown`.
    pub format: String,
    /// The framework that wrote it (`tensorflow`, `keras`, `torch`, ...), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
    /// Its version, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_version: Option<String>,
    /// Format-specific facts (tensor names, scopes, pickle globals, ...), by name.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub details: serde_json::Map<String, serde_json::Value>,
}
