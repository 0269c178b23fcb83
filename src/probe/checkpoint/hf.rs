//! Hugging Face model directories: `config.json` (`transformers_version`, `torch_dtype`,
//! `architectures`, `model_type`, `quantization_config.quant_method`) and the weight files
//! beside it.

use crate::root::Root;
use crate::snapshot::checkpoint::HfModel;
use std::path::Path;

/// True when `name` is a weight file a transformers directory holds.
pub fn is_weight_file(name: &str) -> bool {
    name.ends_with(".safetensors")
        || name == "pytorch_model.bin"
        || (name.starts_with("pytorch_model-") && name.ends_with(".bin"))
        || name == "tf_model.h5"
        || name == "flax_model.msgpack"
        || name.ends_with(".safetensors.index.json")
        || name == "pytorch_model.bin.index.json"
}

/// Read `config.json` in `dir`; `None` when it is not a transformers config.
pub fn inspect(root: &Root, dir: &Path) -> Result<Option<HfModel>, String> {
    let cfg = dir.join("config.json");
    let bytes = root
        .read_limited(&cfg, 4 << 20)
        .map_err(|e| e.to_string())?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not valid JSON: {e}", cfg.display()))?;
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let architectures: Vec<String> = v
        .get("architectures")
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let transformers_version = s("transformers_version");
    if transformers_version.is_none() && architectures.is_empty() && s("model_type").is_none() {
        return Ok(None);
    }
    let mut weight_files: Vec<String> = root
        .read_dir(dir)
        .map_err(|e| e.to_string())?
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| is_weight_file(n))
        .collect();
    weight_files.sort();
    Ok(Some(HfModel {
        transformers_version,
        torch_dtype: s("torch_dtype").or_else(|| s("dtype")),
        architectures,
        model_type: s("model_type"),
        quant_method: v
            .get("quantization_config")
            .and_then(|q| q.get("quant_method"))
            .and_then(|m| m.as_str())
            .map(str::to_string),
        weight_files,
    }))
}
