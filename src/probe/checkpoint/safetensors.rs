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
    let header: Header = serde_json::from_slice(&buf)
        .map_err(|e| format!("header is not a safetensors JSON object: {e}"))?;
    let mut out = header.out;
    out.tensors.sort_by(|a, b| a.name.cmp(&b.name));
    out.dtypes = header.dtypes.into_iter().collect();
    out.truncated = (8 + n).saturating_add(header.data_end) > len;
    Ok(out)
}

/// One tensor's header entry (unknown fields ignored).
#[derive(serde::Deserialize)]
struct RawTensor {
    #[serde(default)]
    dtype: String,
    #[serde(default)]
    shape: Vec<i64>,
    #[serde(default)]
    data_offsets: Vec<u64>,
}

/// The header, summarised while it is parsed: no JSON tree of every tensor is built, so a
/// header with 100k tensors costs the summary only.
#[derive(Default)]
struct Header {
    out: Safetensors,
    dtypes: BTreeSet<String>,
    data_end: u64,
}

impl<'de> serde::Deserialize<'de> for Header {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object of tensors")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Header, A::Error> {
                let mut h = Header::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "__metadata__" {
                        let m: serde_json::Map<String, serde_json::Value> = map.next_value()?;
                        for (k, v) in m {
                            let s = v
                                .as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string());
                            h.out.metadata.insert(k, s);
                        }
                        continue;
                    }
                    let t: RawTensor = map.next_value()?;
                    h.out.tensor_count += 1;
                    if let Some(&end) = t.data_offsets.get(1) {
                        h.data_end = h.data_end.max(end);
                    }
                    if !h.dtypes.contains(&t.dtype) {
                        h.dtypes.insert(t.dtype.clone());
                    }
                    if h.out.tensors.len() < MAX_TENSORS {
                        h.out.tensors.push(Tensor {
                            name: key,
                            dtype: t.dtype,
                            shape: t.shape,
                        });
                    }
                }
                Ok(h)
            }
        }
        d.deserialize_map(V)
    }
}
