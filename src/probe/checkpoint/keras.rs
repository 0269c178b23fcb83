//! Keras model files: HDF5 `.h5` (root attributes `keras_version`, `backend`, `model_config`,
//! `training_config`, read with [`super::hdf5`]) and the v3 `.keras` zip (`metadata.json`,
//! `config.json`). Layer class names come from the model config; those that are not built-in
//! Keras layers are custom code the loader must be given.

use super::hdf5;
use crate::snapshot::checkpoint::{KerasModel, References};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;

/// Built-in Keras (2.x and 3.x) layer and model class names.
const BUILTIN: &[&str] = &[
    "Activation",
    "ActivityRegularization",
    "Add",
    "AdditiveAttention",
    "AlphaDropout",
    "Attention",
    "Average",
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "BatchNormalization",
    "Bidirectional",
    "CategoryEncoding",
    "CenterCrop",
    "Concatenate",
    "Conv1D",
    "Conv1DTranspose",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "ConvLSTM1D",
    "ConvLSTM2D",
    "ConvLSTM3D",
    "Convolution1D",
    "Convolution2D",
    "Convolution3D",
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "Dense",
    "DenseFeatures",
    "DepthwiseConv1D",
    "DepthwiseConv2D",
    "Discretization",
    "Dot",
    "Dropout",
    "EinsumDense",
    "ELU",
    "Embedding",
    "Flatten",
    "Functional",
    "GaussianDropout",
    "GaussianNoise",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAveragePooling3D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "GlobalMaxPooling3D",
    "GroupNormalization",
    "GroupQueryAttention",
    "GRU",
    "GRUCell",
    "Hashing",
    "Identity",
    "InputLayer",
    "InputSpec",
    "IntegerLookup",
    "Lambda",
    "LayerNormalization",
    "LeakyReLU",
    "LocallyConnected1D",
    "LocallyConnected2D",
    "LSTM",
    "LSTMCell",
    "Masking",
    "Maximum",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "Minimum",
    "Model",
    "MultiHeadAttention",
    "Multiply",
    "Normalization",
    "Permute",
    "PReLU",
    "RandomBrightness",
    "RandomContrast",
    "RandomCrop",
    "RandomFlip",
    "RandomHeight",
    "RandomRotation",
    "RandomTranslation",
    "RandomWidth",
    "RandomZoom",
    "ReLU",
    "RepeatVector",
    "Rescaling",
    "Reshape",
    "Resizing",
    "RNN",
    "Sequential",
    "SeparableConv1D",
    "SeparableConv2D",
    "SeparableConvolution1D",
    "SeparableConvolution2D",
    "SimpleRNN",
    "SimpleRNNCell",
    "Softmax",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "SpectralNormalization",
    "StackedRNNCells",
    "StringLookup",
    "Subtract",
    "TextVectorization",
    "TFOpLambda",
    "ThresholdedReLU",
    "TimeDistributed",
    "TorchModuleWrapper",
    "UnitNormalization",
    "UpSampling1D",
    "UpSampling2D",
    "UpSampling3D",
    "Wrapper",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "SlicingOpLambda",
    "KerasLayer",
];

/// True when `class` is a built-in Keras layer or model class.
pub fn is_builtin(class: &str) -> bool {
    BUILTIN.contains(&class)
}

/// Collect layer class names of a model config (recursing into nested models and wrappers).
pub fn layer_classes(config: &serde_json::Value, out: &mut BTreeSet<String>, depth: usize) {
    if depth > 32 {
        return;
    }
    let Some(layers) = config
        .get("config")
        .and_then(|c| c.get("layers"))
        .and_then(|l| l.as_array())
    else {
        return;
    };
    for layer in layers {
        if let Some(c) = layer.get("class_name").and_then(|c| c.as_str()) {
            let registered = layer.get("registered_name").and_then(|r| r.as_str());
            // Keras 3 records custom objects as `registered_name` "Package>Name".
            out.insert(match registered {
                Some(r) if r.contains('>') => r.to_string(),
                _ => c.to_string(),
            });
        }
        layer_classes(layer, out, depth + 1);
        if let Some(inner) = layer.get("config").and_then(|c| c.get("layer")) {
            if let Some(c) = inner.get("class_name").and_then(|c| c.as_str()) {
                out.insert(c.to_string());
            }
            layer_classes(inner, out, depth + 1);
        }
    }
}

/// Fill `k` from a model config; returns the custom objects it names by module.
fn fill_config(k: &mut KerasModel, config: &serde_json::Value) -> Option<References> {
    k.has_model_config = true;
    k.model_class = config
        .get("class_name")
        .and_then(|c| c.as_str())
        .map(str::to_string);
    let mut classes = BTreeSet::new();
    layer_classes(config, &mut classes, 0);
    k.custom_layers = classes.iter().filter(|c| !is_builtin(c)).cloned().collect();
    k.layer_classes = classes.into_iter().collect();
    super::references::from_keras_config(config)
}

fn major(v: &str) -> Option<u32> {
    v.split('.').next()?.trim().parse().ok()
}

/// Inspect a Keras HDF5 file, with the custom objects its model config names by module.
/// `Ok(None)` when it is HDF5 but has no Keras attributes.
pub fn inspect_h5(
    file: &File,
    len: u64,
) -> Result<Option<(KerasModel, Option<References>)>, String> {
    let attrs = hdf5::root_attributes(file, len)?;
    let get = |n: &str| {
        attrs
            .attrs
            .iter()
            .find(|(k, _)| k == n)
            .and_then(|(_, v)| v.clone())
    };
    let mut k = KerasModel {
        keras_version: get("keras_version"),
        backend: get("backend"),
        attributes_read: !attrs.dense,
        ..Default::default()
    };
    let mut refs = None;
    if let Some(cfg) = get("model_config") {
        let v: serde_json::Value = serde_json::from_str(&cfg)
            .map_err(|e| format!("model_config attribute is not JSON: {e}"))?;
        refs = fill_config(&mut k, &v);
    }
    k.has_training_config = get("training_config").is_some();
    if k.keras_version.is_none() && !k.has_model_config && !attrs.dense {
        return Ok(None);
    }
    k.keras_major = k.keras_version.as_deref().and_then(major);
    Ok(Some((k, refs)))
}

/// Inspect a Keras v3 `.keras` zip, with the custom objects its config names by module.
pub fn inspect_v3(file: File) -> Result<(KerasModel, Option<References>), String> {
    let mut zip =
        zip::ZipArchive::new(file).map_err(|e| format!("not a readable zip archive: {e}"))?;
    let mut json = |name: &str| -> Result<Option<serde_json::Value>, String> {
        let Ok(f) = zip.by_name(name) else {
            return Ok(None);
        };
        let mut buf = Vec::new();
        f.take(16 << 20)
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read {name}: {e}"))?;
        serde_json::from_slice(&buf)
            .map(Some)
            .map_err(|e| format!("{name} is not JSON: {e}"))
    };
    let meta = json("metadata.json")?.ok_or("no metadata.json: not a Keras v3 file")?;
    let s = |k: &str| meta.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let mut k = KerasModel {
        keras_version: s("keras_version"),
        date_saved: s("date_saved"),
        attributes_read: true,
        ..Default::default()
    };
    k.keras_major = k.keras_version.as_deref().and_then(major);
    let mut refs = None;
    if let Some(cfg) = json("config.json")? {
        refs = fill_config(&mut k, &cfg);
        k.has_training_config = cfg.get("compile_config").is_some_and(|c| !c.is_null());
    }
    Ok((k, refs))
}
