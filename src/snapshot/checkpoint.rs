//! `checkpoints[]`: what a checkpoint holds and which framework version wrote it.
//!
//! Each entry names its `format`; the facts of that format live in one typed optional
//! sub-struct (`tf`, `tf_state`, `saved_model`, `keras`, `torch`, `safetensors`, `hf`), so rules
//! can address them as JSON paths (`checkpoints[].tf.object_based`). `details` stays for
//! free-form extras. A file that could not be read keeps its entry with `error` set (and a
//! `probe_errors[]` entry naming it).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One checkpoint (a file, a TF prefix, or a model directory).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Its path (a file, a directory, or a TF checkpoint prefix).
    pub path: String,
    /// `tf-checkpoint`, `tf-checkpoint-state`, `tf-saved-model`, `keras-h5`, `keras-v3`,
    /// `torch-zip`, `torch-legacy`, `pickle`, `joblib`, `safetensors`, `hf-directory`, `onnx`,
    /// `unknown`.
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
    /// Why the file could not be read (corrupt, truncated, unsupported); `None` when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// TensorFlow checkpoint (`PREFIX.index` + `PREFIX.data-*`) facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tf: Option<TfCheckpoint>,
    /// TensorFlow `checkpoint` state file facts (which prefix is `latest`, model families).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tf_state: Option<TfCheckpointState>,
    /// SavedModel directory facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_model: Option<SavedModel>,
    /// Keras `.h5` / `.keras` facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keras: Option<KerasModel>,
    /// PyTorch `torch.save` file facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<TorchCheckpoint>,
    /// safetensors header facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safetensors: Option<Safetensors>,
    /// Hugging Face model directory facts (`config.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hf: Option<HfModel>,
    /// ONNX model facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onnx: Option<OnnxModel>,
    /// What loading it imports by name (pickle globals, Keras custom-object modules) and the
    /// library versions it recorded; checked against the job's interpreter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references: Option<References>,
}

/// The modules and classes a serialized file names, read from its pickle opcodes (plain
/// pickles, joblib files, torch checkpoints: GLOBAL / STACK_GLOBAL) or its Keras config
/// (`module` + `class_name` of custom objects), never by unpickling. The `checkpoint` probe fills
/// what the file says; the `serialized` probe adds `checked_with` and `unresolved`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct References {
    /// Where the names come from: `pickle` (GLOBAL / STACK_GLOBAL opcodes) or `keras-config`.
    pub source: String,
    /// The highest pickle protocol of the file's pickles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pickle_protocol: Option<u8>,
    /// Every `module.name` referenced, sorted (at most [`References::KEPT`]).
    #[serde(default)]
    pub globals: Vec<String>,
    /// How many more were referenced beyond those listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub globals_omitted: usize,
    /// The module paths of NumPy's core the file names: `numpy._core` (written by NumPy 2),
    /// `numpy.core` (NumPy 1), both, or absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub numpy_core: Vec<String>,
    /// The scikit-learn version recorded with its estimators (`_sklearn_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sklearn_version: Option<String>,
    /// Why the walk ended before the file did (a bound, the deadline, a raw block it could not
    /// size): the lists hold what came before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// The interpreter the references were resolved in (the job's; `pythons[].path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_with: Option<String>,
    /// References that interpreter cannot satisfy, as its importer would see them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<UnresolvedReference>,
}

impl References {
    /// Most globals listed per file.
    pub const KEPT: usize = 256;
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One referenced `module.name` that the interpreter cannot satisfy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnresolvedReference {
    /// `module.name` as the file names it.
    pub global: String,
    /// The module part.
    pub module: String,
    /// The name looked up in it.
    pub name: String,
    /// `package-not-installed`: no top-level module of that name on the import path (nor in the
    /// project); `module-not-found`: the package is there, this submodule is not (a module that
    /// moved or was removed); `name-not-found`: the module's source never mentions the name (a
    /// static text search of a `.py` file without `__getattr__`, star imports or `globals()`).
    pub reason: String,
    /// The distribution that provides the top-level package, when installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The file searched (`name-not-found`), or the deepest module file found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// One tensor as a checkpoint index records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tensor {
    /// Its key (`dense/kernel`, `model.layers.0.weight`).
    pub name: String,
    /// Its dtype, spelled by the format (`float32`, `F16`, ...).
    pub dtype: String,
    /// Its shape (`-1` for an unknown dimension).
    pub shape: Vec<i64>,
}

/// A TensorFlow tensor-bundle checkpoint (`tf.train.Saver` / `tf.train.Checkpoint`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TfCheckpoint {
    /// Number of tensors in the index (the header entry excluded).
    pub tensor_count: u64,
    /// Data shards the header declares (`PREFIX.data-0000N-of-0000M`).
    pub num_shards: u32,
    /// Declared data shards that are missing next to the index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<String>,
    /// Data shards shorter than the tensors the index places in them (a truncated copy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_shards: Vec<String>,
    /// `little` or `big`.
    pub endianness: String,
    /// The bundle format version the writer recorded (`VersionDef.producer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_version: Option<i64>,
    /// True when `_CHECKPOINTABLE_OBJECT_GRAPH` is present: written by the object-based TF2
    /// API (`tf.train.Checkpoint`, Keras `save_weights`); false: a name-based TF1 `Saver`.
    pub object_based: bool,
    /// Top-level variable scopes (first path component of each key, slot/bookkeeping excluded).
    pub scopes: Vec<String>,
    /// The key set's family: its scopes joined with `+` (different families in one directory
    /// are different models).
    pub family: String,
    /// Naming era of RNN cell variables: `weights_biases` (TF < 1.2: `lstm_cell/weights`),
    /// `kernel_bias` (TF >= 1.2), or absent when there are no RNN cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rnn_key_naming: Option<String>,
    /// Some RNN keys that show the era (at most 8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rnn_keys: Vec<String>,
    /// Optimizer slot suffixes found (`Adam`, `Adam_1`, `Momentum`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optimizer_slots: Vec<String>,
    /// True when this prefix is the one the directory's `checkpoint` file names as latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_latest: Option<bool>,
    /// Producer TF version from `PREFIX.meta` (`MetaInfoDef.tensorflow_version`), when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_tensorflow_version: Option<String>,
    /// The first tensors in key order (at most 200).
    pub tensors: Vec<Tensor>,
    /// True when `tensors` was cut at its limit.
    #[serde(default)]
    pub tensors_truncated: bool,
}

/// A TensorFlow `checkpoint` state file and the prefixes next to it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TfCheckpointState {
    /// `model_checkpoint_path` as written (often an absolute path from the training machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<String>,
    /// The machine path the latest prefix resolves to here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_resolved: Option<String>,
    /// True when `PREFIX.index` of the latest prefix exists here.
    pub latest_exists: bool,
    /// `all_model_checkpoint_paths`, as written.
    #[serde(default)]
    pub all: Vec<String>,
    /// The family of the latest prefix (see [`TfCheckpoint::family`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_family: Option<String>,
    /// Every family found among the directory's prefixes, sorted.
    #[serde(default)]
    pub families: Vec<String>,
    /// True when the directory holds more than one family.
    pub mixed_families: bool,
    /// The family of the most recently written index in the directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_family: Option<String>,
    /// True when several families are present and `latest` is not of the newest one: a restore
    /// of `latest_checkpoint()` will load the other model.
    pub latest_is_other_family: bool,
}

/// A TensorFlow SavedModel directory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedModel {
    /// `MetaInfoDef.tensorflow_version` of the first MetaGraph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensorflow_version: Option<String>,
    /// `MetaInfoDef.tensorflow_git_version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensorflow_git_version: Option<String>,
    /// Tag sets of every MetaGraph (`serve`, `train`, ...).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Number of MetaGraphs.
    pub meta_graphs: u32,
    /// Op names in `stripped_op_list` (sorted, at most 500).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<String>,
    /// `keras_metadata.pb` present (written by tf.keras).
    pub keras_metadata: bool,
    /// `fingerprint.pb` present (TF >= 2.12).
    pub fingerprint: bool,
    /// Keras layer class names recorded in `keras_metadata.pb` (sorted, unique).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_classes: Vec<String>,
    /// Those of them that are not built-in Keras layers (custom code needed to load).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_layers: Vec<String>,
    /// The `variables/variables.index` checkpoint, when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<TfCheckpoint>,
}

/// A Keras model file (HDF5 `.h5` or v3 `.keras` zip).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KerasModel {
    /// `keras_version` recorded by the writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keras_version: Option<String>,
    /// `backend` root attribute (`tensorflow`) for HDF5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// `date_saved` from a v3 file's `metadata.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_saved: Option<String>,
    /// The keras major version that wrote it (2 or 3), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keras_major: Option<u32>,
    /// True when the file holds a whole model (`model_config` / `config.json`), false for
    /// weights only.
    pub has_model_config: bool,
    /// True when a `training_config` was saved (compiled model).
    pub has_training_config: bool,
    /// Model class (`Sequential`, `Functional`, `Model`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_class: Option<String>,
    /// Layer class names in the config (sorted, unique).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_classes: Vec<String>,
    /// Those of them that are not built-in Keras layers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_layers: Vec<String>,
    /// True when the HDF5 root attributes could be read.
    pub attributes_read: bool,
}

/// A PyTorch `torch.save` file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TorchCheckpoint {
    /// True for the zip format (`torch.save` since 1.6), false for the legacy pickle stream.
    pub zip: bool,
    /// The archive's `version` record (zip format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_version: Option<String>,
    /// The archive's `byteorder` record (`little`/`big`), written by newer torch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byteorder: Option<String>,
    /// The archive's top-level directory name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_name: Option<String>,
    /// Highest pickle protocol seen in `data.pkl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pickle_protocol: Option<u8>,
    /// Every `module.name` global the pickle references (sorted, unique).
    pub globals: Vec<String>,
    /// Those that `torch.load(weights_only=True)` (the default since torch 2.6) refuses.
    pub unsafe_globals: Vec<String>,
    /// True when `weights_only=True` would refuse the file.
    pub needs_weights_only_false: bool,
    /// Storage locations recorded for tensors (`cpu`, `cuda:0`, ...; sorted, unique).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage_locations: Vec<String>,
    /// Number of tensor storages (zip: `data/*` records).
    pub storage_count: u64,
}

/// A safetensors file header.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Safetensors {
    /// The `__metadata__` map (string to string).
    #[serde(default)]
    pub metadata: std::collections::BTreeMap<String, String>,
    /// Number of tensors.
    pub tensor_count: u64,
    /// Distinct dtypes (sorted).
    pub dtypes: Vec<String>,
    /// The first tensors in key order (at most 200).
    pub tensors: Vec<Tensor>,
    /// True when the data section is shorter than the header says.
    pub truncated: bool,
}

/// A Hugging Face model directory (`config.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HfModel {
    /// `transformers_version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transformers_version: Option<String>,
    /// `torch_dtype` (or `dtype`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_dtype: Option<String>,
    /// `architectures`.
    #[serde(default)]
    pub architectures: Vec<String>,
    /// `model_type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_type: Option<String>,
    /// `quantization_config.quant_method` (`gptq`, `awq`, `bitsandbytes`, ...): the library
    /// `from_pretrained` needs to load the quantized weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quant_method: Option<String>,
    /// Weight files in the directory (file names, sorted).
    #[serde(default)]
    pub weight_files: Vec<String>,
}

/// An ONNX model file's header fields (`ModelProto`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnnxModel {
    /// `ir_version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ir_version: Option<i64>,
    /// `producer_name` (`pytorch`, `tf2onnx`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_name: Option<String>,
    /// `producer_version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_version: Option<String>,
    /// `opset_import`: the operator sets the graph needs.
    #[serde(default)]
    pub opsets: Vec<OnnxOpset>,
}

/// One `OperatorSetIdProto`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnnxOpset {
    /// The domain (`ai.onnx` for the default, empty, domain).
    pub domain: String,
    /// Its version.
    pub version: i64,
}
