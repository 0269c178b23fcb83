//! A tiny protobuf wire-format reader: varints, fixed32/64 and length-delimited fields.
//!
//! Enough to read the handful of TensorFlow messages the checkpoint probe needs
//! (`BundleEntryProto`, `BundleHeaderProto`, `SavedModel` → `MetaInfoDef`) without protoc or a
//! code generator. Every length is checked against the buffer, so a hostile length field can
//! never cause an allocation or an out-of-bounds read: fields borrow from the input.

use std::fmt;

/// Why a buffer is not a valid protobuf message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError(pub String);

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One field's value, borrowed from the message buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: length-delimited bytes.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// The value as an unsigned integer (varint or fixed), else `None`.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v),
            Value::Fixed32(v) => Some(u64::from(v)),
            Value::Bytes(_) => None,
        }
    }
    /// The value as bytes (length-delimited), else `None`.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
    /// The value as UTF-8 text (lossy), else `None`.
    pub fn as_string(&self) -> Option<String> {
        self.as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }
}

/// Read a base-128 varint at `*pos`, advancing it.
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, ProtoError> {
    let mut out: u64 = 0;
    for i in 0..10 {
        let Some(&b) = buf.get(*pos) else {
            return Err(ProtoError("truncated varint".into()));
        };
        *pos += 1;
        out |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err(ProtoError("varint longer than 10 bytes".into()))
}

/// Iterates over the fields of one message.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

/// The fields of `buf`, in wire order.
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields {
        buf,
        pos: 0,
        failed: false,
    }
}

impl<'a> Fields<'a> {
    fn next_field(&mut self) -> Result<(u32, Value<'a>), ProtoError> {
        let key = read_varint(self.buf, &mut self.pos)?;
        let number =
            u32::try_from(key >> 3).map_err(|_| ProtoError("field number too large".into()))?;
        if number == 0 {
            return Err(ProtoError("field number 0".into()));
        }
        let value = match key & 7 {
            0 => Value::Varint(read_varint(self.buf, &mut self.pos)?),
            1 => Value::Fixed64(u64::from_le_bytes(self.take::<8>()?)),
            2 => {
                let len = read_varint(self.buf, &mut self.pos)?;
                let left = (self.buf.len() - self.pos) as u64;
                if len > left {
                    return Err(ProtoError(format!(
                        "field {number} claims {len} bytes, only {left} left"
                    )));
                }
                let start = self.pos;
                self.pos += len as usize;
                Value::Bytes(&self.buf[start..self.pos])
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.take::<4>()?)),
            w => {
                return Err(ProtoError(format!(
                    "unsupported wire type {w} in field {number}"
                )))
            }
        };
        Ok((number, value))
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], ProtoError> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(ProtoError("truncated fixed-width field".into()));
        };
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..end]);
        self.pos = end;
        Ok(out)
    }

    /// Bytes consumed so far (where a truncated message stopped).
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), ProtoError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let r = self.next_field();
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_varints_fixed_and_bytes() {
        // field 1 varint 150, field 2 bytes "hi", field 3 fixed32 7, field 4 fixed64 9
        let buf = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x1d, 7, 0, 0, 0, 0x21, 9, 0, 0, 0, 0, 0, 0,
            0,
        ];
        let got: Vec<_> = fields(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![
                (1, Value::Varint(150)),
                (2, Value::Bytes(b"hi")),
                (3, Value::Fixed32(7)),
                (4, Value::Fixed64(9)),
            ]
        );
    }

    #[test]
    fn a_hostile_length_is_an_error_not_an_allocation() {
        // field 2, length 2^60 encoded as a varint.
        let mut buf = vec![0x12];
        let mut v: u64 = 1 << 60;
        while v >= 0x80 {
            buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        buf.push(v as u8);
        let err = fields(&buf).next().unwrap().unwrap_err();
        assert!(err.0.contains("claims"), "{err}");
        assert!(fields(&[0x08]).next().unwrap().is_err());
        assert!(fields(&[0x0f]).next().unwrap().is_err(), "wire type 7");
        let ff = [0xffu8; 11];
        assert!(read_varint(&ff, &mut 0).is_err());
    }
}
