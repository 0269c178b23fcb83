//! ONNX model files: `ModelProto` header fields (`ir_version`, `producer_name`,
//! `producer_version`, `opset_import`) read by walking the top-level fields with positioned
//! reads. The graph (field 7, possibly gigabytes of initializers) is skipped by its length,
//! never read; `opset_import` comes after it on the wire.

use super::proto::{self, Value};
use crate::snapshot::checkpoint::{OnnxModel, OnnxOpset};
use std::fs::File;
use std::os::unix::fs::FileExt;

const MAX_FIELDS: usize = 100_000;
const MAX_SMALL_FIELD: u64 = 1 << 20;

fn varint_at(file: &File, len: u64, pos: &mut u64) -> Result<u64, String> {
    let mut buf = [0u8; 10];
    let n = (len - *pos).min(10) as usize;
    file.read_exact_at(&mut buf[..n], *pos)
        .map_err(|e| format!("cannot read at {pos}: {e}"))?;
    let mut p = 0usize;
    let v = proto::read_varint(&buf[..n], &mut p).map_err(|e| format!("at byte {pos}: {e}"))?;
    *pos += p as u64;
    Ok(v)
}

/// Inspect an ONNX file of `len` bytes.
pub fn inspect(file: &File, len: u64) -> Result<OnnxModel, String> {
    let mut m = OnnxModel::default();
    let mut pos = 0u64;
    let mut fields = 0usize;
    while pos < len {
        fields += 1;
        if fields > MAX_FIELDS {
            return Err("more top-level fields than an ONNX model has (not ONNX?)".into());
        }
        let key = varint_at(file, len, &mut pos)?;
        let (number, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                let v = varint_at(file, len, &mut pos)?;
                if number == 1 {
                    m.ir_version = Some(v as i64);
                }
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let n = varint_at(file, len, &mut pos)?;
                if n > len - pos {
                    return Err(format!(
                        "field {number} at byte {pos} claims {n} bytes, beyond the file's {len} (truncated or not ONNX)"
                    ));
                }
                if matches!(number, 2 | 3 | 8) && n <= MAX_SMALL_FIELD {
                    let mut buf = vec![0u8; n as usize];
                    file.read_exact_at(&mut buf, pos)
                        .map_err(|e| format!("cannot read field {number}: {e}"))?;
                    match number {
                        2 => m.producer_name = Some(String::from_utf8_lossy(&buf).into_owned()),
                        3 => m.producer_version = Some(String::from_utf8_lossy(&buf).into_owned()),
                        _ => m.opsets.push(opset(&buf)?),
                    }
                }
                pos += n;
            }
            w => {
                return Err(format!(
                    "unsupported wire type {w} at byte {pos}: not an ONNX model"
                ))
            }
        }
    }
    if pos > len {
        return Err("the last field runs past the end of the file (truncated)".into());
    }
    if m.ir_version.is_none() {
        return Err("no ir_version: not an ONNX model".into());
    }
    Ok(m)
}

fn opset(buf: &[u8]) -> Result<OnnxOpset, String> {
    let mut o = OnnxOpset::default();
    for f in proto::fields(buf) {
        match f.map_err(|e| format!("bad opset_import: {e}"))? {
            (1, Value::Bytes(d)) => o.domain = String::from_utf8_lossy(d).into_owned(),
            (2, Value::Varint(v)) => o.version = v as i64,
            _ => {}
        }
    }
    if o.domain.is_empty() {
        o.domain = "ai.onnx".into();
    }
    Ok(o)
}
