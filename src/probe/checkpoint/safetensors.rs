//! safetensors files: an 8-byte little-endian header length, then that many bytes of JSON
//! (per tensor `dtype`, `shape`, `data_offsets`; optional `__metadata__` string map), then data.
//! Only the header is read; its length is checked against the file size and a 100 MB cap (the
//! limit the safetensors library itself enforces) before anything is allocated.

use crate::snapshot::checkpoint::{Safetensors, Tensor};
use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Largest header read (the safetensors library refuses larger ones too).
pub const MAX_HEADER: u64 = 100 * 1024 * 1024;
const MAX_TENSORS: usize = 200;

/// Inspect a safetensors file of `len` bytes.
pub fn inspect(file: &File, len: u64) -> Result<Safetensors, String> {
    let mut n8 = [0u8; 8];
    if len < 8 {
        return Err(format!("{len} bytes: too short for a safetensors header"));
    }
    file.read_exact_at(&mut n8, 0)
        .map_err(|e| format!("cannot read the header length: {e}"))?;
    let n = u64::from_le_bytes(n8);
    if n > len - 8 {
        return Err(format!(
            "header length {n} is beyond the file's {len} bytes (truncated or not safetensors)"
        ));
    }
    if n > MAX_HEADER {
        return Err(format!(
            "header length {n} exceeds the {MAX_HEADER}-byte limit"
        ));
    }
    let mut buf = vec![0u8; n as usize];
    file.read_exact_at(&mut buf, 8)
        .map_err(|e| format!("cannot read the header: {e}"))?;
    let json: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&buf).map_err(|e| format!("header is not a JSON object: {e}"))?;
    let mut out = Safetensors::default();
    let mut dtypes = BTreeSet::new();
    let mut data_end = 0u64;
    for (k, v) in &json {
        if k == "__metadata__" {
            if let Some(m) = v.as_object() {
                for (mk, mv) in m {
                    let s = mv
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| mv.to_string());
                    out.metadata.insert(mk.clone(), s);
                }
            }
            continue;
        }
        out.tensor_count += 1;
        let dtype = v
            .get("dtype")
            .and_then(|d| d.as_str())
            .unwrap_or("?")
            .to_string();
        dtypes.insert(dtype.clone());
        if let Some(end) = v
            .get("data_offsets")
            .and_then(|o| o.get(1))
            .and_then(|e| e.as_u64())
        {
            data_end = data_end.max(end);
        }
        if out.tensors.len() < MAX_TENSORS {
            let shape = v
                .get("shape")
                .and_then(|s| s.as_array())
                .map(|a| a.iter().map(|d| d.as_i64().unwrap_or(-1)).collect())
                .unwrap_or_default();
            out.tensors.push(Tensor {
                name: k.clone(),
                dtype,
                shape,
            });
        }
    }
    out.tensors.sort_by(|a, b| a.name.cmp(&b.name));
    out.dtypes = dtypes.into_iter().collect();
    out.truncated = (8 + n).saturating_add(data_end) > len;
    Ok(out)
}
